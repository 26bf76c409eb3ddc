/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Input (RFC 9293 §3.10.7 "SEGMENT ARRIVES"), in stages: parse and validate, look up,
 * then per state: LISTEN/CLOSED, SYN-SENT, and the synchronized states as
 * sequence check -> RST -> SYN -> ACK -> data -> FIN.
 */
#include <rte_random.h>

#include "tcp_internal.h"
#include "uiw_crc32c.h"

typedef void (*seg_fn)(struct uiw_tcp_conn *c, struct tcp_seg *s);

static void in_syn_sent(struct uiw_tcp_conn *c, struct tcp_seg *s);
static void in_synchronized(struct uiw_tcp_conn *c, struct tcp_seg *s);

/* What a segment does in each state (no TCB exists in CLOSED or LISTEN: see no_conn()). */
static const seg_fn seg_arrives[UIW_TCP_NSTATES] = {
	[UIW_TCP_SYN_SENT] = in_syn_sent,
	[UIW_TCP_SYN_RECEIVED] = in_synchronized,
	[UIW_TCP_ESTABLISHED] = in_synchronized,
	[UIW_TCP_FIN_WAIT_1] = in_synchronized,
	[UIW_TCP_FIN_WAIT_2] = in_synchronized,
	[UIW_TCP_CLOSE_WAIT] = in_synchronized,
	[UIW_TCP_CLOSING] = in_synchronized,
	[UIW_TCP_LAST_ACK] = in_synchronized,
	[UIW_TCP_TIME_WAIT] = in_synchronized,
};

/* Stage 1: a segment we can read safely. @return UIW_NET_ACCEPT or a drop counter. */
static int tcp_parse(struct rte_mbuf *m, unsigned ihl, struct tcp_seg *s)
{
	const struct uiw_ipv4_hdr *ih =
		rte_pktmbuf_mtod_offset(m, const struct uiw_ipv4_hdr *, UIW_ETH_HDR_LEN);
	uint32_t off = UIW_ETH_HDR_LEN + ihl;
	uint32_t total = m->pkt_len - off;
	const struct uiw_tcp_hdr *th;
	unsigned doff;
	uint64_t ck = m->ol_flags & RTE_MBUF_F_RX_L4_CKSUM_MASK;

	if (total < UIW_TCP_HDR_LEN || !uiw_net_contig(m, off, UIW_TCP_HDR_LEN))
		return UIW_TCP_C_drop_short;
	th = rte_pktmbuf_mtod_offset(m, const struct uiw_tcp_hdr *, off);
	doff = uiw_tcp_hdr_len(th);
	if (doff < UIW_TCP_HDR_LEN || doff > total || !uiw_net_contig(m, off, doff))
		return UIW_TCP_C_drop_doff;
	s->saddr = uiw_ipv4_src(ih);
	s->daddr = uiw_ipv4_dst(ih);
	/* RFC 9293 §3.1: the checksum covers the pseudo-header. A PMD that verified it (GOOD),
	 * or that vouches for data whose field it did not fill (NONE), spares the sum; else
	 * it is taken once the connection is known (seg_sum_right()), before anything of the
	 * segment is acted on. */
	if (ck == RTE_MBUF_F_RX_L4_CKSUM_BAD)
		return UIW_TCP_C_drop_cksum;
	s->sum_owed = ck != RTE_MBUF_F_RX_L4_CKSUM_GOOD && ck != RTE_MBUF_F_RX_L4_CKSUM_NONE;
	s->sum_off = off;
	s->crc_noted = false;
	s->nsegs = 1;
	s->m = m;
	s->sport = uiw_tcp_sport(th);
	s->dport = uiw_tcp_dport(th);
	s->seq = uiw_tcp_seq(th);
	s->ack = uiw_tcp_ack(th);
	s->wnd = uiw_tcp_win(th);
	s->flags = th->flags;
	s->off = off + doff;
	s->len = total - doff;
	if ((s->flags & UIW_TCP_SYN) && (s->flags & (UIW_TCP_FIN | UIW_TCP_RST)))
		return UIW_TCP_C_drop_flags;
	if (s->sport == 0 || s->dport == 0)
		return UIW_TCP_C_drop_bad_addr;
	if (uiw_tcp_opts_parse((const uint8_t *)(th + 1), doff - UIW_TCP_HDR_LEN,
			   (s->flags & UIW_TCP_SYN) != 0, &s->opt) != 0)
		return UIW_TCP_C_drop_opt;
	return UIW_NET_ACCEPT;
}

/* A payload this long or longer has its CRC taken with its sum where the connection asks
 * (uiw_tcp_want_rx_crc()): from here uiw_crc32c_sum() takes both in one pass. */
#define RX_CRC_MIN (UIW_CRC32C_MID_MIN + 4)

/*
 * The checksum of @p s (tcp_parse() left it owed). Where @p c asks for payloads' CRCs and
 * the payload lies in one mbuf of the frame (the frame itself, or the last of a chain
 * whose first holds the headers), the CRC of all of it but its last four octets is taken
 * in the same pass and noted on that mbuf with where the payload will lie once TCP has cut
 * the headers off (payload_from()), for uiw_tcp_rx_crc(): the checksum's and the CRC's
 * passes over a received FPDU become one.
 */
static bool seg_sum_right(const struct uiw_tcp *t, const struct uiw_tcp_conn *c,
			  struct tcp_seg *s)
{
	struct rte_mbuf *m = s->m, *seg = m;
	uint32_t hlen = s->off - s->sum_off, at = s->off;
	uint32_t sum = uiw_tcp_phdr_sum(s->saddr, s->daddr, (uint16_t)(hlen + s->len));
	bool want_crc = c != NULL && c->rx_crc && s->len >= RX_CRC_MIN;

