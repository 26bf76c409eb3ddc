/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * uiwarp-perf: bandwidth and latency of Send, RDMA Write and RDMA Read over the verbs and
 * rdma_cm API, between two instances here (--pair) or two processes on any configured
 * port (--listen / --connect), in a perftest-like table or as CSV. One connection per
 * size: the client's private data says the test, the server's answers with its buffer.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#include <rte_eal.h>

#include "instance.h"
#include "verbs_app.h"
#include "eth_wire.h"
#include "ipv4_wire.h"
#include "tcp_wire.h"
#include "uiw_time.h"
#include "uiw_verbs.h"

#define BUF_MAX (1u << 20)
#define DEPTH 128   /* work requests in flight (perftest's default -t) */

enum op { OP_SEND, OP_WRITE, OP_READ };

struct opts {
	struct app_mode m;
	enum op op;
	bool lat, csv;
	uint32_t min_size, max_size;
	unsigned iters;
	unsigned link_wait_ms;
	unsigned ord;         /* Reads in flight (the MPA ORD asked for; perftest's -o) */
	unsigned warmup;      /* latency: round trips made before the measured ones */
	bool warmup_set;
	bool breakdown;       /* --breakdown */
};

/* What the client asks for (private data of the Request) and the server answers. */
struct hello {
	uint32_t op, lat, size, iters;
	uint64_t addr;
	uint32_t rkey, pad;
} __attribute__((packed));

struct ep {
	struct rdma_cm_id *id;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	uint8_t *buf;
	struct hello peer;
	bool up, down;
};

static struct rdma_event_channel *cli_ch, *srv_ch;
static struct rdma_cm_id *listen_id;
static struct ep cli, srv;
static uint8_t cli_ord = 16;   /* --ord */
static const char *const op_names[] = { "Send", "RDMA Write", "RDMA Read" };

static void die(const char *what)
{
	fprintf(stderr, "uiwarp-perf: %s: %s\n", what, strerror(errno));
	exit(1);
}

/*
 * --breakdown: where the 8 B Write ping-pong's time goes, between two processes. The port's
 * bursts are wrapped to note when the PMD last took a frame carrying TCP payload (sent) and
 * last gave one (received), by this process's clock. Per round trip the client splits its
 * time into posting to sending, sending to receiving the answer, and receiving to seeing
 * it in memory; the server, into receiving to seeing the Write in memory, and posting its
 * own to sending it. What the client waits for less the server's part is the two trips
 * through the port, the PMD's own work included. Each side prints its medians: the client
 * after its run, the server when it is stopped.
 */
enum { BD_C_SEND, BD_C_WIRE, BD_C_RECV, BD_S_IN, BD_S_SEE, BD_S_OUT, BD__N };
static const char *const bd_names[BD__N] = {
	"client: posted to sent", "client: sent to the answer received",
	"client: received to seen in memory", "server: received to seen in memory",
	"server: seen to posted", "server: posted to sent",
};

static struct {
	bool on;
	uiw_burst_fn rx, tx;
	uint64_t last_rx, last_tx, seen, posted;
	uint64_t *v[BD__N];
	unsigned n[BD__N], cap;
} bd;

/* A TCP/IPv4 frame (an IPv4 header without options) with payload. */
static bool frame_has_payload(struct rte_mbuf *m)
{
	uint8_t buf[UIW_ETH_HDR_LEN + UIW_IPV4_HDR_LEN + UIW_TCP_HDR_LEN];
	const uint8_t *f = rte_pktmbuf_read(m, 0, sizeof(buf), buf);
	const struct uiw_ipv4_hdr *ih;

	if (f == NULL || uiw_eth_type((const struct uiw_eth_hdr *)f) != UIW_ETHERTYPE_IPV4)
		return false;
	ih = (const struct uiw_ipv4_hdr *)(f + UIW_ETH_HDR_LEN);
	if (ih->proto != UIW_IPPROTO_TCP || uiw_ipv4_hdr_len(ih) != UIW_IPV4_HDR_LEN)
		return false;
	return uiw_ipv4_total_len(ih) >
	       UIW_IPV4_HDR_LEN + uiw_tcp_hdr_len((const struct uiw_tcp_hdr *)(ih + 1));
}

