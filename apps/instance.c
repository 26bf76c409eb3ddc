/* SPDX-License-Identifier: BSD-3-Clause */
#include "instance.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "uiw_log.h"
#include "uiw_time.h"

int app_stack_open(struct uiw_stack *s, const struct uiw_config *cfg, enum uiw_stack_top top,
		   unsigned link_wait_ms, bool engines)
{
	const struct uiw_stack_opts o = { .top = top, .port_id = UIW_STACK_PORT_CONFIG,
					  .link_wait_ms = link_wait_ms, .engines = engines };
	char err[512];
	int rc = uiw_stack_open(s, cfg, &o, err, sizeof(err));

	if (rc != 0)
		fprintf(stderr, "%s%s\n", rc == -EINVAL ? "configuration: " : "", err);
	return rc != 0 ? -1 : 0;
}

int app_stack_pair(struct uiw_stack *a, struct uiw_stack *b, const struct uiw_config *cfg,
		   enum uiw_stack_top top, const char *name, bool engines)
{
	char err[512];
	int rc;

	if (cfg->engines > 1 && !engines) {
		fprintf(stderr, "configuration: key 'engines' is %u, but this program runs one "
			"engine (engines are for the verbs programs and the drop-in libraries)\n",
			cfg->engines);
		return -1;
	}
	rc = uiw_stack_open_pair(a, b, cfg, top, name, err, sizeof(err));

	if (rc != 0)
		fprintf(stderr, "%s%s\n", rc == -EINVAL ? "configuration: " : "", err);
	return rc != 0 ? -1 : 0;
}

void app_print_counters(const char *title, struct uiw_stack *s)
{
	printf("counters of %s (non-zero):\n", title);
	uiw_stack_print_counters(stdout, s);
}

int app_load_config(struct uiw_config *cfg, int *argc, char **argv)
{
	char err[512];
	int out = 1;

	uiw_config_defaults(cfg);
	if (uiw_config_load_env(cfg, err, sizeof(err)) != 0)
		goto bad;
	for (int i = 1; i < *argc; i++) {
		bool is_file = strcmp(argv[i], "--config") == 0;
		bool is_set = strcmp(argv[i], "--set") == 0;

		if ((is_file || is_set) && i + 1 < *argc) {
			int rc = is_file ? uiw_config_load_file(cfg, argv[i + 1], err, sizeof(err))
					 : uiw_config_parse_text(cfg, argv[i + 1], "--set", err,
								 sizeof(err));
			if (rc != 0)
				goto bad;
			i++;
			continue;
		}
		argv[out++] = argv[i];
	}
	*argc = out;
	argv[out] = NULL;
	uiw_log_level_set(cfg->log_level);
	return 0;
bad:
	fprintf(stderr, "configuration: %s\n", err);
	return -1;
}

int app_parse_endpoint(const char *s, uint32_t *ip, uint16_t *port)
{
	char buf[64];
	char *colon;
	struct in_addr a;

	snprintf(buf, sizeof(buf), "%s", s);
	colon = strrchr(buf, ':');
	if (colon == NULL)
		return -1;
	*colon = '\0';
	if (inet_pton(AF_INET, buf, &a) != 1 || atoi(colon + 1) <= 0 || atoi(colon + 1) > 65535)
		return -1;
	*ip = ntohl(a.s_addr);
	*port = (uint16_t)atoi(colon + 1);
	return 0;
}

int app_mode_option(struct app_mode *m, int opt, const char *arg)
{
	switch (opt) {
	case 'P':
		m->pair = true;
		return 1;
	case 'l':
		m->listen_port = (uint16_t)atoi(arg);
		return 1;
	case 'c':
		if (app_parse_endpoint(arg, &m->connect_ip, &m->connect_port) != 0) {
			fprintf(stderr, "--connect: expected IP:PORT, got %s\n", arg);
			return -1;
		}
		return 1;
	default:
		return 0;
	}
}

bool app_mode_valid(const struct app_mode *m)
{
	return !m->pair + !m->listen_port + !m->connect_ip == 2;
}

int app_next_option(int argc, char **argv, const struct option *longopts, struct app_mode *m)
{
	int opt;

	while ((opt = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		int handled = app_mode_option(m, opt, optarg);

		if (handled < 0)
			return APP_OPT_ERROR;
		if (!handled)
			return opt;
	}
	return -1;
}
