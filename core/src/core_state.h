/* SPDX-License-Identifier: MIT */
// core_state.h - the device core object (private to the core): SLM and statistics.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "csd_core_steps.h"
#include "nvme_cs.h"
#include "plugins.h"
#include "bpf/slots.h"
#include "timing_model.h"

namespace csd::core {

// Program Load of one chunk (csd_core_program_load) with a budget of image bytes held
// (0: none; the standard front end's Maximum Program Bytes Exceeded).
uint16_t program_load(csd_core *core, const csd_op *op, const void *chunk, uint32_t *dw0, char *why, size_t why_len,
                      uint64_t byte_budget);
// The standard front end: a prepared job that uses range set rsid holds it (Memory Range Set
// In Use) until it runs or is discarded, which calls release_range_set.
void exec_hold_range_set(csd_exec *job, uint16_t rsid);
void release_range_set(csd_core *core, uint16_t rsid);
// csd_core_exec_prepare; with need_active (Execute Program), a downloaded program must be
// active, else Program Not Activated (checked as its slot is taken, so no unload and load
// of another program in between can run one that was never activated).
uint16_t exec_prepare(csd_core *core, const void *desc, uint32_t len, csd_exec **exec, bool need_active);

// The standard front end's state (nvme_cs.cc): memory range sets, and the activation of the
// programs that are not in download slots (built-ins and plug-ins start active). A download
// slot's activation lives with its program, in ProgramSlots.
struct CsState {
    std::mutex mu;
    std::map<uint16_t, std::vector<nvme_cs_mem_range>> range_sets;  // by RSID (1..FFFFh)
    uint16_t next_rsid = 1;
    std::array<bool, CSD_SLOT_FIRST> deactivated{};  // by index, below the download slots
    std::map<uint16_t, uint32_t> set_users;  // prepared Executes holding each range set
};

// A command the core runs over the port and ends through port->complete (CSD_CORE_LATER).
struct PortCmd {
    PortCmd(csd_core *c, const csd_port *p, void *r, const csd_cpl *done) : core(c), port(p), req(r), cpl(*done) {}
    csd_core *core;
    const csd_port *port;
    void *req;
    csd_cpl cpl;  // its Dwords and modelled finish
};
struct CawCmd;
// Compare and Write (compare_write.cc): the commands holding their LBAs (reading, comparing,
// writing) and those waiting, in arrival order, for an overlapping one to end.
struct CawState {
    std::mutex mu;
    std::vector<CawCmd *> holding, waiting;
};
// Runs a decoded Compare and Write on namespace ns through the port: CSD_CORE_LATER, or the
// final status when its data cannot come in (counted).
uint16_t compare_write(csd_core *core, const csd_op *op, const csd_ctx *ns, const csd_port *port, void *req,
                       const csd_cpl *cpl);
// Asks the port again, just before a command's namespace I/O, whether NVM namespace nsid is
// still the one the command was checked against (it may have been detached, deleted or
// formatted while the command waited): Success when it is attached with LBAs of lba_size
// bytes and no metadata, not zoned, and holds LBAs [first, first + n); else Invalid
// Namespace or Format.
uint16_t ns_still_holds(const csd_port *port, uint32_t nsid, uint32_t lba_size, uint64_t first, uint64_t n);
// Moves n (at least one) decoded SLM Loads / Stores one after another through the port's
// namespace I/O (transfer.cc), counting each; CSD_CORE_LATER.
uint16_t transfer(csd_core *core, const csd_cs_copy_part *parts, uint32_t n, const csd_port *port, void *req,
                  const csd_cpl *cpl);

// The timing model's held completions (csd_core_model_hold with a port timer), by finish.
// Exact mode: the commands still working past arrival (csd_core_model_begin), by finish, and
// whether the port's clock is held for one whose finish came first.
struct HeldState {
    std::mutex mu;
    std::multimap<uint64_t, void *> by_finish;  // equal finishes in the order they came
    bool exact = false;
    std::multimap<uint64_t, void *> working;  // exact mode: finish -> command still working
    std::unordered_map<void *, std::multimap<uint64_t, void *>::iterator> working_at;
    bool clock_held = false;
    uint64_t armed_at = 0;  // the port's timer's deadline as last armed, 0: none (or fired)
    std::chrono::steady_clock::time_point held_since;  // host time, for model_hold_ns
    // exact mode on a port that cannot hold its clock (no hold_clock: the in-process device):
    // the model's own clock, which a command's arrival reads and its completion moves to its
    // modelled finish (never back); one clock for every thread of the embedding
    std::atomic<uint64_t> vclock{0};
};

// The timing model's clock for the port: the core's virtual one (exact mode on a port
// without hold_clock), else the port's now_ns.
uint64_t model_now(csd_core *core, const csd_port *port);
// Ends a command the core answered CSD_CORE_LATER: an unmodelled one (cpl->finish_ns 0) is
// no longer working for exact mode; then port->complete, with why "" or an error's reason.
void end(csd_core *core, const csd_port *port, void *req, uint16_t status, const csd_cpl *cpl);
// The port's moves of host memory; a zero-length move is no call of the port.
uint16_t from_host(const csd_port *port, void *req, void *buf, uint64_t len);
uint16_t to_host(const csd_port *port, void *req, const void *buf, uint64_t len);

struct ExecCmd;
// Execute on the compute units (exec_queue.cc): the commands waiting for one, in arrival
// order, and those holding one (reading the media, or their program on a worker).
struct ExecState {
    std::mutex mu;
    std::deque<ExecCmd *> waiting;
    std::vector<ExecCmd *> running;
    uint64_t waiting_bytes = 0;  // exec_held_bytes of the waiting ones
};
// Whether a prepared job is a media program whose plan (csd_exec_set_namespace: copying,
// checking and sorting its entries or indices) is still to be made.
bool exec_needs_plan(const csd_exec *job);
// Host memory a prepared job holds while it waits (the job, its plan if made).
uint64_t exec_held_bytes(const csd_exec *job);
// Memory that Executes waiting for a compute unit may hold, and how many may wait: past
// either, an Execute completes with Command Interrupted (no DNR: the host retries it).
constexpr uint64_t kExecWaitingBytes = 256ull << 20;
constexpr size_t kExecWaitingMax = 4096;
// Runs a prepared Execute (op->job; ns: the NVM namespace it names, its LBA count the
// command's window, nullptr for none) on a compute unit through the port, now or once one
// is free: CSD_CORE_LATER, or Command Interrupted when too many wait. A media program not
// planned yet is planned on the unit (a worker of the port), not on the submitting thread.
uint16_t execute(csd_core *core, const csd_op *op, const csd_ctx *ns, const csd_port *port, void *req,
                 const csd_cpl *cpl);
// csd_core_cancel for an Execute: ends one that waits for a compute unit (1), or asks a
// running one to stop (0).
int exec_cancel(csd_core *core, void *req);

}  // namespace csd::core