static uint16_t bd_rx(struct uiw_port *port, struct rte_mbuf **pkts, uint16_t n)
{
	uint16_t got = bd.rx(port, pkts, n);

	for (uint16_t i = 0; i < got; i++)
		if (frame_has_payload(pkts[i])) {
			bd.last_rx = uiw_now_ns();
			break;
		}
	return got;
}

static uint16_t bd_tx(struct uiw_port *port, struct rte_mbuf **pkts, uint16_t n)
{
	for (uint16_t i = 0; i < n; i++)
		if (frame_has_payload(pkts[i])) {
			bd.last_tx = uiw_now_ns();
			break;
		}
	return bd.tx(port, pkts, n);
}

static void bd_attach(struct uiw_port *port, unsigned cap)
{
	bd.on = true;
	bd.rx = port->rx_burst;
	bd.tx = port->tx_burst;
	port->rx_burst = bd_rx;
	port->tx_burst = bd_tx;
	bd.cap = cap;
	for (unsigned i = 0; i < BD__N; i++)
		if ((bd.v[i] = calloc(cap, sizeof(uint64_t))) == NULL)
			die("memory");
}

static void bd_note(unsigned k, uint64_t from, uint64_t to)
{
	if (bd.on && from != 0 && to >= from && bd.n[k] < bd.cap)
		bd.v[k][bd.n[k]++] = to - from;
}

static int cmp_u64(const void *a, const void *b);

static void bd_print(unsigned first, unsigned last)
{
	for (unsigned k = first; k <= last; k++) {
		if (bd.n[k] == 0)
			continue;
		qsort(bd.v[k], bd.n[k], sizeof(uint64_t), cmp_u64);
		printf("breakdown: %-36s p50 %6.3f us, p10 %6.3f, p90 %6.3f (%u)\n", bd_names[k],
		       bd.v[k][bd.n[k] / 2] / 1e3, bd.v[k][bd.n[k] / 10] / 1e3,
		       bd.v[k][(size_t)bd.n[k] * 9 / 10] / 1e3, bd.n[k]);
		bd.n[k] = 0;
	}
}

static int ep_setup(struct ep *e, struct rdma_cm_id *id)
{
	struct ibv_qp_init_attr qa = { .qp_type = IBV_QPT_RC,
				       .cap = { .max_send_wr = DEPTH * 2, .max_recv_wr = DEPTH * 2,
						.max_send_sge = 1, .max_recv_sge = 1 } };

	e->id = id;
	/* Two halves: what is sent from, and where latency tests write back to. */
	if (e->buf == NULL && (e->buf = calloc(2, BUF_MAX)) == NULL)
		return -1;
	e->pd = ibv_alloc_pd(id->verbs);
	e->cq = e->pd != NULL ? ibv_create_cq(id->verbs, DEPTH * 4, NULL, NULL, 0) : NULL;
	if (e->cq == NULL)
		return -1;
	qa.send_cq = qa.recv_cq = e->cq;
	if (rdma_create_qp(id, e->pd, &qa) != 0)
		return -1;
	e->mr = ibv_reg_mr(e->pd, e->buf, 2 * BUF_MAX, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			   IBV_ACCESS_REMOTE_READ);
	return e->mr != NULL ? 0 : -1;
}

static void ep_teardown(struct ep *e)
{
	if (e->id != NULL) {
		rdma_destroy_qp(e->id);
		if (e->id != listen_id)
			rdma_destroy_id(e->id);
	}
	if (e->mr != NULL)
		ibv_dereg_mr(e->mr);
	if (e->cq != NULL)
		ibv_destroy_cq(e->cq);
	if (e->pd != NULL)
		ibv_dealloc_pd(e->pd);
	e->id = NULL;
	e->mr = NULL;
	e->cq = NULL;
	e->pd = NULL;
	e->up = e->down = false;
}

static int post_recv(struct ep *e, uint32_t size, uint64_t id)
{
	struct ibv_sge s = { (uintptr_t)e->buf, size, e->mr->lkey };
	struct ibv_recv_wr w = { .wr_id = id, .sg_list = &s, .num_sge = 1 }, *bad;

	return ibv_post_recv(e->id->qp, &w, &bad);
}

