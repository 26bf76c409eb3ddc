/* SPDX-License-Identifier: BSD-3-Clause */
/* The poll pass: receive, owed output, timers, transmit. */
#include "tcp_internal.h"

#define POLL_MAX_BURST 512

/* The layer above was offered half of notsent_max or less: once sending has brought what
 * waits unsent below that half, it is told (ops->sent, no octets acknowledged), and
 * what it queues comes back on the pending list in this pass. Waiting for the next ACK
 * instead left a sender with nothing to queue but what an ACK brings (the responder of
 * RDMA Reads, which has no doorbell of its own) idle between ACKs: 64 KiB Reads over memif
 * moved 18.4-18.9 Gb/s against 21.3-21.5 without the limit. */
static void sent_room(struct uiw_tcp *t, struct uiw_tcp_conn *c)
{
	uint32_t flight = c->snd_nxt - c->snd_una;
	uint32_t unsent = c->sq.bytes > flight ? c->sq.bytes - flight : 0;

	if (!c->room_wanted || unsent > t->notsent_max / 2)
		return;
	c->room_wanted = false;
	if (!(c->flags & (TF_DETACHED | TF_DOOMED)) && c->ops != NULL && c->ops->sent != NULL)
		c->ops->sent(c->user, c, 0);
}

void uiw_tcp_run(struct uiw_tcp *t, uint64_t now)
{
	bool port_full = false;

	now = tcp_clock(t, now);
	/* Held for the port last pass: tried again once the PMD has taken some of the queue.
	 * While it has not, the list stays as it is: moving hundreds of connections to the
	 * pending list and back each pass cost a receiver whose ACKs the peer was slow to take
	 * more than its data (173 million waits in one 512-QP run). */
	if (t->blocked != NULL && uiw_port_tx_room(t->port) == 0) {
		uiw_port_flush(t->port);
		port_full = uiw_port_tx_room(t->port) == 0;
	}
	while (!port_full && t->blocked != NULL) {
		struct uiw_tcp_conn *c = t->blocked;

		t->blocked = c->bnext;
		c->flags &= (uint16_t)~TF_TX_BLOCKED;
		uiw_tcp_mark_pending(c);
	}
	t->pool_empty = false;

	while (t->pending != NULL) {
		struct uiw_tcp_conn *c = t->pending;

		t->pending = c->pnext;
		c->flags &= (uint16_t)~TF_PENDING;
		t->busy = c;
		if ((c->flags & (TF_DELACK | TF_ACK_NOW)) == TF_DELACK && c->t_delack == 0) {
			c->t_delack = now + t->delack_ns;
			uiw_tcp_timer_arm(c);
		}
		/* The port's queue full: the PMD may take some now; if not, nothing more goes
		 * out this pass, and the connections left wait for the next without trying
		 * (512 connections each building a segment the port refused, every pass, took
		 * more time than the data). The same once the pool had no mbuf for one. */
		if (!port_full && uiw_port_tx_room(t->port) == 0) {
			uiw_port_flush(t->port);
			port_full = uiw_port_tx_room(t->port) == 0;
		}
		if ((port_full || t->pool_empty) && !(c->flags & TF_DOOMED)) {
			if (!(c->flags & TF_TX_BLOCKED))
				tcp_count(t, UIW_TCP_C_tx_port_wait);
			uiw_tcp_mark_blocked(c);
		} else {
			uiw_tcp_output(c);
			sent_room(t, c);
		}
		t->busy = NULL;
		if (c->flags & TF_DOOMED)
			uiw_tcp_conn_drop(c, c->doom_err);
	}
	if (now >= t->timers_due)
		uiw_tcp_timers_run(t, now);
}

/* A pass takes up to POLL_RX_ROUNDS bursts while the PMD hands full ones. A sender with
 * hundreds of connections to feed took 32 frames a pass while it sent many more, its RX
 * ring filled with ACKs, and the receiver's ACKs then waited in its own queue (14 million
 * refusals by the PMD in a 512-QP run); taking more per pass also lets a receiver answer
 * more segments with each ACK. */
#define POLL_RX_ROUNDS 4

/*
 * Large frames (a TSO sender's, up to 64 KiB each, cut by nobody on the way: virtio-user to
 * vhost-user) brought a whole flight in one burst: 12 of them were the 370 KB a
 * connection's send share lets it have in flight, and the one ACK for them went out once
 * all were placed, some 200 µs later, while the sender, its share used, waited idle for
 * it (64 KiB Writes 12-14 Gb/s with TSO, 19-20 without). So large frames
 * (POLL_RX_LARGE_FRAME octets on average, above any jumbo MTU's) are taken in by
 * POLL_RX_LARGE_BURST at a time, and the ACKs they owe go out before the next are
 * (uiw_tcp_run()), so that the sender refills as this side places: 20-25 Gb/s. While
 * they come, the PMD too is asked for that many a round (its copy of the next frames
 * then waits for the ACK). Rounds of 2 or 6 frames, or an ACK a 128 KiB, did less
 * (docs/BENCHMARKS.md).
 */
#define POLL_RX_LARGE_FRAME 16384
#define POLL_RX_LARGE_BURST 4

unsigned uiw_tcp_poll(struct uiw_tcp *t, uint64_t now)
{
	struct rte_mbuf *pkts[POLL_MAX_BURST];
	uint16_t burst = (uint16_t)u32_min(t->net->rx_burst, POLL_MAX_BURST);
	/* POLL_RX_ROUNDS full bursts' worth of frames a pass, in whatever rounds they come. */
	unsigned n = 0, most = POLL_RX_ROUNDS * burst;

	now = tcp_clock(t, now);
	while (n < most) {
		uint16_t want = (uint16_t)u32_min(t->rx_large ? POLL_RX_LARGE_BURST : burst, most - n);
		uint16_t got = uiw_port_rx(t->port, pkts, want);
		uint32_t octets = 0;

		if (got == 0)
			break;
		for (uint16_t i = 0; i < got; i++)
			octets += pkts[i]->pkt_len;
		t->rx_large = octets / got >= POLL_RX_LARGE_FRAME;
		if (!t->rx_large) {
			uiw_net_input(t->net, pkts, got, now);
		} else {
			for (uint16_t i = 0; i < got; i += POLL_RX_LARGE_BURST) {
				uiw_net_input(t->net, pkts + i,
					      (uint16_t)u32_min(POLL_RX_LARGE_BURST, got - i), now);
				uiw_tcp_run(t, now);
				uiw_port_flush(t->port);
			}
		}
		n += got;
		if (got < want)
			break;
	}
	/* A pass that finds nothing (most of them, polling) costs only these checks. */
	if (uiw_net_handed_waiting(t->net))
		n += uiw_net_take_handed(t->net, now);
	uiw_net_timer_due(t->net, now);
	uiw_tcp_run(t, now);
	uiw_port_flush(t->port);
	return n;
}
