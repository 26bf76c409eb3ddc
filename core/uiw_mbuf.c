/* SPDX-License-Identifier: BSD-3-Clause */
/* Cutting received mbuf chains: TCP trims segments to what is new, MPA takes the octets of
 * a Request/Reply off the front of the stream. */
#include "uiw_mbuf.h"

void uiw_mbuf_trim_to(struct rte_mbuf *m, uint32_t len)
{
	uint32_t before = 0;
	uint16_t nsegs = 0;

	for (struct rte_mbuf *seg = m; seg != NULL; seg = seg->next) {
		nsegs++;
		if (before + seg->data_len >= len) {
			seg->data_len = (uint16_t)(len - before);
			if (seg->next != NULL) {
				rte_pktmbuf_free(seg->next);
				seg->next = NULL;
			}
			break;
		}
		before += seg->data_len;
	}
	m->nb_segs = nsegs;
	m->pkt_len = len;
}

struct rte_mbuf *uiw_mbuf_cut_front(struct rte_mbuf *m, uint32_t n)
{
	while (n > 0 && n >= m->data_len && m->next != NULL) {
		struct rte_mbuf *next = m->next;

		next->nb_segs = (uint16_t)(m->nb_segs - 1);
		next->pkt_len = m->pkt_len - m->data_len;
		n -= m->data_len;
		m->next = NULL;
		rte_pktmbuf_free_seg(m);
		m = next;
	}
	rte_pktmbuf_adj(m, (uint16_t)n);
	return m;
}
