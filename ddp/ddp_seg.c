/* SPDX-License-Identifier: BSD-3-Clause */
/* DDP segments (RFC 5041 §4-§6): parsing, placement, and cutting messages to MULPDU. */
#include <errno.h>
#include <string.h>

#include "ddp.h"

enum uiw_ddp_parse uiw_ddp_parse(const struct uiw_mpa_ulpdu *u, struct uiw_ddp_seg *s)
{
	struct uiw_ddp_untagged copy;
	const struct uiw_ddp_untagged *h = &copy;
	size_t got;

	/* Read in place where the first piece holds the longer header (nearly always): the
	 * fields read from a copy just made waited for its stores, which their loads could
	 * not take from the store buffer (4% of a receiver's samples). */
	if (u->npieces > 0 && u->pieces[0].len >= sizeof(copy)) {
		h = u->pieces[0].base;
		got = u->pieces[0].len;
	} else {
		got = uiw_mpa_ulpdu_copy(u, 0, &copy, sizeof(copy));
	}
	memset(s, 0, sizeof(*s));
	if (got < 2)
		return UIW_DDP_PARSE_SHORT;
	s->tagged = (h->ctrl & UIW_DDP_T) != 0;
	s->last = (h->ctrl & UIW_DDP_L) != 0;
	s->rdmap = h->rdmap;
	s->hdr_len = s->tagged ? sizeof(struct uiw_ddp_tagged) : sizeof(struct uiw_ddp_untagged);
	if (got < s->hdr_len)
		return UIW_DDP_PARSE_SHORT;
	/* RFC 5041 §4.2: DV must be 1; the reserved bits are not checked on receive. */
	if ((h->ctrl & UIW_DDP_DV_MASK) != UIW_DDP_VERSION)
		return UIW_DDP_PARSE_VERSION;
	s->len = u->len - s->hdr_len;
	if (s->tagged) {
		const struct uiw_ddp_tagged *t = (const void *)h;

		s->stag = uiw_ddp_stag(t);
		s->to = uiw_ddp_to(t);
	} else {
		s->rsvd_ulp = uiw_be32_get(h->rsvd_ulp);
		s->qn = uiw_ddp_qn(h);
		s->msn = uiw_ddp_msn(h);
		s->mo = uiw_ddp_mo(h);
	}
	return UIW_DDP_PARSE_OK;
}

uint64_t uiw_sge_total(const struct uiw_sge *sg, unsigned n)
{
	uint64_t sum = 0;

	for (unsigned i = 0; i < n; i++)
		sum += sg[i].len;
	return sum;
}

int uiw_ddp_place(const struct uiw_mpa_ulpdu *u, uint32_t from, uint32_t len,
		  const struct uiw_sge *sg, unsigned n, uint64_t at)
{
	if (len == 0)
		return 0;
	if (at + len > uiw_sge_total(sg, n) || (uint64_t)from + len > u->len)
		return -1;
	for (unsigned i = 0; i < n && len > 0; i++) {
		if (at >= sg[i].len) {
			at -= sg[i].len;
			continue;
		}
		uint32_t k = sg[i].len - (uint32_t)at < len ? sg[i].len - (uint32_t)at : len;

		uiw_mpa_ulpdu_copy(u, from, sg[i].addr + at, k);
		from += k;
		len -= k;
		at = 0;
	}
	return 0;
}

#define SEG_PIECES 10

/* The pieces of [off, off + room) of body ++ SGEs into @p out (after slot 0, the header).
 * @return the pieces used. */
static __rte_always_inline unsigned slice(const void *body, uint32_t body_len,
					  const struct uiw_sge *sg, unsigned n, uint64_t off,
					  uint32_t room, struct uiw_mpa_iov *out)
{
	unsigned k = 0;

	if (off < body_len && room > 0) {
		uint32_t take = body_len - (uint32_t)off < room ? body_len - (uint32_t)off : room;

		out[k++] = (struct uiw_mpa_iov){ (uint8_t *)(uintptr_t)body + off, take };
		room -= take;
		off = 0;
	} else {
		off -= body_len;
	}
	for (unsigned i = 0; i < n && room > 0 && k < SEG_PIECES; i++) {
		if (off >= sg[i].len) {
			off -= sg[i].len;
			continue;
		}
		uint32_t take = sg[i].len - (uint32_t)off < room ? sg[i].len - (uint32_t)off : room;

		out[k++] = (struct uiw_mpa_iov){ sg[i].addr + off, take };
		room -= take;
		off = 0;
	}
	return k;
}

/* A message being cut into segments (send_message()). */
struct msg {
	uint32_t hdr_len, room;   /* room: the most payload a segment carries */
	void (*hdr_fill)(void *hdr, const void *arg, uint64_t off, bool last);
	const void *arg, *body;
	uint32_t body_len;
	const struct uiw_sge *sg;
	unsigned n;
	uint64_t total;
};

/* The pieces of the segment at message offset @p off into @p iov: @p hdr, filled, then
 * the payload's. @return the payload's octets; *@p k the pieces. */
static __rte_always_inline uint32_t segment_at(const struct msg *g, uint8_t *hdr, uint64_t off,
					       struct uiw_mpa_iov *iov, unsigned *k)
{
	uint32_t want = g->total - off < g->room ? (uint32_t)(g->total - off) : g->room;
	uint32_t len = 0;

