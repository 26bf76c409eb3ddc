/* SPDX-License-Identifier: BSD-3-Clause */
/* SHA-256 (FIPS 180-4), to check that transferred streams arrive intact. */
#ifndef UIW_APP_SHA256_H
#define UIW_APP_SHA256_H

#include <stddef.h>
#include <stdint.h>

struct sha256 {
	uint32_t h[8];
	uint64_t len;
	uint8_t buf[64];
	unsigned nbuf;
};

void sha256_init(struct sha256 *s);
void sha256_update(struct sha256 *s, const void *data, size_t len);
/** Writes the digest as 64 hex characters and a NUL. */
void sha256_hex(struct sha256 *s, char out[65]);

#endif
