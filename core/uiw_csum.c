/* SPDX-License-Identifier: BSD-3-Clause */
#include "uiw_csum.h"

#include <stdbool.h>
#include <string.h>

#if defined(__x86_64__)
#include <immintrin.h>

/*
 * 64 octets a round: each 32-bit word widened to a 64-bit lane (interleaved with zeros) and
 * added into four accumulators. A lane gains less than 2^32 a round, so the eight lanes'
 * total stays below 2^64 for any buffer under 2^58 octets. Returns the unfolded sum of the
 * 32-bit words; with @p dst, also stores each 64 octets there (the copy that sums).
 */
__attribute__((target("avx2"), always_inline)) static inline uint64_t
sum64_rounds(uint8_t *dst, const uint8_t *p, size_t rounds)
{
	const __m256i zero = _mm256_setzero_si256();
	__m256i a = zero, b = zero, c = zero, d = zero;

	for (; rounds > 0; rounds--, p += 64) {
		__m256i x = _mm256_loadu_si256((const __m256i *)(const void *)p);
		__m256i y = _mm256_loadu_si256((const __m256i *)(const void *)(p + 32));

		if (dst != NULL) {
			_mm256_storeu_si256((__m256i *)(void *)dst, x);
			_mm256_storeu_si256((__m256i *)(void *)(dst + 32), y);
			dst += 64;
		}
		a = _mm256_add_epi64(a, _mm256_unpacklo_epi32(x, zero));
		b = _mm256_add_epi64(b, _mm256_unpackhi_epi32(x, zero));
		c = _mm256_add_epi64(c, _mm256_unpacklo_epi32(y, zero));
		d = _mm256_add_epi64(d, _mm256_unpackhi_epi32(y, zero));
	}
	a = _mm256_add_epi64(_mm256_add_epi64(a, b), _mm256_add_epi64(c, d));
	__m128i s = _mm_add_epi64(_mm256_castsi256_si128(a), _mm256_extracti128_si256(a, 1));

	return (uint64_t)_mm_cvtsi128_si64(s) + (uint64_t)_mm_extract_epi64(s, 1);
}

__attribute__((target("avx2"))) static uint64_t sum64_avx2(const uint8_t *p, size_t rounds)
{
	return sum64_rounds(NULL, p, rounds);
}

__attribute__((target("avx2"))) static uint64_t copy_sum64_avx2(uint8_t *dst, const uint8_t *p,
								size_t rounds)
{
	return sum64_rounds(dst, p, rounds);
}

static bool have_avx2(void)
{
	return __builtin_cpu_supports("avx2");
}
#else
static uint64_t copy_sum64_avx2(uint8_t *dst, const uint8_t *p, size_t rounds)
{
	(void)dst;
	(void)p;
	(void)rounds;
	return 0;
}

static uint64_t sum64_avx2(const uint8_t *p, size_t rounds)
{
	(void)p;
	(void)rounds;
	return 0;
}

static bool have_avx2(void)
{
	return false;
}
#endif

uint16_t uiw_csum_raw(const void *buf, size_t len)
{
	const uint8_t *p = buf;

	if (len < UIW_CSUM_WIDE_MIN || !have_avx2())
		return uiw_raw_sum(p, len);
	size_t rounds = len / 64;
	uint64_t wide = sum64_avx2(p, rounds);

	/* The wide part ends at an even offset: the rest's words line up with it. */
	return uiw_sum_fold64((uint64_t)uiw_sum_fold64(wide) + uiw_raw_sum(p + rounds * 64, len - rounds * 64));
}

uint16_t uiw_copy_sum(void *dst, const void *src, size_t len)
{
	const uint8_t *p = src;
	uint8_t *d = dst;
	size_t rounds;
	uint64_t wide;

	/* The sums read the source: read back, the destination's octets would wait for the
	 * copy's stores, and those for the line when another core read it last (memif's
	 * zero-copy client reuses mbufs its server read). */
	if (len < UIW_CSUM_WIDE_MIN || !have_avx2()) {
		memcpy(d, p, len);
		return uiw_raw_sum(p, len);
	}
	rounds = len / 64;
	wide = copy_sum64_avx2(d, p, rounds);
	memcpy(d + rounds * 64, p + rounds * 64, len - rounds * 64);
	return uiw_sum_fold64((uint64_t)uiw_sum_fold64(wide) +
			      uiw_raw_sum(p + rounds * 64, len - rounds * 64));
}
