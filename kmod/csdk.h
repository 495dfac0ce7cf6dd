/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * csd.h - what the parts of csd.ko share: the device and file state, command submission
 * and SLM address translation (csd_main.c), peer-to-peer delivery (csd_p2p.c).
 */
#ifndef _CSD_KMOD_H
#define _CSD_KMOD_H

#include <linux/cdev.h>
#include <linux/device.h>
#include <linux/nvme.h>
#include <linux/rwsem.h>
#include <linux/uidgid.h>

#include "nvme.h" /* nvme-core's private header, from Debian's linux-source of this kernel */
#include "csd_spec.h" /* the command set's wire format (spec/ in the source tree) */
#include "uapi/csd_ioctl.h"

#define CSD_CHUNK (256 * 1024) /* bytes per SLM Write/Read and namespace I/O command */

struct csd_dev;

struct csd_file {
	struct csd_dev *cd;
	struct rw_semaphore free_sem; /* CSD_IOC_FREE waits for this file's commands */
	kuid_t uid; /* the opener's filesystem uid: the tenant its program quotas count */
	u64 part_start; /* this file's LBA partition (csd_partition.c) */
	u64 part_lbas;
	u32 lba_shift; /* the namespace's LBA size when the partition was set, log2 */
	int p2p_ok; /* 1: [p2p_start, p2p_end) of the peer's BAR may receive; else -errno */
	u64 p2p_start;
	u64 p2p_end;
};

/* Sets the file's LBA partition for the opener: 0, -EACCES or -EINVAL (bad parameter). */
int csd_partition_open(struct csd_file *cf, u64 ns_lbas);

/*
 * The opener's entry in a tenant list (`uid:N=FIRST+COUNT,gid:N=FIRST+COUNT,...`, the
 * first entry naming its filesystem uid or one of its groups): 1 with its range in
 * [*first, *first + *count), 0 if none matches (*any: whether the list has entries), or
 * -EINVAL (with a kernel message naming `what`) for a malformed entry, one outside
 * [lo, hi), or, with disjoint, one that overlaps another.
 */
int csd_tenant_entry(char *const *list, const char *what, u64 lo, u64 hi, bool disjoint,
		     u64 *first, u64 *count, bool *any);

/* Sets the file's peer-to-peer window for the opener (csd_p2p.c). */
void csd_p2p_open(struct csd_file *cf);

/* Whether [slba, slba + nlb) is inside the file's partition; its namespace LBA in *abs. */
static inline bool csd_lba_range(const struct csd_file *cf, u64 slba, u64 nlb, u64 *abs)
{
	if (slba > cf->part_lbas || nlb > cf->part_lbas - slba)
		return false;
	*abs = cf->part_start + slba;
	return true;
}

struct csd_alloc {
	struct list_head node; /* in csd_dev.allocs, sorted by offset */
	u64 off;
	u64 len;
	u32 handle;
	struct csd_file *owner;
	bool ready; /* zeroed: only then can its handle address SLM */
};

/*
 * A downloadable program slot as csd.ko sees it. Every command on the slot (each chunk of
 * a Program Load, Program Unload, Execute) is sent with sem held, write for Load and
 * Unload, read for Execute, by a file that owns the slot; owner changes only with sem held
 * for write, so an owner checked under sem stays the owner until the command completes.
 */
struct csd_slot {
	struct rw_semaphore sem;
	struct csd_file *owner; /* the file that loaded (or is loading) it; programs_lock */
	u32 loading; /* image bytes of its upload in progress, 0 when none; programs_lock */
};

struct csd_dev {
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
	struct csd_slot slots[CSD_NR_SLOTS];
};

/* Fills an NVMe command with an opcode, NSID and CDW10..14. */
void csd_cmd(struct nvme_command *c, u8 opcode, u32 nsid, u32 cdw10, u32 cdw11,
	     u32 cdw12, u32 cdw13, u32 cdw14);

/* Sends one command; returns 0, a positive NVMe status, or a negative errno. */
int csd_submit(struct csd_dev *cd, bool admin, struct nvme_command *c, void *buf,
	       unsigned int len, u64 *result);

/* Sends one I/O command whose data is the caller's user buffer; *result (may be NULL)
 * receives completion Dwords 0 and 1.
 */
int csd_submit_user(struct csd_dev *cd, struct nvme_command *c, void __user *ubuf,
		    unsigned int len, u64 *result);

/* Absolute SLM offset of [offset, offset + len) in one of cf's allocations. */
int csd_translate(struct csd_file *cf, u32 handle, u64 offset, u64 len, u64 *abs);

/* Sets up a device's slot table (at attach). */
void csd_programs_init(struct csd_dev *cd);
/* CSD_IOC_PROGRAM_LOAD / _UNLOAD: downloadable programs, owned by the file that loaded them. */
int csd_ioc_program_load(struct csd_file *cf, void __user *argp);
int csd_ioc_program_unload(struct csd_file *cf, void __user *argp);
/*
 * Before cf sends an Execute of program id: for a slot, holds it (read) if cf owns it, so
 * that it can be neither unloaded nor replaced until csd_program_put. 0, -EPERM (another
 * file's slot, or an empty one) or -EINTR. Device-defined programs need nothing.
 */
int csd_program_get(struct csd_file *cf, u16 id);
/* After the Execute of program id that csd_program_get allowed. */
void csd_program_put(struct csd_file *cf, u16 id);
/* Unloads every program cf loaded (its file is being closed). */
void csd_programs_release(struct csd_file *cf);

/* CSD_IOC_P2P_READ: an SLM Read into the configured window of the peer's BAR. */
int csd_ioc_p2p(struct csd_file *cf, void __user *argp);

#endif /* _CSD_KMOD_H */
