// SPDX-License-Identifier: MIT
// queue_processor.hpp - serves NVMe queue pairs that live in shared memory (filled and rung
// by another agent, such as a GPU kernel) onto a Device: host threads poll each SQ tail
// doorbell, run every new entry through the Device's transport (the in-process device or a
// real drive's passthrough), and post completions with the phase tag, as a controller does.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <future>
#include <utility>
#include <memory>
#include <thread>
#include <vector>

#include "csd/device.hpp"
#include "csd/in_process.hpp"
#include "nvme_queue.hpp"

namespace csd {

// One poller's share of a Mover: host staging that commands read into, and batches of copies
// from it into the memory the submitter named. Used by one poller thread only.
class MoverLane {
public:
    enum class State { running, done, failed };
    virtual ~MoverLane() = default;
    // Host staging for len bytes; nullptr when the lane has no room until earlier batches are done.
    virtual uint8_t *stage(uint32_t len) = 0;
    // Records a copy of len staged bytes to the submitter's address dst; returns the number
    // state() takes for it (non-zero): the batch it belongs to (the one the next flush() starts),
    // or with moves_at_once() the copy's own.
    virtual uint64_t copy(uint64_t dst, const uint8_t *staged, uint32_t len) = 0;
    // Records a copy of len bytes straight from host memory the mover reaches (Mover::reaches),
    // with no staging; returns its number as copy() does, or 0 when the lane has no room now.
    virtual uint64_t copy_from(uint64_t dst, const uint8_t *src, uint32_t len)
    {
        (void)dst, (void)src, (void)len;
        return 0;
    }
    // Starts the copies recorded since the last flush (and releases staging that no copy took).
    virtual void flush() = 0;
    // With moves_at_once(): hands the copies recorded so far to the mover (after each queue
    // visit; flush() does too).
    virtual void publish() {}
    // Whether the copies numbered b (copy()) are done, or failed; batches finish in order.
    virtual State state(uint64_t b) = 0;
    // Whether copies start as copy() records them and finish one by one (flush() then only
    // ends a slab of staging): the poller checks for moved ones between queue visits.
    virtual bool moves_at_once() const { return false; }
    // Starts what the lane runs beside the pollers (called on every lane once all are made).
    virtual void start() {}
    // Stops what the lane runs beside the pollers (called on every lane before any is destroyed).
    virtual void stop() {}
};

// Memory that the submitter may name as a Read's destination but that this process cannot
// store into (a GPU's memory): the drive reads into host staging and the mover copies the
// bytes there; the completion is posted only once the copy is done.
class Mover {
public:
    virtual ~Mover() = default;
    // Whether [addr, addr + len) lies inside the memory it moves into (no overflow).
    virtual bool covers(uint64_t addr, uint64_t len) const = 0;
    // The largest transfer a lane can stage at once.
    virtual uint32_t max_transfer() const = 0;
    // A lane for one poller thread (made on the caller's thread; throws csd::Error).
    virtual std::unique_ptr<MoverLane> lane() = 0;
    // Whether its lanes copy straight from [src, src + len) of host memory (copy_from): the
    // namespace's pages of a simulated peer-to-peer drive, registered with the mover.
    virtual bool reaches(const uint8_t *src, uint64_t len) const
    {
        (void)src, (void)len;
        return false;
    }
};

class QueueProcessor {
public:
    // Serves `host` (the queue set as this process addresses it) with `pollers` threads,
    // each owning queues q with q % pollers == its index. `agent_arena` is the arena's
    // address as the submitter writes it into PRP1 (a GPU's view of mapped memory may
    // differ from the host's). With a mover, a Read or SLM Read whose PRP1 lies in the mover's
    // memory rather than the arena lands there (moved before its completion is posted).
    // A plain Read (no flags) of the namespace that the device maps into this process
    // (Transport::namespace_host_pointer: the simulated peer-to-peer drive) into the mover's
    // memory is copied by the mover straight from those pages when it reaches them, after the
    // drive has run it moving no bytes (InProcess::submit_mapped_read: its checks, its
    // counting, its error, which is posted with nothing copied); every other command goes
    // through the drive.
    // Starts polling at once; throws csd::Error on bad layouts.
    QueueProcessor(Device &dev, const NvmeQueueSet &host, uint64_t agent_arena, int pollers, Mover *mover = nullptr);
    ~QueueProcessor();  // stops and joins the pollers
    QueueProcessor(const QueueProcessor &) = delete;
    QueueProcessor &operator=(const QueueProcessor &) = delete;

