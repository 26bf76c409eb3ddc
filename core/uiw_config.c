/* SPDX-License-Identifier: BSD-3-Clause */
#include "uiw_config.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void uiw_config_defaults(struct uiw_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->hugepages = UIW_HUGE_AUTO;
	cfg->memory_mb = 256;
	cfg->log_level = UIW_LOG_INFO;
	cfg->mtu = 1500;
	cfg->mbufs = 8191;
	cfg->engines = 1;
	cfg->rx_desc = 1024;
	cfg->tx_desc = 1024;
	cfg->rx_burst = 32;
	cfg->arp_reachable_ms = 30000;
	cfg->arp_retry_ms = 1000;
	cfg->arp_retries = 3;
	cfg->tcp_max_conns = 16384;
	cfg->tcp_rcv_buf = 4u << 20;
	cfg->tcp_snd_buf = 4u << 20;
	cfg->tcp_notsent_max = 128u << 10;
	cfg->tcp_tx_runs = 1;
	cfg->tcp_rx_join = 8;
	cfg->tcp_sq_mbufs = 384;
	cfg->tcp_delack_us = 500;
	cfg->tcp_min_rto_ms = 200;
	cfg->tcp_init_rto_ms = 1000;
	cfg->tcp_max_rto_ms = 60000;
	cfg->tcp_syn_retries = 6;
	cfg->tcp_retries = 15;
	cfg->tcp_time_wait_ms = 60000;
	cfg->tcp_sack = 1;
	cfg->tcp_timestamps = 1;
	cfg->tcp_syncookies = 1;
	cfg->tcp_window_scaling = 1;
	cfg->tcp_ooo_max = 1024;
	cfg->mpa_rev = 2;
	cfg->mpa_crc = 1;
	cfg->mpa_markers = 0;
	cfg->mpa_markers_ok = 1;
	cfg->tx_zero_copy = 0;
	cfg->memif_zero_copy = 0;
	cfg->tso = 0;
	cfg->tso_slabs = 64;
	cfg->lro = 1;
	cfg->rx_buf_size = UIW_RX_BUF_AUTO;
	cfg->mpa_p2p = 0;
	cfg->mpa_rtr = 2 | 4;
	cfg->mpa_ird = 16;
	cfg->mpa_ord = 16;
	cfg->mpa_pd_max = 256;
	cfg->mpa_tx_runs = 1;
	cfg->rfc7306 = 1;
	cfg->send_imm = 1;
	cfg->recv_wait_ms = 1000;
	cfg->cq_spin_us = 20;
	cfg->progress_nice = 20;
	cfg->mpa_reply_timeout_ms = 10000;
	cfg->mpa_request_timeout_ms = 5000;
	cfg->mpa_initiator_delay_us = 10000;
	cfg->fault_seed = 1;
}

static int fail(char *err, size_t errlen, const char *key, const char *why, const char *value)
{
	snprintf(err, errlen, "key '%s': %s (got '%s')", key, why, value);
	return -1;
}

/* Whole-string unsigned decimal in [lo, hi]. */
static int parse_uint(const char *s, unsigned long lo, unsigned long hi, unsigned long *out)
{
	char *end;
	unsigned long v;

	if (!isdigit((unsigned char)s[0]))
		return -1;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno != 0 || *end != '\0' || v < lo || v > hi)
		return -1;
	*out = v;
	return 0;
}

static int parse_ipv4(const char *s, uint32_t *out)
{
	struct in_addr a;

	if (inet_pton(AF_INET, s, &a) != 1)
		return -1;
	*out = ntohl(a.s_addr);
	return 0;
}

static int parse_mac(const char *s, uint8_t mac[6])
{
	unsigned v[6];
	char tail;

	if (sscanf(s, "%2x:%2x:%2x:%2x:%2x:%2x%c", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5],
		   &tail) != 6)
		return -1;
	for (int i = 0; i < 6; i++)
		mac[i] = (uint8_t)v[i];
	return 0;
}

static int copy_str(char *dst, size_t dstlen, const char *s)
{
	size_t n = strlen(s);

	if (n >= dstlen)
		return -1;
	memcpy(dst, s, n + 1);
	return 0;
}

static int set_ip(struct uiw_config *cfg, const char *value)
{
	char buf[32];
	char *slash;
	unsigned long plen = 32;

	if (copy_str(buf, sizeof(buf), value) != 0)
		return -1;
	slash = strchr(buf, '/');
	if (slash != NULL) {
		*slash = '\0';
		if (parse_uint(slash + 1, 1, 32, &plen) != 0)
			return -1;
	}
	if (parse_ipv4(buf, &cfg->ip) != 0 || cfg->ip == 0)
		return -1;
	cfg->prefix_len = (uint8_t)plen;
	return 0;
}

