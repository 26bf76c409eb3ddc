/* SPDX-License-Identifier: BSD-3-Clause */
/* A stack instance (10.0.1.2/24, MAC_US) on a fake port, for the lower-half suites. */
#ifndef UIW_NET_FIXTURE_H
#define UIW_NET_FIXTURE_H

#include "check_common.h"
#include "frames.h"
#include "net.h"

extern struct fake_port fx_port;
extern struct uiw_net fx_net;

/** Sets up fx_net with arp_retry_ms 1000, arp_retries 3, arp_reachable_ms 30000. */
void fx_setup(uint32_t gateway);

/** fx_setup() without a gateway, as a Check fixture. */
void fx_setup_default(void);

/** As fx_setup_default(), on 10.0.0.0/16: thousands of neighbours on the link. */
void fx_setup_wide(void);

/** Frees what the instance and the fake port hold. */
void fx_teardown(void);

/** Feeds one frame (consumed) at time @p now and flushes the port. */
void fx_input(struct rte_mbuf *m, uint64_t now);

/** Value of one counter of fx_net. */
uint64_t fx_count(enum uiw_net_counter c);

/** Sum of all drop counters of fx_net (names containing "drop", plus arp_conflict). */
uint64_t fx_drops(void);

/** Asserts that exactly one counter moved from @p before and that it is @p c. */
void fx_assert_only(const uint64_t *before, enum uiw_net_counter c);

#endif
