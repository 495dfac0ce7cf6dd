// SPDX-License-Identifier: MIT
// gather_kernel.hpp - the GPU-initiated gather of bench/gpu/gpu_gather.cc (kernel in
// gather_kernel.cu): records scattered over the namespace read into GPU memory, every NVMe
// command built, submitted and completed by the kernel through csd::gpu::GpuQueues.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "nvme_queue.hpp"

// Launches one warp per queue of s: record i (i < n, LBA records[i] * lbas_per_record) goes to
// dst + i * record bytes. Failed commands are counted in *errors (device memory, zeroed by the caller).
cudaError_t launch_gather(const csd::NvmeQueueSet &s, const uint64_t *records, uint64_t n, uint32_t lbas_per_record,
                          uint8_t *dst, unsigned long long *errors, cudaStream_t stream);
