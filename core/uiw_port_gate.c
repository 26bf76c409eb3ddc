/* SPDX-License-Identifier: BSD-3-Clause */
/* rte_intr_instance_alloc() and its setters are experimental in DPDK 22.11. */
#define ALLOW_EXPERIMENTAL_API 1

#include "uiw_port_gate.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#include <rte_common.h>
#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_interrupts.h>
#include <rte_spinlock.h>

#include "uiw_lock.h"
#include "uiw_log.h"
#include "uiw_time.h"

enum gate_state {
	GATE_OPEN,      /* interrupt thread free; no bursts */
	GATE_CLOSING,   /* asked to come in; no bursts until it is held */
	GATE_CLOSED,    /* held: bursts allowed */
	GATE_DRAINING,  /* hold over: no new bursts, the thread goes when the last one ends */
	GATE_OPENING,   /* let go; no bursts until it has left the callback */
};

/*
 * The fast way in. Each bursting thread has a slot with its own flag (the first
 * GATE_SLOTS threads to burst, for the life of the process; later ones take the lock
 * every time, as before). While the gate is closed for a long hold (every gated link
 * up), a thread sets its flag, then looks at `fast`: if set, it bursts, with no lock and
 * no atomic read-modify-write (a locked instruction a burst was a third of an idle poll
 * pass, perf). The thread that ends the
 * hold clears `fast`, then has the kernel run a full barrier on every thread of the
 * process (membarrier(2), private expedited), so each thread either saw `fast` cleared
 * or has its flag visible, and waits for the flags. Without membarrier (an old kernel, a
 * seccomp filter, valgrind), every burst takes the lock.
 */
#define GATE_SLOTS 64
/* A thread with a slot looks at the clock (and steps the gate) every this many bursts. */
#define GATE_CLOCK_EVERY 16

struct gate_slot {
	int busy;                /* atomic: in a burst the gate let through */
	unsigned count;          /* bursts, this thread only */
} __rte_cache_aligned;

/* Initial-exec: in a shared library the general model asks the dynamic linker on each
 * access (these few octets fit the space kept for libraries opened later). */
static __thread __attribute__((tls_model("initial-exec"))) struct gate_slot *my_slot;
static __thread __attribute__((tls_model("initial-exec"))) bool my_slot_asked;

static struct {
	rte_spinlock_t lock;     /* everything but held, fast and the slots' flags */
	unsigned nports;
	uint16_t ports[UIW_GATE_MAX_PORTS];
	enum gate_state state;
	uint64_t since_ns;       /* when the state was entered */
	uint64_t hold_ns;        /* how long this hold lasts */
	unsigned bursting;       /* bursts in progress */
	uint64_t windows;
	struct rte_intr_handle *ih;
	int hold_fd;             /* registered with the EAL: a write brings the thread in */
	int go_fd;               /* a write lets the held thread go */
	int held;                /* atomic: the interrupt thread is inside hold() */
	int fast;                /* atomic: closed for a long hold; slots may burst unlocked */
	bool fast_ok;            /* membarrier registered */
	unsigned nslots;         /* atomic: slots handed out */
	unsigned links_touched;  /* links up when the shared buffers were last touched */
	struct gate_slot slots[GATE_SLOTS];
} gate = { .lock = RTE_SPINLOCK_INITIALIZER, .hold_fd = -1, .go_fd = -1 };

static bool slots_busy(void)
{
	unsigned n = __atomic_load_n(&gate.nslots, __ATOMIC_ACQUIRE);

	for (unsigned i = 0; i < n; i++)
		if (__atomic_load_n(&gate.slots[i].busy, __ATOMIC_ACQUIRE))
			return true;
	return false;
}

/* Ends unlocked bursts (lock held): after it, no slot starts one, and a slot's flag
 * shows every burst that started before. */
static void fast_off(void)
{
	if (!__atomic_load_n(&gate.fast, __ATOMIC_RELAXED))
		return;
	__atomic_store_n(&gate.fast, 0, __ATOMIC_SEQ_CST);
	if (uiw_membarrier() != 0) {
		/* Registered, so not expected; the flags can no longer be trusted: wait long
		 * enough for any store buffer, and stop handing out the fast way. */
		UIW_ERR("port gate: membarrier: %s; bursts take the lock from now on",
			strerror(errno));
		gate.fast_ok = false;
		rte_delay_us_block(100);
	}
}

static void drain_fd(int fd)
{
	eventfd_t v;

	if (eventfd_read(fd, &v) != 0 && errno != EAGAIN)
		UIW_DEBUG("port gate: eventfd read: %s", strerror(errno));
}

static void signal_fd(int fd)
{
	if (eventfd_write(fd, 1) != 0)
		UIW_WARN("port gate: eventfd write: %s", strerror(errno));
}

