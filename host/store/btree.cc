// SPDX-License-Identifier: MIT
// btree.cc - the chase example's B+-tree: bulk-built bottom-up from sorted keys (full
// nodes), laid out root first, looked up with the btree_lookup program.
#include "csd/btree.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>

#include "csd/store.hpp"
#include "csd_btree.h"  // spec: the node format the program reads

namespace csd {

static_assert(sizeof(bt_node) <= BT_RECORD_SIZE, "a node fits the program's record");
static_assert(kBtreeRecordSize == BT_RECORD_SIZE && kBtreeMaxFanout == BT_FANOUT, "btree.hpp agrees with btree.h");

std::vector<uint8_t> btree_blocks(const std::vector<uint64_t> &keys, const std::vector<uint64_t> &values,
                                  uint64_t base_lba, uint32_t lba_size, uint32_t fanout, BtreeLayout *layout)
{
    if (keys.empty() || keys.size() != values.size()) throw Error("a B+-tree needs as many values as keys, at least one", EINVAL);
    if (fanout < 2 || fanout > BT_FANOUT) throw Error("B+-tree fanout " + std::to_string(fanout) + " (2 to 31)", EINVAL);
    if (lba_size < BT_RECORD_SIZE) throw Error("B+-tree nodes need blocks of at least 512 bytes", EINVAL);
    for (size_t i = 0; i < keys.size(); i++) {
        if (i && keys[i] <= keys[i - 1]) throw Error("B+-tree keys must be strictly ascending", EINVAL);
        if (values[i] > BT_VALUE_MASK) throw Error("B+-tree values must be below 2^61", EINVAL);
    }
    // levels bottom-up; each node's smallest key is keys[0]
    std::vector<std::vector<bt_node>> levels(1);
    for (size_t i = 0; i < keys.size(); i += fanout) {
        bt_node n{BT_LEAF, 0, {}, {}};
        for (size_t j = i; j < keys.size() && j < i + fanout; j++, n.count++) {
            n.keys[n.count] = keys[j];
            n.vals[n.count] = values[j];
        }
        levels[0].push_back(n);
    }
    while (levels.back().size() > 1) {
        std::vector<bt_node> up;
        const std::vector<bt_node> &below = levels.back();
        for (size_t i = 0; i < below.size(); i += fanout) {
            bt_node n{BT_INNER, 0, {}, {}};
            for (size_t j = i; j < below.size() && j < i + fanout; j++, n.count++) n.keys[n.count] = below[j].keys[0];
            up.push_back(n);
        }
        levels.push_back(std::move(up));
    }
    // LBAs top-down: the root at base_lba, each level after the one above it
    std::vector<uint64_t> first(levels.size());
    uint64_t blocks = 0;
    for (size_t l = levels.size(); l-- > 0;) {
        first[l] = base_lba + blocks;
        blocks += levels[l].size();
    }
    std::vector<uint8_t> out(blocks * lba_size);
    for (size_t l = 0; l < levels.size(); l++) {
        for (size_t i = 0; i < levels[l].size(); i++) {
            bt_node n = levels[l][i];
            if (l > 0)
                for (uint32_t c = 0; c < n.count; c++) n.vals[c] = first[l - 1] + i * fanout + c;
            std::memcpy(out.data() + (first[l] - base_lba + i) * lba_size, &n, sizeof n);
        }
    }
    if (layout) *layout = BtreeLayout{base_lba, blocks, static_cast<uint32_t>(levels.size())};
    return out;
}

namespace {

// Whether a block of the namespace is zeros or a node of spec/csd_btree.h (kind, count and
// nothing past the node): what a tree may be written over without force.
bool zero_or_node(const uint8_t *block, uint32_t size)
{
    bt_node n;
    std::memcpy(&n, block, sizeof n);
    const bool node = (n.kind == BT_INNER || n.kind == BT_LEAF) && n.count >= 1 && n.count <= BT_FANOUT;
    const uint32_t from = node ? sizeof n : 0;
    return std::all_of(block + from, block + size, [](uint8_t b) { return b == 0; });
}

// Throws EEXIST (nothing written) where writing t's blocks would overwrite something the
// user may want: what ObjectStore::format would refuse, or a block that is no tree's.
void refuse_overwrite(Device &d, const BtreeLayout &t)
{
    const std::string force = ": write with force (csdctl btree build --force, btree_write(..., force = true), "
                              "BTree.build(..., force=True)) if that is what you want";
    const std::string where = "a B+-tree at LBAs " + std::to_string(t.root_lba) + "-" +
                              std::to_string(t.root_lba + t.blocks - 1);
    if (t.root_lba >= d.ns().lba_count || t.blocks > d.ns().lba_count - t.root_lba) return;  // the drive refuses it
    const std::string found = ObjectStore::holds(d);
    if (!found.empty()) throw Error("btree build: the namespace holds " + found + "; " + where + " would write into it" + force, EEXIST);
    const uint32_t lba = d.ns().lba_size;
    const uint64_t step = std::max<uint64_t>(1, (1u << 20) / lba);
    std::vector<uint8_t> buf;
    for (uint64_t i = 0; i < t.blocks; i += step) {
        const uint64_t n = std::min(step, t.blocks - i);
        buf.resize(n * lba);
        d.read_lbas(t.root_lba + i, n, buf.data());
        for (uint64_t b = 0; b < n; b++) {
            if (!zero_or_node(buf.data() + b * lba, lba)) {
                throw Error("btree build: LBA " + std::to_string(t.root_lba + i + b) +
                                " holds data that is no B+-tree node; " + where + " would overwrite it" + force,
                            EEXIST);
            }
        }
    }
}

}  // namespace

BtreeLayout btree_write(Device &d, const std::vector<uint64_t> &keys, const std::vector<uint64_t> &values,
                        uint64_t base_lba, uint32_t fanout, bool force)
{
    BtreeLayout t;
    const std::vector<uint8_t> blocks = btree_blocks(keys, values, base_lba, d.ns().lba_size, fanout, &t);
    if (!force) refuse_overwrite(d, t);  // a real drive treated with care: look before writing over it
    d.write_lbas(base_lba, t.blocks, blocks.data());
    return t;
}

std::optional<uint64_t> btree_lookup(Program &lookup, const BtreeLayout &tree, uint64_t key, uint32_t *hops)
{
    // One command unless the caller wants the hop count (a read of the result besides).
    const uint32_t limit = std::max<uint32_t>(tree.depth, 1);
    uint64_t value;
    if (hops) {
        const ChaseResult r = lookup.run_chase(tree.root_lba, {key}, limit);
        *hops = r.hops;
        value = r.value;
    } else {
        value = lookup.chase_value(tree.root_lba, {key}, limit);
    }
    if (value & BT_BAD_NODE) throw Error("B+-tree lookup: a block that is no node", EIO);
    if (value & BT_FOUND) return value & BT_VALUE_MASK;
    return std::nullopt;
}

}  // namespace csd
