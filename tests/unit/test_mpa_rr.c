/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * MPA Request/Reply frames against the bytes Linux siw put on the wire
 * (../shared/captures, Linux 6.1 siw, rdma-core 44; payloads read with
 * `tshark -Y "iwarp_mpa.req || iwarp_mpa.rep" -T fields -e tcp.payload`).
 */
#include <stdlib.h>
#include <string.h>

#include "check_common.h"
#include "mpa_rr.h"

/* rping-siw.pcapng: rev 2, enhanced, C=0, IRD 1, ORD 1, no user data. */
static const uint8_t siw_req[] = { 'M', 'P', 'A', ' ', 'I', 'D', ' ', 'R', 'e', 'q', ' ', 'F',
				   'r', 'a', 'm', 'e', 0x10, 0x02, 0x00, 0x04, 0x00, 0x01, 0x00,
				   0x01 };
/* rping-siw-p2p.pcapng: peer-to-peer, Write and Read RTR offered. */
static const uint8_t siw_req_p2p[] = { 'M', 'P', 'A', ' ', 'I', 'D', ' ', 'R', 'e', 'q', ' ',
				       'F', 'r', 'a', 'm', 'e', 0x10, 0x02, 0x00, 0x04, 0x80,
				       0x01, 0xc0, 0x01 };
/* ... and the Reply that picked Write RTR. */
static const uint8_t siw_rep_p2p[] = { 'M', 'P', 'A', ' ', 'I', 'D', ' ', 'R', 'e', 'p', ' ',
				       'F', 'r', 'a', 'm', 'e', 0x10, 0x02, 0x00, 0x04, 0x80,
				       0x01, 0x80, 0x01 };
/* rping-siw-mpa-rev1.pcapng: revision 1, no private data. */
static const uint8_t siw_req_rev1[] = { 'M', 'P', 'A', ' ', 'I', 'D', ' ', 'R', 'e', 'q', ' ',
					'F', 'r', 'a', 'm', 'e', 0x00, 0x01, 0x00, 0x00 };
/* rping-siw-crc-reject.pcapng: a Reply rejecting (R=1, C=0) with IRD/ORD 0/0. */
static const uint8_t siw_rep_reject[] = { 'M', 'P', 'A', ' ', 'I', 'D', ' ', 'R', 'e', 'p', ' ',
					  'F', 'r', 'a', 'm', 'e', 0x30, 0x02, 0x00, 0x04, 0x00,
					  0x00, 0x00, 0x00 };

START_TEST(builds_siw_request_bytes)
{
	struct uiw_mpa_rr_info in = { .rev = 2, .enhanced = true, .ird = 1, .ord = 1 };
	uint8_t buf[64];

	ck_assert_uint_eq(uiw_mpa_rr_build(&in, buf, sizeof(buf)), sizeof(siw_req));
	ck_assert_mem_eq(buf, siw_req, sizeof(siw_req));
	in.peer_to_peer = in.rtr_write = in.rtr_read = true;
	ck_assert_uint_eq(uiw_mpa_rr_build(&in, buf, sizeof(buf)), sizeof(siw_req_p2p));
	ck_assert_mem_eq(buf, siw_req_p2p, sizeof(siw_req_p2p));
	memset(&in, 0, sizeof(in));
	in.rev = 1;
	ck_assert_uint_eq(uiw_mpa_rr_build(&in, buf, sizeof(buf)), sizeof(siw_req_rev1));
	ck_assert_mem_eq(buf, siw_req_rev1, sizeof(siw_req_rev1));
}
END_TEST

START_TEST(builds_siw_reply_bytes)
{
	struct uiw_mpa_rr_info in = { .reply = true, .rev = 2, .enhanced = true, .ird = 1, .ord = 1,
				      .peer_to_peer = true, .rtr_write = true };
	uint8_t buf[64];

	ck_assert_uint_eq(uiw_mpa_rr_build(&in, buf, sizeof(buf)), sizeof(siw_rep_p2p));
	ck_assert_mem_eq(buf, siw_rep_p2p, sizeof(siw_rep_p2p));
	memset(&in, 0, sizeof(in));
	in.reply = in.reject = in.enhanced = true;
	in.rev = 2;
	ck_assert_uint_eq(uiw_mpa_rr_build(&in, buf, sizeof(buf)), sizeof(siw_rep_reject));
	ck_assert_mem_eq(buf, siw_rep_reject, sizeof(siw_rep_reject));
}
END_TEST

START_TEST(parses_siw_frames)
{
	struct uiw_mpa_rr_info o;
	size_t used;

	ck_assert_int_eq(uiw_mpa_rr_parse(siw_req_p2p, sizeof(siw_req_p2p), false, 256, &o, &used),
			 UIW_MPA_PARSE_OK);
	ck_assert_uint_eq(used, sizeof(siw_req_p2p));
	ck_assert(o.enhanced && o.peer_to_peer && o.rtr_write && o.rtr_read && !o.rtr_zero_send);
	ck_assert(!o.crc && !o.markers);
	ck_assert_uint_eq(o.ird, 1);
	ck_assert_uint_eq(o.ord, 1);
	ck_assert_uint_eq(o.pd_len, 0);
	ck_assert_int_eq(uiw_mpa_rr_parse(siw_rep_reject, sizeof(siw_rep_reject), true, 256, &o, &used),
			 UIW_MPA_PARSE_OK);
	ck_assert(o.reject && !o.crc && o.enhanced);
	ck_assert_int_eq(uiw_mpa_rr_parse(siw_req_rev1, sizeof(siw_req_rev1), false, 256, &o, &used),
			 UIW_MPA_PARSE_OK);
	ck_assert_uint_eq(o.rev, 1);
	ck_assert(!o.enhanced);
	/* A Request key where a Reply is expected is refused. */
	ck_assert_int_eq(uiw_mpa_rr_parse(siw_req, sizeof(siw_req), true, 256, &o, &used),
			 UIW_MPA_PARSE_BAD_KEY);
}
END_TEST

