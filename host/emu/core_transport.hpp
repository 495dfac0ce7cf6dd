// SPDX-License-Identifier: MIT
// core_transport.hpp - the device core embedded in this process (internal to libcsd-emu):
// the one seam through which the in-process device and host mode reach the core, as QEMU's
// glue does through hw/nvme. Every command goes to csd_core_submit over a port; what the
// core leaves (CSD_CORE_NOT_MINE) goes to the drive behind it. A CoreBacking says where the
// namespace's bytes live: a backing file (transport_inproc.cc) or a plain NVMe drive's
// Reads and Writes (transport_host.cc).
#pragma once

#include <atomic>
#include <cstdint>
#include <future>
#include <memory>
#include <mutex>
#include <set>
#include <string>

#include "csd/in_process.hpp"
#include "csd/transport.hpp"
#include "csd_core.h"
#include "emu_threads.hpp"

namespace csd {

// NN of a core embedded in this process: NSIDs 1..256, as QEMU's (the port's max_nsid, and
// where the standard front end's namespaces may go).
constexpr uint32_t kCoreMaxNsid = 256;

// Where a CoreTransport's namespace lives, and who answers what its core does not.
class CoreBacking {
public:
    virtual ~CoreBacking() = default;
    // The namespace the core's commands name (one: NSID ns().nsid).
    virtual NamespaceInfo ns() const = 0;
    // Largest data transfer of one command, in bytes.
    virtual uint32_t max_transfer() const = 0;
    // The backing file, or "" where there is none.
    virtual std::string file() const { return {}; }
    // len bytes at byte pos of the namespace from (write) or into buf (the port's ns_io, and
    // its nvm_io where the core is the whole controller: a Flush is a write of 0 bytes); an
    // NVMe status.
    virtual uint16_t io(bool write, uint64_t pos, uint8_t *buf, uint64_t len) = 0;
    // Whether the core is the whole controller (it answers NVM Read / Write / Flush over
    // nvm_io, and Identify); else those go to forward().
    virtual bool whole_controller() const = 0;
    // A command the core does not answer (CSD_CORE_NOT_MINE), sent to the drive behind
    // (none behind a whole controller: Invalid Opcode).
    virtual Completion forward(const Command &) { return {CSD_STATUS_INVALID_OPCODE | CSD_STATUS_DNR, 0}; }
    // The same, its completion in a future.
    virtual std::future<Completion> forward_async(const Command &cmd);
    // The same as InProcess::submit_deferred of the drive behind (its modelled finish).
    virtual Completion forward_deferred(const Command &cmd, uint64_t *finish_ns)
    {
        *finish_ns = 0;
        return forward(cmd);
    }
    // A Read the caller copies from mapping() itself, sent to the drive behind
    // (InProcess::submit_mapped_read): answered, no data moved to cmd.data. Default:
    // forward() into a buffer of its own, whose bytes are dropped.
    virtual Completion forward_mapped_read(const Command &cmd);
    // NVMe Abort of a forwarded command in flight; false if it cannot.
    virtual bool abort_forwarded(const Command &) { return false; }
    // The port's exclusive: takes (on) or gives back the bytes [off, off + len) against
    // other writers of the namespace; non-zero when it cannot.
    virtual int exclusive(uint64_t, uint64_t, bool) { return 0; }
    // The namespace mapped into this process, or nullptr.
    virtual const uint8_t *mapping() { return nullptr; }
    // After fork(), in the parent and (child true) in the child.
    virtual void after_fork(bool) {}
};

// The core, its compute units and its port over a CoreBacking, as a Transport, with what a
// device in this process offers beyond it (InProcess).
class CoreTransport : public Transport, public InProcess {
public:
    // Takes core (freed with this) and backing; `units` worker threads are the compute
    // units; serial and model answer Identify where the core is the whole controller.
    CoreTransport(const char *name, csd_core *core, std::unique_ptr<CoreBacking> backing, uint32_t units,
                  const char *serial, const char *model);
    ~CoreTransport() override;

    const char *name() const override { return name_; }
    uint32_t max_transfer() const override { return backing_->max_transfer(); }
    NamespaceInfo ns() const override { return ns_; }
    std::string backing_file() const override { return backing_->file(); }
    uint8_t *slm_host_pointer() override { return csd_core_slm_base(core_); }
    Completion submit(const Command &cmd) override;
    Completion submit_deferred(const Command &cmd, uint64_t *finish_ns) override;
    const uint8_t *namespace_host_pointer() override;
    Completion submit_mapped_read(const Command &cmd) override;
    std::future<Completion> submit_async(const Command &cmd) override;
    bool abort(const Command &cmd) override;
    uint64_t model_clock_ns() const override;

private:
    struct Cmd;
    struct Req;
    void hold_for_fork();
    void resume_after_fork(bool child);
    // sync: the caller waits for it (a command the core does not answer goes to the drive
    // on this thread, not through the drive's asynchronous path).
    std::future<Completion> dispatch(const Command &cmd, bool sync);
    void unlist(Req *req);
    int read_path(const Command &cmd, csd_cmd *dw) const;
    // An NVM command through the core (csd_core_nvm_submit), its modelled finish in *finish
    // (nullptr: the model is off); moved: false for a mapped Read (the port's nvm_io checks
    // it and moves nothing).
    Completion nvm(const Command &cmd, const csd_cmd &dw, uint64_t *finish = nullptr, bool moved = true);
    static uint16_t from_host(void *req, void *buf, uint64_t len);
    static uint16_t to_host(void *req, const void *buf, uint64_t len);
    static int ns_info(void *self, uint32_t nsid, csd_ctx *ctx);
    static uint64_t port_now(void *self);
    static void ns_io(void *req, uint32_t, int write, uint64_t off, void *buf, uint64_t len, csd_io_done done,
                      void *arg);
    static void port_complete(void *req, uint16_t status, const csd_cpl *cpl);
    static void run(void *req, int (*work)(void *), void (*done)(void *, int), void *arg);
    static int exclusive(void *req, uint32_t, uint64_t off, uint64_t len, int on);
    static uint16_t port_nvm_io(void *req, uint32_t, int write, uint64_t off, uint64_t len);

    const char *name_;
    csd_core *core_;
    std::unique_ptr<CoreBacking> backing_;
    NamespaceInfo ns_;
    csd_port port_{};  // the core's view of this device
    std::unique_ptr<WorkerPool> pool_;  // the compute units
    std::recursive_mutex reqs_mu_;  // the requests the core holds (abort: its cancel may complete one)
    std::set<Req *> reqs_;
    InFlightGate gate_;  // commands in flight, for fork()
};

}  // namespace csd
