/* SPDX-License-Identifier: BSD-3-Clause */
/* Port objects: TX queueing and accounting, ring-pair ports through the real ethdev API. */
#include <pthread.h>
#include <stdio.h>
#include <sys/stat.h>
#include <string.h>
#include <stdlib.h>
#include <unistd.h>

#include <rte_ethdev.h>

#include "check_common.h"
#include "frames.h"
#include "uiw_capture.h"
#include "uiw_fault.h"
#include "uiw_lcore_id.h"
#include "uiw_mbuf.h"
#include "uiw_pci.h"
#include "uiw_port.h"
#include "uiw_time.h"

static struct fake_port fp;

static void teardown(void)
{
	if (fp.port.port_id == UIW_PORT_NONE) {
		uiw_port_close(&fp.port);
		fake_port_clear(&fp);
	}
}

static void *lcore_ids_here(void *arg)
{
	unsigned *ids = arg;

	ids[0] = rte_lcore_id();
	ids[1] = uiw_lcore_id_eal();
	return NULL;
}

/* rte_lcore_id() reads the stack's copy (core/uiw_lcore_id.h): the EAL's lcore in the
 * thread that started it, so mbufs come from that lcore's cache of a pool, and none in
 * any other thread, as the EAL says. */
START_TEST(lcore_id_copy_follows_the_eal)
{
	struct rte_mempool *p = rte_pktmbuf_pool_create("lcore_pool", 511, 32, 0,
							 RTE_MBUF_DEFAULT_BUF_SIZE, SOCKET_ID_ANY);
	struct rte_mempool_cache *cache;
	struct rte_mbuf *m;
	unsigned ids[2] = { 0, 0 }, before;
	pthread_t t;

	ck_assert_ptr_nonnull(p);
	ck_assert_uint_ne(uiw_lcore_id_eal(), LCORE_ID_ANY);
	ck_assert_uint_eq(rte_lcore_id(), uiw_lcore_id_eal());
	cache = rte_mempool_default_cache(p, rte_lcore_id());
	ck_assert_ptr_nonnull(cache);
	before = cache->len;
	m = rte_pktmbuf_alloc(p);
	ck_assert_ptr_nonnull(m);
	ck_assert_uint_ne(cache->len, before);   /* taken from the cache (filled first if empty) */
	rte_pktmbuf_free(m);

	ck_assert_int_eq(pthread_create(&t, NULL, lcore_ids_here, ids), 0);
	ck_assert_int_eq(pthread_join(t, NULL), 0);
	ck_assert_uint_eq(ids[1], LCORE_ID_ANY);
	ck_assert_uint_eq(ids[0], ids[1]);
	rte_mempool_free(p);
}
END_TEST

/* Runs uiw_lcore_id_borrow(*arg) for the stack's copy alone, then for the EAL's value too,
 * in a thread the EAL made no lcore of: its id before, in (the stack's copy and the EAL's
 * value) and after. */
static void *borrow_here(void *arg)
{
	unsigned *ids = arg;
	unsigned own;

	ids[1] = rte_lcore_id();
	own = uiw_lcore_id_borrow(ids[0], false);
	ids[2] = rte_lcore_id();
	ids[3] = uiw_lcore_id_eal();
	uiw_lcore_id_restore(own);
	ids[4] = rte_lcore_id();
	own = uiw_lcore_id_borrow(ids[0], true);
	ids[5] = rte_lcore_id();
	ids[6] = uiw_lcore_id_eal();
	uiw_lcore_id_restore(own);
	ids[7] = rte_lcore_id();
	ids[8] = uiw_lcore_id_eal();
	return NULL;
}

/* Spare lcore ids: from the highest down, none the EAL has a role for, each once until
 * reset; a thread without an lcore takes one for a while, one with an lcore keeps its own. */
