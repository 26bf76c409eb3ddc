/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * TCP, packetdrill style: inject a segment from the peer, expect exact segments back.
 * Sequence arithmetic, option parsing (every truncation, zero and bad lengths), the
 * handshakes with and without options, data, out-of-order data with SACK, RST and SYN
 * handling (RFC 5961), retransmission, fast retransmit, records, close, bad segments.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <rte_ethdev.h>

#include "net_fixture.h"
#include "tcp.h"
#include "tcp_seq.h"
#include "tcp_internal.h"

#define MS 1000000ull
#define T0 (1000ull * MS)
#define PEER_PORT 40000
#define OUR_PORT 5001

static struct uiw_tcp *T;
static uint64_t now_ns;

/* What the callbacks saw. */
static struct {
	struct uiw_tcp_conn *accepted;
	unsigned connected, peer_closed, closed;
	int closed_err;
	uint8_t data[384 * 1024];
	uint32_t ndata;
	unsigned recv_calls;         /* ops->recv */
	unsigned sent_calls;         /* ops->sent */
	uint32_t sent_bytes;         /* the octets they reported acknowledged */
} ev;

static int cb_accept(void *ctx, struct uiw_tcp_conn *c)
{
	(void)ctx;
	ev.accepted = c;
	return 0;
}
static void cb_connected(void *u, struct uiw_tcp_conn *c) { (void)u; (void)c; ev.connected++; }
static void cb_recv(void *u, struct uiw_tcp_conn *c, struct rte_mbuf *m)
{
	(void)u;
	(void)c;
	ck_assert_uint_le(ev.ndata + m->pkt_len, sizeof(ev.data));
	ev.recv_calls++;
	frame_bytes(m, ev.data + ev.ndata, sizeof(ev.data) - ev.ndata);
	ev.ndata += m->pkt_len;
	rte_pktmbuf_free(m);
}
static void cb_peer_closed(void *u, struct uiw_tcp_conn *c) { (void)u; (void)c; ev.peer_closed++; }
static void cb_sent(void *u, struct uiw_tcp_conn *c, uint32_t bytes)
{
	(void)u;
	(void)c;
	ev.sent_calls++;
	ev.sent_bytes += bytes;
}
static void cb_closed(void *u, struct uiw_tcp_conn *c, int err)
{
	(void)u;
	(void)c;
	ev.closed++;
	ev.closed_err = err;
}

static const struct uiw_tcp_ops ops = {
	.accept = cb_accept, .connected = cb_connected, .recv = cb_recv,
	.peer_closed = cb_peer_closed, .closed = cb_closed, .sent = cb_sent,
};

static void setup(void)
{
	struct uiw_config cfg;
	uint8_t f[64];
	size_t len;

	fx_setup(0);
	uiw_config_defaults(&cfg);
	cfg.ip = IP_US;
	cfg.prefix_len = 24;
	cfg.tcp_max_conns = 64;
	cfg.tcp_time_wait_ms = 1000;
	cfg.tcp_delack_us = 500;
	ck_assert_int_eq(uiw_tcp_create(&T, &fx_net, &cfg), 0);
	/* The peer is known: it asked for us. */
	len = build_arp(f, MAC_BCAST, 1, MAC_PEER, IP_PEER, MAC_ZERO, IP_US);
	fx_input(frame_copy(f, len), T0);
	fake_port_clear(&fx_port);
	memset(&ev, 0, sizeof(ev));
	now_ns = T0;
}

static void teardown(void)
{
	uiw_tcp_destroy(T);
	fx_teardown();
}

struct seg {
	uint32_t seq, ack;
	uint8_t flags;
	uint16_t win;
	const uint8_t *opts;
	unsigned optlen;
	const void *data;
	uint32_t len;
	uint16_t sport, dport;
	bool win0;       /* advertise a zero window */
};

/* Ethernet + IPv4 + TCP from the peer, checksums by the reference code. */
static size_t build_seg(uint8_t *f, const struct seg *s)
{
	uint8_t *ip = f + 14, *th = ip + 20;
	unsigned hlen = 20 + s->optlen;
	uint8_t ph[12];
	uint32_t sum = 0;
	static uint8_t tmp[20480];

	memcpy(f, MAC_US, 6);
	memcpy(f + 6, MAC_PEER, 6);
	put16(f + 12, 0x0800);
	memset(ip, 0, 20);
	ip[0] = 0x45;
	put16(ip + 2, (uint16_t)(20 + hlen + s->len));
	put16(ip + 6, 0x4000);
	ip[8] = 64;
	ip[9] = 6;
	put32(ip + 12, IP_PEER);
	put32(ip + 16, IP_US);
	put16(ip + 10, ref_cksum(ip, 20));
	put16(th, s->sport ? s->sport : PEER_PORT);
	put16(th + 2, s->dport ? s->dport : OUR_PORT);
	put32(th + 4, s->seq);
	put32(th + 8, s->ack);
	th[12] = (uint8_t)((hlen / 4) << 4);
	th[13] = s->flags;
	put16(th + 14, s->win0 ? 0 : s->win ? s->win : 65535);
	put16(th + 16, 0);
	put16(th + 18, 0);
	if (s->optlen)
		memcpy(th + 20, s->opts, s->optlen);
	if (s->len)
		memcpy(th + hlen, s->data, s->len);
	/* Pseudo-header then the segment, summed by the reference code. */
	memcpy(ph, ip + 12, 8);
	ph[8] = 0;
	ph[9] = 6;
	put16(ph + 10, (uint16_t)(hlen + s->len));
	memcpy(tmp, ph, 12);
	memcpy(tmp + 12, th, hlen + s->len);
	sum = ref_cksum(tmp, 12 + hlen + s->len);
	put16(th + 16, (uint16_t)sum);
	return 14 + 20 + hlen + s->len;
}

static void inject(const struct seg *s)
{
	uint8_t f[4200];
	size_t len = build_seg(f, s);
	struct rte_mbuf *m = frame_copy(f, len);

	uiw_net_input(&fx_net, &m, 1, now_ns);
	uiw_tcp_run(T, now_ns);
	uiw_port_flush(&fx_port.port);
}

static void advance(uint64_t ns)
{
	uint64_t end = now_ns + ns;

	while (now_ns < end) {
		now_ns += 1 * MS;
		uiw_tcp_run(T, now_ns);
	}
	uiw_port_flush(&fx_port.port);
}

struct out {
	uint32_t seq, ack;
	uint8_t flags;
	uint16_t win;
	uint8_t opts[40];
	unsigned optlen;
	uint32_t len;
	uint8_t data[2048];
};

/* True when sent frame @p i has a right TCP checksum (pseudo-header and all), by the
 * reference code. */
static bool sent_sum_right(unsigned i)
{
	uint8_t f[2048], tmp[2100];
	unsigned tcplen;

	ck_assert_uint_ge(frame_bytes(fx_port.sent[i], f, sizeof(f)), 54);
	tcplen = get16(f + 16) - 20;
	memcpy(tmp, f + 26, 8);
	tmp[8] = 0;
	tmp[9] = 6;
	put16(tmp + 10, (uint16_t)tcplen);
	memcpy(tmp + 12, f + 34, tcplen);
	return ref_cksum(tmp, 12 + tcplen) == 0;
}

/* Parses sent frame @p i, checking its IPv4 and TCP checksums by the reference code. */
static void sent(unsigned i, struct out *o)
{
	uint8_t f[2048];
	size_t len;
	unsigned hlen, tcplen;

	ck_assert_uint_lt(i, fx_port.nsent);
	len = frame_bytes(fx_port.sent[i], f, sizeof(f));
	ck_assert_uint_ge(len, 54);
	ck_assert_uint_eq(get16(f + 12), 0x0800);
	ck_assert_uint_eq(f[23], 6);
	ck_assert_uint_eq(ref_cksum(f + 14, 20), 0);
	ck_assert_mem_eq(f, MAC_PEER, 6);
	tcplen = get16(f + 16) - 20;
	ck_assert(sent_sum_right(i));
	hlen = (f[46] >> 4) * 4u;
	o->seq = get32(f + 38);
	o->ack = get32(f + 42);
	o->flags = f[47];
	o->win = get16(f + 48);
	o->optlen = hlen - 20;
	memcpy(o->opts, f + 54, o->optlen);
	o->len = tcplen - hlen;
	memcpy(o->data, f + 34 + hlen, o->len);
}

/* The option of @p kind in @p o, or NULL. */
static const uint8_t *opt(const struct out *o, uint8_t kind)
{
	for (unsigned i = 0; i < o->optlen;) {
		if (o->opts[i] == 0)
			break;
		if (o->opts[i] == 1) {
			i++;
			continue;
		}
		if (o->opts[i] == kind)
			return &o->opts[i];
		i += o->opts[i + 1];
	}
	return NULL;
}

static const uint8_t syn_opts[] = {
	2, 4, 0x05, 0xb4,               /* MSS 1460 */
	4, 2,                           /* SACK permitted */
	8, 10, 0, 0, 0, 100, 0, 0, 0, 0, /* TS val 100 ecr 0 */
	1, 3, 3, 7,                     /* NOP, WS 7 */
};

#define PEER_ISN 1000000u

/* Listen, SYN with every option, SYN-ACK, ACK: an established passive connection. */
static struct out establish_passive(const uint8_t *opts, unsigned optlen)
{
	struct out o;
	uint8_t ts_ack[12] = { 1, 1, 8, 10, 0, 0, 0, 101 };

	ck_assert_int_eq(uiw_tcp_listen(T, OUR_PORT, 8, &ops, NULL), 0);
	inject(&(struct seg){ .seq = PEER_ISN, .flags = UIW_TCP_SYN, .opts = opts, .optlen = optlen });
	ck_assert_uint_eq(fx_port.nsent, 1);
	sent(0, &o);
	if (optlen == sizeof(syn_opts) && opt(&o, 8) != NULL)
		memcpy(ts_ack + 8, opt(&o, 8) + 2, 4);
	inject(&(struct seg){ .seq = PEER_ISN + 1, .ack = o.seq + 1, .flags = UIW_TCP_ACK,
			      .opts = ts_ack, .optlen = (optlen == sizeof(syn_opts)) ? 12 : 0 });
	ck_assert_ptr_nonnull(ev.accepted);
	ck_assert_int_eq(uiw_tcp_state(ev.accepted), UIW_TCP_ESTABLISHED);
	fake_port_clear(&fx_port);
	return o;
}

START_TEST(sequence_arithmetic_wraps)
{
	ck_assert(seq_lt(0xfffffff0u, 0x10u));
	ck_assert(seq_gt(0x10u, 0xfffffff0u));
	ck_assert(seq_le(5, 5) && seq_ge(5, 5));
	ck_assert(seq_lt(0x7fffffffu, 0x80000000u));
	ck_assert(seq_in(0x2, 0xfffffffeu, 0x5));
	ck_assert(!seq_in(0x5, 0xfffffffeu, 0x5));
	ck_assert_uint_eq(seq_max(0xffffffffu, 1), 1);
	ck_assert_uint_eq(seq_min(0xffffffffu, 1), 0xffffffffu);
}
END_TEST

/* Every prefix of a valid option block either parses or is refused; none crashes or
 * reads past its length (ASan: the block lives in an exact-size heap buffer). */
START_TEST(options_truncated_at_every_byte)
{
	unsigned cut = (unsigned)_i;
	uint8_t *p = malloc(cut ? cut : 1);
	struct tcp_opts o;
	int rc;

	memcpy(p, syn_opts, cut);
	rc = uiw_tcp_opts_parse(p, cut, true, &o);
	/* Cuts at an option boundary parse; cuts inside an option are refused. */
	if (cut == 0 || cut == 4 || cut == 6 || cut == 16 || cut == 17 || cut == 20)
		ck_assert_int_eq(rc, 0);
	else
		ck_assert_int_eq(rc, -EINVAL);
	free(p);
}
END_TEST

START_TEST(options_parsed)
{
	struct tcp_opts o;
	static const uint8_t sack[] = { 1, 1, 5, 18, 0, 0, 0, 10, 0, 0, 0, 20, 0, 0, 0, 30, 0, 0, 0, 40 };
	static const uint8_t big_ws[] = { 3, 3, 200, 0 };
	static const uint8_t unknown[] = { 30, 4, 1, 2, 2, 4, 1, 0 };

	ck_assert_int_eq(uiw_tcp_opts_parse(syn_opts, sizeof(syn_opts), true, &o), 0);
	ck_assert(o.has_mss && o.mss == 1460 && o.sack_ok && o.has_ts && o.tsval == 100 && o.has_ws);
	ck_assert_uint_eq(o.ws, 7);
	/* On a non-SYN, SYN-only options are ignored. */
	ck_assert_int_eq(uiw_tcp_opts_parse(syn_opts, sizeof(syn_opts), false, &o), 0);
	ck_assert(!o.has_mss && !o.sack_ok && !o.has_ws && o.has_ts);
	ck_assert_int_eq(uiw_tcp_opts_parse(sack, sizeof(sack), false, &o), 0);
	ck_assert_uint_eq(o.nsack, 2);
	ck_assert_uint_eq(o.sack[1][0], 30);
	ck_assert_uint_eq(o.sack[1][1], 40);
	/* RFC 7323 §2.3: a shift above 14 is used as 14. */
	ck_assert_int_eq(uiw_tcp_opts_parse(big_ws, sizeof(big_ws), true, &o), 0);
	ck_assert_uint_eq(o.ws, 14);
	/* Unknown kinds are skipped by their length. */
	ck_assert_int_eq(uiw_tcp_opts_parse(unknown, sizeof(unknown), true, &o), 0);
	ck_assert_uint_eq(o.mss, 0x100);
}
END_TEST

START_TEST(options_bad_lengths_refused)
{
	static const uint8_t zero[] = { 30, 0, 0, 0 };
	static const uint8_t one[] = { 30, 1, 0, 0 };
	static const uint8_t past[] = { 30, 9, 0, 0 };
	static const uint8_t mss3[] = { 2, 3, 5, 1 };
	static const uint8_t ts8[] = { 8, 8, 0, 0, 0, 0, 0, 0 };
	static const uint8_t sack7[] = { 5, 7, 0, 0, 0, 0, 0, 1 };
	struct tcp_opts o;

	ck_assert_int_eq(uiw_tcp_opts_parse(zero, sizeof(zero), true, &o), -EINVAL);
	ck_assert_int_eq(uiw_tcp_opts_parse(one, sizeof(one), true, &o), -EINVAL);
	ck_assert_int_eq(uiw_tcp_opts_parse(past, sizeof(past), true, &o), -EINVAL);
	ck_assert_int_eq(uiw_tcp_opts_parse(mss3, sizeof(mss3), true, &o), -EINVAL);
	ck_assert_int_eq(uiw_tcp_opts_parse(ts8, sizeof(ts8), false, &o), -EINVAL);
	ck_assert_int_eq(uiw_tcp_opts_parse(sack7, sizeof(sack7), false, &o), -EINVAL);
}
END_TEST

START_TEST(passive_open_with_all_options)
{
	struct out o;
	const uint8_t *p;

	ck_assert_int_eq(uiw_tcp_listen(T, OUR_PORT, 8, &ops, NULL), 0);
	inject(&(struct seg){ .seq = PEER_ISN, .flags = UIW_TCP_SYN, .opts = syn_opts,
			      .optlen = sizeof(syn_opts) });
	ck_assert_uint_eq(fx_port.nsent, 1);
	sent(0, &o);
	ck_assert_uint_eq(o.flags, UIW_TCP_SYN | UIW_TCP_ACK);
	ck_assert_uint_eq(o.ack, PEER_ISN + 1);
	ck_assert_uint_eq(o.len, 0);
	p = opt(&o, 2);
	ck_assert_ptr_nonnull(p);
	ck_assert_uint_eq(get16(p + 2), 1460);
	ck_assert_ptr_nonnull(opt(&o, 4));
	p = opt(&o, 8);
	ck_assert_ptr_nonnull(p);
	ck_assert_uint_eq(get32(p + 6), 100); /* TSecr echoes the peer's TSval */
	p = opt(&o, 3);
	ck_assert_ptr_nonnull(p);
	ck_assert_uint_gt(p[2], 0); /* 4 MiB of window needs a shift */
	ck_assert_uint_eq(o.optlen % 4, 0);
}
END_TEST

START_TEST(passive_open_without_options_uses_defaults)
{
	struct out o;

	ck_assert_int_eq(uiw_tcp_listen(T, OUR_PORT, 8, &ops, NULL), 0);
	inject(&(struct seg){ .seq = PEER_ISN, .flags = UIW_TCP_SYN });
	sent(0, &o);
	/* The peer offered nothing: we answer with MSS only (RFC 7323 §2.2, RFC 2018 §2). */
	ck_assert_ptr_nonnull(opt(&o, 2));
	ck_assert_ptr_null(opt(&o, 3));
	ck_assert_ptr_null(opt(&o, 4));
	ck_assert_ptr_null(opt(&o, 8));
	ck_assert_uint_eq(o.win, 65535); /* unscaled, capped */
	fake_port_clear(&fx_port);
	inject(&(struct seg){ .seq = PEER_ISN + 1, .ack = o.seq + 1, .flags = UIW_TCP_ACK });
	ck_assert_ptr_nonnull(ev.accepted);
	/* RFC 9293 §3.7.1: no MSS option means 536. */
	ck_assert_uint_eq(uiw_tcp_mss(ev.accepted), 536);
}
END_TEST

START_TEST(in_order_data_delivered_and_acked_every_second_segment)
{
	struct out syn = establish_passive(NULL, 0), o;
	uint8_t d[1000];

	for (unsigned i = 0; i < sizeof(d); i++)
		d[i] = (uint8_t)i;
	inject(&(struct seg){ .seq = PEER_ISN + 1, .ack = syn.seq + 1, .flags = UIW_TCP_ACK,
			      .data = d, .len = 500 });
	ck_assert_uint_eq(ev.ndata, 500);
	ck_assert_uint_eq(fx_port.nsent, 0); /* delayed */
	inject(&(struct seg){ .seq = PEER_ISN + 501, .ack = syn.seq + 1, .flags = UIW_TCP_ACK,
			      .data = d + 500, .len = 500 });
	ck_assert_uint_eq(ev.ndata, 1000);
	ck_assert_mem_eq(ev.data, d, 1000);
	ck_assert_uint_eq(fx_port.nsent, 1);
	sent(0, &o);
	ck_assert_uint_eq(o.ack, PEER_ISN + 1001);
	ck_assert_uint_eq(o.flags, UIW_TCP_ACK);
}
END_TEST

START_TEST(delayed_ack_sent_by_timer)
{
	struct out syn = establish_passive(NULL, 0), o;
	uint8_t d[10] = { 0 };

	inject(&(struct seg){ .seq = PEER_ISN + 1, .ack = syn.seq + 1, .flags = UIW_TCP_ACK,
			      .data = d, .len = 10 });
	ck_assert_uint_eq(fx_port.nsent, 0);
	advance(2 * MS);
	ck_assert_uint_eq(fx_port.nsent, 1);
	sent(0, &o);
	ck_assert_uint_eq(o.ack, PEER_ISN + 11);
}
END_TEST

START_TEST(out_of_order_data_sacked_then_filled)
{
	uint8_t opts[] = { 4, 2, 1, 1 }; /* SACK permitted */
	struct out syn = establish_passive(opts, sizeof(opts)), o;
	uint8_t d[300];
	const uint8_t *p;

	for (unsigned i = 0; i < sizeof(d); i++)
		d[i] = (uint8_t)(i * 3);
	inject(&(struct seg){ .seq = PEER_ISN + 101, .ack = syn.seq + 1, .flags = UIW_TCP_ACK,
			      .data = d + 100, .len = 200 });
	ck_assert_uint_eq(ev.ndata, 0);
	ck_assert_uint_eq(fx_port.nsent, 1); /* immediate duplicate ACK */
	sent(0, &o);
	ck_assert_uint_eq(o.ack, PEER_ISN + 1);
	p = opt(&o, 5);
	ck_assert_ptr_nonnull(p);
	ck_assert_uint_eq(p[1], 10);
	ck_assert_uint_eq(get32(p + 2), PEER_ISN + 101);
	ck_assert_uint_eq(get32(p + 6), PEER_ISN + 301);
	inject(&(struct seg){ .seq = PEER_ISN + 1, .ack = syn.seq + 1, .flags = UIW_TCP_ACK,
			      .data = d, .len = 100 });
	ck_assert_uint_eq(ev.ndata, 300);
	ck_assert_mem_eq(ev.data, d, 300);
	ck_assert_uint_eq(fx_port.nsent, 2); /* hole filled: ACK at once */
	sent(1, &o);
	ck_assert_uint_eq(o.ack, PEER_ISN + 301);
	ck_assert_ptr_null(opt(&o, 5));
}
END_TEST

/* The SACK blocks of the last ACK sent, as [left, right) pairs; @return how many. */
static unsigned last_sack_blocks(uint32_t b[][2])
{
	struct out o;
	const uint8_t *p;
	unsigned n;

	sent(fx_port.nsent - 1, &o);
	p = opt(&o, 5);
	if (p == NULL)
		return 0;
	n = (p[1] - 2u) / 8u;
	for (unsigned i = 0; i < n; i++) {
		b[i][0] = get32(p + 2 + 8 * i);
		b[i][1] = get32(p + 6 + 8 * i);
	}
	return n;
}

/* RFC 2018 §4: the first block holds the segment that triggered the ACK, and the others
 * repeat the most recently reported blocks, so every block reaches the sender in several
 * ACKs even when some are lost. Always reporting the lowest blocks instead hid every hole
 * past the third from a Linux sender, which then took them for lost (a fifth of a
 * transfer at 5% loss was sent twice, and its retransmission timer backed off to 120 s). */
START_TEST(sack_blocks_repeat_the_most_recent)
{
	uint8_t opts[] = { 4, 2, 1, 1 }; /* SACK permitted, no timestamps: 4 blocks fit */
	struct out syn = establish_passive(opts, sizeof(opts));
	uint8_t d[100] = { 0 };
	uint32_t b[4][2];
	const unsigned nblk = 24;

	/* Blocks of 100 octets with 100-octet holes before each, sent in sequence order. */
	for (unsigned k = 0; k < nblk; k++) {
		uint32_t seq = PEER_ISN + 101 + 200 * k;

		inject(&(struct seg){ .seq = seq, .ack = syn.seq + 1, .flags = UIW_TCP_ACK,
				      .data = d, .len = 100 });
		ck_assert_uint_eq(last_sack_blocks(b), k + 1 < 4 ? k + 1 : 4);
		for (unsigned j = 0; j < (k + 1 < 4 ? k + 1 : 4); j++) {
			ck_assert_uint_eq(b[j][0], seq - 200 * j);       /* newest first */
			ck_assert_uint_eq(b[j][1], seq - 200 * j + 100);
		}
	}
	/* A segment that grows an old block puts it first; the recent ones follow. */
	inject(&(struct seg){ .seq = PEER_ISN + 101 + 200 * 5 + 100, .ack = syn.seq + 1,
			      .flags = UIW_TCP_ACK, .data = d, .len = 50 });
	ck_assert_uint_eq(last_sack_blocks(b), 4);
	ck_assert_uint_eq(b[0][0], PEER_ISN + 101 + 200 * 5);
	ck_assert_uint_eq(b[0][1], PEER_ISN + 101 + 200 * 5 + 150);
	for (unsigned j = 1; j < 4; j++)
		ck_assert_uint_eq(b[j][0], PEER_ISN + 101 + 200 * (nblk - j));
	/* Filling the hole between two blocks joins them: one block, reported once. */
	inject(&(struct seg){ .seq = PEER_ISN + 101 + 200 * (nblk - 2) + 100, .ack = syn.seq + 1,
			      .flags = UIW_TCP_ACK, .data = d, .len = 100 });
	ck_assert_uint_eq(last_sack_blocks(b), 4);
	ck_assert_uint_eq(b[0][0], PEER_ISN + 101 + 200 * (nblk - 2));
	ck_assert_uint_eq(b[0][1], PEER_ISN + 101 + 200 * (nblk - 1) + 100);
	ck_assert_uint_eq(b[1][0], PEER_ISN + 101 + 200 * 5);
	ck_assert_uint_eq(b[2][0], PEER_ISN + 101 + 200 * (nblk - 3));
	/* The fourth was never among the recent ones: any other block may fill the slot,
	 * but never one already listed. */
	for (unsigned j = 0; j < 3; j++)
		ck_assert_uint_ne(b[3][0], b[j][0]);
	/* Blocks the cumulative ACK has passed are not reported. */
	inject(&(struct seg){ .seq = PEER_ISN + 1, .ack = syn.seq + 1, .flags = UIW_TCP_ACK,
			      .data = d, .len = 100 });
	ck_assert_uint_eq(ev.ndata, 200);
	ck_assert_uint_eq(last_sack_blocks(b), 4);
	for (unsigned j = 0; j < 4; j++)
		ck_assert(b[j][0] > PEER_ISN + 201);
}
END_TEST

