// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * csdk_p2p.c - peer-to-peer delivery of csd.ko: SLM Reads straight into a window of one
 * BAR of the PCI device the administrator named, with PRPs built here and no host memory
 * buffer.
 *
 * The window is divided between tenants: p2p_windows gives each user or group its own
 * sub-window (`uid:N=OFFSET+BYTES,gid:N=OFFSET+BYTES`, BAR offsets inside the window,
 * entries disjoint), and a file may deliver only into its opener's (decided at open, as
 * for partitions). A user with no entry has none, unless it has CAP_SYS_ADMIN (then: the
 * whole window), so no tenant can overwrite what was delivered to another. The module
 * only ever writes into the peer: nothing here reads a window back.
 */
#include <linux/capability.h>
#include <linux/dma-mapping.h>
#include <linux/module.h>
#include <linux/overflow.h>
#include <linux/pci.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "csdk.h"

static char *p2p_peer;
module_param(p2p_peer, charp, 0444);
MODULE_PARM_DESC(p2p_peer, "PCI device (DDDD:BB:DD.F) that may receive peer-to-peer SLM Reads");
static unsigned int p2p_bar = 2;
module_param(p2p_bar, uint, 0444);
MODULE_PARM_DESC(p2p_bar, "the peer's memory BAR that may receive them (default 2)");
static unsigned long p2p_offset;
module_param(p2p_offset, ulong, 0444);
MODULE_PARM_DESC(p2p_offset, "start of the window of that BAR that may receive them (default 0)");
static unsigned long p2p_size;
module_param(p2p_size, ulong, 0444);
MODULE_PARM_DESC(p2p_size, "bytes of that window (default 0: to the BAR's end)");
static char *p2p_windows;
module_param(p2p_windows, charp, 0644);
MODULE_PARM_DESC(p2p_windows,
		 "tenants' disjoint sub-windows: uid:N=OFFSET+BYTES,gid:N=OFFSET+BYTES,... (default: none; then only CAP_SYS_ADMIN)");

void csdk_p2p_open(struct csdk_file *cf)
{
	u64 lo = p2p_offset, hi, first, count;
	bool any;
	int ret;

	if (!p2p_size || check_add_overflow(lo, (u64)p2p_size, &hi))
		hi = U64_MAX; /* to the BAR's end, checked at each transfer */

	ret = csdk_tenant_entry(&p2p_windows, "p2p_windows", lo, hi, true, &first, &count, &any);
	if (ret == 0 && capable(CAP_SYS_ADMIN)) {
		first = lo; /* the administrator: the whole window */
		count = hi - lo;
		ret = 1;
	}
	cf->p2p_ok = ret == 1 ? 1 : ret < 0 ? ret : -EPERM;
	cf->p2p_start = ret == 1 ? first : 0;
	cf->p2p_end = ret == 1 ? first + count : 0;
}

/*
 * Peer-to-peer: the peer's BAR is mapped for the NVMe controller's DMA
 * (dma_map_resource), the PRP entries are built here, and the command goes through
 * nvme-core with no data buffer, so the driver leaves the data pointer as set: the
 * drive writes into the peer's memory directly.
 */
#define CSD_P2P_CHUNK (512 * 1024) /* at most 128 pages: one PRP list page */

/* Where the peer's 4 KiB page `page` (from the transfer's start) is, for the drive. */
typedef dma_addr_t (*csdk_page_addr_t)(void *ctx, u64 page);

static dma_addr_t csdk_linear_page(void *ctx, u64 page)
{
	return *(dma_addr_t *)ctx + (page << PAGE_SHIFT);
}

/* One SLM Read of len bytes into the peer pages first.. first+len/4K, PRPs built here. */
static int csdk_p2p_chunk(struct csdk_dev *cd, struct device *dma_dev, u64 slm, u32 len,
			  csdk_page_addr_t addr, void *ctx, u64 first, __le64 *prp_list,
			 dma_addr_t prp_list_dma)
{
	struct nvme_command c;
	u32 pages = len >> PAGE_SHIFT, i;

	csdk_cmd(&c, CSD_OPC_SLM_READ, cd->ns->head->ns_id, lower_32_bits(slm), upper_32_bits(slm),
		 len, 0, 0);
	c.common.dptr.prp1 = cpu_to_le64(addr(ctx, first));
	if (pages == 2) {
		c.common.dptr.prp2 = cpu_to_le64(addr(ctx, first + 1));
	} else if (pages > 2) {
		for (i = 1; i < pages; i++)
			prp_list[i - 1] = cpu_to_le64(addr(ctx, first + i));
		dma_sync_single_for_device(dma_dev, prp_list_dma, PAGE_SIZE, DMA_TO_DEVICE);
		c.common.dptr.prp2 = cpu_to_le64(prp_list_dma);
	}
	return csdk_submit(cd, false, &c, NULL, 0, NULL);
}

