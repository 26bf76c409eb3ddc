/* SPDX-License-Identifier: BSD-3-Clause */
/* Output: the send queue, segment building, what to send now (RFC 9293 §3.8.6, RFC 5681,
 * RFC 6675, RFC 6582). */
#include <rte_ethdev.h>

#include "tcp_internal.h"
#include "uiw_mbuf.h"

void uiw_tcp_mark_pending(struct uiw_tcp_conn *c)
{
	if (c->flags & TF_PENDING)
		return;
	c->flags |= TF_PENDING;
	c->pnext = c->tcp->pending;
	c->tcp->pending = c;
}

/* Not the scratch TCB of a SYN cookie's SYN-ACK (tcp_in.c), which cannot wait: its
 * TSval carries the cookie, and it is gone when the call returns. */
static bool conn_in_table(const struct uiw_tcp_conn *c)
{
	uintptr_t p = (uintptr_t)c, lo = (uintptr_t)c->tcp->conns;

	return p >= lo && p < lo + (uintptr_t)c->tcp->max_conns * sizeof(*c);
}

void uiw_tcp_mark_blocked(struct uiw_tcp_conn *c)
{
	if (c->flags & TF_TX_BLOCKED)
		return;
	c->flags |= TF_TX_BLOCKED;
	c->bnext = c->tcp->blocked;
	c->tcp->blocked = c;
}

void uiw_tcp_sndq_clear(struct uiw_tcp_conn *c)
{
	struct tcp_sndq *q = &c->sq;
	struct rte_mbuf *m = q->head;
	bool lent = false;

	while (m != NULL) {
		struct rte_mbuf *next = m->next;

		lent |= RTE_MBUF_HAS_EXTBUF(m);
		m->next = NULL;
		rte_pktmbuf_free_seg(m);
		uiw_tcp_sq_mbuf_gone(c);
		m = next;
	}
	memset(q, 0, sizeof(*q));
	/* Unsent frames of this queue must not outlive it on lent memory. */
	if (lent && c->tcp->port->tx_ext)
		uiw_port_drop_external(c->tcp->port);
}

/* Frees @p acked bytes from the front (snd_una moves by as much). */
void uiw_tcp_sndq_free_acked(struct uiw_tcp_conn *c, uint32_t acked)
{
	struct tcp_sndq *q = &c->sq;

	if (acked > q->bytes)
		acked = q->bytes;
	q->bytes -= acked;
	acked += q->head_off;
	while (q->head != NULL && acked >= q->head->data_len) {
		struct rte_mbuf *m = q->head;

		if (c->tcp->ahead_off >= 0) {
			struct rte_mbuf *ahead = *sq_ahead_of(c->tcp, m);

			if (ahead != NULL) {
				rte_prefetch0(ahead);
				rte_prefetch0(RTE_PTR_ADD(ahead, RTE_CACHE_LINE_SIZE));
			}
		}
		q->nfreed++;
		acked -= m->data_len;
		q->head = m->next;
		if (q->cur == m)
			q->cur = NULL;
		m->next = NULL;
		rte_pktmbuf_free_seg(m);
		uiw_tcp_sq_mbuf_gone(c);
	}
	q->head_off = acked;
	if (q->head == NULL) {
		q->tail = NULL;
		q->head_off = 0;
		q->nq = 0;
		q->nfreed = 0;
		q->ahead_stale = false;
	}
}

static struct rte_mbuf *gather_flatten(const struct uiw_tcp_conn *c, const struct rte_mbuf *m);

/*
 * Replaces every mbuf of the send queue that refers to lent memory (an external buffer) by
 * a copy from the pool, and drops the frames the port still holds that do (TCP sends
 * those octets again from the copies). The lenders' counts fall as the references go.
 * @return 0, or -ENOMEM when the pool ran dry (the queue is then partly copied).
 */
int uiw_tcp_sndq_own(struct uiw_tcp_conn *c)
{
	struct tcp_sndq *q = &c->sq;
	struct rte_mbuf **link = &q->head;
	struct uiw_port *port = c->tcp->port;

	if (port->tx_ext)
		uiw_port_drop_external(port);
	for (struct rte_mbuf *m = q->head; m != NULL; link = &m->next, m = m->next) {
		struct rte_mbuf *copy;

		if (!RTE_MBUF_HAS_EXTBUF(m))
			continue;
		copy = m->ol_flags & c->tcp->gather_flag
		       ? gather_flatten(c, m) : rte_pktmbuf_copy(m, c->tcp->port->pool, 0, m->data_len);
		if (copy == NULL)
			return -ENOMEM;
		/* A copy longer than one pool mbuf is a chain: its segments join the queue. */
		struct rte_mbuf *last = copy;

		c->tcp->sq_mbufs += copy->nb_segs - 1u;
		c->tcp->sq_stalled += c->sq_stalled ? copy->nb_segs - 1u : 0u;
		c->sq_mbufs += copy->nb_segs - 1u;
		for (struct rte_mbuf *s = copy; s != NULL; s = s->next) {
			s->nb_segs = 1;
			s->pkt_len = s->data_len;
			last = s;
		}
		copy->ol_flags = (copy->ol_flags & ~c->tcp->record_flag) |
				 (m->ol_flags & c->tcp->record_flag);
		/* The copy stands where another mbuf was: the names and the ordinals no longer
		 * match the queue, so none are written until it empties (the copy names none). */
		q->ahead_stale = true;
		for (struct rte_mbuf *s = copy; c->tcp->ahead_off >= 0 && s != NULL; s = s->next)
			*sq_ahead_of(c->tcp, s) = NULL;
		last->next = m->next;
		*link = copy;
		if (q->tail == m)
			q->tail = last;
		m->next = NULL;
		rte_pktmbuf_free_seg(m);
		m = last;
	}
	q->cur = NULL;
	return 0;
}

/*
 * Where the next search starts: @p m, holding sequence @p mseq, or where @p m is NULL (all
 * of the queue was taken), the last mbuf taken, @p last from @p last_seq. Without the
 * second, every pass that finds the queue taken to its end searches again from SND.UNA,
 * one cache miss an mbuf in flight (up to 256, a lone connection's share of the send
 * queues), for each pass of a stream.
 */
static void sndq_cursor(struct uiw_tcp_conn *c, struct rte_mbuf *m, uint32_t mseq,
			struct rte_mbuf *last, uint32_t last_seq)
{
	if (m == NULL) {
		m = last;
		mseq = last_seq;
	}
	if (m != NULL) {
		c->sq.cur = m;
		c->sq.cur_seq = mseq;
	}
}

/* The mbuf holding sequence @p seq and the sequence of its first byte. */
static struct rte_mbuf *sndq_find(struct uiw_tcp_conn *c, uint32_t seq, uint32_t *mseq)
{
	struct tcp_sndq *q = &c->sq;
	struct rte_mbuf *m = q->head;
	uint32_t s = c->snd_una - q->head_off;

	if (q->cur != NULL && seq_ge(seq, q->cur_seq)) {
		m = q->cur;
		s = q->cur_seq;
	}
	while (m != NULL && seq_ge(seq, s + m->data_len)) {
		s += m->data_len;
		m = m->next;
	}
	*mseq = s;
	return m;
}

#define TCP_MAX_TX_SEGS 8 /* mbufs one segment may chain */

/* No sum of the payload copied into the segment's first mbuf (sndq_put()). */
#define PAYLOAD_SUM_NONE UINT32_MAX

/* No sum known of the octets copy_in() copies. */
#define SUM_UNKNOWN (-1)

/* Copies @p n octets from @p src to @p dst, at octet @p at of the segment's first mbuf;
 * with @p psum (not PAYLOAD_SUM_NONE), adds their sum to it: @p known where that is their
 * sum already (not SUM_UNKNOWN), else taken in the copy's pass. */
