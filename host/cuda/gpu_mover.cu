// SPDX-License-Identifier: MIT
// gpu_mover.cu - csd::gpu::GpuMover (gpu_mover.hpp): a poller's lane stages the drive's
// Reads in pinned host memory, slab by slab, and moves the blocks into GPU memory: block by
// block through a resident copy kernel (a done flag each), or each polling round's blocks as
// one batch behind a CUDA event.
#include <algorithm>
#include <atomic>
#include <cstring>
#include <string>
#include <thread>
#include <chrono>
#include <vector>

#include <cuda/atomic>

#include "csd/error.hpp"
#include "gpu_crc32c.hpp"
#include "gpu_mover.hpp"

namespace csd::gpu {

namespace {

constexpr int kSlabs = 4;           // staging slabs per lane: one fills while others move
constexpr uint32_t kAlign = 256;    // each block's place in a slab
constexpr unsigned kThreads = 128;  // copy kernel: threads per block
constexpr uint32_t kPiece = 8192;   // copy kernel: bytes per thread block (4 x 16 B per thread)

void check(cudaError_t e, const char *what)
{
    if (e != cudaSuccess) throw Error(std::string("GPU mover: ") + what + ": " + cudaGetErrorString(e), EIO);
}

// One block to move: len bytes from staging (as the GPU addresses it) to dst; 32 bytes, so
// that one thread loads it with two 16-byte loads.
struct alignas(32) Copy {
    uint64_t src, dst;
    uint32_t len, pad;
    uint64_t pad2;
};

// blockIdx.x: the copy, blockIdx.y: its piece of kPiece bytes. The staging (mapped host
// memory, rewritten between batches) is loaded uncached; all of a thread's loads are issued
// before its stores so that each thread has four PCIe reads in flight.
__global__ void __launch_bounds__(kThreads) move_blocks(const Copy *copies)
{
    if (!copies) return;  // the launch that loads the kernel (GpuMover's constructor)
    __shared__ Copy c;
    if (threadIdx.x == 0) {
        const volatile Copy *from = &copies[blockIdx.x];
        c.src = from->src, c.dst = from->dst, c.len = from->len;
    }
    __syncthreads();
    const uint32_t begin = blockIdx.y * kPiece;
    if (begin >= c.len) return;
    const uint32_t end = min(begin + kPiece, c.len);
    const uint8_t *src = reinterpret_cast<const uint8_t *>(c.src);
    uint8_t *dst = reinterpret_cast<uint8_t *>(c.dst);
    if (((c.dst | c.src | begin | end) & 15) == 0) {
        const uint4 *s = reinterpret_cast<const uint4 *>(src + begin);
        uint4 *d = reinterpret_cast<uint4 *>(dst + begin);
        const uint32_t n = (end - begin) / 16;
        uint4 v[kPiece / 16 / kThreads];
#pragma unroll
        for (uint32_t k = 0; k < kPiece / 16 / kThreads; k++) {
            const uint32_t i = threadIdx.x + k * kThreads;
            if (i < n) v[k] = __ldcv(&s[i]);
        }
#pragma unroll
        for (uint32_t k = 0; k < kPiece / 16 / kThreads; k++) {
            const uint32_t i = threadIdx.x + k * kThreads;
            if (i < n) d[i] = v[k];
        }
    } else {
        for (uint32_t i = begin + threadIdx.x; i < end; i += kThreads) dst[i] = __ldcv(&src[i]);
    }
}

// Control words of a resident mover, in mapped host memory, each on a line of its own.
struct Ctl {
    alignas(64) unsigned long long head;  // copies published by the lane (the host writes)
    alignas(64) uint32_t stop;            // the host asks the kernel to return once idle
};

constexpr uint64_t kRotate = 512 << 10;  // resident: bytes a slab takes before the next one stages
constexpr uint64_t kRing = 8192;     // resident: ring slots at most (copies in flight per lane)
constexpr unsigned kMaxWarps = 16;  // resident: most warps per lane (GpuWindow::warps)
constexpr uint32_t kUnroll = 8;     // resident: 16-byte loads in flight per thread

using BlockU64 = cuda::atomic_ref<unsigned long long, cuda::thread_scope_block>;
using SysU64 = cuda::atomic_ref<unsigned long long, cuda::thread_scope_system>;
using SysU32 = cuda::atomic_ref<uint32_t, cuda::thread_scope_system>;

// One warp copies c (16 bytes a lane, eight loads in flight per lane; bytes when unaligned).
__device__ inline void warp_copy(const Copy &c)
{
    const unsigned lane = threadIdx.x & 31;
    const uint8_t *src = reinterpret_cast<const uint8_t *>(c.src);
    uint8_t *dst = reinterpret_cast<uint8_t *>(c.dst);
    if (((c.dst | c.src | c.len) & 15) == 0) {
        const uint4 *s = reinterpret_cast<const uint4 *>(src);
        uint4 *d = reinterpret_cast<uint4 *>(dst);
        const uint32_t n = c.len / 16;
        for (uint32_t base = 0; base < n; base += 32 * kUnroll) {
            uint4 v[kUnroll];
#pragma unroll
            for (uint32_t k = 0; k < kUnroll; k++) {
                const uint32_t i = base + k * 32 + lane;
                if (i < n) v[k] = __ldcv(&s[i]);
            }
#pragma unroll
            for (uint32_t k = 0; k < kUnroll; k++) {
                const uint32_t i = base + k * 32 + lane;
                if (i < n) d[i] = v[k];
            }
        }
    } else {
        for (uint32_t i = lane; i < c.len; i += 32) dst[i] = __ldcv(&src[i]);
    }
}

// A lane's resident mover, one or more blocks: block b of B moves copies b, b + B, b + 2B, ...
// Warp 0 of a block (of more than one warp) only reads the host's head over PCIe, again and
// again, into shared memory, so that no claim waits for a read (with 8 warps, 4 KiB Reads:
// 9.7 M/s against 9.0 when an idle warp read it). Each other warp takes the block's next few
// published copies (a share of those waiting, 1 to 32; smaller claims were slower)
// from a block-wide count, its lanes load their descriptors at once (one
// each), the warp moves all their bytes with every lane's loads in flight together, and each
// lane then sets its copy's done flag (done[s % cap] = s + 1, mapped host memory) for the
// poller, which posts that Read's completion at once. In a block of one warp, that warp reads
// the head itself when it finds nothing to take. Returns when asked to stop
// and everything published is taken.
__global__ void __launch_bounds__(kMaxWarps * 32) resident_mover(const Copy *ring, uint64_t cap, Ctl *ctl, unsigned long long *done)
{
    if (!ring) return;  // the launch that loads the kernel (GpuMover's constructor)
    __shared__ unsigned long long next, head;  // the block's copies taken by a warp; published, as last read
    __shared__ int stop, reading;
    __shared__ uint64_t srcs[kMaxWarps][32], dsts[kMaxWarps][32];
    __shared__ uint32_t ends[kMaxWarps][32];  // per warp: its copies' 16-byte units, summed up to each
    const unsigned lane = threadIdx.x & 31, warp = threadIdx.x / 32, warps = blockDim.x / 32;
    const unsigned long long blocks = gridDim.x, block = blockIdx.x;  // copy s is this block's j-th: s = j * blocks + block
    if (threadIdx.x == 0) next = 0, head = 0, stop = 0, reading = 0;
    __syncthreads();
    BlockU64 taken(next), published(head);
    const bool dedicated = warps > 1;  // warp 0 only reads the host's words (a claim then waits for no read)
    const unsigned movers = warps - dedicated;
    if (dedicated && warp == 0) {
        if (lane == 0) {
            for (;;) {
                // stop before head: a stop seen means the head read after it is the last
                const uint32_t st = SysU32(ctl->stop).load(cuda::memory_order_acquire);
                const unsigned long long all = SysU64(ctl->head).load(cuda::memory_order_acquire);
                const unsigned long long hh = (all + blocks - 1 - block) / blocks;  // this block's of them
                if (hh > published.load(cuda::memory_order_relaxed)) {
                    published.store(hh, cuda::memory_order_release);
                } else if (st) {
                    *static_cast<volatile int *>(&stop) = 1;
                    break;
                } else {
                    __nanosleep(100);
                }
            }
        }
        return;
    }
    for (;;) {
        unsigned long long first = 0;
        uint32_t k = 0;
        if (lane == 0) {
            for (unsigned ns = 0;;) {
                unsigned long long n = taken.load(cuda::memory_order_relaxed);
                const unsigned long long h = published.load(cuda::memory_order_acquire);
                if (n < h) {
                    const unsigned long long want = min(32ull, max(1ull, (h - n) / movers));
                    if (taken.compare_exchange_weak(n, n + want, cuda::memory_order_relaxed)) {
                        first = n, k = static_cast<uint32_t>(want);
                        break;
                    }
                    continue;
                }
                if (*static_cast<volatile int *>(&stop)) break;  // k = 0: return
                if (!dedicated && atomicExch(&reading, 1) == 0) {  // this warp reads the host's words
                    // stop before head: a stop seen means the head read after it is the last
                    const uint32_t st = SysU32(ctl->stop).load(cuda::memory_order_acquire);
                    const unsigned long long all = SysU64(ctl->head).load(cuda::memory_order_acquire);
                    const unsigned long long hh = (all + blocks - 1 - block) / blocks;  // this block's of them
                    if (hh > h) published.store(hh, cuda::memory_order_release);
                    else if (st) *static_cast<volatile int *>(&stop) = 1;
                    atomicExch(&reading, 0);
                    if (hh > h) {
                        ns = 0;
                        continue;
                    }
                }
                __nanosleep(ns);
                ns = ns ? min(ns * 2, dedicated ? 256u : 1024u) : 32;
            }
        }
        __syncwarp();  // lane 0's acquire before the other lanes' loads
        first = __shfl_sync(0xFFFFFFFFu, first, 0);
        k = __shfl_sync(0xFFFFFFFFu, k, 0);
        if (k == 0) return;
        const unsigned long long seq = (first + lane) * blocks + block;  // this lane's copy, when lane < k
        Copy c{};
        if (lane < k) {  // one descriptor a lane: two 16-byte loads, together
            const uint4 *e = reinterpret_cast<const uint4 *>(&ring[seq % cap]);
            const uint4 a = __ldcv(e), b = __ldcv(e + 1);
            c.src = uint64_t(a.y) << 32 | a.x, c.dst = uint64_t(a.w) << 32 | a.z, c.len = b.x;
            srcs[warp][lane] = c.src, dsts[warp][lane] = c.dst;
        }
        if (__any_sync(0xFFFFFFFFu, lane < k && ((c.src | c.dst | c.len) & 15))) {
            for (uint32_t j = 0; j < k; j++) {  // one copy at a time (rare: unaligned SLM Reads)
                Copy cj;
                cj.src = __shfl_sync(0xFFFFFFFFu, c.src, j), cj.dst = __shfl_sync(0xFFFFFFFFu, c.dst, j);
                cj.len = __shfl_sync(0xFFFFFFFFu, c.len, j);
                warp_copy(cj);
            }
        } else {
            // every copy's 16-byte units numbered one after another; lane l moves units l, l + 32, ...
            uint32_t sum = lane < k ? c.len / 16 : 0;
            for (unsigned d = 1; d < 32; d <<= 1) {
                const uint32_t v = __shfl_up_sync(0xFFFFFFFFu, sum, d);
                if (lane >= d) sum += v;
            }
            ends[warp][lane] = sum;
            const uint32_t total = __shfl_sync(0xFFFFFFFFu, sum, 31);
            __syncwarp();
            uint32_t e = 0;  // the copy of this lane's unit (units only grow)
            for (uint32_t base = 0; base < total; base += 32 * kUnroll) {
                uint4 v[kUnroll];
                uint4 *to[kUnroll];
#pragma unroll
                for (uint32_t u = 0; u < kUnroll; u++) {
                    const uint32_t i = base + u * 32 + lane;
                    if (i < total) {
                        while (i >= ends[warp][e]) e++;
                        const uint32_t at = i - (e ? ends[warp][e - 1] : 0);
                        v[u] = __ldcv(reinterpret_cast<const uint4 *>(srcs[warp][e]) + at);
                        to[u] = reinterpret_cast<uint4 *>(dsts[warp][e]) + at;
                    }
                }
#pragma unroll
                for (uint32_t u = 0; u < kUnroll; u++) {
                    if (base + u * 32 + lane < total) *to[u] = v[u];
                }
            }
        }
        __threadfence_system();  // this lane's bytes before any lane's done flag
        __syncwarp();
        if (lane < k) SysU64(done[seq % cap]).store(seq + 1, cuda::memory_order_relaxed);
        __syncwarp();  // srcs, dsts, ends read by every lane before the next copies overwrite them
    }
}

class Lane : public MoverLane {
public:
    Lane(int device, uint64_t slab_bytes, MoveBy by, unsigned warps, unsigned blocks, const uint8_t *ns, uint64_t ns_gpu)
        : device_(device), by_(by), slab_bytes_(slab_bytes), ns_(ns), ns_gpu_(ns_gpu), warps_(warps), blocks_(blocks)
    {
        cap_ = static_cast<uint32_t>(slab_bytes / kAlign);
        ring_ = std::min<uint64_t>(uint64_t(kSlabs) * cap_, kRing);
        try {
            check(cudaSetDevice(device_), "cudaSetDevice");
            const unsigned flags = cudaHostAllocMapped | cudaHostAllocPortable;
            check(cudaHostAlloc(reinterpret_cast<void **>(&staging_), kSlabs * slab_bytes_, flags), "cudaHostAlloc (staging)");
            check(cudaHostAlloc(reinterpret_cast<void **>(&copies_), kSlabs * size_t(cap_) * sizeof(Copy), flags),
                  "cudaHostAlloc (copies)");
            check(cudaHostGetDevicePointer(reinterpret_cast<void **>(&staging_gpu_), staging_, 0), "cudaHostGetDevicePointer");
            check(cudaHostGetDevicePointer(reinterpret_cast<void **>(&copies_gpu_), copies_, 0), "cudaHostGetDevicePointer");
            check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
            for (int i = 0; i < kSlabs; i++) {
                Slab &s = slabs_[i];
                s.mem = staging_ + i * slab_bytes_;
                s.copies = copies_ + size_t(i) * cap_;
                check(cudaEventCreateWithFlags(&s.done, cudaEventDisableTiming), "cudaEventCreate");
            }
            if (by_ == MoveBy::resident) {
                check(cudaHostAlloc(reinterpret_cast<void **>(&ctl_), sizeof(Ctl), flags), "cudaHostAlloc (control)");
                ctl_->head = 0, ctl_->stop = 0;
                check(cudaHostGetDevicePointer(reinterpret_cast<void **>(&ctl_gpu_), ctl_, 0), "cudaHostGetDevicePointer");
                check(cudaHostAlloc(reinterpret_cast<void **>(&done_), ring() * sizeof *done_, flags), "cudaHostAlloc (done flags)");
                std::memset(done_, 0, ring() * sizeof *done_);
                check(cudaHostGetDevicePointer(reinterpret_cast<void **>(&done_gpu_), done_, 0), "cudaHostGetDevicePointer");
            }
        } catch (...) {
            release();
            throw;
        }
    }
    ~Lane() override { release(); }

