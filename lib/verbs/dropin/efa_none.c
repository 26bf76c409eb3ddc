/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A compatibility libefa.so.1: Debian's perftest and libfabric link the EFA direct-verbs
 * library and import these calls; uiwarp devices are not EFA devices, so each one fails
 * cleanly.
 */
#include <errno.h>

#include <infiniband/efadv.h>

struct ibv_qp *efadv_create_qp_ex(struct ibv_context *ibvctx, struct ibv_qp_init_attr_ex *attr_ex,
				  struct efadv_qp_init_attr *efa_attr, uint32_t inlen)
{
	(void)ibvctx, (void)attr_ex, (void)efa_attr, (void)inlen;
	errno = EOPNOTSUPP;
	return NULL;
}

int efadv_query_device(struct ibv_context *ibvctx, struct efadv_device_attr *attr, uint32_t inlen)
{
	(void)ibvctx, (void)attr, (void)inlen;
	return EOPNOTSUPP;
}

int efadv_query_ah(struct ibv_ah *ibvah, struct efadv_ah_attr *attr, uint32_t inlen)
{
	(void)ibvah, (void)attr, (void)inlen;
	return EOPNOTSUPP;
}

struct ibv_cq_ex *efadv_create_cq(struct ibv_context *ibvctx, struct ibv_cq_init_attr_ex *attr_ex,
				  struct efadv_cq_init_attr *efa_attr, uint32_t inlen)
{
	(void)ibvctx, (void)attr_ex, (void)efa_attr, (void)inlen;
	errno = EOPNOTSUPP;
	return NULL;
}

struct efadv_cq *efadv_cq_from_ibv_cq_ex(struct ibv_cq_ex *ibvcqx)
{
	(void)ibvcqx;
	return NULL;
}
