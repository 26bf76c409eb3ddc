/* SPDX-License-Identifier: BSD-3-Clause */
/* ARP (RFC 826) with a neighbour cache: resolution with retries, expiry, refresh. */
#include <errno.h>
#include <string.h>

#include "net_internal.h"

#define ARP_MASK (UIW_ARP_SLOTS - 1)
#define ARP_FRAME_LEN (UIW_ETH_HDR_LEN + UIW_ARP_LEN)

static_assert((UIW_ARP_SLOTS & ARP_MASK) == 0, "ARP slots are a power of two");

static const uint8_t eth_bcast[UIW_ETH_ALEN] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
static const uint8_t eth_zero[UIW_ETH_ALEN];

static unsigned arp_home(uint32_t ip)
{
	return (ip * 2654435761u) >> 24 & ARP_MASK;
}

static struct uiw_arp_entry *arp_find(struct uiw_net *net, uint32_t ip)
{
	unsigned i = arp_home(ip);

	for (unsigned n = 0; n < UIW_ARP_SLOTS; n++, i = (i + 1) & ARP_MASK) {
		if (net->arp[i].ip == ip)
			return &net->arp[i];
		if (net->arp[i].ip == 0)
			return NULL;
	}
	return NULL;
}

const struct uiw_arp_entry *uiw_net_arp_lookup(const struct uiw_net *net, uint32_t ip)
{
	return arp_find((struct uiw_net *)(uintptr_t)net, ip);
}

static void arp_send_via(struct uiw_net *net, struct uiw_arp_entry *e, struct rte_mbuf *m);

/* Takes the packets held for @p e out of the hold list, in order: sent (@p send) or dropped. */
static void arp_release(struct uiw_net *net, struct uiw_arp_entry *e, bool send)
{
	unsigned k = 0;

	if (e->nheld == 0)
		return;
	for (unsigned i = 0; i < net->nhold; i++) {
		if (net->hold[i].ip != e->ip) {
			net->hold[k++] = net->hold[i];
		} else if (send) {
			arp_send_via(net, e, net->hold[i].m);
		} else {
			rte_pktmbuf_free(net->hold[i].m);
			net->counters[UIW_NET_C_arp_hold_drop]++;
		}
	}
	net->nhold = k;
	e->nheld = 0;
}

/* Linear-probing delete: later entries of the same run move back into the hole.
 * NB: entries move, so pointers into the table are stale after this. */
static void arp_delete(struct uiw_net *net, struct uiw_arp_entry *e)
{
	unsigned hole = (unsigned)(e - net->arp);

	arp_release(net, e, false);
	memset(e, 0, sizeof(*e));
	net->arp_used--;
	for (unsigned j = (hole + 1) & ARP_MASK; net->arp[j].ip != 0; j = (j + 1) & ARP_MASK) {
		unsigned home = arp_home(net->arp[j].ip);
		/* Move j into the hole unless its home lies cyclically in (hole, j]. */
		bool stays = hole <= j ? (home > hole && home <= j) : (home > hole || home <= j);

		if (stays)
			continue;
		net->arp[hole] = net->arp[j];
		memset(&net->arp[j], 0, sizeof(net->arp[j]));
		hole = j;
	}
}

/*
 * The entry to give up when the cache is full: a stale one (not confirmed for
 * arp_reachable_ms) before an unresolved one, the oldest first. A neighbour confirmed lately
 * is never given up for a new one: a flood of new addresses (spoofed SYNs we answer, ARP
 * from many senders) cannot push out the peers we are talking to. @return NULL if none.
 */
static struct uiw_arp_entry *arp_victim(struct uiw_net *net)
{
	static const uint8_t rank[] = { [UIW_ARP_STALE] = 1, [UIW_ARP_INCOMPLETE] = 2 };
	struct uiw_arp_entry *best = NULL;

