/* SPDX-License-Identifier: BSD-3-Clause */
/* MPA connections over TCP: life cycle, FPDU transmit, FPDU receive, timeouts. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ddp_wire.h"
#include "mpa_internal.h"
#include "rdmap_wire.h"
#include "uiw_crc32c.h"
#include "uiw_csum.h"
#include "uiw_log.h"
#include "uiw_mbuf.h"
#include "uiw_time.h"

#define MPA_C_DESC_(name, help) [UIW_MPA_C_##name] = { #name, help },
const struct uiw_counter_desc uiw_mpa_counter_desc[UIW_MPA_C__COUNT] = {
	UIW_MPA_COUNTERS(MPA_C_DESC_)
};

/* Segments of one FPDU mbuf chain at most (65535 + Markers in 2 KiB mbufs, with room). */
#define FPDU_SEGS_MAX 40
/* The most octets of an FPDU's leading pieces fill_flat() gathers on the stack, to be
 * taken in one pass; the pieces after them are taken from the source, in one pass from
 * UIW_CRC32C_MID_MIN. Gathering only below UIW_CRC32C_MID_MIN ran no faster and took ~50
 * instructions more a 160-octet Write. */
#define FPDU_LEAD_MAX UIW_CRC32C_FOLD_MIN

static const struct uiw_tcp_ops mpa_tcp_ops;
static const struct uiw_tcp_ops mpa_listen_ops;

void uiw_mpa_params_from_config(struct uiw_mpa_params *p, const struct uiw_config *cfg)
{
	*p = (struct uiw_mpa_params){
		.rev = (uint8_t)cfg->mpa_rev, .crc = cfg->mpa_crc != 0,
		.markers = cfg->mpa_markers != 0, .markers_ok = cfg->mpa_markers_ok != 0,
		.p2p = cfg->mpa_p2p != 0, .rtr = (uint8_t)cfg->mpa_rtr,
		.ird = (uint16_t)cfg->mpa_ird, .ord = (uint16_t)cfg->mpa_ord,
		.pd_max = (uint16_t)cfg->mpa_pd_max, .timeout_ms = cfg->mpa_reply_timeout_ms,
		.request_timeout_ms = cfg->mpa_request_timeout_ms,
		.first_delay_us = cfg->mpa_initiator_delay_us,
		.ext = cfg->rfc7306 ? UIW_MPA_EXT_RFC7306 | (cfg->send_imm ? UIW_MPA_EXT_SEND_IMM : 0)
				    : 0,
		.tx_runs = cfg->mpa_tx_runs != 0,
	};
}

int uiw_mpa_create(struct uiw_mpa **out, struct uiw_tcp *tcp, struct rte_mempool *pool)
{
	struct uiw_mpa *m = calloc(1, sizeof(*m));

	if (m == NULL)
		return -ENOMEM;
	m->tcp = tcp;
	m->pool = pool;
	m->next_due = UINT64_MAX;
	m->lend = true;
	m->lend_iova_va = rte_eal_iova_mode() == RTE_IOVA_VA;
	TAILQ_INIT(&m->conns);
	TAILQ_INIT(&m->starved);
	TAILQ_INIT(&m->timed);
	*out = m;
	return 0;
}

void uiw_mpa_set_lend(struct uiw_mpa *m, bool on, bool dma)
{
	m->lend = on;
	m->lend_dma = dma;
}

void uiw_mpa_set_slabs(struct uiw_mpa *m, struct rte_mempool *slabs)
{
	m->slabs = slabs;
}

/* Lets go of the slab the connection was filling: its FPDUs hold it until they go. */
static void slab_drop(struct uiw_mpa_conn *c)
{
	if (c->slab != NULL) {
		rte_pktmbuf_free(c->slab);
		c->slab = NULL;
	}
}

/* The responder's Request is answered (or the connection gone): its listener's backlog
 * has room again. */
void uiw_mpa_unpend(struct uiw_mpa_conn *c)
{
	if (c->listener != NULL && c->listener->pending > 0)
		c->listener->pending--;
	c->listener = NULL;
}

static void conn_free(struct uiw_mpa_conn *c)
{
	uiw_mpa_unpend(c);
	c->m->c[UIW_MPA_C_rx_coalesced_octets] += c->rx.coalesced;
	c->m->c[UIW_MPA_C_rx_crc_with_sum] += c->rx.crc_with_sum;
	TAILQ_REMOVE(&c->m->conns, c, link);
	if (c->starved) {
		TAILQ_REMOVE(&c->m->starved, c, starved_link);
		c->m->nstarved--;
	}
	if (c->timed)
		TAILQ_REMOVE(&c->m->timed, c, timed_link);
	c->m->nconns--;
	uiw_mpa_deframer_fini(&c->rx);
	for (unsigned i = 0; i < c->nheld; i++)
		rte_pktmbuf_free(c->held[i]);
	slab_drop(c);
	free(c);
}

void uiw_mpa_destroy(struct uiw_mpa *m)
{
	if (m == NULL)
		return;
	while (!TAILQ_EMPTY(&m->conns)) {
		struct uiw_mpa_conn *c = TAILQ_FIRST(&m->conns);

		if (c->tcp != NULL)
			uiw_tcp_abort(c->tcp);
		conn_free(c);
	}
	for (unsigned i = 0; i < MPA_LISTEN_MAX; i++)
		if (m->ls[i].used)
			uiw_tcp_unlisten(m->tcp, m->ls[i].port);
	free(m);
}

/* IRD and ORD no larger than a QP serves (UIW_MPA_IRD_ORD_MAX): what the Request or Reply
 * advertises is what the peer may use (RFC 6581 §5). rdma_cm callers may ask for 255. */
static void rd_clamp(struct uiw_mpa_params *p)
{
	if (p->ird > UIW_MPA_IRD_ORD_MAX)
		p->ird = UIW_MPA_IRD_ORD_MAX;
	if (p->ord > UIW_MPA_IRD_ORD_MAX)
		p->ord = UIW_MPA_IRD_ORD_MAX;
}

static struct uiw_mpa_conn *conn_new(struct uiw_mpa *m, const struct uiw_mpa_params *p,
				     const struct uiw_mpa_ops *ops, void *user)
{
	struct uiw_mpa_conn *c = calloc(1, sizeof(*c));

	if (c == NULL)
		return NULL;
	c->m = m;
	c->ops = ops;
	c->user = user;
	c->p = *p;
	rd_clamp(&c->p);
	c->p.pd_len = p->pd_len <= UIW_MPA_PD_MAX ? p->pd_len : 0;
	if (c->p.pd_len > 0)
		memcpy(c->pd_buf, p->pd, c->p.pd_len);
	c->p.pd = c->pd_buf;
	snprintf(c->reason, sizeof(c->reason), "no error");
	TAILQ_INSERT_TAIL(&m->conns, c, link);
	m->nconns++;
	return c;
}

void uiw_mpa_set_reason(struct uiw_mpa_conn *c, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(c->reason, sizeof(c->reason), fmt, ap);
	va_end(ap);
	c->err = err;
}

/* The owner hears that the connection is gone, then it is freed (or when the MPA code on
 * the stack for it returns). */
