/* SPDX-License-Identifier: BSD-3-Clause */
/* One stack instance for the tools: port (with optional faults), lower half, TCP. */
#ifndef UIW_APP_INSTANCE_H
#define UIW_APP_INSTANCE_H

#include <getopt.h>

#include "net.h"
#include "tcp.h"
#include "uiw_config.h"
#include "uiw_fault.h"
#include "uiw_port.h"

struct app_instance {
	struct uiw_config cfg;
	struct uiw_port port;
	struct uiw_fault fault;
	struct uiw_net net;
	struct uiw_tcp *tcp;
};

/**
 * Brings up the port @p cfg names (or the ethdev @p port_id when it is not UINT16_MAX),
 * attaches the configured faults, waits up to @p link_wait_ms for the link, and creates
 * the lower half and TCP. @return 0, or -1 after printing why.
 */
int app_instance_open(struct app_instance *ai, const struct uiw_config *cfg, uint16_t port_id,
		      unsigned link_wait_ms);

#define APP_PAIR_IP_A 0x0a000001u   /* 10.0.0.1 */
#define APP_PAIR_IP_B 0x0a000002u   /* 10.0.0.2 */

/** Two instances joined by a ring pair named @p name, at APP_PAIR_IP_A and _B. */
int app_open_pair(const struct uiw_config *cfg, struct app_instance *a, struct app_instance *b,
		  const char *name);

void app_instance_close(struct app_instance *ai);

/** Prints the non-zero counters of every layer of the instance. */
void app_instance_print_counters(struct app_instance *ai, const char *title);

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
