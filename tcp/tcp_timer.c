/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Timers: one timing-wheel entry per connection at its earliest deadline (1 ms ticks,
 * 4096 slots; later deadlines wait for their turn). Retransmission (RFC 6298), persist
 * (RFC 9293 §3.8.6.1), delayed ACK (RFC 5681 §4.2), TIME-WAIT and FIN-WAIT-2 timeouts.
 */
#include "tcp_internal.h"

static uint64_t earliest(const struct uiw_tcp_conn *c)
{
	uint64_t d = UINT64_MAX;

	if (c->t_rexmt != 0 && c->t_rexmt < d)
		d = c->t_rexmt;
	if (c->t_persist != 0 && c->t_persist < d)
		d = c->t_persist;
	if (c->t_delack != 0 && c->t_delack < d)
		d = c->t_delack;
	if (c->t_close != 0 && c->t_close < d)
		d = c->t_close;
	if (c->t_probe != 0 && c->t_probe < d)
		d = c->t_probe;
	return d;
}

void uiw_tcp_timer_remove(struct uiw_tcp_conn *c)
{
	struct uiw_tcp *t = c->tcp;

	if (!(c->flags & TF_IN_WHEEL))
		return;
	if (c->wprev != NULL)
		c->wprev->wnext = c->wnext;
	else
		t->wheel[(c->t_next / TCP_TICK_NS) % TCP_WHEEL_SLOTS] = c->wnext;
	if (c->wnext != NULL)
		c->wnext->wprev = c->wprev;
	c->wprev = c->wnext = NULL;
	c->flags &= (uint16_t)~TF_IN_WHEEL;
}

/* Puts c in the wheel at its earliest deadline, unless it is already due no later. */
void uiw_tcp_timer_arm(struct uiw_tcp_conn *c)
{
	struct uiw_tcp *t = c->tcp;
	uint64_t d = earliest(c);
	unsigned slot;

	if (d == UINT64_MAX || ((c->flags & TF_IN_WHEEL) && c->t_next <= d))
		return;
	uiw_tcp_timer_remove(c);
	/* Never behind the wheel: a past deadline fires on the next tick. */
	if (d / TCP_TICK_NS <= t->wheel_tick)
		d = (t->wheel_tick + 1) * TCP_TICK_NS;
	c->t_next = d;
	slot = (unsigned)((d / TCP_TICK_NS) % TCP_WHEEL_SLOTS);
	c->wprev = NULL;
	c->wnext = t->wheel[slot];
	if (c->wnext != NULL)
		c->wnext->wprev = c;
	t->wheel[slot] = c;
	c->flags |= TF_IN_WHEEL;
}

/* RFC 6298 §2.2, §2.3 with the usual fixed-point gains; microseconds. */
void uiw_tcp_rtt_sample(struct uiw_tcp_conn *c, uint32_t rtt_us)
{
	struct uiw_tcp *t = c->tcp;
	uint32_t rto;

	if (rtt_us == 0)
		rtt_us = 1;
	if (c->srtt_us == 0) {
		c->srtt_us = rtt_us;
		c->rttvar_us = rtt_us / 2;
	} else {
		uint32_t err = rtt_us > c->srtt_us ? rtt_us - c->srtt_us : c->srtt_us - rtt_us;

		c->rttvar_us = c->rttvar_us - c->rttvar_us / 4 + err / 4;
		c->srtt_us = c->srtt_us - c->srtt_us / 8 + rtt_us / 8;
	}
	rto = c->srtt_us + u32_max(1000u, 4 * c->rttvar_us);
	c->rto_us = u32_min(u32_max(rto, t->min_rto_us), t->max_rto_us);
}

/* The RTO from the current estimates, without backoff: after an ACK of new data the
 * timer no longer needs to be backed off (as Linux does), and RFC 6298 §5.7 keeps the
 * backoff only while no new data is acknowledged. */
void uiw_tcp_rto_reset(struct uiw_tcp_conn *c)
{
	struct uiw_tcp *t = c->tcp;
	uint32_t rto;

	c->backoff = 0;
	if (c->srtt_us == 0)
		return;
	rto = c->srtt_us + u32_max(1000u, 4 * c->rttvar_us);
	c->rto_us = u32_min(u32_max(rto, t->min_rto_us), t->max_rto_us);
}

/*
 * RFC 8985 §7.2: a tail loss probe a little after two round trips, so that a lost last
 * segment is found by the ACK to the probe rather than by the retransmission timer.
 */
