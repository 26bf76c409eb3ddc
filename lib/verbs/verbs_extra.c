/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The rest of libibverbs' public interface: GIDs and P_Keys as an iWARP device has them,
 * the string and rate helpers, and every call an RNIC over TCP has no use for (address
 * handles, multicast, imports, dma-buf, ECE), which fails cleanly. Programs are linked
 * with immediate binding, so each symbol they import must exist even if never called.
 */
#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "verbs_internal.h"

/* Declared by rdma-core's driver and marshalling headers, which are not installed. */
int ibv_read_sysfs_file(const char *dir, const char *file, char *buf, size_t size);
const char *ibv_get_sysfs_path(void);
int ibv_query_gid_type(struct ibv_context *context, uint8_t port_num, unsigned int index,
		       int *type);
void ibv_copy_ah_attr_from_kern(void *dst, const void *src);
void ibv_copy_qp_attr_from_kern(void *dst, const void *src);
void ibv_copy_path_rec_from_kern(void *dst, const void *src);
void ibv_copy_path_rec_to_kern(void *dst, const void *src);
int ibv_dontfork_range(void *base, size_t size);
int ibv_dofork_range(void *base, size_t size);

static void *fail_null(int err)
{
	errno = err;
	return NULL;
}

/* ---- GIDs and P_Keys: one GID, the port's MAC in its first six octets (as siw). ---- */

static int gid_of(struct ibv_context *context, uint8_t port_num, unsigned index, union ibv_gid *gid)
{
	struct uiw_dev *d = ctx_dev(context);

	if (port_num != 1 || index != 0)
		return EINVAL;
	memset(gid, 0, sizeof(*gid));
	memcpy(gid->raw, &d->stack->port.mac, 6);
	return 0;
}

int ibv_query_gid(struct ibv_context *context, uint8_t port_num, int index, union ibv_gid *gid)
{
	UIW_API_LOCK();

	return index < 0 ? -1 : gid_of(context, port_num, (unsigned)index, gid) == 0 ? 0 : -1;
}

int _ibv_query_gid_ex(struct ibv_context *context, uint32_t port_num, uint32_t gid_index,
		      struct ibv_gid_entry *entry, uint32_t flags, size_t entry_size)
{
	UIW_API_LOCK();

	if (flags != 0 || entry_size < sizeof(*entry) || port_num > 255)
		return EINVAL;
	memset(entry, 0, sizeof(*entry));
	entry->gid_index = gid_index;
	entry->port_num = port_num;
	entry->gid_type = IBV_GID_TYPE_IB;
	return gid_of(context, (uint8_t)port_num, gid_index, &entry->gid);
}

ssize_t _ibv_query_gid_table(struct ibv_context *context, struct ibv_gid_entry *entries,
			     size_t max_entries, uint32_t flags, size_t entry_size)
{
	UIW_API_LOCK();

	if (flags != 0 || entry_size < sizeof(*entries))
		return -EINVAL;
	if (max_entries == 0)
		return -ENOMEM;
	return _ibv_query_gid_ex(context, 1, 0, entries, 0, entry_size) == 0 ? 1 : -EINVAL;
}

int ibv_query_gid_type(struct ibv_context *context, uint8_t port_num, unsigned int index,
		       int *type)
{
	union ibv_gid g;
	UIW_API_LOCK();

	if (gid_of(context, port_num, index, &g) != 0)
		return -1;
	*type = 0;   /* the "IB/RoCE v1" kind: no RoCE v2 on an iWARP port */
	return 0;
}

int ibv_query_pkey(struct ibv_context *context, uint8_t port_num, int index, __be16 *pkey)
{
	(void)context;
	if (port_num != 1 || index != 0)
		return -1;
	*pkey = htobe16(0xffff);   /* iWARP has no partitions: the default key */
	return 0;
}

int ibv_get_pkey_index(struct ibv_context *context, uint8_t port_num, __be16 pkey)
{
	(void)context;
	return port_num == 1 && be16toh(pkey) == 0xffff ? 0 : -EINVAL;
}

int ibv_get_device_index(struct ibv_device *device)
{
	int n = -1;
	struct ibv_device **list = ibv_get_device_list(&n);

	for (int i = 0; list != NULL && i < n; i++)
		if (list[i] == device) {
			ibv_free_device_list(list);
			return i;
		}
	ibv_free_device_list(list);
	return -1;
}

/* ---- sysfs: there is none; ibv_devinfo asks for board_id and fw_ver. ---- */

const char *ibv_get_sysfs_path(void)
{
	return "/sys";
}

