// SPDX-License-Identifier: MIT
// stream_bench: a program over an object larger than SLM (the store streams it through SLM in
// pieces, store_stream.cc) against the same program over an object that fits, per byte, on the
// in-process device (emu:); the bytes that crossed the bus in each; and SLM Load / SLM Store of
// N MiB against a direct copy of the same bytes between the backing file and host memory
// (pread / pwrite, each pair run alternately). Prints markdown (docs/perf.md).
// Usage: stream_bench [--gib G] [--slm MIB] [--dir DIR] [--reps N]
//   --gib: the large object's size in GiB (default 4; its backing file is sparse, about twice
//   that: the filter's output is reserved for its largest size); --slm: the device's SLM in
//   MiB (default 64); --dir: where the backing file goes (default /tmp).
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "csd/device.hpp"
#include "csd/programs.hpp"
#include "csd/store.hpp"

using namespace csd;

namespace {

double now()
{
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

template <class F>
double median_seconds(int reps, F &&f)
{
    std::vector<double> t;
    for (int i = 0; i < reps; i++) {
        const double t0 = now();
        f();
        t.push_back(now() - t0);
    }
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
}

// Medians of f and g run alternately, reps times each: neither pays for the other's leftovers
// (dirty pages written back, page cache evicted) more than the other does.
template <class F, class G>
std::pair<double, double> median_pair(int reps, F &&f, G &&g)
{
    std::vector<double> a, b;
    auto time_f = [&] {
        const double t0 = now();
        f();
        a.push_back(now() - t0);
    };
    auto time_g = [&] {
        const double t0 = now();
        g();
        b.push_back(now() - t0);
    };
    for (int i = 0; i < reps; i++) {
        if (i % 2) {
            time_g(), time_f();
        } else {
            time_f(), time_g();
        }
    }
    std::sort(a.begin(), a.end());
    std::sort(b.begin(), b.end());
    return {a[a.size() / 2], b[b.size() / 2]};
}

double load_average()
{
    std::ifstream f("/proc/loadavg");
    double l = -1;
    f >> l;
    return l;
}

// n records of 16 bytes, field 1 (f32 at byte 4) uniform in [0, 1).
std::vector<uint8_t> records(uint64_t n, uint32_t seed)
{
    std::vector<uint8_t> v(n * 16);
    std::mt19937 g(seed);
    std::uniform_real_distribution<float> u(0, 1);
    for (uint64_t i = 0; i < n; i++) {
        const float f[4] = {static_cast<float>(i), u(g), 0, 0};
        std::memcpy(&v[i * 16], f, 16);
    }
    return v;
}

}  // namespace

int main(int argc, char **argv)
{
    double gib = 4;
    uint64_t slm_mib = 64;
    int reps = 5;
    std::string dir = "/tmp";
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string a = argv[i];
        if (a == "--gib") gib = std::atof(argv[i + 1]);
        else if (a == "--slm") slm_mib = std::strtoull(argv[i + 1], nullptr, 10);
        else if (a == "--dir") dir = argv[i + 1];
        else if (a == "--reps") reps = std::atoi(argv[i + 1]);
        else {
            std::fprintf(stderr, "usage: stream_bench [--gib G] [--slm MIB] [--dir DIR] [--reps N]\n");
            return 2;
        }
    }
    const uint64_t big = static_cast<uint64_t>(gib * (1ull << 30)) / 16 * 16, fits = 16ull << 20;
    const std::string file = dir + "/stream-bench-" + std::to_string(getpid()) + ".img";
    {
        const int fd = open(file.c_str(), O_CREAT | O_RDWR | O_TRUNC, 0600);
        if (fd < 0 || ftruncate(fd, static_cast<off_t>(2 * big + (1ull << 30))) != 0) {
            std::perror(file.c_str());
            return 1;
        }
        close(fd);
    }
    const double load0 = load_average();
    auto dev = Device::open("emu:" + file + "?slm=" + std::to_string(slm_mib) + "M");
    ObjectStore::format(*dev, true);
    ObjectStore st(*dev);
    {
        std::vector<uint8_t> v = records(fits / 16, 1);
        st.put("fits", v.data(), v.size());
        v = records(big / 16, 2);
        st.put("big", v.data(), v.size());
    }
    FilterSpec s;
    s.record_size = 16;
    s.field_offset = 4;
    s.field_type = FieldType::f32;
    s.op = CmpOp::gt;
    s.lo = 0.99;
    std::printf("## Streaming a filter through SLM (in-process device, emu:, %llu MiB of SLM)\n\n",
                static_cast<unsigned long long>(slm_mib));
    std::printf("| object | pieces | piece MiB | median s | GB/s | per byte vs fits | matches | bytes to device | "
                "bytes from device | results |\n|---|---|---|---|---|---|---|---|---|---|\n");
    double fits_rate = 0;
    for (const auto &[name, bytes, r] : {std::tuple{"fits", fits, reps * 4}, std::tuple{"big", big, reps}}) {
        StreamOptions o;
        StreamOptions::Stats stats;
        o.stats = &stats;
        FilterResult res;
        st.filter(name, s, "out", o);  // warm
        const BusCounters b0 = dev->bus();
        const double sec = median_seconds(r, [&] { res = st.filter(name, s, "out", o); });
        const BusCounters b1 = dev->bus();
        const double rate = bytes / sec / 1e9;
        if (std::string(name) == "fits") fits_rate = rate;
        std::printf("| %.3f GiB | %llu | %.1f | %.4f | %.2f | %.2f | %llu | %llu | %llu | %llu |\n", bytes / double(1ull << 30),
                    static_cast<unsigned long long>(stats.pieces), stats.piece_bytes / 1048576.0, sec, rate,
                    rate / fits_rate, static_cast<unsigned long long>(res.matches),
                    static_cast<unsigned long long>((b1.bytes_to_device - b0.bytes_to_device) / r),
                    static_cast<unsigned long long>((b1.bytes_from_device - b0.bytes_from_device) / r),
                    static_cast<unsigned long long>(res.bytes));
    }
    // crc32c of the big one, also streamed
    {
        StreamOptions o;
        uint64_t crc = 0;
        const double sec = median_seconds(reps, [&] { crc = st.checksum("big", ChecksumAlgo::crc32c, o); });
        std::printf("\nchecksum crc32c of %.3f GiB streamed: %.4f s (%.2f GB/s), %s the catalog's CRC\n", big / double(1ull << 30),
                    sec, big / sec / 1e9, crc == st.stat("big").crc32c ? "equal to" : "DIFFERENT FROM");
    }

