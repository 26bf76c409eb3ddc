/* SPDX-License-Identifier: BSD-3-Clause */
/* Queue pairs and completion queues: creation, posting, completion order, error and flush. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rdmap_internal.h"
#include "uiw_log.h"
#include "uiw_time.h"

#define RDMAP_C_DESC_(name, help) [UIW_RDMAP_C_##name] = { #name, help },
const struct uiw_counter_desc uiw_rdmap_counter_desc[UIW_RDMAP_C__COUNT] = {
	UIW_RDMAP_COUNTERS(RDMAP_C_DESC_)
};

int uiw_cq_init(struct uiw_cq *cq, uint32_t cap)
{
	memset(cq, 0, sizeof(*cq));
	if (cap == 0 || cap > UIW_RING_CAP_MAX)
		return -EINVAL;
	cq->wc = calloc(uiw_ring_slots(cap), sizeof(*cq->wc));
	if (cq->wc == NULL)
		return -ENOMEM;
	uiw_ring_init(&cq->ring, cap);
	uiw_spin_init(&cq->lock);
	return 0;
}

void uiw_cq_fini(struct uiw_cq *cq)
{
	free(cq->wc);
	memset(cq, 0, sizeof(*cq));
}

/*
 * Whether the CQ holds completions, without its lock: an empty poll (most polls of a
 * spinning program) takes no locked instruction (perf put the lock at a fifth of an idle
 * poll pass). The indices are stored atomically (under the lock) for this look. A
 * completion being pushed meanwhile is seen by the next look; one seen is taken under the
 * lock, after its entry was written.
 */
static inline bool cq_has_some(const struct uiw_cq *cq)
{
	return __atomic_load_n(&cq->ring.tail, __ATOMIC_RELAXED) !=
	       __atomic_load_n(&cq->ring.head, __ATOMIC_RELAXED);
}

bool uiw_cq_pending(struct uiw_cq *cq)
{
	return cq_has_some(cq);
}

unsigned uiw_cq_poll(struct uiw_cq *cq, struct uiw_wc *wc, unsigned n)
{
	unsigned k = 0;

	if (!cq_has_some(cq))
		return 0;
	uiw_spin_lock(&cq->lock);
	uint32_t head = cq->ring.head;

	for (; k < n && head != cq->ring.tail; head++)
		wc[k++] = cq->wc[uiw_ring_slot(&cq->ring, head)];
	__atomic_store_n(&cq->ring.head, head, __ATOMIC_RELAXED);   /* read unlocked too */
	uiw_spin_unlock(&cq->lock);
	return k;
}

void uiw_cq_arm(struct uiw_cq *cq, bool solicited_only)
{
	uiw_spin_lock(&cq->lock);
	cq->armed = true;
	cq->solicited_only = solicited_only;
	uiw_spin_unlock(&cq->lock);
}

/* Callers leave their queues consistent before pushing: an overflow moves the QP to error
 * from here, which flushes (and pushes) again. */
void uiw_qp_cq_push(struct uiw_qp *qp, struct uiw_cq *cq, const struct uiw_wc *wc)
{
	bool notify = false;

	uiw_spin_lock(&cq->lock);
	if (uiw_ring_full(&cq->ring) || cq->overflow > 0) {
		bool first = cq->overflow++ == 0;

		uiw_spin_unlock(&cq->lock);
		/* The owner sized the CQ below its queues: the completion is lost, so the CQ
		 * is in error for good and no QP can go on as if its completions had been
		 * delivered (verbs: CQ overflow is a CQ error and an affiliated QP error). */
		if (first && cq->overflowed != NULL)
			cq->overflowed(cq->notify_arg, cq);
		qp_count(qp, UIW_RDMAP_C_cq_overflow);
		if (qp->in_lent_back)
			qp->cq_lost = true;   /* uiw_qp_pump() Terminates */
		else
			uiw_qp_send_terminate(qp, UIW_TERM_LAYER_RDMAP, 0, 0xff, NULL, NULL, false,
					      "completion queue overflow: a completion was lost");
		return;
	}
	cq->wc[uiw_ring_slot(&cq->ring, cq->ring.tail)] = *wc;
	__atomic_store_n(&cq->ring.tail, cq->ring.tail + 1, __ATOMIC_RELEASE);   /* read unlocked too */
	/* Notification is one-shot; solicited-only waits for a solicited receive or an error
	 * (the verbs rule for IBV_CQ_SOLICITED). */
	if (cq->armed && (!cq->solicited_only || wc->solicited || wc->status != UIW_WC_SUCCESS)) {
		cq->armed = false;
		notify = cq->notify != NULL;
	}
	uiw_spin_unlock(&cq->lock);
	if (notify)
		cq->notify(cq->notify_arg, cq);
}

