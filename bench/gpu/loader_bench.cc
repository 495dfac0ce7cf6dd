// SPDX-License-Identifier: MIT
// loader_bench: how fast the layer loader lands a model's layers in GPU memory, each way side by
// side in one run, on layers of Llama-2-7B's shape in fp16 (per layer q, k, v, o of 32 MiB, gate,
// up, down of 86 MiB, two norms of 8 KiB: 386 MiB) stored in the in-process device's object
// store, every layer streamed through a ring of 2 GPU buffers to a consumer that computes
// nothing, so that the rate is the landing's:
//   p2p            LayerLoader, the simulated peer-to-peer drive (DMAs from the registered namespace)
//   pipeline 1     LayerLoader, one lane of the pinned pipeline: the layer's tensors one stream
//                  of chunks (Landing::objects_to_gpu)
//   pipeline N     LayerLoader, N lanes side by side, each tensor a pipeline of its own
//   per tensor     no loader: every tensor of a layer posted to Landing::object_to_gpu, then
//                  waited for (each tensor a pipeline of its own, one after another)
// Rates are bytes landed / wall time over the passes after a warm-up pass, as a share of the
// pinned ceiling (one 1 GiB cudaMemcpy from pinned memory, best of 3), CRC-32C checks included.
// Usage: loader_bench [LAYERS (6)] [PASSES (3)]
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "layer_loader.hpp"

using namespace csd;
using clk = std::chrono::steady_clock;

namespace {

double seconds(const std::function<void()> &f)
{
    const auto t0 = clk::now();
    f();
    return std::chrono::duration<double>(clk::now() - t0).count();
}

void cuda(cudaError_t e, const char *what)
{
    if (e != cudaSuccess) {
        std::fprintf(stderr, "loader_bench: %s: %s\n", what, cudaGetErrorString(e));
        std::exit(1);
    }
}

}  // namespace

