// SPDX-License-Identifier: MIT
// libFuzzer target: descriptor parsing and program execution over SLM. The input is
// split into a descriptor (first 2 bytes: its length) and bytes that seed SLM, so the
// fuzzer reaches every program with data it controls. Any crash, sanitizer report,
// out-of-SLM access, hang, or a write inside SLM outside the program's output range is a
// finding: SLM is compared with a shadow copy after every run, and only bytes of the
// descriptor's last range (the output range of every program of spec section 6;
// checksum has none) may have changed. Media programs read a namespace the target makes
// up, whose every planned read must lie inside it.
#include <sys/mman.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "csd_core_steps.h"

static csd_core *g_core;
static constexpr uint64_t kNsLbas = 1u << 16;  // the media programs' namespace: 32 MiB
// A watchdog cancels a program that runs longer than a second, as a controller reset
// would: long but legal inputs end with Command Abort Requested, and the cancel path
// is fuzzed too.
static int g_cancel;
static std::atomic<long> g_started_ms{-1};

static long now_ms()
{
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

static void watchdog()
{
    for (;;) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        const long s = g_started_ms.load();
        if (s >= 0 && now_ms() - s > 1000) {
            __atomic_store_n(&g_cancel, 1, __ATOMIC_RELAXED);
        }
    }
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!g_core) {
        g_core = csd_core_new(1 << 20, 1);
        std::thread(watchdog).detach();
    }
    if (size < 2) {
        return 0;
    }
    size_t dlen = (data[0] | data[1] << 8) % 4200;
    data += 2;
    size -= 2;
    if (dlen > size) {
        dlen = size;
    }
    uint8_t *slm;
    csd_core_slm_range(g_core, 0, 1 << 20, &slm);
    const size_t seed = size - dlen < (1 << 20) ? size - dlen : (1 << 20);
    std::memcpy(slm, data + dlen, seed);
    static std::vector<uint8_t> shadow(1 << 20);
    std::memcpy(shadow.data(), slm, shadow.size());
    csd_exec *job = nullptr;
    if (csd_core_exec_prepare(g_core, data, static_cast<uint32_t>(dlen), &job) == 0) {
        uint32_t dw0, dw1;
        // The timing model's cost comes from the program's own checks: work it calls
        // refused (no compute unit) must be refused by the run as well.
        // Media programs (gather, embedding_bag) read a namespace of kNsLbas blocks of 512
        // bytes: every extent the core plans must lie inside it and be whole.
        static const csd_ctx ns{kNsLbas, 512, 8u << 20, 0};
        csd_exec_set_namespace(job, &ns);
        csd_model_work w{};
        csd_exec_model_work(job, &w);
        __atomic_store_n(&g_cancel, 0, __ATOMIC_RELAXED);
        g_started_ms = now_ms();
        const csd_extent *ext;
        while (const uint32_t n = csd_exec_media(job, 0, &g_cancel, &ext)) {
            for (uint32_t i = 0; i < n; i++) {
                if (ext[i].nlb == 0 || ext[i].slba >= kNsLbas || ext[i].nlb > kNsLbas - ext[i].slba) {
                    std::fprintf(stderr, "a media read past the namespace: LBA %llu, %u blocks\n",
                                 static_cast<unsigned long long>(ext[i].slba), ext[i].nlb);
                    std::abort();
                }
                for (uint32_t b = 0; b < ext[i].nlb; b++) {  // block b holds its LBA's low byte
                    std::memset(ext[i].buf + uint64_t{b} * 512, static_cast<int>((ext[i].slba + b) & 0xFF), 512);
                }
            }
        }
        const uint16_t st = csd_core_exec_run(g_core, job, &g_cancel, &dw0, &dw1);
        g_started_ms = -1;
        if (!w.compute && st == CSD_STATUS_SUCCESS) {
            std::fprintf(stderr, "the model costed a refusal, but the run succeeded\n");
            std::abort();
        }
        // The bytes the program may have written: its last range (prepare accepted the
        // descriptor, so its header and ranges are well-formed and inside SLM).
        csd_desc_header h;
        std::memcpy(&h, data, sizeof h);
        uint64_t lo = 0, hi = 0;
        if (h.nr_ranges >= 2 && h.program_id != CSD_PROG_CHECKSUM) {
            const csd_desc_range out = csd_desc_range_get(data, h.nr_ranges - 1u);
            lo = out.offset;
            hi = out.offset + out.length;
        }
        for (size_t i = 0; i < shadow.size(); i++) {
            if (slm[i] != shadow[i] && (i < lo || i >= hi)) {
                std::fprintf(stderr, "program %u wrote SLM byte %zu outside its output range [%llu, %llu)\n",
                             h.program_id, i, static_cast<unsigned long long>(lo), static_cast<unsigned long long>(hi));
                std::abort();
            }
        }
    }
    return 0;
}
