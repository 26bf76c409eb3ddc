/* SPDX-License-Identifier: BSD-3-Clause */
#include "uiw_crc32c.h"

#include <string.h>

#include "uiw_crc32c_table.h"
#include "uiw_csum.h"
#include "uiw_sum16.h"

uint32_t uiw_crc32c_update_sw(uint32_t state, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	while (len > 0 && ((uintptr_t)p & 7) != 0) {
		state = (state >> 8) ^ crc32c_table[0][(state ^ *p++) & 0xff];
		len--;
	}
	while (len >= 8) {
		uint64_t w;

		memcpy(&w, p, 8);
		/* Little-endian host: the low byte is the first one on the wire. */
		w ^= state;
		state = crc32c_table[7][w & 0xff] ^ crc32c_table[6][(w >> 8) & 0xff] ^
			crc32c_table[5][(w >> 16) & 0xff] ^ crc32c_table[4][(w >> 24) & 0xff] ^
			crc32c_table[3][(w >> 32) & 0xff] ^ crc32c_table[2][(w >> 40) & 0xff] ^
			crc32c_table[1][(w >> 48) & 0xff] ^ crc32c_table[0][w >> 56];
		p += 8;
		len -= 8;
	}
	while (len > 0) {
		state = (state >> 8) ^ crc32c_table[0][(state ^ *p++) & 0xff];
		len--;
	}
	return state;
}

#if defined(__x86_64__)
#include <nmmintrin.h>

/* x86 loads any alignment at no cost: eight octets a crc32 instruction, then 4, 2 and 1
 * for the tail, never a loop of single octets (an FPDU's 14-octet DDP header took up to 13
 * single-octet steps aligning first). */
__attribute__((target("sse4.2"))) uint32_t uiw_crc32c_update_hw(uint32_t state,
								 const void *buf, size_t len)
{
	const uint8_t *p = buf;
	uint64_t s = state;

	for (; len >= 8; p += 8, len -= 8) {
		uint64_t w;

		memcpy(&w, p, 8);
		s = _mm_crc32_u64(s, w);
	}
	if (len & 4) {
		uint32_t w;

		memcpy(&w, p, 4);
		s = _mm_crc32_u32((uint32_t)s, w);
		p += 4;
	}
	if (len & 2) {
		uint16_t w;

		memcpy(&w, p, 2);
		s = _mm_crc32_u16((uint32_t)s, w);
		p += 2;
	}
	if (len & 1)
		s = _mm_crc32_u8((uint32_t)s, *p);
	return (uint32_t)s;
}

bool uiw_crc32c_hw_available(void)
{
	return __builtin_cpu_supports("sse4.2");
}

#include <wmmintrin.h>

/*
 * Folding (carry-less multiplication, as in Intel's "Fast CRC Computation for Generic
 * Polynomials Using PCLMULQDQ"). The raw update is linear: the state is XORed into the
 * first four octets, then 128-bit blocks are moved forward by multiplying by x^D mod P and
 * XORing onto the block D bits later, until one block is left, whose CRC (from state 0, two
 * crc32 instructions) is the CRC of everything folded. Four lanes fold 512 bits a round.
 * The constants, for the reflected polynomial: (x^n mod P) bit-reflected and shifted left
 * one, with n = D + 32 for a block's low half and D - 32 for its high half.
 */
#define FOLD512_LO 0x740eef02ull    /* x^544 */
#define FOLD512_HI 0x9e4addf8ull    /* x^480 */
#define FOLD128_LO 0xf20c0dfeull    /* x^160 */
#define FOLD128_HI 0x14cd00bd6ull   /* x^96 */

__attribute__((target("pclmul,sse4.2"))) static inline __m128i fold(__m128i x, __m128i k,
								  __m128i next)
{
	return _mm_xor_si128(_mm_xor_si128(_mm_clmulepi64_si128(x, k, 0x00),
					   _mm_clmulepi64_si128(x, k, 0x11)), next);
}

__attribute__((target("pclmul,sse4.2"))) static inline __m128i load16(const uint8_t *p)
{
	return _mm_loadu_si128((const __m128i *)(const void *)p);
}

#define K128 _mm_set_epi64x((long long)FOLD128_HI, (long long)FOLD128_LO)

/* The last folded block is carried over the 16-octet blocks left (*@p p and *@p len move
 * past them); @return its CRC (from state 0, two crc32 instructions), which continues over
 * the tail. */
__attribute__((target("pclmul,sse4.2"))) static inline uint32_t
fold_last(__m128i x0, const uint8_t **p, size_t *len)
{
	for (; *len >= 16; *p += 16, *len -= 16)
		x0 = fold(x0, K128, load16(*p));
	uint64_t s = _mm_crc32_u64(0, (uint64_t)_mm_cvtsi128_si64(x0));

	return (uint32_t)_mm_crc32_u64(s, (uint64_t)_mm_extract_epi64(x0, 1));
}

__attribute__((target("pclmul,sse4.2"))) static inline uint32_t
fold_finish(__m128i x0, const uint8_t *p, size_t len)
{
	uint32_t s = fold_last(x0, &p, &len);

	return uiw_crc32c_update_hw(s, p, len);
}

/* The four-lane loop, compiled twice: with SSE encodings, and with AVX's three-operand
 * ones, which need no register copies and take each block's load into the XOR (four
 * instructions a block instead of seven). */
