// SPDX-License-Identifier: MIT
// The standard front end in the core (nvme_cs.cc, spec/nvme_cs.h): memory range sets,
// program activation and Execute Program, whose results are checked against the bytes the
// test put in SLM (copy) and against the vendor Execute of the same call.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "core_fixture.h"
#include "nvme_cs.h"

namespace {

constexpr uint32_t kMemNsid = 2;

nvme_cs_mem_range mr(uint64_t sb, uint32_t len, uint32_t nsid = kMemNsid)
{
    nvme_cs_mem_range r{};
    r.nsid = nsid;
    r.sb = sb;
    r.len = len;
    return r;
}

class NvmeCs : public CoreTest {
protected:
    uint16_t create(const std::vector<nvme_cs_mem_range> &set, uint16_t *rsid)
    {
        return csd_core_cs_range_set_create(core, kMemNsid, static_cast<uint32_t>(set.size() - 1), set.data(),
                                            static_cast<uint32_t>(set.size() * sizeof(nvme_cs_mem_range)), rsid);
    }
    // Execute Program with inline ranges (rsid 0) or a range set; runs it; returns status, DW0.
    uint16_t execute(uint16_t program, uint16_t rsid, const std::vector<nvme_cs_mem_range> &inline_ranges,
                     const std::vector<uint8_t> &params, uint32_t nr_ranges, uint32_t *dw0 = nullptr)
    {
        std::vector<uint8_t> data(inline_ranges.size() * sizeof(nvme_cs_mem_range));
        if (!data.empty()) std::memcpy(data.data(), inline_ranges.data(), data.size());
        data.insert(data.end(), params.begin(), params.end());
        csd_cs_exec_cmd cmd{static_cast<uint32_t>(program) | static_cast<uint32_t>(rsid) << 16, nr_ranges,
                            static_cast<uint32_t>(data.size()), 0};
        csd_exec *job = nullptr;
        uint16_t st = csd_core_cs_exec_prepare(core, kMemNsid, &cmd, data.data(), static_cast<uint32_t>(data.size()), &job);
        if (st) return st;
        uint32_t d0 = 0, d1 = 0;
        st = csd_core_exec_run(core, job, nullptr, &d0, &d1);
        if (dw0) *dw0 = d0;
        return st;
    }
};

std::vector<uint8_t> pattern(size_t n, uint8_t seed)
{
    std::vector<uint8_t> v(n);
    for (size_t i = 0; i < n; i++) v[i] = static_cast<uint8_t>(i * 31 + seed);
    return v;
}

}  // namespace

TEST_F(NvmeCs, ExecuteProgramWithInlineRangesRunsTheSameProgram)
{
    const auto src = pattern(4096, 7);
    put(0, src);
    uint32_t dw0 = 0;
    ASSERT_EQ(execute(CSD_PROG_COPY, 0, {mr(0, 4096), mr(65536, 4096)}, {}, 2, &dw0), 0);
    EXPECT_EQ(dw0, 4096u);
    EXPECT_EQ(get<uint8_t>(65536, 4096), src);
}

TEST_F(NvmeCs, ExecuteProgramWithARangeSet)
{
    const auto src = pattern(8192, 3);
    put(8192, src);
    uint16_t rsid = 0;
    ASSERT_EQ(create({mr(8192, 8192), mr(131072, 8192)}, &rsid), 0);
    EXPECT_NE(rsid, 0);
    ASSERT_EQ(execute(CSD_PROG_COPY, rsid, {}, {}, 2), 0);
    EXPECT_EQ(get<uint8_t>(131072, 8192), src);
    // the number of ranges must match the set's; an unknown set is refused
    EXPECT_EQ(execute(CSD_PROG_COPY, rsid, {}, {}, 3), CSD_STATUS_INVALID_FIELD | CSD_STATUS_DNR);
    EXPECT_EQ(csd_core_cs_range_set_delete(core, rsid), 0);
    EXPECT_EQ(execute(CSD_PROG_COPY, rsid, {}, {}, 2), NVME_CS_INVALID_MEMORY_RANGE_SET_ID | CSD_STATUS_DNR);
    EXPECT_EQ(csd_core_cs_range_set_delete(core, rsid), NVME_CS_INVALID_MEMORY_RANGE_SET_ID | CSD_STATUS_DNR);
}

TEST_F(NvmeCs, RangeSetChecks)
{
    uint16_t rsid = 0;
    const uint64_t slm = csd_core_slm_size(core);
    EXPECT_EQ(create({mr(0, 4096, 1)}, &rsid), NVME_CS_INVALID_MEMORY_NS | CSD_STATUS_DNR);
    EXPECT_EQ(create({mr(slm - 4096, 8192)}, &rsid), NVME_CS_INVALID_MEMORY_RANGE_SET | CSD_STATUS_DNR);
    EXPECT_EQ(create({mr(UINT64_MAX - 100, 4096)}, &rsid), NVME_CS_INVALID_MEMORY_RANGE_SET | CSD_STATUS_DNR);
    EXPECT_EQ(create({mr(0, 0)}, &rsid), NVME_CS_INVALID_MEMORY_RANGE_SET | CSD_STATUS_DNR);
    EXPECT_EQ(create({mr(0, 4096), mr(4095, 10)}, &rsid), NVME_CS_OVERLAPPING_MEMORY_RANGES | CSD_STATUS_DNR);
    std::vector<nvme_cs_mem_range> many;
    for (uint32_t i = 0; i <= NVME_CS_MAX_RANGES_PER_SET; i++) many.push_back(mr(i * 64, 64));
    EXPECT_EQ(create(many, &rsid), NVME_CS_MAX_MEMORY_RANGES_EXCEEDED | CSD_STATUS_DNR);
    // fewer data bytes than the ranges CDW11 announces
    nvme_cs_mem_range one = mr(0, 64);
    EXPECT_EQ(csd_core_cs_range_set_create(core, kMemNsid, 1, &one, sizeof one, &rsid),
              CSD_STATUS_INVALID_FIELD | CSD_STATUS_DNR);
    std::vector<uint16_t> ids;
    for (uint32_t i = 0; i < NVME_CS_MAX_RANGE_SETS; i++) {
        ASSERT_EQ(create({mr(i * 64, 64)}, &rsid), 0);
        ids.push_back(rsid);
    }
    EXPECT_EQ(create({mr(0, 64)}, &rsid), NVME_CS_MAX_MEMORY_RANGE_SETS_EXCEEDED | CSD_STATUS_DNR);
    for (size_t i = 1; i < ids.size(); i++) EXPECT_NE(ids[i], ids[i - 1]);
}