	while (want_crc && seg != NULL && at >= seg->data_len) {
		at -= seg->data_len;
		seg = seg->next;
	}
	if (want_crc && seg != NULL && at + s->len <= seg->data_len) {
		const uint8_t *p = rte_pktmbuf_mtod_offset(seg, const uint8_t *, at);
		uint32_t body = s->len - 4;
		uint16_t part, last = uiw_raw_sum(p + body, 4);
		uint32_t crc = uiw_crc32c_sum(UIW_CRC32C_INIT, NULL, p, body, &part);

		/* The header lies whole in the first mbuf (tcp_parse()), and its length is a
		 * multiple of four: the payload's words line up with its. */
		const void *th = rte_pktmbuf_mtod_offset(m, const void *, s->sum_off);

		sum += uiw_inet_sum_of_raw(uiw_raw_sum(th, hlen) + part +
					   ((body & 1) ? rte_bswap16(last) : last));
		seg->hash.fdir.lo = crc;
		seg->hash.fdir.hi = (uint32_t)(seg->data_off + at) << 16 | s->len;
		seg->ol_flags |= t->crc_flag;
		s->crc_noted = true;
	} else {
		sum += uiw_inet_sum_mbuf(m, s->sum_off, hlen + s->len);
	}
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return sum == 0xffff;
}

/* MSS, window scale, SACK and timestamps as both SYNs agreed (RFC 7323 §2.2, §3.2;
 * RFC 2018 §2; RFC 9293 §3.7.1). */
static void negotiate(struct uiw_tcp_conn *c, const struct tcp_seg *s)
{
	struct uiw_tcp *t = c->tcp;
	uint16_t ours = tcp_our_mss(t);

	c->peer_mss = s->opt.has_mss ? s->opt.mss : TCP_DEFAULT_MSS;
	if (c->peer_mss < 64)
		c->peer_mss = 64;
	if (s->opt.sack_ok && t->offer_sack)
		c->flags |= TF_SACK_OK;
	if (s->opt.has_ts && t->offer_ts) {
		c->flags |= TF_TS_OK;
		c->ts_recent = s->opt.tsval;
	}
	if (s->opt.has_ws && t->offer_ws) {
		c->flags |= TF_WS_OK;
		c->snd_wscale = s->opt.ws;
	} else {
		c->snd_wscale = 0;
		c->rcv_wscale = 0;
	}
	c->mss = (uint16_t)(u32_min(c->peer_mss, ours) - ((c->flags & TF_TS_OK) ? 12 : 0));
	uiw_tcp_cc_init(c);
}

/* A SYN answered statelessly: a scratch TCB says what the SYN-ACK carries, then goes. */
static void syncookie_reply(struct uiw_tcp *t, struct uiw_tcp_listener *l, const struct tcp_seg *s)
{
	struct uiw_tcp_conn sc;

	memset(&sc, 0, sizeof(sc));
	sc.tcp = t;
	sc.laddr = s->daddr;
	sc.lport = s->dport;
	sc.raddr = s->saddr;
	sc.rport = s->sport;
	uiw_tcp_init_conn_params(&sc);
	sc.irs = s->seq;
	sc.rcv_nxt = s->seq + 1;
	negotiate(&sc, s);
	sc.iss = uiw_tcp_cookie_isn(t, s, uiw_tcp_cookie_mss_idx(sc.peer_mss));
	sc.state = UIW_TCP_SYN_RECEIVED;
	uiw_tcp_send_synack_ts(&sc, uiw_tcp_cookie_tsval(t, s));
	l->last_cookie = t->now;
	tcp_count(t, UIW_TCP_C_syncookies_sent);
}

/*
 * A listener's queue is full. The oldest half-open connection goes if its SYN-ACK has
 * already been sent again unanswered (a silent or spoofed peer); otherwise the SYN gets a
 * cookie (or, with tcp_syncookies=0, nothing). @return true if the SYN may take a TCB.
 */
static bool backlog_full(struct uiw_tcp *t, struct uiw_tcp_listener *l, const struct tcp_seg *s)
{
	struct uiw_tcp_conn *old = l->syn_head;

	if (old != NULL && old->backoff > 0) {
		tcp_count(t, UIW_TCP_C_syn_evicted);
		UIW_DEBUG("tcp %u: half-open connection from port %u evicted (%u SYN-ACKs unanswered)",
			  l->port, old->rport, old->backoff + 1u);
		uiw_tcp_conn_free(old);
		return true;
	}
	if (t->syncookies)
		syncookie_reply(t, l, s);
	else
		tcp_count(t, UIW_TCP_C_drop_backlog);
	return false;
}

/* LISTEN (RFC 9293 §3.10.7.2): a SYN creates a TCB in SYN-RECEIVED. */
static void passive_open(struct uiw_tcp *t, struct uiw_tcp_listener *l, struct tcp_seg *s)
{
	struct uiw_tcp_conn *c;

	if (l->pending >= l->backlog && !backlog_full(t, l, s))
		return;
	c = uiw_tcp_conn_new(t, s->daddr, s->dport, s->saddr, s->sport);
	if (c == NULL) {
		tcp_count(t, UIW_TCP_C_drop_table_full);
		return;
	}
	uiw_tcp_init_conn_params(c);
	c->flags |= TF_PASSIVE;
	uiw_tcp_half_open_add(l, c);
	c->irs = s->seq;
	c->rcv_nxt = s->seq + 1;
	negotiate(c, s);
	c->iss = uiw_tcp_isn(t, c->laddr, c->lport, c->raddr, c->rport, t->now);
	c->snd_una = c->snd_nxt = c->iss;
	c->snd_wnd = s->wnd; /* RFC 7323 §2.2: the window of a SYN is never scaled */
	c->snd_wl1 = s->seq;
	c->snd_wl2 = c->iss;
	uiw_tcp_set_state(c, UIW_TCP_SYN_RECEIVED);
	uiw_tcp_send_segment(c, c->iss, 0, UIW_TCP_SYN | UIW_TCP_ACK);
	tcp_time_syn(c, t->now);
	c->snd_nxt = c->snd_max = c->iss + 1;
	c->t_rexmt = t->now + (uint64_t)c->rto_us * 1000ull;
	uiw_tcp_timer_arm(c);
}

/*
 * An ACK to a listener that sent cookies lately: a valid cookie rebuilds the SYN-RECEIVED
 * TCB the SYN would have made, and the ACK then completes it as usual. @return the TCB.
 */