START_TEST(spare_lcore_ids_are_ones_the_eal_left)
{
	unsigned first, second, ids[9] = { 0 }, own;
	pthread_t t;

	uiw_lcore_id_spares_reset();
	first = uiw_lcore_id_spare();
	second = uiw_lcore_id_spare();
	ck_assert_uint_eq(first, RTE_MAX_LCORE - 1);   /* the unit tests run the EAL on lcore 0 */
	ck_assert_uint_eq(second, RTE_MAX_LCORE - 2);
	for (unsigned i = 2; i < RTE_MAX_LCORE; i++) {
		unsigned id = uiw_lcore_id_spare();

		if (id == LCORE_ID_ANY) {
			/* Every id the EAL left is given; its own lcore was not. */
			ck_assert_uint_eq(i, RTE_MAX_LCORE - rte_lcore_count());
			break;
		}
		ck_assert_int_eq(rte_eal_lcore_role(id), ROLE_OFF);
		ck_assert_uint_ne(id, rte_get_main_lcore());
	}
	ck_assert_uint_eq(uiw_lcore_id_spare(), LCORE_ID_ANY);
	uiw_lcore_id_spares_reset();
	ck_assert_uint_eq(uiw_lcore_id_spare(), first);
	uiw_lcore_id_spares_reset();

	ids[0] = first;
	ck_assert_int_eq(pthread_create(&t, NULL, borrow_here, ids), 0);
	ck_assert_int_eq(pthread_join(t, NULL), 0);
	ck_assert_uint_eq(ids[1], LCORE_ID_ANY);
	ck_assert_uint_eq(ids[2], first);
	ck_assert_uint_eq(ids[3], LCORE_ID_ANY);   /* the copy only */
	ck_assert_uint_eq(ids[4], LCORE_ID_ANY);
	ck_assert_uint_eq(ids[5], first);
	ck_assert_uint_eq(ids[6], first);   /* DPDK's own code reads that one */
	ck_assert_uint_eq(ids[7], LCORE_ID_ANY);
	ck_assert_uint_eq(ids[8], LCORE_ID_ANY);

	own = uiw_lcore_id_borrow(first, true);   /* this thread is the EAL's: no borrow */
	ck_assert_uint_eq(rte_lcore_id(), rte_get_main_lcore());
	ck_assert_uint_eq(uiw_lcore_id_eal(), rte_get_main_lcore());
	uiw_lcore_id_restore(own);
	ck_assert_uint_eq(rte_lcore_id(), rte_get_main_lcore());
	ck_assert_uint_eq(uiw_lcore_id_eal(), rte_get_main_lcore());
}
END_TEST

/* Frames the PMD refuses (its ring is full) are kept in order and offered again. */
START_TEST(refused_frames_kept_for_the_next_flush)
{
	uint8_t f[60] = { 0 };

	fake_port_init(&fp, MAC_US);
	fp.accept = 3;
	for (int i = 0; i < 5; i++) {
		f[0] = (uint8_t)i;
		uiw_port_tx(&fp.port, frame_copy(f, sizeof(f)));
	}
	ck_assert_uint_eq(uiw_port_flush(&fp.port), 3);
	ck_assert_uint_eq(fp.nsent, 3);
	ck_assert_uint_eq(fp.port.counters[UIW_PORT_C_tx_bursts], 1);
	ck_assert_uint_eq(fp.port.counters[UIW_PORT_C_tx_packets], 3);
	ck_assert_uint_eq(fp.port.counters[UIW_PORT_C_tx_bytes], 180);
	ck_assert_uint_eq(fp.port.counters[UIW_PORT_C_tx_busy], 2);
	ck_assert_uint_eq(fp.port.counters[UIW_PORT_C_tx_drop_full], 0);
	ck_assert_uint_eq(fp.port.tx_n, 2);
	ck_assert_uint_eq(uiw_port_tx_room(&fp.port), UIW_PORT_TX_BUF - 2);
	ck_assert_uint_eq(uiw_port_flush(&fp.port), 2);
	ck_assert_uint_eq(fp.port.tx_n, 0);
	ck_assert_uint_eq(fp.port.counters[UIW_PORT_C_tx_bursts], 2);
	for (unsigned i = 0; i < 5; i++)
		ck_assert_uint_eq(rte_pktmbuf_mtod(fp.sent[i], uint8_t *)[0], i);
}
END_TEST

