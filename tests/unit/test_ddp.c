/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * DDP (RFC 5041): the STag table's checks, header parsing (every truncation, bad version),
 * placement across SGEs, and messages cut into segments no larger than MULPDU, sent between
 * two stack instances over MPA and read back segment by segment.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "check_common.h"
#include "ddp.h"
#include "pair_fixture.h"
#include "uiw_time.h"

static struct uiw_stag_table tab;
static uint8_t mem[4096];

START_TEST(stag_checks)
{
	struct uiw_mr *mr, *got = NULL;

	ck_assert_int_eq(uiw_stag_table_init(&tab, 16), 0);
	mr = uiw_stag_register(&tab, 7, mem, sizeof(mem), 0x10000, UIW_ACCESS_REMOTE_WRITE, 0x5a);
	ck_assert_ptr_nonnull(mr);
	ck_assert_uint_eq(mr->stag & 0xff, 0x5a);
	ck_assert_uint_ne(mr->stag >> 8, 0);
	ck_assert_ptr_eq(uiw_stag_find(&tab, mr->stag), mr);
	ck_assert_ptr_null(uiw_stag_find(&tab, mr->stag ^ 1));         /* key */
	ck_assert_ptr_null(uiw_stag_find(&tab, mr->stag + 0x100));     /* index */
	ck_assert_int_eq(uiw_stag_check(&tab, mr->stag, 7, 0x10000, 4096, UIW_ACCESS_REMOTE_WRITE, &got), UIW_STAG_OK);
	ck_assert_ptr_eq(got, mr);
	ck_assert_int_eq(uiw_stag_check(&tab, mr->stag, 7, 0x10000 + 4096, 0, UIW_ACCESS_REMOTE_WRITE, &got), UIW_STAG_OK);
	ck_assert_int_eq(uiw_stag_check(&tab, mr->stag ^ 2, 7, 0x10000, 1, UIW_ACCESS_REMOTE_WRITE, &got), UIW_STAG_INVALID);
	ck_assert_int_eq(uiw_stag_check(&tab, mr->stag, 8, 0x10000, 1, UIW_ACCESS_REMOTE_WRITE, &got), UIW_STAG_PD);
	ck_assert_int_eq(uiw_stag_check(&tab, mr->stag, 7, 0x10000, 1, UIW_ACCESS_REMOTE_READ, &got), UIW_STAG_ACCESS);
	ck_assert_int_eq(uiw_stag_check(&tab, mr->stag, 7, 0xffffffffffffff00ull, 0x200, UIW_ACCESS_REMOTE_WRITE, &got), UIW_STAG_WRAP);
	ck_assert_int_eq(uiw_stag_check(&tab, mr->stag, 7, 0xffff, 1, UIW_ACCESS_REMOTE_WRITE, &got), UIW_STAG_BOUNDS);
	ck_assert_int_eq(uiw_stag_check(&tab, mr->stag, 7, 0x10000 + 4095, 2, UIW_ACCESS_REMOTE_WRITE, &got), UIW_STAG_BOUNDS);
	/* Invalidation: same PD only (RFC 5040 §5.2); then every access is refused. */
	ck_assert_int_eq(uiw_stag_invalidate(&tab, mr->stag, 8), -EACCES);
	ck_assert_int_eq(uiw_stag_invalidate(&tab, mr->stag, 7), 0);
	ck_assert_int_eq(uiw_stag_invalidate(&tab, mr->stag, 7), -ENOENT);
	ck_assert_int_eq(uiw_stag_check(&tab, mr->stag, 7, 0x10000, 1, UIW_ACCESS_REMOTE_WRITE, &got), UIW_STAG_INVALID);
	uiw_stag_deregister(&tab, mr);
	ck_assert_ptr_null(uiw_stag_find(&tab, mr->stag));
	ck_assert_uint_eq(tab.count, 0);
	uiw_stag_table_fini(&tab);
}
END_TEST

