/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * RDMAP (RFC 5040): queue pairs over one MPA connection each. The seven operations (Send,
 * Send with Invalidate, Send with Solicited Event, Send with SE and Invalidate, RDMA Write,
 * RDMA Read as Read Request plus Read Response, Terminate), the QP state machine, send and
 * receive queues, ORQ/IRQ bounded by the negotiated ORD/IRD, completion queues.
 *
 * Work requests carry local memory as address/length SGEs (the verbs layer translates
 * lkeys); remote memory is named by STag and TO. Everything runs in the polling thread.
 * Messages go out whole, one after another, so no two tagged or two untagged messages
 * ever interleave on the wire (WIRE.md §1.6).
 */
#ifndef UIW_RDMAP_H
#define UIW_RDMAP_H

#include <stdbool.h>
#include <stdint.h>

#include "ddp.h"
#include "rdmap_wire.h"
#include "uiw_lock.h"
#include "uiw_mbuf.h"
#include "uiw_ring.h"

#define UIW_MAX_SGE 6

#define UIW_RDMAP_COUNTERS(X)                                                                \
	X(tx_send, "Sends sent (all four kinds)")                                           \
	X(tx_write, "RDMA Writes sent")                                                      \
	X(tx_read_req, "Read Requests sent")                                                 \
	X(tx_read_resp, "Read Responses sent")                                               \
	X(rx_send, "Sends received")                                                         \
	X(rx_write, "RDMA Writes placed")                                                    \
	X(rx_read_req, "Read Requests taken")                                                \
	X(rx_read_resp, "Read Responses placed")                                             \
	X(tx_imm, "Immediate Data messages sent (RFC 7306; Writes with immediate data)")   \
	X(rx_imm, "Immediate Data messages received")                                       \
	X(tx_atomic, "Atomic Requests sent (RFC 7306)")                                     \
	X(rx_atomic, "Atomic Requests served")                                              \
	X(rx_atomic_resp, "Atomic Responses taken")                                         \
	X(term_tx, "Terminates sent")                                                        \
	X(term_rx, "Terminates received")                                                    \
	X(tx_lent_wait, "Sends and Writes whose completion waited for the peer's acknowledgement") \
	X(flushed, "work requests flushed by an error")                                      \
	X(tx_bad_lkey, "work requests failed: an SGE outside its lkey's region (or no access)") \
	X(tx_read_no_ord, "Reads failed: the peer's IRD (our ORD) is 0")                   \
	X(read_src_gone, "Read Responses cut short: the source deregistered or invalidated") \
	X(cq_overflow, "completions lost to a full CQ (the QP then went to error)")          \
	X(rx_wait, "Sends that found no receive posted and waited for one (recv_wait_ms)")  \
	X(rx_wait_expired, "of those, Terminated: no receive was posted in time")

#define UIW_RDMAP_C_(name, help) UIW_RDMAP_C_##name,
enum uiw_rdmap_counter { UIW_RDMAP_COUNTERS(UIW_RDMAP_C_) UIW_RDMAP_C__COUNT };
#undef UIW_RDMAP_C_

extern const struct uiw_counter_desc uiw_rdmap_counter_desc[UIW_RDMAP_C__COUNT];

enum uiw_qp_state {
	UIW_QPS_IDLE = 0,     /**< not connected yet */
	UIW_QPS_RTS,          /**< connected */
	UIW_QPS_CLOSING,      /**< orderly close under way */
	UIW_QPS_TERMINATE,    /**< a Terminate is being sent */
	UIW_QPS_ERROR,        /**< broken: work requests are flushed */
};

/* The order matters: the SE forms are two above the plain ones (lib/verbs fill_send()). */
enum uiw_wr_op {
	UIW_WR_SEND, UIW_WR_SEND_INV, UIW_WR_SEND_SE, UIW_WR_SEND_SE_INV, UIW_WR_WRITE, UIW_WR_READ,
	/* RFC 7306, on a QP whose connection both sides announced it for (uiw_qp_ext()). */
	UIW_WR_WRITE_IMM,         /**< an RDMA Write, then Immediate Data */
	UIW_WR_FETCH_ADD,         /**< sg[0]: 8 octets for the original value */
	UIW_WR_CMP_SWAP,
	/* uiwarp's own, where both sides announced it (UIW_MPA_EXT_SEND_IMM). */
	UIW_WR_SEND_IMM,          /**< a Send carrying imm; imm_se for the SE form */
};

