// SPDX-License-Identifier: MIT
// host_registration.hpp - one process-wide, reference-counted registration of host memory
// with CUDA (cudaHostRegister), shared by every part that copies from it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

namespace csd::gpu {

// A hold on the registration of host memory [p, p + bytes) with CUDA, which the GPU only
// reads (the in-process device's namespace mapping, its SLM): the first hold of a range
// registers it, mapped, portable and read-only where the platform allows (else mapped and
// portable), and the last one to go unregisters it. Several users of one range (a Landing
// and a GpuMover of the same device) share one registration, so that neither unregisters
// pages the other's copies still read. Thread-safe.
class HostRegistration {
public:
    // Holds the registration of [p, p + bytes), registering it if nothing holds it yet;
    // throws csd::Error (EIO) naming CUDA's error when it cannot be registered (or overlaps
    // another registration of a different extent).
    HostRegistration(const void *p, uint64_t bytes);
    ~HostRegistration();  // the last hold of its range unregisters it
    HostRegistration(const HostRegistration &) = delete;
    HostRegistration &operator=(const HostRegistration &) = delete;
    const uint8_t *host() const { return p_; }  // the registered memory
    uint64_t bytes() const { return bytes_; }   // its size
    uint64_t gpu() const { return gpu_; }       // its address as the GPU sees it (mapped)
    // How many holds the registration of [p, p + bytes) has now (0: not registered here).
    static unsigned holds(const void *p, uint64_t bytes);

private:
    const uint8_t *p_;
    uint64_t bytes_;
    uint64_t gpu_ = 0;
};

// cudaFree, cudaFreeHost and cudaHostUnregister wait for every kernel running on the device
// (measured on the H200: bench/gpu/sync_probe.cu, docs/gpu.md), and a resident kernel (GpuQueues'
// copy kernel) runs until its queues stop: a Landing, a loader or a second GpuQueues ending while
// it ran would wait for it. So those calls go through here: run now when no resident kernel runs
// in this process, else once the last one has returned (the memory stays allocated till then).
// A HostRegistration whose last hold goes meanwhile leaves the registry at once (its memory may be
// unmapped and the address reused); its range is unregistered later, and until then registering
// it again fails (the callers take their paths without the registration).
void after_resident_kernels(std::function<void()> release);

// Counts a resident kernel of this process from before its launch until it has returned
// (destroy it after the kernel's stream is synchronised): what after_resident_kernels waits for.
class ResidentKernel {
public:
    ResidentKernel();
    ~ResidentKernel();  // the last one runs the releases put off meanwhile
    ResidentKernel(const ResidentKernel &) = delete;
    ResidentKernel &operator=(const ResidentKernel &) = delete;
    // How many resident kernels run in this process now.
    static unsigned running();
};

}  // namespace csd::gpu
