// SPDX-License-Identifier: MIT
// Pointer chasing (downloaded program mode 3, spec 1.2): the example B+-tree lookup
// (examples/bpf/btree_lookup.c) over a tree built here on a namespace held in memory, which
// the test reads for the core round after round as an embedding would, against a walk of
// the same tree by the host; a chase that loops (Hop Limit Exceeded), a next LBA past the
// namespace, a record larger than the block or read past by the program, cancellation
// between hops and the timing model's one media read per hop.
#include <map>

#include "csd_btree.h"
#include "core_fixture.h"

namespace {

static_assert(sizeof(bt_node) == 504, "a node fits the 512-byte record");

class Chase : public CoreTest {
protected:
    static constexpr uint32_t kLba = 512;
    static constexpr uint64_t kLbas = 2048;  // a 1 MiB namespace
    static constexpr uint64_t kOut = 0;      // the result in SLM
    std::vector<uint8_t> disk = std::vector<uint8_t>(kLbas * kLba);
    csd_ctx ns{kLbas, kLba, 8u << 20, 0};
    std::vector<uint64_t> reads;  // every LBA the core asked for, in order
    uint16_t slot = 0;
    int cancel_after = -1;  // rounds before the test sets the cancel flag (-1: never)

    void SetUp() override
    {
        CoreTest::SetUp();
        const std::string obj = std::string(CSD_BPF_EXAMPLES) + "/btree_lookup.o";
        const std::string skip = ebpf_tests_skipped(core, obj);
        if (!skip.empty()) GTEST_SKIP() << skip;
        slot = load(read_file(obj), BT_RECORD_SIZE);
        ASSERT_NE(slot, 0);
    }

    // Program Load of a whole image in one chunk: the slot, or 0 with *st the refusal.
    uint16_t load(const std::vector<uint8_t> &img, uint32_t record_size, uint16_t *st_out = nullptr)
    {
        csd_op op;
        const uint32_t n = static_cast<uint32_t>(img.size());
        uint16_t st = decode(CSD_OPC_PROGRAM_LOAD, csd_program_load_cdw10(0, CSD_PROGRAM_TYPE_EBPF), n, 0, n,
                             record_size, &op);
        uint32_t dw0 = 0;
        char why[256];
        why[0] = 0;
        if (!st) st = csd_core_program_load(core, &op, img.data(), &dw0, why, sizeof why);
        csd_core_complete(core, &op, st);
        if (st_out) *st_out = st;
        else EXPECT_EQ(st, 0) << csd_status_name(st) << ": " << why << " at " << dw0;
        return st ? 0 : static_cast<uint16_t>(dw0);
    }

    bt_node &node(uint64_t lba) { return *reinterpret_cast<bt_node *>(disk.data() + lba * kLba); }

    // A B+-tree of keys[i] -> vals[i] (keys ascending) at LBA base, fanout f: the root at
    // base. Returns its depth.
    int build(const std::vector<uint64_t> &keys, const std::vector<uint64_t> &vals, uint64_t base, uint32_t f)
    {
        // levels bottom-up: each node's (smallest key, its pairs or children)
        std::vector<std::vector<bt_node>> levels(1);
        for (size_t i = 0; i < keys.size(); i += f) {
            bt_node n{BT_LEAF, 0, {}, {}};
            for (size_t j = i; j < keys.size() && j < i + f; j++, n.count++) {
                n.keys[n.count] = keys[j];
                n.vals[n.count] = vals[j];
            }
            levels[0].push_back(n);
        }
        while (levels.back().size() > 1) {
            const auto &below = levels.back();
            std::vector<bt_node> up;
            for (size_t i = 0; i < below.size(); i += f) {
                bt_node n{BT_INNER, 0, {}, {}};
                for (size_t j = i; j < below.size() && j < i + f; j++, n.count++) n.keys[n.count] = below[j].keys[0];
                up.push_back(n);
            }
            levels.push_back(up);
        }
        // LBAs top-down: the root at base, each level after the one above
        std::vector<uint64_t> first(levels.size());
        uint64_t at = base;
        for (size_t l = levels.size(); l-- > 0;) {
            first[l] = at;
            at += levels[l].size();
        }
        for (size_t l = 0; l < levels.size(); l++) {
            for (size_t i = 0; i < levels[l].size(); i++) {
                bt_node n = levels[l][i];
                if (l > 0)
                    for (uint32_t c = 0; c < n.count; c++) n.vals[c] = first[l - 1] + i * f + c;
                node(first[l] + i) = n;
            }
        }
        return static_cast<int>(levels.size());
    }

