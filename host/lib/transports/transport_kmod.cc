// SPDX-License-Identifier: MIT
// transport_kmod.cc - the kernel module's /dev/csd<N>: shared, isolated, no root needed.
// At open it takes one SLM allocation of the module (?slm=16M by default) and presents it
// to the library as the device's SLM, so every layer above works unchanged: SLM offsets
// become (allocation, offset) pairs that the module checks and translates (Execute
// descriptors too: the module parses them, at the trust boundary), admin facts come from
// its ioctls.
#include <fcntl.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "csd/error.hpp"
#include "csd_ioctl.h"
#include "csd_spec.h"
#include "synth.hpp"
#include "transports.hpp"

namespace csd {

namespace {

constexpr uint16_t kOutOfBounds = CSD_STATUS_SLM_OUT_OF_BOUNDS | CSD_STATUS_DNR;
constexpr uint16_t kInvalidField = CSD_STATUS_INVALID_FIELD | CSD_STATUS_DNR;
constexpr uint16_t kInvalidOpcode = CSD_STATUS_INVALID_OPCODE | CSD_STATUS_DNR;

class TransportKmod : public Transport {
public:
    explicit TransportKmod(const std::string &spec)
    {
        const size_t q = spec.find('?');
        path_ = spec.substr(0, q);
        uint64_t want = 16 << 20;
        if (q != std::string::npos) {
            const std::string opt = spec.substr(q + 1);
            if (opt.rfind("slm=", 0) != 0) throw Error("open " + spec + ": the only option is ?slm=SIZE", EINVAL);
            want = parse_size(opt.substr(4));
        }
        fd_ = ::open(path_.c_str(), O_RDWR | O_CLOEXEC);
        if (fd_ < 0) {
            const int e = errno;
            throw Error("open " + path_ + (e == EACCES ? " (is this user in the group csd.ko allows?)" : ""), e);
        }
        if (ioctl(fd_, CSD_IOC_INFO, &info_) != 0) {
            if (errno == ENOTTY) errno = EPROTO;  // the INFO number changes with the interface
            fail("CSD_IOC_INFO (csd.ko interface version " + std::to_string(CSD_IOC_API_VERSION) + " wanted)");
        }
        if (info_.api_version != CSD_IOC_API_VERSION) {
            errno = EPROTO;
            fail("csd.ko interface version " + std::to_string(info_.api_version) + ", libcsd needs " +
                 std::to_string(CSD_IOC_API_VERSION));
        }
        csd_ioc_alloc a{};
        a.size = want;
        if (ioctl(fd_, CSD_IOC_ALLOC, &a) != 0) {
            fail("SLM allocation of " + std::to_string(want) + " bytes from csd.ko (" +
                 std::to_string(info_.free_bytes) + " free)");
        }
        region_ = a.handle;
        region_size_ = (want + 4095) & ~4095ull;
        ns_.nsid = 1;
        ns_.lba_size = info_.lba_size;
        ns_.lba_count = info_.lba_count;
    }

    ~TransportKmod() override { ::close(fd_); }  // the module frees the allocation

    const char *name() const override { return "kmod"; }
    uint32_t max_transfer() const override { return info_.max_transfer; }
    NamespaceInfo ns() const override { return ns_; }

    Completion submit(const Command &c) override
    {
        if (c.admin) return admin(c);
        const uint64_t a = c.cdw10 | static_cast<uint64_t>(c.cdw11) << 32;
        switch (c.opcode) {
        case CSD_OPC_SLM_WRITE:
        case CSD_OPC_SLM_READ: {
            if (c.data_len < c.cdw12) return {kInvalidField, 0};
            csd_ioc_xfer x{};
            x.handle = region_;
            x.offset = a;
            x.len = c.cdw12;
            x.buf = reinterpret_cast<uintptr_t>(c.data);
            if (c.cdw12 == 0 || c.cdw12 % 4 || a % 4) return {kInvalidField, 0};
            return call(c.opcode == CSD_OPC_SLM_WRITE ? CSD_IOC_WRITE : CSD_IOC_READ, &x, x.status);
        }
        case CSD_OPC_SLM_LOAD:
        case CSD_OPC_SLM_STORE: {
            csd_ioc_lba l{};
            l.handle = region_;
            l.offset = c.cdw13 | static_cast<uint64_t>(c.cdw14) << 32;
            l.slba = a;
            l.nlb = (c.cdw12 & 0xFFFF) + 1;
            return call(c.opcode == CSD_OPC_SLM_STORE ? CSD_IOC_STORE : CSD_IOC_LOAD, &l, l.status);
        }
        case CSD_OPC_EXECUTE: return execute(c);
        case CSD_OPC_PROGRAM_LOAD: return program_load(c);
        case CSD_OPC_PROGRAM_UNLOAD: {
            csd_ioc_program_unload u{};
            u.slot = c.cdw10 & 0xFFFF;
            return call(CSD_IOC_PROGRAM_UNLOAD, &u, u.status);
        }
        case 0x00:
        case 0x01:
        case 0x02:
        case CSD_OPC_COMPARE_WRITE: {
            csd_ioc_ns_io r{};
            r.write = c.opcode == CSD_OPC_COMPARE_WRITE ? CSD_NS_IO_COMPARE_WRITE
                      : c.opcode == 0x01               ? CSD_NS_IO_WRITE
                                                       : CSD_NS_IO_READ;
            if (c.opcode != 0x00) {
                r.slba = a;
                r.nlb = (c.cdw12 & 0xFFFF) + 1;
                r.buf = reinterpret_cast<uintptr_t>(c.data);
                if (c.data_len < r.nlb * ns_.lba_size * (c.opcode == CSD_OPC_COMPARE_WRITE ? 2 : 1)) {
                    return {kInvalidField, 0};
                }
            }
            return call(CSD_IOC_NS_IO, &r, r.status);
        }
        default: return {kInvalidOpcode, 0};
        }
    }

private:
    [[noreturn]] void fail(const std::string &what)
    {
        const int e = errno;
        ::close(fd_);
        throw Error(what + " on " + path_, e);
    }

