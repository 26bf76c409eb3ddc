/* SPDX-License-Identifier: BSD-3-Clause */
/* The engine, the connection table, and the calls the layer above makes. */
#include <stdlib.h>

#include <rte_mbuf_dyn.h>

#include "tcp_internal.h"
#include "uiw_mbuf.h"
#include "uiw_log.h"
#include "uiw_siphash.h"

#include <rte_ethdev.h>

#define UIW_TCP_DESC_(name, help) { #name, help },
const struct uiw_counter_desc uiw_tcp_counter_desc[UIW_TCP_C__COUNT] = {
	UIW_TCP_COUNTERS(UIW_TCP_DESC_)
};
#undef UIW_TCP_DESC_

static const char *const state_names[UIW_TCP_NSTATES] = {
	"CLOSED", "LISTEN", "SYN-SENT", "SYN-RECEIVED", "ESTABLISHED", "FIN-WAIT-1",
	"FIN-WAIT-2", "CLOSE-WAIT", "CLOSING", "LAST-ACK", "TIME-WAIT",
};

const char *uiw_tcp_state_name(enum uiw_tcp_state s)
{
	return s < UIW_TCP_NSTATES ? state_names[s] : "?";
}

static void apply_config(struct uiw_tcp *t, const struct uiw_config *cfg)
{
	t->rcv_buf = cfg->tcp_rcv_buf;
	t->snd_buf = cfg->tcp_snd_buf;
	t->notsent_max = cfg->tcp_notsent_max;
	t->delack_ns = (uint64_t)cfg->tcp_delack_us * 1000ull;
	t->time_wait_ns = (uint64_t)cfg->tcp_time_wait_ms * UIW_NS_PER_MS;
	t->min_rto_us = cfg->tcp_min_rto_ms * 1000u;
	t->init_rto_us = cfg->tcp_init_rto_ms * 1000u;
	t->max_rto_us = cfg->tcp_max_rto_ms * 1000u;
	t->syn_retries = cfg->tcp_syn_retries;
	t->retries = cfg->tcp_retries;
	t->ooo_max = cfg->tcp_ooo_max;
	t->offer_sack = cfg->tcp_sack != 0;
	t->offer_ts = cfg->tcp_timestamps != 0;
	t->offer_ws = cfg->tcp_window_scaling != 0;
	t->syncookies = cfg->tcp_syncookies != 0;
	t->tx_runs = cfg->tcp_tx_runs != 0;
	t->rx_join = (uint16_t)cfg->tcp_rx_join;
	/* RFC 7323 §2.2: the smallest shift that lets the window cover the buffer. */
	t->rcv_wscale = 0;
	while (t->offer_ws && t->rcv_wscale < UIW_TCP_MAX_WS && (t->rcv_buf >> t->rcv_wscale) > 0xffff)
		t->rcv_wscale++;
	if (!t->offer_ws && t->rcv_buf > 0xffff)
		t->rcv_buf = 0xffff;
}

/* The send budget of one of @p nengines engines sharing the port's pool (tcp_internal.h). */
static void sq_limits(struct uiw_tcp *t, unsigned nengines)
{
	if (t->port->pool == NULL) {
		t->sq_mbufs_max = t->sq_mbufs_soft = t->sq_pool_max = UINT32_MAX;
		return;
	}
	t->sq_mbufs_max = t->port->pool->size * 3 / 4 / nengines;
	t->sq_pool_max = t->sq_mbufs_max;
	t->sq_mbufs_soft = t->port->pool->size / 4 / nengines;
	if (t->sq_cap < t->sq_mbufs_max) {
		t->sq_mbufs_max = t->sq_cap;
		t->sq_mbufs_soft = u32_min(t->sq_mbufs_soft, t->sq_cap / 3);
	}
}

