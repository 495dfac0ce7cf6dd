// SPDX-License-Identifier: MIT
// vendor.cc - the vendor front end (spec/csd-command-set.md): decoding, validation and
// statistics of the CSD I/O commands (spec §3; every embedding hands the command dwords
// here and only moves the bytes it is told to), and their answer (vendor_io): SLM
// transfers, program load and unload, Execute, Compare and Write, SLM Load / Store.
#include <cstring>
#include <string>

#include "core_state.h"
#include "front_end.h"

using csd::core::count;

namespace {

constexpr uint16_t kInvalidField = CSD_STATUS_INVALID_FIELD | CSD_STATUS_DNR;

uint64_t dwords64(uint32_t lo, uint32_t hi) { return lo | static_cast<uint64_t>(hi) << 32; }

bool exceeds_mdts(const csd_ctx *ctx, uint64_t bytes) { return ctx->max_transfer && bytes > ctx->max_transfer; }

// Whether nlb LBAs from slba lie inside the namespace (no overflow).
bool lbas_inside(const csd_ctx *ctx, uint64_t slba, uint64_t nlb)
{
    return slba <= ctx->lba_count && nlb <= ctx->lba_count - slba;
}

// SLM Load / SLM Store: CDW10-11 SLBA, CDW12 bits 15:0 NLB (0's based), CDW13-14 SLM offset.
uint16_t decode_load_store(csd_core *core, const csd_cmd *c, const csd_ctx *ctx, csd_op *op)
{
    count(core, c->opcode == CSD_OPC_SLM_STORE ? CSD_STAT_SLM_STORE_CMDS : CSD_STAT_SLM_LOAD_CMDS);
    op->slba = dwords64(c->cdw10, c->cdw11);
    op->nlb = (c->cdw12 & 0xFFFF) + 1;
    op->slm_offset = dwords64(c->cdw13, c->cdw14);
    op->bytes = uint64_t{op->nlb} * ctx->lba_size;
    if (!lbas_inside(ctx, op->slba, op->nlb)) return CSD_STATUS_LBA_OUT_OF_RANGE | CSD_STATUS_DNR;
    return csd_core_slm_range(core, op->slm_offset, op->bytes, &op->slm);
}

// SLM Write / SLM Read: CDW10-11 SLM offset, CDW12 length; both multiples of 4, length
// not zero, within MDTS.
uint16_t decode_slm_xfer(csd_core *core, const csd_cmd *c, const csd_ctx *ctx, csd_op *op)
{
    count(core, c->opcode == CSD_OPC_SLM_WRITE ? CSD_STAT_SLM_WRITE_CMDS : CSD_STAT_SLM_READ_CMDS);
    op->slm_offset = dwords64(c->cdw10, c->cdw11);
    op->bytes = c->cdw12;
    if (op->bytes == 0 || op->bytes % 4 != 0 || op->slm_offset % 4 != 0 || exceeds_mdts(ctx, op->bytes)) {
        return kInvalidField;
    }
    return csd_core_slm_range(core, op->slm_offset, op->bytes, &op->slm);
}

// Execute: CDW10 the descriptor's length, 1..max_desc_len and within MDTS.
uint16_t decode_execute(csd_core *core, const csd_cmd *c, const csd_ctx *ctx, csd_op *op)
{
    count(core, CSD_STAT_EXEC_CMDS);
    op->bytes = c->cdw10;
    if (op->bytes == 0 || op->bytes > CSD_MAX_DESC_LEN || exceeds_mdts(ctx, op->bytes)) {
        count(core, CSD_STAT_EXEC_ERRORS);
        return kInvalidField;
    }
    // The LBA window (1.3): what the program may read of the namespace, relative to its start.
    op->window_lba = 0;
    op->window_lbas = ctx->lba_count;
    if (c->cdw11 & CSD_EXEC_LBA_WINDOW) {
        op->window_lba = dwords64(c->cdw12, c->cdw13);
        op->window_lbas = dwords64(c->cdw14, c->cdw15);
        if (op->window_lbas == 0) {
            count(core, CSD_STAT_EXEC_ERRORS);
            return kInvalidField;
        }
        if (!lbas_inside(ctx, op->window_lba, op->window_lbas)) {
            count(core, CSD_STAT_EXEC_ERRORS);
            return CSD_STATUS_LBA_OUT_OF_RANGE | CSD_STATUS_DNR;
        }
    }
    return CSD_STATUS_SUCCESS;
}

// Program Load: CDW10 slot (0 or 0100h..01FFh) and type (eBPF); CDW11 image size
// (1..max_program_bytes); CDW12 chunk offset; CDW13 chunk length (the data, > 0, inside
// the image, within MDTS); CDW14 record size (1..4096). Slot state is the core's to check
// once the chunk arrived (csd_core_program_load).
uint16_t decode_program_load(csd_core *core, const csd_cmd *c, const csd_ctx *ctx, csd_op *op)
{
    count(core, CSD_STAT_PROGRAM_LOAD_CMDS);
    const uint32_t slot = c->cdw10 & 0xFFFF, type = (c->cdw10 >> 16) & 0xFF;
    const uint32_t size = c->cdw11, offset = c->cdw12, len = c->cdw13, record_size = c->cdw14 & 0xFFFF;
    op->bytes = len;
    if ((slot != 0 && !csd::core::is_slot(slot)) ||
        type != CSD_PROGRAM_TYPE_EBPF || !csd::core::BpfProgram::supported() || size == 0 || size > CSD_MAX_PROGRAM_BYTES || len == 0 ||
        offset > size || len > size - offset || record_size == 0 || record_size > CSD_MAX_RECORD_SIZE ||
        exceeds_mdts(ctx, len)) {
        return kInvalidField;
    }
    return CSD_STATUS_SUCCESS;
}

// Compare and Write: CDW10-11 SLBA, CDW12 bits 15:0 NLB (0's based); the data is the
// expected then the new contents, so twice the range, which is at most CSD_CAW_MAX_BYTES.
uint16_t decode_compare_write(const csd_cmd *c, const csd_ctx *ctx, csd_op *op)
{
    op->slba = dwords64(c->cdw10, c->cdw11);
    op->nlb = (c->cdw12 & 0xFFFF) + 1;
    const uint64_t range = uint64_t{op->nlb} * ctx->lba_size;
    op->bytes = 2 * range;
    if (!lbas_inside(ctx, op->slba, op->nlb)) return CSD_STATUS_LBA_OUT_OF_RANGE | CSD_STATUS_DNR;
    if (range > CSD_CAW_MAX_BYTES || exceeds_mdts(ctx, op->bytes)) {
        return kInvalidField;
    }
    return CSD_STATUS_SUCCESS;
}

}  // namespace

