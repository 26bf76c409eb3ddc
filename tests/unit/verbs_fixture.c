/* SPDX-License-Identifier: BSD-3-Clause */
#include "verbs_fixture.h"

#include <check.h>
#include <netinet/in.h>
#include <stdlib.h>

#include "pair_fixture.h"
#include "uiw_verbs.h"

void verbs_ep_fini(struct verbs_ep *e)
{
	if (e->id != NULL && e->id->qp != NULL)
		rdma_destroy_qp(e->id);
	if (e->srq != NULL)
		ibv_destroy_srq(e->srq);
	if (e->mr != NULL)
		ibv_dereg_mr(e->mr);
	if (e->mr2 != NULL)
		ibv_dereg_mr(e->mr2);
	if (e->cq != NULL)
		ibv_destroy_cq(e->cq);
	if (e->cc != NULL)
		ibv_destroy_comp_channel(e->cc);
	if (e->pd != NULL)
		ibv_dealloc_pd(e->pd);
	if (e->id != NULL)
		rdma_destroy_id(e->id);
	if (e->ch != NULL)
		rdma_destroy_event_channel(e->ch);
	free(e->buf);
}

void verbs_pair_teardown(struct verbs_ep *cli, struct verbs_ep *srv, struct rdma_cm_id **listen_id)
{
	struct rdma_event_channel *lch = *listen_id != NULL ? (*listen_id)->channel : NULL;

	verbs_ep_fini(cli);
	srv->ch = NULL;   /* the server's channel is the listener's */
	verbs_ep_fini(srv);
	if (*listen_id != NULL)
		rdma_destroy_id(*listen_id);
	if (lch != NULL)
		rdma_destroy_event_channel(lch);
	*listen_id = NULL;
	uiw_verbs_remove_devices();
	pair_teardown();
}

struct rdma_cm_event *verbs_expect_event(struct rdma_event_channel *ch, enum rdma_cm_event_type t)
{
	struct rdma_cm_event *ev = NULL;

	ck_assert_int_eq(rdma_get_cm_event(ch, &ev), 0);
	ck_assert_msg(ev->event == t, "got %s, wanted %s", rdma_event_str(ev->event), rdma_event_str(t));
	return ev;
}

void verbs_listen_and_resolve(struct verbs_ep *cli, struct verbs_ep *srv,
			      struct rdma_cm_id **listen_id, uint16_t port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port),
				  .sin_addr.s_addr = htonl(PAIR_IP_B) };

	srv->ch = rdma_create_event_channel();
	ck_assert_int_eq(rdma_create_id(srv->ch, listen_id, NULL, RDMA_PS_TCP), 0);
	ck_assert_int_eq(rdma_bind_addr(*listen_id, (struct sockaddr *)&sa), 0);
	ck_assert_int_eq(rdma_listen(*listen_id, 4), 0);
	cli->ch = rdma_create_event_channel();
	ck_assert_int_eq(rdma_create_id(cli->ch, &cli->id, cli, RDMA_PS_TCP), 0);
	ck_assert_int_eq(rdma_resolve_addr(cli->id, NULL, (struct sockaddr *)&sa, 2000), 0);
	rdma_ack_cm_event(verbs_expect_event(cli->ch, RDMA_CM_EVENT_ADDR_RESOLVED));
	ck_assert_int_eq(rdma_resolve_route(cli->id, 2000), 0);
	rdma_ack_cm_event(verbs_expect_event(cli->ch, RDMA_CM_EVENT_ROUTE_RESOLVED));
}
