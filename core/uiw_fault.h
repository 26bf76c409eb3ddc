/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * Fault injection between a port and the stack, for tests and for apps through the
 * configuration keys fault_rx, fault_tx and fault_seed. A spec is a comma list of
 * drop=P, dup=P, corrupt=P, reorder=P (percent, decimals allowed), delay_us=N (every
 * frame) and reorder_us=N (how long a reordered frame is held back, default 100).
 * Example: `fault_rx = drop=1,reorder=2,dup=0.5`. The same seed gives the same faults
 * for the same frame sequence.
 */
#ifndef UIW_FAULT_H
#define UIW_FAULT_H

#include <stddef.h>
#include <stdint.h>

#include "uiw_port.h"

#define UIW_FAULT_QUEUE 2048

struct uiw_fault_dir {
	uint32_t drop, dup, corrupt, reorder;    /* per 2^32 */
	uint32_t delay_us, reorder_us;
	uint64_t dropped, duplicated, corrupted, reordered, delayed;
	unsigned qn;
	struct {
		struct rte_mbuf *m;
		uint64_t due;
	} q[UIW_FAULT_QUEUE];
};

struct uiw_fault {
	struct uiw_fault_dir rx, tx;
	uint64_t rng;
	uiw_burst_fn inner_rx, inner_tx;
};

/** Parses a spec into @p d. @return 0, or -1 with the bad item named in err. */
int uiw_fault_parse(const char *spec, struct uiw_fault_dir *d, char *err, size_t errlen);

/**
 * Wraps @p port's RX and TX with the faults @p cfg names (fault_rx, fault_tx, fault_seed).
 * Does nothing when both specs are empty. @return 0, or -1 with a message in err.
 */
int uiw_fault_attach(struct uiw_port *port, struct uiw_fault *f, const struct uiw_config *cfg,
		     char *err, size_t errlen);

/** Frees frames still held back. */
void uiw_fault_detach(struct uiw_port *port);

/** Prints what was injected. */
void uiw_fault_print(FILE *out, const struct uiw_fault *f);

#endif
