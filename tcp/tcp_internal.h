/* SPDX-License-Identifier: BSD-3-Clause */
/** @file The TCP engine's own structures; other layers use tcp.h. */
#ifndef UIW_TCP_INTERNAL_H
#define UIW_TCP_INTERNAL_H

#include <errno.h>
#include <string.h>

#include <rte_mbuf_dyn.h>

#include "net_internal.h"
#include "tcp.h"
#include "tcp_seq.h"
#include "tcp_wire.h"
#include "uiw_time.h"

static inline uint32_t u32_min(uint32_t a, uint32_t b) { return a < b ? a : b; }
static inline uint32_t u32_max(uint32_t a, uint32_t b) { return a > b ? a : b; }

#define TCP_SACK_BLOCKS 4        /* SACK blocks we send (3 fit with timestamps) */
#define TCP_SCORE_MAX 8          /* SACKed ranges the sender remembers */
#define TCP_WHEEL_SLOTS 4096     /* timer wheel: 1 ms ticks, 4 s per turn */
#define TCP_TICK_NS 1000000ull
#define TCP_EPHEMERAL_LO 49152   /* RFC 6335 §6 dynamic ports */
#define TCP_EPHEMERAL_HI 65535
#define TCP_MAX_LISTENERS 16
#define TCP_DEFAULT_MSS 536      /* RFC 9293 §3.7.1, when the peer sends no MSS option */
/* RFC 5961 §7 and §10 (CVE-2016-5696): challenge ACKs at most one per connection per
 * TCP_CHALLENGE_GAP_NS, and a stack-wide limit per second drawn anew each second from
 * [ACKS_PER_S / 2, ACKS_PER_S * 3 / 2), so that no off-path host learns from the shared
 * count whether a guessed connection exists (Linux does both). */
#define TCP_CHALLENGE_ACKS_PER_S 1000
#define TCP_CHALLENGE_GAP_NS (500 * 1000 * 1000ull)

/* Connection flags. */
#define TF_SACK_OK 0x0001        /* both SYNs carried SACK-permitted */
#define TF_TS_OK 0x0002          /* both SYNs carried timestamps */
#define TF_WS_OK 0x0004          /* both SYNs carried window scale */
#define TF_ACK_NOW 0x0008        /* send an ACK in this pass */
#define TF_DELACK 0x0010         /* an ACK is owed, delayed */
#define TF_FIN_QUEUED 0x0020     /* close requested: FIN follows the data */
#define TF_FIN_SENT 0x0040
#define TF_IN_RECOVERY 0x0080    /* fast recovery (RFC 6675 / RFC 6582) */
#define TF_PENDING 0x0100        /* on the output list */
#define TF_DETACHED 0x0200       /* no callbacks any more (aborted or accepted away) */
#define TF_PASSIVE 0x0400        /* opened by a listener, not yet accepted */
#define TF_RTT_ACTIVE 0x0800     /* timing rtt_seq */
#define TF_PEER_FIN 0x1000       /* FIN received */
#define TF_IN_WHEEL 0x2000
#define TF_DOOMED 0x4000         /* dropped while being processed: freed when that ends */
#define TF_TX_BLOCKED 0x8000     /* output held for a full port TX queue (the blocked list) */

/* Parsed options of one segment. */
struct tcp_opts {
	uint16_t mss;
	uint8_t ws;
	uint8_t has_mss : 1, has_ws : 1, sack_ok : 1, has_ts : 1;
	uint8_t nsack;
	uint32_t tsval, tsecr;
	uint32_t sack[TCP_SACK_BLOCKS][2];
};

/* One received segment, as the input stages see it. */
struct tcp_seg {
	struct rte_mbuf *m;       /* whole frame; payload at off */
	uint32_t saddr, daddr;
	uint16_t sport, dport;
	uint32_t seq, ack;
	uint32_t len;             /* payload bytes */
	uint32_t off;             /* payload offset in m */
	uint16_t wnd;             /* unscaled */
	uint8_t flags;
	bool sum_owed;            /* the checksum is software's: not verified yet (seg_sum_right()) */
	uint32_t sum_off;         /* the TCP header's offset in m */
	bool crc_noted;           /* seg_sum_right() noted the payload's CRC on m */
	uint16_t nsegs;           /* segments received in it: more than one when joined */
	struct tcp_opts opt;
};

/* In-order segments of one connection joined within a receive burst (tcp_in.c, "Joining a
 * burst's segments"): the first as parsed, its length, PSH and chain grown by the others'
 * payloads. */
