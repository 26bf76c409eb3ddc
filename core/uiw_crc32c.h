/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * CRC32c (Castagnoli, reflected polynomial 0x82F63B78), as MPA uses it (RFC 5044 §6.3,
 * computed as in RFC 3720 §B.4). Long runs are folded 256 or 128 octets at a time with
 * 512- or 256-bit carry-less multiplication (VPCLMULQDQ) where the CPU has it, else taken
 * by the SSE4.2 crc32 instruction in three streams joined with PCLMULQDQ; shorter ones by
 * the crc32 instruction alone; a slice-by-8 table serves other CPUs. All give the same
 * results.
 *
 * The state convention: start from UIW_CRC32C_INIT, feed bytes with uiw_crc32c_update()
 * in any number of pieces, then finish with uiw_crc32c_final(). MPA puts the final value
 * on the wire in little-endian byte order (WIRE.md §2.6).
 */
#ifndef UIW_CRC32C_H
#define UIW_CRC32C_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define UIW_CRC32C_INIT 0xFFFFFFFFu

/** Feeds @p len bytes; the fastest implementation this CPU has. */
uint32_t uiw_crc32c_update(uint32_t state, const void *buf, size_t len);

/** Portable slice-by-8 implementation. */
uint32_t uiw_crc32c_update_sw(uint32_t state, const void *buf, size_t len);

/** SSE4.2 implementation; call only when uiw_crc32c_hw_available() is true. */
uint32_t uiw_crc32c_update_hw(uint32_t state, const void *buf, size_t len);

/** True when the CPU has the SSE4.2 crc32 instruction. */
bool uiw_crc32c_hw_available(void);

/** Runs this long and longer take uiw_crc32c_update()'s long path (folding, or three streams). */
#define UIW_CRC32C_FOLD_MIN 256

/** Runs this long and longer (to UIW_CRC32C_FOLD_MIN) take the crc32 instruction in three
 *  streams where the CPU has them, and uiw_crc32c_sum() and uiw_crc32c_copy() take the
 *  sum or the copy in the same pass; shorter ones, one stream (and the sum or the copy
 *  apart). */
#define UIW_CRC32C_MID_MIN 96

/** PCLMULQDQ folding (any length; it folds from 64 octets); call only when
 *  uiw_crc32c_fold_available() is true. */
uint32_t uiw_crc32c_update_fold(uint32_t state, const void *buf, size_t len);

/** True when the CPU has PCLMULQDQ and SSE4.2. */
bool uiw_crc32c_fold_available(void);

/** The same folding in AVX encodings (fewer instructions); call only when
 *  uiw_crc32c_fold_avx_available() is true. */
uint32_t uiw_crc32c_update_fold_avx(uint32_t state, const void *buf, size_t len);

/** True when the CPU has AVX as well. */
bool uiw_crc32c_fold_avx_available(void);

/** The crc32 instruction in three streams joined by PCLMULQDQ, what uiw_crc32c_update()
 *  takes for long runs where the CPU has no VPCLMULQDQ; call only when
 *  uiw_crc32c_fold_available() is true. */
uint32_t uiw_crc32c_update_crc3(uint32_t state, const void *buf, size_t len);

/** The same folding on 256-bit registers, 128 octets a round (from 256 octets; shorter
 *  runs go to uiw_crc32c_update_fold_avx()); call only when uiw_crc32c_fold256_available(). */
uint32_t uiw_crc32c_update_fold256(uint32_t state, const void *buf, size_t len);

/** uiw_crc32c_update_fold256() that also copies the octets to @p dst in the same pass
 *  (the areas must not overlap); call only when uiw_crc32c_fold256_available(). */
uint32_t uiw_crc32c_copy_fold256(uint32_t state, void *dst, const void *src, size_t len);

/** uiw_crc32c_update_crc3() that also copies the octets to @p dst in the same pass (the
 *  areas must not overlap; shorter than 96 octets: a copy, then the crc32 instruction);
 *  call only when uiw_crc32c_sum_crc3_available(). */
uint32_t uiw_crc32c_copy_crc3(uint32_t state, void *dst, const void *src, size_t len);

/** Copies @p len octets from @p src to @p dst (not overlapping) and feeds them to the
 *  CRC: in one pass where the CPU has VPCLMULQDQ, or PCLMULQDQ and AVX2 (three crc32
 *  streams); else a copy and the fastest update. */
uint32_t uiw_crc32c_copy(uint32_t state, void *dst, const void *src, size_t len);

/**
 * Feeds @p len octets at @p src to the CRC and gives their Internet checksum in the same
 * pass: *@p sum as uiw_csum_raw() gives it (host-order words, folded, the octets taken from
 * an even offset). With @p dst (not overlapping), copies them there too. What an FPDU
 * costs where both MPA's CRC and TCP's checksum are software's: each octet loaded once.
 */
uint32_t uiw_crc32c_sum(uint32_t state, void *dst, const void *src, size_t len, uint16_t *sum);

/** uiw_crc32c_sum() by 256-bit folding from 128 octets (shorter runs: apart); call only
 *  when uiw_crc32c_fold256_available(). */
uint32_t uiw_crc32c_sum_fold256(uint32_t state, void *dst, const void *src, size_t len,
				uint16_t *sum);

/** uiw_crc32c_sum() by 512-bit folding from 256 octets (shorter runs: apart); call only
 *  when uiw_crc32c_fold512_available(). */
uint32_t uiw_crc32c_sum_fold512(uint32_t state, void *dst, const void *src, size_t len,
				uint16_t *sum);

/** uiw_crc32c_sum() by the crc32 instruction in three streams and an AVX2 sum, from 96
 *  octets (shorter runs: apart); call only when uiw_crc32c_sum_crc3_available(). */
uint32_t uiw_crc32c_sum_crc3(uint32_t state, void *dst, const void *src, size_t len,
			     uint16_t *sum);

/** True when the CPU has SSE4.2, PCLMULQDQ and AVX2. */
bool uiw_crc32c_sum_crc3_available(void);

/** True when the CPU has VPCLMULQDQ and AVX2 as well (valgrind hides VPCLMULQDQ). */
bool uiw_crc32c_fold256_available(void);

/** The same folding on 512-bit registers, 256 octets a round (from 256 octets; shorter
 *  runs go to uiw_crc32c_update_fold_avx()); call only when uiw_crc32c_fold512_available(). */
uint32_t uiw_crc32c_update_fold512(uint32_t state, const void *buf, size_t len);

/** uiw_crc32c_update_fold512() that also copies the octets to @p dst in the same pass (not
 *  overlapping); call only when uiw_crc32c_fold512_available(). */
uint32_t uiw_crc32c_copy_fold512(uint32_t state, void *dst, const void *src, size_t len);

/** True when the CPU has AVX-512 (F, VL) with VPCLMULQDQ. */
bool uiw_crc32c_fold512_available(void);

static inline uint32_t uiw_crc32c_final(uint32_t state)
{
	return ~state;
}

/** CRC32c of one buffer. */
static inline uint32_t uiw_crc32c(const void *buf, size_t len)
{
	return uiw_crc32c_final(uiw_crc32c_update(UIW_CRC32C_INIT, buf, len));
}

#endif
