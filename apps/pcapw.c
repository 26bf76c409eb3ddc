/* SPDX-License-Identifier: BSD-3-Clause */
#include "pcapw.h"

#include <stdint.h>
#include <sys/time.h>

FILE *app_pcap_open(const char *path)
{
	/* pcap 2.4, microseconds, snap length 65535, LINKTYPE_ETHERNET. */
	const uint32_t hdr[6] = { 0xa1b2c3d4u, 2u | 4u << 16, 0, 0, 65535, 1 };
	FILE *f = fopen(path, "wb");

	if (f != NULL && fwrite(hdr, sizeof(hdr), 1, f) != 1) {
		fclose(f);
		f = NULL;
	}
	return f;
}

static uint16_t pcap_tx(struct uiw_port *port, struct rte_mbuf **pkts, uint16_t n)
{
	struct app_pcap *p = port->user;
	static __thread uint8_t buf[65536];
	struct timeval tv;

	gettimeofday(&tv, NULL);
	for (uint16_t i = 0; i < n; i++) {
		uint32_t len = pkts[i]->pkt_len < sizeof(buf) ? pkts[i]->pkt_len : sizeof(buf);
		const void *d = rte_pktmbuf_read(pkts[i], 0, len, buf);
		uint32_t rec[4] = { (uint32_t)tv.tv_sec, (uint32_t)tv.tv_usec, len, pkts[i]->pkt_len };

		if (d != NULL) {
			fwrite(rec, sizeof(rec), 1, p->f);
			fwrite(d, len, 1, p->f);
		}
	}
	/* The wrapped function (a trace, a test port) reads port->user too. */
	port->user = p->inner_user;
	uint16_t sent = p->inner(port, pkts, n);

	port->user = p;
	return sent;
}

void app_pcap_attach(struct app_pcap *p, struct uiw_port *port, FILE *f)
{
	p->inner = port->tx_burst;
	p->inner_user = port->user;
	p->f = f;
	port->user = p;
	port->tx_burst = pcap_tx;
}
