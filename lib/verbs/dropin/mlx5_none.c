/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A compatibility libmlx5.so.1: Debian's perftest links the Mellanox direct-verbs library
 * and imports these calls. uiwarp devices are not Mellanox devices, so each one fails
 * cleanly (EOPNOTSUPP) and perftest stays on the standard verbs path.
 */
#include <errno.h>

#include <infiniband/mlx5dv.h>

static void *none(void)
{
	errno = EOPNOTSUPP;
	return NULL;
}

struct ibv_qp *mlx5dv_create_qp(struct ibv_context *context, struct ibv_qp_init_attr_ex *qp_attr,
				struct mlx5dv_qp_init_attr *mlx5_qp_attr)
{
	(void)context, (void)qp_attr, (void)mlx5_qp_attr;
	return none();
}

struct ibv_context *mlx5dv_open_device(struct ibv_device *device, struct mlx5dv_context_attr *attr)
{
	(void)device, (void)attr;
	return none();
}

int mlx5dv_devx_general_cmd(struct ibv_context *context, const void *in, size_t inlen, void *out,
			    size_t outlen)
{
	(void)context, (void)in, (void)inlen, (void)out, (void)outlen;
	return EOPNOTSUPP;
}

struct mlx5dv_mkey *mlx5dv_create_mkey(struct mlx5dv_mkey_init_attr *mkey_init_attr)
{
	(void)mkey_init_attr;
	return none();
}

int mlx5dv_destroy_mkey(struct mlx5dv_mkey *mkey)
{
	(void)mkey;
	return EOPNOTSUPP;
}

struct mlx5dv_qp_ex *mlx5dv_qp_ex_from_ibv_qp_ex(struct ibv_qp_ex *qp)
{
	(void)qp;
	return none();
}

int mlx5dv_crypto_login(struct ibv_context *context, struct mlx5dv_crypto_login_attr *login_attr)
{
	(void)context, (void)login_attr;
	return EOPNOTSUPP;
}

struct mlx5dv_dek *mlx5dv_dek_create(struct ibv_context *context, struct mlx5dv_dek_init_attr *init_attr)
{
	(void)context, (void)init_attr;
	return none();
}

int mlx5dv_dek_destroy(struct mlx5dv_dek *dek)
{
	(void)dek;
	return EOPNOTSUPP;
}
