/* SPDX-License-Identifier: BSD-3-Clause */
/** @file DDP segment headers (RFC 5041 §4): tagged (14 bytes) and untagged (18 bytes). */
#ifndef UIW_DDP_WIRE_H
#define UIW_DDP_WIRE_H

#include <assert.h>
#include <stddef.h>
#include <stdint.h>

#include "uiw_be_wire.h"

/* RFC 5041 §4.1 and §4.2: the first control byte. */
#define UIW_DDP_T 0x80            /* tagged buffer model */
#define UIW_DDP_L 0x40            /* last segment of the message */
#define UIW_DDP_RSVD_MASK 0x3c
#define UIW_DDP_DV_MASK 0x03
#define UIW_DDP_VERSION 1         /* RFC 5041 §4.2 */

/* The second byte belongs to the ULP (RFC 5041 §4.2): DDP carries it and never reads it.
 * RDMAP's meaning of it, and of the untagged queue numbers, is in rdmap_wire.h. */

/* Terminate error types and codes for DDP (RFC 5040 §4.8 layer 1, RFC 5041 §7.1-7.2). */
#define UIW_DDP_ET_CATA 0
#define UIW_DDP_ET_TAGGED 1
#define UIW_DDP_ET_UNTAGGED 2
#define UIW_DDP_TAG_INVALID_STAG 0x00
#define UIW_DDP_TAG_BOUNDS 0x01
#define UIW_DDP_TAG_STAG_STREAM 0x02    /* STag not associated with this stream */
#define UIW_DDP_TAG_TO_WRAP 0x03
#define UIW_DDP_TAG_VERSION 0x04
#define UIW_DDP_UNT_QN 0x01
#define UIW_DDP_UNT_NO_BUFFER 0x02      /* invalid MSN: no buffer available */
#define UIW_DDP_UNT_MSN_RANGE 0x03
#define UIW_DDP_UNT_MO 0x04
#define UIW_DDP_UNT_TOO_LONG 0x05       /* message too long for the buffer */
#define UIW_DDP_UNT_VERSION 0x06

struct uiw_ddp_tagged {
	uint8_t ctrl;
	uint8_t rdmap;
	uiw_be32 stag;
	uiw_be64 to;
} __attribute__((packed));
static_assert(sizeof(struct uiw_ddp_tagged) == 14, "tagged DDP header is 14 bytes");
static_assert(offsetof(struct uiw_ddp_tagged, stag) == 2, "STag at 2");
static_assert(offsetof(struct uiw_ddp_tagged, to) == 6, "TO at 6");

struct uiw_ddp_untagged {
	uint8_t ctrl;
	uint8_t rdmap;
	uiw_be32 rsvd_ulp;        /* RDMAP: the STag to invalidate, else zero */
	uiw_be32 qn;
	uiw_be32 msn;
	uiw_be32 mo;
} __attribute__((packed));
static_assert(sizeof(struct uiw_ddp_untagged) == 18, "untagged DDP header is 18 bytes");
static_assert(offsetof(struct uiw_ddp_untagged, rsvd_ulp) == 2, "RsvdULP at 2");
static_assert(offsetof(struct uiw_ddp_untagged, qn) == 6, "QN at 6");
static_assert(offsetof(struct uiw_ddp_untagged, msn) == 10, "MSN at 10");
static_assert(offsetof(struct uiw_ddp_untagged, mo) == 14, "MO at 14");

static inline void uiw_ddp_tagged_set(struct uiw_ddp_tagged *h, uint8_t ctrl, uint8_t ulp,
				      uint32_t stag, uint64_t to)
{
	h->ctrl = ctrl;
	h->rdmap = ulp;
	h->stag = uiw_be32_of(stag);
	h->to = uiw_be64_of(to);
}

static inline void uiw_ddp_untagged_set(struct uiw_ddp_untagged *h, uint8_t ctrl, uint8_t ulp,
					uint32_t rsvd_ulp, uint32_t qn, uint32_t msn, uint32_t mo)
{
	h->ctrl = ctrl;
	h->rdmap = ulp;
	h->rsvd_ulp = uiw_be32_of(rsvd_ulp);
	h->qn = uiw_be32_of(qn);
	h->msn = uiw_be32_of(msn);
	h->mo = uiw_be32_of(mo);
}

static inline uint32_t uiw_ddp_stag(const struct uiw_ddp_tagged *h) { return uiw_be32_get(h->stag); }
static inline uint64_t uiw_ddp_to(const struct uiw_ddp_tagged *h) { return uiw_be64_get(h->to); }
static inline uint32_t uiw_ddp_qn(const struct uiw_ddp_untagged *h) { return uiw_be32_get(h->qn); }
static inline uint32_t uiw_ddp_msn(const struct uiw_ddp_untagged *h) { return uiw_be32_get(h->msn); }
static inline uint32_t uiw_ddp_mo(const struct uiw_ddp_untagged *h) { return uiw_be32_get(h->mo); }

#endif
