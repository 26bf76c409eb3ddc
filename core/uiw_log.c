/* SPDX-License-Identifier: BSD-3-Clause */
#include "uiw_log.h"

#include <stdio.h>
#include <string.h>

/* Process-wide logging threshold (infrastructure, not protocol state). */
static enum uiw_log_level log_threshold = UIW_LOG_INFO;

static const char *const level_names[] = {
	[UIW_LOG_ERR] = "error",
	[UIW_LOG_WARN] = "warn",
	[UIW_LOG_INFO] = "info",
	[UIW_LOG_DEBUG] = "debug",
};

enum uiw_log_level uiw_log_level_get(void)
{
	return log_threshold;
}

void uiw_log_level_set(enum uiw_log_level level)
{
	log_threshold = level;
}

int uiw_log_level_parse(const char *name, enum uiw_log_level *out)
{
	for (unsigned i = 0; i < sizeof(level_names) / sizeof(level_names[0]); i++) {
		if (strcmp(name, level_names[i]) == 0) {
			*out = (enum uiw_log_level)i;
			return 0;
		}
	}
	return -1;
}

void uiw_log(enum uiw_log_level level, const char *fmt, ...)
{
	va_list ap;

	if (level > log_threshold)   /* a direct call is held to the threshold as the macros are */
		return;
	fprintf(stderr, "uiwarp %s: ", level_names[level]);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}
