/* SPDX-License-Identifier: BSD-3-Clause */
/* Objects behind the rdma-core types: each starts with the rdma-core struct it stands for. */
#ifndef UIW_VERBS_INTERNAL_H
#define UIW_VERBS_INTERNAL_H

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "rdmap.h"
#include "uiw_verbs.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>

#define CHANNEL_EVENTS 1024   /* a power of two: the ring's slots are the array */

/*
 * Threads. The static library serves one thread (the tools, the tests). The drop-in
 * libraries serve any program: there every entry point holds the big lock (UIW_API_LOCK,
 * released on every return), and blocking waits sleep on their fd while the progress
 * thread runs the stack.
 */
extern bool uiw_threaded;
extern bool uiw_progress_thread;               /* the drop-in's: blocking waits sleep */
extern pthread_mutex_t uiw_big_lock;           /* recursive */
extern uint64_t uiw_inline_progress_ns;        /* the program's own last pass */
extern int uiw_inline_clock;                   /* its thread's CPU clock (a clockid_t; a
                                                * thread's is never 0, CLOCK_REALTIME), or 0 */
extern unsigned uiw_api_waiting;               /* program threads waiting for the lock */

/* Thread-local, in the initial-exec model: the drop-in is a shared library, and the
 * general model asked the dynamic linker (__tls_get_addr) on every access, several
 * times a call (3% of a perftest sender's time). These few octets fit the space the
 * dynamic linker keeps for libraries opened later. */
#define UIW_TLS __thread __attribute__((tls_model("initial-exec")))

/*
 * The big lock is biased to one program thread (docs/DROPIN.md, "The big lock is
 * biased"): a program that makes every call from one thread (perftest, most benchmarks)
 * takes it with plain stores and loads. Each pthread_mutex_trylock() and unlock is a locked
 * instruction, which waits for every store of the pass before it to leave the core (a
 * pass writes frames to memory the peer's core reads), and the two were 14% of a
 * perftest sender's time. The owner sets owner_busy and then reads revoked; any other
 * thread takes the mutex, sets revoked, has the kernel run a full barrier on every
 * thread of the process (membarrier(2)), so that the owner either saw revoked or has
 * owner_busy visible, and waits for owner_busy to clear. The progress thread gives the
 * bias to the thread that polls when no other thread has called since it was taken back
 * or last looked at (uiw_bias_renew()), and the polling thread takes it again itself on
 * such a call (uiw_big_lock_slow()). Without membarrier (a seccomp filter, valgrind)
 * there is no owner and every call takes the mutex.
 */
struct uiw_bias {
	int owner_busy;          /* atomic: the owner is inside (written by the owner only) */
	int revoked;             /* atomic: every thread takes the mutex (owner too) */
	const void *owner;       /* atomic: the owner's uiw_api_self, or NULL */
	bool ok;                 /* membarrier registered */
	unsigned long others;    /* entries by a thread that is not the owner's candidate */
	unsigned long others_seen; /* others when the bias was last taken back or looked at */
	unsigned long revokes;   /* times the bias was taken back */
	unsigned long renews;    /* times it was given (by the progress thread's look) */
	unsigned long regrants;  /* times the polling thread took it again itself */
	unsigned long revoke_yields; /* sched_yield()s of a revoker waiting for the owner */
	unsigned long fast;      /* entries by the bias (the owner writes it) */
	unsigned long slow;      /* entries by the mutex (written under it) */
};
extern struct uiw_bias uiw_bias;
extern UIW_TLS char uiw_api_self;              /* its address names the thread */
extern UIW_TLS bool uiw_api_fast;              /* this thread holds the lock by the bias */
/* The drop-in's progress thread: its passes take a spare lcore id in the stack's copy only
 * (uiw_eng_pass()). */
extern UIW_TLS bool uiw_pass_copy_only;
extern const void *uiw_last_inline;            /* the thread of the last inline pass */

