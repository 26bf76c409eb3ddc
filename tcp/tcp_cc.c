/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Congestion control and loss recovery: NewReno (RFC 5681, RFC 6582) with byte counting
 * (RFC 3465), SACK-based recovery (RFC 6675, simplified: the pipe is the flight less what
 * is SACKed), initial window of ten segments (RFC 6928).
 */
#include "tcp_internal.h"

#define DUPACK_THRESHOLD 3 /* RFC 5681 §3.2 */

uint32_t uiw_tcp_flight(const struct uiw_tcp_conn *c)
{
	return c->snd_max - c->snd_una;
}

/* Bytes SACKed above @p seq. */
static uint32_t sacked_above(const struct uiw_tcp_conn *c, uint32_t seq)
{
	uint32_t n = 0;

	for (unsigned i = 0; i < c->nscore; i++)
		if (seq_ge(c->score[i][0], seq))
			n += c->score[i][1] - c->score[i][0];
	return n;
}

/*
 * RFC 6675 §4 SetPipe: bytes in flight that are neither SACKed nor deemed lost (a hole
 * with more than DupThresh-1 segments SACKed above it), plus what was retransmitted.
 */
uint32_t uiw_tcp_pipe(const struct uiw_tcp_conn *c)
{
	uint32_t pipe = 0, pos = c->snd_una;
	uint32_t lost_thresh = (DUPACK_THRESHOLD - 1) * (uint32_t)c->mss;

	for (unsigned i = 0; i < c->nscore; i++) {
		uint32_t hole_end = c->score[i][0];

		if (seq_lt(pos, hole_end)) {
			if (sacked_above(c, hole_end) > lost_thresh) {
				if (seq_gt(c->high_rxt, pos))
					pipe += seq_min(c->high_rxt, hole_end) - pos;
			} else {
				pipe += hole_end - pos;
			}
		}
		pos = seq_max(pos, c->score[i][1]);
	}
	if (seq_lt(pos, c->snd_max))
		pipe += c->snd_max - pos;
	return pipe;
}

/* RFC 5827 early retransmit: with fewer than four segments out and nothing new to send,
 * fewer duplicates are enough. */
static uint32_t dupthresh(const struct uiw_tcp_conn *c)
{
	uint32_t oseg = (uiw_tcp_flight(c) + c->mss - 1) / c->mss;
	bool unsent = c->sq.bytes > c->snd_max - c->snd_una;

	if (!unsent && oseg <= DUPACK_THRESHOLD)
		return oseg > 1 ? oseg - 1 : 1;
	return DUPACK_THRESHOLD;
}

/* Drops what snd_una has passed from the scoreboard, and counts what stays. */
void uiw_tcp_score_prune(struct uiw_tcp_conn *c)
{
	unsigned k = 0;
	uint32_t n = 0;

	for (unsigned i = 0; i < c->nscore; i++) {
		if (seq_le(c->score[i][1], c->snd_una))
			continue;
		c->score[k][0] = seq_max(c->score[i][0], c->snd_una);
		c->score[k][1] = c->score[i][1];
		n += c->score[k][1] - c->score[k][0];
		k++;
	}
	c->nscore = (uint8_t)k;
	c->sacked_bytes = n;
}

void uiw_tcp_cc_init(struct uiw_tcp_conn *c)
{
	c->cwnd = 10u * c->mss;
	c->ssthresh = 0x7fffffff;
}

