/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * FPDU framing and the streaming deframer (RFC 5044 §4, §5). Encoded FPDUs are checked by
 * an independent reader written here from the RFC (bitwise CRC32c, Markers found by stream
 * position), and the deframer must give identical ULPDUs however the stream is cut.
 */
#include <stdlib.h>
#include <string.h>

#include "check_common.h"
#include "mpa_deframe.h"
#include "mpa_fpdu.h"

#define STREAM_MAX (256 * 1024)

/* CRC32c bit by bit (reflected 0x82F63B78), independent of the library's tables. */
static uint32_t ref_crc32c(const uint8_t *p, size_t n)
{
	uint32_t c = 0xFFFFFFFFu;

	for (size_t i = 0; i < n; i++) {
		c ^= p[i];
		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1u)));
	}
	return ~c;
}

/*
 * Reads one FPDU of @p len wire octets starting at stream position @p pos: every Marker
 * must sit at a multiple of 512 and point back to the FPDU's first octet; the rest must be
 * length, ULPDU, zero pad and the CRC (or zero). @return the ULPDU length, or -1.
 */
static int ref_unframe(const uint8_t *w, uint32_t len, uint32_t pos, bool markers, bool crc,
		       uint8_t *ulpdu)
{
	static uint8_t flat[70000];
	uint32_t n = 0;

	for (uint32_t i = 0; i < len;) {
		if (markers && (pos + i) % 512 == 0 && i + 4 <= len - 4) {
			if (w[i] != 0 || w[i + 1] != 0 || (uint32_t)(w[i + 2] << 8 | w[i + 3]) != i)
				return -1;
			i += 4;
			continue;
		}
		flat[n++] = w[i++];
	}
	uint32_t ulen = (uint32_t)flat[0] << 8 | flat[1];
	uint32_t pad = (4 - (ulen + 2) % 4) % 4;

	if (n != 2 + ulen + pad + 4)
		return -1;
	for (uint32_t k = 0; k < pad; k++)
		if (flat[2 + ulen + k] != 0)
			return -1;
	uint32_t got = (uint32_t)w[len - 4] | (uint32_t)w[len - 3] << 8 | (uint32_t)w[len - 2] << 16 |
		       (uint32_t)w[len - 1] << 24;

	if (got != (crc ? ref_crc32c(w, len - 4) : 0))
		return -1;
	memcpy(ulpdu, flat + 2, ulen);
	return (int)ulen;
}

/* WIRE.md §2.6: a Send, MSN 1, "hello iwarp", as Wireshark decodes it with a good CRC. */
START_TEST(worked_send_fpdu_bytes)
{
	static const uint8_t want[] = { 0x00, 0x1d, 0x41, 0x43, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1,
					0, 0, 0, 0, 'h', 'e', 'l', 'l', 'o', ' ', 'i', 'w', 'a', 'r',
					'p', 0x00, 0xcf, 0x69, 0x6c, 0x1e };
	uint8_t ulpdu[29] = { 0x41, 0x43, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0 };
	uint8_t out[64];
	struct uiw_mpa_iov in = { ulpdu, sizeof(ulpdu) }, o = { out, sizeof(out) };

	memcpy(ulpdu + 18, "hello iwarp", 11);
	ck_assert_uint_eq(uiw_mpa_fpdu_wire_len(0, sizeof(ulpdu), false), sizeof(want));
	ck_assert_uint_eq(uiw_mpa_fpdu_encode(&o, 1, 0, false, true, &in, 1), sizeof(want));
	ck_assert_mem_eq(out, want, sizeof(want));
	/* CRC off: the field is there and zero (siw does the same). */
	ck_assert_uint_eq(uiw_mpa_fpdu_encode(&o, 1, 0, false, false, &in, 1), sizeof(want));
	ck_assert_mem_eq(out, want, sizeof(want) - 4);
	ck_assert_uint_eq(out[32] | out[33] | out[34] | out[35], 0);
}
END_TEST

