/* SPDX-License-Identifier: BSD-3-Clause */
/* Ethernet demux, IPv4 input checks (RFC 791, RFC 1122 §3.2.1) and ICMP echo (RFC 792). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ipv4_wire.h"
#include "net_fixture.h"
#include "uiw_csum.h"

#define PAYLOAD 56
#define ECHO_LEN (14 + 20 + 8 + PAYLOAD)

static uint8_t frame[2048];

static size_t std_echo(void)
{
	return build_echo(frame, MAC_US, MAC_PEER, IP_PEER, IP_US, 8, 0x77, 5, PAYLOAD, 5);
}


/* Checks that @p m is the echo reply to the request in @p req (IHL 5 reply). */
static void assert_reply_to(const uint8_t *req, size_t req_len, const struct rte_mbuf *m)
{
	uint8_t r[2048];
	size_t len = frame_bytes(m, r, sizeof(r));
	size_t req_ihl = (size_t)(req[14] & 0xf) * 4;
	size_t icmp_len = get16(req + 16) - req_ihl;

	(void)req_len;
	ck_assert_uint_eq(len, 14 + 20 + icmp_len);
	ck_assert_mem_eq(r, req + 6, 6);             /* to the requester's MAC */
	ck_assert_mem_eq(r + 6, MAC_US, 6);
	ck_assert_uint_eq(get16(r + 12), 0x0800);
	ck_assert_uint_eq(r[14], 0x45);
	ck_assert_uint_eq(get16(r + 16), 20 + icmp_len);
	ck_assert_uint_eq(get16(r + 20) & 0x3fff, 0); /* not a fragment */
	ck_assert_uint_eq(r[22], 64);
	ck_assert_uint_eq(r[23], 1);
	ck_assert_uint_eq(get32(r + 26), IP_US);
	ck_assert_uint_eq(get32(r + 30), get32(req + 14 + 12));
	ck_assert_uint_eq(ref_cksum(r + 14, 20), 0);
	ck_assert_uint_eq(r[34], 0);                 /* echo reply */
	ck_assert_uint_eq(r[35], 0);
	ck_assert_mem_eq(r + 38, req + 14 + req_ihl + 4, icmp_len - 4); /* id, seq, data */
	ck_assert_uint_eq(ref_cksum(r + 34, icmp_len), 0);
}

START_TEST(echo_request_gets_exact_reply)
{
	size_t len = std_echo();

	fx_input(frame_copy(frame, len), 0);
	ck_assert_uint_eq(fx_port.nsent, 1);
	assert_reply_to(frame, len, fx_port.sent[0]);
	ck_assert_uint_eq(fx_count(UIW_NET_C_icmp_echo_answered), 1);
	ck_assert_uint_eq(fx_drops(), 0);
}
END_TEST

START_TEST(echo_request_in_foreign_buffer_answered_by_copy)
{
	size_t len = std_echo();

	fx_input(frame_exact(frame, len), 0);
	ck_assert_uint_eq(fx_port.nsent, 1);
	assert_reply_to(frame, len, fx_port.sent[0]);
}
END_TEST

/* Every prefix of a valid request: dropped with the counter for what is missing. */
START_TEST(truncated_echo_dropped_with_counter)
{
	size_t len = std_echo();
	size_t cut = (size_t)_i;
	uint64_t before[UIW_NET_C__COUNT];
	enum uiw_net_counter want;

	ck_assert_uint_lt(cut, len);
	memcpy(before, fx_net.counters, sizeof(before));
	fx_input(frame_exact(frame, cut), 0);
	ck_assert_uint_eq(fx_port.nsent, 0);
	if (cut < 14 + 20)
		want = UIW_NET_C_eth_drop_short;
	else
		want = UIW_NET_C_ip_drop_len;
	fx_assert_only(before, want);
}
END_TEST

struct bad_case {
	const char *what;
	void (*mutate)(uint8_t *f, size_t *len);
	enum uiw_net_counter want;
};