__attribute__((target("pclmul,sse4.2"), always_inline)) static inline uint32_t
fold_lanes(uint32_t state, const uint8_t *p, size_t len)
{
	const __m128i k512 = _mm_set_epi64x((long long)FOLD512_HI, (long long)FOLD512_LO);
	__m128i x0 = _mm_xor_si128(load16(p), _mm_cvtsi32_si128((int)state));
	__m128i x1 = load16(p + 16), x2 = load16(p + 32), x3 = load16(p + 48);

	for (p += 64, len -= 64; len >= 64; p += 64, len -= 64) {
		x0 = fold(x0, k512, load16(p));
		x1 = fold(x1, k512, load16(p + 16));
		x2 = fold(x2, k512, load16(p + 32));
		x3 = fold(x3, k512, load16(p + 48));
	}
	x0 = fold(fold(fold(x0, K128, x1), K128, x2), K128, x3);
	return fold_finish(x0, p, len);
}

__attribute__((target("pclmul,sse4.2"))) uint32_t uiw_crc32c_update_fold(uint32_t state,
									   const void *buf, size_t len)
{
	if (len < 64)
		return uiw_crc32c_update_hw(state, buf, len);
	return fold_lanes(state, buf, len);
}

__attribute__((target("avx,pclmul,sse4.2"))) uint32_t
uiw_crc32c_update_fold_avx(uint32_t state, const void *buf, size_t len)
{
	if (len < 64)
		return uiw_crc32c_update_hw(state, buf, len);
	return fold_lanes(state, buf, len);
}

bool uiw_crc32c_fold_avx_available(void)
{
	return __builtin_cpu_supports("avx") && uiw_crc32c_fold_available();
}

bool uiw_crc32c_fold_available(void)
{
	return __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.2");
}

#include <immintrin.h>

/*
 * The same folding on 256-bit registers (VPCLMULQDQ): four lanes of two blocks each move
 * 1024 bits a round, so each carries its two 128-bit blocks forward by 128 octets. At the
 * end the lanes fold onto each other 256 bits at a time, then the two blocks of the last.
 */
#define FOLD1024_LO 0x6992cea2ull   /* x^1056 */
#define FOLD1024_HI 0xd3b6092ull    /* x^992 */
#define FOLD256_LO 0x1384aa63aull   /* x^288 */
#define FOLD256_HI 0xba4fc28eull    /* x^224 */

__attribute__((target("vpclmulqdq,avx2,pclmul,sse4.2"))) static inline __m256i
fold256(__m256i x, __m256i k, __m256i next)
{
	return _mm256_xor_si256(_mm256_xor_si256(_mm256_clmulepi64_epi128(x, k, 0x00),
						 _mm256_clmulepi64_epi128(x, k, 0x11)), next);
}

__attribute__((target("vpclmulqdq,avx2,pclmul,sse4.2"))) static inline __m256i
load32(const uint8_t *p)
{
	return _mm256_loadu_si256((const __m256i *)(const void *)p);
}

/* Stores a round's four registers at @p p. @return the octet after them. */
__attribute__((target("vpclmulqdq,avx2,pclmul,sse4.2"))) static inline uint8_t *
store128(uint8_t *p, __m256i a, __m256i b, __m256i c, __m256i d)
{
	_mm256_storeu_si256((__m256i *)(void *)p, a);
	_mm256_storeu_si256((__m256i *)(void *)(p + 32), b);
	_mm256_storeu_si256((__m256i *)(void *)(p + 64), c);
	_mm256_storeu_si256((__m256i *)(void *)(p + 96), d);
	return p + 128;
}

/* fold_finish() for the 256- and 512-bit runs. The tail's scalar CRC is a call that GCC
 * (12, with LTO, which sees the callee use no vector registers) makes a tail jump with no
 * VZEROUPPER before it, so the callee returned to our caller with the upper halves of the
 * vector registers dirty; every SSE instruction after that, in any code, then paid for
 * the transition (a 64 KiB Write sender spent a fifth of its time so: send_message()'s one
 * MOVD, memcpy()'s 16-octet loads). The VZEROUPPER is made explicit here. */
__attribute__((target("avx,pclmul,sse4.2"), always_inline)) static inline uint32_t
fold_finish_wide(__m128i x0, const uint8_t *p, size_t len)
{
	uint32_t s = fold_last(x0, &p, &len);

	_mm256_zeroupper();
	return uiw_crc32c_update_hw(s, p, len);
}

/* Adds each 32-bit word of @p x to @p acc's 64-bit lanes (a lane gains less than 2^32 a
 * call, as in uiw_csum.c's rounds): the Internet checksum's part of a one-pass run. */
__attribute__((target("vpclmulqdq,avx2,pclmul,sse4.2"), always_inline)) static inline __m256i
widen_add(__m256i acc, __m256i x)
{
	const __m256i zero = _mm256_setzero_si256();

	return _mm256_add_epi64(_mm256_add_epi64(acc, _mm256_unpacklo_epi32(x, zero)),
				_mm256_unpackhi_epi32(x, zero));
}

/* The 256-bit loop, @p len >= 128, then 32-octet steps on one register; with @p dst, the
 * octets are stored there as they are read (the copy MPA makes of a payload, in the CRC's
 * pass); with @p wide, the unfolded sum of the 32-bit words of all @p len octets goes there
 * (the checksum's pass). */
