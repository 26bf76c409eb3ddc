/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Every Terminate a peer can cause with a crafted segment (RFC 5040 §4.8, RFC 5041 §7,
 * WIRE.md §2.3): a raw MPA peer on A sends one ULPDU to a QP on B; B must answer with
 * exactly the Terminate below (QN 2, MSN 1, MO 0, layer/etype/code in RFC order, the
 * header-control bits and the echoed headers) and place nothing.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "check_common.h"
#include "pair_fixture.h"
#include "rdmap.h"
#include "uiw_time.h"

#define PORT 7200
#define MEM 4096
#define VA 0x100000ull

static struct uiw_stag_table stags;
static struct uiw_cq scq, rcq;
static struct uiw_qp *qp;
static uint8_t *mem, *mem_other, *mem_ro;
static struct uiw_mr *mr, *mr_other, *mr_ro, *mr_atomic;
static uint32_t raw_ext;   /* the RDMAP extensions the raw peer announces (none: as siw) */
static struct uiw_mpa_conn *raw;
static uint8_t got[512];
static uint32_t got_len;
static bool raw_up;

static void raw_established(void *user, struct uiw_mpa_conn *c, const struct uiw_mpa_info *n)
{
	(void)user;
	(void)n;
	raw = c;
	raw_up = true;
}

static uint32_t raw_ulpdus;          /* ULPDUs the raw peer took */
static uint8_t term_got[128];        /* the first Terminate among them */
static uint32_t term_got_len;

static int raw_ulpdu(void *user, struct uiw_mpa_conn *c, const struct uiw_mpa_ulpdu *u)
{
	uint8_t ctrl[2] = { 0, 0 };

	(void)user;
	(void)c;
	if (got_len == 0 && u->len <= sizeof(got))
		got_len = (uint32_t)uiw_mpa_ulpdu_copy(u, 0, got, u->len);
	uiw_mpa_ulpdu_copy(u, 0, ctrl, sizeof(ctrl));
	if ((ctrl[1] & UIW_RDMAP_OPCODE_MASK) == UIW_RDMAP_TERMINATE && term_got_len == 0 &&
	    u->len <= sizeof(term_got))
		term_got_len = (uint32_t)uiw_mpa_ulpdu_copy(u, 0, term_got, u->len);
	raw_ulpdus++;
	return 0;
}

static void raw_closed(void *user, struct uiw_mpa_conn *c, int err)
{
	(void)user;
	(void)c;
	(void)err;
	raw = NULL;
}

static const struct uiw_mpa_ops raw_ops = {
	.established = raw_established, .ulpdu = raw_ulpdu, .closed = raw_closed,
};

static uint16_t b_ird;
static int raw_ird = -1;   /* the raw peer's own IRD when set */

static void on_request(void *ctx, struct uiw_mpa_conn *c, const struct uiw_mpa_rr_info *req)
{
	struct uiw_config cfg;
	struct uiw_mpa_params p;

	(void)ctx;
	(void)req;
	uiw_config_defaults(&cfg);
	uiw_mpa_params_from_config(&p, &cfg);
	p.ird = b_ird;
	ck_assert_int_eq(uiw_mpa_accept(c, &p, &uiw_qp_mpa_ops, qp), 0);
}

static const struct uiw_mpa_ops listen_ops = { .request = on_request };

static bool up(void *arg)
{
	(void)arg;
	return raw_up && uiw_qp_state(qp) == UIW_QPS_RTS;
}

