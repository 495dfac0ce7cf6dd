// SPDX-License-Identifier: MIT
// bpf_bench: the same filter five ways inside the device core, one run, 256 MiB of 16-byte
// records, predicate "i32 key at byte 0 > threshold" (about 25% kept):
//   built-in filter (06h); the eBPF threshold.o JIT-compiled, in one Execute (the device
//   rewrites it for the Execute: bpf_specialise.h) and in Executes of fewer records than
//   the rewrite needs (the program as loaded, one call a record); the same interpreted; and
//   a native operator plug-in (bench/plugins/threshold_filter.c), the hand-written loop;
// then reduce (threshold.o) and map (project.o, two factors) modes against loops written here;
// plus Program Load latency of a 4 KiB and a 1 MiB image (threshold.o padded; decode,
// chunk copy, verify, JIT). A path only the emulator takes: no bus, no guest. Prints a
// markdown table (docs/perf.md), the load average beside it.
// Usage: bpf_bench [--quick] [--cpu-time] EXAMPLES_DIR PLUGIN_DIR   (--cpu-time: time runs by
// the thread's CPU time, not the wall clock, so that other processes on a shared machine
// count less; the Executes run on this thread)
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "core_calls.hpp"

namespace {

bool cpu_time = false;

// Seconds on the wall clock, or of this thread's CPU time with --cpu-time.
double now() { return bench::seconds(cpu_time); }

// The time f takes, by now().
double timed(const std::function<void()> &f)
{
    const double t0 = now();
    f();
    return now() - t0;
}

double best_of(int reps, const std::function<void()> &f)
{
    f();
    double best = 1e30;
    for (int i = 0; i < reps; i++) best = std::min(best, timed(f));
    return best;
}

// The 1-minute load average (the machine is shared: it says how noisy a run was).
double load_average()
{
    std::ifstream f("/proc/loadavg");
    double l = -1;
    f >> l;
    return l;
}

}  // namespace