/* Runs SLM Read chunks over [abs, abs + len) into the peer pages; counts p2p_bytes. */
static int csdk_p2p_run(struct csdk_dev *cd, struct device *dma_dev, u64 abs, u64 len,
			csdk_page_addr_t addr, void *ctx, u32 *status)
{
	dma_addr_t prp_dma;
	__le64 *prp_list = kzalloc(PAGE_SIZE, GFP_KERNEL);
	u64 done = 0;
	int ret = 0;

	if (!prp_list)
		return -ENOMEM;
	prp_dma = dma_map_single(dma_dev, prp_list, PAGE_SIZE, DMA_TO_DEVICE);
	if (dma_mapping_error(dma_dev, prp_dma)) {
		kfree(prp_list);
		return -ENOMEM;
	}
	*status = 0;
	while (done < len) {
		u32 n = min_t(u64, len - done, CSD_P2P_CHUNK);

		ret = csdk_p2p_chunk(cd, dma_dev, abs + done, n, addr, ctx, done >> PAGE_SHIFT,
				     prp_list, prp_dma);
		if (ret > 0) {
			*status = ret;
			ret = 0;
			break;
		}
		if (ret < 0)
			break;
		done += n;
		atomic64_add(n, &cd->p2p_bytes);
	}
	dma_unmap_single(dma_dev, prp_dma, PAGE_SIZE, DMA_TO_DEVICE);
	kfree(prp_list);
	return ret;
}

int csdk_ioc_p2p(struct csdk_file *cf, void __user *argp)
{
	struct csdk_dev *cd = cf->cd;
	struct device *dma_dev = cd->ctrl->dev; /* the NVMe controller's PCI device */
	unsigned int dom, bus, slot, fn;
	struct pci_dev *peer = NULL;
	struct csd_ioc_p2p p;
	dma_addr_t dst;
	u64 abs, end;
	int ret;

	if (copy_from_user(&p, argp, sizeof(p)))
		return -EFAULT;
	if (!p2p_peer || sscanf(p2p_peer, "%x:%x:%x.%x", &dom, &bus, &slot, &fn) != 4)
		return -EPERM; /* no peer configured by the administrator */
	if (!p.len || p.len % PAGE_SIZE || p.bar_offset % PAGE_SIZE || p.bar >= PCI_STD_NUM_BARS)
		return -EINVAL;
	ret = csdk_translate(cf, p.handle, p.offset, p.len, &abs);
	if (ret)
		return ret;
	peer = pci_get_domain_bus_and_slot(dom, bus, PCI_DEVFN(slot, fn));
	if (!peer)
		return -ENODEV;
	ret = -EINVAL;
	if (!(pci_resource_flags(peer, p.bar) & IORESOURCE_MEM) ||
	    check_add_overflow(p.bar_offset, p.len, &end) || end > pci_resource_len(peer, p.bar))
		goto out;
	/* only the BAR the administrator configured, and this file's window of it */
	ret = cf->p2p_ok < 0 ? cf->p2p_ok : -EPERM;
	if (cf->p2p_ok != 1 || p.bar != p2p_bar || p.bar_offset < cf->p2p_start ||
	    end > cf->p2p_end)
		goto out;
	dst = dma_map_resource(dma_dev, pci_resource_start(peer, p.bar) + p.bar_offset, p.len,
			       DMA_FROM_DEVICE, 0);
	ret = -ENOMEM;
	if (dma_mapping_error(dma_dev, dst))
		goto out;
	ret = csdk_p2p_run(cd, dma_dev, abs, p.len, csdk_linear_page, &dst, &p.status);
	dma_unmap_resource(dma_dev, dst, p.len, DMA_FROM_DEVICE, 0);
	if (!ret && copy_to_user(argp, &p, sizeof(p)))
		ret = -EFAULT;
out:
	pci_dev_put(peer);
	return ret;
}

struct pci_dev *csdk_p2p_peer(u64 *base, u64 *start, u64 *end)
{
	unsigned int dom, bus, slot, fn;
	struct pci_dev *peer;
	u64 hi;

	if (!p2p_peer || sscanf(p2p_peer, "%x:%x:%x.%x", &dom, &bus, &slot, &fn) != 4 ||
	    p2p_bar >= PCI_STD_NUM_BARS)
		return NULL;
	peer = pci_get_domain_bus_and_slot(dom, bus, PCI_DEVFN(slot, fn));
	if (!peer)
		return NULL;
	if (!(pci_resource_flags(peer, p2p_bar) & IORESOURCE_MEM)) {
		pci_dev_put(peer);
		return NULL;
	}
	if (!p2p_size || check_add_overflow((u64)p2p_offset, (u64)p2p_size, &hi))
		hi = U64_MAX;
	*base = pci_resource_start(peer, p2p_bar);
	*start = *base + min_t(u64, p2p_offset, pci_resource_len(peer, p2p_bar));
	*end = *base + min_t(u64, hi, pci_resource_len(peer, p2p_bar));
	return peer;
}
