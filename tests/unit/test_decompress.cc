// SPDX-License-Identifier: MIT
// decompress: frames made here with libzstd / liblz4's compressors; corrupt, truncated
// and oversized cases.
#include <lz4frame.h>
#define ZSTD_STATIC_LINKING_ONLY  // ZSTD_writeSkippableFrame
#include <zstd.h>

#include "core_fixture.h"

namespace {

std::vector<uint8_t> sample(size_t n, uint32_t seed)
{
    std::vector<uint8_t> v(n);
    std::mt19937 g(seed);
    for (size_t i = 0; i < n; i++) v[i] = static_cast<uint8_t>("abcdefgh"[g() % 8] + (i % 97 == 0));
    return v;
}

std::vector<uint8_t> zstd(const std::vector<uint8_t> &in)
{
    std::vector<uint8_t> out(ZSTD_compressBound(in.size()));
    out.resize(ZSTD_compress(out.data(), out.size(), in.data(), in.size(), 3));
    return out;
}

std::vector<uint8_t> lz4(const std::vector<uint8_t> &in)
{
    std::vector<uint8_t> out(LZ4F_compressFrameBound(in.size(), nullptr));
    out.resize(LZ4F_compressFrame(out.data(), out.size(), in.data(), in.size(), nullptr));
    return out;
}

class Decompress : public CoreTest {
protected:
    ExecOut run(uint32_t algo, const std::vector<uint8_t> &comp, uint64_t out_len)
    {
        put(3, comp);  // odd offset on purpose
        return exec(CSD_PROG_DECOMPRESS, {{3, comp.size()}, {16 << 20, out_len}}, algo);
    }
};

TEST_F(Decompress, ZstdConcatenatedFrames)
{
    auto a = sample(300000, 1), b = sample(5000, 2);
    auto c = zstd(a), d = zstd(b);
    c.insert(c.end(), d.begin(), d.end());
    auto r = run(CSD_DECOMP_ZSTD, c, 1 << 20);
    EXPECT_OK(r);
    ASSERT_EQ(r.dw0, a.size() + b.size());
    a.insert(a.end(), b.begin(), b.end());
    EXPECT_EQ(get<uint8_t>(16 << 20, a.size()), a);
}

// Skippable frames between and after zstd frames give nothing; an output that the frames
// fill exactly at a frame's end is enough only if no later frame has bytes to give.
TEST_F(Decompress, ZstdSkippableFramesAndFullOutputAtAFrameEnd)
{
    auto a = sample(200000, 11), b = sample(3000, 12);
    std::vector<uint8_t> skip(64);
    const uint8_t note[] = "a note the decoder skips";
    skip.resize(ZSTD_writeSkippableFrame(skip.data(), skip.size(), note, sizeof note, 3));
    ASSERT_FALSE(ZSTD_isError(skip.size()));
    std::vector<uint8_t> c = zstd(a), empty = zstd({});
    c.insert(c.end(), skip.begin(), skip.end());
    const auto d = zstd(b);
    c.insert(c.end(), d.begin(), d.end());
    c.insert(c.end(), skip.begin(), skip.end());
    auto r = run(CSD_DECOMP_ZSTD, c, 1 << 20);
    EXPECT_OK(r);
    ASSERT_EQ(r.dw0, a.size() + b.size());
    auto ab = a;
    ab.insert(ab.end(), b.begin(), b.end());
    EXPECT_EQ(get<uint8_t>(16 << 20, ab.size()), ab);
    // a's frame fills the output; b's frame then has bytes and no room, an empty frame none
    EXPECT_STATUS(run(CSD_DECOMP_ZSTD, c, a.size()), CSD_STATUS_OUTPUT_OVERFLOW);
    std::vector<uint8_t> e = zstd(a);
    e.insert(e.end(), skip.begin(), skip.end());
    e.insert(e.end(), empty.begin(), empty.end());
    r = run(CSD_DECOMP_ZSTD, e, a.size());
    EXPECT_OK(r);
    EXPECT_EQ(r.dw0, a.size());
    // input that ends inside a frame
    std::vector<uint8_t> cut(c.begin(), c.begin() + static_cast<long>(zstd(a).size() + 3));
    EXPECT_STATUS(run(CSD_DECOMP_ZSTD, cut, 1 << 20), CSD_STATUS_PROGRAM_FAULT);
}

// An output range that overlaps the input (here the input lies inside it, beyond what the
// frames decode to) still decodes the frames.
TEST_F(Decompress, ZstdOutputOverlappingTheInput)
{
    auto a = sample(300000, 13);
    const auto c = zstd(a);
    put(1 << 20, c);
    auto r = exec(CSD_PROG_DECOMPRESS, {{1 << 20, c.size()}, {0, 2 << 20}}, uint32_t{CSD_DECOMP_ZSTD});
    EXPECT_OK(r);
    ASSERT_EQ(r.dw0, a.size());
    EXPECT_EQ(get<uint8_t>(0, a.size()), a);
}

TEST_F(Decompress, Lz4Frames)
{
    auto a = sample(1 << 20, 3), b = sample(777, 4);
    auto c = lz4(a), d = lz4(b);
    c.insert(c.end(), d.begin(), d.end());
    auto r = run(CSD_DECOMP_LZ4, c, 2 << 20);
    EXPECT_OK(r);
    ASSERT_EQ(r.dw0, a.size() + b.size());
    a.insert(a.end(), b.begin(), b.end());
    EXPECT_EQ(get<uint8_t>(16 << 20, a.size()), a);
}

TEST_F(Decompress, ExactOutputSizeFits)
{
    auto a = sample(4096, 5);
    EXPECT_OK(run(CSD_DECOMP_ZSTD, zstd(a), a.size()));
    EXPECT_OK(run(CSD_DECOMP_LZ4, lz4(a), a.size()));
}

TEST_F(Decompress, OutputTooSmall)
{
    auto a = sample(100000, 6);
    EXPECT_STATUS(run(CSD_DECOMP_ZSTD, zstd(a), a.size() - 1), CSD_STATUS_OUTPUT_OVERFLOW);
    EXPECT_STATUS(run(CSD_DECOMP_LZ4, lz4(a), a.size() - 1), CSD_STATUS_OUTPUT_OVERFLOW);
    EXPECT_STATUS(run(CSD_DECOMP_ZSTD, zstd(a), 1000), CSD_STATUS_OUTPUT_OVERFLOW);
}

TEST_F(Decompress, TruncatedInputIsAFault)
{
    auto a = sample(100000, 7);
    for (auto comp : {zstd(a), lz4(a)}) {
        const uint32_t algo = comp == zstd(a) ? CSD_DECOMP_ZSTD : CSD_DECOMP_LZ4;
        for (size_t cut : {size_t{1}, size_t{4}, comp.size() / 2, comp.size() - 1}) {
            std::vector<uint8_t> t(comp.begin(), comp.begin() + static_cast<long>(cut));
            EXPECT_STATUS(run(algo, t, 1 << 20), CSD_STATUS_PROGRAM_FAULT) << algo << " cut " << cut;
        }
    }
}

TEST_F(Decompress, CorruptInputIsAFault)
{
    auto a = sample(100000, 8);
    auto z = zstd(a), l = lz4(a);
    z[0] ^= 0xFF;  // magic
    EXPECT_STATUS(run(CSD_DECOMP_ZSTD, z, 1 << 20), CSD_STATUS_PROGRAM_FAULT);
    l[0] ^= 0xFF;
    EXPECT_STATUS(run(CSD_DECOMP_LZ4, l, 1 << 20), CSD_STATUS_PROGRAM_FAULT);
    auto g = random_vector<uint8_t>(5000, 9, 0, 255);  // garbage
    EXPECT_STATUS(run(CSD_DECOMP_ZSTD, g, 1 << 20), CSD_STATUS_PROGRAM_FAULT);
    EXPECT_STATUS(run(CSD_DECOMP_LZ4, g, 1 << 20), CSD_STATUS_PROGRAM_FAULT);
    // a flipped byte inside a checksummed LZ4 frame body
    LZ4F_preferences_t prefs{};
    prefs.frameInfo.contentChecksumFlag = LZ4F_contentChecksumEnabled;
    std::vector<uint8_t> c(LZ4F_compressFrameBound(a.size(), &prefs));
    c.resize(LZ4F_compressFrame(c.data(), c.size(), a.data(), a.size(), &prefs));
    c[c.size() / 2] ^= 0x55;
    EXPECT_STATUS(run(CSD_DECOMP_LZ4, c, 1 << 20), CSD_STATUS_PROGRAM_FAULT);
}

TEST_F(Decompress, Errors)
{
    EXPECT_STATUS(exec(CSD_PROG_DECOMPRESS, {{0, 16}, {64, 16}}, uint32_t{2}), CSD_STATUS_INVALID_PARAMETERS);
}

}  // namespace
