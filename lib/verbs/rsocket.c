/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rsockets (rdma/rsocket.h): stream sockets over an RC QP, on the wire as rdma-core's
 * librdmacm speaks them over iWARP (wire/rsocket_wire.h). Data is RDMA-Written into the
 * peer's receive buffer, whose halves the peer hands out by writing a descriptor into this
 * side's target list; every 32-bit message (data arrived, credits, control) is a 4-octet
 * Send. Built on this library's verbs and rdma_cm calls only, so librspreload.so and rstream
 * run unmodified over it.
 *
 * Each rsocket's number is the fd of its rdma_cm event channel. A call holds the rsocket's
 * lock and gives it back while it sleeps (poll() on the event channel and the completion
 * channel; the progress thread runs the stack meanwhile).
 *
 * Not provided: datagram rsockets (UD QPs: iWARP has none), iomapped buffers (riomap(),
 * riowrite()), IPv6 (the stack is IPv4). Each is refused with a log line saying so.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#include <rdma/rsocket.h>

#include "rsocket_wire.h"
#include "uiw_log.h"
#include "uiw_time.h"
#include "verbs_internal.h"

#define RS_DEF_QP 384            /* send and receive queue depth (rdma-core's) */
#define RS_DEF_INLINE 64
#define RS_DEF_MEM (1u << 19)    /* send and receive buffer (rdma-core's: 128 KiB) */
#define RS_MEM_MIN 4096u
#define RS_MEM_MAX (1u << 26)
#define RS_SNDLOWAT 2048u        /* no send with less than this free in the send buffer */
#define RS_XFER_START 2048u      /* the first Write of a send; doubled up to RS_XFER_MAX */
#define RS_XFER_MAX 65536u
#define RS_QP_MIN 16
#define RS_QP_MAX 0xfffe
#define RS_CTRL_SLOTS 4          /* send queue entries kept for control messages */
#define RS_RQ_SPARE 8            /* receives posted beyond the credits: control messages */
#define RS_SGL_MAX 64            /* the most target list entries a peer may announce */
#define RS_CLOSE_MS 5000         /* shutdown waits this long for its sends at most */
#define RS_CM_MS 2000            /* address resolution */
#define RS_SPIN_NS 20000u        /* a blocking call polls this long before it sleeps */

#define WR_RECV (1ull << 63)
#define WR_MSG_SEND (1ull << 62) /* the Send that follows a Write with its message */

enum rs_phase {
	P_INIT, P_BOUND, P_LISTEN,
	P_ADDR, P_ROUTE, P_CONNECT, P_ACCEPT,   /* opening */
	P_OPEN,                                 /* connected: rd and wr say what is left */
	P_DOWN,                                 /* ended in order (DISCONNECT, or the CM's) */
	P_ERR,                                  /* ended by an error after it was open */
	P_CONNERR                               /* the connection was never made */
};

struct rs {
	int fd;                      /* the rsocket's number: its event channel's fd */
	pthread_mutex_t lock;
	enum rs_phase phase;
	int err;                     /* SO_ERROR */
	int fd_flags;                /* O_NONBLOCK */
	bool rd, wr;                 /* P_OPEN: reading and writing still allowed */
	bool wr_shut;                /* writing ended by this side (EPIPE, not ECONNRESET) */
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id;
	struct ibv_pd *pd;
	struct ibv_comp_channel *cch;
	struct ibv_cq *cq;
	uint32_t sq_size, rq_size, rq_slots, sq_inline, sbuf_size, rbuf_size;
	uint64_t so_opts, tcp_opts;

	/* Sending: the copy ring, the queue's room, credits, the peer's receive buffers. */
	uint8_t *sbuf;
	struct ibv_mr *smr;
	uint32_t sbuf_pos, sbuf_avail;
	int sqe_avail;
	unsigned ctrl_seqno, ctrl_max_seqno;
	uint16_t sseq_no, sseq_comp;
	volatile struct uiw_rs_sge *target;   /* written by the peer */
	struct ibv_mr *target_mr;
	int target_sge;
	struct uiw_rs_sge remote_sgl;         /* the peer's target list */
	uint32_t remote_sge;
	bool swap;                            /* the peer's byte order differs */

	/* Receiving: the buffer the peer writes into, then one message slot per receive. */
	uint8_t *rbuf;
	struct ibv_mr *rmr;                   /* the buffer: the peer writes into it */
	struct ibv_mr *mmr;                   /* the message slots after it: local only */
	uint32_t rbuf_offset, rbuf_free_offset;
	int64_t rbuf_avail;
	uint16_t rseq_no, rseq_comp;
	uint32_t *rmsg;                       /* lengths of data not yet read, a ring */
	uint32_t rmsg_head, rmsg_tail, rmsg_cap;
	uint64_t rbytes;                      /* bytes announced and not yet read */
};

static pthread_mutex_t tab_lock = PTHREAD_MUTEX_INITIALIZER;
static struct rs **tab;
static int tab_len;

static int fail(int err)
{
	errno = err;
	return -1;
}

static struct rs *rs_get(int fd)
{
	struct rs *rs = NULL;

	pthread_mutex_lock(&tab_lock);
	if (fd >= 0 && fd < tab_len)
		rs = tab[fd];
	pthread_mutex_unlock(&tab_lock);
	if (rs == NULL)
		errno = EBADF;
	return rs;
}

static void rs_status(FILE *f);

static int rs_insert(struct rs *rs)
{
	int fd = rs->fd;

	__atomic_store_n(&uiw_verbs_status_more, rs_status, __ATOMIC_RELEASE);
	pthread_mutex_lock(&tab_lock);
	if (fd >= tab_len) {
		int n = fd + 64;
		struct rs **t = realloc(tab, sizeof(*t) * (size_t)n);

		if (t == NULL) {
			pthread_mutex_unlock(&tab_lock);
			return fail(ENOMEM);
		}
		memset(t + tab_len, 0, sizeof(*t) * (size_t)(n - tab_len));
		tab = t;
		tab_len = n;
	}
	tab[fd] = rs;
	pthread_mutex_unlock(&tab_lock);
	return 0;
}

static void rs_remove(struct rs *rs)
{
	pthread_mutex_lock(&tab_lock);
	if (rs->fd >= 0 && rs->fd < tab_len && tab[rs->fd] == rs)
		tab[rs->fd] = NULL;
	pthread_mutex_unlock(&tab_lock);
}

static bool host_is_be(void)
{
	const uint16_t one = 1;

	return *(const uint8_t *)&one == 0;
}

static struct rs *rs_new(const struct rs *from)
{
	struct rs *rs = calloc(1, sizeof(*rs));

	if (rs == NULL)
		return NULL;
	pthread_mutex_init(&rs->lock, NULL);
	rs->fd = -1;
	rs->sq_size = from != NULL ? from->sq_size : RS_DEF_QP;
	rs->rq_size = from != NULL ? from->rq_size : RS_DEF_QP;
	rs->sq_inline = from != NULL ? from->sq_inline : RS_DEF_INLINE;
	rs->sbuf_size = from != NULL ? from->sbuf_size : RS_DEF_MEM;
	rs->rbuf_size = from != NULL ? from->rbuf_size : RS_DEF_MEM;
	rs->ctrl_max_seqno = RS_CTRL_SLOTS;
	return rs;
}

/* Makes the rsocket's event channel (its number) non-blocking: waits are this file's. */
static int rs_channel(struct rs *rs)
{
	rs->ch = rdma_create_event_channel();
	if (rs->ch == NULL)
		return -1;
	if (fcntl(rs->ch->fd, F_SETFL, O_NONBLOCK) != 0)
		return -1;
	rs->fd = rs->ch->fd;
	return 0;
}

static void rs_free(struct rs *rs)
{
	rs_remove(rs);
	if (rs->id != NULL && rs->id->qp != NULL)
		rdma_destroy_qp(rs->id);
	if (rs->cq != NULL)
		ibv_destroy_cq(rs->cq);
	if (rs->cch != NULL)
		ibv_destroy_comp_channel(rs->cch);
	if (rs->smr != NULL)
		ibv_dereg_mr(rs->smr);
	if (rs->rmr != NULL)
		ibv_dereg_mr(rs->rmr);
	if (rs->mmr != NULL)
		ibv_dereg_mr(rs->mmr);
	if (rs->target_mr != NULL)
		ibv_dereg_mr(rs->target_mr);
	if (rs->pd != NULL)
		ibv_dealloc_pd(rs->pd);
	if (rs->id != NULL)
		rdma_destroy_id(rs->id);
	if (rs->ch != NULL)
		rdma_destroy_event_channel(rs->ch);
	free(rs->sbuf);
	free(rs->rbuf);
	free((void *)rs->target);
	free(rs->rmsg);
	pthread_mutex_destroy(&rs->lock);
	free(rs);
}

static bool rs_opening(const struct rs *rs)
{
	return rs->phase >= P_ADDR && rs->phase <= P_ACCEPT;
}

