/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * uiwarp-demo: two stack instances in one process, joined back to back by a DPDK ring
 * pair (no NIC, no hugepages). They announce themselves, resolve each other by ARP,
 * exchange ICMP echoes, then connect over TCP and MPA and run the seven iWARP operations
 * (demo_rdma.c); every frame on the wire is printed, then the counters.
 * Exit status 0 when every echo was answered and every operation did what it should.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_eal.h>

#include "demo_rdma.h"
#include "pcapw.h"
#include "net.h"
#include "trace.h"
#include "uiw_config.h"
#include "uiw_log.h"
#include "uiw_port.h"
#include "uiw_time.h"

#define DEMO_IP_A 0x0a000001u /* 10.0.0.1 */
#define DEMO_IP_B 0x0a000002u /* 10.0.0.2 */

struct pinger {
	const char *name;
	uint64_t sent_at;
	uint16_t id;
	uint16_t last_seq;
	unsigned replies;
};

static void on_reply(void *arg, uint32_t src, uint16_t id, uint16_t seq, const struct rte_mbuf *m)
{
	struct pinger *p = arg;
	char ip[16];

	(void)m;
	if (id != p->id || seq != p->last_seq)
		return;
	p->replies++;
	printf("             %s: echo reply from %s seq %u, round trip %.1f us\n", p->name,
	       uiw_ip_str(src, ip), seq, (double)(uiw_now_ns() - p->sent_at) / 1e3);
}

/* Polls both instances until @p p has its reply or @p timeout_ns passes. */
static int wait_reply(struct uiw_net *a, struct uiw_net *b, struct pinger *p, unsigned want,
		      uint64_t timeout_ns)
{
	uint64_t end = uiw_now_ns() + timeout_ns;

	while (p->replies < want) {
		uint64_t now = uiw_now_ns();

		if (now > end)
			return -1;
		uiw_net_poll(a, now);
		uiw_net_poll(b, now);
	}
	return 0;
}

static int ping_round(struct uiw_net *from, struct uiw_net *a, struct uiw_net *b,
		      struct pinger *p, uint32_t dst, unsigned count)
{
	for (unsigned seq = 1; seq <= count; seq++) {
		p->sent_at = uiw_now_ns();
		p->last_seq = (uint16_t)seq;
		if (uiw_net_ping(from, dst, p->id, (uint16_t)seq, 56, p->sent_at) != 0 ||
		    wait_reply(a, b, p, seq, 1000000000ull) != 0) {
			fprintf(stderr, "%s: no reply to echo seq %u\n", p->name, seq);
			return -1;
		}
	}
	return 0;
}

static int open_instance(struct uiw_port *port, struct uiw_net *net, uint16_t port_id,
			 const struct uiw_config *base, uint32_t ip, uint8_t mac_last)
{
	struct uiw_config cfg = *base;

	cfg.ip = ip;
	cfg.prefix_len = 24;
	cfg.mac_set = true;
	memcpy(cfg.mac, (const uint8_t[]){ 0x02, 0x75, 0x69, 0x77, 0x00, mac_last }, 6);
	if (uiw_port_open_ethdev(port, port_id, &cfg) != 0)
		return -1;
	uiw_net_init(net, port, &cfg);
	return 0;
}

int main(int argc, char **argv)
{
	static struct uiw_net net_a, net_b; /* large: ARP tables */
	struct uiw_port port_a, port_b;
	struct app_trace trace_a, trace_b;
	struct pinger pa = { "A", 0, 0x0a01, 0, 0 }, pb = { "B", 0, 0x0b02, 0, 0 };
	struct uiw_config cfg;
	char err[256];
	unsigned count = 4;
	const char *pcap_path = NULL;
	struct app_pcap pcap_a, pcap_b;
	FILE *pcap = NULL;
	uint16_t id_a, id_b;
	int opt, rc;

	while ((opt = getopt(argc, argv, "c:w:h")) != -1) {
		if (opt == 'c' && atoi(optarg) > 0) {
			count = (unsigned)atoi(optarg);
		} else if (opt == 'w') {
			pcap_path = optarg;
		} else {
			fprintf(stderr, "usage: %s [-c echoes] [-w capture.pcap]\n"
				"  Configuration ($UIWARP_CONF, $UIWARP_CONFIG) may set eal, lcores,\n"
				"  hugepages, memory, log, mtu, mbufs and the arp_* keys.\n", argv[0]);
			return opt == 'h' ? 0 : 2;
		}
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	uiw_config_defaults(&cfg);
	if (uiw_config_load_env(&cfg, err, sizeof(err)) != 0) {
		fprintf(stderr, "configuration: %s\n", err);
		return 2;
	}
	uiw_log_level_set(cfg.log_level);
	/* The ring pair is made here, whatever 'port' says. */
	cfg.port[0] = '\0';
	if (uiw_eal_init(&cfg, argv[0]) != 0)
		return 1;
	printf("uiwarp demo: two stack instances joined by a DPDK ring pair in one process\n");
	if (uiw_port_ringpair_create("demo", &id_a, &id_b) != 0 ||
	    open_instance(&port_a, &net_a, id_a, &cfg, DEMO_IP_A, 1) != 0 ||
	    open_instance(&port_b, &net_b, id_b, &cfg, DEMO_IP_B, 2) != 0)
		return 1;
	net_a.on_echo_reply = on_reply;
	net_a.cb_arg = &pa;
	net_b.on_echo_reply = on_reply;
	net_b.cb_arg = &pb;
	app_trace_attach(&trace_a, &port_a, "A 10.0.0.1 ->");
	app_trace_attach(&trace_b, &port_b, "B 10.0.0.2 ->");
	if (pcap_path != NULL) {
		pcap = app_pcap_open(pcap_path);
		if (pcap == NULL) {
			perror(pcap_path);
			return 1;
		}
		app_pcap_attach(&pcap_a, &port_a, pcap);
		app_pcap_attach(&pcap_b, &port_b, pcap);
	}

	printf("\n-- both announce their address (gratuitous ARP)\n");
	uiw_net_start(&net_a, uiw_now_ns());
	uiw_net_start(&net_b, uiw_now_ns());
	uiw_net_poll(&net_a, uiw_now_ns());
	uiw_net_poll(&net_b, uiw_now_ns());
	uiw_net_poll(&net_a, uiw_now_ns());
	printf("\n-- A pings B %u times: the first echo waits for ARP to resolve B\n", count);
	rc = ping_round(&net_a, &net_a, &net_b, &pa, DEMO_IP_B, count);
	if (rc == 0) {
		printf("\n-- B pings A %u times: B learnt A from A's request, so no ARP\n", count);
		rc = ping_round(&net_b, &net_a, &net_b, &pb, DEMO_IP_A, count);
	}
	int rdma = rc == 0 ? demo_rdma(&net_a, &net_b, &cfg) : -1;

	printf("\n");
	app_print_counters("A", &port_a, &net_a);
	app_print_counters("B", &port_b, &net_b);
	printf("\n%s: %u/%u echoes answered A->B, %u/%u B->A; iWARP operations %s\n",
	       rc == 0 && rdma == 0 ? "PASS" : "FAIL", pa.replies, count, pb.replies, count,
	       rdma == 0 ? "all as expected" : "FAILED");
	rc = rc == 0 && rdma == 0 ? 0 : -1;
	uiw_net_fini(&net_a);
	uiw_net_fini(&net_b);
	uiw_port_close(&port_a);
	uiw_port_close(&port_b);
	if (pcap != NULL)
		fclose(pcap);
	rte_eal_cleanup();
	return rc == 0 ? 0 : 1;
}