/* Local memory under an lkey (work request SGEs): every octet inside a valid region of the
 * PD with the access asked for; a length that would wrap the address space is refused. */
START_TEST(lkey_checks)
{
	uintptr_t lo = (uintptr_t)mem;
	struct uiw_mr *mr;

	ck_assert_int_eq(uiw_stag_table_init(&tab, 16), 0);
	mr = uiw_stag_register(&tab, 3, mem + 64, 1024, 0, UIW_ACCESS_LOCAL_WRITE, 0x01);
	ck_assert_ptr_nonnull(mr);
	ck_assert(uiw_stag_local_ok(&tab, mr->stag, 3, lo + 64, 1024, UIW_ACCESS_LOCAL_WRITE));
	ck_assert(uiw_stag_local_ok(&tab, mr->stag, 3, lo + 64 + 1024, 0, 0));
	ck_assert(uiw_stag_local_ok(&tab, mr->stag, 3, lo + 100, 988, 0));
	ck_assert(!uiw_stag_local_ok(&tab, mr->stag, 3, lo + 100, 989, 0));
	ck_assert(!uiw_stag_local_ok(&tab, mr->stag, 3, lo + 63, 1, 0));
	ck_assert(!uiw_stag_local_ok(&tab, mr->stag, 3, lo + 64 + 1025, 0, 0));
	ck_assert(!uiw_stag_local_ok(&tab, mr->stag, 3, lo + 64, UINT64_MAX, 0));
	ck_assert(!uiw_stag_local_ok(&tab, mr->stag, 4, lo + 64, 1, 0));
	ck_assert(!uiw_stag_local_ok(&tab, mr->stag ^ 1, 3, lo + 64, 1, 0));
	ck_assert(!uiw_stag_local_ok(&tab, mr->stag, 3, lo + 64, 1, UIW_ACCESS_REMOTE_READ));
	ck_assert_int_eq(uiw_stag_invalidate(&tab, mr->stag, 3), 0);
	ck_assert(!uiw_stag_local_ok(&tab, mr->stag, 3, lo + 64, 1, 0));
	uiw_stag_table_fini(&tab);
}
END_TEST

/* The stream's untagged sequencing (RFC 5041 §5.3, §7.2): MSNs from 1 (2 after an RTR),
 * each segment at the queue's MO, and the codes in the RFC's order; tagged windows. */
struct seen {
	unsigned n;
	enum uiw_ddp_parse pr;
	struct uiw_ddp_seg s;
};

static int seen_segment(void *arg, const struct uiw_mpa_ulpdu *u, const struct uiw_ddp_seg *s,
			enum uiw_ddp_parse pr)
{
	struct seen *w = arg;

	(void)u;
	w->n++;
	w->pr = pr;
	w->s = *s;
	return 0;
}

static const struct uiw_ddp_ulp seen_ulp = { .segment = seen_segment };

static struct uiw_ddp_seg untagged_seg(struct uiw_ddp_stream *st, struct seen *w, uint32_t qn,
				       uint32_t msn, uint32_t mo, uint8_t *buf, uint32_t len)
{
	struct uiw_ddp_untagged h;
	struct uiw_mpa_iov iov[2] = { { &h, sizeof(h) }, { buf, len } };
	struct uiw_mpa_ulpdu u = { .len = (uint32_t)sizeof(h) + len, .npieces = 2, .pieces = iov };

	uiw_ddp_untagged_set(&h, UIW_DDP_VERSION, 0x43, 0, qn, msn, mo);
	ck_assert_int_eq(uiw_ddp_mpa_ulp.ulpdu(st, NULL, &u), 0);
	ck_assert_int_eq(w->pr, UIW_DDP_PARSE_OK);
	return w->s;
}

