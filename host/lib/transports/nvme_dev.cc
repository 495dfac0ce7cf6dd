// SPDX-License-Identifier: MIT
// nvme_dev.cc - the Linux NVMe device node shared by the ioctl and io_uring backends.
#include "nvme_dev.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <libnvme.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <regex>
#include <vector>

#include "csd/error.hpp"

namespace csd {

NvmeDev::NvmeDev(const std::string &path, bool want_generic, bool read_only) : path_(path)
{
    std::smatch m;
    static const std::regex node(R"(/dev/(nvme|ng)(\d+)n(\d+))");
    if (!std::regex_match(path, m, node)) {
        throw Error("open " + path + ": not an NVMe namespace node (/dev/ngXnY or /dev/nvmeXnY)", EINVAL);
    }
    const std::string ctrl = m[2], nsn = m[3];
    ctrl_ = ctrl;
    if (want_generic) {
        path_ = "/dev/ng" + ctrl + "n" + nsn;
    }
    fd_ = ::open(path_.c_str(), (read_only ? O_RDONLY : O_RDWR) | O_CLOEXEC);
    if (fd_ < 0) {
        throw Error("open " + path_, errno);
    }
    const int nsid = ioctl(fd_, NVME_IOCTL_ID);
    if (nsid <= 0) {
        const int e = errno;
        ::close(fd_);
        throw Error("NVME_IOCTL_ID on " + path_, e);
    }
    ns_.nsid = static_cast<uint32_t>(nsid);
    // Identify Namespace: size and the LBA format in use.
    std::vector<uint8_t> id(4096);
    Command c;
    c.admin = true;
    c.opcode = 0x06;
    c.nsid = ns_.nsid;
    c.cdw10 = 0;
    c.data = id.data();
    c.data_len = 4096;
    const Completion r = ioctl_submit(c);
    if (r.status) {
        ::close(fd_);
        throw Error("Identify Namespace on " + path_, r.status);
    }
    std::memcpy(&ns_.lba_count, id.data(), 8);
    if (ns_.lba_count == 0) {
        ::close(fd_);
        throw Error("open " + path_ + ": namespace " + std::to_string(ns_.nsid) +
                        " has no LBAs: not an NVM namespace (the standard front end's memory or compute "
                        "namespace?); open the NVM namespace's node, the /dev/ngXnY whose /dev/nvmeXnY exists",
                    ENODEV);
    }
    const uint8_t flbas = id[26] & 0xF;
    const uint8_t lbads = id[128 + 4 * flbas + 2];
    if (lbads < 9 || lbads > 16) {  // NVMe: 512 B at least; the kernel takes at most 64 KiB
        ::close(fd_);
        throw Error("open " + path_ + ": namespace " + std::to_string(ns_.nsid) + " reports an LBA data size of 2^" +
                        std::to_string(lbads) + " bytes (Identify Namespace LBADS), outside 512 B .. 64 KiB",
                    ENODEV);
    }
    ns_.lba_size = 1u << lbads;
    ns_.metadata = static_cast<uint32_t>(id[128 + 4 * flbas]) | static_cast<uint32_t>(id[128 + 4 * flbas + 1]) << 8;
    ns_.pi_type = ns_.metadata ? (id[29] & 0x7) : 0;
    ns_.extended_lba = ns_.metadata && (id[26] & 0x10);
    // The kernel's limit for one passthrough transfer: max_hw_sectors_kb, and one page
    // less than max_segments pages, since a user buffer that is not page-aligned spans
    // one page more than its length.
    const std::string q = "/sys/block/nvme" + ctrl + "n" + nsn + "/queue/";
    std::ifstream fkb(q + "max_hw_sectors_kb"), fseg(q + "max_segments");
    uint32_t kb = 0, segs = 0;
    if (fkb >> kb && kb >= 8) {
        max_transfer_ = kb * 1024;
    }
    const uint32_t page = static_cast<uint32_t>(sysconf(_SC_PAGESIZE));
    if (fseg >> segs && segs >= 2) {
        max_transfer_ = std::min(max_transfer_, (segs - 1) * page);
    }
}

NvmeDev::~NvmeDev()
{
    for (auto &s : siblings_) ::close(s.second);
    if (fd_ >= 0) {
        ::close(fd_);
    }
}

int NvmeDev::fd_for(uint32_t nsid)
{
    if (nsid == ns_.nsid) return fd_;
    std::lock_guard<std::mutex> g(mu_);
    auto it = siblings_.find(nsid);
    if (it != siblings_.end()) return it->second;
    // The kernel numbers /dev/ngXnY in discovery order, not by NSID: ask each node.
    const std::string prefix = "ng" + ctrl_ + "n";
    DIR *d = opendir("/dev");
    if (d) {
        while (dirent *e = readdir(d)) {
            const std::string name = e->d_name;
            if (name.rfind(prefix, 0) != 0 || name.find_first_not_of("0123456789", prefix.size()) != std::string::npos) {
                continue;
            }
            const int fd = ::open(("/dev/" + name).c_str(), O_RDWR | O_CLOEXEC);
            if (fd < 0) continue;
            if (ioctl(fd, NVME_IOCTL_ID) == static_cast<int>(nsid)) {
                closedir(d);
                siblings_[nsid] = fd;
                return fd;
            }
            ::close(fd);
        }
        closedir(d);
    }
    throw Error("namespace " + std::to_string(nsid) + " of controller nvme" + ctrl_ +
                    ": no /dev/" + prefix + "* node for it (is it attached, and may this user open it?)",
                ENODEV);
}

Completion NvmeDev::ioctl_submit(const Command &cmd)
{
    const int fd = cmd.admin ? fd_ : fd_for(cmd.nsid);
    nvme_passthru_cmd64 p{};
    p.opcode = cmd.opcode;
    p.nsid = cmd.nsid;
    p.cdw2 = cmd.cdw2;
    p.cdw3 = cmd.cdw3;
    p.cdw10 = cmd.cdw10;
    p.cdw11 = cmd.cdw11;
    p.cdw12 = cmd.cdw12;
    p.cdw13 = cmd.cdw13;
    p.cdw14 = cmd.cdw14;
    p.cdw15 = cmd.cdw15;
    p.addr = reinterpret_cast<uintptr_t>(cmd.data);
    p.data_len = cmd.data_len;
    __u64 result = 0;
    const int rc = cmd.admin ? nvme_submit_admin_passthru64(fd, &p, &result)
                             : nvme_submit_io_passthru64(fd, &p, &result);
    if (rc < 0) {
        char what[64];
        std::snprintf(what, sizeof what, "passthrough of opcode %02xh on %s", cmd.opcode, path_.c_str());
        throw Error(what, errno);
    }
    return {static_cast<uint16_t>(rc), result};
}

}  // namespace csd