TEST_F(NvmeCs, ProgramActivation)
{
    put(0, pattern(64, 1));
    EXPECT_EQ(csd_core_cs_program_active(core, CSD_PROG_COPY), 1);   // built-ins start active
    EXPECT_EQ(csd_core_cs_program_activation(core, CSD_PROG_COPY | NVME_CS_PAM_DEACTIVATE), 0);
    EXPECT_EQ(execute(CSD_PROG_COPY, 0, {mr(0, 64), mr(4096, 64)}, {}, 2),
              NVME_CS_PROGRAM_NOT_ACTIVATED | CSD_STATUS_DNR);
    EXPECT_EQ(csd_core_cs_program_activation(core, CSD_PROG_COPY), 0);
    EXPECT_EQ(execute(CSD_PROG_COPY, 0, {mr(0, 64), mr(4096, 64)}, {}, 2), 0);
    // no program there: not a built-in, no plug-in (Invalid Program Index); an empty download
    // slot (No Program)
    EXPECT_EQ(csd_core_cs_program_activation(core, 0x3F), NVME_CS_INVALID_PROGRAM_INDEX | CSD_STATUS_DNR);
    EXPECT_EQ(csd_core_cs_program_activation(core, CSD_SLOT_FIRST), NVME_CS_NO_PROGRAM | CSD_STATUS_DNR);
    EXPECT_EQ(execute(0x3F, 0, {}, {}, 0), NVME_CS_INVALID_PROGRAM_INDEX | CSD_STATUS_DNR);
    EXPECT_EQ(execute(CSD_SLOT_FIRST, 0, {}, {}, 0), NVME_CS_NO_PROGRAM | CSD_STATUS_DNR);
}

TEST_F(NvmeCs, ExecuteProgramFieldChecks)
{
    // inline ranges outside the memory namespace, outside SLM, more than announced
    EXPECT_EQ(execute(CSD_PROG_COPY, 0, {mr(0, 64, 7), mr(4096, 64)}, {}, 2), NVME_CS_INVALID_MEMORY_NS | CSD_STATUS_DNR);
    const uint64_t slm = csd_core_slm_size(core);
    EXPECT_EQ(execute(CSD_PROG_COPY, 0, {mr(slm - 32, 64), mr(4096, 64)}, {}, 2),
              NVME_CS_INVALID_MEMORY_RANGE_SET | CSD_STATUS_DNR);
    EXPECT_EQ(execute(CSD_PROG_COPY, 0, {mr(0, 64)}, {}, 2), CSD_STATUS_INVALID_FIELD | CSD_STATUS_DNR);
    // CDW4 must be the data's length; or CDW15 when CDW4 is 0 (Linux passthrough cannot set CDW4)
    std::vector<nvme_cs_mem_range> two = {mr(0, 64), mr(4096, 64)};
    csd_cs_exec_cmd cmd{CSD_PROG_COPY, 2, 63, 0};
    csd_exec *job = nullptr;
    EXPECT_EQ(csd_core_cs_exec_prepare(core, kMemNsid, &cmd, two.data(), 64, &job), CSD_STATUS_INVALID_FIELD | CSD_STATUS_DNR);
    EXPECT_EQ(job, nullptr);
    cmd = {CSD_PROG_COPY, 2, 0, 64};
    ASSERT_EQ(csd_core_cs_exec_prepare(core, kMemNsid, &cmd, two.data(), 64, &job), 0);
    csd_core_exec_discard(job);
    cmd = {CSD_PROG_COPY, 2, 0, 0};
    EXPECT_EQ(csd_core_cs_exec_prepare(core, kMemNsid, &cmd, two.data(), 64, &job), CSD_STATUS_INVALID_FIELD | CSD_STATUS_DNR);
}

TEST_F(NvmeCs, MemoryReadWriteDecodeAsSlmTransfersAndFillWritesThePattern)
{
    csd_ctx ctx{1 << 20, 512, 512 * 1024, 0};
    csd_cmd rd{NVME_CS_MEM_READ, kMemNsid, 4096, 0, 8192, 0, 0, 0};
    csd_op op{};
    ASSERT_EQ(csd_core_cs_decode_mem(core, &rd, &ctx, &op), 0);
    EXPECT_EQ(op.opcode, CSD_OPC_SLM_READ);
    EXPECT_EQ(op.slm, slm(4096));
    EXPECT_EQ(op.bytes, 8192u);
    csd_cmd wr{NVME_CS_MEM_WRITE, kMemNsid, 0, 1, 64, 0, 0, 0};   // byte 4 GiB: past SLM
    EXPECT_EQ(csd_core_cs_decode_mem(core, &wr, &ctx, &op) & 0x7ff, CSD_STATUS_SLM_OUT_OF_BOUNDS);
    wr.cdw11 = 0;
    wr.cdw12 = 6;                                                   // not a multiple of 4
    EXPECT_EQ(csd_core_cs_decode_mem(core, &wr, &ctx, &op), CSD_STATUS_INVALID_FIELD | CSD_STATUS_DNR);
    wr.cdw12 = 1024 * 1024;                                         // over MDTS
    EXPECT_EQ(csd_core_cs_decode_mem(core, &wr, &ctx, &op), CSD_STATUS_INVALID_FIELD | CSD_STATUS_DNR);
    csd_cmd other{0x03, kMemNsid, 0, 0, 64, 0, 0, 0};
    EXPECT_EQ(csd_core_cs_decode_mem(core, &other, &ctx, &op), CSD_STATUS_INVALID_OPCODE | CSD_STATUS_DNR);

    put(0, std::vector<uint8_t>(64, 0x11));
    csd_cmd fill{NVME_CS_MEM_FILL, kMemNsid, 8, 0, 40, 0xA1B2C3D4u, 0, 0};
    ASSERT_EQ(csd_core_cs_memory_fill(core, &fill), 0);
    const auto got = get<uint8_t>(0, 64);
    for (size_t i = 0; i < 64; i++) {
        const uint8_t want = (i < 8 || i >= 48) ? 0x11 : static_cast<uint8_t>(0xA1B2C3D4u >> (8 * (i % 4)));
        EXPECT_EQ(got[i], want) << "byte " << i;
    }
    fill.cdw10 = 2;                                                 // misaligned start
    EXPECT_EQ(csd_core_cs_memory_fill(core, &fill), CSD_STATUS_INVALID_FIELD | CSD_STATUS_DNR);
    fill.cdw10 = 0;
    fill.cdw12 = static_cast<uint32_t>(csd_core_slm_size(core) > UINT32_MAX ? UINT32_MAX - 3 : csd_core_slm_size(core) + 4);
    EXPECT_EQ(csd_core_cs_memory_fill(core, &fill) & 0x7ff, CSD_STATUS_SLM_OUT_OF_BOUNDS);
}

