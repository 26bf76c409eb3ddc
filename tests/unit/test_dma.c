/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The IOMMU mappings of registered regions (core/uiw_dma.c), with the IOMMU replaced by a
 * record of what was mapped: regions that share pages share a run, a run leaves only with
 * the last region or frame over it, pages held only by a deregistered region's frames are
 * not mapped again, and a refused mapping leaves nothing behind.
 */
#include <stdlib.h>

#include "check_common.h"
#include "uiw_dma.h"

#define PAGE 4096u

static uint8_t *mem;
static unsigned maps, unmaps, fail_after;
static uintptr_t last_lo, last_hi;
static uintptr_t mapped[64][2];
static unsigned nmapped;

static int fake_map(uintptr_t lo, uintptr_t hi)
{
	if (fail_after != 0 && maps + 1 >= fail_after)
		return -1;
	maps++;
	last_lo = lo;
	last_hi = hi;
	mapped[nmapped][0] = lo;
	mapped[nmapped++][1] = hi;
	return 0;
}

static void fake_unmap(uintptr_t lo, uintptr_t hi)
{
	unmaps++;
	for (unsigned i = 0; i < nmapped; i++) {
		if (mapped[i][0] == lo && mapped[i][1] == hi) {
			mapped[i][0] = mapped[--nmapped][0];
			mapped[i][1] = mapped[nmapped][1];
			return;
		}
	}
	ck_abort_msg("unmapped %#lx-%#lx, which was never mapped as one run", (unsigned long)lo,
		     (unsigned long)hi);
}

static uintptr_t pg(unsigned i)
{
	return (uintptr_t)mem + (uintptr_t)i * PAGE;
}

static void setup(void)
{
	mem = aligned_alloc(PAGE, 8 * PAGE);
	ck_assert_ptr_nonnull(mem);
	maps = unmaps = fail_after = nmapped = 0;
	uiw_dma_set_iommu(fake_map, fake_unmap);
}

static void teardown(void)
{
	uiw_dma_set_iommu(NULL, NULL);
	free(mem);
}

START_TEST(shared_pages_share_a_run)
{
	/* Pages 0-1 for the first, then 1-3: page 1 is in the first's run, 2-3 a new one. */
	struct rte_mbuf_ext_shared_info *a = uiw_dma_map(mem + 100, PAGE + 200);
	ck_assert_ptr_nonnull(a);
	ck_assert_uint_eq(maps, 1);
	ck_assert_uint_eq(last_lo, pg(0));
	ck_assert_uint_eq(last_hi, pg(2));

	struct rte_mbuf_ext_shared_info *b = uiw_dma_map(mem + PAGE + 10, 3 * PAGE - 20);
	ck_assert_ptr_nonnull(b);
	ck_assert_uint_eq(maps, 2);
	ck_assert_uint_eq(last_lo, pg(2));
	ck_assert_uint_eq(last_hi, pg(4));
	ck_assert_uint_eq(uiw_dma_runs(), 2);

	/* Inside both: maps nothing. */
	struct rte_mbuf_ext_shared_info *c = uiw_dma_map(mem + PAGE, 2 * PAGE);
	ck_assert_ptr_nonnull(c);
	ck_assert_uint_eq(maps, 2);

	uiw_dma_unmap(a);
	ck_assert_uint_eq(unmaps, 0);   /* page 1 is still b's and c's */
	uiw_dma_unmap(b);
	ck_assert_uint_eq(unmaps, 0);   /* c lies over both runs */
	uiw_dma_unmap(c);
	ck_assert_uint_eq(unmaps, 2);
	ck_assert_uint_eq(uiw_dma_runs(), 0);
	ck_assert_uint_eq(nmapped, 0);
}
END_TEST

START_TEST(frames_keep_the_pages)
{
	struct rte_mbuf_ext_shared_info *a = uiw_dma_map(mem, 2 * PAGE);

	ck_assert_ptr_nonnull(a);
	rte_mbuf_ext_refcnt_update(a, 2);   /* two frames with the NIC */
	uiw_dma_unmap(a);
	ck_assert_uint_eq(unmaps, 0);
	/* The application may have freed the memory and been given it again: not mapped. */
	ck_assert_ptr_null(uiw_dma_map(mem + PAGE, 16));
	ck_assert_uint_eq(rte_mbuf_ext_refcnt_update(a, -1), 1);
	ck_assert_uint_eq(unmaps, 0);
	/* The NIC frees the last frame (rte_pktmbuf_free calls the callback at 0). */
	ck_assert_uint_eq(rte_mbuf_ext_refcnt_update(a, -1), 0);
	a->free_cb(NULL, a->fcb_opaque);
	ck_assert_uint_eq(unmaps, 1);
	ck_assert_uint_eq(uiw_dma_runs(), 0);

	struct rte_mbuf_ext_shared_info *b = uiw_dma_map(mem + PAGE, 16);

	ck_assert_ptr_nonnull(b);
	uiw_dma_unmap(b);
	ck_assert_uint_eq(nmapped, 0);
}
END_TEST

START_TEST(refused_mapping_leaves_nothing)
{
	struct rte_mbuf_ext_shared_info *a = uiw_dma_map(mem + 2 * PAGE, PAGE);

	ck_assert_ptr_nonnull(a);
	/* Pages 0-4: the gap 0-1 maps, the gap 3-4 is refused; 0-1 goes again, a stays. */
	fail_after = 3;
	ck_assert_ptr_null(uiw_dma_map(mem, 5 * PAGE));
	ck_assert_uint_eq(maps, 2);
	ck_assert_uint_eq(unmaps, 1);
	ck_assert_uint_eq(uiw_dma_runs(), 1);
	fail_after = 0;
	uiw_dma_unmap(a);
	ck_assert_uint_eq(uiw_dma_runs(), 0);
	ck_assert_uint_eq(nmapped, 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("dma");
	TCase *tc = tcase_create("runs");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, shared_pages_share_a_run);
	tcase_add_test(tc, frames_keep_the_pages);
	tcase_add_test(tc, refused_mapping_leaves_nothing);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
