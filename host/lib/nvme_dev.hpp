// nvme_dev.hpp - what the ioctl and io_uring backends share: opening /dev/ngXnY or
// /dev/nvmeXnY, the namespace's facts, the kernel's transfer limit, ioctl passthrough.
#pragma once

#include <string>

#include "csd/transport.hpp"

namespace csd {

class NvmeDev {
public:
    // Opens the device (for io_uring, the generic char device /dev/ngXnY is used).
    NvmeDev(const std::string &path, bool want_generic);
    ~NvmeDev();
    NvmeDev(const NvmeDev &) = delete;
    NvmeDev &operator=(const NvmeDev &) = delete;

    int fd() const { return fd_; }
    const NamespaceInfo &ns() const { return ns_; }
    uint32_t max_transfer() const { return max_transfer_; }
    // One command through NVME_IOCTL_{ADMIN,IO}64_CMD (libnvme).
    Completion ioctl_submit(const Command &cmd) const;

private:
    int fd_ = -1;
    std::string path_;
    NamespaceInfo ns_;
    uint32_t max_transfer_ = 128 * 1024;
};

}  // namespace csd
