/* SPDX-License-Identifier: BSD-3-Clause */
#include "uiw_counters.h"

#include <inttypes.h>

unsigned uiw_counters_print(FILE *out, const char *title, const struct uiw_counter_desc *desc,
			    const uint64_t *values, unsigned n, bool nonzero_only)
{
	unsigned lines = 0;

	for (unsigned i = 0; i < n; i++) {
		if (nonzero_only && values[i] == 0)
			continue;
		fprintf(out, "  %s.%-24s %12" PRIu64 "  # %s\n", title, desc[i].name, values[i],
			desc[i].help);
		lines++;
	}
	return lines;
}
