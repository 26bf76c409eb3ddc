/* SPDX-License-Identifier: BSD-3-Clause */
/* RDMAP transmit (RFC 5040 §5): the send queue, Read Responses, Terminates, one whole
 * message at a time. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "rdmap_internal.h"

static const uint8_t send_opcode[] = {
	[UIW_WR_SEND] = UIW_RDMAP_SEND, [UIW_WR_SEND_INV] = UIW_RDMAP_SEND_INV,
	[UIW_WR_SEND_SE] = UIW_RDMAP_SEND_SE, [UIW_WR_SEND_SE_INV] = UIW_RDMAP_SEND_SE_INV,
};

/* RFC 7306: a Write with immediate data is the Write, then an Immediate Data message on
 * QN 0 (it takes one of the peer's receives, as a Send does). */
static int tx_write_imm(struct uiw_qp *qp, const struct uiw_send_wr *wr)
{
	struct uiw_rdmap_imm imm = { { 0 } };

	if (qp->tx_phase == 0) {
		int rc = uiw_ddp_stream_send_tagged(&qp->ddp, uiw_rdmap_ctrl(UIW_RDMAP_WRITE), wr->rkey,
						    wr->remote_addr, wr->sg, wr->nsge);

		if (rc <= 0)
			return rc;
		qp->tx_phase = 1;
		qp->ddp.tx.off = 0;
	}
	memcpy(imm.data, &wr->imm, sizeof(wr->imm));
	return uiw_ddp_stream_send_untagged(&qp->ddp, uiw_rdmap_ctrl(wr->imm_se ? UIW_RDMAP_IMM_SE
								     : UIW_RDMAP_IMM),
					    0, UIW_DDP_QN_SEND, &imm, sizeof(imm), NULL, 0);
}

/* RFC 7306 Atomic Request on the Read Request queue; the masks make plain verbs atomics
 * (no carry stops, every bit swapped and compared). */
static int tx_atomic(struct uiw_qp *qp, const struct uiw_send_wr *wr)
{
	bool add = wr->op == UIW_WR_FETCH_ADD;
	struct uiw_rdmap_atomic_req r;

	uiw_rdmap_atomic_req_set(&r, add ? UIW_ATOMIC_FETCH_ADD : UIW_ATOMIC_CMP_SWAP, qp->atomic_id,
				 wr->rkey, wr->remote_addr);
	if (add)
		uiw_rdmap_atomic_req_operands(&r, wr->compare_add, 0, 0, 0);
	else
		uiw_rdmap_atomic_req_operands(&r, wr->swap, UINT64_MAX, wr->compare_add, UINT64_MAX);
	return uiw_ddp_stream_send_untagged(&qp->ddp, uiw_rdmap_ctrl(UIW_RDMAP_ATOMIC_REQ), 0,
					    UIW_DDP_QN_READ_REQ, &r, sizeof(r), NULL, 0);
}

