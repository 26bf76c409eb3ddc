/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * uiwarp-scale: many connected QPs between two instances, over the verbs and rdma_cm API.
 *
 * The client opens N QPs (at most --window connections being set up at once), then:
 *   1. checks every QP with every operation: an RDMA Write of a pattern of its own, a Send
 *      that the server checks (message and written bytes) and answers with a Send, then an
 *      RDMA Read of what was written, compared byte for byte;
 *   2. measures the aggregate RDMA Write bandwidth over all QPs (64 KiB by default) and
 *      the aggregate rate of 64-octet Sends;
 *   3. disconnects them all.
 * It reports connections set up per second, the heap and resident memory each connected
 * QP costs (both sides' in --pair mode), the two rates, and disconnections per second.
 * The server serves any number of clients' QPs up to its own --qps.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#include <rte_eal.h>

#include "instance.h"
#include "verbs_app.h"
#include "uiw_time.h"
#include "uiw_verbs.h"

#define SLOT 8192u             /* per QP on each side */
#define MSG 64u                /* Send size */
#define OFF_RECV 0u            /* receive buffers: RECV_DEPTH of MSG */
#define RECV_DEPTH 8u
#define OFF_SEND 512u          /* what Sends go from */
#define OFF_WRITE 1024u        /* server: written by the client; client: written from */
#define WLEN 2048u
#define OFF_READ 4096u         /* client: where Reads land */
#define OFF_CREDIT 7168u       /* client: the server writes how many rate Sends it took */
#define SEND_DEPTH 16u
#define MAGIC_CHECK 0x43484b31u
#define MAGIC_RATE 0x52415445u

enum phase { PH_CONNECT, PH_CHECK, PH_BW, PH_RATE, PH_DONE };

struct hello {
	uint32_t idx, pad;
	uint64_t addr;
	uint32_t rkey, nqp;
} __attribute__((packed));

struct conn {
	struct rdma_cm_id *id;
	uint32_t idx;
	uint64_t raddr;            /* the peer's slot */
	uint32_t rkey;
	uint64_t peer_credit;      /* server: where the client's credit count goes */
	uint32_t peer_rkey;
	uint32_t rate_got;         /* server: rate Sends taken (and their receives posted again) */
	uint32_t rate_sent;        /* client: rate Sends posted */
	uint8_t state;             /* client: 0 idle, 1 checking, 2 checked, 3 failed */
	bool up, down;
	uint16_t out;              /* work requests in flight (bandwidth and rate phases) */
};

struct side {
	struct rdma_event_channel *ch;
	struct ibv_context *verbs;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr, *big_mr;
	uint8_t *buf, *big;        /* slots; the bandwidth phase's region */
	struct conn *c;
	unsigned nqp, up, down, failed;
};

struct opts {
	struct app_mode m;
	unsigned qps, window, bw_size, bw_iters, rate_iters, link_wait_ms;
	bool once;   /* --listen: exit once --qps connections came and all went */
	bool one_thread;   /* --one-thread: every engine in this thread, as --pair runs them */
};

static struct side cli, srv;
static struct uiw_stack *stack_a, *stack_b;
static bool threads;   /* engines 1..N-1 on threads of their own */

/* The engine threads stop before the counters are read; what they did is printed. */
static void threads_done(void)
{
	if (!threads)
		return;
	threads = false;
	uiw_verbs_engine_threads_stop();
	uiw_verbs_engine_threads_print(stdout);
}

/* With more than one engine: the connections each engine of @p s holds. @return false
 * when one holds none (connections open on each engine in turn). */
static bool print_engines(const char *name, struct uiw_stack *s)
{
	bool all = true;

	if (s == NULL || s->nengines < 2)
		return true;
	printf("engines of %s: connections", name);
	for (unsigned i = 0; i < s->nengines; i++) {
		unsigned n = uiw_tcp_conn_count(uiw_stack_engine(s, i)->tcp);

		printf(" %u", n);
		all = all && n > 0;
	}
	printf("\n");
	return all;
}

/* Something did not finish: what each instance counted says why. */
static void stuck(const char *what)
{
	fprintf(stderr, "uiwarp-scale: %s\n", what);
	threads_done();
	if (stack_a != NULL) {
		printf("A (client) now:\n");
		uiw_stack_print_gauges(stdout, stack_a);
		for (unsigned i = 0; i < stack_a->nengines; i++)
			printf("engine %u: %u connections with data to send\n", i,
			       uiw_tcp_dump_sending(uiw_stack_engine(stack_a, i)->tcp, stdout, 8));
		app_print_counters("A (client)", stack_a);
	}
	if (stack_b != NULL) {
		printf("B (server) now:\n");
		uiw_stack_print_gauges(stdout, stack_b);
		app_print_counters("B (server)", stack_b);
	}
	exit(1);
}
static struct rdma_cm_id *listen_id;
static uint64_t srv_big_addr;
static uint32_t srv_big_rkey;

static void die(const char *what)
{
	fprintf(stderr, "uiwarp-scale: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void pattern(uint8_t *p, uint32_t len, uint32_t idx, uint8_t kind)
{
	uint32_t x = idx * 2654435761u + kind;

	for (uint32_t i = 0; i < len; i++) {
		x = x * 1103515245u + 12345u;
		p[i] = (uint8_t)(x >> 16);
	}
}

static bool pattern_ok(const uint8_t *p, uint32_t len, uint32_t idx, uint8_t kind)
{
	uint8_t want[WLEN];

	pattern(want, len, idx, kind);
	return memcmp(p, want, len) == 0;
}

static uint8_t *slot(struct side *s, uint32_t idx)
{
	return s->buf + (size_t)idx * SLOT;
}

static void side_resources(struct side *s, struct ibv_context *verbs, unsigned nqp, size_t big)
{
	if (s->pd != NULL)
		return;
	if (verbs == NULL) {
		fprintf(stderr, "uiwarp-scale: no device for the address\n");
		exit(1);
	}
	s->verbs = verbs;
	s->nqp = nqp;
	s->buf = calloc(nqp, SLOT);
	s->big = calloc(1, big);
	if (s->c == NULL)
		s->c = calloc(nqp, sizeof(*s->c));
	if (s->buf == NULL || s->big == NULL || s->c == NULL)
		die("memory for the QPs' buffers");
	s->pd = ibv_alloc_pd(verbs);
	/* One CQ for all: every QP's receives and a window of sends fit. */
	s->cq = s->pd != NULL ? ibv_create_cq(verbs, (int)(nqp * RECV_DEPTH + 8192), NULL, NULL, 0) : NULL;
	if (s->cq == NULL)
		die("protection domain or CQ");
	s->mr = ibv_reg_mr(s->pd, s->buf, (size_t)nqp * SLOT, IBV_ACCESS_LOCAL_WRITE |
			   IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	s->big_mr = ibv_reg_mr(s->pd, s->big, big, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (s->mr == NULL || s->big_mr == NULL)
		die("ibv_reg_mr");
}

static int make_qp(struct side *s, struct rdma_cm_id *id)
{
	struct ibv_qp_init_attr qa = { .qp_type = IBV_QPT_RC, .send_cq = s->cq, .recv_cq = s->cq,
				       .cap = { .max_send_wr = SEND_DEPTH, .max_recv_wr = RECV_DEPTH,
						.max_send_sge = 1, .max_recv_sge = 1 } };

	return rdma_create_qp(id, s->pd, &qa);
}

static int post_recv(struct side *s, struct conn *c, unsigned k)
{
	struct ibv_sge sg = { (uintptr_t)slot(s, c->idx) + OFF_RECV + k * MSG, MSG, s->mr->lkey };
	struct ibv_recv_wr w = { .wr_id = ((uint64_t)c->idx << 8) | k, .sg_list = &sg, .num_sge = 1 }, *bad;

	return ibv_post_recv(c->id->qp, &w, &bad);
}

static int post(struct side *s, struct conn *c, enum ibv_wr_opcode op, uint64_t laddr, uint32_t lkey,
		uint32_t len, uint64_t raddr, uint32_t rkey, uint8_t tag)
{
	struct ibv_sge sg = { laddr, len, lkey };
	struct ibv_send_wr w = { .wr_id = ((uint64_t)c->idx << 8) | tag, .sg_list = &sg, .num_sge = 1,
				 .opcode = op, .send_flags = IBV_SEND_SIGNALED }, *bad;

	(void)s;
	w.wr.rdma.remote_addr = raddr;
	w.wr.rdma.rkey = rkey;
	return ibv_post_send(c->id->qp, &w, &bad);
}

/* A Send of a pattern made from @p who (the client's number for the QP: the two sides
 * number their QPs each in its own order). */
static void send_msg(struct side *s, struct conn *c, uint32_t magic, uint32_t who, uint8_t kind)
{
	uint8_t *m = slot(s, c->idx) + OFF_SEND;

	memcpy(m, &magic, 4);
	memcpy(m + 4, &who, 4);
	pattern(m + 8, MSG - 8, who, kind);
	if (post(s, c, IBV_WR_SEND, (uintptr_t)m, s->mr->lkey, MSG, 0, 0, 'S') != 0)
		die("ibv_post_send (Send)");
}

/* ---- server ---- */

static void srv_event(struct rdma_cm_event *ev, unsigned max_qps)
{
	struct conn *c;
	struct hello h;

	switch (ev->event) {
	case RDMA_CM_EVENT_CONNECT_REQUEST: {
		static uint32_t next_free;
		uint32_t idx = UINT32_MAX;   /* the server numbers its QPs itself */

		side_resources(&srv, ev->id->verbs, max_qps, 1u << 20);
		for (unsigned k = 0; k < srv.nqp; k++, next_free = (next_free + 1) % srv.nqp)
			if (srv.c[next_free].id == NULL) {
				idx = next_free;
				break;
			}
		if (idx == UINT32_MAX) {
			rdma_reject(ev->id, NULL, 0);
			break;
		}
		c = &srv.c[idx];
		*c = (struct conn){ .id = ev->id, .idx = idx };
		{
			struct hello ch;

			if (ev->param.conn.private_data_len < sizeof(ch)) {
				rdma_reject(ev->id, NULL, 0);
				*c = (struct conn){ 0 };
				break;
			}
			memcpy(&ch, ev->param.conn.private_data, sizeof(ch));
			c->peer_credit = ch.addr + OFF_CREDIT;
			c->peer_rkey = ch.rkey;
		}
		ev->id->context = c;
		if (make_qp(&srv, ev->id) != 0)
			die("rdma_create_qp (server)");
		for (unsigned k = 0; k < RECV_DEPTH; k++)
			if (post_recv(&srv, c, k) != 0)
				die("ibv_post_recv (server)");
		h = (struct hello){ .idx = idx, .addr = (uintptr_t)slot(&srv, idx), .rkey = srv.mr->rkey,
				    .nqp = srv.nqp };
		/* The bandwidth phase's target goes in the pad of a second hello: one region. */
		struct { struct hello h; uint64_t big; uint32_t big_rkey; } __attribute__((packed)) r = {
			h, (uintptr_t)srv.big, srv.big_mr->rkey };
		struct rdma_conn_param cp = { .private_data = &r, .private_data_len = sizeof(r),
					      .responder_resources = 16, .initiator_depth = 16 };

		if (rdma_accept(ev->id, &cp) != 0)
			die("rdma_accept");
		break;
	}
	case RDMA_CM_EVENT_ESTABLISHED:
		c = ev->id->context;
		c->up = true;
		srv.up++;
		break;
	case RDMA_CM_EVENT_DISCONNECTED:
		c = ev->id->context;
		rdma_ack_cm_event(ev);
		rdma_destroy_qp(c->id);
		rdma_destroy_id(c->id);
		if (c->up)
			srv.up--;
		*c = (struct conn){ 0 };
		srv.down++;
		return;
	default:
		break;
	}
	rdma_ack_cm_event(ev);
}

/* Receives: check messages are checked and answered; rate messages only counted. */
/* Rate Sends are flow controlled by credits: every fourth one taken (its receive posted
 * again), the server writes its count into the client's slot; the client keeps fewer than
 * RECV_DEPTH beyond that count in flight. A Send's completion at the client says only that
 * the stack took it, not that the server's receive is posted again. */
static void srv_completion(const struct ibv_wc *wc)
{
	uint32_t idx = (uint32_t)(wc->wr_id >> 8), magic, who;
	struct conn *c = &srv.c[idx];
	uint8_t *m;

	if (wc->opcode != IBV_WC_RECV)
		return;   /* our answers' and credits' completions */
	if (wc->status != IBV_WC_SUCCESS || c->id == NULL)
		return;   /* flushed at a disconnection */
	m = slot(&srv, idx) + OFF_RECV + (wc->wr_id & 0xff) * MSG;
	memcpy(&magic, m, 4);
	memcpy(&who, m + 4, 4);
	if (post_recv(&srv, c, (unsigned)(wc->wr_id & 0xff)) != 0)
		die("ibv_post_recv (server)");
	if (magic == MAGIC_CHECK) {
		bool ok = wc->byte_len == MSG && pattern_ok(m + 8, MSG - 8, who, 'C') &&
			  pattern_ok(slot(&srv, idx) + OFF_WRITE, WLEN, who, 'W');

		send_msg(&srv, c, MAGIC_CHECK, who, ok ? 'S' : 'X');
	} else if (magic == MAGIC_RATE && (++c->rate_got & 3) == 0) {
		uint32_t *cnt = (uint32_t *)(slot(&srv, idx) + OFF_CREDIT);

		*cnt = c->rate_got;
		if (post(&srv, c, IBV_WR_RDMA_WRITE, (uintptr_t)cnt, srv.mr->lkey, 4, c->peer_credit,
			 c->peer_rkey, 'K') != 0)
			die("ibv_post_send (credit)");
	}
}

static void srv_work(void)
{
	struct ibv_wc wc[64];
	int n;

	if (srv.cq == NULL)
		return;
	do {
		n = ibv_poll_cq(srv.cq, 64, wc);
		for (int i = 0; i < n; i++)
			srv_completion(&wc[i]);
	} while (n == 64);
}

/* ---- client ---- */

static unsigned cli_started, cli_checked;
static size_t cli_big;

static void cli_start_one(const struct sockaddr_in *dst)
{
	struct conn *c = &cli.c[cli_started];
	struct rdma_cm_id *id;

	if (rdma_create_id(cli.ch, &id, c, RDMA_PS_TCP) != 0)
		die("rdma_create_id");
	c->id = id;
	c->idx = cli_started++;
	if (rdma_resolve_addr(id, NULL, (struct sockaddr *)dst, 2000) != 0)
		die("rdma_resolve_addr");
}

static void cli_event(struct rdma_cm_event *ev)
{
	struct conn *c = ev->id->context;

	switch (ev->event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		side_resources(&cli, ev->id->verbs, cli.nqp, cli_big);
		if (rdma_resolve_route(ev->id, 2000) != 0)
			die("rdma_resolve_route");
		break;
	case RDMA_CM_EVENT_ROUTE_RESOLVED: {
		struct hello h = { .idx = c->idx, .addr = (uintptr_t)slot(&cli, c->idx), .rkey = cli.mr->rkey };
		struct rdma_conn_param cp = { .private_data = &h, .private_data_len = sizeof(h),
					      .responder_resources = 16, .initiator_depth = 16 };

		if (make_qp(&cli, ev->id) != 0)
			die("rdma_create_qp (client)");
		for (unsigned k = 0; k < RECV_DEPTH; k++)
			if (post_recv(&cli, c, k) != 0)
				die("ibv_post_recv (client)");
		if (rdma_connect(ev->id, &cp) != 0)
			die("rdma_connect");
		break;
	}
	case RDMA_CM_EVENT_ESTABLISHED: {
		struct { struct hello h; uint64_t big; uint32_t big_rkey; } __attribute__((packed)) r;

		if (ev->param.conn.private_data_len < sizeof(r)) {
			fprintf(stderr, "uiwarp-scale: QP %u: the server's answer is too short\n", c->idx);
			exit(1);
		}
		memcpy(&r, ev->param.conn.private_data, sizeof(r));
		c->raddr = r.h.addr;
		c->rkey = r.h.rkey;
		srv_big_addr = r.big;
		srv_big_rkey = r.big_rkey;
		c->up = true;
		cli.up++;
		break;
	}
	case RDMA_CM_EVENT_DISCONNECTED:
		c->down = true;
		cli.down++;
		break;
	default:
		fprintf(stderr, "uiwarp-scale: QP %u: %s (status %d)\n", c != NULL ? c->idx : 0,
			rdma_event_str(ev->event), ev->status);
		exit(1);
	}
	rdma_ack_cm_event(ev);
}

static unsigned passes;
static unsigned srv_max_qps;

static void progress(void)
{
	struct rdma_cm_event *ev;

	uiw_verbs_progress();
	if ((++passes & 15) == 0) {
		while (srv.ch != NULL && rdma_get_cm_event(srv.ch, &ev) == 0)
			srv_event(ev, srv_max_qps);
		while (cli.ch != NULL && rdma_get_cm_event(cli.ch, &ev) == 0)
			cli_event(ev);
	}
	srv_work();
}

static void wait_until(bool (*done)(void), const char *what, uint64_t limit_ns)
{
	uint64_t t0 = uiw_now_ns();

	while (!done()) {
		progress();
		if (uiw_now_ns() - t0 > limit_ns) {
			fprintf(stderr, "uiwarp-scale: timed out: %s (client %u up, %u down; server %u up)\n",
				what, cli.up, cli.down, srv.up);
			stuck("timed out");
		}
	}
}

static bool all_up(void)
{
	return cli.up == cli.nqp && (srv.ch == NULL || cli.ch == NULL || srv.up == cli.nqp);
}

static bool all_down(void)
{
	return cli.down == cli.nqp && (listen_id == NULL || srv.up == 0);
}

/* Client completions in the check phase: Send answered -> Read -> compare. */
static void check_phase(void)
{
	struct ibv_wc wc[64];
	unsigned next = 0, inflight = 0;

	while (cli_checked < cli.nqp) {
		while (next < cli.nqp && inflight < 256) {
			struct conn *c = &cli.c[next++];
			uint8_t *w = slot(&cli, c->idx) + OFF_WRITE;

			pattern(w, WLEN, c->idx, 'W');
			if (post(&cli, c, IBV_WR_RDMA_WRITE, (uintptr_t)w, cli.mr->lkey, WLEN,
				 c->raddr + OFF_WRITE, c->rkey, 'W') != 0)
				die("ibv_post_send (Write)");
			send_msg(&cli, c, MAGIC_CHECK, c->idx, 'C');
			c->state = 1;
			inflight++;
		}
		int n = ibv_poll_cq(cli.cq, 64, wc);

		for (int i = 0; i < n; i++) {
			uint32_t idx = (uint32_t)(wc[i].wr_id >> 8);
			struct conn *c = &cli.c[idx];

			if (wc[i].status != IBV_WC_SUCCESS) {
				fprintf(stderr, "uiwarp-scale: QP %u: %s\n", idx, ibv_wc_status_str(wc[i].status));
				exit(1);
			}
			if (wc[i].opcode == IBV_WC_RECV) {
				uint8_t *m = slot(&cli, idx) + OFF_RECV + (wc[i].wr_id & 0xff) * MSG;
				uint8_t *r = slot(&cli, idx) + OFF_READ;

				if (!pattern_ok(m + 8, MSG - 8, idx, 'S')) {
					fprintf(stderr, "uiwarp-scale: QP %u: the server found the Write or the "
						"Send wrong, or its answer is wrong\n", idx);
					c->state = 3;
					cli.failed++;
					cli_checked++;
					inflight--;
					continue;
				}
				post_recv(&cli, c, (unsigned)(wc[i].wr_id & 0xff));
				memset(r, 0, WLEN);
				if (post(&cli, c, IBV_WR_RDMA_READ, (uintptr_t)r, cli.mr->lkey, WLEN,
					 c->raddr + OFF_WRITE, c->rkey, 'R') != 0)
					die("ibv_post_send (Read)");
			} else if (wc[i].opcode == IBV_WC_RDMA_READ) {
				if (!pattern_ok(slot(&cli, idx) + OFF_READ, WLEN, idx, 'W')) {
					fprintf(stderr, "uiwarp-scale: QP %u: the Read brought other bytes\n", idx);
					c->state = 3;
					cli.failed++;
				} else {
					c->state = 2;
				}
				cli_checked++;
				inflight--;
			}
		}
		progress();
	}
}

/* Writes of @p size (or Sends of MSG when @p size is 0) round-robin over every QP, at most
 * @p per_qp in flight on one QP. @return seconds taken for @p iters. */
static double drive(unsigned iters, uint32_t size, unsigned per_qp)
{
	struct ibv_wc wc[64];
	unsigned posted = 0, done = 0, next = 0, done_before = 0;
	uint64_t t0 = uiw_now_ns(), last_progress = t0;

	for (unsigned i = 0; i < cli.nqp; i++)
		cli.c[i].out = 0;
	while (done < iters) {
		unsigned tries = 0;

		/* Round-robin, at most 256 QPs looked at a pass: a scan of every QP for each post
		 * cost more than the stack once most QPs waited for credits. */
		while (posted < iters && tries++ < 256 && posted - done < 1024) {
			struct conn *c = &cli.c[next];

			next = next + 1 == cli.nqp ? 0 : next + 1;
			if (c->out >= per_qp)
				continue;
			if (size == 0) {
				volatile uint32_t *credit = (volatile uint32_t *)(slot(&cli, c->idx) + OFF_CREDIT);

				if (c->rate_sent - *credit >= RECV_DEPTH)
					continue;
				c->rate_sent++;
				uint8_t *m = slot(&cli, c->idx) + OFF_SEND;
				uint32_t magic = MAGIC_RATE;

				memcpy(m, &magic, 4);
				if (post(&cli, c, IBV_WR_SEND, (uintptr_t)m, cli.mr->lkey, MSG, 0, 0, 'T') != 0)
					die("ibv_post_send (Send)");
			} else if (post(&cli, c, IBV_WR_RDMA_WRITE, (uintptr_t)cli.big, cli.big_mr->lkey, size,
					srv_big_addr, srv_big_rkey, 'B') != 0) {
				die("ibv_post_send (Write)");
			}
			c->out++;
			posted++;
		}
		int n = ibv_poll_cq(cli.cq, 64, wc);

		for (int i = 0; i < n; i++) {
			if (wc[i].status != IBV_WC_SUCCESS) {
				fprintf(stderr, "uiwarp-scale: QP %u: %s\n", (unsigned)(wc[i].wr_id >> 8),
					ibv_wc_status_str(wc[i].status));
				exit(1);
			}
			cli.c[wc[i].wr_id >> 8].out--;
			done++;
		}
		progress();
		if (done != done_before) {
			done_before = done;
			last_progress = uiw_now_ns();
		} else if (uiw_now_ns() - last_progress > 10ull * UIW_NS_PER_S) {
			fprintf(stderr, "uiwarp-scale: %u of %u completions, none for 10 s\n", done, iters);
			stuck(size ? "the bandwidth phase is stuck" : "the rate phase is stuck");
		}
	}
	return (double)(uiw_now_ns() - t0) / 1e9;
}

/* ---- memory ---- */

struct mem {
	size_t heap;       /* malloc'd octets in use */
	size_t rss;        /* resident octets */
};

static struct mem mem_now(void)
{
	struct mallinfo2 mi = mallinfo2();
	struct mem m = { mi.uordblks + mi.hblkhd, 0 };
	unsigned long pages_total = 0, pages_res = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	if (f != NULL) {
		if (fscanf(f, "%lu %lu", &pages_total, &pages_res) == 2)
			m.rss = pages_res * (size_t)sysconf(_SC_PAGESIZE);
		fclose(f);
	}
	return m;
}

/* ---- main ---- */

static void usage(void)
{
	fprintf(stderr,
		"usage: uiwarp-scale [--config FILE] [--set K=V]... MODE [options]\n"
		"  MODE: --pair (two instances on a ring pair, one thread; vhost-user with\n"
		"        pair_link=vhost) | --listen PORT |\n"
		"        --connect IP:PORT\n"
		"  --qps N          QPs to open (default 1000; the server: the most it serves)\n"
		"  --window N       connections being set up at once (default 256)\n"
		"  --bw-size N      RDMA Write size of the bandwidth phase (default 65536)\n"
		"  --bw-iters N     Writes in the bandwidth phase (default 20000; 0: skip)\n"
		"  --rate-iters N   64-octet Sends in the message-rate phase (default 200000; 0: skip)\n"
		"  --link-wait MS   wait for the port's link (default 10000)\n"
		"  --once           --listen: exit once --qps QPs connected and all disconnected\n"
		"                   (status 1 if an engine held none of them)\n"
		"  --one-thread     with engines=N: every engine in this thread (by default\n"
		"                   engines 1..N-1 run on threads of their own, as in the drop-in)\n");
}

static int parse_args(int argc, char **argv, struct opts *o)
{
	static const struct option longopts[] = {
		APP_MODE_OPTIONS,
		{ "qps", required_argument, NULL, 'n' },
		{ "window", required_argument, NULL, 'w' },
		{ "bw-size", required_argument, NULL, 's' },
		{ "bw-iters", required_argument, NULL, 'b' },
		{ "rate-iters", required_argument, NULL, 'r' },
		{ "link-wait", required_argument, NULL, 'L' },
		{ "once", no_argument, NULL, 'o' },
		{ "one-thread", no_argument, NULL, '1' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int opt;

	while ((opt = app_next_option(argc, argv, longopts, &o->m)) != -1) {
		char *end = NULL;
		unsigned long v = optarg != NULL ? strtoul(optarg, &end, 10) : 0;

		if (opt == APP_OPT_ERROR || opt == 'h' || opt == '?' ||
		    (optarg != NULL && (end == optarg || *end != '\0'))) {
			usage();
			return -1;
		}
		switch (opt) {
		case 'n': o->qps = (unsigned)v; break;
		case 'w': o->window = (unsigned)v; break;
		case 's': o->bw_size = (unsigned)v; break;
		case 'b': o->bw_iters = (unsigned)v; break;
		case 'r': o->rate_iters = (unsigned)v; break;
		case 'L': o->link_wait_ms = (unsigned)v; break;
		case 'o': o->once = true; break;
		case '1': o->one_thread = true; break;
		default: usage(); return -1;
		}
	}
	if (!app_mode_valid(&o->m) || o->qps == 0 || o->qps > 65536 || o->window == 0 ||
	    o->bw_size == 0 || o->bw_size > (1u << 20)) {
		fprintf(stderr, "uiwarp-scale: one mode; --qps 1 to 65536; --bw-size 1 to 1048576\n");
		usage();
		return -1;
	}
	return 0;
}

static volatile sig_atomic_t stop_serving;

static void on_stop(int sig)
{
	(void)sig;
	stop_serving = 1;
}

int main(int argc, char **argv)
{
	static struct uiw_stack a, b;
	struct opts o = { .qps = 1000, .window = 256, .bw_size = 65536, .bw_iters = 20000,
			  .rate_iters = 200000, .link_wait_ms = 10000 };
	struct uiw_config cfg;
	uint16_t port;
	uint64_t t0;
	struct mem m0, m1;
	double s;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (app_load_config(&cfg, &argc, argv) != 0 || parse_args(argc, argv, &o) != 0)
		return 2;
	if (!o.m.pair && (cfg.port[0] == '\0' || cfg.ip == 0)) {
		fprintf(stderr, "uiwarp-scale: --listen and --connect need port= and ip= in the configuration\n");
		return 2;
	}
	if (uiw_eal_init(&cfg, argv[0]) != 0)
		return 2;
	if (app_verbs_open(&a, &b, &cfg, &o.m, "scale", o.link_wait_ms) != 0)
		return 1;
	stack_a = &a;
	stack_b = o.m.pair ? &b : NULL;
	/* Two processes: engines 1..N-1 on threads of their own, as the drop-in runs them
	 * (--pair keeps one thread for both instances). */
	if (!o.m.pair && a.nengines > 1 && !o.one_thread) {
		if (uiw_verbs_engine_threads_start() != 0) {
			fprintf(stderr, "uiwarp-scale: cannot start the engine threads\n");
			return 1;
		}
		threads = true;
		printf("uiwarp-scale: engines 1..%u on threads of their own\n", a.nengines - 1);
	}
	port = o.m.pair ? 18516 : o.m.listen_port ? o.m.listen_port : o.m.connect_port;
	srv_max_qps = o.qps;
	if (o.m.pair || o.m.listen_port) {
		struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port),
					  .sin_addr.s_addr = htonl(o.m.pair ? UIW_STACK_PAIR_IP_B : cfg.ip) };

		srv.ch = app_nonblocking_channel();
		if (rdma_create_id(srv.ch, &listen_id, NULL, RDMA_PS_TCP) != 0 ||
		    rdma_bind_addr(listen_id, (struct sockaddr *)&sa) != 0 || rdma_listen(listen_id, 0) != 0)
			die("listen");
		side_resources(&srv, listen_id->verbs, o.qps, 1u << 20);
	}
	if (o.m.listen_port) {
		bool told = false, spread = true;

		printf("uiwarp-scale: listening on port %u for up to %u QPs\n", port, o.qps);
		setvbuf(stdout, NULL, _IOLBF, 0);
		/* SIGTERM or SIGINT end the server; with $UIWARP_STATS its counters are printed. */
		signal(SIGTERM, on_stop);
		signal(SIGINT, on_stop);
		while (!stop_serving) {
			progress();
			/* Once all are up: how the engines share them (a log for the test). */
			if (!told && srv.up == o.qps) {
				told = true;
				spread = print_engines("the server", stack_a);
				if (!spread)
					fprintf(stderr, "uiwarp-scale: an engine holds no connection\n");
			}
			if (o.once && told && srv.up == 0 && srv.down >= o.qps) {
				printf("uiwarp-scale: served %u QPs\n", o.qps);
				break;
			}
		}
		threads_done();
		if (getenv("UIWARP_STATS") != NULL && strcmp(getenv("UIWARP_STATS"), "0") != 0)
			app_print_counters("the server", stack_a);
		return o.once && !spread ? 1 : 0;
	}

	struct sockaddr_in dst = { .sin_family = AF_INET, .sin_port = htons(port),
				   .sin_addr.s_addr = htonl(o.m.pair ? UIW_STACK_PAIR_IP_B : o.m.connect_ip) };

	cli.ch = app_nonblocking_channel();
	/* The client's PD, CQ and buffers need its device, the first address resolution's:
	 * the memory per QP is counted from there. */
	cli.nqp = o.qps;
	cli_big = o.bw_size;
	if ((cli.c = calloc(o.qps, sizeof(*cli.c))) == NULL)
		die("memory");
	cli_start_one(&dst);
	while (cli.pd == NULL)
		progress();
	m0 = mem_now();
	printf("uiwarp-scale: %u QPs, %s\n", o.qps,
	       o.m.pair ? cfg.pair_vhost ? "two instances over vhost-user in one thread"
				   : "two instances on a ring pair in one thread"
			 : "to the peer");

	t0 = uiw_now_ns();
	while (cli.up < o.qps) {
		while (cli_started < o.qps && cli_started - cli.up < o.window)
			cli_start_one(&dst);
		progress();
		if (uiw_now_ns() - t0 > 120ull * UIW_NS_PER_S) {
			fprintf(stderr, "uiwarp-scale: timed out connecting: %u of %u up\n", cli.up, o.qps);
			return 1;
		}
	}
	wait_until(all_up, "the server's side of the connections", 30ull * UIW_NS_PER_S);
	s = (double)(uiw_now_ns() - t0) / 1e9;
	m1 = mem_now();
	printf("connect: %u QPs established on both sides in %.3f s: %.0f connections/s\n", o.qps, s,
	       o.qps / s);
	if (!print_engines("A", stack_a) || !print_engines("B", stack_b)) {
		fprintf(stderr, "uiwarp-scale: an engine holds no connection\n");
		return 1;
	}
	printf("memory: %.0f heap octets and %.0f resident octets per connected QP%s\n",
	       (double)(m1.heap - m0.heap) / o.qps, (double)((long)m1.rss - (long)m0.rss) / o.qps,
	       o.m.pair ? " (both sides: one QP at each end)" : "");

	t0 = uiw_now_ns();
	check_phase();
	printf("check: %u of %u QPs passed Write, Send each way and Read, every byte compared "
	       "(%.3f s)\n", o.qps - cli.failed, o.qps, (double)(uiw_now_ns() - t0) / 1e9);
	if (cli.failed != 0)
		return 1;
	if (o.bw_iters > 0) {
		s = drive(o.bw_iters, o.bw_size, 4);
		printf("bandwidth: RDMA Write %u octets over %u QPs: %.2f Gb/s (%u Writes, %.3f s)\n",
		       o.bw_size, o.qps, (double)o.bw_size * o.bw_iters * 8 / s / 1e9, o.bw_iters, s);
	}
	if (o.rate_iters > 0) {
		s = drive(o.rate_iters, 0, 4);
		printf("rate: %u-octet Sends over %u QPs: %.3f M/s (%u Sends, %.3f s)\n", MSG, o.qps,
		       o.rate_iters / s / 1e6, o.rate_iters, s);
	}

	t0 = uiw_now_ns();
	for (unsigned i = 0; i < o.qps; i++)
		if (rdma_disconnect(cli.c[i].id) != 0)
			die("rdma_disconnect");
	wait_until(all_down, "disconnections", 60ull * UIW_NS_PER_S);
	s = (double)(uiw_now_ns() - t0) / 1e9;
	printf("disconnect: %u QPs in %.3f s: %.0f disconnections/s\n", o.qps, s, o.qps / s);
	for (unsigned i = 0; i < o.qps; i++) {
		rdma_destroy_qp(cli.c[i].id);
		rdma_destroy_id(cli.c[i].id);
	}
	threads_done();
	/* $UIWARP_STATS, as for the other tools: every layer's counters at the end. */
	if (getenv("UIWARP_STATS") != NULL && strcmp(getenv("UIWARP_STATS"), "0") != 0) {
		app_print_counters(o.m.pair ? "A (client)" : "the client", stack_a);
		if (stack_b != NULL)
			app_print_counters("B (server)", stack_b);
	}
	printf("PASS\n");
	return 0;
}