static bool rs_readable(const struct rs *rs) { return rs->phase == P_OPEN && rs->rd; }
static bool rs_have_rdata(const struct rs *rs) { return rs->rmsg_head != rs->rmsg_tail; }

static bool rs_can_send(const struct rs *rs)
{
	return rs->phase == P_OPEN && rs->wr && rs->sqe_avail >= 2 &&
	       rs->sbuf_avail >= RS_SNDLOWAT && rs->sseq_no != rs->sseq_comp &&
	       rs->target[rs->target_sge].length != 0;
}

static bool rs_ctrl_avail(const struct rs *rs) { return rs->ctrl_seqno != rs->ctrl_max_seqno; }

static bool rs_2ctrl_avail(const struct rs *rs)
{
	return (int)((rs->ctrl_seqno + 1) - rs->ctrl_max_seqno) < 0;
}

/* The connection is over for a reason the peer or the link gave: say why, once. */
static void rs_error(struct rs *rs, int err, const char *why)
{
	if (rs->phase != P_OPEN && !rs_opening(rs))
		return;
	UIW_WARN("rsocket %d: %s; the connection is closed", rs->fd, why);
	rs->phase = rs_opening(rs) ? P_CONNERR : P_ERR;
	rs->err = err;
	if (rs->id != NULL)
		rdma_disconnect(rs->id);
}

/* ---- Posting. ---- */

static int rs_post(struct rs *rs, struct ibv_send_wr *wr)
{
	struct ibv_send_wr *bad;
	int rc = ibv_post_send(rs->id->qp, wr, &bad);

	return rc == 0 ? 0 : fail(rc);
}

/* A message alone: a 4-octet inline Send. */
static int rs_post_msg(struct rs *rs, uint32_t msg)
{
	struct ibv_sge sge = { .addr = (uintptr_t)&msg, .length = UIW_RS_MSG_LEN };
	struct ibv_send_wr wr = { .wr_id = msg, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_INLINE };

	return rs_post(rs, &wr);
}

/* A Write of @p sgl to the peer, then its message in a Send of its own (iWARP: no
 * immediate data). */
static int rs_post_write_msg(struct rs *rs, struct ibv_sge *sgl, int nsge, uint32_t msg,
			     int flags, uint64_t addr, uint32_t rkey)
{
	struct ibv_sge m = { .addr = (uintptr_t)&msg, .length = UIW_RS_MSG_LEN };
	struct ibv_send_wr send = { .wr_id = UIW_RS_MSG(UIW_RS_MSG_OP(msg), 0) | WR_MSG_SEND,
				    .sg_list = &m, .num_sge = 1, .opcode = IBV_WR_SEND,
				    .send_flags = IBV_SEND_INLINE };
	struct ibv_send_wr write = { .wr_id = msg, .next = &send, .sg_list = sgl,
				     .num_sge = nsge, .opcode = IBV_WR_RDMA_WRITE,
				     .send_flags = (unsigned)flags };

	write.wr.rdma.remote_addr = addr;
	write.wr.rdma.rkey = rkey;
	return rs_post(rs, &write);
}

/* Hands the peer the next free half of the receive buffer (a descriptor written into its
 * target list) and credits up to what this side has read plus its queue depth. */
static void rs_send_credits(struct rs *rs)
{
	uint32_t half = rs->rbuf_size / 2;
	uint32_t msg = UIW_RS_MSG(UIW_RS_OP_SGL, (uint16_t)(rs->rseq_no + rs->rq_size));
	int rc;

	rs->ctrl_seqno++;
	rs->rseq_comp = (uint16_t)(rs->rseq_no + rs->rq_size / 2);
	if (rs->rbuf_avail < half) {
		rc = rs_post_msg(rs, msg);
	} else {
		struct uiw_rs_sge d = { .addr = (uintptr_t)&rs->rbuf[rs->rbuf_free_offset],
					.key = rs->rmr->rkey, .length = half };
		struct ibv_sge sge = { .addr = (uintptr_t)&d, .length = sizeof(d) };

		if (rs->swap) {
			d.addr = __builtin_bswap64(d.addr);
			d.key = __builtin_bswap32(d.key);
			d.length = __builtin_bswap32(d.length);
		}
		rs->ctrl_seqno++;
		rc = rs_post_write_msg(rs, &sge, 1, msg, IBV_SEND_INLINE,
				       rs->remote_sgl.addr + rs->remote_sge * sizeof(d),
				       rs->remote_sgl.key);
		rs->rbuf_avail -= half;
		rs->rbuf_free_offset += half;
		if (rs->rbuf_free_offset >= rs->rbuf_size)
			rs->rbuf_free_offset = 0;
		if (++rs->remote_sge == rs->remote_sgl.length)
			rs->remote_sge = 0;
	}
	if (rc != 0)
		rs_error(rs, errno, "posting a credit update failed");
}

static void rs_update_credits(struct rs *rs)
{
	if (rs->phase == P_OPEN && rs_2ctrl_avail(rs) &&
	    (rs->rbuf_avail >= rs->rbuf_size / 2 || (int16_t)(rs->rseq_no - rs->rseq_comp) >= 0))
		rs_send_credits(rs);
}

/* ---- Completions. ---- */

static int rs_post_recv(struct rs *rs, uint32_t slot)
{
	struct ibv_sge sge = { .addr = (uintptr_t)(rs->rbuf + rs->rbuf_size) + slot * UIW_RS_MSG_LEN,
			       .length = UIW_RS_MSG_LEN, .lkey = rs->mmr->lkey };
	struct ibv_recv_wr wr = { .wr_id = WR_RECV | slot, .sg_list = &sge, .num_sge = 1 }, *bad;
	int rc = ibv_post_recv(rs->id->qp, &wr, &bad);

	return rc == 0 ? 0 : fail(rc);
}

/* A message from the peer. @return false: the connection is over. */
static bool rs_take_msg(struct rs *rs, uint32_t msg)
{
	uint32_t data = UIW_RS_MSG_DATA(msg);

	switch (UIW_RS_MSG_OP(msg)) {
	case UIW_RS_OP_SGL:
		rs->sseq_comp = (uint16_t)data;
		return true;
	case UIW_RS_OP_CTRL:
		if (data == UIW_RS_CTRL_DISCONNECT) {
			rs->phase = P_DOWN;
			return false;
		}
		if (data == UIW_RS_CTRL_SHUTDOWN) {
			if (!rs->wr) {
				rs->phase = P_DOWN;
				return false;
			}
			rs->rd = false;
		}
		return true;   /* KEEPALIVE: nothing to do */
	case UIW_RS_OP_DATA: {
		uint32_t next = rs->rmsg_tail + 1 == rs->rmsg_cap ? 0 : rs->rmsg_tail + 1;

		/* Credits bound both: a peer past them would make this side read beyond what
		 * it wrote, or lose a length. */
		if (next == rs->rmsg_head || rs->rbytes + data > rs->rbuf_size) {
			rs_error(rs, EPROTO, "the peer sent data beyond its credits or the receive buffer");
			return false;
		}
		rs->rmsg[rs->rmsg_tail] = data;
		rs->rmsg_tail = next;
		rs->rbytes += data;
		return true;
	}
	default:
		return true;   /* an iomap update: this side maps none, nothing reads them */
	}
}

static void rs_send_done(struct rs *rs, const struct ibv_wc *wc)
{
	uint32_t msg = (uint32_t)wc->wr_id;

	switch (UIW_RS_MSG_OP(msg)) {
	case UIW_RS_OP_SGL:
		rs->ctrl_max_seqno++;
		break;
	case UIW_RS_OP_CTRL:
		rs->ctrl_max_seqno++;
		if (UIW_RS_MSG_DATA(msg) == UIW_RS_CTRL_DISCONNECT && rs->phase == P_OPEN)
			rs->phase = P_DOWN;
		break;
	default:
		rs->sqe_avail++;
		if (!(wc->wr_id & WR_MSG_SEND))
			rs->sbuf_avail += UIW_RS_MSG_DATA(msg);
		break;
	}
	if (wc->status != IBV_WC_SUCCESS && rs->phase == P_OPEN)
		rs_error(rs, wc->status == IBV_WC_WR_FLUSH_ERR ? ECONNRESET : EIO,
			 ibv_wc_status_str(wc->status));
}

static void rs_poll_cq(struct rs *rs)
{
	struct ibv_wc wc[16];
	int n;

	if (rs->cq == NULL)
		return;
	while ((n = ibv_poll_cq(rs->cq, 16, wc)) > 0) {
		for (int i = 0; i < n; i++) {
			if (!(wc[i].wr_id & WR_RECV)) {
				rs_send_done(rs, &wc[i]);
				continue;
			}
			if (wc[i].status != IBV_WC_SUCCESS)
				continue;   /* flushed: the connection ended */
			uint32_t slot = (uint32_t)wc[i].wr_id, msg;

			if (wc[i].byte_len != UIW_RS_MSG_LEN || slot >= rs->rq_slots) {
				rs_error(rs, EPROTO, "a message of the wrong size arrived");
				continue;
			}
			memcpy(&msg, rs->rbuf + rs->rbuf_size + slot * UIW_RS_MSG_LEN, sizeof(msg));
			if (rs_take_msg(rs, msg) && rs->phase == P_OPEN && rs_post_recv(rs, slot) != 0)
				rs_error(rs, errno, "reposting a receive failed");
		}
	}
}

