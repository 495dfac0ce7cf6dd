/* SPDX-License-Identifier: MIT */
// core_fixture.h - a device core with helpers to place data in SLM and run Executes
// through the C ABI exactly as the QEMU glue does (prepare, then run).
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "csd_core_steps.h"

struct ExecOut {
    uint16_t status;  // with DNR
    uint32_t dw0, dw1;
    uint16_t code() const { return CSD_STATUS_CODE(status); }
};

// Whether a core runs eBPF programs: bit 1 of the capabilities log's program types (a
// build without DPDK's librte_bpf has none).
inline bool core_runs_ebpf(csd_core *core)
{
    std::vector<uint8_t> page(CSD_LOG_MAX_SIZE);
    uint32_t avail = 0;
    if (csd_core_get_log(core, CSD_LOG_CAPABILITIES, 0, 0, page.data(), &avail) != 0) return false;
    uint16_t types;
    std::memcpy(&types, page.data() + offsetof(csd_caps_log, program_types), sizeof types);
    return types & (1u << CSD_PROGRAM_TYPE_EBPF);
}

// The bytes of a file, or nothing if it cannot be read (an eBPF object the build did not
// make: clang for the BPF target was not found).
inline std::vector<uint8_t> read_file(const std::string &path)
{
    std::ifstream f(path, std::ios::binary);
    return std::vector<uint8_t>((std::istreambuf_iterator<char>(f)), {});
}

// The reason tests of downloaded programs are skipped in this build, or "" if they run:
// the core has no eBPF runtime, or the build made no eBPF objects to load.
inline std::string ebpf_tests_skipped(csd_core *core, const std::string &some_object)
{
    if (!core_runs_ebpf(core)) return "this core has no eBPF runtime (built without DPDK's librte_bpf)";
    if (read_file(some_object).empty()) return "no eBPF objects (clang for the BPF target was not found): " + some_object;
    return "";
}

// Builds an execute descriptor (spec section 4).
inline std::vector<uint8_t> make_descriptor(uint16_t program, const std::vector<std::pair<uint64_t, uint64_t>> &ranges,
                                            const void *params, uint32_t param_len)
{
    std::vector<uint8_t> d(16 + 16 * ranges.size() + param_len);
    csd_desc_header h{};
    std::memcpy(h.magic, "CSDX", 4);
    h.version = 1;
    h.program_id = program;
    h.nr_ranges = static_cast<uint16_t>(ranges.size());
    h.param_len = param_len;
    std::memcpy(d.data(), &h, 16);
    for (size_t i = 0; i < ranges.size(); i++) {
        csd_desc_range r{ranges[i].first, ranges[i].second};
        std::memcpy(d.data() + 16 + 16 * i, &r, 16);
    }
    if (param_len) {
        std::memcpy(d.data() + 16 + 16 * ranges.size(), params, param_len);
    }
    return d;
}

class CoreTest : public ::testing::Test {
protected:
    static constexpr uint64_t kSlm = 64ull << 20;
    csd_core *core = nullptr;

    void SetUp() override
    {
        core = csd_core_new(kSlm, 2);
        ASSERT_NE(core, nullptr);
    }
    void TearDown() override { csd_core_free(core); }

    uint8_t *slm(uint64_t off)
    {
        uint8_t *p = nullptr;
        EXPECT_EQ(csd_core_slm_range(core, off, 0, &p), 0);
        return p;
    }

    template <class T>
    void put(uint64_t off, const std::vector<T> &v)
    {
        std::memcpy(slm(off), v.data(), v.size() * sizeof(T));
    }

    template <class T>
    std::vector<T> get(uint64_t off, size_t n)
    {
        std::vector<T> v(n);
        std::memcpy(v.data(), slm(off), n * sizeof(T));
        return v;
    }

    // One counter of the statistics log page (C1h), by csd_stat index.
    uint64_t counter(int i)
    {
        uint8_t page[CSD_LOG_MAX_SIZE];
        uint32_t avail;
        EXPECT_EQ(csd_core_get_log(core, CSD_LOG_STATISTICS, 0, 0, page, &avail), 0);
        uint64_t v;
        std::memcpy(&v, page + CSD_STATS_COUNTERS_OFFSET + 8 * i, 8);
        return v;
    }

    // A namespace of 1 Mi LBAs of 512 bytes with 8 MiB transfers, as an embedding reports it.
    static constexpr csd_ctx kCtx{1u << 20, 512, 8u << 20, 0};

