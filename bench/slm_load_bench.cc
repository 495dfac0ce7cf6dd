// SPDX-License-Identifier: MIT
// slm_load_bench: SLM Load of N MiB of a namespace against an O_DIRECT read of the same
// namespace bytes into host memory (what the block layer below the drive can do), and SLM
// Store against an O_DIRECT write of as many bytes to the same LBAs (the namespace's second
// half), each pair run alternately, median of --reps; plus the first Load into SLM never
// touched before (the drive's memory faulted in). The same program runs in the guest (DEVICE /dev/ng0n1,
// READ_PATH /dev/nvme0n1: both commands through the guest's NVMe driver to QEMU's drive)
// and on the host (DEVICE emu:FILE, READ_PATH FILE: the in-process device against its
// backing file, read through the page cache with --buffered: O_DIRECT there would time the
// host's disk, which neither side touches once the file is cached). Prints one markdown
// table (docs/perf.md, "SLM Load in the guest").
// Usage: slm_load_bench DEVICE READ_PATH [--mib 16,64] [--reps 7] [--buffered]
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "csd/device.hpp"
#include "csd/error.hpp"

using namespace csd;

namespace {

double now_ms()
{
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double median(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

// Writes len bytes of buf at off of fd, all of them or an error.
void write_all(int fd, const uint8_t *buf, uint64_t len, uint64_t off, const char *path)
{
    for (uint64_t done = 0; done < len;) {
        const ssize_t n = pwrite(fd, buf + done, len - done, static_cast<off_t>(off + done));
        if (n <= 0) throw Error(std::string("write of ") + path + " failed", n < 0 ? errno : EIO);
        done += static_cast<uint64_t>(n);
    }
}

// Reads len bytes at off of fd into buf, all of them or an error.
void read_all(int fd, uint8_t *buf, uint64_t len, uint64_t off, const char *path)
{
    for (uint64_t done = 0; done < len;) {
        const ssize_t n = pread(fd, buf + done, len - done, static_cast<off_t>(off + done));
        if (n <= 0) throw Error(std::string("read of ") + path + " failed", n < 0 ? errno : EIO);
        done += static_cast<uint64_t>(n);
    }
}

}  // namespace

int main(int argc, char **argv)
{
    if (argc < 3) {
        std::fprintf(stderr, "usage: slm_load_bench DEVICE READ_PATH [--mib 16,64] [--reps 7] [--buffered]\n");
        return 2;
    }
    std::vector<uint64_t> sizes = {16, 64};
    int reps = 7;
    bool buffered = false;
    for (int i = 3; i < argc; i++) {
        const std::string a = argv[i];
        if (a == "--buffered") {
            buffered = true;
            continue;
        }
        if (i + 1 >= argc) break;
        if (a == "--mib") {
            sizes.clear();
            for (char *p = argv[i + 1]; *p;) {
                sizes.push_back(std::strtoull(p, &p, 10));
                if (*p == ',') p++;
            }
        } else if (a == "--reps") {
            reps = std::max(1, std::atoi(argv[i + 1]));
        }
        i++;
    }
    try {
        auto dev = Device::open(argv[1]);
        const uint64_t lba = dev->ns().lba_size, slm = dev->slm().size();
        const uint64_t biggest = *std::max_element(sizes.begin(), sizes.end()) << 20;
        if (2 * biggest > slm) throw Error("slm_load_bench: SLM must hold twice the largest size", EINVAL);
        const int fd = open(argv[2], O_RDWR | (buffered ? 0 : O_DIRECT));
        if (fd < 0) throw Error(std::string("open ") + argv[2], errno);
        void *mem = mmap(nullptr, biggest, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
        if (mem == MAP_FAILED) throw Error("mmap", errno);
        auto *buf = static_cast<uint8_t *>(mem);
        const char *how = buffered ? "buffered" : "O_DIRECT";
        std::printf("device %s (LBA %llu B, SLM %llu MiB), %s reads of %s, median of %d, alternated\n\n", argv[1],
                    static_cast<unsigned long long>(lba), static_cast<unsigned long long>(slm >> 20), how, argv[2], reps);
        std::printf("| MiB | SLM Load ms | %s read ms | Load / read | Load GB/s | read GB/s | first Load into untouched SLM ms "
                    "| SLM Store ms | %s write ms | Store / write |\n"
                    "|---|---|---|---|---|---|---|---|---|---|\n", how, how);
        const uint64_t store_lba = dev->ns().lba_count / 2;  // Stores and writes land in the second half
        uint64_t cold_at = biggest;  // SLM above the warm range: each size's first Load lands in untouched SLM
        for (uint64_t mib : sizes) {
            const uint64_t bytes = mib << 20, nlb = bytes / lba;
            double cold = -1;
            if (cold_at + bytes <= slm) {
                const double t0 = now_ms();
                dev->slm_load(0, nlb, cold_at);
                cold = now_ms() - t0;
                cold_at += bytes;
            }
            dev->slm_load(0, nlb, 0);  // warm: SLM touched, namespace bytes in the host's cache
            read_all(fd, buf, bytes, 0, argv[2]);
            std::vector<double> load, rd;
            for (int r = 0; r < reps; r++) {
                auto time_load = [&] {
                    const double t0 = now_ms();
                    dev->slm_load(0, nlb, 0);
                    load.push_back(now_ms() - t0);
                };
                auto time_read = [&] {
                    const double t0 = now_ms();
                    read_all(fd, buf, bytes, 0, argv[2]);
                    rd.push_back(now_ms() - t0);
                };
                if (r % 2) time_read(), time_load();
                else time_load(), time_read();
            }
            std::vector<double> store, wr;
            if ((store_lba + nlb) * lba > dev->ns().lba_count * lba) throw Error("slm_load_bench: namespace too small", EINVAL);
            for (int r = 0; r < reps; r++) {
                auto time_store = [&] {
                    const double t0 = now_ms();
                    dev->slm_store(store_lba, nlb, 0);
                    store.push_back(now_ms() - t0);
                };
                auto time_write = [&] {
                    const double t0 = now_ms();
                    write_all(fd, buf, bytes, store_lba * lba, argv[2]);
                    wr.push_back(now_ms() - t0);
                };
                if (r % 2) time_write(), time_store();
                else time_store(), time_write();
            }
            const double l = median(load), d = median(rd), so = median(store), w = median(wr);
            char cold_text[32] = "-";
            if (cold >= 0) std::snprintf(cold_text, sizeof cold_text, "%.2f", cold);
            std::printf("| %llu | %.2f | %.2f | %.2f | %.2f | %.2f | %s | %.2f | %.2f | %.2f |\n",
                        static_cast<unsigned long long>(mib), l, d, l / d, bytes / l / 1e6, bytes / d / 1e6, cold_text, so,
                        w, so / w);
        }
        munmap(mem, biggest);
        close(fd);
    } catch (const Error &e) {
        std::fprintf(stderr, "slm_load_bench: %s\n", e.what());
        return 1;
    }
    return 0;
}
