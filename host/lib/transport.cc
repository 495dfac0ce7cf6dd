// SPDX-License-Identifier: MIT
// transport.cc - picks a backend for a path; the default asynchronous submit.
#include <cerrno>
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

}  // namespace

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
    default: return "auto";
    }
}

FrontEnd parse_front_end(const std::string &name)
{
    if (name == "auto" || name.empty()) return FrontEnd::Auto;
    if (name == "vendor") return FrontEnd::Vendor;
    if (name == "nvme-cs") return FrontEnd::NvmeCs;
    throw Error("front end '" + name + "': expected auto, vendor or nvme-cs", EINVAL);
}

std::unique_ptr<Transport> open_transport(const std::string &path, const OpenOptions &opts)
{
    if (path.rfind("emu:", 0) == 0) {
        return make_inproc_transport(path.substr(4));
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
