/* SPDX-License-Identifier: BSD-3-Clause */
#include "uiw_stack.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_ethdev.h>

#include "uiw_log.h"
#include "uiw_time.h"

static int open_port(struct uiw_stack *s, uint16_t port_id, char *err, size_t errlen)
{
	int rc = 0;

	if (port_id == UIW_STACK_PORT_CONFIG)
		rc = uiw_port_open(&s->port, &s->cfg);
	else if (port_id != UIW_STACK_PORT_READY)
		rc = uiw_port_open_ethdev(&s->port, port_id, &s->cfg);
	if (rc != 0)
		snprintf(err, errlen, "cannot bring up port '%s' (see the messages above)",
			 port_id == UIW_STACK_PORT_CONFIG ? s->cfg.port : "ethdev");
	return rc != 0 ? -ENODEV : 0;
}

/* The layers of engine @p e over its port (set up), as @p o asks. */
static int open_layers(struct uiw_stack *e, const struct uiw_stack_opts *o, char *err, size_t errlen)
{
	const struct uiw_config *cfg = &e->cfg;

	if (uiw_fault_attach(&e->port, &e->fault, cfg, err, errlen) != 0)
		return -EINVAL;
	if (cfg->pcap[0] != '\0' && e->engine == 0) {
		FILE *f = uiw_capture_open(cfg->pcap);

		if (f == NULL) {
			snprintf(err, errlen, "key 'pcap': cannot write %s: %s", cfg->pcap, strerror(errno));
			return -EINVAL;
		}
		uiw_capture_attach(&e->port, &e->capture, f, true);
		UIW_INFO("port %s: capturing what the stack sends and receives to %s", e->port.name,
			 cfg->pcap);
	}
	uiw_net_init(&e->net, &e->port, cfg);
	if (o->top >= UIW_STACK_TCP && uiw_tcp_create(&e->tcp, &e->net, cfg) != 0) {
		snprintf(err, errlen, "cannot create the TCP engine (tcp_max_conns %u)", cfg->tcp_max_conns);
		return -ENOMEM;
	}
	if (e->tcp != NULL)
		uiw_tcp_set_engine(e->tcp, e->engine, cfg->engines);
	if (o->top >= UIW_STACK_MPA && uiw_mpa_create(&e->mpa, e->tcp, e->port.pool) != 0) {
		snprintf(err, errlen, "cannot create the MPA engine");
		return -ENOMEM;
	}
	if (e->mpa != NULL) {
		uiw_mpa_set_owner(e->mpa, e);
		uiw_mpa_set_slabs(e->mpa, e->port.slabs);
	}
	/* Lending pays where the PMD takes chained frames and copies or sends them from the
	 * memory itself; elsewhere the payload is copied once, in the CRC's pass. */
	if (e->mpa != NULL)
		uiw_mpa_set_lend(e->mpa, cfg->tx_zero_copy == 2 ||
				 (cfg->tx_zero_copy == 1 && (e->port.tx_ext || e->port.tx_dma) &&
				  (e->port.tx_offloads & RTE_ETH_TX_OFFLOAD_MULTI_SEGS)),
				 e->port.tx_dma);
	return 0;
}

/* Engines 1..N-1 of @p s, each on its own queue pair of the port engine 0 opened. */
static int open_engines(struct uiw_stack *s, const struct uiw_stack_opts *o, char *err, size_t errlen)
{
	for (unsigned i = 1; i < s->cfg.engines; i++) {
		struct uiw_stack *e = calloc(1, sizeof(*e));
		int rc;

		if (e == NULL) {
			snprintf(err, errlen, "cannot allocate engine %u", i);
			return -ENOMEM;
		}
		e->cfg = s->cfg;
		e->engine = i;
		e->nengines = 1;
		if (uiw_port_open_queue(&e->port, &s->port, (uint16_t)i) != 0) {
			free(e);
			snprintf(err, errlen, "key 'engines': the port has no queue pair %u", i);
			return -ENODEV;
		}
		s->more[i - 1] = e;
		s->nengines = i + 1;
		rc = open_layers(e, o, err, errlen);
		if (rc != 0)
			return rc;
		if (s->port.capture != NULL)
			uiw_capture_attach(&e->port, &e->capture, s->capture.f, false);
	}
	if (s->nengines > 1) {
		struct uiw_net *nets[UIW_MAX_ENGINES];

		for (unsigned i = 0; i < s->nengines; i++)
			nets[i] = &uiw_stack_engine(s, i)->net;
		if (uiw_net_set_engines(nets, s->nengines) != 0) {
			snprintf(err, errlen, "key 'engines': cannot make the engines' hand-off rings");
			return -ENOMEM;
		}
	}
	return 0;
}

