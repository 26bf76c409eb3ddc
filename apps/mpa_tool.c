/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * uiwarp-mpa: MPA connections over the stack, for wire checks and interop with siw.
 * Negotiates (policy from the mpa_* keys), sends DDP Sends as FPDUs, prints what comes
 * back, closes. Exit status 0 when the connection reached full operation and the expected
 * ULPDUs arrived.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_eal.h>

#include "ddp_wire.h"
#include "instance.h"
#include "mpa.h"
#include "pcapw.h"
#include "rdmap_wire.h"
#include "uiw_time.h"

struct opts {
	struct app_mode m;
	unsigned sends, size, expect;
	int expect_set;
	const char *pd;
	const char *pcap;
	const char *ready_file;
	bool wait_first;
	unsigned timeout_ms;
	unsigned link_wait_ms;
	unsigned rounds;
};

/* One side's connection and what it saw. */
struct side {
	const char *name;
	const struct opts *o;
	struct uiw_mpa_params p;
	struct uiw_mpa_conn *c;
	bool established, closed;
	int err;
	unsigned sent, received;
	uint32_t msn;
};

static void usage(void)
{
	fprintf(stderr,
		"usage: uiwarp-mpa [--config FILE] [--set K=V]... MODE [options]\n"
		"  MODE: --pair (two instances over a ring pair here, or over vhost-user with\n"
		"        pair_link=vhost) | --listen PORT |\n"
		"        --connect IP:PORT\n"
		"  --sends N        DDP Sends each side sends once connected (default 1)\n"
		"  --size BYTES     payload of each Send (default 16)\n"
		"  --expect N       ULPDUs to receive before closing (default: --sends with --pair,\n"
		"                   else 1; 0 closes at once)\n"
		"  --pd TEXT        private data for the Request or Reply\n"
		"  --wait-first     send only after the first ULPDU arrives (as a server would)\n"
		"  --rounds N       --pair: connections one after another (default 1)\n"
		"  --pcap FILE      write every frame sent to FILE\n"
		"  --ready-file F   --listen: create F once listening\n"
		"  --timeout MS     give up after MS (default 20000)\n"
		"  --link-wait MS   wait for the port's link (default 10000)\n"
		"  MPA policy: --set mpa_rev=1|2, mpa_crc, mpa_markers, mpa_p2p, mpa_rtr, mpa_ird,\n"
		"  mpa_ord, mpa_pd_max (docs/CONFIG.md)\n");
}

static int parse_args(int argc, char **argv, struct opts *o)
{
	static const struct option longopts[] = {
		APP_MODE_OPTIONS,
		{ "sends", required_argument, NULL, 's' },
		{ "size", required_argument, NULL, 'z' }, { "expect", required_argument, NULL, 'e' },
		{ "pd", required_argument, NULL, 'd' }, { "pcap", required_argument, NULL, 'w' },
		{ "ready-file", required_argument, NULL, 'r' },
		{ "timeout", required_argument, NULL, 't' },
		{ "link-wait", required_argument, NULL, 'L' },
		{ "rounds", required_argument, NULL, 'R' }, { "help", no_argument, NULL, 'h' },
		{ "wait-first", no_argument, NULL, 'W' },
		{ NULL, 0, NULL, 0 },
	};
	int opt;

	while ((opt = app_next_option(argc, argv, longopts, &o->m)) != -1) {
		switch (opt) {
		case 's': o->sends = (unsigned)atoi(optarg); break;
		case 'z': o->size = (unsigned)atoi(optarg); break;
		case 'e': o->expect = (unsigned)atoi(optarg); o->expect_set = 1; break;
		case 'd': o->pd = optarg; break;
		case 'w': o->pcap = optarg; break;
		case 'r': o->ready_file = optarg; break;
		case 't': o->timeout_ms = (unsigned)atoi(optarg); break;
		case 'L': o->link_wait_ms = (unsigned)atoi(optarg); break;
		case 'R': o->rounds = (unsigned)atoi(optarg); break;
		case 'W': o->wait_first = true; break;
		default: usage(); return -1;
		}
	}
	if (!app_mode_valid(&o->m) || o->rounds == 0) {
		usage();
		return -1;
	}
	if (!o->expect_set)
		o->expect = o->m.pair ? o->sends : 1;
	return 0;
}

