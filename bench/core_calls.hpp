// SPDX-License-Identifier: MIT
// core_calls.hpp: the device-core calls the benchmarks share (files, Program Load, Execute
// descriptors); each exits with a message on failure, as a benchmark cannot go on without it.
#pragma once
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <lz4frame.h>
#include <zstd.h>

#include "csd_core_steps.h"

namespace bench {

/* Seconds on the wall clock, or of this thread's CPU time where cpu_time (other processes
 * on a shared machine count less). */
inline double seconds(bool cpu_time)
{
    if (cpu_time) {
        timespec ts;
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
        return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
    }
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

/* Reads a whole file, or exits naming it. */
inline std::vector<uint8_t> slurp(const std::string &path)
{
    std::ifstream f(path, std::ios::binary);
    if (!f) {
        std::fprintf(stderr, "bench: cannot read %s\n", path.c_str());
        std::exit(1);
    }
    return std::vector<uint8_t>((std::istreambuf_iterator<char>(f)), {});
}

/* An execute descriptor for program id over ranges, with params. */
inline std::vector<uint8_t> descriptor(uint16_t id, const std::vector<csd_desc_range> &r, const void *p, uint32_t plen)
{
    std::vector<uint8_t> d(csd_desc_size(static_cast<uint32_t>(r.size()), plen));
    csd_desc_encode(d.data(), id, static_cast<uint16_t>(r.size()), r.data(), p, plen);
    return d;
}

/* Execute of descriptor d to its end; returns DW0 and stores DW1 in *dw1 (if not NULL). */
inline uint32_t execute(csd_core *core, const std::vector<uint8_t> &d, uint32_t *dw1 = nullptr)
{
    csd_exec *job;
    uint32_t dw0 = 0, x = 0;
    uint16_t st = csd_core_exec_prepare(core, d.data(), static_cast<uint32_t>(d.size()), &job);
    if (!st) st = csd_core_exec_run(core, job, nullptr, &dw0, dw1 ? dw1 : &x);
    if (st) {
        csd_desc_header h{};
        std::memcpy(&h, d.data(), std::min(d.size(), sizeof h));
        std::fprintf(stderr, "bench: Execute of program %04x failed: status 0x%x\n", h.program_id, st);
        std::exit(1);
    }
    return dw0;
}

/* The namespace the benchmarks' commands address (1 Mi LBAs of 512 bytes, no MDTS). */
inline const csd_ctx *context()
{
    static const csd_ctx ctx{1u << 20, 512, 0, 0};
    return &ctx;
}

/* Program Load of an eBPF image (records of record_size bytes) into slot in one chunk;
   returns the program id the device gave it. */
inline uint16_t load_program(csd_core *core, const std::vector<uint8_t> &img, uint32_t slot, uint32_t record_size)
{
    const csd_cmd c{CSD_OPC_PROGRAM_LOAD, 1, csd_program_load_cdw10(static_cast<uint16_t>(slot), CSD_PROGRAM_TYPE_EBPF),
                    static_cast<uint32_t>(img.size()), 0, static_cast<uint32_t>(img.size()), record_size, 0};
    csd_op op;
    uint32_t dw0 = 0;
    uint16_t st = csd_core_decode(core, &c, context(), &op);
    if (!st) st = csd_core_program_load(core, &op, img.data(), &dw0, nullptr, 0);
    if (st) {
        std::fprintf(stderr, "bench: Program Load failed: 0x%x\n", st);
        std::exit(1);
    }
    return static_cast<uint16_t>(dw0);
}

/* Program Unload of slot (errors ignored: the benchmark loaded it). */
inline void unload_program(csd_core *core, uint16_t slot)
{
    const csd_cmd c{CSD_OPC_PROGRAM_UNLOAD, 1, slot, 0, 0, 0, 0, 0};
    csd_op op;
    if (csd_core_decode(core, &c, context(), &op) == 0) csd_core_program_unload(core, &op);
}

/* n bytes like text: a phrase repeated, one byte in about 16 with its low bit flipped
   (compresses about 8.5:1 with zstd, 3.9:1 with lz4). */
template <class Rng> std::vector<uint8_t> text_like(uint64_t n, Rng &g)
{
    std::vector<uint8_t> plain(n);
    for (uint64_t i = 0; i < n; i++) plain[i] = static_cast<uint8_t>("computational storage "[i % 22] ^ (g() % 16 == 0));
    return plain;
}

/* plain compressed as the decompress program (09h) reads it: codec 0 zstd (level 3), 1 an
   lz4 frame. */
inline std::vector<uint8_t> compress(uint32_t codec, const std::vector<uint8_t> &plain)
{
    std::vector<uint8_t> comp;
    if (codec == 0) {
        comp.resize(ZSTD_compressBound(plain.size()));
        comp.resize(ZSTD_compress(comp.data(), comp.size(), plain.data(), plain.size(), 3));
    } else {
        comp.resize(LZ4F_compressFrameBound(plain.size(), nullptr));
        comp.resize(LZ4F_compressFrame(comp.data(), comp.size(), plain.data(), plain.size(), nullptr));
    }
    return comp;
}

}  // namespace bench