__attribute__((target("vpclmulqdq,avx2,pclmul,sse4.2"), always_inline)) static inline uint32_t
fold256_run(uint32_t state, uint8_t *dst, const uint8_t *p, size_t len, uint64_t *wide)
{
	const __m256i k1024 = _mm256_set_epi64x((long long)FOLD1024_HI, (long long)FOLD1024_LO,
						(long long)FOLD1024_HI, (long long)FOLD1024_LO);
	const __m256i k256 = _mm256_set_epi64x((long long)FOLD256_HI, (long long)FOLD256_LO,
					       (long long)FOLD256_HI, (long long)FOLD256_LO);
	__m256i y0 = load32(p), y1 = load32(p + 32), y2 = load32(p + 64), y3 = load32(p + 96);
	__m256i s0 = _mm256_setzero_si256(), s1 = _mm256_setzero_si256();

	if (wide != NULL) {
		s0 = widen_add(widen_add(s0, y0), y2);
		s1 = widen_add(widen_add(s1, y1), y3);
	}
	if (dst != NULL)
		dst = store128(dst, y0, y1, y2, y3);
	y0 = _mm256_xor_si256(y0, _mm256_zextsi128_si256(_mm_cvtsi32_si128((int)state)));
	for (p += 128, len -= 128; len >= 128; p += 128, len -= 128) {
		__m256i n0 = load32(p), n1 = load32(p + 32), n2 = load32(p + 64), n3 = load32(p + 96);

		if (dst != NULL)
			dst = store128(dst, n0, n1, n2, n3);
		if (wide != NULL) {
			s0 = widen_add(widen_add(s0, n0), n2);
			s1 = widen_add(widen_add(s1, n1), n3);
		}
		y0 = fold256(y0, k1024, n0);
		y1 = fold256(y1, k1024, n1);
		y2 = fold256(y2, k1024, n2);
		y3 = fold256(y3, k1024, n3);
	}
	y0 = fold256(fold256(fold256(y0, k256, y1), k256, y2), k256, y3);
	for (; len >= 32; p += 32, len -= 32) {
		__m256i n = load32(p);

		if (dst != NULL) {
			_mm256_storeu_si256((__m256i *)(void *)dst, n);
			dst += 32;
		}
		if (wide != NULL)
			s0 = widen_add(s0, n);
		y0 = fold256(y0, k256, n);
	}
	if (dst != NULL || wide != NULL) {
		/* The last len < 32 octets: their whole 32-bit words by one masked load (the
		 * words past them neither read nor faulted on; zeros in the register) and
		 * stored by the same mask, then the last one to three octets as the low ones
		 * of a word (RFC 1071's padding). Their CRC is fold_finish_wide()'s. */
		const size_t whole = len & ~(size_t)3;
		const __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)(len / 4)),
							_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
		__m256i n = _mm256_maskload_epi32((const int *)(const void *)p, mask);
		uint32_t w = 0;

		if (len & 2) {
			uint16_t h;

			memcpy(&h, p + whole, 2);
			w = h;
		}
		if (len & 1)
			w |= (uint32_t)p[len - 1] << (8 * (len & 2));
		if (dst != NULL) {
			_mm256_maskstore_epi32((int *)(void *)dst, mask, n);
			for (size_t i = whole; i < len; i++)
				dst[i] = p[i];
		}
		if (wide != NULL) {
			s0 = _mm256_add_epi64(widen_add(s0, n), s1);
			__m128i t = _mm_add_epi64(_mm256_castsi256_si128(s0),
						  _mm256_extracti128_si256(s0, 1));

			*wide = (uint64_t)_mm_cvtsi128_si64(t) + (uint64_t)_mm_extract_epi64(t, 1) + w;
		}
	}
	return fold_finish_wide(fold(_mm256_castsi256_si128(y0), K128,
				     _mm256_extracti128_si256(y0, 1)), p, len);
}

__attribute__((target("vpclmulqdq,avx2,pclmul,sse4.2"))) uint32_t
uiw_crc32c_update_fold256(uint32_t state, const void *buf, size_t len)
{
	if (len < 256)
		return uiw_crc32c_update_fold_avx(state, buf, len);
	return fold256_run(state, NULL, buf, len, NULL);
}

__attribute__((target("vpclmulqdq,avx2,pclmul,sse4.2"))) uint32_t
uiw_crc32c_copy_fold256(uint32_t state, void *dst, const void *src, size_t len)
{
	if (len < 256) {
		memcpy(dst, src, len);
		return uiw_crc32c_update_fold_avx(state, src, len);
	}
	return fold256_run(state, dst, src, len, NULL);
}

/*
 * The same folding on 512-bit registers (AVX-512 VPCLMULQDQ): four lanes of four blocks
 * each move 256 octets a round. The lanes then fold onto the last at once (each by its own
 * distance, the three products XORed in one step), the rest goes 64 octets a step, and
 * the register's four blocks fold to one. A three-way XOR is one instruction (VPTERNLOGQ),
 * so each round's chain is one multiply and one XOR long.
 */
#define FOLD2048_LO 0xdcb17aa4ull   /* x^2080 */
#define FOLD2048_HI 0xb9e02b86ull   /* x^2016 */
#define FOLD1536_LO 0xa87ab8a8ull   /* x^1568 */
#define FOLD1536_HI 0xab7aff2aull   /* x^1504 */

#define T512 "avx512f,avx512vl,avx512bw,vpclmulqdq,avx2,pclmul,sse4.2"

__attribute__((target(T512))) static inline __m512i k512_of(uint64_t lo, uint64_t hi)
{
	return _mm512_set_epi64((long long)hi, (long long)lo, (long long)hi, (long long)lo,
				(long long)hi, (long long)lo, (long long)hi, (long long)lo);
}

