// SPDX-License-Identifier: MIT
// gpu_gather: scattered 4 KiB records into GPU memory, (1) driven entirely from a CUDA kernel
// through csd::gpu::GpuQueues (the kernel builds each NVMe Read, rings the doorbell, polls
// the completion; host threads serve the queues onto the in-process device), against (2) the
// same gather issued by host threads through libcsd (Device::read_lbas into pinned memory,
// then one cudaMemcpy), side by side in one run; every byte on the GPU checked.
// Usage: gpu_gather check             (a small run that verifies; exit 1 on any difference)
//        gpu_gather bench [RECORDS] [POLLERS]   (1..128 queues against 1..16 host threads)
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "gather_kernel.hpp"
#include "gpu.hpp"
#include "gpu_queues.hpp"

using namespace csd;
using clk = std::chrono::steady_clock;

namespace {

constexpr uint32_t kRecord = 4096;

void check(cudaError_t e, const char *what)
{
    if (e != cudaSuccess) {
        std::fprintf(stderr, "gpu_gather: %s: %s\n", what, cudaGetErrorString(e));
        std::exit(2);
    }
}

// The bytes of record r: its number, then a pattern that depends on r and the position.
void fill_record(uint64_t r, uint8_t *p)
{
    std::memcpy(p, &r, 8);
    for (uint32_t i = 8; i < kRecord; i++) p[i] = static_cast<uint8_t>(r * 2654435761u + i * 31);
}

// Writes every record of the namespace (records of kRecord bytes).
void fill_namespace(Device &dev, uint64_t records)
{
    const uint32_t lba = dev.ns().lba_size;
    const uint64_t per_write = (8u << 20) / kRecord;
    std::vector<uint8_t> buf(per_write * kRecord);
    for (uint64_t r = 0; r < records; r += per_write) {
        const uint64_t n = std::min(per_write, records - r);
        for (uint64_t k = 0; k < n; k++) fill_record(r + k, buf.data() + k * kRecord);
        dev.write_lbas(r * kRecord / lba, n * kRecord / lba, buf.data());
    }
}

// Records in the GPU buffer d_dst that differ from records ids (copied back and compared).
uint64_t differences(const std::vector<uint64_t> &ids, const uint8_t *d_dst)
{
    std::vector<uint8_t> got(ids.size() * kRecord), want(kRecord);
    check(cudaMemcpy(got.data(), d_dst, got.size(), cudaMemcpyDeviceToHost), "cudaMemcpy");
    uint64_t bad = 0;
    for (size_t i = 0; i < ids.size(); i++) {
        fill_record(ids[i], want.data());
        bad += std::memcmp(want.data(), got.data() + i * kRecord, kRecord) != 0;
    }
    return bad;
}

struct Run {
    double seconds = 0;
    uint64_t errors = 0, wrong = 0;
};

// The kernel-driven gather over `queues` queue pairs served by `pollers` host threads.
Run gpu_issued(Device &dev, const std::vector<uint64_t> &ids, uint32_t queues, int pollers, uint8_t *d_dst,
               uint64_t *d_ids, bool verify)
{
    const uint32_t depth = 64;
    gpu::GpuQueues gq(dev, queues, depth, uint64_t(queues) * depth * kRecord, pollers);
    unsigned long long *d_err = nullptr;
    check(cudaMalloc(reinterpret_cast<void **>(&d_err), sizeof *d_err), "cudaMalloc");
    check(cudaMemset(d_err, 0, sizeof *d_err), "cudaMemset");
    check(cudaMemset(d_dst, 0, ids.size() * kRecord), "cudaMemset");
    check(cudaDeviceSynchronize(), "sync");
    const uint32_t lbas = kRecord / dev.ns().lba_size;
    const auto t0 = clk::now();
    check(launch_gather(gq.device_view(), d_ids, ids.size(), lbas, d_dst, d_err, nullptr), "launch");
    check(cudaDeviceSynchronize(), "gather kernel");
    Run run;
    run.seconds = std::chrono::duration<double>(clk::now() - t0).count();
    unsigned long long errs = 0;
    check(cudaMemcpy(&errs, d_err, sizeof errs, cudaMemcpyDeviceToHost), "cudaMemcpy");
    run.errors = errs;
    cudaFree(d_err);
    if (verify) run.wrong = differences(ids, d_dst);
    return run;
}

// The same gather from host threads: each reads its share of the records with libcsd into a
// pinned buffer, then one cudaMemcpy moves them all to the GPU.
Run host_issued(Device &dev, const std::vector<uint64_t> &ids, int threads, uint8_t *pinned, uint8_t *d_dst,
                bool verify)
{
    const uint32_t lbas = kRecord / dev.ns().lba_size;
    check(cudaMemset(d_dst, 0, ids.size() * kRecord), "cudaMemset");
    check(cudaDeviceSynchronize(), "sync");
    const auto t0 = clk::now();
    std::vector<std::thread> ts;
    for (int t = 0; t < threads; t++) {
        ts.emplace_back([&, t] {
            for (size_t i = t; i < ids.size(); i += threads) dev.read_lbas(ids[i] * lbas, lbas, pinned + i * kRecord);
        });
    }
    for (auto &t : ts) t.join();
    check(cudaMemcpy(d_dst, pinned, ids.size() * kRecord, cudaMemcpyHostToDevice), "cudaMemcpy");
    Run run;
    run.seconds = std::chrono::duration<double>(clk::now() - t0).count();
    if (verify) run.wrong = differences(ids, d_dst);
    return run;
}

}  // namespace

