/* SPDX-License-Identifier: BSD-3-Clause */
/* RDMAP receive (RFC 5040 §5): the segments the QP's DDP stream hands up. Every segment is
 * checked before a byte of it is placed, RDMAP's rules here and DDP's by asking the stream
 * (RFC 5041 §7), in the RFCs' order; a bad one is answered with the Terminate they name and
 * nothing after it is placed. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "rdmap_internal.h"

/* RDMAP's Terminate error types (RFC 5040 §4.8); DDP's are in ddp_wire.h. */
#define RDMAP_ET_PROT 1
#define RDMAP_ET_OP 2

/*
 * A receive completion and a Read or Atomic Request's entry, filled field by field: from an
 * initializer GCC cleared the whole structure first with a rep stos, tens of cycles to
 * start, once a message (tests/tools/check_rep.py). wc_recv() clears what it does not take.
 */
static void wc_recv(struct uiw_wc *wc, uint64_t wr_id, enum uiw_wc_status status,
		    enum uiw_wc_op op, uint32_t byte_len, uint32_t qp_num)
{
	wc->wr_id = wr_id;
	wc->status = status;
	wc->op = op;
	wc->byte_len = byte_len;
	wc->qp_num = qp_num;
	wc->inv_stag = 0;
	wc->with_inv = false;
	wc->solicited = false;
	wc->with_imm = false;
	wc->imm = 0;
}

static void irq_set(struct irq_entry *e, bool atomic, uint32_t req_id, uint64_t orig,
		    uint32_t sink_stag, uint64_t sink_to, uint32_t src_stag, uint64_t src_to,
		    uint32_t size)
{
	e->atomic = atomic;
	e->req_id = req_id;
	e->orig = orig;
	e->sink_stag = sink_stag;
	e->sink_to = sink_to;
	e->src_stag = src_stag;
	e->src_to = src_to;
	e->size = size;
}

static int term(struct uiw_qp *qp, uint8_t layer, uint8_t etype, uint8_t code,
		const struct uiw_mpa_ulpdu *u, const struct uiw_ddp_seg *s, bool rdmap_hdr,
		const char *why)
{
	uiw_qp_send_terminate(qp, layer, etype, code, u, s, rdmap_hdr, why);
	return 1;   /* nothing more from this stream is placed */
}

/* A DDP error of this segment: RDMAP sends the Terminate (layer DDP). */
static int ddp_term(struct uiw_qp *qp, uint8_t etype, uint8_t code, const struct uiw_mpa_ulpdu *u,
		    const struct uiw_ddp_seg *s, const char *why)
{
	return term(qp, UIW_TERM_LAYER_DDP, etype, code, u, s, false, why);
}

/* RFC 5041 §7.1 (DDP's tagged checks) and RFC 5040 §8 (access rights) for an RDMA Write. */
static int tagged_error(struct uiw_qp *qp, enum uiw_stag_check r, const struct uiw_mpa_ulpdu *u,
			const struct uiw_ddp_seg *s)
{
	static const char *const why[] = {
		[UIW_STAG_INVALID] = "Write to an invalid STag", [UIW_STAG_BOUNDS] = "Write out of bounds",
		[UIW_STAG_PD] = "Write to an STag of another PD", [UIW_STAG_WRAP] = "Write TO wraps",
	};

	if (r == UIW_STAG_ACCESS)
		return term(qp, UIW_TERM_LAYER_RDMAP, RDMAP_ET_PROT, 0x02, u, s, false,
			    "Write without remote write access");
	return ddp_term(qp, UIW_DDP_ET_TAGGED, uiw_ddp_tagged_code(r), u, s, why[r]);
}

static int rx_write(struct uiw_qp *qp, const struct uiw_mpa_ulpdu *u, const struct uiw_ddp_seg *s)
{
	struct uiw_sge dst;

	if (s->len > 0) {
		enum uiw_stag_check r = uiw_ddp_tagged_target(qp->stags, qp->pd, s,
							      UIW_ACCESS_REMOTE_WRITE, &dst);

		if (r != UIW_STAG_OK)
			return tagged_error(qp, r, u, s);
		uiw_ddp_place(u, s->hdr_len, s->len, &dst, 1, 0);
	}
	qp->rx_write_acc += s->len;
	if (s->last) {
		qp->rx_write_last = qp->rx_write_acc;   /* an Immediate Data's byte_len */
		qp->rx_write_acc = 0;
		qp_count(qp, UIW_RDMAP_C_rx_write);
	}
	return 0;
}

