// SPDX-License-Identifier: MIT
// controller.cc - csd_core_submit: the controller's routing of every command, once for all
// embeddings (QEMU's hw/nvme glue, libcsd's in-process device and host mode), to the
// vendor front end (vendor.cc) or the standard one (nvme_cs.cc); and what is neither's:
// the log pages, Identify, the admin commands of an embedding without its own controller,
// NVM Read / Write / Flush over the port's nvm_io, and the helpers both front ends share
// (front_end.h). Compare and Write runs in compare_write.cc, SLM Load / Store and the copies
// in transfer.cc, Execute on the compute units in exec_queue.cc.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <vector>

#include "core_state.h"
#include "front_end.h"

namespace {

constexpr uint16_t kInvalidField = CSD_STATUS_INVALID_FIELD | CSD_STATUS_DNR;
constexpr uint16_t kInvalidOpcode = CSD_STATUS_INVALID_OPCODE | CSD_STATUS_DNR;
constexpr uint16_t kInvalidNs = CSD_STATUS_INVALID_NAMESPACE | CSD_STATUS_DNR;
constexpr uint32_t kIdentifySize = 4096;
constexpr uint32_t kBroadcastNsid = 0xFFFFFFFFu;
constexpr uint8_t kOpcFlush = 0x00;

// Identify CNS values the standard front end answers for (NVMe 2.1 Base, Figure 310).
enum : uint8_t {
    kCnsNs = 0x00,
    kCnsNsDescrList = 0x03,
    kCnsCsNs = 0x05,
    kCnsCsCtrl = 0x06,
    kCnsCsNsActiveList = 0x07,
    kCnsCsIndNs = 0x08,
    kCnsNsPresent = 0x11,
    kCnsCsNsPresentList = 0x1A,
    kCnsCsNsPresent = 0x1B,
    kCnsCsIndNsAllocated = 0x1F,
};

}  // namespace

namespace csd::core {

bool is_cs_csi(uint8_t csi) { return csi == NVME_CS_CSI_SLM || csi == NVME_CS_CSI_CP; }

// What the core knows of an NVM namespace through the port (or none: Invalid Namespace),
// with the port's transfer limit.
bool ns_ctx(const csd_port *port, uint32_t nsid, csd_ctx *ctx)
{
    if (!port->ns_info || port->ns_info(port->opaque, nsid, ctx) != 0) return false;
    ctx->max_transfer = port->max_transfer;
    return true;
}

// Whether an NSID can name a namespace of this controller: 1..max_nsid (QEMU's
// nvme_nsid_valid, without the broadcast NSID FFFFFFFFh, which the callers take apart).
bool nsid_in_range(const csd_port *port, uint32_t nsid) { return nsid && nsid <= port->max_nsid; }

// The NSID of an I/O command on an NVM namespace, as QEMU's nvme_io_cmd checks it: Success
// (*ctx filled) for an attached namespace; Invalid Namespace or Format for 0, FFFFFFFFh or
// one above max_nsid; Invalid Field for an NSID in range with no namespace attached.
uint16_t nsid_status(const csd_port *port, uint32_t nsid, csd_ctx *ctx)
{
    if (ns_ctx(port, nsid, ctx)) return CSD_STATUS_SUCCESS;
    return nsid_in_range(port, nsid) ? kInvalidField : kInvalidNs;
}

// A context with only the transfer limit (commands of the memory and compute namespaces).
csd_ctx no_ns_ctx(const csd_port *port)
{
    csd_ctx ctx{};
    ctx.max_transfer = port->max_transfer;
    return ctx;
}

void set_why(csd_cpl *cpl, const char *why) { std::snprintf(cpl->why, sizeof cpl->why, "%s", why); }

// Schedules a decoded command arriving now on the modelled drive (job: an Execute's program).
void schedule(csd_core *core, const csd_port *port, const csd_op *op, csd_cpl *cpl)
{
    if (!csd_core_model_on(core)) return;
    csd_model_work w;
    csd_model_work_op(op, &w);
    if (op->job) csd_exec_model_work(op->job, &w);
    cpl->finish_ns = csd_core_model_schedule(core, &w, model_now(core, port));
}

// Program Load (vendor, or the standard Load Program: standard) of a decoded chunk.
uint16_t program_load(csd_core *core, const csd_op *op, const csd_port *port, void *req, csd_cpl *cpl, bool standard)
{
    std::vector<uint8_t> chunk(op->bytes ? op->bytes : 1);
    uint16_t st = from_host(port, req, chunk.data(), op->bytes);
    if (!st) {
        st = standard ? csd_core_cs_program_load(core, op, chunk.data(), &cpl->dw0, cpl->why, sizeof cpl->why)
                      : csd_core_program_load(core, op, chunk.data(), &cpl->dw0, cpl->why, sizeof cpl->why);
    }
    csd_core_complete(core, op, st);
    return st;
}

// Program Unload (vendor, or the standard Load Program's unload).
uint16_t program_unload(csd_core *core, const csd_op *op, bool standard)
{
    const uint16_t st = standard ? csd_core_cs_program_unload(core, op) : csd_core_program_unload(core, op);
    csd_core_complete(core, op, st);
    return st;
}

}  // namespace csd::core

