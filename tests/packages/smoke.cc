// SPDX-License-Identifier: MIT
// libcsd-dev's smoke test in C++17 (built with 'pkg-config --cflags --libs csd'): a
// Device, the object store and a program, from the installed headers.
#include <cstdio>
#include <vector>

#include <csd/device.hpp>
#include <csd/programs.hpp>
#include <csd/store.hpp>

int main(int argc, char **argv)
{
    if (argc != 2) return 1;
    try {
        auto dev = csd::Device::open(argv[1]);
        csd::ObjectStore::format(*dev, true);  // over the store csdctl made there
        csd::ObjectStore store(*dev);
        std::vector<float> a(1024, 2.0f);
        store.put("a", a.data(), a.size() * sizeof(float), "<f4", {32, 32});
        const std::vector<uint8_t> back = store.get("a");
        if (back.size() != a.size() * sizeof(float) || store.stat("a").shape.at(0) != 32) return 1;
        csd::SlmBuffer b = store.load("a");
        const uint64_t sum = csd::programs::checksum(*dev, csd::ChecksumAlgo::crc32c, csd::Range{b.offset(), 4096});
        std::printf("smoke.cc: %zu objects, crc32c %08llx ok\n", store.list().size(), static_cast<unsigned long long>(sum));
    } catch (const csd::Error &e) {
        std::fprintf(stderr, "smoke.cc: %s\n", e.what());
        return 1;
    }
    return 0;
}
