// SPDX-License-Identifier: MIT
// forwarding_in_process.hpp - a test's drive: the in-process device behind a Transport of its
// own that answers some commands itself (a detached namespace, a failing Read) and forwards
// every other one, the in-process extras (InProcess: SLM and the namespace as host memory,
// mapped and deferred Reads) included.
#pragma once

#include "csd/in_process.hpp"
#include "csd/transport.hpp"

namespace csd::test {

class ForwardingInProcess : public Transport, public InProcess {
public:
    explicit ForwardingInProcess(Transport &t) : t_(t), in_(*in_process(t)) {}
    // The status to answer cmd with instead of the drive (0: the drive answers).
    virtual uint16_t answer(const Command &cmd) const = 0;
    const char *name() const override { return t_.name(); }
    Completion submit(const Command &cmd) override
    {
        if (const uint16_t st = answer(cmd)) return Completion{st, 0};
        return t_.submit(cmd);
    }
    uint32_t max_transfer() const override { return t_.max_transfer(); }
    NamespaceInfo ns() const override { return t_.ns(); }
    uint8_t *slm_host_pointer() override { return in_.slm_host_pointer(); }
    std::string backing_file() const override { return in_.backing_file(); }
    const uint8_t *namespace_host_pointer() override { return in_.namespace_host_pointer(); }
    Completion submit_mapped_read(const Command &cmd) override
    {
        if (const uint16_t st = answer(cmd)) return Completion{st, 0};
        return in_.submit_mapped_read(cmd);
    }
    uint64_t model_clock_ns() const override { return in_.model_clock_ns(); }
    Completion submit_deferred(const Command &cmd, uint64_t *finish_ns) override
    {
        *finish_ns = 0;
        return submit(cmd);
    }

private:
    Transport &t_;
    InProcess &in_;
};

}  // namespace csd::test