int uiw_tcp_create(struct uiw_tcp **out, struct uiw_net *net, const struct uiw_config *cfg)
{
	struct uiw_tcp *t = calloc(1, sizeof(*t));
	unsigned buckets = 1;
	static const struct rte_mbuf_dynflag record_flag = { .name = "uiw_tcp_record" };
	static const struct rte_mbuf_dynflag summed_flag = { .name = "uiw_tcp_summed" };
	static const struct rte_mbuf_dynflag gather_flag = { .name = "uiw_tcp_gather" };
	static const struct rte_mbuf_dynflag crc_flag = { .name = "uiw_tcp_rx_crc" };
	static const struct rte_mbuf_dynfield ahead_field = {
		.name = "uiw_tcp_sq_ahead",
		.size = sizeof(struct rte_mbuf *),
		.align = __alignof__(struct rte_mbuf *),
	};
	const struct rte_mempool *rxp;
	int bit;

	if (t == NULL)
		return -ENOMEM;
	apply_config(t, cfg);
	t->net = net;
	t->port = net->port;
	t->max_conns = cfg->tcp_max_conns;
	while (buckets < 2 * t->max_conns)
		buckets <<= 1;
	t->hash_mask = buckets - 1;
	t->hash = calloc(buckets, sizeof(*t->hash));
	t->conns = calloc(t->max_conns, sizeof(*t->conns));
	t->ooo_store = calloc((size_t)t->max_conns * (t->ooo_max ? t->ooo_max : 1),
			      sizeof(*t->ooo_store));
	if (t->hash == NULL || t->conns == NULL || t->ooo_store == NULL) {
		uiw_tcp_destroy(t);
		return -ENOMEM;
	}
	for (unsigned i = t->max_conns; i-- > 0;) {
		t->conns[i].hnext = t->free_list;
		t->free_list = &t->conns[i];
	}
	if (uiw_random_key(t->isn_key) != 0)
		t->isn_key[0] = uiw_now_ns() ^ (uintptr_t)t;
	if (uiw_random_key(t->port_key) != 0)
		t->port_key[0] = t->isn_key[1] ^ 0x9e3779b97f4a7c15ull;
	if (uiw_random_key(t->cookie_key) != 0)
		t->cookie_key[0] = t->isn_key[0] ^ t->port_key[1] ^ 0x6a09e667f3bcc908ull;
	t->next_ephemeral = (uint32_t)t->isn_key[1];
	t->port_stride = 1;
	t->epoch = uiw_now_ns();
	/* Send queues may hold at most 3/4 of the pool: receiving must never starve, or the
	 * ACKs that would free them could not come in. And at most tcp_sq_mbufs, a size for
	 * the caches rather than the pool: 64 or 512 busy connections that filled a pool's
	 * quarter between them wrote each mbuf long before they sent it and freed it long
	 * after, both from memory, and moved less than one connection. The soft limit (what
	 * one connection may take while the others leave it room) keeps a third of either,
	 * so that connections stalled by their peers leave the others their shares. */
	t->sq_cap = cfg->tcp_sq_mbufs;
	t->tx_share_max = TCP_TX_SHARE;
	if (t->port->pool != NULL) {
		uint32_t room = rte_pktmbuf_data_room_size(t->port->pool);

		if (room > 0 && TCP_TX_SHARE_BYTES / room < t->tx_share_max)
			t->tx_share_max = u32_max(TCP_TX_SHARE_BYTES / room, TCP_TX_SHARE_MIN);
	}
	sq_limits(t, 1);
	/* Of the pool the PMD receives into. */
	rxp = uiw_port_rx_pool(t->port);
	t->rx_mbufs_soft = rxp != NULL ? rxp->size / 4 : UINT32_MAX;
	t->rx_mbufs_hard = rxp != NULL ? rxp->size / 2 : UINT32_MAX;
	uiw_tcp_tx_share_set(t);
	bit = rte_mbuf_dynflag_register(&record_flag);
	t->record_flag = bit >= 0 ? 1ull << bit : 0;
	bit = rte_mbuf_dynflag_register(&summed_flag);
	t->summed_flag = bit >= 0 ? 1ull << bit : 0;
	bit = rte_mbuf_dynflag_register(&gather_flag);
	t->gather_flag = bit >= 0 ? 1ull << bit : 0;
	bit = rte_mbuf_dynflag_register(&crc_flag);
	t->crc_flag = bit >= 0 ? 1ull << bit : 0;
	t->ahead_off = rte_mbuf_dynfield_register(&ahead_field);
	net->tcp_input = uiw_tcp_input;
	net->tcp_flush = uiw_tcp_input_flush;
	net->tcp_ctx = t;
	*out = t;
	return 0;
}

void uiw_tcp_destroy(struct uiw_tcp *t)
{
	if (t == NULL)
		return;
	if (t->conns != NULL)
		for (unsigned i = 0; i < t->max_conns; i++)
			if (t->conns[i].state != UIW_TCP_CLOSED) {
				t->conns[i].flags |= TF_DETACHED;
				uiw_tcp_conn_free(&t->conns[i]);
			}
	if (t->net != NULL && t->net->tcp_ctx == t) {
		t->net->tcp_input = NULL;
		t->net->tcp_flush = NULL;
		t->net->tcp_ctx = NULL;
		t->net->l4_held = false;
	}
	free(t->hash);
	free(t->conns);
	free(t->ooo_store);
	free(t);
}

static uint32_t tuple_hash(const struct uiw_tcp *t, uint32_t raddr, uint16_t lport, uint16_t rport)
{
	uint64_t x = ((uint64_t)raddr << 32) | ((uint32_t)lport << 16) | rport;

	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	return (uint32_t)x & t->hash_mask;
}

struct uiw_tcp_conn *uiw_tcp_lookup(struct uiw_tcp *t, uint32_t laddr, uint16_t lport,
				uint32_t raddr, uint16_t rport)
{
	struct uiw_tcp_conn *c = t->hash[tuple_hash(t, raddr, lport, rport)];

	for (; c != NULL; c = c->hnext)
		if (c->raddr == raddr && c->lport == lport && c->rport == rport && c->laddr == laddr)
			return c;
	return NULL;
}