static void m_ip_cksum(uint8_t *f, size_t *len) { (void)len; f[24] ^= 0x01; }
static void m_version6(uint8_t *f, size_t *len) { (void)len; f[14] = 0x65; fix_ip_cksum(f); }
static void m_ihl4(uint8_t *f, size_t *len) { (void)len; f[14] = 0x44; }
static void m_ihl_past_frame(uint8_t *f, size_t *len)
{
	*len = build_echo(f, MAC_US, MAC_PEER, IP_PEER, IP_US, 8, 1, 1, 0, 5);
	f[14] = 0x4f;
	fix_ip_cksum(f);
}
static void m_totlen_below_ihl(uint8_t *f, size_t *len) { (void)len; put16(f + 16, 19); fix_ip_cksum(f); }
static void m_totlen_past_frame(uint8_t *f, size_t *len) { put16(f + 16, (uint16_t)(*len - 14 + 1)); fix_ip_cksum(f); }
static void m_ttl0(uint8_t *f, size_t *len) { (void)len; f[22] = 0; fix_ip_cksum(f); }
static void m_dst_other(uint8_t *f, size_t *len) { (void)len; put32(f + 30, IP_OTHER); fix_ip_cksum(f); }
static void m_src(uint8_t *f, uint32_t src) { put32(f + 26, src); fix_ip_cksum(f); }
static void m_src_zero(uint8_t *f, size_t *len) { (void)len; m_src(f, 0); }
static void m_src_loopback(uint8_t *f, size_t *len) { (void)len; m_src(f, 0x7f000001); }
static void m_src_multicast(uint8_t *f, size_t *len) { (void)len; m_src(f, 0xe0000005); }
static void m_src_bcast(uint8_t *f, size_t *len) { (void)len; m_src(f, 0xffffffff); }
static void m_src_subnet_bcast(uint8_t *f, size_t *len) { (void)len; m_src(f, 0x0a0001ff); }
static void m_src_ours(uint8_t *f, size_t *len) { (void)len; m_src(f, IP_US); }
static void m_more_frags(uint8_t *f, size_t *len) { (void)len; put16(f + 20, 0x2000); fix_ip_cksum(f); }
static void m_frag_offset(uint8_t *f, size_t *len) { (void)len; put16(f + 20, 100); fix_ip_cksum(f); }
static void m_udp(uint8_t *f, size_t *len) { (void)len; f[23] = 17; fix_ip_cksum(f); }
static void m_icmp_cksum(uint8_t *f, size_t *len) { (void)len; f[36] ^= 0x80; }
static void m_icmp_type13(uint8_t *f, size_t *len) { (void)len; f[34] = 13; fix_icmp_cksum(f); }
static void m_icmp_short(uint8_t *f, size_t *len) { (void)len; put16(f + 16, 24); fix_ip_cksum(f); }
static void m_bcast(uint8_t *f, size_t *len)
{
	(void)len;
	memcpy(f, MAC_BCAST, 6);
	put32(f + 30, 0xffffffff);
	fix_ip_cksum(f);
}
static void m_subnet_bcast(uint8_t *f, size_t *len)
{
	(void)len;
	memcpy(f, MAC_BCAST, 6);
	put32(f + 30, 0x0a0001ff);
	fix_ip_cksum(f);
}
static void m_eth_other(uint8_t *f, size_t *len) { (void)len; memcpy(f, MAC_OTHER, 6); }
static void m_eth_multicast(uint8_t *f, size_t *len)
{
	static const uint8_t mc[6] = { 0x01, 0x00, 0x5e, 0, 0, 1 };

	(void)len;
	memcpy(f, mc, 6);
}
static void m_vlan(uint8_t *f, size_t *len) { (void)len; put16(f + 12, 0x8100); }
static void m_ipv6(uint8_t *f, size_t *len) { (void)len; put16(f + 12, 0x86dd); }

