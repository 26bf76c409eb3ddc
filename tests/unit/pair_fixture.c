/* SPDX-License-Identifier: BSD-3-Clause */
#include "pair_fixture.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_ethdev.h>

#include "check_common.h"
#include "pcapw.h"
#include "uiw_time.h"

struct pair_side pair_a, pair_b;
struct rte_mempool *pair_pool;
static struct pair_q q_ab, q_ba;
static FILE *cap;
static struct app_pcap cap_a, cap_b;

/* The side of a port (port->user may belong to a capture wrapper). */
static struct pair_side *side_of(struct uiw_port *port)
{
	return port == &pair_a.st.port ? &pair_a : &pair_b;
}

static uint16_t q_tx(struct uiw_port *port, struct rte_mbuf **pkts, uint16_t n)
{
	struct pair_side *s = side_of(port);
	uint16_t k = 0;

	if (s->cut) {
		rte_pktmbuf_free_bulk(pkts, n);
		return n;
	}
	while (k < n && s->txq->tail - s->txq->head < PAIR_Q_LEN) {
		struct rte_mbuf *cut[256];
		uint16_t nc;

		if (s->tso == NULL) {
			s->txq->m[s->txq->tail % PAIR_Q_LEN] = pkts[k++];
			s->txq->tail++;
			continue;
		}
		if (PAIR_Q_LEN - (s->txq->tail - s->txq->head) < RTE_DIM(cut))
			break;
		nc = s->tso(pkts[k++], cut, RTE_DIM(cut));
		for (uint16_t i = 0; i < nc; i++)
			s->txq->m[s->txq->tail++ % PAIR_Q_LEN] = cut[i];
	}
	return k;
}

void pair_enable_tso(struct pair_side *s, pair_tso_fn cut)
{
	s->tso = cut;
	s->st.port.tx_offloads |= RTE_ETH_TX_OFFLOAD_TCP_TSO | RTE_ETH_TX_OFFLOAD_TCP_CKSUM |
				  RTE_ETH_TX_OFFLOAD_IPV4_CKSUM | RTE_ETH_TX_OFFLOAD_MULTI_SEGS;
	s->st.port.tso_max = UINT16_MAX - 128;
	s->st.port.tso_segs = UIW_PORT_TSO_SEGS;
}

static uint16_t q_rx(struct uiw_port *port, struct rte_mbuf **pkts, uint16_t n)
{
	struct pair_side *s = side_of(port);
	uint16_t k = 0;

	while (k < n && s->rxq->head != s->rxq->tail) {
		pkts[k++] = s->rxq->m[s->rxq->head % PAIR_Q_LEN];
		s->rxq->head++;
	}
	return k;
}

static void side_up(struct pair_side *s, const struct uiw_config *base, uint32_t ip,
		    uint8_t last, struct pair_q *rxq, struct pair_q *txq)
{
	const struct uiw_stack_opts o = { .top = UIW_STACK_MPA, .port_id = UIW_STACK_PORT_READY };
	struct rte_ether_addr mac = { { 0x02, 0, 0, 0, 0, last } };
	struct uiw_config cfg = *base;
	char err[128];

	memset(s, 0, sizeof(*s));
	cfg.ip = ip;
	cfg.prefix_len = 24;
	s->rxq = rxq;
	s->txq = txq;
	uiw_port_init_test(&s->st.port, pair_pool != NULL ? pair_pool : test_pool(), &mac, 1500,
			   q_rx, q_tx, s);
	ck_assert_msg(uiw_stack_open(&s->st, &cfg, &o, err, sizeof(err)) == 0, "%s", err);
}

void pair_setup_cfg(const struct uiw_config *cfg)
{
	memset(&q_ab, 0, sizeof(q_ab));
	memset(&q_ba, 0, sizeof(q_ba));
	side_up(&pair_a, cfg, PAIR_IP_A, 1, &q_ba, &q_ab);
	side_up(&pair_b, cfg, PAIR_IP_B, 2, &q_ab, &q_ba);
}

void pair_setup(void)
{
	struct uiw_config cfg;

	uiw_config_defaults(&cfg);
	cfg.tcp_max_conns = 64;
	cfg.tcp_time_wait_ms = 0;   /* also covers the last ACK without TIME-WAIT */
	cfg.tcp_delack_us = 0;
	pair_setup_cfg(&cfg);
}

static void q_drain(struct pair_q *q)
{
	while (q->head != q->tail)
		rte_pktmbuf_free(q->m[q->head++ % PAIR_Q_LEN]);
}

static void side_down(struct pair_side *s)
{
	uiw_stack_close(&s->st);
}

void pair_capture(const char *name)
{
	const char *dir = getenv("UIW_PAIR_PCAP_DIR");
	char path[512];

	if (dir == NULL || *dir == '\0' || cap != NULL)
		return;
	snprintf(path, sizeof(path), "%s/%s.pcap", dir, name);
	cap = app_pcap_open(path);
	ck_assert_msg(cap != NULL, "cannot write %s", path);
	/* After the fault wrapper (attached at setup): the capture holds what the stack sent. */
	app_pcap_attach(&cap_a, &pair_a.st.port, cap);
	app_pcap_attach(&cap_b, &pair_b.st.port, cap);
}

void pair_teardown(void)
{
	side_down(&pair_a);
	side_down(&pair_b);
	q_drain(&q_ab);
	q_drain(&q_ba);
	if (cap != NULL)
		fclose(cap);
	cap = NULL;
}

void pair_poll(void)
{
	uint64_t now = uiw_now_ns();

	uiw_stack_poll(&pair_a.st, now);
	uiw_stack_poll(&pair_b.st, now);
}

bool pair_run_until(bool (*done)(void *arg), void *arg, unsigned ms)
{
	uint64_t end = uiw_now_ns() + (uint64_t)ms * UIW_NS_PER_MS;

	while (!done(arg)) {
		if (uiw_now_ns() > end)
			return done(arg);
		pair_poll();
	}
	return true;
}

void pair_run_for(unsigned ms)
{
	uint64_t end = uiw_now_ns() + (uint64_t)ms * UIW_NS_PER_MS;

	while (uiw_now_ns() < end)
		pair_poll();
}
