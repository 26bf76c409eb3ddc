/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The verbs and rdma_cm API (rdma-core's own headers and types) between two stack
 * instances, used only through the public calls: connection set-up with private data,
 * Send, Send with Solicited Event on a completion channel, RDMA Write, RDMA Read, Send with
 * Invalidate, disconnect; and the error returns the man pages give.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "check_common.h"
#include "pair_fixture.h"
#include "rdmap.h"
#include "uiw_time.h"
#include "uiw_verbs.h"
#include "verbs_fixture.h"
#include "verbs_internal.h"

#define PORT 7471
#define SZ 65536


static struct verbs_ep cli, srv;
static bool use_srq;
static struct rdma_cm_id *listen_id;

static void setup(void)
{
	struct uiw_config cfg;

	pair_setup();
	uiw_config_defaults(&cfg);
	ck_assert_int_eq(uiw_verbs_add_device(&pair_a.st), 0);
	ck_assert_int_eq(uiw_verbs_add_device(&pair_b.st), 0);
	memset(&cli, 0, sizeof(cli));
	memset(&srv, 0, sizeof(srv));
}


static void teardown(void)
{
	verbs_pair_teardown(&cli, &srv, &listen_id);
}


static void resources(struct verbs_ep *e, struct rdma_cm_id *id)
{
	struct ibv_qp_init_attr qa = { .qp_type = IBV_QPT_RC,
				       .cap = { .max_send_wr = 32, .max_recv_wr = 32,
						.max_send_sge = 2, .max_recv_sge = 2 } };

	e->pd = ibv_alloc_pd(id->verbs);
	ck_assert_ptr_nonnull(e->pd);
	e->cc = ibv_create_comp_channel(id->verbs);
	ck_assert_ptr_nonnull(e->cc);
	e->cq = ibv_create_cq(id->verbs, 64, e, e->cc, 0);
	ck_assert_ptr_nonnull(e->cq);
	qa.send_cq = qa.recv_cq = e->cq;
	if (use_srq && e == &srv) {
		struct ibv_srq_init_attr sa = { .attr = { .max_wr = 16, .max_sge = 2 } };

		e->srq = ibv_create_srq(e->pd, &sa);
		ck_assert_ptr_nonnull(e->srq);
		qa.srq = e->srq;
	}
	ck_assert_int_eq(rdma_create_qp(id, e->pd, &qa), 0);
	e->buf = calloc(1, 2 * SZ);
	e->mr = ibv_reg_mr(e->pd, e->buf, SZ, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			   IBV_ACCESS_REMOTE_READ | IBV_ACCESS_RELAXED_ORDERING);
	e->mr2 = ibv_reg_mr(e->pd, e->buf + SZ, SZ, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	ck_assert_ptr_nonnull(e->mr);
	ck_assert_ptr_nonnull(e->mr2);
}

/* Listen on B, connect from A with private data, accept: both established. */
static void connect_pair(void)
{
	struct rdma_conn_param cp = { .private_data = "hello", .private_data_len = 5,
				      .initiator_depth = 4, .responder_resources = 4 };
	struct rdma_cm_event *ev;

	verbs_listen_and_resolve(&cli, &srv, &listen_id, PORT);
	ck_assert_str_eq(ibv_get_device_name(cli.id->verbs->device), "uiw0");
	resources(&cli, cli.id);
	ck_assert_int_eq(rdma_connect(cli.id, &cp), 0);

	ev = verbs_expect_event(srv.ch, RDMA_CM_EVENT_CONNECT_REQUEST);
	ck_assert_ptr_eq(ev->listen_id, listen_id);
	ck_assert_uint_eq(ev->param.conn.private_data_len, 5);
	ck_assert_mem_eq(ev->param.conn.private_data, "hello", 5);
	ck_assert_uint_eq(ev->param.conn.responder_resources, 4);
	srv.id = ev->id;
	ck_assert_str_eq(ibv_get_device_name(srv.id->verbs->device), "uiw1");
	rdma_ack_cm_event(ev);
	resources(&srv, srv.id);
	struct ibv_sge sge = { (uintptr_t)srv.buf + 1000, 256, srv.mr->lkey };
	struct ibv_recv_wr rw = { .wr_id = 77, .sg_list = &sge, .num_sge = 1 }, *bad_r;

	ck_assert_int_eq(srv.srq != NULL ? ibv_post_srq_recv(srv.srq, &rw, &bad_r)
					 : ibv_post_recv(srv.id->qp, &rw, &bad_r), 0);
	cp.private_data = "welcome";
	cp.private_data_len = 7;
	ck_assert_int_eq(rdma_accept(srv.id, &cp), 0);
	rdma_ack_cm_event(verbs_expect_event(srv.ch, RDMA_CM_EVENT_ESTABLISHED));
	ev = verbs_expect_event(cli.ch, RDMA_CM_EVENT_ESTABLISHED);
	ck_assert_uint_eq(ev->param.conn.private_data_len, 7);
	ck_assert_mem_eq(ev->param.conn.private_data, "welcome", 7);
	rdma_ack_cm_event(ev);
}

static struct ibv_wc poll_one(struct ibv_cq *cq)
{
	struct ibv_wc wc;
	int n;

	for (int spins = 0; spins < 10000000; spins++)
		if ((n = ibv_poll_cq(cq, 1, &wc)) != 0)
			break;
	ck_assert_int_eq(n, 1);
	return wc;
}

START_TEST(operations_through_the_api)
{
	struct ibv_send_wr *bad;
	struct ibv_wc wc;

	connect_pair();
	/* Send (A first: the responder may not send before the initiator's first FPDU). */
	strcpy((char *)cli.buf, "over verbs");
	struct ibv_sge s = { (uintptr_t)cli.buf, 10, cli.mr->lkey };
	struct ibv_send_wr w = { .wr_id = 1, .sg_list = &s, .num_sge = 1, .opcode = IBV_WR_SEND,
				 .send_flags = IBV_SEND_SIGNALED };

	ck_assert_int_eq(ibv_post_send(cli.id->qp, &w, &bad), 0);
	wc = poll_one(cli.cq);
	ck_assert_int_eq(wc.status, IBV_WC_SUCCESS);
	ck_assert_int_eq(wc.opcode, IBV_WC_SEND);
	ck_assert_uint_eq(wc.wr_id, 1);
	wc = poll_one(srv.cq);
	ck_assert_int_eq(wc.status, IBV_WC_SUCCESS);
	ck_assert_int_eq(wc.opcode, IBV_WC_RECV);
	ck_assert_uint_eq(wc.wr_id, 77);
	ck_assert_uint_eq(wc.byte_len, 10);
	ck_assert_uint_eq(wc.qp_num, srv.id->qp->qp_num);
	ck_assert_mem_eq(srv.buf + 1000, "over verbs", 10);

	/* RDMA Write, then a Read of the same bytes back. */
	for (int i = 0; i < 8192; i++)
		cli.buf[4096 + i] = (uint8_t)(i * 3);
	s = (struct ibv_sge){ (uintptr_t)cli.buf + 4096, 8192, cli.mr->lkey };
	w = (struct ibv_send_wr){ .wr_id = 2, .sg_list = &s, .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE,
				  .send_flags = IBV_SEND_SIGNALED,
				  .wr.rdma = { .remote_addr = (uintptr_t)srv.buf + 20000, .rkey = srv.mr->rkey } };
	ck_assert_int_eq(ibv_post_send(cli.id->qp, &w, &bad), 0);
	ck_assert_int_eq(poll_one(cli.cq).opcode, IBV_WC_RDMA_WRITE);
	struct ibv_sge rs = { (uintptr_t)cli.buf + 30000, 8192, cli.mr->lkey };
	struct ibv_send_wr r = { .wr_id = 3, .sg_list = &rs, .num_sge = 1, .opcode = IBV_WR_RDMA_READ,
				 .send_flags = IBV_SEND_SIGNALED,
				 .wr.rdma = { .remote_addr = (uintptr_t)srv.buf + 20000, .rkey = srv.mr->rkey } };

	ck_assert_int_eq(ibv_post_send(cli.id->qp, &r, &bad), 0);
	wc = poll_one(cli.cq);
	ck_assert_int_eq(wc.status, IBV_WC_SUCCESS);
	ck_assert_int_eq(wc.opcode, IBV_WC_RDMA_READ);
	ck_assert_uint_eq(wc.byte_len, 8192);
	ck_assert_mem_eq(srv.buf + 20000, cli.buf + 4096, 8192);
	ck_assert_mem_eq(cli.buf + 30000, cli.buf + 4096, 8192);

	/* Send with Solicited Event and Invalidate: the server's CQ, armed for solicited
	 * completions only, reports through its completion channel. */
	struct ibv_sge rsge = { (uintptr_t)srv.buf + 2000, 64, srv.mr->lkey };
	struct ibv_recv_wr rw = { .wr_id = 78, .sg_list = &rsge, .num_sge = 1 }, *bad_r;
	struct ibv_cq *ev_cq;
	void *ev_ctx;

	ck_assert_int_eq(ibv_post_recv(srv.id->qp, &rw, &bad_r), 0);
	ck_assert_int_eq(ibv_req_notify_cq(srv.cq, 1), 0);
	w = (struct ibv_send_wr){ .wr_id = 4, .sg_list = &s, .num_sge = 1, .opcode = IBV_WR_SEND_WITH_INV,
				  .send_flags = IBV_SEND_SIGNALED | IBV_SEND_SOLICITED,
				  .invalidate_rkey = srv.mr2->rkey };
	s.length = 16;
	ck_assert_int_eq(ibv_post_send(cli.id->qp, &w, &bad), 0);
	ck_assert_int_eq(ibv_get_cq_event(srv.cc, &ev_cq, &ev_ctx), 0);
	ck_assert_ptr_eq(ev_cq, srv.cq);
	ck_assert_ptr_eq(ev_ctx, &srv);
	ibv_ack_cq_events(ev_cq, 1);
	wc = poll_one(srv.cq);
	ck_assert_int_eq(wc.status, IBV_WC_SUCCESS);
	ck_assert(wc.wc_flags & IBV_WC_WITH_INV);
	ck_assert_uint_eq(wc.invalidated_rkey, srv.mr2->rkey);
	poll_one(cli.cq);

	/* Disconnect: both sides hear it; later work completes flushed (the drain idiom). */
	ck_assert_int_eq(rdma_disconnect(cli.id), 0);
	rdma_ack_cm_event(verbs_expect_event(cli.ch, RDMA_CM_EVENT_DISCONNECTED));
	rdma_ack_cm_event(verbs_expect_event(srv.ch, RDMA_CM_EVENT_DISCONNECTED));
	w.opcode = IBV_WR_SEND;
	w.wr_id = 5;
	w.send_flags = 0;
	ck_assert_int_eq(ibv_post_send(cli.id->qp, &w, &bad), 0);
	wc = poll_one(cli.cq);
	ck_assert_uint_eq(wc.wr_id, 5);
	ck_assert_int_eq(wc.status, IBV_WC_WR_FLUSH_ERR);
	rsge = (struct ibv_sge){ (uintptr_t)cli.buf, 64, cli.mr->lkey };
	ck_assert_int_eq(ibv_post_recv(cli.id->qp, &rw, &bad_r), 0);
	wc = poll_one(cli.cq);
	ck_assert_uint_eq(wc.wr_id, 78);
	ck_assert_int_eq(wc.status, IBV_WC_WR_FLUSH_ERR);
	ck_assert_int_eq(wc.opcode, IBV_WC_RECV);
	/* A QP made by rdma_create_qp may go through ibv_destroy_qp: the id forgets it. */
	ck_assert_int_eq(ibv_destroy_qp(srv.id->qp), 0);
	ck_assert_ptr_null(srv.id->qp);
}
END_TEST

/* RFC 5042 §5.1: STags a peer cannot guess. The 8-bit key of each region's STag is drawn
 * at random (it was a counter), so successive registrations do not step by one. */
/* What librdmacm's helpers expect rdma_cm to make when a program leaves it out: with no
 * PD the device's own, a CQ (with a channel, the id as its context) for each queue the
 * attributes give none, the program's own CQ kept; they go with the QP. And a bind to
 * port 0 listens on a port of Linux's local range, read back by rdma_get_src_port(). */
START_TEST(rdma_cm_makes_what_the_program_leaves_out)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(PAIR_IP_B) };
	struct rdma_cm_id *any;
	struct ibv_cq *mine;
	uint16_t port;

	verbs_listen_and_resolve(&cli, &srv, &listen_id, PORT);
	mine = ibv_create_cq(cli.id->verbs, 8, NULL, NULL, 0);
	ck_assert_ptr_nonnull(mine);
	struct ibv_qp_init_attr qa = { .qp_type = IBV_QPT_RC, .send_cq = mine,
				       .cap = { .max_send_wr = 4, .max_recv_wr = 4,
						.max_send_sge = 1, .max_recv_sge = 1 } };

	ck_assert_int_eq(rdma_create_qp(cli.id, NULL, &qa), 0);
	ck_assert_ptr_nonnull(cli.id->pd);
	ck_assert_ptr_eq(cli.id->qp->pd, cli.id->pd);
	ck_assert_ptr_eq(cli.id->qp->send_cq, mine);
	ck_assert_ptr_null(cli.id->send_cq);
	ck_assert_ptr_nonnull(cli.id->recv_cq);
	ck_assert_ptr_nonnull(cli.id->recv_cq_channel);
	ck_assert_ptr_eq(cli.id->qp->recv_cq, cli.id->recv_cq);
	ck_assert_ptr_eq(cli.id->recv_cq->cq_context, cli.id);
	rdma_destroy_qp(cli.id);
	ck_assert_ptr_null(cli.id->recv_cq);
	ck_assert_ptr_null(cli.id->recv_cq_channel);
	ck_assert_int_eq(ibv_destroy_cq(mine), 0);

	ck_assert_int_eq(rdma_create_id(srv.ch, &any, NULL, RDMA_PS_TCP), 0);
	ck_assert_int_eq(rdma_bind_addr(any, (struct sockaddr *)&sa), 0);
	ck_assert_int_eq(rdma_listen(any, 0), 0);
	port = ntohs(rdma_get_src_port(any));
	ck_assert_uint_ge(port, 32768);
	ck_assert_uint_le(port, 60999);
	ck_assert_int_eq(rdma_destroy_id(any), 0);
}
END_TEST

