/* SPDX-License-Identifier: BSD-3-Clause */
/** @file RDMAP message bodies (RFC 5040 §4): Read Request and Terminate; RFC 7306's
 *  Immediate Data and Atomic Request and Response. */
#ifndef UIW_RDMAP_WIRE_H
#define UIW_RDMAP_WIRE_H

#include <assert.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "uiw_be_wire.h"

/* RFC 5040 §4.3: RDMAP's control byte, the second octet of every DDP header:
 * RV (2) | Rsvd (2) | Opcode (4). */
#define UIW_RDMAP_RV_SHIFT 6
#define UIW_RDMAP_VERSION 1
#define UIW_RDMAP_OPCODE_MASK 0x0f

/* RDMAP's queue numbers on DDP's untagged model (RFC 5040 §5.1). */
#define UIW_DDP_QN_SEND 0
#define UIW_DDP_QN_READ_REQ 1
#define UIW_DDP_QN_TERMINATE 2
#define UIW_RDMAP_QUEUES 3
/* RFC 7306 (used only where both sides announced it, docs/MPA.md): Atomic Requests share
 * the Read Request queue, Atomic Responses have their own; Immediate Data is on QN 0. */
#define UIW_DDP_QN_ATOMIC_RESP 3
#define UIW_RDMAP_QUEUES_EXT 4

/* RFC 5040 §4.3 opcodes. */
#define UIW_RDMAP_WRITE 0
#define UIW_RDMAP_READ_REQ 1
#define UIW_RDMAP_READ_RESP 2
#define UIW_RDMAP_SEND 3
#define UIW_RDMAP_SEND_INV 4
#define UIW_RDMAP_SEND_SE 5
#define UIW_RDMAP_SEND_SE_INV 6
#define UIW_RDMAP_TERMINATE 7
/* RFC 7306 opcodes. */
#define UIW_RDMAP_IMM 8
#define UIW_RDMAP_IMM_SE 9
#define UIW_RDMAP_ATOMIC_REQ 10
#define UIW_RDMAP_ATOMIC_RESP 11
/* uiwarp's own, only where both ends announced UIW_MPA_EXT_SEND_IMM (docs/MPA.md): a Send
 * (with SE) whose every segment carries the 32-bit immediate value in the RsvdULP field,
 * where a Send with Invalidate carries its STag. Opcodes RFC 7306 leaves reserved. */
#define UIW_RDMAP_SEND_IMM 12
#define UIW_RDMAP_SEND_IMM_SE 13

/* RFC 7306 atomic operation codes (the low 4 bits of the request's first word; Wireshark
 * names 0 and 2 FetchAdd and CmpSwap). */
#define UIW_ATOMIC_FETCH_ADD 0
#define UIW_ATOMIC_SWAP 1
#define UIW_ATOMIC_CMP_SWAP 2

/* RFC 5040 §4.8: the Terminate control word. Layer and EType share the first byte. */
#define UIW_TERM_LAYER_RDMAP 0
#define UIW_TERM_LAYER_DDP 1
#define UIW_TERM_LAYER_LLP 2
#define UIW_TERM_HDR_M 0x80       /* DDP Segment Length valid */
#define UIW_TERM_HDR_D 0x40       /* DDP header included */
#define UIW_TERM_HDR_R 0x20       /* RDMAP header included */

static inline uint8_t uiw_rdmap_ctrl(uint8_t opcode)
{
	return (uint8_t)(UIW_RDMAP_VERSION << UIW_RDMAP_RV_SHIFT | (opcode & UIW_RDMAP_OPCODE_MASK));
}

struct uiw_rdmap_read_req {
	uiw_be32 sink_stag;
	uiw_be64 sink_to;
	uiw_be32 size;
	uiw_be32 src_stag;
	uiw_be64 src_to;
} __attribute__((packed));
static_assert(sizeof(struct uiw_rdmap_read_req) == 28, "Read Request body is 28 bytes");
static_assert(offsetof(struct uiw_rdmap_read_req, sink_to) == 4, "sink TO at 4");
static_assert(offsetof(struct uiw_rdmap_read_req, size) == 12, "size at 12");
static_assert(offsetof(struct uiw_rdmap_read_req, src_stag) == 16, "source STag at 16");
static_assert(offsetof(struct uiw_rdmap_read_req, src_to) == 20, "source TO at 20");

struct uiw_rdmap_term {
	uint8_t layer_etype;      /* Layer (high nibble) | EType (low nibble) */
	uint8_t code;
	uint8_t hdrct;            /* M D R in the top bits, then reserved */
	uint8_t rsvd;
} __attribute__((packed));
static_assert(sizeof(struct uiw_rdmap_term) == 4, "Terminate control is 4 bytes");

/* RFC 7306 Immediate Data: 8 octets of the ULP's. The verbs' 32-bit immediate value goes
 * in the first four (as the application gave it, network order), the rest zero. */
struct uiw_rdmap_imm {
	uint8_t data[8];
} __attribute__((packed));
static_assert(sizeof(struct uiw_rdmap_imm) == 8, "Immediate Data is 8 bytes");

