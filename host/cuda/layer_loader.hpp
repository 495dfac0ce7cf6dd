// SPDX-License-Identifier: MIT
// layer_loader.hpp - streams a model's layers from the object store into GPU memory ahead of
// the layer that computes: some layers resident (landed once), the others through a ring of
// GPU buffers, each layer's tensors landed by Landing::object_to_gpu (CRC-32C checked on the
// GPU over the landed bytes) on a thread of the loader's own, while the consumer computes on
// the layers already there. Built only where CUDA is found (docs/gpu.md).
#pragma once

#include <cuda_runtime_api.h>

#include <condition_variable>
#include <chrono>
#include <cstdint>
#include <deque>
#include <exception>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "gpu.hpp"

namespace csd::gpu {

// One stored tensor of a layer and where it lands in the layer's buffer.
struct LayerTensor {
    std::string name;     // the object's name in the store
    uint64_t offset = 0;  // from the start of the layer's buffer
    uint64_t bytes = 0;   // the object's size when planned (a landing of another size fails)
};

// A layer: its tensors laid out one after another in a buffer of `bytes`.
struct LayerPlan {
    std::vector<LayerTensor> tensors;
    uint64_t bytes = 0;
};

// Lays out the named objects as they are now in the store, each at a multiple of align
// (ENOENT for a name the store does not hold, EINVAL for no names or an align that is not a
// power of two).
LayerPlan plan_layer(const ObjectStore &store, const std::vector<std::string> &names, uint64_t align = 256);

// What one landing of a layer did.
struct LayerTiming {
    int layer = 0;
    uint64_t pass = 0;      // how many times every streamed layer had landed before (resident: 0)
    int buffer = 0;         // the buffer it landed in (resident layers first, then the ring)
    bool resident = false;  // landed once, to stay
    uint64_t bytes = 0;
    double start = 0;   // seconds from the loader's start to the start of this landing
    double wait = 0;    // seconds the loader waited for the GPU to be done with the buffer's last layer
    double land = 0;    // seconds the landing took, CRC-32C check included
    double stall = -1;  // seconds the consumer's acquire() waited for it; -1 while not acquired
    std::string path;   // the landing's path (CopyReport::path)
};

// Streams layers into GPU buffers that the caller owns. buffers[0, resident.size()) hold the
// resident layers, in the order given, each landed once; the rest form the ring through which
// the other layers stream, in ascending order and again from the first when a pass ends (the
// order a forward pass visits them). The consumer takes each layer with acquire() and gives
// it back with release(), on the stream that computes with it: the ring buffer is landed again
// only after that stream's work up to the release is done. A loader thread lands up to
// ring-size layers ahead of the consumer. An acquire() out of that order (a pass that stopped
// half way, say) starts the stream again at the layer asked for.
class LayerLoader {
public:
    // layers: every layer's plan (plan_layer); resident: indexes of the layers that stay;
    // buffers / buffer_bytes: GPU memory, resident layers' buffers first, then the ring
    // (buffers.size() - resident.size() of them, each at least the largest streamed layer);
    // direct: as object_to_gpu's (the simulated peer-to-peer path where there is one).
    LayerLoader(Landing &landing, ObjectStore &store, std::vector<LayerPlan> layers, std::vector<int> resident,
                std::vector<void *> buffers, std::vector<uint64_t> buffer_bytes, bool direct = true);
    // The same with several landings working side by side on each layer (its tensors spread over
    // them by size): one lane's per-tensor work (the catalog, the pipeline's first fill and last
    // copy) overlaps another's copies. direct applies to the first; the others take the pinned
    // pipeline (the namespace is registered with CUDA once, by the first).
    LayerLoader(std::vector<Landing *> lanes, ObjectStore &store, std::vector<LayerPlan> layers,
                std::vector<int> resident, std::vector<void *> buffers, std::vector<uint64_t> buffer_bytes,
                bool direct = true);
    // Stops the loader thread (after the landing under way) and waits for its GPU work.
    ~LayerLoader();
    LayerLoader(const LayerLoader &) = delete;
    LayerLoader &operator=(const LayerLoader &) = delete;