int uiw_stack_open(struct uiw_stack *s, const struct uiw_config *cfg,
		   const struct uiw_stack_opts *o, char *err, size_t errlen)
{
	struct uiw_port port;
	int rc;

	/* The caller's port survives the clearing; any other is made below. */
	if (o->port_id == UIW_STACK_PORT_READY)
		port = s->port;
	memset(s, 0, sizeof(*s));
	if (o->port_id == UIW_STACK_PORT_READY)
		s->port = port;
	s->cfg = *cfg;
	s->nengines = 1;
	if (cfg->engines > 1 && !o->engines) {
		snprintf(err, errlen, "key 'engines' is %u, but this program runs one engine "
			 "(engines are for the verbs programs and the drop-in libraries)", cfg->engines);
		return -EINVAL;
	}
	if (cfg->engines > 1 && o->port_id == UIW_STACK_PORT_READY) {
		snprintf(err, errlen, "key 'engines': an in-memory port has one queue pair");
		return -EINVAL;
	}
	rc = open_port(s, o->port_id, err, errlen);
	if (rc != 0)
		return rc;
	if (o->link_wait_ms > 0 && uiw_port_wait_link(&s->port, o->link_wait_ms) != 0)
		UIW_WARN("port %s: link still down after %u ms; going on", s->port.name, o->link_wait_ms);
	rc = open_layers(s, o, err, errlen);
	if (rc == 0)
		rc = open_engines(s, o, err, errlen);
	if (rc != 0) {
		uiw_stack_close(s);
		return rc;
	}
	if (!o->defer_start)
		uiw_stack_start(s);
	return 0;
}

void uiw_stack_start(struct uiw_stack *s)
{
	for (unsigned i = 0; i < s->nengines; i++) {
		struct uiw_stack *e = uiw_stack_engine(s, i);

		uiw_net_start(&e->net, uiw_now_ns());
		uiw_port_flush(&e->port);
	}
}

unsigned uiw_stack_conn_count(const struct uiw_stack *s)
{
	unsigned n = 0;

	for (unsigned i = 0; i < s->nengines; i++) {
		const struct uiw_stack *e = i == 0 ? s : s->more[i - 1];

		n += e->tcp != NULL ? uiw_tcp_conn_count(e->tcp) : 0;
	}
	return n;
}

unsigned uiw_stack_exit_step(struct uiw_stack *s, enum uiw_stack_exit step)
{
	unsigned n = 0;

	for (unsigned i = 0; i < s->nengines; i++) {
		struct uiw_stack *e = i == 0 ? s : s->more[i - 1];

		if (e->tcp == NULL)
			continue;
		if (step == UIW_STACK_EXIT_CLOSE)
			uiw_tcp_close_all(e->tcp);
		else if (step == UIW_STACK_EXIT_OWED)   /* frames the PMD refused for now too: the
							 * ACK of a peer's FIN may be one */
			n += uiw_tcp_owed(e->tcp) + e->port.tx_n;
		else
			n += uiw_tcp_reset_owed(e->tcp);
	}
	return n;
}

void uiw_stack_flush(struct uiw_stack *s)
{
	for (unsigned i = 0; i < s->nengines; i++)
		uiw_port_flush(&uiw_stack_engine(s, i)->port);
}

static unsigned cfg_queues(const struct uiw_config *c)
{
	return c->engines > 0 ? c->engines : 1;
}

/*
 * Key 'pair_link=vhost': A is a vhost-user server and B the virtio-user client of the same
 * socket, both in this process, so that the pair runs the virtio path with its offloads
 * (TSO from the client, large receive on it where A has 'tso=1') in one thread, as
 * callgrind counts it. The vhost library's own thread answers B's set-up messages.
 */