/* The event channel's fd is readable exactly while events wait (programs poll() it): with
 * two queued, after the first is taken, and not once both are (the eventfd is written for
 * the first event only and read when the last goes). */
START_TEST(event_fd_readable_while_events_wait)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(PORT),
				  .sin_addr.s_addr = htonl(PAIR_IP_B) };
	struct rdma_cm_id *a, *b;
	struct rdma_cm_event *ev;
	struct pollfd p;

	cli.ch = rdma_create_event_channel();
	ck_assert_ptr_nonnull(cli.ch);
	p = (struct pollfd){ .fd = cli.ch->fd, .events = POLLIN };
	ck_assert_int_eq(fcntl(cli.ch->fd, F_SETFL, O_NONBLOCK), 0);
	ck_assert_int_eq(rdma_create_id(cli.ch, &a, NULL, RDMA_PS_TCP), 0);
	ck_assert_int_eq(rdma_create_id(cli.ch, &b, NULL, RDMA_PS_TCP), 0);
	ck_assert_int_eq(poll(&p, 1, 0), 0);
	ck_assert_int_eq(rdma_resolve_addr(a, NULL, (struct sockaddr *)&sa, 2000), 0);
	ck_assert_int_eq(rdma_resolve_addr(b, NULL, (struct sockaddr *)&sa, 2000), 0);
	/* Both addresses resolve (ARP), neither event taken. */
	for (uint64_t end = uiw_now_ns() + 200 * UIW_NS_PER_MS; uiw_now_ns() < end;)
		uiw_verbs_progress();
	ck_assert_int_eq(poll(&p, 1, 0), 1);
	ck_assert_int_eq(rdma_get_cm_event(cli.ch, &ev), 0);
	ck_assert_int_eq(ev->event, RDMA_CM_EVENT_ADDR_RESOLVED);
	rdma_ack_cm_event(ev);
	ck_assert_int_eq(poll(&p, 1, 0), 1);
	ck_assert_int_eq(rdma_get_cm_event(cli.ch, &ev), 0);
	ck_assert_int_eq(ev->event, RDMA_CM_EVENT_ADDR_RESOLVED);
	rdma_ack_cm_event(ev);
	ck_assert_int_eq(poll(&p, 1, 0), 0);
	ck_assert_int_eq(rdma_get_cm_event(cli.ch, &ev), -1);
	ck_assert_int_eq(errno, EAGAIN);
	ck_assert_int_eq(poll(&p, 1, 0), 0);
	ck_assert_int_eq(rdma_destroy_id(a), 0);
	ck_assert_int_eq(rdma_destroy_id(b), 0);
}
END_TEST