/* RFC 2883: a segment that came twice is reported in the next ACK's first SACK block (a
 * D-SACK), once: the sender learns its retransmission was needless. */
START_TEST(duplicate_segment_reported_by_dsack)
{
	uint8_t opts[] = { 4, 2, 1, 1 };
	struct out syn = establish_passive(opts, sizeof(opts));
	uint8_t d[100] = { 0 };
	uint32_t b[4][2];

	inject(&(struct seg){ .seq = PEER_ISN + 1, .ack = syn.seq + 1, .flags = UIW_TCP_ACK,
			      .data = d, .len = 100 });
	fake_port_clear(&fx_port);
	inject(&(struct seg){ .seq = PEER_ISN + 1, .ack = syn.seq + 1, .flags = UIW_TCP_ACK,
			      .data = d, .len = 100 });
	ck_assert_uint_eq(fx_port.nsent, 1);
	ck_assert_uint_eq(last_sack_blocks(b), 1);
	ck_assert_uint_eq(b[0][0], PEER_ISN + 1);
	ck_assert_uint_eq(b[0][1], PEER_ISN + 101);
	/* With a hole open too: the D-SACK first, then the block beyond the hole. */
	inject(&(struct seg){ .seq = PEER_ISN + 201, .ack = syn.seq + 1, .flags = UIW_TCP_ACK,
			      .data = d, .len = 100 });
	inject(&(struct seg){ .seq = PEER_ISN + 51, .ack = syn.seq + 1, .flags = UIW_TCP_ACK,
			      .data = d, .len = 50 });
	ck_assert_uint_eq(last_sack_blocks(b), 2);
	ck_assert_uint_eq(b[0][0], PEER_ISN + 51);
	ck_assert_uint_eq(b[0][1], PEER_ISN + 101);
	ck_assert_uint_eq(b[1][0], PEER_ISN + 201);
	/* Reported once: the next ACK has only the hole's block. */
	inject(&(struct seg){ .seq = PEER_ISN + 301, .ack = syn.seq + 1, .flags = UIW_TCP_ACK,
			      .data = d, .len = 100 });
	ck_assert_uint_eq(last_sack_blocks(b), 1);
	ck_assert_uint_eq(b[0][0], PEER_ISN + 201);
}
END_TEST

START_TEST(overlapping_retransmission_delivers_only_new_bytes)
{
	struct out syn = establish_passive(NULL, 0);
	uint8_t d[200];

	for (unsigned i = 0; i < sizeof(d); i++)
		d[i] = (uint8_t)(i + 7);
	inject(&(struct seg){ .seq = PEER_ISN + 1, .ack = syn.seq + 1, .flags = UIW_TCP_ACK,
			      .data = d, .len = 120 });
	inject(&(struct seg){ .seq = PEER_ISN + 51, .ack = syn.seq + 1, .flags = UIW_TCP_ACK,
			      .data = d + 50, .len = 150 });
	ck_assert_uint_eq(ev.ndata, 200);
	ck_assert_mem_eq(ev.data, d, 200);
}
END_TEST

START_TEST(rst_in_window_gets_challenge_ack)
{
	struct out syn = establish_passive(NULL, 0), o;

	/* RFC 5961 §3.2: in the window but not exactly RCV.NXT. */
	inject(&(struct seg){ .seq = PEER_ISN + 100, .flags = UIW_TCP_RST });
	ck_assert_uint_eq(ev.closed, 0);
	ck_assert_uint_eq(fx_port.nsent, 1);
	sent(0, &o);
	ck_assert_uint_eq(o.flags, UIW_TCP_ACK);
	ck_assert_uint_eq(o.ack, PEER_ISN + 1);
	ck_assert_uint_eq(o.seq, syn.seq + 1);
	ck_assert_uint_eq(uiw_tcp_counters(T)[UIW_TCP_C_challenge_ack], 1);
	/* Exactly RCV.NXT: the connection is reset. */
	inject(&(struct seg){ .seq = PEER_ISN + 1, .flags = UIW_TCP_RST });
	ck_assert_uint_eq(ev.closed, 1);
	ck_assert_int_eq(ev.closed_err, -ECONNRESET);
	ck_assert_uint_eq(uiw_tcp_conn_count(T), 0);
}
END_TEST

START_TEST(rst_outside_window_ignored)
{
	establish_passive(NULL, 0);
	inject(&(struct seg){ .seq = PEER_ISN - 100000, .flags = UIW_TCP_RST });
	ck_assert_uint_eq(ev.closed, 0);
	ck_assert_uint_eq(fx_port.nsent, 0);
	ck_assert_uint_eq(uiw_tcp_counters(T)[UIW_TCP_C_drop_rst_invalid], 1);
}
END_TEST

START_TEST(syn_on_established_gets_challenge_ack)
{
	struct out syn = establish_passive(NULL, 0), o;

	inject(&(struct seg){ .seq = PEER_ISN + 1, .flags = UIW_TCP_SYN });
	ck_assert_uint_eq(fx_port.nsent, 1);
	sent(0, &o);
	ck_assert_uint_eq(o.flags, UIW_TCP_ACK);
	ck_assert_uint_eq(o.seq, syn.seq + 1);
	ck_assert_int_eq(uiw_tcp_state(ev.accepted), UIW_TCP_ESTABLISHED);
}
END_TEST

/* RFC 5961 §10: one connection's challenge ACKs are limited to one per half second (an
 * off-path host flooding guessed RSTs learns nothing from a shared count); after the gap,
 * the next one goes out. */
START_TEST(challenge_acks_limited_per_connection)
{
	establish_passive(NULL, 0);
	for (unsigned k = 0; k < 5; k++)
		inject(&(struct seg){ .seq = PEER_ISN + 100 + k, .flags = UIW_TCP_RST });
	ck_assert_uint_eq(fx_port.nsent, 1);
	ck_assert_uint_eq(uiw_tcp_counters(T)[UIW_TCP_C_challenge_ack], 1);
	ck_assert_uint_eq(uiw_tcp_counters(T)[UIW_TCP_C_challenge_ack_conn_limited], 4);
	advance(600 * MS);
	fake_port_clear(&fx_port);
	inject(&(struct seg){ .seq = PEER_ISN + 1, .flags = UIW_TCP_SYN });
	ck_assert_uint_eq(fx_port.nsent, 1);
	ck_assert_uint_eq(uiw_tcp_counters(T)[UIW_TCP_C_challenge_ack], 2);
	ck_assert_uint_eq(ev.closed, 0);
}
END_TEST

/* RFC 6056 §3.3.3: towards one destination the ephemeral ports follow one counter; towards
 * different destination ports they start at unrelated offsets (not a sequence a peer can
 * extrapolate to other connections). */
START_TEST(ephemeral_ports_keyed_by_destination)
{
	uint16_t same[4], other[8];
	struct uiw_tcp_conn *c;
	unsigned consecutive = 0;

	for (unsigned i = 0; i < 4; i++) {
		ck_assert_int_eq(uiw_tcp_connect(T, IP_PEER, 80, &ops, NULL, now_ns, &c), 0);
		same[i] = c->lport;
		ck_assert_uint_ge(same[i], 49152);
	}
	for (unsigned i = 1; i < 4; i++)
		ck_assert_uint_eq((uint16_t)(same[i] - same[i - 1]) % 16384, 1);
	for (unsigned i = 0; i < 8; i++) {
		ck_assert_int_eq(uiw_tcp_connect(T, IP_PEER, (uint16_t)(1000 + i), &ops, NULL, now_ns, &c), 0);
		other[i] = c->lport;
		ck_assert_uint_ge(other[i], 49152);
	}
	for (unsigned i = 1; i < 8; i++)
		consecutive += (uint16_t)(other[i] - other[i - 1]) == 1;
	ck_assert_uint_lt(consecutive, 7);
}
END_TEST

/* Engine 1 of 3 opens from its own share of the ephemeral ports only, so two engines of
 * one instance never open the same 4-tuple. */
START_TEST(engine_opens_from_its_share_of_ports)
{
	struct uiw_tcp_conn *c;
	unsigned seen[3] = { 0 };

	uiw_tcp_set_engine(T, 1, 3);
	for (unsigned i = 0; i < 64; i++) {
		uint16_t rport = (uint16_t)(2000 + i % 4);

		ck_assert_int_eq(uiw_tcp_connect(T, IP_PEER, rport, &ops, NULL, now_ns, &c), 0);
		ck_assert_uint_ge(c->lport, 49152);
		/* The tuple names engine 1, from either end. */
		ck_assert_uint_eq(tcp_engine_of(IP_US, c->lport, IP_PEER, rport, 3), 1);
		ck_assert_uint_eq(tcp_engine_of(IP_PEER, rport, IP_US, c->lport, 3), 1);
	}
	/* And the tuples of one listener's peers spread over all three engines. */
	for (uint16_t p = 40000; p < 40300; p++)
		seen[tcp_engine_of(IP_US, OUR_PORT, IP_PEER, p, 3)]++;
	for (unsigned e = 0; e < 3; e++)
		ck_assert_uint_gt(seen[e], 60);
}
END_TEST

/* A second engine's lower half on the fixture's port, for the hand-off tests. */
static struct uiw_net other_net;

static void two_engines(void)
{
	struct uiw_net *nets[2] = { &fx_net, &other_net };
	struct uiw_config cfg;

	uiw_config_defaults(&cfg);
	cfg.ip = IP_US;
	cfg.prefix_len = 24;
	uiw_net_init(&other_net, fx_net.port, &cfg);
	ck_assert_int_eq(uiw_net_set_engines(nets, 2), 0);
	uiw_tcp_set_engine(T, 0, 2);
}

/* A peer port from @p from on whose connection to OUR_PORT engine @p e of two owns. */
static uint16_t peer_port_for(unsigned e, uint16_t from)
{
	for (uint16_t p = from;; p++)
		if (tcp_engine_of(IP_US, OUR_PORT, IP_PEER, p, 2) == e)
			return p;
}

/* With two engines, a SYN that came in on engine 0's queue for a tuple engine 1 owns goes
 * to engine 1's ring untouched (no answer, no connection here); one engine 0 owns is
 * answered; a segment handed in from engine 1 is taken as if it came in here. */
START_TEST(segment_for_another_engine_is_handed)
{
	struct rte_mbuf *m;
	uint8_t f[128];
	struct out o;

	two_engines();
	ck_assert_int_eq(uiw_tcp_listen(T, OUR_PORT, 8, &ops, NULL), 0);
	inject(&(struct seg){ .sport = peer_port_for(1, PEER_PORT), .seq = PEER_ISN, .flags = UIW_TCP_SYN });
	ck_assert_uint_eq(fx_port.nsent, 0);
	ck_assert_uint_eq(uiw_tcp_conn_count(T), 0);
	ck_assert_uint_eq(rte_ring_count(other_net.inbox), 1);
	ck_assert_uint_eq(fx_count(UIW_NET_C_hand_out), 1);
	inject(&(struct seg){ .sport = peer_port_for(0, PEER_PORT), .seq = PEER_ISN, .flags = UIW_TCP_SYN });
	sent(0, &o);
	ck_assert_uint_eq(o.flags, UIW_TCP_SYN | UIW_TCP_ACK);
	fake_port_clear(&fx_port);
	/* Engine 1 got another of engine 0's: engine 0 answers it from its ring. */
	m = frame_copy(f, build_seg(f, &(struct seg){
		.sport = peer_port_for(0, (uint16_t)(peer_port_for(0, PEER_PORT) + 1)),
		.seq = PEER_ISN, .flags = UIW_TCP_SYN }));
	ck_assert(uiw_net_hand(&other_net, 0, m));
	ck_assert_uint_eq(uiw_net_take_handed(&fx_net, now_ns), 1);
	uiw_tcp_run(T, now_ns);
	uiw_port_flush(&fx_port.port);
	ck_assert_uint_eq(fx_count(UIW_NET_C_hand_in), 1);
	sent(0, &o);
	ck_assert_uint_eq(o.flags, UIW_TCP_SYN | UIW_TCP_ACK);
	ck_assert_uint_eq(uiw_tcp_conn_count(T), 2);
	uiw_net_fini(&other_net);
}
END_TEST

/* An RSS key and a table of 128 entries alternating between queues 0 and 1 (free()). */
static struct uiw_port_rss *test_rss(void)
{
	struct uiw_port_rss *rss = calloc(1, sizeof(*rss) + 128 * sizeof(rss->reta[0]));

	ck_assert_ptr_nonnull(rss);
	for (unsigned i = 0; i < sizeof(rss->key); i++)
		rss->key[i] = (uint8_t)(0x6d + 37 * i);
	rss->reta_size = 128;
	for (unsigned i = 0; i < 128; i++)
		rss->reta[i] = (uint16_t)(i % 2);
	return rss;
}

/* On a port whose RSS key and table are known, engine 0 of 2 opens from source ports whose
 * answers the NIC puts on queue 0; and no segment is handed over (its queue is its
 * engine's), whatever the tuple hash of the PMDs without RSS says. */
START_TEST(engine_opens_by_the_nics_rss)
{
	struct uiw_port_rss *rss = test_rss();
	struct uiw_tcp_conn *c;
	struct out o;
	uint16_t p = PEER_PORT;

	two_engines();
	fx_port.port.rss = rss;
	for (unsigned i = 0; i < 32; i++) {
		uint16_t rport = (uint16_t)(2000 + i % 4);

		ck_assert_int_eq(uiw_tcp_connect(T, IP_PEER, rport, &ops, NULL, now_ns, &c), 0);
		ck_assert_uint_eq(uiw_port_rss_queue(rss, IP_PEER, rport, IP_US, c->lport), 0);
	}
	ck_assert_int_eq(uiw_tcp_listen(T, OUR_PORT, 8, &ops, NULL), 0);
	uiw_tcp_run(T, now_ns);
	uiw_port_flush(&fx_port.port);
	fake_port_clear(&fx_port);
	for (unsigned i = 0; i < 4; i++) {
		p = peer_port_for(1, (uint16_t)(p + 1));
		inject(&(struct seg){ .sport = p, .seq = PEER_ISN, .flags = UIW_TCP_SYN });
		sent(i, &o);
		ck_assert_uint_eq(o.flags, UIW_TCP_SYN | UIW_TCP_ACK);
	}
	ck_assert_uint_eq(fx_count(UIW_NET_C_hand_out), 0);
	fx_port.port.rss = NULL;
	free(rss);
	uiw_net_fini(&other_net);
}
END_TEST

/* On a port whose RSS is known, a segment that finds no connection on the engine whose
 * queue it came in on, while the hash read back names the other engine, is handed there
 * (the NIC hashed otherwise than its key and table say: a table another program changed).
 * Answered with a RST, it ended the connection the other engine opened; the SYN-ACKs of
 * the guest's active opens in the virtio-rss boot did so under a deliberately wrong hash.
 * A new connection's SYN is still taken where it came in, and a segment this engine owns
 * with no connection is still answered with a RST. */
START_TEST(stray_segment_on_an_rss_port_goes_to_its_engine)
{
	struct uiw_port_rss *rss = test_rss();
	uint16_t mine = PEER_PORT, theirs = PEER_PORT;
	struct out o;

	two_engines();
	fx_port.port.rss = rss;
	while (uiw_port_rss_queue(rss, IP_PEER, 2000, IP_US, mine) != 0)
		mine++;
	while (uiw_port_rss_queue(rss, IP_PEER, 2000, IP_US, theirs) != 1)
		theirs++;
	inject(&(struct seg){ .sport = 2000, .dport = theirs, .seq = PEER_ISN, .ack = 77,
			      .flags = UIW_TCP_SYN | UIW_TCP_ACK });
	ck_assert_uint_eq(fx_port.nsent, 0);
	ck_assert_uint_eq(rte_ring_count(other_net.inbox), 1);
	ck_assert_uint_eq(fx_count(UIW_NET_C_hand_out), 1);
	ck_assert_uint_eq(uiw_tcp_counters(T)[UIW_TCP_C_drop_no_conn], 0);
	inject(&(struct seg){ .sport = 2000, .dport = mine, .seq = PEER_ISN, .ack = 77,
			      .flags = UIW_TCP_ACK });
	sent(0, &o);
	ck_assert_uint_eq(o.flags, UIW_TCP_RST);
	ck_assert_uint_eq(fx_count(UIW_NET_C_hand_out), 1);
	fake_port_clear(&fx_port);
	ck_assert_int_eq(uiw_tcp_listen(T, theirs, 8, &ops, NULL), 0);
	inject(&(struct seg){ .sport = 2000, .dport = theirs, .seq = PEER_ISN, .flags = UIW_TCP_SYN });
	sent(0, &o);
	ck_assert_uint_eq(o.flags, UIW_TCP_SYN | UIW_TCP_ACK);
	ck_assert_uint_eq(fx_count(UIW_NET_C_hand_out), 1);
	fx_port.port.rss = NULL;
	free(rss);
	uiw_net_fini(&other_net);
}
END_TEST

/* Every engine learns from an ARP packet any of them received; only the one that got it
 * answers. */
START_TEST(arp_shared_with_the_other_engines)
{
	uint8_t f[64];
	size_t len;

	two_engines();
	len = build_arp(f, MAC_BCAST, 1, MAC_PEER, IP_PEER + 5, MAC_ZERO, IP_US);
	fx_input(frame_copy(f, len), now_ns);
	ck_assert_uint_eq(fx_port.nsent, 1);   /* engine 0's answer */
	ck_assert_uint_eq(rte_ring_count(other_net.inbox), 1);
	ck_assert_uint_eq(uiw_net_take_handed(&other_net, now_ns), 1);
	uiw_port_flush(&fx_port.port);
	ck_assert_uint_eq(fx_port.nsent, 1);   /* engine 1 learnt and did not answer */
	ck_assert_uint_eq(other_net.counters[UIW_NET_C_arp_shared], 1);
	ck_assert_uint_eq(other_net.counters[UIW_NET_C_arp_request_answered], 0);
	ck_assert_int_eq(uiw_net_resolve(&other_net, IP_PEER + 5, now_ns), 1);
	uiw_net_fini(&other_net);
}
END_TEST

/* Out-of-order one-octet segments (one mbuf each) from two connections: the first may hold
 * at most a quarter of the pool, the second then only its own share; the stack-wide hold
 * never passes half the pool, and all of it comes back when the connections go. */
START_TEST(ooo_held_within_the_receive_budget)
{
	struct out syn = establish_passive(NULL, 0), o;
	struct uiw_tcp_conn *a = ev.accepted, *b;
	uint8_t one = 0x5a;

	for (uint32_t k = 0; k < 1500; k++) {
		inject(&(struct seg){ .seq = PEER_ISN + 2 + 2 * k, .ack = syn.seq + 1,
				      .flags = UIW_TCP_ACK, .data = &one, .len = 1 });
		fake_port_clear(&fx_port);
	}
	ck_assert_uint_le(a->ooo_mbufs, T->rx_mbufs_soft);
	ck_assert_uint_gt(a->ooo_mbufs, TCP_RX_SHARE);
	ck_assert_uint_gt(uiw_tcp_counters(T)[UIW_TCP_C_drop_rx_budget], 0);
	inject(&(struct seg){ .sport = PEER_PORT + 1, .seq = PEER_ISN, .flags = UIW_TCP_SYN });
	sent(0, &o);
	inject(&(struct seg){ .sport = PEER_PORT + 1, .seq = PEER_ISN + 1, .ack = o.seq + 1,
			      .flags = UIW_TCP_ACK });
	b = ev.accepted;
	ck_assert_ptr_ne(a, b);
	fake_port_clear(&fx_port);
	for (uint32_t k = 0; k < 300; k++) {
		inject(&(struct seg){ .sport = PEER_PORT + 1, .seq = PEER_ISN + 2 + 2 * k,
				      .ack = o.seq + 1, .flags = UIW_TCP_ACK, .data = &one, .len = 1 });
		fake_port_clear(&fx_port);
	}
	ck_assert_uint_eq(b->ooo_mbufs, TCP_RX_SHARE);
	ck_assert_uint_le(T->rx_mbufs, T->rx_mbufs_hard);
	ck_assert_uint_eq(T->rx_mbufs, a->ooo_mbufs + b->ooo_mbufs);
	/* The peer resets both: nothing is held any more. */
	inject(&(struct seg){ .seq = PEER_ISN + 1, .flags = UIW_TCP_RST });
	inject(&(struct seg){ .sport = PEER_PORT + 1, .seq = PEER_ISN + 1, .flags = UIW_TCP_RST });
	ck_assert_uint_eq(uiw_tcp_conn_count(T), 0);
	ck_assert_uint_eq(T->rx_mbufs, 0);
}
END_TEST

/* A second connection accepted (from PEER_PORT + 1) whose peer keeps its window shut. */
static struct uiw_tcp_conn *accept_shut_window(struct uiw_tcp_conn *first)
{
	struct out o;

	inject(&(struct seg){ .sport = PEER_PORT + 1, .seq = PEER_ISN, .flags = UIW_TCP_SYN });
	sent(fx_port.nsent - 1, &o);
	inject(&(struct seg){ .sport = PEER_PORT + 1, .seq = PEER_ISN + 1, .ack = o.seq + 1,
			      .flags = UIW_TCP_ACK, .win0 = true });
	ck_assert_ptr_ne(ev.accepted, first);
	return ev.accepted;
}

/* uiw_tcp_tx_room() is the edge of uiw_tcp_tx_fits(): every count from one up to it fits,
 * none past it. */
static void tx_room_is_fits_edge(const struct uiw_tcp_conn *c)
{
	uint32_t room = uiw_tcp_tx_room(c);

	for (uint32_t more = 1; more <= T->sq_pool_max + 2; more++)
		ck_assert_msg(uiw_tcp_tx_fits(c, more) == (more <= room), "more %u room %u",
			      more, room);
}

/* Two connections whose peers keep their windows shut, each sent one-octet mbufs until TCP
 * refuses: the first, alone, may queue its share (TCP_TX_SHARE) or up to the soft limit,
 * whichever is more, within the hard limit; the second still its own share (its half of
 * the soft limit, at most TCP_TX_SHARE) after that (before, one such connection could
 * take the engine's whole send allowance). */
START_TEST(send_queues_within_their_budget)
{
	struct out syn = establish_passive(NULL, 0);
	struct uiw_tcp_conn *a = ev.accepted, *b;
	unsigned na = 0, nb = 0;

	inject(&(struct seg){ .seq = PEER_ISN + 1, .ack = syn.seq + 1, .flags = UIW_TCP_ACK, .win0 = true });
	while (uiw_tcp_send(a, frame_copy("x", 1), 0) == 0)
		if (++na % 16 == 0)
			tx_room_is_fits_edge(a);
	tx_room_is_fits_edge(a);
	b = accept_shut_window(a);
	ck_assert_uint_gt(uiw_tcp_send_space(b), 0);
	while (uiw_tcp_send(b, frame_copy("y", 1), 0) == 0)
		if (++nb % 16 == 0)
			tx_room_is_fits_edge(b);
	tx_room_is_fits_edge(a);
	tx_room_is_fits_edge(b);
	ck_assert_uint_eq(na, u32_min(T->sq_mbufs_max, u32_max(TCP_TX_SHARE, T->sq_mbufs_soft)));
	ck_assert_uint_eq(T->tx_share, u32_min(TCP_TX_SHARE, T->sq_mbufs_soft / 2));
	ck_assert_uint_gt(nb, 0);
	ck_assert_uint_eq(nb, T->tx_share);
	ck_assert_uint_eq(uiw_tcp_send_space(b), 0);
	ck_assert_uint_le(T->sq_mbufs, T->sq_mbufs_max);
	fake_port_clear(&fx_port);
}
END_TEST

