/* SPDX-License-Identifier: BSD-3-Clause */
/** @file SipHash-2-4 (Aumasson and Bernstein), a keyed PRF for sequence numbers and ports. */
#ifndef UIW_SIPHASH_H
#define UIW_SIPHASH_H

#include <stddef.h>
#include <stdint.h>

/** SipHash-2-4 of @p len bytes under the 128-bit key @p k. */
uint64_t uiw_siphash(const uint64_t k[2], const void *data, size_t len);

/** Fills @p k with random bytes from the kernel (getrandom). @return 0 or -1. */
int uiw_random_key(uint64_t k[2]);

#endif
