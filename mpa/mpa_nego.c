/* SPDX-License-Identifier: BSD-3-Clause */
/* MPA set-up: Request, Reply, and the peer-to-peer RTR (RFC 5044 §7.1, RFC 6581). */
#include <errno.h>
#include <string.h>

#include "ddp_wire.h"
#include "mpa_internal.h"
#include "rdmap_wire.h"
#include "uiw_mbuf.h"
#include "uiw_time.h"

static uint16_t min16(uint16_t a, uint16_t b) { return a < b ? a : b; }
static uint16_t max16(uint16_t a, uint16_t b) { return a > b ? a : b; }

/*
 * Gathers a Request or Reply from @p m into c->rr. @return the parse result; *rest gets
 * the octets after a complete frame (or NULL).
 */
static enum uiw_mpa_parse rr_take(struct uiw_mpa_conn *c, struct rte_mbuf *m, bool reply,
				  uint16_t pd_max, struct uiw_mpa_rr_info *info,
				  struct rte_mbuf **rest)
{
	enum uiw_mpa_parse r;
	size_t used;

	for (;;) {
		r = uiw_mpa_rr_parse(c->rr, c->rr_len, reply, pd_max, info, &used);
		if (r != UIW_MPA_PARSE_NEED_MORE || m == NULL || m->pkt_len == 0)
			break;
		uint32_t need = c->rr_len < UIW_MPA_RR_LEN
			? UIW_MPA_RR_LEN - c->rr_len
			: UIW_MPA_RR_LEN + uiw_mpa_pd_len((const struct uiw_mpa_rr *)(const void *)c->rr) - c->rr_len;
		uint32_t k = need < m->pkt_len ? need : m->pkt_len;
		const void *src = rte_pktmbuf_read(m, 0, k, c->rr + c->rr_len);

		if (src != c->rr + c->rr_len)
			memcpy(c->rr + c->rr_len, src, k);
		c->rr_len += k;
		m = uiw_mbuf_cut_front(m, k);
	}
	if (m != NULL && (r != UIW_MPA_PARSE_OK || m->pkt_len == 0)) {
		rte_pktmbuf_free(m);
		m = NULL;
	}
	*rest = m;
	return r;
}

static void count_parse_error(struct uiw_mpa *m, enum uiw_mpa_parse r)
{
	mpa_count(m, r == UIW_MPA_PARSE_BAD_KEY ? UIW_MPA_C_bad_key
		  : r == UIW_MPA_PARSE_BAD_REV ? UIW_MPA_C_bad_rev : UIW_MPA_C_bad_pd_len);
}

static int send_rr(struct uiw_mpa_conn *c, const struct uiw_mpa_rr_info *in)
{
	uint8_t buf[UIW_MPA_RR_LEN + UIW_MPA_PD_MAX];
	size_t len = uiw_mpa_rr_build(in, buf, sizeof(buf));

	return len == 0 ? -EINVAL : uiw_mpa_send_ctrl(c, buf, (uint32_t)len);
}

void uiw_mpa_send_request(struct uiw_mpa_conn *c)
{
	const struct uiw_mpa_params *p = &c->p;
	struct uiw_mpa_rr_info in = {
		.markers = p->markers, .crc = p->crc, .rev = p->rev,
		.enhanced = p->rev == UIW_MPA_REV2, .ird = p->ird, .ord = p->ord,
		.peer_to_peer = p->p2p && p->rev == UIW_MPA_REV2,
		.pd = p->pd, .pd_len = p->pd_len, .ext = p->ext,
	};

	if (in.peer_to_peer) {
		in.rtr_zero_send = (p->rtr & UIW_MPA_RTR_SEND) != 0;
		in.rtr_write = (p->rtr & UIW_MPA_RTR_WRITE) != 0;
		in.rtr_read = (p->rtr & UIW_MPA_RTR_READ) != 0;
	}
	if (send_rr(c, &in) != 0) {
		uiw_mpa_fail(c, -ENOMEM, "cannot send the MPA Request");
		return;
	}
	mpa_count(c->m, UIW_MPA_C_req_tx);
	c->state = MPA_S_WAIT_REPLY;
}

static unsigned rtr_mask(const struct uiw_mpa_rr_info *i)
{
	return (i->rtr_zero_send ? UIW_MPA_RTR_SEND : 0u) | (i->rtr_write ? UIW_MPA_RTR_WRITE : 0u) |
	       (i->rtr_read ? UIW_MPA_RTR_READ : 0u);
}

