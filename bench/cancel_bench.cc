// SPDX-License-Identifier: MIT
// cancel_bench: how long a reset waits for a running program. Each long program runs on a
// compute unit of the device core with 256 MiB of SLM in flight (gemm: three 64 MiB
// matrices; also the shapes that used to check rarely: rows as wide as the data, large
// records, a layer of many filters). Halfway through its measured run time another thread
// sets the cancel flag, as QEMU's reset does; the time from the flag to the program's
// return is recorded, with how often the program ran to its end instead of stopping with
// Command Abort Requested. A path only the emulator takes: no bus, no guest.
// Usage: cancel_bench [--quick] BPF_TEST_IMAGES_DIR   (the build's tests/unit, for long_program.o)
#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstring>
#include <random>
#include <thread>

#include <zstd.h>

#include "core_calls.hpp"

namespace {

using clock_type = std::chrono::steady_clock;

double ms_since(clock_type::time_point t0)
{
    return std::chrono::duration<double, std::milli>(clock_type::now() - t0).count();
}

struct Program {
    const char *name;
    std::vector<uint8_t> desc;
};

/* One run to its end (no cancel): its time in ms. */
double full_run_ms(csd_core *core, const Program &p)
{
    const auto t0 = clock_type::now();
    bench::execute(core, p.desc);
    return ms_since(t0);
}

struct Cancelled {
    double ms;       // from the flag to the return (negative: it returned before the flag)
    bool completed;  // it ran to its end instead of stopping
};

/* One run cancelled after_ms in. */
Cancelled cancelled_run(csd_core *core, const Program &p, double after_ms)
{
    csd_exec *job;
    if (csd_core_exec_prepare(core, p.desc.data(), static_cast<uint32_t>(p.desc.size()), &job) != 0) std::exit(1);
    int cancel = 0;
    uint16_t st = 0;
    clock_type::time_point done;
    std::thread unit([&] {
        uint32_t dw0, dw1;
        st = csd_core_exec_run(core, job, &cancel, &dw0, &dw1);
        done = clock_type::now();
    });
    std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(after_ms));
    const auto flagged = clock_type::now();
    __atomic_store_n(&cancel, 1, __ATOMIC_RELAXED);
    unit.join();
    if (st != 0 && CSD_STATUS_CODE(st) != CSD_STATUS_ABORT_REQUESTED) {
        std::fprintf(stderr, "cancel_bench: %s ended with status 0x%x\n", p.name, st);
        std::exit(1);
    }
    return {std::chrono::duration<double, std::milli>(done - flagged).count(), st == 0};
}

}  // namespace

