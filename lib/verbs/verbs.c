/* SPDX-License-Identifier: BSD-3-Clause */
/* ibv_*: devices, contexts, PDs, MRs, CQs and completion channels, RC QPs, and the data
 * path that verbs.h's inline functions reach through context->ops. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <rte_pause.h>

#include "uiw_dma.h"
#include "uiw_log.h"
#include "uiw_time.h"
#include "verbs_internal.h"

static struct uiw_dev *devs[UIW_VERBS_MAX_DEVICES];
static unsigned ndevs;

bool uiw_threaded;
bool uiw_progress_thread;
pthread_mutex_t uiw_big_lock = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
uint64_t uiw_inline_progress_ns;
int uiw_inline_clock;
unsigned uiw_api_waiting;
UIW_TLS unsigned uiw_api_depth;
UIW_TLS unsigned uiw_api_engines;
UIW_TLS pthread_mutex_t *uiw_api_one;
UIW_TLS char uiw_api_self;
UIW_TLS bool uiw_api_fast;
UIW_TLS bool uiw_pass_copy_only;
struct uiw_bias uiw_bias = { .revoked = 1 };
const void *uiw_last_inline;
unsigned uiw_engine_threads;
pthread_mutex_t uiw_ev_lock = PTHREAD_MUTEX_INITIALIZER;

static void eng_wake_cb(void *arg);

/* The engines with threads, in the order their locks are taken. */
static struct uiw_eng *threaded[UIW_VERBS_MAX_DEVICES * UIW_MAX_ENGINES];
static unsigned engines_wanted;   /* API callers taking the engines' locks */

/* The static library has no instance or thread of its own (dropin.c makes them). */
__attribute__((weak)) void uiw_progress_kick(bool sleeping)
{
	(void)sleeping;
}

__attribute__((weak)) void uiw_progress_wake(void)
{
}

__attribute__((weak)) int uiw_dropin_ensure(void)
{
	return 0;
}

int uiw_errno(int rc)
{
	return rc < 0 ? -rc : rc;
}

void uiw_engines_stop(void)
{
	unsigned n = __atomic_load_n(&uiw_engine_threads, __ATOMIC_ACQUIRE);

	/* The engine threads give way while this is up (a mutex is not fair). */
	__atomic_fetch_add(&engines_wanted, 1, __ATOMIC_RELAXED);
	for (unsigned i = 0; i < n; i++)
		pthread_mutex_lock(&threaded[i]->lock);
	__atomic_fetch_sub(&engines_wanted, 1, __ATOMIC_RELAXED);
	uiw_api_engines = n;
}

void uiw_engines_go(void)
{
	for (unsigned i = uiw_api_engines; i-- > 0;)
		pthread_mutex_unlock(&threaded[i]->lock);
	uiw_api_engines = 0;
}

void uiw_api_abandon(void)
{
	uiw_api_depth = 0;
	if (uiw_api_engines > 0)
		uiw_engines_go();
	uiw_big_lock_give();
}

void uiw_bias_init(void)
{
	uiw_bias.ok = uiw_membarrier_register() == 0;
	if (!uiw_bias.ok)
		UIW_INFO("no membarrier (%s): every verbs call takes a lock", strerror(errno));
}

/* Pauses a revoker spins for the owner to leave its call before it gives its core away
 * (a few microseconds: longer than the calls of a polling program, passes included). */
#define REVOKE_SPINS 256

/* With the mutex held: no thread holds the lock by the bias, nor will until renewed. */
static void bias_revoke(void)
{
	if (__atomic_load_n(&uiw_bias.revoked, __ATOMIC_RELAXED))
		return;
	__atomic_store_n(&uiw_bias.revoked, 1, __ATOMIC_RELAXED);
	if (uiw_membarrier() != 0) {
		/* Registered, so not expected: the owner's flag can no longer be trusted. Its
		 * store may still sit in its core; no bias from now on. */
		UIW_ERR("membarrier: %s; every verbs call takes a lock from now on", strerror(errno));
		uiw_bias.ok = false;
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		usleep(1000);
	}
	/* The owner leaves its call within a pass unless it is not running: taken off its
	 * core, often for this thread, which the kernel put on the same one. Spinning then
	 * held that core until the scheduler's tick, about 2 ms a revoke (the progress
	 * thread's 2-4 a second were 6 ms of its samples a second in an ib_send_bw client). */
	for (unsigned spins = 0; __atomic_load_n(&uiw_bias.owner_busy, __ATOMIC_ACQUIRE); spins++) {
		if (spins < REVOKE_SPINS) {
			rte_pause();
		} else {
			uiw_bias.revoke_yields++;
			sched_yield();
		}
	}
	__atomic_store_n(&uiw_bias.owner, NULL, __ATOMIC_RELAXED);
	uiw_bias.others_seen = uiw_bias.others;
	uiw_bias.revokes++;
}

void uiw_big_lock_hold(void)
{
	if (pthread_mutex_trylock(&uiw_big_lock) != 0) {
		/* The progress thread gives way while a program thread waits (a mutex is not
		 * fair). */
		__atomic_fetch_add(&uiw_api_waiting, 1, __ATOMIC_RELAXED);
		pthread_mutex_lock(&uiw_big_lock);
		__atomic_fetch_sub(&uiw_api_waiting, 1, __ATOMIC_RELAXED);
	}
	bias_revoke();
	uiw_bias.slow++;
	if (uiw_last_inline != &uiw_api_self)
		uiw_bias.others++;
}

void uiw_big_lock_slow(void)
{
	uiw_big_lock_hold();
	/*
	 * The polling thread, the only program thread to call since the bias was taken back
	 * (by the progress thread for a pass of its own, or to answer uiwarp-stat), takes it
	 * again here, for its next call, as uiw_bias_renew() would give it. Waiting for the
	 * progress thread's look cost the program the mutex for 50 ms a time: the look
	 * needs the mutex free, and a program that polls holds it most of the time (an
	 * ib_send_bw client made 19-34% of its calls by the mutex in steady state). A second
	 * program thread's call since then (others moved) leaves the choice to the look.
	 */
	if (uiw_bias.ok && uiw_last_inline == &uiw_api_self &&
	    uiw_bias.others == uiw_bias.others_seen) {
		__atomic_store_n(&uiw_bias.owner, &uiw_api_self, __ATOMIC_RELAXED);
		__atomic_store_n(&uiw_bias.revoked, 0, __ATOMIC_RELEASE);
		uiw_bias.regrants++;
	}
}

int uiw_big_lock_try(void)
{
	if (pthread_mutex_trylock(&uiw_big_lock) != 0)
		return -1;
	bias_revoke();
	return 0;
}

bool uiw_bias_renew(void)
{
	bool given = false;

	if (!uiw_bias.ok || !__atomic_load_n(&uiw_bias.revoked, __ATOMIC_RELAXED))
		return true;
	if (pthread_mutex_trylock(&uiw_big_lock) != 0)
		return false;
	/* Only to the thread that made every call since the last look. */
	if (uiw_bias.ok && uiw_bias.others == uiw_bias.others_seen && uiw_last_inline != NULL) {
		__atomic_store_n(&uiw_bias.owner, uiw_last_inline, __ATOMIC_RELAXED);
		__atomic_store_n(&uiw_bias.revoked, 0, __ATOMIC_RELEASE);
		uiw_bias.renews++;
		given = true;
	}
	uiw_bias.others_seen = uiw_bias.others;
	pthread_mutex_unlock(&uiw_big_lock);
	return given;
}

int uiw_verbs_add_device(struct uiw_stack *s)
{
	struct uiw_dev *d;

	if (ndevs == UIW_VERBS_MAX_DEVICES || (d = calloc(1, sizeof(*d))) == NULL)
		return -ENOSPC;
	if (uiw_stag_table_init(&d->stags, 1u << 16) != 0) {
		free(d);
		return -ENOMEM;
	}
	d->stack = s;
	for (unsigned i = 0; i < s->nengines; i++) {
		d->eng[i].e = uiw_stack_engine(s, i);
		d->eng[i].d = d;
		d->eng[i].idx = i;
		d->eng[i].nap_fd = -1;
		d->eng[i].cache_lcore = uiw_lcore_id_spare();
		uiw_net_set_wake(&d->eng[i].e->net, eng_wake_cb, &d->eng[i]);
	}
	uiw_mpa_params_from_config(&d->mpa_params, &s->cfg);
	d->next_qpn = 1;
	d->next_pdn = 1;
	d->dev.node_type = IBV_NODE_RNIC;
	d->dev.transport_type = IBV_TRANSPORT_IWARP;
	snprintf(d->dev.name, sizeof(d->dev.name), "uiw%u", ndevs);
	snprintf(d->dev.dev_name, sizeof(d->dev.dev_name), "uverbs-uiw%u", ndevs);
	devs[ndevs++] = d;
	return 0;
}

void uiw_verbs_remove_devices(void)
{
	for (unsigned i = 0; i < ndevs; i++) {
		if (devs[i]->default_pd != NULL)
			ibv_dealloc_pd(devs[i]->default_pd);
		if (devs[i]->cm_ctx != NULL)
			ibv_close_device(devs[i]->cm_ctx);
		uiw_stag_table_fini(&devs[i]->stags);
		free(devs[i]);
		devs[i] = NULL;
	}
	ndevs = 0;
	uiw_lcore_id_spares_reset();   /* no engine is left to hold one */
}

/* Starts the work posted on @p g's QPs since its last pass (ibv_post_send only queues it). */
static unsigned ring_doorbells(struct uiw_eng *g)
{
	unsigned n = 0;

	while (g->kick != NULL) {
		struct uiw_qp_v *q = g->kick;

		g->kick = q->kick_next;
		q->kicked = false;
		uiw_qp_kick(q->core);
		n++;
	}
	return n;
}

void (*uiw_cma_poll_hook)(struct uiw_eng *g, uint64_t now);

unsigned uiw_eng_pass(struct uiw_eng *g, uint64_t now)
{
	/*
	 * A thread the EAL made no lcore of makes the pass with the engine's spare lcore id,
	 * and so with mempool caches: one thread at a time makes an engine's passes (its lock,
	 * or the big lock for an engine without a thread of its own). Without them every mbuf
	 * the pass took and gave back went through the pool's ring: perftest polling from a
	 * thread other than the one that started the EAL moved 11-14 Gb/s against 25-28.
	 *
	 * The EAL's value too, so that the PMD's bursts use the caches as well (22-26 Gb/s
	 * then, against 14-16 with the stack's copy alone); except in the progress thread,
	 * whose passes serve programs asleep in ibv_get_cq_event(). There it made ib_send_bw
	 * -e hang in 11 runs of 14, against 3 of 60 with the copy alone: perftest's Send
	 * credits come back by RDMA Write, which raises no completion, so a sender that has
	 * taken all its completions and waits for credits sleeps for an event that does not
	 * come. Faster passes there made that race of perftest's likelier (docs/DROPIN.md).
	 */
	unsigned own = uiw_lcore_id_borrow(g->cache_lcore, !uiw_pass_copy_only);
	unsigned work = ring_doorbells(g) + uiw_stack_poll_engine(g->e, now);

	if (g->resolving != NULL && uiw_cma_poll_hook != NULL)
		uiw_cma_poll_hook(g, now);
	uiw_lcore_id_restore(own);
	return work;
}