/* Sends (more of) the work request at sq_tx. @return 1 done, 0 out of room, <0 error. */
static int tx_sq(struct uiw_qp *qp, struct uiw_sq_entry *e)
{
	const struct uiw_send_wr *wr = &e->wr;

	switch (wr->op) {
	case UIW_WR_WRITE:
		return uiw_ddp_stream_send_tagged(&qp->ddp, uiw_rdmap_ctrl(UIW_RDMAP_WRITE), wr->rkey,
						  wr->remote_addr, wr->sg, wr->nsge);
	case UIW_WR_WRITE_IMM:
		return tx_write_imm(qp, wr);
	case UIW_WR_FETCH_ADD:
	case UIW_WR_CMP_SWAP:
		return tx_atomic(qp, wr);
	case UIW_WR_SEND_IMM:
		/* The value's octets go on the wire as the application gave them (docs/MPA.md). */
		return uiw_ddp_stream_send_untagged(&qp->ddp, uiw_rdmap_ctrl(wr->imm_se ? UIW_RDMAP_SEND_IMM_SE
									     : UIW_RDMAP_SEND_IMM),
						    uiw_be32_get((uiw_be32){ wr->imm }), UIW_DDP_QN_SEND, NULL, 0, wr->sg,
						    wr->nsge);
	case UIW_WR_READ: {
		struct uiw_rdmap_read_req rr;

		uiw_rdmap_read_req_set(&rr, wr->sink_stag, wr->sink_to, wr->sg[0].len, wr->rkey,
				       wr->remote_addr);
		return uiw_ddp_stream_send_untagged(&qp->ddp, uiw_rdmap_ctrl(UIW_RDMAP_READ_REQ), 0,
						    UIW_DDP_QN_READ_REQ, &rr, sizeof(rr), NULL, 0);
	}
	default:
		return uiw_ddp_stream_send_untagged(&qp->ddp, uiw_rdmap_ctrl(send_opcode[wr->op]),
						    wr->op == UIW_WR_SEND_INV || wr->op == UIW_WR_SEND_SE_INV
							    ? wr->inv_stag : 0,
						    UIW_DDP_QN_SEND, NULL, 0, wr->sg, wr->nsge);
	}
}

/* The work request at sq_tx is all on the wire. */
static void sq_sent(struct uiw_qp *qp, struct uiw_sq_entry *e)
{
	e->len = (uint32_t)uiw_sge_total(e->wr.sg, e->wr.nsge);
	if (uiw_wr_op_orq(e->wr.op)) {
		struct orq_entry *o = &qp->orq[uiw_ring_push(&qp->orq_ring)];
		bool atomic = e->wr.op != UIW_WR_READ;

		*o = (struct orq_entry){ .sq_idx = qp->sq.tx, .sink_stag = e->wr.sink_stag,
					 .sink_to = e->wr.sink_to, .sink = e->wr.sg[0],
					 .atomic = atomic, .req_id = atomic ? qp->atomic_id++ : 0 };
		qp_count(qp, atomic ? UIW_RDMAP_C_tx_atomic : UIW_RDMAP_C_tx_read_req);
	} else {
		/* All handed to MPA: it completes once nothing refers to its memory (RFC 5040
		 * §5.1 hands the buffer back only then); octets copied are no longer counted. */
		e->done = true;
		e->status = UIW_WC_SUCCESS;
		if (rte_mbuf_ext_refcnt_update(&e->lend.info, -1) != 0)
			qp_count(qp, UIW_RDMAP_C_tx_lent_wait);
		if (e->wr.op == UIW_WR_WRITE || e->wr.op == UIW_WR_WRITE_IMM) {
			qp_count(qp, UIW_RDMAP_C_tx_write);
			if (e->wr.op == UIW_WR_WRITE_IMM)
				qp_count(qp, UIW_RDMAP_C_tx_imm);
		} else {
			qp_count(qp, UIW_RDMAP_C_tx_send);
		}
	}
	qp->sq.tx++;
	uiw_qp_complete_sq(qp);
}

/* More of the Read Response at the IRQ's head. Its source is checked again first: since
 * the request was taken, or since the last part went out, the application may have
 * deregistered the region or the peer invalidated it, and the memory may be gone (RFC 5040
 * §5.2: an invalid STag is not accessed). @return as tx_sq(), or -EACCES. */
static int tx_irq(struct uiw_qp *qp)
{
	const struct irq_entry *r = &qp->irq[uiw_ring_slot(&qp->irq_ring, qp->irq_ring.head)];
	struct uiw_sge src = { NULL, 0 };
	struct uiw_mr *mr;

	if (r->atomic) {
		struct uiw_rdmap_atomic_resp a;

		/* RFC 7306: the response goes in order with the Read Responses, on its queue. */
		uiw_rdmap_atomic_resp_set(&a, r->req_id, r->orig);
		return uiw_ddp_stream_send_untagged(&qp->ddp, uiw_rdmap_ctrl(UIW_RDMAP_ATOMIC_RESP), 0,
						    UIW_DDP_QN_ATOMIC_RESP, &a, sizeof(a), NULL, 0);
	}
	if (r->size > 0) {
		enum uiw_stag_check k = uiw_stag_check(qp->stags, r->src_stag, qp->pd, r->src_to,
						       r->size, UIW_ACCESS_REMOTE_READ, &mr);

		if (k != UIW_STAG_OK)
			return -EACCES;
		src = (struct uiw_sge){ mr->addr + (r->src_to - mr->va), r->size };
	}
	return uiw_ddp_stream_send_tagged(&qp->ddp, uiw_rdmap_ctrl(UIW_RDMAP_READ_RESP),
					  r->sink_stag, r->sink_to, &src, 1);
}

