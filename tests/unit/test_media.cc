// SPDX-License-Identifier: MIT
// gather and embedding_bag (media programs): against a naive gather and embedding bag
// written here, over a namespace held in memory that the test reads for the core as an
// embedding would; bad input (bytes, indices or a table past the namespace) reads nothing.
#include <algorithm>
#include <cmath>
#include <set>

#include "core_fixture.h"

namespace {

class Media : public CoreTest {
protected:
    static constexpr uint32_t kLba = 512;
    static constexpr uint64_t kLbas = 4096;  // a 2 MiB namespace
    std::vector<uint8_t> disk;
    std::vector<csd_extent> reads;  // every extent the core asked for
    csd_ctx ns{kLbas, kLba, 8u << 20, 0};

    void SetUp() override
    {
        CoreTest::SetUp();
        disk.resize(kLbas * kLba);
        std::mt19937 g(7);
        for (auto &b : disk) b = static_cast<uint8_t>(g());
    }

    // An Execute as an embedding runs a media program: decode, prepare, the namespace, the
    // reads the core plans (from disk here), run, complete.
    ExecOut exec_media(const std::vector<uint8_t> &desc, uint16_t read_status = 0, int cancel = 0)
    {
        return exec_reading(desc, &ns, [&](const csd_extent *ext, uint32_t n, int *) {
            for (uint32_t i = 0; i < n; i++) {
                EXPECT_LE(ext[i].slba + ext[i].nlb, kLbas) << "a read past the namespace";
                if (ext[i].slba + ext[i].nlb > kLbas) continue;
                std::memcpy(ext[i].buf, disk.data() + ext[i].slba * kLba, uint64_t{ext[i].nlb} * kLba);
                reads.push_back(ext[i]);
            }
            return read_status;
        }, nullptr, cancel);
    }
    ExecOut exec_raw(const std::vector<uint8_t> &desc) override { return exec_media(desc); }
};

// The bytes a gather must produce, from the disk directly.
std::vector<uint8_t> naive_gather(const std::vector<uint8_t> &disk, const std::vector<csd_gather_entry> &es)
{
    std::vector<uint8_t> out;
    for (const auto &e : es) {
        const uint64_t at = e.lba * 512 + e.offset;
        out.insert(out.end(), disk.begin() + at, disk.begin() + at + e.length);
    }
    return out;
}

TEST_F(Media, GatherEqualsANaiveGatherAndCoalescesItsReads)
{
    std::mt19937 g(3);
    std::vector<csd_gather_entry> es;
    for (int i = 0; i < 300; i++) {
        const uint64_t lba = g() % (kLbas - 8);
        es.push_back({lba, static_cast<uint32_t>(g() % 1500), static_cast<uint32_t>(g() % 2000)});
    }
    es.push_back({5, 0, 512});   // adjacent blocks: one run
    es.push_back({6, 10, 100});
    es.push_back({5, 100, 20});  // the same block again
    es.push_back({kLbas - 1, 500, 12});  // the last bytes of the namespace
    es.push_back({kLbas + 5, 0, 0});     // empty: reads nothing, wherever it points
    put(0, es);
    const auto want = naive_gather(disk, es);
    csd_gather_params p{static_cast<uint32_t>(es.size()), 0};
    const uint64_t out = 1 << 20;
    const ExecOut r = exec(CSD_PROG_GATHER, {{0, es.size() * 16}, {out, want.size()}}, p);
    ASSERT_OK(r);
    EXPECT_EQ(r.dw0, want.size());
    EXPECT_EQ(get<uint8_t>(out, want.size()), want);
    // coalesced: sorted, distinct, no two runs touching, each block of an entry read once
    for (size_t i = 1; i < reads.size(); i++) EXPECT_GT(reads[i].slba, reads[i - 1].slba + reads[i - 1].nlb);
    std::set<uint64_t> blocks;
    for (const auto &e : es) {
        if (!e.length) continue;
        const uint64_t s = e.lba * 512 + e.offset;
        for (uint64_t b = s / 512; b <= (s + e.length - 1) / 512; b++) blocks.insert(b);
    }
    uint64_t read_blocks = 0;
    for (const auto &x : reads) read_blocks += x.nlb;
    EXPECT_EQ(read_blocks, blocks.size());
}

TEST_F(Media, GatherOutputOverflowSaysTheBytesNeeded)
{
    std::vector<csd_gather_entry> es{{1, 0, 700}, {9, 3, 300}};
    put(0, es);
    csd_gather_params p{2, 0};
    const ExecOut r = exec(CSD_PROG_GATHER, {{0, 32}, {4096, 999}}, p);
    EXPECT_STATUS(r, CSD_STATUS_OUTPUT_OVERFLOW);
    EXPECT_EQ(r.dw1, 1000u);
}

// Bytes needed that DW1 cannot say (4 GiB or more) are Invalid Parameters, before any read
// (an outside review: Output Overflow with DW1 = FFFFFFFFh came out); just below, Output
// Overflow with the bytes needed.
TEST_F(Media, GatherOfFourGiBOrMoreIsInvalidParameters)
{
    const uint32_t mib = 1u << 20;
    std::vector<csd_gather_entry> es(4096, csd_gather_entry{0, 0, mib});  // 4 GiB: 2^32 bytes
    put(0, es);
    csd_gather_params p{static_cast<uint32_t>(es.size()), 0};
    reads.clear();
    ExecOut r = exec(CSD_PROG_GATHER, {{0, es.size() * 16}, {1 << 20, 999}}, p);
    EXPECT_STATUS(r, CSD_STATUS_INVALID_PARAMETERS);
    EXPECT_TRUE(reads.empty());
    es.back().length = mib - 1;  // 2^32 - 1 bytes: DW1 says it
    put(0, es);
    r = exec(CSD_PROG_GATHER, {{0, es.size() * 16}, {1 << 20, 999}}, p);
    EXPECT_STATUS(r, CSD_STATUS_OUTPUT_OVERFLOW);
    EXPECT_EQ(r.dw1, 0xFFFFFFFFu);
}

TEST_F(Media, GatherPastTheNamespaceIsLbaOutOfRangeAndReadsNothing)
{
    const std::vector<std::vector<csd_gather_entry>> bad{
        {{0, 0, 8}, {kLbas, 0, 1}},                     // the LBA after the last
        {{kLbas - 1, 500, 13}},                         // one byte past the end
        {{kLbas - 1, 0xFFFFFFFFu, 1}},                  // an offset far past it
        {{~0ull / 512, 0, 1}},                          // an LBA whose byte address overflows
        {{~0ull, 0xFFFFFFFFu, 0xFFFFFFFFu}},
    };
    for (const auto &es : bad) {
        put(0, es);
        csd_gather_params p{static_cast<uint32_t>(es.size()), 0};
        reads.clear();
        const ExecOut r = exec(CSD_PROG_GATHER, {{0, es.size() * 16}, {4096, 1 << 20}}, p);
        EXPECT_STATUS(r, CSD_STATUS_LBA_OUT_OF_RANGE);
        EXPECT_TRUE(reads.empty());
    }
}

TEST_F(Media, GatherBadParametersAndNoNamespace)
{
    std::vector<csd_gather_entry> es{{1, 0, 8}};
    put(0, es);
    csd_gather_params p{2, 0};  // more entries than the range holds
    EXPECT_STATUS(exec(CSD_PROG_GATHER, {{0, 16}, {4096, 64}}, p), CSD_STATUS_INVALID_PARAMETERS);
    csd_gather_params q{1, 1};  // reserved not zero
    EXPECT_STATUS(exec(CSD_PROG_GATHER, {{0, 16}, {4096, 64}}, q), CSD_STATUS_INVALID_PARAMETERS);
    // the distinct blocks past what the device stages
    std::vector<csd_gather_entry> big{{0, 0, CSD_MEDIA_MAX_STAGE / 2}, {kLbas / 2, 0, 1}};
    ns.lba_count = (CSD_MEDIA_MAX_STAGE / kLba) * 2;
    put(0, big);
    csd_gather_params b{2, 0};
    std::vector<csd_gather_entry> huge{{0, 0, CSD_MEDIA_MAX_STAGE}, {CSD_MEDIA_MAX_STAGE / kLba + 1, 0, 1}};
    put(0, huge);
    EXPECT_STATUS(exec(CSD_PROG_GATHER, {{0, 32}, {4096, 1 << 20}}, b), CSD_STATUS_INVALID_PARAMETERS);
    EXPECT_TRUE(reads.empty());
    // an embedding that names no namespace (the compute namespace's Execute Program)
    ns.lba_count = kLbas;
    put(0, es);
    csd_gather_params one{1, 0};
    const auto d = make_descriptor(CSD_PROG_GATHER, {{0, 16}, {4096, 64}}, &one, sizeof one);
    EXPECT_STATUS(CoreTest::exec_raw(d), CSD_STATUS_INVALID_NAMESPACE);
}

TEST_F(Media, ReadErrorsAndCancelEndTheProgramWithTheirStatus)
{
    std::vector<csd_gather_entry> es{{1, 0, 8}};
    put(0, es);
    csd_gather_params p{1, 0};
    const auto d = make_descriptor(CSD_PROG_GATHER, {{0, 16}, {4096, 64}}, &p, sizeof p);
    EXPECT_STATUS(exec_media(d, CSD_STATUS_DATA_TRANSFER_ERROR), CSD_STATUS_DATA_TRANSFER_ERROR);
    reads.clear();
    EXPECT_STATUS(exec_media(d, 0, 1), CSD_STATUS_ABORT_REQUESTED);
    EXPECT_TRUE(reads.empty());
}

// torch.nn.functional.embedding_bag, written plainly: f32 accumulation in index order.
std::vector<float> naive_bag(const std::vector<float> &table, uint32_t dim, const std::vector<int64_t> &idx,
                             const std::vector<int64_t> &offsets, uint32_t mode, const std::vector<float> &w,
                             bool include_last)
{
    const size_t bags = include_last ? offsets.size() - 1 : offsets.size();
    std::vector<float> out(bags * dim, 0.0f);
    for (size_t b = 0; b < bags; b++) {
        const size_t lo = offsets[b], hi = b + 1 < offsets.size() ? offsets[b + 1] : idx.size();
        for (uint32_t d = 0; d < dim; d++) {
            float a = mode == CSD_EMB_MAX && hi > lo ? -INFINITY : 0.0f;
            for (size_t i = lo; i < hi; i++) {
                const float v = table[idx[i] * dim + d];
                if (mode == CSD_EMB_MAX) a = std::max(a, v);
                else a += w.empty() ? v : w[i] * v;
            }
            if (mode == CSD_EMB_MEAN && hi > lo) a /= static_cast<float>(hi - lo);
            out[b * dim + d] = a;
        }
    }
    return out;
}

class EmbeddingBag : public Media {
protected:
    static constexpr uint64_t kTableLba = 100;
    static constexpr uint32_t kDim = 37;  // rows straddle blocks
    static constexpr uint64_t kRows = 500;
    std::vector<float> table;

