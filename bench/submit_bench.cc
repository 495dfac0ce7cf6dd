// SPDX-License-Identifier: MIT
// submit_bench: what one worst-case media Execute costs the thread that submits it and the
// memory that Executes waiting for a compute unit hold (issue 40 item 3), through the core's
// C ABI as QEMU's glue calls it: csd_core_submit on the calling thread (QEMU: its main loop,
// under the BQL), a port whose namespace reads end at once and whose worker jobs
// (port->run) wait until the bench releases them, so that the core's one compute unit stays
// taken and the other Executes wait.
//
// Usage: submit_bench CASE SLM QUEUED [RSS_BUDGET_MIB]
//   CASE    emb: an embedding_bag of the most i32 indices that fit SLM (one bag, 4 f32 a
//           row, 4 Mi random rows: 64 MiB of table, the drive's per-Execute stage);
//           gather: a gather of the most 1-byte entries that fit SLM (random blocks of the
//           same 64 MiB)
//   SLM     bytes of SLM (64M, 1G)
//   QUEUED  Executes submitted: the first takes the unit, the others wait, then all run
//           (0: until the drive refuses one, at most 5000; then the waiting ones are
//           cancelled, csd_core_cancel, and only the first runs)
//   RSS_BUDGET_MIB  stop submitting once the process holds this much more than before the
//           first submission (default 6144): the bench, not the core, keeps the machine alive
// One line: the case, the submit time of each Execute on this thread (first, median, max),
// the RSS the waiting ones hold, the peak RSS once all ran, and their statuses. Built by meson
// against this tree's core; bench/submit-before-after.sh also builds it against another
// commit's core, so that both are measured in one run.
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <string>
#include <vector>

#include "csd_core.h"