START_TEST(pad_and_lengths)
{
	ck_assert_uint_eq(uiw_mpa_pad(0), 2);
	ck_assert_uint_eq(uiw_mpa_pad(1), 1);
	ck_assert_uint_eq(uiw_mpa_pad(2), 0);
	ck_assert_uint_eq(uiw_mpa_pad(3), 3);
	ck_assert_uint_eq(uiw_mpa_fpdu_len(0), UIW_MPA_FPDU_MIN);
	/* A Marker falling at the FPDU start leads it; one at its end leads the next. */
	ck_assert_uint_eq(uiw_mpa_fpdu_wire_len(0, 0, true), 12);
	ck_assert_uint_eq(uiw_mpa_fpdu_wire_len(504, 2, true), 8);
	ck_assert_uint_eq(uiw_mpa_fpdu_wire_len(508, 2, true), 12);
	ck_assert_uint_eq(uiw_mpa_fpdu_wire_len(500, 2, true), 8);
}
END_TEST

/* RFC 5044 §4.1 MULPDU, and that such an FPDU fits the segment wherever it starts. */
START_TEST(mulpdu_fits_every_start)
{
	static const uint32_t emss[] = { 536, 1448, 1460, 8948, 8960, 9000 };

	ck_assert_uint_eq(uiw_mpa_mulpdu(1460, false), 1454);
	ck_assert_uint_eq(uiw_mpa_mulpdu(1448, false), 1442);
	ck_assert_uint_eq(uiw_mpa_mulpdu(1460, true), 1442);
	ck_assert_uint_eq(uiw_mpa_mulpdu(1448, true), 1430);
	ck_assert_uint_eq(uiw_mpa_mulpdu(6, false), 0);
	for (unsigned i = 0; i < sizeof(emss) / sizeof(emss[0]); i++)
		for (int mk = 0; mk < 2; mk++) {
			uint32_t mul = uiw_mpa_mulpdu(emss[i], mk);

			for (uint32_t pos = 0; pos < 512; pos += 4)
				ck_assert_uint_le(uiw_mpa_fpdu_wire_len(pos, mul, mk), emss[i]);
			if (!mk)   /* without Markers it is tight */
				ck_assert_uint_gt(uiw_mpa_fpdu_wire_len(0, mul + 4, false), emss[i]);
		}
}
END_TEST

static void fill(uint8_t *p, size_t n, uint32_t seed)
{
	for (size_t i = 0; i < n; i++) {
		seed = seed * 1103515245u + 12345u;
		p[i] = (uint8_t)(seed >> 16);
	}
}

/* Every ULPDU length 0..MULPDU, each start position class, Markers and CRC on and off. */
START_TEST(encode_every_length_round_trips)
{
	static uint8_t data[1460], wire[1600], back[1600];
	bool markers = _i & 1, crc = _i & 2;
	uint32_t mul = uiw_mpa_mulpdu(1460, markers), pos = 0;

	fill(data, sizeof(data), 7);
	for (uint32_t ulen = 0; ulen <= mul; ulen++) {
		struct uiw_mpa_iov in[2] = { { data, ulen / 3 }, { data + ulen / 3, ulen - ulen / 3 } };
		struct uiw_mpa_iov out[3] = { { wire, 7 }, { wire + 7, 500 }, { wire + 507, 1093 } };
		uint32_t n = uiw_mpa_fpdu_encode(out, 3, pos, markers, crc, in, 2);

		ck_assert_uint_eq(n, uiw_mpa_fpdu_wire_len(pos, ulen, markers));
		ck_assert_int_eq(ref_unframe(wire, n, pos, markers, crc, back), (int)ulen);
		ck_assert_mem_eq(back, data, ulen);
		pos += n;
	}
}
END_TEST

