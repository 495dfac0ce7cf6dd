// SPDX-License-Identifier: MIT
// Descriptor validation, SLM bounds, log pages and statistics of the device core.
#include "core_fixture.h"

namespace {

using Ranges = std::vector<std::pair<uint64_t, uint64_t>>;

class Descriptor : public CoreTest {};

TEST_F(Descriptor, ValidCopyRuns)
{
    put<uint8_t>(0, {1, 2, 3, 4});
    auto r = exec0(CSD_PROG_COPY, {{0, 4}, {4096, 4}});
    EXPECT_OK(r);
    EXPECT_EQ(r.dw0, 4u);
    EXPECT_EQ(get<uint8_t>(4096, 4), (std::vector<uint8_t>{1, 2, 3, 4}));
}

TEST_F(Descriptor, ErrorsCarryDoNotRetry)
{
    auto d = make_descriptor(CSD_PROG_COPY, {{0, 4}, {8, 4}}, nullptr, 0);
    d[0] = 'X';
    auto r = exec_raw(d);
    EXPECT_STATUS(r, CSD_STATUS_INVALID_DESCRIPTOR);
    EXPECT_TRUE(r.status & CSD_STATUS_DNR);
}

TEST_F(Descriptor, BadHeaderFields)
{
    const Ranges rr{{0, 4}, {8, 4}};
    auto base = make_descriptor(CSD_PROG_COPY, rr, nullptr, 0);
    auto with = [&](size_t off, uint8_t v) { auto d = base; d[off] = v; return exec_raw(d); };
    EXPECT_STATUS(with(4, 2), CSD_STATUS_INVALID_DESCRIPTOR);   // version 2
    EXPECT_STATUS(with(10, 1), CSD_STATUS_INVALID_DESCRIPTOR);  // flags
    EXPECT_STATUS(with(8, 0), CSD_STATUS_INVALID_DESCRIPTOR);   // nr_ranges 0
    EXPECT_STATUS(with(8, 3), CSD_STATUS_INVALID_DESCRIPTOR);   // nr_ranges disagrees with length
    EXPECT_STATUS(with(12, 1), CSD_STATUS_INVALID_DESCRIPTOR);  // param_len disagrees
    EXPECT_STATUS(with(15, 0x80), CSD_STATUS_INVALID_DESCRIPTOR);  // huge param_len
}

TEST_F(Descriptor, TooManyRanges)
{
    Ranges rr(CSD_MAX_RANGES + 1, {0, 4});
    EXPECT_STATUS(exec_raw(make_descriptor(CSD_PROG_COPY, rr, nullptr, 0)), CSD_STATUS_INVALID_DESCRIPTOR);
}

TEST_F(Descriptor, LengthLimits)
{
    std::vector<uint8_t> small(15, 0);
    EXPECT_STATUS(exec_raw(small), CSD_STATUS_INVALID_DESCRIPTOR);
    std::vector<uint8_t> params(CSD_MAX_DESC_LEN, 0);
    auto big = make_descriptor(CSD_PROG_COPY, {{0, 4}, {8, 4}}, params.data(), CSD_MAX_DESC_LEN - 47);
    EXPECT_EQ(big.size(), CSD_MAX_DESC_LEN + 1);
    EXPECT_STATUS(exec_raw(big), CSD_STATUS_INVALID_FIELD);  // CDW10 past max_desc_len
}

TEST_F(Descriptor, UnknownPrograms)
{
    EXPECT_STATUS(exec0(0, {{0, 4}}), CSD_STATUS_INVALID_PROGRAM);
    EXPECT_STATUS(exec0(0x0D, {{0, 4}}), CSD_STATUS_INVALID_PROGRAM);
    EXPECT_STATUS(exec0(0x100, {{0, 4}}), CSD_STATUS_INVALID_PROGRAM);  // downloadable slot, empty
    EXPECT_STATUS(exec0(0xFFFF, {{0, 4}}), CSD_STATUS_INVALID_PROGRAM);
}

TEST_F(Descriptor, RangesOutsideSlm)
{
    EXPECT_STATUS(exec0(CSD_PROG_COPY, {{kSlm - 4, 8}, {0, 8}}), CSD_STATUS_SLM_OUT_OF_BOUNDS);
    EXPECT_STATUS(exec0(CSD_PROG_COPY, {{0, 8}, {kSlm, 8}}), CSD_STATUS_SLM_OUT_OF_BOUNDS);
    // offset + length wraps around 2^64
    EXPECT_STATUS(exec0(CSD_PROG_COPY, {{UINT64_MAX - 7, 16}, {0, 16}}), CSD_STATUS_SLM_OUT_OF_BOUNDS);
    EXPECT_STATUS(exec0(CSD_PROG_COPY, {{8, UINT64_MAX}, {0, 16}}), CSD_STATUS_SLM_OUT_OF_BOUNDS);
    EXPECT_OK(exec0(CSD_PROG_COPY, {{kSlm - 8, 8}, {0, 8}}));  // ends exactly at the end
}

TEST_F(Descriptor, ZeroLengthRangeOnlyWhereAllowed)
{
    auto r = exec0(CSD_PROG_COPY, {{0, 0}, {0, 8}});
    EXPECT_STATUS(r, CSD_STATUS_INVALID_PARAMETERS);
}

TEST_F(Descriptor, SlmRangeAndTransferChecks)
{
    uint8_t *p;
    EXPECT_EQ(csd_core_slm_range(core, 0, kSlm, &p), 0);
    EXPECT_EQ(CSD_STATUS_CODE(csd_core_slm_range(core, 1, kSlm, &p)), CSD_STATUS_SLM_OUT_OF_BOUNDS);
    EXPECT_EQ(CSD_STATUS_CODE(csd_core_slm_range(core, UINT64_MAX, 2, &p)), CSD_STATUS_SLM_OUT_OF_BOUNDS);
    csd_op op;
    EXPECT_EQ(decode(CSD_OPC_SLM_WRITE, 8, 0, 4, 0, 0, &op), 0);
    EXPECT_EQ(CSD_STATUS_CODE(decode(CSD_OPC_SLM_WRITE, 8, 0, 0, 0, 0, &op)), CSD_STATUS_INVALID_FIELD);
    EXPECT_EQ(CSD_STATUS_CODE(decode(CSD_OPC_SLM_READ, 8, 0, 6, 0, 0, &op)), CSD_STATUS_INVALID_FIELD);
    EXPECT_EQ(CSD_STATUS_CODE(decode(CSD_OPC_SLM_READ, 2, 0, 4, 0, 0, &op)), CSD_STATUS_INVALID_FIELD);
}

TEST_F(Descriptor, SlmStartsZeroed)
{
    auto v = get<uint8_t>(kSlm - 4096, 4096);
    for (auto b : v) {
        ASSERT_EQ(b, 0);
    }
}

TEST(CoreNew, RejectsZeroSizes)
{
    EXPECT_EQ(csd_core_new(0, 2), nullptr);
    EXPECT_EQ(csd_core_new(4096, 0), nullptr);
}

TEST_F(Descriptor, CapabilitiesPage)
{
    uint8_t page[CSD_LOG_MAX_SIZE];
    uint32_t avail;
    ASSERT_EQ(csd_core_get_log(core, CSD_LOG_CAPABILITIES, 0, 0, page, &avail), 0);
    EXPECT_EQ(avail, CSD_LOG_PAGE_SIZE);
    EXPECT_EQ(std::memcmp(page, "CSD1", 4), 0);
    uint32_t u32;
    uint64_t u64;
    std::memcpy(&u32, page + 4, 4);
    EXPECT_EQ(u32, 0x00010001u);  // version 1.1
    std::memcpy(&u64, page + 8, 8);
    EXPECT_EQ(u64, kSlm);
    std::memcpy(&u32, page + 16, 4);
    EXPECT_EQ(u32, 2u);
    std::memcpy(&u32, page + 20, 4);
    EXPECT_EQ(u32, 4096u);
    std::memcpy(&u32, page + 24, 4);
    EXPECT_GE(u32, 8u);
    std::memcpy(&u32, page + 28, 4);
    ASSERT_EQ(u32, 12u);
    const char *names[] = {"copy", "gemm", "elementwise", "softmax", "reduce", "filter",
                           "convert", "checksum", "conv2d", "decompress", "gather", "embedding_bag"};
    for (int i = 0; i < 12; i++) {
        const uint8_t *e = page + 64 + 32 * i;
        uint16_t id;
        std::memcpy(&id, e, 2);
        EXPECT_EQ(id, i + 1);
        EXPECT_EQ(e[2], 0);  // device-defined
        EXPECT_STREQ(reinterpret_cast<const char *>(e + 8), names[i]);
        EXPECT_EQ(e[8 + 23], 0);
    }
    for (size_t i = 64 + 32 * 12; i < CSD_LOG_PAGE_SIZE; i++) {  // nothing loaded: no more entries
        ASSERT_EQ(page[i], 0) << i;
    }
}

TEST_F(Descriptor, StatisticsCount)
{
    put<uint8_t>(0, {9, 9, 9, 9});
    EXPECT_OK(exec0(CSD_PROG_COPY, {{0, 4}, {8, 4}}));
    EXPECT_OK(exec0(CSD_PROG_COPY, {{0, 4}, {8, 4}}));
    EXPECT_STATUS(exec0(CSD_PROG_COPY, {{0, 8}, {8, 4}}), CSD_STATUS_OUTPUT_OVERFLOW);  // run-time error
    EXPECT_STATUS(exec0(0x77, {{0, 8}}), CSD_STATUS_INVALID_PROGRAM);                  // validation error
    csd_op op;
    ASSERT_EQ(decode(CSD_OPC_SLM_LOAD, 0, 0, 7, 0, 0, &op), 0);  // 8 LBAs of 512 bytes
    csd_core_complete(core, &op, 0);
    ASSERT_EQ(decode(CSD_OPC_SLM_LOAD, 0, 0, 7, 0, 0, &op), 0);
    csd_core_complete(core, &op, CSD_STATUS_INTERNAL_ERROR);  // moved nothing
    uint8_t page[CSD_LOG_MAX_SIZE];
    uint32_t avail;
    ASSERT_EQ(csd_core_get_log(core, CSD_LOG_STATISTICS, 0xFFFFFFFF, 0, page, &avail), 0);
    EXPECT_EQ(std::memcmp(page, "CSDS", 4), 0);
    auto counter = [&](int i) { uint64_t v; std::memcpy(&v, page + 8 + 8 * i, 8); return v; };
    EXPECT_EQ(counter(CSD_STAT_SLM_LOAD_CMDS), 2u);
    EXPECT_EQ(counter(CSD_STAT_EXEC_CMDS), 4u);
    EXPECT_EQ(counter(CSD_STAT_EXEC_ERRORS), 2u);
    EXPECT_EQ(counter(CSD_STAT_BYTES_NS_TO_SLM), 4096u);
    uint64_t copies;
    std::memcpy(&copies, page + 256 + 8 * CSD_PROG_COPY, 8);
    EXPECT_EQ(copies, 3u);  // the three that ran
}

TEST(StatusNames, InWords)
{
    EXPECT_STREQ(csd_status_name(CSD_STATUS_INVALID_PROGRAM | CSD_STATUS_DNR), "Invalid Program");
    EXPECT_STREQ(csd_status_name(CSD_STATUS_OUTPUT_OVERFLOW), "Output Overflow");
    EXPECT_STREQ(csd_status_name(CSD_STATUS_LBA_OUT_OF_RANGE), "LBA Out of Range");
    EXPECT_STREQ(csd_program_name(CSD_PROG_CONV2D), "conv2d");
    EXPECT_EQ(csd_program_name(0x42), nullptr);
}

}  // namespace