    uint8_t *stage(uint32_t len) override
    {
        Slab &s = slabs_[cur_];
        if (!free(s)) return nullptr;
        // resident: the next copy's ring slot must be free (its copy ring() before, done)
        if (by_ == MoveBy::resident && seq_ - low_ >= ring_ && seq_ - moved() >= ring_ && !failed_) return nullptr;
        const uint64_t need = (uint64_t(len) + kAlign - 1) / kAlign * kAlign;
        if (len == 0) return nullptr;
        if (s.used + need > slab_bytes_) {
            if (by_ != MoveBy::resident) return nullptr;  // the poller flushes and asks again
            rotate();  // resident: this slab is full, the next one stages
            return slabs_[cur_].used == 0 && free(slabs_[cur_]) ? stage(len) : nullptr;
        }
        uint8_t *p = s.mem + s.used;
        s.used += need;
        return p;
    }

    uint64_t copy_from(uint64_t dst, const uint8_t *src, uint32_t len) override
    {
        // resident only (GpuMover::reaches); the next copy's ring slot must be free
        if (by_ != MoveBy::resident || !ns_ || len == 0) return 0;
        if (seq_ - low_ >= ring_ && seq_ - moved() >= ring_ && !failed_) return 0;
        copies_[seq_ % ring()] = Copy{ns_gpu_ + uint64_t(src - ns_), dst, len, 0, 0};
        return ++seq_;  // published with the visit's others (publish())
    }

