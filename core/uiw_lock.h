/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * A spinlock for short critical sections shared by engine threads (a CQ's ring, an SRQ's):
 * built on the compiler's atomics, so ThreadSanitizer sees its ordering.
 */
#ifndef UIW_LOCK_H
#define UIW_LOCK_H

#include <rte_pause.h>

typedef struct {
	int held;
} uiw_spinlock_t;

static inline void uiw_spin_init(uiw_spinlock_t *l)
{
	__atomic_store_n(&l->held, 0, __ATOMIC_RELAXED);
}

static inline void uiw_spin_lock(uiw_spinlock_t *l)
{
	while (__atomic_exchange_n(&l->held, 1, __ATOMIC_ACQUIRE) != 0)
		while (__atomic_load_n(&l->held, __ATOMIC_RELAXED) != 0)
			rte_pause();
}

static inline void uiw_spin_unlock(uiw_spinlock_t *l)
{
	__atomic_store_n(&l->held, 0, __ATOMIC_RELEASE);
}

#endif
