/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Two stack instances (uiw_stack: port, lower half, TCP, MPA) joined back to back by
 * in-memory queues in one process, on the test pool, polled in one loop.
 */
#ifndef UIW_PAIR_FIXTURE_H
#define UIW_PAIR_FIXTURE_H

#include <stdbool.h>
#include <stdint.h>

#include "uiw_stack.h"

#define PAIR_Q_LEN 8192
#define PAIR_IP_A 0x0a000001u
#define PAIR_IP_B 0x0a000002u

struct pair_q {
	struct rte_mbuf *m[PAIR_Q_LEN];
	unsigned head, tail;
};

/** Does what a NIC does to a frame on its way out: cuts a TSO frame into at most @p max
 *  frames in @p out, fills the checksums the stack left to it. @return how many. */
typedef uint16_t (*pair_tso_fn)(struct rte_mbuf *m, struct rte_mbuf **out, uint16_t max);

struct pair_side {
	struct uiw_stack st;      /* on an in-memory port; the configuration's faults, if any */
	struct pair_q *rxq, *txq;
	pair_tso_fn tso;          /* set by pair_enable_tso() */
	bool cut;                 /* what it sends is lost (its process gone, as seen by the peer) */
};

extern struct pair_side pair_a, pair_b;

/** The pool both sides' ports take frames from: test_pool() unless a test names another
 *  (one with per-lcore caches, which the test pool has not) before pair_setup(). */
extern struct rte_mempool *pair_pool;

/** Brings both sides up with @p cfg (each gets its own address). */
void pair_setup_cfg(const struct uiw_config *cfg);
void pair_setup(void);
void pair_teardown(void);

/**
 * When UIW_PAIR_PCAP_DIR is set, writes every frame either side sends (before the fault
 * wrapper drops any) to $UIW_PAIR_PCAP_DIR/@p name.pcap until pair_teardown().
 */
void pair_capture(const char *name);

/** Gives @p s's port TSO and the checksum offloads (as a PMD that offers them would):
 *  every frame it sends goes through @p cut, which does the NIC's part, on its way to
 *  the peer. */
void pair_enable_tso(struct pair_side *s, pair_tso_fn cut);

/** One poll pass of both sides plus MPA timeouts. */
void pair_poll(void);

/** Polls until @p done(arg) or @p ms milliseconds pass. @return done's last answer. */
bool pair_run_until(bool (*done)(void *arg), void *arg, unsigned ms);

/** Polls for @p ms milliseconds. */
void pair_run_for(unsigned ms);

#endif