	for (unsigned i = 0; i < UIW_ARP_SLOTS; i++) {
		struct uiw_arp_entry *e = &net->arp[i];

		if (e->ip == 0 || e->state >= sizeof(rank) || rank[e->state] == 0)
			continue;
		if (best == NULL || rank[e->state] < rank[best->state] ||
		    (rank[e->state] == rank[best->state] && e->deadline < best->deadline))
			best = e;
	}
	return best;
}

/* @return a new entry for @p ip, or NULL when the cache is full of confirmed ones. */
static struct uiw_arp_entry *arp_insert(struct uiw_net *net, uint32_t ip)
{
	unsigned i;

	if (net->arp_used >= UIW_ARP_MAX_ENTRIES) {
		struct uiw_arp_entry *victim = arp_victim(net);

		if (victim == NULL)
			return NULL;
		arp_delete(net, victim);
		net->counters[UIW_NET_C_arp_evict]++;
	}
	for (i = arp_home(ip); net->arp[i].ip != 0; i = (i + 1) & ARP_MASK)
		;
	net->arp_used++;
	net->arp[i].ip = ip;
	return &net->arp[i];
}

int uiw_arp_send_request(struct uiw_net *net, uint32_t target, uint32_t spa, const uint8_t *dst)
{
	struct rte_mbuf *m = uiw_port_alloc(net->port);
	struct uiw_arp_hdr *a;

	if (m == NULL)
		return -ENOMEM;
	if (rte_pktmbuf_append(m, ARP_FRAME_LEN) == NULL) {
		rte_pktmbuf_free(m);
		return -ENOMEM;
	}
	uiw_net_eth_fill(m, dst != NULL ? dst : eth_bcast, &net->port->mac, UIW_ETHERTYPE_ARP);
	a = rte_pktmbuf_mtod_offset(m, struct uiw_arp_hdr *, UIW_ETH_HDR_LEN);
	uiw_arp_set_fixed(a, UIW_ARP_OP_REQUEST);
	memcpy(a->sha, net->port->mac.addr_bytes, UIW_ETH_ALEN);
	uiw_arp_set_spa(a, spa);
	memcpy(a->tha, dst != NULL ? dst : eth_zero, UIW_ETH_ALEN);
	uiw_arp_set_tpa(a, target);
	uiw_port_tx(net->port, m);
	return 0;
}

static void arp_request(struct uiw_net *net, struct uiw_arp_entry *e, const uint8_t *dst)
{
	if (uiw_arp_send_request(net, e->ip, net->ip, dst) == 0)
		net->counters[UIW_NET_C_arp_request_tx]++;
	e->tries++;
}

static void arp_send_via(struct uiw_net *net, struct uiw_arp_entry *e, struct rte_mbuf *m)
{
	uiw_net_eth_fill(m, e->mac, &net->port->mac, UIW_ETHERTYPE_IPV4);
	uiw_port_tx(net->port, m);
}

/* A confirmed address: the entry becomes REACHABLE and what it held is sent. */
static void arp_confirm(struct uiw_net *net, struct uiw_arp_entry *e, const uint8_t *mac,
			uint64_t now)
{
	memcpy(e->mac, mac, UIW_ETH_ALEN);
	e->state = UIW_ARP_REACHABLE;
	e->tries = 0;
	e->deadline = now + net->arp_reachable_ns;
	arp_release(net, e, true);
}

int uiw_arp_resolve(struct uiw_net *net, uint32_t nexthop, uint64_t now)
{
	struct uiw_arp_entry *e = arp_find(net, nexthop);

	if (e == NULL) {
		e = arp_insert(net, nexthop);
		if (e == NULL) {
			net->counters[UIW_NET_C_arp_table_full]++;
			return -ENOBUFS;
		}
		e->state = UIW_ARP_INCOMPLETE;
		e->deadline = now + net->arp_retry_ns;
		arp_request(net, e, NULL);
	}
	return e->state == UIW_ARP_INCOMPLETE ? 0 : 1;
}