START_TEST(encode_refuses_small_room_and_long_ulpdu)
{
	static uint8_t data[70000], wire[64];
	struct uiw_mpa_iov in = { data, 60 }, out = { wire, sizeof(wire) };

	ck_assert_uint_eq(uiw_mpa_fpdu_encode(&out, 1, 0, false, true, &in, 1), 0);
	in.len = 65536;
	ck_assert_uint_eq(uiw_mpa_fpdu_encode(&out, 1, 0, false, true, &in, 1), 0);
}
END_TEST

/* A stream of FPDUs of assorted lengths; lens[] gets each ULPDU length. */
struct stream {
	uint8_t bytes[STREAM_MAX];
	uint32_t len;
	uint8_t data[STREAM_MAX];   /* the ULPDUs back to back */
	uint32_t data_len;
	unsigned n;
};

static void make_stream(struct stream *s, bool markers, bool crc, unsigned count, uint32_t maxlen)
{
	uint32_t seed = 99;

	s->len = s->data_len = 0;
	s->n = 0;
	fill(s->data, sizeof(s->data), 3);
	for (unsigned i = 0; i < count; i++) {
		seed = seed * 1103515245u + 12345u;
		uint32_t ulen = i < 4 ? i : (seed >> 8) % (maxlen + 1);
		struct uiw_mpa_iov in = { s->data + s->data_len, ulen };
		struct uiw_mpa_iov out = { s->bytes + s->len, STREAM_MAX - s->len };
		uint32_t n = uiw_mpa_fpdu_encode(&out, 1, s->len, markers, crc, &in, 1);

		ck_assert_uint_gt(n, 0);
		s->len += n;
		s->data_len += ulen;
		s->n++;
	}
}

struct sink {
	uint8_t got[STREAM_MAX];
	uint32_t len;
	unsigned n;
	unsigned stop_after;   /* 0 = never */
};

static int sink_fn(void *arg, const struct uiw_mpa_ulpdu *u)
{
	struct sink *k = arg;

	ck_assert_uint_eq(uiw_mpa_ulpdu_copy(u, 0, k->got + k->len, u->len), u->len);
	k->len += u->len;
	k->n++;
	return k->stop_after != 0 && k->n == k->stop_after;
}

/* Feeds s in chunks of sizes from @p cut (called with the offset), each chunk split again
 * into a two-segment chain when @p chain. */
static enum uiw_mpa_rx feed(struct uiw_mpa_deframer *d, const uint8_t *p, uint32_t len,
			    uint32_t (*cut)(uint32_t off, void *arg), void *arg, bool chain,
			    struct sink *k)
{
	enum uiw_mpa_rx r = UIW_MPA_RX_OK;

	for (uint32_t off = 0; off < len && r == UIW_MPA_RX_OK;) {
		uint32_t n = cut(off, arg);

		if (n > len - off)
			n = len - off;
		if (n > 2000)
			n = 2000;
		struct rte_mbuf *m = chain && n > 1 ? frame_split(p + off, n, n / 2) : frame_exact(p + off, n);

		ck_assert_ptr_nonnull(m);
		r = uiw_mpa_deframer_push(d, m, sink_fn, k);
		off += n;
	}
	return r;
}

static uint32_t cut_fixed(uint32_t off, void *arg)
{
	(void)off;
	return *(uint32_t *)arg;
}

static uint32_t cut_at(uint32_t off, void *arg)
{
	uint32_t at = *(uint32_t *)arg;

	return off < at ? at - off : 2000;
}

static uint32_t cut_random(uint32_t off, void *arg)
{
	uint32_t *seed = arg;

	(void)off;
	*seed = *seed * 1103515245u + 12345u;
	return 1 + (*seed >> 8) % 1500;
}

