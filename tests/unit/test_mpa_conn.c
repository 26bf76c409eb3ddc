/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * MPA connections between two stack instances (pair_fixture), and against a raw TCP peer
 * written here that sends exactly the bytes a test wants: negotiation (RFC 5044 §7.1,
 * RFC 6581), held responder sends, Terminates for MPA errors, timeouts.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <rte_ethdev.h>
#include <rte_gso.h>

#include "check_common.h"
#include "pair_fixture.h"
#include "tcp_internal.h"
#include "uiw_time.h"

#define PORT 7174
#define RX_MAX (256 * 1024)

/* What one MPA endpoint saw. */
struct ep {
	struct uiw_mpa_conn *c;
	struct uiw_mpa_params accept_p;   /* responder: the policy it accepts with */
	bool defer_accept;
	bool requested, established, rejected, closed;
	int err;
	struct uiw_mpa_info info;
	uint8_t peer_pd[UIW_MPA_PD_MAX];
	int peer_pd_len;
	uint8_t rx[RX_MAX];
	uint32_t rx_len;
	unsigned rx_n;
	unsigned writable;                 /* writable calls */
	char reason[128];
};

static struct ep ini, rsp;

static void ep_reset(struct ep *e)
{
	memset(e, 0, sizeof(*e));
	e->peer_pd_len = -1;
}

static void on_request(void *ctx, struct uiw_mpa_conn *c, const struct uiw_mpa_rr_info *req);
static void on_established(void *user, struct uiw_mpa_conn *c, const struct uiw_mpa_info *info);
static void on_rejected(void *user, struct uiw_mpa_conn *c, const uint8_t *pd, uint16_t len);
static int on_ulpdu(void *user, struct uiw_mpa_conn *c, const struct uiw_mpa_ulpdu *u);
static void on_closed(void *user, struct uiw_mpa_conn *c, int err);
static void on_writable(void *user, struct uiw_mpa_conn *c);

static const struct uiw_mpa_ops ep_ops = {
	.request = on_request, .established = on_established, .rejected = on_rejected,
	.ulpdu = on_ulpdu, .closed = on_closed, .writable = on_writable,
};

static void on_writable(void *user, struct uiw_mpa_conn *c)
{
	(void)c;
	((struct ep *)user)->writable++;
}

static void on_request(void *ctx, struct uiw_mpa_conn *c, const struct uiw_mpa_rr_info *req)
{
	struct ep *e = ctx;

	e->c = c;
	e->requested = true;
	e->peer_pd_len = req->pd_len;
	memcpy(e->peer_pd, req->pd, req->pd_len);
	if (!e->defer_accept)
		ck_assert_int_eq(uiw_mpa_accept(c, &e->accept_p, &ep_ops, e), 0);
}

static void on_established(void *user, struct uiw_mpa_conn *c, const struct uiw_mpa_info *info)
{
	struct ep *e = user;

	e->c = c;
	e->established = true;
	e->info = *info;
	if (info->initiator) {
		e->peer_pd_len = info->pd_len;
		memcpy(e->peer_pd, info->pd, info->pd_len);
	} else {
		/* The Request's private data is what established repeats. */
		ck_assert_int_eq(info->pd_len, e->peer_pd_len);
		ck_assert_mem_eq(info->pd, e->peer_pd, info->pd_len);
	}
}

static void on_rejected(void *user, struct uiw_mpa_conn *c, const uint8_t *pd, uint16_t len)
{
	struct ep *e = user;

	(void)c;
	e->rejected = true;
	e->peer_pd_len = len;
	memcpy(e->peer_pd, pd, len);
}

static int on_ulpdu(void *user, struct uiw_mpa_conn *c, const struct uiw_mpa_ulpdu *u)
{
	struct ep *e = user;

	(void)c;
	ck_assert_uint_le(e->rx_len + u->len, RX_MAX);
	ck_assert_uint_eq(uiw_mpa_ulpdu_copy(u, 0, e->rx + e->rx_len, u->len), u->len);
	e->rx_len += u->len;
	e->rx_n++;
	return 0;
}

static void on_closed(void *user, struct uiw_mpa_conn *c, int err)
{
	struct ep *e = user;

	e->closed = true;
	e->err = err;
	snprintf(e->reason, sizeof(e->reason), "%s", uiw_mpa_reason(c));
	e->c = NULL;
}

static void pattern(uint8_t *p, size_t n, uint8_t seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(seed + i * 7);
}

static bool both_settled(void *arg)
{
	(void)arg;
	return (ini.established || ini.closed) && (rsp.established || rsp.closed || !rsp.requested) &&
	       (ini.closed || rsp.established);
}

static bool both_closed(void *arg)
{
	(void)arg;
	return ini.closed && (rsp.closed || !rsp.requested);
}

static bool got_octets(void *arg)
{
	const uint32_t *want = arg;

	return ini.rx_len >= want[0] && rsp.rx_len >= want[1];
}

static uint64_t ctr(struct pair_side *s, enum uiw_mpa_counter k)
{
	return uiw_mpa_counters(s->st.mpa)[k];
}

static void params(struct uiw_mpa_params *p)
{
	struct uiw_config cfg;

	uiw_config_defaults(&cfg);
	uiw_mpa_params_from_config(p, &cfg);
	p->crc = false;
	p->timeout_ms = 2000;
	p->ext = 0;   /* frames byte for byte as siw's (extension_* tests turn it on) */
}

static void setup(void)
{
	pair_setup();
	ep_reset(&ini);
	ep_reset(&rsp);
}

static void teardown(void)
{
	pair_teardown();
}

/* Sends ULPDUs of the given sizes (pattern seeded by the size). */
static void send_sizes(struct ep *e, const uint32_t *sizes, unsigned n)
{
	static uint8_t buf[65536];

	for (unsigned i = 0; i < n; i++) {
		struct uiw_mpa_iov iov = { buf, sizes[i] };

		pattern(buf, sizes[i], (uint8_t)sizes[i]);
		ck_assert_int_eq(uiw_mpa_send(e->c, &iov, 1), 0);
	}
}

static void check_received(const struct ep *e, const uint32_t *sizes, unsigned n)
{
	static uint8_t want[65536];
	uint32_t off = 0;

	ck_assert_uint_eq(e->rx_n, n);
	for (unsigned i = 0; i < n; i++) {
		pattern(want, sizes[i], (uint8_t)sizes[i]);
		ck_assert_mem_eq(e->rx + off, want, sizes[i]);
		off += sizes[i];
	}
	ck_assert_uint_eq(e->rx_len, off);
}

/*
 * The negotiation matrix: revision x CRC x Markers x (no peer-to-peer, Send, Write or
 * Read RTR) x private data 0, 1, 252, 256, 512, 513 octets, the responder at siw's cap
 * of 256; then data both ways, then an orderly close.
 */
static const uint16_t pd_sizes[] = { 0, 1, 252, 256, 512, 513 };
static const enum uiw_mpa_rtr modes[] = { UIW_MPA_RTR_NONE, UIW_MPA_RTR_SEND, UIW_MPA_RTR_WRITE,
					  UIW_MPA_RTR_READ };