static int rx_read_resp(struct uiw_qp *qp, const struct uiw_mpa_ulpdu *u, const struct uiw_ddp_seg *s)
{
	struct orq_entry *o;

	if (uiw_ring_empty(&qp->orq_ring) ||
	    qp->orq[uiw_ring_slot(&qp->orq_ring, qp->orq_ring.head)].atomic)
		return term(qp, UIW_TERM_LAYER_RDMAP, RDMAP_ET_OP, 0x06, u, s, false, "Read Response with no Read outstanding");
	o = &qp->orq[uiw_ring_slot(&qp->orq_ring, qp->orq_ring.head)];
	uint8_t code = uiw_ddp_tagged_window(s, o->sink_stag, o->sink_to + o->placed,
					     o->sink.len - o->placed);

	if (code != 0)
		return ddp_term(qp, UIW_DDP_ET_TAGGED, code, u, s, code == UIW_DDP_TAG_INVALID_STAG
				? "Read Response to the wrong STag" : "Read Response out of bounds");
	uiw_ddp_place(u, s->hdr_len, s->len, &o->sink, 1, o->placed);
	o->placed += s->len;
	if (!s->last)
		return 0;
	struct uiw_sq_entry *e = &qp->sq.e[o->sq_idx & qp->sq.mask];

	e->done = true;
	e->status = UIW_WC_SUCCESS;
	e->len = o->placed;
	uiw_ring_pop(&qp->orq_ring);
	if (o->placed != o->sink.len) {
		/* RFC 5040 §4.4: the response carries what the request asked for, no less; a
		 * Read that ends early did not happen as asked. */
		e->status = UIW_WC_REM_OP_ERR;
		return term(qp, UIW_TERM_LAYER_RDMAP, RDMAP_ET_OP, 0xff, u, s, false,
			    "Read Response shorter than its Read Request");
	}
	qp_count(qp, UIW_RDMAP_C_rx_read_resp);
	uiw_qp_complete_sq(qp);
	uiw_qp_pump(qp);   /* the ORD has room again */
	return 0;
}

/* The Send is whole: complete the receive, invalidate where asked (RFC 5040 §5.3). */
static int send_done(struct uiw_qp *qp, const struct uiw_mpa_ulpdu *u, const struct uiw_ddp_seg *s,
		     uint8_t op)
{
	bool inv = op == UIW_RDMAP_SEND_INV || op == UIW_RDMAP_SEND_SE_INV;
	bool imm = op == UIW_RDMAP_SEND_IMM || op == UIW_RDMAP_SEND_IMM_SE;

	if (inv) {
		struct uiw_mr *mr = uiw_stag_find(qp->stags, s->rsvd_ulp);

		/* Checked at the first segment; the region may have changed since. */
		if (!uiw_stag_peer_may_invalidate(mr, qp->pd))
			return term(qp, UIW_TERM_LAYER_RDMAP, mr != NULL && mr->valid ? RDMAP_ET_PROT
				    : RDMAP_ET_OP, 0x09, u, s, false,
				    "Send with Invalidate: the STag cannot be invalidated");
		mr->valid = false;
	}
	struct uiw_wc wc;

	wc_recv(&wc, qp->rx_cur.wr_id, UIW_WC_SUCCESS, UIW_WC_RECV,
		uiw_ddp_untagged_done(&qp->ddp, UIW_DDP_QN_SEND), qp->qp_num);
	wc.inv_stag = inv ? s->rsvd_ulp : 0;
	wc.with_inv = inv;
	wc.solicited = op == UIW_RDMAP_SEND_SE || op == UIW_RDMAP_SEND_SE_INV ||
		       op == UIW_RDMAP_SEND_IMM_SE;
	wc.with_imm = imm;
	wc.imm = imm ? uiw_be32_of(s->rsvd_ulp).raw : 0;

	qp->rx_have_cur = false;
	qp_count(qp, UIW_RDMAP_C_rx_send);
	uiw_qp_cq_push(qp, qp->rcq, &wc);
	return 0;
}

