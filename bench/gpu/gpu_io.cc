// SPDX-License-Identifier: MIT
// gpu_io: GPU-initiated I/O at small sizes: random 512 B and 4 KiB NVMe Reads and a small
// Execute (CRC-32C of one block in SLM) issued from CUDA kernels on 1-256 queue pairs
// (csd::gpu::GpuQueues), served by host polling threads onto the in-process device; beside
// them, the per-command cost of the in-process device alone (host threads calling the
// transport), and the rate under a timing-model preset with its overruns; and Reads that land
// in GPU memory (moved there by the drive side before the completion) against Reads into the
// arena, the arena plus the warp's own copy into GPU memory, and host threads issuing
// cudaMemcpyAsync / cudaMemcpyBatchAsync of the same random blocks from pinned memory.
// Usage: gpu_io check [vram [resident] | lane]  (every Read's bytes and every Execute's result
//                                      checked on the GPU, where they landed; exit 1 on any
//                                      difference; vram: only the Reads into GPU memory;
//                                      resident: only those the resident copy kernel moves;
//                                      lane: only its lanes driven directly, no queues)
//        gpu_io bench [MAX_POLLERS]   (the tables of docs/perf.md)
//        gpu_io vram [MAX_POLLERS [WARPS [BLOCKS [resident]]]]  (only the GPU-memory table;
//                                      the resident copy kernel's WARPS a block, default 16, and
//                                      BLOCKS per poller, default 1; resident: only its rows)
//        gpu_io model [MAX_POLLERS]   (only the timing-model table)
//        gpu_io host                  (the device's per-command path alone; no GPU needed)
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "csd/device.hpp"
#include "csd_crc32c.h"
#include "csd_spec.h"
#include "gpu.hpp"
#include "gpu_queues.hpp"
#include "io_kernel.hpp"

using namespace csd;
using clk = std::chrono::steady_clock;