/* x moved forward by k's distance, XORed onto next. */
__attribute__((target(T512))) static inline __m512i fold512(__m512i x, __m512i k, __m512i next)
{
	return _mm512_ternarylogic_epi64(_mm512_clmulepi64_epi128(x, k, 0x00),
					 _mm512_clmulepi64_epi128(x, k, 0x11), next, 0x96);
}

__attribute__((target(T512))) static inline __m512i load64(const uint8_t *p)
{
	return _mm512_loadu_si512((const void *)p);
}

__attribute__((target(T512))) static inline void store64(uint8_t *p, __m512i x)
{
	_mm512_storeu_si512((void *)p, x);
}

/* The Internet checksum's part, as widen_add(). */
__attribute__((target(T512), always_inline)) static inline __m512i
widen_add512(__m512i acc, __m512i x)
{
	const __m512i zero = _mm512_setzero_si512();

	return _mm512_add_epi64(_mm512_add_epi64(acc, _mm512_unpacklo_epi32(x, zero)),
				_mm512_unpackhi_epi32(x, zero));
}

/* @p len >= 256; @p dst and @p wide as for fold256_run(). */
__attribute__((target(T512), always_inline)) static inline uint32_t
fold512_run(uint32_t state, uint8_t *dst, const uint8_t *p, size_t len, uint64_t *wide)
{
	const __m512i k2048 = k512_of(FOLD2048_LO, FOLD2048_HI);
	const __m512i k512 = k512_of(FOLD512_LO, FOLD512_HI);
	const __m256i k256 = _mm256_set_epi64x((long long)FOLD256_HI, (long long)FOLD256_LO,
					       (long long)FOLD256_HI, (long long)FOLD256_LO);
	__m512i z0 = load64(p), z1 = load64(p + 64), z2 = load64(p + 128), z3 = load64(p + 192);
	__m512i s0 = _mm512_setzero_si512(), s1 = _mm512_setzero_si512();

	if (wide != NULL) {
		s0 = widen_add512(widen_add512(s0, z0), z2);
		s1 = widen_add512(widen_add512(s1, z1), z3);
	}
	if (dst != NULL) {
		store64(dst, z0);
		store64(dst + 64, z1);
		store64(dst + 128, z2);
		store64(dst + 192, z3);
		dst += 256;
	}
	z0 = _mm512_xor_si512(z0, _mm512_zextsi128_si512(_mm_cvtsi32_si128((int)state)));
	for (p += 256, len -= 256; len >= 256; p += 256, len -= 256) {
		__m512i n0 = load64(p), n1 = load64(p + 64), n2 = load64(p + 128), n3 = load64(p + 192);

		if (dst != NULL) {
			store64(dst, n0);
			store64(dst + 64, n1);
			store64(dst + 128, n2);
			store64(dst + 192, n3);
			dst += 256;
		}
		if (wide != NULL) {
			s0 = widen_add512(widen_add512(s0, n0), n2);
			s1 = widen_add512(widen_add512(s1, n1), n3);
		}
		z0 = fold512(z0, k2048, n0);
		z1 = fold512(z1, k2048, n1);
		z2 = fold512(z2, k2048, n2);
		z3 = fold512(z3, k2048, n3);
	}
	const __m512i k1536 = k512_of(FOLD1536_LO, FOLD1536_HI);
	const __m512i k1024 = k512_of(FOLD1024_LO, FOLD1024_HI);
	__m512i a = fold512(z0, k1536, _mm512_setzero_si512());
	__m512i b = fold512(z1, k1024, _mm512_setzero_si512());

	z3 = _mm512_ternarylogic_epi64(a, b, fold512(z2, k512, z3), 0x96);
	for (; len >= 64; p += 64, len -= 64) {
		__m512i n = load64(p);

		if (dst != NULL) {
			store64(dst, n);
			dst += 64;
		}
		if (wide != NULL)
			s0 = widen_add512(s0, n);
		z3 = fold512(z3, k512, n);
	}
	if (dst != NULL || wide != NULL) {
		/* The last len < 64 octets, one masked load (the octets past them neither read
		 * nor faulted on; zeros in the register): summed whole, as RFC 1071 pads, and
		 * stored by the same mask. Their CRC is fold_finish_wide()'s. */
		const __mmask64 tail = ((__mmask64)1 << len) - 1;
		__m512i n = _mm512_maskz_loadu_epi8(tail, p);

		if (dst != NULL)
			_mm512_mask_storeu_epi8(dst, tail, n);
		if (wide != NULL)
			*wide = (uint64_t)_mm512_reduce_add_epi64(
				_mm512_add_epi64(widen_add512(s0, n), s1));
	}
	__m256i y = fold256(_mm512_castsi512_si256(z3), k256, _mm512_extracti64x4_epi64(z3, 1));

	return fold_finish_wide(fold(_mm256_castsi256_si128(y), K128,
				     _mm256_extracti128_si256(y, 1)), p, len);
}

__attribute__((target(T512))) uint32_t
uiw_crc32c_update_fold512(uint32_t state, const void *buf, size_t len)
{
	if (len < 256)
		return uiw_crc32c_update_fold_avx(state, buf, len);
	return fold512_run(state, NULL, buf, len, NULL);
}

__attribute__((target(T512))) uint32_t
uiw_crc32c_copy_fold512(uint32_t state, void *dst, const void *src, size_t len)
{
	if (len < 256) {
		memcpy(dst, src, len);
		return uiw_crc32c_update_fold_avx(state, src, len);
	}
	return fold512_run(state, dst, src, len, NULL);
}

