// SPDX-License-Identifier: MIT
// held_completions.cc - completions the timing model holds until their modelled finish
// (csd_core_model_hold, the port's timer, release when a queue goes), exact mode's commands
// still working past their arrival (csd_core_model_begin), whose finish holds the port's
// clock, the arrival of an NVM command the embedding answers itself
// (csd_core_model_arrival), and exact mode's virtual clock for a port that cannot hold its
// own (docs/timing-model.md). The model itself, which says when, is timing_model.cc; this is
// the queue of what waits for it, once for every embedding.
#include <algorithm>
#include <chrono>
#include <mutex>
#include <vector>

#include "core_state.h"
#include "front_end.h"

namespace {

using csd::core::HeldState;

// Exact mode: a command whose work ends while the clock is held counts as held (not an
// overrun) if the clock stopped within this of its finish: QEMU's timer under -icount
// fires on the instruction; without -icount it fires when the main loop comes to it,
// and a later stop is an overrun of that much (docs/timing-model.md).
constexpr uint64_t kHoldGrainNs = 1000;

// Exact mode: the earliest finish among the commands still working, else 0 (h.mu held).
uint64_t first_working(const HeldState &h) { return h.working.empty() ? 0 : h.working.begin()->first; }

// The port's timer for the earliest of the held completions and (exact mode) the finishes
// of the commands still working that have not come yet (h.mu held).
void arm_for_next(const csd_port *port, HeldState &h, uint64_t now)
{
    uint64_t at = h.by_finish.empty() ? 0 : h.by_finish.begin()->first;
    const auto w = h.working.upper_bound(now);
    if (w != h.working.end() && (!at || w->first < at)) at = w->first;
    if (at && at != h.armed_at) {  // the port has one timer: moved only when the earliest changes
        h.armed_at = at;
        port->arm_timer(port->opaque, at);
    }
}

// Exact mode: lets the port's clock go on if no command still working is past its finish
// at now (h.mu held); counts the hold's host time.
void release_clock_if_none_due(csd_core *core, const csd_port *port, HeldState &h, uint64_t now)
{
    if (!h.clock_held) return;
    const uint64_t first = first_working(h);
    if (first && first <= now) return;
    h.clock_held = false;
    const auto held = std::chrono::steady_clock::now() - h.held_since;
    csd::core::count(core, CSD_STAT_MODEL_HOLD_NS,
                      static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(held).count()));
    port->hold_clock(port->opaque, 0);
    arm_for_next(port, h, now);  // a command that arrived during the hold has its finish ahead
}

// Exact mode: forgets command req as working (its work is done or it is gone; h.mu held).
void forget_working(HeldState &h, void *req)
{
    const auto it = h.working_at.find(req);
    if (it == h.working_at.end()) return;
    h.working.erase(it->second);
    h.working_at.erase(it);
}

// Exact mode on a port that cannot hold its clock: the core's own virtual clock.
bool virtual_clock(const csd_core *core, const csd_port *port) { return core->held.exact && !port->hold_clock; }

}  // namespace

namespace csd::core {

uint64_t model_now(csd_core *core, const csd_port *port)
{
    return virtual_clock(core, port) ? core->held.vclock.load() : port->now_ns(port->opaque);
}

void end(csd_core *core, const csd_port *port, void *req, uint16_t status, const csd_cpl *cpl)
{
    if (!cpl->finish_ns && port->hold_clock) csd_core_model_hold(core, port, req, 0);  // done, unmodelled
    csd_cpl c = *cpl;
    // an error's reason for the embedding's trace (a Compare and Write's miscompare is its answer)
    const bool error = status && status != (CSD_STATUS_COMPARE_FAILURE | CSD_STATUS_DNR);
    if (!error) c.why[0] = '\0';
    else if (!c.why[0]) set_why(&c, c.program ? "program" : "namespace I/O");
    port->complete(req, status, &c);
}

uint16_t from_host(const csd_port *port, void *req, void *buf, uint64_t len)
{
    return len ? port->from_host(req, buf, len) : CSD_STATUS_SUCCESS;
}

uint16_t to_host(const csd_port *port, void *req, const void *buf, uint64_t len)
{
    return len ? port->to_host(req, buf, len) : CSD_STATUS_SUCCESS;
}

}  // namespace csd::core