/* Runs on the EAL interrupt thread: stays until the data path says go. No other
 * interrupt callback (memif's control channel among them) runs meanwhile. */
static void hold(void *arg)
{
	struct pollfd p = { .fd = gate.go_fd, .events = POLLIN };

	(void)arg;
	drain_fd(gate.hold_fd);
	__atomic_store_n(&gate.held, 1, __ATOMIC_RELEASE);
	while (poll(&p, 1, -1) < 0 && errno == EINTR)
		;
	drain_fd(gate.go_fd);
	__atomic_store_n(&gate.held, 0, __ATOMIC_RELEASE);
}

static int gate_create(void)
{
	gate.hold_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	gate.go_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	gate.ih = rte_intr_instance_alloc(RTE_INTR_INSTANCE_F_PRIVATE);
	gate.state = GATE_OPEN;
	gate.held = 0;
	gate.fast_ok = uiw_membarrier_register() == 0;
	if (!gate.fast_ok)
		UIW_INFO("port gate: no membarrier (%s): every memif burst takes a lock",
			 strerror(errno));
	if (gate.hold_fd >= 0 && gate.go_fd >= 0 && gate.ih != NULL &&
	    rte_intr_fd_set(gate.ih, gate.hold_fd) == 0 &&
	    rte_intr_type_set(gate.ih, RTE_INTR_HANDLE_EXT) == 0 &&
	    rte_intr_callback_register(gate.ih, hold, NULL) == 0)
		return 0;
	UIW_ERR("port gate: cannot register with the EAL interrupt thread");
	rte_intr_instance_free(gate.ih);
	gate.ih = NULL;
	if (gate.hold_fd >= 0)
		close(gate.hold_fd);
	if (gate.go_fd >= 0)
		close(gate.go_fd);
	gate.hold_fd = gate.go_fd = -1;
	return -1;
}

int uiw_port_gate_attach(uint16_t port_id)
{
	int rc = 0;

	rte_spinlock_lock(&gate.lock);
	if (gate.nports == UIW_GATE_MAX_PORTS) {
		UIW_ERR("port gate: more than %d gated ports", UIW_GATE_MAX_PORTS);
		rc = -1;
	} else if (gate.ih == NULL) {
		rc = gate_create();   /* once per process: the gate stays registered */
	}
	if (rc == 0) {
		gate.ports[gate.nports++] = port_id;
		gate.links_touched = 0;   /* its buffers, once its link is up */
		/* Its link is down: bursts step the gate each time again, so that the hold
		 * ends on time and the interrupt thread can bring the link up. */
		fast_off();
	}
	rte_spinlock_unlock(&gate.lock);
	return rc;
}

/* With no port left: the interrupt thread is brought in and stays, so nothing it might
 * do (rebuild its set of descriptors after the ports' callbacks went) runs while the EAL
 * frees its memory in rte_eal_cleanup(). A port opened later opens the gate again.
 * One second at most. */
static void park(void)
{
	for (int i = 0; i < 1000; i++) {
		rte_spinlock_lock(&gate.lock);
		switch (gate.state) {
		case GATE_OPEN:
			gate.state = GATE_CLOSING;
			signal_fd(gate.hold_fd);
			break;
		case GATE_OPENING:
			if (!__atomic_load_n(&gate.held, __ATOMIC_ACQUIRE))
				gate.state = GATE_OPEN;
			break;
		case GATE_CLOSING:
			if (__atomic_load_n(&gate.held, __ATOMIC_ACQUIRE))
				gate.state = GATE_CLOSED;
			break;
		case GATE_DRAINING:
			gate.state = GATE_CLOSED;   /* still held: go was not given */
			break;
		case GATE_CLOSED:
			break;
		}
		bool done = gate.state == GATE_CLOSED;

		rte_spinlock_unlock(&gate.lock);
		if (done)
			return;
		usleep(1000);
	}
	UIW_WARN("port gate: the EAL interrupt thread did not come in");
}

void uiw_port_gate_detach(uint16_t port_id)
{
	bool last = false;

	rte_spinlock_lock(&gate.lock);
	for (unsigned i = 0; i < gate.nports; i++) {
		if (gate.ports[i] == port_id) {
			gate.ports[i] = gate.ports[--gate.nports];
			gate.links_touched = 0;
			last = gate.nports == 0;
			break;
		}
	}
	if (last)
		fast_off();   /* parked below; a port opened later steps the gate at once */
	rte_spinlock_unlock(&gate.lock);
	if (last)
		park();
}