START_TEST(negotiation_matrix)
{
	unsigned i = (unsigned)_i;
	uint8_t rev = (uint8_t)(1 + i % 2);
	bool crc = (i / 2) % 2, markers = (i / 4) % 2;
	enum uiw_mpa_rtr mode = modes[(i / 8) % 4];
	uint16_t pd_len = pd_sizes[(i / 32) % 6];
	bool p2p = rev == 2 && mode != UIW_MPA_RTR_NONE;
	uint32_t wire_pd = pd_len + (rev == 2 ? 4u : 0u);
	static uint8_t pd[600], rpd[300];
	struct uiw_mpa_params ip, lp;

	params(&ip);
	ip.rev = rev;
	ip.crc = crc;
	ip.markers = markers;
	ip.p2p = mode != UIW_MPA_RTR_NONE;
	ip.rtr = (uint8_t)mode;
	ip.ird = 3;
	ip.ord = 9;
	ip.pd_max = 512;
	pattern(pd, sizeof(pd), 1);
	ip.pd = pd;
	ip.pd_len = pd_len;
	params(&lp);
	rsp.accept_p = lp;
	rsp.accept_p.markers = markers;
	rsp.accept_p.rtr = UIW_MPA_RTR_SEND | UIW_MPA_RTR_WRITE | UIW_MPA_RTR_READ;
	rsp.accept_p.ird = 7;
	rsp.accept_p.ord = 4;
	pattern(rpd, sizeof(rpd), 9);
	rsp.accept_p.pd = rpd;
	rsp.accept_p.pd_len = pd_len < 252 ? pd_len : 252;
	ck_assert_int_eq(uiw_mpa_listen(pair_b.st.mpa, PORT, 16, &lp, &ep_ops, &rsp), 0);

	int rc = uiw_mpa_connect(pair_a.st.mpa, PAIR_IP_B, PORT, &ip, &ep_ops, &ini, uiw_now_ns(), &ini.c);

	if (wire_pd > UIW_MPA_PD_MAX) {
		ck_assert_int_eq(rc, -EINVAL);
		ck_assert_uint_eq(uiw_mpa_conn_count(pair_a.st.mpa), 0);
		return;
	}
	ck_assert_int_eq(rc, 0);
	ck_assert(pair_run_until(both_settled, NULL, 3000));
	if (wire_pd > 256) {
		/* Over the responder's cap: R=1, the owner never hears of it. */
		ck_assert(pair_run_until(both_closed, NULL, 3000));
		ck_assert(ini.rejected);
		ck_assert_int_eq(ini.err, -ECONNREFUSED);
		ck_assert(!rsp.requested);
		ck_assert_uint_eq(ctr(&pair_b, UIW_MPA_C_bad_pd_len), 1);
		ck_assert_uint_eq(ctr(&pair_b, UIW_MPA_C_reject_tx), 1);
		ck_assert_uint_eq(ctr(&pair_a, UIW_MPA_C_reject_rx), 1);
		return;
	}
	ck_assert_msg(ini.established && rsp.established, "%s / %s", ini.reason, rsp.reason);
	/* Private data both ways, unchanged (the IRD/ORD words are not part of it). */
	ck_assert_int_eq(rsp.peer_pd_len, pd_len);
	ck_assert_mem_eq(rsp.peer_pd, pd, pd_len);
	ck_assert_int_eq(ini.peer_pd_len, rsp.accept_p.pd_len);
	ck_assert_mem_eq(ini.peer_pd, rpd, rsp.accept_p.pd_len);
	for (int s = 0; s < 2; s++) {
		const struct uiw_mpa_info *n = s ? &rsp.info : &ini.info;

		ck_assert_uint_eq(n->rev, rev);
		ck_assert_int_eq(n->crc, crc);
		ck_assert_int_eq(n->markers_tx, markers);
		ck_assert_int_eq(n->markers_rx, markers);
		ck_assert_int_eq(n->p2p, p2p);
		ck_assert_int_eq(n->rtr, p2p ? mode : UIW_MPA_RTR_NONE);
		ck_assert_uint_eq(n->mulpdu, uiw_mpa_mulpdu(1448, markers));
	}
	/* RFC 6581 §5: the responder's ORD is at most the initiator's IRD. */
	ck_assert_uint_eq(rsp.info.ord, rev == 2 ? 3 : 4);
	ck_assert_uint_eq(rsp.info.ird, rev == 2 ? 9 : 7);
	ck_assert_uint_eq(ini.info.ord, 9);
	ck_assert_uint_eq(ini.info.ird, 3);
	ck_assert_uint_eq(ctr(&pair_a, UIW_MPA_C_rtr_tx), p2p);
	ck_assert_uint_eq(ctr(&pair_b, UIW_MPA_C_rtr_rx), p2p);

	/* Data both ways; the responder's first sends wait for the initiator's first FPDU. */
	uint32_t mul = ini.info.mulpdu;
	uint32_t a_sizes[] = { 1, mul, 77, 0 }, b_sizes[] = { 10, mul, 3 };
	uint32_t want[2] = { 10 + mul + 3, 1 + mul + 77 };

	send_sizes(&rsp, b_sizes, 3);
	ck_assert_uint_eq(ctr(&pair_b, UIW_MPA_C_fpdu_held), p2p ? 0 : 3);
	send_sizes(&ini, a_sizes, 4);
	ck_assert(pair_run_until(got_octets, want, 3000));
	pair_run_for(5);
	check_received(&ini, b_sizes, 3);
	check_received(&rsp, a_sizes, 4);
	uiw_mpa_close(ini.c);
	ck_assert(pair_run_until(both_closed, NULL, 3000));
	ck_assert_msg(ini.err == 0 && rsp.err == 0, "%s / %s", ini.reason, rsp.reason);
	ck_assert_uint_eq(uiw_mpa_conn_count(pair_a.st.mpa) + uiw_mpa_conn_count(pair_b.st.mpa), 0);
	ck_assert_uint_eq(ctr(&pair_a, UIW_MPA_C_crc_err) + ctr(&pair_b, UIW_MPA_C_crc_err), 0);
	/* The MULPDU-long FPDUs each filled a segment: with CRCs and no Markers, their CRCs
	 * came from TCP's checksum pass (the ring sums nothing), and were right. */
	uint64_t with_sum = ctr(&pair_a, UIW_MPA_C_rx_crc_with_sum) +
			    ctr(&pair_b, UIW_MPA_C_rx_crc_with_sum);

	if (crc && !markers)
		ck_assert_uint_ge(with_sum, 2);
	else
		ck_assert_uint_eq(with_sum, 0);
}
END_TEST

/* ---- TSO: side A hands over frames of many segments, cut here as a NIC cuts them. ---- */

static unsigned tso_frames, tso_segs, frame_len, frame_segsz, frame_pieces_max;

/* The NIC's checksums: the IPv4 header's when asked; TCP's from the pseudo-header sum the
 * stack left in the field (with TSO, without the length, which is added per segment). */
static void nic_fill(struct rte_mbuf *m, bool tso)
{
	struct uiw_ipv4_hdr *ih = rte_pktmbuf_mtod_offset(m, struct uiw_ipv4_hdr *, UIW_ETH_HDR_LEN);
	uint32_t off = UIW_ETH_HDR_LEN + UIW_IPV4_HDR_LEN, tcp_len = m->pkt_len - off;
	struct uiw_tcp_hdr *th = rte_pktmbuf_mtod_offset(m, struct uiw_tcp_hdr *, off);

	if (m->ol_flags & RTE_MBUF_F_TX_IP_CKSUM) {
		ck_assert_uint_eq(uiw_be16_get(ih->cksum), 0);
		ih->cksum = uiw_inet_cksum_of(uiw_inet_sum(ih, UIW_IPV4_HDR_LEN));
	}
	if (m->ol_flags & RTE_MBUF_F_TX_TCP_CKSUM) {
		uint32_t sum = uiw_inet_sum_mbuf(m, off, tcp_len) + (tso ? tcp_len : 0);

		sum = (sum & 0xffff) + (sum >> 16);
		sum = (sum & 0xffff) + (sum >> 16);
		th->cksum = uiw_inet_cksum_of((uint16_t)sum);
	}
	m->ol_flags = 0;
}

/* RFC 5044 §8 on the wire: the payload of each segment is exactly one FPDU (CRC on). */
static void check_one_fpdu(const struct rte_mbuf *m)
{
	uint32_t off = UIW_ETH_HDR_LEN + UIW_IPV4_HDR_LEN;
	const struct uiw_tcp_hdr *th = rte_pktmbuf_mtod_offset(m, const struct uiw_tcp_hdr *, off);
	uint32_t payload = m->pkt_len - off - uiw_tcp_hdr_len(th);
	uint8_t buf[2];
	const uint8_t *lenf;
	uint32_t ulpdu, fpdu;

	ck_assert_uint_gt(payload, 0);
	lenf = rte_pktmbuf_read(m, off + uiw_tcp_hdr_len(th), 2, buf);
	ck_assert_ptr_nonnull(lenf);
	ulpdu = (uint32_t)lenf[0] << 8 | lenf[1];
	fpdu = (2 + ulpdu + 3) / 4 * 4 + 4;
	ck_assert_msg(fpdu == payload, "a segment of %u octets holds an FPDU of %u (frame %u, segsz %u)", payload, fpdu, frame_len, frame_segsz);
}

static uint16_t nic_cut(struct rte_mbuf *m, struct rte_mbuf **out, uint16_t max)
{
	bool tso = (m->ol_flags & RTE_MBUF_F_TX_TCP_SEG) != 0;
	uint16_t n = 1;

	if (tso) {
		/* DPDK's own segmenter (the one net_tap uses for TSO). */
		struct rte_gso_ctx ctx = {
			.direct_pool = test_pool(), .indirect_pool = test_pool(),
			.gso_types = RTE_ETH_TX_OFFLOAD_TCP_TSO,
			.gso_size = (uint16_t)(m->tso_segsz + m->l2_len + m->l3_len + m->l4_len),
		};
		int r;

		frame_len = m->pkt_len;
		frame_segsz = m->tso_segsz;
		if (m->nb_segs > frame_pieces_max)
			frame_pieces_max = m->nb_segs;
		r = rte_gso_segment(m, &ctx, out, max);

		ck_assert_int_gt(r, 1);
		rte_pktmbuf_free(m);
		n = (uint16_t)r;
		tso_frames++;
		tso_segs += n;
	} else {
		out[0] = m;
	}
	for (uint16_t i = 0; i < n; i++) {
		nic_fill(out[i], tso);
		if (tso)
			check_one_fpdu(out[i]);
	}
	return n;
}

/*
 * A virtio guest that negotiated large receive, as vhost-user hands it a TSO frame
 * (uiw_port.tso_guest): whole, its TCP checksum to be completed over the header and the
 * payload from the pseudo-header sum the field holds, which must count the frame's TCP
 * length (virtio 1.1 §5.1.6.2). Completed so here (nic_fill() with no length to add), and
 * checked by B in software: a sum without the length fails there.
 */
