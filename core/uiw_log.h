/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * Logging with levels. Set-up and control paths log through UIW_LOG(); the fast path
 * logs only through UIW_DEBUG(), which costs one predictable branch when debug is off.
 */
#ifndef UIW_LOG_H
#define UIW_LOG_H

#include <stdarg.h>

enum uiw_log_level {
	UIW_LOG_ERR = 0,
	UIW_LOG_WARN = 1,
	UIW_LOG_INFO = 2,
	UIW_LOG_DEBUG = 3,
};

/** Current threshold: messages above it are not printed. */
enum uiw_log_level uiw_log_level_get(void);
void uiw_log_level_set(enum uiw_log_level level);

/**
 * Parses "error", "warn", "info" or "debug".
 * @return 0 and sets *out, or -1 if the name is unknown.
 */
int uiw_log_level_parse(const char *name, enum uiw_log_level *out);

/** Writes one line to stderr, prefixed with the level. Use the macros. */
void uiw_log(enum uiw_log_level level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#define UIW_LOG(level, ...)                                                   \
	do {                                                                  \
		if ((level) <= uiw_log_level_get())                           \
			uiw_log((level), __VA_ARGS__);                        \
	} while (0)

#define UIW_ERR(...) UIW_LOG(UIW_LOG_ERR, __VA_ARGS__)
#define UIW_WARN(...) UIW_LOG(UIW_LOG_WARN, __VA_ARGS__)
#define UIW_INFO(...) UIW_LOG(UIW_LOG_INFO, __VA_ARGS__)
#define UIW_DEBUG(...) UIW_LOG(UIW_LOG_DEBUG, __VA_ARGS__)

#endif