static const struct bad_case bad_cases[] = {
	{ "IPv4 header checksum", m_ip_cksum, UIW_NET_C_ip_drop_cksum },
	{ "version 6", m_version6, UIW_NET_C_ip_drop_version },
	{ "IHL 4", m_ihl4, UIW_NET_C_ip_drop_ihl },
	{ "IHL past the frame", m_ihl_past_frame, UIW_NET_C_ip_drop_ihl },
	{ "total length below IHL", m_totlen_below_ihl, UIW_NET_C_ip_drop_len },
	{ "total length past the frame", m_totlen_past_frame, UIW_NET_C_ip_drop_len },
	{ "TTL 0", m_ttl0, UIW_NET_C_ip_drop_ttl },
	{ "destination not ours", m_dst_other, UIW_NET_C_ip_drop_not_ours },
	{ "source 0.0.0.0", m_src_zero, UIW_NET_C_ip_drop_src },
	{ "source loopback", m_src_loopback, UIW_NET_C_ip_drop_src },
	{ "source multicast", m_src_multicast, UIW_NET_C_ip_drop_src },
	{ "source broadcast", m_src_bcast, UIW_NET_C_ip_drop_src },
	{ "source subnet broadcast", m_src_subnet_bcast, UIW_NET_C_ip_drop_src },
	{ "source is our address", m_src_ours, UIW_NET_C_ip_drop_src },
	{ "more fragments", m_more_frags, UIW_NET_C_ip_drop_frag },
	{ "fragment offset", m_frag_offset, UIW_NET_C_ip_drop_frag },
	{ "UDP", m_udp, UIW_NET_C_ip_drop_proto },
	{ "ICMP checksum", m_icmp_cksum, UIW_NET_C_icmp_drop_cksum },
	{ "ICMP timestamp request", m_icmp_type13, UIW_NET_C_icmp_drop_type },
	{ "ICMP shorter than 8", m_icmp_short, UIW_NET_C_icmp_drop_short },
	{ "echo to 255.255.255.255", m_bcast, UIW_NET_C_icmp_drop_bcast },
	{ "echo to the subnet broadcast", m_subnet_bcast, UIW_NET_C_icmp_drop_bcast },
	{ "another MAC", m_eth_other, UIW_NET_C_eth_drop_not_ours },
	{ "multicast MAC", m_eth_multicast, UIW_NET_C_eth_drop_not_ours },
	{ "VLAN tag", m_vlan, UIW_NET_C_eth_drop_ethertype },
	{ "IPv6", m_ipv6, UIW_NET_C_eth_drop_ethertype },
};

START_TEST(bad_frame_dropped_with_its_counter)
{
	const struct bad_case *bc = &bad_cases[_i];
	uint64_t before[UIW_NET_C__COUNT];
	size_t len = std_echo();

	bc->mutate(frame, &len);
	memcpy(before, fx_net.counters, sizeof(before));
	fx_input(frame_exact(frame, len), 0);
	ck_assert_msg(fx_port.nsent == 0, "%s: answered", bc->what);
	fx_assert_only(before, bc->want);
}
END_TEST

START_TEST(ethernet_padding_not_echoed)
{
	size_t len = build_echo(frame, MAC_US, MAC_PEER, IP_PEER, IP_US, 8, 1, 2, 0, 5);

	memset(frame + len, 0xee, 60 - len);
	fx_input(frame_copy(frame, 60), 0);
	ck_assert_uint_eq(fx_port.nsent, 1);
	ck_assert_uint_eq(fx_port.sent[0]->pkt_len, len);
	assert_reply_to(frame, len, fx_port.sent[0]);
}
END_TEST

START_TEST(ip_options_dropped_from_reply)
{
	size_t len = build_echo(frame, MAC_US, MAC_PEER, IP_PEER, IP_US, 8, 3, 4, 40, 7);

	fx_input(frame_copy(frame, len), 0);
	ck_assert_uint_eq(fx_port.nsent, 1);
	assert_reply_to(frame, len, fx_port.sent[0]);
	ck_assert_uint_eq(fx_port.sent[0]->pkt_len, len - 8);
}
END_TEST