/* Keys taking an unsigned number: name, offset, bounds. */
struct uint_key {
	const char *name;
	size_t offset;
	unsigned long lo, hi;
};

#define UINT_KEY(n, field, lo, hi) { n, offsetof(struct uiw_config, field), lo, hi }

static const struct uint_key uint_keys[] = {
	UINT_KEY("memory", memory_mb, 16, 65536),
	UINT_KEY("mbufs", mbufs, 255, 1u << 22),
	UINT_KEY("rx_desc", rx_desc, 64, 16384),
	UINT_KEY("tx_desc", tx_desc, 64, 16384),
	UINT_KEY("rx_burst", rx_burst, 1, 512),
	UINT_KEY("engines", engines, 1, UIW_MAX_ENGINES),
	UINT_KEY("arp_reachable_ms", arp_reachable_ms, 100, 3600000),
	UINT_KEY("arp_retry_ms", arp_retry_ms, 10, 60000),
	UINT_KEY("arp_retries", arp_retries, 1, 100),
	UINT_KEY("tcp_max_conns", tcp_max_conns, 1, 1u << 20),
	UINT_KEY("tcp_rcv_buf", tcp_rcv_buf, 4096, 1u << 30),
	UINT_KEY("tcp_snd_buf", tcp_snd_buf, 4096, 1u << 30),
	UINT_KEY("tcp_notsent_max", tcp_notsent_max, 0, 1u << 30),
	UINT_KEY("tcp_tx_runs", tcp_tx_runs, 0, 1),
	UINT_KEY("tcp_rx_join", tcp_rx_join, 0, 64),
	UINT_KEY("tcp_sq_mbufs", tcp_sq_mbufs, 96, 1u << 24),
	UINT_KEY("tcp_delack_us", tcp_delack_us, 0, 500000),
	UINT_KEY("tcp_min_rto_ms", tcp_min_rto_ms, 1, 60000),
	UINT_KEY("tcp_init_rto_ms", tcp_init_rto_ms, 1, 60000),
	UINT_KEY("tcp_max_rto_ms", tcp_max_rto_ms, 1, 600000),
	UINT_KEY("tcp_syn_retries", tcp_syn_retries, 0, 20),
	UINT_KEY("tcp_retries", tcp_retries, 1, 50),
	UINT_KEY("tcp_time_wait_ms", tcp_time_wait_ms, 0, 600000),
	UINT_KEY("tcp_sack", tcp_sack, 0, 1),
	UINT_KEY("tcp_timestamps", tcp_timestamps, 0, 1),
	UINT_KEY("tcp_syncookies", tcp_syncookies, 0, 1),
	UINT_KEY("tcp_window_scaling", tcp_window_scaling, 0, 1),
	UINT_KEY("tcp_ooo_max", tcp_ooo_max, 0, 65536),
	UINT_KEY("mpa_rev", mpa_rev, 1, 2),
	UINT_KEY("mpa_crc", mpa_crc, 0, 1),
	UINT_KEY("mpa_markers", mpa_markers, 0, 1),
	UINT_KEY("mpa_markers_ok", mpa_markers_ok, 0, 1),
	UINT_KEY("mpa_p2p", mpa_p2p, 0, 1),
	UINT_KEY("mpa_rtr", mpa_rtr, 1, 7),
	UINT_KEY("mpa_ird", mpa_ird, 0, 128),
	UINT_KEY("mpa_ord", mpa_ord, 0, 128),
	UINT_KEY("mpa_pd_max", mpa_pd_max, 0, 512),
	UINT_KEY("mpa_tx_runs", mpa_tx_runs, 0, 1),
	UINT_KEY("rfc7306", rfc7306, 0, 1),
	UINT_KEY("send_imm", send_imm, 0, 1),
	UINT_KEY("recv_wait_ms", recv_wait_ms, 0, 600000),
	UINT_KEY("cq_spin_us", cq_spin_us, 0, 1000000),
	UINT_KEY("progress_nice", progress_nice, 0, 20),
	UINT_KEY("tx_zero_copy", tx_zero_copy, 0, 2),
	UINT_KEY("memif_zero_copy", memif_zero_copy, 0, 1),
	UINT_KEY("tso", tso, 0, 1),
	UINT_KEY("tso_slabs", tso_slabs, 0, 65536),
	UINT_KEY("lro", lro, 0, 1),
	UINT_KEY("mpa_reply_timeout_ms", mpa_reply_timeout_ms, 10, 600000),
	UINT_KEY("mpa_request_timeout_ms", mpa_request_timeout_ms, 10, 600000),
	UINT_KEY("mpa_initiator_delay_us", mpa_initiator_delay_us, 0, 1000000),
	UINT_KEY("fault_seed", fault_seed, 0, 0xffffffffu),
};

