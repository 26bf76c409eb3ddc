/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * Big-endian wire integers as one-member structs, so that a wire field cannot be used as a
 * host integer by mistake: the compiler rejects `hdr->len + 1`. The only conversions are
 * the accessors below, used by the `*_wire.h` headers of each layer.
 */
#ifndef UIW_BE_WIRE_H
#define UIW_BE_WIRE_H

#include <assert.h>
#include <stdint.h>

#include <rte_byteorder.h>

typedef struct { uint16_t raw; } __attribute__((packed)) uiw_be16;
typedef struct { uint32_t raw; } __attribute__((packed)) uiw_be32;
typedef struct { uint64_t raw; } __attribute__((packed)) uiw_be64;

static_assert(sizeof(uiw_be16) == 2, "uiw_be16 is 2 bytes");
static_assert(sizeof(uiw_be32) == 4, "uiw_be32 is 4 bytes");
static_assert(sizeof(uiw_be64) == 8, "uiw_be64 is 8 bytes");

static inline uint16_t uiw_be16_get(uiw_be16 v)
{
	return rte_be_to_cpu_16(v.raw);
}

static inline uint32_t uiw_be32_get(uiw_be32 v)
{
	return rte_be_to_cpu_32(v.raw);
}

static inline uint64_t uiw_be64_get(uiw_be64 v)
{
	return rte_be_to_cpu_64(v.raw);
}

static inline uiw_be16 uiw_be16_of(uint16_t host)
{
	uiw_be16 v = { rte_cpu_to_be_16(host) };
	return v;
}

static inline uiw_be32 uiw_be32_of(uint32_t host)
{
	uiw_be32 v = { rte_cpu_to_be_32(host) };
	return v;
}

static inline uiw_be64 uiw_be64_of(uint64_t host)
{
	uiw_be64 v = { rte_cpu_to_be_64(host) };
	return v;
}

#endif
