/* SPDX-License-Identifier: BSD-3-Clause */
/* ARP (RFC 826, RFC 5227 announcements) and the neighbour cache. */
#include <errno.h>
#include <string.h>

#include "net_fixture.h"

#define MS 1000000ull

static uint8_t frame[128];


static size_t std_request(void)
{
	return build_arp(frame, MAC_BCAST, 1, MAC_PEER, IP_PEER, MAC_ZERO, IP_US);
}

/* The frame fx_port sent at @p i, copied out. */
static size_t sent(unsigned i, uint8_t *out)
{
	ck_assert_uint_lt(i, fx_port.nsent);
	return frame_bytes(fx_port.sent[i], out, 2048);
}

static void assert_request_for(unsigned i, uint32_t target, const uint8_t *eth_dst)
{
	uint8_t r[2048];

	ck_assert_uint_eq(sent(i, r), 42);
	ck_assert_mem_eq(r, eth_dst, 6);
	ck_assert_mem_eq(r + 6, MAC_US, 6);
	ck_assert_uint_eq(get16(r + 12), 0x0806);
	ck_assert_uint_eq(get16(r + 14), 1);
	ck_assert_uint_eq(get16(r + 16), 0x0800);
	ck_assert_uint_eq(r[18], 6);
	ck_assert_uint_eq(r[19], 4);
	ck_assert_uint_eq(get16(r + 20), 1);
	ck_assert_mem_eq(r + 22, MAC_US, 6);
	ck_assert_uint_eq(get32(r + 28), IP_US);
	ck_assert_uint_eq(get32(r + 38), target);
}

START_TEST(request_for_us_gets_exact_reply)
{
	uint8_t want[42], r[2048];

	fx_input(frame_copy(frame, std_request()), 0);
	ck_assert_uint_eq(fx_port.nsent, 1);
	build_arp(want, MAC_PEER, 2, MAC_US, IP_US, MAC_PEER, IP_PEER);
	ck_assert_uint_eq(sent(0, r), sizeof(want));
	ck_assert_mem_eq(r, want, sizeof(want));
	ck_assert_uint_eq(fx_count(UIW_NET_C_arp_request_answered), 1);
}
END_TEST

/* rdma_resolve_addr() waits on this: ARP for the next hop starts without a packet to
 * hold, one request is out at a time, and the answer makes it known. */
START_TEST(resolve_starts_arp_and_reports_when_known)
{
	size_t len;

	ck_assert_int_eq(uiw_net_resolve(&fx_net, IP_PEER, 0), 0);
	uiw_port_flush(&fx_port.port);
	ck_assert_uint_eq(fx_port.nsent, 1);                     /* who-has IP_PEER */
	ck_assert_uint_eq(get32(rte_pktmbuf_mtod(fx_port.sent[0], const uint8_t *) + 38), IP_PEER);
	ck_assert_int_eq(uiw_net_resolve(&fx_net, IP_PEER, 1000), 0);
	uiw_port_flush(&fx_port.port);
	ck_assert_uint_eq(fx_port.nsent, 1);                     /* no second request yet */
	ck_assert_uint_eq(fx_count(UIW_NET_C_arp_hold_drop), 0);
	len = build_arp(frame, MAC_US, 2, MAC_PEER, IP_PEER, MAC_US, IP_US);
	fx_input(frame_copy(frame, len), 2000);
	ck_assert_int_eq(uiw_net_resolve(&fx_net, IP_PEER, 3000), 1);
	/* Off the subnet with no gateway: no route. */
	ck_assert_int_eq(uiw_net_resolve(&fx_net, 0x0a636301u, 3000), -EHOSTUNREACH);
}
END_TEST

START_TEST(requester_learnt)
{
	const struct uiw_arp_entry *e;

	fx_input(frame_copy(frame, std_request()), 0);
	e = uiw_net_arp_lookup(&fx_net, IP_PEER);
	ck_assert_ptr_nonnull(e);
	ck_assert_uint_eq(e->state, UIW_ARP_REACHABLE);
	ck_assert_mem_eq(e->mac, MAC_PEER, 6);
}
END_TEST

