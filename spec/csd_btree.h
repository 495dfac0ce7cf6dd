/* SPDX-License-Identifier: MIT */
/*
 * btree.h - the B+-tree node of the chase example (btree_lookup.c), one node per block
 * at the start of it (504 bytes: load the program with record size 512). Shared by the
 * eBPF program and the host code that builds trees (libcsd's csd::btree_build, Python's
 * nvme_csd.btree). Little-endian.
 *
 * An inner node (kind 1) has count children: vals[i] is the LBA of child i, which holds
 * the keys from keys[i] (its smallest) up to keys[i + 1] (excluded). A leaf (kind 2) has
 * count pairs keys[i] -> vals[i], keys ascending. The tree's root is the chase's start LBA.
 * A lookup ends with CSD_BPF_CHASE_DONE and BT_FOUND | value (values < 2^61), 0 (absent)
 * or BT_BAD_NODE (a block that is no node of this format).
 */
#ifndef CSD_BTREE_H
#define CSD_BTREE_H

#define BT_FANOUT 31
#define BT_INNER 1u
#define BT_LEAF 2u
#define BT_RECORD_SIZE 512u
#define BT_FOUND (1ull << 62)
#define BT_BAD_NODE (1ull << 61)
#define BT_VALUE_MASK ((1ull << 61) - 1)

#ifndef __bpf__
#include <stdint.h>
typedef uint32_t bt_u32;
typedef uint64_t bt_u64;
#else
typedef unsigned int bt_u32;
typedef unsigned long long bt_u64;
#endif

struct bt_node {
	bt_u32 kind;
	bt_u32 count;
	bt_u64 keys[BT_FANOUT];
	bt_u64 vals[BT_FANOUT];
};

#endif /* CSD_BTREE_H */