struct uiw_tcp_conn *uiw_tcp_conn_new(struct uiw_tcp *t, uint32_t laddr, uint16_t lport,
				  uint32_t raddr, uint16_t rport)
{
	struct uiw_tcp_conn *c = t->free_list;
	uint32_t h;

	if (c == NULL)
		return NULL;
	t->free_list = c->hnext;
	memset(c, 0, sizeof(*c));
	c->tcp = t;
	c->ooo = &t->ooo_store[(size_t)(c - t->conns) * (t->ooo_max ? t->ooo_max : 1)];
	c->laddr = laddr;
	c->lport = lport;
	c->raddr = raddr;
	c->rport = rport;
	c->state = UIW_TCP_SYN_SENT; /* any state but CLOSED marks the TCB in use */
	h = tuple_hash(t, raddr, lport, rport);
	c->hnext = t->hash[h];
	t->hash[h] = c;
	t->nconns++;
	return c;
}

static void pending_remove(struct uiw_tcp_conn *c)
{
	struct uiw_tcp_conn **pp = &c->tcp->pending;

	for (; *pp != NULL; pp = &(*pp)->pnext) {
		if (*pp == c) {
			*pp = c->pnext;
			break;
		}
	}
	c->flags &= (uint16_t)~TF_PENDING;
}

static void blocked_remove(struct uiw_tcp_conn *c)
{
	for (struct uiw_tcp_conn **pp = &c->tcp->blocked; *pp != NULL; pp = &(*pp)->bnext)
		if (*pp == c) {
			*pp = c->bnext;
			break;
		}
	c->flags &= (uint16_t)~TF_TX_BLOCKED;
}

/* Releases the TCB and everything it holds. No callback, nothing sent. */
void uiw_tcp_conn_free(struct uiw_tcp_conn *c)
{
	struct uiw_tcp *t = c->tcp;
	struct uiw_tcp_conn **pp = &t->hash[tuple_hash(t, c->raddr, c->lport, c->rport)];

	for (; *pp != NULL; pp = &(*pp)->hnext) {
		if (*pp == c) {
			*pp = c->hnext;
			break;
		}
	}
	if (c->flags & TF_PENDING)
		pending_remove(c);
	if (c->flags & TF_TX_BLOCKED)
		blocked_remove(c);
	uiw_tcp_timer_remove(c);
	uiw_tcp_join_forget(c);
	uiw_tcp_sndq_clear(c);
	uiw_tcp_reass_clear(c);
	uiw_tcp_ulp_held(c, 0, 0);   /* the layer above frees what it held with it */
	if (c->flags & TF_PASSIVE)
		uiw_tcp_half_open_remove(c);
	c->state = UIW_TCP_CLOSED;
	c->hnext = t->free_list;
	t->free_list = c;
	t->nconns--;
}

/* The connection ends: the layer above hears why, then the TCB is freed. */
void uiw_tcp_conn_drop(struct uiw_tcp_conn *c, int err)
{
	struct uiw_tcp *t = c->tcp;

	if (t->busy == c) {
		/* NB: the caller is still using c; it is freed when that work ends. */
		if (!(c->flags & TF_DOOMED))
			c->doom_err = err;
		c->flags |= TF_DOOMED;
		return;
	}
	tcp_count(t, UIW_TCP_C_conn_closed);
	if (!(c->flags & (TF_DETACHED | TF_PASSIVE)) && c->ops != NULL && c->ops->closed != NULL)
		c->ops->closed(c->user, c, err);
	uiw_tcp_conn_free(c);
}

void uiw_tcp_set_state(struct uiw_tcp_conn *c, enum uiw_tcp_state s)
{
	UIW_DEBUG("tcp %u->%u: %s -> %s", c->lport, c->rport, state_names[c->state], state_names[s]);
	c->state = (uint8_t)s;
}

/* RFC 6528 §3: ISN = M + F(localip, localport, remoteip, remoteport, secretkey), M a
 * 4-microsecond clock, F a keyed PRF (SipHash-2-4). */
uint32_t uiw_tcp_isn(struct uiw_tcp *t, uint32_t laddr, uint16_t lport, uint32_t raddr,
		 uint16_t rport, uint64_t now)
{
	uint32_t tuple[3] = { laddr, raddr, ((uint32_t)lport << 16) | rport };

	return (uint32_t)(now / 4000) + (uint32_t)uiw_siphash(t->isn_key, tuple, sizeof(tuple));
}

/* The timestamp clock: milliseconds (RFC 7323 §5.4 allows 1 ms to 1 s per tick). */
uint32_t uiw_tcp_ts_now(const struct uiw_tcp *t)
{
	return uiw_tcp_ts_at(t, t->now);
}

/* The TSval a segment sent at @p ns carried. */
uint32_t uiw_tcp_ts_at(const struct uiw_tcp *t, uint64_t ns)
{
	return (uint32_t)((ns - t->epoch) / UIW_NS_PER_MS) + (uint32_t)t->isn_key[0];
}

