// SPDX-License-Identifier: MIT
// test_bpf_normalise.cc - bpf_normalise (bpf/load_elf.h): the forms handed to DPDK. Every exit
// but the last jumps forward to a later exit (DPDK 22.11's JIT mis-encodes a jump back to
// its epilogue 127-128 bytes away), as far as a 16-bit offset reaches; le16/le32/le64
// become and / 32-bit move / no-op (its interpreter kept all 64 bits); bpf_jit_unsafe
// refuses to JIT-compile anything still holding an early exit or a backward jump.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "bpf/load_elf.h"
#include "bpf/specialise.h"
#include "csd_spec.h"

namespace {

using csd::core::BpfInsn;

uint64_t op(uint8_t code, uint8_t dst = 0, uint8_t src = 0, int16_t off = 0, int32_t imm = 0)
{
    BpfInsn i{};
    i.code = code;
    i.dst = dst;
    i.src = src;
    i.off = off;
    i.imm = imm;
    return csd::core::bpf_encode(i);
}

constexpr uint8_t kExit = 0x95, kJa = 0x05, kMovK = 0xB7, kJeqK = 0x15, kLe = 0xD4, kBe = 0xDC;

TEST(BpfNormalise, EveryEarlierExitJumpsToTheLast)
{
    // r0 = 1; if r0 == 1 goto +1; exit; r0 = 2; exit; r0 = 3 (never: a second path) ... exit
    std::vector<uint64_t> p = {op(kMovK, 0, 0, 0, 1), op(kJeqK, 0, 0, 2, 1), op(kExit), op(kMovK, 0, 0, 0, 2),
                               op(kExit), op(kMovK, 0, 0, 0, 3), op(kExit)};
    EXPECT_TRUE(csd::core::bpf_jit_unsafe(p));
    csd::core::bpf_normalise(&p);
    EXPECT_EQ(p[2], op(kJa, 0, 0, 3));  // to instruction 6
    EXPECT_EQ(p[4], op(kJa, 0, 0, 1));
    EXPECT_EQ(p[6], op(kExit));
    EXPECT_FALSE(csd::core::bpf_jit_unsafe(p));
}

TEST(BpfNormalise, ExitsFartherThanAJumpReachesChainOrStay)
{
    // exits at 0, 20000, 40000 and 80000: 0 and 20000 jump to the farthest exit in reach
    // (20000, then 40000); 40000 has none in reach (80000 is 40000 away) and stays an exit
    std::vector<uint64_t> p(80001, op(kMovK, 0, 0, 0, 7));
    for (size_t at : {0u, 20000u, 40000u, 80000u}) p[at] = op(kExit);
    csd::core::bpf_normalise(&p);
    EXPECT_EQ(p[0], op(kJa, 0, 0, 19999));
    EXPECT_EQ(p[20000], op(kJa, 0, 0, 19999));
    EXPECT_EQ(p[40000], op(kExit));
    EXPECT_EQ(p[80000], op(kExit));
    EXPECT_TRUE(csd::core::bpf_jit_unsafe(p));  // an early exit is left: interpreted, not JIT-compiled

    // exactly INT16_MAX apart is in reach
    std::vector<uint64_t> q(32769, op(kMovK, 0, 0, 0, 7));
    q[0] = op(kExit);
    q[32768] = op(kExit);
    csd::core::bpf_normalise(&q);
    EXPECT_EQ(q[0], op(kJa, 0, 0, INT16_MAX));
    EXPECT_FALSE(csd::core::bpf_jit_unsafe(q));
}

TEST(BpfNormalise, LittleEndianSwapsBecomeWhatTheyMeanAndBigEndianStay)
{
    std::vector<uint64_t> p = {op(kLe, 3, 0, 0, 16), op(kLe, 4, 0, 0, 32), op(kLe, 5, 0, 0, 64), op(kBe, 6, 0, 0, 64),
                               op(kExit)};
    csd::core::bpf_normalise(&p);
    EXPECT_EQ(p[0], op(0x57, 3, 0, 0, 0xFFFF));  // r3 &= 0xffff
    EXPECT_EQ(p[1], op(0xBC, 4, 4));             // w4 = w4
    EXPECT_EQ(p[2], op(0xBF, 5, 5));             // r5 = r5
    EXPECT_EQ(p[3], op(kBe, 6, 0, 0, 64));
}

TEST(BpfNormalise, TheCheckRefusesALittleEndianSwapItWasNotShown)
{
    // r0 = 1; r0 = le16 r0; exit: refused as given, accepted once normalised
    std::vector<uint64_t> p = {op(kMovK, 0, 0, 0, 1), op(kLe, 0, 0, 0, 16), op(kExit)};
    uint32_t fault = 0;
    std::string why;
    EXPECT_FALSE(csd::core::bpf_check_instructions(p, 16, &fault, &why));
    EXPECT_EQ(fault, 1u) << why;
    csd::core::bpf_normalise(&p);
    EXPECT_TRUE(csd::core::bpf_check_instructions(p, 16, &fault, &why)) << why;
}

TEST(BpfNormalise, ASelectWhoseExitBecameAJumpIsStillRewritten)
{
    // r2 = *(u32 *)(r1 + 0); if r2 == 7 goto B; r0 = 1; if r2 > 5 goto +1; r0 = 0; exit;
    // B: r0 = 2; if r2 > 9 goto +1; r0 = 3; exit — the first select's exit becomes a jump
    std::vector<uint64_t> p = {op(0x61, 2, 1),          op(kJeqK, 2, 0, 4, 7), op(kMovK, 0, 0, 0, 1),
                               op(0x25, 2, 0, 1, 5),    op(kMovK, 0, 0, 0, 0), op(kExit),
                               op(kMovK, 0, 0, 0, 2),   op(0x25, 2, 0, 1, 9), op(kMovK, 0, 0, 0, 3),
                               op(kExit)};
    csd::core::bpf_normalise(&p);
    ASSERT_EQ(p[5], op(kJa, 0, 0, 3));
    csd::core::BpfSpecialised r;
    ASSERT_TRUE(csd::core::bpf_specialise(p, nullptr, 0, CSD_BPF_FILTER, 16, &r));
    int conditional = 0;
    for (uint64_t v : r.insns) {
        const uint8_t code = static_cast<uint8_t>(v);
        if ((code & 0x07) == 0x05 && code != kJa && code != kExit && code != 0x85) conditional++;
    }
    EXPECT_EQ(conditional, 1) << "both selects become arithmetic; only 'if r2 == 7' stays a branch";
}

TEST(BpfNormalise, ABackwardJumpIsNeverJitCompiled)
{
    std::vector<uint64_t> p = {op(kMovK, 0, 0, 0, 1), op(kJa, 0, 0, -2), op(kExit)};
    EXPECT_TRUE(csd::core::bpf_jit_unsafe(p));
}

}  // namespace