static void finish(struct uiw_mpa_conn *c, int err)
{
	if (c->err == 0)
		c->err = err;
	if (c->in_call > 0) {
		c->finish_pending = true;
		return;
	}
	c->state = MPA_S_DEAD;
	UIW_DEBUG("mpa: connection closed (%d): %s", c->err, c->reason);
	if (c->ops != NULL && c->ops->closed != NULL)
		c->ops->closed(c->user, c, c->err);
	conn_free(c);
}

static void leave(struct uiw_mpa_conn *c)
{
	if (--c->in_call == 0 && c->finish_pending)
		finish(c, c->err);
}

void uiw_mpa_abort(struct uiw_mpa_conn *c, const char *why)
{
	if (c->state == MPA_S_DEAD)
		return;
	if (c->err == 0)
		uiw_mpa_set_reason(c, -ECONNABORTED, "%s", why);
	c->state = MPA_S_DEAD;
	c->deadline = 0;
	if (c->tcp != NULL)
		uiw_tcp_abort(c->tcp);
	c->tcp = NULL;
	finish(c, -ECONNABORTED);
}

static bool release_held(struct uiw_mpa_conn *c);

void uiw_mpa_close(struct uiw_mpa_conn *c)
{
	if (c->state == MPA_S_CLOSING || c->state == MPA_S_DEAD)
		return;
	/* What the initiator holds for its delay goes before the FIN; what a responder holds
	 * may never go (no FPDU came from the initiator). What TCP has no room for now is
	 * lost with the connection, and said so. */
	if (c->release_at != 0 && c->state == MPA_S_FULL && !release_held(c)) {
		UIW_WARN("mpa %p: closing with %u FPDUs TCP had no room for", (void *)c, c->nheld);
		for (unsigned i = 0; i < c->nheld; i++) {
			rte_pktmbuf_free(c->held[i]);
			mpa_count(c->m, UIW_MPA_C_held_lost);
		}
		c->nheld = 0;
		c->release_at = 0;
	}
	c->state = MPA_S_CLOSING;
	c->deadline = 0;
	uiw_tcp_close(c->tcp);
}

void uiw_mpa_fail(struct uiw_mpa_conn *c, int err, const char *fmt, ...)
{
	va_list ap;

	if (c->err == 0) {
		va_start(ap, fmt);
		vsnprintf(c->reason, sizeof(c->reason), fmt, ap);
		va_end(ap);
		c->err = err;
	}
	uiw_mpa_close(c);
}

int uiw_mpa_send_ctrl(struct uiw_mpa_conn *c, const void *buf, uint32_t len)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(c->m->pool);

	if (m == NULL || rte_pktmbuf_append(m, (uint16_t)len) == NULL) {
		rte_pktmbuf_free(m);
		mpa_count(c->m, UIW_MPA_C_tx_nombuf);
		return -ENOBUFS;
	}
	memcpy(rte_pktmbuf_mtod(m, void *), buf, len);
	return uiw_tcp_send(c->tcp, m, UIW_TCP_SEND_RECORD | UIW_TCP_SEND_CTRL);
}

/* An mbuf chain of @p len octets, its pieces in @p out. */
static struct rte_mbuf *alloc_chain(struct rte_mempool *pool, uint32_t len,
				    struct uiw_mpa_iov *out, unsigned *nout)
{
	uint16_t room = (uint16_t)(rte_pktmbuf_data_room_size(pool) - RTE_PKTMBUF_HEADROOM);
	struct rte_mbuf *head = NULL;
	unsigned n = 0;

	do {
		struct rte_mbuf *s = rte_pktmbuf_alloc(pool);
		uint16_t k = len < room ? (uint16_t)len : room;

		if (s == NULL || n == FPDU_SEGS_MAX) {
			rte_pktmbuf_free(s);
			rte_pktmbuf_free(head);
			return NULL;
		}
		out[n].base = rte_pktmbuf_append(s, k);
		out[n++].len = k;
		if (head == NULL)
			head = s;
		else if (rte_pktmbuf_chain(head, s) != 0) {
			rte_pktmbuf_free(s);
			rte_pktmbuf_free(head);
			return NULL;
		}
		len -= k;
	} while (len > 0);
	*nout = n;
	return head;
}

/* Appends @p n octets to the chain @p head, into its last mbuf while it has room (a pool
 * mbuf, never a lent one), else into new ones. @return false when out of mbufs. */
static bool chain_put(struct rte_mempool *pool, struct rte_mbuf *head, struct rte_mbuf **tail,
		      const uint8_t *src, uint32_t n)
{
	while (n > 0) {
		struct rte_mbuf *t = *tail;
		uint32_t room = RTE_MBUF_HAS_EXTBUF(t) ? 0 : rte_pktmbuf_tailroom(t);

		if (room == 0) {
			t = rte_pktmbuf_alloc(pool);
			if (t == NULL || rte_pktmbuf_chain(head, t) != 0) {
				rte_pktmbuf_free(t);
				return false;
			}
			*tail = t;
			continue;
		}
		uint32_t k = n < room ? n : room;

		memcpy(rte_pktmbuf_mtod_offset(t, uint8_t *, t->data_len), src, k);
		t->data_len = (uint16_t)(t->data_len + k);
		head->pkt_len += k;
		src += k;
		n -= k;
	}
	return true;
}

/* An FPDU's pad (RFC 5044 §4.2), for the CRC and the copy. */
static const uint8_t zeros[4];

/*
 * An FPDU without Markers of headers (@p iov[0] to @p iov[ncopy - 1]) and one lent piece,
 * short enough for TCP to copy whole into a segment: one mbuf, gathered by TCP from the
 * headers and trailer it keeps and the memory (uiw_tcp_gather()). The CRC is computed over
 * the memory where it lies. NULL when it does not qualify or no mbuf was had: the caller
 * builds the chain.
 */
static struct rte_mbuf *fpdu_gathered(struct uiw_mpa_conn *c, const struct uiw_mpa_iov *iov,
				      unsigned n, unsigned ncopy,
				      struct rte_mbuf_ext_shared_info *lend, uint32_t ulen)
{
	uint8_t head[UIW_TCP_GATHER_EDGE_MAX], tail[3 + UIW_MPA_CRC_LEN] = { 0 };
	uint32_t hlen = UIW_MPA_FPDU_HDR_LEN, pad = uiw_mpa_pad(ulen);
	const struct uiw_mpa_iov *mem = &iov[ncopy];
	uint32_t crc = UIW_CRC32C_INIT;
	struct rte_mbuf *m;

