/* SPDX-License-Identifier: BSD-3-Clause */
#include "trace.h"

#include <stdio.h>

#include "uiw_time.h"

static uint16_t trace_tx(struct uiw_port *port, struct rte_mbuf **pkts, uint16_t n)
{
	struct app_trace *t = port->user;
	char line[160];

	for (uint16_t i = 0; i < n; i++) {
		uiw_net_describe(pkts[i], line, sizeof(line));
		printf("%9.3f ms  %s  %s\n", (double)(uiw_now_ns() - t->t0) / 1e6, t->label, line);
	}
	return t->inner(port, pkts, n);
}

void app_trace_attach(struct app_trace *t, struct uiw_port *port, const char *label)
{
	t->inner = port->tx_burst;
	t->label = label;
	t->t0 = uiw_now_ns();
	port->user = t;
	port->tx_burst = trace_tx;
}
