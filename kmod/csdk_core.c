// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * csd.ko - shared, isolated access to nvme-csd computational-storage drives.
 *
 * csdk_core.c - the module's core: command submission through nvme-core and attaching
 * controllers. At load the module looks at every NVMe controller (/dev/nvme<N>), keeps
 * those whose Identify Controller carries the CSD1 signature, and creates /dev/csd<N>
 * (with the file operations csdk_fops.c gives) and a "csd" sysfs class for each. Commands
 * go through nvme-core (__nvme_submit_sync_cmd on the namespace's or the admin queue).
 * Callers' SLM allocations and their translation: csdk_slm.c; the ioctls: csdk_fops.c.
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

MODULE_IMPORT_NS(NVME_TARGET_PASSTHRU);

#define CSD_MAX_DEVICES 16
#define CSD_MAX_CONTROLLERS 64

static unsigned int group;
module_param(group, uint, 0444);
MODULE_PARM_DESC(group, "group id allowed to use /dev/csd* (0660); 0: root only (0600)");

static dev_t csdk_devt;
static struct csdk_dev *csdk_devices[CSD_MAX_DEVICES];

/* ---------------------------------------------------------------- sysfs */

static ssize_t slm_size_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	struct csdk_dev *cd = container_of(dev, struct csdk_dev, dev);

	return sysfs_emit(buf, "%llu\n", cd->slm_size);
}
static DEVICE_ATTR_RO(slm_size);

static ssize_t compute_units_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	struct csdk_dev *cd = container_of(dev, struct csdk_dev, dev);

	return sysfs_emit(buf, "%u\n", cd->compute_units);
}
static DEVICE_ATTR_RO(compute_units);

static ssize_t programs_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	struct csdk_dev *cd = container_of(dev, struct csdk_dev, dev);
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
	struct csdk_dev *cd = container_of(dev, struct csdk_dev, dev);

	return sysfs_emit(buf, "%lld\n", atomic64_read(&cd->p2p_bytes));
}
static DEVICE_ATTR_RO(p2p_bytes);

static struct attribute *csdk_attrs[] = {
	&dev_attr_p2p_bytes.attr,
	&dev_attr_slm_size.attr,
	&dev_attr_compute_units.attr,
	&dev_attr_programs.attr,
	NULL,
};
ATTRIBUTE_GROUPS(csdk);

static const struct class csdk_class = {
	.name = "csd",
	.dev_groups = csdk_groups,
};

/* devtmpfs asks for the node's mode and owner (mode/uid/gid are NULL on removal). */
static char *csdk_devnode(const struct device *dev, umode_t *mode, kuid_t *uid, kgid_t *gid)
{
	if (mode)
		*mode = group ? 0660 : 0600;
	if (gid && group)
		*gid = KGIDT_INIT(group);
	return NULL;
}

static const struct device_type csdk_type = {
	.name = "csd",
	.devnode = csdk_devnode,
};

/* ---------------------------------------------------------------- commands */

int csdk_submit(struct csdk_dev *cd, bool admin, struct nvme_command *c, void *buf,
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
int csdk_submit_user(struct csdk_dev *cd, struct nvme_command *c, void __user *ubuf,
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

void csdk_cmd(struct nvme_command *c, u8 opcode, u32 nsid, u32 cdw10, u32 cdw11,
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
int csdk_get_log(struct csdk_dev *cd, u8 lid, void *page)
{
	struct nvme_command c;
	u32 size = csd_log_page_size(lid);

	csdk_cmd(&c, nvme_admin_get_log_page, NVME_NSID_ALL, lid | ((size / 4 - 1) << 16), 0, 0,
		 0, 0);
	return csdk_submit(cd, true, &c, page, size, NULL);
}

/* ---------------------------------------------------------------- attach */

static void csdk_dev_release(struct device *dev)
{
	struct csdk_dev *cd = container_of(dev, struct csdk_dev, dev);

	kfree(cd->caps);
	kfree(cd);
}

/* Keeps controller /dev/nvme<idx> if it is a CSD; returns 1 if attached, 0 if not. */
static int csdk_try_attach(int idx, int minor, const struct file_operations *fops)
{
	char path[32];
	struct file *f;
	struct nvme_ctrl *ctrl;
	struct csdk_dev *cd;
	u8 *id;
	int ret, i;

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

		csdk_cmd(&c, nvme_admin_identify, 0, NVME_ID_CNS_CTRL, 0, 0, 0, 0);
		ret = csdk_submit(cd, true, &c, id, 4096, NULL);
	}
	if (ret || memcmp(id + CSD_ID_VS_OFFSET, CSD_ID_SIGNATURE, 4)) {
		kfree(id);
		kfree(cd);
		goto not_ours;
	}
	cd->caps = id; /* reused for the capabilities page */
	ret = csdk_get_log(cd, CSD_LOG_CAPABILITIES, cd->caps);
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
	mutex_init(&cd->programs_lock);
	for (i = 0; i < CSD_NR_SLOTS; i++)
		init_rwsem(&cd->slots[i].sem);
	INIT_LIST_HEAD(&cd->allocs);
	atomic64_set(&cd->p2p_bytes, 0);
	cd->minor = minor;
	device_initialize(&cd->dev);
	cd->dev.class = &csdk_class;
	cd->dev.type = &csdk_type;
	cd->dev.devt = MKDEV(MAJOR(csdk_devt), minor);
	cd->dev.release = csdk_dev_release;
	dev_set_name(&cd->dev, "csd%d", minor);
	cdev_init(&cd->cdev, fops);
	cd->cdev.owner = THIS_MODULE;
	ret = cdev_device_add(&cd->cdev, &cd->dev);
	if (ret) {
		nvme_put_ns(cd->ns);
		filp_close(f, NULL);
		put_device(&cd->dev);
		return 0;
	}
	csdk_devices[minor] = cd;
	dev_info(&cd->dev, "%s: %llu bytes of SLM, %u compute units, %u programs\n", path,
		 cd->slm_size, cd->compute_units, cd->nr_programs);
	return 1;

not_ours:
	filp_close(f, NULL);
	return 0;
}

static void csdk_detach(struct csdk_dev *cd)
{
	struct file *f = cd->ctrl_file;

	cdev_device_del(&cd->cdev, &cd->dev);
	nvme_put_ns(cd->ns);
	filp_close(f, NULL);
	put_device(&cd->dev);
}

/* Registers the class and attaches every CSD controller, its nodes opened with fops. */
int csdk_attach_all(const struct file_operations *fops)
{
	int ret, i, n = 0;

	ret = alloc_chrdev_region(&csdk_devt, 0, CSD_MAX_DEVICES, "csd");
	if (ret)
		return ret;
	ret = class_register(&csdk_class);
	if (ret) {
		unregister_chrdev_region(csdk_devt, CSD_MAX_DEVICES);
		return ret;
	}
	for (i = 0; i < CSD_MAX_CONTROLLERS && n < CSD_MAX_DEVICES; i++)
		n += csdk_try_attach(i, n, fops);
	pr_info("csd: %d computational-storage controller(s)\n", n);
	return 0;
}

/* Detaches every controller and unregisters the class. */
void csdk_detach_all(void)
{
	int i;

	for (i = 0; i < CSD_MAX_DEVICES; i++)
		if (csdk_devices[i])
			csdk_detach(csdk_devices[i]);
	class_unregister(&csdk_class);
	unregister_chrdev_region(csdk_devt, CSD_MAX_DEVICES);
}
