/* SPDX-License-Identifier: BSD-3-Clause */
/** @file IPv4 header (RFC 791) and the Internet checksum (RFC 1071). */
#ifndef UIW_IPV4_WIRE_H
#define UIW_IPV4_WIRE_H

#include <assert.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <rte_ip.h>
#include <rte_mbuf.h>

#include "uiw_be_wire.h"

#define UIW_IPV4_HDR_LEN 20u         /* without options */
#define UIW_IPV4_VERSION 4
#define UIW_IPV4_FLAG_DF 0x4000      /* RFC 791 §3.1 flags */
#define UIW_IPV4_FLAG_MF 0x2000
#define UIW_IPV4_FRAG_OFFSET 0x1fff
#define UIW_IPV4_DEFAULT_TTL 64      /* RFC 1700 recommended default */
#define UIW_IPPROTO_ICMP 1
#define UIW_IPPROTO_TCP 6

struct uiw_ipv4_hdr {
	uint8_t ver_ihl;             /* version (4 bits) | IHL in 32-bit words (4 bits) */
	uint8_t tos;
	uiw_be16 total_len;
	uiw_be16 id;
	uiw_be16 frag;               /* flags (3 bits) | fragment offset (13 bits) */
	uint8_t ttl;
	uint8_t proto;
	uiw_be16 cksum;
	uiw_be32 src;
	uiw_be32 dst;
} __attribute__((packed));
static_assert(sizeof(struct uiw_ipv4_hdr) == UIW_IPV4_HDR_LEN, "IPv4 header is 20 bytes");
static_assert(offsetof(struct uiw_ipv4_hdr, ver_ihl) == 0, "ver_ihl at 0");
static_assert(offsetof(struct uiw_ipv4_hdr, total_len) == 2, "total length at 2");
static_assert(offsetof(struct uiw_ipv4_hdr, id) == 4, "id at 4");
static_assert(offsetof(struct uiw_ipv4_hdr, frag) == 6, "fragment at 6");
static_assert(offsetof(struct uiw_ipv4_hdr, ttl) == 8, "TTL at 8");
static_assert(offsetof(struct uiw_ipv4_hdr, proto) == 9, "protocol at 9");
static_assert(offsetof(struct uiw_ipv4_hdr, cksum) == 10, "checksum at 10");
static_assert(offsetof(struct uiw_ipv4_hdr, src) == 12, "source at 12");
static_assert(offsetof(struct uiw_ipv4_hdr, dst) == 16, "destination at 16");

static inline unsigned uiw_ipv4_version(const struct uiw_ipv4_hdr *h) { return h->ver_ihl >> 4; }
static inline unsigned uiw_ipv4_hdr_len(const struct uiw_ipv4_hdr *h) { return (h->ver_ihl & 0xfu) * 4; }
static inline uint16_t uiw_ipv4_total_len(const struct uiw_ipv4_hdr *h) { return uiw_be16_get(h->total_len); }
static inline uint16_t uiw_ipv4_frag(const struct uiw_ipv4_hdr *h) { return uiw_be16_get(h->frag); }
static inline uint16_t uiw_ipv4_id(const struct uiw_ipv4_hdr *h) { return uiw_be16_get(h->id); }
static inline uint32_t uiw_ipv4_src(const struct uiw_ipv4_hdr *h) { return uiw_be32_get(h->src); }
static inline uint32_t uiw_ipv4_dst(const struct uiw_ipv4_hdr *h) { return uiw_be32_get(h->dst); }

/** Folds a 64-bit sum of 32-bit words to the 16-bit one's-complement sum. */
static inline uint16_t uiw_sum_fold64(uint64_t sum)
{
	sum = (sum & 0xffffffffu) + (sum >> 32);
	sum = (sum & 0xffffffffu) + (sum >> 32);
	sum = (sum & 0xffffu) + (sum >> 16);
	sum = (sum & 0xffffu) + (sum >> 16);
	sum = (sum & 0xffffu) + (sum >> 16);
	return (uint16_t)sum;
}