/* The share is split among the connections that send, not all that exist: beside one
 * that sends nothing (perftest's -R control connection, an MPI provider's), a connection
 * queues its whole TCP_TX_SHARE (it had half the soft limit, and half as much in flight).
 * Once the other sends too, each has its half of the soft limit; once the other's queue
 * empties, the whole share again. A first send refused leaves the count as it was. */
START_TEST(send_share_split_among_senders)
{
	struct out syn = establish_passive(NULL, 0);
	struct uiw_tcp_conn *a = ev.accepted, *b;
	struct uiw_tcp_gauges g;
	unsigned na = 0, nb = 0;

	inject(&(struct seg){ .seq = PEER_ISN + 1, .ack = syn.seq + 1, .flags = UIW_TCP_ACK, .win0 = true });
	b = accept_shut_window(a);
	ck_assert_uint_eq(T->nconns, 2);
	ck_assert_uint_eq(T->nsenders, 0);
	while (uiw_tcp_send(a, frame_copy("x", 1), 0) == 0)
		na++;
	ck_assert_uint_eq(T->nsenders, 1);
	ck_assert_uint_eq(na, TCP_TX_SHARE);
	while (uiw_tcp_send(b, frame_copy("y", 1), 0) == 0)
		nb++;
	uiw_tcp_gauges(T, &g);
	ck_assert_uint_eq(g.senders, 2);
	ck_assert_uint_eq(T->tx_share, T->sq_mbufs_soft / 2);
	ck_assert_uint_eq(nb, T->tx_share);
	ck_assert_int_eq(uiw_tcp_send(a, frame_copy("x", 1), 0), -ENOBUFS);   /* past its share */
	uiw_tcp_sndq_clear(b);
	ck_assert_uint_eq(T->nsenders, 1);
	ck_assert_uint_eq(T->tx_share, TCP_TX_SHARE);
	T->sq_pool_max = T->sq_mbufs;   /* nothing more fits */
	ck_assert_int_eq(uiw_tcp_send(b, frame_copy("y", 1), 0), -ENOBUFS);
	ck_assert_uint_eq(T->nsenders, 1);
	ck_assert_uint_eq(T->tx_share, TCP_TX_SHARE);
	uiw_tcp_sndq_clear(a);
	ck_assert_uint_eq(T->nsenders, 0);
	fake_port_clear(&fx_port);
}
END_TEST

/* tcp_sq_mbufs bounds the send budget below the pool's share (a size for the caches):
 * max at the key, soft at a third of it; a key above the pool's share leaves the pool's
 * quarters; engines split the pool's part but each keeps the whole key. */
START_TEST(send_budget_capped_by_key)
{
	struct uiw_config cfg;
	struct uiw_tcp *t2;
	unsigned pool = test_pool()->size;

	ck_assert_uint_gt(pool * 3 / 4, 384);   /* the default key binds on this pool */
	ck_assert_uint_eq(T->sq_mbufs_max, 384);
	ck_assert_uint_eq(T->sq_mbufs_soft, 128);
	uiw_config_defaults(&cfg);
	cfg.ip = IP_US;
	cfg.prefix_len = 24;
	cfg.tcp_max_conns = 4;
	cfg.tcp_sq_mbufs = 1u << 20;
	ck_assert_int_eq(uiw_tcp_create(&t2, &fx_net, &cfg), 0);
	ck_assert_uint_eq(t2->sq_mbufs_max, pool * 3 / 4);
	ck_assert_uint_eq(t2->sq_mbufs_soft, pool / 4);
	uiw_tcp_set_engine(t2, 1, 4);
	ck_assert_uint_eq(t2->sq_mbufs_max, pool * 3 / 4 / 4);
	ck_assert_uint_eq(t2->sq_mbufs_soft, pool / 4 / 4);
	uiw_tcp_destroy(t2);
	cfg.tcp_sq_mbufs = 600;
	ck_assert_int_eq(uiw_tcp_create(&t2, &fx_net, &cfg), 0);
	uiw_tcp_set_engine(t2, 1, 2);
	ck_assert_uint_eq(t2->sq_mbufs_max, 600);
	ck_assert_uint_eq(t2->sq_mbufs_soft, 200);
	ck_assert_uint_eq(t2->tx_share_max, TCP_TX_SHARE);   /* 2 KiB mbufs: the count binds */
	ck_assert_uint_eq(t2->tx_share, TCP_TX_SHARE);
	uiw_tcp_destroy(t2);
}
END_TEST

/* On a pool of jumbo mbufs (MTU 9000) a connection's share is what TCP_TX_SHARE_BYTES
 * holds of them, not 256 (2.3 MB, past a core's L2); one sending alone takes that much. */
START_TEST(send_share_in_octets_of_large_mbufs)
{
	struct rte_mempool *big = rte_pktmbuf_pool_create("tcp_test_jumbo", 1023, 0, 0,
							  RTE_PKTMBUF_HEADROOM + 9018, SOCKET_ID_ANY);
	struct rte_mempool *own = fx_port.port.pool;
	struct uiw_config cfg;
	struct uiw_tcp *t2;
	uint32_t room;

	ck_assert_ptr_nonnull(big);
	room = rte_pktmbuf_data_room_size(big);
	uiw_config_defaults(&cfg);
	cfg.ip = IP_US;
	cfg.prefix_len = 24;
	cfg.tcp_max_conns = 4;
	fx_port.port.pool = big;
	ck_assert_int_eq(uiw_tcp_create(&t2, &fx_net, &cfg), 0);
	fx_port.port.pool = own;
	ck_assert_uint_eq(t2->tx_share_max, TCP_TX_SHARE_BYTES / room);
	ck_assert_uint_lt(t2->tx_share_max, TCP_TX_SHARE);
	ck_assert_uint_eq(t2->tx_share, t2->tx_share_max);
	ck_assert_uint_le((uint64_t)t2->tx_share * room, TCP_TX_SHARE_BYTES);
	uiw_tcp_destroy(t2);
	rte_mempool_free(big);
}
END_TEST

/* A control message (MPA's Request or Reply) is taken while its connection's queue is
 * empty even when another connection's stalled data holds the engine's whole budget; only
 * one at a time, and never past the pool's three quarters. */
START_TEST(ctrl_message_past_the_budget)
{
	struct out syn = establish_passive(NULL, 0);
	struct uiw_tcp_conn *a = ev.accepted, *b;
	unsigned na = 0;

	T->sq_mbufs_max = 96;   /* as tcp_sq_mbufs=96 would make it */
	T->sq_mbufs_soft = 32;
	/* a's peer opens its window and acknowledges nothing yet: a queue that moves (one
	 * whose peer keeps its window shut would not hold the budget, see below). */
	inject(&(struct seg){ .seq = PEER_ISN + 1, .ack = syn.seq + 1, .flags = UIW_TCP_ACK });
	while (uiw_tcp_send(a, frame_copy("x", 1), 0) == 0)
		na++;
	ck_assert_uint_eq(na, 96);
	uiw_tcp_run(T, now_ns);   /* a's first segments out of the way of b's handshake */
	uiw_port_flush(&fx_port.port);
	fake_port_clear(&fx_port);
	b = accept_shut_window(a);
	ck_assert_int_eq(uiw_tcp_send(b, frame_copy("y", 1), UIW_TCP_SEND_RECORD), -ENOBUFS);
	ck_assert_int_eq(uiw_tcp_send(b, frame_copy("req", 3), UIW_TCP_SEND_RECORD | UIW_TCP_SEND_CTRL), 0);
	ck_assert_uint_eq(b->sq_mbufs, 1);
	ck_assert_uint_eq(T->sq_mbufs, 96);   /* counted apart */
	ck_assert_uint_eq(T->sq_ctrl, 1);
	ck_assert_int_eq(uiw_tcp_send(b, frame_copy("req", 3), UIW_TCP_SEND_RECORD | UIW_TCP_SEND_CTRL),
			 -ENOBUFS);
	ck_assert_uint_eq(b->sq_mbufs, 1);
	/* The pool's three quarters still bind. */
	uiw_tcp_sndq_clear(b);
	T->sq_pool_max = T->sq_mbufs;
	ck_assert_int_eq(uiw_tcp_send(b, frame_copy("req", 3), UIW_TCP_SEND_RECORD | UIW_TCP_SEND_CTRL),
			 -ENOBUFS);
	ck_assert_uint_eq(b->sq_mbufs, 0);
	fake_port_clear(&fx_port);
}
END_TEST

/*
 * Peers that stop taking data hold their shares, not the budget. With the engine's limits
 * at 64 and 32 mbufs, two connections whose peers keep their windows shut queue their
 * shares (a stalled queue has no part of the soft limit), and a third, whose peer takes
 * data, still queues its own: the hard limit counts only queues that move (before, the
 * first two held all 64 and the third got nothing). A window that opens makes a queue
 * count again; a queue whose peer acknowledges nothing is set apart once the
 * retransmission timer has gone off, and counts again at the next ACK of new data.
 */
START_TEST(stalled_queues_leave_the_budget)
{
	struct out syn = establish_passive(NULL, 0), o;
	struct uiw_tcp_conn *a = ev.accepted, *b, *c;
	struct uiw_tcp_gauges g;
	unsigned na = 0, nb = 0, nc = 0;

	T->sq_mbufs_max = 64;
	T->sq_mbufs_soft = 32;
	inject(&(struct seg){ .seq = PEER_ISN + 1, .ack = syn.seq + 1, .flags = UIW_TCP_ACK, .win0 = true });
	b = accept_shut_window(a);
	/* Both send from the start: each has half the soft limit, at least the minimum. */
	ck_assert_int_eq(uiw_tcp_send(b, frame_copy("y", 1), 0), 0);
	nb++;
	ck_assert_uint_eq(T->tx_share, TCP_TX_SHARE);   /* one sender so far */
	while (uiw_tcp_send(a, frame_copy("x", 1), 0) == 0)
		na++;
	ck_assert_uint_eq(T->tx_share, TCP_TX_SHARE_MIN);
	while (uiw_tcp_send(b, frame_copy("y", 1), 0) == 0)
		nb++;
	ck_assert_uint_eq(na, T->tx_share);
	ck_assert_uint_eq(nb, T->tx_share);
	ck_assert(a->sq_stalled && b->sq_stalled);
	tx_room_is_fits_edge(a);
	tx_room_is_fits_edge(b);
	uiw_tcp_gauges(T, &g);
	ck_assert_uint_eq(g.sq_stalled, na + nb);
	ck_assert_uint_eq(g.sq_mbufs, na + nb);

	inject(&(struct seg){ .sport = PEER_PORT + 2, .seq = PEER_ISN, .flags = UIW_TCP_SYN });
	sent(fx_port.nsent - 1, &o);
	inject(&(struct seg){ .sport = PEER_PORT + 2, .seq = PEER_ISN + 1, .ack = o.seq + 1,
			      .flags = UIW_TCP_ACK });
	c = ev.accepted;
	ck_assert_ptr_ne(c, a);
	ck_assert_ptr_ne(c, b);
	ck_assert(!c->sq_stalled);
	while (uiw_tcp_send(c, frame_copy("z", 1), 0) == 0)
		nc++;
	ck_assert_uint_eq(nc, T->tx_share);
	tx_room_is_fits_edge(c);
	ck_assert_uint_gt(T->sq_mbufs, T->sq_mbufs_max);
	ck_assert_uint_eq(T->sq_stalled, na + nb);

	/* a's window opens: its queue counts again, and the hard limit is reached. */
	inject(&(struct seg){ .seq = PEER_ISN + 1, .ack = syn.seq + 1, .flags = UIW_TCP_ACK });
	ck_assert(!a->sq_stalled);
	ck_assert_uint_eq(T->sq_stalled, nb);
	ck_assert_uint_eq(T->sq_mbufs - T->sq_stalled, T->sq_mbufs_max);
	ck_assert_int_eq(uiw_tcp_send(c, frame_copy("z", 1), 0), -ENOBUFS);
	tx_room_is_fits_edge(a);
	tx_room_is_fits_edge(c);

	/* Nothing of a's or c's is acknowledged: after the retransmission timer both stall
	 * (c's went out first), and only their shares bound them. */
	for (unsigned k = 0; k < 100 && a->backoff == 0; k++)
		advance(100 * MS);
	ck_assert_uint_gt(a->backoff, 0);
	ck_assert(a->sq_stalled && c->sq_stalled);
	ck_assert_uint_eq(T->sq_stalled, na + nb + nc);
	ck_assert_uint_eq(T->sq_mbufs, na + nb + nc);
	ck_assert_int_eq(uiw_tcp_send(c, frame_copy("z", 1), 0), -ENOBUFS);

	/* An ACK of a's first octet: it moves again. */
	inject(&(struct seg){ .seq = PEER_ISN + 1, .ack = syn.seq + 2, .flags = UIW_TCP_ACK });
	ck_assert_uint_eq(a->backoff, 0);
	ck_assert(!a->sq_stalled);
	ck_assert_uint_eq(a->sq_mbufs, na - 1);
	ck_assert_uint_eq(T->sq_stalled, nb + nc);
	tx_room_is_fits_edge(a);
	tx_room_is_fits_edge(b);

	/* The peers reset: nothing held, nothing counted. */
	inject(&(struct seg){ .seq = PEER_ISN + 1, .flags = UIW_TCP_RST });
	inject(&(struct seg){ .sport = PEER_PORT + 1, .seq = PEER_ISN + 1, .flags = UIW_TCP_RST });
	inject(&(struct seg){ .sport = PEER_PORT + 2, .seq = PEER_ISN + 1, .flags = UIW_TCP_RST });
	ck_assert_uint_eq(uiw_tcp_conn_count(T), 0);
	ck_assert_uint_eq(T->sq_mbufs, 0);
	ck_assert_uint_eq(T->sq_stalled, 0);
	fake_port_clear(&fx_port);
}
END_TEST

/* Control messages that peers leave unacknowledged (an MPA Reply to a peer that went
 * quiet) are counted apart from the data budget: the other connections' data still gets
 * all of it. Together they stay within the pool's three quarters. */
START_TEST(unacked_ctrl_messages_leave_the_data_budget)
{
	struct out syn = establish_passive(NULL, 0);
	struct uiw_tcp_conn *a = ev.accepted, *b;
	unsigned na = 0;

	T->sq_mbufs_max = T->sq_mbufs_soft = 96;   /* no shares in the way */
	inject(&(struct seg){ .seq = PEER_ISN + 1, .ack = syn.seq + 1, .flags = UIW_TCP_ACK });
	b = accept_shut_window(a);
	ck_assert_int_eq(uiw_tcp_send(b, frame_copy("rep", 3), UIW_TCP_SEND_RECORD | UIW_TCP_SEND_CTRL), 0);
	ck_assert_uint_eq(T->sq_ctrl, 1);
	while (uiw_tcp_send(a, frame_copy("x", 1), 0) == 0)
		na++;
	ck_assert_uint_eq(na, 96);
	ck_assert_uint_eq(T->sq_mbufs, 96);
	/* Freed from the head of b's queue: the control count goes back, not the data's. */
	uiw_tcp_sndq_clear(b);
	ck_assert_uint_eq(T->sq_ctrl, 0);
	ck_assert_uint_eq(b->sq_ctrl, 0);
	ck_assert_uint_eq(T->sq_mbufs, 96);
	/* Data and control messages together: within the pool's three quarters. */
	uiw_tcp_sndq_clear(a);
	ck_assert_uint_eq(T->sq_mbufs, 0);
	T->sq_pool_max = 96;
	ck_assert_int_eq(uiw_tcp_send(b, frame_copy("rep", 3), UIW_TCP_SEND_RECORD | UIW_TCP_SEND_CTRL), 0);
	for (na = 0; uiw_tcp_send(a, frame_copy("x", 1), 0) == 0; na++)
		;
	ck_assert_uint_eq(na, 95);
	/* Data after a control message in the same queue is data. */
	uiw_tcp_sndq_clear(a);
	ck_assert_int_eq(uiw_tcp_send(b, frame_copy("z", 1), 0), 0);
	ck_assert_uint_eq(T->sq_ctrl, 1);
	ck_assert_uint_eq(T->sq_mbufs, 1);
	uiw_tcp_sndq_clear(b);
	ck_assert_uint_eq(T->sq_ctrl + T->sq_mbufs, 0);
	fake_port_clear(&fx_port);
}
END_TEST

#define CHUNK 1000u

/* A connection accepted whose peer then shut its window: what is queued waits unsent. */
static struct uiw_tcp_conn *accepted_window_shut(struct out *syn)
{
	*syn = establish_passive(NULL, 0);
	inject(&(struct seg){ .seq = PEER_ISN + 1, .ack = syn->seq + 1, .flags = UIW_TCP_ACK, .win0 = true });
	return ev.accepted;
}

/* Queues CHUNK octets on @p a. @return the status of uiw_tcp_send(). */
static int queue_chunk(struct uiw_tcp_conn *a)
{
	static const uint8_t chunk[CHUNK];

	return uiw_tcp_send(a, frame_copy(chunk, sizeof(chunk)), 0);
}

/* tcp_notsent_max: with nothing unsent the whole send buffer is offered; once data waits
 * unsent (here behind a shut window), no more than the limit is taken. */
START_TEST(unsent_data_bounded_by_notsent_max)
{
	struct out syn;
	struct uiw_tcp_conn *a = accepted_window_shut(&syn);
	uint32_t queued = 0;

	ck_assert_uint_eq(T->notsent_max, 128u << 10);
	ck_assert_uint_eq(uiw_tcp_send_space(a), T->snd_buf);
	ck_assert_int_eq(queue_chunk(a), 0);
	queued += CHUNK;
	ck_assert_uint_eq(uiw_tcp_send_space(a), T->notsent_max - queued);
	while (uiw_tcp_send_space(a) >= CHUNK) {
		ck_assert_int_eq(queue_chunk(a), 0);
		queued += CHUNK;
	}
	ck_assert_uint_eq(queued, T->notsent_max / CHUNK * CHUNK);
	ck_assert_int_eq(queue_chunk(a), -ENOBUFS);
	fake_port_clear(&fx_port);
}
END_TEST

/* Room that tcp_notsent_max withheld is offered again once what waited has gone out, with
 * no ACK yet: the layer above is told (ops->sent, no octets acknowledged) in the pass that
 * sent it. A layer with nothing to queue but what a callback brings (the responder of RDMA
 * Reads) otherwise sat idle until the next ACK. */
START_TEST(room_offered_again_once_sent)
{
	struct out syn;
	struct uiw_tcp_conn *a = accepted_window_shut(&syn);
	uint32_t queued = 0;

	/* More than half the limit waits unsent behind the shut window, and the room left
	 * is asked for. */
	while (queued <= T->notsent_max / 2) {
		ck_assert_int_eq(queue_chunk(a), 0);
		queued += CHUNK;
	}
	ck_assert_uint_eq(uiw_tcp_send_space(a), T->notsent_max - queued);
	advance(1 * MS);
	ck_assert_uint_eq(ev.sent_calls, 0);
	fake_port_clear(&fx_port);
	/* The window opens (nothing acknowledged): most of it goes out, and the layer above
	 * hears of the room at once. */
	inject(&(struct seg){ .seq = PEER_ISN + 1, .ack = syn.seq + 1, .flags = UIW_TCP_ACK, .win = 65535 });
	ck_assert_uint_gt(fx_port.nsent, 0);
	ck_assert_uint_lt(queued - (a->snd_nxt - a->snd_una), T->notsent_max / 2);
	ck_assert_uint_eq(ev.sent_calls, 1);
	ck_assert_uint_eq(ev.sent_bytes, 0);
	ck_assert_uint_eq(uiw_tcp_send_space(a), T->notsent_max - (queued - (a->snd_nxt - a->snd_una)));
	/* Told once: nothing asked for room since. */
	advance(1 * MS);
	ck_assert_uint_eq(ev.sent_calls, 1);
	fake_port_clear(&fx_port);
}
END_TEST

/* PAWS (RFC 7323 §5.3) with Linux's one-tick allowance: a TSval one below TS.Recent is
 * taken (a Linux retransmission stamped with its departure time may be), two below is an
 * old duplicate and dropped with a counter. */
START_TEST(paws_allows_one_tick)
{
	struct out syn = establish_passive(syn_opts, sizeof(syn_opts));
	uint8_t ts[12] = { 1, 1, 8, 10, 0, 0, 0, 100 }, d[10] = "abcdefghij";

	memcpy(ts + 8, opt(&syn, 8) + 2, 4);
	inject(&(struct seg){ .seq = PEER_ISN + 1, .ack = syn.seq + 1, .flags = UIW_TCP_ACK,
			      .opts = ts, .optlen = 12, .data = d, .len = 5 });
	ck_assert_uint_eq(ev.ndata, 5);
	ts[7] = 99;
	inject(&(struct seg){ .seq = PEER_ISN + 6, .ack = syn.seq + 1, .flags = UIW_TCP_ACK,
			      .opts = ts, .optlen = 12, .data = d + 5, .len = 5 });
	ck_assert_uint_eq(ev.ndata, 5);
	ck_assert_uint_eq(uiw_tcp_counters(T)[UIW_TCP_C_drop_paws], 1);
}
END_TEST

START_TEST(closed_port_answers_rst)
{
	struct out o;

	/* RFC 9293 §3.10.7.1: no ACK: <SEQ=0><ACK=SEG.SEQ+SEG.LEN><CTL=RST,ACK>. */
	inject(&(struct seg){ .seq = 777, .flags = UIW_TCP_SYN, .dport = 9 });
	ck_assert_uint_eq(fx_port.nsent, 1);
	sent(0, &o);
	ck_assert_uint_eq(o.flags, UIW_TCP_RST | UIW_TCP_ACK);
	ck_assert_uint_eq(o.seq, 0);
	ck_assert_uint_eq(o.ack, 778);
	/* With ACK: <SEQ=SEG.ACK><CTL=RST>. */
	inject(&(struct seg){ .seq = 777, .ack = 4242, .flags = UIW_TCP_ACK, .dport = 9 });
	sent(1, &o);
	ck_assert_uint_eq(o.flags, UIW_TCP_RST);
	ck_assert_uint_eq(o.seq, 4242);
	/* A RST is never answered. */
	inject(&(struct seg){ .seq = 777, .flags = UIW_TCP_RST, .dport = 9 });
	ck_assert_uint_eq(fx_port.nsent, 2);
}
END_TEST

