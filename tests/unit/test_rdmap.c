/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * RDMAP between two stack instances (pair_fixture), through the QP interface: Send (all
 * four kinds), RDMA Write and RDMA Read at sizes around MULPDU and 1 MiB, data checked byte
 * for byte; Reads beyond the ORD; Send with Invalidate then a Write to the invalidated
 * region Terminated; an empty receive queue Terminated; solicited-only notification.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <rte_ethdev.h>

#include "check_common.h"
#include "pair_fixture.h"
#include "rdmap.h"
#include "rdmap_internal.h"   /* the QP's receive ring, to start it near the wrap */
#include "uiw_time.h"

#define PORT 7000
#define BIG (1u << 20)

struct side {
	struct uiw_stag_table stags;
	struct uiw_cq scq, rcq;
	struct uiw_qp *qp;
	bool up, err, closed;
	char why[128];
	uint8_t *buf;            /* BIG octets, registered */
	struct uiw_mr *mr;
	unsigned notified;
};

static struct side A, B;

static void ev_established(void *arg, struct uiw_qp *qp, const struct uiw_mpa_info *info)
{
	(void)qp;
	(void)info;
	((struct side *)arg)->up = true;
}

static void ev_error(void *arg, struct uiw_qp *qp, const char *why)
{
	struct side *s = arg;

	(void)qp;
	s->err = true;
	snprintf(s->why, sizeof(s->why), "%s", why);
}

static void ev_closed(void *arg, struct uiw_qp *qp)
{
	(void)qp;
	((struct side *)arg)->closed = true;
}

static const struct uiw_qp_events events = {
	.established = ev_established, .error = ev_error, .closed = ev_closed,
};

static void on_notify(void *arg, struct uiw_cq *cq)
{
	(void)cq;
	((struct side *)arg)->notified++;
}

static void side_init(struct side *s, uint32_t qpn)
{
	struct uiw_qp_attr a = { .qp_num = qpn, .pd = 1, .sq_size = 256, .rq_size = 256,
				 .send_cq = &s->scq, .recv_cq = &s->rcq, .stags = &s->stags,
				 .events = &events, .event_arg = s };

	memset(s, 0, sizeof(*s));
	ck_assert_int_eq(uiw_stag_table_init(&s->stags, 64), 0);
	ck_assert_int_eq(uiw_cq_init(&s->scq, 1024), 0);
	ck_assert_int_eq(uiw_cq_init(&s->rcq, 1024), 0);
	s->rcq.notify = on_notify;
	s->rcq.notify_arg = s;
	ck_assert_int_eq(uiw_qp_create(&s->qp, &a), 0);
	s->buf = calloc(1, BIG);
	ck_assert_ptr_nonnull(s->buf);
	s->mr = uiw_stag_register(&s->stags, 1, s->buf, BIG, (uintptr_t)s->buf,
				  UIW_ACCESS_LOCAL_WRITE | UIW_ACCESS_REMOTE_WRITE | UIW_ACCESS_REMOTE_READ, 0x11);
	ck_assert_ptr_nonnull(s->mr);
}

static void side_fini(struct side *s)
{
	uiw_qp_destroy(s->qp);
	uiw_cq_fini(&s->scq);
	uiw_cq_fini(&s->rcq);
	uiw_stag_table_fini(&s->stags);
	free(s->buf);
}

static void on_request(void *ctx, struct uiw_mpa_conn *c, const struct uiw_mpa_rr_info *req)
{
	struct uiw_config cfg;
	struct uiw_mpa_params p;

	(void)ctx;
	(void)req;
	uiw_config_defaults(&cfg);
	uiw_mpa_params_from_config(&p, &cfg);
	ck_assert_int_eq(uiw_mpa_accept(c, &p, &uiw_qp_mpa_ops, B.qp), 0);
}

static const struct uiw_mpa_ops listen_ops = { .request = on_request };

static bool both_up(void *arg)
{
	(void)arg;
	return (A.up && B.up) || A.err || B.err;
}

/* connect_qps(): neither side announces uiwarp's extensions, as toward siw (reset by
 * setup()). */
static bool no_extensions;

static void connect_qps(uint16_t ord, bool crc, bool markers)
{
	struct uiw_config cfg;
	struct uiw_mpa_params p;
	struct uiw_mpa_conn *c;

	uiw_config_defaults(&cfg);
	uiw_mpa_params_from_config(&p, &cfg);
	if (no_extensions)
		p.ext = 0;
	p.ord = ord;
	p.crc = crc;
	p.markers = markers;
	ck_assert_int_eq(uiw_mpa_listen(pair_b.st.mpa, PORT, 4, &p, &listen_ops, NULL), 0);
	ck_assert_int_eq(uiw_mpa_connect(pair_a.st.mpa, PAIR_IP_B, PORT, &p, &uiw_qp_mpa_ops, A.qp,
					 uiw_now_ns(), &c), 0);
	ck_assert(pair_run_until(both_up, NULL, 3000));
	ck_assert_msg(A.up && B.up, "%s / %s", A.why, B.why);
}

static void setup(void)
{
	no_extensions = false;
	pair_setup();
	side_init(&A, 1);
	side_init(&B, 2);
}

static void teardown(void)
{
	side_fini(&A);
	side_fini(&B);
	pair_teardown();
}

/* The pair again, on @p cfg, with fresh QPs on both sides. */
static void restart(const struct uiw_config *cfg)
{
	teardown();
	pair_setup_cfg(cfg);
	side_init(&A, 1);
	side_init(&B, 2);
}

struct wait_wc {
	struct uiw_cq *cq;
	struct uiw_wc wc[64];
	unsigned want, got;
};

static bool wc_arrived(void *arg)
{
	struct wait_wc *w = arg;

	w->got += uiw_cq_poll(w->cq, w->wc + w->got, w->want - w->got);
	return w->got >= w->want;
}

static struct uiw_wc wait_one(struct uiw_cq *cq)
{
	struct wait_wc w = { .cq = cq, .want = 1 };

