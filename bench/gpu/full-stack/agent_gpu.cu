// SPDX-License-Identifier: MIT
// agent_gpu - the CUDA agent of the full stack: CUDA kernels drive agent queue pairs of the
// emulated NVMe controller in QEMU (csd.ko's CSD_IOC_AGENT_QUEUE in the guest; the queues,
// doorbells and data buffers lie in the ivshmem peer's memory file, which this process maps
// and registers with CUDA). The SQE building, doorbells and completion polling are
// host/agent/csd_agent.hpp, the same code the CPU agent (tests/agent/agent_check.cc) runs.
// Every byte and result is checked on the GPU:
//   check   queue pair 0, one thread: random Reads against the namespace's first 16 MiB
//           (copied to GPU memory from the namespace's host file), SLM Write of a pattern
//           made on the GPU and SLM Read back, Executes of CRC-32C over it against a CRC
//           computed on the GPU, bad SQEs (data or PRP lists outside the region, unknown
//           opcodes, bad NSIDs, LBAs and SLM past the end) answered with error completions,
//           and a good Read after them
//   rate    every queue pair, one warp each: N random Reads of BYTES kept depth - 1 deep,
//           each Read's bytes compared on the GPU; commands per second over all pairs
// Usage: agent_gpu PEER_FILE DISK_FILE SLM_OFFSET N BYTES[,BYTES] LAYOUT...  (LAYOUT as kmod_check
// agent prints it; one per queue pair). Without a GPU it says so and exits 0 ("skipped").
#include <cuda_runtime.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "../../../host/agent/csd_agent.hpp"

using namespace csd::agent;
using csd::NvmeSqe;

namespace {

constexpr uint64_t kCheckBytes = 16u << 20;  // the namespace bytes the Reads address

#define CK(x)                                                                              \
    do {                                                                                   \
        cudaError_t e_ = (x);                                                              \
        if (e_ != cudaSuccess) {                                                           \
            std::fprintf(stderr, "agent_gpu: %s: %s\n", #x, cudaGetErrorString(e_));       \
            std::exit(1);                                                                  \
        }                                                                                  \
    } while (0)

// The GPU's global timer, in ns.
__device__ uint64_t now_ns()
{
    uint64_t t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

// A 64-bit mixer (splitmix64's finaliser) for random LBAs and patterns.
__device__ uint64_t mix(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    return x ^ (x >> 33);
}

// CRC-32C, bitwise (the GPU's own, to check the drive's).
__device__ uint32_t crc32c(const volatile uint8_t *p, uint64_t n)
{
    uint32_t c = 0xFFFFFFFFu;
    for (uint64_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int k = 0; k < 8; k++) c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1u)));
    }
    return ~c;
}

// One command, waited for up to two seconds; false if no completion came.
__device__ bool run(QueuePair &q, const Layout &l, NvmeSqe e, Completion *c)
{
    const uint16_t cid = e.cid = static_cast<uint16_t>(q.sq_tail);  // one outstanding at a time
    push(q, l, e);
    ring(q, l);
    const uint64_t end = now_ns() + 2000000000ull;
    while (now_ns() < end)
        if (poll(q, l, c)) return c->cid == cid;
    return false;
}

// What the check kernel found.
struct CheckResult {
    int reads, reads_ok, slm_ok, execs, execs_ok, bad, bad_ok, after_ok;
    uint16_t bad_status[16];
};

// The data area: two PRP list pages, buffers A and B of 64 KiB, a descriptor page.
struct Area {
    uint64_t list0, list1, a, b, desc;
    __device__ explicit Area(const Layout &l)
        : list0(l.data_offset), list1(l.data_offset + kPage), a(l.data_offset + 2 * kPage),
          b(l.data_offset + 2 * kPage + (64 << 10)), desc(l.data_offset + 2 * kPage + (128 << 10)) {}
};

// Whether n bytes of mapped memory equal n bytes of GPU memory.
__device__ bool equal(const volatile uint8_t *x, const uint8_t *y, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++)
        if (x[i] != y[i]) return false;
    return true;
}

