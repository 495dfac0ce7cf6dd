// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * csd.ko - shared, isolated access to nvme-csd computational-storage drives.
 *
 * At load the module looks at every NVMe controller (/dev/nvme<N>), keeps those whose
 * Identify Controller carries the CSD1 signature, and creates /dev/csd<N> and a "csd"
 * sysfs class for each. Callers get SLM in allocations that belong to their open file;
 * every SLM address they give is (handle, offset) inside one of their own allocations,
 * which the module checks and translates before it sends the command through nvme-core
 * (__nvme_submit_sync_cmd on the namespace's or the admin queue). Allocations go away
 * when the file is closed, also when the process is killed.
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

#include "csd.h"

MODULE_IMPORT_NS(NVME_TARGET_PASSTHRU);

#define CSD_MAX_DEVICES 16
#define CSD_MAX_CONTROLLERS 64

static unsigned int group;
module_param(group, uint, 0444);
MODULE_PARM_DESC(group, "group id allowed to use /dev/csd* (0660); 0: root only (0600)");

static dev_t csd_devt;
static struct csd_dev *csd_devices[CSD_MAX_DEVICES];

/* ---------------------------------------------------------------- sysfs */

static ssize_t slm_size_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	struct csd_dev *cd = container_of(dev, struct csd_dev, dev);

	return sysfs_emit(buf, "%llu\n", cd->slm_size);
}
static DEVICE_ATTR_RO(slm_size);

static ssize_t compute_units_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	struct csd_dev *cd = container_of(dev, struct csd_dev, dev);

	return sysfs_emit(buf, "%u\n", cd->compute_units);
}
static DEVICE_ATTR_RO(compute_units);

static ssize_t programs_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	struct csd_dev *cd = container_of(dev, struct csd_dev, dev);
	int len = 0;
	u32 i;

	for (i = 0; i < cd->nr_programs; i++) {
		const u8 *e = cd->caps + CSD_CAPS_ENTRIES_OFFSET +
			      sizeof(struct csd_caps_entry) * i;

		len += sysfs_emit_at(buf, len, "%04x %.24s\n", get_unaligned_le16(e),
				     (const char *)e + offsetof(struct csd_caps_entry, name));
	}
	return len;
}
static DEVICE_ATTR_RO(programs);

static ssize_t p2p_bytes_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	struct csd_dev *cd = container_of(dev, struct csd_dev, dev);

	return sysfs_emit(buf, "%lld\n", atomic64_read(&cd->p2p_bytes));
}
static DEVICE_ATTR_RO(p2p_bytes);

static struct attribute *csd_attrs[] = {
	&dev_attr_p2p_bytes.attr,
	&dev_attr_slm_size.attr,
	&dev_attr_compute_units.attr,
	&dev_attr_programs.attr,
	NULL,
};
ATTRIBUTE_GROUPS(csd);

static const struct class csd_class = {
	.name = "csd",
	.dev_groups = csd_groups,
};

/* devtmpfs asks for the node's mode and owner (mode/uid/gid are NULL on removal). */
static char *csd_devnode(const struct device *dev, umode_t *mode, kuid_t *uid, kgid_t *gid)
{
	if (mode)
		*mode = group ? 0660 : 0600;
	if (gid && group)
		*gid = KGIDT_INIT(group);
	return NULL;
}

static const struct device_type csd_type = {
	.name = "csd",
	.devnode = csd_devnode,
};

/* ---------------------------------------------------------------- commands */

/* Sends one command; returns 0, a positive NVMe status, or a negative errno. */
int csd_submit(struct csd_dev *cd, bool admin, struct nvme_command *c, void *buf,
	       unsigned int len, u64 *result)
{
	union nvme_result res = {};
	struct request_queue *q = admin ? cd->ctrl->admin_q : cd->ns->queue;
	int ret = __nvme_submit_sync_cmd(q, c, &res, buf, len, NVME_QID_ANY, 0);

	if (result)
		*result = le64_to_cpu(res.u64);
	return ret;
}

/*
 * Sends one I/O command whose data is the caller's user buffer: the pages are mapped for
 * the drive's DMA (as nvme-core's own passthrough does), with no copy through the kernel.
 */