int uiw_config_set(struct uiw_config *cfg, const char *key, const char *value,
		   char *err, size_t errlen)
{
	unsigned long v;

	for (size_t i = 0; i < sizeof(uint_keys) / sizeof(uint_keys[0]); i++) {
		const struct uint_key *k = &uint_keys[i];

		if (strcmp(key, k->name) != 0)
			continue;
		if (parse_uint(value, k->lo, k->hi, &v) != 0) {
			char why[64];

			snprintf(why, sizeof(why), "expects a number from %lu to %lu", k->lo, k->hi);
			return fail(err, errlen, key, why, value);
		}
		*(unsigned *)(void *)((char *)cfg + k->offset) = (unsigned)v;
		return 0;
	}
	if (strcmp(key, "eal") == 0) {
		if (copy_str(cfg->eal_args, sizeof(cfg->eal_args), value) != 0)
			return fail(err, errlen, key, "too long", value);
	} else if (strcmp(key, "lcores") == 0) {
		if (copy_str(cfg->lcores, sizeof(cfg->lcores), value) != 0 || strchr(value, ' '))
			return fail(err, errlen, key, "expects an EAL core list such as 0 or 0-1", value);
	} else if (strcmp(key, "hugepages") == 0) {
		if (strcmp(value, "auto") == 0)
			cfg->hugepages = UIW_HUGE_AUTO;
		else if (strcmp(value, "on") == 0)
			cfg->hugepages = UIW_HUGE_ON;
		else if (strcmp(value, "off") == 0)
			cfg->hugepages = UIW_HUGE_OFF;
		else
			return fail(err, errlen, key, "expects auto, on or off", value);
	} else if (strcmp(key, "rx_buf_size") == 0) {
		if (strcmp(value, "auto") == 0)
			cfg->rx_buf_size = UIW_RX_BUF_AUTO;
		else if (parse_uint(value, 0, 60000, &v) == 0)
			cfg->rx_buf_size = (unsigned)v;
		else
			return fail(err, errlen, key, "expects auto or a number from 0 to 60000", value);
	} else if (strcmp(key, "log") == 0) {
		if (uiw_log_level_parse(value, &cfg->log_level) != 0)
			return fail(err, errlen, key, "expects error, warn, info or debug", value);
	} else if (strcmp(key, "port") == 0) {
		if (value[0] == '\0' || strchr(value, ' ') ||
		    copy_str(cfg->port, sizeof(cfg->port), value) != 0)
			return fail(err, errlen, key, "expects DPDK devargs or a PCI address", value);
	} else if (strcmp(key, "pair_link") == 0) {
		if (strcmp(value, "ring") == 0)
			cfg->pair_vhost = 0;
		else if (strcmp(value, "vhost") == 0)
			cfg->pair_vhost = 1;
		else
			return fail(err, errlen, key, "expects ring or vhost", value);
	} else if (strcmp(key, "pcap") == 0) {
		if (copy_str(cfg->pcap, sizeof(cfg->pcap), value) != 0)
			return fail(err, errlen, key, "expects a file name (at most 255 octets)", value);
	} else if (strcmp(key, "fault_rx") == 0 || strcmp(key, "fault_tx") == 0) {
		char *dst = key[6] == 'r' ? cfg->fault_rx : cfg->fault_tx;

		if (copy_str(dst, sizeof(cfg->fault_rx), value) != 0)
			return fail(err, errlen, key, "too long", value);
	} else if (strcmp(key, "ip") == 0) {
		if (set_ip(cfg, value) != 0)
			return fail(err, errlen, key, "expects an IPv4 address with /prefix", value);
	} else if (strcmp(key, "gateway") == 0) {
		if (parse_ipv4(value, &cfg->gateway) != 0)
			return fail(err, errlen, key, "expects an IPv4 address", value);
	} else if (strcmp(key, "mtu") == 0) {
		if (parse_uint(value, 576, 9000, &v) != 0)
			return fail(err, errlen, key, "expects a number from 576 to 9000", value);
		cfg->mtu = (uint16_t)v;
	} else if (strcmp(key, "mac") == 0) {
		if (parse_mac(value, cfg->mac) != 0 || (cfg->mac[0] & 1))
			return fail(err, errlen, key, "expects a unicast MAC such as 02:00:00:00:00:01",
				    value);
		cfg->mac_set = true;
	} else {
		snprintf(err, errlen, "unknown key '%s'", key);
		return -1;
	}
	return 0;
}

