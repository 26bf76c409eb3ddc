/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * MPA connections (RFC 5044, RFC 6581) over the TCP engine, for DDP above.
 *
 * Set-up: the initiator sends a Request and waits for the Reply; the responder hands a
 * valid Request to its owner, who accepts or rejects it. Revision 1 and 2 (IRD/ORD,
 * peer-to-peer mode with a Send, Write or Read RTR), CRC and Markers each way as the
 * M bits say, private data with a cap. In full operation a ULPDU goes out as one FPDU in
 * one TCP segment; received FPDUs come up as views of the mbufs.
 *
 * Rules from the wire (WIRE.md §1.5): the initiator sends nothing after its Request until
 * the Reply; the responder sends no FPDU until it has received one (RFC 5044 §7.1.2), so
 * its sends are held until then; the initiator takes FPDUs right behind the Reply, even in
 * the same segment. MPA errors answer with a Terminate (layer LLP) where one may be sent,
 * then close.
 *
 * Everything runs in the thread that polls the TCP engine; uiw_mpa_run() handles timeouts.
 */
#ifndef UIW_MPA_H
#define UIW_MPA_H

#include <stdbool.h>
#include <stdint.h>

#include <rte_mempool.h>

#include "mpa_deframe.h"
#include "mpa_rr.h"
#include "tcp.h"
#include "uiw_config.h"
#include "uiw_counters.h"

#define UIW_MPA_COUNTERS(X)                                                                  \
	X(req_tx, "MPA Requests sent")                                                       \
	X(req_rx, "MPA Requests received")                                                   \
	X(rep_tx, "Replies sent accepting")                                                  \
	X(rep_rx, "Replies received accepting")                                              \
	X(reject_tx, "Replies sent rejecting (R=1)")                                         \
	X(reject_rx, "Replies received rejecting (R=1)")                                     \
	X(established, "connections in full operation")                                     \
	X(bad_key, "Request or Reply with a wrong key")                                      \
	X(bad_rev, "Request or Reply with a revision other than 1 or 2")                     \
	X(bad_pd_len, "private data over the cap, or too short for IRD/ORD")                 \
	X(bad_reply, "Reply not acceptable (Markers refused, revision raised, IRD, RTR)")    \
	X(markers_refused, "Requests rejected: Markers asked for and mpa_markers_ok=0")      \
	X(early_data, "octets after a Request before the Reply (RFC 5044 §7.1.2)")           \
	X(timeout, "negotiations given up: no Request, Reply, accept, RTR or first FPDU in time") \
	X(rx_coalesced_octets, "octets of small segments copied into held mbufs (closed connections)") \
	X(rx_crc_with_sum, "FPDUs whose CRC TCP took in its checksum's pass (closed connections)") \
	X(pending_refused, "connections reset: the listener's backlog of pending Requests was full") \
	X(peer_gone, "peer closed or reset during negotiation")                              \
	X(rtr_tx, "RTRs sent (peer-to-peer)")                                                \
	X(rtr_rx, "RTRs received (peer-to-peer)")                                            \
	X(rtr_bad, "first FPDU was not the negotiated RTR")                                  \
	X(fpdu_tx, "FPDUs sent")                                                             \
	X(fpdu_rx, "FPDUs received")                                                         \
	X(fpdu_held, "FPDUs held until the initiator's first FPDU (responder)")              \
	X(fpdu_run, "FPDUs sent in runs, queued to TCP together (uiw_mpa_run_close())")     \
	X(held_retry, "held FPDUs TCP had no room for when released: kept in order, tried again") \
	X(held_lost, "held FPDUs that could not be sent before the connection closed")      \
	X(crc_err, "FPDUs with a CRC mismatch (Terminate LLP 0x02)")                         \
	X(marker_err, "Markers not pointing to their FPDU (Terminate LLP 0x03)")             \
	X(term_tx, "Terminates sent for MPA errors")                                         \
	X(tx_lent_octets, "payload octets sent from the caller's memory, not copied")        \
	X(tx_gathered, "FPDUs queued as one mbuf around the caller's memory (TCP copies each)") \
	X(tx_nombuf, "sends refused: no mbuf")                                               \
	X(tx_slabbed, "FPDUs built side by side in a slab, for TSO frames of few pieces")     \
	X(tx_slab_none, "FPDUs built alone: no slab free (the port has TSO)")                \
	X(tx_starved, "sends refused with nothing in flight: retried by the poll")           \
	X(rx_nomem, "streams stopped: no memory to join a ULPDU")