/* ---- Set-up. ---- */

static int rs_create_ep(struct rs *rs)
{
	struct ibv_device_attr da;
	struct ibv_qp_init_attr qa;
	uint32_t max;

	if (ibv_query_device(rs->id->verbs, &da) != 0)
		return -1;
	max = (uint32_t)da.max_qp_wr - RS_RQ_SPARE;
	if (max > RS_QP_MAX)
		max = RS_QP_MAX;
	rs->sq_size = rs->sq_size > max ? max : rs->sq_size < RS_QP_MIN ? RS_QP_MIN : rs->sq_size;
	rs->rq_size = rs->rq_size > max ? max : rs->rq_size < RS_QP_MIN ? RS_QP_MIN : rs->rq_size;
	rs->rq_slots = rs->rq_size + RS_RQ_SPARE;
	rs->pd = ibv_alloc_pd(rs->id->verbs);
	rs->cch = rs->pd != NULL ? ibv_create_comp_channel(rs->id->verbs) : NULL;
	if (rs->cch == NULL || fcntl(rs->cch->fd, F_SETFL, O_NONBLOCK) != 0)
		return -1;
	rs->cq = ibv_create_cq(rs->id->verbs, (int)(rs->sq_size + rs->rq_slots), rs, rs->cch, 0);
	if (rs->cq == NULL)
		return -1;
	memset(&qa, 0, sizeof(qa));
	qa.qp_context = rs;
	qa.send_cq = qa.recv_cq = rs->cq;
	qa.qp_type = IBV_QPT_RC;
	qa.sq_sig_all = 1;
	qa.cap.max_send_wr = rs->sq_size;
	qa.cap.max_recv_wr = rs->rq_slots;
	qa.cap.max_send_sge = 2;
	qa.cap.max_recv_sge = 1;
	qa.cap.max_inline_data = rs->sq_inline < sizeof(struct uiw_rs_sge) ? sizeof(struct uiw_rs_sge)
									    : rs->sq_inline;
	if (rdma_create_qp(rs->id, rs->pd, &qa) != 0)
		return -1;
	rs->sq_inline = qa.cap.max_inline_data;

	rs->sbuf = calloc(rs->sbuf_size, 1);
	rs->rbuf = calloc(rs->rbuf_size + rs->rq_slots * UIW_RS_MSG_LEN, 1);
	rs->target = calloc(UIW_RS_SGL_SIZE, sizeof(struct uiw_rs_sge));
	rs->rmsg_cap = rs->rq_size + 1;
	rs->rmsg = calloc(rs->rmsg_cap, sizeof(*rs->rmsg));
	if (rs->sbuf == NULL || rs->rbuf == NULL || rs->target == NULL || rs->rmsg == NULL)
		return fail(ENOMEM);
	rs->smr = ibv_reg_mr(rs->pd, rs->sbuf, rs->sbuf_size, 0);
	rs->rmr = ibv_reg_mr(rs->pd, rs->rbuf, rs->rbuf_size,
			     IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	rs->mmr = ibv_reg_mr(rs->pd, rs->rbuf + rs->rbuf_size, rs->rq_slots * UIW_RS_MSG_LEN,
			     IBV_ACCESS_LOCAL_WRITE);
	rs->target_mr = ibv_reg_mr(rs->pd, (void *)rs->target, UIW_RS_SGL_SIZE * sizeof(struct uiw_rs_sge),
				   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (rs->smr == NULL || rs->rmr == NULL || rs->mmr == NULL || rs->target_mr == NULL)
		return -1;
	rs->sbuf_avail = rs->sbuf_size;
	rs->rbuf_free_offset = rs->rbuf_size / 2;   /* the first half goes in the connection data */
	rs->rbuf_avail = rs->rbuf_size / 2;
	rs->sqe_avail = (int)rs->sq_size - RS_CTRL_SLOTS;
	rs->rseq_comp = (uint16_t)(rs->rq_size / 2);
	for (uint32_t i = 0; i < rs->rq_slots; i++)
		if (rs_post_recv(rs, i) != 0)
			return -1;
	return 0;
}

static void rs_sge_net(struct uiw_rs_sge_net *n, uint64_t addr, uint32_t key, uint32_t len)
{
	n->addr = uiw_be64_of(addr);
	n->key = uiw_be32_of(key);
	n->length = uiw_be32_of(len);
}

static void rs_format_conn(const struct rs *rs, struct uiw_rs_conn_data *c)
{
	memset(c, 0, sizeof(*c));
	c->version = UIW_RS_VERSION;
	c->flags = host_is_be() ? UIW_RS_FLAG_NET : 0;   /* no iomap: target_iomap_size 0 */
	c->credits = uiw_be16_of((uint16_t)rs->rq_size);
	rs_sge_net(&c->target_sgl, (uintptr_t)rs->target, rs->target_mr->rkey, UIW_RS_SGL_SIZE);
	rs_sge_net(&c->data_buf, (uintptr_t)rs->rbuf, rs->rmr->rkey, rs->rbuf_size / 2);
}

/* The peer's connection data. @return false: not an rsocket this side can talk to. */
static bool rs_save_conn(struct rs *rs, const void *pd, uint8_t len)
{
	struct uiw_rs_conn_data c;
	volatile struct uiw_rs_sge *t = rs->target;

	if (pd == NULL || len < sizeof(c))
		return false;
	memcpy(&c, pd, sizeof(c));
	if (c.version != UIW_RS_VERSION)
		return false;
	rs->remote_sgl.addr = uiw_be64_get(c.target_sgl.addr);
	rs->remote_sgl.key = uiw_be32_get(c.target_sgl.key);
	rs->remote_sgl.length = uiw_be32_get(c.target_sgl.length);
	if (rs->remote_sgl.length == 0 || rs->remote_sgl.length > RS_SGL_MAX)
		return false;
	rs->remote_sge = 1 % rs->remote_sgl.length;
	rs->swap = ((c.flags & UIW_RS_FLAG_NET) != 0) != host_is_be();
	t[0].addr = uiw_be64_get(c.data_buf.addr);
	t[0].key = uiw_be32_get(c.data_buf.key);
	t[0].length = uiw_be32_get(c.data_buf.length);
	rs->sseq_comp = uiw_be16_get(c.credits);
	return true;
}

static int cm_errno(const struct rdma_cm_event *ev)
{
	switch (ev->event) {
	case RDMA_CM_EVENT_REJECTED: return ECONNREFUSED;
	case RDMA_CM_EVENT_UNREACHABLE: return ETIMEDOUT;
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_ROUTE_ERROR: return EHOSTUNREACH;
	default: return ev->status < 0 ? -ev->status : ev->status > 0 ? ev->status : ECONNRESET;
	}
}

static void rs_connect_route(struct rs *rs)
{
	struct uiw_rs_conn_data c;
	struct rdma_conn_param p;

	if (rs_create_ep(rs) != 0) {
		rs_error(rs, errno, "making the QP and its buffers failed");
		return;
	}
	rs_format_conn(rs, &c);
	memset(&p, 0, sizeof(p));
	p.private_data = &c;
	p.private_data_len = sizeof(c);
	p.flow_control = 1;
	p.retry_count = 7;
	p.rnr_retry_count = 7;
	p.initiator_depth = 1;   /* as rdma-core's rsockets ask on iWARP */
	if (rdma_connect(rs->id, &p) != 0)
		rs_error(rs, errno, "rdma_connect failed");
	else
		rs->phase = P_CONNECT;
}

static void rs_cm_event(struct rs *rs, struct rdma_cm_event *ev)
{
	switch (ev->event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		if (rs->phase == P_ADDR) {
			rs->phase = P_ROUTE;
			if (rdma_resolve_route(rs->id, RS_CM_MS) != 0)
				rs_error(rs, errno, "rdma_resolve_route failed");
		}
		break;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		if (rs->phase == P_ROUTE)
			rs_connect_route(rs);
		break;
	case RDMA_CM_EVENT_ESTABLISHED:
		if (rs->phase == P_CONNECT &&
		    !rs_save_conn(rs, ev->param.conn.private_data, ev->param.conn.private_data_len)) {
			rs_error(rs, EPROTO, "the peer's accept carries no rsocket connection data "
				 "(is it an rsocket?)");
			break;
		}
		if (rs->phase == P_CONNECT || rs->phase == P_ACCEPT) {
			rs->phase = P_OPEN;
			rs->rd = rs->wr = true;
		}
		break;
	case RDMA_CM_EVENT_DISCONNECTED:
		if (rs->phase == P_OPEN) {
			rs_poll_cq(rs);   /* what arrived before the end is still the reader's */
			if (rs->phase == P_OPEN)
				rs->phase = P_DOWN;
		} else if (rs_opening(rs)) {
			rs_error(rs, ECONNRESET, "the peer closed the connection while it opened");
		}
		break;
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_ROUTE_ERROR:
	case RDMA_CM_EVENT_CONNECT_ERROR:
	case RDMA_CM_EVENT_UNREACHABLE:
	case RDMA_CM_EVENT_REJECTED:
		if (rs_opening(rs)) {
			rs->phase = P_CONNERR;
			rs->err = cm_errno(ev);
		}
		break;
	default:
		break;
	}
	rdma_ack_cm_event(ev);
}

/* Everything that arrived for @p rs: its connection manager events, its completions, and
 * the credits that reading made free. */
static void rs_progress(struct rs *rs)
{
	struct rdma_cm_event *ev;

	if (rs->phase != P_LISTEN && uiw_cm_channel_pending(rs->ch))
		while (rdma_get_cm_event(rs->ch, &ev) == 0)
			rs_cm_event(rs, ev);
	if (rs->phase == P_OPEN) {
		rs_poll_cq(rs);
		rs_update_credits(rs);
	}
}

/* Sleeps (the lock given back) until an event may have come, at most @p ms. */
static void rs_sleep(struct rs *rs, int ms)
{
	struct pollfd p[2] = { { .fd = rs->ch->fd, .events = POLLIN } };
	nfds_t n = 1;

	if (rs->cq != NULL && rs->phase == P_OPEN) {
		ibv_req_notify_cq(rs->cq, 0);
		rs_progress(rs);   /* what came before the CQ was armed */
		p[n++] = (struct pollfd){ .fd = rs->cch->fd, .events = POLLIN };
	}
	pthread_mutex_unlock(&rs->lock);
	if (!uiw_threaded || !uiw_progress_thread) {   /* this thread runs the stack */
		uiw_verbs_progress();   /* one thread: this one runs the stack */
	} else {
		uiw_progress_kick(true);
		if (poll(p, n, ms < 0 || ms > 100 ? 100 : ms) < 0 && errno != EINTR)
			usleep(1000);
	}
	pthread_mutex_lock(&rs->lock);
	if (n > 1) {
		struct ibv_cq *cq;
		void *ctx;

		while (ibv_get_cq_event(rs->cch, &cq, &ctx) == 0)
			ibv_ack_cq_events(cq, 1);
	}
	rs_progress(rs);
}

static bool rs_nonblock(const struct rs *rs, int flags)
{
	return (rs->fd_flags & O_NONBLOCK) || (flags & MSG_DONTWAIT);
}

/* Waits until @p done holds, up to @p ms (negative: for ever). @return 0, or -1 with errno
 * EAGAIN (non-blocking) or ETIMEDOUT. */
static int rs_wait(struct rs *rs, bool (*done)(const struct rs *), bool nonblock, int ms)
{
	uint64_t start = uiw_now_ns(), end = ms < 0 ? UINT64_MAX : start + (uint64_t)ms * UIW_NS_PER_MS;

	rs_progress(rs);
	while (!done(rs)) {
		if (nonblock)
			return fail(EAGAIN);
		uint64_t now = uiw_now_ns();

		if (now >= end)
			return fail(ETIMEDOUT);
		/* A reply often comes within microseconds: poll (making passes of the stack)
		 * that long before sleeping, as rdma-core's rsockets do. */
		if (now - start < RS_SPIN_NS) {
			rs_progress(rs);
			continue;
		}
		rs_sleep(rs, end == UINT64_MAX ? -1 : (int)((end - now) / UIW_NS_PER_MS) + 1);
	}
	return 0;
}

static bool rs_opened(const struct rs *rs) { return !rs_opening(rs); }

/* An opening rsocket: wait for its end (blocking) or say how far it is. */
static int rs_finish_connect(struct rs *rs, bool nonblock)
{
	if (rs_wait(rs, rs_opened, nonblock, -1) != 0)
		return fail(EINPROGRESS);
	if (rs->phase == P_CONNERR) {
		int e = rs->err;

		return fail(e != 0 ? e : ECONNREFUSED);
	}
	return 0;
}

/* ---- The socket calls. ---- */

static void refuse_once(bool *said, const char *what)
{
	if (!__atomic_exchange_n(said, true, __ATOMIC_RELAXED))
		UIW_WARN("rsocket: %s", what);
}

int rsocket(int domain, int type, int protocol)
{
	static bool said_dgram, said_inet6;
	/* Linux's flags in the type (Python makes every socket with SOCK_CLOEXEC): non-blocking
	 * as asked; close-on-exec is how the rsocket's descriptors are made anyway. */
	int flags = type & (SOCK_NONBLOCK | SOCK_CLOEXEC);
	struct rs *rs;

	type &= ~flags;

	if (type == SOCK_DGRAM) {
		refuse_once(&said_dgram, "datagram rsockets need UD QPs, which iWARP does not have; "
			    "refused (ENOTSUP)");
		return fail(ENOTSUP);
	}
	if (domain == AF_INET6) {
		refuse_once(&said_inet6, "IPv6 rsockets: the stack speaks IPv4 only; refused (EAFNOSUPPORT)");
		return fail(EAFNOSUPPORT);
	}
	if (domain != AF_INET || type != SOCK_STREAM || (protocol != 0 && protocol != IPPROTO_TCP))
		return fail(ENOTSUP);
	rs = rs_new(NULL);
	if (rs == NULL)
		return fail(ENOMEM);
	rs->fd_flags = flags & SOCK_NONBLOCK ? O_NONBLOCK : 0;
	if (rs_channel(rs) != 0 || rdma_create_id(rs->ch, &rs->id, rs, RDMA_PS_TCP) != 0 ||
	    rs_insert(rs) != 0) {
		int e = errno;

		rs_free(rs);
		return fail(e);
	}
	return rs->fd;
}

int rbind(int s, const struct sockaddr *addr, socklen_t len)
{
	struct rs *rs = rs_get(s);
	int rc;

	if (rs == NULL)
		return -1;
	if (addr == NULL || len < sizeof(struct sockaddr_in))
		return fail(EINVAL);
	pthread_mutex_lock(&rs->lock);
	if (rs->phase != P_INIT)
		rc = fail(EINVAL);
	else if ((rc = rdma_bind_addr(rs->id, (struct sockaddr *)addr)) == 0)
		rs->phase = P_BOUND;
	pthread_mutex_unlock(&rs->lock);
	return rc;
}

int rlisten(int s, int backlog)
{
	struct rs *rs = rs_get(s);
	int rc = 0;

	if (rs == NULL)
		return -1;
	pthread_mutex_lock(&rs->lock);
	if (rs->phase != P_LISTEN) {
		if (rs->phase != P_BOUND && rs->phase != P_INIT)
			rc = fail(EINVAL);
		else if ((rc = rdma_listen(rs->id, backlog)) == 0)
			rs->phase = P_LISTEN;
	}
	pthread_mutex_unlock(&rs->lock);
	return rc;
}

static bool rs_accepted(const struct rs *rs) { return rs->phase != P_ACCEPT; }

/* A connection request to listener @p l: a new rsocket, accepted. @return it, or NULL (the
 * request refused; errno set). */
static struct rs *rs_accept_one(struct rs *l, struct rdma_cm_event *ev)
{
	struct rs *n = rs_new(l);
	struct uiw_rs_conn_data c;
	struct rdma_conn_param p;

	if (n == NULL || rs_channel(n) != 0 || rdma_migrate_id(ev->id, n->ch) != 0) {
		int e = errno;

		struct rdma_cm_id *id = ev->id;

		rdma_reject(id, NULL, 0);
		rdma_ack_cm_event(ev);
		rdma_destroy_id(id);
		if (n != NULL)
			rs_free(n);
		errno = e;
		return NULL;
	}
	n->id = ev->id;
	n->id->context = n;
	if (rs_create_ep(n) != 0) {
		int e = errno;

		UIW_WARN("rsocket %d: no QP for a connection request (%s): rejected", l->fd, strerror(e));
		rdma_reject(n->id, NULL, 0);
		rdma_ack_cm_event(ev);
		rs_free(n);
		errno = e;
		return NULL;
	}
	if (!rs_save_conn(n, ev->param.conn.private_data, ev->param.conn.private_data_len)) {
		UIW_WARN("rsocket %d: a connection request without rsocket connection data "
			 "(is the peer an rsocket?): rejected", l->fd);
		rdma_reject(n->id, NULL, 0);
		rdma_ack_cm_event(ev);
		rs_free(n);
		errno = ECONNABORTED;
		return NULL;
	}
	rs_format_conn(n, &c);
	p = ev->param.conn;
	p.private_data = &c;
	p.private_data_len = sizeof(c);
	n->phase = P_ACCEPT;
	if (rdma_accept(n->id, &p) != 0) {
		/* Gone before it was accepted: the next request, as accept() does. */
		UIW_WARN("rsocket %d: accepting a connection failed (%s)", l->fd, strerror(errno));
		rdma_ack_cm_event(ev);
		rs_free(n);
		errno = ECONNABORTED;
		return NULL;
	}
	if (rs_insert(n) != 0) {
		rdma_ack_cm_event(ev);
		rs_free(n);
		errno = ENOMEM;
		return NULL;
	}
	rdma_ack_cm_event(ev);
	return n;
}

int raccept(int s, struct sockaddr *addr, socklen_t *len)
{
	struct rs *l = rs_get(s), *n = NULL;
	struct rdma_cm_event *ev;

	if (l == NULL)
		return -1;
	pthread_mutex_lock(&l->lock);
	if (l->phase != P_LISTEN) {
		pthread_mutex_unlock(&l->lock);
		return fail(EINVAL);
	}
	while (n == NULL) {
		if (rdma_get_cm_event(l->ch, &ev) != 0) {
			if (l->fd_flags & O_NONBLOCK) {
				pthread_mutex_unlock(&l->lock);
				return fail(EAGAIN);
			}
			rs_sleep(l, -1);
			continue;
		}
		if (ev->event != RDMA_CM_EVENT_CONNECT_REQUEST) {
			rdma_ack_cm_event(ev);
			continue;
		}
		n = rs_accept_one(l, ev);
		if (n == NULL && errno != ECONNABORTED) {
			pthread_mutex_unlock(&l->lock);
			return -1;
		}
	}
	bool nonblock = (l->fd_flags & O_NONBLOCK) != 0;

	pthread_mutex_unlock(&l->lock);
	pthread_mutex_lock(&n->lock);
	/* A blocking accept returns the connection made (as rdma-core's, whose rdma_accept
	 * waits); a non-blocking one leaves the rest to the first call on it. */
	rs_wait(n, rs_accepted, nonblock, -1);
	pthread_mutex_unlock(&n->lock);
	if (addr != NULL && len != NULL)
		rgetpeername(n->fd, addr, len);
	return n->fd;
}

int rconnect(int s, const struct sockaddr *addr, socklen_t len)
{
	struct rs *rs = rs_get(s);
	int rc;

	if (rs == NULL)
		return -1;
	if (addr == NULL || len < sizeof(struct sockaddr_in))
		return fail(EINVAL);
	if (addr->sa_family != AF_INET)
		return fail(EAFNOSUPPORT);
	pthread_mutex_lock(&rs->lock);
	if (rs_opening(rs)) {
		rc = rs_finish_connect(rs, (rs->fd_flags & O_NONBLOCK) != 0);
		if (rc != 0 && errno == EINPROGRESS)
			errno = EALREADY;
	} else if (rs->phase != P_INIT && rs->phase != P_BOUND) {
		rc = fail(rs->phase == P_OPEN ? EISCONN : EINVAL);
	} else if (rdma_resolve_addr(rs->id, NULL, (struct sockaddr *)addr, RS_CM_MS) != 0) {
		rc = -1;
	} else {
		rs->phase = P_ADDR;
		rc = rs_finish_connect(rs, (rs->fd_flags & O_NONBLOCK) != 0);
	}
	pthread_mutex_unlock(&rs->lock);
	return rc;
}

/* Data calls on an rsocket still opening: finish (blocking) or EAGAIN. */
static int rs_data_ready(struct rs *rs, bool nonblock)
{
	if (!rs_opening(rs))
		return 0;
	if (rs_finish_connect(rs, nonblock) == 0)
		return 0;
	if (errno == EINPROGRESS)
		errno = EAGAIN;
	return -1;
}

static bool rs_send_ready(const struct rs *rs)
{
	return rs_can_send(rs) || rs->phase != P_OPEN || !rs->wr;
}

/* Copies @p len bytes from the iovecs at (*iov, *off) to @p dst, moving on. */
static void iov_take(uint8_t *dst, const struct iovec **iov, size_t *off, size_t len)
{
	while (len > 0) {
		size_t n = (*iov)->iov_len - *off;

		if (n > len)
			n = len;
		memcpy(dst, (const uint8_t *)(*iov)->iov_base + *off, n);
		dst += n;
		len -= n;
		*off += n;
		if (*off == (*iov)->iov_len) {
			(*iov)++;
			*off = 0;
		}
	}
}

/* One Write of @p n bytes from the iovecs into the peer's current receive buffer. */
static int rs_write_data(struct rs *rs, const struct iovec **iov, size_t *off, uint32_t n)
{
	volatile struct uiw_rs_sge *t = &rs->target[rs->target_sge];
	uint64_t addr = t->addr;
	uint32_t rkey = t->key, first = rs->sbuf_size - rs->sbuf_pos;
	struct ibv_sge sge[2] = { { .addr = (uintptr_t)(rs->sbuf + rs->sbuf_pos), .lkey = rs->smr->lkey },
				  { .addr = (uintptr_t)rs->sbuf, .lkey = rs->smr->lkey } };
	int nsge = 1;

	if (n <= first) {
		sge[0].length = n;
	} else {
		sge[0].length = first;
		sge[1].length = n - first;
		nsge = 2;
	}
	iov_take(rs->sbuf + rs->sbuf_pos, iov, off, sge[0].length);
	if (nsge == 2)
		iov_take(rs->sbuf, iov, off, sge[1].length);
	rs->sbuf_pos = (rs->sbuf_pos + n) % rs->sbuf_size;
	rs->sseq_no++;
	rs->sqe_avail -= 2;
	rs->sbuf_avail -= n;
	t->addr = addr + n;
	t->length = t->length - n;
	if (t->length == 0 && ++rs->target_sge == UIW_RS_SGL_SIZE)
		rs->target_sge = 0;
	return rs_post_write_msg(rs, sge, nsge, UIW_RS_MSG(UIW_RS_OP_DATA, n),
				 n <= rs->sq_inline ? IBV_SEND_INLINE : 0, addr, rkey);
}

static ssize_t rs_sendv(int s, const struct iovec *iov, int iovcnt, int flags)
{
	struct rs *rs = rs_get(s);
	size_t len = 0, left, off = 0;
	uint32_t olen = RS_XFER_START;
	int rc = 0;

	if (rs == NULL)
		return -1;
	if (iovcnt < 0)
		return fail(EINVAL);
	for (int i = 0; i < iovcnt; i++)
		len += iov[i].iov_len;
	while (iovcnt > 0 && iov->iov_len == 0) {
		iov++;
		iovcnt--;
	}
	pthread_mutex_lock(&rs->lock);
	bool nonblock = rs_nonblock(rs, flags);

	if (rs_data_ready(rs, nonblock) != 0) {
		pthread_mutex_unlock(&rs->lock);
		return -1;
	}
	for (left = len; left > 0;) {
		if (!rs_can_send(rs)) {
			if ((rc = rs_wait(rs, rs_send_ready, nonblock, -1)) != 0)
				break;
			if (rs->phase != P_OPEN || !rs->wr) {
				rc = fail(rs->wr_shut ? EPIPE : rs->phase == P_ERR && rs->err ? rs->err
											: ECONNRESET);
				break;
			}
			continue;
		}
		uint32_t n = olen < left ? olen : (uint32_t)left, tl = rs->target[rs->target_sge].length;

		if (olen < left && olen < RS_XFER_MAX)
			olen <<= 1;
		if (n > rs->sbuf_avail)
			n = rs->sbuf_avail;
		if (n > tl)
			n = tl;
		if ((rc = rs_write_data(rs, &iov, &off, n)) != 0) {
			rs_error(rs, errno, "posting a Write failed");
			break;
		}
		left -= n;
	}
	pthread_mutex_unlock(&rs->lock);
	return rc != 0 && left == len ? -1 : (ssize_t)(len - left);
}

ssize_t rsend(int s, const void *buf, size_t len, int flags)
{
	struct iovec v = { .iov_base = (void *)buf, .iov_len = len };

	return rs_sendv(s, &v, 1, flags);
}

ssize_t rsendto(int s, const void *buf, size_t len, int flags, const struct sockaddr *a,
		socklen_t l)
{
	if (a != NULL || l != 0)
		return fail(EISCONN);
	return rsend(s, buf, len, flags);
}

ssize_t rsendmsg(int s, const struct msghdr *m, int flags)
{
	if (m->msg_control != NULL && m->msg_controllen > 0)
		return fail(ENOTSUP);
	return rs_sendv(s, m->msg_iov, (int)m->msg_iovlen, flags);
}

ssize_t rwrite(int s, const void *buf, size_t len) { return rsend(s, buf, len, 0); }
ssize_t rwritev(int s, const struct iovec *v, int n) { return rs_sendv(s, v, n, 0); }

static bool rs_recv_ready(const struct rs *rs) { return rs_have_rdata(rs) || !rs_readable(rs); }

/* Copies up to @p len read bytes into the iovecs (consuming them unless @p peek). */
static size_t rs_copy_out(struct rs *rs, const struct iovec *iov, int iovcnt, size_t len, bool peek)
{
	uint32_t head = rs->rmsg_head, offset = rs->rbuf_offset, part = 0;
	size_t done = 0, off = 0;

	while (done < len && head != rs->rmsg_tail) {
		uint32_t n = rs->rmsg[head] - part, end = rs->rbuf_size - offset;

		if (n > len - done)
			n = (uint32_t)(len - done);
		if (n > end)
			n = end;
		while (iovcnt > 0 && off == iov->iov_len) {
			iov++;
			iovcnt--;
			off = 0;
		}
		if (iovcnt == 0)
			break;
		if (n > iov->iov_len - off)
			n = (uint32_t)(iov->iov_len - off);
		memcpy((uint8_t *)iov->iov_base + off, rs->rbuf + offset, n);
		off += n;
		done += n;
		part += n;
		offset = offset + n == rs->rbuf_size ? 0 : offset + n;
		if (!peek) {
			rs->rbuf_avail += n;
			rs->rbytes -= n;
		}
		if (part == rs->rmsg[head]) {
			head = head + 1 == rs->rmsg_cap ? 0 : head + 1;
			part = 0;
			if (!peek)
				rs->rseq_no++;
		}
	}
	if (!peek) {
		if (part > 0)
			rs->rmsg[head] -= part;
		rs->rmsg_head = head;
		rs->rbuf_offset = offset;
	}
	return done;
}

static ssize_t rs_recvv(int s, const struct iovec *iov, int iovcnt, int flags)
{
	struct rs *rs = rs_get(s);
	size_t len = 0, done = 0;
	int rc = 0;

	if (rs == NULL)
		return -1;
	if (iovcnt < 0)
		return fail(EINVAL);
	for (int i = 0; i < iovcnt; i++)
		len += iov[i].iov_len;
	pthread_mutex_lock(&rs->lock);
	bool nonblock = rs_nonblock(rs, flags);

	if (rs_data_ready(rs, nonblock) != 0) {
		pthread_mutex_unlock(&rs->lock);
		return -1;
	}
	if (rs->phase == P_INIT || rs->phase == P_BOUND || rs->phase == P_LISTEN) {
		pthread_mutex_unlock(&rs->lock);
		return fail(ENOTCONN);
	}
	do {
		if (!rs_have_rdata(rs) && (rc = rs_wait(rs, rs_recv_ready, nonblock, -1)) != 0)
			break;
		if (!rs_have_rdata(rs))
			break;   /* the end: 0, or the error below */
		if (flags & MSG_PEEK) {
			done = rs_copy_out(rs, iov, iovcnt, len, true);
			break;
		}
		struct iovec rest[64];
		int nrest = 0;
		size_t skip = done;

		/* The iovecs past what is filled already. */
		for (int i = 0; i < iovcnt && nrest < 64; i++) {
			if (skip >= iov[i].iov_len) {
				skip -= iov[i].iov_len;
				continue;
			}
			rest[nrest++] = (struct iovec){ .iov_base = (uint8_t *)iov[i].iov_base + skip,
							.iov_len = iov[i].iov_len - skip };
			skip = 0;
		}
		done += rs_copy_out(rs, rest, nrest, len - done, false);
		rs_update_credits(rs);
	} while (done < len && (flags & MSG_WAITALL) && rs_readable(rs));
	if (done == 0 && rc == 0 && rs->phase == P_ERR && rs->err != 0 && len > 0)
		rc = fail(rs->err);
	pthread_mutex_unlock(&rs->lock);
	return rc != 0 && done == 0 ? -1 : (ssize_t)done;
}

ssize_t rrecv(int s, void *buf, size_t len, int flags)
{
	struct iovec v = { .iov_base = buf, .iov_len = len };

	return rs_recvv(s, &v, 1, flags);
}

ssize_t rrecvfrom(int s, void *buf, size_t len, int flags, struct sockaddr *a, socklen_t *l)
{
	ssize_t n = rrecv(s, buf, len, flags);

	if (n > 0 && a != NULL && l != NULL)
		rgetpeername(s, a, l);
	return n;
}

ssize_t rrecvmsg(int s, struct msghdr *m, int flags)
{
	if (m->msg_control != NULL && m->msg_controllen > 0)
		return fail(ENOTSUP);
	m->msg_flags = 0;
	return rs_recvv(s, m->msg_iov, (int)m->msg_iovlen, flags);
}

ssize_t rread(int s, void *buf, size_t len) { return rrecv(s, buf, len, 0); }
ssize_t rreadv(int s, const struct iovec *v, int n) { return rs_recvv(s, v, n, 0); }

/* ---- poll and select. ---- */

/* What @p rs is ready for now (one progress step first). */
static short rs_revents(struct rs *rs, short events)
{
	short r = 0;

	if (rs_opening(rs))
		rs_finish_connect(rs, true);
	else
		rs_progress(rs);
	switch (rs->phase) {
	case P_LISTEN:
		if (uiw_cm_channel_pending(rs->ch))
			r |= POLLIN;
		break;
	case P_OPEN:
	case P_DOWN:
	case P_ERR:
		if ((events & POLLIN) && rs_recv_ready(rs))
			r |= POLLIN;
		if ((events & POLLOUT) && rs_can_send(rs))
			r |= POLLOUT;
		/* The end shows once what came before it is read (the peer's last bytes and its
		 * DISCONNECT often arrive together, and a reader takes POLLHUP as the end). */
		if (rs_have_rdata(rs))
			break;
		if (rs->phase == P_DOWN)
			r |= POLLHUP;
		else if (rs->phase == P_ERR)
			r |= POLLERR;
		break;
	case P_CONNERR:
		r = (short)((events & (POLLIN | POLLOUT)) | POLLERR);
		break;
	default:
		break;
	}
	return r;
}

static int poll_check(struct pollfd *fds, nfds_t n, struct rs **rss)
{
	int cnt = 0;

	for (nfds_t i = 0; i < n; i++) {
		fds[i].revents = 0;
		if (rss[i] != NULL) {
			pthread_mutex_lock(&rss[i]->lock);
			fds[i].revents = rs_revents(rss[i], fds[i].events);
			pthread_mutex_unlock(&rss[i]->lock);
		} else if (fds[i].fd >= 0) {
			poll(&fds[i], 1, 0);
		}
		cnt += fds[i].revents != 0;
	}
	return cnt;
}

/* Sleeps on the fds behind every rsocket (event channel; completion channel, its CQ armed)
 * and on the other fds as they are, at most @p ms. */
static void poll_sleep(struct pollfd *fds, nfds_t n, struct rs **rss, int ms)
{
	struct pollfd *w = calloc(2 * n + 1, sizeof(*w));
	nfds_t k = 0;

	if (w == NULL) {
		usleep(1000);
		return;
	}
	for (nfds_t i = 0; i < n; i++) {
		struct rs *rs = rss[i];

		if (rs == NULL) {
			w[k++] = (struct pollfd){ .fd = fds[i].fd, .events = fds[i].events };
			continue;
		}
		pthread_mutex_lock(&rs->lock);
		w[k++] = (struct pollfd){ .fd = rs->ch->fd, .events = POLLIN };
		if (rs->cq != NULL && rs->phase == P_OPEN) {
			ibv_req_notify_cq(rs->cq, 0);
			w[k++] = (struct pollfd){ .fd = rs->cch->fd, .events = POLLIN };
		}
		pthread_mutex_unlock(&rs->lock);
	}
	if (!uiw_threaded || !uiw_progress_thread) {   /* this thread runs the stack */
		poll(w, k, 0);
		uiw_verbs_progress();
	} else {
		uiw_progress_kick(true);
		poll(w, k, ms < 0 || ms > 100 ? 100 : ms);
	}
	for (nfds_t i = 0; i < n; i++) {
		struct rs *rs = rss[i];
		struct ibv_cq *cq;
		void *ctx;

		if (rs == NULL || rs->cch == NULL)
			continue;
		pthread_mutex_lock(&rs->lock);
		while (ibv_get_cq_event(rs->cch, &cq, &ctx) == 0)
			ibv_ack_cq_events(cq, 1);
		pthread_mutex_unlock(&rs->lock);
	}
	free(w);
}

int rpoll(struct pollfd *fds, nfds_t n, int timeout)
{
	struct rs **rss = calloc(n + 1, sizeof(*rss));
	uint64_t end = timeout < 0 ? UINT64_MAX : uiw_now_ns() + (uint64_t)timeout * UIW_NS_PER_MS;
	int cnt;

	if (rss == NULL)
		return fail(ENOMEM);
	pthread_mutex_lock(&tab_lock);
	for (nfds_t i = 0; i < n; i++)
		if (fds[i].fd >= 0 && fds[i].fd < tab_len)
			rss[i] = tab[fds[i].fd];
	pthread_mutex_unlock(&tab_lock);
	for (;;) {
		cnt = poll_check(fds, n, rss);
		uint64_t now = uiw_now_ns();

		if (cnt != 0 || now >= end)
			break;
		poll_sleep(fds, n, rss, end == UINT64_MAX ? -1 : (int)((end - now) / UIW_NS_PER_MS) + 1);
	}
	free(rss);
	return cnt;
}

int rselect(int nfds, fd_set *rd, fd_set *wr, fd_set *ex, struct timeval *tv)
{
	struct pollfd *fds = calloc((size_t)(nfds > 0 ? nfds : 1), sizeof(*fds));
	nfds_t n = 0;
	int rc, cnt = 0;

	if (fds == NULL)
		return fail(ENOMEM);
	for (int fd = 0; fd < nfds; fd++) {
		short ev = (short)((rd != NULL && FD_ISSET(fd, rd) ? POLLIN : 0) |
				   (wr != NULL && FD_ISSET(fd, wr) ? POLLOUT : 0));

		if (ev != 0 || (ex != NULL && FD_ISSET(fd, ex)))
			fds[n++] = (struct pollfd){ .fd = fd, .events = ev };
	}
	rc = rpoll(fds, n, tv == NULL ? -1 : (int)(tv->tv_sec * 1000 + tv->tv_usec / 1000));
	if (rd != NULL)
		FD_ZERO(rd);
	if (wr != NULL)
		FD_ZERO(wr);
	if (ex != NULL)
		FD_ZERO(ex);
	for (nfds_t i = 0; rc > 0 && i < n; i++) {
		if (rd != NULL && (fds[i].revents & (POLLIN | POLLHUP | POLLERR))) {
			FD_SET(fds[i].fd, rd);
			cnt++;
		}
		if (wr != NULL && (fds[i].revents & (POLLOUT | POLLERR))) {
			FD_SET(fds[i].fd, wr);
			cnt++;
		}
		if (ex != NULL && (fds[i].revents & POLLPRI)) {
			FD_SET(fds[i].fd, ex);
			cnt++;
		}
	}
	free(fds);
	return rc < 0 ? rc : cnt;
}

/* ---- Ending. ---- */

static bool rs_ctrl_ready(const struct rs *rs) { return rs_ctrl_avail(rs) || rs->phase != P_OPEN; }

static bool rs_sends_done(const struct rs *rs)
{
	return (int)(rs->ctrl_max_seqno - rs->ctrl_seqno) + rs->sqe_avail == (int)rs->sq_size ||
	       (rs->phase != P_OPEN && rs->phase != P_DOWN) || rs->id->qp == NULL ||
	       rs->id->qp->state == IBV_QPS_ERR;
}

/* Every send is complete and its bytes acknowledged by the peer's TCP. */
static bool rs_delivered(const struct rs *rs)
{
	struct uiw_qp_tcp t;

	if (!rs_sends_done(rs) || rs->phase != P_OPEN)
		return rs->phase != P_OPEN;
	uiw_verbs_qp_tcp(rs->id->qp, &t);
	return !t.up || t.all_acked;
}

static int rs_shutdown(struct rs *rs, int how)
{
	uint32_t ctrl;

	if (rs->phase != P_OPEN)
		return rs->phase == P_DOWN || rs->phase == P_ERR ? 0 : fail(ENOTCONN);
	if (how == SHUT_RDWR) {
		ctrl = UIW_RS_CTRL_DISCONNECT;
		rs->rd = rs->wr = false;
	} else if (how == SHUT_WR) {
		rs->wr = false;
		ctrl = rs->rd ? UIW_RS_CTRL_SHUTDOWN : UIW_RS_CTRL_DISCONNECT;
	} else if (how == SHUT_RD) {
		rs->rd = false;
		if (rs->wr)
			return 0;
		ctrl = UIW_RS_CTRL_DISCONNECT;
	} else {
		return fail(EINVAL);
	}
	rs->wr_shut = !rs->wr;
	/* Blocking whatever O_NONBLOCK says, and bounded: a peer that stopped answering does
	 * not hold the caller. What was sent is acknowledged before the control message goes:
	 * rdma-core's rpoll() reports POLLHUP as soon as the DISCONNECT is in, data unread or
	 * not, and rstream -T a takes that for an error. */
	rs_wait(rs, rs_delivered, false, RS_CLOSE_MS);
	if (rs_wait(rs, rs_ctrl_ready, false, RS_CLOSE_MS) == 0 && rs->phase == P_OPEN) {
		rs->ctrl_seqno++;
		if (rs_post_msg(rs, UIW_RS_MSG(UIW_RS_OP_CTRL, ctrl)) != 0)
			rs_error(rs, errno, "posting the shutdown message failed");
	}
	if (rs_wait(rs, rs_sends_done, false, RS_CLOSE_MS) != 0)
		UIW_WARN("rsocket %d: sends still outstanding %d s after shutdown", rs->fd,
			 RS_CLOSE_MS / 1000);
	if (ctrl == UIW_RS_CTRL_DISCONNECT) {
		if (rs->phase == P_OPEN)
			rs->phase = P_DOWN;
		rdma_disconnect(rs->id);
	}
	return 0;
}

int rshutdown(int s, int how)
{
	struct rs *rs = rs_get(s);
	int rc;

	if (rs == NULL)
		return -1;
	pthread_mutex_lock(&rs->lock);
	rc = rs_shutdown(rs, how);
	pthread_mutex_unlock(&rs->lock);
	return rc;
}

int rclose(int s)
{
	struct rs *rs = rs_get(s);

	if (rs == NULL)
		return -1;
	rs_remove(rs);   /* the number is free for the next rsocket as the fd closes */
	pthread_mutex_lock(&rs->lock);
	if (rs->phase == P_OPEN)
		rs_shutdown(rs, SHUT_RDWR);
	pthread_mutex_unlock(&rs->lock);
	rs_free(rs);
	return 0;
}

/* ---- Addresses and options. ---- */

static int copy_addr(struct sockaddr *dst, socklen_t *len, const struct sockaddr *src)
{
	socklen_t n = sizeof(struct sockaddr_in);

	if (dst == NULL || len == NULL)
		return fail(EFAULT);
	memcpy(dst, src, *len < n ? *len : n);
	*len = n;
	return 0;
}

int rgetpeername(int s, struct sockaddr *a, socklen_t *l)
{
	struct rs *rs = rs_get(s);

	if (rs == NULL)
		return -1;
	if (rs->phase != P_OPEN && rs->phase != P_DOWN && rs->phase != P_ACCEPT)
		return fail(ENOTCONN);
	return copy_addr(a, l, rdma_get_peer_addr(rs->id));
}

int rgetsockname(int s, struct sockaddr *a, socklen_t *l)
{
	struct rs *rs = rs_get(s);

	if (rs == NULL)
		return -1;
	return copy_addr(a, l, rdma_get_local_addr(rs->id));
}

static int opt_int(const void *v, socklen_t l, int *out)
{
	if (v == NULL || l < sizeof(int))
		return fail(EINVAL);
	memcpy(out, v, sizeof(int));
	return 0;
}

static uint32_t clamp_mem(int v)
{
	uint64_t m = v <= 0 ? RS_MEM_MIN : (uint64_t)v * 2;   /* doubled, as Linux does */

	m = m < RS_MEM_MIN ? RS_MEM_MIN : m > RS_MEM_MAX ? RS_MEM_MAX : m;
	return (uint32_t)(m & ~(uint64_t)1);
}

static int setopt_locked(struct rs *rs, int level, int name, const void *v, socklen_t l)
{
	int x;

	if (level == SOL_SOCKET && name == SO_LINGER)
		return v != NULL && l >= sizeof(struct linger) ? 0 : fail(EINVAL);
	if (opt_int(v, l, &x) != 0)
		return -1;
	switch (level) {
	case SOL_SOCKET:
		switch (name) {
		case SO_REUSEADDR:
		case SO_KEEPALIVE:   /* taken; the connection is watched by TCP's own timers */
		case SO_OOBINLINE:
			rs->so_opts = x ? rs->so_opts | (1ull << name) : rs->so_opts & ~(1ull << name);
			return 0;
		case SO_RCVBUF:
			if (rs->rbuf == NULL)
				rs->rbuf_size = clamp_mem(x);
			return 0;
		case SO_SNDBUF:
			if (rs->sbuf == NULL)
				rs->sbuf_size = clamp_mem(x) < 2 * RS_SNDLOWAT ? 2 * RS_SNDLOWAT : clamp_mem(x);
			return 0;
		}
		break;
	case IPPROTO_TCP:
		switch (name) {
		case TCP_NODELAY:
			rs->tcp_opts = x ? rs->tcp_opts | (1ull << name) : rs->tcp_opts & ~(1ull << name);
			return 0;
		case TCP_MAXSEG:
		case TCP_KEEPIDLE:
		case TCP_KEEPINTVL:
		case TCP_KEEPCNT:
			return 0;
		}
		break;
	case SOL_RDMA:
		if (rs->phase > P_LISTEN)
			return fail(EINVAL);
		switch (name) {
		case RDMA_SQSIZE:
			rs->sq_size = x <= 0 ? RS_QP_MIN : x > RS_QP_MAX ? RS_QP_MAX : (uint32_t)x;
			return 0;
		case RDMA_RQSIZE:
			rs->rq_size = x <= 0 ? RS_QP_MIN : x > RS_QP_MAX ? RS_QP_MAX : (uint32_t)x;
			return 0;
		case RDMA_INLINE:
			rs->sq_inline = x < 0 ? 0 : x > UIW_MAX_INLINE ? UIW_MAX_INLINE : (uint32_t)x;
			return 0;
		case RDMA_IOMAPSIZE:
			if (x == 0)
				return 0;
			UIW_WARN("rsocket %d: iomapped buffers (RDMA_IOMAPSIZE %d) are not provided",
				 rs->fd, x);
			return fail(ENOTSUP);
		}
		break;
	}
	return fail(ENOTSUP);
}

int rsetsockopt(int s, int level, int name, const void *v, socklen_t l)
{
	struct rs *rs = rs_get(s);
	int rc;

	if (rs == NULL)
		return -1;
	pthread_mutex_lock(&rs->lock);
	rc = setopt_locked(rs, level, name, v, l);
	pthread_mutex_unlock(&rs->lock);
	return rc;
}

static int put_int(void *v, socklen_t *l, int x)
{
	if (v == NULL || l == NULL || *l < sizeof(int))
		return fail(EINVAL);
	memcpy(v, &x, sizeof(x));
	*l = sizeof(x);
	return 0;
}

/* TCP_INFO: the TCP connection under the QP, as Linux reports its own. */
static int rs_tcp_info(struct rs *rs, void *v, socklen_t *l)
{
	/* Linux's TCP_* state numbers, in the order of enum uiw_tcp_state. */
	static const uint8_t linux_state[] = { 7, 10, 2, 3, 1, 4, 5, 8, 11, 9, 6 };
	struct tcp_info ti;
	struct uiw_qp_tcp t = { .up = false };

	if (v == NULL || l == NULL)
		return fail(EFAULT);
	if (rs->id != NULL && rs->id->qp != NULL)
		uiw_verbs_qp_tcp(rs->id->qp, &t);
	memset(&ti, 0, sizeof(ti));
	ti.tcpi_state = t.up && (unsigned)t.state < sizeof(linux_state) ? linux_state[t.state] : 7;
	ti.tcpi_snd_mss = ti.tcpi_rcv_mss = t.mss;
	ti.tcpi_rtt = t.srtt_us;
	ti.tcpi_rttvar = t.rttvar_us;
	ti.tcpi_rto = t.rto_us;
	ti.tcpi_snd_cwnd = t.mss > 0 ? t.cwnd / t.mss : 0;
	ti.tcpi_total_retrans = (uint32_t)t.retransmits;
	memcpy(v, &ti, *l < sizeof(ti) ? *l : sizeof(ti));
	*l = *l < sizeof(ti) ? *l : sizeof(ti);
	return 0;
}

static int getopt_locked(struct rs *rs, int level, int name, void *v, socklen_t *l)
{
	int e;

	switch (level) {
	case SOL_SOCKET:
		switch (name) {
		case SO_REUSEADDR:
		case SO_KEEPALIVE:
		case SO_OOBINLINE:
			return put_int(v, l, !!(rs->so_opts & (1ull << name)));
		case SO_RCVBUF: return put_int(v, l, (int)rs->rbuf_size);
		case SO_SNDBUF: return put_int(v, l, (int)rs->sbuf_size);
		case SO_TYPE: return put_int(v, l, SOCK_STREAM);
		case SO_DOMAIN: return put_int(v, l, AF_INET);
		case SO_PROTOCOL: return put_int(v, l, IPPROTO_TCP);
		case SO_ACCEPTCONN: return put_int(v, l, rs->phase == P_LISTEN);
		case SO_ERROR:
			e = rs->err;
			rs->err = 0;
			return put_int(v, l, e);
		case SO_LINGER:
			if (v == NULL || l == NULL || *l < sizeof(struct linger))
				return fail(EINVAL);
			memset(v, 0, sizeof(struct linger));
			*l = sizeof(struct linger);
			return 0;
		}
		break;
	case IPPROTO_TCP:
		switch (name) {
		case TCP_INFO: return rs_tcp_info(rs, v, l);
		case TCP_NODELAY: return put_int(v, l, !!(rs->tcp_opts & (1ull << name)));
		case TCP_MAXSEG: return put_int(v, l, 2048);   /* rdma-core's answer on iWARP */
		}
		break;
	case SOL_RDMA:
		switch (name) {
		case RDMA_SQSIZE: return put_int(v, l, (int)rs->sq_size);
		case RDMA_RQSIZE: return put_int(v, l, (int)rs->rq_size);
		case RDMA_INLINE: return put_int(v, l, (int)rs->sq_inline);
		case RDMA_IOMAPSIZE: return put_int(v, l, 0);
		}
		break;
	}
	return fail(ENOTSUP);
}

int rgetsockopt(int s, int level, int name, void *v, socklen_t *l)
{
	struct rs *rs = rs_get(s);
	int rc;

	if (rs == NULL)
		return -1;
	pthread_mutex_lock(&rs->lock);
	rc = getopt_locked(rs, level, name, v, l);
	pthread_mutex_unlock(&rs->lock);
	return rc;
}

int rfcntl(int s, int cmd, ...)
{
	struct rs *rs = rs_get(s);
	va_list ap;
	int rc = 0;

	if (rs == NULL)
		return -1;
	va_start(ap, cmd);
	pthread_mutex_lock(&rs->lock);
	if (cmd == F_GETFL)
		rc = rs->fd_flags | O_RDWR;
	else if (cmd == F_SETFL)
		rs->fd_flags = va_arg(ap, int) & O_NONBLOCK;
	else
		rc = fail(ENOTSUP);
	pthread_mutex_unlock(&rs->lock);
	va_end(ap);
	return rc;
}

/* ---- What uiwarp-stat shows. ---- */

static const char *const phase_name[] = {
	[P_INIT] = "init", [P_BOUND] = "bound", [P_LISTEN] = "listen", [P_ADDR] = "addr",
	[P_ROUTE] = "route", [P_CONNECT] = "connect", [P_ACCEPT] = "accept", [P_OPEN] = "open",
	[P_DOWN] = "down", [P_ERR] = "error", [P_CONNERR] = "connect-error",
};

/* Every rsocket that is open, one line each: its phase, and the credits and buffer room each
 * way (what a stalled stream waits for); "busy" when a call holds its lock. Called from the
 * progress thread with the API lock held, while a call may hold an rsocket's lock and wait
 * for the API lock: the locks are only tried here, never waited for. */
static void rs_status(FILE *f)
{
	if (pthread_mutex_trylock(&tab_lock) != 0) {
		fprintf(f, "rsockets busy\n");
		return;
	}
	for (int i = 0; i < tab_len; i++) {
		struct rs *rs = tab[i];

		if (rs == NULL)
			continue;
		if (pthread_mutex_trylock(&rs->lock) != 0) {
			fprintf(f, "rsocket %d busy\n", rs->fd);
			continue;
		}
		fprintf(f, "rsocket %d %s", rs->fd, phase_name[rs->phase]);
		if (rs->phase == P_OPEN)
			fprintf(f, "%s%s", rs->rd ? " rd" : "", rs->wr ? " wr" : "");
		if (rs->err != 0)
			fprintf(f, " err %d", rs->err);
		if (rs->target != NULL && rs->rmsg != NULL)   /* its endpoint is made */
			/* Sending: queue room, send buffer room, message credits left (sseq_comp
			 * minus sseq_no), the peer's buffer offered at the current target entry,
			 * control slots free. Receiving: unread messages and octets, buffer room not
			 * yet offered, messages read towards the next credit update. */
			fprintf(f, " sqe %d sbuf %u credits %u target %u ctrl %u unread %u/%" PRIu64
				   " rbuf %" PRId64 " rseq %u/%u\n",
				rs->sqe_avail, rs->sbuf_avail, (uint16_t)(rs->sseq_comp - rs->sseq_no),
				rs->target[rs->target_sge].length, rs->ctrl_max_seqno - rs->ctrl_seqno,
				(rs->rmsg_tail + rs->rmsg_cap - rs->rmsg_head) % rs->rmsg_cap, rs->rbytes,
				rs->rbuf_avail, rs->rseq_no, rs->rseq_comp);
		else
			fprintf(f, "\n");
		pthread_mutex_unlock(&rs->lock);
	}
	pthread_mutex_unlock(&tab_lock);
}

/* ---- Not provided. ---- */

static bool said_iomap;

off_t riomap(int s, void *b, size_t n, int prot, int f, off_t off)
{
	(void)s, (void)b, (void)n, (void)prot, (void)f, (void)off;
	refuse_once(&said_iomap, "iomapped buffers (riomap, riowrite) are not provided");
	return fail(ENOSYS);
}

int riounmap(int s, void *b, size_t n)
{
	(void)s, (void)b, (void)n;
	return fail(ENOSYS);
}

size_t riowrite(int s, const void *b, size_t n, off_t off, int f)
{
	(void)s, (void)b, (void)n, (void)off, (void)f;
	refuse_once(&said_iomap, "iomapped buffers (riomap, riowrite) are not provided");
	errno = ENOSYS;
	return 0;
}
