// SPDX-License-Identifier: MIT
// programs_bench: every streaming device-defined program (copy, filter, reduce, convert,
// checksum, elementwise, decompress) through Execute, against a hand-written single-purpose
// C loop over the same data on the same core (the loop knows its type, operator and record
// size at compile time; it checks nothing), interleaved run by run, best of N each, and a
// STREAM-like copy bandwidth of the machine. Each program's output is compared with the
// loop's byte for byte; a difference stops the bench. Prints markdown (docs/perf.md): a
// table per program, a row per case (program GB/s, loop GB/s, program / loop), and the
// load average at the start and the end. GB/s are bytes of input per second (copy: bytes
// copied). Best of 7, fewer (at least 3) where one run is long, so the whole bench stays
// under two minutes on a quiet 2-core machine.
// Usage: programs_bench [--quick] [--cpu-time] [FILTER]   (FILTER: run only cases whose name
// contains it; --cpu-time: time runs by the thread's CPU time, not the wall clock, so that
// time the core spent on other processes of a loaded machine is not counted)
#include <lz4frame.h>
#include <zstd.h>
#if __has_include(<xxhash.h>)
#include <xxhash.h>
#define BENCH_HAVE_XXHASH 1
#endif

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "core_calls.hpp"
#include "csd_crc32c.h"

namespace {

bool quick = false;
bool cpu_time = false;
int reps = 7;
const char *only = nullptr;
bool failed = false;

// Seconds on the wall clock, or of this thread's CPU time with --cpu-time.
double now() { return bench::seconds(cpu_time); }

// The 1-minute load average (the machine is shared: it says how noisy a run was).
double load_average()
{
    std::ifstream f("/proc/loadavg");
    double l = -1;
    f >> l;
    return l;
}

constexpr double kCaseSeconds = 1.0;  // timed runs of a case, about (at least 3 each)
std::string table;                    // the program whose table is being printed

// Runs prog and ref alternately (after one warm-up each), best of reps each (fewer where a
// run is long); prints the row, after its table's header if it is the first of its program
// (the name's first word).
template <class P, class R>
void race(const std::string &name, double bytes, P prog, R ref)
{
    if (only && name.find(only) == std::string::npos) return;
    const double w0 = now();
    prog();
    ref();
    const int n = std::clamp(static_cast<int>(kCaseSeconds / (now() - w0)), 3, reps);
    double tp = 1e30, tr = 1e30;
    for (int i = 0; i < n; i++) {
        double t0 = now();
        prog();
        tp = std::min(tp, now() - t0);
        t0 = now();
        ref();
        tr = std::min(tr, now() - t0);
    }
    const std::string program = name.substr(0, name.find(' '));
    if (program != table) {
        table = program;
        std::printf("\n### %s\n\n| case | program GB/s | loop GB/s | **program / loop** |\n|---|---|---|---|\n",
                    program.c_str());
    }
    std::printf("| %s | %.2f | %.2f | **%.2f** |\n", name.c_str(), bytes / tp / 1e9, bytes / tr / 1e9, tr / tp);
    std::fflush(stdout);
}

// Stops the bench's verdict (not the run) when the program and the loop disagree.
void same(const std::string &name, const void *a, const void *b, size_t n)
{
    if (only && name.find(only) == std::string::npos) return;
    if (std::memcmp(a, b, n) != 0) {
        std::fprintf(stderr, "programs_bench: %s: program and loop outputs differ\n", name.c_str());
        failed = true;
    }
}

// ---- filter: the loop for one (field type, comparison), 16-byte records; writes the
// u32 indices (Indices) or the records of the matches, returns how many ----
template <class F, class B, bool Indices, class Cmp>
uint32_t loop_filter(const uint8_t *in, uint32_t n, uint32_t off, Cmp cmp, uint8_t *out)
{
    uint32_t w = 0;
    for (uint32_t i = 0; i < n; i++) {
        F v;
        std::memcpy(&v, in + 16ull * i + off, sizeof v);
        if (!cmp(static_cast<B>(v))) continue;
        if constexpr (Indices) {
            std::memcpy(out + 4ull * w++, &i, 4);
        } else {
            std::memcpy(out + 16ull * w++, in + 16ull * i, 16);
        }
    }
    return w;
}

// ---- convert: the same arithmetic as the spec asks, written once more here ----
uint32_t f32_bits(float f)
{
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
}
float bits_f32(uint32_t u)
{
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}
uint16_t ref_f32_to_f16(float f)
{
    const uint32_t x = f32_bits(f);
    const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000);
    const uint32_t exp = (x >> 23) & 0xFF;
    uint32_t man = x & 0x7FFFFF;
    if (exp == 0xFF) return sign | 0x7C00 | (man ? 0x200 | (man >> 13) : 0);
    const int e = static_cast<int>(exp) - 127 + 15;
    if (e >= 0x1F) return sign | 0x7C00;
    if (e <= 0) {
        if (e < -10) return sign;
        man |= 0x800000;
        const uint32_t shift = static_cast<uint32_t>(14 - e);
        uint32_t half = man >> shift;
        const uint32_t rem = man & ((1u << shift) - 1), mid = 1u << (shift - 1);
        if (rem > mid || (rem == mid && (half & 1))) half++;
        return sign | static_cast<uint16_t>(half);
    }
    uint32_t half = (static_cast<uint32_t>(e) << 10) | (man >> 13);
    const uint32_t rem = man & 0x1FFF;
    if (rem > 0x1000 || (rem == 0x1000 && (half & 1))) half++;
    return sign | static_cast<uint16_t>(half);
}
float ref_f16_to_f32(uint16_t h)
{
    const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
    const uint32_t exp = (h >> 10) & 0x1F;
    uint32_t man = h & 0x3FF;
    if (exp == 0x1F) return bits_f32(sign | 0x7F800000 | (man << 13));
    if (exp == 0) {
        if (man == 0) return bits_f32(sign);
        int e = -1;
        do {
            e++;
            man <<= 1;
        } while (!(man & 0x400));
        return bits_f32(sign | static_cast<uint32_t>(127 - 15 - e) << 23 | (man & 0x3FF) << 13);
    }
    return bits_f32(sign | (exp + 127 - 15) << 23 | man << 13);
}
uint16_t ref_f32_to_bf16(float f)
{
    const uint32_t x = f32_bits(f);
    if ((x & 0x7FFFFFFF) > 0x7F800000) return static_cast<uint16_t>((x >> 16) | 0x40);
    return static_cast<uint16_t>((x + 0x7FFF + ((x >> 16) & 1)) >> 16);
}
int8_t ref_f32_to_i8(float x, float scale, int32_t zp)
{
    const double q = std::nearbyint(static_cast<double>(x) / scale);
    if (std::isnan(q)) return static_cast<int8_t>(zp < -128 ? -128 : zp > 127 ? 127 : zp);
    const double v = q + zp;
    return static_cast<int8_t>(v < -128.0 ? -128 : v > 127.0 ? 127 : v);
}

