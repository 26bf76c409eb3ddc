/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * The TCP engine (RFC 9293 with RFC 7323, RFC 2018/6675, RFC 5681/6582, RFC 6298, RFC 5961,
 * RFC 6528) for the layer above (MPA).
 *
 * One engine serves one stack instance (struct uiw_net). Everything runs in the thread that
 * calls uiw_tcp_poll(); no call blocks, none allocates outside set-up (TCBs, mbufs and the
 * connection table are sized by configuration).
 *
 * Ownership: uiw_tcp_send() consumes its mbuf in every case. The recv callback receives an
 * mbuf (chain) holding only payload and consumes it: the callee must free it. After the
 * closed callback the connection pointer is invalid.
 *
 * Errors are negative errno values.
 */
#ifndef UIW_TCP_H
#define UIW_TCP_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <rte_mbuf.h>

#include "net.h"
#include "uiw_config.h"
#include "uiw_counters.h"

#define UIW_TCP_COUNTERS(X)                                                                  \
	X(rx_segs, "segments received")                                                      \
	X(drop_short, "segment shorter than its header")                                     \
	X(drop_doff, "data offset below 5 or past the segment")                              \
	X(drop_cksum, "checksum wrong")                                                      \
	X(drop_opt, "malformed option (zero or bad length)")                                 \
	X(drop_no_conn, "no connection or listener (answered with RST unless RST)")          \
	X(drop_flags, "flags not valid for the state (SYN+FIN, SYN+RST, no ACK)")            \
	X(drop_bad_addr, "broadcast destination or bad source")                              \
	X(drop_out_of_window, "sequence outside the receive window (answered with ACK)")    \
	X(drop_paws, "timestamp older than TS.Recent (PAWS, RFC 7323 §5)")                   \
	X(drop_ack_unsent, "acknowledges data never sent (answered with ACK)")               \
	X(drop_backlog, "SYN dropped: listen backlog full")                                  \
	X(drop_table_full, "SYN dropped: connection table full")                             \
	X(syn_evicted, "half-open connection evicted for a new SYN: its SYN-ACK was unanswered") \
	X(syncookies_sent, "SYN answered with a cookie: the listen queue was full (RFC 4987 §3.6)") \
	X(syncookies_ok, "connection opened from a valid SYN cookie")                       \
	X(syncookies_bad, "ACK to a listener with a cookie that does not verify (answered with RST)") \
	X(drop_ooo_full, "out-of-order segment dropped: reassembly queue full")              \
	X(drop_rst_invalid, "RST outside the window, ignored (RFC 5961 §3)")                 \
	X(drop_syn_ack_bad, "SYN-ACK acknowledging the wrong sequence (answered with RST)")  \
	X(drop_rx_budget, "segments dropped unacknowledged: the connection's receive budget was spent while the stack was short of mbufs") \
	X(challenge_ack, "challenge ACKs sent (RFC 5961)")                                   \
	X(challenge_ack_limited, "challenge ACKs suppressed by the stack-wide limit")         \
	X(challenge_ack_conn_limited, "challenge ACKs suppressed: the connection sent one < 0.5 s ago") \
	X(rst_rx, "connections reset by the peer")                                           \
	X(rst_after_fin, "RSTs ending a close whose data were all acknowledged (CLOSING, LAST-ACK): complete") \
	X(rst_tx, "RSTs sent")                                                               \
	X(ooo_segs, "out-of-order segments queued")                                          \
	X(dup_segs, "segments entirely duplicate (answered with ACK)")                       \
	X(dup_acks, "duplicate ACKs received")                                               \
	X(retransmits, "segments retransmitted")                                             \
	X(fast_retransmits, "loss recoveries entered on duplicate ACKs or SACK")             \
	X(rto_expiries, "retransmission timeouts")                                           \
	X(persist_probes, "zero-window probes sent")                                         \
	X(window_updates, "window updates sent: the layer above let go of what held the window shut") \
	X(close_window_shut, "closed connections reset: the peer kept its window shut through every probe") \
	X(tail_loss_probes, "tail loss probes sent (RFC 8985 §7)")                            \
	X(tx_segs, "segments sent")                                                          \
	X(tx_tso_frames, "frames of many segments handed to the PMD to cut (TSO)")           \
	X(tx_over, "segments sent as frames over their queued mbuf's own buffer, not copied")  \
	X(tx_over_busy, "segments not sent over their queued mbuf: a frame over it still held") \
	X(tx_run_segs, "segments sent in a run of whole records on headers built once a pass") \
	X(rx_large, "segments received longer than the MSS (large receive: LRO, GSO frames)") \
	X(rx_joined, "segments joined to the one before them in their receive burst")          \
	X(tx_nombuf, "segments not sent: no mbuf (data retried the next pass)")                   \
	X(tx_record_wait, "sends held so as not to split a record (FPDU) at the window edge") \
	X(tx_port_wait, "sends held for the port's full TX queue (resumed the next pass)")   \
	X(conn_active, "connections opened actively")                                        \
	X(conn_passive, "connections accepted")                                              \
	X(conn_refused, "active opens refused by RST")                                       \
	X(conn_timeout, "connections given up after retransmissions")                        \
	X(conn_closed, "connections closed")