/* A frame longer than the MTU allows never reaches the PMD (one that cannot carry it would
 * refuse it for ever, holding the frames behind it): dropped and counted; one at the limit
 * goes. */
START_TEST(frames_over_the_mtu_dropped_not_retried)
{
	static uint8_t f[1515];

	fake_port_init(&fp, MAC_US);
	uiw_port_tx(&fp.port, frame_copy(f, 1515));
	uiw_port_tx(&fp.port, frame_copy(f, 1514));
	ck_assert_uint_eq(fp.port.counters[UIW_PORT_C_tx_drop_too_big], 1);
	ck_assert_uint_eq(uiw_port_flush(&fp.port), 1);
	ck_assert_uint_eq(fp.nsent, 1);
	ck_assert_uint_eq(fp.sent[0]->pkt_len, 1514);
	ck_assert_uint_eq(fp.port.counters[UIW_PORT_C_tx_busy], 0);
	fake_port_clear(&fp);
}
END_TEST

/* A PMD that takes nothing: the queue fills, has no room, then drops what comes. */
START_TEST(full_queue_with_a_stuck_pmd_drops_new_frames)
{
	uint8_t f[60] = { 0 };

	fake_port_init(&fp, MAC_US);
	fp.accept = 0;
	for (int i = 0; i < UIW_PORT_TX_BUF; i++)
		uiw_port_tx(&fp.port, frame_copy(f, sizeof(f)));
	ck_assert_uint_eq(uiw_port_tx_room(&fp.port), 0);
	uiw_port_tx(&fp.port, frame_copy(f, sizeof(f)));
	ck_assert_uint_eq(fp.port.counters[UIW_PORT_C_tx_drop_full], 1);
	ck_assert_uint_eq(fp.port.tx_n, UIW_PORT_TX_BUF);
	ck_assert_uint_eq(uiw_port_flush(&fp.port), 0);
	ck_assert_uint_eq(fp.port.counters[UIW_PORT_C_tx_bursts], 0);   /* it took none */
	fp.accept = UINT32_MAX;
	ck_assert_uint_eq(uiw_port_flush(&fp.port), UIW_PORT_TX_BUF);
	ck_assert_uint_eq(fp.nsent, UIW_PORT_TX_BUF);
}
END_TEST

/* Lent memory given back by the test below: how often its count fell to 0. */
static unsigned lent_freed;

static void lent_free(void *addr, void *opaque)
{
	(void)addr;
	(void)opaque;
	lent_freed++;
}

/*
 * uiw_port_drop_external(), as the owner of lent memory takes it back: of the frames the
 * PMD has not taken, the one on lent memory goes (tx_drop_lent, its lender told), while a
 * plain frame and a frame over a pool mbuf's buffer (uiw_mbuf_over(), holding that mbuf
 * though the layer that queued it has let it go) stay, and go out whole at the next flush;
 * freed, the frame over the mbuf frees it too (the leak check).
 */