bool uiw_crc32c_fold512_available(void)
{
	return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
	       __builtin_cpu_supports("avx512bw") && uiw_crc32c_fold256_available();
}

/* The one-pass CRC and checksum (uiw_crc32c_sum()): the runs above with the Internet
 * checksum, the unfolded sum of all the octets' words in *@p wide (32-bit here, 16-bit in
 * crc3_sum(): the two fold to the same sum). */
__attribute__((target("vpclmulqdq,avx2,pclmul,sse4.2"))) static uint32_t
fold256_sum(uint32_t state, uint8_t *dst, const uint8_t *p, size_t len, uint64_t *wide)
{
	return fold256_run(state, dst, p, len, wide);
}

/* Not specialised: for a non-NULL @p wide, GCC 12 gave the loop four register copies a
 * round, one in each fold's chain (7% slower at 64 KiB). clang has no noipa. */
#if defined(__clang__)
#define NO_SPECIALISE noinline
#else
#define NO_SPECIALISE noipa
#endif
__attribute__((target(T512), NO_SPECIALISE)) static uint32_t
fold512_sum(uint32_t state, uint8_t *dst, const uint8_t *p, size_t len, uint64_t *wide)
{
	return fold512_run(state, dst, p, len, wide);
}

/* load32() for code without VPCLMULQDQ in its target (else it is called, not inlined). */
__attribute__((target("avx2,pclmul,sse4.2"))) static inline __m256i loadu256(const uint8_t *p)
{
	return _mm256_loadu_si256((const __m256i *)(const void *)p);
}

/*
 * The same pass where the CPU has no VPCLMULQDQ: the crc32 instruction in three streams
 * (its latency is three times its issue interval), the sum on AVX2. A block's thirds are
 * taken side by side from states `state`, 0 and 0, then joined, since the raw update is
 * linear: the first third's state moved forward over the other two thirds' length, XOR
 * the second's moved over one third, XOR the third's. Moving a state r forward n octets
 * multiplies it by x^(8n) mod P: one carry-less multiply of r by crc3_k[n / 8] =
 * x^(8n - 33) mod P (bit-reflected; their product, fed as eight octets to the crc32
 * instruction from state 0, gains the other x^33). Each 32 octets of a stream are one
 * 256-bit load, for the sum and the copy, and four crc32 instructions that load their
 * words themselves: 31 instructions for 96 octets with the copy, where four 128-bit lanes
 * folding took 49, and twice as fast where it was measured (docs/BENCHMARKS.md).
 */
#define CRC3_STREAM_MAX 1024   /* octets a stream takes in a block */
static uint32_t crc3_k[2 * CRC3_STREAM_MAX / 8 + 1];

/* At load, in software (this runs before any CPU check). */
__attribute__((constructor)) static void crc3_init(void)
{
	static const uint8_t zero[8];
	uint32_t k = 1;   /* x^31: eight octets forward */

	for (size_t j = 1; j < sizeof(crc3_k) / sizeof(crc3_k[0]); j++) {
		crc3_k[j] = k;
		k = uiw_crc32c_update_sw(k, zero, sizeof(zero));   /* x^64 further */
	}
}

/* The octets each stream of the next block takes, @p len >= 96 left: a multiple of 32. */
static inline size_t crc3_stream(size_t len)
{
	return len / 96 * 32 < CRC3_STREAM_MAX ? len / 96 * 32 : CRC3_STREAM_MAX;
}

/* @p r moved forward 8 @p j octets. */
__attribute__((target("pclmul,sse4.2"), always_inline)) static inline uint64_t
crc3_shift(uint64_t r, size_t j)
{
	__m128i m = _mm_clmulepi64_si128(_mm_cvtsi64_si128((long long)r),
					 _mm_cvtsi32_si128((int)crc3_k[j]), 0x00);

	return _mm_crc32_u64(0, (uint64_t)_mm_cvtsi128_si64(m));
}

__attribute__((target("pclmul,sse4.2"), always_inline)) static inline uint64_t
crc3_words(uint64_t r, const uint8_t *p)
{
	/* Word by word, so that each load is the instruction's operand (one 32-octet copy
	 * went through the stack), written out (a loop of four stayed a loop). */
	uint64_t w0, w1, w2, w3;

	memcpy(&w0, p, 8);
	memcpy(&w1, p + 8, 8);
	memcpy(&w2, p + 16, 8);
	memcpy(&w3, p + 24, 8);
	return _mm_crc32_u64(_mm_crc32_u64(_mm_crc32_u64(_mm_crc32_u64(r, w0), w1), w2), w3);
}

/* Round @p i of a block whose streams are @p k octets long. */
__attribute__((target("avx2,pclmul,sse4.2"), always_inline)) static inline void
crc3_round(const uint8_t *p, uint8_t *dst, size_t i, size_t k, bool copy, bool sum, __m256i *s0,
	   __m256i *s1, __m256i *s2, uint64_t *r0, uint64_t *r1, uint64_t *r2)
{
	__m256i a = loadu256(p + i), b = loadu256(p + k + i), c = loadu256(p + 2 * k + i);

	if (copy) {
		_mm256_storeu_si256((__m256i *)(void *)(dst + i), a);
		_mm256_storeu_si256((__m256i *)(void *)(dst + k + i), b);
		_mm256_storeu_si256((__m256i *)(void *)(dst + 2 * k + i), c);
	}
	if (sum) {
		*s0 = uiw_sum16_add(*s0, a);
		*s1 = uiw_sum16_add(*s1, b);
		*s2 = uiw_sum16_add(*s2, c);
	}
	*r0 = crc3_words(*r0, p + i);
	*r1 = crc3_words(*r1, p + k + i);
	*r2 = crc3_words(*r2, p + 2 * k + i);
}

