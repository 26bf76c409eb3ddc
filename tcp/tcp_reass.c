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

/* The block of adjacent queued segments that holds @p seq, as [left, right).
 * @return false when no queued segment holds it. */
static bool block_of(const struct uiw_tcp_conn *c, uint32_t seq, uint32_t *left, uint32_t *right)
{
	unsigned lo = 0, hi = c->nooo, i, j;

	while (lo < hi) {  /* the first segment that ends after seq */
		unsigned mid = (lo + hi) / 2;

		if (seq_le(c->ooo[mid].seq + c->ooo[mid].len, seq))
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == c->nooo || seq_lt(seq, c->ooo[lo].seq))
		return false;
	for (i = lo; i > 0 && c->ooo[i - 1].seq + c->ooo[i - 1].len == c->ooo[i].seq; i--)
		;
	for (j = lo; j + 1 < c->nooo && c->ooo[j].seq + c->ooo[j].len == c->ooo[j + 1].seq; j++)
		;
	*left = c->ooo[i].seq;
	*right = c->ooo[j].seq + c->ooo[j].len;
	return true;
}

/* The block that holds @p seq has just grown: it goes first among the recent ones, and
 * older notes of the same block leave. */
static void note_recent(struct uiw_tcp_conn *c, uint32_t seq)
{
	uint32_t left, right, keep[TCP_SACK_BLOCKS];
	unsigned n = 0;

	if (!block_of(c, seq, &left, &right))
		return;
	keep[n++] = seq;
	for (unsigned i = 0; i < c->nsack_recent && n < TCP_SACK_BLOCKS; i++)
		if (!seq_in(c->sack_recent[i], left, right))
			keep[n++] = c->sack_recent[i];
	memcpy(c->sack_recent, keep, n * sizeof(keep[0]));
	c->nsack_recent = (uint8_t)n;
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
	note_recent(c, seq);
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

static bool listed(uint32_t blocks[][2], unsigned n, uint32_t left)
{
	for (unsigned i = 0; i < n; i++)
		if (blocks[i][0] == left)
			return true;
	return false;
}

/* RFC 2018 §4: the first block holds the most recently received segment, the next ones
 * repeat the most recently reported blocks (so that each block reaches the sender in
 * more than one ACK), and any room left takes other blocks in sequence order. */
unsigned uiw_tcp_reass_sack_blocks(const struct uiw_tcp_conn *c, uint32_t blocks[][2],
			       unsigned max)
{
	unsigned out = 0;

	for (unsigned i = 0; i < c->nsack_recent && out < max; i++) {
		uint32_t left, right;

		if (block_of(c, c->sack_recent[i], &left, &right) && !listed(blocks, out, left)) {
			blocks[out][0] = left;
			blocks[out++][1] = right;
		}
	}
	for (unsigned i = 0; i < c->nooo && out < max; i++) {
		uint32_t left = c->ooo[i].seq, right = left + c->ooo[i].len;

		while (i + 1 < c->nooo && c->ooo[i + 1].seq == right)
			right += c->ooo[++i].len;
		if (!listed(blocks, out, left)) {
			blocks[out][0] = left;
			blocks[out++][1] = right;
		}
	}
	return out;
}