// Load Program (85h) as the vendor Program Load of the same program: an eBPF example in
// chunks into slot 0101h, inactive until activated, then run by Execute Program and
// checked against the records computed here; unload; the index and type checks.
namespace {

// Load Program of an image in 512-byte chunks as an embedding runs it (decode, then the
// standard front end's load or unload); the status of the first chunk that fails.
class LoadProgram : public NvmeCs {
protected:
    std::vector<uint8_t> img;
    void SetUp() override
    {
        NvmeCs::SetUp();
        const std::string path = std::string(CSD_BPF_EXAMPLES) + "/threshold.o", skip = ebpf_tests_skipped(core, path);
        if (!skip.empty()) GTEST_SKIP() << skip;
        img = read_file(path);
    }
    uint16_t chunk(uint32_t off, uint32_t len, uint32_t cdw10, uint32_t size = 0, const uint8_t *data = nullptr)
    {
        const csd_ctx ctx{1 << 20, 512, 0, 0};
        csd_cmd c{NVME_CS_ADM_LOAD_PROGRAM, 0, cdw10, size ? size : static_cast<uint32_t>(img.size()), 16, 0, len, off};
        csd_op op;
        uint16_t st = csd_core_cs_decode_load_program(core, &c, &ctx, &op);
        if (st) return st;
        uint32_t dw0 = 0;
        char why[256];
        st = (op.opcode == CSD_OPC_PROGRAM_UNLOAD)
                 ? csd_core_cs_program_unload(core, &op)
                 : csd_core_cs_program_load(core, &op, (data ? data : img.data()) + off, &dw0, why, sizeof why);
        csd_core_complete(core, &op, st);
        return st;
    }
    uint16_t load(uint16_t slot, const std::vector<uint8_t> &image)
    {
        uint16_t st = 0;
        for (uint32_t off = 0; off < image.size() && !st; off += 512) {
            st = chunk(off, std::min<uint32_t>(512, static_cast<uint32_t>(image.size()) - off),
                       slot | NVME_CS_PROGRAM_TYPE_EBPF << 16, static_cast<uint32_t>(image.size()), image.data());
        }
        return st;
    }
    uint16_t unload(uint16_t slot) { return chunk(0, 0, slot | NVME_CS_LOAD_UNLOAD); }
};

}  // namespace

TEST_F(LoadProgram, ActivateExecuteUnload)
{
    const uint16_t slot = 0x101;
    csd_ctx ctx{1 << 20, 512, 0, 0};
    auto load_chunk = [&](uint32_t off, uint32_t len, uint32_t cdw10) { return chunk(off, len, cdw10); };
    const uint32_t ebpf = slot | NVME_CS_PROGRAM_TYPE_EBPF << 16;
    ASSERT_EQ(load(slot, img), 0);
    EXPECT_EQ(load(slot, img), NVME_CS_PROGRAM_IN_USE | CSD_STATUS_DNR);  // the index holds one
    EXPECT_EQ(csd_core_cs_program_active(core, slot), 0);   // loaded, not yet active
    const uint32_t n = 500;
    std::vector<uint8_t> recs(16 * n), want;
    for (uint32_t i = 0; i < n; i++) {
        const int32_t key = static_cast<int32_t>(i * 7919 % 1000) - 200;
        std::memcpy(&recs[16 * i], &key, 4);
        if (key > 400) want.insert(want.end(), recs.begin() + 16 * i, recs.begin() + 16 * (i + 1));
    }
    put(0, recs);
    std::vector<uint8_t> params(16 + 8);
    const uint32_t h[4] = {n, CSD_BPF_FILTER, 1, 0};
    const uint64_t threshold = 400;
    std::memcpy(params.data(), h, 16);
    std::memcpy(params.data() + 16, &threshold, 8);
    const std::vector<nvme_cs_mem_range> io = {mr(0, 16 * n), mr(1 << 20, 16 * n)};
    EXPECT_EQ(execute(slot, 0, io, params, 2), NVME_CS_PROGRAM_NOT_ACTIVATED | CSD_STATUS_DNR);
    ASSERT_EQ(csd_core_cs_program_activation(core, slot), 0);
    uint32_t dw0 = 0;
    ASSERT_EQ(execute(slot, 0, io, params, 2, &dw0), 0);
    EXPECT_EQ(dw0, want.size());
    EXPECT_EQ(get<uint8_t>(1 << 20, want.size()), want);
    // active, it is in use: deactivate first; unloaded, its index holds no program
    EXPECT_EQ(unload(slot), NVME_CS_PROGRAM_IN_USE | CSD_STATUS_DNR);
    ASSERT_EQ(csd_core_cs_program_activation(core, slot | NVME_CS_PAM_DEACTIVATE), 0);
    ASSERT_EQ(unload(slot), 0);
    EXPECT_EQ(csd_core_cs_program_activation(core, slot), NVME_CS_NO_PROGRAM | CSD_STATUS_DNR);
    EXPECT_EQ(unload(slot), NVME_CS_NO_PROGRAM | CSD_STATUS_DNR);
    // an image the verifier refuses: Invalid Program Data, the slot left empty
    std::vector<uint8_t> bad = img;
    std::fill(bad.begin() + 64, bad.end(), 0xFF);
    EXPECT_EQ(load(slot, bad), NVME_CS_INVALID_PROGRAM_DATA | CSD_STATUS_DNR);
    EXPECT_EQ(csd_core_cs_program_activation(core, slot), NVME_CS_NO_PROGRAM | CSD_STATUS_DNR);
    // checks: a built-in's index, past the table, another type, too big
    EXPECT_EQ(load_chunk(0, 64, CSD_PROG_COPY | NVME_CS_PROGRAM_TYPE_EBPF << 16),
              NVME_CS_PROGRAM_INDEX_NOT_DOWNLOADABLE | CSD_STATUS_DNR);
    EXPECT_EQ(load_chunk(0, 64, 0x200 | NVME_CS_PROGRAM_TYPE_EBPF << 16), NVME_CS_INVALID_PROGRAM_INDEX | CSD_STATUS_DNR);
    EXPECT_EQ(load_chunk(0, 64, slot | 7u << 16), NVME_CS_INVALID_PROGRAM_TYPE | CSD_STATUS_DNR);
    csd_cmd big{NVME_CS_ADM_LOAD_PROGRAM, 0, ebpf, CSD_MAX_PROGRAM_BYTES + 1, 16, 0, 64, 0};
    csd_op op;
    EXPECT_EQ(csd_core_cs_decode_load_program(core, &big, &ctx, &op), NVME_CS_PROGRAM_TOO_BIG | CSD_STATUS_DNR);
}