static uint16_t guest_take(struct rte_mbuf *m, struct rte_mbuf **out, uint16_t max)
{
	ck_assert_uint_ge(max, 1);
	if (m->ol_flags & RTE_MBUF_F_TX_TCP_SEG) {
		frame_len = m->pkt_len;
		if (m->nb_segs > frame_pieces_max)
			frame_pieces_max = m->nb_segs;
		tso_frames++;
	}
	nic_fill(m, false);
	out[0] = m;
	return 1;
}

/*
 * TSO keeps one FPDU per segment: side A's port offers TSO; its TCP hands over frames of
 * whole FPDUs of one length and at most one shorter last, with tso_segsz that length.
 * DPDK's segmenter cuts them; every segment must hold exactly one FPDU, carry the right
 * checksums (B checks them in software) and the CRCs (B checks them), and B gets every
 * ULPDU in order. With slabs (_i 1: FPDUs built side by side in 64 KiB buffers), a frame
 * is its header and one piece a slab it spans; with one slab only (_i 2), the FPDUs that
 * find it taken are built alone. Every slab goes back to its pool when the FPDUs are done.
 * _i 3: A is a vhost-user port whose guest takes the frames whole (guest_take()): no IPv4
 * checksum offload, B receives each frame as one large segment and checks its sums.
 * _i 4: slabs through loss (a tenth of the frames each side receives dropped: segments cut
 * from the middle of TSO frames, and ACKs): what is sent again comes from the send queue's
 * FPDUs in their slabs, B still gets every ULPDU in order with its CRC right, and every
 * slab goes back once all is acknowledged. (A retransmission with one octet changed, tried,
 * fails its CRC at B, which then never gets every octet.)
 * _i 5 and 6: the FPDUs built in runs (struct uiw_mpa_run), as a long message's are, in
 * slabs as with _i 1 (_i 5) and each in an mbuf of its own as with _i 0 (_i 6).
 */
START_TEST(tso_frames_cut_one_fpdu_per_segment)
{
	struct uiw_mpa_params ip, lp;
	static uint32_t sizes[160];
	uint32_t n = 0, total = 0, want[2];
	struct rte_mempool *slabs = NULL;

	if (_i == 4) {
		struct uiw_config cfg;

		pair_teardown();
		uiw_config_defaults(&cfg);
		cfg.tcp_max_conns = 64;
		cfg.tcp_time_wait_ms = 0;
		cfg.tcp_delack_us = 0;
		cfg.tcp_min_rto_ms = 5;
		cfg.tcp_init_rto_ms = 20;
		snprintf(cfg.fault_rx, sizeof(cfg.fault_rx), "drop=10");
		cfg.fault_seed = 13;
		pair_setup_cfg(&cfg);
	}
	tso_frames = tso_segs = frame_pieces_max = 0;
	pair_enable_tso(&pair_a, _i == 3 ? guest_take : nic_cut);
	if (_i == 3) {
		pair_a.st.port.tso_guest = true;
		pair_a.st.port.tx_offloads &= ~RTE_ETH_TX_OFFLOAD_IPV4_CKSUM;
	}
	if (_i > 0 && _i != 6) {
		slabs = rte_pktmbuf_pool_create("test_slabs", _i != 2 ? 16 : 1, 0, 0, UINT16_MAX,
						SOCKET_ID_ANY);
		ck_assert_ptr_nonnull(slabs);
		uiw_mpa_set_slabs(pair_a.st.mpa, slabs);
	}
	params(&ip);
	ip.crc = true;
	params(&lp);
	lp.crc = true;
	rsp.accept_p = lp;
	ck_assert_int_eq(uiw_mpa_listen(pair_b.st.mpa, PORT, 16, &lp, &ep_ops, &rsp), 0);
	ck_assert_int_eq(uiw_mpa_connect(pair_a.st.mpa, PAIR_IP_B, PORT, &ip, &ep_ops, &ini,
					 uiw_now_ns(), &ini.c), 0);
	ck_assert(pair_run_until(both_settled, NULL, 3000));
	ck_assert_msg(ini.established && rsp.established, "%s / %s", ini.reason, rsp.reason);

	uint32_t mul = ini.info.mulpdu;
	const uint32_t runs[][2] = { { 30, mul }, { 1, 5 }, { 20, mul }, { 10, mul - 100 },
				     { 1, 1 }, { 12, mul }, { 3, 700 }, { 30, mul } };

	for (unsigned r = 0; r < RTE_DIM(runs); r++)
		for (uint32_t k = 0; k < runs[r][0]; k++) {
			sizes[n++] = runs[r][1];
			total += runs[r][1];
		}
	want[0] = 0;
	want[1] = total;
	for (uint32_t i = 0; i < n;) {
		static uint8_t buf[65536];
		struct uiw_mpa_iov iov = { buf, sizes[i] };
		uint64_t end = uiw_now_ns() + 3 * UIW_NS_PER_S;
		struct uiw_mpa_run run;
		int rc;

		/* A run takes what it can; the FPDU it refuses goes alone (and waits for room). */
		if (_i >= 5 && uiw_mpa_run_open(ini.c, &run, false) > 0) {
			uint32_t j;

			for (j = i; j < n; j++) {
				iov.len = sizes[j];
				pattern(buf, sizes[j], (uint8_t)sizes[j]);
				if (uiw_mpa_run_add(ini.c, &run, &iov, 1, sizes[j]) != 0)
					break;
			}
			if (uiw_mpa_run_close(ini.c, &run) > 0) {
				i = j;
				continue;
			}
			iov.len = sizes[i];
		}
		pattern(buf, sizes[i], (uint8_t)sizes[i]);
		while ((rc = uiw_mpa_send(ini.c, &iov, 1)) == -ENOBUFS && uiw_now_ns() < end)
			pair_poll();
		ck_assert_int_eq(rc, 0);
		i++;
	}
	ck_assert(pair_run_until(got_octets, want, 5000));
	pair_run_for(5);
	check_received(&rsp, sizes, n);
	ck_assert_uint_gt(tso_frames, 0);
	ck_assert_uint_eq(uiw_tcp_counters(pair_a.st.tcp)[UIW_TCP_C_tx_tso_frames], tso_frames);
	ck_assert_uint_eq(uiw_tcp_counters(pair_b.st.tcp)[UIW_TCP_C_drop_cksum], 0);
	ck_assert_uint_eq(ctr(&pair_b, UIW_MPA_C_crc_err), 0);
	if (_i == 3) {
		/* The frames came in whole: segments longer than the MSS (all but those of two
		 * short FPDUs, which one segment would hold too). */
		ck_assert_uint_gt(uiw_tcp_counters(pair_b.st.tcp)[UIW_TCP_C_rx_large], tso_frames / 2);
		ck_assert_uint_le(uiw_tcp_counters(pair_b.st.tcp)[UIW_TCP_C_rx_large], tso_frames);
		ck_assert_uint_gt(frame_len, 16 * 1024);
	}
	if (_i >= 5)
		ck_assert_uint_gt(ctr(&pair_a, UIW_MPA_C_fpdu_run), n / 2);
	else
		ck_assert_uint_eq(ctr(&pair_a, UIW_MPA_C_fpdu_run), 0);
	if (_i == 0 || _i == 6) {
		ck_assert_uint_eq(ctr(&pair_a, UIW_MPA_C_tx_slabbed), 0);
		ck_assert_uint_gt(frame_pieces_max, 3);    /* a piece an FPDU */
	} else if (_i == 1 || _i == 3 || _i == 5) {
		ck_assert_uint_eq(ctr(&pair_a, UIW_MPA_C_tx_slabbed), n);
		ck_assert_uint_le(frame_pieces_max, 3);    /* the header, a piece a slab */
	} else if (_i == 4) {
		/* Slabs held longer (until their FPDUs are acknowledged through the loss) may
		 * all be taken: those FPDUs are built alone. */
		ck_assert_uint_gt(ctr(&pair_a, UIW_MPA_C_tx_slabbed), n / 2);
		ck_assert_uint_eq(ctr(&pair_a, UIW_MPA_C_tx_slabbed) + ctr(&pair_a, UIW_MPA_C_tx_slab_none), n);
		ck_assert_uint_gt(pair_b.st.fault.rx.dropped, 0);
		ck_assert_uint_gt(uiw_tcp_counters(pair_a.st.tcp)[UIW_TCP_C_retransmits], 0);
	} else {
		ck_assert_uint_gt(ctr(&pair_a, UIW_MPA_C_tx_slabbed), 0);
		ck_assert_uint_gt(ctr(&pair_a, UIW_MPA_C_tx_slab_none), 0);
		ck_assert_uint_eq(ctr(&pair_a, UIW_MPA_C_tx_slabbed) + ctr(&pair_a, UIW_MPA_C_tx_slab_none), n);
	}
	uiw_mpa_close(ini.c);
	ck_assert(pair_run_until(both_closed, NULL, 3000));
	if (slabs != NULL) {
		ck_assert_uint_eq(rte_mempool_in_use_count(slabs), 0);
		uiw_mpa_set_slabs(pair_a.st.mpa, NULL);
		rte_mempool_free(slabs);
	}
}
END_TEST

