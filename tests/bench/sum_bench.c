/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The per-octet passes MPA and TCP make over every payload, alone on one core: CRC32c with
 * the crc32 instruction and with carry-less folding, and the Internet checksum scalar and
 * wide, at an FPDU's size and at jumbo and 64 KiB runs. Prints GB/s; asserts nothing.
 *
 * usage: sum_bench [SECONDS_PER_FIGURE]
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ipv4_wire.h"
#include "uiw_crc32c.h"
#include "uiw_csum.h"

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static uint32_t crc_hw(const uint8_t *p, size_t n, uint32_t s) { return uiw_crc32c_update_hw(s, p, n); }
static uint32_t crc_fold(const uint8_t *p, size_t n, uint32_t s) { return uiw_crc32c_update_fold(s, p, n); }
static uint32_t crc_fold_avx(const uint8_t *p, size_t n, uint32_t s) { return uiw_crc32c_update_fold_avx(s, p, n); }
static uint32_t crc_crc3(const uint8_t *p, size_t n, uint32_t s) { return uiw_crc32c_update_crc3(s, p, n); }
static uint32_t crc_fold256(const uint8_t *p, size_t n, uint32_t s) { return uiw_crc32c_update_fold256(s, p, n); }
static uint32_t crc_fold512(const uint8_t *p, size_t n, uint32_t s) { return uiw_crc32c_update_fold512(s, p, n); }
static uint32_t sum_scalar(const uint8_t *p, size_t n, uint32_t s) { return s + uiw_raw_sum(p, n); }
static uint32_t sum_wide(const uint8_t *p, size_t n, uint32_t s) { return s + uiw_csum_raw(p, n); }

/* Both passes an FPDU takes where the port sums nothing, one after the other and in one
 * pass; and the same with the copy MPA makes (where TCP copies the FPDU again, summing). */
static uint8_t dst[65536], seg[65536];
static uint32_t crc_then_sum(const uint8_t *p, size_t n, uint32_t s)
{
	return uiw_crc32c_update(s, p, n) + uiw_csum_raw(p, n);
}
static uint32_t crc_sum_one(const uint8_t *p, size_t n, uint32_t s)
{
	uint16_t sum;

	return uiw_crc32c_sum(s, NULL, p, n, &sum) + sum;
}
static uint32_t crc128_then_sum(const uint8_t *p, size_t n, uint32_t s)
{
	return uiw_crc32c_update_fold_avx(s, p, n) + uiw_csum_raw(p, n);
}
static uint32_t crc3_sum_one(const uint8_t *p, size_t n, uint32_t s)
{
	uint16_t sum;

	return uiw_crc32c_sum_crc3(s, NULL, p, n, &sum) + sum;
}
static uint32_t copy_crc3_sum(const uint8_t *p, size_t n, uint32_t s)
{
	uint16_t sum;

	return uiw_crc32c_sum_crc3(s, dst, p, n, &sum) + sum;
}
static uint32_t fold256_sum_one(const uint8_t *p, size_t n, uint32_t s)
{
	uint16_t sum;

	return uiw_crc32c_sum_fold256(s, NULL, p, n, &sum) + sum;
}
static uint32_t copy_fold256_sum(const uint8_t *p, size_t n, uint32_t s)
{
	uint16_t sum;

	return uiw_crc32c_sum_fold256(s, dst, p, n, &sum) + sum;
}
static uint32_t copy_sum_then_crc(const uint8_t *p, size_t n, uint32_t s)
{
	s += uiw_copy_sum(dst, p, n);
	return uiw_crc32c_update(s, p, n);
}
static uint32_t copy_then_crc(const uint8_t *p, size_t n, uint32_t s)
{
	memcpy(dst, p, n);
	return uiw_crc32c_update(s, p, n);
}
static uint32_t copy_then_crc3(const uint8_t *p, size_t n, uint32_t s)
{
	memcpy(dst, p, n);
	return uiw_crc32c_update_crc3(s, p, n);
}
static uint32_t copy_crc3(const uint8_t *p, size_t n, uint32_t s)
{
	return uiw_crc32c_copy_crc3(s, dst, p, n);
}
static uint32_t copy_crc_copy_sum(const uint8_t *p, size_t n, uint32_t s)
{
	s = uiw_crc32c_copy(s, dst, p, n);
	return s + uiw_copy_sum(seg, dst, n);
}
static uint32_t copy_crc_sum_copy(const uint8_t *p, size_t n, uint32_t s)
{
	uint16_t sum;

	s = uiw_crc32c_sum(s, dst, p, n, &sum);
	memcpy(seg, dst, n);
	return s + sum;
}

