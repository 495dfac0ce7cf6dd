// SPDX-License-Identifier: MIT
// The store's programs over objects larger than SLM (host/store/store_stream.cc, docs/store.md
// "Objects larger than SLM"): each streamed run against one Execute over the whole object,
// byte for byte, at sizes around multiples of the SLM budget and of the pieces, with records
// that straddle pieces; cancel and a device error mid-stream leave nothing behind. Runs on
// $CSD_TEST_DEVICE, else on an in-process device of 8 MiB of SLM ($CSD_FRONT_END picks).
#include <gtest/gtest.h>
#include <lz4frame.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zstd.h>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>
#include <random>
#include <thread>

#include "csd/device.hpp"
#include "csd/program.hpp"
#include "csd/programs.hpp"
#include "csd/store.hpp"
#include "csd/transport.hpp"
#include "csd_crc32c.h"

using namespace csd;

namespace {

std::string g_path;
std::string g_big_path;  // an emu: drive with more SLM, unless CSD_TEST_DEVICE names the drive
std::string g_bpf_dir = CSD_BPF_EXAMPLES;

std::vector<uint8_t> random_bytes(size_t n, uint32_t seed)
{
    std::mt19937 g(seed);
    std::vector<uint8_t> v(n);
    for (auto &b : v) b = static_cast<uint8_t>(g());
    return v;
}

template <class T>
std::vector<uint8_t> as_bytes(const std::vector<T> &v)
{
    std::vector<uint8_t> b(v.size() * sizeof(T));
    if (!b.empty()) std::memcpy(b.data(), v.data(), b.size());
    return b;
}

class Stream : public ::testing::Test {
protected:
    void SetUp() override
    {
        dev = Device::open(g_path);
        ObjectStore::format(*dev, true);
        st = std::make_unique<ObjectStore>(*dev);
    }
    // The SLM range of an object loaded whole, and the budget a streamed run is given.
    StreamOptions budget(uint64_t b, StreamOptions::Stats *stats = nullptr)
    {
        StreamOptions o;
        o.slm_budget = b;
        o.stats = stats;
        return o;
    }
    // A filter of "x" into "y" with records of `record` bytes fails short of SLM (ENOMEM) at once.
    void expect_filter_short_of_slm(uint32_t record, const std::string &why)
    {
        FilterSpec s;
        s.record_size = record;
        try {
            st->filter("x", s, "y");
            ADD_FAILURE() << why;
        } catch (const Error &e) {
            EXPECT_EQ(e.errnum(), ENOMEM) << e.what();
        }
    }
    // Every allocation returned and every reservation released after a run.
    void expect_clean()
    {
        EXPECT_EQ(dev->slm().largest_free(), dev->slm().size());
        EXPECT_TRUE(st->reservations().empty());
    }
    std::unique_ptr<Device> dev;
    std::unique_ptr<ObjectStore> st;
};

constexpr uint64_t kBudget = 256 << 10;  // the streamed runs' SLM

// Sizes in units of `unit` bytes around 1x, 2x and 3x of `step` bytes: just below, at, above.
std::vector<uint64_t> sizes_around(uint64_t step, uint64_t unit)
{
    std::vector<uint64_t> v;
    for (uint64_t k = 1; k <= 3; k++) {
        const uint64_t at = k * step / unit;
        for (uint64_t n : {at - 1, at, at + 1}) v.push_back(n);
    }
    return v;
}

// The one-Execute answer of filter: the object loaded whole, one filter into a buffer as big.
std::vector<uint8_t> filter_once(Device &d, ObjectStore &st, const std::string &name, FilterSpec s)
{
    const ObjectInfo o = st.stat(name);
    SlmBuffer in = st.load(name);
    SlmBuffer out = d.slm().alloc(std::max<uint64_t>(4096, o.bytes * 4 / s.record_size + o.bytes));
    s.count = static_cast<uint32_t>(o.bytes / s.record_size);
    const FilterResult r = programs::filter(d, Range{in.offset(), o.bytes}, range(out), s);
    std::vector<uint8_t> v(r.bytes);
    if (r.bytes) d.slm_read(out.offset(), v.data(), v.size());
    return v;
}

TEST_F(Stream, FilterMatchesOneExecuteAtSizesAroundSlmMultiples)
{
    for (uint32_t rs : {12u, 16u}) {
        FilterSpec s;
        s.record_size = rs;
        s.field_offset = 4;
        s.field_type = FieldType::f32;
        s.op = CmpOp::gt;
        s.lo = 0.5;
        StreamOptions::Stats stats;
        // the piece size of this record size, then objects around multiples of it and of the budget
        st->put("probe", random_bytes(4 * kBudget / rs * rs, 1).data(), 4 * kBudget / rs * rs);
        st->filter("probe", s, "out", budget(kBudget, &stats));
        ASSERT_GT(stats.pieces, 1u);
        std::vector<uint64_t> counts = sizes_around(stats.piece_bytes, rs);
        for (uint64_t n : sizes_around(kBudget, rs)) counts.push_back(n);
        for (uint64_t n : counts) {
            std::vector<float> recs(n * rs / 4);
            std::mt19937 g(static_cast<uint32_t>(n));
            std::uniform_real_distribution<float> u(0, 1);
            for (float &f : recs) f = u(g);
            std::vector<uint8_t> bytes = as_bytes(recs);
            bytes.resize(n * rs);
            st->put("recs", bytes.data(), bytes.size(), "", {});
            for (bool indices : {false, true}) {
                s.indices = indices;
                const std::vector<uint8_t> once = filter_once(*dev, *st, "recs", s);
                const FilterResult r = st->filter("recs", s, "hot", budget(kBudget, &stats));
                SCOPED_TRACE("records of " + std::to_string(rs) + " bytes, " + std::to_string(n) + " records, " +
                             (indices ? "indices" : "records") + ", " + std::to_string(stats.pieces) + " pieces");
                if (n * rs > kBudget) {
                    EXPECT_GE(stats.pieces, 2u);
                }
                EXPECT_EQ(st->get("hot"), once);  // get checks the CRC combined from the pieces'
                EXPECT_EQ(r.bytes, once.size());
                EXPECT_EQ(r.matches, once.size() / (indices ? 4 : rs));
                if (indices) {
                    EXPECT_EQ(st->stat("hot").dtype, "<u4");
                }
            }
        }
    }
    expect_clean();
}

TEST_F(Stream, ChecksumCombinesCrcAndRefusesXxh64)
{
    for (uint64_t n : sizes_around(kBudget, 1)) {
        const std::vector<uint8_t> v = random_bytes(n, static_cast<uint32_t>(n));
        st->put("x", v.data(), v.size());
        StreamOptions::Stats stats;
        EXPECT_EQ(st->checksum("x", ChecksumAlgo::crc32c, budget(kBudget, &stats)), csd_crc32c(v.data(), v.size()));
        EXPECT_GE(stats.pieces, 2u);
        EXPECT_EQ(st->checksum("x", ChecksumAlgo::crc32c), csd_crc32c(v.data(), v.size()));
        EXPECT_EQ(st->checksum("x", ChecksumAlgo::crc32c), st->stat("x").crc32c);
        try {
            st->checksum("x", ChecksumAlgo::xxh64, budget(kBudget));
            ADD_FAILURE() << "xxh64 streamed";
        } catch (const Error &e) {
            EXPECT_EQ(e.errnum(), EINVAL);
            EXPECT_NE(std::string(e.what()).find("cannot be combined"), std::string::npos) << e.what();
        }
        // an algorithm the drive does not know: its answer (Invalid Parameters), streamed or
        // whole, not the xxh64 refusal
        for (uint64_t budget_bytes : {kBudget, uint64_t{0}}) {
            try {
                st->checksum("x", static_cast<ChecksumAlgo>(7), budget(budget_bytes));
                ADD_FAILURE() << "checksum algorithm 7 ran";
            } catch (const Error &e) {
                EXPECT_EQ(e.code(), CSD_STATUS_INVALID_PARAMETERS) << e.what();
                EXPECT_EQ(std::string(e.what()).find("xxh64"), std::string::npos) << e.what();
            }
        }
        SlmBuffer b = st->load("x");
        EXPECT_EQ(st->checksum("x", ChecksumAlgo::xxh64), programs::checksum(*dev, ChecksumAlgo::xxh64, Range{b.offset(), n}));
    }
    expect_clean();
}

// The one-Execute answer of reduce over rows x cols.
std::vector<uint64_t> reduce_once(Device &d, ObjectStore &st, const std::string &name, ReduceOp op, DType dt,
                                  uint64_t rows, uint64_t cols)
{
    const ObjectInfo o = st.stat(name);
    SlmBuffer in = st.load(name);
    SlmBuffer out = d.slm().alloc(rows * 8);
    programs::reduce(d, op, dt, Range{in.offset(), o.bytes}, range(out), static_cast<uint32_t>(rows),
                     static_cast<uint32_t>(cols));
    std::vector<uint64_t> r(rows);
    d.slm_read(out.offset(), r.data(), rows * 8);
    return r;
}

template <class T>
void put_values(ObjectStore &st, const std::string &name, const std::string &dtype, std::vector<uint64_t> shape,
                uint64_t n, uint32_t seed)
{
    std::mt19937 g(seed);
    std::vector<T> v(n);
    for (uint64_t i = 0; i < n; i++) {
        if constexpr (std::is_floating_point_v<T>) {
            v[i] = static_cast<T>(std::uniform_real_distribution<double>(-1e3, 1e3)(g));
            if (i % 97 == 5) v[i] = std::nan("");
            if (i % 89 == 3) v[i] = (i & 1) ? T(-0.0) : T(0.0);
        } else {
            v[i] = static_cast<T>(static_cast<int64_t>(g() % 2000001) - 1000000) * (sizeof(T) == 8 ? 4000000000ll : 1);
        }
    }
    if (n > 10) {  // ties at the ends of pieces, and a leading run of NaN
        v[n / 2] = v[n - 1];
        if constexpr (std::is_floating_point_v<T>) v[0] = v[1] = std::nan("");
    }
    st.put(name, v.data(), n * sizeof(T), dtype, shape);
}

TEST_F(Stream, ReduceMatchesOneExecuteRowsWholeAndSplit)
{
    struct Case {
        const char *dtype;
        DType dt;
        uint64_t e;
    };
    const ReduceOp ops[] = {ReduceOp::sum, ReduceOp::min, ReduceOp::max, ReduceOp::mean, ReduceOp::argmax, ReduceOp::argmin};
    for (const Case c : {Case{"<f4", DType::f32, 4}, Case{"<f8", DType::f64, 8}, Case{"<i4", DType::i32, 4},
                         Case{"<i8", DType::i64, 8}}) {
        // 1-D: one row wider than a piece; 2-D: rows that fit (many per piece) and rows that do not
        for (std::vector<uint64_t> shape : {std::vector<uint64_t>{kBudget / c.e + 77}, {3 * kBudget / c.e + 5},
                                            {700, 129}, {3, kBudget / c.e + 13}}) {
            uint64_t n = 1;
            for (uint64_t d : shape) n *= d;
            const uint32_t seed = static_cast<uint32_t>(n);
            if (c.e == 4 && c.dt == DType::f32) put_values<float>(*st, "t", c.dtype, shape, n, seed);
            if (c.dt == DType::f64) put_values<double>(*st, "t", c.dtype, shape, n, seed);
            if (c.dt == DType::i32) put_values<int32_t>(*st, "t", c.dtype, shape, n, seed);
            if (c.dt == DType::i64) put_values<int64_t>(*st, "t", c.dtype, shape, n, seed);
            const uint64_t rows = shape.size() > 1 ? shape[0] : 1, cols = n / rows;
            for (ReduceOp op : ops) {
                SCOPED_TRACE(std::string(c.dtype) + " " + std::to_string(rows) + "x" + std::to_string(cols) + " op " +
                             std::to_string(static_cast<int>(op)));
                StreamOptions::Stats stats;
                const bool split = cols * c.e > kBudget / 4;
                if (c.dt == DType::i64 && op == ReduceOp::mean && split) {
                    EXPECT_THROW(st->reduce("t", op, budget(kBudget)), Error);
                    continue;
                }
                const std::vector<uint64_t> got = st->reduce("t", op, budget(kBudget, &stats));
                EXPECT_GE(stats.pieces, 2u);
                EXPECT_EQ(got, reduce_once(*dev, *st, "t", op, c.dt, rows, cols));
            }
        }
    }
    expect_clean();
}

TEST_F(Stream, ConvertMatchesOneExecute)
{
    for (uint64_t n : sizes_around(kBudget, 4)) {
        std::vector<float> v(n);
        std::mt19937 g(static_cast<uint32_t>(n));
        for (float &f : v) f = std::uniform_real_distribution<float>(-300, 300)(g);
        st->put("f", v.data(), n * 4, "<f4", {n});
        for (auto [op, out_e] : {std::pair{ConvertOp::f32_f16, 2u}, {ConvertOp::f32_bf16, 2u}, {ConvertOp::f32_i8, 1u}}) {
            StreamOptions::Stats stats;
            EXPECT_EQ(st->convert("f", op, "h", 2.5f, 3, budget(kBudget, &stats)), n * out_e);
            EXPECT_GE(stats.pieces, 2u);
            SlmBuffer in = st->load("f");
            SlmBuffer out = dev->slm().alloc(n * out_e + 4096);
            programs::convert(*dev, op, Range{in.offset(), n * 4}, range(out), static_cast<uint32_t>(n), 2.5f, 3);
            std::vector<uint8_t> once(n * out_e);
            dev->slm_read(out.offset(), once.data(), once.size());
            EXPECT_EQ(st->get("h"), once);
            EXPECT_EQ(st->stat("h").shape, std::vector<uint64_t>{n});
        }
    }
    expect_clean();
}

TEST_F(Stream, DecompressStreamsWholeFramesAndRefusesOneTooLarge)
{
    const std::vector<uint8_t> text = [] {
        std::vector<uint8_t> t;
        std::mt19937 g(7);
        while (t.size() < (3u << 20)) {
            const std::string w = "word" + std::to_string(g() % 5000) + " ";
            t.insert(t.end(), w.begin(), w.end());
        }
        return t;
    }();
    const uint64_t frame = 100000;  // bytes of text a frame
    std::vector<uint8_t> z, l;
    for (uint64_t at = 0; at < text.size(); at += frame) {
        const uint64_t n = std::min<uint64_t>(frame, text.size() - at);
        std::vector<uint8_t> buf(ZSTD_compressBound(n));
        buf.resize(ZSTD_compress(buf.data(), buf.size(), text.data() + at, n, 3));
        z.insert(z.end(), buf.begin(), buf.end());
        LZ4F_preferences_t prefs{};
        prefs.frameInfo.contentChecksumFlag = LZ4F_contentChecksumEnabled;
        buf.assign(LZ4F_compressFrameBound(n, &prefs), 0);
        buf.resize(LZ4F_compressFrame(buf.data(), buf.size(), text.data() + at, n, &prefs));
        l.insert(l.end(), buf.begin(), buf.end());
    }
    for (auto [codec, data] : {std::pair{Codec::zstd, z}, {Codec::lz4, l}}) {
        st->put("c", data.data(), data.size());
        StreamOptions::Stats stats;
        EXPECT_EQ(st->decompress("c", codec, "d", budget(1 << 20, &stats)), text.size());
        EXPECT_GE(stats.pieces, 2u);
        EXPECT_EQ(st->get("d"), text);
    }
    // one frame of all of it: refused, naming why
    std::vector<uint8_t> one(ZSTD_compressBound(text.size()));
    one.resize(ZSTD_compress(one.data(), one.size(), text.data(), text.size(), 3));
    st->put("c1", one.data(), one.size());
    try {
        st->decompress("c1", Codec::zstd, "d1", budget(1 << 20));
        ADD_FAILURE() << "one frame larger than the budget decompressed";
    } catch (const Error &e) {
        EXPECT_EQ(e.errnum(), EINVAL);
        EXPECT_NE(std::string(e.what()).find("cannot be split"), std::string::npos) << e.what();
        // the way out it names makes frames (zstd's --block-size and lz4's -B make one frame)
        EXPECT_NE(std::string(e.what()).find("--filter='zstd -c' FILE > FILE.zst"), std::string::npos)
            << e.what();
    }
    // a codec that is neither zstd nor lz4: said so, not "no LZ4 frame at byte 0"
    try {
        st->decompress("c1", static_cast<Codec>(9), "d1");
        ADD_FAILURE() << "codec 9 decompressed";
    } catch (const Error &e) {
        EXPECT_EQ(e.errnum(), EINVAL);
        EXPECT_NE(std::string(e.what()).find("unknown codec 9"), std::string::npos) << e.what();
    }
    // a budget that holds no piece at all: refused saying so (not "0 bytes in, 0 bytes out")
    try {
        st->decompress("c1", Codec::zstd, "d1", budget(4096));
        ADD_FAILURE() << "decompressed in 4 KiB of SLM";
    } catch (const Error &e) {
        EXPECT_EQ(e.errnum(), EINVAL);
        EXPECT_NE(std::string(e.what()).find("leaves no room for a piece"), std::string::npos) << e.what();
    }
    EXPECT_FALSE(st->exists("d1"));
    expect_clean();
}

TEST_F(Stream, GemmTilesRowsAsOneExecute)
{
    struct Shape {
        uint64_t m, k, n, budget;
    };
    // A and C larger than the budget (B resident), C larger than A, and m not a multiple of
    // the drive's block of rows
    for (const Shape s : {Shape{700, 64, 40, kBudget}, Shape{2000, 8, 40, kBudget}, Shape{600, 32, 300, 2 * kBudget + 7 * kBudget / 8}}) {
        std::vector<float> a(s.m * s.k), b(s.k * s.n);
        std::mt19937 g(static_cast<uint32_t>(s.m * s.n));
        for (float &f : a) f = std::uniform_real_distribution<float>(-1, 1)(g);
        for (float &f : b) f = std::uniform_real_distribution<float>(-1, 1)(g);
        st->put("a", a.data(), a.size() * 4, "<f4", {s.m, s.k});
        st->put("b", b.data(), b.size() * 4, "<f4", {s.k, s.n});
        StreamOptions::Stats stats;
        st->gemm("a", "b", "c", budget(s.budget, &stats));
        EXPECT_GE(stats.pieces, 2u);
        SlmBuffer sa = st->load("a"), sb = st->load("b");
        SlmBuffer sc = dev->slm().alloc(s.m * s.n * 4);
        programs::gemm(*dev, Range{sa.offset(), a.size() * 4}, Range{sb.offset(), b.size() * 4}, range(sc),
                       static_cast<uint32_t>(s.m), static_cast<uint32_t>(s.n), static_cast<uint32_t>(s.k));
        std::vector<uint8_t> once(s.m * s.n * 4);
        dev->slm_read(sc.offset(), once.data(), once.size());
        EXPECT_TRUE(st->get("c") == once) << s.m << "x" << s.k << " x " << s.k << "x" << s.n;
        EXPECT_EQ(st->stat("c").shape, (std::vector<uint64_t>{s.m, s.n}));
    }
    expect_clean();
}

// gemm with B larger than the SLM it may use: B streamed by rows of depth in multiples of the
// drive's block of depth (csd_gemm_block_k), each piece of A and C by each piece of B, gives the
// bits of one Execute over the whole; where one block does not fit, refused naming why. Its own
// drive: one Execute over these shapes needs more SLM than the others' 8 MiB.
TEST(StreamGemm, TilesDepthAsOneExecute)
{
    std::string path = g_big_path;
    if (path.empty()) GTEST_SKIP() << "CSD_TEST_DEVICE is set: this test needs an emu: drive with 40 MiB of SLM";
    auto dev = Device::open(path);
    ObjectStore::format(*dev, true);
    auto st = std::make_unique<ObjectStore>(*dev);
    struct Shape {
        uint64_t m, k, n, budget;
    };
    // k past 3 blocks of depth and m past 2 blocks of rows (84); k 4 blocks of 512 and a part,
    // m a block of rows (256) and a part (with one buffer of B, then two); B smaller than the
    // budget but not beside a block of rows
    for (const Shape s : {Shape{200, 12388, 256, 10 << 20}, Shape{300, 2100, 2048, 12 << 20},
                          Shape{300, 2100, 2048, 16 << 20}, Shape{256, 8192, 256, 9 << 20}}) {
        ASSERT_LT(csd_gemm_block_k(s.n, s.k), s.k);
        std::vector<float> a(s.m * s.k), b(s.k * s.n);
        std::mt19937 g(static_cast<uint32_t>(s.m * s.n + s.k));
        for (float &f : a) f = std::uniform_real_distribution<float>(-1, 1)(g);
        for (float &f : b) f = std::uniform_real_distribution<float>(-1, 1)(g);
        st->put("a", a.data(), a.size() * 4, "<f4", {s.m, s.k});
        st->put("b", b.data(), b.size() * 4, "<f4", {s.k, s.n});
        StreamOptions opt;
        StreamOptions::Stats stats;
        opt.slm_budget = s.budget;
        opt.stats = &stats;
        st->gemm("a", "b", "c", opt);
        EXPECT_GE(stats.pieces, 2u);  // pieces of A by pieces of B: Executes
        SlmBuffer sa = st->load("a"), sb = st->load("b");
        SlmBuffer sc = dev->slm().alloc(s.m * s.n * 4);
        programs::gemm(*dev, Range{sa.offset(), a.size() * 4}, Range{sb.offset(), b.size() * 4}, Range{sc.offset(), sc.size()},
                       static_cast<uint32_t>(s.m), static_cast<uint32_t>(s.n), static_cast<uint32_t>(s.k));
        std::vector<uint8_t> once(s.m * s.n * 4);
        dev->slm_read(sc.offset(), once.data(), once.size());
        const std::vector<uint8_t> got = st->get("c");
        ASSERT_EQ(got.size(), once.size());
        size_t first = 0;  // the first float that differs, to tell which piece
        while (first < got.size() && got[first] == once[first]) first++;
        EXPECT_EQ(first, got.size()) << s.m << "x" << s.k << " x " << s.k << "x" << s.n << ": C[" << first / 4 / s.n
                                     << "][" << first / 4 % s.n << "] differs";
        EXPECT_EQ(st->stat("c").shape, (std::vector<uint64_t>{s.m, s.n}));
    }
    // one block of rows of A and C and one of depth of B do not fit: refused, naming why
    StreamOptions small;
    small.slm_budget = 6 << 20;
    try {
        st->gemm("a", "b", "c2", small);
        ADD_FAILURE() << "gemm whose one block does not fit in the budget";
    } catch (const Error &e) {
        EXPECT_EQ(e.errnum(), EINVAL);
        EXPECT_NE(std::string(e.what()).find("one block of the drive's gemm"), std::string::npos) << e.what();
    }
    EXPECT_FALSE(st->exists("c2"));
    EXPECT_EQ(dev->slm().largest_free(), dev->slm().size());
    EXPECT_TRUE(st->reservations().empty());
}

TEST_F(Stream, DownloadedProgramFilterMapReduceAsOneExecute)
{
    Program prog(*dev, g_bpf_dir + "/threshold.o", 12);
    for (uint64_t n : sizes_around(kBudget, 12)) {
        std::vector<int32_t> recs(n * 3);
        std::mt19937 g(static_cast<uint32_t>(n));
        for (int32_t &x : recs) x = static_cast<int32_t>(g() % 1000);
        st->put("r", recs.data(), recs.size() * 4);
        SlmBuffer in = st->load("r");
        const Range all{in.offset(), n * 12};
        const uint32_t count = static_cast<uint32_t>(n);
        StreamOptions::Stats stats;
        // filter
        const FilterResult r = st->run_program(prog, CSD_BPF_FILTER, "r", "kept", {600}, budget(kBudget, &stats));
        EXPECT_GE(stats.pieces, 2u);
        SlmBuffer out = dev->slm().alloc(n * 12 + 4096);
        const FilterResult once = prog.run_filter(all, range(out), count, {600});
        std::vector<uint8_t> kept(once.bytes);
        dev->slm_read(out.offset(), kept.data(), kept.size());
        EXPECT_EQ(st->get("kept"), kept);
        EXPECT_EQ(r.matches, once.matches);
        // map
        st->run_program(prog, CSD_BPF_MAP, "r", "mapped", {600}, budget(kBudget));
        prog.run_map(all, Range{out.offset(), n * 8}, count, {600});
        std::vector<uint8_t> mapped(n * 8);
        dev->slm_read(out.offset(), mapped.data(), mapped.size());
        EXPECT_EQ(st->get("mapped"), mapped);
        // reduce
        EXPECT_EQ(st->run_program(prog, CSD_BPF_REDUCE, "r", "", {600}, budget(kBudget)).bytes,
                  prog.run_reduce(all, count, {600}));
    }
    expect_clean();
}

TEST_F(Stream, CancelFromProgressStoresNothingAndFreesAll)
{
    const std::vector<uint8_t> v = random_bytes(16 * kBudget, 3);
    st->put("recs", v.data(), v.size());
    const uint64_t free_before = st->free_bytes();
    FilterSpec s;
    s.record_size = 16;
    s.field_type = FieldType::u32;
    s.op = CmpOp::ge;
    StreamOptions o = budget(kBudget);
    int calls = 0;
    o.progress = [&](uint64_t done, uint64_t total) {
        EXPECT_LE(done, total);
        if (++calls == 3) throw std::runtime_error("stop");
    };
    EXPECT_THROW(st->filter("recs", s, "all", o), std::runtime_error);
    EXPECT_FALSE(st->exists("all"));
    EXPECT_EQ(st->free_bytes(), free_before);
    EXPECT_EQ(calls, 3);
    expect_clean();
}

// A transport whose namespace goes away on demand: every command then answers Invalid
// Namespace or Format, as a drive's does once the namespace is detached.
class Detachable : public Transport {
public:
    explicit Detachable(std::unique_ptr<Transport> t) : t_(std::move(t)) {}
    const char *name() const override { return t_->name(); }
    Completion submit(const Command &cmd) override
    {
        if (detached) return Completion{CSD_STATUS_INVALID_NAMESPACE, 0};
        return t_->submit(cmd);
    }
    uint32_t max_transfer() const override { return t_->max_transfer(); }
    NamespaceInfo ns() const override { return t_->ns(); }
    std::atomic<bool> detached{false};

private:
    std::unique_ptr<Transport> t_;
};

TEST_F(Stream, DetachMidStreamIsClearAndFreesSlm)
{
    const std::vector<uint8_t> v = random_bytes(32 * kBudget, 4);
    st->put("recs", v.data(), v.size());
    st.reset();
    dev.reset();
    auto t = std::make_unique<Detachable>(open_transport(g_path));
    Detachable *ns = t.get();
    Device d(std::move(t));
    ObjectStore store(d);
    FilterSpec s;
    s.record_size = 16;
    s.field_type = FieldType::u32;
    s.op = CmpOp::ge;
    StreamOptions o = budget(kBudget);
    int pieces = 0;
    o.progress = [&](uint64_t, uint64_t) {
        if (++pieces == 2) ns->detached = true;  // between two pieces
    };
    try {
        store.filter("recs", s, "all", o);
        ADD_FAILURE() << "the stream went on after the detach";
    } catch (const Error &e) {
        EXPECT_EQ(e.status(), CSD_STATUS_INVALID_NAMESPACE) << e.what();
        // where it stopped, that nothing was stored, and the likely cause, with the drive's status
        const std::string m = e.what();
        EXPECT_NE(m.find("stopped at piece 3 of "), std::string::npos) << m;
        EXPECT_NE(m.find("nothing stored"), std::string::npos) << m;
        EXPECT_NE(m.find("namespace detached or formatted"), std::string::npos) << m;
        EXPECT_NE(m.find("Invalid Namespace or Format"), std::string::npos) << m;
    }
    EXPECT_EQ(d.slm().largest_free(), d.slm().size());  // every piece's and the output's SLM freed
    ns->detached = false;  // attached again: nothing stored, the output's space reserved until reclaimed
    EXPECT_FALSE(store.exists("all"));
    EXPECT_EQ(store.reservations().size(), 1u);
    EXPECT_EQ(store.reclaim(0), 1u);
}

// The namespace's bytes.
uint64_t ns_bytes(Device &d) { return d.ns().lba_count * d.ns().lba_size; }

// The smallest SLM budget (in steps of 512 bytes from `from`) a streamed run takes: below it,
// run throws ENOMEM (too_small); the budget it ran at is returned.
template <class F>
uint64_t smallest_budget(uint64_t from, F &&run)
{
    for (uint64_t b = from;; b += 512) {
        try {
            run(b);
            return b;
        } catch (const Error &e) {
            if (e.errnum() != ENOMEM) throw;
        }
    }
}

// Every record matches: the output is the whole input, larger than the SLM the run may use
// (and, at the SLM-sized budget, than the drive's SLM), each piece's output its own worst
// case; at the smallest budget that takes one record a piece, one record above it, and at
// and above the whole SLM.
TEST_F(Stream, FilterWhoseOutputExceedsTheBudgetEveryRecordMatching)
{
    for (uint32_t rs : {12u, 16u, 4100u}) {
        FilterSpec s;
        s.record_size = rs;
        s.field_offset = 4;
        s.field_type = FieldType::f32;
        s.op = CmpOp::ge;
        s.lo = -1;  // the field is in [0, 1): every record
        auto put_records = [&](uint64_t n) {
            std::vector<uint8_t> v = random_bytes(n * rs, static_cast<uint32_t>(n + rs));
            for (uint64_t i = 0; i < n; i++) {
                const float f = static_cast<float>(i % 1000) / 1000.0f;
                std::memcpy(&v[i * rs + 4], &f, 4);
            }
            st->put("recs", v.data(), v.size());
            return v;
        };
        auto check = [&](const std::vector<uint8_t> &v, uint64_t n, uint64_t b, const std::string &where) {
            for (bool indices : {false, true}) {
                s.indices = indices;
                StreamOptions::Stats stats;
                SCOPED_TRACE(std::to_string(rs) + "-byte records, " + std::to_string(n) + " of them, budget " +
                             std::to_string(b) + " (" + where + "), " + (indices ? "indices" : "records"));
                const FilterResult r = st->filter("recs", s, "all", budget(b, &stats));
                EXPECT_EQ(r.matches, n);
                EXPECT_GE(stats.pieces, 2u);
                std::vector<uint8_t> want = v;
                if (indices) {
                    want.resize(n * 4);
                    for (uint32_t i = 0; i < n; i++) std::memcpy(&want[i * 4], &i, 4);
                }
                EXPECT_EQ(r.bytes, want.size());
                EXPECT_EQ(st->get("all"), want);  // get checks the CRC combined from the pieces'
                st->remove("all");  // room for the next run's reservation on this small namespace
            }
        };
        // near the record size: the smallest budget, and a record above it (an object of 48 KiB
        // and more: more than one piece at these budgets)
        {
            const uint64_t n = (48 << 10) / rs + 7;
            const std::vector<uint8_t> v = put_records(n);
            s.indices = false;
            const uint64_t b = smallest_budget(rs, [&](uint64_t b) { st->filter("recs", s, "all", budget(b)); });
            check(v, n, b, "smallest");
            check(v, n, b + rs, "smallest + one record");
            check(v, n, b + 2 * rs + 4, "smallest + two records and an index");
        }
        // near the SLM's size: an object whose output is 1.5 times the whole SLM (where the
        // namespace holds it, its output and the next output's reservation: not host mode's
        // 64 MiB of SLM on a 64 MiB file)
        if (const uint64_t slm = dev->slm().size(); slm * 5 > ns_bytes(*dev)) {
            std::printf("%u-byte records near the SLM's size: not run, %llu bytes of SLM on a namespace of %llu\n", rs,
                        static_cast<unsigned long long>(slm), static_cast<unsigned long long>(ns_bytes(*dev)));
        } else {
            const uint64_t n = slm * 3 / 2 / rs + 3;
            const std::vector<uint8_t> v = put_records(n);
            check(v, n, slm - 4096, "SLM - 4 KiB");
            check(v, n, slm, "SLM");
            check(v, n, 0, "all free SLM");
            check(v, n, 4 * slm, "more than the SLM");
        }
    }
    expect_clean();
}

// The one-Execute answer of convert over each 64 Ki-element chunk in turn (convert is
// element by element, so the chunks' outputs side by side are the whole one's).
std::vector<uint8_t> convert_by_chunks(Device &d, ObjectStore &st, const std::string &name, ConvertOp op,
                                       uint64_t in_e, uint64_t out_e)
{
    const std::vector<uint8_t> in = st.get(name);
    const uint64_t n = in.size() / in_e, chunk = 64 << 10;
    std::vector<uint8_t> out(n * out_e);
    SlmBuffer a = d.slm().alloc(chunk * in_e), b = d.slm().alloc(chunk * out_e);
    for (uint64_t i = 0; i < n; i += chunk) {
        const uint64_t c = std::min(chunk, n - i);
        d.slm_write(a.offset(), &in[i * in_e], c * in_e);
        programs::convert(d, op, Range{a.offset(), c * in_e}, Range{b.offset(), c * out_e}, static_cast<uint32_t>(c),
                          0.5f, -3);
        d.slm_read(b.offset(), &out[i * out_e], c * out_e);
    }
    return out;
}

// Converts to a wider type (output 2 and 4 times the input): the output of all pieces
// together exceeds the budget and, near the SLM's size, the SLM; at the smallest budget that
// takes one element a piece and an element above it, and at and above the whole SLM.
TEST_F(Stream, ConvertToAWiderTypeAtBudgetsNearTheElementAndTheSlm)
{
    struct Case {
        ConvertOp op;
        uint64_t in_e, out_e;
        const char *dtype;
    };
    for (const Case c : {Case{ConvertOp::f16_f32, 2, 4, "<f2"}, Case{ConvertOp::bf16_f32, 2, 4, "<u2"},
                         Case{ConvertOp::i8_f32, 1, 4, "|i1"}, Case{ConvertOp::u8_f32, 1, 4, "|u1"}}) {
        auto put_elements = [&](uint64_t n) {
            std::vector<uint8_t> v = random_bytes(n * c.in_e, static_cast<uint32_t>(n));
            if (c.in_e == 2) {  // finite halves: exponent below all ones
                for (uint64_t i = 0; i < n; i++) v[i * 2 + 1] &= c.op == ConvertOp::f16_f32 ? 0xBB : 0xBF;
            }
            st->put("in", v.data(), v.size(), c.dtype, {n});
        };
        auto check = [&](uint64_t n, uint64_t b, const std::string &where) {
            StreamOptions::Stats stats;
            SCOPED_TRACE("convert " + std::to_string(static_cast<uint32_t>(c.op)) + ", " + std::to_string(n) +
                         " elements, budget " + std::to_string(b) + " (" + where + ")");
            EXPECT_EQ(st->convert("in", c.op, "out", 0.5f, -3, budget(b, &stats)), n * c.out_e);
            EXPECT_GE(stats.pieces, 2u);
            EXPECT_EQ(st->get("out"), convert_by_chunks(*dev, *st, "in", c.op, c.in_e, c.out_e));
            EXPECT_EQ(st->stat("out").shape, std::vector<uint64_t>{n});
            EXPECT_EQ(st->stat("out").dtype, "<f4");
            st->remove("out");
        };
        {
            const uint64_t n = 16 << 10;  // 16 Ki elements: more than one piece at these budgets
            put_elements(n);
            const uint64_t b =
                smallest_budget(c.in_e, [&](uint64_t b) { st->convert("in", c.op, "out", 0.5f, -3, budget(b)); });
            check(n, b, "smallest");
            check(n, b + c.in_e + c.out_e, "smallest + one element");
            check(n, b + 4096, "smallest + 4 KiB");
        }
        if (const uint64_t slm = dev->slm().size(); slm * 4 > ns_bytes(*dev)) {
            std::printf("convert near the SLM's size: not run, %llu bytes of SLM on a namespace of %llu\n",
                        static_cast<unsigned long long>(slm), static_cast<unsigned long long>(ns_bytes(*dev)));
        } else {
            const uint64_t n = slm * 3 / 4 / c.in_e + 1;  // output 1.5-3 times the SLM
            put_elements(n);
            check(n, slm - 4096, "SLM - 4 KiB");
            check(n, slm, "SLM");
            check(n, 0, "all free SLM");
        }
    }
    expect_clean();
}

// What a streamed run's Executes are worth at 1 byte a ns, and the bytes it stores: each
// piece's program its input and its own worst-case output (count x out_unit); then the output,
// stored as it fills whole blocks of blk: a checksum Execute over each stored run, a copy
// Execute (two ranges) moving a partial block's bytes to the front; the last partial block's
// checksum. n units of in_unit bytes in pieces of per; outputs(first, count): a piece's output units.
std::pair<uint64_t, uint64_t> pieces_worth(uint64_t n, uint64_t per, uint64_t in_unit, uint64_t out_unit, uint64_t blk,
                                           const std::function<uint64_t(uint64_t, uint64_t)> &outputs)
{
    uint64_t want = 0, tail = 0, written = 0;
    for (uint64_t first = 0; first < n; first += per) {
        const uint64_t count = std::min(per, n - first);
        want += count * in_unit + count * out_unit;
        const uint64_t total = tail + outputs(first, count) * out_unit, full = total / blk * blk;
        if (full) {
            want += full;  // the checksum of the blocks stored
            written += full;
            if (total - full) want += 2 * (total - full);  // the copy of the rest to the front
            tail = total - full;
        } else {
            tail = total;
        }
    }
    if (tail) want += tail, written += tail;
    return {want, written};
}

// A streamed run on the model: the device's statistics around it, its modelled time, its pieces.
struct ModelRun {
    Statistics before, after;
    uint64_t took = 0;
    StreamOptions::Stats stats;
};

// Runs run(options: 256 KiB of SLM) and measures it on the model's clock.
ModelRun run_on_model(Device &d, const std::function<void(const StreamOptions &)> &run)
{
    ModelRun m;
    StreamOptions o;
    o.slm_budget = 256 << 10;
    o.stats = &m.stats;
    m.before = d.stats();
    const uint64_t t0 = d.model_clock_ns();
    run(o);
    m.took = d.model_clock_ns() - t0;
    m.after = d.stats();
    return m;
}

// A streamed run on the model: the compute units charged exactly want ns; its modelled time
// at least its busiest resource's, at most every command after another with its latencies;
// the media busy with its SLM Loads of in_bytes at 2 bytes a ns.
void expect_model(const ModelRun &m, uint64_t want, uint64_t in_bytes)
{
    const Statistics &before = m.before, &after = m.after;
    const uint64_t took = m.took;
    const StreamOptions::Stats &stats = m.stats;
    EXPECT_EQ(after.model_compute_busy_ns - before.model_compute_busy_ns, want)
        << stats.pieces << " pieces of " << stats.piece_bytes << " bytes";
    uint64_t busiest = 0, serial = 0;
    const uint64_t busy[] = {after.model_compute_busy_ns - before.model_compute_busy_ns,
                             after.model_media_busy_ns - before.model_media_busy_ns,
                             after.model_slm_busy_ns - before.model_slm_busy_ns,
                             after.model_link_in_busy_ns - before.model_link_in_busy_ns,
                             after.model_link_out_busy_ns - before.model_link_out_busy_ns};
    for (uint64_t b : busy) busiest = std::max(busiest, b), serial += b;
    const uint64_t commands = (after.slm_load_cmds - before.slm_load_cmds) + (after.exec_cmds - before.exec_cmds) +
                              (after.slm_store_cmds - before.slm_store_cmds) + 64;  // and the catalog's I/O
    EXPECT_GE(took, busiest);
    EXPECT_LE(took, serial + commands * 200000) << "at most every command after another, with its latencies";
    EXPECT_GE(after.model_media_busy_ns - before.model_media_busy_ns, in_bytes / 2) << "the pieces' SLM Loads";
}

// The timing model's sum of pieces: on a drive whose compute units move 1 byte a ns (exact
// mode: the model's own clock), a streamed filter's Executes cost the compute units exactly
// what each piece's own ranges are worth (its input, its worst-case output, and the output
// blocks' checksums and partial-block moves), as one Execute over the whole object would; a
// piece handed more SLM than it may write (the whole output buffer: a bug once) costs more.
// The run's modelled time is at least its busiest resource's and at most every command
// one after another.
TEST(StreamModel, PiecesCostWhatTheirOwnRangesAreWorth)
{
    if (!std::getenv("CSD_TEST_DEVICE") && g_big_path.empty()) GTEST_SKIP();
    std::string path = g_path;
    if (!std::getenv("CSD_TEST_DEVICE")) {
        path = g_path.substr(0, g_path.find('?')) + "-model?size=64M&slm=8M&nvme-cs=1&exact=on&model.unit-gbps=1&model.unit-gflops=10"
               "&model.slm-gbps=1000&model.media-read-gbps=2&model.media-write-gbps=2&model.link-gbps=100"
               "&model.compute-units=2";
        const char *fe = std::getenv("CSD_FRONT_END");
        if (fe && std::string(fe) == "nvme-cs") path += "&vendor-io=0";
    }
    auto dev = Device::open(path);
    if (dev->where() == Where::Host) GTEST_SKIP() << "host mode: the programs run on the host, not on the modelled drive";
    if (!dev->stats().available) GTEST_SKIP() << "the model's counters are in the vendor log C1h";
    if (std::getenv("CSD_TEST_DEVICE")) GTEST_SKIP() << "needs a drive of the model this test sets (unit-gbps=1)";
    ObjectStore::format(*dev, true);
    ObjectStore st(*dev);
    const uint64_t rs = 16, n = (3 << 20) / rs + 5, in_bytes = n * rs, blk = st.block_size();
    std::vector<uint8_t> v = random_bytes(in_bytes, 7);
    for (uint64_t i = 0; i < n; i++) {
        const float f = static_cast<float>(i % 100) / 100.0f;  // field in [0, 1)
        std::memcpy(&v[i * rs + 4], &f, 4);
    }
    st.put("recs", v.data(), v.size());
    struct Case {
        double lo;
        bool indices;
        const char *what;
    };
    for (const Case c : {Case{2.0, false, "no record matches"}, Case{2.0, true, "no record matches, indices"},
                         Case{-1.0, false, "every record matches"}, Case{0.995, true, "1 % match, indices"}}) {
        SCOPED_TRACE(c.what);
        FilterSpec s;
        s.record_size = rs;
        s.field_offset = 4;
        s.field_type = FieldType::f32;
        s.op = CmpOp::ge;
        s.lo = c.lo;
        s.indices = c.indices;
        const uint64_t out_unit = c.indices ? 4 : rs;
        FilterResult r;
        const ModelRun m = run_on_model(*dev, [&](const StreamOptions &o) { r = st.filter("recs", s, "out", o); });
        ASSERT_GE(m.stats.pieces, 10u);
        const uint64_t per = m.stats.piece_bytes / rs;
        const auto [want, written] = pieces_worth(n, per, rs, out_unit, blk, [&](uint64_t first, uint64_t count) {
            uint64_t matches = 0;  // the field repeats every 100 records: the test counts a piece's matches
            for (uint64_t i = first; i < first + count; i++) matches += static_cast<float>(i % 100) / 100.0f >= c.lo;
            return matches;
        });
        EXPECT_EQ(r.bytes, written);
        expect_model(m, want, in_bytes);
        st.remove("out");
    }
    // convert to a wider type: each piece's output range twice its input (f16 to f32)
    {
        const uint64_t elems = (2 << 20) / 2 + 3;
        const std::vector<uint8_t> h = random_bytes(elems * 2, 9);
        std::vector<uint8_t> f = h;
        for (uint64_t i = 0; i < elems; i++) f[i * 2 + 1] &= 0xBB;  // finite halves
        st.put("half", f.data(), f.size(), "<f2", {elems});
        const ModelRun m = run_on_model(*dev, [&](const StreamOptions &o) {
            EXPECT_EQ(st.convert("half", ConvertOp::f16_f32, "wide", 1.0f, 0, o), elems * 4);
        });
        ASSERT_GE(m.stats.pieces, 10u);
        const auto [want, written] =
            pieces_worth(elems, m.stats.piece_bytes / 2, 2, 4, blk, [](uint64_t, uint64_t count) { return count; });
        EXPECT_EQ(written, elems * 4);
        SCOPED_TRACE("convert f16 to f32");
        expect_model(m, want, elems * 2);
    }
}

// Records of 16 bytes whose u32 at 4 is above 4e9 (about 7 % of random ones).
FilterSpec rare_records()
{
    FilterSpec s;
    s.record_size = 16, s.field_offset = 4, s.field_type = FieldType::u32;
    s.op = CmpOp::gt, s.lo = 4e9;
    return s;
}

TEST_F(Stream, ConcurrentRunsWithNoBudgetTakeTurnsForSlm)
{
    // Threads of one process, each streaming an object twice the drive's SLM with no budget:
    // the first to plan takes all SLM free; the others wait for it instead of failing with
    // "cannot hold one piece" (docs/store.md), and every answer is the one a lone run gives.
    // (twice 8 MiB where the SLM is larger, as host mode's: the namespace holds 64 MiB)
    const uint64_t bytes = 2 * std::min<uint64_t>(dev->slm().size(), 8 << 20) + 16 * 1000;
    const std::vector<uint8_t> v = random_bytes(bytes, 7);
    st->put("recs", v.data(), v.size());
    FilterSpec s = rare_records();
    s.indices = true;  // each run reserves room for every record's index, not every record
    st->filter("recs", s, "ref", budget(kBudget));
    const std::vector<uint8_t> ref = st->get("ref");
    const uint32_t crc = csd_crc32c(v.data(), v.size());
    std::mutex mu;
    std::vector<std::string> errors;
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; t++) {
        threads.emplace_back([&, t] {
            for (int round = 0; round < 2; round++) {
                try {
                    if (t == 3) {
                        if (st->checksum("recs", ChecksumAlgo::crc32c) != crc) throw std::runtime_error("wrong checksum");
                        continue;
                    }
                    const std::string out = "hot" + std::to_string(t);
                    st->filter("recs", s, out);
                    if (st->get(out) != ref) throw std::runtime_error(out + " differs from the lone run's");
                } catch (const std::exception &e) {
                    std::lock_guard<std::mutex> g(mu);
                    errors.push_back("thread " + std::to_string(t) + ": " + e.what());
                }
            }
        });
    }
    for (auto &t : threads) t.join();
    for (const std::string &e : errors) ADD_FAILURE() << e;
    expect_clean();
}