// One bad SQE: its completion's status code must be want.
__device__ void bad_one(QueuePair &q, const Layout &l, NvmeSqe e, uint16_t want, CheckResult *r)
{
    Completion c;
    const bool done = run(q, l, e, &c);
    r->bad_status[r->bad % 16] = done ? c.status : 0xFFFF;
    r->bad++;
    r->bad_ok += done && (c.status & 0x7FF) == want;
}

// check: see the top of this file (one thread, pair 0).
__global__ void check(uint8_t *region, Layout l, QueuePair *state, uint64_t slm, const uint8_t *disk, CheckResult *r)
{
    QueuePair q = *state;
    const Area ar(l);
    volatile uint8_t *A = region + ar.a, *B = region + ar.b;
    Completion c;
    // Reads of 4-16 KiB at random LBAs, compared with the namespace's bytes in GPU memory
    for (int i = 0; i < 32; i++) {
        const uint32_t nlb = static_cast<uint32_t>((i % 4 + 1) * kPage / l.lba_size);
        const uint64_t slba = mix(i + 1) % (kCheckBytes / l.lba_size - nlb);
        const uint64_t bytes = uint64_t(nlb) * l.lba_size;
        NvmeSqe e = read_sqe(l.nsid, slba, nlb);
        set_prps(q, e, ar.a, bytes, ar.list0);
        r->reads++;
        if (run(q, l, e, &c) && c.status == 0 && equal(A, disk + slba * l.lba_size, bytes)) r->reads_ok++;
    }
    // SLM Write of a pattern made here, SLM Read back into B, compared here
    const uint32_t n = 64 << 10;
    for (uint32_t i = 0; i < n; i++) A[i] = static_cast<uint8_t>(mix(i / 8 + 77) >> (8 * (i % 8)));
    for (uint32_t i = 0; i < n; i++) B[i] = 0;
    NvmeSqe w = slm_sqe(true, l.nsid, slm, n);
    set_prps(q, w, ar.a, n, ar.list0);
    NvmeSqe rd = slm_sqe(false, l.nsid, slm, n);
    set_prps(q, rd, ar.b, n, ar.list1);
    bool ok = run(q, l, w, &c) && c.status == 0;
    ok = ok && run(q, l, rd, &c) && c.status == 0;
    bool same = true;
    for (uint32_t i = 0; i < n && same; i++) same = A[i] == B[i];
    r->slm_ok = ok && same;
    // Executes of the checksum program over each 4 KiB of it, against a CRC computed here
    for (uint32_t i = 0; i < 16; i++) {
        volatile uint8_t *d = region + ar.desc;
        const uint8_t head[16] = {'C', 'S', 'D', 'X', CSD_DESC_VERSION, 0, CSD_PROG_CHECKSUM, 0, 1, 0, 0, 0, 4, 0, 0, 0};
        for (int k = 0; k < 16; k++) d[k] = head[k];
        const uint64_t range[2] = {slm + i * 4096ull, 4096};
        for (int k = 0; k < 16; k++) d[16 + k] = static_cast<uint8_t>(range[k / 8] >> (8 * (k % 8)));
        for (int k = 0; k < 4; k++) d[32 + k] = 0;  // CSD_CKSUM_CRC32C
        NvmeSqe e = execute_sqe(l.nsid, 36);
        set_prps(q, e, ar.desc, kPage, ar.list0);
        r->execs++;
        if (run(q, l, e, &c) && c.status == 0 && c.dw0 == crc32c(A + i * 4096, 4096)) r->execs_ok++;
    }
    // bad SQEs: each an error completion
    const uint64_t guest_ram = 0x100000;
    NvmeSqe e = read_sqe(l.nsid, 0, static_cast<uint32_t>(4096 / l.lba_size));
    e.prp1 = guest_ram;
    bad_one(q, l, e, CSD_STATUS_DATA_TRANSFER_ERROR, r);
    e = read_sqe(l.nsid, 0, static_cast<uint32_t>(16384 / l.lba_size));
    set_prps(q, e, ar.b, 16384, ar.list0);
    reinterpret_cast<volatile uint64_t *>(region + ar.list0)[1] = guest_ram;
    bad_one(q, l, e, CSD_STATUS_DATA_TRANSFER_ERROR, r);
    e.prp2 = guest_ram;
    bad_one(q, l, e, CSD_STATUS_DATA_TRANSFER_ERROR, r);
    e = slm_sqe(true, l.nsid, slm, 4096);
    e.prp1 = q.bus + q.len;
    bad_one(q, l, e, CSD_STATUS_DATA_TRANSFER_ERROR, r);
    e = read_sqe(l.nsid, 0, 1);
    set_prps(q, e, ar.a, l.lba_size, ar.list0);
    e.opcode = 0xFF;
    bad_one(q, l, e, CSD_STATUS_INVALID_OPCODE, r);
    e = read_sqe(0x77, 0, 1);
    set_prps(q, e, ar.a, l.lba_size, ar.list0);
    bad_one(q, l, e, CSD_STATUS_INVALID_FIELD, r);  // no such namespace: QEMU's Invalid Field
    e.nsid = 0x1000;
    bad_one(q, l, e, CSD_STATUS_INVALID_NAMESPACE, r);
    e = read_sqe(l.nsid, 1ull << 40, 1);
    set_prps(q, e, ar.a, l.lba_size, ar.list0);
    bad_one(q, l, e, CSD_STATUS_LBA_OUT_OF_RANGE, r);
    e = slm_sqe(false, l.nsid, 1ull << 40, 4096);
    set_prps(q, e, ar.a, 4096, ar.list0);
    bad_one(q, l, e, CSD_STATUS_SLM_OUT_OF_BOUNDS, r);
    // and a good Read after them
    e = read_sqe(l.nsid, 3, 1);
    set_prps(q, e, ar.a, l.lba_size, ar.list0);
    r->after_ok = run(q, l, e, &c) && c.status == 0 && equal(A, disk + 3 * l.lba_size, l.lba_size);
    *state = q;
}

