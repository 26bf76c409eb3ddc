/* SPDX-License-Identifier: BSD-3-Clause */
/* rdma_*: the connection manager over MPA. For iWARP the rdma_cm port is the TCP port and
 * the conn_param private data is the MPA private data, unchanged (WIRE.md §1.5). */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <rdma/rdma_verbs.h>

#include "uiw_time.h"
#include "verbs_internal.h"

struct cm_ev {
	struct rdma_cm_event ev;
	uint8_t pd[UIW_MPA_PD_MAX];
	struct cm_ev *next;
};

struct uiw_cm_id;

struct uiw_event_channel {
	struct rdma_event_channel ch;
	struct cm_ev *head, *tail;
	struct uiw_cm_id *ids;   /* whose events come here: they forget it when it goes */
	unsigned waiters;   /* threads blocked in rdma_get_cm_event() on it */
	bool dead;          /* destroyed while they waited: the last one frees it */
};

/* CM_PEER_GONE: the peer's FIN came and DISCONNECTED was queued; the connection is still
 * closing (our FIN is not acknowledged yet). */
enum cm_state { CM_IDLE, CM_BOUND, CM_LISTEN, CM_CONNECTING, CM_REQUEST, CM_CONNECTED, CM_PEER_GONE,
		CM_CLOSED };

struct uiw_cm_id {
	struct rdma_cm_id id;
	struct uiw_dev *dev;
	struct uiw_eng *eng;                      /* the engine its connection is on */
	enum cm_state state;
	struct uiw_mpa_conn *conn;
	uint16_t port;
	struct uiw_cm_id *ch_next, **ch_pprev;   /* in its channel's list */
	uint64_t resolve_by;                      /* resolving: ADDR_ERROR after this */
	struct uiw_cm_id *res_next, **res_pprev;  /* in the resolving list */
	bool sync;                                /* made without a channel: its calls wait for
						   * their event on a channel of its own */
	bool own_cqs;                             /* rdma_create_qp() made its CQs */
	bool port_auto;                           /* bound to port 0: one was picked */
	struct ibv_qp_init_attr *qp_init;         /* rdma_create_ep(), passive: for requests */
};

static void cma_poll(struct uiw_eng *g, uint64_t now);

static void resolving_remove(struct uiw_cm_id *c)
{
	if (c->res_pprev == NULL)
		return;
	*c->res_pprev = c->res_next;
	if (c->res_next != NULL)
		c->res_next->res_pprev = c->res_pprev;
	c->res_next = NULL;
	c->res_pprev = NULL;
}

/* The id's events go to @p channel (NULL: nowhere) from now on. */
static void id_set_channel(struct uiw_cm_id *c, struct rdma_event_channel *channel)
{
	struct uiw_event_channel *ch = (struct uiw_event_channel *)channel;

	pthread_mutex_lock(&uiw_ev_lock);   /* a listener's engines may add ids at once */
	if (c->ch_pprev != NULL) {
		*c->ch_pprev = c->ch_next;
		if (c->ch_next != NULL)
			c->ch_next->ch_pprev = c->ch_pprev;
	}
	c->ch_next = NULL;
	c->ch_pprev = NULL;
	c->id.channel = channel;
	if (ch != NULL) {
		c->ch_next = ch->ids;
		if (ch->ids != NULL)
			ch->ids->ch_pprev = &c->ch_next;
		ch->ids = c;
		c->ch_pprev = &ch->ids;
	}
	pthread_mutex_unlock(&uiw_ev_lock);
}

static struct sockaddr_in *sin_of(struct sockaddr *a) { return (struct sockaddr_in *)(void *)a; }

static void set_addr(struct sockaddr *a, uint32_t ip, uint16_t port)
{
	struct sockaddr_in *s = sin_of(a);

	memset(s, 0, sizeof(*s));
	s->sin_family = AF_INET;
	s->sin_addr.s_addr = htonl(ip);
	s->sin_port = htons(port);
}

static void queue_event_full(struct uiw_cm_id *c, enum rdma_cm_event_type type, int status,
			     const uint8_t *pd, uint16_t pd_len, struct uiw_cm_id *listen,
			     uint8_t rr, uint8_t depth)
{
	struct uiw_event_channel *ch = (struct uiw_event_channel *)c->id.channel;
	struct cm_ev *e = calloc(1, sizeof(*e));
	uint64_t one = 1;

	if (e == NULL || ch == NULL) {
		free(e);
		return;
	}
	e->ev.id = &c->id;
	e->ev.listen_id = listen != NULL ? &listen->id : NULL;
	e->ev.event = type;
	e->ev.status = status;
	e->ev.param.conn.responder_resources = rr;
	e->ev.param.conn.initiator_depth = depth;
	if (pd_len > 0) {
		memcpy(e->pd, pd, pd_len);
		e->ev.param.conn.private_data = e->pd;
		e->ev.param.conn.private_data_len = (uint8_t)(pd_len > 255 ? 255 : pd_len);
	}
	bool was_empty;

	pthread_mutex_lock(&uiw_ev_lock);   /* engines may queue at once */
	was_empty = ch->head == NULL;
	if (ch->tail != NULL)
		ch->tail->next = e;
	else
		ch->head = e;
	ch->tail = e;
	pthread_mutex_unlock(&uiw_ev_lock);
	/* The fd is readable while events wait: written when the first comes, read when the
	 * last goes (rdma_get_cm_event()), one system call each way and not one an event. */
	if (was_empty && write(ch->ch.fd, &one, sizeof(one)) != sizeof(one))
		return;
}

static void queue_event(struct uiw_cm_id *c, enum rdma_cm_event_type type, int status,
			const uint8_t *pd, uint16_t pd_len, struct uiw_cm_id *listen)
{
	queue_event_full(c, type, status, pd, pd_len, listen, 0, 0);
}

static struct uiw_qp *core_of(struct uiw_cm_id *c)
{
	return c->id.qp != NULL ? uiw_verbs_qp_core(c->id.qp) : NULL;
}

static void cm_request(void *ctx, struct uiw_mpa_conn *conn, const struct uiw_mpa_rr_info *q);

static void cm_established(void *user, struct uiw_mpa_conn *conn, const struct uiw_mpa_info *n)
{
	struct uiw_cm_id *c = user;
	struct uiw_qp *qp = core_of(c);

	uint32_t la, ra;
	uint16_t lp, rp;

	c->conn = conn;
	c->state = CM_CONNECTED;
	/* The addresses as the connection has them (an active id's port was 0 until now). */
	uiw_tcp_conn_addrs(uiw_mpa_tcp(conn), &la, &lp, &ra, &rp);
	set_addr(&c->id.route.addr.src_addr, la, lp);
	set_addr(&c->id.route.addr.dst_addr, ra, rp);
	if (qp != NULL)
		uiw_qp_mpa_ops.established(qp, conn, n);
	if (c->id.qp != NULL)
		c->id.qp->state = IBV_QPS_RTS;
	queue_event(c, RDMA_CM_EVENT_ESTABLISHED, 0, n->pd, n->pd_len, NULL);
	/* The event carries the peer's private data; MPA's copy goes when the call returns. */
}