#define UIW_TCP_C_(name, help) UIW_TCP_C_##name,
enum uiw_tcp_counter { UIW_TCP_COUNTERS(UIW_TCP_C_) UIW_TCP_C__COUNT };
#undef UIW_TCP_C_

extern const struct uiw_counter_desc uiw_tcp_counter_desc[UIW_TCP_C__COUNT];

/** Per-connection counters. */
struct uiw_tcp_conn_stats {
	uint64_t bytes_in;
	uint64_t bytes_out;
	uint64_t segs_in;
	uint64_t segs_out;
	uint64_t retransmits;
	uint64_t rto_expiries;
	uint64_t fast_retransmits;
	uint64_t ooo_segs;
	uint64_t dup_acks;
	uint64_t drops;
};

enum uiw_tcp_state {
	UIW_TCP_CLOSED = 0,
	UIW_TCP_LISTEN,
	UIW_TCP_SYN_SENT,
	UIW_TCP_SYN_RECEIVED,
	UIW_TCP_ESTABLISHED,
	UIW_TCP_FIN_WAIT_1,
	UIW_TCP_FIN_WAIT_2,
	UIW_TCP_CLOSE_WAIT,
	UIW_TCP_CLOSING,
	UIW_TCP_LAST_ACK,
	UIW_TCP_TIME_WAIT,
	UIW_TCP_NSTATES
};

struct uiw_tcp;
struct uiw_tcp_conn;

/** What the engine tells the layer above. Any slot may be NULL. */
struct uiw_tcp_ops {
	/** A passive open reached ESTABLISHED (@p ctx is the listener's). Set the user
	 *  pointer with uiw_tcp_set_user(). Return 0 to keep it, nonzero to reset it. */
	int (*accept)(void *ctx, struct uiw_tcp_conn *c);
	/** An active open reached ESTABLISHED. */
	void (*connected)(void *user, struct uiw_tcp_conn *c);
	/** In-order payload (consumed: the callee frees @p m). */
	void (*recv)(void *user, struct uiw_tcp_conn *c, struct rte_mbuf *m);
	/** @p bytes of sent data were acknowledged: send space is free again. */
	void (*sent)(void *user, struct uiw_tcp_conn *c, uint32_t bytes);
	/** The peer sent FIN: no more data will come. */
	void (*peer_closed)(void *user, struct uiw_tcp_conn *c);
	/** The connection is gone: 0 after an orderly close, -ECONNRESET, -ECONNREFUSED,
	 *  -ETIMEDOUT or -EHOSTUNREACH. The pointer is invalid afterwards. */
	void (*closed)(void *user, struct uiw_tcp_conn *c, int err);
};

