/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * The engine's clock. Protocol code never reads it directly: timer entry points take
 * `now` in nanoseconds, so tests can drive time by hand.
 */
#ifndef UIW_TIME_H
#define UIW_TIME_H

#include <stdint.h>
#include <time.h>

#define UIW_NS_PER_MS 1000000ull
#define UIW_NS_PER_S 1000000000ull

/** Monotonic time in nanoseconds (vDSO clock_gettime: no system call). */
static inline uint64_t uiw_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * UIW_NS_PER_S + (uint64_t)ts.tv_nsec;
}

#endif
