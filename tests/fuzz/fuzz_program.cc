// SPDX-License-Identifier: MIT
// libFuzzer target: arbitrary bytes as downloadable program images (spec §8), through
// Program Load exactly as an embedding sends it, and arbitrary records through every
// accepted image in all three Execute modes over records, and as a chase (mode 3) over a
// namespace the target makes up from the record bytes (each block the bytes from its LBA
// times 512, cyclically). Input: u16 record size, u16 image length, the image, then record
// bytes. A crash, sanitizer report, hang, escape from the record (ASan sees SLM as one
// mapping with guard pages), a chase's read past the namespace or past its hop limit, or a
// chase reporting other hops than it read is a finding.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "csd_core_steps.h"

static csd_core *g_core;

static uint16_t load(const uint8_t *img, uint32_t len, uint32_t record_size, uint32_t *slot)
{
    const csd_cmd c{CSD_OPC_PROGRAM_LOAD, 1, csd_program_load_cdw10(0, CSD_PROGRAM_TYPE_EBPF), len, 0, len, record_size, 0};
    const csd_ctx ctx{1 << 20, 512, 0, 0};
    csd_op op;
    uint16_t st = csd_core_decode(g_core, &c, &ctx, &op);
    if (st) return st;
    st = csd_core_program_load(g_core, &op, img, slot, nullptr, 0);
    csd_core_complete(g_core, &op, st);
    return st;
}

static void unload(uint32_t slot)
{
    const csd_cmd c{CSD_OPC_PROGRAM_UNLOAD, 1, slot, 0, 0, 0, 0, 0};
    const csd_ctx ctx{1 << 20, 512, 0, 0};
    csd_op op;
    if (csd_core_decode(g_core, &c, &ctx, &op) == 0) csd_core_complete(g_core, &op, csd_core_program_unload(g_core, &op));
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!g_core) g_core = csd_core_new(1 << 20, 1);
    if (size < 4) return 0;
    const uint32_t record_size = 1 + (data[0] | data[1] << 8) % CSD_MAX_RECORD_SIZE;
    uint32_t img_len = data[2] | data[3] << 8;
    data += 4;
    size -= 4;
    if (img_len > size) img_len = static_cast<uint32_t>(size);
    if (img_len == 0) return 0;
    uint32_t slot = 0;
    if (load(data, img_len, record_size, &slot) != 0) return 0;
    // Records: the rest of the input, repeated to fill 64 of them.
    uint8_t *slm;
    csd_core_slm_range(g_core, 0, 1 << 20, &slm);
    const uint32_t count = 64;
    const size_t rest = size - img_len;
    for (size_t i = 0; i < uint64_t{count} * record_size; i++) slm[i] = rest ? data[img_len + i % rest] : 0;
    const uint64_t out = 512 << 10;
    for (uint32_t mode = CSD_BPF_FILTER; mode <= CSD_BPF_REDUCE; mode++) {
        uint8_t d[16 + 32 + 48 + 16];
        const csd_desc_range r[2] = {{0, uint64_t{count} * record_size}, {out, mode == CSD_BPF_REDUCE ? 0u : 256u << 10}};
        // params: 7, -1, INT64_MIN, 0 (a dividend and divisors DPDK's verifier once trapped on)
        const uint8_t p[48] = {count, 0, 0, 0, static_cast<uint8_t>(mode), 0, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0,
                               7, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,
                               0, 0, 0, 0, 0, 0, 0, 0x80, 0, 0, 0, 0, 0, 0, 0, 0};
        csd_desc_encode(d, static_cast<uint16_t>(slot), 2, r, p, sizeof p);
        const uint32_t len = static_cast<uint32_t>(csd_desc_size(2, sizeof p));
        csd_exec *job = nullptr;
        if (csd_core_exec_prepare(g_core, d, len, &job) == 0) {
            uint32_t dw0, dw1;
            // The model's records: at most what the input range holds; a refusal costs none.
            csd_model_work w{};
            csd_exec_model_work(job, &w);
            const uint16_t st = csd_core_exec_run(g_core, job, nullptr, &dw0, &dw1);
            if (w.records > r[0].length / record_size || (!w.compute && st == CSD_STATUS_SUCCESS)) {
                std::fprintf(stderr, "model work of %llu records over %llu bytes, run status 0x%x\n",
                             static_cast<unsigned long long>(w.records),
                             static_cast<unsigned long long>(r[0].length), st);
                std::abort();
            }
        }
    }
    // chase: from the LBA the records start with, the rest of the params as above
    {
        static constexpr uint64_t kNsLbas = 1u << 12;
        static const csd_ctx ns{kNsLbas, 512, 8u << 20, 0};
        const uint64_t bytes = uint64_t{count} * record_size;
        uint64_t start;
        std::memcpy(&start, slm, 8);
        start %= kNsLbas + 2;  // now and then past the namespace
        uint8_t d[16 + 16 + 32];
        const csd_desc_range r[1] = {{out, 16}};
        uint8_t p[32] = {CSD_BPF_MAX_HOPS, 0, 0, 0, CSD_BPF_CHASE, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0};
        std::memcpy(p + 16, &start, 8);
        std::memset(p + 24, 0xFF, 8);
        csd_desc_encode(d, static_cast<uint16_t>(slot), 1, r, p, sizeof p);
        csd_exec *job = nullptr;
        if (csd_core_exec_prepare(g_core, d, static_cast<uint32_t>(csd_desc_size(1, sizeof p)), &job) == 0) {
            csd_exec_set_namespace(job, &ns);
            csd_model_work w{};
            csd_exec_model_work(job, &w);
            const csd_extent *ext;
            uint32_t reads = 0;
            while (const uint32_t n = csd_exec_media(job, 0, nullptr, &ext)) {
                if (n != 1 || ext[0].nlb != 1 || ext[0].slba >= kNsLbas || ++reads > CSD_BPF_MAX_HOPS) {
                    std::fprintf(stderr, "chase read %u extents, LBA %llu (%u blocks), read %u\n", n,
                                 static_cast<unsigned long long>(ext[0].slba), ext[0].nlb, reads);
                    std::abort();
                }
                for (uint32_t i = 0; i < 512; i++) ext[0].buf[i] = slm[(ext[0].slba * 512 + i) % bytes];
            }
            const uint64_t finish = csd_exec_model_finish(job, 1);  // the model off: unchanged
            uint32_t dw0, dw1;
            const uint16_t st = csd_core_exec_run(g_core, job, nullptr, &dw0, &dw1);
            uint32_t hops;
            std::memcpy(&hops, slm + out + 8, 4);
            if ((st == CSD_STATUS_SUCCESS && (hops != reads || record_size > 512 || !w.compute)) ||
                (record_size > 512 && reads) || finish != 1) {
                std::fprintf(stderr, "chase: status 0x%x after %u reads, %u hops reported, record %u\n", st, reads,
                             hops, record_size);
                std::abort();
            }
        }
    }
    unload(slot);
    return 0;
}
