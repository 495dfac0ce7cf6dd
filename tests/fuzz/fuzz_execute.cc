// libFuzzer target: descriptor parsing and program execution over SLM. The input is
// split into a descriptor (first 2 bytes: its length) and bytes that seed SLM, so the
// fuzzer reaches every program with data it controls. Any crash, sanitizer report,
// out-of-SLM access (ASan sees SLM as one mapping with guard pages) or hang is a finding.
#include <sys/mman.h>

#include <cstdint>
#include <cstring>

#include "csd_core.h"

static csd_core *g_core;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!g_core) {
        g_core = csd_core_new(1 << 20, 1);
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
    csd_exec *job = nullptr;
    if (csd_core_exec_prepare(g_core, data, static_cast<uint32_t>(dlen), &job) == 0) {
        uint32_t dw0, dw1;
        csd_core_exec_run(g_core, job, &dw0, &dw1);
    }
    return 0;
}
