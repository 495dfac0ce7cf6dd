// SPDX-License-Identifier: MIT
// gpu_queues.hpp - GPU-initiated NVMe commands (BaM-style): queue pairs and a data arena in
// pinned host memory mapped into the GPU, filled and rung by CUDA kernels
// (gpu_queues.cuh), served by host threads onto a Device (csd::QueueProcessor): the
// in-process device, or a real drive's passthrough. Completions land where the kernel
// polls them; data lands in the arena (host memory the kernel reads over PCIe) or, for
// Reads naming GPU memory in a window given here, in GPU memory (gpu_mover.hpp: the drive
// side moves it there before it posts the completion).
#pragma once

#include <cuda_runtime_api.h>

#include <memory>

#include "csd/device.hpp"
#include "nvme_queue.hpp"
#include "queue_processor.hpp"
#include "gpu_mover.hpp"

namespace csd::gpu {

class GpuQueues {
public:
    // queues queue pairs of depth entries (at least 33: a warp submits 32 at a time) and an
    // arena of arena_bytes, served by pollers host threads. Throws csd::Error on CUDA errors.
    GpuQueues(Device &dev, uint32_t queues, uint32_t depth, uint64_t arena_bytes, int pollers);
    // The same, and a Read or SLM Read whose PRP1 lies in window (device memory) lands there:
    // moved by window.by from the pollers' pinned staging before its completion is posted.
    GpuQueues(Device &dev, uint32_t queues, uint32_t depth, uint64_t arena_bytes, int pollers, const GpuWindow &window);
    ~GpuQueues();
    GpuQueues(const GpuQueues &) = delete;
    GpuQueues &operator=(const GpuQueues &) = delete;

    // The queue set as kernels address it (pass it by value to a kernel).
    const NvmeQueueSet &device_view() const { return gpu_; }
    // The queue set as host code addresses it (a submitter on the host: tests).
    const NvmeQueueSet &host_view() const { return host_; }
    // The arena as host code addresses it.
    uint8_t *host_arena() const { return host_.arena; }
    uint64_t commands() const { return proc_->commands(); }  // completed so far
    QueueProcessor::Timed timed() const { return proc_->timed(); }  // posted at a timing model's finish
    uint64_t errors() const { return proc_->errors(); }
    uint64_t direct_reads() const { return proc_->direct_reads(); }  // Reads copied straight from the namespace's pages

private:
    NvmeQueueSet host_, gpu_;
    void *mem_ = nullptr, *arena_ = nullptr;
    std::unique_ptr<GpuMover> mover_;  // outlives proc_ (declared before it)
    std::unique_ptr<QueueProcessor> proc_;
};

}  // namespace csd::gpu