/* @return how many ULPDUs had to be copied whole (joined). */
static uint64_t check_feed(struct stream *s, bool markers, bool crc,
			   uint32_t (*cut)(uint32_t, void *), void *arg, bool chain)
{
	static struct sink k;
	struct uiw_mpa_deframer d;
	uint64_t joined;

	memset(&k, 0, sizeof(k));
	uiw_mpa_deframer_init(&d, markers, crc);
	ck_assert_int_eq(feed(&d, s->bytes, s->len, cut, arg, chain, &k), UIW_MPA_RX_OK);
	ck_assert_uint_eq(k.n, s->n);
	ck_assert_uint_eq(k.len, s->data_len);
	ck_assert_mem_eq(k.got, s->data, s->data_len);
	ck_assert_uint_eq(d.avail, 0);
	ck_assert_ptr_null(d.scratch);   /* a joined ULPDU's copy lives for its callback only */
	joined = d.joined;
	uiw_mpa_deframer_fini(&d);
	return joined;
}

static struct stream stream_buf;

START_TEST(deframer_any_split_same_ulpdus)
{
	bool markers = _i & 1, crc = _i & 2;
	struct stream *s = &stream_buf;

	make_stream(s, markers, crc, 40, 1500);
	uint32_t one = 1, whole = 2000, seed = (uint32_t)_i + 1;

	check_feed(s, markers, crc, cut_fixed, &one, false);
	check_feed(s, markers, crc, cut_fixed, &whole, true);
	for (int rounds = 0; rounds < 20; rounds++)
		check_feed(s, markers, crc, cut_random, &seed, rounds & 1);
	/* Split at every offset of the first 3000 octets. */
	for (uint32_t at = 1; at < 3000 && at < s->len; at++)
		check_feed(s, markers, crc, cut_at, &at, false);
}
END_TEST

/* One FPDU of 60,000 octets cut into one-octet segments (as a hostile peer may): the
 * deframer never holds more than about one mbuf per 1 KiB of it (a 4,095-mbuf pool would
 * not even hold a tenth of the segments), and the ULPDU arrives whole with a good CRC. */
START_TEST(deframer_tiny_segments_bounded)
{
	struct stream *s = &stream_buf;
	static struct sink k;
	struct uiw_mpa_deframer d;
	unsigned most = 0;

	s->len = s->data_len = 0;
	fill(s->data, 60000, 11);
	struct uiw_mpa_iov in = { s->data, 60000 }, out = { s->bytes, STREAM_MAX };

	s->len = uiw_mpa_fpdu_encode(&out, 1, 0, false, true, &in, 1);
	ck_assert_uint_gt(s->len, 60000);
	memset(&k, 0, sizeof(k));
	uiw_mpa_deframer_init(&d, false, true);
	for (uint32_t off = 0; off < s->len; off++) {
		ck_assert_int_eq(uiw_mpa_deframer_push(&d, frame_copy(s->bytes + off, 1), sink_fn, &k),
				 UIW_MPA_RX_OK);
		if (d.nheld > most)
			most = d.nheld;
		ck_assert_uint_le(d.nheld, 1 + d.avail / 1024);
	}
	ck_assert_uint_eq(k.n, 1);
	ck_assert_uint_eq(k.len, 60000);
	ck_assert_mem_eq(k.got, s->data, 60000);
	ck_assert_uint_eq(d.nheld, 0);
	ck_assert_uint_gt(most, 1);
	ck_assert_uint_ge(d.coalesced, 59000);
	uiw_mpa_deframer_fini(&d);
}
END_TEST

/* FPDUs longer than a segment, over Markers, in many small pieces: joined once. */
START_TEST(deframer_joins_large_ulpdus)
{
	struct stream *s = &stream_buf;
	uint32_t seed = 5, sixty = 60;

	make_stream(s, true, true, 8, 65535);
	check_feed(s, true, true, cut_random, &seed, true);
	ck_assert_uint_gt(check_feed(s, true, true, cut_fixed, &sixty, false), 0);
}
END_TEST

static enum uiw_mpa_rx feed_whole(struct uiw_mpa_deframer *d, const uint8_t *p, uint32_t len,
				  struct sink *k)
{
	uint32_t whole = 2000;

	return feed(d, p, len, cut_fixed, &whole, false, k);
}

