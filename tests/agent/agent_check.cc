// SPDX-License-Identifier: MIT
// csd-agent-check - the CPU agent: drives, from the host, the queue pair csd.ko created in
// the guest for an agent (CSD_IOC_AGENT_QUEUE) through the peer's memory file, with the
// agent code a CUDA kernel uses too (host/agent/csd_agent.hpp), and checks what the
// emulated controller in QEMU answers:
//   reads     namespace Reads at random LBAs, each compared with the namespace's host file
//   slm       SLM Write of a pattern (PRP list), SLM Read back into another buffer
//   execute   Execute of the checksum program (CRC-32C) over SLM, its result against ours
//   bad       bad SQEs: data or a PRP list outside the region, an unknown opcode, a bad
//             NSID, LBAs past the end, SLM out of bounds, a shadow tail beyond the queue:
//             each an error completion (or ignored), and the queue pair works after them
//   rate N    N 4 KiB Reads kept depth - 1 deep; prints commands per second
//   silent    nothing completes within 2 s (the controller was reset: the pair is gone)
//   detached  a Read of the namespace completes with an error (it is detached meanwhile)
// Usage: csd-agent-check PEER_FILE DISK_FILE SLM_OFFSET LAYOUT STEP...
//   LAYOUT: region,len,bus,sq,cq,db,data,depth,nsid,lba_size,qid (as kmod_check agent prints)
// Prints 'agent-check: N passed, N failed'; exits 1 on any failure.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "../../host/agent/csd_agent.hpp"
#include "csd_crc32c.h"

using namespace csd::agent;
using csd::NvmeSqe;