int uiw_arp_output(struct uiw_net *net, struct rte_mbuf *m, uint32_t nexthop, uint64_t now)
{
	struct uiw_arp_entry *e = arp_find(net, nexthop);

	if (e == NULL) {
		e = arp_insert(net, nexthop);
		if (e == NULL) {
			uiw_net_drop(net, m, UIW_NET_C_arp_table_full);
			return -ENOBUFS;
		}
		e->state = UIW_ARP_INCOMPLETE;
		e->deadline = now + net->arp_retry_ns;
		arp_request(net, e, NULL);
	}
	switch (e->state) {
	case UIW_ARP_INCOMPLETE:
		/* Bounded per neighbour and in all: what waits holds mbufs (as Linux's
		 * unres_qlen, about a hundred packets a neighbour). */
		if (e->nheld == UIW_ARP_HOLD || net->nhold == UIW_ARP_HOLD_TOTAL) {
			uiw_net_drop(net, m, UIW_NET_C_arp_hold_drop);
			return -ENOBUFS;
		}
		net->hold[net->nhold].ip = e->ip;
		net->hold[net->nhold++].m = m;
		e->nheld++;
		return 0;
	case UIW_ARP_STALE:
		/* Used again after expiry: send, and confirm with a unicast request. */
		e->state = UIW_ARP_PROBE;
		e->tries = 0;
		e->deadline = now + net->arp_retry_ns;
		arp_request(net, e, e->mac);
		break;
	default:
		break;
	}
	arp_send_via(net, e, m);
	return 0;
}

static int arp_validate(const struct uiw_net *net, const struct rte_mbuf *m)
{
	const struct uiw_arp_hdr *a;
	uint32_t spa;

	if (m->pkt_len < ARP_FRAME_LEN)
		return UIW_NET_C_eth_drop_short;
	if (!uiw_net_contig(m, UIW_ETH_HDR_LEN, UIW_ARP_LEN))
		return UIW_NET_C_eth_drop_split_hdr;
	a = rte_pktmbuf_mtod_offset(m, const struct uiw_arp_hdr *, UIW_ETH_HDR_LEN);
	if (uiw_arp_htype(a) != UIW_ARP_HTYPE_ETHER || uiw_arp_ptype(a) != UIW_ETHERTYPE_IPV4 ||
	    a->hlen != UIW_ETH_ALEN || a->plen != 4)
		return UIW_NET_C_arp_drop_format;
	if (uiw_arp_op(a) != UIW_ARP_OP_REQUEST && uiw_arp_op(a) != UIW_ARP_OP_REPLY)
		return UIW_NET_C_arp_drop_op;
	spa = uiw_arp_spa(a);
	/* Sender 0.0.0.0 is an RFC 5227 probe: answered, never learnt. */
	if (uiw_eth_is_group(a->sha) || uiw_eth_is_zero(a->sha) ||
	    (spa != 0 && (uiw_ip_is_martian(spa) || uiw_net_is_bcast(net, spa))))
		return UIW_NET_C_arp_drop_bad_sender;
	if (spa == net->ip)
		return memcmp(a->sha, net->port->mac.addr_bytes, UIW_ETH_ALEN) != 0
			       ? UIW_NET_C_arp_conflict
			       : UIW_NET_C_arp_not_for_us;
	return UIW_NET_ACCEPT;
}

/* RFC 826 "Packet reception": the request is turned into its reply in place. */
static void arp_answer(struct uiw_net *net, struct rte_mbuf *m)
{
	struct uiw_arp_hdr *a;
	uint8_t peer_mac[UIW_ETH_ALEN];
	uint32_t peer_ip;

	if (!uiw_net_writable(m)) {
		struct rte_mbuf *copy = rte_pktmbuf_copy(m, net->port->pool, 0, ARP_FRAME_LEN);

		rte_pktmbuf_free(m);
		if (copy == NULL) {
			net->port->counters[UIW_PORT_C_tx_drop_nombuf]++;
			return;
		}
		m = copy;
	}
	uiw_mbuf_trim_to(m, ARP_FRAME_LEN);
	a = rte_pktmbuf_mtod_offset(m, struct uiw_arp_hdr *, UIW_ETH_HDR_LEN);
	memcpy(peer_mac, a->sha, UIW_ETH_ALEN);
	peer_ip = uiw_arp_spa(a);
	uiw_net_eth_fill(m, peer_mac, &net->port->mac, UIW_ETHERTYPE_ARP);
	a->op = uiw_be16_of(UIW_ARP_OP_REPLY);
	memcpy(a->tha, peer_mac, UIW_ETH_ALEN);
	uiw_arp_set_tpa(a, peer_ip);
	memcpy(a->sha, net->port->mac.addr_bytes, UIW_ETH_ALEN);
	uiw_arp_set_spa(a, net->ip);
	m->ol_flags = 0;
	net->counters[UIW_NET_C_arp_request_answered]++;
	uiw_port_tx(net->port, m);
}

