/* SPDX-License-Identifier: BSD-3-Clause */
#include "mpa_deframe.h"

#include <stdlib.h>
#include <string.h>

#include "tcp.h"
#include "uiw_crc32c.h"


void uiw_mpa_deframer_init(struct uiw_mpa_deframer *d, bool markers, bool crc)
{
	memset(d, 0, sizeof(*d));
	d->markers = markers;
	d->crc = crc;
}

static void free_held(struct uiw_mpa_deframer *d)
{
	while (d->head != NULL) {
		struct rte_mbuf *next = d->head->next;

		d->head->next = NULL;
		rte_pktmbuf_free_seg(d->head);
		d->head = next;
	}
	d->tail = NULL;
	d->head_off = 0;
	d->avail = 0;
	d->nheld = 0;
}

void uiw_mpa_deframer_stop(struct uiw_mpa_deframer *d)
{
	free_held(d);
	d->error = UIW_MPA_RX_STOPPED;
}

void uiw_mpa_deframer_fini(struct uiw_mpa_deframer *d)
{
	free_held(d);
	free(d->scratch);
	d->scratch = NULL;
}

size_t uiw_mpa_ulpdu_copy(const struct uiw_mpa_ulpdu *u, size_t off, void *dst, size_t n)
{
	size_t done = 0;

	for (unsigned i = 0; i < u->npieces && done < n; i++) {
		const struct uiw_mpa_iov *p = &u->pieces[i];

		if (off >= p->len) {
			off -= p->len;
			continue;
		}
		size_t k = p->len - off < n - done ? p->len - off : n - done;

		memcpy((uint8_t *)dst + done, (const uint8_t *)p->base + off, k);
		done += k;
		off = 0;
	}
	return done;
}

/* Calls @p fn on each contiguous run of [off, off + n) of the held stream. */
static void held_walk(const struct uiw_mpa_deframer *d, uint32_t off, uint32_t n,
		      void (*fn)(void *arg, const uint8_t *p, uint32_t len), void *arg)
{
	const struct rte_mbuf *s = d->head;

	off += d->head_off;
	while (s != NULL && off >= s->data_len) {
		off -= s->data_len;
		s = s->next;
	}
	while (n > 0 && s != NULL) {
		uint32_t k = s->data_len - off < n ? s->data_len - off : n;

		fn(arg, rte_pktmbuf_mtod_offset(s, const uint8_t *, off), k);
		n -= k;
		off = 0;
		s = s->next;
	}
}

struct copy_ctx { uint8_t *dst; };

static void copy_fn(void *arg, const uint8_t *p, uint32_t len)
{
	struct copy_ctx *c = arg;

	memcpy(c->dst, p, len);
	c->dst += len;
}

static void held_copy(const struct uiw_mpa_deframer *d, uint32_t off, uint32_t n, void *dst)
{
	struct copy_ctx c = { dst };

	held_walk(d, off, n, copy_fn, &c);
}

static void crc_fn(void *arg, const uint8_t *p, uint32_t len)
{
	uint32_t *crc = arg;

	*crc = uiw_crc32c_update(*crc, p, len);
}

struct view_ctx {
	struct uiw_mpa_deframer *d;
	unsigned n;
	bool overflow;
};

static void view_fn(void *arg, const uint8_t *p, uint32_t len)
{
	struct view_ctx *v = arg;

	if (v->n == UIW_MPA_VIEW_PIECES) {
		v->overflow = true;
		return;
	}
	v->d->pieces[v->n].base = (void *)(uintptr_t)p;
	v->d->pieces[v->n].len = len;
	v->n++;
}

/* Consumes @p n held octets, freeing the segments left empty. */
static void consume(struct uiw_mpa_deframer *d, uint32_t n)
{
	d->avail -= n;
	n += d->head_off;
	while (d->head != NULL && n >= d->head->data_len && (n > 0 || d->head->data_len == 0)) {
		struct rte_mbuf *next = d->head->next;

		n -= d->head->data_len;
		d->head->next = NULL;
		rte_pktmbuf_free_seg(d->head);
		d->head = next;
		d->nheld--;
	}
	if (d->head == NULL)
		d->tail = NULL;
	d->head_off = n;
}

/* Checks every Marker inside the FPDU of @p wire octets at held offset 0. */
static bool markers_ok(const struct uiw_mpa_deframer *d, uint32_t wire)
{
	for (uint32_t m = uiw_mpa_marker_gap(d->pos); m + UIW_MPA_MARKER_LEN <= wire;
	     m += UIW_MPA_MARKER_INTERVAL) {
		uint8_t mk[UIW_MPA_MARKER_LEN];

		held_copy(d, m, sizeof(mk), mk);
		if (uiw_mpa_marker_fpduptr(mk) != m)
			return false;
	}
	return true;
}

/* Calls @p fn on the runs of the ULPDU (logical octets [2, 2 + ulen) of the FPDU at held
 * offset 0), leaving the Markers out. */