START_TEST(stream_sequencing)
{
	struct uiw_ddp_stream st;
	struct seen w = { 0 };
	uint8_t data[8] = { 1, 2, 3, 4, 5, 6, 7, 8 }, dst[12] = { 0 };
	struct uiw_sge sg = { dst, sizeof(dst) };
	struct uiw_mpa_iov iov[2] = { { NULL, 18 }, { data, 8 } };
	struct uiw_mpa_ulpdu u = { .len = 26, .npieces = 2, .pieces = iov };
	struct uiw_ddp_untagged h;

	uiw_ddp_stream_init(&st, 3, &seen_ulp, &w);
	uiw_ddp_stream_attach(&st, NULL);
	uiw_ddp_stream_rtr(&st, 1, false);   /* the peer's Read RTR used MSN 1 of queue 1 */
	struct uiw_ddp_seg s = untagged_seg(&st, &w, 0, 1, 0, data, 8);

	ck_assert_uint_eq(w.n, 1);
	ck_assert_uint_eq(uiw_ddp_untagged_check(&st, &s, 1, true), UIW_DDP_UNT_QN);
	ck_assert_uint_eq(uiw_ddp_untagged_check(&st, &s, 0, true), 0);
	uiw_ddp_untagged_set(&h, UIW_DDP_VERSION, 0x43, 0, 0, 1, 0);
	iov[0].base = &h;
	ck_assert_int_eq(uiw_ddp_untagged_place(&st, &u, &s, &sg, 1), 0);
	ck_assert_mem_eq(dst, data, 8);
	/* The next segment must carry MO 8; 4 more octets fit, 8 do not. */
	s = untagged_seg(&st, &w, 0, 1, 0, data, 8);
	ck_assert_uint_eq(uiw_ddp_untagged_check(&st, &s, 0, true), UIW_DDP_UNT_MO);
	s = untagged_seg(&st, &w, 0, 1, 8, data, 8);
	ck_assert_uint_eq(uiw_ddp_untagged_check(&st, &s, 0, true), 0);
	ck_assert_int_eq(uiw_ddp_untagged_place(&st, &u, &s, &sg, 1), -1);
	ck_assert_uint_eq(uiw_ddp_untagged_done(&st, 0), 8);
	s = untagged_seg(&st, &w, 0, 1, 0, data, 8);
	ck_assert_uint_eq(uiw_ddp_untagged_check(&st, &s, 0, true), UIW_DDP_UNT_MSN_RANGE);
	s = untagged_seg(&st, &w, 0, 2, 0, data, 8);
	ck_assert_uint_eq(uiw_ddp_untagged_check(&st, &s, 0, true), 0);
	/* Queue 1 starts at MSN 2 after the RTR; MSN/MO are not asked of a Terminate. */
	s = untagged_seg(&st, &w, 1, 1, 0, data, 0);
	ck_assert_uint_eq(uiw_ddp_untagged_check(&st, &s, 1, true), UIW_DDP_UNT_MSN_RANGE);
	s = untagged_seg(&st, &w, 1, 2, 0, data, 0);
	ck_assert_uint_eq(uiw_ddp_untagged_check(&st, &s, 1, true), 0);
	s = untagged_seg(&st, &w, 2, 9, 4, data, 0);
	ck_assert_uint_eq(uiw_ddp_untagged_check(&st, &s, 2, false), 0);
	s = untagged_seg(&st, &w, 3, 1, 0, data, 0);
	ck_assert_uint_eq(uiw_ddp_untagged_check(&st, &s, 3, false), UIW_DDP_UNT_QN);
	/* A tagged segment into an expected window: the STag, then TO and room. */
	struct uiw_ddp_seg t = { .tagged = true, .stag = 0x1234, .to = 0x100, .len = 16 };

	ck_assert_uint_eq(uiw_ddp_tagged_window(&t, 0x1234, 0x100, 16), 0);
	ck_assert_uint_eq(uiw_ddp_tagged_window(&t, 0x1235, 0x100, 16), UIW_DDP_TAG_INVALID_STAG);
	ck_assert_uint_eq(uiw_ddp_tagged_window(&t, 0x1234, 0x101, 16), UIW_DDP_TAG_BOUNDS);
	ck_assert_uint_eq(uiw_ddp_tagged_window(&t, 0x1234, 0x100, 15), UIW_DDP_TAG_BOUNDS);
	ck_assert_uint_eq(uiw_ddp_tagged_code(UIW_STAG_PD), UIW_DDP_TAG_STAG_STREAM);
	ck_assert_uint_eq(uiw_ddp_tagged_code(UIW_STAG_WRAP), UIW_DDP_TAG_TO_WRAP);
	ck_assert_uint_eq(w.n, 9);
}
END_TEST