/** Creates the engine for @p net with the tcp_* keys of @p cfg. @return 0 or -ENOMEM. */
int uiw_tcp_create(struct uiw_tcp **out, struct uiw_net *net, const struct uiw_config *cfg);

/** Frees every connection (no segments sent) and the engine. */
void uiw_tcp_destroy(struct uiw_tcp *t);

/**
 * One poll pass: one RX burst through the stack, then pending output, timers and the TX
 * flush. @return frames received.
 */
unsigned uiw_tcp_poll(struct uiw_tcp *t, uint64_t now);

/** Timers and pending output without receiving (used by uiw_tcp_poll()). */
void uiw_tcp_run(struct uiw_tcp *t, uint64_t now);

/** Listens on @p port. @return 0, -EADDRINUSE or -ENOSPC. */
int uiw_tcp_listen(struct uiw_tcp *t, uint16_t port, unsigned backlog,
		   const struct uiw_tcp_ops *ops, void *ctx);

/** Stops listening; connections not yet accepted are reset. */
void uiw_tcp_unlisten(struct uiw_tcp *t, uint16_t port);

/**
 * Opens a connection to @p dst:@p port from an ephemeral port (SYN sent at once).
 * @return 0 and *out, or -EHOSTUNREACH, -EADDRNOTAVAIL (no free port), -ENOMEM.
 */
int uiw_tcp_connect(struct uiw_tcp *t, uint32_t dst, uint16_t port,
		    const struct uiw_tcp_ops *ops, void *user, uint64_t now,
		    struct uiw_tcp_conn **out);

/** Flag for uiw_tcp_send(): this data starts a record, so no segment carries bytes from
 *  before it together with bytes of it (MPA sends one FPDU per segment). */
#define UIW_TCP_SEND_RECORD 0x1
/** Flag for uiw_tcp_send(): data it refuses stays the caller's (it is not freed). */
#define UIW_TCP_SEND_KEEP 0x2
/** Flag for uiw_tcp_send(): a connection's control message (MPA's Request or Reply), taken
 *  while the connection's queue is empty whatever tcp_sq_mbufs and the shares leave, as
 *  long as all send queues hold under three quarters of the pool: a negotiation does not
 *  fail for the budget that busy connections hold, and each connection queues at most one
 *  such message at a time. Counted apart from the data budget, so that peers that leave
 *  such messages unacknowledged do not hold what the others' data needs. */
#define UIW_TCP_SEND_CTRL 0x4

/** Pieces of the send queue this short are copied into the segment that sends them (a
 *  sum noted on them is not used); on a port whose PMD copies each frame anyway, longer
 *  ones too (uiw_tcp_tx_copy_max()). */
#define UIW_TCP_TX_COPY_MAX 256

/** On a port whose PMD copies each frame, pieces up to this long are copied into the
 *  segment: an FPDU of MTU 1500 (1,448 octets) moved 6% more copied than referred to over
 *  memif, one of MTU 9000 (8,948) 6% less. */
#define UIW_TCP_TX_COPY_EXT_MAX 2048

/** On a port whose PMD frees each frame in the sending thread (uiw_port.tx_ext,
 *  uiw_port.tx_over), a segment that is one whole queued mbuf this long or longer goes
 *  out as a frame over that mbuf's buffer (uiw_mbuf_over()). */
#define UIW_TCP_TX_OVER_MIN 256

/** The longest piece of the send queue TCP copies into a segment rather than refers to:
 *  a caller that sums what it queues need not sum pieces this short. */
uint32_t uiw_tcp_tx_copy_max(const struct uiw_tcp_conn *c);

/** True when the port's PMD copies each frame as it takes it (memif, af_packet, tap, pcap,
 *  null, vhost-user): what a caller writes for the send queue stays in this core's caches.
 *  Elsewhere (virtio-user, ring, a NIC) the peer or the NIC reads the mbufs after they are
 *  sent, so a fresh mbuf's lines were last read there: a caller should not read back what
 *  it has just written into one. */