// Every queue pair, one warp (a block of 32 threads): lane 0 keeps n random Reads of `bytes`
// depth - 1 deep (SQEs, doorbell, completions); the warp compares each completed Read's
// bytes with the namespace's, 8 bytes a lane at a time (reads of mapped host memory cross
// PCIe: one lane comparing byte by byte, not the drive, would set the rate).
__global__ void rate(uint8_t *region, const Layout *ls, QueuePair *states, uint32_t pairs, uint64_t n,
                     uint32_t bytes, const uint8_t *disk, unsigned long long *counters)
{
    const uint32_t p = blockIdx.x;
    const unsigned lane = threadIdx.x & 31, all = 0xFFFFFFFFu;
    if (p >= pairs) return;
    __shared__ uint64_t lba_of[1024];  // by cid, which names the data buffer too: completions
    __shared__ uint16_t free_ids[1024];  // come in any order, so not by SQ slot
    __shared__ uint16_t cids[32], sts[32];
    const Layout l = ls[p];
    QueuePair q = states[p];  // lane 0's is the one that moves
    const uint32_t nlb = bytes / l.lba_size;
    const uint64_t slots = l.data_offset;
    const uint32_t room = static_cast<uint32_t>((l.len - slots) / kPage);
    const uint32_t depth = min(l.depth - 1, room);
    uint64_t sent = 0, done = 0, failed = 0, wrong = 0;
    uint32_t out = 0;
    const uint64_t end = now_ns() + 120000000000ull;
    bool stop = false;
    uint32_t nfree = 0, got = 0;
    if (lane == 0)
        for (uint32_t i = 0; i < depth; i++) free_ids[nfree++] = static_cast<uint16_t>(i);
    while (!stop) {
        if (lane == 0) {
            for (uint32_t k = 0; k < got; k++) free_ids[nfree++] = cids[k];  // compared: free again
            got = 0;
            bool rang = false;
            while (nfree && sent < n) {
                const uint64_t slba = (mix(sent * 1315423911ull + p) % (kCheckBytes / bytes)) * nlb;
                NvmeSqe e = read_sqe(l.nsid, slba, nlb);
                e.cid = free_ids[--nfree];
                e.prp1 = bus_of(q, slots + uint64_t(e.cid) * kPage);
                lba_of[e.cid] = slba;
                push(q, l, e);
                sent++, out++, rang = true;
            }
            if (rang) ring(q, l);
            Completion c;
            while (got < 32 && poll(q, l, &c)) {
                cids[got] = c.cid < depth ? c.cid : 0;
                sts[got] = c.cid < depth ? c.status : 0xFFFF;
                if (c.cid < depth) got++;
                else failed++;  // a cid we never sent
            }
            done += got, out -= got;
            stop = done >= n || now_ns() > end;
        }
        __syncwarp(all);
        got = __shfl_sync(all, got, 0);
        stop = __shfl_sync(all, stop, 0);
        for (uint32_t k = 0; k < got; k++) {
            const uint16_t cid = cids[k];
            if (sts[k]) {
                failed += lane == 0;
                continue;
            }
            const volatile uint64_t *have =
                reinterpret_cast<const volatile uint64_t *>(region + l.region + slots + uint64_t(cid) * kPage);
            const uint64_t *want = reinterpret_cast<const uint64_t *>(disk + lba_of[cid] * l.lba_size);
            bool bad = false;
            for (uint32_t w = lane; w < bytes / 8; w += 32) bad |= have[w] != want[w];
            wrong += __any_sync(all, bad) && lane == 0;
        }
        __syncwarp(all);
    }
    if (lane != 0) return;
    while (out) {  // a timeout: wait for what is still out so the state stays true
        Completion c;
        if (poll(q, l, &c)) out--;
        else if (now_ns() > end + 2000000000ull) break;
    }
    states[p] = q;
    atomicAdd(&counters[0], done);
    atomicAdd(&counters[1], failed);
    atomicAdd(&counters[2], wrong);
}


}  // namespace