/* A listener's half-open connections, oldest first: the one to evict is at the head. */
void uiw_tcp_half_open_add(struct uiw_tcp_listener *l, struct uiw_tcp_conn *c)
{
	c->listener = l;
	c->snext = NULL;
	c->sprev = l->syn_tail;
	if (l->syn_tail != NULL)
		l->syn_tail->snext = c;
	else
		l->syn_head = c;
	l->syn_tail = c;
	l->pending++;
}

void uiw_tcp_half_open_remove(struct uiw_tcp_conn *c)
{
	struct uiw_tcp_listener *l = c->listener;

	c->flags &= (uint16_t)~TF_PASSIVE;
	if (l == NULL)
		return;
	if (c->sprev != NULL)
		c->sprev->snext = c->snext;
	else if (l->syn_head == c)
		l->syn_head = c->snext;
	if (c->snext != NULL)
		c->snext->sprev = c->sprev;
	else if (l->syn_tail == c)
		l->syn_tail = c->sprev;
	c->sprev = c->snext = NULL;
	if (l->pending > 0)
		l->pending--;
}

struct uiw_tcp_listener *uiw_tcp_listener_find(struct uiw_tcp *t, uint16_t port)
{
	for (unsigned i = 0; i < TCP_MAX_LISTENERS; i++)
		if (t->listeners[i].port == port)
			return &t->listeners[i];
	return NULL;
}

/* Parameters every new TCB starts from (RFC 6298 §2.1: RTO 1 s before any sample). */
void uiw_tcp_init_conn_params(struct uiw_tcp_conn *c)
{
	struct uiw_tcp *t = c->tcp;

	c->rto_us = t->init_rto_us;
	c->rcv_wscale = t->offer_ws ? t->rcv_wscale : 0;
	c->peer_mss = TCP_DEFAULT_MSS;
	c->mss = TCP_DEFAULT_MSS;
}

int uiw_tcp_listen(struct uiw_tcp *t, uint16_t port, unsigned backlog,
		   const struct uiw_tcp_ops *ops, void *ctx)
{
	struct uiw_tcp_listener *l;

	if (port == 0)
		return -EINVAL;
	if (uiw_tcp_listener_find(t, port) != NULL)
		return -EADDRINUSE;
	l = uiw_tcp_listener_find(t, 0);
	if (l == NULL)
		return -ENOSPC;
	l->port = port;
	l->backlog = backlog ? backlog : 1;
	l->pending = 0;
	l->syn_head = l->syn_tail = NULL;
	l->ops = ops;
	l->ctx = ctx;
	return 0;
}

void uiw_tcp_unlisten(struct uiw_tcp *t, uint16_t port)
{
	struct uiw_tcp_listener *l = uiw_tcp_listener_find(t, port);

	if (l == NULL)
		return;
	while (l->syn_head != NULL) {
		struct uiw_tcp_conn *c = l->syn_head;

		uiw_tcp_send_rst(c);
		uiw_tcp_conn_free(c);
	}
	memset(l, 0, sizeof(*l));
}

/* RFC 6056 §3.3.3 (Algorithm 3, simple hash-based): the search starts at an offset keyed
 * by the destination, so the ports used towards one peer tell nothing of those towards
 * another, and a counter shared by all moves it on. */
static uint16_t pick_port(struct uiw_tcp *t, uint32_t raddr, uint16_t rport)
{
	const uint32_t range = TCP_EPHEMERAL_HI - TCP_EPHEMERAL_LO + 1;
	uint32_t tuple[3] = { t->net->ip, raddr, rport };
	uint32_t offset = (uint32_t)uiw_siphash(t->port_key, tuple, sizeof(tuple));

	for (uint32_t n = 0; n < range; n++) {
		uint16_t p = (uint16_t)(TCP_EPHEMERAL_LO + (offset + t->next_ephemeral++) % range);

		if (t->port_stride > 1 && tcp_owner(t, t->net->ip, p, raddr, rport) != t->port_slot)
			continue;   /* another engine's connection */
		if (uiw_tcp_listener_find(t, p) == NULL && uiw_tcp_lookup(t, t->net->ip, p, raddr, rport) == NULL)
			return p;
	}
	return 0;
}

int uiw_tcp_connect(struct uiw_tcp *t, uint32_t dst, uint16_t port,
		    const struct uiw_tcp_ops *ops, void *user, uint64_t now,
		    struct uiw_tcp_conn **out)
{
	struct uiw_tcp_conn *c;
	uint16_t lport;
	int rc;

	now = tcp_clock(t, now);
	lport = pick_port(t, dst, port);
	if (lport == 0)
		return -EADDRNOTAVAIL;
	c = uiw_tcp_conn_new(t, t->net->ip, lport, dst, port);
	if (c == NULL)
		return -ENOMEM;
	uiw_tcp_init_conn_params(c);
	c->ops = ops;
	c->user = user;
	c->iss = uiw_tcp_isn(t, c->laddr, lport, dst, port, now);
	c->snd_una = c->snd_nxt = c->snd_max = c->iss;
	uiw_tcp_set_state(c, UIW_TCP_SYN_SENT);
	rc = uiw_tcp_send_segment(c, c->iss, 0, UIW_TCP_SYN);
	if (rc == -EHOSTUNREACH) {
		uiw_tcp_conn_free(c);
		return rc;
	}
	tcp_time_syn(c, now);
	c->snd_nxt = c->snd_max = c->iss + 1;
	c->t_rexmt = now + (uint64_t)c->rto_us * 1000ull;
	uiw_tcp_timer_arm(c);
	tcp_count(t, UIW_TCP_C_conn_active);
	*out = c;
	return 0;
}

