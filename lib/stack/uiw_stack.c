/* SPDX-License-Identifier: BSD-3-Clause */
#include "uiw_stack.h"

#include <errno.h>
#include <string.h>

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
	rc = open_port(s, o->port_id, err, errlen);
	if (rc != 0)
		return rc;
	if (uiw_fault_attach(&s->port, &s->fault, cfg, err, errlen) != 0) {
		uiw_port_close(&s->port);
		return -EINVAL;
	}
	if (o->link_wait_ms > 0 && uiw_port_wait_link(&s->port, o->link_wait_ms) != 0)
		UIW_WARN("port %s: link still down after %u ms; going on", s->port.name, o->link_wait_ms);
	uiw_net_init(&s->net, &s->port, cfg);
	if (o->top >= UIW_STACK_TCP && uiw_tcp_create(&s->tcp, &s->net, cfg) != 0) {
		snprintf(err, errlen, "cannot create the TCP engine (tcp_max_conns %u)", cfg->tcp_max_conns);
		uiw_stack_close(s);
		return -ENOMEM;
	}
	if (o->top >= UIW_STACK_MPA && uiw_mpa_create(&s->mpa, s->tcp, s->port.pool) != 0) {
		snprintf(err, errlen, "cannot create the MPA engine");
		uiw_stack_close(s);
		return -ENOMEM;
	}
	/* Lending pays where the PMD takes chained frames and copies or sends them from the
	 * memory itself; elsewhere the payload is copied once, in the CRC's pass. */
	if (s->mpa != NULL)
		uiw_mpa_set_lend(s->mpa, cfg->tx_zero_copy == 2 ||
				 (cfg->tx_zero_copy == 1 && s->port.tx_ext &&
				  (s->port.tx_offloads & RTE_ETH_TX_OFFLOAD_MULTI_SEGS)));
	if (!o->defer_start)
		uiw_stack_start(s);
	return 0;
}

void uiw_stack_start(struct uiw_stack *s)
{
	uiw_net_start(&s->net, uiw_now_ns());
	uiw_port_flush(&s->port);
}

int uiw_stack_open_pair(struct uiw_stack *a, struct uiw_stack *b, const struct uiw_config *cfg,
			enum uiw_stack_top top, const char *name, char *err, size_t errlen)
{
	struct uiw_config ca = *cfg, cb = *cfg;
	struct uiw_stack_opts oa = { .top = top }, ob = { .top = top };
	int rc;

	ca.ip = UIW_STACK_PAIR_IP_A;
	cb.ip = UIW_STACK_PAIR_IP_B;
	ca.prefix_len = cb.prefix_len = 24;
	if (uiw_port_ringpair_create(name, &oa.port_id, &ob.port_id) != 0) {
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

void uiw_stack_close(struct uiw_stack *s)
{
	uiw_mpa_destroy(s->mpa);
	s->mpa = NULL;
	uiw_tcp_destroy(s->tcp);
	s->tcp = NULL;
	uiw_net_fini(&s->net);
	uiw_port_close(&s->port);
}

void uiw_stack_print_gauges(FILE *f, const struct uiw_stack *s)
{
	struct rte_mempool *mp = s->port.pool;

	if (mp != NULL)
		fprintf(f, "mbufs.in_use %u\nmbufs.total %u\n", rte_mempool_in_use_count(mp), mp->size);
	if (s->tcp != NULL) {
		struct uiw_tcp_gauges g;

		uiw_tcp_gauges(s->tcp, &g);
		fprintf(f, "tcp.conns %u\ntcp.half_open %u\ntcp.rx_mbufs %u\ntcp.sq_mbufs %u\n",
			g.conns, g.half_open, g.rx_mbufs, g.sq_mbufs);
	}
	if (s->mpa != NULL)
		fprintf(f, "mpa.conns %u\n", uiw_mpa_conn_count(s->mpa));
	fprintf(f, "arp.entries %u\n", s->net.arp_used);
}

void uiw_stack_print_counters(FILE *f, struct uiw_stack *s)
{
	uiw_port_read_pmd_counters(&s->port);
	uiw_counters_print(f, "port", uiw_port_counter_desc, s->port.counters, UIW_PORT_C__COUNT, true);
	uiw_counters_print(f, "net", uiw_net_counter_desc, s->net.counters, UIW_NET_C__COUNT, true);
	if (s->tcp != NULL)
		uiw_counters_print(f, "tcp", uiw_tcp_counter_desc, uiw_tcp_counters(s->tcp),
				   UIW_TCP_C__COUNT, true);
	if (s->mpa != NULL)
		uiw_counters_print(f, "mpa", uiw_mpa_counter_desc, uiw_mpa_counters(s->mpa),
				   UIW_MPA_C__COUNT, true);
	if (s->port.fault != NULL)
		uiw_fault_print(f, &s->fault);
}
