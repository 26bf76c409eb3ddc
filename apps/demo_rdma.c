/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The seven iWARP operations between two instances, through the RDMAP queue-pair
 * interface: Send, Send with Solicited Event, RDMA Write, RDMA Read, Send with Invalidate,
 * Send with SE and Invalidate, then a Terminate provoked on purpose (a Write to the STag the
 * last Send invalidated). Each operation and each completion is printed.
 */
#include "demo_rdma.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rdmap.h"
#include "tcp.h"
#include "uiw_time.h"

#define BUF 65536
#define PORT 7174

struct end {
	const char *name;
	struct uiw_stack *s;
	struct uiw_stag_table stags;
	struct uiw_cq scq, rcq;
	struct uiw_qp *qp;
	uint8_t *buf;
	struct uiw_mr *mr, *mr_inv1, *mr_inv2;
	bool up, err;
	unsigned notified;
	char why[128];
};

static struct end A = { .name = "A" }, B = { .name = "B" };
static int failures;

static void ev_established(void *arg, struct uiw_qp *qp, const struct uiw_mpa_info *n)
{
	struct end *e = arg;

	(void)qp;
	e->up = true;
	printf("             %s: connected as %s: MPA rev %u, CRC %s, Markers %s, IRD %u ORD %u, MULPDU %u\n",
	       e->name, n->initiator ? "initiator" : "responder", n->rev, n->crc ? "on" : "off",
	       n->markers_tx ? "on" : "off", n->ird, n->ord, n->mulpdu);
}

static void ev_error(void *arg, struct uiw_qp *qp, const char *why)
{
	struct end *e = arg;

	(void)qp;
	e->err = true;
	snprintf(e->why, sizeof(e->why), "%s", why);
	printf("             %s: QP in error: %s\n", e->name, why);
}

static const struct uiw_qp_events events = { .established = ev_established, .error = ev_error };

static void on_notify(void *arg, struct uiw_cq *cq)
{
	(void)cq;
	((struct end *)arg)->notified++;
	printf("             %s: completion channel: solicited event\n", ((struct end *)arg)->name);
}

static void on_request(void *ctx, struct uiw_mpa_conn *c, const struct uiw_mpa_rr_info *req)
{
	struct uiw_mpa_params *p = ctx;

	(void)req;
	if (uiw_mpa_accept(c, p, &uiw_qp_mpa_ops, B.qp) != 0)
		failures++;
}

static const struct uiw_mpa_ops listen_ops = { .request = on_request };

static void poll_both(void)
{
	uint64_t now = uiw_now_ns();

	uiw_stack_poll(A.s, now);
	uiw_stack_poll(B.s, now);
}

static int end_open(struct end *e, struct uiw_stack *s, uint32_t qpn)
{
	struct uiw_qp_attr a = { .qp_num = qpn, .pd = 1, .sq_size = 64, .rq_size = 64,
				 .send_cq = &e->scq, .recv_cq = &e->rcq, .stags = &e->stags,
				 .events = &events, .event_arg = e };
	unsigned rights = UIW_ACCESS_LOCAL_WRITE | UIW_ACCESS_REMOTE_WRITE | UIW_ACCESS_REMOTE_READ;

	e->s = s;
	e->buf = calloc(1, BUF);
	if (e->buf == NULL || uiw_stag_table_init(&e->stags, 16) != 0 || uiw_cq_init(&e->scq, 64) != 0 ||
	    uiw_cq_init(&e->rcq, 64) != 0 || uiw_qp_create(&e->qp, &a) != 0)
		return -1;
	e->rcq.notify = on_notify;
	e->rcq.notify_arg = e;
	e->mr = uiw_stag_register(&e->stags, 1, e->buf, BUF / 2, (uintptr_t)e->buf, rights, 0x01);
	e->mr_inv1 = uiw_stag_register(&e->stags, 1, e->buf + BUF / 2, BUF / 4,
				       (uintptr_t)e->buf + BUF / 2, rights, 0x02);
	e->mr_inv2 = uiw_stag_register(&e->stags, 1, e->buf + 3 * BUF / 4, BUF / 4,
				       (uintptr_t)e->buf + 3 * BUF / 4, rights, 0x03);
	return e->mr != NULL && e->mr_inv1 != NULL && e->mr_inv2 != NULL ? 0 : -1;
}

static void end_close(struct end *e)
{
	uiw_qp_destroy(e->qp);
	uiw_cq_fini(&e->scq);
	uiw_cq_fini(&e->rcq);
	uiw_stag_table_fini(&e->stags);
	free(e->buf);
}