static void enter_recovery(struct uiw_tcp_conn *c)
{
	struct uiw_tcp *t = c->tcp;

	/* RFC 5681 §3.2 (2): ssthresh = max(FlightSize / 2, 2 * SMSS). */
	c->ssthresh = u32_max(uiw_tcp_flight(c) / 2, 2u * c->mss);
	c->recover = c->snd_max;
	c->flags |= TF_IN_RECOVERY;
	c->st.fast_retransmits++;
	tcp_count(t, UIW_TCP_C_fast_retransmits);
	c->flags &= (uint16_t)~TF_RTT_ACTIVE;
	if (c->flags & TF_SACK_OK) {
		/* RFC 6675 §5 (4): cwnd = ssthresh, and the first hole goes out at once,
		 * whatever the pipe says. */
		uint32_t seq = c->snd_una, end, len;
		int n;

		c->cwnd = c->ssthresh;
		while (uiw_tcp_sack_is_sacked(c, seq, &end))
			seq = end;
		len = u32_min(c->mss, c->snd_max - seq);
		for (unsigned i = 0; i < c->nscore; i++)
			if (seq_gt(c->score[i][0], seq)) {
				len = u32_min(len, c->score[i][0] - seq);
				break;
			}
		n = len > 0 ? uiw_tcp_send_segment(c, seq, len, UIW_TCP_ACK) : 0;
		if (n > 0)
			uiw_tcp_sent_data(c, seq, (uint32_t)n);
		c->high_rxt = seq + (uint32_t)(n > 0 ? n : 0);
		c->rxt_snd_max = c->snd_max;
		return;
	}
	/* RFC 6582 §3.2 (2), (3): retransmit snd_una; cwnd = ssthresh + 3 * SMSS. */
	c->cwnd = c->ssthresh + DUPACK_THRESHOLD * c->mss;
	{
		int n = uiw_tcp_send_segment(c, c->snd_una, u32_min(c->mss, uiw_tcp_flight(c)), UIW_TCP_ACK);

		if (n > 0)
			uiw_tcp_sent_data(c, c->snd_una, (uint32_t)n);
	}
}

/* A duplicate ACK: inflate during NewReno recovery, or start a recovery. */
void uiw_tcp_cc_dupack(struct uiw_tcp_conn *c)
{
	c->dupacks++;
	if (c->flags & TF_IN_RECOVERY) {
		if (!(c->flags & TF_SACK_OK))
			c->cwnd += c->mss; /* RFC 6582 §3.2 (4): inflate */
		return;
	}
	/* RFC 6675 §5: DupThresh duplicates, or more than DupThresh-1 segments SACKed. */
	if (c->dupacks >= dupthresh(c) ||
	    ((c->flags & TF_SACK_OK) && c->sacked_bytes > (dupthresh(c) - 1) * (uint32_t)c->mss)) {
		/* RFC 6582 §3.2 (1): no new recovery for losses of the previous window. */
		if (!(c->flags & TF_SACK_OK) && seq_le(c->snd_una, c->recover) && c->recover != 0 &&
		    seq_gt(c->recover, c->iss))
			return;
		enter_recovery(c);
	}
}

static void grow(struct uiw_tcp_conn *c, uint32_t acked)
{
	if (c->cwnd < c->ssthresh) {
		/* RFC 5681 §3.1 slow start, RFC 3465 with L = 2 SMSS. */
		c->cwnd += u32_min(acked, 2u * c->mss);
		return;
	}
	c->bytes_acked += acked;
	if (c->bytes_acked >= c->cwnd) {
		c->bytes_acked -= c->cwnd;
		c->cwnd += c->mss;
	}
}

void uiw_tcp_cc_ack(struct uiw_tcp_conn *c, uint32_t acked, const struct tcp_seg *s)
{
	c->dupacks = 0;
	if (!(c->flags & TF_IN_RECOVERY)) {
		grow(c, acked);
		return;
	}
	if (seq_ge(s->ack, c->recover)) {
		/* RFC 6582 §3.2 (5) full acknowledgment; RFC 6675 §5 end of recovery. */
		c->flags &= (uint16_t)~TF_IN_RECOVERY;
		c->cwnd = u32_min(c->ssthresh, u32_max(uiw_tcp_flight(c), (uint32_t)c->mss) + c->mss);
		c->bytes_acked = 0;
		return;
	}
	if (c->flags & TF_SACK_OK)
		return; /* the output sends the next hole by the pipe */
	/* RFC 6582 §3.2 (5) partial acknowledgment: the next hole now, deflate the window. */
	{
		int n = uiw_tcp_send_segment(c, c->snd_una, u32_min(c->mss, uiw_tcp_flight(c)), UIW_TCP_ACK);

		if (n > 0)
			uiw_tcp_sent_data(c, c->snd_una, (uint32_t)n);
	}
	c->cwnd = c->cwnd > acked ? c->cwnd - acked : c->mss;
	if (acked >= c->mss)
		c->cwnd += c->mss;
	c->t_rexmt = c->tcp->now + (uint64_t)c->rto_us * 1000ull;
}

/*
 * A retransmission can be lost too. Once data sent after it (more than DupThresh segments
 * beyond the snd_max of that moment) is SACKed while its hole stays open, the holes are
 * retransmitted again instead of waiting for the timer (the idea of RFC 8985's RACK,
 * with sequence numbers standing in for send times).
 */
