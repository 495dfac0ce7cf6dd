// SPDX-License-Identifier: MIT
// gpu_mover.hpp - the part of the emulated drive behind csd::gpu::GpuQueues that lands a
// kernel's Reads in GPU memory: a csd::Mover over a window of device memory. Each poller's
// lane reads into pinned host staging; a copy kernel resident on the GPU takes each block as
// soon as the lane publishes it in a ring and sets the block's done flag once its bytes are
// in the window; the other movers move a polling round's blocks as one batch (a copy kernel
// launched per batch that reads the staging over PCIe, one cudaMemcpyBatchAsync, or one
// cudaMemcpyAsync per block). The poller posts a command's completion only once its bytes
// are moved (the block's flag, or the event behind the batch).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>

#include "host_registration.hpp"
#include "queue_processor.hpp"

namespace csd::gpu {

// Who moves the bytes from a lane's pinned staging into GPU memory.
enum class MoveBy {
    // a copy kernel per lane that stays resident from the queues' making to their end: the lane
    // publishes each copy in a ring (no CUDA call per copy or batch); the kernel's warps each take
    // a share of those waiting (up to 32, their descriptors loaded one per thread), load the
    // staging (mapped) with every thread's loads in flight together, store to GPU memory and set
    // each copy's done flag. While it runs, cudaDeviceSynchronize and calls that synchronize the
    // device (cudaFree among them) wait for the queues' end.
    resident,
    kernel,  // a copy kernel launched per batch: GPU threads load the staging (mapped) and store to VRAM
    batch,   // cudaMemcpyBatchAsync per batch: the copy engines
    memcpy,  // cudaMemcpyAsync per block: the copy engines, one call each
};

// Its name in tables ("resident copy kernel", "copy kernel", "cudaMemcpyBatchAsync", "cudaMemcpyAsync").
const char *move_by_name(MoveBy by);

// GPU memory that a kernel's Reads (and SLM Reads) may name as their destination.
struct GpuWindow {
    void *base = nullptr;    // device memory (cudaMalloc); nullptr: none
    uint64_t bytes = 0;
    MoveBy by = MoveBy::kernel;  // resident is faster (docs/perf.md) but holds cudaDeviceSynchronize
    uint64_t staging = 32 << 20;  // pinned staging per poller, in 4 slabs (each at least the largest transfer)
    unsigned warps = 16;          // resident: warps a block of each poller's copy kernel (1..16)
    unsigned blocks = 1;          // resident: its blocks (1..8), each on an SM of its own
    // resident: Reads of a namespace mapped into this process (the simulated peer-to-peer
    // drive) copied by the kernel straight from its pages, registered with CUDA: no staging
    bool direct = true;
};

class GpuMover : public Mover {
public:
    // Throws csd::Error (EINVAL) unless window.base..+bytes is device memory; max_transfer: the
    // largest command the drive takes (a slab holds at least one, up to the window's size).
    // ns..+ns_bytes: host memory its resident lanes may copy from directly (the namespace's
    // mapping, Transport::namespace_host_pointer), its registration held (HostRegistration,
    // shared with a Landing of the same memory); none when window.direct is false, the mover
    // is not resident, or registering fails.
    GpuMover(const GpuWindow &window, uint32_t max_transfer, const uint8_t *ns = nullptr, uint64_t ns_bytes = 0);
    ~GpuMover() override;  // lets go of its hold on the namespace's registration
    bool covers(uint64_t addr, uint64_t len) const override;  // inside the window
    bool reaches(const uint8_t *src, uint64_t len) const override;  // inside the registered namespace
    uint32_t max_transfer() const override { return max_transfer_; }  // the drive's, at most the window
    std::unique_ptr<MoverLane> lane() override;  // pinned staging, a stream, events (and the resident ring)

private:
    // Holds the registration of ns..+bytes with CUDA and keeps its GPU address; none on failure.
    void register_namespace(const uint8_t *ns, uint64_t bytes);
    GpuWindow w_;
    uint64_t base_ = 0;
    uint32_t max_transfer_ = 0;
    uint64_t slab_ = 0;
    int device_ = 0;
    const uint8_t *ns_ = nullptr;  // host memory copied from directly (nullptr: none)
    uint64_t ns_bytes_ = 0, ns_gpu_ = 0;  // its size; its address as the GPU sees it
    std::unique_ptr<HostRegistration> ns_reg_;  // its hold on ns_'s registration
};

}  // namespace csd::gpu