START_TEST(padded_request_reply_is_42_bytes)
{
	size_t len = std_request();

	memset(frame + len, 0x5a, 60 - len);
	fx_input(frame_exact(frame, 60), 0);
	ck_assert_uint_eq(fx_port.nsent, 1);
	ck_assert_uint_eq(fx_port.sent[0]->pkt_len, 42);
}
END_TEST

START_TEST(request_for_other_target_not_answered_nor_learnt)
{
	size_t len = build_arp(frame, MAC_BCAST, 1, MAC_PEER, IP_PEER, MAC_ZERO, IP_OTHER);

	fx_input(frame_copy(frame, len), 0);
	ck_assert_uint_eq(fx_port.nsent, 0);
	ck_assert_ptr_null(uiw_net_arp_lookup(&fx_net, IP_PEER));
	ck_assert_uint_eq(fx_count(UIW_NET_C_arp_not_for_us), 1);
}
END_TEST

START_TEST(probe_answered_not_learnt)
{
	/* RFC 5227 §2.1.1: a probe has sender IP 0. */
	size_t len = build_arp(frame, MAC_BCAST, 1, MAC_PEER, 0, MAC_ZERO, IP_US);
	uint8_t r[2048];

	fx_input(frame_copy(frame, len), 0);
	ck_assert_uint_eq(fx_port.nsent, 1);
	sent(0, r);
	ck_assert_uint_eq(get16(r + 20), 2);
	ck_assert_mem_eq(r, MAC_PEER, 6);
	ck_assert_uint_eq(fx_net.arp_used, 0);
}
END_TEST

START_TEST(truncated_arp_dropped)
{
	size_t len = std_request();
	uint64_t before[UIW_NET_C__COUNT];

	memcpy(before, fx_net.counters, sizeof(before));
	fx_input(frame_exact(frame, (size_t)_i), 0);
	ck_assert_uint_eq(fx_port.nsent, 0);
	ck_assert_uint_lt((size_t)_i, len);
	fx_assert_only(before, UIW_NET_C_eth_drop_short);
}
END_TEST

struct bad_case {
	const char *what;
	size_t offset;   /* into the ARP header */
	uint8_t value;
	enum uiw_net_counter want;
};

static const struct bad_case bad_cases[] = {
	{ "htype 6 (IEEE 802)", 1, 6, UIW_NET_C_arp_drop_format },
	{ "ptype 0x86dd", 2, 0x86, UIW_NET_C_arp_drop_format },
	{ "hlen 8", 4, 8, UIW_NET_C_arp_drop_format },
	{ "plen 16", 5, 16, UIW_NET_C_arp_drop_format },
	{ "op 3 (RARP)", 7, 3, UIW_NET_C_arp_drop_op },
	{ "op 0", 7, 0, UIW_NET_C_arp_drop_op },
	{ "sender MAC multicast", 8, 0x01, UIW_NET_C_arp_drop_bad_sender },
	{ "sender IP loopback", 14, 127, UIW_NET_C_arp_drop_bad_sender },
	{ "sender IP multicast", 14, 224, UIW_NET_C_arp_drop_bad_sender },
};

START_TEST(bad_arp_dropped_with_its_counter)
{
	const struct bad_case *bc = &bad_cases[_i];
	uint64_t before[UIW_NET_C__COUNT];
	size_t len = std_request();

	frame[14 + bc->offset] = bc->value;
	memcpy(before, fx_net.counters, sizeof(before));
	fx_input(frame_exact(frame, len), 0);
	ck_assert_msg(fx_port.nsent == 0, "%s: answered", bc->what);
	ck_assert_msg(fx_net.arp_used == 0, "%s: learnt", bc->what);
	fx_assert_only(before, bc->want);
}
END_TEST

START_TEST(zero_sender_mac_dropped)
{
	size_t len = build_arp(frame, MAC_BCAST, 1, MAC_ZERO, IP_PEER, MAC_ZERO, IP_US);

	fx_input(frame_copy(frame, len), 0);
	ck_assert_uint_eq(fx_port.nsent, 0);
	ck_assert_uint_eq(fx_count(UIW_NET_C_arp_drop_bad_sender), 1);
}
END_TEST

