/* SPDX-License-Identifier: BSD-3-Clause */
/* The poll pass: receive, owed output, timers, transmit. */
#include "tcp_internal.h"

#define POLL_MAX_BURST 512

void uiw_tcp_run(struct uiw_tcp *t, uint64_t now)
{
	now = tcp_clock(t, now);
	while (t->blocked != NULL) {   /* held for the port last pass: try again */
		struct uiw_tcp_conn *c = t->blocked;

		t->blocked = c->bnext;
		c->flags &= (uint16_t)~TF_TX_BLOCKED;
		uiw_tcp_mark_pending(c);
	}
	bool port_full = false;

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
			tcp_count(t, UIW_TCP_C_tx_port_wait);
			uiw_tcp_mark_blocked(c);
		} else {
			uiw_tcp_output(c);
		}
		t->busy = NULL;
		if (c->flags & TF_DOOMED)
			uiw_tcp_conn_drop(c, c->doom_err);
	}
	uiw_tcp_timers_run(t, now);
}

unsigned uiw_tcp_poll(struct uiw_tcp *t, uint64_t now)
{
	struct rte_mbuf *pkts[POLL_MAX_BURST];
	uint16_t n = uiw_port_rx(t->port, pkts, (uint16_t)u32_min(t->net->rx_burst, POLL_MAX_BURST));

	now = tcp_clock(t, now);
	uiw_net_input(t->net, pkts, n, now);
	n += uiw_net_take_handed(t->net, now);
	uiw_net_timer(t->net, now);
	uiw_tcp_run(t, now);
	uiw_port_flush(t->port);
	return n;
}