// Logs 82h, 83h, 84h (layouts in nvme_cs.h) read back what the test set up.
TEST_F(NvmeCs, ProgramListTypesAndRangeSetLogs)
{
    std::vector<uint8_t> page(NVME_CS_LOG_MAX_SIZE);
    uint32_t avail = 0, count = 0;
    ASSERT_EQ(csd_core_cs_program_activation(core, CSD_PROG_GEMM | NVME_CS_PAM_DEACTIVATE), 0);
    ASSERT_EQ(csd_core_cs_get_log(core, NVME_CS_LOG_PROGRAM_LIST, 0, page.data(), static_cast<uint32_t>(page.size()), &avail), 0);
    std::memcpy(&count, page.data(), 4);
    EXPECT_EQ(avail, 8 + count * sizeof(nvme_cs_program_entry));
    EXPECT_EQ(count, 12u);                                  // the twelve device-defined programs, no others loaded
    for (uint32_t i = 0; i < count; i++) {
        nvme_cs_program_entry e;
        std::memcpy(&e, page.data() + 8 + i * sizeof e, sizeof e);
        EXPECT_EQ(e.index, i + 1);                          // ids 01h..0Ch
        EXPECT_EQ(e.kind, NVME_CS_PROGRAM_DEVICE);
        EXPECT_EQ(e.flags, e.index == CSD_PROG_GEMM ? 0u : NVME_CS_PROGRAM_ACTIVE) << e.index;
    }
    ASSERT_EQ(csd_core_cs_get_log(core, NVME_CS_LOG_DL_PROGRAM_TYPES, 0, page.data(), 4096, &avail), 0);
    if (core_runs_ebpf(core)) {  // (none without the eBPF runtime: test_bpf.cc)
        EXPECT_EQ(avail, 9u);
        EXPECT_EQ(page[0], 1);
        EXPECT_EQ(page[8], NVME_CS_PROGRAM_TYPE_EBPF);
    }

    uint16_t a = 0, b = 0;
    ASSERT_EQ(create({mr(0, 64), mr(4096, 128)}, &a), 0);
    ASSERT_EQ(create({mr(8192, 32)}, &b), 0);
    ASSERT_EQ(csd_core_cs_get_log(core, NVME_CS_LOG_MEMORY_RANGE_SETS, 0, page.data(), static_cast<uint32_t>(page.size()), &avail), 0);
    EXPECT_EQ(avail, 8u + 8 + 2 * 32 + 8 + 32);
    std::memcpy(&count, page.data(), 4);
    EXPECT_EQ(count, 2u);
    nvme_cs_range_set_entry e;
    nvme_cs_mem_range r;
    std::memcpy(&e, page.data() + 8, sizeof e);
    EXPECT_EQ(e.rsid, a);
    EXPECT_EQ(e.nr_ranges, 2);
    std::memcpy(&r, page.data() + 16 + 32, sizeof r);
    EXPECT_EQ(r.sb, 4096u);
    EXPECT_EQ(r.len, 128u);
    std::memcpy(&e, page.data() + 16 + 64, sizeof e);
    EXPECT_EQ(e.rsid, b);
    EXPECT_EQ(e.nr_ranges, 1);
    // from an offset, and the errors
    ASSERT_EQ(csd_core_cs_get_log(core, NVME_CS_LOG_MEMORY_RANGE_SETS, 8, page.data(), 4, &avail), 0);
    std::memcpy(&e, page.data(), 4);
    EXPECT_EQ(e.rsid, a);
    EXPECT_EQ(avail, 8u + 2 * 32 + 8 + 32);
    EXPECT_EQ(csd_core_cs_get_log(core, NVME_CS_LOG_MEMORY_RANGE_SETS, 1000, page.data(), 4, &avail),
              CSD_STATUS_INVALID_FIELD | CSD_STATUS_DNR);
    EXPECT_EQ(csd_core_cs_get_log(core, 0x85, 0, page.data(), 4, &avail), CSD_STATUS_INVALID_FIELD | CSD_STATUS_DNR);
}

namespace {

struct NsInfo {
    uint32_t nsid;
    csd_ctx ctx;
};

int ns_info(void *opaque, uint32_t nsid, csd_ctx *ctx)
{
    const auto *ns = static_cast<const NsInfo *>(opaque);
    if (nsid != ns->nsid) return -1;
    *ctx = ns->ctx;
    return 0;
}

nvme_cs_copy_src src_range(uint32_t nsid, uint64_t slba, uint16_t nlb0)
{
    nvme_cs_copy_src s{};
    s.snsid = nsid;
    s.slba = slba;
    s.nlb = nlb0;
    return s;
}

csd_cmd copy_cmd(uint8_t opcode, uint32_t nsid, uint64_t dest, uint32_t nr, uint32_t format)
{
    csd_cmd c{};
    c.opcode = opcode;
    c.nsid = nsid;
    c.cdw10 = static_cast<uint32_t>(dest);
    c.cdw11 = static_cast<uint32_t>(dest >> 32);
    c.cdw12 = (nr - 1) | format << 8;
    return c;
}

}  // namespace

TEST_F(NvmeCs, MemoryCopyMakesOneSlmLoadPerRangeIntoConsecutiveMemory)
{
    const NsInfo ns{1, {1000, 512, 0}};
    const nvme_cs_copy_src d[] = {src_range(1, 10, 3), src_range(1, 500, 0)};  // 4 LBAs, then 1
    std::vector<csd_cs_copy_part> parts(NVME_CS_MAX_COPY_RANGES);
    uint32_t n = 0;
    const csd_cmd c = copy_cmd(NVME_CS_MEM_COPY, kMemNsid, 8192, 2, NVME_CS_COPY_FORMAT_2);
    ASSERT_EQ(csd_core_cs_decode_memory_copy(core, &c, d, sizeof d, ns_info, const_cast<NsInfo *>(&ns), parts.data(), &n), 0);
    ASSERT_EQ(n, 2u);
    EXPECT_EQ(parts[0].op.opcode, CSD_OPC_SLM_LOAD);
    EXPECT_EQ(parts[0].nsid, 1u);
    EXPECT_EQ(parts[0].op.slba, 10u);
    EXPECT_EQ(parts[0].op.nlb, 4u);
    EXPECT_EQ(parts[0].op.slm_offset, 8192u);
    EXPECT_EQ(parts[0].op.bytes, 2048u);
    EXPECT_EQ(parts[1].op.slba, 500u);
    EXPECT_EQ(parts[1].op.slm_offset, 8192u + 2048u);  // right after the first range
    EXPECT_EQ(parts[1].op.slm, csd_core_slm_base(core) + 8192 + 2048);
    for (uint32_t i = 0; i < n; i++) csd_core_complete(core, &parts[i].op, 0);
    EXPECT_EQ(counter(CSD_STAT_SLM_LOAD_CMDS), 2u);
    EXPECT_EQ(counter(CSD_STAT_BYTES_NS_TO_SLM), 2560u);
}