static enum uiw_wc_op wc_op(enum uiw_wr_op op)
{
	switch (op) {
	case UIW_WR_WRITE:
	case UIW_WR_WRITE_IMM: return UIW_WC_RDMA_WRITE;
	case UIW_WR_READ: return UIW_WC_RDMA_READ;
	case UIW_WR_FETCH_ADD: return UIW_WC_FETCH_ADD;
	case UIW_WR_CMP_SWAP: return UIW_WC_COMP_SWAP;
	default: return UIW_WC_SEND;
	}
}

/* The count a work request held on its region's DMA mapping while it went out (rdmap_tx.c,
 * sq_check): frames built from its memory may have needed it until now. */
static void sq_unhold(struct uiw_sq_entry *e)
{
	struct rte_mbuf_ext_shared_info *dma = e->lend.dma;

	if (dma == NULL)
		return;
	e->lend.dma = NULL;
	if (rte_mbuf_ext_refcnt_update(dma, -1) == 0)
		dma->free_cb(NULL, dma->fcb_opaque);
}

/* Completions leave in posting order: a Send behind an unanswered Read waits for it. */
void uiw_qp_complete_sq(struct uiw_qp *qp)
{
	while (qp->sq.comp != qp->sq.tx) {
		struct uiw_sq_entry *e = &qp->sq.e[qp->sq.comp & qp->sq.mask];

		if (!e->done || rte_mbuf_ext_refcnt_read(&e->lend.info) != 0)
			return;
		sq_unhold(e);
		qp->sq.comp++;
		if (e->wr.signaled || e->status != UIW_WC_SUCCESS) {
			struct uiw_wc wc = { .wr_id = e->wr.wr_id, .status = e->status,
					     .op = wc_op(e->wr.op), .byte_len = e->len, .qp_num = qp->qp_num };

			uiw_qp_cq_push(qp, qp->scq, &wc);
		}
	}
}

/* The QP's DDP stream hands segments and send space here (MPA -> DDP -> RDMAP). */
static void on_writable(void *arg)
{
	uiw_qp_pump(arg);
}

static const struct uiw_ddp_ulp qp_ddp_ulp = { .segment = uiw_qp_rx, .writable = on_writable };