/** Whether @p op waits for a response within the ORD (a Read or an atomic). */
static inline bool uiw_wr_op_orq(enum uiw_wr_op op)
{
	return op == UIW_WR_READ || op == UIW_WR_FETCH_ADD || op == UIW_WR_CMP_SWAP;
}

struct uiw_send_wr {
	uint64_t wr_id;
	enum uiw_wr_op op;
	bool signaled;
	struct uiw_sge sg[UIW_MAX_SGE];
	unsigned nsge;
	uint32_t rkey;            /**< Write: data sink; Read: data source */
	uint64_t remote_addr;
	uint32_t inv_stag;        /**< Send with Invalidate: the peer's STag to invalidate */
	uint32_t sink_stag;       /**< Read: the local region's STag (sg[0] lies in it) */
	uint64_t sink_to;         /**< Read: the tagged offset of sg[0].addr in that region */
	bool lkeys;               /**< check each sg[].lkey when the WR starts (verbs) */
	bool imm_se;              /**< Write or Send with immediate data: the SE form */
	uint32_t imm;             /**< the immediate value, network order as the verbs give it */
	uint64_t compare_add;     /**< fetch-and-add: the addend; compare-and-swap: the compare */
	uint64_t swap;            /**< compare-and-swap: the new value */
};

struct uiw_recv_wr {
	uint64_t wr_id;
	struct uiw_sge sg[UIW_MAX_SGE];
	unsigned nsge;
};

enum uiw_wc_status {
	UIW_WC_SUCCESS = 0,
	UIW_WC_LOC_LEN_ERR,       /**< a message longer than the receive buffer */
	UIW_WC_LOC_PROT_ERR,
	UIW_WC_WR_FLUSH_ERR,      /**< the QP went to error before this completed */
	UIW_WC_REM_ACCESS_ERR,    /**< the peer Terminated for a protection error */
	UIW_WC_REM_OP_ERR,        /**< the peer Terminated for another reason */
	UIW_WC_FATAL_ERR,
	UIW_WC_LOC_QP_OP_ERR,     /**< the WR cannot run on this QP (a Read with an ORD of 0) */
};

enum uiw_wc_op {
	UIW_WC_SEND, UIW_WC_RDMA_WRITE, UIW_WC_RDMA_READ, UIW_WC_RECV,
	UIW_WC_RECV_RDMA_WITH_IMM, UIW_WC_FETCH_ADD, UIW_WC_COMP_SWAP,
};

struct uiw_wc {
	uint64_t wr_id;
	enum uiw_wc_status status;
	enum uiw_wc_op op;
	uint32_t byte_len;
	uint32_t qp_num;
	uint32_t inv_stag;        /**< the STag a Send with Invalidate invalidated */
	bool with_inv, solicited, with_imm;
	uint32_t imm;             /**< Immediate Data's value (network order), with_imm */
};

/* CQs and SRQs may serve QPs of several engines, each pushing or taking from its own
 * thread: their rings are taken under their lock. */
struct uiw_cq {
	uiw_spinlock_t lock;
	struct uiw_wc *wc;             /**< uiw_ring_slots(cap) entries */
	struct uiw_ring ring;          /**< cap: the size asked for */
	bool armed, solicited_only;
	void (*notify)(void *arg, struct uiw_cq *cq);
	void *notify_arg;
	/** The first completion that found the CQ full (verbs: IBV_EVENT_CQ_ERR). The QP whose
	 *  completion was lost goes to error; so does each other QP that completes into it. */
	void (*overflowed)(void *arg, struct uiw_cq *cq);
	uint64_t overflow;             /**< completions lost */
};

/** @return 0, -EINVAL (cap 0 or above UIW_RING_CAP_MAX), -ENOMEM. */
int uiw_cq_init(struct uiw_cq *cq, uint32_t cap);
void uiw_cq_fini(struct uiw_cq *cq);
/** Whether completions wait in @p cq (engines may be adding some meanwhile). */
bool uiw_cq_pending(struct uiw_cq *cq);
/** Takes up to @p n completions. @return how many. */
unsigned uiw_cq_poll(struct uiw_cq *cq, struct uiw_wc *wc, unsigned n);
/** Arms the CQ: the next completion (the next solicited one with @p solicited_only)
 *  calls cq->notify once. */