#define UIW_MPA_C_(name, help) UIW_MPA_C_##name,
enum uiw_mpa_counter { UIW_MPA_COUNTERS(UIW_MPA_C_) UIW_MPA_C__COUNT };
#undef UIW_MPA_C_

extern const struct uiw_counter_desc uiw_mpa_counter_desc[UIW_MPA_C__COUNT];

/** RTR types (RFC 6581 §6), as a mask where several are offered. */
enum uiw_mpa_rtr {
	UIW_MPA_RTR_NONE = 0,
	UIW_MPA_RTR_SEND = 1,   /**< zero-length Send (QN 0, MSN 1) */
	UIW_MPA_RTR_WRITE = 2,  /**< zero-length RDMA Write to STag 1 */
	UIW_MPA_RTR_READ = 4,   /**< zero-length Read Request (QN 1, MSN 1), source STag 1 */
};

/** The largest IRD or ORD this stack takes (as siw: 128). */
#define UIW_MPA_IRD_ORD_MAX 128

/** What one side asks for or agrees to. */
struct uiw_mpa_params {
	uint8_t rev;              /**< 1 or 2 */
	bool crc;                 /**< ask for CRC */
	bool markers;             /**< ask the peer for Markers */
	bool markers_ok;          /**< send Markers when asked; else reject such a peer */
	bool p2p;                 /**< initiator: ask for peer-to-peer mode (rev 2) */
	uint8_t rtr;              /**< enum uiw_mpa_rtr mask: offered, or accepted */
	uint16_t ird, ord;
	uint16_t pd_max;          /**< largest private data taken from the peer */
	uint32_t timeout_ms;      /**< initiator: for the Reply; responder: for the application's
				   accept or reject (the time an initiator waits for a Reply) */
	uint32_t request_timeout_ms; /**< responder: for the Request, then the RTR or the
				      initiator's first FPDU while ours wait */
	uint32_t first_delay_us;  /**< initiator: hold FPDUs this long after the Reply (siw) */
	const uint8_t *pd;        /**< our private data (copied) */
	uint16_t pd_len;
	uint32_t ext;             /**< RDMAP extensions offered (UIW_MPA_EXT_*, docs/MPA.md) */
	bool tx_runs;             /**< FPDUs may go in runs (struct uiw_mpa_run) */
};

/** The connection as negotiated. */
struct uiw_mpa_info {
	bool initiator;
	uint8_t rev;
	bool crc;
	bool markers_tx;          /**< we put Markers in what we send */
	bool markers_rx;          /**< the peer puts Markers in what it sends */
	bool p2p;
	enum uiw_mpa_rtr rtr;     /**< the RTR exchanged (its MSN 1 is used up), or NONE */
	uint16_t ird;             /**< Read Requests from the peer we serve at once */
	uint16_t ord;             /**< Read Requests we may have outstanding */
	uint32_t mulpdu;          /**< largest ULPDU uiw_mpa_send() takes */
	const uint8_t *pd;        /**< the peer's private data (valid during the callback) */
	uint16_t pd_len;
	uint32_t ext;             /**< RDMAP extensions both sides announced (UIW_MPA_EXT_*) */
};

struct uiw_mpa;
struct uiw_mpa_conn;

