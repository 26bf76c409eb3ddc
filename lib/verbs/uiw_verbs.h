/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * The verbs (ibv_*) and connection manager (rdma_*) API over the stack, with rdma-core's
 * own types (infiniband/verbs.h, rdma/rdma_cma.h). Each stack instance is one device
 * ("uiw0", "uiw1", ...) with one port. Progress is inline: ibv_poll_cq(),
 * ibv_get_cq_event() and rdma_get_cm_event() run poll passes over every device.
 *
 * This header is the glue for tools and tests that build the instances themselves.
 */
#ifndef UIW_VERBS_H
#define UIW_VERBS_H

#include "uiw_stack.h"

#include <stdio.h>

#define UIW_VERBS_MAX_DEVICES 8

/**
 * Makes the instance @p s (built to MPA) a device; the MPA policy of its connections comes
 * from its configuration. @return 0, -ENOSPC, -ENOMEM.
 */
int uiw_verbs_add_device(struct uiw_stack *s);

/** Forgets every device (their instances stay the caller's). */
void uiw_verbs_remove_devices(void);

/** One poll pass over every device: doorbells, then uiw_stack_poll() of its instance. */
void uiw_verbs_progress(void);

/**
 * Runs engines 1..N-1 of every device on threads of their own, as the drop-in does
 * (docs/ENGINES.md), and makes the verbs calls take the drop-in's locks. The caller's
 * thread still runs engine 0 with its calls (ibv_poll_cq(), waits). Call it once the
 * devices are added and before any other verbs call. @return 0 or -errno.
 */
int uiw_verbs_engine_threads_start(void);
/** Stops them (their engines are run by the caller's passes again). */
void uiw_verbs_engine_threads_stop(void);
/** What each engine thread did (engineN.thread_passes, ...), a line each. */
void uiw_verbs_engine_threads_print(FILE *f);

struct ibv_qp;
struct uiw_qp;

/** The RDMAP QP behind a verbs QP (its counters, its Terminates, its MPA connection). */
struct uiw_qp *uiw_verbs_qp_core(struct ibv_qp *qp);

#endif
