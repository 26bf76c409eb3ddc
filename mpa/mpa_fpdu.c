/* SPDX-License-Identifier: BSD-3-Clause */
#include "mpa_fpdu.h"

#include <string.h>

#include "uiw_crc32c.h"

uint32_t uiw_mpa_fpdu_wire_len(uint32_t pos, uint32_t ulen, bool markers)
{
	uint32_t len = uiw_mpa_fpdu_len(ulen);

	if (!markers)
		return len;
	/* Every Marker position before the (growing) end belongs to this FPDU; one exactly at
	 * the end leads the next FPDU. */
	for (uint32_t m = uiw_mpa_marker_gap(pos); m < len; m += UIW_MPA_MARKER_INTERVAL)
		len += UIW_MPA_MARKER_LEN;
	return len;
}

uint32_t uiw_mpa_mulpdu(uint32_t emss, bool markers)
{
	uint32_t over = 6 + emss % 4;

	if (markers)
		over += UIW_MPA_MARKER_LEN * ((emss + UIW_MPA_MARKER_INTERVAL - 1) / UIW_MPA_MARKER_INTERVAL);
	if (emss <= over)
		return 0;
	return emss - over > UINT16_MAX ? UINT16_MAX : emss - over;
}

/* Writes into a list of output pieces, inserting Markers and folding octets into the CRC. */
struct fpdu_writer {
	const struct uiw_mpa_iov *out;
	unsigned nout, i;
	uint32_t off;        /* within out[i] */
	uint32_t pos;        /* stream position of the next octet */
	uint32_t start;      /* stream position of the FPDU's first octet */
	uint32_t crc;
	bool markers, ok;
};

static void put_raw(struct fpdu_writer *w, const uint8_t *src, uint32_t n, bool crc_it)
{
	if (crc_it)
		w->crc = uiw_crc32c_update(w->crc, src, n);
	w->pos += n;
	while (n > 0) {
		if (w->i == w->nout) {
			w->ok = false;
			return;
		}
		uint32_t room = w->out[w->i].len - w->off;
		uint32_t k = n < room ? n : room;

		memcpy((uint8_t *)w->out[w->i].base + w->off, src, k);
		w->off += k;
		src += k;
		n -= k;
		if (w->off == w->out[w->i].len) {
			w->i++;
			w->off = 0;
		}
	}
}

static void marker_if_due(struct fpdu_writer *w)
{
	uint8_t mk[UIW_MPA_MARKER_LEN];

	if (!w->markers || w->pos % UIW_MPA_MARKER_INTERVAL != 0)
		return;
	uiw_mpa_marker_set(mk, (uint16_t)(w->pos - w->start));
	put_raw(w, mk, sizeof(mk), true);
}

static void put(struct fpdu_writer *w, const uint8_t *src, uint32_t n)
{
	while (n > 0) {
		marker_if_due(w);
		uint32_t k = w->markers ? UIW_MPA_MARKER_INTERVAL - w->pos % UIW_MPA_MARKER_INTERVAL : n;

		if (k > n)
			k = n;
		put_raw(w, src, k, true);
		src += k;
		n -= k;
	}
}

uint32_t uiw_mpa_fpdu_encode(const struct uiw_mpa_iov *out, unsigned nout, uint32_t pos,
			     bool markers, bool crc, const struct uiw_mpa_iov *in, unsigned nin)
{
	struct fpdu_writer w = { .out = out, .nout = nout, .pos = pos, .start = pos,
				 .crc = UIW_CRC32C_INIT, .markers = markers, .ok = true };
	static const uint8_t zeros[4];
	uint8_t hdr[UIW_MPA_FPDU_HDR_LEN], trailer[UIW_MPA_CRC_LEN];
	uint64_t ulen = 0;

	for (unsigned k = 0; k < nin; k++)
		ulen += in[k].len;
	if (ulen > UINT16_MAX)
		return 0;
	uiw_mpa_ulpdu_len_set(hdr, (uint16_t)ulen);
	put(&w, hdr, sizeof(hdr));
	for (unsigned k = 0; k < nin; k++)
		put(&w, in[k].base, in[k].len);
	put(&w, zeros, uiw_mpa_pad((uint32_t)ulen));
	marker_if_due(&w);   /* a Marker may sit between the pad and the CRC */
	uiw_mpa_crc_set(trailer, crc ? uiw_crc32c_final(w.crc) : 0);
	put_raw(&w, trailer, sizeof(trailer), false);
	return w.ok ? w.pos - pos : 0;
}
