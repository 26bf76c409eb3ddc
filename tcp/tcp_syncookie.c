/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * SYN cookies (RFC 4987 §3.6): when a listener's queue of half-open connections is full, a
 * SYN is answered with a SYN-ACK whose ISN carries what the connection needs, and no state
 * is kept. The ACK that completes the handshake proves the peer received it.
 *
 * ISN: bits 31-27 the low bits of a 64-second counter, 26-24 an index into a table of MSS
 * values, 23-0 a keyed hash (SipHash-2-4) of the addresses, ports, the peer's ISN and the
 * counter. A cookie verifies for one to two periods (64-128 s).
 *
 * The options a cookie cannot hold ride in the low bits of our TSval, which the peer echoes
 * (as Linux does): bits 3-0 the peer's window shift (15: none), bit 4 SACK-permitted. A peer
 * without timestamps gets a connection without window scaling or SACK.
 */
#include "tcp_internal.h"
#include "uiw_siphash.h"

#define COOKIE_PERIOD_NS (64ull * UIW_NS_PER_S)
#define COOKIE_HASH_MASK 0x00ffffffu
#define COOKIE_TS_BITS 0x1fu
#define COOKIE_TS_NO_WS 0xfu
#define COOKIE_TS_SACK 0x10u

/* The MSS a cookie can say: the largest entry not above the peer's is used. */
static const uint16_t cookie_mss_table[8] = { 64, 536, 1220, 1300, 1440, 1460, 4036, 8960 };

unsigned uiw_tcp_cookie_mss_idx(uint16_t peer_mss)
{
	unsigned i = 7;

	while (i > 0 && cookie_mss_table[i] > peer_mss)
		i--;
	return i;
}

uint16_t uiw_tcp_cookie_mss(unsigned mss_idx)
{
	return cookie_mss_table[mss_idx & 7];
}

static uint32_t cookie_hash(const struct uiw_tcp *t, uint32_t laddr, uint16_t lport, uint32_t raddr,
			    uint16_t rport, uint32_t peer_isn, uint64_t count)
{
	uint32_t v[6] = { laddr, raddr, ((uint32_t)lport << 16) | rport, peer_isn,
			  (uint32_t)count, (uint32_t)(count >> 32) };

	return (uint32_t)uiw_siphash(t->cookie_key, v, sizeof(v)) & COOKIE_HASH_MASK;
}

uint32_t uiw_tcp_cookie_isn(struct uiw_tcp *t, const struct tcp_seg *syn, unsigned mss_idx)
{
	uint64_t count = t->now / COOKIE_PERIOD_NS;

	return ((uint32_t)(count & 0x1f) << 27) | ((uint32_t)(mss_idx & 7) << 24) |
	       cookie_hash(t, syn->daddr, syn->dport, syn->saddr, syn->sport, syn->seq, count);
}

/* Our TSval for a cookie SYN-ACK: the clock with its low bits replaced, never ahead of it. */
uint32_t uiw_tcp_cookie_tsval(struct uiw_tcp *t, const struct tcp_seg *syn)
{
	uint32_t now = uiw_tcp_ts_now(t), bits, ts;

	bits = (syn->opt.has_ws && t->offer_ws) ? (syn->opt.ws & 0xfu) : COOKIE_TS_NO_WS;
	if (syn->opt.sack_ok && t->offer_sack)
		bits |= COOKIE_TS_SACK;
	ts = (now & ~COOKIE_TS_BITS) | bits;
	if ((int32_t)(ts - now) > 0)
		ts -= COOKIE_TS_BITS + 1;
	return ts;
}

/* @return the MSS index of a valid cookie in @p ack (acknowledging ISN + 1), or -1. */
int uiw_tcp_cookie_check(struct uiw_tcp *t, const struct tcp_seg *ack)
{
	uint32_t cookie = ack->ack - 1;
	uint64_t count = t->now / COOKIE_PERIOD_NS;

	for (unsigned age = 0; age < 2 && age <= count; age++) {
		uint64_t n = count - age;

		if ((n & 0x1f) != cookie >> 27)
			continue;
		if (cookie_hash(t, ack->daddr, ack->dport, ack->saddr, ack->sport, ack->seq - 1, n) ==
		    (cookie & COOKIE_HASH_MASK))
			return (int)((cookie >> 24) & 7);
	}
	return -1;
}

/* The options of the SYN a cookie stands for, as far as the ACK's TSecr tells them. */
void uiw_tcp_cookie_opts(const struct tcp_seg *ack, struct tcp_opts *o)
{
	uint32_t bits;

	if (!ack->opt.has_ts)
		return;
	bits = ack->opt.tsecr & COOKIE_TS_BITS;
	o->has_ts = 1;
	o->tsval = ack->opt.tsval;
	o->sack_ok = (bits & COOKIE_TS_SACK) != 0;
	if ((bits & 0xfu) != COOKIE_TS_NO_WS) {
		o->has_ws = 1;
		o->ws = (uint8_t)(bits & 0xfu);
	}
}
