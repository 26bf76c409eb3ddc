/* SPDX-License-Identifier: BSD-3-Clause */
/* TCP option parsing and building (RFC 9293 §3.2, RFC 7323, RFC 2018). */
#include "tcp_internal.h"

/* Options of known kind must have exactly their length (0: variable, checked below). */
static unsigned known_len(uint8_t kind)
{
	switch (kind) {
	case UIW_TCPOPT_MSS:
		return UIW_TCPOLEN_MSS;
	case UIW_TCPOPT_WS:
		return UIW_TCPOLEN_WS;
	case UIW_TCPOPT_SACK_PERM:
		return UIW_TCPOLEN_SACK_PERM;
	case UIW_TCPOPT_TS:
		return UIW_TCPOLEN_TS;
	default:
		return 0;
	}
}

static void take_sack(struct tcp_opts *o, const uint8_t *p, unsigned olen)
{
	for (unsigned i = 2; i + 8 <= olen && o->nsack < TCP_SACK_BLOCKS; i += 8) {
		o->sack[o->nsack][0] = uiw_tcpopt_get32(p + i);
		o->sack[o->nsack][1] = uiw_tcpopt_get32(p + i + 4);
		o->nsack++;
	}
}

/*
 * Parses @p len option bytes. MSS, window scale and SACK-permitted count only on a SYN
 * (RFC 7323 §2.2, RFC 2018 §2). RFC 9293 §3.2 (MUST-7): an illegal length (below 2, past
 * the header, or wrong for a known kind) must not crash us; the segment is dropped.
 * @return 0, or -EINVAL for an illegal length.
 */
int uiw_tcp_opts_parse(const uint8_t *p, unsigned len, bool syn, struct tcp_opts *o)
{
	/* What nearly every segment of a connection with timestamps carries (RFC 7323
	 * Appendix A layout): NOP, NOP, TS. The SACK blocks are read only up to nsack. */
	if (len == 12 && p[0] == UIW_TCPOPT_NOP && p[1] == UIW_TCPOPT_NOP &&
	    p[2] == UIW_TCPOPT_TS && p[3] == UIW_TCPOLEN_TS) {
		o->mss = 0;
		o->ws = 0;
		o->has_mss = o->has_ws = o->sack_ok = 0;
		o->has_ts = 1;
		o->nsack = 0;
		o->tsval = uiw_tcpopt_get32(p + 4);
		o->tsecr = uiw_tcpopt_get32(p + 8);
		return 0;
	}
	memset(o, 0, sizeof(*o));
	for (unsigned i = 0; i < len;) {
		uint8_t kind = p[i];
		unsigned olen;

		if (kind == UIW_TCPOPT_EOL)
			break;
		if (kind == UIW_TCPOPT_NOP) {
			i++;
			continue;
		}
		if (i + 1 >= len)
			return -EINVAL;
		olen = p[i + 1];
		if (olen < 2 || i + olen > len)
			return -EINVAL;
		if (known_len(kind) != 0 && olen != known_len(kind))
			return -EINVAL;
		if (kind == UIW_TCPOPT_SACK && (olen < 10 || (olen - 2) % 8 != 0))
			return -EINVAL;
		switch (kind) {
		case UIW_TCPOPT_MSS:
			o->has_mss = syn;
			o->mss = uiw_tcpopt_get16(p + i + 2);
			break;
		case UIW_TCPOPT_WS:
			o->has_ws = syn;
			o->ws = p[i + 2] > UIW_TCP_MAX_WS ? UIW_TCP_MAX_WS : p[i + 2];
			break;
		case UIW_TCPOPT_SACK_PERM:
			o->sack_ok = syn;
			break;
		case UIW_TCPOPT_TS:
			o->has_ts = 1;
			o->tsval = uiw_tcpopt_get32(p + i + 2);
			o->tsecr = uiw_tcpopt_get32(p + i + 6);
			break;
		case UIW_TCPOPT_SACK:
			take_sack(o, p + i, olen);
			break;
		default:
			break;
		}
		i += olen;
	}
	return 0;
}

