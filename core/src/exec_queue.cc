// SPDX-License-Identifier: MIT
// exec_queue.cc - Execute on the compute units, once for both embeddings: a prepared job
// waits (first come, first served) until one of the core's compute units is free and its
// command may start (port->startable), then a media program reads what it planned through
// the port's asynchronous namespace reads (a window of them at a time, round after round: a
// chase's hops), the timing model adds a chase's hops past the first, and the program runs
// on a worker of the embedding (port->run); the core counts it and posts its completion
// through port->complete. csd_core_cancel ends a waiting Execute at once (its program never
// runs) and asks a running one to stop (its reads' end, or the program's next check).
#include <algorithm>
#include <vector>

#include "core_state.h"

namespace csd::core {

// Namespace reads of one media program under way at a time.
constexpr uint32_t kMediaWindow = 32;

// One Execute between its submission and its completion.
struct ExecCmd : PortCmd {
    ExecCmd(csd_core *c, const csd_port *p, void *r, const csd_cpl *done, const csd_op *o, const csd_ctx *ns)
        : PortCmd(c, p, r, done), op(*o), job(o->job), media_ns(ns ? *ns : csd_ctx{})
    {
    }
    csd_op op;
    csd_exec *job;  // until it runs or is discarded
    // The NVM namespace a media program reads (op.cmd.nsid) as checked, its LBA count the
    // window's: the program's LBAs are relative to op.window_lba (the plan checks them).
    csd_ctx media_ns;
    uint64_t held = 0;  // exec_held_bytes while it waits
    int cancel = 0;  // set (atomically) to stop it: polled by the program and csd_exec_media
    uint16_t status = CSD_STATUS_SUCCESS;
    // a media program's round of reads (csd_exec_media)
    const csd_extent *ext = nullptr;
    uint32_t n = 0, next = 0, inflight = 0;
    uint16_t ext_status = CSD_STATUS_SUCCESS;
    bool pumping = false, again = false;  // pump() under way on this command (reads ending at once)
};

namespace {

// Under exec.mu: takes the next waiting commands that may start, as many as units are free.
std::vector<ExecCmd *> take_startable(csd_core *core)
{
    std::vector<ExecCmd *> go;
    auto &q = core->exec;
    for (auto it = q.waiting.begin(); it != q.waiting.end() && q.running.size() < core->compute_units;) {
        ExecCmd *c = *it;
        if (c->port->startable && !c->port->startable(c->req)) {
            ++it;  // about to be cancelled with its queue: it must not take a unit
            continue;
        }
        it = q.waiting.erase(it);
        q.waiting_bytes -= c->held;
        q.running.push_back(c);
        go.push_back(c);
    }
    return go;
}

void start(ExecCmd *c);

// Ends a command that had a compute unit: counts it, gives the unit to the next one that
// waits, and posts its completion.
void finish(ExecCmd *c)
{
    csd_core *core = c->core;
    std::vector<ExecCmd *> go;
    {
        std::lock_guard<std::mutex> g(core->exec.mu);
        auto &r = core->exec.running;
        r.erase(std::find(r.begin(), r.end(), c));
        go = take_startable(core);
    }
    // stopped on request: Command Abort Requested as for one that waited (a host may retry
    // it), whether the program or a media read noticed
    if (__atomic_load_n(&c->cancel, __ATOMIC_RELAXED) && CSD_STATUS_CODE(c->status) == CSD_STATUS_ABORT_REQUESTED) {
        c->status = CSD_STATUS_ABORT_REQUESTED;
    }
    csd_core_complete(core, &c->op, c->status);
    end(c->core, c->port, c->req, c->status, &c->cpl);
    delete c;
    for (ExecCmd *x : go) start(x);
}

// On the embedding's worker: the program itself.
int work(void *arg)
{
    auto *c = static_cast<ExecCmd *>(arg);
    c->status = csd_core_exec_run(c->core, c->job, &c->cancel, &c->cpl.dw0, &c->cpl.dw1);
    c->job = nullptr;
    return 0;
}

void work_done(void *arg, int) { finish(static_cast<ExecCmd *>(arg)); }

void read_done(void *arg, uint16_t st);

// Moves a media program on: issues its reads up to the window, plans the next round once
// one has ended, and once none is left, runs the program. Not nested: a read that ends at
// once (the in-process device) only asks the pump already under way to go round again.
void pump(ExecCmd *c)
{
    if (c->pumping) {
        c->again = true;
        return;
    }
    c->pumping = true;
    do {
        c->again = false;
        if (c->inflight == 0 && (c->next == c->n || c->ext_status)) {  // a round ended (or none began)
            c->n = csd_exec_media(c->job, c->ext_status, &c->cancel, &c->ext);
            c->next = 0;
            c->ext_status = CSD_STATUS_SUCCESS;
            if (c->n) {  // the namespace may have been detached or formatted while it waited
                c->ext_status = ns_still_holds(c->port, c->op.cmd.nsid, c->media_ns.lba_size, c->op.window_lba,
                                               c->op.window_lbas);
                if (c->ext_status) {
                    c->next = c->n;  // none of this round issued: the next call ends the media
                    c->again = true;
                    continue;
                }
            }
            if (!c->n) {
                c->pumping = false;
                c->cpl.finish_ns = csd_exec_model_finish(c->job, c->cpl.finish_ns);  // a chase's later hops
                c->port->run(c->req, work, work_done, c);
                return;
            }
        }
        while (c->next < c->n && c->inflight < kMediaWindow && !c->ext_status) {
            const csd_extent &e = c->ext[c->next++];
            c->inflight++;
            const uint64_t bs = c->media_ns.lba_size;
            c->port->ns_io(c->req, c->op.cmd.nsid, 0, (c->op.window_lba + e.slba) * bs, e.buf, uint64_t{e.nlb} * bs,
                             read_done, c);
        }
    } while (c->again);
    c->pumping = false;
}

void read_done(void *arg, uint16_t st)
{
    auto *c = static_cast<ExecCmd *>(arg);
    c->inflight--;
    if (st && !c->ext_status) c->ext_status = st;
    pump(c);
}

// On the embedding's worker: a media program's plan (its entries or indices copied, checked
// and sorted), then back to the pump.
int plan_work(void *arg)
{
    auto *c = static_cast<ExecCmd *>(arg);
    csd_exec_set_namespace(c->job, &c->media_ns);
    return 0;
}

void plan_done(void *arg, int) { pump(static_cast<ExecCmd *>(arg)); }

// The command has a compute unit: its plan (if not made), its media reads (if any), then its
// program.
void start(ExecCmd *c)
{
    if (exec_needs_plan(c->job)) {
        c->port->run(c->req, plan_work, plan_done, c);
        return;
    }
    pump(c);
}

}  // namespace

uint16_t execute(csd_core *core, const csd_op *op, const csd_ctx *ns, const csd_port *port, void *req,
                 const csd_cpl *cpl)
{
    auto *c = new ExecCmd(core, port, req, cpl, op, ns);
    c->held = exec_held_bytes(c->job);
    std::vector<ExecCmd *> go;
    bool refused = false;
    {
        std::lock_guard<std::mutex> g(core->exec.mu);
        auto &q = core->exec;
        const bool must_wait = q.running.size() >= core->compute_units || !q.waiting.empty();
        if (must_wait && (q.waiting.size() >= kExecWaitingMax || q.waiting_bytes + c->held > kExecWaitingBytes)) {
            refused = true;
        } else {
            q.waiting.push_back(c);
            q.waiting_bytes += c->held;
            go = take_startable(core);
        }
    }
    if (refused) {  // too much waits already: the host retries (no DNR)
        csd_core_exec_discard(c->job);
        delete c;
        csd_core_complete(core, op, CSD_STATUS_COMMAND_INTERRUPTED);
        return CSD_STATUS_COMMAND_INTERRUPTED;
    }
    for (ExecCmd *x : go) start(x);
    return CSD_CORE_LATER;
}

// csd_core_cancel's part for Executes: 1 if req waited for a compute unit (ended now).
int exec_cancel(csd_core *core, void *req)
{
    ExecCmd *c = nullptr;
    {
        std::lock_guard<std::mutex> g(core->exec.mu);
        auto &w = core->exec.waiting;
        auto it = std::find_if(w.begin(), w.end(), [req](const ExecCmd *x) { return x->req == req; });
        if (it == w.end()) {
            for (ExecCmd *x : core->exec.running) {
                if (x->req == req) __atomic_store_n(&x->cancel, 1, __ATOMIC_RELAXED);
            }
            return 0;
        }
        c = *it;
        w.erase(it);
        core->exec.waiting_bytes -= c->held;
    }
    csd_core_exec_discard(c->job);
    c->status = CSD_STATUS_ABORT_REQUESTED;
    csd_core_complete(core, &c->op, c->status);
    end(c->core, c->port, c->req, c->status, &c->cpl);
    delete c;
    return 1;
}

}  // namespace csd::core