struct tcp_join {
	struct uiw_tcp_conn *c;   /* NULL: nothing held */
	struct rte_mbuf *tail;    /* the chain's last mbuf */
	struct tcp_seg s;
};

/* How far ahead the walk that frees acknowledged mbufs asks for the ones it frees next. */
#define TCP_SQ_AHEAD 8

/* Data waiting to be acknowledged or sent: single-segment mbufs linked by m->next. */
struct tcp_sndq {
	struct rte_mbuf *head, *tail;
	uint32_t head_off;        /* bytes of head already acknowledged */
	uint32_t bytes;           /* from snd_una to the end */
	struct rte_mbuf *cur;     /* cursor: the mbuf holding sequence cur_seq */
	uint32_t cur_seq, cur_off;
	/*
	 * An ACK frees its mbufs by following m->next from the head, through mbufs written
	 * a window ago and mostly no longer in the core's caches: one miss after another.
	 * So each queued mbuf names the one TCP_SQ_AHEAD places behind it (uiw_tcp.ahead_off,
	 * set as that one is queued, sq_ahead_link()), and the walk asks for that one as it
	 * reaches the first. A name is only a prefetch, never followed otherwise.
	 */
	struct rte_mbuf *recent[TCP_SQ_AHEAD]; /* the last mbufs queued, by nq % TCP_SQ_AHEAD */
	uint32_t nq, nfreed;      /* mbufs queued, and freed from the head, since it was empty */
	bool ahead_stale;         /* changed inside (uiw_tcp_sndq_own()): names wait for empty */
};

/* Out-of-order segments, sorted by sequence, payload-only mbufs. */
struct tcp_ooo {
	struct rte_mbuf *m;
	uint32_t seq, len;
	uint32_t nsegs;                    /* mbufs of m, counted in the receive budget */
};

/*
 * The receive budget (what a peer can make us hold: out-of-order segments here, and what
 * the layer above holds of an incomplete record, uiw_tcp_ulp_held()), counted in mbufs,
 * the pool's unit. Up to TCP_RX_SHARE mbufs a connection always may hold; beyond that
 * only while the stack-wide hold is under rx_mbufs_soft (a quarter of the pool); nothing
 * grows past rx_mbufs_hard (half of it), so handshakes, ACKs and the other connections
 * always find mbufs. What does not fit is dropped before it is acknowledged (the peer
 * sends it again), with a counter (drop_rx_budget). 160 mbufs hold one largest FPDU even
 * in 512-octet segments (MPA joins smaller ones).
 */
#define TCP_RX_SHARE 160
/* Window probes sent for a record the window is too short for (nothing in flight) before
 * the record goes split: a receiver whose window never opens to one still gets it. And
 * never sooner than TCP_RECORD_SPLIT_NS after the window first fell short: a receiving
 * RDMA layer may hold a Send for its receive that long (our recv_wait_ms, 1000 ms by
 * default) and then either open the window whole or end the stream, so with a short RTO
 * (a 10 ms RTO runs its probes out in 0.63 s) the probes alone would split records that
 * waiting would have kept whole. */
#define TCP_RECORD_PROBES 6
#define TCP_RECORD_SPLIT_NS (1000ull * 1000 * 1000)

/*
 * The send side likewise: a connection may always queue TCP_TX_SHARE mbufs, more only
 * while all send queues together hold under sq_mbufs_soft (a quarter of the pool, at most a
 * third of tcp_sq_mbufs), and none past sq_mbufs_max (three quarters, at most tcp_sq_mbufs;
 * the engines of an instance split the pool's part). A peer that never opens its window (and makes
 * us queue Read Responses or whatever the application sends it) so stalls itself, not the
 * others: its queue holds its share and is counted apart (uiw_tcp_stall_check()).
 * Connections many enough to split sq_mbufs_soft below TCP_TX_SHARE_MIN each keep that much:
 * with 8, 512 connections of 64 KiB Writes were acknowledged every 7 segments and moved 91%
 * of one connection's rate; with 32, every 18 and 95% (docs/BENCHMARKS.md).
 */