static void cm_rejected(void *user, struct uiw_mpa_conn *conn, const uint8_t *pd, uint16_t len)
{
	struct uiw_cm_id *c = user;

	(void)conn;
	c->state = CM_CLOSED;
	queue_event(c, RDMA_CM_EVENT_REJECTED, ECONNREFUSED, pd, len, NULL);
}

/* ULPDUs reach the id only on a connection without a QP: a QP binds its DDP stream as the
 * data path when the connection is established (MPA -> DDP -> RDMAP), and the id is not on
 * that path. */
static int cm_ulpdu(void *user, struct uiw_mpa_conn *conn, const struct uiw_mpa_ulpdu *u)
{
	(void)user;
	(void)conn;
	(void)u;
	return 1;
}

/*
 * The peer closed (its FIN, in order after everything it sent): DISCONNECTED now, as
 * Linux's iWARP CM reports it (siw on the peer's FIN), not once our own FIN is
 * acknowledged. A peer whose process ended right after it heard our FIN (its last ACK
 * lost with it) would otherwise leave this side waiting for TCP to give up, for minutes.
 * The QP goes to ERROR at once too (what it still posts flushes); its lent memory is
 * copied out first, as TCP may still have to send those octets again.
 */
static void cm_peer_closed(void *user, struct uiw_mpa_conn *conn)
{
	struct uiw_cm_id *c = user;
	struct uiw_qp *qp = core_of(c);

	if (c->state != CM_CONNECTED)
		return;
	if (qp != NULL) {
		uiw_qp_detach(qp);
		uiw_qp_mpa_ops.closed(qp, conn, 0);
	}
	if (c->id.qp != NULL)
		c->id.qp->state = IBV_QPS_ERR;
	c->state = CM_PEER_GONE;
	queue_event(c, RDMA_CM_EVENT_DISCONNECTED, 0, NULL, 0, NULL);
}

static void cm_closed(void *user, struct uiw_mpa_conn *conn, int err)
{
	struct uiw_cm_id *c = user;
	struct uiw_qp *qp = core_of(c);
	enum cm_state was = c->state;

	if (qp != NULL && was != CM_PEER_GONE)   /* (the QP heard it at the peer's FIN) */
		uiw_qp_mpa_ops.closed(qp, conn, err);
	if (c->id.qp != NULL)
		c->id.qp->state = IBV_QPS_ERR;
	c->conn = NULL;
	c->state = CM_CLOSED;
	if (was == CM_CONNECTED)
		queue_event(c, RDMA_CM_EVENT_DISCONNECTED, 0, NULL, 0, NULL);
	else if (was == CM_CONNECTING && err == -ECONNREFUSED)
		queue_event(c, RDMA_CM_EVENT_REJECTED, ECONNREFUSED, NULL, 0, NULL);
	else if (was == CM_CONNECTING)
		queue_event(c, err == -ETIMEDOUT ? RDMA_CM_EVENT_UNREACHABLE : RDMA_CM_EVENT_CONNECT_ERROR,
			    -err, NULL, 0, NULL);
}

static const struct uiw_mpa_ops cm_ops = {
	.request = cm_request, .established = cm_established, .rejected = cm_rejected,
	.ulpdu = cm_ulpdu, .peer_closed = cm_peer_closed, .closed = cm_closed,
};

static void cm_request(void *ctx, struct uiw_mpa_conn *conn, const struct uiw_mpa_rr_info *q)
{
	struct uiw_cm_id *l = ctx, *c = calloc(1, sizeof(*c));
	uint32_t la, ra;
	uint16_t lp, rp;

	if (c == NULL) {
		uiw_mpa_reject(conn, NULL, 0);
		return;
	}
	c->dev = l->dev;
	c->eng = uiw_dev_engine_of(l->dev, conn);
	c->conn = conn;
	c->state = CM_REQUEST;
	id_set_channel(c, l->id.channel);
	c->id.context = l->id.context;
	c->id.verbs = l->id.verbs;
	c->id.ps = RDMA_PS_TCP;
	c->id.port_num = 1;
	uiw_tcp_conn_addrs(uiw_mpa_tcp(conn), &la, &lp, &ra, &rp);
	set_addr(&c->id.route.addr.src_addr, la, lp);
	set_addr(&c->id.route.addr.dst_addr, ra, rp);
	/* iWARP: the peer's ORD is what our IRD must cover, and the other way round. */
	queue_event_full(c, RDMA_CM_EVENT_CONNECT_REQUEST, 0, q->pd, q->pd_len, l,
			 (uint8_t)(q->ord > 255 ? 255 : q->ord), (uint8_t)(q->ird > 255 ? 255 : q->ird));
	uiw_mpa_set_user(conn, &cm_ops, c);
}

/* ---- The API. Errors: -1 with errno, as librdmacm. ---- */

static int fail(int err)
{
	errno = err;
	return -1;
}

struct rdma_event_channel *rdma_create_event_channel(void)
{
	int err = uiw_dropin_ensure();
	UIW_API_LOCK();
	struct uiw_event_channel *ch;

	if (err != 0) {
		errno = err;
		return NULL;
	}
	ch = calloc(1, sizeof(*ch));

	if (ch == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	ch->ch.fd = eventfd(0, EFD_CLOEXEC);
	if (ch->ch.fd < 0) {
		free(ch);
		return NULL;
	}
	return &ch->ch;
}

void rdma_destroy_event_channel(struct rdma_event_channel *channel)
{
	UIW_API_LOCK();
	struct uiw_event_channel *ch = (struct uiw_event_channel *)channel;

	while (ch->head != NULL) {
		struct cm_ev *n = ch->head->next;

		free(ch->head);
		ch->head = n;
	}
	ch->tail = NULL;
	/* Ids still using it (a program may destroy the channel first) forget it: a
	 * connection that ends later must not queue its event here. */
	while (ch->ids != NULL)
		id_set_channel(ch->ids, NULL);
	/* rping destroys the channel its CM thread is still blocked on: that thread must find
	 * the memory still there and see the channel gone (the memory is then never freed). */
	if (ch->waiters > 0) {
		ch->dead = true;
		return;
	}
	close(ch->ch.fd);
	free(ch);
}

static int create_id(struct rdma_event_channel *channel, struct rdma_cm_id **id, void *context,
		     enum rdma_port_space ps)
{
	UIW_API_LOCK();
	struct uiw_cm_id *c;