void uiw_cq_arm(struct uiw_cq *cq, bool solicited_only);

/** A shared receive queue: receives any of its QPs may take, in posting order. */
struct uiw_srq {
	uiw_spinlock_t lock;
	struct uiw_recv_wr *wr;        /**< uiw_ring_slots(cap) entries */
	struct uiw_ring ring;
	uint32_t limit;                /**< armed: notify when fewer than this are posted */
	void (*limit_reached)(void *arg, struct uiw_srq *srq);
	void *limit_arg;
};

/** @return 0, -EINVAL (cap 0 or above UIW_RING_CAP_MAX), -ENOMEM. */
int uiw_srq_init(struct uiw_srq *srq, uint32_t cap);
void uiw_srq_fini(struct uiw_srq *srq);
/** @return 0, -EINVAL (too many SGEs), -ENOMEM (full). */
int uiw_srq_post(struct uiw_srq *srq, const struct uiw_recv_wr *wr);

struct uiw_qp;

/** What a QP tells its owner besides completions. Any slot may be NULL. */
struct uiw_qp_events {
	/** The connection is in full operation and the QP in RTS. */
	void (*established)(void *arg, struct uiw_qp *qp, const struct uiw_mpa_info *info);
	/** The QP moved to ERROR: @p why says how (a Terminate in or out, a reset, a close). */
	void (*error)(void *arg, struct uiw_qp *qp, const char *why);
	/** The connection is gone; the QP may be destroyed from here on. */
	void (*closed)(void *arg, struct uiw_qp *qp);
};

struct uiw_qp_attr {
	uint32_t qp_num, pd;
	uint32_t sq_size, rq_size;     /**< work requests outstanding at once */
	struct uiw_cq *send_cq, *recv_cq;
	struct uiw_srq *srq;           /**< receives come from here instead (rq_size unused) */
	struct uiw_stag_table *stags;
	const struct uiw_qp_events *events;
	void *event_arg;
};

int uiw_qp_create(struct uiw_qp **out, const struct uiw_qp_attr *attr);
void uiw_qp_destroy(struct uiw_qp *qp);

/** The QP lets go of its connection without touching it, for an owner above that closes
 *  the connection itself and keeps hearing its events (rdma_cm's id). */
void uiw_qp_detach(struct uiw_qp *qp);

/**
 * A Send (or Immediate Data) that finds no receive posted waits up to @p ms for one, held
 * in TCP's receive queue with everything behind it (the window closes as it fills), as
 * InfiniBand's RNR retry lets a sender run ahead of the receives. 0, the default, answers
 * it at once with the Terminate of RFC 5041 §7.2 (no buffer), as does the end of the wait.
 */
void uiw_qp_set_recv_wait(struct uiw_qp *qp, unsigned ms);

/**
 * The MPA callbacks of a connection that carries a QP (pass them, with the QP as user, to
 * uiw_mpa_connect() or uiw_mpa_accept(), or call them from the owner's own). On
 * established the QP takes the negotiated IRD/ORD and the RTR that used up MSN 1, binds its
 * DDP stream as the connection's data path (ULPDUs then go MPA -> DDP -> RDMAP directly)
 * and moves to RTS.
 */
extern const struct uiw_mpa_ops uiw_qp_mpa_ops;

/** The QP's DDP stream (a harness feeds it ULPDUs through uiw_ddp_mpa_ulp). */
struct uiw_ddp_stream *uiw_qp_stream(struct uiw_qp *qp);

/** @return 0, -EINVAL (bad WR: too many SGEs, a Read with other than one SGE), -ENOMEM
 *  (queue full). In TERMINATE or ERROR a WR is taken and completes at once with
 *  UIW_WC_WR_FLUSH_ERR. */
int uiw_qp_post_send(struct uiw_qp *qp, const struct uiw_send_wr *wr);
int uiw_qp_post_recv(struct uiw_qp *qp, const struct uiw_recv_wr *wr);

