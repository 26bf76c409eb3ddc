/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * uiwarp-rping: the ping-pong of rdma-core's rping over the verbs and rdma_cm API, with its
 * wire protocol, so it runs against rping itself. Per iteration the client advertises its
 * source buffer in a Send (address, rkey, size: 16 octets, big-endian); the server reads it
 * with RDMA Read and answers with a Send; the client advertises its sink buffer; the server
 * writes what it read into it and answers; the client checks the bytes came back (-v).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <endian.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#include <rte_eal.h>

#include "instance.h"
#include "uiw_time.h"
#include "uiw_verbs.h"

struct info {                   /* rping's struct rping_rdma_info, big-endian */
	uint64_t buf;
	uint32_t rkey, size;
} __attribute__((packed));

enum { WR_SEND = 1, WR_RECV, WR_READ, WR_WRITE };

struct side {
	const char *name;
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	uint8_t *mem;               /* [send info | recv info | rdma buf | start buf] */
	uint32_t size;
	bool up, down;
	unsigned recvs, reads, writes;
	struct info peer;
};

#define SEND_OFF 0
#define RECV_OFF 64
#define RDMA_OFF 128

/* The server's connections: one for -s, up to MAX_SERVED at once with -P. */
#define MAX_SERVED 64
static struct side srvs[MAX_SERVED], cli = { .name = "client" };
static struct rdma_event_channel *srv_ch;
static struct rdma_cm_id *listen_id;
static bool persistent;        /* -P: serve clients until killed, any number at once */
static unsigned served;        /* connections served and gone */
static uint32_t srv_size;
static unsigned last_recvs;    /* the reads and writes of the last connection served */

static void die(const char *what)
{
	fprintf(stderr, "uiwarp-rping: %s: %s\n", what, strerror(errno));
	exit(1);
}

static uint8_t *rdma_buf(struct side *s) { return s->mem + RDMA_OFF; }
static uint8_t *start_buf(struct side *s) { return s->mem + RDMA_OFF + s->size; }

static void setup(struct side *s, struct rdma_cm_id *id)
{
	struct ibv_qp_init_attr qa = { .qp_type = IBV_QPT_RC,
				       .cap = { .max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 1,
						.max_recv_sge = 1 } };

	s->id = id;
	s->mem = calloc(1, RDMA_OFF + 2 * (size_t)s->size);
	s->pd = ibv_alloc_pd(id->verbs);
	s->cq = s->pd != NULL ? ibv_create_cq(id->verbs, 16, NULL, NULL, 0) : NULL;
	if (s->mem == NULL || s->cq == NULL)
		die("resources");
	qa.send_cq = qa.recv_cq = s->cq;
	if (rdma_create_qp(id, s->pd, &qa) != 0)
		die("rdma_create_qp");
	s->mr = ibv_reg_mr(s->pd, s->mem, RDMA_OFF + 2 * (size_t)s->size,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE);
	if (s->mr == NULL)
		die("ibv_reg_mr");
}

static void post_recv(struct side *s)
{
	struct ibv_sge g = { (uintptr_t)s->mem + RECV_OFF, sizeof(struct info), s->mr->lkey };
	struct ibv_recv_wr w = { .wr_id = WR_RECV, .sg_list = &g, .num_sge = 1 }, *bad;

	if (ibv_post_recv(s->id->qp, &w, &bad) != 0)
		die("ibv_post_recv");
}

/* A Send of an advertisement of @p buf (or of nothing in particular, for the server). */
static void send_info(struct side *s, const uint8_t *buf)
{
	struct info i = { .buf = htobe64((uintptr_t)buf), .rkey = htonl(s->mr->rkey), .size = htonl(s->size) };
	struct ibv_sge g = { (uintptr_t)s->mem + SEND_OFF, sizeof(i), s->mr->lkey };
	struct ibv_send_wr w = { .wr_id = WR_SEND, .sg_list = &g, .num_sge = 1, .opcode = IBV_WR_SEND,
				 .send_flags = IBV_SEND_SIGNALED }, *bad;

	memcpy(s->mem + SEND_OFF, &i, sizeof(i));
	if (ibv_post_send(s->id->qp, &w, &bad) != 0)
		die("ibv_post_send");
}