	ck_assert_msg(pair_run_until(wc_arrived, &w, 5000), "no completion (%s / %s)", A.why, B.why);
	return w.wc[0];
}

static void fill(uint8_t *p, uint32_t n, uint8_t seed)
{
	for (uint32_t i = 0; i < n; i++)
		p[i] = (uint8_t)(seed + i * 31 + (i >> 8));
}

static uint32_t size_of(unsigned i, uint32_t mul, uint32_t hdr)
{
	const uint32_t sizes[] = { 0, 1, mul - hdr - 1, mul - hdr, mul - hdr + 1, BIG };

	return sizes[i];
}

static const enum uiw_wr_op send_ops[] = { UIW_WR_SEND, UIW_WR_SEND_SE, UIW_WR_SEND_INV, UIW_WR_SEND_SE_INV };

static bool both_err(void *arg)
{
	(void)arg;
	return A.err && B.err;
}

static bool both_closed(void *arg)
{
	(void)arg;
	return A.closed && B.closed;
}

static bool b_writes_reach(void *arg)
{
	return uiw_qp_counters(B.qp)[UIW_RDMAP_C_rx_write] >= *(const uint64_t *)arg;
}

/* Every size, CRC and Markers on and off: the receive buffer holds exactly what was sent. */
START_TEST(send_every_size)
{
	bool crc = _i & 1, markers = _i & 2;

	connect_qps(16, crc, markers);
	uint32_t mul = uiw_mpa_info(uiw_qp_conn(A.qp))->mulpdu;

	for (unsigned k = 0; k < 6; k++) {
		uint32_t n = size_of(k, mul, 18);
		struct uiw_recv_wr r = { .wr_id = 100 + k, .sg = { { B.buf, BIG } }, .nsge = 1 };
		struct uiw_send_wr w = { .wr_id = k, .op = UIW_WR_SEND_SE, .signaled = true,
					 .sg = { { A.buf, n / 3 }, { A.buf + n / 3, n - n / 3 } }, .nsge = 2 };

		fill(A.buf, n, (uint8_t)k);
		memset(B.buf, 0, n);
		ck_assert_int_eq(uiw_qp_post_recv(B.qp, &r), 0);
		ck_assert_int_eq(uiw_qp_post_send(A.qp, &w), 0);
		struct uiw_wc rc = wait_one(&B.rcq), sc = wait_one(&A.scq);

		ck_assert_int_eq(rc.status, UIW_WC_SUCCESS);
		ck_assert_uint_eq(rc.wr_id, 100 + k);
		ck_assert_uint_eq(rc.byte_len, n);
		ck_assert(rc.solicited && !rc.with_inv);
		ck_assert_int_eq(sc.status, UIW_WC_SUCCESS);
		ck_assert_uint_eq(sc.wr_id, k);
		ck_assert_int_eq(sc.op, UIW_WC_SEND);
		ck_assert_mem_eq(B.buf, A.buf, n);
	}
	ck_assert_uint_eq(uiw_qp_counters(B.qp)[UIW_RDMAP_C_rx_send], 6);
}
END_TEST

START_TEST(write_every_size)
{
	connect_qps(16, true, _i & 1);
	uint32_t mul = uiw_mpa_info(uiw_qp_conn(A.qp))->mulpdu;

	for (unsigned k = 0; k < 6; k++) {
		uint32_t n = size_of(k, mul, 14), at = k == 5 ? 0 : 1000 + k;
		struct uiw_send_wr w = { .wr_id = k, .op = UIW_WR_WRITE, .signaled = true,
					 .sg = { { A.buf, n } }, .nsge = 1, .rkey = B.mr->stag,
					 .remote_addr = B.mr->va + at };

		fill(A.buf, n, (uint8_t)(k + 50));
		memset(B.buf, 0, BIG);
		ck_assert_int_eq(uiw_qp_post_send(A.qp, &w), 0);
		struct uiw_wc sc = wait_one(&A.scq);

		ck_assert_int_eq(sc.status, UIW_WC_SUCCESS);
		ck_assert_int_eq(sc.op, UIW_WC_RDMA_WRITE);
		/* Placed at B without a completion there: wait for B to have taken it whole. */
		uint64_t want = k + 1;

		ck_assert(pair_run_until(b_writes_reach, &want, 5000));
		ck_assert_mem_eq(B.buf + at, A.buf, n);
		ck_assert_uint_eq(B.buf[at + n - (n > 0)], n > 0 ? A.buf[n - 1] : 0);
	}
	ck_assert_uint_eq(uiw_ring_count(&B.rcq.ring), 0);   /* a Write completes nothing at the target */
}
END_TEST

START_TEST(read_every_size)
{
	connect_qps(4, true, false);
	uint32_t mul = uiw_mpa_info(uiw_qp_conn(A.qp))->mulpdu;

	for (unsigned k = 0; k < 6; k++) {
		uint32_t n = size_of(k, mul, 14), at = n == BIG ? 0 : 7;
		struct uiw_send_wr w = { .wr_id = k, .op = UIW_WR_READ, .signaled = true,
					 .sg = { { A.buf, n } }, .nsge = 1, .rkey = B.mr->stag,
					 .remote_addr = B.mr->va + at, .sink_stag = A.mr->stag,
					 .sink_to = A.mr->va };

		fill(B.buf + at, n, (uint8_t)(k + 9));
		memset(A.buf, 0, BIG);
		ck_assert_int_eq(uiw_qp_post_send(A.qp, &w), 0);
		struct uiw_wc sc = wait_one(&A.scq);

		ck_assert_msg(sc.status == UIW_WC_SUCCESS, "size %u: %s / %s", n, A.why, B.why);
		ck_assert_int_eq(sc.op, UIW_WC_RDMA_READ);
		ck_assert_uint_eq(sc.byte_len, n);
		ck_assert_mem_eq(A.buf, B.buf + at, n);
	}
}
END_TEST

/* More Reads than the ORD at once: they wait for responses, all complete in order, and the
 * Send posted behind them completes after them. */
