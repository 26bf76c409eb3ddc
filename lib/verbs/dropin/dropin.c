/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The drop-in libibverbs.so.1: the process's stack instance, brought up from the
 * environment at the first verbs or rdma_cm call, and the progress thread that serves
 * programs which block in rdma_get_cm_event() or ibv_get_cq_event().
 *
 * Configuration: $UIWARP_CONF names a configuration file, $UIWARP_CONFIG holds the same
 * keys inline ("port=...; ip=A.B.C.D/N; ..."), docs/CONFIG.md lists them. Without either,
 * the first call fails with ENODEV and says so on stderr.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "rdmap.h"
#include "uiw_config.h"
#include "uiw_counters.h"
#include "uiw_log.h"
#include "uiw_stack.h"
#include "uiw_time.h"
#include "verbs_internal.h"

#define NO_CONFIG_TEXT                                                                       \
	"uiwarp: no configuration: set UIWARP_CONF to a configuration file, or UIWARP_CONFIG " \
	"to 'port=DEVARGS; ip=A.B.C.D/N' (docs/DROPIN.md)"

/*
 * The progress thread leaves the stack to a program that polls it itself: after a call of
 * the program's within INLINE_QUIET_NS, the thread naps instead, each nap twice the last
 * up to NAP_MAX_US. A program that keeps polling so sees the thread wake about a hundred
 * times a second: each wake on a busy core takes it from a program thread (with naps of at
 * most 1 ms the program threads of a 64 KiB ib_write_bw pair spent 5-6% more of their time
 * waiting for a core than uiwarp-perf's, which has no such thread; with 8 ms, about as
 * long). Each pass the thread makes itself starts the doubling again from NAP_MIN_US. A
 * program thread about to block kicks the thread awake (uiw_progress_kick): the long naps
 * never delay a blocking program.
 *
 * A program that waits on memory (ib_write_lat: a post and a poll a round trip, then a
 * spin on the buffer the peer's Write fills) makes no call while it waits, and was served
 * INLINE_QUIET_NS after its last (about a millisecond a message, a core to spare or not).
 * A shorter quiet for all cost a 64 KiB ib_write_bw pair 7-14% on the two-core VM: its
 * program threads, off their cores for tens of microseconds at a time, looked quiet, and
 * the thread's passes kept the lock from ever being biased to them. So the thread tells
 * the two apart by the program thread's CPU clock: quiet for WAITER_QUIET_NS while it ran
 * for most of the time since the thread's last look, it waits on memory (or computes),
 * and the thread runs the stack for it; one that did not run lost its core, and gets
 * INLINE_QUIET_NS as before. Having served a program
 * that waits on memory, the thread looks every NAP_MIN_US until it has found the program
 * polling at WAITER_LOOKS_POLLED looks since it last found it waiting.
 */
#define INLINE_QUIET_NS (1000 * 1000ull)
#define WAITER_QUIET_NS (30 * 1000ull)
#define WAITER_LOOKS_POLLED 8
#define NAP_MIN_US 20
#define NAP_MAX_US 8000
/* Naps while the lock is not yet biased to a program that polls (uiw_bias_renew()). */
#define BIAS_RETRY_US 1000

/*
 * When the thread runs the stack itself for a program that polled within YIELD_WINDOW_NS
 * (one that waits on memory, or lost its core), a pass that finds nothing is followed by a
 * nap of NAP_MIN_US (kick-able), not a spin: with more spinning threads than cores (two
 * processes each waiting on memory as ib_write_lat does, on a two-core machine) the spin
 * held the core the program needs to see its bytes and post the next message until a
 * scheduler tick, and each message waited one (about 4 ms). The nap hands the core back,
 * and the thread's raised priority while it serves a program that waits on memory
 * (boost()) has the kernel give the core back to it as soon as the nap ends. Neither alone
 * was enough (measured: docs/BENCHMARKS.md). The thread says once on stderr when a pass
 * still came more than LATE_PASS_NS after the last, and counts each, so a slow run shows
 * why.
 */
#define LATE_PASS_NS (1000 * 1000ull)
#define YIELD_WINDOW_NS (20 * 1000 * 1000ull)