/* @p len >= 96: blocks of three streams while 96 octets are left, then 32-octet rounds of
 * one, then the tail. With @p sum, *@p wide the unfolded sum of all @p len octets' 16-bit
 * words; with @p copy, everything is stored at @p dst as it is read. */
__attribute__((target("avx2,pclmul,sse4.2"), always_inline)) static inline uint32_t
crc3_sum_run(uint32_t state, uint8_t *dst, const uint8_t *p, size_t len, uint64_t *wide,
	     bool copy, bool sum)
{
	uint64_t r = state, total = 0;

	while (len >= 96) {
		size_t k = crc3_stream(len);
		__m256i s0 = _mm256_setzero_si256(), s1 = _mm256_setzero_si256();
		__m256i s2 = _mm256_setzero_si256();
		uint64_t r1 = 0, r2 = 0;

		/* Two rounds a pass, after one alone if the stream has an odd number. */
		if (k & 32)
			crc3_round(p, dst, 0, k, copy, sum, &s0, &s1, &s2, &r, &r1, &r2);
		for (size_t i = k & 32; i < k; i += 64) {
			crc3_round(p, dst, i, k, copy, sum, &s0, &s1, &s2, &r, &r1, &r2);
			crc3_round(p, dst, i + 32, k, copy, sum, &s0, &s1, &s2, &r, &r1, &r2);
		}
		/* A block's accumulators take at most CRC3_STREAM_MAX / 32 registers each. */
		if (sum)
			total += uiw_sum16_widen(_mm256_add_epi32(s0, s2), s1, 3 * k / 2);
		r = crc3_shift(r, 2 * k / 8) ^ crc3_shift(r1, k / 8) ^ r2;
		p += 3 * k;
		len -= 3 * k;
		if (copy)
			dst += 3 * k;
	}
	__m256i s = _mm256_setzero_si256();
	size_t words = 0;

	for (; len >= 32; p += 32, len -= 32, words += 16) {
		__m256i a = loadu256(p);

		if (copy) {
			_mm256_storeu_si256((__m256i *)(void *)dst, a);
			dst += 32;
		}
		if (sum)
			s = uiw_sum16_add(s, a);
		r = crc3_words(r, p);
	}
	/* The last len < 32 octets: words of 8, 4, 2 and 1 octets, each loaded once for the
	 * CRC, the sum (end-around carried) and the copy. */
	uint64_t t = 0;

	for (; len >= 8; p += 8, len -= 8) {
		uint64_t w;

		memcpy(&w, p, 8);
		if (copy) {
			memcpy(dst, &w, 8);
			dst += 8;
		}
		r = _mm_crc32_u64(r, w);
		t += w;
		t += t < w;
	}
	t = (t & 0xffffffffu) + (t >> 32);   /* room for what is left */
	if (len & 4) {
		uint32_t w;

		memcpy(&w, p, 4);
		if (copy) {
			memcpy(dst, &w, 4);
			dst += 4;
		}
		r = _mm_crc32_u32((uint32_t)r, w);
		t += w;
		p += 4;
	}
	if (len & 2) {
		uint16_t w;

		memcpy(&w, p, 2);
		if (copy) {
			memcpy(dst, &w, 2);
			dst += 2;
		}
		r = _mm_crc32_u16((uint32_t)r, w);
		t += w;
		p += 2;
	}
	if (len & 1) {
		if (copy)
			*dst = *p;
		r = _mm_crc32_u8((uint32_t)r, *p);
		t += *p;   /* the low octet of its word on this little-endian host */
	}
	if (sum)
		*wide = total + uiw_sum16_widen(s, _mm256_setzero_si256(), words) + t;
	_mm256_zeroupper();
	return (uint32_t)r;
}

__attribute__((target("avx2,pclmul,sse4.2"))) static uint32_t
crc3_sum(uint32_t state, uint8_t *dst, const uint8_t *p, size_t len, uint64_t *wide)
{
	if (dst != NULL)
		return crc3_sum_run(state, dst, p, len, wide, true, true);
	return crc3_sum_run(state, NULL, p, len, wide, false, true);
}

/* The copy and the CRC in one pass, no sum: the copy MPA makes where TCP sums nothing (the
 * port takes the checksum). */
__attribute__((target("avx2,pclmul,sse4.2"))) uint32_t
uiw_crc32c_copy_crc3(uint32_t state, void *dst, const void *src, size_t len)
{
	if (len < 96) {
		memcpy(dst, src, len);
		return uiw_crc32c_update_hw(state, src, len);
	}
	return crc3_sum_run(state, dst, src, len, NULL, true, false);
}

/* The three streams alone, for the CRC without the sum. */
__attribute__((target("pclmul,sse4.2"))) uint32_t uiw_crc32c_update_crc3(uint32_t state,
									   const void *buf, size_t len)
{
	const uint8_t *p = buf;
	uint64_t r = state;

	while (len >= 96) {
		size_t k = crc3_stream(len);
		uint64_t r1 = 0, r2 = 0;

		for (size_t i = 0; i < k; i += 32) {
			r = crc3_words(r, p + i);
			r1 = crc3_words(r1, p + k + i);
			r2 = crc3_words(r2, p + 2 * k + i);
		}
		r = crc3_shift(r, 2 * k / 8) ^ crc3_shift(r1, k / 8) ^ r2;
		p += 3 * k;
		len -= 3 * k;
	}
	return uiw_crc32c_update_hw((uint32_t)r, p, len);
}