int uiw_qp_create(struct uiw_qp **out, const struct uiw_qp_attr *a)
{
	struct uiw_qp *qp = calloc(1, sizeof(*qp));

	if (qp == NULL || a->sq_size == 0 || a->sq_size > UIW_RING_CAP_MAX ||
	    (a->rq_size == 0 && a->srq == NULL) || a->rq_size > UIW_RING_CAP_MAX ||
	    a->send_cq == NULL || a->recv_cq == NULL || a->stags == NULL) {
		free(qp);
		return qp == NULL ? -ENOMEM : -EINVAL;
	}
	/* The rings are powers of two (indices by mask); the caps stay the sizes asked for. */
	uint32_t rq_cap = a->rq_size ? a->rq_size : 1;

	qp->sq.mask = uiw_ring_slots(a->sq_size) - 1;
	qp->sq.e = calloc(qp->sq.mask + 1, sizeof(*qp->sq.e));
	qp->rq = calloc(uiw_ring_slots(rq_cap), sizeof(*qp->rq));
	if (qp->sq.e == NULL || qp->rq == NULL) {
		uiw_qp_destroy(qp);
		return -ENOMEM;
	}
	qp->qp_num = a->qp_num;
	qp->pd = a->pd;
	qp->sq.cap = a->sq_size;
	uiw_ring_init(&qp->rq_ring, rq_cap);
	/* Empty until the connection says the ORD and IRD (on_established). */
	uiw_ring_init(&qp->orq_ring, 0);
	uiw_ring_init(&qp->irq_ring, 0);
	uiw_ring_init(&qp->irq_sent_ring, 0);
	qp->srq = a->srq;
	qp->scq = a->send_cq;
	qp->rcq = a->recv_cq;
	qp->stags = a->stags;
	uiw_ddp_stream_init(&qp->ddp, UIW_RDMAP_QUEUES, &qp_ddp_ulp, qp);
	qp->events = a->events;
	qp->event_arg = a->event_arg;
	qp->state = UIW_QPS_IDLE;
	snprintf(qp->why, sizeof(qp->why), "not connected");
	*out = qp;
	return 0;
}

/* Whether some entry's memory is still lent (counted beyond RDMAP's own reference). */
static bool sq_lent(const struct uiw_qp *qp)
{
	for (uint32_t i = qp->sq.comp; i != qp->sq.tail; i++)
		if (rte_mbuf_ext_refcnt_read(&qp->sq.e[i & qp->sq.mask].lend.info) != 0)
			return true;
	return false;
}

void uiw_qp_destroy(struct uiw_qp *qp)
{
	if (qp == NULL)
		return;
	qp->destroying = true;
	/* The reset frees the send queue and the frames that refer to lent memory. */
	if (qp->ddp.conn != NULL)
		uiw_mpa_abort(qp->ddp.conn, "QP destroyed");
	if (qp->sq.e != NULL) {
		for (uint32_t i = qp->sq.comp; i != qp->sq.tail; i++)
			if (!qp->sq.e[i & qp->sq.mask].done)
				rte_mbuf_ext_refcnt_set(&qp->sq.e[i & qp->sq.mask].lend.info, 0);
		if (sq_lent(qp)) {
			/* Never: a reference left would point into freed memory. */
			UIW_ERR("qp %u: destroyed while frames still refer to its send queue; "
				"its memory is kept", qp->qp_num);
			return;
		}
		for (uint32_t i = qp->sq.comp; i != qp->sq.tail; i++)
			sq_unhold(&qp->sq.e[i & qp->sq.mask]);
	}
	free(qp->sq.e);
	free(qp->rq);
	free(qp->orq);
	free(qp->irq);
	free(qp->irq_sent);
	free(qp);
}

/* Every work request not yet done completes flushed: the send queue in posting order, the
 * receive under way, the QP's own receives. */