uint32_t uiw_tcp_queued_end(const struct uiw_tcp_conn *c)
{
	return c->snd_una + c->sq.bytes;   /* the queue runs from snd_una */
}

bool uiw_tcp_acked(const struct uiw_tcp_conn *c, uint32_t mark)
{
	return seq_ge(c->snd_una, mark);
}

/*
 * What may be queued: up to snd_buf in all (in flight and not yet sent), and of it no more
 * than notsent_max not yet sent (as Linux's tcp_notsent_lowat). The layer above then
 * builds its data just ahead of the segments that carry it, while those octets are still
 * in the cache (64 KiB Writes over memif ran at about 21 Gb/s with 4 MiB queued ahead, 29
 * with 256 KiB); the flight itself may still grow to snd_buf. Room that an ACK frees is
 * reported with it (ops->sent); room that sending frees below notsent_max, once the
 * segments are out (uiw_tcp_run()).
 */
uint32_t uiw_tcp_send_space(struct uiw_tcp_conn *c)
{
	const struct uiw_tcp *t = c->tcp;
	uint32_t room, flight = c->snd_nxt - c->snd_una;
	uint32_t unsent = c->sq.bytes > flight ? c->sq.bytes - flight : 0;

	if (!uiw_tcp_tx_fits(c, 1) || c->sq.bytes >= t->snd_buf)
		return 0;
	room = t->snd_buf - c->sq.bytes;
	/* With nothing unsent, any record that fits snd_buf may come (a limit below one
	 * record would stall the stream). */
	if (t->notsent_max != 0 && unsent > 0) {
		room = unsent >= t->notsent_max ? 0 : u32_min(room, t->notsent_max - unsent);
		/* Half the limit or less left: told when sending has made room again. */
		if (unsent >= t->notsent_max / 2)
			c->room_wanted = true;
	}
	return room;
}

uint16_t uiw_tcp_mss(const struct uiw_tcp_conn *c)
{
	return c->mss;
}

uint32_t uiw_tcp_tx_copy_max(const struct uiw_tcp_conn *c)
{
	/* On a port that copies frames: up to UIW_TCP_TX_COPY_EXT_MAX, and what fits behind
	 * the largest TCP header in a segment's first mbuf. A longer piece is chained, and its
	 * noted sum used. */
	const struct uiw_port *port = c->tcp->port;
	uint32_t room = port->pool != NULL ? rte_pktmbuf_data_room_size(port->pool) : 0;
	uint32_t below = RTE_PKTMBUF_HEADROOM + UIW_TCP_HDR_LEN + 40;

	if (!port->tx_ext || room <= below + UIW_TCP_TX_COPY_MAX)
		return UIW_TCP_TX_COPY_MAX;
	return u32_min(room - below, UIW_TCP_TX_COPY_EXT_MAX);
}

bool uiw_tcp_tx_frames_copied(const struct uiw_tcp_conn *c)
{
	return c->tcp->port->tx_ext;
}

bool uiw_tcp_tso_now(const struct uiw_tcp_conn *c)
{
	return c->tcp->port->tso_max != 0;
}

void uiw_tcp_ready_over(const struct uiw_tcp_conn *c, struct rte_mbuf *m, uint32_t len)
{
	/* A data segment's headers: Ethernet, IPv4, TCP with timestamps if agreed (SACK
	 * blocks come and go; such a segment spills into one line more). */
	uint32_t hdr = UIW_ETH_HDR_LEN + UIW_IPV4_HDR_LEN + UIW_TCP_HDR_LEN +
		       ((c->flags & TF_TS_OK) ? 12u : 0u);
	uint32_t line = RTE_CACHE_LINE_SIZE, start, shift;

	if (!c->tcp->port->tx_over || m->data_off < hdr)
		return;
	/* The stores of those headers waited on lines the other side read last: 66 octets
	 * in front of data at 128 took two lines, one of them for 2 octets. Moved to start
	 * on a line, they take one, and 2 octets of the data's first, written by then; asked
	 * for now, it is here when TCP writes them. 64 KiB Writes from virtio-user to
	 * vhost-user, host slow: 29.0-30.3 Gb/s with both, 26.4-28.1 with the lines asked
	 * for only, 20.7-21.8 with neither (docs/BENCHMARKS.md). */
	start = m->data_off - hdr;
	shift = start / line != (m->data_off - 1u) / line ? line - start % line : 0;
	if (shift != 0 && rte_pktmbuf_tailroom(m) >= len + shift)
		m->data_off = (uint16_t)(m->data_off + shift);
	uiw_prefetch_for_write(rte_pktmbuf_mtod_offset(m, const char *, -(int32_t)hdr), hdr);
}