#define TCP_TX_SHARE 256
#define TCP_TX_SHARE_MIN 32
/* And at most this many octets of the pool's mbufs (the share's memory, whatever they
 * hold): a size for a core's caches. At MTU 9000 (mbufs of 9 KiB) 256 mbufs were 2.3 MB,
 * more than this CPU's 2 MiB L2, and 64 KiB Writes over memif moved 48-50 Gb/s; with 128
 * to 192 in flight 50-57, 160 and 128 against 256 alternating 49.5-53.4 against 47.2-50.3
 * (docs/BENCHMARKS.md). At MTU 1500 (2 KiB mbufs) the 256 mbufs bind first. */
#define TCP_TX_SHARE_BYTES (1280u * 1024)

/* Zero-window probes a connection the application has closed sends before it gives up
 * (about 50 s from the 200 ms minimum RTO, doubling). */
#define TCP_ORPHAN_PROBES 8

struct uiw_tcp_conn {
	struct uiw_tcp_conn *hnext;        /* hash chain / free list */
	struct uiw_tcp_conn *pnext;        /* pending-output list */
	struct uiw_tcp_conn *bnext;        /* blocked-output list */
	struct uiw_tcp_conn *wprev, *wnext; /* timer wheel slot */
	struct uiw_tcp_conn *sprev, *snext; /* the listener's half-open list, oldest first */
	struct uiw_tcp *tcp;
	uint32_t laddr, raddr;
	uint16_t lport, rport;
	uint8_t state;
	uint8_t snd_wscale, rcv_wscale;
	uint8_t backoff;                   /* RTO doublings */
	uint8_t dupacks;
	uint8_t nscore;
	/* The window is short of the record at SND.NXT with nothing in flight: the persist
	 * timer asks for the window (record_probes times at least, for TCP_RECORD_SPLIT_NS
	 * from record_short_ns at least) before the record is split. */
	bool record_short;
	uint8_t record_probes;
	uint16_t flags;
	uint16_t mss;                      /* payload per segment we send (options excluded) */
	uint16_t peer_mss;

	/* Send sequence space (RFC 9293 §3.3.1). */
	uint32_t iss, snd_una, snd_nxt, snd_max, snd_wnd, snd_wl1, snd_wl2;
	uint32_t cwnd, ssthresh, recover;
	uint32_t sacked_bytes;
	uint32_t score[TCP_SCORE_MAX][2];  /* SACKed ranges above snd_una */
	uint32_t high_rxt;                 /* RFC 6675 HighRxt */
	uint32_t rxt_snd_max;              /* snd_max when a hole was last retransmitted */
	struct tcp_sndq sq;
	uint32_t sq_mbufs;                 /* mbufs of sq (TCP_TX_SHARE) */
	uint32_t sq_ctrl;                  /* of them, a control message's at its head */
	bool sq_stalled;                   /* the queue does not move (uiw_tcp_stall_check()) */

	/* Receive sequence space. */
	uint32_t irs, rcv_nxt, rcv_adv;
	uint32_t ts_recent, last_ack_sent;
	uint32_t unacked_segs;             /* full segments since our last ACK */
	uint16_t nooo;
	uint32_t ooo_bytes;
	uint32_t ooo_mbufs;                /* mbufs queued out of order */
	uint32_t ulp_bytes, ulp_mbufs;     /* held by the layer above (uiw_tcp_ulp_held) */
	/* A sequence number in each of the most recently grown out-of-order blocks, newest
	 * first: the order of the SACK blocks (RFC 2018 §4). */
	uint32_t sack_recent[TCP_SACK_BLOCKS];
	uint8_t nsack_recent;
	bool dsack_pending;                /* the next ACK reports dsack first (RFC 2883) */
	bool records;                      /* data was queued as records (MPA's FPDUs) */
	bool rx_crc;                       /* payloads' CRCs wanted with their sums
					    * (uiw_tcp_want_rx_crc()) */
	bool sack_owed;                    /* a record went without the SACK blocks: a pure ACK
	                                    * carries them at the end of the pass */
	bool syn_held;                     /* our SYN (or SYN-ACK) waits for room in the port */
	bool room_wanted;                  /* notsent_max bounded the room offered above: told
	                                    * (ops->sent) once sending has made some */
	uint32_t dsack[2];                 /* a duplicate segment received, [left, right) */
	struct tcp_ooo *ooo;               /* tcp_ooo_max entries */

	/* RTT (RFC 6298), microseconds. */
	uint32_t srtt_us, rttvar_us, rto_us;
	uint32_t rtt_seq;
	uint64_t rtt_start;
	bool probe_out;                    /* a tail loss probe awaits an ACK (RFC 8985 §7) */

