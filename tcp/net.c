/* SPDX-License-Identifier: BSD-3-Clause */
/* Ethernet demux, the poll pass, IPv4 output. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "net_internal.h"

#define UIW_NET_DESC_(name, help) { #name, help },
const struct uiw_counter_desc uiw_net_counter_desc[UIW_NET_C__COUNT] = {
	UIW_NET_COUNTERS(UIW_NET_DESC_)
};
#undef UIW_NET_DESC_

#define UIW_NET_MAX_BURST 512

void uiw_net_init(struct uiw_net *net, struct uiw_port *port, const struct uiw_config *cfg)
{
	memset(net, 0, sizeof(*net));
	net->port = port;
	net->ip = cfg->ip;
	net->netmask = cfg->prefix_len == 0 ? 0 : ~0u << (32 - cfg->prefix_len);
	net->gateway = cfg->gateway;
	net->arp_reachable_ns = (uint64_t)cfg->arp_reachable_ms * 1000000ull;
	net->arp_retry_ns = (uint64_t)cfg->arp_retry_ms * 1000000ull;
	net->arp_retries = cfg->arp_retries;
	net->rx_burst = cfg->rx_burst > UIW_NET_MAX_BURST ? UIW_NET_MAX_BURST : cfg->rx_burst;
	net->ip_id = (uint16_t)(cfg->ip * 2654435761u >> 16);
}

void uiw_net_fini(struct uiw_net *net)
{
	if (net->inbox != NULL) {
		struct rte_mbuf *m;

		while (rte_ring_sc_dequeue(net->inbox, (void **)&m) == 0)
			rte_pktmbuf_free(m);
		rte_ring_free(net->inbox);
		net->inbox = NULL;
	}
	for (unsigned i = 0; i < net->nhold; i++)
		rte_pktmbuf_free(net->hold[i].m);
	net->nhold = 0;
	for (unsigned i = 0; i < UIW_ARP_SLOTS; i++)
		net->arp[i].nheld = 0;
}

/* Frames one engine may hold for another: a burst or two of a busy queue. */
#define UIW_NET_INBOX 2048

int uiw_net_set_engines(struct uiw_net **nets, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		char name[RTE_RING_NAMESIZE];

		/* Ring names are unique in a process: the lower half's address is. */
		snprintf(name, sizeof(name), "uiw_h%p", (void *)nets[i]);
		nets[i]->inbox = rte_ring_create(name, UIW_NET_INBOX, SOCKET_ID_ANY, RING_F_SC_DEQ);
		if (nets[i]->inbox == NULL)
			return -ENOMEM;
		nets[i]->engine = i;
		nets[i]->nengines = n;
		for (unsigned k = 0; k < n; k++)
			nets[i]->engines[k] = nets[k];
	}
	return 0;
}

void uiw_net_set_wake(struct uiw_net *net, void (*wake)(void *arg), void *arg)
{
	net->wake = wake;
	net->wake_arg = arg;
}

static bool hand_to(struct uiw_net *net, struct uiw_net *to, struct rte_mbuf *m)
{
	if (rte_ring_mp_enqueue(to->inbox, m) != 0) {
		uiw_net_drop(net, m, UIW_NET_C_hand_drop_full);
		return false;
	}
	if (to->wake != NULL)
		to->wake(to->wake_arg);
	return true;
}

bool uiw_net_hand(struct uiw_net *net, unsigned owner, struct rte_mbuf *m)
{
	if (!hand_to(net, net->engines[owner], m))
		return false;
	net->counters[UIW_NET_C_hand_out]++;
	return true;
}

void uiw_net_share(struct uiw_net *net, const struct rte_mbuf *m)
{
	for (unsigned i = 0; i < net->nengines; i++) {
		struct rte_mbuf *c;

		if (i == net->engine)
			continue;
		c = rte_pktmbuf_copy(m, m->pool, 0, UINT32_MAX);
		if (c != NULL)
			hand_to(net, net->engines[i], c);
	}
}