/*
 * A program blocked in a call (a CM event, a completion channel) while nothing happens on
 * the wire (a dead peer, a server waiting for clients) would have the thread spin for
 * ever. After IDLE_NS of passes that received no frame and rang no doorbell, the thread
 * naps between passes, each nap twice the last up to IDLE_NAP_MAX_US: an idle process
 * costs next to no CPU, and the first frame after a quiet spell waits at most that long
 * (timers, 1 ms or coarser, are unaffected). A pass that finds work ends the spell.
 */
#define IDLE_NS (10 * 1000 * 1000ull)
#define IDLE_NAP_MAX_US 1000

static struct {
	pthread_once_t once;
	int err;                 /* 0 once up; else the errno every call reports */
	struct uiw_config cfg;
	struct uiw_stack stack;
	pthread_t thread;
	int nap_fd;              /* eventfd: a kick ends the thread's nap */
	unsigned napping;        /* the thread is (about to be) in its nap */
	unsigned long late_passes;   /* passes that waited more than LATE_PASS_NS for a core */
	unsigned long lock_busy;     /* times the thread found a program thread in a call */
	unsigned long passes;        /* passes the thread made for the program */
	unsigned long kicks_wait;    /* program threads that left the stack to the thread to sleep */
	unsigned long kicks_nonblock; /* non-blocking calls that found nothing and kicked it */
	unsigned long naps;          /* naps while the program polled */
	unsigned long yields;        /* passes after which the thread gave its core back */
	unsigned long waiter_naps;   /* naps after an empty pass for a program waiting on memory */
	unsigned long waiter_looks;  /* looks at the CPU clock of a program quiet WAITER_QUIET_NS */
	unsigned long waiter_passes; /* passes for a program seen waiting on memory */
	unsigned long boosts;        /* times the thread raised its priority for such a program */
	unsigned long idle_naps;     /* naps after a quiet spell, the program blocked */
	const char *status_path;     /* $UIWARP_STATUS: rewritten every STATUS_NS */
	uint64_t status_at;          /* when it was last written */
	int stat_fd;                 /* the listening socket uiwarp-stat connects to, or -1 */
	uint64_t stat_at;            /* when it was last looked at */
	int stat_client;             /* an answer made under the lock, sent after it, or -1 */
	int stat_asked;              /* a reader accepted (without the lock), not answered yet */
	char *stat_text;
	size_t stat_len;
	char stat_path[108];
} inst = { .once = PTHREAD_ONCE_INIT, .nap_fd = -1, .stat_fd = -1, .stat_client = -1,
	    .stat_asked = -1 };

static void drain_at_exit(void);

/*
 * $UIWARP_STATUS=FILE: the progress thread rewrites FILE (a new file renamed over it) every
 * STATUS_NS with what the instance holds now (uiw_stack_print_gauges) and its non-zero
 * counters, so a running program's state can be read without stopping it.
 */
#define STATUS_NS (250 * 1000 * 1000ull)

/* The progress thread's and the lock's counters: how the program and the thread shared
 * the stack. */
static void print_progress(FILE *f)
{
	fprintf(f, "  progress.late_passes        %12lu  # progress thread passes that waited "
		"over 1 ms for a core\n", inst.late_passes);
	fprintf(f, "  progress.passes             %12lu  # passes the progress thread made\n"
		"  progress.naps               %12lu  # naps while the program polled\n"
		"  progress.lock_busy          %12lu  # naps while a program thread held the lock\n"
		"  progress.yields             %12lu  # passes after which the thread gave way\n"
		"  progress.waiter_looks       %12lu  # looks at the CPU time of a program quiet 30 us\n"
		"  progress.waiter_passes      %12lu  # passes for a program seen waiting on memory\n"
		"  progress.waiter_naps        %12lu  # naps after an empty pass for a program waiting on memory\n"
		"  progress.boosts             %12lu  # times the thread raised its priority for such a program\n"
		"  progress.idle_naps          %12lu  # naps after a quiet spell\n",
		inst.passes, inst.naps, inst.lock_busy, inst.yields, inst.waiter_looks,
		inst.waiter_passes, inst.waiter_naps, inst.boosts,
		inst.idle_naps);
	fprintf(f, "  progress.kicks_wait         %12lu  # blocking calls that left the stack to the thread while they slept\n"
		"  progress.kicks_nonblock     %12lu  # non-blocking calls that found nothing and woke the thread\n",
		inst.kicks_wait, inst.kicks_nonblock);
	fprintf(f, "  progress.cq_spin_hits       %12lu  # ibv_get_cq_event waits served by the caller's spin (cq_spin_us)\n"
		"  progress.cq_spin_misses     %12lu  # spins that ran out, the caller then slept\n"
		"  progress.cq_spin_cold       %12lu  # waits that slept at once, the channel's last spin having run out\n",
		uiw_cq_spin_hits, uiw_cq_spin_misses, uiw_cq_spin_cold);
	fprintf(f, "  progress.bias_renews        %12lu  # times the lock was biased to the polling thread\n"
		"  progress.bias_revokes       %12lu  # times another thread took the bias back\n"
		"  progress.bias_regrants      %12lu  # times the polling thread took the bias again itself\n"
		"  progress.bias_revoke_yields %12lu  # times a thread taking the bias back gave its core to the owner\n"
		"  progress.calls_biased       %12lu  # program calls that took the lock by the bias\n"
		"  progress.calls_locked       %12lu  # program calls that took the mutex\n",
		uiw_bias.renews, uiw_bias.revokes, uiw_bias.regrants, uiw_bias.revoke_yields,
		uiw_bias.fast, uiw_bias.slow);
}

