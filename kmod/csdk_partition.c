// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * csdk_partition.c - each tenant's share of the namespace. The administrator maps users
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
 *
 * The same tenant lists serve the peer-to-peer windows (p2p_windows, csdk_p2p.c).
 */
#include <linux/capability.h>
#include <linux/kernel.h>
#include <linux/cred.h>
#include <linux/moduleparam.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/uidgid.h>

#include "csdk.h"

static char *partitions;
module_param(partitions, charp, 0644);
MODULE_PARM_DESC(partitions,
		 "tenants' LBA partitions: uid:N=FIRST+COUNT,gid:N=FIRST+COUNT,... (default: none)");

/* Whether entry `tok` (uid:N=FIRST+COUNT or gid:N=...) is well formed; fills its fields. */
static bool csdk_tenant_parse(char *tok, bool *is_gid, u32 *id, u64 *first, u64 *count)
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

/*
 * Whether the current task is the user or in the group an entry names. The ids are the
 * administrator's, so they are read in the initial user namespace: read in the opener's,
 * a user could map another tenant's id onto its own uid in a namespace of its own.
 */
static bool csdk_tenant_matches(bool is_gid, u32 id)
{
	if (is_gid) {
		kgid_t g = make_kgid(&init_user_ns, id);

		return gid_valid(g) && in_group_p(g);
	}
	return uid_eq(current_fsuid(), make_kuid(&init_user_ns, id));
}

/*
 * Parses entry i of the list (0-based, empty entries skipped) into its range; 1 if
 * there is one, 0 past the last, -EINVAL if malformed or outside [lo, hi).
 */
static int csdk_tenant_nth(const char *list, int i, const char *what, u64 lo, u64 hi,
			   bool *is_gid, u32 *id, u64 *first, u64 *count)
{
	char *copy = kstrdup(list, GFP_KERNEL), *cur, *tok, shown[64];
	u64 last;
	int ret = 0;

	if (!copy)
		return -ENOMEM;
	cur = strim(copy);
	while ((tok = strsep(&cur, ","))) {
		tok = strim(tok);
		if (!*tok || i-- > 0)
			continue;
		strscpy(shown, tok, sizeof(shown));
		ret = 1;
		if (!csdk_tenant_parse(tok, is_gid, id, first, count) ||
		    check_add_overflow(*first, *count, &last) || *first < lo || last > hi) {
			pr_warn_ratelimited("csd: %s: bad entry '%s' (allowed: %llu up to %llu)\n",
					    what, shown, lo, hi);
			ret = -EINVAL;
		}
		break;
	}
	kfree(copy);
	return ret;
}

int csdk_tenant_entry(char *const *list, const char *what, u64 lo, u64 hi, bool disjoint,
		      u64 *first, u64 *count, bool *any)
{
	u64 f, c, f2, c2;
	bool is_gid, found = false;
	char *copy;
	u32 id;
	int i, j, ret = 0;

	kernel_param_lock(THIS_MODULE);
	copy = kstrdup(*list ? *list : "", GFP_KERNEL);
	kernel_param_unlock(THIS_MODULE);
	if (!copy)
		return -ENOMEM;
	*any = false;
	for (i = 0; !found || disjoint; i++) {
		ret = csdk_tenant_nth(copy, i, what, lo, hi, &is_gid, &id, &f, &c);
		if (ret <= 0)
			break;
		*any = true;
		if (!found && csdk_tenant_matches(is_gid, id)) {
			*first = f;
			*count = c;
			found = true;
		}
		for (j = 0; disjoint && j < i; j++) {
			csdk_tenant_nth(copy, j, what, lo, hi, &is_gid, &id, &f2, &c2);
			if (f < f2 + c2 && f2 < f + c) {
				pr_warn_ratelimited("csd: %s: entries %d and %d overlap\n", what,
						    j + 1, i + 1);
				ret = -EINVAL;
				break;
			}
		}
		if (ret < 0)
			break;
	}
	kfree(copy);
	if (ret < 0)
		return ret;
	return found ? 1 : 0;
}

int csdk_partition_open(struct csdk_file *cf, u64 ns_lbas)
{
	bool any;
	int ret;

	cf->part_start = 0;
	cf->part_lbas = ns_lbas;
	ret = csdk_tenant_entry(&partitions, "partitions", 0, ns_lbas, false, &cf->part_start,
				&cf->part_lbas, &any);
	if (ret < 0)
		return ret;
	if (!ret && any && !capable(CAP_SYS_ADMIN))
		return -EACCES;
	return 0;
}
