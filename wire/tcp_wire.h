/* SPDX-License-Identifier: BSD-3-Clause */
/** @file TCP header and options (RFC 9293 §3.1, RFC 7323, RFC 2018). */
#ifndef UIW_TCP_WIRE_H
#define UIW_TCP_WIRE_H

#include <assert.h>
#include <stddef.h>
#include <stdint.h>

#include "uiw_be_wire.h"

#define UIW_TCP_HDR_LEN 20u
#define UIW_TCP_MAX_HDR_LEN 60u

/* RFC 9293 §3.1 control bits. */
#define UIW_TCP_FIN 0x01
#define UIW_TCP_SYN 0x02
#define UIW_TCP_RST 0x04
#define UIW_TCP_PSH 0x08
#define UIW_TCP_ACK 0x10
#define UIW_TCP_URG 0x20
#define UIW_TCP_ECE 0x40
#define UIW_TCP_CWR 0x80

/* Option kinds and lengths. */
#define UIW_TCPOPT_EOL 0
#define UIW_TCPOPT_NOP 1
#define UIW_TCPOPT_MSS 2          /* RFC 9293 §3.2, length 4 */
#define UIW_TCPOPT_WS 3           /* RFC 7323 §2, length 3 */
#define UIW_TCPOPT_SACK_PERM 4    /* RFC 2018 §2, length 2 */
#define UIW_TCPOPT_SACK 5         /* RFC 2018 §3, length 2 + 8n */
#define UIW_TCPOPT_TS 8           /* RFC 7323 §3, length 10 */
#define UIW_TCPOLEN_MSS 4
#define UIW_TCPOLEN_WS 3
#define UIW_TCPOLEN_SACK_PERM 2
#define UIW_TCPOLEN_TS 10
#define UIW_TCP_MAX_WS 14         /* RFC 7323 §2.3: larger shifts are used as 14 */

struct uiw_tcp_hdr {
	uiw_be16 sport;
	uiw_be16 dport;
	uiw_be32 seq;
	uiw_be32 ack;
	uint8_t off;              /* data offset in 32-bit words (4 bits) | reserved (4 bits) */
	uint8_t flags;
	uiw_be16 win;
	uiw_be16 cksum;
	uiw_be16 urp;
} __attribute__((packed));
static_assert(sizeof(struct uiw_tcp_hdr) == UIW_TCP_HDR_LEN, "TCP header is 20 bytes");
static_assert(offsetof(struct uiw_tcp_hdr, sport) == 0, "source port at 0");
static_assert(offsetof(struct uiw_tcp_hdr, dport) == 2, "destination port at 2");
static_assert(offsetof(struct uiw_tcp_hdr, seq) == 4, "sequence at 4");
static_assert(offsetof(struct uiw_tcp_hdr, ack) == 8, "acknowledgment at 8");
static_assert(offsetof(struct uiw_tcp_hdr, off) == 12, "data offset at 12");
static_assert(offsetof(struct uiw_tcp_hdr, flags) == 13, "flags at 13");
static_assert(offsetof(struct uiw_tcp_hdr, win) == 14, "window at 14");
static_assert(offsetof(struct uiw_tcp_hdr, cksum) == 16, "checksum at 16");
static_assert(offsetof(struct uiw_tcp_hdr, urp) == 18, "urgent pointer at 18");

static inline uint16_t uiw_tcp_sport(const struct uiw_tcp_hdr *t) { return uiw_be16_get(t->sport); }
static inline uint16_t uiw_tcp_dport(const struct uiw_tcp_hdr *t) { return uiw_be16_get(t->dport); }
static inline uint32_t uiw_tcp_seq(const struct uiw_tcp_hdr *t) { return uiw_be32_get(t->seq); }
static inline uint32_t uiw_tcp_ack(const struct uiw_tcp_hdr *t) { return uiw_be32_get(t->ack); }
static inline uint16_t uiw_tcp_win(const struct uiw_tcp_hdr *t) { return uiw_be16_get(t->win); }
static inline unsigned uiw_tcp_hdr_len(const struct uiw_tcp_hdr *t) { return (t->off >> 4) * 4u; }

static inline void uiw_tcp_build(struct uiw_tcp_hdr *t, uint16_t sport, uint16_t dport,
				 uint32_t seq, uint32_t ack, uint8_t flags, uint16_t win,
				 unsigned hdr_len)
{
	t->sport = uiw_be16_of(sport);
	t->dport = uiw_be16_of(dport);
	t->seq = uiw_be32_of(seq);
	t->ack = uiw_be32_of(ack);
	t->off = (uint8_t)((hdr_len / 4) << 4);
	t->flags = flags;
	t->win = uiw_be16_of(win);
	t->cksum = uiw_be16_of(0);
	t->urp = uiw_be16_of(0);
}

/** Reads a 16-bit or 32-bit big-endian option field at @p p (no alignment assumed). */
static inline uint16_t uiw_tcpopt_get16(const uint8_t *p)
{
	uiw_be16 v;

	__builtin_memcpy(&v, p, 2);
	return uiw_be16_get(v);
}

static inline uint32_t uiw_tcpopt_get32(const uint8_t *p)
{
	uiw_be32 v;

	__builtin_memcpy(&v, p, 4);
	return uiw_be32_get(v);
}

static inline void uiw_tcpopt_put16(uint8_t *p, uint16_t host)
{
	uiw_be16 v = uiw_be16_of(host);

	__builtin_memcpy(p, &v, 2);
}

static inline void uiw_tcpopt_put32(uint8_t *p, uint32_t host)
{
	uiw_be32 v = uiw_be32_of(host);

	__builtin_memcpy(p, &v, 4);
}

/** Host-order one's-complement sum of the IPv4 pseudo-header (RFC 9293 §3.1). */
static inline uint32_t uiw_tcp_phdr_sum(uint32_t src, uint32_t dst, uint16_t tcp_len)
{
	return (src >> 16) + (src & 0xffff) + (dst >> 16) + (dst & 0xffff) + 6u + tcp_len;
}

#endif