bool uiw_tcp_tx_frames_copied(const struct uiw_tcp_conn *c);

/** True when TCP now hands the port frames of many segments (TSO): on vhost-user that
 *  holds only while the guest takes them (uiw_port.tso_guest). */
bool uiw_tcp_tso_now(const struct uiw_tcp_conn *c);

/**
 * Readies @p m, a pool mbuf fresh from the pool that the caller will fill with @p len
 * octets and queue whole (an FPDU), to go out as a frame over its own buffer (the headers
 * in its headroom) where another core reads the frames (uiw_port.tx_over): its data is
 * moved so that the headers of a data segment start on a cache line, and their lines are
 * asked for, for writing, now. Nothing on other ports.
 */
void uiw_tcp_ready_over(const struct uiw_tcp_conn *c, struct rte_mbuf *m, uint32_t len);

/** True when TCP sums what it sends itself (the port has no TCP checksum offload): a caller
 *  that copies its data anyway may sum it in that pass (uiw_tcp_mark_summed()). */
bool uiw_tcp_sums_wanted(const struct uiw_tcp_conn *c);

/** Notes on @p m (one segment, its octets final) their sum as uiw_raw_sum() gives it: a
 *  segment that sends the whole of @p m takes the sum instead of reading the octets again. */
void uiw_tcp_mark_summed(const struct uiw_tcp_conn *c, struct rte_mbuf *m, uint16_t sum);

/**
 * Asks that each payload of @p c that arrives in one mbuf and whose checksum is software's
 * come with the CRC32c of all of it but its last four octets, taken in the same pass as
 * the sum (uiw_crc32c_sum()): the CRC of an FPDU that fills a segment, as MPA checks it
 * (without Markers). uiw_tcp_rx_crc() gives it. @return the mbuf flag that marks such a
 * payload (the same for every connection; 0 when none is ever marked).
 */
uint64_t uiw_tcp_want_rx_crc(struct uiw_tcp_conn *c, bool on);

/**
 * The CRC32c state (not finalised, from UIW_CRC32C_INIT) of @p m's octets but its last
 * four, when TCP took it with the checksum (@p flag: uiw_tcp_want_rx_crc()'s) and @p m
 * still holds exactly the payload it was taken over: not cut, grown or joined since.
 */
static inline bool uiw_tcp_rx_crc(uint64_t flag, const struct rte_mbuf *m, uint32_t *crc)
{
	if (!(m->ol_flags & flag) ||
	    m->hash.fdir.hi != ((uint32_t)m->data_off << 16 | m->data_len))
		return false;
	*crc = m->hash.fdir.lo;
	return true;
}

/**
 * Queues @p m (consumed, unless refused with UIW_TCP_SEND_KEEP) for sending. Data goes out
 * from the next poll pass.
 * @return 0, -ENOBUFS when the send buffer lacks room (uiw_tcp_send_space()),
 *         -ENOTCONN when the connection cannot send.
 */
int uiw_tcp_send(struct uiw_tcp_conn *c, struct rte_mbuf *m, unsigned flags);

/**
 * Copies into pool mbufs whatever the send queue holds of memory lent to it (external
 * buffers, uiw_mpa_send_lent()), and drops the port's unsent frames that refer to such
 * memory (their octets go again from the copies). @return 0, or -ENOMEM when out of mbufs.
 */
int uiw_tcp_sndq_own(struct uiw_tcp_conn *c);

/** The most octets a gathered record (uiw_tcp_gather()) carries on each side of its lent
 *  memory: MPA's length and a DDP/RDMAP header before, the pad and the CRC after. */
#define UIW_TCP_GATHER_EDGE_MAX 64

/**
 * The longest record @p c takes as a gathered one (uiw_tcp_gather()): one that fits whole
 * in the first mbuf of a segment, where TCP copies it, so that no frame refers to the lent
 * memory. 0 where frames must refer to what they send (TSO, a NIC reading registered
 * memory by DMA) or the mbuf dynamic flag was not to be had.
 */
