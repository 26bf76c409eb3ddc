/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * The engine's clock. Protocol code never reads it directly: timer entry points take
 * `now` in nanoseconds, so tests can drive time by hand.
 *
 * Once the EAL runs, the clock is the TSC scaled to nanoseconds (a few cycles; on this
 * kind of VM clock_gettime costs far more); before that, CLOCK_MONOTONIC.
 */
#ifndef UIW_TIME_H
#define UIW_TIME_H

#include <stdint.h>
#include <time.h>

#include <rte_cycles.h>

#define UIW_NS_PER_MS 1000000ull
#define UIW_NS_PER_S 1000000000ull

/** TSC-to-ns factor (ns per cycle, 32.32 fixed point) and offset; 0 = not set. */
extern uint64_t uiw_tsc_mult;
extern uint64_t uiw_tsc_base_ns;

/** Switches the clock to the TSC (call after rte_eal_init). */
void uiw_time_init(void);

/** Monotonic time in nanoseconds. */
static inline uint64_t uiw_now_ns(void)
{
	struct timespec ts;

	if (uiw_tsc_mult != 0)
		return uiw_tsc_base_ns +
		       (uint64_t)(((unsigned __int128)rte_rdtsc() * uiw_tsc_mult) >> 32);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * UIW_NS_PER_S + (uint64_t)ts.tv_nsec;
}

#endif