void uiw_tcp_cc_check_lost_rxt(struct uiw_tcp_conn *c)
{
	uint32_t high_sacked;

	if (!(c->flags & TF_IN_RECOVERY) || !(c->flags & TF_SACK_OK) || c->nscore == 0)
		return;
	high_sacked = c->score[c->nscore - 1][1];
	if (seq_gt(c->high_rxt, c->snd_una) &&
	    seq_gt(high_sacked, c->rxt_snd_max + DUPACK_THRESHOLD * (uint32_t)c->mss)) {
		c->high_rxt = c->snd_una;
		c->rxt_snd_max = c->snd_max;
	}
}

void uiw_tcp_cc_rto(struct uiw_tcp_conn *c)
{
	/* RFC 5681 §3.1 (4): ssthresh from the flight, cwnd one segment. */
	c->ssthresh = u32_max(uiw_tcp_flight(c) / 2, 2u * c->mss);
	c->cwnd = c->mss;
	c->bytes_acked = 0;
	c->dupacks = 0;
	c->recover = c->snd_max;
	c->flags &= (uint16_t)~TF_IN_RECOVERY;
	/* RFC 2018 §8: the receiver may renege, so after a timeout SACK information is
	 * not trusted. */
	c->nscore = 0;
	c->sacked_bytes = 0;
	c->high_rxt = c->snd_una;
}

static void score_recount(struct uiw_tcp_conn *c)
{
	uint32_t n = 0;

	for (unsigned i = 0; i < c->nscore; i++)
		n += c->score[i][1] - c->score[i][0];
	c->sacked_bytes = n;
}

/* Drops ranges now below snd_una and merges one new block [s, e). */
static void score_add(struct uiw_tcp_conn *c, uint32_t s, uint32_t e)
{
	uint32_t tmp[TCP_SCORE_MAX + 1][2];
	unsigned n = 0, i;
	bool placed = false;

	for (i = 0; i < c->nscore; i++) {
		uint32_t a = c->score[i][0], b = c->score[i][1];

		if (!placed && seq_lt(s, a)) {
			tmp[n][0] = s;
			tmp[n++][1] = e;
			placed = true;
		}
		tmp[n][0] = a;
		tmp[n++][1] = b;
	}
	if (!placed) {
		tmp[n][0] = s;
		tmp[n++][1] = e;
	}
	/* Merge overlapping or touching ranges; keep the lowest TCP_SCORE_MAX. */
	c->nscore = 0;
	for (i = 0; i < n; i++) {
		if (c->nscore > 0 && seq_le(tmp[i][0], c->score[c->nscore - 1][1])) {
			c->score[c->nscore - 1][1] = seq_max(c->score[c->nscore - 1][1], tmp[i][1]);
			continue;
		}
		if (c->nscore == TCP_SCORE_MAX)
			break;
		c->score[c->nscore][0] = tmp[i][0];
		c->score[c->nscore++][1] = tmp[i][1];
	}
}

/* @return whether the blocks SACKed octets not SACKed before (RFC 6675 §2: such an ACK
 * is a duplicate acknowledgment, whatever its window or cumulative ACK). */
bool uiw_tcp_sack_update(struct uiw_tcp_conn *c, const struct tcp_opts *o)
{
	uint32_t before;

	uiw_tcp_score_prune(c);
	before = c->sacked_bytes;
	for (unsigned i = 0; i < o->nsack; i++) {
		uint32_t s = o->sack[i][0], e = o->sack[i][1];

		/* RFC 2018 §3: only blocks above the cumulative ACK and within what was sent
		 * (D-SACKs and forged blocks are ignored). */
		if (!seq_lt(s, e) || !seq_gt(s, c->snd_una) || seq_gt(e, c->snd_max))
			continue;
		score_add(c, s, e);
	}
	score_recount(c);
	return c->sacked_bytes > before;
}

bool uiw_tcp_sack_is_sacked(const struct uiw_tcp_conn *c, uint32_t seq, uint32_t *end)
{
	for (unsigned i = 0; i < c->nscore; i++) {
		if (seq_in(seq, c->score[i][0], c->score[i][1])) {
			*end = c->score[i][1];
			return true;
		}
	}
	return false;
}