static unsigned put_ts(uint8_t *p, uint32_t tsval, uint32_t tsecr)
{
	p[0] = UIW_TCPOPT_TS;
	p[1] = UIW_TCPOLEN_TS;
	uiw_tcpopt_put32(p + 2, tsval);
	uiw_tcpopt_put32(p + 6, tsecr);
	return UIW_TCPOLEN_TS;
}

/*
 * SYN and SYN-ACK options: MSS always; SACK-permitted, timestamps and window scale as
 * offered (for a SYN-ACK: as both offered). Laid out as Linux does, 4-byte aligned.
 * @return the bytes written (at most 20).
 */
unsigned uiw_tcp_opts_build_syn(const struct uiw_tcp_conn *c, bool synack, uint32_t tsval,
			    uint8_t *p)
{
	const struct uiw_tcp *t = c->tcp;
	bool sack = synack ? (c->flags & TF_SACK_OK) != 0 : t->offer_sack;
	bool ts = synack ? (c->flags & TF_TS_OK) != 0 : t->offer_ts;
	bool ws = synack ? (c->flags & TF_WS_OK) != 0 : t->offer_ws;
	unsigned n = 0;

	p[n++] = UIW_TCPOPT_MSS;
	p[n++] = UIW_TCPOLEN_MSS;
	uiw_tcpopt_put16(p + n, tcp_our_mss(t));
	n += 2;
	if (sack && ts) {
		p[n++] = UIW_TCPOPT_SACK_PERM;
		p[n++] = UIW_TCPOLEN_SACK_PERM;
		n += put_ts(p + n, tsval, synack ? c->ts_recent : 0);
	} else if (ts) {
		p[n++] = UIW_TCPOPT_NOP;
		p[n++] = UIW_TCPOPT_NOP;
		n += put_ts(p + n, tsval, synack ? c->ts_recent : 0);
	} else if (sack) {
		p[n++] = UIW_TCPOPT_NOP;
		p[n++] = UIW_TCPOPT_NOP;
		p[n++] = UIW_TCPOPT_SACK_PERM;
		p[n++] = UIW_TCPOLEN_SACK_PERM;
	}
	if (ws) {
		p[n++] = UIW_TCPOPT_NOP;
		p[n++] = UIW_TCPOPT_WS;
		p[n++] = UIW_TCPOLEN_WS;
		p[n++] = c->rcv_wscale;
	}
	return n;
}

/* Options of a synchronized-state segment: timestamps, then SACK blocks for what the
 * reassembly queue holds. @return the bytes written (a multiple of 4, at most 40). */
unsigned uiw_tcp_opts_build(const struct uiw_tcp_conn *c, uint32_t tsval, uint8_t *p, bool sack)
{
	uint32_t blocks[TCP_SACK_BLOCKS][2];
	unsigned n = 0, nb;

	if (c->flags & TF_TS_OK) {
		p[n++] = UIW_TCPOPT_NOP;
		p[n++] = UIW_TCPOPT_NOP;
		n += put_ts(p + n, tsval, c->ts_recent);
	}
	if (sack && (c->flags & TF_SACK_OK) && (c->nooo > 0 || c->dsack_pending)) {
		unsigned max = (c->flags & TF_TS_OK) ? 3 : 4, first = 0;

		if (c->dsack_pending) {   /* RFC 2883 §4: the D-SACK block goes first */
			blocks[0][0] = c->dsack[0];
			blocks[0][1] = c->dsack[1];
			first = 1;
		}
		nb = first + uiw_tcp_reass_sack_blocks(c, blocks + first, max - first);
		p[n++] = UIW_TCPOPT_NOP;
		p[n++] = UIW_TCPOPT_NOP;
		p[n++] = UIW_TCPOPT_SACK;
		p[n++] = (uint8_t)(2 + 8 * nb);
		for (unsigned i = 0; i < nb; i++) {
			uiw_tcpopt_put32(p + n, blocks[i][0]);
			uiw_tcpopt_put32(p + n + 4, blocks[i][1]);
			n += 8;
		}
	}
	return n;
}
