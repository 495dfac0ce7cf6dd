// SPDX-License-Identifier: MIT
// transport.cc - picks a backend for a path; the default asynchronous submit; loads the
// in-process device (libcsd-emu) on the first emu: path.
#include <dlfcn.h>

#include <cerrno>
#include <cstdlib>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <functional>
#include <mutex>
#include <new>
#include <thread>
#include <vector>

#include "csd/error.hpp"
#include "csd/in_process.hpp"
#include "fork_hold.hpp"
#include "csd_spec.h"
#include "transports.hpp"

namespace csd {

namespace {

// Threads that run blocking submissions for transports without native asynchrony
// (ioctl, and host mode's commands for the drive): started once, so an asynchronous
// command costs a queue hand-off, not a thread start. A child forked after they started
// has none of them: it starts its own with its first job (the parent's queued jobs stay
// the parent's).
class BlockingPool {
public:
    explicit BlockingPool(unsigned n) : n_(n)
    {
        start();
        fork_hold_add(this, ForkLevel::allocator, [this] { mu_.lock(); }, [this](bool child) { after_fork(child); });
    }
    ~BlockingPool()
    {
        fork_hold_remove(this);
        {
            std::lock_guard<std::mutex> g(mu_);
            stop_ = true;
        }
        cv_.notify_all();
        for (auto &t : threads_) t.join();
    }
    void post(std::function<void()> f)
    {
        {
            std::lock_guard<std::mutex> g(mu_);
            if (threads_.empty()) start();  // a child forked after they started
            jobs_.push_back(std::move(f));
        }
        cv_.notify_one();
    }

private:
    void start()
    {
        for (unsigned i = 0; i < n_; i++) threads_.emplace_back([this] { run(); });
    }
    // After fork(): in the child the threads (and their waits) are the parent's: their
    // handles are forgotten (joining a thread of another process is undefined), the
    // condition variable made anew and the parent's queued jobs dropped.
    void after_fork(bool child)
    {
        if (child) {
            for (auto &t : threads_) new (&t) std::thread();  // not ours: no destructor
            threads_.clear();
            jobs_.clear();
            new (&cv_) std::condition_variable();
        }
        mu_.unlock();
    }