static void setup(void)
{
	struct uiw_qp_attr a = { .qp_num = 9, .pd = 1, .sq_size = 8, .rq_size = 8,
				 .send_cq = &scq, .recv_cq = &rcq, .stags = &stags };
	unsigned rw = UIW_ACCESS_LOCAL_WRITE | UIW_ACCESS_REMOTE_WRITE | UIW_ACCESS_REMOTE_READ;

	pair_setup();
	ck_assert_int_eq(uiw_stag_table_init(&stags, 16), 0);
	ck_assert_int_eq(uiw_cq_init(&scq, 16), 0);
	ck_assert_int_eq(uiw_cq_init(&rcq, 16), 0);
	ck_assert_int_eq(uiw_qp_create(&qp, &a), 0);
	mem = calloc(3, MEM);
	mem_other = mem + MEM;
	mem_ro = mem + 2 * MEM;
	memset(mem, 0x5a, 3 * MEM);
	mr = uiw_stag_register(&stags, 1, mem, MEM, VA, rw, 1);
	mr_other = uiw_stag_register(&stags, 2, mem_other, MEM, VA, rw, 2);
	mr_ro = uiw_stag_register(&stags, 1, mem_ro, MEM, VA, UIW_ACCESS_LOCAL_WRITE, 3);
	mr_atomic = uiw_stag_register(&stags, 1, mem, MEM, VA, rw | UIW_ACCESS_REMOTE_ATOMIC, 4);
	raw_ext = 0;
	got_len = 0;
	term_got_len = 0;
	raw_ulpdus = 0;
	raw_ird = -1;
	raw_up = false;
	raw = NULL;
}

static void teardown(void)
{
	uiw_qp_destroy(qp);
	pair_teardown();
	uiw_cq_fini(&scq);
	uiw_cq_fini(&rcq);
	uiw_stag_table_fini(&stags);
	free(mem);
}

static void connect_raw(uint16_t ird)
{
	struct uiw_config cfg;
	struct uiw_mpa_params p;
	struct uiw_mpa_conn *c;

	b_ird = ird;
	uiw_config_defaults(&cfg);
	uiw_mpa_params_from_config(&p, &cfg);
	p.first_delay_us = 0;
	p.ext = raw_ext;
	p.ord = ird < p.ord ? ird : p.ord;   /* the responder's IRD is at least our ORD */
	if (raw_ird >= 0)
		p.ird = (uint16_t)raw_ird;
	ck_assert_int_eq(uiw_mpa_listen(pair_b.st.mpa, PORT, 4, &p, &listen_ops, NULL), 0);
	ck_assert_int_eq(uiw_mpa_connect(pair_a.st.mpa, PAIR_IP_B, PORT, &p, &raw_ops, NULL,
					 uiw_now_ns(), &c), 0);
	ck_assert(pair_run_until(up, NULL, 2000));
}

struct expect {
	uint8_t layer, etype, code, hdrct;
	uint32_t echo;        /* octets after the control word: 0, 2 + DDP header [+ 28] */
	bool post_recv;       /* a receive of 8 octets is posted first */
	uint16_t ird;
	uint32_t ext;         /* what the raw end announces (UIW_MPA_EXT_*; true: RFC 7306) */
};

static uint32_t tagged(uint8_t *b, uint8_t ctrl, uint8_t rdmap, uint32_t stag, uint64_t to, uint32_t len)
{
	struct uiw_ddp_tagged h;

	uiw_ddp_tagged_set(&h, ctrl, rdmap, stag, to);
	memcpy(b, &h, sizeof(h));
	memset(b + sizeof(h), 0xee, len);
	return sizeof(h) + len;
}

static uint32_t untagged(uint8_t *b, uint8_t ctrl, uint8_t rdmap, uint32_t rsvd, uint32_t qn,
			 uint32_t msn, uint32_t mo, uint32_t len)
{
	struct uiw_ddp_untagged h;

	uiw_ddp_untagged_set(&h, ctrl, rdmap, rsvd, qn, msn, mo);
	memcpy(b, &h, sizeof(h));
	memset(b + sizeof(h), 0xee, len);
	return sizeof(h) + len;
}

static uint32_t read_req(uint8_t *b, uint32_t msn, uint32_t src_stag, uint64_t src_to, uint32_t size)
{
	struct uiw_rdmap_read_req rr;
	uint32_t n = untagged(b, 0x41, 0x41, 0, 1, msn, 0, 0);

	uiw_rdmap_read_req_set(&rr, 0x1234, 0, size, src_stag, src_to);
	memcpy(b + n, &rr, sizeof(rr));
	return n + sizeof(rr);
}

