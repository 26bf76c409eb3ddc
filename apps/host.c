/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * uiwarp-host: one stack instance on the configured port. It answers ARP and ICMP echo,
 * can ping a peer, and prints its counters when it stops (on SIGINT/SIGTERM, after
 * --duration, or after --idle-exit with nothing received).
 */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>
#include <rte_eal.h>

#include "instance.h"
#include "trace.h"
#include "uiw_config.h"
#include "uiw_log.h"
#include "uiw_stack.h"
#include "uiw_time.h"

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
	(void)sig;
	stop_requested = 1;
}

struct opts {
	double duration_s;
	unsigned idle_exit_ms;
	uint32_t ping_ip;
	unsigned ping_count;
	unsigned ping_interval_ms;
	int trace;
	const char *ready_file;
	unsigned link_wait_ms;
};

struct ping_state {
	uint16_t id;
	unsigned sent, replies;
	uint64_t sent_at[65536];
};

static void on_reply(void *arg, uint32_t src, uint16_t id, uint16_t seq, const struct rte_mbuf *m)
{
	struct ping_state *p = arg;
	char ip[16];

	(void)m;
	if (id != p->id || seq == 0 || seq > p->sent)
		return;
	p->replies++;
	printf("echo reply from %s seq %u: %.1f us\n", uiw_ip_str(src, ip), seq,
	       (double)(uiw_now_ns() - p->sent_at[seq]) / 1e3);
}

static void usage(const char *prog)
{
	fprintf(stderr,
		"usage: %s [options]\n"
		"  -c, --config FILE       configuration file (default: $UIWARP_CONF)\n"
		"  -s, --set KEY=VALUE     set one key (after the file and $UIWARP_CONFIG)\n"
		"  -d, --duration SEC      stop after SEC seconds\n"
		"  -i, --idle-exit MS      stop once nothing was received for MS ms\n"
		"  -p, --ping IP           send ICMP echo requests to IP\n"
		"  -n, --count N           echo requests to send (default 5)\n"
		"  -I, --interval MS       gap between echo requests (default 200)\n"
		"  -t, --trace             print every frame sent\n"
		"  -r, --ready-file PATH   create PATH once the port is up\n"
		"  -w, --link-wait MS      wait up to MS ms for the link to come up (default 10000)\n",
		prog);
}

static int parse_args(int argc, char **argv, struct uiw_config *cfg, struct opts *o)
{
	static const struct option longopts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "set", required_argument, NULL, 's' },
		{ "duration", required_argument, NULL, 'd' },
		{ "idle-exit", required_argument, NULL, 'i' },
		{ "ping", required_argument, NULL, 'p' },
		{ "count", required_argument, NULL, 'n' },
		{ "interval", required_argument, NULL, 'I' },
		{ "trace", no_argument, NULL, 't' },
		{ "ready-file", required_argument, NULL, 'r' },
		{ "link-wait", required_argument, NULL, 'w' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	char err[512];
	int opt;

	uiw_config_defaults(cfg);
	if (uiw_config_load_env(cfg, err, sizeof(err)) != 0)
		goto bad_config;
	while ((opt = getopt_long(argc, argv, "c:s:d:i:p:n:I:tr:w:h", longopts, NULL)) != -1) {
		struct in_addr a;

		switch (opt) {
		case 'c':
			if (uiw_config_load_file(cfg, optarg, err, sizeof(err)) != 0)
				goto bad_config;
			break;
		case 's':
			if (uiw_config_parse_text(cfg, optarg, "--set", err, sizeof(err)) != 0)
				goto bad_config;
			break;
		case 'd':
			o->duration_s = atof(optarg);
			break;
		case 'i':
			o->idle_exit_ms = (unsigned)atoi(optarg);
			break;
		case 'p':
			if (inet_pton(AF_INET, optarg, &a) != 1) {
				fprintf(stderr, "--ping: not an IPv4 address: %s\n", optarg);
				return -1;
			}
			o->ping_ip = ntohl(a.s_addr);
			break;
		case 'n':
			o->ping_count = (unsigned)atoi(optarg);
			break;
		case 'I':
			o->ping_interval_ms = (unsigned)atoi(optarg);
			break;
		case 't':
			o->trace = 1;
			break;
		case 'r':
			o->ready_file = optarg;
			break;
		case 'w':
			o->link_wait_ms = (unsigned)atoi(optarg);
			break;
		default:
			usage(argv[0]);
			return -1;
		}
	}
	if (o->ping_count > 65535)
		o->ping_count = 65535;
	if (uiw_config_validate(cfg, err, sizeof(err)) == 0)
		return 0;
bad_config:
	fprintf(stderr, "configuration: %s\n", err);
	return -1;
}