START_TEST(active_open_then_data_and_retransmission)
{
	struct uiw_tcp_conn *c;
	struct out syn, o, r;
	struct rte_mbuf *m;

	ck_assert_int_eq(uiw_tcp_connect(T, IP_PEER, 80, &ops, NULL, now_ns, &c), 0);
	uiw_port_flush(&fx_port.port);
	ck_assert_uint_eq(fx_port.nsent, 1);
	sent(0, &syn);
	ck_assert_uint_eq(syn.flags, UIW_TCP_SYN);
	ck_assert_ptr_nonnull(opt(&syn, 2));
	ck_assert_ptr_nonnull(opt(&syn, 4));
	ck_assert_ptr_nonnull(opt(&syn, 8));
	ck_assert_ptr_nonnull(opt(&syn, 3));
	inject(&(struct seg){ .sport = 80, .dport = c->lport, .seq = PEER_ISN, .ack = syn.seq + 1,
			      .flags = UIW_TCP_SYN | UIW_TCP_ACK });
	ck_assert_uint_eq(ev.connected, 1);
	ck_assert_uint_eq(fx_port.nsent, 2);
	sent(1, &o);
	ck_assert_uint_eq(o.flags, UIW_TCP_ACK);
	ck_assert_uint_eq(o.ack, PEER_ISN + 1);
	/* The peer offered no options: none are used (RFC 7323 §2.2, §3.2). */
	ck_assert_uint_eq(o.optlen, 0);
	fake_port_clear(&fx_port);
	m = frame_copy("hello, world", 12);
	ck_assert_int_eq(uiw_tcp_send(c, m, 0), 0);
	uiw_tcp_run(T, now_ns);
	uiw_port_flush(&fx_port.port);
	ck_assert_uint_eq(fx_port.nsent, 1);
	sent(0, &o);
	ck_assert_uint_eq(o.len, 12);
	ck_assert_mem_eq(o.data, "hello, world", 12);
	/* No ACK. The handshake was timed, so the RTO is the minimum (200 ms): first one tail
	 * loss probe (RFC 8985 §7: the last segment again, a little after two round trips),
	 * only one while no ACK comes, then at the RTO the same bytes again. */
	advance(5 * MS);
	ck_assert_uint_eq(fx_port.nsent, 2);
	sent(1, &r);
	ck_assert_uint_eq(r.seq, o.seq);
	ck_assert_uint_eq(r.len, 12);
	ck_assert_uint_eq(uiw_tcp_counters(T)[UIW_TCP_C_tail_loss_probes], 1);
	advance(150 * MS);
	ck_assert_uint_eq(fx_port.nsent, 2);
	advance(100 * MS);
	ck_assert_uint_eq(fx_port.nsent, 3);
	sent(2, &r);
	ck_assert_uint_eq(r.seq, o.seq);
	ck_assert_uint_eq(r.len, 12);
	ck_assert_uint_eq(uiw_tcp_counters(T)[UIW_TCP_C_rto_expiries], 1);
	ck_assert_uint_eq(uiw_tcp_counters(T)[UIW_TCP_C_tail_loss_probes], 1);
}
END_TEST

/* An active open answered at once by a SYN-ACK with no options: connected, with an RTT of
 * about nothing (the handshake is timed), the port's record cleared. */
static struct uiw_tcp_conn *connect_at_once(void)
{
	struct uiw_tcp_conn *c;
	struct out syn;

	ck_assert_int_eq(uiw_tcp_connect(T, IP_PEER, 80, &ops, NULL, now_ns, &c), 0);
	uiw_port_flush(&fx_port.port);
	sent(0, &syn);
	inject(&(struct seg){ .sport = 80, .dport = c->lport, .seq = PEER_ISN, .ack = syn.seq + 1,
			      .flags = UIW_TCP_SYN | UIW_TCP_ACK });
	ck_assert_uint_eq(ev.connected, 1);
	fake_port_clear(&fx_port);
	return c;
}

/* The probe and retransmission timers never fire before their deadline, wherever in the
 * wheel's millisecond they were armed (RFC 6298 §5, RFC 8985 §7.2): data sent 50 us before
 * a tick boundary gets no probe at the boundary, nor before its 1 ms timeout, one after. */
START_TEST(probe_never_before_its_timeout)
{
	struct uiw_tcp_conn *c = connect_at_once();
	struct out o, r;
	uint64_t sent_at;

	/* The timed handshake gave an RTT of about nothing: the probe timeout is its floor. */
	now_ns = (now_ns / MS + 3) * MS - 50 * 1000;
	sent_at = now_ns;
	ck_assert_int_eq(uiw_tcp_send(c, frame_copy("tick", 4), 0), 0);
	uiw_tcp_run(T, now_ns);
	uiw_port_flush(&fx_port.port);
	ck_assert_uint_eq(fx_port.nsent, 1);
	sent(0, &o);
	for (uint64_t at = sent_at + 10 * 1000; at < sent_at + MS; at += 10 * 1000) {
		now_ns = at;
		uiw_tcp_run(T, now_ns);
		uiw_port_flush(&fx_port.port);
		ck_assert_msg(fx_port.nsent == 1, "a probe %llu us after the data",
			      (unsigned long long)((at - sent_at) / 1000));
	}
	ck_assert_uint_eq(uiw_tcp_counters(T)[UIW_TCP_C_tail_loss_probes], 0);
	advance(2 * MS);
	ck_assert_uint_eq(fx_port.nsent, 2);
	sent(1, &r);
	ck_assert_uint_eq(r.seq, o.seq);
	ck_assert_uint_eq(uiw_tcp_counters(T)[UIW_TCP_C_tail_loss_probes], 1);
	ck_assert_uint_eq(uiw_tcp_counters(T)[UIW_TCP_C_rto_expiries], 0);
}
END_TEST

/* Passes may come with a clock read on another thread before it waited for the engine,
 * a little behind the last: TCP's time does not go back, so the ACK of data sent "later"
 * gives a small RTT sample, not one of 2^32 us. */
START_TEST(clock_behind_the_last_pass_does_not_go_back)
{
	struct uiw_tcp_conn *c = connect_at_once();
	struct out o;

	advance(10 * MS);
	ck_assert_int_eq(uiw_tcp_send(c, frame_copy("tick", 4), 0), 0);
	uiw_tcp_run(T, now_ns);
	uiw_port_flush(&fx_port.port);
	sent(0, &o);
	ck_assert_uint_eq(o.len, 4);
	now_ns -= 5 * MS;   /* the next pass's clock was read 5 ms before the last one's */
	inject(&(struct seg){ .sport = 80, .dport = c->lport, .seq = PEER_ISN + 1, .ack = o.seq + 4,
			      .flags = UIW_TCP_ACK });
	ck_assert_uint_eq(c->snd_una, o.seq + 4);
	ck_assert_uint_lt(c->srtt_us, 1000);
	ck_assert_uint_le(c->rto_us, 200 * 1000);
}
END_TEST

START_TEST(active_open_refused_by_rst)
{
	struct uiw_tcp_conn *c;
	struct out syn;

	ck_assert_int_eq(uiw_tcp_connect(T, IP_PEER, 81, &ops, NULL, now_ns, &c), 0);
	uiw_port_flush(&fx_port.port);
	sent(0, &syn);
	inject(&(struct seg){ .sport = 81, .dport = c->lport, .seq = 0, .ack = syn.seq + 1,
			      .flags = UIW_TCP_RST | UIW_TCP_ACK });
	ck_assert_uint_eq(ev.closed, 1);
	ck_assert_int_eq(ev.closed_err, -ECONNREFUSED);
}
END_TEST

START_TEST(syn_retried_with_backoff_then_timeout)
{
	struct uiw_tcp_conn *c;

	ck_assert_int_eq(uiw_tcp_connect(T, IP_PEER, 82, &ops, NULL, now_ns, &c), 0);
	uiw_port_flush(&fx_port.port);
	/* 1 s, then 2, 4, 8, 16, 32 (six retries), then give up after 64 more. */
	advance(1100 * MS);
	ck_assert_uint_eq(fx_port.nsent, 2);
	advance(2000 * MS);
	ck_assert_uint_eq(fx_port.nsent, 3);
	advance(200000 * MS);
	ck_assert_uint_eq(fx_port.nsent, 7);
	ck_assert_uint_eq(ev.closed, 1);
	ck_assert_int_eq(ev.closed_err, -ETIMEDOUT);
}
END_TEST

/* A handshake whose SYN-ACK (passive, cases 0 and 2) or SYN (active, case 1) went twice
 * cannot be timed from the first (Karn), but an answer echoing the TSval of the one sent
 * last times it from then (RFC 7323 §4.1): the connection starts with a measured RTO, not
 * the initial one backed off. The receiving end of a stream takes no other sample before
 * its FIN, and a FIN that then waits 2 s to go again may meet a peer past its TIME-WAIT,
 * which answers with a RST. An echo of the first one (case 2) times nothing. */
START_TEST(retransmitted_handshake_timed_by_its_timestamp)
{
	struct uiw_tcp_conn *c;
	struct out first, again;
	uint8_t o[sizeof(syn_opts)];
	uint32_t srtt, rttvar, rto, cwnd;
	const struct out *echoed;

	if (_i != 1) {
		ck_assert_int_eq(uiw_tcp_listen(T, OUR_PORT, 8, &ops, NULL), 0);
		inject(&(struct seg){ .seq = PEER_ISN, .flags = UIW_TCP_SYN, .opts = syn_opts,
				      .optlen = sizeof(syn_opts) });
	} else {
		ck_assert_int_eq(uiw_tcp_connect(T, IP_PEER, PEER_PORT, &ops, NULL, now_ns, &c), 0);
		uiw_port_flush(&fx_port.port);
	}
	ck_assert_uint_eq(fx_port.nsent, 1);
	sent(0, &first);
	for (unsigned ms = 0; ms < 1100 && fx_port.nsent < 2; ms++)
		advance(1 * MS); /* lost: the initial RTO, then again */
	ck_assert_uint_eq(fx_port.nsent, 2);
	sent(1, &again);
	ck_assert_uint_eq(again.flags, first.flags);
	ck_assert_ptr_nonnull(opt(&again, 8));
	ck_assert_mem_ne(opt(&again, 8) + 2, opt(&first, 8) + 2, 4);
	echoed = _i == 2 ? &first : &again;
	advance(3 * MS);
	if (_i != 1) {
		uint8_t ts_ack[12] = { 1, 1, 8, 10, 0, 0, 0, 101 };

		memcpy(ts_ack + 8, opt(echoed, 8) + 2, 4);
		inject(&(struct seg){ .seq = PEER_ISN + 1, .ack = again.seq + 1, .flags = UIW_TCP_ACK,
				      .opts = ts_ack, .optlen = sizeof(ts_ack) });
		ck_assert_ptr_nonnull(ev.accepted);
		c = ev.accepted;
	} else {
		memcpy(o, syn_opts, sizeof(o));
		memcpy(o + 12, opt(echoed, 8) + 2, 4);
		inject(&(struct seg){ .sport = PEER_PORT, .dport = c->lport, .seq = PEER_ISN,
				      .ack = again.seq + 1, .flags = UIW_TCP_SYN | UIW_TCP_ACK,
				      .opts = o, .optlen = sizeof(o) });
		ck_assert_uint_eq(ev.connected, 1);
	}
	ck_assert_int_eq(uiw_tcp_state(c), UIW_TCP_ESTABLISHED);
	uiw_tcp_conn_timing(c, &srtt, &rttvar, &rto, &cwnd);
	if (_i == 2) {
		ck_assert_uint_eq(srtt, 0);
		ck_assert_uint_eq(rto, 2000 * 1000); /* the initial 1 s, backed off once */
		return;
	}
	ck_assert_uint_eq(srtt, 3000); /* from the one sent last, by the clock */
	ck_assert_uint_eq(rto, 200 * 1000); /* the minimum */
}
END_TEST

START_TEST(records_never_share_a_segment)
{
	struct out syn = establish_passive(NULL, 0), o;
	char a[100], b[100];

	memset(a, 'a', sizeof(a));
	memset(b, 'b', sizeof(b));
	inject(&(struct seg){ .seq = PEER_ISN + 1, .ack = syn.seq + 1, .flags = UIW_TCP_ACK, .win = 65535 });
	fake_port_clear(&fx_port);
	ck_assert_int_eq(uiw_tcp_send(ev.accepted, frame_copy(a, 100), UIW_TCP_SEND_RECORD), 0);
	ck_assert_int_eq(uiw_tcp_send(ev.accepted, frame_copy(b, 100), UIW_TCP_SEND_RECORD), 0);
	ck_assert_int_eq(uiw_tcp_send(ev.accepted, frame_copy(a, 50), 0), 0);
	uiw_tcp_run(T, now_ns);
	uiw_port_flush(&fx_port.port);
	ck_assert_uint_eq(fx_port.nsent, 2);
	sent(0, &o);
	ck_assert_uint_eq(o.len, 100);
	ck_assert_mem_eq(o.data, a, 100);
	sent(1, &o);
	ck_assert_uint_eq(o.len, 150); /* the unflagged send joins the record before it */
	ck_assert_mem_eq(o.data, b, 100);
}
END_TEST

/* Frees the mbufs @p v the caller still owns. */
static void free_all(struct rte_mbuf **v, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		rte_pktmbuf_free(v[i]);
}

/* Records queued together (uiw_tcp_send_records()) go as uiw_tcp_send() would send them
 * one by one: each starts a segment of its own. The run is taken whole or not at all:
 * past the octets or the mbufs uiw_tcp_run_room() gives, with a chained mbuf, or on a
 * connection that closed, nothing is queued and the mbufs stay the caller's. A connection
 * with nothing queued has no run room: its first record goes alone. */
START_TEST(records_queued_together_or_not_at_all)
{
	struct out syn = establish_passive(NULL, 0), o;
	struct uiw_tcp_conn *a = ev.accepted;
	struct rte_mbuf *v[3];
	uint8_t d[3][100];
	uint32_t room, mbufs, bytes, nmbufs, share;

	for (unsigned i = 0; i < 3; i++)
		memset(d[i], 'a' + (int)i, sizeof(d[i]));
	inject(&(struct seg){ .seq = PEER_ISN + 1, .ack = syn.seq + 1, .flags = UIW_TCP_ACK, .win = 65535 });
	fake_port_clear(&fx_port);
	ck_assert_uint_eq(uiw_tcp_run_room(a, &mbufs), 0);
	ck_assert_uint_eq(mbufs, 0);
	ck_assert_int_eq(uiw_tcp_send(a, frame_copy("z", 1), UIW_TCP_SEND_RECORD), 0);
	room = uiw_tcp_run_room(a, &mbufs);
	ck_assert_uint_eq(room, uiw_tcp_send_space(a));
	ck_assert_uint_eq(mbufs, uiw_tcp_tx_room(a));
	ck_assert_uint_gt(mbufs, 3);
	tx_room_is_fits_edge(a);
	/* Its share used up, a queue that moves may still grow to the soft limit of all. */
	share = T->tx_share;
	T->tx_share = a->sq_mbufs;
	ck_assert(!a->sq_stalled);
	ck_assert_uint_eq(uiw_tcp_tx_room(a), T->sq_mbufs_soft - T->sq_mbufs);
	tx_room_is_fits_edge(a);
	T->tx_share = share;

	for (unsigned i = 0; i < 3; i++)
		v[i] = frame_copy(d[i], sizeof(d[i]));
	ck_assert_int_eq(uiw_tcp_send_records(a, v, 3), 0);
	ck_assert_uint_eq(a->sq.bytes, 301);
	ck_assert_uint_eq(a->sq_mbufs, 4);
	ck_assert_uint_eq(T->sq_mbufs, 4);
	uiw_tcp_run(T, now_ns);
	uiw_port_flush(&fx_port.port);
	ck_assert_uint_eq(fx_port.nsent, 4);
	for (unsigned i = 0; i < 3; i++) {
		sent(1 + i, &o);
		ck_assert_uint_eq(o.len, 100);
		ck_assert_mem_eq(o.data, d[i], 100);
	}
	fake_port_clear(&fx_port);

	/* One octet past the room: refused whole, nothing queued. */
	room = uiw_tcp_run_room(a, &mbufs);
	bytes = a->sq.bytes;
	nmbufs = T->sq_mbufs;
	v[0] = frame_copy(d[0], 1);
	v[1] = rte_pktmbuf_alloc(test_pool());
	ck_assert_ptr_nonnull(v[1]);
	ck_assert_ptr_nonnull(rte_pktmbuf_append(v[1], 1));
	v[1]->pkt_len = room;   /* counted, not carried: refused before anything reads it */
	ck_assert_int_eq(uiw_tcp_send_records(a, v, 2), -ENOBUFS);
	v[1]->pkt_len = room - 1;
	ck_assert_uint_eq(a->sq.bytes, bytes);
	ck_assert_uint_eq(T->sq_mbufs, nmbufs);
	free_all(v, 2);

	/* One mbuf past what the budget lets it queue. */
	T->sq_pool_max = T->sq_mbufs + T->sq_ctrl + 2;
	ck_assert_uint_eq(uiw_tcp_tx_room(a), 2);
	for (unsigned i = 0; i < 3; i++)
		v[i] = frame_copy(d[i], 10);
	ck_assert_int_eq(uiw_tcp_send_records(a, v, 3), -ENOBUFS);
	ck_assert_uint_eq(T->sq_mbufs, nmbufs);
	ck_assert_int_eq(uiw_tcp_send_records(a, v, 2), 0);
	ck_assert_uint_eq(T->sq_mbufs, nmbufs + 2);
	ck_assert_uint_eq(a->sq.bytes, bytes + 20);
	rte_pktmbuf_free(v[2]);

	/* A chained mbuf is not a record of one mbuf. */
	T->sq_pool_max = T->sq_mbufs + T->sq_ctrl + 8;
	v[0] = frame_split(d[0], 100, 50);
	ck_assert_int_eq(uiw_tcp_send_records(a, v, 1), -EINVAL);
	rte_pktmbuf_free(v[0]);

	/* Closed from our side: nothing more is taken. */
	uiw_tcp_close(a);
	v[0] = frame_copy(d[0], 10);
	ck_assert_uint_eq(uiw_tcp_run_room(a, &mbufs), 0);
	ck_assert_int_eq(uiw_tcp_send_records(a, v, 1), -ENOTCONN);
	rte_pktmbuf_free(v[0]);
	ck_assert_uint_eq(a->sq.bytes, bytes + 20);
	fake_port_clear(&fx_port);
}
END_TEST

/* The room a run has behind a shut window is what tcp_notsent_max leaves, as
 * uiw_tcp_send_space() gives it to each record in turn; a run that leaves half the limit
 * or less asks for room (ops->sent once sending has made some). */
START_TEST(run_room_bounded_by_notsent_max)
{
	static const uint8_t chunk[CHUNK];
	struct out syn;
	struct uiw_tcp_conn *a = accepted_window_shut(&syn);
	struct rte_mbuf *v[64];
	uint32_t mbufs, queued = CHUNK;
	unsigned n = 0;

	ck_assert_int_eq(queue_chunk(a), 0);
	ck_assert_uint_eq(uiw_tcp_run_room(a, &mbufs), T->notsent_max - queued);
	ck_assert_uint_eq(uiw_tcp_send_space(a), T->notsent_max - queued);
	a->room_wanted = false;
	/* Up to half the limit, and no further: not asked for. */
	while (queued + CHUNK < T->notsent_max / 2) {
		ck_assert_uint_lt(n, 64);
		v[n++] = frame_copy(chunk, sizeof(chunk));
		queued += CHUNK;
	}
	ck_assert_int_eq(uiw_tcp_send_records(a, v, n), 0);
	ck_assert_uint_eq(a->sq.bytes, queued);
	ck_assert(!a->room_wanted);
	ck_assert_uint_eq(uiw_tcp_run_room(a, &mbufs), T->notsent_max - queued);
	/* Past half: asked for. */
	v[0] = frame_copy(chunk, sizeof(chunk));
	v[1] = frame_copy(chunk, sizeof(chunk));
	ck_assert_int_eq(uiw_tcp_send_records(a, v, 2), 0);
	queued += 2 * CHUNK;
	ck_assert_uint_ge(queued, T->notsent_max / 2);
	ck_assert(a->room_wanted);
	/* Up to the limit, not an octet past it. */
	while (uiw_tcp_run_room(a, &mbufs) >= CHUNK) {
		v[0] = frame_copy(chunk, sizeof(chunk));
		ck_assert_int_eq(uiw_tcp_send_records(a, v, 1), 0);
		queued += CHUNK;
	}
	ck_assert_uint_eq(uiw_tcp_run_room(a, &mbufs), T->notsent_max - queued);
	v[0] = frame_copy(chunk, T->notsent_max - queued + 1);
	ck_assert_int_eq(uiw_tcp_send_records(a, v, 1), -ENOBUFS);
	rte_pktmbuf_free(v[0]);
	ck_assert_uint_eq(a->sq.bytes, queued);
	fake_port_clear(&fx_port);
}
END_TEST

/* RFC 5044 §8: a window open but short of the record, nothing in flight (a receiver that
 * holds data back): the record is not split at once. After an RTO a probe without data asks
 * for the window; an answer that opens it lets the record go whole (_i 0). A receiver whose
 * window stays short through TCP_RECORD_PROBES probes gets it split, so nothing stalls
 * (_i 1: the default RTO, whose probes take longer than TCP_RECORD_SPLIT_NS). With a 10 ms
 * RTO the probes run out in 0.63 s: the record still waits until the window has been short
 * for TCP_RECORD_SPLIT_NS, as a receiver may hold it shut that long for a receive (_i 2). */
START_TEST(short_window_waits_for_the_whole_record)
{
	struct out syn = establish_passive(NULL, 0), o;
	uint32_t una = syn.seq + 1;
	uint64_t short_at;
	unsigned probes = 0;
	char r[300];

	if (_i == 2) {
		T->min_rto_us = 10 * 1000;
		ev.accepted->rto_us = 10 * 1000;
	}
	memset(r, 'r', sizeof(r));
	inject(&(struct seg){ .seq = PEER_ISN + 1, .ack = una, .flags = UIW_TCP_ACK, .win = 100 });
	fake_port_clear(&fx_port);
	ck_assert_int_eq(uiw_tcp_send(ev.accepted, frame_copy(r, sizeof(r)), UIW_TCP_SEND_RECORD), 0);
	short_at = now_ns;
	uiw_tcp_run(T, now_ns);
	uiw_port_flush(&fx_port.port);
	ck_assert_uint_eq(fx_port.nsent, 0);
	for (;;) {
		fake_port_clear(&fx_port);
		for (unsigned k = 0; fx_port.nsent == 0; k++) {
			ck_assert_msg(k < 2000, "no probe");
			advance(_i == 2 ? MS : 10 * MS);
		}
		sent(0, &o);   /* the probe: no data */
		ck_assert_uint_eq(o.seq, una - 1);
		ck_assert_uint_eq(o.len, 0);
		probes++;
		fake_port_clear(&fx_port);
		inject(&(struct seg){ .seq = PEER_ISN + 1, .ack = una, .flags = UIW_TCP_ACK,
				      .win = _i ? 100 : 65535 });
		uiw_port_flush(&fx_port.port);
		if (!_i || fx_port.nsent != 0)
			break;
		/* still short: another probe */
		ck_assert_msg(probes < TCP_RECORD_PROBES || now_ns - short_at < TCP_RECORD_SPLIT_NS,
			      "probe %u at %llu ms: not split", probes,
			      (unsigned long long)((now_ns - short_at) / MS));
	}
	ck_assert_uint_eq(fx_port.nsent, 1);
	sent(0, &o);
	ck_assert_uint_eq(o.seq, una);
	if (!_i) {
		ck_assert_uint_eq(o.len, 300);   /* whole */
		ck_assert_uint_eq(probes, 1);
	} else {
		ck_assert_uint_eq(o.len, 100);   /* split, as the window allows */
		ck_assert_uint_ge(probes, TCP_RECORD_PROBES);
		ck_assert_uint_ge(now_ns - short_at, TCP_RECORD_SPLIT_NS);
		/* _i 1: the probes were the later bound; _i 2: the time was */
		ck_assert_uint_eq(probes, _i == 1 ? TCP_RECORD_PROBES : TCP_RECORD_PROBES + 1);
	}
	ck_assert_uint_eq(uiw_tcp_counters(T)[UIW_TCP_C_persist_probes], probes);
}
END_TEST

/* Frames the test port's receive burst hands over, in order. */
static struct rte_mbuf *rxq[16];
static unsigned rxq_n, rxq_next, rx_asked;

static uint16_t rxq_burst(struct uiw_port *port, struct rte_mbuf **pkts, uint16_t n)
{
	uint16_t k = 0;

	(void)port;
	if (n > rx_asked)
		rx_asked = n;
	while (k < n && rxq_next < rxq_n)
		pkts[k++] = rxq[rxq_next++];
	return k;
}

/* @p len octets from @p f in a chain of mbufs of 1,024 octets each, as a PMD hands a
 * large frame over. */
static struct rte_mbuf *chain_copy(const uint8_t *f, size_t len)
{
	struct rte_mbuf *head = NULL;