/* The RTR frame (WIRE.md §1.5): STag 1 as siw sends, since some hardware refuses STag 0. */
static int send_rtr(struct uiw_mpa_conn *c)
{
	struct {
		struct uiw_ddp_untagged h;
		struct uiw_rdmap_read_req rr;
	} __attribute__((packed)) rd;
	struct uiw_ddp_tagged wr;
	struct uiw_mpa_iov iov = { &rd, sizeof(rd.h) };

	switch (c->info.rtr) {
	case UIW_MPA_RTR_WRITE:
		uiw_ddp_tagged_set(&wr, UIW_DDP_T | UIW_DDP_L | UIW_DDP_VERSION, uiw_rdmap_ctrl(UIW_RDMAP_WRITE), 1, 0);
		iov = (struct uiw_mpa_iov){ &wr, sizeof(wr) };
		break;
	case UIW_MPA_RTR_READ:
		uiw_ddp_untagged_set(&rd.h, UIW_DDP_L | UIW_DDP_VERSION, uiw_rdmap_ctrl(UIW_RDMAP_READ_REQ), 0,
				     UIW_DDP_QN_READ_REQ, 1, 0);
		uiw_rdmap_read_req_set(&rd.rr, 0, 0, 0, 1, 0);
		iov.len = sizeof(rd);
		c->swallow_read_resp = true;
		break;
	default:
		uiw_ddp_untagged_set(&rd.h, UIW_DDP_L | UIW_DDP_VERSION, uiw_rdmap_ctrl(UIW_RDMAP_SEND), 0,
				     UIW_DDP_QN_SEND, 1, 0);
		break;
	}
	mpa_count(c->m, UIW_MPA_C_rtr_tx);
	/* TCP without room (busy connections hold the engine's send budget): the RTR waits
	 * held, first in line, and goes with the next try (release_held()), rather than the
	 * connection failing. */
	if (c->release_at == 0 &&
	    uiw_mpa_fpdu_wire_len(c->tx_pos, (uint32_t)iov.len, c->info.markers_tx) >
		    uiw_tcp_send_space(c->tcp)) {
		c->release_at = mpa_due(c, uiw_now_ns() + MPA_RELEASE_RETRY_NS);
		c->release_retry = true;
	}
	return uiw_mpa_send_fpdu(c, &iov, 1, 1, NULL, c->release_at != 0);
}

/* Initiator: what the Reply settles (RFC 5044 §7.1.2, RFC 6581 §5-§6). @return the LLP
 * Terminate code for a Reply we cannot take, or 0. */
static uint8_t settle_reply(struct uiw_mpa_conn *c, const struct uiw_mpa_rr_info *rep,
			    const char **why)
{
	const struct uiw_mpa_params *p = &c->p;
	struct uiw_mpa_info *n = &c->info;

	n->rev = rep->rev;
	n->markers_tx = rep->markers;
	n->markers_rx = p->markers;
	n->crc = p->crc || rep->crc;
	n->ird = p->ird;
	n->ord = p->ord;
	if (rep->rev > p->rev) {
		*why = "Reply raised the revision";
		return UIW_TERM_MPA_BAD_RR;
	}
	if (rep->markers && !p->markers_ok) {
		*why = "Reply asks for Markers and mpa_markers_ok is 0";
		return UIW_TERM_MPA_BAD_RR;
	}
	if (!rep->enhanced)
		return 0;
	if (rep->ord > UIW_MPA_IRD_ORD_MAX) {
		*why = "Reply's ORD is above the IRD this stack can serve";
		return UIW_TERM_MPA_INSUFF_IRD;
	}
	n->ord = min16(p->ord, rep->ird);
	n->ird = max16(p->ird, rep->ord);
	if (p->p2p && rep->peer_to_peer) {
		unsigned pick = rtr_mask(rep);

		/* RFC 6581 §6: exactly one RTR type, and one we offered. */
		if (pick == 0 || (pick & (pick - 1)) != 0 || (pick & p->rtr) == 0) {
			*why = "Reply picks no RTR type we offered";
			return UIW_TERM_MPA_NO_RTR;
		}
		n->p2p = true;
		n->rtr = (enum uiw_mpa_rtr)pick;
	}
	return 0;
}

struct rte_mbuf *uiw_mpa_rx_reply(struct uiw_mpa_conn *c, struct rte_mbuf *m)
{
	struct uiw_mpa_rr_info rep;
	struct rte_mbuf *rest;
	enum uiw_mpa_parse r = rr_take(c, m, true, c->p.pd_max, &rep, &rest);
	const char *why = NULL;
	uint8_t code;

