/* SPDX-License-Identifier: BSD-3-Clause */
/* CRC32c: RFC 3720 §B.4 vectors, the WIRE.md §2.6 FPDU, and the two implementations
 * against a bit-at-a-time reference on random data of random lengths and alignments. */
#include <stdlib.h>
#include <string.h>

#include "check_common.h"
#include "uiw_crc32c.h"

typedef uint32_t (*crc_fn)(uint32_t, const void *, size_t);

/* Bit at a time, straight from the definition: reflected polynomial 0x82F63B78. */
static uint32_t ref_crc32c(const uint8_t *p, size_t len)
{
	uint32_t c = 0xffffffffu;

	for (size_t i = 0; i < len; i++) {
		c ^= p[i];
		for (int k = 0; k < 8; k++)
			c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
	}
	return ~c;
}

static const crc_fn impls[] = { uiw_crc32c_update_sw, uiw_crc32c_update_hw, uiw_crc32c_update,
				 uiw_crc32c_update_fold, uiw_crc32c_update_fold256,
				 uiw_crc32c_update_fold_avx, uiw_crc32c_update_fold512,
				 uiw_crc32c_update_crc3 };
static const char *const impl_names[] = { "sw", "hw", "dispatch", "fold", "fold256", "fold_avx",
					  "fold512", "crc3" };
#define NIMPL 8

static bool impl_usable(int i)
{
	return i == 1 ? uiw_crc32c_hw_available() : i == 3 ? uiw_crc32c_fold_available()
		: i == 4 ? uiw_crc32c_fold256_available() : i == 5 ? uiw_crc32c_fold_avx_available()
		: i == 6 ? uiw_crc32c_fold512_available() : i == 7 ? uiw_crc32c_fold_available()
		: true;
}

static uint32_t run(int i, const void *p, size_t len)
{
	return uiw_crc32c_final(impls[i](UIW_CRC32C_INIT, p, len));
}

START_TEST(rfc3720_vectors)
{
	uint8_t buf[32];

	if (!impl_usable(_i))
		return;
	memset(buf, 0, 32);
	ck_assert_uint_eq(run(_i, buf, 32), 0x8A9136AAu);
	memset(buf, 0xff, 32);
	ck_assert_uint_eq(run(_i, buf, 32), 0x62A8AB43u);
	for (int k = 0; k < 32; k++)
		buf[k] = (uint8_t)k;
	ck_assert_uint_eq(run(_i, buf, 32), 0x46DD794Eu);
	for (int k = 0; k < 32; k++)
		buf[k] = (uint8_t)(31 - k);
	ck_assert_uint_eq(run(_i, buf, 32), 0x113FDB5Cu);
	ck_assert_uint_eq(run(_i, "123456789", 9), 0xE3069283u);
	ck_assert_uint_eq(run(_i, "", 0), 0);
}
END_TEST

/* WIRE.md §2.6: an untagged Send FPDU, MSN 1, "hello iwarp"; CRC over length..pad. */
START_TEST(mpa_worked_fpdu)
{
	static const uint8_t fpdu[] = {
		0x00, 0x1d, 0x41, 0x43, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0,
		'h', 'e', 'l', 'l', 'o', ' ', 'i', 'w', 'a', 'r', 'p', 0x00,
	};
	static const uint8_t wire_crc[4] = { 0xcf, 0x69, 0x6c, 0x1e };
	uint32_t crc;
	uint8_t le[4];

	if (!impl_usable(_i))
		return;
	crc = run(_i, fpdu, sizeof(fpdu));
	ck_assert_uint_eq(crc, 0x1e6c69cfu);
	for (int k = 0; k < 4; k++)
		le[k] = (uint8_t)(crc >> (8 * k));
	ck_assert_mem_eq(le, wire_crc, 4);
}
END_TEST