/* What the instance holds now and what it did: gauges, non-zero counters, every QP. With
 * the lock held; the listing walks every engine's tables, so their threads wait meanwhile. */
static void status_text(FILE *f)
{
	fprintf(f, "pid %d\n", (int)getpid());
	if (__atomic_load_n(&uiw_engine_threads, __ATOMIC_ACQUIRE) > 0)
		uiw_engines_stop();
	uiw_stack_print_gauges(f, &inst.stack);
	uiw_stack_print_counters(f, &inst.stack);
	uiw_counters_print(f, "rdmap", uiw_rdmap_counter_desc, uiw_verbs_rdmap_totals(),
			   UIW_RDMAP_C__COUNT, true);
	uiw_verbs_print_qps(f);
	uiw_verbs_print_qp_errors(f);
	print_progress(f);
	void (*more)(FILE *) = __atomic_load_n(&uiw_verbs_status_more, __ATOMIC_ACQUIRE);

	if (more != NULL)
		more(f);
	if (uiw_api_engines > 0)
		uiw_engines_go();
}

static void status_write(uint64_t now)
{
	char tmp[4096];
	FILE *f;

	inst.status_at = now;
	if (snprintf(tmp, sizeof(tmp), "%s.%d.tmp", inst.status_path, (int)getpid()) >= (int)sizeof(tmp))
		return;
	f = fopen(tmp, "w");
	if (f == NULL)
		return;
	status_text(f);
	if (fclose(f) != 0 || rename(tmp, inst.status_path) != 0)
		unlink(tmp);
}

/*
 * uiwarp-stat PID: the instance listens on DIR/PID.sock (DIR: $UIWARP_STAT_DIR, else
 * /tmp/uiwarp-UID, made 0700), and the progress thread answers a connection, at most every
 * STAT_NS, with status_text() and closes it. $UIWARP_STAT=0: no socket.
 */
#define STAT_NS (100 * 1000 * 1000ull)

static void stat_listen(void)
{
	const char *dir = getenv("UIWARP_STAT_DIR"), *off = getenv("UIWARP_STAT");
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	char own[64];
	int fd;

	if (off != NULL && strcmp(off, "0") == 0)
		return;
	if (dir == NULL || *dir == '\0') {
		snprintf(own, sizeof(own), "/tmp/uiwarp-%u", (unsigned)getuid());
		dir = own;
	}
	if (mkdir(dir, 0700) != 0 && errno != EEXIST)
		return;
	if (snprintf(a.sun_path, sizeof(a.sun_path), "%s/%d.sock", dir, (int)getpid()) >=
	    (int)sizeof(a.sun_path))
		return;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return;
	unlink(a.sun_path);   /* a dead process of the same number left it */
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) != 0 || listen(fd, 4) != 0) {
		UIW_WARN("uiwarp-stat: cannot listen on %s: %s", a.sun_path, strerror(errno));
		close(fd);
		return;
	}
	inst.stat_fd = fd;
	snprintf(inst.stat_path, sizeof(inst.stat_path), "%s", a.sun_path);
}

/* A slow reader gets what it has read by then: the progress thread goes back to work. */
#define STAT_SEND_NS (50 * 1000 * 1000ull)

