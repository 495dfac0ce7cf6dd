// SPDX-License-Identifier: MIT
// transport_inproc.cc - the in-process device: the same device core that QEMU embeds,
// answering the same NVMe commands (Identify, Get Log Page, Read, Write, Flush and the
// CSD command set) over a backing file, with the programs on `cu` worker threads. No VM, no
// root. Spec: <file>?NAME=VALUE&... with the options of the core's option table
// (csd_config.h; docs/command-set.md lists them, <file>?help prints them): the names of
// QEMU's csd.<name> properties (slm-size, compute-units, plugin-dir, vendor, nvme-cs,
// model, model.NAME) and the older slm, cu, plugins; lba, size (when creating the file)
// and vendor-io are this device's own. nvme-cs=on gives memory namespace 2 and compute
// namespace 3 (docs/nvme-cs.md); under a timing model every command completes no earlier
// than the modelled drive would complete it (host clock).
// The core is the whole controller (core_transport.cc embeds it): it decodes, counts and
// queues the CSD commands, answers NVM Read / Write / Flush and Identify, with this
// device's serial, model and limits; this file is the backing file (pread / pwrite, its
// mapping, Compare and Write's range locks). A process forked after open gets its own copy
// of the device, sharing only the backing file.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

#include "csd/error.hpp"
#include "csd_config.h"
#include "csd_core.h"
#include "core_transport.hpp"
#include "mapped_copy.hpp"
#include "ns_map.hpp"
#include "transports.hpp"

namespace csd {

namespace {

constexpr uint16_t kInternal = CSD_STATUS_INTERNAL_ERROR;
constexpr uint32_t kMaxTransfer = 8 << 20;  // per command; no kernel limits this device

// The namespace in a backing file: the core is the whole controller over it.
class FileBacking : public CoreBacking {
public:
    FileBacking(const std::string &path, uint32_t lba, uint64_t size, bool read_only) : path_(path)
    {
        fd_ = read_only ? ::open(path_.c_str(), O_RDONLY | O_CLOEXEC)
                        : ::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
        if (fd_ < 0) throw Error("emu: open " + path_, errno);
        struct stat st;
        fstat(fd_, &st);
        if (st.st_size == 0 && (read_only || ftruncate(fd_, static_cast<off_t>(size)) != 0)) {
            const int e = read_only ? ENODATA : errno;  // read-only: an empty file holds no namespace
            ::close(fd_);
            throw Error("emu: size " + path_, e);
        }
        fstat(fd_, &st);
        ns_.nsid = 1;
        ns_.lba_size = lba;
        ns_.lba_count = static_cast<uint64_t>(st.st_size) / lba;
        map_ = std::make_unique<NamespaceMap>(fd_, ns_.lba_count * lba);
    }
    ~FileBacking() override
    {
        map_.reset();
        if (lock_fd_ >= 0) ::close(lock_fd_);
        ::close(fd_);
    }

    NamespaceInfo ns() const override { return ns_; }
    uint32_t max_transfer() const override { return kMaxTransfer; }
    std::string file() const override { return path_; }
    bool whole_controller() const override { return true; }
    const uint8_t *mapping() override { return map_->data(); }

    // len bytes at byte pos of the backing file from (write) or into buf; Internal Error if
    // short. A small Read copies from the mapped namespace, with no system call (a large one
    // stays pread(), which costs the same copy and maps no pages into this process). A write
    // of 0 bytes (an NVM Flush) is fdatasync().
    uint16_t io(bool write, uint64_t pos, uint8_t *buf, uint64_t len) override
    {
        if (write && !len) return fdatasync(fd_) == 0 ? 0 : kInternal;
        if (!write && len <= kMappedReadMax && map_->data() && copy_from_mapping(buf, map_->data() + pos, len)) {
            return 0;  // else the file shrank under the mapping, or its page could not be read: pread() says
        }
        uint64_t done = 0;
        while (done < len) {
            const ssize_t n = write ? pwrite(fd_, buf + done, len - done, static_cast<off_t>(pos + done))
                                    : pread(fd_, buf + done, len - done, static_cast<off_t>(pos + done));
            if (n <= 0) return kInternal;
            done += static_cast<uint64_t>(n);
        }
        return 0;
    }

