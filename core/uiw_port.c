/* SPDX-License-Identifier: BSD-3-Clause */
#include "uiw_port.h"
#include "uiw_pci.h"
#include "uiw_capture.h"
#include "uiw_lcore_id.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <rte_bus_vdev.h>
#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_eal_memconfig.h>
#include <rte_ethdev.h>
#include <rte_eth_ring.h>
#include <rte_eth_vhost.h>
#include <rte_ring.h>
#include <rte_thash.h>
#include <rte_vhost.h>

#include "uiw_dma.h"
#include "uiw_fault.h"
#include "uiw_log.h"
#include "uiw_mbuf.h"
#include "uiw_port_gate.h"
#include "uiw_time.h"

#define UIW_PORT_DESC_(name, help) { #name, help },
const struct uiw_counter_desc uiw_port_counter_desc[UIW_PORT_C__COUNT] = {
	UIW_PORT_COUNTERS(UIW_PORT_DESC_)
};
#undef UIW_PORT_DESC_

/* Frames a hugepage-backed EAL needs at the least before "auto" picks hugepages: 128 MiB. */
#define UIW_HUGE_MIN_FREE_2M 64

bool uiw_devargs_is_pci(const char *devargs)
{
	size_t n = strcspn(devargs, ",");
	unsigned colons = 0, dots = 0;

	/* DDDD:BB:DD.F or BB:DD.F: hex digits, one or two ':' and one '.'. */
	for (size_t i = 0; i < n; i++) {
		if (devargs[i] == ':')
			colons++;
		else if (devargs[i] == '.')
			dots++;
		else if (!isxdigit((unsigned char)devargs[i]))
			return false;
	}
	return n >= 7 && (colons == 1 || colons == 2) && dots == 1;
}

/* Free 2 MiB hugepages, when hugetlbfs is also mounted; 0 otherwise. */
static unsigned long hugepages_free(void)
{
	char line[256];
	unsigned long free_pages = 0;
	bool mounted = false;
	FILE *f;

	f = fopen("/proc/meminfo", "r");
	if (f == NULL)
		return 0;
	while (fgets(line, sizeof(line), f) != NULL)
		if (sscanf(line, "HugePages_Free: %lu", &free_pages) == 1)
			break;
	fclose(f);
	f = fopen("/proc/mounts", "r");
	if (f == NULL)
		return 0;
	while (fgets(line, sizeof(line), f) != NULL)
		if (strstr(line, " hugetlbfs ") != NULL)
			mounted = true;
	fclose(f);
	return mounted ? free_pages : 0;
}

/* The first CPU this thread may run on, as an EAL core list. */
static void default_lcores(char *buf, size_t len)
{
	cpu_set_t set;

	snprintf(buf, len, "0");
	if (sched_getaffinity(0, sizeof(set), &set) != 0)
		return;
	for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
		if (CPU_ISSET(cpu, &set)) {
			snprintf(buf, len, "%d", cpu);
			return;
		}
	}
}

static bool use_hugepages(const struct uiw_config *cfg)
{
	switch (cfg->hugepages) {
	case UIW_HUGE_ON:
		return true;
	case UIW_HUGE_OFF:
		return false;
	default:
		return hugepages_free() >= UIW_HUGE_MIN_FREE_2M;
	}
}

struct argbuf {
	char **argv;
	int argc, max;
	char *store;
	size_t used, len;
};

static int push(struct argbuf *ab, const char *s, size_t n)
{
	if (ab->argc + 1 >= ab->max || ab->used + n + 1 > ab->len)
		return -1;
	memcpy(ab->store + ab->used, s, n);
	ab->store[ab->used + n] = '\0';
	ab->argv[ab->argc++] = ab->store + ab->used;
	ab->argv[ab->argc] = NULL;
	ab->used += n + 1;
	return 0;
}

static int pushs(struct argbuf *ab, const char *s)
{
	return push(ab, s, strlen(s));
}

static bool memif_zc_asked(const struct uiw_config *cfg);

int uiw_eal_build_args(const struct uiw_config *cfg, const char *prog, char **argv,
		       int max_args, char *store, size_t store_len)
{
	struct argbuf ab = { argv, 0, max_args, store, 0, store_len };
	char lcores[64], mem[32];
	bool huge;
	int rc = 0;
	static const char *const eal_log[] = {
		[UIW_LOG_ERR] = "--log-level=error",
		[UIW_LOG_WARN] = "--log-level=warning",
		[UIW_LOG_INFO] = "--log-level=warning",
		[UIW_LOG_DEBUG] = "--log-level=info",
	};

	if (cfg->lcores[0] != '\0')
		snprintf(lcores, sizeof(lcores), "%s", cfg->lcores);
	else
		default_lcores(lcores, sizeof(lcores));
	rc |= pushs(&ab, prog);
	rc |= pushs(&ab, "-l");
	rc |= pushs(&ab, lcores);
	/* Without --no-pci the EAL probes every PCI NIC, eth0 included (DPDK.md pitfall 1). */
	if (uiw_devargs_is_pci(cfg->port)) {
		rc |= pushs(&ab, "-a");
		rc |= push(&ab, cfg->port, strcspn(cfg->port, ","));
	} else {
		rc |= pushs(&ab, "--no-pci");
	}
	rc |= pushs(&ab, "--no-telemetry");
	huge = use_hugepages(cfg);
	if (huge) {
		/* No files left in hugetlbfs or /var/run/dpdk, any number of processes. */
		rc |= pushs(&ab, "--in-memory");
		/* virtio-user needs its memory in few files (DPDK.md pitfall 4). */
		rc |= pushs(&ab, "--single-file-segments");
	} else {
		/* Anonymous memory; --no-shconf so processes need no distinct --file-prefix. */
		snprintf(mem, sizeof(mem), "%u", cfg->memory_mb);
		rc |= pushs(&ab, "--no-huge");
		rc |= pushs(&ab, "--no-shconf");
		rc |= pushs(&ab, "-m");
		rc |= pushs(&ab, mem);
		/* memif's zero-copy client shares the EAL's memory by its file (memif_args()). */
		if (memif_zc_asked(cfg))
			rc |= pushs(&ab, "--single-file-segments");
	}
	rc |= pushs(&ab, eal_log[cfg->log_level]);
	for (const char *p = cfg->eal_args; *p != '\0';) {
		size_t n;

		while (isspace((unsigned char)*p))
			p++;
		n = strcspn(p, " \t");
		if (n > 0)
			rc |= push(&ab, p, n);
		p += n;
	}
	return rc != 0 ? -1 : ab.argc;
}

int uiw_eal_init(const struct uiw_config *cfg, const char *prog)
{
	char *argv[64];
	char store[2048];
	int argc = uiw_eal_build_args(cfg, prog, argv, 64, store, sizeof(store));

	if (argc < 0) {
		UIW_ERR("EAL arguments do not fit (key 'eal' too long)");
		return -1;
	}
	if (uiw_log_level_get() >= UIW_LOG_DEBUG) {
		for (int i = 0; i < argc; i++)
			UIW_DEBUG("EAL argv[%d] = %s", i, argv[i]);
	}
	if (cfg->hugepages == UIW_HUGE_ON && hugepages_free() == 0) {
		UIW_ERR("hugepages=on, but no 2 MiB hugepage is free or hugetlbfs is not mounted "
			"(HugePages_Free in /proc/meminfo; echo 512 > "
			"/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages; mount -t hugetlbfs "
			"nodev /dev/hugepages), or set hugepages=off");
		return -1;
	}
	if (uiw_devargs_is_pci(cfg->port)) {
		char why[512];

		if (uiw_pci_check("/sys", cfg->port, use_hugepages(cfg), why, sizeof(why)) != 0) {
			UIW_ERR("key 'port': %s", why);
			return -1;
		}
	}
	if (rte_eal_init(argc, argv) < 0) {
		UIW_ERR("EAL init failed: %s", rte_strerror(rte_errno));
		return -1;
	}
	uiw_lcore_id_sync();   /* this thread is the EAL's main lcore now */
	uiw_time_init();
	return 0;
}

static uint16_t ethdev_rx(struct uiw_port *port, struct rte_mbuf **pkts, uint16_t n)
{
	return rte_eth_rx_burst(port->port_id, port->queue, pkts, n);
}

static uint16_t ethdev_tx(struct uiw_port *port, struct rte_mbuf **pkts, uint16_t n)
{
	return rte_eth_tx_burst(port->port_id, port->queue, pkts, n);
}

