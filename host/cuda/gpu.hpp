// SPDX-License-Identifier: MIT
// gpu.hpp - land data from the drive in GPU memory: SLM ranges, namespace LBAs and named
// objects, through a pinned-buffer pipeline (the path any drive can take), or straight
// from registered SLM when the device lives in this process, or, for namespace data, from
// the namespace mapped into this process and registered with CUDA (the in-process device as
// a simulated peer-to-peer drive: one DMA). Objects land through the store's one read path
// (ObjectStore::get_into), checked against their CRC-32C. Built only where CUDA is found;
// every call reports the path that ran.
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
#include "host_registration.hpp"

namespace csd::gpu {

// What a transfer did.
struct CopyReport {
    std::string path;  // "pinned-pipeline", "slm-registered", kPeerToPeer
    uint64_t bytes = 0;
    double seconds = 0;
    ObjectInfo object;  // object landings: the catalog entry of the version that landed
    double gbps() const { return seconds > 0 ? bytes / seconds / 1e9 : 0; }
};

// The path of a namespace Read that is one DMA from the in-process device's namespace,
// registered with CUDA: what a drive that writes into GPU memory itself does, simulated.
inline constexpr const char *kPeerToPeer = "ns-registered (simulated peer-to-peer drive)";

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
    explicit Landing(Device &dev, uint64_t chunk = kDefaultChunk, int buffers = kDefaultBuffers,
                     int readers = kDefaultReaders);
    static constexpr uint64_t kDefaultChunk = 8 << 20;  // from the sweep (docs/perf.md)
    static constexpr int kDefaultBuffers = 4, kDefaultReaders = 12;
    ~Landing();
    Landing(const Landing &) = delete;
    Landing &operator=(const Landing &) = delete;