static int tx_term(struct uiw_qp *qp)
{
	/* RFC 5040 §5.6 / WIRE.md §1.6: QN 2, MSN 1 (the stream's only Terminate), MO 0. */
	return uiw_ddp_stream_send_untagged(&qp->ddp, uiw_rdmap_ctrl(UIW_RDMAP_TERMINATE), 0,
					    UIW_DDP_QN_TERMINATE, qp->term_body, qp->term_len, NULL, 0);
}

/* Picks the next message: a Terminate first, then Read Responses (a burst at most while
 * work requests wait), then the send queue (a Read only within the ORD). */
static enum tx_kind pick(struct uiw_qp *qp)
{
	bool sq_ready = qp->state == UIW_QPS_RTS && qp->sq.tx != qp->sq.tail;
	bool irq_ready = qp->state == UIW_QPS_RTS && !uiw_ring_empty(&qp->irq_ring);

	if (qp->term_pending)
		return TX_TERM;
	if (sq_ready && uiw_wr_op_orq(qp->sq.e[qp->sq.tx & qp->sq.mask].wr.op) && qp->ord > 0 &&
	    uiw_ring_count(&qp->orq_ring) >= qp->ord)
		sq_ready = false;   /* ORD reached: the Read waits for a response */
	if (irq_ready && (!sq_ready || qp->irq_burst < IRQ_BURST))
		return TX_IRQ;
	return sq_ready ? TX_SQ : TX_IDLE;
}

static void finish(struct uiw_qp *qp, enum tx_kind kind)
{
	switch (kind) {
	case TX_SQ:
		qp->irq_burst = 0;
		sq_sent(qp, &qp->sq.e[qp->sq.tx & qp->sq.mask]);
		break;
	case TX_IRQ:
		uiw_ring_pop(&qp->irq_ring);
		if (qp->ddp.conn != NULL)
			qp->irq_sent[uiw_ring_push(&qp->irq_sent_ring)] = uiw_mpa_tx_mark(qp->ddp.conn);
		qp->irq_burst++;
		qp_count(qp, UIW_RDMAP_C_tx_read_resp);
		break;
	case TX_TERM:
		qp->term_pending = false;
		qp->state = UIW_QPS_ERROR;
		qp_count(qp, UIW_RDMAP_C_term_tx);
		if (qp->ddp.conn != NULL)
			uiw_mpa_close(qp->ddp.conn);   /* RFC 5040 §5.6: the stream ends */
		break;
	case TX_IDLE:
		break;
	}
}

/*
 * A verbs work request's SGEs are checked when it starts, not when it is posted (as siw and
 * RNICs do): each lkey must name a valid region of the QP's PD that holds the bytes, a Read's
 * sink with local write access. Otherwise the WR completes with a local protection error
 * and the QP is Terminated (RDMAP local catastrophic error, unspecified, as siw).
 */
/* The work request at sq_tx cannot run: it completes with @p status and the QP is
 * Terminated (RDMAP local catastrophic error, unspecified, as siw). @return false. */
static bool sq_fail(struct uiw_qp *qp, struct uiw_sq_entry *e, enum uiw_wc_status status,
		    enum uiw_rdmap_counter k, const char *why)
{
	e->done = true;
	e->status = status;
	qp_count(qp, k);
	uiw_qp_send_terminate(qp, UIW_TERM_LAYER_RDMAP, 0, 0xff, NULL, NULL, false, why);
	return false;
}