START_TEST(chained_request_answered_with_right_checksum)
{
	size_t len = build_echo(frame, MAC_US, MAC_PEER, IP_PEER, IP_US, 8, 3, 4, 1401, 5);

	/* Odd and even split points: the second part's words are shifted on odd ones. */
	fx_input(frame_split(frame, len, (size_t)_i), 0);
	ck_assert_uint_eq(fx_port.nsent, 1);
	assert_reply_to(frame, len, fx_port.sent[0]);
}
END_TEST

START_TEST(headers_split_across_segments_dropped)
{
	size_t len = std_echo();
	uint64_t before[UIW_NET_C__COUNT];

	memcpy(before, fx_net.counters, sizeof(before));
	fx_input(frame_split(frame, len, (size_t)_i), 0);
	ck_assert_uint_eq(fx_port.nsent, 0);
	fx_assert_only(before, UIW_NET_C_eth_drop_split_hdr);
}
END_TEST

struct seen {
	unsigned calls;
	uint32_t src;
	uint16_t id, seq;
};

static void on_echo(void *arg, uint32_t src, uint16_t id, uint16_t seq, const struct rte_mbuf *m)
{
	struct seen *s = arg;

	(void)m;
	s->calls++;
	s->src = src;
	s->id = id;
	s->seq = seq;
}

START_TEST(echo_reply_reported_not_answered)
{
	struct seen s = { 0 };
	size_t len = build_echo(frame, MAC_US, MAC_PEER, IP_PEER, IP_US, 0, 0x4242, 9, 8, 5);

	fx_net.on_echo_reply = on_echo;
	fx_net.cb_arg = &s;
	fx_input(frame_copy(frame, len), 0);
	ck_assert_uint_eq(fx_port.nsent, 0);
	ck_assert_uint_eq(s.calls, 1);
	ck_assert_uint_eq(s.src, IP_PEER);
	ck_assert_uint_eq(s.id, 0x4242);
	ck_assert_uint_eq(s.seq, 9);
}
END_TEST

START_TEST(output_off_link_without_gateway_unreachable)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(test_pool());

	ck_assert_ptr_nonnull(rte_pktmbuf_append(m, 10));
	ck_assert_int_eq(uiw_net_output(&fx_net, m, 0xc0a80505, 1, 0), -EHOSTUNREACH);
	uiw_port_flush(&fx_port.port);
	ck_assert_uint_eq(fx_port.nsent, 0);
	ck_assert_uint_eq(fx_count(UIW_NET_C_ip_tx_no_route), 1);
}
END_TEST

START_TEST(output_off_link_resolves_gateway)
{
	uint8_t r[64];

	fx_teardown();
	fx_setup(IP_GW);
	ck_assert_int_eq(uiw_net_ping(&fx_net, 0x08080808, 1, 1, 0, 0), 0);
	uiw_port_flush(&fx_port.port);
	ck_assert_uint_eq(fx_port.nsent, 1);
	frame_bytes(fx_port.sent[0], r, sizeof(r));
	ck_assert_uint_eq(get16(r + 12), 0x0806);
	ck_assert_uint_eq(get32(r + 14 + 24), IP_GW);
}
END_TEST

/* The eight-bytes-a-step sum equals a plain RFC 1071 word-by-word sum and DPDK's, for every
 * length 0..600 at every alignment, for random bytes and for all-ones (the most carries). */
static uint16_t reference_sum(const uint8_t *p, size_t len)
{
	uint32_t sum = 0;

	for (size_t i = 0; i + 1 < len; i += 2)
		sum += (uint32_t)p[i] | (uint32_t)p[i + 1] << 8;   /* host (little-endian) words */
	if (len & 1)
		sum += p[len - 1];
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)sum;
}

