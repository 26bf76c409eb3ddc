/* SPDX-License-Identifier: BSD-3-Clause */
/** @file The free callback of frames over a pool mbuf's buffer (uiw_mbuf_over()). */
#include "uiw_mbuf.h"

_Static_assert(RTE_PKTMBUF_HEADROOM >= RTE_CACHE_LINE_SIZE + sizeof(struct rte_mbuf_ext_shared_info),
	       "uiw_mbuf_over() keeps the shared info in the headroom's second line");

void uiw_mbuf_over_done(void *addr, void *opaque)
{
	struct rte_mbuf *m = opaque;
	uint16_t refs = rte_mbuf_refcnt_read(m);

	(void)addr;
	/* Every reference is taken and given back in this thread (uiw_mbuf_over()): a plain
	 * store, where DPDK's own free would make it an atomic one after the PMD's copy. */
	if (refs == 1)
		rte_pktmbuf_free_seg(m);
	else
		rte_mbuf_refcnt_set(m, (uint16_t)(refs - 1));
}
