/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer harness for MPA input: a Request or Reply (uiw_mpa_rr_parse), then the FPDU
 * stream behind it through the streaming deframer, cut into chunks of exact-size heap
 * buffers (reads past a chunk are heap overflows under ASan). Every ULPDU handed on must
 * be whole and within what arrived; no mbuf may stay in use after the deframer is freed.
 *
 * Input layout: byte 0 = flags (bit 0 Markers, bit 1 CRC, bit 2 the frame is a Reply,
 * bit 3 no Request/Reply: FPDUs from the first octet), byte 1 = seed for the chunk sizes,
 * then the stream.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <rte_mbuf.h>

#include "fuzz_common.h"
#include "mpa_deframe.h"
#include "mpa_rr.h"

static struct rte_mempool *pool;
static uint8_t sink[65536];

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	pool = fuzz_eal_pool(1023);
	return 0;
}

static int on_ulpdu(void *arg, const struct uiw_mpa_ulpdu *u)
{
	uint64_t sum = 0;
	size_t *total = arg;

	for (unsigned i = 0; i < u->npieces; i++)
		sum += u->pieces[i].len;
	if (sum != u->len || u->len > UINT16_MAX || uiw_mpa_ulpdu_copy(u, 0, sink, u->len) != u->len)
		abort();
	*total += u->len;
	return 0;
}

/* Parses the frame from an exact copy; @return octets it used, or -1 to stop. */
static long parse_rr(const uint8_t *p, size_t n, bool reply)
{
	uint8_t *copy = malloc(n == 0 ? 1 : n), again[UIW_MPA_RR_LEN + UIW_MPA_PD_MAX];
	struct uiw_mpa_rr_info info, info2;
	size_t used = 0, used2 = 0;
	long out = -1;

	if (copy == NULL)
		abort();
	if (n > 0)
		memcpy(copy, p, n);
	if (uiw_mpa_rr_parse(copy, n, reply, UIW_MPA_PD_MAX, &info, &used) == UIW_MPA_PARSE_OK) {
		if (used > n || info.pd < copy || info.pd + info.pd_len > copy + used)
			abort();
		/* What we parse, we build back to a frame that parses the same. */
		size_t len = uiw_mpa_rr_build(&info, again, sizeof(again));

		if (len != used || uiw_mpa_rr_parse(again, len, reply, UIW_MPA_PD_MAX, &info2, &used2) !=
				       UIW_MPA_PARSE_OK || used2 != used || info2.pd_len != info.pd_len ||
		    info2.ird != info.ird || info2.ord != info.ord || info2.crc != info.crc)
			abort();
		out = (long)used;
	}
	free(copy);
	return out;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct uiw_mpa_deframer d;
	size_t off = 2, total = 0, in = 0;
	uint32_t seed;

	if (size < 2 || size > 300000)
		return 0;
	seed = data[1];
	if (!(data[0] & 8)) {
		long used = parse_rr(data + 2, size - 2, data[0] & 4);

		if (used < 0)
			return 0;
		off += (size_t)used;
	}
	uiw_mpa_deframer_init(&d, data[0] & 1, data[0] & 2);
	while (off < size) {
		seed = seed * 1103515245u + 12345u;
		size_t n = 1 + (seed >> 8) % 1600;

		if (n > size - off)
			n = size - off;
		in += n;
		enum uiw_mpa_rx r = uiw_mpa_deframer_push(&d, fuzz_exact_mbuf(pool, data + off, n), on_ulpdu, &total);

		off += n;
		if (r != UIW_MPA_RX_OK)
			break;
		if (total > in)
			abort();
	}
	uiw_mpa_deframer_fini(&d);
	if (rte_mempool_in_use_count(pool) != 0)
		abort();
	return 0;
}