static bool sq_check(struct uiw_qp *qp, struct uiw_sq_entry *e)
{
	unsigned access = uiw_wr_op_orq(e->wr.op) ? UIW_ACCESS_LOCAL_WRITE : 0;

	/* The peer's IRD was 0 (RFC 6581 §7.1): no Read may be sent on this stream. As siw,
	 * the Read fails at once, instead of waiting for room that never comes. Atomics
	 * count against the ORD as Reads do (RFC 7306). */
	if (uiw_wr_op_orq(e->wr.op) && qp->ord == 0)
		return sq_fail(qp, e, UIW_WC_LOC_QP_OP_ERR, UIW_RDMAP_C_tx_read_no_ord,
			       "a Read posted with an ORD of 0 (the peer's IRD)");
	struct rte_mbuf_ext_shared_info *dma = NULL;

	if (!e->wr.lkeys)
		return true;
	for (unsigned i = 0; i < e->wr.nsge; i++) {
		const struct uiw_sge *g = &e->wr.sg[i];
		const struct uiw_mr *mr = uiw_stag_find(qp->stags, g->lkey);

		if (!uiw_mr_local_ok(mr, qp->pd, (uintptr_t)g->addr, g->len, access))
			return sq_fail(qp, e, UIW_WC_LOC_PROT_ERR, UIW_RDMAP_C_tx_bad_lkey,
				       "a work request's SGE is outside its lkey's region");
		dma = i == 0 || mr->dma == dma ? mr->dma : NULL;
	}
	/* Where the NIC reads frames by DMA, memory is lent only from one region mapped for
	 * it (uiw_dma.h): the frames it is given then hold that mapping, and the work request
	 * holds it until it completes (so a region deregistered too early cannot take the
	 * mapping from under frames still to be built from it). */
	if (dma != NULL && !uiw_wr_op_orq(e->wr.op)) {
		e->lend.dma = dma;
		rte_mbuf_ext_refcnt_update(dma, 1);
	}
	return true;
}

/* The last mbuf that referred to a work request's memory is gone. */
static void sq_lent_back(void *addr, void *opaque)
{
	struct uiw_sq_entry *e = opaque;

	(void)addr;
	if (e->qp->destroying)
		return;
	/* Called as TCP frees acknowledged mbufs: a completion lost to a full CQ must not
	 * tear the connection down from inside that loop; the pump does it next. */
	e->qp->in_lent_back = true;
	uiw_qp_complete_sq(e->qp);
	e->qp->in_lent_back = false;
}

/* A Send's or Write's memory is lent to MPA while it goes out; the count starts at one,
 * RDMAP's own, given back when the message is all sent (sq_sent) or flushed. */
static struct rte_mbuf_ext_shared_info *sq_lend(struct uiw_qp *qp, struct uiw_sq_entry *e)
{
	if (uiw_wr_op_orq(e->wr.op))
		return NULL;
	e->qp = qp;
	e->lend.info.free_cb = sq_lent_back;
	e->lend.info.fcb_opaque = e;
	rte_mbuf_ext_refcnt_set(&e->lend.info, 1);
	return &e->lend.info;
}

