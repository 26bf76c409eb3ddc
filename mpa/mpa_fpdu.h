/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * FPDU framing as pure functions (RFC 5044 §4 and §5): pad, lengths with and without
 * Markers, MULPDU, and encoding one FPDU into caller-provided buffers.
 *
 * Stream positions count octets of one direction from the first octet of its first FPDU
 * (the octet after the MPA Request or Reply): Markers sit where the position is a multiple
 * of 512 (RFC 5044 §5; Wireshark counts them the same way). A Marker that falls on an
 * FPDU's first octet comes before its ULPDU_Length; FPDUPTR is the distance in octets from
 * the Marker back to the FPDU's first octet. The CRC covers every octet of the FPDU before
 * the CRC field, Markers included.
 */
#ifndef UIW_MPA_FPDU_H
#define UIW_MPA_FPDU_H

#include <stdbool.h>
#include <stdint.h>

#include "mpa_wire.h"

/** Pad octets after a ULPDU of @p ulen octets (RFC 5044 §4.1). */
static inline uint32_t uiw_mpa_pad(uint32_t ulen)
{
	return (4u - (ulen + UIW_MPA_FPDU_HDR_LEN) % 4u) % 4u;
}

/** FPDU octets for a ULPDU of @p ulen, Markers not counted. */
static inline uint32_t uiw_mpa_fpdu_len(uint32_t ulen)
{
	return UIW_MPA_FPDU_HDR_LEN + ulen + uiw_mpa_pad(ulen) + UIW_MPA_CRC_LEN;
}

/** Octets from @p pos to the next Marker position (0 when @p pos is one). */
static inline uint32_t uiw_mpa_marker_gap(uint32_t pos)
{
	return (UIW_MPA_MARKER_INTERVAL - pos % UIW_MPA_MARKER_INTERVAL) % UIW_MPA_MARKER_INTERVAL;
}

/** Octets on the wire of an FPDU starting at stream position @p pos. */
uint32_t uiw_mpa_fpdu_wire_len(uint32_t pos, uint32_t ulen, bool markers);

/**
 * The largest ULPDU whose FPDU fits in one segment of @p emss octets, wherever it starts
 * (RFC 5044 §4.1: EMSS - (6 + EMSS mod 4), less 4 * ceil(EMSS / 512) with Markers).
 * @return 0 when @p emss is too small for any.
 */
uint32_t uiw_mpa_mulpdu(uint32_t emss, bool markers);

/** A piece of memory: data to send, or room to write into. */
struct uiw_mpa_iov {
	void *base;
	uint32_t len;
};

/**
 * Encodes one FPDU carrying the concatenation of @p in (@p nin pieces, at most 65535
 * octets in all) starting at stream position @p pos, into the pieces @p out (room for
 * uiw_mpa_fpdu_wire_len() octets). With @p crc false the CRC field is zero.
 * @return octets written, or 0 when the ULPDU is too long or the room too small.
 */
uint32_t uiw_mpa_fpdu_encode(const struct uiw_mpa_iov *out, unsigned nout, uint32_t pos,
			     bool markers, bool crc, const struct uiw_mpa_iov *in, unsigned nin);

#endif