using namespace csd::core;

namespace {

// Get Log Page: the command set's pages (C0h, C1h) and the standard front end's.
uint16_t get_log(csd_core *core, const csd_cmd *cmd, const csd_port *port, void *req, csd_cpl *cpl)
{
    const uint8_t lid = cmd->cdw10 & 0xFF;
    const uint64_t len = ((static_cast<uint64_t>(cmd->cdw11 & 0xFFFF) << 16 | cmd->cdw10 >> 16) + 1) * 4;
    const uint64_t off = cmd->cdw12 | static_cast<uint64_t>(cmd->cdw13) << 32;
    std::vector<uint8_t> page(std::max<uint32_t>(CSD_LOG_MAX_SIZE, NVME_CS_LOG_MAX_SIZE));
    uint32_t avail = 0;
    uint16_t st;
    if (csd_core_is_log_page(lid) && core->vendor) {
        st = csd_core_get_log(core, lid, cmd->nsid, off, page.data(), &avail);
        if (st) {
            set_why(cpl, "log page nsid or offset");
            return st;
        }
        return to_host(port, req, page.data() + off, std::min<uint64_t>(len, avail));
    }
    if (!core->cs_mem_nsid) return CSD_CORE_NOT_MINE;
    if (lid == NVME_CS_LOG_REACHABILITY_GROUPS || lid == NVME_CS_LOG_REACHABILITY_ASSOC) {
        std::vector<uint32_t> nsids;
        for (uint32_t i = 1; i <= port->max_nsid || i <= core->cs_mem_nsid + 1; i++) {
            csd_ctx ctx;
            if (ns_ctx(port, i, &ctx) || csd_core_cs_csi(core, i)) nsids.push_back(i);
        }
        st = csd_core_cs_reachability_log(lid, nsids.data(), static_cast<uint32_t>(nsids.size()), off, page.data(),
                                          NVME_CS_LOG_MAX_SIZE, &avail);
    } else if (lid == NVME_CS_LOG_PROGRAM_LIST || lid == NVME_CS_LOG_DL_PROGRAM_TYPES ||
               lid == NVME_CS_LOG_MEMORY_RANGE_SETS) {
        st = csd_core_cs_get_log(core, lid, off, page.data(), NVME_CS_LOG_MAX_SIZE, &avail);
    } else {
        return CSD_CORE_NOT_MINE;
    }
    if (st) {
        set_why(cpl, "log page offset");
        return st;
    }
    return to_host(port, req, page.data(), std::min<uint64_t>(len, avail));
}

// Identify of the standard front end's namespaces and command sets; NOT_MINE for the rest
// (the controller's and the NVM namespaces' structures, the embedding's lists).
uint16_t identify(csd_core *core, const csd_cmd *cmd, const csd_port *port, void *req)
{
    const uint8_t cns = cmd->cdw10 & 0xFF, csi = static_cast<uint8_t>(cmd->cdw11 >> 24);
    const uint8_t ns_csi = csd_core_cs_csi(core, cmd->nsid);
    uint8_t buf[kIdentifySize] = {};
    switch (cns) {
    case kCnsCsNsActiveList:
    case kCnsCsNsPresentList: {
        if (!is_cs_csi(csi)) return CSD_CORE_NOT_MINE;
        const uint32_t id = csi == NVME_CS_CSI_SLM ? core->cs_mem_nsid : core->cs_mem_nsid + 1;
        if (id > cmd->nsid && cmd->nsid < 0xFFFFFFFEu) std::memcpy(buf, &id, 4);
        break;
    }
    case kCnsNsDescrList:  // its Command Set Identifier
        if (!ns_csi) return CSD_CORE_NOT_MINE;
        buf[0] = 0x04;  // NIDT: CSI
        buf[1] = 1;     // NIDL
        buf[4] = ns_csi;
        break;
    case kCnsCsIndNs:
    case kCnsCsIndNsAllocated:  // ready: NSTAT bit 0
        if (!ns_csi) return CSD_CORE_NOT_MINE;
        buf[14] = 1;
        break;
    case kCnsNs:
    case kCnsNsPresent:  // not an NVM namespace: an empty structure
        if (!ns_csi) return CSD_CORE_NOT_MINE;
        break;
    case kCnsCsNs:
    case kCnsCsNsPresent:  // the command set's own structure: empty
        if (!ns_csi) return CSD_CORE_NOT_MINE;
        if (csi != ns_csi) return kInvalidField;
        break;
    case kCnsCsCtrl:  // Identify Controller for CSI 03h / 04h: empty
        if (!is_cs_csi(csi)) return CSD_CORE_NOT_MINE;
        break;
    default:
        return CSD_CORE_NOT_MINE;
    }
    return to_host(port, req, buf, kIdentifySize);
}

// Identify ASCII field: text, padded with spaces to len bytes.
void ascii_field(uint8_t *field, const char *text, size_t len)
{
    std::memset(field, ' ', len);
    if (text) std::memcpy(field, text, std::min(std::strlen(text), len));
}

void put16(uint8_t *at, uint16_t v) { std::memcpy(at, &v, 2); }  // little-endian hosts, as the rest
void put32(uint8_t *at, uint32_t v) { std::memcpy(at, &v, 4); }

// Identify Controller (CNS 01h) of a controller the core is whole for (port->nvm_io). The
// fields that say what the controller is and how it is spoken to hold what QEMU 10.0's
// nvme_init_ctrl answers for csd=on with its defaults (the in-process device models that
// controller): its PCI and IEEE identity, version 1.4, queue entry sizes, NN, one read-only
// firmware slot, a volatile write cache with Flush of every namespace, limits and power
// state 0. The fields of optional features hold what this controller has: none of QEMU's
// optional admin commands (OACS), asynchronous events (AERL, OAES), extended LBA formats
// (CTRATT), SMART or effects logs (LPA: extended Get Log Page data only), SGLs, or NVM
// commands besides Read, Write and Flush (ONCS, OCFS: the command sets' Copy format 4h,
// csd_core_identify_ctrl). The equivalence replay compares it with QEMU's byte for byte.
void identify_ctrl(const csd_core *core, const csd_port *port, uint8_t *id)
{
    put16(id + 0, 0x1B36);    // VID: QEMU's NVMe controller (Red Hat)
    put16(id + 2, 0x1AF4);    // SSVID: QEMU's PCI default
    ascii_field(id + 4, port->serial, 20);
    ascii_field(id + 24, port->model, 40);
    ascii_field(id + 64, "1.1", 8);  // FR: the command set's version (QEMU: its own)
    id[72] = 6;               // RAB
    id[73] = 0x00, id[74] = 0x54, id[75] = 0x52;  // IEEE OUI, QEMU's
    uint8_t mdts = 0;         // MDTS in 4 KiB pages
    while (port->max_transfer && (uint64_t{4096} << (mdts + 1)) <= port->max_transfer) mdts++;
    id[77] = port->max_transfer ? mdts : 0;
    put32(id + 80, 0x00010400);  // VER 1.4
    id[111] = 1;              // CNTRLTYPE: I/O controller
    id[258] = 3;              // ACL: four Aborts
    id[260] = 0x03;           // FRMW: one firmware slot, read-only
    id[261] = 0x04;           // LPA: extended data for Get Log Page (NUMDU, LPOL/LPOU)
    put16(id + 266, 0x157);   // WCTEMP, ~70 C
    put16(id + 268, 0x175);   // CCTEMP, ~100 C
    id[512] = 0x66;           // SQES: 64-byte entries
    id[513] = 0x44;           // CQES: 16-byte entries
    put32(id + 516, port->max_nsid);  // NN
    id[525] = 0x07;           // VWC: present; Flush of NSID FFFFFFFFh flushes every namespace
    std::snprintf(reinterpret_cast<char *>(id + 768), 256, "nqn.2019-08.org.qemu:%s", port->serial ? port->serial : "");
    put16(id + 2048, 0x9C4);  // PSD0: MP 25 W
    put32(id + 2052, 0x10);   // ENLAT
    put32(id + 2056, 0x4);    // EXLAT
    csd_core_identify_ctrl(core, id);
}

// The admin commands the core has not answered, for an embedding without a controller of
// its own (port->nvm_io): Identify of the controller, an NVM namespace, the NVM namespace
// list and the command set vector; a log page nobody has (Invalid Field); the rest refused.
uint16_t own_admin(csd_core *core, const csd_cmd *cmd, const csd_port *port, void *req)
{
    if (cmd->opcode == 0x02) return kInvalidField;
    if (cmd->opcode != 0x06) return kInvalidOpcode;
    const uint8_t cns = cmd->cdw10 & 0xFF, csi = static_cast<uint8_t>(cmd->cdw11 >> 24);
    uint8_t id[kIdentifySize] = {};
    csd_ctx ctx;
    switch (cns) {
    case 0x01:
        identify_ctrl(core, port, id);
        break;
    case 0x00:  // an NVM namespace: size, capacity and use, LBA format 0; none attached: zeros (QEMU's rules)
        if (!nsid_in_range(port, cmd->nsid)) return kInvalidNs;
        if (!ns_ctx(port, cmd->nsid, &ctx)) break;
        for (int i = 0; i < 3; i++) std::memcpy(id + 8 * i, &ctx.lba_count, 8);
        id[130] = static_cast<uint8_t>(__builtin_ctz(ctx.lba_size));
        break;
    case 0x07: {  // the active NVM namespaces above cmd->nsid (QEMU's rules: no start at FFFFFFFEh or above)
        if (cmd->nsid >= 0xFFFFFFFEu) return kInvalidNs;
        if (csi != 0) return kInvalidField;
        uint32_t n = 0;
        for (uint32_t i = cmd->nsid + 1; i <= port->max_nsid && n < kIdentifySize / 4; i++) {
            if (ns_ctx(port, i, &ctx)) std::memcpy(id + 4 * n++, &i, 4);
        }
        break;
    }
    case 0x1C:  // the I/O command set vector: NVM, and the standard front end's
        id[0] = 1;
        csd_core_cs_iocs_vector(core, id);
        break;
    default: return kInvalidField;
    }
    return to_host(port, req, id, kIdentifySize);
}

uint16_t submit(csd_core *core, const csd_sqe *sqe, const csd_port *port, void *req, csd_cpl *cpl, csd_op *op);

}  // namespace