static struct uiw_tcp_conn *syncookie_open(struct uiw_tcp *t, struct uiw_tcp_listener *l,
					   const struct tcp_seg *s)
{
	struct tcp_seg syn;
	struct uiw_tcp_conn *c;
	int idx;

	if (!t->syncookies || l->last_cookie == 0 || t->now - l->last_cookie > 2 * 64 * UIW_NS_PER_S)
		return NULL;
	idx = uiw_tcp_cookie_check(t, s);
	if (idx < 0) {
		tcp_count(t, UIW_TCP_C_syncookies_bad);
		return NULL;
	}
	c = uiw_tcp_conn_new(t, s->daddr, s->dport, s->saddr, s->sport);
	if (c == NULL) {
		tcp_count(t, UIW_TCP_C_drop_table_full);
		return NULL;
	}
	memset(&syn, 0, sizeof(syn));
	syn.opt.has_mss = 1;
	syn.opt.mss = uiw_tcp_cookie_mss((unsigned)idx);
	uiw_tcp_cookie_opts(s, &syn.opt);
	uiw_tcp_init_conn_params(c);
	c->flags |= TF_PASSIVE;
	uiw_tcp_half_open_add(l, c);
	c->irs = s->seq - 1;
	c->rcv_nxt = s->seq;
	negotiate(c, &syn);
	c->iss = s->ack - 1;
	c->snd_una = c->iss;
	c->snd_nxt = c->snd_max = s->ack;
	c->rcv_adv = c->rcv_nxt + u32_min(uiw_tcp_rcv_window(c), 0xffffu);
	c->last_ack_sent = c->rcv_nxt;
	uiw_tcp_set_state(c, UIW_TCP_SYN_RECEIVED);
	tcp_count(t, UIW_TCP_C_syncookies_ok);
	return c;
}

/* No TCB: a SYN to a listener opens one, an ACK may carry a cookie; the rest is refused.
 * @return a TCB opened from a SYN cookie, which then takes the segment, or NULL. */
static struct uiw_tcp_conn *no_conn(struct uiw_tcp *t, struct tcp_seg *s)
{
	struct uiw_tcp_listener *l = uiw_tcp_listener_find(t, s->dport);
	struct uiw_tcp_conn *c;

	if (l != NULL && (s->flags & (UIW_TCP_SYN | UIW_TCP_ACK | UIW_TCP_RST)) == UIW_TCP_SYN) {
		passive_open(t, l, s);
		return NULL;
	}
	if (l != NULL && (s->flags & (UIW_TCP_SYN | UIW_TCP_ACK | UIW_TCP_RST)) == UIW_TCP_ACK &&
	    (c = syncookie_open(t, l, s)) != NULL)
		return c;
	tcp_count(t, UIW_TCP_C_drop_no_conn);
	/* RFC 9293 §3.10.7.1: an incoming RST is discarded; anything else gets one. */
	if (!(s->flags & UIW_TCP_RST))
		uiw_tcp_send_rst_for(t, s);
	return NULL;
}

/* Payload of the frame as its own mbuf, from sequence @p from (consumes s->m). A CRC mark
 * not made for this segment (seg_sum_right()) is taken off whatever mbuf the payload begins
 * in: on a ring pair the frame is an mbuf the other side used. */
static struct rte_mbuf *payload_from(const struct uiw_tcp_conn *c, struct tcp_seg *s,
				     uint32_t from)
{
	struct rte_mbuf *m = s->m;

	s->m = NULL;
	m = uiw_mbuf_cut_front(m, s->off + (from - s->seq));
	if (!s->crc_noted)
		m->ol_flags &= ~c->tcp->crc_flag;
	return m;
}

static void deliver(struct uiw_tcp_conn *c, struct rte_mbuf *m)
{
	c->rcv_nxt += m->pkt_len;
	c->st.bytes_in += m->pkt_len;
	if (!(c->flags & TF_DETACHED) && c->ops != NULL && c->ops->recv != NULL)
		c->ops->recv(c->user, c, m);
	else
		rte_pktmbuf_free(m);
}

/*
 * The handshake's RTT sample. Our SYN (or SYN-ACK) sent once is timed by the clock
 * (tcp_time_syn()). One sent again is not (Karn: which of them does the answer answer?),
 * unless the answer echoes the TSval of the one sent last (RFC 7323 §4.1): that one
 * arrived, and the time since it was sent bounds the round trip. An echo of an earlier
 * one (a peer that kept the TSval of our first SYN) times nothing. Without a sample the
 * RTO stays at the initial one backed off, 2 s or more, for the connection's life if it
 * never sends data: the receiving end of a stream then waits that long to send its FIN
 * again, past a peer's short TIME-WAIT.
 */
static void handshake_rtt(struct uiw_tcp_conn *c, const struct tcp_seg *s)
{
	struct uiw_tcp *t = c->tcp;

	if (!(c->flags & TF_RTT_ACTIVE) &&
	    (!(c->flags & TF_TS_OK) || !s->opt.has_ts || c->rtt_start == 0 ||
	     s->opt.tsecr != uiw_tcp_ts_at(t, c->rtt_start)))
		return;
	c->flags &= (uint16_t)~TF_RTT_ACTIVE;
	uiw_tcp_rtt_sample(c, (uint32_t)((t->now - c->rtt_start) / 1000));
}