void uiw_bias_init(void);
/* The slow way in: the mutex, the bias taken back; the bias again for the next call if
 * this is the polling thread and no other program thread called since it lost it. */
void uiw_big_lock_slow(void);
/* The mutex, the bias taken back, and not given again (held for good at exit). */
void uiw_big_lock_hold(void);
/* The progress thread's: the mutex if free (the bias taken back). @return 0 if taken. */
int uiw_big_lock_try(void);
/* The progress thread's, the program polling: the bias to the polling thread if no other
 * thread came in since the last look. @return true if it has it (or cannot have it). */
bool uiw_bias_renew(void);

/*
 * Engine threads (docs/ENGINES.md). With engines > 1 the drop-in runs engines 1..N-1 each
 * on a thread of its own, which holds the engine's lock through each pass; the big lock
 * covers engine 0 (the progress thread's) and everything else. An API call holds the big
 * lock and, from its outermost level, every engine's lock: what it touches is still one
 * thread's at a time. Engines running at once share only CQs and SRQs (their own locks)
 * and the event queues the verbs and rdma_cm layers fill (uiw_ev_lock, taken at the
 * innermost level only).
 */
extern UIW_TLS unsigned uiw_api_depth;        /* this thread's API lock nesting */
extern UIW_TLS unsigned uiw_api_engines;      /* engine locks this thread holds */
extern unsigned uiw_engine_threads;            /* engine threads running (locks to take) */
extern pthread_mutex_t uiw_ev_lock;
void uiw_engines_stop(void);                   /* takes every engine's lock */
void uiw_engines_go(void);                     /* gives back what uiw_engines_stop() took */

/* Takes the big lock (the caller holds none of it). */
static inline void uiw_big_lock_take(void)
{
	if (__atomic_load_n(&uiw_bias.owner, __ATOMIC_RELAXED) == &uiw_api_self) {
		__atomic_store_n(&uiw_bias.owner_busy, 1, __ATOMIC_RELAXED);
		/* No fence: a revoker's membarrier() orders the two for it. */
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		if (!__atomic_load_n(&uiw_bias.revoked, __ATOMIC_ACQUIRE)) {
			uiw_api_fast = true;
			uiw_bias.fast++;
			return;
		}
		__atomic_store_n(&uiw_bias.owner_busy, 0, __ATOMIC_RELEASE);
	}
	uiw_big_lock_slow();
}

/* Gives back what uiw_big_lock_take() took. */
static inline void uiw_big_lock_give(void)
{
	if (uiw_api_fast) {
		uiw_api_fast = false;
		__atomic_store_n(&uiw_bias.owner_busy, 0, __ATOMIC_RELEASE);
	} else {
		pthread_mutex_unlock(&uiw_big_lock);
	}
}

static inline int uiw_api_lock(void)
{
	if (!uiw_threaded)
		return 0;
	if (uiw_api_depth++ == 0) {
		uiw_big_lock_take();
		if (__atomic_load_n(&uiw_engine_threads, __ATOMIC_ACQUIRE) > 0)
			uiw_engines_stop();
	}
	return 1;
}

extern UIW_TLS pthread_mutex_t *uiw_api_one;  /* the one engine lock a data-path call holds */

static inline void uiw_api_unlock(int *held)
{
	if (!*held)
		return;
	if (--uiw_api_depth == 0) {
		if (uiw_api_engines > 0)
			uiw_engines_go();
		if (uiw_api_one != NULL) {
			pthread_mutex_unlock(uiw_api_one);
			uiw_api_one = NULL;
		}
		uiw_big_lock_give();
	}
}

/* Leaves the API lock for good from inside a call (its holder will never return). */
void uiw_api_abandon(void);

/* Lets the kernel place the calling thread on any online CPU: the EAL pins the thread that
 * started it to its lcore, and a thread made from it inherits that pin. */
void uiw_thread_unpin(void);

/* pthread_create() for the stack's own threads (the progress thread, engine threads): they
 * start with every signal blocked, so that the program's handlers run in its own threads,
 * and a signal meant to end a program thread's blocking call reaches that thread. */
