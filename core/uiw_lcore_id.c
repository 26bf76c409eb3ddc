/* SPDX-License-Identifier: BSD-3-Clause */
/* The EAL's lcore id read directly, and the stack's copy of it (uiw_lcore_id.h). */
#include "uiw_lcore_id.h"

/* This file alone reads the EAL's own: the header came first (-include), so the name is
 * given back before the EAL's header declares it. */
#undef per_lcore__lcore_id
#include <rte_lcore.h>

__thread __attribute__((tls_model("initial-exec"))) unsigned uiw_lcore_id_copy = LCORE_ID_ANY;
__thread __attribute__((tls_model("initial-exec"))) unsigned *uiw_lcore_id_eal_at;

unsigned *uiw_lcore_id_eal_var(void)
{
	uiw_lcore_id_eal_at = &RTE_PER_LCORE(_lcore_id);
	return uiw_lcore_id_eal_at;
}

unsigned uiw_lcore_id_eal(void)
{
	return rte_lcore_id();
}

void uiw_lcore_id_sync(void)
{
	uiw_lcore_id_copy = rte_lcore_id();
}

_Static_assert(UIW_LCORE_ID_ANY == LCORE_ID_ANY, "LCORE_ID_ANY as the EAL has it");

static unsigned spares_given;

unsigned uiw_lcore_id_spare(void)
{
	for (;;) {
		unsigned n = __atomic_fetch_add(&spares_given, 1, __ATOMIC_RELAXED);

		if (n >= RTE_MAX_LCORE)
			return LCORE_ID_ANY;
		if (rte_eal_lcore_role(RTE_MAX_LCORE - 1 - n) == ROLE_OFF)
			return RTE_MAX_LCORE - 1 - n;
	}
}

void uiw_lcore_id_spares_reset(void)
{
	__atomic_store_n(&spares_given, 0, __ATOMIC_RELAXED);
}
