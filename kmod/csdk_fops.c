// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * csdk_fops.c - /dev/csd<N>'s file operations: open (the opener's partition and peer
 * window), the ioctls (SLM transfers, SLM Load/Store, NVM I/O, Execute, logs, and those of
 * csdk_slm.c, csdk_programs.c and csdk_p2p.c), release; and the module's entry, which
 * attaches every CSD controller with them (csdk_core.c).
 */
#include <linux/cdev.h>
#include <linux/cred.h>
#include <linux/device.h>
#include <linux/fs.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/overflow.h>
#include <linux/rwsem.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/unaligned.h>

#include "csdk.h"

static int csdk_ioc_xfer(struct csdk_file *cf, void __user *argp, bool to_slm)
{
	struct csd_ioc_xfer x;
	struct nvme_command c;
	u64 abs, done = 0;
	int ret = 0;

	if (copy_from_user(&x, argp, sizeof(x)))
		return -EFAULT;
	if (!x.len || x.len % 4 || x.offset % 4)
		return -EINVAL;
	ret = csdk_translate(cf, x.handle, x.offset, x.len, &abs);
	if (ret)
		return ret;
	x.status = 0;
	while (done < x.len) {
		u32 n = min_t(u64, x.len - done, CSD_CHUNK);

		csdk_cmd(&c, to_slm ? CSD_OPC_SLM_WRITE : CSD_OPC_SLM_READ, cf->cd->ns->head->ns_id,
			 lower_32_bits(abs + done), upper_32_bits(abs + done), n, 0, 0);
		ret = csdk_submit_user(cf->cd, &c, u64_to_user_ptr(x.buf + done), n, NULL);
		if (ret > 0) {
			x.status = ret;
			ret = 0;
			break;
		}
		if (ret < 0)
			break;
		done += n;
	}
	if (!ret && copy_to_user(argp, &x, sizeof(x)))
		ret = -EFAULT;
	return ret;
}

/*
 * Whether the namespace was formatted to another LBA size since the file was opened: its
 * partition, counted in LBAs of the old size, would name other bytes now (found by an
 * outside review: a tenant gathered another's partition). Such a file gets Invalid
 * Namespace or Format for every command that names LBAs; opened anew, it is right again.
 */
static bool csdk_format_changed(const struct csdk_file *cf)
{
	return cf->lba_shift != cf->cd->ns->head->lba_shift;
}

static int csdk_ioc_lba(struct csdk_file *cf, void __user *argp, bool store)
{
	struct csdk_dev *cd = cf->cd;
	struct csd_ioc_lba l;
	struct nvme_command c;
	u64 abs, bytes, lba;
	int ret;

	if (copy_from_user(&l, argp, sizeof(l)))
		return -EFAULT;
	if (!l.nlb || l.nlb > 65536)
		return -EINVAL;
	bytes = (u64)l.nlb << cd->ns->head->lba_shift;
	ret = csdk_translate(cf, l.handle, l.offset, bytes, &abs);
	if (ret)
		return ret;
	if (csdk_format_changed(cf)) {
		l.status = CSD_STATUS_INVALID_NAMESPACE | CSD_STATUS_DNR;
		return copy_to_user(argp, &l, sizeof(l)) ? -EFAULT : 0;
	}
	if (!csdk_lba_range(cf, l.slba, l.nlb, &lba)) {
		/* outside this file's partition: as the drive answers past its end */
		l.status = CSD_STATUS_LBA_OUT_OF_RANGE | CSD_STATUS_DNR;
		return copy_to_user(argp, &l, sizeof(l)) ? -EFAULT : 0;
	}
	csdk_cmd(&c, store ? CSD_OPC_SLM_STORE : CSD_OPC_SLM_LOAD, cd->ns->head->ns_id,
		 lower_32_bits(lba), upper_32_bits(lba), l.nlb - 1, lower_32_bits(abs),
		upper_32_bits(abs));
	ret = csdk_submit(cd, false, &c, NULL, 0, NULL);
	if (ret < 0)
		return ret;
	l.status = ret;
	return copy_to_user(argp, &l, sizeof(l)) ? -EFAULT : 0;
}

/*
 * CDW12's protection information bits (upper half) for an NVM Read or Write of the
 * namespace: with protection information alone as its metadata (a separate buffer, 16-bit
 * guard), the controller makes it on a Write and checks and strips it on a Read (PRACT,
 * the guard, and but for type 3 the reference tag: ILBRT is the LBA's low 32 bits), as for
 * the kernel's own I/O without an integrity buffer; no metadata: 0. Other metadata, which
 * this module does not move: -EOPNOTSUPP (the caller answers Invalid Namespace or Format).
 */