static int rx_send(struct uiw_qp *qp, const struct uiw_mpa_ulpdu *u, const struct uiw_ddp_seg *s,
		   uint8_t op)
{
	/* RFC 5041 §7.2: queue (checked by rx_untagged), MSN, MO, buffer, length, in that
	 * order. */
	uint8_t code = uiw_ddp_untagged_check(&qp->ddp, s, UIW_DDP_QN_SEND, true);

	if (code != 0)
		return ddp_term(qp, UIW_DDP_ET_UNTAGGED, code, u, s, code == UIW_DDP_UNT_MO
				? "Send with an unexpected MO" : "Send with an unexpected MSN");
	/* One message, one opcode (RFC 5040 §5: RDMAP hands DDP whole messages): a Send
	 * under way may not go on as another kind of Send. */
	if (qp->rx_have_cur && op != qp->rx_cur_op)
		return term(qp, UIW_TERM_LAYER_RDMAP, RDMAP_ET_OP, 0x06, u, s, false,
			    "opcode changed inside a Send");
	if (!qp->rx_have_cur && uiw_ring_empty(qp->srq != NULL ? &qp->srq->ring : &qp->rq_ring)) {
		int w = uiw_qp_recv_wait(qp);

		return w != 0 ? w : ddp_term(qp, UIW_DDP_ET_UNTAGGED, UIW_DDP_UNT_NO_BUFFER, u, s,
					     qp->recv_wait_ns > 0 ? "Send with no receive posted "
					     "(none came within recv_wait_ms)" : "Send with no receive posted");
	}
	if ((op == UIW_RDMAP_SEND_INV || op == UIW_RDMAP_SEND_SE_INV) && s->mo == 0) {
		/* Checked before the first octet is placed; done when the message is whole. */
		const struct uiw_mr *mr = uiw_stag_find(qp->stags, s->rsvd_ulp);

		/* RFC 5040 §4.8: remote protection (a region of ours it may not invalidate:
		 * another PD's, or one registered for local access only) or remote operation
		 * (no such STag), code 0x09 either way. */
		if (!uiw_stag_peer_may_invalidate(mr, qp->pd))
			return term(qp, UIW_TERM_LAYER_RDMAP, mr != NULL && mr->valid ? RDMAP_ET_PROT : RDMAP_ET_OP,
				    0x09, u, s, false, "Send with Invalidate: the STag cannot be invalidated");
	}
	if (!qp->rx_have_cur) {
		/* The first segment claims the receive; a shared queue's last one may have gone
		 * to a QP of another engine since the check above. */
		if (!uiw_qp_take_recv(qp)) {
			int w = uiw_qp_recv_wait(qp);

			return w != 0 ? w : ddp_term(qp, UIW_DDP_ET_UNTAGGED, UIW_DDP_UNT_NO_BUFFER, u, s,
						     "Send with no receive posted");
		}
		qp->rx_cur_op = op;
	}
	const struct uiw_recv_wr *r = &qp->rx_cur;

	if (uiw_ddp_untagged_place(&qp->ddp, u, s, r->sg, r->nsge) != 0) {
		struct uiw_wc wc;

		wc_recv(&wc, r->wr_id, UIW_WC_LOC_LEN_ERR, UIW_WC_RECV, 0, qp->qp_num);

		qp->rx_have_cur = false;
		uiw_qp_cq_push(qp, qp->rcq, &wc);
		return ddp_term(qp, UIW_DDP_ET_UNTAGGED, UIW_DDP_UNT_TOO_LONG, u, s, "Send longer than the receive buffer");
	}
	return s->last ? send_done(qp, u, s, op) : 0;
}

/* Whether the IRD has room for one more request. Responses the peer has acknowledged no
 * longer count (this segment's ACK has been taken: TCP handles it before the data). */
static bool irq_room(struct uiw_qp *qp)
{
	while (!uiw_ring_empty(&qp->irq_sent_ring) && qp->ddp.conn != NULL &&
	       uiw_mpa_acked(qp->ddp.conn, qp->irq_sent[uiw_ring_slot(&qp->irq_sent_ring,
								 qp->irq_sent_ring.head)]))
		uiw_ring_pop(&qp->irq_sent_ring);
	return uiw_ring_count(&qp->irq_ring) + uiw_ring_count(&qp->irq_sent_ring) < qp->ird;
}