START_TEST(reads_beyond_ord_complete_in_order)
{
	struct wait_wc w = { .cq = &A.scq, .want = 11 };

	connect_qps(2, true, false);
	fill(B.buf, 64 * 1024, 3);
	for (unsigned k = 0; k < 10; k++) {
		struct uiw_send_wr r = { .wr_id = k, .op = UIW_WR_READ, .signaled = true,
					 .sg = { { A.buf + k * 4096, 4096 } }, .nsge = 1,
					 .rkey = B.mr->stag, .remote_addr = B.mr->va + k * 4096,
					 .sink_stag = A.mr->stag, .sink_to = A.mr->va + k * 4096 };

		ck_assert_int_eq(uiw_qp_post_send(A.qp, &r), 0);
	}
	struct uiw_recv_wr rr = { .wr_id = 77, .sg = { { B.buf + 100000, 64 } }, .nsge = 1 };
	struct uiw_send_wr s = { .wr_id = 10, .op = UIW_WR_SEND, .signaled = true,
				 .sg = { { A.buf + 200000, 8 } }, .nsge = 1 };

	ck_assert_int_eq(uiw_qp_post_recv(B.qp, &rr), 0);
	ck_assert_int_eq(uiw_qp_post_send(A.qp, &s), 0);
	ck_assert(pair_run_until(wc_arrived, &w, 5000));
	for (unsigned k = 0; k < 11; k++) {
		ck_assert_uint_eq(w.wc[k].wr_id, k);
		ck_assert_int_eq(w.wc[k].status, UIW_WC_SUCCESS);
	}
	ck_assert_mem_eq(A.buf, B.buf, 40960);
	ck_assert_uint_eq(uiw_qp_ord(A.qp), 2);
}
END_TEST

/* Send with Invalidate kills the peer's STag; a Write to it is then Terminated (DDP tagged
 * 0x00) and the writer's QP goes to error with that cause. (A sends first: the responder B
 * may not send before the initiator's first FPDU.) */
START_TEST(send_with_invalidate_then_write_terminated)
{
	connect_qps(16, true, false);
	struct uiw_recv_wr r = { .wr_id = 1, .sg = { { B.buf, 64 } }, .nsge = 1 };
	struct uiw_send_wr inv = { .wr_id = 2, .op = send_ops[2 + _i], .signaled = true,
				   .sg = { { A.buf, 10 } }, .nsge = 1, .inv_stag = B.mr->stag };

	ck_assert_int_eq(uiw_qp_post_recv(B.qp, &r), 0);
	ck_assert_int_eq(uiw_qp_post_send(A.qp, &inv), 0);
	struct uiw_wc rc = wait_one(&B.rcq);

	ck_assert(rc.with_inv);
	ck_assert_uint_eq(rc.inv_stag, B.mr->stag);
	ck_assert_int_eq(rc.solicited, _i == 1);
	ck_assert(!B.mr->valid);
	struct uiw_send_wr w = { .wr_id = 3, .op = UIW_WR_WRITE, .signaled = true,
				 .sg = { { A.buf + 1000, 100 } }, .nsge = 1, .rkey = B.mr->stag,
				 .remote_addr = B.mr->va };

	memset(B.buf, 0, 100);
	fill(A.buf + 1000, 100, 1);
	ck_assert_int_eq(uiw_qp_post_send(A.qp, &w), 0);
	ck_assert(pair_run_until(both_err, NULL, 5000));
	ck_assert(uiw_qp_term_tx(B.qp)->valid);
	ck_assert_uint_eq(uiw_qp_term_tx(B.qp)->layer, UIW_TERM_LAYER_DDP);
	ck_assert_uint_eq(uiw_qp_term_tx(B.qp)->code, 0x00);
	ck_assert(uiw_qp_term_rx(A.qp)->valid && !uiw_qp_term_rx(A.qp)->siw_order);
	ck_assert_uint_eq(uiw_qp_term_rx(A.qp)->layer, UIW_TERM_LAYER_DDP);
	ck_assert_uint_eq(uiw_qp_term_rx(A.qp)->etype, 1);
	ck_assert_uint_eq(B.buf[0] | B.buf[99], 0);    /* nothing placed */
	ck_assert_int_eq(uiw_qp_state(B.qp), UIW_QPS_ERROR);
}
END_TEST

/* A Read past the end of the peer's region: Terminate RDMAP Remote Protection 0x01 with the
 * Read Request echoed (M, D and R set); the Read completes in error. */
START_TEST(read_out_of_bounds_terminated)
{
	connect_qps(16, true, false);
	struct uiw_send_wr w = { .wr_id = 9, .op = UIW_WR_READ, .signaled = true,
				 .sg = { { A.buf, 100 } }, .nsge = 1, .rkey = B.mr->stag,
				 .remote_addr = B.mr->va + BIG - 50, .sink_stag = A.mr->stag,
				 .sink_to = A.mr->va };

	ck_assert_int_eq(uiw_qp_post_send(A.qp, &w), 0);
	struct uiw_wc sc = wait_one(&A.scq);

	ck_assert_int_eq(sc.status, UIW_WC_WR_FLUSH_ERR);
	ck_assert_uint_eq(uiw_qp_term_tx(B.qp)->layer, UIW_TERM_LAYER_RDMAP);
	ck_assert_uint_eq(uiw_qp_term_tx(B.qp)->etype, 1);
	ck_assert_uint_eq(uiw_qp_term_tx(B.qp)->code, 0x01);
	ck_assert_uint_eq(uiw_qp_term_rx(A.qp)->code, 0x01);
	ck_assert_uint_eq(uiw_qp_counters(B.qp)[UIW_RDMAP_C_tx_read_resp], 0);
}
END_TEST

/* A Send with no receive posted: Terminate DDP untagged 0x02; the sender's Send and the
 * receiver's later work flush. */
