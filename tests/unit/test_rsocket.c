/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rsockets (rdma/rsocket.h) between two stack instances in one process, non-blocking and
 * driven by this one thread: a stream each way across the halves of the receive buffer, a
 * half close, the addresses and TCP_INFO; and hand-made peers on the verbs calls that break
 * the protocol (a request with connection data of another version, data announced beyond
 * the receive buffer), which must get a refusal or EPROTO and nothing read outside it.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#include <rdma/rsocket.h>

#include "check_common.h"
#include "pair_fixture.h"
#include "rsocket_wire.h"
#include "uiw_verbs.h"
#include "verbs_fixture.h"

#define PORT 7471
#define TRIES 2000000

static struct sockaddr_in srv_addr;

static void setup(void)
{
	pair_setup();
	ck_assert_int_eq(uiw_verbs_add_device(&pair_a.st), 0);
	ck_assert_int_eq(uiw_verbs_add_device(&pair_b.st), 0);
	srv_addr = (struct sockaddr_in){ .sin_family = AF_INET, .sin_port = htons(PORT),
					 .sin_addr.s_addr = htonl(PAIR_IP_B) };
}

static void teardown(void)
{
	uiw_verbs_remove_devices();
	pair_teardown();
}

static int nb_socket(void)
{
	int fd = rsocket(AF_INET, SOCK_STREAM, 0);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(rfcntl(fd, F_SETFL, O_NONBLOCK), 0);
	ck_assert_int_eq(rfcntl(fd, F_GETFL) & O_NONBLOCK, O_NONBLOCK);
	return fd;
}

static int listener(void)
{
	int l = nb_socket();

	ck_assert_int_eq(rbind(l, (struct sockaddr *)&srv_addr, sizeof(srv_addr)), 0);
	ck_assert_int_eq(rlisten(l, 4), 0);
	return l;
}

/* A connected pair: the client on A, the server's end accepted from @p l on B. */
static void connect_pair(int l, int *s, int *c)
{
	int err = -1;
	socklen_t len = sizeof(err);
	bool up = false;

	*c = nb_socket();
	ck_assert_int_eq(rconnect(*c, (struct sockaddr *)&srv_addr, sizeof(srv_addr)), -1);
	ck_assert_int_eq(errno, EINPROGRESS);
	*s = -1;
	for (int i = 0; i < TRIES && (*s < 0 || !up); i++) {
		struct pollfd p = { .fd = *c, .events = POLLOUT };

		if (*s < 0) {
			*s = raccept(l, NULL, NULL);
			ck_assert(*s >= 0 || errno == EAGAIN);
		}
		if (!up && rpoll(&p, 1, 0) == 1) {
			ck_assert_int_eq(p.revents & (POLLERR | POLLHUP), 0);
			up = (p.revents & POLLOUT) != 0;
		}
	}
	ck_assert_int_ge(*s, 0);
	ck_assert(up);
	/* As with sockets, an accepted rsocket does not inherit O_NONBLOCK. */
	ck_assert_int_eq(rfcntl(*s, F_GETFL) & O_NONBLOCK, 0);
	ck_assert_int_eq(rfcntl(*s, F_SETFL, O_NONBLOCK), 0);
	ck_assert_int_eq(rgetsockopt(*c, SOL_SOCKET, SO_ERROR, &err, &len), 0);
	ck_assert_int_eq(err, 0);
}

static void fill(uint8_t *b, size_t n, uint32_t seed)
{
	for (size_t i = 0; i < n; i++)
		b[i] = (uint8_t)((i * 131u + seed) >> 3);
}