static int read_req_error(struct uiw_qp *qp, enum uiw_stag_check r, const struct uiw_mpa_ulpdu *u,
			  const struct uiw_ddp_seg *s, const char *why)
{
	/* RFC 5040 §4.8 Remote Protection codes, with the Read Request echoed. */
	static const uint8_t code[] = { [UIW_STAG_INVALID] = 0x00, [UIW_STAG_BOUNDS] = 0x01,
					[UIW_STAG_ACCESS] = 0x02, [UIW_STAG_PD] = 0x03,
					[UIW_STAG_WRAP] = 0x04 };

	return term(qp, UIW_TERM_LAYER_RDMAP, RDMAP_ET_PROT, code[r], u, s, true, why);
}

/* A message of one whole segment of @p size octets, in sequence on queue @p qn (a Read
 * Request, and RFC 7306's three). @return 0, or what the Terminate returned. */
static int one_segment(struct uiw_qp *qp, const struct uiw_mpa_ulpdu *u, const struct uiw_ddp_seg *s,
		       uint32_t qn, uint32_t size, const char *what)
{
	uint8_t code = uiw_ddp_untagged_check(&qp->ddp, s, qn, true);
	char why[64];

	if (code != 0) {
		snprintf(why, sizeof(why), "%s with an unexpected %s", what,
			 code == UIW_DDP_UNT_MO ? "MO" : "MSN");
		return ddp_term(qp, UIW_DDP_ET_UNTAGGED, code, u, s, why);
	}
	if (!s->last || s->len != size) {
		snprintf(why, sizeof(why), "%s of the wrong size", what);
		return term(qp, UIW_TERM_LAYER_RDMAP, RDMAP_ET_OP, 0xff, u, s, false, why);
	}
	return 0;
}

static int rx_read_req(struct uiw_qp *qp, const struct uiw_mpa_ulpdu *u, const struct uiw_ddp_seg *s)
{
	struct uiw_rdmap_read_req rr;
	struct uiw_mr *mr = NULL;
	int rc = one_segment(qp, u, s, UIW_DDP_QN_READ_REQ, sizeof(rr), "Read Request");

	if (rc != 0)
		return rc;
	if (!irq_room(qp))
		return term(qp, UIW_TERM_LAYER_RDMAP, RDMAP_ET_OP, 0x07, u, s, true,
			    uiw_ring_empty(&qp->irq_sent_ring) ? "Read Requests beyond the IRD"
			    : "Read Requests beyond the IRD (counting responses not yet acknowledged)");
	uiw_mpa_ulpdu_copy(u, s->hdr_len, &rr, sizeof(rr));
	uint32_t size = uiw_rdmap_rr_size(&rr);
	uint64_t src_to = uiw_be64_get(rr.src_to);

	/* A zero-length Read names no memory (an RTR's source STag is 1, WIRE.md §2.1). */
	if (size > 0) {
		enum uiw_stag_check r = uiw_stag_check(qp->stags, uiw_rdmap_rr_src_stag(&rr), qp->pd,
						       src_to, size, UIW_ACCESS_REMOTE_READ, &mr);

		if (r != UIW_STAG_OK)
			return read_req_error(qp, r, u, s, "Read Request for memory it may not read");
	}
	irq_set(&qp->irq[uiw_ring_push(&qp->irq_ring)], false, 0, 0, uiw_rdmap_rr_sink_stag(&rr),
		uiw_rdmap_rr_sink_to(&rr), uiw_rdmap_rr_src_stag(&rr), src_to, size);
	uiw_ddp_untagged_done(&qp->ddp, UIW_DDP_QN_READ_REQ);
	qp_count(qp, UIW_RDMAP_C_rx_read_req);
	uiw_qp_pump(qp);
	return 0;
}

/* RFC 7306 Immediate Data (after a Write with immediate data): a message of 8 octets on
 * QN 0 that takes a receive, as a Send does, and completes it with the value. */
static int rx_imm(struct uiw_qp *qp, const struct uiw_mpa_ulpdu *u, const struct uiw_ddp_seg *s,
		  uint8_t op)
{
	struct uiw_rdmap_imm imm;
	int rc = one_segment(qp, u, s, UIW_DDP_QN_SEND, sizeof(imm), "Immediate Data");

	if (rc != 0)
		return rc;
	if (!uiw_qp_take_recv(qp)) {
		int w = uiw_qp_recv_wait(qp);

		return w != 0 ? w : ddp_term(qp, UIW_DDP_ET_UNTAGGED, UIW_DDP_UNT_NO_BUFFER, u, s,
					     "Immediate Data with no receive posted");
	}
	uiw_mpa_ulpdu_copy(u, s->hdr_len, &imm, sizeof(imm));
	uiw_ddp_untagged_done(&qp->ddp, UIW_DDP_QN_SEND);
	struct uiw_wc wc;

	wc_recv(&wc, qp->rx_cur.wr_id, UIW_WC_SUCCESS, UIW_WC_RECV_RDMA_WITH_IMM,
		qp->rx_write_last, qp->qp_num);
	wc.with_imm = true;
	wc.solicited = op == UIW_RDMAP_IMM_SE;
	memcpy(&wc.imm, imm.data, sizeof(wc.imm));
	qp->rx_have_cur = false;
	qp->rx_write_last = 0;
	qp_count(qp, UIW_RDMAP_C_rx_imm);
	uiw_qp_cq_push(qp, qp->rcq, &wc);
	return 0;
}

