// SPDX-License-Identifier: MIT
// nvme_queue.hpp - NVMe submission and completion queue entries and the memory layout of
// queue pairs that another agent (a GPU kernel, csd::gpu::GpuQueues) fills and rings, served
// onto a drive by csd::QueueProcessor. Plain structs, usable from C++ and CUDA alike.
#pragma once

#include <cstdint>

namespace csd {

// A submission queue entry as NVMe lays it out (64 bytes). PRP1 is an address in the
// queue pair set's data arena (as the submitting agent sees it) or, for a Read or SLM Read
// served with a csd::Mover, in the mover's memory (GPU memory); PRP2 is unused.
struct NvmeSqe {
    uint8_t opcode;
    uint8_t flags;
    uint16_t cid;
    uint32_t nsid;
    uint32_t cdw2, cdw3;
    uint64_t mptr;
    uint64_t prp1, prp2;
    uint32_t cdw10, cdw11, cdw12, cdw13, cdw14, cdw15;
};
static_assert(sizeof(NvmeSqe) == 64, "an NVMe SQE is 64 bytes");

// A completion queue entry (16 bytes): DW0/DW1 results, SQ head and ID, the command ID, and
// the status field whose bit 0 is the phase tag (status = NVMe status << 1 | phase).
struct NvmeCqe {
    uint32_t dw0, dw1;
    uint16_t sq_head, sq_id;
    uint16_t cid;
    uint16_t status_phase;
};
static_assert(sizeof(NvmeCqe) == 16, "an NVMe CQE is 16 bytes");

// One queue pair's doorbells, each on its own 64-byte line: the submitter writes the SQ
// tail, the processor reads it; the submitter writes the CQ head after consuming entries.
struct NvmeDoorbells {
    alignas(64) volatile uint32_t sq_tail;
    alignas(64) volatile uint32_t cq_head;
};

// Where a set of queue pairs lives, as one agent sees it: queue q's SQ is sq + q * depth,
// its CQ cq + q * depth, its doorbells db[q]; data buffers lie in [arena, arena + arena_bytes).
struct NvmeQueueSet {
    NvmeSqe *sq = nullptr;
    NvmeCqe *cq = nullptr;
    NvmeDoorbells *db = nullptr;
    uint8_t *arena = nullptr;
    uint64_t arena_bytes = 0;
    uint32_t queues = 0;
    uint32_t depth = 0;     // entries per queue; at most depth - 1 are outstanding
    uint32_t nsid = 1;      // the namespace of the drive's LBAs
    uint32_t lba_size = 512;
};

}  // namespace csd