void uiw_net_start(struct uiw_net *net, uint64_t now)
{
	(void)now;
	/* RFC 5227 §3: an ARP announcement, sender and target IP both ours. */
	if (uiw_arp_send_request(net, net->ip, net->ip, NULL) == 0)
		net->counters[UIW_NET_C_arp_gratuitous_tx]++;
}

/* Which handler a frame goes to, or the counter that says why it is dropped. */
static int eth_classify(const struct uiw_net *net, const struct rte_mbuf *m)
{
	const struct uiw_eth_hdr *eh;

	if (m->pkt_len < UIW_ETH_HDR_LEN)
		return UIW_NET_C_eth_drop_short;
	if (!uiw_net_contig(m, 0, UIW_ETH_HDR_LEN))
		return UIW_NET_C_eth_drop_split_hdr;
	eh = rte_pktmbuf_mtod(m, const struct uiw_eth_hdr *);
	if (memcmp(eh->dst, net->port->mac.addr_bytes, UIW_ETH_ALEN) != 0 &&
	    !uiw_eth_is_broadcast(eh->dst))
		return UIW_NET_C_eth_drop_not_ours;
	switch (uiw_eth_type(eh)) {
	case UIW_ETHERTYPE_ARP:
		return -UIW_ETHERTYPE_ARP;
	case UIW_ETHERTYPE_IPV4:
		return -UIW_ETHERTYPE_IPV4;
	default:
		return UIW_NET_C_eth_drop_ethertype;
	}
}

static void eth_input(struct uiw_net *net, struct rte_mbuf *m, uint64_t now)
{
	int verdict = eth_classify(net, m);

	net->counters[UIW_NET_C_eth_rx]++;
	if (verdict == -UIW_ETHERTYPE_ARP)
		uiw_arp_input(net, m, now);
	else if (verdict == -UIW_ETHERTYPE_IPV4)
		uiw_ipv4_input(net, m, now);
	else
		uiw_net_drop(net, m, (enum uiw_net_counter)verdict);
}

void uiw_net_input(struct uiw_net *net, struct rte_mbuf **pkts, uint16_t n, uint64_t now)
{
	/* TCP may hold a segment while more of the burst follows, to join the next in-order
	 * ones of its connection to it (tcp_in.c, "Joining a burst's segments"). */
	for (uint16_t i = 0; i < n; i++) {
		net->rx_more = (uint16_t)(n - 1 - i);
		eth_input(net, pkts[i], now);
	}
	net->rx_more = 0;
	if (net->l4_held)
		net->tcp_flush(net->tcp_ctx, now);
}

void uiw_net_timer(struct uiw_net *net, uint64_t now)
{
	if (now < net->next_timer)
		return;
	net->next_timer = now + UIW_NET_TIMER_NS;
	uiw_arp_timer(net, now);
	uiw_port_link_check(net->port, now);
}

unsigned uiw_net_take_handed(struct uiw_net *net, uint64_t now)
{
	struct rte_mbuf *pkts[64];
	unsigned n;

	if (net->inbox == NULL || rte_ring_empty(net->inbox))
		return 0;
	n = rte_ring_sc_dequeue_burst(net->inbox, (void **)pkts, RTE_DIM(pkts), NULL);
	net->handed = true;
	for (unsigned i = 0; i < n; i++) {
		const struct uiw_eth_hdr *eh = rte_pktmbuf_mtod(pkts[i], const struct uiw_eth_hdr *);

		/* Checked where they came in: ARP copies, and TCP segments whose IPv4 header
		 * was, so they go straight to the handler. */
		if (uiw_eth_type(eh) == UIW_ETHERTYPE_ARP) {
			uiw_arp_input(net, pkts[i], now);
		} else {
			const struct uiw_ipv4_hdr *ih = rte_pktmbuf_mtod_offset(
				pkts[i], const struct uiw_ipv4_hdr *, UIW_ETH_HDR_LEN);

			net->counters[UIW_NET_C_hand_in]++;
			net->tcp_input(net->tcp_ctx, pkts[i], uiw_ipv4_hdr_len(ih), now);
		}
	}
	net->handed = false;
	return n;
}