START_TEST(claim_on_our_address_is_a_conflict)
{
	size_t len = build_arp(frame, MAC_BCAST, 1, MAC_OTHER, IP_US, MAC_ZERO, IP_US);

	fx_input(frame_copy(frame, len), 0);
	ck_assert_uint_eq(fx_port.nsent, 0);
	ck_assert_uint_eq(fx_count(UIW_NET_C_arp_conflict), 1);
}
END_TEST

START_TEST(gratuitous_arp_at_start)
{
	uiw_net_start(&fx_net, 0);
	uiw_port_flush(&fx_port.port);
	ck_assert_uint_eq(fx_port.nsent, 1);
	assert_request_for(0, IP_US, MAC_BCAST);
	ck_assert_uint_eq(fx_count(UIW_NET_C_arp_gratuitous_tx), 1);
}
END_TEST

START_TEST(unresolved_packet_held_then_sent_on_reply)
{
	uint8_t r[2048];
	size_t len;

	ck_assert_int_eq(uiw_net_ping(&fx_net, IP_PEER, 1, 1, 8, 0), 0);
	uiw_port_flush(&fx_port.port);
	ck_assert_uint_eq(fx_port.nsent, 1);
	assert_request_for(0, IP_PEER, MAC_BCAST);
	len = build_arp(frame, MAC_US, 2, MAC_PEER, IP_PEER, MAC_US, IP_US);
	fx_input(frame_copy(frame, len), 5 * MS);
	ck_assert_uint_eq(fx_port.nsent, 2);
	sent(1, r);
	ck_assert_mem_eq(r, MAC_PEER, 6);
	ck_assert_uint_eq(get16(r + 12), 0x0800);
	ck_assert_uint_eq(fx_count(UIW_NET_C_arp_reply_rx), 1);
}
END_TEST

START_TEST(hold_queue_bounded)
{
	for (int i = 0; i < UIW_ARP_HOLD; i++)
		ck_assert_int_eq(uiw_net_ping(&fx_net, IP_PEER, 1, (uint16_t)i, 8, 0), 0);
	ck_assert_int_eq(uiw_net_ping(&fx_net, IP_PEER, 1, 99, 8, 0), -ENOBUFS);
	ck_assert_uint_eq(fx_count(UIW_NET_C_arp_hold_drop), 1);
}
END_TEST

/* Packets wait for ARP up to UIW_ARP_HOLD a neighbour and UIW_ARP_HOLD_TOTAL in all; a
 * resolved neighbour's leave in the order they came, the others' stay held. */
START_TEST(hold_list_bounded_in_all_and_ordered)
{
	const unsigned nn = UIW_ARP_HOLD_TOTAL / UIW_ARP_HOLD;   /* neighbours that fill it */
	uint8_t r[2048];
	unsigned before;
	size_t len;

	for (unsigned k = 0; k < nn; k++)
		for (unsigned i = 0; i < UIW_ARP_HOLD; i++)
			ck_assert_int_eq(uiw_net_ping(&fx_net, IP_PEER + 10 + k, 1, (uint16_t)i, 8, 0), 0);
	ck_assert_int_eq(uiw_net_ping(&fx_net, IP_PEER + 10 + nn, 1, 0, 8, 0), -ENOBUFS);
	ck_assert_uint_eq(fx_count(UIW_NET_C_arp_hold_drop), 1);
	uiw_port_flush(&fx_port.port);
	before = fx_port.nsent;
	ck_assert_uint_eq(before, nn + 1);   /* the requests */
	len = build_arp(frame, MAC_US, 2, MAC_PEER, IP_PEER + 13, MAC_US, IP_US);
	fx_input(frame_copy(frame, len), 5 * MS);
	ck_assert_uint_eq(fx_port.nsent, before + UIW_ARP_HOLD);
	for (unsigned i = 0; i < UIW_ARP_HOLD; i++) {
		sent(before + i, r);
		ck_assert_mem_eq(r, MAC_PEER, 6);
		ck_assert_uint_eq(get16(r + 14 + 20 + 6), i);   /* the echo's sequence number */
	}
	/* Room again, for the neighbour that found none. */
	ck_assert_int_eq(uiw_net_ping(&fx_net, IP_PEER + 10 + nn, 1, 1, 8, 0), 0);
	ck_assert_uint_eq(fx_count(UIW_NET_C_arp_hold_drop), 1);
}
END_TEST