START_TEST(fast_sum_matches_rfc1071)
{
	static uint8_t buf[70000];
	uint64_t x = 0x9e3779b97f4a7c15ull;

	for (size_t i = 0; i < sizeof(buf); i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		buf[i] = _i ? 0xff : (uint8_t)x;
	}
	for (size_t off = 0; off < 8; off++)
		for (size_t len = 0; len <= 600; len++) {
			uint16_t want = reference_sum(buf + off, len);

			ck_assert_msg(uiw_raw_sum(buf + off, len) == want, "off %zu len %zu", off, len);
			ck_assert_uint_eq(rte_raw_cksum(buf + off, len), want);
		}
	ck_assert_uint_eq(uiw_raw_sum(buf + 3, 65535), reference_sum(buf + 3, 65535));
	/* The wide sum (AVX2 from UIW_CSUM_WIDE_MIN octets, when the CPU has it) agrees too,
	 * at every length around its rounds and its threshold, and over whole buffers. */
	for (size_t off = 0; off < 8; off++)
		for (size_t len = 0; len <= 1100; len++)
			ck_assert_msg(uiw_csum_raw(buf + off, len) == reference_sum(buf + off, len),
				      "wide: off %zu len %zu", off, len);
	for (size_t len = 65535; len <= 65536 + 64; len += 13)
		ck_assert_uint_eq(uiw_csum_raw(buf + 1, len), reference_sum(buf + 1, len));
	ck_assert_uint_eq(uiw_csum_raw(buf, sizeof(buf)), reference_sum(buf, sizeof(buf)));

	/* Past the points where the wide sum widens its lanes (every 512 KiB; 3 MiB and a few
	 * octets): against the scalar sum, held to the reference above. This fill, then all
	 * zero (every lane at its lowest); the copy that sums as well. */
	const size_t big = 3 * 1024 * 1024 + 37;
	uint8_t *b = malloc(big), *d = malloc(big);

	ck_assert(b != NULL && d != NULL);
	for (int zero = 0; zero < 2; zero++) {
		for (size_t i = 0; i < big; i++) {
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			b[i] = zero ? 0 : _i ? 0xff : (uint8_t)x;
		}
		uint16_t want = uiw_raw_sum(b + 1, big - 1);

		ck_assert_uint_eq(uiw_csum_raw(b + 1, big - 1), want);
		ck_assert_uint_eq(uiw_copy_sum(d, b + 1, big - 1), want);
		ck_assert(memcmp(d, b + 1, big - 1) == 0);
	}
	free(b);
	free(d);
}
END_TEST

/* A header uiw_ipv4_build() fills sums to all ones over its 20 octets with the reference
 * sum, and reads back as built, for random fields and for the extremes where every carry
 * counts (the build's own sum may change: this holds it to the wire). */
START_TEST(built_header_checksum_right)
{
	static const uint32_t addrs[] = { 0, 0xffffffffu, 0xffff0000u, 0x0000ffffu, 0x0a000001u };
	uint64_t x = 0x853c49e6748fea9bull;
	struct uiw_ipv4_hdr h;

	for (unsigned k = 0; k < 20000; k++) {
		uint32_t src, dst;
		uint16_t len, id;
		uint8_t proto;

		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		src = k < 25 ? addrs[k % 5] : (uint32_t)x;
		dst = k < 25 ? addrs[k / 5] : (uint32_t)(x >> 32);
		len = k < 25 ? (uint16_t)(k & 1 ? 0 : 65535 - UIW_IPV4_HDR_LEN) : (uint16_t)(x >> 7) % 65000;
		id = k < 25 ? (uint16_t)(k & 2 ? 0xffff : 0) : (uint16_t)(x >> 23);
		proto = k & 1 ? UIW_IPPROTO_TCP : UIW_IPPROTO_ICMP;
		memset(&h, 0xa5, sizeof(h));
		uiw_ipv4_build(&h, proto, src, dst, len, id);
		ck_assert_msg(reference_sum((const uint8_t *)&h, sizeof(h)) == 0xffff,
			      "src %08x dst %08x len %u id %u: sum %04x", src, dst, len, id,
			      reference_sum((const uint8_t *)&h, sizeof(h)));
		ck_assert_uint_eq(uiw_ipv4_src(&h), src);
		ck_assert_uint_eq(uiw_ipv4_dst(&h), dst);
		ck_assert_uint_eq(uiw_ipv4_total_len(&h), (uint16_t)(UIW_IPV4_HDR_LEN + len));
		ck_assert_uint_eq(uiw_ipv4_id(&h), id);
		ck_assert_uint_eq(h.proto, proto);
	}
}
END_TEST