	if (ps != RDMA_PS_TCP) {
		UIW_ERR("rdma_create_id: port space %s: iWARP connections are reliable and "
			"connected only (RDMA_PS_TCP); UD, multicast and IB port spaces are not provided",
			ps == RDMA_PS_UDP ? "RDMA_PS_UDP" : ps == RDMA_PS_IPOIB ? "RDMA_PS_IPOIB" :
			ps == RDMA_PS_IB ? "RDMA_PS_IB" : "other than RDMA_PS_TCP");
		return fail(EINVAL);
	}
	c = calloc(1, sizeof(*c));
	if (c == NULL)
		return fail(ENOMEM);
	id_set_channel(c, channel);
	c->id.context = context;
	c->id.ps = ps;
	c->id.qp_type = IBV_QPT_RC;
	*id = &c->id;
	return 0;
}

/* Without a channel the id is synchronous (librdmacm): it gets a channel of its own, and
 * each call that would queue an event waits for it (sync_complete()). */
int rdma_create_id(struct rdma_event_channel *channel, struct rdma_cm_id **id, void *context,
		   enum rdma_port_space ps)
{
	struct rdma_event_channel *own = NULL;

	if (channel == NULL && (own = rdma_create_event_channel()) == NULL)
		return -1;
	if (create_id(channel != NULL ? channel : own, id, context, ps) != 0) {
		if (own != NULL)
			rdma_destroy_event_channel(own);
		return -1;
	}
	((struct uiw_cm_id *)*id)->sync = own != NULL;
	return 0;
}

/* A synchronous id's call waits for its event (as librdmacm's ucma_complete()): the event
 * stays the id's until the next one or the id's end. */
static int sync_complete(struct rdma_cm_id *id)
{
	struct rdma_cm_event *ev;

	if (!((struct uiw_cm_id *)id)->sync)
		return 0;
	if (id->event != NULL)
		rdma_ack_cm_event(id->event);
	if (rdma_get_cm_event(id->channel, &ev) != 0)
		return -1;
	id->event = ev;
	if (ev->status == 0)
		return 0;
	return fail(ev->event == RDMA_CM_EVENT_REJECTED ? ECONNREFUSED
		    : ev->status < 0 ? -ev->status : ev->status);
}

/* Stops listening on @p port on engines 0..@p n-1 of @p s. */
static void unlisten_all(struct uiw_stack *s, uint16_t port, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		uiw_mpa_unlisten(uiw_stack_engine(s, i)->mpa, port);
}

static int destroy_id(struct rdma_cm_id *id);

int rdma_destroy_id(struct rdma_cm_id *id)
{
	struct uiw_cm_id *c = (struct uiw_cm_id *)id;
	struct rdma_event_channel *own = c->sync ? id->channel : NULL;

	if (c->sync && id->event != NULL)
		rdma_ack_cm_event(id->event);
	destroy_id(id);
	if (own != NULL)
		rdma_destroy_event_channel(own);
	return 0;
}

/*
 * The events of @p c still queued on its channel, not yet read, go with it, as rdma-core's
 * do (the kernel drops what it has not reported when an id is destroyed): read later, each
 * would name freed memory. libfabric's RXM destroys the id of a connection that lost a
 * simultaneous connect while the peer's rejection is still on its way. A connection request
 * queued for a listener that goes is refused, and the id made for it goes too.
 */
static void drop_queued_events(struct uiw_cm_id *c)
{
	struct uiw_event_channel *ch = (struct uiw_event_channel *)c->id.channel;
	struct cm_ev *gone = NULL, *e;
	uint64_t v;

	if (ch == NULL)
		return;
	pthread_mutex_lock(&uiw_ev_lock);   /* engines may queue at once */
	bool had = ch->head != NULL;

	ch->tail = NULL;
	for (struct cm_ev **p = &ch->head; (e = *p) != NULL;) {
		if (e->ev.id == &c->id || e->ev.listen_id == &c->id) {
			*p = e->next;
			e->next = gone;
			gone = e;
		} else {
			ch->tail = e;
			p = &e->next;
		}
	}
	/* The fd was readable while events waited; it is not now. Read under the lock, so that
	 * an event queued meanwhile keeps the fd readable (its writer saw the queue empty only
	 * after this), and only when readable: the program may have left the fd blocking, and
	 * the writer of an event dropped here may not have written yet. */
	struct pollfd pf = { .fd = ch->ch.fd, .events = POLLIN };

	if (had && ch->head == NULL && poll(&pf, 1, 0) == 1 && read(ch->ch.fd, &v, sizeof(v)) < 0)
		v = 0;
	pthread_mutex_unlock(&uiw_ev_lock);
	while ((e = gone) != NULL) {
		struct uiw_cm_id *child = (struct uiw_cm_id *)e->ev.id;

		gone = e->next;
		if (e->ev.event == RDMA_CM_EVENT_CONNECT_REQUEST && child != c) {
			if (child->conn != NULL)
				uiw_mpa_reject(child->conn, NULL, 0);
			destroy_id(&child->id);
		}
		free(e);
	}
}

static int destroy_id(struct rdma_cm_id *id)
{
	UIW_API_LOCK();
	struct uiw_cm_id *c = (struct uiw_cm_id *)id;

	if (c->state == CM_LISTEN && c->dev != NULL)
		unlisten_all(c->dev->stack, c->port, c->dev->stack->nengines);
	if (id->qp != NULL) {
		((struct uiw_qp_v *)id->qp)->cm = NULL;   /* the QP outlives the id */
		/* ...but not its connection, which closes below without telling anyone. */
		if (c->conn != NULL)
			uiw_qp_detach(uiw_verbs_qp_core(id->qp));
	}
	/*
	 * A connection still up is closed, not reset: what was already handed to TCP (the last
	 * Send a program waited for before tearing down, say) still reaches the peer, then our
	 * FIN. Linux does the same for an id destroyed without rdma_disconnect (the socket is
	 * released: FIN after the data). A reset here lost perftest's final handshake message.
	 */
	if (c->conn != NULL) {
		uiw_mpa_set_user(c->conn, NULL, NULL);
		uiw_mpa_close(c->conn);
	}
	resolving_remove(c);
	drop_queued_events(c);
	id_set_channel(c, NULL);
	free(c->qp_init);
	free(c);
	return 0;
}

/*
 * The IPv4 address and port of @p a: an AF_INET address, or an AF_INET6 one that is
 * IPv4-mapped (::ffff:a.b.c.d) or the wildcard. glibc's getaddrinfo() gives the mapped
 * form for an IPv4 literal on a host with only IPv6 addresses configured (rping does get
 * that in a namespace whose only address is a link-local one). @return false otherwise.
 */
static bool ipv4_of(const struct sockaddr *a, uint32_t *ip, uint16_t *port)
{
	if (a->sa_family == AF_INET) {
		const struct sockaddr_in *s = (const struct sockaddr_in *)(const void *)a;

		*ip = ntohl(s->sin_addr.s_addr);
		*port = ntohs(s->sin_port);
		return true;
	}
	if (a->sa_family == AF_INET6) {
		const struct sockaddr_in6 *s = (const struct sockaddr_in6 *)(const void *)a;

		uint32_t be;

		memcpy(&be, &s->sin6_addr.s6_addr[12], sizeof(be));
		if (IN6_IS_ADDR_V4MAPPED(&s->sin6_addr))
			*ip = ntohl(be);
		else if (IN6_IS_ADDR_UNSPECIFIED(&s->sin6_addr))
			*ip = INADDR_ANY;
		else
			return false;
		*port = ntohs(s->sin6_port);
		return true;
	}
	return false;
}

#define CM_PORT_LO 32768   /* Linux's ip_local_port_range */
#define CM_PORT_HI 60999

int rdma_bind_addr(struct rdma_cm_id *id, struct sockaddr *addr)
{
	UIW_API_LOCK();
	struct uiw_cm_id *c = (struct uiw_cm_id *)id;
	uint32_t ip;
	uint16_t port;

	if (addr == NULL || !ipv4_of(addr, &ip, &port))
		return fail(EAFNOSUPPORT);
	/* The wildcard and, as Linux's rdma_cm binds loopback to its first device, a
	 * loopback address: the first instance (libfabric's verbs provider binds 127.0.0.1
	 * when it probes). */
	c->dev = ip == INADDR_ANY || (ip >> 24) == 127 ? uiw_dev_for_dst(0) : uiw_dev_by_ip(ip);
	if (c->dev == NULL)
		return fail(EADDRNOTAVAIL);
	/* Port 0: one of Linux's local range, as its rdma_cm picks (read back with
	 * rdma_get_src_port(); rdma_listen() moves on should another listener hold it). */
	c->port_auto = port == 0;
	if (port == 0)
		port = (uint16_t)(CM_PORT_LO + (uiw_now_ns() ^ (uint64_t)getpid() * 40503u) %
					       (CM_PORT_HI - CM_PORT_LO + 1));
	c->port = port;
	set_addr(&id->route.addr.src_addr, c->dev->stack->net.ip, c->port);
	id->verbs = uiw_dev_context(c->dev);
	id->port_num = 1;
	c->state = CM_BOUND;
	return 0;
}

static int resolve_addr(struct rdma_cm_id *id, struct sockaddr *src, struct sockaddr *dst,
			int timeout_ms)
{
	UIW_API_LOCK();
	struct uiw_cm_id *c = (struct uiw_cm_id *)id;
	uint32_t ip;
	uint16_t port;

	(void)timeout_ms;
	if (dst == NULL || !ipv4_of(dst, &ip, &port))
		return fail(EAFNOSUPPORT);
	if (src != NULL && rdma_bind_addr(id, src) != 0)
		return -1;
	if (c->dev == NULL) {
		c->dev = uiw_dev_for_dst(ip);
		if (c->dev == NULL)
			return fail(EADDRNOTAVAIL);
		set_addr(&id->route.addr.src_addr, c->dev->stack->net.ip, 0);
		id->verbs = uiw_dev_context(c->dev);
		id->port_num = 1;
	}
	set_addr(&id->route.addr.dst_addr, ip, port);
	if (c->eng == NULL || c->eng->d != c->dev)   /* a QP made already keeps its engine */
		c->eng = uiw_dev_next_engine(c->dev);
	/* As Linux's rdma_cm: the address is resolved once the next hop's link-layer address
	 * is known. Connecting first left the SYNs of a burst of connections to ARP's hold,
	 * which keeps a few: the rest were dropped and sent again a second later. */
	int rc = uiw_net_resolve(&c->eng->e->net, ip, uiw_now_ns());

	resolving_remove(c);
	if (rc == 0) {
		struct uiw_cm_id **head = &c->eng->resolving;

		uiw_cma_poll_hook = cma_poll;
		c->resolve_by = uiw_now_ns() + (uint64_t)(timeout_ms > 0 ? timeout_ms : 2000) * UIW_NS_PER_MS;
		c->res_next = *head;
		if (*head != NULL)
			(*head)->res_pprev = &c->res_next;
		*head = c;
		c->res_pprev = head;
		return 0;
	}
	queue_event(c, rc > 0 ? RDMA_CM_EVENT_ADDR_RESOLVED : RDMA_CM_EVENT_ADDR_ERROR,
		    rc > 0 ? 0 : rc, NULL, 0, NULL);
	return 0;
}

/* The resolutions waiting on engine @p g: in its own pass, with its ARP cache. */
static void cma_poll(struct uiw_eng *g, uint64_t now)
{
	struct uiw_cm_id *c = g->resolving, *next;

	for (; c != NULL; c = next) {
		struct sockaddr_in *d = (struct sockaddr_in *)&c->id.route.addr.dst_addr;
		int rc = uiw_net_resolve(&c->eng->e->net, ntohl(d->sin_addr.s_addr), now);

		next = c->res_next;
		if (rc == 0 && now < c->resolve_by)
			continue;
		resolving_remove(c);
		queue_event(c, rc > 0 ? RDMA_CM_EVENT_ADDR_RESOLVED : RDMA_CM_EVENT_ADDR_ERROR,
			    rc > 0 ? 0 : rc < 0 ? rc : -ETIMEDOUT, NULL, 0, NULL);
	}
}

int rdma_resolve_addr(struct rdma_cm_id *id, struct sockaddr *src, struct sockaddr *dst,
		      int timeout_ms)
{
	return resolve_addr(id, src, dst, timeout_ms) == 0 ? sync_complete(id) : -1;
}

static int resolve_route(struct rdma_cm_id *id)
{
	UIW_API_LOCK();
	if (((struct uiw_cm_id *)id)->dev == NULL)
		return fail(EINVAL);
	queue_event((struct uiw_cm_id *)id, RDMA_CM_EVENT_ROUTE_RESOLVED, 0, NULL, 0, NULL);
	return 0;
}

int rdma_resolve_route(struct rdma_cm_id *id, int timeout_ms)
{
	(void)timeout_ms;
	return resolve_route(id) == 0 ? sync_complete(id) : -1;
}

#define CM_BACKLOG_MAX 1024

/* Listens on @p c's port on every engine. @return 0 or -errno (none listens then). */
static int listen_all(struct uiw_cm_id *c, int backlog)
{
	for (unsigned i = 0; i < c->dev->stack->nengines; i++) {
		int rc = uiw_mpa_listen(uiw_stack_engine(c->dev->stack, i)->mpa, c->port,
					backlog > 0 && backlog < CM_BACKLOG_MAX ? (unsigned)backlog
										: CM_BACKLOG_MAX,
					&c->dev->mpa_params, &cm_ops, c);

		if (rc != 0) {
			unlisten_all(c->dev->stack, c->port, i);
			return rc;
		}
	}
	return 0;
}

int rdma_listen(struct rdma_cm_id *id, int backlog)
{
	UIW_API_LOCK();
	struct uiw_cm_id *c = (struct uiw_cm_id *)id;
	int rc;

	if (c->state != CM_BOUND)
		return fail(EINVAL);
	/* As Linux's rdma_cm (ucma's max_backlog): the backlog asked for, or 1024 when it is
	 * 0, negative or larger. It bounds both the half-open TCP connections and those
	 * waiting for their MPA Request or for rdma_accept. */
	/* Every engine listens: a connection comes in on the engine its 4-tuple names. The
	 * backlog bounds each engine's queue. */
	for (unsigned tries = 0;; tries++) {
		rc = listen_all(c, backlog);
		if (rc != -EADDRINUSE || !c->port_auto || tries == CM_PORT_HI - CM_PORT_LO)
			break;
		c->port = c->port == CM_PORT_HI ? CM_PORT_LO : (uint16_t)(c->port + 1);
	}
	if (rc != 0)
		return fail(-rc);
	set_addr(&id->route.addr.src_addr, c->dev->stack->net.ip, c->port);
	c->state = CM_LISTEN;
	return 0;
}

static void params_from(struct uiw_mpa_params *p, const struct uiw_dev *d,
			const struct rdma_conn_param *cp)
{
	*p = d->mpa_params;
	if (cp == NULL)
		return;
	p->pd = cp->private_data;
	p->pd_len = cp->private_data != NULL ? cp->private_data_len : 0;
	p->ird = cp->responder_resources;
	p->ord = cp->initiator_depth;
}

static int connect_id(struct rdma_cm_id *id, struct rdma_conn_param *conn_param)
{
	UIW_API_LOCK();
	struct uiw_cm_id *c = (struct uiw_cm_id *)id;
	struct uiw_mpa_params p;
	struct sockaddr_in *dst = sin_of(&id->route.addr.dst_addr);
	int rc;

	if (c->dev == NULL || dst->sin_family != AF_INET)
		return fail(EINVAL);
	params_from(&p, c->dev, conn_param);
	if (c->eng == NULL)
		c->eng = uiw_dev_next_engine(c->dev);
	c->state = CM_CONNECTING;
	rc = uiw_mpa_connect(c->eng->e->mpa, ntohl(dst->sin_addr.s_addr), ntohs(dst->sin_port), &p,
			     &cm_ops, c, uiw_now_ns(), &c->conn);
	if (rc != 0) {
		c->state = CM_CLOSED;
		return fail(-rc);
	}
	return 0;
}

int rdma_connect(struct rdma_cm_id *id, struct rdma_conn_param *conn_param)
{
	return connect_id(id, conn_param) == 0 ? sync_complete(id) : -1;
}

static int accept_id(struct rdma_cm_id *id, struct rdma_conn_param *conn_param)
{
	UIW_API_LOCK();
	struct uiw_cm_id *c = (struct uiw_cm_id *)id;
	struct uiw_mpa_params p;
	int rc;

	if (c->state != CM_REQUEST || c->conn == NULL)
		return fail(EINVAL);
	params_from(&p, c->dev, conn_param);
	rc = uiw_mpa_accept(c->conn, &p, &cm_ops, c);
	return rc != 0 ? fail(-rc) : 0;
}

int rdma_accept(struct rdma_cm_id *id, struct rdma_conn_param *conn_param)
{
	return accept_id(id, conn_param) == 0 ? sync_complete(id) : -1;
}

int rdma_reject(struct rdma_cm_id *id, const void *private_data, uint8_t private_data_len)
{
	UIW_API_LOCK();
	struct uiw_cm_id *c = (struct uiw_cm_id *)id;

	if (c->state != CM_REQUEST || c->conn == NULL)
		return fail(EINVAL);
	c->state = CM_CLOSED;
	return uiw_mpa_reject(c->conn, private_data, private_data_len) != 0 ? fail(EINVAL) : 0;
}

int rdma_disconnect(struct rdma_cm_id *id)
{
	UIW_API_LOCK();
	struct uiw_cm_id *c = (struct uiw_cm_id *)id;

	if (c->conn == NULL)   /* gone already (the peer closed first): nothing left to do */
		return c->state == CM_CLOSED ? 0 : fail(EINVAL);
	if (id->qp != NULL) {
		struct uiw_qp *qp = uiw_verbs_qp_core(id->qp);

		uiw_qp_kick(qp);   /* what was posted goes ahead of the FIN */
		uiw_qp_disconnect(qp);
	}
	/* Also when the QP is no longer in RTS (the peer's FIN moved it to ERROR): our FIN
	 * must still go, or the peer never hears the disconnect. */
	if (c->conn != NULL)
		uiw_mpa_close(c->conn);
	return 0;
}

int rdma_get_cm_event(struct rdma_event_channel *channel, struct rdma_cm_event **event)
{
	struct uiw_event_channel *ch = (struct uiw_event_channel *)channel;
	uint64_t v;

	UIW_API_LOCK();

	int err = 0, fl = -1;

	ch->waiters++;
	/* Whether to wait is asked of the fd (the program sets O_NONBLOCK on it) only when
	 * there is nothing to take: a system call an event cost 8% of a 10,000-QP set-up. */
	while (ch->head == NULL && !ch->dead)
		if (!uiw_wait_some(channel->fd, uiw_fd_nonblock(channel->fd, &fl)) && ch->head == NULL) {
			err = errno;   /* EAGAIN, or EINTR: a signal */
			break;
		}
	ch->waiters--;
	if (ch->dead) {
		/* Destroyed under us: as with rdma-core, whose waiter stays blocked in read() on
		 * the closed fd, this thread waits for the process to end (rping's CM thread
		 * would otherwise exit the program with an error as main returns). */
		uiw_api_abandon();
		uiw_held_ = 0;
		for (;;)
			pause();
	}
	if (ch->head == NULL)
		return fail(err != 0 ? err : EAGAIN);
	struct cm_ev *e = ch->head;

	ch->head = e->next;
	if (ch->head == NULL) {
		ch->tail = NULL;
		if (read(channel->fd, &v, sizeof(v)) < 0)
			v = 0;
	}
	e->ev.id->event = &e->ev;
	*event = &e->ev;
	return 0;
}

/* Events wait on @p channel (without the API lock: a hint for a poll, as its fd is). */
bool uiw_cm_channel_pending(struct rdma_event_channel *channel)
{
	struct uiw_event_channel *ch = (struct uiw_event_channel *)channel;
	bool some;

	pthread_mutex_lock(&uiw_ev_lock);
	some = ch->head != NULL;
	pthread_mutex_unlock(&uiw_ev_lock);
	return some;
}

int rdma_ack_cm_event(struct rdma_cm_event *event)
{
	UIW_API_LOCK();
	if (event->id != NULL && event->id->event == event)
		event->id->event = NULL;
	free(event);   /* the event is the first member of struct cm_ev */
	return 0;
}

/* @p qp is @p c's: its engine is the id's from here on (an active id that has none yet
 * takes the next now and connects on it), and posting locks that engine only. */
static void qp_on_id(struct uiw_cm_id *c, struct ibv_qp *qp)
{
	c->id.qp = qp;
	((struct uiw_qp_v *)qp)->cm = &c->id;
	if (c->eng == NULL)
		c->eng = uiw_dev_next_engine(c->dev);
	((struct uiw_qp_v *)qp)->eng = c->eng->idx;
}

/* Frees the CQs and completion channels rdma_create_qp() made for @p c. */
static void destroy_own_cqs(struct uiw_cm_id *c)
{
	struct rdma_cm_id *id = &c->id;

	if (!c->own_cqs)
		return;
	if (id->send_cq != NULL && id->send_cq != id->recv_cq)
		ibv_destroy_cq(id->send_cq);
	if (id->recv_cq != NULL)
		ibv_destroy_cq(id->recv_cq);
	if (id->send_cq_channel != NULL && id->send_cq_channel != id->recv_cq_channel)
		ibv_destroy_comp_channel(id->send_cq_channel);
	if (id->recv_cq_channel != NULL)
		ibv_destroy_comp_channel(id->recv_cq_channel);
	id->send_cq = id->recv_cq = NULL;
	id->send_cq_channel = id->recv_cq_channel = NULL;
	c->own_cqs = false;
}

/* A CQ of @p depth entries (at least 1) with a completion channel of its own and the id
 * as its context. @return 0 or -1 with errno. */
static int make_own_cq(struct rdma_cm_id *id, uint32_t depth, struct ibv_cq **cq,
		       struct ibv_comp_channel **ch)
{
	if ((*ch = ibv_create_comp_channel(id->verbs)) == NULL)
		return -1;
	*cq = ibv_create_cq(id->verbs, (int)(depth ? depth : 1), id, *ch, 0);
	return *cq != NULL ? 0 : -1;
}

/* As librdmacm's: a CQ the attributes do not give is made for the id, with a completion
 * channel and the id as its context (rdma_get_send_comp() and rdma_get_recv_comp() wait
 * on them), sized by the queue it serves; one the attributes give stays theirs. */
static int make_own_cqs(struct uiw_cm_id *c, struct ibv_qp_init_attr *attr)
{
	struct rdma_cm_id *id = &c->id;

	c->own_cqs = true;
	if ((attr->recv_cq == NULL &&
	     make_own_cq(id, attr->cap.max_recv_wr, &id->recv_cq, &id->recv_cq_channel) != 0) ||
	    (attr->send_cq == NULL &&
	     make_own_cq(id, attr->cap.max_send_wr, &id->send_cq, &id->send_cq_channel) != 0)) {
		int err = errno;

		destroy_own_cqs(c);
		return fail(err);
	}
	if (attr->send_cq == NULL)
		attr->send_cq = id->send_cq;
	if (attr->recv_cq == NULL)
		attr->recv_cq = id->recv_cq;
	return 0;
}

int rdma_create_qp(struct rdma_cm_id *id, struct ibv_pd *pd, struct ibv_qp_init_attr *attr)
{
	UIW_API_LOCK();
	struct uiw_cm_id *c = (struct uiw_cm_id *)id;
	struct ibv_qp *qp;

	if (id->verbs == NULL || c->dev == NULL)
		return fail(EINVAL);
	/* No PD: the id's, else the device's own (librdmacm keeps one per device). */
	if (pd == NULL)
		pd = id->pd != NULL ? id->pd : uiw_dev_default_pd(c->dev);
	if (pd == NULL || pd->context != id->verbs)
		return fail(EINVAL);
	bool no_send = attr->send_cq == NULL, no_recv = attr->recv_cq == NULL;

	if ((no_send || no_recv) && !c->own_cqs && make_own_cqs(c, attr) != 0)
		return -1;
	qp = ibv_create_qp(pd, attr);
	if (qp == NULL) {
		int err = errno;

		destroy_own_cqs(c);
		if (no_send)   /* the caller's attributes as they were */
			attr->send_cq = NULL;
		if (no_recv)
			attr->recv_cq = NULL;
		return fail(err);
	}
	id->pd = pd;
	qp_on_id(c, qp);
	return 0;
}

void rdma_destroy_qp(struct rdma_cm_id *id)
{
	UIW_API_LOCK();
	if (id->qp == NULL)
		return;
	ibv_destroy_qp(id->qp);
	id->qp = NULL;
	destroy_own_cqs((struct uiw_cm_id *)id);
}

const char *rdma_event_str(enum rdma_cm_event_type event)
{
	static const char *const names[] = {
		"RDMA_CM_EVENT_ADDR_RESOLVED", "RDMA_CM_EVENT_ADDR_ERROR",
		"RDMA_CM_EVENT_ROUTE_RESOLVED", "RDMA_CM_EVENT_ROUTE_ERROR",
		"RDMA_CM_EVENT_CONNECT_REQUEST", "RDMA_CM_EVENT_CONNECT_RESPONSE",
		"RDMA_CM_EVENT_CONNECT_ERROR", "RDMA_CM_EVENT_UNREACHABLE", "RDMA_CM_EVENT_REJECTED",
		"RDMA_CM_EVENT_ESTABLISHED", "RDMA_CM_EVENT_DISCONNECTED",
		"RDMA_CM_EVENT_DEVICE_REMOVAL", "RDMA_CM_EVENT_MULTICAST_JOIN",
		"RDMA_CM_EVENT_MULTICAST_ERROR", "RDMA_CM_EVENT_ADDR_CHANGE",
		"RDMA_CM_EVENT_TIMEWAIT_EXIT",
	};

	return (unsigned)event < sizeof(names) / sizeof(names[0]) ? names[event] : "UNKNOWN EVENT";
}

/* ---- Address resolution, ports, devices, and the calls iWARP has no use for. ---- */

/* A copy of @p a (@p len octets) into *@p to, *@p to_len: IPv4 only. @return 0 or -errno. */
static int copy_hint_addr(struct sockaddr **to, socklen_t *to_len, const struct sockaddr *a,
			  socklen_t len)
{
	uint32_t ip;
	uint16_t port;
	struct sockaddr_in *sa;

	if (len < sizeof(struct sockaddr_in) || !ipv4_of(a, &ip, &port))
		return -EAFNOSUPPORT;
	if ((sa = calloc(1, sizeof(*sa))) == NULL)
		return -ENOMEM;
	set_addr((struct sockaddr *)sa, ip, port);
	free(*to);
	*to = (struct sockaddr *)sa;
	*to_len = sizeof(*sa);
	return 0;
}

/* The addresses @p hints gives that the node did not (librdmacm): a source for an active
 * lookup (common.c's get_rdma_addr() binds to it), a destination without a node. */
static int addrs_from_hints(struct rdma_addrinfo *r, const struct rdma_addrinfo *hints,
			    bool node_given)
{
	int rc = 0;

	if (hints == NULL)
		return 0;
	if (hints->ai_src_addr != NULL && hints->ai_src_len > 0 &&
	    (!(r->ai_flags & RAI_PASSIVE) || !node_given))
		rc = copy_hint_addr(&r->ai_src_addr, &r->ai_src_len, hints->ai_src_addr,
				    hints->ai_src_len);
	if (rc == 0 && hints->ai_dst_addr != NULL && hints->ai_dst_len > 0 &&
	    !(r->ai_flags & RAI_PASSIVE) && !node_given)
		rc = copy_hint_addr(&r->ai_dst_addr, &r->ai_dst_len, hints->ai_dst_addr,
				    hints->ai_dst_len);
	return rc;
}

static int getaddrinfo_node(const char *node, const char *service, const struct rdma_addrinfo *hints,
			    struct rdma_addrinfo **res);

/*
 * IPv4 only, by number or by name (the system resolver); @p service is the port. With
 * RAI_PASSIVE the node (if any) is the source, else the destination; the hints' addresses
 * fill what the node does not give.
 */
int rdma_getaddrinfo(const char *node, const char *service, const struct rdma_addrinfo *hints,
		     struct rdma_addrinfo **res)
{
	bool passive = hints != NULL && (hints->ai_flags & RAI_PASSIVE);
	int rc;