int ibv_read_sysfs_file(const char *dir, const char *file, char *buf, size_t size)
{
	const char *v = strcmp(file, "board_id") == 0 ? "UIWARP_SOFT_IWARP"
		      : strcmp(file, "fw_ver") == 0   ? "0.1.0"
		      : strcmp(file, "node_type") == 0 ? "4: RNIC"
							: NULL;
	int n;

	(void)dir;
	if (v == NULL || size == 0) {
		errno = ENOENT;
		return -1;
	}
	n = snprintf(buf, size, "%s", v);
	return n < (int)size ? n : (int)size - 1;
}

/* ---- Strings and rates. ---- */

const char *ibv_node_type_str(enum ibv_node_type node_type)
{
	static const char *const names[] = {
		[IBV_NODE_CA] = "InfiniBand channel adapter", [IBV_NODE_SWITCH] = "InfiniBand switch",
		[IBV_NODE_ROUTER] = "InfiniBand router", [IBV_NODE_RNIC] = "iWARP NIC",
		[IBV_NODE_USNIC] = "usNIC", [IBV_NODE_USNIC_UDP] = "usNIC UDP",
		[IBV_NODE_UNSPECIFIED] = "unspecified",
	};

	if ((unsigned)node_type < sizeof(names) / sizeof(names[0]) && names[node_type] != NULL)
		return names[node_type];
	return "unknown";
}

const char *ibv_port_state_str(enum ibv_port_state port_state)
{
	static const char *const names[] = {
		[IBV_PORT_NOP] = "no state change (NOP)", [IBV_PORT_DOWN] = "down",
		[IBV_PORT_INIT] = "init", [IBV_PORT_ARMED] = "armed", [IBV_PORT_ACTIVE] = "active",
		[IBV_PORT_ACTIVE_DEFER] = "active defer",
	};

	if ((unsigned)port_state < sizeof(names) / sizeof(names[0]) && names[port_state] != NULL)
		return names[port_state];
	return "unknown";
}

/* The static rates and their multiples of 2.5 Gb/s and Mb/s (verbs.h's enum order). */
static const struct {
	enum ibv_rate rate;
	int mult, mbps;
} rates[] = {
	{ IBV_RATE_2_5_GBPS, 1, 2500 },     { IBV_RATE_5_GBPS, 2, 5000 },
	{ IBV_RATE_10_GBPS, 4, 10000 },     { IBV_RATE_20_GBPS, 8, 20000 },
	{ IBV_RATE_30_GBPS, 12, 30000 },    { IBV_RATE_40_GBPS, 16, 40000 },
	{ IBV_RATE_60_GBPS, 24, 60000 },    { IBV_RATE_80_GBPS, 32, 80000 },
	{ IBV_RATE_120_GBPS, 48, 120000 },  { IBV_RATE_14_GBPS, 0, 14062 },
	{ IBV_RATE_56_GBPS, 0, 56250 },     { IBV_RATE_112_GBPS, 0, 112500 },
	{ IBV_RATE_168_GBPS, 0, 168750 },   { IBV_RATE_25_GBPS, 10, 25781 },
	{ IBV_RATE_100_GBPS, 40, 103125 },  { IBV_RATE_200_GBPS, 80, 206250 },
	{ IBV_RATE_300_GBPS, 120, 309375 }, { IBV_RATE_28_GBPS, 11, 28125 },
	{ IBV_RATE_50_GBPS, 20, 53125 },    { IBV_RATE_400_GBPS, 160, 425000 },
	{ IBV_RATE_600_GBPS, 240, 637500 },
};

int ibv_rate_to_mult(enum ibv_rate rate)
{
	for (size_t i = 0; i < sizeof(rates) / sizeof(rates[0]); i++)
		if (rates[i].rate == rate)
			return rates[i].mult > 0 ? rates[i].mult : -1;
	return -1;
}

enum ibv_rate mult_to_ibv_rate(int mult)
{
	for (size_t i = 0; i < sizeof(rates) / sizeof(rates[0]); i++)
		if (rates[i].mult == mult && mult > 0)
			return rates[i].rate;
	return IBV_RATE_MAX;
}

int ibv_rate_to_mbps(enum ibv_rate rate)
{
	for (size_t i = 0; i < sizeof(rates) / sizeof(rates[0]); i++)
		if (rates[i].rate == rate)
			return rates[i].mbps;
	return -1;
}

enum ibv_rate mbps_to_ibv_rate(int mbps)
{
	for (size_t i = 0; i < sizeof(rates) / sizeof(rates[0]); i++)
		if (rates[i].mbps == mbps)
			return rates[i].rate;
	return IBV_RATE_MAX;
}

/* ---- fork(): user-space memory is never pinned by a kernel here. ---- */

int ibv_fork_init(void)
{
	return 0;
}

enum ibv_fork_status ibv_is_fork_initialized(void)
{
	return IBV_FORK_UNNEEDED;
}