/** What MPA tells the layer above. Any slot may be NULL. */
struct uiw_mpa_ops {
	/** Responder: a valid Request arrived (@p ctx is the listener's). Answer now or
	 *  later with uiw_mpa_accept() or uiw_mpa_reject(). @p req->pd is valid during the call. */
	void (*request)(void *ctx, struct uiw_mpa_conn *c, const struct uiw_mpa_rr_info *req);
	/** Full operation: uiw_mpa_send() works (a responder's sends are held until the
	 *  initiator's first FPDU arrives). */
	void (*established)(void *user, struct uiw_mpa_conn *c, const struct uiw_mpa_info *info);
	/** Initiator: the responder said R=1, with its private data. closed follows. */
	void (*rejected)(void *user, struct uiw_mpa_conn *c, const uint8_t *pd, uint16_t pd_len);
	/** A ULPDU arrived. Return nonzero when the connection was closed or aborted. */
	int (*ulpdu)(void *user, struct uiw_mpa_conn *c, const struct uiw_mpa_ulpdu *u);
	/** Send space was freed. */
	void (*writable)(void *user, struct uiw_mpa_conn *c);
	/** In full operation (or closing), the peer's FIN came, after every FPDU before it
	 *  was taken: the peer has closed, the connection now closes our side too, and closed
	 *  follows once TCP is done with it (which waits for the peer's ACK of our FIN). */
	void (*peer_closed)(void *user, struct uiw_mpa_conn *c);
	/** The connection is gone (uiw_mpa_reason() says why while in this call): 0 after an
	 *  orderly close, -ECONNREFUSED (TCP refused, or R=1), -ETIMEDOUT, -ECONNRESET,
	 *  -EPROTO (an MPA rule broken, either side), -ENOMEM. The pointer is invalid after. */
	void (*closed)(void *user, struct uiw_mpa_conn *c, int err);
};

/** A connection's data path in full operation: where ULPDUs and send space go. */
struct uiw_mpa_ulp {
	/** A ULPDU arrived. Return nonzero when the connection was closed or aborted. */
	int (*ulpdu)(void *arg, struct uiw_mpa_conn *c, const struct uiw_mpa_ulpdu *u);
	/** Send space was freed. */
	void (*writable)(void *arg, struct uiw_mpa_conn *c);
};

/**
 * From now on ULPDUs and send space go to @p ulp with @p arg instead of the ops' ulpdu and
 * writable (NULL: back to the ops). The layer above binds its data path here once the
 * connection is established, so the owner of the connection's events (rdma_cm's id) is
 * not on the per-ULPDU path.
 */
void uiw_mpa_bind_ulp(struct uiw_mpa_conn *c, const struct uiw_mpa_ulp *ulp, void *arg);

/** Creates MPA over @p tcp; FPDUs are built in mbufs from @p pool. @return 0 or -ENOMEM. */
int uiw_mpa_create(struct uiw_mpa **out, struct uiw_tcp *tcp, struct rte_mempool *pool);

/** Whether uiw_mpa_send_lent() lends (the default) or copies; with @p dma (a port whose
 *  NIC reads frames by DMA), only memory whose lender names its DMA mapping (a struct
 *  uiw_lend with .dma set) is lent. */
void uiw_mpa_set_lend(struct uiw_mpa *m, bool on, bool dma);

/** Where TCP sends TSO frames: @p slabs, a pool of large mbufs, in which FPDUs are built
 *  side by side, each queued as an indirect mbuf on its slab, so that a frame of many
 *  FPDUs is a header and one piece (or two, across slabs) instead of a piece an FPDU.
 *  NULL: each FPDU in an mbuf of its own. */
void uiw_mpa_set_slabs(struct uiw_mpa *m, struct rte_mempool *slabs);

/** Tags @p m with what owns it (the stack engine it is part of), for uiw_mpa_owner(). */
void uiw_mpa_set_owner(struct uiw_mpa *m, void *owner);

/** The owner tag of the MPA instance @p c belongs to (NULL if never set). */
void *uiw_mpa_owner(const struct uiw_mpa_conn *c);

/** Aborts every connection (no callbacks) and frees the engine. */
void uiw_mpa_destroy(struct uiw_mpa *m);

/** Fills @p p from the mpa_* keys of @p cfg (no private data). */
void uiw_mpa_params_from_config(struct uiw_mpa_params *p, const struct uiw_config *cfg);

/** Listens on @p port; @p p gives the cap and timeout for Requests. @return 0 or a TCP error. */
int uiw_mpa_listen(struct uiw_mpa *m, uint16_t port, unsigned backlog,
		   const struct uiw_mpa_params *p, const struct uiw_mpa_ops *ops, void *ctx);

