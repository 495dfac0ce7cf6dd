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
#include <thread>
#include <vector>

#include "csd/error.hpp"
#include "transports.hpp"

namespace csd {

namespace {

// Threads that run blocking submissions for transports without native asynchrony
// (ioctl): started once, so an asynchronous command costs a queue hand-off, not a
// thread start.
class BlockingPool {
public:
    explicit BlockingPool(unsigned n)
    {
        for (unsigned i = 0; i < n; i++) {
            threads_.emplace_back([this] { run(); });
        }
    }
    ~BlockingPool()
    {
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
            jobs_.push_back(std::move(f));
        }
        cv_.notify_one();
    }

private:
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

std::unique_ptr<Transport> open_emu(const std::string &spec)
{
    const auto make = reinterpret_cast<decltype(&csd_emu_make_transport)>(
        emu_symbol("csd_emu_make_transport", "open emu:" + spec + ": the in-process device"));
    return std::unique_ptr<Transport>(make(&spec));
}

}  // namespace

std::unique_ptr<Transport> open_host_mode(std::unique_ptr<Transport> drive, uint64_t slm_size, uint32_t units,
                                          std::function<void(const Command &)> on_bus)
{
    const auto make = reinterpret_cast<decltype(&csd_emu_make_host_transport)>(
        emu_symbol("csd_emu_make_host_transport", "host mode (programs run on the host)"));
    return std::unique_ptr<Transport>(make(drive.release(), slm_size, units, &on_bus));
}

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
    if (path.rfind("emu:", 0) == 0) {
        return open_emu(path.substr(4));
    }
    if (path.rfind("/dev/csd", 0) == 0) {
        return make_kmod_transport(path);
    }
    if (path.rfind("/dev/", 0) != 0) {
        throw Error("open " + path + ": expected /dev/ngXnY, /dev/nvmeXnY, /dev/csdN[?slm=16M] or "
                    "emu:<file>[?slm=64M&lba=512&cu=2&size=256M]",
                    EINVAL);
    }
#ifdef CSD_HAVE_PASSTHRU
    if (opts.use_uring) {
        return make_uring_transport(path, opts.queue_depth);
    }
    return make_ioctl_transport(path);
#else
    (void)opts;
    throw Error("open " + path + ": this libcsd was built without NVMe passthrough (no libnvme/liburing)", ENOTSUP);
#endif
}

}  // namespace csd