extern "C" {

void csd_core_cs_attach(csd_core *core, uint32_t mem_nsid) { core->cs_mem_nsid = mem_nsid; }

uint8_t csd_core_cs_csi(const csd_core *core, uint32_t nsid)
{
    const uint32_t mem = core->cs_mem_nsid;
    if (!mem) return 0;
    return nsid == mem ? NVME_CS_CSI_SLM : nsid == mem + 1 ? NVME_CS_CSI_CP : 0;
}

uint32_t csd_core_cs_mem_nsid(const csd_core *core) { return core->cs_mem_nsid; }

void csd_core_read_sqe(const void *entry, int admin, struct csd_sqe *sqe)
{
    const auto *b = static_cast<const uint8_t *>(entry);
    const auto dw = [b](unsigned i) {  // little-endian, as the wire
        return uint32_t{b[4 * i]} | uint32_t{b[4 * i + 1]} << 8 | uint32_t{b[4 * i + 2]} << 16 |
               uint32_t{b[4 * i + 3]} << 24;
    };
    *sqe = csd_sqe{};
    sqe->cmd = csd_cmd{b[0], dw(1), dw(10), dw(11), dw(12), dw(13), dw(14), dw(15)};
    sqe->cdw2 = dw(2);
    sqe->cdw3 = dw(3);
    sqe->cdw4 = dw(4);
    sqe->admin = admin != 0;
    sqe->fuse = b[1] & 0x03;
}

uint16_t csd_core_submit(csd_core *core, const csd_sqe *sqe, const csd_port *port, void *req, csd_cpl *cpl, csd_op *op)
{
    const uint16_t st = submit(core, sqe, port, req, cpl, op);
    // exact mode: a command still working past its arrival may hold the port's clock at its finish
    if (st == CSD_CORE_LATER) csd_core_model_begin(core, port, req, cpl->finish_ns);
    if (!st) cpl->why[0] = '\0';  // a reason only for an error (the embedding traces it)
    else if (st != CSD_CORE_LATER && st != CSD_CORE_NOT_MINE && !cpl->why[0]) set_why(cpl, "command");
    return st;
}

}  // extern "C"

