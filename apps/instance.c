/* SPDX-License-Identifier: BSD-3-Clause */
#include "instance.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace.h"
#include "uiw_log.h"
#include "uiw_time.h"

int app_instance_open(struct app_instance *ai, const struct uiw_config *cfg, uint16_t port_id,
		      unsigned link_wait_ms)
{
	char err[256];
	int rc;

	memset(ai, 0, sizeof(*ai));
	ai->cfg = *cfg;
	rc = port_id == UINT16_MAX ? uiw_port_open(&ai->port, cfg)
				   : uiw_port_open_ethdev(&ai->port, port_id, cfg);
	if (rc != 0)
		return -1;
	if (uiw_fault_attach(&ai->port, &ai->fault, cfg, err, sizeof(err)) != 0) {
		fprintf(stderr, "configuration: %s\n", err);
		uiw_port_close(&ai->port);
		return -1;
	}
	if (uiw_port_wait_link(&ai->port, link_wait_ms) != 0)
		UIW_WARN("port %s: link still down after %u ms; going on", ai->port.name, link_wait_ms);
	uiw_net_init(&ai->net, &ai->port, cfg);
	if (uiw_tcp_create(&ai->tcp, &ai->net, cfg) != 0) {
		fprintf(stderr, "cannot create the TCP engine (tcp_max_conns %u)\n", cfg->tcp_max_conns);
		uiw_port_close(&ai->port);
		return -1;
	}
	uiw_net_start(&ai->net, uiw_now_ns());
	uiw_port_flush(&ai->port);
	return 0;
}

int app_open_pair(const struct uiw_config *cfg, struct app_instance *a, struct app_instance *b,
		  const char *name)
{
	struct uiw_config ca = *cfg, cb = *cfg;
	uint16_t ida, idb;

	ca.ip = APP_PAIR_IP_A;
	cb.ip = APP_PAIR_IP_B;
	ca.prefix_len = cb.prefix_len = 24;
	if (uiw_port_ringpair_create(name, &ida, &idb) != 0 ||
	    app_instance_open(a, &ca, ida, 0) != 0 || app_instance_open(b, &cb, idb, 0) != 0)
		return -1;
	return 0;
}

void app_instance_close(struct app_instance *ai)
{
	uiw_tcp_destroy(ai->tcp);
	ai->tcp = NULL;
	uiw_net_fini(&ai->net);
	uiw_port_close(&ai->port);
}

void app_instance_print_counters(struct app_instance *ai, const char *title)
{
	app_print_counters(title, &ai->port, &ai->net);
	if (ai->tcp != NULL)
		uiw_counters_print(stdout, "tcp", uiw_tcp_counter_desc, uiw_tcp_counters(ai->tcp),
				   UIW_TCP_C__COUNT, true);
	if (ai->port.fault != NULL)
		uiw_fault_print(stdout, &ai->fault);
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
