/* SPDX-License-Identifier: BSD-3-Clause */
#include "uiw_siphash.h"

#include <string.h>
#include <sys/random.h>

static inline uint64_t rotl(uint64_t x, int b)
{
	return (x << b) | (x >> (64 - b));
}

#define SIPROUND(v0, v1, v2, v3)                                                   \
	do {                                                                        \
		v0 += v1; v1 = rotl(v1, 13); v1 ^= v0; v0 = rotl(v0, 32);          \
		v2 += v3; v3 = rotl(v3, 16); v3 ^= v2;                             \
		v0 += v3; v3 = rotl(v3, 21); v3 ^= v0;                             \
		v2 += v1; v1 = rotl(v1, 17); v1 ^= v2; v2 = rotl(v2, 32);          \
	} while (0)

uint64_t uiw_siphash(const uint64_t k[2], const void *data, size_t len)
{
	const uint8_t *p = data;
	uint64_t v0 = 0x736f6d6570736575ull ^ k[0];
	uint64_t v1 = 0x646f72616e646f6dull ^ k[1];
	uint64_t v2 = 0x6c7967656e657261ull ^ k[0];
	uint64_t v3 = 0x7465646279746573ull ^ k[1];
	uint64_t b = (uint64_t)len << 56;
	size_t i;

	for (i = 0; i + 8 <= len; i += 8) {
		uint64_t m = 0;

		for (int j = 7; j >= 0; j--)
			m = m << 8 | p[i + (size_t)j];
		v3 ^= m;
		SIPROUND(v0, v1, v2, v3);
		SIPROUND(v0, v1, v2, v3);
		v0 ^= m;
	}
	for (size_t j = 0; i + j < len; j++)
		b |= (uint64_t)p[i + j] << (8 * j);
	v3 ^= b;
	SIPROUND(v0, v1, v2, v3);
	SIPROUND(v0, v1, v2, v3);
	v0 ^= b;
	v2 ^= 0xff;
	for (int r = 0; r < 4; r++)
		SIPROUND(v0, v1, v2, v3);
	return v0 ^ v1 ^ v2 ^ v3;
}

int uiw_random_key(uint64_t k[2])
{
	return getrandom(k, 2 * sizeof(uint64_t), 0) == (ssize_t)(2 * sizeof(uint64_t)) ? 0 : -1;
}