namespace {

// One Execute: its descriptor (host memory) and its final status.
struct Req {
    std::vector<uint8_t> desc;
    int status = -1;  // -1 while under way
};

// The port's worker jobs (port->run), held until the bench runs them.
struct Job {
    int (*work)(void *);
    void (*done)(void *, int);
    void *arg;
};
std::deque<Job> g_jobs;

// The command's host memory: its descriptor.
uint16_t from_host(void *req, void *buf, uint64_t len)
{
    auto *r = static_cast<Req *>(req);
    if (len > r->desc.size()) return 0x0002 | 0x4000;  // Invalid Field, DNR
    std::memcpy(buf, r->desc.data(), len);
    return 0;
}

// Answers go nowhere: the bench reads SLM itself.
uint16_t to_host(void *, const void *, uint64_t) { return 0; }

// One namespace of 2^24 LBAs of 512 bytes (8 GiB, never stored: reads are made up).
int ns_info(void *, uint32_t nsid, csd_ctx *ctx)
{
    if (nsid != 1) return -1;
    *ctx = csd_ctx{};
    ctx->lba_count = 1ull << 24;
    ctx->lba_size = 512;
    ctx->max_transfer = 8u << 20;
    return 0;
}

// No timing model: any clock.
uint64_t now_ns(void *) { return 0; }

// A read ends at once with bytes that depend on the offset; a write too (nothing is stored).
void ns_io(void *, uint32_t, int write, uint64_t off, void *buf, uint64_t len, csd_io_done done, void *arg)
{
    if (!write) std::memset(buf, static_cast<int>((off >> 9) & 0xFF), len);
    done(arg, 0);
}

// Keeps an Execute's final status.
void complete(void *req, uint16_t status, const csd_cpl *) { static_cast<Req *>(req)->status = status; }

// Holds a worker job until the bench releases the unit.
void run(void *, int (*work)(void *), void (*done)(void *, int), void *arg) { g_jobs.push_back({work, done, arg}); }

// kB of a /proc/self/status field (VmRSS, VmHWM).
long status_kb(const char *field)
{
    FILE *f = std::fopen("/proc/self/status", "r");
    char line[256];
    long v = -1;
    while (f && std::fgets(line, sizeof line, f)) {
        if (std::strncmp(line, field, std::strlen(field)) == 0) v = std::atol(line + std::strlen(field) + 1);
    }
    if (f) std::fclose(f);
    return v;
}

// Seconds of the monotonic clock.
double now_s()
{
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// '64M', '1G', '4096' as bytes.
uint64_t parse_size(const char *s)
{
    char *end;
    uint64_t v = std::strtoull(s, &end, 10);
    switch (*end) {
    case 'G': return v << 30;
    case 'M': return v << 20;
    case 'K': return v << 10;
    default: return v;
    }
}

// An Execute descriptor (command set section 4).
std::vector<uint8_t> descriptor(uint16_t program, const std::vector<csd_desc_range> &r, const void *p, uint32_t plen)
{
    std::vector<uint8_t> d(csd_desc_size(static_cast<uint32_t>(r.size()), plen));
    csd_desc_encode(d.data(), program, static_cast<uint16_t>(r.size()), r.data(), p, plen);
    return d;
}

// xorshift64*: fast numbers for hundreds of millions of indices.
uint64_t next(uint64_t &s)
{
    s ^= s >> 12;
    s ^= s << 25;
    s ^= s >> 27;
    return s * 0x2545F4914F6CDD1Dull;
}

}  // namespace

int main(int argc, char **argv)
{
    if (argc < 4) {
        std::fprintf(stderr, "usage: %s emb|gather SLM QUEUED [RSS_BUDGET_MIB]\n", argv[0]);
        return 2;
    }
    const std::string what = argv[1];
    const uint64_t slm_size = parse_size(argv[2]);
    const int queued = std::atoi(argv[3]);
    const long budget_kb = (argc > 4 ? std::atol(argv[4]) : 6144) * 1024;
    csd_core *core = csd_core_new(slm_size, 1);
    if (!core) {
        std::perror("csd_core_new");
        return 1;
    }
    uint8_t *slm = csd_core_slm_base(core);
    uint64_t seed = 0x9E3779B97F4A7C15ull;
    const uint64_t stage_blocks = (64ull << 20) / 512;  // the blocks a plan may read: 64 MiB
    std::vector<uint8_t> desc;
    uint64_t items = 0;
    if (what == "emb") {
        // indices [0, 4n), offsets (one bag: 0), out 16 bytes: the last 4 KiB of SLM
        items = (slm_size - 4096) / 4;
        auto *idx = reinterpret_cast<int32_t *>(slm);
        const uint64_t rows = stage_blocks * 512 / 16;  // 4 f32 a row
        for (uint64_t i = 0; i < items; i++) idx[i] = static_cast<int32_t>(next(seed) % rows);
        const uint64_t tail = slm_size - 4096;
        std::memset(slm + tail, 0, 4);
        csd_embedding_bag_params p{};
        p.table_lba = 0;
        p.num_rows = rows;
        p.row_dim = 4;
        p.dtype = CSD_EMB_F32;
        p.mode = CSD_EMB_SUM;
        p.index_type = CSD_EMB_I32;
        p.num_bags = 1;
        desc = descriptor(CSD_PROG_EMBEDDING_BAG, {{0, items * 4}, {tail, 4}, {tail, 0}, {tail + 64, 16}}, &p, sizeof p);
    } else if (what == "gather") {
        // entries [0, 16n), out [16n, 17n): 1 byte from a random block of 64 MiB each
        items = slm_size / 17;
        auto *e = reinterpret_cast<csd_gather_entry *>(slm);
        for (uint64_t i = 0; i < items; i++) {
            const uint64_t r = next(seed);
            e[i] = csd_gather_entry{r % stage_blocks, static_cast<uint32_t>((r >> 32) % 512), 1};
        }
        csd_gather_params p{static_cast<uint32_t>(items), 0};
        desc = descriptor(CSD_PROG_GATHER, {{0, items * 16}, {items * 16, items}}, &p, sizeof p);
    } else {
        std::fprintf(stderr, "submit_bench: unknown case '%s' (emb, gather)\n", what.c_str());
        return 2;
    }
    csd_port port{};
    port.from_host = from_host;
    port.to_host = to_host;
    port.ns_info = ns_info;
    port.now_ns = now_ns;
    port.max_transfer = 8u << 20;
    port.max_nsid = 1;
    port.ns_io = ns_io;
    port.complete = complete;
    port.run = run;

    const long rss0 = status_kb("VmRSS:");  // SLM filled, nothing submitted
    const int limit = queued > 0 ? queued : 5000;
    std::vector<Req *> reqs;
    std::vector<double> ms;
    std::map<uint16_t, int> refused;  // answered at once: status -> count
    std::string stopped = queued > 0 ? "as asked" : "at 5000";
    for (int i = 0; i < limit; i++) {
        if (status_kb("VmRSS:") - rss0 > budget_kb) {
            stopped = "at the RSS budget";
            break;
        }
        auto *r = new Req{desc};
        csd_sqe sqe{};
        sqe.cmd.opcode = CSD_OPC_EXECUTE;
        sqe.cmd.nsid = 1;
        sqe.cmd.cdw10 = static_cast<uint32_t>(desc.size());
        csd_cpl cpl{};
        csd_op op{};
        const double t0 = now_s();
        const uint16_t st = csd_core_submit(core, &sqe, &port, r, &cpl, &op);
        ms.push_back((now_s() - t0) * 1e3);
        if (st != CSD_CORE_LATER) {
            r->status = st;
            refused[st]++;
            reqs.push_back(r);
            if (queued == 0) {
                stopped = std::string("refused: ") + csd_status_name(st);
                break;
            }
            continue;
        }
        reqs.push_back(r);
    }
    const long held_kb = status_kb("VmRSS:") - rss0;
    if (queued == 0) {
        for (size_t i = 1; i < reqs.size(); i++) {
            if (reqs[i]->status < 0) csd_core_cancel(core, reqs[i]);  // a waiting one ends at once
        }
    }
    // Release the unit: every job runs, one after another, on this thread.
    const double t_run = now_s();
    while (!g_jobs.empty()) {
        Job j = g_jobs.front();
        g_jobs.pop_front();
        j.done(j.arg, j.work(j.arg));
    }
    const double run_s = now_s() - t_run;
    const long peak_kb = status_kb("VmHWM:") - rss0;
    std::map<std::string, int> statuses;
    for (Req *r : reqs) statuses[r->status < 0 ? "not completed" : csd_status_name(static_cast<uint16_t>(r->status))]++;
    std::vector<double> sorted(ms);
    std::sort(sorted.begin(), sorted.end());
    std::printf("%s of %llu SLM %llu MiB: submitted %zu (%s); submit ms first %.3f median %.3f max %.3f; "
                "waiting hold %.0f MiB; peak +%.0f MiB; ran in %.1f s;",
                what.c_str(), static_cast<unsigned long long>(items),
                static_cast<unsigned long long>(slm_size >> 20), ms.size(), stopped.c_str(), ms.empty() ? 0 : ms[0],
                sorted.empty() ? 0 : sorted[sorted.size() / 2], sorted.empty() ? 0 : sorted.back(), held_kb / 1024.0,
                peak_kb / 1024.0, run_s);
    for (const auto &[name, n] : statuses) std::printf(" %s x%d;", name.c_str(), n);
    std::printf("\n");
    for (Req *r : reqs) delete r;
    csd_core_free(core);
    return 0;
}