static void ulpdu_walk(const struct uiw_mpa_deframer *d, uint32_t ulen,
		       void (*fn)(void *arg, const uint8_t *p, uint32_t len), void *arg)
{
	uint32_t lstart = UIW_MPA_FPDU_HDR_LEN, lend = lstart + ulen;
	uint32_t p = 0, l = 0, next_m = d->markers ? uiw_mpa_marker_gap(d->pos) : UINT32_MAX;

	while (l < lend) {
		if (p == next_m) {
			p += UIW_MPA_MARKER_LEN;
			next_m += UIW_MPA_MARKER_INTERVAL;
			continue;
		}
		uint32_t take = next_m - p < lend - l ? next_m - p : lend - l;

		if (l + take > lstart) {
			uint32_t s = l > lstart ? l : lstart;

			held_walk(d, p + (s - l), l + take - s, fn, arg);
		}
		p += take;
		l += take;
	}
}

/* The view of the ULPDU: pieces of the mbufs, or one copy when there are too many pieces
 * (tiny segments, many Markers). @return false when that copy has no memory. */
static bool build_view(struct uiw_mpa_deframer *d, uint32_t ulen, struct uiw_mpa_ulpdu *u)
{
	struct view_ctx v = { .d = d };

	ulpdu_walk(d, ulen, view_fn, &v);
	u->len = ulen;
	u->pieces = d->pieces;
	u->npieces = v.n;
	if (!v.overflow)
		return true;
	/* Sized to the ULPDU and freed once it has been handed on: an idle connection holds
	 * none (one_fpdu()). */
	free(d->scratch);
	if ((d->scratch = malloc(ulen > 0 ? ulen : 1)) == NULL)
		return false;
	struct copy_ctx c = { d->scratch };

	ulpdu_walk(d, ulen, copy_fn, &c);
	d->pieces[0].base = d->scratch;
	d->pieces[0].len = ulen;
	u->npieces = ulen > 0;
	d->joined++;
	return true;
}

/* The callback asked to wait: the FPDU stays held, unconsumed, and is handed on again (and
 * its CRC checked again) when resumed. */
static enum uiw_mpa_rx held_back(struct uiw_mpa_deframer *d)
{
	d->fpdus--;
	d->waiting = true;
	return UIW_MPA_RX_WAIT;
}

/* one_fpdu() for the common case: no Markers and the whole FPDU, @p wire octets from @p p,
 * inside the first held segment. One CRC call over the bytes where they lie, a view of
 * one piece. */
static enum uiw_mpa_rx one_fpdu_flat(struct uiw_mpa_deframer *d, const uint8_t *p,
				     uint32_t ulen, uint32_t wire, uiw_mpa_ulpdu_fn fn, void *arg,
				     bool *done)
{
	struct uiw_mpa_ulpdu u;
	uint32_t crc;

	/* An FPDU that is its segment's whole payload: TCP may have taken its CRC in the
	 * checksum's pass. */
	if (d->crc && d->head_off == 0 && wire == d->head->data_len &&
	    uiw_tcp_rx_crc(d->crc_flag, d->head, &crc))
		d->crc_with_sum++;
	else if (d->crc)
		crc = uiw_crc32c_update(UIW_CRC32C_INIT, p, wire - UIW_MPA_CRC_LEN);
	if (d->crc && uiw_mpa_crc_get(p + wire - UIW_MPA_CRC_LEN) != uiw_crc32c_final(crc))
		return UIW_MPA_RX_CRC;   /* RFC 5044 §4.1: nothing of it is handed on */
	d->pieces[0].base = (void *)(uintptr_t)(p + UIW_MPA_FPDU_HDR_LEN);
	d->pieces[0].len = ulen;
	u.len = ulen;
	u.pieces = d->pieces;
	u.npieces = ulen > 0;
	d->fpdus++;
	int rc = fn(arg, &u);

	if (rc == UIW_MPA_ULPDU_WAIT)
		return held_back(d);
	if (rc != 0)
		return UIW_MPA_RX_STOPPED;
	consume(d, wire);
	d->pos += wire;
	*done = true;
	return UIW_MPA_RX_OK;
}

/* Handles the FPDU at held offset 0 if it is complete. @return OK with *done false when
 * more octets are needed. */