/* Moves @p n bytes from @p from to @p to, both non-blocking, in one loop. */
static void transfer(int from, int to, size_t n, uint32_t seed)
{
	uint8_t *out = malloc(n), *in = calloc(1, n);
	size_t sent = 0, got = 0;

	fill(out, n, seed);
	for (int i = 0; i < TRIES && got < n; i++) {
		if (sent < n) {
			ssize_t k = rsend(from, out + sent, n - sent > 40000 ? 40000 : n - sent, 0);

			ck_assert(k > 0 || errno == EAGAIN);
			sent += k > 0 ? (size_t)k : 0;
		}
		ssize_t k = rrecv(to, in + got, n - got, 0);

		ck_assert_msg(k > 0 || errno == EAGAIN, "rrecv %zd errno %d", k, errno);
		got += k > 0 ? (size_t)k : 0;
	}
	ck_assert_uint_eq(got, n);
	ck_assert_mem_eq(in, out, n);
	free(out);
	free(in);
}

START_TEST(stream_both_ways_then_half_close)
{
	int l = listener(), s, c;
	struct sockaddr_in a;
	socklen_t len = sizeof(a);
	struct tcp_info ti;
	uint8_t b[16];
	ssize_t k = -1;

	connect_pair(l, &s, &c);
	/* 37 octets first (iperf3's cookie), so that no Write ends where a buffer wraps; then
	 * 1 MiB each way: many laps of the receive buffers, every Write size. */
	transfer(c, s, 37, 9);
	transfer(c, s, 1u << 20, 1);
	transfer(s, c, (1u << 20) + 12345, 7);
	ck_assert_int_eq(rgetsockname(c, (struct sockaddr *)&a, &len), 0);
	ck_assert_uint_eq(ntohl(a.sin_addr.s_addr), PAIR_IP_A);
	ck_assert_uint_ne(ntohs(a.sin_port), 0);
	ck_assert_int_eq(rgetpeername(c, (struct sockaddr *)&a, &len), 0);
	ck_assert_uint_eq(ntohs(a.sin_port), PORT);
	len = sizeof(ti);
	ck_assert_int_eq(rgetsockopt(c, IPPROTO_TCP, TCP_INFO, &ti, &len), 0);
	ck_assert_uint_eq(ti.tcpi_state, 1);   /* TCP_ESTABLISHED */
	ck_assert_uint_gt(ti.tcpi_snd_mss, 0);

	/* The client stops sending: the server reads its last bytes, then the end. */
	ck_assert_int_eq(rsend(c, "last", 4, 0), 4);
	ck_assert_int_eq(rshutdown(c, SHUT_WR), 0);
	ck_assert_int_eq(rsend(c, "more", 4, 0), -1);
	ck_assert_int_eq(errno, EPIPE);
	size_t got = 0;

	for (int i = 0; i < TRIES; i++) {
		k = rrecv(s, b + got, sizeof(b) - got, 0);
		if (k == 0 || (k < 0 && errno != EAGAIN))
			break;
		got += k > 0 ? (size_t)k : 0;
	}
	ck_assert_int_eq(k, 0);
	ck_assert_uint_eq(got, 4);
	ck_assert_mem_eq(b, "last", 4);
	/* The other way still works after the half close. */
	transfer(s, c, 5000, 3);
	ck_assert_int_eq(rclose(s), 0);
	ck_assert_int_eq(rclose(c), 0);
	ck_assert_int_eq(rclose(l), 0);
	ck_assert_int_eq(rclose(l), -1);
	ck_assert_int_eq(errno, EBADF);
}
END_TEST

/* A peer on the verbs calls, with a QP, buffers for the server's credit updates and a
 * connection data of its own making. */
struct evil {
	struct verbs_ep e;
	uint8_t target[32], msgs[16 * 4], rbuf[4096];
	struct ibv_mr *tmr, *mmr, *rmr;
	struct uiw_rs_sge srv_buf;   /* the server's first receive buffer */
	enum rdma_cm_event_type outcome;   /* of its connect: ESTABLISHED or REJECTED */
};

