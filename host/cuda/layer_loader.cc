// SPDX-License-Identifier: MIT
// layer_loader.cc - a model's layers streamed from the object store into a ring of GPU
// buffers ahead of the consumer (layer_loader.hpp).
#include "layer_loader.hpp"

#include <algorithm>
#include <cerrno>
#include <future>

namespace csd::gpu {

namespace {

void check(cudaError_t e, const char *what)
{
    if (e != cudaSuccess) throw Error(std::string("layer loader: ") + what + ": " + cudaGetErrorString(e), EIO);
}

}  // namespace

LayerPlan plan_layer(const ObjectStore &store, const std::vector<std::string> &names, uint64_t align)
{
    if (names.empty()) throw Error("plan_layer: a layer needs at least one tensor", EINVAL);
    if (align == 0 || (align & (align - 1)) != 0) {
        throw Error("plan_layer: align " + std::to_string(align) + " is not a power of two", EINVAL);
    }
    LayerPlan p;
    for (const std::string &name : names) {
        const ObjectInfo o = store.stat(name);  // ENOENT when there is none
        p.bytes = (p.bytes + align - 1) & ~(align - 1);
        p.tensors.push_back({name, p.bytes, o.bytes});
        p.bytes += o.bytes;
    }
    return p;
}

LayerLoader::LayerLoader(Landing &landing, ObjectStore &store, std::vector<LayerPlan> layers, std::vector<int> resident,
                         std::vector<void *> buffers, std::vector<uint64_t> buffer_bytes, bool direct)
    : LayerLoader(std::vector<Landing *>{&landing}, store, std::move(layers), std::move(resident), std::move(buffers),
                  std::move(buffer_bytes), direct)
{
}

LayerLoader::LayerLoader(std::vector<Landing *> lanes, ObjectStore &store, std::vector<LayerPlan> layers,
                         std::vector<int> resident, std::vector<void *> buffers, std::vector<uint64_t> buffer_bytes,
                         bool direct)
    : lanes_(std::move(lanes)), store_(store), layers_(std::move(layers)), resident_(std::move(resident)),
      direct_(direct)
{
    if (lanes_.empty() || std::find(lanes_.begin(), lanes_.end(), nullptr) != lanes_.end()) {
        throw Error("layer loader: no landing, or a null one", EINVAL);
    }
    const int n = static_cast<int>(layers_.size());
    if (n == 0) throw Error("layer loader: no layers", EINVAL);
    if (buffers.size() != buffer_bytes.size()) {
        throw Error("layer loader: " + std::to_string(buffers.size()) + " buffers but " +
                        std::to_string(buffer_bytes.size()) + " sizes",
                    EINVAL);
    }
    for (int i = 0; i < n; i++) {
        const LayerPlan &p = layers_[i];
        if (p.tensors.empty()) throw Error("layer loader: layer " + std::to_string(i) + " has no tensors", EINVAL);
        for (const LayerTensor &t : p.tensors) {
            if (t.offset > p.bytes || t.bytes > p.bytes - t.offset) {
                throw Error("layer loader: tensor '" + t.name + "' of layer " + std::to_string(i) +
                                " lies outside the layer's " + std::to_string(p.bytes) + " bytes",
                            EINVAL);
            }
        }
    }
    resident_buf_.assign(n, -1);
    for (size_t b = 0; b < resident_.size(); b++) {
        const int l = resident_[b];
        if (l < 0 || l >= n) throw Error("layer loader: resident layer " + std::to_string(l) + " out of range", EINVAL);
        if (resident_buf_[l] >= 0) {
            throw Error("layer loader: layer " + std::to_string(l) + " named resident twice", EINVAL);
        }
        resident_buf_[l] = static_cast<int>(b);
    }
    stream_pos_.assign(n, -1);
    for (int l = 0; l < n; l++) {
        if (resident_buf_[l] < 0) {
            stream_pos_[l] = static_cast<int64_t>(streamed_.size());
            streamed_.push_back(l);
        }
    }
    if (buffers.size() < resident_.size()) {
        throw Error("layer loader: " + std::to_string(resident_.size()) + " resident layers need as many buffers, " +
                        std::to_string(buffers.size()) + " given",
                    EINVAL);
    }
    ring_ = static_cast<int>(buffers.size() - resident_.size());
    if (!streamed_.empty() && ring_ == 0) {
        throw Error("layer loader: " + std::to_string(streamed_.size()) +
                        " layers stream but no buffer is left for the ring",
                    EINVAL);
    }
    for (size_t b = 0; b < buffers.size(); b++) {
        if (!buffers[b]) throw Error("layer loader: buffer " + std::to_string(b) + " is null", EINVAL);
        uint64_t need = 0;
        if (b < resident_.size()) {
            need = layers_[resident_[b]].bytes;
        } else {
            for (int l : streamed_) need = std::max(need, layers_[l].bytes);
        }
        if (buffer_bytes[b] < need) {
            throw Error("layer loader: buffer " + std::to_string(b) + " holds " + std::to_string(buffer_bytes[b]) +
                            " bytes, its layers need " + std::to_string(need),
                        EINVAL);
        }
        buffers_.push_back(static_cast<uint8_t *>(buffers[b]));
    }
    check(cudaGetDevice(&device_), "cudaGetDevice");
    auto undo = [this] {
        for (Slot &o : slots_) {
            if (o.released) cudaEventDestroy(o.released);
        }
        for (cudaStream_t st : streams_) cudaStreamDestroy(st);
    };
    slots_.resize(static_cast<size_t>(ring_));
    for (size_t i = 0; i < lanes_.size(); i++) {
        cudaStream_t st = nullptr;
        if (cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking) != cudaSuccess) {
            undo();
            throw Error("layer loader: cudaStreamCreate failed", EIO);
        }
        streams_.push_back(st);
    }
    for (Slot &s : slots_) {
        if (cudaEventCreateWithFlags(&s.released, cudaEventDisableTiming) != cudaSuccess) {
            undo();
            throw Error("layer loader: cudaEventCreate failed", EIO);
        }
    }
    resident_done_.assign(resident_.size(), 0);
    resident_error_.resize(resident_.size());
    resident_timing_.assign(resident_.size(), 0);
    t0_ = std::chrono::steady_clock::now();
    thread_ = std::thread([this] { run(); });
}