bool uiw_tcp_sums_wanted(const struct uiw_tcp_conn *c)
{
	return c->tcp->summed_flag != 0 &&
	       !(c->tcp->port->tx_offloads & RTE_ETH_TX_OFFLOAD_TCP_CKSUM);
}

void uiw_tcp_mark_summed(const struct uiw_tcp_conn *c, struct rte_mbuf *m, uint16_t sum)
{
	/* The count goes with the sum: a piece of a different length (part of m, or m grown)
	 * is summed afresh (uiw_inet_sum_mbuf_noted()). */
	m->hash.usr = (uint32_t)m->data_len << 16 | sum;
	m->ol_flags |= c->tcp->summed_flag;
}

uint64_t uiw_tcp_want_rx_crc(struct uiw_tcp_conn *c, bool on)
{
	/* Noted by seg_sum_right() (tcp_in.c) over the payload where payload_from() leaves it. */
	c->rx_crc = on && c->tcp->crc_flag != 0;
	return c->tcp->crc_flag;
}

/* Whether @p c takes data to send: not closed, nor closing from our side. */
static inline bool can_queue(const struct uiw_tcp_conn *c)
{
	return (c->state == UIW_TCP_ESTABLISHED || c->state == UIW_TCP_CLOSE_WAIT ||
		c->state == UIW_TCP_SYN_SENT || c->state == UIW_TCP_SYN_RECEIVED) &&
	       !(c->flags & TF_FIN_QUEUED);
}

int uiw_tcp_send(struct uiw_tcp_conn *c, struct rte_mbuf *m, unsigned flags)
{
	struct tcp_sndq *q = &c->sq;
	struct rte_mbuf *last;

	if (!can_queue(c)) {
		if (!(flags & UIW_TCP_SEND_KEEP))
			rte_pktmbuf_free(m);
		return -ENOTCONN;
	}
	/* A control message is counted apart from the data budget (sq_ctrl): a peer that
	 * never acknowledges our Reply holds its mbuf, and hundreds of such peers would
	 * otherwise hold the budget every other connection's data needs. */
	bool ctrl = (flags & UIW_TCP_SEND_CTRL) && c->sq_mbufs == 0;
	/* Its first data makes it a sender: judged by the share it has as one. */
	bool first = !ctrl && c->sq_mbufs == c->sq_ctrl && m->pkt_len > 0;

	if (first) {
		c->tcp->nsenders++;
		uiw_tcp_tx_share_set(c->tcp);
	}
	if (ctrl ? c->tcp->sq_mbufs + c->tcp->sq_ctrl + m->nb_segs > c->tcp->sq_pool_max ||
			   m->pkt_len > c->tcp->snd_buf
		 : m->pkt_len > uiw_tcp_send_space(c) || !uiw_tcp_tx_fits(c, m->nb_segs)) {
		if (first) {
			c->tcp->nsenders--;
			uiw_tcp_tx_share_set(c->tcp);
		}
		if (!(flags & UIW_TCP_SEND_KEEP))
			rte_pktmbuf_free(m);
		return -ENOBUFS;
	}
	if (m->pkt_len == 0) {
		rte_pktmbuf_free(m);
		return 0;
	}
	if (ctrl) {
		c->tcp->sq_ctrl += m->nb_segs;
		c->sq_ctrl = m->nb_segs;
	} else {
		c->tcp->sq_mbufs += m->nb_segs;
		c->tcp->sq_stalled += c->sq_stalled ? m->nb_segs : 0u;
	}
	c->sq_mbufs += m->nb_segs;
	/* The queue is a list of single segments; a record start is marked on its first. */
	for (last = m; last->next != NULL; last = last->next) {
		last->nb_segs = 1;
		sq_ahead_link(c->tcp, q, last);
	}
	last->nb_segs = 1;
	sq_ahead_link(c->tcp, q, last);
	m->ol_flags &= ~c->tcp->record_flag;
	if ((flags & UIW_TCP_SEND_RECORD) && q->bytes > 0)
		m->ol_flags |= c->tcp->record_flag;
	if (flags & UIW_TCP_SEND_RECORD)
		c->records = true;
	q->bytes += m->pkt_len;
	if (q->tail == NULL)
		q->head = m;
	else
		q->tail->next = m;
	q->tail = last;
	uiw_tcp_mark_pending(c);
	return 0;
}

uint32_t uiw_tcp_run_room(struct uiw_tcp_conn *c, uint32_t *mbufs)
{
	const struct uiw_tcp *t = c->tcp;
	uint32_t room, flight = c->snd_nxt - c->snd_una;
	uint32_t unsent = c->sq.bytes > flight ? c->sq.bytes - flight : 0;

	*mbufs = 0;
	/* Not yet sending data: its first record changes each sender's share (above). */
	if (!can_queue(c) || c->sq_mbufs == c->sq_ctrl || c->sq.bytes >= t->snd_buf)
		return 0;
	room = t->snd_buf - c->sq.bytes;
	/* Each record after the first keeps what is not yet sent under notsent_max, so the
	 * run's records do (uiw_tcp_send_space()). */
	if (t->notsent_max != 0)
		room = unsent >= t->notsent_max ? 0 : u32_min(room, t->notsent_max - unsent);
	*mbufs = uiw_tcp_tx_room(c);
	return room;
}