/* @p off: where in both buffers (0, or BUF_MAX for the write-back half). */
static int post_op(struct ep *e, enum op op, uint32_t size, bool signaled, uint64_t id, uint32_t off)
{
	struct ibv_sge s = { (uintptr_t)e->buf + off, size, e->mr->lkey };
	struct ibv_send_wr w = { .wr_id = id, .sg_list = &s, .num_sge = 1,
				 .send_flags = signaled ? IBV_SEND_SIGNALED : 0 }, *bad;

	w.opcode = op == OP_SEND ? IBV_WR_SEND : op == OP_WRITE ? IBV_WR_RDMA_WRITE : IBV_WR_RDMA_READ;
	w.wr.rdma.remote_addr = e->peer.addr + off;
	w.wr.rdma.rkey = e->peer.rkey;
	if (op == OP_READ)
		w.send_flags = IBV_SEND_SIGNALED;
	return ibv_post_send(e->id->qp, &w, &bad);
}

static uint32_t srv_seq;

static void take_hello(const struct rdma_cm_event *ev, struct hello *h)
{
	memset(h, 0, sizeof(*h));
	if (ev->param.conn.private_data_len >= sizeof(*h))
		memcpy(h, ev->param.conn.private_data, sizeof(*h));
}

static void srv_event(struct rdma_cm_event *ev)
{
	struct hello h;

	switch (ev->event) {
	case RDMA_CM_EVENT_CONNECT_REQUEST: {
		take_hello(ev, &srv.peer);
		if (ep_setup(&srv, ev->id) != 0)
			die("server resources");
		for (unsigned i = 0; srv.peer.op == OP_SEND && i < DEPTH * 2; i++)
			post_recv(&srv, srv.peer.size, i);
		h = (struct hello){ .addr = (uintptr_t)srv.buf, .rkey = srv.mr->rkey };
		/* As many Reads in flight as the client's ORD asks (the request's
		 * responder_resources), at least 16. */
		uint8_t ird = ev->param.conn.responder_resources > 16 ? ev->param.conn.responder_resources : 16;
		struct rdma_conn_param cp = { .private_data = &h, .private_data_len = sizeof(h),
					      .responder_resources = ird, .initiator_depth = 16 };

		srv_seq = 0;
		memset(srv.buf, 0, 2 * BUF_MAX);
		if (rdma_accept(ev->id, &cp) != 0)
			die("rdma_accept");
		break;
	}
	case RDMA_CM_EVENT_ESTABLISHED:
		srv.up = true;
		break;
	case RDMA_CM_EVENT_DISCONNECTED:
		rdma_ack_cm_event(ev);
		ep_teardown(&srv);
		return;
	default:
		break;
	}
	rdma_ack_cm_event(ev);
}

static void cli_event(struct rdma_cm_event *ev, const struct hello *ask)
{
	switch (ev->event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		if (rdma_resolve_route(ev->id, 2000) != 0)
			die("rdma_resolve_route");
		break;
	case RDMA_CM_EVENT_ROUTE_RESOLVED: {
		struct hello h = *ask;
		struct rdma_conn_param cp = { .private_data = &h, .private_data_len = sizeof(h),
					      .responder_resources = 16, .initiator_depth = cli_ord };

		if (ep_setup(&cli, ev->id) != 0)
			die("client resources");
		h.addr = (uintptr_t)cli.buf;
		h.rkey = cli.mr->rkey;
		if (rdma_connect(ev->id, &cp) != 0)
			die("rdma_connect");
		break;
	}
	case RDMA_CM_EVENT_ESTABLISHED:
		take_hello(ev, &cli.peer);
		cli.up = true;
		break;
	case RDMA_CM_EVENT_DISCONNECTED:
		cli.down = true;
		break;
	default:
		fprintf(stderr, "uiwarp-perf: %s (status %d)\n", rdma_event_str(ev->event), ev->status);
		exit(1);
	}
	rdma_ack_cm_event(ev);
}

