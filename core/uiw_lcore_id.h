/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * DPDK's rte_lcore_id() read through a thread-local of the stack's own.
 *
 * Every mbuf allocation and free finds its mempool cache by rte_lcore_id(), an inline
 * read of the EAL's thread-local per_lcore__lcore_id. In the drop-in, a shared library,
 * that variable lives in another module (librte_eal.so), so each read was a call to
 * __tls_get_addr(): 40 places in libibverbs.so, the data path's among them. The
 * initial-exec model cannot be asked for it: librte_eal.so's 4.5 KiB of thread-locals do
 * not fit the room the dynamic linker keeps for libraries opened later (dlopen(), as
 * Open MPI's components open libfabric and with it this library).
 *
 * So every file of the project is compiled with this header first (meson.build, -include):
 * the name the EAL's header reads becomes uiw_lcore_id_copy, a thread-local of the
 * stack's own in the initial-exec model. It starts at LCORE_ID_ANY in every thread, as
 * the EAL's does in a thread it did not make or register, and uiw_lcore_id_sync() copies
 * the EAL's after rte_eal_init() in the thread that ran it (core/uiw_lcore_id.c). The
 * stack registers no other thread with the EAL: registering one (rte_thread_register)
 * would change the EAL's value and not the copy (tests/tools/check_style.py refuses it).
 */
#ifndef UIW_LCORE_ID_H
#define UIW_LCORE_ID_H

#include <stdbool.h>

extern __thread __attribute__((tls_model("initial-exec"))) unsigned uiw_lcore_id_copy;
#define per_lcore__lcore_id uiw_lcore_id_copy   /* core/uiw_lcore_id.c undoes it */

/* Copies the EAL's lcore id of the calling thread (after rte_eal_init()). */
void uiw_lcore_id_sync(void);
/* The EAL's own lcore id of the calling thread, for tests. */
unsigned uiw_lcore_id_eal(void);

/*
 * Spare lcore ids: ids the EAL gave no thread, each handed to one kind of work that one
 * thread at a time does (a drop-in engine's passes, lib/verbs). A thread the EAL made no
 * lcore of (LCORE_ID_ANY: the drop-in's progress thread, its engine threads, a program's
 * threads other than the one that started the EAL) has no mempool caches, and took every
 * mbuf from the pool's ring and gave every one back there; for that work it takes the
 * spare id, and with it that id's caches, which no EAL thread uses. The EAL's own threads
 * keep theirs. uiw_lcore_id_borrow() can set the EAL's value to it too for the while:
 * DPDK's own code (a PMD's receive burst taking mbufs, its transmit giving them back)
 * reads that one.
 *
 * uiw_lcore_id_spare() gives ids from the highest down, skipping any the EAL has a role
 * for (the EAL registers a program's own thread under the lowest free id); LCORE_ID_ANY
 * when none is left. Its caller keeps the one-thread-at-a-time rule.
 * uiw_lcore_id_spares_reset() starts again from the top, once nothing holds a spare.
 */
unsigned uiw_lcore_id_spare(void);
void uiw_lcore_id_spares_reset(void);

#define UIW_LCORE_ID_ANY 0xffffffffu   /* LCORE_ID_ANY (uiw_lcore_id.c checks) */

/* Where the calling thread's EAL value lives, once asked (uiw_lcore_id_eal_var()). */
extern __thread __attribute__((tls_model("initial-exec"))) unsigned *uiw_lcore_id_eal_at;
unsigned *uiw_lcore_id_eal_var(void);

/* Takes @p spare as the calling thread's lcore id in the stack's copy, if the EAL gave it
 * none, and with @p eal_too in the EAL's value as well. @return the id to give back to
 * uiw_lcore_id_restore() at the end of the work. */
static inline unsigned uiw_lcore_id_borrow(unsigned spare, bool eal_too)
{
	unsigned own = uiw_lcore_id_copy;

	if (own != UIW_LCORE_ID_ANY)
		return own;
	uiw_lcore_id_copy = spare;
	if (eal_too) {
		unsigned *eal = uiw_lcore_id_eal_at;

		if (!eal)   /* the first in this thread: one __tls_get_addr() */
			eal = uiw_lcore_id_eal_var();
		*eal = spare;
	}
	return own;
}

static inline void uiw_lcore_id_restore(unsigned own)
{
	if (uiw_lcore_id_copy != own) {
		uiw_lcore_id_copy = own;
		if (uiw_lcore_id_eal_at && *uiw_lcore_id_eal_at != own)
			*uiw_lcore_id_eal_at = own;
	}
}

#endif