	if (r == UIW_MPA_PARSE_NEED_MORE)
		return NULL;
	c->info.crc = c->p.crc;   /* for a Terminate before anything is settled */
	if (r != UIW_MPA_PARSE_OK) {
		count_parse_error(c->m, r);
		uiw_mpa_terminate_llp(c, UIW_TERM_MPA_BAD_RR, uiw_mpa_parse_name(r));
		return NULL;
	}
	if (rep.reject) {
		mpa_count(c->m, UIW_MPA_C_reject_rx);
		uiw_mpa_set_reason(c, -ECONNREFUSED, "rejected by the responder (R=1, %u octets of private data)",
			       rep.pd_len);
		if (c->ops != NULL && c->ops->rejected != NULL)
			c->ops->rejected(c->user, c, rep.pd, rep.pd_len);
		if (c->state == MPA_S_WAIT_REPLY)
			uiw_mpa_close(c);
		rte_pktmbuf_free(rest);
		return NULL;
	}
	mpa_count(c->m, UIW_MPA_C_rep_rx);
	code = settle_reply(c, &rep, &why);
	if (code != 0) {
		mpa_count(c->m, UIW_MPA_C_bad_reply);
		uiw_mpa_terminate_llp(c, code, why);
		rte_pktmbuf_free(rest);
		return NULL;
	}
	c->info.pd = rep.pd;
	c->info.pd_len = rep.pd_len;
	c->info.ext = c->p.ext & rep.ext;
	c->deadline = 0;   /* the Reply came: the connect timer is done */
	uiw_mpa_start_full(c);
	/* The delay is for siw, which may not read the stream until after its Reply
	 * (docs/MPA.md). A Reply with uiwarp's extension trailer came from uiwarp, which takes
	 * FPDUs from the moment it has sent it (RFC 5044 §7.1.2 asks no more): its first FPDUs
	 * go at once, 10 ms sooner. */
	if (c->p.first_delay_us > 0 && c->info.ext == 0)
		c->release_at = mpa_due(c, uiw_now_ns() + (uint64_t)c->p.first_delay_us * 1000u);
	if (c->info.p2p && send_rtr(c) != 0) {
		uiw_mpa_fail(c, -ENOMEM, "cannot send the RTR");
		rte_pktmbuf_free(rest);
		return NULL;
	}
	c->state = MPA_S_FULL;
	uiw_mpa_deliver_established(c);
	return rest;
}

struct rte_mbuf *uiw_mpa_rx_request(struct uiw_mpa_conn *c, struct rte_mbuf *m)
{
	struct rte_mbuf *rest;
	enum uiw_mpa_parse r = rr_take(c, m, false, c->p.pd_max, &c->req, &rest);

	if (r == UIW_MPA_PARSE_NEED_MORE)
		return NULL;
	if (r != UIW_MPA_PARSE_OK) {
		count_parse_error(c->m, r);
		if (r == UIW_MPA_PARSE_BAD_KEY) {
			/* Not MPA at all: nothing to answer in. */
			uiw_mpa_abort(c, "Request with a wrong key");
			return NULL;
		}
		/* Answer in MPA terms where the frame was MPA (RFC 5044 §7.1.2): a Reply with
		 * R=1 and our own revision, then close. */
		uint8_t rev = r == UIW_MPA_PARSE_BAD_REV ? UIW_MPA_REV2 : c->rr[17];

		c->req = (struct uiw_mpa_rr_info){
			.rev = rev, .crc = (c->rr[16] & UIW_MPA_FLAG_C) != 0,
			.enhanced = rev == UIW_MPA_REV2 &&
				    (r == UIW_MPA_PARSE_BAD_REV || (c->rr[16] & UIW_MPA_FLAG_ENHANCED)),
		};
		uiw_mpa_set_reason(c, -EPROTO, "bad Request: %s", uiw_mpa_parse_name(r));
		uiw_mpa_reject(c, NULL, 0);
		return NULL;
	}
	if (rest != NULL) {
		/* RFC 5044 §7.1.2: no FPDU before the Reply (siw refuses "extra data" too). */
		mpa_count(c->m, UIW_MPA_C_early_data);
		rte_pktmbuf_free(rest);
		uiw_mpa_abort(c, "octets after the Request before our Reply");
		return NULL;
	}
	mpa_count(c->m, UIW_MPA_C_req_rx);
	/* The application answers within the time an initiator waits for the Reply (its
	 * own mpa_reply_timeout_ms; siw's 10 s); after that the peer has given up anyway. */
	c->deadline = mpa_due(c, uiw_now_ns() + (uint64_t)c->p.timeout_ms * UIW_NS_PER_MS);
	c->state = MPA_S_WAIT_ACCEPT;
	if (c->req.markers && !c->p.markers_ok) {
		/* As siw: a Reply with R=1 and M clear (WIRE.md §1.5). */
		mpa_count(c->m, UIW_MPA_C_markers_refused);
		uiw_mpa_set_reason(c, -ECONNREFUSED, "Request asks for Markers; mpa_markers_ok is 0");
		uiw_mpa_reject(c, NULL, 0);
		return NULL;
	}
	if (c->ops != NULL && c->ops->request != NULL)
		c->ops->request(c->user, c, &c->req);
	else
		uiw_mpa_accept(c, &c->p, c->ops, c->user);
	return NULL;
}

