// SPDX-License-Identifier: MIT
// gpu.cc - the pinned-buffer pipeline and registered-SLM copies.
#include "gpu.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <thread>

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

// Threads that compute the CRC-32C on the simulated peer-to-peer path while the DMA reads the
// same memory: 8 gave 71 / 90 / 87 % of the ceiling at 64 MiB / 256 MiB / 1 GiB, 12 gave
// 66 / 85 / 91 % (two H200 machines, perf.md): more threads mostly take memory bandwidth
// from the DMA (a guess from two runs on different machines, not a sweep).
constexpr int kCheckThreads = 8;

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
        std::unique_lock<std::mutex> g(mu_);
        tasks_ = std::move(tasks);
        next_ = 0;
        left_ = tasks_.size();
        err_ = nullptr;
        cv_.notify_all();
        done_cv_.wait(g, [this] { return left_ == 0; });
        if (err_) std::rethrow_exception(err_);
    }

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
    // at least kCheckThreads: the simulated peer-to-peer path checks CRCs on them during its DMA
    pool_ = std::make_unique<FillPool>(std::max(readers_, kCheckThreads));
    buffers_.resize(static_cast<size_t>(std::max(buffers, 2)));
    for (Buffer &b : buffers_) {
        check(cudaHostAlloc(reinterpret_cast<void **>(&b.host), chunk_, cudaHostAllocDefault), "cudaHostAlloc");
        check(cudaEventCreateWithFlags(&b.done, cudaEventDisableTiming), "cudaEventCreate");
    }
}

Landing::~Landing()
{
    for (Buffer &b : buffers_) {
        if (b.done) {
            cudaEventSynchronize(b.done);
            cudaEventDestroy(b.done);
        }
        if (b.host) cudaFreeHost(b.host);
    }
    if (slm_registered_) {
        cudaHostUnregister(dev_.slm_host_pointer());
    }
    if (ns_registered_) cudaHostUnregister(const_cast<uint8_t *>(ns_registered_));
}

const uint8_t *Landing::registered_namespace()
{
    if (ns_tried_) return ns_registered_;
    ns_tried_ = true;
    const uint8_t *ns = dev_.transport().namespace_host_pointer();
    if (!ns) return nullptr;
    const uint64_t bytes = dev_.ns().lba_count * dev_.ns().lba_size;
    // read-only where the platform pins so (the GPU only reads it), else as any host memory
    cudaError_t e = cudaHostRegister(const_cast<uint8_t *>(ns), bytes, cudaHostRegisterReadOnly);
    if (e != cudaSuccess) {
        cudaGetLastError();
        e = cudaHostRegister(const_cast<uint8_t *>(ns), bytes, cudaHostRegisterDefault);
    }
    if (e != cudaSuccess) {
        cudaGetLastError();  // not sticky: the pipeline still works
        ns_error_ = std::string("cudaHostRegister(namespace mapping): ") + cudaGetErrorString(e);
        return nullptr;
    }
    ns_registered_ = ns;
    return ns;
}

std::string Landing::peer_to_peer_error() const
{
    std::lock_guard<std::mutex> g(const_cast<std::mutex &>(run_mu_));
    return ns_error_;
}

