// SPDX-License-Identifier: MIT
// gpu.cc - the pinned-buffer pipeline, registered-SLM copies and cuFile reads.
#include "gpu.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <thread>

#ifdef CSD_HAVE_CUFILE
#include <cufile.h>
#endif

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
    pool_ = std::make_unique<FillPool>(readers_);
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
        cudaHostUnregister(dev_.transport().slm_host_pointer());
    }
}

// Fills dst[0, n) from source position pos with `readers_` threads, each taking a slice.
void Landing::fill_parallel(uint64_t pos, uint64_t n, uint8_t *dst, const Fill &fill)
{
    const uint64_t slice = std::max<uint64_t>((n / readers_ + 4095) & ~4095ull, 4096);
    std::vector<std::function<void()>> tasks;
    for (uint64_t off = 0; off < n; off += slice) {
        const uint64_t len = std::min(slice, n - off);
        tasks.push_back([&fill, pos, off, len, dst] { fill(pos + off, len, dst + off); });
    }
    if (tasks.size() == 1) {
        tasks[0]();
    } else {
        pool_->run_all(std::move(tasks));
    }
}

// The pipeline: buffer i is refilled only after the GPU copy that last used it finished
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
        fill_parallel(pos, n, b.host, fill);
        check(cudaMemcpyAsync(dst + pos, b.host, n, cudaMemcpyHostToDevice, stream), "cudaMemcpyAsync");
        check(cudaEventRecord(b.done, stream), "cudaEventRecord");
    }
    for (Buffer &b : buffers_) check(cudaEventSynchronize(b.done), "cudaEventSynchronize");
    return {"pinned-pipeline", len, since(t0)};
}

std::future<CopyReport> Landing::slm_to_gpu(uint64_t offset, uint64_t len, void *dst, cudaStream_t stream,
                                            bool direct)
{
    uint8_t *slm = dev_.transport().slm_host_pointer();
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
            return CopyReport{"slm-registered", len, since(t0)};
        });
    }
    return std::async(std::launch::async, [=] {
        return pipeline(len, [this, offset](uint64_t pos, uint64_t n, uint8_t *d) { dev_.slm_read(offset + pos, d, n); },
                        static_cast<uint8_t *>(dst), stream);
    });
}

std::future<CopyReport> Landing::lbas_to_gpu(uint64_t slba, uint64_t nlb, void *dst, cudaStream_t stream)
{
    const uint32_t lba = dev_.ns().lba_size;
    if (chunk_ % lba != 0) {
        throw Error("lbas_to_gpu: the chunk size must be a multiple of the LBA size", EINVAL);
    }
    return std::async(std::launch::async, [=] {
        return pipeline(nlb * lba,
                        [this, slba, lba](uint64_t pos, uint64_t n, uint8_t *d) {
                            // slices are 4 KiB multiples; the last may end mid-LBA only at len
                            dev_.read_lbas(slba + pos / lba, (n + lba - 1) / lba, d);
                        },
                        static_cast<uint8_t *>(dst), stream);
    });
}

#ifdef CSD_HAVE_CUFILE
namespace {

// A cuFile handle on the in-process device's backing file, opened O_DIRECT as GDS wants.
struct CuFile {
    int fd = -1;
    CUfileHandle_t fh{};
    bool ok = false;
    std::string why;
    explicit CuFile(const std::string &path)
    {
        // Without the nvidia-fs driver cuFile only runs in compatibility mode (a POSIX read
        // into its own bounce buffers, then a copy): no gain over the pinned pipeline, and on
        // the GPU machine (CUDA 13.0) opening its driver in a process that had registered
        // host memory with CUDA crashed it. So cuFile is touched only where GDS can run.
        if (access("/proc/driver/nvidia-fs/version", F_OK) != 0 && access("/sys/module/nvidia_fs", F_OK) != 0) {
            why = "no GPUDirect Storage (the nvidia-fs driver is not loaded)";
            return;
        }
        const CUfileError_t drv = cuFileDriverOpen();
        if (drv.err != CU_FILE_SUCCESS) {
            why = "cuFileDriverOpen failed (error " + std::to_string(drv.err) + ")";
            return;
        }
        CUfileDrvProps_t props{};
        if (cuFileDriverGetProperties(&props).err != CU_FILE_SUCCESS || props.nvfs.major_version == 0) {
            why = "no GPUDirect Storage (nvidia-fs driver absent; cuFile would run in compatibility mode)";
            return;
        }
        fd = ::open(path.c_str(), O_RDONLY | O_DIRECT | O_CLOEXEC);
        if (fd < 0) {
            why = "open " + path + " with O_DIRECT: " + std::strerror(errno);
            return;
        }
        CUfileDescr_t descr{};
        descr.handle.fd = fd;
        descr.type = CU_FILE_HANDLE_TYPE_OPAQUE_FD;
        const CUfileError_t st = cuFileHandleRegister(&fh, &descr);
        if (st.err != CU_FILE_SUCCESS) {
            why = "cuFileHandleRegister failed on " + path + " (error " + std::to_string(st.err) + ")";
            return;
        }
        ok = true;
    }
    ~CuFile()
    {
        if (ok) cuFileHandleDeregister(fh);
        if (fd >= 0) ::close(fd);
    }
};

}  // namespace
#endif

