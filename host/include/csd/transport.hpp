// SPDX-License-Identifier: MIT
// transport.hpp - how libcsd reaches a drive: one NVMe command in, one completion out.
// Backends (one file each in host/lib/transports/: ioctl passthrough (libnvme), io_uring
// passthrough, csd.ko; in host/emu/: the in-process device and host mode, built on the
// device core).
#pragma once

#include <cstdint>
#include <future>
#include <memory>
#include <string>

namespace csd {

// One NVMe command. The data direction follows the opcode's bits 1:0 (01b host to
// controller, 10b controller to host), as NVMe requires.
struct Command {
    uint8_t opcode = 0;
    bool admin = false;
    uint32_t nsid = 0;
    uint32_t cdw2 = 0, cdw3 = 0;  // command-specific (Execute Program: program, ranges)
    uint32_t cdw10 = 0, cdw11 = 0, cdw12 = 0, cdw13 = 0, cdw14 = 0, cdw15 = 0;
    void *data = nullptr;
    uint32_t data_len = 0;
};

// A completion: the NVMe status field (0 on success; SCT/SC with DNR bit 14) and
// Dwords 0 and 1 of the completion queue entry.
struct Completion {
    uint16_t status = 0;
    uint64_t result = 0;
    uint32_t dw0() const { return static_cast<uint32_t>(result); }
    uint32_t dw1() const { return static_cast<uint32_t>(result >> 32); }
};

// Facts about the namespace behind a transport.
struct NamespaceInfo {
    uint32_t nsid = 1;
    uint32_t lba_size = 512;
    uint64_t lba_count = 0;
    // Metadata of the LBA format in use (Identify Namespace), where the transport knows it:
    // bytes per LBA (0: none), the protection information type (DPS bits 2:0, 0: none) and
    // whether the metadata extends the LBA (FLBAS bit 4) instead of a buffer of its own.
    uint32_t metadata = 0;
    uint8_t pi_type = 0;
    bool extended_lba = false;
};

// A way to send NVMe commands to one namespace of one drive, and to the other namespaces
// of its controller that a command's NSID names (the standard front end's memory and
// compute namespaces).
class Transport {
public:
    virtual ~Transport() = default;
    // Short name of the backend: "ioctl", "uring", "inproc", "kmod".
    virtual const char *name() const = 0;
    // Sends one command and waits for its completion; throws csd::Error on OS failure.
    virtual Completion submit(const Command &cmd) = 0;
    // Sends one command; the future gives its completion (default: a worker thread).
    virtual std::future<Completion> submit_async(const Command &cmd);
    // NVMe Abort of a command sent with submit_async whose completion has not come (the
    // same Command object): it then completes with Command Abort Requested if the device
    // could still stop it. False if the transport cannot abort, or the command is not in
    // flight. Default: false.
    virtual bool abort(const Command &) { return false; }
    // Largest data transfer of one command, in bytes.
    virtual uint32_t max_transfer() const = 0;
    // The namespace commands go to.
    virtual NamespaceInfo ns() const = 0;
    // Whether it was opened read-only (OpenOptions::read_only): commands that would change
    // the namespace's data are refused (EROFS) before they reach the drive.
    virtual bool read_only() const { return false; }
    // What a device in this process offers beyond this (SLM and the namespace as host
    // memory, its model's clock, deferred completions) is in_process.hpp's InProcess.
};

// The command set libcsd speaks to a drive with (docs/nvme-cs.md, docs/real-drives.md):
// the project's vendor commands (csd-command-set.md), the standard NVMe Subsystem Local
// Memory and Computational Programs command sets, or none (Host: a plain NVMe drive; SLM
// is host memory and every program runs in this process on the device core, over the
// bytes read from the drive). Auto: vendor where the drive has it, else the standard, else
// host; the environment variable CSD_FRONT_END (vendor, nvme-cs, host) overrides Auto.
enum class FrontEnd { Auto, Vendor, NvmeCs, Host };

// "vendor", "nvme-cs" or "host" (Auto: "auto").
const char *front_end_name(FrontEnd fe);
// Parses "auto", "vendor", "nvme-cs" or "host"; throws csd::Error (EINVAL) otherwise.
FrontEnd parse_front_end(const std::string &name);

// Options for opening a device.
struct OpenOptions {
    unsigned queue_depth = 64;  // io_uring ring size
    bool use_uring = false;     // /dev/ngXnY: io_uring passthrough instead of ioctl
    FrontEnd front_end = FrontEnd::Auto;
    // Test aid (docs/real-drives.md): treat the drive as if it had no CSD1 signature and no
    // vendor log pages (C0h, C1h), so that a drive with both front ends is discovered from
    // the standard structures alone; also set by CSD_IGNORE_VENDOR=1.
    bool ignore_vendor = false;
    // Host mode: bytes of host memory standing for SLM (0: 64 MiB; CSD_HOST_SLM, e.g. 256M).
    uint64_t host_slm = 0;
    // Read-only: the device node or backing file is opened O_RDONLY (a read-only image, a
    // node this user may only read; csd.ko's /dev/csdN stays read-write for its SLM mapping)
    // and every command that would change the namespace's data (Write, Write Zeroes, Dataset
    // Management, Copy, SLM Store, Compare and Write, Format NVM, Sanitize, ...) is refused
    // with EROFS; reads, SLM and programs that only read it work. csdctl --read-only.
    bool read_only = false;
};

// Throws csd::Error (EROFS) when cmd would change the data of namespace nsid (or of all
// namespaces): what a read-only open refuses. what names the command ("Write").
void refuse_if_writes(const Command &cmd, uint32_t nsid, const char *what = nullptr);

// Opens the transport for a path: /dev/ngXnY or /dev/nvmeXnY (ioctl or io_uring),
// /dev/csdN?slm=16M (csd.ko: this much SLM for this process, no root needed),
// or emu:<backing file>?slm-size=64M&lba=512&compute-units=2&size=256M (in-process device:
// QEMU's csd.<name> options without "csd.", from the core's option table; ?help lists them).
// opts.read_only opens it read-only (see OpenOptions).
std::unique_ptr<Transport> open_transport(const std::string &path, const OpenOptions &opts = {});

}  // namespace csd