    // Decodes one command as an embedding would; the status of the decode.
    uint16_t decode(uint8_t opcode, uint32_t cdw10, uint32_t cdw11, uint32_t cdw12, uint32_t cdw13, uint32_t cdw14,
                    csd_op *op)
    {
        const csd_cmd c{opcode, 1, cdw10, cdw11, cdw12, cdw13, cdw14, 0};
        return csd_core_decode(core, &c, &kCtx, op);
    }

    // The vendor Program Unload of a slot, decoded and completed as an embedding would.
    uint16_t vendor_unload(uint16_t slot)
    {
        csd_op op;
        uint16_t st = decode(CSD_OPC_PROGRAM_UNLOAD, slot, 0, 0, 0, 0, &op);
        if (!st) st = csd_core_program_unload(core, &op);
        csd_core_complete(core, &op, st);
        return st;
    }

    // An Execute as every embedding runs it: decode, prepare, run, complete (a fixture of
    // media programs also gives the job its namespace and reads what it plans).
    virtual ExecOut exec_raw(const std::vector<uint8_t> &desc)
    {
        csd_exec *job = nullptr;
        csd_op op;
        ExecOut r{};
        r.status = decode(CSD_OPC_EXECUTE, static_cast<uint32_t>(desc.size()), 0, 0, 0, 0, &op);
        if (r.status != 0) {
            return r;
        }
        EXPECT_EQ(op.bytes, desc.size());
        r.status = csd_core_exec_prepare(core, desc.data(), static_cast<uint32_t>(desc.size()), &job);
        if (r.status != 0) {
            EXPECT_EQ(job, nullptr);
        } else {
            r.status = csd_core_exec_run(core, job, nullptr, &r.dw0, &r.dw1);
        }
        csd_core_complete(core, &op, r.status);
        return r;
    }

    // An Execute as an embedding runs a program that reads the namespace (a media program,
    // a chase): decode, prepare, the namespace ns (none if null), the rounds of reads the
    // core plans, each given to read(extents, n, &cancel), which fills them and returns the
    // round's status, then run, complete. *finish (if given): csd_exec_model_finish of 1.
    // cancel: the cancel flag's value from the start.
    template <class Read>
    ExecOut exec_reading(const std::vector<uint8_t> &desc, const csd_ctx *ns, Read read, uint64_t *finish = nullptr,
                         int cancel = 0)
    {
        csd_op op;
        ExecOut r{};
        r.status = decode(CSD_OPC_EXECUTE, static_cast<uint32_t>(desc.size()), 0, 0, 0, 0, &op);
        if (r.status) return r;
        csd_exec *job = nullptr;
        r.status = csd_core_exec_prepare(core, desc.data(), static_cast<uint32_t>(desc.size()), &job);
        if (r.status == 0) {
            if (ns) csd_exec_set_namespace(job, ns);
            const csd_extent *ext;
            uint16_t st = 0;
            while (uint32_t n = csd_exec_media(job, st, &cancel, &ext)) st = read(ext, n, &cancel);
            if (finish) *finish = csd_exec_model_finish(job, 1);
            r.status = csd_core_exec_run(core, job, nullptr, &r.dw0, &r.dw1);
        }
        csd_core_complete(core, &op, r.status);
        return r;
    }

    template <class P>
    ExecOut exec(uint16_t program, const std::vector<std::pair<uint64_t, uint64_t>> &ranges, const P &params)
    {
        return exec_raw(make_descriptor(program, ranges, &params, sizeof(P)));
    }

    ExecOut exec0(uint16_t program, const std::vector<std::pair<uint64_t, uint64_t>> &ranges)
    {
        return exec_raw(make_descriptor(program, ranges, nullptr, 0));
    }
};

template <class T>
std::vector<T> random_vector(size_t n, uint32_t seed, double lo = -1.0, double hi = 1.0)
{
    std::mt19937 g(seed);
    std::uniform_real_distribution<double> d(lo, hi);
    std::vector<T> v(n);
    for (auto &x : v) {
        x = static_cast<T>(d(g));
    }
    return v;
}

// A status in words for failure messages ("?" for one the spec does not name).
inline const char *status_text(uint16_t s) { return csd_status_name(s) ? csd_status_name(s) : "?"; }

#define EXPECT_STATUS(out, code_) EXPECT_EQ((out).code(), (code_)) << status_text((out).status)
#define EXPECT_OK(out) EXPECT_STATUS(out, CSD_STATUS_SUCCESS)
#define ASSERT_OK(out) ASSERT_EQ((out).code(), CSD_STATUS_SUCCESS) << status_text((out).status)
