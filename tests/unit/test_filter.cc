// SPDX-License-Identifier: MIT
// filter: every field type and comparison against a loop written here; overflow reporting.
#include <cmath>

#include "core_fixture.h"

namespace {

#pragma pack(push, 1)
struct Rec {
    uint32_t id;
    int32_t i32;
    int64_t i64;
    uint32_t u32;
    uint64_t u64;
    float f32;
    double f64;
    uint8_t pad[3];
};
#pragma pack(pop)
static_assert(sizeof(Rec) == 43, "odd record size on purpose");

class Filter : public CoreTest {
protected:
    std::vector<Rec> recs;
    void SetUp() override
    {
        CoreTest::SetUp();
        std::mt19937 g(21);
        for (uint32_t i = 0; i < 997; i++) {
            Rec r{};
            r.id = i;
            r.i32 = static_cast<int32_t>(g() % 200) - 100;
            r.i64 = static_cast<int64_t>(g() % 2000) - 1000;
            r.u32 = g() % 100;
            r.u64 = (uint64_t{g()} << 32) | g();
            r.f32 = static_cast<float>(g() % 1000) / 100.0f;
            r.f64 = (g() % 1000) / 10.0;
            recs.push_back(r);
        }
        recs[3].f32 = NAN;
        recs[4].f64 = NAN;
        std::memcpy(slm(0), recs.data(), recs.size() * sizeof(Rec));
    }