/* vhost-user: no bursts while its guest's memory is being touched (vhost_guest_touch(),
 * GUEST_TOUCH_NS at most), so that the first frames come after it, not beside it. */
static uint8_t guest_touching[RTE_MAX_ETHPORTS];

static uint16_t touched_rx(struct uiw_port *port, struct rte_mbuf **pkts, uint16_t n)
{
	if (__atomic_load_n(&guest_touching[port->port_id], __ATOMIC_ACQUIRE))
		return 0;
	return rte_eth_rx_burst(port->port_id, port->queue, pkts, n);
}

static uint16_t touched_tx(struct uiw_port *port, struct rte_mbuf **pkts, uint16_t n)
{
	if (__atomic_load_n(&guest_touching[port->port_id], __ATOMIC_ACQUIRE))
		return 0;
	return rte_eth_tx_burst(port->port_id, port->queue, pkts, n);
}

/* memif: bursts only while its control thread is held (uiw_port_gate.h). */
static uint16_t gated_rx(struct uiw_port *port, struct rte_mbuf **pkts, uint16_t n)
{
	uint16_t got;

	if (!uiw_port_gate_enter())
		return 0;
	got = rte_eth_rx_burst(port->port_id, port->queue, pkts, n);
	uiw_port_gate_leave();
	return got;
}

static uint16_t gated_tx(struct uiw_port *port, struct rte_mbuf **pkts, uint16_t n)
{
	uint16_t sent;

	if (!uiw_port_gate_enter())
		return 0;
	sent = rte_eth_tx_burst(port->port_id, port->queue, pkts, n);
	uiw_port_gate_leave();
	return sent;
}

/* The value of devargs key @p key (up to the next comma) into @p out. */
static bool devarg(const char *args, const char *key, char *out, size_t len)
{
	size_t k = strlen(key);

	for (const char *a = args; *a != '\0'; a += strcspn(a, ",") + (a[strcspn(a, ",")] == ',')) {
		size_t n = strcspn(a, ",");

		if (n > k && strncmp(a, key, k) == 0 && a[k] == '=' && n - k - 1 < len) {
			memcpy(out, a + k + 1, n - k - 1);
			out[n - k - 1] = '\0';
			return true;
		}
	}
	return false;
}

/*
 * Whether @p cfg's port is a memif client that is to lend its mbufs to the server (memif's
 * zero-copy client): zero-copy=yes in its devargs, or none named and key memif_zero_copy
 * on. The server then maps the client's DPDK memory and reads each frame where it lies,
 * and writes what it sends straight into the client's mbufs: of the two copies memif
 * makes of each frame, the client's is gone. DPDK needs the EAL's memory in one file per
 * list for it (--single-file-segments).
 */
static bool memif_zc_asked(const struct uiw_config *cfg)
{
	size_t n = strcspn(cfg->port, ",");
	const char *args = cfg->port[n] == ',' ? cfg->port + n + 1 : "";
	char v[16];

	if (strncmp(cfg->port, "net_memif", 9) != 0 || !devarg(args, "role", v, sizeof(v)) ||
	    strcmp(v, "client") != 0)
		return false;
	if (devarg(args, "zero-copy", v, sizeof(v)))
		return strcmp(v, "yes") == 0;
	return cfg->memif_zero_copy != 0;
}

/*
 * memif's buffers are 2048 octets unless its devargs say otherwise, and in DPDK 22.11 a
 * frame spread over several of them is received again and again once the peer goes
 * (hundreds of thousands of stale copies of a 20 MB stream at MTU 9000, measured): for an
 * MTU that needs more, a memif port without bsize= gets buffers that hold a whole frame.
 *
 * A client without zero-copy= in its devargs gets zero-copy=yes (memif_zc_asked()) when
 * key memif_zero_copy is on and the EAL runs without hugepages, in one file
 * (uiw_eal_build_args()): memif names each lent frame by its offset in the first of the
 * EAL's memory lists, and only then is there one list, the pool's among them.
 */
static const char *memif_args(const char *name, const char *args, const struct uiw_config *cfg,
			      char *buf, size_t len)
{
	unsigned frame = cfg->mtu + RTE_ETHER_HDR_LEN + RTE_ETHER_CRC_LEN;
	bool bsize = frame > 2048 && strstr(args, "bsize=") == NULL;
	bool zc = strstr(args, "zero-copy=") == NULL && memif_zc_asked(cfg) &&
		  !rte_eal_has_hugepages() && rte_mcfg_get_single_file_segments();
	int n;

	if (strncmp(name, "net_memif", 9) != 0 || (!bsize && !zc))
		return args;
	n = snprintf(buf, len, "%s", args);
	if (bsize && n >= 0 && (size_t)n < len)
		n += snprintf(buf + n, len - (size_t)n, "%sbsize=%u", n ? "," : "",
			      (frame + 1023) / 1024 * 1024);
	if (zc && n >= 0 && (size_t)n < len)
		snprintf(buf + n, len - (size_t)n, "%szero-copy=yes", n ? "," : "");
	return buf;
}

/* Whether memif port @p info lends its mbufs to its peer (zero-copy=yes in its devargs). */
static bool memif_lends(const struct rte_eth_dev_info *info)
{
	const struct rte_devargs *da = rte_dev_devargs(info->device);
	char v[8];

	return strcmp(info->driver_name, "net_memif") == 0 && da != NULL && da->args != NULL &&
	       devarg(da->args, "zero-copy", v, sizeof(v)) && strcmp(v, "yes") == 0;
}

/* The first of the EAL's memory lists that holds memory: memif's zero-copy client names
 * each frame by its offset in it (its region 1). */
static int first_list(const struct rte_memseg_list *msl, void *arg)
{
	if (msl->external || msl->memseg_arr.count == 0)
		return 0;
	*(const struct rte_memseg_list **)arg = msl;
	return 1;
}

struct pool_lists {
	const struct rte_memseg_list *first;
	bool outside;
};

static void pool_chunk_list(struct rte_mempool *mp, void *arg, struct rte_mempool_memhdr *h,
			    unsigned idx)
{
	struct pool_lists *pl = arg;

	(void)mp;
	(void)idx;
	if (rte_mem_virt2memseg_list(h->addr) != pl->first)
		pl->outside = true;
}

/* Whether memif's zero-copy client can name every mbuf of @p pool (see first_list()). */
static bool pool_in_first_list(struct rte_mempool *pool)
{
	struct pool_lists pl = { NULL, false };

	if (rte_memseg_list_walk(first_list, (void *)&pl.first) != 1)
		return false;
	rte_mempool_mem_iter(pool, pool_chunk_list, &pl);
	return !pl.outside;
}

/*
 * af_packet's rings hold frames of framesz octets (2048 unless the devargs say otherwise),
 * and its MTU call refuses an MTU whose frame does not fit one. The kernel puts a frame at
 * 66 octets into its slot (the tpacket2 header and the socket address, aligned so that the
 * IP header is on 16), the PMD copies each slot from octet 32 into one mbuf, so the slot
 * holds an Ethernet header, a VLAN tag and the MTU behind 66, and the mbufs hold the slot.
 */
static unsigned af_packet_framesz(unsigned mtu)
{
	return (66 + RTE_ETHER_HDR_LEN + RTE_VLAN_HLEN + mtu + 1023) / 1024 * 1024;
}

/* An af_packet port without framesz= or blocksz= in its devargs, asked for an MTU over
 * 1500, gets slots of af_packet_framesz() in blocks of whole pages holding whole slots
 * (the PMD finds slot i at i times framesz in the ring, so no block may leave a gap). */
static const char *af_packet_args(const char *name, const char *args, const struct uiw_config *cfg,
				  char *buf, size_t len)
{
	unsigned frame = af_packet_framesz(cfg->mtu), block = frame;
	char v[16];

	while (block % 4096 != 0)
		block += frame;
	if (strncmp(name, "net_af_packet", 13) != 0 || cfg->mtu <= RTE_ETHER_MTU ||
	    devarg(args, "framesz", v, sizeof(v)) || devarg(args, "blocksz", v, sizeof(v)))
		return args;
	if ((size_t)snprintf(buf, len, "%s%sframesz=%u,blocksz=%u", args, *args ? "," : "", frame,
			     block) >= len)
		return args;
	return buf;
}

/* The file of a memif port of @p role whose socket is a path (socket-abstract=no), into
 * @p path. @return false for another port or an abstract socket. */