static const char *status_name(enum uiw_wc_status s)
{
	static const char *const names[] = { "success", "local length error", "local protection error",
					     "flushed", "remote access error", "remote operation error",
					     "fatal", "local QP operation error" };

	return s <= UIW_WC_LOC_QP_OP_ERR ? names[s] : "?";
}

/* Waits for one completion on @p cq and prints it. */
static int wait_wc(struct end *e, struct uiw_cq *cq, struct uiw_wc *wc)
{
	uint64_t end = uiw_now_ns() + 2 * UIW_NS_PER_S;

	while (uiw_cq_poll(cq, wc, 1) == 0) {
		if (uiw_now_ns() > end) {
			printf("             %s: no completion (%s)\n", e->name, e->why);
			failures++;
			return -1;
		}
		poll_both();
	}
	printf("             %s: %s completion wr_id %llu: %s, %u octets%s%s\n", e->name,
	       cq == &e->scq ? "send" : "receive", (unsigned long long)wc->wr_id,
	       status_name(wc->status), wc->byte_len, wc->solicited ? ", solicited" : "",
	       wc->with_inv ? ", invalidated an STag" : "");
	return 0;
}

static void check(bool ok, const char *what)
{
	if (!ok) {
		printf("             FAILED: %s\n", what);
		failures++;
	}
}

static void post_recv(uint64_t id, uint32_t off, uint32_t len)
{
	struct uiw_recv_wr r = { .wr_id = id, .sg = { { B.buf + off, len } }, .nsge = 1 };

	check(uiw_qp_post_recv(B.qp, &r) == 0, "post receive");
}

/* A posts a Send of @p op carrying @p text; B receives it. */
static void do_send(enum uiw_wr_op op, uint64_t id, const char *text, uint32_t inv_stag)
{
	struct uiw_send_wr w = { .wr_id = id, .op = op, .signaled = true, .nsge = 1,
				 .sg = { { A.buf, (uint32_t)strlen(text) } }, .inv_stag = inv_stag };
	struct uiw_wc wc;

	memcpy(A.buf, text, strlen(text));
	post_recv(100 + id, 1024, 256);
	check(uiw_qp_post_send(A.qp, &w) == 0, "post send");
	if (wait_wc(&A, &A.scq, &wc) == 0)
		check(wc.status == UIW_WC_SUCCESS, "send completion");
	if (wait_wc(&B, &B.rcq, &wc) == 0) {
		check(wc.status == UIW_WC_SUCCESS && wc.byte_len == strlen(text), "receive completion");
		check(memcmp(B.buf + 1024, text, strlen(text)) == 0, "received bytes");
		printf("             B: received \"%.*s\"\n", (int)wc.byte_len, (const char *)B.buf + 1024);
	}
}

static void do_write_read(void)
{
	struct uiw_send_wr w = { .wr_id = 5, .op = UIW_WR_WRITE, .signaled = true, .nsge = 1,
				 .sg = { { A.buf + 4096, 8192 } }, .rkey = B.mr->stag,
				 .remote_addr = B.mr->va + 8192 };
	struct uiw_wc wc;

	for (unsigned i = 0; i < 8192; i++) {
		A.buf[4096 + i] = (uint8_t)(i * 7);
		B.buf[16384 + i] = (uint8_t)(i * 11);
	}
	printf("\n-- A: RDMA Write of 8192 octets into B's memory (STag 0x%08x), no work by B's application\n",
	       B.mr->stag);
	check(uiw_qp_post_send(A.qp, &w) == 0, "post write");
	if (wait_wc(&A, &A.scq, &wc) == 0)
		check(wc.status == UIW_WC_SUCCESS, "write completion");
	printf("\n-- A: RDMA Read of 8192 octets from B's memory (a Read Request, then B's Read Response)\n");
	w = (struct uiw_send_wr){ .wr_id = 6, .op = UIW_WR_READ, .signaled = true, .nsge = 1,
				  .sg = { { A.buf + 16384, 8192 } }, .rkey = B.mr->stag,
				  .remote_addr = B.mr->va + 16384, .sink_stag = A.mr->stag,
				  .sink_to = A.mr->va + 16384 };
	check(uiw_qp_post_send(A.qp, &w) == 0, "post read");
	if (wait_wc(&A, &A.scq, &wc) == 0)
		check(wc.status == UIW_WC_SUCCESS && wc.byte_len == 8192, "read completion");
	/* The Read went after the Write: B's memory holds what A wrote, A what it read. */
	check(memcmp(B.buf + 8192, A.buf + 4096, 8192) == 0, "written bytes at B");
	check(memcmp(A.buf + 16384, B.buf + 16384, 8192) == 0, "read bytes at A");
	printf("             A: wrote and read back 8192 octets each, byte for byte\n");
}

