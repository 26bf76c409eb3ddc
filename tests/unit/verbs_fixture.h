/* SPDX-License-Identifier: BSD-3-Clause */
/* What the verbs pair tests share: one side's objects, their teardown, and waiting for a
 * CM event of a given type. */
#ifndef UIW_VERBS_FIXTURE_H
#define UIW_VERBS_FIXTURE_H

#include <stdint.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

struct verbs_ep {
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id;
	struct ibv_pd *pd;
	struct ibv_comp_channel *cc;
	struct ibv_cq *cq;
	struct ibv_srq *srq;
	struct ibv_mr *mr, *mr2;
	uint8_t *buf;
};

/** Destroys what @p e holds, in the order verbs wants, and frees its buffer. */
void verbs_ep_fini(struct verbs_ep *e);

/** Both sides and the listener (whose channel the server's id shares), then the devices
 *  and the pair of instances. */
void verbs_pair_teardown(struct verbs_ep *cli, struct verbs_ep *srv, struct rdma_cm_id **listen_id);

/**
 * The server side listens on PAIR_IP_B:@p port (its channel in srv->ch), the client makes
 * its channel and id (context @p cli) and resolves address and route to it.
 */
void verbs_listen_and_resolve(struct verbs_ep *cli, struct verbs_ep *srv,
			      struct rdma_cm_id **listen_id, uint16_t port);

/** The next event on @p ch, which must be of type @p t (the caller acks it). */
struct rdma_cm_event *verbs_expect_event(struct rdma_event_channel *ch, enum rdma_cm_event_type t);

#endif