    // SLM Load / Store against pread / pwrite of the same bytes of the backing file
    std::printf("\n## SLM Load and Store against a direct copy from the backing file (emu:)\n\n");
    std::printf("| MiB | SLM Load ms | pread ms | Load / pread | SLM Store ms | pwrite ms | Store / pwrite |\n"
                "|---|---|---|---|---|---|---|\n");
    const ObjectInfo o = st.stat("big");
    const uint32_t lba = dev->ns().lba_size;
    const int fd = open(file.c_str(), O_RDWR);
    for (uint64_t mib : {uint64_t{8}, uint64_t{16}, uint64_t{32}, uint64_t{64}}) {
        const uint64_t n = mib << 20;
        if (n > dev->slm().largest_free() || n > o.bytes) continue;
        SlmBuffer b = dev->slm().alloc(n);
        std::vector<uint8_t> host(n, 1);
        const uint64_t slba = st.first_lba(o);
        const off_t at = static_cast<off_t>(slba * lba);
        // each pair alternately, so that neither is measured after the other's writes only
        const auto [load, rd] = median_pair(reps * 2, [&] { dev->slm_load(slba, n / lba, b.offset()); }, [&] {
            if (pread(fd, host.data(), n, at) != static_cast<ssize_t>(n)) std::perror("pread");
        });
        // stores into the free space after the objects (the reservation of nothing: bench only)
        const uint64_t scratch = (o.block + (o.bytes + 4095) / 4096 + 1024) * (4096 / lba);
        const auto [store, wr] = median_pair(reps * 2, [&] { dev->slm_store(scratch, n / lba, b.offset()); }, [&] {
            if (pwrite(fd, host.data(), n, static_cast<off_t>(scratch * lba)) != static_cast<ssize_t>(n)) std::perror("pwrite");
        });
        std::printf("| %llu | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f |\n", static_cast<unsigned long long>(mib),
                    load * 1e3, rd * 1e3, load / rd, store * 1e3, wr * 1e3, store / wr);
    }
    close(fd);
    std::printf("\nload average %.2f at the start, %.2f at the end\n", load0, load_average());
    dev.reset();
    unlink(file.c_str());
    return 0;
}