static void rdma_op(struct side *s, bool read)
{
	struct ibv_sge g = { (uintptr_t)rdma_buf(s), be32toh(s->peer.size) < s->size ? be32toh(s->peer.size) : s->size,
			     s->mr->lkey };
	struct ibv_send_wr w = { .wr_id = read ? WR_READ : WR_WRITE, .sg_list = &g, .num_sge = 1,
				 .opcode = read ? IBV_WR_RDMA_READ : IBV_WR_RDMA_WRITE,
				 .send_flags = IBV_SEND_SIGNALED,
				 .wr.rdma = { .remote_addr = be64toh(s->peer.buf), .rkey = ntohl(s->peer.rkey) } },
			       *bad;

	if (ibv_post_send(s->id->qp, &w, &bad) != 0)
		die("ibv_post_send (RDMA)");
}

/* A server connection's resources back to the pool of sides. */
static void server_teardown(struct side *s)
{
	if (s->id == NULL)
		return;
	if (s->id->qp != NULL)
		rdma_destroy_qp(s->id);
	if (s->mr != NULL)
		ibv_dereg_mr(s->mr);
	if (s->cq != NULL)
		ibv_destroy_cq(s->cq);
	if (s->pd != NULL)
		ibv_dealloc_pd(s->pd);
	rdma_destroy_id(s->id);
	free(s->mem);
	last_recvs = s->recvs;
	*s = (struct side){ .name = "server", .size = srv_size };
	served++;
}

/* A connection that failed: with -P the others go on, else the server stops. */
static void server_failed(struct side *s, const char *what, int status)
{
	fprintf(stderr, "uiwarp-rping: server: connection %d: %s %d\n", (int)(s - srvs), what, status);
	if (!persistent)
		exit(1);
	if (!s->down) {
		s->down = true;
		rdma_disconnect(s->id);
	}
}

/* The server: read what the client advertises, then write it to the client's sink. */
static void server_cq(void)
{
	struct ibv_wc wc;

	for (unsigned i = 0; i < MAX_SERVED; i++) {
		struct side *s = &srvs[i];

		while (s->cq != NULL && !s->down && ibv_poll_cq(s->cq, 1, &wc) == 1) {
			if (wc.status == IBV_WC_WR_FLUSH_ERR)
				continue;   /* the connection is ending: the receive left posted */
			if (wc.status != IBV_WC_SUCCESS) {
				server_failed(s, "completion status", wc.status);
				break;
			}
			if (wc.wr_id == WR_RECV) {
				memcpy(&s->peer, s->mem + RECV_OFF, sizeof(s->peer));
				post_recv(s);
				rdma_op(s, ++s->recvs % 2 == 1);   /* odd: its source; even: its sink */
			} else if (wc.wr_id == WR_READ || wc.wr_id == WR_WRITE) {
				send_info(s, rdma_buf(s));         /* go ahead */
			}
		}
	}
}

static struct side *free_side(void)
{
	for (unsigned i = 0; i < MAX_SERVED; i++)
		if (srvs[i].id == NULL)
			return &srvs[i];
	return NULL;
}

static void server_events(void)
{
	struct rdma_cm_event *ev;
	struct rdma_conn_param cp = { .responder_resources = 1, .initiator_depth = 1 };
	struct side *s;

	if (srv_ch == NULL || rdma_get_cm_event(srv_ch, &ev) != 0)
		return;
	s = ev->id->context;
	switch (ev->event) {
	case RDMA_CM_EVENT_CONNECT_REQUEST:
		s = free_side();
		if (s == NULL || (!persistent && served + (srvs[0].id != NULL) > 0)) {
			rdma_reject(ev->id, NULL, 0);   /* busy: -s serves one client */
			break;
		}
		s->size = srv_size;
		setup(s, ev->id);
		ev->id->context = s;
		post_recv(s);
		if (rdma_accept(ev->id, &cp) != 0) {
			server_failed(s, "rdma_accept", errno);   /* exits without -P */
			rdma_ack_cm_event(ev);
			server_teardown(s);   /* no event will come for it */
			return;
		}
		break;
	case RDMA_CM_EVENT_ESTABLISHED:
		s->up = true;
		break;
	case RDMA_CM_EVENT_DISCONNECTED:
	case RDMA_CM_EVENT_CONNECT_ERROR:
	case RDMA_CM_EVENT_UNREACHABLE:
	case RDMA_CM_EVENT_REJECTED:
		rdma_ack_cm_event(ev);
		if (s != NULL)
			server_teardown(s);
		return;
	default:
		break;
	}
	rdma_ack_cm_event(ev);
}

