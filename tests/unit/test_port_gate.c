/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The control gate of memif ports: a memif server and client in this process, bursting
 * only while the EAL interrupt thread is held, and that thread's callbacks (memif's
 * control channel, or any other) running only in the gaps between bursts.
 *
 * Runs without fork (CK_FORK=no): a forked child has no EAL interrupt thread.
 */
#define ALLOW_EXPERIMENTAL_API 1

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_interrupts.h>

#include "check_common.h"
#include "uiw_port.h"
#include "uiw_port_gate.h"
#include "uiw_time.h"

static struct uiw_port srv, cli;
static bool srv_open, cli_open;
static char sock[64];

static void open_port(struct uiw_port *p, bool *is_open, const char *name, const char *role)
{
	struct uiw_config cfg;

	uiw_config_defaults(&cfg);
	cfg.mbufs = 511;
	snprintf(cfg.port, sizeof(cfg.port), "%s,role=%s,socket=%s,socket-abstract=no", name,
		 role, sock);
	ck_assert_int_eq(uiw_port_open(p, &cfg), 0);
	*is_open = true;
}

static void setup(void)
{
	snprintf(sock, sizeof(sock), "/tmp/uiw-gate-%d.sock", (int)getpid());
	open_port(&srv, &srv_open, "net_memif0", "server");
	open_port(&cli, &cli_open, "net_memif1", "client");
	ck_assert(srv.gated && cli.gated);
	/* The interrupt thread runs the memif handshake; nothing is held until a link is up. */
	ck_assert_int_eq(uiw_port_wait_link(&srv, 5000), 0);
	ck_assert_int_eq(uiw_port_wait_link(&cli, 5000), 0);
}

static void teardown(void)
{
	if (cli_open)
		uiw_port_close(&cli);
	if (srv_open)
		uiw_port_close(&srv);
	cli_open = srv_open = false;
	unlink(sock);
}

/* Sends one frame from @p from until @p to receives it (5 s at most). */
static void frame_across(struct uiw_port *from, struct uiw_port *to, uint8_t tag)
{
	struct rte_mbuf *rx[8];
	uint8_t f[64];
	uint64_t end = uiw_now_ns() + 5 * UIW_NS_PER_S;
	uint16_t got = 0;

	memset(f, tag, sizeof(f));
	uiw_port_tx(from, frame_copy(f, sizeof(f)));
	while (got == 0 && uiw_now_ns() < end) {
		uiw_port_flush(from);
		got = uiw_port_rx(to, rx, 8);
	}
	ck_assert_uint_eq(got, 1);
	ck_assert_uint_eq(from->tx_n, 0);
	ck_assert_uint_eq(rx[0]->pkt_len, sizeof(f));
	ck_assert_mem_eq(rte_pktmbuf_mtod(rx[0], void *), f, sizeof(f));
	rte_pktmbuf_free(rx[0]);
}

/* Frames go both ways, and a burst that went through went through a held thread. */
START_TEST(memif_frames_pass_while_the_control_thread_is_held)
{
	frame_across(&cli, &srv, 0xa5);
	ck_assert(uiw_port_gate_held());
	frame_across(&srv, &cli, 0x5a);
	ck_assert(uiw_port_gate_held());
}
END_TEST

/*
 * Once the links are up and the gate has held the interrupt thread, every page of memif's
 * shared rings and buffers (the memfd each side maps, memif_region_N) is in this process's
 * page tables: /proc/self/smaps gives each such mapping an Rss equal to its size. Without
 * the gate's touch, only the pages the bursts below touched would be (36 KiB of 4,132).
 * (That the touch also took the hypervisor's first-write trap is seen only in time:
 * docs/BENCHMARKS.md.)
 */
START_TEST(shared_buffers_are_touched_before_the_first_frames)
{
	FILE *f;
	char line[512];
	unsigned mappings = 0, full = 0;
	uint64_t size = 0;
	bool in_region = false;

	frame_across(&cli, &srv, 0x11);
	ck_assert(uiw_port_gate_held());
	f = fopen("/proc/self/smaps", "r");
	ck_assert_ptr_nonnull(f);
	while (fgets(line, sizeof(line), f) != NULL) {
		uint64_t kb, lo, hi;

		if (sscanf(line, "%" SCNx64 "-%" SCNx64 " ", &lo, &hi) == 2) {   /* a mapping's first line */
			in_region = strstr(line, "/memfd:memif_region_") != NULL;
			mappings += in_region;
		} else if (in_region && sscanf(line, "Size: %" SCNu64 " kB", &kb) == 1) {
			size = kb;
		} else if (in_region && sscanf(line, "Rss: %" SCNu64 " kB", &kb) == 1) {
			ck_assert_uint_gt(size, 64);   /* 1,024 slots each way at least */
			if (kb == size)
				full++;
			else
				fprintf(stderr, "memif region mapping: Rss %" PRIu64 " of %" PRIu64
					" kB\n", kb, size);
		}
	}
	fclose(f);
	ck_assert_uint_ge(mappings, 1);
	ck_assert_uint_eq(full, mappings);
}
END_TEST