int csd_submit_user(struct csd_dev *cd, struct nvme_command *c, void __user *ubuf,
		    unsigned int len, u64 *result)
{
	struct request_queue *q = cd->ns->queue;
	struct request *req;
	struct bio *bio;
	int ret;

	req = blk_mq_alloc_request(q, nvme_req_op(c), 0);
	if (IS_ERR(req))
		return PTR_ERR(req);
	nvme_init_request(req, c);
	ret = blk_rq_map_user(q, req, NULL, ubuf, len, GFP_KERNEL);
	if (ret) {
		blk_mq_free_request(req);
		return ret;
	}
	bio = req->bio;
	ret = nvme_execute_rq(req, false);
	if (result)
		*result = le64_to_cpu(nvme_req(req)->result.u64);
	blk_rq_unmap_user(bio);
	blk_mq_free_request(req);
	return ret;
}

void csd_cmd(struct nvme_command *c, u8 opcode, u32 nsid, u32 cdw10, u32 cdw11,
	     u32 cdw12, u32 cdw13, u32 cdw14)
{
	memset(c, 0, sizeof(*c));
	c->common.opcode = opcode;
	c->common.nsid = cpu_to_le32(nsid);
	c->common.cdw10 = cpu_to_le32(cdw10);
	c->common.cdw11 = cpu_to_le32(cdw11);
	c->common.cdw12 = cpu_to_le32(cdw12);
	c->common.cdw13 = cpu_to_le32(cdw13);
	c->common.cdw14 = cpu_to_le32(cdw14);
}

/* Reads a log page of the command set into page (csd_log_page_size(lid) bytes). */
static int csd_get_log(struct csd_dev *cd, u8 lid, void *page)
{
	struct nvme_command c;
	u32 size = csd_log_page_size(lid);

	csd_cmd(&c, nvme_admin_get_log_page, NVME_NSID_ALL, lid | ((size / 4 - 1) << 16), 0, 0,
		0, 0);
	return csd_submit(cd, true, &c, page, size, NULL);
}

/* ---------------------------------------------------------------- SLM allocations */

/* Absolute SLM offset of [offset, offset + len) in one of cf's allocations. */
int csd_translate(struct csd_file *cf, u32 handle, u64 offset, u64 len, u64 *abs)
{
	struct csd_dev *cd = cf->cd;
	struct csd_alloc *a;
	u64 end;
	int ret = -ENOENT;

	mutex_lock(&cd->lock);
	list_for_each_entry(a, &cd->allocs, node) {
		if (a->handle != handle || a->owner != cf || !a->ready)
			continue;
		ret = -ERANGE;
		if (!check_add_overflow(offset, len, &end) && end <= a->len) {
			*abs = a->off + offset;
			ret = 0;
		}
		break;
	}
	mutex_unlock(&cd->lock);
	return ret;
}

static int csd_free(struct csd_file *cf, u32 handle, bool all);

/* Writes zeros over SLM [off, off + len) with SLM Write commands. */
static int csd_zero(struct csd_dev *cd, u64 off, u64 len)
{
	struct nvme_command c;
	u64 done = 0;
	void *zeros = kvzalloc(min_t(u64, len, CSD_CHUNK), GFP_KERNEL);
	int ret = 0;

	if (!zeros)
		return -ENOMEM;
	while (done < len && !ret) {
		u32 n = min_t(u64, len - done, CSD_CHUNK);

		csd_cmd(&c, CSD_OPC_SLM_WRITE, cd->ns->head->ns_id, lower_32_bits(off + done),
			upper_32_bits(off + done), n, 0, 0);
		ret = csd_submit(cd, false, &c, zeros, n, NULL);
		done += n;
	}
	kvfree(zeros);
	return ret;
}

