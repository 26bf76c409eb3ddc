/* SPDX-License-Identifier: BSD-3-Clause */
/* IPv4 input (RFC 791, RFC 1122 §3.2.1) and ICMP echo (RFC 792, RFC 1122 §3.2.2.6). */
#include <errno.h>
#include <string.h>

#include "net_internal.h"

/* RFC 1122 §3.2.1: the checks a host makes before it accepts a datagram. */
static int ipv4_validate(const struct uiw_net *net, const struct rte_mbuf *m, bool *bcast)
{
	uint32_t avail = m->pkt_len - UIW_ETH_HDR_LEN;
	const struct uiw_ipv4_hdr *ih;
	unsigned ihl;
	uint16_t tot;
	uint32_t src, dst;

	if (avail < UIW_IPV4_HDR_LEN)
		return UIW_NET_C_eth_drop_short;
	if (!uiw_net_contig(m, UIW_ETH_HDR_LEN, UIW_IPV4_HDR_LEN))
		return UIW_NET_C_eth_drop_split_hdr;
	ih = rte_pktmbuf_mtod_offset(m, const struct uiw_ipv4_hdr *, UIW_ETH_HDR_LEN);
	/* RFC 1122 §3.2.1.1: a datagram whose version is not 4 MUST be discarded. */
	if (uiw_ipv4_version(ih) != UIW_IPV4_VERSION)
		return UIW_NET_C_ip_drop_version;
	ihl = uiw_ipv4_hdr_len(ih);
	if (ihl < UIW_IPV4_HDR_LEN || ihl > avail)
		return UIW_NET_C_ip_drop_ihl;
	if (!uiw_net_contig(m, UIW_ETH_HDR_LEN, ihl))
		return UIW_NET_C_eth_drop_split_hdr;
	tot = uiw_ipv4_total_len(ih);
	if (tot < ihl || tot > avail)
		return UIW_NET_C_ip_drop_len;
	/* RFC 1122 §3.2.1.2: a bad header checksum MUST be discarded silently. */
	if ((m->ol_flags & RTE_MBUF_F_RX_IP_CKSUM_MASK) == RTE_MBUF_F_RX_IP_CKSUM_BAD)
		return UIW_NET_C_ip_drop_cksum;
	if ((m->ol_flags & RTE_MBUF_F_RX_IP_CKSUM_MASK) != RTE_MBUF_F_RX_IP_CKSUM_GOOD &&
	    uiw_inet_sum(ih, ihl) != 0xffff)
		return UIW_NET_C_ip_drop_cksum;
	/* RFC 1122 §3.2.1.7: no host may send TTL 0, so such a datagram is malformed. */
	if (ih->ttl == 0)
		return UIW_NET_C_ip_drop_ttl;
	dst = uiw_ipv4_dst(ih);
	*bcast = dst != net->ip;
	if (*bcast && !uiw_net_is_bcast(net, dst))
		return UIW_NET_C_ip_drop_not_ours;
	/* RFC 1122 §3.2.1.3: a datagram from a broadcast, multicast, loopback or
	 * "this network" source, or from our own address, is discarded. */
	src = uiw_ipv4_src(ih);
	if (uiw_ip_is_martian(src) || uiw_net_is_bcast(net, src) || src == net->ip)
		return UIW_NET_C_ip_drop_src;
	if ((uiw_ipv4_frag(ih) & (UIW_IPV4_FLAG_MF | UIW_IPV4_FRAG_OFFSET)) != 0)
		return UIW_NET_C_ip_drop_frag;
	return UIW_NET_ACCEPT;
}

