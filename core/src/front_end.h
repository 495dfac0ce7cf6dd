// SPDX-License-Identifier: MIT
// front_end.h - what the controller (controller.cc) and the two front ends share: the
// vendor command set (vendor.cc) and the standard computational storage command sets
// (nvme_cs.cc) answer their commands through these, and the controller routes to their
// entry points. Internal to the core.
#pragma once

#include <cstdint>

#include "core_state.h"

namespace csd::core {

// Whether csi is one of the standard front end's command sets (memory, compute).
bool is_cs_csi(uint8_t csi);
// What the port knows of NVM namespace nsid: false when none is attached.
bool ns_ctx(const csd_port *port, uint32_t nsid, csd_ctx *ctx);
// Whether nsid is 1..port->max_nsid.
bool nsid_in_range(const csd_port *port, uint32_t nsid);
// Invalid Namespace or Format for an NSID with no NVM namespace, else 0 with its *ctx.
uint16_t nsid_status(const csd_port *port, uint32_t nsid, csd_ctx *ctx);
// A context for commands that name no NVM namespace (the port's transfer limit only).
csd_ctx no_ns_ctx(const csd_port *port);
// An error's reason for the embedding's trace.
void set_why(csd_cpl *cpl, const char *why);
// The timing model's finish of a decoded command, at its arrival (model off: nothing).
void schedule(csd_core *core, const csd_port *port, const csd_op *op, csd_cpl *cpl);
// Program Load (vendor, or the standard Load Program: standard) of a decoded chunk.
uint16_t program_load(csd_core *core, const csd_op *op, const csd_port *port, void *req, csd_cpl *cpl, bool standard);
// Program Unload (vendor, or the standard Load Program's unload).
uint16_t program_unload(csd_core *core, const csd_op *op, bool standard);
// SLM Write / Read (and Memory Write / Read, decoded as them): host memory <-> SLM.
uint16_t slm_xfer(csd_core *core, const csd_op *op, const csd_port *port, void *req, csd_cpl *cpl);

// The vendor front end (vendor.cc): its I/O commands on NVM namespace ctx (cmd->nsid).
uint16_t vendor_io(csd_core *core, const csd_cmd *cmd, csd_ctx ctx, const csd_port *port, void *req, csd_cpl *cpl,
                   csd_op *op);
// The standard front end (nvme_cs.cc): its admin commands (CSD_CORE_NOT_MINE for others),
uint16_t cs_admin(csd_core *core, const csd_cmd *cmd, const csd_port *port, void *req, csd_cpl *cpl);
// the I/O commands of its memory and compute namespaces,
uint16_t cs_io(csd_core *core, const csd_sqe *sqe, const csd_port *port, void *req, csd_cpl *cpl, csd_op *op);
// and NVM Copy format 4h into an NVM namespace from its memory namespace.
uint16_t cs_copy(csd_core *core, const csd_cmd *cmd, const csd_port *port, void *req, csd_cpl *cpl);

}  // namespace csd::core