    void SetUp() override
    {
        Media::SetUp();
        table = random_vector<float>(kRows * kDim, 11);
        std::memcpy(disk.data() + kTableLba * kLba, table.data(), table.size() * 4);
    }

    csd_embedding_bag_params params(uint32_t bags, uint32_t mode, uint32_t dtype = CSD_EMB_F32, uint32_t type = CSD_EMB_I64,
                                    uint32_t flags = 0)
    {
        return {kTableLba, kRows, kDim, dtype, mode, type, bags, flags};
    }
};

TEST_F(EmbeddingBag, SumMeanMaxEqualANaiveBagToTheBit)
{
    std::mt19937 g(5);
    std::vector<int64_t> idx;
    for (int i = 0; i < 400; i++) idx.push_back(g() % kRows);
    const std::vector<int64_t> offs{0, 17, 17, 90, 200, 399};  // an empty bag, a bag of one
    put(0, idx);
    put(8192, offs);
    for (uint32_t mode : {CSD_EMB_SUM, CSD_EMB_MEAN, CSD_EMB_MAX}) {
        const auto want = naive_bag(table, kDim, idx, offs, mode, {}, false);
        const auto p = params(static_cast<uint32_t>(offs.size()), mode);
        const ExecOut r = exec(CSD_PROG_EMBEDDING_BAG, {{0, idx.size() * 8}, {8192, offs.size() * 8}, {0, 0}, {16384, want.size() * 4}}, p);
        ASSERT_OK(r);
        EXPECT_EQ(r.dw0, want.size() * 4);
        EXPECT_EQ(std::memcmp(slm(16384), want.data(), want.size() * 4), 0) << "mode " << mode;
    }
}

TEST_F(EmbeddingBag, WeightsI32IndicesIncludeLastOffset)
{
    const std::vector<int32_t> idx{3, 499, 3, 0, 250, 251, 7};
    const std::vector<int32_t> offs{0, 2, 2, 6};  // include_last_offset: 3 bags, index 6 unused
    const auto w = random_vector<float>(idx.size(), 9);
    put(0, idx);
    put(4096, offs);
    put(8192, w);
    const auto want = naive_bag(table, kDim, {3, 499, 3, 0, 250, 251, 7}, {0, 2, 2, 6}, CSD_EMB_SUM, w, true);
    const auto p = params(3, CSD_EMB_SUM, CSD_EMB_F32, CSD_EMB_I32, CSD_EMB_INCLUDE_LAST_OFFSET);
    ASSERT_OK(exec(CSD_PROG_EMBEDDING_BAG, {{0, idx.size() * 4}, {4096, 16}, {8192, w.size() * 4}, {16384, want.size() * 4}}, p));
    EXPECT_EQ(std::memcmp(slm(16384), want.data(), want.size() * 4), 0);
    // weights with mean: refused, as torch refuses them
    const auto m = params(3, CSD_EMB_MEAN, CSD_EMB_F32, CSD_EMB_I32, CSD_EMB_INCLUDE_LAST_OFFSET);
    EXPECT_STATUS(exec(CSD_PROG_EMBEDDING_BAG, {{0, idx.size() * 4}, {4096, 16}, {8192, w.size() * 4}, {16384, 4096}}, m),
                  CSD_STATUS_INVALID_PARAMETERS);
}

TEST_F(EmbeddingBag, HalfTablesAccumulateInF32)
{
    for (uint32_t dtype : {CSD_EMB_F16, CSD_EMB_BF16}) {
        // the table as halves on the disk, and the f32 values they stand for
        std::vector<uint16_t> half(table.size());
        std::vector<float> wide(table.size());
        for (size_t i = 0; i < table.size(); i++) {
            uint32_t u;
            std::memcpy(&u, &table[i], 4);
            if (dtype == CSD_EMB_BF16) {
                half[i] = static_cast<uint16_t>(u >> 16);  // truncated: exact in both
                const uint32_t back = uint32_t{half[i]} << 16;
                std::memcpy(&wide[i], &back, 4);
            } else {
                const float q = std::ldexp(std::round(std::ldexp(table[i], 10)), -10);  // |x| < 1: 10 bits exact
                wide[i] = q;
                // binary16 of q, built by hand: q = m * 2^-10 with |m| <= 1024
                const int m = static_cast<int>(std::ldexp(q, 10));
                uint16_t h = 0;
                if (m != 0) {
                    const int a = std::abs(m);
                    int e = 0;
                    while ((a >> e) > 1) e++;  // 2^e <= a < 2^(e+1)
                    const int exp = e - 10 + 15;
                    const int man = ((a << (10 - e)) & 0x3FF);
                    h = static_cast<uint16_t>((m < 0 ? 0x8000 : 0) | exp << 10 | man);
                }
                half[i] = h;
            }
        }
        std::memcpy(disk.data() + kTableLba * kLba, half.data(), half.size() * 2);
        const std::vector<int64_t> idx{1, 2, 3, 499, 1};
        const std::vector<int64_t> offs{0, 3};
        put(0, idx);
        put(4096, offs);
        const auto want = naive_bag(wide, kDim, idx, offs, CSD_EMB_SUM, {}, false);
        const auto p = params(2, CSD_EMB_SUM, dtype);
        ASSERT_OK(exec(CSD_PROG_EMBEDDING_BAG, {{0, 40}, {4096, 16}, {0, 0}, {16384, want.size() * 2}}, p));
        const auto got = get<uint16_t>(16384, want.size());
        for (size_t i = 0; i < want.size(); i++) {
            float f;
            uint32_t u = 0;
            if (dtype == CSD_EMB_BF16) {
                u = uint32_t{got[i]} << 16;
                std::memcpy(&f, &u, 4);
                EXPECT_NEAR(f, want[i], std::fabs(want[i]) / 128 + 1e-6) << i;  // bf16: 8 bits
            } else {
                const int exp = (got[i] >> 10) & 0x1F, man = got[i] & 0x3FF;
                f = (exp ? std::ldexp(1024 + man, exp - 25) : std::ldexp(man, -24)) * ((got[i] & 0x8000) ? -1 : 1);
                EXPECT_NEAR(f, want[i], std::fabs(want[i]) / 1024 + 1e-4) << i;  // f16: 11 bits
            }
        }
    }
}

TEST_F(EmbeddingBag, BadInputIsAClearStatusAndReadsNothing)
{
    const std::vector<int64_t> offs{0};
    put(4096, offs);
    auto run = [&](const std::vector<int64_t> &idx, const csd_embedding_bag_params &p) {
        put(0, idx);
        reads.clear();
        const ExecOut r = exec(CSD_PROG_EMBEDDING_BAG, {{0, idx.size() * 8}, {4096, 8}, {0, 0}, {16384, 1 << 16}}, p);
        EXPECT_TRUE(reads.empty());
        return r;
    };
    EXPECT_STATUS(run({1, static_cast<int64_t>(kRows)}, params(1, CSD_EMB_SUM)), CSD_STATUS_INVALID_PARAMETERS);
    EXPECT_STATUS(run({-1}, params(1, CSD_EMB_SUM)), CSD_STATUS_INVALID_PARAMETERS);
    auto big = params(1, CSD_EMB_SUM);
    big.num_rows = kLbas * kLba / (kDim * 4);  // a table larger than the namespace from LBA 100
    EXPECT_STATUS(run({0}, big), CSD_STATUS_LBA_OUT_OF_RANGE);
    big.num_rows = ~0ull / 8;  // bytes that overflow
    EXPECT_STATUS(run({0}, big), CSD_STATUS_LBA_OUT_OF_RANGE);
    auto past = params(1, CSD_EMB_SUM);
    past.table_lba = kLbas;
    EXPECT_STATUS(run({0}, past), CSD_STATUS_LBA_OUT_OF_RANGE);
    auto odd = params(1, 7);
    EXPECT_STATUS(run({0}, odd), CSD_STATUS_INVALID_PARAMETERS);
    // offsets that do not start at 0 or go down: refused when the bags are made
    const std::vector<int64_t> idx{1, 2};
    const std::vector<int64_t> bad_offs{1};
    put(0, idx);
    put(4096, bad_offs);
    EXPECT_STATUS(exec(CSD_PROG_EMBEDDING_BAG, {{0, 16}, {4096, 8}, {0, 0}, {16384, 4096}}, params(1, CSD_EMB_SUM)),
                  CSD_STATUS_INVALID_PARAMETERS);
    // per-sample weights: one per index, no more and no fewer (an outside review: longer
    // ones were taken)
    const std::vector<float> w3{1, 2, 3}, w1{1};
    put(8192, w3);
    put(0, idx);
    put(4096, offs);
    for (uint64_t len : {12u, 4u}) {
        reads.clear();
        EXPECT_STATUS(exec(CSD_PROG_EMBEDDING_BAG, {{0, 16}, {4096, 8}, {8192, len}, {16384, 4096}},
                           params(1, CSD_EMB_SUM)), CSD_STATUS_INVALID_PARAMETERS) << len;
        EXPECT_TRUE(reads.empty());
    }
    ASSERT_OK(exec(CSD_PROG_EMBEDDING_BAG, {{0, 16}, {4096, 8}, {8192, 8}, {16384, 4096}}, params(1, CSD_EMB_SUM)));
    // a result DW0 cannot say (4 GiB or more): Invalid Parameters
    auto huge = params(1, CSD_EMB_SUM);
    huge.num_bags = 1u << 16;
    huge.row_dim = 1u << 16;  // 2^16 bags of 256 KiB rows: 16 GiB
    std::vector<int64_t> many_offs(huge.num_bags, 0);
    put(1 << 20, many_offs);
    EXPECT_STATUS(exec(CSD_PROG_EMBEDDING_BAG, {{0, 16}, {1 << 20, many_offs.size() * 8}, {0, 0}, {16384, 4096}}, huge),
                  CSD_STATUS_INVALID_PARAMETERS);
    // out too small: Output Overflow with the bytes needed
    put(4096, offs);
    const ExecOut r = exec(CSD_PROG_EMBEDDING_BAG, {{0, 16}, {4096, 8}, {0, 0}, {16384, 4}}, params(1, CSD_EMB_SUM));
    EXPECT_STATUS(r, CSD_STATUS_OUTPUT_OVERFLOW);
    EXPECT_EQ(r.dw1, kDim * 4);
}

TEST_F(EmbeddingBag, TheModelCountsOneMediaReadOfTheDistinctBlocks)
{
    const std::vector<int64_t> idx{0, 0, 1};  // rows 0 and 1: bytes 0..295 of the table, one block
    const std::vector<int64_t> offs{0};
    put(0, idx);
    put(4096, offs);
    const auto p = params(1, CSD_EMB_SUM);
    const auto d = make_descriptor(CSD_PROG_EMBEDDING_BAG, {{0, 24}, {4096, 8}, {0, 0}, {16384, kDim * 4}}, &p, sizeof p);
    csd_exec *job = nullptr;
    ASSERT_EQ(csd_core_exec_prepare(core, d.data(), static_cast<uint32_t>(d.size()), &job), 0);
    csd_model_work w{};
    csd_exec_model_work(job, &w);
    EXPECT_EQ(w.media_read_op, 0);  // no namespace yet: no media
    csd_exec_set_namespace(job, &ns);
    csd_model_work m{};
    csd_exec_model_work(job, &m);
    EXPECT_EQ(m.media_read_op, 1);
    EXPECT_EQ(m.media_read, kLba);
    csd_core_exec_discard(job);
}

}  // namespace