static void flush_queues(struct uiw_qp *qp)
{
	/* The connection may still send what it queued (a Terminate goes after it): lent
	 * memory is copied out first, so the application has its buffers back on completion.
	 * Messages that were all queued complete as sent when their counts fall. */
	if (qp->ddp.conn != NULL && sq_lent(qp))
		uiw_mpa_unlend(qp->ddp.conn);
	for (uint32_t i = qp->sq.comp; i != qp->sq.tail; i++) {
		struct uiw_sq_entry *e = &qp->sq.e[i & qp->sq.mask];

		if (!e->done) {
			e->done = true;
			e->status = UIW_WC_WR_FLUSH_ERR;
			rte_mbuf_ext_refcnt_set(&e->lend.info, 0);   /* RDMAP's own, of the one under way */
			qp_count(qp, UIW_RDMAP_C_flushed);
		}
	}
	qp->sq.tx = qp->sq.tail;
	uiw_qp_complete_sq(qp);
	if (qp->rx_have_cur) {
		struct uiw_wc wc = { .wr_id = qp->rx_cur.wr_id, .status = UIW_WC_WR_FLUSH_ERR,
				     .op = UIW_WC_RECV, .qp_num = qp->qp_num };

		qp->rx_have_cur = false;
		uiw_qp_cq_push(qp, qp->rcq, &wc);
		qp_count(qp, UIW_RDMAP_C_flushed);
	}
	/* A shared queue's receives stay for its other QPs. */
	while (!uiw_ring_empty(&qp->rq_ring)) {
		struct uiw_wc wc = { .wr_id = qp->rq[uiw_ring_pop(&qp->rq_ring)].wr_id,
				     .status = UIW_WC_WR_FLUSH_ERR, .op = UIW_WC_RECV, .qp_num = qp->qp_num };

		uiw_qp_cq_push(qp, qp->rcq, &wc);
		qp_count(qp, UIW_RDMAP_C_flushed);
	}
}

/* The QP goes to error: its queues flush, and nothing of what was under way is sent. */
static void flush(struct uiw_qp *qp)
{
	flush_queues(qp);
	qp->orq_ring.head = qp->orq_ring.tail;
	qp->irq_ring.head = qp->irq_ring.tail;
	qp->irq_sent_ring.head = qp->irq_sent_ring.tail;
	qp->tx_kind = TX_IDLE;
}

/* No more work is taken once a Terminate is on its way (TERMINATE) or sent (ERROR): what
 * is posted then completes at once, flushed (as siw does). Only the queues: a Terminate
 * still going out keeps its transmit state. */
static bool flushing(struct uiw_qp *qp)
{
	if (qp->state != UIW_QPS_ERROR && qp->state != UIW_QPS_TERMINATE)
		return false;
	flush_queues(qp);
	return true;
}

/* The QP goes to error and says why in the log: at @p level (a peer's orderly close is
 * routine, anything else is worth a line at the default level). */
static void qp_error_at(struct uiw_qp *qp, enum uiw_log_level level, const char *why)
{
	if (qp->state == UIW_QPS_ERROR)
		return;
	qp->state = UIW_QPS_ERROR;
	snprintf(qp->why, sizeof(qp->why), "%s", why);
	UIW_LOG(level, "qp %u to error: %s", qp->qp_num, qp->why);
	flush(qp);
	if (qp->events != NULL && qp->events->error != NULL)
		qp->events->error(qp->event_arg, qp, qp->why);
}

void uiw_qp_error(struct uiw_qp *qp, const char *why)
{
	qp_error_at(qp, UIW_LOG_WARN, why);
}

struct uiw_sq *uiw_qp_sq(struct uiw_qp *qp)
{
	return &qp->sq;
}

bool uiw_qp_posted(struct uiw_qp *qp)
{
	return !flushing(qp) && qp->state == UIW_QPS_RTS;
}

void uiw_qp_kick(struct uiw_qp *qp)
{
	if (qp->state == UIW_QPS_RTS)
		uiw_qp_pump(qp);
}

int uiw_qp_post_send(struct uiw_qp *qp, const struct uiw_send_wr *wr)
{
	struct uiw_sq_entry *slot;

	if (wr->nsge > UIW_MAX_SGE || (uiw_wr_op_orq(wr->op) && wr->nsge != 1) ||
	    (uiw_wr_op_orq(wr->op) && wr->op != UIW_WR_READ && wr->sg[0].len != 8))
		return -EINVAL;
	/* RFC 7306, and Send with immediate data, only where both ends announced it
	 * (docs/MPA.md). */
	if ((wr->op == UIW_WR_SEND_IMM && !(qp->ext & UIW_MPA_EXT_SEND_IMM)) ||
	    (wr->op >= UIW_WR_WRITE_IMM && wr->op <= UIW_WR_CMP_SWAP && !(qp->ext & UIW_MPA_EXT_RFC7306)))
		return -EOPNOTSUPP;
	slot = uiw_sq_slot(&qp->sq);
	if (slot == NULL)
		return -ENOMEM;
	slot->wr = *wr;
	uiw_sq_commit(&qp->sq, slot);
	if (uiw_qp_posted(qp))
		uiw_qp_pump(qp);
	return 0;
}

