// SPDX-License-Identifier: MIT
// checksum: CRC-32C against a bitwise reference written here and its check value;
// XXH64 against published vectors. Also run against the portable implementations.
#include "core_fixture.h"
#include "crc32c_reference.h"

namespace {

class Checksum : public CoreTest {
protected:
    uint64_t sum(uint32_t algo, uint64_t off, uint64_t len)
    {
        auto r = exec(CSD_PROG_CHECKSUM, {{off, len}}, algo);
        EXPECT_OK(r);
        return uint64_t{r.dw1} << 32 | r.dw0;
    }
};

TEST_F(Checksum, Crc32cCheckValue)
{
    std::memcpy(slm(0), "123456789", 9);
    EXPECT_EQ(sum(CSD_CKSUM_CRC32C, 0, 9), 0xE3069283u);
}

TEST_F(Checksum, Crc32cRandomLengthsAndAlignments)
{
    auto data = random_vector<uint8_t>(100000, 41, 0, 255);
    put(0, data);
    for (uint64_t off : {0u, 1u, 3u, 4096u}) {
        for (uint64_t len : {1u, 7u, 8u, 63u, 64u, 1000u, 65537u, 90000u}) {
            EXPECT_EQ(sum(CSD_CKSUM_CRC32C, off, len), crc32c_bitwise(data.data() + off, len)) << off << "+" << len;
        }
    }
}

TEST_F(Checksum, Xxh64Vectors)
{
    const char *s = "Nobody inspects the spammish repetition";
    std::memcpy(slm(1), s, std::strlen(s));
    EXPECT_EQ(sum(CSD_CKSUM_XXH64, 1, std::strlen(s)), 0xfbcea83c8a378bf1ull);
    std::memcpy(slm(100), "a", 1);
    EXPECT_EQ(sum(CSD_CKSUM_XXH64, 100, 1), 0xd24ec4f1a98c6e5bull);
}

TEST_F(Checksum, Errors)
{
    EXPECT_STATUS(exec(CSD_PROG_CHECKSUM, {{0, 16}}, uint32_t{2}), CSD_STATUS_INVALID_PARAMETERS);
    EXPECT_STATUS(exec(CSD_PROG_CHECKSUM, {{0, 16}, {0, 16}}, uint32_t{0}), CSD_STATUS_INVALID_PARAMETERS);
    EXPECT_STATUS(exec(CSD_PROG_CHECKSUM, {{0, 16}}, uint64_t{0}), CSD_STATUS_INVALID_PARAMETERS);
}

}  // namespace