	/* Timers: absolute ns, 0 = off. */
	uint64_t t_rexmt, t_persist, t_delack, t_close, t_probe;
	uint64_t record_short_ns;          /* when record_short was last set from clear */
	uint64_t t_next;                   /* the wheel's deadline */

	const struct uiw_tcp_ops *ops;
	void *user;
	struct uiw_tcp_listener *listener;
	struct uiw_tcp_conn_stats st;
	int doom_err;
	uint32_t max_sndwnd;               /* RFC 5961 §5.2 MAX.SND.WND */
	uint32_t bytes_acked;              /* RFC 3465 byte counting in congestion avoidance */
	uint64_t last_challenge;           /* when this connection last sent a challenge ACK */
};

struct uiw_tcp_listener {
	uint16_t port;                     /* 0 = free */
	unsigned backlog, pending;         /* pending: half-open (SYN-RECEIVED) connections */
	struct uiw_tcp_conn *syn_head, *syn_tail;
	uint64_t last_cookie;              /* when a SYN last got a cookie (0: never) */
	const struct uiw_tcp_ops *ops;
	void *ctx;
};

struct uiw_tcp {
	struct uiw_net *net;
	struct uiw_port *port;
	uint32_t hash_mask;
	struct uiw_tcp_conn **hash;
	struct uiw_tcp_conn *conns;        /* max_conns TCBs */
	struct tcp_ooo *ooo_store;
	struct uiw_tcp_conn *free_list;
	struct uiw_tcp_conn *pending;      /* output owed */
	struct uiw_tcp_conn *blocked;      /* output held back by the port: pending next pass */
	struct uiw_tcp_conn *busy;         /* being processed: a drop is deferred */
	unsigned nconns, max_conns;
	struct uiw_tcp_listener listeners[TCP_MAX_LISTENERS];
	struct uiw_tcp_conn *wheel[TCP_WHEEL_SLOTS];
	uint64_t wheel_tick;               /* last tick processed */
	uint64_t now;                      /* time of the pass being processed */
	uint64_t isn_key[2];               /* RFC 6528 secret */
	uint64_t epoch;                    /* for the TS clock */
	uint64_t port_key[2];              /* RFC 6056 §3.3.3 secret */
	uint64_t cookie_key[2];            /* SYN cookie secret (tcp_syncookie.c) */
	uint32_t next_ephemeral;           /* RFC 6056 §3.3.3 counter */
	uint16_t port_slot, port_stride;   /* engine slot of stride (tcp_engine_of()) */
	uint64_t challenge_window;         /* RFC 5961 §7 rate limit, 1 s windows */
	unsigned challenge_count;
	unsigned challenge_limit;          /* this window's limit, drawn at random */
	uint64_t record_flag;              /* mbuf dynflag marking a record start (0: none) */
	uint64_t summed_flag;              /* mbuf dynflag: hash.usr holds the octets' sum and
					    * their count (uiw_tcp_mark_summed(); 0: none) */
	uint64_t gather_flag;              /* mbuf dynflag: a gathered record, hash.usr holds
					    * its edges' lengths (uiw_tcp_gather(); 0: none) */
	int ahead_off;                     /* mbuf dynfield: the send queue's mbuf TCP_SQ_AHEAD
					    * places behind (struct tcp_sndq; -1: none) */
	uint64_t crc_flag;                 /* mbuf dynflag: a received payload's CRC taken with
					    * its sum (uiw_tcp_rx_crc(); 0: none) */
	bool pool_empty;                   /* an mbuf was not found this pass: no more tries */
	bool rx_large;                     /* the last receive round's frames were large
	                                    * (uiw_tcp_poll(): rounds of a few frames) */
	bool rss_stray_said;               /* rss_stray() (tcp_in.c) has logged its warning */
	unsigned rx_mbufs;                 /* receive holds of all connections */
	unsigned rx_mbufs_soft, rx_mbufs_hard;
	unsigned sq_mbufs;                 /* mbufs held by all send queues, but: */
	unsigned sq_ctrl;                  /* control messages' (UIW_TCP_SEND_CTRL), counted apart */
	unsigned sq_stalled;               /* of sq_mbufs, stalled connections' (not in sq_mbufs_max) */
	unsigned nsenders;                 /* connections whose queues hold data (tx_share) */
	unsigned sq_mbufs_soft;            /* beyond it, only connections within their share */
	unsigned sq_mbufs_max;             /* the rest of the pool stays for receiving */
	unsigned sq_cap;                   /* tcp_sq_mbufs */
	unsigned sq_pool_max;              /* sq_mbufs_max before the cap (UIW_TCP_SEND_CTRL) */
	uint64_t timers_due;               /* the wheel has nothing to do before (ns) */
	unsigned tx_share;                 /* each connection's share (uiw_tcp_tx_share_set()) */
	unsigned tx_share_max;             /* TCP_TX_SHARE, or fewer of large mbufs */
	/* Configuration. */
	uint32_t rcv_buf, snd_buf;
	uint32_t notsent_max;              /* of snd_buf, bytes queued and not yet sent (0: any) */
	uint64_t delack_ns, time_wait_ns;
	uint32_t min_rto_us, init_rto_us, max_rto_us;
	unsigned syn_retries, retries, ooo_max;
	bool offer_sack, offer_ts, offer_ws, syncookies;
	bool tx_runs;                      /* send_run() (tcp_out.c) */
	uint16_t rx_join;                  /* the most segments joined in a burst (tcp_in.c;
					    * 0, 1: none) */
	uint8_t rcv_wscale;
	struct tcp_join join;
	uint64_t counters[UIW_TCP_C__COUNT];
};

