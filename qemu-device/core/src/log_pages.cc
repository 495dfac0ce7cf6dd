// log_pages.cc - log pages C0h (capabilities) and C1h (statistics), spec §5.
#include <algorithm>
#include <cstring>

#include "core_state.h"
#include "program.h"

namespace {

void fill_capabilities(const csd_core *core, uint8_t *page)
{
    size_t n;
    const csd::core::ProgramInfo *t = csd::core::program_table(&n);
    csd_caps_log hdr{};
    std::memcpy(hdr.magic, CSD_CAPS_MAGIC, 4);
    hdr.version = CSD_LOG_VERSION;
    hdr.slm_size = core->slm_size;
    hdr.compute_units = core->compute_units;
    hdr.max_desc_len = CSD_MAX_DESC_LEN;
    hdr.max_ranges = CSD_MAX_RANGES;
    hdr.nr_programs = static_cast<uint32_t>(n);
    std::memcpy(page, &hdr, sizeof(hdr));
    for (size_t i = 0; i < n; i++) {
        csd_caps_entry e{};
        e.id = t[i].id;
        e.type = 0;
        std::strncpy(e.name, csd_program_name(t[i].id), sizeof(e.name) - 1);
        std::memcpy(page + CSD_CAPS_ENTRIES_OFFSET + i * sizeof(e), &e, sizeof(e));
    }
}

void fill_statistics(const csd_core *core, uint8_t *page)
{
    std::memcpy(page, CSD_STATS_MAGIC, 4);
    const uint32_t version = CSD_LOG_VERSION;
    std::memcpy(page + 4, &version, 4);
    for (int i = 0; i < CSD_STAT_COUNT; i++) {
        const uint64_t v = core->stats[i].load(std::memory_order_relaxed);
        std::memcpy(page + CSD_STATS_COUNTERS_OFFSET + 8 * i, &v, 8);
    }
    for (int i = 0; i < 256; i++) {
        const uint64_t v = core->per_program[i].load(std::memory_order_relaxed);
        std::memcpy(page + CSD_STATS_PER_PROGRAM_OFFSET + 8 * i, &v, 8);
    }
}

}  // namespace

extern "C" {

int csd_core_is_log_page(uint8_t lid) { return lid == CSD_LOG_CAPABILITIES || lid == CSD_LOG_STATISTICS; }

uint16_t csd_core_get_log(const csd_core *core, uint8_t lid, uint32_t nsid, uint64_t offset,
                          uint8_t page[CSD_LOG_PAGE_SIZE], uint32_t *avail)
{
    *avail = 0;
    if (!csd_core_is_log_page(lid) || (nsid != 0 && nsid != 0xFFFFFFFFu) || offset >= CSD_LOG_PAGE_SIZE) {
        return CSD_STATUS_INVALID_FIELD | CSD_STATUS_DNR;
    }
    std::memset(page, 0, CSD_LOG_PAGE_SIZE);
    if (lid == CSD_LOG_CAPABILITIES) {
        fill_capabilities(core, page);
    } else {
        fill_statistics(core, page);
    }
    *avail = static_cast<uint32_t>(CSD_LOG_PAGE_SIZE - offset);
    return CSD_STATUS_SUCCESS;
}

}  // extern "C"
