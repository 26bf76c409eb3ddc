/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * uiwarp-tcpperf: TCP throughput and request/response latency between two uiwarp
 * instances, or between uiwarp and any TCP peer (Linux, nc, iperf-like scripts).
 * Every stream is hashed with SHA-256 on both sides, so a transfer is checked end to end.
 */
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>
#include <rte_eal.h>

#include "instance.h"
#include "sha256.h"
#include "uiw_log.h"
#include "uiw_time.h"

enum role { ROLE_SINK, ROLE_SOURCE, ROLE_ECHO, ROLE_RR };

struct peer {
	struct perf *p;
	struct uiw_tcp_conn *c;
	unsigned id;
	enum role role;
	uint64_t to_send, sent, received;
	struct sha256 tx_hash, rx_hash;
	uint64_t rng;
	bool connected, closing, closed;
	int err;
	uint64_t t_start, t_end;
	unsigned rr_done;
	uint32_t rr_got;
	uint64_t rr_sent_at;
	uint16_t mss;             /* the send MSS the handshake gave */
};

struct perf {
	struct uiw_stack *ai;
	enum role server_role, client_role;
	uint64_t bytes;
	unsigned rr_count, size, conns, exit_after;
	unsigned npeers, max_peers, closed, failed;
	struct peer *peers;
	uint64_t *rtt_ns;
	size_t nrtt;
	bool verbose;
	bool no_hash;
};

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
	(void)sig;
	stop_requested = 1;
}

static struct peer *new_peer(struct perf *p, struct uiw_tcp_conn *c, enum role role)
{
	struct peer *pe;

	if (p->npeers == p->max_peers)
		return NULL;
	pe = &p->peers[p->npeers];
	memset(pe, 0, sizeof(*pe));
	pe->p = p;
	pe->c = c;
	pe->id = p->npeers++;
	pe->role = role;
	pe->to_send = role == ROLE_SOURCE ? p->bytes : 0;
	pe->rng = 0x243F6A8885A308D3ull + pe->id;
	sha256_init(&pe->tx_hash);
	sha256_init(&pe->rx_hash);
	pe->t_start = uiw_now_ns();
	return pe;
}