/* The server's side of a test: re-post receives, echo Sends, answer Writes. */
static void srv_work(void)
{
	struct ibv_wc wc[DEPTH];
	int n;

	if (srv.cq == NULL || !srv.up)
		return;
	n = ibv_poll_cq(srv.cq, DEPTH, wc);
	for (int i = 0; i < n; i++) {
		if (wc[i].status != IBV_WC_SUCCESS || wc[i].opcode != IBV_WC_RECV)
			continue;
		post_recv(&srv, srv.peer.size, wc[i].wr_id);
		if (srv.peer.lat)
			post_op(&srv, OP_SEND, srv.peer.size, false, 0, 0);
	}
	if (srv.peer.lat && srv.peer.op == OP_WRITE && srv.peer.size > 0 &&
	    srv.buf[srv.peer.size - 1] == (uint8_t)(srv_seq + 1)) {
		if (bd.on) {
			uint64_t now = uiw_now_ns();

			/* The answer before this one has gone by now. */
			bd_note(BD_S_OUT, bd.posted, bd.last_tx);
			bd_note(BD_S_IN, bd.last_rx, now);
			bd.seen = now;
		}
		srv_seq++;
		srv.buf[BUF_MAX + srv.peer.size - 1] = (uint8_t)srv_seq;
		if (bd.on) {
			bd.posted = uiw_now_ns();
			bd_note(BD_S_SEE, bd.seen, bd.posted);
		}
		post_op(&srv, OP_WRITE, srv.peer.size, false, 0, BUF_MAX);
	}
}

/* SIGINT or SIGTERM: with $UIWARP_STATS, the counters are printed before the end (a
 * listening server runs until it is stopped; a stuck client is stopped by its timeout). */
static volatile sig_atomic_t stop_signal;
static struct uiw_stack *stats_stack;

static void on_stop_signal(int sig)
{
	stop_signal = sig;
}

static bool stats_wanted(void)
{
	return getenv("UIWARP_STATS") != NULL && strcmp(getenv("UIWARP_STATS"), "0") != 0;
}

/* One pass of the stack (unless @p passed: the caller's ibv_poll_cq() just made one, or
 * srv_work()'s is about to), the CM channels now and then, the server's work. A second
 * pass before looking at memory held each 8 B Write ping-pong message up to a pass longer. */
static void progress(const struct hello *ask, bool passed)
{
	static unsigned passes;
	static uint64_t cm_looked;
	struct rdma_cm_event *ev;

	if (stop_signal != 0) {
		if (stats_wanted() && stats_stack != NULL)
			app_print_counters("this instance, at the signal", stats_stack);
		bd_print(BD_S_IN, BD_S_OUT);
		exit(128 + stop_signal);
	}
	if (!passed && !(srv.cq != NULL && srv.up))
		uiw_verbs_progress();
	/* CM events are rare, and each look at an empty non-blocking channel costs a system
	 * call (its O_NONBLOCK flag; 1-2 us in a VM): look every 64 passes, and not more than
	 * every 200 us. Every 64 passes alone was 6-7% of an idle receiver's time (perf:
	 * fcntl and the kernel's return path). */
	if ((++passes & 63) == 0 && uiw_now_ns() - cm_looked >= 200000) {
		cm_looked = uiw_now_ns();
		if (srv_ch != NULL && rdma_get_cm_event(srv_ch, &ev) == 0)
			srv_event(ev);
		if (cli_ch != NULL && rdma_get_cm_event(cli_ch, &ev) == 0)
			cli_event(ev, ask);
	}
	srv_work();
}

