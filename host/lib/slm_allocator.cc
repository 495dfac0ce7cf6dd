// SPDX-License-Identifier: MIT
// slm_allocator.cc - first-fit SLM allocator with coalescing free list.
#include <cerrno>
#include <string>

#include "csd/error.hpp"
#include "csd/slm.hpp"
#include "fork_hold.hpp"

namespace csd {

namespace {
// The allocator whose streamed run this thread is in (stream_begin to stream_end): what it
// allocates meanwhile is the run's, freed when it ends.
thread_local const SlmAllocator *t_streaming = nullptr;
}  // namespace

SlmAllocator::SlmAllocator(uint64_t size) : freed_(std::make_unique<std::condition_variable>())
{
    reset(size);
    fork_hold_add(this, ForkLevel::allocator, [this] { mu_.lock(); }, [this](bool child) {
        if (child) {  // the parent's streamed runs and waiters are threads the child does not have
            streams_ = 0;
            queued_ = 0;
            (void)freed_.release();  // never destroyed: it may count the parent's waiters
            freed_ = std::make_unique<std::condition_variable>();
        }
        mu_.unlock();
    });
}

SlmAllocator::~SlmAllocator() { fork_hold_remove(this); }

SlmBuffer &SlmBuffer::operator=(SlmBuffer &&o) noexcept
{
    if (this != &o) {
        reset();
        owner_ = o.owner_;
        offset_ = o.offset_;
        size_ = o.size_;
        o.owner_ = nullptr;
    }
    return *this;
}

void SlmBuffer::reset()
{
    if (owner_) {
        owner_->release(offset_, size_);
        owner_ = nullptr;
    }
}

void SlmAllocator::reset(uint64_t size)
{
    std::lock_guard<std::mutex> g(mu_);
    size_ = size;
    free_.clear();
    streams_hold_.clear();
    releases_++;
    if (freed_) freed_->notify_all();
    if (size) {
        free_[0] = size;
    }
}

SlmBuffer SlmAllocator::alloc(uint64_t size, uint64_t align)
{
    if (size == 0 || align == 0 || (align & (align - 1)) != 0) {
        throw Error("SLM allocation of " + std::to_string(size) + " bytes (align " + std::to_string(align) + ")", EINVAL);
    }
    std::lock_guard<std::mutex> g(mu_);
    for (auto it = free_.begin(); it != free_.end(); ++it) {
        const uint64_t start = (it->first + align - 1) & ~(align - 1);
        const uint64_t end = it->first + it->second;
        if (start < it->first || start > end || end - start < size) {
            continue;
        }
        const uint64_t before = start - it->first, after = end - start - size;
        const uint64_t base = it->first;
        free_.erase(it);
        if (before) {
            free_[base] = before;
        }
        if (after) {
            free_[start + size] = after;
        }
        if (t_streaming == this) streams_hold_[start] = size;
        return SlmBuffer(this, start, size);
    }
    uint64_t largest = 0;
    for (auto &f : free_) {
        largest = std::max(largest, f.second);
    }
    throw Error("SLM allocation of " + std::to_string(size) + " bytes: no free range that large (largest " +
                    std::to_string(largest) + ")",
                ENOMEM);
}

void SlmAllocator::release(uint64_t offset, uint64_t size)
{
    std::lock_guard<std::mutex> g(mu_);
    releases_++;
    freed_->notify_all();
    streams_hold_.erase(offset);
    auto next = free_.lower_bound(offset);
    if (next != free_.end() && next->first == offset + size) {  // merge with the following range
        size += next->second;
        next = free_.erase(next);
    }
    if (next != free_.begin()) {
        auto prev = std::prev(next);
        if (prev->first + prev->second == offset) {  // merge with the preceding range
            prev->second += size;
            return;
        }
    }
    free_[offset] = size;
}

uint64_t SlmAllocator::free_bytes() const
{
    std::lock_guard<std::mutex> g(mu_);
    uint64_t n = 0;
    for (auto &f : free_) {
        n += f.second;
    }
    return n;
}

uint64_t SlmAllocator::largest_free() const
{
    std::lock_guard<std::mutex> g(mu_);
    uint64_t m = 0;
    for (auto &f : free_) {
        m = std::max(m, f.second);
    }
    return m;
}

uint64_t SlmAllocator::stream_begin(bool queued)
{
    std::unique_lock<std::mutex> g(mu_);
    if (!queued) freed_->wait(g, [&] { return queued_ == 0; });
    streams_++;
    t_streaming = this;
    return releases_;
}

void SlmAllocator::join_stream_queue()
{
    std::lock_guard<std::mutex> g(mu_);
    queued_++;
}

void SlmAllocator::leave_stream_queue()
{
    std::lock_guard<std::mutex> g(mu_);
    if (queued_) queued_--;
    freed_->notify_all();
}

void SlmAllocator::stream_end()
{
    std::lock_guard<std::mutex> g(mu_);
    if (streams_) streams_--;
    if (t_streaming == this) t_streaming = nullptr;
    freed_->notify_all();
}

uint64_t SlmAllocator::largest_without_streams() const
{
    uint64_t best = 0, at = 0, len = 0;  // the range being merged: [at, at + len)
    auto f = free_.begin();
    auto h = streams_hold_.begin();
    while (f != free_.end() || h != streams_hold_.end()) {
        const bool take_free = h == streams_hold_.end() || (f != free_.end() && f->first < h->first);
        const auto &r = take_free ? *f++ : *h++;
        if (len && at + len == r.first) {
            len += r.second;
        } else {
            at = r.first, len = r.second;
        }
        best = std::max(best, len);
    }
    return best;
}

bool SlmAllocator::wait_for_release(uint64_t releases, uint64_t need)
{
    std::unique_lock<std::mutex> g(mu_);
    const uint64_t stops = stops_;
    auto hopeless = [&] { return need && largest_without_streams() < need; };
    freed_->wait(g, [&] { return releases_ != releases || streams_ == 0 || stops_ != stops || hopeless(); });
    return releases_ != releases && stops_ == stops && !hopeless();
}

void SlmAllocator::stop_waits()
{
    std::lock_guard<std::mutex> g(mu_);
    stops_++;
    freed_->notify_all();
}

}  // namespace csd