void uiw_mpa_unlisten(struct uiw_mpa *m, uint16_t port);

/**
 * Connects to @p dst:@p port and sends a Request once TCP is up.
 * @return 0 and *out, -EINVAL (private data over 512 octets with the IRD/ORD words, bad
 *         revision), or a TCP error.
 */
int uiw_mpa_connect(struct uiw_mpa *m, uint32_t dst, uint16_t port,
		    const struct uiw_mpa_params *p, const struct uiw_mpa_ops *ops, void *user,
		    uint64_t now, struct uiw_mpa_conn **out);

/**
 * Accepts a Request with our policy @p p (CRC, Markers, IRD/ORD, RTR types, private data)
 * and sends the Reply. @p ops and @p user take over the connection.
 * @return 0, -EINVAL (private data too long), -ENOTCONN (no Request waiting).
 */
int uiw_mpa_accept(struct uiw_mpa_conn *c, const struct uiw_mpa_params *p,
		   const struct uiw_mpa_ops *ops, void *user);

/** Hands the connection's events to @p ops and @p user from now on (a responder's owner
 *  that takes a Request before it accepts it). */
void uiw_mpa_set_user(struct uiw_mpa_conn *c, const struct uiw_mpa_ops *ops, void *user);

/** Rejects a Request: Reply with R=1 and @p pd, then close. closed follows. */
int uiw_mpa_reject(struct uiw_mpa_conn *c, const uint8_t *pd, uint16_t pd_len);

/**
 * Sends one ULPDU, the concatenation of @p iov, as one FPDU.
 * @return 0, -EMSGSIZE (over MULPDU), -ENOBUFS (no send space or no mbuf: try after
 *         writable), -ENOTCONN (not in full operation).
 */
int uiw_mpa_send(struct uiw_mpa_conn *c, const struct uiw_mpa_iov *iov, unsigned n);

/** Pieces shorter than this are copied even when lent: an mbuf of their own costs more. */
#define UIW_MPA_LEND_MIN 256

/**
 * Sends one ULPDU as uiw_mpa_send() does, lending the pieces @p iov[ncopy] to @p iov[n-1]
 * instead of copying them (zero-copy transmit): each lent piece of at least
 * UIW_MPA_LEND_MIN octets is queued as an external mbuf on the caller's memory sharing
 * @p lend, whose count goes up by one per mbuf that refers to it and down as each is
 * freed (the TCP send queue frees its own when the peer acknowledges the octets, the PMD
 * when it has copied the frame). The caller keeps its memory unchanged until the count
 * falls to what it holds itself (lend->free_cb when it reaches 0). Without @p lend, with
 * Markers, or with lending turned off (config tx_zero_copy=0), the pieces are copied.
 */
int uiw_mpa_send_lent(struct uiw_mpa_conn *c, const struct uiw_mpa_iov *iov, unsigned n,
		      unsigned ncopy, struct rte_mbuf_ext_shared_info *lend);

/** The most FPDUs in a run (struct uiw_mpa_run). */
#define UIW_MPA_RUN_MAX 64

/**
 * A run of FPDUs: built one after another, their payload copied, each into an mbuf of its
 * own or (where TSO takes them) side by side in a slab, and queued to TCP together, with
 * the checks each FPDU sent alone makes (the connection's state, the room TCP has) made
 * once for the run.
 */
struct uiw_mpa_run {
	uint32_t room;       /* octets of FPDUs TCP takes */
	uint32_t left;       /* FPDUs it takes */
	uint32_t wire_max;   /* the longest FPDU an mbuf holds */
	bool slab;           /* FPDUs built in TSO's slabs (uiw_mpa_set_slabs()) */
	uint32_t bytes;      /* octets built */
	unsigned n;          /* FPDUs built */
	struct rte_mbuf *m[UIW_MPA_RUN_MAX];
};

