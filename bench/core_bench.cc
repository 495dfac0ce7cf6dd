// SPDX-License-Identifier: MIT
// core_bench: device-core throughput, side by side with the same work done directly.
//   gemm 1024^3 f32 through Execute (descriptor, validation, program) vs cblas_sgemm
//   filter, checksum (CRC-32C, XXH64), decompress (zstd, lz4) over 256 MiB of SLM
//   the timing model's cost per command when it is off, against a 4 KiB copy Execute
// Usage: core_bench [--quick]   (OPENBLAS_NUM_THREADS sets the BLAS threads for both)
#include <cblas.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <vector>

#include "core_calls.hpp"

namespace {

double seconds(const std::function<void()> &f, int reps)
{
    f();  // warm-up
    double best = 1e30;
    for (int i = 0; i < reps; i++) {
        auto t0 = std::chrono::steady_clock::now();
        f();
        best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    return best;
}

}  // namespace

int main(int argc, char **argv)
{
    const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
    const uint64_t big = quick ? (32ull << 20) : (256ull << 20);
    const int reps = quick ? 2 : 5;
    csd_core *core = csd_core_new(3 * big + (64 << 20), 2);
    uint8_t *slm;
    csd_core_slm_range(core, 0, csd_core_slm_size(core), &slm);
    std::printf("threads: OpenBLAS %d; data %llu MiB; best of %d runs\n", openblas_get_num_threads(),
                static_cast<unsigned long long>(big >> 20), reps);

    // gemm
    const uint32_t n = 1024;
    const uint64_t mbytes = uint64_t{n} * n * 4;
    std::mt19937 g(1);
    std::uniform_real_distribution<float> u(-1, 1);
    auto *A = reinterpret_cast<float *>(slm), *B = A + n * n;  // C follows B in SLM
    for (uint64_t i = 0; i < 2ull * n * n; i++) A[i] = u(g);
    csd_gemm_params gp{n, n, n, 0, 1.0f, 0.0f};
    auto gd = bench::descriptor(CSD_PROG_GEMM, {{0, mbytes}, {mbytes, mbytes}, {2 * mbytes, mbytes}}, &gp, sizeof(gp));
    std::vector<float> Cd(n * n);
    const double flop = 2.0 * n * n * n;
    double t_dev = seconds([&] { bench::execute(core, gd); }, reps);
    double t_blas = seconds([&] {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, A, n, B, n, 0.0f, Cd.data(), n);
    }, reps);
    std::printf("gemm 1024x1024x1024 f32: in-device %.1f GFLOP/s, direct cblas_sgemm %.1f GFLOP/s, ratio %.3f\n",
                flop / t_dev / 1e9, flop / t_blas / 1e9, t_blas / t_dev);

    // filter over `big` bytes of 16-byte records: f32 field > 0.5 (about half match), indices out
    const uint32_t count = static_cast<uint32_t>(big / 16);
    for (uint64_t i = 0; i < count; i++) {
        float v = static_cast<float>(i % 1000) / 1000.0f;
        std::memcpy(slm + i * 16 + 4, &v, 4);
    }
    csd_filter_params fp{};
    fp.record_size = 16;
    fp.count = count;
    fp.field_offset = 4;
    fp.field_type = CSD_FT_F32;
    fp.op = CSD_CMP_GT;
    fp.output_mode = CSD_FILTER_INDICES;
    double lo = 0.5;
    std::memcpy(fp.lo, &lo, 8);
    auto fd = bench::descriptor(CSD_PROG_FILTER, {{0, big}, {big, big}}, &fp, sizeof(fp));
    double t = seconds([&] { bench::execute(core, fd); }, reps);
    std::printf("filter (16-byte records, f32 > 0.5, ~50%% match): %.2f GB/s\n", big / t / 1e9);

    for (uint32_t algo : {0u, 1u}) {
        auto cd = bench::descriptor(CSD_PROG_CHECKSUM, {{0, big}}, &algo, 4);
        t = seconds([&] { bench::execute(core, cd); }, reps);
        std::printf("checksum %s: %.2f GB/s\n", algo ? "XXH64" : "CRC-32C", big / t / 1e9);
    }

    // decompress: compressible text-like data
    const std::vector<uint8_t> plain = bench::text_like(big, g);
    for (uint32_t algo : {0u, 1u}) {
        const std::vector<uint8_t> comp = bench::compress(algo, plain);
        std::memcpy(slm, comp.data(), comp.size());
        auto dd = bench::descriptor(CSD_PROG_DECOMPRESS, {{0, comp.size()}, {big, big}}, &algo, 4);
        t = seconds([&] { bench::execute(core, dd); }, reps);
        std::printf("decompress %s (ratio %.1f): %.2f GB/s of output\n", algo ? "lz4" : "zstd",
                    static_cast<double>(big) / comp.size(), big / t / 1e9);
    }

    // The timing model, off: what every command still pays for it. The in-process device
    // asks the core whether the model is on (and builds the command's work record only if
    // it is); QEMU's glue tests one flag. Measured against the cheapest command there is.
    {
        auto cd = bench::descriptor(CSD_PROG_COPY, {{0, 4096}, {4096, 4096}}, nullptr, 0);
        const int cmds = quick ? 20000 : 200000;
        const double t_cmd = seconds([&] { for (int i = 0; i < cmds; i++) bench::execute(core, cd); }, reps) / cmds;
        volatile int on = 0;
        const long checks = quick ? 10000000 : 100000000;
        const double t_off = seconds([&] {
            for (long i = 0; i < checks; i++) on = on + csd_core_model_on(core);
        }, reps) / checks;
        std::printf("timing model off: %.1f ns a command against a 4 KiB copy Execute through the core of %.0f ns: "
                    "%.2f %%\n", t_off * 1e9, t_cmd * 1e9, 100 * t_off / t_cmd);
    }
    csd_core_free(core);
    return 0;
}