	if (n != ncopy + 1 || mem->len < UIW_MPA_LEND_MIN ||
	    UIW_MPA_FPDU_HDR_LEN + ulen + pad + UIW_MPA_CRC_LEN > uiw_tcp_gather_max(c->tcp))
		return NULL;
	for (unsigned i = 0; i < ncopy; i++) {
		if (iov[i].len > sizeof(head) - hlen)
			return NULL;
		memcpy(head + hlen, iov[i].base, iov[i].len);
		hlen += iov[i].len;
	}
	uiw_mpa_ulpdu_len_set(head, (uint16_t)ulen);
	if (c->info.crc) {
		crc = uiw_crc32c_update(crc, head, hlen);
		crc = uiw_crc32c_update(crc, mem->base, mem->len);
		crc = uiw_crc32c_final(uiw_crc32c_update(crc, zeros, pad));
	}
	uiw_mpa_crc_set(tail + pad, c->info.crc ? crc : 0);
	m = uiw_tcp_gather(c->tcp, head, hlen, mem->base, mem->len, lend, tail,
			   pad + UIW_MPA_CRC_LEN);
	if (m != NULL) {
		c->m->c[UIW_MPA_C_tx_lent_octets] += mem->len;
		mpa_count(c->m, UIW_MPA_C_tx_gathered);
	}
	return m;
}

/*
 * One FPDU without Markers whose pieces from @p iov[ncopy] on are lent, not copied, when
 * they are long enough to pay for an mbuf of their own: such a piece is an external
 * buffer on the caller's memory sharing @p lend, whose count rises by one per mbuf, so
 * the caller knows when neither the send queue nor the PMD refers to the memory any more.
 * The CRC is computed over the memory where it lies: the only pass over the payload here.
 */
static struct rte_mbuf *fpdu_lent(struct uiw_mpa_conn *c, const struct uiw_mpa_iov *iov,
				  unsigned n, unsigned ncopy, struct rte_mbuf_ext_shared_info *lend,
				  uint32_t ulen)
{
	struct rte_mempool *pool = c->m->pool;
	struct rte_mbuf *head = rte_pktmbuf_alloc(pool), *tail = head;
	uint32_t crc = UIW_CRC32C_INIT;
	uint8_t hdr[UIW_MPA_FPDU_HDR_LEN], trailer[UIW_MPA_CRC_LEN];
	bool crc_on = c->info.crc;

	if (head == NULL)
		return NULL;
	uiw_mpa_ulpdu_len_set(hdr, (uint16_t)ulen);
	if (crc_on)
		crc = uiw_crc32c_update(crc, hdr, sizeof(hdr));
	if (!chain_put(pool, head, &tail, hdr, sizeof(hdr)))
		goto fail;
	for (unsigned i = 0; i < n; i++) {
		if (crc_on)
			crc = uiw_crc32c_update(crc, iov[i].base, iov[i].len);
		if (i < ncopy || iov[i].len < UIW_MPA_LEND_MIN) {
			if (!chain_put(pool, head, &tail, iov[i].base, iov[i].len))
				goto fail;
			continue;
		}
		struct rte_mbuf *e = rte_pktmbuf_alloc(pool);

		if (e == NULL)
			goto fail;
		rte_pktmbuf_attach_extbuf(e, iov[i].base, c->m->lend_iova_va ?
					  (rte_iova_t)(uintptr_t)iov[i].base : RTE_BAD_IOVA,
					  (uint16_t)iov[i].len, lend);
		rte_mbuf_ext_refcnt_update(lend, 1);
		e->data_len = (uint16_t)iov[i].len;
		e->pkt_len = iov[i].len;
		if (rte_pktmbuf_chain(head, e) != 0) {
			rte_pktmbuf_free(e);
			goto fail;
		}
		tail = e;
		c->m->c[UIW_MPA_C_tx_lent_octets] += iov[i].len;
	}
	if (crc_on)
		crc = uiw_crc32c_update(crc, zeros, uiw_mpa_pad(ulen));
	uiw_mpa_crc_set(trailer, crc_on ? uiw_crc32c_final(crc) : 0);
	if (!chain_put(pool, head, &tail, zeros, uiw_mpa_pad(ulen)) ||
	    !chain_put(pool, head, &tail, trailer, sizeof(trailer)))
		goto fail;
	return head;
fail:
	rte_pktmbuf_free(head);   /* lent mbufs give their counts back as they go */
	return NULL;
}

/*
 * The mbuf for a flat FPDU of @p wire octets. Where the PMD does not copy each frame as it
 * takes it (virtio-user, memif's zero-copy client), another core read the pool's mbufs
 * last (vhost-user's, as it copied them out), and each line the copy writes must first be
 * fetched from that core: the stores queue behind those fetches, and soon so does
 * everything after them. So the lines of the mbuf the pool gives next are asked for now,
 * to be here by the time the next FPDU is written (docs/BENCHMARKS.md).
 */
static __rte_always_inline struct rte_mbuf *fpdu_mbuf(struct uiw_mpa_conn *c, uint32_t wire)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(c->m->pool);

	if (m != NULL && !uiw_tcp_tx_frames_copied(c->tcp)) {
		uiw_tcp_ready_over(c->tcp, m, wire);
		uiw_pool_prefetch_next(c->m->pool, 1, 0, wire);
	}
	return m;
}

/*
 * An FPDU of @p wire octets right after the last one in the connection's slab, as an
 * indirect mbuf on it (from the port's pool, as an FPDU's own mbuf would be), or NULL when
 * there is no slab to be had (the caller builds it alone). Where TCP hands the PMD TSO
 * frames, a frame of FPDUs built alone is a header and an indirect mbuf on each FPDU, some
 * 46 pieces for 64 KiB: allocating and attaching them and the virtio ring's descriptors
 * for them cost more than the frames saved (docs/BENCHMARKS.md). Side by side in a slab,
 * TCP joins the FPDUs of a frame into one piece (sndq_put()). A slab goes back to its pool
 * when its last FPDU is acknowledged and its last frame sent; the connection holds the one
 * it fills only while it has data unacknowledged (t_sent()), so the pool, shared by the
 * engine's connections, is held by those that send; with none free, FPDUs are built alone
 * (tx_slab_none), as without TSO.
 */
static struct rte_mbuf *fpdu_slab(struct uiw_mpa_conn *c, uint32_t wire)
{
	struct rte_mbuf *s = c->slab, *m;

	if (s == NULL || (uint32_t)c->slab_off + wire > s->buf_len) {
		slab_drop(c);
		s = rte_pktmbuf_alloc(c->m->slabs);
		if (s == NULL) {
			mpa_count(c->m, UIW_MPA_C_tx_slab_none);
			return NULL;
		}
		c->slab = s;
		c->slab_off = 0;   /* a frame's headers go in a mbuf of their own */
		if (wire > s->buf_len) {
			mpa_count(c->m, UIW_MPA_C_tx_slab_none);
			return NULL;
		}
	}
	m = rte_pktmbuf_alloc(c->m->pool);
	if (m == NULL)
		return NULL;
	rte_pktmbuf_attach(m, s);
	m->data_off = c->slab_off;
	m->data_len = (uint16_t)wire;
	m->pkt_len = wire;
	c->slab_off = (uint16_t)(c->slab_off + wire);
	mpa_count(c->m, UIW_MPA_C_tx_slabbed);
	return m;
}

/*
 * Without Markers, in one mbuf @p m from @p d: the pieces side by side, one pass over each
 * octet. Where TCP sums in software, that pass sums too (with the CRC, from the same
 * loads), and TCP takes that sum, whether it sends the mbuf or copies it whole into a
 * segment.
 */
