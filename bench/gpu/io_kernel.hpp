// SPDX-License-Identifier: MIT
// io_kernel.hpp - GPU-initiated random I/O of bench/gpu/gpu_io.cc (kernels in io_kernel.cu):
// every NVMe command built, submitted and completed by GPU threads through
// csd::gpu::GpuQueues, one warp per queue pair, 32 commands per batch. Reads land in the
// arena (host memory), or in GPU memory: copied there by the warp after the completions
// (what a kernel does without the drive's help), or moved there by the drive side before it
// posts them (GpuQueues made with a GpuWindow).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "nvme_queue.hpp"

// What the kernel issues and how it checks what came back.
struct IoJob {
    uint32_t kind = 0;           // 0: NVM Read of nlb LBAs; 1: Execute (a descriptor per block);
                                 // 2: SLM Read of nlb * LBA size bytes at a random record of SLM
    uint32_t nlb = 1;            // Read: LBAs per command
    uint64_t records = 0;        // Read: random record index < records (record = nlb LBAs)
    uint32_t rounds = 1;         // batches of 32 commands per warp
    uint32_t verify = 0;         // Read: every byte checked against pattern_word() on the GPU
    // Reads: 0: land in the lane's arena slot; 1: land there, then the warp copies its batch
    // into GPU memory at vram; 2: land in GPU memory at vram (the queues' window: moved by the
    // drive side). vram's slot of SQ slot k of queue q: as the arena's.
    uint32_t dest = 0;
    uint8_t *vram = nullptr;
    uint16_t expect_status = 0;  // the NVMe status every command must complete with (else counted failed)
    // Execute: descriptor i (of `blocks`) at arena offset desc_offset + i * desc_stride,
    // desc_len bytes, whose result Dword 0 must equal expect[i] (device memory).
    uint32_t blocks = 0, desc_len = 0;
    uint64_t desc_offset = 0, desc_stride = 0;
    const uint32_t *expect = nullptr;
    uint64_t seed = 1;
};

// The 8 bytes the namespace holds at byte offset pos (a multiple of 8), as the bench writes it.
__host__ __device__ inline uint64_t pattern_word(uint64_t pos)
{
    uint64_t x = pos * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull;
    x ^= x >> 29;
    return x;
}

// Loads the kernel's module now (CUDA loads it lazily at the first launch, which can wait for
// kernels already running: a resident mover never ends while queues live).
cudaError_t load_io();

// Launches one warp per queue of s running job; counts failed commands in counters[0] and
// wrong bytes or results in counters[1] (device memory, zeroed by the caller). Arena slot
// of SQ slot k of queue q: (q * depth + k) * slot_bytes.
cudaError_t launch_io(const csd::NvmeQueueSet &s, const IoJob &job, uint64_t slot_bytes, unsigned long long *counters,
                      cudaStream_t stream);