/*
 * What a vhost-user side touches of its guest's memory before its first frames: the
 * resident pages only (some process used them), within the budget, and none once the
 * deadline is reached, so that a large guest cannot hold the port's bursts
 * (and a peer's ARP request) past it. A 16 MiB shared mapping, its upper quarter written.
 */
START_TEST(guest_pages_are_touched_until_the_deadline)
{
	const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	const uint64_t len = 16u << 20, used = len / 4;
	uint64_t far = uiw_now_ns() + 60 * UIW_NS_PER_S;
	uint8_t *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	ck_assert(m != MAP_FAILED);
	memset(m + len - used, 0x5a, used);
	/* Only the resident pages, all of them, and their contents unchanged. */
	ck_assert_uint_eq(uiw_pages_touch_resident((uintptr_t)m, len, page, UINT64_MAX, far), used);
	ck_assert_uint_eq(m[len - used], 0x5a);
	ck_assert_uint_eq(m[len - 1], 0x5a);
	/* No more than the budget. */
	ck_assert_uint_eq(uiw_pages_touch_resident((uintptr_t)m, len, page, 3 * page, far),
			  3 * page);
	/* A deadline already reached: nothing. */
	ck_assert_uint_eq(uiw_pages_touch_resident((uintptr_t)m, len, page, UINT64_MAX,
						   uiw_now_ns()), 0);
	ck_assert_int_eq(munmap(m, len), 0);
}
END_TEST

static int probe_runs;

static void probe(void *arg)
{
	eventfd_t v;

	eventfd_read(*(int *)arg, &v);
	__atomic_add_fetch(&probe_runs, 1, __ATOMIC_RELEASE);
}

/* An interrupt callback (probe()) on eventfd *fd, not run yet. */
static struct rte_intr_handle *probe_on(int *fd)
{
	struct rte_intr_handle *ih = rte_intr_instance_alloc(RTE_INTR_INSTANCE_F_PRIVATE);

	*fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	ck_assert_ptr_nonnull(ih);
	ck_assert_int_ge(*fd, 0);
	ck_assert_int_eq(rte_intr_fd_set(ih, *fd), 0);
	ck_assert_int_eq(rte_intr_type_set(ih, RTE_INTR_HANDLE_EXT), 0);
	ck_assert_int_eq(rte_intr_callback_register(ih, probe, fd), 0);
	__atomic_store_n(&probe_runs, 0, __ATOMIC_RELAXED);
	return ih;
}

static void probe_off(struct rte_intr_handle *ih, int *fd)
{
	while (rte_intr_callback_unregister(ih, probe, fd) == -EAGAIN)
		rte_delay_us_sleep(1000);
	rte_intr_instance_free(ih);
	close(*fd);
}

/* The server polls (nothing arrives) until the probe has run, 5 s at most: it runs once,
 * in a window opened since @p windows. */
static void poll_until_probe_ran(uint64_t windows)
{
	struct rte_mbuf *rx[8];
	uint64_t end = uiw_now_ns() + 5 * UIW_NS_PER_S;

	while (__atomic_load_n(&probe_runs, __ATOMIC_ACQUIRE) == 0 && uiw_now_ns() < end)
		ck_assert_uint_eq(uiw_port_rx(&srv, rx, 8), 0);
	ck_assert_int_eq(__atomic_load_n(&probe_runs, __ATOMIC_ACQUIRE), 1);
	ck_assert_uint_gt(uiw_port_gate_windows(), windows);
}

/* A callback due on the interrupt thread waits while bursts may run, however long, and
 * runs once the data path opens the gate. */
START_TEST(interrupt_callbacks_run_only_between_bursts)
{
	int fd;
	struct rte_intr_handle *ih = probe_on(&fd);
	uint64_t windows;

	frame_across(&cli, &srv, 1);
	ck_assert(uiw_port_gate_held());
	windows = uiw_port_gate_windows();
	eventfd_write(fd, 1);
	/* Only the data path opens the gate: twice the longest hold without a burst, and the
	 * callback still has not run. */
	rte_delay_us_sleep(2 * UIW_GATE_HOLD_NS / 1000);
	ck_assert_int_eq(__atomic_load_n(&probe_runs, __ATOMIC_ACQUIRE), 0);
	ck_assert(uiw_port_gate_held());
	/* Polling goes on: at the end of the hold the thread is let go and runs it. */
	poll_until_probe_ran(windows);
	/* And the gate closes again: frames still pass. */
	frame_across(&srv, &cli, 2);
	probe_off(ih, &fd);
}
END_TEST

static int burster_in, burster_go;

