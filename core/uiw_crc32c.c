/* SPDX-License-Identifier: BSD-3-Clause */
#include "uiw_crc32c.h"

#include <string.h>

#include "uiw_crc32c_table.h"

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

__attribute__((target("sse4.2"))) uint32_t uiw_crc32c_update_hw(uint32_t state,
								 const void *buf, size_t len)
{
	const uint8_t *p = buf;
	uint64_t s = state;

	while (len > 0 && ((uintptr_t)p & 7) != 0) {
		s = _mm_crc32_u8((uint32_t)s, *p++);
		len--;
	}
	while (len >= 8) {
		uint64_t w;

		memcpy(&w, p, 8);
		s = _mm_crc32_u64(s, w);
		p += 8;
		len -= 8;
	}
	while (len > 0) {
		s = _mm_crc32_u8((uint32_t)s, *p++);
		len--;
	}
	return (uint32_t)s;
}

bool uiw_crc32c_hw_available(void)
{
	return __builtin_cpu_supports("sse4.2");
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
#endif

uint32_t uiw_crc32c_update(uint32_t state, const void *buf, size_t len)
{
	if (uiw_crc32c_hw_available())
		return uiw_crc32c_update_hw(state, buf, len);
	return uiw_crc32c_update_sw(state, buf, len);
}