static bool memif_socket_path(const char *name, const char *args, const char *role, char *path,
			      size_t len)
{
	char want[16];

	snprintf(want, sizeof(want), "role=%s", role);
	if (strncmp(name, "net_memif", 9) != 0 || strstr(args, want) == NULL ||
	    strstr(args, "socket-abstract=no") == NULL)
		return false;
	return devarg(args, "socket", path, len) && path[0] != '\0';
}

/*
 * A memif server's socket file left by a process that ended without closing its port
 * (a crash, or a program's exit) makes the next server fail ("Address already in use").
 * One nobody answers on is removed; one a live server holds stays (and the port fails).
 */
static void memif_server_stale(const char *name, const char *args)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd;

	if (!memif_socket_path(name, args, "server", sa.sun_path, sizeof(sa.sun_path)) ||
	    access(sa.sun_path, F_OK) != 0 || (fd = socket(AF_UNIX, SOCK_SEQPACKET, 0)) < 0)
		return;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 && errno == ECONNREFUSED) {
		UIW_INFO("port %s: removing %s, a socket no memif server holds", name, sa.sun_path);
		unlink(sa.sun_path);
	}
	close(fd);
}

void uiw_port_forget_socket(const struct uiw_config *cfg)
{
	char name[RTE_DEV_NAME_MAX_LEN], path[108];
	size_t n = strcspn(cfg->port, ",");

	if (n == 0 || n >= sizeof(name) || cfg->port[n] != ',')
		return;
	memcpy(name, cfg->port, n);
	name[n] = '\0';
	if (memif_socket_path(name, cfg->port + n + 1, "server", path, sizeof(path)))
		unlink(path);
}

/* How long a memif client waits for its server's socket to appear. */
#define MEMIF_SERVER_WAIT_MS 10000
#define MEMIF_SERVER_SETTLE_MS 300

/*
 * A memif client whose server has not made its socket yet fails to start at once. A
 * program on the drop-in starts its instance at its first RDMA call, which may come
 * before its peer's (qperf's server makes its instance in the child it forks for each
 * test): a client with a socket path waits for the file, up to MEMIF_SERVER_WAIT_MS.
 */
static void memif_client_wait(const char *name, const char *args)
{
	char path[108];

	if (!memif_socket_path(name, args, "client", path, sizeof(path)))
		return;
	for (unsigned waited = 0; access(path, F_OK) != 0; waited += 10) {
		if (waited == 0)
			UIW_INFO("port %s: waiting up to %u ms for the memif server's socket %s",
				 name, MEMIF_SERVER_WAIT_MS, path);
		if (waited >= MEMIF_SERVER_WAIT_MS) {
			UIW_ERR("port %s: no memif server: %s still missing after %u ms", name,
				path, MEMIF_SERVER_WAIT_MS);
			return;
		}
		rte_delay_us_sleep(10000);
	}
	/* The file appears as the server's port is made, and its device starts a little
	 * later; a client that connected between was seen to get no link, ever (a qperf
	 * server's child makes its port as its client starts). A young file is given
	 * MEMIF_SERVER_SETTLE_MS from its birth. */
	struct stat st;
	struct timespec now;

	if (stat(path, &st) == 0 && clock_gettime(CLOCK_REALTIME, &now) == 0) {
		int64_t age_ms = ((int64_t)now.tv_sec - st.st_ctim.tv_sec) * 1000 +
				 ((int64_t)now.tv_nsec - st.st_ctim.tv_nsec) / 1000000;

		if (age_ms >= 0 && age_ms < MEMIF_SERVER_SETTLE_MS)
			rte_delay_us_sleep((unsigned)(MEMIF_SERVER_SETTLE_MS - age_ms) * 1000u);
	}
}

int uiw_port_open(struct uiw_port *port, const struct uiw_config *cfg)
{
	char name[RTE_DEV_NAME_MAX_LEN], more[sizeof(cfg->port) + 32];
	size_t n = strcspn(cfg->port, ",");
	const char *args = cfg->port[n] == ',' ? cfg->port + n + 1 : "";
	uint16_t port_id;
	bool vdev = !uiw_devargs_is_pci(cfg->port);

	if (n == 0 || n >= sizeof(name)) {
		UIW_ERR("key 'port': bad device name in '%s'", cfg->port);
		return -1;
	}
	memcpy(name, cfg->port, n);
	name[n] = '\0';
	args = memif_args(name, args, cfg, more, sizeof(more));
	args = af_packet_args(name, args, cfg, more, sizeof(more));
	memif_client_wait(name, args);
	memif_server_stale(name, args);
	if (vdev) {
		int rc = rte_vdev_init(name, args);

		if (rc != 0) {
			UIW_ERR("key 'port': cannot create '%s' with '%s': %s", name, args,
				strerror(rc < 0 ? -rc : rc));
			return -1;
		}
	}
	if (rte_eth_dev_get_port_by_name(name, &port_id) != 0) {
		UIW_ERR("key 'port': no ethdev called '%s'%s", name,
			vdev ? "" : " (is the device bound to a DPDK driver?)");
		if (vdev)
			rte_vdev_uninit(name);
		return -1;
	}
	if (uiw_port_open_ethdev(port, port_id, cfg) != 0) {
		if (vdev)
			rte_vdev_uninit(name);
		return -1;
	}
	port->is_vdev = vdev;
	return 0;
}

uint32_t uiw_port_rss_hash(const uint8_t *key, uint32_t src, uint16_t sport, uint32_t dst,
			   uint16_t dport)
{
	/* As struct rte_ipv4_tuple lays them out: addresses, then the ports as one word. */
	uint32_t tuple[3] = { src, dst, (uint32_t)sport << 16 | dport };

	return rte_softrss(tuple, RTE_DIM(tuple), key);
}

/* With RSS on over more than one queue pair: the key and redirection table the PMD uses,
 * so that active opens can pick source ports whose answers come in on their own engine's
 * queue. Left NULL when the PMD does not tell them (then segments on the wrong queue are
 * handed over). */
static void rss_learn(struct uiw_port *port, const struct rte_eth_dev_info *info)
{
	struct rte_eth_rss_reta_entry64 reta[RTE_ETH_RSS_RETA_SIZE_512 / RTE_ETH_RETA_GROUP_SIZE];
	struct rte_eth_rss_conf conf;
	struct uiw_port_rss *rss;
	uint16_t n = info->reta_size;

	if (n == 0 || n > RTE_ETH_RSS_RETA_SIZE_512 || n % RTE_ETH_RETA_GROUP_SIZE != 0 ||
	    info->hash_key_size < 16 || info->hash_key_size > sizeof(rss->key) ||
	    (rss = calloc(1, sizeof(*rss) + n * sizeof(rss->reta[0]))) == NULL)
		goto none;
	memset(&conf, 0, sizeof(conf));
	conf.rss_key = rss->key;
	conf.rss_key_len = info->hash_key_size;
	memset(reta, 0, sizeof(reta));
	for (unsigned g = 0; g < n / RTE_ETH_RETA_GROUP_SIZE; g++)
		reta[g].mask = UINT64_MAX;
	if (rte_eth_dev_rss_hash_conf_get(port->port_id, &conf) != 0 ||
	    !(conf.rss_hf & RTE_ETH_RSS_NONFRAG_IPV4_TCP) ||
	    rte_eth_dev_rss_reta_query(port->port_id, reta, n) != 0) {
		free(rss);
		goto none;
	}
	rss->reta_size = n;
	for (unsigned i = 0; i < n; i++) {
		rss->reta[i] = reta[i / RTE_ETH_RETA_GROUP_SIZE].reta[i % RTE_ETH_RETA_GROUP_SIZE];
		if (rss->reta[i] >= port->nqueues) {
			free(rss);
			goto none;
		}
	}
	port->rss = rss;
	UIW_INFO("port %s: RSS over %u queue pairs (key of %u octets, table of %u): active "
		 "opens pick source ports that come back on their engine's queue", port->name,
		 port->nqueues, info->hash_key_size, n);
	return;
none:
	UIW_INFO("port %s: %s picks a frame's queue itself and does not tell how: segments "
		 "that come in on another engine's queue are handed to it (counter "
		 "net.hand_out)", port->name, info->driver_name);
}

/* The most of a guest's memory vhost_guest_touch() touches: 4 KiB pages met for the first
 * time at about 3 us each here, a GiB in about 0.8 s, once, off the polling thread. */
#define GUEST_TOUCH_MAX (1ull << 30)

