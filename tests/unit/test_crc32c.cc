// SPDX-License-Identifier: MIT
// CRC-32C (spec/crc32c.cc) against a bitwise reference written here, at every alignment
// and at the lengths where its implementations change strategy; and the combination of
// CRCs of pieces into the CRC of the whole. Built once per implementation (ISA-L where
// found, the crc32 instruction, the table), so each one the library may pick is checked.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <vector>

#include "csd_crc32c.h"
#include "crc32c_reference.h"

namespace {

std::vector<uint8_t> random_bytes(size_t n, uint32_t seed)
{
    std::mt19937 g(seed);
    std::vector<uint8_t> v(n);
    for (auto &b : v) b = static_cast<uint8_t>(g());
    return v;
}

TEST(Crc32c, CheckValue)
{
    EXPECT_EQ(csd_crc32c("123456789", 9), 0xE3069283u);
    EXPECT_EQ(csd_crc32c(nullptr, 0), 0u);
}

TEST(Crc32c, EveryAlignmentAndTheLengthsWhereStrategiesChange)
{
    const auto data = random_bytes(3 * 8192 * 2 + 3 * 256 + 64, 1);
    for (size_t off = 0; off < 16; off++) {
        for (size_t len : {size_t{0}, size_t{1}, size_t{7}, size_t{8}, size_t{9}, size_t{255}, size_t{3 * 256 - 1},
                           size_t{3 * 256}, size_t{3 * 256 + 5}, size_t{3 * 8192 - 1}, size_t{3 * 8192},
                           size_t{3 * 8192 + 3 * 256 + 13}, size_t{2 * 3 * 8192 + 3 * 256 + 17}}) {
            ASSERT_EQ(csd_crc32c(data.data() + off, len), crc32c_bitwise(data.data() + off, len)) << off << "+" << len;
        }
    }
}

TEST(Crc32c, ExtendIsTheCrcOfTheConcatenation)
{
    const auto data = random_bytes(100000, 2);
    for (size_t cut : {size_t{0}, size_t{1}, size_t{4095}, size_t{50000}, size_t{100000}}) {
        EXPECT_EQ(csd_crc32c_extend(csd_crc32c(data.data(), cut), data.data() + cut, data.size() - cut),
                  crc32c_bitwise(data.data(), data.size()))
            << cut;
    }
}

TEST(Crc32c, CombinedPiecesGiveTheCrcOfTheWhole)
{
    const auto data = random_bytes(1 << 20, 3);
    const uint32_t whole = crc32c_bitwise(data.data(), data.size());
    std::mt19937 g(4);
    for (int round = 0; round < 50; round++) {
        // random cuts, empty pieces included
        std::vector<size_t> cuts{0, data.size()};
        for (int k = 0; k < round % 9; k++) cuts.push_back(g() % (data.size() + 1));
        std::sort(cuts.begin(), cuts.end());
        uint32_t crc = csd_crc32c(nullptr, 0);
        for (size_t i = 0; i + 1 < cuts.size(); i++) {
            const size_t n = cuts[i + 1] - cuts[i];
            crc = csd_crc32c_combine(crc, csd_crc32c(data.data() + cuts[i], n), n);
        }
        ASSERT_EQ(crc, whole) << "round " << round;
    }
    // an empty second piece changes nothing; an empty first piece gives the second's CRC
    EXPECT_EQ(csd_crc32c_combine(whole, 0, 0), whole);
    EXPECT_EQ(csd_crc32c_combine(0, whole, data.size()), whole);
}

TEST(Crc32c, CombineOverLengthsBeyondMemory)
{
    // CRC of 2^33 + 5 zero bytes, built by doubling with combine, against extend over a
    // buffer for a length that fits, then the same doubling on both sides.
    std::vector<uint8_t> zeros(1 << 16, 0);
    uint32_t by_extend = csd_crc32c(zeros.data(), zeros.size());
    uint32_t by_combine = csd_crc32c(zeros.data(), 1);
    for (uint64_t len = 1; len < zeros.size(); len *= 2) by_combine = csd_crc32c_combine(by_combine, by_combine, len);
    EXPECT_EQ(by_combine, by_extend);
    uint64_t len = zeros.size();
    for (; len < (uint64_t{1} << 33); len *= 2) by_combine = csd_crc32c_combine(by_combine, by_combine, len);
    // 2^33 zero bytes then 5 bytes, against the same 5 bytes appended by extend
    const uint8_t tail[5] = {1, 2, 3, 4, 5};
    EXPECT_EQ(csd_crc32c_combine(by_combine, csd_crc32c(tail, 5), 5), csd_crc32c_extend(by_combine, tail, 5));
}

}  // namespace
