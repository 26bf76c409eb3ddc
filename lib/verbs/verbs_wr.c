/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The extended send API: ibv_create_qp_ex() with IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
 * ibv_qp_to_qp_ex(), and the ibv_wr_* calls between ibv_wr_start() and ibv_wr_complete()
 * (rdma-core's ibv_wr_post(3)). The work requests a batch builds are kept in the QP's batch
 * and go to the send queue together at ibv_wr_complete(), through the same path as
 * ibv_post_send(), or not at all: a batch with an error (a call iWARP lacks, too many SGEs,
 * inline data beyond the QP's room, a full send queue) posts nothing and reports it there.
 *
 * The operations are the iWARP ones (RFC 5040 §4): Send, Send with Invalidate (either with
 * IBV_SEND_SOLICITED in wr_flags for the Solicited Event forms), RDMA Write and RDMA Read;
 * and RFC 7306's RDMA Write with immediate data and atomics, which post only on a QP whose
 * peer announced them (ibv_post_send()). Send with immediate data, memory windows, local
 * invalidation and UD/XRC addressing do not exist here; a QP asking for them is refused.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "verbs_internal.h"

#define SUPPORTED_OPS                                                                       \
	(IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_INV | IBV_QP_EX_WITH_RDMA_WRITE |    \
	 IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |                       \
	 IBV_QP_EX_WITH_SEND_WITH_IMM |                                                        \
	 IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD | IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP)

/* One work request of a batch, with room for its SGEs and inline bytes. */
struct wr_stage {
	struct ibv_send_wr wr;
	struct ibv_sge sge[UIW_MAX_SGE];
	uint8_t inl[UIW_MAX_INLINE];
};

struct uiw_wr_batch {
	unsigned n, cap;   /* stages in use, stages allocated */
	int err;           /* the first error of this batch, reported by wr_complete */
	struct wr_stage *s;
};

static struct uiw_qp_v *qpv(struct ibv_qp_ex *x)
{
	return (struct uiw_qp_v *)(void *)x;
}

static void batch_fail(struct uiw_wr_batch *b, int err)
{
	if (b->err == 0)
		b->err = err;
}

/* The work request the set-up calls apply to, or NULL (none begun, or the batch failed). */
static struct wr_stage *current(struct ibv_qp_ex *x)
{
	struct uiw_wr_batch *b = qpv(x)->batch;

	if (b->err != 0)
		return NULL;
	if (b->n == 0) {
		batch_fail(b, EINVAL);   /* a set-up call before any work request */
		return NULL;
	}
	return &b->s[b->n - 1];
}

/* Begins a work request: wr_id and wr_flags as they are now (ibv_wr_post(3)). */
static struct wr_stage *begin(struct ibv_qp_ex *x, enum ibv_wr_opcode op)
{
	struct uiw_wr_batch *b = qpv(x)->batch;
	uint32_t max = qpv(x)->sq->cap;   /* no batch can be longer than the send queue */
	struct wr_stage *s;

	if (b->err != 0)
		return NULL;
	if (b->n == max) {
		batch_fail(b, ENOMEM);   /* longer than the send queue */
		return NULL;
	}
	if (b->n == b->cap) {
		unsigned cap = b->cap ? b->cap * 2 : 16;
		struct wr_stage *more;

		cap = cap > max ? max : cap;
		more = realloc(b->s, (size_t)cap * sizeof(*more));
		if (more == NULL) {
			batch_fail(b, ENOMEM);
			return NULL;
		}
		b->s = more;
		b->cap = cap;
	}
	s = &b->s[b->n++];
	s->wr = (struct ibv_send_wr){ .wr_id = x->wr_id, .opcode = op, .sg_list = s->sge,
				      .send_flags = x->wr_flags & ~(unsigned)IBV_SEND_INLINE };
	return s;
}

static void wr_send(struct ibv_qp_ex *x)
{
	begin(x, IBV_WR_SEND);
}

static void wr_send_imm(struct ibv_qp_ex *x, __be32 imm_data)
{
	struct wr_stage *s = begin(x, IBV_WR_SEND_WITH_IMM);

	if (s != NULL)
		s->wr.imm_data = imm_data;
}

static void wr_send_inv(struct ibv_qp_ex *x, uint32_t invalidate_rkey)
{
	struct wr_stage *s = begin(x, IBV_WR_SEND_WITH_INV);

	if (s != NULL)
		s->wr.invalidate_rkey = invalidate_rkey;
}

static void wr_rdma(struct ibv_qp_ex *x, enum ibv_wr_opcode op, uint32_t rkey, uint64_t addr)
{
	struct wr_stage *s = begin(x, op);

	if (s != NULL) {
		s->wr.wr.rdma.rkey = rkey;
		s->wr.wr.rdma.remote_addr = addr;
	}
}

static void wr_rdma_write(struct ibv_qp_ex *x, uint32_t rkey, uint64_t remote_addr)
{
	wr_rdma(x, IBV_WR_RDMA_WRITE, rkey, remote_addr);
}

static void wr_rdma_read(struct ibv_qp_ex *x, uint32_t rkey, uint64_t remote_addr)
{
	wr_rdma(x, IBV_WR_RDMA_READ, rkey, remote_addr);
}

static void wr_rdma_write_imm(struct ibv_qp_ex *x, uint32_t rkey, uint64_t remote_addr,
			      __be32 imm_data)
{
	wr_rdma(x, IBV_WR_RDMA_WRITE_WITH_IMM, rkey, remote_addr);
	if (current(x) != NULL)
		current(x)->wr.imm_data = imm_data;
}

static void wr_atomic(struct ibv_qp_ex *x, enum ibv_wr_opcode op, uint32_t rkey,
		      uint64_t remote_addr, uint64_t compare_add, uint64_t swap)
{
	struct wr_stage *s = begin(x, op);

	if (s != NULL)
		s->wr.wr.atomic = (__typeof__(s->wr.wr.atomic)){ .remote_addr = remote_addr,
								 .compare_add = compare_add,
								 .swap = swap, .rkey = rkey };
}

static void wr_atomic_fetch_add(struct ibv_qp_ex *x, uint32_t rkey, uint64_t remote_addr,
				uint64_t add)
{
	wr_atomic(x, IBV_WR_ATOMIC_FETCH_AND_ADD, rkey, remote_addr, add, 0);
}

static void wr_atomic_cmp_swp(struct ibv_qp_ex *x, uint32_t rkey, uint64_t remote_addr,
			      uint64_t compare, uint64_t swap)
{
	wr_atomic(x, IBV_WR_ATOMIC_CMP_AND_SWP, rkey, remote_addr, compare, swap);
}

static void wr_set_sge_list(struct ibv_qp_ex *x, size_t n, const struct ibv_sge *list)
{
	struct wr_stage *s = current(x);

	if (s == NULL)
		return;
	if (n > UIW_MAX_SGE) {
		batch_fail(qpv(x)->batch, EINVAL);
		return;
	}
	if (n > 0)
		memcpy(s->sge, list, n * sizeof(*list));
	s->wr.num_sge = (int)n;
	s->wr.send_flags &= ~(unsigned)IBV_SEND_INLINE;
}

static void wr_set_sge(struct ibv_qp_ex *x, uint32_t lkey, uint64_t addr, uint32_t length)
{
	struct ibv_sge g = { .addr = addr, .length = length, .lkey = lkey };

	wr_set_sge_list(x, 1, &g);
}

/* The bytes are copied now: the program may reuse its buffers when the call returns. */
static void wr_set_inline_data_list(struct ibv_qp_ex *x, size_t n, const struct ibv_data_buf *bufs)
{
	struct wr_stage *s = current(x);
	size_t len = 0;

	if (s == NULL)
		return;
	for (size_t i = 0; i < n; i++) {
		if (bufs[i].length > UIW_MAX_INLINE - len) {
			batch_fail(qpv(x)->batch, EINVAL);
			return;
		}
		if (bufs[i].length > 0)
			memcpy(s->inl + len, bufs[i].addr, bufs[i].length);
		len += bufs[i].length;
	}
	s->sge[0] = (struct ibv_sge){ .addr = (uintptr_t)s->inl, .length = (uint32_t)len };
	s->wr.num_sge = len > 0 ? 1 : 0;
	s->wr.send_flags |= IBV_SEND_INLINE;
}

static void wr_set_inline_data(struct ibv_qp_ex *x, void *addr, size_t length)
{
	struct ibv_data_buf b = { .addr = addr, .length = length };

	wr_set_inline_data_list(x, 1, &b);
}

static void wr_start(struct ibv_qp_ex *x)
{
	struct uiw_wr_batch *b = qpv(x)->batch;

	b->n = 0;
	b->err = 0;
}

static void wr_abort(struct ibv_qp_ex *x)
{
	wr_start(x);
}

static int wr_complete(struct ibv_qp_ex *x)
{
	struct uiw_qp_v *q = qpv(x);
	struct uiw_wr_batch *b = q->batch;
	struct ibv_send_wr *bad = NULL;
	int rc = b->err;

	if (rc == 0 && b->n > 0) {
		for (unsigned i = 0; i + 1 < b->n; i++)
			b->s[i].wr.next = &b->s[i + 1].wr;
		b->s[b->n - 1].wr.next = NULL;
		rc = uiw_verbs_post_send_all(&q->qp, &b->s[0].wr, &bad);
	}
	b->n = 0;
	b->err = 0;
	return rc;
}

struct ibv_qp *uiw_create_qp_ex(struct ibv_context *context, struct ibv_qp_init_attr_ex *attr)
{
	UIW_API_LOCK();
	const uint32_t known = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	struct uiw_wr_batch *b;
	struct uiw_qp_v *q;
	struct ibv_qp *qp;

	if ((attr->comp_mask & ~known) != 0 || !(attr->comp_mask & IBV_QP_INIT_ATTR_PD) ||
	    attr->pd == NULL || attr->pd->context != context ||
	    ((attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) &&
	     (attr->send_ops_flags & ~(uint64_t)SUPPORTED_OPS) != 0)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	/* The fields ibv_create_qp() reads lie first in both structures (verbs.h relies on it). */
	qp = ibv_create_qp(attr->pd, (struct ibv_qp_init_attr *)attr);
	if (qp == NULL || !(attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS))
		return qp;
	q = (struct uiw_qp_v *)qp;
	b = calloc(1, sizeof(*b));
	if (b == NULL) {
		ibv_destroy_qp(qp);
		errno = ENOMEM;
		return NULL;
	}
	q->batch = b;
	q->qpx.comp_mask = 0;
	if (attr->send_ops_flags & IBV_QP_EX_WITH_SEND)
		q->qpx.wr_send = wr_send;
	if (attr->send_ops_flags & IBV_QP_EX_WITH_SEND_WITH_IMM)
		q->qpx.wr_send_imm = wr_send_imm;
	if (attr->send_ops_flags & IBV_QP_EX_WITH_SEND_WITH_INV)
		q->qpx.wr_send_inv = wr_send_inv;
	if (attr->send_ops_flags & IBV_QP_EX_WITH_RDMA_WRITE)
		q->qpx.wr_rdma_write = wr_rdma_write;
	if (attr->send_ops_flags & IBV_QP_EX_WITH_RDMA_READ)
		q->qpx.wr_rdma_read = wr_rdma_read;
	if (attr->send_ops_flags & IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM)
		q->qpx.wr_rdma_write_imm = wr_rdma_write_imm;
	if (attr->send_ops_flags & IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD)
		q->qpx.wr_atomic_fetch_add = wr_atomic_fetch_add;
	if (attr->send_ops_flags & IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP)
		q->qpx.wr_atomic_cmp_swp = wr_atomic_cmp_swp;
	q->qpx.wr_set_sge = wr_set_sge;
	q->qpx.wr_set_sge_list = wr_set_sge_list;
	q->qpx.wr_set_inline_data = wr_set_inline_data;
	q->qpx.wr_set_inline_data_list = wr_set_inline_data_list;
	q->qpx.wr_start = wr_start;
	q->qpx.wr_complete = wr_complete;
	q->qpx.wr_abort = wr_abort;
	return qp;
}

struct ibv_qp_ex *ibv_qp_to_qp_ex(struct ibv_qp *qp)
{
	struct uiw_qp_v *q = (struct uiw_qp_v *)qp;

	if (q->batch == NULL) {   /* not made with IBV_QP_INIT_ATTR_SEND_OPS_FLAGS */
		errno = EOPNOTSUPP;
		return NULL;
	}
	return &q->qpx;
}

void uiw_wr_batch_free(struct uiw_qp_v *q)
{
	if (q->batch != NULL)
		free(q->batch->s);
	free(q->batch);
	q->batch = NULL;
}
