// SPDX-License-Identifier: MIT
// core.cc - the device core object: creation, SLM and its bounds.
#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>
#include <new>

#include "core_state.h"

extern "C" {

csd_core *csd_core_new(uint64_t slm_size, uint32_t compute_units)
{
    if (slm_size == 0 || compute_units == 0) {
        errno = EINVAL;
        return nullptr;
    }
    auto *core = new (std::nothrow) csd_core;
    if (!core) {
        errno = ENOMEM;
        return nullptr;
    }
    // Anonymous memory: zero-filled, and only pages that are touched cost RAM.
    void *mem = mmap(nullptr, slm_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (mem == MAP_FAILED) {
        delete core;
        errno = ENOMEM;
        return nullptr;
    }
    core->slm = static_cast<uint8_t *>(mem);
    core->slm_size = slm_size;
    core->compute_units = compute_units;
    return core;
}

void csd_core_free(csd_core *core)
{
    if (core) {
        munmap(core->slm, core->slm_size);
        delete core;
    }
}

int csd_core_load_plugins(csd_core *core, const char *dir, char *err, size_t err_len)
{
    std::string why;
    if (core->plugins.load_dir(dir, &why)) return 0;
    if (err && err_len) {
        const size_t n = std::min(why.size(), err_len - 1);
        std::memcpy(err, why.data(), n);
        err[n] = 0;
    }
    return -1;
}

uint64_t csd_core_slm_size(const csd_core *core) { return core->slm_size; }

uint8_t *csd_core_slm_base(csd_core *core) { return core->slm; }

uint16_t csd_core_slm_range(csd_core *core, uint64_t offset, uint64_t length, uint8_t **ptr)
{
    if (offset > core->slm_size || length > core->slm_size - offset) {
        return CSD_STATUS_SLM_OUT_OF_BOUNDS | CSD_STATUS_DNR;
    }
    *ptr = core->slm + offset;
    return CSD_STATUS_SUCCESS;
}

}  // extern "C"