    csd_filter_params params(uint32_t off, uint16_t type, uint16_t op, double lo_f, int64_t lo_i, double hi_f, int64_t hi_i,
                             uint32_t mode)
    {
        csd_filter_params p{};
        p.record_size = sizeof(Rec);
        p.count = static_cast<uint32_t>(recs.size());
        p.field_offset = off;
        p.field_type = type;
        p.op = op;
        p.output_mode = mode;
        if (type >= CSD_FT_F32) {
            std::memcpy(p.lo, &lo_f, 8);
            std::memcpy(p.hi, &hi_f, 8);
        } else {
            std::memcpy(p.lo, &lo_i, 8);
            std::memcpy(p.hi, &hi_i, 8);
        }
        return p;
    }
};

template <class T>
bool ref_cmp(T v, T lo, T hi, int op)
{
    switch (op) {
    case 0: return v == lo;
    case 1: return !(v == lo);
    case 2: return v < lo;
    case 3: return v <= lo;
    case 4: return v > lo;
    case 5: return v >= lo;
    default: return v >= lo && v <= hi;
    }
}

TEST_F(Filter, EveryTypeAndOpAgainstReference)
{
    const uint64_t out = 1 << 20;
    for (int op = 0; op <= 6; op++) {
        for (uint16_t type = 0; type <= 5; type++) {
            static const uint32_t offs[] = {4, 8, 16, 20, 28, 32};
            std::vector<uint32_t> want;
            for (const Rec &r : recs) {
                bool m;
                switch (type) {
                case 0: m = ref_cmp<int64_t>(r.i32, -20, 30, op); break;
                case 1: m = ref_cmp<int64_t>(r.i64, 100, 500, op); break;
                case 2: m = ref_cmp<uint64_t>(r.u32, 50, 60, op); break;
                case 3: m = ref_cmp<uint64_t>(r.u64, recs[10].u64, UINT64_MAX / 2, op); break;
                case 4: m = ref_cmp<double>(r.f32, 5.0, 7.5, op); break;
                default: m = ref_cmp<double>(r.f64, 50.0, 75.0, op); break;
                }
                if (m) want.push_back(r.id);
            }
            int64_t lo_i = type == 0 ? -20 : type == 1 ? 100 : type == 2 ? 50 : static_cast<int64_t>(recs[10].u64);
            int64_t hi_i = type == 0 ? 30 : type == 1 ? 500 : type == 2 ? 60 : static_cast<int64_t>(UINT64_MAX / 2);
            double lo_f = type == 4 ? 5.0 : 50.0, hi_f = type == 4 ? 7.5 : 75.0;
            // indices
            auto p = params(offs[type], type, static_cast<uint16_t>(op), lo_f, lo_i, hi_f, hi_i, 1);
            auto r = exec(CSD_PROG_FILTER, {{0, recs.size() * sizeof(Rec)}, {out, 4 << 20}}, p);
            EXPECT_OK(r);
            EXPECT_EQ(r.dw1, want.size()) << "type " << type << " op " << op;
            EXPECT_EQ(r.dw0, want.size() * 4);
            EXPECT_EQ(get<uint32_t>(out, want.size()), want);
            // records
            p.output_mode = 0;
            r = exec(CSD_PROG_FILTER, {{0, recs.size() * sizeof(Rec)}, {out, 4 << 20}}, p);
            EXPECT_OK(r);
            ASSERT_EQ(r.dw0, want.size() * sizeof(Rec));
            for (size_t i = 0; i < want.size(); i++) {
                ASSERT_EQ(std::memcmp(slm(out + i * sizeof(Rec)), &recs[want[i]], sizeof(Rec)), 0);
            }
        }
    }
}

TEST_F(Filter, NaNMatchesOnlyNotEqual)
{
    for (int op = 0; op <= 6; op++) {
        auto p = params(offsetof(Rec, f32), CSD_FT_F32, static_cast<uint16_t>(op), 1e9, 0, 2e9, 0, 1);
        p.count = 1;  // record 3 alone: its f32 is NaN
        auto r = exec(CSD_PROG_FILTER, {{3 * sizeof(Rec), sizeof(Rec)}, {1 << 20, 64}}, p);
        EXPECT_OK(r);
        EXPECT_EQ(r.dw1, op == CSD_CMP_NE ? 1u : 0u) << op;
    }
}

TEST_F(Filter, OutputOverflowReportsMatches)
{
    auto p = params(4, CSD_FT_I32, CSD_CMP_GE, 0, -1000, 0, 0, 1);  // all match
    auto r = exec(CSD_PROG_FILTER, {{0, recs.size() * sizeof(Rec)}, {1 << 20, 40}}, p);
    EXPECT_STATUS(r, CSD_STATUS_OUTPUT_OVERFLOW);
    EXPECT_EQ(r.dw1, recs.size());
    EXPECT_EQ(r.dw0, recs.size() * 4);  // bytes needed
    EXPECT_EQ(get<uint32_t>(1 << 20, 10), (std::vector<uint32_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
}

TEST_F(Filter, Errors)
{
    const uint64_t n = recs.size() * sizeof(Rec);
    auto good = params(4, CSD_FT_I32, CSD_CMP_EQ, 0, 0, 0, 0, 1);
    auto p = good; p.field_offset = sizeof(Rec) - 3;  // field crosses the record's end
    EXPECT_STATUS(exec(CSD_PROG_FILTER, {{0, n}, {1 << 20, 4096}}, p), CSD_STATUS_INVALID_PARAMETERS);
    p = good; p.field_type = 6;
    EXPECT_STATUS(exec(CSD_PROG_FILTER, {{0, n}, {1 << 20, 4096}}, p), CSD_STATUS_INVALID_PARAMETERS);
    p = good; p.op = 7;
    EXPECT_STATUS(exec(CSD_PROG_FILTER, {{0, n}, {1 << 20, 4096}}, p), CSD_STATUS_INVALID_PARAMETERS);
    p = good; p.output_mode = 2;
    EXPECT_STATUS(exec(CSD_PROG_FILTER, {{0, n}, {1 << 20, 4096}}, p), CSD_STATUS_INVALID_PARAMETERS);
    p = good; p.output_mode = CSD_FILTER_RECORDS; p.reserved = 1;  // an index base is for indices alone
    EXPECT_STATUS(exec(CSD_PROG_FILTER, {{0, n}, {1 << 20, 4096}}, p), CSD_STATUS_INVALID_PARAMETERS);
    p = good; p.output_mode = CSD_FILTER_INDICES; p.reserved = UINT32_MAX;  // indices past 2^32 - 1
    if (p.count > 1) EXPECT_STATUS(exec(CSD_PROG_FILTER, {{0, n}, {1 << 20, 4096}}, p), CSD_STATUS_INVALID_PARAMETERS);
    p = good; p.record_size = 0;
    EXPECT_STATUS(exec(CSD_PROG_FILTER, {{0, n}, {1 << 20, 4096}}, p), CSD_STATUS_INVALID_PARAMETERS);
    p = good; p.count = UINT32_MAX;  // records range too short
    EXPECT_STATUS(exec(CSD_PROG_FILTER, {{0, n}, {1 << 20, 4096}}, p), CSD_STATUS_INVALID_PARAMETERS);
    uint8_t short_params[39] = {};
    EXPECT_STATUS(exec(CSD_PROG_FILTER, {{0, n}, {1 << 20, 4096}}, short_params), CSD_STATUS_INVALID_PARAMETERS);
}

}  // namespace

namespace {

// The filter as the spec defines it, one record at a time over a copy of SLM (each match
// written at once, memmove, while it fits): what every loop of the program must produce,
// whatever the record size, density of matches, room and overlap.
struct Outcome {
    uint32_t written = 0, hits = 0;
    bool overflow = false;
};
Outcome reference_filter(std::vector<uint8_t> &mem, uint64_t in, uint64_t out, uint64_t out_len, const csd_filter_params &p)
{
    Outcome o;
    uint64_t written = 0;
    const uint64_t unit = p.output_mode ? 4 : p.record_size;
    double lo;
    std::memcpy(&lo, p.lo, 8);
    for (uint32_t i = 0; i < p.count; i++) {
        float v;
        std::memcpy(&v, &mem[in + uint64_t{i} * p.record_size + p.field_offset], 4);
        if (!ref_cmp<double>(v, lo, lo + 0.25, p.op)) continue;
        o.hits++;
        if (written + unit <= out_len) {
            if (p.output_mode) {
                std::memcpy(&mem[out + written], &i, 4);
            } else {
                std::memmove(&mem[out + written], &mem[in + uint64_t{i} * p.record_size], p.record_size);
            }
        }
        written += unit;
    }
    o.overflow = written > out_len;
    o.written = static_cast<uint32_t>(written);
    return o;
}

}  // namespace

// Small records (the sizes with loops of their own, and one without), stretches of dense
// and of sparse matches (the loop changes strategy between blocks), NaN fields, every
// comparison; outputs apart, exactly in place, starting inside the input after it (the
// one-by-one loop), and too small (the output fills up in the middle of a block): output
// bytes, DW0 and DW1 as the reference has them, and nothing else in SLM touched.
TEST_F(Filter, SmallRecordsEveryLoopAgainstReference)
{
    const uint32_t n = 40000;
    std::mt19937 g(7);
    for (uint32_t rs : {4u, 8u, 12u, 16u, 32u}) {
        std::vector<uint8_t> mem(4ull * n * rs + 4096);
        for (auto &b : mem) b = static_cast<uint8_t>(g());
        for (uint32_t i = 0; i < n; i++) {
            // 5000-record stretches: most records in [0, 1) (dense), or in [10, 11) (sparse)
            const bool dense = (i / 5000) % 2 == 0;
            float v = static_cast<float>(g() % 1000) / 1000.0f + (dense ? 0.0f : 10.0f);
            if (g() % 97 == 0) v = NAN;
            if (!dense && g() % 50 == 0) v = 0.3f;
            std::memcpy(&mem[uint64_t{i} * rs + (rs - 4)], &v, 4);
        }
        const uint64_t in_len = uint64_t{n} * rs;
        struct Place {
            const char *what;
            uint64_t out, out_len;
        };
        const Place places[] = {{"apart", 2 * in_len, 2 * in_len},
                                {"in place", 0, in_len},
                                {"after the start of the input", 5ull * rs + 4, in_len},
                                {"too small", 2 * in_len, in_len / 7 + 3}};
        for (uint16_t op = CSD_CMP_EQ; op <= CSD_CMP_BETWEEN; op++) {
            for (uint32_t mode : {0u, 1u}) {
                for (const Place &pl : places) {
                    csd_filter_params p{};
                    p.record_size = rs;
                    p.count = n;
                    p.field_offset = rs - 4;
                    p.field_type = CSD_FT_F32;
                    p.op = op;
                    p.output_mode = mode;
                    const double lo = op == CSD_CMP_EQ || op == CSD_CMP_NE ? 0.3 : 0.25;
                    const double hi = lo + 0.25;
                    std::memcpy(p.lo, &lo, 8);
                    std::memcpy(p.hi, &hi, 8);
                    std::vector<uint8_t> want = mem;
                    const Outcome o = reference_filter(want, 0, pl.out, pl.out_len, p);
                    put(0, mem);
                    const auto r = exec(CSD_PROG_FILTER, {{0, in_len}, {pl.out, pl.out_len}}, p);
                    const std::string where = "record size " + std::to_string(rs) + " op " + std::to_string(op) +
                                              " mode " + std::to_string(mode) + " output " + pl.what;
                    if (o.overflow) {
                        EXPECT_STATUS(r, CSD_STATUS_OUTPUT_OVERFLOW) << where;
                    } else {
                        EXPECT_OK(r) << where;
                    }
                    EXPECT_EQ(r.dw0, o.written) << where;
                    EXPECT_EQ(r.dw1, o.hits) << where;
                    ASSERT_EQ(get<uint8_t>(0, mem.size()), want) << where;
                }
            }
        }
    }
}