/* An RFC 7306 Atomic Request (QN 1) of atomic operation @p op, @p len octets of body. */
static uint32_t atomic_req(uint8_t *b, uint8_t op, uint32_t stag, uint64_t to, uint32_t len)
{
	struct uiw_rdmap_atomic_req r;
	uint32_t n = untagged(b, 0x41, 0x40 | UIW_RDMAP_ATOMIC_REQ, 0, 1, 1, 0, 0);

	uiw_rdmap_atomic_req_set(&r, op, 7, stag, to);
	uiw_rdmap_atomic_req_operands(&r, 1, 0, 0, 0);
	memcpy(b + n, &r, len < sizeof(r) ? len : sizeof(r));
	return n + len;
}

#define TAG 0xc1   /* tagged, last, DDP version 1 */
#define UNT 0x41   /* untagged, last, DDP version 1 */
#define RV(op) (0x40 | (op))
#define MD (UIW_TERM_HDR_M | UIW_TERM_HDR_D)
#define MDR (MD | UIW_TERM_HDR_R)
#define ALL (UIW_MPA_EXT_RFC7306 | UIW_MPA_EXT_SEND_IMM)

/* Case @p i: the crafted ULPDU into @p b, what B must answer into @p e. @return its length. */
static uint32_t build(int i, uint8_t *b, struct expect *e)
{
	*e = (struct expect){ .ird = 16, .post_recv = true };
	switch (i) {
	case 0: *e = (struct expect){ 1, 0, 0x00, 0, 0, true, 16 }; /* shorter than a DDP header */
		return untagged(b, UNT, RV(3), 0, 0, 1, 0, 0) - 8;
	case 1: *e = (struct expect){ 1, 1, 0x04, MD, 16, true, 16 };   /* tagged, DDP version 2 */
		return tagged(b, 0xc2, RV(0), mr->stag, VA, 4);
	case 2: *e = (struct expect){ 1, 2, 0x06, MD, 20, true, 16 };   /* untagged, version 0 */
		return untagged(b, 0x40, RV(3), 0, 0, 1, 0, 4);
	case 3: *e = (struct expect){ 0, 2, 0x05, MD, 20, true, 16 };   /* RDMAP version 0 */
		return untagged(b, UNT, 0x03, 0, 0, 1, 0, 4);
	case 4: *e = (struct expect){ 0, 2, 0x06, MD, 20, true, 16 };   /* opcode 8, unannounced */
		return untagged(b, UNT, RV(8), 0, 0, 1, 0, 8);
	case 28: *e = (struct expect){ 0, 2, 0x06, MD, 20, true, 16 };  /* Atomic, unannounced */
		return atomic_req(b, UIW_ATOMIC_FETCH_ADD, mr_atomic->stag, VA, 52);
	case 29: *e = (struct expect){ 0, 2, 0x06, MD, 20, true, 16, true }; /* opcode 12 */
		return untagged(b, UNT, RV(12), 0, 0, 1, 0, 8);
	case 30: *e = (struct expect){ 0, 2, 0xff, MD, 20, true, 16, true }; /* Immediate, 4 octets */
		return untagged(b, UNT, RV(8), 0, 0, 1, 0, 4);
	case 31: *e = (struct expect){ 1, 2, 0x02, MD, 20, false, 16, true }; /* Immediate, no receive */
		return untagged(b, UNT, RV(9), 0, 0, 1, 0, 8);
	case 32: *e = (struct expect){ 0, 1, 0x02, MDR, 48, true, 16, true }; /* Atomic, no access */
		return atomic_req(b, UIW_ATOMIC_FETCH_ADD, mr->stag, VA, 52);
	case 33: *e = (struct expect){ 0, 1, 0x01, MD, 20, true, 16, true }; /* Atomic, unaligned */
		return atomic_req(b, UIW_ATOMIC_CMP_SWAP, mr_atomic->stag, VA + 4, 52);
	case 34: *e = (struct expect){ 0, 2, 0x06, MD, 20, true, 16, true }; /* atomic op 3 */
		return atomic_req(b, 3, mr_atomic->stag, VA, 52);
	case 35: *e = (struct expect){ 0, 2, 0xff, MD, 20, true, 16, true }; /* Atomic, 8 octets */
		return atomic_req(b, UIW_ATOMIC_FETCH_ADD, mr_atomic->stag, VA, 8);
	case 36: *e = (struct expect){ 0, 2, 0x07, MD, 20, true, 0, true }; /* Atomic beyond IRD 0 */
		return atomic_req(b, UIW_ATOMIC_FETCH_ADD, mr_atomic->stag, VA, 52);
	case 37: *e = (struct expect){ 0, 2, 0x06, MD, 20, true, 16, true }; /* Response, none asked */
		return untagged(b, UNT, RV(11), 0, 3, 1, 0, 12);
	case 38: *e = (struct expect){ 1, 2, 0x01, MD, 20, true, 16 };  /* QN 3, unannounced */
		return untagged(b, UNT, RV(3), 0, 3, 1, 0, 4);
	case 39: *e = (struct expect){ 0, 2, 0x06, MD, 20, true, 16, ALL }; /* opcode 14 */
		return untagged(b, UNT, RV(14), 0, 0, 1, 0, 8);
	case 40: *e = (struct expect){ 1, 2, 0x02, MD, 20, false, 16, ALL }; /* Send imm, no receive */
		return untagged(b, UNT, RV(13), 0x12345678, 0, 1, 0, 4);
	case 41: *e = (struct expect){ 1, 2, 0x05, MD, 20, true, 16, ALL }; /* Send imm, 20 into 8 */
		return untagged(b, UNT, RV(12), 0x12345678, 0, 1, 0, 20);
	case 42: *e = (struct expect){ 1, 2, 0x01, MD, 20, true, 16, ALL }; /* Send imm on QN 1 */
		return untagged(b, UNT, RV(12), 0x12345678, 1, 1, 0, 4);
	case 43: *e = (struct expect){ 0, 2, 0x06, MD, 20, true, 16, UIW_MPA_EXT_SEND_IMM }; /* opcode 8 */
		return untagged(b, UNT, RV(8), 0, 0, 1, 0, 8);
	case 5: *e = (struct expect){ 0, 2, 0x06, MD, 16, true, 16 };   /* a tagged Send */
		return tagged(b, TAG, RV(3), mr->stag, VA, 4);
	case 6: *e = (struct expect){ 1, 2, 0x01, MD, 20, true, 16 };   /* Send on QN 1 */
		return untagged(b, UNT, RV(3), 0, 1, 1, 0, 4);
	case 7: *e = (struct expect){ 1, 2, 0x03, MD, 20, true, 16 };   /* Send, MSN 5 */
		return untagged(b, UNT, RV(3), 0, 0, 5, 0, 4);
	case 8: *e = (struct expect){ 1, 2, 0x04, MD, 20, true, 16 };   /* Send, MO 10 */
		return untagged(b, UNT, RV(3), 0, 0, 1, 10, 4);
	case 9: *e = (struct expect){ 1, 2, 0x02, MD, 20, false, 16 };  /* no receive posted */
		return untagged(b, UNT, RV(3), 0, 0, 1, 0, 4);
	case 10: *e = (struct expect){ 1, 2, 0x05, MD, 20, true, 16 };  /* 20 octets into 8 */
		return untagged(b, UNT, RV(3), 0, 0, 1, 0, 20);
	case 11: *e = (struct expect){ 1, 1, 0x00, MD, 16, true, 16 };  /* Write, unknown STag */
		return tagged(b, TAG, RV(0), mr->stag ^ 0x100, VA, 4);
	case 12: *e = (struct expect){ 1, 1, 0x01, MD, 16, true, 16 };  /* Write past the end */
		return tagged(b, TAG, RV(0), mr->stag, VA + MEM - 2, 4);
	case 13: *e = (struct expect){ 1, 1, 0x02, MD, 16, true, 16 };  /* Write, other PD */
		return tagged(b, TAG, RV(0), mr_other->stag, VA, 4);
	case 14: *e = (struct expect){ 1, 1, 0x03, MD, 16, true, 16 };  /* Write, TO wraps */
		return tagged(b, TAG, RV(0), mr->stag, UINT64_MAX - 1, 4);
	case 15: *e = (struct expect){ 0, 1, 0x02, MD, 16, true, 16 };  /* Write, no remote write */
		return tagged(b, TAG, RV(0), mr_ro->stag, VA, 4);
	case 16: *e = (struct expect){ 1, 2, 0x03, MD, 20, true, 16 };  /* Read Request, MSN 2 */
		return read_req(b, 2, mr->stag, VA, 8);
	case 17: *e = (struct expect){ 0, 1, 0x00, MDR, 48, true, 16 }; /* Read, unknown STag */
		return read_req(b, 1, mr->stag ^ 0x100, VA, 8);
	case 18: *e = (struct expect){ 0, 1, 0x01, MDR, 48, true, 16 }; /* Read past the end */
		return read_req(b, 1, mr->stag, VA + MEM - 4, 8);
	case 19: *e = (struct expect){ 0, 1, 0x02, MDR, 48, true, 16 }; /* Read, no remote read */
		return read_req(b, 1, mr_ro->stag, VA, 8);
	case 20: *e = (struct expect){ 0, 1, 0x03, MDR, 48, true, 16 }; /* Read, other PD */
		return read_req(b, 1, mr_other->stag, VA, 8);
	case 21: *e = (struct expect){ 0, 1, 0x04, MDR, 48, true, 16 }; /* Read, TO wraps */
		return read_req(b, 1, mr->stag, UINT64_MAX - 3, 8);
	case 22: *e = (struct expect){ 0, 2, 0x07, MDR, 48, true, 0 };  /* Read beyond IRD 0 */
		return read_req(b, 1, mr->stag, VA, 8);
	case 23: *e = (struct expect){ 0, 2, 0xff, MD, 20, true, 16 };  /* Read Request, 4 octets */
		return untagged(b, UNT, RV(1), 0, 1, 1, 0, 4);
	case 24: *e = (struct expect){ 0, 1, 0x09, MD, 20, true, 16 };  /* invalidate, other PD */
		return untagged(b, UNT, RV(4), mr_other->stag, 0, 1, 0, 4);
	case 25: *e = (struct expect){ 0, 2, 0x09, MD, 20, true, 16 };  /* invalidate, no STag */
		return untagged(b, UNT, RV(6), mr->stag ^ 0x100, 0, 1, 0, 4);
	case 26: *e = (struct expect){ 0, 1, 0x09, MD, 20, true, 16 };  /* invalidate, local only */
		return untagged(b, UNT, RV(4), mr_ro->stag, 0, 1, 0, 4);
	default: *e = (struct expect){ 0, 2, 0x06, MD, 16, true, 16 };  /* Read Response, none asked */
		return tagged(b, TAG, RV(2), mr->stag, VA, 4);
	}
}