START_TEST(resolution_retries_then_gives_up)
{
	ck_assert_int_eq(uiw_net_ping(&fx_net, IP_PEER, 1, 1, 8, 0), 0);
	/* Requests at 0, 1 s, 2 s (three in all), failure at 3 s. */
	for (uint64_t t = 0; t <= 2900; t += 100)
		uiw_net_timer(&fx_net, t * MS);
	uiw_port_flush(&fx_port.port);
	ck_assert_uint_eq(fx_port.nsent, 3);
	for (unsigned i = 0; i < 3; i++)
		assert_request_for(i, IP_PEER, MAC_BCAST);
	ck_assert_ptr_nonnull(uiw_net_arp_lookup(&fx_net, IP_PEER));
	uiw_net_timer(&fx_net, 3000 * MS);
	ck_assert_ptr_null(uiw_net_arp_lookup(&fx_net, IP_PEER));
	ck_assert_uint_eq(fx_count(UIW_NET_C_arp_resolve_failed), 1);
	ck_assert_uint_eq(fx_count(UIW_NET_C_arp_hold_drop), 1);
}
END_TEST

START_TEST(stale_entry_refreshed_by_unicast_on_use)
{
	fx_input(frame_copy(frame, std_request()), 0);
	fake_port_clear(&fx_port);
	uiw_net_timer(&fx_net, 30001 * MS);
	ck_assert_uint_eq(uiw_net_arp_lookup(&fx_net, IP_PEER)->state, UIW_ARP_STALE);
	ck_assert_int_eq(uiw_net_ping(&fx_net, IP_PEER, 1, 1, 8, 30002 * MS), 0);
	uiw_port_flush(&fx_port.port);
	/* The packet goes out at once, with a unicast request to confirm. */
	ck_assert_uint_eq(fx_port.nsent, 2);
	assert_request_for(0, IP_PEER, MAC_PEER);
	ck_assert_uint_eq(uiw_net_arp_lookup(&fx_net, IP_PEER)->state, UIW_ARP_PROBE);
	/* No answer: after the retries the entry is gone. */
	for (uint64_t t = 30002; t <= 34000; t += 10)
		uiw_net_timer(&fx_net, t * MS);
	ck_assert_ptr_null(uiw_net_arp_lookup(&fx_net, IP_PEER));
}
END_TEST

START_TEST(unused_stale_entry_forgotten)
{
	fx_input(frame_copy(frame, std_request()), 0);
	uiw_net_timer(&fx_net, 30001 * MS);
	ck_assert_ptr_nonnull(uiw_net_arp_lookup(&fx_net, IP_PEER));
	uiw_net_timer(&fx_net, 60002 * MS);
	ck_assert_ptr_null(uiw_net_arp_lookup(&fx_net, IP_PEER));
}
END_TEST

/* A neighbour of 10.0.0.0/16 (fx_setup_wide) for @p i, distinct for i < 65000; never us,
 * nor 10.0.240.0/24 (confirmed_neighbours_never_evicted). */
static uint32_t other_ip(unsigned i)
{
	uint32_t ip = 0x0a000000u | (i * 7919u % 60000u + 2);

	return ip == IP_US ? 0x0a00ef01u : ip;
}

#define CONFIRMED_IP(i) (0x0a00f001u + (i))

/* The instance again, on a /16 (one fixture per binary: see check_common.c). */
static void go_wide(void)
{
	fx_teardown();
	fx_setup_wide();
}