START_TEST(random_lengths_and_alignments_match_reference)
{
	uint8_t *buf = malloc(9000 + 16);
	unsigned seed = 12345u + (unsigned)_i;

	ck_assert_ptr_nonnull(buf);
	for (size_t k = 0; k < 9016; k++)
		buf[k] = (uint8_t)rand_r(&seed);
	for (int round = 0; round < 300; round++) {
		size_t off = (size_t)rand_r(&seed) % 16;
		size_t len = round < 64 ? (size_t)round : (size_t)rand_r(&seed) % 9000;
		uint32_t want = ref_crc32c(buf + off, len);

		for (int i = 0; i < NIMPL; i++)
			if (impl_usable(i))
				ck_assert_msg(run(i, buf + off, len) == want,
					      "%s: off %zu len %zu", impl_names[i], off, len);
	}
	free(buf);
}
END_TEST

/* Each folding path against the table at every length past two of its rounds (the 128-bit
 * fold's four-lane rounds to 1100, the 256-bit fold's eight-block rounds and lane reduction
 * to 2100; then the single-block folds and the tail; the 128-bit fold in AVX encodings as
 * the first; the 512-bit fold's sixteen-block rounds, its lanes folded at once and its
 * 64-octet steps, to 2400; the three crc32 streams' blocks past their largest, 3 KiB, to
 * 3300) and every alignment within a register, from states that are not the initial one,
 * and over 64 KiB. _i: impls[3 + _i]. */
START_TEST(fold_matches_table_everywhere)
{
	static const size_t max_len[] = { 1100, 2100, 1100, 2400, 3300 };
	static const size_t align[] = { 16, 32, 16, 64, 8 };
	static uint8_t buf[65536 + 32];
	crc_fn f = impls[3 + _i];
	unsigned seed = 99;

	if (!impl_usable(3 + _i))
		return;
	for (size_t k = 0; k < sizeof(buf); k++)
		buf[k] = (uint8_t)rand_r(&seed);
	for (size_t off = 0; off < align[_i]; off++)
		for (size_t len = 0; len <= max_len[_i]; len++) {
			uint32_t st = (uint32_t)rand_r(&seed) * 2654435761u;

			ck_assert_msg(f(st, buf + off, len) == uiw_crc32c_update_sw(st, buf + off, len),
				      "%s: off %zu len %zu", impl_names[3 + _i], off, len);
		}
	ck_assert_uint_eq(f(UIW_CRC32C_INIT, buf + 5, 65536),
			  uiw_crc32c_update_sw(UIW_CRC32C_INIT, buf + 5, 65536));
}
END_TEST

/* Copying implementation @p i of crc_while_copying. */
static uint32_t copy_impl(int i, uint32_t st, void *d, const void *s, size_t len)
{
	switch (i) {
	case 0:
		return uiw_crc32c_copy(st, d, s, len);
	case 1:
		return uiw_crc32c_copy_fold256(st, d, s, len);
	case 2:
		return uiw_crc32c_copy_fold512(st, d, s, len);
	default:
		return uiw_crc32c_copy_crc3(st, d, s, len);
	}
}

/* The CRC taken while copying: the copy is exact (nothing written past its end) and the
 * CRC that of the source, at every length to past two 256-bit rounds and a three streams'
 * block, and odd alignments of both ends, from a state that is not the initial one. _i: 0
 * the dispatching copy, 1 the 256-bit VPCLMULQDQ one, 2 the 512-bit one, 3 the three
 * crc32 streams' (each where the CPU has it). */
