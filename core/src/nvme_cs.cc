// SPDX-License-Identifier: MIT
// nvme_cs.cc - the standard front end: the NVMe computational storage commands in the core
// (spec/nvme_cs.h, docs/nvme-cs.md): memory range sets, program activation, and Execute
// Program translated into the vendor execute descriptor, so that both front ends run one
// program table on one memory; and their answer through the port (cs_admin, cs_io,
// cs_copy, which the controller routes to). The embedding only moves bytes.
#include <algorithm>
#include <cstring>
#include <vector>

#include "bpf/bpf.h"
#include "core_state.h"
#include "front_end.h"
#include "nvme_cs.h"
#include "program.h"

namespace csd::core {

namespace {

// Whether a program of that index exists now: built in, a loaded plug-in or a loaded slot.
bool program_exists(csd_core *core, uint16_t id)
{
    if (find_program(id) || core->plugins.find(id)) return true;
    if (!is_slot(id)) return false;
    for (const auto &p : core->slots.list()) {
        if (p.first == id) return true;
    }
    return false;
}

// Copies a built log (its first 4 bytes already hold its count) from offset into page.
uint16_t copy_log(const std::vector<uint8_t> &log, uint64_t offset, uint8_t *page, uint32_t page_size,
                  uint32_t *avail)
{
    if (offset > log.size() || offset % 4) return CSD_STATUS_INVALID_FIELD | CSD_STATUS_DNR;
    const uint64_t left = log.size() - offset;
    *avail = static_cast<uint32_t>(left);
    std::memcpy(page, log.data() + offset, left < page_size ? left : page_size);
    return CSD_STATUS_SUCCESS;
}

// A vendor SLM Load or SLM Store (spec §3 dwords) of nlb0 + 1 LBAs from slba of namespace
// nsid, at SLM byte slm_offset: what a standard copy's source range becomes.
csd_cmd slm_lba_cmd(uint8_t opcode, uint32_t nsid, uint64_t slba, uint32_t nlb0, uint64_t slm_offset)
{
    csd_cmd c{};
    c.opcode = opcode;
    c.nsid = nsid;
    c.cdw10 = static_cast<uint32_t>(slba);
    c.cdw11 = static_cast<uint32_t>(slba >> 32);
    c.cdw12 = nlb0;
    c.cdw13 = static_cast<uint32_t>(slm_offset);
    c.cdw14 = static_cast<uint32_t>(slm_offset >> 32);
    return c;
}

// Ends the parts decoded so far of a copy that failed: nothing moved.
void abandon_parts(csd_core *core, const csd_cs_copy_part *parts, uint32_t n, uint16_t status)
{
    for (uint32_t i = 0; i < n; i++) csd_core_complete(core, &parts[i].op, status);
}

// Whether program index id is active: a download slot's program as its slot says, a
// built-in or plug-in unless deactivated (they start active). Takes cs.mu for the latter.
bool program_active(csd_core *core, uint16_t id)
{
    if (is_slot(id)) return core->slots.active(id);
    if (id >= CSD_SLOT_FIRST) return false;
    std::lock_guard<std::mutex> g(core->cs.mu);
    return !core->cs.deactivated[id];
}

// The status for an index that holds no program: a download slot is empty (No Program),
// anything else is not a program index of this device.
uint16_t no_such_program(uint16_t id)
{
    return (is_slot(id) ? NVME_CS_NO_PROGRAM : NVME_CS_INVALID_PROGRAM_INDEX) | CSD_STATUS_DNR;
}

// The standard front end's status for a vendor Program Load / Unload status.
uint16_t standard_program_status(uint16_t st)
{
    switch (CSD_STATUS_CODE(st)) {
    case CSD_STATUS_INVALID_PROGRAM_IMAGE: return NVME_CS_INVALID_PROGRAM_DATA | CSD_STATUS_DNR;
    case CSD_STATUS_PROGRAM_SLOT_IN_USE: return NVME_CS_PROGRAM_IN_USE | CSD_STATUS_DNR;
    case CSD_STATUS_PROGRAM_LOAD_BYTES_EXCEEDED: return NVME_CS_MAX_PROGRAM_BYTES_EXCEEDED | CSD_STATUS_DNR;
    case CSD_STATUS_INVALID_PROGRAM: return NVME_CS_NO_PROGRAM | CSD_STATUS_DNR;
    default: return st;
    }
}

}  // namespace

void release_range_set(csd_core *core, uint16_t rsid)
{
    std::lock_guard<std::mutex> g(core->cs.mu);
    auto it = core->cs.set_users.find(rsid);
    if (it != core->cs.set_users.end() && --it->second == 0) core->cs.set_users.erase(it);
}

}  // namespace csd::core

