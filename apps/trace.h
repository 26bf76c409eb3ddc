/* SPDX-License-Identifier: BSD-3-Clause */
/* Prints one line per frame a port sends, for the demo and the host tool. */
#ifndef UIW_APP_TRACE_H
#define UIW_APP_TRACE_H

#include "net.h"
#include "uiw_port.h"

struct app_trace {
	uiw_burst_fn inner;
	const char *label;
	uint64_t t0;
};

/** Wraps the port's TX so that every frame is described on stdout before it leaves. */
void app_trace_attach(struct app_trace *t, struct uiw_port *port, const char *label);

#endif
