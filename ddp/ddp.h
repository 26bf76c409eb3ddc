/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * DDP (RFC 5041) for RDMAP: the STag table (registered memory, checked on every tagged
 * access), segment header parsing, placement from an MPA ULPDU view into memory, and
 * cutting messages into segments of at most MULPDU that MPA sends one by one.
 *
 * Placement copies straight from the received mbufs into the target memory: that copy is
 * the only pass over the payload besides MPA's CRC.
 */
#ifndef UIW_DDP_H
#define UIW_DDP_H

#include <stdbool.h>
#include <stdint.h>

#include "ddp_wire.h"
#include "mpa.h"

/* Access rights of a region (the values of rdma-core's IBV_ACCESS_*). */
#define UIW_ACCESS_LOCAL_WRITE 0x1u
#define UIW_ACCESS_REMOTE_WRITE 0x2u
#define UIW_ACCESS_REMOTE_READ 0x4u
#define UIW_ACCESS_REMOTE_ATOMIC 0x8u

/** A registered region: STag = 24-bit index << 8 | 8-bit key. */
struct rte_mbuf_ext_shared_info;

struct uiw_mr {
	uint32_t stag;
	uint32_t pd;
	uint64_t va;          /**< tagged offset of the first octet */
	uint64_t len;
	uint8_t *addr;
	unsigned access;
	bool valid;           /**< false once invalidated */
	bool used;
	struct rte_mbuf_ext_shared_info *dma;   /**< its IOMMU mapping (uiw_dma.h), or NULL */
};

struct uiw_stag_table {
	struct uiw_mr *mr;
	uint32_t cap;         /**< slots (a power of two) */
	uint32_t count;
	uint32_t next;        /**< where the search for a free slot starts */
	uint64_t rnd[2];
};

/**
 * An 8-bit key for a new region's STag, unpredictable as its index's high bits are (RFC
 * 5042 §5.1): with a table of 2^k slots, 24 - k + 8 bits of an STag cannot be guessed.
 */
uint8_t uiw_stag_random_key(struct uiw_stag_table *t);

/** Creates a table of @p cap regions (rounded up to a power of two, at most 2^24 - 1). */
int uiw_stag_table_init(struct uiw_stag_table *t, uint32_t cap);
void uiw_stag_table_fini(struct uiw_stag_table *t);

/**
 * Registers @p len octets at @p addr, tagged offsets from @p va, for protection domain
 * @p pd. The index is unpredictable (RFC 5042 §5.1); @p key is the consumer's 8 bits.
 * @return the region, or NULL when the table is full.
 */
struct uiw_mr *uiw_stag_register(struct uiw_stag_table *t, uint32_t pd, void *addr, uint64_t len,
				 uint64_t va, unsigned access, uint8_t key);

void uiw_stag_deregister(struct uiw_stag_table *t, struct uiw_mr *mr);

/** The region of @p stag (index and key must match), valid or not; NULL if none. */
static inline struct uiw_mr *uiw_stag_find(const struct uiw_stag_table *t, uint32_t stag)
{
	uint32_t index = stag >> 8;
	struct uiw_mr *mr;

	if (index == 0 || t->cap == 0)
		return NULL;
	mr = &t->mr[index & (t->cap - 1)];
	return mr->used && mr->stag == stag ? mr : NULL;
}

/**
 * Whether local memory [@p addr, @p addr + @p len) may be used under region @p m (found by
 * its lkey, or NULL: the work request check of verbs and RDMAP): a valid region of @p pd,
 * with @p access, that holds every octet.
 */
static inline bool uiw_mr_local_ok(const struct uiw_mr *m, uint32_t pd, uintptr_t addr,
				   uint64_t len, unsigned access)
{
	uintptr_t lo = (uintptr_t)(m != NULL ? m->addr : NULL);

	return m != NULL && m->valid && m->pd == pd && (m->access & access) == access &&
	       addr >= lo && addr - lo <= m->len && len <= m->len - (addr - lo);
}

/** uiw_mr_local_ok() for the region @p lkey names in @p t. */
static inline bool uiw_stag_local_ok(const struct uiw_stag_table *t, uint32_t lkey, uint32_t pd,
				     uintptr_t addr, uint64_t len, unsigned access)
{
	return uiw_mr_local_ok(uiw_stag_find(t, lkey), pd, addr, len, access);
}