#define NCASES 44

static bool got_term(void *arg)
{
	(void)arg;
	return got_len > 0;
}

START_TEST(crafted_segment_terminated)
{
	uint8_t seg[128], want_hdr[18];
	struct expect e;
	uint32_t n = build(_i, seg, &e);
	struct uiw_mpa_iov iov = { seg, n };

	raw_ext = e.ext;
	connect_raw(e.ird);
	if (e.post_recv) {
		struct uiw_recv_wr r = { .wr_id = 1, .sg = { { mem + 100, 8 } }, .nsge = 1 };

		ck_assert_int_eq(uiw_qp_post_recv(qp, &r), 0);
	}
	ck_assert_int_eq(uiw_mpa_send(raw, &iov, 1), 0);
	ck_assert(pair_run_until(got_term, NULL, 2000));
	/* The Terminate: untagged, last, RDMAP opcode 7, QN 2, MSN 1, MO 0 (RFC 5040 §5.6). */
	uiw_ddp_untagged_set((struct uiw_ddp_untagged *)(void *)want_hdr, UNT,
			     uiw_rdmap_ctrl(UIW_RDMAP_TERMINATE), 0, 2, 1, 0);
	ck_assert_mem_eq(got, want_hdr, 18);
	ck_assert_uint_eq(got_len, 18 + 4 + e.echo);
	ck_assert_uint_eq(got[18], (uint8_t)(e.layer << 4 | e.etype));
	ck_assert_uint_eq(got[19], e.code);
	ck_assert_uint_eq(got[20], e.hdrct);
	if (e.echo > 0) {
		/* DDP Segment Length, then the terminated DDP header (and the Read Request). */
		ck_assert_uint_eq((uint32_t)got[22] << 8 | got[23], n);
		ck_assert_mem_eq(got + 24, seg, e.echo - 2);
	}
	/* Nothing placed, nothing completed as a success, the QP in error. */
	for (unsigned k = 0; k < 3 * MEM; k++)
		ck_assert_uint_eq(mem[k], 0x5a);
	struct uiw_wc wc;

	while (uiw_cq_poll(&rcq, &wc, 1) == 1)
		ck_assert_int_ne(wc.status, UIW_WC_SUCCESS);
	ck_assert_int_eq(uiw_qp_state(qp), UIW_QPS_ERROR);
	ck_assert_uint_eq(uiw_qp_term_tx(qp)->code, e.code);
}
END_TEST

