/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The rest of libmlx5.so.1 that the EAL's mlx5 plugins import. The EAL loads every plugin
 * at start-up and the plugins are linked with immediate binding, so these must exist; they
 * are never reached (no Mellanox device is ever probed under uiwarp). Each fails: 0 (a NULL
 * object) with errno EOPNOTSUPP.
 */
#include <errno.h>

#define NONE(name)                                                                           \
	long name(void);                                                                     \
	long name(void)                                                                      \
	{                                                                                    \
		errno = EOPNOTSUPP;                                                          \
		return 0;                                                                    \
	}

NONE(_mlx5dv_query_port)
NONE(mlx5dv_alloc_var)
NONE(mlx5dv_create_cq)
NONE(mlx5dv_create_flow)
NONE(mlx5dv_create_flow_action_modify_header)
NONE(mlx5dv_create_flow_action_packet_reformat)
NONE(mlx5dv_create_flow_matcher)
NONE(mlx5dv_create_wq)
NONE(mlx5dv_destroy_flow_matcher)
NONE(mlx5dv_devx_alloc_uar)
NONE(mlx5dv_devx_create_cmd_comp)
NONE(mlx5dv_devx_create_event_channel)
NONE(mlx5dv_devx_destroy_cmd_comp)
NONE(mlx5dv_devx_destroy_event_channel)
NONE(mlx5dv_devx_free_uar)
NONE(mlx5dv_devx_get_async_cmd_comp)
NONE(mlx5dv_devx_get_event)
NONE(mlx5dv_devx_obj_create)
NONE(mlx5dv_devx_obj_destroy)
NONE(mlx5dv_devx_obj_modify)
NONE(mlx5dv_devx_obj_query)
NONE(mlx5dv_devx_obj_query_async)
NONE(mlx5dv_devx_qp_query)
NONE(mlx5dv_devx_query_eqn)
NONE(mlx5dv_devx_subscribe_devx_event)
NONE(mlx5dv_devx_subscribe_devx_event_fd)
NONE(mlx5dv_devx_umem_dereg)
NONE(mlx5dv_devx_umem_reg)
NONE(mlx5dv_devx_wq_query)
NONE(mlx5dv_dr_action_create_aso)
NONE(mlx5dv_dr_action_create_default_miss)
NONE(mlx5dv_dr_action_create_dest_array)
NONE(mlx5dv_dr_action_create_dest_devx_tir)
NONE(mlx5dv_dr_action_create_dest_ib_port)
NONE(mlx5dv_dr_action_create_dest_ibv_qp)
NONE(mlx5dv_dr_action_create_dest_root_table)
NONE(mlx5dv_dr_action_create_dest_table)
NONE(mlx5dv_dr_action_create_drop)
NONE(mlx5dv_dr_action_create_flow_counter)
NONE(mlx5dv_dr_action_create_flow_meter)
NONE(mlx5dv_dr_action_create_flow_sampler)
NONE(mlx5dv_dr_action_create_modify_header)
NONE(mlx5dv_dr_action_create_packet_reformat)
NONE(mlx5dv_dr_action_create_pop_vlan)
NONE(mlx5dv_dr_action_create_push_vlan)
NONE(mlx5dv_dr_action_create_tag)
NONE(mlx5dv_dr_action_destroy)
NONE(mlx5dv_dr_action_modify_flow_meter)
NONE(mlx5dv_dr_domain_allow_duplicate_rules)
NONE(mlx5dv_dr_domain_create)
NONE(mlx5dv_dr_domain_destroy)
NONE(mlx5dv_dr_domain_set_reclaim_device_memory)
NONE(mlx5dv_dr_domain_sync)
NONE(mlx5dv_dr_matcher_create)
NONE(mlx5dv_dr_matcher_destroy)
NONE(mlx5dv_dr_rule_create)
NONE(mlx5dv_dr_rule_destroy)
NONE(mlx5dv_dr_table_create)
NONE(mlx5dv_dr_table_destroy)
NONE(mlx5dv_dump_dr_domain)
NONE(mlx5dv_dump_dr_rule)
NONE(mlx5dv_free_var)
NONE(mlx5dv_init_obj)
NONE(mlx5dv_pp_alloc)
NONE(mlx5dv_pp_free)
NONE(mlx5dv_query_device)
NONE(mlx5dv_set_context_attr)