/* RFC 7306 Atomic Request body, after the untagged DDP header. */
struct uiw_rdmap_atomic_req {
	uiw_be32 op;              /* Reserved (28) | Atomic Operation (4) */
	uiw_be32 req_id;
	uiw_be32 stag;
	uiw_be64 to;
	uiw_be64 add_swap;
	uiw_be64 add_swap_mask;
	uiw_be64 compare;
	uiw_be64 compare_mask;
} __attribute__((packed));
static_assert(sizeof(struct uiw_rdmap_atomic_req) == 52, "Atomic Request body is 52 bytes");
static_assert(offsetof(struct uiw_rdmap_atomic_req, to) == 12, "remote TO at 12");
static_assert(offsetof(struct uiw_rdmap_atomic_req, compare_mask) == 44, "compare mask at 44");

/* RFC 7306 Atomic Response body: the request's identifier and the original value. */
struct uiw_rdmap_atomic_resp {
	uiw_be32 req_id;
	uiw_be64 orig;
} __attribute__((packed));
static_assert(sizeof(struct uiw_rdmap_atomic_resp) == 12, "Atomic Response body is 12 bytes");

/* The request's target and identity; then its operands (add or swap data and mask,
 * compare data and mask). */
static inline void uiw_rdmap_atomic_req_set(struct uiw_rdmap_atomic_req *r, uint8_t op,
					    uint32_t req_id, uint32_t stag, uint64_t to)
{
	r->op = uiw_be32_of(op & 0x0fu);
	r->req_id = uiw_be32_of(req_id);
	r->stag = uiw_be32_of(stag);
	r->to = uiw_be64_of(to);
}

static inline void uiw_rdmap_atomic_req_operands(struct uiw_rdmap_atomic_req *r, uint64_t add_swap,
						 uint64_t add_swap_mask, uint64_t compare,
						 uint64_t compare_mask)
{
	r->add_swap = uiw_be64_of(add_swap);
	r->add_swap_mask = uiw_be64_of(add_swap_mask);
	r->compare = uiw_be64_of(compare);
	r->compare_mask = uiw_be64_of(compare_mask);
}

/* The whole first word: the operation in its low 4 bits, reserved bits above. */
static inline uint32_t uiw_rdmap_atomic_word(const struct uiw_rdmap_atomic_req *r) { return uiw_be32_get(r->op); }
static inline uint32_t uiw_rdmap_atomic_req_id(const struct uiw_rdmap_atomic_req *r) { return uiw_be32_get(r->req_id); }
static inline uint32_t uiw_rdmap_atomic_stag(const struct uiw_rdmap_atomic_req *r) { return uiw_be32_get(r->stag); }
static inline uint64_t uiw_rdmap_atomic_to(const struct uiw_rdmap_atomic_req *r) { return uiw_be64_get(r->to); }
static inline uint64_t uiw_rdmap_atomic_add_swap(const struct uiw_rdmap_atomic_req *r) { return uiw_be64_get(r->add_swap); }
static inline uint64_t uiw_rdmap_atomic_add_swap_mask(const struct uiw_rdmap_atomic_req *r) { return uiw_be64_get(r->add_swap_mask); }
static inline uint64_t uiw_rdmap_atomic_compare(const struct uiw_rdmap_atomic_req *r) { return uiw_be64_get(r->compare); }
static inline uint64_t uiw_rdmap_atomic_compare_mask(const struct uiw_rdmap_atomic_req *r) { return uiw_be64_get(r->compare_mask); }

static inline void uiw_rdmap_atomic_resp_set(struct uiw_rdmap_atomic_resp *r, uint32_t req_id,
					     uint64_t orig)
{
	r->req_id = uiw_be32_of(req_id);
	r->orig = uiw_be64_of(orig);
}

static inline uint32_t uiw_rdmap_atomic_resp_id(const struct uiw_rdmap_atomic_resp *r) { return uiw_be32_get(r->req_id); }
static inline uint64_t uiw_rdmap_atomic_resp_orig(const struct uiw_rdmap_atomic_resp *r) { return uiw_be64_get(r->orig); }

static inline void uiw_rdmap_read_req_set(struct uiw_rdmap_read_req *r, uint32_t sink_stag,
					  uint64_t sink_to, uint32_t size, uint32_t src_stag,
					  uint64_t src_to)
{
	r->sink_stag = uiw_be32_of(sink_stag);
	r->sink_to = uiw_be64_of(sink_to);
	r->size = uiw_be32_of(size);
	r->src_stag = uiw_be32_of(src_stag);
	r->src_to = uiw_be64_of(src_to);
}

static inline uint32_t uiw_rdmap_rr_sink_stag(const struct uiw_rdmap_read_req *r) { return uiw_be32_get(r->sink_stag); }
static inline uint64_t uiw_rdmap_rr_sink_to(const struct uiw_rdmap_read_req *r) { return uiw_be64_get(r->sink_to); }
static inline uint32_t uiw_rdmap_rr_size(const struct uiw_rdmap_read_req *r) { return uiw_be32_get(r->size); }
static inline uint32_t uiw_rdmap_rr_src_stag(const struct uiw_rdmap_read_req *r) { return uiw_be32_get(r->src_stag); }

static inline void uiw_rdmap_term_set(struct uiw_rdmap_term *t, uint8_t layer, uint8_t etype,
				      uint8_t code, uint8_t hdrct)
{
	t->layer_etype = (uint8_t)((layer & 0x0f) << 4 | (etype & 0x0f));
	t->code = code;
	t->hdrct = hdrct;
	t->rsvd = 0;
}

/* After the control word of a Terminate with M set: the terminated segment's length. */
static inline void uiw_rdmap_term_seg_len_set(uint8_t *p, uint16_t len)
{
	uiw_be16 v = uiw_be16_of(len);

	memcpy(p, &v, sizeof(v));
}

#endif