/* Links of the gated ports: @return how many are up; *all when every one is. */
static unsigned links_up(bool *all)
{
	struct rte_eth_link link;
	unsigned up = 0;

	for (unsigned i = 0; i < gate.nports; i++) {
		memset(&link, 0, sizeof(link));
		if (rte_eth_link_get_nowait(gate.ports[i], &link) == 0 &&
		    link.link_status == RTE_ETH_LINK_UP)
			up++;
	}
	*all = up == gate.nports;
	return up;
}

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23   /* Linux 5.14 */
#endif

/* The kernel has no MADV_POPULATE_WRITE (before Linux 5.14): the writes fault the pages in. */
static bool populate_off;

void uiw_pages_touch(uintptr_t lo, uintptr_t hi, uintptr_t page)
{
	if (!__atomic_load_n(&populate_off, __ATOMIC_RELAXED) &&
	    madvise((void *)lo, hi - lo, MADV_POPULATE_WRITE) != 0 && errno == EINVAL)
		__atomic_store_n(&populate_off, true, __ATOMIC_RELAXED);
	for (uintptr_t a = lo; a < hi; a += page)
		__atomic_fetch_add((uint8_t *)a, 0, __ATOMIC_RELAXED);
}

/* Pages touched between two looks at the clock: 1 MiB of 4 KiB pages, 4 ms at 15 us each. */
#define TOUCH_STEP 256u

/* Pages mincore() is asked about at a time: 64 MiB of 4 KiB pages. */
#define TOUCH_CHUNK 16384u

uint64_t uiw_pages_touch_resident(uintptr_t lo, uint64_t len, uintptr_t page, uint64_t budget,
				  uint64_t end_ns)
{
	unsigned char *in = malloc(TOUCH_CHUNK);
	uint64_t done = 0;
	size_t left = len / page;

	if (in == NULL)
		return 0;
	while (left > 0 && done < budget && uiw_now_ns() < end_ns) {
		size_t n = left < TOUCH_CHUNK ? left : TOUCH_CHUNK;
		uintptr_t base = lo + (left - n) * page;

		left -= n;
		if (mincore((void *)base, n * page, in) != 0)
			break;
		for (size_t i = n; i > 0 && done < budget;) {
			size_t end;

			while (i > 0 && !(in[i - 1] & 1))
				i--;
			end = i;
			while (i > 0 && (in[i - 1] & 1) && end - i < TOUCH_STEP &&
			       done + (uint64_t)(end - i + 1) * page <= budget)
				i--;
			if (end == i || uiw_now_ns() >= end_ns)
				break;
			uiw_pages_touch(base + i * page, base + end * page, page);
			done += (uint64_t)(end - i) * page;
		}
	}
	free(in);
	return done;
}

/*
 * memif's rings and buffers are a memfd both processes map (named memif_region_N), and
 * each process met each page of it first in a burst: the PMD's copy into a slot, or the
 * receive reading one. A link's 1,024 slots each way, two to a page, are some thousand
 * pages, each first touch a page fault (10-15 us in this VM), and the first 40 ms of an
 * 8 B ping-pong ran at 25-30 us a round trip against 2 (docs/BENCHMARKS.md). So once a
 * link is up, with the interrupt thread held (it cannot unmap them meanwhile), every page
 * of every such mapping of this process is entered in its page tables (MADV_POPULATE_WRITE)
 * and then written once, by an atomic add of 0 to its first octet: the contents do not
 * change, whatever the peer writes meanwhile. Entered alone, the pages still cost the
 * first frames about as much here: under a hypervisor the first write to each page of a
 * guest can trap as well. Bursts wait for it (the gate's lock is held): about 10 ms for a
 * link's 4 MiB, once. A link that goes down and comes up again between two holds is not
 * touched again: its first frames pay as before. @return the octets so touched.
 */
static uint64_t touch_shared_buffers(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	uint64_t done = 0;
	long page = sysconf(_SC_PAGESIZE);

	if (f == NULL)
		return 0;
	if (page <= 0)
		page = 4096;
	while (fgets(line, sizeof(line), f) != NULL) {
		uintptr_t lo, hi;

		if (strstr(line, "/memfd:memif_region_") == NULL ||
		    sscanf(line, "%" SCNxPTR "-%" SCNxPTR, &lo, &hi) != 2 || hi <= lo ||
		    strstr(line, " rw-s ") == NULL)
			continue;
		uiw_pages_touch(lo, hi, (uintptr_t)page);
		done += hi - lo;
	}
	fclose(f);
	return done;
}

/* With the thread held and @p up links up: their buffers touched if a link came up since
 * the last time. The lock is held. */
