/* SPDX-License-Identifier: MIT */
// timing_model.h - the drive being designed, in time (docs/timing-model.md): PCIe link
// (each direction), media (NAND) read and write, device memory (SLM) and N compute units,
// each a resource that commands occupy in turn, first come first served. Given what a
// command moves and computes and when it arrived, schedule() says when the modelled drive
// would complete it; the embedding completes it no earlier.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "csd_core_steps.h"

namespace csd::core {

// The model's lock: every command of every queue takes it for a few arithmetic steps, so a
// waiter spins instead of sleeping in the kernel (a sleeping waiter wakes microseconds late,
// past the modelled completion it was about to compute: an overrun that is the lock's, not
// the host's work). It yields after a while, in case the holder was preempted.
class SpinLock {
public:
    void lock()
    {
        for (unsigned spins = 0; flag_.exchange(true, std::memory_order_acquire);) {
            while (flag_.load(std::memory_order_relaxed)) {
                if (++spins % 1024 == 0) std::this_thread::yield();
#if defined(__x86_64__)
                __builtin_ia32_pause();
#endif
            }
        }
    }
    void unlock() { flag_.store(false, std::memory_order_release); }

private:
    std::atomic<bool> flag_{false};
};

class TimingModel {
public:
    // Replaces the parameters (checked by csd_model_check) and forgets queued work.
    void configure(const csd_model_params &p, uint32_t compute_units);
    bool on() const { return on_; }
    // Makes every resource free now (a controller reset aborted the work in flight);
    // keeps the parameters and the busy time counted so far.
    void idle();
    // When the modelled drive completes work w that arrived at now_ns (same clock);
    // 0 when the model is off. Accumulates busy time per resource.
    uint64_t schedule(const csd_model_work &w, uint64_t now_ns);
    // n dependent media reads of bytes each (a chase's hops past the first) after t: each
    // waits for the one before (its latency, then its block queued at the media rate),
    // then a record of the program; when the last is done (t when the model is off).
    uint64_t dependent_reads(uint64_t t, uint32_t n, uint64_t bytes);
    // Busy time so far, ns: link to device, link to host, media, SLM, compute units.
    void busy(uint64_t out[5]) const;

private:
    static uint64_t duration_ns(double ns);
    // a + b, at most CSD_MODEL_MAX_NS: a finish that queues behind years of absurd work
    // stays on a signed clock (QEMU's timers) and never wraps.
    static uint64_t add_ns(uint64_t a, uint64_t b);
    // A bandwidth resource: latency overlaps with others' transfers, transfers queue. Its
    // busy intervals [start, end), merged where they touch: a transfer ready at t takes the
    // first gap from t that holds it, so work that reaches the pipe earlier on the model's
    // clock never waits behind work scheduled before it but reaching it later (an SLM Load's
    // SLM stage, after its media read, reserved ahead of a short Execute that arrives
    // meanwhile); what it costs then does not depend on which thread asked first. The
    // earliest intervals past kRemembered are forgotten: before `floor` the pipe is busy.
    struct Pipe {
        std::map<uint64_t, uint64_t> busy;
        uint64_t floor = 0;
        uint64_t busy_ns = 0;
    };
    static constexpr size_t kRemembered = 1024;
    // Time to move bytes at gbps GB/s (0 GB/s: not modelled, no time).
    static uint64_t transfer_ns(double bytes, double gbps);
    // Work reaching a pipe at t: ready after latency, then queued behind earlier transfers.
    static uint64_t stage(Pipe &p, uint64_t t, uint64_t latency_ns, double bytes, double gbps);

    mutable SpinLock mu_;
    bool on_ = false;
    csd_model_params p_{};
    Pipe to_device_, to_host_, media_, slm_;
    std::vector<uint64_t> units_free_at_;
    uint64_t compute_busy_ns_ = 0;
};

}  // namespace csd::core