START_TEST(only_frames_on_lent_memory_dropped_for_their_lender)
{
	static uint8_t lent[64];
	struct rte_mbuf_ext_shared_info info = { .free_cb = lent_free };
	uint8_t f[60], want[60], got[60];
	struct rte_mbuf *l, *h, *rec;

	for (unsigned i = 0; i < sizeof(f); i++)
		f[i] = (uint8_t)(i * 5 + 1);
	fake_port_init(&fp, MAC_US);
	fp.accept = 0;
	lent_freed = 0;
	rte_mbuf_ext_refcnt_set(&info, 1);
	uiw_port_tx(&fp.port, frame_copy(f, sizeof(f)));
	l = rte_pktmbuf_alloc(test_pool());
	ck_assert_ptr_nonnull(l);
	rte_pktmbuf_attach_extbuf(l, lent, RTE_BAD_IOVA, sizeof(lent), &info);
	l->data_len = l->pkt_len = sizeof(lent);
	uiw_port_tx(&fp.port, l);
	/* 20 octets of headers, then a record of 40 that its queue lets go of at once. */
	h = frame_copy(f, 20);
	rec = frame_copy(f + 20, 40);
	ck_assert(uiw_mbuf_over_ok(rec, h->data_len, 0));
	uiw_mbuf_over(h, rec);
	ck_assert(uiw_mbuf_is_over(h));
	ck_assert(!uiw_mbuf_has_lent(h));
	ck_assert(uiw_mbuf_has_lent(l));
	ck_assert(!uiw_mbuf_over_ok(rec, 20, 0));   /* a frame is over it */
	rte_pktmbuf_free(rec);
	uiw_port_tx(&fp.port, h);
	memcpy(want, f, sizeof(want));

	uiw_port_drop_external(&fp.port);
	ck_assert_uint_eq(fp.port.counters[UIW_PORT_C_tx_drop_lent], 1);
	ck_assert_uint_eq(lent_freed, 1);
	ck_assert_uint_eq(fp.port.tx_n, 2);
	fp.accept = UINT32_MAX;
	ck_assert_uint_eq(uiw_port_flush(&fp.port), 2);
	ck_assert_uint_eq(fp.nsent, 2);
	ck_assert_uint_eq(frame_bytes(fp.sent[1], got, sizeof(got)), sizeof(want));
	ck_assert_mem_eq(got, want, sizeof(want));
	fake_port_clear(&fp);
}
END_TEST

START_TEST(full_tx_buffer_flushes_itself)
{
	uint8_t f[60] = { 0 };

	fake_port_init(&fp, MAC_US);
	for (int i = 0; i < UIW_PORT_TX_BUF + 1; i++)
		uiw_port_tx(&fp.port, frame_copy(f, sizeof(f)));
	ck_assert_uint_eq(fp.nsent, UIW_PORT_TX_BUF);
	ck_assert_uint_eq(fp.port.tx_n, 1);
}
END_TEST

/* The fault wrapper sends a frame it held back (reorder_us) once its time has come, at the
 * next poll, even when nothing else is sent after it. */
START_TEST(fault_wrapper_releases_held_frames_on_time)
{
	static struct uiw_fault f;
	struct uiw_config cfg;
	struct rte_mbuf *in[4];
	uint8_t frame[60] = { 0 };
	char err[128];

	fake_port_init(&fp, MAC_US);
	uiw_config_defaults(&cfg);
	snprintf(cfg.fault_tx, sizeof(cfg.fault_tx), "reorder=100,reorder_us=1000");
	ck_assert_int_eq(uiw_fault_attach(&fp.port, &f, &cfg, err, sizeof(err)), 0);
	uiw_port_tx(&fp.port, frame_copy(frame, sizeof(frame)));
	uiw_port_flush(&fp.port);
	ck_assert_uint_eq(fp.nsent, 0);          /* held 1 ms */
	/* Released by polls alone; the deadline only ends a test that would hang (a loaded
	 * host may take the core away for milliseconds). */
	uint64_t end = uiw_now_ns() + 2 * UIW_NS_PER_S;

	while (fp.nsent == 0 && uiw_now_ns() < end)
		ck_assert_uint_eq(uiw_port_rx(&fp.port, in, 4), 0);   /* the poll, nothing sent */
	ck_assert_uint_eq(fp.nsent, 1);
	uiw_fault_detach(&fp.port);
}
END_TEST

