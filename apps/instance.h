/* SPDX-License-Identifier: BSD-3-Clause */
/* What the tools share: their stack instances (uiw_stack) opened with the error printed,
 * configuration loading, and the mode options. */
#ifndef UIW_APP_INSTANCE_H
#define UIW_APP_INSTANCE_H

#include <getopt.h>

#include "uiw_config.h"
#include "uiw_stack.h"

/** uiw_stack_open() on the configuration's port, built to @p top, waiting up to
 *  @p link_wait_ms for the link; more than one engine only if @p engines (a verbs tool).
 *  @return 0, or -1 after printing why. */
int app_stack_open(struct uiw_stack *s, const struct uiw_config *cfg, enum uiw_stack_top top,
		   unsigned link_wait_ms, bool engines);

/** uiw_stack_open_pair(): two instances on a ring pair named @p name (engines as above), at
 *  UIW_STACK_PAIR_IP_A and _B. @return 0, or -1 after printing why. */
int app_stack_pair(struct uiw_stack *a, struct uiw_stack *b, const struct uiw_config *cfg,
		   enum uiw_stack_top top, const char *name, bool engines);

/** Prints the non-zero counters of every layer of the instance under @p title. */
void app_print_counters(const char *title, struct uiw_stack *s);

/**
 * Loads the configuration for a tool: defaults, $UIWARP_CONF, $UIWARP_CONFIG, then each
 * --config FILE / --set TEXT in @p argv order (handled and removed from argv).
 * @return 0, or -1 after printing why.
 */
int app_load_config(struct uiw_config *cfg, int *argc, char **argv);

/** How a tool runs: two instances here, or one listening, or one connecting. */
struct app_mode {
	bool pair;
	uint16_t listen_port;
	uint32_t connect_ip;
	uint16_t connect_port;
};

/* getopt_long entries for the mode; their values are the letters app_mode_option takes. */
#define APP_MODE_OPTIONS                                                                     \
	{ "pair", no_argument, NULL, 'P' }, { "listen", required_argument, NULL, 'l' },     \
	{ "connect", required_argument, NULL, 'c' }

/** Takes a mode option. @return 1 when taken, 0 when not a mode option, -1 on error. */
int app_mode_option(struct app_mode *m, int opt, const char *arg);

/**
 * getopt_long() with the mode options taken here. @return the next other option, -1 at
 * the end, or APP_OPT_ERROR when a mode option was malformed.
 */
#define APP_OPT_ERROR (-2)
int app_next_option(int argc, char **argv, const struct option *longopts, struct app_mode *m);

/** Exactly one mode was given. */
bool app_mode_valid(const struct app_mode *m);

/** Parses "A.B.C.D:PORT". @return 0 or -1. */
int app_parse_endpoint(const char *s, uint32_t *ip, uint16_t *port);

#endif