TEST_F(Stream, ANoBudgetRunShortOfSlmThatABufferHoldsFailsAtOnce)
{
    // SLM held by a buffer (not a streamed run) may never be freed: no waiting for it.
    const std::vector<uint8_t> v = random_bytes(1 << 20, 8);
    st->put("x", v.data(), v.size());
    {
        SlmBuffer held = dev->slm().alloc(dev->slm().size() - (64 << 10));
        expect_filter_short_of_slm(64 << 10, "a filter ran in 64 KiB of SLM with records of 64 KiB");
    }
    EXPECT_FALSE(st->exists("y"));
    expect_clean();
}

TEST_F(Stream, ARunShortOfSlmThatABufferHoldsFailsAtOnceWhileOthersStream)
{
    // A buffer holds all SLM but 1 MiB; two threads stream in loops within that MiB. A filter
    // of 1 MiB records can never fit beside the buffer, whatever the streams free: it must
    // fail at once, not wait for (and plan again after) each of their runs, which went on for
    // as long as they did. 1000 runs of the loops stand for for ever.
    const std::vector<uint8_t> v = random_bytes(1 << 20, 12);
    st->put("x", v.data(), v.size());
    const uint32_t crc = csd_crc32c(v.data(), v.size());
    SlmBuffer held = dev->slm().alloc(dev->slm().size() - (1 << 20));
    std::atomic<bool> done{false};
    std::atomic<int> runs{0};
    std::mutex mu;
    std::vector<std::string> errors;
    std::vector<std::thread> loops;
    for (int t = 0; t < 2; t++) {
        loops.emplace_back([&] {
            try {
                while (!done && runs < 1000) {
                    if (st->checksum("x", ChecksumAlgo::crc32c, budget(256 << 10)) != crc) {
                        throw std::runtime_error("wrong checksum");
                    }
                    runs++;
                }
            } catch (const std::exception &e) {
                std::lock_guard<std::mutex> g(mu);
                errors.push_back(e.what());
            }
        });
    }
    while (runs < 2) std::this_thread::yield();
    expect_filter_short_of_slm(1 << 20, "a filter of 1 MiB records ran beside a buffer that leaves 1 MiB of SLM");
    const int seen = runs;
    done = true;
    for (auto &t : loops) t.join();
    EXPECT_LT(seen, 1000) << "the filter waited for the other threads' runs until they stopped";
    for (const std::string &e : errors) ADD_FAILURE() << e;
    held.reset();
    EXPECT_FALSE(st->exists("y"));
    expect_clean();
}