/* Resolves @p ip: a ping goes out behind a request, the neighbour answers. */
static void confirm(uint32_t ip, const uint8_t *mac, uint64_t now)
{
	size_t len;

	ck_assert_int_eq(uiw_net_ping(&fx_net, ip, 1, 1, 8, now), 0);
	len = build_arp(frame, MAC_US, 2, mac, ip, MAC_US, IP_US);
	fx_input(frame_copy(frame, len), now);
	ck_assert_uint_eq(uiw_net_arp_lookup(&fx_net, ip)->state, UIW_ARP_REACHABLE);
	fake_port_clear(&fx_port);
}

/* Many destinations and many senders: the cache stays bounded, evicts unresolved and
 * stale entries, and every entry it keeps is still found (the linear-probing delete keeps
 * runs intact). */
START_TEST(cache_bounded_and_consistent_under_churn)
{
	unsigned n = 600;

	go_wide();
	for (unsigned i = 0; i < n; i++) {
		uint32_t ip = other_ip(i);
		uint8_t mac[6] = { 0x02, 1, 2, 3, (uint8_t)(i >> 8), (uint8_t)i };
		uint64_t now = (uint64_t)i * MS;
		size_t len;

		if (i % 3 == 0) {
			len = build_arp(frame, MAC_BCAST, 1, mac, ip, MAC_ZERO, IP_US);
			fx_input(frame_copy(frame, len), now);
		} else {
			uiw_net_ping(&fx_net, ip, 1, 1, 8, now);
			if (i % 3 == 1) {
				len = build_arp(frame, MAC_US, 2, mac, ip, MAC_US, IP_US);
				fx_input(frame_copy(frame, len), now);
			}
		}
		uiw_net_timer(&fx_net, now);
		fake_port_clear(&fx_port);
		ck_assert_uint_le(fx_net.arp_used, UIW_ARP_MAX_ENTRIES);
	}
	ck_assert_uint_gt(fx_count(UIW_NET_C_arp_evict), 0);
	/* Every entry in the table is reachable by lookup, and the count matches. */
	unsigned found = 0;
	for (unsigned s = 0; s < UIW_ARP_SLOTS; s++) {
		if (fx_net.arp[s].ip == 0)
			continue;
		found++;
		ck_assert_ptr_eq(uiw_net_arp_lookup(&fx_net, fx_net.arp[s].ip), &fx_net.arp[s]);
	}
	ck_assert_uint_eq(found, fx_net.arp_used);
	/* Let everything expire: the timer deletes them all without losing track. */
	uiw_net_timer(&fx_net, 200000 * MS);
	uiw_net_timer(&fx_net, 400000 * MS);
	ck_assert_uint_eq(fx_net.arp_used, 0);
}
END_TEST

/* Neighbours confirmed lately stay while a flood of new destinations (our answers to
 * spoofed SYNs) churns through the rest of the cache; when every entry is a confirmed one,
 * a packet to a new neighbour is dropped and counted rather than evicting one. */