START_TEST(deframer_crc_error_stops_stream)
{
	static struct sink k;
	struct stream *s = &stream_buf;
	struct uiw_mpa_deframer d;

	make_stream(s, false, true, 10, 300);
	/* Corrupt one octet of the 5th FPDU's ULPDU. */
	uint32_t off = 0;

	for (unsigned i = 0; i < 4; i++)
		off += uiw_mpa_fpdu_len((uint32_t)s->bytes[off] << 8 | s->bytes[off + 1]);
	s->bytes[off + 2] ^= 0x01;
	memset(&k, 0, sizeof(k));
	uiw_mpa_deframer_init(&d, false, true);
	ck_assert_int_eq(feed_whole(&d, s->bytes, s->len, &k), UIW_MPA_RX_CRC);
	ck_assert_uint_eq(k.n, 4);    /* nothing of the bad FPDU, nothing after it */
	ck_assert_int_eq(uiw_mpa_deframer_push(&d, frame_copy(s->bytes, 8), sink_fn, &k), UIW_MPA_RX_CRC);
	ck_assert_uint_eq(k.n, 4);
	uiw_mpa_deframer_fini(&d);
	/* With CRC off the same stream is taken as it is. */
	memset(&k, 0, sizeof(k));
	uiw_mpa_deframer_init(&d, false, false);
	ck_assert_int_eq(feed_whole(&d, s->bytes, s->len, &k), UIW_MPA_RX_OK);
	ck_assert_uint_eq(k.n, 10);
	uiw_mpa_deframer_fini(&d);
}
END_TEST

START_TEST(deframer_marker_mismatch)
{
	static struct sink k;
	struct stream *s = &stream_buf;
	struct uiw_mpa_deframer d;

	/* FPDUPTR of the Marker at 1024 off by 4. */
	make_stream(s, true, false, 20, 700);
	s->bytes[1024 + 3] ^= 0x04;
	memset(&k, 0, sizeof(k));
	uiw_mpa_deframer_init(&d, true, false);
	ck_assert_int_eq(feed_whole(&d, s->bytes, s->len, &k), UIW_MPA_RX_MARKER);
	ck_assert_uint_lt(k.len, 1024);
	uiw_mpa_deframer_fini(&d);
	/* A wrong ULPDU_Length is caught by the next Marker. */
	make_stream(s, true, false, 20, 700);
	s->bytes[4 + 1] ^= 0x20;   /* the first FPDU (after its leading Marker) */
	memset(&k, 0, sizeof(k));
	uiw_mpa_deframer_init(&d, true, false);
	ck_assert_int_eq(feed_whole(&d, s->bytes, s->len, &k), UIW_MPA_RX_MARKER);
	uiw_mpa_deframer_fini(&d);
}
END_TEST

START_TEST(deframer_stop_and_partial_hold)
{
	static struct sink k;
	struct stream *s = &stream_buf;
	struct uiw_mpa_deframer d;

	make_stream(s, false, true, 6, 100);
	memset(&k, 0, sizeof(k));
	k.stop_after = 2;
	uiw_mpa_deframer_init(&d, false, true);
	ck_assert_int_eq(feed_whole(&d, s->bytes, s->len, &k), UIW_MPA_RX_STOPPED);
	ck_assert_uint_eq(k.n, 2);
	uiw_mpa_deframer_fini(&d);   /* the held mbufs go back to the pool */
	/* Half an FPDU is held, not handed on. */
	memset(&k, 0, sizeof(k));
	uiw_mpa_deframer_init(&d, false, true);
	ck_assert_int_eq(uiw_mpa_deframer_push(&d, frame_copy(s->bytes, 5), sink_fn, &k), UIW_MPA_RX_OK);
	ck_assert_uint_eq(k.n, 0);
	ck_assert_uint_eq(d.avail, 5);
	uiw_mpa_deframer_fini(&d);
}
END_TEST

/* Every third ULPDU offered is sent back (UIW_MPA_ULPDU_WAIT), as a QP with no receive
 * posted does; nothing of it is taken. */