START_TEST(stag_table_fills_and_indexes_differ)
{
	struct uiw_mr *all[16];
	struct uiw_stag_table other;

	ck_assert_int_eq(uiw_stag_table_init(&tab, 16), 0);
	ck_assert_int_eq(uiw_stag_table_init(&other, 16), 0);
	unsigned same = 0;

	for (int i = 0; i < 16; i++) {
		all[i] = uiw_stag_register(&tab, 1, mem, 1, 0, 0, 0);
		ck_assert_ptr_nonnull(all[i]);
		struct uiw_mr *o = uiw_stag_register(&other, 1, mem, 1, 0, 0, 0);

		same += o->stag == all[i]->stag;
		for (int j = 0; j < i; j++)
			ck_assert_uint_ne(all[i]->stag, all[j]->stag);
	}
	ck_assert_ptr_null(uiw_stag_register(&tab, 1, mem, 1, 0, 0, 0));
	/* Two tables hand out different STags (random 24-bit indexes). */
	ck_assert_uint_lt(same, 4);
	uiw_stag_deregister(&tab, all[3]);
	ck_assert_ptr_nonnull(uiw_stag_register(&tab, 1, mem, 1, 0, 0, 0));
	uiw_stag_table_fini(&tab);
	uiw_stag_table_fini(&other);
}
END_TEST

static struct uiw_mpa_ulpdu one_piece(struct uiw_mpa_iov *p, void *buf, uint32_t len)
{
	*p = (struct uiw_mpa_iov){ buf, len };
	return (struct uiw_mpa_ulpdu){ .len = len, .npieces = 1, .pieces = p };
}