/**
 * Opens a run on @p c, for a message whose pieces would be lent (@p lend) or copied.
 * @return 1; 0 where TCP has no room for a run now (none at all, or the connection's
 *         first data: uiw_tcp_run_room()); -1 where this message's FPDUs go one at a time
 *         (uiw_mpa_send_lent()): runs turned off (mpa_tx_runs=0), the connection not in
 *         full operation or holding its FPDUs, Markers, memory lent.
 */
int uiw_mpa_run_open(struct uiw_mpa_conn *c, struct uiw_mpa_run *r, bool lend);

/**
 * Builds the ULPDU @p iov (@p ulen octets, at most MULPDU) as the run's next FPDU.
 * @return 0, or -ENOBUFS when the run is full, TCP takes no more, or no mbuf was had
 *         (nothing built: the caller closes the run, and sends the ULPDU alone).
 */
int uiw_mpa_run_add(struct uiw_mpa_conn *c, struct uiw_mpa_run *r,
		    const struct uiw_mpa_iov *iov, unsigned n, uint32_t ulen);

/**
 * Queues the run's FPDUs to TCP. @return how many were sent: all, or none (their mbufs
 * freed; the caller sends the first of them alone, which reports what refused it).
 */
unsigned uiw_mpa_run_close(struct uiw_mpa_conn *c, struct uiw_mpa_run *r);

/**
 * Takes back what the connection holds of lent memory (in the TCP send queue): it
 * is copied into mbufs of the pool, and the lenders' counts fall. Without mbufs for that,
 * the connection is reset (dropping the references). @return 0, or -ENOMEM after a reset.
 */
int uiw_mpa_unlend(struct uiw_mpa_conn *c);

/** Whether a ULPDU of @p ulen octets fits in the send space now. */
bool uiw_mpa_can_send(const struct uiw_mpa_conn *c, uint32_t ulen);

/** A mark just past every FPDU sent or held so far, for uiw_mpa_acked(). */
uint32_t uiw_mpa_tx_mark(const struct uiw_mpa_conn *c);
/** Whether the peer acknowledged every octet before @p mark (true once the connection is
 *  gone: nothing of it waits any more). */
bool uiw_mpa_acked(const struct uiw_mpa_conn *c, uint32_t mark);

/**
 * Sends a Terminate (RFC 5040 §4.8) for an LLP error @p code (UIW_TERM_MPA_*), then closes.
 * The layers above build their own Terminates and send them with uiw_mpa_send().
 */
void uiw_mpa_terminate_llp(struct uiw_mpa_conn *c, uint8_t code, const char *why);

/** Closes after what was sent (FIN). closed follows. */
void uiw_mpa_close(struct uiw_mpa_conn *c);

/**
 * The ULPDU the data path just returned UIW_MPA_ULPDU_WAIT for, and everything behind it,
 * stay in the receive queue (counted in TCP's window) and are handed on again at @p at,
 * or sooner after uiw_mpa_rx_kick(). Call it from that ulpdu callback.
 */
void uiw_mpa_rx_wait(struct uiw_mpa_conn *c, uint64_t at);
/** What waits is handed on again in the next uiw_mpa_run() (nothing when none waits). */
void uiw_mpa_rx_kick(struct uiw_mpa_conn *c);
/** Whether the data path may still wait: the connection is in full operation. A FIN from
 *  the peer behind what waits goes up (ops->closed follows) only after it was taken. */
bool uiw_mpa_rx_may_wait(const struct uiw_mpa_conn *c);

/** Resets at once; closed follows from within this call. */
void uiw_mpa_abort(struct uiw_mpa_conn *c, const char *why);

/** Timeouts; call from the polling loop. */
void uiw_mpa_run(struct uiw_mpa *m, uint64_t now);

/** Why the connection failed or closed, for logs (never NULL). */
const char *uiw_mpa_reason(const struct uiw_mpa_conn *c);

const struct uiw_mpa_info *uiw_mpa_info(const struct uiw_mpa_conn *c);
struct uiw_tcp_conn *uiw_mpa_tcp(const struct uiw_mpa_conn *c);
const uint64_t *uiw_mpa_counters(const struct uiw_mpa *m);
unsigned uiw_mpa_conn_count(const struct uiw_mpa *m);

#endif