static void copy_in(char *dst, const char *src, uint32_t n, uint32_t at, uint32_t *psum,
		    int32_t known)
{
	uint16_t part;

	if (psum == NULL || *psum == PAYLOAD_SUM_NONE) {
		memcpy(dst, src, n);
		return;
	}
	if (known != SUM_UNKNOWN) {
		memcpy(dst, src, n);
		part = (uint16_t)known;
	} else {
		part = uiw_copy_sum(dst, src, n);
	}
	/* A piece that starts at an odd octet has its words shifted by one. */
	*psum += (at & 1) ? rte_bswap16(part) : part;
}

/* Octets [@p off, @p off + @p n) of gathered record @p m (uiw_tcp_gather()) to @p dst, which
 * is octet @p at of the segment's first mbuf, summed as copy_in() does: from the head
 * and tail in the mbuf's own room and the lent memory between them. */
static void gather_copy(char *dst, const struct tcp_gathered g, uint32_t off, uint32_t n,
			uint32_t at, uint32_t *psum)
{
	const char *src[3] = { g.own, g.mem, g.own + g.hlen };
	uint32_t len[3] = { g.hlen, g.len, g.tlen };

	for (unsigned i = 0; i < 3 && n > 0; i++) {
		if (off >= len[i]) {
			off -= len[i];
			continue;
		}
		uint32_t k = u32_min(len[i] - off, n);

		copy_in(dst, src[i] + off, k, at, psum, SUM_UNKNOWN);
		dst += k;
		at += k;
		n -= k;
		off = 0;
	}
}

/* The sum the layer above took of queued mbuf @p m as it built it (uiw_tcp_mark_summed()),
 * when octets [@p off, @p off + @p n) are the whole of it; else SUM_UNKNOWN. */
static int32_t noted_sum(const struct uiw_tcp_conn *c, const struct rte_mbuf *m, uint32_t off,
			 uint32_t n)
{
	if (!(m->ol_flags & c->tcp->summed_flag) || off != 0 || n != m->data_len ||
	    (m->hash.usr >> 16) != m->data_len)
		return SUM_UNKNOWN;
	return (int32_t)(m->hash.usr & 0xffff);
}

/*
 * Where the PMD frees each frame in this thread, inside tx_burst (tx_ext: it copies the
 * frame there; tx_over: it keeps the frame until the peer has read it, virtio-user), a
 * segment of one whole queued mbuf (an FPDU, mostly) goes out as a frame over that mbuf's
 * own buffer, its headers in the mbuf's headroom (uiw_mbuf_over()). On a copying PMD the
 * PMD's copy is then the only one, where TCP's copy of the FPDU into a frame was 6% of a
 * memif sender's time; on virtio-user the frame is one buffer, not a header and an
 * indirect mbuf with its atomic count. The frame holds the mbuf until the PMD frees it,
 * acknowledged or not. Not while another frame is over it (a retransmission while the
 * first waits in the port's queue or the PMD's ring): its headroom holds that frame's
 * headers, and the piece goes the way below (copied, or on virtio-user an indirect mbuf).
 * Short ones are copied (UIW_TCP_TX_OVER_MIN): the attachment costs more than the copy.
 * @p seg holds only headers; @p psum as for sndq_put(). @return false when @p m is to be
 * copied.
 */
static bool segment_over(struct uiw_tcp_conn *c, struct rte_mbuf *m, struct rte_mbuf *seg,
			 uint32_t *psum)
{
	if (!uiw_mbuf_over_ok(m, seg->data_len, UIW_ETH_HDR_LEN + UIW_IPV4_HDR_LEN)) {
		if (rte_mbuf_refcnt_read(m) > 1)
			tcp_count(c->tcp, UIW_TCP_C_tx_over_busy);
		return false;
	}
	if (psum != NULL && *psum != PAYLOAD_SUM_NONE) {
		int32_t known = noted_sum(c, m, 0, m->data_len);

		/* After a header of even length; none noted: the frame is read. */
		*psum = known != SUM_UNKNOWN ? *psum + (uint16_t)known : PAYLOAD_SUM_NONE;
	}
	uiw_mbuf_over(seg, m);
	tcp_count(c->tcp, UIW_TCP_C_tx_over);
	return true;
}

/* True when octets [@p off, @p off + @p n) of queued mbuf @p m lie right after the last
 * octet of frame piece @p t, in the same buffer (FPDUs built side by side in a slab,
 * MPA's fpdu_slab()), and @p t may grow by @p n: a TSO frame then takes them into @p t. */
static bool piece_joins(const struct rte_mbuf *t, const struct rte_mbuf *m, uint32_t off,
			uint32_t n)
{
	return RTE_MBUF_CLONED(t) && RTE_MBUF_CLONED(m) && t->buf_addr == m->buf_addr &&
	       (uint32_t)t->data_off + t->data_len == (uint32_t)m->data_off + off &&
	       (uint32_t)t->data_len + n <= UINT16_MAX;
}

/* Appends @p n bytes at @p off of @p m to @p seg: copied, or (@p attach) as an indirect
 * mbuf on the queued data chained after the header, so the payload is not copied; the
 * queued mbuf then lives until both the queue and the PMD are done with it. *@p psum
 * (when not NULL) gathers the sum of what is copied into @p seg's first mbuf, and becomes
 * PAYLOAD_SUM_NONE once any of the payload lies elsewhere.
 * @return false when that was not possible. */
