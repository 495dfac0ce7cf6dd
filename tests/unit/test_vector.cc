// SPDX-License-Identifier: MIT
// elementwise, softmax and reduce against reference loops computed here.
#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

#include "core_fixture.h"

namespace {

class Vector : public CoreTest {};

double ref_unary(uint32_t op, double x, double a, double b)
{
    switch (op) {
    case CSD_EW_RELU: return x > 0 ? x : 0;
    case CSD_EW_SIGMOID: return 1 / (1 + std::exp(-x));
    case CSD_EW_TANH: return std::tanh(x);
    case CSD_EW_GELU: return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
    case CSD_EW_AXPB: return a * x + b;
    case CSD_EW_EXP: return std::exp(x);
    default: return std::fabs(x);
    }
}

double ref_binary(uint32_t op, double x, double y)
{
    switch (op) {
    case CSD_EW_ADD: return x + y;
    case CSD_EW_SUB: return x - y;
    case CSD_EW_MUL: return x * y;
    case CSD_EW_DIV: return x / y;
    case CSD_EW_MAX: return x > y ? x : y;
    default: return x < y ? x : y;
    }
}

TEST_F(Vector, BinaryOps)
{
    const uint32_t n = 1003;
    auto x = random_vector<float>(n, 11, -4, 4), y = random_vector<float>(n, 12, 0.5, 3);
    put(0, x);
    put(8192, y);
    for (uint32_t op : {0u, 1u, 2u, 3u, 4u, 5u}) {
        csd_elementwise_params p{op, n, 0, 0};
        auto r = exec(CSD_PROG_ELEMENTWISE, {{0, n * 4}, {8192, n * 4}, {16384, n * 4}}, p);
        EXPECT_OK(r);
        EXPECT_EQ(r.dw0, n * 4);
        auto out = get<float>(16384, n);
        for (uint32_t i = 0; i < n; i++) {
            ASSERT_NEAR(out[i], ref_binary(op, x[i], y[i]), 1e-5 * (1 + std::fabs(ref_binary(op, x[i], y[i])))) << op;
        }
    }
}

TEST_F(Vector, UnaryOpsInPlace)
{
    const uint32_t n = 517;
    auto x = random_vector<float>(n, 13, -5, 5);
    for (uint32_t op : {16u, 17u, 18u, 19u, 20u, 21u, 22u}) {
        put(4, x);  // unaligned to 8, aligned to 4; in place: out == x
        csd_elementwise_params p{op, n, 1.5f, -0.25f};
        EXPECT_OK(exec(CSD_PROG_ELEMENTWISE, {{4, n * 4}, {4, n * 4}}, p));
        auto out = get<float>(4, n);
        for (uint32_t i = 0; i < n; i++) {
            const double want = ref_unary(op, x[i], 1.5, -0.25);
            ASSERT_NEAR(out[i], want, 2e-6 * (1 + std::fabs(want))) << "op " << op << " x " << x[i];
        }
    }
}

TEST_F(Vector, ElementwiseErrors)
{
    csd_elementwise_params p{CSD_EW_ADD, 4, 0, 0};
    EXPECT_STATUS(exec(CSD_PROG_ELEMENTWISE, {{0, 16}, {16, 16}}, p), CSD_STATUS_INVALID_PARAMETERS);  // binary needs 3
    EXPECT_STATUS(exec(CSD_PROG_ELEMENTWISE, {{0, 16}, {16, 12}, {32, 16}}, p), CSD_STATUS_INVALID_PARAMETERS);
    EXPECT_STATUS(exec(CSD_PROG_ELEMENTWISE, {{0, 16}, {16, 16}, {32, 12}}, p), CSD_STATUS_OUTPUT_OVERFLOW);
    p.op = 7;
    EXPECT_STATUS(exec(CSD_PROG_ELEMENTWISE, {{0, 16}, {16, 16}, {32, 16}}, p), CSD_STATUS_INVALID_PARAMETERS);
    p.op = CSD_EW_RELU;
    EXPECT_STATUS(exec(CSD_PROG_ELEMENTWISE, {{0, 16}, {16, 16}, {32, 16}}, p), CSD_STATUS_INVALID_PARAMETERS);
    p.count = 0;
    EXPECT_STATUS(exec(CSD_PROG_ELEMENTWISE, {{0, 16}, {16, 16}}, p), CSD_STATUS_INVALID_PARAMETERS);
}

TEST_F(Vector, SoftmaxStableAndInPlace)
{
    const uint32_t rows = 7, cols = 129;
    auto x = random_vector<float>(rows * cols, 14, -10, 10);
    x[5] = 1000.0f;  // would overflow exp() without the max shift
    x[cols + 3] = -1000.0f;
    put(0, x);
    csd_softmax_params p{rows, cols};
    auto r = exec(CSD_PROG_SOFTMAX, {{0, x.size() * 4}, {0, x.size() * 4}}, p);
    EXPECT_OK(r);
    EXPECT_EQ(r.dw0, rows * cols * 4);
    auto out = get<float>(0, x.size());
    for (uint32_t i = 0; i < rows; i++) {
        double mx = -INFINITY, sum = 0;
        for (uint32_t j = 0; j < cols; j++) mx = std::max<double>(mx, x[i * cols + j]);
        for (uint32_t j = 0; j < cols; j++) sum += std::exp(double(x[i * cols + j]) - mx);
        for (uint32_t j = 0; j < cols; j++) {
            const double want = std::exp(double(x[i * cols + j]) - mx) / sum;
            ASSERT_NEAR(out[i * cols + j], want, 1e-6 + 1e-5 * want);
        }
    }
    EXPECT_STATUS(exec(CSD_PROG_SOFTMAX, {{0, 16}, {64, 12}}, csd_softmax_params{1, 4}), CSD_STATUS_OUTPUT_OVERFLOW);
    EXPECT_STATUS(exec(CSD_PROG_SOFTMAX, {{0, 12}, {64, 16}}, csd_softmax_params{1, 4}), CSD_STATUS_INVALID_PARAMETERS);
    EXPECT_STATUS(exec(CSD_PROG_SOFTMAX, {{0, 16}, {64, 16}}, csd_softmax_params{0, 4}), CSD_STATUS_INVALID_PARAMETERS);
}

class Reduce : public CoreTest {
protected:
    template <class T>
    std::vector<uint64_t> run(const std::vector<T> &x, uint32_t op, uint32_t dtype, uint32_t rows, uint32_t cols)
    {
        put(0, x);
        csd_reduce_params p{op, dtype, rows, cols};
        auto r = exec(CSD_PROG_REDUCE, {{0, x.size() * sizeof(T)}, {1 << 20, rows * 8ull}}, p);
        EXPECT_OK(r);
        EXPECT_EQ(r.dw0, rows * 8);
        return get<uint64_t>(1 << 20, rows);
    }
};

double as_f64(uint64_t b) { double d; std::memcpy(&d, &b, 8); return d; }

TEST_F(Reduce, FloatSumMinMaxMeanArg)
{
    const uint32_t rows = 3, cols = 1000;
    auto x = random_vector<float>(rows * cols, 15, -100, 100);
    x[1 * cols + 10] = 500; x[1 * cols + 20] = 500;   // first of equal maxima wins
    x[2 * cols + 7] = -500; x[2 * cols + 9] = -500;
    for (uint32_t op = 0; op <= 5; op++) {
        auto got = run(x, op, CSD_DT_F32, rows, cols);
        for (uint32_t r = 0; r < rows; r++) {
            const float *row = x.data() + r * cols;
            double sum = 0; size_t amax = 0, amin = 0;
            for (uint32_t j = 0; j < cols; j++) {
                sum += row[j];
                if (row[j] > row[amax]) amax = j;
                if (row[j] < row[amin]) amin = j;
            }
            switch (op) {
            case CSD_RED_SUM: EXPECT_DOUBLE_EQ(as_f64(got[r]), sum); break;
            case CSD_RED_MEAN: EXPECT_DOUBLE_EQ(as_f64(got[r]), sum / cols); break;
            case CSD_RED_MIN: EXPECT_EQ(as_f64(got[r]), row[amin]); break;
            case CSD_RED_MAX: EXPECT_EQ(as_f64(got[r]), row[amax]); break;
            case CSD_RED_ARGMAX: EXPECT_EQ(got[r], amax); break;
            default: EXPECT_EQ(got[r], amin); break;
            }
        }
    }
    EXPECT_EQ(run(x, CSD_RED_ARGMAX, CSD_DT_F32, rows, cols)[1], 10u);
    EXPECT_EQ(run(x, CSD_RED_ARGMIN, CSD_DT_F32, rows, cols)[2], 7u);
}

TEST_F(Reduce, DoubleAndNaN)
{
    std::vector<double> x{std::nan(""), 2.5, -1.0, 7.0};
    EXPECT_EQ(as_f64(run(x, CSD_RED_MAX, CSD_DT_F64, 1, 4)[0]), 7.0);
    EXPECT_EQ(run(x, CSD_RED_ARGMIN, CSD_DT_F64, 1, 4)[0], 2u);
    EXPECT_TRUE(std::isnan(as_f64(run(x, CSD_RED_SUM, CSD_DT_F64, 1, 4)[0])));
}

// min/max/argmin/argmax against the one-pass definition (first extreme, NaN skipped unless
// the row is all NaN) on rows built to trip a lane-wise search: NaNs anywhere (the first
// element too), ties in different lanes, -0.0 against +0.0, lengths that are not a multiple
// of the vector width, an all-NaN row.
TEST_F(Reduce, ExtremesMatchTheOnePassDefinition)
{
    const uint32_t cols = 1037, rows = 12;
    auto x = random_vector<float>(rows * cols, 99, -4, 4);
    for (size_t i = 0; i < x.size(); i++) {
        x[i] = std::round(x[i]);                  // many ties
        if (i % 97 == 0) x[i] = std::nanf("");
        if (i % 89 == 0) x[i] = (i / 89) % 2 ? -0.0f : 0.0f;
    }
    x[3 * cols] = std::nanf("");
    for (uint32_t j = 0; j < cols; j++) x[5 * cols + j] = std::nanf("");   // all NaN
    x[7 * cols + 1030] = 99; x[7 * cols + 17] = 99; x[7 * cols + 500] = 99;
    auto one_pass = [](const float *row, uint32_t n, bool want_max) {
        uint32_t best = 0;
        while (best < n && std::isnan(row[best])) best++;
        if (best == n) return 0u;
        for (uint32_t i = best + 1; i < n; i++) {
            if (want_max ? row[i] > row[best] : row[i] < row[best]) best = i;
        }
        return best;
    };
    for (uint32_t op : {CSD_RED_MIN, CSD_RED_MAX, CSD_RED_ARGMIN, CSD_RED_ARGMAX}) {
        const bool want_max = op == CSD_RED_MAX || op == CSD_RED_ARGMAX;
        auto got = run(x, op, CSD_DT_F32, rows, cols);
        for (uint32_t r = 0; r < rows; r++) {
            const uint32_t i = one_pass(x.data() + r * cols, cols, want_max);
            if (op == CSD_RED_ARGMIN || op == CSD_RED_ARGMAX) {
                EXPECT_EQ(got[r], i) << "op " << op << " row " << r;
            } else {
                const double want = x[r * cols + i];
                const double have = as_f64(got[r]);
                EXPECT_TRUE(std::memcmp(&want, &have, 8) == 0 || (std::isnan(want) && std::isnan(have)))
                    << "op " << op << " row " << r << ": " << have << " vs " << want;
            }
        }
    }
    EXPECT_EQ(run(x, CSD_RED_ARGMAX, CSD_DT_F32, rows, cols)[7], 17u);
}

// min and max where the extreme is a zero: the value at the first extreme, so -0.0 or
// +0.0 as the row has it first, also across rows longer than the pieces a row is read in
// between cancellation checks (2 Mi f32 elements), with NaN and the zeros placed on both
// sides of the piece boundary.
TEST_F(Reduce, ZeroExtremesKeepTheFirstSign)
{
    const uint32_t cols = 5u << 20 >> 1;  // 2.5 Mi: two pieces
    for (bool negative_first : {false, true}) {
        std::vector<float> x(cols);
        for (uint32_t i = 0; i < cols; i++) x[i] = -1.0f - static_cast<float>(i % 7);  // max is a zero, below
        x[0] = std::nanf("");
        x[(2u << 20) + 5] = negative_first ? 0.0f : -0.0f;       // second piece
        x[1000] = negative_first ? -0.0f : 0.0f;                 // first piece: this one counts
        x[(2u << 20) - 15] = negative_first ? 0.0f : -0.0f;
        const double want = x[1000];
        const double have = as_f64(run(x, CSD_RED_MAX, CSD_DT_F32, 1, cols)[0]);
        EXPECT_EQ(std::signbit(have), std::signbit(want)) << negative_first;
        EXPECT_EQ(have, 0.0);
        for (float &v : x) v = -v;  // now min is the zero
        const double have_min = as_f64(run(x, CSD_RED_MIN, CSD_DT_F32, 1, cols)[0]);
        EXPECT_EQ(std::signbit(have_min), std::signbit(static_cast<double>(x[1000]))) << negative_first;
        // the first zero in the second piece only
        x[1000] = 2.0f;
        x[(2u << 20) - 15] = 3.0f;
        const double have2 = as_f64(run(x, CSD_RED_MIN, CSD_DT_F32, 1, cols)[0]);
        EXPECT_EQ(std::signbit(have2), std::signbit(static_cast<double>(x[(2u << 20) + 5])));
    }
}

TEST_F(Reduce, IntegersWrapAndMean)
{
    std::vector<int64_t> big{INT64_MAX, 1, 5, -3};
    EXPECT_EQ(static_cast<int64_t>(run(big, CSD_RED_SUM, CSD_DT_I64, 1, 4)[0]), INT64_MIN + 2);  // wraps
    EXPECT_EQ(static_cast<int64_t>(run(big, CSD_RED_MIN, CSD_DT_I64, 1, 4)[0]), -3);
    std::vector<int32_t> v{-7, 3, 10, 2, INT32_MIN, INT32_MAX};
    EXPECT_EQ(static_cast<int64_t>(run(v, CSD_RED_SUM, CSD_DT_I32, 2, 3)[0]), 6);
    EXPECT_EQ(static_cast<int64_t>(run(v, CSD_RED_SUM, CSD_DT_I32, 2, 3)[1]), int64_t{2} + INT32_MIN + INT32_MAX);
    EXPECT_DOUBLE_EQ(as_f64(run(v, CSD_RED_MEAN, CSD_DT_I32, 2, 3)[0]), 2.0);
    EXPECT_EQ(static_cast<int64_t>(run(v, CSD_RED_MAX, CSD_DT_I32, 2, 3)[1]), INT32_MAX);
    EXPECT_EQ(run(v, CSD_RED_ARGMIN, CSD_DT_I32, 2, 3)[1], 1u);
}

// i32 and i64 min and max against a plain scan, over rows narrower and wider than the
// program's vector blocks (i32: 16 elements), the extreme in the blocks, in the tail after
// them and at INT_MIN / INT_MAX.
TEST_F(Reduce, IntegerExtremesOverBlocksAndTails)
{
    std::mt19937_64 g(7);
    auto check = [&](auto zero) {
        using T = decltype(zero);
        for (uint32_t cols : {1u, 15u, 16u, 17u, 63u, 64u, 65u, 100u, 4099u}) {
            const uint32_t rows = 6;
            std::vector<T> x(uint64_t{rows} * cols);
            for (T &v : x) v = static_cast<T>(g() % 2001) - 1000;
            x[1 * cols + cols - 1] = 5000;                             // row 1: max is the last
            x[2 * cols + cols / 2] = -5000;                            // row 2: min in the middle
            x[3 * cols] = std::numeric_limits<T>::max();               // row 3: max is the first
            x[4 * cols + (cols - 1) / 3] = std::numeric_limits<T>::min();  // row 4
            for (uint32_t op : {CSD_RED_MIN, CSD_RED_MAX}) {
                const auto got = run(x, op, sizeof(T) == 4 ? CSD_DT_I32 : CSD_DT_I64, rows, cols);
                for (uint32_t r = 0; r < rows; r++) {
                    const T *row = x.data() + uint64_t{r} * cols;
                    const T want = op == CSD_RED_MAX ? *std::max_element(row, row + cols) : *std::min_element(row, row + cols);
                    EXPECT_EQ(static_cast<int64_t>(got[r]), int64_t{want}) << sizeof(T) << " op " << op << " cols " << cols << " row " << r;
                }
            }
        }
    };
    check(int32_t{});
    check(int64_t{});
}

TEST_F(Reduce, Errors)
{
    EXPECT_STATUS(exec(CSD_PROG_REDUCE, {{0, 16}, {64, 8}}, csd_reduce_params{6, 0, 1, 4}), CSD_STATUS_INVALID_PARAMETERS);
    EXPECT_STATUS(exec(CSD_PROG_REDUCE, {{0, 16}, {64, 8}}, csd_reduce_params{0, 4, 1, 4}), CSD_STATUS_INVALID_PARAMETERS);
    EXPECT_STATUS(exec(CSD_PROG_REDUCE, {{0, 16}, {64, 8}}, csd_reduce_params{0, 1, 1, 4}), CSD_STATUS_INVALID_PARAMETERS);
    EXPECT_STATUS(exec(CSD_PROG_REDUCE, {{0, 32}, {64, 8}}, csd_reduce_params{0, 0, 2, 4}), CSD_STATUS_OUTPUT_OVERFLOW);
}

}  // namespace