    // An ioctl whose argument carries the NVMe status; a range outside this file's
    // allocation (ERANGE) is reported as the drive would report it for SLM.
    template <class T>
    Completion call(unsigned long req, T *arg, const uint32_t &status)
    {
        if (ioctl(fd_, req, arg) != 0) {
            if (errno == ERANGE) return {kOutOfBounds, 0};
            if (errno == EPERM) throw Error("csd.ko on " + path_ + ": another user's program", EPERM);
            throw Error("csd.ko ioctl on " + path_, errno);
        }
        return {static_cast<uint16_t>(status), 0};
    }

    // The descriptor goes to the module as it is: the module parses it once, checks each
    // range against this file's allocation and rewrites the offsets for the drive.
    Completion execute(const Command &c)
    {
        if (c.data_len < c.cdw10) return {kInvalidField, 0};
        csd_ioc_exec e{};
        e.handle = region_;
        e.desc_len = c.cdw10;
        e.desc = reinterpret_cast<uintptr_t>(c.data);
        const Completion r = call(CSD_IOC_EXEC, &e, e.status);
        return {r.status, static_cast<uint64_t>(e.dw1) << 32 | e.dw0};
    }

    // The module takes a whole image: chunks are gathered here and the last one sends it.
    // The program then belongs to this open file (only it may run or unload it).
    Completion program_load(const Command &c)
    {
        const uint32_t size = c.cdw11, off = c.cdw12, len = c.cdw13;
        if (c.data_len < len || off != image_.size() || len > size - std::min(size, off)) return {kInvalidField, 0};
        const auto *p = static_cast<const uint8_t *>(c.data);
        image_.insert(image_.end(), p, p + len);
        if (image_.size() < size) return {0, c.cdw10 & 0xFFFF};
        csd_ioc_program_load l{};
        l.image = reinterpret_cast<uintptr_t>(image_.data());
        l.size = size;
        l.record_size = c.cdw14 & 0xFFFF;
        l.slot = static_cast<uint16_t>(c.cdw10 & 0xFFFF);
        l.type = static_cast<uint8_t>(c.cdw10 >> 16);
        const int rc = ioctl(fd_, CSD_IOC_PROGRAM_LOAD, &l);
        const int e = errno;
        image_.clear();
        if (rc != 0 && e == EDQUOT) {
            throw Error("csd.ko Program Load on " + path_ +
                            ": over this user's quota of program slots or of image bytes being uploaded",
                        e);
        }
        if (rc != 0) throw Error("csd.ko Program Load on " + path_, e);
        return {static_cast<uint16_t>(l.status), l.status ? l.dw0 : l.slot};
    }

    Completion admin(const Command &c)
    {
        auto *p = static_cast<uint8_t *>(c.data);
        if (c.opcode == 0x06 && c.data_len >= 4096) {  // Identify, from the module's facts
            if ((c.cdw10 & 0xFF) == 1) {
                fill_identify_controller(p, "nvme-csd through csd.ko", 6);  // 256 KiB moves
                return {0, 0};
            }
            if ((c.cdw10 & 0xFF) == 0) {
                fill_identify_namespace(p, ns_);
                return {0, 0};
            }
            return {kInvalidField, 0};
        }
        const uint8_t lid = c.cdw10 & 0xFF;
        if (c.opcode == 0x02 && (lid == CSD_LOG_CAPABILITIES || lid == CSD_LOG_STATISTICS)) {
            uint8_t page[CSD_IOC_LOG_SIZE];
            csd_ioc_log l{};
            l.lid = lid;
            l.buf = reinterpret_cast<uintptr_t>(page);
            if (ioctl(fd_, CSD_IOC_LOG, &l) != 0) throw Error("csd.ko log page on " + path_, errno);
            if (l.status) return {static_cast<uint16_t>(l.status), 0};
            if (lid == CSD_LOG_CAPABILITIES) {
                std::memcpy(page + 8, &region_size_, 8);  // this file's SLM is its allocation
            }
            const uint64_t len = ((static_cast<uint64_t>(c.cdw11 & 0xFFFF) << 16 | c.cdw10 >> 16) + 1) * 4;
            std::memcpy(p, page, std::min<uint64_t>({len, uint64_t{sizeof page}, uint64_t{c.data_len}}));
            return {0, 0};
        }
        return {kInvalidOpcode, 0};
    }

    std::string path_;
    int fd_ = -1;
    csd_ioc_info info_{};
    uint32_t region_ = 0;
    uint64_t region_size_ = 0;
    NamespaceInfo ns_;
    std::vector<uint8_t> image_;  // a program image being gathered from Program Load chunks
};

}  // namespace

std::unique_ptr<Transport> make_kmod_transport(const std::string &spec)
{
    return std::make_unique<TransportKmod>(spec);
}

}  // namespace csd
