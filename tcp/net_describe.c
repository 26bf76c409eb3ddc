/* SPDX-License-Identifier: BSD-3-Clause */
/* One-line frame summaries for tools and logs. Reads only bytes the frame has. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "net_internal.h"
#include "tcp_wire.h"

struct out {
	char *buf;
	size_t len, used;
};

static void put(struct out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void put(struct out *o, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (o->used >= o->len)
		return;
	va_start(ap, fmt);
	n = vsnprintf(o->buf + o->used, o->len - o->used, fmt, ap);
	va_end(ap);
	if (n > 0)
		o->used += (size_t)n < o->len - o->used ? (size_t)n : o->len - o->used - 1;
}

static void describe_arp(struct out *o, const struct rte_mbuf *m)
{
	struct uiw_arp_hdr tmp;
	const struct uiw_arp_hdr *a = rte_pktmbuf_read(m, UIW_ETH_HDR_LEN, sizeof(tmp), &tmp);
	char s[16], t[16];

	if (a == NULL) {
		put(o, "ARP, truncated");
		return;
	}
	uiw_ip_str(uiw_arp_spa(a), s);
	uiw_ip_str(uiw_arp_tpa(a), t);
	if (uiw_arp_op(a) == UIW_ARP_OP_REQUEST && uiw_arp_spa(a) == uiw_arp_tpa(a))
		put(o, "ARP announce %s is-at %02x:%02x:%02x:%02x:%02x:%02x", s, a->sha[0],
		    a->sha[1], a->sha[2], a->sha[3], a->sha[4], a->sha[5]);
	else if (uiw_arp_op(a) == UIW_ARP_OP_REQUEST)
		put(o, "ARP who-has %s tell %s", t, s);
	else if (uiw_arp_op(a) == UIW_ARP_OP_REPLY)
		put(o, "ARP reply %s is-at %02x:%02x:%02x:%02x:%02x:%02x", s, a->sha[0], a->sha[1],
		    a->sha[2], a->sha[3], a->sha[4], a->sha[5]);
	else
		put(o, "ARP op %u", uiw_arp_op(a));
}

/* "TCP 49152 > 7174 [SA] seq 1 ack 2 win 512 len 40", and what the payload starts with
 * when it is an MPA Request or Reply. */
static void describe_tcp(struct out *o, const struct rte_mbuf *m, unsigned ihl, unsigned total)
{
	static const char names[] = "FSRPAU";
	struct uiw_tcp_hdr tmp;
	const struct uiw_tcp_hdr *t = rte_pktmbuf_read(m, UIW_ETH_HDR_LEN + ihl, sizeof(tmp), &tmp);
	char flags[7];
	unsigned k = 0, hl, len;
	uint8_t key[16];
	const uint8_t *p;

	if (t == NULL || ihl < UIW_IPV4_HDR_LEN) {
		put(o, " TCP, truncated");
		return;
	}
	for (unsigned i = 0; i < 6; i++)
		if (t->flags & (1u << i))
			flags[k++] = names[i];
	flags[k] = '\0';
	hl = uiw_tcp_hdr_len(t);
	len = total > ihl + hl ? total - ihl - hl : 0;
	put(o, " TCP %u > %u [%s] seq %u ack %u win %u len %u", uiw_tcp_sport(t), uiw_tcp_dport(t),
	    flags, uiw_tcp_seq(t), uiw_tcp_ack(t), uiw_tcp_win(t), len);
	p = len >= sizeof(key) ? rte_pktmbuf_read(m, UIW_ETH_HDR_LEN + ihl + hl, sizeof(key), key) : NULL;
	if (p != NULL && memcmp(p, "MPA ID Re", 9) == 0)
		put(o, ": MPA %s", p[9] == 'q' ? "Request" : "Reply");
}

static void describe_ipv4(struct out *o, const struct rte_mbuf *m)
{
	struct uiw_ipv4_hdr tmp;
	const struct uiw_ipv4_hdr *ih = rte_pktmbuf_read(m, UIW_ETH_HDR_LEN, sizeof(tmp), &tmp);
	struct uiw_icmp_echo etmp;
	const struct uiw_icmp_echo *e;
	char s[16], d[16];
	unsigned ihl;

	if (ih == NULL) {
		put(o, "IPv4, truncated");
		return;
	}
	ihl = uiw_ipv4_hdr_len(ih);
	put(o, "IPv4 %s > %s", uiw_ip_str(uiw_ipv4_src(ih), s), uiw_ip_str(uiw_ipv4_dst(ih), d));
	if (ih->proto == UIW_IPPROTO_TCP) {
		describe_tcp(o, m, ihl, uiw_ipv4_total_len(ih));
		return;
	}
	if (ih->proto != UIW_IPPROTO_ICMP) {
		put(o, " proto %u len %u", ih->proto, uiw_ipv4_total_len(ih));
		return;
	}
	e = rte_pktmbuf_read(m, UIW_ETH_HDR_LEN + ihl, sizeof(etmp), &etmp);
	if (e == NULL || ihl < UIW_IPV4_HDR_LEN) {
		put(o, " ICMP, truncated");
		return;
	}
	if (e->type == UIW_ICMP_ECHO_REQUEST || e->type == UIW_ICMP_ECHO_REPLY)
		put(o, " ICMP echo %s id %u seq %u, %u bytes",
		    e->type == UIW_ICMP_ECHO_REQUEST ? "request" : "reply", uiw_icmp_id(e),
		    uiw_icmp_seq(e), uiw_ipv4_total_len(ih) - ihl - UIW_ICMP_ECHO_LEN);
	else
		put(o, " ICMP type %u code %u", e->type, e->code);
}

size_t uiw_net_describe(const struct rte_mbuf *m, char *out, size_t outlen)
{
	struct out o = { out, outlen, 0 };
	struct uiw_eth_hdr tmp;
	const struct uiw_eth_hdr *eh;

	if (outlen == 0)
		return 0;
	out[0] = '\0';
	eh = rte_pktmbuf_read(m, 0, sizeof(tmp), &tmp);
	if (eh == NULL) {
		put(&o, "runt frame, %u bytes", m->pkt_len);
		return o.used;
	}
	switch (uiw_eth_type(eh)) {
	case UIW_ETHERTYPE_ARP:
		describe_arp(&o, m);
		break;
	case UIW_ETHERTYPE_IPV4:
		describe_ipv4(&o, m);
		break;
	default:
		put(&o, "EtherType 0x%04x, %u bytes", uiw_eth_type(eh), m->pkt_len);
		break;
	}
	return o.used;
}
