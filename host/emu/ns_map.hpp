// SPDX-License-Identifier: MIT
// ns_map.hpp - the in-process device's namespace mapped into the process (MAP_SHARED over
// its backing file): Reads copy straight from it, and a GPU landing registers it with CUDA
// so that a Read into GPU memory is one DMA from it (the simulated peer-to-peer drive,
// docs/gpu.md). Writes stay pwrite(); a shared mapping of the file sees them at once.
#pragma once

#include <sys/mman.h>

#include <cstdint>

namespace csd {

class NamespaceMap {
public:
    NamespaceMap() = default;
    // Maps bytes [0, bytes) of fd read-only; stays empty (data() == nullptr) where that fails.
    NamespaceMap(int fd, uint64_t bytes)
    {
        if (bytes == 0) return;
        void *p = mmap(nullptr, bytes, PROT_READ, MAP_SHARED, fd, 0);
        if (p == MAP_FAILED) return;
        data_ = static_cast<const uint8_t *>(p);
        bytes_ = bytes;
    }
    ~NamespaceMap()
    {
        if (data_) munmap(const_cast<uint8_t *>(data_), bytes_);
    }
    NamespaceMap(const NamespaceMap &) = delete;
    NamespaceMap &operator=(const NamespaceMap &) = delete;

    // The mapped bytes, or nullptr.
    const uint8_t *data() const { return data_; }
    uint64_t bytes() const { return bytes_; }

private:
    const uint8_t *data_ = nullptr;
    uint64_t bytes_ = 0;
};

}  // namespace csd
