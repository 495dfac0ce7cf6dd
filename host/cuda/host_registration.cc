// SPDX-License-Identifier: MIT
// host_registration.cc - host memory registered with CUDA once per process, held by count.
#include "host_registration.hpp"

#include <cuda_runtime_api.h>

#include <cerrno>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "csd/error.hpp"

namespace csd::gpu {

namespace {

struct Registered {
    unsigned holds = 0;
    uint64_t gpu = 0;
};

// The registrations by (first byte, size); never destroyed (holds may outlive static
// destruction at exit).
std::mutex &registry_mu()
{
    static std::mutex *mu = new std::mutex;
    return *mu;
}

std::map<std::pair<const uint8_t *, uint64_t>, Registered> &registry()
{
    static auto *r = new std::map<std::pair<const uint8_t *, uint64_t>, Registered>;
    return *r;
}

// Resident kernels running (under registry_mu) and the releases put off until none does.
unsigned resident_kernels = 0;
std::vector<std::function<void()>> &put_off()
{
    static auto *v = new std::vector<std::function<void()>>;
    return *v;
}

}  // namespace

void after_resident_kernels(std::function<void()> release)
{
    // under the lock: no resident kernel can be launched while release waits for the device
    std::lock_guard<std::mutex> g(registry_mu());
    if (resident_kernels == 0) {
        release();
    } else {
        put_off().push_back(std::move(release));
    }
}

ResidentKernel::ResidentKernel()
{
    std::lock_guard<std::mutex> g(registry_mu());
    resident_kernels++;
}

ResidentKernel::~ResidentKernel()
{
    std::lock_guard<std::mutex> g(registry_mu());
    if (--resident_kernels) return;
    std::vector<std::function<void()>> v;
    v.swap(put_off());
    for (auto &f : v) f();
}

unsigned ResidentKernel::running()
{
    std::lock_guard<std::mutex> g(registry_mu());
    return resident_kernels;
}

HostRegistration::HostRegistration(const void *p, uint64_t bytes) : p_(static_cast<const uint8_t *>(p)), bytes_(bytes)
{
    if (!p || bytes == 0) throw Error("registering host memory with CUDA: an empty range", EINVAL);
    std::lock_guard<std::mutex> g(registry_mu());
    Registered &r = registry()[{p_, bytes_}];
    if (r.holds == 0) {
        void *m = const_cast<uint8_t *>(p_);
        const unsigned base = cudaHostRegisterMapped | cudaHostRegisterPortable;
        // read-only where the platform pins so (the GPU only reads it), else as any host memory
        cudaError_t e = cudaHostRegister(m, bytes_, base | cudaHostRegisterReadOnly);
        if (e != cudaSuccess) {
            cudaGetLastError();
            e = cudaHostRegister(m, bytes_, base);
        }
        void *d = nullptr;
        if (e == cudaSuccess && (e = cudaHostGetDevicePointer(&d, m, 0)) != cudaSuccess) cudaHostUnregister(m);
        if (e != cudaSuccess) {
            cudaGetLastError();  // not sticky: the caller's other paths still work
            registry().erase({p_, bytes_});
            throw Error(std::string("cudaHostRegister(") + std::to_string(bytes_) + " bytes): " + cudaGetErrorString(e),
                        EIO);
        }
        r.gpu = reinterpret_cast<uint64_t>(d);
    }
    r.holds++;
    gpu_ = r.gpu;
}

HostRegistration::~HostRegistration()
{
    std::lock_guard<std::mutex> g(registry_mu());
    auto it = registry().find({p_, bytes_});
    if (it == registry().end() || --it->second.holds) return;
    // Out of the registry at once: its owner may unmap the memory now and another mapping come
    // to the same address, which must not be taken for this one. While a resident kernel runs
    // the unregistration is put off (it would wait for the kernel); meanwhile CUDA refuses to
    // register the range again, and the caller takes its path without the registration.
    registry().erase(it);
    void *m = const_cast<uint8_t *>(p_);
    auto unregister = [m] {
        cudaHostUnregister(m);
        cudaGetLastError();
    };
    if (resident_kernels) {
        put_off().push_back(unregister);
    } else {
        unregister();
    }
}

unsigned HostRegistration::holds(const void *p, uint64_t bytes)
{
    std::lock_guard<std::mutex> g(registry_mu());
    auto it = registry().find({static_cast<const uint8_t *>(p), bytes});
    return it == registry().end() ? 0 : it->second.holds;
}

}  // namespace csd::gpu
