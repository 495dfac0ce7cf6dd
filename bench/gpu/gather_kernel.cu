// SPDX-License-Identifier: MIT
// gather_kernel.cu - scattered records into GPU memory, driven entirely from a kernel: each
// warp owns a queue pair, each lane reads one record per batch into its arena slot (an NVMe
// Read it builds and submits itself), then the warp copies the batch from the arena (mapped
// host memory, read over PCIe uncached) into the destination in GPU memory.
#include "gather_kernel.hpp"
#include "gpu_queues.cuh"

namespace {

__global__ void gather(csd::NvmeQueueSet s, const uint64_t *records, uint64_t n, uint32_t lbas_per_record,
                       uint8_t *dst, unsigned long long *errors)
{
    const uint32_t warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
    const unsigned lane = threadIdx.x & 31;
    if (warp >= s.queues) return;
    csd::gpu::WarpQueue w;
    w.q = warp;
    const uint64_t rec_bytes = uint64_t(lbas_per_record) * s.lba_size;
    const uint64_t per_round = uint64_t(s.queues) * 32;
    for (uint64_t base = uint64_t(warp) * 32; base < n; base += per_round) {
        const uint64_t i = base + lane;
        const unsigned mask = __ballot_sync(0xFFFFFFFFu, i < n);
        const uint32_t slot = csd::gpu::warp_next_slot(s, w, mask);  // this lane's entry and arena slot
        const uint64_t off = (uint64_t(w.q) * s.depth + slot) * rec_bytes;
        csd::gpu::WarpQueue next = w;
        if (i < n) {
            const uint16_t st = csd::gpu::warp_submit_and_wait(
                s, next, mask, csd::gpu::read_entry(s, records[i] * lbas_per_record, lbas_per_record, off));
            if (st) atomicAdd(errors, 1ull);
        }
        // the batch's records, arena -> GPU memory, 16 bytes per lane per step (coalesced)
        for (unsigned r = 0; r < 32 && base + r < n; r++) {
            const uint32_t rslot = __shfl_sync(0xFFFFFFFFu, slot, r);
            const uint4 *from = reinterpret_cast<const uint4 *>(s.arena + (uint64_t(w.q) * s.depth + rslot) * rec_bytes);
            uint4 *to = reinterpret_cast<uint4 *>(dst + (base + r) * rec_bytes);
            for (uint64_t k = lane; k < rec_bytes / 16; k += 32) to[k] = __ldcv(&from[k]);
        }
        // lane 0 always took part: its view of the queue is the warp's
        w.sq_tail = __shfl_sync(0xFFFFFFFFu, next.sq_tail, 0);
        w.cq_head = __shfl_sync(0xFFFFFFFFu, next.cq_head, 0);
        w.phase = __shfl_sync(0xFFFFFFFFu, next.phase, 0);
    }
}

}  // namespace

cudaError_t launch_gather(const csd::NvmeQueueSet &s, const uint64_t *records, uint64_t n, uint32_t lbas_per_record,
                          uint8_t *dst, unsigned long long *errors, cudaStream_t stream)
{
    const unsigned threads = 128;
    const unsigned blocks = (s.queues * 32 + threads - 1) / threads;
    gather<<<blocks, threads, 0, stream>>>(s, records, n, lbas_per_record, dst, errors);
    return cudaGetLastError();
}