	for (size_t off = 0; off < len; off += 1024) {
		size_t k = len - off < 1024 ? len - off : 1024;
		struct rte_mbuf *m = frame_copy(f + off, k);

		if (head == NULL)
			head = m;
		else
			ck_assert_int_eq(rte_pktmbuf_chain(head, m), 0);
	}
	return head;
}

/* Twelve frames in one poll pass. Of ordinary size (_i 0), they are taken in one burst and
 * answered by one ACK at the end of the pass. Large ones (_i 1: 16,500 octets each, as a
 * TSO sender's frames reach a receiver that takes large frames, uncut) are taken four at a
 * time, and each four are acknowledged before the next are taken (tcp_poll.c), so that a
 * sender whose whole flight came in one burst refills while this side works; while they
 * come large, the PMD is asked for four at a time. */
START_TEST(large_frames_acknowledged_four_at_a_time)
{
	static const uint8_t ws[] = { 1, 3, 3, 7 };   /* NOP, WS 7: a window past 64 KiB */
	struct out syn = establish_passive(ws, sizeof(ws)), o;
	uint32_t len = _i ? 16500 : 1000, seq = PEER_ISN + 2;
	uint8_t *data = calloc(1, len), *f = malloc(len + 100);

	ck_assert_ptr_nonnull(data);
	ck_assert_ptr_nonnull(f);
	/* One octet first: its delayed ACK gives the scaled window the frames need. */
	inject(&(struct seg){ .seq = PEER_ISN + 1, .ack = syn.seq + 1, .flags = UIW_TCP_ACK,
			      .data = "x", .len = 1 });
	advance(2 * MS);
	ck_assert_uint_eq(fx_port.nsent, 1);
	sent(0, &o);
	ck_assert_uint_ge((uint32_t)o.win << 7, 12 * len);
	fx_port.port.rx_burst = rxq_burst;
	for (unsigned pass = 0, frames = 12; pass < 2; pass++, frames = 8) {
		uint32_t from = seq;

		fake_port_clear(&fx_port);
		rxq_n = rxq_next = rx_asked = 0;
		for (unsigned i = 0; i < frames; i++, seq += len) {
			size_t n = build_seg(f, &(struct seg){ .seq = seq, .ack = syn.seq + 1,
							       .flags = UIW_TCP_ACK, .data = data,
							       .len = len });

			rxq[rxq_n++] = chain_copy(f, n);
		}
		uiw_tcp_poll(T, now_ns);
		ck_assert_uint_eq(rxq_next, frames);
		/* the first pass asks for a full burst; the second, after large frames, for 4 */
		ck_assert_uint_eq(rx_asked, (_i && pass == 1 ? 4u : 32u));
		ck_assert_uint_eq(fx_port.nsent, (_i ? frames / 4 : 1u));
		for (unsigned k = 0; k < fx_port.nsent; k++) {
			sent(k, &o);
			ck_assert_uint_eq(o.len, 0);
			ck_assert_uint_eq(o.ack, from + (_i ? 4 * (k + 1) : frames) * len);
		}
	}
	ck_assert_uint_eq(ev.ndata, 1 + 20 * len);
	ck_assert_uint_eq(uiw_tcp_counters(T)[UIW_TCP_C_rx_large], (_i ? 20u : 0u));
	free(f);
	free(data);
}
END_TEST

/* RFC 5044 §8.1.2: an FPDU is never split. A record as long as the MSS allows would not
 * fit beside SACK blocks: it goes whole without them, and a pure ACK carries the blocks
 * right after. */
START_TEST(full_record_goes_whole_without_sack_blocks)
{
	uint8_t opts[] = { 2, 4, 0x05, 0xb4, 4, 2, 1, 1 };   /* MSS 1460, SACK permitted */
	struct out syn = establish_passive(opts, sizeof(opts)), o;
	uint8_t d[1460];
	const uint8_t *p;

	memset(d, 'r', sizeof(d));
	inject(&(struct seg){ .seq = PEER_ISN + 1, .ack = syn.seq + 1, .flags = UIW_TCP_ACK, .win = 65535 });
	/* A hole in what the peer sent: every ACK now has a SACK block to give. */
	inject(&(struct seg){ .seq = PEER_ISN + 101, .ack = syn.seq + 1, .flags = UIW_TCP_ACK,
			      .win = 65535, .data = d, .len = 100 });
	fake_port_clear(&fx_port);
	ck_assert_uint_eq(ev.accepted->mss, 1460);
	ck_assert_int_eq(uiw_tcp_send(ev.accepted, frame_copy(d, sizeof(d)), UIW_TCP_SEND_RECORD), 0);
	uiw_tcp_run(T, now_ns);
	uiw_port_flush(&fx_port.port);
	ck_assert_uint_eq(fx_port.nsent, 2);
	sent(0, &o);
	ck_assert_uint_eq(o.len, 1460);
	ck_assert_ptr_null(opt(&o, 5));
	sent(1, &o);
	ck_assert_uint_eq(o.len, 0);
	ck_assert_uint_eq(o.ack, PEER_ISN + 1);
	p = opt(&o, 5);
	ck_assert_ptr_nonnull(p);
	ck_assert_uint_eq(get32(p + 2), PEER_ISN + 101);
	ck_assert_uint_eq(get32(p + 6), PEER_ISN + 201);
}
END_TEST

/* A passive open, then six segments of 536 octets sent and not yet acknowledged; the port's
 * record cleared. @return the first one's sequence number. */
static uint32_t six_segments_in_flight(void)
{
	struct out syn = establish_passive(NULL, 0);
	char d[536];
	uint32_t una = syn.seq + 1;

	memset(d, 'x', sizeof(d));
	inject(&(struct seg){ .seq = PEER_ISN + 1, .ack = una, .flags = UIW_TCP_ACK });
	fake_port_clear(&fx_port);
	for (int i = 0; i < 6; i++)
		ck_assert_int_eq(uiw_tcp_send(ev.accepted, frame_copy(d, sizeof(d)), 0), 0);
	uiw_tcp_run(T, now_ns);
	uiw_port_flush(&fx_port.port);
	ck_assert_uint_eq(fx_port.nsent, 6);
	fake_port_clear(&fx_port);
	return una;
}

START_TEST(fast_retransmit_on_three_duplicate_acks)
{
	uint32_t una = six_segments_in_flight();
	struct out o;

	for (int i = 0; i < 3; i++)
		inject(&(struct seg){ .seq = PEER_ISN + 1, .ack = una, .flags = UIW_TCP_ACK });
	ck_assert_uint_ge(fx_port.nsent, 1);
	sent(fx_port.nsent - 1, &o);
	ck_assert_uint_eq(o.seq, una);
	ck_assert_uint_eq(o.len, 536);
	ck_assert_uint_eq(uiw_tcp_counters(T)[UIW_TCP_C_fast_retransmits], 1);
}
END_TEST

/* RFC 5681 §2: an ACK that moves SND.UNA is no duplicate, even when the window it carries
 * is the one already known. Counted as one, every new ACK left dupacks at 1, so two true
 * duplicates after it started a recovery, and the counter said nearly every ACK was one. */
START_TEST(new_ack_is_not_a_duplicate)
{
	uint32_t una = six_segments_in_flight();

	inject(&(struct seg){ .seq = PEER_ISN + 1, .ack = una + 536, .flags = UIW_TCP_ACK });
	ck_assert_uint_eq(uiw_tcp_counters(T)[UIW_TCP_C_dup_acks], 0);
	for (int i = 0; i < 2; i++)
		inject(&(struct seg){ .seq = PEER_ISN + 1, .ack = una + 536, .flags = UIW_TCP_ACK });
	ck_assert_uint_eq(uiw_tcp_counters(T)[UIW_TCP_C_dup_acks], 2);
	ck_assert_uint_eq(uiw_tcp_counters(T)[UIW_TCP_C_fast_retransmits], 0);
	inject(&(struct seg){ .seq = PEER_ISN + 1, .ack = una + 536, .flags = UIW_TCP_ACK });
	ck_assert_uint_eq(uiw_tcp_counters(T)[UIW_TCP_C_fast_retransmits], 1);
}
END_TEST

/* Without SACK negotiated, SACK blocks a peer sends anyway are ignored, and its
 * duplicate ACKs still count (RFC 5681 §3.2). */
START_TEST(stray_sack_blocks_do_not_hide_duplicate_acks)
{
	uint32_t una = six_segments_in_flight();
	uint8_t opt[12] = { 1, 1, 5, 10 };
	struct out o;

	put32(opt + 4, una + 536);
	put32(opt + 8, una + 2 * 536);
	for (int i = 0; i < 3; i++)
		inject(&(struct seg){ .seq = PEER_ISN + 1, .ack = una, .flags = UIW_TCP_ACK,
				      .opts = opt, .optlen = 12 });
	ck_assert_uint_eq(uiw_tcp_counters(T)[UIW_TCP_C_fast_retransmits], 1);
	sent(fx_port.nsent - 1, &o);
	ck_assert_uint_eq(o.seq, una);
}
END_TEST

/* RFC 6675 §2: with SACK, an ACK that SACKs new data is a duplicate acknowledgment even
 * when it also moves the cumulative ACK or changes the window (as Linux's does while its
 * receive window autotunes). Counted by RFC 5681's definition alone, these ACKs started
 * no recovery, and the loss waited for the retransmission timer. */
START_TEST(sack_acks_with_new_window_start_recovery)
{
	uint8_t sack_perm[] = { 4, 2, 1, 1 };
	struct out syn = establish_passive(sack_perm, sizeof(sack_perm)), o;
	uint32_t una = syn.seq + 1;
	char d[536];

	memset(d, 'y', sizeof(d));
	inject(&(struct seg){ .seq = PEER_ISN + 1, .ack = una, .flags = UIW_TCP_ACK, .win = 60000 });
	fake_port_clear(&fx_port);
	for (int i = 0; i < 6; i++)
		ck_assert_int_eq(uiw_tcp_send(ev.accepted, frame_copy(d, sizeof(d)), 0), 0);
	uiw_tcp_run(T, now_ns);
	uiw_port_flush(&fx_port.port);
	ck_assert_uint_eq(fx_port.nsent, 6);
	fake_port_clear(&fx_port);
	/* The first segment arrives, the second is lost, the next three are SACKed one by
	 * one; every ACK opens the window a little more. */
	for (uint32_t k = 1; k <= 3; k++) {
		uint8_t opt[12] = { 1, 1, 5, 10 };

		put32(opt + 4, una + 2 * 536);
		put32(opt + 8, una + (2 + k) * 536);
		inject(&(struct seg){ .seq = PEER_ISN + 1, .ack = una + 536, .flags = UIW_TCP_ACK,
				      .win = (uint16_t)(60000 + 1000 * k), .opts = opt, .optlen = 12 });
	}
	ck_assert_uint_eq(uiw_tcp_counters(T)[UIW_TCP_C_fast_retransmits], 1);
	ck_assert_uint_ge(fx_port.nsent, 1);
	sent(0, &o);
	ck_assert_uint_eq(o.seq, una + 536);   /* the hole, before any new data */
	ck_assert_uint_eq(o.len, 536);
}
END_TEST

/* A segment whose payload could not be attached (no mbuf for the reference, with one left
 * for the header) is not sent as a bare ACK: the data waits on the blocked list and goes
 * on the next pass, with no ACK or timer needed to wake the connection. */
START_TEST(payload_without_mbuf_goes_next_pass)
{
	struct out syn = establish_passive(NULL, 0), o;
	struct rte_mempool *pool = test_pool();
	unsigned cap = rte_mempool_avail_count(pool), n = 0;
	struct rte_mbuf **hold = calloc(cap, sizeof(*hold));
	char d[500];

	memset(d, 'z', sizeof(d));
	inject(&(struct seg){ .seq = PEER_ISN + 1, .ack = syn.seq + 1, .flags = UIW_TCP_ACK, .win = 65535 });
	fake_port_clear(&fx_port);
	fx_port.port.tx_offloads |= RTE_ETH_TX_OFFLOAD_MULTI_SEGS;   /* payload by reference */
	ck_assert_int_eq(uiw_tcp_send(ev.accepted, frame_copy(d, sizeof(d)), 0), 0);
	while (rte_mempool_avail_count(pool) > 1 && (hold[n] = rte_pktmbuf_alloc(pool)) != NULL)
		n++;
	uiw_tcp_run(T, now_ns);
	uiw_port_flush(&fx_port.port);
	for (unsigned i = 0; i < fx_port.nsent; i++) {
		sent(i, &o);
		ck_assert_uint_eq(o.len, 0);   /* nothing of the data went */
	}
	ck_assert_uint_ge(uiw_tcp_counters(T)[UIW_TCP_C_tx_nombuf], 1);
	while (n > 0)
		rte_pktmbuf_free(hold[--n]);
	free(hold);
	fake_port_clear(&fx_port);
	uiw_tcp_run(T, now_ns);   /* no ACK, no timer: only the next pass */
	uiw_port_flush(&fx_port.port);
	ck_assert_uint_eq(fx_port.nsent, 1);
	sent(0, &o);
	ck_assert_uint_eq(o.len, sizeof(d));
	ck_assert_mem_eq(o.data, d, sizeof(d));
	fx_port.port.tx_offloads &= ~RTE_ETH_TX_OFFLOAD_MULTI_SEGS;
}
END_TEST

/*
 * The payload's sum taken in the pass that copies it into the segment (the port sums
 * nothing): pieces of odd lengths, cut at odd offsets by the MSS (536, no option), each
 * segment's checksum right by the reference code. _i: 0, a port without chained frames
 * (every piece copied); 1, one with them (the 600-octet piece by reference, so the frame
 * is summed whole); 2, one that copies each frame itself (uiw_port.tx_ext: every piece
 * that fits copied).
 */
START_TEST(payload_summed_as_copied)
{
	static const unsigned sizes[] = { 1, 3, 255, 7, 600, 1 };
	struct out syn = establish_passive(NULL, 0), o;
	char d[1000], got[1000];
	unsigned total = 0, ngot = 0;

	for (unsigned i = 0; i < sizeof(d); i++)
		d[i] = (char)(i * 7 + 3);
	fx_port.port.tx_offloads |= _i >= 1 ? RTE_ETH_TX_OFFLOAD_MULTI_SEGS : 0;
	fx_port.port.tx_ext = _i == 2;
	inject(&(struct seg){ .seq = PEER_ISN + 1, .ack = syn.seq + 1, .flags = UIW_TCP_ACK, .win0 = true });
	for (unsigned i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		ck_assert_int_eq(uiw_tcp_send(ev.accepted, frame_copy(d + total, sizes[i]), 0), 0);
		total += sizes[i];
	}
	fake_port_clear(&fx_port);
	inject(&(struct seg){ .seq = PEER_ISN + 1, .ack = syn.seq + 1, .flags = UIW_TCP_ACK, .win = 65535 });
	ck_assert_uint_ge(fx_port.nsent, 2);
	for (unsigned i = 0; i < fx_port.nsent; i++) {
		sent(i, &o);   /* checks the checksum */
		ck_assert_uint_le(o.len, 536);
		memcpy(got + ngot, o.data, o.len);
		ngot += o.len;
	}
	ck_assert_uint_eq(ngot, total);
	ck_assert_mem_eq(got, d, total);
	fx_port.port.tx_offloads &= ~RTE_ETH_TX_OFFLOAD_MULTI_SEGS;
	fx_port.port.tx_ext = false;
}
END_TEST

/*
 * What the layer above summed as it built a record (uiw_tcp_mark_summed(): MPA sums an
 * FPDU in the pass that copies and CRCs it) is what TCP takes for that record copied whole
 * into a segment, on a port that copies each frame itself; a record cut by the MSS is
 * summed afresh. Shown by a sum noted wrong on purpose: the segment holding the first
 * record whole goes out with a checksum that wrong sum made; the second record's two
 * pieces, summed afresh, go out right.
 */
START_TEST(noted_sum_taken_when_copied_whole)
{
	struct out syn = establish_passive(NULL, 0), o;
	char d[1300], got[1300];
	unsigned ngot = 0;
	struct rte_mbuf *a, *b;

	for (unsigned i = 0; i < sizeof(d); i++)
		d[i] = (char)(i * 11 + 5);
	fx_port.port.tx_ext = true;
	inject(&(struct seg){ .seq = PEER_ISN + 1, .ack = syn.seq + 1, .flags = UIW_TCP_ACK, .win0 = true });
	a = frame_copy(d, 300);
	b = frame_copy(d + 300, 1000);
	uiw_tcp_mark_summed(ev.accepted, a, (uint16_t)(uiw_raw_sum(d, 300) ^ 0x0100));
	uiw_tcp_mark_summed(ev.accepted, b, (uint16_t)(uiw_raw_sum(d + 300, 1000) ^ 0x0100));
	ck_assert_int_eq(uiw_tcp_send(ev.accepted, a, UIW_TCP_SEND_RECORD), 0);
	ck_assert_int_eq(uiw_tcp_send(ev.accepted, b, UIW_TCP_SEND_RECORD), 0);
	fake_port_clear(&fx_port);
	inject(&(struct seg){ .seq = PEER_ISN + 1, .ack = syn.seq + 1, .flags = UIW_TCP_ACK, .win = 65535 });
	ck_assert_uint_eq(fx_port.nsent, 3);
	ck_assert(!sent_sum_right(0));
	ck_assert(sent_sum_right(1));
	ck_assert(sent_sum_right(2));
	for (unsigned i = 1; i < 3; i++) {
		sent(i, &o);
		memcpy(got + 300 + ngot, o.data, o.len);
		ngot += o.len;
	}
	ck_assert_uint_eq(ngot, 1000);
	ck_assert_mem_eq(got + 300, d + 300, 1000);
	fx_port.port.tx_ext = false;
}
END_TEST

/*
 * On a port whose PMD frees each frame in the sending thread (_i: 0, one that copies each
 * frame, uiw_port.tx_ext; 1, one that keeps frames until its peer has read them,
 * uiw_port.tx_over), a segment of one whole queued record goes out as a frame over the
 * record's own buffer (uiw_mbuf_over()), and holds it: the tail loss probe sent while that
 * frame is still the PMD's (the fake port keeps what it is given) is copied, and leaves
 * the first frame's headers as they were; the acknowledgement lets the queue go of the
 * record, but the record stays until the last frame over it is freed; once none is, the
 * RTO's retransmission goes over it again.
 */
START_TEST(frames_over_queued_records)
{
	struct out syn = establish_passive(NULL, 0), o, r;
	const uint64_t *ctr = uiw_tcp_counters(T);
	uint8_t d[500], f0[2048], f0_again[2048];   /* a record within the MSS (536) */
	size_t n0;
	unsigned in_use;
	struct rte_mbuf *m;

	for (unsigned i = 0; i < sizeof(d); i++)
		d[i] = (uint8_t)(i * 13 + 7);
	fx_port.port.tx_ext = _i == 0;
	fx_port.port.tx_over = _i == 1;
	inject(&(struct seg){ .seq = PEER_ISN + 1, .ack = syn.seq + 1, .flags = UIW_TCP_ACK, .win0 = true });
	m = frame_copy(d, sizeof(d));
	uiw_tcp_mark_summed(ev.accepted, m, uiw_raw_sum(d, sizeof(d)));
	ck_assert_int_eq(uiw_tcp_send(ev.accepted, m, UIW_TCP_SEND_RECORD), 0);
	fake_port_clear(&fx_port);
	inject(&(struct seg){ .seq = PEER_ISN + 1, .ack = syn.seq + 1, .flags = UIW_TCP_ACK, .win = 65535 });
	ck_assert_uint_eq(fx_port.nsent, 1);
	ck_assert(uiw_mbuf_is_over(fx_port.sent[0]));
	ck_assert_uint_eq(ctr[UIW_TCP_C_tx_over], 1);
	sent(0, &o);
	ck_assert_uint_eq(o.len, sizeof(d));
	ck_assert_mem_eq(o.data, d, sizeof(d));
	n0 = frame_bytes(fx_port.sent[0], f0, sizeof(f0));

	/* The tail loss probe, the first frame still held: copied. */
	advance(5 * MS);
	ck_assert_uint_eq(fx_port.nsent, 2);
	ck_assert_uint_eq(ctr[UIW_TCP_C_tail_loss_probes], 1);
	ck_assert_uint_eq(ctr[UIW_TCP_C_tx_over_busy], 1);
	ck_assert_uint_eq(ctr[UIW_TCP_C_tx_over], 1);
	ck_assert(!uiw_mbuf_is_over(fx_port.sent[1]));
	sent(1, &r);
	ck_assert_uint_eq(r.seq, o.seq);
	ck_assert_uint_eq(r.len, sizeof(d));
	ck_assert_mem_eq(r.data, d, sizeof(d));
	ck_assert_uint_eq(frame_bytes(fx_port.sent[0], f0_again, sizeof(f0_again)), n0);
	ck_assert_mem_eq(f0_again, f0, n0);

	/* Both frames freed: the RTO's retransmission goes over the record again. */
	fake_port_clear(&fx_port);
	advance(250 * MS);
	ck_assert_uint_eq(ctr[UIW_TCP_C_rto_expiries], 1);
	ck_assert_uint_eq(fx_port.nsent, 1);
	ck_assert(uiw_mbuf_is_over(fx_port.sent[0]));
	ck_assert_uint_eq(ctr[UIW_TCP_C_tx_over], 2);
	sent(0, &r);
	ck_assert_uint_eq(r.seq, o.seq);
	ck_assert_mem_eq(r.data, d, sizeof(d));
	n0 = frame_bytes(fx_port.sent[0], f0, sizeof(f0));

	/* Acknowledged while that frame is held: the record outlives the queue's hold. */
	in_use = test_pool_in_use();
	inject(&(struct seg){ .seq = PEER_ISN + 1, .ack = syn.seq + 1 + sizeof(d), .flags = UIW_TCP_ACK,
			      .win = 65535 });
	ck_assert_uint_eq(ev.accepted->snd_una, syn.seq + 1 + sizeof(d));
	ck_assert_uint_eq(test_pool_in_use(), in_use);
	ck_assert_uint_eq(frame_bytes(fx_port.sent[0], f0_again, sizeof(f0_again)), n0);
	ck_assert_mem_eq(f0_again, f0, n0);
	ck_assert_uint_eq(fx_port.nsent, 1);
	fake_port_clear(&fx_port);
	ck_assert_uint_eq(test_pool_in_use(), in_use - 2);   /* the frame and the record */
	fx_port.port.tx_ext = false;
	fx_port.port.tx_over = false;
}
END_TEST

/* Queues @p n records of @p len octets of @p d on @p c, each with its sum noted right,
 * or (at index @p unsummed) none. */
static void queue_summed_records(struct uiw_tcp_conn *c, const uint8_t *d, unsigned n,
				 unsigned len, unsigned unsummed)
{
	for (unsigned k = 0; k < n; k++) {
		struct rte_mbuf *m = frame_copy(d + k * len, len);

		if (k != unsummed)
			uiw_tcp_mark_summed(c, m, uiw_raw_sum(d + k * len, len));
		ck_assert_int_eq(uiw_tcp_send(c, m, UIW_TCP_SEND_RECORD), 0);
	}
}

/* The peer's timestamp option for segments after establish_passive() with syn_opts,
 * echoing our SYN-ACK's (@p syn). */
static void peer_ts(const struct out *syn, uint8_t ts[12])
{
	static const uint8_t base[12] = { 1, 1, 8, 10, 0, 0, 0, 102 };

	memcpy(ts, base, sizeof(base));
	memcpy(ts + 8, opt(syn, 8) + 2, 4);
}

/* With the peer's window shut (acknowledging @p una), queues the records of
 * queue_summed_records(); then the window opens, and what that sends is in fx_port. */
