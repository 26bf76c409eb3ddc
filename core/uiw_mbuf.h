/* SPDX-License-Identifier: BSD-3-Clause */
/** @file Cutting mbuf chains from either end, freeing the segments emptied. */
#ifndef UIW_MBUF_H
#define UIW_MBUF_H

#include <stdint.h>

#include <rte_mbuf.h>

/** Shortens the chain @p m to its first @p len octets (at most its length). */
void uiw_mbuf_trim_to(struct rte_mbuf *m, uint32_t len);

/**
 * Removes the first @p n octets (at most the chain's length) of @p m. Segments emptied
 * before the last are freed; the last stays, empty when all was cut.
 * @return the new head of the chain, never NULL.
 */
struct rte_mbuf *uiw_mbuf_cut_front(struct rte_mbuf *m, uint32_t n);

#endif
