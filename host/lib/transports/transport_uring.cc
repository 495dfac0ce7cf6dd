// SPDX-License-Identifier: MIT
// transport_uring.cc - asynchronous NVMe passthrough over io_uring on /dev/ngXnY:
// IORING_SETUP_SQE128 | CQE32, NVME_URING_CMD_IO with a struct nvme_uring_cmd in the
// SQE; cqe->res is 0, a positive NVMe status or -errno; big_cqe[0] is the 64-bit result.
// At most queue_depth commands are in flight; more wait in a queue.
#include <liburing.h>
#include <linux/nvme_ioctl.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>

#include "csd/error.hpp"
#include "nvme_dev.hpp"
#include "transports.hpp"

namespace csd {

namespace {

constexpr uint64_t kWake = ~0ull;

// One thread owns the ring: it submits queued commands and reaps completions, so the
// kernel's completion work for passthrough commands runs in the submitting task while
// it waits in io_uring_enter (commands submitted from one thread and reaped on another
// complete only at the next timer tick). An eventfd read in the ring wakes it for new work.
class TransportUring : public Transport {
public:
    TransportUring(const std::string &path, unsigned depth, bool read_only)
        : dev_(path, true, read_only), depth_(depth ? depth : 64)
    {
        io_uring_params p{};
        p.flags = IORING_SETUP_SQE128 | IORING_SETUP_CQE32;
        const int rc = io_uring_queue_init_params(depth_ + 1, &ring_, &p);
        if (rc < 0) {
            throw Error("io_uring_queue_init (SQE128|CQE32, depth " + std::to_string(depth_) + ")", -rc);
        }
        efd_ = eventfd(0, EFD_CLOEXEC);
        if (efd_ < 0) {
            const int e = errno;
            io_uring_queue_exit(&ring_);
            throw Error("eventfd", e);
        }
        thread_ = std::thread([this] { loop(); });
    }

    ~TransportUring() override
    {
        {
            std::lock_guard<std::mutex> g(mu_);
            stop_ = true;
        }
        wake();
        thread_.join();
        io_uring_queue_exit(&ring_);
        ::close(efd_);
    }

    const char *name() const override { return "uring"; }
    uint32_t max_transfer() const override { return dev_.max_transfer(); }
    NamespaceInfo ns() const override { return dev_.ns(); }

    Completion submit(const Command &cmd) override { return submit_async(cmd).get(); }

    std::future<Completion> submit_async(const Command &cmd) override
    {
        if (cmd.admin) {  // admin commands are rare: the ioctl path
            std::promise<Completion> p;
            try {
                p.set_value(dev_.ioctl_submit(cmd));
            } catch (...) {
                p.set_exception(std::current_exception());
            }
            return p.get_future();
        }
        auto *job = new Job{cmd, dev_.fd_for(cmd.nsid), {}};  // throws here, not in the ring thread
        auto fut = job->promise.get_future();
        {
            std::lock_guard<std::mutex> g(mu_);
            queue_.push_back(job);
        }
        wake();
        return fut;
    }

private:
    struct Job {
        Command cmd;
        int fd;  // the node of cmd.nsid
        std::promise<Completion> promise;
    };

    void wake()
    {
        const uint64_t one = 1;
        if (::write(efd_, &one, sizeof one) < 0) {
            // the counter only saturates; the ring thread wakes anyway
        }
    }

    void arm_wake()
    {
        io_uring_sqe *sqe = io_uring_get_sqe(&ring_);
        io_uring_prep_read(sqe, efd_, &efd_value_, sizeof efd_value_, 0);
        io_uring_sqe_set_data64(sqe, kWake);
    }

    void prep(Job *job)
    {
        io_uring_sqe *sqe = io_uring_get_sqe(&ring_);
        std::memset(sqe, 0, 128);
        sqe->opcode = IORING_OP_URING_CMD;
        sqe->fd = job->fd;
        sqe->cmd_op = NVME_URING_CMD_IO;
        auto *uc = reinterpret_cast<nvme_uring_cmd *>(sqe->cmd);
        const Command &c = job->cmd;
        uc->opcode = c.opcode;
        uc->nsid = c.nsid;
        uc->cdw2 = c.cdw2;
        uc->cdw3 = c.cdw3;
        uc->addr = reinterpret_cast<uintptr_t>(c.data);
        uc->data_len = c.data_len;
        uc->cdw10 = c.cdw10;
        uc->cdw11 = c.cdw11;
        uc->cdw12 = c.cdw12;
        uc->cdw13 = c.cdw13;
        uc->cdw14 = c.cdw14;
        uc->cdw15 = c.cdw15;
        io_uring_sqe_set_data64(sqe, reinterpret_cast<uintptr_t>(job));
    }

    void loop()
    {
        unsigned inflight = 0;
        arm_wake();
        for (;;) {
            bool stop;
            {
                std::lock_guard<std::mutex> g(mu_);
                while (!queue_.empty() && inflight < depth_) {
                    prep(queue_.front());
                    queue_.pop_front();
                    inflight++;
                }
                stop = stop_ && queue_.empty() && inflight == 0;
            }
            if (stop) {
                return;
            }
            int rc = io_uring_submit_and_wait(&ring_, 1);
            if (rc < 0 && rc != -EINTR && rc != -EBUSY) {
                fail_all(rc);
                return;
            }
            io_uring_cqe *cqe;
            unsigned head, seen = 0;
            io_uring_for_each_cqe(&ring_, head, cqe)
            {
                seen++;
                const uint64_t data = io_uring_cqe_get_data64(cqe);
                if (data == kWake) {
                    arm_wake();
                    continue;
                }
                auto *job = reinterpret_cast<Job *>(data);
                if (cqe->res < 0) {
                    job->promise.set_exception(std::make_exception_ptr(Error("io_uring passthrough", -cqe->res)));
                } else {
                    job->promise.set_value(Completion{static_cast<uint16_t>(cqe->res), cqe->big_cqe[0]});
                }
                delete job;
                inflight--;
            }
            io_uring_cq_advance(&ring_, seen);
        }
    }

    void fail_all(int rc)
    {
        std::lock_guard<std::mutex> g(mu_);
        for (Job *j : queue_) {
            j->promise.set_exception(std::make_exception_ptr(Error("io_uring_submit_and_wait", -rc)));
            delete j;
        }
        queue_.clear();
    }

    NvmeDev dev_;
    unsigned depth_;
    io_uring ring_{};
    int efd_ = -1;
    uint64_t efd_value_ = 0;
    std::mutex mu_;
    std::deque<Job *> queue_;
    bool stop_ = false;
    std::thread thread_;
};

}  // namespace

std::unique_ptr<Transport> make_uring_transport(const std::string &path, unsigned queue_depth, bool read_only)
{
    return std::make_unique<TransportUring>(path, queue_depth, read_only);
}

}  // namespace csd