/* SYN-SENT (RFC 9293 §3.10.7.3). */
static void in_syn_sent(struct uiw_tcp_conn *c, struct tcp_seg *s)
{
	struct uiw_tcp *t = c->tcp;
	bool has_ack = (s->flags & UIW_TCP_ACK) != 0;

	if (has_ack && (seq_le(s->ack, c->iss) || seq_gt(s->ack, c->snd_max))) {
		tcp_count(t, UIW_TCP_C_drop_syn_ack_bad);
		if (!(s->flags & UIW_TCP_RST))
			uiw_tcp_send_rst_for(t, s);
		return;
	}
	if (s->flags & UIW_TCP_RST) {
		if (has_ack) {
			tcp_count(t, UIW_TCP_C_conn_refused);
			uiw_tcp_conn_drop(c, -ECONNREFUSED);
		} else {
			tcp_count(t, UIW_TCP_C_drop_flags);
		}
		return;
	}
	if (!(s->flags & UIW_TCP_SYN)) {
		tcp_count(t, UIW_TCP_C_drop_flags);
		return;
	}
	c->irs = s->seq;
	c->rcv_nxt = s->seq + 1;
	negotiate(c, s);
	c->snd_wnd = s->wnd;
	c->max_sndwnd = s->wnd;
	c->snd_wl1 = s->seq;
	c->snd_wl2 = s->ack;
	if (!has_ack) {
		/* Simultaneous open: SYN-RECEIVED, our SYN again with an ACK. */
		uiw_tcp_set_state(c, UIW_TCP_SYN_RECEIVED);
		uiw_tcp_send_segment(c, c->iss, 0, UIW_TCP_SYN | UIW_TCP_ACK);
		return;
	}
	c->snd_una = s->ack;
	c->t_rexmt = 0;
	c->backoff = 0;
	uiw_tcp_stall_check(c);
	handshake_rtt(c, s); /* our SYN */
	uiw_tcp_set_state(c, UIW_TCP_ESTABLISHED);
	c->flags |= TF_ACK_NOW;
	if (c->ops != NULL && c->ops->connected != NULL)
		c->ops->connected(c->user, c);
}

/* RFC 5961 §7 and §10: challenge ACKs are rate limited per connection, and stack-wide by
 * a limit that changes at random each second (tcp_internal.h). */
static void challenge_ack(struct uiw_tcp_conn *c)
{
	struct uiw_tcp *t = c->tcp;

	if (c->last_challenge != 0 && t->now - c->last_challenge < TCP_CHALLENGE_GAP_NS) {
		tcp_count(t, UIW_TCP_C_challenge_ack_conn_limited);
		return;
	}
	if (t->challenge_window == 0 || t->now - t->challenge_window >= UIW_NS_PER_S) {
		t->challenge_window = t->now;
		t->challenge_count = 0;
		t->challenge_limit = TCP_CHALLENGE_ACKS_PER_S / 2 +
				     (unsigned)(rte_rand() % TCP_CHALLENGE_ACKS_PER_S);
	}
	if (t->challenge_count++ >= t->challenge_limit) {
		tcp_count(t, UIW_TCP_C_challenge_ack_limited);
		return;
	}
	c->last_challenge = t->now;
	tcp_count(t, UIW_TCP_C_challenge_ack);
	uiw_tcp_send_ack(c);
}

/* RFC 9293 §3.10.7.4 first check: is any of the segment inside the receive window? */
static bool seq_acceptable(const struct uiw_tcp_conn *c, const struct tcp_seg *s)
{
	uint32_t wnd = c->rcv_adv - c->rcv_nxt;
	uint32_t len = s->len + !!(s->flags & UIW_TCP_SYN) + !!(s->flags & UIW_TCP_FIN);

	if (seq_lt(c->rcv_adv, c->rcv_nxt))
		wnd = 0;
	if (len == 0)
		return wnd == 0 ? s->seq == c->rcv_nxt : seq_in(s->seq, c->rcv_nxt, c->rcv_nxt + wnd);
	if (wnd == 0)
		return false;
	return seq_in(s->seq, c->rcv_nxt, c->rcv_nxt + wnd) ||
	       seq_in(s->seq + len - 1, c->rcv_nxt, c->rcv_nxt + wnd);
}

/* PAWS (RFC 7323 §5.3). @return false when the segment is to be dropped. As Linux
 * (TCP_PAWS_WINDOW), a TSval one tick below TS.Recent still passes: a Linux sender stamps
 * each segment with its departure time, so a retransmission may carry a TSval a tick older
 * than a paced segment sent before it; dropped as "old", it is retransmitted again and
 * again while the sender's timer backs off (measured: a 256 MiB transfer at 5% loss took
 * 20 s or more than 600 s from one run to the next). */
#define PAWS_WINDOW 1

static bool paws_ok(struct uiw_tcp_conn *c, const struct tcp_seg *s)
{
	if (!(c->flags & TF_TS_OK) || !s->opt.has_ts || (s->flags & UIW_TCP_RST))
		return true;
	if ((int32_t)(c->ts_recent - s->opt.tsval) > PAWS_WINDOW) {
		tcp_count(c->tcp, UIW_TCP_C_drop_paws);
		return false;
	}
	return true;
}

/* Checks 1 to 4 of the synchronized states: sequence (with PAWS), RST, SYN, ACK present.
 * @return true when the segment goes on to ACK processing. */
static bool sync_checks(struct uiw_tcp_conn *c, struct tcp_seg *s)
{
	struct uiw_tcp *t = c->tcp;

	if (c->state == UIW_TCP_SYN_RECEIVED && (s->flags & UIW_TCP_SYN) && s->seq == c->irs &&
	    !(s->flags & UIW_TCP_ACK)) {
		/* The peer did not hear our SYN-ACK: say it again. */
		tcp_syn_again(c, t->now);
		uiw_tcp_send_segment(c, c->iss, 0, UIW_TCP_SYN | UIW_TCP_ACK);
		return false;
	}
	if (!paws_ok(c, s) || !seq_acceptable(c, s)) {
		if (s->flags & UIW_TCP_RST) {
			tcp_count(t, UIW_TCP_C_drop_rst_invalid);
			return false;
		}
		if (seq_le(s->seq + s->len, c->rcv_nxt) && s->len > 0) {
			tcp_count(t, UIW_TCP_C_dup_segs);
			/* RFC 2883: the ACK says which octets came twice, so that the sender
			 * can tell a needless retransmission from a loss (Linux undoes the
			 * window cut; ours takes it for no duplicate ACK). */
			if (c->flags & TF_SACK_OK) {
				c->dsack[0] = s->seq;
				c->dsack[1] = s->seq + s->len;
				c->dsack_pending = true;
			}
		} else
			tcp_count(t, UIW_TCP_C_drop_out_of_window);
		c->st.drops++;
		c->flags |= TF_ACK_NOW;
		return false;
	}
	if (s->flags & UIW_TCP_RST) {
		/* RFC 5961 §3.2: reset only on an exact match, challenge otherwise. */
		if (s->seq != c->rcv_nxt) {
			challenge_ack(c);
			return false;
		}
		if (c->flags & TF_PASSIVE)
			c->flags |= TF_DETACHED;
		/* RFC 9293 §3.10.7.4: in CLOSING and LAST-ACK a RST ends the connection, the
		 * application having closed it. With all but our FIN acknowledged the peer had
		 * every octet and its FIN was taken: a peer past its TIME-WAIT answers our FIN
		 * sent again so. The close is complete; with data unacknowledged, a reset. */
		if ((c->state == UIW_TCP_CLOSING || c->state == UIW_TCP_LAST_ACK) &&
		    c->snd_una + 1 == c->snd_max) {
			tcp_count(t, UIW_TCP_C_rst_after_fin);
			uiw_tcp_conn_drop(c, 0);
			return false;
		}
		tcp_count(t, UIW_TCP_C_rst_rx);
		uiw_tcp_conn_drop(c, c->state == UIW_TCP_SYN_RECEIVED ? -ECONNREFUSED : -ECONNRESET);
		return false;
	}
	if (s->flags & UIW_TCP_SYN) {
		/* RFC 5961 §4.2: a SYN in a synchronized state gets a challenge ACK. */
		challenge_ack(c);
		return false;
	}
	if (!(s->flags & UIW_TCP_ACK)) {
		tcp_count(t, UIW_TCP_C_drop_flags);
		return false;
	}
	return true;
}

