// SPDX-License-Identifier: MIT
// bpf/load_elf.h - the device's own reading of an eBPF program image (spec §8): the one
// section named csd, its calls resolved to the helpers, checked instruction by
// instruction. That array, and only it, is what the eBPF runtime is given, so the bytes
// checked are the bytes loaded. Needs no eBPF runtime.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace csd::core {

// The helpers a program may call, by name; a call's index into this list is its
// instruction's imm once relocated (the runtime's table of external functions has the
// same order).
inline constexpr const char *kBpfHelpers[] = {"csd_param", "csd_index"};
inline constexpr uint32_t kNrBpfHelpers = sizeof kBpfHelpers / sizeof kBpfHelpers[0];

// One instruction's fields (8 bytes, little-endian: code, dst:4 src:4, off, imm).
struct BpfInsn {
    uint8_t code, dst, src;
    int16_t off;
    int32_t imm;
};

// The fields of an instruction.
inline BpfInsn bpf_decode(uint64_t v)
{
    return BpfInsn{static_cast<uint8_t>(v), static_cast<uint8_t>((v >> 8) & 0x0F), static_cast<uint8_t>((v >> 12) & 0x0F),
                   static_cast<int16_t>(static_cast<uint16_t>(v >> 16)),
                   static_cast<int32_t>(static_cast<uint32_t>(v >> 32))};
}

// The instruction of those fields.
inline uint64_t bpf_encode(const BpfInsn &i)
{
    return uint64_t{i.code} | uint64_t{i.dst} << 8 | uint64_t{i.src} << 12 |
           uint64_t{static_cast<uint16_t>(i.off)} << 16 | uint64_t{static_cast<uint32_t>(i.imm)} << 32;
}

// A program as the runtime is given it: the instructions of section csd with every call
// resolved (8 bytes each, little-endian, as in the image), and its entry function's name.
struct BpfCode {
    std::vector<uint64_t> insns;
    std::string name;
};

// Reads an image strictly: an ELF64 little-endian relocatable object for EM_BPF (OS ABI
// none) with exactly one section named csd (SHT_PROGBITS, flags alloc + exec, 1 to
// CSD_BPF_MAX_INSNS instructions), one symbol table, exactly one function symbol in csd,
// at its first instruction (its name names the program), and relocations of csd only
// of the kind clang writes for a call to an extern helper (R_BPF_64_32 at a call
// instruction, against an undefined symbol named like a helper): each becomes imm = the
// helper's index, src_reg = 0, as DPDK's ELF loader does. Anything else (a second csd
// section, a relocation of a 64-bit load or against a symbol the object defines, a name
// outside its table...) is refused. Then checks the result with bpf_check_instructions.
// On refusal returns false with *fault = the offending instruction or
// CSD_IMAGE_FAULT_NONE (the image itself is malformed) and *why = the reason.
bool bpf_read_image(const uint8_t *image, size_t size, uint32_t record_size, BpfCode *out, uint32_t *fault,
                    std::string *why);

// Rewrites instructions, one slot for one slot, into forms DPDK 22.11 runs alike in its JIT
// and its interpreter and encodes correctly: every exit but the last becomes a forward jump
// to a later exit (the farthest a jump reaches; DPDK's JIT jumps back to the epilogue of the
// first exit it compiled and encodes a distance of 127 or 128 bytes as a forward rel8, into
// whatever lies there: found by an outside review), and le16 / le32 / le64 become the
// and / 32-bit move / no-op they mean on this host (DPDK's interpreter kept all 64 bits
// where its JIT and Linux keep 16 or 32). Run before bpf_check_instructions, which then
// checks exactly what the runtime gets.
void bpf_normalise(std::vector<uint64_t> *insns);

// The device's own checks of instructions, before the runtime's verifier sees them: what
// DPDK 22.11's verifier lets through and then mishandles (found by fuzz_program and
// fuzz_elf) and what cannot be meant (Linux's verifier refuses all of them too): a call
// that names no helper, a jump outside the program or into the middle of a 64-bit load, a
// 64-bit load without its second half (which must be zero but for its imm), a shift by an
// immediate of the register's width or more, any way to run past the last instruction, a
// little-endian byte swap (DPDK's engines disagree on it: bpf_normalise replaces them);
// then bpf_check_memory. Returns false with *fault and *why as bpf_read_image.
bool bpf_check_instructions(const std::vector<uint64_t> &insns, uint32_t record_size, uint32_t *fault,
                            std::string *why);

// Proves, over every path, that each memory access stays inside the record (record_size
// bytes at r1) or the stack (512 bytes below r10), and reads no stack byte not written
// before; refuses backward jumps (loops), any use of a pointer but copying it, adding or
// subtracting numbers, accesses through it and keeping it whole in an aligned stack slot
// (no other arithmetic, comparisons, storing one into the record or returning one), and
// reads of registers that hold nothing yet (bpf/check.cc says why DPDK's verifier is not
// trusted with this). second: which slots are second halves of 64-bit loads.
bool bpf_check_memory(const std::vector<uint64_t> &insns, const std::vector<bool> &second, uint32_t record_size,
                      uint32_t *fault, std::string *why);

// How many instructions DPDK 22.11's verifier evaluates over all paths of a program that
// bpf_check_instructions accepted (it walks every path separately).
double bpf_verifier_steps(const std::vector<uint64_t> &insns);

// Whether DPDK's x86-64 JIT would compile these instructions wrongly although they verify
// and interpret fine: a JSET ("if dst & src goto", found by fuzz_program), a shift,
// division or remainder of a register by itself ("r0 <<= r0", "r0 /= r0", found by
// fuzz_elf), a 32-bit division or remainder by a register (it clears r0's upper half,
// found by fuzz_elf), an exit before the last instruction or a jump backward (DPDK's JIT
// mis-encodes backward jumps of 127 or 128 bytes; bpf_normalise removes the exits).
bool bpf_jit_unsafe(const std::vector<uint64_t> &insns);

}  // namespace csd::core
