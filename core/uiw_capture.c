/* SPDX-License-Identifier: BSD-3-Clause */
#include "uiw_capture.h"

#include <sys/time.h>

#define SNAP 65535u

FILE *uiw_capture_open(const char *path)
{
	/* pcap 2.4, microseconds, snap length 65535, LINKTYPE_ETHERNET. */
	const uint32_t hdr[6] = { 0xa1b2c3d4u, 2u | 4u << 16, 0, 0, SNAP, 1 };
	FILE *f = fopen(path, "wb");

	if (f != NULL && fwrite(hdr, sizeof(hdr), 1, f) != 1) {
		fclose(f);
		f = NULL;
	}
	if (f != NULL)
		fflush(f);
	return f;
}

/* The frames, each a whole record (other engines write the same file), then flushed: a
 * reader following the file sees whole records. */
static void write_frames(struct uiw_capture *c, struct rte_mbuf **pkts, uint16_t from, uint16_t n)
{
	uint8_t buf[SNAP];
	struct timeval tv;

	if (from >= n)
		return;
	gettimeofday(&tv, NULL);
	flockfile(c->f);
	for (uint16_t i = from; i < n; i++) {
		uint32_t len = pkts[i]->pkt_len < SNAP ? pkts[i]->pkt_len : SNAP;
		const void *d = rte_pktmbuf_read(pkts[i], 0, len, buf);
		uint32_t rec[4] = { (uint32_t)tv.tv_sec, (uint32_t)tv.tv_usec, len, pkts[i]->pkt_len };

		if (d == NULL)
			continue;
		c->truncated += len < pkts[i]->pkt_len;
		fwrite_unlocked(rec, sizeof(rec), 1, c->f);
		fwrite_unlocked(d, len, 1, c->f);
		c->frames++;
	}
	fflush_unlocked(c->f);
	funlockfile(c->f);
}

static uint16_t capture_rx(struct uiw_port *port, struct rte_mbuf **pkts, uint16_t n)
{
	struct uiw_capture *c = port->capture;
	uint16_t got = c->inner_rx(port, pkts, n);

	write_frames(c, pkts, 0, got);
	return got;
}

/* Written before the PMD has them (it may free a frame as it takes it). Frames it refuses
 * stay at the head of the port's queue and come again (uiw_port_flush()): those are not
 * written twice. */
static uint16_t capture_tx(struct uiw_port *port, struct rte_mbuf **pkts, uint16_t n)
{
	struct uiw_capture *c = port->capture;
	uint16_t sent;

	write_frames(c, pkts, c->tx_written < n ? c->tx_written : n, n);
	sent = c->inner_tx(port, pkts, n);
	c->tx_written = (uint16_t)(n - sent);
	return sent;
}

void uiw_capture_attach(struct uiw_port *port, struct uiw_capture *c, FILE *f, bool owner)
{
	*c = (struct uiw_capture){ .f = f, .owner = owner, .inner_rx = port->rx_burst,
				   .inner_tx = port->tx_burst };
	port->rx_burst = capture_rx;
	port->tx_burst = capture_tx;
	port->capture = c;
}

void uiw_capture_detach(struct uiw_port *port)
{
	struct uiw_capture *c = port->capture;

	if (c == NULL)
		return;
	port->rx_burst = c->inner_rx;
	port->tx_burst = c->inner_tx;
	port->capture = NULL;
	if (c->owner)
		fclose(c->f);
	else
		fflush(c->f);
	c->f = NULL;
}