static bool b_wrote(void *arg)
{
	(void)arg;
	return uiw_qp_counters(qp)[UIW_RDMAP_C_rx_write] > 0;
}

/* A peer whose IRD is 0 (RFC 6581 §7.1) leaves B an ORD of 0: a Read posted on B fails
 * at once (local QP operation error, as siw) and B Terminates; no Read Request goes out
 * and nothing waits for room that never comes. */
START_TEST(read_with_peer_ird_0_fails)
{
	struct uiw_send_wr r = { .wr_id = 5, .op = UIW_WR_READ, .signaled = true,
				 .sg = { { mem, 64 } }, .nsge = 1, .rkey = 0x1234,
				 .remote_addr = 0, .sink_stag = mr->stag, .sink_to = VA };
	struct uiw_wc wc;

	raw_ird = 0;
	connect_raw(16);
	ck_assert_uint_eq(uiw_qp_ord(qp), 0);
	/* The responder sends after the initiator's first FPDU (RFC 5044 §7.1.2). */
	uint8_t seg[32];
	struct uiw_mpa_iov iov = { seg, tagged(seg, TAG, RV(0), mr->stag, VA, 0) };

	ck_assert_int_eq(uiw_mpa_send(raw, &iov, 1), 0);
	ck_assert(pair_run_until(b_wrote, NULL, 2000));
	ck_assert_int_eq(uiw_qp_post_send(qp, &r), 0);
	ck_assert(pair_run_until(got_term, NULL, 2000));
	ck_assert_uint_eq(got[1] & UIW_RDMAP_OPCODE_MASK, UIW_RDMAP_TERMINATE);
	ck_assert_uint_eq(got[18], 0x00);   /* RDMAP, local catastrophic */
	ck_assert_uint_eq(got[19], 0xff);
	ck_assert_uint_eq(uiw_cq_poll(&scq, &wc, 1), 1);
	ck_assert_uint_eq(wc.wr_id, 5);
	ck_assert_int_eq(wc.status, UIW_WC_LOC_QP_OP_ERR);
	ck_assert_int_eq(uiw_qp_state(qp), UIW_QPS_ERROR);
	ck_assert_uint_eq(uiw_qp_counters(qp)[UIW_RDMAP_C_tx_read_no_ord], 1);
	ck_assert_uint_eq(uiw_qp_counters(qp)[UIW_RDMAP_C_tx_read_req], 0);
}
END_TEST


