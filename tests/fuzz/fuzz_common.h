/* SPDX-License-Identifier: BSD-3-Clause */
/* What the fuzz harnesses share: EAL start-up, a pool, a test port whose TX checks and
 * frees frames. */
#ifndef UIW_FUZZ_COMMON_H
#define UIW_FUZZ_COMMON_H

#include <stdint.h>

#include <rte_mbuf.h>

#include "uiw_port.h"

/** Starts the EAL (no hugepages, no PCI) and creates a pool of @p mbufs. Aborts on failure. */
struct rte_mempool *fuzz_eal_pool(unsigned mbufs);

/** A test port (MAC 02:00:00:00:00:01, MTU 1500) whose TX hands each frame to @p check
 *  (which may abort) and frees it. */
void fuzz_port_init(struct uiw_port *port, struct rte_mempool *pool,
		    void (*check)(const struct rte_mbuf *m));

/** An mbuf whose data is a heap buffer of exactly @p len bytes (reads past it are heap
 *  overflows under ASan). Aborts on failure. */
struct rte_mbuf *fuzz_exact_mbuf(struct rte_mempool *pool, const uint8_t *data, size_t len);

/** One TCP segment. */
struct fuzz_seg {
	uint32_t src, dst;        /**< IPv4, host order */
	uint16_t sport, dport;
	uint32_t seq, ack;
	uint8_t flags;
	uint16_t win;
	const uint8_t *opts;      /**< optlen (at most 40) rounded down to a multiple of 4 */
	unsigned optlen;
	const uint8_t *payload;
	uint32_t len;
};

/** An Ethernet/IPv4/TCP frame of @p s to @p mac (from 02:00:00:00:00:02), checksums filled,
 *  its payload cut to one 1500-octet MTU, in an mbuf of @p pool. Aborts without mbufs. */
struct rte_mbuf *fuzz_tcp_frame(struct rte_mempool *pool, const uint8_t *mac, const struct fuzz_seg *s);

#endif
