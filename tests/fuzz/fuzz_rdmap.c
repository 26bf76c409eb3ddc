/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer harness for DDP and RDMAP receive: a QP in RTS (no connection under it, so
 * nothing is sent) takes a sequence of ULPDUs, each cut into up to three pieces. Registered
 * memory is exact-size heap memory: a byte placed outside a region is a heap overflow under
 * ASan. Regions: STag 0x10000 (PD 1, all rights, TO 0x1000), 0x10101 (PD 1, local write
 * only, TO 0x2000), 0x10202 (PD 2, TO 0x3000), 256 octets each. Read Requests, Sends, Writes, Read Responses and Terminates all reach their checks.
 *
 * Input layout: byte 0 = flags (bit 0: post receives, bit 1: an outstanding Read), then
 * records of [length (2 octets, big-endian)][cut 1][cut 2][ULPDU].
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "rdmap.h"

#define REGION 256

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fuzz_eal_pool(63);
	return 0;
}

struct rig {
	struct uiw_stag_table stags;
	struct uiw_cq scq, rcq;
	struct uiw_qp *qp;
	uint8_t *mem[3];
};

static void rig_up(struct rig *r, uint8_t flags)
{
	struct uiw_qp_attr a = { .qp_num = 1, .pd = 1, .sq_size = 8, .rq_size = 8,
				 .send_cq = &r->scq, .recv_cq = &r->rcq, .stags = &r->stags };
	/* Flag 4: both ends announced RFC 7306 (Immediate Data, atomics on region 0). */
	struct uiw_mpa_info info = { .ird = 4, .ord = 4, .mulpdu = 1442,
				     .ext = (flags & 4) ? UIW_MPA_EXT_RFC7306 : 0 };

	if (uiw_stag_table_init(&r->stags, 4) != 0 || uiw_cq_init(&r->scq, 32) != 0 ||
	    uiw_cq_init(&r->rcq, 32) != 0 || uiw_qp_create(&r->qp, &a) != 0)
		abort();
	r->stags.next = 0;   /* regions in slots 0, 1, 2 */
	for (int i = 0; i < 3; i++) {
		r->mem[i] = malloc(REGION);
		if (r->mem[i] == NULL || uiw_stag_register(&r->stags, i == 2 ? 2 : 1, r->mem[i], REGION,
							   0x1000 * (i + 1), i == 1 ? 1 : i == 0 ? 15 : 7,
							   (uint8_t)i) == NULL)
			abort();
	}
	/* Fixed STags (0x10000, 0x10101, 0x10202) that inputs can name; the index still
	 * selects the slot. */
	for (uint32_t i = 0; i < 3; i++)
		r->stags.mr[i].stag = (i + 256) << 8 | i;
	uiw_qp_mpa_ops.established(r->qp, NULL, &info);
	for (int i = 0; i < 4 && (flags & 1); i++) {
		struct uiw_recv_wr w = { .wr_id = (uint64_t)i, .nsge = 2,
					 .sg = { { r->mem[0], 100 }, { r->mem[0] + 100, 28 } } };

		uiw_qp_post_recv(r->qp, &w);
	}
	if (flags & 2) {
		struct uiw_send_wr w = { .op = UIW_WR_READ, .nsge = 1, .sg = { { r->mem[0] + 128, 128 } },
					 .rkey = 0x10000, .sink_stag = r->stags.mr[0].stag, .sink_to = 0x1080 };

		uiw_qp_post_send(r->qp, &w);
	}
}

static void rig_down(struct rig *r)
{
	uiw_qp_destroy(r->qp);
	uiw_cq_fini(&r->scq);
	uiw_cq_fini(&r->rcq);
	uiw_stag_table_fini(&r->stags);
	for (int i = 0; i < 3; i++)
		free(r->mem[i]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rig r;
	size_t off = 1;

	if (size < 1 || size > 65536)
		return 0;
	rig_up(&r, data[0]);
	/* Let inputs aim at real STags: the first octets after the flags may be replaced by
	 * nothing; STags are found by the fuzzer through the comparisons it sees. */
	while (off + 4 <= size) {
		uint32_t len = (uint32_t)data[off] << 8 | data[off + 1];
		uint8_t c1 = data[off + 2], c2 = data[off + 3];

		off += 4;
		if (len > size - off)
			len = (uint32_t)(size - off);
		uint8_t *copy = malloc(len ? len : 1);

		if (copy == NULL)
			abort();
		memcpy(copy, data + off, len);
		uint32_t a = len ? c1 % (len + 1) : 0, b = len ? a + c2 % (len - a + 1) : 0;
		struct uiw_mpa_iov pieces[3] = { { copy, a }, { copy + a, b - a }, { copy + b, len - b } };
		struct uiw_mpa_ulpdu u = { .len = len, .npieces = 3, .pieces = pieces };

		uiw_ddp_mpa_ulp.ulpdu(uiw_qp_stream(r.qp), NULL, &u);   /* MPA -> DDP -> RDMAP */
		free(copy);
		off += len;
	}
	rig_down(&r);
	return 0;
}
