/* SPDX-License-Identifier: BSD-3-Clause */
/* RDMAP internals shared by rdmap_qp.c, rdmap_tx.c and rdmap_rx.c. */
#ifndef UIW_RDMAP_INTERNAL_H
#define UIW_RDMAP_INTERNAL_H

#include <assert.h>

#include "rdmap.h"

/* Read Responses sent in a row while Sends or Writes wait (as siw). */
#define IRQ_BURST 4
/* Terminate: control, DDP segment length, a DDP header, an RDMAP Read Request body. */
#define TERM_BODY_MAX (4 + 2 + 18 + 28)

struct orq_entry {
	uint32_t sq_idx;
	bool atomic;              /* an Atomic Request (RFC 7306): req_id names it */
	uint32_t req_id;
	uint32_t sink_stag;
	uint64_t sink_to;
	struct uiw_sge sink;
	uint32_t placed;
};

/* A Read Request taken: its source is named, not pointed to, and checked again each time
 * more of the response is built (the region may be deregistered or invalidated meanwhile). */
struct irq_entry {
	bool atomic;              /* an Atomic Request done: its response carries orig */
	uint32_t req_id;
	uint64_t orig;
	uint32_t sink_stag;
	uint64_t sink_to;
	uint32_t src_stag;
	uint64_t src_to;
	uint32_t size;
};

enum tx_kind { TX_IDLE, TX_SQ, TX_IRQ, TX_TERM };

struct uiw_qp {
	uint32_t qp_num, pd;
	enum uiw_qp_state state;
	struct uiw_stag_table *stags;
	struct uiw_ddp_stream ddp;         /* the connection, MSNs and MOs, the message sent */
	struct uiw_cq *scq, *rcq;
	const struct uiw_qp_events *events;
	void *event_arg;
	uint64_t c[UIW_RDMAP_C__COUNT];

	struct uiw_sq sq;
	struct uiw_recv_wr *rq;            /* uiw_ring_slots(rq_size) entries */
	struct uiw_ring rq_ring;
	struct uiw_srq *srq;
	struct uiw_recv_wr rx_cur;         /* the receive the Send under way fills */
	bool rx_have_cur;
	uint8_t rx_cur_op;                 /* the RDMAP opcode of the Send under way */
	uint32_t ext;                      /* RFC 7306 announced by both ends (UIW_MPA_EXT_*) */
	uint64_t recv_wait_ns;             /* a Send finding no receive waits this long (0: no) */
	uint64_t rx_wait_until;            /* one waits until then (0: none waits) */
	uint32_t rx_write_acc;             /* octets of the Write message under way */
	uint32_t rx_write_last;            /* octets of the last whole Write (for Immediate Data) */
	uint32_t atomic_id;                /* the next Atomic Request's identifier */
	/* The ORQ and the IRQ are sized by the ORD and IRD the connection negotiated, when it
	 * is established (not for the 128 they may be: 10 KiB a QP that way). */
	struct orq_entry *orq;
	struct uiw_ring orq_ring;          /* capacity ord */
	uint16_t ord;
	struct irq_entry *irq;
	struct uiw_ring irq_ring;          /* capacity ird */
	/* Read Responses all queued but not yet acknowledged: each still counts against the
	 * IRD (a requester within its ORD has acknowledged a response before it asks again,
	 * so only a peer that never reads them can run into this). Their TCP marks. */
	uint32_t *irq_sent;
	struct uiw_ring irq_sent_ring;
	uint16_t ird;

	/* Transmit: the message under way (messages go out whole, one after another). */
	enum tx_kind tx_kind;
	uint8_t tx_phase;                  /* a Write with immediate data: 1 once the Write is out */
	bool destroying;                   /* lent memory coming back completes nothing */
	bool in_lent_back;                 /* completing from inside TCP's free of acked mbufs */
	bool cq_lost;                      /* a completion was lost there: Terminate next pump */
	unsigned irq_burst;
	uint8_t term_body[TERM_BODY_MAX];
	uint32_t term_len;
	bool term_pending;

	struct uiw_term_info term_rx, term_tx;
	char why[96];
};

static_assert((UIW_MPA_IRD_ORD_MAX & (UIW_MPA_IRD_ORD_MAX - 1)) == 0,
	      "the ORQ and IRQ arrays are their rings' slots");

static inline void qp_count(struct uiw_qp *qp, enum uiw_rdmap_counter k)
{
	qp->c[k]++;
}

/* rdmap_qp.c */
void uiw_qp_cq_push(struct uiw_qp *qp, struct uiw_cq *cq, const struct uiw_wc *wc);
void uiw_qp_complete_sq(struct uiw_qp *qp);
void uiw_qp_error(struct uiw_qp *qp, const char *why);
bool uiw_qp_take_recv(struct uiw_qp *qp);
int uiw_qp_recv_wait(struct uiw_qp *qp);

/* rdmap_tx.c */
void uiw_qp_pump(struct uiw_qp *qp);
void uiw_qp_send_terminate(struct uiw_qp *qp, uint8_t layer, uint8_t etype, uint8_t code,
		       const struct uiw_mpa_ulpdu *u, const struct uiw_ddp_seg *s, bool rdmap_hdr,
		       const char *why);

/* rdmap_rx.c: the segments the QP's DDP stream hands up. */
int uiw_qp_rx(void *arg, const struct uiw_mpa_ulpdu *u, const struct uiw_ddp_seg *s,
	  enum uiw_ddp_parse pr);

#endif
