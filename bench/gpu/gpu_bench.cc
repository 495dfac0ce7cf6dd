// SPDX-License-Identifier: MIT
// gpu_bench: bandwidth into GPU memory from the in-process device, 4 KiB .. 1 GiB,
// side by side in one run:
//   naive     SLM Read into pageable memory, then cudaMemcpy (what `.cuda()` does)
//   ceiling   cudaMemcpy from a pinned buffer already holding the data
//   pipeline  Landing::slm_to_gpu, pinned-buffer pipeline (the path any drive takes)
//   direct    Landing::slm_to_gpu from registered SLM (in-process device only)
//   obj 1st   the first Landing::object_to_gpu through the pipeline straight after the object's
//             put (namespace reads; the CRC-32C of each landed chunk on the GPU)
//   object    the same, best of that and the next reps: what a drive without peer-to-peer gives
//   p2p       Landing::object_to_gpu from the registered namespace, DMAs of 8 MiB, the CRC-32C
//             of each landed piece on the GPU behind it (simulated peer-to-peer drive)
//   dma       Landing::lbas_to_gpu of the same LBAs, the same one DMA without the store (no
//             catalog look-ups, no CRC): what the p2p column costs beyond the copy
// Usage: gpu_bench [MAX_MIB] [CHUNK_MIB] [BUFFERS] [READERS]   (0: the library's defaults)
//        gpu_bench sweep                   (chunk size x readers, objects of 64 MiB .. 1 GiB)
//        gpu_bench why [NS_MIB]            (each pipeline landing timed alone: after the put or
//                                           not, the namespace registered or not; the fill alone)
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gpu.hpp"

using namespace csd;
using clk = std::chrono::steady_clock;

namespace {

double best_of(int reps, const std::function<void()> &f)
{
    double best = 1e30;
    for (int i = 0; i < reps; i++) {
        const auto t0 = clk::now();
        f();
        best = std::min(best, std::chrono::duration<double>(clk::now() - t0).count());
    }
    return best;
}

}  // namespace

// What both modes measure from: a device whose SLM holds `max` bytes of a pattern (also in
// `data`), a formatted store, a GPU buffer of max bytes and a pinned copy of the pattern
// (the ceiling's source).
struct Setup {
    std::unique_ptr<Device> dev;
    std::vector<uint8_t> data;
    void *d = nullptr, *pinned = nullptr;
    cudaStream_t s = nullptr;
    std::string gpu;
    // The pinned ceiling: seconds of the best of 5 copies of n bytes from the pinned buffer.
    double ceiling(uint64_t n) const
    {
        return best_of(5, [&] {
            cudaMemcpyAsync(d, pinned, n, cudaMemcpyHostToDevice, s);
            cudaStreamSynchronize(s);
        });
    }
    ~Setup()
    {
        cudaFree(d);
        cudaFreeHost(pinned);
    }
};

std::unique_ptr<Setup> setup(uint64_t max, uint64_t ns_mib)
{
    auto b = std::make_unique<Setup>();
    char name[] = "/tmp/csd-gpubench-XXXXXX";
    close(mkstemp(name));
    unlink(name);
    b->dev = Device::open(std::string("emu:") + name + "?size=" + std::to_string(ns_mib) + "M&slm=" +
                          std::to_string((max >> 20) + 16) + "M");
    unlink(name);  // the device holds it open
    b->data.resize(max);
    for (uint64_t i = 0; i < max; i += 8) {
        const uint64_t v = i * 0x9E3779B97F4A7C15ull;
        std::memcpy(&b->data[i], &v, std::min<uint64_t>(8, max - i));
    }
    b->dev->slm_write(0, b->data.data(), max);
    ObjectStore::format(*b->dev);
    cudaMalloc(&b->d, max);
    cudaHostAlloc(&b->pinned, max, cudaHostAllocDefault);
    std::memcpy(b->pinned, b->data.data(), max);
    cudaStreamCreate(&b->s);
    cudaDeviceProp prop{};
    cudaGetDeviceProperties(&prop, 0);
    b->gpu = prop.name;
    return b;
}