/* Another data-path thread: bursts until it takes the fast way in (it has a slot and the
 * gate is closed for a long hold), then stays inside a burst until told to leave. */
static void *burster(void *arg)
{
	(void)arg;
	for (int i = 0; i < 3 * 16; i++) {
		if (uiw_port_gate_enter())
			uiw_port_gate_leave();
	}
	while (!uiw_port_gate_enter())
		;
	__atomic_store_n(&burster_in, 1, __ATOMIC_RELEASE);
	while (!__atomic_load_n(&burster_go, __ATOMIC_ACQUIRE))
		rte_pause();
	uiw_port_gate_leave();
	return NULL;
}

/* The end of a hold waits for a burst that came in without the lock: while another thread
 * is inside one, the interrupt thread is not let go, however long this one polls. */
START_TEST(hold_ends_only_after_an_unlocked_burst_leaves)
{
	struct rte_mbuf *rx[8];
	int fd;
	struct rte_intr_handle *ih = probe_on(&fd);
	uint64_t windows, end;
	pthread_t th;

	frame_across(&cli, &srv, 1);
	/* Polled until the gate is closed for a long hold (both links up). */
	for (int i = 0; i < 64; i++)
		uiw_port_rx(&srv, rx, 8);
	ck_assert(uiw_port_gate_held());
	__atomic_store_n(&burster_in, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&burster_go, 0, __ATOMIC_RELAXED);
	ck_assert_int_eq(pthread_create(&th, NULL, burster, NULL), 0);
	while (!__atomic_load_n(&burster_in, __ATOMIC_ACQUIRE))
		rte_pause();
	windows = uiw_port_gate_windows();
	eventfd_write(fd, 1);
	/* Three holds' time of polling here: no window while the other burst lasts. */
	end = uiw_now_ns() + 3 * UIW_GATE_HOLD_NS;
	while (uiw_now_ns() < end)
		ck_assert_uint_eq(uiw_port_rx(&srv, rx, 8), 0);
	ck_assert_int_eq(__atomic_load_n(&probe_runs, __ATOMIC_ACQUIRE), 0);
	ck_assert_uint_eq(uiw_port_gate_windows(), windows);
	/* It leaves: the next steps let the thread go, and the callback runs. */
	__atomic_store_n(&burster_go, 1, __ATOMIC_RELEASE);
	ck_assert_int_eq(pthread_join(th, NULL), 0);
	poll_until_probe_ran(windows);
	frame_across(&srv, &cli, 2);
	probe_off(ih, &fd);
}
END_TEST

/* The client leaves (its disconnect message reaches the server's interrupt thread): the
 * server keeps polling and sending, sees its link go down in a gap, and drops what it
 * sends from then on. */
START_TEST(peer_leaving_is_handled_between_bursts)
{
	struct rte_mbuf *rx[8];
	struct rte_eth_link link;
	uint8_t f[64] = { 0 };
	uint64_t end;
	bool down = false;

	frame_across(&cli, &srv, 3);
	uiw_port_close(&cli);
	cli_open = false;
	end = uiw_now_ns() + 5 * UIW_NS_PER_S;
	while (!down && uiw_now_ns() < end) {
		uiw_port_tx(&srv, frame_copy(f, sizeof(f)));
		uiw_port_flush(&srv);
		ck_assert_uint_eq(uiw_port_rx(&srv, rx, 8), 0);
		memset(&link, 0, sizeof(link));
		down = rte_eth_link_get_nowait(srv.port_id, &link) == 0 &&
		       link.link_status == RTE_ETH_LINK_DOWN;
	}
	ck_assert(down);
	ck_assert_uint_ge(uiw_port_gate_windows(), 1);
	rte_delay_us_sleep(1000);   /* past the port's pause after a refused burst */
	/* Link down: nothing is held, nothing bursts, what is sent is dropped and counted. */
	uiw_port_tx(&srv, frame_copy(f, sizeof(f)));
	uiw_port_flush(&srv);
	ck_assert(!uiw_port_gate_held());
	ck_assert_uint_eq(srv.tx_n, 0);
	ck_assert_uint_gt(srv.counters[UIW_PORT_C_tx_drop_full], 0);
}
END_TEST

static Suite *gate_suite(void)
{
	Suite *s = suite_create("port_gate");
	TCase *tc = tcase_with_leak_check("port_gate", setup, teardown);

	tcase_add_test(tc, memif_frames_pass_while_the_control_thread_is_held);
	tcase_add_test(tc, shared_buffers_are_touched_before_the_first_frames);
	tcase_add_test(tc, interrupt_callbacks_run_only_between_bursts);
	tcase_add_test(tc, hold_ends_only_after_an_unlocked_burst_leaves);
	tcase_add_test(tc, peer_leaving_is_handled_between_bursts);
	tcase_add_test(tc, guest_pages_are_touched_until_the_deadline);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(gate_suite());
}