static bool sndq_put(struct uiw_tcp_conn *c, struct rte_mbuf *m, uint32_t off, uint32_t n,
		     struct rte_mbuf *seg, struct rte_mbuf **last, bool attach, unsigned max_segs,
		     bool tso, uint32_t *psum)
{
	struct rte_mbuf *t = *last, *mi;
	char *dst;

	/* A frame over a queued mbuf's buffer is that mbuf's data and its headers, whole. */
	if (uiw_mbuf_is_over(seg))
		return false;
	if (psum != NULL && t != seg)
		*psum = PAYLOAD_SUM_NONE;

	/* A gathered record is copied from where its parts lie, never referred to; it fits
	 * a segment's first mbuf (uiw_tcp_gather_max()). Behind an indirect piece the
	 * segment ends here, and the record goes in the next one. */
	if (m->ol_flags & c->tcp->gather_flag) {
		if (!RTE_MBUF_DIRECT(t) || rte_pktmbuf_tailroom(t) < n)
			return false;
		gather_copy(rte_pktmbuf_mtod_offset(t, char *, t->data_len), tcp_gathered_of(m),
			    off, n, t->data_len, psum);
		t->data_len = (uint16_t)(t->data_len + n);
		seg->pkt_len += n;
		return true;
	}

	if ((c->tcp->port->tx_ext || c->tcp->port->tx_over) && !tso && t == seg &&
	    seg->pkt_len == seg->data_len && off == 0 && n == m->data_len &&
	    n >= UIW_TCP_TX_OVER_MIN && segment_over(c, m, seg, psum))
		return true;

	/* Lent memory goes to the PMD by reference only where the PMD copies the frame at
	 * once (uiw_port.tx_ext); else it is copied here. A short piece is copied too: an
	 * indirect mbuf (allocated, attached, detached, freed) costs more than the copy, and
	 * the PMD then takes one buffer instead of two. Where the PMD copies the frame
	 * anyway (tx_ext), so is a piece up to UIW_TCP_TX_COPY_EXT_MAX that fits (one of MTU
	 * 9000 costs more to copy than to refer to): the reference saved no copy there,
	 * and its two atomic reference-count updates, the second in the PMD's free right
	 * after its copy, waited on that copy's stores (perf put half of a memif sender's
	 * samples on it). Not in a TSO frame, whose header mbuf would fill. */
	if (!tso && n <= uiw_tcp_tx_copy_max(c) && RTE_MBUF_DIRECT(t) && rte_pktmbuf_tailroom(t) >= n) {
		copy_in(rte_pktmbuf_mtod_offset(t, char *, t->data_len),
			rte_pktmbuf_mtod_offset(m, const char *, off), n, t->data_len, psum,
			noted_sum(c, m, off, n));
		t->data_len = (uint16_t)(t->data_len + n);
		seg->pkt_len += n;
		return true;
	}
	if (!attach || (RTE_MBUF_HAS_EXTBUF(m) && !c->tcp->port->tx_ext && !c->tcp->port->tx_dma)) {
		uint32_t at = t->data_len;

		dst = rte_pktmbuf_append(seg, (uint16_t)n);
		if (dst == NULL)
			return false;
		copy_in(dst, rte_pktmbuf_mtod_offset(m, const char *, off), n, at, psum,
			noted_sum(c, m, off, n));
		return true;
	}
	if (tso && t != seg && piece_joins(t, m, off, n)) {
		t->data_len = (uint16_t)(t->data_len + n);
		t->pkt_len += n;
		seg->pkt_len += n;
		return true;
	}
	if (seg->nb_segs >= max_segs)
		return false;
	if (psum != NULL)
		*psum = PAYLOAD_SUM_NONE;
	mi = rte_pktmbuf_alloc(c->tcp->port->pool);
	if (mi == NULL)
		return false;
	if (RTE_MBUF_HAS_EXTBUF(m) && c->tcp->port->tx_dma) {
		/* The NIC may read the frame after the queue let the memory go (a frame sent
		 * again and still in its ring when the first is acknowledged): the frame holds
		 * the memory's DMA mapping, not the lender's count (struct uiw_lend). */
		struct rte_mbuf_ext_shared_info *dma = uiw_lend_dma(m->shinfo);

		rte_pktmbuf_attach_extbuf(mi, m->buf_addr, rte_mbuf_iova_get(m), m->buf_len, dma);
		rte_mbuf_ext_refcnt_update(dma, 1);
	} else {
		rte_pktmbuf_attach(mi, m);
	}
	mi->data_off = (uint16_t)(m->data_off + off);
	mi->data_len = (uint16_t)n;
	mi->pkt_len = n;
	mi->ol_flags &= ~c->tcp->record_flag;
	/* Linked at the tail we keep (rte_pktmbuf_chain() walks the chain to find it: a TSO
	 * frame of 46 pieces took over a thousand steps). */
	t->next = mi;
	*last = mi;
	seg->nb_segs++;
	seg->pkt_len += n;
	return true;
}

/*
 * Appends up to @p max bytes from sequence @p seq to @p seg, stopping before a record
 * start (UIW_TCP_SEND_RECORD) that is not the first byte, unless the frame is one for
 * TSO (@p tso). @p psum: as for sndq_put(). @return bytes appended.
 */
static uint32_t sndq_take(struct uiw_tcp_conn *c, uint32_t seq, uint32_t max,
			  struct rte_mbuf *seg, bool attach, unsigned max_segs, bool tso,
			  uint32_t *psum)
{
	/* A TSO frame spans records: the PMD's cuts keep them apart (tso_plan()). */
	uint64_t record = tso ? 0 : c->tcp->record_flag;
	uint32_t mseq, done = 0, taken_seq = 0;
	struct rte_mbuf *m = sndq_find(c, seq, &mseq), *last = rte_pktmbuf_lastseg(seg);
	struct rte_mbuf *taken = NULL;

	while (m != NULL && done < max) {
		uint32_t off = seq + done - mseq;
		uint32_t n = u32_min((uint32_t)m->data_len - off, max - done);

		if ((done > 0 && off == 0 && (m->ol_flags & record)) ||
		    !sndq_put(c, m, off, n, seg, &last, attach, max_segs, tso, psum))
			break;
		done += n;
		if (off + n == m->data_len) {
			taken = m;
			taken_seq = mseq;
			mseq += m->data_len;
			m = m->next;
		}
	}
	sndq_cursor(c, m, mseq, taken, taken_seq);
	return done;
}

/*
 * The length of the record that starts at @p seq (up to the next record start), at most
 * @p max; 0 when @p seq is not a record start (plain stream data, or a record already cut).
 * A record queued behind nothing carries no mark: on a connection of records, an mbuf that
 * begins at SND.UNA is taken for one.
 */
static uint32_t sndq_record_len(struct uiw_tcp_conn *c, uint32_t seq, uint32_t max)
{
	uint64_t record = c->tcp->record_flag;
	uint32_t mseq, n;
	struct rte_mbuf *m = sndq_find(c, seq, &mseq);

	if (m == NULL || seq != mseq ||
	    (!(m->ol_flags & record) && !(c->records && seq == c->snd_una)))
		return 0;
	n = m->data_len;
	for (m = m->next; m != NULL && n < max && !(m->ol_flags & record); m = m->next)
		n += m->data_len;
	return u32_min(n, max);
}

/* True when the PMD may be given @p m by reference (else sndq_put() copies it). */
static bool sndq_can_attach(const struct uiw_tcp_conn *c, const struct rte_mbuf *m)
{
	if (m->ol_flags & c->tcp->gather_flag)
		return false;
	return !RTE_MBUF_HAS_EXTBUF(m) || c->tcp->port->tx_ext || c->tcp->port->tx_dma;
}

uint32_t uiw_tcp_gather_max(const struct uiw_tcp_conn *c)
{
	const struct uiw_port *port = c->tcp->port;
	uint32_t room = port->pool != NULL ? rte_pktmbuf_data_room_size(port->pool) : 0;
	uint32_t below = RTE_PKTMBUF_HEADROOM + UIW_TCP_HDR_LEN + 40;

	/* Toward a vhost-user guest (tso_guest) lent memory is still gathered, and so sent a
	 * segment at a time: TSO frames of its FPDUs, three pieces each, made the vhost-user
	 * side's copy into the guest slow enough that 1 MiB Writes took 450-510 us against
	 * 318-334 (docs/BENCHMARKS.md). */
	if (c->tcp->gather_flag == 0 || (port->tso_max != 0 && !port->tso_guest) || port->tx_dma ||
	    room <= below)
		return 0;
	return u32_min(room - below, UINT16_MAX);
}

struct rte_mbuf *uiw_tcp_gather(struct uiw_tcp_conn *c, const void *head, uint32_t hlen,
				const void *mem, uint32_t len,
				struct rte_mbuf_ext_shared_info *lend, const void *tail,
				uint32_t tlen)
{
	struct rte_mbuf *m;
	char *own;

	if (hlen > UIW_TCP_GATHER_EDGE_MAX || tlen > UIW_TCP_GATHER_EDGE_MAX ||
	    hlen + len + tlen > uiw_tcp_gather_max(c) || len == 0)
		return NULL;
	m = rte_pktmbuf_alloc(c->tcp->port->pool);
	if (m == NULL)
		return NULL;
	/* The edges go where the mbuf's own data would be: attached, it carries none. */
	own = rte_mbuf_buf_addr(m, m->pool);
	memcpy(own, head, hlen);
	memcpy(own + hlen, tail, tlen);
	rte_pktmbuf_attach_extbuf(m, (void *)(uintptr_t)mem, RTE_BAD_IOVA, (uint16_t)len, lend);
	rte_mbuf_ext_refcnt_update(lend, 1);
	m->data_len = (uint16_t)(hlen + len + tlen);
	m->pkt_len = m->data_len;
	m->hash.usr = hlen | tlen << 8;
	m->ol_flags |= c->tcp->gather_flag;
	return m;
}