/*
 * The longest vhost_guest_touch() touches, with the port's bursts held: the peer's first
 * frames wait unanswered meanwhile, an ARP request among them. 512 MiB of receive buffers
 * (8 KiB each, mbufs=65535) took 2.06 s with the host slow (15 us a page), and a client's
 * 2 s address resolution ran out behind it (RDMA_CM_EVENT_ADDR_ERROR). Touching on beside
 * the bursts instead took half of the vhost side's core from them for as long (the vhost
 * library's thread shares the process's CPUs): 64 KiB Reads 14 Gb/s against 28. So the
 * touch stops here, a quarter of such a resolution; pages past it are met by the copies,
 * as before any touch. The default pool's 68 MiB took 250-390 ms with the host slow.
 */
#define GUEST_TOUCH_NS (500 * UIW_NS_PER_MS)

/*
 * vhost-user maps its guest's memory (the virtio-user process's DPDK memory, a VM's RAM)
 * and met each page of it first in a copy into or out of a guest buffer: a page fault, and
 * under a hypervisor a trap on the first write as well. The guest's buffers go round its
 * pools, so an 8 B ping-pong from a fresh link paid for new pages over its first 20,000
 * round trips (p99 7.3-7.9 us against 2.2-2.5 after as many to warm up; docs/BENCHMARKS.md),
 * as memif did before its gate touched its region. So when the guest comes up, the pages
 * of its memory table that it has used (resident: mincore()) are entered in this process's
 * page tables and written once, from the top down, up to GUEST_TOUCH_MAX and for
 * GUEST_TOUCH_NS at most (the port makes no burst meanwhile). Pages it never used are
 * left: the PMD meets them no sooner than the guest does. This runs in the vhost
 * library's own thread, in new_device() (the PMD raises its link-up event there), so the
 * table cannot be unmapped meanwhile: only that thread changes it.
 */
static int vhost_guest_touch(uint16_t port_id, enum rte_eth_event_type type, void *arg,
			     void *out)
{
	int vid = rte_eth_vhost_get_vid_from_port_id(port_id);
	struct rte_vhost_memory *mem = NULL;
	struct rte_eth_link link;
	long page = sysconf(_SC_PAGESIZE);
	uint64_t done = 0, total = 0, t0 = uiw_now_ns();
	char name[RTE_ETH_NAME_MAX_LEN];

	(void)arg;
	(void)out;
	if (type != RTE_ETH_EVENT_INTR_LSC || vid < 0 ||
	    rte_eth_link_get_nowait(port_id, &link) != 0 || link.link_status != RTE_ETH_LINK_UP ||
	    rte_vhost_get_mem_table(vid, &mem) != 0)
		return 0;
	if (page <= 0)
		page = 4096;
	__atomic_store_n(&guest_touching[port_id], 1, __ATOMIC_RELEASE);
	for (uint32_t i = 0; i < mem->nregions; i++) {
		uintptr_t lo = (uintptr_t)mem->regions[i].host_user_addr;
		uint64_t len = mem->regions[i].size & ~(uint64_t)(page - 1);

		total += mem->regions[i].size;
		if (lo % (uintptr_t)page == 0 && done < GUEST_TOUCH_MAX)
			done += uiw_pages_touch_resident(lo, len, (uintptr_t)page,
							 GUEST_TOUCH_MAX - done, t0 + GUEST_TOUCH_NS);
	}
	__atomic_store_n(&guest_touching[port_id], 0, __ATOMIC_RELEASE);
	free(mem);
	if (done == 0)
		return 0;   /* a guest that has used none of it yet (virtio-user at its probe) */
	if (rte_eth_dev_get_name_by_port(port_id, name) != 0)
		snprintf(name, sizeof(name), "%u", port_id);
	uint64_t took = uiw_now_ns() - t0;

	UIW_INFO("port %s: the guest's memory touched ahead of its first frames: %" PRIu64
		 " KiB it has used of %" PRIu64 " MiB, in %.0f ms%s", name, done >> 10, total >> 20,
		 (double)took / 1e6,
		 took >= GUEST_TOUCH_NS ? " (stopped there: the rest is met as it is used)" : "");
	return 0;
}

/* PMDs that carry the frames sent on queue q to the peer's queue q. */
static bool port_pairs_queues(const char *driver)
{
	return strcmp(driver, "net_memif") == 0 || strcmp(driver, "net_ring") == 0 ||
	       strcmp(driver, "net_vhost") == 0 || strcmp(driver, "net_virtio_user") == 0;
}

/* The most TCP payload a TSO frame carries: the IPv4 total length is 16 bits, and 128
 * octets cover the largest headers. */
#define PORT_TSO_MAX (UINT16_MAX - 128)
/* Receive buffers of the pool key rx_buf_size=auto gives a port that takes large frames. */
#define RX_BUF_AUTO_SIZE 8192u

static int setup_queues(struct uiw_port *port, const struct rte_eth_dev_info *info,
			const struct uiw_config *cfg)
{
	uint16_t pid = port->port_id;
	uint16_t nrx = (uint16_t)cfg->rx_desc, ntx = (uint16_t)cfg->tx_desc;
	struct rte_eth_conf conf;
	struct rte_eth_txconf txc = info->default_txconf;
	int rc;

	memset(&conf, 0, sizeof(conf));
	conf.txmode.offloads = info->tx_offload_capa &
		(RTE_ETH_TX_OFFLOAD_IPV4_CKSUM | RTE_ETH_TX_OFFLOAD_TCP_CKSUM |
		 RTE_ETH_TX_OFFLOAD_MULTI_SEGS);
	conf.rxmode.offloads = info->rx_offload_capa &
		(RTE_ETH_RX_OFFLOAD_IPV4_CKSUM | RTE_ETH_RX_OFFLOAD_TCP_CKSUM);
	/* Jumbo frames may arrive in chained buffers (virtio-user's mergeable ones): the stack
	 * takes chains, and the PMD is told so (else it refuses the MTU). */
	if (cfg->mtu > RTE_ETHER_MTU)
		conf.rxmode.offloads |= info->rx_offload_capa & RTE_ETH_RX_OFFLOAD_SCATTER;
	/* TSO: TCP hands the PMD frames of many segments, which it (or the device, or the
	 * peer's large receive) cuts at tso_segsz. It needs chained frames and the checksum
	 * offload, as the segments' checksums are the PMD's to fill. */
	/* Not on net_tap: its transmit (DPDK 22.11) never took a TSO frame of MSS-sized
	 * segments; the frame stayed at the head of the queue (docs/CONFIG.md). */
	if (cfg->tso && strcmp(info->driver_name, "net_tap") != 0 &&
	    (info->tx_offload_capa & RTE_ETH_TX_OFFLOAD_TCP_TSO) &&
	    (info->tx_offload_capa & RTE_ETH_TX_OFFLOAD_MULTI_SEGS) &&
	    (info->tx_offload_capa & RTE_ETH_TX_OFFLOAD_TCP_CKSUM))
		conf.txmode.offloads |= RTE_ETH_TX_OFFLOAD_TCP_TSO;
	/* Large receive: the PMD may hand over frames of many segments (virtio's GSO frames,
	 * a NIC's LRO), chained; TCP takes a segment of any length. */
	if (cfg->lro && (info->rx_offload_capa & RTE_ETH_RX_OFFLOAD_TCP_LRO)) {
		conf.rxmode.offloads |= RTE_ETH_RX_OFFLOAD_TCP_LRO |
					(info->rx_offload_capa & RTE_ETH_RX_OFFLOAD_SCATTER);
		conf.rxmode.max_lro_pkt_size = info->max_lro_pkt_size;
	}
	/* One RX/TX queue pair per engine (docs/ENGINES.md). memif, ring pairs and
	 * vhost-user/virtio-user carry queue q to the peer's queue q, so a connection's
	 * frames come in on its engine's queue. Other PMDs spread frames by a hash of their
	 * own (a NIC's RSS, spread over the queues where it has it); a segment that comes in
	 * on another engine's queue is handed to the engine that owns it. */
	port->nqueues = (uint16_t)cfg->engines;
	if (port->nqueues > 1 && (info->flow_type_rss_offloads & RTE_ETH_RSS_NONFRAG_IPV4_TCP)) {
		conf.rxmode.mq_mode = RTE_ETH_MQ_RX_RSS;
		conf.rx_adv_conf.rss_conf.rss_hf = info->flow_type_rss_offloads &
						   (RTE_ETH_RSS_IPV4 | RTE_ETH_RSS_NONFRAG_IPV4_TCP);
	}
	if (info->max_rx_queues < port->nqueues || info->max_tx_queues < port->nqueues) {
		UIW_ERR("port %s: key 'engines' is %u, but %s has at most %u RX and %u TX queues",
			port->name, cfg->engines, info->driver_name, info->max_rx_queues,
			info->max_tx_queues);
		return -1;
	}
	/* Before the configuration, which starts the vhost-user socket: a guest may come at
	 * once. */
	if (strcmp(info->driver_name, "net_vhost") == 0 &&
	    rte_eth_dev_callback_register(pid, RTE_ETH_EVENT_INTR_LSC, vhost_guest_touch, NULL) == 0) {
		port->guest_touch = true;
		port->rx_burst = touched_rx;
		port->tx_burst = touched_tx;
	}
	rc = rte_eth_dev_configure(pid, port->nqueues, port->nqueues, &conf);
	if (rc != 0) {
		UIW_ERR("port %s: configure failed: %s", port->name, strerror(-rc));
		return -1;
	}
	port->tx_offloads = conf.txmode.offloads;
	port->rx_offloads = conf.rxmode.offloads;
	port->tso_segs = info->tx_desc_lim.nb_seg_max != 0 &&
			 info->tx_desc_lim.nb_seg_max < UIW_PORT_TSO_SEGS
			 ? info->tx_desc_lim.nb_seg_max : UIW_PORT_TSO_SEGS;
	if (port->tx_offloads & RTE_ETH_TX_OFFLOAD_TCP_TSO)
		port->tso_max = PORT_TSO_MAX;
	/* vhost-user lists no TSO among its offloads, yet its transmit hands a frame of many
	 * segments to the guest whole, their size in the virtio-net header, and a guest that
	 * negotiated VIRTIO_NET_F_GUEST_TSO4 takes it as one large receive (virtio 1.1
	 * §5.1.6.4: virtio-user with large receive asked for, Linux's virtio-net). Reads and
	 * all else that leaves from the vhost-user side went one segment a frame, where the
	 * virtio-user side sent frames of 64 KiB. Whether this guest takes them is known
	 * only once it has connected: uiw_port_link_check() reads it. */
	if (cfg->tso && strcmp(info->driver_name, "net_vhost") == 0 &&
	    (port->tx_offloads & RTE_ETH_TX_OFFLOAD_TCP_CKSUM) &&
	    (port->tx_offloads & RTE_ETH_TX_OFFLOAD_MULTI_SEGS))
		port->tso_guest = true;
	rte_eth_dev_adjust_nb_rx_tx_desc(pid, &nrx, &ntx);
	txc.offloads = conf.txmode.offloads;
	for (uint16_t q = 0; q < port->nqueues; q++) {
		rc = rte_eth_rx_queue_setup(pid, q, nrx, (unsigned)rte_eth_dev_socket_id(pid), NULL,
					    uiw_port_rx_pool(port));
		if (rc != 0) {
			UIW_ERR("port %s: RX queue %u setup failed: %s (key 'mbufs' may be too small)",
				port->name, q, strerror(-rc));
			return -1;
		}
		rc = rte_eth_tx_queue_setup(pid, q, ntx, (unsigned)rte_eth_dev_socket_id(pid), &txc);
		if (rc != 0) {
			UIW_ERR("port %s: TX queue %u setup failed: %s", port->name, q, strerror(-rc));
			return -1;
		}
	}
	return 0;
}