TEST_F(Stream, AChildForkedDuringAStreamedRunDoesNotWaitForIt)
{
    // The parent's streamed run is a thread the child does not have: a run in the child that
    // finds its SLM held must not wait for it to end (it never will there).
    if (g_path.rfind("emu:", 0) != 0) GTEST_SKIP() << "fork after open is for the in-process device";
    const uint64_t bytes = 2 * std::min<uint64_t>(dev->slm().size(), 8 << 20);
    const std::vector<uint8_t> v = random_bytes(bytes, 9);
    st->put("recs", v.data(), v.size());
    FilterSpec s = rare_records();
    s.indices = true;
    std::atomic<bool> go{true};
    std::atomic<int> runs{0};
    std::string error;
    std::thread t([&] {
        try {
            while (go) {
                st->filter("recs", s, "hot");
                runs++;
            }
        } catch (const std::exception &e) {
            error = e.what();
        }
    });
    while (dev->slm().largest_free() == dev->slm().size()) std::this_thread::yield();  // one holds SLM
    const pid_t pid = fork();
    if (pid == 0) {
        alarm(60);
        int rc = 1;
        try {
            st->filter("recs", s, "child");
            rc = 0;
        } catch (const Error &e) {
            rc = e.errnum() == ENOMEM ? 3 : 1;  // refused at once for want of SLM: fine
        } catch (...) {
        }
        _exit(rc);
    }
    ASSERT_GT(pid, 0);
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    go = false;
    t.join();
    EXPECT_FALSE(WIFSIGNALED(status)) << "the child was killed by signal " << WTERMSIG(status)
                                      << " (SIGALRM: it waited for the parent's run)";
    EXPECT_TRUE(WIFEXITED(status) && (WEXITSTATUS(status) == 0 || WEXITSTATUS(status) == 3)) << status;
    EXPECT_GT(runs.load(), 0);
    EXPECT_EQ(error, "");
    expect_clean();
}

