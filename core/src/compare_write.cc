// SPDX-License-Identifier: MIT
// compare_write.cc - Compare and Write (8Dh) as one sequence for both embeddings: the
// host's expected and new data come in, the command waits until no earlier Compare and
// Write of the same namespace holds any of its LBAs (first come, first served), then the
// range is read, compared and, on a match, written through the port's asynchronous
// namespace I/O, and the completion is posted through port->complete. A conflicting
// command is ordered, never refused, in QEMU and in the in-process device alike.
#include <cstring>
#include <vector>

#include "core_state.h"

namespace csd::core {

// One Compare and Write between its submission and its completion.
struct CawCmd : PortCmd {
    CawCmd(csd_core *c, const csd_port *p, void *r, const csd_cpl *done, const csd_op *o)
        : PortCmd(c, p, r, done), op(*o) {}
    csd_op op;
    uint64_t off = 0, half = 0;  // bytes into the namespace, bytes compared
    uint32_t lba_size = 0;       // of the namespace when the command was checked
    std::vector<uint8_t> data;   // expected, then new (op.bytes)
    std::vector<uint8_t> current;
    bool exclusive = false;      // port->exclusive taken
};

namespace {

constexpr uint16_t kInternal = CSD_STATUS_INTERNAL_ERROR;

// Whether two commands address any LBA in common.
bool overlap(const CawCmd *a, const CawCmd *b)
{
    return a->op.cmd.nsid == b->op.cmd.nsid && a->op.slba < b->op.slba + b->op.nlb &&
           b->op.slba < a->op.slba + a->op.nlb;
}

void run(CawCmd *c);

// Commands made runnable on this thread, started one after another (not nested: with an
// embedding whose I/O ends at once, each completion would start the next inside itself).
thread_local std::vector<CawCmd *> t_runnable;
thread_local bool t_draining = false;

void drain()
{
    if (t_draining) return;
    t_draining = true;
    while (!t_runnable.empty()) {
        CawCmd *c = t_runnable.front();
        t_runnable.erase(t_runnable.begin());
        run(c);
    }
    t_draining = false;
}

// Takes c out of list, if it is there; whether it was.
bool remove(std::vector<CawCmd *> &list, const CawCmd *c)
{
    for (size_t i = 0; i < list.size(); i++) {
        if (list[i] == c) {
            list.erase(list.begin() + static_cast<long>(i));
            return true;
        }
    }
    return false;
}

// Under caw.mu: the waiters that overlap no holder and no earlier waiter hold their LBAs
// now and become runnable on this thread.
void promote(csd_core *core)
{
    auto &h = core->caw.holding;
    auto &w = core->caw.waiting;
    for (size_t i = 0; i < w.size();) {
        bool blocked = false;
        for (const CawCmd *x : h) blocked = blocked || overlap(x, w[i]);
        for (size_t j = 0; j < i && !blocked; j++) blocked = overlap(w[j], w[i]);
        if (blocked) {
            i++;
            continue;
        }
        h.push_back(w[i]);
        t_runnable.push_back(w[i]);
        w.erase(w.begin() + static_cast<long>(i));
    }
}

// Ends a command: counts it, lets the waiters that no longer overlap a holder or an
// earlier waiter run, and posts its completion.
void finish(CawCmd *c, uint16_t st)
{
    csd_core *core = c->core;
    if (c->exclusive) c->port->exclusive(c->req, c->op.cmd.nsid, c->off, c->half, 0);
    csd_core_complete(core, &c->op, st);
    {
        std::lock_guard<std::mutex> g(core->caw.mu);
        remove(core->caw.holding, c);
        promote(core);
    }
    end(c->core, c->port, c->req, st, &c->cpl);
    delete c;
    drain();
}

void written(void *arg, uint16_t st) { finish(static_cast<CawCmd *>(arg), st); }

void read_done(void *arg, uint16_t st)
{
    auto *c = static_cast<CawCmd *>(arg);
    if (!st) st = csd_core_compare(&c->op, c->current.data(), c->data.data());
    if (st) {
        finish(c, st);
        return;
    }
    c->port->ns_io(c->req, c->op.cmd.nsid, 1, c->off, c->data.data() + c->half, c->half, written, c);
}

// The range is this command's: read it (if its namespace is still the one it was checked
// against: it may have waited behind another while it was detached or formatted).
void run(CawCmd *c)
{
    const uint16_t st = ns_still_holds(c->port, c->op.cmd.nsid, c->lba_size, c->op.slba, c->op.nlb);
    if (st) {
        finish(c, st);
        return;
    }
    if (c->port->exclusive) {
        if (c->port->exclusive(c->req, c->op.cmd.nsid, c->off, c->half, 1) != 0) {
            finish(c, kInternal);
            return;
        }
        c->exclusive = true;
    }
    c->current.resize(c->half);
    c->port->ns_io(c->req, c->op.cmd.nsid, 0, c->off, c->current.data(), c->half, read_done, c);
}

}  // namespace

uint16_t compare_write(csd_core *core, const csd_op *op, const csd_ctx *ns, const csd_port *port, void *req,
                       const csd_cpl *cpl)
{
    auto *c = new CawCmd(core, port, req, cpl, op);
    c->data.resize(op->bytes);
    c->half = op->bytes / 2;
    c->lba_size = ns->lba_size;
    c->off = op->slba * ns->lba_size;
    const uint16_t st = from_host(port, req, c->data.data(), op->bytes);
    if (st) {
        csd_core_complete(core, op, st);
        delete c;
        return st;
    }
    bool now;
    {
        std::lock_guard<std::mutex> g(core->caw.mu);
        now = true;
        for (CawCmd *x : core->caw.holding) now = now && !overlap(x, c);
        for (CawCmd *x : core->caw.waiting) now = now && !overlap(x, c);
        (now ? core->caw.holding : core->caw.waiting).push_back(c);
    }
    if (now) {
        t_runnable.push_back(c);
        drain();
    }
    return CSD_CORE_LATER;
}

}  // namespace csd::core

extern "C" int csd_core_cancel(csd_core *core, void *req)
{
    using namespace csd::core;
    CawCmd *c = nullptr;
    {
        std::lock_guard<std::mutex> g(core->caw.mu);
        for (CawCmd *x : core->caw.waiting) {
            if (x->req == req) c = x;
        }
        if (c) {
            remove(core->caw.waiting, c);
            promote(core);  // those that waited only behind it
        }
    }
    if (!c) return exec_cancel(core, req);  // not a Compare and Write that waits: an Execute?
    const uint16_t st = CSD_STATUS_ABORT_REQUESTED;
    csd_core_complete(core, &c->op, st);
    end(c->core, c->port, c->req, st, &c->cpl);
    delete c;
    drain();
    return 1;
}
