/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * csdk.h - what the parts of csd.ko share: the device and file state, command submission
 * (csdk_core.c), SLM allocations and their translation (csdk_slm.c), peer-to-peer delivery
 * (csdk_p2p.c).
 */
#ifndef _CSDK_H
#define _CSDK_H

#include <linux/cdev.h>
#include <linux/device.h>
#include <linux/nvme.h>
#include <linux/rwsem.h>
#include <linux/uidgid.h>

#include "nvme.h" /* nvme-core's private header, from Debian's linux-source of this kernel */
#include "csd_spec.h" /* the command set's wire format (spec/ in the source tree) */
#include "uapi/csd_ioctl.h"

#define CSD_CHUNK (256 * 1024) /* bytes per SLM Write/Read and namespace I/O command */

struct csdk_dev;

struct csdk_file {
	struct csdk_dev *cd;
	struct rw_semaphore free_sem; /* CSD_IOC_FREE waits for this file's commands */
	kuid_t uid; /* the opener's filesystem uid: the tenant its program quotas count */
	u64 part_start; /* this file's LBA partition (csdk_partition.c) */
	u64 part_lbas;
	u32 lba_shift; /* the namespace's LBA size when the partition was set, log2 */
	int p2p_ok; /* 1: [p2p_start, p2p_end) of the peer's BAR may receive; else -errno */
	u64 p2p_start;
	u64 p2p_end;
	struct list_head *agents; /* this file's agent queue pairs (csdk_agent.c), or NULL */
};

/* Sets the file's LBA partition for the opener: 0, -EACCES or -EINVAL (bad parameter). */
int csdk_partition_open(struct csdk_file *cf, u64 ns_lbas);

/*
 * The opener's entry in a tenant list (`uid:N=FIRST+COUNT,gid:N=FIRST+COUNT,...`, the
 * first entry naming its filesystem uid or one of its groups): 1 with its range in
 * [*first, *first + *count), 0 if none matches (*any: whether the list has entries), or
 * -EINVAL (with a kernel message naming `what`) for a malformed entry, one outside
 * [lo, hi), or, with disjoint, one that overlaps another.
 */
int csdk_tenant_entry(char *const *list, const char *what, u64 lo, u64 hi, bool disjoint,
		      u64 *first, u64 *count, bool *any);

/* Sets the file's peer-to-peer window for the opener (csdk_p2p.c). */
void csdk_p2p_open(struct csdk_file *cf);

/* Whether [slba, slba + nlb) is inside the file's partition; its namespace LBA in *abs. */
static inline bool csdk_lba_range(const struct csdk_file *cf, u64 slba, u64 nlb, u64 *abs)
{
	if (slba > cf->part_lbas || nlb > cf->part_lbas - slba)
		return false;
	*abs = cf->part_start + slba;
	return true;
}

struct csdk_alloc {
	struct list_head node; /* in csdk_dev.allocs, sorted by offset */
	u64 off;
	u64 len;
	u32 handle;
	struct csdk_file *owner;
	bool ready; /* zeroed: only then can its handle address SLM */
};

/*
 * A downloadable program slot as csd.ko sees it. Every command on the slot (each chunk of
 * a Program Load, Program Unload, Execute) is sent with sem held, write for Load and
 * Unload, read for Execute, by a file that owns the slot; owner changes only with sem held
 * for write, so an owner checked under sem stays the owner until the command completes.
 */
struct csdk_slot {
	struct rw_semaphore sem;
	struct csdk_file *owner; /* the file that loaded (or is loading) it; programs_lock */
	u32 loading; /* image bytes of its upload in progress, 0 when none; programs_lock */
};