START_TEST(empty_rq_terminated)
{
	connect_qps(16, true, false);
	struct uiw_send_wr s = { .wr_id = 5, .op = UIW_WR_SEND, .signaled = true,
				 .sg = { { A.buf, 10 } }, .nsge = 1 };

	ck_assert_int_eq(uiw_qp_post_send(A.qp, &s), 0);
	ck_assert(pair_run_until(both_err, NULL, 5000));
	ck_assert_uint_eq(uiw_qp_term_tx(B.qp)->layer, UIW_TERM_LAYER_DDP);
	ck_assert_uint_eq(uiw_qp_term_tx(B.qp)->etype, 2);
	ck_assert_uint_eq(uiw_qp_term_tx(B.qp)->code, 0x02);
	ck_assert(A.err);
	ck_assert_uint_eq(uiw_qp_term_rx(A.qp)->code, 0x02);
	/* Posted in ERROR: taken, and completed flushed at once. */
	while (uiw_cq_poll(&A.scq, &(struct uiw_wc){ 0 }, 1) == 1)
		;
	s.wr_id = 4242;
	ck_assert_int_eq(uiw_qp_post_send(A.qp, &s), 0);
	struct uiw_wc fl;

	ck_assert_uint_eq(uiw_cq_poll(&A.scq, &fl, 1), 1);
	ck_assert_uint_eq(fl.wr_id, 4242);
	ck_assert_int_eq(fl.status, UIW_WC_WR_FLUSH_ERR);
	ck_assert(pair_run_until(both_closed, NULL, 5000));
}
END_TEST

/* Work posted while a Terminate waits for room to go out (TERMINATE) completes flushed at
 * once, and the Terminate still leaves whole afterwards. */
START_TEST(posted_while_terminating_flushes)
{
	struct uiw_config cfg;

	uiw_config_defaults(&cfg);
	cfg.tcp_max_conns = 16;
	cfg.tcp_time_wait_ms = 0;
	/* Eleven full FPDUs (1448 octets a segment) and ten octets: too little for the
	 * Terminate behind a 64 KiB Write, and nothing is polled meanwhile. */
	cfg.tcp_snd_buf = 11 * 1448 + 10;
	restart(&cfg);
	connect_qps(16, true, false);
	struct uiw_send_wr w = { .wr_id = 1, .op = UIW_WR_WRITE, .signaled = true,
				 .sg = { { A.buf, 65536 } }, .nsge = 1, .rkey = B.mr->stag,
				 .remote_addr = B.mr->va };
	struct uiw_send_wr s = { .wr_id = 77, .op = UIW_WR_SEND, .sg = { { A.buf, 8 } }, .nsge = 1 };
	struct uiw_wc wc;

	ck_assert_int_eq(uiw_qp_post_send(A.qp, &w), 0);
	uiw_qp_terminate(A.qp, UIW_TERM_LAYER_RDMAP, 0, 0xff, "by the test");
	ck_assert_int_eq(uiw_qp_state(A.qp), UIW_QPS_TERMINATE);
	ck_assert_uint_eq(uiw_cq_poll(&A.scq, &wc, 1), 1);   /* the Write, flushed */
	ck_assert_int_eq(wc.status, UIW_WC_WR_FLUSH_ERR);
	ck_assert_int_eq(uiw_qp_post_send(A.qp, &s), 0);
	ck_assert_uint_eq(uiw_cq_poll(&A.scq, &wc, 1), 1);
	ck_assert_uint_eq(wc.wr_id, 77);
	ck_assert_int_eq(wc.status, UIW_WC_WR_FLUSH_ERR);
	ck_assert(pair_run_until(both_err, NULL, 5000));
	ck_assert(uiw_qp_term_rx(B.qp)->valid);
	ck_assert_uint_eq(uiw_qp_term_rx(B.qp)->layer, UIW_TERM_LAYER_RDMAP);
	ck_assert_uint_eq(uiw_qp_term_rx(B.qp)->code, 0xff);
}
END_TEST

/* Solicited-only arming fires on a Send with SE, not on a plain Send. */
START_TEST(solicited_only_notification)
{
	connect_qps(16, true, false);
	for (unsigned k = 0; k < 2; k++) {
		struct uiw_recv_wr r = { .wr_id = k, .sg = { { B.buf, 64 } }, .nsge = 1 };

		ck_assert_int_eq(uiw_qp_post_recv(B.qp, &r), 0);
	}
	uiw_cq_arm(&B.rcq, true);
	struct uiw_send_wr s = { .wr_id = 1, .op = UIW_WR_SEND, .sg = { { A.buf, 4 } }, .nsge = 1 };

	ck_assert_int_eq(uiw_qp_post_send(A.qp, &s), 0);
	wait_one(&B.rcq);
	ck_assert_uint_eq(B.notified, 0);
	s.op = UIW_WR_SEND_SE;
	ck_assert_int_eq(uiw_qp_post_send(A.qp, &s), 0);
	wait_one(&B.rcq);
	ck_assert_uint_eq(B.notified, 1);
	ck_assert_uint_eq(uiw_ring_count(&A.scq.ring), 0);   /* unsignaled Sends complete nothing */
}
END_TEST

/* Through 5% loss both ways (and some reordering and duplication): Sends, Writes and Reads
 * of 64 KiB still arrive whole and in order (TCP repairs the stream under MPA). */
/* Queues of 3 whose counters start 4 short of 2^32: every completion and receive across the
 * wrap is the one posted, in order (a slot taken as counter % 3 would give 2^32 - 1 and 0
 * the same slot). _i: 0 the QP's own receive queue, 1 a shared receive queue. */