static int csdk_prinfo(const struct nvme_ns_head *head, u16 *control)
{
	*control = 0;
	if (!head->ms)
		return 0;
	if (!head->pi_type || head->ms != head->pi_size || (head->features & NVME_NS_EXT_LBAS) ||
	    head->guard_type != NVME_NVM_NS_16B_GUARD)
		return -EOPNOTSUPP;
	*control = NVME_RW_PRINFO_PRACT | NVME_RW_PRINFO_PRCHK_GUARD;
	if (head->pi_type != NVME_NS_DPS_PI_TYPE3)
		*control |= NVME_RW_PRINFO_PRCHK_REF;
	return 0;
}

static int csdk_ioc_ns_io(struct csdk_file *cf, void __user *argp)
{
	struct csdk_dev *cd = cf->cd;
	u32 shift = cd->ns->head->lba_shift;
	struct csd_ioc_ns_io r;
	struct nvme_command c;
	u64 done = 0, bytes, last, first;
	u16 control = 0;
	int ret = 0;

	if (copy_from_user(&r, argp, sizeof(r)))
		return -EFAULT;
	r.status = 0;
	if (r.write > CSD_NS_IO_COMPARE_WRITE)
		return -EINVAL;
	/* an NVM Read or Write of metadata this module does not move: refused */
	if (r.nlb && r.write != CSD_NS_IO_COMPARE_WRITE && csdk_prinfo(cd->ns->head, &control)) {
		r.status = CSD_STATUS_INVALID_NAMESPACE | CSD_STATUS_DNR;
		return copy_to_user(argp, &r, sizeof(r)) ? -EFAULT : 0;
	}
	if (csdk_format_changed(cf)) {
		r.status = CSD_STATUS_INVALID_NAMESPACE | CSD_STATUS_DNR;
		return copy_to_user(argp, &r, sizeof(r)) ? -EFAULT : 0;
	}
	if (!r.nlb) { /* Flush */
		if (r.buf || r.write)
			return -EINVAL;
		csdk_cmd(&c, nvme_cmd_flush, cd->ns->head->ns_id, 0, 0, 0, 0, 0);
		ret = csdk_submit(cd, false, &c, NULL, 0, NULL);
	} else {
		if (!r.buf || r.nlb > (U64_MAX >> shift) ||
		    check_add_overflow(r.slba, r.nlb, &last))
			return -EINVAL;
		bytes = r.nlb << shift;
		if (r.write == CSD_NS_IO_COMPARE_WRITE && bytes > CSD_CAW_MAX_BYTES)
			return -EINVAL;
		if (!csdk_lba_range(cf, r.slba, r.nlb, &first)) {
			/* outside this file's partition: as the drive answers past its end */
			r.status = CSD_STATUS_LBA_OUT_OF_RANGE | CSD_STATUS_DNR;
			return copy_to_user(argp, &r, sizeof(r)) ? -EFAULT : 0;
		}
		if (r.write == CSD_NS_IO_COMPARE_WRITE) {
			csdk_cmd(&c, CSD_OPC_COMPARE_WRITE, cd->ns->head->ns_id,
				 lower_32_bits(first), upper_32_bits(first), r.nlb - 1, 0, 0);
			ret = csdk_submit_user(cd, &c, u64_to_user_ptr(r.buf), 2 * bytes, NULL);
			bytes = 0;
		}
		while (done < bytes) {
			u32 n = min_t(u64, bytes - done, CSD_CHUNK);
			u64 slba = first + (done >> shift);

			csdk_cmd(&c, r.write ? nvme_cmd_write : nvme_cmd_read, cd->ns->head->ns_id,
				 lower_32_bits(slba), upper_32_bits(slba),
				((n >> shift) - 1) | (u32)control << 16, 0,
				control ? lower_32_bits(slba) : 0);
			ret = csdk_submit_user(cd, &c, u64_to_user_ptr(r.buf + done), n, NULL);
			if (ret)
				break;
			done += n;
		}
	}
	if (ret < 0)
		return ret;
	r.status = ret;
	return copy_to_user(argp, &r, sizeof(r)) ? -EFAULT : 0;
}

/* Whether a program may read the namespace itself: gather, embedding_bag, a downloaded chase. */
static bool csdk_program_reads_media(u16 id)
{
	return id == CSD_PROG_GATHER || id == CSD_PROG_EMBEDDING_BAG ||
	       (id >= CSD_SLOT_FIRST && id < CSD_SLOT_FIRST + CSD_NR_SLOTS);
}

