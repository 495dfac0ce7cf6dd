// SPDX-License-Identifier: MIT
// log_pages.cc - log pages C0h (capabilities) and C1h (statistics), spec §5.
#include <algorithm>
#include <cstring>
#include <vector>

#include "core_state.h"
#include "program.h"

namespace {

void fill_capabilities(csd_core *core, uint8_t *page)
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
    hdr.max_program_bytes = CSD_MAX_PROGRAM_BYTES;
    hdr.downloadable_slots = CSD_NR_SLOTS;
    hdr.program_types = csd::core::BpfProgram::supported() ? 1u << CSD_PROGRAM_TYPE_EBPF : 0;
    hdr.features = (core->compare_write_on ? CSD_FEATURE_COMPARE_WRITE : 0u) | CSD_FEATURE_LBA_WINDOW;
    hdr.max_chase_hops = csd::core::BpfProgram::supported() ? CSD_BPF_MAX_HOPS : 0;
    std::vector<csd_caps_entry> entries;
    auto add = [&](uint16_t id, uint8_t type, const char *name) {
        csd_caps_entry e{};
        e.id = id;
        e.type = type;
        std::strncpy(e.name, name, sizeof(e.name) - 1);
        entries.push_back(e);
    };
    for (size_t i = 0; i < n; i++) add(t[i].id, CSD_PROGRAM_DEVICE, csd_program_name(t[i].id));
    for (const csd_plugin *p : core->plugins.list()) add(p->id, CSD_PROGRAM_PLUGIN, p->name);
    for (const auto &[id, name] : core->slots.list()) add(id, CSD_PROGRAM_DOWNLOADED, name.c_str());
    const size_t room = (CSD_LOG_PAGE_SIZE - CSD_CAPS_ENTRIES_OFFSET) / sizeof(csd_caps_entry);
    if (entries.size() > room) entries.resize(room);  // what the page holds
    hdr.nr_programs = static_cast<uint32_t>(entries.size());
    std::memcpy(page, &hdr, sizeof(hdr));
    std::memcpy(page + CSD_CAPS_ENTRIES_OFFSET, entries.data(), entries.size() * sizeof(csd_caps_entry));
}

void fill_statistics(const csd_core *core, uint8_t *page)
{
    std::memcpy(page, CSD_STATS_MAGIC, 4);
    const uint32_t version = CSD_LOG_VERSION;
    std::memcpy(page + 4, &version, 4);
    uint64_t busy[5];  // the timing model's resources, in the counters' order
    core->model.busy(busy);
    for (int i = 0; i < CSD_STAT_COUNT; i++) {
        const bool modelled = i >= CSD_STAT_MODEL_LINK_IN_BUSY_NS && i <= CSD_STAT_MODEL_COMPUTE_BUSY_NS;
        const uint64_t v = modelled ? busy[i - CSD_STAT_MODEL_LINK_IN_BUSY_NS] : core->stats[i].load(std::memory_order_relaxed);
        std::memcpy(page + CSD_STATS_COUNTERS_OFFSET + 8 * i, &v, 8);
    }
    for (unsigned i = 0; i < CSD_STATS_PER_PROGRAM_COUNT; i++) {
        const uint64_t v = core->per_program[i].load(std::memory_order_relaxed);
        std::memcpy(page + CSD_STATS_PER_PROGRAM_OFFSET + 8 * i, &v, 8);
    }
}

}  // namespace

extern "C" {

int csd_core_is_log_page(uint8_t lid) { return lid == CSD_LOG_CAPABILITIES || lid == CSD_LOG_STATISTICS; }

uint16_t csd_core_get_log(csd_core *core, uint8_t lid, uint32_t nsid, uint64_t offset,
                          uint8_t page[CSD_LOG_MAX_SIZE], uint32_t *avail)
{
    *avail = 0;
    const uint32_t size = csd_log_page_size(lid);
    if (!csd_core_is_log_page(lid) || (nsid != 0 && nsid != 0xFFFFFFFFu) || offset >= size) {
        return CSD_STATUS_INVALID_FIELD | CSD_STATUS_DNR;
    }
    std::memset(page, 0, size);
    if (lid == CSD_LOG_CAPABILITIES) {
        fill_capabilities(core, page);
    } else {
        fill_statistics(core, page);
    }
    *avail = static_cast<uint32_t>(size - offset);
    return CSD_STATUS_SUCCESS;
}

}  // extern "C"