START_TEST(queues_of_three_across_the_wrap)
{
	const uint32_t start = UINT32_MAX - 3;
	static struct uiw_srq srq;
	bool shared = _i == 1;

	uiw_qp_destroy(B.qp);
	uiw_qp_destroy(A.qp);
	uiw_cq_fini(&B.rcq);
	uiw_cq_fini(&A.scq);
	ck_assert_int_eq(uiw_cq_init(&B.rcq, 3), 0);
	ck_assert_int_eq(uiw_cq_init(&A.scq, 3), 0);
	ck_assert_int_eq(uiw_srq_init(&srq, 3), 0);
	struct uiw_qp_attr a = { .qp_num = 1, .pd = 1, .sq_size = 3, .rq_size = 3, .send_cq = &A.scq,
				 .recv_cq = &A.rcq, .stags = &A.stags, .events = &events, .event_arg = &A };
	struct uiw_qp_attr b = { .qp_num = 2, .pd = 1, .sq_size = 3, .rq_size = shared ? 0 : 3,
				 .srq = shared ? &srq : NULL, .send_cq = &B.scq, .recv_cq = &B.rcq,
				 .stags = &B.stags, .events = &events, .event_arg = &B };

	ck_assert_int_eq(uiw_qp_create(&A.qp, &a), 0);
	ck_assert_int_eq(uiw_qp_create(&B.qp, &b), 0);
	uiw_ring_init_at(&B.rcq.ring, 3, start);
	uiw_ring_init_at(&A.scq.ring, 3, start);
	uiw_ring_init_at(&srq.ring, 3, start);
	uiw_ring_init_at(&B.qp->rq_ring, 3, start);
	struct uiw_sq *sq = uiw_qp_sq(A.qp);

	sq->comp = sq->tx = sq->tail = start;
	connect_qps(16, true, false);
	for (unsigned round = 0; round < 4; round++) {
		/* Three of each in flight at once: the rings full, then across the wrap. */
		for (unsigned k = 0; k < 3; k++) {
			unsigned i = round * 3 + k;
			struct uiw_recv_wr r = { .wr_id = 1000 + i, .sg = { { B.buf + i * 64, 64 } }, .nsge = 1 };

			ck_assert_int_eq(shared ? uiw_srq_post(&srq, &r) : uiw_qp_post_recv(B.qp, &r), 0);
		}
		struct uiw_recv_wr extra = { .wr_id = 1, .sg = { { B.buf, 1 } }, .nsge = 1 };

		ck_assert_int_eq(shared ? uiw_srq_post(&srq, &extra) : uiw_qp_post_recv(B.qp, &extra),
				 -ENOMEM);
		for (unsigned k = 0; k < 3; k++) {
			unsigned i = round * 3 + k;
			struct uiw_send_wr w = { .wr_id = i, .op = UIW_WR_SEND, .signaled = true,
						 .sg = { { A.buf + i * 64, 17 + i } }, .nsge = 1 };

			fill(A.buf + i * 64, 17 + i, (uint8_t)(i * 7));
			ck_assert_int_eq(uiw_qp_post_send(A.qp, &w), 0);
		}
		struct wait_wc rw = { .cq = &B.rcq, .want = 3 }, sw = { .cq = &A.scq, .want = 3 };

		ck_assert_msg(pair_run_until(wc_arrived, &rw, 5000), "receives (%s)", B.why);
		ck_assert_msg(pair_run_until(wc_arrived, &sw, 5000), "sends (%s)", A.why);
		for (unsigned k = 0; k < 3; k++) {
			unsigned i = round * 3 + k;

			ck_assert_int_eq(rw.wc[k].status, UIW_WC_SUCCESS);
			ck_assert_uint_eq(rw.wc[k].wr_id, 1000 + i);
			ck_assert_uint_eq(rw.wc[k].byte_len, 17 + i);
			ck_assert_mem_eq(B.buf + i * 64, A.buf + i * 64, 17 + i);
			ck_assert_int_eq(sw.wc[k].status, UIW_WC_SUCCESS);
			ck_assert_uint_eq(sw.wc[k].wr_id, i);
		}
	}
	ck_assert_uint_eq(B.rcq.ring.head, start + 12);
	ck_assert_uint_eq(B.rcq.overflow + A.scq.overflow, 0);
	uiw_qp_destroy(B.qp);
	B.qp = NULL;
	uiw_srq_fini(&srq);
}
END_TEST

START_TEST(operations_through_loss)
{
	struct uiw_config cfg;

	uiw_config_defaults(&cfg);
	cfg.tcp_max_conns = 16;
	cfg.tcp_time_wait_ms = 0;
	cfg.tcp_min_rto_ms = 5;
	cfg.tcp_init_rto_ms = 20;
	snprintf(cfg.fault_rx, sizeof(cfg.fault_rx), "drop=5,reorder=2,dup=1");
	snprintf(cfg.fault_tx, sizeof(cfg.fault_tx), "drop=5");
	cfg.fault_seed = 7;
	restart(&cfg);
	connect_qps(8, true, false);
	for (unsigned k = 0; k < 8; k++) {
		uint32_t n = 65536;
		struct uiw_recv_wr r = { .wr_id = k, .sg = { { B.buf + BIG / 2, n } }, .nsge = 1 };
		struct uiw_send_wr op = { .wr_id = k, .signaled = true, .nsge = 1, .rkey = B.mr->stag,
					  .sink_stag = A.mr->stag };

		fill(A.buf, n, (uint8_t)k);
		fill(B.buf + n, n, (uint8_t)(k + 100));
		op.op = k % 3 == 0 ? UIW_WR_SEND : k % 3 == 1 ? UIW_WR_WRITE : UIW_WR_READ;
		op.sg[0] = (struct uiw_sge){ op.op == UIW_WR_READ ? A.buf + n : A.buf, n };
		op.remote_addr = B.mr->va + (op.op == UIW_WR_READ ? n : 0);
		op.sink_to = A.mr->va + n;
		if (op.op == UIW_WR_SEND)
			ck_assert_int_eq(uiw_qp_post_recv(B.qp, &r), 0);
		ck_assert_int_eq(uiw_qp_post_send(A.qp, &op), 0);
		struct uiw_wc sc = wait_one(&A.scq);

		ck_assert_msg(sc.status == UIW_WC_SUCCESS, "op %u: %s / %s", k, A.why, B.why);
		if (op.op == UIW_WR_SEND) {
			ck_assert_int_eq(wait_one(&B.rcq).status, UIW_WC_SUCCESS);
			ck_assert_mem_eq(B.buf + BIG / 2, A.buf, n);
		} else if (op.op == UIW_WR_READ) {
			ck_assert_mem_eq(A.buf + n, B.buf + n, n);
		} else {
			struct uiw_send_wr probe = { .wr_id = 99, .op = UIW_WR_READ, .signaled = true,
						     .sg = { { A.buf + 3 * n, n } }, .nsge = 1,
						     .rkey = B.mr->stag, .remote_addr = B.mr->va,
						     .sink_stag = A.mr->stag, .sink_to = A.mr->va + 3 * n };

			/* A Read behind the Write sees it placed (RFC 5040 §5.5 ordering). */
			ck_assert_int_eq(uiw_qp_post_send(A.qp, &probe), 0);
			ck_assert_int_eq(wait_one(&A.scq).status, UIW_WC_SUCCESS);
			ck_assert_mem_eq(A.buf + 3 * n, A.buf, n);
		}
	}
	ck_assert_uint_gt(pair_a.st.fault.rx.dropped + pair_b.st.fault.rx.dropped, 0);
}
END_TEST