static uint64_t xorshift(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* One mbuf of at most @p len pattern bytes, hashed as sent. */
static struct rte_mbuf *make_data(struct peer *pe, uint32_t len)
{
	struct uiw_port *port = &pe->p->ai->port;
	struct rte_mbuf *m = rte_pktmbuf_alloc(port->pool);
	uint8_t *d;

	if (m == NULL)
		return NULL;
	len = RTE_MIN(len, (uint32_t)rte_pktmbuf_tailroom(m));
	d = (uint8_t *)rte_pktmbuf_append(m, (uint16_t)len);
	if (pe->p->no_hash) {
		/* Throughput runs: the application's cost is one copy, not a generator. */
		static uint8_t pattern[RTE_MBUF_DEFAULT_DATAROOM];

		memcpy(d, pattern, len);
		return m;
	}
	for (uint32_t i = 0; i < len; i += 8) {
		uint64_t r = xorshift(&pe->rng);

		memcpy(d + i, &r, RTE_MIN(8u, len - i));
	}
	if (!pe->p->no_hash)
		sha256_update(&pe->tx_hash, d, len);
	return m;
}

static void pump(struct peer *pe)
{
	uint32_t mss;

	if (!pe->connected || pe->closed || pe->closing)
		return;
	mss = uiw_tcp_mss(pe->c);
	while (pe->sent < pe->to_send) {
		uint32_t len = (uint32_t)RTE_MIN((uint64_t)mss, pe->to_send - pe->sent);
		struct rte_mbuf *m;

		if (uiw_tcp_send_space(pe->c) < len)
			return;
		m = make_data(pe, len);
		if (m == NULL)
			return;
		len = m->pkt_len;
		if (uiw_tcp_send(pe->c, m, 0) != 0)
			return;
		pe->sent += len;
	}
	if (pe->role == ROLE_SOURCE) {
		pe->closing = true;
		uiw_tcp_close(pe->c);
	}
}

static void rr_request(struct peer *pe)
{
	struct rte_mbuf *m = make_data(pe, pe->p->size);

	pe->rr_got = 0;
	pe->rr_sent_at = uiw_now_ns();
	if (m == NULL || uiw_tcp_send(pe->c, m, 0) != 0) {
		pe->err = -ENOBUFS;
		uiw_tcp_abort(pe->c);
		pe->closed = true;
		pe->p->closed++;
		pe->p->failed++;
		return;
	}
	pe->sent += pe->p->size;
}

static void on_connected(void *user, struct uiw_tcp_conn *c)
{
	struct peer *pe = user;

	pe->connected = true;
	pe->mss = uiw_tcp_mss(c);
	pe->t_start = uiw_now_ns();
	if (pe->role == ROLE_RR)
		rr_request(pe);
}

static void rr_reply(struct peer *pe, uint32_t len)
{
	struct perf *p = pe->p;

	pe->rr_got += len;
	if (pe->rr_got < p->size)
		return;
	if (p->nrtt < (size_t)p->rr_count * p->conns)
		p->rtt_ns[p->nrtt++] = uiw_now_ns() - pe->rr_sent_at;
	if (++pe->rr_done < p->rr_count) {
		rr_request(pe);
	} else if (!pe->closing) {
		pe->closing = true;
		uiw_tcp_close(pe->c);
	}
}

static void on_recv(void *user, struct uiw_tcp_conn *c, struct rte_mbuf *m)
{
	struct peer *pe = user;
	uint32_t len = m->pkt_len;

	for (struct rte_mbuf *s = m; s != NULL && !pe->p->no_hash; s = s->next)
		sha256_update(&pe->rx_hash, rte_pktmbuf_mtod(s, void *), s->data_len);
	pe->received += len;
	if (pe->role == ROLE_ECHO) {
		uiw_tcp_send(c, m, 0); /* the payload goes straight back */
		pe->sent += len;
		return;
	}
	rte_pktmbuf_free(m);
	if (pe->role == ROLE_RR)
		rr_reply(pe, len);
}

static void on_peer_closed(void *user, struct uiw_tcp_conn *c)
{
	struct peer *pe = user;

	if (!pe->closing && pe->role != ROLE_SOURCE) {
		pe->closing = true;
		uiw_tcp_close(c);
	}
}

static void report(const struct peer *pe)
{
	struct sha256 tx = pe->tx_hash, rx = pe->rx_hash;
	double secs = (double)(pe->t_end - pe->t_start) / 1e9;
	char h[65];

	if (pe->err != 0) {
		printf("conn %u: failed: %s after %" PRIu64 " bytes out, %" PRIu64 " in\n", pe->id,
		       strerror(-pe->err), pe->sent, pe->received);
		return;
	}
	if (pe->role == ROLE_SOURCE || pe->role == ROLE_RR) {
		sha256_hex(&tx, h);
		printf("conn %u: sent %" PRIu64 " bytes sha256 %s\n", pe->id, pe->sent, h);
	}
	if (pe->role == ROLE_SINK || pe->role == ROLE_ECHO || pe->role == ROLE_RR) {
		sha256_hex(&rx, h);
		printf("conn %u: received %" PRIu64 " bytes sha256 %s\n", pe->id, pe->received, h);
	}
	printf("conn %u: mss %u\n", pe->id, pe->mss);
	if (pe->p->verbose || pe->p->conns == 1)
		printf("conn %u: %.3f s, %.3f Gb/s\n", pe->id, secs,
		       secs > 0 ? (double)(pe->sent + pe->received) * 8 / secs / 1e9 : 0.0);
}

static void on_closed(void *user, struct uiw_tcp_conn *c, int err)
{
	struct peer *pe = user;

	(void)c;
	pe->closed = true;
	pe->err = err;
	pe->t_end = uiw_now_ns();
	pe->p->closed++;
	if (err != 0)
		pe->p->failed++;
	report(pe);
}

static const struct uiw_tcp_ops peer_ops = {
	.connected = on_connected,
	.recv = on_recv,
	.peer_closed = on_peer_closed,
	.closed = on_closed,
};

static int on_accept(void *ctx, struct uiw_tcp_conn *c)
{
	struct perf *p = ctx;
	struct peer *pe = new_peer(p, c, p->server_role);

	if (pe == NULL)
		return -1;
	pe->connected = true;
	pe->mss = uiw_tcp_mss(c);
	uiw_tcp_set_user(c, &peer_ops, pe);
	return 0;
}

static const struct uiw_tcp_ops listen_ops = {
	.accept = on_accept,
};

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void print_rr(struct perf *p)
{
	double sum = 0;

	if (p->nrtt == 0)
		return;
	qsort(p->rtt_ns, p->nrtt, sizeof(p->rtt_ns[0]), cmp_u64);
	for (size_t i = 0; i < p->nrtt; i++)
		sum += (double)p->rtt_ns[i];
	printf("rr: %zu round trips of %u bytes: min %.2f us, p50 %.2f us, p99 %.2f us, avg %.2f us\n",
	       p->nrtt, p->size, (double)p->rtt_ns[0] / 1e3, (double)p->rtt_ns[p->nrtt / 2] / 1e3,
	       (double)p->rtt_ns[p->nrtt * 99 / 100] / 1e3, sum / (double)p->nrtt / 1e3);
}

struct opts {
	struct app_mode m;
	double duration;
	unsigned link_wait_ms;
	unsigned linger_ms;
};

static void usage(void)
{
	fprintf(stderr,
		"usage: uiwarp-tcpperf [--config FILE] [--set K=V]... MODE WORK [options]\n"
		"  MODE: --pair (two instances over a ring pair here, or over vhost-user with\n"
		"        pair_link=vhost) | --listen PORT |\n"
		"        --connect IP:PORT\n"
		"  WORK: --send BYTES | --recv | --rr N [--size BYTES] | --echo (server)\n"
		"  --conns K         client connections at once (default 1)\n"
		"  --exit-after N    server: stop after N connections closed\n"
		"  --duration SEC    stop after SEC seconds (default 600)\n"
		"  --link-wait MS    wait for the port's link (default 10000)\n"
		"  --linger MS       keep polling after the work until nothing more is held than\n"
		"                    at the start (TIME-WAIT over), at most MS, then report what\n"
		"                    is still held: connections and mbufs\n"
		"  --no-hash         skip SHA-256 (for throughput figures; hashes print as empty)\n"
		"  --verbose\n");
}

static int parse_args(int argc, char **argv, struct perf *p, struct opts *o)
{
	static const struct option longopts[] = {
		APP_MODE_OPTIONS,
		{ "send", required_argument, NULL, 's' },
		{ "recv", no_argument, NULL, 'r' }, { "rr", required_argument, NULL, 'R' },
		{ "echo", no_argument, NULL, 'e' }, { "size", required_argument, NULL, 'z' },
		{ "conns", required_argument, NULL, 'n' },
		{ "exit-after", required_argument, NULL, 'x' },
		{ "duration", required_argument, NULL, 'd' },
		{ "link-wait", required_argument, NULL, 'w' },
		{ "linger", required_argument, NULL, 'L' },
		{ "verbose", no_argument, NULL, 'v' }, { "help", no_argument, NULL, 'h' },
		{ "no-hash", no_argument, NULL, 'H' },
		{ NULL, 0, NULL, 0 },
	};
	int opt;

	while ((opt = app_next_option(argc, argv, longopts, &o->m)) != -1) {
		switch (opt) {
		case 's': p->bytes = strtoull(optarg, NULL, 0); p->client_role = ROLE_SOURCE;
			p->server_role = ROLE_SOURCE; break;
		case 'r': p->client_role = ROLE_SINK; p->server_role = ROLE_SINK; break;
		case 'R': p->rr_count = (unsigned)atoi(optarg); p->client_role = ROLE_RR;
			p->server_role = ROLE_ECHO; break;
		case 'e': p->server_role = ROLE_ECHO; break;
		case 'z': p->size = (unsigned)atoi(optarg); break;
		case 'n': p->conns = (unsigned)atoi(optarg); break;
		case 'x': p->exit_after = (unsigned)atoi(optarg); break;
		case 'd': o->duration = atof(optarg); break;
		case 'w': o->link_wait_ms = (unsigned)atoi(optarg); break;
		case 'L': o->linger_ms = (unsigned)atoi(optarg); break;
		case 'v': p->verbose = true; break;
		case 'H': p->no_hash = true; break;
		default: usage(); return -1;
		}
	}
	if (!app_mode_valid(&o->m) || p->size == 0 || p->conns == 0) {
		usage();
		return -1;
	}
	return 0;
}

static int perf_init(struct perf *p, struct uiw_stack *ai, unsigned max_peers)
{
	p->ai = ai;
	p->max_peers = max_peers;
	p->peers = calloc(max_peers, sizeof(*p->peers));
	p->rtt_ns = calloc((size_t)p->rr_count * p->conns + 1, sizeof(*p->rtt_ns));
	return p->peers != NULL && p->rtt_ns != NULL ? 0 : -1;
}

static int open_clients(struct perf *p, uint32_t ip, uint16_t port)
{
	for (unsigned i = 0; i < p->conns; i++) {
		struct peer *pe = new_peer(p, NULL, p->client_role);
		int rc = uiw_tcp_connect(p->ai->tcp, ip, port, &peer_ops, pe, uiw_now_ns(), &pe->c);

		if (rc != 0) {
			fprintf(stderr, "connect: %s\n", strerror(-rc));
			return -1;
		}
	}
	return 0;
}

static void pump_all(struct perf *p)
{
	for (unsigned i = 0; i < p->npeers; i++)
		pump(&p->peers[i]);
}

/* Pair mode: each of A's streams must arrive whole at B, in whatever order B accepted
 * them. */
static bool pair_hashes_match(struct perf *client, struct perf *server)
{
	bool used[4096] = { false };

	if (client->npeers != server->npeers || server->npeers > 4096)
		return false;
	for (unsigned i = 0; i < client->npeers; i++) {
		struct sha256 a = client->peers[i].tx_hash;
		char ha[65];
		bool found = false;

		sha256_hex(&a, ha);
		for (unsigned j = 0; j < server->npeers && !found; j++) {
			struct sha256 b = server->peers[j].rx_hash;
			char hb[65];

			sha256_hex(&b, hb);
			if (!used[j] && strcmp(ha, hb) == 0 &&
			    client->peers[i].sent == server->peers[j].received)
				used[j] = found = true;
		}
		if (!found)
			return false;
	}
	return true;
}

static enum role complement(enum role r)
{
	return r == ROLE_SOURCE ? ROLE_SINK : r == ROLE_SINK ? ROLE_SOURCE : ROLE_ECHO;
}

int main(int argc, char **argv)
{
	static struct uiw_stack a, b;
	struct perf client = { .size = 64, .conns = 1, .client_role = ROLE_SINK, .server_role = ROLE_SINK };
	struct perf server;
	struct opts o = { .duration = 600, .link_wait_ms = 10000 };
	struct uiw_config cfg;
	uint64_t start, end, done_at = 0;
	unsigned mbufs_at_start;
	bool ok, leaked = false;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (app_load_config(&cfg, &argc, argv) != 0 || parse_args(argc, argv, &client, &o) != 0)
		return 2;
	if (o.m.pair)
		client.server_role = complement(client.client_role);
	server = client;
	if (!o.m.pair && (cfg.port[0] == '\0' || cfg.ip == 0)) {
		fprintf(stderr, "configuration: keys 'port' and 'ip' are needed\n");
		return 2;
	}
	if (uiw_eal_init(&cfg, argv[0]) != 0)
		return 1;
	if (o.m.pair ? app_stack_pair(&a, &b, &cfg, UIW_STACK_TCP, "perf", false) != 0
		     : app_stack_open(&a, &cfg, UIW_STACK_TCP, o.link_wait_ms, false) != 0)
		return 1;
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	if (perf_init(&client, &a, client.conns) != 0 ||
	    perf_init(&server, o.m.pair ? &b : &a, client.conns + client.exit_after + 1024) != 0)
		return 1;
	if ((o.m.pair || o.m.listen_port) &&
	    uiw_tcp_listen(server.ai->tcp, o.m.pair ? 5001 : o.m.listen_port, 4096, &listen_ops, &server) != 0) {
		fprintf(stderr, "listen failed\n");
		return 1;
	}
	mbufs_at_start = rte_mempool_in_use_count(a.port.pool) +
			 (o.m.pair ? rte_mempool_in_use_count(b.port.pool) : 0);
	start = uiw_now_ns();
	end = start + (uint64_t)(o.duration * 1e9);
	if ((o.m.pair || o.m.connect_ip) &&
	    open_clients(&client, o.m.pair ? UIW_STACK_PAIR_IP_B : o.m.connect_ip, o.m.pair ? 5001 : o.m.connect_port) != 0)
		return 1;
	while (!stop_requested) {
		uint64_t now = uiw_now_ns();

		uiw_stack_poll(&a, now);
		if (o.m.pair)
			uiw_stack_poll(&b, now);
		pump_all(&client);
		pump_all(&server);
		if (now > end)
			break;
		if (client.npeers > 0 && client.closed == client.npeers) {
			if (done_at == 0)
				done_at = now;
			if (!o.m.pair || server.closed == server.npeers || now - done_at > UIW_NS_PER_S)
				break;
		}
		if (o.m.listen_port && server.exit_after && server.closed >= server.exit_after)
			break;
	}
	if (o.linger_ms > 0) {
		uint64_t from = uiw_now_ns(), until = from + (uint64_t)o.linger_ms * UIW_NS_PER_MS;
		uint64_t next_look = 0;
		unsigned held_conns, held_mbufs;

		/* Until the engines hold nothing more than at the start (TIME-WAIT over, every
		 * close complete), or the time is up: what is held then is a leak. */
		for (;;) {
			uint64_t now = uiw_now_ns();

			uiw_stack_poll(&a, now);
			if (o.m.pair)
				uiw_stack_poll(&b, now);
			if (now < next_look)
				continue;
			next_look = now + UIW_NS_PER_MS;
			held_conns = uiw_tcp_conn_count(a.tcp) + (o.m.pair ? uiw_tcp_conn_count(b.tcp) : 0);
			held_mbufs = rte_mempool_in_use_count(a.port.pool) +
				     (o.m.pair ? rte_mempool_in_use_count(b.port.pool) : 0);
			if ((held_conns == 0 && held_mbufs <= mbufs_at_start) || stop_requested ||
			    now >= until)
				break;
		}
		printf("held after linger: %u connections, %u mbufs (%u at start), after %.1f s\n",
		       held_conns, held_mbufs, mbufs_at_start, (double)(uiw_now_ns() - from) / 1e9);
		leaked = held_conns != 0 || held_mbufs > mbufs_at_start;
	}
	print_rr(&client);
	for (unsigned i = 0; i < client.npeers; i++)
		if (!client.peers[i].closed && client.peers[i].c != NULL)
			uiw_tcp_conn_dump(client.peers[i].c, stdout);
	for (unsigned i = 0; i < server.npeers; i++)
		if (!server.peers[i].closed)
			uiw_tcp_conn_dump(server.peers[i].c, stdout);
	ok = client.failed == 0 && server.failed == 0 && client.closed == client.npeers && !leaked;
	if (o.m.pair) {
		bool match = pair_hashes_match(&client, &server);

		printf("%s: %u connections, streams %s\n", match && ok ? "PASS" : "FAIL", client.npeers,
		       match ? "identical at both ends" : "DIFFER");
		ok = ok && match;
		app_print_counters("A (client)", &a);
		app_print_counters("B (server)", &b);
		uiw_stack_close(&b);
	} else {
		app_print_counters("uiwarp-tcpperf", &a);
	}
	uiw_stack_close(&a);
	rte_eal_cleanup();
	free(client.peers);
	free(client.rtt_ns);
	free(server.peers);
	free(server.rtt_ns);
	return ok ? 0 : 1;
}