START_TEST(crc_while_copying)
{
	enum { MAXLEN = 3300 };
	static uint8_t src[MAXLEN + 32], dst[MAXLEN + 64], want[MAXLEN + 64];
	unsigned seed = 5;

	if ((_i == 1 && !uiw_crc32c_fold256_available()) ||
	    (_i == 2 && !uiw_crc32c_fold512_available()) ||
	    (_i == 3 && !uiw_crc32c_sum_crc3_available()))
		return;
	for (size_t k = 0; k < sizeof(src); k++)
		src[k] = (uint8_t)rand_r(&seed);
	for (size_t off = 0; off < 3; off++)
		for (size_t len = 0; len <= MAXLEN; len++) {
			uint32_t st = (uint32_t)rand_r(&seed) * 2654435761u, got;

			memset(dst, 0xa5, sizeof(dst));
			memset(want, 0xa5, sizeof(want));
			memcpy(want + 7, src + off, len);
			got = copy_impl(_i, st, dst + 7, src + off, len);
			ck_assert_msg(got == uiw_crc32c_update_sw(st, src + off, len),
				      "crc: off %zu len %zu", off, len);
			ck_assert_msg(memcmp(dst, want, sizeof(dst)) == 0, "copy: off %zu len %zu",
				      off, len);
		}

	/* Many blocks: 64 KiB and a few octets. */
	enum { BIG = 65536 + 37 };
	uint8_t *b = malloc(BIG), *bd = malloc(BIG);

	ck_assert(b != NULL && bd != NULL);
	for (size_t k = 0; k < BIG; k++)
		b[k] = (uint8_t)rand_r(&seed);
	uint32_t got = copy_impl(_i, 9, bd, b, BIG);

	ck_assert_uint_eq(got, uiw_crc32c_update_sw(9, b, BIG));
	ck_assert(memcmp(b, bd, BIG) == 0);
	free(b);
	free(bd);
}
END_TEST

/* The Internet checksum straight from RFC 1071: 16-bit words as they lie in memory (host
 * order), an odd last octet padded with zero, carries folded back in. */
static uint16_t ref_sum(const uint8_t *p, size_t len)
{
	uint64_t s = 0;

	for (size_t i = 0; i + 1 < len; i += 2) {
		uint16_t w;

		memcpy(&w, p + i, 2);
		s += w;
	}
	if (len & 1) {
		uint8_t last[2] = { p[len - 1], 0 };
		uint16_t w;

		memcpy(&w, last, 2);
		s += w;
	}
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint16_t)s;
}

/* One-pass implementation @p i of crc_and_sum_in_one_pass. */
static uint32_t one_pass(int i, uint32_t st, void *d, const void *s, size_t len, uint16_t *sum)
{
	switch (i) {
	case 1:
		return uiw_crc32c_sum_crc3(st, d, s, len, sum);
	case 2:
		return uiw_crc32c_sum_fold256(st, d, s, len, sum);
	case 3:
		return uiw_crc32c_sum_fold512(st, d, s, len, sum);
	default:
		return uiw_crc32c_sum(st, d, s, len, sum);
	}
}

/* The CRC and the checksum in one pass (what an FPDU's payload costs where both are
 * software's): each the source's, at every length to past two 256-bit rounds and past the
 * three-stream blocks' largest (3 KiB), at odd alignments, with and without the copy, which
 * is exact. _i: 0 the dispatching one, 1 the crc32 instruction in three streams, 2 the
 * 256-bit folding, 3 the 512-bit (each where the CPU has it). */