/*
 * Execute: the caller's descriptor is parsed once, here at the trust boundary; each
 * range's offset, relative to the caller's allocation, is checked and rewritten in place
 * to the absolute SLM offset before the descriptor goes to the drive unchanged otherwise.
 * The LBAs a media program reads (gather entries, embedding_bag's table, a chase's hops)
 * live in SLM, which the tenant can rewrite at any time: the command carries the file's
 * partition as its LBA window (CDW11-15, spec section 10), which the drive enforces on
 * every read, so the program's LBAs are the tenant's own (LBA 0 = its partition's first).
 * A drive that does not honour the window (C0h features bit 1) runs no media program here.
 */
static int csdk_ioc_exec(struct csdk_file *cf, void __user *argp)
{
	struct csdk_dev *cd = cf->cd;
	struct csd_desc_header h;
	struct csd_ioc_exec e;
	struct nvme_command c;
	u64 result;
	u32 i;
	u8 *d = NULL;
	int ret;

	if (copy_from_user(&e, argp, sizeof(e)))
		return -EFAULT;
	e.dw0 = 0;
	e.dw1 = 0;
	e.status = 0;
	if (!e.desc_len || e.desc_len > CSD_MAX_DESC_LEN) {
		e.status = CSD_STATUS_INVALID_FIELD | CSD_STATUS_DNR; /* as the drive answers */
		goto done;
	}
	d = kmalloc(e.desc_len, GFP_KERNEL);
	if (!d)
		return -ENOMEM;
	ret = -EFAULT;
	if (copy_from_user(d, u64_to_user_ptr(e.desc), e.desc_len))
		goto out;
	e.status = csd_desc_parse(d, e.desc_len, CSD_MAX_RANGES, &h);
	if (e.status)
		goto done;
	for (i = 0; i < h.nr_ranges; i++) {
		struct csd_desc_range r = csd_desc_range_get(d, i);

		if (r.length) {
			ret = csdk_translate(cf, e.handle, r.offset, r.length, &r.offset);
			if (ret)
				goto out;
		} else {
			r.offset = 0;
		}
		csd_desc_range_set(d, i, r);
	}
	/* another tenant's downloaded program: EPERM; ours stays ours until it completes */
	if (csdk_format_changed(cf)) { /* its window would be in LBAs of another size */
		e.status = CSD_STATUS_INVALID_NAMESPACE | CSD_STATUS_DNR;
		goto done;
	}
	if (!(cd->features & CSD_FEATURE_LBA_WINDOW) && csdk_program_reads_media(h.program_id)) {
		dev_warn_ratelimited(&cd->dev, "program %04x reads media: drive has no LBA window\n",
				     h.program_id);
		e.status = CSD_STATUS_INVALID_FIELD | CSD_STATUS_DNR;
		goto done;
	}
	ret = csdk_program_get(cf, h.program_id);
	if (ret)
		goto out;
	csdk_cmd(&c, CSD_OPC_EXECUTE, cd->ns->head->ns_id, e.desc_len, CSD_EXEC_LBA_WINDOW,
		 lower_32_bits(cf->part_start), upper_32_bits(cf->part_start),
		lower_32_bits(cf->part_lbas));
	c.common.cdw15 = cpu_to_le32(upper_32_bits(cf->part_lbas));
	ret = csdk_submit(cd, false, &c, d, e.desc_len, &result);
	csdk_program_put(cf, h.program_id);
	if (ret < 0)
		goto out;
	e.status = ret;
	e.dw0 = lower_32_bits(result);
	e.dw1 = upper_32_bits(result);
done:
	ret = copy_to_user(argp, &e, sizeof(e)) ? -EFAULT : 0;
out:
	kfree(d);
	return ret;
}

static int csdk_ioc_log(struct csdk_file *cf, void __user *argp)
{
	struct csd_ioc_log l;
	void *page;
	int ret;

	if (copy_from_user(&l, argp, sizeof(l)))
		return -EFAULT;
	if (l.lid != CSD_LOG_CAPABILITIES && l.lid != CSD_LOG_STATISTICS)
		return -EINVAL;
	page = kzalloc(CSD_IOC_LOG_SIZE, GFP_KERNEL);
	if (!page)
		return -ENOMEM;
	ret = csdk_get_log(cf->cd, l.lid, page);
	if (ret >= 0) {
		l.status = ret;
		ret = 0;
		if (copy_to_user(u64_to_user_ptr(l.buf), page, CSD_IOC_LOG_SIZE) ||
		    copy_to_user(argp, &l, sizeof(l)))
			ret = -EFAULT;
	}
	kfree(page);
	return ret;
}