    // Compare and Write's range against every other device on the backing file (of this
    // process, of another, or of a child forked after open): an open-file-description lock
    // on the lock descriptor, which is this device's own in this process (the core orders
    // this device's own commands).
    int exclusive(uint64_t off, uint64_t len, bool on) override
    {
        int fd;
        {
            std::lock_guard<std::mutex> g(lock_mu_);
            if (lock_fd_ < 0) lock_fd_ = open_lock_fd();
            fd = lock_fd_;
        }
        if (fd < 0) return -1;
        struct flock range{};
        range.l_type = on ? F_WRLCK : F_UNLCK;
        range.l_whence = SEEK_SET;
        range.l_start = static_cast<off_t>(off);
        range.l_len = static_cast<off_t>(len);
        int rc;
        while ((rc = fcntl(fd, on ? F_OFD_SETLKW : F_OFD_SETLK, &range)) != 0 && errno == EINTR) {
        }
        return rc;
    }

    // In a child the lock descriptor is the parent's: closed (the child opens its own with
    // its first Compare and Write).
    void after_fork(bool child) override
    {
        if (child && lock_fd_ >= 0) ::close(lock_fd_);
        if (child) lock_fd_ = -1;
    }

private:
    // A descriptor of the backing file with an open file description of its own (fd_'s
    // is shared with every child forked after open, and so would be any lock taken on
    // it); -1 if it cannot be opened.
    int open_lock_fd() const
    {
        const int fd = ::open(("/proc/self/fd/" + std::to_string(fd_)).c_str(), O_RDWR | O_CLOEXEC);
        return fd >= 0 ? fd : ::open(path_.c_str(), O_RDWR | O_CLOEXEC);  // no /proc: by name
    }

    static constexpr uint64_t kMappedReadMax = 64 << 10;  // Reads up to this size copy from the mapping
    std::string path_;
    int fd_ = -1;
    std::unique_ptr<NamespaceMap> map_;  // the namespace, mapped (NamespaceMap: may be empty)
    NamespaceInfo ns_;
    std::mutex lock_mu_;  // lock_fd_'s opening
    int lock_fd_ = -1;    // Compare and Write's lock descriptor (open_lock_fd), opened when first needed
};

}  // namespace

std::unique_ptr<Transport> make_inproc_transport(const std::string &spec, bool read_only)
{
    const size_t q = spec.find('?');
    const std::string path = spec.substr(0, q);
    // The core's option table reads and checks every option (csd_config.h): the names,
    // values and messages of QEMU's csd.<name> properties, with "emu: " before them.
    csd_config cfg;
    char why[512];
    const int read = csd_config_read_list(&cfg, CSD_OPTION_EMU, q == std::string::npos ? "" : spec.c_str() + q + 1,
                                          why, sizeof why);
    if (read > 0) {  // help: the emu: options, one line each (as QEMU's -device nvme,help)
        const std::unique_ptr<char, void (*)(void *)> help(csd_options_help(CSD_OPTION_EMU, ""), std::free);
        throw Error(std::string("emu: the in-process device's options:\n") + (help ? help.get() : ""), EINVAL);
    }
    if (read < 0) throw Error(std::string("emu: ") + why, EINVAL);
    const std::unique_ptr<csd_config, void (*)(csd_config *)> cleared(&cfg, csd_config_clear);
    if (path.empty()) throw Error("emu: no backing file given (emu:<file>)", EINVAL);
    auto backing = std::make_unique<FileBacking>(path, static_cast<uint32_t>(cfg.lba_size), cfg.backing_size,
                                                  read_only);
    uint32_t nsid = backing->ns().nsid;
    const auto taken = [](void *n, uint32_t id) { return id == *static_cast<const uint32_t *>(n) ? 1 : 0; };
    csd_core *core = csd_core_open(&cfg, kCoreMaxNsid, taken, &nsid, why, sizeof why);
    if (!core) throw Error(std::string("emu: ") + why, EINVAL);
    return std::make_unique<CoreTransport>("inproc", core, std::move(backing), cfg.compute_units, "csd-inproc",
                                           "nvme-csd in-process device");
}

}  // namespace csd