extern "C" {

void csd_core_set_exact(csd_core *core, int on)
{
    std::lock_guard<std::mutex> g(core->held.mu);
    core->held.exact = on != 0;
}

int csd_core_exact(const csd_core *core) { return core->held.exact ? 1 : 0; }

void csd_core_model_begin(csd_core *core, const csd_port *port, void *req, uint64_t finish_ns)
{
    HeldState &h = core->held;
    if (!finish_ns || !port->hold_clock || !port->arm_timer) return;
    finish_ns = std::min<uint64_t>(finish_ns, CSD_MODEL_MAX_NS);
    std::lock_guard<std::mutex> g(h.mu);
    if (!h.exact) return;
    forget_working(h, req);  // a request the embedding reuses
    h.working_at[req] = h.working.emplace(finish_ns, req);
    // the earliest deadline ahead (not the first working: during a hold that one is past due)
    arm_for_next(port, h, port->now_ns(port->opaque));
}

uint64_t csd_core_model_arrival(csd_core *core, const csd_port *port, void *req, const csd_cmd *cmd,
                                uint32_t lba_size, uint64_t finish_ns, int started, int working)
{
    if (!finish_ns && started) finish_ns = csd_core_model_nvm(core, cmd, lba_size, csd::core::model_now(core, port));
    if (working) csd_core_model_begin(core, port, req, finish_ns);
    return finish_ns;
}

uint64_t csd_core_model_clock(csd_core *core, const csd_port *port) { return csd::core::model_now(core, port); }

uint64_t csd_core_model_hold(csd_core *core, const csd_port *port, void *req, uint64_t finish_ns)
{
    HeldState &h = core->held;
    if (virtual_clock(core, port)) {  // its finish is by definition its time: the clock moves there
        finish_ns = std::min<uint64_t>(finish_ns, CSD_MODEL_MAX_NS);
        for (uint64_t at = h.vclock.load(); finish_ns > at && !h.vclock.compare_exchange_weak(at, finish_ns);) {
        }
        return 0;
    }
    bool held = false;  // exact mode: the clock waited for this command's work
    if (port->hold_clock) {  // exact mode: its work is done (or it ends unmodelled)
        std::lock_guard<std::mutex> g(h.mu);
        const auto it = h.working_at.find(req);
        if (it != h.working_at.end()) {
            const uint64_t now = port->now_ns(port->opaque);
            const uint64_t finish = it->second->first;
            held = h.clock_held && finish <= now && now - finish <= kHoldGrainNs;
            forget_working(h, req);
            release_clock_if_none_due(core, port, h, now);
        }
    }
    if (!finish_ns) return 0;
    finish_ns = std::min<uint64_t>(finish_ns, CSD_MODEL_MAX_NS);  // a signed clock's end (QEMU's timer_mod)
    const uint64_t now = port->now_ns(port->opaque);
    if (held && now >= finish_ns) {
        // its finish came while it worked and the clock stopped there (to the clock's grain:
        // QEMU's timer, an -icount instruction): it completes now, held, not overrun
        csd::core::count(core, CSD_STAT_MODEL_HOLDS);
        return 0;
    }
    csd_core_model_done(core, finish_ns, now);
    if (finish_ns <= now || (port->startable && !port->startable(req))) return 0;
    if (!port->arm_timer) return finish_ns;  // the embedding's thread waits until then
    std::lock_guard<std::mutex> g(h.mu);
    h.by_finish.emplace(finish_ns, req);
    // the one timer, for the earliest of the held and (exact mode) the working ones' finishes
    arm_for_next(port, h, now);
    return finish_ns;
}

void csd_core_model_timer(csd_core *core, const csd_port *port)
{
    std::vector<void *> due;
    {
        HeldState &h = core->held;
        std::lock_guard<std::mutex> g(h.mu);
        const uint64_t now = port->now_ns(port->opaque);
        h.armed_at = 0;  // it fired
        auto it = h.by_finish.begin();
        for (; it != h.by_finish.end() && it->first <= now; ++it) due.push_back(it->second);
        h.by_finish.erase(h.by_finish.begin(), it);
        const uint64_t first = first_working(h);
        if (first && first <= now && !h.clock_held && port->hold_clock) {
            // a command's modelled finish came while its work runs: the clock waits for it
            h.clock_held = true;
            h.held_since = std::chrono::steady_clock::now();
            port->hold_clock(port->opaque, 1);
        }
        arm_for_next(port, h, now);
    }
    for (void *req : due) port->post(req);
}

void csd_core_model_release(csd_core *core, const csd_port *port)
{
    std::vector<void *> going;
    {
        HeldState &h = core->held;
        std::lock_guard<std::mutex> g(h.mu);
        for (auto it = h.by_finish.begin(); it != h.by_finish.end();) {
            if (port->startable && !port->startable(it->second)) {
                going.push_back(it->second);
                it = h.by_finish.erase(it);
            } else {
                ++it;
            }
        }
        for (auto it = h.working.begin(); it != h.working.end();) {  // their work is being cancelled
            if (port->startable && !port->startable(it->second)) {
                h.working_at.erase(it->second);
                it = h.working.erase(it);
            } else {
                ++it;
            }
        }
        if (port->hold_clock) release_clock_if_none_due(core, port, h, port->now_ns(port->opaque));
    }
    for (void *req : going) port->post(req);
}

}  // extern "C"