static void client_events(uint32_t ip, uint16_t port)
{
	struct rdma_cm_event *ev;
	struct rdma_conn_param cp = { .responder_resources = 1, .initiator_depth = 1 };

	if (cli.ch == NULL || rdma_get_cm_event(cli.ch, &ev) != 0)
		return;
	(void)ip;
	(void)port;
	switch (ev->event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		if (rdma_resolve_route(ev->id, 2000) != 0)
			die("rdma_resolve_route");
		break;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		setup(&cli, ev->id);
		post_recv(&cli);
		if (rdma_connect(ev->id, &cp) != 0)
			die("rdma_connect");
		break;
	case RDMA_CM_EVENT_ESTABLISHED:
		cli.up = true;
		break;
	case RDMA_CM_EVENT_DISCONNECTED:
		cli.down = true;
		break;
	default:
		fprintf(stderr, "uiwarp-rping: client: %s\n", rdma_event_str(ev->event));
		exit(1);
	}
	rdma_ack_cm_event(ev);
}

static void pump(uint32_t ip, uint16_t port)
{
	server_events();
	client_events(ip, port);
	server_cq();
}

/* Waits for the client's next receive, pumping everything meanwhile. */
static void client_wait_recv(uint32_t ip, uint16_t port)
{
	uint64_t end = uiw_now_ns() + 10 * UIW_NS_PER_S;
	struct ibv_wc wc;

	for (;;) {
		if (ibv_poll_cq(cli.cq, 1, &wc) == 1) {
			if (wc.status != IBV_WC_SUCCESS) {
				fprintf(stderr, "uiwarp-rping: client: completion status %d\n", wc.status);
				exit(1);
			}
			if (wc.wr_id == WR_RECV) {
				post_recv(&cli);
				return;
			}
		}
		pump(ip, port);
		if (uiw_now_ns() > end) {
			fprintf(stderr, "uiwarp-rping: client: no answer from the server\n");
			exit(1);
		}
	}
}

static unsigned run_client(uint32_t ip, uint16_t port, unsigned count, bool verbose)
{
	unsigned ok = 0;

	while (!cli.up)
		pump(ip, port);
	for (unsigned i = 0; i < count; i++) {
		uint8_t *sb = start_buf(&cli);
		int n = snprintf((char *)sb, cli.size, "rdma-ping-%u: ", i);

		for (uint32_t k = (uint32_t)(n > 0 ? n : 0); k + 1 < cli.size; k++)
			sb[k] = (uint8_t)('A' + (i + k) % 62);
		sb[cli.size - 1] = '\0';
		memset(rdma_buf(&cli), 0, cli.size);
		send_info(&cli, sb);                 /* here is my source: read it */
		client_wait_recv(ip, port);
		send_info(&cli, rdma_buf(&cli));     /* here is my sink: write it back */
		client_wait_recv(ip, port);
		if (memcmp(sb, rdma_buf(&cli), cli.size) == 0)
			ok++;
		else
			printf("data mismatch in iteration %u\n", i);
		if (verbose)
			printf("ping data: %s\n", (const char *)rdma_buf(&cli));
	}
	return ok;
}

/* --status FILE: what the instance holds and its counters, rewritten every STATUS_NS. */
#define STATUS_NS (250 * 1000 * 1000ull)

static void write_status(const char *path, struct uiw_stack *st)
{
	char tmp[4096];
	FILE *f;

	if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp) || (f = fopen(tmp, "w")) == NULL)
		return;
	fprintf(f, "pid %d\n", (int)getpid());
	uiw_stack_print_gauges(f, st);
	uiw_stack_print_counters(f, st);
	if (fclose(f) != 0 || rename(tmp, path) != 0)
		unlink(tmp);
}

static struct rdma_event_channel *channel(void)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();

	if (ch == NULL || fcntl(ch->fd, F_SETFL, fcntl(ch->fd, F_GETFL) | O_NONBLOCK) != 0)
		die("event channel");
	return ch;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: uiwarp-rping [--config FILE] [--set K=V]... (--pair | -s [-P] | -c -a ADDR)\n"
		"       [-p PORT] [-C COUNT] [-S SIZE] [-v] [--status FILE]\n"
		"  --pair  client and server as two instances here; -s serves one client, -s -P any\n"
		"  number, at once, until killed (a failed connection ends alone); -c connects to\n"
		"  ADDR. Default port 7174, 10 iterations, 64 octets; as with rping, server and client\n"
		"  take the same -S. --status FILE: the instance's holdings and counters, rewritten\n"
		"  every 250 ms.\n");
}