TEST_F(NvmeCs, MemoryCopyFormat3TakesFortyByteDescriptors)
{
    const NsInfo ns{1, {1000, 512, 0}};
    std::vector<uint8_t> d(80, 0xEE);  // the 8 trailing bytes of each descriptor are not read
    const auto a = src_range(1, 1, 0), b = src_range(1, 2, 1);
    std::memcpy(d.data(), &a, 32);
    std::memcpy(d.data() + 40, &b, 32);
    std::vector<csd_cs_copy_part> parts(NVME_CS_MAX_COPY_RANGES);
    uint32_t n = 0;
    const csd_cmd c = copy_cmd(NVME_CS_MEM_COPY, kMemNsid, 0, 2, NVME_CS_COPY_FORMAT_3);
    ASSERT_EQ(csd_core_cs_decode_memory_copy(core, &c, d.data(), 80, ns_info, const_cast<NsInfo *>(&ns), parts.data(), &n), 0);
    ASSERT_EQ(n, 2u);
    EXPECT_EQ(parts[1].op.slba, 2u);
    EXPECT_EQ(parts[1].op.nlb, 2u);
    EXPECT_EQ(parts[1].op.slm_offset, 512u);
    for (uint32_t i = 0; i < n; i++) csd_core_complete(core, &parts[i].op, 0);
}

TEST_F(NvmeCs, MemoryCopyRefusals)
{
    const NsInfo ns{1, {1000, 512, 0}};
    std::vector<csd_cs_copy_part> parts(NVME_CS_MAX_COPY_RANGES);
    uint32_t n = 0;
    auto decode = [&](const csd_cmd &c, const void *d, uint32_t len) {
        return csd_core_cs_decode_memory_copy(core, &c, d, len, ns_info, const_cast<NsInfo *>(&ns), parts.data(), &n);
    };
    const nvme_cs_copy_src ok = src_range(1, 0, 0), other_ns = src_range(7, 0, 0), past = src_range(1, 999, 1);
    EXPECT_EQ(decode(copy_cmd(NVME_CS_MEM_COPY, kMemNsid, 0, 1, 0), &ok, 32), NVME_CS_INCOMPATIBLE_NS_OR_FORMAT | CSD_STATUS_DNR);
    EXPECT_EQ(decode(copy_cmd(NVME_CS_MEM_COPY, kMemNsid, 0, 1, 4), &ok, 32), NVME_CS_INCOMPATIBLE_NS_OR_FORMAT | CSD_STATUS_DNR);
    EXPECT_EQ(decode(copy_cmd(NVME_CS_MEM_COPY, kMemNsid, 0, 1, 2), &other_ns, 32), NVME_CS_NS_NOT_REACHABLE | CSD_STATUS_DNR);
    EXPECT_EQ(decode(copy_cmd(NVME_CS_MEM_COPY, kMemNsid, 0, 1, 2), &past, 32), CSD_STATUS_LBA_OUT_OF_RANGE | CSD_STATUS_DNR);
    EXPECT_EQ(decode(copy_cmd(NVME_CS_MEM_COPY, kMemNsid, 0, 1, 2), &ok, 31), CSD_STATUS_INVALID_FIELD | CSD_STATUS_DNR);
    const uint64_t last = csd_core_slm_size(core) - 256;  // 512 bytes do not fit
    EXPECT_EQ(decode(copy_cmd(NVME_CS_MEM_COPY, kMemNsid, last, 1, 2), &ok, 32), CSD_STATUS_SLM_OUT_OF_BOUNDS | CSD_STATUS_DNR);
    // a second range that fails leaves nothing to complete and moves no bytes
    const nvme_cs_copy_src two[] = {ok, other_ns};
    EXPECT_EQ(decode(copy_cmd(NVME_CS_MEM_COPY, kMemNsid, 0, 2, 2), two, 64), NVME_CS_NS_NOT_REACHABLE | CSD_STATUS_DNR);
    EXPECT_EQ(n, 0u);
    EXPECT_EQ(counter(CSD_STAT_BYTES_NS_TO_SLM), 0u);
}

TEST_F(NvmeCs, NvmCopyFromMemoryMakesSlmStoresIntoConsecutiveLbas)
{
    const csd_ctx ctx{1000, 512, 0, 0};
    const nvme_cs_mem_range d[] = {mr(4096, 1024), mr(0, 512)};
    std::vector<csd_cs_copy_part> parts(NVME_CS_MAX_COPY_RANGES);
    uint32_t n = 0;
    const csd_cmd c = copy_cmd(NVME_CS_NVM_COPY, 1, 100, 2, NVME_CS_COPY_FORMAT_MEMORY);
    ASSERT_EQ(csd_core_cs_decode_nvm_copy(core, kMemNsid, &c, &ctx, d, sizeof d, parts.data(), &n), 0);
    ASSERT_EQ(n, 2u);
    EXPECT_EQ(parts[0].op.opcode, CSD_OPC_SLM_STORE);
    EXPECT_EQ(parts[0].op.slba, 100u);
    EXPECT_EQ(parts[0].op.nlb, 2u);
    EXPECT_EQ(parts[0].op.slm_offset, 4096u);
    EXPECT_EQ(parts[1].op.slba, 102u);
    EXPECT_EQ(parts[1].op.slm_offset, 0u);
    for (uint32_t i = 0; i < n; i++) csd_core_complete(core, &parts[i].op, 0);
    EXPECT_EQ(counter(CSD_STAT_SLM_STORE_CMDS), 2u);
    EXPECT_EQ(counter(CSD_STAT_BYTES_SLM_TO_NS), 1536u);
}