std::string Landing::cufile_status()
{
#ifdef CSD_HAVE_CUFILE
    const std::string path = dev_.transport().backing_file();
    if (path.empty()) {
        return "the device is not a file this process can read (cuFile needs the in-process device)";
    }
    CuFile probe(path);
    return probe.ok ? "available" : probe.why;
#else
    return "this build has no cuFile (cufile.h was not found)";
#endif
}

std::future<CopyReport> Landing::object_to_gpu(ObjectStore &store, const std::string &name, void *dst,
                                               cudaStream_t stream, bool use_cufile)
{
    const ObjectInfo o = store.stat(name);
    const uint32_t lba = dev_.ns().lba_size;
    const uint64_t first = store.first_lba(o);
    auto fill = [this, first, lba](uint64_t pos, uint64_t n, uint8_t *d) {
        const uint64_t nlb = (n + lba - 1) / lba;
        if (nlb * lba == n) {
            dev_.read_lbas(first + pos / lba, nlb, d);
        } else {  // the object's last, partial LBA
            std::vector<uint8_t> tmp(nlb * lba);
            dev_.read_lbas(first + pos / lba, nlb, tmp.data());
            std::memcpy(d, tmp.data(), n);
        }
    };
#ifdef CSD_HAVE_CUFILE
    if (use_cufile) {
        const std::string path = dev_.transport().backing_file();
        return std::async(std::launch::async, [=] {
            CuFile cf(path);
            if (!cf.ok) {  // fall back; the report says which path ran and why
                CopyReport r = pipeline(o.bytes, fill, static_cast<uint8_t *>(dst), stream);
                r.path += " (cuFile: " + cf.why + ")";
                return r;
            }
            std::lock_guard<std::mutex> g(run_mu_);
            const auto t0 = std::chrono::steady_clock::now();
            check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");  // after earlier work
            // cuFile reads the 4 KiB-aligned body; the tail comes through a pinned buffer.
            const uint64_t body = o.bytes & ~4095ull;
            uint64_t done = 0;
            while (done < body) {
                const ssize_t n = cuFileRead(cf.fh, dst, body - done, static_cast<off_t>(first * lba + done),
                                             static_cast<off_t>(done));
                if (n <= 0) throw Error("cuFileRead of object '" + name + "'", n < 0 ? static_cast<int>(-n) : EIO);
                done += static_cast<uint64_t>(n);
            }
            if (o.bytes > body) {
                Buffer &b = buffers_[0];
                check(cudaEventSynchronize(b.done), "cudaEventSynchronize");
                fill(body, o.bytes - body, b.host);
                check(cudaMemcpyAsync(static_cast<uint8_t *>(dst) + body, b.host, o.bytes - body,
                                      cudaMemcpyHostToDevice, stream), "cudaMemcpyAsync");
                check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
            }
            return CopyReport{"cufile", o.bytes, since(t0)};
        });
    }
#else
    (void)use_cufile;
#endif
    return std::async(std::launch::async,
                      [=] { return pipeline(o.bytes, fill, static_cast<uint8_t *>(dst), stream); });
}

}  // namespace csd::gpu
