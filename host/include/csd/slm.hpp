// SPDX-License-Identifier: MIT
// slm.hpp - the host-managed SLM allocator and RAII buffers. SLM belongs to the drive;
// this allocator hands out ranges of it within one process (csd.ko arbitrates between
// processes). First fit over a free list, coalescing on free, any power-of-two alignment.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>

namespace csd {

class SlmAllocator;

// An allocated SLM range; frees itself when destroyed. Movable, not copyable.
class SlmBuffer {
public:
    SlmBuffer() = default;
    SlmBuffer(SlmAllocator *owner, uint64_t offset, uint64_t size) : owner_(owner), offset_(offset), size_(size) {}
    SlmBuffer(SlmBuffer &&o) noexcept { *this = std::move(o); }
    SlmBuffer &operator=(SlmBuffer &&o) noexcept;
    SlmBuffer(const SlmBuffer &) = delete;
    SlmBuffer &operator=(const SlmBuffer &) = delete;
    ~SlmBuffer() { reset(); }

    uint64_t offset() const { return offset_; }
    uint64_t size() const { return size_; }
    explicit operator bool() const { return owner_ != nullptr; }
    void reset();  // frees the range now
    // Forgets the range without freeing it (its allocator, or the device, is gone).
    void detach() { owner_ = nullptr; }

private:
    SlmAllocator *owner_ = nullptr;
    uint64_t offset_ = 0, size_ = 0;
};

class SlmAllocator {
public:
    // Manages [0, size); a child forked meanwhile gets it between changes.
    explicit SlmAllocator(uint64_t size = 0);
    ~SlmAllocator();
    SlmAllocator(const SlmAllocator &) = delete;
    SlmAllocator &operator=(const SlmAllocator &) = delete;
    // Forgets every allocation and manages [0, size).
    void reset(uint64_t size);
    // Allocates size bytes aligned to align (a power of two); throws csd::Error (ENOMEM)
    // when no free range is large enough.
    SlmBuffer alloc(uint64_t size, uint64_t align = 4096);
    // Returns a range to the free list (SlmBuffer does this).
    void release(uint64_t offset, uint64_t size);
    uint64_t size() const { return size_; }
    uint64_t free_bytes() const;
    uint64_t largest_free() const;  // the largest allocation that can succeed (align 1)

    // Streamed runs (ObjectStore's programs over objects of any size) say while they hold
    // SLM, so that one finding too little free waits for another to end instead of failing.
    // Counts a streamed run in; returns the count of releases so far (for wait_for_release).
    // A new run (queued false) first waits while runs refused SLM are queued for it
    // (join_stream_queue), so that runs started later cannot take every range freed for them.
    uint64_t stream_begin(bool queued = false);
    // A run refused SLM queues for it (before wait_for_release) until it runs its first piece
    // or gives up: leave_stream_queue.
    void join_stream_queue();
    void leave_stream_queue();
    // Counts a streamed run out.
    void stream_end();
    // Waits until a range is released after `releases` (stream_begin's answer) while another
    // streamed run is counted in; true if one was (try again), false at once when no other
    // streamed run holds SLM (what is held is held by buffers that may never be freed), or
    // when no range of `need` bytes (0: unknown) would be free even if every streamed run
    // freed what it holds (the rest is held by buffers).
    bool wait_for_release(uint64_t releases, uint64_t need = 0);
    // Makes every streamed run waiting in wait_for_release now stop waiting (false: it fails as
    // it would have alone): the device is closing, and one of the runs it waits for may be
    // waiting for it (a progress callback that closes the device).
    void stop_waits();

private:
    // The largest free range there would be if every streamed run freed what it holds.
    uint64_t largest_without_streams() const;

    mutable std::mutex mu_;
    uint64_t size_ = 0;
    std::map<uint64_t, uint64_t> free_;  // offset -> length, non-adjacent
    std::map<uint64_t, uint64_t> streams_hold_;  // offset -> length: allocated by streamed runs' threads
    uint64_t releases_ = 0;              // ranges released so far
    unsigned streams_ = 0;               // streamed runs counted in (this process)
    unsigned queued_ = 0;                // runs refused SLM, queued for it
    uint64_t stops_ = 0;                 // stop_waits calls so far
    // Signalled on each release and stream_end. A pointer: a child of fork() gets a new one
    // (waiters of the parent's threads, which the child does not have, would stall it).
    std::unique_ptr<std::condition_variable> freed_;
};

}  // namespace csd