namespace {

int passed = 0, failed = 0;

// Counts and prints one check.
void expect(bool ok, const std::string &what)
{
    (ok ? passed : failed)++;
    std::printf("%s %s\n", ok ? "ok  " : "FAIL", what.c_str());
    std::fflush(stdout);
}

// The pair, its mapping and the namespace's file.
struct Agent {
    Layout l;
    QueuePair q;
    uint8_t *region = nullptr;
    int disk = -1;
    uint64_t slm = 0;
    // data area: two PRP list pages, buffers A and B (64 KiB each), a descriptor page
    uint64_t list0() const { return l.data_offset; }
    uint64_t list1() const { return l.data_offset + kPage; }
    uint64_t buf_a() const { return l.data_offset + 2 * kPage; }
    uint64_t buf_b() const { return buf_a() + (64 << 10); }
    uint64_t desc() const { return buf_b() + (64 << 10); }
    uint64_t slots() const { return desc() + kPage; }
    uint8_t *at(uint64_t off) const { return region + off; }
};

// Submits one command and waits up to two seconds for its completion.
bool run(Agent &a, NvmeSqe e, Completion *c, double wait_s = 2.0)
{
    const uint16_t cid = e.cid = static_cast<uint16_t>(a.q.sq_tail);  // one outstanding at a time
    push(a.q, a.l, e);
    ring(a.q, a.l);
    const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(wait_s);
    while (std::chrono::steady_clock::now() < end) {
        if (poll(a.q, a.l, c)) {
            if (c->cid != cid) std::printf("  completion for cid %u, wanted %u\n", c->cid, cid);
            return c->cid == cid;
        }
    }
    return false;
}

// A status as 0x...
std::string hex(uint32_t v)
{
    char b[16];
    std::snprintf(b, sizeof(b), "0x%x", v);
    return b;
}

// reads: random Reads compared with the namespace's host file.
void step_reads(Agent &a)
{
    std::mt19937_64 rng(44);
    const uint64_t lbas = (16u << 20) / a.l.lba_size;
    int good = 0, n = 32;
    for (int i = 0; i < n; i++) {
        const uint32_t nlb = static_cast<uint32_t>((i % 4 + 1) * kPage / a.l.lba_size);  // 4 to 16 KiB
        const uint64_t slba = rng() % (lbas - nlb);
        const uint64_t bytes = uint64_t(nlb) * a.l.lba_size;
        std::memset(a.at(a.buf_a()), 0xA5, bytes);
        NvmeSqe e = read_sqe(a.l.nsid, slba, nlb);
        set_prps(a.q, e, a.buf_a(), bytes, a.list0());
        Completion c;
        std::vector<uint8_t> want(bytes);
        if (!run(a, e, &c) || c.status) {
            std::printf("  read %d: %s\n", i, c.status ? hex(c.status).c_str() : "no completion");
            continue;
        }
        if (pread(a.disk, want.data(), bytes, slba * a.l.lba_size) != static_cast<ssize_t>(bytes)) continue;
        good += std::memcmp(want.data(), a.at(a.buf_a()), bytes) == 0;
    }
    expect(good == n, "reads: " + std::to_string(good) + " of " + std::to_string(n) +
                          " random Reads (4-16 KiB, PRP lists) equal the namespace's host file");
}

// n pseudo-random bytes from seed.
void fill(uint8_t *p, uint64_t n, uint32_t seed)
{
    std::mt19937 rng(seed);
    for (uint64_t i = 0; i < n; i++) p[i] = static_cast<uint8_t>(rng());
}

// slm: SLM Write of a pattern, SLM Read back, compared.
void step_slm(Agent &a)
{
    const uint32_t n = 64 << 10;
    fill(a.at(a.buf_a()), n, 7);
    std::memset(a.at(a.buf_b()), 0, n);
    Completion c;
    NvmeSqe w = slm_sqe(true, a.l.nsid, a.slm, n);
    set_prps(a.q, w, a.buf_a(), n, a.list0());
    expect(run(a, w, &c) && c.status == 0, "slm: SLM Write of 64 KiB (PRP list) completes with Success");
    NvmeSqe r = slm_sqe(false, a.l.nsid, a.slm, n);
    set_prps(a.q, r, a.buf_b(), n, a.list1());
    expect(run(a, r, &c) && c.status == 0, "slm: SLM Read of it back completes with Success");
    expect(std::memcmp(a.at(a.buf_a()), a.at(a.buf_b()), n) == 0, "slm: the bytes read back are the bytes written");
}

// execute: CRC-32C of SLM by the checksum program against ours.
void step_execute(Agent &a)
{
    const uint32_t n = 64 << 10;
    fill(a.at(a.buf_a()), n, 7);  // what step_slm put into SLM
    int good = 0;
    for (uint32_t i = 0; i < 16; i++) {
        csd_desc_range r{a.slm + i * 4096ull, 4096};
        const uint32_t algo = CSD_CKSUM_CRC32C;
        csd_desc_encode(a.at(a.desc()), CSD_PROG_CHECKSUM, 1, &r, &algo, 4);
        NvmeSqe e = execute_sqe(a.l.nsid, static_cast<uint32_t>(csd_desc_size(1, 4)));
        set_prps(a.q, e, a.desc(), kPage, a.list0());
        Completion c;
        if (run(a, e, &c) && c.status == 0 && c.dw0 == csd_crc32c(a.at(a.buf_a()) + i * 4096ull, 4096)) good++;
    }
    expect(good == 16, "execute: " + std::to_string(good) + " of 16 Executes (CRC-32C of 4 KiB of SLM) give our CRC");
}

// One bad command: its completion's status code (type and code) must be want.
void bad(Agent &a, NvmeSqe e, uint16_t want, const std::string &what)
{
    Completion c;
    const bool done = run(a, e, &c);
    expect(done && CSD_STATUS_CODE(c.status) == want,
           "bad: " + what + " -> " + (done ? hex(c.status) : "no completion") + " (want " + hex(want) + ")");
}

// bad: bad SQEs answered with error completions; the pair works after them.
void step_bad(Agent &a)
{
    const uint64_t guest_ram = 0x100000;  // guest RAM, outside the region
    uint8_t *canary = a.at(a.buf_b());
    std::memset(canary, 0x5C, 8192);
    NvmeSqe e = read_sqe(a.l.nsid, 0, 8);
    e.prp1 = guest_ram;
    bad(a, e, CSD_STATUS_DATA_TRANSFER_ERROR, "Read into guest RAM (PRP1 outside the region)");
    e = read_sqe(a.l.nsid, 0, static_cast<uint32_t>(8192 / a.l.lba_size));
    e.prp1 = bus_of(a.q, a.buf_b());
    e.prp2 = a.q.bus + a.q.len;  // the page after the region
    bad(a, e, CSD_STATUS_DATA_TRANSFER_ERROR, "Read whose second page lies past the region");
    e = read_sqe(a.l.nsid, 0, static_cast<uint32_t>(16384 / a.l.lba_size));
    set_prps(a.q, e, a.buf_b(), 16384, a.list0());
    reinterpret_cast<volatile uint64_t *>(a.at(a.list0()))[1] = guest_ram;  // list entry outside
    bad(a, e, CSD_STATUS_DATA_TRANSFER_ERROR, "Read with a PRP list entry in guest RAM");
    e = read_sqe(a.l.nsid, 0, static_cast<uint32_t>(16384 / a.l.lba_size));
    e.prp1 = bus_of(a.q, a.buf_b());
    e.prp2 = guest_ram;  // the list itself outside
    bad(a, e, CSD_STATUS_DATA_TRANSFER_ERROR, "Read with its PRP list in guest RAM");
    e = slm_sqe(true, a.l.nsid, a.slm, 4096);
    e.prp1 = guest_ram;
    bad(a, e, CSD_STATUS_DATA_TRANSFER_ERROR, "SLM Write from guest RAM");
    expect(canary[0] == 0x5C && canary[8191] == 0x5C, "bad: the refused Reads moved no byte into the region");
    e = read_sqe(a.l.nsid, 0, 1);
    e.opcode = 0xFF;
    set_prps(a.q, e, a.buf_a(), a.l.lba_size, a.list0());
    bad(a, e, CSD_STATUS_INVALID_OPCODE, "opcode FFh");
    e.opcode = 0x7E;
    bad(a, e, CSD_STATUS_INVALID_OPCODE, "opcode 7Eh");
    e = read_sqe(0x77, 0, 1);
    set_prps(a.q, e, a.buf_a(), a.l.lba_size, a.list0());
    bad(a, e, CSD_STATUS_INVALID_FIELD, "Read of NSID 77h (no such namespace: QEMU's Invalid Field)");
    e.nsid = 0x1000;
    bad(a, e, CSD_STATUS_INVALID_NAMESPACE, "Read of NSID 1000h (past the controller's NSIDs)");
    e.nsid = 0;
    bad(a, e, CSD_STATUS_INVALID_NAMESPACE, "Read of NSID 0");
    e = slm_sqe(false, 0xFFFFFFFF, a.slm, 4096);
    set_prps(a.q, e, a.buf_a(), 4096, a.list0());
    bad(a, e, CSD_STATUS_INVALID_NAMESPACE, "SLM Read of the broadcast NSID");
    e = read_sqe(a.l.nsid, 1ull << 40, 1);
    set_prps(a.q, e, a.buf_a(), a.l.lba_size, a.list0());
    bad(a, e, CSD_STATUS_LBA_OUT_OF_RANGE, "Read at LBA 2^40");
    e = slm_sqe(false, a.l.nsid, 1ull << 40, 4096);
    set_prps(a.q, e, a.buf_a(), 4096, a.list0());
    bad(a, e, CSD_STATUS_SLM_OUT_OF_BOUNDS, "SLM Read at 1 TiB");
    e = execute_sqe(a.l.nsid, 64);
    std::memset(a.at(a.desc()), 0xEE, 64);
    set_prps(a.q, e, a.desc(), kPage, a.list0());
    bad(a, e, CSD_STATUS_INVALID_DESCRIPTOR, "Execute of a garbage descriptor");

    // a hostile shadow tail (beyond the queue) is ignored: nothing is fetched meanwhile
    Completion c;
    ring_raw(a.q, a.l, a.q.depth + 5);
    usleep(300000);
    expect(!poll(a.q, a.l, &c), "bad: a shadow SQ tail beyond the queue is ignored (no completion)");
    ring_raw(a.q, a.l, 0xFFFFFFFF);
    usleep(300000);
    expect(!poll(a.q, a.l, &c), "bad: a shadow SQ tail of FFFFFFFFh is ignored");
    // and a good command afterwards works
    e = read_sqe(a.l.nsid, 0, 1);
    set_prps(a.q, e, a.buf_a(), a.l.lba_size, a.list0());
    expect(run(a, e, &c) && c.status == 0, "bad: after them a good Read completes with Success");
}

// rate N: N random 4 KiB Reads kept deep, each compared; commands per second.
void step_rate(Agent &a, uint64_t n)
{
    const uint32_t nlb = static_cast<uint32_t>(kPage / a.l.lba_size);
    const uint64_t lbas = (16u << 20) / a.l.lba_size;
    const uint64_t room = (a.l.len - a.slots()) / kPage;
    const uint32_t depth = static_cast<uint32_t>(std::min<uint64_t>(a.q.depth - 1, room));
    std::vector<uint16_t> free_ids;  // a command's cid names its data buffer: completions come in any order
    for (uint32_t i = 0; i < depth; i++) free_ids.push_back(static_cast<uint16_t>(i));
    std::vector<uint64_t> lba_of(depth);
    std::vector<uint8_t> want(kPage);
    std::mt19937_64 rng(1);
    uint64_t sent = 0, done = 0, errors = 0, wrong = 0;
    const auto t0 = std::chrono::steady_clock::now();
    while (done < n) {
        bool rang = false;
        while (!free_ids.empty() && sent < n) {
            NvmeSqe e = read_sqe(a.l.nsid, (rng() % (lbas / nlb)) * nlb, nlb);
            e.cid = free_ids.back();
            free_ids.pop_back();
            e.prp1 = bus_of(a.q, a.slots() + uint64_t(e.cid) * kPage);
            lba_of[e.cid] = (uint64_t(e.cdw11) << 32 | e.cdw10);
            push(a.q, a.l, e);
            sent++, rang = true;
        }
        if (rang) ring(a.q, a.l);
        Completion c;
        while (poll(a.q, a.l, &c)) {
            done++;
            errors += c.status != 0;
            if (c.cid >= depth) {
                errors++;
                continue;
            }
            if (!c.status && pread(a.disk, want.data(), kPage, lba_of[c.cid] * a.l.lba_size) == static_cast<ssize_t>(kPage))
                wrong += std::memcmp(want.data(), a.at(a.slots() + uint64_t(c.cid) * kPage), kPage) != 0;
            free_ids.push_back(c.cid);
        }
        if (std::chrono::steady_clock::now() - t0 > std::chrono::seconds(60)) break;
    }
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("rate: %" PRIu64 " 4 KiB Reads, %u deep, in %.3f s: %.0f commands/s (CPU agent, QEMU under TCG)\n",
                done, depth, s, done / s);
    expect(done == n && errors == 0 && wrong == 0,
           "rate: every Read completed with Success and equals the namespace's host file (" + std::to_string(wrong) +
               " differ)");
}

// detached: a Read of the detached namespace completes with an error, and nothing else.
void step_detached(Agent &a)
{
    NvmeSqe e = read_sqe(a.l.nsid, 0, 1);
    set_prps(a.q, e, a.buf_a(), a.l.lba_size, a.list0());
    Completion c;
    const bool done = run(a, e, &c);
    expect(done && c.status != 0, "detached: a Read of the detached namespace -> " +
                                      (done ? hex(c.status) : std::string("no completion")));
}

// silent: no completion comes (the pair is gone after a controller reset).
void step_silent(Agent &a)
{
    NvmeSqe e = read_sqe(a.l.nsid, 0, 1);
    set_prps(a.q, e, a.buf_a(), a.l.lba_size, a.list0());
    Completion c;
    expect(!run(a, e, &c), "silent: after the reset the pair is gone: no completion");
}


}  // namespace