START_TEST(stag_keys_not_sequential)
{
	struct ibv_mr *mr[64];
	unsigned steps = 0, distinct = 0;
	bool seen[256] = { false };

	connect_pair();
	for (int i = 0; i < 64; i++) {
		mr[i] = ibv_reg_mr(cli.pd, cli.buf, 64, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
		ck_assert_ptr_nonnull(mr[i]);
		ck_assert_uint_eq(mr[i]->lkey, mr[i]->rkey);
		distinct += !seen[mr[i]->rkey & 0xff];
		seen[mr[i]->rkey & 0xff] = true;
		if (i > 0)
			steps += ((mr[i]->rkey - mr[i - 1]->rkey) & 0xff) == 1;
	}
	ck_assert_uint_lt(steps, 8);        /* random keys: about 0.25 expected */
	ck_assert_uint_gt(distinct, 40);    /* about 56.6 expected of 64 draws from 256 */
	for (int i = 0; i < 64; i++)
		ck_assert_int_eq(ibv_dereg_mr(mr[i]), 0);
}
END_TEST

START_TEST(errors_as_the_man_pages_say)
{
	struct rdma_cm_id *id;
	struct rdma_cm_event *ev;
	struct ibv_send_wr *bad = NULL;

	connect_pair();
	/* No local invalidation work requests: EINVAL, bad_wr points at it. */
	struct ibv_sge s = { (uintptr_t)cli.buf, 10, cli.mr->lkey };
	struct ibv_send_wr w = { .wr_id = 1, .sg_list = &s, .num_sge = 1, .opcode = IBV_WR_LOCAL_INV };

	ck_assert_int_eq(ibv_post_send(cli.id->qp, &w, &bad), EINVAL);
	ck_assert_ptr_eq(bad, &w);
	/* Only RDMA_PS_TCP; a non-blocking channel with nothing queued says EAGAIN. */
	ck_assert_int_eq(rdma_create_id(cli.ch, &id, NULL, RDMA_PS_UDP), -1);
	ck_assert_int_eq(errno, EINVAL);
	fcntl(cli.ch->fd, F_SETFL, fcntl(cli.ch->fd, F_GETFL) | O_NONBLOCK);
	ck_assert_int_eq(rdma_get_cm_event(cli.ch, &ev), -1);
	ck_assert_int_eq(errno, EAGAIN);
	/* A second listener on the same port. */
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(PORT),
				  .sin_addr.s_addr = htonl(PAIR_IP_B) };

	ck_assert_int_eq(rdma_create_id(cli.ch, &id, NULL, RDMA_PS_TCP), 0);
	ck_assert_int_eq(rdma_bind_addr(id, (struct sockaddr *)&sa), 0);
	ck_assert_int_eq(rdma_listen(id, 1), -1);
	ck_assert_int_eq(errno, EADDRINUSE);
	rdma_destroy_id(id);
	/* Devices: two, iWARP RNICs. */
	int n;
	struct ibv_device **list = ibv_get_device_list(&n);

	ck_assert_int_eq(n, 2);
	ck_assert_int_eq(list[0]->transport_type, IBV_TRANSPORT_IWARP);
	ck_assert_int_eq(list[0]->node_type, IBV_NODE_RNIC);
	ck_assert_ptr_null(list[2]);
	ibv_free_device_list(list);
	struct ibv_device_attr da;
	struct ibv_port_attr pa;

	ck_assert_int_eq(ibv_query_device(cli.id->verbs, &da), 0);
	ck_assert_int_eq(da.max_sge_rd, 1);
	ck_assert_int_eq(ibv_query_port(cli.id->verbs, 1, &pa), 0);
	ck_assert_int_eq(pa.state, IBV_PORT_ACTIVE);
	/* A bad lkey is found when the WR starts, as on an RNIC: a local protection error,
	 * the work behind it flushed, the QP Terminated. */
	struct ibv_send_wr w2 = { .wr_id = 2, .sg_list = &s, .num_sge = 1, .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED };

	s.lkey = cli.mr->lkey ^ 0x100;
	w.opcode = IBV_WR_SEND;
	w.next = &w2;
	ck_assert_int_eq(ibv_post_send(cli.id->qp, &w, &bad), 0);
	struct ibv_wc wc = poll_one(cli.cq);

	ck_assert_uint_eq(wc.wr_id, 1);
	ck_assert_int_eq(wc.status, IBV_WC_LOC_PROT_ERR);
	wc = poll_one(cli.cq);
	ck_assert_uint_eq(wc.wr_id, 2);
	ck_assert_int_eq(wc.status, IBV_WC_WR_FLUSH_ERR);
	ck_assert_uint_eq(uiw_qp_counters(uiw_verbs_qp_core(cli.id->qp))[UIW_RDMAP_C_tx_bad_lkey], 1);
	rdma_ack_cm_event(verbs_expect_event(srv.ch, RDMA_CM_EVENT_DISCONNECTED));
}
END_TEST