namespace {

// csd_core_submit's routing, by queue, command set and namespace.
uint16_t submit(csd_core *core, const csd_sqe *sqe, const csd_port *port, void *req, csd_cpl *cpl, csd_op *op)
{
    const csd_cmd *cmd = &sqe->cmd;
    *cpl = csd_cpl{};
    *op = csd_op{};
    if (sqe->admin) {
        uint16_t st;
        switch (cmd->opcode) {
        case 0x02: st = get_log(core, cmd, port, req, cpl); break;
        case 0x06: st = core->cs_mem_nsid ? identify(core, cmd, port, req) : CSD_CORE_NOT_MINE; break;
        default: st = core->cs_mem_nsid ? cs_admin(core, cmd, port, req, cpl) : CSD_CORE_NOT_MINE; break;
        }
        return st == CSD_CORE_NOT_MINE && port->nvm_io ? own_admin(core, cmd, port, req) : st;
    }
    if (csd_core_cs_csi(core, cmd->nsid)) return cs_io(core, sqe, port, req, cpl, op);
    const bool copy_from_memory = core->cs_mem_nsid && cmd->opcode == NVME_CS_NVM_COPY &&
                                  nvme_cs_copy_format(cmd->cdw12) == NVME_CS_COPY_FORMAT_MEMORY;
    const bool vendor = csd_is_io_opcode(cmd->opcode);
    if (!copy_from_memory && !vendor) {
        return port->nvm_io ? csd_core_nvm_submit(core, cmd, port, req, &cpl->finish_ns) : CSD_CORE_NOT_MINE;
    }
    csd_ctx ctx;
    const uint16_t st = nsid_status(port, cmd->nsid, &ctx);  // before the opcode, as QEMU's nvme_io_cmd
    if (st) return st;
    if (copy_from_memory) return cs_copy(core, cmd, port, req, cpl);  // into an NVM namespace from memory
    return vendor_io(core, cmd, ctx, port, req, cpl, op);
}

}  // namespace

