// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * csdk_agent.c - agent queue pairs of csd.ko: an I/O queue pair of the drive whose queues,
 * doorbells and data buffers lie in a region of the configured peer's BAR, for an agent
 * outside the guest (a host process or a GPU kernel mapping that BAR's memory) to drive
 * with no interrupt and no MMIO doorbell write. The drive polls the pair's shadow
 * doorbells (QEMU's agent-poll-us; the vendor admin command CSD Agent Queue, C8h, marks
 * the pair and confines its commands' data to the region).
 *
 * An agent's commands bypass this module: no partition, SLM allocation or program slot
 * of a tenant applies to them, so only CAP_SYS_ADMIN may create a pair (docs/kmod.md).
 * Queue identifiers are taken above the ones nvme-core uses (ctrl->queue_count), and a
 * pair is deleted when its file is closed, but never one nvme-core may be using.
 */
#include <linux/capability.h>
#include <linux/dma-mapping.h>
#include <linux/io.h>
#include <linux/module.h>
#include <linux/overflow.h>
#include <linux/pci.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "csdk.h"

#define CSD_ADM_AGENT_QUEUE 0xc8 /* QEMU's CSD Agent Queue (csd-agent.c.inc) */
#define CSD_AGENT_MAX_DEPTH 1024
#define CSD_AGENT_QIDS 32 /* qids tried above nvme-core's */

struct csdk_agent {
	struct list_head node; /* in the file's list, and ... */
	struct list_head all;  /* ... in csdk_agents_all */
	struct csdk_dev *cd;
	u16 qid;
	dma_addr_t bus;
	u64 len;
};

static DEFINE_MUTEX(csdk_agent_lock); /* csdk_agents_all and every file's list */
static LIST_HEAD(csdk_agents_all);

/* Whether another file's pair holds qid on cd's controller (csdk_agent_lock held). */
static bool csdk_agent_qid_taken(struct csdk_dev *cd, u16 qid)
{
	struct csdk_agent *a;

	list_for_each_entry(a, &csdk_agents_all, all)
		if (a->cd->ctrl == cd->ctrl && a->qid == qid)
			return true;
	return false;
}

/* Deletes I/O queue qid (opcode: Delete I/O SQ or CQ); 0, an NVMe status or -errno. */
static int csdk_agent_delete(struct csdk_dev *cd, u8 opcode, u16 qid)
{
	struct nvme_command c = {};

	c.delete_queue.opcode = opcode;
	c.delete_queue.qid = cpu_to_le16(qid);
	return csdk_submit(cd, true, &c, NULL, 0, NULL);
}

/* Deletes the pair's queues (unless nvme-core may have taken the qid since) and unmaps. */
static void csdk_agent_free(struct csdk_agent *a)
{
	struct csdk_dev *cd = a->cd;

	if (a->qid >= cd->ctrl->queue_count) {
		csdk_agent_delete(cd, nvme_admin_delete_sq, a->qid);
		csdk_agent_delete(cd, nvme_admin_delete_cq, a->qid);
	}
	dma_unmap_resource(cd->ctrl->dev, a->bus, a->len, DMA_BIDIRECTIONAL, 0);
	list_del(&a->all);
	list_del(&a->node);
	kfree(a);
}

/* Creates the CQ and SQ of qid and marks them the agent's; 0, an NVMe status or -errno. */
static int csdk_agent_create(struct csdk_dev *cd, struct csd_ioc_agent_queue *q, u16 qid,
			     dma_addr_t bus)
{
	struct nvme_command c = {};
	int ret;

	c.create_cq.opcode = nvme_admin_create_cq;
	c.create_cq.prp1 = cpu_to_le64(bus + q->cq_offset);
	c.create_cq.cqid = cpu_to_le16(qid);
	c.create_cq.qsize = cpu_to_le16(q->depth - 1);
	c.create_cq.cq_flags = cpu_to_le16(NVME_QUEUE_PHYS_CONTIG); /* no interrupt */
	ret = csdk_submit(cd, true, &c, NULL, 0, NULL);
	if (ret)
		return ret;
	memset(&c, 0, sizeof(c));
	c.create_sq.opcode = nvme_admin_create_sq;
	c.create_sq.prp1 = cpu_to_le64(bus + q->sq_offset);
	c.create_sq.sqid = cpu_to_le16(qid);
	c.create_sq.qsize = cpu_to_le16(q->depth - 1);
	c.create_sq.sq_flags = cpu_to_le16(NVME_QUEUE_PHYS_CONTIG | NVME_SQ_PRIO_MEDIUM);
	c.create_sq.cqid = cpu_to_le16(qid);
	ret = csdk_submit(cd, true, &c, NULL, 0, NULL);
	if (ret)
		goto del_cq;
	memset(&c, 0, sizeof(c));
	c.common.opcode = CSD_ADM_AGENT_QUEUE;
	c.common.dptr.prp1 = cpu_to_le64(bus + q->db_offset);
	c.common.cdw10 = cpu_to_le32(qid);
	c.common.cdw12 = cpu_to_le32(lower_32_bits(bus));
	c.common.cdw13 = cpu_to_le32(upper_32_bits(bus));
	c.common.cdw14 = cpu_to_le32(lower_32_bits(q->len));
	c.common.cdw15 = cpu_to_le32(upper_32_bits(q->len));
	ret = csdk_submit(cd, true, &c, NULL, 0, NULL);
	if (!ret)
		return 0;
	csdk_agent_delete(cd, nvme_admin_delete_sq, qid);
del_cq:
	csdk_agent_delete(cd, nvme_admin_delete_cq, qid);
	return ret;
}

/* Zeroes the region's queues and doorbell block through a mapping of the peer's BAR. */
static int csdk_agent_clear(u64 phys, u64 bytes)
{
	void __iomem *p = ioremap(phys, bytes);

	if (!p)
		return -ENOMEM;
	memset_io(p, 0, bytes);
	iounmap(p);
	return 0;
}

int csdk_ioc_agent_queue(struct csdk_file *cf, void __user *argp)
{
	struct csdk_dev *cd = cf->cd;
	struct device *dma_dev = cd->ctrl->dev;
	struct csd_ioc_agent_queue q;
	u64 base, start, end, phys, last;
	struct pci_dev *peer;
	struct csdk_agent *a;
	dma_addr_t bus;
	int ret, i;

	if (!capable(CAP_SYS_ADMIN))
		return -EPERM;
	if (copy_from_user(&q, argp, sizeof(q)))
		return -EFAULT;
	if (q.depth < 2 || q.depth > CSD_AGENT_MAX_DEPTH || !q.len || q.len % PAGE_SIZE ||
	    q.bar_offset % PAGE_SIZE || q.reserved || q.reserved2)
		return -EINVAL;
	q.sq_offset = 0;
	q.cq_offset = PAGE_ALIGN((u64)q.depth * sizeof(struct nvme_command));
	q.db_offset = q.cq_offset + PAGE_ALIGN((u64)q.depth * sizeof(struct nvme_completion));
	q.data_offset = q.db_offset + PAGE_SIZE;
	if (q.len <= q.data_offset)
		return -EINVAL;
	peer = csdk_p2p_peer(&base, &start, &end);
	if (!peer)
		return -EPERM; /* no peer configured by the administrator */
	ret = -EPERM;
	if (check_add_overflow(base, q.bar_offset, &phys) ||
	    check_add_overflow(phys, q.len, &last) || phys < start || last > end)
		goto out_peer;
	a = kzalloc(sizeof(*a), GFP_KERNEL);
	ret = -ENOMEM;
	if (!a)
		goto out_peer;
	ret = csdk_agent_clear(phys, q.data_offset);
	if (ret)
		goto out_free;
	bus = dma_map_resource(dma_dev, phys, q.len, DMA_BIDIRECTIONAL, 0);
	ret = -ENOMEM;
	if (dma_mapping_error(dma_dev, bus))
		goto out_free;

	mutex_lock(&csdk_agent_lock);
	ret = NVME_SC_QID_INVALID;
	for (i = 0; i < CSD_AGENT_QIDS && (ret & 0x7ff) == NVME_SC_QID_INVALID; i++) {
		u16 qid = cd->ctrl->queue_count + i;

		if (csdk_agent_qid_taken(cd, qid))
			continue;
		ret = csdk_agent_create(cd, &q, qid, bus);
		if (!ret)
			q.qid = qid;
	}
	if (!ret) {
		if (!cf->agents) {
			cf->agents = kmalloc(sizeof(*cf->agents), GFP_KERNEL);
			if (cf->agents)
				INIT_LIST_HEAD(cf->agents);
		}
		if (!cf->agents) {
			csdk_agent_delete(cd, nvme_admin_delete_sq, q.qid);
			csdk_agent_delete(cd, nvme_admin_delete_cq, q.qid);
			ret = -ENOMEM;
		}
	}
	if (ret) {
		mutex_unlock(&csdk_agent_lock);
		dma_unmap_resource(dma_dev, bus, q.len, DMA_BIDIRECTIONAL, 0);
		kfree(a);
		pci_dev_put(peer);
		if (ret < 0)
			return ret;
		q.status = ret; /* the drive refused: no queue pair */
		q.qid = 0;
		return copy_to_user(argp, &q, sizeof(q)) ? -EFAULT : 0;
	}
	a->cd = cd;
	a->qid = q.qid;
	a->bus = bus;
	a->len = q.len;
	list_add(&a->all, &csdk_agents_all);
	list_add(&a->node, cf->agents);
	mutex_unlock(&csdk_agent_lock);
	pci_dev_put(peer);

	q.bus_addr = bus;
	q.nsid = cd->ns->head->ns_id;
	q.lba_size = 1U << cd->ns->head->lba_shift;
	q.status = 0;
	if (copy_to_user(argp, &q, sizeof(q))) {
		mutex_lock(&csdk_agent_lock);
		csdk_agent_free(a);
		mutex_unlock(&csdk_agent_lock);
		return -EFAULT;
	}
	dev_info(&cd->dev, "agent queue pair %u, %u entries, in the peer at 0x%llx + %llu\n",
		 q.qid, q.depth, (unsigned long long)phys, (unsigned long long)q.len);
	return 0;

out_free:
	kfree(a);
out_peer:
	pci_dev_put(peer);
	return ret;
}

void csdk_agents_release(struct csdk_file *cf)
{
	struct csdk_agent *a, *next;

	if (!cf->agents)
		return;
	mutex_lock(&csdk_agent_lock);
	list_for_each_entry_safe(a, next, cf->agents, node)
		csdk_agent_free(a);
	mutex_unlock(&csdk_agent_lock);
	kfree(cf->agents);
	cf->agents = NULL;
}
