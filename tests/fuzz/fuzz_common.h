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

#endif