void uiw_ipv4_input(struct uiw_net *net, struct rte_mbuf *m, uint64_t now)
{
	const struct uiw_ipv4_hdr *ih;
	bool bcast = false;
	int verdict;

	net->counters[UIW_NET_C_ip_rx]++;
	verdict = ipv4_validate(net, m, &bcast);
	if (verdict != UIW_NET_ACCEPT) {
		uiw_net_drop(net, m, (enum uiw_net_counter)verdict);
		return;
	}
	ih = rte_pktmbuf_mtod_offset(m, const struct uiw_ipv4_hdr *, UIW_ETH_HDR_LEN);
	/* Ethernet pads short frames: the datagram ends where its total length says. */
	if (m->pkt_len > UIW_ETH_HDR_LEN + uiw_ipv4_total_len(ih))
		uiw_mbuf_trim_to(m, UIW_ETH_HDR_LEN + uiw_ipv4_total_len(ih));
	switch (ih->proto) {
	case UIW_IPPROTO_ICMP:
		uiw_icmp_input(net, m, uiw_ipv4_hdr_len(ih), bcast);
		break;
	case UIW_IPPROTO_TCP:
		if (net->tcp_input != NULL && !bcast) {
			net->tcp_input(net->tcp_ctx, m, uiw_ipv4_hdr_len(ih), now);
			break;
		}
		uiw_net_drop(net, m, UIW_NET_C_ip_drop_proto);
		break;
	default:
		uiw_net_drop(net, m, UIW_NET_C_ip_drop_proto);
		break;
	}
}

/*
 * Turns an echo request into its reply in the same mbuf (RFC 792: swap the addresses,
 * type 0, new checksum). IP options are not echoed: the reply gets a plain 20-byte header,
 * written just in front of the ICMP message. The reply goes to the request's Ethernet
 * source, so answering needs no ARP look-up.
 */
static void icmp_echo_answer(struct uiw_net *net, struct rte_mbuf *m, unsigned ihl)
{
	uint32_t len = m->pkt_len - UIW_ETH_HDR_LEN - ihl;
	uint8_t peer_mac[UIW_ETH_ALEN];
	uint32_t peer_ip;
	struct uiw_ipv4_hdr *ih;
	struct uiw_icmp_echo *echo;

	if (!uiw_net_writable(m)) {
		struct rte_mbuf *copy = rte_pktmbuf_copy(m, net->port->pool, 0, UINT32_MAX);

		rte_pktmbuf_free(m);
		if (copy == NULL) {
			net->port->counters[UIW_PORT_C_tx_drop_nombuf]++;
			return;
		}
		m = copy;
	}
	memcpy(peer_mac, rte_pktmbuf_mtod(m, struct uiw_eth_hdr *)->src, UIW_ETH_ALEN);
	peer_ip = uiw_ipv4_src(rte_pktmbuf_mtod_offset(m, struct uiw_ipv4_hdr *, UIW_ETH_HDR_LEN));
	rte_pktmbuf_adj(m, (uint16_t)(ihl - UIW_IPV4_HDR_LEN));
	uiw_net_eth_fill(m, peer_mac, &net->port->mac, UIW_ETHERTYPE_IPV4);
	ih = rte_pktmbuf_mtod_offset(m, struct uiw_ipv4_hdr *, UIW_ETH_HDR_LEN);
	uiw_ipv4_build(ih, UIW_IPPROTO_ICMP, net->ip, peer_ip, (uint16_t)len, net->ip_id++);
	echo = rte_pktmbuf_mtod_offset(m, struct uiw_icmp_echo *,
				       UIW_ETH_HDR_LEN + UIW_IPV4_HDR_LEN);
	echo->type = UIW_ICMP_ECHO_REPLY;
	echo->cksum = uiw_be16_of(0);
	echo->cksum = uiw_inet_cksum_of(
		uiw_inet_sum_mbuf(m, UIW_ETH_HDR_LEN + UIW_IPV4_HDR_LEN, len));
	m->ol_flags = 0;
	m->l2_len = UIW_ETH_HDR_LEN;
	m->l3_len = UIW_IPV4_HDR_LEN;
	net->counters[UIW_NET_C_icmp_echo_answered]++;
	net->counters[UIW_NET_C_ip_tx]++;
	uiw_port_tx(net->port, m);
}