    uint64_t copy(uint64_t dst, const uint8_t *staged, uint32_t len) override
    {
        Slab &s = slabs_[cur_];
        const uint64_t src = staging_gpu_ + uint64_t(staged - staging_);
        if (by_ == MoveBy::resident) {  // the ring, in order; the kernel takes them once published (publish())
            copies_[seq_ % ring()] = Copy{src, dst, len, 0, 0};
            s.end = ++seq_;
            s.n++;
            return seq_;  // copy by copy: its own number
        } else if (by_ == MoveBy::kernel) {
            s.copies[s.n] = Copy{src, dst, len, 0};
        } else {
            s.dsts.push_back(reinterpret_cast<void *>(dst));
            s.srcs.push_back(staged);
            s.sizes.push_back(len);
        }
        s.n++;
        s.max_len = std::max(s.max_len, len);
        return next_batch_;
    }

    void flush() override
    {
        Slab &s = slabs_[cur_];
        if (s.n == 0) {
            s.used = 0;  // staged for commands that failed: nothing to move
            return;
        }
        if (by_ == MoveBy::resident) {  // published; the next slab stages once this one holds kRotate bytes
            publish();
            if (s.used >= kRotate) rotate();
            return;
        }
        bind();
        cudaError_t e = cudaSuccess;
        if (by_ == MoveBy::kernel) {
            const dim3 grid(s.n, (s.max_len + kPiece - 1) / kPiece);
            move_blocks<<<grid, kThreads, 0, stream_>>>(reinterpret_cast<const Copy *>(copies_gpu_ + (s.copies - copies_)));
            e = cudaGetLastError();
        } else if (by_ == MoveBy::batch) {
            cudaMemcpyAttributes attr{};
            attr.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
            attr.srcLocHint.type = cudaMemLocationTypeHost;
            attr.dstLocHint.type = cudaMemLocationTypeDevice, attr.dstLocHint.id = device_;
            size_t idx = 0;
            e = cudaMemcpyBatchAsync(s.dsts.data(), s.srcs.data(), s.sizes.data(), s.n, &attr, &idx, 1, stream_);
        } else {
            for (uint32_t i = 0; i < s.n && e == cudaSuccess; i++) {
                e = cudaMemcpyAsync(s.dsts[i], s.srcs[i], s.sizes[i], cudaMemcpyHostToDevice, stream_);
            }
        }
        if (e == cudaSuccess) e = cudaEventRecord(s.done, stream_);
        if (e != cudaSuccess) failed_ = true;  // every command of this batch and after completes with an error
        s.batch = next_batch_++;
        s.used = 0, s.n = 0, s.max_len = 0;
        s.dsts.clear(), s.srcs.clear(), s.sizes.clear();
        cur_ = (cur_ + 1) % kSlabs;
    }

