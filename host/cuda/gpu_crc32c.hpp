// SPDX-License-Identifier: MIT
// gpu_crc32c.hpp - CRC-32C (spec/csd_crc32c.h's) of device memory, computed on the GPU:
// every thread the CRC of 1 KiB by slicing-by-8 tables in shared memory, a block's 256
// combined by the GF(2) shift operator (multiplication by x^(8n) mod P), the blocks' the
// same way. A landing checks with it the bytes where they landed in GPU memory.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace csd::gpu {

// CRC-32C of device memory, enqueued on streams; owns its tables and scratch.
class GpuCrc32c {
public:
    // Pieces of up to max_piece bytes, up to `slots` of them in flight at once.
    GpuCrc32c(uint64_t max_piece, int slots);
    ~GpuCrc32c();
    GpuCrc32c(const GpuCrc32c &) = delete;
    GpuCrc32c &operator=(const GpuCrc32c &) = delete;

    uint64_t max_piece() const { return max_piece_; }
    int slots() const { return slots_; }
    // Enqueues on stream the CRC-32C of device bytes [data, data + n) (n <= max_piece) into
    // slot; its result is result(slot) once stream has passed this point.
    void launch(const uint8_t *data, uint64_t n, int slot, cudaStream_t stream);
    // The CRC-32C the slot's last launch computed (after its stream passed it).
    uint32_t result(int slot) const { return host_out_[slot]; }

private:
    void release();  // frees what it holds (once no resident kernel runs: after_resident_kernels)
    uint64_t max_piece_;
    int slots_;
    uint32_t *tables_ = nullptr;    // device: 8 x 256 slicing tables
    uint32_t *blocks_ = nullptr;    // device: per slot, each thread block's CRC
    uint32_t *host_out_ = nullptr;  // pinned host memory the GPU writes each slot's CRC to
    uint64_t blocks_per_slot_ = 0;
};

// Loads the CRC kernels' code on the current device now. CUDA loads a kernel at its first use
// (lazy loading), which can wait for the kernels running; GpuQueues loads these before its
// resident kernel starts, so that a Landing made while it runs does not wait for it.
void load_crc32c_kernels();

// CRC-32C of n bytes of device memory (a test and a one-off: synchronous).
uint32_t crc32c_on_gpu(const void *data, uint64_t n);

}  // namespace csd::gpu
