/* SPDX-License-Identifier: BSD-3-Clause */
/* Out-of-order reassembly (RFC 9293 §3.10.7.4 seventh step), bounded by tcp_ooo_max
 * segments, by the receive window the segments had to fit in, and by the receive budget
 * in mbufs (tcp_internal.h). */
#include "tcp_internal.h"

void uiw_tcp_reass_clear(struct uiw_tcp_conn *c)
{
	for (unsigned i = 0; i < c->nooo; i++)
		rte_pktmbuf_free(c->ooo[i].m);
	c->nooo = 0;
	c->ooo_bytes = 0;
	c->tcp->rx_mbufs -= c->ooo_mbufs;
	c->ooo_mbufs = 0;
}

static void remove_at(struct uiw_tcp_conn *c, unsigned i)
{
	c->ooo_bytes -= c->ooo[i].len;
	c->ooo_mbufs -= c->ooo[i].nsegs;
	c->tcp->rx_mbufs -= c->ooo[i].nsegs;
	memmove(&c->ooo[i], &c->ooo[i + 1], (c->nooo - i - 1) * sizeof(c->ooo[0]));
	c->nooo--;
}

/* Queues [seq, seq+len) (consumes @p m); overlaps with queued data are trimmed away. */
void uiw_tcp_reass_insert(struct uiw_tcp_conn *c, struct rte_mbuf *m, uint32_t seq, uint32_t len)
{
	unsigned i = 0;

	while (i < c->nooo && seq_le(c->ooo[i].seq + c->ooo[i].len, seq))
		i++;
	/* The one before may cover our start. */
	if (i < c->nooo && seq_le(c->ooo[i].seq, seq)) {
		uint32_t cover = c->ooo[i].seq + c->ooo[i].len - seq;

		if (cover >= len) {
			rte_pktmbuf_free(m); /* nothing new */
			return;
		}
		m = uiw_mbuf_cut_front(m, cover);
		seq += cover;
		len -= cover;
		i++;
	}
	/* Queued segments that we cover entirely go; one we overlap cuts our tail. */
	while (i < c->nooo && seq_le(c->ooo[i].seq + c->ooo[i].len, seq + len)) {
		rte_pktmbuf_free(c->ooo[i].m);
		remove_at(c, i);
	}
	if (i < c->nooo && seq_lt(c->ooo[i].seq, seq + len)) {
		len = c->ooo[i].seq - seq;
		uiw_mbuf_trim_to(m, len);
	}
	if (c->nooo >= c->tcp->ooo_max || len == 0 || !uiw_tcp_rx_fits(c, m->nb_segs)) {
		if (len != 0) {
			tcp_count(c->tcp, c->nooo >= c->tcp->ooo_max ? UIW_TCP_C_drop_ooo_full
							     : UIW_TCP_C_drop_rx_budget);
			c->st.drops++;
		}
		rte_pktmbuf_free(m);
		return;
	}
	memmove(&c->ooo[i + 1], &c->ooo[i], (c->nooo - i) * sizeof(c->ooo[0]));
	c->ooo[i].m = m;
	c->ooo[i].seq = seq;
	c->ooo[i].len = len;
	c->ooo[i].nsegs = m->nb_segs;
	c->nooo++;
	c->ooo_bytes += len;
	c->ooo_mbufs += m->nb_segs;
	c->tcp->rx_mbufs += m->nb_segs;
	c->last_ooo_seq = seq;
}

/* The first queued segment once it is in order, trimmed to start at rcv_nxt; NULL when
 * the head of the queue is still beyond rcv_nxt. */
struct rte_mbuf *uiw_tcp_reass_pull(struct uiw_tcp_conn *c)
{
	while (c->nooo > 0 && seq_le(c->ooo[0].seq, c->rcv_nxt)) {
		struct tcp_ooo e = c->ooo[0];
		uint32_t old = c->rcv_nxt - e.seq;

		remove_at(c, 0);
		if (old >= e.len) {
			rte_pktmbuf_free(e.m);
			continue;
		}
		return uiw_mbuf_cut_front(e.m, old);
	}
	return NULL;
}

/* RFC 2018 §4: the first block holds the most recently received segment, then the others
 * in sequence order. Adjacent queued segments form one block. */
unsigned uiw_tcp_reass_sack_blocks(const struct uiw_tcp_conn *c, uint32_t blocks[][2],
			       unsigned max)
{
	uint32_t all[TCP_SACK_BLOCKS * 4][2];
	unsigned n = 0, out = 0, first = 0;

	for (unsigned i = 0; i < c->nooo && n < TCP_SACK_BLOCKS * 4; i++) {
		if (n > 0 && all[n - 1][1] == c->ooo[i].seq) {
			all[n - 1][1] += c->ooo[i].len;
			continue;
		}
		all[n][0] = c->ooo[i].seq;
		all[n++][1] = c->ooo[i].seq + c->ooo[i].len;
	}
	for (unsigned i = 0; i < n; i++)
		if (seq_in(c->last_ooo_seq, all[i][0], all[i][1]))
			first = i;
	if (n > 0 && max > 0) {
		blocks[out][0] = all[first][0];
		blocks[out++][1] = all[first][1];
	}
	for (unsigned i = 0; i < n && out < max; i++) {
		if (i == first)
			continue;
		blocks[out][0] = all[i][0];
		blocks[out++][1] = all[i][1];
	}
	return out;
}
