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
#include "instance.h"
#include "pcapw.h"
#include "trace.h"
#include "uiw_config.h"
#include "uiw_log.h"
#include "uiw_stack.h"
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
static int wait_reply(struct uiw_stack *a, struct uiw_stack *b, struct pinger *p, unsigned want,
		      uint64_t timeout_ns)
{
	uint64_t end = uiw_now_ns() + timeout_ns;

	while (p->replies < want) {
		uint64_t now = uiw_now_ns();

		if (now > end)
			return -1;
		uiw_stack_poll(a, now);
		uiw_stack_poll(b, now);
	}
	return 0;
}

static int ping_round(struct uiw_net *from, struct uiw_stack *a, struct uiw_stack *b,
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

/* An instance on one end of the ring pair, started only once its port is traced. */
static int open_instance(struct uiw_stack *s, uint16_t port_id, const struct uiw_config *base,
			 uint32_t ip, uint8_t mac_last)
{
	const struct uiw_stack_opts o = { .top = UIW_STACK_MPA, .port_id = port_id, .defer_start = true };
	struct uiw_config cfg = *base;
	char err[256];

	cfg.ip = ip;
	cfg.prefix_len = 24;
	cfg.mac_set = true;
	memcpy(cfg.mac, (const uint8_t[]){ 0x02, 0x75, 0x69, 0x77, 0x00, mac_last }, 6);
	if (uiw_stack_open(s, &cfg, &o, err, sizeof(err)) != 0) {
		fprintf(stderr, "%s\n", err);
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	static struct uiw_stack sa, sb; /* large: ARP tables */
	struct uiw_net *net_a = &sa.net, *net_b = &sb.net;
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
	if (uiw_port_ringpair_create("demo", 1, &id_a, &id_b) != 0 ||
	    open_instance(&sa, id_a, &cfg, DEMO_IP_A, 1) != 0 ||
	    open_instance(&sb, id_b, &cfg, DEMO_IP_B, 2) != 0)
		return 1;
	net_a->on_echo_reply = on_reply;
	net_a->cb_arg = &pa;
	net_b->on_echo_reply = on_reply;
	net_b->cb_arg = &pb;
	app_trace_attach(&trace_a, &sa.port, "A 10.0.0.1 ->");
	app_trace_attach(&trace_b, &sb.port, "B 10.0.0.2 ->");
	if (pcap_path != NULL) {
		pcap = app_pcap_open(pcap_path);
		if (pcap == NULL) {
			perror(pcap_path);
			return 1;
		}
		app_pcap_attach(&pcap_a, &sa.port, pcap);
		app_pcap_attach(&pcap_b, &sb.port, pcap);
	}

	printf("\n-- both announce their address (gratuitous ARP)\n");
	uiw_stack_start(&sa);
	uiw_stack_start(&sb);
	uiw_stack_poll(&sa, uiw_now_ns());
	uiw_stack_poll(&sb, uiw_now_ns());
	uiw_stack_poll(&sa, uiw_now_ns());
	printf("\n-- A pings B %u times: the first echo waits for ARP to resolve B\n", count);
	rc = ping_round(net_a, &sa, &sb, &pa, DEMO_IP_B, count);
	if (rc == 0) {
		printf("\n-- B pings A %u times: B learnt A from A's request, so no ARP\n", count);
		rc = ping_round(net_b, &sa, &sb, &pb, DEMO_IP_A, count);
	}
	int rdma = rc == 0 ? demo_rdma(&sa, &sb, &cfg) : -1;

	printf("\n");
	app_print_counters("A", &sa);
	app_print_counters("B", &sb);
	printf("\n%s: %u/%u echoes answered A->B, %u/%u B->A; iWARP operations %s\n",
	       rc == 0 && rdma == 0 ? "PASS" : "FAIL", pa.replies, count, pb.replies, count,
	       rdma == 0 ? "all as expected" : "FAILED");
	rc = rc == 0 && rdma == 0 ? 0 : -1;
	uiw_stack_close(&sa);
	uiw_stack_close(&sb);
	if (pcap != NULL)
		fclose(pcap);
	rte_eal_cleanup();
	return rc == 0 ? 0 : 1;
}
