/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * The streaming FPDU deframer (RFC 5044 §4, §5): takes the in-order TCP payload of one
 * direction as mbuf chains, however it is cut, finds each FPDU, checks its Markers and CRC
 * and hands the ULPDU on as a view of the mbufs (no copy) with the Markers left out.
 *
 * A view lives only during the callback. The deframer holds the mbufs of an incomplete
 * FPDU until the rest arrives. After an error it takes nothing more: no ULPDU is handed on
 * after a stream error.
 */
#ifndef UIW_MPA_DEFRAME_H
#define UIW_MPA_DEFRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rte_mbuf.h>

#include "mpa_fpdu.h"

/** Pieces a view holds before the ULPDU is copied into one buffer instead. */
#define UIW_MPA_VIEW_PIECES 16

/** One ULPDU: @p len octets in @p npieces pieces, in order. */
struct uiw_mpa_ulpdu {
	uint32_t len;
	unsigned npieces;
	const struct uiw_mpa_iov *pieces;
};

/** Copies @p n octets from offset @p off of @p u to @p dst. @return octets copied. */
size_t uiw_mpa_ulpdu_copy(const struct uiw_mpa_ulpdu *u, size_t off, void *dst, size_t n);

enum uiw_mpa_rx {
	UIW_MPA_RX_OK = 0,    /**< everything complete was handed on; the rest is held */
	UIW_MPA_RX_STOPPED,   /**< the callback asked to stop: the deframer is not touched */
	UIW_MPA_RX_WAIT,      /**< the callback asked to wait: that FPDU and all behind it are
	                       *   held, not handed on, until uiw_mpa_deframer_resume() */
	UIW_MPA_RX_CRC,       /**< CRC mismatch (Terminate LLP/MPA 0x02) */
	UIW_MPA_RX_MARKER,    /**< Marker does not point to the FPDU (LLP/MPA 0x03) */
	UIW_MPA_RX_NOMEM,     /**< no memory to join a ULPDU spread over many mbufs */
};

/** Called for each ULPDU; return nonzero to stop (the deframer may then be gone), or
 *  UIW_MPA_ULPDU_WAIT to have it handed again, with all behind it, when resumed (nothing of
 *  it may have been used). */
typedef int (*uiw_mpa_ulpdu_fn)(void *arg, const struct uiw_mpa_ulpdu *u);

#define UIW_MPA_ULPDU_WAIT 2

struct uiw_mpa_deframer {
	struct rte_mbuf *head, *tail;   /* held segments, linked through next */
	uint32_t head_off;              /* octets of head already consumed */
	uint32_t avail;                 /* octets held and not consumed */
	uint32_t pos;                   /* stream position of the next FPDU */
	bool markers, crc;
	uint64_t crc_flag;              /* marks a segment whose CRC TCP took with its sum
					 * (uiw_tcp_rx_crc()); 0: none */
	enum uiw_mpa_rx error;          /* sticky once set */
	uint8_t *scratch;               /* a ULPDU in more than UIW_MPA_VIEW_PIECES pieces, copied
					 * for its callback only */
	struct uiw_mpa_iov pieces[UIW_MPA_VIEW_PIECES];
	uint64_t fpdus, joined;
	uint64_t coalesced;             /* octets of small segments copied into the held tail */
	uint64_t crc_with_sum;          /* FPDUs whose CRC came with TCP's sum (crc_flag) */
	unsigned nheld;                 /* mbufs held */
	bool waiting;                   /* the callback asked to wait (UIW_MPA_RX_WAIT) */
};

void uiw_mpa_deframer_init(struct uiw_mpa_deframer *d, bool markers, bool crc);

/** Frees the held mbufs and the scratch buffer. */
void uiw_mpa_deframer_fini(struct uiw_mpa_deframer *d);

/**
 * Takes @p m (consumed in every case), hands every complete FPDU's ULPDU to @p fn.
 * @return UIW_MPA_RX_OK, UIW_MPA_RX_STOPPED, or the error that stopped the stream.
 */
enum uiw_mpa_rx uiw_mpa_deframer_push(struct uiw_mpa_deframer *d, struct rte_mbuf *m,
				      uiw_mpa_ulpdu_fn fn, void *arg);

/** Hands on what is held again after UIW_MPA_RX_WAIT, the FPDU that waited first.
 *  @return as uiw_mpa_deframer_push(). */
enum uiw_mpa_rx uiw_mpa_deframer_resume(struct uiw_mpa_deframer *d, uiw_mpa_ulpdu_fn fn,
					void *arg);

/** Takes nothing more: after a callback stopped the stream for good (its owner is still
 *  alive and says so by calling this). Frees what is held. */
void uiw_mpa_deframer_stop(struct uiw_mpa_deframer *d);

#endif