TEST_F(NvmeCs, NvmCopyFromMemoryRefusals)
{
    const csd_ctx ctx{1000, 512, 0, 0};
    std::vector<csd_cs_copy_part> parts(NVME_CS_MAX_COPY_RANGES);
    uint32_t n = 0;
    auto decode = [&](uint64_t slba, const nvme_cs_mem_range &r, uint32_t format = NVME_CS_COPY_FORMAT_MEMORY) {
        const csd_cmd c = copy_cmd(NVME_CS_NVM_COPY, 1, slba, 1, format);
        return csd_core_cs_decode_nvm_copy(core, kMemNsid, &c, &ctx, &r, sizeof r, parts.data(), &n);
    };
    EXPECT_EQ(decode(0, mr(0, 512, 9)), NVME_CS_INVALID_MEMORY_NS | CSD_STATUS_DNR);
    EXPECT_EQ(decode(0, mr(0, 500)), CSD_STATUS_INVALID_FIELD | CSD_STATUS_DNR);  // not whole LBAs
    EXPECT_EQ(decode(0, mr(0, 0)), CSD_STATUS_INVALID_FIELD | CSD_STATUS_DNR);
    EXPECT_EQ(decode(999, mr(0, 1024)), CSD_STATUS_LBA_OUT_OF_RANGE | CSD_STATUS_DNR);
    EXPECT_EQ(decode(~0ull, mr(0, 512)), CSD_STATUS_LBA_OUT_OF_RANGE | CSD_STATUS_DNR);
    EXPECT_EQ(decode(0, mr(csd_core_slm_size(core) - 256, 512)), CSD_STATUS_SLM_OUT_OF_BOUNDS | CSD_STATUS_DNR);
    EXPECT_EQ(decode(0, mr(0, 512), NVME_CS_COPY_FORMAT_2), NVME_CS_INCOMPATIBLE_NS_OR_FORMAT | CSD_STATUS_DNR);
    EXPECT_EQ(n, 0u);
}

// Issue 27: a zoned namespace's writes follow a write pointer and zone states the core does
// not keep, and its reads must not cross zones: Copy format 4h into one, or Memory Copy from
// one, is refused whole with Incompatible Namespace or Format (nothing decoded, nothing to
// complete, nothing counted); the vendor commands that move its LBAs are not its command
// set's (Invalid Command Opcode, as QEMU's zoned command table says).
TEST_F(NvmeCs, ZonedNamespacesAreRefusedByTheCopiesAndTheVendorLbaCommands)
{
    const csd_ctx zoned{1000, 512, 0, 1};
    std::vector<csd_cs_copy_part> parts(NVME_CS_MAX_COPY_RANGES);
    uint32_t n = 7;
    const nvme_cs_mem_range r = mr(0, 1024);
    const csd_cmd to = copy_cmd(NVME_CS_NVM_COPY, 1, 0, 1, NVME_CS_COPY_FORMAT_MEMORY);
    EXPECT_EQ(csd_core_cs_decode_nvm_copy(core, kMemNsid, &to, &zoned, &r, sizeof r, parts.data(), &n),
              NVME_CS_INCOMPATIBLE_NS_OR_FORMAT | CSD_STATUS_DNR);
    EXPECT_EQ(n, 0u);
    const NsInfo ns{1, zoned};
    const nvme_cs_copy_src from = src_range(1, 0, 1);
    const csd_cmd c = copy_cmd(NVME_CS_MEM_COPY, kMemNsid, 0, 1, NVME_CS_COPY_FORMAT_2);
    EXPECT_EQ(csd_core_cs_decode_memory_copy(core, &c, &from, sizeof from, ns_info, const_cast<NsInfo *>(&ns),
                                             parts.data(), &n),
              NVME_CS_INCOMPATIBLE_NS_OR_FORMAT | CSD_STATUS_DNR);
    EXPECT_EQ(n, 0u);
    EXPECT_EQ(counter(CSD_STAT_SLM_STORE_CMDS) + counter(CSD_STAT_SLM_LOAD_CMDS), 0u);  // refused before any part
    for (uint8_t opc : {CSD_OPC_SLM_LOAD, CSD_OPC_SLM_STORE, CSD_OPC_COMPARE_WRITE}) {
        const csd_cmd v{opc, 1, 0, 0, 0, 0, 0, 0};
        csd_op op;
        EXPECT_EQ(csd_core_decode(core, &v, &zoned, &op), CSD_STATUS_INVALID_OPCODE | CSD_STATUS_DNR) << int(opc);
    }
    EXPECT_EQ(counter(CSD_STAT_BYTES_SLM_TO_NS) + counter(CSD_STAT_BYTES_NS_TO_SLM), 0u);
}

TEST_F(NvmeCs, ReachabilityLogsPutEveryNamespaceInOneGroup)
{
    const uint32_t nsids[] = {1, 2, 3};
    std::vector<uint8_t> page(NVME_CS_LOG_MAX_SIZE);
    uint32_t avail = 0;
    ASSERT_EQ(csd_core_cs_reachability_log(NVME_CS_LOG_REACHABILITY_GROUPS, nsids, 3, 0, page.data(),
                                           static_cast<uint32_t>(page.size()), &avail), 0);
    ASSERT_EQ(avail, sizeof(nvme_cs_reach_header) + sizeof(nvme_cs_reach_group) + 12);
    nvme_cs_reach_header h;
    nvme_cs_reach_group g;
    std::memcpy(&h, page.data(), sizeof h);
    std::memcpy(&g, page.data() + sizeof h, sizeof g);
    EXPECT_EQ(h.entries, 1u);
    EXPECT_EQ(g.rgid, 1u);
    EXPECT_EQ(g.nnid, 3u);
    uint32_t listed[3];
    std::memcpy(listed, page.data() + sizeof h + sizeof g, 12);
    EXPECT_EQ(std::vector<uint32_t>(listed, listed + 3), std::vector<uint32_t>({1, 2, 3}));
    ASSERT_EQ(csd_core_cs_reachability_log(NVME_CS_LOG_REACHABILITY_ASSOC, nsids, 3, 0, page.data(),
                                           static_cast<uint32_t>(page.size()), &avail), 0);
    nvme_cs_reach_assoc a;
    std::memcpy(&a, page.data() + sizeof h, sizeof a);
    EXPECT_EQ(a.raid, 1u);
    EXPECT_EQ(a.nrid, 1u);
    uint32_t rgid = 0;
    std::memcpy(&rgid, page.data() + sizeof h + sizeof a, 4);
    EXPECT_EQ(rgid, 1u);
    EXPECT_EQ(csd_core_cs_reachability_log(NVME_CS_LOG_REACHABILITY_GROUPS, nsids, 3, 2, page.data(), 64, &avail),
              CSD_STATUS_INVALID_FIELD | CSD_STATUS_DNR);
    EXPECT_EQ(csd_core_cs_reachability_log(0x80, nsids, 3, 0, page.data(), 64, &avail),
              CSD_STATUS_INVALID_FIELD | CSD_STATUS_DNR);
}