/* ---- A raw TCP peer on side A (connecting) or side B (listening). ---- */

struct raw {
	struct uiw_tcp_conn *c;
	uint8_t rx[RX_MAX];
	uint32_t rx_len;
	bool connected, peer_closed, closed;
	int err;
};

static struct raw raw;

static void raw_connected(void *user, struct uiw_tcp_conn *c)
{
	(void)c;
	((struct raw *)user)->connected = true;
}

static void raw_recv(void *user, struct uiw_tcp_conn *c, struct rte_mbuf *m)
{
	struct raw *r = user;

	(void)c;
	ck_assert_uint_le(r->rx_len + m->pkt_len, RX_MAX);
	r->rx_len += (uint32_t)frame_bytes(m, r->rx + r->rx_len, RX_MAX - r->rx_len);
	rte_pktmbuf_free(m);
}

static void raw_peer_closed(void *user, struct uiw_tcp_conn *c)
{
	((struct raw *)user)->peer_closed = true;
	uiw_tcp_close(c);
}

static void raw_closed(void *user, struct uiw_tcp_conn *c, int err)
{
	struct raw *r = user;

	(void)c;
	r->closed = true;
	r->err = err;
	r->c = NULL;
}

static const struct uiw_tcp_ops raw_ops = {
	.connected = raw_connected, .recv = raw_recv, .peer_closed = raw_peer_closed,
	.closed = raw_closed,
};

static int raw_accept(void *ctx, struct uiw_tcp_conn *c)
{
	struct raw *r = ctx;

	r->c = c;
	r->connected = true;
	uiw_tcp_set_user(c, &raw_ops, r);
	return 0;
}

static const struct uiw_tcp_ops raw_listen_ops = { .accept = raw_accept };

static bool raw_is(void *arg)
{
	const bool *flag = arg;

	return *flag;
}

static bool raw_has(void *arg)
{
	return raw.rx_len >= *(const uint32_t *)arg;
}

static void raw_send(const void *p, size_t n)
{
	ck_assert_int_eq(uiw_tcp_send(raw.c, frame_copy(p, n), UIW_TCP_SEND_RECORD), 0);
}

/* A raw initiator connected to the MPA listener on B. */
static void raw_connect_to_listener(const struct uiw_mpa_params *lp)
{
	memset(&raw, 0, sizeof(raw));
	ck_assert_int_eq(uiw_mpa_listen(pair_b.st.mpa, PORT, 16, lp, &ep_ops, &rsp), 0);
	ck_assert_int_eq(uiw_tcp_connect(pair_a.st.tcp, PAIR_IP_B, PORT, &raw_ops, &raw, uiw_now_ns(), &raw.c), 0);
	ck_assert(pair_run_until(raw_is, &raw.connected, 2000));
}

/* An MPA initiator on A connected to a raw listener on B. */
static void mpa_connect_to_raw(const struct uiw_mpa_params *ip)
{
	static uint32_t req_len;

	memset(&raw, 0, sizeof(raw));
	ck_assert_int_eq(uiw_tcp_listen(pair_b.st.tcp, PORT, 16, &raw_listen_ops, &raw), 0);
	ck_assert_int_eq(uiw_mpa_connect(pair_a.st.mpa, PAIR_IP_B, PORT, ip, &ep_ops, &ini, uiw_now_ns(), &ini.c), 0);
	req_len = UIW_MPA_RR_LEN + ip->pd_len + (ip->rev == 2 ? 4u : 0u) +
		  (ip->ext != 0 ? UIW_MPA_EXT_LEN : 0u);
	ck_assert(pair_run_until(raw_has, &req_len, 2000));
	ck_assert_uint_eq(raw.rx_len, req_len);   /* nothing after the Request */
	ck_assert_mem_eq(raw.rx, UIW_MPA_KEY_REQ, UIW_MPA_KEY_LEN);
}

static size_t rr_bytes(uint8_t *buf, bool reply, uint8_t flags, uint8_t rev, const uint8_t *pd,
		       uint16_t pd_len)
{
	memcpy(buf, reply ? UIW_MPA_KEY_REP : UIW_MPA_KEY_REQ, UIW_MPA_KEY_LEN);
	buf[16] = flags;
	buf[17] = rev;
	buf[18] = (uint8_t)(pd_len >> 8);
	buf[19] = (uint8_t)pd_len;
	if (pd_len > 0)
		memcpy(buf + 20, pd, pd_len);
	return 20u + pd_len;
}

/* siw's rev 2 Request with IRD/ORD 1/1 and C=0 (WIRE.md §1.5, rping-siw.pcapng). */
static size_t siw_request(uint8_t *buf, uint8_t flags)
{
	static const uint8_t v2[] = { 0x00, 0x01, 0x00, 0x01 };

	return rr_bytes(buf, false, (uint8_t)(0x10 | flags), 2, v2, 4);
}

/* The Terminate we expect for an LLP error @p code, after @p off octets of the stream. */
static void assert_terminate_at(uint32_t off, uint8_t code)
{
	static const uint8_t hdr[] = { 0x00, 0x16, 0x41, 0x47, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 1,
				       0, 0, 0, 0 };
	uint32_t want = off + 28;

	ck_assert(pair_run_until(raw_has, &want, 2000));
	ck_assert_mem_eq(raw.rx + off, hdr, sizeof(hdr));
	ck_assert_uint_eq(raw.rx[off + 20], 0x20);   /* layer LLP, etype 0 (RFC 5040 order) */
	ck_assert_uint_eq(raw.rx[off + 21], code);
	ck_assert_uint_eq(raw.rx[off + 22], 0);      /* no echoed header */
	ck_assert(pair_run_until(raw_is, &raw.peer_closed, 2000));
}

/* A raw initiator on A (siw's Request) and the MPA responder on B, established: the
 * responder holds what it sends until the initiator's first FPDU. */
static void raw_initiator_to_responder(void)
{
	struct uiw_mpa_params lp;
	uint8_t req[64];

	params(&lp);
	rsp.accept_p = lp;
	raw_connect_to_listener(&lp);
	raw_send(req, siw_request(req, 0));
	ck_assert(pair_run_until(raw_is, &rsp.established, 2000));
}

START_TEST(responder_holds_sends_until_first_fpdu)
{
	uint8_t fpdu[64];
	uint8_t ulpdu[18] = { 0x41, 0x43, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0 };
	struct uiw_mpa_iov in = { ulpdu, sizeof(ulpdu) }, out = { fpdu, sizeof(fpdu) };
	uint32_t sizes[] = { 5, 6 };

	raw_initiator_to_responder();
	send_sizes(&rsp, sizes, 2);
	uint32_t reply_len = 24;

	ck_assert(pair_run_until(raw_has, &reply_len, 2000));
	for (int i = 0; i < 100; i++)
		pair_poll();
	/* The Reply alone: 20 octets and IRD/ORD. */
	ck_assert_uint_eq(raw.rx_len, 24);
	ck_assert_mem_eq(raw.rx, UIW_MPA_KEY_REP, UIW_MPA_KEY_LEN);
	ck_assert_uint_eq(raw.rx[16], 0x10);   /* enhanced, C=0 (both sides asked for none) */
	ck_assert_uint_eq(ctr(&pair_b, UIW_MPA_C_fpdu_held), 2);
	/* The initiator's first FPDU releases them. */
	uint32_t n = uiw_mpa_fpdu_encode(&out, 1, 0, false, false, &in, 1), want = 24 + 8 + 8 + 8;

	raw_send(fpdu, n);
	ck_assert(pair_run_until(raw_has, &want, 2000));
	ck_assert_uint_eq(rsp.rx_n, 1);
	ck_assert_uint_eq(raw.rx[24 + 1], 5);
	ck_assert_uint_eq(raw.rx[24 + 12 + 1], 6);
}
END_TEST

/* Held FPDUs that TCP refuses at their release (the stack's send queues at their cap) stay
 * held, in order, with later ones behind them, and go once there is room: none is lost. */
START_TEST(held_fpdus_wait_for_room_in_order)
{
	uint8_t fpdu[64];
	uint8_t ulpdu[18] = { 0x41, 0x43, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0 };
	struct uiw_mpa_iov in = { ulpdu, sizeof(ulpdu) }, out = { fpdu, sizeof(fpdu) };
	uint32_t sizes[] = { 5, 6 }, later[] = { 7 }, reply_len = 24, n, want;
	struct uiw_tcp *tb = pair_b.st.tcp;
	unsigned saved;

	raw_initiator_to_responder();
	send_sizes(&rsp, sizes, 2);
	ck_assert(pair_run_until(raw_has, &reply_len, 2000));
	ck_assert_uint_eq(ctr(&pair_b, UIW_MPA_C_fpdu_held), 2);
	/* Every send queue of the stack full: the release finds no room. */
	saved = tb->sq_mbufs;
	tb->sq_mbufs = tb->sq_mbufs_max;
	n = uiw_mpa_fpdu_encode(&out, 1, 0, false, false, &in, 1);
	raw_send(fpdu, n);
	pair_run_for(20);
	ck_assert_uint_eq(rsp.rx_n, 1);                    /* the initiator's FPDU arrived */
	ck_assert_uint_ge(ctr(&pair_b, UIW_MPA_C_held_retry), 1);
	ck_assert_uint_eq(raw.rx_len, 24);                 /* nothing left: no room */
	tb->sq_mbufs = saved;
	send_sizes(&rsp, later, 1);                        /* queued behind the held two */
	ck_assert_uint_eq(ctr(&pair_b, UIW_MPA_C_fpdu_held), 3);
	want = 24 + 12 + 12 + 16;   /* FPDUs of 5, 6 and 7 octets, CRC fields included */
	ck_assert(pair_run_until(raw_has, &want, 2000));
	ck_assert_uint_eq(raw.rx_len, want);
	ck_assert_uint_eq(raw.rx[24 + 1], 5);
	ck_assert_uint_eq(raw.rx[24 + 12 + 1], 6);
	ck_assert_uint_eq(raw.rx[24 + 24 + 1], 7);
	ck_assert_uint_eq(ctr(&pair_b, UIW_MPA_C_held_lost), 0);
}
END_TEST