/* Gathered record @p m flattened into one pool mbuf, keeping its record mark. */
static struct rte_mbuf *gather_flatten(const struct uiw_tcp_conn *c, const struct rte_mbuf *m)
{
	struct rte_mbuf *copy = rte_pktmbuf_alloc(c->tcp->port->pool);
	char *d = copy != NULL ? rte_pktmbuf_append(copy, m->data_len) : NULL;

	if (d == NULL) {
		rte_pktmbuf_free(copy);
		return NULL;
	}
	gather_copy(d, tcp_gathered_of(m), 0, m->data_len, 0, NULL);
	copy->ol_flags |= m->ol_flags & c->tcp->record_flag;
	return copy;
}

/* A record the window has been short of, with nothing in flight, may now go split: the
 * persist timer has asked for the window TCP_RECORD_PROBES times and the window has been
 * short for TCP_RECORD_SPLIT_NS (tcp_internal.h says why both). */
static bool record_split_due(const struct uiw_tcp_conn *c)
{
	return c->record_short && c->record_probes >= TCP_RECORD_PROBES &&
	       c->tcp->now - c->record_short_ns >= TCP_RECORD_SPLIT_NS;
}

/*
 * TSO: how many bytes from @p seq (at most @p room) one frame carries for the PMD to cut
 * into segments of *@p segsz payload bytes. RFC 5044 §8 must still hold on the wire after
 * the cut: each segment one whole FPDU. So a frame of records (FPDUs) takes whole records
 * of one length L (*segsz = L) and at most one shorter record, last; the PMD's cuts then
 * fall on record boundaries. A stream without records is cut at the MSS. Every byte goes
 * by reference (no frame longer than an mbuf is copied). @return 0 when the frame would
 * not hold two segments: send them one by one.
 */
static uint32_t tso_plan(struct uiw_tcp_conn *c, uint32_t seq, uint32_t room, uint16_t *segsz)
{
	uint64_t record = c->tcp->record_flag;
	uint32_t mseq, total = 0, len = 0;
	unsigned segs = 1, max_segs = c->tcp->port->tso_segs;
	struct rte_mbuf *m = sndq_find(c, seq, &mseq), *prev = NULL;

	room = u32_min(room, c->tcp->port->tso_max);
	if (m == NULL || room <= c->mss || uiw_port_tx_room(c->tcp->port) == 0)
		return 0;
	if (seq != mseq || !(m->ol_flags & record)) {
		/* Plain stream data, up to the next record start. */
		uint32_t off = seq - mseq;

		for (; m != NULL && total < room && segs < max_segs; m = m->next, off = 0) {
			if ((total > 0 && (m->ol_flags & record)) || !sndq_can_attach(c, m))
				break;
			total += u32_min((uint32_t)m->data_len - off, room - total);
			segs++;
		}
		*segsz = c->mss;
		return total > c->mss ? total : 0;
	}
	while (m != NULL) {
		uint32_t rlen = 0;
		unsigned pieces = 0;
		struct rte_mbuf *p = m;

		do {
			if (!sndq_can_attach(c, p))
				goto out;
			/* Side by side with the piece before it: the frame's piece grows. */
			if (prev == NULL || !piece_joins(prev, p, 0, 0))
				pieces++;
			rlen += p->data_len;
			prev = p;
			p = p->next;
		} while (p != NULL && !(p->ol_flags & record));
		if (rlen > c->mss || (len != 0 && rlen > len) || total + rlen > room ||
		    segs + pieces > max_segs)
			break;
		if (len == 0)
			len = rlen;
		total += rlen;
		segs += pieces;
		m = p;
		if (rlen < len)
			break;
	}
out:
	*segsz = (uint16_t)len;
	return len != 0 && total > len ? total : 0;
}

/* RFC 9293 §3.8.6.2.2: the right edge never moves left; SWS avoided by the scale. */
static uint16_t adv_window(struct uiw_tcp_conn *c)
{
	uint32_t wnd = uiw_tcp_rcv_window(c);
	uint32_t right = c->rcv_nxt + wnd;
	uint32_t val;

	if (seq_lt(right, c->rcv_adv))
		right = c->rcv_adv;
	val = (right - c->rcv_nxt) >> c->rcv_wscale;
	if (val > 0xffff)
		val = 0xffff;
	c->rcv_adv = c->rcv_nxt + (val << c->rcv_wscale);
	return (uint16_t)val;
}

/*
 * The receive buffer less what is held: out of order here, and of an unfinished record
 * by the layer above (it was acknowledged, but it still takes room). The buffer counts no
 * more than the out-of-order queue can hold in full-sized segments: a window wider than
 * that let a sender fill everything past one hole beyond tcp_ooo_max segments, the
 * excess was dropped unseen (no SACK for it, so no fast recovery) and only the sender's
 * retransmission timeout brought it back.
 */
uint32_t uiw_tcp_rcv_window(const struct uiw_tcp_conn *c)
{
	const struct uiw_tcp *t = c->tcp;
	uint64_t room = t->ooo_max > 0 ? (uint64_t)t->ooo_max * tcp_our_mss(t) : UINT32_MAX;
	uint32_t buf = room < t->rcv_buf ? (uint32_t)room : t->rcv_buf;
	uint32_t held = c->ooo_bytes + c->ulp_bytes;

	return held >= buf ? 0 : buf - held;
}

void uiw_tcp_ulp_held(struct uiw_tcp_conn *c, uint32_t bytes, uint32_t mbufs)
{
	uint32_t before = c->ulp_bytes;

	c->tcp->rx_mbufs = c->tcp->rx_mbufs - c->ulp_mbufs + mbufs;
	c->ulp_mbufs = mbufs;
	c->ulp_bytes = bytes;
	/* The layer above let go of much while the window we gave was nearly shut (it held a
	 * record back, uiw_mpa_rx_wait): say so now, or the peer learns it only from its
	 * persist timer's next probe. RFC 9293 §3.8.6.2.2: an update once the window can grow
	 * by min(half the buffer, one MSS). */
	if (bytes < before && c->state == UIW_TCP_ESTABLISHED) {
		uint32_t mss = tcp_our_mss(c->tcp), adv = c->rcv_adv - c->rcv_nxt;
		uint32_t step = c->tcp->rcv_buf / 2 < mss ? c->tcp->rcv_buf / 2 : mss;

		if (seq_lt(c->rcv_adv, c->rcv_nxt))
			adv = 0;
		if (adv < mss && uiw_tcp_rcv_window(c) >= adv + step) {
			tcp_count(c->tcp, UIW_TCP_C_window_updates);
			c->flags |= TF_ACK_NOW;
			uiw_tcp_mark_pending(c);
		}
	}
}

/*
 * The sum of a header as uiw_raw_sum() would read it from the frame, taken from the values
 * uiw_tcp_build() writes and from the options as built on the stack. The header was
 * written just before, in stores of 1 to 4 octets that wider loads cannot take from the
 * store buffer: reading it back waited for every store before them (the FPDU's too) to
 * reach the cache. The one's-complement sum is the same in either byte order (RFC 1071
 * §2 (B)).
 */
static uint32_t hdr_fields_sum(uint16_t sport, uint16_t dport, uint32_t seq, uint32_t ack,
			       uint8_t flags, uint16_t win, unsigned optlen)
{
	uint32_t sum = (uint32_t)sport + dport + (seq >> 16) + (seq & 0xffff) + (ack >> 16) +
		       (ack & 0xffff) + ((UIW_TCP_HDR_LEN + optlen) / 4 << 12 | flags) + win;

	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return rte_bswap16((uint16_t)sum);
}

static uint32_t hdr_raw_sum(uint16_t sport, uint16_t dport, uint32_t seq, uint32_t ack,
			    uint8_t flags, uint16_t win, const uint8_t *opts, unsigned optlen)
{
	return hdr_fields_sum(sport, dport, seq, ack, flags, win, optlen) + uiw_raw_sum(opts, optlen);
}