/* Responder: what the Reply says, from the Request and our policy @p p. */
static void settle_request(struct uiw_mpa_conn *c, const struct uiw_mpa_params *p)
{
	const struct uiw_mpa_rr_info *q = &c->req;
	struct uiw_mpa_info *n = &c->info;

	n->rev = q->rev < p->rev ? (q->rev == 0 ? UIW_MPA_REV1 : q->rev) : p->rev;
	n->markers_tx = q->markers;
	n->markers_rx = p->markers;
	n->crc = q->crc || p->crc;   /* RFC 5044 §7.1.2: CRC if either side asks */
	n->ird = p->ird;
	n->ord = p->ord;
	if (n->rev != UIW_MPA_REV2 || !q->enhanced)
		return;
	n->ord = min16(p->ord, q->ird);
	n->ird = min16(max16(p->ird, q->ord), UIW_MPA_IRD_ORD_MAX);
	if (!q->peer_to_peer)
		return;
	/* RFC 6581 §9.2: echo A; pick one offered type we take (Write, then Read, then Send),
	 * else propose our own and let the initiator decide. */
	static const enum uiw_mpa_rtr order[] = { UIW_MPA_RTR_WRITE, UIW_MPA_RTR_READ, UIW_MPA_RTR_SEND };
	unsigned offered = rtr_mask(q);

	n->p2p = true;
	n->rtr = UIW_MPA_RTR_NONE;
	for (unsigned i = 0; i < 3 && n->rtr == UIW_MPA_RTR_NONE; i++)
		if (offered & p->rtr & order[i])
			n->rtr = order[i];
	for (unsigned i = 0; i < 3 && n->rtr == UIW_MPA_RTR_NONE; i++)
		if (p->rtr & order[i])
			n->rtr = order[i];
	c->expect_rtr = true;
}

int uiw_mpa_send_reply(struct uiw_mpa_conn *c, const struct uiw_mpa_params *p)
{
	struct uiw_mpa_info *n = &c->info;
	struct uiw_mpa_rr_info out;

	settle_request(c, p);
	out = (struct uiw_mpa_rr_info){
		.reply = true, .markers = n->markers_rx, .crc = n->crc, .rev = n->rev,
		.enhanced = n->rev == UIW_MPA_REV2 && c->req.enhanced, .ird = n->ird, .ord = n->ord,
		.peer_to_peer = n->p2p, .rtr_zero_send = n->rtr == UIW_MPA_RTR_SEND,
		.rtr_write = n->rtr == UIW_MPA_RTR_WRITE, .rtr_read = n->rtr == UIW_MPA_RTR_READ,
		.pd = p->pd, .pd_len = p->pd_len, .ext = p->ext & c->req.ext,
	};
	if (p->pd_len + (out.enhanced ? UIW_MPA_V2_LEN : 0) > UIW_MPA_PD_MAX)
		return -EINVAL;
	n->ext = uiw_mpa_rr_ext_room(&out) ? out.ext : 0;
	if (send_rr(c, &out) != 0) {
		uiw_mpa_fail(c, -ENOMEM, "cannot send the MPA Reply");
		return 0;
	}
	mpa_count(c->m, UIW_MPA_C_rep_tx);
	n->pd = c->req.pd;
	n->pd_len = c->req.pd_len;
	uiw_mpa_start_full(c);
	uiw_mpa_unpend(c);
	c->state = MPA_S_WAIT_FIRST;
	c->deadline = 0;
	if (c->expect_rtr)
		c->deadline = mpa_due(c, uiw_now_ns() +
				      (uint64_t)c->p.request_timeout_ms * UIW_NS_PER_MS);
	else
		uiw_mpa_deliver_established(c);
	return 0;
}