static void fill_flat(struct uiw_mpa_conn *c, struct rte_mbuf *m, uint8_t *d,
		      const struct uiw_mpa_iov *iov, unsigned n, uint32_t ulen)
{
	uint8_t *q;
	uint32_t pad = uiw_mpa_pad(ulen);
	bool sum = uiw_tcp_sums_wanted(c->tcp);
	/* Where TCP does not want the sum (the NIC sums), the CRC is taken from what the
	 * copy reads, never from the mbuf it has just written: where the PMD copies the
	 * frame as it takes it, the mbuf stays in this core's caches and the CRC goes in
	 * the copy's pass; elsewhere (virtio-user, a NIC) the other side read the mbuf
	 * last, the stores wait for its lines, and a read-back waits for the stores. So
	 * there the CRC runs over the source beside the copy: 64 KiB Writes from
	 * virtio-user to vhost-user, 8.6 Gb/s with the CRC in the copy's pass, 12.2 over
	 * the mbuf after the copy, 14.5 over the source (docs/BENCHMARKS.md). */
	bool crc_in_copy = c->info.crc && !sum && uiw_tcp_tx_frames_copied(c->tcp);
	bool crc_of_src = c->info.crc && !sum && !crc_in_copy;
	uint32_t s = 0, crc = UIW_CRC32C_INIT;
	uint8_t lead[FPDU_LEAD_MAX];
	size_t nl = UIW_MPA_FPDU_HDR_LEN;
	unsigned i = 0;

	/* The MPA length and the short pieces that lead (the DDP and RDMAP headers; all of a
	 * short FPDU, an 8-octet Write's is 28 octets, with its pad): gathered on the stack,
	 * taken by one CRC update and one sum, then copied out. Piece by piece (below) a
	 * 14-octet header cost some 130 instructions, the length field and the pad some 30
	 * each; read back from the mbuf they would wait for its lines (above). */
	uiw_mpa_ulpdu_len_set(lead, (uint16_t)ulen);
	for (; i < n && nl + iov[i].len + 3 <= sizeof(lead); i++) {   /* 3: the pad at most */
		memcpy(lead + nl, iov[i].base, iov[i].len);
		nl += iov[i].len;
	}
	if (i == n) {
		memset(lead + nl, 0, pad);
		nl += pad;
		pad = 0;
	}
	if (nl >= UIW_CRC32C_MID_MIN && c->info.crc && (sum || crc_in_copy)) {
		/* A lead this long is copied out in its CRC's pass (and summed there). */
		if (sum) {
			uint16_t part;

			crc = uiw_crc32c_sum(crc, d, lead, nl, &part);
			s = part;
		} else {
			crc = uiw_crc32c_copy(crc, d, lead, nl);
		}
	} else {
		memcpy(d, lead, nl);
		if (c->info.crc)
			crc = uiw_crc32c_update(crc, lead, nl);
		if (sum)
			s = uiw_raw_sum(lead, nl);
	}
	q = d + nl;
	for (; i < n; i++) {
		if (sum) {
			uint16_t part;

			if (c->info.crc)
				crc = uiw_crc32c_sum(crc, q, iov[i].base, iov[i].len, &part);
			else
				part = uiw_copy_sum(q, iov[i].base, iov[i].len);
			s += ((q - d) & 1) ? rte_bswap16(part) : part;
		} else if (crc_in_copy) {
			crc = uiw_crc32c_copy(crc, q, iov[i].base, iov[i].len);
		} else {
			memcpy(q, iov[i].base, iov[i].len);
			if (crc_of_src)
				crc = uiw_crc32c_update(crc, iov[i].base, iov[i].len);
		}
		q += iov[i].len;
	}
	if (pad > 0) {
		memset(q, 0, pad);
		if (c->info.crc)
			crc = uiw_crc32c_update(crc, zeros, pad);
		q += pad;
	}
	uiw_mpa_crc_set(q, c->info.crc ? uiw_crc32c_final(crc) : 0);
	if (sum) {
		/* The CRC: an even offset (a multiple of 4); the pad's zeros add nothing. */
		s += uiw_raw_sum(q, UIW_MPA_CRC_LEN);
		s = (s & 0xffff) + (s >> 16);
		s = (s & 0xffff) + (s >> 16);
		uiw_tcp_mark_summed(c->tcp, m, (uint16_t)s);
	}
}

int uiw_mpa_send_fpdu(struct uiw_mpa_conn *c, const struct uiw_mpa_iov *iov, unsigned n,
		      unsigned ncopy, struct rte_mbuf_ext_shared_info *lend, bool hold)
{
	struct uiw_mpa_iov out[FPDU_SEGS_MAX];
	uint64_t ulen = 0;
	unsigned nout;
	struct rte_mbuf *m = NULL;

	for (unsigned i = 0; i < n; i++)
		ulen += iov[i].len;
	uint32_t wire = uiw_mpa_fpdu_wire_len(c->tx_pos, (uint32_t)ulen, c->info.markers_tx);

	/* Markers interleave the payload every 512 octets: such FPDUs are copied. */
	if (lend != NULL && !c->info.markers_tx && ncopy < n) {
		m = fpdu_gathered(c, iov, n, ncopy, lend, (uint32_t)ulen);
		if (m == NULL)
			m = fpdu_lent(c, iov, n, ncopy, lend, (uint32_t)ulen);
	} else if (!c->info.markers_tx && c->m->slabs != NULL && uiw_tcp_tso_now(c->tcp) &&
		   (m = fpdu_slab(c, wire)) != NULL) {
		fill_flat(c, m, rte_pktmbuf_mtod(m, uint8_t *), iov, n, (uint32_t)ulen);
	} else if (!c->info.markers_tx &&
		   wire + RTE_PKTMBUF_HEADROOM <= rte_pktmbuf_data_room_size(c->m->pool) &&
		   (m = fpdu_mbuf(c, wire)) != NULL) {
		fill_flat(c, m, (uint8_t *)rte_pktmbuf_append(m, (uint16_t)wire), iov, n,
			  (uint32_t)ulen);
	} else {
		m = alloc_chain(c->m->pool, wire, out, &nout);
		if (m != NULL)
			uiw_mpa_fpdu_encode(out, nout, c->tx_pos, c->info.markers_tx, c->info.crc,
					    iov, n);
	}
	if (m == NULL) {
		mpa_count(c->m, UIW_MPA_C_tx_nombuf);
		return -ENOBUFS;
	}
	c->tx_pos += wire;
	mpa_count(c->m, UIW_MPA_C_fpdu_tx);
	if (hold) {
		/* RFC 5044 §7.1.2: the responder sends once it has received an FPDU; the
		 * initiator waits mpa_initiator_delay_us after the Reply (siw). A responder
		 * with something to send waits for that FPDU mpa_request_timeout_ms at most. */
		if (c->state == MPA_S_WAIT_FIRST && c->deadline == 0)
			c->deadline = mpa_due(c, uiw_now_ns() +
					      (uint64_t)c->p.request_timeout_ms * UIW_NS_PER_MS);
		c->held[c->nheld++] = m;
		mpa_count(c->m, UIW_MPA_C_fpdu_held);
		return 0;
	}
	return uiw_tcp_send(c->tcp, m, UIW_TCP_SEND_RECORD) == 0 ? 0 : -ENOBUFS;
}

