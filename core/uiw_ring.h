/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * Ring indices: free-running 32-bit head and tail, slots found by masking with a power of
 * two. The owner keeps the entry array (uiw_ring_slots(cap) entries) and asks here which
 * slot to fill or take.
 *
 * The capacity is what the owner asked for (a verbs CQ of 3 holds 3); only the array is
 * rounded up. Masking by a power of two keeps consecutive counters in consecutive slots
 * across the 2^32 wrap, where taking them modulo an arbitrary size would not (a ring of 3:
 * 2^32 - 1 and 0 would both be slot 0).
 */
#ifndef UIW_RING_H
#define UIW_RING_H

#include <stdbool.h>
#include <stdint.h>

/** The largest capacity a ring takes (its slots must stay a 32-bit power of two). */
#define UIW_RING_CAP_MAX (1u << 31)

struct uiw_ring {
	uint32_t cap;         /**< entries held at most */
	uint32_t mask;        /**< slots - 1 */
	uint32_t head;        /**< the next entry to take */
	uint32_t tail;        /**< the next entry to fill */
};

/** Slots an array needs for @p cap entries: the power of two at or above it, at least 1. */
static inline uint32_t uiw_ring_slots(uint32_t cap)
{
	uint32_t n = 1;

	while (n < cap && n < UIW_RING_CAP_MAX)
		n <<= 1;
	return n;
}

/** An empty ring of @p cap entries (at most UIW_RING_CAP_MAX), counters from @p start. */
static inline void uiw_ring_init_at(struct uiw_ring *r, uint32_t cap, uint32_t start)
{
	r->cap = cap;
	r->mask = uiw_ring_slots(cap) - 1;
	r->head = start;
	r->tail = start;
}

static inline void uiw_ring_init(struct uiw_ring *r, uint32_t cap)
{
	uiw_ring_init_at(r, cap, 0);
}

static inline uint32_t uiw_ring_count(const struct uiw_ring *r)
{
	return r->tail - r->head;
}

static inline bool uiw_ring_empty(const struct uiw_ring *r)
{
	return r->tail == r->head;
}

static inline bool uiw_ring_full(const struct uiw_ring *r)
{
	return r->tail - r->head >= r->cap;
}

/** The slot of counter @p i. */
static inline uint32_t uiw_ring_slot(const struct uiw_ring *r, uint32_t i)
{
	return i & r->mask;
}

/** The slot to fill; the caller has checked the ring is not full. */
static inline uint32_t uiw_ring_push(struct uiw_ring *r)
{
	return r->tail++ & r->mask;
}

/** The slot to take; the caller has checked the ring is not empty. */
static inline uint32_t uiw_ring_pop(struct uiw_ring *r)
{
	return r->head++ & r->mask;
}

#endif