int uiw_mpa_reject(struct uiw_mpa_conn *c, const uint8_t *pd, uint16_t pd_len)
{
	const struct uiw_mpa_rr_info *q = &c->req;
	struct uiw_mpa_rr_info out = {
		.reply = true, .reject = true, .crc = q->crc,
		.rev = q->rev == UIW_MPA_REV2 ? UIW_MPA_REV2 : UIW_MPA_REV1,
		.enhanced = q->rev == UIW_MPA_REV2 && q->enhanced, .pd = pd, .pd_len = pd_len,
	};

	if (c->state != MPA_S_WAIT_ACCEPT && c->state != MPA_S_WAIT_REQUEST)
		return -ENOTCONN;
	if (pd_len + (out.enhanced ? UIW_MPA_V2_LEN : 0) > UIW_MPA_PD_MAX)
		return -EINVAL;
	uiw_mpa_unpend(c);
	if (send_rr(c, &out) == 0)
		mpa_count(c->m, UIW_MPA_C_reject_tx);
	if (c->err == 0)
		uiw_mpa_set_reason(c, -ECONNREFUSED, "Request rejected (R=1)");
	uiw_mpa_close(c);
	return 0;
}

static uint32_t ulpdu_head(const struct uiw_mpa_ulpdu *u, void *buf, uint32_t cap)
{
	return (uint32_t)uiw_mpa_ulpdu_copy(u, 0, buf, cap);
}

/* Responder in peer-to-peer mode: the first FPDU must be the RTR agreed on. */
bool uiw_mpa_rtr_take(struct uiw_mpa_conn *c, const struct uiw_mpa_ulpdu *u)
{
	struct {
		struct uiw_ddp_untagged h;
		struct uiw_rdmap_read_req rr;
	} __attribute__((packed)) rd;
	const struct uiw_ddp_tagged *t = (const void *)&rd;
	uint32_t got = ulpdu_head(u, &rd, sizeof(rd));
	uint8_t op = rd.h.rdmap & UIW_RDMAP_OPCODE_MASK;
	bool tagged = got >= 2 && (rd.h.ctrl & UIW_DDP_T);
	bool ok = false;

	switch (c->info.rtr) {
	case UIW_MPA_RTR_WRITE:
		ok = u->len == sizeof(*t) && tagged && op == UIW_RDMAP_WRITE;
		break;
	case UIW_MPA_RTR_READ:
		ok = u->len == sizeof(rd) && !tagged && op == UIW_RDMAP_READ_REQ &&
		     uiw_ddp_qn(&rd.h) == UIW_DDP_QN_READ_REQ && uiw_ddp_msn(&rd.h) == 1 &&
		     uiw_rdmap_rr_size(&rd.rr) == 0;
		break;
	default:
		ok = u->len == sizeof(rd.h) && !tagged && op == UIW_RDMAP_SEND &&
		     uiw_ddp_qn(&rd.h) == UIW_DDP_QN_SEND && uiw_ddp_msn(&rd.h) == 1;
		break;
	}
	if (!ok) {
		mpa_count(c->m, UIW_MPA_C_rtr_bad);
		uiw_mpa_terminate_llp(c, UIW_TERM_MPA_NO_RTR, "first FPDU is not the agreed RTR");
		return false;
	}
	mpa_count(c->m, UIW_MPA_C_rtr_rx);
	c->expect_rtr = false;
	c->deadline = 0;
	c->state = MPA_S_FULL;
	if (c->info.rtr == UIW_MPA_RTR_READ) {
		/* Answer the Read RTR with its empty Read Response (RFC 5040 §4.5). */
		struct uiw_ddp_tagged resp;
		struct uiw_mpa_iov iov = { &resp, sizeof(resp) };

		uiw_ddp_tagged_set(&resp, UIW_DDP_T | UIW_DDP_L | UIW_DDP_VERSION, uiw_rdmap_ctrl(UIW_RDMAP_READ_RESP),
				   uiw_rdmap_rr_sink_stag(&rd.rr), uiw_rdmap_rr_sink_to(&rd.rr));
		if (uiw_mpa_send_fpdu(c, &iov, 1, 1, NULL, false) != 0) {
			uiw_mpa_fail(c, -ENOMEM, "cannot answer the Read RTR");
			return false;
		}
	}
	uiw_mpa_deliver_established(c);
	return true;
}

/* Initiator after a Read RTR: the responder's empty Read Response is MPA's, not DDP's. */
bool uiw_mpa_read_resp_take(struct uiw_mpa_conn *c, const struct uiw_mpa_ulpdu *u)
{
	struct uiw_ddp_tagged t;

	if (u->len != sizeof(t) || ulpdu_head(u, &t, sizeof(t)) != sizeof(t))
		return false;
	if (!(t.ctrl & UIW_DDP_T) || (t.rdmap & UIW_RDMAP_OPCODE_MASK) != UIW_RDMAP_READ_RESP)
		return false;
	c->swallow_read_resp = false;
	return true;
}