static void records_then_window(struct uiw_tcp_conn *c, uint32_t una, const uint8_t ts[12],
				const uint8_t *d, unsigned n, unsigned len, unsigned unsummed)
{
	inject(&(struct seg){ .seq = PEER_ISN + 1, .ack = una, .flags = UIW_TCP_ACK, .win0 = true,
			      .opts = ts, .optlen = 12 });
	queue_summed_records(c, d, n, len, unsummed);
	fake_port_clear(&fx_port);
	inject(&(struct seg){ .seq = PEER_ISN + 1, .ack = una, .flags = UIW_TCP_ACK, .win = 65535,
			      .opts = ts, .optlen = 12 });
}

/*
 * A run (send_run(), tcp_out.c): on a port without TSO, whole records sent in one pass on
 * headers built once are the frames the segment-by-segment path sends, octet for octet
 * but for the IPv4 identification and the sequence numbers and the two checksums that
 * follow from them: one record a segment (RFC 5044 §8), the same options (timestamps),
 * window and acknowledgement, PSH on the last only, checksums right. _i: 0, a port that
 * copies each frame (frames over the records' buffers); 1, one that keeps frames until its
 * peer has read them (over them too); 2, one that takes chains (the payload by an
 * indirect mbuf). The same six records go first with runs on, then again with them off.
 */
START_TEST(runs_send_the_frames_segments_would)
{
	enum { N = 6, LEN = 1000 };
	struct out syn = establish_passive(syn_opts, sizeof(syn_opts)), o;
	const uint64_t *ctr = uiw_tcp_counters(T);
	struct uiw_tcp_conn *c = ev.accepted;
	static uint8_t d[N * LEN], fr[2][N][2048];
	size_t flen[2][N];
	uint32_t first = syn.seq + 1;
	uint8_t ts[12];

	for (unsigned i = 0; i < sizeof(d); i++)
		d[i] = (uint8_t)(i * 7 + i / 251);
	peer_ts(&syn, ts);
	fx_port.port.tx_ext = _i == 0;
	fx_port.port.tx_over = _i == 1;
	fx_port.port.tx_offloads |= _i == 2 ? RTE_ETH_TX_OFFLOAD_MULTI_SEGS : 0;
	for (unsigned pass = 0; pass < 2; pass++) {
		uint32_t base = first + pass * N * LEN;
		uint64_t runs = ctr[UIW_TCP_C_tx_run_segs];

		T->tx_runs = pass == 0;
		records_then_window(c, base, ts, d, N, LEN, N);
		ck_assert_uint_eq(fx_port.nsent, N);
		ck_assert_uint_eq(ctr[UIW_TCP_C_tx_run_segs] - runs, pass == 0 ? N : 0);
		for (unsigned k = 0; k < N; k++) {
			sent(k, &o);   /* checks both checksums */
			ck_assert_uint_eq(o.seq, base + k * LEN);
			ck_assert_uint_eq(o.ack, PEER_ISN + 1);
			ck_assert_uint_eq(o.flags, UIW_TCP_ACK | (k == N - 1 ? UIW_TCP_PSH : 0));
			ck_assert_uint_eq(o.len, LEN);
			ck_assert_mem_eq(o.data, d + k * LEN, LEN);
			ck_assert_ptr_nonnull(opt(&o, 8));
			ck_assert_int_eq(uiw_mbuf_is_over(fx_port.sent[k]), _i != 2);
			flen[pass][k] = frame_bytes(fx_port.sent[k], fr[pass][k], sizeof(fr[pass][k]));
		}
		inject(&(struct seg){ .seq = PEER_ISN + 1, .ack = base + N * LEN, .flags = UIW_TCP_ACK,
				      .win = 65535, .opts = ts, .optlen = sizeof(ts) });
		ck_assert_uint_eq(c->snd_una, base + N * LEN);
	}
	for (unsigned k = 0; k < N; k++) {
		static const struct { unsigned at, len; } differ[] = {
			{ 18, 2 }, { 24, 2 }, { 38, 4 }, { 50, 2 },   /* IPv4 id and sum, TCP seq, sum */
		};

		ck_assert_uint_eq(flen[0][k], flen[1][k]);
		for (unsigned i = 0; i < sizeof(differ) / sizeof(differ[0]); i++) {
			memset(fr[0][k] + differ[i].at, 0, differ[i].len);
			memset(fr[1][k] + differ[i].at, 0, differ[i].len);
		}
		ck_assert_mem_eq(fr[0][k], fr[1][k], flen[0][k]);
	}
	fx_port.port.tx_ext = false;
	fx_port.port.tx_over = false;
	fx_port.port.tx_offloads &= ~RTE_ETH_TX_OFFLOAD_MULTI_SEGS;
	T->tx_runs = true;
}
END_TEST

/*
 * A record that does not qualify ends a run and goes its own way; the next run starts
 * after it: here the fourth of eight has no sum noted, so it is summed as it is sent, and
 * runs carry the other seven. With SACK blocks to send (an out-of-order segment held),
 * no run is made: the segments carry the blocks.
 */
START_TEST(runs_end_at_a_record_that_does_not_qualify)
{
	enum { N = 8, LEN = 400 };
	struct out syn = establish_passive(syn_opts, sizeof(syn_opts)), o;
	const uint64_t *ctr = uiw_tcp_counters(T);
	struct uiw_tcp_conn *c = ev.accepted;
	static uint8_t d[N * LEN];
	uint32_t first = syn.seq + 1;
	uint8_t ts[12], junk[100] = { 0 };

	for (unsigned i = 0; i < sizeof(d); i++)
		d[i] = (uint8_t)(i * 5 + 3);
	peer_ts(&syn, ts);
	fx_port.port.tx_ext = true;
	records_then_window(c, first, ts, d, N, LEN, 3);
	ck_assert_uint_eq(fx_port.nsent, N);
	ck_assert_uint_eq(ctr[UIW_TCP_C_tx_run_segs], N - 1);
	for (unsigned k = 0; k < N; k++) {
		sent(k, &o);
		ck_assert_uint_eq(o.seq, first + k * LEN);
		ck_assert_mem_eq(o.data, d + k * LEN, LEN);
	}
	inject(&(struct seg){ .seq = PEER_ISN + 1, .ack = first + N * LEN, .flags = UIW_TCP_ACK,
			      .win0 = true, .opts = ts, .optlen = sizeof(ts) });

	/* An out-of-order segment from the peer, held: SACK blocks are owed with every
	 * segment. Then the window opens (on a segment past the held one, as the peer's
	 * next would be). */
	inject(&(struct seg){ .seq = PEER_ISN + 1 + 500, .ack = first + N * LEN, .flags = UIW_TCP_ACK,
			      .win0 = true, .opts = ts, .optlen = sizeof(ts), .data = junk,
			      .len = sizeof(junk) });
	ck_assert_uint_eq(c->nooo, 1);
	queue_summed_records(c, d, N, LEN, N);
	fake_port_clear(&fx_port);
	inject(&(struct seg){ .seq = PEER_ISN + 1 + 500 + sizeof(junk), .ack = first + N * LEN,
			      .flags = UIW_TCP_ACK, .win = 65535, .opts = ts, .optlen = sizeof(ts) });
	ck_assert_uint_ge(fx_port.nsent, N);
	ck_assert_uint_eq(ctr[UIW_TCP_C_tx_run_segs], N - 1);
	for (unsigned k = 0, data = 0; k < fx_port.nsent; k++) {
		sent(k, &o);
		if (o.len == 0)
			continue;
		/* The first, at SND.UNA, may leave them to a pure ACK (segment_opts()). */
		if (data > 0)
			ck_assert_ptr_nonnull(opt(&o, 5));
		ck_assert_mem_eq(o.data, d + data, o.len);
		data += o.len;
	}
	fx_port.port.tx_ext = false;
}
END_TEST

/*
 * A run is made of data never sent: what goes again after the retransmission timer took
 * SND.NXT back goes segment by segment, each counted as a retransmission (and none timed,
 * Karn), even where several records leave in one pass.
 */
START_TEST(runs_leave_retransmissions_to_segments)
{
	enum { N = 4, LEN = 1000 };
	struct out syn = establish_passive(syn_opts, sizeof(syn_opts)), o;
	const uint64_t *ctr = uiw_tcp_counters(T);
	struct uiw_tcp_conn *c = ev.accepted;
	static uint8_t d[N * LEN];
	uint32_t first = syn.seq + 1;
	uint64_t runs, rexmits;
	unsigned again = 0;
	uint8_t ts[12];

	for (unsigned i = 0; i < sizeof(d); i++)
		d[i] = (uint8_t)(i * 3 + 1);
	peer_ts(&syn, ts);
	fx_port.port.tx_ext = true;
	records_then_window(c, first, ts, d, N, LEN, N);
	ck_assert_uint_eq(fx_port.nsent, N);
	ck_assert_uint_eq(ctr[UIW_TCP_C_tx_run_segs], N);
	runs = ctr[UIW_TCP_C_tx_run_segs];
	rexmits = ctr[UIW_TCP_C_retransmits];

	/* Nothing acknowledged: the timer takes SND.NXT back; then the first record's ACK
	 * lets the rest go again, two or more of them in one pass. */
	fake_port_clear(&fx_port);
	advance(1200 * MS);
	ck_assert_uint_ge(ctr[UIW_TCP_C_rto_expiries], 1);
	inject(&(struct seg){ .seq = PEER_ISN + 1, .ack = first + LEN, .flags = UIW_TCP_ACK,
			      .win = 65535, .opts = ts, .optlen = sizeof(ts) });
	for (unsigned k = 0; k < fx_port.nsent; k++) {
		sent(k, &o);
		if (o.len > 0) {
			ck_assert(seq_lt(o.seq, first + N * LEN));
			again++;
		}
	}
	ck_assert_uint_ge(again, 3);
	ck_assert_uint_eq(ctr[UIW_TCP_C_tx_run_segs], runs);
	ck_assert_uint_eq(ctr[UIW_TCP_C_retransmits] - rexmits, again);
	fx_port.port.tx_ext = false;
}
END_TEST

/*
 * The walk that frees acknowledged mbufs asks early for the ones it frees next: each queued
 * mbuf names the one TCP_SQ_AHEAD places behind it, named as that one is queued, and only
 * while the mbuf that holds the name is still queued (a freed one may be someone else's by
 * then: nothing is written into it). Once the queue is empty the names start afresh.
 */
START_TEST(send_queue_names_mbufs_ahead)
{
	enum { N = TCP_SQ_AHEAD + 4, REC = 100 };
	struct out syn = establish_passive(NULL, 0);
	struct uiw_tcp_conn *c = ev.accepted;
	struct rte_mbuf *q[N], *s, *const mark = (struct rte_mbuf *)&q;
	uint32_t first = syn.seq + 1;
	uint8_t d[REC];

	memset(d, 0x5a, sizeof(d));
	ck_assert_int_ge(T->ahead_off, 0);
	for (int round = 0; round < 2; round++) {
		inject(&(struct seg){ .seq = PEER_ISN + 1, .ack = first, .flags = UIW_TCP_ACK,
				      .win0 = true });
		for (unsigned i = 0; i < N; i++) {
			q[i] = frame_copy(d, REC);
			*sq_ahead_of(T, q[i]) = mark;   /* what an mbuf from the pool may hold */
			ck_assert_int_eq(uiw_tcp_send(c, q[i], UIW_TCP_SEND_RECORD), 0);
		}
		for (unsigned i = 0; i < N; i++)
			ck_assert_ptr_eq(*sq_ahead_of(T, q[i]),
					 i + TCP_SQ_AHEAD < N ? q[i + TCP_SQ_AHEAD] : NULL);

		/* Sent (ten segments, the initial window, then the rest), all but the last
		 * acknowledged. */
		inject(&(struct seg){ .seq = PEER_ISN + 1, .ack = first, .flags = UIW_TCP_ACK,
				      .win = 65535 });
		inject(&(struct seg){ .seq = PEER_ISN + 1, .ack = first + 10 * REC,
				      .flags = UIW_TCP_ACK, .win = 65535 });
		ck_assert_uint_eq(c->snd_max, first + N * REC);
		fake_port_clear(&fx_port);
		inject(&(struct seg){ .seq = PEER_ISN + 1, .ack = first + (N - 1) * REC,
				      .flags = UIW_TCP_ACK, .win = 65535 });
		ck_assert_ptr_eq(c->sq.head, q[N - 1]);

		/* The mbuf queued TCP_SQ_AHEAD before the next one is freed: no name goes
		 * into it, nor into any other freed one. */
		s = frame_copy(d, REC);
		for (unsigned i = 0; i < N - 1; i++)
			if (q[i] != s)
				*sq_ahead_of(T, q[i]) = mark;
		ck_assert_int_eq(uiw_tcp_send(c, s, UIW_TCP_SEND_RECORD), 0);
		for (unsigned i = 0; i < N - 1; i++)
			if (q[i] != s)
				ck_assert_ptr_eq(*sq_ahead_of(T, q[i]), mark);
		ck_assert_ptr_null(*sq_ahead_of(T, s));
		ck_assert_ptr_null(*sq_ahead_of(T, q[N - 1]));

		/* All acknowledged: the queue is empty and its ordinals start again. */
		uiw_tcp_run(T, now_ns);   /* s goes out */
		uiw_port_flush(&fx_port.port);
		ck_assert_uint_eq(c->snd_max, first + (N + 1) * REC);
		fake_port_clear(&fx_port);
		inject(&(struct seg){ .seq = PEER_ISN + 1, .ack = first + (N + 1) * REC,
				      .flags = UIW_TCP_ACK, .win = 65535 });
		ck_assert_ptr_null(c->sq.head);
		ck_assert_uint_eq(c->sq.nq, 0);
		ck_assert_uint_eq(c->sq.nfreed, 0);
		first += (N + 1) * REC;
	}
}
END_TEST

/*
 * uiw_tcp_ready_over(): on a port whose frames another core reads (uiw_port.tx_over), an
 * mbuf readied for a record has its data moved so that a data segment's headers (66
 * octets with timestamps) start on a cache line, where they would have spilled 2 octets
 * into the line before; not when the record would no longer fit, and not on other
 * ports. The record then goes out as a frame over that mbuf, starting on the line.
 */
START_TEST(ready_over_puts_the_headers_on_a_line)
{
	struct out syn = establish_passive(syn_opts, sizeof(syn_opts)), o;
	uint8_t ts[12] = { 1, 1, 8, 10, 0, 0, 0, 101 }, d[1000];
	struct uiw_tcp_conn *c = ev.accepted;
	struct rte_mbuf *m = rte_pktmbuf_alloc(test_pool()), *full = rte_pktmbuf_alloc(test_pool());

	ck_assert_ptr_nonnull(m);
	ck_assert_ptr_nonnull(full);
	ck_assert_uint_eq(m->data_off, RTE_PKTMBUF_HEADROOM);
	uiw_tcp_ready_over(c, m, sizeof(d));   /* not a tx_over port */
	ck_assert_uint_eq(m->data_off, RTE_PKTMBUF_HEADROOM);
	fx_port.port.tx_over = true;
	uiw_tcp_ready_over(c, full, rte_pktmbuf_tailroom(full));
	ck_assert_uint_eq(full->data_off, RTE_PKTMBUF_HEADROOM);
	rte_pktmbuf_free(full);
	uiw_tcp_ready_over(c, m, sizeof(d));
	ck_assert_uint_eq((m->data_off - 66u) % RTE_CACHE_LINE_SIZE, 0);
	ck_assert_uint_eq(m->data_off, RTE_PKTMBUF_HEADROOM + 2);

	for (unsigned i = 0; i < sizeof(d); i++)
		d[i] = (uint8_t)(i * 3 + 1);
	memcpy(rte_pktmbuf_append(m, sizeof(d)), d, sizeof(d));
	uiw_tcp_mark_summed(c, m, uiw_raw_sum(d, sizeof(d)));
	ck_assert_int_eq(uiw_tcp_send(c, m, UIW_TCP_SEND_RECORD), 0);
	memcpy(ts + 8, opt(&syn, 8) + 2, 4);
	inject(&(struct seg){ .seq = PEER_ISN + 1, .ack = syn.seq + 1, .flags = UIW_TCP_ACK,
			      .opts = ts, .optlen = 12, .win = 1000 });
	ck_assert_uint_eq(fx_port.nsent, 1);
	ck_assert(uiw_mbuf_is_over(fx_port.sent[0]));
	ck_assert_uint_eq((uintptr_t)rte_pktmbuf_mtod(fx_port.sent[0], char *) % RTE_CACHE_LINE_SIZE, 0);
	sent(0, &o);
	ck_assert_uint_eq(o.optlen, 12);
	ck_assert_uint_eq(o.len, sizeof(d));
	ck_assert_mem_eq(o.data, d, sizeof(d));
	fake_port_clear(&fx_port);
	fx_port.port.tx_over = false;
}
END_TEST

/* The lent memory of the gathered records below: its count, and how often it fell to 0. */
static struct rte_mbuf_ext_shared_info gather_lend;
static unsigned gather_lend_freed;

static void gather_lend_free(void *addr, void *opaque)
{
	(void)addr;
	(void)opaque;
	gather_lend_freed++;
}

/* Sends what the window lets out and appends the segments' payload to @p got (at *@p n),
 * checking each segment's sums and that no record starts inside one (@p starts). */
static void take_segments(uint32_t first, const uint32_t *starts, unsigned nstarts,
			  uint8_t *got, uint32_t *n)
{
	struct out o;

	for (unsigned i = 0; i < fx_port.nsent; i++) {
		sent(i, &o);   /* checks the checksum */
		uint32_t off = o.seq - first;

		for (unsigned k = 0; k < nstarts; k++)
			ck_assert_msg(starts[k] <= off || starts[k] >= off + o.len,
				      "record at %u inside the segment at %u+%u", starts[k], off, o.len);
		ck_assert_uint_eq(off, *n);
		memcpy(got + *n, o.data, o.len);
		*n += o.len;
	}
	fake_port_clear(&fx_port);
}

/*
 * A gathered record (uiw_tcp_gather(): head and tail kept in its mbuf, lent memory between)
 * goes out as the octets it stands for wherever a segment cuts it: a record longer than
 * the MSS (536 here) is cut inside its memory, parts of odd lengths shift the sum's byte
 * order, and each kind of port copies it (_i as in payload_summed_as_copied). Each record
 * counts the memory once until it is acknowledged. One taken back by uiw_tcp_sndq_own()
 * lets the memory go at once and goes out as it was, though the memory changed after.
 */
START_TEST(gathered_records_sent_as_their_parts)
{
	static const struct { uint32_t h, m, t; } rec[] = {
		{ 3, 257, 5 }, { 18, 1000, 4 }, { 64, 300, 7 }, { 1, 520, 1 },
	};
	enum { NREC = sizeof(rec) / sizeof(rec[0]) };
	struct out syn = establish_passive(NULL, 0);
	static uint8_t mem[NREC][1000], want[NREC * 1100], got[NREC * 1100];
	uint8_t edge[2 * UIW_TCP_GATHER_EDGE_MAX];
	uint32_t starts[NREC], nwant = 0, ngot = 0, first = syn.seq + 1;
	struct uiw_tcp_conn *c = ev.accepted;
	struct rte_mbuf *m;

	fx_port.port.tx_offloads |= _i >= 1 ? RTE_ETH_TX_OFFLOAD_MULTI_SEGS : 0;
	fx_port.port.tx_ext = _i == 2;
	gather_lend = (struct rte_mbuf_ext_shared_info){ .free_cb = gather_lend_free };
	rte_mbuf_ext_refcnt_set(&gather_lend, 1);
	gather_lend_freed = 0;
	for (unsigned i = 0; i < sizeof(edge); i++)
		edge[i] = (uint8_t)(i * 13 + 1);
	ck_assert_uint_ge(uiw_tcp_gather_max(c), 1100);
	inject(&(struct seg){ .seq = PEER_ISN + 1, .ack = first, .flags = UIW_TCP_ACK, .win0 = true });
	for (unsigned k = 0; k < NREC; k++) {
		const uint8_t *tail = edge + UIW_TCP_GATHER_EDGE_MAX;

		for (unsigned i = 0; i < rec[k].m; i++)
			mem[k][i] = (uint8_t)(k * 31 + i * 7);
		m = uiw_tcp_gather(c, edge, rec[k].h, mem[k], rec[k].m, &gather_lend, tail, rec[k].t);
		ck_assert_ptr_nonnull(m);
		ck_assert_int_eq(uiw_tcp_send(c, m, UIW_TCP_SEND_RECORD), 0);
		starts[k] = nwant;
		memcpy(want + nwant, edge, rec[k].h);
		memcpy(want + nwant + rec[k].h, mem[k], rec[k].m);
		memcpy(want + nwant + rec[k].h + rec[k].m, tail, rec[k].t);
		nwant += rec[k].h + rec[k].m + rec[k].t;
	}
	ck_assert_uint_eq(rte_mbuf_ext_refcnt_read(&gather_lend), 1 + NREC);
	fake_port_clear(&fx_port);
	inject(&(struct seg){ .seq = PEER_ISN + 1, .ack = first, .flags = UIW_TCP_ACK, .win = 65535 });
	take_segments(first, starts, NREC, got, &ngot);
	ck_assert_uint_eq(ngot, nwant);
	ck_assert_mem_eq(got, want, nwant);
	ck_assert_uint_eq(rte_mbuf_ext_refcnt_read(&gather_lend), 1 + NREC);   /* unacknowledged */
	inject(&(struct seg){ .seq = PEER_ISN + 1, .ack = first + nwant, .flags = UIW_TCP_ACK,
			      .win0 = true });
	ck_assert_uint_eq(rte_mbuf_ext_refcnt_read(&gather_lend), 1);
	ck_assert_uint_eq(gather_lend_freed, 0);

	/* Taken back while queued: the memory is free at once, the record goes as it was. */
	m = uiw_tcp_gather(c, edge, rec[1].h, mem[1], rec[1].m, &gather_lend, edge, rec[1].t);
	ck_assert_int_eq(uiw_tcp_send(c, m, UIW_TCP_SEND_RECORD), 0);
	memcpy(want, edge, rec[1].h);
	memcpy(want + rec[1].h, mem[1], rec[1].m);
	memcpy(want + rec[1].h + rec[1].m, edge, rec[1].t);
	ck_assert_int_eq(uiw_tcp_sndq_own(c), 0);
	ck_assert_uint_eq(rte_mbuf_ext_refcnt_read(&gather_lend), 1);
	ck_assert(c->sq.ahead_stale);   /* its copies stand where its names pointed */
	ck_assert_ptr_null(*sq_ahead_of(T, c->sq.head));
	memset(mem[1], 0xee, sizeof(mem[1]));
	fake_port_clear(&fx_port);
	inject(&(struct seg){ .seq = PEER_ISN + 1, .ack = first + nwant, .flags = UIW_TCP_ACK,
			      .win = 65535 });
	starts[0] = 0;
	ngot = 0;
	take_segments(first + nwant, starts, 1, got, &ngot);
	ck_assert_uint_eq(ngot, rec[1].h + rec[1].m + rec[1].t);
	ck_assert_mem_eq(got, want, ngot);
	fx_port.port.tx_offloads &= ~RTE_ETH_TX_OFFLOAD_MULTI_SEGS;
	fx_port.port.tx_ext = false;
}
END_TEST

/*
 * A full port TX queue holds data back instead of dropping it: the segments that do not
 * fit wait (tx_port_wait), go on the next pass once the PMD takes frames again, in order,
 * and nothing is retransmitted or dropped.
 */