/* Every truncation of a tagged and an untagged header; the version check. */
START_TEST(parse_truncations_and_version)
{
	static const uint8_t tagged[14] = { 0xc1, 0x40, 0x12, 0x34, 0x56, 0x78, 0, 0, 0, 0, 0, 0, 0x10, 0x00 };
	static const uint8_t untagged[18] = { 0x41, 0x44, 0xaa, 0xbb, 0xcc, 0xdd, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 9 };
	struct uiw_mpa_iov p;
	struct uiw_ddp_seg s;

	for (uint32_t cut = 0; cut < sizeof(tagged); cut++) {
		uint8_t *b = malloc(cut + 1);

		memcpy(b, tagged, cut);
		struct uiw_mpa_ulpdu u = one_piece(&p, b, cut);

		ck_assert_int_eq(uiw_ddp_parse(&u, &s), UIW_DDP_PARSE_SHORT);
		free(b);
	}
	for (uint32_t cut = 0; cut < sizeof(untagged); cut++) {
		uint8_t *b = malloc(cut + 1);

		memcpy(b, untagged, cut);
		struct uiw_mpa_ulpdu u = one_piece(&p, b, cut);

		ck_assert_int_eq(uiw_ddp_parse(&u, &s), UIW_DDP_PARSE_SHORT);
		free(b);
	}
	uint8_t buf[32];
	struct uiw_mpa_ulpdu u;

	memcpy(buf, tagged, 14);
	u = one_piece(&p, buf, 20);
	ck_assert_int_eq(uiw_ddp_parse(&u, &s), UIW_DDP_PARSE_OK);
	ck_assert(s.tagged && s.last);
	ck_assert_uint_eq(s.stag, 0x12345678);
	ck_assert_uint_eq(s.to, 0x1000);
	ck_assert_uint_eq(s.len, 6);
	memcpy(buf, untagged, 18);
	u = one_piece(&p, buf, 18);
	ck_assert_int_eq(uiw_ddp_parse(&u, &s), UIW_DDP_PARSE_OK);
	ck_assert(!s.tagged && s.last);
	ck_assert_uint_eq(s.rdmap & 0x0f, 4);
	ck_assert_uint_eq(s.rsvd_ulp, 0xaabbccdd);
	ck_assert_uint_eq(s.msn, 3);
	ck_assert_uint_eq(s.mo, 9);
	ck_assert_uint_eq(s.len, 0);
	for (uint8_t dv = 0; dv < 4; dv++) {
		buf[0] = (uint8_t)(0x40 | dv);
		ck_assert_int_eq(uiw_ddp_parse(&u, &s), dv == 1 ? UIW_DDP_PARSE_OK : UIW_DDP_PARSE_VERSION);
	}
	/* The header read in place (a first piece that holds it) or gathered from pieces
	 * (cut anywhere, the rest in a second piece with 5 octets of payload): the same. */
	for (int t = 0; t < 2; t++) {
		const uint8_t *hdr = t ? tagged : untagged;
		uint32_t hl = t ? 14 : 18;

		memcpy(buf, hdr, hl);
		memset(buf + hl, 0x77, 5);
		for (uint32_t cut = 1; cut <= hl + 5; cut++) {
			struct uiw_mpa_iov two[2] = { { buf, cut }, { buf + cut, hl + 5 - cut } };
			struct uiw_mpa_ulpdu v = { .len = hl + 5, .npieces = cut < hl + 5 ? 2 : 1,
						   .pieces = two };
			struct uiw_ddp_seg g;

			ck_assert_int_eq(uiw_ddp_parse(&v, &g), UIW_DDP_PARSE_OK);
			ck_assert_uint_eq(g.tagged, t);
			ck_assert_uint_eq(g.hdr_len, hl);
			ck_assert_uint_eq(g.len, 5);
			if (t) {
				ck_assert_uint_eq(g.stag, 0x12345678);
				ck_assert_uint_eq(g.to, 0x1000);
			} else {
				ck_assert_uint_eq(g.rsvd_ulp, 0xaabbccdd);
				ck_assert_uint_eq(g.msn, 3);
				ck_assert_uint_eq(g.mo, 9);
			}
		}
	}
}
END_TEST

START_TEST(place_across_sges)
{
	uint8_t src[100], a[10], b[1], c[50];
	struct uiw_mpa_iov pieces[3] = { { src, 30 }, { src + 30, 7 }, { src + 37, 63 } };
	struct uiw_mpa_ulpdu u = { .len = 100, .npieces = 3, .pieces = pieces };
	struct uiw_sge sg[3] = { { a, sizeof(a) }, { b, sizeof(b) }, { c, sizeof(c) } };
	uint8_t flat[61];

	for (int i = 0; i < 100; i++)
		src[i] = (uint8_t)i;
	for (uint32_t at = 0; at <= 61; at++) {
		for (uint32_t len = 0; at + len <= 61; len += 7) {
			memset(a, 0xee, sizeof(a));
			memset(b, 0xee, sizeof(b));
			memset(c, 0xee, sizeof(c));
			ck_assert_int_eq(uiw_ddp_place(&u, 20, len, sg, 3, at), 0);
			memcpy(flat, a, 10);
			memcpy(flat + 10, b, 1);
			memcpy(flat + 11, c, 50);
			for (uint32_t k = 0; k < 61; k++)
				ck_assert_uint_eq(flat[k], k >= at && k < at + len ? src[20 + k - at] : 0xee);
		}
	}
	/* Past the SGEs or the ULPDU: refused, nothing written. */
	memset(c, 0xee, sizeof(c));
	ck_assert_int_eq(uiw_ddp_place(&u, 0, 10, sg, 3, 52), -1);
	ck_assert_int_eq(uiw_ddp_place(&u, 95, 10, sg, 3, 0), -1);
	ck_assert_uint_eq(c[49], 0xee);
}
END_TEST