/** What a tagged access found wrong, in the order RFC 5040 §8/RFC 5041 §7 check it. */
enum uiw_stag_check {
	UIW_STAG_OK = 0,
	UIW_STAG_INVALID,     /**< no such STag, wrong key, or invalidated */
	UIW_STAG_PD,          /**< not associated with this stream's protection domain */
	UIW_STAG_ACCESS,      /**< the region lacks the access right */
	UIW_STAG_WRAP,        /**< TO + length wraps past 2^64 */
	UIW_STAG_BOUNDS,      /**< outside the region */
};

/** Checks an access of @p len octets at @p to needing @p access. On OK, *out is the region. */
enum uiw_stag_check uiw_stag_check(const struct uiw_stag_table *t, uint32_t stag, uint32_t pd,
				   uint64_t to, uint64_t len, unsigned access, struct uiw_mr **out);

/** Invalidates @p stag for @p pd (RFC 5040 §5.2). @return 0, -ENOENT, -EACCES (other PD). */
int uiw_stag_invalidate(struct uiw_stag_table *t, uint32_t stag, uint32_t pd);

/** Whether a peer may invalidate @p mr (Send with Invalidate, RFC 5040 §5.2, §6.4) on a
 *  stream of @p pd: a valid region of that PD registered for remote access, i.e. one whose
 *  STag the application may have handed to a peer to use. A region registered for local
 *  access only (a Read's sink, whose STag the peer sees in the Read Request) may not be. */
static inline bool uiw_stag_peer_may_invalidate(const struct uiw_mr *mr, uint32_t pd)
{
	return mr != NULL && mr->valid && mr->pd == pd &&
	       (mr->access & (UIW_ACCESS_REMOTE_WRITE | UIW_ACCESS_REMOTE_READ)) != 0;
}

/** A parsed DDP segment header and where its payload starts in the ULPDU. */
struct uiw_ddp_seg {
	bool tagged, last;
	uint8_t rdmap;        /**< the ULP's control byte (RDMAP: RV and opcode) */
	uint32_t stag;        /**< tagged */
	uint64_t to;          /**< tagged */
	uint32_t rsvd_ulp;    /**< untagged: RDMAP's Invalidate STag */
	uint32_t qn, msn, mo; /**< untagged */
	uint32_t hdr_len;     /**< 14 or 18 */
	uint32_t len;         /**< payload octets after the header */
};

enum uiw_ddp_parse {
	UIW_DDP_PARSE_OK = 0,
	UIW_DDP_PARSE_SHORT,      /**< shorter than its header */
	UIW_DDP_PARSE_VERSION,    /**< DV is not 1 (tagged code 0x04, untagged 0x06) */
};

/** Reads the header of @p u into @p s (s->tagged is set even on VERSION). */
enum uiw_ddp_parse uiw_ddp_parse(const struct uiw_mpa_ulpdu *u, struct uiw_ddp_seg *s);

/** A piece of local memory: the scatter/gather element of a work request. */
struct uiw_sge {
	uint8_t *addr;
	uint32_t len;
	uint32_t lkey;        /**< the region's STag, when the owner wants it checked */
};

/** Octets in @p n SGEs. */
uint64_t uiw_sge_total(const struct uiw_sge *sg, unsigned n);

/**
 * Copies @p len octets of @p u from offset @p from into the SGE list at offset @p at.
 * @return 0, or -1 when they do not fit (nothing is copied then).
 */
int uiw_ddp_place(const struct uiw_mpa_ulpdu *u, uint32_t from, uint32_t len,
		  const struct uiw_sge *sg, unsigned n, uint64_t at);

/** Where the next segment of a message being sent starts. */
struct uiw_ddp_tx {
	uint64_t off;         /**< octets of the message already sent */
	/** The message's SGE octets are lent to MPA under this count (uiw_mpa_send_lent()),
	 *  or copied when NULL; the sender sets it as the message starts. */
	struct rte_mbuf_ext_shared_info *lend;
};

