/* SPDX-License-Identifier: BSD-3-Clause */
/** @file MPA Request/Reply frames (RFC 5044 §7.1, RFC 6581 §5) and FPDU constants. */
#ifndef UIW_MPA_WIRE_H
#define UIW_MPA_WIRE_H

#include <assert.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "uiw_be_wire.h"

#define UIW_MPA_KEY_LEN 16
#define UIW_MPA_KEY_REQ "MPA ID Req Frame"  /* RFC 5044 §7.1.1 */
#define UIW_MPA_KEY_REP "MPA ID Rep Frame"
#define UIW_MPA_RR_LEN 20u                   /* key + flags + revision + PD length */
#define UIW_MPA_PD_MAX 512u                  /* RFC 5044 §7.1.1 */

/* The flags byte (RFC 5044 §7.1.1; RFC 6581 §5 names the first reserved bit). */
#define UIW_MPA_FLAG_M 0x80                  /* markers wanted */
#define UIW_MPA_FLAG_C 0x40                  /* CRC wanted */
#define UIW_MPA_FLAG_R 0x20                  /* rejected (Reply only) */
#define UIW_MPA_FLAG_ENHANCED 0x10           /* RFC 6581: IRD/ORD words lead the PD */
#define UIW_MPA_FLAG_RES_MASK 0x0f           /* reserved: sent zero, ignored */

#define UIW_MPA_REV1 1                       /* RFC 5044 */
#define UIW_MPA_REV2 2                       /* RFC 6581 */

/* RFC 6581 §5: the IRD and ORD words, and the control bits they carry. */
#define UIW_MPA_V2_LEN 4u
#define UIW_MPA_V2_PEER_TO_PEER 0x8000       /* in IRD: "A" */
#define UIW_MPA_V2_ZERO_RTR 0x4000           /* in IRD: "B", zero-length Send RTR */
#define UIW_MPA_V2_WRITE_RTR 0x8000          /* in ORD: "C" */
#define UIW_MPA_V2_READ_RTR 0x4000           /* in ORD: "D" */
#define UIW_MPA_V2_VALUE_MASK 0x3fff

struct uiw_mpa_rr {
	uint8_t key[UIW_MPA_KEY_LEN];
	uint8_t flags;
	uint8_t rev;
	uiw_be16 pd_len;
} __attribute__((packed));
static_assert(sizeof(struct uiw_mpa_rr) == UIW_MPA_RR_LEN, "MPA Request/Reply header is 20 bytes");
static_assert(offsetof(struct uiw_mpa_rr, key) == 0, "key at 0");
static_assert(offsetof(struct uiw_mpa_rr, flags) == 16, "flags at 16");
static_assert(offsetof(struct uiw_mpa_rr, rev) == 17, "revision at 17");
static_assert(offsetof(struct uiw_mpa_rr, pd_len) == 18, "PD length at 18");

struct uiw_mpa_v2 {
	uiw_be16 ird;
	uiw_be16 ord;
} __attribute__((packed));
static_assert(sizeof(struct uiw_mpa_v2) == UIW_MPA_V2_LEN, "IRD/ORD words are 4 bytes");
static_assert(offsetof(struct uiw_mpa_v2, ird) == 0, "IRD at 0");
static_assert(offsetof(struct uiw_mpa_v2, ord) == 2, "ORD at 2");

/* uiwarp's own announcement of the RDMAP extensions it speaks (docs/MPA.md): 8 octets at
 * the end of the private data, after the consumer's, so that a peer that does not know it
 * hands the consumer its own octets at the offsets it expects. Flags, then the magic. */
#define UIW_MPA_EXT_LEN 8u
#define UIW_MPA_EXT_MAGIC 0x75495778u        /* "uIWx" */
#define UIW_MPA_EXT_RFC7306 0x1u             /* Immediate Data and Atomics (RFC 7306) */
#define UIW_MPA_EXT_SEND_IMM 0x2u            /* Send with immediate data (opcodes 12, 13) */

struct uiw_mpa_ext {
	uiw_be32 flags;
	uiw_be32 magic;
} __attribute__((packed));
static_assert(sizeof(struct uiw_mpa_ext) == UIW_MPA_EXT_LEN, "extension trailer is 8 bytes");