/* ---- Segmentation between two instances. ---- */

#define RX_SEGS 256

struct seg_sink {
	struct uiw_mpa_conn *c;
	bool up;
	unsigned n;
	struct uiw_ddp_seg seg[RX_SEGS];
	uint8_t data[200000];
	uint32_t data_len;
};

static struct seg_sink snd, rcv;

static void sink_established(void *user, struct uiw_mpa_conn *c, const struct uiw_mpa_info *info)
{
	struct seg_sink *k = user;

	(void)info;
	k->c = c;
	k->up = true;
}

static int sink_ulpdu(void *user, struct uiw_mpa_conn *c, const struct uiw_mpa_ulpdu *u)
{
	struct seg_sink *k = user;
	struct uiw_ddp_seg *s = &k->seg[k->n];

	(void)c;
	ck_assert_uint_lt(k->n, RX_SEGS);
	ck_assert_int_eq(uiw_ddp_parse(u, s), UIW_DDP_PARSE_OK);
	ck_assert_uint_eq(uiw_mpa_ulpdu_copy(u, s->hdr_len, k->data + k->data_len, s->len), s->len);
	k->data_len += s->len;
	k->n++;
	return 0;
}

static void sink_closed(void *user, struct uiw_mpa_conn *c, int err)
{
	(void)c;
	(void)err;
	((struct seg_sink *)user)->c = NULL;
}

static const struct uiw_mpa_ops sink_ops = {
	.established = sink_established, .ulpdu = sink_ulpdu, .closed = sink_closed,
};

static bool both_up(void *arg)
{
	(void)arg;
	return snd.up && rcv.up;
}

static void connect_pair(bool markers)
{
	struct uiw_config cfg;
	struct uiw_mpa_params p;

	uiw_config_defaults(&cfg);
	uiw_mpa_params_from_config(&p, &cfg);
	p.markers = markers;
	p.first_delay_us = 0;
	memset(&snd, 0, sizeof(snd));
	memset(&rcv, 0, sizeof(rcv));
	ck_assert_int_eq(uiw_mpa_listen(pair_b.st.mpa, 9000, 4, &p, &sink_ops, &rcv), 0);
	ck_assert_int_eq(uiw_mpa_connect(pair_a.st.mpa, PAIR_IP_B, 9000, &p, &sink_ops, &snd,
					 uiw_now_ns(), &snd.c), 0);
	ck_assert(pair_run_until(both_up, NULL, 2000));
}

struct want { unsigned segs; uint32_t octets; };

static bool got_all(void *arg)
{
	const struct want *w = arg;

	return rcv.n >= w->segs && rcv.data_len >= w->octets;
}

static uint8_t payload[150000];

/* A message of @p len octets in three SGEs, sent whole (pumping the pair when out of room). */
static void send_msg(bool tagged, uint32_t len, uint32_t body_len)
{
	static const uint8_t body[28] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16,
					  17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28 };
	struct uiw_sge sg[3] = { { payload, len / 4 }, { payload + len / 4, 1 < len ? 1 : 0 },
				 { payload + len / 4 + (1 < len ? 1 : 0), 0 } };
	struct uiw_ddp_tx tx = { 0 };
	uint64_t end = uiw_now_ns() + 5 * UIW_NS_PER_S;
	int rc;

	sg[2].len = len - sg[0].len - sg[1].len;
	do {
		rc = tagged ? uiw_ddp_send_tagged(snd.c, &tx, 0x40, 0xabcd0001, 0x1000, sg, 3)
			    : uiw_ddp_send_untagged(snd.c, &tx, 0x43, 0, 0, 5, body, body_len, sg, 3);
		ck_assert_int_ge(rc, 0);
		if (rc == 0)
			pair_poll();
	} while (rc == 0 && uiw_now_ns() < end);
	ck_assert_int_eq(rc, 1);
}

