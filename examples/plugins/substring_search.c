// SPDX-License-Identifier: MIT
/*
 * substring_search - an operator plug-in (command set §9) for nvme-csd: finds the
 * fixed-size text records that contain a byte pattern anywhere, and writes their u32
 * indices. A program none of the built-in ten covers (filter compares one numeric field).
 *
 * Program id 0040h. Ranges: records, out. Params (80 bytes): u32 record_size; u32 count;
 * u32 pattern_len (1..64); u32 reserved (0); u8 pattern[64]. DW0 = bytes written,
 * DW1 = matching records; out too small: Output Overflow with DW0 = bytes needed.
 *
 * Build: cc -O2 -shared -fPIC -I core/include -I spec substring_search.c -o substring_search.so
 * Use:   -device nvme,...,csd=on,csd.plugin-dir=DIR  or  emu:FILE?plugins=DIR
 */
#define _GNU_SOURCE
#include <string.h>

#include "csd_plugin.h"

struct substring_params {
    uint32_t record_size, count, pattern_len, reserved;
    uint8_t pattern[64];
};

static struct csd_program_result result(uint16_t status, uint32_t dw0, uint32_t dw1)
{
    struct csd_program_result r = {status, dw0, dw1};
    return r;
}

static struct csd_program_result run(const struct csd_program_call *call)
{
    struct substring_params p;
    const uint16_t invalid = CSD_STATUS_INVALID_PARAMETERS | CSD_STATUS_DNR;

    if (call->nr_ranges != 2)
        return result(invalid, 0, 0);
    memcpy(&p, call->params, sizeof(p));
    if (p.record_size == 0 || p.pattern_len == 0 || p.pattern_len > sizeof(p.pattern) || p.reserved)
        return result(invalid, 0, 0);
    const struct csd_span *in = &call->ranges[0], *out = &call->ranges[1];
    if ((uint64_t)p.record_size * p.count > in->len)
        return result(invalid, 0, 0);
    uint64_t written = 0;
    uint32_t hits = 0;
    for (uint32_t i = 0; i < p.count; i++) {
        if ((i & 0xFFF) == 0 && call->cancel && __atomic_load_n(call->cancel, __ATOMIC_RELAXED))
            return result(CSD_STATUS_ABORT_REQUESTED, 0, 0);
        const uint8_t *rec = in->data + (uint64_t)i * p.record_size;
        if (!memmem(rec, p.record_size, p.pattern, p.pattern_len))
            continue;
        if (written + 4 <= out->len)
            memcpy(out->data + written, &i, 4);
        written += 4;
        hits++;
    }
    if (written > out->len)
        return result(CSD_STATUS_OUTPUT_OVERFLOW | CSD_STATUS_DNR, (uint32_t)written, hits);
    return result(CSD_STATUS_SUCCESS, (uint32_t)written, hits);
}

static const struct csd_plugin plugin = {
    .abi_version = CSD_PLUGIN_ABI_VERSION,
    .id = 0x40,
    .name = "substring_search",
    .param_len = sizeof(struct substring_params),
    .zero_length_range = -1,
    .run = run,
};

const struct csd_plugin *csd_plugin_entry(void)
{
    return &plugin;
}
