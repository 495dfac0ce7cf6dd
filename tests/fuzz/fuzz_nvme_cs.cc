// SPDX-License-Identifier: MIT
// libFuzzer target: the standard front end's decoders in the core (nvme_cs.cc) — memory
// range sets, program activation, Execute Program's translation, Memory Read/Write/Fill,
// Load Program, Memory Copy and NVM Copy from memory, the log pages —
// driven by a stream of commands the fuzzer writes. Each command: 1 byte kind, then its
// dwords and data from the input. Any crash or sanitizer report is a finding, and so is a
// broken invariant: a prepared job exists exactly when the status is success, an error
// carries DNR, the range-set table never holds more than its limit, Memory Fill writes
// only its own bytes (SLM compared with a shadow copy), decoded SLM spans lie inside SLM,
// a copy's parts are contiguous (in memory or in LBAs) and inside the namespace, and a
// refused copy leaves no part behind.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "csd_core_steps.h"
#include "nvme_cs.h"

namespace {

constexpr uint64_t kSlm = 64 << 10;  // small: every input makes its own core
constexpr uint32_t kMemNsid = 2;

struct Reader {
    const uint8_t *p;
    size_t n;
    uint32_t u32()
    {
        uint32_t v = 0;
        const size_t k = n < 4 ? n : 4;
        std::memcpy(&v, p, k);
        p += k;
        n -= k;
        return v;
    }
    std::vector<uint8_t> bytes(size_t want)
    {
        const size_t k = want < n ? want : n;
        std::vector<uint8_t> v(p, p + k);
        p += k;
        n -= k;
        return v;
    }
};

void check(bool ok, const char *what)
{
    if (!ok) {
        std::fprintf(stderr, "invariant broken: %s\n", what);
        std::abort();
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    csd_core *core = csd_core_new(kSlm, 1);
    Reader in{data, size};
    std::vector<uint16_t> sets;
    uint8_t *slm = nullptr;
    csd_core_slm_range(core, 0, kSlm, &slm);
    for (int steps = 0; in.n > 0 && steps < 64; steps++) {
        const uint8_t kind = in.bytes(1)[0] % 10;
        if (kind == 0) {  // Memory Range Set Management, create
            const uint32_t cdw11 = in.u32() % 24;
            uint32_t nsid_mix = in.u32();
            auto d = in.bytes((cdw11 + 1) * sizeof(nvme_cs_mem_range));
            for (size_t off = 0; off + 4 <= d.size(); off += sizeof(nvme_cs_mem_range)) {
                if (nsid_mix & 1) std::memcpy(&d[off], &kMemNsid, 4);  // mostly the right namespace
                nsid_mix >>= 1;
            }
            uint16_t rsid = 0;
            const uint16_t st = csd_core_cs_range_set_create(core, kMemNsid, cdw11, d.data(),
                                                             static_cast<uint32_t>(d.size()), &rsid);
            check(st == 0 ? rsid != 0 : (st & CSD_STATUS_DNR) != 0, "range set create status");
            if (st == 0) sets.push_back(rsid);
            check(sets.size() <= NVME_CS_MAX_RANGE_SETS, "range set limit");
        } else if (kind == 1) {  // delete
            const uint32_t v = in.u32();
            const uint16_t rsid = (v & 0x10000) && !sets.empty() ? sets[v % sets.size()] : static_cast<uint16_t>(v);
            if (csd_core_cs_range_set_delete(core, rsid) == 0) {
                for (size_t i = 0; i < sets.size(); i++) {
                    if (sets[i] == rsid) sets.erase(sets.begin() + static_cast<long>(i--));
                }
            }
        } else if (kind == 2) {  // Program Activation Management
            const uint16_t st = csd_core_cs_program_activation(core, in.u32());
            check(st == 0 || (st & CSD_STATUS_DNR), "activation status");
        } else if (kind == 3) {  // Execute Program: prepared, not run (fuzz_execute runs programs)
            csd_cs_exec_cmd cmd{in.u32(), in.u32() % 20, 0, 0};
            if ((cmd.cdw2 & 0x80000000u) && !sets.empty()) {  // often a live range set
                cmd.cdw2 = (cmd.cdw2 & 0xffffu) | static_cast<uint32_t>(sets[cmd.cdw2 % sets.size()]) << 16;
            }
            auto d = in.bytes(in.u32() % 1024);
            if (in.u32() & 1) cmd.cdw4 = static_cast<uint32_t>(d.size());
            else cmd.cdw15 = static_cast<uint32_t>(d.size());
            csd_exec *job = nullptr;
            const uint16_t st = csd_core_cs_exec_prepare(core, kMemNsid, &cmd, d.data(),
                                                         static_cast<uint32_t>(d.size()), &job);
            check((st == 0) == (job != nullptr), "a job exactly on success");
            check(st == 0 || (st & CSD_STATUS_DNR), "exec prepare status");
            if (job) csd_core_exec_discard(job);
        } else if (kind == 4) {  // Memory Fill, checked against a shadow copy
            csd_cmd c{NVME_CS_MEM_FILL, kMemNsid, static_cast<uint32_t>(in.u32() % (kSlm + 64)), 0,
                      static_cast<uint32_t>(in.u32() % (kSlm / 2)), in.u32(), 0, 0};
            std::vector<uint8_t> before(slm, slm + kSlm);
            if (csd_core_cs_memory_fill(core, &c) == 0) {
                for (uint64_t i = 0; i < kSlm; i++) {
                    if (i >= c.cdw10 && i < uint64_t{c.cdw10} + c.cdw12) {
                        check(slm[i] == static_cast<uint8_t>(c.cdw13 >> (8 * ((i - c.cdw10) % 4))), "fill pattern");
                    } else {
                        check(slm[i] == before[i], "fill wrote outside its range");
                    }
                }
            } else {
                check(std::memcmp(before.data(), slm, kSlm) == 0, "a refused fill wrote");
            }
        } else if (kind == 7) {  // log pages 82h, 83h, 84h from an offset into a short buffer
            static const uint8_t lids[] = {NVME_CS_LOG_PROGRAM_LIST, NVME_CS_LOG_DL_PROGRAM_TYPES,
                                           NVME_CS_LOG_MEMORY_RANGE_SETS, 0x1A, 0x1B, 0xC0};
            const uint32_t v = in.u32();
            std::vector<uint8_t> page(in.u32() % 512 + 1, 0xEE);
            uint32_t avail = 0;
            const uint32_t nsids[] = {1, 2, 3};
            const uint8_t lid = lids[v % 6];
            const uint16_t st =
                lid == NVME_CS_LOG_REACHABILITY_GROUPS || lid == NVME_CS_LOG_REACHABILITY_ASSOC
                    ? csd_core_cs_reachability_log(lid, nsids, 3, (v >> 3) % 256, page.data(),
                                                   static_cast<uint32_t>(page.size()), &avail)
                    : csd_core_cs_get_log(core, lid, (v >> 3) % 2048, page.data(), static_cast<uint32_t>(page.size()),
                                          &avail);
            check(st == 0 || (st & CSD_STATUS_DNR), "log status");
            check(st != 0 || avail <= NVME_CS_LOG_MAX_SIZE, "log size");
        } else if (kind == 8 || kind == 9) {  // Memory Copy / NVM Copy format 4h decode
            static constexpr csd_ctx kNs{4096, 512, 1 << 20, 0};  // NSID 1
            auto info = [](void *, uint32_t nsid, csd_ctx *ctx) {
                if (nsid != 1) return -1;
                *ctx = kNs;
                return 0;
            };
            const uint32_t cdw12 = in.u32() % 4 | (in.u32() % 6) << 8;  // up to 4 ranges, formats 0-5
            csd_cmd c{static_cast<uint8_t>(kind == 8 ? NVME_CS_MEM_COPY : NVME_CS_NVM_COPY), kind == 8 ? kMemNsid : 1,
                      static_cast<uint32_t>(in.u32() % (kSlm + 4096)), in.u32() % 2 ? 0 : in.u32(), cdw12, 0, 0, 0};
            auto d = in.bytes(in.u32() % 200);
            uint32_t nsid_mix = in.u32();
            const uint32_t size = nvme_cs_copy_desc_size(nvme_cs_copy_format(cdw12));
            for (size_t off = 0; size && off + 4 <= d.size(); off += size) {  // mostly a namespace that exists
                const uint32_t good = kind == 8 ? 1 : kMemNsid;
                if (nsid_mix & 1) std::memcpy(&d[off], &good, 4);
                nsid_mix >>= 1;
            }
            std::vector<csd_cs_copy_part> parts(NVME_CS_MAX_COPY_RANGES);
            uint32_t n = 0;
            const uint16_t st =
                kind == 8 ? csd_core_cs_decode_memory_copy(core, &c, d.data(), static_cast<uint32_t>(d.size()), info,
                                                           nullptr, parts.data(), &n)
                          : csd_core_cs_decode_nvm_copy(core, kMemNsid, &c, &kNs, d.data(),
                                                        static_cast<uint32_t>(d.size()), parts.data(), &n);
            check(st == 0 || (st & CSD_STATUS_DNR), "copy status");
            check(st == 0 ? n == nvme_cs_copy_nr(cdw12) : n == 0, "parts exactly on success");
            for (uint32_t i = 0; i < n; i++) {
                const csd_op &op = parts[i].op;
                check(op.slm >= slm && op.bytes <= kSlm && op.slm + op.bytes <= slm + kSlm, "copy span inside SLM");
                check(op.slba <= kNs.lba_count && op.nlb <= kNs.lba_count - op.slba, "copy LBAs inside the namespace");
                check(op.bytes == uint64_t{op.nlb} * kNs.lba_size, "bytes are the LBAs'");
                if (i > 0 && kind == 8) check(op.slm_offset == parts[i - 1].op.slm_offset + parts[i - 1].op.bytes, "memory contiguous");
                if (i > 0 && kind == 9) check(op.slba == parts[i - 1].op.slba + parts[i - 1].op.nlb, "LBAs contiguous");
                csd_core_complete(core, &op, 0);
            }
        } else if (kind == 6) {  // Load Program decode (the chunk itself is fuzz_program's)
            csd_cmd c{NVME_CS_ADM_LOAD_PROGRAM, 0, in.u32(), in.u32(), in.u32(), in.u32(), in.u32(), in.u32()};
            csd_ctx ctx{1 << 16, 512, 1 << 20, 0};
            csd_op op;
            const uint16_t st = csd_core_cs_decode_load_program(core, &c, &ctx, &op);
            check(st == 0 || (st & CSD_STATUS_DNR), "load program status");
            check(st != 0 || op.bytes <= CSD_MAX_PROGRAM_BYTES, "chunk inside the image limit");
        } else {  // Memory Read / Write decode
            csd_cmd c{static_cast<uint8_t>(in.u32() & 1 ? NVME_CS_MEM_READ : NVME_CS_MEM_WRITE), kMemNsid,
                      in.u32(), in.u32() % 4, in.u32(), 0, 0, 0};
            csd_ctx ctx{1 << 16, 512, 1 << 20, 0};
            csd_op op;
            if (csd_core_cs_decode_mem(core, &c, &ctx, &op) == 0) {
                check(op.slm >= slm && op.bytes <= kSlm && op.slm + op.bytes <= slm + kSlm, "span inside SLM");
            }
        }
    }
    csd_core_free(core);
    return 0;
}