// The sweep: the object pipeline (and the SLM pipeline) at 64 MiB, 256 MiB and 1 GiB for each
// chunk size and reader count, as a share of the pinned ceiling; the defaults are picked from it.
int sweep()
{
    const uint64_t sizes[] = {64ull << 20, 256ull << 20, 1024ull << 20};
    const uint64_t max = sizes[2];
    const auto b = setup(max, 2 * (max >> 20) + 256);
    Device *dev = b->dev.get();
    ObjectStore store(*dev);
    for (uint64_t n : sizes) store.put("o" + std::to_string(n >> 20), b->data.data(), n);
    void *d = b->d;
    cudaStream_t s = b->s;
    double ceil[3];
    for (int i = 0; i < 3; i++) ceil[i] = b->ceiling(sizes[i]);
    std::printf("GPU: %s; pinned ceiling %.1f / %.1f / %.1f GB/s at 64 MiB / 256 MiB / 1 GiB; 4 pinned buffers\n",
                b->gpu.c_str(), sizes[0] / ceil[0] / 1e9, sizes[1] / ceil[1] / 1e9, sizes[2] / ceil[2] / 1e9);
    std::printf("object pipeline (store.get into GPU memory, CRC-32C checked) and SLM pipeline, %% of the ceiling\n");
    std::printf("| chunk | readers | object 64 MiB | object 256 MiB | object 1 GiB | SLM 64 MiB | SLM 256 MiB | SLM 1 GiB |\n"
                "|---|---|---|---|---|---|---|---|\n");
    for (uint64_t chunk : {8ull << 20, 16ull << 20, 32ull << 20}) {  // 4 MiB: the slowest in every earlier sweep
        for (int readers : {4, 8, 12, 16}) {
            gpu::Landing land(*dev, chunk, 4, readers);
            double obj[3], slm[3];
            for (int i = 0; i < 3; i++) {
                const std::string o = "o" + std::to_string(sizes[i] >> 20);
                obj[i] = best_of(3, [&] { land.object_to_gpu(store, o, d, max, s, {}, false).get(); });
                slm[i] = best_of(3, [&] { land.slm_to_gpu(0, sizes[i], d, s, false).get(); });
            }
            std::printf("| %llu MiB | %d | %.0f %% | %.0f %% | %.0f %% | %.0f %% | %.0f %% | %.0f %% |\n",
                        static_cast<unsigned long long>(chunk >> 20), readers, 100 * ceil[0] / obj[0],
                        100 * ceil[1] / obj[1], 100 * ceil[2] / obj[2], 100 * ceil[0] / slm[0], 100 * ceil[1] / slm[1],
                        100 * ceil[2] / slm[2]);
            std::fflush(stdout);
        }
    }
    return 0;
}