/*
 * af_packet in DPDK 22.11 reports a largest frame of 1518 octets whatever its ring slots
 * hold, so ethdev refuses any MTU over 1500. The frames it can carry are bounded by its
 * slots and by the interface's MTU in the kernel (a veth's peer drops what exceeds its
 * own; the socket refuses to send it). So: when the slots hold the frame, the interface
 * is brought to the MTU (as the PMD's own MTU call does), and the stack uses it.
 * @return true when the port carries @p mtu.
 */
static bool af_packet_mtu(struct uiw_port *port, const struct uiw_config *cfg)
{
	const char *args = strchr(cfg->port, ',');
	char iface[IF_NAMESIZE], v[16];
	struct ifreq ifr;
	bool ok = false;
	int fd;

	if (args == NULL || !devarg(args + 1, "iface", iface, sizeof(iface)))
		return false;
	if (devarg(args + 1, "framesz", v, sizeof(v)) && strtoul(v, NULL, 10) < af_packet_framesz(cfg->mtu)) {
		UIW_WARN("port %s: framesz=%s cannot hold a frame of MTU %u (it takes framesz=%u)",
			 port->name, v, cfg->mtu, af_packet_framesz(cfg->mtu));
		return false;
	}
	fd = socket(AF_INET, SOCK_DGRAM, 0);
	if (fd < 0)
		return false;
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", iface);
	if (ioctl(fd, SIOCGIFMTU, &ifr) == 0) {
		if ((unsigned)ifr.ifr_mtu >= cfg->mtu) {
			ok = true;
		} else {
			ifr.ifr_mtu = (int)cfg->mtu;
			ok = ioctl(fd, SIOCSIFMTU, &ifr) == 0;
			if (ok)
				UIW_INFO("port %s: interface %s set to MTU %u", port->name, iface, cfg->mtu);
			else
				UIW_WARN("port %s: cannot set interface %s to MTU %u: %s", port->name,
					 iface, cfg->mtu, strerror(errno));
		}
	}
	close(fd);
	return ok;
}

/* The MTU: the configured one where the PMD takes it, else the PMD's own. */
static void setup_mtu(struct uiw_port *port, const struct rte_eth_dev_info *info,
		      const struct uiw_config *cfg)
{
	uint16_t cur = 0;
	int rc;

	rte_eth_dev_get_mtu(port->port_id, &cur);
	port->mtu = cfg->mtu;
	if (cur == cfg->mtu)
		return;
	if (strcmp(info->driver_name, "net_af_packet") == 0 &&
	    (uint32_t)cfg->mtu + RTE_ETHER_HDR_LEN + RTE_ETHER_CRC_LEN > info->max_rx_pktlen) {
		if (!af_packet_mtu(port, cfg)) {
			UIW_WARN("port %s: MTU %u not carried (above): using the PMD's, %u",
				 port->name, cfg->mtu, cur);
			port->mtu = cur;
		}
		return;
	}
	rc = cfg->mtu <= info->max_mtu ? rte_eth_dev_set_mtu(port->port_id, cfg->mtu) : -EINVAL;
	if (rc != 0 && rc != -ENOTSUP && cur > 0 && cur < cfg->mtu) {
		/* The PMD cannot carry the frames (tap refuses them on transmit for ever): use
		 * its MTU, and TCP's MSS follows. */
		UIW_WARN("port %s: the PMD refused MTU %u (%s; its largest is %u): using its MTU, %u",
			 port->name, cfg->mtu, strerror(-rc), info->max_mtu, cur);
		port->mtu = cur;
	}
}

const char *uiw_port_offloads_str(const struct uiw_port *port, char *buf, size_t len)
{
	static const struct {
		bool tx;
		uint64_t flag;
		const char *name;
	} names[] = {
		{ true, RTE_ETH_TX_OFFLOAD_IPV4_CKSUM, "tx-ip-cksum" },
		{ true, RTE_ETH_TX_OFFLOAD_TCP_CKSUM, "tx-tcp-cksum" },
		{ true, RTE_ETH_TX_OFFLOAD_TCP_TSO, "tso" },
		{ true, RTE_ETH_TX_OFFLOAD_MULTI_SEGS, "tx-chains" },
		{ false, RTE_ETH_RX_OFFLOAD_IPV4_CKSUM, "rx-ip-cksum" },
		{ false, RTE_ETH_RX_OFFLOAD_TCP_CKSUM, "rx-tcp-cksum" },
		{ false, RTE_ETH_RX_OFFLOAD_TCP_LRO, "lro" },
		{ false, RTE_ETH_RX_OFFLOAD_SCATTER, "rx-chains" },
	};
	size_t n = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < RTE_DIM(names); i++) {
		uint64_t on = names[i].tx ? port->tx_offloads : port->rx_offloads;

		if ((on & names[i].flag) && n < len)
			n += (size_t)snprintf(buf + n, len - n, "%s%s", n ? " " : "", names[i].name);
	}
	if (port->tso_guest && n < len)
		n += (size_t)snprintf(buf + n, len - n, "%stso-to-guest", n ? " " : "");
	if (n == 0)
		snprintf(buf, len, "none");
	return buf;
}