/* The Toeplitz hash of TCP/IPv4 segments as NICs compute it: the verification values
 * published with Microsoft's RSS specification (key and 4-tuples below, "IPv4 with TCP"). */
START_TEST(rss_hash_matches_the_verification_values)
{
	static const uint8_t key[40] = {
		0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2, 0x41, 0x67, 0x25, 0x3d, 0x43, 0xa3,
		0x8f, 0xb0, 0xd0, 0xca, 0x2b, 0xcb, 0xae, 0x7b, 0x30, 0xb4, 0x77, 0xcb, 0x2d, 0xa3,
		0x80, 0x30, 0xf2, 0x0c, 0x6a, 0x42, 0xb7, 0x3b, 0xbe, 0xac, 0x01, 0xfa,
	};
	static const struct {
		uint32_t src;
		uint16_t sport;
		uint32_t dst;
		uint16_t dport;
		uint32_t hash;
	} v[] = {
		{ RTE_IPV4(66, 9, 149, 187), 2794, RTE_IPV4(161, 142, 100, 80), 1766, 0x51ccc178 },
		{ RTE_IPV4(199, 92, 111, 2), 14230, RTE_IPV4(65, 69, 140, 83), 4739, 0xc626b0ea },
		{ RTE_IPV4(24, 19, 198, 95), 12898, RTE_IPV4(12, 22, 207, 184), 38024, 0x5c2b394a },
		{ RTE_IPV4(38, 27, 205, 30), 48228, RTE_IPV4(209, 142, 163, 6), 2217, 0xafc7327f },
		{ RTE_IPV4(153, 39, 163, 191), 44251, RTE_IPV4(202, 188, 127, 2), 1303, 0x10e828a2 },
	};

	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
		ck_assert_uint_eq(uiw_port_rss_hash(key, v[i].src, v[i].sport, v[i].dst, v[i].dport),
				  v[i].hash);
}
END_TEST

START_TEST(ring_pair_carries_frames_both_ways)
{
	struct uiw_config cfg;
	struct uiw_port a, b;
	struct rte_mbuf *rx[4];
	uint16_t ida, idb;
	uint8_t f[100];

	for (size_t i = 0; i < sizeof(f); i++)
		f[i] = (uint8_t)i;
	uiw_config_defaults(&cfg);
	cfg.mbufs = 511;
	ck_assert_int_eq(uiw_port_ringpair_create("unit", 1, &ida, &idb), 0);
	ck_assert_int_eq(uiw_port_open_ethdev(&a, ida, &cfg), 0);
	ck_assert_int_eq(uiw_port_open_ethdev(&b, idb, &cfg), 0);
	/* Ring ports have no MAC of their own: each gets a random unicast one. */
	ck_assert(rte_is_unicast_ether_addr(&a.mac));
	ck_assert(!rte_is_same_ether_addr(&a.mac, &b.mac));
	uiw_port_tx(&a, frame_copy(f, sizeof(f)));
	ck_assert_uint_eq(uiw_port_flush(&a), 1);
	ck_assert_uint_eq(uiw_port_rx(&b, rx, 4), 1);
	ck_assert_uint_eq(rx[0]->pkt_len, sizeof(f));
	ck_assert_mem_eq(rte_pktmbuf_mtod(rx[0], void *), f, sizeof(f));
	rte_pktmbuf_free(rx[0]);
	uiw_port_tx(&b, frame_copy(f, 60));
	uiw_port_flush(&b);
	ck_assert_uint_eq(uiw_port_rx(&a, rx, 4), 1);
	rte_pktmbuf_free(rx[0]);
	ck_assert_uint_eq(uiw_port_rx(&a, rx, 4), 0);
	ck_assert_uint_eq(a.counters[UIW_PORT_C_tx_bytes], 100);
	ck_assert_uint_eq(b.counters[UIW_PORT_C_rx_bytes], 100);
	/* Bursts count only when frames moved: the empty poll of a above adds none. */
	ck_assert_uint_eq(a.counters[UIW_PORT_C_tx_bursts], 1);
	ck_assert_uint_eq(a.counters[UIW_PORT_C_rx_bursts], 1);
	ck_assert_uint_eq(b.counters[UIW_PORT_C_rx_bursts], 1);
	uiw_port_close(&a);
	uiw_port_close(&b);
}
END_TEST