struct pass {
	const char *name;
	uint32_t (*fn)(const uint8_t *p, size_t n, uint32_t s);
	bool (*usable)(void);
};

static bool always(void) { return true; }

static volatile uint32_t sink;

int main(int argc, char **argv)
{
	static const struct pass passes[] = {
		{ "crc32c, crc32 instruction", crc_hw, uiw_crc32c_hw_available },
		{ "crc32c, PCLMULQDQ folding", crc_fold, uiw_crc32c_fold_available },
		{ "crc32c, PCLMULQDQ folding, AVX encoding", crc_fold_avx, uiw_crc32c_fold_avx_available },
		{ "crc32c, crc32 instruction x3", crc_crc3, uiw_crc32c_fold_available },
		{ "crc32c, VPCLMULQDQ folding", crc_fold256, uiw_crc32c_fold256_available },
		{ "crc32c, VPCLMULQDQ folding, 512-bit", crc_fold512, uiw_crc32c_fold512_available },
		{ "checksum, scalar", sum_scalar, always },
		{ "checksum, wide (AVX2 if present)", sum_wide, always },
		{ "crc32c, then checksum", crc_then_sum, always },
		{ "crc32c and checksum, one pass", crc_sum_one, always },
		{ "128-bit fold, then checksum", crc128_then_sum, uiw_crc32c_fold_avx_available },
		{ "crc32 x3 and checksum, one pass", crc3_sum_one, uiw_crc32c_sum_crc3_available },
		{ "copy+crc32 x3+checksum", copy_crc3_sum, uiw_crc32c_sum_crc3_available },
		{ "256-bit fold and checksum, one pass", fold256_sum_one, uiw_crc32c_fold256_available },
		{ "copy+256-bit fold+checksum", copy_fold256_sum, uiw_crc32c_fold256_available },
		{ "copy+checksum, then crc32c", copy_sum_then_crc, always },
		{ "copy, then crc32c", copy_then_crc, always },
		{ "copy, then crc32 x3", copy_then_crc3, uiw_crc32c_fold_available },
		{ "copy+crc32 x3, one pass", copy_crc3, uiw_crc32c_sum_crc3_available },
		{ "copy+crc32c, copy+checksum", copy_crc_copy_sum, always },
		{ "copy+crc32c+checksum, copy", copy_crc_sum_copy, always },
	};
	size_t sizes[16] = { 256, 1448, 8960, 65536 }, nsizes = 4;
	double secs = argc > 1 ? atof(argv[1]) : 0.5;
	uint8_t *buf;

	/* The sizes to run, after the seconds: the defaults, or up to 16 of 1 to 65536 octets. */
	if (argc > 2) {
		if ((size_t)argc - 2 > sizeof(sizes) / sizeof(sizes[0]))
			return 2;
		for (nsizes = 0; nsizes < (size_t)argc - 2; nsizes++) {
			sizes[nsizes] = strtoul(argv[nsizes + 2], NULL, 10);
			if (sizes[nsizes] == 0 || sizes[nsizes] > 65536)
				return 2;
		}
	}
	buf = malloc(65536);
	if (buf == NULL || secs <= 0)
		return 2;
	for (size_t i = 0; i < 65536; i++)
		buf[i] = (uint8_t)(i * 131 + (i >> 9));
	for (size_t k = 0; k < sizeof(passes) / sizeof(passes[0]); k++) {
		if (!passes[k].usable()) {
			printf("%-34s not on this CPU\n", passes[k].name);
			continue;
		}
		printf("%-34s", passes[k].name);
		for (size_t z = 0; z < nsizes; z++) {
			uint32_t s = 0;
			uint64_t octets = 0;
			double t0 = now_s(), t;

			do {
				for (int r = 0; r < 64; r++)
					s = passes[k].fn(buf, sizes[z], s);
				octets += 64 * sizes[z];
				t = now_s() - t0;
			} while (t < secs);
			sink = s;   /* the result is used: the passes are not optimised away */
			printf("  %zu B: %5.2f GB/s", sizes[z], (double)octets / t / 1e9);
		}
		printf("\n");
	}
	free(buf);
	return 0;
}