    // The buffer holding layer i once it has landed, its bytes checked; work queued on stream
    // afterwards sees them. Rethrows the landing's error (EIO for a damaged tensor); an
    // acquire() of it again with no streamed layer held lands it again. At most ring-size
    // streamed layers may be held at once (EBUSY). The landing is complete when it returns,
    // so stream is only named for symmetry with release().
    void *acquire(int layer, cudaStream_t stream);
    // Gives layer i back (streamed layers: the oldest held first, EINVAL otherwise); its ring
    // buffer is reused once the work queued on stream so far is done.
    void release(int layer, cudaStream_t stream);
    // The landings so far (the latest kMaxTimings), in the order they began.
    std::vector<LayerTiming> timings() const;
    // Forgets the timings recorded so far (a benchmark's warm-up).
    void clear_timings();
    static constexpr size_t kMaxTimings = 1 << 16;  // timings kept (the oldest dropped first)
    int layers() const { return static_cast<int>(layers_.size()); }  // how many layers
    int ring() const { return ring_; }                                // buffers the streamed layers share
    int lanes() const { return static_cast<int>(lanes_.size()); }     // landings working side by side
    const std::vector<int> &streamed() const { return streamed_; }    // the streamed layers, in order
    bool is_resident(int layer) const;                                // whether layer stays landed
    // How many times the stream started again (an acquire() out of order, a failed landing tried again).
    uint64_t restarts() const;

private:
    struct Slot {
        int64_t k = -1;           // the stream position it holds (-1: none, or being landed)
        std::exception_ptr error;  // its landing failed
        cudaEvent_t released = nullptr;
        bool recorded = false;  // released was recorded at least once
        uint64_t timing = 0;    // its entry's number (timings_first_ numbers timings_.front())
    };
    void run();
    // Lands layer's tensors into dst; the path that ran.
    std::string land_layer(int layer, uint8_t *dst);
    // Restarts the stream at position pos of streamed_ (call with mu_ held).
    void restart_at(size_t pos);
    double now() const;

    std::vector<Landing *> lanes_;
    ObjectStore &store_;
    std::vector<LayerPlan> layers_;
    std::vector<int> resident_;        // layer indexes, buffer i holds resident_[i]
    std::vector<int> streamed_;        // the others, ascending
    std::vector<int> resident_buf_;    // per layer: its buffer, or -1
    std::vector<int64_t> stream_pos_;  // per layer: its position in streamed_, or -1
    std::vector<uint8_t *> buffers_;
    int ring_ = 0;
    bool direct_;
    int device_ = 0;
    std::vector<cudaStream_t> streams_;  // one per lane
    std::chrono::steady_clock::time_point t0_;

    mutable std::mutex mu_;
    std::condition_variable cv_;
    bool stop_ = false;
    bool halted_ = false;  // a streamed landing failed: nothing more until a restart
    uint64_t epoch_ = 0;   // bumped by each restart; a landing of an older epoch is discarded
    int64_t load_k_ = 0, use_k_ = 0, released_k_ = 0;  // stream positions: next landed, acquired, released
    std::vector<Slot> slots_;
    std::vector<char> resident_done_;
    std::vector<std::exception_ptr> resident_error_;
    std::vector<uint64_t> resident_timing_;
    std::deque<LayerTiming> timings_;
    uint64_t timings_first_ = 0;  // the number of timings_.front(): entries are numbered from the first landing
    // Appends a timing (call with mu_ held); its number.
    uint64_t add_timing(const LayerTiming &t);
    // The timing numbered n, or nullptr if it was dropped or cleared (call with mu_ held).
    LayerTiming *timing(uint64_t n);
    uint64_t restarts_ = 0;
    std::thread thread_;
};

}  // namespace csd::gpu
