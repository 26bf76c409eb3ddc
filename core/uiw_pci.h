/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What a PCI NIC needs before DPDK can drive it, checked in sysfs before the EAL starts, so
 * that a port that cannot come up says why (the EAL alone says only that no ethdev
 * appeared).
 */
#ifndef UIW_PCI_H
#define UIW_PCI_H

#include <stdbool.h>
#include <stddef.h>

/**
 * Checks the PCI function @p addr (DDDD:BB:DD.F or BB:DD.F) under the sysfs tree
 * @p sysfs ("/sys" but in tests): that it exists; that it is bound to a driver DPDK can
 * use (vfio-pci with an IOMMU group or vfio's no-IOMMU mode and vfio_iommu_type1 loaded;
 * uio_pci_generic or igb_uio with hugepages, which their physical addresses need; or
 * the bifurcated mlx4/mlx5 drivers); not to another kernel driver.
 * @p hugepages: whether the EAL will run on hugepages.
 * @return 0, or -1 with @p why (of @p len octets) saying what is wrong and what to do.
 */
int uiw_pci_check(const char *sysfs, const char *addr, bool hugepages, char *why, size_t len);

#endif