/* Without the lock, every STAT_NS: a uiwarp-stat that connected is accepted. The lock
 * (and with it the bias, uiw_big_lock_try()) is taken only when one did. */
static void stat_accept(uint64_t now)
{
	if (inst.stat_fd < 0 || inst.stat_client >= 0 || inst.stat_asked >= 0 ||
	    now - inst.stat_at < STAT_NS)
		return;
	inst.stat_at = now;
	inst.stat_asked = accept4(inst.stat_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
}

/* With the lock held: the answer for the reader stat_accept() took; stat_send() sends it
 * once the lock is given back. */
static void stat_serve(uint64_t now)
{
	FILE *f;
	int c;

	stat_accept(now);
	if ((c = inst.stat_asked) < 0)
		return;
	inst.stat_asked = -1;
	f = open_memstream(&inst.stat_text, &inst.stat_len);
	if (f == NULL) {
		close(c);
		return;
	}
	status_text(f);
	fclose(f);
	inst.stat_client = c;
}

/* Without the lock: sends the answer stat_serve() wrote, for at most STAT_SEND_NS. */
static void stat_send(void)
{
	uint64_t end = uiw_now_ns() + STAT_SEND_NS;

	if (inst.stat_client < 0)
		return;
	for (size_t off = 0; off < inst.stat_len && uiw_now_ns() < end;) {
		struct pollfd p = { .fd = inst.stat_client, .events = POLLOUT };
		/* A reader that went away must not kill the program (SIGPIPE). */
		ssize_t w = send(inst.stat_client, inst.stat_text + off, inst.stat_len - off,
				 MSG_NOSIGNAL | MSG_DONTWAIT);

		if (w > 0)
			off += (size_t)w;
		else if (w < 0 && errno == EAGAIN)
			poll(&p, 1, 5);
		else
			break;
	}
	free(inst.stat_text);
	inst.stat_text = NULL;
	inst.stat_len = 0;
	close(inst.stat_client);
	inst.stat_client = -1;
}

/* With the lock held: the status file, when it is due. */
static void status_due(uint64_t now)
{
	if (inst.status_path != NULL && now - inst.status_at >= STATUS_NS)
		status_write(now);
	stat_serve(now);
}

/* Whether status_due() has something to do (a reader is accepted here, without the lock):
 * then the thread takes the lock for it. */
static bool status_wanted(uint64_t now)
{
	stat_accept(now);
	return (inst.status_path != NULL && now - inst.status_at >= STATUS_NS) ||
	       inst.stat_asked >= 0;
}
static void *progress_main(void *arg);

static void bring_up_here(void)
{
	char err[512] = "";

	uiw_threaded = true;
	uiw_progress_thread = true;
	uiw_bias_init();
	uiw_config_defaults(&inst.cfg);
	/* Programs may have the passive side send first (ib_write_lat's server does): MPA
	 * peer-to-peer mode, so the initiator's RTR opens the way (RFC 6581 §4). The
	 * configuration may still say mpa_p2p=0. */
	inst.cfg.mpa_p2p = 1;
	if (getenv("UIWARP_CONF") == NULL && getenv("UIWARP_CONFIG") == NULL) {
		fprintf(stderr, "%s\n", NO_CONFIG_TEXT);
		inst.err = ENODEV;
		return;
	}
	if (uiw_config_load_env(&inst.cfg, err, sizeof(err)) != 0 ||
	    uiw_config_validate(&inst.cfg, err, sizeof(err)) != 0) {
		fprintf(stderr, "uiwarp: configuration: %s\n", err);
		inst.err = EINVAL;
		return;
	}
	uiw_log_level_set(inst.cfg.log_level);
	/* No wait for the link: a memif or vhost server's link comes up only when its peer
	 * process connects, and a listener must be listening by then (TCP retransmits what
	 * leaves while the link is down). */
	const struct uiw_stack_opts o = { .top = UIW_STACK_MPA, .port_id = UIW_STACK_PORT_CONFIG,
					  .engines = true };
	int rc = uiw_eal_init(&inst.cfg, "uiwarp") != 0 ? -ENODEV
		 : uiw_stack_open(&inst.stack, &inst.cfg, &o, err, sizeof(err));

	if (rc == 0 && uiw_verbs_add_device(&inst.stack) != 0) {
		snprintf(err, sizeof(err), "cannot make the instance a device");
		rc = -ENOMEM;
	}
	if (rc != 0) {
		if (rc == -ENODEV && err[0] == '\0')
			snprintf(err, sizeof(err), "cannot start DPDK's EAL (see the messages above)");
		fprintf(stderr, "uiwarp: %s%s\n", rc == -EINVAL ? "configuration: " : "", err);
		inst.err = -rc;
		return;
	}
	/* Engines 1..N-1 run on threads of their own; engine 0 is the progress thread's. */
	if (uiw_verbs_start_engine_threads() != 0) {
		fprintf(stderr, "uiwarp: cannot start the engine threads\n");
		inst.err = EAGAIN;
		return;
	}
	atexit(drain_at_exit);
	inst.status_path = getenv("UIWARP_STATUS");
	if (inst.status_path != NULL && inst.status_path[0] == '\0')
		inst.status_path = NULL;
	stat_listen();
	/* Programs that wait on memory (ib_write_lat polls the bytes a Write brings) make no
	 * call that could drive the stack: the thread runs from the start. */
	inst.nap_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (inst.nap_fd < 0 || uiw_thread_start(&inst.thread, progress_main, NULL) != 0) {
		fprintf(stderr, "uiwarp: cannot start the progress thread\n");
		inst.err = EAGAIN;
		return;
	}
	pthread_detach(inst.thread);
}

/*
 * Every thread the instance starts (DPDK's interrupt and control threads, the vhost-user
 * driver's, the engine threads, the progress thread) starts with every signal blocked: a
 * signal sent to the process then reaches a program thread, never runs the program's
 * handler in one of these, and one that ends a blocked call (EINTR, ibv_get_cq_event()'s
 * spin) reaches the thread in that call.
 */
static void bring_up(void)
{
	sigset_t all, old;

	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	bring_up_here();
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/*
 * At exit: the stack lives in this process, so what it still has to send (the last
 * messages and the FIN of a disconnect the program made just before returning, or of a
 * connection it left open, which is closed now as the kernel closes a socket) goes now or
 * never. Up to EXIT_DRAIN_MS of passes, until every connection has had its octets and FIN
 * acknowledged and the port has taken every frame (the ACK of a peer's FIN, which the peer
 * waits for, among them); the connections still owed are reset, so their peers learn at
 * once that the rest will never come (else a peer waiting for a last message waits for ever).
 */
#define EXIT_DRAIN_MS 2000

/* $UIWARP_STATS set (and not "0"): the instance's non-zero counters on stderr at exit,
 * for the program that ran without a word of why it was slow or lost its connection. */
static void print_counters(void)
{
	const char *v = getenv("UIWARP_STATS");

	if (v == NULL || *v == '\0' || strcmp(v, "0") == 0)
		return;
	fprintf(stderr, "uiwarp counters of pid %d (non-zero):\n", (int)getpid());
	uiw_stack_print_counters(stderr, &inst.stack);
	uiw_counters_print(stderr, "rdmap", uiw_rdmap_counter_desc, uiw_verbs_rdmap_totals(),
			   UIW_RDMAP_C__COUNT, true);
	uiw_verbs_print_qp_errors(stderr);
	uiw_verbs_print_qps(stderr);
	uiw_verbs_print_engine_threads(stderr);
	print_progress(stderr);
}

static void drain_at_exit(void)
{
	uint64_t end = uiw_now_ns() + EXIT_DRAIN_MS * UIW_NS_PER_MS;
	unsigned reset;

	uiw_big_lock_hold();   /* the mutex, the bias taken back: held for good */
	uiw_verbs_stop_engine_threads();   /* the passes below run every engine */
	uiw_stack_exit_step(&inst.stack, UIW_STACK_EXIT_CLOSE);
	do   /* at least one pass: a reset an abort just queued goes out too */
		uiw_verbs_progress_locked();
	while (uiw_stack_exit_step(&inst.stack, UIW_STACK_EXIT_OWED) > 0 && uiw_now_ns() < end);
	uiw_stack_flush(&inst.stack);
	print_counters();
	reset = uiw_stack_exit_step(&inst.stack, UIW_STACK_EXIT_RESET);
	uiw_stack_flush(&inst.stack);
	if (reset > 0)
		UIW_WARN("exit: %u connection(s) reset: their peers had not acknowledged all they "
			 "were sent %u ms after the program ended", reset, EXIT_DRAIN_MS);
	/* The port is not closed (the exit takes the process's memory away): a memif
	 * server's socket file goes now, or the next server would find it in use. */
	uiw_port_forget_socket(&inst.cfg);
	if (inst.stat_fd >= 0)
		unlink(inst.stat_path);
	/* The lock stays held: the progress thread (which only tries it, and naps while it is
	 * taken) and any thread still in a call keep off the stack while the exit tears down
	 * what it uses. */
}

int uiw_dropin_ensure(void)
{
	pthread_once(&inst.once, bring_up);
	return inst.err;
}

void uiw_progress_kick(bool sleeping)
{
	uint64_t one = 1;

	/* From any program thread, with or without the lock. */
	__atomic_fetch_add(sleeping ? &inst.kicks_wait : &inst.kicks_nonblock, 1, __ATOMIC_RELAXED);

	/* The program makes no pass of its own from here: the thread need not give way. The
	 * store, then the load (nap() does the opposite pair): one of the two sees the other. */
	__atomic_store_n(&uiw_inline_progress_ns, 0, __ATOMIC_SEQ_CST);
	if (inst.nap_fd >= 0 && __atomic_load_n(&inst.napping, __ATOMIC_SEQ_CST) &&
	    write(inst.nap_fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		UIW_DEBUG("progress kick: %s", strerror(errno));
}

void uiw_progress_wake(void)
{
	uint64_t one = 1;

	if (inst.nap_fd >= 0 && __atomic_load_n(&inst.napping, __ATOMIC_SEQ_CST) &&
	    write(inst.nap_fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		UIW_DEBUG("progress wake: %s", strerror(errno));
}

/* Sleeps up to @p us, or until a kick. @return true if kicked. */
static bool nap(unsigned us)
{
	struct pollfd p = { .fd = inst.nap_fd, .events = POLLIN };
	struct timespec ts = { 0, (long)us * 1000 };
	uint64_t v;
	bool kicked;

	__atomic_store_n(&inst.napping, 1, __ATOMIC_SEQ_CST);
	/* A kick that came before the flag was up wrote nothing, but cleared the time. */
	kicked = __atomic_load_n(&uiw_inline_progress_ns, __ATOMIC_SEQ_CST) == 0 ||
		 ppoll(&p, 1, &ts, NULL) > 0;
	if (kicked && read(inst.nap_fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		UIW_DEBUG("progress nap: %s", strerror(errno));
	__atomic_store_n(&inst.napping, 0, __ATOMIC_RELEASE);
	return kicked;
}

/* Naps @p us or until a kick written while it lasts; the program's mark is not looked at
 * (a program blocked in a call has no recent pass, so it is 0 for good). */
static void idle_nap(unsigned us)
{
	struct pollfd p = { .fd = inst.nap_fd, .events = POLLIN };
	struct timespec ts = { 0, (long)us * 1000 };
	uint64_t v;

	__atomic_store_n(&inst.napping, 1, __ATOMIC_SEQ_CST);
	if (ppoll(&p, 1, &ts, NULL) > 0 && read(inst.nap_fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		UIW_DEBUG("progress nap: %s", strerror(errno));
	__atomic_store_n(&inst.napping, 0, __ATOMIC_RELEASE);
}

/* Naps, the next nap twice as long unless a kick ended this one. */
static void nap_backoff(unsigned *us)
{
	if (nap(*us))
		*us = NAP_MIN_US;
	else
		*us = *us * 2 > NAP_MAX_US ? NAP_MAX_US : *us * 2;
}

/*
 * True if the program made a pass of its own within @p ns (never, if it was kicked or never
 * polled: the mark is 0). The mark is read before the clock and the two compared signed: a
 * mark stored between the two reads, or taken on a core whose TSC runs slightly ahead, is
 * recent rather than centuries old.
 */
static bool program_polled_within(uint64_t ns)
{
	uint64_t mark = __atomic_load_n(&uiw_inline_progress_ns, __ATOMIC_ACQUIRE);

	return mark != 0 && (int64_t)(uiw_now_ns() - mark) <= (int64_t)ns;
}

/* The program polls the stack itself: the thread keeps out of its way. */
static bool program_polls(void)
{
	return program_polled_within(INLINE_QUIET_NS);
}

/* The program thread's CPU time at the thread's last look, and when that was. */
static struct {
	int clock;
	uint64_t cpu_ns;
	uint64_t at;
} look;

/*
 * True if the program has made no call for WAITER_QUIET_NS though it ran on its core for
 * at least half the time since the thread's last look: it waits on memory, or computes.
 * Each look (a system call: the CPU clock of another thread has no vDSO path) is made only
 * once the program has been quiet that long.
 */
static bool program_waits_on_memory(uint64_t now)
{
	uint64_t mark = __atomic_load_n(&uiw_inline_progress_ns, __ATOMIC_ACQUIRE);
	int clock = __atomic_load_n(&uiw_inline_clock, __ATOMIC_RELAXED);
	struct timespec ts;
	uint64_t cpu;
	bool ran;

	/* A program inside a call (a long pass, a burst of posts) runs without marking: with
	 * the lock biased to it, it says so here; with the mutex, the thread's try at the
	 * lock tells. */
	if (mark == 0 || clock == 0 || (int64_t)(now - mark) <= (int64_t)WAITER_QUIET_NS ||
	    __atomic_load_n(&uiw_bias.owner_busy, __ATOMIC_ACQUIRE))
		return false;
	if (clock_gettime((clockid_t)clock, &ts) != 0) {   /* the thread has ended */
		look.clock = 0;
		return false;
	}
	cpu = (uint64_t)ts.tv_sec * UIW_NS_PER_S + (uint64_t)ts.tv_nsec;
	inst.waiter_looks++;
	ran = look.clock == clock && now > look.at && (cpu - look.cpu_ns) * 2 >= now - look.at;
	look.clock = clock;
	look.cpu_ns = cpu;
	look.at = now;
	return ran;
}

/*
 * After a pass of the thread's own: a program that polled within YIELD_WINDOW_NS, though
 * not within INLINE_QUIET_NS, has most likely lost its core, perhaps to this thread, which
 * would otherwise spin until the next scheduler tick while the program waits to run
 * (measured: a 64 KiB ib_write_bw client went 1-10 ms without a pass about 180,000 times a
 * run). Such passes give the core back at once. A program that stopped polling long ago
 * (one waiting on memory) gets passes without the system call.
 */
static bool program_lost_core(void)
{
	return program_polled_within(YIELD_WINDOW_NS);
}

/*
 * While it serves a program that waits on memory the thread runs at nice -progress_nice,
 * and at the nice value it started with (the program's) otherwise. It sleeps through most
 * of its turns then (the naps after empty passes), and the raised priority has the
 * kernel's scheduler give it the core at once when a nap ends, rather than at a tick of
 * the program thread it shares the core with. Raised all the time, it took cores from
 * programs that poll, in the passes it makes when one has lost its core: a 64 KiB
 * ib_send_bw pair on two cores lost about 10%. Only this thread's priority changes; where
 * raising it is not permitted, the thread says so once and runs as the program's threads
 * do.
 */
static void boost(bool on)
{
	static bool boosted, refused;
	static int own;   /* the nice value the thread started with (the program's) */
	int want;

	if (on == boosted || (on && (inst.cfg.progress_nice == 0 || refused)))
		return;
	want = own;
	if (on) {
		errno = 0;
		own = getpriority(PRIO_PROCESS, (id_t)gettid());   /* -1 is a value too */
		if (errno != 0)
			own = 0;
		want = RTE_MIN(own, -(int)inst.cfg.progress_nice);   /* never lowered */
	}
	if (setpriority(PRIO_PROCESS, (id_t)gettid(), want) == 0) {
		boosted = on;
		inst.boosts += on && want < own;
		return;
	}
	if (on) {
		refused = true;
		UIW_INFO("progress thread: nice %d not permitted (%s: CAP_SYS_NICE or RLIMIT_NICE "
			 "needed); with more spinning threads than cores a program that waits on "
			 "memory (ib_write_lat) may wait a scheduler tick a message "
			 "(progress_nice=0 silences this)", want, strerror(errno));
	}
}

static void *progress_main(void *arg)
{
	unsigned nap_us = NAP_MIN_US, idle_nap_us = NAP_MIN_US, looks_polled = 0;
	bool waiter_mode = false;
	uint64_t last_pass = 0, quiet_since = 0;

	(void)arg;
	/* Not on the program's pinned core only: the kernel may run it wherever there is room. */
	uiw_thread_unpin();
	/* Naps as short as asked: the default timer slack (50 us) would triple the shortest. */
	prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
	pthread_setname_np(pthread_self(), "uiw-progress");   /* as top -H and perf show it */
	uiw_pass_copy_only = true;
	for (;;) {
		if (__atomic_load_n(&uiw_api_waiting, __ATOMIC_RELAXED) > 0) {
			sched_yield();   /* a program thread wants the lock: it goes first */
			last_pass = 0;   /* waiting for the lock is not waiting for a core */
			continue;
		}
		/* Read without the lock: a stale value costs one more nap or one more pass. */
		bool waiter = false;

		if (program_polls()) {
			uint64_t t0 = uiw_now_ns();

			waiter = program_waits_on_memory(t0);
			if (!waiter && waiter_mode && program_polled_within(WAITER_QUIET_NS) &&
			    ++looks_polled >= WAITER_LOOKS_POLLED) {
				waiter_mode = false;   /* it polls now */
				boost(false);
			}
		}
		if (!waiter && program_polls()) {
			uint64_t t = uiw_now_ns();

			if (status_wanted(t) && uiw_big_lock_try() == 0) {
				status_due(t);
				pthread_mutex_unlock(&uiw_big_lock);
				stat_send();
			}
			/* A program that polls from one thread takes the lock without a locked
			 * instruction while no other thread comes: until it has the bias, the
			 * naps are short enough to give it soon. */
			if (!uiw_bias_renew() && nap_us > BIAS_RETRY_US)
				nap_us = BIAS_RETRY_US;
			if (waiter_mode)
				nap_us = NAP_MIN_US;
			inst.naps++;
			nap_backoff(&nap_us);
			last_pass = 0;   /* the next pass follows a nap, not a wait for a core */
			continue;
		}
		/* A program thread holding the lock is in a call of its own (a long pass, a burst
		 * of posts): waiting for the lock would hand it to and fro, a system call and
		 * often a context switch on each side, so the thread naps as if the program
		 * polled. */
		if (uiw_big_lock_try() != 0) {
			inst.lock_busy++;
			nap_backoff(&nap_us);
			last_pass = 0;
			continue;
		}
		nap_us = NAP_MIN_US;
		if (waiter) {   /* not in a call of its own either: the lock was free */
			waiter_mode = true;
			boost(true);
			looks_polled = 0;
		}
		uint64_t now = uiw_now_ns();

		if (last_pass != 0 && now - last_pass > LATE_PASS_NS && inst.late_passes++ == 0)
			UIW_INFO("progress thread: a pass waited %.1f ms for a core (more spinning "
				 "threads than cores: each message may wait as long)",
				 (double)(now - last_pass) / 1e6);
		unsigned work = 1;

		if (waiter ? !program_polled_within(WAITER_QUIET_NS) : !program_polls()) {
			work = uiw_verbs_progress_locked();
			inst.waiter_passes += waiter;
			inst.passes++;
		}
		status_due(now);
		pthread_mutex_unlock(&uiw_big_lock);
		stat_send();
		if (work > 0 || quiet_since == 0) {
			quiet_since = work > 0 ? 0 : now;
			idle_nap_us = NAP_MIN_US;
		} else if (now - quiet_since > IDLE_NS) {
			/* A kick ends the nap but not the spell: a blocked caller kicks each time
			 * its wait times out (uiw_wait_some), and only the pass after it tells
			 * whether it brought work. */
			inst.idle_naps++;
			idle_nap(idle_nap_us);
			idle_nap_us = idle_nap_us * 2 > IDLE_NAP_MAX_US ? IDLE_NAP_MAX_US : idle_nap_us * 2;
			last_pass = 0;   /* the next pass follows a nap, not a wait for a core */
			continue;
		}
		if (program_lost_core()) {
			if (work == 0) {
				/* The program's core back until the next look (a kick from
				 * a program thread ends the nap early). */
				inst.waiter_naps++;
				nap(NAP_MIN_US);
				last_pass = 0;   /* the next pass follows a nap */
				continue;
			}
			inst.yields++;
			sched_yield();
		}
		last_pass = uiw_now_ns();
	}
	return NULL;
}