/* The operation of RFC 7306 on the 64-bit word at @p p, atomically against every other
 * access through atomics (other QPs, engines, the application's own). @return the
 * original value. An Add Mask bit stops the carry out of its position (a partitioned add;
 * 0 is a plain add); Swap and Compare masks name the bits that take part. */
static uint64_t atomic_apply(uint64_t *p, const struct uiw_rdmap_atomic_req *rq)
{
	uint8_t op = (uint8_t)(uiw_rdmap_atomic_word(rq) & 0x0f);
	uint64_t data = uiw_rdmap_atomic_add_swap(rq), mask = uiw_rdmap_atomic_add_swap_mask(rq);
	uint64_t cmp = uiw_rdmap_atomic_compare(rq), cmp_mask = uiw_rdmap_atomic_compare_mask(rq);
	uint64_t old = __atomic_load_n(p, __ATOMIC_RELAXED), nv;

	do {
		if (op == UIW_ATOMIC_FETCH_ADD) {
			uint64_t x = old, y = data;

			while (y != 0) {
				uint64_t carry = x & y & ~mask;

				x ^= y;
				y = carry << 1;
			}
			nv = x;
		} else if (op == UIW_ATOMIC_CMP_SWAP && ((old ^ cmp) & cmp_mask) != 0) {
			return old;   /* no match: nothing written */
		} else {
			nv = (old & ~mask) | (data & mask);
		}
	} while (!__atomic_compare_exchange_n(p, &old, nv, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED));
	return old;
}

/* RFC 7306 Atomic Request: on the Read Request queue, within the IRD as Reads are, to an
 * 8-octet aligned word of a region registered for remote atomic access. */
static int rx_atomic_req(struct uiw_qp *qp, const struct uiw_mpa_ulpdu *u, const struct uiw_ddp_seg *s)
{
	struct uiw_rdmap_atomic_req rq;
	struct uiw_mr *mr;
	int rc = one_segment(qp, u, s, UIW_DDP_QN_READ_REQ, sizeof(rq), "Atomic Request");

	if (rc != 0)
		return rc;
	if (!irq_room(qp))
		return term(qp, UIW_TERM_LAYER_RDMAP, RDMAP_ET_OP, 0x07, u, s, false,
			    "Atomic Requests beyond the IRD");
	uiw_mpa_ulpdu_copy(u, s->hdr_len, &rq, sizeof(rq));
	if ((uiw_rdmap_atomic_word(&rq) & 0x0f) > UIW_ATOMIC_CMP_SWAP)   /* reserved bits ignored */
		return term(qp, UIW_TERM_LAYER_RDMAP, RDMAP_ET_OP, 0x06, u, s, false,
			    "Atomic Request with an unknown operation");
	uint64_t to = uiw_rdmap_atomic_to(&rq);
	enum uiw_stag_check r = uiw_stag_check(qp->stags, uiw_rdmap_atomic_stag(&rq), qp->pd, to, 8,
					       UIW_ACCESS_REMOTE_ATOMIC, &mr);

	if (r != UIW_STAG_OK)
		return read_req_error(qp, r, u, s, "Atomic Request for memory it may not change");
	uint8_t *at = mr->addr + (to - mr->va);

	if (((uintptr_t)at & 7) != 0)
		return term(qp, UIW_TERM_LAYER_RDMAP, RDMAP_ET_PROT, 0x01, u, s, false,
			    "Atomic Request for a word not aligned to 8 octets");
	irq_set(&qp->irq[uiw_ring_push(&qp->irq_ring)], true, uiw_rdmap_atomic_req_id(&rq),
		atomic_apply((uint64_t *)(void *)at, &rq), 0, 0, 0, 0, 0);
	uiw_ddp_untagged_done(&qp->ddp, UIW_DDP_QN_READ_REQ);
	qp_count(qp, UIW_RDMAP_C_rx_atomic);
	uiw_qp_pump(qp);
	return 0;
}