TEST(StreamTurns, ARefusedCallIsNotStarvedByCallsStartedAfterIt)
{
    // An XXH64 checksum needs its object in SLM whole (700 KiB of 1 MiB); four threads loop
    // CRC-32C checksums with 256 KiB budgets. Refused while they hold SLM, the checksum queues:
    // their next calls wait until it has run. Before the queue each range freed went to a
    // looping call started later, and it ran only once the loops stopped (20,003 loop runs).
    if (std::getenv("CSD_TEST_DEVICE")) GTEST_SKIP() << "needs an emu: drive with 1 MiB of SLM";
    std::string path = g_path.substr(0, g_path.find('?')) + "-turns" + g_path.substr(g_path.find('?'));
    path.replace(path.find("slm=8M"), 6, "slm=1M");  // the suite's drive (its front end) with 1 MiB of SLM
    auto dev = Device::open(path);
    ObjectStore::format(*dev, true);
    ObjectStore st(*dev);
    const std::vector<uint8_t> x = random_bytes(1 << 20, 11), w = random_bytes(700 << 10, 12);
    st.put("x", x.data(), x.size());
    st.put("w", w.data(), w.size());
    std::atomic<bool> done{false};
    std::atomic<long> runs{0};
    std::vector<std::thread> loops;
    for (int t = 0; t < 4; t++) {
        loops.emplace_back([&] {
            StreamOptions o;
            o.slm_budget = 256 << 10;
            while (!done && runs < 5000) {
                st.checksum("x", ChecksumAlgo::crc32c, o);
                runs++;
            }
        });
    }
    while (runs < 4) std::this_thread::yield();
    const long before = runs;
    std::string error;
    try {
        st.checksum("w", ChecksumAlgo::xxh64);
    } catch (const std::exception &e) {
        error = e.what();
    }
    const long after = runs;
    done = true;
    for (auto &t : loops) t.join();
    EXPECT_EQ(error, "");
    EXPECT_LT(after - before, 200) << "loop runs while the XXH64 checksum waited";
    EXPECT_EQ(dev->slm().largest_free(), dev->slm().size());
    unlink(path.substr(4, path.find('?') - 4).c_str());
}

