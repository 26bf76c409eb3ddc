/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * Named counters. A layer declares its counters once as an X-macro list
 * `X(name, "what it counts")`; UIW_COUNTERS_DECLARE turns that into an enum of indices
 * (PREFIX_name) and a table of names and descriptions, so every drop reason has a name that
 * tools print and tests assert.
 */
#ifndef UIW_COUNTERS_H
#define UIW_COUNTERS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

struct uiw_counter_desc {
	const char *name;
	const char *help;
};

#define UIW_COUNTER_ENUM_(prefix, name, help) prefix##name,
#define UIW_COUNTER_DESC_(name, help) { #name, help },

/**
 * Prints "title.name value  # help" for each counter (only the non-zero ones when
 * @p nonzero_only). @return the number of lines printed.
 */
unsigned uiw_counters_print(FILE *out, const char *title, const struct uiw_counter_desc *desc,
			    const uint64_t *values, unsigned n, bool nonzero_only);

#endif
