/* SPDX-License-Identifier: BSD-3-Clause */
#include "mpa_rr.h"

#include <string.h>

static void read_v2(const uint8_t *p, struct uiw_mpa_rr_info *o)
{
	struct uiw_mpa_v2 v;
	uint16_t ird, ord;

	memcpy(&v, p, sizeof(v));
	ird = uiw_mpa_v2_ird(&v);
	ord = uiw_mpa_v2_ord(&v);
	o->ird = ird & UIW_MPA_V2_VALUE_MASK;
	o->ord = ord & UIW_MPA_V2_VALUE_MASK;
	o->peer_to_peer = (ird & UIW_MPA_V2_PEER_TO_PEER) != 0;
	o->rtr_zero_send = (ird & UIW_MPA_V2_ZERO_RTR) != 0;
	o->rtr_write = (ord & UIW_MPA_V2_WRITE_RTR) != 0;
	o->rtr_read = (ord & UIW_MPA_V2_READ_RTR) != 0;
}

enum uiw_mpa_parse uiw_mpa_rr_parse(const uint8_t *buf, size_t len, bool reply, uint16_t pd_max,
				    struct uiw_mpa_rr_info *out, size_t *used)
{
	struct uiw_mpa_rr h;
	uint16_t pd_len;
	size_t v2 = 0;

	memset(out, 0, sizeof(*out));
	/* RFC 5044 §7.1.2: the key is checked as soon as it is here. */
	if (memcmp(buf, reply ? UIW_MPA_KEY_REP : UIW_MPA_KEY_REQ,
		   len < UIW_MPA_KEY_LEN ? len : UIW_MPA_KEY_LEN) != 0)
		return UIW_MPA_PARSE_BAD_KEY;
	if (len < UIW_MPA_RR_LEN)
		return UIW_MPA_PARSE_NEED_MORE;
	memcpy(&h, buf, sizeof(h));
	/* siw accepts revisions 0 to 2 (WIRE.md §1.5); RFC 5044/6581 define 1 and 2. */
	if (h.rev > UIW_MPA_REV2)
		return UIW_MPA_PARSE_BAD_REV;
	pd_len = uiw_mpa_pd_len(&h);
	if (pd_len > pd_max || pd_len > UIW_MPA_PD_MAX)
		return UIW_MPA_PARSE_BAD_PD_LEN;
	out->reply = reply;
	out->rev = h.rev;
	out->markers = (h.flags & UIW_MPA_FLAG_M) != 0;
	out->crc = (h.flags & UIW_MPA_FLAG_C) != 0;
	out->reject = reply && (h.flags & UIW_MPA_FLAG_R) != 0;
	out->enhanced = h.rev == UIW_MPA_REV2 && (h.flags & UIW_MPA_FLAG_ENHANCED) != 0;
	if (out->enhanced) {
		if (pd_len < UIW_MPA_V2_LEN)
			return UIW_MPA_PARSE_BAD_PD_LEN;
		v2 = UIW_MPA_V2_LEN;
	}
	if (len < UIW_MPA_RR_LEN + pd_len)
		return UIW_MPA_PARSE_NEED_MORE;
	if (out->enhanced)
		read_v2(buf + UIW_MPA_RR_LEN, out);
	out->pd = buf + UIW_MPA_RR_LEN + v2;
	out->pd_len = (uint16_t)(pd_len - v2);
	if (out->pd_len >= UIW_MPA_EXT_LEN) {
		struct uiw_mpa_ext e;

		memcpy(&e, out->pd + out->pd_len - UIW_MPA_EXT_LEN, sizeof(e));
		out->ext = uiw_mpa_ext_flags(&e);
		if (out->ext != 0)
			out->pd_len -= UIW_MPA_EXT_LEN;
	}
	*used = UIW_MPA_RR_LEN + pd_len;
	return UIW_MPA_PARSE_OK;
}

size_t uiw_mpa_rr_build(const struct uiw_mpa_rr_info *in, uint8_t *buf, size_t cap)
{
	bool v2 = in->rev == UIW_MPA_REV2 && in->enhanced;
	size_t pd_len = in->pd_len + (v2 ? UIW_MPA_V2_LEN : 0);
	bool ext = in->ext != 0 && uiw_mpa_rr_ext_room(in) &&
		   UIW_MPA_RR_LEN + pd_len + UIW_MPA_EXT_LEN <= cap;
	struct uiw_mpa_rr h;
	uint8_t flags = 0;

	if (pd_len > UIW_MPA_PD_MAX || UIW_MPA_RR_LEN + pd_len > cap)
		return 0;
	if (ext) {
		struct uiw_mpa_ext e;

		uiw_mpa_ext_set(&e, in->ext);
		memcpy(buf + UIW_MPA_RR_LEN + pd_len, &e, sizeof(e));
		pd_len += UIW_MPA_EXT_LEN;
	}
	flags |= in->markers ? UIW_MPA_FLAG_M : 0;
	flags |= in->crc ? UIW_MPA_FLAG_C : 0;
	flags |= in->reply && in->reject ? UIW_MPA_FLAG_R : 0;
	flags |= v2 ? UIW_MPA_FLAG_ENHANCED : 0;
	memcpy(h.key, in->reply ? UIW_MPA_KEY_REP : UIW_MPA_KEY_REQ, UIW_MPA_KEY_LEN);
	uiw_mpa_rr_set(&h, flags, in->rev, (uint16_t)pd_len);
	memcpy(buf, &h, sizeof(h));
	if (v2) {
		struct uiw_mpa_v2 v;
		uint16_t ird = (uint16_t)(in->ird & UIW_MPA_V2_VALUE_MASK);
		uint16_t ord = (uint16_t)(in->ord & UIW_MPA_V2_VALUE_MASK);

		ird |= in->peer_to_peer ? UIW_MPA_V2_PEER_TO_PEER : 0;
		ird |= in->rtr_zero_send ? UIW_MPA_V2_ZERO_RTR : 0;
		ord |= in->rtr_write ? UIW_MPA_V2_WRITE_RTR : 0;
		ord |= in->rtr_read ? UIW_MPA_V2_READ_RTR : 0;
		uiw_mpa_v2_set(&v, ird, ord);
		memcpy(buf + UIW_MPA_RR_LEN, &v, sizeof(v));
	}
	if (in->pd_len > 0)
		memcpy(buf + UIW_MPA_RR_LEN + (v2 ? UIW_MPA_V2_LEN : 0), in->pd, in->pd_len);
	return UIW_MPA_RR_LEN + pd_len;
}

const char *uiw_mpa_parse_name(enum uiw_mpa_parse r)
{
	static const char *const names[] = { "ok", "need more", "bad key", "bad revision",
					     "bad private data length" };

	return (unsigned)r < sizeof(names) / sizeof(names[0]) ? names[r] : "?";
}