static uint32_t held_octets(const struct uiw_mpa_conn *c)
{
	uint32_t n = 0;

	for (unsigned i = 0; i < c->nheld; i++)
		n += c->held[i]->pkt_len;
	return n;
}

uint32_t uiw_mpa_tx_mark(const struct uiw_mpa_conn *c)
{
	return c->tcp != NULL ? uiw_tcp_queued_end(c->tcp) + held_octets(c) : 0;
}

bool uiw_mpa_acked(const struct uiw_mpa_conn *c, uint32_t mark)
{
	return c->tcp == NULL || uiw_tcp_acked(c->tcp, mark);
}

bool uiw_mpa_can_send(const struct uiw_mpa_conn *c, uint32_t ulen)
{
	uint32_t wire = uiw_mpa_fpdu_wire_len(c->tx_pos, ulen, c->info.markers_tx);

	if (c->state == MPA_S_WAIT_FIRST || c->release_at != 0)
		return c->nheld < MPA_HELD_MAX && held_octets(c) + wire <= uiw_tcp_send_space(c->tcp);
	return c->state == MPA_S_FULL && wire <= uiw_tcp_send_space(c->tcp);
}

/* A send was refused for want of mbufs or of TCP's room. With something unacknowledged,
 * its ACK calls writable (t_sent); with nothing, no ACK will come, and the poll does. */
static int refused(struct uiw_mpa_conn *c)
{
	if (!c->starved && uiw_mpa_acked(c, uiw_mpa_tx_mark(c))) {
		c->starved = true;
		TAILQ_INSERT_TAIL(&c->m->starved, c, starved_link);
		c->m->nstarved++;
		mpa_count(c->m, UIW_MPA_C_tx_starved);
	}
	return -ENOBUFS;
}

int uiw_mpa_send_lent(struct uiw_mpa_conn *c, const struct uiw_mpa_iov *iov, unsigned n,
		      unsigned ncopy, struct rte_mbuf_ext_shared_info *lend)
{
	uint64_t ulen = 0;
	int rc;

	if (c->state != MPA_S_FULL && (c->state != MPA_S_WAIT_FIRST || c->expect_rtr))
		return -ENOTCONN;
	for (unsigned i = 0; i < n; i++)
		ulen += iov[i].len;
	if (ulen > c->info.mulpdu)
		return -EMSGSIZE;
	if (!uiw_mpa_can_send(c, (uint32_t)ulen))
		return refused(c);
	bool hold = c->state == MPA_S_WAIT_FIRST || c->release_at != 0;

	/* An FPDU held (the initiator's delay, the responder's wait for the first FPDU) is
	 * copied: lent, its work request would complete only after the hold and the ACK
	 * behind it, 10 ms and more for a connection's first message. */
	if (!c->m->lend || hold || (lend != NULL && c->m->lend_dma && uiw_lend_dma(lend) == NULL))
		lend = NULL;
	rc = uiw_mpa_send_fpdu(c, iov, n, ncopy, lend, hold);
	return rc == -ENOBUFS ? refused(c) : rc;
}

int uiw_mpa_run_open(struct uiw_mpa_conn *c, struct uiw_mpa_run *r, bool lend)
{
	uint32_t room = rte_pktmbuf_data_room_size(c->m->pool);

	/* What uiw_mpa_send_fpdu() would not build with fill_flat(), in a slab or an mbuf of
	 * its own. */
	if (!c->p.tx_runs || c->state != MPA_S_FULL || c->release_at != 0 || c->info.markers_tx ||
	    (lend && c->m->lend) || room <= RTE_PKTMBUF_HEADROOM)
		return -1;
	r->room = uiw_tcp_run_room(c->tcp, &r->left);
	r->left = r->left < UIW_MPA_RUN_MAX ? r->left : UIW_MPA_RUN_MAX;
	r->wire_max = room - RTE_PKTMBUF_HEADROOM;
	r->slab = c->m->slabs != NULL && uiw_tcp_tso_now(c->tcp);
	r->bytes = 0;
	r->n = 0;
	return r->left > 0 && r->room > 0;
}

int uiw_mpa_run_add(struct uiw_mpa_conn *c, struct uiw_mpa_run *r,
		    const struct uiw_mpa_iov *iov, unsigned n, uint32_t ulen)
{
	uint32_t wire = UIW_MPA_FPDU_HDR_LEN + ulen + uiw_mpa_pad(ulen) + UIW_MPA_CRC_LEN;
	struct rte_mbuf *m;

	if (r->n >= r->left || ulen > c->info.mulpdu || wire > r->room - r->bytes)
		return -ENOBUFS;
	/* In the slab where TSO takes them (its length set), else alone, as
	 * uiw_mpa_send_fpdu() builds them. */
	m = r->slab ? fpdu_slab(c, wire) : NULL;
	if (m == NULL) {
		if (wire > r->wire_max || (m = fpdu_mbuf(c, wire)) == NULL)
			return -ENOBUFS;
		/* A fresh mbuf with its headroom, or fewer octets of it (uiw_tcp_ready_over()
		 * moves the data only where what follows still fits): no chain to walk. */
		m->data_len = (uint16_t)wire;
		m->pkt_len = wire;
	}
	fill_flat(c, m, rte_pktmbuf_mtod(m, uint8_t *), iov, n, ulen);
	r->m[r->n++] = m;
	r->bytes += wire;
	return 0;
}

unsigned uiw_mpa_run_close(struct uiw_mpa_conn *c, struct uiw_mpa_run *r)
{
	unsigned n = r->n;

	r->n = 0;
	if (n == 0)
		return 0;
	if (uiw_tcp_send_records(c->tcp, r->m, n) != 0) {
		for (unsigned i = 0; i < n; i++)
			rte_pktmbuf_free(r->m[i]);
		return 0;
	}
	c->tx_pos += r->bytes;
	c->m->c[UIW_MPA_C_fpdu_tx] += n;
	c->m->c[UIW_MPA_C_fpdu_run] += n;
	return n;
}

int uiw_mpa_send(struct uiw_mpa_conn *c, const struct uiw_mpa_iov *iov, unsigned n)
{
	return uiw_mpa_send_lent(c, iov, n, n, NULL);
}

/*
 * Takes back every octet lent to this connection: the FPDUs held and the TCP send queue
 * get copies in place of references, so the lenders' counts fall to what they hold
 * themselves. When there are no mbufs to copy into, the connection is reset instead (which
 * drops the references as well). @return 0, or -ENOMEM after the reset.
 */
int uiw_mpa_unlend(struct uiw_mpa_conn *c)
{
	int rc = 0;

	/* Held FPDUs are never lent (uiw_mpa_send_lent()): only TCP's queue refers to it. */
	if (c->tcp != NULL)
		rc = uiw_tcp_sndq_own(c->tcp);
	if (rc != 0)
		uiw_mpa_abort(c, "no mbufs to take lent memory back");
	return rc;
}

