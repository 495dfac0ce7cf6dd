// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * csdk_programs.c - downloadable programs through csd.ko: Program Load and Unload on
 * behalf of an open file, which then owns the slot. Only the owner may run or unload it,
 * and closing the file (also when the process is killed) unloads it.
 *
 * Ownership holds across the drive's command: each slot has a semaphore taken before its
 * owner is checked and released after the command completes (write for every chunk of a
 * Program Load and for Program Unload, read for Execute), and the owner changes only
 * under it. So a slot checked as the caller's is still the caller's, holding the caller's
 * program, when the drive runs the command: a second Unload of a slot, a failed upload's
 * cleanup or an Execute cannot reach a program another file loaded into it meanwhile.
 * For slot 0 the module picks a free slot itself (the drive could pick one that another
 * file has claimed but not yet sent).
 *
 * Per-tenant quotas (a tenant is the opener's filesystem uid, over all its files):
 * program_slots_per_user slots held (loaded or loading), program_loading_bytes_per_user
 * bytes of images being uploaded at once. A Program Load past either fails with EDQUOT.
 */
#include <linux/bitmap.h>
#include <linux/cred.h>
#include <linux/moduleparam.h>
#include <linux/mutex.h>
#include <linux/uaccess.h>

#include "csdk.h"

static unsigned int program_slots_per_user = 16;
module_param(program_slots_per_user, uint, 0644);
MODULE_PARM_DESC(program_slots_per_user,
		 "program slots one user may hold, loaded or loading, over all its files (default 16; 0: no limit)");
static unsigned int program_loading_bytes_per_user = CSD_MAX_PROGRAM_BYTES;
module_param(program_loading_bytes_per_user, uint, 0644);
MODULE_PARM_DESC(program_loading_bytes_per_user,
		 "bytes of program images one user may be uploading at once (default 4 MiB; 0: no limit)");

static bool csdk_is_slot(u32 id)
{
	return id >= CSD_SLOT_FIRST && id < CSD_SLOT_FIRST + CSD_NR_SLOTS;
}

static struct csdk_slot *csdk_slot(struct csdk_dev *cd, u16 id)
{
	return &cd->slots[id - CSD_SLOT_FIRST];
}

/* Whether cf owns slot id now (a hint unless its semaphore is held). */
static bool csdk_slot_ours(struct csdk_file *cf, u16 id)
{
	struct csdk_dev *cd = cf->cd;
	bool ours;

	mutex_lock(&cd->programs_lock);
	ours = csdk_slot(cd, id)->owner == cf;
	mutex_unlock(&cd->programs_lock);
	return ours;
}

/* Program Unload sent to the drive; returns the NVMe status or a negative errno. */
static int csdk_unload_slot(struct csdk_dev *cd, u16 slot)
{
	struct nvme_command c;

	csdk_cmd(&c, CSD_OPC_PROGRAM_UNLOAD, cd->ns->head->ns_id, slot, 0, 0, 0, 0);
	return csdk_submit(cd, false, &c, NULL, 0, NULL);
}

/* Whether one more upload of size bytes keeps cf's tenant within its quotas (-EDQUOT if
 * not); programs_lock held.
 */
static int csdk_quota_check(struct csdk_file *cf, u32 size)
{
	unsigned int max_slots = READ_ONCE(program_slots_per_user);
	unsigned int max_bytes = READ_ONCE(program_loading_bytes_per_user);
	struct csdk_dev *cd = cf->cd;
	u64 bytes = size;
	u32 slots = 1;
	int i;

	for (i = 0; i < CSD_NR_SLOTS; i++) {
		const struct csdk_slot *s = &cd->slots[i];

		if (!s->owner || !uid_eq(s->owner->uid, cf->uid))
			continue;
		slots++;
		bytes += s->loading;
	}
	if ((max_slots && slots > max_slots) || (max_bytes && bytes > max_bytes))
		return -EDQUOT;
	return 0;
}

/*
 * Claims slot id for an upload of size bytes by cf: takes its semaphore for write, then
 * makes cf its owner. Returns 0 (claimed, semaphore held), Program Slot In Use if another
 * file owns it (as the drive answers), -EDQUOT or -EINTR.
 */
static int csdk_slot_claim(struct csdk_file *cf, u16 id, u32 size)
{
	struct csdk_dev *cd = cf->cd;
	struct csdk_slot *s = csdk_slot(cd, id);
	bool taken;
	int ret;

	/* held now (it may be freed meanwhile, but the answer was true when given) */
	mutex_lock(&cd->programs_lock);
	taken = s->owner;
	mutex_unlock(&cd->programs_lock);
	if (taken)
		return CSD_STATUS_PROGRAM_SLOT_IN_USE | CSD_STATUS_DNR;
	if (down_write_killable(&s->sem))
		return -EINTR;
	mutex_lock(&cd->programs_lock);
	ret = CSD_STATUS_PROGRAM_SLOT_IN_USE | CSD_STATUS_DNR;
	if (!s->owner)
		ret = csdk_quota_check(cf, size);
	if (!ret) {
		s->owner = cf;
		s->loading = size;
	}
	mutex_unlock(&cd->programs_lock);
	if (ret)
		up_write(&s->sem);
	return ret;
}

/*
 * Picks and claims a slot no file owns and that is not in `tried`, lowest first, as
 * csdk_slot_claim does; *id receives it. Program Slot In Use when there is none.
 */
static int csdk_slot_pick(struct csdk_file *cf, u32 size, const unsigned long *tried, u16 *id)
{
	struct csdk_dev *cd = cf->cd;
	int i, ret;

	mutex_lock(&cd->programs_lock);
	ret = csdk_quota_check(cf, size);
	for (i = 0; i < CSD_NR_SLOTS && !ret; i++) {
		struct csdk_slot *s = &cd->slots[i];

		/* a free slot's semaphore is held only briefly (a claim that then fails) */
		if (test_bit(i, tried) || s->owner || !down_write_trylock(&s->sem))
			continue;
		s->owner = cf;
		s->loading = size;
		*id = CSD_SLOT_FIRST + i;
		break;
	}
	if (!ret && i == CSD_NR_SLOTS)
		ret = CSD_STATUS_PROGRAM_SLOT_IN_USE | CSD_STATUS_DNR;
	mutex_unlock(&cd->programs_lock);
	return ret;
}

/* Ends cf's upload into claimed slot id: keeps it (ok), or unloads it (unload) and gives
 * it up; releases the semaphore.
 */
static void csdk_slot_finish(struct csdk_file *cf, u16 id, bool ok, bool unload)
{
	struct csdk_dev *cd = cf->cd;
	struct csdk_slot *s = csdk_slot(cd, id);

	if (!ok && unload)
		csdk_unload_slot(cd, id); /* still ours: no one else could load into it */
	mutex_lock(&cd->programs_lock);
	s->loading = 0;
	if (!ok)
		s->owner = NULL;
	mutex_unlock(&cd->programs_lock);
	up_write(&s->sem);
}

/* Sends the image in chunks into claimed slot `slot`; *sent: bytes the drive accepted. */
static int csdk_upload(struct csdk_dev *cd, const struct csd_ioc_program_load *p, u16 slot,
		       u64 *result, u32 *sent)
{
	struct nvme_command c;
	u32 off = 0, n;
	int ret = 0;

	while (off < p->size) {
		n = min_t(u32, p->size - off, CSD_CHUNK);
		csdk_cmd(&c, CSD_OPC_PROGRAM_LOAD, cd->ns->head->ns_id,
			 csd_program_load_cdw10(slot, p->type), p->size, off, n, p->record_size);
		ret = csdk_submit_user(cd, &c, u64_to_user_ptr(p->image + off), n, result);
		if (ret)
			break;
		if (off == 0 && lower_32_bits(*result) != slot) {
			ret = -EIO; /* the drive took another slot than the one named */
			break;
		}
		off += n;
	}
	*sent = off;
	return ret;
}

int csdk_ioc_program_load(struct csdk_file *cf, void __user *argp)
{
	struct csdk_dev *cd = cf->cd;
	DECLARE_BITMAP(tried, CSD_NR_SLOTS);
	struct csd_ioc_program_load p;
	u64 result = 0;
	u32 sent;
	u16 slot;
	int ret;

	if (copy_from_user(&p, argp, sizeof(p)))
		return -EFAULT;
	if (!p.size || (p.slot && !csdk_is_slot(p.slot)))
		return -EINVAL;
	ret = CSD_STATUS_INVALID_FIELD | CSD_STATUS_DNR; /* as the drive answers */
	if (p.size > CSD_MAX_PROGRAM_BYTES)
		goto done;
	bitmap_zero(tried, CSD_NR_SLOTS);
	for (;;) {
		slot = p.slot;
		if (p.slot)
			ret = csdk_slot_claim(cf, slot, p.size);
		else
			ret = csdk_slot_pick(cf, p.size, tried, &slot);
		if (ret)
			break;
		ret = csdk_upload(cd, &p, slot, &result, &sent);
		if (!p.slot && !sent && ret > 0 &&
		    CSD_STATUS_CODE(ret) == CSD_STATUS_PROGRAM_SLOT_IN_USE) {
			/* loaded outside the module (by root through /dev/nvme*): try another */
			csdk_slot_finish(cf, slot, false, false);
			set_bit(slot - CSD_SLOT_FIRST, tried);
			continue;
		}
		/*
		 * A refused first chunk took nothing (a refused image leaves the slot empty);
		 * after an accepted chunk, or an error that leaves the drive's state unknown,
		 * the upload is abandoned, in a slot that is still this file's.
		 */
		csdk_slot_finish(cf, slot, !ret, sent > 0 || ret < 0);
		break;
	}
	if (ret < 0)
		return ret;
done:
	p.status = ret;
	p.dw0 = lower_32_bits(result);
	p.slot = ret ? 0 : slot;
	return copy_to_user(argp, &p, sizeof(p)) ? -EFAULT : 0;
}

int csdk_ioc_program_unload(struct csdk_file *cf, void __user *argp)
{
	struct csdk_dev *cd = cf->cd;
	struct csd_ioc_program_unload u;
	struct csdk_slot *s;
	int ret;

	if (copy_from_user(&u, argp, sizeof(u)))
		return -EFAULT;
	if (!csdk_is_slot(u.slot))
		return -EINVAL;
	/*
	 * Only cf itself can make a slot cf's, so a slot not cf's now may be refused at once;
	 * one that is, is checked again once no command of another thread uses it.
	 */
	if (!csdk_slot_ours(cf, u.slot))
		return -EPERM;
	s = csdk_slot(cd, u.slot);
	if (down_write_killable(&s->sem))
		return -EINTR;
	ret = -EPERM;
	if (!csdk_slot_ours(cf, u.slot))
		goto out;
	ret = csdk_unload_slot(cd, u.slot);
	if (ret < 0)
		goto out;
	/* unloaded, or already empty on the drive: nothing of cf's is there now */
	if (ret == 0 || CSD_STATUS_CODE(ret) == CSD_STATUS_INVALID_PROGRAM) {
		mutex_lock(&cd->programs_lock);
		s->owner = NULL;
		mutex_unlock(&cd->programs_lock);
	}
	u.status = ret;
	ret = copy_to_user(argp, &u, sizeof(u)) ? -EFAULT : 0;
out:
	up_write(&s->sem);
	return ret;
}

int csdk_program_get(struct csdk_file *cf, u16 id)
{
	struct csdk_slot *s;

	if (!csdk_is_slot(id))
		return 0; /* device-defined programs and plug-ins are everyone's */
	if (!csdk_slot_ours(cf, id))
		return -EPERM; /* as in CSD_IOC_PROGRAM_UNLOAD */
	s = csdk_slot(cf->cd, id);
	if (down_read_killable(&s->sem))
		return -EINTR;
	if (csdk_slot_ours(cf, id))
		return 0;
	up_read(&s->sem);
	return -EPERM;
}

void csdk_program_put(struct csdk_file *cf, u16 id)
{
	if (csdk_is_slot(id))
		up_read(&csdk_slot(cf->cd, id)->sem);
}

void csdk_programs_release(struct csdk_file *cf)
{
	struct csdk_dev *cd = cf->cd;
	struct csdk_slot *s;
	int i, ret;

	for (i = 0; i < CSD_NR_SLOTS; i++) {
		s = &cd->slots[i];
		if (!csdk_slot_ours(cf, CSD_SLOT_FIRST + i))
			continue;
		/* others hold it only briefly: none of them may use cf's program */
		down_write(&s->sem);
		ret = csdk_unload_slot(cd, CSD_SLOT_FIRST + i);
		if (ret < 0 || (ret && CSD_STATUS_CODE(ret) != CSD_STATUS_INVALID_PROGRAM))
			dev_warn(&cd->dev, "program slot %04x not unloaded (%d)\n",
				 CSD_SLOT_FIRST + i, ret);
		mutex_lock(&cd->programs_lock);
		s->owner = NULL;
		s->loading = 0;
		mutex_unlock(&cd->programs_lock);
		up_write(&s->sem);
	}
}
