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
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "mpa.h"
#include "net.h"
#include "tcp.h"
#include "uiw_config.h"
#include "uiw_fault.h"
#include "uiw_log.h"
#include "uiw_port.h"
#include "uiw_time.h"
#include "verbs_internal.h"

#define NO_CONFIG_TEXT                                                                       \
	"uiwarp: no configuration: set UIWARP_CONF to a configuration file, or UIWARP_CONFIG " \
	"to 'port=DEVARGS; ip=A.B.C.D/N' (docs/DROPIN.md)"

/* The progress thread leaves the stack to a program that polls it itself: after a pass
 * of the program's own within this long, the thread sleeps instead. */
#define INLINE_QUIET_NS (5 * 1000ull)
#define THREAD_NAP_US 20

static struct {
	pthread_once_t once;
	int err;                 /* 0 once up; else the errno every call reports */
	struct uiw_config cfg;
	struct uiw_port port;
	struct uiw_fault fault;
	struct uiw_net net;
	struct uiw_tcp *tcp;
	struct uiw_mpa *mpa;
	pthread_t thread;
} inst = { .once = PTHREAD_ONCE_INIT };

static void drain_at_exit(void);
static void *progress_main(void *arg);

static void bring_up(void)
{
	char err[512];

	uiw_threaded = true;
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
	if (uiw_eal_init(&inst.cfg, "uiwarp") != 0 || uiw_port_open(&inst.port, &inst.cfg) != 0) {
		fprintf(stderr, "uiwarp: cannot bring up port '%s' (see the messages above)\n",
			inst.cfg.port);
		inst.err = ENODEV;
		return;
	}
	if (uiw_fault_attach(&inst.port, &inst.fault, &inst.cfg, err, sizeof(err)) != 0) {
		fprintf(stderr, "uiwarp: configuration: %s\n", err);
		inst.err = EINVAL;
		return;
	}
	/* No wait for the link: a memif or vhost server's link comes up only when its peer
	 * process connects, and a listener must be listening by then (TCP retransmits what
	 * leaves while the link is down). */
	uiw_net_init(&inst.net, &inst.port, &inst.cfg);
	if (uiw_tcp_create(&inst.tcp, &inst.net, &inst.cfg) != 0 ||
	    uiw_mpa_create(&inst.mpa, inst.tcp, inst.port.pool) != 0 ||
	    uiw_verbs_add_device(&inst.net, inst.tcp, inst.mpa, &inst.cfg) != 0) {
		fprintf(stderr, "uiwarp: cannot create the stack instance\n");
		inst.err = ENOMEM;
		return;
	}
	uiw_net_start(&inst.net, uiw_now_ns());
	uiw_port_flush(&inst.port);
	atexit(drain_at_exit);
	/* Programs that wait on memory (ib_write_lat polls the bytes a Write brings) make no
	 * call that could drive the stack: the thread runs from the start. */
	if (pthread_create(&inst.thread, NULL, progress_main, NULL) != 0) {
		fprintf(stderr, "uiwarp: cannot start the progress thread\n");
		inst.err = EAGAIN;
		return;
	}
	pthread_detach(inst.thread);
}

/*
 * At exit: the stack lives in this process, so what it still has to send (the FIN and
 * last ACKs of a disconnect the program made just before returning) goes now or never.
 * Up to EXIT_DRAIN_MS of passes, until no connection is left.
 */
#define EXIT_DRAIN_MS 300

static void drain_at_exit(void)
{
	uint64_t end = uiw_now_ns() + EXIT_DRAIN_MS * UIW_NS_PER_MS;

	pthread_mutex_lock(&uiw_big_lock);
	do   /* at least one pass: a reset an abort just queued goes out too */
		uiw_verbs_progress_locked();
	while (uiw_tcp_conn_count(inst.tcp) > 0 && uiw_now_ns() < end);
	uiw_port_flush(&inst.port);
	/* The lock stays held: the progress thread (and any thread still in a call) stops
	 * here, before the exit tears down what the stack uses. */
}

int uiw_dropin_ensure(void)
{
	pthread_once(&inst.once, bring_up);
	return inst.err;
}

static void *progress_main(void *arg)
{
	cpu_set_t all;

	(void)arg;
	/* Not on the program's pinned core only (the EAL pins the thread that started it, and
	 * a new thread inherits that): the kernel may run it wherever there is room. */
	CPU_ZERO(&all);
	for (long c = 0; c < sysconf(_SC_NPROCESSORS_ONLN) && c < CPU_SETSIZE; c++)
		CPU_SET((int)c, &all);
	pthread_setaffinity_np(pthread_self(), sizeof(all), &all);
	for (;;) {
		uint64_t quiet_since;

		if (__atomic_load_n(&uiw_api_waiting, __ATOMIC_RELAXED) > 0) {
			sched_yield();   /* a program thread wants the lock: it goes first */
			continue;
		}
		pthread_mutex_lock(&uiw_big_lock);
		quiet_since = uiw_now_ns() - uiw_inline_progress_ns;
		if (quiet_since > INLINE_QUIET_NS)
			uiw_verbs_progress_locked();
		pthread_mutex_unlock(&uiw_big_lock);
		if (quiet_since <= INLINE_QUIET_NS)
			usleep(THREAD_NAP_US);
	}
	return NULL;
}