int ibv_dontfork_range(void *base, size_t size)
{
	(void)base;
	(void)size;
	return 0;
}

int ibv_dofork_range(void *base, size_t size)
{
	(void)base;
	(void)size;
	return 0;
}

/* ---- Memory registration variants. ---- */

struct ibv_mr *(ibv_reg_mr_iova)(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova,
				 int access)
{
	return ibv_reg_mr_iova2(pd, addr, length, iova, (unsigned)access);
}

int ibv_rereg_mr(struct ibv_mr *mr, int flags, struct ibv_pd *pd, void *addr, size_t length,
		 int access)
{
	(void)mr, (void)flags, (void)pd, (void)addr, (void)length, (void)access;
	return IBV_REREG_MR_ERR_INPUT;   /* deregister and register again */
}

struct ibv_mr *ibv_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t offset, size_t length,
				 uint64_t iova, int fd, int access)
{
	(void)pd, (void)offset, (void)length, (void)iova, (void)fd, (void)access;
	return fail_null(EOPNOTSUPP);
}

int ibv_resize_cq(struct ibv_cq *cq, int cqe)
{
	(void)cq, (void)cqe;
	return EOPNOTSUPP;
}

/* ---- What iWARP has no use for: address handles (no UD), multicast, imports, ECE. ---- */

struct ibv_ah *ibv_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr)
{
	(void)pd, (void)attr;
	return fail_null(EOPNOTSUPP);
}

int ibv_destroy_ah(struct ibv_ah *ah)
{
	(void)ah;
	return EOPNOTSUPP;
}

int ibv_init_ah_from_wc(struct ibv_context *context, uint8_t port_num, struct ibv_wc *wc,
			struct ibv_grh *grh, struct ibv_ah_attr *ah_attr)
{
	(void)context, (void)port_num, (void)wc, (void)grh, (void)ah_attr;
	return EOPNOTSUPP;
}

struct ibv_ah *ibv_create_ah_from_wc(struct ibv_pd *pd, struct ibv_wc *wc, struct ibv_grh *grh,
				     uint8_t port_num)
{
	(void)pd, (void)wc, (void)grh, (void)port_num;
	return fail_null(EOPNOTSUPP);
}

int ibv_resolve_eth_l2_from_gid(struct ibv_context *context, struct ibv_ah_attr *attr,
				uint8_t eth_mac[6], uint16_t *vid)
{
	(void)context, (void)attr, (void)eth_mac, (void)vid;
	return EOPNOTSUPP;
}

int ibv_attach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid)
{
	(void)qp, (void)gid, (void)lid;
	return EOPNOTSUPP;
}

int ibv_detach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid)
{
	(void)qp, (void)gid, (void)lid;
	return EOPNOTSUPP;
}

int ibv_query_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
	(void)qp, (void)ece;
	return EOPNOTSUPP;
}

int ibv_set_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
	(void)qp, (void)ece;
	return EOPNOTSUPP;
}

int ibv_query_qp_data_in_order(struct ibv_qp *qp, enum ibv_wr_opcode op, uint32_t flags)
{
	(void)qp, (void)op, (void)flags;
	return 0;   /* no promise beyond what RFC 5040 orders */
}

struct ibv_context *ibv_import_device(int cmd_fd)
{
	(void)cmd_fd;
	return fail_null(EOPNOTSUPP);
}

struct ibv_pd *ibv_import_pd(struct ibv_context *context, uint32_t pd_handle)
{
	(void)context, (void)pd_handle;
	return fail_null(EOPNOTSUPP);
}

void ibv_unimport_pd(struct ibv_pd *pd)
{
	(void)pd;
}

struct ibv_mr *ibv_import_mr(struct ibv_pd *pd, uint32_t mr_handle)
{
	(void)pd, (void)mr_handle;
	return fail_null(EOPNOTSUPP);
}

void ibv_unimport_mr(struct ibv_mr *mr)
{
	(void)mr;
}

struct ibv_dm *ibv_import_dm(struct ibv_context *context, uint32_t dm_handle)
{
	(void)context, (void)dm_handle;
	return fail_null(EOPNOTSUPP);
}

void ibv_unimport_dm(struct ibv_dm *dm)
{
	(void)dm;
}

/* Kernel ABI marshalling: there is no kernel interface to marshal for. */
void ibv_copy_ah_attr_from_kern(void *dst, const void *src)
{
	(void)dst, (void)src;
}

void ibv_copy_qp_attr_from_kern(void *dst, const void *src)
{
	(void)dst, (void)src;
}

void ibv_copy_path_rec_from_kern(void *dst, const void *src)
{
	(void)dst, (void)src;
}

void ibv_copy_path_rec_to_kern(void *dst, const void *src)
{
	(void)dst, (void)src;
}