/* A send refused (TCP's budget full, or no mbuf) while nothing of the connection is
 * unacknowledged gets no ACK to call writable: the poll calls it once there may be room.
 * Before, such a QP waited for ever (1,000 QPs sharing a pool stalled this way). */
START_TEST(refused_send_with_nothing_in_flight_is_woken_by_the_poll)
{
	uint8_t fpdu[64], buf[8] = { 0 };
	uint8_t ulpdu[18] = { 0x41, 0x43, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0 };
	struct uiw_mpa_iov in = { ulpdu, sizeof(ulpdu) }, out = { fpdu, sizeof(fpdu) }, iov = { buf, 8 };
	struct uiw_tcp *tb = pair_b.st.tcp;
	unsigned saved;

	raw_initiator_to_responder();
	raw_send(fpdu, uiw_mpa_fpdu_encode(&out, 1, 0, false, false, &in, 1));
	pair_run_for(20);
	ck_assert_uint_eq(rsp.rx_n, 1);   /* full operation, nothing of ours in flight */
	saved = tb->sq_mbufs;
	tb->sq_mbufs = tb->sq_mbufs_max;
	ck_assert_int_eq(uiw_mpa_send(rsp.c, &iov, 1), -ENOBUFS);
	ck_assert_uint_eq(ctr(&pair_b, UIW_MPA_C_tx_starved), 1);
	rsp.writable = 0;
	tb->sq_mbufs = saved;
	pair_run_for(5);
	ck_assert_uint_ge(rsp.writable, 1);
	ck_assert_int_eq(uiw_mpa_send(rsp.c, &iov, 1), 0);
}
END_TEST

/* Busy connections hold each engine's whole send budget (tcp_sq_mbufs reached on both
 * sides): the Request and the Reply still go (UIW_TCP_SEND_CTRL), the RTR waits held and
 * goes once there is room, and the connection comes up. Before, the initiator failed at
 * once ("cannot send the MPA Request"): 1,024 connects in flight to a 768-mbuf budget (the default then). */
START_TEST(negotiation_while_the_send_budget_is_full)
{
	struct uiw_tcp *ta = pair_a.st.tcp, *tb = pair_b.st.tcp;
	unsigned max_a = ta->sq_mbufs_max, max_b = tb->sq_mbufs_max;
	struct uiw_mpa_params ip, lp;

	params(&ip);
	ip.rev = UIW_MPA_REV2;
	ip.p2p = true;
	ip.rtr = UIW_MPA_RTR_WRITE;
	ip.first_delay_us = 0;   /* else the RTR is held for that delay anyway */
	params(&lp);
	rsp.accept_p = lp;
	rsp.accept_p.rtr = UIW_MPA_RTR_WRITE;
	ck_assert_int_eq(uiw_mpa_listen(pair_b.st.mpa, PORT, 16, &lp, &ep_ops, &rsp), 0);
	/* A budget of 96 mbufs, all held by others (the pool's three quarters are far). */
	ta->sq_mbufs_max = tb->sq_mbufs_max = 96;
	ta->sq_mbufs += 96;
	tb->sq_mbufs += 96;
	ck_assert_int_eq(uiw_mpa_connect(pair_a.st.mpa, PAIR_IP_B, PORT, &ip, &ep_ops, &ini,
					 uiw_now_ns(), &ini.c), 0);
	pair_run_for(30);
	ck_assert_msg(ini.established, "%s", ini.reason);
	ck_assert(!ini.closed && !rsp.closed);
	ck_assert(rsp.requested);
	ck_assert(!rsp.established);                      /* the RTR is held */
	ck_assert_uint_eq(ctr(&pair_a, UIW_MPA_C_req_tx), 1);
	ck_assert_uint_eq(ctr(&pair_b, UIW_MPA_C_rep_tx), 1);
	ck_assert_uint_eq(ctr(&pair_b, UIW_MPA_C_rtr_rx), 0);
	ck_assert_uint_ge(ctr(&pair_a, UIW_MPA_C_held_retry), 1);
	ta->sq_mbufs -= 96;                               /* the others' data acknowledged */
	tb->sq_mbufs -= 96;
	ta->sq_mbufs_max = max_a;
	tb->sq_mbufs_max = max_b;
	ck_assert(pair_run_until(both_settled, NULL, 3000));
	ck_assert_msg(rsp.established, "%s", rsp.reason);
	ck_assert_uint_eq(ctr(&pair_b, UIW_MPA_C_rtr_rx), 1);
}
END_TEST

/* rdma_cm lets an application ask for IRD/ORD 255: the Request advertises what a QP serves
 * (128), and so does the Reply of a responder asked for as much. */
START_TEST(ird_ord_advertised_as_served)
{
	static const uint8_t v2[] = { 0x00, 0x05, 0x00, 0x05 };
	uint8_t buf[64], req[64];
	struct uiw_mpa_params ip, lp;

	params(&ip);
	ip.ird = 255;
	ip.ord = 200;
	mpa_connect_to_raw(&ip);
	ck_assert_uint_eq(((raw.rx[20] << 8) | raw.rx[21]) & 0x3fff, UIW_MPA_IRD_ORD_MAX);
	ck_assert_uint_eq(((raw.rx[22] << 8) | raw.rx[23]) & 0x3fff, UIW_MPA_IRD_ORD_MAX);
	raw_send(buf, rr_bytes(buf, true, 0x10, 2, v2, 4));
	ck_assert(pair_run_until(raw_is, &ini.established, 2000));
	ck_assert_uint_le(ini.info.ird, UIW_MPA_IRD_ORD_MAX);
	ck_assert_uint_eq(ini.info.ord, 5);
	uiw_tcp_unlisten(pair_b.st.tcp, PORT);
	pair_run_for(10);

	params(&lp);
	rsp.accept_p = lp;
	rsp.accept_p.ird = 255;
	rsp.accept_p.ord = 255;
	raw_connect_to_listener(&lp);
	raw_send(req, rr_bytes(req, false, 0x10, 2, (const uint8_t[]){ 0x00, 0xff, 0x00, 0xff }, 4));
	ck_assert(pair_run_until(raw_is, &rsp.established, 2000));
	uint32_t reply_len = 24;

	ck_assert(pair_run_until(raw_has, &reply_len, 2000));
	ck_assert_mem_eq(raw.rx, UIW_MPA_KEY_REP, UIW_MPA_KEY_LEN);
	ck_assert_uint_eq(((raw.rx[20] << 8) | raw.rx[21]) & 0x3fff, UIW_MPA_IRD_ORD_MAX);
	ck_assert_uint_le(((raw.rx[22] << 8) | raw.rx[23]) & 0x3fff, UIW_MPA_IRD_ORD_MAX);
	ck_assert_uint_le(rsp.info.ird, UIW_MPA_IRD_ORD_MAX);
}
END_TEST

START_TEST(initiator_takes_fpdu_behind_reply)
{
	static const uint8_t v2[] = { 0x00, 0x01, 0x00, 0x01 };
	uint8_t buf[128], payload[30];
	struct uiw_mpa_params ip;
	struct uiw_mpa_iov in = { payload, sizeof(payload) }, out;
	size_t n;

	params(&ip);
	mpa_connect_to_raw(&ip);
	/* siw as responder: Reply and its first FPDU in one segment (WIRE.md §1.5). */
	n = rr_bytes(buf, true, 0x10, 2, v2, 4);
	pattern(payload, sizeof(payload), 4);
	out = (struct uiw_mpa_iov){ buf + n, sizeof(buf) - n };
	n += uiw_mpa_fpdu_encode(&out, 1, 0, false, false, &in, 1);
	raw_send(buf, n);
	ck_assert(pair_run_until(raw_is, &ini.established, 2000));
	pair_run_for(10);
	ck_assert_uint_eq(ini.rx_n, 1);
	ck_assert_mem_eq(ini.rx, payload, sizeof(payload));
	ck_assert_uint_eq(ini.info.ird, 16);
	ck_assert_uint_eq(ini.info.ord, 1);
}
END_TEST

/* Linux siw as responder ignores an FPDU that beats its own accept: the initiator holds its
 * first FPDUs (the RTR included) mpa_initiator_delay_us after the Reply. */
