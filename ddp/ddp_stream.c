/* SPDX-License-Identifier: BSD-3-Clause */
/* A DDP stream (RFC 5041 §5): the untagged queues' MSN and MO state, the receive checks of
 * §7, and the data path MPA -> DDP -> ULP. */
#include <string.h>

#include "ddp.h"

void uiw_ddp_stream_init(struct uiw_ddp_stream *st, unsigned nq, const struct uiw_ddp_ulp *ulp,
			 void *arg)
{
	memset(st, 0, sizeof(*st));
	st->nq = nq < UIW_DDP_QUEUES_MAX ? nq : UIW_DDP_QUEUES_MAX;
	st->ulp = ulp;
	st->ulp_arg = arg;
}

static int stream_ulpdu(void *arg, struct uiw_mpa_conn *c, const struct uiw_mpa_ulpdu *u)
{
	struct uiw_ddp_stream *st = arg;
	struct uiw_ddp_seg s;
	enum uiw_ddp_parse pr = uiw_ddp_parse(u, &s);

	(void)c;
	return st->ulp->segment(st->ulp_arg, u, &s, pr);
}

static void stream_writable(void *arg, struct uiw_mpa_conn *c)
{
	struct uiw_ddp_stream *st = arg;

	(void)c;
	if (st->ulp->writable != NULL)
		st->ulp->writable(st->ulp_arg);
}

const struct uiw_mpa_ulp uiw_ddp_mpa_ulp = { .ulpdu = stream_ulpdu, .writable = stream_writable };

void uiw_ddp_stream_attach(struct uiw_ddp_stream *st, struct uiw_mpa_conn *c)
{
	st->conn = c;
	st->tx.off = 0;
	st->tx.lend = NULL;
	/* RFC 5041 §5.3: the first message of every queue carries MSN 1. */
	for (unsigned i = 0; i < st->nq; i++)
		st->q[i] = (struct uiw_ddp_queue){ .rx_msn = 1, .rx_mo = 0, .tx_msn = 1 };
	if (c != NULL)
		uiw_mpa_bind_ulp(c, &uiw_ddp_mpa_ulp, st);
}

void uiw_ddp_stream_detach(struct uiw_ddp_stream *st)
{
	if (st->conn != NULL)
		uiw_mpa_bind_ulp(st->conn, NULL, NULL);
	st->conn = NULL;
}

void uiw_ddp_stream_rtr(struct uiw_ddp_stream *st, uint32_t qn, bool ours)
{
	if (qn < st->nq)
		*(ours ? &st->q[qn].tx_msn : &st->q[qn].rx_msn) = 2;
}

uint8_t uiw_ddp_tagged_code(enum uiw_stag_check r)
{
	switch (r) {
	case UIW_STAG_BOUNDS:
		return UIW_DDP_TAG_BOUNDS;
	case UIW_STAG_PD:
		return UIW_DDP_TAG_STAG_STREAM;
	case UIW_STAG_WRAP:
		return UIW_DDP_TAG_TO_WRAP;
	default:
		return UIW_DDP_TAG_INVALID_STAG;
	}
}

int uiw_ddp_stream_send_tagged(struct uiw_ddp_stream *st, uint8_t rdmap, uint32_t stag,
			       uint64_t to, const struct uiw_sge *sg, unsigned n)
{
	return uiw_ddp_send_tagged(st->conn, &st->tx, rdmap, stag, to, sg, n);
}

int uiw_ddp_stream_send_untagged(struct uiw_ddp_stream *st, uint8_t rdmap, uint32_t rsvd_ulp,
				 uint32_t qn, const void *body, uint32_t body_len,
				 const struct uiw_sge *sg, unsigned n)
{
	int rc = uiw_ddp_send_untagged(st->conn, &st->tx, rdmap, rsvd_ulp, qn, st->q[qn].tx_msn,
				       body, body_len, sg, n);

	if (rc == 1)
		st->q[qn].tx_msn++;
	return rc;
}