static const char *rtr_name(enum uiw_mpa_rtr r)
{
	return r == UIW_MPA_RTR_SEND ? "Send" : r == UIW_MPA_RTR_WRITE ? "Write"
	       : r == UIW_MPA_RTR_READ ? "Read" : "none";
}

static const char *const opnames[] = { "Write", "Read Request", "Read Response", "Send",
				       "Send with Invalidate", "Send with SE",
				       "Send with SE and Invalidate", "Terminate" };

static void print_ulpdu(const struct side *s, const struct uiw_mpa_ulpdu *u)
{
	struct uiw_ddp_untagged h;
	size_t got = uiw_mpa_ulpdu_copy(u, 0, &h, sizeof(h));
	unsigned op = h.rdmap & UIW_RDMAP_OPCODE_MASK;
	const char *name = op < 8 ? opnames[op] : "?";

	if (got >= sizeof(struct uiw_ddp_tagged) && (h.ctrl & UIW_DDP_T)) {
		const struct uiw_ddp_tagged *t = (const void *)&h;

		printf("%s: rx ULPDU %u octets: tagged %s stag 0x%08x to %llu\n", s->name, u->len, name,
		       uiw_ddp_stag(t), (unsigned long long)uiw_ddp_to(t));
	} else if (got == sizeof(h)) {
		printf("%s: rx ULPDU %u octets: untagged %s qn %u msn %u mo %u\n", s->name, u->len,
		       name, uiw_ddp_qn(&h), uiw_ddp_msn(&h), uiw_ddp_mo(&h));
	} else {
		printf("%s: rx ULPDU %u octets (too short for a DDP header)\n", s->name, u->len);
	}
}

static void send_all(struct side *s)
{
	static uint8_t buf[65536];

	while (s->sent < s->o->sends) {
		struct uiw_ddp_untagged h;
		struct uiw_mpa_iov iov[2] = { { &h, sizeof(h) }, { buf, s->o->size } };

		uiw_ddp_untagged_set(&h, UIW_DDP_L | UIW_DDP_VERSION, uiw_rdmap_ctrl(UIW_RDMAP_SEND), 0, UIW_DDP_QN_SEND,
				     s->msn, 0);
		for (unsigned i = 0; i < s->o->size; i++)
			buf[i] = (uint8_t)(s->sent + i);
		int rc = uiw_mpa_send(s->c, iov, 2);

		if (rc == -ENOBUFS)
			return;
		if (rc != 0) {
			printf("%s: send: %s\n", s->name, strerror(-rc));
			return;
		}
		s->msn++;
		s->sent++;
	}
}

static void maybe_done(struct side *s)
{
	if (s->established && s->c != NULL && s->sent == s->o->sends && s->received >= s->o->expect)
		uiw_mpa_close(s->c);
}

static void on_established(void *user, struct uiw_mpa_conn *c, const struct uiw_mpa_info *n)
{
	struct side *s = user;

	s->c = c;
	s->established = true;
	/* A Send RTR used MSN 1 of queue 0. */
	s->msn = n->rtr == UIW_MPA_RTR_SEND ? 2 : 1;
	printf("%s: established as %s: rev %u, CRC %s, Markers tx %s rx %s, peer-to-peer %s, RTR %s, "
	       "IRD %u ORD %u, MULPDU %u, peer private data %u octets\n",
	       s->name, n->initiator ? "initiator" : "responder", n->rev, n->crc ? "on" : "off",
	       n->markers_tx ? "on" : "off", n->markers_rx ? "on" : "off", n->p2p ? "yes" : "no",
	       rtr_name(n->rtr), n->ird, n->ord, n->mulpdu, n->pd_len);
	if (!s->o->wait_first)
		send_all(s);
	maybe_done(s);
}

