/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer harness for a connected QP: the whole receive path (Ethernet, IPv4, TCP, MPA,
 * DDP, RDMAP) and its state. Each input starts a fresh stack instance whose QP listens; the
 * harness is the peer: it opens the TCP connection and sends an MPA Request (CRC if the
 * input says), the QP accepts, and then the input's records drive both sides:
 *
 *   0-2  the peer sends an FPDU holding the record's octets as its ULPDU (MPA length, pad and
 *        CRC filled in), cut into up to three TCP segments where the record says
 *   3    the peer sends one raw segment: flags, a sequence offset and payload from the record
 *   4    the local application posts a Send (any kind), Write or Read between its regions
 *        and STags, offsets and lengths the record names
 *   5    region 2 (the peer's Read and Write target) is deregistered, its memory freed, and
 *        registered again at a new address under the same STag
 *   6    a region is invalidated locally
 *   7    time passes (up to 1.27 s), and the peer acknowledges, perhaps with a zero window
 *
 * The peer acknowledges everything the stack has sent on each segment. Regions are
 * exact-size heap memory (256 octets): a byte placed or read outside one, or read from a
 * freed one, is an error under ASan. After the input the QP and the instance are closed
 * and no mbuf may be left in use.
 *
 * Input: byte 0 flags (bit 0: ask for CRC; bit 1: post receives; bit 2: a local Read
 * outstanding), then records of [kind][a][b][length, 2 octets big-endian][octets].
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_mbuf.h>

#include "fuzz_common.h"
#include "mpa_wire.h"
#include "rdmap.h"
#include "tcp_internal.h"
#include "uiw_crc32c.h"
#include "uiw_log.h"
#include "uiw_stack.h"
#include "uiw_time.h"

#define US 0x0a000102u
#define PEER 0x0a000101u
#define PEER_PORT 40000
#define PORT 5000
#define PEER_ISN 1000u
#define REGION 256
#define NREG 3
#define STREAM_KEEP 64

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct rte_mempool *pool;

/* The peer's view of the connection, from the frames the stack sends. */
static struct {
	bool syn_seen;
	uint32_t their_iss, their_nxt;
	uint8_t stream[STREAM_KEEP];   /* the first octets the stack sent (the MPA Reply) */
	uint32_t peer_seq;
} v;

static struct {
	struct uiw_stack st;
	struct uiw_stag_table stags;
	struct uiw_cq scq, rcq;
	struct uiw_qp *qp;
	uint8_t *mem[NREG];
	bool crc;
	uint64_t now;
} r;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	pool = fuzz_eal_pool(4095);
	return 0;
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void put16(uint8_t *p, uint16_t x)
{
	p[0] = (uint8_t)(x >> 8);
	p[1] = (uint8_t)x;
}

/* What the stack sends: its sequence numbers, and the start of its byte stream. */
static void seen(const struct rte_mbuf *m)
{
	uint8_t f[14 + 60 + 60 + STREAM_KEEP];
	uint32_t n = m->pkt_len < sizeof(f) ? m->pkt_len : (uint32_t)sizeof(f);
	const uint8_t *ip = f + 14, *th;
	uint32_t ihl, doff, seq, len, tot;

	const uint8_t *p = rte_pktmbuf_read(m, 0, n, f);

	if (p == NULL)
		return;
	if (p != f)
		memcpy(f, p, n);
	if (n < 54 || f[12] != 0x08 || f[13] != 0x00 || ip[9] != 6)
		return;
	ihl = (ip[0] & 0x0fu) * 4;
	tot = (uint32_t)ip[2] << 8 | ip[3];
	th = ip + ihl;
	doff = (th[12] >> 4) * 4u;
	seq = get32(th + 4);
	len = tot - ihl - doff;
	if (th[13] & UIW_TCP_SYN) {
		v.syn_seen = true;
		v.their_iss = seq;
		v.their_nxt = seq + 1;
		return;
	}
	if (!v.syn_seen)
		return;
	for (uint32_t i = 0; i < len; i++) {
		uint32_t at = seq + i - (v.their_iss + 1);

		if (at < STREAM_KEEP && 14 + ihl + doff + i < n)
			v.stream[at] = th[doff + i];
	}
	if ((int32_t)(seq + len + !!(th[13] & UIW_TCP_FIN) - v.their_nxt) > 0)
		v.their_nxt = seq + len + !!(th[13] & UIW_TCP_FIN);
}

static void run(unsigned passes)
{
	struct uiw_wc wc[16];

	for (unsigned i = 0; i < passes; i++) {
		uiw_stack_poll(&r.st, r.now);
		uiw_port_flush(&r.st.port);
		while (uiw_cq_poll(&r.scq, wc, 16) > 0)
			;
		while (uiw_cq_poll(&r.rcq, wc, 16) > 0)
			;
	}
}

/* One segment from the peer; @p seq absolute. */
static void segment(uint8_t flags, uint32_t seq, uint16_t win, const uint8_t *payload, uint32_t len,
		    bool mss)
{
	static const uint8_t mss_opt[4] = { 2, 4, 0x05, 0xb4 };   /* MSS 1460 */
	const struct fuzz_seg s = {
		.src = PEER, .dst = US, .sport = PEER_PORT, .dport = PORT, .seq = seq,
		.ack = (flags & UIW_TCP_ACK) ? v.their_nxt : 0, .flags = flags, .win = win,
		.opts = mss_opt, .optlen = mss ? 4 : 0, .payload = payload, .len = len > 1460 ? 1460 : len };
	struct rte_mbuf *m = fuzz_tcp_frame(pool, r.st.port.mac.addr_bytes, &s);

	uiw_net_input(&r.st.net, &m, 1, r.now);
	run(2);
}

/* In-order data from the peer, acknowledging what the stack sent. */
static void data(const uint8_t *p, uint32_t len)
{
	while (len > 0) {
		uint32_t n = len > 1460 ? 1460 : len;

		segment(UIW_TCP_ACK | UIW_TCP_PSH, v.peer_seq, 65535, p, n, false);
		v.peer_seq += n;
		p += n;
		len -= n;
	}
}

static void on_request(void *ctx, struct uiw_mpa_conn *c, const struct uiw_mpa_rr_info *req)
{
	struct uiw_config cfg;
	struct uiw_mpa_params p;

	(void)ctx;
	(void)req;
	uiw_config_defaults(&cfg);
	uiw_mpa_params_from_config(&p, &cfg);
	p.crc = false;
	p.ird = p.ord = 4;
	uiw_mpa_accept(c, &p, &uiw_qp_mpa_ops, r.qp);
}

static const struct uiw_mpa_ops listen_ops = { .request = on_request };

/* Region @p i in slot i with a fixed STag the input can name: 0x10000, 0x10101, 0x10202. */
static void region_up(unsigned i)
{
	static const unsigned access[NREG] = { 7, UIW_ACCESS_LOCAL_WRITE, 7 };
	struct uiw_mr *mr;

	r.mem[i] = malloc(REGION);
	if (r.mem[i] == NULL)
		abort();
	memset(r.mem[i], 0x5a, REGION);
	r.stags.next = i;
	mr = uiw_stag_register(&r.stags, 1, r.mem[i], REGION, 0x1000u * (i + 1), access[i], (uint8_t)i);
	if (mr == NULL || mr != &r.stags.mr[i])
		abort();
	mr->stag = (i + 256) << 8 | i;
}

static uint32_t stag_of(unsigned i)
{
	return (i + 256) << 8 | i;
}

static bool rig_up(uint8_t flags)
{
	const struct uiw_stack_opts o = { .top = UIW_STACK_MPA, .port_id = UIW_STACK_PORT_READY };
	struct uiw_qp_attr a = { .qp_num = 1, .pd = 1, .sq_size = 16, .rq_size = 16,
				 .send_cq = &r.scq, .recv_cq = &r.rcq, .stags = &r.stags };
	struct uiw_config cfg;
	struct uiw_mpa_params lp;
	uint8_t req[24], arp[42] = { 0x02, 0, 0, 0, 0, 0x01, 0x02, 0, 0, 0, 0, 0x02, 0x08, 0x06,
				     0, 1, 8, 0, 6, 4, 0, 1, 0x02, 0, 0, 0, 0, 0x02,
				     10, 0, 1, 1, 0, 0, 0, 0, 0, 0, 10, 0, 1, 2 };
	char err[128];
	struct rte_mbuf *m;

	memset(&r, 0, sizeof(r));
	memset(&v, 0, sizeof(v));
	r.now = uiw_now_ns();
	uiw_config_defaults(&cfg);
	cfg.ip = US;
	cfg.prefix_len = 24;
	cfg.tcp_max_conns = 4;
	cfg.tcp_ooo_max = 16;
	cfg.tcp_delack_us = 0;
	cfg.tcp_time_wait_ms = 0;
	fuzz_port_init(&r.st.port, pool, seen);
	if (uiw_stack_open(&r.st, &cfg, &o, err, sizeof(err)) != 0 ||
	    uiw_stag_table_init(&r.stags, 4) != 0 || uiw_cq_init(&r.scq, 64) != 0 ||
	    uiw_cq_init(&r.rcq, 64) != 0 || uiw_qp_create(&r.qp, &a) != 0)
		abort();
	for (unsigned i = 0; i < NREG; i++)
		region_up(i);
	m = rte_pktmbuf_alloc(pool);
	memcpy(rte_pktmbuf_append(m, sizeof(arp)), arp, sizeof(arp));
	uiw_net_input(&r.st.net, &m, 1, r.now);
	uiw_mpa_params_from_config(&lp, &cfg);
	if (uiw_mpa_listen(r.st.mpa, PORT, 4, &lp, &listen_ops, NULL) != 0)
		abort();
	/* TCP handshake, then an MPA revision 2 Request with IRD/ORD 4. */
	segment(UIW_TCP_SYN, PEER_ISN, 65535, NULL, 0, true);
	if (!v.syn_seen)
		return false;
	v.peer_seq = PEER_ISN + 1;
	segment(UIW_TCP_ACK, v.peer_seq, 65535, NULL, 0, false);
	memcpy(req, UIW_MPA_KEY_REQ, UIW_MPA_KEY_LEN);
	req[16] = (uint8_t)(0x10 | ((flags & 1) ? 0x40 : 0));
	req[17] = 2;
	put16(req + 18, 4);
	put16(req + 20, 4);
	put16(req + 22, 4);
	data(req, sizeof(req));
	run(4);
	if (uiw_qp_state(r.qp) != UIW_QPS_RTS)
		return false;
	r.crc = (v.stream[16] & 0x40) != 0;
	for (unsigned i = 0; i < 4 && (flags & 2); i++) {
		struct uiw_recv_wr w = { .wr_id = i, .nsge = 2,
					 .sg = { { r.mem[0], 100, 0 }, { r.mem[0] + 100, 28, 0 } } };

		uiw_qp_post_recv(r.qp, &w);
	}
	if (flags & 4) {
		struct uiw_send_wr w = { .op = UIW_WR_READ, .nsge = 1, .sg = { { r.mem[0] + 128, 128, 0 } },
					 .rkey = 0x20000, .remote_addr = 0x8000,
					 .sink_stag = stag_of(0), .sink_to = 0x1080, .signaled = true };

		uiw_qp_post_send(r.qp, &w);
		run(2);
	}
	return true;
}

static void rig_down(void)
{
	uiw_qp_destroy(r.qp);
	uiw_stack_close(&r.st);
	uiw_cq_fini(&r.scq);
	uiw_cq_fini(&r.rcq);
	uiw_stag_table_fini(&r.stags);
	for (unsigned i = 0; i < NREG; i++)
		free(r.mem[i]);
}

/* The peer's FPDU with ULPDU @p u, cut at @p a and @p b. */
static void peer_fpdu(const uint8_t *u, uint32_t len, uint8_t a, uint8_t b)
{
	static uint8_t f[2 + 65535 + 3 + 4];
	uint32_t n = 2 + len, c1, c2;

	put16(f, (uint16_t)len);
	memcpy(f + 2, u, len);
	while (n % 4)
		f[n++] = 0;
	if (r.crc) {
		uint32_t crc = uiw_crc32c(f, n);

		f[n] = (uint8_t)crc;
		f[n + 1] = (uint8_t)(crc >> 8);
		f[n + 2] = (uint8_t)(crc >> 16);
		f[n + 3] = (uint8_t)(crc >> 24);
	} else {
		memset(f + n, 0, 4);
	}
	n += 4;
	c1 = a % (n + 1);
	c2 = c1 + b % (n - c1 + 1);
	data(f, c1);
	data(f + c1, c2 - c1);
	data(f + c2, n - c2);
}

static void local_post(uint8_t a, uint8_t b, const uint8_t *d, uint32_t len)
{
	static const enum uiw_wr_op ops[] = { UIW_WR_SEND, UIW_WR_SEND_INV, UIW_WR_SEND_SE,
					      UIW_WR_SEND_SE_INV, UIW_WR_WRITE, UIW_WR_READ };
	uint8_t x[12] = { 0 };
	unsigned reg = b % 2;   /* regions 0 and 1: region 2 may be freed under a WR */
	uint32_t off, n;
	struct uiw_send_wr w = { .op = ops[a % 6], .nsge = 1, .signaled = (a & 0x80) != 0 };

	memcpy(x, d, len < sizeof(x) ? len : sizeof(x));
	off = x[0] % REGION;
	n = ((uint32_t)x[1] << 8 | x[2]) % (REGION - off + 1);
	w.sg[0] = (struct uiw_sge){ r.mem[reg] + off, n, 0 };
	/* The peer's STag: one of ours (as if it were looping back) or any. */
	w.rkey = (x[3] & 0x80) ? stag_of(x[3] % NREG) : get32(x + 4);
	w.inv_stag = w.rkey;
	w.remote_addr = (uint64_t)get32(x + 8);
	if (w.op == UIW_WR_READ) {
		w.sink_stag = stag_of(reg);
		w.sink_to = 0x1000u * (reg + 1) + off;
	}
	uiw_qp_post_send(r.qp, &w);
	run(2);
}

int LLVMFuzzerTestOneInput(const uint8_t *data_in, size_t size)
{
	unsigned in_use = rte_mempool_in_use_count(pool);
	size_t off = 1;

	if (size < 1 || size > 65536)
		return 0;
	if (rig_up(data_in[0])) {
		while (off + 5 <= size) {
			uint8_t kind = data_in[off] % 8, a = data_in[off + 1], b = data_in[off + 2];
			uint32_t len = (uint32_t)data_in[off + 3] << 8 | data_in[off + 4];
			const uint8_t *d = data_in + off + 5;

			off += 5;
			if (len > size - off)
				len = (uint32_t)(size - off);
			off += len;
			switch (kind) {
			case 0: case 1: case 2:
				peer_fpdu(d, len, a, b);
				break;
			case 3:
				segment(a, v.peer_seq + (uint32_t)(int8_t)b, 65535, d, len, false);
				break;
			case 4:
				local_post(a, b, d, len);
				break;
			case 5:
				uiw_stag_deregister(&r.stags, &r.stags.mr[2]);
				free(r.mem[2]);
				region_up(2);
				run(2);
				break;
			case 6:
				uiw_stag_invalidate(&r.stags, stag_of(a % NREG), 1);
				run(2);
				break;
			default:
				r.now += (uint64_t)(a & 0x7f) * 10 * UIW_NS_PER_MS;
				segment(UIW_TCP_ACK, v.peer_seq, (b & 1) ? 0 : 65535, NULL, 0, false);
				run(4);
				break;
			}
		}
	}
	if (getenv("FUZZ_QP_TRACE") != NULL) {   /* what an input reached, for a corpus check */
		const uint64_t *c = uiw_qp_counters(r.qp);

		fprintf(stderr, "fuzz_qp: state %d, crc %d, sends %lu, writes %lu, read requests %lu, "
			"read responses %lu, terminates out %lu in %lu\n", (int)uiw_qp_state(r.qp), r.crc,
			(unsigned long)c[UIW_RDMAP_C_rx_send], (unsigned long)c[UIW_RDMAP_C_rx_write],
			(unsigned long)c[UIW_RDMAP_C_rx_read_req], (unsigned long)c[UIW_RDMAP_C_rx_read_resp],
			(unsigned long)c[UIW_RDMAP_C_term_tx], (unsigned long)c[UIW_RDMAP_C_term_rx]);
	}
	rig_down();
	if (rte_mempool_in_use_count(pool) != in_use)
		abort();
	return 0;
}