static long csdk_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	struct csdk_file *cf = file->private_data;
	struct csdk_dev *cd = cf->cd;
	void __user *argp = (void __user *)arg;
	long ret;

	switch (cmd) {
	case CSD_IOC_INFO: {
		u32 shift = cd->ns->head->lba_shift;
		struct csd_ioc_info info = {
			.slm_size = cd->slm_size,
			.free_bytes = csdk_free_bytes(cd),
			.lba_count = cf->part_lbas, /* this file's partition */
			.lba_size = 1U << shift,
			.compute_units = cd->compute_units,
			.nr_programs = cd->nr_programs,
			.max_transfer = CSD_CHUNK,
			.api_version = CSD_IOC_API_VERSION,
		};

		return copy_to_user(argp, &info, sizeof(info)) ? -EFAULT : 0;
	}
	case CSD_IOC_FREE: {
		u32 handle;

		if (get_user(handle, (u32 __user *)argp))
			return -EFAULT;
		down_write(&cf->free_sem); /* no command of this file is using it now */
		ret = csdk_free(cf, handle, false);
		up_write(&cf->free_sem);
		return ret;
	}
	}

	down_read(&cf->free_sem);
	switch (cmd) {
	case CSD_IOC_ALLOC: {
		struct csd_ioc_alloc a;

		ret = -EFAULT;
		if (copy_from_user(&a, argp, sizeof(a)))
			break;
		ret = csdk_alloc(cf, &a);
		if (!ret && copy_to_user(argp, &a, sizeof(a))) {
			csdk_free(cf, a.handle, false);
			ret = -EFAULT;
		}
		break;
	}
	case CSD_IOC_LOG:
		ret = csdk_ioc_log(cf, argp);
		break;
	case CSD_IOC_WRITE:
	case CSD_IOC_READ:
		ret = csdk_ioc_xfer(cf, argp, cmd == CSD_IOC_WRITE);
		break;
	case CSD_IOC_LOAD:
	case CSD_IOC_STORE:
		ret = csdk_ioc_lba(cf, argp, cmd == CSD_IOC_STORE);
		break;
	case CSD_IOC_EXEC:
		ret = csdk_ioc_exec(cf, argp);
		break;
	case CSD_IOC_NS_IO:
		ret = csdk_ioc_ns_io(cf, argp);
		break;
	case CSD_IOC_P2P_READ:
		ret = csdk_ioc_p2p(cf, argp);
		break;
	case CSD_IOC_PROGRAM_LOAD:
		ret = csdk_ioc_program_load(cf, argp);
		break;
	case CSD_IOC_PROGRAM_UNLOAD:
		ret = csdk_ioc_program_unload(cf, argp);
		break;
	case CSD_IOC_AGENT_QUEUE:
		ret = csdk_ioc_agent_queue(cf, argp);
		break;
	default:
		ret = -ENOTTY;
	}
	up_read(&cf->free_sem);
	return ret;
}

static int csdk_open(struct inode *inode, struct file *file)
{
	struct csdk_dev *cd = container_of(inode->i_cdev, struct csdk_dev, cdev);
	struct csdk_file *cf = kzalloc(sizeof(*cf), GFP_KERNEL);

	u32 shift = cd->ns->head->lba_shift;
	int ret;

	if (!cf)
		return -ENOMEM;
	/*
	 * The namespace detached or removed since the module found it: no device to open (its
	 * capacity of 0 would otherwise fit no partition and read as a bad argument, EINVAL).
	 */
	if (test_bit(NVME_NS_REMOVING, &cd->ns->flags) || !get_capacity(cd->ns->disk)) {
		kfree(cf);
		return -ENODEV;
	}
	cf->cd = cd;
	cf->uid = current_fsuid();
	init_rwsem(&cf->free_sem);
	cf->lba_shift = shift;
	ret = csdk_partition_open(cf, get_capacity(cd->ns->disk) >> (shift - SECTOR_SHIFT));
	if (ret) {
		kfree(cf);
		return ret;
	}
	csdk_p2p_open(cf);
	file->private_data = cf;
	return 0;
}

static int csdk_release(struct inode *inode, struct file *file)
{
	struct csdk_file *cf = file->private_data;

	csdk_agents_release(cf);
	csdk_programs_release(cf);
	csdk_free(cf, 0, true);
	kfree(cf);
	return 0;
}

static const struct file_operations csdk_fops = {
	.owner = THIS_MODULE,
	.open = csdk_open,
	.release = csdk_release,
	.unlocked_ioctl = csdk_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
};

static int __init csdk_init(void)
{
	return csdk_attach_all(&csdk_fops);
}

static void __exit csdk_exit(void)
{
	csdk_detach_all();
}

module_init(csdk_init);
module_exit(csdk_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("nvme-csd: shared, isolated access to computational-storage NVMe drives");
