/* SPDX-License-Identifier: BSD-3-Clause */
/** @file Ethernet II header (IEEE 802.3, RFC 894 framing of IPv4). */
#ifndef UIW_ETH_WIRE_H
#define UIW_ETH_WIRE_H

#include <assert.h>
#include <stddef.h>
#include <stdint.h>

#include "uiw_be_wire.h"

#define UIW_ETH_ALEN 6
#define UIW_ETH_HDR_LEN 14u
#define UIW_ETH_MIN_FRAME 60          /* without FCS */
#define UIW_ETHERTYPE_IPV4 0x0800     /* RFC 894 */
#define UIW_ETHERTYPE_ARP 0x0806      /* RFC 826 */
#define UIW_ETHERTYPE_VLAN 0x8100     /* IEEE 802.1Q: not supported, counted */

struct uiw_eth_hdr {
	uint8_t dst[UIW_ETH_ALEN];
	uint8_t src[UIW_ETH_ALEN];
	uiw_be16 type;
} __attribute__((packed));
static_assert(sizeof(struct uiw_eth_hdr) == UIW_ETH_HDR_LEN, "Ethernet header is 14 bytes");
static_assert(offsetof(struct uiw_eth_hdr, dst) == 0, "dst at 0");
static_assert(offsetof(struct uiw_eth_hdr, src) == 6, "src at 6");
static_assert(offsetof(struct uiw_eth_hdr, type) == 12, "EtherType at 12");

static inline uint16_t uiw_eth_type(const struct uiw_eth_hdr *h)
{
	return uiw_be16_get(h->type);
}

static inline void uiw_eth_set_type(struct uiw_eth_hdr *h, uint16_t type)
{
	h->type = uiw_be16_of(type);
}

/** True for the broadcast address and for any group (multicast) address. */
static inline int uiw_eth_is_group(const uint8_t mac[UIW_ETH_ALEN])
{
	return mac[0] & 1;
}

static inline int uiw_eth_is_broadcast(const uint8_t mac[UIW_ETH_ALEN])
{
	return (mac[0] & mac[1] & mac[2] & mac[3] & mac[4] & mac[5]) == 0xff;
}

static inline int uiw_eth_is_zero(const uint8_t mac[UIW_ETH_ALEN])
{
	return (mac[0] | mac[1] | mac[2] | mac[3] | mac[4] | mac[5]) == 0;
}

#endif