static void evil_connect(struct evil *v, int l, uint8_t version, int *s)
{
	struct ibv_qp_init_attr qa = { .qp_type = IBV_QPT_RC,
				       .cap = { .max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 1,
						.max_recv_sge = 1, .max_inline_data = 64 } };
	struct uiw_rs_conn_data cd = { .version = version, .credits = uiw_be16_of(16) };
	struct rdma_conn_param cp = { .private_data = &cd, .private_data_len = sizeof(cd),
				      .initiator_depth = 1 };

	v->e.ch = rdma_create_event_channel();
	ck_assert_int_eq(rdma_create_id(v->e.ch, &v->e.id, v, RDMA_PS_TCP), 0);
	ck_assert_int_eq(rdma_resolve_addr(v->e.id, NULL, (struct sockaddr *)&srv_addr, 2000), 0);
	rdma_ack_cm_event(verbs_expect_event(v->e.ch, RDMA_CM_EVENT_ADDR_RESOLVED));
	ck_assert_int_eq(rdma_resolve_route(v->e.id, 2000), 0);
	rdma_ack_cm_event(verbs_expect_event(v->e.ch, RDMA_CM_EVENT_ROUTE_RESOLVED));
	v->e.pd = ibv_alloc_pd(v->e.id->verbs);
	v->e.cq = ibv_create_cq(v->e.id->verbs, 64, NULL, NULL, 0);
	qa.send_cq = qa.recv_cq = v->e.cq;
	ck_assert_int_eq(rdma_create_qp(v->e.id, v->e.pd, &qa), 0);
	int rw = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;

	v->tmr = ibv_reg_mr(v->e.pd, v->target, sizeof(v->target), rw);
	v->mmr = ibv_reg_mr(v->e.pd, v->msgs, sizeof(v->msgs), rw);
	v->rmr = ibv_reg_mr(v->e.pd, v->rbuf, sizeof(v->rbuf), rw);
	for (unsigned i = 0; i < 16; i++) {
		struct ibv_sge sge = { (uintptr_t)v->msgs + 4 * i, 4, v->mmr->lkey };
		struct ibv_recv_wr wr = { .wr_id = i, .sg_list = &sge, .num_sge = 1 }, *bad;

		ck_assert_int_eq(ibv_post_recv(v->e.id->qp, &wr, &bad), 0);
	}
	cd.target_sgl = (struct uiw_rs_sge_net){ uiw_be64_of((uintptr_t)v->target),
						 uiw_be32_of(v->tmr->rkey), uiw_be32_of(2) };
	cd.data_buf = (struct uiw_rs_sge_net){ uiw_be64_of((uintptr_t)v->rbuf),
					       uiw_be32_of(v->rmr->rkey), uiw_be32_of(2048) };
	/* This thread runs the listener too: it must not block on the peer's events. */
	fcntl(v->e.ch->fd, F_SETFL, O_NONBLOCK);
	ck_assert_int_eq(rdma_connect(v->e.id, &cp), 0);
	*s = -1;
	struct rdma_cm_event *ev = NULL;

	for (int i = 0; i < TRIES && ev == NULL; i++) {
		if (*s < 0) {
			*s = raccept(l, NULL, NULL);
			ck_assert(*s >= 0 || errno == EAGAIN);
		}
		uiw_verbs_progress();
		if (rdma_get_cm_event(v->e.ch, &ev) != 0)
			ev = NULL;
	}
	ck_assert_ptr_nonnull(ev);
	if (ev->event == RDMA_CM_EVENT_ESTABLISHED) {
		struct uiw_rs_conn_data r;

		ck_assert_uint_ge(ev->param.conn.private_data_len, sizeof(r));
		memcpy(&r, ev->param.conn.private_data, sizeof(r));
		ck_assert_uint_eq(r.version, UIW_RS_VERSION);
		v->srv_buf.addr = uiw_be64_get(r.data_buf.addr);
		v->srv_buf.key = uiw_be32_get(r.data_buf.key);
		v->srv_buf.length = uiw_be32_get(r.data_buf.length);
	}
	v->outcome = ev->event;
	rdma_ack_cm_event(ev);
}

