// SPDX-License-Identifier: MIT
// gpu.cc - the pinned-buffer pipeline, registered-SLM and registered-namespace copies, and
// object landings checked on the GPU.
#include "gpu.hpp"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <functional>
#include <thread>

#include "gpu_crc32c.hpp"

namespace csd::gpu {

namespace {

void check(cudaError_t e, const char *what)
{
    if (e != cudaSuccess) {
        throw Error(std::string(what) + ": " + cudaGetErrorString(e), EIO);
    }
}

double since(std::chrono::steady_clock::time_point t0)
{
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Pieces the simulated peer-to-peer path copies (and checks on the GPU) one DMA each: the
// CRC of the last is what the landing waits for after the DMA (~10-30 us at 8 MiB).
constexpr uint64_t kMappedPiece = 8 << 20;
// Pieces whose CRC may be in flight at once (a ring of slots), without a progress callback.
constexpr int kCrcSlots = 16;

// What the store's destinations in GPU memory share (object_to_gpu's, objects_to_gpu's): each
// checks the landed copy on the GPU, so the store calls land_checked only; an object larger than
// the destination is refused; an object whose bytes the store's device maps inside the namespace
// this landing registered is copied from there, after the drive's Reads of its LBAs.
class GpuSink : public ObjectSink {
public:
    GpuSink(Device &dev, uint64_t cap, const uint8_t *ns) : dev_(dev), cap_(cap), ns_(ns) {}
    bool checks_landed() const override { return true; }
    void land(const ObjectInfo &o, const Fill &) override
    {
        throw Error("landing object '" + o.name + "' into GPU memory: unchecked", ENOTSUP);
    }

protected:
    // Refuses (ENOSPC) an object larger than the destination.
    void check_fits(const ObjectInfo &o) const
    {
        if (o.bytes > cap_) {
            throw Error("object '" + o.name + "' has " + std::to_string(o.bytes) +
                            " bytes; the destination in GPU memory holds " + std::to_string(cap_),
                        ENOSPC);
        }
    }
    // Whether o's bytes at mapped (the store's device's mapping) lie in the registered namespace.
    bool registered(const ObjectInfo &o, const uint8_t *mapped) const
    {
        const uint64_t ns_bytes = dev_.ns().lba_count * dev_.ns().lba_size;
        return mapped && ns_ && mapped >= ns_ && o.bytes <= ns_bytes &&
               static_cast<uint64_t>(mapped - ns_) <= ns_bytes - o.bytes;
    }
    // The drive's Reads (checked, counted, moving no bytes) of the LBAs under [pos, pos + n) of
    // the object whose bytes are at mapped in the registered namespace.
    void read_mapped(const uint8_t *mapped, uint64_t pos, uint64_t n) const
    {
        const uint64_t lba = dev_.ns().lba_size, first = static_cast<uint64_t>(mapped - ns_) / lba;
        dev_.read_lbas_mapped(first + pos / lba, (pos + n + lba - 1) / lba - pos / lba);
    }
    Device &dev_;
    const uint64_t cap_;
    const uint8_t *const ns_;
};

}  // namespace

// A fixed set of threads that run the slices of one fill at a time.
class Landing::FillPool {
public:
    explicit FillPool(int n)
    {
        for (int i = 0; i < n; i++) threads_.emplace_back([this] { run(); });
    }
    ~FillPool()
    {
        {
            std::lock_guard<std::mutex> g(mu_);
            stop_ = true;
        }
        cv_.notify_all();
        for (auto &t : threads_) t.join();
    }
    // Runs every task on the pool and waits for all; rethrows the first failure.
    void run_all(std::vector<std::function<void()>> tasks)
    {
        start(std::move(tasks));
        wait();
    }
    // Hands the tasks to the pool's threads and returns at once (wait() before the next start).
    void start(std::vector<std::function<void()>> tasks)
    {
        std::lock_guard<std::mutex> g(mu_);
        tasks_ = std::move(tasks);
        next_ = 0;
        left_ = tasks_.size();
        err_ = nullptr;
        cv_.notify_all();
    }
    // Waits until the tasks started have all returned; rethrows the first failure.
    void wait()
    {
        std::unique_lock<std::mutex> g(mu_);
        done_cv_.wait(g, [this] { return left_ == 0; });
        if (err_) std::rethrow_exception(err_);
    }
    int threads() const { return static_cast<int>(threads_.size()); }

private:
    void run()
    {
        std::unique_lock<std::mutex> g(mu_);
        for (;;) {
            cv_.wait(g, [this] { return stop_ || next_ < tasks_.size(); });
            if (stop_) return;
            std::function<void()> f = tasks_[next_++];
            g.unlock();
            std::exception_ptr e;
            try {
                f();
            } catch (...) {
                e = std::current_exception();
            }
            g.lock();
            if (e && !err_) err_ = e;
            if (--left_ == 0) done_cv_.notify_all();
        }
    }
    std::mutex mu_;
    std::condition_variable cv_, done_cv_;
    std::vector<std::function<void()>> tasks_;
    size_t next_ = 0, left_ = 0;
    std::exception_ptr err_;
    bool stop_ = false;
    std::vector<std::thread> threads_;
};

// Computes the CRC-32C of landed pieces on its own stream, each behind its copy on the
// landing's stream, and reports each (oldest first, through the Landed given with it) as they
// come back.
class Landing::Checker {
public:
    using Landed = ObjectSink::Landed;
    Checker(uint64_t max_piece, int slots) : crc_(max_piece, slots), copied_(slots), done_(slots)
    {
        check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
        for (int i = 0; i < slots; i++) {
            check(cudaEventCreateWithFlags(&copied_[i], cudaEventDisableTiming), "cudaEventCreate");
            check(cudaEventCreateWithFlags(&done_[i], cudaEventDisableTiming), "cudaEventCreate");
        }
    }
    ~Checker()
    {
        cudaStreamSynchronize(stream_);
        for (size_t i = 0; i < copied_.size(); i++) {
            cudaEventDestroy(copied_[i]);
            cudaEventDestroy(done_[i]);
        }
        cudaStreamDestroy(stream_);
    }
    // Reports the oldest pieces while `window` or more are in flight (window capped at the slots).
    void make_room(size_t window)
    {
        window = std::max<size_t>(1, std::min<size_t>(window, crc_.slots()));
        while (inflight_.size() >= window) report_oldest();
    }
    // Queues the CRC of the n bytes at d (the object's [pos, pos + n)) behind what `after` has
    // queued so far, once fewer than `window` pieces are in flight; landed reports it.
    void add(const uint8_t *d, uint64_t pos, uint64_t n, cudaStream_t after, size_t window, Landed landed)
    {
        make_room(window);
        const int slot = static_cast<int>(next_++ % crc_.slots());
        check(cudaEventRecord(copied_[slot], after), "cudaEventRecord");
        check(cudaStreamWaitEvent(stream_, copied_[slot], 0), "cudaStreamWaitEvent");
        crc_.launch(d, n, slot, stream_);
        check(cudaEventRecord(done_[slot], stream_), "cudaEventRecord");
        inflight_.push_back({slot, pos, n, std::move(landed)});
    }
    // Reports the pieces in flight, in order, as their CRCs come back.
    void report_all()
    {
        while (!inflight_.empty()) report_oldest();
    }
    // Reports the oldest pieces whose CRCs are back already, without waiting.
    void report_ready()
    {
        while (!inflight_.empty()) {
            const cudaError_t e = cudaEventQuery(done_[inflight_.front().slot]);
            if (e == cudaErrorNotReady) return;
            check(e, "cudaEventQuery(CRC-32C)");
            report_oldest();
        }
    }
    // Forgets the pieces in flight (a landing that failed), once their kernels are done.
    void abandon()
    {
        cudaStreamSynchronize(stream_);
        inflight_.clear();
    }

private:
    struct Piece {
        int slot;
        uint64_t pos, n;
        Landed landed;
    };
    void report_oldest()
    {
        Piece p = std::move(inflight_.front());
        inflight_.pop_front();
        check(cudaEventSynchronize(done_[p.slot]), "cudaEventSynchronize(CRC-32C)");
        p.landed(p.pos, p.n, crc_.result(p.slot));
    }
    GpuCrc32c crc_;
    cudaStream_t stream_ = nullptr;
    std::vector<cudaEvent_t> copied_, done_;
    std::deque<Piece> inflight_;
    uint64_t next_ = 0;
};

// One thread that runs the transfers posted to it, in order.
class Landing::Worker {
public:
    Worker() : thread_([this] { run(); }) {}
    // Finishes what was posted, then stops.
    ~Worker()
    {
        {
            std::lock_guard<std::mutex> g(mu_);
            stop_ = true;
        }
        cv_.notify_all();
        thread_.join();
    }
    // Runs f on the worker; its result or exception through the future.
    template <class R>
    std::future<R> post(std::function<R()> f)
    {
        auto task = std::make_shared<std::packaged_task<R()>>(std::move(f));
        std::future<R> fut = task->get_future();
        {
            std::lock_guard<std::mutex> g(mu_);
            queue_.push_back([task] { (*task)(); });
        }
        cv_.notify_one();
        return fut;
    }

private:
    void run()
    {
        std::unique_lock<std::mutex> g(mu_);
        for (;;) {
            cv_.wait(g, [this] { return stop_ || !queue_.empty(); });
            if (queue_.empty()) return;  // stopping, nothing left
            std::function<void()> f = std::move(queue_.front());
            queue_.pop_front();
            g.unlock();
            f();  // a packaged_task: never throws
            g.lock();
        }
    }
    std::mutex mu_;
    std::condition_variable cv_;
    std::deque<std::function<void()>> queue_;
    bool stop_ = false;
    std::thread thread_;
};

bool available()
{
    int n = 0;
    return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

Landing::Landing(Device &dev, uint64_t chunk, int buffers, int readers)
    : dev_(dev), chunk_(std::max<uint64_t>(chunk, 1 << 20)), readers_(std::max(readers, 1))
{
    if (!available()) {
        throw Error("no CUDA device", ENODEV);
    }
    pool_ = std::make_unique<FillPool>(readers_);
    checker_ = std::make_unique<Checker>(std::max(chunk_, kMappedPiece), kCrcSlots);
    worker_ = std::make_unique<Worker>();
    buffers_.resize(static_cast<size_t>(std::max(buffers, 2)));
    for (Buffer &b : buffers_) {
        check(cudaHostAlloc(reinterpret_cast<void **>(&b.host), chunk_, cudaHostAllocDefault), "cudaHostAlloc");
        check(cudaEventCreateWithFlags(&b.done, cudaEventDisableTiming), "cudaEventCreate");
    }
}

Landing::~Landing()
{
    worker_.reset();  // the transfers posted finish first
    for (Buffer &b : buffers_) {
        if (b.done) {
            cudaEventSynchronize(b.done);
            cudaEventDestroy(b.done);
        }
        if (b.host) after_resident_kernels([p = b.host] { cudaFreeHost(p); });  // would wait for a resident kernel
    }
    // slm_reg_ and ns_reg_ let go of their registrations after the copies above finished
}

const uint8_t *Landing::registered_namespace()
{
    if (ns_tried_) return ns_reg_ ? ns_reg_->host() : nullptr;
    ns_tried_ = true;
    const uint8_t *ns = dev_.namespace_host_pointer();
    if (!ns) return nullptr;
    try {  // shared with a GpuMover of the same device, if it holds it already
        ns_reg_ = std::make_unique<HostRegistration>(ns, dev_.ns().lba_count * dev_.ns().lba_size);
    } catch (const Error &e) {  // the pipeline still works
        ns_error_ = std::string("namespace mapping: ") + e.what();
        return nullptr;
    }
    return ns;
}

std::string Landing::peer_to_peer_error() const
{
    std::lock_guard<std::mutex> g(const_cast<std::mutex &>(run_mu_));
    return ns_error_;
}

void Landing::copy_mapped(const uint8_t *src, uint64_t n, uint8_t *dst, cudaStream_t stream)
{
    if (n) check(cudaMemcpyAsync(dst, src, n, cudaMemcpyHostToDevice, stream), "cudaMemcpyAsync");
    check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
}

// Fills dst[0, n) from source position pos with `readers_` threads, each taking a slice and
// handing it to `filled` (its offset and length) as soon as it is full.
void Landing::fill_parallel(uint64_t pos, uint64_t n, uint8_t *dst, const Fill &fill,
                            const std::function<void(uint64_t off, uint64_t len)> &filled)
{
    const uint64_t slice = std::max<uint64_t>((n / readers_ + 4095) & ~4095ull, 4096);
    std::vector<std::function<void()>> tasks;
    for (uint64_t off = 0; off < n; off += slice) {
        const uint64_t len = std::min(slice, n - off);
        tasks.push_back([&fill, &filled, pos, off, len, dst] {
            fill(pos + off, len, dst + off);
            filled(off, len);
        });
    }
    if (tasks.size() == 1) {
        tasks[0]();
    } else {
        pool_->run_all(std::move(tasks));
    }
}

// A transfer of one chunk of at least this size goes to the GPU slice by slice, each slice as
// soon as its fill thread is done with it, so that its copy overlaps the fill of the other
// slices. Measured on the GPU machine (perf.md): faster for one chunk of 1-16 MiB and slower
// for slices of a few KiB. (Transfers of several chunks overlap one chunk's copy with the
// next chunks' fills: streamed().)
constexpr uint64_t kCopyBySlice = 1 << 20;

// The pipeline: one chunk is filled by the readers in parallel and copied slice by slice;
// more go through streamed(), where buffer i is refilled only after the GPU copy that last
// used it finished (its event), so the drive-side fill of some chunks overlaps the copies of
// others.
CopyReport Landing::pipeline(uint64_t len, Fill fill, uint8_t *dst, cudaStream_t stream,
                             const std::function<void(uint64_t pos, uint64_t n)> &copied)
{
    std::lock_guard<std::mutex> g(run_mu_);
    const auto t0 = std::chrono::steady_clock::now();
    if (len > chunk_) {
        streamed(len, fill, dst, stream, copied);
        return {"pinned-pipeline", len, since(t0), {}};
    }
    Buffer &b = buffers_[0];
    check(cudaEventSynchronize(b.done), "cudaEventSynchronize");
    const std::function<void(uint64_t, uint64_t)> copy = [&](uint64_t off, uint64_t m) {
        check(cudaMemcpyAsync(dst + off, b.host + off, m, cudaMemcpyHostToDevice, stream), "cudaMemcpyAsync");
    };
    const bool by_slice = len >= kCopyBySlice;
    try {
        fill_parallel(0, len, b.host, fill, by_slice ? copy : [](uint64_t, uint64_t) {});
    } catch (...) {
        cudaEventRecord(b.done, stream);  // behind the slices already on their way: the buffer's next use waits
        throw;
    }
    if (!by_slice) copy(0, len);
    check(cudaEventRecord(b.done, stream), "cudaEventRecord");
    if (copied) copied(0, len);
    check(cudaEventSynchronize(b.done), "cudaEventSynchronize");
    return {"pinned-pipeline", len, since(t0), {}};
}

// The chunks of one or more ranges (each with its fill and destination) through the pinned
// buffers: the fill threads take the slices of one chunk after another, across ranges, with no
// barrier between chunks or ranges (a thread done with its slice takes the next chunk's while
// another still reads), each chunk's buffer once the copy that last used it finished; the
// thread in run() queues each chunk's copy as soon as its last slice is in. Ranges may be added
// from other threads while it runs, until close().
class Landing::ChunkStream {
public:
    ChunkStream(Landing &l, cudaStream_t stream)
        : l_(l),
          stream_(stream),
          nbuf_(l.buffers_.size()),
          slice_(std::max<uint64_t>((l.chunk_ / l.readers_ + 4095) & ~4095ull, 4096)),
          per_chunk_((l.chunk_ + slice_ - 1) / slice_),
          allowed_(nbuf_)
    {
    }
    // Appends a range of len bytes: fill reads them, each chunk is copied to dst + its position,
    // then copied(pos, n) is called on run()'s thread. False (nothing added) once the stream
    // stopped or was closed.
    bool add(uint64_t len, Fill fill, uint8_t *dst, Copied copied)
    {
        return append(len, {std::move(fill), nullptr, {}, dst, std::move(copied)});
    }
    // Appends a range of len bytes already in host memory that CUDA can copy from (registered)
    // at mapped: no fill; on run()'s thread, before(pos, n), then each chunk's copy straight from
    // mapped + pos, then copied(pos, n).
    bool add_mapped(uint64_t len, const uint8_t *mapped, Copied before, uint8_t *dst, Copied copied)
    {
        return append(len, {{}, mapped, std::move(before), dst, std::move(copied)});
    }
    // No range comes after those added: run() returns once their chunks are copied.
    void close()
    {
        std::lock_guard<std::mutex> g(mu_);
        closed_ = true;
        cv_.notify_all();
    }
    // Runs the stream until it is closed and every chunk's copy is queued and done; idle() is
    // called about every 100 us while there is nothing to copy. Rethrows a fill's error (once
    // every fill has returned; the stream takes no range after it).
    void run(const std::function<void()> &idle = {})
    {
        for (Buffer &b : l_.buffers_) check(cudaEventSynchronize(b.done), "cudaEventSynchronize");
        l_.pool_->start(std::vector<std::function<void()>>(static_cast<size_t>(l_.pool_->threads()), [this] { read(); }));
        try {
            copy_all(idle);
        } catch (...) {
            {
                std::lock_guard<std::mutex> g(mu_);
                stop_ = true;
                if (!err_) err_ = std::current_exception();
            }
            cv_.notify_all();
        }
        l_.pool_->wait();  // every fill returned (they report their errors through err_)
        for (Buffer &b : l_.buffers_) cudaEventSynchronize(b.done);
        std::lock_guard<std::mutex> g(mu_);
        stop_ = true;
        if (err_) std::rethrow_exception(err_);
    }

private:
    struct Range {
        Fill fill;                // or
        const uint8_t *mapped;    // the bytes, copied from where they are
        Copied before;            // mapped: called before each chunk's copy
        uint8_t *dst;
        Copied copied;
    };
    struct Chunk {
        size_t range;
        uint64_t pos, n;
        uint32_t left;  // slices still being read (none for a mapped range's)
    };
    bool append(uint64_t len, Range r)
    {
        std::lock_guard<std::mutex> g(mu_);
        if (stop_ || closed_) return false;
        const bool mapped = r.mapped != nullptr;
        ranges_.push_back(std::move(r));
        for (uint64_t pos = 0; pos < len; pos += l_.chunk_) {
            const uint64_t n = std::min(l_.chunk_, len - pos);
            chunks_.push_back({ranges_.size() - 1, pos, n, mapped ? 0u : static_cast<uint32_t>((n + slice_ - 1) / slice_)});
        }
        cv_.notify_all();
        return true;
    }
    // A fill thread: slice after slice, in order across chunks and ranges.
    void read()
    {
        for (;;) {
            const uint64_t w = next_.fetch_add(1);
            const uint64_t i = w / per_chunk_, off = w % per_chunk_ * slice_;
            const Fill *fill;
            uint64_t pos, n;
            {
                std::unique_lock<std::mutex> g(mu_);
                cv_.wait(g, [&] { return stop_ || (i < chunks_.size() && i < allowed_) || (closed_ && i >= chunks_.size()); });
                if (stop_ || i >= chunks_.size()) return;
                const Chunk &c = chunks_[i];
                if (off >= c.n || ranges_[c.range].mapped) continue;  // a shorter last chunk; nothing to fill
                fill = &ranges_[c.range].fill;
                pos = c.pos + off;
                n = std::min(slice_, c.n - off);
            }
            try {
                (*fill)(pos, n, l_.buffers_[i % nbuf_].host + off);
            } catch (...) {
                std::lock_guard<std::mutex> g(mu_);
                stop_ = true;
                if (!err_) err_ = std::current_exception();
                cv_.notify_all();
                return;
            }
            std::lock_guard<std::mutex> g(mu_);
            if (--chunks_[i].left == 0) cv_.notify_all();
        }
    }
    // run()'s thread: each chunk's copy once its slices are in, in order.
    void copy_all(const std::function<void()> &idle)
    {
        for (uint64_t i = 0;; i++) {
            Chunk c;
            Range *r;
            {
                std::unique_lock<std::mutex> g(mu_);
                auto ready = [&] {
                    return stop_ || (i < chunks_.size() && chunks_[i].left == 0) || (closed_ && i >= chunks_.size());
                };
                while (!ready()) {
                    if (!idle) {
                        cv_.wait(g, ready);
                        break;
                    }
                    g.unlock();
                    idle();
                    g.lock();
                    cv_.wait_for(g, std::chrono::microseconds(100), ready);
                }
                if (stop_ || i >= chunks_.size()) return;
                c = chunks_[i];
                r = &ranges_[c.range];
            }
            Buffer &b = l_.buffers_[i % nbuf_];
            if (r->mapped) {  // straight from where the bytes are: no buffer
                if (r->before) r->before(c.pos, c.n);
                check(cudaMemcpyAsync(r->dst + c.pos, r->mapped + c.pos, c.n, cudaMemcpyHostToDevice, stream_),
                      "cudaMemcpyAsync");
            } else {
                check(cudaMemcpyAsync(r->dst + c.pos, b.host, c.n, cudaMemcpyHostToDevice, stream_), "cudaMemcpyAsync");
                check(cudaEventRecord(b.done, stream_), "cudaEventRecord");
            }
            if (r->copied) r->copied(c.pos, c.n);
            // the copy before this one (its buffer) done: the chunk that reuses that buffer may be read
            if (i >= 1) {
                check(cudaEventSynchronize(l_.buffers_[(i - 1) % nbuf_].done), "cudaEventSynchronize");
                std::lock_guard<std::mutex> g(mu_);
                allowed_ = i - 1 + nbuf_ + 1;
                cv_.notify_all();
            }
        }
    }
    Landing &l_;
    cudaStream_t stream_;
    const uint64_t nbuf_, slice_, per_chunk_;
    std::mutex mu_;
    std::condition_variable cv_;
    std::atomic<uint64_t> next_{0};  // the next slice a fill thread takes (chunk * per_chunk_ + slice)
    uint64_t allowed_;                // chunks whose buffer may be filled: [0, allowed_)
    std::deque<Range> ranges_;        // deques: references stay valid while ranges are added
    std::deque<Chunk> chunks_;
    bool closed_ = false, stop_ = false;
    std::exception_ptr err_;
};

// A transfer of several chunks: one range through a ChunkStream.
void Landing::streamed(uint64_t len, const Fill &fill, uint8_t *dst, cudaStream_t stream,
                       const std::function<void(uint64_t pos, uint64_t n)> &copied)
{
    ChunkStream cs(*this, stream);
    cs.add(len, fill, dst, copied);
    cs.close();
    cs.run();
}

std::future<CopyReport> Landing::slm_to_gpu(uint64_t offset, uint64_t len, void *dst, cudaStream_t stream,
                                            bool direct)
{
    uint8_t *slm = dev_.slm_host_pointer();
    return worker_->post<CopyReport>([=] {
        if (direct && slm) {
            std::lock_guard<std::mutex> g(run_mu_);
            if (offset > dev_.caps().slm_size || len > dev_.caps().slm_size - offset) {
                throw Error("slm_to_gpu: range outside SLM", ERANGE);
            }
            if (!slm_reg_) {  // pin SLM once; later copies go straight from it
                try {
                    slm_reg_ = std::make_unique<HostRegistration>(slm, dev_.caps().slm_size);
                } catch (const Error &e) {  // the pipeline still works (tried again next time)
                    ns_error_ = std::string("SLM: ") + e.what();
                }
            }
            if (slm_reg_) {
                const auto t0 = std::chrono::steady_clock::now();
                check(cudaMemcpyAsync(dst, slm + offset, len, cudaMemcpyHostToDevice, stream), "cudaMemcpyAsync");
                check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
                return CopyReport{"slm-registered", len, since(t0), {}};
            }
        }
        return pipeline(len, [this, offset](uint64_t pos, uint64_t n, uint8_t *d) { dev_.slm_read(offset + pos, d, n); },
                        static_cast<uint8_t *>(dst), stream);
    });
}

std::future<CopyReport> Landing::lbas_to_gpu(uint64_t slba, uint64_t nlb, void *dst, cudaStream_t stream,
                                             bool direct)
{
    const uint32_t lba = dev_.ns().lba_size;
    if (chunk_ % lba != 0) {
        throw Error("lbas_to_gpu: the chunk size must be a multiple of the LBA size", EINVAL);
    }
    return worker_->post<CopyReport>([=] {
        if (direct) {  // the simulated peer-to-peer drive, where the namespace is registered
            std::unique_lock<std::mutex> g(run_mu_);
            if (const uint8_t *ns = registered_namespace()) {
                if (slba > dev_.ns().lba_count || nlb > dev_.ns().lba_count - slba) {
                    throw Error("lbas_to_gpu: LBAs outside the namespace", ERANGE);
                }
                const auto t0 = std::chrono::steady_clock::now();
                dev_.read_lbas_mapped(slba, nlb);  // the drive's Reads: checked and counted, no bytes moved
                copy_mapped(ns + slba * lba, nlb * lba, static_cast<uint8_t *>(dst), stream);
                return CopyReport{kPeerToPeer, nlb * lba, since(t0), {}};
            }
        }
        return pipeline(nlb * lba,
                        [this, slba, lba](uint64_t pos, uint64_t n, uint8_t *d) {
                            // slices are 4 KiB multiples; the last may end mid-LBA only at len
                            dev_.read_lbas(slba + pos / lba, (n + lba - 1) / lba, d);
                        },
                        static_cast<uint8_t *>(dst), stream);
    });
}

CopyReport Landing::land_object(ObjectStore &store, const std::string &name, uint8_t *dst, uint64_t dst_bytes,
                                cudaStream_t stream, const Progress &progress, const uint8_t *ns)
{
    // The store's destination: DMAs from the registered namespace (the simulated
    // peer-to-peer drive) or the pinned pipeline (whose fill threads only read), each piece's
    // CRC-32C computed on the GPU over the bytes where it landed, behind its copy.
    class ToGpu : public GpuSink {
    public:
        ToGpu(Landing *l, uint8_t *dst, uint64_t cap, cudaStream_t s, const uint8_t *ns, bool paced)
            : GpuSink(l->dev_, cap, ns), l_(l), dst_(dst), stream_(s), window_(paced ? 2 : kCrcSlots)
        {
        }
        void land_checked(const ObjectInfo &o, const Fill &fill, const uint8_t *mapped, const Landed &landed) override
        {
            check_fits(o);
            try {
                if (registered(o, mapped)) {
                    std::lock_guard<std::mutex> g(l_->run_mu_);
                    const auto t0 = std::chrono::steady_clock::now();
                    for (uint64_t pos = 0; pos < o.bytes; pos += kMappedPiece) {
                        const uint64_t n = std::min(kMappedPiece, o.bytes - pos);
                        read_mapped(mapped, pos, n);  // the drive's Reads of the piece's LBAs, then its DMA
                        l_->checker_->make_room(window_);  // paced: no DMA far ahead of progress
                        check(cudaMemcpyAsync(dst_ + pos, mapped + pos, n, cudaMemcpyHostToDevice, stream_),
                              "cudaMemcpyAsync");
                        l_->checker_->add(dst_ + pos, pos, n, stream_, window_, landed);
                    }
                    l_->checker_->report_all();
                    check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
                    report = {kPeerToPeer, o.bytes, since(t0), {}};
                } else {
                    report = l_->pipeline(o.bytes, fill, dst_, stream_, [&](uint64_t pos, uint64_t n) {
                        l_->checker_->add(dst_ + pos, pos, n, stream_, window_, landed);
                    });
                    l_->checker_->report_all();
                }
            } catch (...) {
                l_->checker_->abandon();
                cudaStreamSynchronize(stream_);  // no copy still writing dst when the landing gives up
                throw;
            }
        }
        CopyReport report;

    private:
        Landing *l_;
        uint8_t *dst_;
        cudaStream_t stream_;
        size_t window_;
    };
    const auto t0 = std::chrono::steady_clock::now();
    ToGpu sink(this, dst, dst_bytes, stream, ns, static_cast<bool>(progress));
    sink.report.object = store.get_into(name, sink, progress);
    sink.report.bytes = sink.report.object.bytes;
    if (sink.report.path.empty()) sink.report.path = "pinned-pipeline";  // an empty object copies nothing
    sink.report.seconds = since(t0);
    return sink.report;
}

std::future<CopyReport> Landing::object_to_gpu(ObjectStore &store, const std::string &name, void *dst,
                                               uint64_t dst_bytes, cudaStream_t stream, Progress progress, bool direct)
{
    return worker_->post<CopyReport>([=, &store] {
        const uint8_t *ns = nullptr;
        if (direct) {
            std::lock_guard<std::mutex> g(run_mu_);
            ns = registered_namespace();
        }
        return land_object(store, name, static_cast<uint8_t *>(dst), dst_bytes, stream, progress, ns);
    });
}

std::vector<CopyReport> Landing::land_objects_streamed(ObjectStore &store, const std::vector<ObjectTarget> &targets,
                                                       cudaStream_t stream, const uint8_t *ns)
{
    // Each object's store call (callers_, kCallers at once) adds the object's bytes to one
    // ChunkStream as a range — straight from the registered namespace where the store's device
    // maps the object there (ns: the simulated peer-to-peer drive, the drive's Reads run before
    // each chunk's DMA), else filled through the pinned buffers — and waits until the CRC-32C of
    // each of its chunks came back; this thread queues the copies and reports the CRCs. A fill's
    // or a Read's error stops the stream: every object still landing gets it, once no fill runs
    // and no copy writes GPU memory.
    struct Shared {
        std::mutex mu;
        std::condition_variable cv;
        std::exception_ptr stopped;
    };
    class IntoStream : public GpuSink {
    public:
        IntoStream(Landing *l, ChunkStream *cs, Shared *sh, const ObjectTarget &t, cudaStream_t s, const uint8_t *ns)
            : GpuSink(l->dev_, t.dst_bytes, ns), l_(l), cs_(cs), sh_(sh), t_(t), stream_(s)
        {
        }
        std::string path = "pinned-pipeline";  // the path of the last attempt
        void land_checked(const ObjectInfo &o, const Fill &fill, const uint8_t *mapped, const Landed &landed) override
        {
            check_fits(o);
            uint64_t left = (o.bytes + l_->chunk_ - 1) / l_->chunk_;  // chunks whose CRC is still to come
            if (!left) return;
            uint8_t *dst = static_cast<uint8_t *>(t_.dst);
            Landed one_back = [this, &left, &landed](uint64_t pos, uint64_t n, uint32_t crc) {
                landed(pos, n, crc);
                std::lock_guard<std::mutex> g(sh_->mu);
                if (--left == 0) sh_->cv.notify_all();
            };
            auto crc = [this, dst, &one_back](uint64_t pos, uint64_t n) {
                l_->checker_->add(dst + pos, pos, n, stream_, kCrcSlots, one_back);
            };
            bool added;
            if (registered(o, mapped)) {
                path = kPeerToPeer;
                added = cs_->add_mapped(o.bytes, mapped, [this, mapped](uint64_t pos, uint64_t n) {
                    read_mapped(mapped, pos, n);  // the drive's Reads of the chunk's LBAs, then its DMA
                }, dst, crc);
            } else {
                path = "pinned-pipeline";
                added = cs_->add(o.bytes, fill, dst, crc);
            }
            std::unique_lock<std::mutex> g(sh_->mu);
            if (!added) {  // stopped (it closes only once every call is out): the stream's error, once the
                           // worker has it - an error of this object's own would hide it (the first is reported)
                sh_->cv.wait(g, [&] { return sh_->stopped != nullptr; });
                std::rethrow_exception(sh_->stopped);
            }
            sh_->cv.wait(g, [&] { return left == 0 || sh_->stopped; });
            if (left) std::rethrow_exception(sh_->stopped);
        }

    private:
        Landing *l_;
        ChunkStream *cs_;
        Shared *sh_;
        const ObjectTarget &t_;
        cudaStream_t stream_;
    };
    std::lock_guard<std::mutex> g(run_mu_);
    if (!callers_) callers_ = std::make_unique<FillPool>(kCallers);
    const auto t0 = std::chrono::steady_clock::now();
    ChunkStream cs(*this, stream);
    Shared sh;
    std::vector<CopyReport> reports(targets.size());
    std::vector<std::exception_ptr> errors(targets.size());
    std::atomic<size_t> outstanding{targets.size()};
    std::vector<std::function<void()>> calls;
    for (size_t k = 0; k < targets.size(); k++) {
        calls.push_back([&, k] {
            try {
                IntoStream sink(this, &cs, &sh, targets[k], stream, ns);
                reports[k].object = store.get_into(targets[k].name, sink, {});
                reports[k].bytes = reports[k].object.bytes;
                reports[k].path = sink.path;
                reports[k].seconds = since(t0);
            } catch (...) {
                errors[k] = std::current_exception();
            }
            if (--outstanding == 0) cs.close();
        });
    }
    if (calls.empty()) cs.close();
    callers_->start(std::move(calls));
    try {
        cs.run([this] { checker_->report_ready(); });
        checker_->report_all();
    } catch (...) {
        checker_->abandon();
        cudaStreamSynchronize(stream);  // no copy still writing GPU memory when the objects give up
        {
            std::lock_guard<std::mutex> sg(sh.mu);
            sh.stopped = std::current_exception();
        }
        sh.cv.notify_all();
    }
    callers_->wait();
    for (const std::exception_ptr &e : errors) {
        if (e) std::rethrow_exception(e);
    }
    return reports;
}

std::future<std::vector<CopyReport>> Landing::objects_to_gpu(ObjectStore &store, std::vector<ObjectTarget> targets,
                                                             cudaStream_t stream, bool direct)
{
    // Destinations that overlap would land in an order nobody chose, and one object's check on
    // the GPU could read another's bytes: refused before anything lands.
    std::vector<std::pair<uintptr_t, uintptr_t>> spans;
    for (const ObjectTarget &t : targets) {
        const auto at = reinterpret_cast<uintptr_t>(t.dst);
        if (t.dst_bytes) spans.emplace_back(at, at + t.dst_bytes);
    }
    std::sort(spans.begin(), spans.end());
    for (size_t i = 1; i < spans.size(); i++) {
        if (spans[i].first < spans[i - 1].second) {
            throw Error("objects_to_gpu: two targets' destinations in GPU memory overlap", EINVAL);
        }
    }
    return worker_->post<std::vector<CopyReport>>([=, &store] {
        const uint8_t *ns = nullptr;
        if (direct) {
            std::lock_guard<std::mutex> g(run_mu_);
            ns = registered_namespace();
        }
        return land_objects_streamed(store, targets, stream, ns);
    });
}

}  // namespace csd::gpu
