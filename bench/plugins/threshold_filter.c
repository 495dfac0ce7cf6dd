// SPDX-License-Identifier: MIT
/*
 * threshold_filter - a plug-in (id 0041h) with the benchmark's predicate, so that
 * bench/bpf_bench.cc compares built-in, eBPF (JIT, interpreted) and native plug-in code
 * on the same work: keep 16-byte records whose i32 key (byte 0) is > params.threshold.
 * Params (16): u32 count; u32 reserved; i64 threshold. DW0 bytes written, DW1 matches.
 */
#include <string.h>

#include "csd_plugin.h"

struct params {
    uint32_t count, reserved;
    int64_t threshold;
};

static struct csd_program_result run(const struct csd_program_call *call)
{
    struct csd_program_result r = {CSD_STATUS_INVALID_PARAMETERS | CSD_STATUS_DNR, 0, 0};
    struct params p;

    memcpy(&p, call->params, sizeof(p));
    if (call->nr_ranges != 2 || (uint64_t)p.count * 16 > call->ranges[0].len)
        return r;
    const uint8_t *in = call->ranges[0].data;
    uint8_t *out = call->ranges[1].data;
    uint64_t written = 0, room = call->ranges[1].len;
    uint32_t hits = 0;
    for (uint32_t i = 0; i < p.count; i++) {
        int32_t key;

        if ((i & 0xFFFF) == 0 && __atomic_load_n(call->cancel, __ATOMIC_RELAXED)) {
            r.status = CSD_STATUS_ABORT_REQUESTED;
            return r;
        }
        memcpy(&key, in + 16ull * i, 4);
        if (key <= p.threshold)
            continue;
        if (written + 16 <= room)
            memcpy(out + written, in + 16ull * i, 16);
        written += 16;
        hits++;
    }
    r.status = written > room ? (CSD_STATUS_OUTPUT_OVERFLOW | CSD_STATUS_DNR) : CSD_STATUS_SUCCESS;
    r.dw0 = (uint32_t)written;
    r.dw1 = hits;
    return r;
}

static const struct csd_plugin plugin = {CSD_PLUGIN_ABI_VERSION, 0x41, "threshold_filter", sizeof(struct params), -1, run};

const struct csd_plugin *csd_plugin_entry(void) { return &plugin; }
