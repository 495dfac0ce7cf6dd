// SPDX-License-Identifier: MIT
// nvme_dev.hpp - what the ioctl and io_uring backends share: opening /dev/ngXnY or
// /dev/nvmeXnY, the namespace's facts, the kernel's transfer limit, ioctl passthrough.
#pragma once

#include <map>
#include <mutex>
#include <string>

#include "csd/transport.hpp"

namespace csd {

class NvmeDev {
public:
    // Opens the device (for io_uring, the generic char device /dev/ngXnY is used); read_only:
    // O_RDONLY (the other namespaces' nodes, for SLM, stay read-write).
    NvmeDev(const std::string &path, bool want_generic, bool read_only = false);
    ~NvmeDev();
    NvmeDev(const NvmeDev &) = delete;
    NvmeDev &operator=(const NvmeDev &) = delete;

    int fd() const { return fd_; }
    // The node to send an I/O command for nsid through: this namespace's, or the generic
    // char device /dev/ngXnZ of the controller's namespace nsid (Linux refuses an I/O
    // command whose NSID is not the node's), opened once; throws csd::Error if none.
    int fd_for(uint32_t nsid);
    const NamespaceInfo &ns() const { return ns_; }
    uint32_t max_transfer() const { return max_transfer_; }
    // One command through NVME_IOCTL_{ADMIN,IO}64_CMD (libnvme).
    Completion ioctl_submit(const Command &cmd);

private:
    int fd_ = -1;
    std::string path_;
    std::string ctrl_;                       // X of /dev/ngXnY
    std::mutex mu_;                          // guards siblings_
    std::map<uint32_t, int> siblings_;       // other namespaces' nodes, by NSID
    NamespaceInfo ns_;
    uint32_t max_transfer_ = 128 * 1024;
};

}  // namespace csd