/* Ends @p g's nap: work was posted for it. */
static void eng_wake(struct uiw_eng *g)
{
	uint64_t one = 1;

	if (__atomic_load_n(&g->threaded, __ATOMIC_ACQUIRE) &&
	    __atomic_load_n(&g->napping, __ATOMIC_SEQ_CST) &&
	    write(g->nap_fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		UIW_DEBUG("engine %u wake: %s", g->idx, strerror(errno));
}

/* uiw_net_set_wake(): a frame was handed to the engine (another engine's queue got it). */
static void eng_wake_cb(void *arg)
{
	struct uiw_eng *g = arg;

	if (g->idx == 0)
		uiw_progress_wake();   /* engine 0 is the progress thread's */
	else
		eng_wake(g);
}

/* An engine thread that made no pass for this long has most likely lost its core. */
#define ENG_STALE_NS (50 * 1000ull)

/* uiw_verbs_progress_locked(), the first pass at @p now, read by the caller. */
static unsigned progress_from(uint64_t now)
{
	unsigned work = 0;
	bool first = true;

	for (unsigned i = 0; i < ndevs; i++) {
		for (unsigned k = 0; k < devs[i]->stack->nengines; k++) {
			struct uiw_eng *g = &devs[i]->eng[k];

			if (!first)
				now = uiw_now_ns();   /* each pass its own: they take a while */
			first = false;

			/* Unthreaded, or held by this call (an API call holds every engine). */
			if (!g->threaded || uiw_api_engines > 0) {
				work += uiw_eng_pass(g, now);
				continue;
			}
			/* A threaded engine whose thread waits for a core (more threads spin than
			 * there are cores): the caller, which has one, makes the pass, if the
			 * thread is not in one. */
			if (uiw_api_one == NULL &&
			    now - __atomic_load_n(&g->last_pass_ns, __ATOMIC_RELAXED) > ENG_STALE_NS &&
			    pthread_mutex_trylock(&g->lock) == 0) {
				unsigned w = uiw_eng_pass(g, uiw_now_ns());

				g->borrowed++;
				pthread_mutex_unlock(&g->lock);
				if (w > 0)
					eng_wake(g);   /* a napping thread finds no work: it is busy */
				work += w;
			}
		}
	}
	return work;
}

unsigned uiw_verbs_progress_locked(void)
{
	return progress_from(uiw_now_ns());
}

/* An engine thread naps this long at most when its engine has been quiet IDLE_NS. */
#define ENG_IDLE_NS (5 * 1000 * 1000ull)
#define ENG_NAP_MIN_US 20
#define ENG_NAP_MAX_US 1000

/* Naps up to @p us, or until a wake. @return true if woken. */
static bool eng_nap(struct uiw_eng *g, unsigned us)
{
	struct pollfd p = { .fd = g->nap_fd, .events = POLLIN };
	struct timespec ts = { (time_t)(us / 1000000), (long)(us % 1000000) * 1000 };
	uint64_t v;
	bool woken;

	__atomic_store_n(&g->napping, 1, __ATOMIC_SEQ_CST);
	woken = ppoll(&p, 1, &ts, NULL) > 0;
	if (woken && read(g->nap_fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		UIW_DEBUG("engine %u nap: %s", g->idx, strerror(errno));
	__atomic_store_n(&g->napping, 0, __ATOMIC_RELEASE);
	g->naps++;
	return woken;
}

void uiw_thread_unpin(void)
{
	cpu_set_t all;

	CPU_ZERO(&all);
	for (long c = 0; c < sysconf(_SC_NPROCESSORS_ONLN) && c < CPU_SETSIZE; c++)
		CPU_SET((int)c, &all);
	pthread_setaffinity_np(pthread_self(), sizeof(all), &all);
}

int uiw_thread_start(pthread_t *t, void *(*fn)(void *), void *arg)
{
	sigset_t all, old;
	int rc;

	/* The new thread takes the mask in force here: every signal blocked. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	rc = pthread_create(t, NULL, fn, arg);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return rc;
}

static void *engine_main(void *arg)
{
	struct uiw_eng *g = arg;
	char name[16];
	uint64_t quiet_since = 0;
	unsigned nap_us = ENG_NAP_MIN_US;

	snprintf(name, sizeof(name), "uiw-engine%u", g->idx);
	pthread_setname_np(pthread_self(), name);   /* as top -H and perf show it */
	/* Pinned with the thread that made it, every engine shared one core and the
	 * program's thread made most of their passes (borrowed). */
	uiw_thread_unpin();
	while (!__atomic_load_n(&g->stop, __ATOMIC_ACQUIRE)) {
		if (__atomic_load_n(&engines_wanted, __ATOMIC_RELAXED) > 0) {
			sched_yield();   /* an API call wants every engine: it goes first */
			continue;
		}
		pthread_mutex_lock(&g->lock);
		uint64_t now = uiw_now_ns();
		unsigned work = uiw_eng_pass(g, now);

		g->passes++;
		pthread_mutex_unlock(&g->lock);
		__atomic_store_n(&g->last_pass_ns, uiw_now_ns(), __ATOMIC_RELAXED);
		if (work > 0 || quiet_since == 0) {
			quiet_since = work > 0 ? 0 : now;
			nap_us = ENG_NAP_MIN_US;
		} else if (now - quiet_since > ENG_IDLE_NS) {
			if (eng_nap(g, nap_us)) {   /* work came: busy again */
				quiet_since = 0;
				nap_us = ENG_NAP_MIN_US;
			} else {
				nap_us = nap_us * 2 > ENG_NAP_MAX_US ? ENG_NAP_MAX_US : nap_us * 2;
			}
		} else {
			sched_yield();   /* nothing came: any other thread waiting for this core first */
		}
	}
	return NULL;
}

int uiw_verbs_start_engine_threads(void)
{
	for (unsigned i = 0; i < ndevs; i++) {
		for (unsigned k = 1; k < devs[i]->stack->nengines; k++) {
			struct uiw_eng *g = &devs[i]->eng[k];

			g->nap_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
			if (g->nap_fd < 0 || pthread_mutex_init(&g->lock, NULL) != 0)
				return -errno;
			/* Published before the thread runs: API calls from here on take its lock. */
			threaded[uiw_engine_threads] = g;
			__atomic_store_n(&g->threaded, true, __ATOMIC_RELEASE);
			__atomic_store_n(&uiw_engine_threads, uiw_engine_threads + 1, __ATOMIC_RELEASE);
			if (uiw_thread_start(&g->thread, engine_main, g) != 0) {
				__atomic_store_n(&g->threaded, false, __ATOMIC_RELEASE);
				__atomic_store_n(&uiw_engine_threads, uiw_engine_threads - 1, __ATOMIC_RELEASE);
				return -EAGAIN;
			}
		}
	}
	return 0;
}

int uiw_verbs_engine_threads_start(void)
{
	/* No progress thread here: the caller's thread makes engine 0's passes, blocking
	 * waits included (uiw_wait_some()). */
	uiw_threaded = true;
	return uiw_verbs_start_engine_threads();
}

void uiw_verbs_engine_threads_stop(void)
{
	uiw_verbs_stop_engine_threads();
}

void uiw_verbs_engine_threads_print(FILE *f)
{
	uiw_verbs_print_engine_threads(f);
}

void uiw_verbs_print_engine_threads(FILE *f)
{
	for (unsigned i = 0; i < ndevs; i++)
		for (unsigned k = 1; k < devs[i]->stack->nengines; k++)
			if (devs[i]->eng[k].nap_fd >= 0)   /* it had a thread */
				fprintf(f, "engine%u.thread_passes %lu\nengine%u.thread_naps %lu\n"
					"engine%u.borrowed_passes %lu\n",
					k, (unsigned long)devs[i]->eng[k].passes, k,
					(unsigned long)devs[i]->eng[k].naps, k,
					(unsigned long)devs[i]->eng[k].borrowed);
}

void uiw_verbs_stop_engine_threads(void)
{
	unsigned n = __atomic_load_n(&uiw_engine_threads, __ATOMIC_ACQUIRE);

	for (unsigned i = 0; i < n; i++) {
		__atomic_store_n(&threaded[i]->stop, 1, __ATOMIC_RELEASE);
		eng_wake(threaded[i]);
	}
	for (unsigned i = 0; i < n; i++) {
		pthread_join(threaded[i]->thread, NULL);
		/* The progress passes run it from now on. */
		__atomic_store_n(&threaded[i]->threaded, false, __ATOMIC_RELEASE);
	}
}

/* The calling thread polls: the mark, and (when the polling thread changes) its CPU
 * clock, by which the progress thread tells one that waits on memory (on its core, not
 * calling) from one that lost its core. The lock is held: one writer. */
static void mark_program(uint64_t now)
{
	__atomic_store_n(&uiw_inline_progress_ns, now, __ATOMIC_RELAXED);
	if (uiw_last_inline != &uiw_api_self) {
		clockid_t cid;

		uiw_last_inline = &uiw_api_self;
		if (pthread_getcpuclockid(pthread_self(), &cid) == 0)
			__atomic_store_n(&uiw_inline_clock, (int)cid, __ATOMIC_RELAXED);
	}
}

void uiw_inline_pass(void)
{
	/* One clock read for the mark and the pass: a read costs as much as an empty pass's
	 * looks at the port (rdtsc, 25-40 cycles here), and a busy program polls millions of
	 * times a second. The mark says the program polls; the pass's length does not change
	 * that. */
	uint64_t now = uiw_now_ns();

	if (uiw_threaded)
		mark_program(now);
	progress_from(now);
}

void uiw_inline_mark(void)
{
	if (uiw_threaded)
		mark_program(uiw_now_ns());
}

void uiw_verbs_progress(void)
{
	/* The big lock only: engine 0 is its; engine threads go on with theirs (a stale one
	 * gets a borrowed pass). */
	UIW_API_LOCK_ONE(NULL);

	uiw_inline_pass();
}

/*
 * Whether a signal that interrupted a wait ends it. A kernel read() on the fd would give
 * EINTR after a handler installed without SA_RESTART, and restart after one with it; the
 * signal that came is not known here, so any handler without SA_RESTART ends the wait
 * (qperf's SIGALRM ends its tests so, from a blocked ibv_get_cq_event()).
 */
static bool signal_ends_wait(void)
{
	for (int sig = 1; sig < SIGRTMAX; sig++) {
		struct sigaction sa;

		if (sigaction(sig, NULL, &sa) == 0 && !(sa.sa_flags & SA_RESTART) &&
		    ((sa.sa_flags & SA_SIGINFO) ||
		     (sa.sa_handler != SIG_DFL && sa.sa_handler != SIG_IGN)))
			return true;
	}
	return false;
}

bool uiw_wait_some(int fd, bool nonblock)
{
	return uiw_wait_some_masked(fd, nonblock, NULL);
}

bool uiw_wait_some_masked(int fd, bool nonblock, const sigset_t *mask)
{
	static const struct timespec slice = { .tv_nsec = 10 * 1000 * 1000 };
	struct pollfd p = { .fd = fd, .events = POLLIN };
	bool interrupted = false;

	if (nonblock || !uiw_threaded || !uiw_progress_thread) {
		uiw_inline_pass();
		/* A non-blocking caller may sleep in its own poll() next: the thread runs the
		 * stack without waiting out its nap (a caller that calls again at once makes
		 * its own passes, and the thread gives way again). */
		if (nonblock) {
			uiw_progress_kick(false);
			errno = EAGAIN;
		}
		return !nonblock;
	}
	/* Every lock this call holds is given back while it sleeps (a blocking call is at the
	 * outermost level). */
	unsigned depth = uiw_api_depth;

	uiw_api_depth = 0;
	if (uiw_api_engines > 0)
		uiw_engines_go();
	uiw_big_lock_give();
	uiw_progress_kick(true);   /* this thread sleeps: the stack is the progress thread's */
	if ((mask != NULL ? ppoll(&p, 1, &slice, mask) : poll(&p, 1, 10)) < 0) {
		if (errno == EINTR)
			interrupted = signal_ends_wait();
		else
			usleep(1000);
	}
	uiw_big_lock_take();
	uiw_api_depth = depth;
	if (depth > 0 && __atomic_load_n(&uiw_engine_threads, __ATOMIC_ACQUIRE) > 0)
		uiw_engines_stop();
	if (interrupted)
		errno = EINTR;
	return !interrupted;
}

struct uiw_eng *uiw_dev_next_engine(struct uiw_dev *d)
{
	return &d->eng[d->next_engine++ % d->stack->nengines];
}

struct uiw_eng *uiw_dev_engine_of(struct uiw_dev *d, const struct uiw_mpa_conn *c)
{
	const struct uiw_stack *owner = uiw_mpa_owner(c);

	for (unsigned i = 0; i < d->stack->nengines; i++)
		if (d->eng[i].e == owner)
			return &d->eng[i];
	return &d->eng[0];
}

struct uiw_dev *uiw_dev_by_ip(uint32_t ip)
{
	for (unsigned i = 0; i < ndevs; i++)
		if (devs[i]->stack->net.ip == ip)
			return devs[i];
	return NULL;
}

/* The device to reach @p dst from: one on its subnet that is not @p dst itself. */
struct uiw_dev *uiw_dev_for_dst(uint32_t dst)
{
	for (unsigned i = 0; i < ndevs; i++) {
		struct uiw_net *n = &devs[i]->stack->net;

		if (n->ip != dst && (n->ip & n->netmask) == (dst & n->netmask))
			return devs[i];
	}
	return ndevs > 0 ? devs[0] : NULL;
}

struct ibv_device **ibv_get_device_list(int *num)
{
	int err = uiw_dropin_ensure();
	UIW_API_LOCK();
	struct ibv_device **list;

	if (err != 0) {
		errno = err;
		return NULL;
	}
	list = calloc(ndevs + 1, sizeof(*list));
	if (list == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	for (unsigned i = 0; i < ndevs; i++)
		list[i] = &devs[i]->dev;
	if (num != NULL)
		*num = (int)ndevs;
	return list;
}

void ibv_free_device_list(struct ibv_device **list)
{
	UIW_API_LOCK();
	free(list);
}

const char *ibv_get_device_name(struct ibv_device *device)
{
	return device->name;
}

/* The node GUID: the port's MAC as an EUI-64 (universal/local bit flipped, FF FE in the
 * middle), as siw derives it. */
static __be64 dev_guid(const struct uiw_dev *d)
{
	const uint8_t *m = d->stack->port.mac.addr_bytes;
	uint8_t g[8] = { (uint8_t)(m[0] ^ 2), m[1], m[2], 0xff, 0xfe, m[3], m[4], m[5] };
	__be64 v;

	memcpy(&v, g, sizeof(v));
	return v;
}

__be64 ibv_get_device_guid(struct ibv_device *device)
{
	UIW_API_LOCK();

	return dev_guid((const struct uiw_dev *)(void *)device);
}

static int op_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc);
static int op_req_notify_cq(struct ibv_cq *cq, int solicited_only);
static int op_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad);
static int op_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad);
static int op_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad);

struct ibv_context *ibv_open_device(struct ibv_device *device)
{
	UIW_API_LOCK();
	struct uiw_ctx *c = calloc(1, sizeof(*c));
	struct ibv_context *ctx;

	if (c == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	c->dev = (struct uiw_dev *)(void *)device;
	uiw_ring_init(&c->async_ring, ASYNC_EVENTS);
	c->vctx.sz = sizeof(c->vctx);
	ctx = &c->vctx.context;
	ctx->device = device;
	ctx->cmd_fd = -1;
	ctx->async_fd = eventfd(0, EFD_CLOEXEC);
	if (ctx->async_fd < 0) {
		free(c);
		return NULL;
	}
	ctx->num_comp_vectors = 1;
	ctx->abi_compat = __VERBS_ABI_IS_EXTENDED;
	pthread_mutex_init(&ctx->mutex, NULL);
	ctx->ops.poll_cq = op_poll_cq;
	ctx->ops.req_notify_cq = op_req_notify_cq;
	ctx->ops.post_send = op_post_send;
	ctx->ops.post_recv = op_post_recv;
	ctx->ops.post_srq_recv = op_post_srq_recv;
	c->vctx.create_qp_ex = uiw_create_qp_ex;
	return ctx;
}

int ibv_close_device(struct ibv_context *context)
{
	UIW_API_LOCK();
	close(context->async_fd);
	pthread_mutex_destroy(&context->mutex);
	free((char *)context - offsetof(struct uiw_ctx, vctx.context));
	return 0;
}

/* ---- Asynchronous events (ibv_get_async_event(3)). ---- */

static void async_push(struct ibv_context *context, const struct ibv_async_event *ev)
{
	struct uiw_ctx *c = ctx_of(context);
	uint64_t one = 1;

	pthread_mutex_lock(&uiw_ev_lock);   /* engines may push at once */
	if (uiw_ring_full(&c->async_ring)) {
		c->async_lost++;
		pthread_mutex_unlock(&uiw_ev_lock);
		return;
	}
	c->async[uiw_ring_push(&c->async_ring)] = *ev;
	pthread_mutex_unlock(&uiw_ev_lock);
	if (write(context->async_fd, &one, sizeof(one)) != sizeof(one))
		return;
}

/* An object is going away: its queued events must not reach the application. */
static void async_forget(struct ibv_context *context, const void *obj)
{
	struct uiw_ctx *c = ctx_of(context);
	struct uiw_ring *r = &c->async_ring;
	uint32_t keep = r->head;

	for (uint32_t i = r->head; i != r->tail; i++) {
		struct ibv_async_event *e = &c->async[uiw_ring_slot(r, i)];

		if (e->element.qp != obj)   /* the union's members are all pointers */
			c->async[uiw_ring_slot(r, keep++)] = *e;
	}
	r->tail = keep;
}

int ibv_get_async_event(struct ibv_context *context, struct ibv_async_event *event)
{
	struct uiw_ctx *c = ctx_of(context);
	bool nonblock = (fcntl(context->async_fd, F_GETFL) & O_NONBLOCK) != 0;
	uint64_t v;

	UIW_API_LOCK();

	while (uiw_ring_empty(&c->async_ring))
		if (!uiw_wait_some(context->async_fd, nonblock) && uiw_ring_empty(&c->async_ring))
			return -1;   /* errno EAGAIN, or EINTR: a signal */
	*event = c->async[uiw_ring_pop(&c->async_ring)];
	if (uiw_ring_empty(&c->async_ring) && read(context->async_fd, &v, sizeof(v)) < 0)
		v = 0;
	return 0;
}

void ibv_ack_async_event(struct ibv_async_event *event)
{
	UIW_API_LOCK();
	(void)event;   /* nothing waits for acknowledgements: destroy drops pending events */
}

const char *ibv_event_type_str(enum ibv_event_type event)
{
	static const char *const names[] = {
		[IBV_EVENT_CQ_ERR] = "CQ error", [IBV_EVENT_QP_FATAL] = "local work queue catastrophic error",
		[IBV_EVENT_QP_REQ_ERR] = "invalid request local work queue error",
		[IBV_EVENT_QP_ACCESS_ERR] = "local access violation work queue error",
		[IBV_EVENT_COMM_EST] = "communication established", [IBV_EVENT_SQ_DRAINED] = "send queue drained",
		[IBV_EVENT_PATH_MIG] = "path migrated", [IBV_EVENT_PATH_MIG_ERR] = "path migration request error",
		[IBV_EVENT_DEVICE_FATAL] = "local catastrophic error", [IBV_EVENT_PORT_ACTIVE] = "port active",
		[IBV_EVENT_PORT_ERR] = "port error", [IBV_EVENT_LID_CHANGE] = "LID change",
		[IBV_EVENT_PKEY_CHANGE] = "P_Key change", [IBV_EVENT_SM_CHANGE] = "SM change",
		[IBV_EVENT_SRQ_ERR] = "SRQ catastrophic error", [IBV_EVENT_SRQ_LIMIT_REACHED] = "SRQ limit reached",
		[IBV_EVENT_QP_LAST_WQE_REACHED] = "last WQE reached", [IBV_EVENT_CLIENT_REREGISTER] = "client reregistration",
		[IBV_EVENT_GID_CHANGE] = "GID table change", [IBV_EVENT_WQ_FATAL] = "WQ fatal",
	};

	if ((unsigned)event < sizeof(names) / sizeof(names[0]) && names[event] != NULL)
		return names[event];
	return "unknown";
}

const char *ibv_wc_status_str(enum ibv_wc_status status)
{
	static const char *const names[] = {
		[IBV_WC_SUCCESS] = "success", [IBV_WC_LOC_LEN_ERR] = "local length error",
		[IBV_WC_LOC_QP_OP_ERR] = "local QP operation error",
		[IBV_WC_LOC_EEC_OP_ERR] = "local EE context operation error",
		[IBV_WC_LOC_PROT_ERR] = "local protection error", [IBV_WC_WR_FLUSH_ERR] = "Work Request Flushed Error",
		[IBV_WC_MW_BIND_ERR] = "memory management operation error",
		[IBV_WC_BAD_RESP_ERR] = "bad response error", [IBV_WC_LOC_ACCESS_ERR] = "local access error",
		[IBV_WC_REM_INV_REQ_ERR] = "remote invalid request error",
		[IBV_WC_REM_ACCESS_ERR] = "remote access error", [IBV_WC_REM_OP_ERR] = "remote operation error",
		[IBV_WC_RETRY_EXC_ERR] = "transport retry counter exceeded",
		[IBV_WC_RNR_RETRY_EXC_ERR] = "RNR retry counter exceeded",
		[IBV_WC_LOC_RDD_VIOL_ERR] = "local RDD violation error",
		[IBV_WC_REM_INV_RD_REQ_ERR] = "remote invalid RD request",
		[IBV_WC_REM_ABORT_ERR] = "aborted error", [IBV_WC_INV_EECN_ERR] = "invalid EE context number",
		[IBV_WC_INV_EEC_STATE_ERR] = "invalid EE context state", [IBV_WC_FATAL_ERR] = "fatal error",
		[IBV_WC_RESP_TIMEOUT_ERR] = "response timeout error", [IBV_WC_GENERAL_ERR] = "general error",
		[IBV_WC_TM_ERR] = "TM error", [IBV_WC_TM_RNDV_INCOMPLETE] = "TM software rendezvous",
	};

	if ((unsigned)status < sizeof(names) / sizeof(names[0]) && names[status] != NULL)
		return names[status];
	return "unknown";
}

struct ibv_context *uiw_dev_context(struct uiw_dev *d)
{
	if (d->cm_ctx == NULL)
		d->cm_ctx = ibv_open_device(&d->dev);
	return d->cm_ctx;
}

struct ibv_pd *uiw_dev_default_pd(struct uiw_dev *d)
{
	if (d->default_pd == NULL && uiw_dev_context(d) != NULL)
		d->default_pd = ibv_alloc_pd(d->cm_ctx);
	return d->default_pd;
}

int ibv_query_device(struct ibv_context *context, struct ibv_device_attr *a)
{
	UIW_API_LOCK();
	struct uiw_dev *d = ctx_dev(context);

	memset(a, 0, sizeof(*a));
	snprintf(a->fw_ver, sizeof(a->fw_ver), "0.1.0");
	a->node_guid = dev_guid(d);
	a->sys_image_guid = a->node_guid;
	a->vendor_id = 0x756977;   /* "uiw": no vendor a program knows */
	a->vendor_part_id = 1;
	a->max_mr_size = UINT64_MAX;
	a->page_size_cap = 4096;
	a->max_qp = 1 << 16;
	a->max_qp_wr = 4096;
	a->max_sge = UIW_MAX_SGE;
	a->max_sge_rd = 1;
	a->max_cq = 1 << 16;
	a->max_cqe = 1 << 20;
	a->max_mr = (int)d->stags.cap;
	a->max_pd = 1 << 16;
	a->max_qp_rd_atom = UIW_MPA_IRD_ORD_MAX;
	a->max_qp_init_rd_atom = UIW_MPA_IRD_ORD_MAX;
	a->max_res_rd_atom = UIW_MPA_IRD_ORD_MAX << 16;
	/* RFC 7306 atomics, toward peers that announce them too (docs/MPA.md): a post to
	 * any other peer fails at once with EOPNOTSUPP. */
	a->atomic_cap = d->mpa_params.ext & UIW_MPA_EXT_RFC7306 ? IBV_ATOMIC_HCA : IBV_ATOMIC_NONE;
	a->max_srq = 1 << 16;
	a->max_srq_wr = 32768;
	a->max_srq_sge = UIW_MAX_SGE;
	a->max_pkeys = 1;
	a->phys_port_cnt = 1;
	return 0;
}

#undef ibv_query_port
int ibv_query_port(struct ibv_context *context, uint8_t port, struct _compat_ibv_port_attr *compat)
{
	UIW_API_LOCK();
	/* Callers hand in a struct ibv_port_attr (verbs.h's inline ___ibv_query_port). */
	struct ibv_port_attr *a = (struct ibv_port_attr *)(void *)compat;
	struct uiw_dev *d = ctx_dev(context);

	if (port != 1)
		return EINVAL;
	memset(a, 0, sizeof(*a));
	a->state = IBV_PORT_ACTIVE;
	a->max_mtu = IBV_MTU_4096;
	a->active_mtu = d->stack->port.mtu >= 4096 ? IBV_MTU_4096 : d->stack->port.mtu >= 2048 ? IBV_MTU_2048 : IBV_MTU_1024;
	a->gid_tbl_len = 1;
	a->max_msg_sz = UINT32_MAX;
	a->pkey_tbl_len = 1;
	a->phys_state = 5;   /* LinkUp */
	a->link_layer = IBV_LINK_LAYER_ETHERNET;
	return 0;
}

struct ibv_pd *ibv_alloc_pd(struct ibv_context *context)
{
	UIW_API_LOCK();
	struct uiw_pd_v *p = calloc(1, sizeof(*p));

	if (p == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	p->pd.context = context;
	p->pdn = ctx_dev(context)->next_pdn++;
	p->pd.handle = p->pdn;
	return &p->pd;
}

int ibv_dealloc_pd(struct ibv_pd *pd)
{
	UIW_API_LOCK();
	free(pd);
	return 0;
}

#undef ibv_reg_mr
struct ibv_mr *ibv_reg_mr(struct ibv_pd *pd, void *addr, size_t length, int access)
{
	UIW_API_LOCK();
	struct uiw_dev *d = ctx_dev(pd->context);
	struct uiw_mr_v *m = calloc(1, sizeof(*m));
	/* Remote atomic access lets a peer that announced RFC 7306 change the region's
	 * aligned 64-bit words; any other peer's Atomic Request is answered with a Terminate
	 * (unexpected opcode). */
	static const unsigned known = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				      IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC |
				      IBV_ACCESS_RELAXED_ORDERING;

	if (m == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	if (((unsigned)access & ~known) != 0 ||
	    ((access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
	     !(access & IBV_ACCESS_LOCAL_WRITE))) {
		if (((unsigned)access & ~known) != 0)
			UIW_ERR("ibv_reg_mr: access flags 0x%x not provided (memory windows, "
				"zero-based, on-demand paging and the like)", (unsigned)access & ~known);
		else
			UIW_ERR("ibv_reg_mr: remote write or atomic access needs local write "
				"(IBV_ACCESS_LOCAL_WRITE), as the verbs define it");
		free(m);
		errno = EINVAL;
		return NULL;
	}
	m->m = uiw_stag_register(&d->stags, ((struct uiw_pd_v *)pd)->pdn, addr, length,
				 (uintptr_t)addr, (unsigned)access & 15u,
				 uiw_stag_random_key(&d->stags));
	if (m->m == NULL) {
		free(m);
		errno = ENOMEM;
		return NULL;
	}
	/* A NIC that reads frames by DMA sends Sends and Writes from the region itself once
	 * its pages are mapped into the IOMMU (tx_zero_copy, docs/CONFIG.md). */
	if (d->stack->port.tx_dma && d->stack->cfg.tx_zero_copy != 0 && length > 0)
		m->m->dma = uiw_dma_map(addr, length);
	m->mr = (struct ibv_mr){ .context = pd->context, .pd = pd, .addr = addr, .length = length,
				 .handle = m->m->stag, .lkey = m->m->stag, .rkey = m->m->stag };
	return &m->mr;
}

struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova,
				unsigned int access)
{
	UIW_API_LOCK();
	struct ibv_mr *mr = ibv_reg_mr(pd, addr, length, (int)access);

	if (mr != NULL)
		((struct uiw_mr_v *)mr)->m->va = iova;
	return mr;
}

int ibv_dereg_mr(struct ibv_mr *mr)
{
	UIW_API_LOCK();
	struct uiw_mr_v *m = (struct uiw_mr_v *)mr;

	/* Frames still with the NIC keep the mapping until it frees them (uiw_dma.h). */
	if (m->m->dma != NULL)
		uiw_dma_unmap(m->m->dma);
	m->m->dma = NULL;
	uiw_stag_deregister(&ctx_dev(mr->context)->stags, m->m);
	free(m);
	return 0;
}

/* ---- Completion channels and CQs. ---- */

struct ibv_comp_channel *ibv_create_comp_channel(struct ibv_context *context)
{
	UIW_API_LOCK();
	struct uiw_channel *c = calloc(1, sizeof(*c));

	if (c == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	uiw_ring_init(&c->ring, CHANNEL_EVENTS);
	c->ch.context = context;
	c->ch.fd = eventfd(0, EFD_CLOEXEC);
	if (c->ch.fd < 0) {
		free(c);
		return NULL;
	}
	return &c->ch;
}

int ibv_destroy_comp_channel(struct ibv_comp_channel *channel)
{
	UIW_API_LOCK();
	if (channel->refcnt > 0)
		return EBUSY;
	close(channel->fd);
	free(channel);
	return 0;
}

/* The CQ fired: queue it on its channel and make the fd readable. */
static void cq_notify(void *arg, struct uiw_cq *core)
{
	struct uiw_cq_v *c = arg;
	struct uiw_channel *ch = c->ch;
	uint64_t one = 1;

	(void)core;
	if (ch == NULL)
		return;
	bool was_empty;

	pthread_mutex_lock(&uiw_ev_lock);   /* engines may push at once */
	if (uiw_ring_full(&ch->ring)) {
		pthread_mutex_unlock(&uiw_ev_lock);
		return;
	}
	was_empty = uiw_ring_empty(&ch->ring);
	ch->q[uiw_ring_push(&ch->ring)] = &c->cq;
	ch->event_ns = uiw_now_ns();
	pthread_mutex_unlock(&uiw_ev_lock);
	/* Readable while CQs wait: written for the first, read when the last is taken. */
	if (was_empty && write(ch->ch.fd, &one, sizeof(one)) != sizeof(one))
		return;
}

/* A completion found the CQ full: the CQ is in error (its QPs go to error as they
 * complete into it, each with its own IBV_EVENT_QP_FATAL). */
static void cq_overflowed(void *arg, struct uiw_cq *core)
{
	struct uiw_cq_v *c = arg;
	struct ibv_async_event ev = { .element.cq = &c->cq, .event_type = IBV_EVENT_CQ_ERR };

	UIW_WARN("CQ %p overflowed (%u entries): a completion was lost; the CQ is in error",
		 (void *)&c->cq, core->ring.cap);
	async_push(c->cq.context, &ev);
}

struct ibv_cq *ibv_create_cq(struct ibv_context *context, int cqe, void *cq_context,
			     struct ibv_comp_channel *channel, int comp_vector)
{
	UIW_API_LOCK();
	struct uiw_cq_v *c = calloc(1, sizeof(*c));

	(void)comp_vector;
	if (c == NULL || cqe <= 0 || cqe > (1 << 20) ||
	    uiw_cq_init(&c->core, (uint32_t)cqe) != 0) {
		free(c);
		errno = cqe <= 0 || cqe > (1 << 20) ? EINVAL : ENOMEM;
		return NULL;
	}
	c->cq = (struct ibv_cq){ .context = context, .channel = channel, .cq_context = cq_context,
				 .cqe = cqe };
	c->ch = (struct uiw_channel *)channel;
	c->core.notify = cq_notify;
	c->core.overflowed = cq_overflowed;
	c->core.notify_arg = c;
	pthread_mutex_init(&c->cq.mutex, NULL);
	pthread_cond_init(&c->cq.cond, NULL);
	if (channel != NULL)
		channel->refcnt++;
	return &c->cq;
}

int ibv_destroy_cq(struct ibv_cq *cq)
{
	UIW_API_LOCK();
	struct uiw_cq_v *c = (struct uiw_cq_v *)cq;

	if (cq->channel != NULL)
		cq->channel->refcnt--;
	uiw_cq_fini(&c->core);
	free(c);
	return 0;
}

unsigned long uiw_cq_spin_hits, uiw_cq_spin_misses, uiw_cq_spin_cold;

/*
 * A blocking ibv_get_cq_event() first runs the stack in the calling thread for up to
 * cq_spin_us, as a program that polls its CQ does, and sleeps only if the event has not
 * come by then. Asleep, the event waited for the progress thread's pass, a wake-up
 * through the kernel and a free core: fio's rdma engine, which takes every completion
 * through its channel, saw 9 µs at the median for one 4 KiB Write at a time that way,
 * and 2.2 µs with the spin (docs/DROPIN.md).
 *
 * Signals are blocked while the thread spins, and its sleep after the spin takes the
 * caller's mask back inside ppoll(): a signal that came during the spin is delivered
 * there and ends the wait as it would end a kernel read() (signal_ends_wait()). Handled
 * in the spin instead, it would leave the wait to sleep on for an event that may never
 * come (qperf ends its tests with SIGALRM). A signal so waits cq_spin_us at most.
 *
 * A spin that ran out makes the channel cold: its waits sleep at once (a program that
 * blocks for long spells burns no core on them) until the event of one of them comes
 * within cq_spin_us. Engine threads (engines > 1) run their engines themselves: no spin
 * there.
 */
struct cq_wait {
	uint64_t t0;        /* a cold wait's start, to see whether a spin would have served it */
	unsigned spin_us;
	bool timed;
	bool eagain;        /* a non-blocking fd, and the pass made found nothing */
	bool masked;        /* signals blocked: @a old is the caller's mask */
	sigset_t old;
};

/* One pass for a spinning wait, the lock held for it only (as ibv_poll_cq() holds it).
 * @return SPIN_HAD when @p ch had an event already (no pass), SPIN_GOT when the pass
 * brought one, else 0. */
enum { SPIN_HAD = 1, SPIN_GOT };

static int spin_pass(struct uiw_channel *ch)
{
	UIW_API_LOCK_ONE(NULL);

	if (!uiw_ring_empty(&ch->ring))
		return SPIN_HAD;
	uiw_inline_pass();
	return uiw_ring_empty(&ch->ring) ? 0 : SPIN_GOT;
}

static void cq_spin(struct uiw_channel *ch, struct cq_wait *w)
{
	sigset_t all;
	uint64_t end;
	int fl = -1, got;

	if (!uiw_threaded || !uiw_progress_thread ||
	    __atomic_load_n(&uiw_engine_threads, __ATOMIC_ACQUIRE) > 0)
		return;
	w->spin_us = ctx_dev(ch->ch.context)->stack->cfg.cq_spin_us;
	if (w->spin_us == 0)
		return;
	if (__atomic_load_n(&ch->spin_cold, __ATOMIC_RELAXED)) {
		w->timed = true;
		w->t0 = uiw_now_ns();
		__atomic_fetch_add(&uiw_cq_spin_cold, 1, __ATOMIC_RELAXED);
		return;
	}
	/* An event there, or after one pass (most often): no system call. A non-blocking
	 * fd: one pass, then EAGAIN, as before. */
	got = spin_pass(ch);
	if (got == 0 && uiw_fd_nonblock(ch->ch.fd, &fl)) {
		w->eagain = true;   /* that pass was the one uiw_wait_some() would make */
		return;
	}
	if (got == 0) {
		sigfillset(&all);
		pthread_sigmask(SIG_BLOCK, &all, &w->old);
		w->masked = true;
		end = uiw_now_ns() + (uint64_t)w->spin_us * 1000u;
		while ((got = spin_pass(ch)) == 0 && uiw_now_ns() < end)
			;
	}
	if (got == SPIN_GOT)
		__atomic_fetch_add(&uiw_cq_spin_hits, 1, __ATOMIC_RELAXED);
	if (got != 0)
		return;
	__atomic_fetch_add(&uiw_cq_spin_misses, 1, __ATOMIC_RELAXED);
	__atomic_store_n(&ch->spin_cold, true, __ATOMIC_RELAXED);
}

static int cq_event_take(struct uiw_channel *ch, struct ibv_cq **cq, void **cq_context,
			 const sigset_t *mask, uint64_t *event_ns)
{
	uint64_t v;
	int fl = -1;

	UIW_API_LOCK();

	/* Progress is made here, or by the progress thread while this one sleeps on the fd
	 * (a non-blocking fd: one pass, then EAGAIN). The fd's flags are asked for only when
	 * there is nothing to take. */
	while (uiw_ring_empty(&ch->ring))
		if (!uiw_wait_some_masked(ch->ch.fd, uiw_fd_nonblock(ch->ch.fd, &fl), mask) &&
		    uiw_ring_empty(&ch->ring))
			return -1;   /* errno EAGAIN, or EINTR: a signal */
	*cq = ch->q[uiw_ring_pop(&ch->ring)];
	*cq_context = (*cq)->cq_context;
	*event_ns = ch->event_ns;
	if (uiw_ring_empty(&ch->ring) && read(ch->ch.fd, &v, sizeof(v)) < 0)
		v = 0;
	return 0;
}

int ibv_get_cq_event(struct ibv_comp_channel *channel, struct ibv_cq **cq, void **cq_context)
{
	struct uiw_channel *ch = (struct uiw_channel *)channel;
	struct cq_wait w = { .masked = false };
	uint64_t event_ns = 0;
	int rc, err;

	cq_spin(ch, &w);
	if (w.eagain) {
		uiw_progress_kick(false);   /* as uiw_wait_some() does for a non-blocking call */
		errno = EAGAIN;
		return -1;
	}
	rc = cq_event_take(ch, cq, cq_context, w.masked ? &w.old : NULL, &event_ns);
	err = errno;
	/* A cold wait a spin would have served: its event came within cq_spin_us. Not the
	 * wait's own length: that has the wake-up in it, which on a busy machine alone
	 * took longer and kept the channel cold. */
	if (w.timed && rc == 0 && (int64_t)(event_ns - w.t0) <= (int64_t)w.spin_us * 1000)
		__atomic_store_n(&ch->spin_cold, false, __ATOMIC_RELAXED);
	if (w.masked)
		pthread_sigmask(SIG_SETMASK, &w.old, NULL);   /* a signal still pending: now */
	errno = err;
	return rc;
}

void ibv_ack_cq_events(struct ibv_cq *cq, unsigned int nevents)
{
	UIW_API_LOCK();
	cq->comp_events_completed += nevents;
}

static enum ibv_wc_status wc_status(enum uiw_wc_status s)
{
	switch (s) {
	case UIW_WC_SUCCESS: return IBV_WC_SUCCESS;
	case UIW_WC_LOC_LEN_ERR: return IBV_WC_LOC_LEN_ERR;
	case UIW_WC_LOC_PROT_ERR: return IBV_WC_LOC_PROT_ERR;
	case UIW_WC_WR_FLUSH_ERR: return IBV_WC_WR_FLUSH_ERR;
	case UIW_WC_REM_ACCESS_ERR: return IBV_WC_REM_ACCESS_ERR;
	case UIW_WC_REM_OP_ERR: return IBV_WC_REM_OP_ERR;
	case UIW_WC_LOC_QP_OP_ERR: return IBV_WC_LOC_QP_OP_ERR;
	default: return IBV_WC_FATAL_ERR;
	}
}

static int op_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc)
{
	struct uiw_cq_v *c = (struct uiw_cq_v *)cq;
	static const enum ibv_wc_opcode ops[] = { [UIW_WC_SEND] = IBV_WC_SEND,
						  [UIW_WC_RDMA_WRITE] = IBV_WC_RDMA_WRITE,
						  [UIW_WC_RDMA_READ] = IBV_WC_RDMA_READ,
						  [UIW_WC_RECV] = IBV_WC_RECV,
						  [UIW_WC_RECV_RDMA_WITH_IMM] = IBV_WC_RECV_RDMA_WITH_IMM,
						  [UIW_WC_FETCH_ADD] = IBV_WC_FETCH_ADD,
						  [UIW_WC_COMP_SWAP] = IBV_WC_COMP_SWAP };
	int k = 0;

	UIW_API_LOCK_ONE(NULL);   /* the CQ has its own lock; the pass runs unthreaded engines */

	if (n < 0)
		return -1;
	if (!uiw_cq_pending(&c->core))
		uiw_inline_pass();   /* one bounded pass: the caller's poll drives the engine */
	else
		uiw_inline_mark();   /* no pass, but the program polls all the same */
	/* Taken a batch at a time: one lock a batch. */
	while (k < n) {
		struct uiw_wc ws[16];
		unsigned got = uiw_cq_poll(&c->core, ws, (unsigned)RTE_MIN(n - k, 16));

		for (unsigned i = 0; i < got; i++, k++) {
			const struct uiw_wc *w = &ws[i];

			wc[k] = (struct ibv_wc){ .wr_id = w->wr_id, .status = wc_status(w->status),
						 .opcode = ops[w->op], .byte_len = w->byte_len,
						 .qp_num = w->qp_num,
						 .wc_flags = w->with_inv ? IBV_WC_WITH_INV
							     : w->with_imm ? IBV_WC_WITH_IMM : 0 };
			if (w->with_inv)
				wc[k].invalidated_rkey = w->inv_stag;
			else if (w->with_imm)
				wc[k].imm_data = w->imm;
		}
		if (got < 16)
			break;
	}
	return k;
}

static int op_req_notify_cq(struct ibv_cq *cq, int solicited_only)
{
	UIW_API_LOCK_ONE(NULL);   /* arming takes the CQ's own lock */
	uiw_cq_arm(&((struct uiw_cq_v *)cq)->core, solicited_only != 0);
	return 0;
}

/* ---- Queue pairs. ---- */

/*
 * The QP went to ERROR. A Terminate (either way) is an asynchronous event: one we sent for
 * a protection error (RDMAP Remote Protection, DDP Tagged Buffer: RFC 5040 §4.8, RFC 5041
 * §7.2) is an access violation, any other sent or received a fatal error. A close or a reset is the connection
 * manager's to report (RDMA_CM_EVENT_DISCONNECTED).
 */
/* The last few reasons QPs went to error, for the exit report (UIWARP_STATS). */
#define QP_WHY_KEEP 8
static struct {
	uint32_t qp_num;
	char why[96];
} qp_whys[QP_WHY_KEEP];
static uint64_t qp_whys_n;

void uiw_verbs_print_qp_errors(FILE *f)
{
	uint64_t first = qp_whys_n > QP_WHY_KEEP ? qp_whys_n - QP_WHY_KEEP : 0;

	if (qp_whys_n == 0)
		return;
	fprintf(f, "  QPs that went to error: %lu; the last %lu:\n", (unsigned long)qp_whys_n,
		(unsigned long)(qp_whys_n - first));
	for (uint64_t i = first; i < qp_whys_n; i++)
		fprintf(f, "    qp %u: %s\n", qp_whys[i % QP_WHY_KEEP].qp_num,
			qp_whys[i % QP_WHY_KEEP].why);
}

static void qp_error_event(void *arg, struct uiw_qp *core, const char *why)
{
	struct uiw_qp_v *q = arg;
	const struct uiw_term_info *t = uiw_qp_term_tx(core);
	struct ibv_async_event ev = { .element.qp = &q->qp, .event_type = IBV_EVENT_QP_FATAL };

	pthread_mutex_lock(&uiw_ev_lock);   /* engines may fail QPs at once */
	qp_whys[qp_whys_n % QP_WHY_KEEP].qp_num = q->qp.qp_num;
	snprintf(qp_whys[qp_whys_n % QP_WHY_KEEP].why, sizeof(qp_whys[0].why), "%s", why);
	qp_whys_n++;
	pthread_mutex_unlock(&uiw_ev_lock);
	if (t->valid && (t->layer == UIW_TERM_LAYER_RDMAP || t->layer == UIW_TERM_LAYER_DDP) &&
	    t->etype == 1)
		ev.event_type = IBV_EVENT_QP_ACCESS_ERR;
	else if (!t->valid && !uiw_qp_term_rx(core)->valid)
		return;
	async_push(q->qp.context, &ev);
}

static const struct uiw_qp_events qp_events = { .error = qp_error_event };

static int inline_room(struct uiw_qp_v *q)
{
	if (q->inl == NULL)
		q->inl = malloc(((size_t)q->sq->mask + 1) * UIW_MAX_INLINE);
	return q->inl != NULL ? 0 : ENOMEM;
}

struct ibv_qp *ibv_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr)
{
	UIW_API_LOCK();
	struct uiw_dev *d = ctx_dev(pd->context);
	struct uiw_qp_v *q;

	if (attr->qp_type != IBV_QPT_RC || attr->send_cq == NULL || attr->recv_cq == NULL ||
	    attr->cap.max_send_sge > UIW_MAX_SGE || attr->cap.max_inline_data > UIW_MAX_INLINE ||
	    attr->cap.max_recv_sge > UIW_MAX_SGE || attr->cap.max_send_wr > 32768 ||
	    attr->cap.max_recv_wr > 32768) {
		errno = EINVAL;
		return NULL;
	}
	q = calloc(1, sizeof(*q));
	if (q == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	struct uiw_qp_attr a = {
		.qp_num = d->next_qpn++, .pd = ((struct uiw_pd_v *)pd)->pdn,
		.sq_size = attr->cap.max_send_wr ? attr->cap.max_send_wr : 1,
		.rq_size = attr->cap.max_recv_wr ? attr->cap.max_recv_wr : 1,
		.send_cq = &((struct uiw_cq_v *)attr->send_cq)->core,
		.recv_cq = &((struct uiw_cq_v *)attr->recv_cq)->core, .stags = &d->stags,
		.srq = attr->srq != NULL ? &((struct uiw_srq_v *)attr->srq)->core : NULL,
		.events = &qp_events, .event_arg = q,
	};
	if (uiw_qp_create(&q->core, &a) != 0) {
		free(q);
		errno = ENOMEM;
		return NULL;
	}
	q->dev = d;
	uiw_qp_set_recv_wait(q->core, d->stack->cfg.recv_wait_ms);
	q->sq = uiw_qp_sq(q->core);
	q->sig_all = attr->sq_sig_all != 0;
	q->qp = (struct ibv_qp){ .context = pd->context, .qp_context = attr->qp_context, .pd = pd,
				 .send_cq = attr->send_cq, .recv_cq = attr->recv_cq, .srq = attr->srq,
				 .handle = a.qp_num, .qp_num = a.qp_num, .state = IBV_QPS_INIT,
				 .qp_type = IBV_QPT_RC };
	pthread_mutex_init(&q->qp.mutex, NULL);
	pthread_cond_init(&q->qp.cond, NULL);
	/* Every QP takes inline data (siw's do, whatever was asked); the room for it is made
	 * now if asked for, else at the first inline post. */
	if (attr->cap.max_inline_data > 0 && inline_room(q) != 0) {
		ibv_destroy_qp(&q->qp);
		errno = ENOMEM;
		return NULL;
	}
	attr->cap.max_inline_data = UIW_MAX_INLINE;
	attr->cap.max_send_wr = q->sq->cap;
	attr->cap.max_recv_wr = attr->srq != NULL ? 0 : a.rq_size;   /* the SRQ's receives */
	q->cap = attr->cap;
	q->next = d->qps;
	if (d->qps != NULL)
		d->qps->pprev = &q->next;
	d->qps = q;
	q->pprev = &d->qps;
	return &q->qp;
}

struct uiw_qp *uiw_verbs_qp_core(struct ibv_qp *qp)
{
	return ((struct uiw_qp_v *)qp)->core;
}

/* The counters of destroyed QPs, and their sum with the live ones (for the exit report). */
static uint64_t gone_qps[UIW_RDMAP_C__COUNT], qp_totals[UIW_RDMAP_C__COUNT];

static void qp_counters_add(uint64_t *sum, const struct uiw_qp_v *q)
{
	const uint64_t *c = uiw_qp_counters(q->core);

	for (unsigned i = 0; i < UIW_RDMAP_C__COUNT; i++)
		sum[i] += c[i];
}

const uint64_t *uiw_verbs_rdmap_totals(void)
{
	memcpy(qp_totals, gone_qps, sizeof(qp_totals));
	for (unsigned i = 0; i < ndevs; i++)
		for (const struct uiw_qp_v *q = devs[i]->qps; q != NULL; q = q->next)
			qp_counters_add(qp_totals, q);
	return qp_totals;
}

/* One QP of the listing: what it is connected to, how, its queues, and what it did. */
void uiw_verbs_qp_tcp(struct ibv_qp *qp, struct uiw_qp_tcp *out)
{
	UIW_API_LOCK();
	const struct uiw_mpa_conn *conn = uiw_qp_conn(((struct uiw_qp_v *)qp)->core);

	memset(out, 0, sizeof(*out));
	if (conn == NULL)
		return;
	const struct uiw_tcp_conn *t = uiw_mpa_tcp(conn);

	if (t == NULL)
		return;
	out->up = true;
	out->all_acked = uiw_tcp_acked(t, uiw_tcp_queued_end(t));
	out->state = (int)uiw_tcp_state(t);
	out->mss = uiw_tcp_mss(t);
	uiw_tcp_conn_timing(t, &out->srtt_us, &out->rttvar_us, &out->rto_us, &out->cwnd);
	out->retransmits = uiw_tcp_conn_stats(t)->retransmits;
}

/* A CQ of a QP: the completions waiting in it, whether it is armed, and the events its
 * channel holds: whether a program asleep in ibv_get_cq_event() can be woken (an event
 * comes only for a completion after the arm; docs/DROPIN.md). */
static void print_cq(FILE *f, const char *which, const struct ibv_cq *cq)
{
	const struct uiw_cq_v *c = (const struct uiw_cq_v *)cq;

	if (cq == NULL)
		return;
	fprintf(f, " %s %u/%u%s", which, uiw_ring_count(&c->core.ring), c->core.ring.cap,
		!c->core.armed ? "" : c->core.solicited_only ? " armed (solicited)" : " armed");
	if (c->ch != NULL)
		fprintf(f, " (channel: %u events)", uiw_ring_count(&c->ch->ring));
}

static void print_qp(FILE *f, const struct uiw_qp_v *q)
{
	const struct uiw_qp *c = q->core;
	const struct uiw_mpa_conn *conn = uiw_qp_conn(c);
	const uint64_t *k = uiw_qp_counters(c);
	struct uiw_qp_depths d;

	fprintf(f, "qp %u %s engine %u %s", q->qp.qp_num, q->dev->dev.name, q->eng,
		uiw_qp_state_name(uiw_qp_state(c)));
	if (conn != NULL) {
		const struct uiw_mpa_info *m = uiw_mpa_info(conn);
		const struct uiw_tcp_conn *t = uiw_mpa_tcp(conn);
		uint32_t la, ra;
		uint16_t lp, rp;

		uiw_tcp_conn_addrs(t, &la, &lp, &ra, &rp);
		fprintf(f, " %u.%u.%u.%u:%u %s %u.%u.%u.%u:%u tcp %s mpa rev %u%s%s%s%s%s",
			la >> 24, la >> 16 & 255, la >> 8 & 255, la & 255, lp,
			m->initiator ? "->" : "<-", ra >> 24, ra >> 16 & 255, ra >> 8 & 255, ra & 255,
			rp, uiw_tcp_state_name(uiw_tcp_state(t)), m->rev, m->crc ? " crc" : "",
			m->markers_tx || m->markers_rx ? " markers" : "", m->p2p ? " p2p" : "",
			uiw_qp_ext(c) & UIW_MPA_EXT_RFC7306 ? " rfc7306" : "",
			uiw_qp_ext(c) & UIW_MPA_EXT_SEND_IMM ? " send_imm" : "");
		const struct uiw_tcp_conn_stats *st = uiw_tcp_conn_stats(t);

		uint32_t srtt, rttvar, rto, cwnd;
		struct uiw_tcp_conn_sending snd;

		fprintf(f, "\n  tcp bytes in %" PRIu64 " out %" PRIu64 " retransmits %" PRIu64
			" rto %" PRIu64, st->bytes_in, st->bytes_out, st->retransmits, st->rto_expiries);
		uiw_tcp_conn_timing(t, &srtt, &rttvar, &rto, &cwnd);
		uiw_tcp_conn_sending(t, &snd);
		fprintf(f, "\n  tcp srtt %u us rttvar %u us timeout %u us cwnd %u wnd %u flight %u "
			"sq %u share %u%s", srtt, rttvar, rto, cwnd, snd.snd_wnd, snd.in_flight,
			snd.sq_mbufs, snd.share, snd.stalled ? " stalled" : "");
	}
	uiw_qp_depths(c, &d);
	fprintf(f, "\n  queues sq %u/%u rq %u/%u%s orq %u/%u irq %u/%u\n  cqs", d.sq, d.sq_cap,
		d.rq, d.rq_cap, d.rq_cap == 0 ? " (srq)" : "", d.orq, d.ord, d.irq, d.ird);
	print_cq(f, "send", q->qp.send_cq);
	if (q->qp.recv_cq != q->qp.send_cq)
		print_cq(f, "recv", q->qp.recv_cq);
	else
		fprintf(f, " (receives too)");
	fprintf(f, "\n  counters");
	for (unsigned i = 0; i < UIW_RDMAP_C__COUNT; i++)
		if (k[i] != 0)
			fprintf(f, " %s %" PRIu64, uiw_rdmap_counter_desc[i].name, k[i]);
	fprintf(f, "\n");
	if (uiw_qp_state(c) != UIW_QPS_RTS && uiw_qp_state(c) != UIW_QPS_IDLE &&
	    uiw_qp_why(c)[0] != '\0')
		fprintf(f, "  why %s\n", uiw_qp_why(c));
}

void (*uiw_verbs_status_more)(FILE *f);

void uiw_verbs_print_qps(FILE *f)
{
	unsigned n = 0;

	for (unsigned i = 0; i < ndevs; i++)
		for (const struct uiw_qp_v *q = devs[i]->qps; q != NULL; q = q->next)
			n++;
	fprintf(f, "qps %u\n", n);
	for (unsigned i = 0; i < ndevs; i++)
		for (const struct uiw_qp_v *q = devs[i]->qps; q != NULL; q = q->next)
			print_qp(f, q);
}

int ibv_destroy_qp(struct ibv_qp *qp)
{
	UIW_API_LOCK();
	struct uiw_qp_v *q = (struct uiw_qp_v *)qp;

	if (q->cm != NULL) {
		struct uiw_mpa_conn *conn = uiw_qp_conn(q->core);

		q->cm->qp = NULL;   /* the id forgets it: its connection must not reach a freed QP */
		/* The connection is closed, not reset: what was handed to TCP still goes, then the
		 * FIN (Linux siw does the same when a connected QP is destroyed). The id owns the
		 * connection and reports its end. */
		if (conn != NULL) {
			uiw_qp_detach(q->core);
			uiw_mpa_close(conn);
		}
	}
	/* The doorbell list holds only QPs with work just posted: short, walked only then. */
	for (struct uiw_qp_v **p = &q->dev->eng[q->eng].kick; q->kicked && *p != NULL; p = &(*p)->kick_next)
		if (*p == q) {
			*p = q->kick_next;
			break;
		}
	/* Unlinked in O(1): tearing down 10,000 QPs walked the list 10,000 times. */
	if (q->pprev != NULL) {
		*q->pprev = q->next;
		if (q->next != NULL)
			q->next->pprev = q->pprev;
	}
	qp_counters_add(gone_qps, q);
	async_forget(qp->context, qp);
	uiw_qp_destroy(q->core);
	uiw_wr_batch_free(q);
	free(q->inl);
	free(q);
	return 0;
}

int ibv_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask)
{
	UIW_API_LOCK();
	/* iWARP QPs move with their connection (rdma_cm); an application may only take one
	 * to ERROR. A QP no rdma_cm id holds has no connection to move with: connecting it
	 * by hand (the QP numbers exchanged out of band, as ibv_rc_pingpong does on
	 * InfiniBand) does not exist on iWARP, so RTR and RTS are refused at once. */
	if ((mask & IBV_QP_STATE) && (attr->qp_state == IBV_QPS_RTR || attr->qp_state == IBV_QPS_RTS) &&
	    ((struct uiw_qp_v *)qp)->cm == NULL) {
		UIW_ERR("ibv_modify_qp: qp %u to %s: an iWARP QP is connected by rdma_cm "
			"(rdma_create_qp on an id, then rdma_connect or rdma_accept); a QP made "
			"with ibv_create_qp alone cannot be brought up by hand", qp->qp_num,
			attr->qp_state == IBV_QPS_RTR ? "RTR" : "RTS");
		errno = EINVAL;
		return EINVAL;
	}
	if ((mask & IBV_QP_STATE) && attr->qp_state == IBV_QPS_ERR)
		uiw_qp_terminate(((struct uiw_qp_v *)qp)->core, UIW_TERM_LAYER_RDMAP, 0, 0xff,
				 "moved to error by the application");
	if (mask & IBV_QP_STATE)
		qp->state = attr->qp_state;
	return 0;
}

int ibv_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask, struct ibv_qp_init_attr *init)
{
	UIW_API_LOCK();
	static const enum ibv_qp_state map[] = { [UIW_QPS_IDLE] = IBV_QPS_INIT, [UIW_QPS_RTS] = IBV_QPS_RTS,
						 [UIW_QPS_CLOSING] = IBV_QPS_SQD,
						 [UIW_QPS_TERMINATE] = IBV_QPS_SQE,
						 [UIW_QPS_ERROR] = IBV_QPS_ERR };

	(void)mask;
	memset(attr, 0, sizeof(*attr));
	memset(init, 0, sizeof(*init));
	attr->qp_state = map[uiw_qp_state(((struct uiw_qp_v *)qp)->core)];
	attr->cur_qp_state = attr->qp_state;
	init->qp_type = IBV_QPT_RC;
	init->send_cq = qp->send_cq;
	init->recv_cq = qp->recv_cq;
	init->cap = attr->cap = ((struct uiw_qp_v *)qp)->cap;
	init->sq_sig_all = ((struct uiw_qp_v *)qp)->sig_all;
	init->srq = qp->srq;
	init->qp_context = qp->qp_context;
	return 0;
}

/* The SGEs of a work request, each within a region of this PD with @p access. */
static inline int map_sges_pd(struct uiw_dev *d, struct ibv_pd *pd, const struct ibv_sge *in,
			      int n, struct uiw_sge *out, unsigned access)
{
	if (n < 0 || n > UIW_MAX_SGE)
		return EINVAL;
	for (int i = 0; i < n; i++) {
		uint64_t a = in[i].addr;

		if (!uiw_stag_local_ok(&d->stags, in[i].lkey, ((struct uiw_pd_v *)pd)->pdn,
				       (uintptr_t)a, in[i].length, access))
			return EINVAL;
		out[i] = (struct uiw_sge){ (uint8_t *)(uintptr_t)a, in[i].length };
	}
	return 0;
}

static inline int map_sges(struct uiw_qp_v *q, const struct ibv_sge *in, int n, struct uiw_sge *out,
		    unsigned access)
{
	return map_sges_pd(q->dev, q->qp.pd, in, n, out, access);
}

/*
 * IBV_SEND_INLINE: the SGEs' bytes (their lkeys ignored, as the verbs API has it) are
 * copied into the slot's inline room, which the WR then sends from; the program may reuse
 * its buffers as soon as the post returns. @return 0, EINVAL for more than UIW_MAX_INLINE
 * bytes or a Read, ENOMEM without room.
 */
static int fill_inline(struct uiw_qp_v *q, const struct ibv_send_wr *wr, struct uiw_send_wr *w)
{
	uint8_t *at;
	size_t n = 0;

	if (uiw_wr_op_orq(w->op) || inline_room(q) != 0)
		return uiw_wr_op_orq(w->op) ? EINVAL : ENOMEM;
	at = q->inl + (size_t)(q->sq->tail & q->sq->mask) * UIW_MAX_INLINE;
	for (int i = 0; i < wr->num_sge; i++) {
		const struct ibv_sge *g = &wr->sg_list[i];

		if (g->length > UIW_MAX_INLINE - n)
			return EINVAL;
		memcpy(at + n, (const void *)(uintptr_t)g->addr, g->length);
		n += g->length;
	}
	w->sg[0] = (struct uiw_sge){ .addr = at, .len = (uint32_t)n };
	w->nsge = n > 0 ? 1 : 0;
	w->lkeys = false;
	return 0;
}

/* A WR of a kind iWARP (RFC 5040) lacks: said once per kind, as the post fails. */
static void refused_opcode(enum ibv_wr_opcode op)
{
	static uint32_t said;   /* a bit per opcode below 32 */
	const char *what = op == IBV_WR_LOCAL_INV ? "local invalidation"
			   : op == IBV_WR_BIND_MW ? "a memory window" : "this kind of work request";

	if ((unsigned)op < 32 && (__atomic_fetch_or(&said, 1u << op, __ATOMIC_RELAXED) & (1u << op)))
		return;
	UIW_ERR("ibv_post_send: opcode %d refused (EINVAL): %s is not provided; iWARP carries "
		"Send, Send with Invalidate, RDMA Write and RDMA Read, and between uiwarp peers "
		"RDMA Write and Send with immediate data and atomics", (int)op, what);
}

/* RFC 7306 work requests, or Send with immediate data, on a QP whose peer did not
 * announce them: said once for each. */
static int refused_ext(const struct uiw_qp_v *q, bool send_imm)
{
	static int said[2];

	if (__atomic_exchange_n(&said[send_imm], 1, __ATOMIC_RELAXED))
		return EOPNOTSUPP;
	if (send_imm)
		UIW_ERR("ibv_post_send: qp %u: Send with immediate data refused (EOPNOTSUPP): the "
			"peer did not announce it in its MPA private data (it is not uiwarp, or runs "
			"with rfc7306=0 or send_imm=0); iWARP has no Send with immediate data",
			q->qp.qp_num);
	else
		UIW_ERR("ibv_post_send: qp %u: immediate data and atomics (RFC 7306) refused "
			"(EOPNOTSUPP): the peer did not announce them in its MPA private data "
			"(it is not uiwarp, or runs with rfc7306=0)", q->qp.qp_num);
	return EOPNOTSUPP;
}

/* RFC 7306 work requests (Write with immediate data, fetch-and-add, compare-and-swap) and
 * uiwarp's Send with immediate data. */
static int fill_ext(struct uiw_qp_v *q, const struct ibv_send_wr *wr, struct uiw_send_wr *w)
{
	bool se = (wr->send_flags & IBV_SEND_SOLICITED) != 0;

	if (wr->opcode == IBV_WR_SEND_WITH_IMM) {
		if (!(uiw_qp_ext(q->core) & UIW_MPA_EXT_SEND_IMM))
			return refused_ext(q, true);
		w->op = UIW_WR_SEND_IMM;
		w->imm = wr->imm_data;
		w->imm_se = se;
		return 0;
	}
	if (!(uiw_qp_ext(q->core) & UIW_MPA_EXT_RFC7306))
		return refused_ext(q, false);
	if (wr->opcode == IBV_WR_RDMA_WRITE_WITH_IMM) {
		w->op = UIW_WR_WRITE_IMM;
		w->imm = wr->imm_data;
		w->imm_se = se;
		return 0;
	}
	/* The verbs: one SGE of 8 octets for the original value, no inline data. */
	if (wr->num_sge != 1 || wr->sg_list[0].length != 8 || (wr->send_flags & IBV_SEND_INLINE))
		return EINVAL;
	w->op = wr->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD ? UIW_WR_FETCH_ADD : UIW_WR_CMP_SWAP;
	w->rkey = wr->wr.atomic.rkey;
	w->compare_add = wr->wr.atomic.compare_add;
	w->swap = wr->wr.atomic.swap;
	return 0;
}

/*
 * Fills the send queue slot @p w from @p wr. @return 0, or an errno for a WR no QP can
 * take (an opcode iWARP lacks, too many SGEs, a Read with other than one SGE or inline,
 * inline data beyond UIW_MAX_INLINE).
 */
static int fill_send(struct uiw_qp_v *q, const struct ibv_send_wr *wr, struct uiw_send_wr *w)
{
	/* The SE forms sit two above the plain ones in enum uiw_wr_op (asked for by the Sends
	 * alone: not on a Write's path). */
	_Static_assert(UIW_WR_SEND_SE == UIW_WR_SEND + 2 && UIW_WR_SEND_SE_INV == UIW_WR_SEND_INV + 2,
		       "enum uiw_wr_op: SE forms two above the plain ones");
#define SEND_SE(wr) (((wr)->send_flags & IBV_SEND_SOLICITED) ? 2u : 0u)

	/* Used by Write, Read and the atomics, whose remote address sits where the others'
	 * does; their rkey sits elsewhere, and fill_ext() takes it from there. Taken for every
	 * opcode: no test on the path of all. */
	_Static_assert(offsetof(struct ibv_send_wr, wr.rdma.remote_addr) ==
			       offsetof(struct ibv_send_wr, wr.atomic.remote_addr),
		       "struct ibv_send_wr: remote_addr at one place for RDMA and atomics");
	w->rkey = wr->wr.rdma.rkey;
	w->remote_addr = wr->wr.rdma.remote_addr;
	switch (wr->opcode) {
	case IBV_WR_SEND: w->op = (enum uiw_wr_op)(UIW_WR_SEND + SEND_SE(wr)); break;
	case IBV_WR_SEND_WITH_INV:
		w->op = (enum uiw_wr_op)(UIW_WR_SEND_INV + SEND_SE(wr));
		w->inv_stag = wr->invalidate_rkey;
		break;
	case IBV_WR_RDMA_WRITE: w->op = UIW_WR_WRITE; break;
	case IBV_WR_RDMA_READ:
		if (wr->num_sge != 1)
			return EINVAL;
		w->op = UIW_WR_READ;
		w->sink_stag = wr->sg_list[0].lkey;
		w->sink_to = wr->sg_list[0].addr;
		break;
	case IBV_WR_RDMA_WRITE_WITH_IMM:
	case IBV_WR_SEND_WITH_IMM:
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
	case IBV_WR_ATOMIC_CMP_AND_SWP: {
		int rc = fill_ext(q, wr, w);

		if (rc != 0)
			return rc;
		break;
	}
	default:   /* no memory windows or local invalidation */
		refused_opcode(wr->opcode);
		return EINVAL;
	}
	if ((unsigned)wr->num_sge > UIW_MAX_SGE)   /* a negative count too */
		return EINVAL;
	if (wr->send_flags & IBV_SEND_INLINE) {
		int rc = fill_inline(q, wr, w);

		if (rc != 0)
			return rc;
	} else {
		/* The lkeys are checked when the WR starts (a bad one completes with
		 * IBV_WC_LOC_PROT_ERR), as siw and RNICs do: posting stays short. */
		const struct ibv_sge *g = wr->sg_list;

		if (wr->num_sge == 1) {   /* most work requests: no loop */
			w->sg[0].addr = (uint8_t *)(uintptr_t)g->addr;
			w->sg[0].len = g->length;
			w->sg[0].lkey = g->lkey;
		} else {
			for (int i = 0; i < wr->num_sge; i++) {
				w->sg[i].addr = (uint8_t *)(uintptr_t)g[i].addr;
				w->sg[i].len = g[i].length;
				w->sg[i].lkey = g[i].lkey;
			}
		}
		w->lkeys = true;
		w->nsge = (unsigned)wr->num_sge;
	}
	w->wr_id = wr->wr_id;
	w->signaled = q->sig_all | ((wr->send_flags & IBV_SEND_SIGNALED) != 0);
	return 0;
}
#undef SEND_SE

/*
 * The fast path: each WR is written straight into the send queue and the QP goes on its
 * device's doorbell list; the next progress pass (ibv_poll_cq() and the other waits) sends.
 * @p whole: a WR that cannot be taken takes back those before it (nothing has been sent:
 * sending needs the lock this call holds), for ibv_wr_complete().
 */
static int post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad, bool whole)
{
	struct uiw_qp_v *q = (struct uiw_qp_v *)qp;
	UIW_API_LOCK_ONE(uiw_eng_lock(&q->dev->eng[q->eng]));
	/* Held in a local: the stores through each slot could otherwise be q->sq for all the
	 * compiler knows, and it would load it again after them. */
	struct uiw_sq *sq = q->sq;
	uint32_t first = sq->tail;
	int rc = 0;

	for (; wr != NULL; wr = wr->next) {
		struct uiw_sq_entry *e = uiw_sq_slot(sq);

		if (e == NULL) {
			rc = ENOMEM;
			break;
		}
		rc = fill_send(q, wr, &e->wr);
		if (rc != 0)
			break;
		uiw_sq_commit(sq, e);
	}
	if (rc != 0) {
		*bad = wr;
		if (whole)
			sq->tail = first;
	}
	if (sq->tail != first && !q->kicked && uiw_qp_posted(q->core)) {
		struct uiw_eng *g = &q->dev->eng[q->eng];

		q->kicked = true;
		q->kick_next = g->kick;
		g->kick = q;
		eng_wake(g);
	}
	return rc;
}

static int op_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	return post_send(qp, wr, bad, false);
}

