// SPDX-License-Identifier: MIT
/*
 * B+-tree lookup as a chase (downloaded program mode 3, XRP-style): the device reads the
 * node at the start LBA (params[0], the root), calls this program with it, and follows
 * the LBA it answers until it answers "done". params[1] is the key. Node format: btree.h.
 * The search is unrolled and branch-free (eBPF programs may not loop, and the verifier
 * follows every path); every access is at a constant offset inside the 512-byte record.
 */
#include "csd_bpf.h"
#include "csd_btree.h"

#define CHASE_DONE (1ull << 63)

/*
 * Branch-free steps: the verifier follows every path of a program, and 31 if-statements
 * would make 2^31 of them. ltu(x, y) is x < y (unsigned) as 0 or 1 (Hacker's Delight 2-12);
 * is0(x) is x == 0; pick(m, a, b) is a where m is all ones, b where it is 0. opaque()
 * hides a value from clang, which would otherwise see the comparisons and branch again.
 */
static inline u64 opaque(u64 x)
{
	asm volatile("" : "+r"(x));
	return x;
}
static inline u64 ltu(u64 x, u64 y) { return ((~x & y) | (~(x ^ y) & opaque(x - y))) >> 63; }
static inline u64 is0(u64 x) { return ((x | opaque(0 - x)) >> 63) ^ 1; }
static inline u64 pick(u64 m, u64 a, u64 b) { m = opaque(m); return (a & m) | (b & ~m); }

#define LEAF_STEP(i) \
	m = 0 - (ltu(i, count) & is0(n->keys[i] ^ key)); \
	res = pick(m, CHASE_DONE | BT_FOUND | (n->vals[i] & BT_VALUE_MASK), res);
#define INNER_STEP(i) \
	m = 0 - (ltu(i, count) & (ltu(key, n->keys[i]) ^ 1)); \
	next = pick(m, n->vals[i], next);
#define ALL(S) \
	S(0) S(1) S(2) S(3) S(4) S(5) S(6) S(7) S(8) S(9) S(10) S(11) S(12) S(13) S(14) S(15) \
	S(16) S(17) S(18) S(19) S(20) S(21) S(22) S(23) S(24) S(25) S(26) S(27) S(28) S(29) S(30)

CSD_PROGRAM u64 btree_lookup(const void *record)
{
	const struct bt_node *n = record;
	const u64 key = csd_param(1);
	const u64 count = n->count;
	u64 m;

	if (count > BT_FANOUT)
		return CHASE_DONE | BT_BAD_NODE;
	if (n->kind == BT_LEAF) {
		u64 res = CHASE_DONE; /* absent */
		ALL(LEAF_STEP)
		return res;
	}
	if (n->kind == BT_INNER) {
		u64 next = CHASE_DONE; /* below the smallest key: absent */
		ALL(INNER_STEP)
		return next;
	}
	return CHASE_DONE | BT_BAD_NODE;
}