// Why the default run's object column and the sweep's differ: each landing timed on its
// own (not best of), the object landed straight after its put and long after, before and
// after the namespace is registered with CUDA (the p2p column registers it), and the fill
// alone (the drive side of the pipeline, no GPU) for comparison.
int why(uint64_t ns_mib)
{
    setvbuf(stdout, nullptr, _IONBF, 0);
    const uint64_t sizes[] = {256ull << 20, 1024ull << 20};
    const uint64_t max = sizes[1];
    const auto b = setup(max, ns_mib);
    std::printf("namespace %llu MiB\n", static_cast<unsigned long long>(ns_mib));
    Device *dev = b->dev.get();
    ObjectStore store(*dev);
    void *d = b->d, *pinned = b->pinned;
    cudaStream_t s = b->s;
    double ceil[2];
    for (int i = 0; i < 2; i++) ceil[i] = b->ceiling(sizes[i]);
    auto times = [&](const char *what, gpu::Landing &land, const std::string &o, int i, bool slm = false) {
        std::printf("%-58s %4llu MiB:", what, static_cast<unsigned long long>(sizes[i] >> 20));
        for (int r = 0; r < 6; r++) {
            const double t = best_of(1, [&] {
                if (slm) land.slm_to_gpu(0, sizes[i], d, s, false).get();
                else land.object_to_gpu(store, o, d, max, s, {}, false).get();
            });
            std::printf(" %3.0f%%", 100 * ceil[i] / t);
        }
        std::printf("\n");
        std::fflush(stdout);
    };
    std::printf("each landing's share of the pinned ceiling (%.1f / %.1f GB/s), six in a row\n", sizes[0] / ceil[0] / 1e9,
                sizes[1] / ceil[1] / 1e9);
    for (int i = 0; i < 2; i++) store.put("a" + std::to_string(i), b->data.data(), sizes[i]);
    {
        gpu::Landing land(*dev);
        for (int i = 0; i < 2; i++) times("A: a fresh Landing, objects put earlier", land, "a" + std::to_string(i), i);
        for (int i = 0; i < 2; i++) times("B: the same Landing again", land, "a" + std::to_string(i), i);
        for (int i = 0; i < 2; i++) times("S: SLM pipeline, same Landing", land, "", i, true);
        for (int i = 0; i < 2; i++) {
            store.put("b" + std::to_string(i), b->data.data(), sizes[i]);
            times("C: straight after its put", land, "b" + std::to_string(i), i);
        }
        for (int i = 0; i < 2; i++) times("D: the first objects again", land, "a" + std::to_string(i), i);
        land.lbas_to_gpu(0, 1, d, s, true).get();  // registers the namespace, as the p2p column does
        std::printf("(namespace registered: %s)\n", land.peer_to_peer_error().empty() ? "yes" : land.peer_to_peer_error().c_str());
        for (int i = 0; i < 2; i++) times("E: namespace registered, objects put earlier", land, "a" + std::to_string(i), i);
        for (int i = 0; i < 2; i++) {
            store.put("c" + std::to_string(i), b->data.data(), sizes[i]);
            times("F: namespace registered, straight after its put", land, "c" + std::to_string(i), i);
        }
    }
    {
        gpu::Landing land(*dev);
        for (int i = 0; i < 2; i++) times("G: another fresh Landing (namespace not registered)", land, "a" + std::to_string(i), i);
        for (int i = 0; i < 2; i++) times("H: another fresh Landing, the objects put last", land, "c" + std::to_string(i), i);
    }
    // the drive side alone: 16 threads reading 1 MiB slices of the 1 GiB object into pinned memory
    {
        const ObjectInfo o = store.stat("a1");
        const uint64_t first = store.first_lba(o), lba = dev->ns().lba_size;
        for (int threads : {8, 16}) {
            for (int r = 0; r < 3; r++) {
                const auto t0 = clk::now();
                std::vector<std::thread> ts;
                for (int t = 0; t < threads; t++) {
                    ts.emplace_back([&, t] {
                        for (uint64_t pos = uint64_t(t) << 20; pos < sizes[1]; pos += uint64_t(threads) << 20) {
                            dev->read_lbas(first + pos / lba, (1 << 20) / lba,
                                           static_cast<uint8_t *>(pinned) + (pos % (64 << 20)));
                        }
                    });
                }
                for (auto &t : ts) t.join();
                const double sec = std::chrono::duration<double>(clk::now() - t0).count();
                std::printf("fill alone, %d threads, 1 GiB object: %.1f GB/s\n", threads, sizes[1] / sec / 1e9);
            }
        }
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (!gpu::available()) {
        std::printf("gpu_bench: no CUDA device; nothing to measure\n");
        return 0;
    }
    if (argc > 1 && std::string(argv[1]) == "sweep") return sweep();
    if (argc > 1 && std::string(argv[1]) == "why") try {
        return why(argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 4352);
    } catch (const std::exception &e) {
        std::printf("\nwhy: %s\n", e.what());
        return 1;
    }
    const uint64_t max = (argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 1024) << 20;
    uint64_t chunk = (argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 0) << 20;
    int buffers = argc > 3 ? std::atoi(argv[3]) : 0;
    int readers = argc > 4 ? std::atoi(argv[4]) : 0;
    if (!chunk) chunk = gpu::Landing::kDefaultChunk;
    if (!buffers) buffers = gpu::Landing::kDefaultBuffers;
    if (!readers) readers = gpu::Landing::kDefaultReaders;
    const auto b = setup(max, (max >> 20) * 2 + 64);
    Device *dev = b->dev.get();
    const std::vector<uint8_t> &data = b->data;
    ObjectStore store(*dev);
    void *d = b->d, *pinned = b->pinned;
    cudaStream_t s = b->s;
    std::printf("GPU: %s; chunk %llu MiB, %d pinned buffers, %d readers\n", b->gpu.c_str(),
                static_cast<unsigned long long>(chunk >> 20), buffers, readers);
    gpu::Landing land(*dev, chunk, buffers, readers);
    std::printf("GB/s into GPU memory; obj/ceil and p2p/ceil: the object landings' share of the pinned ceiling\n"
                "(p2p: %s)\n", gpu::kPeerToPeer);
    std::printf("%10s %10s %10s %10s %10s %10s %10s %10s %10s %9s %9s %9s %9s %9s\n", "size", "naive", "ceiling", "pipeline",
                "direct", "obj 1st", "object", "p2p", "dma", "pipe/ceil", "1st/ceil", "obj/ceil", "p2p/ceil", "dma/ceil");
    std::vector<uint8_t> pageable(max);
    for (uint64_t n = 4096; n <= max; n *= 4) {
        const int reps = n <= (16 << 20) ? 20 : 3;
        const double naive = best_of(reps, [&] {
            dev->slm_read(0, pageable.data(), n);
            cudaMemcpy(d, pageable.data(), n, cudaMemcpyHostToDevice);
        });
        const double ceil = best_of(reps, [&] {
            cudaMemcpyAsync(d, pinned, n, cudaMemcpyHostToDevice, s);
            cudaStreamSynchronize(s);
        });
        const double pipe = best_of(reps, [&] { land.slm_to_gpu(0, n, d, s, false).get(); });
        const double direct = best_of(reps, [&] { land.slm_to_gpu(0, n, d, s, true).get(); });
        store.put("o", data.data(), n);
        // the first landing reads page-cache pages no one read since the put wrote them, which
        // costs the kernel more (perf.md, `gpu_bench why`): timed on its own, then best of reps
        const double first_t = best_of(1, [&] { land.object_to_gpu(store, "o", d, max, s, {}, false).get(); });
        const double object = std::min(first_t, best_of(reps, [&] { land.object_to_gpu(store, "o", d, max, s, {}, false).get(); }));
        std::string path;
        const double p2p = best_of(reps, [&] { path = land.object_to_gpu(store, "o", d, max, s, {}, true).get().path; });
        if (path != gpu::kPeerToPeer) {
            std::printf("(the p2p column ran as %s: %s)\n", path.c_str(), land.peer_to_peer_error().c_str());
        }
        const uint64_t first = store.first_lba(store.stat("o")), lba = dev->ns().lba_size;
        const double dma = best_of(reps, [&] { land.lbas_to_gpu(first, (n + lba - 1) / lba, d, s, true).get(); });
        auto gb = [&](double t) { return t > 0 ? n / t / 1e9 : 0.0; };
        std::printf("%9lluK %10.2f %10.2f %10.2f %10.2f %10.2f %10.2f %10.2f %10.2f %8.0f%% %8.0f%% %8.0f%% %8.0f%% %8.0f%%\n",
                    static_cast<unsigned long long>(n >> 10), gb(naive), gb(ceil), gb(pipe), gb(direct), gb(first_t),
                    gb(object), gb(p2p), gb(dma), 100 * ceil / pipe, 100 * ceil / first_t, 100 * ceil / object,
                    100 * ceil / p2p, 100 * ceil / dma);
    }
    // small-transfer latency
    const double lat_pipe = best_of(200, [&] { land.slm_to_gpu(0, 4096, d, s, false).get(); });
    const double lat_ceil = best_of(200, [&] {
        cudaMemcpyAsync(d, pinned, 4096, cudaMemcpyHostToDevice, s);
        cudaStreamSynchronize(s);
    });
    std::printf("4 KiB latency: pipeline %.1f us, pinned cudaMemcpy %.1f us\n", lat_pipe * 1e6, lat_ceil * 1e6);
    return 0;
}
