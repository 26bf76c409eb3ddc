/* SPDX-License-Identifier: BSD-3-Clause */
#include "uiw_dma.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_vfio.h>

#include "uiw_log.h"

#define DMA_PAGE 4096u

/* A run of pages mapped as one: @c refs regions (live or deregistered, until their last
 * frame is freed) lie over it, @c live of them not yet deregistered. */
struct dma_run {
	uintptr_t lo, hi;
	unsigned refs, live;
};

/* The mapping of one region: its count and the pages it covers. */
struct dma_hold {
	struct rte_mbuf_ext_shared_info info;
	uintptr_t lo, hi;
};

/* Runs sorted by address, disjoint. Touched when regions come and go, and when the last
 * frame of a deregistered region is freed (a PMD's thread). */
static pthread_mutex_t dma_lock = PTHREAD_MUTEX_INITIALIZER;
static struct dma_run *runs;
static unsigned nruns, cap_runs, warned;

bool uiw_dma_usable(void)
{
	return rte_eal_iova_mode() == RTE_IOVA_VA && rte_vfio_is_enabled("vfio");
}

unsigned uiw_dma_runs(void)
{
	pthread_mutex_lock(&dma_lock);
	unsigned n = nruns;
	pthread_mutex_unlock(&dma_lock);
	return n;
}

static bool runs_insert(unsigned at, uintptr_t lo, uintptr_t hi)
{
	if (nruns == cap_runs) {
		unsigned cap = cap_runs ? 2 * cap_runs : 16;
		struct dma_run *r = realloc(runs, cap * sizeof(*r));

		if (r == NULL)
			return false;
		runs = r;
		cap_runs = cap;
	}
	memmove(&runs[at + 1], &runs[at], (nruns - at) * sizeof(*runs));
	runs[at] = (struct dma_run){ .lo = lo, .hi = hi };
	nruns++;
	return true;
}

static void runs_remove(unsigned at)
{
	memmove(&runs[at], &runs[at + 1], (nruns - at - 1) * sizeof(*runs));
	nruns--;
}

/* The first run that ends after @p lo. */
static unsigned runs_from(uintptr_t lo)
{
	unsigned a = 0, b = nruns;

	while (a < b) {
		unsigned m = (a + b) / 2;

		if (runs[m].hi <= lo)
			a = m + 1;
		else
			b = m;
	}
	return a;
}

static int vfio_map_run(uintptr_t lo, uintptr_t hi)
{
	return rte_vfio_container_dma_map(RTE_VFIO_DEFAULT_CONTAINER_FD, lo, lo, hi - lo);
}

static void vfio_unmap_run(uintptr_t lo, uintptr_t hi)
{
	if (rte_vfio_container_dma_unmap(RTE_VFIO_DEFAULT_CONTAINER_FD, lo, lo, hi - lo) != 0)
		UIW_WARN("DMA: cannot unmap %#lx-%#lx from the IOMMU: %s", (unsigned long)lo,
			 (unsigned long)hi, rte_strerror(rte_errno));
}

static uiw_dma_map_fn vfio_map = vfio_map_run;
static uiw_dma_unmap_fn vfio_unmap = vfio_unmap_run;

void uiw_dma_set_iommu(uiw_dma_map_fn map, uiw_dma_unmap_fn unmap)
{
	vfio_map = map != NULL ? map : vfio_map_run;
	vfio_unmap = unmap != NULL ? unmap : vfio_unmap_run;
}

/* Drops one region's count from the runs over [lo, hi); a run nobody counts leaves the
 * IOMMU. Called with the lock held. */
static void runs_put(uintptr_t lo, uintptr_t hi)
{
	for (unsigned i = runs_from(lo); i < nruns && runs[i].lo < hi;) {
		if (--runs[i].refs == 0) {
			vfio_unmap(runs[i].lo, runs[i].hi);
			runs_remove(i);
		} else {
			i++;
		}
	}
}