/* Quick retransmission, no TIME-WAIT, 4% loss and 2% reordering on receive, @p seed. */
static void lossy_config(struct uiw_config *cfg, unsigned seed)
{
	uiw_config_defaults(cfg);
	cfg->tcp_time_wait_ms = 0;
	cfg->tcp_min_rto_ms = 5;
	cfg->tcp_init_rto_ms = 20;
	snprintf(cfg->fault_rx, sizeof(cfg->fault_rx), "drop=4,reorder=2");
	cfg->fault_seed = seed;
}

/* @p rounds messages of @p n octets from A.buf, Writes and Sends in turn, message k
 * filled with k + 1 and bound for B.buf + k * n, each in two SGEs (so its FPDUs take
 * memory from both; @p lkeys: they name A's region). A.buf is rewritten as soon as each
 * completes (awaited with @p until, a wait_wc predicate), as an application may. */
static void rewrite_rounds(uint32_t rounds, uint32_t n, bool lkeys, bool (*until)(void *))
{
	for (uint32_t k = 0; k < rounds; k++) {
		bool send = k % 2 == 1;
		struct uiw_send_wr op = { .wr_id = k, .signaled = true, .nsge = 2, .lkeys = lkeys,
					  .op = send ? UIW_WR_SEND : UIW_WR_WRITE,
					  .sg = { { A.buf, n / 3, A.mr->stag },
						  { A.buf + n / 3, n - n / 3, A.mr->stag } },
					  .rkey = B.mr->stag, .remote_addr = B.mr->va + k * n };
		struct uiw_recv_wr r = { .wr_id = k, .sg = { { B.buf + k * n, n } }, .nsge = 1 };
		struct wait_wc w = { .cq = &A.scq, .want = 1 };

		fill(A.buf, n, (uint8_t)(k + 1));
		if (send)
			ck_assert_int_eq(uiw_qp_post_recv(B.qp, &r), 0);
		ck_assert_int_eq(uiw_qp_post_send(A.qp, &op), 0);
		ck_assert_msg(pair_run_until(until, &w, 10000), "round %u: no completion (%s / %s)",
			      k, A.why, B.why);
		ck_assert_msg(w.wc[0].status == UIW_WC_SUCCESS, "round %u: %s / %s", k, A.why, B.why);
		memset(A.buf, 0xee, n);   /* the application's again: rewritten at once */
		if (send)
			ck_assert_int_eq(wait_one(&B.rcq).status, UIW_WC_SUCCESS);
	}
}

/* Message k of @p rounds (of @p n octets, filled with k + 1) is at B.buf + k * n, each
 * checked once a Read behind the last Write has come back (RFC 5040 §5.5: it sees
 * everything before it placed). */
static void messages_as_posted(uint32_t rounds, uint32_t n)
{
	struct uiw_send_wr probe = { .wr_id = 99, .op = UIW_WR_READ, .signaled = true,
				     .sg = { { A.buf + BIG - 4096, 4096 } }, .nsge = 1,
				     .rkey = B.mr->stag, .remote_addr = B.mr->va,
				     .sink_stag = A.mr->stag, .sink_to = A.mr->va + BIG - 4096 };

	ck_assert_int_eq(uiw_qp_post_send(A.qp, &probe), 0);
	ck_assert_int_eq(wait_one(&A.scq).status, UIW_WC_SUCCESS);
	for (uint32_t k = 0; k < rounds; k++) {
		fill(A.buf, n, (uint8_t)(k + 1));
		ck_assert_msg(memcmp(B.buf + k * n, A.buf, n) == 0, "message %u changed", k);
	}
}

/*
 * Zero-copy transmit: a Send's or Write's memory goes out by reference, so its work request
 * may complete only once the stack no longer needs the octets (acknowledged, no frame
 * referring to them). Through loss both ways, each source buffer is overwritten right after
 * its completion and the next message goes from the same memory: every message the peer
 * received is the one posted (with the CRC on, a retransmission of rewritten memory would
 * also fail its CRC; with it off it would place the wrong octets).
 */
START_TEST(lent_buffer_rewritten_after_completion)
{
	const uint32_t n = 48 * 1024, rounds = 12;
	struct uiw_config cfg;

	lossy_config(&cfg, 11);
	snprintf(cfg.fault_tx, sizeof(cfg.fault_tx), "drop=4");
	cfg.tx_zero_copy = 2;   /* the test port copies: TCP copies from the memory as it sends */
	restart(&cfg);
	connect_qps(8, _i == 0, false);
	rewrite_rounds(rounds, n, false, wc_arrived);
	messages_as_posted(rounds, n);
	ck_assert(!A.err && !B.err);
	ck_assert_uint_ge(uiw_mpa_counters(pair_a.st.mpa)[UIW_MPA_C_tx_lent_octets],
			  (uint64_t)rounds * n * 9 / 10);
	/* Each FPDU of one piece is one mbuf that TCP gathers from the memory (the first
	 * message goes out during the initiator's hold, copied). */
	ck_assert_uint_ge(uiw_mpa_counters(pair_a.st.mpa)[UIW_MPA_C_tx_gathered],
			  (uint64_t)(rounds - 1) * n / 1500);
	ck_assert_uint_gt(uiw_qp_counters(A.qp)[UIW_RDMAP_C_tx_lent_wait], 0);
	ck_assert_uint_gt(pair_a.st.fault.tx.dropped + pair_b.st.fault.rx.dropped, 0);
}
END_TEST