    void run()
    {
        for (;;) {
            std::function<void()> f;
            {
                std::unique_lock<std::mutex> g(mu_);
                cv_.wait(g, [this] { return stop_ || !jobs_.empty(); });
                if (jobs_.empty()) return;
                f = std::move(jobs_.front());
                jobs_.pop_front();
            }
            f();
        }
    }
    std::mutex mu_;
    std::condition_variable cv_;
    std::deque<std::function<void()>> jobs_;
    bool stop_ = false;
    const unsigned n_;
    std::vector<std::thread> threads_;
};

BlockingPool &blocking_pool()
{
    static BlockingPool pool(32);
    return pool;
}

// The in-process device and host mode's compute live in their own library, libcsd-emu.so,
// since they link the device core's BLAS, compression and eBPF runtimes, which no other
// path needs. It is loaded once (never unloaded) from $CSD_EMU_LIBRARY if set, else from the
// folder this libcsd was loaded from, else by the dynamic loader's search path; returns the
// entry point `name` in it. `what` names the caller in the error.
void *emu_symbol(const char *name, const std::string &what)
{
    static std::mutex mu;
    static void *handle = nullptr;
    std::lock_guard<std::mutex> g(mu);
    std::string why;
    if (!handle) {
        std::vector<std::string> tried;
        if (const char *env = std::getenv("CSD_EMU_LIBRARY"); env && *env) {
            tried.push_back(env);
        } else {
            Dl_info self{};
            if (dladdr(reinterpret_cast<void *>(&open_transport), &self) && self.dli_fname) {
                const std::string me = self.dli_fname;
                const size_t slash = me.rfind('/');
                if (slash != std::string::npos) tried.push_back(me.substr(0, slash + 1) + "libcsd-emu.so");
            }
            tried.push_back("libcsd-emu.so");
        }
        for (const std::string &lib : tried) {
            void *h = dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
            if (!h) {
                why += std::string(why.empty() ? "" : "; ") + dlerror();
                continue;
            }
            if (dlsym(h, "csd_emu_make_transport")) {
                handle = h;
                break;
            }
            why += std::string(why.empty() ? "" : "; ") + lib + ": no csd_emu_make_transport";
            dlclose(h);
        }
    }
    void *sym = handle ? dlsym(handle, name) : nullptr;
    if (!sym) {
        throw Error(what + ": the device core's library libcsd-emu.so could not be loaded" +
                        (why.empty() ? std::string(" (it has no ") + name + ")" : " (" + why + ")") +
                        "; build it (meson target csd-emu) and keep it beside libcsd.so, or name it in CSD_EMU_LIBRARY",
                    ENOENT);
    }
    return sym;
}

std::unique_ptr<Transport> open_emu(const std::string &spec, bool read_only)
{
    if (read_only) {
        const auto make = reinterpret_cast<decltype(&csd_emu_make_transport_flags)>(
            emu_symbol("csd_emu_make_transport_flags", "open emu:" + spec + " read-only: the in-process device"));
        return std::unique_ptr<Transport>(make(&spec, CSD_EMU_READ_ONLY));
    }
    const auto make = reinterpret_cast<decltype(&csd_emu_make_transport)>(
        emu_symbol("csd_emu_make_transport", "open emu:" + spec + ": the in-process device"));
    return std::unique_ptr<Transport>(make(&spec));
}

// The name of a command that changes a namespace's data, or nullptr for one that does not.
const char *data_changing(const Command &cmd)
{
    if (cmd.admin) {
        switch (cmd.opcode) {
        case 0x80: return "Format NVM";
        case 0x84: return "Sanitize";
        case 0x0D: return "Namespace Management";
        case 0x15: return "Namespace Attachment";
        case 0x10: return "Firmware Commit";
        case 0x11: return "Firmware Image Download";
        default: return nullptr;
        }
    }
    switch (cmd.opcode) {
    case 0x01: return "Write";
    case 0x04: return "Write Uncorrectable";
    case 0x08: return "Write Zeroes";
    case 0x09: return "Dataset Management";
    case 0x19: return "Copy";
    case 0x79: return "Zone Management Send";
    case 0x7D: return "Zone Append";
    case CSD_OPC_SLM_STORE: return "SLM Store";
    case CSD_OPC_COMPARE_WRITE: return "Compare and Write";
    default: return nullptr;
    }
}

// A transport opened read-only: commands that would change the namespace's data are
// refused (EROFS) here, before the drive; everything else passes to the backend.
class ReadOnlyTransport : public Transport {
public:
    explicit ReadOnlyTransport(std::unique_ptr<Transport> inner) : inner_(std::move(inner)) {}
    const char *name() const override { return inner_->name(); }
    Completion submit(const Command &cmd) override
    {
        refuse_if_writes(cmd, inner_->ns().nsid);
        return inner_->submit(cmd);
    }
    std::future<Completion> submit_async(const Command &cmd) override
    {
        try {
            refuse_if_writes(cmd, inner_->ns().nsid);
        } catch (...) {
            std::promise<Completion> p;
            p.set_exception(std::current_exception());
            return p.get_future();
        }
        return inner_->submit_async(cmd);
    }
    bool abort(const Command &cmd) override { return inner_->abort(cmd); }
    uint32_t max_transfer() const override { return inner_->max_transfer(); }
    NamespaceInfo ns() const override { return inner_->ns(); }
    bool read_only() const override { return true; }

protected:
    std::unique_ptr<Transport> inner_;
};

// The same over a device in this process: its InProcess side, deferred commands refused
// alike.
class ReadOnlyInProcess : public ReadOnlyTransport, public InProcess {
public:
    ReadOnlyInProcess(std::unique_ptr<Transport> inner, InProcess *in)
        : ReadOnlyTransport(std::move(inner)), in_(in)
    {
    }
    Completion submit_deferred(const Command &cmd, uint64_t *finish_ns) override
    {
        refuse_if_writes(cmd, inner_->ns().nsid);
        return in_->submit_deferred(cmd, finish_ns);
    }
    uint8_t *slm_host_pointer() override { return in_->slm_host_pointer(); }
    std::string backing_file() const override { return in_->backing_file(); }
    const uint8_t *namespace_host_pointer() override { return in_->namespace_host_pointer(); }
    Completion submit_mapped_read(const Command &cmd) override { return in_->submit_mapped_read(cmd); }
    uint64_t model_clock_ns() const override { return in_->model_clock_ns(); }

private:
    InProcess *in_;  // inner_'s
};

// The backend for path, opened as opts say.
std::unique_ptr<Transport> open_backend(const std::string &path, const OpenOptions &opts)
{
    if (path.rfind("emu:", 0) == 0) {
        return open_emu(path.substr(4), opts.read_only);
    }
    if (path.rfind("/dev/csd", 0) == 0) {
        return make_kmod_transport(path);  // read-write: its SLM is mapped (writes still refused)
    }
    if (path.rfind("/dev/", 0) != 0) {
        throw Error("open " + path + ": expected /dev/ngXnY, /dev/nvmeXnY, /dev/csdN[?slm=16M] or "
                    "emu:<file>[?slm=64M&lba=512&cu=2&size=256M]",
                    EINVAL);
    }
#ifdef CSD_HAVE_PASSTHRU
    if (opts.use_uring) {
        return make_uring_transport(path, opts.queue_depth, opts.read_only);
    }
    return make_ioctl_transport(path, opts.read_only);
#else
    throw Error("open " + path + ": this libcsd was built without NVMe passthrough (no libnvme/liburing)", ENOTSUP);
#endif
}

}  // namespace

void refuse_if_writes(const Command &cmd, uint32_t nsid, const char *what)
{
    const char *changes = data_changing(cmd);
    if (!changes || (!cmd.admin && cmd.nsid != nsid && cmd.nsid != 0xFFFFFFFFu)) return;
    throw Error(std::string(what ? what : changes) + " refused: the device was opened read-only (csdctl --read-only, "
                                                     "read_only=True, CSD_OPEN_READ_ONLY, OpenOptions::read_only)",
                EROFS);
}

std::unique_ptr<Transport> open_host_mode(std::unique_ptr<Transport> drive, uint64_t slm_size, uint32_t units,
                                          std::function<void(const Command &)> on_bus)
{
    const auto make = reinterpret_cast<decltype(&csd_emu_make_host_transport)>(
        emu_symbol("csd_emu_make_host_transport", "host mode (programs run on the host)"));
    return std::unique_ptr<Transport>(make(drive.release(), slm_size, units, &on_bus));
}

InProcess *in_process(Transport &t) { return dynamic_cast<InProcess *>(&t); }

const InProcess *in_process(const Transport &t) { return dynamic_cast<const InProcess *>(&t); }

std::future<Completion> Transport::submit_async(const Command &cmd)
{
    auto promise = std::make_shared<std::promise<Completion>>();
    auto fut = promise->get_future();
    blocking_pool().post([this, cmd, promise] {
        try {
            promise->set_value(submit(cmd));
        } catch (...) {
            promise->set_exception(std::current_exception());
        }
    });
    return fut;
}

const char *front_end_name(FrontEnd fe)
{
    switch (fe) {
    case FrontEnd::Vendor: return "vendor";
    case FrontEnd::NvmeCs: return "nvme-cs";
    case FrontEnd::Host: return "host";
    default: return "auto";
    }
}

FrontEnd parse_front_end(const std::string &name)
{
    if (name == "auto" || name.empty()) return FrontEnd::Auto;
    if (name == "vendor") return FrontEnd::Vendor;
    if (name == "nvme-cs") return FrontEnd::NvmeCs;
    if (name == "host") return FrontEnd::Host;
    throw Error("front end '" + name + "': expected auto, vendor, nvme-cs or host", EINVAL);
}

std::unique_ptr<Transport> open_transport(const std::string &path, const OpenOptions &opts)
{
    std::unique_ptr<Transport> t;
    try {
        t = open_backend(path, opts);
    } catch (const Error &e) {
        if (opts.read_only || (e.errnum() != EACCES && e.errnum() != EPERM && e.errnum() != EROFS)) throw;
        // "emu: open F: Permission denied" -> "emu: open F (to read and write; ...): Permission denied"
        std::string what = e.what();
        const std::string reason = std::string(": ") + std::strerror(e.errnum());
        if (what.size() >= reason.size() && what.compare(what.size() - reason.size(), reason.size(), reason) == 0) {
            what.resize(what.size() - reason.size());
        }
        throw Error(what + " (to read and write; to only read it: csdctl --read-only, nvme_csd.open(..., "
                           "read_only=True), csd_open_flags(.., CSD_OPEN_READ_ONLY, ..), OpenOptions::read_only)",
                    e.errnum());
    }
    if (opts.read_only) {
        InProcess *in = in_process(*t);
        t = in ? std::unique_ptr<Transport>(new ReadOnlyInProcess(std::move(t), in))
               : std::unique_ptr<Transport>(new ReadOnlyTransport(std::move(t)));
    }
    return t;
}

}  // namespace csd