int uiw_thread_start(pthread_t *t, void *(*fn)(void *), void *arg);

#define UIW_API_LOCK()                                                                       \
	int uiw_held_ __attribute__((cleanup(uiw_api_unlock), unused)) = uiw_api_lock()

/*
 * The data path's lighter lock: the big lock and, at the outermost level, only the lock
 * of @p lock's engine (NULL: none; a CQ or SRQ has its own). Posting to a QP stops only
 * its engine; polling a CQ stops none, so a program that spins in ibv_poll_cq() leaves
 * the engine threads running.
 */
static inline int uiw_api_lock_one(pthread_mutex_t *lock)
{
	if (!uiw_threaded)
		return 0;
	if (uiw_api_depth++ == 0) {
		uiw_big_lock_take();
		if (lock != NULL) {
			pthread_mutex_lock(lock);
			uiw_api_one = lock;
		}
	}
	return 1;
}

#define UIW_API_LOCK_ONE(lock)                                                               \
	int uiw_held_ __attribute__((cleanup(uiw_api_unlock), unused)) =                     \
		uiw_threaded ? uiw_api_lock_one(lock) : 0   /* @p lock looked up only if so */

/* One poll pass over every device, the lock held. */
unsigned uiw_verbs_progress_locked(void);
/* A pass made for the program (poll_cq, a non-blocking wait): the progress thread then
 * keeps out of its way for a while. */
void uiw_inline_pass(void);
/* The program's mark without a pass (a poll that found completions waiting). */
void uiw_inline_mark(void);
/*
 * The queue a blocking call waits on is empty (called with the lock held). Non-blocking or
 * single-threaded: one pass. Threaded and blocking: the progress thread runs while this
 * thread sleeps on @p fd a little. @return false when the caller should give up if the
 * queue is still empty, with errno: EAGAIN (non-blocking), or EINTR (a signal whose
 * handler would have interrupted a kernel read(): installed without SA_RESTART).
 */
bool uiw_wait_some(int fd, bool nonblock);
/* The same, the sleep with @p mask as the thread's signal mask (ppoll()); NULL: unchanged. */
bool uiw_wait_some_masked(int fd, bool nonblock, const sigset_t *mask);

/* Whether the program made @p fd non-blocking, asked of the kernel once per call that
 * must wait (*@p flags starts at -1) and not by calls that find something to take. */
static inline bool uiw_fd_nonblock(int fd, int *flags)
{
	if (*flags < 0)
		*flags = fcntl(fd, F_GETFL);
	return (*flags & O_NONBLOCK) != 0;
}

/* What rsockets show of the TCP connection under a QP (TCP_INFO, the shutdown linger). */
struct uiw_qp_tcp {
	bool up;                     /* a connection is there */
	bool all_acked;              /* everything queued to send is acknowledged */
	int state;                   /* enum uiw_tcp_state */
	uint16_t mss;
	uint32_t srtt_us, rttvar_us, rto_us, cwnd;
	uint64_t retransmits;
};
/* verbs.c: fills @p out for @p qp (the API lock taken). */
void uiw_verbs_qp_tcp(struct ibv_qp *qp, struct uiw_qp_tcp *out);

/* cma.c: events wait on the channel (a hint: taken without the API lock). */
bool uiw_cm_channel_pending(struct rdma_event_channel *channel);

/* dropin.c (a weak no-op in the static library): the instance from the environment, with
 * its progress thread. */
int uiw_dropin_ensure(void);
/* dropin.c (a weak no-op in the static library): ends the progress thread's nap, for a
 * program thread about to block while the stack needs running. @p sleeping: the caller
 * sleeps in a wait of the stack's own (a blocking call); else a non-blocking call found
 * nothing, and its caller may sleep in a poll() of its own. */
void uiw_progress_kick(bool sleeping);
/* dropin.c (a weak no-op in the static library): ends the progress thread's nap only. */
void uiw_progress_wake(void);