TEST_F(Stream, TooSmallABudgetSaysSo)
{
    const std::vector<uint8_t> v = random_bytes(1 << 20, 5);
    st->put("x", v.data(), v.size());
    FilterSpec s;
    s.record_size = 64 << 10;
    try {
        st->filter("x", s, "y", budget(64 << 10));
        ADD_FAILURE();
    } catch (const Error &e) {
        EXPECT_EQ(e.errnum(), ENOMEM);
        EXPECT_NE(std::string(e.what()).find("cannot hold one piece"), std::string::npos) << e.what();
    }
    expect_clean();
}

}  // namespace

int main(int argc, char **argv)
{
    if (const char *d = std::getenv("CSD_BPF_DIR")) g_bpf_dir = d;
    ::testing::InitGoogleTest(&argc, argv);
    std::string tmp;
    if (const char *p = std::getenv("CSD_TEST_DEVICE")) {
        g_path = p;
    } else {
        char name[] = "/tmp/csd-stream-XXXXXX";
        const int fd = mkstemp(name);
        close(fd);
        unlink(name);
        tmp = name;
        g_path = "emu:" + tmp + "?size=64M&slm=8M&nvme-cs=1";
        const char *fe = std::getenv("CSD_FRONT_END");
        if (fe && std::string(fe) == "nvme-cs") g_path += "&vendor-io=0";
    }
    if (!tmp.empty()) {
        g_big_path = "emu:" + tmp + "-big?size=160M&slm=40M&nvme-cs=1";
        const char *fe = std::getenv("CSD_FRONT_END");
        if (fe && std::string(fe) == "nvme-cs") g_big_path += "&vendor-io=0";
    }
    const int rc = RUN_ALL_TESTS();
    if (!tmp.empty()) unlink(tmp.c_str()), unlink((tmp + "-big").c_str()), unlink((tmp + "-model").c_str());
    return rc;
}
