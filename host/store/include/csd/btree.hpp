// SPDX-License-Identifier: MIT
// btree.hpp - the B+-tree of the chase example (spec/csd_btree.h, btree_lookup.c) on
// the namespace: built by the host in one pass over sorted keys, looked up in the drive by
// one chase per key (Program::run_chase), with no host round trip per level.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "csd/program.hpp"

namespace csd {

// The record size to load btree_lookup.o with, and the most entries a node holds.
constexpr uint32_t kBtreeRecordSize = 512;
constexpr uint32_t kBtreeMaxFanout = 31;

// Where a tree lies: its root (the chase's start LBA), its blocks from there, its depth.
struct BtreeLayout {
    uint64_t root_lba = 0;
    uint64_t blocks = 0;
    uint32_t depth = 0;
};

// The blocks (lba_size bytes each, at least 512) of a B+-tree of keys[i] -> values[i]
// (keys strictly ascending, at least one; values below 2^61), fanout 2 to 31 entries per
// node, root at base_lba and the levels below it after it. EINVAL for anything else.
std::vector<uint8_t> btree_blocks(const std::vector<uint64_t> &keys, const std::vector<uint64_t> &values,
                                  uint64_t base_lba, uint32_t lba_size, uint32_t fanout, BtreeLayout *layout);
// The same written to the namespace of d from base_lba (LBA Out of Range past its end).
// Unless force, refuses (EEXIST, nothing written, naming what it found) a namespace that
// holds a partition table, a filesystem or volume signature or an object store
// (ObjectStore::holds), and blocks to be written that hold anything but zeros or nodes of
// this format (a tree rebuilt in place needs no force): a real drive is not overwritten by
// mistake.
BtreeLayout btree_write(Device &d, const std::vector<uint64_t> &keys, const std::vector<uint64_t> &values,
                        uint64_t base_lba, uint32_t fanout = 31, bool force = false);
// One lookup in the drive: the value of key, or none; *hops (if given) = the blocks read.
// lookup: examples/bpf/btree_lookup.o loaded for 512-byte records. A block that is no node
// of the format: csd::Error EIO.
std::optional<uint64_t> btree_lookup(Program &lookup, const BtreeLayout &tree, uint64_t key, uint32_t *hops = nullptr);

}  // namespace csd