START_TEST(initiator_delays_first_fpdus)
{
	static const uint8_t v2[] = { 0x80, 0x01, 0x80, 0x01 };
	uint8_t buf[64];
	struct uiw_mpa_params ip;
	uint32_t sizes[] = { 9 };
	uint32_t want;

	params(&ip);
	ip.first_delay_us = _i ? 1000000 : 0;
	ip.p2p = true;
	mpa_connect_to_raw(&ip);
	raw_send(buf, rr_bytes(buf, true, 0x10, 2, v2, 4));   /* Write RTR picked */
	ck_assert(pair_run_until(raw_is, &ini.established, 2000));
	send_sizes(&ini, sizes, 1);
	for (int i = 0; i < 100; i++)
		pair_poll();
	want = 24 + 20 + 16;   /* Request, RTR FPDU, 9-octet ULPDU FPDU */
	if (_i) {
		ck_assert_uint_eq(raw.rx_len, 24);
		ck_assert_uint_eq(ctr(&pair_a, UIW_MPA_C_fpdu_held), 2);
	}
	ck_assert(pair_run_until(raw_has, &want, 2000));
	ck_assert_uint_eq(raw.rx[24 + 2], 0xc1);   /* the RTR first: tagged, last */
	ck_assert_uint_eq(raw.rx[24 + 20 + 1], 9);
}
END_TEST

/* The initiator (@p ip) connects to a listener (@p lp; rsp.accept_p is what it accepts
 * with): both established. */
static void connect_established(const struct uiw_mpa_params *ip, const struct uiw_mpa_params *lp)
{
	ck_assert_int_eq(uiw_mpa_listen(pair_b.st.mpa, PORT, 16, lp, &ep_ops, &rsp), 0);
	ck_assert_int_eq(uiw_mpa_connect(pair_a.st.mpa, PAIR_IP_B, PORT, ip, &ep_ops, &ini,
					 uiw_now_ns(), &ini.c), 0);
	ck_assert(pair_run_until(both_settled, NULL, 3000));
	ck_assert(ini.established && rsp.established);
}

/* A responder whose Reply carries uiwarp's extension trailer is uiwarp, not siw: the
 * initiator's first FPDU goes at once, though the delay is a second. _i 1: the responder
 * announces nothing (as siw): held for the delay. */
START_TEST(no_first_fpdu_delay_toward_uiwarp)
{
	struct uiw_mpa_params ip, lp;
	uint32_t sizes[] = { 9 }, want[2] = { 0, 9 };
	bool siw_like = _i != 0;

	params(&ip);
	params(&lp);
	ip.ext = UIW_MPA_EXT_RFC7306;
	lp.ext = siw_like ? 0 : UIW_MPA_EXT_RFC7306;
	ip.first_delay_us = 1000000;
	rsp.accept_p = lp;
	connect_established(&ip, &lp);
	ck_assert_uint_eq(ini.info.ext, siw_like ? 0 : UIW_MPA_EXT_RFC7306);
	send_sizes(&ini, sizes, 1);
	if (siw_like) {
		pair_run_for(100);
		ck_assert_uint_eq(rsp.rx_len, 0);
		ck_assert_uint_eq(ctr(&pair_a, UIW_MPA_C_fpdu_held), 1);
	} else {
		ck_assert(pair_run_until(got_octets, want, 100));
		ck_assert_uint_eq(ctr(&pair_a, UIW_MPA_C_fpdu_held), 0);
		check_received(&rsp, sizes, 1);
	}
}
END_TEST

START_TEST(bad_requests_answered)
{
	static const uint8_t zeros[300];
	uint8_t req[600];
	struct uiw_mpa_params lp;
	size_t n;

	params(&lp);
	rsp.accept_p = lp;
	raw_connect_to_listener(&lp);
	switch (_i) {
	case 0: /* wrong key: not MPA, reset */
		n = siw_request(req, 0);
		req[3] = 'X';
		raw_send(req, n);
		ck_assert(pair_run_until(raw_is, &raw.closed, 2000));
		ck_assert_int_eq(raw.err, -ECONNRESET);
		ck_assert_uint_eq(ctr(&pair_b, UIW_MPA_C_bad_key), 1);
		break;
	case 1: /* revision 3: R=1 with our revision */
		n = rr_bytes(req, false, 0, 3, NULL, 0);
		raw_send(req, n);
		ck_assert(pair_run_until(raw_is, &raw.peer_closed, 2000));
		ck_assert_mem_eq(raw.rx, UIW_MPA_KEY_REP, UIW_MPA_KEY_LEN);
		ck_assert_uint_eq(raw.rx[16] & 0x20, 0x20);
		ck_assert_uint_eq(raw.rx[17], 2);
		ck_assert_uint_eq(ctr(&pair_b, UIW_MPA_C_bad_rev), 1);
		break;
	case 2: /* 300 octets of private data, over the cap of 256 */
		n = rr_bytes(req, false, 0x10, 2, zeros, 300);
		raw_send(req, n);
		ck_assert(pair_run_until(raw_is, &raw.peer_closed, 2000));
		ck_assert_uint_eq(raw.rx[16] & 0x20, 0x20);
		ck_assert_uint_eq(ctr(&pair_b, UIW_MPA_C_bad_pd_len), 1);
		break;
	case 3: /* octets after the Request before the Reply (RFC 5044 §7.1.2) */
		n = siw_request(req, 0);
		memset(req + n, 0, 8);
		rsp.defer_accept = true;
		raw_send(req, n + 8);
		ck_assert(pair_run_until(raw_is, &raw.closed, 2000));
		ck_assert_uint_eq(ctr(&pair_b, UIW_MPA_C_early_data), 1);
		break;
	case 4: /* Markers asked for, mpa_markers_ok=0: R=1 with M clear, as siw */
		uiw_mpa_unlisten(pair_b.st.mpa, PORT);
		lp.markers_ok = false;
		ck_assert_int_eq(uiw_mpa_listen(pair_b.st.mpa, PORT + 1, 16, &lp, &ep_ops, &rsp), 0);
		memset(&raw, 0, sizeof(raw));
		ck_assert_int_eq(uiw_tcp_connect(pair_a.st.tcp, PAIR_IP_B, PORT + 1, &raw_ops, &raw,
						 uiw_now_ns(), &raw.c), 0);
		ck_assert(pair_run_until(raw_is, &raw.connected, 2000));
		raw_send(req, siw_request(req, 0x80));
		ck_assert(pair_run_until(raw_is, &raw.peer_closed, 2000));
		ck_assert_uint_eq(raw.rx[16] & 0xa0, 0x20);
		ck_assert_uint_eq(ctr(&pair_b, UIW_MPA_C_markers_refused), 1);
		break;
	}
	ck_assert(!rsp.requested);
}
END_TEST

START_TEST(bad_replies_terminated)
{
	static const uint8_t v2_write[] = { 0x80, 0x01, 0x80, 0x01 };
	static const uint8_t v2[] = { 0x00, 0x01, 0x00, 0x01 };
	struct uiw_mpa_params ip;
	uint8_t rep[64];
	size_t n;
	uint32_t req_len = 24;

	params(&ip);
	if (_i == 2) {
		ip.p2p = true;
		ip.rtr = UIW_MPA_RTR_READ;
	}
	mpa_connect_to_raw(&ip);
	switch (_i) {
	case 0: /* wrong key: Terminate LLP 0x04 (WIRE.md §1.5) */
		n = rr_bytes(rep, true, 0x10, 2, v2, 4);
		rep[0] = 'm';
		raw_send(rep, n);
		assert_terminate_at(req_len, 0x04);
		ck_assert_uint_eq(ctr(&pair_a, UIW_MPA_C_bad_key), 1);
		break;
	case 1: /* R=1: rejected with the responder's private data */
		n = rr_bytes(rep, true, 0x30, 2, (const uint8_t *)"\0\0\0\0why", 7);
		raw_send(rep, n);
		ck_assert(pair_run_until(raw_is, &ini.closed, 2000));
		ck_assert(ini.rejected);
		ck_assert_int_eq(ini.peer_pd_len, 3);
		ck_assert_mem_eq(ini.peer_pd, "why", 3);
		ck_assert_int_eq(ini.err, -ECONNREFUSED);
		break;
	case 2: /* Write RTR chosen where only Read was offered: LLP 0x07 */
		n = rr_bytes(rep, true, 0x10, 2, v2_write, 4);
		raw_send(rep, n);
		assert_terminate_at(req_len, 0x07);
		ck_assert_uint_eq(ctr(&pair_a, UIW_MPA_C_bad_reply), 1);
		break;
	case 3: /* revision raised */
		n = rr_bytes(rep, true, 0x10, 2, v2, 4);
		ip.rev = 1;
		uiw_mpa_abort(ini.c, "test");
		ep_reset(&ini);
		uiw_tcp_unlisten(pair_b.st.tcp, PORT);
		pair_run_for(5);
		mpa_connect_to_raw(&ip);
		raw_send(rep, n);
		assert_terminate_at(20, 0x04);
		break;
	}
	if (_i != 1) {
		ck_assert(pair_run_until(raw_is, &ini.closed, 2000));
		ck_assert_int_eq(ini.err, -EPROTO);
		ck_assert(!ini.established);
	}
}
END_TEST