struct uiw_dev;
struct uiw_cm_id;

/* An engine of a device's instance, as the verbs layer drives it. */
struct uiw_eng {
	struct uiw_stack *e;
	struct uiw_dev *d;
	unsigned idx;
	struct uiw_qp_v *kick;        /* its QPs with posted work to start (the doorbell list) */
	struct uiw_cm_id *resolving;  /* rdma_cm ids waiting for ARP on this engine (cma.c) */
	bool threaded;                /* run by a thread of its own (below) */
	pthread_mutex_t lock;         /* threaded: held through each pass */
	pthread_t thread;
	int nap_fd;                   /* a write ends the thread's nap */
	int napping;
	int stop;
	uint64_t last_pass_ns;        /* when its thread last ended a pass (atomic) */
	uint64_t passes, naps, borrowed;  /* its thread's passes and naps; passes others made */
	unsigned cache_lcore;         /* a spare lcore id: the mempool caches of a pass made by a
				       * thread without an EAL lcore (uiw_lcore_id.h) */
};

struct uiw_dev {
	struct ibv_device dev;
	struct uiw_stack *stack;
	struct uiw_mpa_params mpa_params;
	struct uiw_stag_table stags;
	uint32_t next_qpn, next_pdn;
	unsigned next_engine;         /* the engine the next active id connects on (in turn) */
	struct ibv_context *cm_ctx;   /* the context rdma_cm ids use */
	struct ibv_pd *default_pd;    /* rdma_cm's, for QPs made without a PD */
	struct uiw_eng eng[UIW_MAX_ENGINES];
	struct uiw_qp_v *qps;         /* every QP (the counters' sums) */
};

/* Engine threads for engines 1..N-1 of every device (the drop-in). @return 0 or -errno. */
int uiw_verbs_start_engine_threads(void);
/* What each engine thread did: passes, naps (one "name value" line each). */
void uiw_verbs_print_engine_threads(FILE *f);
/* Stops them (at exit): the progress passes run every engine again. */
void uiw_verbs_stop_engine_threads(void);
/* Rings @p g's doorbells and makes one pass of its engine (its lock held, or the big
 * lock when it has no thread). @return work done. */
unsigned uiw_eng_pass(struct uiw_eng *g, uint64_t now);
/* The lock a data-path call on a QP of engine @p g takes (NULL: its engine has no thread). */
static inline pthread_mutex_t *uiw_eng_lock(struct uiw_eng *g)
{
	return g->threaded ? &g->lock : NULL;
}

/* The engine @p c runs on (its instance's engine tag): connections arriving on a listener. */
struct uiw_eng *uiw_dev_engine_of(struct uiw_dev *d, const struct uiw_mpa_conn *c);

#define ASYNC_EVENTS 256      /* a power of two: the ring's slots are the array */

struct uiw_ctx {
	struct verbs_context vctx;    /* ends with struct ibv_context, as rdma-core lays it out */
	struct uiw_dev *dev;
	struct ibv_async_event async[ASYNC_EVENTS];   /* for ibv_get_async_event() */
	struct uiw_ring async_ring;
	uint64_t async_lost;          /* events dropped because nobody took them */
};

struct uiw_pd_v {
	struct ibv_pd pd;
	uint32_t pdn;
};

struct uiw_mr_v {
	struct ibv_mr mr;
	struct uiw_mr *m;
};

struct uiw_channel {
	struct ibv_comp_channel ch;
	struct ibv_cq *q[CHANNEL_EVENTS];
	struct uiw_ring ring;
	bool spin_cold;      /* the last spin ran out: waits sleep at once until the event
			      * of one comes within cq_spin_us */
	uint64_t event_ns;   /* when the last event was queued (cq_notify()) */
};

/* ibv_get_cq_event()'s spin (cq_spin_us), atomic adds: waits the caller's passes served,
 * spins that ran out and slept, and waits that slept without one (the channel cold). */
extern unsigned long uiw_cq_spin_hits, uiw_cq_spin_misses, uiw_cq_spin_cold;