struct csd_core {
    uint8_t *slm = nullptr;
    uint64_t slm_size = 0;
    uint32_t compute_units = 0;
    std::atomic<uint64_t> stats[CSD_STAT_COUNT] = {};
    std::atomic<uint64_t> per_program[CSD_STATS_PER_PROGRAM_COUNT] = {};
    csd::core::ProgramSlots slots;     // downloadable programs
    csd::core::Plugins plugins;        // operator plug-ins
    std::atomic<int> bpf_interpreted{0};
    csd::core::TimingModel model;      // off unless configured
    csd::core::CsState cs;             // the standard front end's range sets and activation
    uint32_t cs_mem_nsid = 0;          // its memory namespace (compute: the next), 0 if off
    csd::core::CawState caw;           // Compare and Write's LBA ranges
    csd::core::ExecState exec;         // Execute's compute units
    csd::core::HeldState held;         // completions the timing model holds (port timer)
    bool vendor = true;                // the vendor command set (csd_core_set_vendor)
    bool vendor_io = true;             // its data and program commands (csd_core_set_vendor_io)
    bool compare_write_on = true;      // Compare and Write (csd_core_set_compare_write)
};

namespace csd::core {

// Adds n to one statistics counter.
inline void count(csd_core *core, csd_stat which, uint64_t n = 1)
{
    core->stats[which].fetch_add(n, std::memory_order_relaxed);
}

}  // namespace csd::core