static int poll_cli(struct ibv_wc *wc, int n, const struct hello *ask)
{
	int k = ibv_poll_cq(cli.cq, n, wc);

	for (int i = 0; i < k; i++)
		if (wc[i].status != IBV_WC_SUCCESS) {
			fprintf(stderr, "uiwarp-perf: work request failed: status %d\n", wc[i].status);
			exit(1);
		}
	progress(ask, true);
	/* Only measuring polls here: a connection that went down now was ended by the peer
	 * or the stack (a Terminate: the log says why), and what we wait for never comes. */
	if (cli.down) {
		fprintf(stderr, "uiwarp-perf: the connection closed during the run\n");
		exit(1);
	}
	return k;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

struct result {
	double gbps, mpps, avg_us, p50_us, p99_us;
};

static void run_bw(const struct opts *o, const struct hello *ask, struct result *r)
{
	struct ibv_wc wc[DEPTH];
	unsigned posted = 0, done = 0;
	uint64_t t0 = uiw_now_ns();

	while (done < o->iters) {
		while (posted < o->iters && posted - done < DEPTH) {
			if (post_op(&cli, o->op, ask->size, true, posted, 0) != 0)
				break;
			posted++;
		}
		done += (unsigned)poll_cli(wc, DEPTH, ask);
	}
	double s = (double)(uiw_now_ns() - t0) / 1e9;

	r->gbps = (double)ask->size * o->iters * 8 / s / 1e9;
	r->mpps = o->iters / s / 1e6;
}

/* One round trip (Send: echoed; Write: written back; Read: one Read). @return its ns. */
static uint64_t one_rtt(const struct opts *o, const struct hello *ask, uint32_t seq)
{
	struct ibv_wc wc[4];
	uint64_t t0 = uiw_now_ns();
	uint32_t want = o->op == OP_SEND ? 2 : 1;

	if (o->op == OP_SEND)
		post_recv(&cli, ask->size, 0);
	if (o->op == OP_WRITE)
		cli.buf[ask->size - 1] = (uint8_t)seq;
	post_op(&cli, o->op, ask->size, o->op != OP_WRITE, seq, 0);
	if (o->op == OP_WRITE) {
		/* The server writes the same size back into our second half. */
		while (*(volatile uint8_t *)&cli.buf[BUF_MAX + ask->size - 1] != (uint8_t)seq)
			poll_cli(wc, 4, ask);
		uint64_t t = uiw_now_ns();

		if (bd.on && bd.last_tx >= t0 && bd.last_rx >= bd.last_tx) {
			bd_note(BD_C_SEND, t0, bd.last_tx);
			bd_note(BD_C_WIRE, bd.last_tx, bd.last_rx);
			bd_note(BD_C_RECV, bd.last_rx, t);
		}
		return t - t0;
	}
	for (uint32_t got = 0; got < want;)
		got += (uint32_t)poll_cli(wc, 4, ask);
	return uiw_now_ns() - t0;
}

static void run_lat(const struct opts *o, const struct hello *ask, struct result *r)
{
	uint64_t *t = calloc(o->iters, sizeof(*t)), sum = 0;

	if (t == NULL)
		die("memory");
	/* Unmeasured first: the first round trips each fault in pages the port touches for
	 * the first time (memif's shared buffers: a thousand or so frames each way, 10-15 us
	 * a fault in a VM), which made the p99 of 100,000 round trips ten times the p50. */
	unsigned warm = o->warmup_set ? o->warmup : (4u << 20) / ask->size;

	if (!o->warmup_set)
		warm = warm < 1 ? 1 : warm > 3000 ? 3000 : warm;
	for (unsigned i = 0; i < warm; i++)
		(void)one_rtt(o, ask, i + 1);
	for (unsigned k = BD_C_SEND; k <= BD_C_RECV; k++)
		bd.n[k] = 0;
	for (unsigned i = 0; i < o->iters; i++) {
		t[i] = one_rtt(o, ask, warm + i + 1);
		/* Write and Send are round trips: half is the one-way figure, as perftest. */
		if (o->op != OP_READ)
			t[i] /= 2;
		sum += t[i];
	}
	bd_print(BD_C_SEND, BD_C_RECV);
	qsort(t, o->iters, sizeof(*t), cmp_u64);
	r->avg_us = (double)sum / o->iters / 1e3;
	r->p50_us = (double)t[o->iters / 2] / 1e3;
	r->p99_us = (double)t[(size_t)o->iters * 99 / 100] / 1e3;
	free(t);
}

static void usage(void)
{
	fprintf(stderr,
		"usage: uiwarp-perf [--config FILE] [--set K=V]... MODE [options]\n"
		"  MODE: --pair (two instances over a ring pair here, or over vhost-user with\n"
		"        pair_link=vhost) | --listen PORT |\n"
		"        --connect IP:PORT\n"
		"  --op send|write|read   the operation (default write)\n"
		"  --lat                  latency (one-way for Send and Write ping-pong, Read\n"
		"                         round trip) instead of bandwidth\n"
		"  --size N | --sizes MIN:MAX   message sizes (powers of two; default 2:1048576)\n"
		"  --iters N              per size (default 1000 for bandwidth, 10000 for latency)\n"
		"  --csv                  CSV instead of the table\n"
		"  --link-wait MS         wait for the port's link (default 10000)\n"
		"  --ord N                Reads in flight, the MPA ORD asked for (default 16;\n"
		"                         perftest's ib_read_bw asks for 128)\n"
		"  --warmup N             latency: round trips before the measured ones (default\n"
		"                         4 MiB's worth, 3000 at most: the first fault in memory)\n"
		"  --breakdown            Write ping-pong between two processes (give it to both):\n"
		"                         medians of where a round trip's time goes, by when the\n"
		"                         port sent and received frames with payload\n");
}

static int parse_args(int argc, char **argv, struct opts *o)
{
	static const struct option longopts[] = {
		APP_MODE_OPTIONS,
		{ "op", required_argument, NULL, 'o' }, { "lat", no_argument, NULL, 'L' },
		{ "size", required_argument, NULL, 's' }, { "sizes", required_argument, NULL, 'S' },
		{ "iters", required_argument, NULL, 'n' }, { "csv", no_argument, NULL, 'C' },
		{ "link-wait", required_argument, NULL, 'w' }, { "help", no_argument, NULL, 'h' },
		{ "ord", required_argument, NULL, 'O' }, { "warmup", required_argument, NULL, 'W' },
		{ "breakdown", no_argument, NULL, 'B' }, { NULL, 0, NULL, 0 },
	};
	int opt;

	while ((opt = app_next_option(argc, argv, longopts, &o->m)) != -1) {
		switch (opt) {
		case 'o':
			o->op = strcmp(optarg, "send") == 0 ? OP_SEND : strcmp(optarg, "read") == 0 ? OP_READ : OP_WRITE;
			break;
		case 'L': o->lat = true; break;
		case 's': o->min_size = o->max_size = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'S':
			if (sscanf(optarg, "%u:%u", &o->min_size, &o->max_size) != 2)
				return -1;
			break;
		case 'n': o->iters = (unsigned)atoi(optarg); break;
		case 'C': o->csv = true; break;
		case 'w': o->link_wait_ms = (unsigned)atoi(optarg); break;
		case 'O': o->ord = (unsigned)atoi(optarg); break;
		case 'W': o->warmup = (unsigned)atoi(optarg); o->warmup_set = true; break;
		case 'B': o->breakdown = true; break;
		default: usage(); return -1;
		}
	}
	if (!app_mode_valid(&o->m) || o->min_size == 0 || o->max_size > BUF_MAX ||
	    o->min_size > o->max_size) {
		usage();
		return -1;
	}
	if (o->iters == 0)
		o->iters = o->lat ? 10000 : 1000;
	if (o->ord == 0 || o->ord > 128) {
		fprintf(stderr, "--ord: 1 to 128\n");
		return -1;
	}
	cli_ord = (uint8_t)o->ord;
	return 0;
}

static void wait_for(bool *flag, const struct hello *ask)
{
	uint64_t end = uiw_now_ns() + 10 * UIW_NS_PER_S;

	while (!*flag) {
		if (uiw_now_ns() > end) {
			fprintf(stderr, "uiwarp-perf: timed out waiting for the connection\n");
			if (stats_wanted() && stats_stack != NULL)
				app_print_counters("this instance, timed out", stats_stack);
			exit(1);
		}
		if (cli.cq != NULL) {
			struct ibv_wc wc[4];

			ibv_poll_cq(cli.cq, 4, wc);
		}
		progress(ask, cli.cq != NULL);
	}
}

/* One size: connect, measure, disconnect. */
static void one_size(const struct opts *o, uint32_t ip, uint16_t port, uint32_t size)
{
	struct hello ask = { .op = o->op, .lat = o->lat, .size = size, .iters = o->iters };
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port),
				  .sin_addr.s_addr = htonl(ip) };
	struct rdma_cm_id *id;
	struct result r = { 0 };

	if (rdma_create_id(cli_ch, &id, NULL, RDMA_PS_TCP) != 0 ||
	    rdma_resolve_addr(id, NULL, (struct sockaddr *)&sa, 2000) != 0)
		die("rdma_resolve_addr");
	wait_for(&cli.up, &ask);
	memset(cli.buf + BUF_MAX, 0, BUF_MAX);
	if (o->lat)
		run_lat(o, &ask, &r);
	else
		run_bw(o, &ask, &r);
	if (o->csv)
		printf("%s,%s,%u,%u,%.3f,%.4f,%.2f,%.2f,%.2f\n", op_names[o->op], o->lat ? "lat" : "bw",
		       size, o->iters, r.gbps, r.mpps, r.avg_us, r.p50_us, r.p99_us);
	else if (o->lat)
		printf(" %-9u %-12u %-12.2f %-12.2f %-12.2f\n", size, o->iters, r.avg_us, r.p50_us, r.p99_us);
	else
		printf(" %-9u %-12u %-18.3f %-12.4f\n", size, o->iters, r.gbps, r.mpps);
	rdma_disconnect(cli.id);
	wait_for(&cli.down, &ask);
	ep_teardown(&cli);
}

