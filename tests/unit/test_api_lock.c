/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The drop-in's big lock (verbs_internal.h): biased to the one thread that polls, taken
 * back by the progress thread and by any other program thread. The threads here share a
 * counter they increment without atomics, so a lost increment is a call that ran beside
 * another.
 */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <unistd.h>

#include <rte_pause.h>

#include "check_common.h"
#include "verbs_internal.h"

#define A_CALLS 1000000ul
#define B_CALLS 200000ul

static unsigned long counter;
static int b_go, stop;

/* counter++ over a window wide enough for a thread beside it to come in. */
static void bump(void)
{
	unsigned long c = counter;

	for (int k = 0; k < 8; k++)
		rte_pause();
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	counter = c + 1;
}

/* A call made from inside another (the lock is taken once, at the outermost). */
static void nested_call(void)
{
	UIW_API_LOCK();

	counter++;
}

/* What op_poll_cq() does: the lock and an inline pass (which names the polling thread). */
static void poll_like_call(void)
{
	UIW_API_LOCK_ONE(NULL);

	uiw_inline_pass();
	bump();
	nested_call();
}

/* Another program thread's call: no pass. */
static void post_like_call(void)
{
	UIW_API_LOCK_ONE(NULL);

	bump();
}

static void *thread_a(void *arg)
{
	(void)arg;
	for (unsigned long i = 0; i < A_CALLS; i++) {
		poll_like_call();
		if (i == A_CALLS / 2)
			__atomic_store_n(&b_go, 1, __ATOMIC_RELEASE);
	}
	return NULL;
}

static void *thread_b(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&b_go, __ATOMIC_ACQUIRE))
		usleep(100);
	for (unsigned long i = 0; i < B_CALLS; i++)
		post_like_call();
	return NULL;
}

/* As the drop-in's progress thread: its own turns with the lock, and the bias renewed. */
static void *thread_progress(void *arg)
{
	unsigned long *mine = arg;

	while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
		if (uiw_big_lock_try() == 0) {
			bump();
			(*mine)++;
			pthread_mutex_unlock(&uiw_big_lock);
		}
		(void)uiw_bias_renew();
		for (int k = 0; k < 2000; k++)   /* the owner polls a while by the bias */
			rte_pause();
	}
	return NULL;
}

START_TEST(calls_never_run_beside_each_other)
{
	pthread_t a, b, p;
	unsigned long progress_turns = 0;

	uiw_threaded = true;
	uiw_bias_init();
	ck_assert_int_eq(pthread_create(&p, NULL, thread_progress, &progress_turns), 0);
	ck_assert_int_eq(pthread_create(&a, NULL, thread_a, NULL), 0);
	ck_assert_int_eq(pthread_create(&b, NULL, thread_b, NULL), 0);
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
	pthread_join(p, NULL);
	ck_assert_uint_eq(counter, 2 * A_CALLS + B_CALLS + progress_turns);
	ck_assert_uint_gt(progress_turns, 0);
	if (uiw_bias.ok) {   /* membarrier here (not under valgrind or a seccomp filter) */
		ck_assert_uint_gt(uiw_bias.fast, 0);
		ck_assert_uint_gt(uiw_bias.slow, 0);
		ck_assert_uint_gt(uiw_bias.revokes, 0);
		ck_assert_uint_gt(uiw_bias.renews, 0);
	}
}
END_TEST

/* What the progress thread does for a pass of its own: the mutex, the bias taken back. */
static void *progress_pass(void *arg)
{
	int *took = arg;

	*took = uiw_big_lock_try() == 0;
	if (*took)
		pthread_mutex_unlock(&uiw_big_lock);
	return NULL;
}

static void *other_call(void *arg)
{
	(void)arg;
	post_like_call();
	return NULL;
}

static void in_thread(void *(*fn)(void *), void *arg)
{
	pthread_t t;

	ck_assert_int_eq(pthread_create(&t, NULL, fn, arg), 0);
	ck_assert_int_eq(pthread_join(t, NULL), 0);
}