void uiw_qp_pump(struct uiw_qp *qp)
{
	if (qp->cq_lost) {
		qp->cq_lost = false;
		uiw_qp_send_terminate(qp, UIW_TERM_LAYER_RDMAP, 0, 0xff, NULL, NULL, false,
				      "completion queue overflow: a completion was lost");
		return;
	}
	while (qp->ddp.conn != NULL) {
		if (qp->tx_kind == TX_IDLE) {
			enum tx_kind k = pick(qp);

			if (k == TX_SQ && !sq_check(qp, &qp->sq.e[qp->sq.tx & qp->sq.mask]))
				return;   /* Terminated: the pump ran again from there */
			qp->tx_kind = k;
			qp->tx_phase = 0;
			qp->ddp.tx.off = 0;
			qp->ddp.tx.lend = k == TX_SQ ? sq_lend(qp, &qp->sq.e[qp->sq.tx & qp->sq.mask])
						   : NULL;
			if (qp->tx_kind == TX_IDLE)
				return;
		}
		enum tx_kind kind = qp->tx_kind;
		int rc = kind == TX_SQ ? tx_sq(qp, &qp->sq.e[qp->sq.tx & qp->sq.mask])
			 : kind == TX_IRQ ? tx_irq(qp) : tx_term(qp);

		if (rc == 0)
			return;   /* out of room: writable brings us back */
		qp->tx_kind = TX_IDLE;
		if (rc == -EACCES && kind == TX_IRQ) {
			/* RFC 5040 §4.8: remote protection, invalid STag (the Read cannot be
			 * served any more); what went out of the response stays out. */
			qp_count(qp, UIW_RDMAP_C_read_src_gone);
			uiw_qp_send_terminate(qp, UIW_TERM_LAYER_RDMAP, 1, 0x00, NULL, NULL, false,
					      "a Read's source was deregistered or invalidated "
					      "before its response was all sent");
			return;
		}
		if (rc < 0) {
			char why[80];

			/* -ENOTCONN: the connection is closing (the peer's FIN came first). */
			snprintf(why, sizeof(why), "cannot send: MPA refused a segment (%s)",
				 rc == -ENOTCONN ? "the connection is closing" : strerror(-rc));
			uiw_qp_error(qp, why);
			return;
		}
		finish(qp, kind);
	}
}

/* Writes the Terminate body (RFC 5040 §4.8): control, then for DDP and RDMAP errors the
 * offending segment's length and DDP header, and for a bad Read Request its RDMAP body. */
static uint32_t term_body(uint8_t *b, uint8_t layer, uint8_t etype, uint8_t code,
			  const struct uiw_mpa_ulpdu *u, const struct uiw_ddp_seg *s, bool rdmap_hdr)
{
	struct uiw_rdmap_term t;
	uint32_t n = sizeof(t);
	uint8_t hdrct = 0;

	if (u != NULL && s != NULL && s->hdr_len > 0 && u->len >= s->hdr_len) {
		hdrct = UIW_TERM_HDR_M | UIW_TERM_HDR_D;
		uiw_rdmap_term_seg_len_set(b + n, (uint16_t)u->len);
		n += 2;
		n += (uint32_t)uiw_mpa_ulpdu_copy(u, 0, b + n, s->hdr_len);
		if (rdmap_hdr && u->len >= s->hdr_len + sizeof(struct uiw_rdmap_read_req)) {
			hdrct |= UIW_TERM_HDR_R;
			n += (uint32_t)uiw_mpa_ulpdu_copy(u, s->hdr_len, b + n,
							  sizeof(struct uiw_rdmap_read_req));
		}
	}
	uiw_rdmap_term_set(&t, layer, etype, code, hdrct);
	memcpy(b, &t, sizeof(t));
	return n;
}

void uiw_qp_send_terminate(struct uiw_qp *qp, uint8_t layer, uint8_t etype, uint8_t code,
		       const struct uiw_mpa_ulpdu *u, const struct uiw_ddp_seg *s, bool rdmap_hdr,
		       const char *why)
{
	char text[96];

	if (qp->state == UIW_QPS_ERROR || qp->state == UIW_QPS_TERMINATE)
		return;
	qp->term_len = term_body(qp->term_body, layer, etype, code, u, s, rdmap_hdr);
	qp->term_tx = (struct uiw_term_info){ .valid = true, .layer = layer, .etype = etype, .code = code };
	snprintf(text, sizeof(text), "Terminate sent (layer %u etype %u code 0x%02x): %s", layer,
		 etype, code, why);
	/* What was under way is flushed; the Terminate goes after the message on the wire. */
	uiw_qp_error(qp, text);
	qp->state = UIW_QPS_TERMINATE;
	qp->term_pending = true;
	uiw_qp_pump(qp);
}
