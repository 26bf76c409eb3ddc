/* SPDX-License-Identifier: BSD-3-Clause */
#include "uiw_pci.h"

#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* @p out = @p dir + "/" + @p leaf. @return false when it would not fit. */
static bool join(char *out, size_t len, const char *dir, const char *leaf)
{
	int n = snprintf(out, len, "%s/%s", dir, leaf);

	return n > 0 && (size_t)n < len;
}

/* @p src into @p dst, cut to fit. */
static void copy_name(char *dst, size_t len, const char *src)
{
	size_t n = strlen(src);

	if (n >= len)
		n = len - 1;
	memcpy(dst, src, n);
	dst[n] = '\0';
}

static bool exists(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0;
}

/* The name of the driver @p dev is bound to, or "" for none. */
static void driver_of(const char *dev, char *name, size_t len)
{
	char link[PATH_MAX], target[PATH_MAX];
	ssize_t n;
	const char *base;

	name[0] = '\0';
	if (!join(link, sizeof(link), dev, "driver"))
		return;
	n = readlink(link, target, sizeof(target) - 1);
	if (n <= 0)
		return;
	target[n] = '\0';
	base = strrchr(target, '/');
	copy_name(name, len, base != NULL ? base + 1 : target);
}

/* The kernel's interface of @p dev (its net/ directory), or "" for none. */
static void netdev_of(const char *dev, char *name, size_t len)
{
	char path[PATH_MAX];
	DIR *d;
	const struct dirent *e;

	name[0] = '\0';
	if (!join(path, sizeof(path), dev, "net"))
		return;
	d = opendir(path);
	if (d == NULL)
		return;
	while ((e = readdir(d)) != NULL)
		if (e->d_name[0] != '.') {
			copy_name(name, len, e->d_name);
			break;
		}
	closedir(d);
}

/* 'Y' in a module's boolean parameter file. */
static bool param_on(const char *sysfs, const char *module, const char *param)
{
	char path[PATH_MAX];
	char c = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/module/%s/parameters/%s", sysfs, module, param);
	f = fopen(path, "r");
	if (f == NULL)
		return false;
	if (fread(&c, 1, 1, f) != 1)
		c = 0;
	fclose(f);
	return c == 'Y' || c == '1';
}

static int check_vfio(const char *sysfs, const char *dev, const char *addr, char *why, size_t len)
{
	char path[PATH_MAX];

	if (!join(path, sizeof(path), dev, "iommu_group") || !exists(path)) {
		if (param_on(sysfs, "vfio", "enable_unsafe_noiommu_mode"))
			return 0;
		snprintf(why, len, "PCI device %s is on vfio-pci but has no IOMMU group: turn the "
			 "IOMMU on (intel_iommu=on or amd_iommu=on on the kernel's command line), or "
			 "vfio's no-IOMMU mode (modprobe vfio enable_unsafe_noiommu_mode=1, where the "
			 "kernel has it), or bind it to uio_pci_generic instead", addr);
		return -1;
	}
	snprintf(path, sizeof(path), "%s/module/vfio_iommu_type1", sysfs);
	if (!exists(path)) {
		snprintf(why, len, "PCI device %s is on vfio-pci, but the vfio_iommu_type1 module "
			 "is not loaded (the EAL would find no IOMMU type): modprobe "
			 "vfio_iommu_type1", addr);
		return -1;
	}
	return 0;
}

int uiw_pci_check(const char *sysfs, const char *addr, bool hugepages, char *why, size_t len)
{
	char full[32], dev[PATH_MAX], drv[64], ifname[64];
	size_t n = strcspn(addr, ",");

	/* BB:DD.F is domain 0000. */
	snprintf(full, sizeof(full), "%s%.*s", strchr(addr, ':') == strrchr(addr, ':') ? "0000:" : "",
		 (int)(n < 24 ? n : 24), addr);
	snprintf(dev, sizeof(dev), "%s/bus/pci/devices/%s", sysfs, full);
	if (!exists(dev)) {
		snprintf(why, len, "no PCI device %s on this machine (lspci -D lists them)", full);
		return -1;
	}
	driver_of(dev, drv, sizeof(drv));
	if (drv[0] == '\0') {
		snprintf(why, len, "PCI device %s has no driver: bind it to vfio-pci (or "
			 "uio_pci_generic) first, as dpdk-devbind.py --bind=vfio-pci %s does", full, full);
		return -1;
	}
	if (strcmp(drv, "vfio-pci") == 0)
		return check_vfio(sysfs, dev, full, why, len);
	if (strcmp(drv, "uio_pci_generic") == 0 || strcmp(drv, "igb_uio") == 0) {
		if (hugepages)
			return 0;
		/* The NIC is given physical addresses (IOVA as PA): anonymous memory has no
		 * fixed ones, and the EAL runs without hugepages only in virtual addresses. */
		snprintf(why, len, "PCI device %s is on %s, which DMAs to physical addresses: that "
			 "needs hugepages (set hugepages=on and reserve them: echo 512 > "
			 "/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages; mount -t hugetlbfs "
			 "nodev /dev/hugepages), or bind it to vfio-pci", full, drv);
		return -1;
	}
	/* Bifurcated: the kernel driver stays and DPDK shares the NIC through it. */
	if (strcmp(drv, "mlx5_core") == 0 || strcmp(drv, "mlx4_core") == 0)
		return 0;
	netdev_of(dev, ifname, sizeof(ifname));
	snprintf(why, len, "PCI device %s is bound to the kernel driver '%s'%s%s%s: DPDK cannot "
		 "drive it while the kernel does; bind it to vfio-pci (dpdk-devbind.py "
		 "--bind=vfio-pci %s; the interface leaves the kernel)", full, drv,
		 ifname[0] != '\0' ? " (interface " : "", ifname, ifname[0] != '\0' ? ")" : "", full);
	return -1;
}