struct csdk_dev {
	struct device dev;
	struct cdev cdev;
	int minor;
	struct file *ctrl_file;
	struct nvme_ctrl *ctrl;
	struct nvme_ns *ns;
	u8 *caps; /* the capabilities log page, read at attach */
	u64 slm_size;
	u32 compute_units;
	u32 nr_programs;
	u32 features; /* C0h features (CSD_FEATURE_*) */
	struct mutex lock; /* allocs, next_handle */
	struct list_head allocs;
	u32 next_handle;
	atomic64_t p2p_bytes; /* delivered to the peer by peer-to-peer SLM Reads */
	struct mutex programs_lock; /* slots[].owner and .loading */
	struct csdk_slot slots[CSD_NR_SLOTS];
};

/* Fills an NVMe command with an opcode, NSID and CDW10..14. */
void csdk_cmd(struct nvme_command *c, u8 opcode, u32 nsid, u32 cdw10, u32 cdw11,
	      u32 cdw12, u32 cdw13, u32 cdw14);

/* Sends one command; returns 0, a positive NVMe status, or a negative errno. */
int csdk_submit(struct csdk_dev *cd, bool admin, struct nvme_command *c, void *buf,
		unsigned int len, u64 *result);

/* Sends one I/O command whose data is the caller's user buffer; *result (may be NULL)
 * receives completion Dwords 0 and 1.
 */
int csdk_submit_user(struct csdk_dev *cd, struct nvme_command *c, void __user *ubuf,
		     unsigned int len, u64 *result);

/* Reads a log page of the command set into page (csd_log_page_size(lid) bytes). */
int csdk_get_log(struct csdk_dev *cd, u8 lid, void *page);

/* Registers the class and attaches every CSD controller, its nodes opened with fops. */
int csdk_attach_all(const struct file_operations *fops);
/* Detaches every controller and unregisters the class. */
void csdk_detach_all(void);

/* Absolute SLM offset of [offset, offset + len) in one of cf's allocations. */
int csdk_translate(struct csdk_file *cf, u32 handle, u64 offset, u64 len, u64 *abs);
/* CSD_IOC_ALLOC: a new allocation of cf, cleared, its handle in req->handle. */
int csdk_alloc(struct csdk_file *cf, struct csd_ioc_alloc *req);
/* Frees one allocation of cf (handle) or, with all, every allocation of cf. */
int csdk_free(struct csdk_file *cf, u32 handle, bool all);
/* SLM no allocation holds. */
u64 csdk_free_bytes(struct csdk_dev *cd);
/* CSD_IOC_PROGRAM_LOAD / _UNLOAD: downloadable programs, owned by the file that loaded them. */
int csdk_ioc_program_load(struct csdk_file *cf, void __user *argp);
int csdk_ioc_program_unload(struct csdk_file *cf, void __user *argp);
/*
 * Before cf sends an Execute of program id: for a slot, holds it (read) if cf owns it, so
 * that it can be neither unloaded nor replaced until csdk_program_put. 0, -EPERM (another
 * file's slot, or an empty one) or -EINTR. Device-defined programs need nothing.
 */
int csdk_program_get(struct csdk_file *cf, u16 id);
/* After the Execute of program id that csdk_program_get allowed. */
void csdk_program_put(struct csdk_file *cf, u16 id);
/* Unloads every program cf loaded (its file is being closed). */
void csdk_programs_release(struct csdk_file *cf);

/* CSD_IOC_P2P_READ: an SLM Read into the configured window of the peer's BAR. */
int csdk_ioc_p2p(struct csdk_file *cf, void __user *argp);
/*
 * The configured peer (referenced; pci_dev_put it), its BAR's physical address in *base
 * and the administrator's window of it as physical addresses [*start, *end), or NULL if
 * none is configured.
 */
struct pci_dev *csdk_p2p_peer(u64 *base, u64 *start, u64 *end);

/* CSD_IOC_AGENT_QUEUE: a queue pair in the peer's BAR for an agent (csdk_agent.c). */
int csdk_ioc_agent_queue(struct csdk_file *cf, void __user *argp);
/* Deletes the agent queue pairs of a file being closed. */
void csdk_agents_release(struct csdk_file *cf);

#endif /* _CSDK_H */
