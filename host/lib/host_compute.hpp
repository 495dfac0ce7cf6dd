// SPDX-License-Identifier: MIT
// host_compute.hpp - host mode (internal to libcsd): for a drive without computational
// storage, the device core runs in this process as the drive's compute. It answers the
// vendor SLM, Execute and program commands and the C0h/C1h log pages exactly as the
// emulated drive's core does; SLM is host memory and SLM Load / Store move LBAs through
// the drive's own Read and Write (docs/real-drives.md).
#pragma once

#include <cstdint>
#include <functional>
#include <future>

#include <memory>
#include <string>

#include "csd/transport.hpp"
#include "csd_spec.h"

namespace csd {

// Host mode's compute: an interface in libcsd, implemented in libcsd-emu (the library that
// links the device core), which libcsd loads on the first drive opened in host mode.
class HostCompute {
public:
    // Reads (write false) or writes nlb LBAs from slba of the drive's namespace; returns
    // the NVMe status (0: done).
    using LbaIo = std::function<uint16_t(bool write, uint64_t slba, uint64_t nlb, uint8_t *data)>;

    virtual ~HostCompute() = default;
    // Whether host mode answers c: a vendor I/O command or a Get Log Page of C0h/C1h.
    static bool answers(const Command &c)
    {
        const uint8_t lid = c.cdw10 & 0xFF;
        if (c.admin) return c.opcode == 0x02 && (lid == CSD_LOG_CAPABILITIES || lid == CSD_LOG_STATISTICS);
        return csd_is_io_opcode(c.opcode);
    }
    // Answers c as the drive would (the core decodes, counts and runs it); Compare and
    // Write answers Invalid Opcode (the plain drive cannot do it atomically).
    virtual Completion submit(const Command &c) = 0;
    // The same on a thread of its own (an Execute runs while the caller goes on).
    virtual std::future<Completion> submit_async(const Command &c) = 0;
    // All of SLM as host memory.
    virtual uint8_t *slm_base() = 0;
};

// A core with slm_size bytes of SLM and `units` compute units over namespace ns, from
// libcsd-emu (loaded as for emu: paths); throws csd::Error naming the library if it is missing.
std::unique_ptr<HostCompute> make_host_compute(uint64_t slm_size, uint32_t units, NamespaceInfo ns,
                                               HostCompute::LbaIo io);

}  // namespace csd

// libcsd-emu's host-mode entry point (host_compute.cc), found with dlsym; the caller owns the
// result, or gets nullptr with the reason in *why.
extern "C" csd::HostCompute *csd_emu_make_host_compute(uint64_t slm_size, uint32_t units, const csd::NamespaceInfo *ns,
                                                       const csd::HostCompute::LbaIo *io, std::string *why);