/* Fills the checksum, in software or by the PMD (the field then holds the pseudo-header
 * sum, as DPDK's TX offload wants). @p payload_sum: the sum of all that follows the
 * header, taken as it was copied into the one mbuf @p m (sndq_put()), or
 * PAYLOAD_SUM_NONE; with one, @p hdr_raw is the header's (hdr_raw_sum()). */
static void tcp_checksum(struct uiw_tcp *t, struct rte_mbuf *m, struct uiw_tcp_hdr *th,
			 uint32_t src, uint32_t dst, uint32_t tcp_len, uint32_t payload_sum,
			 uint32_t hdr_raw)
{
	uint32_t sum = uiw_tcp_phdr_sum(src, dst, (uint16_t)tcp_len);

	/* DPDK's TSO: the field holds the pseudo-header sum without the length, which the
	 * PMD adds per segment; the IP checksum too is the PMD's where it offers it. A
	 * vhost-user guest takes the frame whole (uiw_port.tso_guest): the sum then holds
	 * the frame's TCP length, as virtio-net's drivers and devices have it (virtio 1.1
	 * §5.1.6.2; DPDK's virtio PMD puts it there before it sends such a frame). */
	if (m->ol_flags & RTE_MBUF_F_TX_TCP_SEG) {
		sum = uiw_tcp_phdr_sum(src, dst, t->port->tso_guest ? (uint16_t)tcp_len : 0);
		sum = (sum & 0xffff) + (sum >> 16);
		sum = (sum & 0xffff) + (sum >> 16);
		th->cksum = uiw_be16_of((uint16_t)sum);
		m->ol_flags |= RTE_MBUF_F_TX_IPV4 | RTE_MBUF_F_TX_TCP_CKSUM;
		if (t->port->tx_offloads & RTE_ETH_TX_OFFLOAD_IPV4_CKSUM)
			m->ol_flags |= RTE_MBUF_F_TX_IP_CKSUM;
		m->l4_len = uiw_tcp_hdr_len(th);
		return;
	}

	if (t->port->tx_offloads & RTE_ETH_TX_OFFLOAD_TCP_CKSUM) {
		sum = (sum & 0xffff) + (sum >> 16);
		sum = (sum & 0xffff) + (sum >> 16);
		th->cksum = uiw_be16_of((uint16_t)sum);
		m->ol_flags |= RTE_MBUF_F_TX_IPV4 | RTE_MBUF_F_TX_TCP_CKSUM;
		m->l4_len = uiw_tcp_hdr_len(th);
		return;
	}
	if (payload_sum != PAYLOAD_SUM_NONE && m->next == NULL) {
		/* The header's length is even: the payload's words line up with it. */
		sum += uiw_inet_sum_of_raw(hdr_raw + payload_sum);
	} else {
		sum += uiw_inet_sum_mbuf_noted(m, t->summed_flag);   /* m whole: tcp_len octets */
	}
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	th->cksum = uiw_inet_cksum_of((uint16_t)sum);
}

/*
 * The options of a segment of @p len octets from @p seq, into @p opts. @return their length.
 * RFC 5044 §8.1.2: an FPDU is not split across segments. The MPA layer sizes FPDUs by the
 * MSS less the options every segment carries; SACK blocks (RFC 2018, a D-SACK too) come and
 * go, and with them a full-sized FPDU no longer fit: it went out in two segments. Such a
 * record goes without the blocks (*@p sack_left), and a pure ACK that carries them follows
 * at the end of the pass (RFC 2018 §4 asks for them in ACKs as a SHOULD). The record at the
 * head of the queue carries no mark (marks separate records).
 */
static unsigned segment_opts(struct uiw_tcp_conn *c, uint32_t seq, uint32_t len, uint8_t flags,
			     uint32_t tsval, uint16_t tso_segsz, uint8_t *opts, bool *sack_left)
{
	uint32_t max;
	unsigned optlen, bare;

	*sack_left = false;
	if (flags & UIW_TCP_SYN)
		return uiw_tcp_opts_build_syn(c, flags & UIW_TCP_ACK, tsval, opts);
	optlen = uiw_tcp_opts_build(c, tsval, opts, true);
	max = c->tcp->port->mtu - UIW_IPV4_HDR_LEN - UIW_TCP_HDR_LEN - optlen;
	if (len <= max || tso_segsz != 0 || !c->records ||
	    (seq != c->snd_una && sndq_record_len(c, seq, len) <= max))
		return optlen;
	bare = uiw_tcp_opts_build(c, tsval, opts, false);
	*sack_left = bare < optlen;
	return bare;
}

/* The first mbuf of a segment. As for MPA's FPDUs (fpdu_mbuf()), the lines the next
 * segment's headers go in are asked for now, where another core may have read them last
 * (the PMD does not copy frames): two mbufs down, as the next one most often carries this
 * segment's payload by reference. */
static struct rte_mbuf *segment_mbuf(struct uiw_tcp *t)
{
	struct rte_mbuf *m = uiw_port_alloc(t->port);

	if (m != NULL && !t->port->tx_ext)
		uiw_pool_prefetch_next(t->port->pool, 2, -64, 192);
	return m;
}

/*
 * Data (new or retransmitted, whichever path sends it) waits while the port's TX queue is
 * full: a segment the PMD cannot take now would be dropped, and a dropped segment costs a
 * retransmission and, behind it, the peer's out-of-order queue (a large window bursting
 * into a small memif ring did exactly that). The connection tries again on the next pass.
 * So do a SYN, a FIN and an ACK owed now: dropped, they waited for a timer (a SYN: a
 * second), and a burst of connections set up at once over memif overflowed the ring.
 * A pure ACK not owed at once is not held (nor a RST: send_raw()). @return true when held.
 */
static bool port_holds_back(struct uiw_tcp_conn *c, uint32_t len, uint8_t flags)
{
	if (!(len > 0 || (flags & (UIW_TCP_SYN | UIW_TCP_FIN)) || (c->flags & TF_ACK_NOW)) ||
	    !conn_in_table(c) || uiw_port_tx_room(c->tcp->port) != 0)
		return false;
	tcp_count(c->tcp, UIW_TCP_C_tx_port_wait);
	if (flags & UIW_TCP_SYN)
		c->syn_held = true;
	uiw_tcp_mark_blocked(c);
	return true;
}

/* A segment carrying ACK = RCV.NXT has gone: nothing is owed now but SACK blocks left out
 * of it (@p sack_left, segment_opts()). */
static void ack_sent(struct uiw_tcp_conn *c, bool sack_left)
{
	c->last_ack_sent = c->rcv_nxt;
	if (!sack_left)
		c->dsack_pending = false;   /* reported once (in the options just built) */
	c->sack_owed = sack_left;
	c->flags &= (uint16_t)~(TF_ACK_NOW | TF_DELACK);
	c->t_delack = 0;
	c->unacked_segs = 0;
}

/*
 * Sends one segment from @p seq: SYN and FIN as @p flags say, up to @p len payload bytes
 * from the send queue (fewer at a record start or the MTU). Every segment but a SYN in
 * SYN-SENT carries an ACK. @return payload bytes sent, or a negative errno.
 */