/* The MSS we announce: the MTU less minimal IPv4 and TCP headers (RFC 9293 §3.7.1). */
static inline uint16_t tcp_our_mss(const struct uiw_tcp *t)
{
	return (uint16_t)(t->port->mtu - UIW_IPV4_HDR_LEN - UIW_TCP_HDR_LEN);
}

/*
 * The engine of @p n that owns a connection: a hash of its 4-tuple that both ends
 * compute alike (it does not change when the ends swap). An active open takes a local
 * port that gives its own engine; a peer with as many engines on a queue-to-queue PMD
 * (memif) then holds the connection on the same engine, and no segment is handed over.
 */
static inline unsigned tcp_engine_of(uint32_t a1, uint16_t p1, uint32_t a2, uint16_t p2, unsigned n)
{
	uint32_t h = (a1 ^ a2 ^ (uint32_t)(p1 ^ p2) ^ ((uint32_t)(p1 ^ p2) << 16)) * 0x9e3779b1u;

	return (unsigned)(((uint64_t)h * n) >> 32);
}

/*
 * The engine that owns the connection @p laddr:@p lport - @p raddr:@p rport of @p t's
 * instance. On a NIC whose RSS the port knows, the engine whose queue the NIC puts the
 * peer's segments on; else tcp_engine_of().
 */
static inline unsigned tcp_owner(const struct uiw_tcp *t, uint32_t laddr, uint16_t lport,
				 uint32_t raddr, uint16_t rport)
{
	if (t->port->rss != NULL)
		return uiw_port_rss_queue(t->port->rss, raddr, rport, laddr, lport);
	return tcp_engine_of(laddr, lport, raddr, rport, t->port_stride);
}

static inline void tcp_count(struct uiw_tcp *t, enum uiw_tcp_counter c)
{
	t->counters[c]++;
}

/* tcp_opts.c */
int uiw_tcp_opts_parse(const uint8_t *p, unsigned len, bool syn, struct tcp_opts *o);
unsigned uiw_tcp_opts_build_syn(const struct uiw_tcp_conn *c, bool synack, uint32_t tsval,
			    uint8_t *p);
/* The options of a segment after the SYN: timestamps, and SACK blocks if @p sack. */
unsigned uiw_tcp_opts_build(const struct uiw_tcp_conn *c, uint32_t tsval, uint8_t *p, bool sack);

/* tcp_conn.c */
struct uiw_tcp_conn *uiw_tcp_lookup(struct uiw_tcp *t, uint32_t laddr, uint16_t lport,
				uint32_t raddr, uint16_t rport);
struct uiw_tcp_conn *uiw_tcp_conn_new(struct uiw_tcp *t, uint32_t laddr, uint16_t lport,
				  uint32_t raddr, uint16_t rport);
void uiw_tcp_conn_free(struct uiw_tcp_conn *c);
void uiw_tcp_conn_drop(struct uiw_tcp_conn *c, int err);
void uiw_tcp_set_state(struct uiw_tcp_conn *c, enum uiw_tcp_state s);
uint32_t uiw_tcp_isn(struct uiw_tcp *t, uint32_t laddr, uint16_t lport, uint32_t raddr,
		 uint16_t rport, uint64_t now);