static int open_vhost_pair(struct uiw_stack *a, struct uiw_stack *b, struct uiw_config *ca,
			   struct uiw_config *cb, const struct uiw_stack_opts *o, const char *name,
			   char *err, size_t errlen)
{
	struct uiw_stack_opts oc = *o;
	char path[108];
	int rc;

	oc.port_id = UIW_STACK_PORT_CONFIG;
	snprintf(path, sizeof(path), "/tmp/uiwarp-pair-%d-%s.sock", (int)getpid(), name);
	unlink(path);
	if ((size_t)snprintf(ca->port, sizeof(ca->port), "net_vhost_%s,iface=%s,queues=%u%s", name,
			     path, cfg_queues(ca), ca->tso ? ",tso=1" : "") >= sizeof(ca->port) ||
	    (size_t)snprintf(cb->port, sizeof(cb->port), "net_virtio_user_%s,path=%s,queues=%u",
			     name, path, cfg_queues(cb)) >= sizeof(cb->port)) {
		snprintf(err, errlen, "pair '%s': name too long for a vhost-user pair", name);
		return -EINVAL;
	}
	rc = uiw_stack_open(a, ca, &oc, err, errlen);
	if (rc != 0)
		return rc;
	rc = uiw_stack_open(b, cb, &oc, err, errlen);
	unlink(path);   /* B is connected; the path is not needed again */
	if (rc != 0)
		uiw_stack_close(a);
	return rc;
}

int uiw_stack_open_pair(struct uiw_stack *a, struct uiw_stack *b, const struct uiw_config *cfg,
			enum uiw_stack_top top, const char *name, char *err, size_t errlen)
{
	struct uiw_config ca = *cfg, cb = *cfg;
	struct uiw_stack_opts oa = { .top = top, .engines = true }, ob = oa;
	int rc;

	ca.ip = UIW_STACK_PAIR_IP_A;
	cb.ip = UIW_STACK_PAIR_IP_B;
	ca.prefix_len = cb.prefix_len = 24;
	if (cfg->pair_vhost)
		return open_vhost_pair(a, b, &ca, &cb, &oa, name, err, errlen);
	if (uiw_port_ringpair_create(name, (uint16_t)cfg->engines, &oa.port_id, &ob.port_id) != 0) {
		snprintf(err, errlen, "cannot create the ring pair '%s'", name);
		return -ENODEV;
	}
	rc = uiw_stack_open(a, &ca, &oa, err, errlen);
	if (rc != 0)
		return rc;
	rc = uiw_stack_open(b, &cb, &ob, err, errlen);
	if (rc != 0)
		uiw_stack_close(a);
	return rc;
}

/* Closes one engine's layers and its port handle (engine 0's closes the port). */
static void close_engine(struct uiw_stack *e)
{
	uiw_mpa_destroy(e->mpa);
	e->mpa = NULL;
	uiw_tcp_destroy(e->tcp);
	e->tcp = NULL;
	uiw_net_fini(&e->net);
	uiw_port_close(&e->port);
}

void uiw_stack_close(struct uiw_stack *s)
{
	for (unsigned i = s->nengines; i-- > 1;) {
		close_engine(s->more[i - 1]);
		free(s->more[i - 1]);
		s->more[i - 1] = NULL;
	}
	s->nengines = 1;
	close_engine(s);
}

