/* SPDX-License-Identifier: BSD-3-Clause */
/* MPA internals shared by mpa_conn.c and mpa_nego.c. */
#ifndef UIW_MPA_INTERNAL_H
#define UIW_MPA_INTERNAL_H

#include <sys/queue.h>

#include "mpa.h"

#define MPA_LISTEN_MAX 64
#define MPA_HELD_MAX 32
#define MPA_STARVED_RETRY_NS 20000ull /* refused sends are tried again this often */
/* Held FPDUs TCP refused at their release are tried again this much later. */
#define MPA_RELEASE_RETRY_NS (1000 * 1000ull)
#define MPA_REASON_LEN 128

enum mpa_state {
	MPA_S_TCP_CONNECTING,   /* initiator: TCP handshake */
	MPA_S_WAIT_REPLY,       /* initiator: Request sent */
	MPA_S_WAIT_REQUEST,     /* responder: TCP up, Request not complete */
	MPA_S_WAIT_ACCEPT,      /* responder: Request handed up, no answer yet */
	MPA_S_WAIT_FIRST,       /* responder: Reply sent, no FPDU from the initiator yet */
	MPA_S_FULL,             /* full operation */
	MPA_S_CLOSING,          /* closing: what arrives is dropped */
	MPA_S_DEAD,             /* reset; freed when the current call ends */
};

struct mpa_listener {
	bool used;
	uint16_t port;
	unsigned backlog;               /* connections at most waiting for a Request or accept */
	unsigned pending;               /* connections waiting for a Request or accept now */
	struct uiw_mpa_params p;
	const struct uiw_mpa_ops *ops;
	void *ctx;
	struct uiw_mpa *m;
};

struct uiw_mpa_conn {
	struct uiw_mpa *m;
	struct uiw_tcp_conn *tcp;
	const struct uiw_mpa_ops *ops;
	void *user;
	const struct uiw_mpa_ulp *ulp;  /* the data path, when bound (else the ops') */
	void *ulp_arg;
	enum mpa_state state;
	struct uiw_mpa_params p;        /* our side; p.pd points into pd_buf */
	uint8_t pd_buf[UIW_MPA_PD_MAX];
	struct uiw_mpa_info info;
	struct uiw_mpa_rr_info req;     /* responder: the Request (pd points into rr) */
	uint8_t rr[UIW_MPA_RR_LEN + UIW_MPA_PD_MAX];
	uint32_t rr_len;
	struct uiw_mpa_deframer rx;
	uint32_t tx_pos;                /* stream position of our next FPDU */
	struct rte_mbuf *slab;          /* the slab the next FPDU goes in, held (fpdu_slab()) */
	uint16_t slab_off;              /* where in it (its data_off) */
	bool expect_rtr;                /* responder: the first FPDU is the RTR */
	bool swallow_read_resp;         /* initiator: the Read RTR's empty Read Response */
	struct rte_mbuf *held[MPA_HELD_MAX];
	unsigned nheld;
	uint64_t deadline;              /* 0 = no timer */
	struct mpa_listener *listener;  /* responder, until the Request is answered */
	uint64_t release_at;            /* initiator: held FPDUs go at this time (0 = none) */
	bool release_retry;             /* held FPDUs TCP had no room for: each ACK tries them */
	uint64_t rx_resume_at;          /* the data path waits (uiw_mpa_rx_wait): resume then */
	bool peer_fin_pending;          /* the peer's FIN came behind what waits: it goes up after */
	unsigned in_call;               /* depth of MPA code on the stack for this conn */
	bool finish_pending;
	int err;
	char reason[MPA_REASON_LEN];
	TAILQ_ENTRY(uiw_mpa_conn) link;
	/* A send was refused (no mbuf, or no room in TCP's budget) while nothing of ours was
	 * unacknowledged: no ACK will call writable, so the poll does (uiw_mpa_run). */
	bool starved;
	TAILQ_ENTRY(uiw_mpa_conn) starved_link;
	bool timed;                     /* on uiw_mpa.timed: a deadline or release is set */
	TAILQ_ENTRY(uiw_mpa_conn) timed_link;
};

TAILQ_HEAD(mpa_conn_list, uiw_mpa_conn);

struct uiw_mpa {
	struct uiw_tcp *tcp;
	void *owner;                    /* uiw_mpa_set_owner() */
	struct rte_mempool *pool;
	uint64_t c[UIW_MPA_C__COUNT];
	struct mpa_listener ls[MPA_LISTEN_MAX];
	struct mpa_conn_list conns;
	unsigned nconns;
	uint64_t next_due;              /* no connection's deadline or release falls before */
	/* The connections with a deadline or a release set (uiw_mpa_run() walks these, not all
	 * of them: thousands of established connections have none). */
	struct mpa_conn_list timed;
	struct mpa_conn_list starved;   /* connections to call writable for (starved_link) */
	unsigned nstarved;              /* on the starved list */
	uint64_t starved_at;            /* not before: the pool refills between tries */
	bool lend;                      /* uiw_mpa_send_lent() lends (config tx_zero_copy) */
	bool lend_iova_va;              /* lent memory's IOVA is its address (EAL IOVA as VA) */
	bool lend_dma;                  /* only memory with a DMA mapping is lent (uiw_lend) */
	struct rte_mempool *slabs;      /* uiw_mpa_set_slabs() (NULL: none) */
};

/* A connection's timer (deadline or release) is set to @p at: uiw_mpa_run() looks at the
 * connections again no later than then. */
void uiw_mpa_unpend(struct uiw_mpa_conn *c);

static inline uint64_t mpa_due(struct uiw_mpa_conn *c, uint64_t at)
{
	if (!c->timed) {
		c->timed = true;
		TAILQ_INSERT_TAIL(&c->m->timed, c, timed_link);
	}
	if (at < c->m->next_due)
		c->m->next_due = at;
	return at;
}

static inline void mpa_count(struct uiw_mpa *m, enum uiw_mpa_counter k)
{
	m->c[k]++;
}

/* mpa_conn.c */
void uiw_mpa_fail(struct uiw_mpa_conn *c, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void uiw_mpa_set_reason(struct uiw_mpa_conn *c, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Queues a negotiation message (MPA Request or Reply) of @p len octets: TCP takes it even
 * when busy connections hold the engine's send budget (UIW_TCP_SEND_CTRL). */
int uiw_mpa_send_ctrl(struct uiw_mpa_conn *c, const void *buf, uint32_t len);
int uiw_mpa_send_fpdu(struct uiw_mpa_conn *c, const struct uiw_mpa_iov *iov, unsigned n,
		      unsigned ncopy, struct rte_mbuf_ext_shared_info *lend, bool hold);
void uiw_mpa_start_full(struct uiw_mpa_conn *c);
void uiw_mpa_deliver_established(struct uiw_mpa_conn *c);

/* mpa_nego.c */
void uiw_mpa_send_request(struct uiw_mpa_conn *c);
struct rte_mbuf *uiw_mpa_rx_reply(struct uiw_mpa_conn *c, struct rte_mbuf *m);
struct rte_mbuf *uiw_mpa_rx_request(struct uiw_mpa_conn *c, struct rte_mbuf *m);
int uiw_mpa_send_reply(struct uiw_mpa_conn *c, const struct uiw_mpa_params *p);
bool uiw_mpa_rtr_take(struct uiw_mpa_conn *c, const struct uiw_mpa_ulpdu *u);
bool uiw_mpa_read_resp_take(struct uiw_mpa_conn *c, const struct uiw_mpa_ulpdu *u);

#endif