// Copies larger than the cache (non-temporal stores where the ranges are apart) to odd
// addresses, and overlapping ones both ways: byte for byte as memmove has them.
TEST_F(CoreTest, LargeCopiesApartAndOverlapping)
{
    const uint64_t n = (25ull << 20) + 13;
    std::vector<uint8_t> src(n);
    std::mt19937 g(3);
    for (auto &b : src) b = static_cast<uint8_t>(g());
    put(1, src);
    auto r = exec0(CSD_PROG_COPY, {{1, n}, {(30ull << 20) + 3, n}});
    EXPECT_OK(r);
    EXPECT_EQ(r.dw0, n);
    EXPECT_EQ(std::memcmp(slm((30ull << 20) + 3), src.data(), n), 0);
    for (uint64_t to : {uint64_t{4097}, uint64_t{0}}) {  // forwards over itself, then backwards
        put(1000, src);
        std::vector<uint8_t> want(n + 5000);
        std::memcpy(want.data(), slm(0), want.size());
        std::memmove(want.data() + to, want.data() + 1000, n);
        EXPECT_OK(exec0(CSD_PROG_COPY, {{1000, n}, {to, n}}));
        EXPECT_EQ(std::memcmp(slm(0), want.data(), want.size()), 0) << to;
    }
}