bool uiw_crc32c_fold256_available(void)
{
	return __builtin_cpu_supports("vpclmulqdq") && __builtin_cpu_supports("avx2") &&
	       uiw_crc32c_fold_available();
}
#else
uint32_t uiw_crc32c_update_hw(uint32_t state, const void *buf, size_t len)
{
	return uiw_crc32c_update_sw(state, buf, len);
}

bool uiw_crc32c_hw_available(void)
{
	return false;
}

uint32_t uiw_crc32c_update_fold(uint32_t state, const void *buf, size_t len)
{
	return uiw_crc32c_update_sw(state, buf, len);
}

bool uiw_crc32c_fold_available(void)
{
	return false;
}

uint32_t uiw_crc32c_update_fold_avx(uint32_t state, const void *buf, size_t len)
{
	return uiw_crc32c_update_sw(state, buf, len);
}

bool uiw_crc32c_fold_avx_available(void)
{
	return false;
}

uint32_t uiw_crc32c_update_crc3(uint32_t state, const void *buf, size_t len)
{
	return uiw_crc32c_update_sw(state, buf, len);
}

uint32_t uiw_crc32c_update_fold256(uint32_t state, const void *buf, size_t len)
{
	return uiw_crc32c_update_sw(state, buf, len);
}

uint32_t uiw_crc32c_copy_fold256(uint32_t state, void *dst, const void *src, size_t len)
{
	memcpy(dst, src, len);
	return uiw_crc32c_update_sw(state, src, len);
}

bool uiw_crc32c_fold256_available(void)
{
	return false;
}

uint32_t uiw_crc32c_copy_crc3(uint32_t state, void *dst, const void *src, size_t len)
{
	memcpy(dst, src, len);
	return uiw_crc32c_update_sw(state, src, len);
}

uint32_t uiw_crc32c_update_fold512(uint32_t state, const void *buf, size_t len)
{
	return uiw_crc32c_update_sw(state, buf, len);
}

uint32_t uiw_crc32c_copy_fold512(uint32_t state, void *dst, const void *src, size_t len)
{
	memcpy(dst, src, len);
	return uiw_crc32c_update_sw(state, src, len);
}

bool uiw_crc32c_fold512_available(void)
{
	return false;
}
#endif

/* The implementation for each length class, chosen once (the CPU does not change): short
 * runs, runs from UIW_CRC32C_MID_MIN (the three crc32 streams where the CPU has them:
 * `tests/sum_bench 0.3 96 128 160 200 255`, 11-16 GB/s against the one stream's 9.4 on
 * Zen 4, where the folds run 5.3-11) and long runs from UIW_CRC32C_FOLD_MIN. */
enum crc_impl { IMPL_UNSET, IMPL_SW, IMPL_HW, IMPL_CRC3, IMPL_FOLD256, IMPL_FOLD512 };
static enum crc_impl impl_short, impl_mid, impl_long;
static bool copy_crc3;   /* the copy in the three streams' pass (AVX2's loads and stores) */

static void __attribute__((noinline)) crc_impl_pick(void)
{
	bool hw = uiw_crc32c_hw_available();
	enum crc_impl s = hw ? IMPL_HW : IMPL_SW;
	enum crc_impl m = uiw_crc32c_fold_available() ? IMPL_CRC3 : s;

	enum crc_impl l = uiw_crc32c_fold512_available()  ? IMPL_FOLD512
			  : uiw_crc32c_fold256_available()  ? IMPL_FOLD256
							    : m;

	/* Whoever sees the short one set sees the others too. */
	__atomic_store_n(&copy_crc3, uiw_crc32c_sum_crc3_available(), __ATOMIC_RELAXED);
	__atomic_store_n(&impl_long, l, __ATOMIC_RELAXED);
	__atomic_store_n(&impl_mid, m, __ATOMIC_RELAXED);
	__atomic_store_n(&impl_short, s, __ATOMIC_RELEASE);
}

uint32_t uiw_crc32c_update(uint32_t state, const void *buf, size_t len)
{
	enum crc_impl i = __atomic_load_n(&impl_short, __ATOMIC_ACQUIRE);

	if (__builtin_expect(i == IMPL_UNSET, 0)) {
		crc_impl_pick();
		i = __atomic_load_n(&impl_short, __ATOMIC_ACQUIRE);
	}
	if (len >= UIW_CRC32C_FOLD_MIN)
		i = __atomic_load_n(&impl_long, __ATOMIC_RELAXED);
	else if (len >= UIW_CRC32C_MID_MIN)
		i = __atomic_load_n(&impl_mid, __ATOMIC_RELAXED);
	switch (i) {
	case IMPL_FOLD512:
		return uiw_crc32c_update_fold512(state, buf, len);
	case IMPL_FOLD256:
		return uiw_crc32c_update_fold256(state, buf, len);
	case IMPL_CRC3:
		return uiw_crc32c_update_crc3(state, buf, len);
	case IMPL_HW:
		return uiw_crc32c_update_hw(state, buf, len);
	default:
		return uiw_crc32c_update_sw(state, buf, len);
	}
}

