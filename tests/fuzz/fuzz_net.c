/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer harness for the Ethernet/ARP/IPv4/ICMP input path. Each input is one frame,
 * in an exact-size heap buffer (reads past it are heap overflows under ASan), optionally
 * split into a two-segment chain. Every frame the stack sends back is checked (a valid
 * IPv4 header checksum, no larger than the MTU) and no mbuf may stay in use.
 *
 * Input layout: byte 0 = flags (bit 0: split into a chain at byte 1's value), then the
 * frame.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <rte_mbuf.h>

#include "ipv4_wire.h"
#include "net.h"
#include "uiw_log.h"
#include "uiw_port.h"
#include "fuzz_common.h"

static struct rte_mempool *pool;
static struct uiw_port port;
static struct uiw_net net;
static uint64_t now;

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Every frame the stack sends: no larger than the MTU allows, a valid IPv4 checksum. */
static void check_sent(const struct rte_mbuf *m)
{
	uint8_t hdr[34];
	const uint8_t *p;

	if (m->pkt_len >= 34) {
		p = rte_pktmbuf_read(m, 0, 34, hdr);
		if (p[12] == 0x08 && p[13] == 0x00 && uiw_inet_sum(p + 14, 20) != 0xffff)
			abort();
	}
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct uiw_config cfg;

	(void)argc;
	(void)argv;
	pool = fuzz_eal_pool(1023);
	fuzz_port_init(&port, pool, check_sent);
	uiw_config_defaults(&cfg);
	cfg.ip = 0x0a000102;
	cfg.prefix_len = 24;
	uiw_net_init(&net, &port, &cfg);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	unsigned in_use = rte_mempool_in_use_count(pool);
	struct rte_mbuf *m;

	if (size < 2 || size > 9000)
		return 0;
	if ((data[0] & 1) && data[1] < size - 2) {
		m = fuzz_exact_mbuf(pool, data + 2, data[1]);
		if (rte_pktmbuf_chain(m, fuzz_exact_mbuf(pool, data + 2 + data[1], size - 2 - data[1])) != 0)
			abort();
	} else {
		m = fuzz_exact_mbuf(pool, data + 2, size - 2);
	}
	uiw_net_input(&net, &m, 1, now);
	now += 100000000ull; /* 100 ms a frame: ARP entries age and expire */
	uiw_net_timer(&net, now);
	uiw_port_flush(&port);
	/* Only ARP entries may hold mbufs, and input alone never makes them hold any. */
	if (rte_mempool_in_use_count(pool) != in_use)
		abort();
	return 0;
}