/* RFC 7306 Atomic Response: for the oldest request outstanding, which must be an atomic
 * one with this identifier; the original value goes to the work request's 8 octets. */
static int rx_atomic_resp(struct uiw_qp *qp, const struct uiw_mpa_ulpdu *u, const struct uiw_ddp_seg *s)
{
	struct uiw_rdmap_atomic_resp rp;
	int rc = one_segment(qp, u, s, UIW_DDP_QN_ATOMIC_RESP, sizeof(rp), "Atomic Response");

	if (rc != 0)
		return rc;
	uiw_mpa_ulpdu_copy(u, s->hdr_len, &rp, sizeof(rp));
	struct orq_entry *o = uiw_ring_empty(&qp->orq_ring) ? NULL
			      : &qp->orq[uiw_ring_slot(&qp->orq_ring, qp->orq_ring.head)];

	if (o == NULL || !o->atomic || o->req_id != uiw_rdmap_atomic_resp_id(&rp))
		return term(qp, UIW_TERM_LAYER_RDMAP, RDMAP_ET_OP, 0x06, u, s, false,
			    "Atomic Response with no such Atomic Request outstanding");
	uint64_t orig = uiw_rdmap_atomic_resp_orig(&rp);
	struct uiw_sq_entry *e = &qp->sq.e[o->sq_idx & qp->sq.mask];

	memcpy(o->sink.addr, &orig, sizeof(orig));   /* host order, as the verbs return it */
	e->done = true;
	e->status = UIW_WC_SUCCESS;
	e->len = sizeof(orig);
	uiw_ring_pop(&qp->orq_ring);
	uiw_ddp_untagged_done(&qp->ddp, UIW_DDP_QN_ATOMIC_RESP);
	qp_count(qp, UIW_RDMAP_C_rx_atomic_resp);
	uiw_qp_complete_sq(qp);
	uiw_qp_pump(qp);   /* the ORD has room again */
	return 0;
}

/* A Terminate ends the stream (RFC 5040 §5.6). siw writes the control word in its own bit
 * order (WIRE.md §1.6): an RFC layer above 2, or flag bits at the bottom of the third
 * octet, point to it. */
static int rx_term(struct uiw_qp *qp, const struct uiw_mpa_ulpdu *u, const struct uiw_ddp_seg *s)
{
	struct uiw_rdmap_term t = { 0, 0, 0, 0 };
	char why[96];

	uiw_mpa_ulpdu_copy(u, s->hdr_len, &t, s->len < sizeof(t) ? s->len : sizeof(t));
	bool siw = (t.layer_etype >> 4) > UIW_TERM_LAYER_LLP || ((t.hdrct & 0x07) && !(t.hdrct & 0xe0));

	qp->term_rx = (struct uiw_term_info){
		.valid = true, .siw_order = siw, .code = t.code,
		.layer = (uint8_t)(siw ? t.layer_etype & 0x0f : t.layer_etype >> 4),
		.etype = (uint8_t)(siw ? t.layer_etype >> 4 : t.layer_etype & 0x0f) };
	qp_count(qp, UIW_RDMAP_C_term_rx);
	snprintf(why, sizeof(why), "Terminate received: layer %u etype %u code 0x%02x%s",
		 qp->term_rx.layer, qp->term_rx.etype, t.code, siw ? " (siw bit order)" : "");
	uiw_qp_error(qp, why);
	if (qp->ddp.conn != NULL)
		uiw_mpa_close(qp->ddp.conn);
	return 1;
}