uint32_t uiw_tcp_ts_now(const struct uiw_tcp *t);
uint32_t uiw_tcp_ts_at(const struct uiw_tcp *t, uint64_t ns);
void uiw_tcp_send_synack_ts(struct uiw_tcp_conn *c, uint32_t tsval);
uint32_t uiw_tcp_cookie_isn(struct uiw_tcp *t, const struct tcp_seg *syn, unsigned mss_idx);
unsigned uiw_tcp_cookie_mss_idx(uint16_t peer_mss);
uint16_t uiw_tcp_cookie_mss(unsigned mss_idx);
uint32_t uiw_tcp_cookie_tsval(struct uiw_tcp *t, const struct tcp_seg *syn);
int uiw_tcp_cookie_check(struct uiw_tcp *t, const struct tcp_seg *ack);
void uiw_tcp_cookie_opts(const struct tcp_seg *ack, struct tcp_opts *syn_opts);
void uiw_tcp_half_open_add(struct uiw_tcp_listener *l, struct uiw_tcp_conn *c);
void uiw_tcp_half_open_remove(struct uiw_tcp_conn *c);
struct uiw_tcp_listener *uiw_tcp_listener_find(struct uiw_tcp *t, uint16_t port);
void uiw_tcp_init_conn_params(struct uiw_tcp_conn *c);

/* tcp_in.c */
void uiw_tcp_input(void *ctx, struct rte_mbuf *m, unsigned ihl, uint64_t now);
/* The receive burst ended: the segments held to be joined go in (uiw_net_l4_flush_fn). */
void uiw_tcp_input_flush(void *ctx, uint64_t now);
/* @p c goes: what is held of it to be joined is freed. */
void uiw_tcp_join_forget(struct uiw_tcp_conn *c);

/* tcp_out.c */
void uiw_tcp_output(struct uiw_tcp_conn *c);
int uiw_tcp_send_segment(struct uiw_tcp_conn *c, uint32_t seq, uint32_t len, uint8_t flags);
void uiw_tcp_send_ack(struct uiw_tcp_conn *c);
void uiw_tcp_sent_data(struct uiw_tcp_conn *c, uint32_t seq, uint32_t n);
void uiw_tcp_send_rst_for(struct uiw_tcp *t, const struct tcp_seg *s);
void uiw_tcp_send_rst(struct uiw_tcp_conn *c);
void uiw_tcp_mark_pending(struct uiw_tcp_conn *c);
/*
 * Times the SYN (or SYN-ACK) just sent: the handshake gives the first RTT sample (RFC 6298
 * §2 allows it; Linux takes it), so a connection that never sends data (the receiving end
 * of a stream, which then only closes) does not keep the initial 1 s RTO, backed off, for
 * its FIN. A retransmitted SYN is not timed (Karn, tcp_timer.c).
 */
static inline void tcp_time_syn(struct uiw_tcp_conn *c, uint64_t now)
{
	c->flags |= TF_RTT_ACTIVE;
	c->rtt_seq = c->iss;
	c->rtt_start = now;
}
/* Our SYN (or SYN-ACK) sent again: not timed by the clock (Karn), but its time is kept,
 * so that an answer that echoes this one's TSval (uiw_tcp_ts_at(rtt_start)) times it from
 * then (handshake_rtt() in tcp_in.c). */
static inline void tcp_syn_again(struct uiw_tcp_conn *c, uint64_t now)
{
	c->flags &= (uint16_t)~TF_RTT_ACTIVE;
	c->rtt_start = now;
}
/* The port's TX queue is full, or the pool empty: output resumes at the next pass. */
void uiw_tcp_mark_blocked(struct uiw_tcp_conn *c);
uint32_t uiw_tcp_rcv_window(const struct uiw_tcp_conn *c);

/* Each connection's send share, as senders come and go: TCP_TX_SHARE, or its part of
 * sq_mbufs_soft when they are many (at least TCP_TX_SHARE_MIN). 64 connections each
 * filling 256 mbufs took the send queues to sq_mbufs_max, and the frames and ACKs behind
 * them found the pool empty. Only connections with data queued are counted: one that
 * sends nothing needs no share, and when it starts it gets its due (the hard limit
 * leaves room for it beside one connection's TCP_TX_SHARE). Counted by connections, a
 * control connection beside the one that moved the data (perftest's -R, an MPI
 * provider's) halved the data's share, and so what it had in flight: 64 KiB Writes over
 * memif moved 26 Gb/s instead of 35. */
