// SPDX-License-Identifier: MIT
// core_transport.cc - the device core embedded in this process (core_transport.hpp): the
// core decodes, counts, orders and queues every command it knows and says how long the
// timing model holds each completion; this file moves the command's bytes (memcpy), runs
// the jobs the core hands it on its worker threads (emu_threads.hpp), sends the namespace's
// I/O to the backing and the commands the core leaves to the drive behind, and waits out a
// held completion on the thread that posts it, as QEMU's glue does with its timer.
// A process forked after open gets its own copy of the core (SLM, program slots, compute
// units, statistics, the model's clock): fork() waits until no command of this transport
// is in flight, and the child starts its own compute units.
#include "core_transport.hpp"

#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "fork_hold.hpp"

namespace csd {

namespace {

constexpr uint16_t kInvalidField = CSD_STATUS_INVALID_FIELD | CSD_STATUS_DNR;
constexpr uint64_t kSpinNs = 50000;  // waits up to this long spin

std::future<Completion> ready(Completion c)
{
    std::promise<Completion> p;
    p.set_value(c);
    return p.get_future();
}

uint64_t now_ns()
{
    return static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
            .count());
}

// The dwords of a command as the core reads them.
csd_cmd core_cmd(const Command &c) { return csd_cmd{c.opcode, c.nsid, c.cdw10, c.cdw11, c.cdw12, c.cdw13, c.cdw14, c.cdw15}; }

// This device's timer: the thread that posts a completion the core holds (csd_core_model_hold
// without port->arm_timer) waits for its finish (0: none) itself.
void wait_until(uint64_t finish)
{
    const uint64_t now = now_ns();
    if (finish <= now) return;
    // a few microseconds (a low-latency drive's read) are spun: a sleep overshoots them many times
    if (finish - now > kSpinNs) std::this_thread::sleep_for(std::chrono::nanoseconds(finish - now));
    while (now_ns() < finish) {
#if defined(__x86_64__)
        __builtin_ia32_pause();
#endif
    }
}

}  // namespace

// A command in the core (its port's req; CSD_CORE_LATER: until it ends): its data and its completion.
struct CoreTransport::Cmd {
    CoreTransport *t;
    const Command *cmd;
    bool mapped = false;  // a Read whose bytes the caller copies from the mapping (no move)
};
struct CoreTransport::Req : Cmd {
    std::promise<Completion> done;
};

CoreTransport::CoreTransport(const char *name, csd_core *core, std::unique_ptr<CoreBacking> backing, uint32_t units,
                             const char *serial, const char *model)
    : name_(name), core_(core), backing_(std::move(backing)), ns_(backing_->ns())
{
    const bool whole = backing_->whole_controller();
    // no timer: a held completion's thread waits (wait_until); nvm_io: the core answers NVM
    // Read / Write / Flush and Identify too, where it is the whole controller
    port_ = csd_port{from_host, to_host, ns_info, port_now, this, backing_->max_transfer(), kCoreMaxNsid,
                     ns_io, port_complete, exclusive, run, nullptr,
                     nullptr, nullptr, whole ? port_nvm_io : nullptr, serial, model};
    pool_ = std::make_unique<WorkerPool>(units);
    fork_hold_add(this, whole ? ForkLevel::device : ForkLevel::outer_device, [this] { hold_for_fork(); },
                  [this](bool child) { resume_after_fork(child); });
}

CoreTransport::~CoreTransport()
{
    fork_hold_remove(this);
    pool_.reset();  // its jobs drained
    csd_core_free(core_);
}

// The core's path for cmd (csd_core_read_path), with *dw the command as the core reads it: a
// Read it answers at once needs no request.
int CoreTransport::read_path(const Command &cmd, csd_cmd *dw) const
{
    *dw = core_cmd(cmd);
    return csd_core_read_path(core_, dw, cmd.admin);
}

Completion CoreTransport::submit(const Command &cmd)
{
    // The hot path of small random reads (GPU-initiated, or host threads): an NVM Read the
    // core answers at once, with no future made; everything else goes through dispatch().
    csd_cmd dw;
    if (read_path(cmd, &dw) == CSD_READ_NOW) {
        if (!port_.nvm_io) return backing_->forward(cmd);  // the drive behind answers Reads
        const InFlightGate::Scope counted(gate_);
        return nvm(cmd, dw);
    }
    const InFlightGate::Scope counted(gate_);
    return dispatch(cmd, true).get();  // the drive behind answers what the core does not, on this thread
}