/**
 * Sends segments of a tagged message (@p rdmap control byte, @p stag, @p to of its first
 * octet, payload from @p sg) from @p tx->off until it is all sent or MPA has no room.
 * A zero-length message is one segment. @return 1 when the last segment went out, 0 when
 * out of room (call again once writable), or a negative MPA error.
 */
int uiw_ddp_send_tagged(struct uiw_mpa_conn *c, struct uiw_ddp_tx *tx, uint8_t rdmap,
			uint32_t stag, uint64_t to, const struct uiw_sge *sg, unsigned n);

/** The same for an untagged message on @p qn with @p msn; @p body (may be NULL) comes
 *  first in the payload, before the SGEs (a Read Request's or Terminate's fields). */
int uiw_ddp_send_untagged(struct uiw_mpa_conn *c, struct uiw_ddp_tx *tx, uint8_t rdmap,
			  uint32_t rsvd_ulp, uint32_t qn, uint32_t msn, const void *body,
			  uint32_t body_len, const struct uiw_sge *sg, unsigned n);

/* ---- A DDP stream (RFC 5041 §5): one per MPA connection. ---- */

/** Untagged queues a stream has at most (RDMAP uses three, RFC 5040 §5.1). */
#define UIW_DDP_QUEUES_MAX 4

/** One untagged queue: the MSN sequencing of RFC 5041 §5.3 in each direction. */
struct uiw_ddp_queue {
	uint32_t rx_msn;      /**< the MSN the next message received must carry */
	uint32_t rx_mo;       /**< octets of the message under way placed so far */
	uint32_t tx_msn;      /**< the MSN of the next message sent */
};

/** What a stream hands its ULP (RDMAP). */
struct uiw_ddp_ulp {
	/** A segment arrived, with DDP's verdict @p pr on its header. The ULP asks DDP's
	 *  checks below of what it expects, then places. Return nonzero when the stream
	 *  stopped (a Terminate, a close): nothing more of it is delivered. */
	int (*segment)(void *arg, const struct uiw_mpa_ulpdu *u, const struct uiw_ddp_seg *s,
		       enum uiw_ddp_parse pr);
	/** Send space was freed. */
	void (*writable)(void *arg);
};

struct uiw_ddp_stream {
	struct uiw_mpa_conn *conn;    /**< NULL before establishment and after the close */
	const struct uiw_ddp_ulp *ulp;
	void *ulp_arg;
	unsigned nq;
	struct uiw_ddp_queue q[UIW_DDP_QUEUES_MAX];
	struct uiw_ddp_tx tx;         /**< the message being sent */
};

/** A stream of @p nq untagged queues (at most UIW_DDP_QUEUES_MAX) for @p ulp. */
void uiw_ddp_stream_init(struct uiw_ddp_stream *st, unsigned nq, const struct uiw_ddp_ulp *ulp,
			 void *arg);

/**
 * The stream takes the established connection @p c: every queue's MSNs start at 1 (RFC
 * 5041 §5.3), and from now on MPA hands ULPDUs and send space straight to the stream,
 * which hands them to its ULP. @p c may be NULL for a harness that feeds uiw_ddp_mpa_ulp.
 */
void uiw_ddp_stream_attach(struct uiw_ddp_stream *st, struct uiw_mpa_conn *c);

/** The stream lets go of its connection without touching it further. */
void uiw_ddp_stream_detach(struct uiw_ddp_stream *st);

/** The RTR of MPA's negotiation used MSN 1 of queue @p qn: sent by us when @p ours, else
 *  received. */
void uiw_ddp_stream_rtr(struct uiw_ddp_stream *st, uint32_t qn, bool ours);

/** MPA's data path into a stream (its argument is the stream). */
extern const struct uiw_mpa_ulp uiw_ddp_mpa_ulp;

/* The receive checks and placement below run for every segment: inline. */

/**
 * RFC 5041 §7.2's checks, in its order, of an untagged segment the ULP expects on queue
 * @p qn: the queue number, then, when @p sequenced, its MSN and MO.
 * @return 0, or the code of the Terminate (UIW_DDP_UNT_*).
 */