int uiw_port_open_ethdev(struct uiw_port *port, uint16_t port_id, const struct uiw_config *cfg)
{
	struct rte_eth_dev_info info;
	char pool_name[RTE_MEMPOOL_NAMESIZE];
	unsigned room = RTE_MBUF_DEFAULT_BUF_SIZE;
	unsigned need = RTE_PKTMBUF_HEADROOM + cfg->mtu + RTE_ETHER_HDR_LEN + 2 * RTE_ETHER_CRC_LEN;
	char offs[160];
	bool memif_zc;
	int rc;

	memset(port, 0, sizeof(*port));
	port->port_id = port_id;
	port->link = -1;
	port->rx_burst = ethdev_rx;
	port->tx_burst = ethdev_tx;
	rte_eth_dev_get_name_by_port(port_id, port->name);
	rc = rte_eth_dev_info_get(port_id, &info);
	if (rc != 0) {
		UIW_ERR("port %s: no device info: %s", port->name, strerror(-rc));
		return -1;
	}
	if (strcmp(info.driver_name, "net_af_packet") == 0 && cfg->mtu > RTE_ETHER_MTU) {
		const char *args = strchr(cfg->port, ',');
		unsigned slot = af_packet_framesz(cfg->mtu);
		char v[16];

		/* Each mbuf takes a whole slot: ours, or a larger one the devargs asked for. */
		if (args != NULL && devarg(args + 1, "framesz", v, sizeof(v)) && strtoul(v, NULL, 10) > slot)
			slot = (unsigned)strtoul(v, NULL, 10);
		need = RTE_PKTMBUF_HEADROOM + slot;
	}
	if (need > room)
		room = need;
	snprintf(pool_name, sizeof(pool_name), "uiw_pool_%u", port_id);
	port->pool = rte_pktmbuf_pool_create(pool_name, cfg->mbufs, 256, 0, (uint16_t)room,
					     rte_eth_dev_socket_id(port_id));
	if (port->pool == NULL) {
		UIW_ERR("port %s: cannot create a pool of %u mbufs: %s (raise key 'memory')",
			port->name, cfg->mbufs, rte_strerror(rte_errno));
		return -1;
	}
	port->own_pool = true;
	/* Receive buffers of their own size (key rx_buf_size). Over vhost-user, a virtio-user
	 * side with large receive took each 64 KiB frame in 33 buffers of 2 KiB, and the
	 * vhost-user side's copy into them bounded Reads: 4 KiB buffers moved 38-40 Gb/s
	 * against 35-36, 8 KiB 40-42; 8 KiB on both sides, Writes 53.5-55.2 against
	 * 51.8-53.4 as well (docs/BENCHMARKS.md). As many as the pool. Left to the port ("auto"):
	 * 8 KiB where frames of many segments may come in, on a vhost-user port with tso=1
	 * (from its guest) and a virtio-user port with tso=1 and lro=1 (from its vhost-user
	 * side); memory for such a pool lacking, the port's own, with a warning. */
	unsigned rx_buf = cfg->rx_buf_size;
	bool rx_auto = rx_buf == UIW_RX_BUF_AUTO;

	if (rx_auto) {
		bool large_in = cfg->tso && (strcmp(info.driver_name, "net_vhost") == 0 ||
					     (strcmp(info.driver_name, "net_virtio_user") == 0 &&
					      cfg->lro));

		rx_buf = large_in && RX_BUF_AUTO_SIZE + RTE_PKTMBUF_HEADROOM > room
			 ? RX_BUF_AUTO_SIZE : 0;
	}
	if (rx_buf > 0) {
		if (rx_buf + RTE_PKTMBUF_HEADROOM < room) {
			UIW_ERR("port %s: key 'rx_buf_size' is %u, less than the port's buffers "
				"(%u octets for MTU %u): leave it 0 or raise it", port->name,
				rx_buf, room - RTE_PKTMBUF_HEADROOM, cfg->mtu);
			goto fail;
		}
		snprintf(pool_name, sizeof(pool_name), "uiw_rx_%u", port_id);
		port->rx_pool = rte_pktmbuf_pool_create(pool_name, cfg->mbufs, 256, 0,
							(uint16_t)(rx_buf + RTE_PKTMBUF_HEADROOM),
							rte_eth_dev_socket_id(port_id));
		if (port->rx_pool == NULL && !rx_auto) {
			UIW_ERR("port %s: cannot create a pool of %u receive buffers of %u octets: "
				"%s (raise key 'memory')", port->name, cfg->mbufs, rx_buf,
				rte_strerror(rte_errno));
			goto fail;
		}
		if (port->rx_pool == NULL)
			UIW_WARN("port %s: no pool of %u receive buffers of %u octets (%s): receives "
				 "into the port's own buffers (raise key 'memory', or set key "
				 "'rx_buf_size' to 0)", port->name, cfg->mbufs, rx_buf,
				 rte_strerror(rte_errno));
		else
			UIW_INFO("port %s: receives into %u buffers of %u octets of their own (key "
				 "rx_buf_size%s)", port->name, cfg->mbufs, rx_buf,
				 rx_auto ? ", auto" : "");
	}
	if (setup_queues(port, &info, cfg) != 0)
		goto fail;
	/* With TSO, FPDUs side by side in buffers of 64 KiB (MPA's fpdu_slab()), so that a
	 * frame of them is a header and a piece or two. Shared by the engines' queues (the
	 * pool takes puts and gets from any thread); none to be had: each FPDU alone. Handed
	 * out last in, first out (DPDK's "stack" mempool, where the EAL loaded it): from a
	 * ring, in turn, the 64 slabs (4 MiB) went round past the core's L2, and the copy
	 * into each next one waited for its lines: over vhost-user 64 KiB Writes moved 54-56
	 * Gb/s, against 61-64 from a stack, and Reads 41-42 against 44-46 (docs/BENCHMARKS.md). */
	if ((port->tso_max != 0 || port->tso_guest) && cfg->tso_slabs > 0) {
		snprintf(pool_name, sizeof(pool_name), "uiw_slabs_%u", port_id);
		port->slabs = rte_pktmbuf_pool_create_by_ops(pool_name, cfg->tso_slabs, 0, 0,
							     UINT16_MAX,
							     rte_eth_dev_socket_id(port_id),
							     "stack");
		if (port->slabs == NULL)
			port->slabs = rte_pktmbuf_pool_create(pool_name, cfg->tso_slabs, 0, 0,
							      UINT16_MAX,
							      rte_eth_dev_socket_id(port_id));
		if (port->slabs != NULL)
			UIW_INFO("port %s: %u slabs of 64 KiB for TSO frames, from DPDK's '%s' "
				 "mempool", port->name, cfg->tso_slabs,
				 rte_mempool_get_ops(port->slabs->ops_index)->name);
		if (port->slabs == NULL)
			UIW_WARN("port %s: no pool of %u slabs for TSO (%s): FPDUs built one by one "
				 "(raise key 'memory')", port->name, cfg->tso_slabs,
				 rte_strerror(rte_errno));
	}
	setup_mtu(port, &info, cfg);
	if (cfg->mac_set) {
		struct rte_ether_addr mac;

		memcpy(mac.addr_bytes, cfg->mac, 6);
		rc = rte_eth_dev_default_mac_addr_set(port_id, &mac);
		if (rc != 0)
			UIW_DEBUG("port %s: PMD cannot set its MAC (%s); set in software",
				  port->name, strerror(-rc));
	}
	rc = rte_eth_dev_start(port_id);
	if (rc != 0) {
		UIW_ERR("port %s: start failed: %s", port->name, strerror(-rc));
		goto fail;
	}
	if (port->nqueues > 1 && !port_pairs_queues(info.driver_name))
		rss_learn(port, &info);
	memif_zc = memif_lends(&info);
	if (memif_zc && (!pool_in_first_list(port->pool) ||
			 (port->rx_pool != NULL && !pool_in_first_list(port->rx_pool)))) {
		/* Its frames would name other memory than their own. */
		UIW_ERR("port %s: memif zero-copy client, but the mbuf pool lies outside the EAL's "
			"first memory list, which memif names frames by (run without hugepages, "
			"or without zero-copy=yes)", port->name);
		rte_eth_dev_stop(port_id);
		goto fail;
	}
	/* These PMDs copy each frame into their ring, socket, file or guest buffers inside
	 * tx_burst and free it there: a frame may point into lent memory (ring, virtio-user
	 * and PCI PMDs keep or DMA the buffers, so lent memory is copied for them, and for
	 * memif's zero-copy client, whose server reads each frame later, in the client's DPDK
	 * memory). vhost-user counted so: Reads from its side moved 17.1-18.3 Gb/s against
	 * 15.4-17.1 (docs/BENCHMARKS.md). */
	port->tx_ext = (strcmp(info.driver_name, "net_memif") == 0 && !memif_zc) ||
		       strcmp(info.driver_name, "net_af_packet") == 0 ||
		       strcmp(info.driver_name, "net_tap") == 0 ||
		       strcmp(info.driver_name, "net_pcap") == 0 ||
		       strcmp(info.driver_name, "net_null") == 0 ||
		       strcmp(info.driver_name, "net_vhost") == 0;
	port->tx_dma = !port->tx_ext && uiw_devargs_is_pci(cfg->port) && uiw_dma_usable();
	/* virtio-user frees what vhost-user has read when it next sends, in this thread; a
	 * frame over the FPDU's buffer is one descriptor, where a header mbuf and an
	 * indirect one on the FPDU were two and an atomic count: 64 KiB Writes to vhost-user
	 * moved 48.5-49.1 Gb/s against 39.7-41.6 (docs/BENCHMARKS.md). The ring PMD's frames
	 * are freed by the stack that receives them, maybe in another thread; a PCI NIC's
	 * free path is not measured here. */
	port->tx_over = strcmp(info.driver_name, "net_virtio_user") == 0;
	port->tx_prepare = (port->tx_offloads & (RTE_ETH_TX_OFFLOAD_IPV4_CKSUM |
						 RTE_ETH_TX_OFFLOAD_TCP_CKSUM |
						 RTE_ETH_TX_OFFLOAD_TCP_TSO)) != 0;
	/* memif changes its rings from the EAL interrupt thread (uiw_port_gate.h). */
	if (strcmp(info.driver_name, "net_memif") == 0) {
		if (uiw_port_gate_attach(port_id) != 0) {
			rte_eth_dev_stop(port_id);
			goto fail;
		}
		port->gated = true;
		port->rx_burst = gated_rx;
		port->tx_burst = gated_tx;
	}
	rte_eth_macaddr_get(port_id, &port->mac);
	/* PMDs without a MAC of their own (net_ring) do no filtering: use one in software. */
	if (cfg->mac_set && memcmp(port->mac.addr_bytes, cfg->mac, 6) != 0)
		memcpy(port->mac.addr_bytes, cfg->mac, 6);
	else if (rte_is_zero_ether_addr(&port->mac))
		rte_eth_random_addr(port->mac.addr_bytes);
	UIW_INFO("port %s: up, id %u, MAC " RTE_ETHER_ADDR_PRT_FMT ", MTU %u, offloads: %s%s",
		 port->name, port_id, RTE_ETHER_ADDR_BYTES(&port->mac), port->mtu,
		 uiw_port_offloads_str(port, offs, sizeof(offs)),
		 memif_zc ? ", memif zero-copy client" : "");
	return 0;
fail:
	rte_eth_dev_close(port_id);
	rte_mempool_free(port->pool);
	port->pool = NULL;
	rte_mempool_free(port->rx_pool);
	port->rx_pool = NULL;
	rte_mempool_free(port->slabs);
	port->slabs = NULL;
	return -1;
}