/**
 * A send queue entry: the work request and how it ended. A Send's or Write's SGE memory is
 * lent to the layers below while it goes out (zero-copy transmit): @p lend counts the mbufs
 * that refer to it, plus one while RDMAP is still sending it, and the entry completes only
 * once @p done is set and the count is back to 0, when the peer has acknowledged every
 * octet and no frame refers to the memory any more (RFC 5040 §5.1: the buffer is the
 * application's again on completion).
 */
struct uiw_sq_entry {
	struct uiw_send_wr wr;
	bool done;
	enum uiw_wc_status status;
	uint32_t len;
	struct uiw_qp *qp;
	struct uiw_lend lend;          /* .dma: the region's DMA mapping, on a DMA port */
};

/** The send queue ring: [comp, tx) sent or in flight, [tx, tail) waiting; indices run mod
 *  2^32, slots by mask (the ring is a power of two); at most cap entries at once. */
struct uiw_sq {
	struct uiw_sq_entry *e;
	uint32_t cap, mask, comp, tx, tail;
};

/*
 * Posting without sending (the verbs fast path): take the slot uiw_sq_slot() gives (NULL:
 * the queue is full; the caller checks the WR as uiw_qp_post_send() would), fill its .wr,
 * and queue it with uiw_sq_commit(); after a batch, uiw_qp_posted() says whether the QP has
 * work to send, which uiw_qp_kick() starts (later, from the progress loop).
 */
struct uiw_sq *uiw_qp_sq(struct uiw_qp *qp);

static inline struct uiw_sq_entry *uiw_sq_slot(struct uiw_sq *sq)
{
	return sq->tail - sq->comp == sq->cap ? NULL : &sq->e[sq->tail & sq->mask];
}

/* @p e: the slot uiw_sq_slot() gave, not computed again from the tail. */
static inline void uiw_sq_commit(struct uiw_sq *sq, struct uiw_sq_entry *e)
{
	e->done = false;
	e->status = UIW_WC_SUCCESS;
	e->len = 0;
	sq->tail++;
}

bool uiw_qp_posted(struct uiw_qp *qp);
void uiw_qp_kick(struct uiw_qp *qp);

/** Orderly close: after what is queued, FIN; flushes what is left. */
void uiw_qp_disconnect(struct uiw_qp *qp);

/** Sends a Terminate for an error the owner found (RFC 5040 §7) and moves to ERROR. */
void uiw_qp_terminate(struct uiw_qp *qp, uint8_t layer, uint8_t etype, uint8_t code,
		      const char *why);

enum uiw_qp_state uiw_qp_state(const struct uiw_qp *qp);
/** The MPA connection under the QP (NULL before it is established and after it is gone). */
struct uiw_mpa_conn *uiw_qp_conn(const struct uiw_qp *qp);
/** Read Requests the QP may have outstanding (the negotiated ORD). */
uint16_t uiw_qp_ord(const struct uiw_qp *qp);
const uint64_t *uiw_qp_counters(const struct uiw_qp *qp);
/** How full a QP's queues are (for status listings). */
struct uiw_qp_depths {
	uint32_t sq, sq_cap;      /**< work requests posted and not completed; capacity */
	uint32_t rq, rq_cap;      /**< receives posted (0/0 on an SRQ's QP) */
	uint32_t orq, ord;        /**< Reads and atomics outstanding; the ORD */
	uint32_t irq, ird;        /**< requests taken, responses not yet acknowledged; the IRD */
};
void uiw_qp_depths(const struct uiw_qp *qp, struct uiw_qp_depths *d);
const char *uiw_qp_state_name(enum uiw_qp_state s);

/** The RDMAP extensions both ends announced (UIW_MPA_EXT_*; 0 before establishment). */
uint32_t uiw_qp_ext(const struct uiw_qp *qp);
/** Why the QP left RTS (a Terminate in or out and its cause, a reset, a close); "" before. */
const char *uiw_qp_why(const struct uiw_qp *qp);

/** The last Terminate received: layer, etype, code as the peer sent them, and whether its
 *  control word looked like siw's bit order (WIRE.md §1.6). */
struct uiw_term_info {
	bool valid, siw_order;
	uint8_t layer, etype, code;
};
const struct uiw_term_info *uiw_qp_term_rx(const struct uiw_qp *qp);
const struct uiw_term_info *uiw_qp_term_tx(const struct uiw_qp *qp);

#endif
