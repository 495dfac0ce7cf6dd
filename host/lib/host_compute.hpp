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

#include "csd/transport.hpp"

struct csd_core;
struct csd_op;

namespace csd {

class HostCompute {
public:
    // Reads (write false) or writes nlb LBAs from slba of the drive's namespace; returns
    // the NVMe status (0: done).
    using LbaIo = std::function<uint16_t(bool write, uint64_t slba, uint64_t nlb, uint8_t *data)>;

    // A core with slm_size bytes of SLM and `units` compute units over namespace ns.
    HostCompute(uint64_t slm_size, uint32_t units, NamespaceInfo ns, LbaIo io);
    ~HostCompute();
    HostCompute(const HostCompute &) = delete;
    HostCompute &operator=(const HostCompute &) = delete;

    // Whether host mode answers c: a vendor I/O command or a Get Log Page of C0h/C1h.
    static bool answers(const Command &c);
    // Answers c as the drive would (the core decodes, counts and runs it); Compare and
    // Write answers Invalid Opcode (the plain drive cannot do it atomically).
    Completion submit(const Command &c);
    // The same on a thread of its own (an Execute runs while the caller goes on).
    std::future<Completion> submit_async(const Command &c);
    // All of SLM as host memory.
    uint8_t *slm_base();

private:
    Completion run_decoded(const Command &c, const ::csd_op &op);
    Completion complete(const ::csd_op &op, Completion r);

    csd_core *core_ = nullptr;
    NamespaceInfo ns_;
    LbaIo io_;
};

}  // namespace csd