static void links_came_up(unsigned up)
{
	uint64_t n, t0;

	if (up <= gate.links_touched) {
		gate.links_touched = up;   /* a link that went down is touched again when up */
		return;
	}
	gate.links_touched = up;
	t0 = uiw_now_ns();
	n = touch_shared_buffers();
	if (n > 0)
		UIW_INFO("port gate: memif's shared buffers touched ahead of the first frames "
			 "(%" PRIu64 " KiB in %.1f ms)", n >> 10, (double)(uiw_now_ns() - t0) / 1e6);
}

/* One step; the lock is held. @return true if bursts may go ahead. */
static bool step(uint64_t now_ns)
{
	bool all;

	switch (gate.state) {
	case GATE_CLOSED:
		if (now_ns - gate.since_ns < gate.hold_ns)
			return true;
		gate.state = GATE_DRAINING;
		fast_off();
		/* fall through */
	case GATE_DRAINING:
		if (gate.bursting > 0 || slots_busy())
			return false;   /* another thread is in a burst */
		/* Time for what the interrupt thread has waiting (a peer's disconnect). */
		__atomic_store_n(&gate.windows, gate.windows + 1, __ATOMIC_RELAXED);
		gate.state = GATE_OPENING;
		signal_fd(gate.go_fd);
		return false;
	case GATE_OPENING:
		if (__atomic_load_n(&gate.held, __ATOMIC_ACQUIRE))
			return false;
		gate.state = GATE_OPEN;
		gate.since_ns = now_ns;
		/* fall through */
	case GATE_OPEN:
		if (links_up(&all) == 0)
			return false;   /* nothing to burst on; the thread brings links up */
		gate.state = GATE_CLOSING;
		signal_fd(gate.hold_fd);
		return false;
	case GATE_CLOSING:
		if (!__atomic_load_n(&gate.held, __ATOMIC_ACQUIRE))
			return false;
		/* What the thread ran before it came in may have taken the links down. */
		unsigned up = links_up(&all);

		if (up == 0) {
			gate.links_touched = 0;
			gate.state = GATE_OPENING;
			signal_fd(gate.go_fd);
			return false;
		}
		links_came_up(up);
		gate.hold_ns = all ? UIW_GATE_HOLD_NS : UIW_GATE_SETUP_NS;
		gate.state = GATE_CLOSED;
		gate.since_ns = now_ns;
		/* A short hold (a link coming up) is stepped at every burst instead. */
		if (all && gate.fast_ok)
			__atomic_store_n(&gate.fast, 1, __ATOMIC_RELEASE);
		return true;
	}
	return false;
}

static bool enter_locked(struct gate_slot *slot)
{
	bool go;

	rte_spinlock_lock(&gate.lock);
	if (slot == NULL && !my_slot_asked) {
		my_slot_asked = true;
		if (gate.fast_ok && gate.nslots < GATE_SLOTS) {
			slot = my_slot = &gate.slots[gate.nslots];
			__atomic_store_n(&gate.nslots, gate.nslots + 1, __ATOMIC_RELEASE);
		}
	}
	go = step(uiw_now_ns());
	if (go) {
		if (slot != NULL)
			__atomic_store_n(&slot->busy, 1, __ATOMIC_RELAXED);   /* seen under the lock */
		else
			gate.bursting++;
	}
	rte_spinlock_unlock(&gate.lock);
	return go;
}

bool uiw_port_gate_enter(void)
{
	struct gate_slot *slot = my_slot;

	if (slot != NULL && ++slot->count % GATE_CLOCK_EVERY != 0) {
		__atomic_store_n(&slot->busy, 1, __ATOMIC_RELAXED);
		/* No fence here: fast_off()'s membarrier() puts one on this thread between
		 * the store and the load, whichever way they fall. */
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		/* Acquire: what the interrupt thread did before it was held (memif's rings
		 * mapped again) is seen by this burst, as through the lock before. */
		if (__atomic_load_n(&gate.fast, __ATOMIC_ACQUIRE))
			return true;
		__atomic_store_n(&slot->busy, 0, __ATOMIC_RELEASE);
	}
	return enter_locked(slot);
}

void uiw_port_gate_leave(void)
{
	struct gate_slot *slot = my_slot;

	if (slot != NULL) {
		__atomic_store_n(&slot->busy, 0, __ATOMIC_RELEASE);
		return;
	}
	rte_spinlock_lock(&gate.lock);
	gate.bursting--;
	rte_spinlock_unlock(&gate.lock);
}

bool uiw_port_gate_held(void)
{
	bool held;

	rte_spinlock_lock(&gate.lock);
	held = gate.state == GATE_CLOSED;
	rte_spinlock_unlock(&gate.lock);
	return held;
}

uint64_t uiw_port_gate_windows(void)
{
	return __atomic_load_n(&gate.windows, __ATOMIC_RELAXED);
}