int uiw_verbs_post_send_all(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	return post_send(qp, wr, bad, true);
}

static int op_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	struct uiw_qp_v *q = (struct uiw_qp_v *)qp;
	UIW_API_LOCK_ONE(uiw_eng_lock(&q->dev->eng[q->eng]));

	for (; wr != NULL; wr = wr->next) {
		struct uiw_recv_wr r = { .wr_id = wr->wr_id, .nsge = (unsigned)wr->num_sge };
		int rc = map_sges(q, wr->sg_list, wr->num_sge, r.sg, UIW_ACCESS_LOCAL_WRITE);

		if (rc == 0)
			rc = uiw_errno(uiw_qp_post_recv(q->core, &r));
		if (rc != 0) {
			*bad = wr;
			return rc;
		}
	}
	return 0;
}

/* ---- Shared receive queues. ---- */

/* Fewer receives than the armed limit are left: one event, then the limit is disarmed. */
static void srq_limit_event(void *arg, struct uiw_srq *core)
{
	struct uiw_srq_v *s = arg;
	struct ibv_async_event ev = { .element.srq = &s->srq, .event_type = IBV_EVENT_SRQ_LIMIT_REACHED };

	(void)core;
	async_push(s->srq.context, &ev);
}

struct ibv_srq *ibv_create_srq(struct ibv_pd *pd, struct ibv_srq_init_attr *attr)
{
	UIW_API_LOCK();
	struct uiw_srq_v *s = calloc(1, sizeof(*s));