int uiw_tcp_send_records(struct uiw_tcp_conn *c, struct rte_mbuf *const *v, unsigned n)
{
	const struct uiw_tcp *t = c->tcp;
	struct tcp_sndq *q = &c->sq;
	uint32_t bytes = 0, mbufs, flight, unsent;
	bool chained = false;

	if (!can_queue(c))
		return -ENOTCONN;
	for (unsigned i = 0; i < n; i++) {
		bytes += v[i]->pkt_len;
		chained |= v[i]->next != NULL || v[i]->pkt_len == 0;
	}
	if (chained)
		return -EINVAL;
	if (n == 0)
		return 0;
	if (bytes > uiw_tcp_run_room(c, &mbufs) || n > mbufs)
		return -ENOBUFS;
	c->tcp->sq_mbufs += n;
	c->tcp->sq_stalled += c->sq_stalled ? n : 0u;
	c->sq_mbufs += n;
	c->records = true;
	for (unsigned i = 0; i < n; i++) {
		struct rte_mbuf *m = v[i];

		sq_ahead_link(t, q, m);
		/* Each starts a record; none is the queue's first (the connection sends). */
		m->ol_flags |= t->record_flag;
		if (q->tail == NULL)
			q->head = m;
		else
			q->tail->next = m;
		q->tail = m;
	}
	q->bytes += bytes;
	/* As uiw_tcp_send_space() would have been told by a next record. */
	flight = c->snd_nxt - c->snd_una;
	unsent = q->bytes > flight ? q->bytes - flight : 0;
	if (t->notsent_max != 0 && unsent >= t->notsent_max / 2)
		c->room_wanted = true;
	uiw_tcp_mark_pending(c);
	return 0;
}

void uiw_tcp_close(struct uiw_tcp_conn *c)
{
	switch (c->state) {
	case UIW_TCP_SYN_SENT:
		c->flags |= TF_DETACHED;
		uiw_tcp_conn_drop(c, 0);
		return;
	case UIW_TCP_SYN_RECEIVED:
	case UIW_TCP_ESTABLISHED:
		uiw_tcp_set_state(c, UIW_TCP_FIN_WAIT_1);
		break;
	case UIW_TCP_CLOSE_WAIT:
		uiw_tcp_set_state(c, UIW_TCP_LAST_ACK);
		break;
	default:
		return;
	}
	c->flags |= TF_FIN_QUEUED;
	uiw_tcp_mark_pending(c);
}

void uiw_tcp_abort(struct uiw_tcp_conn *c)
{
	if (c->state != UIW_TCP_SYN_SENT && c->state != UIW_TCP_TIME_WAIT)
		uiw_tcp_send_rst(c);
	c->flags |= TF_DETACHED;
	uiw_tcp_conn_drop(c, -ECONNABORTED);
}

void uiw_tcp_set_user(struct uiw_tcp_conn *c, const struct uiw_tcp_ops *ops, void *user)
{
	c->ops = ops;
	c->user = user;
}

enum uiw_tcp_state uiw_tcp_state(const struct uiw_tcp_conn *c)
{
	return (enum uiw_tcp_state)c->state;
}

const struct uiw_tcp_conn_stats *uiw_tcp_conn_stats(const struct uiw_tcp_conn *c)
{
	return &c->st;
}

void uiw_tcp_conn_addrs(const struct uiw_tcp_conn *c, uint32_t *laddr, uint16_t *lport,
			uint32_t *raddr, uint16_t *rport)
{
	*laddr = c->laddr;
	*lport = c->lport;
	*raddr = c->raddr;
	*rport = c->rport;
}

void uiw_tcp_conn_timing(const struct uiw_tcp_conn *c, uint32_t *srtt_us, uint32_t *rttvar_us,
			 uint32_t *rto_us, uint32_t *cwnd)
{
	*srtt_us = c->srtt_us;
	*rttvar_us = c->rttvar_us;
	*rto_us = c->rto_us;
	*cwnd = c->cwnd;
}

void uiw_tcp_conn_sending(const struct uiw_tcp_conn *c, struct uiw_tcp_conn_sending *out)
{
	*out = (struct uiw_tcp_conn_sending){
		.snd_wnd = c->snd_wnd, .in_flight = c->snd_nxt - c->snd_una,
		.sq_mbufs = c->sq_mbufs, .share = c->tcp->tx_share, .stalled = c->sq_stalled,
	};
}

const uint64_t *uiw_tcp_counters(const struct uiw_tcp *t)
{
	return t->counters;
}

