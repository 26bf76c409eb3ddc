/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The Internet checksum's sum on AVX2 registers, 16-bit words a pair at a time: each word's
 * top bit is flipped, so that one signed multiply-add by ones (vpmaddwd) sums a pair exactly
 * into a 32-bit lane, as the word less 2^15 each; uiw_sum16_widen() adds the offsets back.
 * Three instructions a 32 octets where unpacking to 64-bit lanes takes four. A register
 * moves a lane by at most 2^16, so two accumulators that have each taken UIW_SUM16_ROUNDS
 * registers still add within a 32-bit lane; then they must widen.
 *
 * The sum is of 16-bit words, as they lie in memory (host order); it folds to the same
 * ones'-complement sum as one of 32-bit words (RFC 1071 §2).
 */
#ifndef UIW_SUM16_H
#define UIW_SUM16_H

#if defined(__x86_64__)
#include <stdint.h>

#include <immintrin.h>

/** Registers a sum16 accumulator may take before uiw_sum16_widen(). */
#define UIW_SUM16_ROUNDS 8192

__attribute__((target("avx2"), always_inline)) static inline __m256i uiw_sum16_add(__m256i acc,
										   __m256i v)
{
	const __m256i flip = _mm256_set1_epi16((short)0x8000), one = _mm256_set1_epi16(1);

	return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_xor_si256(v, flip), one));
}

/** The unsigned sum of the @p words 16-bit words accumulators @p a and @p b took. */
__attribute__((target("avx2"), always_inline)) static inline uint64_t
uiw_sum16_widen(__m256i a, __m256i b, uint64_t words)
{
	__m256i s = _mm256_add_epi32(a, b);
	__m256i w = _mm256_add_epi64(_mm256_cvtepi32_epi64(_mm256_castsi256_si128(s)),
				     _mm256_cvtepi32_epi64(_mm256_extracti128_si256(s, 1)));
	__m128i h = _mm_add_epi64(_mm256_castsi256_si128(w), _mm256_extracti128_si256(w, 1));

	return (uint64_t)(_mm_cvtsi128_si64(h) + _mm_extract_epi64(h, 1)) + words * 0x8000u;
}
#endif

#endif