static void do_terminate(void)
{
	struct uiw_send_wr w = { .wr_id = 9, .op = UIW_WR_WRITE, .signaled = true, .nsge = 1,
				 .sg = { { A.buf, 64 } }, .rkey = B.mr_inv1->stag,
				 .remote_addr = B.mr_inv1->va };
	struct uiw_wc wc;
	uint64_t end = uiw_now_ns() + 2 * UIW_NS_PER_S;

	printf("\n-- Terminate, on purpose: A writes to the STag 0x%08x that B no longer has\n",
	       B.mr_inv1->stag);
	check(uiw_qp_post_send(A.qp, &w) == 0, "post write");
	while (!(A.err && B.err) && uiw_now_ns() < end)
		poll_both();
	const struct uiw_term_info *t = uiw_qp_term_rx(A.qp);

	check(t->valid && t->layer == UIW_TERM_LAYER_DDP && t->etype == 1 && t->code == 0x00,
	      "Terminate DDP tagged 0x00 (invalid STag) received by A");
	printf("             A: Terminate received: layer %s, error type %u (tagged buffer), code 0x%02x (invalid STag)\n",
	       t->layer == UIW_TERM_LAYER_DDP ? "DDP" : "?", t->etype, t->code);
	if (uiw_cq_poll(&A.scq, &wc, 1) == 1)
		printf("             A: send completion wr_id %llu: %s\n", (unsigned long long)wc.wr_id,
		       status_name(wc.status));
	check(uiw_qp_state(A.qp) == UIW_QPS_ERROR && uiw_qp_state(B.qp) == UIW_QPS_ERROR,
	      "both QPs in error");
}

static void run_ops(void)
{
	struct uiw_wc wc;

	printf("\n-- A: Send\n");
	do_send(UIW_WR_SEND, 1, "hello over iWARP", 0);
	printf("\n-- A: Send with Solicited Event (B's CQ armed for solicited completions only)\n");
	uiw_cq_arm(&B.rcq, true);
	do_send(UIW_WR_SEND_SE, 2, "wake up", 0);
	check(B.notified == 1, "solicited event");
	do_write_read();
	printf("\n-- A: Send with Invalidate of B's STag 0x%08x\n", B.mr_inv1->stag);
	do_send(UIW_WR_SEND_INV, 3, "done with that buffer", B.mr_inv1->stag);
	check(!B.mr_inv1->valid, "STag invalidated");
	printf("\n-- A: Send with Solicited Event and Invalidate of B's STag 0x%08x\n", B.mr_inv2->stag);
	uiw_cq_arm(&B.rcq, true);
	do_send(UIW_WR_SEND_SE_INV, 4, "and that one", B.mr_inv2->stag);
	check(!B.mr_inv2->valid && B.notified == 2, "STag invalidated, solicited event");
	(void)wc;
	do_terminate();
}

int demo_rdma(struct uiw_stack *a, struct uiw_stack *b, const struct uiw_config *cfg)
{
	struct uiw_mpa_params p;
	struct uiw_mpa_conn *c;
	uint64_t end;

	if (end_open(&A, a, 1) != 0 || end_open(&B, b, 2) != 0) {
		printf("cannot set up the RDMA part\n");
		return -1;
	}
	uiw_mpa_params_from_config(&p, cfg);
	p.first_delay_us = 0;
	printf("\n-- A connects to B port %u: TCP handshake, MPA Request and Reply (IRD/ORD, CRC)\n", PORT);
	if (uiw_mpa_listen(B.s->mpa, PORT, 4, &p, &listen_ops, &p) != 0 ||
	    uiw_mpa_connect(A.s->mpa, b->net.ip, PORT, &p, &uiw_qp_mpa_ops, A.qp, uiw_now_ns(), &c) != 0)
		return -1;
	for (end = uiw_now_ns() + 2 * UIW_NS_PER_S; !(A.up && B.up) && uiw_now_ns() < end;)
		poll_both();
	check(A.up && B.up, "connection established");
	if (A.up && B.up)
		run_ops();
	for (end = uiw_now_ns() + UIW_NS_PER_S / 10; uiw_now_ns() < end;)
		poll_both();
	printf("\n");
	uiw_counters_print(stdout, "rdmap A", uiw_rdmap_counter_desc, uiw_qp_counters(A.qp), UIW_RDMAP_C__COUNT, true);
	uiw_counters_print(stdout, "rdmap B", uiw_rdmap_counter_desc, uiw_qp_counters(B.qp), UIW_RDMAP_C__COUNT, true);
	end_close(&A);
	end_close(&B);
	return failures == 0 ? 0 : -1;
}