static void on_request(void *ctx, struct uiw_mpa_conn *c, const struct uiw_mpa_rr_info *q);

static void on_rejected(void *user, struct uiw_mpa_conn *c, const uint8_t *pd, uint16_t len)
{
	(void)c;
	(void)pd;
	printf("%s: rejected by the responder (%u octets of private data)\n",
	       ((struct side *)user)->name, len);
}

static int on_ulpdu(void *user, struct uiw_mpa_conn *c, const struct uiw_mpa_ulpdu *u)
{
	struct side *s = user;

	(void)c;
	print_ulpdu(s, u);
	s->received++;
	send_all(s);
	maybe_done(s);
	return 0;
}

static void on_writable(void *user, struct uiw_mpa_conn *c)
{
	(void)c;
	send_all(user);
}

static void on_closed(void *user, struct uiw_mpa_conn *c, int err)
{
	struct side *s = user;

	s->closed = true;
	s->err = err;
	s->c = NULL;
	printf("%s: closed (%s): %s\n", s->name, err == 0 ? "ok" : strerror(-err), uiw_mpa_reason(c));
}

static const struct uiw_mpa_ops side_ops = {
	.request = on_request, .established = on_established, .rejected = on_rejected,
	.ulpdu = on_ulpdu, .writable = on_writable, .closed = on_closed,
};

static void on_request(void *ctx, struct uiw_mpa_conn *c, const struct uiw_mpa_rr_info *q)
{
	struct side *s = ctx;
	int rc;

	s->c = c;
	printf("%s: Request rev %u, M %d C %d, enhanced %d, IRD %u ORD %u, peer-to-peer %d, "
	       "private data %u octets\n", s->name, q->rev, q->markers, q->crc, q->enhanced, q->ird,
	       q->ord, q->peer_to_peer, q->pd_len);
	rc = uiw_mpa_accept(c, &s->p, &side_ops, s);
	if (rc != 0)
		printf("%s: accept: %s\n", s->name, strerror(-rc));
}

static void side_init(struct side *s, const char *name, const struct opts *o,
		      const struct uiw_config *cfg)
{
	memset(s, 0, sizeof(*s));
	s->name = name;
	s->o = o;
	uiw_mpa_params_from_config(&s->p, cfg);
	if (o->pd != NULL) {
		s->p.pd = (const uint8_t *)o->pd;
		s->p.pd_len = (uint16_t)strlen(o->pd);
	}
}

static bool side_ok(const struct side *s)
{
	return s->established && s->sent == s->o->sends && s->received >= s->o->expect;
}

struct run {
	struct uiw_stack a, b;
	const struct opts *o;
};

static void poll_all(struct run *r)
{
	uint64_t now = uiw_now_ns();

	uiw_stack_poll(&r->a, now);
	if (r->o->m.pair)
		uiw_stack_poll(&r->b, now);
}

/* One connection: the client side (pair or --connect) and/or the server side. */
static bool one_round(struct run *r, struct side *cli, struct side *srv, unsigned round)
{
	const struct opts *o = r->o;
	uint64_t end = uiw_now_ns() + (uint64_t)o->timeout_ms * UIW_NS_PER_MS;

	if (cli != NULL) {
		uint32_t ip = o->m.pair ? UIW_STACK_PAIR_IP_B : o->m.connect_ip;
		uint16_t port = o->m.pair ? 7174 : o->m.connect_port;
		int rc = uiw_mpa_connect(r->a.mpa, ip, port, &cli->p, &side_ops, cli, uiw_now_ns(), &cli->c);

		if (rc != 0) {
			printf("%s: connect: %s\n", cli->name, strerror(-rc));
			return false;
		}
	}
	while (uiw_now_ns() < end) {
		poll_all(r);
		if ((cli == NULL || cli->closed) && (srv == NULL || srv->closed))
			break;
	}
	if (cli != NULL && cli->c != NULL)
		uiw_mpa_abort(cli->c, "tool timeout");
	if (srv != NULL && srv->c != NULL)
		uiw_mpa_abort(srv->c, "tool timeout");
	bool ok = (cli == NULL || side_ok(cli)) && (srv == NULL || side_ok(srv));

	printf("round %u: %s\n", round + 1, ok ? "ok" : "FAILED");
	return ok;
}