START_TEST(full_port_queue_holds_data_back)
{
	struct out syn = establish_passive(NULL, 0), o;
	uint8_t f[60] = { 0 };
	char d[536];
	uint32_t una = syn.seq + 1;

	memset(d, 'x', sizeof(d));
	inject(&(struct seg){ .seq = PEER_ISN + 1, .ack = una, .flags = UIW_TCP_ACK, .win = 65535 });
	fake_port_clear(&fx_port);
	fx_port.accept = 0;   /* the PMD's ring is full */
	for (int i = 0; i < UIW_PORT_TX_BUF - 2; i++)
		uiw_port_tx(&fx_port.port, frame_copy(f, sizeof(f)));
	for (int i = 0; i < 6; i++)
		ck_assert_int_eq(uiw_tcp_send(ev.accepted, frame_copy(d, sizeof(d)), 0), 0);
	uiw_tcp_run(T, now_ns);
	ck_assert_uint_eq(fx_port.nsent, 0);
	ck_assert_uint_eq(fx_port.port.tx_n, UIW_PORT_TX_BUF);
	ck_assert_uint_ge(uiw_tcp_counters(T)[UIW_TCP_C_tx_port_wait], 1);
	fx_port.accept = UINT32_MAX;   /* the ring drains */
	uiw_port_flush(&fx_port.port);
	ck_assert_uint_eq(fx_port.nsent, UIW_PORT_TX_BUF);
	uiw_tcp_run(T, now_ns);
	uiw_port_flush(&fx_port.port);
	ck_assert_uint_eq(fx_port.nsent, UIW_PORT_TX_BUF + 4);
	for (unsigned i = 0; i < 6; i++) {
		sent(UIW_PORT_TX_BUF - 2 + i, &o);
		ck_assert_uint_eq(o.seq, una + i * 536);
		ck_assert_uint_eq(o.len, 536);
	}
	ck_assert_uint_eq(fx_port.port.counters[UIW_PORT_C_tx_drop_full], 0);
	ck_assert_uint_eq(uiw_tcp_counters(T)[UIW_TCP_C_retransmits], 0);
}
END_TEST

/* A SYN that meets a full port queue waits for the next pass like data, instead of being
 * dropped and sent again by the retransmission timer a second later (a burst of set-ups
 * over memif overflowed the ring that way). */
START_TEST(syn_waits_for_a_full_port_queue)
{
	uint8_t f[60] = { 0 };
	struct uiw_tcp_conn *c;
	struct out o;

	fx_port.accept = 0;   /* the PMD's ring is full */
	for (int i = 0; i < UIW_PORT_TX_BUF; i++)
		uiw_port_tx(&fx_port.port, frame_copy(f, sizeof(f)));
	ck_assert_int_eq(uiw_tcp_connect(T, IP_PEER, 82, &ops, NULL, now_ns, &c), 0);
	ck_assert_uint_eq(fx_port.port.counters[UIW_PORT_C_tx_drop_full], 0);
	ck_assert_uint_ge(uiw_tcp_counters(T)[UIW_TCP_C_tx_port_wait], 1);
	fx_port.accept = UINT32_MAX;   /* the ring drains */
	uiw_port_flush(&fx_port.port);
	ck_assert_uint_eq(fx_port.nsent, UIW_PORT_TX_BUF);
	uiw_tcp_run(T, now_ns);   /* the next pass, long before any timer */
	uiw_port_flush(&fx_port.port);
	ck_assert_uint_eq(fx_port.nsent, UIW_PORT_TX_BUF + 1);
	sent(UIW_PORT_TX_BUF, &o);
	ck_assert_uint_eq(o.flags, UIW_TCP_SYN);
	ck_assert_uint_eq(uiw_tcp_counters(T)[UIW_TCP_C_retransmits], 0);
}
END_TEST

START_TEST(orderly_close_both_ways)
{
	struct out syn = establish_passive(NULL, 0), o;

	uiw_tcp_close(ev.accepted);
	uiw_tcp_run(T, now_ns);
	uiw_port_flush(&fx_port.port);
	sent(0, &o);
	ck_assert_uint_eq(o.flags, UIW_TCP_FIN | UIW_TCP_ACK);
	ck_assert_int_eq(uiw_tcp_state(ev.accepted), UIW_TCP_FIN_WAIT_1);
	inject(&(struct seg){ .seq = PEER_ISN + 1, .ack = syn.seq + 2, .flags = UIW_TCP_ACK });
	ck_assert_int_eq(uiw_tcp_state(ev.accepted), UIW_TCP_FIN_WAIT_2);
	inject(&(struct seg){ .seq = PEER_ISN + 1, .ack = syn.seq + 2, .flags = UIW_TCP_FIN | UIW_TCP_ACK });
	ck_assert_int_eq(uiw_tcp_state(ev.accepted), UIW_TCP_TIME_WAIT);
	ck_assert_uint_eq(ev.closed, 1);
	ck_assert_int_eq(ev.closed_err, 0);
	sent(fx_port.nsent - 1, &o);
	ck_assert_uint_eq(o.ack, PEER_ISN + 2);
	ck_assert_uint_eq(uiw_tcp_conn_count(T), 1);
	advance(1100 * MS); /* tcp_time_wait_ms = 1000 */
	ck_assert_uint_eq(uiw_tcp_conn_count(T), 0);
}
END_TEST

/* A FIN sent after the data, then the retransmission timer: the data go again from
 * SND.UNA, and the peer, which had it all and the FIN, acknowledges the FIN before our
 * retransmissions reach it (its own FIN with it, or on its own). The FIN counts as sent
 * (RFC 9293 §3.10.7.4: "if our FIN is now acknowledged"), so FIN-WAIT-1 moves on, and no
 * second FIN goes out past the first: a peer that has closed would answer that with a
 * RST, which reset a connection whose every octet had been delivered. */
START_TEST(fin_acknowledged_while_retransmitting)
{
	struct out syn = establish_passive(NULL, 0), o;
	uint8_t d[1000];
	uint32_t fin_seq;

	memset(d, 0x5a, sizeof(d));
	ck_assert_int_eq(uiw_tcp_send(ev.accepted, frame_copy(d, sizeof(d)), 0), 0);
	uiw_tcp_close(ev.accepted);
	uiw_tcp_run(T, now_ns);
	uiw_port_flush(&fx_port.port);
	sent(fx_port.nsent - 1, &o);
	ck_assert_uint_ne(o.flags & UIW_TCP_FIN, 0);
	fin_seq = o.seq + o.len;
	ck_assert_uint_eq(fin_seq, syn.seq + 1 + sizeof(d));
	ck_assert_int_eq(uiw_tcp_state(ev.accepted), UIW_TCP_FIN_WAIT_1);
	/* No ACK: past the probe and the RTO, the first segment goes again. */
	advance(400 * MS);
	ck_assert_uint_ge(uiw_tcp_counters(T)[UIW_TCP_C_rto_expiries], 1);
	fake_port_clear(&fx_port);
	if (_i == 0) {   /* the peer's FIN acknowledges all of ours */
		inject(&(struct seg){ .seq = PEER_ISN + 1, .ack = fin_seq + 1,
				      .flags = UIW_TCP_FIN | UIW_TCP_ACK });
		ck_assert_int_eq(uiw_tcp_state(ev.accepted), UIW_TCP_TIME_WAIT);
		ck_assert_uint_eq(ev.peer_closed, 0); /* closed already: nothing more to say */
	} else {         /* an ACK of all, then the peer's FIN */
		if (_i == 2) { /* first of the data only: the FIN goes again, where it was */
			inject(&(struct seg){ .seq = PEER_ISN + 1, .ack = fin_seq, .flags = UIW_TCP_ACK });
			ck_assert_int_eq(uiw_tcp_state(ev.accepted), UIW_TCP_FIN_WAIT_1);
			fake_port_clear(&fx_port);
			advance(1000 * MS);
			ck_assert_uint_ge(fx_port.nsent, 1);
			for (unsigned i = 0; i < fx_port.nsent; i++) {
				sent(i, &o);
				ck_assert_uint_eq(o.flags, UIW_TCP_FIN | UIW_TCP_ACK);
				ck_assert_uint_eq(o.seq, fin_seq);
				ck_assert_uint_eq(o.len, 0);
			}
			fake_port_clear(&fx_port);
		}
		inject(&(struct seg){ .seq = PEER_ISN + 1, .ack = fin_seq + 1, .flags = UIW_TCP_ACK });
		ck_assert_int_eq(uiw_tcp_state(ev.accepted), UIW_TCP_FIN_WAIT_2);
		inject(&(struct seg){ .seq = PEER_ISN + 1, .ack = fin_seq + 1,
				      .flags = UIW_TCP_FIN | UIW_TCP_ACK });
		ck_assert_int_eq(uiw_tcp_state(ev.accepted), UIW_TCP_TIME_WAIT);
	}
	ck_assert_uint_eq(ev.closed, 1);
	ck_assert_int_eq(ev.closed_err, 0);
	advance(500 * MS);
	/* Only ACKs of the peer's FIN went out, at our FIN's end. */
	ck_assert_uint_ge(fx_port.nsent, 1);
	for (unsigned i = 0; i < fx_port.nsent; i++) {
		sent(i, &o);
		ck_assert_uint_eq(o.flags, UIW_TCP_ACK);
		ck_assert_uint_eq(o.seq, fin_seq + 1);
		ck_assert_uint_eq(o.ack, PEER_ISN + 2);
		ck_assert_uint_eq(o.len, 0);
	}
}
END_TEST

/* A process's exit: what the program left open is closed (FIN); once the FIN is
 * acknowledged nothing is owed; a connection whose peer never acknowledges is reset. */
START_TEST(exit_closes_then_resets_what_is_still_owed)
{
	struct out syn = establish_passive(NULL, 0), o;
	unsigned n;

	ck_assert_uint_eq(uiw_tcp_owed(T), 0);
	uiw_tcp_close_all(T);
	uiw_tcp_run(T, now_ns);
	uiw_port_flush(&fx_port.port);
	sent(fx_port.nsent - 1, &o);
	ck_assert_uint_eq(o.flags, UIW_TCP_FIN | UIW_TCP_ACK);
	ck_assert_int_eq(uiw_tcp_state(ev.accepted), UIW_TCP_FIN_WAIT_1);
	ck_assert_uint_eq(uiw_tcp_owed(T), 1);
	if (_i == 0) {   /* the peer acknowledges the FIN: nothing owed, nothing reset */
		inject(&(struct seg){ .seq = PEER_ISN + 1, .ack = syn.seq + 2, .flags = UIW_TCP_ACK });
		ck_assert_int_eq(uiw_tcp_state(ev.accepted), UIW_TCP_FIN_WAIT_2);
		ck_assert_uint_eq(uiw_tcp_owed(T), 0);
		n = fx_port.nsent;
		ck_assert_uint_eq(uiw_tcp_reset_owed(T), 0);
		uiw_port_flush(&fx_port.port);
		ck_assert_uint_eq(fx_port.nsent, n);
		ck_assert_uint_eq(uiw_tcp_conn_count(T), 1);
	} else {         /* it never does: reset, so that it stops waiting */
		ck_assert_uint_eq(uiw_tcp_reset_owed(T), 1);
		uiw_port_flush(&fx_port.port);
		sent(fx_port.nsent - 1, &o);
		ck_assert_uint_ne(o.flags & UIW_TCP_RST, 0);
		ck_assert_uint_eq(uiw_tcp_conn_count(T), 0);
		ck_assert_uint_eq(uiw_tcp_owed(T), 0);
	}
}
END_TEST

START_TEST(truncated_segment_dropped_and_counted)
{
	uint8_t f[200];
	size_t len = build_seg(f, &(struct seg){ .seq = 5, .flags = UIW_TCP_SYN, .opts = syn_opts,
						 .optlen = sizeof(syn_opts) });
	size_t cut = (size_t)_i;
	struct rte_mbuf *m;
	const uint64_t *tc = uiw_tcp_counters(T);
	uint64_t drops_before = tc[UIW_TCP_C_drop_short] + tc[UIW_TCP_C_drop_doff];

	ck_assert_int_eq(uiw_tcp_listen(T, OUR_PORT, 8, &ops, NULL), 0);
	/* Keep the IPv4 header consistent with the cut, so the TCP layer sees it. */
	put16(f + 16, (uint16_t)(cut - 14));
	put16(f + 24, 0);
	put16(f + 24, ref_cksum(f + 14, 20));
	m = frame_exact(f, cut);
	uiw_net_input(&fx_net, &m, 1, now_ns);
	uiw_tcp_run(T, now_ns);
	uiw_port_flush(&fx_port.port);
	ck_assert_uint_eq(fx_port.nsent, 0);
	ck_assert_uint_lt(cut, len);
	ck_assert_uint_eq(tc[UIW_TCP_C_drop_short] + tc[UIW_TCP_C_drop_doff] +
				  tc[UIW_TCP_C_drop_cksum], drops_before + 1);
}
END_TEST

/* Hands @p n segments to the stack in one receive burst, as a PMD's burst would; those
 * with @p bad set in @p bad_mask go with one payload octet flipped after their sums. */
static void inject_burst(const struct seg *segs, unsigned n, uint32_t bad_mask)
{
	static uint8_t f[16][4200];
	struct rte_mbuf *m[16];

	ck_assert_uint_le(n, 16);
	for (unsigned i = 0; i < n; i++) {
		size_t len = build_seg(f[i], &segs[i]);

		if (bad_mask & (1u << i))
			f[i][len - 1] ^= 0x10;
		m[i] = frame_copy(f[i], len);
	}
	uiw_net_input(&fx_net, m, (uint16_t)n, now_ns);
	uiw_tcp_run(T, now_ns);
	uiw_port_flush(&fx_port.port);
}

/*
 * A burst's in-order segments of one connection go up joined (tcp_in.c, "Joining a
 * burst's segments"): one delivery for the run, one ACK at once for all of it. A frame
 * that does not continue the run (another window, no payload, another connection, a gap,
 * the last of its burst, the most tcp_rx_join allows) ends it and goes its own way, and
 * none starts while the layer above holds part of a record; a segment with a bad checksum
 * is dropped and counted as ever, and what follows it is out of order. With tcp_rx_join
 * off (the loop's second pass) each segment goes up alone, the octets and the ACKs' end
 * the same.
 */
START_TEST(burst_segments_joined_in_order)
{
	struct out syn = establish_passive(NULL, 0), o;
	const uint64_t *ctr = uiw_tcp_counters(T);
	static uint8_t d[24 * 300];
	uint32_t a = syn.seq + 1, q = PEER_ISN + 1;
	bool join = _i == 0;

	T->rx_join = join ? 8 : 0;
	for (unsigned i = 0; i < sizeof(d); i++)
		d[i] = (uint8_t)(i * 13 + i / 253);
#define DSEGF(k, fl, w) { .seq = q + (k) * 300, .ack = a, .flags = (fl), .win = (w), \
			  .data = d + (k) * 300, .len = 300 }
#define DSEG(k) DSEGF(k, UIW_TCP_ACK, 0)
	/* 0-2 join (2 with PSH); 3 has another window and starts a run that 4 joins; a bare
	 * ACK ends it; 5 is the burst's last and goes alone. */
	const struct seg b1[] = {
		DSEG(0), DSEG(1), DSEGF(2, UIW_TCP_ACK | UIW_TCP_PSH, 0), DSEGF(3, UIW_TCP_ACK, 30000),
		DSEGF(4, UIW_TCP_ACK, 30000), { .seq = q + 5 * 300, .ack = a, .flags = UIW_TCP_ACK },
		DSEG(5),
	};

	inject_burst(b1, RTE_DIM(b1), 0);
	ck_assert_uint_eq(ev.ndata, 6 * 300);
	ck_assert_mem_eq(ev.data, d, 6 * 300);
	ck_assert_uint_eq(ev.recv_calls, join ? 3 : 6);
	ck_assert_uint_eq(ctr[UIW_TCP_C_rx_joined], join ? 3 : 0);
	ck_assert_uint_eq(ctr[UIW_TCP_C_rx_large], 0);
	ck_assert_uint_ge(fx_port.nsent, 1);
	sent(fx_port.nsent - 1, &o);
	ck_assert_uint_eq(o.ack, q + 6 * 300);   /* all of it acknowledged at once */
	fake_port_clear(&fx_port);

	/* 6 held; 7 continues it but fails its checksum: dropped; 8 is then a gap, so 6 goes
	 * up alone and 8 waits out of order. */
	const struct seg b2[] = { DSEG(6), DSEG(7), DSEG(8) };
	unsigned calls = ev.recv_calls;

	inject_burst(b2, RTE_DIM(b2), 1u << 1);
	ck_assert_uint_eq(ctr[UIW_TCP_C_drop_cksum], 1);
	ck_assert_uint_eq(ev.ndata, 7 * 300);
	ck_assert_uint_eq(ev.recv_calls, calls + 1);
	ck_assert_uint_eq(ctr[UIW_TCP_C_ooo_segs], 1);
	fake_port_clear(&fx_port);

	/* 7 again, alone in its burst: 7 and 8 go up. Then 9 and 10 around a segment of a
	 * connection there is none of (it gets a RST): nothing joins across it. */
	inject_burst(&b2[1], 1, 0);
	ck_assert_uint_eq(ev.ndata, 9 * 300);
	const struct seg b3[] = {
		DSEG(9), { .sport = PEER_PORT + 9, .seq = 77, .ack = 5, .flags = UIW_TCP_ACK,
			   .data = d, .len = 300 }, DSEG(10), DSEG(11),
	};
	uint64_t joined = ctr[UIW_TCP_C_rx_joined];

	calls = ev.recv_calls;
	fake_port_clear(&fx_port);
	inject_burst(b3, RTE_DIM(b3), 0);
	ck_assert_uint_eq(ev.ndata, 12 * 300);
	ck_assert_mem_eq(ev.data, d, 12 * 300);
	ck_assert_uint_eq(ev.recv_calls, calls + (join ? 2 : 3));   /* 9; 10 and 11 */
	ck_assert_uint_eq(ctr[UIW_TCP_C_rx_joined] - joined, join ? 1 : 0);
	ck_assert_uint_eq(ctr[UIW_TCP_C_drop_no_conn], 1);
	sent(fx_port.nsent - 1, &o);
	ck_assert_uint_eq(o.ack, q + 12 * 300);

	/* At most tcp_rx_join segments go in a join: ten in a row at 4 go as 4, 4 and 2. */
	const struct seg b4[] = { DSEG(12), DSEG(13), DSEG(14), DSEG(15), DSEG(16),
				  DSEG(17), DSEG(18), DSEG(19), DSEG(20), DSEG(21) };

	T->rx_join = join ? 4 : 0;
	calls = ev.recv_calls;
	joined = ctr[UIW_TCP_C_rx_joined];
	inject_burst(b4, RTE_DIM(b4), 0);
	ck_assert_uint_eq(ev.ndata, 22 * 300);
	ck_assert_mem_eq(ev.data, d, 22 * 300);
	ck_assert_uint_eq(ev.recv_calls, calls + (join ? 3 : 10));
	ck_assert_uint_eq(ctr[UIW_TCP_C_rx_joined] - joined, join ? 7 : 0);

	/* While the layer above holds part of a record, nothing joins: the receive budget
	 * would refuse a join whole. */
	const struct seg b5[] = { DSEG(22), DSEG(23) };

	uiw_tcp_ulp_held(ev.accepted, 10, 1);
	calls = ev.recv_calls;
	joined = ctr[UIW_TCP_C_rx_joined];
	inject_burst(b5, RTE_DIM(b5), 0);
	uiw_tcp_ulp_held(ev.accepted, 0, 0);
	ck_assert_uint_eq(ev.ndata, 24 * 300);
	ck_assert_mem_eq(ev.data, d, 24 * 300);
	ck_assert_uint_eq(ev.recv_calls, calls + 2);
	ck_assert_uint_eq(ctr[UIW_TCP_C_rx_joined], joined);
#undef DSEG
#undef DSEGF
	T->rx_join = 8;
}
END_TEST

START_TEST(bad_checksum_dropped)
{
	uint8_t f[200];
	size_t len = build_seg(f, &(struct seg){ .seq = 5, .flags = UIW_TCP_SYN });

	ck_assert_int_eq(uiw_tcp_listen(T, OUR_PORT, 8, &ops, NULL), 0);
	f[len - 1] ^= 0x40;
	fx_input(frame_copy(f, len), now_ns);
	uiw_tcp_run(T, now_ns);
	uiw_port_flush(&fx_port.port);
	ck_assert_uint_eq(fx_port.nsent, 0);
	ck_assert_uint_eq(uiw_tcp_counters(T)[UIW_TCP_C_drop_cksum], 1);
	ck_assert_uint_eq(uiw_tcp_conn_count(T), 0);
}
END_TEST

START_TEST(backlog_bounds_half_open_connections)
{
	T->syncookies = false;
	ck_assert_int_eq(uiw_tcp_listen(T, OUR_PORT, 2, &ops, NULL), 0);
	for (uint16_t p = 1; p <= 5; p++)
		inject(&(struct seg){ .sport = (uint16_t)(PEER_PORT + p), .seq = 9, .flags = UIW_TCP_SYN });
	ck_assert_uint_eq(uiw_tcp_conn_count(T), 2);
	ck_assert_uint_eq(fx_port.nsent, 2);
	ck_assert_uint_eq(uiw_tcp_counters(T)[UIW_TCP_C_drop_backlog], 3);
}
END_TEST

/* A SYN cookie SYN-ACK for @p sport: the listener (backlog 1) already holds a half-open
 * connection. @return the SYN-ACK. */
static struct out cookie_synack(uint16_t sport, const uint8_t *opts, unsigned optlen)
{
	struct out o;

	ck_assert_int_eq(uiw_tcp_listen(T, OUR_PORT, 1, &ops, NULL), 0);
	inject(&(struct seg){ .sport = PEER_PORT, .seq = 9, .flags = UIW_TCP_SYN });
	fake_port_clear(&fx_port);
	inject(&(struct seg){ .sport = sport, .seq = PEER_ISN, .flags = UIW_TCP_SYN, .opts = opts,
			      .optlen = optlen });
	ck_assert_uint_eq(uiw_tcp_conn_count(T), 1);   /* no state kept for it */
	ck_assert_uint_eq(uiw_tcp_counters(T)[UIW_TCP_C_syncookies_sent], 1);
	ck_assert_uint_eq(fx_port.nsent, 1);
	sent(0, &o);
	ck_assert_uint_eq(o.flags, UIW_TCP_SYN | UIW_TCP_ACK);
	ck_assert_uint_eq(o.ack, PEER_ISN + 1);
	fake_port_clear(&fx_port);
	return o;
}

/* RFC 4987 §3.6: with the queue full, the ACK of a cookie SYN-ACK opens the connection with
 * the MSS, window scale, SACK and timestamps its SYN asked for, and data on it is taken. */
START_TEST(syncookie_opens_connection_with_its_options)
{
	struct out o = cookie_synack(PEER_PORT + 1, syn_opts, sizeof(syn_opts));
	uint8_t ts_ack[12] = { 1, 1, 8, 10, 0, 0, 0, 101 };
	struct uiw_tcp_conn *c;
	const uint8_t *ts = opt(&o, 8);

	ck_assert_ptr_nonnull(ts);
	ck_assert_ptr_nonnull(opt(&o, 4));                 /* SACK-permitted answered */
	ck_assert_ptr_nonnull(opt(&o, 3));                 /* so is the window scale */
	ck_assert_uint_eq(get32(ts + 2) & 0x1f, 0x10 | 7); /* SACK, shift 7 ride in TSval */
	memcpy(ts_ack + 8, ts + 2, 4);
	inject(&(struct seg){ .sport = PEER_PORT + 1, .seq = PEER_ISN + 1, .ack = o.seq + 1,
			      .flags = UIW_TCP_ACK | UIW_TCP_PSH, .win = 100, .opts = ts_ack,
			      .optlen = 12, .data = "cookie", .len = 6 });
	ck_assert_uint_eq(uiw_tcp_counters(T)[UIW_TCP_C_syncookies_ok], 1);
	c = uiw_tcp_lookup(T, IP_US, OUR_PORT, IP_PEER, PEER_PORT + 1);
	ck_assert_ptr_nonnull(c);
	ck_assert_ptr_eq(ev.accepted, c);
	ck_assert_int_eq(uiw_tcp_state(c), UIW_TCP_ESTABLISHED);
	ck_assert_uint_eq(c->snd_wscale, 7);
	ck_assert_uint_eq(c->snd_wnd, 100u << 7);
	ck_assert(c->flags & TF_SACK_OK);
	ck_assert(c->flags & TF_TS_OK);
	ck_assert_uint_eq(c->mss, 1460 - 12);
	ck_assert_uint_eq(ev.ndata, 6);
	ck_assert_mem_eq(ev.data, "cookie", 6);
	ck_assert_uint_eq(uiw_tcp_conn_count(T), 2);
}
END_TEST