/* The records of capture file @p path: their count, and the first octet of each frame. */
static unsigned pcap_records(const char *path, uint8_t *first, unsigned max, uint32_t *lens)
{
	FILE *f = fopen(path, "rb");
	uint32_t hdr[6], rec[4];
	uint8_t buf[2048];
	unsigned n = 0;

	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fread(hdr, sizeof(hdr), 1, f), 1);
	ck_assert_uint_eq(hdr[0], 0xa1b2c3d4u);
	ck_assert_uint_eq(hdr[5], 1);   /* Ethernet */
	while (fread(rec, sizeof(rec), 1, f) == 1) {
		ck_assert_uint_le(rec[2], sizeof(buf));
		ck_assert_uint_eq(rec[2], rec[3]);
		ck_assert_uint_eq(fread(buf, rec[2], 1, f), 1);
		if (n < max) {
			first[n] = buf[0];
			lens[n] = rec[2];
		}
		n++;
	}
	fclose(f);
	return n;
}

/* Key pcap: each frame the stack hands the PMD is written once, in order, even when the
 * PMD refuses some and they are offered again; the file is readable while it is open. */
START_TEST(capture_writes_each_sent_frame_once)
{
	char path[] = "/tmp/uiw-capture-XXXXXX";
	int fd = mkstemp(path);
	struct uiw_capture c;
	uint8_t f[60] = { 0 }, first[8];
	uint32_t lens[8];

	ck_assert_int_ge(fd, 0);
	close(fd);
	fake_port_init(&fp, MAC_US);
	uiw_capture_attach(&fp.port, &c, uiw_capture_open(path), true);
	ck_assert_ptr_nonnull(c.f);
	fp.accept = 3;
	for (int i = 0; i < 5; i++) {
		f[0] = (uint8_t)i;
		uiw_port_tx(&fp.port, frame_copy(f, sizeof(f) - (size_t)i));
	}
	ck_assert_uint_eq(uiw_port_flush(&fp.port), 3);
	ck_assert_uint_eq(uiw_port_flush(&fp.port), 2);
	ck_assert_uint_eq(pcap_records(path, first, 8, lens), 5);   /* while still open */
	for (unsigned i = 0; i < 5; i++) {
		ck_assert_uint_eq(first[i], i);
		ck_assert_uint_eq(lens[i], 60 - i);
	}
	uiw_capture_detach(&fp.port);
	ck_assert_ptr_null(fp.port.capture);
	ck_assert_uint_eq(c.frames, 5);
	unlink(path);
}
END_TEST

/* What the stack receives is written too, after the PMD gives it. */
START_TEST(capture_writes_received_frames)
{
	char path[] = "/tmp/uiw-capture-XXXXXX";
	int fd = mkstemp(path);
	struct uiw_config cfg;
	struct uiw_port a, b;
	struct uiw_capture c;
	struct rte_mbuf *rx[4];
	uint16_t ida, idb;
	uint8_t f[100] = { 0x42 }, first[4];
	uint32_t lens[4];

	ck_assert_int_ge(fd, 0);
	close(fd);
	uiw_config_defaults(&cfg);
	cfg.mbufs = 511;
	ck_assert_int_eq(uiw_port_ringpair_create("cap", 1, &ida, &idb), 0);
	ck_assert_int_eq(uiw_port_open_ethdev(&a, ida, &cfg), 0);
	ck_assert_int_eq(uiw_port_open_ethdev(&b, idb, &cfg), 0);
	uiw_capture_attach(&a, &c, uiw_capture_open(path), true);
	uiw_port_tx(&b, frame_copy(f, sizeof(f)));
	uiw_port_flush(&b);
	ck_assert_uint_eq(uiw_port_rx(&a, rx, 4), 1);
	rte_pktmbuf_free(rx[0]);
	ck_assert_uint_eq(pcap_records(path, first, 4, lens), 1);
	ck_assert_uint_eq(first[0], 0x42);
	ck_assert_uint_eq(lens[0], 100);
	uiw_port_close(&a);   /* detaches and closes the capture */
	uiw_port_close(&b);
	ck_assert_uint_eq(pcap_records(path, first, 4, lens), 1);
	unlink(path);
}
END_TEST