/* SYN-RECEIVED and an acceptable ACK: the handshake is complete (RFC 9293 §3.10.7.4). */
static bool establish(struct uiw_tcp_conn *c, struct tcp_seg *s)
{
	struct uiw_tcp *t = c->tcp;
	struct uiw_tcp_listener *l = c->listener;

	if (!(seq_lt(c->snd_una, s->ack) && seq_le(s->ack, c->snd_max))) {
		uiw_tcp_send_rst_for(t, s);
		return false;
	}
	handshake_rtt(c, s); /* our SYN-ACK */
	uiw_tcp_set_state(c, UIW_TCP_ESTABLISHED);
	c->snd_wnd = (uint32_t)s->wnd << c->snd_wscale;
	c->max_sndwnd = c->snd_wnd;
	c->snd_wl1 = s->seq;
	c->snd_wl2 = s->ack;
	uiw_tcp_stall_check(c);
	if (!(c->flags & TF_PASSIVE)) {
		if (c->ops != NULL && c->ops->connected != NULL)
			c->ops->connected(c->user, c);
		return !(c->flags & TF_DOOMED);
	}
	uiw_tcp_half_open_remove(c);
	tcp_count(t, UIW_TCP_C_conn_passive);
	c->ops = l->ops;
	c->user = l->ctx;
	if (l->ops != NULL && l->ops->accept != NULL && l->ops->accept(l->ctx, c) != 0) {
		uiw_tcp_send_rst(c);
		c->flags |= TF_DETACHED;
		uiw_tcp_conn_drop(c, -ECONNABORTED);
	}
	return !(c->flags & TF_DOOMED);
}

static void new_ack(struct uiw_tcp_conn *c, const struct tcp_seg *s)
{
	struct uiw_tcp *t = c->tcp;
	uint32_t acked = s->ack - c->snd_una;
	uint32_t data_acked = u32_min(acked, c->sq.bytes);

	if ((c->flags & TF_RTT_ACTIVE) && seq_gt(s->ack, c->rtt_seq)) {
		c->flags &= (uint16_t)~TF_RTT_ACTIVE;
		uiw_tcp_rtt_sample(c, (uint32_t)((t->now - c->rtt_start) / 1000));
	}
	uiw_tcp_sndq_free_acked(c, data_acked);
	c->snd_una = s->ack;
	if (seq_lt(c->snd_nxt, c->snd_una))
		c->snd_nxt = c->snd_una;
	uiw_tcp_rto_reset(c);
	uiw_tcp_cc_ack(c, acked, s);
	/* RFC 6298 §5.2, §5.3: stop the timer when all is acknowledged, else restart it. */
	c->t_rexmt = c->snd_una == c->snd_max ? 0 : t->now + (uint64_t)c->rto_us * 1000ull;
	if (c->t_rexmt != 0)
		uiw_tcp_timer_arm(c);
	c->t_probe = 0;
	c->probe_out = false;
	uiw_tcp_probe_arm(c);
	if (data_acked > 0 && !(c->flags & TF_DETACHED) && c->ops != NULL && c->ops->sent != NULL)
		c->ops->sent(c->user, c, data_acked);
}

static void enter_time_wait(struct uiw_tcp_conn *c)
{
	struct uiw_tcp *t = c->tcp;

	uiw_tcp_set_state(c, UIW_TCP_TIME_WAIT);
	c->t_rexmt = 0;
	c->t_persist = 0;
	if (!(c->flags & TF_DETACHED) && c->ops != NULL && c->ops->closed != NULL)
		c->ops->closed(c->user, c, 0);
	c->flags |= TF_DETACHED;
	if (t->time_wait_ns == 0) {
		/* No TIME-WAIT: the ACK of the peer's FIN must still leave before the TCB goes,
		 * or the peer retransmits its FIN and meets a RST. */
		if (c->flags & TF_ACK_NOW)
			uiw_tcp_send_ack(c);
		uiw_tcp_conn_drop(c, 0);
		return;
	}
	c->t_close = t->now + t->time_wait_ns;
	uiw_tcp_timer_arm(c);
}

/* Our FIN is acknowledged: the closing states move on. @return false when c is gone. */
static bool fin_acked(struct uiw_tcp_conn *c)
{
	switch (c->state) {
	case UIW_TCP_FIN_WAIT_1:
		uiw_tcp_set_state(c, UIW_TCP_FIN_WAIT_2);
		/* Like Linux's tcp_fin_timeout: a peer that never closes does not pin the TCB. */
		c->t_close = c->tcp->now + (c->tcp->time_wait_ns > 60 * UIW_NS_PER_S ? c->tcp->time_wait_ns : 60 * UIW_NS_PER_S);
		uiw_tcp_timer_arm(c);
		return true;
	case UIW_TCP_CLOSING:
		enter_time_wait(c);
		return !(c->flags & TF_DOOMED);
	case UIW_TCP_LAST_ACK:
		uiw_tcp_conn_drop(c, 0);
		return false;
	default:
		return true;
	}
}

