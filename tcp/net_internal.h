/* SPDX-License-Identifier: BSD-3-Clause */
/** @file Shared between the files of the lower half; not for other layers. */
#ifndef UIW_NET_INTERNAL_H
#define UIW_NET_INTERNAL_H

#include "arp_wire.h"
#include "eth_wire.h"
#include "icmp_wire.h"
#include "ipv4_wire.h"
#include "net.h"
#include "uiw_csum.h"
#include "uiw_mbuf.h"

/** Frees @p m and counts why. */
static inline void uiw_net_drop(struct uiw_net *net, struct rte_mbuf *m, enum uiw_net_counter c)
{
	net->counters[c]++;
	rte_pktmbuf_free(m);
}

/** True when @p len bytes from offset @p off are in the first segment. */
static inline bool uiw_net_contig(const struct rte_mbuf *m, uint32_t off, uint32_t len)
{
	return (uint32_t)m->data_len >= off + len;
}

/** True when the mbuf can be rewritten in place to answer it. */
static inline bool uiw_net_writable(const struct rte_mbuf *m)
{
	return RTE_MBUF_DIRECT(m) && rte_mbuf_refcnt_read(m) == 1;
}

/** Writes the Ethernet header at the front of @p m. */
static inline void uiw_net_eth_fill(struct rte_mbuf *m, const uint8_t dst[UIW_ETH_ALEN],
				    const struct rte_ether_addr *src, uint16_t type)
{
	struct uiw_eth_hdr *eh = rte_pktmbuf_mtod(m, struct uiw_eth_hdr *);

	memcpy(eh->dst, dst, UIW_ETH_ALEN);
	memcpy(eh->src, src->addr_bytes, UIW_ETH_ALEN);
	uiw_eth_set_type(eh, type);
}

/** True for addresses no host may use as a source: 0/8, 127/8, multicast, 240/4. */
static inline bool uiw_ip_is_martian(uint32_t ip)
{
	return (ip >> 24) == 0 || (ip >> 24) == 127 || ip >= 0xe0000000u;
}

/** True for the limited broadcast and for our subnet's broadcast address. */
static inline bool uiw_net_is_bcast(const struct uiw_net *net, uint32_t ip)
{
	return ip == 0xffffffffu ||
	       (net->netmask != 0xffffffffu && ip == (net->ip | ~net->netmask));
}

/** A validation result that lets the frame through; any other value is a drop counter. */
#define UIW_NET_ACCEPT (-1)


void uiw_arp_input(struct uiw_net *net, struct rte_mbuf *m, uint64_t now);
/* Hands a copy of @p m (borrowed) to every other engine. */
void uiw_net_share(struct uiw_net *net, const struct rte_mbuf *m);
void uiw_arp_timer(struct uiw_net *net, uint64_t now);
/** Sends a frame whose Ethernet header still lacks its destination to @p nexthop. */
int uiw_arp_output(struct uiw_net *net, struct rte_mbuf *m, uint32_t nexthop, uint64_t now);
/* uiw_net_resolve() for the next hop itself. */
int uiw_arp_resolve(struct uiw_net *net, uint32_t nexthop, uint64_t now);
/** Sends an ARP request for @p target; broadcast when @p dst is NULL. @return 0 or -ENOMEM. */
int uiw_arp_send_request(struct uiw_net *net, uint32_t target, uint32_t spa, const uint8_t *dst);

void uiw_ipv4_input(struct uiw_net *net, struct rte_mbuf *m, uint64_t now);
void uiw_icmp_input(struct uiw_net *net, struct rte_mbuf *m, unsigned ihl, bool bcast);

#endif