static int send_segment_ts(struct uiw_tcp_conn *c, uint32_t seq, uint32_t len, uint8_t flags,
			   uint32_t tsval, uint16_t tso_segsz)
{
	struct uiw_tcp *t = c->tcp;
	struct rte_mbuf *m;
	uint8_t opts[40];
	unsigned optlen, hlen;
	uint32_t max, n = 0, payload_sum = PAYLOAD_SUM_NONE;
	struct uiw_tcp_hdr *th;
	bool sack_left;
	uint16_t win;
	int rc;

	if (port_holds_back(c, len, flags))
		return -EAGAIN;
	m = segment_mbuf(t);
	if (m == NULL) {
		/* The pool refills as the PMD and the peer hand frames back: data is tried
		 * again on the next pass, not only when a timer fires. */
		tcp_count(t, UIW_TCP_C_tx_nombuf);
		t->pool_empty = true;
		/* Data, a FIN, or an ACK owed now: next pass again (nothing else may come). */
		if (len > 0 || (flags & UIW_TCP_FIN) || (c->flags & TF_ACK_NOW))
			uiw_tcp_mark_blocked(c);
		return -ENOMEM;
	}
	if (c->state != UIW_TCP_SYN_SENT)
		flags |= UIW_TCP_ACK;
	optlen = segment_opts(c, seq, len, flags, tsval, tso_segsz, opts, &sack_left);
	max = t->port->mtu - UIW_IPV4_HDR_LEN - UIW_TCP_HDR_LEN - optlen;
	hlen = UIW_TCP_HDR_LEN + optlen;
	th = (struct uiw_tcp_hdr *)rte_pktmbuf_append(m, (uint16_t)hlen);
	memcpy(th + 1, opts, optlen);
	if (tso_segsz != 0) {
		/* One frame of many segments (tso_plan()): all of it by reference, or none. */
		n = sndq_take(c, seq, len, m, true, t->port->tso_segs, true, NULL);
		if (n != len) {
			rte_pktmbuf_free(m);
			tcp_count(t, UIW_TCP_C_tx_nombuf);
			uiw_tcp_mark_blocked(c);
			return -ENOMEM;
		}
		m->ol_flags |= RTE_MBUF_F_TX_TCP_SEG;
		m->tso_segsz = tso_segsz;
	} else if (len > 0) {
		/* Where TCP sums in software, what it copies is summed in the copy's pass. */
		if (!(t->port->tx_offloads & RTE_ETH_TX_OFFLOAD_TCP_CKSUM))
			payload_sum = 0;
		n = sndq_take(c, seq, u32_min(len, max), m,
			      (t->port->tx_offloads & RTE_ETH_TX_OFFLOAD_MULTI_SEGS) != 0,
			      TCP_MAX_TX_SEGS, false, payload_sum == 0 ? &payload_sum : NULL);
		if (n == 0) {
			/* No mbuf to carry the payload by reference: like an empty pool above,
			 * tried again next pass. Sent as a bare ACK, the data waited for an event
			 * that a connection with nothing in flight never gets. */
			rte_pktmbuf_free(m);
			tcp_count(t, UIW_TCP_C_tx_nombuf);
			uiw_tcp_mark_blocked(c);
			return -ENOMEM;
		}
	}
	th = rte_pktmbuf_mtod(m, struct uiw_tcp_hdr *);   /* moved when over a queued mbuf */
	if (n < len)
		flags &= (uint8_t)~UIW_TCP_FIN; /* the FIN goes with the last byte only */
	win = (flags & UIW_TCP_SYN) ? (uint16_t)u32_min(uiw_tcp_rcv_window(c), 0xffffu) : adv_window(c);
	if (flags & UIW_TCP_SYN)
		c->rcv_adv = c->rcv_nxt + win;
	uint32_t ack = (flags & UIW_TCP_ACK) ? c->rcv_nxt : 0;

	uiw_tcp_build(th, c->lport, c->rport, seq, ack, flags, win, hlen);
	tcp_checksum(t, m, th, c->laddr, c->raddr, hlen + n, payload_sum,
		     payload_sum != PAYLOAD_SUM_NONE
		     ? hdr_raw_sum(c->lport, c->rport, seq, ack, flags, win, opts, optlen) : 0);
	if (flags & UIW_TCP_ACK)
		ack_sent(c, sack_left);
	if (tso_segsz != 0) {
		uint32_t segs = (n + tso_segsz - 1) / tso_segsz;

		c->st.segs_out += segs;
		t->counters[UIW_TCP_C_tx_segs] += segs;
		tcp_count(t, UIW_TCP_C_tx_tso_frames);
	} else {
		c->st.segs_out++;
		tcp_count(t, UIW_TCP_C_tx_segs);
	}
	c->st.bytes_out += n;
	rc = uiw_net_output(t->net, m, c->raddr, UIW_IPPROTO_TCP, t->now);
	if (rc == -EHOSTUNREACH)
		return rc;
	return (int)n;
}

/* Whether queued mbuf @p m, from @p seq, goes in a run (send_run()) as far as it alone
 * decides: @p hdrs octets of headers in front of it, over its buffer (@p over) or by an
 * indirect mbuf; its sum into *@p known where TCP sums (@p soft). */
static bool run_takes(struct uiw_tcp_conn *c, struct rte_mbuf *m, uint32_t seq, unsigned hdrs,
		      bool over, bool soft, int32_t *known)
{
	const struct uiw_tcp *t = c->tcp;
	const struct rte_mbuf *next = m->next;

	return m->data_len >= UIW_TCP_TX_OVER_MIN && !(m->ol_flags & t->gather_flag) &&
	       ((m->ol_flags & t->record_flag) || seq == c->snd_una) &&
	       (next == NULL || (next->ol_flags & t->record_flag)) &&
	       (!soft || (*known = noted_sum(c, m, 0, m->data_len)) != SUM_UNKNOWN) &&
	       (over ? uiw_mbuf_over_ok(m, (uint16_t)hdrs, 0) : !RTE_MBUF_HAS_EXTBUF(m)) &&
	       uiw_port_tx_room(t->port) != 0;
}

/*
 * A run: whole records sent one a segment in this pass, on headers built once. On a port
 * that cuts no frames itself (no TSO) each segment went its own way through
 * send_segment_ts(), its options, window, route, next hop and headers all built afresh:
 * about 1,100 instructions a segment, where a 64 KiB Write is 45 segments
 * (docs/BENCHMARKS.md). Within one pass only the sequence number, the IPv4
 * identification, the lengths, PSH and the checksums change from segment to segment, so
 * a run builds the rest once (as a TSO port's PMD copies a frame's headers to each
 * segment it cuts) and each segment copies them and writes those. The frames are the
 * ones send_segment_ts() would send: one record each (RFC 5044 §8), its payload by
 * reference (over the record's own buffer, uiw_mbuf_over(), or an indirect mbuf), the
 * checksum from the sum the layer above noted as it built the record.
 * A record goes in a run when all of that holds for it: one whole queued mbuf and a record
 * start, within the window, the MSS and the port's queue, long enough to go by reference
 * (UIW_TCP_TX_OVER_MIN), not gathered, not lent, its sum noted where TCP sums; and a run
 * is made only of data never sent (a retransmission is counted and kept from the RTT's
 * timing segment by segment, uiw_tcp_sent_data()) and with no SACK blocks to send (they
 * change the options from segment to segment). The first record that does not qualify
 * ends the run, and goes by send_segment_ts(). @return payload octets sent (0: none).
 */