START_TEST(reject_with_private_data)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(PORT),
				  .sin_addr.s_addr = htonl(PAIR_IP_B) };
	struct rdma_cm_event *ev;

	srv.ch = rdma_create_event_channel();
	ck_assert_int_eq(rdma_create_id(srv.ch, &listen_id, NULL, RDMA_PS_TCP), 0);
	ck_assert_int_eq(rdma_bind_addr(listen_id, (struct sockaddr *)&sa), 0);
	ck_assert_int_eq(rdma_listen(listen_id, 4), 0);
	cli.ch = rdma_create_event_channel();
	ck_assert_int_eq(rdma_create_id(cli.ch, &cli.id, NULL, RDMA_PS_TCP), 0);
	ck_assert_int_eq(rdma_resolve_addr(cli.id, NULL, (struct sockaddr *)&sa, 2000), 0);
	rdma_ack_cm_event(verbs_expect_event(cli.ch, RDMA_CM_EVENT_ADDR_RESOLVED));
	resources(&cli, cli.id);
	ck_assert_int_eq(rdma_connect(cli.id, NULL), 0);
	ev = verbs_expect_event(srv.ch, RDMA_CM_EVENT_CONNECT_REQUEST);
	ck_assert_int_eq(rdma_reject(ev->id, "full", 4), 0);
	srv.id = ev->id;
	rdma_ack_cm_event(ev);
	ev = verbs_expect_event(cli.ch, RDMA_CM_EVENT_REJECTED);
	ck_assert_uint_eq(ev->param.conn.private_data_len, 4);
	ck_assert_mem_eq(ev->param.conn.private_data, "full", 4);
	rdma_ack_cm_event(ev);
}
END_TEST

