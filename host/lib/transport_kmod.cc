// transport_kmod.cc - the kernel module's /dev/csd<N>: shared, isolated, no root needed.
// At open it takes one SLM allocation of the module (?slm=16M by default) and presents it
// to the library as the device's SLM, so every layer above works unchanged: SLM offsets
// become (allocation, offset) pairs that the module checks and translates, Execute
// descriptors are rebuilt as the module's range list, admin facts come from its ioctls.
#include <fcntl.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "../../kmod/uapi/csd_ioctl.h"
#include "csd/error.hpp"
#include "csd_spec.h"
#include "synth.hpp"
#include "transports.hpp"

namespace csd {

namespace {

constexpr uint16_t kOutOfBounds = CSD_STATUS_SLM_OUT_OF_BOUNDS | CSD_STATUS_DNR;
constexpr uint16_t kInvalidField = CSD_STATUS_INVALID_FIELD | CSD_STATUS_DNR;
constexpr uint16_t kInvalidOpcode = CSD_STATUS_INVALID_OPCODE | CSD_STATUS_DNR;
constexpr uint16_t kInvalidDescriptor = CSD_STATUS_INVALID_DESCRIPTOR | CSD_STATUS_DNR;

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
        if (ioctl(fd_, CSD_IOC_INFO, &info_) != 0) fail("CSD_IOC_INFO");
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
        case 0x00:
        case 0x01:
        case 0x02: {
            csd_ioc_ns_io r{};
            r.write = c.opcode == 0x01;
            if (c.opcode != 0x00) {
                r.slba = a;
                r.nlb = (c.cdw12 & 0xFFFF) + 1;
                r.buf = reinterpret_cast<uintptr_t>(c.data);
                if (c.data_len < r.nlb * ns_.lba_size) return {kInvalidField, 0};
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
    Completion call(unsigned long req, T *arg, const uint32_t &status, uint64_t result = 0)
    {
        if (ioctl(fd_, req, arg) != 0) {
            if (errno == ERANGE) return {kOutOfBounds, 0};
            throw Error("csd.ko ioctl on " + path_, errno);
        }
        return {static_cast<uint16_t>(status), result};
    }

    Completion execute(const Command &c)
    {
        const uint32_t len = c.cdw10;
        if (len == 0 || len > CSD_MAX_DESC_LEN || c.data_len < len) return {kInvalidField, 0};
        const auto *d = static_cast<const uint8_t *>(c.data);
        csd_desc_header h;
        if (len < sizeof h) return {kInvalidDescriptor, 0};
        std::memcpy(&h, d, sizeof h);
        if (std::memcmp(h.magic, CSD_DESC_MAGIC, 4) != 0 || h.version != CSD_DESC_VERSION || h.flags != 0 ||
            h.nr_ranges == 0 || h.nr_ranges > CSD_IOC_MAX_RANGES ||
            16ull + 16ull * h.nr_ranges + h.param_len != len) {
            return {kInvalidDescriptor, 0};
        }
        csd_ioc_exec e{};
        e.program = h.program_id;
        e.nr_ranges = h.nr_ranges;
        e.param_len = h.param_len;
        e.params = reinterpret_cast<uintptr_t>(d + 16 + 16 * h.nr_ranges);
        for (uint32_t i = 0; i < h.nr_ranges; i++) {
            csd_desc_range r;
            std::memcpy(&r, d + 16 + 16 * i, sizeof r);
            e.ranges[i].handle = r.length ? region_ : 0;
            e.ranges[i].offset = r.length ? r.offset : 0;
            e.ranges[i].length = r.length;
        }
        if (ioctl(fd_, CSD_IOC_EXEC, &e) != 0) {
            if (errno == ERANGE) return {kOutOfBounds, 0};
            throw Error("csd.ko Execute on " + path_, errno);
        }
        return {static_cast<uint16_t>(e.status), static_cast<uint64_t>(e.dw1) << 32 | e.dw0};
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
};

}  // namespace

std::unique_ptr<Transport> make_kmod_transport(const std::string &spec)
{
    return std::make_unique<TransportKmod>(spec);
}

}  // namespace csd