    // The host's walk of the same tree: the value a lookup gives, and its hops.
    std::pair<uint64_t, uint32_t> host_walk(uint64_t root, uint64_t key)
    {
        uint64_t lba = root;
        for (uint32_t hops = 1;; hops++) {
            const bt_node &n = node(lba);
            if (n.kind == BT_LEAF) {
                for (uint32_t i = 0; i < n.count; i++)
                    if (n.keys[i] == key) return {BT_FOUND | n.vals[i], hops};
                return {0, hops};
            }
            uint64_t next = UINT64_MAX;
            for (uint32_t i = 0; i < n.count; i++)
                if (n.keys[i] <= key) next = n.vals[i];
            if (next == UINT64_MAX) return {0, hops};
            lba = next;
        }
    }

    static std::vector<uint8_t> params(uint32_t hops, std::vector<uint64_t> p, uint32_t mode = CSD_BPF_CHASE)
    {
        std::vector<uint8_t> v(16 + 8 * p.size());
        const uint32_t h[4] = {hops, mode, static_cast<uint32_t>(p.size()), 0};
        std::memcpy(v.data(), h, 16);
        std::memcpy(v.data() + 16, p.data(), 8 * p.size());
        return v;
    }

    // A chase as an embedding runs it, one read per round (from disk). *finish:
    // csd_exec_model_finish of 1 ns.
    ExecOut chase(uint64_t root, uint64_t key, uint32_t hops = 16, uint64_t out_len = 16, bool give_ns = true,
                  uint64_t *finish = nullptr)
    {
        const std::vector<uint8_t> p = params(hops, {root, key});
        const auto desc = make_descriptor(slot, {{kOut, out_len}}, p.data(), static_cast<uint32_t>(p.size()));
        int rounds = 0;
        return exec_reading(desc, give_ns ? &ns : nullptr, [&](const csd_extent *ext, uint32_t n, int *cancel) -> uint16_t {
            EXPECT_EQ(n, 1u) << "one block per hop";
            EXPECT_EQ(ext[0].nlb, 1u);
            EXPECT_LT(ext[0].slba, kLbas) << "a read past the namespace";
            if (ext[0].slba >= kLbas) return CSD_STATUS_INTERNAL_ERROR;
            std::memcpy(ext[0].buf, disk.data() + ext[0].slba * kLba, kLba);
            reads.push_back(ext[0].slba);
            if (++rounds == cancel_after) *cancel = 1;
            return 0;
        }, finish);
    }
    ExecOut chase_raw(const std::vector<uint8_t> &p, std::vector<std::pair<uint64_t, uint64_t>> ranges)
    {
        const auto desc = make_descriptor(slot, ranges, p.data(), static_cast<uint32_t>(p.size()));
        csd_exec *job = nullptr;
        ExecOut r{};
        r.status = csd_core_exec_prepare(core, desc.data(), static_cast<uint32_t>(desc.size()), &job);
        if (r.status) return r;
        csd_exec_set_namespace(job, &ns);
        const csd_extent *ext;
        EXPECT_EQ(csd_exec_media(job, 0, nullptr, &ext), 0u) << "refused before any read";
        r.status = csd_core_exec_run(core, job, nullptr, &r.dw0, &r.dw1);
        return r;
    }
};

TEST_F(Chase, LookupsEqualTheHostWalk)
{
    std::vector<uint64_t> keys, vals;
    std::map<uint64_t, uint64_t> dict;
    std::mt19937_64 g(3);
    for (uint64_t k = 5; keys.size() < 3000; k += 1 + g() % 7) {
        keys.push_back(k);
        vals.push_back(g() & BT_VALUE_MASK);
        dict[k] = vals.back();
    }
    const int depth = build(keys, vals, 100, BT_FANOUT);
    EXPECT_EQ(depth, 3);
    for (int t = 0; t < 400; t++) {
        const uint64_t key = t < 200 ? keys[g() % keys.size()] : g() % (keys.back() + 10);
        reads.clear();
        const ExecOut r = chase(100, key);
        ASSERT_EQ(r.status, 0) << csd_status_name(r.status);
        const auto [want, hops] = host_walk(100, key);
        const uint64_t got = r.dw0 | uint64_t{r.dw1} << 32;
        EXPECT_EQ(got, want) << key;
        auto it = dict.find(key);
        EXPECT_EQ(got, it == dict.end() ? 0 : BT_FOUND | it->second) << key;
        const auto out = get<uint64_t>(kOut, 2);
        EXPECT_EQ(out[0], got);
        EXPECT_EQ(out[1], hops) << "hops, reserved 0";
        EXPECT_EQ(reads.size(), hops) << "one read per hop";
        EXPECT_EQ(reads[0], 100u) << "the root first";
    }
}

TEST_F(Chase, FanoutTwoMakesDeepTrees)
{
    std::vector<uint64_t> keys, vals;
    for (uint64_t k = 0; k < 64; k++) keys.push_back(k * 3), vals.push_back(k);
    EXPECT_EQ(build(keys, vals, 0, 2), 6);  // 32 leaves, 16, 8, 4, 2, the root
    const ExecOut r = chase(0, 63 * 3);
    ASSERT_EQ(r.status, 0);
    EXPECT_EQ(r.dw0, 63u);
    EXPECT_EQ(r.dw1, BT_FOUND >> 32);
    EXPECT_EQ(get<uint32_t>(kOut, 3)[2], 6u);
    const std::vector<uint64_t> path = reads;
    ASSERT_EQ(path.size(), 6u);
    // a hop limit below the depth: Hop Limit Exceeded, DW0/DW1 the LBA it would read next
    reads.clear();
    const ExecOut short_limit = chase(0, 63 * 3, 5);
    EXPECT_EQ(short_limit.status, CSD_STATUS_HOP_LIMIT_EXCEEDED | CSD_STATUS_DNR);
    EXPECT_EQ(reads.size(), 5u);
    EXPECT_EQ(short_limit.dw0 | uint64_t{short_limit.dw1} << 32, path[5]);
}

TEST_F(Chase, ALoopEndsAtTheHopLimit)
{
    // two inner nodes naming each other
    node(10) = bt_node{BT_INNER, 1, {0}, {11}};
    node(11) = bt_node{BT_INNER, 1, {0}, {10}};
    const ExecOut r = chase(10, 5, 64);
    EXPECT_EQ(r.status, CSD_STATUS_HOP_LIMIT_EXCEEDED | CSD_STATUS_DNR);
    EXPECT_STREQ(csd_status_name(r.status), "Hop Limit Exceeded");
    EXPECT_EQ(reads.size(), CSD_BPF_MAX_HOPS);
    EXPECT_EQ(r.dw0, 10u) << "the LBA it would read next";
    // past the device's cap, or none: Invalid Parameters before any read
    reads.clear();
    EXPECT_EQ(chase(10, 5, CSD_BPF_MAX_HOPS + 1).code(), CSD_STATUS_INVALID_PARAMETERS);
    EXPECT_EQ(chase(10, 5, 0).code(), CSD_STATUS_INVALID_PARAMETERS);
    EXPECT_TRUE(reads.empty());
}

TEST_F(Chase, NextLbaPastTheNamespaceReadsNothingThere)
{
    node(3) = bt_node{BT_INNER, 1, {0}, {kLbas}};
    const ExecOut r = chase(3, 9);
    EXPECT_EQ(r.status, CSD_STATUS_LBA_OUT_OF_RANGE | CSD_STATUS_DNR);
    EXPECT_EQ(r.dw0, kLbas);
    EXPECT_EQ(reads, std::vector<uint64_t>{3});
    node(3).vals[0] = UINT64_MAX >> 1;  // the largest "next" a program can name
    reads.clear();
    EXPECT_EQ(chase(3, 9).code(), CSD_STATUS_LBA_OUT_OF_RANGE);
    EXPECT_EQ(reads.size(), 1u);
    // a start LBA past it: nothing read at all
    reads.clear();
    EXPECT_EQ(chase(kLbas, 9).code(), CSD_STATUS_LBA_OUT_OF_RANGE);
    EXPECT_EQ(chase(UINT64_MAX, 9).code(), CSD_STATUS_LBA_OUT_OF_RANGE);
    EXPECT_TRUE(reads.empty());
    // a block that is no node
    std::memset(disk.data() + 7 * kLba, 0xEE, kLba);
    const ExecOut bad = chase(7, 1);
    EXPECT_EQ(bad.status, 0);
    EXPECT_EQ(bad.dw1, BT_BAD_NODE >> 32);
}

TEST_F(Chase, BadParametersAndNoNamespace)
{
    node(0) = bt_node{BT_LEAF, 1, {4}, {40}};
    EXPECT_EQ(chase(0, 4, 16, 8).code(), CSD_STATUS_OUTPUT_OVERFLOW) << "out shorter than 16 bytes";
    EXPECT_EQ(chase(0, 4, 16, 16, false).code(), CSD_STATUS_INVALID_NAMESPACE) << "no NVM namespace named";
    EXPECT_EQ(chase_raw(params(4, {}), {{0, 16}}).code(), CSD_STATUS_INVALID_PARAMETERS) << "no start LBA";
    EXPECT_EQ(chase_raw(params(4, {0, 4}), {{0, 16}, {64, 16}}).code(), CSD_STATUS_INVALID_PARAMETERS) << "two ranges";
    EXPECT_EQ(chase_raw(params(4, {0, 4}, 4), {{0, 16}}).code(), CSD_STATUS_INVALID_PARAMETERS) << "mode 4";
    // the other modes keep their two ranges
    EXPECT_EQ(chase_raw(params(1, {0, 4}, CSD_BPF_MAP), {{0, 512}}).code(), CSD_STATUS_INVALID_PARAMETERS);
    // a record larger than the namespace's blocks
    ns.lba_size = 256;
    ns.lba_count = kLbas * 2;
    EXPECT_EQ(chase(0, 4).code(), CSD_STATUS_INVALID_PARAMETERS);
    EXPECT_TRUE(reads.empty());
}

TEST_F(Chase, AProgramReadingPastItsRecordIsRefusedAtLoad)
{
    // the lookup reads 504 bytes of its record: loaded for 256-byte records it is refused
    uint16_t st = 0;
    EXPECT_EQ(load(read_file(std::string(CSD_BPF_EXAMPLES) + "/btree_lookup.o"), 256, &st), 0);
    EXPECT_EQ(st, CSD_STATUS_INVALID_PROGRAM_IMAGE | CSD_STATUS_DNR);
}

TEST_F(Chase, CancelledBetweenHops)
{
    std::vector<uint64_t> keys, vals;
    for (uint64_t k = 0; k < 64; k++) keys.push_back(k), vals.push_back(k);
    build(keys, vals, 0, 2);
    cancel_after = 2;
    const ExecOut r = chase(0, 17);
    EXPECT_EQ(CSD_STATUS_CODE(r.status), CSD_STATUS_ABORT_REQUESTED);
    EXPECT_EQ(reads.size(), 2u) << "no hop after the Abort";
}

TEST_F(Chase, EachHopIsOneMediaReadInTheModel)
{
    csd_model_params p{};
    p.media_read_latency_ns = 10000;
    p.bpf_record_ns = 100;
    csd_core_set_model(core, &p);
    std::vector<uint64_t> keys, vals;
    for (uint64_t k = 0; k < 64; k++) keys.push_back(k), vals.push_back(k);
    build(keys, vals, 0, 2);  // depth 6
    uint64_t finish = 0;
    ASSERT_EQ(chase(0, 33, 16, 16, true, &finish).status, 0);
    EXPECT_EQ(finish, 1 + 5 * (10000 + 100)) << "five dependent reads past the first";
    // the arrival schedule counts the first hop: one media read of one block
    const auto p2 = params(16, {0, 33});
    const auto desc = make_descriptor(slot, {{kOut, 16}}, p2.data(), static_cast<uint32_t>(p2.size()));
    csd_exec *job = nullptr;
    ASSERT_EQ(csd_core_exec_prepare(core, desc.data(), static_cast<uint32_t>(desc.size()), &job), 0);
    csd_exec_set_namespace(job, &ns);
    csd_model_work w{};
    csd_exec_model_work(job, &w);
    EXPECT_EQ(w.media_read_op, 1);
    EXPECT_EQ(w.media_read, kLba);
    EXPECT_EQ(w.records, 1u);
    EXPECT_EQ(csd_exec_model_finish(job, 5), 5u) << "not walked yet: nothing more";
    csd_core_exec_discard(job);
}

TEST_F(Chase, CapabilitiesGiveTheHopCap)
{
    std::vector<uint8_t> page(CSD_LOG_MAX_SIZE);
    uint32_t avail;
    ASSERT_EQ(csd_core_get_log(core, CSD_LOG_CAPABILITIES, 0, 0, page.data(), &avail), 0);
    uint32_t cap;
    std::memcpy(&cap, page.data() + offsetof(csd_caps_log, max_chase_hops), 4);
    EXPECT_EQ(cap, CSD_BPF_MAX_HOPS);
}

}  // namespace