	/* No node, but the hints name the destination (or, passive and with no service
	 * either, the source: libfabric's RXM asks so): that is the node. */
	if (node == NULL && hints != NULL &&
	    (passive ? service == NULL && hints->ai_src_addr != NULL : hints->ai_dst_addr != NULL)) {
		struct rdma_addrinfo *r = calloc(1, sizeof(*r));

		if (r == NULL)
			return fail(ENOMEM);
		r->ai_flags = passive ? RAI_PASSIVE : 0;
		r->ai_family = AF_INET;
		r->ai_qp_type = IBV_QPT_RC;
		r->ai_port_space = RDMA_PS_TCP;
		rc = addrs_from_hints(r, hints, false);
		if (rc != 0) {
			rdma_freeaddrinfo(r);
			return fail(-rc);
		}
		*res = r;
		return 0;
	}
	if (getaddrinfo_node(node, service, hints, res) != 0)
		return -1;
	rc = addrs_from_hints(*res, hints, node != NULL);
	if (rc != 0) {
		rdma_freeaddrinfo(*res);
		*res = NULL;
		return fail(-rc);
	}
	return 0;
}

static int getaddrinfo_node(const char *node, const char *service, const struct rdma_addrinfo *hints,
			    struct rdma_addrinfo **res)
{
	struct addrinfo h = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM }, *ai = NULL;
	bool passive = hints != NULL && (hints->ai_flags & RAI_PASSIVE);
	struct rdma_addrinfo *r;
	struct sockaddr_in *sa;
	int err = uiw_dropin_ensure();