START_TEST(polling_thread_takes_the_bias_again_itself)
{
	unsigned long fast, slow;
	int took = 0;

	uiw_threaded = true;
	uiw_bias_init();
	if (!uiw_bias.ok)   /* no membarrier (valgrind, a seccomp filter): no bias at all */
		return;
	poll_like_call();   /* by the mutex; its pass names this thread the polling one */
	ck_assert(!uiw_bias_renew());   /* the look: a call by a thread not yet named */
	ck_assert_uint_eq(uiw_bias.regrants, 0);
	poll_like_call();   /* by the mutex, in a window with only this thread: bias again */
	ck_assert_uint_eq(uiw_bias.regrants, 1);
	fast = uiw_bias.fast;
	slow = uiw_bias.slow;
	poll_like_call();
	ck_assert_uint_eq(uiw_bias.fast, fast + 1);   /* the nested call takes nothing */

	/* The progress thread's own pass takes the bias back; the next call is by the mutex
	 * and takes the bias again, so the one after it is by the bias, with no look between. */
	in_thread(progress_pass, &took);
	ck_assert(took);
	ck_assert_uint_eq(uiw_bias.revokes, 1);
	poll_like_call();
	ck_assert_uint_eq(uiw_bias.slow, slow + 1);
	ck_assert_uint_eq(uiw_bias.regrants, 2);
	poll_like_call();
	ck_assert_uint_eq(uiw_bias.fast, fast + 2);

	/* Another program thread's call: the polling thread keeps to the mutex until the
	 * progress thread's look has seen a window with no other thread in it. */
	in_thread(other_call, NULL);
	ck_assert_uint_eq(uiw_bias.revokes, 2);
	poll_like_call();
	poll_like_call();
	ck_assert_uint_eq(uiw_bias.slow, slow + 4);
	ck_assert_uint_eq(uiw_bias.regrants, 2);
	ck_assert(!uiw_bias_renew());   /* the look: another thread came since */
	poll_like_call();   /* a window with only this thread: by the mutex, bias again */
	ck_assert_uint_eq(uiw_bias.regrants, 3);
	poll_like_call();
	ck_assert_uint_eq(uiw_bias.fast, fast + 3);
	ck_assert_uint_eq(counter, 2 * 9 + 1);   /* nine polls, one other call */
}
END_TEST

static int trying;

/* Takes the lock as the progress thread does for a pass, on the owner's core. */
static void *revoker(void *arg)
{
	__atomic_store_n(&trying, 1, __ATOMIC_RELEASE);
	return progress_pass(arg);
}

/* A call by the bias during which another thread on this core takes the bias back: the
 * call gives its core away until that thread is in, as a program thread taken off its
 * core by the scheduler would. */
static pthread_t call_with_revoker_beside(int *took)
{
	UIW_API_LOCK_ONE(NULL);
	pthread_t r;

	ck_assert(uiw_api_fast);
	ck_assert_int_eq(pthread_create(&r, NULL, revoker, took), 0);   /* same core, policy */
	while (!__atomic_load_n(&trying, __ATOMIC_ACQUIRE))
		sched_yield();
	return r;
}

START_TEST(revoker_gives_its_core_to_an_owner_in_a_call)
{
	struct sched_param fifo = { .sched_priority = 1 };
	cpu_set_t one;
	pthread_t r;
	int took = 0;

	uiw_threaded = true;
	uiw_bias_init();
	if (!uiw_bias.ok)   /* no membarrier: no bias at all */
		return;
	/* Both threads on one core, first in first out at one priority: neither is taken off
	 * the core for the other unless it gives it up, so a revoker that only spins while the
	 * owner is inside its call never ends (the test's timeout fails it). */
	ck_assert_int_eq(sched_getaffinity(0, sizeof(one), &one), 0);
	for (int c = 0, first = 1; c < CPU_SETSIZE; c++) {
		if (CPU_ISSET(c, &one) && !first)
			CPU_CLR(c, &one);
		else if (CPU_ISSET(c, &one))
			first = 0;
	}
	ck_assert_int_eq(pthread_setaffinity_np(pthread_self(), sizeof(one), &one), 0);
	if (pthread_setschedparam(pthread_self(), SCHED_FIFO, &fifo) != 0) {
		fprintf(stderr, "revoker_gives_its_core_to_an_owner_in_a_call: no SCHED_FIFO "
			"(not root?): not run\n");
		return;
	}
	poll_like_call();
	(void)uiw_bias_renew();
	poll_like_call();   /* the bias, taken again */
	ck_assert_uint_eq(uiw_bias.regrants, 1);

	r = call_with_revoker_beside(&took);
	ck_assert_int_eq(pthread_join(r, NULL), 0);
	ck_assert(took);
	ck_assert_uint_eq(uiw_bias.revokes, 1);
	ck_assert_uint_gt(uiw_bias.revoke_yields, 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("api_lock");
	TCase *tc = tcase_create("bias");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, calls_never_run_beside_each_other);
	tcase_add_test(tc, polling_thread_takes_the_bias_again_itself);
	tcase_add_test(tc, revoker_gives_its_core_to_an_owner_in_a_call);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