    State state(uint64_t b) override
    {
        if (failed_) return State::failed;
        if (by_ == MoveBy::resident) {  // b: a copy's number (copy())
            if (b <= moved() || __atomic_load_n(&done_[(b - 1) % ring()], __ATOMIC_ACQUIRE) == b) return State::done;
            // now and then: whether the kernel still runs (an error ends it)
            if (gone()) {
                failed_ = true;
                return State::failed;
            }
            return State::running;
        }
        if (b <= finished_) return State::done;
        Slab &s = slabs_[(b - 1) % kSlabs];
        if (s.batch != b) return State::running;  // not yet flushed
        const cudaError_t e = cudaEventQuery(s.done);
        if (e == cudaErrorNotReady) return State::running;
        if (e != cudaSuccess) {
            failed_ = true;
            return State::failed;
        }
        finished_ = b;  // batches finish in stream order
        s.batch = 0;
        return State::done;
    }

private:
    struct Slab {
        uint8_t *mem = nullptr;
        Copy *copies = nullptr;  // kernel: the batch's copies, read by the kernel
        std::vector<void *> dsts;  // copy engines: the batch's copies
        std::vector<const void *> srcs;
        std::vector<size_t> sizes;
        cudaEvent_t done = nullptr;
        uint64_t used = 0, batch = 0;  // batch: in flight (0: free)
        uint64_t end = 0;              // resident: the copies published up to and with this slab's last
        uint32_t n = 0, max_len = 0;
    };
    // Whether a slab's previous batch is done, so that its staging may be written (resident:
    // every copy up to its last, as the ring's slots are taken in order).
    bool free(Slab &s)
    {
        if (by_ == MoveBy::resident) {  // the flags read only while the slab's last copy is not known done
            if (s.batch && !failed_ && s.batch > low_ && s.batch > moved()) {
                if (gone()) failed_ = true;
                return failed_;
            }
            s.batch = 0;
            return true;
        }
        return s.batch == 0 || failed_ || state(s.batch) != State::running;
    }
    bool moves_at_once() const override { return by_ == MoveBy::resident; }
    // Resident: the current slab's copies published, the next slab stages. A slab takes
    // kRotate bytes (many polling rounds), so that its copies are long done when it comes round
    // again (a slab per round made the poller wait for the copies of the last rounds), and only
    // its first kRotate bytes are written (the staging stays in the CPU's caches: filled to
    // half, the drive's copies into it took 2.5 times as long).
    void rotate()
    {
        Slab &s = slabs_[cur_];
        publish();
        s.batch = s.n ? s.end : 0;
        s.used = 0, s.n = 0;
        cur_ = (cur_ + 1) % kSlabs;
    }
    void publish() override
    {
        if (by_ == MoveBy::resident && seq_ != published_) __atomic_store_n(&ctl_->head, published_ = seq_, __ATOMIC_RELEASE);
    }
    // Resident, asked now and then: whether its kernel could not start or has ended (an error ends it).
    bool gone()
    {
        if (++polls_ % 4096) return false;
        const int l = launched_.load();
        return l < 0 || (l > 0 && cudaStreamQuery(stream_) != cudaErrorNotReady);
    }
    // Resident: the ring's slots.
    uint64_t ring() const { return ring_; }
    // Resident: the copies done, all of them up to this number (their flags read in order).
    uint64_t moved()
    {
        while (low_ < seq_ && __atomic_load_n(&done_[low_ % ring()], __ATOMIC_ACQUIRE) == low_ + 1) low_++;
        return low_;
    }
    // The lane's device, current on the poller's thread.
    void bind()
    {
        if (!bound_) cudaSetDevice(device_), bound_ = true;
    }
    // The resident mover's kernel, from now until the lane stops (a failed launch fails every batch).
    void start() override
    {
        if (by_ != MoveBy::resident) return;
        // launched from a thread of its own: under compute-sanitizer a launch can return only
        // once the kernel has ended, which this one does only when the lane stops
        resident_ = std::make_unique<ResidentKernel>();  // counted before the launch: frees wait till it ends
        launcher_ = std::thread([this] {
            cudaSetDevice(device_);
            resident_mover<<<blocks_, warps_ * 32, 0, stream_>>>(copies_gpu_, ring(), ctl_gpu_, done_gpu_);
            launched_ = cudaGetLastError() == cudaSuccess ? 1 : -1;
        });
        // normally launched within microseconds: wait for it (a moment at most), so that the
        // mover's blocks take their SMs before the caller's kernels do
        for (int i = 0; i < 10000 && launched_ == 0; i++) std::this_thread::sleep_for(std::chrono::microseconds(10));
    }
    void stop() override
    {
        if (ctl_) __atomic_store_n(&ctl_->stop, 1u, __ATOMIC_RELEASE);  // the resident mover returns once idle
    }
    void release()
    {
        stop();
        if (launcher_.joinable()) launcher_.join();
        if (stream_) cudaStreamSynchronize(stream_);
        resident_.reset();  // the kernel returned: what was put off meanwhile is released
        for (Slab &s : slabs_) {
            if (s.done) cudaEventDestroy(s.done);
            s.done = nullptr;
        }
        if (stream_) cudaStreamDestroy(stream_);
        // another lane's resident kernel may still run: freeing pinned memory would wait for it
        after_resident_kernels([copies = copies_, ctl = ctl_, done = done_, staging = staging_] {
            if (copies) cudaFreeHost(copies);
            if (ctl) cudaFreeHost(ctl);
            if (done) cudaFreeHost(done);
            if (staging) cudaFreeHost(staging);
        });
        ctl_ = nullptr, done_ = nullptr;
        stream_ = nullptr, copies_ = nullptr, staging_ = nullptr;
    }

