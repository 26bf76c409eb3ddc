/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * Capture of a running instance's traffic (key pcap=FILE): every frame the stack receives
 * and every frame it hands the PMD, in a pcap file Wireshark and tshark read while it is
 * being written. The wrapper sits between the port and the stack, above the fault wrapper:
 * what the capture holds is what the stack saw and sent. All engines write one file, a
 * whole record at a time.
 */
#ifndef UIW_CAPTURE_H
#define UIW_CAPTURE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "uiw_port.h"

struct uiw_capture {
	FILE *f;                  /**< shared by the engines; the owner closes it */
	bool owner;
	uiw_burst_fn inner_rx, inner_tx;
	uint16_t tx_written;      /**< frames at the head of the next TX burst written already
	                           *   (the PMD refused them last time; they come again) */
	uint64_t frames;          /**< records written by this engine */
	uint64_t truncated;       /**< frames longer than the snap length, cut */
};

/** Opens @p path for a capture (pcap, Ethernet, microseconds). @return the file or NULL. */
FILE *uiw_capture_open(const char *path);

/** Wraps @p port's RX and TX so that each frame is also written to @p f; @p owner: the
 *  detach closes @p f. */
void uiw_capture_attach(struct uiw_port *port, struct uiw_capture *c, FILE *f, bool owner);

/** Unwraps, flushes, and closes the file when it is the owner's. */
void uiw_capture_detach(struct uiw_port *port);

#endif
