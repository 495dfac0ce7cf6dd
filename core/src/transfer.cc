// SPDX-License-Identifier: MIT
// transfer.cc - what moves between SLM and the NVM namespaces, once for both embeddings:
// the vendor SLM Load / Store and the standard front end's Memory Copy and NVM Copy format
// 4h (one SLM Load or Store per descriptor, in order, the rest abandoned after an error),
// each part through the port's asynchronous namespace I/O, counted as it ends; the
// completion through port->complete.
#include <vector>

#include "core_state.h"

namespace csd::core {

namespace {

// A command's parts between its submission and its completion.
struct Transfer : PortCmd {
    using PortCmd::PortCmd;
    std::vector<csd_cs_copy_part> parts;
    size_t i = 0;
};

void next(Transfer *t);

// One part's I/O ended: the next part, or the completion (the rest counted with the error).
void part_done(void *arg, uint16_t st)
{
    auto *t = static_cast<Transfer *>(arg);
    csd_core_complete(t->core, &t->parts[t->i].op, st);
    t->i++;
    if (st == CSD_STATUS_SUCCESS && t->i < t->parts.size()) {
        next(t);
        return;
    }
    for (; t->i < t->parts.size(); t->i++) csd_core_complete(t->core, &t->parts[t->i].op, st);
    end(t->core, t->port, t->req, st, &t->cpl);
    delete t;
}

// Starts the current part's namespace I/O.
void next(Transfer *t)
{
    const csd_cs_copy_part &p = t->parts[t->i];
    const uint32_t lba_size = p.op.nlb ? static_cast<uint32_t>(p.op.bytes / p.op.nlb) : 0;
    const uint16_t st = ns_still_holds(t->port, p.nsid, lba_size, p.op.slba, p.op.nlb);
    if (st) {  // detached or formatted meanwhile
        part_done(t, st);
        return;
    }
    const uint64_t off = p.op.slba * lba_size;
    if (p.op.opcode == CSD_OPC_SLM_STORE) {
        t->port->ns_io(t->req, p.nsid, 1, off, p.op.slm, p.op.bytes, part_done, t);
    } else {
        t->port->ns_io(t->req, p.nsid, 0, off, p.op.slm, p.op.bytes, part_done, t);
    }
}

}  // namespace

uint16_t ns_still_holds(const csd_port *port, uint32_t nsid, uint32_t lba_size, uint64_t first, uint64_t n)
{
    csd_ctx ctx{};
    if (port->ns_info(port->opaque, nsid, &ctx) != 0 || ctx.lba_size != lba_size || lba_size == 0 ||
        ctx.metadata || ctx.zoned || first > ctx.lba_count || n > ctx.lba_count - first) {
        return CSD_STATUS_INVALID_NAMESPACE | CSD_STATUS_DNR;
    }
    return CSD_STATUS_SUCCESS;
}

uint16_t transfer(csd_core *core, const csd_cs_copy_part *parts, uint32_t n, const csd_port *port, void *req,
                  const csd_cpl *cpl)
{
    auto *t = new Transfer(core, port, req, cpl);
    t->parts.assign(parts, parts + n);
    next(t);
    return CSD_CORE_LATER;
}

}  // namespace csd::core
