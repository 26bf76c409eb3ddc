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

static uint16_t put_be16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
	return v;
}

static void put_be32(uint8_t *p, uint32_t v)
{
	put_be16(p, (uint16_t)(v >> 16));
	put_be16(p + 2, (uint16_t)v);
}

/* Builds and feeds one segment from PEER:port to US:80 (or to the active connection). */
static void feed(struct uiw_tcp *t, const uint8_t *rec, const uint8_t *opts, unsigned optlen,
		 const uint8_t *payload, unsigned paylen, uint16_t dport, uint64_t now)
{
	uint8_t f[14 + 20 + 60 + 256] = { 0 };
	uint8_t *ip = f + 14, *th = ip + 20;
	unsigned hlen = 20 + (optlen & ~3u);
	struct uiw_tcp_conn *c = uiw_tcp_lookup(t, US, dport, PEER, 40000);
	uint32_t seq = ((uint32_t)rec[1] << 8 | rec[2]) + (c ? c->irs + 1 : 1000);
	uint32_t ack = ((uint32_t)rec[3] << 8 | rec[4]) + (c ? c->iss : 0);
	uint32_t sum;
	struct rte_mbuf *m;

	memcpy(f, port.mac.addr_bytes, 6);
	f[6] = 0x02;
	f[11] = 0x02;
	put_be16(f + 12, 0x0800);
	ip[0] = 0x45;
	put_be16(ip + 2, (uint16_t)(20 + hlen + paylen));
	ip[8] = 64;
	ip[9] = 6;
	put_be32(ip + 12, PEER);
	put_be32(ip + 16, US);
	put_be16(ip + 10, (uint16_t)~uiw_inet_sum(ip, 20));
	put_be16(th, 40000);
	put_be16(th + 2, dport);
	put_be32(th + 4, seq);
	put_be32(th + 8, ack);
	th[12] = (uint8_t)((hlen / 4) << 4);
	th[13] = rec[0];
	th[14] = rec[5];
	th[15] = rec[6];
	memcpy(th + 20, opts, hlen - 20);
	memcpy(th + hlen, payload, paylen);
	sum = uiw_tcp_phdr_sum(PEER, US, (uint16_t)(hlen + paylen)) + uiw_inet_sum(th, hlen + paylen);
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	put_be16(th + 16, (uint16_t)~sum);
	m = rte_pktmbuf_alloc(pool);
	if (m == NULL)
		abort();
	memcpy(rte_pktmbuf_append(m, (uint16_t)(14 + 20 + hlen + paylen)), f, 14 + 20 + hlen + paylen);
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