struct wait_sink {
	struct sink k;
	unsigned calls, waits;
};

static int wait_sink_fn(void *arg, const struct uiw_mpa_ulpdu *u)
{
	struct wait_sink *w = arg;

	if (w->calls++ % 3 == 2) {
		w->waits++;
		return UIW_MPA_ULPDU_WAIT;
	}
	return sink_fn(&w->k, u);
}

/* A callback that waits: that ULPDU and everything behind it are held (more segments
 * arriving meanwhile are held too, nothing handed on), and come again in order, each
 * exactly once, with Markers and CRC checked, when resumed: at once or after more
 * segments, at any cut of the stream. */
START_TEST(deframer_wait_and_resume)
{
	bool markers = _i & 1, crc = _i & 2;
	struct stream *s = &stream_buf;
	static struct wait_sink w;
	uint32_t seed = 7 + (uint32_t)_i;

	make_stream(s, markers, crc, 60, 1500);
	for (int round = 0; round < 30; round++) {
		struct uiw_mpa_deframer d;

		memset(&w, 0, sizeof(w));
		uiw_mpa_deframer_init(&d, markers, crc);
		for (uint32_t off = 0; off < s->len;) {
			seed = seed * 1103515245u + 12345u;
			uint32_t n = 1 + (seed >> 8) % 1500;

			n = n > s->len - off ? s->len - off : n;
			enum uiw_mpa_rx r = uiw_mpa_deframer_push(&d, frame_copy(s->bytes + off, n),
								  wait_sink_fn, &w);

			off += n;
			ck_assert(r == UIW_MPA_RX_OK || r == UIW_MPA_RX_WAIT);
			if (r == UIW_MPA_RX_WAIT && d.waiting && (seed >> 4) % 2 == 0) {
				/* Still waiting: a push hands nothing on. */
				if (off < s->len) {
					seed = seed * 1103515245u + 12345u;
					n = 1 + (seed >> 8) % 200;
					n = n > s->len - off ? s->len - off : n;
					unsigned before = w.k.n;

					ck_assert_int_eq(uiw_mpa_deframer_push(&d, frame_copy(s->bytes + off, n),
									       wait_sink_fn, &w),
							 UIW_MPA_RX_WAIT);
					ck_assert_uint_eq(w.k.n, before);
					off += n;
				}
			}
			while (d.waiting)
				r = uiw_mpa_deframer_resume(&d, wait_sink_fn, &w);
			ck_assert_int_eq(r, UIW_MPA_RX_OK);
		}
		ck_assert_uint_gt(w.waits, 10);
		ck_assert_uint_eq(w.k.n, s->n);
		ck_assert_uint_eq(w.k.len, s->data_len);
		ck_assert_mem_eq(w.k.got, s->data, s->data_len);
		ck_assert_uint_eq(d.avail, 0);
		ck_assert_uint_eq(d.fpdus, s->n);   /* each counted once */
		ck_assert_ptr_null(d.scratch);
		uiw_mpa_deframer_fini(&d);
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("mpa_fpdu");
	TCase *tc = tcase_with_leak_check("fpdu", NULL, NULL);

	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, worked_send_fpdu_bytes);
	tcase_add_test(tc, pad_and_lengths);
	tcase_add_test(tc, mulpdu_fits_every_start);
	tcase_add_loop_test(tc, encode_every_length_round_trips, 0, 4);
	tcase_add_test(tc, encode_refuses_small_room_and_long_ulpdu);
	tcase_add_loop_test(tc, deframer_any_split_same_ulpdus, 0, 4);
	tcase_add_test(tc, deframer_joins_large_ulpdus);
	tcase_add_test(tc, deframer_tiny_segments_bounded);
	tcase_add_test(tc, deframer_crc_error_stops_stream);
	tcase_add_test(tc, deframer_marker_mismatch);
	tcase_add_test(tc, deframer_stop_and_partial_hold);
	tcase_add_loop_test(tc, deframer_wait_and_resume, 0, 4);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