    uint64_t commands() const;  // entries completed so far
    uint64_t errors() const;    // of those, with a non-zero status
    uint64_t direct_reads() const;  // of those, Reads the mover copied straight from the namespace (copy_from)
    // Completions a timing model timed (InProcess::submit_deferred), and how late after their
    // modelled finish they were posted: the mean and the largest, in nanoseconds.
    struct Timed {
        uint64_t completions = 0;
        double mean_late_ns = 0;
        uint64_t max_late_ns = 0;
    };
    Timed timed() const;

    // Runs one submission queue entry against the device and returns its completion
    // (status without the phase tag). Exposed so that the decoding can be tested alone; an
    // entry for the mover's memory is refused here (Data Transfer Error).
    Completion run(const NvmeSqe &e);

private:
    struct QueueState {
        uint32_t sq_head = 0, cq_tail = 0;
        uint32_t cq_head = 0;  // the consumer's CQ head as last read (re-read only when the CQ looks full)
        uint16_t phase = 1;
        std::vector<std::pair<uint16_t, std::future<Completion>>> pending;  // Executes in flight: (cid, completion)
        uint32_t due = 0;  // completions of this queue waiting for their modelled finish
        uint32_t moving = 0;  // completions of this queue waiting for their data's copy
        // the entry at sq_head, a Read copied from the namespace's pages, has been run by the
        // drive (InProcess::submit_mapped_read) and waits for room in the mover's ring
        bool head_read = false;
    };
    // A completion to post at its modelled finish; a poller keeps them in a min-heap.
    struct Due {
        uint64_t finish;
        uint32_t q;
        uint16_t cid;
        Completion c;
        uint64_t batch = 0;  // with a mover: the batch of copies its data waits for (0: none)
        bool operator>(const Due &o) const { return finish > o.finish; }
    };
    // A completion waiting for its data's copy into the mover's memory.
    struct Moving {
        uint64_t batch;
        uint32_t q;
        uint16_t cid;
        Completion c;
    };
    // What one poller keeps: its queues' state, completions due and completions moving.
    struct Poller {
        std::vector<QueueState> state;
        std::vector<Due> due;  // a min-heap on the modelled finish
        std::deque<Moving> moving;  // in batch order
        MoverLane *lane = nullptr;
    };
    // What one poller counted, on a cache line of its own (pollers share no written line).
    struct alignas(64) Counts {
        std::atomic<uint64_t> commands{0}, errors{0}, direct{0};
        std::atomic<uint64_t> timed{0}, late_ns{0}, max_late_ns{0};
    };
    void poll(int index, int pollers);
    bool serve(uint32_t q, Poller &p, Counts &counts);
    // Posts the completions in due whose modelled finish has passed (and whose data, if any,
    // has been moved); whether it posted any.
    bool post_due(Poller &p, Counts &counts);
    // Posts the completions whose data the mover has moved, in order; whether it posted any.
    bool post_moved(Poller &p, Counts &counts);
    // An entry as the Command it asks for; false with *refused set when it cannot be run.
    // *to_mover: its data goes to the mover's memory (c.data is then left for staging).
    bool decode(const NvmeSqe &e, Command *out, Completion *refused, bool *to_mover);
    // For a decoded Read into the mover's memory: its bytes in the namespace's mapping when the
    // mover copies straight from there (a plain Read inside the namespace), else nullptr.
    const uint8_t *direct_source(const NvmeSqe &e, uint32_t len) const;
    // Posts a completion for command cid at the CQ tail, phase tag last.
    void post(uint32_t q, QueueState &s, uint16_t cid, const Completion &c, Counts &counts);
    // Whether the CQ has no room for another entry.
    bool cq_full(uint32_t q, QueueState &s) const;

    Device &dev_;
    InProcess *in_;  // the device's in-process side (its transport's for its life), else nullptr
    NvmeQueueSet set_;
    uint64_t agent_arena_;
    Mover *mover_ = nullptr;
    std::vector<std::unique_ptr<MoverLane>> lanes_;  // one per poller, with a mover
    std::atomic<bool> stop_{false};
    std::unique_ptr<Counts[]> counts_;  // one per poller
    int pollers_ = 0;
    // Entries a poller takes from one queue per visit (NVMe's arbitration burst).
    static constexpr uint32_t kBurst = 8;
    std::vector<std::thread> threads_;
};

}  // namespace csd