/* The sum over an mbuf chain: pieces of every parity, any offset and length, against the
 * reference over the same bytes laid flat (all 0xff too, where every carry counts). */
START_TEST(chain_sum_matches_flat_sum)
{
	static uint8_t flat[4096];
	uint64_t x = 0x2545f4914f6cdd1dull;

	for (unsigned round = 0; round < 300; round++) {
		struct rte_mbuf *head = NULL, *last = NULL;
		uint32_t total = 0;
		unsigned nseg = 1 + round % 6;

		for (unsigned k = 0; k < nseg; k++) {
			struct rte_mbuf *s = rte_pktmbuf_alloc(test_pool());
			uint32_t n;

			ck_assert_ptr_nonnull(s);
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			n = 1 + (uint32_t)(x % (k % 2 ? 7 : 600));
			s->data_off = (uint16_t)(s->data_off + (x >> 20) % 3);   /* odd and even addresses */
			uint8_t *p = (uint8_t *)rte_pktmbuf_append(s, (uint16_t)n);

			ck_assert_ptr_nonnull(p);
			for (uint32_t i = 0; i < n; i++) {
				x ^= x << 13, x ^= x >> 7, x ^= x << 17;
				p[i] = _i ? 0xff : (uint8_t)x;
			}
			memcpy(flat + total, p, n);
			total += n;
			if (head == NULL) {
				head = s;
			} else {
				last->next = s;
				head->nb_segs++;
				head->pkt_len += n;
			}
			last = s;
		}
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		uint32_t off = (uint32_t)(x % total), len = (uint32_t)((x >> 32) % (total - off + 1));

		ck_assert_msg(uiw_inet_sum_mbuf(head, off, len) ==
				      rte_be_to_cpu_16(reference_sum(flat + off, len)),
			      "round %u: %u segments, off %u len %u", round, nseg, off, len);
		rte_pktmbuf_free(head);
	}
}
END_TEST

/* A segment's noted sum stands in for its octets only while it is the noted length. */
START_TEST(noted_sums_used_only_for_whole_pieces)
{
	static uint8_t flat[2048];
	const uint64_t noted = 1ull << 40;
	struct rte_mbuf *h = rte_pktmbuf_alloc(test_pool()), *p = rte_pktmbuf_alloc(test_pool());
	uint8_t *a, *b;

	ck_assert_ptr_nonnull(h);
	ck_assert_ptr_nonnull(p);
	a = (uint8_t *)rte_pktmbuf_append(h, 33);   /* odd: the piece starts at an odd offset */
	b = (uint8_t *)rte_pktmbuf_append(p, 1448);
	for (unsigned i = 0; i < 33 + 1448; i++)
		flat[i] = (uint8_t)(i * 131 + 7);
	memcpy(a, flat, 33);
	memcpy(b, flat + 33, 1448);
	h->next = p;
	h->nb_segs = 2;
	h->pkt_len = 33 + 1448;
	uint16_t want = rte_be_to_cpu_16(reference_sum(flat, 33 + 1448));

	p->ol_flags |= noted;
	p->hash.usr = 1448u << 16 | reference_sum(b, 1448);
	ck_assert_uint_eq(uiw_inet_sum_mbuf_noted(h, noted), want);
	/* A wrong sum noted for the right length is taken: the note is trusted... */
	p->hash.usr = 1448u << 16 | (uint16_t)(reference_sum(b, 1448) + 1);
	ck_assert_uint_ne(uiw_inet_sum_mbuf_noted(h, noted), want);
	/* ...but not for a piece of another length (part of it), nor without the flag. */
	p->data_len = 1000;
	h->pkt_len = 33 + 1000;
	ck_assert_uint_eq(uiw_inet_sum_mbuf_noted(h, noted), rte_be_to_cpu_16(reference_sum(flat, 1033)));
	p->data_len = 1448;
	h->pkt_len = 33 + 1448;
	p->ol_flags &= ~noted;
	ck_assert_uint_eq(uiw_inet_sum_mbuf_noted(h, noted), want);
	rte_pktmbuf_free(h);
}
END_TEST

