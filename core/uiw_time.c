/* SPDX-License-Identifier: BSD-3-Clause */
#include "uiw_time.h"

/* Process-wide clock calibration (infrastructure, not protocol state). */
uint64_t uiw_tsc_mult;
uint64_t uiw_tsc_base_ns;

void uiw_time_init(void)
{
	uint64_t hz = rte_get_tsc_hz();
	uint64_t before, mult;

	if (hz == 0 || uiw_tsc_mult != 0)
		return;
	before = uiw_now_ns();
	mult = (uint64_t)(((unsigned __int128)UIW_NS_PER_S << 32) / hz);
	/* Continue from the monotonic clock, so time never goes backwards. */
	uiw_tsc_base_ns = before - (uint64_t)(((unsigned __int128)rte_rdtsc() * mult) >> 32);
	uiw_tsc_mult = mult;
}