static void evil_fini(struct evil *v)
{
	ibv_dereg_mr(v->tmr);
	ibv_dereg_mr(v->mmr);
	ibv_dereg_mr(v->rmr);
	verbs_ep_fini(&v->e);
}

START_TEST(a_request_of_another_version_is_rejected)
{
	int l = listener(), s;
	struct evil *v = calloc(1, sizeof(*v));

	evil_connect(v, l, 2, &s);
	ck_assert_int_eq(v->outcome, RDMA_CM_EVENT_REJECTED);
	ck_assert_int_eq(s, -1);   /* nothing accepted */
	ck_assert_int_eq(raccept(l, NULL, NULL), -1);
	ck_assert_int_eq(errno, EAGAIN);
	evil_fini(v);
	free(v);
	/* The listener still serves an rsocket. */
	int c;

	connect_pair(l, &s, &c);
	transfer(c, s, 3000, 5);
	rclose(c);
	rclose(s);
	rclose(l);
}
END_TEST

/* rrecv() on a non-blocking rsocket until it answers other than EAGAIN. */
static ssize_t recv_settled(int s, void *buf, size_t len)
{
	ssize_t k = -1;

	for (int i = 0; i < TRIES; i++) {
		k = rrecv(s, buf, len, 0);
		if (k >= 0 || errno != EAGAIN)
			break;
	}
	return k;
}

START_TEST(data_announced_beyond_the_buffer_ends_the_connection)
{
	int l = listener(), s;
	struct evil *v = calloc(1, sizeof(*v));
	struct ibv_send_wr *bad;
	uint8_t junk[100], out[256];
	uint32_t msg = UIW_RS_MSG(UIW_RS_OP_DATA, 0x1fffffffu);

	evil_connect(v, l, UIW_RS_VERSION, &s);
	ck_assert_int_eq(v->outcome, RDMA_CM_EVENT_ESTABLISHED);
	ck_assert_uint_gt(v->srv_buf.length, sizeof(junk));
	memset(junk, 0x5a, sizeof(junk));
	/* 100 bytes written where the server said, then a message claiming 512 MiB. */
	struct ibv_sge ws = { (uintptr_t)junk, sizeof(junk), 0 }, ms = { (uintptr_t)&msg, 4, 0 };
	struct ibv_send_wr send = { .wr_id = 2, .sg_list = &ms, .num_sge = 1, .opcode = IBV_WR_SEND,
				    .send_flags = IBV_SEND_INLINE };
	struct ibv_send_wr write = { .wr_id = 1, .next = &send, .sg_list = &ws, .num_sge = 1,
				     .opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_INLINE };

	write.wr.rdma.remote_addr = v->srv_buf.addr;
	write.wr.rdma.rkey = v->srv_buf.key;
	ck_assert_int_eq(ibv_post_send(v->e.id->qp, &write, &bad), 0);
	ssize_t k = recv_settled(s, out, sizeof(out));
	ck_assert_int_eq(k, -1);
	ck_assert_int_eq(errno, EPROTO);
	struct pollfd p = { .fd = s, .events = POLLIN | POLLOUT };

	ck_assert_int_eq(rpoll(&p, 1, 0), 1);
	ck_assert_int_ne(p.revents & POLLERR, 0);
	ck_assert_int_eq(p.revents & POLLOUT, 0);
	ck_assert_int_eq(rsend(s, "x", 1, 0), -1);
	rclose(s);
	rclose(l);
	evil_fini(v);
	free(v);
}
END_TEST

/* The peer may write into the receive buffer it was given, and nowhere past it (the
 * message slots that follow it in memory are the server's own). */