/* The copy that sums: the same octets at the destination, the sum of uiw_raw_sum(). */
START_TEST(copy_sum_copies_and_sums)
{
	static uint8_t src[3000], dst[3100];
	uint64_t x = 0x9e3779b97f4a7c15ull;

	for (size_t i = 0; i < sizeof(src); i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		src[i] = _i ? 0xff : (uint8_t)x;
	}
	for (size_t off = 0; off < 4; off++)
		for (size_t len = 0; len <= 2900; len += len < 300 ? 1 : 37) {
			memset(dst, 0xa5, sizeof(dst));
			ck_assert_msg(uiw_copy_sum(dst + off, src + 3 - off, len) ==
					      reference_sum(src + 3 - off, len),
				      "off %zu len %zu", off, len);
			ck_assert_mem_eq(dst + off, src + 3 - off, len);
			ck_assert_uint_eq(dst[off + len], 0xa5);   /* nothing past the end */
		}
}
END_TEST

START_TEST(ping_sends_valid_echo_request)
{
	uint8_t r[256];
	size_t len;

	/* Learn the peer first: it asks for us. */
	len = build_arp(frame, MAC_BCAST, 1, MAC_PEER, IP_PEER, MAC_ZERO, IP_US);
	fx_input(frame_copy(frame, len), 0);
	fake_port_clear(&fx_port);
	ck_assert_int_eq(uiw_net_ping(&fx_net, IP_PEER, 0x99, 7, 32, 0), 0);
	uiw_port_flush(&fx_port.port);
	ck_assert_uint_eq(fx_port.nsent, 1);
	len = frame_bytes(fx_port.sent[0], r, sizeof(r));
	ck_assert_uint_eq(len, 14 + 20 + 8 + 32);
	ck_assert_mem_eq(r, MAC_PEER, 6);
	ck_assert_uint_eq(ref_cksum(r + 14, 20), 0);
	ck_assert_uint_eq(get32(r + 30), IP_PEER);
	ck_assert_uint_eq(r[34], 8);
	ck_assert_uint_eq(get16(r + 38), 0x99);
	ck_assert_uint_eq(get16(r + 40), 7);
	ck_assert_uint_eq(ref_cksum(r + 34, 8 + 32), 0);
}
END_TEST

static Suite *ipv4_suite(void)
{
	Suite *s = suite_create("ipv4");
	TCase *tc = tcase_with_leak_check("ipv4", fx_setup_default, fx_teardown);

	tcase_add_test(tc, echo_request_gets_exact_reply);
	tcase_add_test(tc, echo_request_in_foreign_buffer_answered_by_copy);
	tcase_add_loop_test(tc, truncated_echo_dropped_with_counter, 0, ECHO_LEN);
	tcase_add_loop_test(tc, bad_frame_dropped_with_its_counter, 0,
			    (int)(sizeof(bad_cases) / sizeof(bad_cases[0])));
	tcase_add_test(tc, ethernet_padding_not_echoed);
	tcase_add_test(tc, ip_options_dropped_from_reply);
	tcase_add_loop_test(tc, chained_request_answered_with_right_checksum, 42, 80);
	tcase_add_loop_test(tc, headers_split_across_segments_dropped, 1, 14 + 20 + 8);
	tcase_add_test(tc, echo_reply_reported_not_answered);
	tcase_add_test(tc, output_off_link_without_gateway_unreachable);
	tcase_add_test(tc, output_off_link_resolves_gateway);
	tcase_add_test(tc, ping_sends_valid_echo_request);
	tcase_add_loop_test(tc, fast_sum_matches_rfc1071, 0, 2);
	tcase_add_test(tc, built_header_checksum_right);
	tcase_add_loop_test(tc, chain_sum_matches_flat_sum, 0, 2);
	tcase_add_loop_test(tc, copy_sum_copies_and_sums, 0, 2);
	tcase_add_test(tc, noted_sums_used_only_for_whole_pieces);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(ipv4_suite());
}