	if (err != 0)
		return fail(err);
	if (hints != NULL && hints->ai_family != 0 && hints->ai_family != AF_INET)
		return fail(EAFNOSUPPORT);
	if (hints != NULL && hints->ai_port_space != 0 && hints->ai_port_space != RDMA_PS_TCP)
		return fail(EINVAL);
	if (passive)
		h.ai_flags |= AI_PASSIVE;
	if (node == NULL && !passive)
		return fail(EINVAL);
	if (getaddrinfo(node, service, &h, &ai) != 0 || ai == NULL)
		return fail(EADDRNOTAVAIL);
	r = calloc(1, sizeof(*r));
	sa = calloc(1, sizeof(*sa));
	if (r == NULL || sa == NULL) {
		free(r);
		free(sa);
		freeaddrinfo(ai);
		return fail(ENOMEM);
	}
	memcpy(sa, ai->ai_addr, sizeof(*sa));
	freeaddrinfo(ai);
	r->ai_flags = passive ? RAI_PASSIVE : 0;
	r->ai_family = AF_INET;
	r->ai_qp_type = IBV_QPT_RC;
	r->ai_port_space = RDMA_PS_TCP;
	if (passive) {
		r->ai_src_addr = (struct sockaddr *)sa;
		r->ai_src_len = sizeof(*sa);
	} else {
		r->ai_dst_addr = (struct sockaddr *)sa;
		r->ai_dst_len = sizeof(*sa);
	}
	*res = r;
	return 0;
}

