// SPDX-License-Identifier: MIT
// gather (0Bh, 1.2): the bytes at lba * block size + offset, length, of each entry,
// concatenated in entry order, from the NVM namespace the Execute names. The plan reads
// the sorted distinct block runs (in parallel, by the embedding); the run copies. DW0 =
// bytes written; out too small: Output Overflow, DW1 = bytes needed.
#include <algorithm>

#include "../program.h"

namespace csd::core {

namespace {

enum { kEntries, kOut, kRanges };

// The parameters, when the ranges hold them: two ranges, count entries in the first.
bool params_of(const ProgramCall &call, csd_gather_params *p)
{
    return call.nr_ranges == kRanges && read_params(call, p) && p->reserved == 0 &&
           bytes_of(p->count, sizeof(csd_gather_entry)) <= call.ranges[kEntries].len;
}

}  // namespace

ExecResult check_gather(const ProgramCall &call, ProgramWork *work)
{
    csd_gather_params p;
    if (!params_of(call, &p)) return fail(CSD_STATUS_INVALID_PARAMETERS);
    if (work) work->records = 0;
    return ok();
}

uint16_t plan_gather(const ProgramCall &call, MediaPlan *plan)
{
    csd_gather_params p;
    if (!params_of(call, &p)) return CSD_STATUS_INVALID_PARAMETERS | CSD_STATUS_DNR;
    plan->entries.resize(p.count);
    if (p.count) std::memcpy(plan->entries.data(), call.ranges[kEntries].data, p.count * sizeof(csd_gather_entry));
    // bytes needed that DW1 of an Output Overflow cannot say (4 GiB or more): refused
    uint64_t need = 0;
    for (const csd_gather_entry &e : plan->entries) need += e.length;
    if (need > call.ranges[kOut].len && need > UINT32_MAX) return CSD_STATUS_INVALID_PARAMETERS | CSD_STATUS_DNR;
    const uint64_t bs = plan->ns.lba_size, ns_bytes = plan->ns.lba_count * bs;
    for (const csd_gather_entry &e : plan->entries) {
        if (e.length == 0) continue;  // nothing to read, wherever it points
        // every byte inside the namespace (no overflow on the way)
        if (e.lba >= plan->ns.lba_count) return CSD_STATUS_LBA_OUT_OF_RANGE | CSD_STATUS_DNR;
        const uint64_t start = e.lba * bs + e.offset;
        if (start > ns_bytes || e.length > ns_bytes - start) return CSD_STATUS_LBA_OUT_OF_RANGE | CSD_STATUS_DNR;
        plan->want(start / bs, (start + e.length - 1) / bs);
    }
    return CSD_STATUS_SUCCESS;
}

ExecResult run_gather(const ProgramCall &call, const MediaPlan &plan)
{
    uint64_t need = 0;
    for (const csd_gather_entry &e : plan.entries) need += e.length;
    const Span &out = call.ranges[kOut];
    if (need > out.len) return fail(CSD_STATUS_OUTPUT_OVERFLOW, 0, static_cast<uint32_t>(need));  // below 4 GiB (plan)
    CancelPoints points(call, kCancelBytes);
    const uint64_t bs = plan.ns.lba_size;
    uint64_t done = 0;
    for (const csd_gather_entry &e : plan.entries) {
        const uint64_t start = e.lba * bs + e.offset;
        for (uint64_t copied = 0; copied < e.length;) {
            const uint64_t n = points.next(e.length - copied);
            if (n == 0) return fail(CSD_STATUS_ABORT_REQUESTED);
            std::memcpy(out.data + done, plan.at(start + copied), n);
            copied += n;
            done += n;
        }
    }
    return ok(static_cast<uint32_t>(done), static_cast<uint32_t>(done >> 32));
}

}  // namespace csd::core