TEST_F(NvmeCs, ExecuteProgramCountsAsAnExecute)
{
    put(0, pattern(64, 1));
    ASSERT_EQ(execute(CSD_PROG_COPY, 0, {mr(0, 64), mr(4096, 64)}, {}, 2), 0);
    EXPECT_EQ(counter(CSD_STAT_EXEC_CMDS), 1u);
}

TEST_F(LoadProgram, AtMostSixteenDownloadedProgramsActive)
{
    for (uint16_t i = 0; i <= NVME_CS_MAX_ACTIVE_DOWNLOADED; i++) {
        ASSERT_EQ(load(static_cast<uint16_t>(CSD_SLOT_FIRST + i), img), 0);
    }
    for (uint16_t i = 0; i < NVME_CS_MAX_ACTIVE_DOWNLOADED; i++) {
        ASSERT_EQ(csd_core_cs_program_activation(core, CSD_SLOT_FIRST + i), 0);
    }
    const uint16_t last = CSD_SLOT_FIRST + NVME_CS_MAX_ACTIVE_DOWNLOADED;
    EXPECT_EQ(csd_core_cs_program_activation(core, last), NVME_CS_MAX_PROGRAMS_ACTIVATED | CSD_STATUS_DNR);
    EXPECT_EQ(csd_core_cs_program_activation(core, CSD_SLOT_FIRST), 0);  // active already: not one more
    EXPECT_EQ(csd_core_cs_program_activation(core, CSD_PROG_COPY), 0);   // built-ins do not count
    ASSERT_EQ(csd_core_cs_program_activation(core, CSD_SLOT_FIRST | NVME_CS_PAM_DEACTIVATE), 0);
    EXPECT_EQ(csd_core_cs_program_activation(core, last), 0);
}

TEST_F(LoadProgram, ImageBytesHeldAreBounded)
{
    // images still loading hold their whole size: four of 4 MiB reach the 16 MiB held
    const uint32_t size = CSD_MAX_PROGRAM_BYTES;
    std::vector<uint8_t> part(512, 0);
    for (uint16_t i = 0; i < NVME_CS_MAX_PROGRAM_BYTES_HELD / size; i++) {
        ASSERT_EQ(chunk(0, 512, (CSD_SLOT_FIRST + i) | NVME_CS_PROGRAM_TYPE_EBPF << 16, size, part.data()), 0);
    }
    const uint32_t next = (CSD_SLOT_FIRST + NVME_CS_MAX_PROGRAM_BYTES_HELD / size) | NVME_CS_PROGRAM_TYPE_EBPF << 16;
    EXPECT_EQ(chunk(0, 512, next, size, part.data()), NVME_CS_MAX_PROGRAM_BYTES_EXCEEDED | CSD_STATUS_DNR);
    ASSERT_EQ(unload(CSD_SLOT_FIRST), 0);  // abandoning a load frees its bytes
    EXPECT_EQ(chunk(0, 512, next, size, part.data()), 0);
}

TEST_F(NvmeCs, ARangeSetInUseByAnExecuteIsNotDeleted)
{
    uint16_t rsid = 0;
    ASSERT_EQ(create({mr(0, 64), mr(4096, 64)}, &rsid), 0);
    const csd_cs_exec_cmd cmd{CSD_PROG_COPY | static_cast<uint32_t>(rsid) << 16, 2, 0, 0};
    csd_exec *a = nullptr, *b = nullptr;
    ASSERT_EQ(csd_core_cs_exec_prepare(core, kMemNsid, &cmd, nullptr, 0, &a), 0);
    ASSERT_EQ(csd_core_cs_exec_prepare(core, kMemNsid, &cmd, nullptr, 0, &b), 0);
    EXPECT_EQ(csd_core_cs_range_set_delete(core, rsid), NVME_CS_MEMORY_RANGE_SET_IN_USE | CSD_STATUS_DNR);
    uint32_t dw0 = 0, dw1 = 0;
    ASSERT_EQ(csd_core_exec_run(core, a, nullptr, &dw0, &dw1), 0);  // one still holds it
    EXPECT_EQ(csd_core_cs_range_set_delete(core, rsid), NVME_CS_MEMORY_RANGE_SET_IN_USE | CSD_STATUS_DNR);
    csd_core_exec_discard(b);
    EXPECT_EQ(csd_core_cs_range_set_delete(core, rsid), 0);
    // a refused Execute does not keep holding it
    ASSERT_EQ(create({mr(0, 64), mr(4096, 64)}, &rsid), 0);
    const csd_cs_exec_cmd bad{0x3F | static_cast<uint32_t>(rsid) << 16, 2, 0, 0};
    EXPECT_NE(csd_core_cs_exec_prepare(core, kMemNsid, &bad, nullptr, 0, &a), 0);
    const csd_cs_exec_cmd miscounted{CSD_PROG_COPY | static_cast<uint32_t>(rsid) << 16, 3, 0, 0};
    EXPECT_NE(csd_core_cs_exec_prepare(core, kMemNsid, &miscounted, nullptr, 0, &a), 0);
    EXPECT_EQ(csd_core_cs_range_set_delete(core, rsid), 0);
}

