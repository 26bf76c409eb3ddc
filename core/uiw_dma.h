/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Registered memory a PCI NIC may read: the pages of a memory region mapped into the
 * IOMMU (vfio's container, IOVA = the address), so that frames handed to the PMD may point
 * into the region itself instead of a copy (tx_zero_copy on a NIC, docs/CONFIG.md).
 *
 * A region's mapping has a count, held once by the region and once by every frame in the
 * PMD's hands that points into it. Deregistering the region drops its own; the pages leave
 * the IOMMU when the last frame is freed as well, so a NIC never reads through a mapping
 * that is gone. Regions may share pages: the pages are mapped in disjoint runs, each
 * counted by the regions over it.
 */
#ifndef UIW_DMA_H
#define UIW_DMA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rte_mbuf.h>

/** Whether this process's NIC reads memory through vfio with IOVA as the address: then
 *  uiw_dma_map() can map a region. */
bool uiw_dma_usable(void);

/**
 * Maps the pages under [@p addr, @p addr + @p len) for DMA. @return the mapping's count
 * (1, the region's), or NULL (not mapped: the region's frames are then copied): vfio
 * refused, or a run of those pages is still held only by frames of a deregistered region
 * (their memory may since have been freed and given out again).
 */
struct rte_mbuf_ext_shared_info *uiw_dma_map(void *addr, size_t len);

/** The region of @p hold is deregistered: drops its count (the pages go with the last
 *  frame's). */
void uiw_dma_unmap(struct rte_mbuf_ext_shared_info *hold);

/** Runs of pages mapped now. */
unsigned uiw_dma_runs(void);

/** For tests: what maps a run [@p lo, @p hi) into the IOMMU (0 or -1) and unmaps it;
 *  NULL, NULL: vfio's container, as by default. */
typedef int (*uiw_dma_map_fn)(uintptr_t lo, uintptr_t hi);
typedef void (*uiw_dma_unmap_fn)(uintptr_t lo, uintptr_t hi);
void uiw_dma_set_iommu(uiw_dma_map_fn map, uiw_dma_unmap_fn unmap);

#endif