/* Without timestamps a cookie cannot carry SACK or window scale: the connection has none,
 * and its MSS is the table's entry at or below the peer's. */
START_TEST(syncookie_without_timestamps_has_no_scale_or_sack)
{
	static const uint8_t opts[] = { 2, 4, 0x05, 0x00, 1, 1, 4, 2, 1, 3, 3, 7 }; /* MSS 1280 */
	struct out o = cookie_synack(PEER_PORT + 1, opts, sizeof(opts));
	struct uiw_tcp_conn *c;

	ck_assert_ptr_null(opt(&o, 8));
	inject(&(struct seg){ .sport = PEER_PORT + 1, .seq = PEER_ISN + 1, .ack = o.seq + 1,
			      .flags = UIW_TCP_ACK });
	c = uiw_tcp_lookup(T, IP_US, OUR_PORT, IP_PEER, PEER_PORT + 1);
	ck_assert_ptr_nonnull(c);
	ck_assert_int_eq(uiw_tcp_state(c), UIW_TCP_ESTABLISHED);
	ck_assert_uint_eq(c->snd_wscale, 0);
	ck_assert(!(c->flags & (TF_SACK_OK | TF_TS_OK | TF_WS_OK)));
	ck_assert_uint_eq(c->mss, 1220);
}
END_TEST

/* A cookie verifies only for its own addresses, ports and ISN, and only for two periods:
 * anything else is answered with a RST and counted. */
START_TEST(syncookie_forged_or_stale_refused)
{
	struct out o = cookie_synack(PEER_PORT + 1, NULL, 0), r;
	const uint64_t *tc = uiw_tcp_counters(T);
	const struct seg bad[] = {
		{ .sport = PEER_PORT + 1, .seq = PEER_ISN + 1, .ack = (o.seq ^ 0x10) + 1, .flags = UIW_TCP_ACK },
		{ .sport = PEER_PORT + 2, .seq = PEER_ISN + 1, .ack = o.seq + 1, .flags = UIW_TCP_ACK },
		{ .sport = PEER_PORT + 1, .seq = PEER_ISN + 2, .ack = o.seq + 1, .flags = UIW_TCP_ACK },
	};

	for (unsigned i = 0; i < 3; i++) {
		inject(&bad[i]);
		ck_assert_uint_eq(tc[UIW_TCP_C_syncookies_bad], i + 1);
		ck_assert_uint_eq(fx_port.nsent, 1);
		sent(0, &r);
		ck_assert_uint_eq(r.flags, UIW_TCP_RST);
		fake_port_clear(&fx_port);
	}
	ck_assert_uint_eq(uiw_tcp_conn_count(T), 1);
	/* Two periods of 64 s later the right cookie is stale too. */
	now_ns += 129ull * 1000 * MS;
	inject(&(struct seg){ .sport = PEER_PORT + 1, .seq = PEER_ISN + 1, .ack = o.seq + 1,
			      .flags = UIW_TCP_ACK });
	ck_assert_uint_eq(tc[UIW_TCP_C_syncookies_ok], 0);
	ck_assert_ptr_null(uiw_tcp_lookup(T, IP_US, OUR_PORT, IP_PEER, PEER_PORT + 1));
}
END_TEST

/* A half-open connection whose SYN-ACK went out again unanswered gives its place to a new
 * SYN when the queue is full (the oldest first); fresh ones are kept and cookies used. */
START_TEST(half_open_evicted_once_its_synack_is_unanswered)
{
	ck_assert_int_eq(uiw_tcp_listen(T, OUR_PORT, 2, &ops, NULL), 0);
	inject(&(struct seg){ .sport = PEER_PORT + 1, .seq = 9, .flags = UIW_TCP_SYN });
	inject(&(struct seg){ .sport = PEER_PORT + 2, .seq = 9, .flags = UIW_TCP_SYN });
	advance(1100 * MS);   /* the initial RTO: both SYN-ACKs sent again */
	ck_assert_uint_ge(fx_port.nsent, 4);
	inject(&(struct seg){ .sport = PEER_PORT + 3, .seq = 9, .flags = UIW_TCP_SYN });
	ck_assert_uint_eq(uiw_tcp_counters(T)[UIW_TCP_C_syn_evicted], 1);
	ck_assert_uint_eq(uiw_tcp_counters(T)[UIW_TCP_C_syncookies_sent], 0);
	ck_assert_ptr_null(uiw_tcp_lookup(T, IP_US, OUR_PORT, IP_PEER, PEER_PORT + 1));
	ck_assert_ptr_nonnull(uiw_tcp_lookup(T, IP_US, OUR_PORT, IP_PEER, PEER_PORT + 2));
	ck_assert_ptr_nonnull(uiw_tcp_lookup(T, IP_US, OUR_PORT, IP_PEER, PEER_PORT + 3));
	/* The newest is fresh and PEER_PORT + 2 is next: one more SYN evicts it, and with
	 * both remaining fresh the one after gets a cookie. */
	inject(&(struct seg){ .sport = PEER_PORT + 4, .seq = 9, .flags = UIW_TCP_SYN });
	ck_assert_uint_eq(uiw_tcp_counters(T)[UIW_TCP_C_syn_evicted], 2);
	ck_assert_ptr_null(uiw_tcp_lookup(T, IP_US, OUR_PORT, IP_PEER, PEER_PORT + 2));
	inject(&(struct seg){ .sport = PEER_PORT + 5, .seq = 9, .flags = UIW_TCP_SYN });
	ck_assert_uint_eq(uiw_tcp_counters(T)[UIW_TCP_C_syn_evicted], 2);
	ck_assert_uint_eq(uiw_tcp_counters(T)[UIW_TCP_C_syncookies_sent], 1);
	ck_assert_uint_eq(uiw_tcp_conn_count(T), 2);
}
END_TEST

START_TEST(zero_window_probed_then_reopened)
{
	struct out syn = establish_passive(NULL, 0), o;
	char d[300];
	uint32_t una = syn.seq + 1;

	memset(d, 'z', sizeof(d));
	inject(&(struct seg){ .seq = PEER_ISN + 1, .ack = una, .flags = UIW_TCP_ACK, .win0 = true });
	fake_port_clear(&fx_port);
	ck_assert_int_eq(uiw_tcp_send(ev.accepted, frame_copy(d, sizeof(d)), 0), 0);
	uiw_tcp_run(T, now_ns);
	uiw_port_flush(&fx_port.port);
	ck_assert_uint_eq(fx_port.nsent, 0); /* the window is closed */
	advance(250 * MS);   /* persist timer: one RTO (the minimum, 200 ms: the handshake was timed) */
	ck_assert_uint_eq(fx_port.nsent, 1);
	sent(0, &o);
	ck_assert_uint_eq(o.seq, una - 1);   /* no data: an old octet's number, as Linux */
	ck_assert_uint_eq(o.len, 0);
	ck_assert(o.flags & UIW_TCP_ACK);
	ck_assert_uint_eq(uiw_tcp_counters(T)[UIW_TCP_C_persist_probes], 1);
	/* The peer's answer opens the window: all 300 octets go out in one segment. */
	inject(&(struct seg){ .seq = PEER_ISN + 1, .ack = una, .flags = UIW_TCP_ACK, .win = 65535 });
	ck_assert_uint_eq(fx_port.nsent, 2);
	sent(1, &o);
	ck_assert_uint_eq(o.seq, una);
	ck_assert_uint_eq(o.len, 300);
}
END_TEST

/* The other side of that probe: a segment without data one below RCV.NXT is answered at
 * once with an ACK of RCV.NXT and our window (a Linux sender probes so), and taken for
 * nothing else. */
START_TEST(zero_window_probe_answered)
{
	struct out syn = establish_passive(NULL, 0), o;

	fake_port_clear(&fx_port);
	inject(&(struct seg){ .seq = PEER_ISN, .ack = syn.seq + 1, .flags = UIW_TCP_ACK });
	uiw_port_flush(&fx_port.port);
	ck_assert_uint_eq(fx_port.nsent, 1);
	sent(0, &o);
	ck_assert_uint_eq(o.flags, UIW_TCP_ACK);
	ck_assert_uint_eq(o.ack, PEER_ISN + 1);
	ck_assert_uint_eq(o.len, 0);
	ck_assert_uint_gt(o.win, 0);
	ck_assert_int_eq(uiw_tcp_state(ev.accepted), UIW_TCP_ESTABLISHED);
}
END_TEST

/* A peer that keeps its window shut and answers every probe: an open connection probes on
 * (RFC 9293 §3.8.6.1; the probe's octet timing out is no loss, nor counts toward
 * tcp_retries), one the application has closed gives up after TCP_ORPHAN_PROBES probes
 * with a RST. */
START_TEST(closed_connection_gives_up_on_a_shut_window)
{
	struct out syn = establish_passive(NULL, 0), o;
	char d[300];
	uint32_t una = syn.seq + 1;
	struct uiw_tcp_conn *c = ev.accepted;

	memset(d, 'z', sizeof(d));
	inject(&(struct seg){ .seq = PEER_ISN + 1, .ack = una, .flags = UIW_TCP_ACK, .win0 = true });
	/* 300 octets queued, or a single one: the probe is then the whole queue. */
	ck_assert_int_eq(uiw_tcp_send(c, frame_copy(d, _i ? 1 : sizeof(d)), 0), 0);
	uiw_tcp_run(T, now_ns);
	/* Open: each probe answered with the window still shut; well past the limit (the
	 * clock jumps 50 ms a pass: the probes back off to a minute apart). */
	for (unsigned i = 0; i < 20; i++) {
		uint64_t before = uiw_tcp_counters(T)[UIW_TCP_C_persist_probes];

		for (unsigned k = 0; uiw_tcp_counters(T)[UIW_TCP_C_persist_probes] == before; k++) {
			ck_assert_msg(k < 4000, "probe %u: none for 200 s", i);
			ck_assert_uint_eq(uiw_tcp_conn_count(T), 1);
			now_ns += 50 * MS;
			uiw_tcp_run(T, now_ns);
		}
		uiw_port_flush(&fx_port.port);
		fake_port_clear(&fx_port);
		inject(&(struct seg){ .seq = PEER_ISN + 1, .ack = una, .flags = UIW_TCP_ACK, .win0 = true });
	}
	ck_assert_int_eq(uiw_tcp_state(c), UIW_TCP_ESTABLISHED);
	ck_assert_uint_eq(uiw_tcp_counters(T)[UIW_TCP_C_close_window_shut], 0);
	/* Closed by the application: it gives up at the next probe due. */
	uiw_tcp_close(c);
	fake_port_clear(&fx_port);
	for (unsigned i = 0; i < 2000 && uiw_tcp_conn_count(T) > 0; i++) {
		now_ns += 50 * MS;
		uiw_tcp_run(T, now_ns);
	}
	ck_assert_uint_eq(uiw_tcp_conn_count(T), 0);
	ck_assert_uint_eq(uiw_tcp_counters(T)[UIW_TCP_C_close_window_shut], 1);
	ck_assert_uint_ge(uiw_tcp_counters(T)[UIW_TCP_C_rst_tx], 1);
	uiw_port_flush(&fx_port.port);
	ck_assert_uint_ge(fx_port.nsent, 1);
	sent(fx_port.nsent - 1, &o);
	ck_assert(o.flags & UIW_TCP_RST);
}
END_TEST

/* The window offered never exceeds what the out-of-order queue holds in full-sized
 * segments: past one hole, everything a sender may send fits there and is SACKed. */
START_TEST(window_bounded_by_the_ooo_queue)
{
	struct out o;

	T->ooo_max = 4;
	ck_assert_int_eq(uiw_tcp_listen(T, OUR_PORT, 8, &ops, NULL), 0);
	inject(&(struct seg){ .seq = PEER_ISN, .flags = UIW_TCP_SYN });
	sent(0, &o);
	ck_assert_uint_eq(o.flags, UIW_TCP_SYN | UIW_TCP_ACK);
	ck_assert_uint_eq(o.win, 4 * 1460);
	inject(&(struct seg){ .seq = PEER_ISN + 1, .ack = o.seq + 1, .flags = UIW_TCP_ACK });
	ck_assert_ptr_nonnull(ev.accepted);
	ck_assert_uint_eq(uiw_tcp_rcv_window(ev.accepted), 4 * 1460);
}
END_TEST

/* A RST after the application has closed, in LAST-ACK (cases 0, 1) or CLOSING (case 2):
 * RFC 9293 §3.10.7.4 ends the connection. With every octet acknowledged and only our FIN
 * outstanding (cases 0, 2) the peer has had all and closed, and a peer whose TIME-WAIT
 * ended before our FIN came again answers it so: the close is complete (0). With data
 * still unacknowledged (case 1) it is a reset. */
START_TEST(rst_after_our_fin_ends_the_close)
{
	struct out syn = establish_passive(NULL, 0), o;
	uint32_t our = syn.seq + 1;

	if (_i == 1) {
		ck_assert_int_eq(uiw_tcp_send(ev.accepted, frame_copy("unacked", 7), 0), 0);
		our += 7;
	}
	if (_i != 2) {
		inject(&(struct seg){ .seq = PEER_ISN + 1, .ack = syn.seq + 1,
				      .flags = UIW_TCP_FIN | UIW_TCP_ACK });
		ck_assert_int_eq(uiw_tcp_state(ev.accepted), UIW_TCP_CLOSE_WAIT);
	}
	uiw_tcp_close(ev.accepted);
	uiw_tcp_run(T, now_ns);
	uiw_port_flush(&fx_port.port);
	sent(fx_port.nsent - 1, &o);
	ck_assert_uint_ne(o.flags & UIW_TCP_FIN, 0);
	ck_assert_uint_eq(o.seq, our);
	if (_i == 2) { /* the peer's FIN crosses ours */
		inject(&(struct seg){ .seq = PEER_ISN + 1, .ack = syn.seq + 1,
				      .flags = UIW_TCP_FIN | UIW_TCP_ACK });
		ck_assert_int_eq(uiw_tcp_state(ev.accepted), UIW_TCP_CLOSING);
	} else {
		ck_assert_int_eq(uiw_tcp_state(ev.accepted), UIW_TCP_LAST_ACK);
	}
	ck_assert_uint_eq(ev.closed, 0);
	inject(&(struct seg){ .seq = PEER_ISN + 2, .flags = UIW_TCP_RST });
	ck_assert_uint_eq(uiw_tcp_conn_count(T), 0);
	ck_assert_uint_eq(ev.closed, 1);
	ck_assert_int_eq(ev.closed_err, _i == 1 ? -ECONNRESET : 0);
	ck_assert_uint_eq(uiw_tcp_counters(T)[UIW_TCP_C_rst_rx], _i == 1);
	ck_assert_uint_eq(uiw_tcp_counters(T)[UIW_TCP_C_rst_after_fin], _i != 1);
}
END_TEST

START_TEST(simultaneous_close_goes_through_closing)
{
	struct out syn = establish_passive(NULL, 0);

	uiw_tcp_close(ev.accepted);
	uiw_tcp_run(T, now_ns);
	uiw_port_flush(&fx_port.port);
	/* The peer's FIN crosses ours: it has not seen our FIN yet. */
	inject(&(struct seg){ .seq = PEER_ISN + 1, .ack = syn.seq + 1, .flags = UIW_TCP_FIN | UIW_TCP_ACK });
	ck_assert_int_eq(uiw_tcp_state(ev.accepted), UIW_TCP_CLOSING);
	ck_assert_uint_eq(ev.peer_closed, 1);
	inject(&(struct seg){ .seq = PEER_ISN + 2, .ack = syn.seq + 2, .flags = UIW_TCP_ACK });
	ck_assert_int_eq(uiw_tcp_state(ev.accepted), UIW_TCP_TIME_WAIT);
	ck_assert_uint_eq(ev.closed, 1);
}
END_TEST

/* The send budget: past sq_mbufs_soft a connection may still queue its share, which is
 * TCP_TX_SHARE with few connections and its part of sq_mbufs_soft with many (so that
 * hundreds of them cannot take the send queues to sq_mbufs_max between them). */
START_TEST(send_share_shrinks_with_many_connections)
{
	struct uiw_tcp t = { .sq_mbufs_soft = 2048, .sq_mbufs_max = 6144, .sq_pool_max = 6144,
			     .sq_mbufs = 3000, .tx_share_max = TCP_TX_SHARE };
	struct uiw_tcp_conn c = { .tcp = &t, .sq_mbufs = 100 };

	t.nsenders = 4;        /* share 256 */
	uiw_tcp_tx_share_set(&t);
	ck_assert(uiw_tcp_tx_fits(&c, 100));
	ck_assert(!uiw_tcp_tx_fits(&c, 157));
	t.nsenders = 64;       /* share 2048 / 64 = 32 */
	uiw_tcp_tx_share_set(&t);
	ck_assert(!uiw_tcp_tx_fits(&c, 1));
	c.sq_mbufs = 31;
	ck_assert(uiw_tcp_tx_fits(&c, 1));
	ck_assert(!uiw_tcp_tx_fits(&c, 2));
	t.nsenders = 10000;    /* at least TCP_TX_SHARE_MIN */
	uiw_tcp_tx_share_set(&t);
	c.sq_mbufs = TCP_TX_SHARE_MIN - 1;
	ck_assert(uiw_tcp_tx_fits(&c, 1));
	ck_assert(!uiw_tcp_tx_fits(&c, 2));
	t.sq_mbufs = 1000;     /* under sq_mbufs_soft: anyone may queue */
	c.sq_mbufs = 500;
	ck_assert(uiw_tcp_tx_fits(&c, 100));
	t.sq_mbufs = 6100;     /* never past sq_mbufs_max */
	c.sq_mbufs = 0;
	ck_assert(!uiw_tcp_tx_fits(&c, 45));
}
END_TEST

static Suite *tcp_suite(void)
{
	Suite *s = suite_create("tcp");
	TCase *tc = tcase_with_leak_check("tcp", setup, teardown);

	tcase_add_test(tc, sequence_arithmetic_wraps);
	tcase_add_loop_test(tc, options_truncated_at_every_byte, 0, (int)sizeof(syn_opts) + 1);
	tcase_add_test(tc, options_parsed);
	tcase_add_test(tc, options_bad_lengths_refused);
	tcase_add_test(tc, passive_open_with_all_options);
	tcase_add_test(tc, passive_open_without_options_uses_defaults);
	tcase_add_test(tc, in_order_data_delivered_and_acked_every_second_segment);
	tcase_add_test(tc, delayed_ack_sent_by_timer);
	tcase_add_test(tc, out_of_order_data_sacked_then_filled);
	tcase_add_test(tc, sack_blocks_repeat_the_most_recent);
	tcase_add_test(tc, duplicate_segment_reported_by_dsack);
	tcase_add_test(tc, overlapping_retransmission_delivers_only_new_bytes);
	tcase_add_test(tc, rst_in_window_gets_challenge_ack);
	tcase_add_test(tc, rst_outside_window_ignored);
	tcase_add_test(tc, syn_on_established_gets_challenge_ack);
	tcase_add_test(tc, challenge_acks_limited_per_connection);
	tcase_add_test(tc, ephemeral_ports_keyed_by_destination);
	tcase_add_test(tc, engine_opens_from_its_share_of_ports);
	tcase_add_test(tc, segment_for_another_engine_is_handed);
	tcase_add_test(tc, engine_opens_by_the_nics_rss);
	tcase_add_test(tc, stray_segment_on_an_rss_port_goes_to_its_engine);
	tcase_add_test(tc, arp_shared_with_the_other_engines);
	tcase_add_test(tc, ooo_held_within_the_receive_budget);
	tcase_add_test(tc, send_queues_within_their_budget);
	tcase_add_test(tc, send_share_split_among_senders);
	tcase_add_test(tc, send_share_in_octets_of_large_mbufs);
	tcase_add_test(tc, send_budget_capped_by_key);
	tcase_add_test(tc, ctrl_message_past_the_budget);
	tcase_add_test(tc, stalled_queues_leave_the_budget);
	tcase_add_test(tc, unacked_ctrl_messages_leave_the_data_budget);
	tcase_add_test(tc, unsent_data_bounded_by_notsent_max);
	tcase_add_test(tc, room_offered_again_once_sent);
	tcase_add_test(tc, paws_allows_one_tick);
	tcase_add_test(tc, syncookie_opens_connection_with_its_options);
	tcase_add_test(tc, syncookie_without_timestamps_has_no_scale_or_sack);
	tcase_add_test(tc, syncookie_forged_or_stale_refused);
	tcase_add_test(tc, half_open_evicted_once_its_synack_is_unanswered);
	tcase_add_loop_test(tc, closed_connection_gives_up_on_a_shut_window, 0, 2);
	tcase_add_test(tc, window_bounded_by_the_ooo_queue);
	tcase_add_test(tc, closed_port_answers_rst);
	tcase_add_test(tc, active_open_then_data_and_retransmission);
	tcase_add_test(tc, active_open_refused_by_rst);
	tcase_add_test(tc, probe_never_before_its_timeout);
	tcase_add_test(tc, clock_behind_the_last_pass_does_not_go_back);
	tcase_add_test(tc, syn_retried_with_backoff_then_timeout);
	tcase_add_loop_test(tc, retransmitted_handshake_timed_by_its_timestamp, 0, 3);
	tcase_add_test(tc, records_never_share_a_segment);
	tcase_add_test(tc, records_queued_together_or_not_at_all);
	tcase_add_test(tc, run_room_bounded_by_notsent_max);
	tcase_add_test(tc, full_record_goes_whole_without_sack_blocks);
	tcase_add_loop_test(tc, short_window_waits_for_the_whole_record, 0, 3);
	tcase_add_loop_test(tc, large_frames_acknowledged_four_at_a_time, 0, 2);
	tcase_add_test(tc, fast_retransmit_on_three_duplicate_acks);
	tcase_add_test(tc, new_ack_is_not_a_duplicate);
	tcase_add_test(tc, sack_acks_with_new_window_start_recovery);
	tcase_add_test(tc, stray_sack_blocks_do_not_hide_duplicate_acks);
	tcase_add_test(tc, full_port_queue_holds_data_back);
	tcase_add_test(tc, payload_without_mbuf_goes_next_pass);
	tcase_add_test(tc, syn_waits_for_a_full_port_queue);
	tcase_add_test(tc, orderly_close_both_ways);
	tcase_add_loop_test(tc, exit_closes_then_resets_what_is_still_owed, 0, 2);
	tcase_add_loop_test(tc, fin_acknowledged_while_retransmitting, 0, 3);
	tcase_add_test(tc, zero_window_probed_then_reopened);
	tcase_add_loop_test(tc, payload_summed_as_copied, 0, 3);
	tcase_add_test(tc, noted_sum_taken_when_copied_whole);
	tcase_add_loop_test(tc, frames_over_queued_records, 0, 2);
	tcase_add_loop_test(tc, runs_send_the_frames_segments_would, 0, 3);
	tcase_add_test(tc, runs_end_at_a_record_that_does_not_qualify);
	tcase_add_test(tc, runs_leave_retransmissions_to_segments);
	tcase_add_test(tc, send_queue_names_mbufs_ahead);
	tcase_add_test(tc, ready_over_puts_the_headers_on_a_line);
	tcase_add_loop_test(tc, gathered_records_sent_as_their_parts, 0, 3);
	tcase_add_test(tc, zero_window_probe_answered);
	tcase_add_test(tc, simultaneous_close_goes_through_closing);
	tcase_add_loop_test(tc, rst_after_our_fin_ends_the_close, 0, 3);
	tcase_add_loop_test(tc, truncated_segment_dropped_and_counted, 34, 34 + 40);
	tcase_add_test(tc, bad_checksum_dropped);
	tcase_add_loop_test(tc, burst_segments_joined_in_order, 0, 2);
	tcase_add_test(tc, backlog_bounds_half_open_connections);
	tcase_add_test(tc, send_share_shrinks_with_many_connections);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(tcp_suite());
}
