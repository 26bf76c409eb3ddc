/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * uiwarp-soak: a long mixed run between two instances on a ring pair in one thread, through
 * the verbs and rdma_cm API. --conns connections at a time each run a random number of
 * operations (RDMA Write, RDMA Read, Send, at sizes from 1 octet to 1 MiB), one at a time,
 * every byte checked, then disconnect; a new connection (new PD, CQ, QP and regions) takes
 * each one's place until --seconds have passed. Faults come from the configuration
 * (fault_rx, fault_tx). At the end every connection is closed and both instances must be
 * back where they started: no TCP or MPA connection left, and the pools' mbufs in use at
 * their idle levels. Any failed work request, unexpected event or wrong byte ends the run
 * with exit status 1.
 *
 * A Write is followed by a Send naming it; the server checks the written bytes and
 * answers. A Send carries its own description; the server checks it and answers. A Read
 * reads a region the server filled when the connection was made, checked by the client.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#include <rte_mempool.h>

#include "instance.h"
#include "mpa.h"
#include "tcp.h"
#include "uiw_time.h"
#include "uiw_verbs.h"

#define REGION (1u << 20)        /* Write/Read target and source halves */
#define SEND_MAX (256u << 10)    /* the largest Send */
#define SRV_RECVS 4
#define CLI_RECVS 4
#define MAX_CONNS 64
#define PORT 18600

enum kind { K_WRITE = 1, K_READ, K_SEND, K_REPLY };

/* First octets of every Send: what it is about. */
struct note {
	uint32_t kind, size, off, seed;
} __attribute__((packed));

/* The server's private data in its accept: where to write and read. */
struct hello {
	uint64_t addr;
	uint32_t rkey, read_seed, slot, pad;
} __attribute__((packed));

struct ep {
	struct rdma_cm_id *id;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	uint8_t *buf;            /* [0, REGION): Write target/source; [REGION, 2*REGION): Read */
	uint8_t *rbuf;           /* receive buffers */
	size_t rlen;             /* each of them */
	struct ibv_mr *rmr;
	struct hello peer;
	uint32_t read_seed;
	unsigned sends_out;      /* send-side completions still to come */
	bool replied;            /* the client's op has its answer */
	bool up, closing;
	int slot;
	/* The client's current operation. */
	enum kind op;
	uint32_t size, off, seed;
	unsigned ops_left;
};

/* A server side may outlive its client side for a moment (its DISCONNECTED comes later)
 * while the client's next connection arrives: twice as many server slots. */
static struct ep cli[MAX_CONNS], srv[2 * MAX_CONNS];
static struct rdma_event_channel *cli_ch, *srv_ch;
static struct rdma_cm_id *listen_id;
static uint64_t rng_state;
static bool stopping;
static uint8_t *expect;
static struct {
	unsigned long conns, ops[K_REPLY], checked;
	unsigned long long bytes[K_REPLY];
} st;

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

static void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "uiwarp-soak: FAIL: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	exit(1);
}

static uint64_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

/* The octets an operation with @p seed carries. */
static void pattern(uint8_t *p, uint32_t n, uint32_t seed)
{
	uint32_t x = seed * 2654435761u + 1;

	for (uint32_t i = 0; i < n; i++) {
		x = x * 1103515245u + 12345u;
		p[i] = (uint8_t)(x >> 16);
	}
}

static void check(const uint8_t *got, uint32_t n, uint32_t seed, const char *what, int slot)
{
	pattern(expect, n, seed);
	if (memcmp(got, expect, n) != 0) {
		uint32_t i = 0;

		while (got[i] == expect[i])
			i++;
		die("%s of %u octets on connection %d: octet %u is %#x, not %#x", what, n, slot, i,
		    got[i], expect[i]);
	}
	st.checked++;
}

