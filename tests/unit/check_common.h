/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Shared by the Check suites: EAL start-up once per test binary, an mbuf pool, frames
 * built in exact-size heap buffers (so ASan catches any read past a frame), a fake port
 * that records what the stack sends, and a leak check on the pool.
 */
#ifndef UIW_CHECK_COMMON_H
#define UIW_CHECK_COMMON_H

#include <check.h>
#include <stddef.h>
#include <stdint.h>

#include <rte_mbuf.h>

#include "uiw_port.h"

#define FAKE_PORT_MAX 256

struct fake_port {
	struct uiw_port port;
	struct rte_mbuf *sent[FAKE_PORT_MAX];
	unsigned nsent;
	unsigned accept;          /* frames the fake PMD takes per burst (default: all) */
};

/** The pool every suite allocates from. */
struct rte_mempool *test_pool(void);

/** Frames of the pool not returned to it. */
unsigned test_pool_in_use(void);

/** A fake port with the given MAC; its TX records frames in fp->sent. */
void fake_port_init(struct fake_port *fp, const uint8_t mac[6]);

/** Frees the recorded frames. */
void fake_port_clear(struct fake_port *fp);

/** Copies @p len bytes into a new mbuf from the pool (one segment). */
struct rte_mbuf *frame_copy(const void *bytes, size_t len);

/**
 * An mbuf whose data is an external heap buffer of exactly @p len bytes: a read past the
 * frame is a heap overflow under ASan.
 */
struct rte_mbuf *frame_exact(const void *bytes, size_t len);

/** A chain: the first @p first bytes in one segment, the rest in a second one. */
struct rte_mbuf *frame_split(const void *bytes, size_t len, size_t first);

/** Copies a whole frame out of an mbuf chain. @return its length. */
size_t frame_bytes(const struct rte_mbuf *m, uint8_t *out, size_t outlen);

/**
 * A TCase whose tests run between @p setup and @p teardown (either may be NULL) and fail
 * when mbufs are still in use after @p teardown.
 */
TCase *tcase_with_leak_check(const char *name, void (*setup)(void), void (*teardown)(void));

/**
 * Starts the EAL (no hugepages, no PCI), creates the pool, runs the suite and returns the
 * process exit status.
 */
int run_suite(Suite *s);

#endif