void uiw_tcp_probe_arm(struct uiw_tcp_conn *c)
{
	struct uiw_tcp *t = c->tcp;
	uint64_t pto;

	/* One probe until an ACK moves snd_una (RFC 8985 §7.3): the probe's own send must not
	 * arm the next, or a silent peer gets one every PTO until the RTO. */
	if (c->srtt_us == 0 || c->probe_out || (c->flags & TF_IN_RECOVERY) ||
	    c->snd_una == c->snd_max) {
		c->t_probe = 0;
		return;
	}
	pto = 2ull * c->srtt_us * 1000ull;
	if (uiw_tcp_flight(c) <= c->mss)
		pto += t->delack_ns; /* the peer may be holding its ACK */
	pto = pto < 1000000ull ? 1000000ull : pto; /* no finer than the timer tick */
	if (pto >= (uint64_t)c->rto_us * 1000ull)
		return;
	c->t_probe = t->now + pto;
	uiw_tcp_timer_arm(c);
}

/* Sends one new segment if there is one, else the last segment again (RFC 8985 §7.3). */
static void probe_expired(struct uiw_tcp_conn *c)
{
	struct uiw_tcp *t = c->tcp;
	uint32_t end = c->snd_una + c->sq.bytes;
	uint32_t len, seq;

	c->t_probe = 0;
	if (c->snd_una == c->snd_max || (c->flags & TF_IN_RECOVERY))
		return;
	c->probe_out = true;
	tcp_count(t, UIW_TCP_C_tail_loss_probes);
	if (seq_lt(c->snd_nxt, end) && seq_lt(c->snd_nxt, c->snd_una + c->snd_wnd)) {
		int n = uiw_tcp_send_segment(c, c->snd_nxt, u32_min(c->mss, end - c->snd_nxt), 0);

		if (n > 0) {
			uiw_tcp_sent_data(c, c->snd_nxt, (uint32_t)n);
			c->snd_nxt += (uint32_t)n;
		}
		return;
	}
	if (c->flags & TF_FIN_SENT) {
		uiw_tcp_send_segment(c, c->snd_max - 1, 0, UIW_TCP_FIN);
		return;
	}
	len = u32_min(c->mss, c->snd_max - c->snd_una);
	seq = c->snd_max - len;
	if (uiw_tcp_send_segment(c, seq, len, 0) > 0)
		uiw_tcp_sent_data(c, seq, len);
}

/* RFC 6298 §5.5, §5.6: back the timer off, at most to the maximum. */
static void backoff(struct uiw_tcp_conn *c)
{
	c->backoff++;
	c->rto_us = u32_min(c->rto_us * 2, c->tcp->max_rto_us);
}

static void rexmt_handshake(struct uiw_tcp_conn *c)
{
	struct uiw_tcp *t = c->tcp;
	bool synack = c->state == UIW_TCP_SYN_RECEIVED;

	if (c->backoff >= t->syn_retries) {
		tcp_count(t, UIW_TCP_C_conn_timeout);
		if (c->flags & TF_PASSIVE)
			c->flags |= TF_DETACHED;
		uiw_tcp_conn_drop(c, -ETIMEDOUT);
		return;
	}
	backoff(c);
	tcp_syn_again(c, t->now);
	uiw_tcp_send_segment(c, c->iss, 0, synack ? (UIW_TCP_SYN | UIW_TCP_ACK) : UIW_TCP_SYN);
	c->t_rexmt = t->now + (uint64_t)c->rto_us * 1000ull;
}

/* RFC 6298 §5.4-5.7 and RFC 5681 §3.1: go back to snd_una with one segment of window. */
static void rexmt_expired(struct uiw_tcp_conn *c)
{
	struct uiw_tcp *t = c->tcp;

	c->t_rexmt = 0;
	c->t_probe = 0;
	if (c->state == UIW_TCP_SYN_SENT || c->state == UIW_TCP_SYN_RECEIVED) {
		rexmt_handshake(c);
		return;
	}
	if (c->snd_una == c->snd_max) {
		uiw_tcp_output(c); /* nothing in flight: a send that lacked an mbuf, retried */
		return;
	}
	/* Only a zero-window probe's octet outstanding: no loss, and no count toward
	 * tcp_retries (a peer that answers its probes keeps an open connection, RFC 9293
	 * §3.8.6.1); the persist timer goes on. */
	if (c->snd_wnd == 0 && c->snd_max == c->snd_una + 1 && c->sq.bytes > 0) {
		if (c->t_persist == 0)
			c->t_persist = t->now + (uint64_t)c->rto_us * 1000ull;
		return;
	}
	if (c->backoff >= t->retries) {
		tcp_count(t, UIW_TCP_C_conn_timeout);
		uiw_tcp_conn_drop(c, -ETIMEDOUT);
		return;
	}
	c->st.rto_expiries++;
	tcp_count(t, UIW_TCP_C_rto_expiries);
	uiw_tcp_cc_rto(c);
	backoff(c);
	uiw_tcp_stall_check(c);
	c->flags &= (uint16_t)~TF_RTT_ACTIVE; /* Karn */
	/* Go back to SND.UNA. A FIN sent stays sent (TF_FIN_SENT): it holds the last sequence
	 * number, and an ACK of SND.MAX acknowledges it even while the data before it are
	 * still going again (uiw_tcp_output() sends it again in its turn). */
	c->snd_nxt = c->snd_una;
	uiw_tcp_output(c);
	if (c->t_rexmt == 0)
		c->t_rexmt = t->now + (uint64_t)c->rto_us * 1000ull;
}