extern "C" {

uint16_t csd_core_nvm_decode(const csd_cmd *cmd, const csd_ctx *ctx, uint64_t *off, uint64_t *len)
{
    *off = *len = 0;
    if (cmd->opcode == 0x00) return CSD_STATUS_SUCCESS;  // Flush
    if (cmd->opcode != 0x01 && cmd->opcode != 0x02) return CSD_STATUS_INVALID_OPCODE | CSD_STATUS_DNR;
    const uint64_t slba = dwords64(cmd->cdw10, cmd->cdw11), nlb = (cmd->cdw12 & 0xFFFF) + 1;
    if (exceeds_mdts(ctx, nlb * ctx->lba_size)) return kInvalidField;  // before the range, as QEMU's nvme_read
    if (!lbas_inside(ctx, slba, nlb)) return CSD_STATUS_LBA_OUT_OF_RANGE | CSD_STATUS_DNR;
    *off = slba * ctx->lba_size;
    *len = nlb * ctx->lba_size;
    return CSD_STATUS_SUCCESS;
}

uint16_t csd_core_compare(const csd_op *op, const void *current, const void *data)
{
    return std::memcmp(current, data, op->bytes / 2) == 0 ? CSD_STATUS_SUCCESS
                                                          : CSD_STATUS_COMPARE_FAILURE | CSD_STATUS_DNR;
}

uint16_t csd_core_decode(csd_core *core, const csd_cmd *cmd, const csd_ctx *ctx, csd_op *op)
{
    *op = csd_op{};
    op->opcode = cmd->opcode;
    op->cmd = *cmd;
    switch (cmd->opcode) {
    case CSD_OPC_SLM_LOAD:
    case CSD_OPC_SLM_STORE:
    case CSD_OPC_COMPARE_WRITE:
        // Not the zoned command set's: the core keeps no write pointer or zone state.
        if (ctx->zoned) return CSD_STATUS_INVALID_OPCODE | CSD_STATUS_DNR;
        // Nor a namespace with metadata: the core neither makes nor checks PI tuples.
        if (ctx->metadata) return CSD_STATUS_INVALID_NAMESPACE | CSD_STATUS_DNR;
        break;
    default:
        break;
    }
    switch (cmd->opcode) {
    case CSD_OPC_SLM_LOAD:
    case CSD_OPC_SLM_STORE:
        return decode_load_store(core, cmd, ctx, op);
    case CSD_OPC_SLM_WRITE:
    case CSD_OPC_SLM_READ:
        return decode_slm_xfer(core, cmd, ctx, op);
    case CSD_OPC_EXECUTE:
        return decode_execute(core, cmd, ctx, op);
    case CSD_OPC_PROGRAM_LOAD:
        return decode_program_load(core, cmd, ctx, op);
    case CSD_OPC_PROGRAM_UNLOAD:
        count(core, CSD_STAT_PROGRAM_UNLOAD_CMDS);
        return CSD_STATUS_SUCCESS;  // the slot is checked by csd_core_program_unload
    case CSD_OPC_COMPARE_WRITE:
        return decode_compare_write(cmd, ctx, op);
    case CSD_OPC_NOOP:
        return CSD_STATUS_SUCCESS;
    default:
        return CSD_STATUS_INVALID_OPCODE | CSD_STATUS_DNR;
    }
}

void csd_core_complete(csd_core *core, const csd_op *op, uint16_t status)
{
    if (op->opcode == CSD_OPC_EXECUTE) {
        if (status != CSD_STATUS_SUCCESS) {
            count(core, CSD_STAT_EXEC_ERRORS);
        }
        return;
    }
    if (op->opcode == CSD_OPC_PROGRAM_LOAD) {
        if (CSD_STATUS_CODE(status) == CSD_STATUS_INVALID_PROGRAM_IMAGE ||
            CSD_STATUS_CODE(status) == NVME_CS_INVALID_PROGRAM_DATA) {  // the standard front end's name for it
            count(core, CSD_STAT_PROGRAM_LOAD_REJECTS);
        }
        return;
    }
    if (status != CSD_STATUS_SUCCESS) {
        return;  // byte counters count only bytes that moved
    }
    switch (op->opcode) {
    case CSD_OPC_SLM_LOAD: count(core, CSD_STAT_BYTES_NS_TO_SLM, op->bytes); break;
    case CSD_OPC_SLM_STORE: count(core, CSD_STAT_BYTES_SLM_TO_NS, op->bytes); break;
    case CSD_OPC_SLM_WRITE: count(core, CSD_STAT_BYTES_HOST_TO_SLM, op->bytes); break;
    case CSD_OPC_SLM_READ: count(core, CSD_STAT_BYTES_SLM_TO_HOST, op->bytes); break;
    default: break;
    }
}

}  // extern "C"

