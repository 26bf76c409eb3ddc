/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * siw_verbs: two peers check each other's Send variants, solicited events, remote
 * invalidation, a provoked Terminate and connect/disconnect cycles, through plain
 * libibverbs and librdmacm only. The same binary runs on Linux siw (in the interop guest)
 * and on uiwarp's drop-in libraries (on the host), so each side is checked by the other.
 *
 * usage: siw_verbs (-s ADDR | -c ADDR) [-p PORT] [--provoke | --victim] [--cycles N]
 *                  [--sport P]
 *
 * Default mode, per direction (the client sends first, then the server):
 *   the sender posts Send, Send with Solicited Event, Send with Invalidate (the target's
 *   first region) and Send with SE and Invalidate (its second region), each answered by
 *   the target. The target arms its CQ for solicited completions only and checks: data,
 *   IBV_WC_WITH_INV with the right invalidated_rkey, and that exactly the two SE Sends
 *   raise a completion event (RFC 5040 §5.3, §6.5).
 * --provoke / --victim (one on each side): the provoker then Writes to the victim's first
 *   region, which the Send with Invalidate invalidated. The victim must Terminate (DDP
 *   tagged buffer error, invalid STag: RFC 5041 §7.2, RFC 5040 §5.2) and place nothing;
 *   both sides must report an error (an async event or an error completion).
 * --cycles N: N connections, one Send each way on each, every object made and destroyed
 *   per connection; open descriptors must not grow from the 10th connection on.
 * --sport P: the client's connections come from ports P, P+1, ... (rdma_cm may otherwise
 *   reuse a port whose last connection is in TIME_WAIT, which a capture cannot tell apart).
 *
 * Exit status 0 when every check held. Lines start "siw_verbs:"; a failed check says FAIL.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#define MSG_SIZE 128
#define NRECV 16
#define NSEND 16
#define REGION 4096
#define GUARD 0x5a
#define TIMEOUT_MS 60000  /* for a message or a CM event */
#define EVENT_MS 5000     /* for a completion event (TIMEOUT_MS is far longer) */

struct msg {
	uint32_t kind;
	uint32_t rkey1, rkey2;
	uint32_t pad;
	uint64_t addr1;
	char text[32];
};

enum kind { HELLO = 1, DATA, ACK, BYE };

struct peer {
	struct rdma_cm_id *id;
	struct ibv_pd *pd;
	struct ibv_comp_channel *ch;
	struct ibv_cq *cq;
	struct ibv_mr *rmr, *smr, *mr1, *mr2;
	uint8_t rbuf[NRECV][MSG_SIZE];
	uint8_t sbuf[NSEND][MSG_SIZE];  /* used in turn: a Send's buffer stays until it is sent */
	unsigned snext;
	uint8_t region1[REGION], region2[REGION];
	struct msg remote;  /* the peer's HELLO */
	unsigned events;    /* completion events seen */
};

static const char *role = "?";
static int failures;
/*
 * Linux siw (6.1, rdma-core 44) on this side: it raises no completion event for a
 * solicited receive (siw_rqe_complete notifies as for any signalled completion, which a
 * CQ armed for solicited completions ignores) and gives user space no invalidation in a
 * receive completion (libsiw clears wc_flags). Those two checks are then left to the wire
 * (the capture's opcodes) and to the Terminate that follows a Write to the invalidated
 * STag.
 */
static bool on_siw;

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	printf("siw_verbs: %s: ", role);
	vprintf(fmt, ap);
	printf("\n");
	fflush(stdout);
	va_end(ap);
}

#define CHECK(cond, ...)                                        \
	do {                                                    \
		if (!(cond)) {                                  \
			say("FAIL " __VA_ARGS__);               \
			failures++;                             \
		}                                               \
	} while (0)

static void die(const char *what)
{
	say("FAIL %s: %s", what, strerror(errno));
	exit(1);
}

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000;
}

