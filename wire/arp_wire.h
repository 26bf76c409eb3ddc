/* SPDX-License-Identifier: BSD-3-Clause */
/** @file ARP for IPv4 over Ethernet (RFC 826). */
#ifndef UIW_ARP_WIRE_H
#define UIW_ARP_WIRE_H

#include <assert.h>
#include <stddef.h>
#include <stdint.h>

#include "eth_wire.h"
#include "uiw_be_wire.h"

#define UIW_ARP_LEN 28u
#define UIW_ARP_HTYPE_ETHER 1        /* RFC 826 ar$hrd, Ethernet */
#define UIW_ARP_OP_REQUEST 1         /* RFC 826 ar$op */
#define UIW_ARP_OP_REPLY 2

struct uiw_arp_hdr {
	uiw_be16 htype;              /* ar$hrd */
	uiw_be16 ptype;              /* ar$pro: EtherType of the protocol, 0x0800 */
	uint8_t hlen;                /* ar$hln: 6 */
	uint8_t plen;                /* ar$pln: 4 */
	uiw_be16 op;                 /* ar$op */
	uint8_t sha[UIW_ETH_ALEN];   /* sender hardware address */
	uiw_be32 spa;                /* sender protocol address */
	uint8_t tha[UIW_ETH_ALEN];   /* target hardware address */
	uiw_be32 tpa;                /* target protocol address */
} __attribute__((packed));
static_assert(sizeof(struct uiw_arp_hdr) == UIW_ARP_LEN, "ARP for IPv4/Ethernet is 28 bytes");
static_assert(offsetof(struct uiw_arp_hdr, htype) == 0, "htype at 0");
static_assert(offsetof(struct uiw_arp_hdr, ptype) == 2, "ptype at 2");
static_assert(offsetof(struct uiw_arp_hdr, hlen) == 4, "hlen at 4");
static_assert(offsetof(struct uiw_arp_hdr, plen) == 5, "plen at 5");
static_assert(offsetof(struct uiw_arp_hdr, op) == 6, "op at 6");
static_assert(offsetof(struct uiw_arp_hdr, sha) == 8, "sha at 8");
static_assert(offsetof(struct uiw_arp_hdr, spa) == 14, "spa at 14");
static_assert(offsetof(struct uiw_arp_hdr, tha) == 18, "tha at 18");
static_assert(offsetof(struct uiw_arp_hdr, tpa) == 24, "tpa at 24");

static inline uint16_t uiw_arp_htype(const struct uiw_arp_hdr *a) { return uiw_be16_get(a->htype); }
static inline uint16_t uiw_arp_ptype(const struct uiw_arp_hdr *a) { return uiw_be16_get(a->ptype); }
static inline uint16_t uiw_arp_op(const struct uiw_arp_hdr *a) { return uiw_be16_get(a->op); }
static inline uint32_t uiw_arp_spa(const struct uiw_arp_hdr *a) { return uiw_be32_get(a->spa); }
static inline uint32_t uiw_arp_tpa(const struct uiw_arp_hdr *a) { return uiw_be32_get(a->tpa); }

/** Writes the fixed part for IPv4 over Ethernet and the operation. */
static inline void uiw_arp_set_fixed(struct uiw_arp_hdr *a, uint16_t op)
{
	a->htype = uiw_be16_of(UIW_ARP_HTYPE_ETHER);
	a->ptype = uiw_be16_of(UIW_ETHERTYPE_IPV4);
	a->hlen = UIW_ETH_ALEN;
	a->plen = 4;
	a->op = uiw_be16_of(op);
}

static inline void uiw_arp_set_spa(struct uiw_arp_hdr *a, uint32_t ip) { a->spa = uiw_be32_of(ip); }
static inline void uiw_arp_set_tpa(struct uiw_arp_hdr *a, uint32_t ip) { a->tpa = uiw_be32_of(ip); }

#endif