uint32_t uiw_tcp_gather_max(const struct uiw_tcp_conn *c);

/**
 * One send-queue mbuf for a record in three parts: @p hlen octets at @p head and @p tlen
 * at @p tail (each at most UIW_TCP_GATHER_EDGE_MAX), copied into the mbuf's own room, and
 * between them @p len octets of lent memory at @p mem, referred to through @p lend, whose
 * count rises by one and falls again when the mbuf goes (acknowledged, or copied out by
 * uiw_tcp_sndq_own()). Each segment that sends any of it, a retransmission too, copies
 * from the three places; the whole record is at most uiw_tcp_gather_max(). A chain of
 * header, external buffer and trailer holds three mbufs for one record where this holds
 * one. @return the mbuf for uiw_tcp_send(), or NULL with the pool empty.
 */
struct rte_mbuf *uiw_tcp_gather(struct uiw_tcp_conn *c, const void *head, uint32_t hlen,
				const void *mem, uint32_t len,
				struct rte_mbuf_ext_shared_info *lend, const void *tail,
				uint32_t tlen);

/** Bytes uiw_tcp_send() accepts now. */
uint32_t uiw_tcp_send_space(struct uiw_tcp_conn *c);

/**
 * Room for a run of records queued at once (uiw_tcp_send_records()): the octets they may
 * have in all, as uiw_tcp_send_space() would give them to each in turn, and in *@p mbufs
 * how many mbufs. 0 for a connection that has no data queued (its first record goes
 * alone, with uiw_tcp_send(): it makes the connection a sender, which changes each
 * sender's share of the mbufs).
 */
uint32_t uiw_tcp_run_room(struct uiw_tcp_conn *c, uint32_t *mbufs);

/**
 * Queues @p n records, each one mbuf, as many uiw_tcp_send(UIW_TCP_SEND_RECORD) calls
 * would, with the checks made once: all of them or none.
 * @return 0 (the mbufs are the queue's); -ENOBUFS when they exceed uiw_tcp_run_room(),
 *         -ENOTCONN when the connection cannot send, -EINVAL for a chained or empty mbuf
 *         (all of them still the caller's).
 */
int uiw_tcp_send_records(struct uiw_tcp_conn *c, struct rte_mbuf *const *v, unsigned n);

/** The layer above now holds @p bytes of this connection's stream, acknowledged but not
 *  yet consumed (an unfinished record), in @p mbufs mbufs: the window offers that much
 *  less and the receive budget counts them. */
void uiw_tcp_ulp_held(struct uiw_tcp_conn *c, uint32_t bytes, uint32_t mbufs);

/** The sequence number just past what is queued to send so far (a mark for
 *  uiw_tcp_acked()). */
uint32_t uiw_tcp_queued_end(const struct uiw_tcp_conn *c);
/** Whether the peer acknowledged everything before sequence @p mark. */
bool uiw_tcp_acked(const struct uiw_tcp_conn *c, uint32_t mark);

/** The largest payload one segment carries (the effective send MSS). */
uint16_t uiw_tcp_mss(const struct uiw_tcp_conn *c);

/** Sends FIN after the queued data; the closed callback follows. */
void uiw_tcp_close(struct uiw_tcp_conn *c);

/** Resets the connection and frees it at once: no callback follows. */
void uiw_tcp_abort(struct uiw_tcp_conn *c);

void uiw_tcp_set_user(struct uiw_tcp_conn *c, const struct uiw_tcp_ops *ops, void *user);
enum uiw_tcp_state uiw_tcp_state(const struct uiw_tcp_conn *c);
const char *uiw_tcp_state_name(enum uiw_tcp_state s);
const struct uiw_tcp_conn_stats *uiw_tcp_conn_stats(const struct uiw_tcp_conn *c);
void uiw_tcp_conn_addrs(const struct uiw_tcp_conn *c, uint32_t *laddr, uint16_t *lport,
			uint32_t *raddr, uint16_t *rport);