START_TEST(timeouts)
{
	struct uiw_mpa_params p;
	uint8_t req[64];

	params(&p);
	p.timeout_ms = 50;
	p.request_timeout_ms = 50;
	if (_i == 0) {
		/* A responder that never answers. */
		mpa_connect_to_raw(&p);
		ck_assert(pair_run_until(raw_is, &ini.closed, 2000));
		ck_assert_int_eq(ini.err, -ETIMEDOUT);
		ck_assert_uint_eq(ctr(&pair_a, UIW_MPA_C_timeout), 1);
	} else if (_i == 1) {
		/* An initiator that never sends its Request. */
		raw_connect_to_listener(&p);
		ck_assert(pair_run_until(raw_is, &raw.closed, 2000));
		ck_assert_uint_eq(ctr(&pair_b, UIW_MPA_C_timeout), 1);
	} else if (_i == 2) {
		/* Peer-to-peer: an initiator that never sends its RTR. */
		static const uint8_t v2[] = { 0x80, 0x01, 0x80, 0x01 };

		rsp.accept_p = p;
		raw_connect_to_listener(&p);
		raw_send(req, rr_bytes(req, false, 0x10, 2, v2, 4));
		ck_assert(pair_run_until(raw_is, &rsp.closed, 2000));
		ck_assert(!rsp.established);
		ck_assert_int_eq(rsp.err, -ETIMEDOUT);
	} else if (_i == 3) {
		/* An application that never answers the Request (mpa_reply_timeout_ms: the
		 * time an initiator waits for the Reply). */
		rsp.defer_accept = true;
		raw_connect_to_listener(&p);
		raw_send(req, siw_request(req, 0));
		ck_assert(pair_run_until(raw_is, &rsp.closed, 2000));
		ck_assert(rsp.requested && !rsp.established);
		ck_assert_int_eq(rsp.err, -ETIMEDOUT);
		ck_assert_ptr_nonnull(strstr(rsp.reason, "neither accepted nor rejected"));
		ck_assert(pair_run_until(raw_is, &raw.closed, 2000));
	} else {
		/* A responder with an FPDU to send, held until the initiator's first one
		 * (RFC 5044 §7.1.2), which never comes. */
		uint8_t ulpdu[18] = { 0x41, 0x43, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0 };
		struct uiw_mpa_iov in = { ulpdu, sizeof(ulpdu) };

		rsp.accept_p = p;
		raw_connect_to_listener(&p);
		raw_send(req, siw_request(req, 0));
		ck_assert(pair_run_until(raw_is, &rsp.established, 2000));
		ck_assert_int_eq(uiw_mpa_send(rsp.c, &in, 1), 0);
		ck_assert(pair_run_until(raw_is, &rsp.closed, 2000));
		ck_assert_int_eq(rsp.err, -ETIMEDOUT);
		ck_assert_ptr_nonnull(strstr(rsp.reason, "no FPDU from the initiator"));
		ck_assert(pair_run_until(raw_is, &raw.closed, 2000));
	}
	ck_assert_uint_eq(uiw_mpa_conn_count(pair_a.st.mpa) + uiw_mpa_conn_count(pair_b.st.mpa), 0);
}
END_TEST

static struct raw raws[4];

static bool raw_n_settled(void *arg)
{
	unsigned n = *(const unsigned *)arg;

	for (unsigned i = 0; i < n; i++)
		if (!raws[i].connected && !raws[i].closed)
			return false;
	return true;
}

/* A listener's backlog bounds the connections waiting for their Request or for the
 * application: beyond it a connection is reset and counted; once the waiting ones time
 * out, there is room again. */
START_TEST(pending_requests_capped)
{
	struct uiw_mpa_params p;
	uint8_t req[64];
	unsigned four = 4;

	params(&p);
	p.request_timeout_ms = 500;   /* outlasts the three connects under a loaded ASan run */
	rsp.accept_p = p;
	memset(raws, 0, sizeof(raws));
	ck_assert_int_eq(uiw_mpa_listen(pair_b.st.mpa, PORT, 2, &p, &ep_ops, &rsp), 0);
	for (unsigned i = 0; i < 3; i++) {   /* one after another: the SYN backlog is 2 too */
		unsigned upto = i + 1;

		ck_assert_int_eq(uiw_tcp_connect(pair_a.st.tcp, PAIR_IP_B, PORT, &raw_ops, &raws[i],
						 uiw_now_ns(), &raws[i].c), 0);
		ck_assert(pair_run_until(raw_n_settled, &upto, 2000));
	}
	ck_assert(pair_run_until(raw_is, &raws[2].closed, 2000));
	ck_assert_int_eq(raws[2].err, -ECONNRESET);
	ck_assert_uint_eq(ctr(&pair_b, UIW_MPA_C_pending_refused), 1);
	ck_assert(!raws[0].closed && !raws[1].closed);
	/* The two waiting ones give up after mpa_request_timeout_ms; then one more gets in. */
	ck_assert(pair_run_until(raw_is, &raws[1].closed, 2000));
	ck_assert(pair_run_until(raw_is, &raws[0].closed, 2000));
	ck_assert_uint_eq(ctr(&pair_b, UIW_MPA_C_timeout), 2);
	ck_assert_int_eq(uiw_tcp_connect(pair_a.st.tcp, PAIR_IP_B, PORT, &raw_ops, &raws[3],
					 uiw_now_ns(), &raws[3].c), 0);
	ck_assert(pair_run_until(raw_n_settled, &four, 2000));
	ck_assert(!raws[3].closed);
	ck_assert_int_eq(uiw_tcp_send(raws[3].c, frame_copy(req, siw_request(req, 0)),
				      UIW_TCP_SEND_RECORD), 0);
	ck_assert(pair_run_until(raw_is, &rsp.established, 2000));
	ck_assert_uint_eq(ctr(&pair_b, UIW_MPA_C_pending_refused), 1);
	uiw_tcp_abort(raws[3].c);
}
END_TEST

/* pair_run_until(): side B holds no MPA connection (each freed, its counts added). */
static bool mpa_idle(void *arg)
{
	(void)arg;
	return uiw_mpa_conn_count(pair_b.st.mpa) == 0;
}

/* In full operation, a bad CRC and a Marker off its FPDU are Terminated (RFC 5044 §8).
 * _i: 0 a bad CRC, 1 a Marker, 2 a bad CRC on an FPDU of 600 octets that fills its
 * segment, whose CRC TCP takes in its checksum's pass (its checksum right). */
START_TEST(stream_errors_terminated)
{
	uint8_t req[64], fpdu[700];
	struct uiw_mpa_params lp;
	uint8_t ulpdu[600] = { 0x41, 0x43, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0 };
	struct uiw_mpa_iov in = { ulpdu, _i == 2 ? 600 : 18 }, out = { fpdu, sizeof(fpdu) };
	bool markers = _i == 1;
	uint32_t n;

	params(&lp);
	lp.crc = true;
	lp.markers = markers;
	rsp.accept_p = lp;
	raw_connect_to_listener(&lp);
	raw_send(req, siw_request(req, 0));
	ck_assert(pair_run_until(raw_is, &rsp.established, 2000));
	ck_assert(rsp.info.crc);
	n = uiw_mpa_fpdu_encode(&out, 1, 0, markers, true, &in, 1);
	if (markers)
		fpdu[3] = 4;       /* the leading Marker's FPDUPTR */
	else
		fpdu[n - 1] ^= 1;  /* the CRC */
	raw_send(fpdu, n);
	/* The Terminate is the responder's first FPDU, with CRC; with Markers asked of us,
	 * it starts with a Marker. */
	uint32_t want = 24 + 28;

	ck_assert(pair_run_until(raw_has, &want, 2000));
	ck_assert_uint_eq(raw.rx[24 + 1], 0x16);
	ck_assert_uint_eq(raw.rx[24 + 20], 0x20);
	ck_assert_uint_eq(raw.rx[24 + 21], markers ? 0x03 : 0x02);
	ck_assert_uint_eq(rsp.rx_n, 0);
	ck_assert(pair_run_until(raw_is, &rsp.closed, 2000));
	ck_assert_int_eq(rsp.err, -EPROTO);
	ck_assert_uint_eq(ctr(&pair_b, markers ? UIW_MPA_C_marker_err : UIW_MPA_C_crc_err), 1);
	ck_assert(pair_run_until(mpa_idle, NULL, 2000));
	ck_assert_uint_eq(ctr(&pair_b, UIW_MPA_C_rx_crc_with_sum), _i == 2);
}
END_TEST