int main(int argc, char **argv)
{
    if (!gpu::available()) {
        std::printf("loader_bench: no CUDA device; nothing to measure\n");
        return 0;
    }
    const int nlayers = argc > 1 ? std::max(2, std::atoi(argv[1])) : 6;
    const int passes = argc > 2 ? std::max(1, std::atoi(argv[2])) : 3;
    const uint64_t h = 4096, inter = 11008;
    const std::vector<std::pair<std::string, uint64_t>> shapes = {
        {"q", h * h * 2},     {"k", h * h * 2},     {"v", h * h * 2},  {"o", h * h * 2},   {"gate", h * inter * 2},
        {"up", h * inter * 2}, {"down", h * inter * 2}, {"norm1", h * 2}, {"norm2", h * 2}};
    uint64_t layer_bytes = 0;
    for (const auto &s : shapes) layer_bytes += s.second;
    char name[] = "/tmp/csd-loaderbench-XXXXXX";
    close(mkstemp(name));
    unlink(name);
    const uint64_t ns_mib = (nlayers * layer_bytes >> 20) + 512;
    auto dev = Device::open(std::string("emu:") + name + "?size=" + std::to_string(ns_mib) + "M&slm=64M");
    unlink(name);
    ObjectStore::format(*dev);
    ObjectStore store(*dev);
    std::vector<uint8_t> data(inter * h * 2);
    std::vector<std::vector<std::string>> names(static_cast<size_t>(nlayers));
    for (int l = 0; l < nlayers; l++) {
        for (const auto &[t, bytes] : shapes) {
            for (uint64_t i = 0; i + 8 <= bytes; i += 8) {
                const uint64_t v = (i + static_cast<uint64_t>(l) * 0x10001 + bytes) * 0x9E3779B97F4A7C15ull;
                std::memcpy(&data[i], &v, 8);
            }
            names[l].push_back("layers." + std::to_string(l) + "." + t);
            store.put(names[l].back(), data.data(), bytes);
        }
    }
    std::vector<gpu::LayerPlan> plans;
    for (const auto &n : names) plans.push_back(gpu::plan_layer(store, n));
    const uint64_t ring_bytes = plans[0].bytes;
    std::vector<void *> bufs(2);
    for (void *&b : bufs) cuda(cudaMalloc(&b, ring_bytes), "cudaMalloc(ring)");
    cudaStream_t s;
    cuda(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
    // the pinned ceiling
    void *pinned = nullptr, *d = nullptr;
    cuda(cudaHostAlloc(&pinned, 1ull << 30, cudaHostAllocDefault), "cudaHostAlloc");
    cuda(cudaMalloc(&d, 1ull << 30), "cudaMalloc");
    std::memset(pinned, 1, 1ull << 30);
    double ceil_t = 1e30;
    for (int i = 0; i < 3; i++) {
        ceil_t = std::min(ceil_t, seconds([&] {
                              cudaMemcpyAsync(d, pinned, 1ull << 30, cudaMemcpyHostToDevice, s);
                              cudaStreamSynchronize(s);
                          }));
    }
    cudaFree(d);
    cudaFreeHost(pinned);
    const double ceiling = (1ull << 30) / ceil_t / 1e9;
    cudaDeviceProp prop{};
    cudaGetDeviceProperties(&prop, 0);
    std::printf("GPU: %s; %d layers of %.1f MiB (Llama-2-7B's shape, fp16), all streamed through a ring of 2, %d "
                "passes after a warm-up; pinned ceiling %.1f GB/s\n\n",
                prop.name, nlayers, layer_bytes / 1048576.0, passes, ceiling);
    std::printf("| way | lanes x fill threads | GB/s | %% of pinned ceiling | path |\n|---|---|---|---|---|\n");
    const uint64_t streamed = static_cast<uint64_t>(passes) * nlayers * layer_bytes;
    auto row = [&](const std::string &way, const std::string &shape, double t, const std::string &path) {
        const double gbps = streamed / t / 1e9;
        std::printf("| %s | %s | %.1f | %.0f %% | %s |\n", way.c_str(), shape.c_str(), gbps, 100 * gbps / ceiling,
                    path.c_str());
        std::fflush(stdout);
    };
    auto loader = [&](const std::string &way, int lanes, int readers, bool direct) {
        std::vector<std::unique_ptr<gpu::Landing>> owned;
        std::vector<gpu::Landing *> ls;
        for (int i = 0; i < lanes; i++) {
            owned.push_back(std::make_unique<gpu::Landing>(*dev, gpu::Landing::kDefaultChunk,
                                                           gpu::Landing::kDefaultBuffers, readers));
            ls.push_back(owned.back().get());
        }
        gpu::LayerLoader ll(ls, store, plans, {}, bufs, {ring_bytes, ring_bytes}, direct);
        auto pass = [&] {
            for (int l = 0; l < nlayers; l++) {
                ll.acquire(l, s);
                ll.release(l, s);
            }
        };
        pass();  // warm-up: the first landing of a fresh Landing is slower (perf.md)
        const double t = seconds([&] {
            for (int p = 0; p < passes; p++) pass();
        });
        const std::vector<gpu::LayerTiming> tm = ll.timings();
        row(way, std::to_string(lanes) + " x " + std::to_string(readers), t, tm.empty() ? "" : tm.back().path);
    };
    try {
        loader("layer loader, simulated peer-to-peer", 1, gpu::Landing::kDefaultReaders, true);
        loader("layer loader, pinned pipeline, one stream of chunks a layer", 1, gpu::Landing::kDefaultReaders, false);
        loader("layer loader, pinned pipeline, one stream of chunks a layer", 1, 16, false);
        loader("layer loader, pinned pipeline, a pipeline a tensor, lanes side by side", 2,
               gpu::Landing::kDefaultReaders, false);
        loader("layer loader, pinned pipeline, a pipeline a tensor, lanes side by side", 2, 8, false);
        loader("layer loader, pinned pipeline, a pipeline a tensor, lanes side by side", 3, 6, false);
        {
            gpu::Landing land(*dev);
            auto pass = [&] {
                for (int l = 0; l < nlayers; l++) {
                    std::vector<std::future<gpu::CopyReport>> f;
                    for (const gpu::LayerTensor &t : plans[l].tensors) {
                        f.push_back(land.object_to_gpu(store, t.name, static_cast<uint8_t *>(bufs[l % 2]) + t.offset,
                                                       t.bytes, s, {}, false));
                    }
                    for (auto &x : f) x.get();
                }
            };
            pass();
            const double t = seconds([&] {
                for (int p = 0; p < passes; p++) pass();
            });
            row("no loader: each tensor's object_to_gpu posted, then all waited for", "1 x 12", t, "pinned-pipeline");
        }
    } catch (const std::exception &e) {
        std::printf("\nloader_bench: %s\n", e.what());
        return 1;
    }
    return 0;
}
