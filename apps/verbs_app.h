/* SPDX-License-Identifier: BSD-3-Clause */
/* What the tools on the verbs and rdma_cm API share (uiwarp-perf, uiwarp-scale). */
#ifndef UIW_APP_VERBS_APP_H
#define UIW_APP_VERBS_APP_H

#include <rdma/rdma_cma.h>

#include "instance.h"

/** Opens the instance (two on a ring pair named @p name when @p m->pair) and makes each a
 *  verbs device. @return 0, or -1 after printing why. */
int app_verbs_open(struct uiw_stack *a, struct uiw_stack *b, struct uiw_config *cfg,
		   const struct app_mode *m, const char *name, unsigned link_wait_ms);

/** An rdma_cm event channel whose rdma_get_cm_event() does not block; on failure the
 *  tool exits after saying why. */
struct rdma_event_channel *app_nonblocking_channel(void);

#endif
