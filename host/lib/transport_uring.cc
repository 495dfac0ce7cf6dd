// transport_uring.cc - asynchronous NVMe passthrough over io_uring on /dev/ngXnY:
// IORING_SETUP_SQE128 | CQE32, NVME_URING_CMD_IO with a struct nvme_uring_cmd in the
// SQE; cqe->res is 0, a positive NVMe status or -errno; big_cqe[0] is the 64-bit result.
// A reaper thread completes the futures; at most queue_depth commands are in flight.
#include <liburing.h>
#include <linux/nvme_ioctl.h>

#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <thread>

#include "csd/error.hpp"
#include "nvme_dev.hpp"
#include "transports.hpp"

namespace csd {

namespace {

constexpr uint64_t kStop = ~0ull;

class TransportUring : public Transport {
public:
    TransportUring(const std::string &path, unsigned depth) : dev_(path, true), depth_(depth ? depth : 64)
    {
        io_uring_params p{};
        p.flags = IORING_SETUP_SQE128 | IORING_SETUP_CQE32;
        const int rc = io_uring_queue_init_params(depth_, &ring_, &p);
        if (rc < 0) {
            throw Error("io_uring_queue_init (SQE128|CQE32, depth " + std::to_string(depth_) + ")", -rc);
        }
        reaper_ = std::thread([this] { reap(); });
    }

    ~TransportUring() override
    {
        {
            std::unique_lock<std::mutex> g(mu_);
            io_uring_sqe *sqe = next_sqe();
            io_uring_prep_nop(sqe);
            io_uring_sqe_set_data64(sqe, kStop);
            io_uring_submit(&ring_);
        }
        reaper_.join();
        io_uring_queue_exit(&ring_);
    }

    const char *name() const override { return "uring"; }
    uint32_t max_transfer() const override { return dev_.max_transfer(); }
    NamespaceInfo ns() const override { return dev_.ns(); }

    Completion submit(const Command &cmd) override { return submit_async(cmd).get(); }

    std::future<Completion> submit_async(const Command &cmd) override
    {
        auto *promise = new std::promise<Completion>();
        auto fut = promise->get_future();
        if (cmd.admin) {  // admin commands are rare: the ioctl path
            try {
                promise->set_value(dev_.ioctl_submit(cmd));
            } catch (...) {
                promise->set_exception(std::current_exception());
            }
            delete promise;
            return fut;
        }
        std::unique_lock<std::mutex> g(mu_);
        room_.wait(g, [this] { return inflight_ < depth_; });
        io_uring_sqe *sqe = next_sqe();
        std::memset(sqe, 0, 128);
        sqe->opcode = IORING_OP_URING_CMD;
        sqe->fd = dev_.fd();
        sqe->cmd_op = NVME_URING_CMD_IO;
        auto *uc = reinterpret_cast<nvme_uring_cmd *>(sqe->cmd);
        uc->opcode = cmd.opcode;
        uc->nsid = cmd.nsid;
        uc->addr = reinterpret_cast<uintptr_t>(cmd.data);
        uc->data_len = cmd.data_len;
        uc->cdw10 = cmd.cdw10;
        uc->cdw11 = cmd.cdw11;
        uc->cdw12 = cmd.cdw12;
        uc->cdw13 = cmd.cdw13;
        uc->cdw14 = cmd.cdw14;
        uc->cdw15 = cmd.cdw15;
        io_uring_sqe_set_data64(sqe, reinterpret_cast<uintptr_t>(promise));
        inflight_++;
        const int rc = io_uring_submit(&ring_);
        if (rc < 0) {
            inflight_--;
            delete promise;
            throw Error("io_uring_submit", -rc);
        }
        return fut;
    }

private:
    io_uring_sqe *next_sqe()
    {
        io_uring_sqe *sqe;
        while ((sqe = io_uring_get_sqe(&ring_)) == nullptr) {
            io_uring_submit(&ring_);
        }
        return sqe;
    }

    void reap()
    {
        for (;;) {
            io_uring_cqe *cqe;
            const int rc = io_uring_wait_cqe(&ring_, &cqe);
            if (rc == -EINTR) {
                continue;
            }
            if (rc < 0) {
                return;
            }
            const uint64_t data = io_uring_cqe_get_data64(cqe);
            const int res = cqe->res;
            const uint64_t result = cqe->big_cqe[0];
            io_uring_cqe_seen(&ring_, cqe);
            if (data == kStop) {
                return;
            }
            auto *promise = reinterpret_cast<std::promise<Completion> *>(data);
            if (res < 0) {
                promise->set_exception(std::make_exception_ptr(Error("io_uring passthrough", -res)));
            } else {
                promise->set_value(Completion{static_cast<uint16_t>(res), result});
            }
            delete promise;
            {
                std::lock_guard<std::mutex> g(mu_);
                inflight_--;
            }
            room_.notify_one();
        }
    }

    NvmeDev dev_;
    unsigned depth_;
    io_uring ring_{};
    std::mutex mu_;
    std::condition_variable room_;
    unsigned inflight_ = 0;
    std::thread reaper_;
};

}  // namespace

std::unique_ptr<Transport> make_uring_transport(const std::string &path, unsigned queue_depth)
{
    return std::make_unique<TransportUring>(path, queue_depth);
}

}  // namespace csd