void uiw_mpa_terminate_llp(struct uiw_mpa_conn *c, uint8_t code, const char *why)
{
	struct {
		struct uiw_ddp_untagged h;
		struct uiw_rdmap_term t;
	} __attribute__((packed)) term;
	struct uiw_mpa_iov iov = { &term, sizeof(term) };

	if (c->state == MPA_S_CLOSING || c->state == MPA_S_DEAD)
		return;
	/* RFC 5040 §4.8: QN 2, MSN 1 (one Terminate per stream), MO 0; LLP errors carry no
	 * echoed header. */
	uiw_ddp_untagged_set(&term.h, UIW_DDP_L | UIW_DDP_VERSION, uiw_rdmap_ctrl(UIW_RDMAP_TERMINATE), 0,
			     UIW_DDP_QN_TERMINATE, 1, 0);
	uiw_rdmap_term_set(&term.t, UIW_TERM_LAYER_LLP, 0, code, 0);
	if (c->nheld == 0 && uiw_mpa_send_fpdu(c, &iov, 1, 1, NULL, false) == 0)
		mpa_count(c->m, UIW_MPA_C_term_tx);
	uiw_mpa_fail(c, -EPROTO, "%s (Terminate LLP 0x%02x)", why, code);
}

void uiw_mpa_start_full(struct uiw_mpa_conn *c)
{
	uiw_mpa_deframer_init(&c->rx, c->info.markers_rx, c->info.crc);
	/* Without Markers an FPDU that fills a segment is contiguous: its CRC can come
	 * from TCP's checksum pass. */
	if (c->info.crc && !c->info.markers_rx)
		c->rx.crc_flag = uiw_tcp_want_rx_crc(c->tcp, true);
	c->info.mulpdu = uiw_mpa_mulpdu(uiw_tcp_mss(c->tcp), c->info.markers_tx);
}

void uiw_mpa_deliver_established(struct uiw_mpa_conn *c)
{
	mpa_count(c->m, UIW_MPA_C_established);
	if (c->ops != NULL && c->ops->established != NULL)
		c->ops->established(c->user, c, &c->info);
	c->info.pd = NULL;
	c->info.pd_len = 0;
}

/*
 * The responder's first FPDU from the initiator, or the initiator's delay is over: what
 * was held may go now. TCP may refuse some (the stack's send queues at their cap): those
 * stay held, in order, new FPDUs queue behind them (release_at is set), and they are tried
 * again MPA_RELEASE_RETRY_NS later; none is dropped. @return true if none is left.
 */
static bool release_held(struct uiw_mpa_conn *c)
{
	unsigned i = 0;

	while (i < c->nheld && uiw_tcp_send(c->tcp, c->held[i],
					    UIW_TCP_SEND_RECORD | UIW_TCP_SEND_KEEP) == 0)
		i++;
	if (i < c->nheld) {
		memmove(c->held, c->held + i, (c->nheld - i) * sizeof(c->held[0]));
		c->nheld -= i;
		c->release_at = mpa_due(c, uiw_now_ns() + MPA_RELEASE_RETRY_NS);
		c->release_retry = true;
		mpa_count(c->m, UIW_MPA_C_held_retry);
		return false;
	}
	c->nheld = 0;
	c->release_at = 0;
	c->release_retry = false;
	return true;
}

static int on_ulpdu(void *arg, const struct uiw_mpa_ulpdu *u)
{
	struct uiw_mpa_conn *c = arg;

	mpa_count(c->m, UIW_MPA_C_fpdu_rx);
	if (c->state == MPA_S_WAIT_FIRST) {
		if (c->expect_rtr)
			return uiw_mpa_rtr_take(c, u) && c->state == MPA_S_FULL ? 0 : 1;
		c->state = MPA_S_FULL;
		c->deadline = 0;
		release_held(c);
	}
	if (c->swallow_read_resp && uiw_mpa_read_resp_take(c, u))
		return 0;
	int rc = c->ulp != NULL ? c->ulp->ulpdu(c->ulp_arg, c, u)
		 : c->ops != NULL && c->ops->ulpdu != NULL ? c->ops->ulpdu(c->user, c, u) : 0;

	if (rc == UIW_MPA_ULPDU_WAIT && c->state == MPA_S_FULL) {
		c->m->c[UIW_MPA_C_fpdu_rx]--;   /* counted when it is handed on again */
		return rc;
	}
	if (rc != 0)
		return 1;
	return c->state == MPA_S_FULL ? 0 : 1;
}

static void deframe(struct uiw_mpa_conn *c, struct rte_mbuf *m)
{
	enum uiw_mpa_rx r = c->rx.waiting && m == NULL ? uiw_mpa_deframer_resume(&c->rx, on_ulpdu, c)
			    : uiw_mpa_deframer_push(&c->rx, m, on_ulpdu, c);

	switch (r) {
	case UIW_MPA_RX_OK:
	case UIW_MPA_RX_WAIT:   /* held; counted in TCP's window below */
		return;
	case UIW_MPA_RX_STOPPED:
		/* The owner stopped the stream (a Terminate, a close): the FPDU it stopped at
		 * and everything after it are dropped, never handed up again. The connection
		 * is still allocated here (in_call holds its release). */
		uiw_mpa_deframer_stop(&c->rx);
		return;
	case UIW_MPA_RX_CRC:
		mpa_count(c->m, UIW_MPA_C_crc_err);
		uiw_mpa_terminate_llp(c, UIW_TERM_MPA_CRC, "FPDU with a bad CRC");
		return;
	case UIW_MPA_RX_MARKER:
		mpa_count(c->m, UIW_MPA_C_marker_err);
		uiw_mpa_terminate_llp(c, UIW_TERM_MPA_MARKER, "Marker does not point to its FPDU");
		return;
	case UIW_MPA_RX_NOMEM:
		mpa_count(c->m, UIW_MPA_C_rx_nomem);
		uiw_mpa_terminate_llp(c, UIW_TERM_MPA_LOCAL_CATA, "no memory to join a ULPDU");
		return;
	}
}

/* What an unfinished FPDU holds counts in TCP's window and receive budget; so does what
 * waits for the data path (uiw_mpa_rx_wait). */
static void rx_fpdus(struct uiw_mpa_conn *c, struct rte_mbuf *m)
{
	deframe(c, m);
	if (c->tcp != NULL)
		uiw_tcp_ulp_held(c->tcp, c->rx.avail, c->rx.nheld);
}

void uiw_mpa_rx_wait(struct uiw_mpa_conn *c, uint64_t at)
{
	c->rx_resume_at = mpa_due(c, at > 0 ? at : 1);
}

bool uiw_mpa_rx_may_wait(const struct uiw_mpa_conn *c)
{
	return c->state == MPA_S_FULL;
}

void uiw_mpa_rx_kick(struct uiw_mpa_conn *c)
{
	if (c->rx_resume_at != 0)
		c->rx_resume_at = mpa_due(c, 1);
}

static void peer_closed(struct uiw_mpa_conn *c);