static char *trim(char *s)
{
	char *end;

	while (isspace((unsigned char)*s))
		s++;
	end = s + strlen(s);
	while (end > s && isspace((unsigned char)end[-1]))
		*--end = '\0';
	return s;
}

static int parse_entry(struct uiw_config *cfg, char *item, const char *origin, unsigned line,
		       char *err, size_t errlen)
{
	char *hash = strchr(item, '#');
	char *eq, *key, *value;
	char why[256];

	if (hash != NULL)
		*hash = '\0';
	item = trim(item);
	if (*item == '\0')
		return 0;
	eq = strchr(item, '=');
	if (eq == NULL) {
		snprintf(err, errlen, "%s:%u: expected key = value, got '%s'", origin, line, item);
		return -1;
	}
	*eq = '\0';
	key = trim(item);
	value = trim(eq + 1);
	if (uiw_config_set(cfg, key, value, why, sizeof(why)) != 0) {
		snprintf(err, errlen, "%s:%u: %s", origin, line, why);
		return -1;
	}
	return 0;
}

int uiw_config_parse_text(struct uiw_config *cfg, const char *text, const char *origin,
			  char *err, size_t errlen)
{
	char *copy = strdup(text);
	char *item;
	unsigned line = 1;
	int rc = 0;

	if (copy == NULL) {
		snprintf(err, errlen, "%s: out of memory", origin);
		return -1;
	}
	/* Newlines and ';' both end an entry; a '#' comment runs to the end of its entry. */
	item = copy;
	for (char *p = copy;; p++) {
		char c = *p;

		if (c != '\0' && c != '\n' && c != ';')
			continue;
		*p = '\0';
		rc = parse_entry(cfg, item, origin, line, err, errlen);
		if (rc != 0 || c == '\0')
			break;
		if (c == '\n')
			line++;
		item = p + 1;
	}
	free(copy);
	return rc;
}

int uiw_config_load_file(struct uiw_config *cfg, const char *path, char *err, size_t errlen)
{
	FILE *f = fopen(path, "r");
	char *text;
	long len;
	int rc;

	if (f == NULL) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	if (fseek(f, 0, SEEK_END) != 0 || (len = ftell(f)) < 0 || len > (1 << 20) ||
	    fseek(f, 0, SEEK_SET) != 0) {
		snprintf(err, errlen, "%s: cannot read (or larger than 1 MiB)", path);
		fclose(f);
		return -1;
	}
	text = malloc((size_t)len + 1);
	if (text == NULL || fread(text, 1, (size_t)len, f) != (size_t)len) {
		snprintf(err, errlen, "%s: cannot read", path);
		free(text);
		fclose(f);
		return -1;
	}
	text[len] = '\0';
	fclose(f);
	rc = uiw_config_parse_text(cfg, text, path, err, errlen);
	free(text);
	return rc;
}

int uiw_config_load_env(struct uiw_config *cfg, char *err, size_t errlen)
{
	const char *path = getenv("UIWARP_CONF");
	const char *inline_text = getenv("UIWARP_CONFIG");

	if (path != NULL && path[0] != '\0' && uiw_config_load_file(cfg, path, err, errlen) != 0)
		return -1;
	if (inline_text != NULL &&
	    uiw_config_parse_text(cfg, inline_text, "$UIWARP_CONFIG", err, errlen) != 0)
		return -1;
	return 0;
}

int uiw_config_validate(const struct uiw_config *cfg, char *err, size_t errlen)
{
	if (cfg->port[0] == '\0') {
		snprintf(err, errlen, "key 'port' is not set");
		return -1;
	}
	if (cfg->ip == 0) {
		snprintf(err, errlen, "key 'ip' is not set");
		return -1;
	}
	if (cfg->gateway != 0 && cfg->prefix_len < 32) {
		uint32_t mask = ~0u << (32 - cfg->prefix_len);

		if ((cfg->gateway & mask) != (cfg->ip & mask)) {
			snprintf(err, errlen, "key 'gateway': not inside the subnet of 'ip'");
			return -1;
		}
	}
	return 0;
}
