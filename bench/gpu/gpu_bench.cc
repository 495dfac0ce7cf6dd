// SPDX-License-Identifier: MIT
// gpu_bench: bandwidth into GPU memory from the in-process device, 4 KiB .. 1 GiB,
// side by side in one run:
//   naive     SLM Read into pageable memory, then cudaMemcpy (what `.cuda()` does)
//   ceiling   cudaMemcpy from a pinned buffer already holding the data
//   pipeline  Landing::slm_to_gpu, pinned-buffer pipeline (the path any drive takes)
//   direct    Landing::slm_to_gpu from registered SLM (in-process device only)
//   object    Landing::object_to_gpu through the pipeline (namespace reads, CRC-32C checked)
// Usage: gpu_bench [MAX_MIB] [CHUNK_MIB] [BUFFERS] [READERS]
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
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

int main(int argc, char **argv)
{
    if (!gpu::available()) {
        std::printf("gpu_bench: no CUDA device; nothing to measure\n");
        return 0;
    }
    const uint64_t max = (argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 1024) << 20;
    const uint64_t chunk = (argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 8) << 20;
    const int buffers = argc > 3 ? std::atoi(argv[3]) : 4;
    const int readers = argc > 4 ? std::atoi(argv[4]) : 8;
    char name[] = "/tmp/csd-gpubench-XXXXXX";
    close(mkstemp(name));
    unlink(name);
    const std::string path = name;
    auto dev = Device::open("emu:" + path + "?size=" + std::to_string((max >> 20) * 2 + 64) + "M&slm=" +
                            std::to_string((max >> 20) + 16) + "M");
    cudaDeviceProp prop{};
    cudaGetDeviceProperties(&prop, 0);
    std::printf("GPU: %s; chunk %llu MiB, %d pinned buffers, %d readers\n", prop.name,
                static_cast<unsigned long long>(chunk >> 20), buffers, readers);

    std::vector<uint8_t> data(max);
    for (uint64_t i = 0; i < max; i += 8) {
        const uint64_t v = i * 0x9E3779B97F4A7C15ull;
        std::memcpy(&data[i], &v, std::min<uint64_t>(8, max - i));
    }
    dev->slm_write(0, data.data(), max);
    ObjectStore::format(*dev);
    ObjectStore store(*dev);

    void *d = nullptr, *pinned = nullptr;
    cudaMalloc(&d, max);
    cudaHostAlloc(&pinned, max, cudaHostAllocDefault);
    std::memcpy(pinned, data.data(), max);
    cudaStream_t s;
    cudaStreamCreate(&s);
    gpu::Landing land(*dev, chunk, buffers, readers);
    std::printf("GB/s into GPU memory (ceil/pipe: the pipeline's share of the pinned ceiling)\n");
    std::printf("%10s %10s %10s %10s %10s %10s %9s %10s\n", "size", "naive", "ceiling", "pipeline", "direct",
                "object", "pipe/ceil", "pipe/naive");
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
        const double object = best_of(reps, [&] { land.object_to_gpu(store, "o", d, max, s).get(); });
        auto gb = [&](double t) { return t > 0 ? n / t / 1e9 : 0.0; };
        std::printf("%9lluK %10.2f %10.2f %10.2f %10.2f %10.2f %8.0f%% %9.1fx\n",
                    static_cast<unsigned long long>(n >> 10), gb(naive), gb(ceil), gb(pipe), gb(direct), gb(object),
                    100 * ceil / pipe, naive / pipe);
    }
    // small-transfer latency
    const double lat_pipe = best_of(200, [&] { land.slm_to_gpu(0, 4096, d, s, false).get(); });
    const double lat_ceil = best_of(200, [&] {
        cudaMemcpyAsync(d, pinned, 4096, cudaMemcpyHostToDevice, s);
        cudaStreamSynchronize(s);
    });
    std::printf("4 KiB latency: pipeline %.1f us, pinned cudaMemcpy %.1f us\n", lat_pipe * 1e6, lat_ceil * 1e6);
    cudaFree(d);
    cudaFreeHost(pinned);
    unlink(path.c_str());
    return 0;
}
