/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer harness for TCP segment input: options, flags and sequence space. Each input
 * is a short conversation with a fresh engine that listens on port 80 and, if the first
 * byte says so, also opens a connection to the peer. Records that follow describe
 * segments from the peer; their sequence and acknowledgment numbers are offsets from the
 * connection's own (so the fuzzer reaches the synchronized states), checksums are filled
 * in. After every input the engine is destroyed and no mbuf may be left in use.
 *
 * Record: flags(1) seq_off(2) ack_off(2) win(2) optlen(1) paylen(1) advance_ms(1)
 *         options[optlen % 41] payload[paylen]
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <rte_mbuf.h>

#include "fuzz_common.h"
#include "tcp_internal.h"
#include "uiw_log.h"

#define US 0x0a000102u
#define PEER 0x0a000101u

static struct rte_mempool *pool;
static struct uiw_port port;
static struct uiw_net net;
static struct uiw_config cfg;

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void ignore_recv(void *u, struct uiw_tcp_conn *c, struct rte_mbuf *m)
{
	(void)u;
	(void)c;
	rte_pktmbuf_free(m);
}

static const struct uiw_tcp_ops ops = { .recv = ignore_recv };

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	pool = fuzz_eal_pool(2047);
	fuzz_port_init(&port, pool, NULL);
	uiw_config_defaults(&cfg);
	cfg.ip = US;
	cfg.prefix_len = 24;
	cfg.tcp_max_conns = 4;
	cfg.tcp_ooo_max = 16;
	cfg.tcp_rcv_buf = 65536;
	return 0;
}

/* Builds and feeds one segment from PEER:port to US:80 (or to the active connection). */
static void feed(struct uiw_tcp *t, const uint8_t *rec, const uint8_t *opts, unsigned optlen,
		 const uint8_t *payload, unsigned paylen, uint16_t dport, uint64_t now)
{
	struct uiw_tcp_conn *c = uiw_tcp_lookup(t, US, dport, PEER, 40000);
	const struct fuzz_seg s = {
		.src = PEER, .dst = US, .sport = 40000, .dport = dport,
		.seq = ((uint32_t)rec[1] << 8 | rec[2]) + (c ? c->irs + 1 : 1000),
		.ack = ((uint32_t)rec[3] << 8 | rec[4]) + (c ? c->iss : 0),
		.flags = rec[0], .win = (uint16_t)(rec[5] << 8 | rec[6]),
		.opts = opts, .optlen = optlen, .payload = payload, .len = paylen };
	struct rte_mbuf *m = fuzz_tcp_frame(pool, port.mac.addr_bytes, &s);

	uiw_net_input(&net, &m, 1, now);
	uiw_tcp_run(t, now);
	uiw_port_flush(&port);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	unsigned in_use = rte_mempool_in_use_count(pool);
	struct uiw_tcp *t;
	struct uiw_tcp_conn *active = NULL;
	uint16_t dport = 80;
	uint64_t now = 1000000000ull;
	size_t off = 1;

	if (size < 1)
		return 0;
	uiw_net_init(&net, &port, &cfg);
	/* The peer's MAC is known, so segments go out rather than wait for ARP. */
	{
		uint8_t arp[42] = { 0x02, 0, 0, 0, 0, 0x01, 0x02, 0, 0, 0, 0, 0x02, 0x08, 0x06,
				    0, 1, 8, 0, 6, 4, 0, 1, 0x02, 0, 0, 0, 0, 0x02,
				    10, 0, 1, 1, 0, 0, 0, 0, 0, 0, 10, 0, 1, 2 };
		struct rte_mbuf *m = rte_pktmbuf_alloc(pool);

		memcpy(rte_pktmbuf_append(m, sizeof(arp)), arp, sizeof(arp));
		uiw_net_input(&net, &m, 1, now);
	}
	if (uiw_tcp_create(&t, &net, &cfg) != 0)
		abort();
	uiw_tcp_listen(t, 80, 2, &ops, NULL);
	if (data[0] & 1) {
		uiw_tcp_connect(t, PEER, 40000, &ops, NULL, now, &active);
		if (active != NULL)
			dport = active->lport;
	}
	while (off + 10 <= size) {
		const uint8_t *rec = data + off;
		unsigned optlen = rec[7] % 41, paylen = rec[8];

		off += 10;
		if (off + optlen + paylen > size)
			break;
		feed(t, rec, data + off, optlen, data + off + optlen, paylen, dport, now);
		off += optlen + paylen;
		now += (uint64_t)rec[9] * 10000000ull; /* up to 2.55 s a step */
		uiw_tcp_run(t, now);
		uiw_port_flush(&port);
	}
	uiw_tcp_destroy(t);
	uiw_net_fini(&net);
	uiw_port_flush(&port);
	if (rte_mempool_in_use_count(pool) != in_use)
		abort();
	return 0;
}