void uiw_port_read_pmd_counters(struct uiw_port *port)
{
	struct rte_eth_stats st;

	if (port->port_id == UIW_PORT_NONE || rte_eth_stats_get(port->port_id, &st) != 0)
		return;
	port->counters[UIW_PORT_C_rx_missed] = st.imissed;
	port->counters[UIW_PORT_C_rx_errors] = st.ierrors;
	port->counters[UIW_PORT_C_rx_nombuf] = st.rx_nombuf;
	if (port->gated)
		port->counters[UIW_PORT_C_ctl_windows] = uiw_port_gate_windows();
}

int uiw_port_wait_link(const struct uiw_port *port, unsigned timeout_ms)
{
	struct rte_eth_link link;

	if (port->port_id == UIW_PORT_NONE)
		return 0;
	for (unsigned waited = 0;; waited += 10) {
		/* A gated port's link comes up on the interrupt thread, which the gate holds
		 * until stepped. */
		if (port->gated && uiw_port_gate_enter())
			uiw_port_gate_leave();
		memset(&link, 0, sizeof(link));
		if (rte_eth_link_get_nowait(port->port_id, &link) == 0 &&
		    link.link_status == RTE_ETH_LINK_UP)
			return 0;
		if (waited >= timeout_ms)
			return -1;
		rte_delay_us_sleep(10000);
	}
}

#define LINK_CHECK_NS (100 * 1000 * 1000ull)

/* Whether the vhost-user guest of @p port takes frames of many TCP/IPv4 segments whole:
 * it negotiated VIRTIO_NET_F_GUEST_TSO4, which needs VIRTIO_NET_F_GUEST_CSUM (virtio 1.1
 * §5.1.3.1). None connected: no. */
static bool guest_takes_tso(const struct uiw_port *port)
{
	int vid = rte_eth_vhost_get_vid_from_port_id(port->port_id);
	uint64_t f = 0;

	if (vid < 0 || rte_vhost_get_negotiated_features(vid, &f) != 0)
		return false;
	return (f & (1ull << VIRTIO_NET_F_GUEST_TSO4)) && (f & (1ull << VIRTIO_NET_F_GUEST_CSUM));
}

/* uiw_port.tso_guest: TSO while the guest takes large frames. A guest that comes back
 * without them gets none from the next check on (a frame sent before it is lost, and
 * TCP sends it again in segments). */
static void tso_guest_check(struct uiw_port *port)
{
	uint32_t max = guest_takes_tso(port) ? PORT_TSO_MAX : 0;

	if (max == port->tso_max)
		return;
	port->tso_max = max;
	if (!port->shared)
		UIW_INFO("port %s: the guest %s frames of many segments: TSO %s", port->name,
			 max ? "takes" : "does not take", max ? "on" : "off");
}

void uiw_port_link_check(struct uiw_port *port, uint64_t now)
{
	struct rte_eth_link link;
	int8_t up;

	if (port->port_id == UIW_PORT_NONE || now < port->link_check_ns)
		return;
	port->link_check_ns = now + LINK_CHECK_NS;
	/* Each engine's handle reads it for itself: its tso_max is its own copy. */
	if (port->tso_guest)
		tso_guest_check(port);
	if (port->shared)
		return;
	/* A gated port's state is kept by its control thread, which the gate holds. */
	if (port->gated)
		return;
	memset(&link, 0, sizeof(link));
	if (rte_eth_link_get_nowait(port->port_id, &link) != 0)
		return;
	up = link.link_status == RTE_ETH_LINK_UP ? 1 : 0;
	if (up == port->link)
		return;
	if (port->link >= 0) {
		port->counters[up ? UIW_PORT_C_link_up : UIW_PORT_C_link_down]++;
		if (up && link.link_speed != RTE_ETH_SPEED_NUM_UNKNOWN)
			UIW_INFO("port %s: link up, %u Mb/s", port->name, link.link_speed);
		else if (up)
			UIW_INFO("port %s: link up", port->name);
		else
			UIW_WARN("port %s: link down: frames sent now are lost; TCP sends them "
				 "again once it is back", port->name);
	}
	port->link = up;
}

int uiw_port_open_queue(struct uiw_port *q, const struct uiw_port *base, uint16_t queue)
{
	if (base->port_id == UIW_PORT_NONE || queue >= base->nqueues) {
		UIW_ERR("port %s: no queue pair %u (the port has %u)", base->name, queue, base->nqueues);
		return -1;
	}
	*q = *base;
	q->queue = queue;
	q->shared = true;
	/* The PMD's own burst functions: the base's may be wrapped (faults, capture), and
	 * each handle wraps its own. */
	q->rx_burst = q->gated ? gated_rx : q->guest_touch ? touched_rx : ethdev_rx;
	q->tx_burst = q->gated ? gated_tx : q->guest_touch ? touched_tx : ethdev_tx;
	q->capture = NULL;
	q->own_pool = false;
	q->is_vdev = false;
	q->fault = NULL;
	q->tx_n = 0;
	q->tx_retry_ns = 0;
	memset(q->counters, 0, sizeof(q->counters));
	return 0;
}

