// SPDX-License-Identifier: MIT
// btree_commands.cc - csdctl btree build|lookup: a B+-tree on the namespace (the node format
// of spec/csd_btree.h), looked up in the drive by the chase example.
#include <cstdio>
#include <fstream>
#include <iostream>

#include "csd/btree.hpp"
#include "csd/program.hpp"

#include "csdctl.hpp"

namespace csdctl {
namespace {

// What `btree build` takes.
struct BtreeArgs {
    std::string lba, pairs;
    uint64_t count = 0;
    uint32_t fanout = 31;
    bool force = false;
};

// A B+-tree (spec/csd_btree.h) on the namespace: pairs "KEY VALUE" a line from a file
// (- for stdin), or keys 1..count with value 10 x key.
int cmd_btree_build(Device &d, const Opts &o, const BtreeArgs &a)
{
    if (a.pairs.empty() == (a.count == 0)) die("btree build: give --pairs FILE or --count N");
    std::map<uint64_t, uint64_t> pairs;
    if (!a.pairs.empty()) {
        std::ifstream f;
        if (a.pairs != "-") {
            f.open(a.pairs);
            if (!f) die("cannot read " + a.pairs);
        }
        std::istream &in = a.pairs == "-" ? std::cin : f;
        std::string k, v;
        while (in >> k >> v) pairs[parse_u64("key", k)] = parse_u64("value", v);
    } else {
        for (uint64_t k = 1; k <= a.count; k++) pairs[k] = 10 * k;
    }
    std::vector<uint64_t> keys, values;
    for (const auto &[k, v] : pairs) keys.push_back(k), values.push_back(v);
    const BtreeLayout t = btree_write(d, keys, values, parse_u64("lba", a.lba), a.fanout, a.force);
    if (o.json) print({{"root_lba", t.root_lba}, {"blocks", t.blocks}, {"depth", t.depth}, {"keys", keys.size()}});
    else std::printf("%zu keys: root at LBA %llu, %llu blocks, depth %u\n", keys.size(),
                     static_cast<unsigned long long>(t.root_lba), static_cast<unsigned long long>(t.blocks), t.depth);
    return 0;
}

int cmd_btree_lookup(Device &d, const Opts &o, uint16_t slot, const std::string &file, const std::string &lba,
                     const std::vector<std::string> &keys)
{
    if (!slot && file.empty()) die("btree lookup: give --slot SLOT or --program FILE");
    Program prog = file.empty() ? Program::attach(d, slot, kBtreeRecordSize) : Program(d, file, kBtreeRecordSize);
    if (file.empty()) prog.keep();  // a slot of the user's stays loaded; one loaded here goes
    const BtreeLayout t{parse_u64("lba", lba), 0, d.caps().max_chase_hops ? d.caps().max_chase_hops : CSD_BPF_MAX_HOPS};
    json list = json::array();
    for (const std::string &k : keys) {
        uint32_t hops = 0;
        std::optional<uint64_t> v;
        auto look = [&] {
            v = btree_lookup(prog, t, parse_u64("key", k), &hops);
            return 0;
        };
        if (file.empty()) on_slot(d, "btree lookup", hex(slot, 4) + "h", look);  // a slot of the user's
        else look();
        if (o.json) list.push_back({{"key", parse_u64("key", k)}, {"found", v.has_value()}, {"value", v.value_or(0)}, {"hops", hops},
                                    {"where", where_name(d.where())}});
        else if (v) std::printf("%s %llu (%u hops)\n", k.c_str(), static_cast<unsigned long long>(*v), hops);
        else std::printf("%s absent (%u hops)\n", k.c_str(), hops);
    }
    if (o.json) print(list);
    say_where(d, o);
    return 0;
}

}  // namespace

// What the btree commands take.
struct BtreeCommandArgs {
    BtreeArgs tree;
    std::vector<std::string> keys;
    uint16_t slot = 0;
    std::string file;
};

void add_btree_commands(Cli &c)
{
    const Opts &o = c.o;
    BtreeCommandArgs &a = c.keep<BtreeCommandArgs>();
    auto *btree = c.group("btree", "a B+-tree on the namespace, looked up in the drive (examples/bpf/btree_lookup.c)");
    BtreeArgs &bt = a.tree;
    auto *bbuild = btree->add_subcommand("build", "write a B+-tree whose root is at LBA (refused over a partition "
                                                   "table, a filesystem, a store or other data, unless --force)");
    c.writers.push_back({bbuild});
    bbuild->add_option("lba", bt.lba, "the root's LBA (the levels below follow it)")->required();
    bbuild->add_option("--pairs", bt.pairs, "file of KEY VALUE lines (- for stdin)");
    bbuild->add_option("--count", bt.count, "or keys 1..N with value 10 x key");
    bbuild->add_option("--fanout", bt.fanout, "entries per node")->check(CLI::Range(2u, kBtreeMaxFanout));
    bbuild->add_flag("--force", bt.force, "write even where the namespace holds a partition table, a filesystem or a "
                                          "store, or the blocks hold data that is no tree's");
    bbuild->callback([&] { c.action = [&](Device &d) { return cmd_btree_build(d, o, bt); }; });
    auto *blookup = btree->add_subcommand("lookup", "look KEYs up in the tree at LBA, one chase each");
    blookup->add_option("lba", bt.lba, "the root's LBA")->required();
    blookup->add_option("keys", a.keys, "keys")->required();
    auto *bslot = blookup->add_option("--slot", a.slot, "slot holding btree_lookup.o (loaded with --record-size 512)");
    blookup->add_option("--program", a.file, "or btree_lookup.o, loaded for the lookups")->excludes(bslot)
        ->check(CLI::ExistingFile);
    blookup->callback([&] { c.action = [&](Device &d) { return cmd_btree_lookup(d, o, a.slot, a.file, bt.lba, a.keys); }; });
}

}  // namespace csdctl