/**
 * The folded one's-complement sum of @p len bytes as host-order 16-bit words, the value
 * rte_raw_cksum() gives, eight bytes a step: the sum is independent of the word size and
 * of byte order up to a final swap (RFC 1071 §2), so 64-bit words are added with their
 * carries folded back in (end-around carry).
 */
static inline uint16_t uiw_raw_sum(const void *buf, size_t len)
{
	const uint8_t *p = buf;
	uint64_t sum = 0, a = 0, b = 0;
	uint32_t w4;
	uint16_t w2;

	/* 64-bit words with the carry brought back in (an add and an add-with-carry each). */
	for (; len >= 16; p += 16, len -= 16) {
		uint64_t x, y;

		memcpy(&x, p, 8);
		memcpy(&y, p + 8, 8);
		a += x;
		a += a < x;
		b += y;
		b += b < y;
	}
	sum = a + b;
	sum += sum < b;
	if (len >= 8) {
		uint64_t x;

		memcpy(&x, p, 8);
		sum += x;
		sum += sum < x;
		p += 8;
		len -= 8;
	}
	sum = (sum & 0xffffffffu) + (sum >> 32);   /* room for what is left */
	if (len >= 4) {
		memcpy(&w4, p, 4);
		sum += w4;
		p += 4;
		len -= 4;
	}
	if (len >= 2) {
		memcpy(&w2, p, 2);
		sum += w2;
		p += 2;
		len -= 2;
	}
	if (len == 1)
		sum += *p;   /* the odd last byte is the low half of a host-order word */
	return uiw_sum_fold64(sum);
}

/** One's-complement sum of @p len bytes read as big-endian 16-bit words, folded (RFC 1071). */
static inline uint16_t uiw_inet_sum(const void *buf, size_t len)
{
	return rte_be_to_cpu_16(uiw_raw_sum(buf, len));
}

/** The checksum field value for data whose folded sum (with the field zero) is @p sum. */
static inline uiw_be16 uiw_inet_cksum_of(uint16_t sum)
{
	return uiw_be16_of((uint16_t)~sum);
}

/** The sum (host order, not folded) of the fields of a 20-byte header uiw_ipv4_build()
 *  writes that do not change from packet to packet: all but the length, identification
 *  and checksum. */
static inline uint32_t uiw_ipv4_sum_fixed(uint8_t proto, uint32_t src, uint32_t dst)
{
	return ((UIW_IPV4_VERSION << 4 | UIW_IPV4_HDR_LEN / 4) << 8) + UIW_IPV4_FLAG_DF +
	       ((uint32_t)UIW_IPV4_DEFAULT_TTL << 8 | proto) + (src >> 16) + (src & 0xffff) +
	       (dst >> 16) + (dst & 0xffff);
}

/**
 * Fills a 20-byte header (no options) and its checksum. The checksum is summed from the
 * values, not read back from the header: loads wider than the stores that just wrote it
 * cannot take them from the store buffer, and wait for every store before them.
 */
static inline void uiw_ipv4_build(struct uiw_ipv4_hdr *h, uint8_t proto, uint32_t src,
				  uint32_t dst, uint16_t payload_len, uint16_t id)
{
	uint32_t sum = uiw_ipv4_sum_fixed(proto, src, dst) +
		       (uint32_t)(UIW_IPV4_HDR_LEN + payload_len) + id;

	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	h->ver_ihl = (UIW_IPV4_VERSION << 4) | (UIW_IPV4_HDR_LEN / 4);
	h->tos = 0;
	h->total_len = uiw_be16_of((uint16_t)(UIW_IPV4_HDR_LEN + payload_len));
	h->id = uiw_be16_of(id);
	h->frag = uiw_be16_of(UIW_IPV4_FLAG_DF);
	h->ttl = UIW_IPV4_DEFAULT_TTL;
	h->proto = proto;
	h->cksum = uiw_be16_of(0);
	h->src = uiw_be32_of(src);
	h->dst = uiw_be32_of(dst);
	h->cksum = uiw_inet_cksum_of((uint16_t)sum);
}

#endif