/* B's buffer begins with the 4,096 octets at @p arg. */
static bool b_holds(void *arg)
{
	return memcmp(B.buf, arg, 4096) == 0;
}

/*
 * A connection's first message, which the initiator holds for mpa_initiator_delay_us after
 * the Reply (RFC 5044 §7.1.2), is copied even with lending forced: its work request
 * completes while the FPDUs are still held (the peer has nothing yet), not after the hold
 * and the ACK behind it, and the buffer rewritten at once still arrives as posted. Held
 * only toward a peer that is not known to be uiwarp (siw): here neither side announces
 * uiwarp's extensions.
 */
START_TEST(held_first_message_copied_not_lent)
{
	const uint32_t n = 4096;
	struct uiw_config cfg;
	uint8_t posted[4096];

	uiw_config_defaults(&cfg);
	cfg.tx_zero_copy = 2;
	restart(&cfg);
	no_extensions = true;
	connect_qps(8, true, false);

	struct uiw_send_wr op = { .wr_id = 7, .signaled = true, .nsge = 1, .op = UIW_WR_WRITE,
				  .sg = { { A.buf, n } }, .rkey = B.mr->stag, .remote_addr = B.mr->va };

	fill(A.buf, n, 9);
	memcpy(posted, A.buf, n);
	memset(B.buf, 0, n);
	ck_assert_int_eq(uiw_qp_post_send(A.qp, &op), 0);
	ck_assert_int_eq(wait_one(&A.scq).status, UIW_WC_SUCCESS);
	ck_assert_uint_gt(uiw_mpa_counters(pair_a.st.mpa)[UIW_MPA_C_fpdu_held], 0);
	ck_assert_msg(memcmp(B.buf, posted, n) != 0, "the Write arrived before its completion");
	ck_assert_uint_eq(uiw_mpa_counters(pair_a.st.mpa)[UIW_MPA_C_tx_lent_octets], 0);
	memset(A.buf, 0xee, n);
	ck_assert(pair_run_until(b_holds, posted, 3000));
	ck_assert(!A.err && !B.err);
}
END_TEST

/* A stand-in for a region's IOMMU mapping (uiw_dma.h): its count, and whether its last
 * holder let go. */
static struct rte_mbuf_ext_shared_info fake_dma;
static unsigned fake_dma_freed;
static uint16_t fake_dma_max;

static void fake_dma_free(void *addr, void *opaque)
{
	(void)addr;
	(void)opaque;
	fake_dma_freed++;
}

static bool wc_or_watch(void *arg)
{
	uint16_t n;

	/* A's pass hands frames to the pair's queue; B takes them in its own: look between. */
	uiw_stack_poll(&pair_a.st, uiw_now_ns());
	n = rte_mbuf_ext_refcnt_read(&fake_dma);

	if (n > fake_dma_max)
		fake_dma_max = n;
	return wc_arrived(arg);
}

/*
 * A port whose NIC reads frames by DMA (port.tx_dma, as a PCI NIC under vfio): memory is
 * lent only from a region with a DMA mapping (_i = 0: A's region has one; _i = 1: none,
 * so every octet is copied), and the frames handed to the port hold that mapping's count,
 * not the work request's. Through loss both ways, each buffer rewritten right after its
 * completion, every message arrives as posted; the work requests give back what they
 * held, and once the frames are gone the mapping is counted by the region alone (never
 * dropped to nothing on the way). The ring pair's receiver holds the
 * frames it is handed until it has taken them in, as a NIC's ring holds them until sent.
 */
START_TEST(dma_port_frames_hold_the_mapping)
{
	const uint32_t n = 48 * 1024, rounds = 12;
	struct uiw_config cfg;

	/* Loss on receive only: a transmit wrapper would hold copies, not the frames. */
	lossy_config(&cfg, 5);
	restart(&cfg);
	pair_a.st.port.tx_dma = true;
	pair_a.st.port.tx_offloads |= RTE_ETH_TX_OFFLOAD_MULTI_SEGS;   /* frames by reference */
	uiw_mpa_set_lend(pair_a.st.mpa, true, true);
	fake_dma = (struct rte_mbuf_ext_shared_info){ .free_cb = fake_dma_free };
	rte_mbuf_ext_refcnt_set(&fake_dma, 1);
	fake_dma_freed = 0;
	fake_dma_max = 0;
	A.mr->dma = _i == 0 ? &fake_dma : NULL;
	connect_qps(8, true, false);
	rewrite_rounds(rounds, n, true, wc_or_watch);
	messages_as_posted(rounds, n);
	ck_assert(!A.err && !B.err);
	ck_assert_uint_gt(pair_a.st.fault.rx.dropped, 0);
	ck_assert_uint_gt(pair_b.st.fault.rx.dropped, 0);
	if (_i == 1) {
		ck_assert_uint_eq(uiw_mpa_counters(pair_a.st.mpa)[UIW_MPA_C_tx_lent_octets], 0);
		return;
	}
	ck_assert_uint_ge(uiw_mpa_counters(pair_a.st.mpa)[UIW_MPA_C_tx_lent_octets],
			  (uint64_t)rounds * n * 9 / 10);
	/* The NIC reads the memory itself: nothing gathered by copying. */
	ck_assert_uint_eq(uiw_mpa_counters(pair_a.st.mpa)[UIW_MPA_C_tx_gathered], 0);
	/* Frames and work requests held the mapping while they went; now only the region. */
	ck_assert_uint_gt(fake_dma_max, 2);
	ck_assert_uint_eq(rte_mbuf_ext_refcnt_read(&fake_dma), 1);
	ck_assert_uint_eq(fake_dma_freed, 0);
	A.mr->dma = NULL;
}
END_TEST

