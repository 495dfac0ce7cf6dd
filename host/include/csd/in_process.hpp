// SPDX-License-Identifier: MIT
// in_process.hpp - what a device living in this process offers beyond Transport's one
// command in, one completion out: the in-process device (emu:) and host mode, whose core
// runs here (host/emu/). A drive elsewhere (ioctl, io_uring, csd.ko) has none of it:
// in_process() answers nullptr there, so the Transport every real transport implements
// stays the small set of transport.hpp.
#pragma once

#include <cstdint>
#include <string>

#include "csd/transport.hpp"

namespace csd {

class InProcess {
public:
    virtual ~InProcess() = default;
    // SLM as host memory (the core's, in this process): callers view it without copies.
    virtual uint8_t *slm_host_pointer() = 0;
    // The file holding the namespace (the in-process device), else "".
    virtual std::string backing_file() const = 0;
    // The namespace's bytes (LBA 0 on, ns().lba_count LBAs) mapped into this process, where
    // a Read may be served by copying straight from them: the in-process device as a
    // simulated peer-to-peer drive (its namespace registered with CUDA, a Read into GPU
    // memory is one DMA). nullptr where a Read must be a command (under a timing model).
    // Writes go through commands; the mapping sees them.
    virtual const uint8_t *namespace_host_pointer() = 0;
    // A Read (opcode 02h) of the namespace whose bytes the caller copies itself from
    // namespace_host_pointer() (a GPU mover's DMA from the simulated peer-to-peer drive): the
    // drive runs it as any Read (its checks, its counting, its error where the namespace is
    // gone or the LBAs are not there) but moves no data to cmd.data. Success: the caller may
    // copy the Read's LBAs from the mapping now.
    virtual Completion submit_mapped_read(const Command &cmd) = 0;
    // The clock the device's timing model runs on, in ns: the core's virtual clock with
    // exact=on (docs/timing-model.md), the host's steady clock otherwise.
    virtual uint64_t model_clock_ns() const = 0;
    // Runs one command (not an Execute) and returns its completion at once, with *finish_ns
    // the steady-clock time before which a timing model says it must not be posted (0: at
    // once): a queue's poller posts it then and serves on meanwhile (host/cuda's
    // QueueProcessor).
    virtual Completion submit_deferred(const Command &cmd, uint64_t *finish_ns) = 0;
};

// The in-process side of t (through a read-only open too), nullptr for a drive elsewhere.
InProcess *in_process(Transport &t);
const InProcess *in_process(const Transport &t);

}  // namespace csd
