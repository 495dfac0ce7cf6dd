// SPDX-License-Identifier: MIT
// csd_agent.hpp - an agent's side of a queue pair of the emulated NVMe controller in QEMU
// that csd.ko created for it (CSD_IOC_AGENT_QUEUE, docs/kmod.md; docs/gpu.md): the agent
// (a host process, or a CUDA kernel on memory registered with CUDA) builds the SQEs in the
// shared region, rings the shadow doorbell (the controller polls it: QEMU's agent-poll-us)
// and polls the completions by their phase tag. Written once for both: every function is
// host and device code under nvcc, plain C++ elsewhere. Not thread-safe: one thread (or
// one lane of a warp) drives one QueuePair.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstring>

#include "nvme_queue.hpp"  // host/cuda: NvmeSqe, NvmeCqe
#include "csd_spec.h"

#ifdef __CUDACC__
#define CSD_AGENT_FN __host__ __device__ inline
#else
#define CSD_AGENT_FN inline
#endif

namespace csd::agent {

constexpr uint64_t kPage = 4096;

// What CSD_IOC_AGENT_QUEUE told the guest: offsets are in the region, which starts at
// byte `region` of the peer's memory (its BAR, the host file) and at bus address `bus`
// for the drive.
struct Layout {
    uint64_t region = 0;
    uint64_t len = 0;
    uint64_t bus = 0;
    uint64_t sq_offset = 0, cq_offset = 0, db_offset = 0, data_offset = 0;
    uint32_t depth = 0;
    uint32_t nsid = 0;
    uint32_t lba_size = 0;
    uint16_t qid = 0;
};

// A layout as the guest prints it (kmod_check agent, agent_guest): region, len, bus, sq,
// cq, db and data offsets in hex, then depth, nsid, lba_size and qid, comma-separated.
// False if malformed or if depth (2-1024) or lba_size are out of range. Host code.
inline bool parse_layout(const char *s, Layout &l)
{
    unsigned long long v[11];
    if (std::sscanf(s, "%llx,%llx,%llx,%llx,%llx,%llx,%llx,%llu,%llu,%llu,%llu", &v[0], &v[1], &v[2], &v[3], &v[4],
                    &v[5], &v[6], &v[7], &v[8], &v[9], &v[10]) != 11)
        return false;
    l.region = v[0], l.len = v[1], l.bus = v[2], l.sq_offset = v[3], l.cq_offset = v[4], l.db_offset = v[5];
    l.data_offset = v[6], l.depth = static_cast<uint32_t>(v[7]), l.nsid = static_cast<uint32_t>(v[8]);
    l.lba_size = static_cast<uint32_t>(v[9]), l.qid = static_cast<uint16_t>(v[10]);
    return l.depth >= 2 && l.depth <= 1024 && l.lba_size >= 512 && l.data_offset < l.len;
}

// One queue pair as its agent sees it: `base` is the region's first byte in the agent's
// address space (a host mapping, or the device pointer of its registration with CUDA).
struct QueuePair {
    uint8_t *base = nullptr;
    uint64_t bus = 0;
    uint64_t len = 0;
    uint32_t depth = 0;
    uint32_t sq_tail = 0;
    uint32_t cq_head = 0;
    uint32_t phase = 1;
};

// A completion as the agent reads it: the NVMe status (bits 7:0 code, 10:8 type, 14 DNR).
struct Completion {
    uint16_t cid = 0;
    uint16_t status = 0;
    uint32_t dw0 = 0, dw1 = 0;
};

// A system-wide fence: the drive (another process) sees the writes before it in order.
CSD_AGENT_FN void fence()
{
#ifdef __CUDA_ARCH__
    __threadfence_system();
#else
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
#endif
}

// The queue pair of a layout, its region mapped at base (fresh: tails and heads 0).
CSD_AGENT_FN QueuePair make_pair(uint8_t *base, const Layout &l)
{
    QueuePair q;
    q.base = base;
    q.bus = l.bus;
    q.len = l.len;
    q.depth = l.depth;
    return q;
}

// The doorbell block: SQ tail and CQ head (the agent's), then the drive's event indexes.
CSD_AGENT_FN volatile uint32_t *doorbells(const QueuePair &q, const Layout &l)
{
    return reinterpret_cast<volatile uint32_t *>(q.base + l.db_offset);
}

// The queue pair as an earlier agent left it, read from the shared memory itself: the SQ
// tail and CQ head its shadow doorbells hold, and the phase the entry at the head does not
// have (an entry of the lap before, or a zeroed one: csd.ko zeroes a new pair's queues).
// Valid when that agent left no command outstanding; on a new pair it is make_pair's state.
CSD_AGENT_FN QueuePair resume_pair(uint8_t *base, const Layout &l)
{
    QueuePair q = make_pair(base, l);
    const uint32_t tail = doorbells(q, l)[0], head = doorbells(q, l)[1];
    q.sq_tail = tail < l.depth ? tail : 0;
    q.cq_head = head < l.depth ? head : 0;
    const volatile NvmeCqe *cqe = reinterpret_cast<const volatile NvmeCqe *>(base + l.cq_offset) + q.cq_head;
    q.phase = (cqe->status_phase & 1u) ^ 1u;
    return q;
}

// The drive's address of the region's byte at offset off.
CSD_AGENT_FN uint64_t bus_of(const QueuePair &q, uint64_t off) { return q.bus + off; }

// Whether another command fits (at most depth - 1 outstanding).
CSD_AGENT_FN bool sq_full(const QueuePair &q, uint32_t outstanding) { return outstanding + 1 >= q.depth; }

// Writes e into the SQ slot at the tail and advances the local tail; the drive sees it only
// at ring(). e.cid is the caller's: unique among its commands outstanding, since the drive
// may complete them in any order (so is a data buffer: tie it to the cid, not to the slot).
CSD_AGENT_FN void push(QueuePair &q, const Layout &l, const NvmeSqe &e)
{
    uint64_t words[8];
    memcpy(words, &e, sizeof(words));
    volatile uint64_t *dst = reinterpret_cast<volatile uint64_t *>(q.base + l.sq_offset + uint64_t(q.sq_tail) * 64);
    for (int i = 0; i < 8; i++) dst[i] = words[i];
    q.sq_tail = q.sq_tail + 1 == q.depth ? 0 : q.sq_tail + 1;
}

// Rings the shadow SQ tail doorbell: every entry pushed so far is the drive's.
CSD_AGENT_FN void ring(QueuePair &q, const Layout &l)
{
    fence();
    doorbells(q, l)[0] = q.sq_tail;
    fence();
}

// Rings the doorbell with any value (tests: a hostile agent's tail beyond the queue).
CSD_AGENT_FN void ring_raw(QueuePair &q, const Layout &l, uint32_t tail)
{
    fence();
    doorbells(q, l)[0] = tail;
    fence();
}

// Takes the completion at the CQ head if the drive posted it (phase tag), advancing the
// head and its shadow doorbell; false if none is there yet.
CSD_AGENT_FN bool poll(QueuePair &q, const Layout &l, Completion *out)
{
    volatile NvmeCqe *cqe = reinterpret_cast<volatile NvmeCqe *>(q.base + l.cq_offset) + q.cq_head;
    const uint16_t sp = cqe->status_phase;
    if ((sp & 1u) != q.phase) return false;
    fence();
    out->cid = cqe->cid;
    out->status = static_cast<uint16_t>(sp >> 1);
    out->dw0 = cqe->dw0;
    out->dw1 = cqe->dw1;
    if (++q.cq_head == q.depth) {
        q.cq_head = 0;
        q.phase ^= 1u;
    }
    fence();
    doorbells(q, l)[1] = q.cq_head;
    return true;
}

// The data pointer of a buffer of len bytes at region offset off (4 KiB aligned): PRP1,
// and PRP2 as the second page or a PRP list, which is written at region offset list_off
// (one page: at most 513 pages in all). Returns false if it would need a longer list.
CSD_AGENT_FN bool set_prps(QueuePair &q, NvmeSqe &e, uint64_t off, uint64_t len, uint64_t list_off)
{
    const uint64_t pages = (len + kPage - 1) / kPage;
    e.prp1 = bus_of(q, off);
    e.prp2 = 0;
    if (pages == 2) {
        e.prp2 = bus_of(q, off + kPage);
    } else if (pages > 2) {
        if (pages - 1 > kPage / 8) return false;
        volatile uint64_t *list = reinterpret_cast<volatile uint64_t *>(q.base + list_off);
        for (uint64_t i = 1; i < pages; i++) list[i - 1] = bus_of(q, off + i * kPage);
        e.prp2 = bus_of(q, list_off);
    }
    return true;
}

// An NVMe Read of nlb LBAs from slba (data pointer: set_prps).
CSD_AGENT_FN NvmeSqe read_sqe(uint32_t nsid, uint64_t slba, uint32_t nlb)
{
    NvmeSqe e{};
    e.opcode = 0x02;
    e.nsid = nsid;
    e.cdw10 = static_cast<uint32_t>(slba);
    e.cdw11 = static_cast<uint32_t>(slba >> 32);
    e.cdw12 = nlb - 1;
    return e;
}

// SLM Write (81h) or SLM Read (82h) of len bytes at SLM offset slm (data pointer: set_prps).
CSD_AGENT_FN NvmeSqe slm_sqe(bool write, uint32_t nsid, uint64_t slm, uint32_t len)
{
    NvmeSqe e{};
    e.opcode = write ? CSD_OPC_SLM_WRITE : CSD_OPC_SLM_READ;
    e.nsid = nsid;
    e.cdw10 = static_cast<uint32_t>(slm);
    e.cdw11 = static_cast<uint32_t>(slm >> 32);
    e.cdw12 = len;
    return e;
}

// Execute (85h) of the descriptor of desc_len bytes in the buffer set_prps names.
CSD_AGENT_FN NvmeSqe execute_sqe(uint32_t nsid, uint32_t desc_len)
{
    NvmeSqe e{};
    e.opcode = CSD_OPC_EXECUTE;
    e.nsid = nsid;
    e.cdw10 = desc_len;
    return e;
}

}  // namespace csd::agent