/* The data path may take what waited for it (uiw_mpa_rx_wait): hand it on again. */
static void rx_resume(struct uiw_mpa_conn *c)
{
	c->rx_resume_at = 0;
	if (!c->rx.waiting || c->state != MPA_S_FULL)
		return;
	c->in_call++;
	rx_fpdus(c, NULL);
	if (c->peer_fin_pending && !c->rx.waiting && c->state == MPA_S_FULL) {
		c->peer_fin_pending = false;
		peer_closed(c);
	}
	leave(c);
}

static void t_recv(void *user, struct uiw_tcp_conn *tc, struct rte_mbuf *m)
{
	struct uiw_mpa_conn *c = user;

	(void)tc;
	c->in_call++;
	switch (c->state) {
	case MPA_S_WAIT_REPLY:
		m = uiw_mpa_rx_reply(c, m);
		break;
	case MPA_S_WAIT_REQUEST:
		m = uiw_mpa_rx_request(c, m);
		break;
	case MPA_S_WAIT_ACCEPT:
		mpa_count(c->m, UIW_MPA_C_early_data);
		rte_pktmbuf_free(m);
		m = NULL;
		uiw_mpa_abort(c, "octets after the Request before our Reply");
		break;
	default:
		break;
	}
	if (m != NULL && (c->state == MPA_S_FULL || c->state == MPA_S_WAIT_FIRST))
		rx_fpdus(c, m);
	else
		rte_pktmbuf_free(m);
	leave(c);
}

static void t_connected(void *user, struct uiw_tcp_conn *tc)
{
	struct uiw_mpa_conn *c = user;

	(void)tc;
	c->in_call++;
	uiw_mpa_send_request(c);
	leave(c);
}

static void t_sent(void *user, struct uiw_tcp_conn *tc, uint32_t bytes)
{
	struct uiw_mpa_conn *c = user;

	(void)bytes;
	/* All acknowledged: the slab half filled goes back once its frames are sent, rather
	 * than wait, held, for this connection's next FPDU. */
	if (c->slab != NULL && uiw_tcp_acked(tc, uiw_tcp_queued_end(tc)))
		slab_drop(c);
	if (c->state != MPA_S_FULL)
		return;
	/* Room came: what TCP refused at the release goes before anything new (else, with
	 * tcp_notsent_max, the held FPDUs would drain only as fast as the retry timer). */
	if (c->release_retry && !release_held(c))
		return;
	if (c->ulp != NULL)
		c->ulp->writable(c->ulp_arg, c);
	else if (c->ops != NULL && c->ops->writable != NULL)
		c->ops->writable(c->user, c);
}

static void peer_closed(struct uiw_mpa_conn *c)
{
	if (c->state != MPA_S_FULL && c->state != MPA_S_CLOSING && c->err == 0) {
		mpa_count(c->m, UIW_MPA_C_peer_gone);
		uiw_mpa_set_reason(c, -ECONNRESET, "peer closed during MPA negotiation");
	} else if (c->err == 0) {
		uiw_mpa_set_reason(c, 0, "peer closed");
	}
	if ((c->state == MPA_S_FULL || c->state == MPA_S_CLOSING) && c->ops != NULL &&
	    c->ops->peer_closed != NULL)
		c->ops->peer_closed(c->user, c);
	uiw_mpa_close(c);
}

static void t_peer_closed(void *user, struct uiw_tcp_conn *tc)
{
	struct uiw_mpa_conn *c = user;

	(void)tc;
	/* FPDUs before the FIN wait for the data path (uiw_mpa_rx_wait): the close goes up
	 * once they are taken, in the stream's order, or when the wait ends in an error. */
	if (c->state == MPA_S_FULL && c->rx.waiting) {
		c->peer_fin_pending = true;
		return;
	}
	peer_closed(c);
}

static void t_closed(void *user, struct uiw_tcp_conn *tc, int err)
{
	struct uiw_mpa_conn *c = user;

	(void)tc;
	c->tcp = NULL;
	if (err != 0 && c->err == 0) {
		if (c->state != MPA_S_FULL && c->state != MPA_S_CLOSING)
			mpa_count(c->m, UIW_MPA_C_peer_gone);
		uiw_mpa_set_reason(c, err, "TCP: %s", err == -ECONNREFUSED ? "connection refused"
					       : err == -ETIMEDOUT ? "retransmissions timed out"
					       : err == -ECONNRESET ? "reset by the peer" : "closed");
	}
	finish(c, err);
}

static const struct uiw_tcp_ops mpa_tcp_ops = {
	.connected = t_connected, .recv = t_recv, .sent = t_sent,
	.peer_closed = t_peer_closed, .closed = t_closed,
};

static int t_accept(void *ctx, struct uiw_tcp_conn *tc)
{
	struct mpa_listener *l = ctx;
	struct uiw_mpa_conn *c;

	if (l->pending >= l->backlog) {
		/* As many connections as the backlog wait for their Request or for the
		 * application: this one is reset, so no peer can pile up connections the
		 * application never sees. */
		mpa_count(l->m, UIW_MPA_C_pending_refused);
		return -1;
	}
	c = conn_new(l->m, &l->p, l->ops, l->ctx);
	if (c == NULL)
		return -1;
	c->tcp = tc;
	c->state = MPA_S_WAIT_REQUEST;
	c->listener = l;
	l->pending++;
	c->deadline = mpa_due(c, uiw_now_ns() + (uint64_t)l->p.request_timeout_ms * UIW_NS_PER_MS);
	uiw_tcp_set_user(tc, &mpa_tcp_ops, c);
	return 0;
}

static const struct uiw_tcp_ops mpa_listen_ops = { .accept = t_accept };

int uiw_mpa_listen(struct uiw_mpa *m, uint16_t port, unsigned backlog,
		   const struct uiw_mpa_params *p, const struct uiw_mpa_ops *ops, void *ctx)
{
	for (unsigned i = 0; i < MPA_LISTEN_MAX; i++) {
		struct mpa_listener *l = &m->ls[i];

		if (l->used)
			continue;
		*l = (struct mpa_listener){ .used = true, .port = port, .p = *p, .ops = ops,
					    .ctx = ctx, .m = m, .backlog = backlog ? backlog : 1 };
		l->p.pd = NULL;
		l->p.pd_len = 0;
		int rc = uiw_tcp_listen(m->tcp, port, backlog, &mpa_listen_ops, l);

		if (rc != 0)
			l->used = false;
		return rc;
	}
	return -ENOSPC;
}

void uiw_mpa_unlisten(struct uiw_mpa *m, uint16_t port)
{
	for (unsigned i = 0; i < MPA_LISTEN_MAX; i++) {
		if (m->ls[i].used && m->ls[i].port == port) {
			struct uiw_mpa_conn *c;

			uiw_tcp_unlisten(m->tcp, port);
			m->ls[i].used = false;
			TAILQ_FOREACH(c, &m->conns, link)   /* rare: no pointer may outlive it */
				if (c->listener == &m->ls[i])
					c->listener = NULL;
		}
	}
}