/* Every prefix of a valid Request or Reply is "need more"; nothing reads past it (ASan). */
static void assert_prefix_needs_more(const uint8_t *frame, size_t cut, bool reply)
{
	uint8_t *p = malloc(cut ? cut : 1);
	struct uiw_mpa_rr_info o;
	size_t used = 0;

	if (cut > 0)
		memcpy(p, frame, cut);
	ck_assert_int_eq(uiw_mpa_rr_parse(p, cut, reply, 256, &o, &used), UIW_MPA_PARSE_NEED_MORE);
	free(p);
}

START_TEST(truncated_request_needs_more)
{
	assert_prefix_needs_more(siw_req_p2p, (size_t)_i, false);
}
END_TEST

START_TEST(truncated_reply_needs_more)
{
	assert_prefix_needs_more(siw_rep_p2p, (size_t)_i, true);
	if ((size_t)_i < sizeof(siw_rep_reject))
		assert_prefix_needs_more(siw_rep_reject, (size_t)_i, true);
}
END_TEST

START_TEST(bad_frames_refused)
{
	uint8_t f[600];
	struct uiw_mpa_rr_info o;
	size_t used;

	memcpy(f, siw_req, sizeof(siw_req));
	f[3] = 'X'; /* key */
	ck_assert_int_eq(uiw_mpa_rr_parse(f, 2, false, 256, &o, &used), UIW_MPA_PARSE_NEED_MORE);
	ck_assert_int_eq(uiw_mpa_rr_parse(f, 4, false, 256, &o, &used), UIW_MPA_PARSE_BAD_KEY);
	memcpy(f, siw_req, sizeof(siw_req));
	f[17] = 3; /* revision */
	ck_assert_int_eq(uiw_mpa_rr_parse(f, sizeof(siw_req), false, 256, &o, &used),
			 UIW_MPA_PARSE_BAD_REV);
	memcpy(f, siw_req, sizeof(siw_req));
	f[18] = 0x01; /* PD length 260: over siw's 256, within RFC 5044's 512 */
	ck_assert_int_eq(uiw_mpa_rr_parse(f, sizeof(f), false, 256, &o, &used),
			 UIW_MPA_PARSE_BAD_PD_LEN);
	ck_assert_int_eq(uiw_mpa_rr_parse(f, sizeof(f), false, 512, &o, &used), UIW_MPA_PARSE_OK);
	ck_assert_uint_eq(o.pd_len, 256);
	f[18] = 0x02;
	f[19] = 0x01; /* 513 */
	ck_assert_int_eq(uiw_mpa_rr_parse(f, sizeof(f), false, 600, &o, &used),
			 UIW_MPA_PARSE_BAD_PD_LEN);
	memcpy(f, siw_req, sizeof(siw_req));
	f[19] = 2; /* enhanced, but no room for the IRD/ORD words */
	ck_assert_int_eq(uiw_mpa_rr_parse(f, sizeof(siw_req), false, 256, &o, &used),
			 UIW_MPA_PARSE_BAD_PD_LEN);
}
END_TEST

START_TEST(private_data_round_trip_and_bytes_after_frame)
{
	static const uint8_t pd[] = "rdma_cm private data";
	struct uiw_mpa_rr_info in = { .rev = 2, .enhanced = true, .crc = true, .ird = 128,
				      .ord = 16, .pd = pd, .pd_len = sizeof(pd) };
	struct uiw_mpa_rr_info o;
	uint8_t buf[128];
	size_t n = uiw_mpa_rr_build(&in, buf, sizeof(buf)), used;

	ck_assert_uint_eq(n, 20 + 4 + sizeof(pd));
	/* An FPDU right behind the frame (siw's responder does that) is left alone. */
	buf[n] = 0x00;
	buf[n + 1] = 0x1d;
	ck_assert_int_eq(uiw_mpa_rr_parse(buf, n + 2, false, 256, &o, &used), UIW_MPA_PARSE_OK);
	ck_assert_uint_eq(used, n);
	ck_assert_uint_eq(o.ird, 128);
	ck_assert_uint_eq(o.ord, 16);
	ck_assert(o.crc);
	ck_assert_uint_eq(o.pd_len, sizeof(pd));
	ck_assert_mem_eq(o.pd, pd, sizeof(pd));
	in.pd_len = 509; /* 509 + 4 > 512 */
	ck_assert_uint_eq(uiw_mpa_rr_build(&in, buf, sizeof(buf)), 0);
}
END_TEST

static Suite *mpa_rr_suite(void)
{
	Suite *s = suite_create("mpa_rr");
	TCase *tc = tcase_with_leak_check("mpa_rr", NULL, NULL);

	tcase_add_test(tc, builds_siw_request_bytes);
	tcase_add_test(tc, builds_siw_reply_bytes);
	tcase_add_test(tc, parses_siw_frames);
	tcase_add_loop_test(tc, truncated_request_needs_more, 0, (int)sizeof(siw_req_p2p));
	tcase_add_loop_test(tc, truncated_reply_needs_more, 0, (int)sizeof(siw_rep_p2p));
	tcase_add_test(tc, bad_frames_refused);
	tcase_add_test(tc, private_data_round_trip_and_bytes_after_frame);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(mpa_rr_suite());
}
