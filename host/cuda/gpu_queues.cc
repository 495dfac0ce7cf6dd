// SPDX-License-Identifier: MIT
// gpu_queues.cc - mapped pinned memory for GPU-initiated NVMe queues, served by host threads.
#include "gpu_queues.hpp"

#include <cstring>
#include <string>

#include "csd/error.hpp"
#include "host_registration.hpp"

namespace csd::gpu {

namespace {

void check(cudaError_t e, const char *what)
{
    if (e != cudaSuccess) throw Error(std::string("GPU queues: ") + what + ": " + cudaGetErrorString(e), EIO);
}

template <typename T>
T *device_address(T *host)
{
    void *d = nullptr;
    check(cudaHostGetDevicePointer(&d, host, 0), "cudaHostGetDevicePointer");
    return static_cast<T *>(d);
}

// Frees the queues' pinned memory (either may be null): once no resident kernel runs, as
// cudaFreeHost would wait for it (another queue set's may run).
void free_pinned(void *arena, void *mem)
{
    after_resident_kernels([arena, mem] {
        if (arena) cudaFreeHost(arena);
        if (mem) cudaFreeHost(mem);
    });
}

}  // namespace

GpuQueues::GpuQueues(Device &dev, uint32_t queues, uint32_t depth, uint64_t arena_bytes, int pollers)
    : GpuQueues(dev, queues, depth, arena_bytes, pollers, GpuWindow{})
{
}

GpuQueues::GpuQueues(Device &dev, uint32_t queues, uint32_t depth, uint64_t arena_bytes, int pollers,
                     const GpuWindow &window)
{
    if (queues == 0 || queues > 4096) throw Error("GPU queues: 1..4096 queues", EINVAL);
    if (depth < 33 || depth > 4096) throw Error("GPU queues: depth must be 33..4096 (a warp submits 32)", EINVAL);
    if (arena_bytes == 0) throw Error("GPU queues: an arena is needed for the data", EINVAL);
    const uint64_t sq_bytes = uint64_t(queues) * depth * sizeof(NvmeSqe);
    const uint64_t cq_bytes = uint64_t(queues) * depth * sizeof(NvmeCqe);
    const uint64_t db_bytes = uint64_t(queues) * sizeof(NvmeDoorbells);
    const unsigned flags = cudaHostAllocMapped | cudaHostAllocPortable;
    check(cudaHostAlloc(&mem_, sq_bytes + cq_bytes + db_bytes, flags), "cudaHostAlloc (queues)");
    try {
        check(cudaHostAlloc(&arena_, arena_bytes, flags), "cudaHostAlloc (arena)");
        auto *base = static_cast<uint8_t *>(mem_);
        std::memset(base, 0, sq_bytes + cq_bytes + db_bytes);
        host_.sq = reinterpret_cast<NvmeSqe *>(base);
        host_.cq = reinterpret_cast<NvmeCqe *>(base + sq_bytes);
        host_.db = reinterpret_cast<NvmeDoorbells *>(base + sq_bytes + cq_bytes);
        host_.arena = static_cast<uint8_t *>(arena_);
        host_.arena_bytes = arena_bytes;
        host_.queues = queues, host_.depth = depth;
        host_.nsid = dev.ns().nsid, host_.lba_size = dev.ns().lba_size;
        gpu_ = host_;
        gpu_.sq = device_address(host_.sq), gpu_.cq = device_address(host_.cq), gpu_.db = device_address(host_.db);
        gpu_.arena = device_address(host_.arena);
        if (window.base) {
            mover_ = std::make_unique<GpuMover>(window, dev.transport().max_transfer(), dev.namespace_host_pointer(),
                                                dev.ns().lba_count * dev.ns().lba_size);
        }
        proc_ = std::make_unique<QueueProcessor>(dev, host_, reinterpret_cast<uint64_t>(gpu_.arena), pollers, mover_.get());
    } catch (...) {
        free_pinned(arena_, mem_);
        throw;
    }
}

GpuQueues::~GpuQueues()
{
    proc_.reset();  // the pollers stop (and their lanes finish their copies) before the memory they read goes
    mover_.reset();
    free_pinned(arena_, mem_);
}

}  // namespace csd::gpu