/* Runs both instances until @p ch's fd is readable (an event waits), up to 2 s. */
static bool pump_until_event(struct rdma_event_channel *ch)
{
	struct pollfd p = { .fd = ch->fd, .events = POLLIN };

	for (uint64_t end = uiw_now_ns() + 2000 * UIW_NS_PER_MS; uiw_now_ns() < end;) {
		if (poll(&p, 1, 0) == 1)
			return true;
		uiw_verbs_progress();
	}
	return false;
}

/* An id destroyed with events still queued for it takes them along, as rdma-core's does
 * (the kernel drops what it has not reported): read afterwards, each named freed memory.
 * libfabric's RXM does this when a simultaneous connect is lost (the connecting id goes
 * while the peer's rejection is on its way), and MPI over it crashed. A listener destroyed
 * with a connection request queued refuses that request and frees the id made for it. */
START_TEST(destroyed_id_takes_its_queued_events)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(PORT),
				  .sin_addr.s_addr = htonl(PAIR_IP_B) };
	struct rdma_cm_id *a, *b;
	struct rdma_cm_event *ev;
	struct pollfd p;

	srv.ch = rdma_create_event_channel();
	ck_assert_int_eq(rdma_create_id(srv.ch, &listen_id, NULL, RDMA_PS_TCP), 0);
	ck_assert_int_eq(rdma_bind_addr(listen_id, (struct sockaddr *)&sa), 0);
	ck_assert_int_eq(rdma_listen(listen_id, 4), 0);
	cli.ch = rdma_create_event_channel();
	ck_assert_int_eq(fcntl(cli.ch->fd, F_SETFL, O_NONBLOCK), 0);
	ck_assert_int_eq(fcntl(srv.ch->fd, F_SETFL, O_NONBLOCK), 0);
	ck_assert_int_eq(rdma_create_id(cli.ch, &a, NULL, RDMA_PS_TCP), 0);
	ck_assert_int_eq(rdma_create_id(cli.ch, &b, NULL, RDMA_PS_TCP), 0);
	ck_assert_int_eq(rdma_resolve_addr(a, NULL, (struct sockaddr *)&sa, 2000), 0);
	ck_assert(pump_until_event(cli.ch));
	rdma_ack_cm_event(verbs_expect_event(cli.ch, RDMA_CM_EVENT_ADDR_RESOLVED));
	ck_assert_int_eq(rdma_connect(a, NULL), 0);
	ck_assert(pump_until_event(srv.ch));
	ev = verbs_expect_event(srv.ch, RDMA_CM_EVENT_CONNECT_REQUEST);
	ck_assert_int_eq(rdma_reject(ev->id, NULL, 0), 0);
	srv.id = ev->id;
	rdma_ack_cm_event(ev);
	/* a's rejection queued and not read; then b's address, queued behind it. */
	ck_assert(pump_until_event(cli.ch));
	ck_assert_int_eq(rdma_resolve_addr(b, NULL, (struct sockaddr *)&sa, 2000), 0);
	for (uint64_t end = uiw_now_ns() + 100 * UIW_NS_PER_MS; uiw_now_ns() < end;)
		uiw_verbs_progress();
	ck_assert_int_eq(rdma_destroy_id(a), 0);
	ev = verbs_expect_event(cli.ch, RDMA_CM_EVENT_ADDR_RESOLVED);
	ck_assert_ptr_eq(ev->id, b);
	rdma_ack_cm_event(ev);
	p = (struct pollfd){ .fd = cli.ch->fd, .events = POLLIN };
	ck_assert_int_eq(poll(&p, 1, 0), 0);
	ck_assert_int_eq(rdma_get_cm_event(cli.ch, &ev), -1);
	ck_assert_int_eq(errno, EAGAIN);

	/* b connects; the listener goes with b's request queued and unread. */
	ck_assert_int_eq(rdma_connect(b, NULL), 0);
	ck_assert(pump_until_event(srv.ch));
	ck_assert_int_eq(rdma_destroy_id(listen_id), 0);
	listen_id = NULL;
	p = (struct pollfd){ .fd = srv.ch->fd, .events = POLLIN };
	ck_assert_int_eq(poll(&p, 1, 0), 0);
	ck_assert_int_eq(rdma_get_cm_event(srv.ch, &ev), -1);
	ck_assert_int_eq(errno, EAGAIN);
	ck_assert(pump_until_event(cli.ch));
	ev = verbs_expect_event(cli.ch, RDMA_CM_EVENT_REJECTED);
	ck_assert_ptr_eq(ev->id, b);
	rdma_ack_cm_event(ev);
	ck_assert_int_eq(rdma_destroy_id(b), 0);
	rdma_destroy_event_channel(srv.ch);   /* the listener's, which the teardown no longer knows */
}
END_TEST

