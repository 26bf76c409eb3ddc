/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * MPA Request and Reply frames: building and parsing (RFC 5044 §7.1, RFC 6581 §5), as
 * pure functions on byte buffers. Negotiation over a connection builds on these.
 */
#ifndef UIW_MPA_RR_H
#define UIW_MPA_RR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mpa_wire.h"

/** What a Request or Reply says. */
struct uiw_mpa_rr_info {
	bool reply;
	bool markers, crc, reject, enhanced;
	uint8_t rev;
	/* RFC 6581 (enhanced, revision 2) only. */
	uint16_t ird, ord;
	bool peer_to_peer, rtr_zero_send, rtr_write, rtr_read;
	/* The consumer's private data (after the IRD/ORD words when enhanced, before our
	 * extension trailer). */
	const uint8_t *pd;
	uint16_t pd_len;
	/* The RDMAP extensions announced (UIW_MPA_EXT_*; 0: no trailer). */
	uint32_t ext;
};

enum uiw_mpa_parse {
	UIW_MPA_PARSE_OK = 0,
	UIW_MPA_PARSE_NEED_MORE,   /**< the frame is not complete yet */
	UIW_MPA_PARSE_BAD_KEY,     /**< neither key (or not the one expected) */
	UIW_MPA_PARSE_BAD_REV,     /**< revision other than 1 or 2 */
	UIW_MPA_PARSE_BAD_PD_LEN,  /**< above the cap, or too short for the IRD/ORD words */
};

/**
 * Parses a Request (@p reply false) or Reply from @p buf. Needs the whole frame:
 * 20 bytes and PD_Length more. @p pd_max caps the private data (RFC 5044 allows 512;
 * siw refuses more than 256). On OK, @p out points into @p buf and *used is the frame
 * length (bytes after it are FPDUs).
 */
enum uiw_mpa_parse uiw_mpa_rr_parse(const uint8_t *buf, size_t len, bool reply, uint16_t pd_max,
				    struct uiw_mpa_rr_info *out, size_t *used);

/**
 * Writes a Request or Reply for @p in into @p buf (of @p cap bytes): the IRD/ORD words
 * lead the private data when in->rev is 2 and in->enhanced, and the extension trailer
 * ends it when in->ext is set and there is room for it (else it is left out). @return the
 * frame length, or 0 when it does not fit or the private data is over 512 bytes.
 */
size_t uiw_mpa_rr_build(const struct uiw_mpa_rr_info *in, uint8_t *buf, size_t cap);

/** Whether the extension trailer fits behind @p in's private data: within the 256 octets
 *  siw takes, so that the trailer never makes a frame too long for a peer. */
static inline bool uiw_mpa_rr_ext_room(const struct uiw_mpa_rr_info *in)
{
	return in->pd_len + (in->rev == UIW_MPA_REV2 && in->enhanced ? UIW_MPA_V2_LEN : 0) +
	       UIW_MPA_EXT_LEN <= 256;
}

/** A name for a parse result, for logs and counters. */
const char *uiw_mpa_parse_name(enum uiw_mpa_parse r);

#endif
