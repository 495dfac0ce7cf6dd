// SPDX-License-Identifier: MIT
// transport_ioctl.cc - synchronous NVMe passthrough through ioctl (libnvme).
#include "nvme_dev.hpp"
#include "transports.hpp"

namespace csd {

namespace {

class TransportIoctl : public Transport {
public:
    TransportIoctl(const std::string &path, bool read_only) : dev_(path, false, read_only) {}
    const char *name() const override { return "ioctl"; }
    Completion submit(const Command &cmd) override { return dev_.ioctl_submit(cmd); }
    uint32_t max_transfer() const override { return dev_.max_transfer(); }
    NamespaceInfo ns() const override { return dev_.ns(); }

private:
    NvmeDev dev_;
};

}  // namespace

std::unique_ptr<Transport> make_ioctl_transport(const std::string &path, bool read_only)
{
    return std::make_unique<TransportIoctl>(path, read_only);
}

}  // namespace csd