// Under a timing model, an NVM Read runs now and its modelled finish is returned rather than
// waited for (the delay or overrun is counted as for dispatch()'s); anything else as submit().
Completion CoreTransport::submit_deferred(const Command &cmd, uint64_t *finish_ns)
{
    *finish_ns = 0;
    csd_cmd dw;
    const int path = read_path(cmd, &dw);
    if (path != CSD_READ_SUBMIT && !port_.nvm_io) return backing_->forward_deferred(cmd, finish_ns);  // the drive's Reads
    if (path != CSD_READ_DEFERRED) return submit(cmd);  // nothing held, or a virtual clock's finish
    const InFlightGate::Scope counted(gate_);
    const Completion r = nvm(cmd, dw, finish_ns);
    csd_core_model_hold(core_, &port_, nullptr, *finish_ns);  // counts; the caller waits
    return r;
}

// The simulated peer-to-peer drive: the namespace's mapping, while the core answers a Read
// at once (none under a timing model, whose Reads must be commands).
const uint8_t *CoreTransport::namespace_host_pointer()
{
    const Command read{0x02, false, ns_.nsid};
    csd_cmd dw;
    return read_path(read, &dw) == CSD_READ_NOW ? backing_->mapping() : nullptr;
}

namespace {

// run(cmd) with its data read into a buffer of its own, whose bytes are dropped.
template <class Run>
Completion with_data_dropped(const Command &cmd, Run &&run)
{
    std::vector<uint8_t> dropped(cmd.data_len);
    Command c = cmd;
    c.data = dropped.data();
    return run(c);
}

}  // namespace

Completion CoreBacking::forward_mapped_read(const Command &cmd)
{
    return with_data_dropped(cmd, [this](const Command &c) { return forward(c); });
}

std::future<Completion> CoreBacking::forward_async(const Command &cmd) { return ready(forward(cmd)); }

// A Read the caller copies from the mapping itself: the core checks it as any Read (the
// drive behind does in host mode, counted on the bus there) and nothing is moved.
Completion CoreTransport::submit_mapped_read(const Command &cmd)
{
    csd_cmd dw;
    if (cmd.nsid != ns_.nsid || read_path(cmd, &dw) != CSD_READ_NOW || !backing_->mapping()) {
        return with_data_dropped(cmd, [this](const Command &c) { return submit(c); });  // no mapped Read: as it is
    }
    if (!port_.nvm_io) return backing_->forward_mapped_read(cmd);  // the drive behind answers Reads
    const InFlightGate::Scope counted(gate_);
    return nvm(cmd, dw, nullptr, false);
}

std::future<Completion> CoreTransport::submit_async(const Command &cmd)
{
    const InFlightGate::Scope counted(gate_);  // until it returns; one the core ends later counts until then
    return dispatch(cmd, false);
}

// NVMe Abort of a command submit_async sent that has not completed: the core ends it
// (Command Abort Requested) if it waits for a compute unit or a Compare and Write's LBAs,
// or stops its running program; a command the drive behind has, that drive's Abort.
bool CoreTransport::abort(const Command &cmd)
{
    {
        std::lock_guard<std::recursive_mutex> g(reqs_mu_);
        for (Req *r : reqs_) {
            if (r->cmd == &cmd) {
                csd_core_cancel(core_, static_cast<Cmd *>(r));
                return true;
            }
        }
    }
    return backing_->abort_forwarded(cmd);
}

// Before fork(): waits until no command is in flight (none then holds a lock of this device
// or of its core, or is half done) and holds new ones back until after it.
void CoreTransport::hold_for_fork()
{
    gate_.hold();
    pool_->hold();
}

// After fork(), in the parent and (child = true) in the child: commands go on. The child
// starts its own compute units with its first Execute.
void CoreTransport::resume_after_fork(bool child)
{
    backing_->after_fork(child);
    pool_->resume(child);
    gate_.resume(child);
}

// Runs one command: the core answers it through the port (NVM Read / Write / Flush over its
// nvm_io where it is the whole controller; SLM Load / Store, the copies and Compare and
// Write over its namespace I/O), or prepares an Execute's job for a compute unit; one it
// does not know goes to the drive behind.
std::future<Completion> CoreTransport::dispatch(const Command &cmd, bool sync)
{
    const csd_sqe sqe{core_cmd(cmd), cmd.cdw2, cmd.cdw3, 0, cmd.admin};
    csd_cpl cpl;
    csd_op op;
    auto *req = new Req{{this, &cmd}, {}};
    auto fut = req->done.get_future();
    gate_.enter_also();  // until the core posts it (port_complete), for CSD_CORE_LATER
    {
        std::lock_guard<std::recursive_mutex> g(reqs_mu_);
        reqs_.insert(req);
    }
    const uint16_t st = csd_core_submit(core_, &sqe, &port_, static_cast<Cmd *>(req), &cpl, &op);
    if (st == CSD_CORE_LATER) return fut;
    unlist(req);
    delete req;
    gate_.leave();
    if (st == CSD_CORE_NOT_MINE) return sync ? ready(backing_->forward(cmd)) : backing_->forward_async(cmd);
    wait_until(csd_core_model_hold(core_, &port_, nullptr, cpl.finish_ns));
    return ready({st, static_cast<uint64_t>(cpl.dw1) << 32 | cpl.dw0});
}

