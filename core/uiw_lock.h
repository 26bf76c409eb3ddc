/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * A spinlock for short critical sections shared by engine threads (a CQ's ring, an SRQ's):
 * built on the compiler's atomics, so ThreadSanitizer sees its ordering.
 */
#ifndef UIW_LOCK_H
#define UIW_LOCK_H

#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>

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

/*
 * membarrier(2), private expedited: a full memory barrier on every running thread of the
 * process. A lock whose common side takes no locked instruction (the port gate's bursts,
 * the verbs lock's owner) has its rare side call it, so that each thread either saw what
 * that side stored or has its own flag visible to it.
 */
/** Once per process (idempotent). @return 0, or -1 with errno (an old kernel, a seccomp
 *  filter, valgrind): then the common side must lock. */
static inline int uiw_membarrier_register(void)
{
	return (int)syscall(__NR_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0);
}

/** @return 0, or -1 with errno. */
static inline int uiw_membarrier(void)
{
	return (int)syscall(__NR_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0);
}

#endif
