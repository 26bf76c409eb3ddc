/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Test frames written byte by byte, independently of the stack's wire headers, with their
 * own RFC 1071 checksum. Layouts: RFC 826 (ARP), RFC 791 (IPv4), RFC 792 (ICMP echo).
 */
#ifndef UIW_TEST_FRAMES_H
#define UIW_TEST_FRAMES_H

#include <stddef.h>
#include <stdint.h>

extern const uint8_t MAC_US[6];      /* 02:00:00:00:00:01 */
extern const uint8_t MAC_PEER[6];    /* 02:00:00:00:00:02 */
extern const uint8_t MAC_OTHER[6];   /* 02:00:00:00:00:03 */
extern const uint8_t MAC_BCAST[6];
extern const uint8_t MAC_ZERO[6];

#define IP_US 0x0a000102u     /* 10.0.1.2/24 */
#define IP_PEER 0x0a000101u   /* 10.0.1.1 */
#define IP_OTHER 0x0a000103u  /* 10.0.1.3 */
#define IP_GW 0x0a0001feu     /* 10.0.1.254 */

void put16(uint8_t *p, uint16_t v);
void put32(uint8_t *p, uint32_t v);
uint16_t get16(const uint8_t *p);
uint32_t get32(const uint8_t *p);

/** RFC 1071 checksum of @p len bytes (the value to store, big-endian). */
uint16_t ref_cksum(const uint8_t *p, size_t len);

/** An Ethernet + ARP frame (42 bytes). @return its length. */
size_t build_arp(uint8_t *buf, const uint8_t eth_dst[6], uint16_t op, const uint8_t sha[6],
		 uint32_t spa, const uint8_t tha[6], uint32_t tpa);

/**
 * An Ethernet + IPv4 + ICMP echo frame, @p ihl_words 5 or more (options are NOPs), with
 * @p payload bytes of pattern data and valid checksums. @return its length.
 */
size_t build_echo(uint8_t *buf, const uint8_t eth_dst[6], const uint8_t eth_src[6],
		  uint32_t src, uint32_t dst, uint8_t type, uint16_t id, uint16_t seq,
		  size_t payload, unsigned ihl_words);

/** Recomputes the IPv4 header checksum of a frame built above. */
void fix_ip_cksum(uint8_t *frame);

/** Recomputes the ICMP checksum of a frame built above (total length from the IP header). */
void fix_icmp_cksum(uint8_t *frame);

#endif
