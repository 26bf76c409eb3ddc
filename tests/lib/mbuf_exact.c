/* SPDX-License-Identifier: BSD-3-Clause */
#include "mbuf_exact.h"

#include <stdlib.h>
#include <string.h>

static void ext_free(void *addr, void *opaque)
{
	free(addr);
	free(opaque);
}

struct rte_mbuf *mbuf_exact(struct rte_mempool *pool, const void *bytes, size_t len)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(pool);
	struct rte_mbuf_ext_shared_info *sh = calloc(1, sizeof(*sh));
	void *buf = malloc(len == 0 ? 1 : len);

	if (m == NULL || sh == NULL || buf == NULL) {
		rte_pktmbuf_free(m);
		free(sh);
		free(buf);
		return NULL;
	}
	if (len > 0)
		memcpy(buf, bytes, len);
	sh->free_cb = ext_free;
	sh->fcb_opaque = sh;
	rte_mbuf_ext_refcnt_set(sh, 1);
	rte_pktmbuf_attach_extbuf(m, buf, 0, (uint16_t)len, sh);
	m->data_len = (uint16_t)len;
	m->pkt_len = (uint32_t)len;
	return m;
}