int uiw_srq_init(struct uiw_srq *srq, uint32_t cap)
{
	memset(srq, 0, sizeof(*srq));
	if (cap == 0 || cap > UIW_RING_CAP_MAX)
		return -EINVAL;
	srq->wr = calloc(uiw_ring_slots(cap), sizeof(*srq->wr));
	if (srq->wr == NULL)
		return -ENOMEM;
	uiw_ring_init(&srq->ring, cap);
	uiw_spin_init(&srq->lock);
	return 0;
}

void uiw_srq_fini(struct uiw_srq *srq)
{
	free(srq->wr);
	memset(srq, 0, sizeof(*srq));
}

int uiw_srq_post(struct uiw_srq *srq, const struct uiw_recv_wr *wr)
{
	if (wr->nsge > UIW_MAX_SGE)
		return -EINVAL;
	uiw_spin_lock(&srq->lock);
	if (uiw_ring_full(&srq->ring)) {
		uiw_spin_unlock(&srq->lock);
		return -ENOMEM;
	}
	srq->wr[uiw_ring_push(&srq->ring)] = *wr;
	uiw_spin_unlock(&srq->lock);
	return 0;
}

/* The receive for a new Send: the QP's own queue, or its shared one. */
bool uiw_qp_take_recv(struct uiw_qp *qp)
{
	if (qp->srq != NULL) {
		struct uiw_srq *s = qp->srq;

		bool low = false;

		uiw_spin_lock(&s->lock);
		if (uiw_ring_empty(&s->ring)) {
			uiw_spin_unlock(&s->lock);
			return false;
		}
		qp->rx_cur = s->wr[uiw_ring_pop(&s->ring)];
		if (s->limit > 0 && uiw_ring_count(&s->ring) < s->limit) {
			s->limit = 0;   /* one-shot, as the verbs SRQ limit event */
			low = s->limit_reached != NULL;
		}
		uiw_spin_unlock(&s->lock);
		if (low)
			s->limit_reached(s->limit_arg, s);
	} else {
		if (uiw_ring_empty(&qp->rq_ring))
			return false;
		qp->rx_cur = qp->rq[uiw_ring_pop(&qp->rq_ring)];
	}
	qp->rx_have_cur = true;
	qp->rx_wait_until = 0;
	return true;
}

int uiw_qp_post_recv(struct uiw_qp *qp, const struct uiw_recv_wr *wr)
{
	if (wr->nsge > UIW_MAX_SGE || qp->srq != NULL)
		return -EINVAL;
	if (uiw_ring_full(&qp->rq_ring))
		return -ENOMEM;
	qp->rq[uiw_ring_push(&qp->rq_ring)] = *wr;
	flushing(qp);
	if (qp->rx_wait_until != 0 && qp->ddp.conn != NULL)
		uiw_mpa_rx_kick(qp->ddp.conn);   /* a Send waits for it: taken next pass */
	return 0;
}

void uiw_qp_set_recv_wait(struct uiw_qp *qp, unsigned ms)
{
	qp->recv_wait_ns = (uint64_t)ms * 1000000u;
}

/* How often a QP on a shared receive queue looks again while a Send waits: a post to the
 * SRQ names no QP to wake. */
#define SRQ_WAIT_POLL_NS 50000u

