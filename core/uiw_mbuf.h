/* SPDX-License-Identifier: BSD-3-Clause */
/** @file Cutting mbuf chains from either end, freeing the segments emptied (inline: TCP
 *  trims every segment it takes). */
#ifndef UIW_MBUF_H
#define UIW_MBUF_H

#include <stdbool.h>
#include <stdint.h>

#include <rte_mbuf.h>

/**
 * Memory lent to the layers below (zero-copy transmit): @c info counts the mbufs that refer
 * to it for its lender. Where a NIC reads frames by DMA, @c dma is the count of the
 * memory's IOMMU mapping (uiw_dma.h): the frames handed to the PMD hold that one instead,
 * so the lender gets its memory back once the send queue lets go (acknowledged), while the
 * mapping lasts until the NIC's last frame on it is freed. Every lender of memory on a
 * DMA port uses this layout.
 */
struct uiw_lend {
	struct rte_mbuf_ext_shared_info info;
	struct rte_mbuf_ext_shared_info *dma;
};

/** The DMA mapping count of the lent memory @p m (an external buffer) is on, or NULL. */
static inline struct rte_mbuf_ext_shared_info *uiw_lend_dma(const struct rte_mbuf_ext_shared_info *info)
{
	return container_of(info, const struct uiw_lend, info)->dma;
}

/** One line of uiw_prefetch_for_write(): PREFETCHW where the compiler may not emit it
 *  (the build's baseline has no PRFCHW; CPUs without it take the encoding as a no-op). */
static inline void uiw_prefetch_line_for_write(const char *c)
{
#if defined(__x86_64__)
	__asm__ volatile("prefetchw %0" : : "m"(*c));
#else
	__builtin_prefetch(c, 1, 3);
#endif
}

/**
 * Asks for the cache lines of @p len octets at @p p to be owned by this core, for writing,
 * without waiting: the stores that come later then find them here.
 */
static inline void uiw_prefetch_for_write(const void *p, size_t len)
{
	const char *c = (const char *)((uintptr_t)p & ~(uintptr_t)(RTE_CACHE_LINE_SIZE - 1));
	const char *end = (const char *)p + len;

	/* Four lines a step: a 1,500-octet frame's 24 in six. */
	for (; c + 3 * RTE_CACHE_LINE_SIZE < end; c += 4 * RTE_CACHE_LINE_SIZE) {
		uiw_prefetch_line_for_write(c);
		uiw_prefetch_line_for_write(c + RTE_CACHE_LINE_SIZE);
		uiw_prefetch_line_for_write(c + 2 * RTE_CACHE_LINE_SIZE);
		uiw_prefetch_line_for_write(c + 3 * RTE_CACHE_LINE_SIZE);
	}
	for (; c < end; c += RTE_CACHE_LINE_SIZE)
		uiw_prefetch_line_for_write(c);
}

/**
 * uiw_prefetch_for_write() over @p len octets from @p off (from the start of the data, after
 * the headroom; negative: into it) of each of the next @p depth mbufs @p pool will hand
 * this lcore: the top of its cache, which hands them out last in, first out. Where another
 * core read a frame's lines last (virtio-user's mbufs, read by the vhost-user side), the
 * stores that fill the next frames then wait for no fetch. Nothing when the lcore has no
 * cache of the pool.
 */
static inline void uiw_pool_prefetch_next(struct rte_mempool *pool, unsigned depth, int off,
					  size_t len)
{
	struct rte_mempool_cache *cache = rte_mempool_default_cache(pool, rte_lcore_id());
	/* The data's place from the mbuf's, as the pool laid them out: reading buf_addr
	 * would wait for a line that may be cold as well. */
	size_t data = sizeof(struct rte_mbuf) + rte_pktmbuf_priv_size(pool) + RTE_PKTMBUF_HEADROOM;

	if (cache == NULL)
		return;
	for (unsigned k = 1; k <= depth && k <= cache->len; k++)
		uiw_prefetch_for_write((const char *)cache->objs[cache->len - k] + data + off, len);
}

/** Whether a segment of the chain @p m refers to memory outside its own buffer (an
 *  external buffer: memory lent by its owner, or a pool mbuf's buffer, uiw_mbuf_over()). */
static inline bool uiw_mbuf_has_extbuf(const struct rte_mbuf *m)
{
	for (; m != NULL; m = m->next)
		if (RTE_MBUF_HAS_EXTBUF(m))
			return true;
	return false;
}

/** The free callback of a frame over a pool mbuf's buffer (uiw_mbuf_over()): gives back
 *  the frame's reference on that mbuf, @p opaque. */
void uiw_mbuf_over_done(void *addr, void *opaque);