/** Round-trip estimates (RFC 6298: SRTT, RTTVAR, RTO, in microseconds; 0 before a sample)
 *  and the congestion window in bytes. */
void uiw_tcp_conn_timing(const struct uiw_tcp_conn *c, uint32_t *srtt_us, uint32_t *rttvar_us,
			 uint32_t *rto_us, uint32_t *cwnd);

/** What bounds a connection's sending now: the peer's window and what is in flight
 *  (octets), its send queue's mbufs against its share of the engine's send budget
 *  (tcp_sq_mbufs), and whether the queue is set apart as stalled. */
struct uiw_tcp_conn_sending {
	uint32_t snd_wnd, in_flight;
	unsigned sq_mbufs, share;
	bool stalled;
};
void uiw_tcp_conn_sending(const struct uiw_tcp_conn *c, struct uiw_tcp_conn_sending *out);

/** Prints one connection's state, sequence variables, windows and timers (for debugging). */
void uiw_tcp_conn_dump(const struct uiw_tcp_conn *c, FILE *out);

/** uiw_tcp_conn_dump() of every connection with data queued to send (at most @p max of
 *  them): what a stuck transfer waits for. @return how many have data queued. */
unsigned uiw_tcp_dump_sending(const struct uiw_tcp *t, FILE *out, unsigned max);

/** Engine-wide counters (enum uiw_tcp_counter). */
const uint64_t *uiw_tcp_counters(const struct uiw_tcp *t);

/**
 * Makes @p t engine @p engine of @p nengines sharing one port and its pool. A hash of the
 * 4-tuple names the engine that owns a connection (the NIC's RSS where the port knows it):
 * active opens take only ephemeral ports that name this engine, and, without RSS, a
 * segment that comes in on this engine's queue for another engine goes to it
 * (uiw_net_hand()). Its send queues may hold 1/nengines of what one
 * engine alone may.
 */
void uiw_tcp_set_engine(struct uiw_tcp *t, unsigned engine, unsigned nengines);

/** Connections in use (any state but free). */
unsigned uiw_tcp_conn_count(const struct uiw_tcp *t);

/** What the engine holds now: each is back to its idle level once every peer has gone. */
struct uiw_tcp_gauges {
	unsigned conns;          /**< TCBs in use */
	unsigned half_open;      /**< of which SYN-RECEIVED, counted by their listeners */
	unsigned rx_mbufs;       /**< mbufs held by reassembly queues and the layer above */
	unsigned sq_mbufs;       /**< mbufs held by send queues (control messages' too) */
	unsigned sq_stalled;     /**< of them, queues whose peers take nothing (zero window,
				  *   or a retransmission timeout since the last new ACK) */
	unsigned senders;        /**< connections with data queued, who split the send share */
};
void uiw_tcp_gauges(const struct uiw_tcp *t, struct uiw_tcp_gauges *g);

/**
 * At the end of the process that holds the stack: every connection the program left open
 * (ESTABLISHED, CLOSE_WAIT) is closed, its FIN queued behind what it still
 * has to send, as the kernel does for a process that exits with sockets open.
 */
void uiw_tcp_close_all(struct uiw_tcp *t);

/** Connections with octets or a FIN the peer has not acknowledged yet. */
unsigned uiw_tcp_owed(const struct uiw_tcp *t);

/** Resets (RST) every connection that still owes its peer octets or a FIN, so that the
 *  peer learns at once that they will never come. @return how many. */
unsigned uiw_tcp_reset_owed(struct uiw_tcp *t);

/** Writes one line per listening port of @p t to @p out: "listen PORT backlog B half_open H".
 * @return the number of listening ports. */
unsigned uiw_tcp_print_listeners(const struct uiw_tcp *t, FILE *out);

#endif