/* The Terminate B sent: layer/etype in one octet, then the code (got holds B's first
 * ULPDU after got_len was cleared). */
static void expect_term(uint8_t layer_etype, uint8_t code)
{
	ck_assert(pair_run_until(got_term, NULL, 2000));
	ck_assert_uint_eq(got[1] & UIW_RDMAP_OPCODE_MASK, UIW_RDMAP_TERMINATE);
	ck_assert_uint_eq(got[18], layer_etype);
	ck_assert_uint_eq(got[19], code);
	ck_assert_int_eq(uiw_qp_state(qp), UIW_QPS_ERROR);
}

/* A Send that starts as a plain Send and goes on as a Send with Solicited Event is one
 * message with two opcodes: Terminated (RDMAP, remote operation, unexpected opcode) and
 * the receive it was filling does not complete as a success. */
START_TEST(opcode_change_inside_a_send_terminated)
{
	struct uiw_recv_wr r = { .wr_id = 1, .sg = { { mem + 100, 64 } }, .nsge = 1 };
	uint8_t a[32], b[32];
	struct uiw_mpa_iov first = { a, untagged(a, 0x01, RV(UIW_RDMAP_SEND), 0, 0, 1, 0, 4) };
	struct uiw_mpa_iov second = { b, untagged(b, UNT, RV(UIW_RDMAP_SEND_SE), 0, 0, 1, 4, 4) };
	struct uiw_wc wc;

	connect_raw(16);
	ck_assert_int_eq(uiw_qp_post_recv(qp, &r), 0);
	ck_assert_int_eq(uiw_mpa_send(raw, &first, 1), 0);
	ck_assert_int_eq(uiw_mpa_send(raw, &second, 1), 0);
	expect_term(0x02, 0x06);
	ck_assert_mem_eq(got + 24, b, 18);   /* the second segment's DDP header echoed */
	ck_assert_uint_eq(uiw_cq_poll(&rcq, &wc, 1), 1);
	ck_assert_int_ne(wc.status, UIW_WC_SUCCESS);
	ck_assert_uint_eq(uiw_qp_counters(qp)[UIW_RDMAP_C_rx_send], 0);
}
END_TEST