int main(int argc, char **argv)
{
    const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
    if (argc < 2 + quick) {
        std::fprintf(stderr, "usage: cancel_bench [--quick] BPF_TEST_IMAGES_DIR\n");
        return 2;
    }
    const uint64_t big = quick ? (32ull << 20) : (256ull << 20);
    const int runs = quick ? 3 : 9;
    csd_core *core = csd_core_new(2 * big + (64 << 20), 1);
    uint8_t *slm = csd_core_slm_base(core);
    std::mt19937 g(1);
    std::uniform_real_distribution<float> u(-1, 1);
    const uint64_t floats = big / 4;
    for (uint64_t i = 0; i < floats; i++) reinterpret_cast<float *>(slm)[i] = u(g);
    const uint64_t out = big;  // every program reads [0, big) and writes from big on

    std::vector<Program> progs;
    const uint32_t n = quick ? 2048 : 4096;  // three n x n f32 matrices: 3 x 64 MiB
    const uint64_t mb = 4ull * n * n;
    const csd_gemm_params gp{n, n, n, 0, 1.0f, 0.0f};
    progs.push_back({"gemm", bench::descriptor(CSD_PROG_GEMM, {{0, mb}, {mb, mb}, {out, mb}}, &gp, sizeof gp)});
    const csd_elementwise_params ep{CSD_EW_GELU, static_cast<uint32_t>(floats), 0, 0};
    progs.push_back({"elementwise gelu", bench::descriptor(CSD_PROG_ELEMENTWISE, {{0, big}, {out, big}}, &ep, sizeof ep)});
    const csd_softmax_params sp{static_cast<uint32_t>(floats / 1024), 1024};
    progs.push_back({"softmax", bench::descriptor(CSD_PROG_SOFTMAX, {{0, big}, {out, big}}, &sp, sizeof sp)});
    const csd_softmax_params sp1{1, static_cast<uint32_t>(floats)};
    progs.push_back({"softmax, one row", bench::descriptor(CSD_PROG_SOFTMAX, {{0, big}, {out, big}}, &sp1, sizeof sp1)});
    const csd_reduce_params rp{CSD_RED_SUM, CSD_DT_F32, static_cast<uint32_t>(floats / 1024), 1024};
    progs.push_back({"reduce sum", bench::descriptor(CSD_PROG_REDUCE, {{0, big}, {out, 8 * (floats / 1024)}}, &rp, sizeof rp)});
    for (const uint32_t op : {CSD_RED_SUM, CSD_RED_ARGMAX}) {
        const csd_reduce_params rp1{op, CSD_DT_F32, 1, static_cast<uint32_t>(floats)};
        progs.push_back({op == CSD_RED_SUM ? "reduce sum, one row" : "reduce argmax, one row",
                         bench::descriptor(CSD_PROG_REDUCE, {{0, big}, {out, 8}}, &rp1, sizeof rp1)});
    }
    csd_filter_params fp{};
    fp.record_size = 16;
    fp.count = static_cast<uint32_t>(big / 16);
    fp.field_type = CSD_FT_F32;
    fp.op = CSD_CMP_GT;
    const double lo = 0.0;
    std::memcpy(fp.lo, &lo, 8);
    progs.push_back({"filter, 16-byte records", bench::descriptor(CSD_PROG_FILTER, {{0, big}, {out, big}}, &fp, sizeof fp)});
    csd_filter_params fl = fp;  // 64 KiB records, every one kept and copied out
    fl.record_size = 64 << 10;
    fl.count = static_cast<uint32_t>(big >> 16);
    fl.field_type = CSD_FT_I32;
    fl.op = CSD_CMP_GE;
    const int64_t lowest = INT32_MIN;
    std::memcpy(fl.lo, &lowest, 8);
    progs.push_back({"filter, 64 KiB records", bench::descriptor(CSD_PROG_FILTER, {{0, big}, {out, big}}, &fl, sizeof fl)});
    const csd_convert_params cp{CSD_CVT_F32_F16, static_cast<uint32_t>(floats), 1.0f, 0};
    progs.push_back({"convert f32->f16", bench::descriptor(CSD_PROG_CONVERT, {{0, big}, {out, big / 2}}, &cp, sizeof cp)});
    const uint32_t xxh = CSD_CKSUM_XXH64;
    progs.push_back({"checksum xxh64", bench::descriptor(CSD_PROG_CHECKSUM, {{0, big}}, &xxh, 4)});
    // conv2d: 64 channels of 512 x 512 (64 MiB), 64 filters of 3 x 3, stride 1, pad 1
    const uint32_t hw = quick ? 256 : 512;
    const uint64_t img = 4ull * 64 * hw * hw, wts = 4ull * 64 * 64 * 9;
    const csd_conv2d_params kp{1, 64, hw, hw, 64, 3, 3, 1, 1, 1, 1, 1, 1, 0};
    progs.push_back({"conv2d 3x3, 64 filters", bench::descriptor(CSD_PROG_CONV2D, {{0, img}, {img, wts}, {img + wts, 0}, {out, img}}, &kp, sizeof kp)});
    // conv2d: 64 channels of 120 x 120, 2048 filters of 3 x 3 (a 34 GFLOP layer, 113 MiB out)
    const uint32_t kk = quick ? 512 : 2048;
    const uint64_t img2 = 4ull * 64 * 120 * 120, wts2 = 4ull * kk * 64 * 9, out2 = 4ull * kk * 120 * 120;
    const csd_conv2d_params kp2{1, 64, 120, 120, kk, 3, 3, 1, 1, 1, 1, 1, 1, 0};
    progs.push_back({quick ? "conv2d 3x3, 512 filters" : "conv2d 3x3, 2048 filters",
                     bench::descriptor(CSD_PROG_CONV2D, {{0, img2}, {img2, wts2}, {img2 + wts2, 0}, {out, out2}}, &kp2, sizeof kp2)});
    // decompress: one zstd frame of compressible data (after the output), `big` bytes out
    {
        std::vector<uint8_t> plain(big);
        for (uint64_t i = 0; i < big; i++) plain[i] = static_cast<uint8_t>("computational storage "[i % 22] ^ (g() % 16 == 0));
        const uint64_t at = 2 * big, room = 64 << 20;
        const size_t clen = ZSTD_compress(slm + at, room, plain.data(), big, 3);
        if (ZSTD_isError(clen)) {
            std::fprintf(stderr, "cancel_bench: zstd: %s\n", ZSTD_getErrorName(clen));
            return 1;
        }
        const uint32_t zstd = CSD_DECOMP_ZSTD;
        progs.push_back({"decompress zstd", bench::descriptor(CSD_PROG_DECOMPRESS, {{at, clen}, {out, big}}, &zstd, 4)});
    }
    // a downloaded program of 48,000 instructions, interpreted: one byte a record
    const uint16_t slot = bench::load_program(core, bench::slurp(std::string(argv[1 + quick]) + "/long_program.o"), 0, 1);
    const uint32_t records = quick ? 2048 : 16384;
    const uint32_t bh[4] = {records, CSD_BPF_MAP, 0, 0};
    progs.push_back({"eBPF 48k insns (interp.)", bench::descriptor(slot, {{0, records}, {out, 8ull * records}}, bh, sizeof bh)});
    csd_core_set_bpf_interpreted(core, 1);

    std::printf("cancel latency, one compute unit, %llu MiB in flight, cancel at half the run time, %d runs\n",
                static_cast<unsigned long long>(big >> 20), runs);
    std::printf("  %-26s %10s %10s %10s\n", "program", "run (ms)", "median", "max (ms)");
    for (const Program &p : progs) {
        const double full = full_run_ms(core, p);
        std::vector<double> lat;
        int completed = 0;
        for (int i = 0; i < runs; i++) {
            const Cancelled c = cancelled_run(core, p, full / 2);
            if (c.ms < 0) continue;  // returned before the flag: nothing to wait for
            lat.push_back(c.ms);
            completed += c.completed;
        }
        if (lat.empty()) {
            std::printf("  %-26s %10.1f   returned before every flag\n", p.name, full);
            continue;
        }
        std::sort(lat.begin(), lat.end());
        std::printf("  %-26s %10.1f %10.2f %10.2f", p.name, full, lat[lat.size() / 2], lat.back());
        if (completed) std::printf("  ran to its end %d of %zu times", completed, lat.size());
        std::printf("\n");
    }
    csd_core_free(core);
    return 0;
}