unsigned uiw_net_poll(struct uiw_net *net, uint64_t now)
{
	struct rte_mbuf *pkts[UIW_NET_MAX_BURST];
	uint16_t n = uiw_port_rx(net->port, pkts, (uint16_t)net->rx_burst);

	uiw_net_input(net, pkts, n, now);
	if (uiw_net_handed_waiting(net))
		n += uiw_net_take_handed(net, now);
	uiw_net_timer_due(net, now);
	uiw_port_flush(net->port);
	return n;
}

int uiw_net_resolve(struct uiw_net *net, uint32_t dst, uint64_t now)
{
	uint32_t nexthop = dst;

	if ((dst & net->netmask) != (net->ip & net->netmask)) {
		if (net->gateway == 0)
			return -EHOSTUNREACH;
		nexthop = net->gateway;
	}
	return uiw_arp_resolve(net, nexthop, now);
}

int uiw_net_output(struct uiw_net *net, struct rte_mbuf *m, uint32_t dst, uint8_t proto,
		   uint64_t now)
{
	uint32_t payload = m->pkt_len;
	uint32_t nexthop = dst;
	struct uiw_ipv4_hdr *ih;

	if ((dst & net->netmask) != (net->ip & net->netmask)) {
		if (net->gateway == 0) {
			uiw_net_drop(net, m, UIW_NET_C_ip_tx_no_route);
			return -EHOSTUNREACH;
		}
		nexthop = net->gateway;
	}
	if ((payload + UIW_IPV4_HDR_LEN > net->port->mtu &&
	     (!(m->ol_flags & RTE_MBUF_F_TX_TCP_SEG) || payload + UIW_IPV4_HDR_LEN > UINT16_MAX)) ||
	    rte_pktmbuf_prepend(m, UIW_ETH_HDR_LEN + UIW_IPV4_HDR_LEN) == NULL) {
		rte_pktmbuf_free(m);
		return -ENOBUFS;
	}
	ih = rte_pktmbuf_mtod_offset(m, struct uiw_ipv4_hdr *, UIW_ETH_HDR_LEN);
	uiw_ipv4_build(ih, proto, net->ip, dst, (uint16_t)payload, net->ip_id++);
	if (m->ol_flags & RTE_MBUF_F_TX_IP_CKSUM)
		ih->cksum = uiw_be16_of(0); /* the PMD's, per segment (TSO) */
	m->l2_len = UIW_ETH_HDR_LEN;
	m->l3_len = UIW_IPV4_HDR_LEN;
	net->counters[UIW_NET_C_ip_tx]++;
	return uiw_arp_output(net, m, nexthop, now);
}

bool uiw_net_run_start(struct uiw_net *net, uint32_t dst, uint8_t proto, struct uiw_net_run *r)
{
	uint32_t nexthop = dst;
	const struct uiw_arp_entry *e;
	struct uiw_ipv4_hdr *ih = (struct uiw_ipv4_hdr *)(r->hdr + UIW_ETH_HDR_LEN);
	struct uiw_eth_hdr *eh = (struct uiw_eth_hdr *)r->hdr;

	if ((dst & net->netmask) != (net->ip & net->netmask)) {
		if (net->gateway == 0)
			return false;
		nexthop = net->gateway;
	}
	e = uiw_net_arp_lookup(net, nexthop);
	if (e == NULL || e->nheld != 0 ||
	    (e->state != UIW_ARP_REACHABLE && e->state != UIW_ARP_PROBE))
		return false;
	memcpy(eh->dst, e->mac, UIW_ETH_ALEN);
	memcpy(eh->src, net->port->mac.addr_bytes, UIW_ETH_ALEN);
	uiw_eth_set_type(eh, UIW_ETHERTYPE_IPV4);
	uiw_ipv4_build(ih, proto, net->ip, dst, 0, 0);
	r->sum = uiw_ipv4_sum_fixed(proto, net->ip, dst);
	return true;
}

const char *uiw_ip_str(uint32_t ip, char buf[16])
{
	snprintf(buf, 16, "%u.%u.%u.%u", ip >> 24, (ip >> 16) & 0xff, (ip >> 8) & 0xff, ip & 0xff);
	return buf;
}