START_TEST(a_write_past_the_receive_buffer_is_refused)
{
	int l = listener(), s;
	struct evil *v = calloc(1, sizeof(*v));
	struct ibv_send_wr *bad;
	uint8_t junk[8], out[16];
	struct ibv_wc wc;

	evil_connect(v, l, UIW_RS_VERSION, &s);
	ck_assert_int_eq(v->outcome, RDMA_CM_EVENT_ESTABLISHED);
	memset(junk, 0xee, sizeof(junk));
	struct ibv_sge ws = { (uintptr_t)junk, sizeof(junk), 0 };
	struct ibv_send_wr write = { .wr_id = 1, .sg_list = &ws, .num_sge = 1,
				     .opcode = IBV_WR_RDMA_WRITE,
				     .send_flags = IBV_SEND_INLINE | IBV_SEND_SIGNALED };

	/* The buffer is two halves of that length: the first octet past it. */
	write.wr.rdma.remote_addr = v->srv_buf.addr + 2 * (uint64_t)v->srv_buf.length;
	write.wr.rdma.rkey = v->srv_buf.key;
	ck_assert_int_eq(ibv_post_send(v->e.id->qp, &write, &bad), 0);
	ssize_t k = recv_settled(s, out, sizeof(out));
	/* The server's QP Terminates the Write: its rsocket ends, having read nothing. */
	ck_assert_msg(k == 0 || (k < 0 && errno != EAGAIN), "rrecv %zd errno %d", k, errno);
	for (int i = 0; i < TRIES && ibv_poll_cq(v->e.cq, 1, &wc) == 0; i++)
		uiw_verbs_progress();
	rclose(s);
	rclose(l);
	evil_fini(v);
	free(v);
}
END_TEST

START_TEST(what_is_not_provided_is_refused)
{
	ck_assert_int_eq(rsocket(AF_INET, SOCK_DGRAM, 0), -1);
	ck_assert_int_eq(errno, ENOTSUP);
	ck_assert_int_eq(rsocket(AF_INET6, SOCK_STREAM, 0), -1);
	ck_assert_int_eq(errno, EAFNOSUPPORT);
	/* Linux's flags in the type are taken (Python sets SOCK_CLOEXEC on every socket). */
	int fd = rsocket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0), z = 8, v = -1;
	socklen_t len = sizeof(v);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(rfcntl(fd, F_GETFL) & O_NONBLOCK, O_NONBLOCK);
	ck_assert_int_eq(rgetsockopt(fd, SOL_SOCKET, SO_DOMAIN, &v, &len), 0);
	ck_assert_int_eq(v, AF_INET);
	ck_assert_int_eq(rgetsockopt(fd, SOL_SOCKET, SO_TYPE, &v, &len), 0);
	ck_assert_int_eq(v, SOCK_STREAM);

	ck_assert_int_eq(rsetsockopt(fd, SOL_RDMA, RDMA_IOMAPSIZE, &z, sizeof(z)), -1);
	ck_assert_int_eq(errno, ENOTSUP);
	ck_assert_int_eq(riomap(fd, &z, sizeof(z), PROT_WRITE, 0, -1), -1);
	ck_assert_int_eq(errno, ENOSYS);
	ck_assert_int_eq(rrecv(fd, &z, sizeof(z), 0), -1);
	ck_assert_int_eq(errno, ENOTCONN);
	ck_assert_int_eq(rclose(fd), 0);
	ck_assert_int_eq(rsend(fd, "x", 1, 0), -1);
	ck_assert_int_eq(errno, EBADF);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("rsocket");
	TCase *tc = tcase_with_leak_check("rsocket", setup, teardown);

	tcase_add_test(tc, stream_both_ways_then_half_close);
	tcase_add_test(tc, a_request_of_another_version_is_rejected);
	tcase_add_test(tc, data_announced_beyond_the_buffer_ends_the_connection);
	tcase_add_test(tc, a_write_past_the_receive_buffer_is_refused);
	tcase_add_test(tc, what_is_not_provided_is_refused);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