using csd::core::CsState;

extern "C" {

uint16_t csd_core_cs_decode_mem(csd_core *core, const struct csd_cmd *cmd, const struct csd_ctx *ctx,
                                 struct csd_op *op)
{
    // Memory Read and Write have the fields of SLM Read and Write (CDW10-11 starting byte,
    // CDW12 length): the same decoder, checks and counters.
    csd_cmd vendor = *cmd;
    switch (cmd->opcode) {
    case NVME_CS_MEM_READ: vendor.opcode = CSD_OPC_SLM_READ; break;
    case NVME_CS_MEM_WRITE: vendor.opcode = CSD_OPC_SLM_WRITE; break;
    default:
        *op = csd_op{};
        op->cmd = *cmd;
        return CSD_STATUS_INVALID_OPCODE | CSD_STATUS_DNR;
    }
    return csd_core_decode(core, &vendor, ctx, op);
}

uint16_t csd_core_cs_memory_fill(csd_core *core, const struct csd_cmd *cmd)
{
    const uint64_t sb = static_cast<uint64_t>(cmd->cdw11) << 32 | cmd->cdw10;
    const uint32_t len = cmd->cdw12;
    if (len == 0 || len % NVME_CS_MEM_ALIGN || sb % NVME_CS_MEM_ALIGN) return CSD_STATUS_INVALID_FIELD | CSD_STATUS_DNR;
    uint8_t *p = nullptr;
    const uint16_t st = csd_core_slm_range(core, sb, len, &p);
    if (st) return st;
    // The pattern once, then the filled prefix copied onto what follows it, doubling: a
    // few large copies instead of one 4-byte store per dword (len is a multiple of 4).
    std::memcpy(p, &cmd->cdw13, 4);
    for (uint32_t done = 4; done < len;) {
        const uint32_t n = std::min(done, len - done);
        std::memcpy(p + done, p, n);
        done += n;
    }
    return CSD_STATUS_SUCCESS;
}

uint16_t csd_core_cs_decode_load_program(csd_core *core, const struct csd_cmd *cmd, const struct csd_ctx *ctx,
                                         struct csd_op *op)
{
    *op = csd_op{};
    op->cmd = *cmd;
    const uint16_t id = nvme_cs_load_index(cmd->cdw10);
    if (!csd::core::is_slot(id)) {
        return (id > CSD_MAX_PROGRAM_ID ? NVME_CS_INVALID_PROGRAM_INDEX : NVME_CS_PROGRAM_INDEX_NOT_DOWNLOADABLE) |
               CSD_STATUS_DNR;
    }
    csd_cmd vendor{};
    vendor.nsid = cmd->nsid;
    if (cmd->cdw10 & NVME_CS_LOAD_UNLOAD) {
        vendor.opcode = CSD_OPC_PROGRAM_UNLOAD;
        vendor.cdw10 = id;
    } else {
        if (nvme_cs_load_type(cmd->cdw10) != NVME_CS_PROGRAM_TYPE_EBPF || !csd::core::BpfProgram::supported()) {
            return NVME_CS_INVALID_PROGRAM_TYPE | CSD_STATUS_DNR;  // a type this device does not run
        }
        if (cmd->cdw11 > CSD_MAX_PROGRAM_BYTES) return NVME_CS_PROGRAM_TOO_BIG | CSD_STATUS_DNR;
        vendor.opcode = CSD_OPC_PROGRAM_LOAD;
        vendor.cdw10 = csd_program_load_cdw10(id, CSD_PROGRAM_TYPE_EBPF);
        vendor.cdw11 = cmd->cdw11;            // image size
        vendor.cdw12 = cmd->cdw15;            // chunk offset
        vendor.cdw13 = cmd->cdw14;            // chunk length
        vendor.cdw14 = cmd->cdw12 & 0xffffu;  // record size: the program identifier's low half [P]
    }
    return csd_core_decode(core, &vendor, ctx, op);
}

uint16_t csd_core_cs_program_load(csd_core *core, const struct csd_op *op, const void *chunk, uint32_t *dw0,
                                  char *why, size_t why_len)
{
    // A new program starts inactive (its slot's activation begins with it).
    const uint16_t st =
        csd::core::program_load(core, op, chunk, dw0, why, why_len, NVME_CS_MAX_PROGRAM_BYTES_HELD);
    return csd::core::standard_program_status(st);
}

uint16_t csd_core_cs_program_unload(csd_core *core, const struct csd_op *op)
{
    // Program In Use while active (deactivate first) or running; whatever comes next into
    // the index starts inactive.
    return csd::core::standard_program_status(core->slots.unload(op->cmd.cdw10 & 0xffffu, true));
}

uint16_t csd_core_cs_get_log(csd_core *core, uint8_t lid, uint64_t offset, uint8_t *page, uint32_t page_size,
                             uint32_t *avail)
{
    std::vector<uint8_t> log(8);
    auto append = [&log](const void *p, size_t n) {
        const auto *b = static_cast<const uint8_t *>(p);
        log.insert(log.end(), b, b + n);
    };
    uint32_t count = 0;
    if (lid == NVME_CS_LOG_PROGRAM_LIST) {
        auto entry = [&](uint16_t id, uint8_t kind, uint8_t type) {
            nvme_cs_program_entry e{};
            e.index = id;
            e.kind = kind;
            e.type = type;
            e.flags = csd::core::program_active(core, id) ? NVME_CS_PROGRAM_ACTIVE : 0;
            append(&e, sizeof e);
            count++;
        };
        size_t n = 0;
        const csd::core::ProgramInfo *table = csd::core::program_table(&n);
        for (size_t i = 0; i < n; i++) entry(table[i].id, NVME_CS_PROGRAM_DEVICE, 0);
        for (const csd_plugin *pl : core->plugins.list()) entry(pl->id, NVME_CS_PROGRAM_PLUGIN, 0);
        for (const auto &slot : core->slots.list()) entry(slot.first, NVME_CS_PROGRAM_DOWNLOADED, NVME_CS_PROGRAM_TYPE_EBPF);
    } else if (lid == NVME_CS_LOG_DL_PROGRAM_TYPES) {
        if (csd::core::BpfProgram::supported()) {  // none without the eBPF runtime
            const uint8_t types[] = {NVME_CS_PROGRAM_TYPE_EBPF};
            append(types, sizeof types);
            count = sizeof types;
        }
    } else if (lid == NVME_CS_LOG_MEMORY_RANGE_SETS) {
        std::lock_guard<std::mutex> g(core->cs.mu);
        for (const auto &set : core->cs.range_sets) {
            nvme_cs_range_set_entry e{};
            e.rsid = set.first;
            e.nr_ranges = static_cast<uint16_t>(set.second.size());
            append(&e, sizeof e);
            append(set.second.data(), set.second.size() * sizeof(nvme_cs_mem_range));
            count++;
        }
    } else {
        return CSD_STATUS_INVALID_FIELD | CSD_STATUS_DNR;
    }
    std::memcpy(log.data(), &count, 4);
    return csd::core::copy_log(log, offset, page, page_size, avail);
}

uint16_t csd_core_cs_reachability_log(uint8_t lid, const uint32_t *nsids, uint32_t n, uint64_t offset,
                                      uint8_t *page, uint32_t page_size, uint32_t *avail)
{
    std::vector<uint8_t> log(sizeof(nvme_cs_reach_header));
    nvme_cs_reach_header h{};
    h.entries = 1;
    std::memcpy(log.data(), &h, sizeof h);
    auto append = [&log](const void *p, size_t len) {
        const auto *b = static_cast<const uint8_t *>(p);
        log.insert(log.end(), b, b + len);
    };
    if (lid == NVME_CS_LOG_REACHABILITY_GROUPS) {
        nvme_cs_reach_group g{};
        g.rgid = NVME_CS_REACH_GROUP;
        g.nnid = n;
        append(&g, sizeof g);
        append(nsids, n * sizeof(uint32_t));
    } else if (lid == NVME_CS_LOG_REACHABILITY_ASSOC) {
        nvme_cs_reach_assoc a{};
        a.raid = NVME_CS_REACH_ASSOC;
        a.nrid = 1;
        a.rasp = 1;
        const uint32_t rgid = NVME_CS_REACH_GROUP;
        append(&a, sizeof a);
        append(&rgid, sizeof rgid);
    } else {
        return CSD_STATUS_INVALID_FIELD | CSD_STATUS_DNR;
    }
    return csd::core::copy_log(log, offset, page, page_size, avail);
}

uint16_t csd_core_cs_decode_memory_copy(csd_core *core, const struct csd_cmd *cmd, const void *descs, uint32_t len,
                                        csd_cs_ns_info info, void *opaque, struct csd_cs_copy_part *parts,
                                        uint32_t *nparts)
{
    *nparts = 0;
    const uint32_t format = nvme_cs_copy_format(cmd->cdw12);
    const uint32_t nr = nvme_cs_copy_nr(cmd->cdw12);
    const uint32_t size = nvme_cs_copy_desc_size(format);
    if (format != NVME_CS_COPY_FORMAT_2 && format != NVME_CS_COPY_FORMAT_3) {
        return NVME_CS_INCOMPATIBLE_NS_OR_FORMAT | CSD_STATUS_DNR;
    }
    if (len != nr * size) return CSD_STATUS_INVALID_FIELD | CSD_STATUS_DNR;
    uint64_t dest = static_cast<uint64_t>(cmd->cdw11) << 32 | cmd->cdw10;
    for (uint32_t i = 0; i < nr; i++) {
        nvme_cs_copy_src src;
        std::memcpy(&src, static_cast<const uint8_t *>(descs) + i * size, sizeof src);
        csd_ctx ctx{};
        if (info(opaque, src.snsid, &ctx)) {
            csd::core::abandon_parts(core, parts, i, NVME_CS_NS_NOT_REACHABLE);
            return NVME_CS_NS_NOT_REACHABLE | CSD_STATUS_DNR;
        }
        if (ctx.zoned) {  // reads that must not cross zones: SLM Load does not check them
            csd::core::abandon_parts(core, parts, i, NVME_CS_INCOMPATIBLE_NS_OR_FORMAT);
            return NVME_CS_INCOMPATIBLE_NS_OR_FORMAT | CSD_STATUS_DNR;
        }
        const csd_cmd load = csd::core::slm_lba_cmd(CSD_OPC_SLM_LOAD, src.snsid, src.slba, src.nlb, dest);
        parts[i].nsid = src.snsid;
        const uint16_t st = csd_core_decode(core, &load, &ctx, &parts[i].op);
        if (st) {
            csd::core::abandon_parts(core, parts, i, st);
            return st;
        }
        dest += parts[i].op.bytes;
    }
    *nparts = nr;
    return CSD_STATUS_SUCCESS;
}

uint16_t csd_core_cs_decode_nvm_copy(csd_core *core, uint32_t mem_nsid, const struct csd_cmd *cmd,
                                     const struct csd_ctx *ctx, const void *descs, uint32_t len,
                                     struct csd_cs_copy_part *parts, uint32_t *nparts)
{
    *nparts = 0;
    const uint32_t nr = nvme_cs_copy_nr(cmd->cdw12);
    // Another format, or a zoned namespace: SLM Store keeps no write pointer, zone state
    // or zone-bounded Copy limit, so memory is not copied into one.
    if (nvme_cs_copy_format(cmd->cdw12) != NVME_CS_COPY_FORMAT_MEMORY || ctx->zoned) {
        return NVME_CS_INCOMPATIBLE_NS_OR_FORMAT | CSD_STATUS_DNR;
    }
    if (len != nr * sizeof(nvme_cs_mem_range) || ctx->lba_size == 0) return CSD_STATUS_INVALID_FIELD | CSD_STATUS_DNR;
    uint64_t slba = static_cast<uint64_t>(cmd->cdw11) << 32 | cmd->cdw10;
    for (uint32_t i = 0; i < nr; i++) {
        nvme_cs_mem_range r;
        std::memcpy(&r, static_cast<const uint8_t *>(descs) + i * sizeof r, sizeof r);
        uint16_t st = CSD_STATUS_SUCCESS;
        if (r.nsid != mem_nsid) st = NVME_CS_INVALID_MEMORY_NS | CSD_STATUS_DNR;
        else if (r.len == 0 || r.len % ctx->lba_size || r.len / ctx->lba_size > 65536) {
            st = CSD_STATUS_INVALID_FIELD | CSD_STATUS_DNR;
        }
        if (!st) {
            const csd_cmd store =
                csd::core::slm_lba_cmd(CSD_OPC_SLM_STORE, cmd->nsid, slba, r.len / ctx->lba_size - 1, r.sb);
            parts[i].nsid = cmd->nsid;
            st = csd_core_decode(core, &store, ctx, &parts[i].op);
        }
        if (st) {
            csd::core::abandon_parts(core, parts, i, st);
            return st;
        }
        slba += parts[i].op.nlb;
    }
    *nparts = nr;
    return CSD_STATUS_SUCCESS;
}

uint16_t csd_core_cs_range_set_create(csd_core *core, uint32_t mem_nsid, uint32_t cdw11, const void *data,
                                      uint32_t len, uint16_t *rsid)
{
    const uint32_t n = cdw11 + 1;  // 0's based
    if (cdw11 >= NVME_CS_MAX_RANGES_PER_SET) return NVME_CS_MAX_MEMORY_RANGES_EXCEEDED | CSD_STATUS_DNR;
    if (len < n * sizeof(nvme_cs_mem_range)) return CSD_STATUS_INVALID_FIELD | CSD_STATUS_DNR;
    std::vector<nvme_cs_mem_range> set(n);
    std::memcpy(set.data(), data, n * sizeof(nvme_cs_mem_range));
    for (uint32_t i = 0; i < n; i++) {
        const nvme_cs_mem_range &r = set[i];
        if (r.nsid != mem_nsid) return NVME_CS_INVALID_MEMORY_NS | CSD_STATUS_DNR;
        if (r.len == 0 || r.sb > core->slm_size || r.len > core->slm_size - r.sb) {
            return NVME_CS_INVALID_MEMORY_RANGE_SET | CSD_STATUS_DNR;
        }
        for (uint32_t j = 0; j < i; j++) {
            const nvme_cs_mem_range &o = set[j];
            if (r.sb < o.sb + o.len && o.sb < r.sb + r.len) return NVME_CS_OVERLAPPING_MEMORY_RANGES | CSD_STATUS_DNR;
        }
    }
    CsState &cs = core->cs;
    std::lock_guard<std::mutex> g(cs.mu);
    if (cs.range_sets.size() >= NVME_CS_MAX_RANGE_SETS) return NVME_CS_MAX_MEMORY_RANGE_SETS_EXCEEDED | CSD_STATUS_DNR;
    uint16_t id = cs.next_rsid;
    while (id == 0 || cs.range_sets.count(id)) id++;  // at most 64 taken: ends quickly
    cs.next_rsid = static_cast<uint16_t>(id + 1);
    cs.range_sets[id] = std::move(set);
    *rsid = id;
    return CSD_STATUS_SUCCESS;
}

uint16_t csd_core_cs_range_set_delete(csd_core *core, uint16_t rsid)
{
    CsState &cs = core->cs;
    std::lock_guard<std::mutex> g(cs.mu);
    if (!cs.range_sets.count(rsid)) return NVME_CS_INVALID_MEMORY_RANGE_SET_ID | CSD_STATUS_DNR;
    if (cs.set_users.count(rsid)) return NVME_CS_MEMORY_RANGE_SET_IN_USE | CSD_STATUS_DNR;  // an Execute holds it
    cs.range_sets.erase(rsid);
    return CSD_STATUS_SUCCESS;
}

uint16_t csd_core_cs_program_activation(csd_core *core, uint32_t cdw10)
{
    const uint16_t id = nvme_cs_load_index(cdw10);
    if (id > CSD_MAX_PROGRAM_ID) return NVME_CS_INVALID_PROGRAM_INDEX | CSD_STATUS_DNR;
    const bool activate = !(cdw10 & NVME_CS_PAM_DEACTIVATE);
    if (csd::core::is_slot(id)) return core->slots.activate(id, activate, NVME_CS_MAX_ACTIVE_DOWNLOADED);
    if (!csd::core::program_exists(core, id)) return csd::core::no_such_program(id);
    std::lock_guard<std::mutex> g(core->cs.mu);
    core->cs.deactivated[id] = !activate;
    return CSD_STATUS_SUCCESS;
}

int csd_core_cs_program_active(csd_core *core, uint16_t id)
{
    return csd::core::program_active(core, id) ? 1 : 0;
}

int csd_core_cs_io_effects(uint8_t csi, uint32_t effects[256])
{
    constexpr uint32_t kSupported = NVME_CS_EFFECTS_CSUPP, kChanges = NVME_CS_EFFECTS_CSUPP | NVME_CS_EFFECTS_LBCC;
    if (csi != NVME_CS_CSI_SLM && csi != NVME_CS_CSI_CP) return -1;
    std::fill(effects, effects + 256, 0u);
    if (csi == NVME_CS_CSI_SLM) {
        effects[NVME_CS_MEM_COPY] = kChanges;   // LBAs into memory
        effects[NVME_CS_MEM_READ] = kSupported;
        effects[NVME_CS_MEM_FILL] = kChanges;
        effects[NVME_CS_MEM_WRITE] = kChanges;
    } else {
        effects[NVME_CS_EXECUTE_PROGRAM] = kChanges;  // its programs write memory ranges
    }
    return 0;
}

const uint32_t *csd_core_cs_effects(const csd_core *core, uint8_t csi)
{
    static const struct Tables {
        uint32_t mem[256], cp[256];
        Tables() { csd_core_cs_io_effects(NVME_CS_CSI_SLM, mem), csd_core_cs_io_effects(NVME_CS_CSI_CP, cp); }
    } tables;
    if (!core->cs_mem_nsid) return nullptr;
    return csi == NVME_CS_CSI_SLM ? tables.mem : csi == NVME_CS_CSI_CP ? tables.cp : nullptr;
}

uint16_t csd_core_cs_exec_prepare(csd_core *core, uint32_t mem_nsid, const struct csd_cs_exec_cmd *cmd,
                                  const void *data, uint32_t len, csd_exec **exec)
{
    *exec = nullptr;
    csd::core::count(core, CSD_STAT_EXEC_CMDS);  // as the vendor Execute's decode counts it
    const uint16_t id = nvme_cs_exec_program(cmd->cdw2);
    const uint16_t rsid = nvme_cs_exec_rsid(cmd->cdw2);
    if (nvme_cs_exec_data_len(cmd->cdw4, cmd->cdw15) != len) return CSD_STATUS_INVALID_FIELD | CSD_STATUS_DNR;
    if (id > CSD_MAX_PROGRAM_ID) return NVME_CS_INVALID_PROGRAM_INDEX | CSD_STATUS_DNR;
    if (!csd::core::program_exists(core, id)) return csd::core::no_such_program(id);
    std::vector<nvme_cs_mem_range> ranges;
    const uint8_t *params = static_cast<const uint8_t *>(data);
    uint32_t param_len = len;
    // A built-in's or plug-in's activation is checked here; a downloaded program's as its
    // slot is taken (exec_prepare), in one step with it.
    if (!csd::core::is_slot(id) && !csd::core::program_active(core, id)) {
        return NVME_CS_PROGRAM_NOT_ACTIVATED | CSD_STATUS_DNR;
    }
    {
        std::lock_guard<std::mutex> g(core->cs.mu);
        if (rsid) {
            auto it = core->cs.range_sets.find(rsid);
            if (it == core->cs.range_sets.end()) return NVME_CS_INVALID_MEMORY_RANGE_SET_ID | CSD_STATUS_DNR;
            ranges = it->second;
            if (cmd->cdw3 != ranges.size()) return CSD_STATUS_INVALID_FIELD | CSD_STATUS_DNR;
            core->cs.set_users[rsid]++;  // held until the job ends (Memory Range Set In Use)
        }
    }
    // From here a failure lets the range set go; a prepared job holds it until it ends.
    auto fail = [&](uint16_t st) {
        if (rsid) csd::core::release_range_set(core, rsid);
        return st;
    };
    if (!rsid) {  // inline ranges, first in the data
        if (cmd->cdw3 > NVME_CS_MAX_RANGES_PER_SET) return NVME_CS_MAX_MEMORY_RANGES_EXCEEDED | CSD_STATUS_DNR;
        const uint32_t bytes = cmd->cdw3 * static_cast<uint32_t>(sizeof(nvme_cs_mem_range));
        if (len < bytes) return CSD_STATUS_INVALID_FIELD | CSD_STATUS_DNR;
        ranges.resize(cmd->cdw3);
        if (bytes) std::memcpy(ranges.data(), data, bytes);
        for (const nvme_cs_mem_range &r : ranges) {
            if (r.nsid != mem_nsid) return NVME_CS_INVALID_MEMORY_NS | CSD_STATUS_DNR;
        }
        if (bytes) params += bytes;
        param_len -= bytes;
    }
    // The vendor descriptor of the same call: its checks (ranges inside SLM, parameters)
    // and its job are the ones the vendor Execute has.
    const uint64_t desc_len = csd_desc_size(static_cast<uint32_t>(ranges.size()), param_len);
    if (desc_len > CSD_MAX_DESC_LEN) return fail(CSD_STATUS_INVALID_FIELD | CSD_STATUS_DNR);
    std::vector<csd_desc_range> vendor_ranges;
    for (const nvme_cs_mem_range &r : ranges) vendor_ranges.push_back({r.sb, r.len});
    std::vector<uint8_t> desc(desc_len);
    csd_desc_encode(desc.data(), id, static_cast<uint16_t>(ranges.size()), vendor_ranges.data(), params, param_len);
    const uint16_t st = csd::core::exec_prepare(core, desc.data(), static_cast<uint32_t>(desc_len), exec, true);
    if (st) {
        if (CSD_STATUS_CODE(st) == CSD_STATUS_SLM_OUT_OF_BOUNDS) return fail(NVME_CS_INVALID_MEMORY_RANGE_SET | CSD_STATUS_DNR);
        if (CSD_STATUS_CODE(st) == CSD_STATUS_INVALID_PROGRAM) return fail(csd::core::no_such_program(id));
        return fail(st);
    }
    if (rsid) csd::core::exec_hold_range_set(*exec, rsid);
    return CSD_STATUS_SUCCESS;
}

}  // extern "C"

