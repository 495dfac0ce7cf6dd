// SPDX-License-Identifier: MIT
// io_kernel.cu - random Reads and small Executes issued from GPU threads (io_kernel.hpp):
// each warp owns a queue pair; each lane builds one NVMe command per batch into its SQ slot;
// the warp rings the doorbell once and polls the completions (gpu_queues.cuh). Reads land in
// the lane's arena slot (mapped host memory), or that slot and then the warp copies them into
// GPU memory, or straight in GPU memory (the drive side moves them there before posting the
// completion); when asked, they are checked where they landed word by word. An Execute's
// result Dword is checked against the expected checksum.
#include "csd_spec.h"
#include "gpu_queues.cuh"
#include "io_kernel.hpp"

namespace {

__device__ inline uint64_t mix(uint64_t x)
{
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

__global__ void io(csd::NvmeQueueSet s, IoJob job, uint64_t slot_bytes, unsigned long long *counters)
{
    const uint32_t warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
    const unsigned lane = threadIdx.x & 31;
    if (warp >= s.queues) return;
    csd::gpu::WarpQueue w;
    w.q = warp;
    const uint64_t rec_bytes = uint64_t(job.nlb) * s.lba_size;
    unsigned long long failed = 0, wrong = 0;
    for (uint32_t round = 0; round < job.rounds; round++) {
        const uint32_t slot = csd::gpu::warp_next_slot(s, w, 0xFFFFFFFFu);
        const uint64_t off = (uint64_t(w.q) * s.depth + slot) * slot_bytes;
        const uint64_t r = mix(job.seed ^ (uint64_t(warp) << 40) ^ (uint64_t(round) << 8) ^ lane);
        csd::NvmeSqe e;
        uint32_t block = 0;
        if (job.kind == 0 && job.dest == 2) {
            e = csd::gpu::read_entry_to_gpu(s, (r % job.records) * job.nlb, job.nlb, job.vram + off);
        } else if (job.kind == 0) {
            e = csd::gpu::read_entry(s, (r % job.records) * job.nlb, job.nlb, off);
        } else if (job.kind == 2) {
            const uint64_t at = (r % job.records) * rec_bytes;
            e = job.dest == 2 ? csd::gpu::slm_read_entry_to_gpu(s, at, static_cast<uint32_t>(rec_bytes), job.vram + off)
                              : csd::gpu::slm_read_entry_to_gpu(s, at, static_cast<uint32_t>(rec_bytes), s.arena + off);
        } else {
            block = static_cast<uint32_t>(r % job.blocks);
            e = csd::NvmeSqe{};
            e.opcode = CSD_OPC_EXECUTE;
            e.nsid = s.nsid;
            e.prp1 = reinterpret_cast<uint64_t>(s.arena) + job.desc_offset + block * job.desc_stride;
            e.cdw10 = job.desc_len;
        }
        uint64_t result = 0;
        const uint16_t st = csd::gpu::warp_submit_and_wait(s, w, 0xFFFFFFFFu, e, &result);
        if (job.kind != 1 && job.dest == 1) {
            // the batch's records, arena -> GPU memory, 16 bytes per lane per step (coalesced):
            // what a kernel does when the drive lands its Reads in host memory
            for (unsigned k = 0; k < 32; k++) {
                const uint64_t koff = __shfl_sync(0xFFFFFFFFu, off, k);
                const uint4 *from = reinterpret_cast<const uint4 *>(s.arena + koff);
                uint4 *to = reinterpret_cast<uint4 *>(job.vram + koff);
                for (uint64_t i = lane; i < rec_bytes / 16; i += 32) to[i] = __ldcv(&from[i]);
            }
            __syncwarp();
        }
        if (st != job.expect_status) {
            failed++;
            continue;
        }
        if (st) continue;  // the expected error: no data to check
        if (job.kind == 1) {
            wrong += static_cast<uint32_t>(result) != job.expect[block];
        } else if (job.verify && job.dest == 0) {
            const uint64_t pos = (r % job.records) * rec_bytes;
            const volatile uint64_t *got = reinterpret_cast<const volatile uint64_t *>(s.arena + off);
            for (uint64_t k = 0; k < rec_bytes / 8; k++) wrong += got[k] != pattern_word(pos + 8 * k);
        } else if (job.verify) {  // in GPU memory, past the SM's L1 (this slot was read in earlier rounds)
            const uint64_t pos = (r % job.records) * rec_bytes;
            const unsigned long long *got = reinterpret_cast<const unsigned long long *>(job.vram + off);
            for (uint64_t k = 0; k < rec_bytes / 8; k++) wrong += __ldcg(&got[k]) != pattern_word(pos + 8 * k);
        }
    }
    if (failed) atomicAdd(&counters[0], failed);
    if (wrong) atomicAdd(&counters[1], wrong);
}

}  // namespace

cudaError_t load_io()
{
    cudaFuncAttributes a{};
    return cudaFuncGetAttributes(&a, io);
}

cudaError_t launch_io(const csd::NvmeQueueSet &s, const IoJob &job, uint64_t slot_bytes, unsigned long long *counters,
                      cudaStream_t stream)
{
    const unsigned threads = 128;
    const unsigned blocks = (s.queues * 32 + threads - 1) / threads;
    io<<<blocks, threads, 0, stream>>>(s, job, slot_bytes, counters);
    return cudaGetLastError();
}