/* The last frame of a deregistered region was freed (or its registration gave up). */
static void hold_free(void *addr, void *opaque)
{
	struct dma_hold *h = opaque;

	(void)addr;
	pthread_mutex_lock(&dma_lock);
	runs_put(h->lo, h->hi);
	pthread_mutex_unlock(&dma_lock);
	free(h);
}

struct rte_mbuf_ext_shared_info *uiw_dma_map(void *addr, size_t len)
{
	uintptr_t lo = (uintptr_t)addr & ~(uintptr_t)(DMA_PAGE - 1);
	uintptr_t hi = ((uintptr_t)addr + len + DMA_PAGE - 1) & ~(uintptr_t)(DMA_PAGE - 1);
	struct dma_hold *h;
	unsigned i;

	if (len == 0 || hi <= lo || (h = calloc(1, sizeof(*h))) == NULL)
		return NULL;
	h->lo = lo;
	h->hi = hi;
	pthread_mutex_lock(&dma_lock);
	for (i = runs_from(lo); i < nruns && runs[i].lo < hi; i++) {
		if (runs[i].live == 0) {
			pthread_mutex_unlock(&dma_lock);
			UIW_INFO("DMA: a region at %p is copied, not sent from: frames of a "
				 "deregistered region on its pages are still with the NIC", addr);
			free(h);
			return NULL;
		}
	}
	/* The gaps between the runs over [lo, hi) become runs of their own. */
	uintptr_t at = lo;

	for (i = runs_from(lo); at < hi; i++) {
		uintptr_t end = i < nruns && runs[i].lo < hi ? runs[i].lo : hi;

		if (end > at) {
			bool kept = vfio_map(at, end) == 0;

			if (kept && !runs_insert(i, at, end)) {
				vfio_unmap(at, end);   /* no memory to keep it in: not mapped */
				kept = false;
			}
			if (!kept) {
				/* vfio says EINVAL (the EAL logs it) for an address beyond the
				 * IOMMU's width: 39 bits on many, where a heap's are 47. */
				UIW_LOG(warned++ == 0 ? UIW_LOG_WARN : UIW_LOG_DEBUG,
					"DMA: cannot map %#lx-%#lx into the IOMMU (see the EAL's "
					"error above%s): the region at %p is copied, not sent from "
					"(said once; later ones at log=debug)",
					(unsigned long)at, (unsigned long)end,
					end > (1ul << 39) ? "; an IOMMU of 39-bit addresses cannot "
					"take this one: one of 48 bits can (QEMU: intel-iommu,aw-bits=48)"
					: "", addr);
				/* The runs this call made are counted by nobody yet: give them
				 * back with the lock held, and count no other. */
				for (unsigned j = runs_from(lo); j < nruns && runs[j].lo < at;) {
					if (runs[j].refs == 0) {
						vfio_unmap(runs[j].lo, runs[j].hi);
						runs_remove(j);
					} else {
						j++;
					}
				}
				pthread_mutex_unlock(&dma_lock);
				free(h);
				return NULL;
			}
			i++;   /* past the run just made */
		}
		if (i >= nruns || runs[i].lo >= hi)
			break;
		at = runs[i].hi;
	}
	for (i = runs_from(lo); i < nruns && runs[i].lo < hi; i++) {
		runs[i].refs++;
		runs[i].live++;
	}
	pthread_mutex_unlock(&dma_lock);
	h->info.free_cb = hold_free;
	h->info.fcb_opaque = h;
	rte_mbuf_ext_refcnt_set(&h->info, 1);
	return &h->info;
}

void uiw_dma_unmap(struct rte_mbuf_ext_shared_info *hold)
{
	struct dma_hold *h = hold->fcb_opaque;

	pthread_mutex_lock(&dma_lock);
	for (unsigned i = runs_from(h->lo); i < nruns && runs[i].lo < h->hi; i++)
		runs[i].live--;
	pthread_mutex_unlock(&dma_lock);
	if (rte_mbuf_ext_refcnt_update(hold, -1) == 0)
		hold_free(NULL, h);
}