// A request whose work is done: abort() finds it no more.
void CoreTransport::unlist(Req *req)
{
    std::lock_guard<std::recursive_mutex> g(reqs_mu_);
    reqs_.erase(req);
}

// An NVM Read, Write or Flush answered by the core at once (csd_core_nvm_submit); dw: cmd as
// the core reads it (read_path's).
Completion CoreTransport::nvm(const Command &cmd, const csd_cmd &dw, uint64_t *finish, bool moved)
{
    Cmd c{this, &cmd, !moved};
    uint64_t none;  // the model is off: no finish
    return {csd_core_nvm_submit(core_, &dw, &port_, &c, finish ? finish : &none), 0};
}

// The port: host memory is the command's buffer.
uint16_t CoreTransport::from_host(void *req, void *buf, uint64_t len)
{
    const Command *c = static_cast<Cmd *>(req)->cmd;
    if (len > c->data_len) return kInvalidField;
    std::memcpy(buf, c->data, len);
    return 0;
}

uint16_t CoreTransport::to_host(void *req, const void *buf, uint64_t len)
{
    const Command *c = static_cast<Cmd *>(req)->cmd;
    if (len > c->data_len) return kInvalidField;
    std::memcpy(c->data, buf, len);
    return 0;
}

// What the core knows of the namespace: its metadata too (a plain drive's format in host
// mode; the in-process device's file has none), so that the core refuses to move its blocks
// without their protection information.
int CoreTransport::ns_info(void *self, uint32_t nsid, csd_ctx *ctx)
{
    const auto *t = static_cast<const CoreTransport *>(self);
    if (nsid != t->ns_.nsid) return -1;
    *ctx = csd_ctx{t->ns_.lba_count, t->ns_.lba_size, 0, 0, t->ns_.metadata};  // max_transfer: the port's
    return 0;
}

uint64_t CoreTransport::port_now(void *) { return now_ns(); }

// The timing model's clock: the core's virtual one (exact=on), else the host's steady clock.
uint64_t CoreTransport::model_clock_ns() const { return csd_core_model_clock(core_, &port_); }

// Namespace I/O of the port (the core checked the range): done at once, by the backing.
void CoreTransport::ns_io(void *req, uint32_t, int write, uint64_t off, void *buf, uint64_t len, csd_io_done done,
                          void *arg)
{
    done(arg, static_cast<Cmd *>(req)->t->backing_->io(write != 0, off, static_cast<uint8_t *>(buf), len));
}

// A command the core ended later: no earlier than its modelled finish, and not abortable
// while it waits for it (its work is done, as in QEMU, whose Abort finds nothing then).
void CoreTransport::port_complete(void *req, uint16_t status, const csd_cpl *cpl)
{
    auto *r = static_cast<Req *>(static_cast<Cmd *>(req));
    CoreTransport *t = r->t;
    t->unlist(r);
    wait_until(csd_core_model_hold(t->core_, &t->port_, req, cpl->finish_ns));  // exact=on: the core's clock moves
    r->done.set_value({status, static_cast<uint64_t>(cpl->dw1) << 32 | cpl->dw0});
    delete r;
    t->gate_.leave();
}

// The port's compute unit: a worker thread runs work, then done.
void CoreTransport::run(void *req, int (*work)(void *), void (*done)(void *, int), void *arg)
{
    static_cast<Cmd *>(req)->t->pool_->run([work, done, arg] { done(arg, work(arg)); });
}

// Compare and Write's range against the namespace's other writers: the backing's.
int CoreTransport::exclusive(void *req, uint32_t, uint64_t off, uint64_t len, int on)
{
    return static_cast<Cmd *>(req)->t->backing_->exclusive(off, len, on != 0);
}

// The port's NVM I/O (the core checked the command): the backing's, into the command's buffer.
uint16_t CoreTransport::port_nvm_io(void *req, uint32_t, int write, uint64_t off, uint64_t len)
{
    const Cmd *r = static_cast<Cmd *>(req);
    if (r->cmd->data_len < len) return kInvalidField;
    if (r->mapped) return CSD_STATUS_SUCCESS;  // its bytes are copied from the mapping by the caller
    return r->t->backing_->io(write != 0, off, static_cast<uint8_t *>(r->cmd->data), len);
}

}  // namespace csd