void uiw_port_close(struct uiw_port *port)
{
	if (port->capture != NULL)
		uiw_capture_detach(port);
	if (port->fault != NULL)
		uiw_fault_detach(port);
	for (uint16_t i = 0; i < port->tx_n; i++)
		rte_pktmbuf_free(port->tx_buf[i]);
	port->tx_n = 0;
	if (port->shared) {
		port->pool = NULL;
		port->rx_pool = NULL;
		port->slabs = NULL;
		return;
	}
	if (port->port_id != UIW_PORT_NONE) {
		char name[RTE_DEV_NAME_MAX_LEN];

		snprintf(name, sizeof(name), "%s", port->name);
		if (port->gated)
			uiw_port_gate_detach(port->port_id);
		port->gated = false;
		rte_eth_dev_stop(port->port_id);
		/* -EAGAIN while the callback runs (a guest coming up now): it ends within
		 * the time its touch takes, a few seconds at most. */
		for (unsigned i = 0; port->guest_touch && i < 10000 &&
				     rte_eth_dev_callback_unregister(port->port_id,
								     RTE_ETH_EVENT_INTR_LSC,
								     vhost_guest_touch, NULL) == -EAGAIN;
		     i++)
			rte_delay_us_sleep(1000);
		port->guest_touch = false;
		rte_eth_dev_close(port->port_id);
		if (port->is_vdev)
			rte_vdev_uninit(name);
	}
	if (port->own_pool) {
		rte_mempool_free(port->pool);
		rte_mempool_free(port->rx_pool);
	}
	port->pool = NULL;
	port->rx_pool = NULL;
	rte_mempool_free(port->slabs);   /* after the device: its frames are all freed */
	port->slabs = NULL;
	free((void *)port->rss);
	port->rss = NULL;
}

int uiw_port_ringpair_create(const char *name, uint16_t nqueues, uint16_t *port_a, uint16_t *port_b)
{
	char rname[RTE_RING_NAMESIZE], pname[64];
	struct rte_ring *ab[UIW_MAX_ENGINES] = { NULL }, *ba[UIW_MAX_ENGINES] = { NULL };
	int a, b;

	if (nqueues == 0 || nqueues > UIW_MAX_ENGINES)
		return -1;
	/* One ring each way per queue pair: queue q of A sends to queue q of B. */
	for (uint16_t q = 0; q < nqueues; q++) {
		snprintf(rname, sizeof(rname), "%s_ab%u", name, q);
		ab[q] = rte_ring_create(rname, 4096, SOCKET_ID_ANY, RING_F_SP_ENQ | RING_F_SC_DEQ);
		snprintf(rname, sizeof(rname), "%s_ba%u", name, q);
		ba[q] = rte_ring_create(rname, 4096, SOCKET_ID_ANY, RING_F_SP_ENQ | RING_F_SC_DEQ);
		if (ab[q] == NULL || ba[q] == NULL) {
			UIW_ERR("ring pair %s: cannot create rings: %s", name, rte_strerror(rte_errno));
			goto fail;
		}
	}
	/* A receives what B sends and the other way round. */
	snprintf(pname, sizeof(pname), "%s_a", name);
	a = rte_eth_from_rings(pname, ba, nqueues, ab, nqueues, SOCKET_ID_ANY);
	snprintf(pname, sizeof(pname), "%s_b", name);
	b = rte_eth_from_rings(pname, ab, nqueues, ba, nqueues, SOCKET_ID_ANY);
	if (a < 0 || b < 0) {
		UIW_ERR("ring pair %s: cannot create ports: %s", name, rte_strerror(rte_errno));
		goto fail;
	}
	*port_a = (uint16_t)a;
	*port_b = (uint16_t)b;
	return 0;
fail:
	for (uint16_t q = 0; q < nqueues; q++) {
		rte_ring_free(ab[q]);
		rte_ring_free(ba[q]);
	}
	return -1;
}

void uiw_port_init_test(struct uiw_port *port, struct rte_mempool *pool,
			const struct rte_ether_addr *mac, uint16_t mtu, uiw_burst_fn rx_burst,
			uiw_burst_fn tx_burst, void *user)
{
	memset(port, 0, sizeof(*port));
	port->port_id = UIW_PORT_NONE;
	port->link = -1;
	port->pool = pool;
	port->mac = *mac;
	port->mtu = mtu;
	port->rx_burst = rx_burst;
	port->tx_burst = tx_burst;
	port->user = user;
	port->nqueues = 1;
	snprintf(port->name, sizeof(port->name), "test");
}

/* A full ring drains at line rate: 20 us frees a few hundred slots of a memif ring. */
#define TX_RETRY_NS (20 * 1000ull)

void uiw_port_drop_external(struct uiw_port *port)
{
	uint16_t keep = 0;

	if (port->tx_n == 0)
		return;
	port->tx_retry_ns = 0;
	uiw_port_flush(port);
	for (uint16_t i = 0; i < port->tx_n; i++) {
		if (uiw_mbuf_has_lent(port->tx_buf[i])) {
			rte_pktmbuf_free(port->tx_buf[i]);
			port->counters[UIW_PORT_C_tx_drop_lent]++;
		} else {
			port->tx_buf[keep++] = port->tx_buf[i];
		}
	}
	port->tx_n = keep;
}

/*
 * What the PMD must do to a frame before it takes it (rte_eth_tx_prepare): the checksum
 * offloads' fields as the NIC wants them. virtio-net's host (Linux's tap, vhost-net) wants
 * a TSO frame's pseudo-header sum with the length in it, where DPDK's convention leaves it
 * out; without this every TSO frame reached the wire with bad checksums. A frame the PMD
 * refuses outright is dropped and counted. @return the frames left in port->tx_buf.
 */
static uint16_t tx_prepare(struct uiw_port *port, uint16_t n)
{
	uint16_t ok;

	while (n > 0 && (ok = rte_eth_tx_prepare(port->port_id, port->queue, port->tx_buf, n)) < n) {
		if (port->counters[UIW_PORT_C_tx_drop_prepare]++ == 0)
			UIW_WARN("port %s: the PMD refused to prepare a frame for its offloads (%s): "
				 "dropped (port.tx_drop_prepare)", port->name, rte_strerror(rte_errno));
		rte_pktmbuf_free(port->tx_buf[ok]);
		memmove(port->tx_buf + ok, port->tx_buf + ok + 1,
			(size_t)(n - ok - 1) * sizeof(port->tx_buf[0]));
		n--;
	}
	port->tx_n = n;
	return n;
}

uint16_t uiw_port_flush_queued(struct uiw_port *port)
{
	uint16_t n = port->tx_n, sent;
	uint32_t len[UIW_PORT_TX_BUF];

	if (port->tx_prepare && n > 0)
		n = tx_prepare(port, n);
	if (n == 0 && port->fault == NULL)
		return 0;
	/* A ring that took nothing is offered the frames again after a pause, not on every
	 * pass: a peer that stopped draining frees no room in the meantime. */
	if (port->tx_retry_ns != 0 && n > 0 && port->fault == NULL && uiw_now_ns() < port->tx_retry_ns)
		return 0;
	port->tx_retry_ns = 0;
	/* Lengths first: once the PMD has a frame, it may already be freed or received. */
	for (uint16_t i = 0; i < n; i++)
		len[i] = port->tx_buf[i]->pkt_len;
	sent = port->tx_burst(port, port->tx_buf, n);
	for (uint16_t i = 0; i < sent; i++)
		port->counters[UIW_PORT_C_tx_bytes] += len[i];
	port->counters[UIW_PORT_C_tx_packets] += sent;
	port->counters[UIW_PORT_C_tx_bursts] += sent != 0;
	/* Frames the PMD did not take stay, in order, for the next flush, unless its link is
	 * down (then nothing will take them: dropped, as TCP's timers expect of a dead link). */
	if (sent == 0 && n > 0 && port->port_id != UIW_PORT_NONE) {
		struct rte_eth_link link;

		if (rte_eth_link_get_nowait(port->port_id, &link) == 0 &&
		    link.link_status == RTE_ETH_LINK_DOWN) {
			for (uint16_t i = 0; i < n; i++)
				rte_pktmbuf_free(port->tx_buf[i]);
			port->counters[UIW_PORT_C_tx_drop_full] += n;
			port->tx_n = 0;
			return 0;
		}
		port->tx_retry_ns = uiw_now_ns() + TX_RETRY_NS;
	}
	if (sent < n) {
		port->counters[UIW_PORT_C_tx_busy] += (uint64_t)(n - sent);
		memmove(port->tx_buf, port->tx_buf + sent, (size_t)(n - sent) * sizeof(port->tx_buf[0]));
	}
	port->tx_n = (uint16_t)(n - sent);
	return sent;
}
