/* SPDX-License-Identifier: BSD-3-Clause */
#include "net_fixture.h"

#include <string.h>

struct fake_port fx_port;
struct uiw_net fx_net;

static void setup(uint32_t gateway, unsigned prefix_len)
{
	struct uiw_config cfg;

	uiw_config_defaults(&cfg);
	cfg.ip = IP_US;
	cfg.prefix_len = prefix_len;
	cfg.gateway = gateway;
	cfg.arp_retry_ms = 1000;
	cfg.arp_retries = 3;
	cfg.arp_reachable_ms = 30000;
	fake_port_init(&fx_port, MAC_US);
	uiw_net_init(&fx_net, &fx_port.port, &cfg);
}

void fx_setup(uint32_t gateway)
{
	setup(gateway, 24);
}

void fx_setup_default(void)
{
	fx_setup(0);
}

void fx_setup_wide(void)
{
	setup(0, 16);
}

void fx_teardown(void)
{
	uiw_net_fini(&fx_net);
	uiw_port_close(&fx_port.port);
	fake_port_clear(&fx_port);
}

void fx_input(struct rte_mbuf *m, uint64_t now)
{
	uiw_net_input(&fx_net, &m, 1, now);
	uiw_port_flush(&fx_port.port);
}

uint64_t fx_count(enum uiw_net_counter c)
{
	return fx_net.counters[c];
}

uint64_t fx_drops(void)
{
	uint64_t sum = 0;

	for (unsigned i = 0; i < UIW_NET_C__COUNT; i++)
		if (strstr(uiw_net_counter_desc[i].name, "drop") != NULL ||
		    i == UIW_NET_C_arp_conflict)
			sum += fx_net.counters[i];
	return sum;
}

void fx_assert_only(const uint64_t *before, enum uiw_net_counter c)
{
	for (unsigned i = 0; i < UIW_NET_C__COUNT; i++) {
		/* The receive counters of each layer move with everything; skip them. */
		if (i == UIW_NET_C_eth_rx || i == UIW_NET_C_arp_rx || i == UIW_NET_C_ip_rx ||
		    i == UIW_NET_C_icmp_rx)
			continue;
		if (i == (unsigned)c)
			ck_assert_msg(fx_net.counters[i] == before[i] + 1, "%s did not move by 1",
				      uiw_net_counter_desc[i].name);
		else
			ck_assert_msg(fx_net.counters[i] == before[i], "%s moved too",
				      uiw_net_counter_desc[i].name);
	}
}