/*
 * The Send at hand found no receive: wait for one while recv_wait_ns allows (the whole
 * message and everything behind it stay in TCP's receive queue; nothing of it was used).
 * @return UIW_MPA_ULPDU_WAIT to hand it back, 0 when the QP must answer it now (RFC 5041
 * §7.2: no buffer).
 */
int uiw_qp_recv_wait(struct uiw_qp *qp)
{
	uint64_t now;

	if (qp->recv_wait_ns == 0 || qp->ddp.conn == NULL || qp->state != UIW_QPS_RTS)
		return 0;
	if (!uiw_mpa_rx_may_wait(qp->ddp.conn))
		return 0;
	now = uiw_now_ns();
	if (qp->rx_wait_until == 0) {
		qp->rx_wait_until = now + qp->recv_wait_ns;
		qp_count(qp, UIW_RDMAP_C_rx_wait);
	} else if (now >= qp->rx_wait_until) {
		qp->rx_wait_until = 0;
		qp_count(qp, UIW_RDMAP_C_rx_wait_expired);
		return 0;
	}
	uiw_mpa_rx_wait(qp->ddp.conn, qp->srq != NULL && now + SRQ_WAIT_POLL_NS < qp->rx_wait_until
				      ? now + SRQ_WAIT_POLL_NS : qp->rx_wait_until);
	return UIW_MPA_ULPDU_WAIT;
}

void uiw_qp_detach(struct uiw_qp *qp)
{
	/* The connection lives on without the QP: it keeps copies, not the QP's memory. */
	if (qp->ddp.conn != NULL && sq_lent(qp))
		uiw_mpa_unlend(qp->ddp.conn);
	uiw_ddp_stream_detach(&qp->ddp);
}

void uiw_qp_disconnect(struct uiw_qp *qp)
{
	if (qp->ddp.conn == NULL || qp->state != UIW_QPS_RTS)
		return;
	qp->state = UIW_QPS_CLOSING;
	uiw_mpa_close(qp->ddp.conn);
}

void uiw_qp_terminate(struct uiw_qp *qp, uint8_t layer, uint8_t etype, uint8_t code,
		      const char *why)
{
	uiw_qp_send_terminate(qp, layer, etype, code, NULL, NULL, false, why);
}

enum uiw_qp_state uiw_qp_state(const struct uiw_qp *qp) { return qp->state; }
struct uiw_mpa_conn *uiw_qp_conn(const struct uiw_qp *qp) { return qp->ddp.conn; }
uint16_t uiw_qp_ord(const struct uiw_qp *qp) { return qp->ord; }
const uint64_t *uiw_qp_counters(const struct uiw_qp *qp) { return qp->c; }
const char *uiw_qp_why(const struct uiw_qp *qp) { return qp->why; }
const struct uiw_term_info *uiw_qp_term_rx(const struct uiw_qp *qp) { return &qp->term_rx; }
uint32_t uiw_qp_ext(const struct uiw_qp *qp) { return qp->ext; }

void uiw_qp_depths(const struct uiw_qp *qp, struct uiw_qp_depths *d)
{
	*d = (struct uiw_qp_depths){
		.sq = qp->sq.tail - qp->sq.comp, .sq_cap = qp->sq.cap,
		.rq = qp->srq != NULL ? 0 : uiw_ring_count(&qp->rq_ring),
		.rq_cap = qp->srq != NULL ? 0 : qp->rq_ring.cap,
		.orq = qp->orq != NULL ? uiw_ring_count(&qp->orq_ring) : 0, .ord = qp->ord,
		.irq = qp->irq != NULL ? uiw_ring_count(&qp->irq_ring) + uiw_ring_count(&qp->irq_sent_ring) : 0,
		.ird = qp->ird };
}