/** Whether @p m is a frame over a pool mbuf's buffer (uiw_mbuf_over()). */
static inline bool uiw_mbuf_is_over(const struct rte_mbuf *m)
{
	return RTE_MBUF_HAS_EXTBUF(m) && m->shinfo->free_cb == uiw_mbuf_over_done;
}

/** Whether a segment of the chain @p m refers to lent memory: an external buffer other
 *  than a pool mbuf's (uiw_mbuf_over(), which holds that mbuf while it lives). */
static inline bool uiw_mbuf_has_lent(const struct rte_mbuf *m)
{
	for (; m != NULL; m = m->next)
		if (RTE_MBUF_HAS_EXTBUF(m) && !uiw_mbuf_is_over(m))
			return true;
	return false;
}

/** Whether uiw_mbuf_over() may build a frame of @p hlen octets of headers so far, and
 *  @p below more to come in front of them, over @p m: a pool mbuf of its own buffer that
 *  nothing else refers to (so no other frame is over it: its headroom is free). */
static inline bool uiw_mbuf_over_ok(const struct rte_mbuf *m, uint16_t hlen, uint16_t below)
{
	return RTE_MBUF_DIRECT(m) && rte_mbuf_refcnt_read(m) == 1 &&
	       rte_pktmbuf_headroom(m) >= (uint32_t)hlen + below;
}

/**
 * Makes @p f, a pool mbuf of one segment holding only headers (its @c data_len octets),
 * a frame of those headers and the data of @p m, without copying the data: the headers
 * are moved into @p m's headroom in front of its data, and @p f is attached to @p m's
 * buffer as an external buffer. The frame holds a reference on @p m until it is freed, so
 * the send queue may let @p m go (acknowledged) while a PMD still has the frame.
 *
 * The shared info lives in @p f's own buffer, unused while @p f is attached, with a count
 * of 1: DPDK's free then takes no atomic operation, and its callback gives the reference
 * back by a plain store. So the frame must be freed in the thread that owns @p m: by a PMD
 * that frees each frame inside tx_burst (uiw_port.tx_ext, uiw_port.tx_over), or by the
 * stack.
 * Requires uiw_mbuf_over_ok(@p m, @p f's data_len, the headers to come).
 */
static inline void uiw_mbuf_over(struct rte_mbuf *f, struct rte_mbuf *m)
{
	uint16_t hlen = f->data_len;
	char *own = (char *)rte_mbuf_buf_addr(f, f->pool);
	/* In the headroom's second line, where the headers of a frame built in @p f would
	 * have gone: a line the pool's last use of @p f most likely left in this cache. */
	struct rte_mbuf_ext_shared_info *si =
		(struct rte_mbuf_ext_shared_info *)(own + RTE_CACHE_LINE_SIZE);
	uint16_t off = (uint16_t)(m->data_off - hlen);

	memcpy((char *)m->buf_addr + off, own + f->data_off, hlen);
	si->free_cb = uiw_mbuf_over_done;
	si->fcb_opaque = m;
	rte_mbuf_ext_refcnt_set(si, 1);
	rte_pktmbuf_attach_extbuf(f, m->buf_addr, rte_mbuf_iova_get(m), m->buf_len, si);
	f->data_off = off;
	f->data_len = (uint16_t)(hlen + m->data_len);
	f->pkt_len = f->data_len;
	rte_mbuf_refcnt_set(m, 2);
}

/** Shortens the chain @p m to its first @p len octets (at most its length). */
static inline void uiw_mbuf_trim_to(struct rte_mbuf *m, uint32_t len)
{
	uint32_t before = 0;
	uint16_t nsegs = 0;

	for (struct rte_mbuf *seg = m; seg != NULL; seg = seg->next) {
		nsegs++;
		if (before + seg->data_len >= len) {
			seg->data_len = (uint16_t)(len - before);
			if (seg->next != NULL) {
				rte_pktmbuf_free(seg->next);
				seg->next = NULL;
			}
			break;
		}
		before += seg->data_len;
	}
	m->nb_segs = nsegs;
	m->pkt_len = len;
}

/**
 * Removes the first @p n octets (at most the chain's length) of @p m. Segments emptied
 * before the last are freed; the last stays, empty when all was cut.
 * @return the new head of the chain, never NULL.
 */
static inline struct rte_mbuf *uiw_mbuf_cut_front(struct rte_mbuf *m, uint32_t n)
{
	while (n > 0 && n >= m->data_len && m->next != NULL) {
		struct rte_mbuf *next = m->next;

		next->nb_segs = (uint16_t)(m->nb_segs - 1);
		next->pkt_len = m->pkt_len - m->data_len;
		n -= m->data_len;
		m->next = NULL;
		rte_pktmbuf_free_seg(m);
		m = next;
	}
	rte_pktmbuf_adj(m, (uint16_t)n);
	return m;
}

#endif