namespace csd::core {

namespace {

constexpr uint16_t kInvalidField = CSD_STATUS_INVALID_FIELD | CSD_STATUS_DNR;
constexpr uint16_t kInvalidOpcode = CSD_STATUS_INVALID_OPCODE | CSD_STATUS_DNR;

}  // namespace

// Memory Range Set Management: create (the ranges come in, the RSID in DW0) or delete.
uint16_t range_sets(csd_core *core, const csd_cmd *cmd, const csd_port *port, void *req, csd_cpl *cpl)
{
    switch (cmd->cdw10 & 0xF) {
    case NVME_CS_MRSM_DELETE: return csd_core_cs_range_set_delete(core, static_cast<uint16_t>(cmd->cdw10 >> 16));
    case NVME_CS_MRSM_CREATE: {
        std::vector<uint8_t> ranges;
        if (cmd->cdw11 < NVME_CS_MAX_RANGES_PER_SET) {  // else the core refuses it unread
            ranges.resize((cmd->cdw11 + 1) * sizeof(nvme_cs_mem_range));
            const uint16_t st = from_host(port, req, ranges.data(), ranges.size());
            if (st) return st;
        }
        uint16_t rsid = 0;
        const uint16_t st = csd_core_cs_range_set_create(core, core->cs_mem_nsid, cmd->cdw11, ranges.data(),
                                                         static_cast<uint32_t>(ranges.size()), &rsid);
        cpl->dw0 = rsid;
        return st;
    }
    default: return kInvalidField;
    }
}

// The standard front end's admin commands (Load Program, activation, range sets).
uint16_t cs_admin(csd_core *core, const csd_cmd *cmd, const csd_port *port, void *req, csd_cpl *cpl)
{
    switch (cmd->opcode) {
    case NVME_CS_ADM_LOAD_PROGRAM: {
        const csd_ctx ctx = no_ns_ctx(port);
        csd_op op;
        const uint16_t st = csd_core_cs_decode_load_program(core, cmd, &ctx, &op);
        if (st) {
            set_why(cpl, "load program");
            return st;
        }
        return op.opcode == CSD_OPC_PROGRAM_UNLOAD ? program_unload(core, &op, true)
                                                   : program_load(core, &op, port, req, cpl, true);
    }
    case NVME_CS_ADM_PROGRAM_ACTIVATION: return csd_core_cs_program_activation(core, cmd->cdw10);
    case NVME_CS_ADM_MEMORY_RANGE_SET: return range_sets(core, cmd, port, req, cpl);
    default: return CSD_CORE_NOT_MINE;
    }
}

// Execute Program of the compute namespace: the ranges and parameters come in, the job is
// the embedding's to run.
uint16_t cs_execute(csd_core *core, const csd_sqe *sqe, const csd_port *port, void *req, csd_cpl *cpl, csd_op *op)
{
    const csd_cmd *cmd = &sqe->cmd;
    const csd_cs_exec_cmd x{sqe->cdw2, sqe->cdw3, sqe->cdw4, cmd->cdw15};
    const uint32_t len = nvme_cs_exec_data_len(x.cdw4, x.cdw15);
    *op = csd_op{};
    op->opcode = CSD_OPC_EXECUTE;
    op->cmd = *cmd;
    op->bytes = len;
    // inline ranges and a descriptor's worth of parameters at most
    if (len > NVME_CS_MAX_RANGES_PER_SET * sizeof(nvme_cs_mem_range) + CSD_MAX_DESC_LEN) return kInvalidField;
    std::vector<uint8_t> data(len ? len : 1);
    uint16_t st = from_host(port, req, data.data(), len);
    if (st) return st;
    st = csd_core_cs_exec_prepare(core, core->cs_mem_nsid, &x, data.data(), len, &op->job);
    if (st) {
        set_why(cpl, "execute program");
        csd_core_complete(core, op, st);
        return st;
    }
    schedule(core, port, op, cpl);
    cpl->program = csd_exec_program_id(op->job);
    return csd::core::execute(core, op, nullptr, port, req, cpl);
}

// Memory Copy (of the memory namespace) or NVM Copy format 4h (of an NVM namespace): the
// source descriptors come in, the core makes them SLM Loads / Stores and moves them.
uint16_t cs_copy(csd_core *core, const csd_cmd *cmd, const csd_port *port, void *req, csd_cpl *cpl)
{
    const uint32_t size = nvme_cs_copy_desc_size(nvme_cs_copy_format(cmd->cdw12));
    if (!size) return NVME_CS_INCOMPATIBLE_NS_OR_FORMAT | CSD_STATUS_DNR;
    std::vector<uint8_t> descs(nvme_cs_copy_nr(cmd->cdw12) * size);
    uint16_t st = from_host(port, req, descs.data(), descs.size());
    if (st) return st;
    std::vector<csd_cs_copy_part> parts(NVME_CS_MAX_COPY_RANGES);
    uint32_t n = 0;
    const uint32_t len = static_cast<uint32_t>(descs.size());
    if (cmd->nsid == core->cs_mem_nsid) {
        st = csd_core_cs_decode_memory_copy(core, cmd, descs.data(), len, port->ns_info, port->opaque, parts.data(),
                                            &n);
    } else {
        csd_ctx ctx;
        st = nsid_status(port, cmd->nsid, &ctx);
        if (st) return st;
        st = csd_core_cs_decode_nvm_copy(core, core->cs_mem_nsid, cmd, &ctx, descs.data(), len, parts.data(), &n);
    }
    if (st) {
        set_why(cpl, "copy");
        return st;
    }
    csd_op total{};
    total.opcode = parts[0].op.opcode;
    for (uint32_t i = 0; i < n; i++) total.bytes += parts[i].op.bytes;
    schedule(core, port, &total, cpl);
    return csd::core::transfer(core, parts.data(), n, port, req, cpl);
}

// I/O commands of the memory and compute namespaces.
uint16_t cs_io(csd_core *core, const csd_sqe *sqe, const csd_port *port, void *req, csd_cpl *cpl, csd_op *op)
{
    const csd_cmd *cmd = &sqe->cmd;
    if (sqe->fuse) return CSD_STATUS_INVALID_FIELD;  // neither command set has fused operations
    if (cmd->nsid != core->cs_mem_nsid) {
        return cmd->opcode == NVME_CS_EXECUTE_PROGRAM ? cs_execute(core, sqe, port, req, cpl, op) : kInvalidOpcode;
    }
    switch (cmd->opcode) {
    case NVME_CS_MEM_READ:
    case NVME_CS_MEM_WRITE: {  // decoded as SLM Read / Write: they move the same way
        const csd_ctx ctx = no_ns_ctx(port);
        uint16_t st = csd_core_cs_decode_mem(core, cmd, &ctx, op);
        if (st) {
            set_why(cpl, "memory command");
            return st;
        }
        schedule(core, port, op, cpl);
        return slm_xfer(core, op, port, req, cpl);
    }
    case NVME_CS_MEM_FILL: return csd_core_cs_memory_fill(core, cmd);
    case NVME_CS_MEM_COPY: return cs_copy(core, cmd, port, req, cpl);
    default: return kInvalidOpcode;
    }
}

}  // namespace csd::core