static inline void uiw_tcp_tx_share_set(struct uiw_tcp *t)
{
	uint32_t share = t->nsenders > 1 ? t->sq_mbufs_soft / t->nsenders : t->tx_share_max;

	t->tx_share = share > t->tx_share_max ? t->tx_share_max
		      : share < TCP_TX_SHARE_MIN ? TCP_TX_SHARE_MIN : share;
}

/* Whether @p c may queue @p more mbufs to send: within its share, or while all send
 * queues together are under sq_mbufs_soft; never past sq_mbufs_max, nor, with the control
 * messages, past sq_pool_max. */
static inline bool uiw_tcp_tx_fits(const struct uiw_tcp_conn *c, uint32_t more)
{
	const struct uiw_tcp *t = c->tcp;
	unsigned moving = t->sq_mbufs - t->sq_stalled;

	if (moving + more > t->sq_mbufs_max || t->sq_mbufs + t->sq_ctrl + more > t->sq_pool_max)
		return false;
	return c->sq_mbufs + more <= t->tx_share ||
	       (!c->sq_stalled && moving + more <= t->sq_mbufs_soft);
}

/* The most mbufs @p c may queue now: uiw_tcp_tx_fits(c, more) holds for each more from 1
 * up to this and for none past it. */
static inline uint32_t uiw_tcp_tx_room(const struct uiw_tcp_conn *c)
{
	const struct uiw_tcp *t = c->tcp;
	int64_t moving = (int64_t)t->sq_mbufs - t->sq_stalled;
	int64_t room = (int64_t)t->sq_mbufs_max - moving;
	int64_t pool = (int64_t)t->sq_pool_max - t->sq_mbufs - t->sq_ctrl;
	int64_t soft = (int64_t)t->tx_share - c->sq_mbufs;

	if (!c->sq_stalled && (int64_t)t->sq_mbufs_soft - moving > soft)
		soft = (int64_t)t->sq_mbufs_soft - moving;
	room = pool < room ? pool : room;
	room = soft < room ? soft : room;
	return room > 0 ? (uint32_t)room : 0;
}

/*
 * A send queue stalls when its peer stops taking data: a window under one segment, or the
 * retransmission timer gone off with no ACK of new data since. Its mbufs then count
 * against the pool's part (sq_pool_max) but no longer against the soft and hard limits
 * of tcp_sq_mbufs, a size for the caches that only queues that move keep warm: peers that
 * keep their windows shut or acknowledge nothing hold their shares each, not the budget
 * every other connection sends from. Called where the window or the backoff changes
 * (ACKs, the handshake's end, the retransmission timer).
 */
static inline void uiw_tcp_stall_check(struct uiw_tcp_conn *c)
{
	bool stalled = c->backoff > 0 || c->snd_wnd < c->mss;

	if (stalled != c->sq_stalled) {
		uint32_t n = c->sq_mbufs - c->sq_ctrl;

		c->sq_stalled = stalled;
		if (stalled)
			c->tcp->sq_stalled += n;
		else
			c->tcp->sq_stalled -= n;
	}
}

/* Whether @p c may hold @p more receive mbufs (TCP_RX_SHARE). */
static inline bool uiw_tcp_rx_fits(const struct uiw_tcp_conn *c, uint32_t more)
{
	const struct uiw_tcp *t = c->tcp;
	uint32_t mine = c->ooo_mbufs + c->ulp_mbufs + more;

	if (t->rx_mbufs + more > t->rx_mbufs_hard)
		return false;
	return mine <= TCP_RX_SHARE || t->rx_mbufs + more <= t->rx_mbufs_soft;
}
/* A gathered record's parts (uiw_tcp_gather()): the head and tail side by side in the
 * mbuf's own room, the lent memory it is attached to between them. */
struct tcp_gathered {
	const char *own, *mem;
	uint32_t hlen, len, tlen;
};

static inline struct tcp_gathered tcp_gathered_of(const struct rte_mbuf *m)
{
	uint32_t hlen = m->hash.usr & 0xff, tlen = m->hash.usr >> 8 & 0xff;

	return (struct tcp_gathered){
		.own = rte_mbuf_buf_addr((struct rte_mbuf *)(uintptr_t)m, m->pool),
		.mem = rte_pktmbuf_mtod(m, const char *),
		.hlen = hlen, .len = m->data_len - hlen - tlen, .tlen = tlen,
	};
}
void uiw_tcp_sndq_free_acked(struct uiw_tcp_conn *c, uint32_t acked);
/* Where queued mbuf @p m names the mbuf TCP_SQ_AHEAD places behind it (struct tcp_sndq). */
static inline struct rte_mbuf **sq_ahead_of(const struct uiw_tcp *t, struct rte_mbuf *m)
{
	return RTE_MBUF_DYNFIELD(m, t->ahead_off, struct rte_mbuf **);
}