template <class In, class Out, class F>
void loop_convert(const uint8_t *in, uint8_t *out, size_t n, F f)
{
    const In *x = reinterpret_cast<const In *>(in);
    Out *y = reinterpret_cast<Out *>(out);
    for (size_t i = 0; i < n; i++) y[i] = f(x[i]);
}

}  // namespace

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (std::strcmp(argv[i], "--quick") == 0) {
            quick = true;
        } else if (std::strcmp(argv[i], "--cpu-time") == 0) {
            cpu_time = true;
        } else {
            only = argv[i];
        }
    }
    const uint64_t big = quick ? (16ull << 20) : (128ull << 20);
    reps = quick ? 3 : 7;
    csd_core *core = csd_core_new(3 * big + (1 << 20), 1);
    uint8_t *slm;
    csd_core_slm_range(core, 0, csd_core_slm_size(core), &slm);
    uint8_t *A = slm, *B = slm + big, *C = slm + 2 * big;  // two inputs and an output, in SLM
    std::vector<uint8_t> aux(big, 1);  // the program's output, kept to compare with the loop's
    // Both write the same SLM output; afterwards each runs once more and the two outputs
    // (n bytes) are compared.
    auto verify = [&](const std::string &name, auto prog, auto loop, size_t n) {
        if (only && name.find(only) == std::string::npos) return;
        prog();
        std::memcpy(aux.data(), C, n);
        std::memset(C, 0xA5, n);
        loop();
        same(name, aux.data(), C, n);
    };
    std::mt19937_64 g(1);
    std::printf("programs_bench: %llu MiB a case (elementwise exp, sigmoid, tanh, gelu: %llu MiB), best of %d "
                "(at least 3 where a run is long), program and loop interleaved, one core, %s; load average %.1f at "
                "the start\n",
                static_cast<unsigned long long>(big >> 20), static_cast<unsigned long long>(big >> 24), reps,
                cpu_time ? "timed by the thread's CPU time" : "timed by the wall clock", load_average());

    // ---- STREAM-like copy, and the copy program ----
    for (uint64_t i = 0; i < big; i += 8) {
        const uint64_t v = g();
        std::memcpy(A + i, &v, 8);
    }
    // STREAM's copy kernel (c[j] = a[j], 8-byte words) beside memcpy, bytes read + written
    race("copy STREAM: memcpy (program column), c[j] = a[j] (loop column); bytes read + written", 2.0 * big, [&] { std::memcpy(C, A, big); }, [&] {
        const uint64_t *a = reinterpret_cast<const uint64_t *>(A);
        uint64_t *c = reinterpret_cast<uint64_t *>(C);
        for (uint64_t j = 0; j < big / 8; j++) c[j] = a[j];
    });
    {
        auto d = bench::descriptor(CSD_PROG_COPY, {{0, big}, {2 * big, big}}, nullptr, 0);
        auto prog = [&] { bench::execute(core, d); };
        auto loop = [&] { std::memcpy(C, A, big); };
        race("copy", big, prog, loop);
        verify("copy", prog, loop, big);
    }

    // ---- filter: 16-byte records, field at 4 (4-byte types) or 8 ----
    {
        const uint32_t n = static_cast<uint32_t>(big / 16);
        auto fill = [&](auto zero) {
            using F = decltype(zero);
            const uint32_t off = sizeof(F) == 4 ? 4 : 8;
            for (uint32_t i = 0; i < n; i++) {
                const F v = static_cast<F>(g() % 1000);
                std::memcpy(A + 16ull * i + off, &v, sizeof v);
            }
            return off;
        };
        auto one = [&](const char *tname, uint16_t ft, auto zero, auto bzero, uint16_t op, uint32_t mode) {
            using F = decltype(zero);
            using Bt = decltype(bzero);
            static const char *ops[] = {"eq", "ne", "lt", "le", "gt", "ge", "between"};
            const std::string name = std::string("filter ") + tname + " " + ops[op] + (mode ? " idx" : " rec");
            if (only && name.find(only) == std::string::npos) return;
            const uint32_t off = fill(zero);
            const Bt lo = static_cast<Bt>(op == CSD_CMP_BETWEEN ? 250 : op == CSD_CMP_EQ || op == CSD_CMP_NE ? 7 : 500);
            const Bt hi = static_cast<Bt>(749);
            csd_filter_params p{};
            p.record_size = 16;
            p.count = n;
            p.field_offset = off;
            p.field_type = ft;
            p.op = op;
            p.output_mode = mode;
            std::memcpy(p.lo, &lo, 8);
            std::memcpy(p.hi, &hi, 8);
            auto d = bench::descriptor(CSD_PROG_FILTER, {{0, big}, {2 * big, big}}, &p, sizeof p);
            uint32_t hits = 0, rhits = 0;
            auto run = [&](auto cmp) {
                auto prog = [&] { bench::execute(core, d, &hits); };
                auto loop = [&] {
                    rhits = mode ? loop_filter<F, Bt, true>(A, n, off, cmp, C) : loop_filter<F, Bt, false>(A, n, off, cmp, C);
                };
                race(name, big, prog, loop);
                prog();
                loop();
                verify(name, prog, loop, uint64_t{hits} * (mode ? 4 : 16));
            };
            switch (op) {
            case CSD_CMP_EQ: run([lo](Bt v) { return v == lo; }); break;
            case CSD_CMP_NE: run([lo](Bt v) { return v != lo; }); break;
            case CSD_CMP_LT: run([lo](Bt v) { return v < lo; }); break;
            case CSD_CMP_LE: run([lo](Bt v) { return v <= lo; }); break;
            case CSD_CMP_GT: run([lo](Bt v) { return v > lo; }); break;
            case CSD_CMP_GE: run([lo](Bt v) { return v >= lo; }); break;
            default: run([lo, hi](Bt v) { return lo <= v && v <= hi; }); break;
            }
            if (hits != rhits) {
                std::fprintf(stderr, "programs_bench: %s: %u matches, the loop %u\n", name.c_str(), hits, rhits);
                failed = true;
            }
        };
        for (uint16_t op = CSD_CMP_EQ; op <= CSD_CMP_BETWEEN; op++) one("f32", CSD_FT_F32, 0.0f, 0.0, op, CSD_FILTER_INDICES);
        one("i32", CSD_FT_I32, int32_t{}, int64_t{}, CSD_CMP_GT, CSD_FILTER_INDICES);
        one("u32", CSD_FT_U32, uint32_t{}, uint64_t{}, CSD_CMP_GT, CSD_FILTER_INDICES);
        one("i64", CSD_FT_I64, int64_t{}, int64_t{}, CSD_CMP_GT, CSD_FILTER_INDICES);
        one("u64", CSD_FT_U64, uint64_t{}, uint64_t{}, CSD_CMP_GT, CSD_FILTER_INDICES);
        one("f64", CSD_FT_F64, 0.0, 0.0, CSD_CMP_GT, CSD_FILTER_INDICES);
        one("i32", CSD_FT_I32, int32_t{}, int64_t{}, CSD_CMP_GT, CSD_FILTER_RECORDS);
        one("f64", CSD_FT_F64, 0.0, 0.0, CSD_CMP_BETWEEN, CSD_FILTER_RECORDS);
    }

    // ---- reduce: 1024 rows ----
    {
        const uint32_t rows = 1024;
        auto one = [&](const char *tname, uint32_t dt, auto zero, uint32_t op) {
            using T = decltype(zero);
            static const char *ops[] = {"sum", "min", "max", "mean", "argmax", "argmin"};
            const std::string name = std::string("reduce ") + tname + " " + ops[op];
            if (only && name.find(only) == std::string::npos) return;
            const uint32_t cols = static_cast<uint32_t>(big / sizeof(T) / rows);
            T *x = reinterpret_cast<T *>(A);
            for (uint64_t i = 0; i < uint64_t{rows} * cols; i++) {
                x[i] = std::is_floating_point_v<T> ? static_cast<T>(static_cast<int64_t>(g() % 2000001) - 1000000) / 1000
                                                   : static_cast<T>(g());
            }
            csd_reduce_params p{op, dt, rows, cols};
            auto d = bench::descriptor(CSD_PROG_REDUCE, {{0, big}, {2 * big, uint64_t{rows} * 8}}, &p, sizeof p);
            uint64_t *r = reinterpret_cast<uint64_t *>(C);
            auto prog = [&] { bench::execute(core, d); };
            auto loop = [&] {
                for (uint32_t row = 0; row < rows; row++) {
                    const T *v = x + uint64_t{row} * cols;
                    if (op == CSD_RED_SUM) {
                        if constexpr (std::is_floating_point_v<T>) {
                            double s = 0;
                            for (uint32_t i = 0; i < cols; i++) s += v[i];
                            std::memcpy(&r[row], &s, 8);
                        } else {
                            uint64_t s = 0;
                            for (uint32_t i = 0; i < cols; i++) s += static_cast<uint64_t>(static_cast<int64_t>(v[i]));
                            r[row] = s;
                        }
                    } else if (op == CSD_RED_MAX) {
                        T m = v[0];
                        for (uint32_t i = 1; i < cols; i++) m = v[i] > m ? v[i] : m;
                        if constexpr (std::is_floating_point_v<T>) {
                            const double dm = m;
                            std::memcpy(&r[row], &dm, 8);
                        } else {
                            const int64_t im = m;
                            std::memcpy(&r[row], &im, 8);
                        }
                    } else {  // argmax
                        uint32_t b = 0;
                        for (uint32_t i = 1; i < cols; i++) {
                            if (v[i] > v[b]) b = i;
                        }
                        r[row] = b;
                    }
                }
            };
            race(name, big, prog, loop);
            verify(name, prog, loop, uint64_t{rows} * 8);
        };
        for (uint32_t op : {CSD_RED_SUM, CSD_RED_MAX, CSD_RED_ARGMAX}) {
            one("f32", CSD_DT_F32, 0.0f, op);
            one("f64", CSD_DT_F64, 0.0, op);
            one("i32", CSD_DT_I32, int32_t{}, op);
            one("i64", CSD_DT_I64, int64_t{}, op);
        }
    }

    // ---- convert ----
    {
        volatile float vscale = 0.05f;  // parameters, as the loop would get them: unknown when compiled
        volatile int32_t vzp = 3;
        const float scale = vscale;
        const int32_t zp = vzp;
        struct Case {
            const char *name;
            uint32_t op, in, out;
        };
        const Case cases[] = {{"f32_f16", CSD_CVT_F32_F16, 4, 2}, {"f32_bf16", CSD_CVT_F32_BF16, 4, 2},
                              {"f16_f32", CSD_CVT_F16_F32, 2, 4}, {"bf16_f32", CSD_CVT_BF16_F32, 2, 4},
                              {"i8_f32", CSD_CVT_I8_F32, 1, 4},   {"f32_i8", CSD_CVT_F32_I8, 4, 1},
                              {"u8_f32", CSD_CVT_U8_F32, 1, 4}};
        for (const Case &c : cases) {
            const std::string name = std::string("convert ") + c.name;
            if (only && name.find(only) == std::string::npos) continue;
            const uint64_t n = big / 4;  // output at most 4 bytes an element
            if (c.in == 4) {
                float *x = reinterpret_cast<float *>(A);
                for (uint64_t i = 0; i < n; i++) x[i] = static_cast<float>(static_cast<int64_t>(g() % 2000001) - 1000000) / 100000;
            } else {
                for (uint64_t i = 0; i < n * c.in; i += 8) {
                    const uint64_t v = g();
                    std::memcpy(A + i, &v, 8);
                }
            }
            csd_convert_params p{c.op, static_cast<uint32_t>(n), scale, zp};
            auto d = bench::descriptor(CSD_PROG_CONVERT, {{0, n * c.in}, {2 * big, n * c.out}}, &p, sizeof p);
            uint8_t *o = C;
            auto loop = [&] {
                switch (c.op) {
                case CSD_CVT_F32_F16: loop_convert<float, uint16_t>(A, o, n, ref_f32_to_f16); break;
                case CSD_CVT_F32_BF16: loop_convert<float, uint16_t>(A, o, n, ref_f32_to_bf16); break;
                case CSD_CVT_F16_F32: loop_convert<uint16_t, float>(A, o, n, ref_f16_to_f32); break;
                case CSD_CVT_BF16_F32:
                    loop_convert<uint16_t, float>(A, o, n, [](uint16_t b) { return bits_f32(uint32_t{b} << 16); });
                    break;
                case CSD_CVT_I8_F32:
                    loop_convert<int8_t, float>(A, o, n, [=](int8_t q) { return static_cast<float>(static_cast<int64_t>(q) - zp) * scale; });
                    break;
                case CSD_CVT_F32_I8:
                    loop_convert<float, int8_t>(A, o, n, [=](float x) { return ref_f32_to_i8(x, scale, zp); });
                    break;
                default:
                    loop_convert<uint8_t, float>(A, o, n, [=](uint8_t q) { return static_cast<float>(static_cast<int64_t>(q) - zp) * scale; });
                    break;
                }
            };
            auto prog = [&] { bench::execute(core, d); };
            race(name, static_cast<double>(n * c.in), prog, loop);
            verify(name, prog, loop, n * c.out);
        }
    }

    // ---- checksum ----
    {
        for (uint64_t i = 0; i < big; i += 8) {
            const uint64_t v = g();
            std::memcpy(A + i, &v, 8);
        }
        uint32_t algo = CSD_CKSUM_CRC32C, hi = 0, lo = 0;
        uint64_t want = 0;
        auto cd = bench::descriptor(CSD_PROG_CHECKSUM, {{0, big}}, &algo, 4);
        race("checksum crc32c", big, [&] { lo = bench::execute(core, cd, &hi); }, [&] { want = csd_crc32c(A, big); });
        if ((uint64_t{hi} << 32 | lo) != want) {
            std::fprintf(stderr, "programs_bench: crc32c differs\n");
            failed = true;
        }
#ifdef BENCH_HAVE_XXHASH
        algo = CSD_CKSUM_XXH64;
        auto xd = bench::descriptor(CSD_PROG_CHECKSUM, {{0, big}}, &algo, 4);
        race("checksum xxh64", big, [&] { lo = bench::execute(core, xd, &hi); }, [&] { want = XXH64(A, big, 0); });
        if ((uint64_t{hi} << 32 | lo) != want) {
            std::fprintf(stderr, "programs_bench: xxh64 differs\n");
            failed = true;
        }
#endif
    }

    // ---- elementwise over f32 ----
    {
        const uint32_t n = static_cast<uint32_t>(big / 4);
        float *x = reinterpret_cast<float *>(A), *y = reinterpret_cast<float *>(B);
        for (uint32_t i = 0; i < n; i++) {
            x[i] = static_cast<float>(static_cast<int64_t>(g() % 2000001) - 1000000) / 250000;
            y[i] = static_cast<float>(static_cast<int64_t>(g() % 2000001) - 1000000) / 250000 + 0.001f;
        }
        float *o = reinterpret_cast<float *>(C);
        volatile float va = 1.5f, vb = -0.25f;
        const float a = va, b = vb;
        auto one = [&](const char *nm, uint32_t op, auto f) {
            const std::string name = std::string("elementwise ") + nm;
            if (only && name.find(only) == std::string::npos) return;
            // the transcendental ones (about 0.03-0.2 GB/s) over a sixteenth of the data
            const bool slow = op == CSD_EW_EXP || op == CSD_EW_SIGMOID || op == CSD_EW_TANH || op == CSD_EW_GELU;
            const uint32_t m = slow ? n / 16 : n;
            const uint64_t len = uint64_t{m} * 4;
            csd_elementwise_params p{op, m, a, b};
            const bool binary = op <= CSD_EW_MIN;
            auto d = binary ? bench::descriptor(CSD_PROG_ELEMENTWISE, {{0, len}, {big, len}, {2 * big, len}}, &p, sizeof p)
                            : bench::descriptor(CSD_PROG_ELEMENTWISE, {{0, len}, {2 * big, len}}, &p, sizeof p);
            auto prog = [&] { bench::execute(core, d); };
            auto loop = [&] {
                for (uint32_t i = 0; i < m; i++) o[i] = f(x[i], y[i]);
            };
            race(name, len * (binary ? 2.0 : 1.0), prog, loop);
            verify(name, prog, loop, len);
        };
        one("add", CSD_EW_ADD, [](float u, float v) { return u + v; });
        one("sub", CSD_EW_SUB, [](float u, float v) { return u - v; });
        one("mul", CSD_EW_MUL, [](float u, float v) { return u * v; });
        one("div", CSD_EW_DIV, [](float u, float v) { return u / v; });
        one("max", CSD_EW_MAX, [](float u, float v) { return std::fmax(u, v); });
        one("min", CSD_EW_MIN, [](float u, float v) { return std::fmin(u, v); });
        one("relu", CSD_EW_RELU, [](float u, float) { return u > 0.0f ? u : 0.0f; });
        one("axpb", CSD_EW_AXPB, [=](float u, float) { return a * u + b; });
        one("abs", CSD_EW_ABS, [](float u, float) { return std::fabs(u); });
        one("exp", CSD_EW_EXP, [](float u, float) { return std::exp(u); });
        one("sigmoid", CSD_EW_SIGMOID, [](float u, float) { return 1.0f / (1.0f + std::exp(-u)); });
        one("tanh", CSD_EW_TANH, [](float u, float) { return std::tanh(u); });
        one("gelu", CSD_EW_GELU, [](float u, float) { return static_cast<float>(0.5 * u * (1.0 + std::erf(u / std::sqrt(2.0)))); });
    }

    // ---- decompress (text-like data; the loop is one call of the library over the whole frame) ----
    {
        const std::vector<uint8_t> plain = bench::text_like(big, g);
        for (uint32_t algo : {0u, 1u}) {
            const std::string name = algo ? "decompress lz4" : "decompress zstd";
            if (only && name.find(only) == std::string::npos) continue;
            const std::vector<uint8_t> comp = bench::compress(algo, plain);
            std::memcpy(A, comp.data(), comp.size());
            auto d = bench::descriptor(CSD_PROG_DECOMPRESS, {{0, comp.size()}, {2 * big, big}}, &algo, 4);
            ZSTD_DCtx *zd = ZSTD_createDCtx();
            LZ4F_dctx *ld = nullptr;
            LZ4F_createDecompressionContext(&ld, LZ4F_VERSION);
            auto prog = [&] { bench::execute(core, d); };
            auto loop = [&] {
                if (algo == 0) {
                    ZSTD_decompressDCtx(zd, C, big, A, comp.size());
                } else {
                    size_t dst = big, src = comp.size();
                    LZ4F_resetDecompressionContext(ld);
                    LZ4F_decompress(ld, C, &dst, A, &src, nullptr);
                }
            };
            race(name + " (of output)", big, prog, loop);
            verify(name, prog, loop, big);
            ZSTD_freeDCtx(zd);
            LZ4F_freeDecompressionContext(ld);
        }
    }
    std::printf("\nload average %.1f at the end%s\n", load_average(), failed ? "; OUTPUTS DIFFER (see above)" : "");
    csd_core_free(core);
    return failed ? 1 : 0;
}