static int csd_alloc(struct csd_file *cf, struct csd_ioc_alloc *req)
{
	struct csd_dev *cd = cf->cd;
	u64 align = req->align ? req->align : 4096;
	u64 size, start = 0, end;
	struct csd_alloc *a, *pos;
	struct list_head *before;
	int ret;

	if (!req->size || align < 4096 || !is_power_of_2(align) || req->size > cd->slm_size)
		return -EINVAL;
	size = round_up(req->size, 4096);
	a = kzalloc(sizeof(*a), GFP_KERNEL);
	if (!a)
		return -ENOMEM;
	mutex_lock(&cd->lock);
	before = &cd->allocs;
	list_for_each_entry(pos, &cd->allocs, node) {
		start = round_up(start, align);
		if (!check_add_overflow(start, size, &end) && end <= pos->off)
			goto found;
		start = pos->off + pos->len;
		before = &pos->node;
	}
	start = round_up(start, align);
	if (check_add_overflow(start, size, &end) || end > cd->slm_size) {
		mutex_unlock(&cd->lock);
		kfree(a);
		return -ENOSPC;
	}
found:
	a->off = start;
	a->len = size;
	a->owner = cf;
	do {
		a->handle = ++cd->next_handle;
	} while (!a->handle);
	list_add(&a->node, before);
	req->handle = a->handle;
	mutex_unlock(&cd->lock);
	/*
	 * SLM is not cleared when freed: clear it now, so no one sees another's old data. The
	 * range is reserved but its handle addresses nothing until the zeroing is done (even
	 * a thread that guesses it gets -ENOENT). The caller holds free_sem, so this
	 * allocation cannot be freed meanwhile.
	 */
	ret = csd_zero(cd, start, size);
	if (ret) {
		csd_free(cf, req->handle, false);
		return ret > 0 ? -EIO : ret;
	}
	mutex_lock(&cd->lock);
	a->ready = true;
	mutex_unlock(&cd->lock);
	return 0;
}

/* Frees one allocation of cf (handle) or, with all, every allocation of cf. */
static int csd_free(struct csd_file *cf, u32 handle, bool all)
{
	struct csd_dev *cd = cf->cd;
	struct csd_alloc *a, *tmp;
	int ret = all ? 0 : -ENOENT;

	mutex_lock(&cd->lock);
	list_for_each_entry_safe(a, tmp, &cd->allocs, node) {
		if (a->owner != cf || (!all && a->handle != handle))
			continue;
		list_del(&a->node);
		kfree(a);
		ret = 0;
		if (!all)
			break;
	}
	mutex_unlock(&cd->lock);
	return ret;
}

static u64 csd_free_bytes(struct csd_dev *cd)
{
	struct csd_alloc *a;
	u64 used = 0;

	mutex_lock(&cd->lock);
	list_for_each_entry(a, &cd->allocs, node)
		used += a->len;
	mutex_unlock(&cd->lock);
	return cd->slm_size - used;
}

/* ---------------------------------------------------------------- ioctls */