START_TEST(crc_and_sum_in_one_pass)
{
	enum { MAXLEN = 3300 };
	static uint8_t src[MAXLEN + 32], dst[MAXLEN + 64], want[MAXLEN + 64];
	unsigned seed = 11;

	if ((_i == 1 && !uiw_crc32c_sum_crc3_available()) ||
	    (_i == 2 && !uiw_crc32c_fold256_available()) ||
	    (_i == 3 && !uiw_crc32c_fold512_available()))
		return;
	for (size_t k = 0; k < sizeof(src); k++)
		src[k] = (uint8_t)rand_r(&seed);
	for (size_t off = 0; off < 3; off++)
		for (size_t len = 0; len <= MAXLEN; len++)
			for (int copy = 0; copy < 2; copy++) {
				uint32_t st = (uint32_t)rand_r(&seed) * 2654435761u, got;
				uint8_t *d = copy ? dst + 7 : NULL;
				uint16_t sum = 0;

				memset(dst, 0xa5, sizeof(dst));
				memset(want, 0xa5, sizeof(want));
				if (copy)
					memcpy(want + 7, src + off, len);
				got = one_pass(_i, st, d, src + off, len, &sum);
				ck_assert_msg(got == uiw_crc32c_update_sw(st, src + off, len),
					      "crc: off %zu len %zu copy %d", off, len, copy);
				ck_assert_msg(sum == ref_sum(src + off, len),
					      "sum: off %zu len %zu copy %d: %#x, want %#x", off, len,
					      copy, sum, ref_sum(src + off, len));
				ck_assert_msg(memcmp(dst, want, sizeof(dst)) == 0,
					      "copy: off %zu len %zu", off, len);
			}
	/* A run long enough for every lane to carry: 64 KiB of 0xff octets. */
	static uint8_t ones[65536];
	uint16_t sum = 0;

	memset(ones, 0xff, sizeof(ones));
	uint32_t got = one_pass(_i, 0, NULL, ones, sizeof(ones), &sum);

	ck_assert_uint_eq(got, uiw_crc32c_update_sw(0, ones, sizeof(ones)));
	ck_assert_uint_eq(sum, ref_sum(ones, sizeof(ones)));

	/* Long runs, whose lanes gather the most before they widen (the three streams' at
	 * each 3 KiB block, a thousand of them here): 3 MiB and a few octets, all 0xff (every
	 * lane at its largest), all zero (at its smallest), and random, with and without the
	 * copy. */
	const size_t big = 3 * 1024 * 1024 + 37;
	uint8_t *b = malloc(big), *bd = malloc(big);

	ck_assert(b != NULL && bd != NULL);
	for (int fill = 0; fill < 3; fill++) {
		for (size_t k = 0; k < big; k++)
			b[k] = fill == 0 ? 0xff : fill == 1 ? 0 : (uint8_t)rand_r(&seed);
		for (int copy = 0; copy < 2; copy++) {
			uint8_t *d = copy ? bd : NULL;

			got = one_pass(_i, 5, d, b, big, &sum);
			ck_assert_uint_eq(got, uiw_crc32c_update_sw(5, b, big));
			ck_assert_msg(sum == ref_sum(b, big), "fill %d copy %d: %#x, want %#x", fill,
				      copy, sum, ref_sum(b, big));
			if (copy)
				ck_assert(memcmp(bd, b, big) == 0);
		}
	}
	free(b);
	free(bd);
}
END_TEST

/* MPA computes a CRC over pieces (header, mbuf segments, pad): any split gives the same. */
START_TEST(any_split_gives_same_crc)
{
	uint8_t buf[301];
	unsigned seed = 7;
	uint32_t want;

	for (size_t k = 0; k < sizeof(buf); k++)
		buf[k] = (uint8_t)rand_r(&seed);
	want = ref_crc32c(buf, sizeof(buf));
	for (size_t cut = 0; cut <= sizeof(buf); cut++) {
		uint32_t s = uiw_crc32c_update(UIW_CRC32C_INIT, buf, cut);

		s = uiw_crc32c_update(s, buf + cut, sizeof(buf) - cut);
		ck_assert_uint_eq(uiw_crc32c_final(s), want);
	}
}
END_TEST

START_TEST(dispatch_gives_check_value_and_reports_path)
{
	/* Prints which implementation the dispatching tests above exercised. */
	printf("crc32c: SSE4.2 %s\n", uiw_crc32c_hw_available() ? "available" : "not available");
	ck_assert_uint_eq(uiw_crc32c("123456789", 9), 0xE3069283u);
}
END_TEST

static Suite *crc_suite(void)
{
	Suite *s = suite_create("crc32c");
	TCase *tc = tcase_with_leak_check("crc32c", NULL, NULL);

	tcase_add_loop_test(tc, rfc3720_vectors, 0, NIMPL);
	tcase_add_loop_test(tc, mpa_worked_fpdu, 0, NIMPL);
	tcase_add_loop_test(tc, fold_matches_table_everywhere, 0, 5);
	tcase_add_loop_test(tc, random_lengths_and_alignments_match_reference, 0, 8);
	tcase_add_test(tc, any_split_gives_same_crc);
	tcase_add_loop_test(tc, crc_while_copying, 0, 4);
	tcase_add_loop_test(tc, crc_and_sum_in_one_pass, 0, 4);
	tcase_add_test(tc, dispatch_gives_check_value_and_reports_path);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(crc_suite());
}