/* Check 5, the ACK field (RFC 9293 §3.10.7.4, RFC 5961 §5). @return false to stop. */
static bool ack_stage(struct uiw_tcp_conn *c, struct tcp_seg *s)
{
	struct uiw_tcp *t = c->tcp;
	uint32_t wnd = (uint32_t)s->wnd << c->snd_wscale;
	bool new_sacked = false;

	if (seq_gt(s->ack, c->snd_max)) {
		tcp_count(t, UIW_TCP_C_drop_ack_unsent);
		c->flags |= TF_ACK_NOW;
		return false;
	}
	if (seq_lt(s->ack, c->snd_una - c->max_sndwnd)) {
		challenge_ack(c);
		return false;
	}
	if ((c->flags & TF_SACK_OK) && s->opt.nsack > 0) {
		new_sacked = uiw_tcp_sack_update(c, &s->opt);
		uiw_tcp_cc_check_lost_rxt(c);
	}
	bool moved = seq_gt(s->ack, c->snd_una);

	if (moved) {
		new_ack(c, s);
		if (c->nscore > 0)
			uiw_tcp_score_prune(c);
	}
	/* RFC 6675 §2: with SACK, an ACK that SACKs new data is a duplicate even when it
	 * moves the cumulative ACK or the window (Linux's window grows in nearly every ACK
	 * while it autotunes: by RFC 5681's definition alone, recoveries started late or
	 * never, and the retransmission timer found the loss). */
	/* RFC 5681 §2 (b)-(e): it acknowledges nothing new; SND.UNA is compared as it was
	 * before this segment (new_ack has moved it to s->ack). */
	if (new_sacked || ((!(c->flags & TF_SACK_OK) || s->opt.nsack == 0) && !moved &&
			   s->ack == c->snd_una && s->len == 0 &&
			   !(s->flags & UIW_TCP_FIN) && seq_lt(c->snd_una, c->snd_max) &&
			   wnd == c->snd_wnd)) {
		c->st.dup_acks++;
		tcp_count(t, UIW_TCP_C_dup_acks);
		uiw_tcp_cc_dupack(c);
	}
	if (seq_lt(c->snd_wl1, s->seq) || (c->snd_wl1 == s->seq && seq_le(c->snd_wl2, s->ack))) {
		c->snd_wnd = wnd;
		c->snd_wl1 = s->seq;
		c->snd_wl2 = s->ack;
		c->max_sndwnd = u32_max(c->max_sndwnd, wnd);
		if (wnd > 0)
			c->t_persist = 0;
	}
	uiw_tcp_stall_check(c);
	if ((c->flags & TF_FIN_SENT) && s->ack == c->snd_max && !fin_acked(c))
		return false;
	/* RFC 7323 §4.3: TS.Recent follows the segment that Last.ACK.sent covers. */
	if ((c->flags & TF_TS_OK) && s->opt.has_ts && seq_le(s->seq, c->last_ack_sent) &&
	    seq_ge(s->opt.tsval, c->ts_recent))
		c->ts_recent = s->opt.tsval;
	return !(c->flags & TF_DOOMED);
}

static void fin_stage(struct uiw_tcp_conn *c)
{
	c->rcv_nxt++;
	c->flags |= TF_ACK_NOW | TF_PEER_FIN;
	switch (c->state) {
	case UIW_TCP_ESTABLISHED:
		uiw_tcp_set_state(c, UIW_TCP_CLOSE_WAIT);
		break;
	case UIW_TCP_FIN_WAIT_1:
		if ((c->flags & TF_FIN_SENT) && c->snd_una == c->snd_max) {
			enter_time_wait(c);
			return;
		}
		uiw_tcp_set_state(c, UIW_TCP_CLOSING);
		break;
	case UIW_TCP_FIN_WAIT_2:
		enter_time_wait(c);
		return;
	default:
		return;
	}
	if (!(c->flags & TF_DETACHED) && c->ops != NULL && c->ops->peer_closed != NULL)
		c->ops->peer_closed(c->user, c);
}

/* RFC 5681 §4.2: ACK at least every second full segment, at once for out-of-order data
 * or a filled hole; otherwise after the delayed-ACK time. */
static void ack_policy(struct uiw_tcp_conn *c, bool immediate)
{
	if (immediate || c->tcp->delack_ns == 0 || ++c->unacked_segs >= 2)
		c->flags |= TF_ACK_NOW;
	else
		c->flags |= TF_DELACK;
}

/* Check 7, the segment text. @return false when the connection went away. */
static bool data_stage(struct uiw_tcp_conn *c, struct tcp_seg *s)
{
	uint32_t seq = s->seq, len = s->len;
	struct rte_mbuf *m;
	bool had_ooo;

	if (c->state != UIW_TCP_ESTABLISHED && c->state != UIW_TCP_FIN_WAIT_1 &&
	    c->state != UIW_TCP_FIN_WAIT_2)
		return true; /* RFC 9293: text after the peer's FIN is ignored */
	/* Only what fits the window is kept; a FIN beyond it waits for a retransmission. */
	if (seq_gt(seq + len, c->rcv_adv)) {
		len = seq_lt(seq, c->rcv_adv) ? c->rcv_adv - seq : 0;
		s->flags &= (uint8_t)~UIW_TCP_FIN;
	}
	if (len == 0 || seq_le(seq + len, c->rcv_nxt))
		return true;
	if (seq_gt(seq, c->rcv_nxt)) {
		m = payload_from(c, s, seq);
		uiw_mbuf_trim_to(m, len);
		c->st.ooo_segs++;
		tcp_count(c->tcp, UIW_TCP_C_ooo_segs);
		uiw_tcp_reass_insert(c, m, seq, len);
		s->flags &= (uint8_t)~UIW_TCP_FIN; /* taken when it is retransmitted in order */
		ack_policy(c, true);
		return true;
	}
	/* In order, but the layer above already holds its budget of an unfinished record
	 * while the stack is short of mbufs: not acknowledged, sent again later. A segment
	 * that lets queued ones go up is always taken. */
	if (c->nooo == 0 && c->ulp_mbufs > 0 && !uiw_tcp_rx_fits(c, s->m->nb_segs)) {
		tcp_count(c->tcp, UIW_TCP_C_drop_rx_budget);
		c->st.drops++;
		ack_policy(c, true);
		return true;
	}
	m = payload_from(c, s, c->rcv_nxt);
	uiw_mbuf_trim_to(m, seq + len - c->rcv_nxt);
	had_ooo = c->nooo > 0;
	deliver(c, m);
	while (!(c->flags & TF_DOOMED) && (m = uiw_tcp_reass_pull(c)) != NULL)
		deliver(c, m);
	/* Segments joined in their burst are two or more, and so is a large-receive frame
	 * (LRO, a virtio GSO frame): ACK them now (RFC 5681 §4.2, every second segment). */
	if (s->nsegs > 1) {
		had_ooo = true;
	} else if (len > tcp_our_mss(c->tcp)) {
		tcp_count(c->tcp, UIW_TCP_C_rx_large);
		had_ooo = true;
	}
	ack_policy(c, had_ooo);
	return !(c->flags & TF_DOOMED);
}

