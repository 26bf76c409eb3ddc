/* SPDX-License-Identifier: BSD-3-Clause */
#include "uiw_csum.h"

#include <stdbool.h>
#include <string.h>

#if defined(__x86_64__)
#include <immintrin.h>

#include "uiw_sum16.h"

/*
 * 64 octets a round, summed on uiw_sum16_add() (uiw_sum16.h) and widened every
 * UIW_SUM16_ROUNDS rounds. Returns the unfolded sum of the 16-bit words; with @p copy (a
 * constant where this is inlined), also stores each 64 octets at @p dst (the copy that
 * sums).
 */
__attribute__((target("avx2"), always_inline)) static inline uint64_t
sum64_rounds(uint8_t *dst, const uint8_t *p, size_t rounds, bool copy)
{
	uint64_t total = 0;

	while (rounds > 0) {
		size_t n = rounds < UIW_SUM16_ROUNDS ? rounds : UIW_SUM16_ROUNDS;
		const uint8_t *end = p + n * 64;
		__m256i a = _mm256_setzero_si256(), b = _mm256_setzero_si256();

		for (; p != end; p += 64) {
			__m256i x = _mm256_loadu_si256((const __m256i *)(const void *)p);
			__m256i y = _mm256_loadu_si256((const __m256i *)(const void *)(p + 32));

			if (copy) {
				_mm256_storeu_si256((__m256i *)(void *)dst, x);
				_mm256_storeu_si256((__m256i *)(void *)(dst + 32), y);
				dst += 64;
			}
			a = uiw_sum16_add(a, x);
			b = uiw_sum16_add(b, y);
		}
		total += uiw_sum16_widen(a, b, n * 32);
		rounds -= n;
	}
	return total;
}

__attribute__((target("avx2"))) static uint64_t sum64_avx2(const uint8_t *p, size_t rounds)
{
	return sum64_rounds(NULL, p, rounds, false);
}

__attribute__((target("avx2"))) static uint64_t copy_sum64_avx2(uint8_t *dst, const uint8_t *p,
								size_t rounds)
{
	return sum64_rounds(dst, p, rounds, true);
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
