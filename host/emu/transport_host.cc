// SPDX-License-Identifier: MIT
// transport_host.cc - host mode (docs/real-drives.md): a plain NVMe drive, with the device
// core in this process as its compute. The core is embedded as for the in-process device
// (core_transport.cc), with SLM in host memory; its namespace I/O (SLM Load / Store, the
// media programs' gathers, embedding_bag's rows, a chase's hops) becomes NVMe Reads and
// Writes of the plain drive, and every command the core does not answer (NVM I/O, Identify,
// the other admin commands) goes to the drive as it came. So every program runs here with
// the core's ordering, limits, cancellation and statistics, as on the emulated drive.
// Compare and Write is off: the plain drive cannot make it atomic against other hosts.
#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <string>
#include <utility>

#include "csd/error.hpp"
#include "csd_config.h"
#include "core_transport.hpp"
#include "transports.hpp"

namespace csd {

namespace {

constexpr uint8_t kNvmWrite = 0x01, kNvmRead = 0x02;
constexpr uint64_t kMaxNlb = 65536;  // NLB is a 16-bit, 0's based field

// The plain drive behind host mode's core.
class DriveBacking : public CoreBacking {
public:
    DriveBacking(std::unique_ptr<Transport> drive, std::function<void(const Command &)> on_bus)
        : drive_(std::move(drive)), ns_(drive_->ns()), on_bus_(std::move(on_bus))
    {
    }

    NamespaceInfo ns() const override { return ns_; }
    uint32_t max_transfer() const override { return drive_->max_transfer(); }
    std::string file() const override { return in_ ? in_->backing_file() : std::string(); }
    bool whole_controller() const override { return false; }

    // NVM Reads or Writes of the drive, as large as it takes them; the first error's status
    // (an OS failure: Internal Error).
    uint16_t io(bool write, uint64_t pos, uint8_t *buf, uint64_t len) override
    {
        const uint32_t lba = ns_.lba_size;
        if (pos % lba || len % lba) return CSD_STATUS_INTERNAL_ERROR;  // the core moves whole LBAs
        const uint64_t per = std::max<uint64_t>(1, std::min<uint64_t>(drive_->max_transfer() / lba, kMaxNlb));
        for (uint64_t slba = pos / lba, nlb = len / lba; nlb > 0;) {
            const uint64_t n = std::min(nlb, per);
            Command c;
            c.opcode = write ? kNvmWrite : kNvmRead;
            c.nsid = ns_.nsid;
            c.cdw10 = static_cast<uint32_t>(slba);
            c.cdw11 = static_cast<uint32_t>(slba >> 32);
            c.cdw12 = static_cast<uint32_t>(n - 1);
            c.data = buf;
            c.data_len = static_cast<uint32_t>(n * lba);
            Completion r;
            try {
                r = forward(c);
            } catch (...) {  // the OS refused the drive's command (csd::Error), or the drive threw: Internal Error
                return CSD_STATUS_INTERNAL_ERROR;  // this runs on the core's worker threads: nothing may escape
            }
            if (r.status) return r.status;
            slba += n;
            nlb -= n;
            buf += n * lba;
        }
        return 0;
    }

    // The drive's answer; its OS error (csd::Error: EAGAIN, EIO, ...) reaches the caller as the drive's own would.
    Completion forward(const Command &cmd) override
    {
        count(cmd);
        return drive_->submit(cmd);
    }
    std::future<Completion> forward_async(const Command &cmd) override
    {
        count(cmd);
        return drive_->submit_async(cmd);
    }
    Completion forward_deferred(const Command &cmd, uint64_t *finish_ns) override
    {
        count(cmd);
        if (in_) return in_->submit_deferred(cmd, finish_ns);
        *finish_ns = 0;
        return drive_->submit(cmd);
    }
    Completion forward_mapped_read(const Command &cmd) override
    {
        if (!in_) return CoreBacking::forward_mapped_read(cmd);  // counted by forward()
        count(cmd);  // on the bus as the Read it is
        return in_->submit_mapped_read(cmd);
    }
    bool abort_forwarded(const Command &cmd) override { return drive_->abort(cmd); }
    const uint8_t *mapping() override { return in_ ? in_->namespace_host_pointer() : nullptr; }

private:
    // The bus counts I/O commands, as Device does (log pages and Identify are not counted).
    void count(const Command &cmd)
    {
        if (!cmd.admin) on_bus_(cmd);
    }

    std::unique_ptr<Transport> drive_;
    InProcess *in_ = in_process(*drive_);  // a drive in this process (emu:), else nullptr
    NamespaceInfo ns_;
    std::function<void(const Command &)> on_bus_;
};

// The timing model's options for host mode's core from CSD_HOST_OPTIONS (model=NAME,
// model.NAME=VALUE, joined by '&'), as "&..." to add to the core's option list, which checks
// them; any other option (the emulated drive's own: sizes, front ends, exact) is refused.
std::string host_model_options()
{
    const char *env = std::getenv("CSD_HOST_OPTIONS");
    if (!env || !*env) return {};
    const std::string s(env);
    for (size_t at = 0; at <= s.size();) {
        const size_t end = std::min(s.find('&', at), s.size());
        const std::string name = s.substr(at, std::min(s.find('=', at), end) - at);
        if (name != "model" && name.rfind("model.", 0) != 0) {
            throw Error("CSD_HOST_OPTIONS: host mode takes the timing model's options (model=NAME, "
                        "model.NAME=VALUE), not '" + name + "'", EINVAL);
        }
        at = end + 1;
    }
    return "&" + s;
}

}  // namespace

std::unique_ptr<Transport> make_host_transport(std::unique_ptr<Transport> drive, uint64_t slm_size, uint32_t units,
                                               std::function<void(const Command &)> on_bus)
{
    csd_config cfg;
    char why[512];
    const std::string model = host_model_options();
    // under a model the modelled drive's compute units are the workers, else this host's
    const std::string options = "slm-size=" + std::to_string(slm_size) +
                                (model.empty() ? "&compute-units=" + std::to_string(units) : model);
    if (csd_config_read_list(&cfg, CSD_OPTION_EMU, options.c_str(), why, sizeof why) != 0) {
        throw Error(std::string(model.empty() ? "host mode: " : "host mode (CSD_HOST_OPTIONS): ") + why, EINVAL);
    }
    const std::unique_ptr<csd_config, void (*)(csd_config *)> cleared(&cfg, csd_config_clear);
    csd_core *core = csd_core_open(&cfg, kCoreMaxNsid, nullptr, nullptr, why, sizeof why);  // nvme-cs off
    if (!core) {
        throw Error("host mode: SLM of " + std::to_string(slm_size) + " bytes of host memory: " + why, ENOMEM);
    }
    csd_core_set_compare_write(core, 0);
    const char *name = drive->name();  // the drive's transport (ioctl, uring, inproc): a string literal
    auto backing = std::make_unique<DriveBacking>(std::move(drive), std::move(on_bus));
    return std::make_unique<CoreTransport>(name, core, std::move(backing), cfg.compute_units, "", "");
}

}  // namespace csd

// Makes host mode's transport over drive (owned from here on; also on failure); throws
// csd::Error as make_host_transport does. The caller owns the result.
extern "C" csd::Transport *csd_emu_make_host_transport(csd::Transport *drive, uint64_t slm_size, uint32_t units,
                                                       const std::function<void(const csd::Command &)> *on_bus)
{
    return csd::make_host_transport(std::unique_ptr<csd::Transport>(drive), slm_size, units, *on_bus).release();
}