// Issue 27: one activation state for both front ends. A download slot's activation belongs
// to the program in it: the vendor Program Unload (which knows no activation) ends it with
// the program, so a program loaded next into the slot, by either front end, starts
// inactive on the standard side, and the 16-active limit counts only programs present.
namespace {

class BothFrontEnds : public LoadProgram {
protected:
    // The vendor Program Load of the whole image into slot, in one chunk.
    uint16_t vendor_load(uint16_t slot)
    {
        csd_op op;
        const uint32_t size = static_cast<uint32_t>(img.size());
        uint16_t st = decode(CSD_OPC_PROGRAM_LOAD, csd_program_load_cdw10(slot, CSD_PROGRAM_TYPE_EBPF), size, 0, size, 16, &op);
        if (st) return st;
        uint32_t dw0 = 0;
        char why[256];
        st = csd_core_program_load(core, &op, img.data(), &dw0, why, sizeof why);
        csd_core_complete(core, &op, st);
        return st;
    }
    // Whether the Program List (82h) marks index id active; false if it lists no such index.
    bool listed_active(uint16_t id)
    {
        std::vector<uint8_t> page(NVME_CS_LOG_MAX_SIZE);
        uint32_t avail = 0, count = 0;
        EXPECT_EQ(csd_core_cs_get_log(core, NVME_CS_LOG_PROGRAM_LIST, 0, page.data(),
                                      static_cast<uint32_t>(page.size()), &avail), 0);
        std::memcpy(&count, page.data(), 4);
        for (uint32_t i = 0; i < count; i++) {
            nvme_cs_program_entry e;
            std::memcpy(&e, page.data() + 8 + i * sizeof e, sizeof e);
            if (e.index == id) return e.flags & NVME_CS_PROGRAM_ACTIVE;
        }
        return false;
    }
    // A filter of 4 records of 16 zero bytes, run by Execute Program: its status.
    uint16_t run_standard(uint16_t slot)
    {
        put(0, std::vector<uint8_t>(64, 0));
        std::vector<uint8_t> params(16 + 8);
        const uint32_t h[4] = {4, CSD_BPF_FILTER, 1, 0};
        std::memcpy(params.data(), h, 16);
        return execute(slot, 0, {mr(0, 64), mr(4096, 64)}, params, 2);
    }
};

}  // namespace

TEST_F(BothFrontEnds, AVendorUnloadEndsTheActivationOfItsProgram)
{
    const uint16_t slot = 0x101;
    const uint16_t st = load(slot, img);
    if (CSD_STATUS_CODE(st) == CSD_STATUS_INVALID_FIELD) GTEST_SKIP() << "no eBPF runtime in this build";
    ASSERT_EQ(st, 0);
    ASSERT_EQ(csd_core_cs_program_activation(core, slot), 0);
    ASSERT_EQ(run_standard(slot), 0);
    ASSERT_EQ(vendor_unload(slot), 0);  // the vendor front end knows no activation
    EXPECT_EQ(csd_core_cs_program_active(core, slot), 0);
    EXPECT_EQ(csd_core_cs_program_activation(core, slot), NVME_CS_NO_PROGRAM | CSD_STATUS_DNR);
    // a program the vendor front end loads next into the slot starts inactive
    ASSERT_EQ(vendor_load(slot), 0);
    EXPECT_EQ(csd_core_cs_program_active(core, slot), 0);
    EXPECT_FALSE(listed_active(slot));
    EXPECT_EQ(run_standard(slot), NVME_CS_PROGRAM_NOT_ACTIVATED | CSD_STATUS_DNR);
    ASSERT_EQ(csd_core_cs_program_activation(core, slot), 0);
    EXPECT_TRUE(listed_active(slot));
    EXPECT_EQ(run_standard(slot), 0);
    // the standard unload still refuses an active program; the vendor one ends it
    EXPECT_EQ(unload(slot), NVME_CS_PROGRAM_IN_USE | CSD_STATUS_DNR);
    ASSERT_EQ(vendor_unload(slot), 0);
    ASSERT_EQ(load(slot, img), 0);  // the standard load of a new program: inactive as well
    EXPECT_EQ(run_standard(slot), NVME_CS_PROGRAM_NOT_ACTIVATED | CSD_STATUS_DNR);
}

TEST_F(BothFrontEnds, TheSixteenActiveLimitCountsOnlyProgramsPresent)
{
    for (uint16_t i = 0; i <= NVME_CS_MAX_ACTIVE_DOWNLOADED; i++) {
        const uint16_t st = load(static_cast<uint16_t>(CSD_SLOT_FIRST + i), img);
        if (CSD_STATUS_CODE(st) == CSD_STATUS_INVALID_FIELD) GTEST_SKIP() << "no eBPF runtime in this build";
        ASSERT_EQ(st, 0);
    }
    for (uint16_t i = 0; i < NVME_CS_MAX_ACTIVE_DOWNLOADED; i++) {
        ASSERT_EQ(csd_core_cs_program_activation(core, CSD_SLOT_FIRST + i), 0);
    }
    const uint16_t last = CSD_SLOT_FIRST + NVME_CS_MAX_ACTIVE_DOWNLOADED;
    EXPECT_EQ(csd_core_cs_program_activation(core, last), NVME_CS_MAX_PROGRAMS_ACTIVATED | CSD_STATUS_DNR);
    ASSERT_EQ(vendor_unload(CSD_SLOT_FIRST), 0);  // 15 active programs remain
    EXPECT_EQ(csd_core_cs_program_activation(core, last), 0);
    ASSERT_EQ(vendor_load(CSD_SLOT_FIRST), 0);    // loaded again, inactive: 16 active, the limit
    EXPECT_EQ(csd_core_cs_program_activation(core, CSD_SLOT_FIRST), NVME_CS_MAX_PROGRAMS_ACTIVATED | CSD_STATUS_DNR);
}

// Commands Supported and Effects (05h) of the memory and compute command sets: their I/O
// commands supported, those that change memory with LBCC; no list for another CSI.
TEST(NvmeCsEffects, TheMemoryAndComputeCommandSetsListTheirIoCommands)
{
    uint32_t e[256];
    std::fill(e, e + 256, 0xDEADu);
    EXPECT_EQ(csd_core_cs_io_effects(0x00, e), -1);
    EXPECT_EQ(csd_core_cs_io_effects(0x02, e), -1);
    EXPECT_EQ(e[0], 0xDEADu);  // untouched
    const uint32_t s = NVME_CS_EFFECTS_CSUPP, c = NVME_CS_EFFECTS_CSUPP | NVME_CS_EFFECTS_LBCC;
    ASSERT_EQ(csd_core_cs_io_effects(NVME_CS_CSI_SLM, e), 0);
    for (int op = 0; op < 256; op++) {
        const uint32_t want = op == NVME_CS_MEM_READ ? s
                              : (op == NVME_CS_MEM_WRITE || op == NVME_CS_MEM_FILL || op == NVME_CS_MEM_COPY) ? c
                                                                                                            : 0;
        EXPECT_EQ(e[op], want) << op;
    }
    ASSERT_EQ(csd_core_cs_io_effects(NVME_CS_CSI_CP, e), 0);
    for (int op = 0; op < 256; op++) EXPECT_EQ(e[op], op == NVME_CS_EXECUTE_PROGRAM ? c : 0u) << op;
}