/* A link change is read at most every 100 ms, logged and counted once each way. */
START_TEST(link_changes_counted_once_each)
{
	struct uiw_config cfg;
	struct uiw_port a, b;
	uint16_t ida, idb;
	const uint64_t ms = 1000 * 1000;

	uiw_config_defaults(&cfg);
	cfg.mbufs = 511;
	ck_assert_int_eq(uiw_port_ringpair_create("lnk", 1, &ida, &idb), 0);
	ck_assert_int_eq(uiw_port_open_ethdev(&a, ida, &cfg), 0);
	ck_assert_int_eq(uiw_port_open_ethdev(&b, idb, &cfg), 0);
	uiw_port_link_check(&a, 1000 * ms);   /* the first reading is no change */
	ck_assert_uint_eq(a.counters[UIW_PORT_C_link_up], 0);
	ck_assert_int_eq(rte_eth_dev_set_link_down(ida), 0);
	uiw_port_link_check(&a, 1050 * ms);   /* too soon: not read */
	ck_assert_uint_eq(a.counters[UIW_PORT_C_link_down], 0);
	uiw_port_link_check(&a, 1100 * ms);
	ck_assert_uint_eq(a.counters[UIW_PORT_C_link_down], 1);
	uiw_port_link_check(&a, 1200 * ms);   /* still down: not again */
	ck_assert_uint_eq(a.counters[UIW_PORT_C_link_down], 1);
	ck_assert_int_eq(rte_eth_dev_set_link_up(ida), 0);
	uiw_port_link_check(&a, 1300 * ms);
	ck_assert_uint_eq(a.counters[UIW_PORT_C_link_up], 1);
	ck_assert_uint_eq(a.counters[UIW_PORT_C_link_down], 1);
	uiw_port_close(&a);
	uiw_port_close(&b);
}
END_TEST

/* A fake sysfs tree: @p dir/bus/pci/devices/0000:00:05.0 bound to @p driver ("" none). */
static void fake_nic(const char *dir, const char *driver)
{
	char path[512], cmd[1024];

	snprintf(cmd, sizeof(cmd), "rm -rf %s && mkdir -p %s/bus/pci/devices/0000:00:05.0/net/eth1 "
		 "%s/module", dir, dir, dir);
	ck_assert_int_eq(system(cmd), 0);
	if (driver[0] != '\0') {
		snprintf(path, sizeof(path), "%s/bus/pci/devices/0000:00:05.0/driver", dir);
		snprintf(cmd, sizeof(cmd), "../../../../bus/pci/drivers/%s", driver);
		ck_assert_int_eq(symlink(cmd, path), 0);
	}
}

static void fake_mkdir(const char *dir, const char *sub)
{
	char cmd[1024];

	snprintf(cmd, sizeof(cmd), "mkdir -p %s/%s", dir, sub);
	ck_assert_int_eq(system(cmd), 0);
}

