/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * LD_PRELOAD shim for perftest -R as a client of a slow server: every rdma_connect() after
 * the first waits UIW_CONNECT_DELAY_MS (default 2500) first.
 *
 * perftest -R first connects a control QP, exchanges parameters over it, then connects its
 * test QP to the same port. Its server listens for the test QP only after it has set up
 * its resources; under emulation that takes the guest more than a second, while a client
 * on this machine connects within milliseconds, meets no listener and gets a RST (perftest
 * then gives up). The delay lets the interop tests run perftest unchanged against siw.
 */
#include <dlfcn.h>
#include <stdlib.h>
#include <time.h>

#include <rdma/rdma_cma.h>

int rdma_connect(struct rdma_cm_id *id, struct rdma_conn_param *param)
{
	static int (*next)(struct rdma_cm_id *, struct rdma_conn_param *);
	static unsigned calls;
	const char *ms = getenv("UIW_CONNECT_DELAY_MS");

	if (next == NULL)
		next = (int (*)(struct rdma_cm_id *, struct rdma_conn_param *))dlsym(RTLD_NEXT, "rdma_connect");
	if (calls++ > 0) {
		long d = ms != NULL ? atol(ms) : 2500;
		struct timespec ts = { d / 1000, (d % 1000) * 1000000L };

		nanosleep(&ts, NULL);
	}
	return next(id, param);
}