static void run(struct uiw_stack *s, const struct opts *o, struct ping_state *ps)
{
	uint64_t start = uiw_now_ns(), last_rx = start, next_ping = start;
	uint64_t end = o->duration_s > 0 ? start + (uint64_t)(o->duration_s * 1e9) : UINT64_MAX;

	while (!stop_requested) {
		uint64_t now = uiw_now_ns();

		if (uiw_stack_poll(s, now) > 0)
			last_rx = now;
		if (o->ping_ip != 0 && ps->sent < o->ping_count && now >= next_ping) {
			ps->sent++;
			ps->sent_at[ps->sent] = now;
			uiw_net_ping(&s->net, o->ping_ip, ps->id, (uint16_t)ps->sent, 56, now);
			uiw_port_flush(&s->port);
			next_ping = now + (uint64_t)o->ping_interval_ms * UIW_NS_PER_MS;
		}
		if (now >= end)
			break;
		/* Idle exit waits for the last echo's reply window too. */
		if (o->idle_exit_ms > 0 && now - last_rx > (uint64_t)o->idle_exit_ms * UIW_NS_PER_MS &&
		    (o->ping_ip == 0 || ps->sent == o->ping_count) &&
		    now - next_ping > (uint64_t)o->idle_exit_ms * UIW_NS_PER_MS / 2)
			break;
	}
}

int main(int argc, char **argv)
{
	static struct uiw_stack s;   /* large: ARP tables */
	static struct ping_state ps;
	struct opts o = { 0, 0, 0, 5, 200, 0, NULL, 10000 };
	struct uiw_config cfg;
	struct app_trace trace;
	char ip[16], err[512];

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (parse_args(argc, argv, &cfg, &o) != 0)
		return 2;
	uiw_log_level_set(cfg.log_level);
	const struct uiw_stack_opts so = { .top = UIW_STACK_NET, .port_id = UIW_STACK_PORT_CONFIG,
					   .link_wait_ms = o.link_wait_ms, .defer_start = true };

	if (uiw_eal_init(&cfg, argv[0]) != 0)
		return 1;
	if (uiw_stack_open(&s, &cfg, &so, err, sizeof(err)) != 0) {
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	ps.id = (uint16_t)(0x5500 | (cfg.ip & 0xff));
	s.net.on_echo_reply = on_reply;
	s.net.cb_arg = &ps;
	if (o.trace)
		app_trace_attach(&trace, &s.port, "->");
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	printf("uiwarp-host: %s/%u on %s, MAC " RTE_ETHER_ADDR_PRT_FMT "\n", uiw_ip_str(cfg.ip, ip),
	       cfg.prefix_len, s.port.name, RTE_ETHER_ADDR_BYTES(&s.port.mac));
	uiw_stack_start(&s);
	if (o.ready_file != NULL) {
		FILE *f = fopen(o.ready_file, "w");

		if (f != NULL)
			fclose(f);
	}
	run(&s, &o, &ps);
	app_print_counters("uiwarp-host", &s);
	if (o.ping_ip != 0)
		printf("ping: %u sent, %u replies\n", ps.sent, ps.replies);
	uiw_stack_close(&s);
	rte_eal_cleanup();
	return o.ping_ip != 0 && ps.replies < ps.sent ? 1 : 0;
}