	*k = 1 + slice(g->body, g->body_len, g->sg, g->n, off, want, iov + 1);
	iov[0] = (struct uiw_mpa_iov){ hdr, g->hdr_len };
	for (unsigned i = 1; i < *k; i++)
		len += iov[i].len;
	g->hdr_fill(hdr, g->arg, off, off + len == g->total);
	return len;
}

/*
 * Sends what it can of the message from tx->off in runs (struct uiw_mpa_run): each
 * segment built as it is cut, and a run queued to TCP at once. Stops at the message's end,
 * or where a run takes none (the next segment then goes alone, which says what refused
 * it). @return false where the message's segments go one at a time (uiw_mpa_run_open()).
 */
static bool send_runs(struct uiw_mpa_conn *c, struct uiw_ddp_tx *tx, const struct msg *g,
		      uint8_t *hdr)
{
	struct uiw_mpa_run run;
	int rc = 1;

	while (tx->off < g->total && (rc = uiw_mpa_run_open(c, &run, tx->lend != NULL)) > 0) {
		uint64_t off = tx->off;

		do {
			struct uiw_mpa_iov iov[1 + SEG_PIECES];
			unsigned k;
			uint32_t len = segment_at(g, hdr, off, iov, &k);

			if (uiw_mpa_run_add(c, &run, iov, k, g->hdr_len + len) != 0)
				break;
			off += len;
		} while (off < g->total);
		if (uiw_mpa_run_close(c, &run) == 0)
			return true;
		tx->off = off;
	}
	return tx->off == g->total || rc == 0;
}

/* Sends segments until the message is out; @p hdr_fill writes the header for a segment at
 * message offset off. */
static int send_message(struct uiw_mpa_conn *c, struct uiw_ddp_tx *tx, uint32_t hdr_len,
			void (*hdr_fill)(void *hdr, const void *arg, uint64_t off, bool last),
			const void *arg, const void *body, uint32_t body_len,
			const struct uiw_sge *sg, unsigned n)
{
	uint32_t mul = uiw_mpa_info(c)->mulpdu;
	struct msg g = { hdr_len, mul - hdr_len, hdr_fill, arg, body, body_len, sg, n,
			 body_len + uiw_sge_total(sg, n) };
	uint8_t hdr[sizeof(struct uiw_ddp_untagged)];
	bool runs = true;

	if (mul <= hdr_len)
		return -EMSGSIZE;
	do {
		/* Only the entries slice() fills are read: an initializer would clear all of them
		 * (a rep stos, most of this function's time) for each FPDU. */
		struct uiw_mpa_iov iov[1 + SEG_PIECES];
		unsigned k;

		/* A run pays for itself from two segments on. */
		if (runs && g.total - tx->off > g.room) {
			runs = send_runs(c, tx, &g, hdr);
			if (tx->off == g.total)
				break;
		}

		uint32_t len = segment_at(&g, hdr, tx->off, iov, &k);
		unsigned ncopy = tx->off < body_len ? 2 : 1;   /* the header, and the body's piece */
		/* -ENOBUFS: no room, nothing sent */
		int rc = uiw_mpa_send_lent(c, iov, k, ncopy, tx->lend);

		if (rc == -ENOBUFS)
			return 0;
		if (rc != 0)
			return rc;
		tx->off += len;
	} while (tx->off < g.total);
	return 1;
}

struct tagged_arg {
	uint8_t rdmap;
	uint32_t stag;
	uint64_t to;
};

static void tagged_fill(void *hdr, const void *arg, uint64_t off, bool last)
{
	const struct tagged_arg *a = arg;
	struct uiw_ddp_tagged h;

	uiw_ddp_tagged_set(&h, (uint8_t)(UIW_DDP_T | (last ? UIW_DDP_L : 0) | UIW_DDP_VERSION),
			   a->rdmap, a->stag, a->to + off);
	memcpy(hdr, &h, sizeof(h));
}

int uiw_ddp_send_tagged(struct uiw_mpa_conn *c, struct uiw_ddp_tx *tx, uint8_t rdmap,
			uint32_t stag, uint64_t to, const struct uiw_sge *sg, unsigned n)
{
	struct tagged_arg a = { rdmap, stag, to };

	return send_message(c, tx, sizeof(struct uiw_ddp_tagged), tagged_fill, &a, NULL, 0, sg, n);
}

struct untagged_arg {
	uint8_t rdmap;
	uint32_t rsvd_ulp, qn, msn;
};

static void untagged_fill(void *hdr, const void *arg, uint64_t off, bool last)
{
	const struct untagged_arg *a = arg;
	struct uiw_ddp_untagged h;

	uiw_ddp_untagged_set(&h, (uint8_t)((last ? UIW_DDP_L : 0) | UIW_DDP_VERSION),
			     a->rdmap, a->rsvd_ulp, a->qn, a->msn,
			     (uint32_t)off);
	memcpy(hdr, &h, sizeof(h));
}

int uiw_ddp_send_untagged(struct uiw_mpa_conn *c, struct uiw_ddp_tx *tx, uint8_t rdmap,
			  uint32_t rsvd_ulp, uint32_t qn, uint32_t msn, const void *body,
			  uint32_t body_len, const struct uiw_sge *sg, unsigned n)
{
	struct untagged_arg a = { rdmap, rsvd_ulp, qn, msn };

	return send_message(c, tx, sizeof(struct uiw_ddp_untagged), untagged_fill, &a, body,
			    body_len, sg, n);
}