START_TEST(confirmed_neighbours_never_evicted)
{
	go_wide();
	for (unsigned i = 0; i < 10; i++) {
		uint8_t mac[6] = { 0x02, 9, 9, 9, 0, (uint8_t)i };

		confirm(CONFIRMED_IP(i), mac, 0);
	}
	for (unsigned i = 0; i < 1000; i++) {
		ck_assert_int_eq(uiw_net_ping(&fx_net, other_ip(i), 1, 1, 8, MS), 0);
		uiw_port_flush(&fx_port.port);
		fake_port_clear(&fx_port);
	}
	ck_assert_uint_ge(fx_count(UIW_NET_C_arp_evict), 1000 - (UIW_ARP_MAX_ENTRIES - 10));
	for (unsigned i = 0; i < 10; i++) {
		const struct uiw_arp_entry *e = uiw_net_arp_lookup(&fx_net, CONFIRMED_IP(i));

		ck_assert_ptr_nonnull(e);
		ck_assert_uint_eq(e->state, UIW_ARP_REACHABLE);
		ck_assert_uint_eq(e->mac[5], i);
	}
	/* Confirm everything there is room for: then nothing can be evicted. */
	for (uint64_t t = 1000; t <= 10000; t += 1000) {   /* the unresolved ones give up */
		uiw_net_timer(&fx_net, t * MS);
		uiw_port_flush(&fx_port.port);
		fake_port_clear(&fx_port);
	}
	ck_assert_uint_eq(fx_net.arp_used, 10);
	for (unsigned i = 10; i < UIW_ARP_MAX_ENTRIES; i++) {
		uint8_t mac[6] = { 0x02, 9, 9, 9, 0, (uint8_t)i };

		confirm(CONFIRMED_IP(i), mac, 10000 * MS);
	}
	ck_assert_int_eq(uiw_net_ping(&fx_net, 0x0a00fe01u, 1, 1, 8, 10001 * MS), -ENOBUFS);
	ck_assert_uint_eq(fx_count(UIW_NET_C_arp_table_full), 1);
	ck_assert_uint_eq(fx_net.arp_used, UIW_ARP_MAX_ENTRIES);
	ck_assert_ptr_nonnull(uiw_net_arp_lookup(&fx_net, CONFIRMED_IP(0)));
}
END_TEST

/* Requests from ever new senders are all answered, but learnt only while the cache is
 * less than half full: they cannot fill it, nor evict anything. */
START_TEST(new_senders_learnt_up_to_half)
{
	go_wide();
	for (unsigned i = 0; i < 300; i++) {
		uint8_t mac[6] = { 0x02, 7, 7, 7, (uint8_t)(i >> 8), (uint8_t)i };
		size_t len = build_arp(frame, MAC_BCAST, 1, mac, other_ip(i), MAC_ZERO, IP_US);

		fx_input(frame_copy(frame, len), MS);
		fake_port_clear(&fx_port);
	}
	ck_assert_uint_eq(fx_count(UIW_NET_C_arp_request_answered), 300);
	ck_assert_uint_eq(fx_net.arp_used, UIW_ARP_LEARN_MAX);
	ck_assert_uint_eq(fx_count(UIW_NET_C_arp_not_learnt), 300 - UIW_ARP_LEARN_MAX);
	ck_assert_uint_eq(fx_count(UIW_NET_C_arp_evict), 0);
}
END_TEST

static Suite *arp_suite(void)
{
	Suite *s = suite_create("arp");
	TCase *tc = tcase_with_leak_check("arp", fx_setup_default, fx_teardown);

	tcase_add_test(tc, request_for_us_gets_exact_reply);
	tcase_add_test(tc, requester_learnt);
	tcase_add_test(tc, resolve_starts_arp_and_reports_when_known);
	tcase_add_test(tc, padded_request_reply_is_42_bytes);
	tcase_add_test(tc, request_for_other_target_not_answered_nor_learnt);
	tcase_add_test(tc, probe_answered_not_learnt);
	tcase_add_loop_test(tc, truncated_arp_dropped, 0, 42);
	tcase_add_loop_test(tc, bad_arp_dropped_with_its_counter, 0,
			    (int)(sizeof(bad_cases) / sizeof(bad_cases[0])));
	tcase_add_test(tc, zero_sender_mac_dropped);
	tcase_add_test(tc, claim_on_our_address_is_a_conflict);
	tcase_add_test(tc, gratuitous_arp_at_start);
	tcase_add_test(tc, unresolved_packet_held_then_sent_on_reply);
	tcase_add_test(tc, hold_queue_bounded);
	tcase_add_test(tc, hold_list_bounded_in_all_and_ordered);
	tcase_add_test(tc, resolution_retries_then_gives_up);
	tcase_add_test(tc, stale_entry_refreshed_by_unicast_on_use);
	tcase_add_test(tc, unused_stale_entry_forgotten);
	tcase_add_test(tc, cache_bounded_and_consistent_under_churn);
	tcase_add_test(tc, confirmed_neighbours_never_evicted);
	tcase_add_test(tc, new_senders_learnt_up_to_half);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(arp_suite());
}