int main(int argc, char **argv)
{
    if (argc < 7) {
        std::fprintf(stderr, "usage: agent_gpu PEER_FILE DISK_FILE SLM_OFFSET N BYTES LAYOUT...\n");
        return 2;
    }
    int gpus = 0;
    if (cudaGetDeviceCount(&gpus) != cudaSuccess || gpus == 0) {
        std::printf("agent_gpu: no GPU: skipped\n");
        return 0;
    }
    const uint64_t slm = std::strtoull(argv[3], nullptr, 0), n = std::strtoull(argv[4], nullptr, 0);
    std::vector<uint32_t> sizes;  // BYTES: one size or a comma list, run one after the other
    for (char *p = argv[5]; *p;) {
        sizes.push_back(static_cast<uint32_t>(std::strtoul(p, &p, 0)));
        if (*p == ',') p++;
        else if (*p) return 2;
    }
    std::vector<Layout> ls(argc - 6);
    for (int i = 6; i < argc; i++)
        if (!parse_layout(argv[i], ls[i - 6]) || ls[i - 6].len <= ls[i - 6].data_offset + (200u << 10)) {
            std::fprintf(stderr, "agent_gpu: bad layout %s\n", argv[i]);
            return 2;
        }
    const int fd = open(argv[1], O_RDWR), disk_fd = open(argv[2], O_RDONLY);
    struct stat st;
    if (fd < 0 || disk_fd < 0 || fstat(fd, &st)) {
        std::perror("agent_gpu: open");
        return 2;
    }
    const size_t size = static_cast<size_t>(st.st_size);
    void *m = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED) {
        std::perror("agent_gpu: mmap");
        return 2;
    }
    CK(cudaHostRegister(m, size, cudaHostRegisterMapped));
    uint8_t *dregion = nullptr;
    CK(cudaHostGetDevicePointer(reinterpret_cast<void **>(&dregion), m, 0));
    std::vector<uint8_t> host_disk(kCheckBytes);
    if (pread(disk_fd, host_disk.data(), kCheckBytes, 0) != static_cast<ssize_t>(kCheckBytes)) {
        std::perror("agent_gpu: namespace file");
        return 2;
    }
    uint8_t *ddisk = nullptr;
    CK(cudaMalloc(&ddisk, kCheckBytes));
    CK(cudaMemcpy(ddisk, host_disk.data(), kCheckBytes, cudaMemcpyHostToDevice));
    int failures = 0;
    // each pair's agent state (tails, heads, phases), kept across the kernels
    std::vector<QueuePair> hs;
    for (const Layout &l : ls) {  // read through the host mapping, then pointed at the device's
        QueuePair q = resume_pair(static_cast<uint8_t *>(m) + l.region, l);
        q.base = dregion + l.region;
        hs.push_back(q);
    }
    QueuePair *dstates = nullptr;
    CK(cudaMalloc(&dstates, hs.size() * sizeof(QueuePair)));
    CK(cudaMemcpy(dstates, hs.data(), hs.size() * sizeof(QueuePair), cudaMemcpyHostToDevice));

    CheckResult *dr = nullptr, r{};
    CK(cudaMalloc(&dr, sizeof(CheckResult)));
    CK(cudaMemset(dr, 0, sizeof(CheckResult)));
    check<<<1, 1>>>(dregion + ls[0].region, ls[0], dstates, slm, ddisk, dr);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    CK(cudaMemcpy(&r, dr, sizeof(r), cudaMemcpyDeviceToHost));
    auto line = [&](bool ok, const char *fmt, int a, int b) {
        std::printf("%s ", ok ? "ok  " : "FAIL");
        std::printf(fmt, a, b);
        std::printf("\n");
        failures += !ok;
    };
    line(r.reads_ok == r.reads && r.reads == 32, "GPU kernel: %d of %d random Reads (4-16 KiB) equal the namespace's bytes (compared on the GPU)", r.reads_ok, r.reads);
    line(r.slm_ok == 1, "GPU kernel: SLM Write of 64 KiB made on the GPU, SLM Read back, equal on the GPU (%d/%d)", r.slm_ok, 1);
    line(r.execs_ok == r.execs && r.execs == 16, "GPU kernel: %d of %d Executes (CRC-32C of 4 KiB of SLM) equal the CRC computed on the GPU", r.execs_ok, r.execs);
    line(r.bad_ok == r.bad && r.bad == 9, "GPU kernel: %d of %d bad SQEs answered with the expected error completion", r.bad_ok, r.bad);
    std::printf("     statuses:");
    for (int i = 0; i < r.bad && i < 16; i++) std::printf(" 0x%x", r.bad_status[i]);
    std::printf("\n");
    line(r.after_ok == 1, "GPU kernel: a good Read after them completes and is equal (%d/%d)", r.after_ok, 1);

    for (const uint32_t bytes : n ? sizes : std::vector<uint32_t>{}) {
        Layout *dls = nullptr;
        unsigned long long *dc = nullptr, c[3] = {};
        CK(cudaMalloc(&dls, ls.size() * sizeof(Layout)));
        CK(cudaMemcpy(dls, ls.data(), ls.size() * sizeof(Layout), cudaMemcpyHostToDevice));
        CK(cudaMalloc(&dc, sizeof(c)));
        CK(cudaMemset(dc, 0, sizeof(c)));
        const auto t0 = std::chrono::steady_clock::now();
        rate<<<static_cast<unsigned>(ls.size()), 32>>>(dregion, dls, dstates, static_cast<uint32_t>(ls.size()), n, bytes, ddisk, dc);
        CK(cudaGetLastError());
        CK(cudaDeviceSynchronize());
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        CK(cudaMemcpy(c, dc, sizeof(c), cudaMemcpyDeviceToHost));
        std::printf("rate: %zu queue pair(s), %llu Reads of %u B in %.3f s: %.0f commands/s, %.1f MB/s; %llu failed, "
                    "%llu differ (compared on the GPU)\n",
                    ls.size(), c[0], bytes, s, c[0] / s, c[0] * double(bytes) / s / 1e6, c[1], c[2]);
        line(c[0] == n * ls.size() && !c[1] && !c[2], "GPU kernels: every Read of the rate run completed and is equal (%d pairs, %d)", static_cast<int>(ls.size()), 0);
        CK(cudaFree(dls));
        CK(cudaFree(dc));
    }
    CK(cudaFree(dr));
    CK(cudaFree(dstates));
    CK(cudaFree(ddisk));
    CK(cudaHostUnregister(m));
    munmap(m, size);
    std::printf("agent_gpu: %s\n", failures ? "FAILED" : "ok");
    return failures ? 1 : 0;
}