static int rx_untagged(struct uiw_qp *qp, const struct uiw_mpa_ulpdu *u, const struct uiw_ddp_seg *s,
		       uint8_t op)
{
	static const uint8_t want_qn[] = {
		[UIW_RDMAP_READ_REQ] = UIW_DDP_QN_READ_REQ, [UIW_RDMAP_TERMINATE] = UIW_DDP_QN_TERMINATE,
		[UIW_RDMAP_SEND] = UIW_DDP_QN_SEND, [UIW_RDMAP_SEND_INV] = UIW_DDP_QN_SEND,
		[UIW_RDMAP_SEND_SE] = UIW_DDP_QN_SEND, [UIW_RDMAP_SEND_SE_INV] = UIW_DDP_QN_SEND,
		[UIW_RDMAP_IMM] = UIW_DDP_QN_SEND, [UIW_RDMAP_IMM_SE] = UIW_DDP_QN_SEND,
		[UIW_RDMAP_ATOMIC_REQ] = UIW_DDP_QN_READ_REQ,
		[UIW_RDMAP_ATOMIC_RESP] = UIW_DDP_QN_ATOMIC_RESP,
		[UIW_RDMAP_SEND_IMM] = UIW_DDP_QN_SEND, [UIW_RDMAP_SEND_IMM_SE] = UIW_DDP_QN_SEND,
	};
	/* RFC 7306's opcodes, and uiwarp's Send with immediate data, only on a stream both
	 * ends announced them for (docs/MPA.md); otherwise they are as unknown as any other
	 * (RFC 5040 §4.8). */
	bool ext = op >= UIW_RDMAP_IMM && op <= UIW_RDMAP_ATOMIC_RESP;
	bool send_imm = op == UIW_RDMAP_SEND_IMM || op == UIW_RDMAP_SEND_IMM_SE;

	if (op == UIW_RDMAP_WRITE || op == UIW_RDMAP_READ_RESP || op > UIW_RDMAP_SEND_IMM_SE ||
	    (ext && !(qp->ext & UIW_MPA_EXT_RFC7306)) || (send_imm && !(qp->ext & UIW_MPA_EXT_SEND_IMM)))
		return term(qp, UIW_TERM_LAYER_RDMAP, RDMAP_ET_OP, 0x06, u, s, false, "unexpected opcode");
	/* RFC 5041 §7.2: the queue first; its MSN and MO when the message's handler asks. */
	if (uiw_ddp_untagged_check(&qp->ddp, s, want_qn[op], false) != 0)
		return ddp_term(qp, UIW_DDP_ET_UNTAGGED, UIW_DDP_UNT_QN, u, s, "invalid queue number");
	switch (op) {
	case UIW_RDMAP_READ_REQ: return rx_read_req(qp, u, s);
	case UIW_RDMAP_TERMINATE: return rx_term(qp, u, s);
	case UIW_RDMAP_IMM:
	case UIW_RDMAP_IMM_SE: return rx_imm(qp, u, s, op);
	case UIW_RDMAP_ATOMIC_REQ: return rx_atomic_req(qp, u, s);
	case UIW_RDMAP_ATOMIC_RESP: return rx_atomic_resp(qp, u, s);
	default: return rx_send(qp, u, s, op);
	}
}

/* @p s is read where DDP wrote it: a copy of it (wide loads over narrower stores just made,
 * which the store buffer cannot hand on) waited for those stores, 3% of a receiver's
 * samples. */
int uiw_qp_rx(void *arg, const struct uiw_mpa_ulpdu *u, const struct uiw_ddp_seg *s,
	  enum uiw_ddp_parse pr)
{
	struct uiw_qp *qp = arg;

	if (qp->state != UIW_QPS_RTS && qp->state != UIW_QPS_CLOSING)
		return 1;
	if (pr == UIW_DDP_PARSE_SHORT)
		return ddp_term(qp, UIW_DDP_ET_CATA, 0x00, NULL, NULL, "segment shorter than its DDP header");
	if (pr == UIW_DDP_PARSE_VERSION)
		return ddp_term(qp, s->tagged ? UIW_DDP_ET_TAGGED : UIW_DDP_ET_UNTAGGED,
				s->tagged ? UIW_DDP_TAG_VERSION : UIW_DDP_UNT_VERSION, u, s, "bad DDP version");
	if ((s->rdmap >> UIW_RDMAP_RV_SHIFT) != UIW_RDMAP_VERSION)
		return term(qp, UIW_TERM_LAYER_RDMAP, RDMAP_ET_OP, 0x05, u, s, false, "bad RDMAP version");
	uint8_t op = s->rdmap & UIW_RDMAP_OPCODE_MASK;

	if (!s->tagged)
		return rx_untagged(qp, u, s, op);
	if (op == UIW_RDMAP_WRITE)
		return rx_write(qp, u, s);
	if (op == UIW_RDMAP_READ_RESP)
		return rx_read_resp(qp, u, s);
	return term(qp, UIW_TERM_LAYER_RDMAP, RDMAP_ET_OP, 0x06, u, s, false, "unexpected opcode");
}