    int device_;
    MoveBy by_;
    uint64_t slab_bytes_;
    const uint8_t *ns_;  // host memory copied from directly (copy_from), or nullptr
    uint64_t ns_gpu_;    // its address as the GPU sees it
    uint32_t cap_ = 0;
    uint64_t ring_ = 0;  // resident: the ring's slots (a small ring stays in the CPU's caches)
    uint8_t *staging_ = nullptr;
    Copy *copies_ = nullptr;
    uint64_t staging_gpu_ = 0;
    Copy *copies_gpu_ = nullptr;
    cudaStream_t stream_ = nullptr;
    Slab slabs_[kSlabs];
    int cur_ = 0;
    uint64_t next_batch_ = 1, finished_ = 0;
    Ctl *ctl_ = nullptr, *ctl_gpu_ = nullptr;  // resident: its control words (as host and GPU address them)
    unsigned long long *done_ = nullptr, *done_gpu_ = nullptr;  // resident: a flag per ring slot (copy s: s + 1)
    uint64_t seq_ = 0, low_ = 0, polls_ = 0;  // resident: copies recorded; all done up to low_
    uint64_t published_ = 0;                  // resident: copies handed to the kernel (its head)
    unsigned warps_, blocks_;
    std::thread launcher_;           // resident: launches the kernel (start())
    std::unique_ptr<ResidentKernel> resident_;  // resident: counts the kernel while it may run
    std::atomic<int> launched_{0};   // resident: 1 once launched, -1 if the launch failed
    bool failed_ = false, bound_ = false;
};

}  // namespace

const char *move_by_name(MoveBy by)
{
    switch (by) {
    case MoveBy::resident: return "resident copy kernel";
    case MoveBy::kernel: return "copy kernel";
    case MoveBy::batch: return "cudaMemcpyBatchAsync";
    case MoveBy::memcpy: return "cudaMemcpyAsync";
    }
    return "?";
}

GpuMover::GpuMover(const GpuWindow &window, uint32_t max_transfer, const uint8_t *ns, uint64_t ns_bytes) : w_(window)
{
    if (!w_.base || w_.bytes == 0) throw Error("GPU mover: a window of GPU memory is needed", EINVAL);
    for (const uint8_t *p : {static_cast<const uint8_t *>(w_.base), static_cast<const uint8_t *>(w_.base) + w_.bytes - 1}) {
        cudaPointerAttributes a{};
        if (cudaPointerGetAttributes(&a, p) != cudaSuccess || a.type != cudaMemoryTypeDevice) {
            cudaGetLastError();
            throw Error("GPU mover: the window must be device memory (cudaMalloc), all of it", EINVAL);
        }
        device_ = a.device;
    }
    if (w_.staging < kSlabs * uint64_t(kAlign)) throw Error("GPU mover: staging too small", EINVAL);
    if (w_.by == MoveBy::resident && (w_.warps < 1 || w_.warps > kMaxWarps || w_.blocks < 1 || w_.blocks > 8)) {
        throw Error("GPU mover: the resident copy kernel takes 1 to 16 warps a block, 1 to 8 blocks", EINVAL);
    }
    // The copy kernel loaded now, while nothing runs: CUDA loads a kernel's module at its first
    // launch (lazy loading), which can wait for the kernels running; the first batch would then
    // wait for the very kernel that waits for its completions.
    int prev = 0;
    check(cudaGetDevice(&prev), "cudaGetDevice");
    check(cudaSetDevice(device_), "cudaSetDevice");
    cudaFuncAttributes fa{};
    check(cudaFuncGetAttributes(&fa, move_blocks), "loading the copy kernel");
    check(cudaFuncGetAttributes(&fa, resident_mover), "loading the resident copy kernel");
    load_crc32c_kernels();  // a Landing's, made while the resident kernel runs, would load them then
    cudaStream_t s = nullptr;
    check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
    move_blocks<<<1, kThreads, 0, s>>>(nullptr);
    const cudaError_t e = cudaGetLastError(), e2 = cudaStreamSynchronize(s);
    cudaStreamDestroy(s);
    cudaSetDevice(prev);
    check(e, "launching the copy kernel");
    check(e2, "running the copy kernel");
    base_ = reinterpret_cast<uint64_t>(w_.base);
    max_transfer_ = static_cast<uint32_t>(std::min<uint64_t>(max_transfer, w_.bytes));
    slab_ = std::max<uint64_t>(w_.staging / kSlabs, max_transfer_);
    slab_ = (slab_ + kAlign - 1) / kAlign * kAlign;
    if (ns && ns_bytes && w_.direct && w_.by == MoveBy::resident) register_namespace(ns, ns_bytes);
}

void GpuMover::register_namespace(const uint8_t *ns, uint64_t bytes)
{
    int prev = 0;
    if (cudaGetDevice(&prev) != cudaSuccess || cudaSetDevice(device_) != cudaSuccess) {
        cudaGetLastError();
        return;
    }
    try {  // shared with a Landing of the same device, if it holds it already
        ns_reg_ = std::make_unique<HostRegistration>(ns, bytes);
        ns_ = ns, ns_bytes_ = bytes, ns_gpu_ = ns_reg_->gpu();
    } catch (const Error &) {  // the staging still works
    }
    cudaSetDevice(prev);
}

GpuMover::~GpuMover() = default;  // its lanes are gone (QueueProcessor): ns_reg_ lets go

bool GpuMover::reaches(const uint8_t *src, uint64_t len) const
{
    return ns_ && src >= ns_ && uint64_t(src - ns_) <= ns_bytes_ && len <= ns_bytes_ - uint64_t(src - ns_);
}

bool GpuMover::covers(uint64_t addr, uint64_t len) const
{
    return addr >= base_ && addr - base_ <= w_.bytes && len <= w_.bytes - (addr - base_);
}

std::unique_ptr<MoverLane> GpuMover::lane()
{
    return std::make_unique<Lane>(device_, slab_, w_.by, w_.warps, w_.blocks, ns_, ns_gpu_);
}

}  // namespace csd::gpu