namespace csd::core {

uint16_t program_load(csd_core *core, const csd_op *op, const void *chunk, uint32_t *dw0, char *why, size_t why_len,
                      uint64_t byte_budget)
{
    std::string reason;
    *dw0 = 0;
    const uint16_t st = core->slots.load(op->cmd, static_cast<const uint8_t *>(chunk), dw0, &reason, byte_budget);
    if (why && why_len) {
        const size_t n = reason.size() < why_len - 1 ? reason.size() : why_len - 1;
        std::memcpy(why, reason.data(), n);
        why[n] = 0;
    }
    return st;
}

}  // namespace csd::core

extern "C" {

uint16_t csd_core_program_load(csd_core *core, const csd_op *op, const void *chunk, uint32_t *dw0, char *why,
                               size_t why_len)
{
    return csd::core::program_load(core, op, chunk, dw0, why, why_len, 0);
}

uint16_t csd_core_program_unload(csd_core *core, const csd_op *op)
{
    return core->slots.unload(op->cmd.cdw10 & 0xFFFF);
}

void csd_core_set_bpf_interpreted(csd_core *core, int on) { core->bpf_interpreted = on ? 1 : 0; }

}  // extern "C"

namespace csd::core {

namespace {

constexpr uint16_t kInvalidOpcode = CSD_STATUS_INVALID_OPCODE | CSD_STATUS_DNR;

}  // namespace

// SLM Write / Read (and Memory Write / Read, decoded as them): host memory <-> SLM.
uint16_t slm_xfer(csd_core *core, const csd_op *op, const csd_port *port, void *req, csd_cpl *cpl)
{
    const uint16_t st = op->opcode == CSD_OPC_SLM_WRITE ? from_host(port, req, op->slm, op->bytes)
                                                        : to_host(port, req, op->slm, op->bytes);
    if (st) set_why(cpl, "SLM transfer");
    csd_core_complete(core, op, st);
    return st;
}

// The vendor I/O commands on NVM namespace ctx (cmd->nsid).
uint16_t vendor_io(csd_core *core, const csd_cmd *cmd, csd_ctx ctx, const csd_port *port, void *req, csd_cpl *cpl,
                   csd_op *op)
{
    if (!core->vendor || (!core->vendor_io && cmd->opcode != CSD_OPC_COMPARE_WRITE)) return kInvalidOpcode;
    if (!core->compare_write_on && cmd->opcode == CSD_OPC_COMPARE_WRITE) return kInvalidOpcode;
    uint16_t st = csd_core_decode(core, cmd, &ctx, op);
    if (st) {
        set_why(cpl, "command");
        return st;
    }
    if (op->opcode != CSD_OPC_EXECUTE) schedule(core, port, op, cpl);  // an Execute once prepared
    switch (op->opcode) {
    case CSD_OPC_SLM_WRITE:
    case CSD_OPC_SLM_READ: return slm_xfer(core, op, port, req, cpl);
    case CSD_OPC_PROGRAM_LOAD: return program_load(core, op, port, req, cpl, false);
    case CSD_OPC_PROGRAM_UNLOAD: return program_unload(core, op, false);
    case CSD_OPC_NOOP:
        cpl->dw0 = CSD_LOG_VERSION;
        csd_core_complete(core, op, CSD_STATUS_SUCCESS);
        return CSD_STATUS_SUCCESS;
    case CSD_OPC_EXECUTE: {
        std::vector<uint8_t> desc(op->bytes);
        st = from_host(port, req, desc.data(), op->bytes);
        if (st) {
            set_why(cpl, "descriptor transfer");
        } else {
            st = csd_core_exec_prepare(core, desc.data(), static_cast<uint32_t>(op->bytes), &op->job);
            if (st) set_why(cpl, "descriptor");
        }
        if (st) {
            csd_core_complete(core, op, st);
            return st;
        }
        csd_ctx window = ctx;  // a media program reads this namespace, inside the command's window
        window.lba_count = op->window_lbas;
        // The timing model schedules on arrival and must know the blocks a media program
        // reads: then it is planned here; otherwise on its compute unit (exec_queue.cc), so
        // that submission costs O(descriptor) on the submitting thread (QEMU's main loop).
        if (csd_core_model_on(core)) csd_exec_set_namespace(op->job, &window);
        schedule(core, port, op, cpl);
        cpl->program = csd_exec_program_id(op->job);
        return csd::core::execute(core, op, &window, port, req, cpl);
    }
    case CSD_OPC_COMPARE_WRITE: return csd::core::compare_write(core, op, &ctx, port, req, cpl);
    case CSD_OPC_SLM_LOAD:
    case CSD_OPC_SLM_STORE: {
        const csd_cs_copy_part part{cmd->nsid, *op};
        return csd::core::transfer(core, &part, 1, port, req, cpl);
    }
    default: return kInvalidOpcode;  // every opcode csd_core_decode accepts is answered above
    }
}

}  // namespace csd::core