int main(int argc, char **argv)
{
	static struct uiw_stack a, b;
	struct opts o = { .op = OP_WRITE, .min_size = 2, .max_size = BUF_MAX, .link_wait_ms = 10000,
			  .ord = 16 };
	struct uiw_config cfg;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (app_load_config(&cfg, &argc, argv) != 0 || parse_args(argc, argv, &o) != 0)
		return 2;
	if (!o.m.pair && (cfg.port[0] == '\0' || cfg.ip == 0)) {
		fprintf(stderr, "--listen and --connect need port= and ip= in the configuration\n");
		return 2;
	}
	if (uiw_eal_init(&cfg, argv[0]) != 0)
		return 2;
	if (app_verbs_open(&a, &b, &cfg, &o.m, "perf", o.link_wait_ms) != 0)
		return 1;
	if (!o.m.pair) {
		stats_stack = &a;
		signal(SIGINT, on_stop_signal);
		signal(SIGTERM, on_stop_signal);
	}
	if (o.breakdown) {
		if (o.m.pair || a.nengines > 1) {
			fprintf(stderr, "--breakdown: two processes of one engine each\n");
			return 2;
		}
		bd_attach(&a.port, 1u << 20);
	}
	uint16_t port = o.m.pair ? 18515 : o.m.listen_port ? o.m.listen_port : o.m.connect_port;

	if (o.m.pair || o.m.listen_port) {
		struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port),
					  .sin_addr.s_addr = htonl(o.m.pair ? UIW_STACK_PAIR_IP_B : cfg.ip) };

		srv_ch = app_nonblocking_channel();
		if (rdma_create_id(srv_ch, &listen_id, NULL, RDMA_PS_TCP) != 0 ||
		    rdma_bind_addr(listen_id, (struct sockaddr *)&sa) != 0 || rdma_listen(listen_id, 4) != 0)
			die("listen");
	}
	if (o.m.listen_port) {
		printf("uiwarp-perf: listening on port %u\n", port);
		for (;;)
			progress(NULL, false);
	}
	cli_ch = app_nonblocking_channel();
	if (!o.csv)
		printf("%s %s over uiwarp (%s)\n %-9s %-12s %s\n", op_names[o.op], o.lat ? "latency" : "bandwidth",
		       o.m.pair ? cfg.pair_vhost ? "two instances over vhost-user in one thread"
					 : "two instances on a ring pair in one thread"
			 : "to the peer",
		       "#bytes", "#iterations",
		       o.lat ? "t_avg[us]    t_p50[us]    t_p99[us]" : "BW average[Gb/s]   MsgRate[Mpps]");
	else
		printf("op,test,bytes,iterations,gbps,mpps,avg_us,p50_us,p99_us\n");
	for (uint32_t size = o.min_size; size <= o.max_size; size *= 2)
		one_size(&o, o.m.pair ? UIW_STACK_PAIR_IP_B : o.m.connect_ip, port, size);
	/* $UIWARP_STATS, as for the drop-in libraries: every layer's counters at the end. */
	if (stats_wanted()) {
		app_print_counters(o.m.pair ? "A (client)" : "the client", &a);
		if (o.m.pair)
			app_print_counters("B (server)", &b);
	}
	return 0;
}