namespace {

void check(cudaError_t e, const char *what)
{
    if (e != cudaSuccess) {
        std::fprintf(stderr, "gpu_io: %s: %s\n", what, cudaGetErrorString(e));
        std::exit(2);
    }
}

double since(clk::time_point t0) { return std::chrono::duration<double>(clk::now() - t0).count(); }

// An in-process device over a fresh file of `mib` MiB holding pattern_word() everywhere.
std::unique_ptr<Device> pattern_device(uint64_t mib, const std::string &extra, std::string *path)
{
    char name[] = "/tmp/csd-gpuio-XXXXXX";
    close(mkstemp(name));
    unlink(name);
    *path = name;
    auto dev = Device::open(std::string("emu:") + name + "?size=" + std::to_string(mib) + "M&slm=16M" + extra);
    const uint64_t step = 8 << 20;
    std::vector<uint64_t> buf(step / 8);
    const uint32_t lba = dev->ns().lba_size;
    for (uint64_t pos = 0; pos < (mib << 20); pos += step) {
        for (uint64_t k = 0; k < buf.size(); k++) buf[k] = pattern_word(pos + 8 * k);
        dev->write_lbas(pos / lba, step / lba, buf.data());
    }
    return dev;
}

struct Run {
    double seconds = 0;
    uint64_t commands = 0, failed = 0, wrong = 0;
    QueueProcessor::Timed timed;  // under a timing model: how late after their finish completions were posted
    double rate() const { return seconds > 0 ? commands / seconds : 0; }
};

// One kernel of job over `queues` queue pairs (depth 64) served by `pollers` host threads.
// Execute jobs: descriptors (desc, one per block, desc_stride apart) are copied into the
// arena after the slots. Reads with job.dest 1 or 2: GPU memory of one slot per SQ entry
// (for 2 the queues' window, moved by `by`); vram_shift moves the kernel's destinations off
// it (a bad destination).
Run run_kernel(Device &dev, uint32_t queues, int pollers, IoJob job, const std::vector<uint8_t> &descs = {},
               gpu::MoveBy by = gpu::MoveBy::resident, uint64_t vram_shift = 0, unsigned warps = 16, unsigned blocks = 1,
               bool direct = true)
{
    const uint32_t depth = 64;
    const uint64_t slot = job.kind != 1 ? uint64_t(job.nlb) * dev.ns().lba_size : 64;
    const uint64_t slots_bytes = uint64_t(queues) * depth * slot;
    uint8_t *vram = nullptr;
    if (job.dest) check(cudaMalloc(reinterpret_cast<void **>(&vram), slots_bytes), "cudaMalloc (GPU memory)");
    unsigned long long *counters = nullptr;
    check(cudaMalloc(reinterpret_cast<void **>(&counters), 2 * sizeof *counters), "cudaMalloc");
    check(cudaMemset(counters, 0, 2 * sizeof *counters), "cudaMemset");
    check(cudaDeviceSynchronize(), "sync");
    gpu::GpuWindow window;
    if (job.dest == 2) window.base = vram, window.bytes = slots_bytes, window.by = by, window.warps = warps, window.blocks = blocks;
    window.direct = direct;
    const uint64_t arena = job.dest == 2 ? 4096 : slots_bytes;
    // (a resident mover runs while gq lives: from here on, streams are synchronised, not the device)
    auto gq_owner = std::make_unique<gpu::GpuQueues>(dev, queues, depth, arena + descs.size() + 64, pollers, window);
    gpu::GpuQueues &gq = *gq_owner;
    job.vram = vram + vram_shift;
    if (!descs.empty()) {
        std::memcpy(gq.host_arena() + arena, descs.data(), descs.size());
        job.desc_offset = arena;
    }
    const uint64_t before = gq.commands();
    const auto t0 = clk::now();
    check(launch_io(gq.device_view(), job, slot, counters, nullptr), "launch");
    // a kernel that never finishes (its completions never posted) ends the run with a message
    for (cudaError_t e; (e = cudaStreamQuery(nullptr)) != cudaSuccess;) {
        if (e != cudaErrorNotReady) check(e, "io kernel");
        if (since(t0) > 60) {
            std::printf("gpu_io: the kernel did not finish within 60 s (%llu of its commands completed)\n",
                        static_cast<unsigned long long>(gq.commands() - before));
            std::fflush(stdout);
            std::_Exit(3);
        }
        std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
    Run r;
    r.seconds = since(t0);
    r.commands = gq.commands() - before;
    r.timed = gq.timed();
    gq_owner.reset();
    unsigned long long c[2];
    check(cudaMemcpy(c, counters, sizeof c, cudaMemcpyDeviceToHost), "cudaMemcpy");
    r.failed = c[0], r.wrong = c[1];
    cudaFree(counters);
    if (vram) cudaFree(vram);
    return r;
}

// Execute descriptors: CRC-32C of block i (block_bytes at SLM offset i * block_bytes), one
// per desc_stride bytes; their expected results into *expect (device memory).
std::vector<uint8_t> checksum_descriptors(Device &dev, uint32_t blocks, uint32_t block_bytes, uint32_t stride,
                                          uint32_t *desc_len, uint32_t **expect)
{
    std::vector<uint8_t> data(uint64_t(blocks) * block_bytes);
    for (uint64_t k = 0; k < data.size(); k += 8) {
        const uint64_t v = pattern_word(k * 3 + 1);
        std::memcpy(&data[k], &v, 8);
    }
    dev.slm_write(0, data.data(), data.size());
    std::vector<uint8_t> descs(uint64_t(blocks) * stride);
    std::vector<uint32_t> want(blocks);
    const uint32_t algo = 0;  // CRC-32C
    for (uint32_t i = 0; i < blocks; i++) {
        const auto d = make_descriptor(CSD_PROG_CHECKSUM, {Range{uint64_t(i) * block_bytes, block_bytes}}, &algo, 4);
        if (d.size() > stride) {
            std::fprintf(stderr, "gpu_io: descriptor of %zu bytes\n", d.size());
            std::exit(2);
        }
        *desc_len = static_cast<uint32_t>(d.size());
        std::memcpy(&descs[uint64_t(i) * stride], d.data(), d.size());
        want[i] = csd_crc32c(&data[uint64_t(i) * block_bytes], block_bytes);
    }
    check(cudaMalloc(reinterpret_cast<void **>(expect), blocks * 4), "cudaMalloc");
    check(cudaMemcpy(*expect, want.data(), blocks * 4, cudaMemcpyHostToDevice), "cudaMemcpy");
    return descs;
}

// A resident mover's lane driven directly, with no queues and no other kernel: blocks of
// every kind (512 B, 4 KiB, 64 KiB, unaligned lengths) staged, recorded and published while
// the kernel is stopped, then the kernel started (it moves everything published, then
// returns); each copy must finish and the window must hold exactly the staged bytes. The
// form in which compute-sanitizer checks the copy kernel: under it, the io kernel's Reads
// through the queues did not complete beside the resident kernel (90 s on the H200).
// Every fourth copy is taken straight from registered host memory (copy_from: how Reads of a
// simulated peer-to-peer drive's namespace are moved), not staged.
// Returns the wrong bytes plus unfinished copies.
uint64_t lane_check(unsigned warps, unsigned blocks)
{
    const std::array<uint32_t, 5> sizes{512, 4096, 65536, 1000, 4096 + 48};
    const uint32_t n = 300;
    uint64_t bytes = 0;
    std::vector<uint64_t> at(n);
    for (uint32_t i = 0; i < n; i++) at[i] = bytes, bytes += (sizes[i % sizes.size()] + 255) / 256 * 256 + 16 * (i % 3 == 1);
    uint8_t *vram = nullptr;
    check(cudaMalloc(reinterpret_cast<void **>(&vram), bytes), "cudaMalloc");
    check(cudaMemset(vram, 0, bytes), "cudaMemset");
    gpu::GpuWindow w;
    w.base = vram, w.bytes = bytes, w.by = gpu::MoveBy::resident, w.warps = warps, w.blocks = blocks;
    std::vector<uint8_t> want(bytes, 0);
    uint64_t bad = 0;
    const uint64_t host_bytes = (bytes + 4095) / 4096 * 4096;
    auto *host = static_cast<uint8_t *>(std::aligned_alloc(4096, host_bytes));  // the "namespace": a copy's source at its own place
    {
        gpu::GpuMover mover(w, 1 << 20, host, host_bytes);
        if (!mover.reaches(host, host_bytes)) {
            std::printf("gpu_io check: lane: the mover did not register the host memory\n");
            std::free(host);
            return 1;
        }
        auto lane = mover.lane();
        std::vector<uint64_t> tickets;
        for (uint32_t i = 0; i < n; i++) {
            const uint32_t len = sizes[i % sizes.size()];
            const uint64_t to = at[i] + 16 * (i % 3 == 1);
            if (i % 4 == 3) {  // straight from the registered host memory
                for (uint32_t k = 0; k < len; k++) host[to + k] = want[to + k] = static_cast<uint8_t>(i * 31 + k * 7 + (k >> 8));
                const uint64_t t = lane->copy_from(reinterpret_cast<uint64_t>(vram + to), host + to, len);
                if (!t) {
                    std::printf("gpu_io check: lane: no ring slot for copy %u\n", i);
                    std::free(host);
                    return 1;
                }
                tickets.push_back(t);
                if (i % 100 == 99) lane->flush();
                continue;
            }
            uint8_t *s = lane->stage(len);
            if (!s) {
                std::printf("gpu_io check: lane: no staging for copy %u\n", i);
                return 1;
            }
            for (uint32_t k = 0; k < len; k++) s[k] = want[at[i] + 16 * (i % 3 == 1) + k] = static_cast<uint8_t>(i * 31 + k * 7 + (k >> 8));
            tickets.push_back(lane->copy(reinterpret_cast<uint64_t>(vram + at[i] + 16 * (i % 3 == 1)), s, len));
            if (i % 100 == 99) lane->flush();  // three slabs of the four
        }
        lane->flush();
        lane->stop();  // before it starts: it moves what is published, then returns
        lane->start();
        const auto t0 = clk::now();
        for (uint64_t t : tickets) {
            MoverLane::State st;
            while ((st = lane->state(t)) == MoverLane::State::running && since(t0) < 60) std::this_thread::yield();
            bad += st != MoverLane::State::done;
        }
    }
    std::vector<uint8_t> got(bytes);
    check(cudaMemcpy(got.data(), vram, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy");
    for (uint64_t k = 0; k < bytes; k++) bad += got[k] != want[k];
    cudaFree(vram);
    std::free(host);
    return bad;
}

// Host threads calling the in-process device's transport directly: 512 B Reads at random
// LBAs, `n` per thread; the per-command cost without queues or a GPU.
double host_rate(Device &dev, int threads, uint64_t n, uint32_t nlb)
{
    const uint64_t records = dev.ns().lba_count / nlb;
    std::vector<std::thread> ts;
    std::atomic<uint64_t> bad{0};
    const auto t0 = clk::now();
    for (int t = 0; t < threads; t++) {
        ts.emplace_back([&, t] {
            std::vector<uint8_t> buf(uint64_t(nlb) * dev.ns().lba_size);
            uint64_t x = 88172645463325252ull + t;
            for (uint64_t i = 0; i < n; i++) {
                x ^= x << 13, x ^= x >> 7, x ^= x << 17;
                Command c;
                c.opcode = 0x02;
                c.nsid = dev.ns().nsid;
                const uint64_t slba = (x % records) * nlb;
                c.cdw10 = static_cast<uint32_t>(slba), c.cdw11 = static_cast<uint32_t>(slba >> 32);
                c.cdw12 = nlb - 1;
                c.data = buf.data();
                c.data_len = static_cast<uint32_t>(buf.size());
                if (dev.transport().submit(c).status) bad++;
            }
        });
    }
    for (auto &t : ts) t.join();
    const double s = since(t0);
    if (bad) std::printf("(%llu failed)\n", static_cast<unsigned long long>(bad.load()));
    return threads * n / s;
}

// Pinned host memory holding the namespace's bytes (pattern_word), mib MiB.
uint8_t *pinned_pattern(uint64_t mib)
{
    uint8_t *p = nullptr;
    check(cudaHostAlloc(reinterpret_cast<void **>(&p), mib << 20, cudaHostAllocDefault), "cudaHostAlloc");
    uint64_t *w = reinterpret_cast<uint64_t *>(p);
    for (uint64_t k = 0; k < (mib << 20) / 8; k++) w[k] = pattern_word(8 * k);
    return p;
}

// What a host program that has the namespace's bytes in pinned memory writes to land random
// blocks in GPU memory: `threads` host threads, each with a stream of its own, copying n random
// blocks of `bytes` each with cudaMemcpyAsync (or cudaMemcpyBatchAsync of 1024 at a time)
// into GPU memory; blocks per second.
double memcpy_rate(const uint8_t *pinned, uint64_t src_bytes, uint8_t *vram, uint64_t vram_bytes, uint32_t bytes,
                   int threads, uint64_t n, bool batch)
{
    std::vector<std::thread> ts;
    std::atomic<int> bad{0};
    const uint64_t records = src_bytes / bytes, slots = vram_bytes / bytes;
    const auto t0 = clk::now();
    for (int t = 0; t < threads; t++) {
        ts.emplace_back([&, t] {
            cudaStream_t st;
            cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking);
            uint64_t x = 88172645463325252ull + t * 7919;
            std::vector<void *> dsts;
            std::vector<const void *> srcs;
            std::vector<size_t> sizes;
            cudaMemcpyAttributes attr{};
            attr.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
            attr.srcLocHint.type = cudaMemLocationTypeHost;
            attr.dstLocHint.type = cudaMemLocationTypeDevice;
            size_t idx = 0;
            for (uint64_t i = 0; i < n; i++) {
                x ^= x << 13, x ^= x >> 7, x ^= x << 17;
                const uint8_t *src = pinned + (x % records) * bytes;
                uint8_t *dst = vram + ((uint64_t(t) * n + i) % slots) * bytes;
                if (!batch) {
                    bad += cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, st) != cudaSuccess;
                    continue;
                }
                dsts.push_back(dst), srcs.push_back(src), sizes.push_back(bytes);
                if (dsts.size() == 1024 || i + 1 == n) {
                    bad += cudaMemcpyBatchAsync(dsts.data(), srcs.data(), sizes.data(), dsts.size(), &attr, &idx, 1, st) !=
                           cudaSuccess;
                    dsts.clear(), srcs.clear(), sizes.clear();
                }
            }
            bad += cudaStreamSynchronize(st) != cudaSuccess;
            cudaStreamDestroy(st);
        });
    }
    for (auto &t : ts) t.join();
    const double s = since(t0);
    if (bad) std::printf("(%d CUDA calls failed)\n", bad.load());
    return threads * n / s;
}

// Reads that land in GPU memory, random 512 B / 4 KiB / 64 KiB over the 1 GiB namespace:
// the drive side moving them (three ways) against the arena (host memory), the arena plus the
// warp's own copy, and host threads' cudaMemcpyAsync of the same blocks; all against the
// pinned ceiling (one 1 GiB cudaMemcpyAsync from pinned memory, the best of three).
int vram_table(Device &dev, int max_pollers, unsigned warps, unsigned blocks, bool resident_only)
{
    int bad = 0;
    const uint64_t mib = dev.ns().lba_count * dev.ns().lba_size >> 20;
    uint8_t *pinned = pinned_pattern(mib), *vram = nullptr;
    check(cudaMalloc(reinterpret_cast<void **>(&vram), mib << 20), "cudaMalloc");
    double ceiling = 0;
    for (int i = 0; i < 3; i++) {
        const auto t0 = clk::now();
        check(cudaMemcpy(vram, pinned, mib << 20, cudaMemcpyHostToDevice), "cudaMemcpy");
        ceiling = std::max(ceiling, double(mib << 20) / since(t0) / 1e9);
    }
    std::printf("\npinned ceiling (one %llu MiB cudaMemcpy from pinned host memory, best of 3): %.1f GB/s\n",
                static_cast<unsigned long long>(mib), ceiling);
    std::printf("\n| Read | path: where it lands, who moves it | queues | pollers / threads | M reads/s | GB/s | %% of pinned ceiling | failed |\n"
                "|---|---|---|---|---|---|---|---|\n");
    const uint32_t lba = dev.ns().lba_size;
    struct Path {
        const char *name;
        uint32_t dest;
        gpu::MoveBy by;
        bool direct = false;  // resident: plain Reads copied from the namespace's registered pages
    };
    const Path paths[] = {
        {"arena (host memory; not read here: no PCIe transfer)", 0, gpu::MoveBy::kernel},
        {"arena, then the warp copies its batch into GPU memory", 1, gpu::MoveBy::kernel},
        {"GPU memory, moved by the drive side: resident copy kernel from the namespace's registered pages (simulated peer-to-peer drive)", 2,
         gpu::MoveBy::resident, true},
        {"GPU memory, moved by the drive side: resident copy kernel from pinned staging", 2, gpu::MoveBy::resident},
        {"GPU memory, moved by the drive side: copy kernel launched per round", 2, gpu::MoveBy::kernel},
        {"GPU memory, moved by the drive side: cudaMemcpyBatchAsync per round", 2, gpu::MoveBy::batch},
        {"GPU memory, moved by the drive side: cudaMemcpyAsync per block", 2, gpu::MoveBy::memcpy},
    };
    for (uint32_t bytes : {512u, 4096u, 65536u}) {
        const uint64_t target = std::min<uint64_t>(1u << 21, (8ull << 30) / bytes);
        for (uint32_t q : {128u, 256u}) {
            for (const Path &p : paths) {
                const bool slow = p.dest == 2 && p.by != gpu::MoveBy::resident;  // one row each, fewer commands
                if ((slow && q != 256) || (resident_only && (p.dest != 2 || p.by != gpu::MoveBy::resident))) continue;
                IoJob job;
                job.nlb = bytes / lba;
                job.records = dev.ns().lba_count / job.nlb;
                job.rounds = std::clamp<uint32_t>(static_cast<uint32_t>(std::min<uint64_t>(target, slow ? 1 << 18 : target) / (q * 32)),
                                                  16, 4096);
                job.seed = q * 7 + bytes;
                job.dest = p.dest;
                const int pollers = std::min<int>(max_pollers, q);
                const Run r = run_kernel(dev, q, pollers, job, {}, p.by, 0, warps, blocks, p.direct);
                bad += r.failed != 0;
                std::printf("| %s | %s%s | %u | %d | %.2f | %.2f | %.0f %% | %llu |\n", bytes == 65536 ? "64 KiB" : bytes == 4096 ? "4 KiB" : "512 B",
                            p.name, p.by == gpu::MoveBy::resident && p.dest == 2 ? (" (" + std::to_string(blocks) + " x " + std::to_string(warps) + " warps a poller)").c_str() : "", q, pollers, r.rate() / 1e6, r.rate() * bytes / 1e9, 100 * r.rate() * bytes / 1e9 / ceiling,
                            static_cast<unsigned long long>(r.failed));
                std::fflush(stdout);
            }
        }
        for (bool batch : {false, true}) {
            if (resident_only) break;
            for (int t : {4, 16}) {
                const uint64_t n = std::min<uint64_t>(target / t, batch ? target : 200000 / t);
                memcpy_rate(pinned, mib << 20, vram, mib << 20, bytes, t, std::min<uint64_t>(n, 2000), batch);  // warm
                const double rate = memcpy_rate(pinned, mib << 20, vram, mib << 20, bytes, t, n, batch);
                std::printf("| %s | host threads: %s of the same random blocks, pinned -> GPU memory | - | %d | %.2f | %.2f | %.0f %% | - |\n",
                            bytes == 65536 ? "64 KiB" : bytes == 4096 ? "4 KiB" : "512 B",
                            batch ? "cudaMemcpyBatchAsync (1024 a call)" : "cudaMemcpyAsync", t, rate / 1e6, rate * bytes / 1e9,
                            100 * rate * bytes / 1e9 / ceiling);
                std::fflush(stdout);
            }
        }
    }
    cudaFree(vram);
    cudaFreeHost(pinned);
    return bad;
}

void host_table(Device &dev, int max_threads)
{
    std::printf("\n| host threads calling the transport (no GPU) | 512 B Reads/s | 4 KiB Reads/s |\n|---|---|---|\n");
    for (int t : {1, 2, 4, 8, 16}) {
        if (t > max_threads) break;
        host_rate(dev, t, 20000, 1);
        std::printf("| %d | %.2f M | %.2f M |\n", t, host_rate(dev, t, 200000, 1) / 1e6, host_rate(dev, t, 100000, 8) / 1e6);
        std::fflush(stdout);
    }
}

}  // namespace

int main(int argc, char **argv)
{
    std::setvbuf(stdout, nullptr, _IOLBF, 0);  // each line out at once (a log piped to tee)
    const std::string mode = argc > 1 ? argv[1] : "check";
    std::string path;
    if (mode == "host") {
        auto dev = pattern_device(256, "", &path);
        host_table(*dev, static_cast<int>(std::thread::hardware_concurrency()));
        auto modelled = Device::open("emu:" + path + "?model=ll-nand-gen5");
        unlink(path.c_str());
        for (int t : {1, 2}) {
            const Statistics before = modelled->stats();
            const double rate = host_rate(*modelled, t, 20000, 1);
            const Statistics after = modelled->stats();
            std::printf("ll-nand-gen5, %d host threads: %.2f M 512 B Reads/s, %llu overruns, %.2f us delay per command\n", t,
                        rate / 1e6, static_cast<unsigned long long>(after.model_overruns - before.model_overruns),
                        (after.model_delay_ns - before.model_delay_ns) / 1e3 / (t * 20000));
        }
        return 0;
    }
    if (!gpu::available()) {
        std::printf("gpu_io: no CUDA device; skipped\n");
        return 0;
    }
    cudaSetDeviceFlags(cudaDeviceScheduleBlockingSync);  // the launching thread sleeps: its core polls
    cudaDeviceProp prop{};
    cudaGetDeviceProperties(&prop, 0);
    check(load_io(), "loading the io kernel");
    int bad = 0;
    if (mode == "check") {
        auto dev = pattern_device(64, "&cu=2", &path);
        unlink(path.c_str());
        const uint32_t lba = dev->ns().lba_size;
        const bool vram_only = argc > 2 && std::string(argv[2]) == "vram";
        const bool resident_only = vram_only && argc > 3 && std::string(argv[3]) == "resident";
        for (auto [warps, blocks] : {std::pair<unsigned, unsigned>{16, 1}, {8, 2}, {1, 3}}) {
            const uint64_t wrong = lane_check(warps, blocks);
            std::printf("gpu_io check: a resident copy kernel's lane driven directly (%u x %u warps): 300 copies of 512 B to 64 KiB, "
                        "%llu wrong bytes or unfinished copies\n",
                        blocks, warps, static_cast<unsigned long long>(wrong));
            bad += wrong != 0;
        }
        if (argc > 2 && std::string(argv[2]) == "lane") {
            std::printf("gpu_io check: %s\n", bad ? "FAILED" : "ok");
            return bad ? 1 : 0;
        }
        for (uint32_t bytes : {512u, 4096u}) {
            if (vram_only) break;
            for (uint32_t q : {1u, 3u, 8u}) {
                IoJob job;
                job.nlb = bytes / lba;
                job.records = dev->ns().lba_count / job.nlb;
                job.rounds = 5;  // 160 commands per queue: several wraps of a 64-entry queue
                job.verify = 1;
                const Run r = run_kernel(*dev, q, 2, job);
                std::printf("gpu_io check: %u B Reads, %u queue(s): %llu commands, %llu failed, %llu wrong words\n", bytes,
                            q, static_cast<unsigned long long>(r.commands), static_cast<unsigned long long>(r.failed),
                            static_cast<unsigned long long>(r.wrong));
                bad += r.failed || r.wrong || r.commands != uint64_t(q) * 32 * job.rounds;
            }
        }
        // Reads into GPU memory: copied there by the warp, or moved there by the drive side
        // (each way), checked there; an SLM Read (how an Execute's output comes back) the same
        for (uint32_t bytes : {512u, 4096u, 65536u}) {
            for (int way = 0; way < 6; way++) {  // 1: from the namespace's pages; 5: from pinned staging
                if (resident_only && way != 1 && way != 5) continue;
                for (uint32_t q : {1u, 8u}) {
                    IoJob job;
                    job.nlb = bytes / lba;
                    job.records = dev->ns().lba_count / job.nlb;
                    job.rounds = 5;
                    job.verify = 1;
                    job.dest = way == 0 ? 1 : 2;
                    const gpu::MoveBy by = std::array<gpu::MoveBy, 6>{gpu::MoveBy::resident, gpu::MoveBy::resident, gpu::MoveBy::kernel,
                                                                      gpu::MoveBy::batch, gpu::MoveBy::memcpy, gpu::MoveBy::resident}[way];
                    const Run r = run_kernel(*dev, q, 2, job, {}, by, 0, 16, 1, way != 5);
                    std::printf("gpu_io check: %u B Reads into GPU memory (%s), %u queue(s): %llu commands, %llu failed, "
                                "%llu wrong words\n",
                                bytes,
                                way == 0   ? "the warp copies from the arena"
                                : way == 1 ? "resident copy kernel, from the namespace's registered pages"
                                : way == 5 ? "resident copy kernel, from pinned staging"
                                           : gpu::move_by_name(by),
                                q,
                                static_cast<unsigned long long>(r.commands), static_cast<unsigned long long>(r.failed),
                                static_cast<unsigned long long>(r.wrong));
                    bad += r.failed || r.wrong || r.commands != uint64_t(q) * 32 * job.rounds;
                }
            }
        }
        {
            const uint64_t slm = 16 << 20;
            std::vector<uint64_t> words(slm / 8);
            for (uint64_t k = 0; k < words.size(); k++) words[k] = pattern_word(8 * k);
            dev->slm_write(0, words.data(), slm);
            IoJob job;
            job.kind = 2;
            job.nlb = 4096 / lba;
            job.records = slm / 4096;
            job.rounds = 5;
            job.verify = 1;
            job.dest = 2;
            const Run r = run_kernel(*dev, 4, 2, job);
            std::printf("gpu_io check: 4 KiB SLM Reads into GPU memory (resident copy kernel), 4 queues: %llu commands, %llu failed, "
                        "%llu wrong words\n",
                        static_cast<unsigned long long>(r.commands), static_cast<unsigned long long>(r.failed),
                        static_cast<unsigned long long>(r.wrong));
            bad += r.failed || r.wrong || r.commands != 4ull * 32 * job.rounds;
        }
        {  // destinations outside the window: every command completes with Data Transfer Error
            IoJob job;
            job.nlb = 4096 / lba;
            job.records = dev->ns().lba_count / job.nlb;
            job.rounds = 3;
            job.dest = 2;
            job.expect_status = 0x4004;
            const Run r = run_kernel(*dev, 2, 2, job, {}, gpu::MoveBy::resident, 2ull * 64 * 4096 - 2048);
            std::printf("gpu_io check: 4 KiB Reads naming GPU memory outside the window, 2 queues: %llu commands, "
                        "%llu without Data Transfer Error\n",
                        static_cast<unsigned long long>(r.commands), static_cast<unsigned long long>(r.failed));
            bad += r.failed || r.commands != 2ull * 32 * job.rounds;
        }
        for (uint32_t q : {1u, 4u}) {
            if (vram_only) break;
            IoJob job;
            job.kind = 1;
            job.blocks = 64;
            job.desc_stride = 64;
            uint32_t *expect = nullptr;
            const auto descs = checksum_descriptors(*dev, job.blocks, 4096, 64, &job.desc_len, &expect);
            job.expect = expect;
            job.rounds = 5;
            const Run r = run_kernel(*dev, q, 2, job, descs);
            std::printf("gpu_io check: Execute (CRC-32C of a 4 KiB block), %u queue(s): %llu commands, %llu failed, "
                        "%llu wrong results\n",
                        q, static_cast<unsigned long long>(r.commands), static_cast<unsigned long long>(r.failed),
                        static_cast<unsigned long long>(r.wrong));
            bad += r.failed || r.wrong || r.commands != uint64_t(q) * 32 * job.rounds;
            cudaFree(expect);
        }
        std::printf("gpu_io check: %s\n", bad ? "FAILED" : "ok");
        return bad ? 1 : 0;
    }
    const int max_pollers = argc > 2 ? std::atoi(argv[2]) : 16;
    auto dev = pattern_device(1024, "&cu=4", &path);
    std::printf("GPU: %s; host: %u CPUs; in-process device, 1 GiB namespace (page cache, mapped), queue depth 64,"
                " 32 commands per warp batch\n",
                prop.name, std::thread::hardware_concurrency());
    const uint32_t lba = dev->ns().lba_size;
    if (mode == "vram") {
        const unsigned warps = argc > 3 ? static_cast<unsigned>(std::atoi(argv[3])) : 16;
        const unsigned blocks = argc > 4 ? static_cast<unsigned>(std::atoi(argv[4])) : 1;
        bad += vram_table(*dev, max_pollers, warps, blocks, argc > 5 && std::string(argv[5]) == "resident");
        unlink(path.c_str());
        return bad ? 1 : 0;
    }
    const bool model_only = mode == "model";
    if (!model_only) std::printf("\n| command | queues | pollers | commands | M commands/s | GB/s | failed / wrong |\n|---|---|---|---|---|---|---|\n");
    for (uint32_t bytes : {512u, 4096u}) {
        if (model_only) break;
        for (uint32_t q : {1u, 4u, 16u, 64u, 128u, 256u}) {
            for (int p : {8, 12, 16}) {
                const int pollers = std::min<int>(p, q);
                if (p > max_pollers || (p != 8 && pollers < p)) continue;  // fewer queues than 8: one row
                IoJob job;
                job.nlb = bytes / lba;
                job.records = dev->ns().lba_count / job.nlb;
                job.rounds = std::clamp<uint32_t>((1u << 21) / (q * 32), 64, 4096);  // up to 2 M commands
                job.seed = q * 7 + pollers;
                const Run r = run_kernel(*dev, q, pollers, job);
                bad += r.failed != 0;
                std::printf("| Read %u B | %u | %d | %llu | %.2f | %.2f | %llu / - |\n", bytes, q, pollers,
                            static_cast<unsigned long long>(r.commands), r.rate() / 1e6, r.rate() * bytes / 1e9,
                            static_cast<unsigned long long>(r.failed));
                std::fflush(stdout);
            }
        }
    }
    if (!model_only) {  // Execute: CRC-32C of one 4 KiB block of SLM, its result checked on the GPU
        uint32_t *expect = nullptr;
        IoJob job;
        job.kind = 1;
        job.blocks = 1024;
        job.desc_stride = 64;
        const auto descs = checksum_descriptors(*dev, job.blocks, 4096, 64, &job.desc_len, &expect);
        job.expect = expect;
        for (uint32_t q : {1u, 16u, 64u, 256u}) {
            const int pollers = std::min<int>(q, max_pollers - 4);  // 4 compute units run the programs
            job.rounds = std::clamp<uint32_t>((1u << 18) / (q * 32), 16, 1024);
            const Run r = run_kernel(*dev, q, pollers, job, descs);
            bad += r.failed != 0 || r.wrong != 0;
            std::printf("| Execute CRC-32C of 4 KiB (cu=4) | %u | %d | %llu | %.2f | - | %llu / %llu |\n", q, pollers,
                        static_cast<unsigned long long>(r.commands), r.rate() / 1e6,
                        static_cast<unsigned long long>(r.failed), static_cast<unsigned long long>(r.wrong));
            std::fflush(stdout);
        }
        cudaFree(expect);
    }
    // Under the low-latency NAND preset: the rate the host sustains with no overrun. The model
    // reads the host clock three times per command: its cost here says how much it adds.
    {
        const auto t0 = clk::now();
        uint64_t sink = 0;
        for (int i = 0; i < 1000000; i++) sink += clk::now().time_since_epoch().count() & 1;
        std::printf("\nhost clock: %.0f ns per steady_clock::now() (%llu)", since(t0) * 1e3, static_cast<unsigned long long>(sink & 1));
        if (FILE *f = std::fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "r")) {
            char cs[64] = {};
            if (std::fgets(cs, sizeof cs, f)) std::printf(", clocksource %s", cs);
            std::fclose(f);
        }
        std::printf("\n");
    }
    {
        // How often a thread that only reads the clock is held up for longer than the preset's
        // read (~4.5 us, when a poller's command would overrun), and for how long: the host's
        // own interruptions (timer ticks, other threads, the hypervisor), which no poller avoids.
        for (int threads : {1, 2}) {
            std::vector<std::array<uint64_t, 4>> gaps(threads);
            std::vector<std::thread> ts;
            const double secs = 2.0;
            for (int t = 0; t < threads; t++) {
                ts.emplace_back([&, t] {
                    const auto end = clk::now() + std::chrono::duration<double>(secs);
                    auto last = clk::now();
                    for (auto now = last; now < end; last = now) {
                        now = clk::now();
                        const double us = std::chrono::duration<double, std::micro>(now - last).count();
                        for (int k = 0; k < 4; k++) gaps[t][k] += us > std::array<double, 4>{1, 4.5, 20, 100}[k];
                    }
                });
            }
            for (auto &t : ts) t.join();
            for (int t = 0; t < threads; t++) {
                std::printf("host stalls seen by a thread reading the clock (%d at once): per second > 1 us %.0f, > 4.5 us %.0f, "
                            "> 20 us %.0f, > 100 us %.0f\n",
                            threads, gaps[t][0] / secs, gaps[t][1] / secs, gaps[t][2] / secs, gaps[t][3] / secs);
            }
        }
    }
    for (const char *preset : {"ll-nand-gen5"}) {
        auto modelled = Device::open("emu:" + path + "?model=" + preset);
        std::printf("\n| timing model | queues | pollers | M 512 B Reads/s | model_overruns | overruns per s |"
                    " model delay per command | posted after finish, mean / max |\n|---|---|---|---|---|---|---|---|\n");
        {  // its mapping's pages touched once (first-touch faults are not the drive's time)
            IoJob warm;
            warm.nlb = 512 / lba;
            warm.records = modelled->ns().lba_count / warm.nlb;
            warm.rounds = 256;
            run_kernel(*modelled, 256, max_pollers, warm);
        }
        for (auto [q, pollers] : {std::pair<uint32_t, int>{1, 1}, {4, 1}, {8, 1}, {8, 2}, {16, 1}, {16, 2}, {16, 4},
                                  {32, 2}, {32, 4}, {64, 2}, {64, 4}, {64, 8}, {128, 4}, {128, 8}, {256, 4}, {256, 8},
                                  {256, max_pollers}}) {
            const Statistics before = modelled->stats();
            IoJob job;
            job.nlb = 512 / lba;
            job.records = modelled->ns().lba_count / job.nlb;
            job.rounds = std::max<uint32_t>(32, (1u << 20) / (q * 32));
            const Run r = run_kernel(*modelled, q, pollers, job);
            const Statistics after = modelled->stats();
            bad += r.failed != 0;
            std::printf("| %s | %u | %d | %.2f | %llu | %.0f | %.2f us | %.2f / %.1f us |\n", preset, q, pollers,
                        r.rate() / 1e6, static_cast<unsigned long long>(after.model_overruns - before.model_overruns),
                        (after.model_overruns - before.model_overruns) / r.seconds,
                        r.commands ? (after.model_delay_ns - before.model_delay_ns) / 1e3 / r.commands : 0.0,
                        r.timed.mean_late_ns / 1e3, r.timed.max_late_ns / 1e3);
            std::fflush(stdout);
        }
    }
    unlink(path.c_str());
    if (!model_only) bad += vram_table(*dev, max_pollers, 16, 1, false);
    if (!model_only) host_table(*dev, 16);
    return bad ? 1 : 0;
}