extern "C" {

uint16_t csd_core_nvm_submit(csd_core *core, const csd_cmd *cmd, const csd_port *port, void *req, uint64_t *finish_ns)
{
    *finish_ns = 0;
    const bool modelled = csd_core_model_on(core);  // model off: one test
    const uint64_t arrived = modelled ? model_now(core, port) : 0;
    csd_ctx ctx{};
    uint16_t st = CSD_STATUS_SUCCESS;
    if (cmd->opcode == kOpcFlush && cmd->nsid == kBroadcastNsid) {  // every attached namespace, as QEMU's nvme_flush
        for (uint32_t i = 1; i <= port->max_nsid && !st; i++) {
            if (ns_ctx(port, i, &ctx)) st = port->nvm_io(req, i, 1, 0, 0);
        }
    } else {
        uint64_t off, len;
        st = nsid_status(port, cmd->nsid, &ctx);
        if (!st) st = csd_core_nvm_decode(cmd, &ctx, &off, &len);
        if (!st) st = port->nvm_io(req, cmd->nsid, cmd->opcode != 0x02, off, len);
    }
    if (!st && modelled) *finish_ns = csd_core_model_nvm(core, cmd, ctx.lba_size, arrived);  // refused: no media time
    return st;
}

int csd_core_read_path(const csd_core *core, const csd_cmd *cmd, int admin)
{
    if (admin || cmd->opcode != 0x02 || csd_core_cs_csi(core, cmd->nsid)) return CSD_READ_SUBMIT;
    if (!csd_core_model_on(core)) return CSD_READ_NOW;
    return csd_core_exact(core) ? CSD_READ_SUBMIT : CSD_READ_DEFERRED;
}

void csd_core_set_vendor(csd_core *core, int on) { core->vendor = on != 0; }

int csd_core_vendor(const csd_core *core) { return core->vendor ? 1 : 0; }

void csd_core_set_vendor_io(csd_core *core, int on) { core->vendor_io = on != 0; }

void csd_core_set_compare_write(csd_core *core, int on) { core->compare_write_on = on != 0; }

void csd_core_identify_ctrl(const csd_core *core, uint8_t *id)
{
    std::memcpy(id + CSD_ID_VS_OFFSET, core->vendor ? CSD_ID_SIGNATURE : "\0\0\0\0", 4);
    if (core->cs_mem_nsid) {  // NVM Copy from the memory namespace (format 4h): ONCS Copy, OCFS bit 4
        uint16_t oncs, ocfs;
        std::memcpy(&oncs, id + 520, 2);
        std::memcpy(&ocfs, id + 534, 2);
        put16(id + 520, static_cast<uint16_t>(oncs | 1u << 8));
        put16(id + 534, static_cast<uint16_t>(ocfs | 1u << NVME_CS_COPY_FORMAT_MEMORY));
    }
}

void csd_core_cs_iocs_vector(const csd_core *core, uint8_t *vector)
{
    if (core->cs_mem_nsid) vector[0] |= NVME_CS_IOCS_VEC_SLM | NVME_CS_IOCS_VEC_CP;
}

}  // extern "C"
