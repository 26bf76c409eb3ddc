/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A compatibility libmlx4.so.1: the EAL's mlx4 plugin imports these two calls, and the EAL
 * loads every plugin at start-up with immediate binding. Never reached (no Mellanox device
 * is ever probed under uiwarp); each fails with EOPNOTSUPP.
 */
#include <errno.h>

int mlx4dv_init_obj(void *obj, unsigned long obj_type);
int mlx4dv_set_context_attr(void *context, int attr_type, void *attr);

int mlx4dv_init_obj(void *obj, unsigned long obj_type)
{
	(void)obj, (void)obj_type;
	return EOPNOTSUPP;
}

int mlx4dv_set_context_attr(void *context, int attr_type, void *attr)
{
	(void)context, (void)attr_type, (void)attr;
	return EOPNOTSUPP;
}
