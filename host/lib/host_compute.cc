// SPDX-License-Identifier: MIT
// host_compute.cc - host mode's embedding of the device core (in libcsd-emu): decode in
// the core, move the bytes (host memory, or the drive's LBAs through the LbaIo), complete
// in the core, as QEMU's glue and the in-process device do. The programs are the core's,
// so a result computed here is the one the emulated drive computes over the same bytes.
#include "host_compute.hpp"

#include <cerrno>
#include <cstring>
#include <vector>

#include "csd/error.hpp"
#include "csd_core.h"

namespace csd {

namespace {

constexpr uint16_t kInvalidOpcode = CSD_STATUS_INVALID_OPCODE | CSD_STATUS_DNR;
constexpr uint16_t kInvalidField = CSD_STATUS_INVALID_FIELD | CSD_STATUS_DNR;

// The core behind HostCompute.
class HostComputeCore : public HostCompute {
public:
    HostComputeCore(csd_core *core, NamespaceInfo ns, LbaIo io) : core_(core), ns_(ns), io_(std::move(io)) {}
    ~HostComputeCore() override { csd_core_free(core_); }
    Completion submit(const Command &c) override;
    std::future<Completion> submit_async(const Command &c) override
    {
        return std::async(std::launch::async, [this, c] { return submit(c); });
    }
    uint8_t *slm_base() override { return csd_core_slm_base(core_); }

private:
    Completion run_decoded(const Command &c, const csd_op &op);
    Completion complete(const csd_op &op, Completion r);

    csd_core *core_;
    NamespaceInfo ns_;
    LbaIo io_;
};

}  // namespace

Completion HostComputeCore::complete(const csd_op &op, Completion r)
{
    csd_core_complete(core_, &op, r.status);
    return r;
}

Completion HostComputeCore::run_decoded(const Command &c, const csd_op &op)
{
    if (c.data_len < ((c.opcode & 3) ? op.bytes : 0)) return complete(op, {kInvalidField, 0});
    switch (op.opcode) {
    case CSD_OPC_SLM_LOAD: return complete(op, {io_(false, op.slba, op.nlb, op.slm), 0});
    case CSD_OPC_SLM_STORE: return complete(op, {io_(true, op.slba, op.nlb, op.slm), 0});
    case CSD_OPC_SLM_WRITE: std::memcpy(op.slm, c.data, op.bytes); return complete(op, {0, 0});
    case CSD_OPC_SLM_READ: std::memcpy(c.data, op.slm, op.bytes); return complete(op, {0, 0});
    case CSD_OPC_PROGRAM_LOAD: {
        uint32_t dw0 = 0;
        const uint16_t s = csd_core_program_load(core_, &op, c.data, &dw0, nullptr, 0);
        return complete(op, {s, dw0});
    }
    case CSD_OPC_PROGRAM_UNLOAD: return complete(op, {csd_core_program_unload(core_, &op), 0});
    case CSD_OPC_EXECUTE: {
        csd_exec *job = nullptr;
        const uint16_t st = csd_core_exec_prepare(core_, c.data, static_cast<uint32_t>(op.bytes), &job);
        if (st) return complete(op, {st, 0});
        uint32_t dw0 = 0, dw1 = 0;
        const uint16_t s = csd_core_exec_run(core_, job, nullptr, &dw0, &dw1);
        return complete(op, {s, static_cast<uint64_t>(dw1) << 32 | dw0});
    }
    default: return complete(op, {kInvalidOpcode, 0});  // Compare and Write: not on a plain drive
    }
}

Completion HostComputeCore::submit(const Command &c)
{
    if (c.admin) {  // Get Log Page C0h / C1h: the core's pages
        const uint64_t len = ((static_cast<uint64_t>(c.cdw11 & 0xFFFF) << 16 | c.cdw10 >> 16) + 1) * 4;
        const uint64_t off = c.cdw12 | static_cast<uint64_t>(c.cdw13) << 32;
        if (!csd_core_is_log_page(c.cdw10 & 0xFF) || c.data_len < len) return {kInvalidField, 0};
        std::vector<uint8_t> page(CSD_LOG_MAX_SIZE);
        uint32_t avail = 0;
        const uint16_t st = csd_core_get_log(core_, c.cdw10 & 0xFF, c.nsid, off, page.data(), &avail);
        if (st) return {st, 0};
        std::memcpy(c.data, page.data() + off, std::min<uint64_t>(len, avail));
        return {0, 0};
    }
    if (c.opcode == CSD_OPC_COMPARE_WRITE) return {kInvalidOpcode, 0};
    const csd_cmd cc{c.opcode, c.nsid, c.cdw10, c.cdw11, c.cdw12, c.cdw13, c.cdw14, c.cdw15};
    const csd_ctx ctx{ns_.lba_count, ns_.lba_size, 0, 0};
    csd_op op;
    const uint16_t st = csd_core_decode(core_, &cc, &ctx, &op);
    if (st) return {st, 0};
    return run_decoded(c, op);
}

}  // namespace csd

extern "C" csd::HostCompute *csd_emu_make_host_compute(uint64_t slm_size, uint32_t units, const csd::NamespaceInfo *ns,
                                                       const csd::HostCompute::LbaIo *io, std::string *why)
{
    csd_core *core = csd_core_new(slm_size, units);
    if (!core) {
        *why = "host mode: SLM of " + std::to_string(slm_size) + " bytes of host memory: out of memory";
        return nullptr;
    }
    return new csd::HostComputeCore(core, *ns, *io);
}
