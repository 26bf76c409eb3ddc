/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * The Internet checksum (RFC 1071) over payloads: the sum of a buffer with AVX2 where the
 * CPU has it (64 octets in 13 instructions, against 16 in 10 for the scalar sum), and over
 * an mbuf chain. Headers keep the scalar uiw_raw_sum() of ipv4_wire.h.
 */
#ifndef UIW_CSUM_H
#define UIW_CSUM_H

#include <stddef.h>
#include <stdint.h>

#include <rte_byteorder.h>
#include <rte_mbuf.h>

#include "ipv4_wire.h"

/** Below this many octets the scalar sum is as fast. */
#define UIW_CSUM_WIDE_MIN 128

/** The folded one's-complement sum of @p len octets as uiw_raw_sum() gives it (host-order
 *  words), wide for long buffers. */
uint16_t uiw_csum_raw(const void *buf, size_t len);

/**
 * Copies @p len octets from @p src to @p dst and returns their sum as uiw_raw_sum() would
 * (host-order words, folded), in the same pass over the octets: what the TCP checksum of
 * a payload costs when it is taken while the payload is copied anyway.
 */
uint16_t uiw_copy_sum(void *dst, const void *src, size_t len);

/** A sum gathered from uiw_raw_sum() / uiw_copy_sum() parts (each in host-order words,
 *  added as they lie in memory), folded and given as uiw_inet_sum_mbuf() does. */
static inline uint16_t uiw_inet_sum_of_raw(uint32_t raw)
{
	raw = (raw & 0xffff) + (raw >> 16);
	raw = (raw & 0xffff) + (raw >> 16);
	return rte_be_to_cpu_16((uint16_t)raw);
}

/**
 * As uiw_inet_sum() over bytes [off, off+len) of an mbuf chain; the range must exist.
 * Not rte_raw_cksum_mbuf(): in DPDK 22.11 it truncates the unreduced sum of a segment that
 * starts at an odd offset to 16 bits before swapping it, losing carries.
 */
static inline uint16_t uiw_inet_sum_mbuf(const struct rte_mbuf *m, uint32_t off, uint32_t len)
{
	const struct rte_mbuf *seg = m;
	uint32_t sum = 0, done = 0;

	while (seg != NULL && off >= seg->data_len) {
		off -= seg->data_len;
		seg = seg->next;
	}
	for (; seg != NULL && done < len; seg = seg->next, off = 0) {
		uint32_t n = RTE_MIN((uint32_t)seg->data_len - off, len - done);
		const void *p = rte_pktmbuf_mtod_offset(seg, const void *, off);
		uint16_t part = n >= UIW_CSUM_WIDE_MIN ? uiw_csum_raw(p, n) : uiw_raw_sum(p, n);

		/* A part that starts at an odd byte has its words shifted by one byte. */
		sum += (done & 1) ? rte_bswap16(part) : part;
		done += n;
	}
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return rte_be_to_cpu_16((uint16_t)sum);
}

/**
 * uiw_inet_sum_mbuf() over the whole of @p m, except that a segment with @p noted in its
 * ol_flags whose hash.usr names its length (high 16 bits) gives its sum from there (low
 * 16 bits, as uiw_raw_sum()) instead of being read (uiw_tcp_mark_summed()).
 */
static inline uint16_t uiw_inet_sum_mbuf_noted(const struct rte_mbuf *m, uint64_t noted)
{
	uint32_t sum = 0, done = 0;

	for (const struct rte_mbuf *s = m; s != NULL; s = s->next) {
		const void *p = rte_pktmbuf_mtod(s, const void *);
		uint16_t part;

		if ((s->ol_flags & noted) && (s->hash.usr >> 16) == s->data_len)
			part = (uint16_t)s->hash.usr;
		else
			part = s->data_len >= UIW_CSUM_WIDE_MIN ? uiw_csum_raw(p, s->data_len)
								: uiw_raw_sum(p, s->data_len);
		sum += (done & 1) ? rte_bswap16(part) : part;
		done += s->data_len;
	}
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return rte_be_to_cpu_16((uint16_t)sum);
}

#endif