static inline uint16_t uiw_mpa_pd_len(const struct uiw_mpa_rr *h) { return uiw_be16_get(h->pd_len); }
static inline uint16_t uiw_mpa_v2_ird(const struct uiw_mpa_v2 *v) { return uiw_be16_get(v->ird); }
static inline uint16_t uiw_mpa_v2_ord(const struct uiw_mpa_v2 *v) { return uiw_be16_get(v->ord); }

static inline void uiw_mpa_rr_set(struct uiw_mpa_rr *h, uint8_t flags, uint8_t rev, uint16_t pd_len)
{
	h->flags = flags;
	h->rev = rev;
	h->pd_len = uiw_be16_of(pd_len);
}

static inline void uiw_mpa_v2_set(struct uiw_mpa_v2 *v, uint16_t ird, uint16_t ord)
{
	v->ird = uiw_be16_of(ird);
	v->ord = uiw_be16_of(ord);
}

static inline void uiw_mpa_ext_set(struct uiw_mpa_ext *e, uint32_t flags)
{
	e->flags = uiw_be32_of(flags);
	e->magic = uiw_be32_of(UIW_MPA_EXT_MAGIC);
}

/** The flags of a trailer, or 0 when @p e is not one (no magic). */
static inline uint32_t uiw_mpa_ext_flags(const struct uiw_mpa_ext *e)
{
	return uiw_be32_get(e->magic) == UIW_MPA_EXT_MAGIC ? uiw_be32_get(e->flags) : 0;
}

/* LLP (MPA) error codes, sent in an RDMAP Terminate with layer 2 (LLP),
 * etype 0 (RFC 5044 §8, RFC 6581 §7). */
#define UIW_TERM_MPA_TCP_CLOSED 0x01
#define UIW_TERM_MPA_CRC 0x02
#define UIW_TERM_MPA_MARKER 0x03
#define UIW_TERM_MPA_BAD_RR 0x04
#define UIW_TERM_MPA_LOCAL_CATA 0x05
#define UIW_TERM_MPA_INSUFF_IRD 0x06
#define UIW_TERM_MPA_NO_RTR 0x07

/* FPDU framing (RFC 5044 §4): ULPDU_Length (16) | ULPDU | pad to 4 | CRC32c (32), with a
 * 4-byte Marker every 512 octets of the stream when negotiated (§5). */
#define UIW_MPA_FPDU_HDR_LEN 2u
#define UIW_MPA_CRC_LEN 4u
#define UIW_MPA_MARKER_LEN 4u
#define UIW_MPA_MARKER_INTERVAL 512u
#define UIW_MPA_FPDU_MIN 8u                  /* empty ULPDU: length, 2 pad, CRC */

struct uiw_mpa_marker {
	uiw_be16 rsvd;
	uiw_be16 fpduptr;                    /* octets back to the FPDU's first octet */
} __attribute__((packed));
static_assert(sizeof(struct uiw_mpa_marker) == UIW_MPA_MARKER_LEN, "Marker is 4 bytes");
static_assert(offsetof(struct uiw_mpa_marker, fpduptr) == 2, "FPDUPTR at 2");

static inline void uiw_mpa_marker_set(uint8_t *p, uint16_t fpduptr)
{
	struct uiw_mpa_marker m = { .rsvd = uiw_be16_of(0), .fpduptr = uiw_be16_of(fpduptr) };

	memcpy(p, &m, sizeof(m));
}

static inline uint16_t uiw_mpa_marker_fpduptr(const uint8_t *p)
{
	struct uiw_mpa_marker m;

	memcpy(&m, p, sizeof(m));
	return uiw_be16_get(m.fpduptr);
}

static inline void uiw_mpa_ulpdu_len_set(uint8_t *p, uint16_t len)
{
	uiw_be16 v = uiw_be16_of(len);

	memcpy(p, &v, sizeof(v));
}

static inline uint16_t uiw_mpa_ulpdu_len_get(const uint8_t *p)
{
	uiw_be16 v;

	memcpy(&v, p, sizeof(v));
	return uiw_be16_get(v);
}

/* The CRC field carries CRC32c in little-endian byte order (as iSCSI, RFC 3720 B.4; the
 * order siw and Wireshark use). */
static inline void uiw_mpa_crc_set(uint8_t *p, uint32_t crc)
{
	p[0] = (uint8_t)crc;
	p[1] = (uint8_t)(crc >> 8);
	p[2] = (uint8_t)(crc >> 16);
	p[3] = (uint8_t)(crc >> 24);
}

static inline uint32_t uiw_mpa_crc_get(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

#endif