void uiw_stack_print_gauges(FILE *f, const struct uiw_stack *s)
{
	struct rte_mempool *mp = s->port.pool;
	struct uiw_tcp_gauges sum = { 0 };
	unsigned mpa_conns = 0, arp = 0;

	if (mp != NULL)
		fprintf(f, "mbufs.in_use %u\nmbufs.total %u\n", rte_mempool_in_use_count(mp), mp->size);
	if (s->port.rx_pool != NULL)
		fprintf(f, "rx_mbufs.in_use %u\nrx_mbufs.total %u\n",
			rte_mempool_in_use_count(s->port.rx_pool), s->port.rx_pool->size);
	for (unsigned i = 0; i < s->nengines; i++) {
		const struct uiw_stack *e = i == 0 ? s : s->more[i - 1];

		if (e->tcp != NULL) {
			struct uiw_tcp_gauges g;

			uiw_tcp_gauges(e->tcp, &g);
			sum.conns += g.conns;
			sum.half_open += g.half_open;
			sum.rx_mbufs += g.rx_mbufs;
			sum.sq_mbufs += g.sq_mbufs;
			sum.sq_stalled += g.sq_stalled;
			sum.senders += g.senders;
			if (s->nengines > 1)
				fprintf(f, "engine%u.tcp.conns %u\n", i, g.conns);
		}
		if (e->mpa != NULL)
			mpa_conns += uiw_mpa_conn_count(e->mpa);
		arp += e->net.arp_used;
	}
	if (s->tcp != NULL)
		fprintf(f, "tcp.conns %u\ntcp.half_open %u\ntcp.rx_mbufs %u\ntcp.sq_mbufs %u\n"
			"tcp.sq_stalled %u\ntcp.senders %u\n",
			sum.conns, sum.half_open, sum.rx_mbufs, sum.sq_mbufs, sum.sq_stalled,
			sum.senders);
	if (s->mpa != NULL)
		fprintf(f, "mpa.conns %u\n", mpa_conns);
	fprintf(f, "arp.entries %u\n", arp);
	if (s->tcp != NULL)   /* every engine listens on the same ports: engine 0's list */
		uiw_tcp_print_listeners(s->tcp, f);
}

/* @p into[i] += @p add[i]. */
static void add_counters(uint64_t *into, const uint64_t *add, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		into[i] += add[i];
}

void uiw_stack_print_counters(FILE *f, struct uiw_stack *s)
{
	uint64_t port[UIW_PORT_C__COUNT] = { 0 }, net[UIW_NET_C__COUNT] = { 0 };
	uint64_t tcp[UIW_TCP_C__COUNT] = { 0 }, mpa[UIW_MPA_C__COUNT] = { 0 };

	/* Every engine's counts, summed: the instance's. */
	uiw_port_read_pmd_counters(&s->port);
	for (unsigned i = 0; i < s->nengines; i++) {
		struct uiw_stack *e = uiw_stack_engine(s, i);

		add_counters(port, e->port.counters, UIW_PORT_C__COUNT);
		add_counters(net, e->net.counters, UIW_NET_C__COUNT);
		if (e->tcp != NULL)
			add_counters(tcp, uiw_tcp_counters(e->tcp), UIW_TCP_C__COUNT);
		if (e->mpa != NULL)
			add_counters(mpa, uiw_mpa_counters(e->mpa), UIW_MPA_C__COUNT);
	}
	uiw_counters_print(f, "port", uiw_port_counter_desc, port, UIW_PORT_C__COUNT, true);
	uiw_counters_print(f, "net", uiw_net_counter_desc, net, UIW_NET_C__COUNT, true);
	if (s->tcp != NULL)
		uiw_counters_print(f, "tcp", uiw_tcp_counter_desc, tcp, UIW_TCP_C__COUNT, true);
	if (s->mpa != NULL)
		uiw_counters_print(f, "mpa", uiw_mpa_counter_desc, mpa, UIW_MPA_C__COUNT, true);
	for (unsigned i = 0; i < s->nengines; i++) {
		struct uiw_stack *e = uiw_stack_engine(s, i);

		if (e->port.fault != NULL)
			uiw_fault_print(f, &e->fault);
	}
	/* How the work spread: each engine's share. */
	for (unsigned i = 0; s->nengines > 1 && i < s->nengines; i++) {
		struct uiw_stack *e = uiw_stack_engine(s, i);
		const uint64_t *t = e->tcp != NULL ? uiw_tcp_counters(e->tcp) : NULL;

		fprintf(f, "engine%u.rx_packets %lu\nengine%u.tx_packets %lu\n", i,
			(unsigned long)e->port.counters[UIW_PORT_C_rx_packets], i,
			(unsigned long)e->port.counters[UIW_PORT_C_tx_packets]);
		if (t != NULL)
			fprintf(f, "engine%u.conn_active %lu\nengine%u.conn_passive %lu\n", i,
				(unsigned long)t[UIW_TCP_C_conn_active], i,
				(unsigned long)t[UIW_TCP_C_conn_passive]);
		fprintf(f, "engine%u.hand_out %lu\nengine%u.hand_in %lu\n", i,
			(unsigned long)e->net.counters[UIW_NET_C_hand_out], i,
			(unsigned long)e->net.counters[UIW_NET_C_hand_in]);
	}
}
