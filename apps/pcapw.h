/* SPDX-License-Identifier: BSD-3-Clause */
/* Writes every frame a port sends to a pcap file (for tshark and the wire checks). */
#ifndef UIW_APP_PCAPW_H
#define UIW_APP_PCAPW_H

#include <stdio.h>

#include "uiw_port.h"

struct app_pcap {
	uiw_burst_fn inner;
	void *inner_user;     /* port->user as the wrapped TX function expects it */
	FILE *f;
};

/** Opens @p path and writes the pcap header (Ethernet). @return the file or NULL. */
FILE *app_pcap_open(const char *path);

/** Wraps the port's TX so that each frame is also written to @p f. */
void app_pcap_attach(struct app_pcap *p, struct uiw_port *port, FILE *f);

#endif