uint32_t uiw_crc32c_copy(uint32_t state, void *dst, const void *src, size_t len)
{
	if (len >= UIW_CRC32C_MID_MIN) {
		if (__builtin_expect(__atomic_load_n(&impl_short, __ATOMIC_ACQUIRE) == IMPL_UNSET, 0))
			crc_impl_pick();
		switch (len >= UIW_CRC32C_FOLD_MIN ? __atomic_load_n(&impl_long, __ATOMIC_RELAXED)
						   : IMPL_CRC3) {
		case IMPL_FOLD512:
			return uiw_crc32c_copy_fold512(state, dst, src, len);
		case IMPL_FOLD256:
			return uiw_crc32c_copy_fold256(state, dst, src, len);
		case IMPL_CRC3:
			if (__atomic_load_n(&copy_crc3, __ATOMIC_RELAXED))
				return uiw_crc32c_copy_crc3(state, dst, src, len);
			break;
		default:
			break;
		}
	}
	memcpy(dst, src, len);
	return uiw_crc32c_update(state, src, len);
}

/* The one-pass CRC and checksum, chosen once: 512- or 256-bit folding, the crc32
 * instruction in three streams with the sum on AVX2, or none (a CRC update and a sum one
 * after the other). Runs from UIW_CRC32C_MID_MIN to UIW_CRC32C_FOLD_MIN take the three
 * streams wherever the CPU has them: there the folds run no faster than one stream. */
enum sum_impl { SUM_UNSET, SUM_NONE, SUM_CRC3, SUM_FOLD256, SUM_FOLD512 };
static enum sum_impl sum_impl, sum_impl_mid;

bool uiw_crc32c_sum_crc3_available(void)
{
#if defined(__x86_64__)
	return __builtin_cpu_supports("avx2") && uiw_crc32c_fold_available();
#else
	return false;
#endif
}

/* Neither: the CRC and a sum (with the copy) one after the other. */
static uint32_t sum_apart(uint32_t state, void *dst, const void *src, size_t len, uint16_t *sum)
{
	*sum = dst != NULL ? uiw_copy_sum(dst, src, len) : uiw_csum_raw(src, len);
	return uiw_crc32c_update(state, src, len);
}

typedef uint32_t (*sum_run_fn)(uint32_t state, uint8_t *dst, const uint8_t *p, size_t len,
			       uint64_t *wide);

/* One-pass run @p run (NULL: none on this CPU family) from @p min octets; shorter runs
 * apart. Inlined, so that each caller calls its run by name: through a pointer, the 256-bit
 * loop was not compiled for the sum it is asked for, and ran 5-20% slower. */
__attribute__((always_inline)) static inline uint32_t
sum_from(sum_run_fn run, size_t min, uint32_t state, void *dst, const void *src, size_t len,
	 uint16_t *sum)
{
	uint64_t wide;

	if (run == NULL || len < min)
		return sum_apart(state, dst, src, len, sum);
	state = run(state, dst, src, len, &wide);
	*sum = uiw_sum_fold64(wide);
	return state;
}

#if defined(__x86_64__)
#define SUM_RUN(f) (f)
#else
#define SUM_RUN(f) NULL
#endif

uint32_t uiw_crc32c_sum_fold512(uint32_t state, void *dst, const void *src, size_t len,
				uint16_t *sum)
{
	return sum_from(SUM_RUN(fold512_sum), 256, state, dst, src, len, sum);
}

uint32_t uiw_crc32c_sum_fold256(uint32_t state, void *dst, const void *src, size_t len,
				uint16_t *sum)
{
	return sum_from(SUM_RUN(fold256_sum), 128, state, dst, src, len, sum);
}

uint32_t uiw_crc32c_sum_crc3(uint32_t state, void *dst, const void *src, size_t len,
			     uint16_t *sum)
{
	return sum_from(SUM_RUN(crc3_sum), 96, state, dst, src, len, sum);
}

static void __attribute__((noinline)) sum_impl_pick(void)
{
	enum sum_impl m = uiw_crc32c_sum_crc3_available() ? SUM_CRC3 : SUM_NONE;

	__atomic_store_n(&sum_impl_mid, m, __ATOMIC_RELAXED);
	__atomic_store_n(&sum_impl, uiw_crc32c_fold512_available()   ? SUM_FOLD512
				    : uiw_crc32c_fold256_available() ? SUM_FOLD256
								     : m,
			 __ATOMIC_RELEASE);
}

uint32_t uiw_crc32c_sum(uint32_t state, void *dst, const void *src, size_t len, uint16_t *sum)
{
	enum sum_impl i;

	if (len < UIW_CRC32C_MID_MIN)
		return sum_apart(state, dst, src, len, sum);
	if (__builtin_expect(__atomic_load_n(&sum_impl, __ATOMIC_ACQUIRE) == SUM_UNSET, 0))
		sum_impl_pick();
	i = __atomic_load_n(len >= UIW_CRC32C_FOLD_MIN ? &sum_impl : &sum_impl_mid,
			    __ATOMIC_RELAXED);
	switch (i) {
	case SUM_FOLD512:
		return uiw_crc32c_sum_fold512(state, dst, src, len, sum);
	case SUM_FOLD256:
		return uiw_crc32c_sum_fold256(state, dst, src, len, sum);
	case SUM_CRC3:
		return uiw_crc32c_sum_crc3(state, dst, src, len, sum);
	default:
		return sum_apart(state, dst, src, len, sum);
	}
}
