/* SPDX-License-Identifier: BSD-3-Clause */
#include "frames.h"

#include <string.h>

const uint8_t MAC_US[6] = { 0x02, 0, 0, 0, 0, 0x01 };
const uint8_t MAC_PEER[6] = { 0x02, 0, 0, 0, 0, 0x02 };
const uint8_t MAC_OTHER[6] = { 0x02, 0, 0, 0, 0, 0x03 };
const uint8_t MAC_BCAST[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
const uint8_t MAC_ZERO[6];

void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

void put32(uint8_t *p, uint32_t v)
{
	put16(p, (uint16_t)(v >> 16));
	put16(p + 2, (uint16_t)v);
}

uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

uint32_t get32(const uint8_t *p)
{
	return (uint32_t)get16(p) << 16 | get16(p + 2);
}

uint16_t ref_cksum(const uint8_t *p, size_t len)
{
	uint32_t sum = 0;

	for (size_t i = 0; i + 1 < len; i += 2)
		sum += get16(p + i);
	if (len & 1)
		sum += (uint32_t)p[len - 1] << 8;
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

static void eth(uint8_t *buf, const uint8_t dst[6], const uint8_t src[6], uint16_t type)
{
	memcpy(buf, dst, 6);
	memcpy(buf + 6, src, 6);
	put16(buf + 12, type);
}

size_t build_arp(uint8_t *buf, const uint8_t eth_dst[6], uint16_t op, const uint8_t sha[6],
		 uint32_t spa, const uint8_t tha[6], uint32_t tpa)
{
	uint8_t *a = buf + 14;

	eth(buf, eth_dst, sha, 0x0806);
	put16(a, 1);
	put16(a + 2, 0x0800);
	a[4] = 6;
	a[5] = 4;
	put16(a + 6, op);
	memcpy(a + 8, sha, 6);
	put32(a + 14, spa);
	memcpy(a + 18, tha, 6);
	put32(a + 24, tpa);
	return 42;
}

void fix_ip_cksum(uint8_t *frame)
{
	uint8_t *ip = frame + 14;
	size_t ihl = (size_t)(ip[0] & 0xf) * 4;

	put16(ip + 10, 0);
	put16(ip + 10, ref_cksum(ip, ihl));
}

void fix_icmp_cksum(uint8_t *frame)
{
	uint8_t *ip = frame + 14;
	size_t ihl = (size_t)(ip[0] & 0xf) * 4;
	size_t len = get16(ip + 2) - ihl;

	put16(ip + ihl + 2, 0);
	put16(ip + ihl + 2, ref_cksum(ip + ihl, len));
}

size_t build_echo(uint8_t *buf, const uint8_t eth_dst[6], const uint8_t eth_src[6],
		  uint32_t src, uint32_t dst, uint8_t type, uint16_t id, uint16_t seq,
		  size_t payload, unsigned ihl_words)
{
	uint8_t *ip = buf + 14;
	size_t ihl = ihl_words * 4;
	uint8_t *icmp = ip + ihl;

	eth(buf, eth_dst, eth_src, 0x0800);
	memset(ip, 1 /* NOP option */, ihl);
	ip[0] = (uint8_t)(0x40 | ihl_words);
	ip[1] = 0;
	put16(ip + 2, (uint16_t)(ihl + 8 + payload));
	put16(ip + 4, 0x1234);
	put16(ip + 6, 0x4000);
	ip[8] = 64;
	ip[9] = 1;
	put32(ip + 12, src);
	put32(ip + 16, dst);
	icmp[0] = type;
	icmp[1] = 0;
	put16(icmp + 4, id);
	put16(icmp + 6, seq);
	for (size_t i = 0; i < payload; i++)
		icmp[8 + i] = (uint8_t)(0xa0 + i);
	fix_ip_cksum(buf);
	fix_icmp_cksum(buf);
	return 14 + ihl + 8 + payload;
}