static int csd_ioc_xfer(struct csd_file *cf, void __user *argp, bool to_slm)
{
	struct csd_ioc_xfer x;
	struct nvme_command c;
	u64 abs, done = 0;
	int ret = 0;

	if (copy_from_user(&x, argp, sizeof(x)))
		return -EFAULT;
	if (!x.len || x.len % 4 || x.offset % 4)
		return -EINVAL;
	ret = csd_translate(cf, x.handle, x.offset, x.len, &abs);
	if (ret)
		return ret;
	x.status = 0;
	while (done < x.len) {
		u32 n = min_t(u64, x.len - done, CSD_CHUNK);

		csd_cmd(&c, to_slm ? CSD_OPC_SLM_WRITE : CSD_OPC_SLM_READ, cf->cd->ns->head->ns_id,
			lower_32_bits(abs + done), upper_32_bits(abs + done), n, 0, 0);
		ret = csd_submit_user(cf->cd, &c, u64_to_user_ptr(x.buf + done), n, NULL);
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
static bool csd_format_changed(const struct csd_file *cf)
{
	return cf->lba_shift != cf->cd->ns->head->lba_shift;
}

static int csd_ioc_lba(struct csd_file *cf, void __user *argp, bool store)
{
	struct csd_dev *cd = cf->cd;
	struct csd_ioc_lba l;
	struct nvme_command c;
	u64 abs, bytes, lba;
	int ret;

	if (copy_from_user(&l, argp, sizeof(l)))
		return -EFAULT;
	if (!l.nlb || l.nlb > 65536)
		return -EINVAL;
	bytes = (u64)l.nlb << cd->ns->head->lba_shift;
	ret = csd_translate(cf, l.handle, l.offset, bytes, &abs);
	if (ret)
		return ret;
	if (csd_format_changed(cf)) {
		l.status = CSD_STATUS_INVALID_NAMESPACE | CSD_STATUS_DNR;
		return copy_to_user(argp, &l, sizeof(l)) ? -EFAULT : 0;
	}
	if (!csd_lba_range(cf, l.slba, l.nlb, &lba)) {
		/* outside this file's partition: as the drive answers past its end */
		l.status = CSD_STATUS_LBA_OUT_OF_RANGE | CSD_STATUS_DNR;
		return copy_to_user(argp, &l, sizeof(l)) ? -EFAULT : 0;
	}
	csd_cmd(&c, store ? CSD_OPC_SLM_STORE : CSD_OPC_SLM_LOAD, cd->ns->head->ns_id,
		lower_32_bits(lba), upper_32_bits(lba), l.nlb - 1, lower_32_bits(abs),
		upper_32_bits(abs));
	ret = csd_submit(cd, false, &c, NULL, 0, NULL);
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
static int csd_prinfo(const struct nvme_ns_head *head, u16 *control)
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

static int csd_ioc_ns_io(struct csd_file *cf, void __user *argp)
{
	struct csd_dev *cd = cf->cd;
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
	if (r.nlb && r.write != CSD_NS_IO_COMPARE_WRITE && csd_prinfo(cd->ns->head, &control)) {
		r.status = CSD_STATUS_INVALID_NAMESPACE | CSD_STATUS_DNR;
		return copy_to_user(argp, &r, sizeof(r)) ? -EFAULT : 0;
	}
	if (csd_format_changed(cf)) {
		r.status = CSD_STATUS_INVALID_NAMESPACE | CSD_STATUS_DNR;
		return copy_to_user(argp, &r, sizeof(r)) ? -EFAULT : 0;
	}
	if (!r.nlb) { /* Flush */
		if (r.buf || r.write)
			return -EINVAL;
		csd_cmd(&c, nvme_cmd_flush, cd->ns->head->ns_id, 0, 0, 0, 0, 0);
		ret = csd_submit(cd, false, &c, NULL, 0, NULL);
	} else {
		if (!r.buf || r.nlb > (U64_MAX >> shift) ||
		    check_add_overflow(r.slba, r.nlb, &last))
			return -EINVAL;
		bytes = r.nlb << shift;
		if (r.write == CSD_NS_IO_COMPARE_WRITE && bytes > CSD_CAW_MAX_BYTES)
			return -EINVAL;
		if (!csd_lba_range(cf, r.slba, r.nlb, &first)) {
			/* outside this file's partition: as the drive answers past its end */
			r.status = CSD_STATUS_LBA_OUT_OF_RANGE | CSD_STATUS_DNR;
			return copy_to_user(argp, &r, sizeof(r)) ? -EFAULT : 0;
		}
		if (r.write == CSD_NS_IO_COMPARE_WRITE) {
			csd_cmd(&c, CSD_OPC_COMPARE_WRITE, cd->ns->head->ns_id,
				lower_32_bits(first), upper_32_bits(first), r.nlb - 1, 0, 0);
			ret = csd_submit_user(cd, &c, u64_to_user_ptr(r.buf), 2 * bytes, NULL);
			bytes = 0;
		}
		while (done < bytes) {
			u32 n = min_t(u64, bytes - done, CSD_CHUNK);
			u64 slba = first + (done >> shift);

			csd_cmd(&c, r.write ? nvme_cmd_write : nvme_cmd_read, cd->ns->head->ns_id,
				lower_32_bits(slba), upper_32_bits(slba),
				((n >> shift) - 1) | (u32)control << 16, 0,
				control ? lower_32_bits(slba) : 0);
			ret = csd_submit_user(cd, &c, u64_to_user_ptr(r.buf + done), n, NULL);
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
static bool csd_program_reads_media(u16 id)
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
static int csd_ioc_exec(struct csd_file *cf, void __user *argp)
{
	struct csd_dev *cd = cf->cd;
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
			ret = csd_translate(cf, e.handle, r.offset, r.length, &r.offset);
			if (ret)
				goto out;
		} else {
			r.offset = 0;
		}
		csd_desc_range_set(d, i, r);
	}
	/* another tenant's downloaded program: EPERM; ours stays ours until it completes */
	if (csd_format_changed(cf)) { /* its window would be in LBAs of another size */
		e.status = CSD_STATUS_INVALID_NAMESPACE | CSD_STATUS_DNR;
		goto done;
	}
	if (!(cd->features & CSD_FEATURE_LBA_WINDOW) && csd_program_reads_media(h.program_id)) {
		dev_warn_ratelimited(&cd->dev, "program %04x reads media: drive has no LBA window\n",
				     h.program_id);
		e.status = CSD_STATUS_INVALID_FIELD | CSD_STATUS_DNR;
		goto done;
	}
	ret = csd_program_get(cf, h.program_id);
	if (ret)
		goto out;
	csd_cmd(&c, CSD_OPC_EXECUTE, cd->ns->head->ns_id, e.desc_len, CSD_EXEC_LBA_WINDOW,
		lower_32_bits(cf->part_start), upper_32_bits(cf->part_start),
		lower_32_bits(cf->part_lbas));
	c.common.cdw15 = cpu_to_le32(upper_32_bits(cf->part_lbas));
	ret = csd_submit(cd, false, &c, d, e.desc_len, &result);
	csd_program_put(cf, h.program_id);
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

static int csd_ioc_log(struct csd_file *cf, void __user *argp)
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
	ret = csd_get_log(cf->cd, l.lid, page);
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

static long csd_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	struct csd_file *cf = file->private_data;
	struct csd_dev *cd = cf->cd;
	void __user *argp = (void __user *)arg;
	long ret;

	switch (cmd) {
	case CSD_IOC_INFO: {
		u32 shift = cd->ns->head->lba_shift;
		struct csd_ioc_info info = {
			.slm_size = cd->slm_size,
			.free_bytes = csd_free_bytes(cd),
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
		ret = csd_free(cf, handle, false);
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
		ret = csd_alloc(cf, &a);
		if (!ret && copy_to_user(argp, &a, sizeof(a))) {
			csd_free(cf, a.handle, false);
			ret = -EFAULT;
		}
		break;
	}
	case CSD_IOC_LOG:
		ret = csd_ioc_log(cf, argp);
		break;
	case CSD_IOC_WRITE:
	case CSD_IOC_READ:
		ret = csd_ioc_xfer(cf, argp, cmd == CSD_IOC_WRITE);
		break;
	case CSD_IOC_LOAD:
	case CSD_IOC_STORE:
		ret = csd_ioc_lba(cf, argp, cmd == CSD_IOC_STORE);
		break;
	case CSD_IOC_EXEC:
		ret = csd_ioc_exec(cf, argp);
		break;
	case CSD_IOC_NS_IO:
		ret = csd_ioc_ns_io(cf, argp);
		break;
	case CSD_IOC_P2P_READ:
		ret = csd_ioc_p2p(cf, argp);
		break;
	case CSD_IOC_PROGRAM_LOAD:
		ret = csd_ioc_program_load(cf, argp);
		break;
	case CSD_IOC_PROGRAM_UNLOAD:
		ret = csd_ioc_program_unload(cf, argp);
		break;
	default:
		ret = -ENOTTY;
	}
	up_read(&cf->free_sem);
	return ret;
}

static int csd_open(struct inode *inode, struct file *file)
{
	struct csd_dev *cd = container_of(inode->i_cdev, struct csd_dev, cdev);
	struct csd_file *cf = kzalloc(sizeof(*cf), GFP_KERNEL);

	u32 shift = cd->ns->head->lba_shift;
	int ret;

	if (!cf)
		return -ENOMEM;
	cf->cd = cd;
	cf->uid = current_fsuid();
	init_rwsem(&cf->free_sem);
	cf->lba_shift = shift;
	ret = csd_partition_open(cf, get_capacity(cd->ns->disk) >> (shift - SECTOR_SHIFT));
	if (ret) {
		kfree(cf);
		return ret;
	}
	csd_p2p_open(cf);
	file->private_data = cf;
	return 0;
}

static int csd_release(struct inode *inode, struct file *file)
{
	struct csd_file *cf = file->private_data;

	csd_programs_release(cf);
	csd_free(cf, 0, true);
	kfree(cf);
	return 0;
}

static const struct file_operations csd_fops = {
	.owner = THIS_MODULE,
	.open = csd_open,
	.release = csd_release,
	.unlocked_ioctl = csd_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
};

/* ---------------------------------------------------------------- attach */

static void csd_dev_release(struct device *dev)
{
	struct csd_dev *cd = container_of(dev, struct csd_dev, dev);

	kfree(cd->caps);
	kfree(cd);
}

/* Keeps controller /dev/nvme<idx> if it is a CSD; returns 1 if attached, 0 if not. */
static int csd_try_attach(int idx, int minor)
{
	char path[32];
	struct file *f;
	struct nvme_ctrl *ctrl;
	struct csd_dev *cd;
	u8 *id;
	int ret;

	snprintf(path, sizeof(path), "/dev/nvme%d", idx);
	f = filp_open(path, O_RDWR, 0);
	if (IS_ERR(f))
		return 0;
	ctrl = nvme_ctrl_from_file(f);
	if (!ctrl)
		goto not_ours;
	cd = kzalloc(sizeof(*cd), GFP_KERNEL);
	id = kzalloc(4096, GFP_KERNEL);
	if (!cd || !id) {
		kfree(cd);
		kfree(id);
		goto not_ours;
	}
	cd->ctrl = ctrl;
	cd->ctrl_file = f;
	{
		struct nvme_command c;

		csd_cmd(&c, nvme_admin_identify, 0, NVME_ID_CNS_CTRL, 0, 0, 0, 0);
		ret = csd_submit(cd, true, &c, id, 4096, NULL);
	}
	if (ret || memcmp(id + CSD_ID_VS_OFFSET, CSD_ID_SIGNATURE, 4)) {
		kfree(id);
		kfree(cd);
		goto not_ours;
	}
	cd->caps = id; /* reused for the capabilities page */
	ret = csd_get_log(cd, CSD_LOG_CAPABILITIES, cd->caps);
	cd->ns = nvme_find_get_ns(ctrl, 1);
	if (ret || !cd->ns || memcmp(cd->caps, CSD_CAPS_MAGIC, 4)) {
		dev_warn(ctrl->device, "csd: CSD1 signature but no capabilities log or namespace 1\n");
		if (cd->ns)
			nvme_put_ns(cd->ns);
		kfree(cd->caps);
		kfree(cd);
		goto not_ours;
	}
	cd->slm_size = get_unaligned_le64(cd->caps + offsetof(struct csd_caps_log, slm_size));
	cd->compute_units = get_unaligned_le32(cd->caps +
					       offsetof(struct csd_caps_log, compute_units));
	cd->nr_programs = get_unaligned_le32(cd->caps + offsetof(struct csd_caps_log, nr_programs));
	cd->features = get_unaligned_le32(cd->caps + offsetof(struct csd_caps_log, features));
	cd->nr_programs = min_t(u32, cd->nr_programs,
				(CSD_LOG_PAGE_SIZE - CSD_CAPS_ENTRIES_OFFSET) /
				sizeof(struct csd_caps_entry));
	mutex_init(&cd->lock);
	csd_programs_init(cd);
	INIT_LIST_HEAD(&cd->allocs);
	atomic64_set(&cd->p2p_bytes, 0);
	cd->minor = minor;
	device_initialize(&cd->dev);
	cd->dev.class = &csd_class;
	cd->dev.type = &csd_type;
	cd->dev.devt = MKDEV(MAJOR(csd_devt), minor);
	cd->dev.release = csd_dev_release;
	dev_set_name(&cd->dev, "csd%d", minor);
	cdev_init(&cd->cdev, &csd_fops);
	cd->cdev.owner = THIS_MODULE;
	ret = cdev_device_add(&cd->cdev, &cd->dev);
	if (ret) {
		nvme_put_ns(cd->ns);
		filp_close(f, NULL);
		put_device(&cd->dev);
		return 0;
	}
	csd_devices[minor] = cd;
	dev_info(&cd->dev, "%s: %llu bytes of SLM, %u compute units, %u programs\n", path,
		 cd->slm_size, cd->compute_units, cd->nr_programs);
	return 1;

not_ours:
	filp_close(f, NULL);
	return 0;
}

static void csd_detach(struct csd_dev *cd)
{
	struct file *f = cd->ctrl_file;

	cdev_device_del(&cd->cdev, &cd->dev);
	nvme_put_ns(cd->ns);
	filp_close(f, NULL);
	put_device(&cd->dev);
}

static int __init csd_init(void)
{
	int ret, i, n = 0;

	ret = alloc_chrdev_region(&csd_devt, 0, CSD_MAX_DEVICES, "csd");
	if (ret)
		return ret;
	ret = class_register(&csd_class);
	if (ret) {
		unregister_chrdev_region(csd_devt, CSD_MAX_DEVICES);
		return ret;
	}
	for (i = 0; i < CSD_MAX_CONTROLLERS && n < CSD_MAX_DEVICES; i++)
		n += csd_try_attach(i, n);
	pr_info("csd: %d computational-storage controller(s)\n", n);
	return 0;
}

static void __exit csd_exit(void)
{
	int i;

	for (i = 0; i < CSD_MAX_DEVICES; i++)
		if (csd_devices[i])
			csd_detach(csd_devices[i]);
	class_unregister(&csd_class);
	unregister_chrdev_region(csd_devt, CSD_MAX_DEVICES);
}

module_init(csd_init);
module_exit(csd_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("nvme-csd: shared, isolated access to computational-storage NVMe drives");