START_TEST(wrong_rtr_terminated)
{
	static const uint8_t v2[] = { 0x80, 0x01, 0x80, 0x01 };
	uint8_t req[64], fpdu[64];
	uint8_t send0[18] = { 0x41, 0x43, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0 };
	struct uiw_mpa_iov in = { send0, sizeof(send0) }, out = { fpdu, sizeof(fpdu) };
	struct uiw_mpa_params lp;

	params(&lp);
	rsp.accept_p = lp;
	raw_connect_to_listener(&lp);
	raw_send(req, rr_bytes(req, false, 0x10, 2, v2, 4));   /* Write RTR offered */
	uint32_t want = 24;

	ck_assert(pair_run_until(raw_has, &want, 2000));
	ck_assert_uint_eq(raw.rx[24 - 2] & 0x80, 0x80);         /* Write RTR picked */
	raw_send(fpdu, uiw_mpa_fpdu_encode(&out, 1, 0, false, false, &in, 1));   /* a Send */
	assert_terminate_at(24, 0x07);
	ck_assert_uint_eq(ctr(&pair_b, UIW_MPA_C_rtr_bad), 1);
	ck_assert(!rsp.established);
}
END_TEST

START_TEST(pd_512_with_raised_cap)
{
	static uint8_t pd[512];
	struct uiw_mpa_params ip, lp;

	params(&ip);
	params(&lp);
	ip.rev = 1;
	ip.pd = pd;
	ip.pd_len = 512;
	pattern(pd, sizeof(pd), 3);
	lp.pd_max = 512;
	rsp.accept_p = lp;
	ck_assert_int_eq(uiw_mpa_listen(pair_b.st.mpa, PORT, 16, &lp, &ep_ops, &rsp), 0);
	ck_assert_int_eq(uiw_mpa_connect(pair_a.st.mpa, PAIR_IP_B, PORT, &ip, &ep_ops, &ini, uiw_now_ns(), &ini.c), 0);
	ck_assert(pair_run_until(both_settled, NULL, 3000));
	ck_assert(ini.established && rsp.established);
	ck_assert_int_eq(rsp.peer_pd_len, 512);
	ck_assert_mem_eq(rsp.peer_pd, pd, 512);
}
END_TEST

/* docs/MPA.md: the RDMAP extensions are used only when both sides announce them, and the
 * trailer never reaches the consumer: its private data arrives as it was given, both ways,
 * whoever announces. _i: bit 0 the initiator announces, bit 1 the responder. */
START_TEST(extension_used_only_when_both_announce)
{
	uint8_t pd[40], rpd[24];
	struct uiw_mpa_params ip, lp;
	bool ini_on = (_i & 1) != 0, rsp_on = (_i & 2) != 0;
	uint32_t want = ini_on && rsp_on ? UIW_MPA_EXT_RFC7306 : 0;

	params(&ip);
	params(&lp);
	pattern(pd, sizeof(pd), 5);
	pattern(rpd, sizeof(rpd), 9);
	ip.pd = pd;
	ip.pd_len = sizeof(pd);
	ip.ext = ini_on ? UIW_MPA_EXT_RFC7306 : 0;
	lp.ext = rsp_on ? UIW_MPA_EXT_RFC7306 : 0;
	rsp.accept_p = lp;
	rsp.accept_p.pd = rpd;
	rsp.accept_p.pd_len = sizeof(rpd);
	connect_established(&ip, &lp);
	ck_assert_uint_eq(ini.info.ext, want);
	ck_assert_uint_eq(rsp.info.ext, want);
	ck_assert_int_eq(rsp.peer_pd_len, sizeof(pd));
	ck_assert_mem_eq(rsp.peer_pd, pd, sizeof(pd));
	ck_assert_int_eq(ini.peer_pd_len, sizeof(rpd));
	ck_assert_mem_eq(ini.peer_pd, rpd, sizeof(rpd));
}
END_TEST

/* The trailer sits behind the consumer's octets, so a peer that does not know it (siw) hands
 * its consumer the Request's own private data at the offsets it expects; it is left out
 * where it would take the frame past the 256 octets siw takes. */
START_TEST(extension_trailer_on_the_wire)
{
	uint8_t pd[248], buf[UIW_MPA_RR_LEN + UIW_MPA_PD_MAX];
	struct uiw_mpa_rr_info in = { .rev = 2, .enhanced = true, .ird = 4, .ord = 4, .pd = pd,
				      .ext = UIW_MPA_EXT_RFC7306 }, out;
	size_t used, len;

	pattern(pd, sizeof(pd), 1);
	in.pd_len = 12;
	len = uiw_mpa_rr_build(&in, buf, sizeof(buf));
	ck_assert_uint_eq(len, UIW_MPA_RR_LEN + 4 + 12 + UIW_MPA_EXT_LEN);
	ck_assert_uint_eq(buf[19], 4 + 12 + UIW_MPA_EXT_LEN);
	ck_assert_mem_eq(buf + UIW_MPA_RR_LEN + 4, pd, 12);
	ck_assert_mem_eq(buf + UIW_MPA_RR_LEN + 16, "\0\0\0\x01uIWx", 8);
	ck_assert_int_eq(uiw_mpa_rr_parse(buf, len, false, 256, &out, &used), UIW_MPA_PARSE_OK);
	ck_assert_uint_eq(out.ext, UIW_MPA_EXT_RFC7306);
	ck_assert_uint_eq(out.pd_len, 12);
	/* 4 + 244 + 8 = 256 fits; 4 + 245 + 8 does not: the frame goes without the trailer. */
	in.pd_len = 244;
	ck_assert_uint_eq(uiw_mpa_rr_build(&in, buf, sizeof(buf)), UIW_MPA_RR_LEN + 256);
	in.pd_len = 245;
	len = uiw_mpa_rr_build(&in, buf, sizeof(buf));
	ck_assert_uint_eq(len, UIW_MPA_RR_LEN + 4 + 245);
	ck_assert_int_eq(uiw_mpa_rr_parse(buf, len, false, 256, &out, &used), UIW_MPA_PARSE_OK);
	ck_assert_uint_eq(out.ext, 0);
	ck_assert_uint_eq(out.pd_len, 245);
}
END_TEST

START_TEST(responder_crc_and_reject_by_owner)
{
	struct uiw_mpa_params ip, lp;

	params(&ip);
	params(&lp);
	rsp.accept_p = lp;
	rsp.accept_p.crc = true;
	ck_assert_int_eq(uiw_mpa_listen(pair_b.st.mpa, PORT, 16, &lp, &ep_ops, &rsp), 0);
	ck_assert_int_eq(uiw_mpa_connect(pair_a.st.mpa, PAIR_IP_B, PORT, &ip, &ep_ops, &ini, uiw_now_ns(), &ini.c), 0);
	ck_assert(pair_run_until(both_settled, NULL, 3000));
	ck_assert(ini.info.crc && rsp.info.crc);
	uiw_mpa_close(ini.c);
	ck_assert(pair_run_until(both_closed, NULL, 3000));
	/* The owner rejects with private data. */
	ep_reset(&ini);
	ep_reset(&rsp);
	rsp.defer_accept = true;
	ck_assert_int_eq(uiw_mpa_connect(pair_a.st.mpa, PAIR_IP_B, PORT, &ip, &ep_ops, &ini, uiw_now_ns(), &ini.c), 0);
	ck_assert(pair_run_until(raw_is, &rsp.requested, 3000));
	ck_assert_int_eq(uiw_mpa_reject(rsp.c, (const uint8_t *)"busy", 4), 0);
	ck_assert(pair_run_until(both_closed, NULL, 3000));
	ck_assert(ini.rejected);
	ck_assert_int_eq(ini.peer_pd_len, 4);
	ck_assert_mem_eq(ini.peer_pd, "busy", 4);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("mpa_conn");
	TCase *tc = tcase_with_leak_check("mpa_conn", setup, teardown);

	tcase_add_loop_test(tc, negotiation_matrix, 0, 2 * 2 * 2 * 4 * 6);
	tcase_add_test(tc, responder_holds_sends_until_first_fpdu);
	tcase_add_test(tc, held_fpdus_wait_for_room_in_order);
	tcase_add_test(tc, refused_send_with_nothing_in_flight_is_woken_by_the_poll);
	tcase_add_test(tc, negotiation_while_the_send_budget_is_full);
	tcase_add_test(tc, ird_ord_advertised_as_served);
	tcase_add_test(tc, initiator_takes_fpdu_behind_reply);
	tcase_add_loop_test(tc, initiator_delays_first_fpdus, 0, 2);
	tcase_add_loop_test(tc, no_first_fpdu_delay_toward_uiwarp, 0, 2);
	tcase_add_loop_test(tc, bad_requests_answered, 0, 5);
	tcase_add_loop_test(tc, bad_replies_terminated, 0, 4);
	tcase_add_loop_test(tc, timeouts, 0, 5);
	tcase_add_test(tc, pending_requests_capped);
	tcase_add_loop_test(tc, stream_errors_terminated, 0, 3);
	tcase_add_test(tc, wrong_rtr_terminated);
	tcase_add_test(tc, pd_512_with_raised_cap);
	tcase_add_loop_test(tc, extension_used_only_when_both_announce, 0, 4);
	tcase_add_test(tc, extension_trailer_on_the_wire);
	tcase_add_test(tc, responder_crc_and_reject_by_owner);
	tcase_add_loop_test(tc, tso_frames_cut_one_fpdu_per_segment, 0, 7);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