struct uiw_cq_v {
	struct ibv_cq cq;
	struct uiw_cq core;
	struct uiw_channel *ch;
};

struct uiw_srq_v {
	struct ibv_srq srq;
	struct uiw_srq core;
	struct uiw_dev *dev;
};

struct uiw_cm_id;

struct uiw_qp_v {
	union {
		struct ibv_qp qp;
		struct ibv_qp_ex qpx;     /* its qp_base is qp: for the ibv_wr_* calls */
	};
	struct uiw_wr_batch *batch;   /* verbs_wr.c: made with send ops flags, else NULL */
	struct ibv_qp_cap cap;        /* as made (ibv_query_qp reports it) */
	struct uiw_qp *core;
	struct uiw_sq *sq;            /* the core's send queue, filled in place */
	struct uiw_dev *dev;
	bool sig_all;
	bool kicked;                  /* on its engine's doorbell list */
	unsigned eng;                 /* the engine its connection is on */
	struct uiw_qp_v *kick_next;
	struct rdma_cm_id *cm;        /* the id it was made on (rdma_create_qp), if any */
	uint8_t *inl;                 /* inline data, UIW_MAX_INLINE bytes per send queue slot */
	struct uiw_qp_v *next, **pprev;  /* the device's list of QPs (O(1) removal) */
};

/* verbs_wr.c: ibv_create_qp_ex (the context's create_qp_ex), and what ibv_destroy_qp frees. */
struct ibv_qp *uiw_create_qp_ex(struct ibv_context *context, struct ibv_qp_init_attr_ex *attr);
void uiw_wr_batch_free(struct uiw_qp_v *q);
/* ibv_post_send for a chain that goes to the send queue whole or not at all (the error of
 * the first WR that cannot be taken, as ibv_post_send() reports it). */
int uiw_verbs_post_send_all(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad);

/* The RDMAP counters (rdmap.h) summed over every QP the process made, destroyed or not. */
const uint64_t *uiw_verbs_rdmap_totals(void);
/* The last reasons QPs went to error (uiw_qp_why), one line each, if any did. */
void uiw_verbs_print_qp_errors(FILE *f);
/* Every QP the devices hold: addresses, TCP and MPA state, queue depths, non-zero counters,
 * why it left RTS (the status file, uiwarp-stat, UIWARP_STATS). The caller holds every
 * engine. */
void uiw_verbs_print_qps(FILE *f);
/* More for the status listing from librdmacm (which links this library, not the other way):
 * set once its first rsocket is made, called after the QPs with the API lock held. */
extern void (*uiw_verbs_status_more)(FILE *f);

/* IBV_SEND_INLINE: the bytes are copied when posted, into the WR's send queue slot. */
#define UIW_MAX_INLINE 256

static inline struct uiw_ctx *ctx_of(struct ibv_context *c)
{
	return (struct uiw_ctx *)(void *)((char *)c - offsetof(struct verbs_context, context));
}

static inline struct uiw_dev *ctx_dev(struct ibv_context *c)
{
	return ctx_of(c)->dev;
}

/* verbs.c */
struct ibv_context *uiw_dev_context(struct uiw_dev *d);
/* The device's own PD, made at first use (rdma_cm QPs made without one). */
struct ibv_pd *uiw_dev_default_pd(struct uiw_dev *d);
/* The engine of @p d's instance the next connection opens on: each in turn. */
struct uiw_eng *uiw_dev_next_engine(struct uiw_dev *d);
struct uiw_dev *uiw_dev_by_ip(uint32_t ip);
struct uiw_dev *uiw_dev_for_dst(uint32_t dst);
int uiw_errno(int rc);


/* rdma_cm's periodic work (address resolutions waiting for ARP on engine @p g), called by
 * each pass of an engine once rdma_cm has set it: rdma_cm lives in another library in the
 * drop-in. */
extern void (*uiw_cma_poll_hook)(struct uiw_eng *g, uint64_t now);

#endif
