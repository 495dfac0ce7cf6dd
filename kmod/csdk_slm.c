// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * csdk_slm.c - callers' SLM allocations in csd.ko: each belongs to the open file that made
 * it, is cleared before its handle addresses anything, and goes away when the file is
 * closed (also when the process is killed). Every SLM address a caller gives is (handle,
 * offset) inside one of its own allocations, which csdk_translate checks and translates.
 */
#include <linux/mm.h>
#include <linux/mutex.h>
#include <linux/overflow.h>
#include <linux/slab.h>

#include "csdk.h"

int csdk_translate(struct csdk_file *cf, u32 handle, u64 offset, u64 len, u64 *abs)
{
	struct csdk_dev *cd = cf->cd;
	struct csdk_alloc *a;
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

/* Writes zeros over SLM [off, off + len) with SLM Write commands. */
static int csdk_zero(struct csdk_dev *cd, u64 off, u64 len)
{
	struct nvme_command c;
	u64 done = 0;
	void *zeros = kvzalloc(min_t(u64, len, CSD_CHUNK), GFP_KERNEL);
	int ret = 0;

	if (!zeros)
		return -ENOMEM;
	while (done < len && !ret) {
		u32 n = min_t(u64, len - done, CSD_CHUNK);

		csdk_cmd(&c, CSD_OPC_SLM_WRITE, cd->ns->head->ns_id, lower_32_bits(off + done),
			 upper_32_bits(off + done), n, 0, 0);
		ret = csdk_submit(cd, false, &c, zeros, n, NULL);
		done += n;
	}
	kvfree(zeros);
	return ret;
}

int csdk_alloc(struct csdk_file *cf, struct csd_ioc_alloc *req)
{
	struct csdk_dev *cd = cf->cd;
	u64 align = req->align ? req->align : 4096;
	u64 size, start = 0, end;
	struct csdk_alloc *a, *pos;
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
	ret = csdk_zero(cd, start, size);
	if (ret) {
		csdk_free(cf, req->handle, false);
		return ret > 0 ? -EIO : ret;
	}
	mutex_lock(&cd->lock);
	a->ready = true;
	mutex_unlock(&cd->lock);
	return 0;
}

/* Frees one allocation of cf (handle) or, with all, every allocation of cf. */
int csdk_free(struct csdk_file *cf, u32 handle, bool all)
{
	struct csdk_dev *cd = cf->cd;
	struct csdk_alloc *a, *tmp;
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

u64 csdk_free_bytes(struct csdk_dev *cd)
{
	struct csdk_alloc *a;
	u64 used = 0;

	mutex_lock(&cd->lock);
	list_for_each_entry(a, &cd->allocs, node)
		used += a->len;
	mutex_unlock(&cd->lock);
	return cd->slm_size - used;
}