void rdma_freeaddrinfo(struct rdma_addrinfo *res)
{
	while (res != NULL) {
		struct rdma_addrinfo *next = res->ai_next;

		free(res->ai_src_addr);
		free(res->ai_dst_addr);
		free(res->ai_src_canonname);
		free(res->ai_dst_canonname);
		free(res->ai_route);
		free(res->ai_connect);
		free(res);
		res = next;
	}
}

__be16 rdma_get_src_port(struct rdma_cm_id *id)
{
	return sin_of(&id->route.addr.src_addr)->sin_port;
}

__be16 rdma_get_dst_port(struct rdma_cm_id *id)
{
	return sin_of(&id->route.addr.dst_addr)->sin_port;
}

struct ibv_context **rdma_get_devices(int *num_devices)
{
	int n = 0;
	struct ibv_device **list = ibv_get_device_list(&n);
	struct ibv_context **out;

	if (list == NULL)
		return NULL;
	out = calloc((size_t)n + 1, sizeof(*out));
	for (int i = 0; out != NULL && i < n; i++)
		out[i] = uiw_dev_context((struct uiw_dev *)(void *)list[i]);
	ibv_free_device_list(list);
	if (out == NULL)
		errno = ENOMEM;
	else if (num_devices != NULL)
		*num_devices = n;
	return out;
}