void uiw_arp_input(struct uiw_net *net, struct rte_mbuf *m, uint64_t now)
{
	const struct uiw_arp_hdr *a;
	struct uiw_arp_entry *e = NULL;
	uint32_t spa;
	int verdict;

	/* A copy another engine received (uiw_net_set_engines()): learnt from, not answered,
	 * and counted once, where it came in. */
	net->counters[net->handed ? UIW_NET_C_arp_shared : UIW_NET_C_arp_rx]++;
	verdict = arp_validate(net, m);
	if (verdict != UIW_NET_ACCEPT) {
		uiw_net_drop(net, m, (enum uiw_net_counter)verdict);
		return;
	}
	/* With engines, the answer to one's request may come in on another's queue: each
	 * learns from every valid ARP packet. */
	if (!net->handed && net->nengines > 1)
		uiw_net_share(net, m);
	a = rte_pktmbuf_mtod_offset(m, const struct uiw_arp_hdr *, UIW_ETH_HDR_LEN);
	spa = uiw_arp_spa(a);
	/* RFC 826: merge the sender into an existing entry, whoever the target is. */
	if (spa != 0) {
		e = arp_find(net, spa);
		if (e != NULL)
			arp_confirm(net, e, a->sha, now);
	}
	if (uiw_arp_tpa(a) != net->ip) {
		if (net->handed)
			rte_pktmbuf_free(m);
		else
			uiw_net_drop(net, m, UIW_NET_C_arp_not_for_us);
		return;
	}
	/* Addressed to us: learn the sender if it is new (it is about to talk to us), while
	 * the cache is less than half full; past that the answer goes to the frame's sender
	 * and nothing is kept, so a flood of senders cannot fill the cache. */
	if (e == NULL && spa != 0) {
		if (net->arp_used < UIW_ARP_LEARN_MAX)
			arp_confirm(net, arp_insert(net, spa), a->sha, now);
		else
			net->counters[UIW_NET_C_arp_not_learnt]++;
	}
	if (net->handed) {
		rte_pktmbuf_free(m);
		return;
	}
	if (uiw_arp_op(a) == UIW_ARP_OP_REQUEST) {
		arp_answer(net, m);
		return;
	}
	net->counters[UIW_NET_C_arp_reply_rx]++;
	rte_pktmbuf_free(m);
}

void uiw_arp_timer(struct uiw_net *net, uint64_t now)
{
	for (unsigned i = 0; i < UIW_ARP_SLOTS; i++) {
		struct uiw_arp_entry *e = &net->arp[i];

		if (e->ip == 0 || now < e->deadline)
			continue;
		switch (e->state) {
		case UIW_ARP_INCOMPLETE:
		case UIW_ARP_PROBE:
			if (e->tries >= net->arp_retries) {
				net->counters[UIW_NET_C_arp_resolve_failed]++;
				arp_delete(net, e);
				i--; /* an entry may have moved into this slot */
				continue;
			}
			e->deadline = now + net->arp_retry_ns;
			arp_request(net, e, e->state == UIW_ARP_PROBE ? e->mac : NULL);
			break;
		case UIW_ARP_REACHABLE:
			e->state = UIW_ARP_STALE;
			e->deadline = now + net->arp_reachable_ns;
			break;
		default:
			/* STALE and unused for another reachable time: forget it. */
			arp_delete(net, e);
			i--;
			break;
		}
	}
}