static enum uiw_mpa_rx one_fpdu(struct uiw_mpa_deframer *d, uiw_mpa_ulpdu_fn fn, void *arg,
				bool *done)
{
	if (!d->markers && d->head != NULL &&
	    d->head_off + UIW_MPA_FPDU_HDR_LEN <= d->head->data_len) {
		const uint8_t *p = rte_pktmbuf_mtod_offset(d->head, const uint8_t *, d->head_off);
		uint32_t ulen = uiw_mpa_ulpdu_len_get(p);
		uint32_t wire = uiw_mpa_fpdu_len(ulen);

		if (d->head_off + wire <= d->head->data_len)
			return one_fpdu_flat(d, p, ulen, wire, fn, arg, done);
	}

	uint32_t lead = d->markers && d->pos % UIW_MPA_MARKER_INTERVAL == 0 ? UIW_MPA_MARKER_LEN : 0;
	uint8_t hdr[UIW_MPA_MARKER_LEN + UIW_MPA_FPDU_HDR_LEN], trailer[UIW_MPA_CRC_LEN];
	struct uiw_mpa_ulpdu u;

	*done = false;
	if (d->avail < lead + UIW_MPA_FPDU_HDR_LEN)
		return UIW_MPA_RX_OK;
	held_copy(d, 0, lead + UIW_MPA_FPDU_HDR_LEN, hdr);
	uint32_t ulen = uiw_mpa_ulpdu_len_get(hdr + lead);
	uint32_t wire = uiw_mpa_fpdu_wire_len(d->pos, ulen, d->markers);

	if (d->markers && !markers_ok(d, d->avail < wire ? d->avail : wire))
		return UIW_MPA_RX_MARKER;   /* RFC 5044 §5: checked as soon as it is here */
	if (d->avail < wire)
		return UIW_MPA_RX_OK;
	if (d->crc) {
		uint32_t crc = UIW_CRC32C_INIT;

		held_walk(d, 0, wire - UIW_MPA_CRC_LEN, crc_fn, &crc);
		held_copy(d, wire - UIW_MPA_CRC_LEN, UIW_MPA_CRC_LEN, trailer);
		if (uiw_mpa_crc_get(trailer) != uiw_crc32c_final(crc))
			return UIW_MPA_RX_CRC;   /* RFC 5044 §4.1: nothing of it is handed on */
	}
	if (!build_view(d, ulen, &u))
		return UIW_MPA_RX_NOMEM;
	d->fpdus++;
	int rc = fn(arg, &u);

	if (rc == UIW_MPA_ULPDU_WAIT) {
		free(d->scratch);
		d->scratch = NULL;
		return held_back(d);
	}
	if (rc != 0)
		return UIW_MPA_RX_STOPPED;   /* d may be gone: its scratch went with it */
	free(d->scratch);
	d->scratch = NULL;
	consume(d, wire);
	d->pos += wire;
	*done = true;
	return UIW_MPA_RX_OK;
}

/*
 * A small segment joins the held tail's free room instead of being held itself: a peer
 * that cuts an FPDU into one-octet TCP segments would otherwise make us hold one mbuf per
 * octet (65,535 for one FPDU, a pool for a few connections). So what an incomplete FPDU
 * holds is about its octets over the room of an mbuf, whatever the cut. Segments that fill
 * much of an mbuf (what a peer sends normally) are held as they came, never copied.
 */
#define COALESCE_MAX 512

static bool join_tail(struct uiw_mpa_deframer *d, const struct rte_mbuf *s)
{
	struct rte_mbuf *t = d->tail;

	/* Nor a tail whose CRC TCP took (uiw_tcp_rx_crc()): grown, it would lose it. TCP hands
	 * segments joined in their burst on in one chain, before the FPDU of the first is
	 * taken. */
	if (t == NULL || s->data_len > COALESCE_MAX || (t->ol_flags & d->crc_flag) != 0 ||
	    !RTE_MBUF_DIRECT(t) ||
	    rte_mbuf_refcnt_read(t) != 1 || rte_pktmbuf_tailroom(t) < s->data_len)
		return false;
	memcpy(rte_pktmbuf_mtod_offset(t, uint8_t *, t->data_len), rte_pktmbuf_mtod(s, const uint8_t *),
	       s->data_len);
	t->data_len = (uint16_t)(t->data_len + s->data_len);
	d->coalesced += s->data_len;
	return true;
}

enum uiw_mpa_rx uiw_mpa_deframer_push(struct uiw_mpa_deframer *d, struct rte_mbuf *m,
				      uiw_mpa_ulpdu_fn fn, void *arg)
{
	if (d->error != UIW_MPA_RX_OK) {
		rte_pktmbuf_free(m);
		return d->error;
	}
	while (m != NULL) {   /* each segment on its own: the chain's head fields go */
		struct rte_mbuf *next = m->next;

		m->next = NULL;
		m->nb_segs = 1;
		m->pkt_len = m->data_len;
		d->avail += m->data_len;
		if (join_tail(d, m)) {
			rte_pktmbuf_free_seg(m);
		} else {
			if (d->tail != NULL)
				d->tail->next = m;
			else
				d->head = m;
			d->tail = m;
			d->nheld++;
		}
		m = next;
	}
	if (d->waiting)
		return UIW_MPA_RX_WAIT;
	for (;;) {
		bool done;
		enum uiw_mpa_rx r = one_fpdu(d, fn, arg, &done);

		if (r == UIW_MPA_RX_STOPPED || r == UIW_MPA_RX_WAIT)
			return r;
		if (r != UIW_MPA_RX_OK) {
			d->error = r;
			free_held(d);
			return r;
		}
		if (!done)
			return UIW_MPA_RX_OK;
	}
}

enum uiw_mpa_rx uiw_mpa_deframer_resume(struct uiw_mpa_deframer *d, uiw_mpa_ulpdu_fn fn,
					void *arg)
{
	d->waiting = false;
	return uiw_mpa_deframer_push(d, NULL, fn, arg);
}