int main(int argc, char **argv)
{
    const std::string mode = argc > 1 ? argv[1] : "check";
    if (!gpu::available()) {
        std::printf("gpu_gather: no CUDA device; skipped\n");
        return 0;
    }
    const bool bench = mode == "bench";
    const uint64_t n = bench ? (argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 65536) : 3000;
    const int max_pollers = bench && argc > 3 ? std::atoi(argv[3]) : 8;
    const uint64_t ns_records = bench ? 262144 : 8192;  // 1 GiB / 32 MiB of 4 KiB records
    char name[] = "/tmp/csd-gather-XXXXXX";
    close(mkstemp(name));
    unlink(name);
    auto dev = Device::open(std::string("emu:") + name + "?size=" + std::to_string(ns_records * kRecord >> 20) + "M&slm=16M");
    unlink(name);  // the device holds it open
    fill_namespace(*dev, ns_records);
    std::mt19937_64 rng(7);
    std::vector<uint64_t> ids(n);
    for (auto &id : ids) id = rng() % ns_records;
    uint64_t *d_ids = nullptr;
    uint8_t *d_dst = nullptr, *pinned = nullptr;
    check(cudaMalloc(reinterpret_cast<void **>(&d_ids), n * sizeof(uint64_t)), "cudaMalloc");
    check(cudaMemcpy(d_ids, ids.data(), n * sizeof(uint64_t), cudaMemcpyHostToDevice), "cudaMemcpy");
    check(cudaMalloc(reinterpret_cast<void **>(&d_dst), n * kRecord), "cudaMalloc");
    check(cudaHostAlloc(reinterpret_cast<void **>(&pinned), n * kRecord, cudaHostAllocDefault), "cudaHostAlloc");
    cudaDeviceProp prop{};
    cudaGetDeviceProperties(&prop, 0);
    int bad = 0;
    if (!bench) {
        // small, but over several queues, partial last batches and queue wraps; one poller
        // serving several queues too
        for (uint32_t q : {1u, 3u, 8u}) {
            const Run r = gpu_issued(*dev, ids, q, 2, d_dst, d_ids, true);
            std::printf("gpu_gather check: %u queue(s): %llu records, %llu command errors, %llu wrong records\n", q,
                        static_cast<unsigned long long>(n), static_cast<unsigned long long>(r.errors),
                        static_cast<unsigned long long>(r.wrong));
            bad += r.errors != 0 || r.wrong != 0;
        }
        const Run h = host_issued(*dev, ids, 4, pinned, d_dst, true);
        std::printf("gpu_gather check: host-issued: %llu wrong records\n", static_cast<unsigned long long>(h.wrong));
        bad += h.wrong != 0;
        std::printf("gpu_gather check: %s\n", bad ? "FAILED" : "ok");
    } else {
        std::printf("GPU: %s; %llu random 4 KiB records of a 1 GiB namespace (in-process device, page cache),"
                    " queue depth 64, up to %d polling host threads\n\n",
                    prop.name, static_cast<unsigned long long>(n), max_pollers);
        std::printf("| issued by | queues / threads | pollers | requests/s | GB/s | records checked |\n|---|---|---|---|---|---|\n");
        for (uint32_t q : {1u, 2u, 4u, 8u, 16u, 32u, 64u, 128u}) {
            const int pollers = std::min<int>(q, max_pollers);
            gpu_issued(*dev, ids, q, pollers, d_dst, d_ids, false);  // warm-up
            const Run r = gpu_issued(*dev, ids, q, pollers, d_dst, d_ids, true);
            bad += r.errors != 0 || r.wrong != 0;
            std::printf("| GPU kernel (GpuQueues) | %u | %d | %.0f | %.2f | %s |\n", q, pollers, n / r.seconds,
                        n * kRecord / r.seconds / 1e9, r.errors || r.wrong ? "WRONG" : "all");
            std::fflush(stdout);
        }
        for (int t : {1, 2, 4, 8, 16}) {
            host_issued(*dev, ids, t, pinned, d_dst, false);
            const Run r = host_issued(*dev, ids, t, pinned, d_dst, true);
            bad += r.wrong != 0;
            std::printf("| host threads (libcsd read_lbas + cudaMemcpy) | %d | - | %.0f | %.2f | %s |\n", t,
                        n / r.seconds, n * kRecord / r.seconds / 1e9, r.wrong ? "WRONG" : "all");
            std::fflush(stdout);
        }
    }
    cudaFree(d_ids);
    cudaFree(d_dst);
    cudaFreeHost(pinned);
    return bad ? 1 : 0;
}