static void ep_setup(struct ep *e, struct rdma_cm_id *id, size_t rlen, unsigned nrecv)
{
	struct ibv_qp_init_attr qa = { .qp_type = IBV_QPT_RC,
				       .cap = { .max_send_wr = 16, .max_recv_wr = 16,
						.max_send_sge = 1, .max_recv_sge = 1 } };

	e->id = id;
	id->context = e;
	e->buf = e->buf != NULL ? e->buf : malloc(2 * REGION);
	e->rlen = rlen;
	e->rbuf = e->rbuf != NULL ? e->rbuf : malloc(rlen * nrecv);
	e->pd = ibv_alloc_pd(id->verbs);
	e->cq = e->pd != NULL ? ibv_create_cq(id->verbs, 64, NULL, NULL, 0) : NULL;
	if (e->buf == NULL || e->rbuf == NULL || e->cq == NULL)
		die("resources for connection %d: %s", e->slot, strerror(errno));
	qa.send_cq = qa.recv_cq = e->cq;
	if (rdma_create_qp(id, e->pd, &qa) != 0)
		die("rdma_create_qp: %s", strerror(errno));
	e->mr = ibv_reg_mr(e->pd, e->buf, 2 * REGION, IBV_ACCESS_LOCAL_WRITE |
			   IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	e->rmr = ibv_reg_mr(e->pd, e->rbuf, rlen * nrecv, IBV_ACCESS_LOCAL_WRITE);
	if (e->mr == NULL || e->rmr == NULL)
		die("ibv_reg_mr: %s", strerror(errno));
	for (unsigned i = 0; i < nrecv; i++) {
		struct ibv_sge s = { (uintptr_t)e->rbuf + i * rlen, (uint32_t)rlen, e->rmr->lkey };
		struct ibv_recv_wr w = { .wr_id = i, .sg_list = &s, .num_sge = 1 }, *bad;

		if (ibv_post_recv(id->qp, &w, &bad) != 0)
			die("ibv_post_recv");
	}
}

static void ep_teardown(struct ep *e)
{
	rdma_destroy_qp(e->id);
	ibv_dereg_mr(e->mr);
	ibv_dereg_mr(e->rmr);
	ibv_destroy_cq(e->cq);
	ibv_dealloc_pd(e->pd);
	rdma_destroy_id(e->id);
	e->id = NULL;
	e->up = e->closing = false;
}

static void repost(struct ep *e, uint64_t i)
{
	struct ibv_sge s = { (uintptr_t)e->rbuf + i * e->rlen, (uint32_t)e->rlen, e->rmr->lkey };
	struct ibv_recv_wr w = { .wr_id = i, .sg_list = &s, .num_sge = 1 }, *bad;

	if (ibv_post_recv(e->id->qp, &w, &bad) != 0)
		die("ibv_post_recv");
}

static void post(struct ep *e, enum ibv_wr_opcode op, uint8_t *addr, uint32_t len, uint32_t lkey,
		 uint64_t raddr)
{
	struct ibv_sge s = { (uintptr_t)addr, len, lkey };
	struct ibv_send_wr w = { .sg_list = &s, .num_sge = 1, .opcode = op,
				 .send_flags = IBV_SEND_SIGNALED }, *bad;

	w.wr.rdma.remote_addr = raddr;
	w.wr.rdma.rkey = e->peer.rkey;
	if (ibv_post_send(e->id->qp, &w, &bad) != 0)
		die("ibv_post_send on connection %d: %s", e->slot, strerror(errno));
	e->sends_out++;
}

/* A note of 16 octets from the start of the region's tail (never where data goes). */
static void post_note(struct ep *e, const struct note *n)
{
	uint8_t *p = e->buf + 2 * REGION - sizeof(*n) - 64;

	memcpy(p, n, sizeof(*n));
	post(e, IBV_WR_SEND, p, sizeof(*n), e->mr->lkey, 0);
}

static const uint32_t sizes[] = { 1, 7, 64, 1000, 1460, 4096, 9000, 65536, 200000, 1u << 20 };

static void start_op(struct ep *e)
{
	uint32_t max;

	e->op = (enum kind)(1 + rnd() % 3);
	e->size = sizes[rnd() % (sizeof(sizes) / sizeof(sizes[0]))];
	max = e->op == K_SEND ? SEND_MAX - sizeof(struct note) : REGION - 64 * 2;
	if (e->size > max)
		e->size = max;
	e->off = (uint32_t)(rnd() % (REGION - 128 - e->size + 1));
	e->seed = (uint32_t)rnd();
	e->replied = false;
	st.ops[e->op - 1]++;
	st.bytes[e->op - 1] += e->size;
	switch (e->op) {
	case K_WRITE:
		pattern(e->buf + e->off, e->size, e->seed);
		post(e, IBV_WR_RDMA_WRITE, e->buf + e->off, e->size, e->mr->lkey, e->peer.addr + e->off);
		post_note(e, &(struct note){ K_WRITE, e->size, e->off, e->seed });
		break;
	case K_READ:
		memset(e->buf + REGION + e->off, 0, e->size);
		post(e, IBV_WR_RDMA_READ, e->buf + REGION + e->off, e->size, e->mr->lkey,
		     e->peer.addr + REGION + e->off);
		e->replied = true;   /* no answer from the server */
		break;
	default: {
		uint8_t *p = e->buf + e->off;
		struct note n = { K_SEND, e->size, 0, e->seed };

		memcpy(p, &n, sizeof(n));
		pattern(p + sizeof(n), e->size, e->seed);
		post(e, IBV_WR_SEND, p, (uint32_t)sizeof(n) + e->size, e->mr->lkey, 0);
		break;
	}
	}
}

static void client_done(struct ep *e)
{
	if (e->op == K_READ) {
		/* The server's Read half holds pattern(read_seed) from its start: the slice
		 * read is that pattern's octets off..off+size. */
		pattern(expect, REGION, e->peer.read_seed);
		if (memcmp(e->buf + REGION + e->off, expect + e->off, e->size) != 0)
			die("RDMA Read of %u octets at %u on connection %d: wrong octets", e->size,
			    e->off, e->slot);
		st.checked++;
	}
	e->op = 0;
	if (e->ops_left > 0)
		e->ops_left--;
}

static void client_poll(struct ep *e)
{
	struct ibv_wc wc[16];
	int n = ibv_poll_cq(e->cq, 16, wc);

	for (int i = 0; i < n; i++) {
		/* Receives still posted are flushed when the connection closes. */
		if (wc[i].status == IBV_WC_WR_FLUSH_ERR && wc[i].opcode == IBV_WC_RECV)
			continue;
		if (wc[i].status != IBV_WC_SUCCESS)
			die("client connection %d: %s (opcode %d)", e->slot,
			    ibv_wc_status_str(wc[i].status), wc[i].opcode);
		if (wc[i].opcode == IBV_WC_RECV) {
			struct note r;

			memcpy(&r, e->rbuf + wc[i].wr_id * e->rlen, sizeof(r));
			if (r.kind != K_REPLY || r.seed != e->seed)
				die("connection %d: unexpected answer %u/%u", e->slot, r.kind, r.seed);
			e->replied = true;
			repost(e, wc[i].wr_id);
		} else {
			e->sends_out--;
		}
	}
	if (e->op != 0 && e->replied && e->sends_out == 0)
		client_done(e);
	if (e->op == 0 && e->up && !e->closing) {
		if (e->ops_left == 0 || stopping) {
			e->closing = true;
			if (rdma_disconnect(e->id) != 0)
				die("rdma_disconnect: %s", strerror(errno));
		} else {
			start_op(e);
		}
	}
}

static void server_poll(struct ep *e)
{
	struct ibv_wc wc[16];
	int n = ibv_poll_cq(e->cq, 16, wc);

	for (int i = 0; i < n; i++) {
		if (wc[i].status == IBV_WC_WR_FLUSH_ERR && wc[i].opcode == IBV_WC_RECV)
			continue;
		if (wc[i].status != IBV_WC_SUCCESS)
			die("server connection %d: %s (opcode %d)", e->slot,
			    ibv_wc_status_str(wc[i].status), wc[i].opcode);
		if (wc[i].opcode != IBV_WC_RECV) {
			e->sends_out--;
			continue;
		}
		const uint8_t *m = e->rbuf + wc[i].wr_id * e->rlen;
		struct note q;

		memcpy(&q, m, sizeof(q));
		if (q.kind == K_WRITE && q.off + (uint64_t)q.size <= REGION &&
		    wc[i].byte_len == sizeof(q))
			check(e->buf + q.off, q.size, q.seed, "RDMA Write", e->slot);
		else if (q.kind == K_SEND && wc[i].byte_len == sizeof(q) + q.size)
			check(m + sizeof(q), q.size, q.seed, "Send", e->slot);
		else
			die("server connection %d: a Send of %u octets that says %u/%u/%u", e->slot,
			    wc[i].byte_len, q.kind, q.size, q.off);
		repost(e, wc[i].wr_id);
		post_note(e, &(struct note){ K_REPLY, 0, 0, q.seed });
	}
}

static struct ep *free_ep(struct ep *set, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		if (set[i].id == NULL)
			return &set[i];
	return NULL;
}

static void srv_event(struct rdma_cm_event *ev, unsigned nconns)
{
	struct ep *e = ev->id->context;

	switch (ev->event) {
	case RDMA_CM_EVENT_CONNECT_REQUEST: {
		e = free_ep(srv, 2 * nconns);
		if (e == NULL)
			die("a connect request with every server slot in use");
		ep_setup(e, ev->id, SEND_MAX, SRV_RECVS);
		e->read_seed = (uint32_t)rnd();
		pattern(e->buf + REGION, REGION, e->read_seed);
		struct hello h = { .addr = (uintptr_t)e->buf, .rkey = e->mr->rkey,
				   .read_seed = e->read_seed };
		struct rdma_conn_param cp = { .private_data = &h, .private_data_len = sizeof(h),
					      .responder_resources = 4, .initiator_depth = 4 };

		if (rdma_accept(ev->id, &cp) != 0)
			die("rdma_accept: %s", strerror(errno));
		break;
	}
	case RDMA_CM_EVENT_ESTABLISHED:
		e->up = true;
		break;
	case RDMA_CM_EVENT_DISCONNECTED:
		rdma_ack_cm_event(ev);
		ep_teardown(e);
		return;
	default:
		die("server: %s (status %d)", rdma_event_str(ev->event), ev->status);
	}
	rdma_ack_cm_event(ev);
}

static void cli_event(struct rdma_cm_event *ev)
{
	struct ep *e = ev->id->context;

	switch (ev->event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		if (rdma_resolve_route(ev->id, 2000) != 0)
			die("rdma_resolve_route");
		break;
	case RDMA_CM_EVENT_ROUTE_RESOLVED: {
		struct rdma_conn_param cp = { .responder_resources = 4, .initiator_depth = 4 };

		ep_setup(e, ev->id, 64, CLI_RECVS);
		if (rdma_connect(ev->id, &cp) != 0)
			die("rdma_connect: %s", strerror(errno));
		break;
	}
	case RDMA_CM_EVENT_ESTABLISHED:
		if (ev->param.conn.private_data_len < sizeof(e->peer))
			die("no server private data");
		memcpy(&e->peer, ev->param.conn.private_data, sizeof(e->peer));
		e->up = true;
		e->ops_left = 20 + (unsigned)(rnd() % 200);
		st.conns++;
		break;
	case RDMA_CM_EVENT_DISCONNECTED:
		if (!e->closing)
			die("client connection %d: disconnected by the server", e->slot);
		rdma_ack_cm_event(ev);
		ep_teardown(e);
		return;
	default:
		die("client connection %d: %s (status %d)", e->slot, rdma_event_str(ev->event),
		    ev->status);
	}
	rdma_ack_cm_event(ev);
}

static void connect_one(struct ep *e)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(PORT),
				  .sin_addr.s_addr = htonl(UIW_STACK_PAIR_IP_B) };
	struct rdma_cm_id *id;

	if (rdma_create_id(cli_ch, &id, e, RDMA_PS_TCP) != 0 ||
	    rdma_resolve_addr(id, NULL, (struct sockaddr *)&sa, 2000) != 0)
		die("rdma_resolve_addr: %s", strerror(errno));
	e->id = id;
	e->op = 0;
	e->sends_out = 0;
}