static inline uint8_t uiw_ddp_untagged_check(const struct uiw_ddp_stream *st,
					     const struct uiw_ddp_seg *s, uint32_t qn,
					     bool sequenced)
{
	if (s->qn != qn || qn >= st->nq)
		return UIW_DDP_UNT_QN;
	if (!sequenced)
		return 0;
	if (s->msn != st->q[qn].rx_msn)
		return UIW_DDP_UNT_MSN_RANGE;
	if (s->mo != st->q[qn].rx_mo)
		return UIW_DDP_UNT_MO;
	return 0;
}

/** Places an untagged segment at its queue's MO in @p sg, and counts it.
 *  @return 0, or -1 when it does not fit (nothing placed: UIW_DDP_UNT_TOO_LONG). */
static inline int uiw_ddp_untagged_place(struct uiw_ddp_stream *st, const struct uiw_mpa_ulpdu *u,
					 const struct uiw_ddp_seg *s, const struct uiw_sge *sg,
					 unsigned n)
{
	struct uiw_ddp_queue *q = &st->q[s->qn < st->nq ? s->qn : 0];

	/* The queue number was checked (uiw_ddp_untagged_check); a caller that skipped it
	 * still cannot reach past the queues. */
	if (s->qn >= st->nq || uiw_ddp_place(u, s->hdr_len, s->len, sg, n, q->rx_mo) != 0)
		return -1;
	q->rx_mo += s->len;
	return 0;
}

/** The message on queue @p qn is whole. @return its length; the queue expects the next
 *  MSN. */
static inline uint32_t uiw_ddp_untagged_done(struct uiw_ddp_stream *st, uint32_t qn)
{
	struct uiw_ddp_queue *q = &st->q[qn];
	uint32_t len = q->rx_mo;

	q->rx_mo = 0;
	q->rx_msn++;
	return len;
}

/**
 * RFC 5041 §7.1 for a tagged segment into the STag table: the STag valid, of protection
 * domain @p pd, with @p access (the ULP's right, RFC 5040 §8), the TO not wrapping and the
 * payload in bounds. On UIW_STAG_OK, *dst is where the payload goes.
 */
static inline enum uiw_stag_check uiw_ddp_tagged_target(const struct uiw_stag_table *t,
							uint32_t pd, const struct uiw_ddp_seg *s,
							unsigned access, struct uiw_sge *dst)
{
	struct uiw_mr *mr;
	enum uiw_stag_check r = uiw_stag_check(t, s->stag, pd, s->to, s->len, access, &mr);

	if (r == UIW_STAG_OK)
		*dst = (struct uiw_sge){ mr->addr + (s->to - mr->va), s->len, 0 };
	return r;
}

/** The Terminate code (UIW_DDP_TAG_*) for what the STag table refused; UIW_STAG_ACCESS
 *  has none (access rights are the ULP's to report). */
uint8_t uiw_ddp_tagged_code(enum uiw_stag_check r);

/** RFC 5041 §7.1 for a tagged segment into a buffer the ULP expects (a Read Response into
 *  its sink): STag @p stag, the segment at TO @p to within @p room octets.
 *  @return 0, UIW_DDP_TAG_INVALID_STAG or UIW_DDP_TAG_BOUNDS. */
static inline uint8_t uiw_ddp_tagged_window(const struct uiw_ddp_seg *s, uint32_t stag,
					    uint64_t to, uint64_t room)
{
	if (s->stag != stag)
		return UIW_DDP_TAG_INVALID_STAG;
	if (s->to != to || s->len > room)
		return UIW_DDP_TAG_BOUNDS;
	return 0;
}

/** uiw_ddp_send_tagged() on the stream's connection and message. */
int uiw_ddp_stream_send_tagged(struct uiw_ddp_stream *st, uint8_t rdmap, uint32_t stag,
			       uint64_t to, const struct uiw_sge *sg, unsigned n);

/** uiw_ddp_send_untagged() on queue @p qn with its next MSN, which counts on once the last
 *  segment is sent. */
int uiw_ddp_stream_send_untagged(struct uiw_ddp_stream *st, uint8_t rdmap, uint32_t rsvd_ulp,
				 uint32_t qn, const void *body, uint32_t body_len,
				 const struct uiw_sge *sg, unsigned n);

#endif