/*
 * A zero window: a probe the peer must answer with an ACK carrying its window, so that the
 * reopening ACK cannot be lost for good. The probe carries no data: a segment whose
 * sequence number is one below SND.UNA is not acceptable (RFC 9293 §3.10.7.4), and the
 * answer to that is an ACK (Linux probes so). An octet of the queue would split the
 * FPDU at its head across two segments (RFC 5044 §8 keeps each FPDU in one).
 */
static void persist_expired(struct uiw_tcp_conn *c)
{
	struct uiw_tcp *t = c->tcp;
	uint32_t end = c->snd_una + c->sq.bytes;

	c->t_persist = 0;
	if ((c->snd_wnd != 0 && !c->record_short) || !seq_lt(c->snd_una, end) ||
	    c->snd_nxt != c->snd_una)
		return;
	if (c->record_short && c->snd_wnd != 0 && c->record_probes < UINT8_MAX)
		c->record_probes++;   /* the window is open, but short of the record */
	/* RFC 9293 §3.8.6.1 keeps an open connection probing a shut window for as long as the
	 * peer answers. One the application has closed waits TCP_ORPHAN_PROBES at most (as
	 * Linux's tcp_orphan_retries): else a peer that never reads would hold it, and its
	 * queue, for ever. */
	if ((c->flags & TF_FIN_QUEUED) && c->backoff >= TCP_ORPHAN_PROBES) {
		tcp_count(t, UIW_TCP_C_close_window_shut);
		uiw_tcp_send_rst(c);
		c->flags |= TF_DETACHED;
		uiw_tcp_conn_drop(c, -ETIMEDOUT);
		return;
	}
	tcp_count(t, UIW_TCP_C_persist_probes);
	uiw_tcp_send_segment(c, c->snd_una - 1, 0, UIW_TCP_ACK);
	backoff(c);
	c->t_persist = t->now + (uint64_t)c->rto_us * 1000ull;
}

static void fire(struct uiw_tcp_conn *c, uint64_t now)
{
	/* The ACK and the close may come early: whatever of theirs falls in this millisecond
	 * is due. The retransmission, probe and persist timers may not (RFC 6298 §5, RFC 8985
	 * §7.2): taken early, a 1 ms probe timeout came as soon as 0-100 us after the ACK
	 * that armed it (1,500 spurious probes in 1.9 s of 64 KiB Writes over memif). What
	 * is not due yet waits for the next tick (uiw_tcp_timer_arm()). */
	uint64_t tick_end = (now / TCP_TICK_NS + 1) * TCP_TICK_NS;

	if (c->t_close != 0 && tick_end >= c->t_close) {
		c->flags |= TF_DETACHED;
		uiw_tcp_conn_drop(c, 0);
		return;
	}
	if (c->t_delack != 0 && tick_end >= c->t_delack) {
		c->t_delack = 0;
		if (c->flags & TF_DELACK)
			uiw_tcp_send_ack(c);
	}
	if (c->t_probe != 0 && now >= c->t_probe)
		probe_expired(c);
	if (c->t_rexmt != 0 && now >= c->t_rexmt) {
		rexmt_expired(c);
		if (c->flags & TF_DOOMED)
			return;
	}
	if (c->state != UIW_TCP_CLOSED && c->t_persist != 0 && now >= c->t_persist)
		persist_expired(c);
}

void uiw_tcp_timers_run(struct uiw_tcp *t, uint64_t now)
{
	uint64_t tick = now / TCP_TICK_NS;

	if (t->wheel_tick == 0)
		t->wheel_tick = tick - 1;
	/* A long gap needs at most one turn of the wheel. */
	if (tick - t->wheel_tick > TCP_WHEEL_SLOTS)
		t->wheel_tick = tick - TCP_WHEEL_SLOTS;
	while (t->wheel_tick < tick) {
		unsigned slot = (unsigned)(++t->wheel_tick % TCP_WHEEL_SLOTS);
		struct uiw_tcp_conn *c = t->wheel[slot], *next;

		for (; c != NULL; c = next) {
			next = c->wnext;
			if (c->t_next / TCP_TICK_NS > t->wheel_tick)
				continue; /* a later turn of the wheel */
			uiw_tcp_timer_remove(c);
			t->busy = c;
			fire(c, now);
			t->busy = NULL;
			/* NB: fire() re-arms c into a later slot only, so next stays valid. */
			if (c->flags & TF_DOOMED) {
				uiw_tcp_conn_drop(c, c->doom_err);
				continue;
			}
			uiw_tcp_timer_arm(c);
		}
	}
	t->timers_due = (t->wheel_tick + 1) * TCP_TICK_NS;   /* the next tick's start */
}