int main(int argc, char **argv)
{
	static struct uiw_stack a, b;
	struct uiw_config cfg;
	bool pair = false, server = false, client = false, verbose = false;
	unsigned count = 10;
	uint32_t size = 64, ip = 0;
	uint16_t port = 7174;
	struct in_addr addr;
	int opt;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (app_load_config(&cfg, &argc, argv) != 0)
		return 2;
	static const struct option longopts[] = { { "pair", no_argument, NULL, 1000 },
						  { "status", required_argument, NULL, 1001 },
						  { NULL, 0, NULL, 0 } };
	const char *status = NULL;

	while ((opt = getopt_long(argc, argv, "sPca:p:C:S:vh", longopts, NULL)) != -1) {
		switch (opt) {
		case 1000: pair = true; break;
		case 1001: status = optarg; break;
		case 'P': persistent = true; break;
		case 's': server = true; break;
		case 'c': client = true; break;
		case 'a':
			if (inet_pton(AF_INET, optarg, &addr) != 1)
				return 2;
			ip = ntohl(addr.s_addr);
			break;
		case 'p': port = (uint16_t)atoi(optarg); break;
		case 'C': count = (unsigned)atoi(optarg); break;
		case 'S': size = (uint32_t)atoi(optarg); break;
		case 'v': verbose = true; break;
		default: usage(); return 2;
		}
	}
	if (pair + server + client != 1 || size < 16 || (client && ip == 0) || (persistent && !server) ||
	    (!pair && (cfg.port[0] == '\0' || cfg.ip == 0))) {
		usage();
		return 2;
	}
	if (uiw_eal_init(&cfg, argv[0]) != 0)
		return 1;
	if (pair ? app_stack_pair(&a, &b, &cfg, UIW_STACK_MPA, "rping", true) != 0
		 : app_stack_open(&a, &cfg, UIW_STACK_MPA, 10000, true) != 0)
		return 1;
	if (uiw_verbs_add_device(&a) != 0 || (pair && uiw_verbs_add_device(&b) != 0))
		return 1;
	srv_size = cli.size = size;
	for (unsigned i = 0; i < MAX_SERVED; i++)
		srvs[i] = (struct side){ .name = "server", .size = size };
	if (pair || server) {
		struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port),
					  .sin_addr.s_addr = htonl(pair ? UIW_STACK_PAIR_IP_B : cfg.ip) };

		srv_ch = channel();
		if (rdma_create_id(srv_ch, &listen_id, NULL, RDMA_PS_TCP) != 0 ||
		    rdma_bind_addr(listen_id, (struct sockaddr *)&sa) != 0 ||
		    rdma_listen(listen_id, persistent ? 0 : 1) != 0)
			die("listen");
	}
	if (server) {
		uint64_t status_at = 0;

		while (persistent || served == 0) {
			pump(0, port);
			uiw_verbs_progress();
			if (status != NULL && uiw_now_ns() - status_at >= STATUS_NS) {
				status_at = uiw_now_ns();
				write_status(status, &a);
			}
		}
		printf("server: %u reads and writes served\n", last_recvs);
		return 0;
	}
	struct sockaddr_in da = { .sin_family = AF_INET, .sin_port = htons(port),
				  .sin_addr.s_addr = htonl(pair ? UIW_STACK_PAIR_IP_B : ip) };
	struct rdma_cm_id *id;

	cli.ch = channel();
	if (rdma_create_id(cli.ch, &id, NULL, RDMA_PS_TCP) != 0 ||
	    rdma_resolve_addr(id, NULL, (struct sockaddr *)&da, 2000) != 0)
		die("rdma_resolve_addr");
	unsigned ok = run_client(pair ? UIW_STACK_PAIR_IP_B : ip, port, count, verbose);

	rdma_disconnect(cli.id);
	for (uint64_t end = uiw_now_ns() + UIW_NS_PER_S; !cli.down && uiw_now_ns() < end;)
		pump(0, port);
	printf("client: %u of %u iterations verified\n", ok, count);
	return ok == count ? 0 : 1;
}