static int open_all(struct run *r, const struct uiw_config *cfg, FILE **pcap)
{
	static struct app_pcap pa, pb;
	const struct opts *o = r->o;

	if (o->m.pair ? app_stack_pair(&r->a, &r->b, cfg, UIW_STACK_MPA, "mpa", false) != 0
		    : app_stack_open(&r->a, cfg, UIW_STACK_MPA, o->link_wait_ms, false) != 0)
		return -1;
	if (o->pcap != NULL) {
		*pcap = app_pcap_open(o->pcap);
		if (*pcap == NULL) {
			perror(o->pcap);
			return -1;
		}
		app_pcap_attach(&pa, &r->a.port, *pcap);
		if (o->m.pair)
			app_pcap_attach(&pb, &r->b.port, *pcap);
	}
	return 0;
}

static void close_all(struct run *r)
{
	uiw_counters_print(stdout, "mpa", uiw_mpa_counter_desc, uiw_mpa_counters(r->a.mpa),
			   UIW_MPA_C__COUNT, true);
	if (r->o->m.pair)
		uiw_counters_print(stdout, "mpa(b)", uiw_mpa_counter_desc, uiw_mpa_counters(r->b.mpa),
				   UIW_MPA_C__COUNT, true);
	uiw_stack_close(&r->a);
	if (r->o->m.pair)
		uiw_stack_close(&r->b);
}

static int listen_server(struct run *r, struct side *srv)
{
	struct uiw_mpa *m = r->o->m.pair ? r->b.mpa : r->a.mpa;
	uint16_t port = r->o->m.pair ? 7174 : r->o->m.listen_port;
	int rc = uiw_mpa_listen(m, port, 16, &srv->p, &side_ops, srv);

	if (rc != 0) {
		printf("listen: %s\n", strerror(-rc));
		return -1;
	}
	if (r->o->ready_file != NULL) {
		FILE *f = fopen(r->o->ready_file, "w");

		if (f != NULL)
			fclose(f);
	}
	return 0;
}

int main(int argc, char **argv)
{
	static struct run r;
	struct opts o = { .sends = 1, .size = 16, .timeout_ms = 20000, .link_wait_ms = 10000,
			  .rounds = 1 };
	struct side cli, srv;
	struct uiw_config cfg;
	FILE *pcap = NULL;
	unsigned failed = 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (app_load_config(&cfg, &argc, argv) != 0 || parse_args(argc, argv, &o) != 0)
		return 2;
	if (!o.m.pair && (cfg.port[0] == '\0' || cfg.ip == 0)) {
		fprintf(stderr, "--listen and --connect need port= and ip= in the configuration\n");
		return 2;
	}
	if (uiw_eal_init(&cfg, argv[0]) != 0)
		return 2;
	r.o = &o;
	if (open_all(&r, &cfg, &pcap) != 0)
		return 1;
	side_init(&srv, o.m.pair ? "responder" : "mpa", &o, &cfg);
	if ((o.m.pair || o.m.listen_port) && listen_server(&r, &srv) != 0)
		return 1;
	for (unsigned i = 0; i < o.rounds; i++) {
		side_init(&cli, o.m.pair ? "initiator" : "mpa", &o, &cfg);
		if (o.m.pair || o.m.listen_port)
			side_init(&srv, srv.name, &o, &cfg);
		failed += !one_round(&r, o.m.pair || o.m.connect_ip ? &cli : NULL,
				     o.m.pair || o.m.listen_port ? &srv : NULL, i);
	}
	close_all(&r);
	if (pcap != NULL)
		fclose(pcap);
	rte_eal_cleanup();
	printf("RESULT: %s (%u of %u rounds failed)\n", failed ? "FAIL" : "PASS", failed, o.rounds);
	return failed ? 1 : 0;
}