/* rdma_resolve_addr() waits for the next hop's ARP answer; for an address nobody answers
 * it ends, as Linux's rdma_cm does, with RDMA_CM_EVENT_ADDR_ERROR and -ETIMEDOUT once the
 * caller's timeout has passed, not before. */
START_TEST(resolve_addr_times_out_unanswered)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(PORT),
				  .sin_addr.s_addr = htonl(PAIR_IP_B + 97) };
	struct rdma_cm_event *ev;
	uint64_t t0;

	cli.ch = rdma_create_event_channel();
	ck_assert_int_eq(rdma_create_id(cli.ch, &cli.id, NULL, RDMA_PS_TCP), 0);
	t0 = uiw_now_ns();
	ck_assert_int_eq(rdma_resolve_addr(cli.id, NULL, (struct sockaddr *)&sa, 150), 0);
	ev = verbs_expect_event(cli.ch, RDMA_CM_EVENT_ADDR_ERROR);
	ck_assert_int_eq(ev->status, -ETIMEDOUT);
	ck_assert_uint_ge(uiw_now_ns() - t0, 150 * UIW_NS_PER_MS);
	rdma_ack_cm_event(ev);
}
END_TEST

/* A shared receive queue feeds the server's QP: receives are taken in posting order, and
 * posting to the QP itself is refused. */
