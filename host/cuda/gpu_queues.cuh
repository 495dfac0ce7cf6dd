// SPDX-License-Identifier: MIT
// gpu_queues.cuh - the kernel side of csd::gpu::GpuQueues: a warp owns one queue pair and
// each of its lanes one slot of a batch; the lanes write their NVMe entries into the SQ in
// mapped host memory, one lane rings the tail doorbell, every lane polls the completion
// queue for its entry by phase tag, and the CQ head doorbell is rung once for the batch.
#pragma once

#include <cstdint>

#include "nvme_queue.hpp"

namespace csd::gpu {

// A warp's position in the queue pair it owns (kept in registers, the same in every lane).
struct WarpQueue {
    uint32_t q = 0;
    uint32_t sq_tail = 0, cq_head = 0;
    uint32_t phase = 1;
};

// The SQ slot (and command ID) that this lane's next entry takes when the lanes in mask submit
// together: lanes take consecutive slots in lane order.
__device__ inline uint32_t warp_next_slot(const NvmeQueueSet &s, const WarpQueue &w, unsigned mask)
{
    const unsigned lane = threadIdx.x & 31;
    return (w.sq_tail + __popc(mask & ((1u << lane) - 1))) % s.depth;
}

// Warp-collective over the lanes in mask (each must call it; take mask from __ballot_sync):
// each submits `e` (its cid is set here) to queue w.q, the warp rings the doorbell once and
// waits for all of the batch's completions; each lane gets the NVMe status of its own command
// (0: success) and, in *result, Dwords 0-1 of its completion. The warp must own w.q alone; at
// most 32 commands are outstanding, so depth >= 33. w stays the same in every lane of mask.
__device__ inline uint16_t warp_submit_and_wait(const NvmeQueueSet &s, WarpQueue &w, unsigned mask, NvmeSqe e,
                                                uint64_t *result = nullptr)
{
    const unsigned lane = threadIdx.x & 31;
    const unsigned n = __popc(mask), rank = __popc(mask & ((1u << lane) - 1));
    const uint32_t slot = warp_next_slot(s, w, mask);
    e.cid = static_cast<uint16_t>(slot);
    const uint4 *from = reinterpret_cast<const uint4 *>(&e);
    uint4 *to = reinterpret_cast<uint4 *>(&s.sq[size_t(w.q) * s.depth + slot]);
    for (int i = 0; i < 4; i++) __stcg(&to[i], from[i]);
    __threadfence_system();
    __syncwarp(mask);
    w.sq_tail = (w.sq_tail + n) % s.depth;
    if (rank == 0) {
        __threadfence_system();
        s.db[w.q].sq_tail = w.sq_tail;  // volatile: one store that the host sees
    }
    // the completion at position cq_head + rank, once its phase tag is the expected one
    uint32_t idx = w.cq_head + rank, phase = w.phase;
    if (idx >= s.depth) idx -= s.depth, phase ^= 1;
    const NvmeCqe *c = &s.cq[size_t(w.q) * s.depth + idx];
    const volatile uint32_t *last = reinterpret_cast<const volatile uint32_t *>(&c->cid);
    uint32_t word;
    // only the batch's last completion is polled (the controller fills the CQ in order), one
    // word, so that waiting warps do not fill PCIe with reads (every lane polling its own took
    // a sixth of the link from the Reads' data); then every lane reads its own
    if (rank == n - 1) {
        while ((*last >> 16 & 1) != phase) __nanosleep(256);
    }
    __syncwarp(mask);
    while (((word = *last) >> 16 & 1) != phase) __nanosleep(64);  // at once, normally
    const unsigned long long dws = *reinterpret_cast<const volatile unsigned long long *>(&c->dw0);
    // hand each completion to the lane whose slot its command ID names
    uint16_t status = 0xFFFF;
    uint64_t res = 0;
    for (unsigned src = 0; src < 32; src++) {
        if (!(mask >> src & 1)) continue;
        const uint32_t wsrc = __shfl_sync(mask, word, src);
        const unsigned long long dsrc = __shfl_sync(mask, dws, src);
        if ((wsrc & 0xFFFF) == slot) status = static_cast<uint16_t>(wsrc >> 17), res = dsrc;
    }
    w.cq_head += n;
    if (w.cq_head >= s.depth) w.cq_head -= s.depth, w.phase ^= 1;
    __syncwarp(mask);
    if (rank == 0) s.db[w.q].cq_head = w.cq_head;
    if (result) *result = res;
    return status;
}

// An NVMe Read of nlb LBAs from slba into the arena at byte offset arena_off.
__device__ inline NvmeSqe read_entry(const NvmeQueueSet &s, uint64_t slba, uint32_t nlb, uint64_t arena_off)
{
    NvmeSqe e{};
    e.opcode = 0x02;
    e.nsid = s.nsid;
    e.prp1 = reinterpret_cast<uint64_t>(s.arena) + arena_off;
    e.cdw10 = static_cast<uint32_t>(slba);
    e.cdw11 = static_cast<uint32_t>(slba >> 32);
    e.cdw12 = nlb - 1;
    return e;
}

// An NVMe Read of nlb LBAs from slba into GPU memory at dst, inside the window the queues
// were made with (GpuWindow): the drive side moves the bytes there before it posts the
// completion. Read them after the completion with loads that skip the SM's L1 (__ldcg, or
// volatile): an earlier read of the same addresses may still be held there.
__device__ inline NvmeSqe read_entry_to_gpu(const NvmeQueueSet &s, uint64_t slba, uint32_t nlb, const void *dst)
{
    NvmeSqe e = read_entry(s, slba, nlb, 0);
    e.prp1 = reinterpret_cast<uint64_t>(dst);
    return e;
}

// An SLM Read of len bytes at SLM offset off (an Execute's output, say) into GPU memory at
// dst, inside the queues' window; read as read_entry_to_gpu's.
__device__ inline NvmeSqe slm_read_entry_to_gpu(const NvmeQueueSet &s, uint64_t off, uint32_t len, const void *dst)
{
    NvmeSqe e{};
    e.opcode = 0x82;  // CSD_OPC_SLM_READ
    e.nsid = s.nsid;
    e.prp1 = reinterpret_cast<uint64_t>(dst);
    e.cdw10 = static_cast<uint32_t>(off);
    e.cdw11 = static_cast<uint32_t>(off >> 32);
    e.cdw12 = len;
    return e;
}

}  // namespace csd::gpu
