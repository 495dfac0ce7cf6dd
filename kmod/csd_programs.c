// SPDX-License-Identifier: GPL-2.0
/*
 * csd_programs.c - downloadable programs through csd.ko: Program Load and Unload on
 * behalf of an open file, which then owns the slot. Only the owner may run or unload it,
 * and closing the file (also when the process is killed) unloads it.
 */
#include <linux/mutex.h>
#include <linux/uaccess.h>

#include "csd.h"

static bool csd_is_slot(u32 id)
{
	return id >= CSD_SLOT_FIRST && id < CSD_SLOT_FIRST + CSD_NR_SLOTS;
}

bool csd_program_owned(struct csd_file *cf, u16 id)
{
	struct csd_dev *cd = cf->cd;
	bool ours;

	if (!csd_is_slot(id))
		return true; /* device-defined programs and plug-ins are everyone's */
	mutex_lock(&cd->programs_lock);
	ours = cd->program_owner[id - CSD_SLOT_FIRST] == cf;
	mutex_unlock(&cd->programs_lock);
	return ours;
}

/* Program Unload sent to the drive; returns the NVMe status or a negative errno. */
static int csd_unload_slot(struct csd_dev *cd, u16 slot)
{
	struct nvme_command c;

	csd_cmd(&c, CSD_OPC_PROGRAM_UNLOAD, cd->ns->head->ns_id, slot, 0, 0, 0, 0);
	return csd_submit(cd, false, &c, NULL, 0, NULL);
}

int csd_ioc_program_load(struct csd_file *cf, void __user *argp)
{
	struct csd_dev *cd = cf->cd;
	struct csd_ioc_program_load p;
	struct nvme_command c;
	u32 off = 0, n;
	u64 result = 0;
	u16 slot;
	int ret = 0;

	if (copy_from_user(&p, argp, sizeof(p)))
		return -EFAULT;
	if (!p.size || (p.slot && !csd_is_slot(p.slot)))
		return -EINVAL;
	slot = p.slot;
	p.status = 0;
	p.dw0 = 0;
	while (off < p.size) {
		n = min_t(u32, p.size - off, CSD_CHUNK);
		csd_cmd(&c, CSD_OPC_PROGRAM_LOAD, cd->ns->head->ns_id,
			csd_program_load_cdw10(slot, p.type), p.size, off, n, p.record_size);
		ret = csd_submit_user(cd, &c, u64_to_user_ptr(p.image + off), n, &result);
		if (ret)
			break;
		if (off == 0) {
			/* the first chunk took the slot: it is this file's from now on */
			slot = lower_32_bits(result);
			if (!csd_is_slot(slot)) {
				ret = -EIO;
				break;
			}
			mutex_lock(&cd->programs_lock);
			cd->program_owner[slot - CSD_SLOT_FIRST] = cf;
			mutex_unlock(&cd->programs_lock);
		}
		off += n;
	}
	if (ret && off > 0) {
		/* a later chunk failed: abandon the upload (a refused image left it empty) */
		csd_unload_slot(cd, slot);
		mutex_lock(&cd->programs_lock);
		cd->program_owner[slot - CSD_SLOT_FIRST] = NULL;
		mutex_unlock(&cd->programs_lock);
	}
	if (ret < 0)
		return ret;
	p.status = ret;
	p.dw0 = lower_32_bits(result);
	p.slot = ret ? 0 : slot;
	return copy_to_user(argp, &p, sizeof(p)) ? -EFAULT : 0;
}

int csd_ioc_program_unload(struct csd_file *cf, void __user *argp)
{
	struct csd_dev *cd = cf->cd;
	struct csd_ioc_program_unload u;
	int ret;

	if (copy_from_user(&u, argp, sizeof(u)))
		return -EFAULT;
	if (!csd_is_slot(u.slot))
		return -EINVAL;
	if (!csd_program_owned(cf, u.slot))
		return -EPERM;
	ret = csd_unload_slot(cd, u.slot);
	if (ret < 0)
		return ret;
	if (ret == 0) {
		mutex_lock(&cd->programs_lock);
		cd->program_owner[u.slot - CSD_SLOT_FIRST] = NULL;
		mutex_unlock(&cd->programs_lock);
	}
	u.status = ret;
	return copy_to_user(argp, &u, sizeof(u)) ? -EFAULT : 0;
}

void csd_programs_release(struct csd_file *cf)
{
	struct csd_dev *cd = cf->cd;
	int i;

	mutex_lock(&cd->programs_lock);
	for (i = 0; i < CSD_NR_SLOTS; i++) {
		if (cd->program_owner[i] != cf)
			continue;
		csd_unload_slot(cd, CSD_SLOT_FIRST + i);
		cd->program_owner[i] = NULL;
	}
	mutex_unlock(&cd->programs_lock);
}
