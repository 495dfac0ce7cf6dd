// SPDX-License-Identifier: MIT
// Every program honours cancellation (spec §7, reset must never wait long): a large,
// valid Execute whose cancel flag is already set stops with Command Abort Requested
// instead of running to its end, and so does one whose flag is set while it runs, whatever
// its shape. The granularity of the checks is kCancelBytes of streaming or kCancelFlops of
// gemm (program.h).
#include <lz4frame.h>
#include <zstd.h>

#include <chrono>
#include <thread>

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
    // Runs a descriptor to its end (which also maps its pages), then again with the flag
    // set by another thread a quarter of that time after the run began, as a reset does;
    // the status of the second run. A program that checks the flag only before it starts
    // always runs to its end; one that checks it while it works may still end normally when
    // the flag comes during its last piece, or after its end when this run was faster than
    // the first (pages already mapped), so such a run is tried twice more with a quarter of
    // its time.
    uint16_t cancelled_midway(uint16_t program, const std::vector<std::pair<uint64_t, uint64_t>> &ranges,
                              const void *params, uint32_t len)
    {
        using clock = std::chrono::steady_clock;
        const auto d = make_descriptor(program, ranges, params, len);
        csd_exec *job = nullptr;
        uint32_t dw0, dw1;
        auto start = clock::now();
        EXPECT_EQ(csd_core_exec_prepare(core, d.data(), static_cast<uint32_t>(d.size()), &job), 0);
        EXPECT_EQ(csd_core_exec_run(core, job, nullptr, &dw0, &dw1), 0);
        auto whole = clock::now() - start;
        uint16_t st = 0;
        for (int attempt = 0; attempt < 3 && st == 0; attempt++) {
            EXPECT_EQ(csd_core_exec_prepare(core, d.data(), static_cast<uint32_t>(d.size()), &job), 0);
            int cancel = 0, running = 0;
            clock::time_point done;
            std::thread unit([&] {
                start = clock::now();
                __atomic_store_n(&running, 1, __ATOMIC_RELEASE);
                st = csd_core_exec_run(core, job, &cancel, &dw0, &dw1);
                done = clock::now();
            });
            while (!__atomic_load_n(&running, __ATOMIC_ACQUIRE)) std::this_thread::yield();
            std::this_thread::sleep_for(whole / 4);
            __atomic_store_n(&cancel, 1, __ATOMIC_RELAXED);
            unit.join();
            whole = std::min(whole, done - start);
        }
        return CSD_STATUS_CODE(st);
    }
    template <class P>
    uint16_t cancelled_midway(uint16_t program, const std::vector<std::pair<uint64_t, uint64_t>> &ranges, const P &p)
    {
        return cancelled_midway(program, ranges, &p, sizeof p);
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

// Programs that checked the flag only between rows, im2col blocks or 65536 records ran a
// wide row, a layer of many filters or large records to their end after a reset asked
// them to stop.
TEST_F(Cancel, StopsInsideWideRowsAndLayersOfManyFilters)
{
    const uint64_t bytes = 256ull << 20;
    csd_core_free(core);
    core = csd_core_new(bytes + (64 << 20), 1);
    ASSERT_NE(core, nullptr);
    auto *x = reinterpret_cast<float *>(slm(0));
    uint32_t lcg = 7;
    for (uint64_t i = 0; i < bytes / 4; i++) x[i] = static_cast<float>((lcg = lcg * 1664525u + 1013904223u) >> 8) / (1 << 22) - 2;
    const uint64_t out = bytes;  // 64 MiB for outputs

    const uint32_t floats = static_cast<uint32_t>(bytes / 8);  // softmax: 128 MiB in place
    const csd_softmax_params row{1, floats};
    EXPECT_EQ(cancelled_midway(CSD_PROG_SOFTMAX, {{0, 4ull * floats}, {0, 4ull * floats}}, row), CSD_STATUS_ABORT_REQUESTED);
    for (uint32_t op : {CSD_RED_SUM, CSD_RED_ARGMAX}) {
        const csd_reduce_params r{op, CSD_DT_F32, 1, static_cast<uint32_t>(bytes / 4)};
        EXPECT_EQ(cancelled_midway(CSD_PROG_REDUCE, {{0, bytes}, {out, 8}}, r), CSD_STATUS_ABORT_REQUESTED) << op;
    }
    csd_filter_params f{};  // 2048 records of 64 KiB, all kept, copied out
    f.record_size = 64 << 10;
    f.count = 2048;
    f.field_type = CSD_FT_I32;
    f.op = CSD_CMP_GE;
    const int64_t lowest = INT32_MIN;
    std::memcpy(f.lo, &lowest, 8);
    EXPECT_EQ(cancelled_midway(CSD_PROG_FILTER, {{0, 128 << 20}, {128 << 20, 128 << 20}}, f), CSD_STATUS_ABORT_REQUESTED);
    // 1024 channels of 30 x 30, 2048 filters of 3 x 3: 34 GFLOP in one im2col block before
    const uint64_t in = 4ull * 1024 * 30 * 30, w = 4ull * 2048 * 1024 * 9, y = 4ull * 2048 * 30 * 30;
    const csd_conv2d_params c{1, 1024, 30, 30, 2048, 3, 3, 1, 1, 1, 1, 1, 1, 0};
    EXPECT_EQ(cancelled_midway(CSD_PROG_CONV2D, {{0, in}, {in, w}, {in + w, 0}, {out, y}}, c),
              CSD_STATUS_ABORT_REQUESTED);
}

}  // namespace
