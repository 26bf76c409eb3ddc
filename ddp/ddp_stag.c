/* SPDX-License-Identifier: BSD-3-Clause */
/* The STag table: RFC 5040 §5.2 (invalidation), RFC 5041 §7 and RFC 5042 §5 (checks). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ddp.h"
#include "uiw_siphash.h"

#define STAG_INDEX_MAX 0xffffffu

int uiw_stag_table_init(struct uiw_stag_table *t, uint32_t cap)
{
	uint32_t n = 1;

	memset(t, 0, sizeof(*t));
	while (n < cap && n < (1u << 23))
		n <<= 1;
	t->mr = calloc(n, sizeof(*t->mr));
	if (t->mr == NULL)
		return -ENOMEM;
	t->cap = n;
	if (uiw_random_key(t->rnd) != 0)
		t->rnd[0] = (uint64_t)(uintptr_t)t ^ 0x9e3779b97f4a7c15ull;
	t->next = (uint32_t)t->rnd[0] & (n - 1);
	return 0;
}

void uiw_stag_table_fini(struct uiw_stag_table *t)
{
	free(t->mr);
	memset(t, 0, sizeof(*t));
}

/* The index of a slot: the slot number in the low bits, unpredictable high bits (RFC 5042
 * §5.1 asks that STags not be guessable), never 0. */
static uint32_t make_index(struct uiw_stag_table *t, uint32_t slot)
{
	uint32_t span = (STAG_INDEX_MAX + 1) / t->cap;
	uint64_t in[2] = { slot, t->rnd[1]++ };
	uint32_t hi = (uint32_t)(uiw_siphash(t->rnd, in, sizeof(in)) % span);
	uint32_t index = hi * t->cap + slot;

	return index == 0 ? t->cap : index;   /* slot 0 with hi 0: use hi 1 */
}

uint8_t uiw_stag_random_key(struct uiw_stag_table *t)
{
	uint64_t in[2] = { 0x6b6579u, t->rnd[1]++ };

	return (uint8_t)uiw_siphash(t->rnd, in, sizeof(in));
}

struct uiw_mr *uiw_stag_register(struct uiw_stag_table *t, uint32_t pd, void *addr, uint64_t len,
				 uint64_t va, unsigned access, uint8_t key)
{
	for (uint32_t i = 0; i < t->cap; i++) {
		uint32_t slot = (t->next + i) & (t->cap - 1);
		struct uiw_mr *mr = &t->mr[slot];

		if (mr->used)
			continue;
		*mr = (struct uiw_mr){ .stag = make_index(t, slot) << 8 | key, .pd = pd, .va = va,
				       .len = len, .addr = addr, .access = access, .valid = true,
				       .used = true };
		t->next = (slot + 1) & (t->cap - 1);
		t->count++;
		return mr;
	}
	return NULL;
}

void uiw_stag_deregister(struct uiw_stag_table *t, struct uiw_mr *mr)
{
	if (mr == NULL || !mr->used)
		return;
	memset(mr, 0, sizeof(*mr));
	t->count--;
}

enum uiw_stag_check uiw_stag_check(const struct uiw_stag_table *t, uint32_t stag, uint32_t pd,
				   uint64_t to, uint64_t len, unsigned access, struct uiw_mr **out)
{
	struct uiw_mr *mr = uiw_stag_find(t, stag);

	if (mr == NULL || !mr->valid)
		return UIW_STAG_INVALID;
	if (mr->pd != pd)
		return UIW_STAG_PD;
	if ((mr->access & access) != access)
		return UIW_STAG_ACCESS;
	if (to + len < to)
		return UIW_STAG_WRAP;
	if (to < mr->va || to + len > mr->va + mr->len)
		return UIW_STAG_BOUNDS;
	*out = mr;
	return UIW_STAG_OK;
}

int uiw_stag_invalidate(struct uiw_stag_table *t, uint32_t stag, uint32_t pd)
{
	struct uiw_mr *mr = uiw_stag_find(t, stag);

	if (mr == NULL || !mr->valid)
		return -ENOENT;
	if (mr->pd != pd)
		return -EACCES;   /* RFC 5040 §5.2: only within the same PD */
	mr->valid = false;
	return 0;
}