static void in_synchronized(struct uiw_tcp_conn *c, struct tcp_seg *s)
{
	if (!sync_checks(c, s))
		return;
	if (c->state == UIW_TCP_SYN_RECEIVED && !establish(c, s))
		return;
	if (!ack_stage(c, s))
		return;
	if (!data_stage(c, s))
		return;
	if ((s->flags & UIW_TCP_FIN) && s->seq + s->len == c->rcv_nxt &&
	    c->state != UIW_TCP_TIME_WAIT && !(c->flags & TF_PEER_FIN))
		fin_stage(c);
}

/* Hands @p m to the engine that owns its connection if that is not @p t's. A PMD that
 * spreads frames by a hash of its own (af_packet's fanout, a NIC's RSS, a tap device's
 * flow table) may deliver a connection's segments on any queue. @return true if handed. */
static bool steer(struct uiw_tcp *t, struct rte_mbuf *m, unsigned ihl)
{
	const struct uiw_ipv4_hdr *ih;
	const struct uiw_tcp_hdr *th;
	unsigned owner;

	/* The NIC's RSS put it on its owner's queue: owners are named by that hash. (And a
	 * TCP engine without the lower halves of the others has nowhere to hand it.) */
	if (t->port->rss != NULL || t->net->nengines != t->port_stride)
		return false;
	if (!uiw_net_contig(m, 0, UIW_ETH_HDR_LEN + ihl + 4))
		return false;   /* tcp_parse() drops it here */
	ih = rte_pktmbuf_mtod_offset(m, const struct uiw_ipv4_hdr *, UIW_ETH_HDR_LEN);
	th = rte_pktmbuf_mtod_offset(m, const struct uiw_tcp_hdr *, UIW_ETH_HDR_LEN + ihl);
	owner = tcp_engine_of(uiw_ipv4_dst(ih), uiw_tcp_dport(th), uiw_ipv4_src(ih),
			      uiw_tcp_sport(th), t->port_stride);
	if (owner == t->port_slot)
		return false;
	uiw_net_hand(t->net, owner, m);
	return true;
}

/*
 * On a NIC whose RSS the port read back, a connection's segments come in on its owner's
 * queue, and steer() does not look at them. One that finds no connection on this engine
 * while the hash read back names another came in where the NIC hashed otherwise (a table
 * another program changed, a hash over other fields): it goes to that engine, counted
 * (net.hand_out) and said once per engine, where a RST would end the connection that
 * engine opened. A SYN alone opens a connection where it came in. @return true if s->m
 * went.
 */
static bool rss_stray(struct uiw_tcp *t, struct tcp_seg *s)
{
	unsigned owner;

	if (t->port->rss == NULL || t->port_stride <= 1 || t->net->handed ||
	    t->net->nengines != t->port_stride ||
	    (s->flags & (UIW_TCP_SYN | UIW_TCP_ACK | UIW_TCP_RST)) == UIW_TCP_SYN)
		return false;
	owner = tcp_owner(t, s->daddr, s->dport, s->saddr, s->sport);
	if (owner == t->port_slot)
		return false;
	if (!t->rss_stray_said) {
		t->rss_stray_said = true;
		UIW_WARN("port %s: a segment of a connection engine %u owns came in on engine %u's "
			 "queue: the NIC's RSS hash differs from the key and table read back at start; "
			 "such segments are handed over (net.hand_out)", t->port->name, owner,
			 t->port_slot);
	}
	uiw_net_hand(t->net, owner, s->m);   /* counted, or dropped and counted */
	s->m = NULL;
	return true;
}

/* Hands @p s to @p c's state (consumes s->m). */
static __rte_always_inline void seg_to_conn(struct uiw_tcp *t, struct uiw_tcp_conn *c,
					     struct tcp_seg *s)
{
	t->busy = c;
	c->st.segs_in += s->nsegs;
	seg_arrives[c->state](c, s);
	t->busy = NULL;
	if (c->flags & TF_DOOMED)
		uiw_tcp_conn_drop(c, c->doom_err);
	else
		uiw_tcp_mark_pending(c);
	if (s->m != NULL)
		rte_pktmbuf_free(s->m);
	s->m = NULL;
}

/*
 * Joining a burst's segments. Of a stream's full segments most come in bursts, in order,
 * each with the ACK, window and timestamps of the one before it: TCP's input for each of
 * them does again what it did for the first. So while more of its burst follows, an
 * in-order data segment of an established connection is held, and the segments after it
 * that continue it, with the same ACK, window and options, have their checksums (and
 * CRCs) taken as they come and their payloads added to its chain; the joined segment goes
 * in once, when a frame that does not continue it comes or the burst ends, as a large
 * receive would (RFC 5681 §4.2: it is acknowledged at once, being two or more segments).
 * Frames longer than the MSS (LRO, TSO frames from a guest) are many segments already
 * and are not joined: they go in a few at a time, ACKs between (tcp_poll.c).
 * What TCP then does is what it would have done for them one by one: nothing of them
 * could change what it does for the next (no flag but PSH, no SACK, the same ACK and
 * window), and their data is in order. Linux's GRO joins on the same rules. Nor does a
 * join start while the layer above holds part of a record: the receive budget's refusal
 * (data_stage()) would then refuse the whole join where it would have taken some of its
 * segments, and might again each time they came back in one burst.
 */