/* A Read Response whose last segment comes before the requested length: B's Read fails
 * (remote operation error) and B Terminates (RDMAP, remote operation, unspecified). */
START_TEST(short_read_response_fails_the_read)
{
	struct uiw_send_wr r = { .wr_id = 7, .op = UIW_WR_READ, .signaled = true,
				 .sg = { { mem + 256, 16 } }, .nsge = 1, .rkey = 0x4321,
				 .remote_addr = 0x9000, .sink_stag = mr->stag, .sink_to = VA + 256 };
	uint8_t seg[32];
	struct uiw_mpa_iov iov = { seg, tagged(seg, TAG, RV(0), mr->stag, VA, 0) };
	struct uiw_wc wc;

	connect_raw(16);
	ck_assert_int_eq(uiw_mpa_send(raw, &iov, 1), 0);   /* B may send from now on */
	ck_assert(pair_run_until(b_wrote, NULL, 2000));
	ck_assert_int_eq(uiw_qp_post_send(qp, &r), 0);
	ck_assert(pair_run_until(got_term, NULL, 2000));   /* the Read Request */
	ck_assert_uint_eq(got[1] & UIW_RDMAP_OPCODE_MASK, UIW_RDMAP_READ_REQ);
	got_len = 0;
	iov.len = tagged(seg, TAG, RV(UIW_RDMAP_READ_RESP), mr->stag, VA + 256, 4);
	ck_assert_int_eq(uiw_mpa_send(raw, &iov, 1), 0);
	expect_term(0x02, 0xff);
	ck_assert_uint_eq(uiw_cq_poll(&scq, &wc, 1), 1);
	ck_assert_uint_eq(wc.wr_id, 7);
	ck_assert_int_eq(wc.status, UIW_WC_REM_OP_ERR);
	ck_assert_uint_eq(uiw_qp_counters(qp)[UIW_RDMAP_C_rx_read_resp], 0);
}
END_TEST

static bool raw_got(void *arg)
{
	return raw_ulpdus >= *(const uint32_t *)arg;
}

static bool raw_got_term(void *arg)
{
	(void)arg;
	return term_got_len > 0;
}

/* A Read's source deregistered (and its memory freed) while its response is going out:
 * nothing more is read from it (ASan would see it), B Terminates (RDMAP remote
 * protection, invalid STag) and counts it. */
