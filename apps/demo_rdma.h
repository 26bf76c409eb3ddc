/* SPDX-License-Identifier: BSD-3-Clause */
/* The iWARP part of the demo: the seven operations between two instances. */
#ifndef UIW_APP_DEMO_RDMA_H
#define UIW_APP_DEMO_RDMA_H

#include "uiw_config.h"
#include "uiw_stack.h"

/** Runs every operation from @p a (10.0.0.1) to @p b (10.0.0.2). @return 0 when each did
 *  what it should (the Terminate included), -1 otherwise. */
int demo_rdma(struct uiw_stack *a, struct uiw_stack *b, const struct uiw_config *cfg);

#endif