int main(int argc, char **argv)
{
    bool quick = false;
    int arg = 1;
    for (; arg < argc && argv[arg][0] == '-'; arg++) {
        if (std::strcmp(argv[arg], "--quick") == 0) {
            quick = true;
        } else if (std::strcmp(argv[arg], "--cpu-time") == 0) {
            cpu_time = true;
        } else {
            break;
        }
    }
    if (argc != arg + 2) {
        std::fprintf(stderr, "usage: bpf_bench [--quick] [--cpu-time] EXAMPLES_DIR PLUGIN_DIR\n");
        return 2;
    }
    const std::string examples = argv[arg], plugins = argv[arg + 1];
    const uint64_t bytes = quick ? (32ull << 20) : (256ull << 20);
    const uint32_t n = static_cast<uint32_t>(bytes / 16);
    const int reps = quick ? 2 : 5;
    csd_core *core = csd_core_new(2 * bytes + (1 << 20), 1);
    char err[512];
    if (!core || csd_core_load_plugins(core, plugins.c_str(), err, sizeof err) != 0) {
        std::fprintf(stderr, "bpf_bench: %s\n", core ? err : "no core");
        return 1;
    }
    uint8_t *slm = csd_core_slm_base(core);
    std::mt19937 g(1);
    for (uint32_t i = 0; i < n; i++) {
        const int32_t key = static_cast<int32_t>(g() % 1000);
        std::memcpy(slm + 16ull * i, &key, 4);
        std::memcpy(slm + 16ull * i + 4, &i, 4);
    }
    const int64_t threshold = 749;
    const std::vector<csd_desc_range> r{{0, bytes}, {bytes, bytes}};
    uint32_t m_builtin = 0, m_jit = 0, m_interp = 0, m_plugin = 0;

    csd_filter_params fp{};
    fp.record_size = 16;
    fp.count = n;
    fp.field_type = CSD_FT_I32;
    fp.op = CSD_CMP_GT;
    std::memcpy(fp.lo, &threshold, 8);
    const auto d_builtin = bench::descriptor(CSD_PROG_FILTER, r, &fp, sizeof fp);

    const uint16_t slot = bench::load_program(core, bench::slurp(examples + "/threshold.o"), 0, 16);
    uint8_t bp[24];
    const uint32_t hdr[4] = {n, CSD_BPF_FILTER, 1, 0};
    std::memcpy(bp, hdr, 16);
    std::memcpy(bp + 16, &threshold, 8);
    const auto d_jit = bench::descriptor(slot, r, bp, sizeof bp);

    struct {
        uint32_t count, reserved;
        int64_t threshold;
    } pp{n, 0, threshold};
    const auto d_plugin = bench::descriptor(0x41, r, &pp, sizeof pp);

    // The program as loaded: the same records in Executes of fewer than the device's
    // threshold for rewriting a program (16384 records), one after the other.
    const uint32_t piece = 16383;
    std::vector<std::vector<uint8_t>> d_pieces;
    for (uint32_t first = 0; first < n; first += piece) {
        const uint32_t cnt = std::min(piece, n - first);
        const uint32_t ph[4] = {cnt, CSD_BPF_FILTER, 1, 0};
        uint8_t pp8[24];
        std::memcpy(pp8, ph, 16);
        std::memcpy(pp8 + 16, &threshold, 8);
        // each piece's kept records after the previous pieces' (at most as many bytes)
        d_pieces.push_back(bench::descriptor(slot, {{16ull * first, 16ull * cnt}, {bytes + 16ull * first, 16ull * cnt}}, pp8, sizeof pp8));
    }
    uint32_t m_pieces = 0;
    auto run_pieces = [&] {
        m_pieces = 0;
        for (const auto &d : d_pieces) {
            uint32_t m = 0;
            bench::execute(core, d, &m);
            m_pieces += m;
        }
    };

    // Built-in, JIT (both ways) and plug-in interleaved run by run (a busy machine slows
    // them alike), best of reps each; the interpreter after them.
    const double load_start = load_average();
    double t_builtin = 1e30, t_jit = 1e30, t_loaded = 1e30, t_plugin = 1e30;
    for (int i = 0; i <= reps; i++) {  // run 0 warms up
        const double b = timed([&] { bench::execute(core, d_builtin, &m_builtin); });
        const double j = timed([&] { bench::execute(core, d_jit, &m_jit); });
        const double l = timed(run_pieces);
        const double p = timed([&] { bench::execute(core, d_plugin, &m_plugin); });
        if (i == 0) continue;
        t_builtin = std::min(t_builtin, b);
        t_jit = std::min(t_jit, j);
        t_loaded = std::min(t_loaded, l);
        t_plugin = std::min(t_plugin, p);
    }
    csd_core_set_bpf_interpreted(core, 1);
    const double t_interp = best_of(quick ? 1 : 2, [&] { bench::execute(core, d_jit, &m_interp); });
    csd_core_set_bpf_interpreted(core, 0);
    const double load_end = load_average();

    if (m_builtin != m_jit || m_jit != m_interp || m_interp != m_plugin || m_pieces != m_jit) {
        std::fprintf(stderr, "bpf_bench: the five disagree: %u %u %u %u %u matches\n", m_builtin, m_jit, m_pieces,
                     m_interp, m_plugin);
        return 1;
    }
    const double gb = bytes / 1e9;
    std::printf("filter over %llu MiB of 16-byte records, i32 key at byte 0 > %lld, %u of %u kept; best of %d, "
                "built-in, JIT (both) and plug-in interleaved run by run, one core, %s; load average %.1f at the "
                "start, %.1f at the end\n\n",
                static_cast<unsigned long long>(bytes >> 20), static_cast<long long>(threshold), m_jit, n, reps,
                cpu_time ? "timed by the thread's CPU time" : "timed by the wall clock", load_start, load_end);
    std::printf("| engine | GB/s | / native loop |\n|---|---|---|\n");
    auto row = [&](const char *what, double t, bool bold) {
        std::printf("| %s | %.2f | %s%.2f%s |\n", what, gb / t, bold ? "**" : "", t_plugin / t, bold ? "**" : "");
    };
    row("built-in filter (06h)", t_builtin, false);
    row("eBPF `threshold.o` JIT, one Execute (rewritten for it: batches of records a call; goal ≥ 0.6)", t_jit, true);
    row("eBPF `threshold.o` JIT as loaded (one call a record: Executes of 16 383 records)", t_loaded, false);
    row("eBPF `threshold.o` interpreted", t_interp, false);
    row("native plug-in 0041h (`bench/plugins/threshold_filter.c`): the hand-written loop", t_plugin, false);
    std::printf("\n");

    // The other modes, over the same records: reduce (threshold.o's answers summed: the
    // records kept) and map (project.o: field at byte 4 times params[0] plus the record's
    // index), each JIT-compiled in one Execute against the same work as a hand-written loop
    // in this process, interleaved run by run, best of reps; the answers compared.
    {
        const uint8_t *in = slm;
        uint8_t hr[24];
        const uint32_t rh[4] = {n, CSD_BPF_REDUCE, 1, 0};
        std::memcpy(hr, rh, 16);
        std::memcpy(hr + 16, &threshold, 8);
        const auto d_reduce = bench::descriptor(slot, {{0, bytes}, {bytes, 0}}, hr, sizeof hr);
        const uint16_t pslot = bench::load_program(core, bench::slurp(examples + "/project.o"), 0, 16);
        // factor 3 (the rewrite multiplies by it with a shift and an add, as a compiler
        // would for a constant) and 1000003 (a multiplication: DPDK's JIT emits mul with
        // rax and rdx saved and restored around it)
        const uint64_t factors[2] = {3, 1000003};
        std::vector<std::vector<uint8_t>> d_map;
        for (const uint64_t factor : factors) {
            uint8_t hm[24];
            const uint32_t mh[4] = {n, CSD_BPF_MAP, 1, 0};
            std::memcpy(hm, mh, 16);
            std::memcpy(hm + 16, &factor, 8);
            d_map.push_back(bench::descriptor(pslot, {{0, bytes}, {bytes, 8ull * n}}, hm, sizeof hm));
        }
        std::vector<uint64_t> loop_out(n);
        volatile int64_t vt = threshold;  // a parameter to the loop, as to the program
        volatile uint64_t vf[2] = {factors[0], factors[1]};
        uint64_t sum_prog = 0, sum_loop = 0;
        bool map_agrees = true;
        double t_rp = 1e30, t_rl = 1e30, t_mp[2] = {1e30, 1e30}, t_ml[2] = {1e30, 1e30};
        for (int i = 0; i <= reps; i++) {
            uint32_t hi = 0;
            const double rp = timed([&] { sum_prog = bench::execute(core, d_reduce, &hi); });
            sum_prog |= uint64_t{hi} << 32;
            const double rl = timed([&] {
                const int64_t t = vt;
                uint64_t c = 0;
                for (uint32_t k = 0; k < n; k++) {
                    int32_t key;
                    std::memcpy(&key, in + 16ull * k, 4);
                    c += key > t;
                }
                sum_loop = c;
            });
            double mp[2], ml[2];
            for (int m = 0; m < 2; m++) {
                mp[m] = timed([&] { bench::execute(core, d_map[m]); });
                ml[m] = timed([&] {
                    const uint64_t f = vf[m];
                    for (uint32_t k = 0; k < n; k++) {
                        uint32_t field;
                        std::memcpy(&field, in + 16ull * k + 4, 4);
                        loop_out[k] = uint64_t{field} * f + k;
                    }
                });
                map_agrees = map_agrees && std::memcmp(slm + bytes, loop_out.data(), 8ull * n) == 0;
            }
            if (i == 0) continue;
            t_rp = std::min(t_rp, rp), t_rl = std::min(t_rl, rl);
            for (int m = 0; m < 2; m++) t_mp[m] = std::min(t_mp[m], mp[m]), t_ml[m] = std::min(t_ml[m], ml[m]);
        }
        if (sum_prog != sum_loop || sum_prog != m_jit || !map_agrees) {
            std::fprintf(stderr, "bpf_bench: reduce or map disagrees with its loop\n");
            return 1;
        }
        std::printf("| mode | eBPF JIT GB/s | loop GB/s | **JIT / loop** |\n|---|---|---|---|\n");
        std::printf("| reduce: `threshold.o`'s answers summed (rewritten: batches of records a call, summed in a register) | %.2f | %.2f | **%.2f** |\n",
                    gb / t_rp, gb / t_rl, t_rl / t_rp);
        for (int m = 0; m < 2; m++) {
            std::printf("| map: `project.o`, field × %llu + index (rewritten: batches of records a call, answers stored in a scratch batch) | %.2f | %.2f | **%.2f** |\n",
                        static_cast<unsigned long long>(factors[m]), gb / t_mp[m], gb / t_ml[m], t_ml[m] / t_mp[m]);
        }
        std::printf("\n");
        bench::unload_program(core, pslot);
    }

    // Program Load latency: decode, chunk, verify and JIT, for padded images.
    auto image = bench::slurp(examples + "/threshold.o");
    for (size_t size : {size_t{4096}, size_t{1} << 20}) {
        std::vector<uint8_t> img = image;
        img.resize(size, 0);  // bytes after the ELF's sections are ignored by the loader
        std::vector<double> us;
        for (int i = 0; i < (quick ? 5 : 21); i++) {
            const auto t0 = std::chrono::steady_clock::now();
            const uint16_t s = bench::load_program(core, img, 0x1F0, 16);
            us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
            bench::unload_program(core, s);
        }
        std::sort(us.begin(), us.end());
        std::printf("Program Load of a %zu KiB image: median %.0f us\n", size >> 10, us[us.size() / 2]);
    }
    csd_core_free(core);
    return 0;
}