/* @p m joins the tail of @p q: it names nobody yet, and the mbuf queued TCP_SQ_AHEAD
 * before it names it, if that one is still queued (ordinal nq - TCP_SQ_AHEAD not yet
 * freed: the head goes first). */
static inline void sq_ahead_link(const struct uiw_tcp *t, struct tcp_sndq *q,
				 struct rte_mbuf *m)
{
	if (t->ahead_off < 0)
		return;
	*sq_ahead_of(t, m) = NULL;
	if (q->ahead_stale)
		return;
	if (q->nq - q->nfreed >= TCP_SQ_AHEAD)
		*sq_ahead_of(t, q->recent[q->nq % TCP_SQ_AHEAD]) = m;
	q->recent[q->nq % TCP_SQ_AHEAD] = m;
	q->nq++;
}

/* One mbuf of @p c's send queue freed from its head: a control message's first. */
static inline void uiw_tcp_sq_mbuf_gone(struct uiw_tcp_conn *c)
{
	c->sq_mbufs--;
	if (c->sq_ctrl > 0) {
		c->sq_ctrl--;
		c->tcp->sq_ctrl--;
	} else {
		c->tcp->sq_mbufs--;
		c->tcp->sq_stalled -= c->sq_stalled;
		if (c->sq_mbufs == 0) {   /* its last data: no longer a sender */
			c->tcp->nsenders--;
			uiw_tcp_tx_share_set(c->tcp);
		}
	}
}
void uiw_tcp_sndq_clear(struct uiw_tcp_conn *c);

/* tcp_timer.c */
void uiw_tcp_timer_arm(struct uiw_tcp_conn *c);
void uiw_tcp_timer_remove(struct uiw_tcp_conn *c);
void uiw_tcp_timers_run(struct uiw_tcp *t, uint64_t now);
void uiw_tcp_rtt_sample(struct uiw_tcp_conn *c, uint32_t rtt_us);
void uiw_tcp_rto_reset(struct uiw_tcp_conn *c);
void uiw_tcp_probe_arm(struct uiw_tcp_conn *c);

/* tcp_cc.c */
void uiw_tcp_cc_init(struct uiw_tcp_conn *c);
void uiw_tcp_cc_ack(struct uiw_tcp_conn *c, uint32_t acked, const struct tcp_seg *s);
void uiw_tcp_cc_dupack(struct uiw_tcp_conn *c);
void uiw_tcp_cc_rto(struct uiw_tcp_conn *c);
bool uiw_tcp_sack_update(struct uiw_tcp_conn *c, const struct tcp_opts *o);
void uiw_tcp_cc_check_lost_rxt(struct uiw_tcp_conn *c);
void uiw_tcp_score_prune(struct uiw_tcp_conn *c);
bool uiw_tcp_sack_is_sacked(const struct uiw_tcp_conn *c, uint32_t seq, uint32_t *end);
uint32_t uiw_tcp_flight(const struct uiw_tcp_conn *c);
uint32_t uiw_tcp_pipe(const struct uiw_tcp_conn *c);

/* tcp_reass.c */
void uiw_tcp_reass_insert(struct uiw_tcp_conn *c, struct rte_mbuf *m, uint32_t seq, uint32_t len);
struct rte_mbuf *uiw_tcp_reass_pull(struct uiw_tcp_conn *c);
void uiw_tcp_reass_clear(struct uiw_tcp_conn *c);
unsigned uiw_tcp_reass_sack_blocks(const struct uiw_tcp_conn *c, uint32_t blocks[][2],
			       unsigned max);

/* The engine's clock for an entry with @p now: passes may come from more than one thread
 * (an engine thread, a program's poll that made a pass for it), each with a clock read
 * before it waited for the engine; TCP's time never goes back (an RTT sample from a
 * clock behind the send time would be 2^32 us). */
static inline uint64_t tcp_clock(struct uiw_tcp *t, uint64_t now)
{
	if ((int64_t)(now - t->now) < 0)
		return t->now;
	t->now = now;
	return now;
}

#endif