START_TEST(read_source_deregistered_midway)
{
	const uint32_t size = 4u << 20;
	uint8_t *big = malloc(size), seg[64];
	struct uiw_mr *bmr;
	uint32_t some = 8, n;
	struct uiw_mpa_iov iov = { seg, 0 };

	ck_assert_ptr_nonnull(big);
	memset(big, 0x77, size);
	bmr = uiw_stag_register(&stags, 1, big, size, VA, UIW_ACCESS_REMOTE_READ, 4);
	ck_assert_ptr_nonnull(bmr);
	connect_raw(16);
	n = read_req(seg, 1, bmr->stag, VA, size);
	iov.len = n;
	ck_assert_int_eq(uiw_mpa_send(raw, &iov, 1), 0);
	ck_assert(pair_run_until(raw_got, &some, 2000));
	ck_assert_uint_eq(term_got_len, 0);
	uiw_stag_deregister(&stags, bmr);
	free(big);
	ck_assert(pair_run_until(raw_got_term, NULL, 2000));
	ck_assert_uint_eq(term_got[18], 0x01);   /* RDMAP, remote protection */
	ck_assert_uint_eq(term_got[19], 0x00);   /* invalid STag */
	ck_assert_uint_eq(uiw_qp_counters(qp)[UIW_RDMAP_C_read_src_gone], 1);
	ck_assert_uint_eq(uiw_qp_counters(qp)[UIW_RDMAP_C_tx_read_resp], 0);
	ck_assert_int_eq(uiw_qp_state(qp), UIW_QPS_ERROR);
}
END_TEST

/* IRD 2. Three Read Requests in one burst (as no requester within its ORD sends them): the
 * two responses are queued but not yet acknowledged, so they still count against the IRD
 * and the third is Terminated (RDMAP, remote operation, 0x07), however small the Reads.
 * Asked one after another, each once the response before it arrived (and was thereby
 * acknowledged), three Reads are served. */
START_TEST(unacknowledged_responses_count_against_the_ird)
{
	uint8_t seg[3][64];
	struct uiw_mpa_iov iov[3];
	uint32_t two = 2, three = 3;

	connect_raw(2);
	for (uint32_t k = 0; k < 3; k++)
		iov[k] = (struct uiw_mpa_iov){ seg[k], read_req(seg[k], k + 1, mr->stag, VA, _i ? 8 : 0) };
	if (_i == 0) {
		for (unsigned k = 0; k < 3; k++)
			ck_assert_int_eq(uiw_mpa_send(raw, &iov[k], 1), 0);
		ck_assert(pair_run_until(raw_got_term, NULL, 2000));
		ck_assert_uint_eq(term_got[18], 0x02);
		ck_assert_uint_eq(term_got[19], 0x07);
		ck_assert_uint_eq(raw_ulpdus, 3);   /* two responses, then the Terminate */
	} else {
		ck_assert_int_eq(uiw_mpa_send(raw, &iov[0], 1), 0);
		ck_assert_int_eq(uiw_mpa_send(raw, &iov[1], 1), 0);
		ck_assert(pair_run_until(raw_got, &two, 2000));
		ck_assert_int_eq(uiw_mpa_send(raw, &iov[2], 1), 0);
		ck_assert(pair_run_until(raw_got, &three, 2000));
		pair_run_for(20);
		ck_assert_uint_eq(term_got_len, 0);
		ck_assert_uint_eq(uiw_qp_counters(qp)[UIW_RDMAP_C_tx_read_resp], 3);
		ck_assert_int_eq(uiw_qp_state(qp), UIW_QPS_RTS);
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("terminate");
	TCase *tc = tcase_with_leak_check("terminate", setup, teardown);

	tcase_add_loop_test(tc, crafted_segment_terminated, 0, NCASES);
	tcase_add_test(tc, read_with_peer_ird_0_fails);
	tcase_add_test(tc, opcode_change_inside_a_send_terminated);
	tcase_add_test(tc, short_read_response_fails_the_read);
	tcase_add_test(tc, read_source_deregistered_midway);
	tcase_add_loop_test(tc, unacknowledged_responses_count_against_the_ird, 0, 2);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
