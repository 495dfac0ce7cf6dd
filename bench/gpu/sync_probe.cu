// SPDX-License-Identifier: MIT
// sync_probe.cu - which CUDA runtime calls wait for a kernel that never ends by itself (a
// resident kernel, such as GpuQueues' copy kernel) and which return while it runs: each call
// is made on a thread of its own beside a spinning kernel on a non-blocking stream, and counts
// as waiting if it has not returned within a second (the kernel is then let go). What a
// Landing or a LayerLoader may call while the resident kernel runs follows from this table
// (docs/gpu.md). Build: nvcc -O2 -std=c++17 sync_probe.cu -o sync_probe
#include <cuda_runtime.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <thread>

namespace {

__global__ void spin(volatile int *release)
{
    while (*release == 0) {
    }
}

void ok(cudaError_t e, const char *what)
{
    if (e != cudaSuccess) {
        std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(e));
        std::exit(1);
    }
}

// Runs call beside a spinning kernel; prints whether it returned while the kernel ran.
void probe(const char *name, const std::function<void()> &prepare, const std::function<cudaError_t()> &call)
{
    int *release = nullptr;
    ok(cudaHostAlloc(reinterpret_cast<void **>(&release), sizeof(int), cudaHostAllocMapped), "cudaHostAlloc(flag)");
    *release = 0;
    cudaStream_t s;
    ok(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
    if (prepare) prepare();
    ok(cudaDeviceSynchronize(), "cudaDeviceSynchronize(prepare)");
    spin<<<1, 1, 0, s>>>(release);
    ok(cudaGetLastError(), "launch");
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    std::atomic<bool> done{false};
    cudaError_t result = cudaSuccess;
    std::thread t([&] {
        result = call();
        done = true;
    });
    const auto t0 = std::chrono::steady_clock::now();
    while (!done && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(1)) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    const bool returned = done;
    *release = 1;
    t.join();
    ok(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    std::printf("%-58s %s (%s)\n", name, returned ? "returns while the kernel runs" : "WAITS for the running kernel",
                cudaGetErrorString(result));
    cudaStreamDestroy(s);
    cudaFreeHost(release);
}

}  // namespace

int main()
{
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
        std::printf("no CUDA device\n");
        return 0;
    }
    void *d = nullptr, *h = nullptr, *reg = nullptr;
    cudaStream_t other = nullptr;
    cudaEvent_t ev = nullptr;
    ok(cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking), "cudaStreamCreate(other)");
    probe("cudaMalloc", nullptr, [&] { return cudaMalloc(&d, 1 << 20); });
    probe("cudaFree", nullptr, [&] { return cudaFree(d); });
    probe("cudaMallocAsync (other non-blocking stream)", nullptr, [&] { return cudaMallocAsync(&d, 1 << 20, other); });
    probe("cudaFreeAsync (other non-blocking stream)", nullptr, [&] { return cudaFreeAsync(d, other); });
    probe("cudaHostAlloc", nullptr, [&] { return cudaHostAlloc(&h, 1 << 20, cudaHostAllocDefault); });
    probe("cudaFreeHost", nullptr, [&] { return cudaFreeHost(h); });
    reg = std::aligned_alloc(4096, 1 << 20);
    probe("cudaHostRegister", nullptr, [&] { return cudaHostRegister(reg, 1 << 20, cudaHostRegisterDefault); });
    probe("cudaHostUnregister", nullptr, [&] { return cudaHostUnregister(reg); });
    std::free(reg);
    probe("cudaEventCreate", nullptr, [&] { return cudaEventCreateWithFlags(&ev, cudaEventDisableTiming); });
    probe("cudaEventDestroy", nullptr, [&] { return cudaEventDestroy(ev); });
    cudaStream_t s2 = nullptr;
    probe("cudaStreamCreate (non-blocking)", nullptr, [&] { return cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking); });
    probe("cudaStreamDestroy", nullptr, [&] { return cudaStreamDestroy(s2); });
    void *src = nullptr, *dst = nullptr;
    ok(cudaHostAlloc(&src, 1 << 20, cudaHostAllocDefault), "cudaHostAlloc(src)");
    ok(cudaMalloc(&dst, 1 << 20), "cudaMalloc(dst)");
    probe("cudaMemcpyAsync + cudaStreamSynchronize (other stream)", nullptr, [&] {
        cudaError_t e = cudaMemcpyAsync(dst, src, 1 << 20, cudaMemcpyHostToDevice, other);
        return e != cudaSuccess ? e : cudaStreamSynchronize(other);
    });
    probe("cudaMemcpy (legacy default stream)", nullptr, [&] { return cudaMemcpy(dst, src, 1 << 20, cudaMemcpyHostToDevice); });
    std::printf("done\n");
    return 0;
}
