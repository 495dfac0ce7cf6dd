// Every program honours cancellation (spec §7, reset must never wait long): a large,
// valid Execute whose cancel flag is already set stops with Command Abort Requested
// instead of running to its end. The granularity of the checks is kCancelBytes of
// streaming or kCancelFlops of gemm (program.h).
#include <lz4frame.h>
#include <zstd.h>

#include "core_fixture.h"

namespace {

class Cancel : public CoreTest {
protected:
    // Runs a descriptor with the cancel flag set; the status.
    uint16_t cancelled_run(uint16_t program, const std::vector<std::pair<uint64_t, uint64_t>> &ranges,
                           const void *params, uint32_t len)
    {
        const auto d = make_descriptor(program, ranges, params, len);
        csd_exec *job = nullptr;
        const uint16_t st = csd_core_exec_prepare(core, d.data(), static_cast<uint32_t>(d.size()), &job);
        EXPECT_EQ(st, 0) << status_text(st);
        if (st) return st;
        const int cancel = 1;
        uint32_t dw0, dw1;
        return CSD_STATUS_CODE(csd_core_exec_run(core, job, &cancel, &dw0, &dw1));
    }
    template <class P>
    uint16_t cancelled_run(uint16_t program, const std::vector<std::pair<uint64_t, uint64_t>> &ranges, const P &p)
    {
        return cancelled_run(program, ranges, &p, sizeof p);
    }
    static constexpr uint64_t kBig = 16ull << 20;
};

TEST_F(Cancel, EveryProgramStops)
{
    const uint32_t nf = kBig / 4;
    EXPECT_EQ(cancelled_run(CSD_PROG_COPY, {{0, kBig}, {kBig, kBig}}, nullptr, 0), CSD_STATUS_ABORT_REQUESTED);
    const csd_gemm_params g{1024, 1024, 1024, 0, 1.0f, 0.0f};
    EXPECT_EQ(cancelled_run(CSD_PROG_GEMM, {{0, 4 << 20}, {4 << 20, 4 << 20}, {8 << 20, 4 << 20}}, g),
              CSD_STATUS_ABORT_REQUESTED);
    const csd_elementwise_params add{CSD_EW_ADD, nf, 0, 0}, relu{CSD_EW_RELU, nf, 0, 0};
    EXPECT_EQ(cancelled_run(CSD_PROG_ELEMENTWISE, {{0, kBig}, {kBig, kBig}, {2 * kBig, kBig}}, add),
              CSD_STATUS_ABORT_REQUESTED);
    EXPECT_EQ(cancelled_run(CSD_PROG_ELEMENTWISE, {{0, kBig}, {kBig, kBig}}, relu), CSD_STATUS_ABORT_REQUESTED);
    const csd_softmax_params sm{1024, nf / 1024};
    EXPECT_EQ(cancelled_run(CSD_PROG_SOFTMAX, {{0, kBig}, {kBig, kBig}}, sm), CSD_STATUS_ABORT_REQUESTED);
    const csd_reduce_params red{CSD_RED_SUM, CSD_DT_F32, 1024, nf / 1024};
    EXPECT_EQ(cancelled_run(CSD_PROG_REDUCE, {{0, kBig}, {kBig, 8192}}, red), CSD_STATUS_ABORT_REQUESTED);
    csd_filter_params f{};
    f.record_size = 16;
    f.count = static_cast<uint32_t>(kBig / 16);
    f.field_type = CSD_FT_I32;
    f.op = CSD_CMP_GE;
    EXPECT_EQ(cancelled_run(CSD_PROG_FILTER, {{0, kBig}, {kBig, kBig}}, f), CSD_STATUS_ABORT_REQUESTED);
    const csd_convert_params cv{CSD_CVT_F32_F16, nf, 1.0f, 0};
    EXPECT_EQ(cancelled_run(CSD_PROG_CONVERT, {{0, kBig}, {kBig, kBig}}, cv), CSD_STATUS_ABORT_REQUESTED);
    for (uint32_t algo : {CSD_CKSUM_CRC32C, CSD_CKSUM_XXH64}) {
        EXPECT_EQ(cancelled_run(CSD_PROG_CHECKSUM, {{0, kBig}}, algo), CSD_STATUS_ABORT_REQUESTED) << algo;
    }
}

TEST_F(Cancel, DecompressStops)
{
    std::vector<uint8_t> plain(kBig, 'z');
    std::vector<uint8_t> z(ZSTD_compressBound(plain.size()));
    z.resize(ZSTD_compress(z.data(), z.size(), plain.data(), plain.size(), 1));
    put(0, z);
    const uint32_t zstd = CSD_DECOMP_ZSTD, lz4 = CSD_DECOMP_LZ4;
    EXPECT_EQ(cancelled_run(CSD_PROG_DECOMPRESS, {{0, z.size()}, {kBig, kBig}}, zstd), CSD_STATUS_ABORT_REQUESTED);
    std::vector<uint8_t> l(LZ4F_compressFrameBound(plain.size(), nullptr));
    l.resize(LZ4F_compressFrame(l.data(), l.size(), plain.data(), plain.size(), nullptr));
    put(0, l);
    EXPECT_EQ(cancelled_run(CSD_PROG_DECOMPRESS, {{0, l.size()}, {kBig, kBig}}, lz4), CSD_STATUS_ABORT_REQUESTED);
}

}  // namespace