int uiw_mpa_connect(struct uiw_mpa *m, uint32_t dst, uint16_t port,
		    const struct uiw_mpa_params *p, const struct uiw_mpa_ops *ops, void *user,
		    uint64_t now, struct uiw_mpa_conn **out)
{
	struct uiw_mpa_conn *c;
	int rc;

	if (p->rev < UIW_MPA_REV1 || p->rev > UIW_MPA_REV2 ||
	    p->pd_len + (p->rev == UIW_MPA_REV2 ? UIW_MPA_V2_LEN : 0) > UIW_MPA_PD_MAX)
		return -EINVAL;
	c = conn_new(m, p, ops, user);
	if (c == NULL)
		return -ENOMEM;
	c->info.initiator = true;
	c->state = MPA_S_TCP_CONNECTING;
	c->deadline = mpa_due(c, now + (uint64_t)p->timeout_ms * UIW_NS_PER_MS);
	rc = uiw_tcp_connect(m->tcp, dst, port, &mpa_tcp_ops, c, now, &c->tcp);
	if (rc != 0) {
		conn_free(c);
		return rc;
	}
	*out = c;
	return 0;
}

int uiw_mpa_accept(struct uiw_mpa_conn *c, const struct uiw_mpa_params *p,
		   const struct uiw_mpa_ops *ops, void *user)
{
	uint16_t pd_max = c->p.pd_max;
	uint32_t timeout = c->p.timeout_ms, req_timeout = c->p.request_timeout_ms;

	if (c->state != MPA_S_WAIT_ACCEPT)
		return -ENOTCONN;
	if (p->pd_len > UIW_MPA_PD_MAX)
		return -EINVAL;
	c->ops = ops;
	c->user = user;
	if (p != &c->p) {
		c->p = *p;
		rd_clamp(&c->p);
		if (p->pd_len > 0)
			memcpy(c->pd_buf, p->pd, p->pd_len);
		c->p.pd = c->pd_buf;
		c->p.pd_max = pd_max;
		c->p.timeout_ms = timeout;
		c->p.request_timeout_ms = req_timeout;
	}
	c->in_call++;
	int rc = uiw_mpa_send_reply(c, &c->p);

	leave(c);
	return rc;
}

/* Calls writable for the connections refused with nothing in flight, each once (one that
 * is refused again goes back on the list, at its tail, for a later pass). A connection
 * with nothing in flight is refused for want of the engine's send budget or of mbufs,
 * which its neighbours want as well: after STARVED_REFUSALS in a row the walk ends. With
 * 512 connections sharing the budget, walking them all every 20 us made 600,000 refused
 * sends in a 1.3 s run. */
#define STARVED_REFUSALS 4
static void retry_starved(struct uiw_mpa *m, uint64_t now)
{
	unsigned n = m->nstarved, refusals = 0;   /* those on the list now, each once */
	struct uiw_mpa_conn *c;

	m->starved_at = now + MPA_STARVED_RETRY_NS;
	while (n-- > 0 && (c = TAILQ_FIRST(&m->starved)) != NULL) {
		TAILQ_REMOVE(&m->starved, c, starved_link);
		m->nstarved--;
		c->starved = false;
		if (c->state != MPA_S_FULL)
			continue;
		c->in_call++;
		if (c->ulp != NULL)
			c->ulp->writable(c->ulp_arg, c);
		else if (c->ops != NULL && c->ops->writable != NULL)
			c->ops->writable(c->user, c);
		refusals = c->starved ? refusals + 1 : 0;   /* before leave(): c may be freed */
		leave(c);
		if (refusals == STARVED_REFUSALS)
			break;
	}
}

/* Timers are rare (negotiation, the first FPDU's delay): a pass walks the connections
 * only once the earliest one set is due, not on every poll. */
void uiw_mpa_run(struct uiw_mpa *m, uint64_t now)
{
	struct uiw_mpa_conn *c, *next;
	uint64_t due = UINT64_MAX;

	if (!TAILQ_EMPTY(&m->starved) && now >= m->starved_at)
		retry_starved(m, now);
	if (now < m->next_due)
		return;
	m->next_due = UINT64_MAX;   /* what the walk's callbacks set lowers it again */
	for (c = TAILQ_FIRST(&m->timed); c != NULL; c = next) {
		next = TAILQ_NEXT(c, timed_link);
		if (c->release_at != 0 && now >= c->release_at && c->state == MPA_S_FULL)
			release_held(c);
		if (c->release_at != 0 && c->release_at < due)
			due = c->release_at;
		if (c->rx_resume_at != 0) {   /* in full operation: no deadline then */
			if (now >= c->rx_resume_at)
				rx_resume(c);   /* may free c: next was taken above */
			else if (c->rx_resume_at < due)
				due = c->rx_resume_at;
			continue;
		}
		if (c->deadline == 0 || now < c->deadline) {
			if (c->deadline != 0 && c->deadline < due)
				due = c->deadline;
			if (c->deadline == 0 && c->release_at == 0) {
				TAILQ_REMOVE(&m->timed, c, timed_link);
				c->timed = false;
			}
			continue;
		}
		mpa_count(m, UIW_MPA_C_timeout);
		if (c->state == MPA_S_TCP_CONNECTING || c->state == MPA_S_WAIT_REPLY)
			uiw_mpa_set_reason(c, -ETIMEDOUT, "no MPA Reply within %u ms", c->p.timeout_ms);
		else if (c->state == MPA_S_WAIT_REQUEST)
			uiw_mpa_set_reason(c, -ETIMEDOUT, "no MPA Request within %u ms",
					   c->p.request_timeout_ms);
		else if (c->state == MPA_S_WAIT_ACCEPT)
			uiw_mpa_set_reason(c, -ETIMEDOUT, "the application neither accepted nor "
					   "rejected the Request within %u ms", c->p.timeout_ms);
		else if (c->expect_rtr)
			uiw_mpa_set_reason(c, -ETIMEDOUT, "no RTR within %u ms", c->p.request_timeout_ms);
		else
			uiw_mpa_set_reason(c, -ETIMEDOUT, "no FPDU from the initiator within %u ms while "
					   "%u of ours waited (RFC 5044 §7.1.2)",
					   c->p.request_timeout_ms, c->nheld);
		uiw_mpa_abort(c, c->reason);
	}
	if (due < m->next_due)
		m->next_due = due;
}

void uiw_mpa_bind_ulp(struct uiw_mpa_conn *c, const struct uiw_mpa_ulp *ulp, void *arg)
{
	c->ulp = ulp;
	c->ulp_arg = arg;
}

void uiw_mpa_set_user(struct uiw_mpa_conn *c, const struct uiw_mpa_ops *ops, void *user)
{
	c->ops = ops;
	c->user = user;
}

const char *uiw_mpa_reason(const struct uiw_mpa_conn *c) { return c->reason; }
const struct uiw_mpa_info *uiw_mpa_info(const struct uiw_mpa_conn *c) { return &c->info; }
struct uiw_tcp_conn *uiw_mpa_tcp(const struct uiw_mpa_conn *c) { return c->tcp; }

void uiw_mpa_set_owner(struct uiw_mpa *m, void *owner) { m->owner = owner; }

void *uiw_mpa_owner(const struct uiw_mpa_conn *c) { return c->m->owner; }
const uint64_t *uiw_mpa_counters(const struct uiw_mpa *m) { return m->c; }
unsigned uiw_mpa_conn_count(const struct uiw_mpa *m) { return m->nconns; }