void Landing::copy_mapped(const uint8_t *src, uint64_t n, uint8_t *dst, cudaStream_t stream,
                          const std::function<void(uint64_t pos, uint64_t n)> &verify)
{
    if (n) check(cudaMemcpyAsync(dst, src, n, cudaMemcpyHostToDevice, stream), "cudaMemcpyAsync");
    std::exception_ptr err;
    if (verify) {
        try {
            const uint64_t slice = std::max<uint64_t>((n / kCheckThreads + 4095) & ~4095ull, 1 << 20);
            std::vector<std::function<void()>> tasks;
            for (uint64_t off = 0; off < n; off += slice) {
                tasks.push_back([&verify, off, len = std::min(slice, n - off)] { verify(off, len); });
            }
            if (tasks.size() == 1) tasks[0]();
            else if (!tasks.empty()) pool_->run_all(std::move(tasks));
        } catch (...) {
            err = std::current_exception();
        }
    }
    const cudaError_t e = cudaStreamSynchronize(stream);  // the DMA is done before anything returns
    if (err) std::rethrow_exception(err);
    check(e, "cudaStreamSynchronize");
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
// slices. Measured on the GPU machine (perf.md): faster for one chunk of 1-16 MiB; slower
// for transfers of several chunks (whose copies already overlap the next chunk's fill;
// sending their first and last chunks so was no faster either, perf.md) and for slices of
// a few KiB.
constexpr uint64_t kCopyBySlice = 1 << 20;

// The pipeline: buffer i is refilled only after the GPU copies that last used it finished
// (its event), so the drive-side fill of one chunk overlaps the copies of the others.
CopyReport Landing::pipeline(uint64_t len, Fill fill, uint8_t *dst, cudaStream_t stream)
{
    std::lock_guard<std::mutex> g(run_mu_);
    const auto t0 = std::chrono::steady_clock::now();
    size_t i = 0;
    for (uint64_t pos = 0; pos < len; pos += chunk_, i++) {
        Buffer &b = buffers_[i % buffers_.size()];
        check(cudaEventSynchronize(b.done), "cudaEventSynchronize");
        const uint64_t n = std::min(chunk_, len - pos);
        const std::function<void(uint64_t, uint64_t)> copy = [&](uint64_t off, uint64_t m) {
            check(cudaMemcpyAsync(dst + pos + off, b.host + off, m, cudaMemcpyHostToDevice, stream), "cudaMemcpyAsync");
        };
        const bool by_slice = n >= kCopyBySlice && len <= chunk_;
        try {
            fill_parallel(pos, n, b.host, fill, by_slice ? copy : [](uint64_t, uint64_t) {});
        } catch (...) {
            cudaEventRecord(b.done, stream);  // behind the slices already on their way: the buffer's next use waits
            throw;
        }
        if (!by_slice) copy(0, n);
        check(cudaEventRecord(b.done, stream), "cudaEventRecord");
    }
    for (Buffer &b : buffers_) check(cudaEventSynchronize(b.done), "cudaEventSynchronize");
    return {"pinned-pipeline", len, since(t0), {}};
}

std::future<CopyReport> Landing::slm_to_gpu(uint64_t offset, uint64_t len, void *dst, cudaStream_t stream,
                                            bool direct)
{
    uint8_t *slm = dev_.slm_host_pointer();
    if (direct && slm) {
        return std::async(std::launch::async, [=] {
            std::lock_guard<std::mutex> g(run_mu_);
            if (offset > dev_.caps().slm_size || len > dev_.caps().slm_size - offset) {
                throw Error("slm_to_gpu: range outside SLM", ERANGE);
            }
            if (!slm_registered_) {  // pin SLM once; later copies go straight from it
                check(cudaHostRegister(slm, dev_.caps().slm_size, cudaHostRegisterDefault), "cudaHostRegister(SLM)");
                slm_registered_ = true;
            }
            const auto t0 = std::chrono::steady_clock::now();
            check(cudaMemcpyAsync(dst, slm + offset, len, cudaMemcpyHostToDevice, stream), "cudaMemcpyAsync");
            check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
            return CopyReport{"slm-registered", len, since(t0), {}};
        });
    }
    return std::async(std::launch::async, [=] {
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
    return std::async(std::launch::async, [=] {
        if (direct) {  // the simulated peer-to-peer drive, where the namespace is registered
            std::unique_lock<std::mutex> g(run_mu_);
            if (const uint8_t *ns = registered_namespace()) {
                if (slba > dev_.ns().lba_count || nlb > dev_.ns().lba_count - slba) {
                    throw Error("lbas_to_gpu: LBAs outside the namespace", ERANGE);
                }
                const auto t0 = std::chrono::steady_clock::now();
                copy_mapped(ns + slba * lba, nlb * lba, static_cast<uint8_t *>(dst), stream, {});
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

std::future<CopyReport> Landing::object_to_gpu(ObjectStore &store, const std::string &name, void *dst,
                                               uint64_t dst_bytes, cudaStream_t stream, Progress progress, bool direct)
{
    // The store's destination: the pinned pipeline, whose fill threads call the store's fill
    // (each slice read from the namespace and checked), or one DMA from the registered
    // namespace while the fill threads run the store's check over the same bytes.
    class ToGpu : public ObjectSink {
    public:
        ToGpu(Landing *l, uint8_t *dst, uint64_t cap, cudaStream_t s, const uint8_t *ns, uint64_t ns_bytes)
            : l_(l), dst_(dst), cap_(cap), stream_(s), ns_(ns), ns_bytes_(ns_bytes)
        {
        }
        bool takes_mapped() const override { return ns_ != nullptr; }
        void land(const ObjectInfo &o, const Fill &fill) override
        {
            fits(o);
            report = l_->pipeline(o.bytes, fill, dst_, stream_);
        }
        void land_mapped(const ObjectInfo &o, const uint8_t *bytes, const Check &verify) override
        {
            fits(o);
            std::lock_guard<std::mutex> g(l_->run_mu_);
            const auto t0 = std::chrono::steady_clock::now();
            l_->copy_mapped(bytes, o.bytes, dst_, stream_, verify);
            // the store's device maps the namespace where this landing registered it (else
            // the copy was from pageable memory: right, but no simulated peer-to-peer DMA)
            const bool registered = bytes >= ns_ && o.bytes <= ns_bytes_ && bytes - ns_ <= ns_bytes_ - o.bytes;
            report = {registered ? kPeerToPeer : "mapped-namespace-pageable", o.bytes, since(t0), {}};
        }
        CopyReport report;

    private:
        void fits(const ObjectInfo &o) const
        {
            if (o.bytes > cap_) {
                throw Error("object '" + o.name + "' has " + std::to_string(o.bytes) +
                                " bytes; the destination in GPU memory holds " + std::to_string(cap_),
                            ENOSPC);
            }
        }
        Landing *l_;
        uint8_t *dst_;
        uint64_t cap_;
        cudaStream_t stream_;
        const uint8_t *ns_;
        uint64_t ns_bytes_;
    };
    return std::async(std::launch::async, [=, &store] {
        const auto t0 = std::chrono::steady_clock::now();
        const uint8_t *ns = nullptr;
        if (direct) {
            std::lock_guard<std::mutex> g(run_mu_);
            ns = registered_namespace();
        }
        ToGpu sink(this, static_cast<uint8_t *>(dst), dst_bytes, stream, ns, dev_.ns().lba_count * dev_.ns().lba_size);
        sink.report.object = store.get_into(name, sink, progress);
        sink.report.bytes = sink.report.object.bytes;
        if (sink.report.path.empty()) sink.report.path = "pinned-pipeline";  // an empty object copies nothing
        sink.report.seconds = since(t0);
        return sink.report;
    });
}

}  // namespace csd::gpu