#define JOIN_MAX_MBUFS 32         /* in a join's chain: frames in pieces bring more than one */
#define JOIN_MAX_LEN 65535u

static bool join_may_start(const struct uiw_tcp *t, const struct uiw_tcp_conn *c,
			   const struct tcp_seg *s)
{
	return t->net->rx_more > 0 && t->rx_join > 1 && c->state == UIW_TCP_ESTABLISHED &&
	       s->len > 0 && s->len <= tcp_our_mss(t) &&
	       (s->flags & (uint8_t)~UIW_TCP_PSH) == UIW_TCP_ACK && s->seq == c->rcv_nxt &&
	       c->nooo == 0 && c->ulp_mbufs == 0 && s->opt.nsack == 0 &&
	       s->m->nb_segs < JOIN_MAX_MBUFS;
}

/* Whether @p s continues the held segment. */
static bool join_continues(const struct uiw_tcp *t, const struct tcp_join *j,
			   const struct tcp_seg *s)
{
	const struct tcp_seg *h = &j->s;

	return s->seq == h->seq + h->len && s->saddr == h->saddr && s->daddr == h->daddr &&
	       s->sport == h->sport && s->dport == h->dport && s->len > 0 &&
	       s->len <= tcp_our_mss(t) &&
	       (s->flags & (uint8_t)~UIW_TCP_PSH) == UIW_TCP_ACK && s->ack == h->ack &&
	       s->wnd == h->wnd && s->opt.nsack == 0 && s->opt.has_ts == h->opt.has_ts &&
	       (!s->opt.has_ts || (s->opt.tsval == h->opt.tsval && s->opt.tsecr == h->opt.tsecr)) &&
	       h->nsegs < t->rx_join && h->len + s->len <= JOIN_MAX_LEN &&
	       h->m->nb_segs + s->m->nb_segs <= JOIN_MAX_MBUFS;
}

static void join_start(struct uiw_tcp *t, struct uiw_tcp_conn *c, const struct tcp_seg *s)
{
	t->join.c = c;
	t->join.s = *s;
	t->join.tail = rte_pktmbuf_lastseg(s->m);
	t->net->l4_held = true;
}

/* Adds @p s's payload to the held segment's chain (consumes s->m). */
static void join_add(struct uiw_tcp *t, struct tcp_seg *s)
{
	struct tcp_join *j = &t->join;
	struct rte_mbuf *p = uiw_mbuf_cut_front(s->m, s->off);

	s->m = NULL;
	if (!s->crc_noted)   /* a mark not made here (payload_from()) */
		for (struct rte_mbuf *seg = p; seg != NULL; seg = seg->next)
			seg->ol_flags &= ~t->crc_flag;
	j->tail->next = p;
	j->tail = rte_pktmbuf_lastseg(p);
	j->s.m->nb_segs = (uint16_t)(j->s.m->nb_segs + p->nb_segs);
	j->s.m->pkt_len += p->pkt_len;
	j->s.len += s->len;
	j->s.flags |= s->flags;
	j->s.nsegs++;
	tcp_count(t, UIW_TCP_C_rx_joined);
}

/* The held segment goes in. */
static void join_end(struct uiw_tcp *t)
{
	struct uiw_tcp_conn *c = t->join.c;
	struct tcp_seg s = t->join.s;

	t->join.c = NULL;
	t->net->l4_held = false;
	seg_to_conn(t, c, &s);
}

void uiw_tcp_input_flush(void *ctx, uint64_t now)
{
	struct uiw_tcp *t = ctx;

	(void)now;
	if (t->join.c != NULL)
		join_end(t);
	t->net->l4_held = false;
}

void uiw_tcp_join_forget(struct uiw_tcp_conn *c)
{
	struct uiw_tcp *t = c->tcp;

	if (t->join.c != c)
		return;
	rte_pktmbuf_free(t->join.s.m);
	t->join.c = NULL;
	t->net->l4_held = false;
}

void uiw_tcp_input(void *ctx, struct rte_mbuf *m, unsigned ihl, uint64_t now)
{
	struct uiw_tcp *t = ctx;
	struct uiw_tcp_conn *c;
	struct tcp_seg s;
	int verdict;

	/* A segment on another engine's connection (or for one it would open) goes there. */
	if (t->port_stride > 1 && !t->net->handed && steer(t, m, ihl))
		return;
	now = tcp_clock(t, now);
	tcp_count(t, UIW_TCP_C_rx_segs);
	verdict = tcp_parse(m, ihl, &s);   /* fills every field of s when it accepts */
	if (verdict != UIW_NET_ACCEPT) {
		t->counters[verdict]++;
		rte_pktmbuf_free(m);
		return;
	}
	if (t->join.c != NULL) {
		if (join_continues(t, &t->join, &s)) {
			if (s.sum_owed && !seg_sum_right(t, t->join.c, &s)) {
				t->counters[UIW_TCP_C_drop_cksum]++;
				rte_pktmbuf_free(m);
				return;
			}
			join_add(t, &s);
			return;
		}
		join_end(t);   /* first: its connection may go, or be the one looked up */
	}
	c = uiw_tcp_lookup(t, s.daddr, s.dport, s.saddr, s.sport);
	if (s.sum_owed && !seg_sum_right(t, c, &s)) {
		t->counters[UIW_TCP_C_drop_cksum]++;
		rte_pktmbuf_free(m);
		return;
	}
	if (c == NULL && rss_stray(t, &s))
		return;
	if (c == NULL)
		c = no_conn(t, &s);
	if (c != NULL && join_may_start(t, c, &s)) {
		join_start(t, c, &s);
		return;
	}
	if (c != NULL)
		seg_to_conn(t, c, &s);
	if (s.m != NULL)
		rte_pktmbuf_free(s.m);
}