void rdma_free_devices(struct ibv_context **list)
{
	free(list);
}

static int migrate_id(struct rdma_cm_id *id, struct rdma_event_channel *channel)
{
	UIW_API_LOCK();

	id_set_channel((struct uiw_cm_id *)id, channel);
	return 0;
}

/* The id's events go to @p channel from now on (those already queued stay where they are);
 * NULL makes it synchronous, with a channel of its own. */
int rdma_migrate_id(struct rdma_cm_id *id, struct rdma_event_channel *channel)
{
	struct uiw_cm_id *c = (struct uiw_cm_id *)id;
	struct rdma_event_channel *old = c->sync ? id->channel : NULL;
	struct rdma_event_channel *own = NULL;

	if (channel == NULL && (own = rdma_create_event_channel()) == NULL)
		return -1;
	migrate_id(id, channel != NULL ? channel : own);
	c->sync = own != NULL;
	if (old != NULL)
		rdma_destroy_event_channel(old);
	return 0;
}

/* Type of service and address reuse are taken and have no effect; others are refused. */
int rdma_set_option(struct rdma_cm_id *id, int level, int optname, void *optval, size_t optlen)
{
	(void)id, (void)optval, (void)optlen;
	if (level == RDMA_OPTION_ID &&
	    (optname == RDMA_OPTION_ID_TOS || optname == RDMA_OPTION_ID_REUSEADDR ||
	     optname == RDMA_OPTION_ID_AFONLY || optname == RDMA_OPTION_ID_ACK_TIMEOUT))
		return 0;
	return fail(ENOSYS);
}

/* With IBV_QP_INIT_ATTR_SEND_OPS_FLAGS the QP takes the ibv_wr_* calls (verbs_wr.c). */
int rdma_create_qp_ex(struct rdma_cm_id *id, struct ibv_qp_init_attr_ex *qp_init_attr)
{
	UIW_API_LOCK();
	struct ibv_qp *qp;

	if (id->verbs == NULL || qp_init_attr->pd == NULL || qp_init_attr->pd->context != id->verbs ||
	    ((struct uiw_cm_id *)id)->dev == NULL)
		return fail(EINVAL);
	qp = uiw_create_qp_ex(id->verbs, qp_init_attr);
	if (qp == NULL)
		return -1;
	qp_on_id((struct uiw_cm_id *)id, qp);
	return 0;
}