/* Sizes around MULPDU and beyond: each segment within MULPDU, TO/MO advancing, L on the
 * last only, the payload intact (RFC 5041 §5.1, §6.1). */
START_TEST(messages_cut_to_mulpdu)
{
	bool tagged = _i & 1, markers = _i & 2;
	uint32_t body_len = tagged ? 0 : 28;

	connect_pair(markers);
	uint32_t mul = uiw_mpa_info(snd.c)->mulpdu;
	uint32_t hdr = tagged ? 14 : 18;
	uint32_t sizes[] = { 0, 1, mul - hdr - body_len - 1, mul - hdr - body_len,
			     mul - hdr - body_len + 1, 100000 };

	for (uint32_t i = 0; i < sizeof(payload); i++)
		payload[i] = (uint8_t)(i * 13 + 5);
	for (unsigned k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		uint32_t total = sizes[k] + body_len;
		unsigned segs = total == 0 ? 1 : (total + mul - hdr - 1) / (mul - hdr);
		struct want w = { segs, total };

		uint64_t runs = uiw_mpa_counters(pair_a.st.mpa)[UIW_MPA_C_fpdu_run];

		rcv.n = 0;
		rcv.data_len = 0;
		send_msg(tagged, sizes[k], body_len);
		ck_assert(pair_run_until(got_all, &w, 5000));
		pair_run_for(2);
		ck_assert_uint_eq(rcv.n, segs);
		ck_assert_uint_eq(rcv.data_len, total);
		/* Without Markers most of a long message goes in runs (its first segment alone
		 * when nothing was queued before it); with them, and a message of one segment,
		 * each alone. */
		runs = uiw_mpa_counters(pair_a.st.mpa)[UIW_MPA_C_fpdu_run] - runs;
		if (markers || segs == 1)
			ck_assert_uint_eq(runs, 0);
		else if (segs > 2)
			ck_assert_uint_ge(runs, segs / 2);
		ck_assert_uint_le(runs, segs);
		uint64_t off = 0;

		for (unsigned s = 0; s < segs; s++) {
			const struct uiw_ddp_seg *g = &rcv.seg[s];

			ck_assert_int_eq(g->tagged, tagged);
			ck_assert_int_eq(g->last, s == segs - 1);
			ck_assert_uint_le(g->hdr_len + g->len, mul);
			if (tagged) {
				ck_assert_uint_eq(g->stag, 0xabcd0001);
				ck_assert_uint_eq(g->to, 0x1000 + off);
			} else {
				ck_assert_uint_eq(g->qn, 0);
				ck_assert_uint_eq(g->msn, 5);
				ck_assert_uint_eq(g->mo, off);
			}
			off += g->len;
		}
		ck_assert_mem_eq(rcv.data + body_len, payload, sizes[k]);
	}
	uiw_mpa_close(snd.c);
	pair_run_for(20);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("ddp");
	TCase *tc = tcase_with_leak_check("ddp", pair_setup, pair_teardown);

	tcase_add_test(tc, stag_checks);
	tcase_add_test(tc, lkey_checks);
	tcase_add_test(tc, stream_sequencing);
	tcase_add_test(tc, stag_table_fills_and_indexes_differ);
	tcase_add_test(tc, parse_truncations_and_version);
	tcase_add_test(tc, place_across_sges);
	tcase_add_loop_test(tc, messages_cut_to_mulpdu, 0, 4);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