static uint32_t send_run(struct uiw_tcp_conn *c, uint32_t seq, uint32_t room, uint32_t end,
			 uint32_t tsval)
{
	struct uiw_tcp *t = c->tcp;
	struct uiw_port *port = t->port;
	const bool over = port->tx_ext || port->tx_over;
	const bool soft = !(port->tx_offloads & RTE_ETH_TX_OFFLOAD_TCP_CKSUM);
	const unsigned below = UIW_ETH_HDR_LEN + UIW_IPV4_HDR_LEN;
	struct uiw_net_run nr;
	uint8_t tcph[UIW_TCP_HDR_LEN + 40];
	unsigned optlen, hlen;
	uint32_t mseq, done = 0, max, ack = 0, opts_raw, taken_seq = 0;
	uint16_t win = 0;
	struct rte_mbuf *m, *taken = NULL;

	if (!t->tx_runs || !c->records || seq != c->snd_max || room < UIW_TCP_TX_OVER_MIN ||
	    c->sack_owed || (!over && !(port->tx_offloads & RTE_ETH_TX_OFFLOAD_MULTI_SEGS)) ||
	    ((c->flags & TF_SACK_OK) && (c->nooo > 0 || c->dsack_pending)))
		return 0;
	m = sndq_find(c, seq, &mseq);
	if (m == NULL || seq != mseq || m->data_len < UIW_TCP_TX_OVER_MIN ||
	    !uiw_net_run_start(t->net, c->raddr, UIW_IPPROTO_TCP, &nr))
		return 0;
	optlen = uiw_tcp_opts_build(c, tsval, tcph + UIW_TCP_HDR_LEN, false);
	opts_raw = uiw_raw_sum(tcph + UIW_TCP_HDR_LEN, optlen);
	hlen = UIW_TCP_HDR_LEN + optlen;
	max = u32_min(c->mss, port->mtu - UIW_IPV4_HDR_LEN - hlen);

	while (m != NULL) {
		struct rte_mbuf *next = m->next, *f, *mi = NULL;
		uint32_t n = m->data_len, s = seq + done;
		int32_t known = 0;
		uint8_t flags = UIW_TCP_ACK, *p = NULL;
		struct uiw_tcp_hdr *th;

		if (n > max || n > room - done || !run_takes(c, m, s, below + hlen, over, soft, &known))
			break;
		f = segment_mbuf(t);
		if (f == NULL)
			break;
		if ((!over && (mi = rte_pktmbuf_alloc(port->pool)) == NULL) ||
		    (p = (uint8_t *)rte_pktmbuf_append(f, (uint16_t)(below + hlen))) == NULL) {
			rte_pktmbuf_free(mi);
			rte_pktmbuf_free(f);
			break;
		}
		if (done == 0) {
			/* Only now: the window offered is taken as offered (RFC 9293 §3.8.6.2.2). */
			win = adv_window(c);
			ack = c->rcv_nxt;
			uiw_tcp_build((struct uiw_tcp_hdr *)tcph, c->lport, c->rport, 0, ack,
				      UIW_TCP_ACK, win, hlen);
		}
		if (s + n == end)
			flags |= UIW_TCP_PSH;
		uiw_net_run_fill(t->net, &nr, p, (uint16_t)(hlen + n));
		th = (struct uiw_tcp_hdr *)(p + below);
		memcpy(th, tcph, hlen);
		th->seq = uiw_be32_of(s);
		th->flags = flags;
		tcp_checksum(t, f, th, c->laddr, c->raddr, hlen + n,
			     soft ? (uint32_t)(uint16_t)known : PAYLOAD_SUM_NONE,
			     soft ? hdr_fields_sum(c->lport, c->rport, s, ack, flags, win, optlen) +
				    opts_raw : 0);
		if (over) {
			uiw_mbuf_over(f, m);
			tcp_count(t, UIW_TCP_C_tx_over);
		} else {
			rte_pktmbuf_attach(mi, m);
			mi->data_off = m->data_off;
			mi->data_len = (uint16_t)n;
			mi->pkt_len = n;
			mi->ol_flags &= ~t->record_flag;
			f->next = mi;
			f->nb_segs = 2;
			f->pkt_len += n;
		}
		uiw_net_run_send(t->net, f);
		c->st.segs_out++;
		c->st.bytes_out += n;
		tcp_count(t, UIW_TCP_C_tx_segs);
		tcp_count(t, UIW_TCP_C_tx_run_segs);
		done += n;
		taken = m;
		taken_seq = mseq;
		mseq += n;
		m = next;
	}
	if (done == 0)
		return 0;
	sndq_cursor(c, m, mseq, taken, taken_seq);
	ack_sent(c, false);   /* no SACK blocks were owed */
	return done;
}

int uiw_tcp_send_segment(struct uiw_tcp_conn *c, uint32_t seq, uint32_t len, uint8_t flags)
{
	return send_segment_ts(c, seq, len, flags, uiw_tcp_ts_now(c->tcp), 0);
}

/* A SYN-ACK whose TSval is given (a SYN cookie's, tcp_syncookie.c). */
void uiw_tcp_send_synack_ts(struct uiw_tcp_conn *c, uint32_t tsval)
{
	send_segment_ts(c, c->iss, 0, UIW_TCP_SYN | UIW_TCP_ACK, tsval, 0);
}

void uiw_tcp_send_ack(struct uiw_tcp_conn *c)
{
	uiw_tcp_send_segment(c, c->snd_nxt, 0, UIW_TCP_ACK);
}

static void send_raw(struct uiw_tcp *t, uint32_t laddr, uint16_t lport, uint32_t raddr,
		     uint16_t rport, uint32_t seq, uint32_t ack, uint8_t flags)
{
	struct rte_mbuf *m = uiw_port_alloc(t->port);
	struct uiw_tcp_hdr *th;

	if (m == NULL) {
		tcp_count(t, UIW_TCP_C_tx_nombuf);
		return;
	}
	th = (struct uiw_tcp_hdr *)rte_pktmbuf_append(m, UIW_TCP_HDR_LEN);
	uiw_tcp_build(th, lport, rport, seq, ack, flags, 0, UIW_TCP_HDR_LEN);
	tcp_checksum(t, m, th, laddr, raddr, UIW_TCP_HDR_LEN, PAYLOAD_SUM_NONE, 0);
	tcp_count(t, UIW_TCP_C_rst_tx);
	tcp_count(t, UIW_TCP_C_tx_segs);
	uiw_net_output(t->net, m, raddr, UIW_IPPROTO_TCP, t->now);
}

/* RFC 9293 §3.10.7.1: the reset for a segment that has no connection. */
void uiw_tcp_send_rst_for(struct uiw_tcp *t, const struct tcp_seg *s)
{
	if (s->flags & UIW_TCP_ACK)
		send_raw(t, s->daddr, s->dport, s->saddr, s->sport, s->ack, 0, UIW_TCP_RST);
	else
		send_raw(t, s->daddr, s->dport, s->saddr, s->sport, 0,
			 s->seq + s->len + !!(s->flags & UIW_TCP_SYN) + !!(s->flags & UIW_TCP_FIN),
			 UIW_TCP_RST | UIW_TCP_ACK);
}

void uiw_tcp_send_rst(struct uiw_tcp_conn *c)
{
	send_raw(c->tcp, c->laddr, c->lport, c->raddr, c->rport, c->snd_nxt, c->rcv_nxt,
		 UIW_TCP_RST | UIW_TCP_ACK);
}

/* Segment bookkeeping after sending [seq, seq+n). */
void uiw_tcp_sent_data(struct uiw_tcp_conn *c, uint32_t seq, uint32_t n)
{
	struct uiw_tcp *t = c->tcp;

	if (seq_lt(seq, c->snd_max)) {
		c->st.retransmits++;
		tcp_count(t, UIW_TCP_C_retransmits);
	} else if (!(c->flags & TF_RTT_ACTIVE)) {
		/* Karn: only a segment sent once is timed. */
		c->flags |= TF_RTT_ACTIVE;
		c->rtt_seq = seq;
		c->rtt_start = t->now;
	}
	if (c->t_rexmt == 0) {
		c->t_rexmt = t->now + (uint64_t)c->rto_us * 1000ull;
		uiw_tcp_timer_arm(c);
	}
	c->snd_max = seq_max(c->snd_max, seq + n);
	if (c->t_probe == 0)
		uiw_tcp_probe_arm(c);
}

/* RFC 6675 §5 (simplified): retransmit holes below the highest SACKed byte while the
 * estimated pipe is below cwnd. @return true when something was sent. */
