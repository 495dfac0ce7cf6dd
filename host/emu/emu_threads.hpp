// SPDX-License-Identifier: MIT
// emu_threads.hpp - the in-process device's thread plumbing (internal; no device semantics):
// its compute units' worker threads (the port's run) and the count of its commands in
// flight that a fork() waits out. Both are held across fork() and resumed after it, in the
// parent and in the child, by the device's fork_hold registration.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <new>
#include <thread>
#include <vector>

namespace csd {

// n worker threads running queued jobs in order; started again, lazily, in a child that a
// fork() left without them.
class WorkerPool {
public:
    explicit WorkerPool(uint32_t n) : n_(n) { start(); }
    ~WorkerPool()
    {
        {
            std::lock_guard<std::mutex> g(mu_);
            stop_ = true;
        }
        cv_.notify_all();
        for (auto &t : threads_) t.join();
    }
    WorkerPool(const WorkerPool &) = delete;
    WorkerPool &operator=(const WorkerPool &) = delete;

    // Queues job for the next free worker.
    void run(std::function<void()> job)
    {
        {
            std::lock_guard<std::mutex> g(mu_);
            if (threads_.empty()) start();  // a child forked after open: its first job
            queue_.push_back(std::move(job));
        }
        cv_.notify_one();
    }
    // Before fork(): no worker is between jobs holding the queue.
    void hold() { mu_.lock(); }
    // After fork(). The child has none of the parent's threads: it forgets their handles
    // (joining or detaching a thread of another process is undefined) and makes anew the
    // condition variable they waited on.
    void resume(bool child)
    {
        if (child) {
            for (auto &t : threads_) new (&t) std::thread();  // the thread is not ours: no destructor
            threads_.clear();
            new (&cv_) std::condition_variable();
        }
        mu_.unlock();
    }

private:
    void start()
    {
        for (uint32_t i = 0; i < n_; i++) threads_.emplace_back([this] { work(); });
    }
    void work()
    {
        for (;;) {
            std::function<void()> job;
            {
                std::unique_lock<std::mutex> g(mu_);
                cv_.wait(g, [this] { return stop_ || !queue_.empty(); });
                if (queue_.empty()) return;  // stop_ and drained
                job = std::move(queue_.front());
                queue_.pop_front();
            }
            job();
        }
    }

    const uint32_t n_;
    std::mutex mu_;  // the queue
    std::condition_variable cv_;
    std::deque<std::function<void()>> queue_;
    bool stop_ = false;
    std::vector<std::thread> threads_;
};

// The commands in flight, for fork(): counted on per-thread shards (a cache line each), so
// that threads submitting at millions of commands a second share no line; hold() stops new
// ones and waits for the shards' sum to reach 0. Sequentially consistent: a command either
// sees the fork (and steps back) or is seen by the sum.
class InFlightGate {
public:
    // One more command in flight (waits while a fork() is under way).
    void enter()
    {
        Shard &s = my_shard();
        for (;;) {
            s.n.fetch_add(1);
            if (!forking_.load()) return;
            leave();  // a fork() is under way: step back until it is done
            std::unique_lock<std::mutex> g(mu_);
            cv_.wait(g, [this] { return !forking_.load(); });
        }
    }
    // One more in flight, for a command already counted (so it must not wait for fork()).
    void enter_also() { my_shard().n.fetch_add(1); }
    // One command fewer in flight (on any thread: a shard may go below 0, the sum cannot).
    void leave()
    {
        my_shard().n.fetch_sub(1);
        if (forking_.load()) {
            std::lock_guard<std::mutex> g(mu_);
            cv_.notify_all();
        }
    }
    // Before fork(): new commands wait, those in flight run out; held until resume().
    void hold()
    {
        std::unique_lock<std::mutex> g(mu_);
        forking_.store(true);
        cv_.wait(g, [this] { return in_flight() == 0; });
        g.release();  // held across fork()
    }
    // After fork(), in the parent and (child = true) in the child: commands go on.
    void resume(bool child)
    {
        if (child) new (&cv_) std::condition_variable();  // the parent's waiters are not here
        forking_.store(false);
        mu_.unlock();
        cv_.notify_all();
    }

    // A command in flight while it lives.
    class Scope {
    public:
        explicit Scope(InFlightGate &g) : g_(g) { g_.enter(); }
        ~Scope() { g_.leave(); }
        Scope(const Scope &) = delete;
        Scope &operator=(const Scope &) = delete;

    private:
        InFlightGate &g_;
    };

private:
    struct alignas(64) Shard {
        std::atomic<int64_t> n{0};
    };
    static constexpr unsigned kShards = 64;
    Shard &my_shard()
    {
        static std::atomic<unsigned> next{0};
        static thread_local const unsigned mine = next++ % kShards;
        return shards_[mine];
    }
    int64_t in_flight() const
    {
        int64_t n = 0;
        for (const Shard &s : shards_) n += s.n.load();
        return n;
    }

    std::mutex mu_;  // a fork()'s wait, and commands waiting for it
    std::condition_variable cv_;
    Shard shards_[kShards];
    std::atomic<bool> forking_{false};
};

}  // namespace csd