/* Says what a PCI NIC lacks before the EAL would fail without saying why. */
START_TEST(pci_check_says_what_a_nic_lacks)
{
	char dir[] = "/tmp/uiw-sysfs-XXXXXX", why[512], cmd[600];
	const char *nic = "0000:00:05.0";

	ck_assert_ptr_nonnull(mkdtemp(dir));
	fake_nic(dir, "");
	ck_assert_int_eq(uiw_pci_check(dir, "0000:00:09.0", true, why, sizeof(why)), -1);
	ck_assert_ptr_nonnull(strstr(why, "no PCI device 0000:00:09.0"));
	ck_assert_int_eq(uiw_pci_check(dir, "00:05.0", true, why, sizeof(why)), -1);
	ck_assert_ptr_nonnull(strstr(why, "0000:00:05.0 has no driver"));

	fake_nic(dir, "e1000e");
	ck_assert_int_eq(uiw_pci_check(dir, "0000:00:05.0,rx_queue_size=512", true, why, sizeof(why)), -1);
	ck_assert_ptr_nonnull(strstr(why, "kernel driver 'e1000e' (interface eth1)"));

	fake_nic(dir, "mlx5_core");   /* bifurcated: fine as it is */
	ck_assert_int_eq(uiw_pci_check(dir, nic, false, why, sizeof(why)), 0);

	fake_nic(dir, "uio_pci_generic");
	ck_assert_int_eq(uiw_pci_check(dir, nic, false, why, sizeof(why)), -1);
	ck_assert_ptr_nonnull(strstr(why, "physical addresses"));
	ck_assert_ptr_nonnull(strstr(why, "hugepages"));
	ck_assert_int_eq(uiw_pci_check(dir, nic, true, why, sizeof(why)), 0);

	fake_nic(dir, "vfio-pci");
	ck_assert_int_eq(uiw_pci_check(dir, nic, true, why, sizeof(why)), -1);
	ck_assert_ptr_nonnull(strstr(why, "no IOMMU group"));
	fake_mkdir(dir, "module/vfio/parameters");
	snprintf(cmd, sizeof(cmd), "echo Y > %s/module/vfio/parameters/enable_unsafe_noiommu_mode", dir);
	ck_assert_int_eq(system(cmd), 0);
	ck_assert_int_eq(uiw_pci_check(dir, nic, false, why, sizeof(why)), 0);

	fake_nic(dir, "vfio-pci");
	fake_mkdir(dir, "bus/pci/devices/0000:00:05.0/iommu_group");
	ck_assert_int_eq(uiw_pci_check(dir, nic, false, why, sizeof(why)), -1);
	ck_assert_ptr_nonnull(strstr(why, "modprobe vfio_iommu_type1"));
	fake_mkdir(dir, "module/vfio_iommu_type1");
	ck_assert_int_eq(uiw_pci_check(dir, nic, false, why, sizeof(why)), 0);

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	ck_assert_int_eq(system(cmd), 0);
}
END_TEST

static Suite *port_suite(void)
{
	Suite *s = suite_create("port");
	TCase *tc = tcase_with_leak_check("port", NULL, teardown);

	tcase_add_test(tc, refused_frames_kept_for_the_next_flush);
	tcase_add_test(tc, lcore_id_copy_follows_the_eal);
	tcase_add_test(tc, spare_lcore_ids_are_ones_the_eal_left);
	tcase_add_test(tc, rss_hash_matches_the_verification_values);
	tcase_add_test(tc, full_queue_with_a_stuck_pmd_drops_new_frames);
	tcase_add_test(tc, frames_over_the_mtu_dropped_not_retried);
	tcase_add_test(tc, full_tx_buffer_flushes_itself);
	tcase_add_test(tc, only_frames_on_lent_memory_dropped_for_their_lender);
	tcase_add_test(tc, ring_pair_carries_frames_both_ways);
	tcase_add_test(tc, fault_wrapper_releases_held_frames_on_time);
	tcase_add_test(tc, capture_writes_each_sent_frame_once);
	tcase_add_test(tc, capture_writes_received_frames);
	tcase_add_test(tc, link_changes_counted_once_each);
	tcase_add_test(tc, pci_check_says_what_a_nic_lacks);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(port_suite());
}