static bool sack_recovery_output(struct uiw_tcp_conn *c, uint32_t *pipe)
{
	uint32_t high_sacked = c->nscore ? c->score[c->nscore - 1][1] : c->snd_una;
	bool sent = false;

	while (*pipe < c->cwnd) {
		uint32_t s = seq_max(c->high_rxt, c->snd_una), end;
		uint32_t len;
		int n;

		while (uiw_tcp_sack_is_sacked(c, s, &end))
			s = end;
		if (!seq_lt(s, high_sacked))
			break;
		len = c->mss;
		for (unsigned i = 0; i < c->nscore; i++)
			if (seq_gt(c->score[i][0], s)) {
				len = u32_min(len, c->score[i][0] - s);
				break;
			}
		n = uiw_tcp_send_segment(c, s, len, UIW_TCP_ACK);
		if (n <= 0)
			break;
		uiw_tcp_sent_data(c, s, (uint32_t)n);
		c->high_rxt = s + (uint32_t)n;
		c->rxt_snd_max = c->snd_max;
		*pipe += (uint32_t)n;
		sent = true;
	}
	return sent;
}

static bool can_send_data(const struct uiw_tcp_conn *c)
{
	switch (c->state) {
	case UIW_TCP_ESTABLISHED:
	case UIW_TCP_CLOSE_WAIT:
	case UIW_TCP_FIN_WAIT_1:
	case UIW_TCP_CLOSING:
	case UIW_TCP_LAST_ACK:
		return true;
	default:
		return false;
	}
}

/* New data within the windows; in SACK recovery the pipe, not the flight, counts. */
static bool output_new_data(struct uiw_tcp_conn *c, uint32_t pipe)
{
	uint32_t end = c->snd_una + c->sq.bytes;
	bool sack_recovery = (c->flags & (TF_IN_RECOVERY | TF_SACK_OK)) ==
			     (TF_IN_RECOVERY | TF_SACK_OK);
	bool sent = false;

	while (seq_lt(c->snd_nxt, end)) {
		uint32_t rwnd_end = c->snd_una + c->snd_wnd;
		uint32_t room, len;
		uint16_t segsz;
		int n;

		if (!seq_lt(c->snd_nxt, rwnd_end))
			break;
		if (sack_recovery) {
			if (pipe >= c->cwnd)
				break;
			room = u32_min(rwnd_end - c->snd_nxt, c->cwnd - pipe);
		} else {
			/* RFC 3042 limited transmit: a new segment for each of the first two
			 * duplicate ACKs. */
			uint32_t cwnd_end = c->snd_una + c->cwnd +
					    (c->flags & TF_IN_RECOVERY ? 0 : u32_min(c->dupacks, 2) * c->mss);

			if (!seq_lt(c->snd_nxt, cwnd_end))
				break;
			room = seq_min(rwnd_end, cwnd_end) - c->snd_nxt;
		}
		/* Whole records on headers built once (no TSO), */
		if (c->tcp->port->tso_max == 0 && !(c->flags & TF_IN_RECOVERY)) {
			n = (int)send_run(c, c->snd_nxt, u32_min(room, end - c->snd_nxt), end,
					  uiw_tcp_ts_now(c->tcp));
			if (n > 0)
				goto sent;
		}
		/* a frame of many segments for the PMD to cut (TSO), or one segment. */
		segsz = 0;
		len = c->tcp->port->tso_max != 0 && !(c->flags & TF_IN_RECOVERY)
		      ? tso_plan(c, c->snd_nxt, u32_min(room, end - c->snd_nxt), &segsz) : 0;
		if (len == 0) {
			segsz = 0;
			len = u32_min(u32_min((uint32_t)c->mss, room), end - c->snd_nxt);
		}
		/* RFC 5044 §8: an MPA-aware sender keeps each FPDU in one segment. When the
		 * window cuts a record short and an ACK is still to come, wait for it rather
		 * than split the record. With nothing in flight no ACK comes by itself: the
		 * persist timer asks for the window with a probe that carries no data (a
		 * receiver that let go of what it held also says so itself); only after
		 * TCP_RECORD_PROBES of them, and TCP_RECORD_SPLIT_NS, is the record split, so
		 * that a window that never opens to a whole record cannot stall the connection. */
		if (segsz == 0 && len < c->mss && sndq_record_len(c, c->snd_nxt, c->mss) > len &&
		    (c->snd_nxt != c->snd_una || !record_split_due(c))) {
			tcp_count(c->tcp, UIW_TCP_C_tx_record_wait);
			if (c->snd_nxt == c->snd_una) {
				if (!c->record_short)
					c->record_short_ns = c->tcp->now;
				c->record_short = true;
				if (c->t_persist == 0) {
					c->t_persist = c->tcp->now + (uint64_t)c->rto_us * 1000ull;
					uiw_tcp_timer_arm(c);
				}
			}
			break;
		}
		n = send_segment_ts(c, c->snd_nxt, len, (c->snd_nxt + len == end) ? UIW_TCP_PSH : 0,
				    uiw_tcp_ts_now(c->tcp), segsz);
		/* -ENOMEM: the connection is on the blocked list and tries again next pass. (A
		 * 1 ms retransmission timer used to do it: with data in flight too, each of its
		 * expiries counted as a timeout, and a starved pool dropped connections for
		 * "retransmissions timed out" within milliseconds.) */
		if (n <= 0)
			break;
sent:
		uiw_tcp_sent_data(c, c->snd_nxt, (uint32_t)n);
		c->snd_nxt += (uint32_t)n;
		pipe += (uint32_t)n;
		sent = true;
		c->record_short = false;
		c->record_probes = 0;
	}
	return sent;
}

void uiw_tcp_output(struct uiw_tcp_conn *c)
{
	struct uiw_tcp *t = c->tcp;
	bool sent = false;

	if (c->syn_held) {
		c->syn_held = false;
		if (c->state == UIW_TCP_SYN_SENT || c->state == UIW_TCP_SYN_RECEIVED) {
			uiw_tcp_send_segment(c, c->iss, 0, c->state == UIW_TCP_SYN_SENT
				? UIW_TCP_SYN : UIW_TCP_SYN | UIW_TCP_ACK);
			return;
		}
	}

	if (can_send_data(c)) {
		uint32_t pipe = uiw_tcp_pipe(c);
		uint32_t end;

		if ((c->flags & (TF_IN_RECOVERY | TF_SACK_OK)) == (TF_IN_RECOVERY | TF_SACK_OK))
			sent |= sack_recovery_output(c, &pipe);
		sent |= output_new_data(c, pipe);
		end = c->snd_una + c->sq.bytes;
		/* The FIN first, or again after the timer took SND.NXT back (its sequence
		 * number is then SND.MAX - 1: nothing follows a FIN). */
		if ((c->flags & TF_FIN_QUEUED) && c->snd_nxt == end &&
		    (!(c->flags & TF_FIN_SENT) || c->snd_nxt + 1 == c->snd_max) &&
		    uiw_tcp_send_segment(c, c->snd_nxt, 0, UIW_TCP_FIN) >= 0) {
			uiw_tcp_sent_data(c, c->snd_nxt, 1);
			c->snd_nxt++;
			c->flags |= TF_FIN_SENT;
			sent = true;
		}
		/* Zero window with data waiting and nothing in flight: probe it. */
		if (c->snd_wnd == 0 && c->snd_nxt == c->snd_una && seq_lt(c->snd_una, end) &&
		    c->t_rexmt == 0 && c->t_persist == 0) {
			c->t_persist = t->now + (uint64_t)c->rto_us * 1000ull;
			uiw_tcp_timer_arm(c);
		}
	}
	if (((c->flags & TF_ACK_NOW) && !sent && c->state != UIW_TCP_SYN_SENT) || c->sack_owed)
		uiw_tcp_send_ack(c);
}