/* The attributes a QP made outside rdma_cm would be given: iWARP QPs follow their
 * connection, so only the access rights mean anything. */
int rdma_init_qp_attr(struct rdma_cm_id *id, struct ibv_qp_attr *qp_attr, int *qp_attr_mask)
{
	(void)id;
	memset(qp_attr, 0, sizeof(*qp_attr));
	qp_attr->qp_state = IBV_QPS_RTS;
	qp_attr->qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	*qp_attr_mask = IBV_QP_STATE | IBV_QP_ACCESS_FLAGS;
	return 0;
}

/* iWARP connections are up when MPA says so: nothing to complete. */
int rdma_establish(struct rdma_cm_id *id)
{
	(void)id;
	return 0;
}

int rdma_notify(struct rdma_cm_id *id, enum ibv_event_type event)
{
	(void)id, (void)event;
	return 0;
}

/* A passive endpoint: bound to the source address, with the QP attributes its requests'
 * QPs will get (rdma_get_request()). */
static int passive_ep(struct rdma_cm_id *id, struct rdma_addrinfo *res, struct ibv_pd *pd,
		      struct ibv_qp_init_attr *qp_init_attr)
{
	struct uiw_cm_id *c = (struct uiw_cm_id *)id;

	if (rdma_bind_addr(id, res->ai_src_addr) != 0)
		return -1;
	if (qp_init_attr != NULL) {
		c->qp_init = malloc(sizeof(*c->qp_init));
		if (c->qp_init == NULL)
			return fail(ENOMEM);
		*c->qp_init = *qp_init_attr;
	}
	id->pd = pd;
	return 0;
}

/*
 * A synchronous id for @p res (librdmacm's rdma_create_ep()): with RAI_PASSIVE bound to
 * its source, to listen on; else its destination resolved (ARP included), and a QP made
 * when @p qp_init_attr is given (with CQs of its own when the attributes give none).
 */
int rdma_create_ep(struct rdma_cm_id **id, struct rdma_addrinfo *res, struct ibv_pd *pd,
		   struct ibv_qp_init_attr *qp_init_attr)
{
	struct rdma_cm_id *cm;
	int rc;

	if (id == NULL || res == NULL)
		return fail(EINVAL);
	if (rdma_create_id(NULL, &cm, NULL, res->ai_port_space ? (enum rdma_port_space)res->ai_port_space
							       : RDMA_PS_TCP) != 0)
		return -1;
	if (qp_init_attr != NULL)   /* the QP's type is the address's (librdmacm) */
		qp_init_attr->qp_type = res->ai_qp_type ? (enum ibv_qp_type)res->ai_qp_type : IBV_QPT_RC;
	if (res->ai_flags & RAI_PASSIVE)
		rc = passive_ep(cm, res, pd, qp_init_attr);
	else
		rc = rdma_resolve_addr(cm, res->ai_src_addr, res->ai_dst_addr, 2000) != 0 ||
		     rdma_resolve_route(cm, 2000) != 0 ||
		     (qp_init_attr != NULL && rdma_create_qp(cm, pd, qp_init_attr) != 0) ? -1 : 0;
	if (rc != 0) {
		int err = errno;

		rdma_destroy_ep(cm);
		return fail(err);
	}
	*id = cm;
	return 0;
}

void rdma_destroy_ep(struct rdma_cm_id *id)
{
	if (id->qp != NULL)
		rdma_destroy_qp(id);
	rdma_destroy_id(id);
}

/*
 * The next connect request on the synchronous listening id @p listen: a synchronous id,
 * with a QP made as rdma_create_ep() was asked to (and the listener's PD); the request
 * event stays the id's until rdma_accept() or rdma_reject().
 */
int rdma_get_request(struct rdma_cm_id *listen, struct rdma_cm_id **id)
{
	struct uiw_cm_id *l = (struct uiw_cm_id *)listen;
	struct rdma_cm_event *ev;
	struct rdma_cm_id *n;

	if (!l->sync || l->state != CM_LISTEN)
		return fail(EINVAL);
	if (listen->event != NULL)
		rdma_ack_cm_event(listen->event);
	if (rdma_get_cm_event(listen->channel, &ev) != 0)
		return -1;
	if (ev->status != 0 || ev->event != RDMA_CM_EVENT_CONNECT_REQUEST) {
		int err = ev->status != 0 ? abs(ev->status) : EINVAL;

		rdma_ack_cm_event(ev);
		return fail(err);
	}
	n = ev->id;
	if (rdma_migrate_id(n, NULL) != 0)
		goto refuse;
	if (l->qp_init != NULL) {
		struct ibv_qp_init_attr attr = *l->qp_init;

		if (rdma_create_qp(n, listen->pd, &attr) != 0)
			goto refuse;
	}
	n->event = ev;
	*id = n;
	return 0;
refuse: {
		int err = errno;

		n->event = NULL;   /* acknowledged here, not by the id's end */
		rdma_reject(n, NULL, 0);
		rdma_ack_cm_event(ev);
		rdma_destroy_ep(n);
		return fail(err);
	}
}

int rdma_create_srq(struct rdma_cm_id *id, struct ibv_pd *pd, struct ibv_srq_init_attr *attr)
{
	(void)id, (void)pd, (void)attr;
	return fail(ENOSYS);
}

int rdma_create_srq_ex(struct rdma_cm_id *id, struct ibv_srq_init_attr_ex *attr)
{
	(void)id, (void)attr;
	return fail(ENOSYS);
}

void rdma_destroy_srq(struct rdma_cm_id *id)
{
	(void)id;
}

int rdma_join_multicast(struct rdma_cm_id *id, struct sockaddr *addr, void *context)
{
	(void)id, (void)addr, (void)context;
	return fail(ENOSYS);
}

int rdma_join_multicast_ex(struct rdma_cm_id *id, struct rdma_cm_join_mc_attr_ex *mc_join_attr,
			   void *context)
{
	(void)id, (void)mc_join_attr, (void)context;
	return fail(ENOSYS);
}

int rdma_leave_multicast(struct rdma_cm_id *id, struct sockaddr *addr)
{
	(void)id, (void)addr;
	return fail(ENOSYS);
}

int rdma_set_local_ece(struct rdma_cm_id *id, struct ibv_ece *ece)
{
	(void)id, (void)ece;
	return fail(EOPNOTSUPP);
}

int rdma_get_remote_ece(struct rdma_cm_id *id, struct ibv_ece *ece)
{
	(void)id, (void)ece;
	return fail(EOPNOTSUPP);
}

int rdma_reject_ece(struct rdma_cm_id *id, const void *private_data, uint8_t private_data_len)
{
	(void)id, (void)private_data, (void)private_data_len;
	return fail(EOPNOTSUPP);
}
