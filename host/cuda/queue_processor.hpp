// SPDX-License-Identifier: MIT
// queue_processor.hpp - serves NVMe queue pairs that live in shared memory (filled and rung
// by another agent, such as a GPU kernel) onto a Device: host threads poll each SQ tail
// doorbell, run every new entry through the Device's transport (the in-process device or a
// real drive's passthrough), and post completions with the phase tag, as a controller does.
#pragma once

#include <atomic>
#include <cstdint>
#include <future>
#include <utility>
#include <memory>
#include <thread>
#include <vector>

#include "csd/device.hpp"
#include "nvme_queue.hpp"

namespace csd {

class QueueProcessor {
public:
    // Serves `host` (the queue set as this process addresses it) with `pollers` threads,
    // each owning queues q with q % pollers == its index. `agent_arena` is the arena's
    // address as the submitter writes it into PRP1 (a GPU's view of mapped memory may
    // differ from the host's). Starts polling at once; throws csd::Error on bad layouts.
    QueueProcessor(Device &dev, const NvmeQueueSet &host, uint64_t agent_arena, int pollers);
    ~QueueProcessor();  // stops and joins the pollers
    QueueProcessor(const QueueProcessor &) = delete;
    QueueProcessor &operator=(const QueueProcessor &) = delete;

    uint64_t commands() const;  // entries completed so far
    uint64_t errors() const;    // of those, with a non-zero status
    // Completions a timing model timed (Transport::submit_deferred), and how late after their
    // modelled finish they were posted: the mean and the largest, in nanoseconds.
    struct Timed {
        uint64_t completions = 0;
        double mean_late_ns = 0;
        uint64_t max_late_ns = 0;
    };
    Timed timed() const;

    // Runs one submission queue entry against the device and returns its completion
    // (status without the phase tag). Exposed so that the decoding can be tested alone.
    Completion run(const NvmeSqe &e);

private:
    struct QueueState {
        uint32_t sq_head = 0, cq_tail = 0;
        uint32_t cq_head = 0;  // the consumer's CQ head as last read (re-read only when the CQ looks full)
        uint16_t phase = 1;
        std::vector<std::pair<uint16_t, std::future<Completion>>> pending;  // Executes in flight: (cid, completion)
        uint32_t due = 0;  // completions of this queue waiting for their modelled finish
    };
    // A completion to post at its modelled finish; a poller keeps them in a min-heap.
    struct Due {
        uint64_t finish;
        uint32_t q;
        uint16_t cid;
        Completion c;
        bool operator>(const Due &o) const { return finish > o.finish; }
    };
    // What one poller counted, on a cache line of its own (pollers share no written line).
    struct alignas(64) Counts {
        std::atomic<uint64_t> commands{0}, errors{0};
        std::atomic<uint64_t> timed{0}, late_ns{0}, max_late_ns{0};
    };
    void poll(int index, int pollers);
    bool serve(uint32_t q, QueueState &s, Counts &counts, std::vector<Due> &due);
    // Posts the completions in due whose modelled finish has passed; whether it posted any.
    bool post_due(std::vector<QueueState> &state, std::vector<Due> &due, Counts &counts);
    // An entry as the Command it asks for; false with *refused set when it cannot be run.
    bool decode(const NvmeSqe &e, Command *out, Completion *refused);
    // Posts a completion for command cid at the CQ tail, phase tag last.
    void post(uint32_t q, QueueState &s, uint16_t cid, const Completion &c, Counts &counts);
    // Whether the CQ has no room for another entry.
    bool cq_full(uint32_t q, QueueState &s) const;

    Device &dev_;
    NvmeQueueSet set_;
    uint64_t agent_arena_;
    std::atomic<bool> stop_{false};
    std::unique_ptr<Counts[]> counts_;  // one per poller
    int pollers_ = 0;
    // Entries a poller takes from one queue per visit (NVMe's arbitration burst).
    static constexpr uint32_t kBurst = 8;
    std::vector<std::thread> threads_;
};

}  // namespace csd
