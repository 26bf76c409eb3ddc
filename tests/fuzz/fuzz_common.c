/* SPDX-License-Identifier: BSD-3-Clause */
#include "fuzz_common.h"

#include <stdlib.h>
#include <string.h>

#include <rte_eal.h>

#include "mbuf_exact.h"
#include "tcp_internal.h"
#include "uiw_lcore_id.h"
#include "uiw_log.h"

static void (*tx_check)(const struct rte_mbuf *m);

struct rte_mempool *fuzz_eal_pool(unsigned mbufs)
{
	static char a0[] = "fuzz", a1[] = "-l", a2[] = "0", a3[] = "--no-pci",
		    a4[] = "--no-huge", a5[] = "--no-shconf", a6[] = "-m", a7[] = "128",
		    a8[] = "--no-telemetry", a9[] = "--log-level=error";
	char *eal_argv[] = { a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, NULL };
	struct rte_mempool *pool;

	uiw_log_level_set(UIW_LOG_ERR);
	if (rte_eal_init(10, eal_argv) < 0)
		abort();
	uiw_lcore_id_sync();   /* as uiw_eal_init() does (core/uiw_lcore_id.h) */
	pool = rte_pktmbuf_pool_create("fuzz", mbufs, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE, SOCKET_ID_ANY);
	if (pool == NULL)
		abort();
	return pool;
}

static uint16_t tx_free(struct uiw_port *port, struct rte_mbuf **pkts, uint16_t n)
{
	(void)port;
	for (uint16_t i = 0; i < n; i++) {
		if (pkts[i]->pkt_len > 1514u)
			abort();
		if (tx_check != NULL)
			tx_check(pkts[i]);
		rte_pktmbuf_free(pkts[i]);
	}
	return n;
}

static uint16_t rx_none(struct uiw_port *port, struct rte_mbuf **pkts, uint16_t n)
{
	(void)port;
	(void)pkts;
	(void)n;
	return 0;
}

void fuzz_port_init(struct uiw_port *port, struct rte_mempool *pool,
		    void (*check)(const struct rte_mbuf *m))
{
	struct rte_ether_addr mac = { { 0x02, 0, 0, 0, 0, 0x01 } };

	tx_check = check;
	uiw_port_init_test(port, pool, &mac, 1500, rx_none, tx_free, NULL);
}

struct rte_mbuf *fuzz_exact_mbuf(struct rte_mempool *pool, const uint8_t *data, size_t len)
{
	struct rte_mbuf *m = mbuf_exact(pool, data, len);

	if (m == NULL)
		abort();
	return m;
}

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static void put32(uint8_t *p, uint32_t v)
{
	put16(p, (uint16_t)(v >> 16));
	put16(p + 2, (uint16_t)v);
}

struct rte_mbuf *fuzz_tcp_frame(struct rte_mempool *pool, const uint8_t *mac, const struct fuzz_seg *s)
{
	static uint8_t f[14 + 1500];
	uint8_t *ip = f + 14, *th = ip + 20;
	unsigned hlen = 20 + ((s->optlen > 40 ? 40 : s->optlen) & ~3u);
	uint32_t len = s->len > 1500 - 20 - hlen ? 1500 - 20 - hlen : s->len, sum;   /* one MTU */
	struct rte_mbuf *m;

	memset(f, 0, 14 + 20 + hlen);
	memcpy(f, mac, 6);
	f[6] = 0x02;
	f[11] = 0x02;
	put16(f + 12, 0x0800);
	ip[0] = 0x45;
	put16(ip + 2, (uint16_t)(20 + hlen + len));
	ip[8] = 64;
	ip[9] = 6;
	put32(ip + 12, s->src);
	put32(ip + 16, s->dst);
	put16(ip + 10, (uint16_t)~uiw_inet_sum(ip, 20));
	put16(th, s->sport);
	put16(th + 2, s->dport);
	put32(th + 4, s->seq);
	put32(th + 8, s->ack);
	th[12] = (uint8_t)((hlen / 4) << 4);
	th[13] = s->flags;
	put16(th + 14, s->win);
	memcpy(th + 20, s->opts, hlen - 20);
	memcpy(th + hlen, s->payload, len);
	sum = uiw_tcp_phdr_sum(s->src, s->dst, (uint16_t)(hlen + len)) + uiw_inet_sum(th, hlen + len);
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	put16(th + 16, (uint16_t)~sum);
	m = rte_pktmbuf_alloc(pool);
	if (m == NULL || rte_pktmbuf_append(m, (uint16_t)(14 + 20 + hlen + len)) == NULL)
		abort();
	memcpy(rte_pktmbuf_mtod(m, uint8_t *), f, 14 + 20 + hlen + len);
	return m;
}
