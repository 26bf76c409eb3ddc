/* SPDX-License-Identifier: BSD-3-Clause */
#include "fuzz_common.h"

#include <stdlib.h>
#include <string.h>

#include <rte_eal.h>

#include "mbuf_exact.h"
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
