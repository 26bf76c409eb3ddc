/* SPDX-License-Identifier: BSD-3-Clause */
/** @file ICMP echo (RFC 792). */
#ifndef UIW_ICMP_WIRE_H
#define UIW_ICMP_WIRE_H

#include <assert.h>
#include <stddef.h>
#include <stdint.h>

#include "uiw_be_wire.h"

#define UIW_ICMP_ECHO_LEN 8u
#define UIW_ICMP_ECHO_REPLY 0        /* RFC 792 type 0 */
#define UIW_ICMP_ECHO_REQUEST 8      /* RFC 792 type 8 */

struct uiw_icmp_echo {
	uint8_t type;
	uint8_t code;
	uiw_be16 cksum;              /* over the whole ICMP message */
	uiw_be16 id;
	uiw_be16 seq;
} __attribute__((packed));
static_assert(sizeof(struct uiw_icmp_echo) == UIW_ICMP_ECHO_LEN, "ICMP echo header is 8 bytes");
static_assert(offsetof(struct uiw_icmp_echo, type) == 0, "type at 0");
static_assert(offsetof(struct uiw_icmp_echo, code) == 1, "code at 1");
static_assert(offsetof(struct uiw_icmp_echo, cksum) == 2, "checksum at 2");
static_assert(offsetof(struct uiw_icmp_echo, id) == 4, "id at 4");
static_assert(offsetof(struct uiw_icmp_echo, seq) == 6, "sequence at 6");

static inline uint16_t uiw_icmp_id(const struct uiw_icmp_echo *e) { return uiw_be16_get(e->id); }
static inline uint16_t uiw_icmp_seq(const struct uiw_icmp_echo *e) { return uiw_be16_get(e->seq); }

static inline void uiw_icmp_set_echo(struct uiw_icmp_echo *e, uint8_t type, uint16_t id,
				     uint16_t seq)
{
	e->type = type;
	e->code = 0;
	e->cksum = uiw_be16_of(0);
	e->id = uiw_be16_of(id);
	e->seq = uiw_be16_of(seq);
}

#endif