LayerLoader::~LayerLoader()
{
    {
        std::lock_guard<std::mutex> g(mu_);
        stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
    for (cudaStream_t st : streams_) cudaStreamSynchronize(st);
    for (Slot &s : slots_) {
        cudaEventSynchronize(s.released);
        cudaEventDestroy(s.released);
    }
    for (cudaStream_t st : streams_) cudaStreamDestroy(st);
}

double LayerLoader::now() const
{
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
}

uint64_t LayerLoader::add_timing(const LayerTiming &t)
{
    timings_.push_back(t);
    while (timings_.size() > kMaxTimings) {
        timings_.pop_front();
        timings_first_++;
    }
    return timings_first_ + timings_.size() - 1;
}

LayerTiming *LayerLoader::timing(uint64_t n)
{
    if (n < timings_first_ || n - timings_first_ >= timings_.size()) return nullptr;
    return &timings_[n - timings_first_];
}

std::string LayerLoader::land_layer(int layer, uint8_t *dst)
{
    const std::vector<LayerTensor> &tensors = layers_[static_cast<size_t>(layer)].tensors;
    std::vector<CopyReport> reports(tensors.size());
    if (lanes_.size() == 1) {
        // One lane: every tensor in one call, so that on the pinned pipeline the layer is one
        // stream of chunks (no pause between tensors).
        std::vector<Landing::ObjectTarget> targets;
        for (const LayerTensor &t : tensors) targets.push_back({t.name, dst + t.offset, t.bytes});
        reports = lanes_[0]->objects_to_gpu(store_, std::move(targets), streams_[0], direct_).get();
    } else {
        // Several lanes: the largest tensors first, each to the lane with the fewest bytes so
        // far; each lane on a stream of its own (the landing waits for its copies on it). Every
        // tensor posted at once; all are waited for before an error is reported (each writes
        // into the buffer).
        std::vector<size_t> order(tensors.size());
        for (size_t i = 0; i < order.size(); i++) order[i] = i;
        std::stable_sort(order.begin(), order.end(),
                         [&](size_t x, size_t y) { return tensors[x].bytes > tensors[y].bytes; });
        std::vector<uint64_t> load(lanes_.size(), 0);
        std::vector<std::pair<size_t, std::future<CopyReport>>> landed;
        std::exception_ptr err;
        for (size_t i : order) {
            const size_t lane = static_cast<size_t>(std::min_element(load.begin(), load.end()) - load.begin());
            load[lane] += tensors[i].bytes + 1;
            const LayerTensor &t = tensors[i];
            try {
                landed.emplace_back(i, lanes_[lane]->object_to_gpu(store_, t.name, dst + t.offset, t.bytes,
                                                                   streams_[lane], {}, direct_ && lane == 0));
            } catch (...) {
                err = std::current_exception();
                break;
            }
        }
        for (auto &[i, f] : landed) {
            try {
                reports[i] = f.get();
            } catch (...) {
                if (!err) err = std::current_exception();
            }
        }
        if (err) std::rethrow_exception(err);
    }
    std::string path;
    for (size_t i = 0; i < tensors.size(); i++) {
        const CopyReport &r = reports[i];
        if (r.object.bytes != tensors[i].bytes) {
            throw Error("layer loader: tensor '" + tensors[i].name + "' of layer " + std::to_string(layer) + " now has " +
                            std::to_string(r.object.bytes) + " bytes, " + std::to_string(tensors[i].bytes) +
                            " when the loader was made (replaced since)",
                        EAGAIN);
        }
        if (r.bytes && path.find(r.path) == std::string::npos) path += (path.empty() ? "" : " + ") + r.path;
    }
    return path;
}

void LayerLoader::run()
{
    cudaSetDevice(device_);
    // The resident layers first, once each.
    for (size_t b = 0; b < resident_.size(); b++) {
        const int l = resident_[b];
        LayerTiming t;
        t.layer = l;
        t.buffer = static_cast<int>(b);
        t.resident = true;
        t.bytes = layers_[l].bytes;
        {
            std::lock_guard<std::mutex> g(mu_);
            if (stop_) return;
            t.start = now();
        }
        std::exception_ptr err;
        try {
            t.path = land_layer(l, buffers_[b]);
        } catch (...) {
            err = std::current_exception();
        }
        t.land = now() - t.start;
        {
            std::lock_guard<std::mutex> g(mu_);
            resident_timing_[b] = add_timing(t);
            resident_error_[b] = err;
            resident_done_[b] = 1;
        }
        cv_.notify_all();
    }
    if (streamed_.empty()) return;
    const int64_t S = static_cast<int64_t>(streamed_.size());
    for (;;) {
        int64_t k;
        uint64_t epoch;
        Slot *slot;
        cudaEvent_t released = nullptr;
        {
            std::unique_lock<std::mutex> g(mu_);
            cv_.wait(g, [&] { return stop_ || (!halted_ && load_k_ < released_k_ + ring_); });
            if (stop_) return;
            k = load_k_;
            epoch = epoch_;
            slot = &slots_[static_cast<size_t>(k % ring_)];
            slot->k = -1;  // being landed: nobody takes it until it is done
            slot->error = nullptr;
            if (slot->recorded) released = slot->released;
        }
        LayerTiming t;
        t.layer = streamed_[static_cast<size_t>(k % S)];
        t.pass = static_cast<uint64_t>(k / S);
        t.buffer = static_cast<int>(resident_.size() + static_cast<size_t>(k % ring_));
        t.bytes = layers_[t.layer].bytes;
        const double w0 = now();
        std::exception_ptr err;
        try {
            // the GPU done with what the consumer computed on the buffer's last layer
            if (released) check(cudaEventSynchronize(released), "cudaEventSynchronize(released)");
            t.start = now();
            t.wait = t.start - w0;
            t.path = land_layer(t.layer, buffers_[static_cast<size_t>(t.buffer)]);
        } catch (...) {
            err = std::current_exception();
            if (t.start == 0) t.start = now();
        }
        t.land = now() - t.start;
        {
            std::lock_guard<std::mutex> g(mu_);
            if (epoch != epoch_) continue;  // restarted meanwhile: this landing is not wanted
            slot->timing = add_timing(t);
            slot->error = err;
            slot->k = k;
            load_k_ = k + 1;
            if (err) halted_ = true;
        }
        cv_.notify_all();
    }
}

bool LayerLoader::is_resident(int layer) const
{
    return layer >= 0 && layer < layers() && resident_buf_[static_cast<size_t>(layer)] >= 0;
}

uint64_t LayerLoader::restarts() const
{
    std::lock_guard<std::mutex> g(mu_);
    return restarts_;
}

void LayerLoader::restart_at(size_t pos)
{
    const int64_t S = static_cast<int64_t>(streamed_.size());
    // past every position used so far, so that no landing of before is taken for a new one
    const int64_t k0 = (std::max(load_k_, use_k_) / S + 1) * S + static_cast<int64_t>(pos);
    epoch_++;
    restarts_++;
    load_k_ = use_k_ = released_k_ = k0;
    halted_ = false;
    for (Slot &s : slots_) {
        s.k = -1;
        s.error = nullptr;
    }
    cv_.notify_all();
}

void *LayerLoader::acquire(int layer, cudaStream_t stream)
{
    (void)stream;  // each landing is complete (and checked) before acquire() can return it
    if (layer < 0 || layer >= layers()) {
        throw Error("layer loader: layer " + std::to_string(layer) + " out of range (" + std::to_string(layers()) +
                        " layers)",
                    EINVAL);
    }
    const double w0 = now();
    std::unique_lock<std::mutex> g(mu_);
    if (const int b = resident_buf_[static_cast<size_t>(layer)]; b >= 0) {
        cv_.wait(g, [&] { return stop_ || resident_done_[static_cast<size_t>(b)]; });
        if (!resident_done_[static_cast<size_t>(b)]) throw Error("layer loader: closed", EBADF);
        if (LayerTiming *t = timing(resident_timing_[static_cast<size_t>(b)]); t && t->stall < 0) t->stall = now() - w0;
        if (resident_error_[static_cast<size_t>(b)]) std::rethrow_exception(resident_error_[static_cast<size_t>(b)]);
        return buffers_[static_cast<size_t>(b)];
    }
    const int64_t S = static_cast<int64_t>(streamed_.size());
    if (use_k_ - released_k_ >= ring_) {
        throw Error("layer loader: " + std::to_string(use_k_ - released_k_) +
                        " streamed layers held, as many as the ring has buffers: release one first",
                    EBUSY);
    }
    const size_t pos = static_cast<size_t>(stream_pos_[static_cast<size_t>(layer)]);
    if (static_cast<int64_t>(pos) != use_k_ % S) {
        if (use_k_ != released_k_) {
            throw Error("layer loader: layer " + std::to_string(layer) + " asked for out of order (layer " +
                            std::to_string(streamed_[static_cast<size_t>(use_k_ % S)]) +
                            " comes next) while streamed layers are held: release them first",
                        EINVAL);
        }
        restart_at(pos);
    }
    // a landing that failed before is tried again when nothing streamed is held (nothing
    // the ring's buffers hold is in use then)
    if (Slot &f = slots_[static_cast<size_t>(use_k_ % ring_)]; f.k == use_k_ && f.error && use_k_ == released_k_) {
        restart_at(pos);
    }
    const int64_t k = use_k_;
    Slot &s = slots_[static_cast<size_t>(k % ring_)];
    cv_.wait(g, [&] { return stop_ || s.k == k; });
    if (stop_) throw Error("layer loader: closed", EBADF);
    if (LayerTiming *t = timing(s.timing); t && t->stall < 0) t->stall = now() - w0;
    if (s.error) std::rethrow_exception(s.error);
    use_k_ = k + 1;
    return buffers_[resident_.size() + static_cast<size_t>(k % ring_)];
}

void LayerLoader::release(int layer, cudaStream_t stream)
{
    if (layer < 0 || layer >= layers()) {
        throw Error("layer loader: layer " + std::to_string(layer) + " out of range", EINVAL);
    }
    std::lock_guard<std::mutex> g(mu_);
    if (resident_buf_[static_cast<size_t>(layer)] >= 0) return;  // it stays
    const int64_t S = static_cast<int64_t>(streamed_.size());
    if (released_k_ >= use_k_ || streamed_[static_cast<size_t>(released_k_ % S)] != layer) {
        throw Error("layer loader: release of layer " + std::to_string(layer) +
                        (released_k_ >= use_k_ ? std::string(", which is not held")
                                               : ", but layer " + std::to_string(streamed_[static_cast<size_t>(released_k_ % S)]) +
                                                     " was acquired before it and is still held"),
                    EINVAL);
    }
    Slot &s = slots_[static_cast<size_t>(released_k_ % ring_)];
    check(cudaEventRecord(s.released, stream), "cudaEventRecord(released)");
    s.recorded = true;
    released_k_++;
    cv_.notify_all();
}

std::vector<LayerTiming> LayerLoader::timings() const
{
    std::lock_guard<std::mutex> g(mu_);
    return {timings_.begin(), timings_.end()};
}

void LayerLoader::clear_timings()
{
    std::lock_guard<std::mutex> g(mu_);
    timings_first_ += timings_.size();
    timings_.clear();
}

}  // namespace csd::gpu