unsigned uiw_tcp_conn_count(const struct uiw_tcp *t)
{
	return t->nconns;
}

void uiw_tcp_gauges(const struct uiw_tcp *t, struct uiw_tcp_gauges *g)
{
	g->conns = t->nconns;
	g->half_open = 0;
	for (unsigned i = 0; i < TCP_MAX_LISTENERS; i++)
		g->half_open += t->listeners[i].port != 0 ? t->listeners[i].pending : 0;
	g->rx_mbufs = t->rx_mbufs;
	g->sq_mbufs = t->sq_mbufs + t->sq_ctrl;
	g->sq_stalled = t->sq_stalled;
	g->senders = t->nsenders;
}

void uiw_tcp_close_all(struct uiw_tcp *t)
{
	for (unsigned i = 0; i < t->max_conns; i++) {
		struct uiw_tcp_conn *c = &t->conns[i];

		/* Not the half-open ones a listener holds: their peers may be spoofed, and
		 * the kernel drops them with the listener. */
		if (c->state == UIW_TCP_ESTABLISHED || c->state == UIW_TCP_CLOSE_WAIT)
			uiw_tcp_close(c);
	}
}

static bool owes(const struct uiw_tcp_conn *c)
{
	switch (c->state) {
	case UIW_TCP_FIN_WAIT_1:   /* its FIN not acknowledged */
	case UIW_TCP_CLOSING:
	case UIW_TCP_LAST_ACK:
		return true;
	case UIW_TCP_ESTABLISHED:
	case UIW_TCP_CLOSE_WAIT:
		return c->snd_una != c->snd_max || c->sq.bytes > 0;
	default:
		return false;
	}
}

unsigned uiw_tcp_owed(const struct uiw_tcp *t)
{
	unsigned n = 0;

	for (unsigned i = 0; i < t->max_conns; i++)
		n += owes(&t->conns[i]) ? 1 : 0;
	return n;
}

unsigned uiw_tcp_reset_owed(struct uiw_tcp *t)
{
	unsigned n = 0;

	for (unsigned i = 0; i < t->max_conns; i++)
		if (owes(&t->conns[i])) {
			uiw_tcp_abort(&t->conns[i]);
			n++;
		}
	return n;
}

unsigned uiw_tcp_print_listeners(const struct uiw_tcp *t, FILE *out)
{
	unsigned n = 0;

	for (unsigned i = 0; i < TCP_MAX_LISTENERS; i++) {
		const struct uiw_tcp_listener *l = &t->listeners[i];

		if (l->port == 0)
			continue;
		fprintf(out, "listen %u backlog %u half_open %u\n", l->port, l->backlog, l->pending);
		n++;
	}
	return n;
}

void uiw_tcp_conn_dump(const struct uiw_tcp_conn *c, FILE *out)
{
	const struct uiw_tcp *t = c->tcp;

	fprintf(out, "tcp %u->%u %s flags %#x: una %u nxt %u max %u (+%u queued) wnd %u "
		     "cwnd %u ssthresh %u sacked %u ranges %u | rcv_nxt %u adv +%u ooo %u/%u | "
		     "rto %u us srtt %u us backoff %u | timers(ms) rexmt %.1f persist %.1f "
		     "delack %.1f close %.1f\n",
		c->lport, c->rport, uiw_tcp_state_name((enum uiw_tcp_state)c->state), c->flags,
		c->snd_una - c->iss, c->snd_nxt - c->iss, c->snd_max - c->iss, c->sq.bytes,
		c->snd_wnd, c->cwnd, c->ssthresh, c->sacked_bytes, c->nscore, c->rcv_nxt - c->irs,
		c->rcv_adv - c->rcv_nxt, c->nooo, c->ooo_bytes, c->rto_us, c->srtt_us, c->backoff,
		c->t_rexmt ? (double)(int64_t)(c->t_rexmt - t->now) / 1e6 : -1.0,
		c->t_persist ? (double)(int64_t)(c->t_persist - t->now) / 1e6 : -1.0,
		c->t_delack ? (double)(int64_t)(c->t_delack - t->now) / 1e6 : -1.0,
		c->t_close ? (double)(int64_t)(c->t_close - t->now) / 1e6 : -1.0);
}

unsigned uiw_tcp_dump_sending(const struct uiw_tcp *t, FILE *out, unsigned max)
{
	unsigned n = 0;

	for (unsigned i = 0; i < t->max_conns; i++) {
		const struct uiw_tcp_conn *c = &t->conns[i];

		if (c->state == UIW_TCP_CLOSED || c->sq.bytes == 0)
			continue;
		if (n++ < max)
			uiw_tcp_conn_dump(c, out);
	}
	return n;
}

void uiw_tcp_set_engine(struct uiw_tcp *t, unsigned engine, unsigned nengines)
{
	if (nengines <= 1)
		return;
	t->port_slot = (uint16_t)engine;
	t->port_stride = (uint16_t)nengines;
	sq_limits(t, nengines);   /* the engines share the pool; each has its own caches */
	uiw_tcp_tx_share_set(t);
}
