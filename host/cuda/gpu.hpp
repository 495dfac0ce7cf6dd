// SPDX-License-Identifier: MIT
// gpu.hpp - land data from the drive in GPU memory: SLM ranges, namespace LBAs and named
// objects, through a pinned-buffer pipeline (the path any drive can take), or straight
// from registered SLM when the device lives in this process. Objects land through the
// store's one read path (ObjectStore::get_into), checked against their CRC-32C. Built only
// where CUDA is found; every call reports the path that ran.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "csd/device.hpp"
#include "csd/store.hpp"

namespace csd::gpu {

// What a transfer did.
struct CopyReport {
    std::string path;  // "pinned-pipeline", "slm-registered"
    uint64_t bytes = 0;
    double seconds = 0;
    ObjectInfo object;  // object landings: the catalog entry of the version that landed
    double gbps() const { return seconds > 0 ? bytes / seconds / 1e9 : 0; }
};

// Whether a CUDA device can be used here (false on machines without a GPU or driver).
bool available();

// Moves data from one Device into GPU memory. Owns a pool of pinned host buffers,
// allocated once and reused, and the threads that fill them.
class Landing {
public:
    // chunk: bytes per pipeline step (4-16 MiB is right for PCIe); buffers: pinned
    // buffers in flight (at least 2, so the drive fills one while the GPU copies another);
    // readers: threads that fill a buffer in parallel. The defaults were the fastest of
    // those measured side by side on the GPU machine (docs/perf.md).
    explicit Landing(Device &dev, uint64_t chunk = 16 << 20, int buffers = 4, int readers = 8);
    ~Landing();
    Landing(const Landing &) = delete;
    Landing &operator=(const Landing &) = delete;

    // SLM [offset, offset + len) -> GPU memory at dst, ordered on stream. direct=true
    // lets an in-process device's SLM be copied without staging (registered once).
    std::future<CopyReport> slm_to_gpu(uint64_t offset, uint64_t len, void *dst, cudaStream_t stream,
                                       bool direct = true);
    // Namespace LBAs -> GPU memory.
    std::future<CopyReport> lbas_to_gpu(uint64_t slba, uint64_t nlb, void *dst, cudaStream_t stream);
    // A stored object -> GPU memory at dst, which holds dst_bytes (a larger object fails
    // with ENOSPC). Through the store's read path: the fill threads compute each piece's
    // CRC-32C as they fill the pinned buffers and the store combines them and checks the
    // object's (EIO as get() when it does not match), landing it again when another writer
    // replaced it meanwhile; the report names the version that landed.
    std::future<CopyReport> object_to_gpu(ObjectStore &store, const std::string &name, void *dst, uint64_t dst_bytes,
                                          cudaStream_t stream, Progress progress = {});

private:
    struct Buffer {
        uint8_t *host = nullptr;
        cudaEvent_t done = nullptr;
    };
    using Fill = std::function<void(uint64_t pos, uint64_t n, uint8_t *dst)>;
    CopyReport pipeline(uint64_t len, Fill fill, uint8_t *dst, cudaStream_t stream);
    void fill_parallel(uint64_t pos, uint64_t n, uint8_t *dst, const Fill &fill,
                       const std::function<void(uint64_t off, uint64_t len)> &filled);

    // Persistent threads that fill slices of a pinned buffer.
    class FillPool;
    std::unique_ptr<FillPool> pool_;
    Device &dev_;
    uint64_t chunk_;
    int readers_;
    std::vector<Buffer> buffers_;
    std::mutex run_mu_;  // one pipeline at a time uses the pool
    bool slm_registered_ = false;
};

}  // namespace csd::gpu