static int icmp_validate(const struct rte_mbuf *m, unsigned ihl, bool bcast)
{
	uint32_t off = UIW_ETH_HDR_LEN + ihl;
	uint32_t len = m->pkt_len - off;
	const struct uiw_icmp_echo *echo;

	if (len < UIW_ICMP_ECHO_LEN)
		return UIW_NET_C_icmp_drop_short;
	if (!uiw_net_contig(m, off, UIW_ICMP_ECHO_LEN))
		return UIW_NET_C_eth_drop_split_hdr;
	if (uiw_inet_sum_mbuf(m, off, len) != 0xffff)
		return UIW_NET_C_icmp_drop_cksum;
	echo = rte_pktmbuf_mtod_offset(m, const struct uiw_icmp_echo *, off);
	switch (echo->type) {
	case UIW_ICMP_ECHO_REQUEST:
		/* RFC 1122 §3.2.2.6: an echo request to a broadcast MAY be silently
		 * discarded; we do, as Linux does by default. */
		return bcast ? UIW_NET_C_icmp_drop_bcast : UIW_NET_ACCEPT;
	case UIW_ICMP_ECHO_REPLY:
		return UIW_NET_ACCEPT;
	default:
		return UIW_NET_C_icmp_drop_type;
	}
}

void uiw_icmp_input(struct uiw_net *net, struct rte_mbuf *m, unsigned ihl, bool bcast)
{
	const struct uiw_icmp_echo *echo;
	int verdict;

	net->counters[UIW_NET_C_icmp_rx]++;
	verdict = icmp_validate(m, ihl, bcast);
	if (verdict != UIW_NET_ACCEPT) {
		uiw_net_drop(net, m, (enum uiw_net_counter)verdict);
		return;
	}
	echo = rte_pktmbuf_mtod_offset(m, const struct uiw_icmp_echo *, UIW_ETH_HDR_LEN + ihl);
	if (echo->type == UIW_ICMP_ECHO_REQUEST) {
		icmp_echo_answer(net, m, ihl);
		return;
	}
	net->counters[UIW_NET_C_icmp_echo_reply_rx]++;
	if (net->on_echo_reply != NULL) {
		const struct uiw_ipv4_hdr *ih =
			rte_pktmbuf_mtod_offset(m, const struct uiw_ipv4_hdr *, UIW_ETH_HDR_LEN);

		net->on_echo_reply(net->cb_arg, uiw_ipv4_src(ih), uiw_icmp_id(echo),
				   uiw_icmp_seq(echo), m);
	}
	rte_pktmbuf_free(m);
}

int uiw_net_ping(struct uiw_net *net, uint32_t dst, uint16_t id, uint16_t seq,
		 uint16_t payload_len, uint64_t now)
{
	struct rte_mbuf *m = uiw_port_alloc(net->port);
	struct uiw_icmp_echo *echo;
	uint8_t *data;

	if (m == NULL)
		return -ENOMEM;
	echo = (struct uiw_icmp_echo *)rte_pktmbuf_append(m, UIW_ICMP_ECHO_LEN + payload_len);
	if (echo == NULL) {
		rte_pktmbuf_free(m);
		return -EMSGSIZE;
	}
	uiw_icmp_set_echo(echo, UIW_ICMP_ECHO_REQUEST, id, seq);
	data = (uint8_t *)(echo + 1);
	for (uint16_t i = 0; i < payload_len; i++)
		data[i] = (uint8_t)i;
	echo->cksum = uiw_inet_cksum_of(uiw_inet_sum(echo, UIW_ICMP_ECHO_LEN + payload_len));
	net->counters[UIW_NET_C_icmp_echo_tx]++;
	return uiw_net_output(net, m, dst, UIW_IPPROTO_ICMP, now);
}
