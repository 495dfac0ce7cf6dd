// SPDX-License-Identifier: GPL-2.0
/*
 * csd_partition.c - each tenant's share of the namespace. The administrator maps users
 * and groups to LBA ranges with the `partitions` parameter (at load time or later through
 * /sys/module/csd/parameters/partitions; it applies to files opened afterwards):
 *
 *	partitions=uid:1000=0+1048576,gid:2000=1048576+524288
 *
 * Each entry is `uid:N` or `gid:N`, `=`, the first LBA, `+`, the number of LBAs; the
 * first entry that matches the opener (its filesystem uid, or a group it is in) gives
 * its partition. A file then sees its partition as the whole namespace: its LBA 0 is the
 * partition's first LBA, CSD_IOC_INFO reports the partition's size, and every
 * LBA-addressing ioctl (SLM Load/Store, namespace I/O, Compare and Write) is checked
 * against it, so an object store formatted through it lives in that partition alone.
 * With no entries, every file sees the whole namespace; with entries, a user that matches
 * none cannot open the device unless it has CAP_SYS_ADMIN (then: the whole namespace).
 */
#include <linux/capability.h>
#include <linux/kernel.h>
#include <linux/cred.h>
#include <linux/moduleparam.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/uidgid.h>

#include "csd.h"

static char *partitions;
module_param(partitions, charp, 0644);
MODULE_PARM_DESC(partitions,
		 "tenants' LBA partitions: uid:N=FIRST+COUNT,gid:N=FIRST+COUNT,... (default: none)");

/* Whether entry `tok` (uid:N=FIRST+COUNT or gid:N=...) is well formed; fills its fields. */
static bool csd_partition_parse(char *tok, bool *is_gid, u32 *id, u64 *first, u64 *count)
{
	char *eq, *plus;

	if (strncmp(tok, "uid:", 4) && strncmp(tok, "gid:", 4))
		return false;
	*is_gid = tok[0] == 'g';
	eq = strchr(tok, '=');
	plus = eq ? strchr(eq, '+') : NULL;
	if (!plus)
		return false;
	*eq = *plus = '\0';
	return !kstrtou32(tok + 4, 10, id) && !kstrtou64(eq + 1, 10, first) &&
	       !kstrtou64(plus + 1, 10, count) && *count > 0;
}

/* Whether the current task is the user or in the group an entry names. */
static bool csd_partition_matches(bool is_gid, u32 id)
{
	if (is_gid) {
		kgid_t g = make_kgid(current_user_ns(), id);

		return gid_valid(g) && in_group_p(g);
	}
	return uid_eq(current_fsuid(), make_kuid(current_user_ns(), id));
}

int csd_partition_open(struct csd_file *cf, u64 ns_lbas)
{
	char *copy, *cur, *tok, shown[64];
	bool any = false, found = false;
	int ret = 0;

	cf->part_start = 0;
	cf->part_lbas = ns_lbas;
	kernel_param_lock(THIS_MODULE);
	copy = kstrdup(partitions ? partitions : "", GFP_KERNEL);
	kernel_param_unlock(THIS_MODULE);
	if (!copy)
		return -ENOMEM;
	cur = strim(copy);
	while ((tok = strsep(&cur, ",")) && !found) {
		bool is_gid;
		u32 id;
		u64 first, count, last;

		tok = strim(tok);
		if (!*tok)
			continue;
		any = true;
		strscpy(shown, tok, sizeof(shown));
		if (!csd_partition_parse(tok, &is_gid, &id, &first, &count) ||
		    check_add_overflow(first, count, &last) || last > ns_lbas) {
			pr_warn_ratelimited("csd: partitions: bad entry '%s' (namespace: %llu LBAs)\n",
					    shown, ns_lbas);
			ret = -EINVAL;
			break;
		}
		if (csd_partition_matches(is_gid, id)) {
			cf->part_start = first;
			cf->part_lbas = count;
			found = true;
		}
	}
	kfree(copy);
	if (!ret && any && !found && !capable(CAP_SYS_ADMIN))
		ret = -EACCES;
	return ret;
}