const char *uiw_qp_state_name(enum uiw_qp_state s)
{
	static const char *const names[] = { [UIW_QPS_IDLE] = "IDLE", [UIW_QPS_RTS] = "RTS",
					     [UIW_QPS_CLOSING] = "CLOSING",
					     [UIW_QPS_TERMINATE] = "TERMINATE", [UIW_QPS_ERROR] = "ERROR" };

	return (unsigned)s < sizeof(names) / sizeof(names[0]) ? names[s] : "?";
}
const struct uiw_term_info *uiw_qp_term_tx(const struct uiw_qp *qp) { return &qp->term_tx; }

/* ---- The MPA connection under the QP. ---- */

static void on_established(void *user, struct uiw_mpa_conn *c, const struct uiw_mpa_info *n)
{
	struct uiw_qp *qp = user;

	/* RFC 7306 adds the Atomic Response queue, where both ends announced it. */
	qp->ext = n->ext;
	qp->ddp.nq = (n->ext & UIW_MPA_EXT_RFC7306) ? UIW_RDMAP_QUEUES_EXT : UIW_RDMAP_QUEUES;
	/* From here ULPDUs go MPA -> DDP -> uiw_qp_rx, whoever owns the connection's events. */
	uiw_ddp_stream_attach(&qp->ddp, c);
	qp->ord = n->ord < UIW_MPA_IRD_ORD_MAX ? n->ord : UIW_MPA_IRD_ORD_MAX;
	qp->ird = n->ird < UIW_MPA_IRD_ORD_MAX ? n->ird : UIW_MPA_IRD_ORD_MAX;
	if (qp->orq == NULL) {
		qp->orq = calloc(uiw_ring_slots(qp->ord), sizeof(*qp->orq));
		qp->irq = calloc(uiw_ring_slots(qp->ird), sizeof(*qp->irq));
		qp->irq_sent = calloc(uiw_ring_slots(qp->ird), sizeof(*qp->irq_sent));
		if (qp->orq == NULL || qp->irq == NULL || qp->irq_sent == NULL) {
			uiw_qp_error(qp, "no memory for the Read queues");
			return;
		}
		uiw_ring_init(&qp->orq_ring, qp->ord);
		uiw_ring_init(&qp->irq_ring, qp->ird);
		uiw_ring_init(&qp->irq_sent_ring, qp->ird);
	}
	/* An RTR used up MSN 1 of its queue: ours as initiator, the peer's as responder. */
	if (n->rtr == UIW_MPA_RTR_SEND)
		uiw_ddp_stream_rtr(&qp->ddp, UIW_DDP_QN_SEND, n->initiator);
	if (n->rtr == UIW_MPA_RTR_READ)
		uiw_ddp_stream_rtr(&qp->ddp, UIW_DDP_QN_READ_REQ, n->initiator);
	if (qp->state == UIW_QPS_IDLE)
		qp->state = UIW_QPS_RTS;
	if (qp->events != NULL && qp->events->established != NULL)
		qp->events->established(qp->event_arg, qp, n);
	uiw_qp_pump(qp);
}

static void on_rejected(void *user, struct uiw_mpa_conn *c, const uint8_t *pd, uint16_t len)
{
	(void)c;
	(void)pd;
	(void)len;
	uiw_qp_error(user, "connection rejected by the peer");
}


static void on_closed(void *user, struct uiw_mpa_conn *c, int err)
{
	struct uiw_qp *qp = user;
	char why[96];

	snprintf(why, sizeof(why), "connection closed: %s", uiw_mpa_reason(c));
	uiw_ddp_stream_detach(&qp->ddp);
	if (err != 0 || qp->state != UIW_QPS_ERROR)
		qp_error_at(qp, err != 0 ? UIW_LOG_WARN : UIW_LOG_DEBUG, why);
	if (qp->events != NULL && qp->events->closed != NULL)
		qp->events->closed(qp->event_arg, qp);
}

const struct uiw_mpa_ops uiw_qp_mpa_ops = {
	.established = on_established, .rejected = on_rejected, .closed = on_closed,
};

struct uiw_ddp_stream *uiw_qp_stream(struct uiw_qp *qp)
{
	return &qp->ddp;
}