START_TEST(shared_receive_queue)
{
	struct ibv_recv_wr *bad_r;
	struct ibv_send_wr *bad;

	use_srq = true;
	connect_pair();
	for (int k = 0; k < 3; k++) {
		struct ibv_sge rs = { (uintptr_t)srv.buf + 3000 + 100 * k, 100, srv.mr->lkey };
		struct ibv_recv_wr rw = { .wr_id = 200 + k, .sg_list = &rs, .num_sge = 1 };

		ck_assert_int_eq(ibv_post_srq_recv(srv.srq, &rw, &bad_r), 0);
	}
	struct ibv_sge qs = { (uintptr_t)srv.buf, 8, srv.mr->lkey };
	struct ibv_recv_wr qw = { .wr_id = 1, .sg_list = &qs, .num_sge = 1 };

	ck_assert_int_eq(ibv_post_recv(srv.id->qp, &qw, &bad_r), EINVAL);
	for (int k = 0; k < 4; k++) {
		struct ibv_sge s = { (uintptr_t)cli.buf + k, 5, cli.mr->lkey };
		struct ibv_send_wr w = { .wr_id = (uint64_t)k, .sg_list = &s, .num_sge = 1,
					 .opcode = IBV_WR_SEND };

		ck_assert_int_eq(ibv_post_send(cli.id->qp, &w, &bad), 0);
	}
	/* The one posted before accept, then the three: 77, 200, 201, 202. */
	static const uint64_t want[] = { 77, 200, 201, 202 };

	for (int k = 0; k < 4; k++) {
		struct ibv_wc wc = poll_one(srv.cq);

		ck_assert_int_eq(wc.status, IBV_WC_SUCCESS);
		ck_assert_uint_eq(wc.wr_id, want[k]);
	}
	use_srq = false;
}
END_TEST

/* What a thread the EAL made no lcore of saw around its calls, and how they went. */
struct no_lcore_run {
	unsigned before, after, after_eal;
	int post_rc, polled;
	enum ibv_wc_status status;
};

/* A 32 KiB Write from the client, posted and polled for in this thread, and passes until
 * it is placed. */
static void *write_from_a_thread(void *arg)
{
	struct no_lcore_run *r = arg;
	struct ibv_sge sge = { (uintptr_t)cli.buf, SZ / 2, cli.mr->lkey };
	struct ibv_send_wr w = { .wr_id = 9, .sg_list = &sge, .num_sge = 1,
				 .opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED,
				 .wr.rdma = { .remote_addr = (uintptr_t)srv.buf, .rkey = srv.mr->rkey } };
	struct ibv_send_wr *bad;
	struct ibv_wc wc = { .status = IBV_WC_GENERAL_ERR };

	r->before = rte_lcore_id();
	r->post_rc = ibv_post_send(cli.id->qp, &w, &bad);
	for (long spins = 0; r->post_rc == 0 && r->polled == 0 && spins < 100000000; spins++)
		r->polled = ibv_poll_cq(cli.cq, 1, &wc);
	r->status = wc.status;
	/* The Write's completion says the octets left; passes until the server's copy has
	 * them all (both sides' passes run in this thread). */
	for (long spins = 0; spins < 10000000 && memcmp(srv.buf, cli.buf, SZ / 2) != 0; spins++)
		ibv_poll_cq(cli.cq, 1, &wc);
	r->after = rte_lcore_id();
	r->after_eal = uiw_lcore_id_eal();
	return NULL;
}