static void pass(unsigned nconns)
{
	struct rdma_cm_event *ev;

	uiw_verbs_progress();
	while (rdma_get_cm_event(srv_ch, &ev) == 0)
		srv_event(ev, nconns);
	while (rdma_get_cm_event(cli_ch, &ev) == 0)
		cli_event(ev);
	for (unsigned i = 0; i < 2 * nconns; i++)
		if (srv[i].id != NULL && srv[i].up)
			server_poll(&srv[i]);
	for (unsigned i = 0; i < nconns; i++) {
		if (cli[i].id != NULL && cli[i].up)
			client_poll(&cli[i]);
		else if (cli[i].id == NULL && !stopping)
			connect_one(&cli[i]);
	}
}

static struct rdma_event_channel *channel(void)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();

	if (ch == NULL || fcntl(ch->fd, F_SETFL, fcntl(ch->fd, F_GETFL) | O_NONBLOCK) != 0)
		die("event channel");
	return ch;
}

static unsigned in_use(const struct uiw_stack *s)
{
	return rte_mempool_in_use_count(s->port.pool);
}

static unsigned open_conns(const struct uiw_stack *s)
{
	return uiw_tcp_conn_count(s->tcp) + uiw_mpa_conn_count(s->mpa);
}

static void usage(void)
{
	fprintf(stderr,
		"usage: uiwarp-soak [--config FILE] [--set K=V]... [--seconds N] [--conns N] [--seed N]\n"
		"  Two instances on a ring pair here; N connections at a time (default 8, at most %d)\n"
		"  run mixed Writes, Reads and Sends, each checked, and are replaced as they close,\n"
		"  for --seconds (default 60); then every pool must be back at its idle level.\n",
		MAX_CONNS);
}