	if (s == NULL || attr->attr.max_wr == 0 || attr->attr.max_wr > 32768 ||
	    attr->attr.max_sge > UIW_MAX_SGE || uiw_srq_init(&s->core, attr->attr.max_wr) != 0) {
		free(s);
		errno = s == NULL ? ENOMEM : EINVAL;
		return NULL;
	}
	s->dev = ctx_dev(pd->context);
	s->core.limit = attr->attr.srq_limit;
	s->core.limit_reached = srq_limit_event;
	s->core.limit_arg = s;
	s->srq = (struct ibv_srq){ .context = pd->context, .srq_context = attr->srq_context, .pd = pd };
	pthread_mutex_init(&s->srq.mutex, NULL);
	pthread_cond_init(&s->srq.cond, NULL);
	return &s->srq;
}

int ibv_destroy_srq(struct ibv_srq *srq)
{
	UIW_API_LOCK();
	struct uiw_srq_v *s = (struct uiw_srq_v *)srq;

	async_forget(srq->context, srq);
	uiw_srq_fini(&s->core);
	free(s);
	return 0;
}

int ibv_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr, int mask)
{
	UIW_API_LOCK();
	struct uiw_srq_v *s = (struct uiw_srq_v *)srq;

	if (mask & IBV_SRQ_MAX_WR)
		return EINVAL;   /* no resizing */
	if (mask & IBV_SRQ_LIMIT) {
		if (attr->srq_limit > s->core.ring.cap)
			return EINVAL;
		s->core.limit = attr->srq_limit;
	}
	return 0;
}

int ibv_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr)
{
	UIW_API_LOCK();
	struct uiw_srq_v *s = (struct uiw_srq_v *)srq;

	attr->max_wr = s->core.ring.cap;
	attr->max_sge = UIW_MAX_SGE;
	attr->srq_limit = s->core.limit;
	return 0;
}

static int op_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	UIW_API_LOCK_ONE(NULL);   /* the SRQ has its own lock */
	struct uiw_srq_v *s = (struct uiw_srq_v *)srq;

	for (; wr != NULL; wr = wr->next) {
		struct uiw_recv_wr r = { .wr_id = wr->wr_id, .nsge = (unsigned)wr->num_sge };
		int rc = map_sges_pd(s->dev, srq->pd, wr->sg_list, wr->num_sge, r.sg, UIW_ACCESS_LOCAL_WRITE);

		if (rc == 0)
			rc = uiw_errno(uiw_srq_post(&s->core, &r));
		if (rc != 0) {
			*bad = wr;
			return rc;
		}
	}
	return 0;
}