/* The engine the QP of @p id runs on. */
static struct uiw_eng *engine_of(struct rdma_cm_id *id)
{
	struct uiw_qp_v *q = (struct uiw_qp_v *)id->qp;

	return &q->dev->eng[q->eng];
}

/*
 * Passes made by a thread the EAL gave no lcore (the drop-in's progress thread, or a
 * program's second thread) take mbufs through the caches of the engine's spare lcore id,
 * not the pool's ring, and the thread's own id is LCORE_ID_ANY again after each.
 */
START_TEST(pass_without_an_eal_lcore_takes_the_engines_caches)
{
	struct rte_mempool *cached;
	struct no_lcore_run r = { 0 };
	pthread_t t;

	/* The test pool has no per-lcore caches: both sides again, on one that has. */
	teardown();
	cached = rte_pktmbuf_pool_create("verbs_cached", 4095, 256, 0, RTE_MBUF_DEFAULT_BUF_SIZE,
					 (int)rte_socket_id());
	ck_assert_ptr_nonnull(cached);
	pair_pool = cached;
	setup();
	connect_pair();

	struct uiw_eng *ga = engine_of(cli.id), *gb = engine_of(srv.id);

	ck_assert_uint_ne(ga->cache_lcore, LCORE_ID_ANY);
	ck_assert_uint_ne(gb->cache_lcore, LCORE_ID_ANY);
	ck_assert_uint_ne(ga->cache_lcore, gb->cache_lcore);
	ck_assert_int_eq(rte_eal_lcore_role(ga->cache_lcore), ROLE_OFF);
	ck_assert_int_eq(rte_eal_lcore_role(gb->cache_lcore), ROLE_OFF);
	ck_assert_uint_eq(rte_mempool_default_cache(cached, ga->cache_lcore)->len, 0);
	ck_assert_uint_eq(rte_mempool_default_cache(cached, gb->cache_lcore)->len, 0);
	memset(cli.buf, 0x5a, SZ / 2);

	ck_assert_int_eq(pthread_create(&t, NULL, write_from_a_thread, &r), 0);
	ck_assert_int_eq(pthread_join(t, NULL), 0);
	ck_assert_uint_eq(r.before, LCORE_ID_ANY);
	ck_assert_uint_eq(r.after, LCORE_ID_ANY);
	ck_assert_uint_eq(r.after_eal, LCORE_ID_ANY);
	ck_assert_int_eq(r.post_rc, 0);
	ck_assert_int_eq(r.polled, 1);
	ck_assert_int_eq(r.status, IBV_WC_SUCCESS);
	ck_assert_mem_eq(srv.buf, cli.buf, SZ / 2);
	/* The sender's FPDUs came through its engine's caches, and the receiver gave back
	 * what it took through its own. */
	ck_assert_uint_gt(rte_mempool_default_cache(cached, ga->cache_lcore)->len, 0);
	ck_assert_uint_gt(rte_mempool_default_cache(cached, gb->cache_lcore)->len, 0);

	teardown();
	pair_pool = NULL;
	ck_assert_uint_eq(rte_mempool_in_use_count(cached), 0);
	rte_mempool_free(cached);
	setup();   /* for the fixture's tear-down */
}
END_TEST

int main(void)
{
	Suite *s = suite_create("verbs");
	TCase *tc = tcase_with_leak_check("verbs", setup, teardown);

	tcase_add_test(tc, operations_through_the_api);
	tcase_add_test(tc, errors_as_the_man_pages_say);
	tcase_add_test(tc, rdma_cm_makes_what_the_program_leaves_out);
	tcase_add_test(tc, stag_keys_not_sequential);
	tcase_add_test(tc, event_fd_readable_while_events_wait);
	tcase_add_test(tc, reject_with_private_data);
	tcase_add_test(tc, destroyed_id_takes_its_queued_events);
	tcase_add_test(tc, resolve_addr_times_out_unanswered);
	tcase_add_test(tc, shared_receive_queue);
	tcase_add_test(tc, pass_without_an_eal_lcore_takes_the_engines_caches);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