int main(int argc, char **argv)
{
	static struct uiw_stack a, b;
	static const struct option longopts[] = {
		{ "seconds", required_argument, NULL, 't' }, { "conns", required_argument, NULL, 'n' },
		{ "seed", required_argument, NULL, 's' }, { "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 } };
	unsigned seconds = 60, nconns = 8, seed = 1;
	struct uiw_config cfg;
	int opt;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (app_load_config(&cfg, &argc, argv) != 0)
		return 2;
	while ((opt = getopt_long(argc, argv, "t:n:s:h", longopts, NULL)) != -1) {
		switch (opt) {
		case 't': seconds = (unsigned)atoi(optarg); break;
		case 'n': nconns = (unsigned)atoi(optarg); break;
		case 's': seed = (unsigned)atoi(optarg); break;
		default: usage(); return 2;
		}
	}
	if (nconns < 1 || nconns > MAX_CONNS || seconds < 1) {
		usage();
		return 2;
	}
	rng_state = 0x9e3779b97f4a7c15ull * (seed + 1);
	expect = malloc(REGION);
	if (expect == NULL || uiw_eal_init(&cfg, argv[0]) != 0 ||
	    app_stack_pair(&a, &b, &cfg, UIW_STACK_MPA, "soak", false) != 0 ||
	    uiw_verbs_add_device(&a) != 0 || uiw_verbs_add_device(&b) != 0)
		return 2;
	for (unsigned i = 0; i < 2 * nconns; i++) {
		srv[i].slot = (int)i;
		cli[i / 2].slot = (int)(i / 2);
	}
	/* Idle levels: both instances up, nothing connected yet. */
	for (int i = 0; i < 100; i++)
		uiw_verbs_progress();
	unsigned idle_a = in_use(&a), idle_b = in_use(&b);
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(PORT),
				  .sin_addr.s_addr = htonl(UIW_STACK_PAIR_IP_B) };

	srv_ch = channel();
	cli_ch = channel();
	if (rdma_create_id(srv_ch, &listen_id, NULL, RDMA_PS_TCP) != 0 ||
	    rdma_bind_addr(listen_id, (struct sockaddr *)&sa) != 0 || rdma_listen(listen_id, 64) != 0)
		die("listen: %s", strerror(errno));
	printf("uiwarp-soak: %u connections at a time for %u s, seed %u\n", nconns, seconds, seed);
	uint64_t t0 = uiw_now_ns(), end = t0 + (uint64_t)seconds * UIW_NS_PER_S, next_report = t0;

	while (uiw_now_ns() < end) {
		pass(nconns);
		if (uiw_now_ns() >= next_report) {
			printf("  %3.0f s: %lu connections, %lu Writes, %lu Reads, %lu Sends, %lu checked\n",
			       (double)(uiw_now_ns() - t0) / 1e9, st.conns, st.ops[0], st.ops[1],
			       st.ops[2], st.checked);
			next_report += 10 * UIW_NS_PER_S;
		}
	}
	/* Wind down: each connection finishes its operation and disconnects. */
	stopping = true;
	uint64_t limit = uiw_now_ns() + 30 * UIW_NS_PER_S;
	bool busy = true;

	while (busy && uiw_now_ns() < limit) {
		pass(nconns);
		busy = false;
		for (unsigned i = 0; i < 2 * nconns; i++)
			busy |= cli[i / 2].id != NULL || srv[i].id != NULL;
	}
	if (busy)
		die("connections still open 30 s after the end");
	rdma_destroy_id(listen_id);
	/* TCP's TIME-WAIT (tcp_time_wait_ms) and the last mbufs coming back. */
	limit = uiw_now_ns() + (cfg.tcp_time_wait_ms + 5000ull) * UIW_NS_PER_MS;
	while ((open_conns(&a) + open_conns(&b) > 0 || in_use(&a) > idle_a || in_use(&b) > idle_b) &&
	       uiw_now_ns() < limit)
		uiw_verbs_progress();
	printf("uiwarp-soak: %lu connections, %lu Writes (%llu octets), %lu Reads (%llu), "
	       "%lu Sends (%llu), %lu checks, in %.0f s\n", st.conns, st.ops[0], st.bytes[0],
	       st.ops[1], st.bytes[1], st.ops[2], st.bytes[2], st.checked,
	       (double)(uiw_now_ns() - t0) / 1e9);
	printf("uiwarp-soak: mbufs in use A %u (idle %u), B %u (idle %u); connections A %u, B %u; "
	       "retransmits A %lu, B %lu\n", in_use(&a), idle_a, in_use(&b), idle_b, open_conns(&a),
	       open_conns(&b), (unsigned long)uiw_tcp_counters(a.tcp)[UIW_TCP_C_retransmits],
	       (unsigned long)uiw_tcp_counters(b.tcp)[UIW_TCP_C_retransmits]);
	if (getenv("UIWARP_STATS") != NULL && strcmp(getenv("UIWARP_STATS"), "0") != 0) {
		app_print_counters("A (client)", &a);
		app_print_counters("B (server)", &b);
	}
	if (open_conns(&a) + open_conns(&b) > 0 || in_use(&a) > idle_a || in_use(&b) > idle_b)
		die("not back at the idle levels");
	if (st.conns < nconns || st.checked == 0)
		die("too little ran: %lu connections, %lu checks", st.conns, st.checked);
	printf("uiwarp-soak: PASS\n");
	return 0;
}