int main(int argc, char **argv)
{
    Agent a;
    if (argc < 6 || !parse_layout(argv[4], a.l) || a.l.len <= a.l.data_offset + (200u << 10)) {
        std::fprintf(stderr, "usage: csd-agent-check PEER_FILE DISK_FILE SLM_OFFSET LAYOUT STEP...\n");
        return 2;
    }
    a.slm = std::strtoull(argv[3], nullptr, 0);
    const int fd = open(argv[1], O_RDWR);
    a.disk = open(argv[2], O_RDONLY);
    if (fd < 0 || a.disk < 0) {
        std::perror("open");
        return 2;
    }
    void *m = mmap(nullptr, a.l.len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, static_cast<off_t>(a.l.region));
    if (m == MAP_FAILED) {
        std::perror("mmap");
        return 2;
    }
    a.region = static_cast<uint8_t *>(m);
    a.q = resume_pair(a.region, a.l);  // a pair an earlier run of this program drove goes on
    for (int i = 5; i < argc; i++) {
        const std::string s = argv[i];
        if (s == "reads") step_reads(a);
        else if (s == "slm") step_slm(a);
        else if (s == "execute") step_execute(a);
        else if (s == "bad") step_bad(a);
        else if (s == "silent") step_silent(a);
        else if (s == "detached") step_detached(a);
        else if (s == "rate" && i + 1 < argc) step_rate(a, std::strtoull(argv[++i], nullptr, 0));
        else {
            std::fprintf(stderr, "unknown step %s\n", s.c_str());
            return 2;
        }
    }
    std::printf("agent-check: %d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