static bool lent_some(void *arg)
{
	(void)arg;
	return uiw_mpa_counters(pair_a.st.mpa)[UIW_MPA_C_tx_lent_octets] > 32 * 1024 || A.err;
}

/*
 * Memory lent to the connection comes back when the QP is destroyed (_i = 0) or goes to
 * error with its connection still sending (_i = 1, a local Terminate): the buffer is freed
 * right then, and the connection goes on (reset, or the Terminate after the queued octets)
 * without touching it (ASan in the sanitizer build; the leak check would catch a send queue
 * kept for references left behind).
 */
START_TEST(lent_memory_back_on_destroy_and_error)
{
	struct uiw_config cfg;

	uiw_config_defaults(&cfg);
	cfg.tcp_time_wait_ms = 0;
	cfg.tx_zero_copy = 2;
	cfg.tcp_snd_buf = 64 * 1024;   /* the Write is still under way, partly queued */
	restart(&cfg);
	connect_qps(8, true, false);

	struct uiw_send_wr op = { .wr_id = 1, .signaled = true, .nsge = 1, .op = UIW_WR_WRITE,
				  .sg = { { A.buf, BIG } }, .rkey = B.mr->stag, .remote_addr = B.mr->va };

	fill(A.buf, BIG, 3);
	ck_assert_int_eq(uiw_qp_post_send(A.qp, &op), 0);
	ck_assert(pair_run_until(lent_some, NULL, 3000));
	if (_i == 0) {
		uiw_qp_destroy(A.qp);
		A.qp = NULL;
	} else {
		uiw_qp_terminate(A.qp, UIW_TERM_LAYER_RDMAP, 0, 0xff, "test: local error");
		ck_assert_int_eq(wait_one(&A.scq).wr_id, 1);   /* flushed, or all sent */
	}
	free(A.buf);
	A.buf = NULL;
	pair_run_for(50);
	ck_assert(B.err || B.closed);
}
END_TEST

static unsigned overflowed_calls;

static void on_overflowed(void *arg, struct uiw_cq *cq)
{
	(void)arg;
	(void)cq;
	overflowed_calls++;
}

/* A send CQ of 2 and 5 signalled Sends, never polled: the third completion finds it full.
 * The CQ says so once, the QP goes to error (a completion was lost: it cannot go on as if
 * delivered) with a Terminate the peer sees, and the CQ stays in error: after a poll makes
 * room, no later completion is taken as if nothing had happened. */
START_TEST(cq_overflow_errors_the_qp)
{
	struct uiw_wc wc[4];

	uiw_cq_fini(&A.scq);
	ck_assert_int_eq(uiw_cq_init(&A.scq, 2), 0);
	A.scq.overflowed = on_overflowed;
	overflowed_calls = 0;
	connect_qps(16, true, false);
	for (unsigned k = 0; k < 5; k++) {
		struct uiw_recv_wr r = { .wr_id = k, .sg = { { B.buf + k * 64, 64 } }, .nsge = 1 };
		struct uiw_send_wr snd = { .wr_id = k, .op = UIW_WR_SEND, .signaled = true,
					   .sg = { { A.buf, 8 } }, .nsge = 1 };

		ck_assert_int_eq(uiw_qp_post_recv(B.qp, &r), 0);
		ck_assert_int_eq(uiw_qp_post_send(A.qp, &snd), 0);
	}
	ck_assert(pair_run_until(both_err, NULL, 3000));
	ck_assert_uint_eq(overflowed_calls, 1);
	ck_assert_int_eq(uiw_qp_state(A.qp), UIW_QPS_ERROR);
	ck_assert_uint_ge(uiw_qp_counters(A.qp)[UIW_RDMAP_C_cq_overflow], 1);
	ck_assert_ptr_nonnull(strstr(uiw_qp_why(A.qp), "completion queue overflow"));
	ck_assert(uiw_qp_term_rx(B.qp)->valid);
	ck_assert_uint_eq(uiw_cq_poll(&A.scq, wc, 4), 2);
	ck_assert_int_eq(wc[0].status, UIW_WC_SUCCESS);
	ck_assert_uint_eq(wc[0].wr_id, 0);
	ck_assert_uint_eq(wc[1].wr_id, 1);
	struct uiw_send_wr late = { .wr_id = 9, .op = UIW_WR_SEND, .signaled = true,
				    .sg = { { A.buf, 8 } }, .nsge = 1 };

	ck_assert_int_eq(uiw_qp_post_send(A.qp, &late), 0);
	ck_assert_uint_eq(uiw_cq_poll(&A.scq, wc, 4), 0);
	ck_assert_uint_eq(overflowed_calls, 1);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("rdmap");
	TCase *tc = tcase_with_leak_check("rdmap", setup, teardown);

	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, send_every_size, 0, 4);
	tcase_add_loop_test(tc, write_every_size, 0, 2);
	tcase_add_test(tc, read_every_size);
	tcase_add_test(tc, reads_beyond_ord_complete_in_order);
	tcase_add_loop_test(tc, send_with_invalidate_then_write_terminated, 0, 2);
	tcase_add_test(tc, empty_rq_terminated);
	tcase_add_test(tc, read_out_of_bounds_terminated);
	tcase_add_test(tc, solicited_only_notification);
	tcase_add_test(tc, operations_through_loss);
	tcase_add_loop_test(tc, lent_buffer_rewritten_after_completion, 0, 2);
	tcase_add_test(tc, held_first_message_copied_not_lent);
	tcase_add_loop_test(tc, dma_port_frames_hold_the_mapping, 0, 2);
	tcase_add_loop_test(tc, lent_memory_back_on_destroy_and_error, 0, 2);
	tcase_add_loop_test(tc, queues_of_three_across_the_wrap, 0, 2);
	tcase_add_test(tc, posted_while_terminating_flushes);
	tcase_add_test(tc, cq_overflow_errors_the_qp);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