    // SLM [offset, offset + len) -> GPU memory at dst, ordered on stream. direct=true
    // lets an in-process device's SLM be copied without staging (registered once; where it
    // cannot be registered, the pipeline, and peer_to_peer_error() says why).
    std::future<CopyReport> slm_to_gpu(uint64_t offset, uint64_t len, void *dst, cudaStream_t stream,
                                       bool direct = true);
    // Namespace LBAs -> GPU memory; direct=true takes the simulated peer-to-peer path where
    // the namespace is mapped into this process (kPeerToPeer).
    std::future<CopyReport> lbas_to_gpu(uint64_t slba, uint64_t nlb, void *dst, cudaStream_t stream,
                                        bool direct = true);
    // A stored object -> GPU memory at dst, which holds dst_bytes (a larger object fails
    // with ENOSPC). Through the store's read path (ObjectSink::land_checked): the CRC-32C of
    // each piece is computed on the GPU over the bytes where they landed, behind its copy,
    // and the store combines them and checks the object's (EIO as get() when it does not
    // match), landing it again when another writer replaced it meanwhile; the report names
    // the version that landed. direct=true takes the simulated peer-to-peer path where there
    // is one (kPeerToPeer): DMAs from the registered namespace; else the pinned pipeline. With
    // a progress callback, the copies run at most two pieces (8 MiB each from the
    // namespace; chunks in the pipeline, which fills one more) ahead of the progress reported.
    std::future<CopyReport> object_to_gpu(ObjectStore &store, const std::string &name, void *dst, uint64_t dst_bytes,
                                          cudaStream_t stream, Progress progress = {}, bool direct = true);
    // One stored object to land and where: GPU memory at dst, which holds dst_bytes.
    struct ObjectTarget {
        std::string name;
        void *dst = nullptr;
        uint64_t dst_bytes = 0;
    };
    // Several stored objects -> GPU memory, each as object_to_gpu lands it (checked on the GPU,
    // landed again when replaced), all as one stream of chunks: on the pinned pipeline the fill
    // threads go from one object's chunks to the next's with no pause between objects, on the
    // simulated peer-to-peer path the DMAs follow each other across objects (a layer's tensors
    // land at the rate of one large object). The reports in the order of targets; rethrows the
    // first object's error (the others' landings are finished or given up first). Targets whose
    // destinations [dst, dst + dst_bytes) overlap are refused (EINVAL) before anything lands.
    std::future<std::vector<CopyReport>> objects_to_gpu(ObjectStore &store, std::vector<ObjectTarget> targets,
                                                        cudaStream_t stream, bool direct = true);
    // Why the namespace or SLM could not be registered with CUDA, the last time that failed
    // ("" if it never did).
    std::string peer_to_peer_error() const;

private:
    struct Buffer {
        uint8_t *host = nullptr;
        cudaEvent_t done = nullptr;
    };
    using Fill = std::function<void(uint64_t pos, uint64_t n, uint8_t *dst)>;
    using Copied = std::function<void(uint64_t pos, uint64_t n)>;
    // copied(pos, n) is called once each chunk's copy to dst + pos is queued on stream.
    CopyReport pipeline(uint64_t len, Fill fill, uint8_t *dst, cudaStream_t stream,
                        const std::function<void(uint64_t pos, uint64_t n)> &copied = {});
    // pipeline()'s transfers of several chunks, with no barrier between chunks.
    void streamed(uint64_t len, const Fill &fill, uint8_t *dst, cudaStream_t stream,
                  const std::function<void(uint64_t pos, uint64_t n)> &copied);
    // The chunks of one or more ranges, each with its fill and destination, through the pinned
    // buffers; ranges may be added while it runs.
    class ChunkStream;
    // One object landing through the store (object_to_gpu's work, on the worker thread);
    // ns: the registered namespace, or nullptr for the pinned pipeline.
    CopyReport land_object(ObjectStore &store, const std::string &name, uint8_t *dst, uint64_t dst_bytes,
                           cudaStream_t stream, const Progress &progress, const uint8_t *ns);
    // objects_to_gpu's work: every target's chunks in one ChunkStream (worker thread); ns: the
    // registered namespace (DMAs straight from it), or nullptr for the pinned pipeline.
    std::vector<CopyReport> land_objects_streamed(ObjectStore &store, const std::vector<ObjectTarget> &targets,
                                                  cudaStream_t stream, const uint8_t *ns);
    void fill_parallel(uint64_t pos, uint64_t n, uint8_t *dst, const Fill &fill,
                       const std::function<void(uint64_t off, uint64_t len)> &filled);

    // Persistent threads that fill slices of a pinned buffer.
    class FillPool;
    std::unique_ptr<FillPool> pool_;
    // Threads that run objects_to_gpu's store calls side by side (made at its first call).
    std::unique_ptr<FillPool> callers_;
    static constexpr int kCallers = 4;  // objects whose store calls run at once
    // CRC-32C of landed pieces on the GPU, on a stream of its own behind their copies.
    class Checker;
    std::unique_ptr<Checker> checker_;
    // The one persistent thread that runs every transfer (no thread started per call).
    class Worker;
    std::unique_ptr<Worker> worker_;
    Device &dev_;
    uint64_t chunk_;
    int readers_;
    std::vector<Buffer> buffers_;
    // The namespace, mapped and registered with CUDA once (nullptr where it is not mapped or
    // the registration failed); call with run_mu_ held.
    const uint8_t *registered_namespace();
    // One DMA of n bytes from the registered namespace at src; waits for it.
    void copy_mapped(const uint8_t *src, uint64_t n, uint8_t *dst, cudaStream_t stream);
    std::mutex run_mu_;  // one pipeline at a time uses the pool
    // Holds on SLM's and the namespace's registrations, shared with any other user of this
    // process (a GpuMover of the same device): none unregisters what another still reads.
    std::unique_ptr<HostRegistration> slm_reg_, ns_reg_;
    bool ns_tried_ = false;
    std::string ns_error_;
};

}  // namespace csd::gpu
