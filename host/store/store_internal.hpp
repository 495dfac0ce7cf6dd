// SPDX-License-Identifier: MIT
// store_internal.hpp - what the store's source files (store.cc, store_stream.cc) share.
#pragma once

#include <string>

#include "csd/device.hpp"

namespace csd {

// Throws EROFS for what (a write of the store) where the device was opened read-only.
void refuse_read_only(const Device &dev, const std::string &what);

// The queue for SLM a refused streamed call joined (SlmAllocator::join_stream_queue): left when
// its first piece runs or on its way out, whichever comes first.
struct StreamQueue {
    SlmAllocator *at = nullptr;  // the allocator it queues at; null: not queued
    void leave()
    {
        if (at) at->leave_stream_queue(), at = nullptr;
    }
    ~StreamQueue() { leave(); }
};

// The streamed call a thread is in (store_stream.cc's streamed()): why a refusal may be worth
// trying again once other streamed runs of the process free SLM.
struct StreamTurn {
    bool cut_by_others = false;  // SLM it would have used alone was held by others when it planned
    bool refused = false;        // refused for want of SLM (short_of_slm), not for its input
    bool started = false;        // a piece ran (progress was told): it is not planned again
    uint64_t need = 0;           // refused: the SLM in one range it needs at least (0: unknown)
    StreamQueue *queue = nullptr;  // the call's place in the queue for SLM, left by its first piece
};

// Whether this thread is in a streamed call of the store (its progress callback included).
bool in_streamed_call();

// Makes the thread it lives on count as in a streamed call when `nested`: a worker running
// part of a call made from a streamed run's progress callback (DriveSet's fan-out), so that a
// streamed call made there does not wait for SLM, as one made in the callback's own thread
// does not (it would wait for the run whose callback waits for it).
class NestedStreamScope {
public:
    explicit NestedStreamScope(bool nested);
    ~NestedStreamScope();
    NestedStreamScope(const NestedStreamScope &) = delete;
    NestedStreamScope &operator=(const NestedStreamScope &) = delete;

private:
    StreamTurn turn_;
    bool set_ = false;
};

}  // namespace csd