/* The next CM event, which must be `want`; NULL after a timeout or another event. */
static struct rdma_cm_event *cm_event(struct rdma_event_channel *ec, enum rdma_cm_event_type want)
{
	struct pollfd p = { .fd = ec->fd, .events = POLLIN };
	struct rdma_cm_event *ev;

	if (poll(&p, 1, TIMEOUT_MS) != 1) {
		say("FAIL no CM event (waiting for %s)", rdma_event_str(want));
		return NULL;
	}
	if (rdma_get_cm_event(ec, &ev))
		die("rdma_get_cm_event");
	if (ev->event != want) {
		say("FAIL CM event %s (status %d), expected %s", rdma_event_str(ev->event), ev->status,
		    rdma_event_str(want));
		rdma_ack_cm_event(ev);
		return NULL;
	}
	return ev;
}

static void post_recv(struct peer *p, unsigned i)
{
	struct ibv_sge sge = { (uintptr_t)p->rbuf[i], MSG_SIZE, p->rmr->lkey };
	struct ibv_recv_wr wr = { .wr_id = i, .sg_list = &sge, .num_sge = 1 }, *bad;

	if (ibv_post_recv(p->id->qp, &wr, &bad))
		die("ibv_post_recv");
}

/* PD, CQ with a completion channel, QP, regions; NRECV receives posted. */
static void setup(struct peer *p, struct rdma_cm_id *id)
{
	struct ibv_qp_init_attr qa = {
		.cap = { .max_send_wr = 32, .max_recv_wr = NRECV, .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
	};
	int acc = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;

	p->id = id;
	p->events = 0;
	on_siw = !strncmp(ibv_get_device_name(id->verbs->device), "siw", 3);
	if (!(p->pd = ibv_alloc_pd(id->verbs)) || !(p->ch = ibv_create_comp_channel(id->verbs)) ||
	    !(p->cq = ibv_create_cq(id->verbs, 64, NULL, p->ch, 0)))
		die("pd/channel/cq");
	qa.send_cq = qa.recv_cq = p->cq;
	if (rdma_create_qp(id, p->pd, &qa))
		die("rdma_create_qp");
	memset(p->region1, GUARD, REGION);
	memset(p->region2, GUARD, REGION);
	if (!(p->rmr = ibv_reg_mr(p->pd, p->rbuf, sizeof p->rbuf, IBV_ACCESS_LOCAL_WRITE)) ||
	    !(p->smr = ibv_reg_mr(p->pd, p->sbuf, sizeof p->sbuf, 0)) ||
	    !(p->mr1 = ibv_reg_mr(p->pd, p->region1, REGION, acc)) ||
	    !(p->mr2 = ibv_reg_mr(p->pd, p->region2, REGION, acc)))
		die("ibv_reg_mr");
	for (unsigned i = 0; i < NRECV; i++)
		post_recv(p, i);
}

static void teardown(struct peer *p)
{
	rdma_destroy_qp(p->id);
	ibv_dereg_mr(p->rmr);
	ibv_dereg_mr(p->smr);
	ibv_dereg_mr(p->mr1);
	ibv_dereg_mr(p->mr2);
	if (ibv_destroy_cq(p->cq) || ibv_destroy_comp_channel(p->ch) || ibv_dealloc_pd(p->pd))
		die("destroy cq/channel/pd");
}

/* Posts one signaled Send of a message; opcode and flags as given. */
static int send_msg(struct peer *p, enum kind kind, const char *text, enum ibv_wr_opcode op,
		    unsigned flags, uint32_t inv)
{
	struct msg *m = (struct msg *)p->sbuf[p->snext++ % NSEND];
	struct ibv_sge sge = { (uintptr_t)m, sizeof *m, p->smr->lkey };
	struct ibv_send_wr wr = { .wr_id = 1000 + kind, .sg_list = &sge, .num_sge = 1, .opcode = op,
				  .send_flags = IBV_SEND_SIGNALED | flags }, *bad;

	memset(m, 0, sizeof *m);
	m->kind = kind;
	m->rkey1 = p->mr1->rkey;
	m->rkey2 = p->mr2->rkey;
	m->addr1 = (uintptr_t)p->region1;
	snprintf(m->text, sizeof m->text, "%s", text);
	if (op == IBV_WR_SEND_WITH_INV) {
		wr.invalidate_rkey = inv;
		wr.wr.rdma.rkey = inv;  /* libsiw takes the STag to invalidate from here */
	}
	return ibv_post_send(p->id->qp, &wr, &bad);
}

/*
 * Polls until a receive completes (send completions must succeed and are counted in
 * *sends). Returns false after a timeout or an error completion, with *wc the last one.
 */
static bool next_recv(struct peer *p, struct ibv_wc *wc, unsigned *sends)
{
	long end = now_ms() + TIMEOUT_MS;

	while (now_ms() < end) {
		int n = ibv_poll_cq(p->cq, 1, wc);

		if (n < 0)
			die("ibv_poll_cq");
		if (n == 0)
			continue;
		if (wc->status != IBV_WC_SUCCESS)
			return false;
		if (wc->opcode & IBV_WC_RECV)
			return true;
		if (sends)
			(*sends)++;
	}
	wc->status = IBV_WC_GENERAL_ERR;
	return false;
}

/* Waits up to ms for a completion event; true if one came (acknowledged). */
static bool cq_event(struct peer *p, int ms)
{
	struct pollfd pf = { .fd = p->ch->fd, .events = POLLIN };
	struct ibv_cq *cq;
	void *ctx;

	if (poll(&pf, 1, ms) != 1)
		return false;
	if (ibv_get_cq_event(p->ch, &cq, &ctx))
		die("ibv_get_cq_event");
	ibv_ack_cq_events(cq, 1);
	p->events++;
	return true;
}

/* Receives the next message, which must be `kind`; reposts its buffer. */
static bool expect_msg(struct peer *p, enum kind kind, const char *text, struct ibv_wc *wc)
{
	if (!next_recv(p, wc, NULL)) {
		say("FAIL waiting for %s: completion status %s", text, ibv_wc_status_str(wc->status));
		failures++;
		return false;
	}
	struct msg *m = (struct msg *)p->rbuf[wc->wr_id];

	CHECK(m->kind == kind && !strcmp(m->text, text) && wc->byte_len == sizeof *m,
	      "message '%s' (%u octets), expected '%s'", m->text, wc->byte_len, text);
	if (kind == HELLO)
		p->remote = *m;
	post_recv(p, wc->wr_id);
	return true;
}

struct variant {
	const char *name;
	enum ibv_wr_opcode op;
	unsigned flags;
	int inv;  /* 0: none, 1: the target's region 1, 2: region 2 */
};

static const struct variant variants[] = {
	{ "send", IBV_WR_SEND, 0, 0 },
	{ "send-se", IBV_WR_SEND, IBV_SEND_SOLICITED, 0 },
	{ "send-inv", IBV_WR_SEND_WITH_INV, 0, 1 },
	{ "send-se-inv", IBV_WR_SEND_WITH_INV, IBV_SEND_SOLICITED, 2 },
};

static void sender(struct peer *p)
{
	struct ibv_wc wc;
	int before = failures;

	for (unsigned i = 0; i < 4; i++) {
		const struct variant *v = &variants[i];
		uint32_t inv = v->inv == 1 ? p->remote.rkey1 : p->remote.rkey2;

		if (send_msg(p, DATA, v->name, v->op, v->flags, inv))
			die("ibv_post_send");
		if (!expect_msg(p, ACK, v->name, &wc))
			return;
	}
	if (failures == before)
		say("ok sent send, send-se, send-inv, send-se-inv; each answered");
}

static void target(struct peer *p)
{
	struct ibv_wc wc;
	int before = failures;

	if (ibv_req_notify_cq(p->cq, 1))
		die("ibv_req_notify_cq");
	for (unsigned i = 0; i < 4; i++) {
		const struct variant *v = &variants[i];
		bool solicited = v->flags & IBV_SEND_SOLICITED, ev;
		uint32_t want = v->inv == 1 ? p->mr1->rkey : p->mr2->rkey;

		/* A solicited Send raises the event; a plain one must not within 300 ms. */
		ev = cq_event(p, solicited ? EVENT_MS : 300);
		if (!expect_msg(p, DATA, v->name, &wc))
			return;
		if (!solicited && !ev)
			ev = cq_event(p, 300);
		CHECK(ev == solicited || on_siw, "%s: completion event %s", v->name, ev ? "raised" : "missing");
		if (on_siw) {
			/* see on_siw */
		} else if (v->inv) {
			CHECK((wc.wc_flags & IBV_WC_WITH_INV) && wc.invalidated_rkey == want,
			      "%s: flags 0x%x invalidated 0x%x, expected IBV_WC_WITH_INV and 0x%x", v->name,
			      wc.wc_flags, wc.invalidated_rkey, want);
		} else {
			CHECK(!(wc.wc_flags & IBV_WC_WITH_INV), "%s: IBV_WC_WITH_INV set", v->name);
		}
		if (ev && ibv_req_notify_cq(p->cq, 1))
			die("ibv_req_notify_cq");
		if (send_msg(p, ACK, v->name, IBV_WR_SEND, 0, 0))
			die("ibv_post_send");
	}
	if (failures == before && on_siw)
		say("ok received send, send-se, send-inv, send-se-inv: data as sent (siw reports no "
		    "solicited events and no invalidation)");
	else if (failures == before)
		say("ok received send, send-se, send-inv, send-se-inv: data, invalidated STags and "
		    "solicited events (%u) as sent", p->events);
}

/* The next async event within ms, or -1. */
static int async_event(struct ibv_context *ctx, int ms)
{
	struct pollfd pf = { .fd = ctx->async_fd, .events = POLLIN };
	struct ibv_async_event ev;
	int type;

	if (poll(&pf, 1, ms) != 1 || ibv_get_async_event(ctx, &ev))
		return -1;
	type = ev.event_type;
	ibv_ack_async_event(&ev);
	return type;
}

/*
 * Drains completions and async events for up to ms, and 500 ms more once an error came;
 * says which came: async events by name, error completions by status with a count.
 */
static bool error_seen(struct peer *p, int ms, char *what, size_t len)
{
	long end = now_ms() + ms;
	unsigned count[IBV_WC_GENERAL_ERR + 1] = { 0 };
	size_t used = 0;
	bool seen = false;
	struct ibv_wc wc;

	what[0] = 0;
	while (now_ms() < end) {
		while (ibv_poll_cq(p->cq, 1, &wc) == 1) {
			if (wc.status != IBV_WC_SUCCESS && wc.status <= IBV_WC_GENERAL_ERR) {
				count[wc.status]++;
				if (!seen)
					end = now_ms() + 500;
				seen = true;
			}
		}
		int t = async_event(p->id->verbs, 10);

		if (t >= 0 && used < len)
			used += snprintf(what + used, len - used, "async event %s; ", ibv_event_type_str(t));
		if (t >= 0) {
			if (!seen)
				end = now_ms() + 500;
			seen = true;
		}
	}
	for (int s = 0; s <= IBV_WC_GENERAL_ERR && used < len; s++) {
		if (count[s])
			used += snprintf(what + used, len - used, "%u completion(s) %s; ", count[s],
					 ibv_wc_status_str(s));
	}
	return seen;
}

static void provoke(struct peer *p)
{
	uint8_t *data = p->sbuf[p->snext++ % NSEND];
	struct ibv_sge sge = { (uintptr_t)data, 64, p->smr->lkey };
	struct ibv_send_wr wr = { .wr_id = 77, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;
	char what[256];

	memset(data, 0xa5, 64);
	wr.wr.rdma.remote_addr = p->remote.addr1 + 64;
	wr.wr.rdma.rkey = p->remote.rkey1;
	if (ibv_post_send(p->id->qp, &wr, &bad))
		die("ibv_post_send (write)");
	bool seen = error_seen(p, EVENT_MS * 2, what, sizeof what);

	CHECK(seen, "a Write to the invalidated STag 0x%x: no error reported", p->remote.rkey1);
	if (seen)
		say("ok a Write to the invalidated STag 0x%x: %s", p->remote.rkey1, what);
}

static void victim(struct peer *p)
{
	char what[256];
	bool seen = error_seen(p, EVENT_MS * 2, what, sizeof what);
	unsigned placed = 0;

	for (unsigned i = 0; i < REGION; i++)
		placed += p->region1[i] != GUARD;
	CHECK(seen, "the peer's Write to the invalidated STag 0x%x: no error reported", p->mr1->rkey);
	CHECK(placed == 0, "%u octets placed in the invalidated region", placed);
	if (seen && !placed)
		say("ok the peer's Write to the invalidated STag 0x%x: %snothing placed", p->mr1->rkey, what);
}

/* Client: resolve from source port sport (0: any); returns the id, routed. */
static struct rdma_cm_id *client_connect(struct rdma_event_channel *ec, struct sockaddr *dst,
					 unsigned sport)
{
	struct sockaddr_in src = { .sin_family = AF_INET, .sin_port = htons(sport) };
	struct rdma_cm_id *id;
	struct rdma_cm_event *ev;

	if (rdma_create_id(ec, &id, NULL, RDMA_PS_TCP) ||
	    rdma_resolve_addr(id, sport ? (struct sockaddr *)&src : NULL, dst, 5000))
		die("rdma_resolve_addr");
	if (!(ev = cm_event(ec, RDMA_CM_EVENT_ADDR_RESOLVED)))
		exit(1);
	rdma_ack_cm_event(ev);
	if (rdma_resolve_route(id, 5000))
		die("rdma_resolve_route");
	if (!(ev = cm_event(ec, RDMA_CM_EVENT_ROUTE_RESOLVED)))
		exit(1);
	rdma_ack_cm_event(ev);
	return id;
}

/* Server: the next connection request, accepted once `setup` made its QP. */
static struct rdma_cm_id *server_request(struct rdma_event_channel *ec)
{
	struct rdma_cm_event *ev = cm_event(ec, RDMA_CM_EVENT_CONNECT_REQUEST);
	struct rdma_cm_id *id;

	if (!ev)
		exit(1);
	id = ev->id;
	rdma_ack_cm_event(ev);
	return id;
}

/* Connects (client) or accepts (server) @p id, whose QP is made; ESTABLISHED must follow. */
static void establish(struct rdma_event_channel *ec, struct rdma_cm_id *id, bool server)
{
	struct rdma_conn_param cp = { .responder_resources = 1, .initiator_depth = 1 };
	struct rdma_cm_event *ev;

	if (server ? rdma_accept(id, &cp) : rdma_connect(id, &cp))
		die(server ? "rdma_accept" : "rdma_connect");
	if (!(ev = cm_event(ec, RDMA_CM_EVENT_ESTABLISHED)))
		exit(1);
	rdma_ack_cm_event(ev);
}

static void disconnect(struct rdma_event_channel *ec, struct peer *p)
{
	struct rdma_cm_event *ev;

	rdma_disconnect(p->id);
	if ((ev = cm_event(ec, RDMA_CM_EVENT_DISCONNECTED)))
		rdma_ack_cm_event(ev);
	else
		failures++;
}

static unsigned open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	unsigned n = 0;

	if (!d)
		return 0;
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

/* One connection: HELLO each way (the client first, as MPA requires outside P2P). */
static bool hello(struct peer *p, bool server)
{
	struct ibv_wc wc;

	if (!server && send_msg(p, HELLO, "hello", IBV_WR_SEND, 0, 0))
		die("ibv_post_send");
	if (!expect_msg(p, HELLO, "hello", &wc))
		return false;
	if (server && send_msg(p, HELLO, "hello", IBV_WR_SEND, 0, 0))
		die("ibv_post_send");
	return true;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "provoke", no_argument, NULL, 'P' }, { "victim", no_argument, NULL, 'V' },
		{ "cycles", required_argument, NULL, 'n' }, { "sport", required_argument, NULL, 'S' },
		{ NULL, 0, NULL, 0 },
	};
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(7175) };
	bool server = false, do_provoke = false, is_victim = false;
	unsigned cycles = 0, sport = 0;
	const char *addr = NULL;
	int c;

	while ((c = getopt_long(argc, argv, "s:c:p:", opts, NULL)) != -1) {
		switch (c) {
		case 's':
		case 'c':
			server = c == 's';
			addr = optarg;
			break;
		case 'p':
			sa.sin_port = htons(atoi(optarg));
			break;
		case 'P':
			do_provoke = true;
			break;
		case 'V':
			is_victim = true;
			break;
		case 'n':
			cycles = atoi(optarg);
			break;
		case 'S':
			sport = atoi(optarg);
			break;
		default:
			fprintf(stderr, "usage: siw_verbs (-s ADDR | -c ADDR) [-p PORT] [--provoke | --victim] "
					"[--cycles N] [--sport P]\n");
			return 2;
		}
	}
	if (!addr || inet_pton(AF_INET, addr, &sa.sin_addr) != 1) {
		fprintf(stderr, "siw_verbs: -s or -c with an IPv4 address\n");
		return 2;
	}
	role = server ? "server" : "client";

	struct rdma_event_channel *ec = rdma_create_event_channel();
	struct rdma_cm_id *listen_id = NULL;
	static struct peer peer;
	struct peer *p = &peer;

	if (!ec)
		die("rdma_create_event_channel");
	if (server) {
		if (rdma_create_id(ec, &listen_id, NULL, RDMA_PS_TCP) ||
		    rdma_bind_addr(listen_id, (struct sockaddr *)&sa) || rdma_listen(listen_id, 4))
			die("listen");
	}
	unsigned n = cycles ? cycles : 1, fds10 = 0;

	for (unsigned i = 0; i < n; i++) {
		struct rdma_cm_id *id = server ? server_request(ec)
					       : client_connect(ec, (struct sockaddr *)&sa, sport ? sport + i : 0);

		setup(p, id);
		establish(ec, id, server);
		if (!hello(p, server))
			return 1;
		if (!cycles) {
			if (!server) {
				sender(p);
				target(p);
			} else {
				target(p);
				sender(p);
			}
			if (do_provoke)
				provoke(p);
			if (is_victim)
				victim(p);
		}
		/* The client ends each connection; the server answers the disconnect. */
		if (!server || do_provoke || is_victim) {
			disconnect(ec, p);
		} else {
			struct rdma_cm_event *ev = cm_event(ec, RDMA_CM_EVENT_DISCONNECTED);

			if (!ev)
				return 1;
			rdma_ack_cm_event(ev);
			rdma_disconnect(id);
		}
		teardown(p);
		rdma_destroy_id(id);
		if (i + 1 == 10)
			fds10 = open_fds();
	}
	if (cycles) {
		unsigned fds = open_fds();

		CHECK(cycles < 10 || fds <= fds10, "open descriptors grew from %u to %u", fds10, fds);
		if (!failures)
			say("ok %u connections made and ended; %u open descriptors after the 10th and the last",
			    cycles, fds);
	}
	if (listen_id)
		rdma_destroy_id(listen_id);
	rdma_destroy_event_channel(ec);
	say("%s", failures ? "FAIL" : "PASS");
	return failures ? 1 : 0;
}
