/* SPDX-License-Identifier: BSD-3-Clause */
/* An mbuf whose data is a heap buffer of exactly the frame's size, shared by the Check
 * suites and the fuzz harnesses: under ASan a read past the frame is a heap overflow. */
#ifndef UIW_MBUF_EXACT_H
#define UIW_MBUF_EXACT_H

#include <stddef.h>

#include <rte_mbuf.h>

/** Copies @p len bytes into an exact heap buffer attached to an mbuf of @p pool.
 *  @return the mbuf, or NULL when memory runs out. */
struct rte_mbuf *mbuf_exact(struct rte_mempool *pool, const void *bytes, size_t len);

#endif
