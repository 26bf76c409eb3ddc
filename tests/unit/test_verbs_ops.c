/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Every iWARP operation through the verbs and rdma_cm API only, between two stack
 * instances: Send, Send with Solicited Event, Send with Invalidate, Send with SE and
 * Invalidate, RDMA Write and RDMA Read at sizes 0, 1, around MULPDU and 1 MiB, under each MPA
 * policy (CRC on and off, Markers, revision 1) and through 5% loss; Reads at the ORD/IRD
 * limit; a Write to a region a Send with Invalidate invalidated, Terminated; solicited-only
 * notification; a shared receive queue with several SGEs; a Send into an empty receive
 * queue, Terminated; inline data; batches of the extended send API (ibv_wr_*), posted whole
 * or not at all. Data is checked byte for byte and the bytes around each target must stay
 * untouched. With UIW_PAIR_PCAP_DIR set each case leaves its capture there (the verbs_wire
 * test runs them through tshark's dissectors).
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "check_common.h"
#include "pair_fixture.h"
#include "rdmap.h"
#include "tcp.h"
#include "tcp_internal.h"
#include "uiw_time.h"
#include "uiw_verbs.h"
#include "verbs_fixture.h"

#define PORT 7472
#define BIG (1024u * 1024u)
#define SRC 0u                     /* where a side's outgoing data lies */
#define DST (2u * BIG)             /* first target region */
#define DST2 (4u * BIG)            /* second target region (a receive's second SGE) */
#define BUF (6u * BIG)
#define GUARD 0xa5
#define WAIT_MS 20000


static struct verbs_ep cli, srv;
static struct rdma_cm_id *listen_id;
static struct uiw_config cfg;
static uint64_t cli_send_ops;   /* non-zero: the client's QP is made for the ibv_wr_* calls */

/* The MPA policies of the matrix. */
static const struct policy {
	const char *name;
	int rev, crc, markers;
	bool loss;
} policies[] = {
	{ "crc", 2, 1, 0, false },
	{ "nocrc", 2, 0, 0, false },
	{ "crc-markers", 2, 1, 1, false },
	{ "rev1-markers", 1, 0, 1, false },
	{ "crc-loss5", 2, 1, 0, true },
};

static void base_config(const struct policy *p)
{
	uiw_config_defaults(&cfg);
	cfg.tcp_max_conns = 64;
	cfg.tcp_time_wait_ms = 0;
	cfg.tcp_delack_us = 0;
	cfg.mpa_rev = p->rev;
	cfg.mpa_crc = p->crc;
	cfg.mpa_markers = p->markers;
	if (p->loss) {
		cfg.tcp_min_rto_ms = 5;
		cfg.tcp_init_rto_ms = 20;
		snprintf(cfg.fault_rx, sizeof(cfg.fault_rx), "drop=5");
		snprintf(cfg.fault_tx, sizeof(cfg.fault_tx), "drop=5");
		cfg.fault_seed = 5;
	}
}

static void start(const struct policy *p, const char *capture)
{
	char name[96];

	base_config(p);
	pair_setup_cfg(&cfg);
	snprintf(name, sizeof(name), "%s-%s", capture, p->name);
	pair_capture(name);
	ck_assert_int_eq(uiw_verbs_add_device(&pair_a.st), 0);
	ck_assert_int_eq(uiw_verbs_add_device(&pair_b.st), 0);
}

static void setup(void)
{
	memset(&cli, 0, sizeof(cli));
	memset(&srv, 0, sizeof(srv));
	listen_id = NULL;
	cli_send_ops = 0;
}


static void teardown(void)
{
	verbs_pair_teardown(&cli, &srv, &listen_id);
}


static void resources(struct verbs_ep *e, struct rdma_cm_id *id, bool srq)
{
	struct ibv_qp_init_attr qa = { .qp_type = IBV_QPT_RC,
				       .cap = { .max_send_wr = 64, .max_recv_wr = 64,
						.max_send_sge = 3, .max_recv_sge = 3 } };

	e->pd = ibv_alloc_pd(id->verbs);
	ck_assert_ptr_nonnull(e->pd);
	e->cc = ibv_create_comp_channel(id->verbs);
	ck_assert_ptr_nonnull(e->cc);
	e->cq = ibv_create_cq(id->verbs, 256, e, e->cc, 0);
	ck_assert_ptr_nonnull(e->cq);
	qa.send_cq = qa.recv_cq = e->cq;
	if (srq) {
		struct ibv_srq_init_attr sa = { .attr = { .max_wr = 16, .max_sge = 3 } };

		e->srq = ibv_create_srq(e->pd, &sa);
		ck_assert_ptr_nonnull(e->srq);
		qa.srq = e->srq;
	}
	if (e == &cli && cli_send_ops != 0) {
		struct ibv_qp_init_attr_ex x = { .send_cq = qa.send_cq, .recv_cq = qa.recv_cq,
						 .cap = qa.cap, .qp_type = IBV_QPT_RC, .pd = e->pd,
						 .comp_mask = IBV_QP_INIT_ATTR_PD |
							      IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
						 .send_ops_flags = cli_send_ops };

		ck_assert_int_eq(rdma_create_qp_ex(id, &x), 0);
	} else {
		ck_assert_int_eq(rdma_create_qp(id, e->pd, &qa), 0);
	}
	e->buf = malloc(BUF);
	ck_assert_ptr_nonnull(e->buf);
	memset(e->buf, GUARD, BUF);
	e->mr = ibv_reg_mr(e->pd, e->buf, BUF, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			   IBV_ACCESS_REMOTE_READ);
	ck_assert_ptr_nonnull(e->mr);
}

/* Listen on B, connect from A with ORD @p ord / IRD @p ird, B accepts with its own pair. */
static void connect_ords(uint8_t cli_ord, uint8_t cli_ird, uint8_t srv_ord, uint8_t srv_ird,
			 bool srq)
{
	struct rdma_conn_param cp = { .initiator_depth = cli_ord, .responder_resources = cli_ird };
	struct rdma_cm_event *ev;

	verbs_listen_and_resolve(&cli, &srv, &listen_id, PORT);
	resources(&cli, cli.id, false);
	ck_assert_int_eq(rdma_connect(cli.id, &cp), 0);
	ev = verbs_expect_event(srv.ch, RDMA_CM_EVENT_CONNECT_REQUEST);
	srv.id = ev->id;
	rdma_ack_cm_event(ev);
	resources(&srv, srv.id, srq);
	cp.initiator_depth = srv_ord;
	cp.responder_resources = srv_ird;
	ck_assert_int_eq(rdma_accept(srv.id, &cp), 0);
	rdma_ack_cm_event(verbs_expect_event(srv.ch, RDMA_CM_EVENT_ESTABLISHED));
	rdma_ack_cm_event(verbs_expect_event(cli.ch, RDMA_CM_EVENT_ESTABLISHED));
}

static void connect_pair(void)
{
	connect_ords(16, 16, 16, 16, false);
}

static struct ibv_wc poll_one(struct ibv_cq *cq)
{
	uint64_t end = uiw_now_ns() + (uint64_t)WAIT_MS * UIW_NS_PER_MS;
	struct ibv_wc wc;
	int n;

	while ((n = ibv_poll_cq(cq, 1, &wc)) == 0 && uiw_now_ns() < end)
		;
	ck_assert_msg(n == 1, "no completion in %u ms", WAIT_MS);
	return wc;
}

static struct ibv_async_event async_event(struct ibv_context *ctx)
{
	uint64_t end = uiw_now_ns() + (uint64_t)WAIT_MS * UIW_NS_PER_MS;
	struct ibv_async_event ev;
	int rc;

	fcntl(ctx->async_fd, F_SETFL, fcntl(ctx->async_fd, F_GETFL) | O_NONBLOCK);
	while ((rc = ibv_get_async_event(ctx, &ev)) != 0 && errno == EAGAIN && uiw_now_ns() < end)
		;
	ck_assert_msg(rc == 0, "no asynchronous event in %u ms", WAIT_MS);
	ibv_ack_async_event(&ev);
	return ev;
}

static void fill(uint8_t *p, uint32_t n, uint32_t seed)
{
	for (uint32_t i = 0; i < n; i++)
		p[i] = (uint8_t)(seed * 7 + i * 31 + (i >> 8));
}

/* @p n bytes at @p at equal @p want, with the guard byte on either side. */
static void check_placed(const uint8_t *at, const uint8_t *want, uint32_t n, const char *what)
{
	ck_assert_msg(at[-1] == GUARD, "%s: byte before the target written", what);
	ck_assert_msg(memcmp(at, want, n) == 0, "%s: data differ", what);
	ck_assert_msg(at[n] == GUARD, "%s: byte after the target written", what);
}

static void reset_guard(uint8_t *at, uint32_t n)
{
	memset(at - 64, GUARD, n + 128);
}

static uint32_t mulpdu(void)
{
	const struct uiw_mpa_info *i = uiw_mpa_info(uiw_qp_conn(uiw_verbs_qp_core(cli.id->qp)));

	ck_assert_ptr_nonnull(i);
	return i->mulpdu;
}

static int post1(struct ibv_qp *qp, struct ibv_send_wr *w)
{
	struct ibv_send_wr *bad = NULL;

	return ibv_post_send(qp, w, &bad);
}

static int recv1(struct verbs_ep *e, struct ibv_recv_wr *w)
{
	struct ibv_recv_wr *bad = NULL;

	return e->srq != NULL ? ibv_post_srq_recv(e->srq, w, &bad) : ibv_post_recv(e->id->qp, w, &bad);
}

/*
 * One Send of @p n bytes from the client (two SGEs) into one receive of two SGEs at the
 * server (the first half at DST + @p off, the rest at DST2 + @p off).
 */
static void one_send(uint32_t n, uint32_t off, enum ibv_wr_opcode op, bool se, uint32_t tag)
{
	uint8_t *src = cli.buf + SRC + off, *d1 = srv.buf + DST + off, *d2 = srv.buf + DST2 + off;
	uint32_t a = n / 2;
	struct ibv_mr *inv = NULL;
	struct ibv_sge rs[2] = { { (uintptr_t)d1, a, srv.mr->lkey },
				 { (uintptr_t)d2, n - a + 32, srv.mr->lkey } };
	struct ibv_recv_wr rw = { .wr_id = 1000 + tag, .sg_list = rs, .num_sge = 2 };
	struct ibv_sge ss[2] = { { (uintptr_t)src, n / 3, cli.mr->lkey },
				 { (uintptr_t)src + n / 3, n - n / 3, cli.mr->lkey } };
	struct ibv_send_wr sw = { .wr_id = tag, .sg_list = ss, .num_sge = 2, .opcode = op,
				  .send_flags = IBV_SEND_SIGNALED | (se ? IBV_SEND_SOLICITED : 0),
				  .imm_data = htobe32(0xa11c0000u + tag) };
	char what[96];

	snprintf(what, sizeof(what), "send op %d se %d size %u", op, se, n);
	fill(src, n, tag);
	reset_guard(d1, a);
	reset_guard(d2, n - a);
	if (op == IBV_WR_SEND_WITH_INV) {
		inv = ibv_reg_mr(srv.pd, srv.buf + 5 * BIG, 4096, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
		ck_assert_ptr_nonnull(inv);
		sw.invalidate_rkey = inv->rkey;
	}
	ck_assert_int_eq(recv1(&srv, &rw), 0);
	ck_assert_int_eq(post1(cli.id->qp, &sw), 0);
	struct ibv_wc sc = poll_one(cli.cq), rc = poll_one(srv.cq);

	ck_assert_msg(sc.status == IBV_WC_SUCCESS, "%s: %s", what, ibv_wc_status_str(sc.status));
	ck_assert_int_eq(sc.opcode, IBV_WC_SEND);
	ck_assert_uint_eq(sc.wr_id, tag);
	ck_assert_msg(rc.status == IBV_WC_SUCCESS, "%s: %s", what, ibv_wc_status_str(rc.status));
	ck_assert_int_eq(rc.opcode, IBV_WC_RECV);
	ck_assert_uint_eq(rc.wr_id, 1000 + tag);
	ck_assert_uint_eq(rc.byte_len, n);
	ck_assert_uint_eq(rc.qp_num, srv.id->qp->qp_num);
	check_placed(d1, src, a, what);
	check_placed(d2, src + a, n - a, what);
	if (inv != NULL) {
		ck_assert(rc.wc_flags & IBV_WC_WITH_INV);
		ck_assert_uint_eq(rc.invalidated_rkey, inv->rkey);
		ck_assert_int_eq(ibv_dereg_mr(inv), 0);
	} else {
		ck_assert(!(rc.wc_flags & IBV_WC_WITH_INV));
	}
	if (op == IBV_WR_SEND_WITH_IMM) {
		ck_assert(rc.wc_flags & IBV_WC_WITH_IMM);
		ck_assert_uint_eq(be32toh(rc.imm_data), 0xa11c0000u + tag);
	} else {
		ck_assert(!(rc.wc_flags & IBV_WC_WITH_IMM));
	}
}

/*
 * An RDMA Write of @p n bytes (two SGEs) to the server at DST + @p off; a zero-length Send
 * behind it tells the server the Write is placed (RFC 5040 §5.5: messages are delivered in
 * the order they were sent, and a Write's placement precedes a later Send's delivery).
 */
static void one_write(uint32_t n, uint32_t off, uint32_t tag)
{
	uint8_t *src = cli.buf + SRC + off, *dst = srv.buf + DST + off;
	struct ibv_sge ss[2] = { { (uintptr_t)src, n / 3, cli.mr->lkey },
				 { (uintptr_t)src + n / 3, n - n / 3, cli.mr->lkey } };
	struct ibv_send_wr w = { .wr_id = tag, .sg_list = ss, .num_sge = 2, .opcode = IBV_WR_RDMA_WRITE,
				 .send_flags = IBV_SEND_SIGNALED,
				 .wr.rdma = { .remote_addr = (uintptr_t)dst, .rkey = srv.mr->rkey } };
	struct ibv_send_wr fence = { .wr_id = tag + 1, .opcode = IBV_WR_SEND };
	struct ibv_recv_wr rw = { .wr_id = 2000 + tag };
	char what[64];

	snprintf(what, sizeof(what), "write size %u", n);
	fill(src, n, tag);
	reset_guard(dst, n);
	ck_assert_int_eq(recv1(&srv, &rw), 0);
	w.next = &fence;
	ck_assert_int_eq(post1(cli.id->qp, &w), 0);
	struct ibv_wc sc = poll_one(cli.cq), rc = poll_one(srv.cq);

	ck_assert_msg(sc.status == IBV_WC_SUCCESS, "%s: %s", what, ibv_wc_status_str(sc.status));
	ck_assert_int_eq(sc.opcode, IBV_WC_RDMA_WRITE);
	ck_assert_uint_eq(sc.wr_id, tag);
	ck_assert_int_eq(rc.status, IBV_WC_SUCCESS);
	ck_assert_uint_eq(rc.wr_id, 2000 + tag);   /* the Write completed nothing at the server */
	ck_assert_uint_eq(rc.byte_len, 0);
	check_placed(dst, src, n, what);
}

/* An RDMA Read of @p n bytes of the server's SRC + @p off into the client's DST + @p off. */
static void one_read(uint32_t n, uint32_t off, uint32_t tag)
{
	uint8_t *src = srv.buf + SRC + off, *dst = cli.buf + DST + off;
	struct ibv_sge s = { (uintptr_t)dst, n, cli.mr->lkey };
	struct ibv_send_wr w = { .wr_id = tag, .sg_list = &s, .num_sge = 1, .opcode = IBV_WR_RDMA_READ,
				 .send_flags = IBV_SEND_SIGNALED,
				 .wr.rdma = { .remote_addr = (uintptr_t)src, .rkey = srv.mr->rkey } };
	char what[64];

	snprintf(what, sizeof(what), "read size %u", n);
	fill(src, n, tag);
	reset_guard(dst, n);
	ck_assert_int_eq(post1(cli.id->qp, &w), 0);
	struct ibv_wc sc = poll_one(cli.cq);

	ck_assert_msg(sc.status == IBV_WC_SUCCESS, "%s: %s", what, ibv_wc_status_str(sc.status));
	ck_assert_int_eq(sc.opcode, IBV_WC_RDMA_READ);
	ck_assert_uint_eq(sc.wr_id, tag);
	ck_assert_uint_eq(sc.byte_len, n);
	check_placed(dst, src, n, what);
}

/* Every operation at every size, under the policy of the loop index. */
START_TEST(every_operation_every_size)
{
	const struct policy *p = &policies[_i];

	start(p, "ops");
	connect_pair();
	uint32_t m = mulpdu();
	/* 18 and 14: the untagged and tagged DDP/RDMAP headers a segment's payload follows. */
	const uint32_t untagged[] = { 0, 1, m - 19, m - 18, m - 17, m - 1, m, m + 1, BIG };
	const uint32_t tagged[] = { 0, 1, m - 15, m - 14, m - 13, m - 1, m, m + 1, BIG };
	uint32_t tag = 0;

	for (unsigned k = 0; k < sizeof(untagged) / sizeof(untagged[0]); k++) {
		uint32_t off = untagged[k] == BIG ? 64 : 1000 + k;

		one_send(untagged[k], off, IBV_WR_SEND, false, tag += 2);
		one_send(untagged[k], off, IBV_WR_SEND, true, tag += 2);
		one_send(untagged[k], off, IBV_WR_SEND_WITH_INV, false, tag += 2);
		one_send(untagged[k], off, IBV_WR_SEND_WITH_INV, true, tag += 2);
		one_write(tagged[k], off, tag += 2);
		one_read(tagged[k], off, tag += 2);
	}
	if (p->loss)
		ck_assert_uint_gt(pair_a.st.fault.rx.dropped + pair_b.st.fault.rx.dropped +
				  pair_a.st.fault.tx.dropped + pair_b.st.fault.tx.dropped, 0);
	/* An orderly end: both sides hear the disconnect. */
	ck_assert_int_eq(rdma_disconnect(cli.id), 0);
	rdma_ack_cm_event(verbs_expect_event(cli.ch, RDMA_CM_EVENT_DISCONNECTED));
	rdma_ack_cm_event(verbs_expect_event(srv.ch, RDMA_CM_EVENT_DISCONNECTED));
}
END_TEST

/*
 * The client asks ORD 8, the server offers IRD 2: the client may have only two Reads
 * outstanding, so twenty Reads posted at once all complete, in order, with no Terminate for
 * an IRQ overflow; the server reads back at its own ORD (4, within the client's IRD 4) at the
 * same time.
 */
START_TEST(reads_at_the_ord_ird_limit)
{
	start(&policies[0], "ordird");
	connect_ords(8, 4, 4, 2, false);
	for (uint32_t k = 0; k < 20; k++) {
		struct ibv_sge s = { (uintptr_t)cli.buf + DST + k * 8192, 8192, cli.mr->lkey };
		struct ibv_send_wr w = { .wr_id = k, .sg_list = &s, .num_sge = 1, .opcode = IBV_WR_RDMA_READ,
					 .send_flags = IBV_SEND_SIGNALED,
					 .wr.rdma = { .remote_addr = (uintptr_t)srv.buf + k * 8192,
						      .rkey = srv.mr->rkey } };

		fill(srv.buf + k * 8192, 8192, k);
		ck_assert_int_eq(post1(cli.id->qp, &w), 0);
	}
	for (uint32_t k = 0; k < 8; k++) {
		struct ibv_sge s = { (uintptr_t)srv.buf + DST + k * 4096, 4096, srv.mr->lkey };
		struct ibv_send_wr w = { .wr_id = 100 + k, .sg_list = &s, .num_sge = 1,
					 .opcode = IBV_WR_RDMA_READ, .send_flags = IBV_SEND_SIGNALED,
					 .wr.rdma = { .remote_addr = (uintptr_t)cli.buf + k * 4096,
						      .rkey = cli.mr->rkey } };

		fill(cli.buf + k * 4096, 4096, 50 + k);
		ck_assert_int_eq(post1(srv.id->qp, &w), 0);
	}
	for (uint32_t k = 0; k < 20; k++) {
		struct ibv_wc wc = poll_one(cli.cq);

		ck_assert_msg(wc.status == IBV_WC_SUCCESS, "read %u: %s", k, ibv_wc_status_str(wc.status));
		ck_assert_uint_eq(wc.wr_id, k);
		ck_assert_mem_eq(cli.buf + DST + k * 8192, srv.buf + k * 8192, 8192);
	}
	for (uint32_t k = 0; k < 8; k++) {
		struct ibv_wc wc = poll_one(srv.cq);

		ck_assert_int_eq(wc.status, IBV_WC_SUCCESS);
		ck_assert_uint_eq(wc.wr_id, 100 + k);
		ck_assert_mem_eq(srv.buf + DST + k * 4096, cli.buf + k * 4096, 4096);
	}
	const uint64_t *c = uiw_qp_counters(uiw_verbs_qp_core(srv.id->qp));

	ck_assert_uint_eq(c[UIW_RDMAP_C_term_tx] + c[UIW_RDMAP_C_term_rx], 0);
}
END_TEST

/* A Write of 16 bytes to @p addr with @p rkey, with a zero-length Send behind it. */
static void post_write16(uint64_t addr, uint32_t rkey, struct ibv_send_wr *fence)
{
	struct ibv_sge s = { (uintptr_t)cli.buf, 16, cli.mr->lkey };
	struct ibv_send_wr w = { .wr_id = 1, .sg_list = &s, .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE,
				 .send_flags = IBV_SEND_SIGNALED, .next = fence,
				 .wr.rdma = { .remote_addr = addr, .rkey = rkey } };

	ck_assert_int_eq(post1(cli.id->qp, &w), 0);
}

/* Both connections end after a Terminate; later work on the client completes flushed. */
static void both_disconnected_then_flush(void)
{
	rdma_ack_cm_event(verbs_expect_event(cli.ch, RDMA_CM_EVENT_DISCONNECTED));
	rdma_ack_cm_event(verbs_expect_event(srv.ch, RDMA_CM_EVENT_DISCONNECTED));
	struct ibv_wc wc;

	while (ibv_poll_cq(cli.cq, 1, &wc) == 1)
		;
	struct ibv_send_wr w = { .wr_id = 4242, .opcode = IBV_WR_SEND };

	ck_assert_int_eq(post1(cli.id->qp, &w), 0);
	wc = poll_one(cli.cq);
	ck_assert_uint_eq(wc.wr_id, 4242);
	ck_assert_int_eq(wc.status, IBV_WC_WR_FLUSH_ERR);
}

/*
 * A Send with Invalidate names a region of the server's; the server's completion says so.
 * A Write to that region afterwards is Terminated by the server (DDP tagged buffer error,
 * invalid STag: RFC 5041 §7.2, RFC 5040 §5.2) and not placed: the server's QP reports an
 * access error, the client's a fatal one, both connections end, later work is flushed.
 */
START_TEST(write_after_send_with_invalidate_terminated)
{
	start(&policies[0], "inval");
	connect_pair();
	uint8_t *region = srv.buf + 5 * BIG;
	struct ibv_mr *mr2 = ibv_reg_mr(srv.pd, region, 4096, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	struct ibv_send_wr fence = { .wr_id = 2, .opcode = IBV_WR_SEND };
	struct ibv_recv_wr rw = { .wr_id = 7 };

	ck_assert_ptr_nonnull(mr2);
	/* Before: a Write to it is placed. */
	fill(cli.buf, 16, 1);
	ck_assert_int_eq(recv1(&srv, &rw), 0);
	post_write16((uintptr_t)region + 100, mr2->rkey, &fence);
	ck_assert_int_eq(poll_one(cli.cq).status, IBV_WC_SUCCESS);
	ck_assert_int_eq(poll_one(srv.cq).status, IBV_WC_SUCCESS);
	ck_assert_mem_eq(region + 100, cli.buf, 16);
	/* The Send with Invalidate. */
	struct ibv_send_wr inv = { .wr_id = 3, .opcode = IBV_WR_SEND_WITH_INV, .send_flags = IBV_SEND_SIGNALED,
				   .invalidate_rkey = mr2->rkey };

	ck_assert_int_eq(recv1(&srv, &rw), 0);
	ck_assert_int_eq(post1(cli.id->qp, &inv), 0);
	struct ibv_wc wc = poll_one(srv.cq);

	ck_assert_int_eq(wc.status, IBV_WC_SUCCESS);
	ck_assert(wc.wc_flags & IBV_WC_WITH_INV);
	ck_assert_uint_eq(wc.invalidated_rkey, mr2->rkey);
	ck_assert_int_eq(poll_one(cli.cq).status, IBV_WC_SUCCESS);
	/* After: Terminated, nothing placed. */
	memset(region, GUARD, 4096);
	fill(cli.buf, 16, 2);
	post_write16((uintptr_t)region + 100, mr2->rkey, NULL);
	struct ibv_async_event se = async_event(srv.id->verbs), ce = async_event(cli.id->verbs);

	ck_assert_int_eq(se.event_type, IBV_EVENT_QP_ACCESS_ERR);
	ck_assert_ptr_eq(se.element.qp, srv.id->qp);
	ck_assert_int_eq(ce.event_type, IBV_EVENT_QP_FATAL);
	ck_assert_ptr_eq(ce.element.qp, cli.id->qp);
	const struct uiw_term_info *t = uiw_qp_term_tx(uiw_verbs_qp_core(srv.id->qp));

	ck_assert(t->valid);
	ck_assert_uint_eq(t->layer, UIW_TERM_LAYER_DDP);
	ck_assert_uint_eq(t->etype, 1);      /* tagged buffer error */
	ck_assert_uint_eq(t->code, 0x00);    /* invalid STag */
	both_disconnected_then_flush();
	for (unsigned i = 0; i < 4096; i++)
		ck_assert_uint_eq(region[i], GUARD);
	ck_assert_int_eq(ibv_dereg_mr(mr2), 0);
}
END_TEST

static bool readable(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, 0) == 1;
}

/*
 * A CQ armed for solicited completions only stays quiet for a plain Send and fires for a
 * Send with Solicited Event (and one with SE and Invalidate); armed for any completion it
 * fires for a plain Send.
 */
START_TEST(solicited_only_notification)
{
	struct ibv_cq *ev_cq;
	void *ev_ctx;

	start(&policies[0], "solicited");
	connect_pair();
	for (int k = 0; k < 6; k++) {
		struct ibv_sge rs = { (uintptr_t)srv.buf + DST + k * 64, 64, srv.mr->lkey };
		struct ibv_recv_wr rw = { .wr_id = 10 + k, .sg_list = &rs, .num_sge = 1 };

		ck_assert_int_eq(recv1(&srv, &rw), 0);
	}
	struct ibv_sge s = { (uintptr_t)cli.buf, 8, cli.mr->lkey };
	struct ibv_send_wr w = { .wr_id = 1, .sg_list = &s, .num_sge = 1, .opcode = IBV_WR_SEND };

	ck_assert_int_eq(ibv_req_notify_cq(srv.cq, 1), 0);
	ck_assert_int_eq(post1(cli.id->qp, &w), 0);
	ck_assert_uint_eq(poll_one(srv.cq).wr_id, 10);   /* arrived, and no event for it */
	ck_assert(!readable(srv.cc->fd));
	w.send_flags = IBV_SEND_SOLICITED;
	ck_assert_int_eq(post1(cli.id->qp, &w), 0);
	ck_assert_int_eq(ibv_get_cq_event(srv.cc, &ev_cq, &ev_ctx), 0);
	ck_assert_ptr_eq(ev_cq, srv.cq);
	ck_assert_ptr_eq(ev_ctx, &srv);
	ibv_ack_cq_events(ev_cq, 1);
	ck_assert_uint_eq(poll_one(srv.cq).wr_id, 11);
	/* SE with Invalidate (of a region registered for it). */
	struct ibv_mr *m = ibv_reg_mr(srv.pd, srv.buf + 5 * BIG, 64, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);

	ck_assert_ptr_nonnull(m);
	ck_assert_int_eq(ibv_req_notify_cq(srv.cq, 1), 0);
	w.opcode = IBV_WR_SEND_WITH_INV;
	w.invalidate_rkey = m->rkey;
	ck_assert_int_eq(post1(cli.id->qp, &w), 0);
	ck_assert_int_eq(ibv_get_cq_event(srv.cc, &ev_cq, &ev_ctx), 0);
	ibv_ack_cq_events(ev_cq, 1);
	struct ibv_wc wc = poll_one(srv.cq);

	ck_assert_uint_eq(wc.wr_id, 12);
	ck_assert(wc.wc_flags & IBV_WC_WITH_INV);
	ibv_dereg_mr(m);
	/* Send with immediate data (between uiwarp peers): without SE no event, with SE one. */
	w.opcode = IBV_WR_SEND_WITH_IMM;
	w.send_flags = 0;
	w.imm_data = htobe32(77);
	ck_assert_int_eq(ibv_req_notify_cq(srv.cq, 1), 0);
	ck_assert_int_eq(post1(cli.id->qp, &w), 0);
	wc = poll_one(srv.cq);
	ck_assert_uint_eq(wc.wr_id, 13);
	ck_assert(wc.wc_flags & IBV_WC_WITH_IMM);
	ck_assert(!readable(srv.cc->fd));
	w.send_flags = IBV_SEND_SOLICITED;
	ck_assert_int_eq(post1(cli.id->qp, &w), 0);
	ck_assert_int_eq(ibv_get_cq_event(srv.cc, &ev_cq, &ev_ctx), 0);
	ibv_ack_cq_events(ev_cq, 1);
	wc = poll_one(srv.cq);
	ck_assert_uint_eq(wc.wr_id, 14);
	ck_assert_uint_eq(be32toh(wc.imm_data), 77);
	/* Armed for any completion: a plain Send fires. */
	ck_assert_int_eq(ibv_req_notify_cq(srv.cq, 0), 0);
	w.opcode = IBV_WR_SEND;
	w.send_flags = 0;
	ck_assert_int_eq(post1(cli.id->qp, &w), 0);
	ck_assert_int_eq(ibv_get_cq_event(srv.cc, &ev_cq, &ev_ctx), 0);
	ibv_ack_cq_events(ev_cq, 1);
	ck_assert_uint_eq(poll_one(srv.cq).wr_id, 15);
}
END_TEST

/*
 * A shared receive queue with three SGEs a receive: Sends land across the SGEs in posting
 * order, and the armed limit raises IBV_EVENT_SRQ_LIMIT_REACHED once.
 */
START_TEST(shared_receive_queue_several_sges)
{
	static const uint32_t sizes[] = { 3000, 1, 0, 5000 };
	struct ibv_srq_attr la = { .srq_limit = 2 };

	start(&policies[0], "srq");
	connect_ords(16, 16, 16, 16, true);
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr qi;

	/* Queue sizes as made (64 each; the receives are the SRQ's). */
	ck_assert_int_eq(ibv_query_qp(srv.id->qp, &qa, IBV_QP_CAP, &qi), 0);
	ck_assert_uint_eq(qi.cap.max_send_wr, 64);
	ck_assert_uint_eq(qi.cap.max_recv_wr, 0);
	ck_assert_ptr_eq(qi.srq, srv.srq);
	ck_assert_int_eq(ibv_query_qp(cli.id->qp, &qa, IBV_QP_CAP, &qi), 0);
	ck_assert_uint_eq(qi.cap.max_recv_wr, 64);
	ck_assert_uint_eq(qa.cap.max_send_sge, 3);
	for (int k = 0; k < 4; k++) {
		uint8_t *b = srv.buf + DST + k * 16384;
		struct ibv_sge rs[3] = { { (uintptr_t)b, 1000, srv.mr->lkey },
					 { (uintptr_t)b + 2000, 1500, srv.mr->lkey },
					 { (uintptr_t)b + 8000, 4000, srv.mr->lkey } };
		struct ibv_recv_wr rw = { .wr_id = 300 + k, .sg_list = rs, .num_sge = 3 };

		ck_assert_int_eq(recv1(&srv, &rw), 0);
	}
	ck_assert_int_eq(ibv_modify_srq(srv.srq, &la, IBV_SRQ_LIMIT), 0);
	for (int k = 0; k < 4; k++) {
		struct ibv_sge s = { (uintptr_t)cli.buf + k * 8192, sizes[k], cli.mr->lkey };
		struct ibv_send_wr w = { .wr_id = k, .sg_list = &s, .num_sge = 1, .opcode = IBV_WR_SEND };

		fill(cli.buf + k * 8192, sizes[k], 20 + k);
		ck_assert_int_eq(post1(cli.id->qp, &w), 0);
	}
	for (int k = 0; k < 4; k++) {
		struct ibv_wc wc = poll_one(srv.cq);
		const uint8_t *b = srv.buf + DST + k * 16384, *src = cli.buf + k * 8192;
		uint32_t n = sizes[k], a = n < 1000 ? n : 1000, c = n - a < 1500 ? n - a : 1500;

		ck_assert_int_eq(wc.status, IBV_WC_SUCCESS);
		ck_assert_uint_eq(wc.wr_id, 300 + k);
		ck_assert_uint_eq(wc.byte_len, n);
		ck_assert_mem_eq(b, src, a);
		ck_assert_mem_eq(b + 2000, src + a, c);
		ck_assert_mem_eq(b + 8000, src + a + c, n - a - c);
		ck_assert_uint_eq(b[a == 1000 ? 1000 : a], GUARD);   /* the gap between SGEs */
	}
	struct ibv_async_event ev = async_event(srv.id->verbs);

	ck_assert_int_eq(ev.event_type, IBV_EVENT_SRQ_LIMIT_REACHED);
	ck_assert_ptr_eq(ev.element.srq, srv.srq);
	ck_assert_int_eq(ibv_query_srq(srv.srq, &la), 0);
	ck_assert_uint_eq(la.srq_limit, 0);   /* disarmed */
}
END_TEST

/* A Send with no receive posted: the server Terminates (DDP untagged buffer error, no
 * buffer: RFC 5041 §7.2 code 0x02), both QPs report a fatal error, both connections end. */
static bool elapsed(void *arg)
{
	return uiw_now_ns() >= *(const uint64_t *)arg;
}

/*
 * Sends that wait for receives, then the sender's disconnect: the FIN is behind them in
 * the stream, so the server hears DISCONNECTED only after it has taken them (TCP's order),
 * not before with its receives flushed. fio's Send test ends this way.
 */
START_TEST(disconnect_behind_waiting_sends)
{
	struct ibv_wc none;

	start(&policies[0], "sendwait-fin");
	connect_pair();
	fill(cli.buf + SRC, 3 * 1000, 5);
	reset_guard(srv.buf + DST, 3 * 1000);
	for (unsigned k = 0; k < 3; k++) {
		struct ibv_sge s = { (uintptr_t)cli.buf + SRC + k * 1000, 1000, cli.mr->lkey };
		struct ibv_send_wr w = { .wr_id = k, .sg_list = &s, .num_sge = 1, .opcode = IBV_WR_SEND,
					 .send_flags = IBV_SEND_SIGNALED };

		ck_assert_int_eq(post1(cli.id->qp, &w), 0);
	}
	for (unsigned k = 0; k < 3; k++)   /* in TCP's hands and acknowledged: complete */
		ck_assert_int_eq(poll_one(cli.cq).status, IBV_WC_SUCCESS);
	ck_assert_int_eq(rdma_disconnect(cli.id), 0);
	uint64_t until = uiw_now_ns() + 100 * UIW_NS_PER_MS;

	while (uiw_now_ns() < until)
		ck_assert_int_eq(ibv_poll_cq(srv.cq, 0, &none), 0);
	ck_assert(!readable(srv.ch->fd));   /* no DISCONNECTED yet */
	ck_assert_int_eq(uiw_qp_state(uiw_verbs_qp_core(srv.id->qp)), UIW_QPS_RTS);
	for (unsigned k = 0; k < 3; k++) {
		struct ibv_sge rs = { (uintptr_t)srv.buf + DST + k * 1000, 1000, srv.mr->lkey };
		struct ibv_recv_wr rw = { .wr_id = 10 + k, .sg_list = &rs, .num_sge = 1 };

		ck_assert_int_eq(recv1(&srv, &rw), 0);
	}
	for (unsigned k = 0; k < 3; k++) {
		struct ibv_wc rc = poll_one(srv.cq);

		ck_assert_msg(rc.status == IBV_WC_SUCCESS, "receive %u: %s", k, ibv_wc_status_str(rc.status));
		ck_assert_uint_eq(rc.wr_id, 10 + k);
	}
	check_placed(srv.buf + DST, cli.buf + SRC, 3 * 1000, "Sends before the FIN");
	rdma_ack_cm_event(verbs_expect_event(srv.ch, RDMA_CM_EVENT_DISCONNECTED));
	rdma_ack_cm_event(verbs_expect_event(cli.ch, RDMA_CM_EVENT_DISCONNECTED));
}
END_TEST

/*
 * The peer's FIN is the disconnect, as Linux's iWARP CM reports it: DISCONNECTED comes when
 * the FIN is taken, not when the peer acknowledges our own FIN, which a peer whose process
 * ended right after hearing it never does. Here everything the client sends from the
 * server's disconnect on is lost: it hears DISCONNECTED all the same (TCP would retransmit
 * its FIN for minutes), and its QP, in ERROR, flushes a Send posted after the event.
 */
START_TEST(peer_fin_disconnects_before_our_fin_is_acked)
{
	struct rdma_cm_event *ev = NULL;
	struct ibv_sge s = { (uintptr_t)cli.buf + SRC, 0, 0 };
	struct ibv_send_wr w = { .wr_id = 7, .sg_list = &s, .num_sge = 1, .opcode = IBV_WR_SEND,
				 .send_flags = IBV_SEND_SIGNALED };

	start(&policies[0], "finlost");
	connect_pair();
	one_send(100, 0, IBV_WR_SEND, false, 1);
	s.lkey = cli.mr->lkey;
	pair_a.cut = true;
	ck_assert_int_eq(rdma_disconnect(srv.id), 0);
	ck_assert_int_eq(fcntl(cli.ch->fd, F_SETFL, O_NONBLOCK), 0);
	for (uint64_t end = uiw_now_ns() + 2000 * UIW_NS_PER_MS;
	     rdma_get_cm_event(cli.ch, &ev) != 0 && uiw_now_ns() < end;)
		ck_assert_int_eq(errno, EAGAIN);
	ck_assert_msg(ev != NULL, "no DISCONNECTED in 2 s after the peer's FIN");
	ck_assert_str_eq(rdma_event_str(ev->event), rdma_event_str(RDMA_CM_EVENT_DISCONNECTED));
	rdma_ack_cm_event(ev);
	ck_assert_int_eq(uiw_qp_state(uiw_verbs_qp_core(cli.id->qp)), UIW_QPS_ERROR);
	ck_assert_int_eq(post1(cli.id->qp, &w), 0);
	struct ibv_wc wc = poll_one(cli.cq);

	ck_assert_uint_eq(wc.wr_id, 7);
	ck_assert_int_eq(wc.status, IBV_WC_WR_FLUSH_ERR);
	/* Its FIN still waits for an ACK: the id may be disconnected again, harmlessly. */
	ck_assert_int_eq(rdma_disconnect(cli.id), 0);
}
END_TEST

/* A Send into an empty receive queue: Terminated at once with recv_wait_ms=0 (RFC 5041
 * §7.2), and after the wait when no receive comes within it (_i 1). */
START_TEST(empty_receive_queue_terminated)
{
	start(&policies[0], _i == 0 ? "emptyrq" : "emptyrq-wait");
	pair_b.st.cfg.recv_wait_ms = _i == 0 ? 0 : 30;   /* read as the server's QP is made */
	connect_pair();
	struct ibv_sge s = { (uintptr_t)cli.buf, 10, cli.mr->lkey };
	struct ibv_send_wr w = { .wr_id = 1, .sg_list = &s, .num_sge = 1, .opcode = IBV_WR_SEND };

	ck_assert_int_eq(post1(cli.id->qp, &w), 0);
	struct ibv_async_event se = async_event(srv.id->verbs), ce = async_event(cli.id->verbs);

	ck_assert_int_eq(se.event_type, IBV_EVENT_QP_FATAL);
	ck_assert_int_eq(ce.event_type, IBV_EVENT_QP_FATAL);
	const struct uiw_term_info *t = uiw_qp_term_tx(uiw_verbs_qp_core(srv.id->qp));

	ck_assert_uint_eq(t->layer, UIW_TERM_LAYER_DDP);
	ck_assert_uint_eq(t->etype, 2);
	ck_assert_uint_eq(t->code, 0x02);
	ck_assert_uint_eq(uiw_qp_term_rx(uiw_verbs_qp_core(cli.id->qp))->code, 0x02);
	const uint64_t *c = uiw_qp_counters(uiw_verbs_qp_core(srv.id->qp));

	ck_assert_uint_eq(c[UIW_RDMAP_C_rx_wait], _i == 0 ? 0 : 1);
	ck_assert_uint_eq(c[UIW_RDMAP_C_rx_wait_expired], _i == 0 ? 0 : 1);
	both_disconnected_then_flush();
}
END_TEST

/*
 * A Send longer than the receive it lands in: the receive completes with a length error
 * (and is not the next one's), nothing of the Send is placed, and the server Terminates
 * with DDP's untagged buffer error "message too long" (RFC 5041 §7.2: layer DDP, type 2,
 * code 0x05), which the client receives; both QPs go to error.
 */
START_TEST(send_longer_than_its_receive_terminated)
{
	enum { RECV = 16, SEND = 64 };

	start(&policies[0], "sendlong");
	connect_pair();
	memset(srv.buf + DST, 0xa5, 2 * SEND);
	fill(cli.buf, SEND, 5);
	struct ibv_sge rs = { (uintptr_t)srv.buf + DST, RECV, srv.mr->lkey };
	struct ibv_recv_wr rw = { .wr_id = 77, .sg_list = &rs, .num_sge = 1 };

	ck_assert_int_eq(recv1(&srv, &rw), 0);
	rw.wr_id = 78;
	rs.addr += SEND;
	ck_assert_int_eq(recv1(&srv, &rw), 0);
	struct ibv_sge s = { (uintptr_t)cli.buf, SEND, cli.mr->lkey };
	struct ibv_send_wr w = { .wr_id = 1, .sg_list = &s, .num_sge = 1, .opcode = IBV_WR_SEND };

	ck_assert_int_eq(post1(cli.id->qp, &w), 0);
	struct ibv_wc wc = poll_one(srv.cq);

	ck_assert_uint_eq(wc.wr_id, 77);
	ck_assert_int_eq(wc.status, IBV_WC_LOC_LEN_ERR);
	ck_assert_int_eq(wc.opcode, IBV_WC_RECV);
	ck_assert(!(wc.wc_flags & (IBV_WC_WITH_IMM | IBV_WC_WITH_INV)));
	for (unsigned k = 0; k < 2 * SEND; k++)
		ck_assert_msg(srv.buf[DST + k] == 0xa5, "octet %u of the receive buffers written", k);
	struct ibv_async_event se = async_event(srv.id->verbs), ce = async_event(cli.id->verbs);

	ck_assert_int_eq(se.event_type, IBV_EVENT_QP_FATAL);
	ck_assert_int_eq(ce.event_type, IBV_EVENT_QP_FATAL);
	const struct uiw_term_info *t = uiw_qp_term_tx(uiw_verbs_qp_core(srv.id->qp));

	ck_assert_uint_eq(t->layer, UIW_TERM_LAYER_DDP);
	ck_assert_uint_eq(t->etype, UIW_DDP_ET_UNTAGGED);
	ck_assert_uint_eq(t->code, UIW_DDP_UNT_TOO_LONG);
	ck_assert_uint_eq(uiw_qp_term_rx(uiw_verbs_qp_core(cli.id->qp))->code, UIW_DDP_UNT_TOO_LONG);
	both_disconnected_then_flush();
	/* The second receive was never matched: flushed, not completed. */
	wc = poll_one(srv.cq);
	ck_assert_uint_eq(wc.wr_id, 78);
	ck_assert_int_eq(wc.status, IBV_WC_WR_FLUSH_ERR);
}
END_TEST

/*
 * A sender that runs ahead of the receives (fio's Send test, programs written for
 * InfiniBand's RNR retry): with recv_wait_ms (1000 by default) the Sends wait in TCP's
 * receive queue until receives are posted, and arrive whole and in order with what follows
 * them. Here 1 MiB of Sends, and an RDMA Write between them, against a 64 KiB TCP buffer,
 * under each MPA policy of the matrix (Markers, CRC off, 5% loss):
 * the window shuts while they wait, nothing is placed, no error is raised; then the
 * receives are posted and every octet arrives.
 */
START_TEST(send_waits_for_a_receive)
{
	enum { N = 8, SZ = 128 * 1024 };
	struct ibv_wc none;

	char name[64];

	base_config(&policies[_i]);
	cfg.tcp_rcv_buf = 64 * 1024;
	pair_setup_cfg(&cfg);
	snprintf(name, sizeof(name), "sendwait-%s", policies[_i].name);
	pair_capture(name);
	ck_assert_int_eq(uiw_verbs_add_device(&pair_a.st), 0);
	ck_assert_int_eq(uiw_verbs_add_device(&pair_b.st), 0);
	connect_pair();
	fill(cli.buf + SRC, N * SZ + 4096, 77);
	reset_guard(srv.buf + DST, N * SZ);
	reset_guard(srv.buf + DST2, 4096);
	for (unsigned k = 0; k < N; k++) {
		struct ibv_sge s = { (uintptr_t)cli.buf + SRC + k * SZ, SZ, cli.mr->lkey };
		struct ibv_send_wr w = { .wr_id = k, .sg_list = &s, .num_sge = 1, .opcode = IBV_WR_SEND,
					 .send_flags = IBV_SEND_SIGNALED };

		ck_assert_int_eq(post1(cli.id->qp, &w), 0);
		if (k == 1) {   /* a Write behind the first two Sends */
			struct ibv_sge ws = { (uintptr_t)cli.buf + SRC + N * SZ, 4096, cli.mr->lkey };
			struct ibv_send_wr ww = { .wr_id = 100, .sg_list = &ws, .num_sge = 1,
						  .opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED,
						  .wr.rdma = { (uintptr_t)srv.buf + DST2, srv.mr->rkey } };

			ck_assert_int_eq(post1(cli.id->qp, &ww), 0);
		}
	}
	/* Progress passes (the doorbells too), taking nothing, until the receiver's window has
	 * shut (under one MSS, where uiw_tcp_ulp_held() owes an update): at 5% loss under a
	 * sanitizer the sender may need more than the first 200 ms to fill it. Then 500 ms
	 * more: the ACK saying so goes out, and the sender finds its window short of a record
	 * with nothing in flight. It probes TCP_RECORD_PROBES times (0.3 s at this pair's RTO)
	 * but must not split the record before the window has been short for
	 * TCP_RECORD_SPLIT_NS (1 s): the capture must show every FPDU in a segment of its own
	 * (test_tcp shows the split itself). */
	const struct uiw_tcp_conn *rtc = uiw_mpa_tcp(uiw_qp_conn(uiw_verbs_qp_core(srv.id->qp)));
	uint64_t start = uiw_now_ns(), until = start + 200 * UIW_NS_PER_MS;

	while (uiw_now_ns() < until || uiw_tcp_rcv_window(rtc) >= tcp_our_mss(rtc->tcp)) {
		ck_assert_msg(uiw_now_ns() - start < 20 * UIW_NS_PER_S,
			      "the receiver's window never shut: %u octets open", uiw_tcp_rcv_window(rtc));
		ck_assert_int_eq(ibv_poll_cq(srv.cq, 0, &none), 0);
	}
	until = uiw_now_ns() + 500 * UIW_NS_PER_MS;
	while (uiw_now_ns() < until)
		ck_assert_int_eq(ibv_poll_cq(srv.cq, 0, &none), 0);
	ck_assert_int_eq(ibv_poll_cq(srv.cq, 1, &none), 0);
	ck_assert_int_eq(uiw_qp_state(uiw_verbs_qp_core(srv.id->qp)), UIW_QPS_RTS);
	ck_assert_int_eq(uiw_qp_state(uiw_verbs_qp_core(cli.id->qp)), UIW_QPS_RTS);
	ck_assert_uint_eq(srv.buf[DST2], GUARD);   /* the Write waits behind the first Send */
	ck_assert_uint_eq(srv.buf[DST], GUARD);
	for (unsigned k = 0; k < N; k++) {
		struct ibv_sge rs = { (uintptr_t)srv.buf + DST + k * SZ, SZ, srv.mr->lkey };
		struct ibv_recv_wr rw = { .wr_id = 1000 + k, .sg_list = &rs, .num_sge = 1 };

		ck_assert_int_eq(recv1(&srv, &rw), 0);
	}
	for (unsigned k = 0; k < N; k++) {
		struct ibv_wc rc = poll_one(srv.cq);

		ck_assert_msg(rc.status == IBV_WC_SUCCESS, "receive %u: %s", k, ibv_wc_status_str(rc.status));
		ck_assert_uint_eq(rc.wr_id, 1000 + k);
		ck_assert_uint_eq(rc.byte_len, SZ);
	}
	for (unsigned k = 0; k < N + 1; k++)
		ck_assert_int_eq(poll_one(cli.cq).status, IBV_WC_SUCCESS);
	check_placed(srv.buf + DST, cli.buf + SRC, N * SZ, "Sends that waited");
	check_placed(srv.buf + DST2, cli.buf + SRC + N * SZ, 4096, "the Write behind them");
	const uint64_t *c = uiw_qp_counters(uiw_verbs_qp_core(srv.id->qp));

	ck_assert_uint_ge(c[UIW_RDMAP_C_rx_wait], 1);
	ck_assert_uint_eq(c[UIW_RDMAP_C_rx_wait_expired], 0);
	/* The window shut while they waited, and the receiver said at once when it opened. */
	ck_assert_uint_ge(uiw_tcp_counters(pair_b.st.tcp)[UIW_TCP_C_window_updates], 1);
}
END_TEST

/* A connection outlives the MPA timers: idle for two and a half times the Reply timeout
 * after it is up, it still carries a Send both ways (the initiator's connect timer once cut
 * every connection at mpa_reply_timeout_ms). The timeouts are long enough for the exchange
 * itself under ASan on a loaded machine (the server's accept runs inside the client's Reply
 * timer; 100 ms once ran out there). */
START_TEST(idle_connection_outlives_the_mpa_timers)
{
	struct policy p = policies[0];

	base_config(&p);
	cfg.mpa_reply_timeout_ms = 1000;
	cfg.mpa_request_timeout_ms = 1000;
	pair_setup_cfg(&cfg);
	ck_assert_int_eq(uiw_verbs_add_device(&pair_a.st), 0);
	ck_assert_int_eq(uiw_verbs_add_device(&pair_b.st), 0);
	connect_pair();
	uint64_t until = uiw_now_ns() + 2500 * UIW_NS_PER_MS;

	pair_run_until(elapsed, &until, 3000);
	struct ibv_recv_wr rs = { .wr_id = 1 }, rc = { .wr_id = 2 };
	struct ibv_send_wr s = { .wr_id = 3, .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED };

	ck_assert_int_eq(recv1(&srv, &rs), 0);
	ck_assert_int_eq(recv1(&cli, &rc), 0);
	ck_assert_int_eq(post1(cli.id->qp, &s), 0);
	ck_assert_int_eq(post1(srv.id->qp, &s), 0);
	for (int k = 0; k < 2; k++) {
		ck_assert_int_eq(poll_one(cli.cq).status, IBV_WC_SUCCESS);
		ck_assert_int_eq(poll_one(srv.cq).status, IBV_WC_SUCCESS);
	}
}
END_TEST

/*
 * An id destroyed without rdma_disconnect closes its connection, it does not reset it: a
 * 1 MiB Send the client saw complete (in TCP's hands, much of it not yet sent) still
 * arrives whole, then the server hears DISCONNECTED. Linux closes the same way; perftest
 * tears down like this right after its last handshake message.
 */
START_TEST(destroyed_id_closes_after_its_data)
{
	start(&policies[0], "destroyid");
	connect_pair();
	uint8_t *want = malloc(BIG);
	struct ibv_sge rs = { (uintptr_t)srv.buf + DST, BIG, srv.mr->lkey };
	struct ibv_recv_wr rw = { .wr_id = 1, .sg_list = &rs, .num_sge = 1 };
	struct ibv_sge ss = { (uintptr_t)cli.buf + SRC, BIG, cli.mr->lkey };
	struct ibv_send_wr sw = { .wr_id = 2, .sg_list = &ss, .num_sge = 1, .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED };

	ck_assert_ptr_nonnull(want);
	fill(want, BIG, 9);
	memcpy(cli.buf + SRC, want, BIG);
	ck_assert_int_eq(recv1(&srv, &rw), 0);
	ck_assert_int_eq(post1(cli.id->qp, &sw), 0);
	ck_assert_int_eq(poll_one(cli.cq).status, IBV_WC_SUCCESS);
	verbs_ep_fini(&cli);
	memset(&cli, 0, sizeof(cli));
	struct ibv_wc wc = poll_one(srv.cq);

	ck_assert_msg(wc.status == IBV_WC_SUCCESS, "%s", ibv_wc_status_str(wc.status));
	ck_assert_uint_eq(wc.byte_len, BIG);
	check_placed(srv.buf + DST, want, BIG, "the Send before the destroy");
	rdma_ack_cm_event(verbs_expect_event(srv.ch, RDMA_CM_EVENT_DISCONNECTED));
	free(want);
}
END_TEST

/*
 * A program may destroy its event channel before an id whose connection is still closing
 * (its QP destroyed, so the close waits for the peer's FIN). The end of that connection
 * must not reach the freed channel; the server still hears DISCONNECTED.
 */
START_TEST(channel_destroyed_before_a_closing_id)
{
	start(&policies[0], "chgone");
	connect_pair();
	one_send(16, 0, IBV_WR_SEND, false, 1);
	rdma_destroy_qp(cli.id);
	rdma_destroy_event_channel(cli.ch);
	cli.ch = NULL;
	rdma_ack_cm_event(verbs_expect_event(srv.ch, RDMA_CM_EVENT_DISCONNECTED));
	ck_assert_int_eq(rdma_disconnect(srv.id), 0);
	uint64_t until = uiw_now_ns() + 50 * UIW_NS_PER_MS;

	pair_run_until(elapsed, &until, 1000);   /* the client's side of the close completes */
	ck_assert_ptr_null(cli.id->channel);
}
END_TEST

/*
 * IBV_SEND_INLINE: the bytes are taken when the WR is posted, from memory no MR covers
 * (lkeys are ignored), so the buffer may change right after; a Send (three SGEs, and empty)
 * and a Write arrive as they were at the post. More than the QP's max_inline_data, or an
 * inline Read, is refused at the post; a QP asking for more than the device has is not made.
 */
START_TEST(inline_data_copied_at_post)
{
	start(&policies[0], "inline");
	connect_pair();
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr qi;

	ck_assert_int_eq(ibv_query_qp(cli.id->qp, &qa, IBV_QP_CAP, &qi), 0);
	uint32_t max = qi.cap.max_inline_data;
	ck_assert_uint_ge(max, 64);
	uint8_t *msg = calloc(1, max + 1), *want = malloc(max);   /* not registered */
	ck_assert_ptr_nonnull(msg);
	ck_assert_ptr_nonnull(want);

	/* A Send of max bytes from three SGEs, the buffer wiped right after the post. */
	fill(want, max, 41);
	memcpy(msg, want, max);
	struct ibv_sge ss[3] = { { (uintptr_t)msg, 10, 0 }, { (uintptr_t)msg + 10, max - 20, 0xdead },
				 { (uintptr_t)msg + max - 10, 10, 0 } };
	struct ibv_send_wr sw = { .wr_id = 7, .sg_list = ss, .num_sge = 3, .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE };
	struct ibv_sge rs = { (uintptr_t)srv.buf + DST, max, srv.mr->lkey };
	struct ibv_recv_wr rw = { .wr_id = 8, .sg_list = &rs, .num_sge = 1 };

	reset_guard(srv.buf + DST, max);
	ck_assert_int_eq(recv1(&srv, &rw), 0);
	ck_assert_int_eq(post1(cli.id->qp, &sw), 0);
	memset(msg, 0, max);
	struct ibv_wc sc = poll_one(cli.cq), rc = poll_one(srv.cq);

	ck_assert_msg(sc.status == IBV_WC_SUCCESS, "%s", ibv_wc_status_str(sc.status));
	ck_assert_uint_eq(sc.wr_id, 7);
	ck_assert_msg(rc.status == IBV_WC_SUCCESS, "%s", ibv_wc_status_str(rc.status));
	ck_assert_uint_eq(rc.byte_len, max);
	check_placed(srv.buf + DST, want, max, "inline send");

	/* An empty inline Send, then an inline Write with a Send behind it. */
	sw.num_sge = 0;
	ck_assert_int_eq(recv1(&srv, &rw), 0);
	ck_assert_int_eq(post1(cli.id->qp, &sw), 0);
	ck_assert_int_eq(poll_one(cli.cq).status, IBV_WC_SUCCESS);
	rc = poll_one(srv.cq);
	ck_assert_int_eq(rc.status, IBV_WC_SUCCESS);
	ck_assert_uint_eq(rc.byte_len, 0);
	fill(want, 40, 42);
	memcpy(msg, want, 40);
	struct ibv_sge ws = { (uintptr_t)msg, 40, 0 };
	struct ibv_send_wr fence = { .wr_id = 10, .opcode = IBV_WR_SEND };
	struct ibv_send_wr ww = { .wr_id = 9, .sg_list = &ws, .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE,
				  .send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE, .next = &fence,
				  .wr.rdma = { .remote_addr = (uintptr_t)srv.buf + DST2, .rkey = srv.mr->rkey } };

	reset_guard(srv.buf + DST2, 40);
	ck_assert_int_eq(recv1(&srv, &rw), 0);
	ck_assert_int_eq(post1(cli.id->qp, &ww), 0);
	memset(msg, 0, 40);
	ck_assert_int_eq(poll_one(cli.cq).status, IBV_WC_SUCCESS);
	ck_assert_int_eq(poll_one(srv.cq).status, IBV_WC_SUCCESS);
	check_placed(srv.buf + DST2, want, 40, "inline write");

	/* Refused at the post: one byte too many, and a Read. */
	struct ibv_send_wr *bad = NULL;

	ss[1].length = max - 19;
	sw.num_sge = 3;
	ck_assert_int_eq(ibv_post_send(cli.id->qp, &sw, &bad), EINVAL);
	ck_assert_ptr_eq(bad, &sw);
	struct ibv_sge r = { (uintptr_t)cli.buf + DST, 8, cli.mr->lkey };
	struct ibv_send_wr rd = { .sg_list = &r, .num_sge = 1, .opcode = IBV_WR_RDMA_READ,
				  .send_flags = IBV_SEND_INLINE,
				  .wr.rdma = { .remote_addr = (uintptr_t)srv.buf, .rkey = srv.mr->rkey } };

	ck_assert_int_eq(ibv_post_send(cli.id->qp, &rd, &bad), EINVAL);

	/* A QP asking for more inline room than there is. */
	struct ibv_qp_init_attr big = { .qp_type = IBV_QPT_RC, .send_cq = cli.cq, .recv_cq = cli.cq,
					.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1,
						 .max_recv_sge = 1, .max_inline_data = max + 1 } };

	errno = 0;
	ck_assert_ptr_null(ibv_create_qp(cli.pd, &big));
	ck_assert_int_eq(errno, EINVAL);
	big.cap.max_inline_data = 16;
	struct ibv_qp *q = ibv_create_qp(cli.pd, &big);

	ck_assert_ptr_nonnull(q);
	ck_assert_uint_ge(big.cap.max_inline_data, 16);
	ck_assert_int_eq(ibv_destroy_qp(q), 0);
	free(msg);
	free(want);
}
END_TEST

/* The extended send API (ibv_wr_post(3)): a batch goes whole, or not at all. */
START_TEST(extended_send_api_batches)
{
	cli_send_ops = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_INV | IBV_QP_EX_WITH_RDMA_WRITE |
		       IBV_QP_EX_WITH_RDMA_READ;
	start(&policies[0], "wrapi");
	connect_pair();
	struct ibv_qp_ex *x = ibv_qp_to_qp_ex(cli.id->qp);

	ck_assert_ptr_nonnull(x);
	errno = 0;
	ck_assert_ptr_null(ibv_qp_to_qp_ex(srv.id->qp));   /* made by ibv_create_qp */
	ck_assert_int_eq(errno, EOPNOTSUPP);

	/* A Send from two SGEs, an unsignaled Write, a Read, an inline Send with Solicited
	 * Event: one batch. */
	uint8_t want[64], msg[40];
	uint8_t *wdst = srv.buf + DST2, *rsrc = srv.buf + 5 * BIG, *rdst = cli.buf + DST;
	struct ibv_sge two[2] = { { (uintptr_t)cli.buf + SRC, 100, cli.mr->lkey },
				  { (uintptr_t)cli.buf + SRC + 1000, 60, cli.mr->lkey } };
	struct ibv_sge rs = { (uintptr_t)srv.buf + DST, 4096, srv.mr->lkey };
	struct ibv_recv_wr rw = { .wr_id = 50, .sg_list = &rs, .num_sge = 1 };
	struct ibv_sge rs2 = { (uintptr_t)srv.buf + DST + 8192, 4096, srv.mr->lkey };
	struct ibv_recv_wr rw2 = { .wr_id = 51, .sg_list = &rs2, .num_sge = 1 };

	fill(cli.buf + SRC, 2000, 61);
	fill(rsrc, 64, 62);
	fill(msg, sizeof(msg), 63);
	reset_guard(srv.buf + DST, 160);
	reset_guard(wdst, 64);
	reset_guard(rdst, 64);
	reset_guard(srv.buf + DST + 8192, sizeof(msg));
	ck_assert_int_eq(recv1(&srv, &rw), 0);
	ck_assert_int_eq(recv1(&srv, &rw2), 0);
	ibv_wr_start(x);
	x->wr_id = 1;
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(x);
	ibv_wr_set_sge_list(x, 2, two);
	x->wr_id = 2;
	x->wr_flags = 0;
	ibv_wr_rdma_write(x, srv.mr->rkey, (uintptr_t)wdst);
	ibv_wr_set_sge(x, cli.mr->lkey, (uintptr_t)cli.buf + SRC + 500, 64);
	x->wr_id = 3;
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_rdma_read(x, srv.mr->rkey, (uintptr_t)rsrc);
	ibv_wr_set_sge(x, cli.mr->lkey, (uintptr_t)rdst, 64);
	x->wr_id = 4;
	x->wr_flags = IBV_SEND_SIGNALED | IBV_SEND_SOLICITED;
	ibv_wr_send(x);
	ibv_wr_set_inline_data(x, msg, sizeof(msg));
	memcpy(want, msg, sizeof(msg));
	memset(msg, 0, sizeof(msg));   /* copied at the call */
	ck_assert_int_eq(ibv_wr_complete(x), 0);

	struct ibv_wc w1 = poll_one(cli.cq), w3 = poll_one(cli.cq), w4 = poll_one(cli.cq);

	ck_assert_uint_eq(w1.wr_id, 1);
	ck_assert_int_eq(w1.opcode, IBV_WC_SEND);
	ck_assert_uint_eq(w3.wr_id, 3);   /* the unsignaled Write made no completion */
	ck_assert_int_eq(w3.opcode, IBV_WC_RDMA_READ);
	ck_assert_uint_eq(w4.wr_id, 4);
	ck_assert(w1.status == IBV_WC_SUCCESS && w3.status == IBV_WC_SUCCESS && w4.status == IBV_WC_SUCCESS);
	struct ibv_wc r1 = poll_one(srv.cq);

	ck_assert_int_eq(r1.status, IBV_WC_SUCCESS);
	ck_assert_uint_eq(r1.byte_len, 160);
	ck_assert_mem_eq(srv.buf + DST, cli.buf + SRC, 100);
	ck_assert_mem_eq(srv.buf + DST + 100, cli.buf + SRC + 1000, 60);
	check_placed(wdst, cli.buf + SRC + 500, 64, "batched write");
	check_placed(rdst, rsrc, 64, "batched read");
	/* The inline Send (Send with Solicited Event on the wire), in the second receive. */
	r1 = poll_one(srv.cq);
	ck_assert_int_eq(r1.status, IBV_WC_SUCCESS);
	ck_assert_uint_eq(r1.wr_id, 51);
	ck_assert_uint_eq(r1.byte_len, sizeof(msg));
	check_placed(srv.buf + DST + 8192, want, sizeof(msg), "batched inline send");

	/* Send with Invalidate: the receive reports the STag it invalidated. */
	struct ibv_mr *mr2 = ibv_reg_mr(srv.pd, srv.buf + 5 * BIG + 8192, 4096,
					IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);

	ck_assert_ptr_nonnull(mr2);
	ck_assert_int_eq(recv1(&srv, &rw), 0);
	ibv_wr_start(x);
	x->wr_id = 5;
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send_inv(x, mr2->rkey);
	ibv_wr_set_sge(x, cli.mr->lkey, (uintptr_t)cli.buf + SRC, 16);
	ck_assert_int_eq(ibv_wr_complete(x), 0);
	ck_assert_uint_eq(poll_one(cli.cq).wr_id, 5);
	r1 = poll_one(srv.cq);
	ck_assert_int_eq(r1.status, IBV_WC_SUCCESS);
	ck_assert(r1.wc_flags & IBV_WC_WITH_INV);
	ck_assert_uint_eq(r1.invalidated_rkey, mr2->rkey);
	ck_assert_int_eq(ibv_dereg_mr(mr2), 0);

	/* Batches that post nothing: too many SGEs; a Send and a Read with inline data; a set-up call
	 * before any request; longer than the send queue; an abort. Each leaves the next good
	 * Send to land in the one receive posted here. */
	struct ibv_sge many[UIW_MAX_SGE + 1];
	struct ibv_qp_init_attr qi;
	struct ibv_qp_attr qa;

	for (unsigned i = 0; i < UIW_MAX_SGE + 1; i++)
		many[i] = (struct ibv_sge){ (uintptr_t)cli.buf + SRC + i, 1, cli.mr->lkey };
	ck_assert_int_eq(recv1(&srv, &rw), 0);
	ibv_wr_start(x);
	ibv_wr_send(x);
	ibv_wr_set_sge(x, cli.mr->lkey, (uintptr_t)cli.buf + SRC, 8);
	ibv_wr_send(x);
	ibv_wr_set_sge_list(x, UIW_MAX_SGE + 1, many);
	ck_assert_int_eq(ibv_wr_complete(x), EINVAL);
	ibv_wr_start(x);   /* the Send is taken back when the Read is refused */
	ibv_wr_send(x);
	ibv_wr_set_sge(x, cli.mr->lkey, (uintptr_t)cli.buf + SRC, 8);
	ibv_wr_rdma_read(x, srv.mr->rkey, (uintptr_t)rsrc);
	ibv_wr_set_inline_data(x, want, 8);
	ck_assert_int_eq(ibv_wr_complete(x), EINVAL);
	ibv_wr_start(x);
	ibv_wr_set_sge(x, cli.mr->lkey, (uintptr_t)cli.buf + SRC, 8);
	ck_assert_int_eq(ibv_wr_complete(x), EINVAL);
	ck_assert_int_eq(ibv_query_qp(cli.id->qp, &qa, IBV_QP_CAP, &qi), 0);
	ibv_wr_start(x);
	x->wr_flags = 0;
	for (uint32_t i = 0; i <= qi.cap.max_send_wr; i++) {
		ibv_wr_send(x);
		ibv_wr_set_sge(x, cli.mr->lkey, (uintptr_t)cli.buf + SRC, 1);
	}
	ck_assert_int_eq(ibv_wr_complete(x), ENOMEM);
	ibv_wr_start(x);
	ibv_wr_send(x);
	ibv_wr_set_sge(x, cli.mr->lkey, (uintptr_t)cli.buf + SRC, 8);
	ibv_wr_abort(x);
	ibv_wr_start(x);
	x->wr_id = 9;
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(x);
	ibv_wr_set_sge(x, cli.mr->lkey, (uintptr_t)cli.buf + SRC + 7, 33);
	ck_assert_int_eq(ibv_wr_complete(x), 0);
	ck_assert_uint_eq(poll_one(cli.cq).wr_id, 9);
	r1 = poll_one(srv.cq);
	ck_assert_uint_eq(r1.byte_len, 33);
	ck_assert_mem_eq(srv.buf + DST, cli.buf + SRC + 7, 33);
	struct ibv_wc none;

	ck_assert_int_eq(ibv_poll_cq(cli.cq, 1, &none), 0);
	ck_assert_int_eq(ibv_poll_cq(srv.cq, 1, &none), 0);

	/* Operations not provided (local invalidation): the QP is refused. */
	struct ibv_qp_init_attr_ex atomic = { .send_cq = cli.cq, .recv_cq = cli.cq, .qp_type = IBV_QPT_RC,
					      .cap = { .max_send_wr = 4, .max_recv_wr = 4,
						       .max_send_sge = 1, .max_recv_sge = 1 },
					      .pd = cli.pd,
					      .comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
					      .send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_LOCAL_INV };

	errno = 0;
	ck_assert_ptr_null(ibv_create_qp_ex(cli.id->verbs, &atomic));
	ck_assert_int_eq(errno, EOPNOTSUPP);
	atomic.send_ops_flags = IBV_QP_EX_WITH_SEND;
	struct ibv_qp *q = ibv_create_qp_ex(cli.id->verbs, &atomic);

	ck_assert_ptr_nonnull(q);
	ck_assert_ptr_nonnull(ibv_qp_to_qp_ex(q));
	ck_assert_int_eq(ibv_destroy_qp(q), 0);
}
END_TEST

/* An RDMA Write with immediate data of @p n bytes to the server's DST: the Write is
 * placed, and the Immediate Data completes a receive with the value and the Write's length. */
static void one_write_imm(uint32_t n, uint32_t tag, bool se)
{
	uint8_t *src = cli.buf + SRC, *dst = srv.buf + DST;
	struct ibv_sge ss = { (uintptr_t)src, n, cli.mr->lkey };
	struct ibv_send_wr w = { .wr_id = tag, .sg_list = &ss, .num_sge = n > 0 ? 1 : 0,
				 .opcode = IBV_WR_RDMA_WRITE_WITH_IMM,
				 .send_flags = IBV_SEND_SIGNALED | (se ? IBV_SEND_SOLICITED : 0),
				 .imm_data = htobe32(0x5eed0000u + tag),
				 .wr.rdma = { .remote_addr = (uintptr_t)dst, .rkey = srv.mr->rkey } };
	struct ibv_recv_wr rw = { .wr_id = 3000 + tag };
	char what[64];

	snprintf(what, sizeof(what), "write with immediate data, size %u", n);
	fill(src, n, tag);
	reset_guard(dst, n);
	ck_assert_int_eq(recv1(&srv, &rw), 0);
	ck_assert_int_eq(post1(cli.id->qp, &w), 0);
	struct ibv_wc sc = poll_one(cli.cq), rc = poll_one(srv.cq);

	ck_assert_msg(sc.status == IBV_WC_SUCCESS, "%s: %s", what, ibv_wc_status_str(sc.status));
	ck_assert_int_eq(sc.opcode, IBV_WC_RDMA_WRITE);
	ck_assert_uint_eq(sc.wr_id, tag);
	ck_assert_msg(rc.status == IBV_WC_SUCCESS, "%s: %s", what, ibv_wc_status_str(rc.status));
	ck_assert_int_eq(rc.opcode, IBV_WC_RECV_RDMA_WITH_IMM);
	ck_assert_uint_eq(rc.wr_id, 3000 + tag);
	ck_assert(rc.wc_flags & IBV_WC_WITH_IMM);
	ck_assert_uint_eq(be32toh(rc.imm_data), 0x5eed0000u + tag);
	ck_assert_uint_eq(rc.byte_len, n);
	if (n > 0)
		check_placed(dst, src, n, what);
}

/* One atomic on the server's word at @p word: the original value comes back. */
static uint64_t one_atomic(enum ibv_wr_opcode op, uint64_t *word, uint32_t rkey,
			   uint64_t compare_add, uint64_t swap, uint32_t tag)
{
	uint64_t *res = (uint64_t *)(void *)(cli.buf + DST);
	struct ibv_sge s = { (uintptr_t)res, 8, cli.mr->lkey };
	struct ibv_send_wr w = { .wr_id = tag, .sg_list = &s, .num_sge = 1, .opcode = op,
				 .send_flags = IBV_SEND_SIGNALED,
				 .wr.atomic = { .remote_addr = (uintptr_t)word, .compare_add = compare_add,
						.swap = swap, .rkey = rkey } };

	*res = 0xdeadbeefdeadbeefull;
	ck_assert_int_eq(post1(cli.id->qp, &w), 0);
	struct ibv_wc sc = poll_one(cli.cq);

	ck_assert_msg(sc.status == IBV_WC_SUCCESS, "atomic %d: %s", op, ibv_wc_status_str(sc.status));
	ck_assert_int_eq(sc.opcode, op == IBV_WR_ATOMIC_FETCH_AND_ADD ? IBV_WC_FETCH_ADD : IBV_WC_COMP_SWAP);
	ck_assert_uint_eq(sc.wr_id, tag);
	ck_assert_uint_eq(sc.byte_len, 8);
	return *res;
}

/* An inline Send with immediate data, posted through ibv_wr_send_imm(): value and octets
 * arrive, and the sender's buffer may change right after the post. */
static void wr_send_imm_inline(uint32_t tag)
{
	struct ibv_qp_ex *x = ibv_qp_to_qp_ex(cli.id->qp);
	char msg[] = "inline, with immediate data";
	struct ibv_sge rs = { (uintptr_t)srv.buf + DST, 64, srv.mr->lkey };
	struct ibv_recv_wr rw = { .wr_id = 4000 + tag, .sg_list = &rs, .num_sge = 1 };

	ck_assert_ptr_nonnull(x);
	ck_assert_int_eq(recv1(&srv, &rw), 0);
	ibv_wr_start(x);
	x->wr_id = tag;
	x->wr_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE;
	ibv_wr_send_imm(x, htobe32(0xfeed0000u + tag));
	ibv_wr_set_inline_data(x, msg, sizeof(msg));
	ck_assert_int_eq(ibv_wr_complete(x), 0);
	memset(msg, 'x', sizeof(msg) - 1);
	struct ibv_wc sc = poll_one(cli.cq), rc = poll_one(srv.cq);

	ck_assert_int_eq(sc.status, IBV_WC_SUCCESS);
	ck_assert_int_eq(sc.opcode, IBV_WC_SEND);
	ck_assert_int_eq(rc.status, IBV_WC_SUCCESS);
	ck_assert_int_eq(rc.opcode, IBV_WC_RECV);
	ck_assert_uint_eq(rc.wr_id, 4000 + tag);
	ck_assert(rc.wc_flags & IBV_WC_WITH_IMM);
	ck_assert_uint_eq(be32toh(rc.imm_data), 0xfeed0000u + tag);
	ck_assert_uint_eq(rc.byte_len, sizeof(msg));
	ck_assert_str_eq((const char *)srv.buf + DST, "inline, with immediate data");
}

/* RFC 7306 between two uiwarp ends (both announce it by default): Writes with immediate
 * data of every size class, uiwarp's Sends with immediate data of the same sizes (through
 * ibv_post_send and ibv_wr_send_imm, inline too), fetch-and-add and compare-and-swap (a
 * match and a miss), and a Read between them, under each MPA policy of the matrix. */
START_TEST(rfc7306_between_uiwarp_peers)
{
	struct ibv_device_attr da;

	cli_send_ops = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM;
	start(&policies[_i], "rfc7306");
	connect_pair();
	ck_assert_int_eq(ibv_query_device(cli.id->verbs, &da), 0);
	ck_assert_int_eq(da.atomic_cap, IBV_ATOMIC_HCA);
	ck_assert_uint_eq(uiw_qp_ext(uiw_verbs_qp_core(cli.id->qp)),
			  UIW_MPA_EXT_RFC7306 | UIW_MPA_EXT_SEND_IMM);

	uint32_t m = mulpdu(), sizes[] = { 0, 1, 8, m - 14, m - 13, 3 * m + 5, 65536 };

	for (unsigned k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		one_write_imm(sizes[k], k, (k & 1) != 0);
		one_send(sizes[k], k, IBV_WR_SEND_WITH_IMM, (k & 1) != 0, 100 + k);
	}
	wr_send_imm_inline(1);

	uint8_t *words = srv.buf + 5 * BIG;
	struct ibv_mr *amr = ibv_reg_mr(srv.pd, words, 4096, IBV_ACCESS_LOCAL_WRITE |
					IBV_ACCESS_REMOTE_ATOMIC);
	uint64_t *w = (uint64_t *)(void *)(words + 64);

	ck_assert_ptr_nonnull(amr);
	*w = 100;
	ck_assert_uint_eq(one_atomic(IBV_WR_ATOMIC_FETCH_AND_ADD, w, amr->rkey, 5, 0, 1), 100);
	ck_assert_uint_eq(*w, 105);
	ck_assert_uint_eq(one_atomic(IBV_WR_ATOMIC_CMP_AND_SWP, w, amr->rkey, 105, 7, 2), 105);
	ck_assert_uint_eq(*w, 7);
	ck_assert_uint_eq(one_atomic(IBV_WR_ATOMIC_CMP_AND_SWP, w, amr->rkey, 999, 1, 3), 7);
	ck_assert_uint_eq(*w, 7);
	ck_assert_uint_eq(one_atomic(IBV_WR_ATOMIC_FETCH_AND_ADD, w, amr->rkey, UINT64_MAX, 0, 4), 7);
	ck_assert_uint_eq(*w, 6);   /* adding 2^64 - 1 wraps: 7 - 1 */
	one_read(4096, 0, 5);      /* a Read after atomics: the ORQ keeps them apart */
	ck_assert_uint_eq(w[-1], 0xa5a5a5a5a5a5a5a5ull);   /* the neighbours untouched (GUARD) */
	ck_assert_uint_eq(w[1], 0xa5a5a5a5a5a5a5a5ull);
	ck_assert_int_eq(ibv_dereg_mr(amr), 0);
}
END_TEST

/* Toward a peer that does not announce RFC 7306 (here one with rfc7306=0, as siw would be),
 * immediate data and atomics are refused at post with EOPNOTSUPP, and nothing goes out:
 * the QP stays up for the operations it has. */
START_TEST(rfc7306_refused_toward_a_peer_without_it)
{
	base_config(&policies[0]);
	pair_setup_cfg(&cfg);
	pair_b.st.cfg.rfc7306 = 0;
	ck_assert_int_eq(uiw_verbs_add_device(&pair_a.st), 0);
	ck_assert_int_eq(uiw_verbs_add_device(&pair_b.st), 0);
	connect_pair();
	ck_assert_uint_eq(uiw_qp_ext(uiw_verbs_qp_core(cli.id->qp)), 0);
	ck_assert_uint_eq(uiw_qp_ext(uiw_verbs_qp_core(srv.id->qp)), 0);

	struct ibv_sge s = { (uintptr_t)cli.buf, 8, cli.mr->lkey };
	struct ibv_send_wr wi = { .wr_id = 1, .sg_list = &s, .num_sge = 1,
				  .opcode = IBV_WR_RDMA_WRITE_WITH_IMM, .send_flags = IBV_SEND_SIGNALED,
				  .wr.rdma = { .remote_addr = (uintptr_t)srv.buf, .rkey = srv.mr->rkey } };
	struct ibv_send_wr wa = { .wr_id = 2, .sg_list = &s, .num_sge = 1,
				  .opcode = IBV_WR_ATOMIC_FETCH_AND_ADD, .send_flags = IBV_SEND_SIGNALED,
				  .wr.atomic = { .remote_addr = (uintptr_t)srv.buf, .compare_add = 1,
						 .rkey = srv.mr->rkey } };
	struct ibv_wc none;

	ck_assert_int_eq(post1(cli.id->qp, &wi), EOPNOTSUPP);
	wi.opcode = IBV_WR_SEND_WITH_IMM;
	ck_assert_int_eq(post1(cli.id->qp, &wi), EOPNOTSUPP);
	ck_assert_int_eq(post1(srv.id->qp, &wi), EOPNOTSUPP);
	ck_assert_int_eq(post1(cli.id->qp, &wa), EOPNOTSUPP);
	wa.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
	ck_assert_int_eq(post1(srv.id->qp, &wa), EOPNOTSUPP);
	ck_assert_int_eq(ibv_poll_cq(cli.cq, 1, &none), 0);
	one_write(4096, 0, 7);
	one_read(4096, 0, 9);
}
END_TEST

/* A uiwarp peer with RFC 7306 but send_imm=0 (as a uiwarp that predates Send with
 * immediate data announces): Writes with immediate data run, Sends with it are refused at
 * post with EOPNOTSUPP and nothing goes out. */
START_TEST(send_imm_refused_toward_a_peer_without_it)
{
	base_config(&policies[0]);
	pair_setup_cfg(&cfg);
	pair_a.st.cfg.send_imm = 0;
	ck_assert_int_eq(uiw_verbs_add_device(&pair_a.st), 0);
	ck_assert_int_eq(uiw_verbs_add_device(&pair_b.st), 0);
	connect_pair();
	ck_assert_uint_eq(uiw_qp_ext(uiw_verbs_qp_core(cli.id->qp)), UIW_MPA_EXT_RFC7306);
	ck_assert_uint_eq(uiw_qp_ext(uiw_verbs_qp_core(srv.id->qp)), UIW_MPA_EXT_RFC7306);

	struct ibv_sge s = { (uintptr_t)cli.buf, 8, cli.mr->lkey };
	struct ibv_send_wr w = { .wr_id = 1, .sg_list = &s, .num_sge = 1,
				 .opcode = IBV_WR_SEND_WITH_IMM, .send_flags = IBV_SEND_SIGNALED };
	struct ibv_wc none;

	ck_assert_int_eq(post1(cli.id->qp, &w), EOPNOTSUPP);
	ck_assert_int_eq(post1(srv.id->qp, &w), EOPNOTSUPP);
	ck_assert_int_eq(ibv_poll_cq(cli.cq, 1, &none), 0);
	one_write_imm(100, 2, false);
	one_send(100, 0, IBV_WR_SEND, false, 3);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("verbs_ops");
	TCase *tc = tcase_with_leak_check("verbs_ops", setup, teardown);

	tcase_set_timeout(tc, 300);
	tcase_add_loop_test(tc, every_operation_every_size, 0, sizeof(policies) / sizeof(policies[0]));
	tcase_add_test(tc, reads_at_the_ord_ird_limit);
	tcase_add_test(tc, write_after_send_with_invalidate_terminated);
	tcase_add_test(tc, solicited_only_notification);
	tcase_add_test(tc, shared_receive_queue_several_sges);
	tcase_add_loop_test(tc, empty_receive_queue_terminated, 0, 2);
	tcase_add_test(tc, send_longer_than_its_receive_terminated);
	tcase_add_loop_test(tc, send_waits_for_a_receive, 0, sizeof(policies) / sizeof(policies[0]));
	tcase_add_test(tc, disconnect_behind_waiting_sends);
	tcase_add_test(tc, peer_fin_disconnects_before_our_fin_is_acked);
	tcase_add_test(tc, idle_connection_outlives_the_mpa_timers);
	tcase_add_test(tc, destroyed_id_closes_after_its_data);
	tcase_add_test(tc, channel_destroyed_before_a_closing_id);
	tcase_add_test(tc, inline_data_copied_at_post);
	tcase_add_test(tc, extended_send_api_batches);
	tcase_add_loop_test(tc, rfc7306_between_uiwarp_peers, 0, sizeof(policies) / sizeof(policies[0]));
	tcase_add_test(tc, rfc7306_refused_toward_a_peer_without_it);
	tcase_add_test(tc, send_imm_refused_toward_a_peer_without_it);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
