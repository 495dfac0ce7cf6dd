// SPDX-License-Identifier: MIT
// bpf/check.cc - the device's own proof that a program's memory accesses stay inside its
// record and its stack, before DPDK's verifier sees it. DPDK 22.11's verifier cannot be
// trusted with that (found by fuzz_elf and by reading lib/bpf/bpf_validate.c): it keeps a
// register "the record pointer" through any arithmetic ("r1 &= 0", then a read at r1 + 100,
// read address 100); it types a stack slot by the first slot an access touches (an
// unaligned spill or fill made chosen bytes "the record pointer"); its multiplication
// bounds overflow unchecked (a byte of the record times 7F7F7F7F7F7F7F80h was taken to be
// at most 128, and read the record plus 2^63). So the device follows every path itself:
// what each register and stack slot may hold (a number within a range, the record or stack
// pointer plus an offset within a range, nothing yet), with ranges that give up (to "any
// value") wherever an operation might wrap, narrowed by conditional jumps. Loops are
// refused first (DPDK refuses them too), so one pass in instruction order sees every path.
#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "load_elf.h"
#include "csd_spec.h"

namespace csd::core {

namespace {

// What a value may be, as a set.
constexpr uint8_t kNumber = 1, kRecordPtr = 2, kStackPtr = 4, kUnset = 8, kAnyPtr = kRecordPtr | kStackPtr;
constexpr int kStackBytes = 512;               // DPDK's MAX_BPF_STACK_SIZE: r10 - 512 .. r10
constexpr int64_t kMaxOffset = int64_t{1} << 32;  // a pointer's offset beyond this is "anywhere"
constexpr size_t kMaxPending = 4096;           // states waiting at jump targets, at most

// A register or 8-byte stack slot: its kinds, and for a number its unsigned range, for a
// pointer its offset from the base (signed).
struct Val {
    uint8_t kind = kUnset;
    uint64_t lo = 0, hi = 0;
    int64_t off_lo() const { return static_cast<int64_t>(lo); }
    int64_t off_hi() const { return static_cast<int64_t>(hi); }
    bool number() const { return kind == kNumber; }
    bool pointer() const { return kind == kRecordPtr || kind == kStackPtr; }
    bool set() const { return !(kind & kUnset); }
    bool operator==(const Val &o) const { return kind == o.kind && lo == o.lo && hi == o.hi; }
};

Val number(uint64_t lo, uint64_t hi) { return Val{kNumber, lo, hi}; }
Val exactly(uint64_t v) { return number(v, v); }
Val any_number() { return number(0, UINT64_MAX); }
uint64_t sext(int32_t imm) { return static_cast<uint64_t>(int64_t{imm}); }  // an imm as 64 bits
Val pointer(uint8_t kind, __int128 lo, __int128 hi)
{
    if (lo < -kMaxOffset || hi > kMaxOffset) {  // anywhere: no access will pass
        return Val{kind, static_cast<uint64_t>(INT64_MIN), static_cast<uint64_t>(INT64_MAX)};
    }
    return Val{kind, static_cast<uint64_t>(static_cast<int64_t>(lo)), static_cast<uint64_t>(static_cast<int64_t>(hi))};
}

Val join(const Val &a, const Val &b)
{
    if (a.kind == kUnset) return Val{static_cast<uint8_t>(b.kind | kUnset), b.lo, b.hi};
    if (b.kind == kUnset) return Val{static_cast<uint8_t>(a.kind | kUnset), a.lo, a.hi};
    const uint8_t kind = a.kind | b.kind;
    const uint8_t base = kind & ~kUnset;
    if (base == kNumber) return Val{kind, std::min(a.lo, b.lo), std::max(a.hi, b.hi)};
    if (base == kRecordPtr || base == kStackPtr) {
        return Val{kind, static_cast<uint64_t>(std::min(a.off_lo(), b.off_lo())),
                   static_cast<uint64_t>(std::max(a.off_hi(), b.off_hi()))};
    }
    return Val{kind, 0, UINT64_MAX};  // a mix: never used (only exact kinds are)
}

// What the program may hold before instruction i: registers, stack slots (r10 - 512 + 8k),
// and which stack bytes it certainly wrote.
struct State {
    Val reg[11];
    Val slot[kStackBytes / 8];
    uint8_t written[kStackBytes / 8] = {};  // bit b: byte 8k + b

    void join(const State &o)
    {
        for (int r = 0; r < 11; r++) reg[r] = csd::core::join(reg[r], o.reg[r]);
        for (int k = 0; k < kStackBytes / 8; k++) {
            slot[k] = csd::core::join(slot[k], o.slot[k]);
            written[k] &= o.written[k];
        }
    }
};

using Insn = BpfInsn;
Insn decode(uint64_t v) { return bpf_decode(v); }

uint64_t mask_bits(int bits) { return bits >= 64 ? UINT64_MAX : (uint64_t{1} << bits) - 1; }

// The number a 32-bit operation sees of v: its low 32 bits.
Val low32(const Val &v) { return v.hi <= UINT32_MAX ? v : number(0, UINT32_MAX); }

// op (ADD, SUB, ...: BPF_OP bits) of two numbers, in bits (64 or 32): a range that holds
// every result, "any value" wherever it might wrap.
Val arith(uint8_t op, const Val &a, const Val &b, int bits)
{
    const uint64_t top = mask_bits(bits);
    const unsigned __int128 alo = a.lo, ahi = a.hi, blo = b.lo, bhi = b.hi;
    Val r = number(0, top);
    switch (op) {
    case 0x00:  // ADD
        if (ahi + bhi <= top) r = number(a.lo + b.lo, a.hi + b.hi);
        break;
    case 0x10:  // SUB
        if (a.lo >= b.hi) r = number(a.lo - b.hi, a.hi - b.lo);
        break;
    case 0x20:  // MUL
        if (ahi * bhi <= top) r = number(static_cast<uint64_t>(alo * blo), static_cast<uint64_t>(ahi * bhi));
        break;
    case 0x30:  // DIV (by zero: the program stops)
        r = number(0, a.hi);
        if (b.lo > 0) r = number(a.lo / b.hi, a.hi / b.lo);
        break;
    case 0x90:  // MOD (by zero: the program stops)
        r = number(0, a.hi);
        if (b.lo > 0 && b.hi - 1 < a.hi) r = number(0, b.hi - 1);
        break;
    case 0x50:  // AND
        r = number(0, std::min(a.hi, b.hi));
        break;
    case 0x40:  // OR
    case 0xA0:  // XOR
    {
        const uint64_t m = std::max(a.hi, b.hi);
        r = number(0, m == 0 ? 0 : mask_bits(64 - __builtin_clzll(m)));
        break;
    }
    case 0x60:  // LSH (the engines take the count modulo the width)
        if (b.lo == b.hi && b.lo < static_cast<uint64_t>(bits) && (ahi << b.lo) <= top) {
            r = number(a.lo << b.lo, a.hi << b.lo);
        }
        break;
    case 0x70:  // RSH
        r = number(0, a.hi);
        if (b.lo == b.hi && b.lo < static_cast<uint64_t>(bits)) r = number(a.lo >> b.lo, a.hi >> b.lo);
        break;
    case 0xC0:  // ARSH: like RSH while the sign bit is clear
        if (a.hi <= top >> 1) r = number(0, a.hi);
        break;
    default:  // NEG, END: any value of the width
        break;
    }
    return r;
}

// Narrows what register v may hold given that "v OP k" is `taken` (unsigned or, when both
// sides are known non-negative, signed comparisons; 32-bit ones only where v fits in 32
// bits). Returns false if it cannot hold: that edge is never taken.
bool narrow(uint8_t op, bool wide, Val *v, const Val &k, bool taken)
{
    if (!v->number() || !k.number()) return true;
    if (!wide && (v->hi > UINT32_MAX || k.hi > UINT32_MAX)) return true;
    const bool is_signed = op == 0x60 || op == 0x70 || op == 0xC0 || op == 0xD0;  // JSGT, JSGE, JSLT, JSLE
    const uint64_t sign = wide ? uint64_t{1} << 63 : uint64_t{1} << 31;
    if (is_signed && (v->hi >= sign || k.hi >= sign)) return true;
    // the condition, as one of ==, !=, >, >=, <, <=
    static const uint8_t as_unsigned[16] = {0, 0x10, 0x20, 0x30, 0, 0x50, 0x20, 0x30,
                                            0, 0,    0xA0, 0xB0, 0xA0, 0xB0, 0, 0};
    uint8_t c = as_unsigned[op >> 4];
    if (c == 0) return true;  // JSET and unknown: no narrowing
    if (!taken) {  // the opposite condition
        static const uint8_t opposite[16] = {0, 0x50, 0xB0, 0xA0, 0, 0x10, 0, 0, 0, 0, 0x30, 0x20, 0, 0, 0, 0};
        c = opposite[c >> 4];
    }
    uint64_t lo = v->lo, hi = v->hi;
    switch (c) {
    case 0x10:  // ==
        if (k.lo == k.hi) {
            if (k.lo < lo || k.lo > hi) return false;
            lo = hi = k.lo;
        }
        break;
    case 0x50:  // !=
        if (k.lo == k.hi && lo == hi && lo == k.lo) return false;
        break;
    case 0x20:  // > k: at least k.lo + 1
        if (k.lo == UINT64_MAX) return false;
        lo = std::max(lo, k.lo + 1);
        break;
    case 0x30:  // >=
        lo = std::max(lo, k.lo);
        break;
    case 0xA0:  // < k: at most k.hi - 1
        if (k.hi == 0) return false;
        hi = std::min(hi, k.hi - 1);
        break;
    case 0xB0:  // <=
        hi = std::min(hi, k.hi);
        break;
    default:
        break;
    }
    if (lo > hi) return false;
    v->lo = lo;
    v->hi = hi;
    return true;
}

}  // namespace

bool bpf_check_memory(const std::vector<uint64_t> &insns, const std::vector<bool> &second, uint32_t record_size,
                      uint32_t *fault, std::string *why)
{
    const size_t n = insns.size();
    std::vector<std::unique_ptr<State>> in(n);
    size_t pending = 1;
    in[0] = std::make_unique<State>();
    in[0]->reg[1] = pointer(kRecordPtr, 0, 0);
    in[0]->reg[10] = pointer(kStackPtr, 0, 0);
    for (size_t i = 0; i < n; i++) {
        if (second[i] || !in[i]) continue;  // a 64-bit load's second half, or never reached
        std::unique_ptr<State> state = std::move(in[i]);
        pending--;
        State &t = *state;
        const Insn ins = decode(insns[i]);
        const auto at = static_cast<uint32_t>(i);
        auto no = [&](const std::string &what) {
            *fault = at;
            *why = "instruction " + std::to_string(i) + " " + what;
            return false;
        };
        if (ins.dst > 10 || ins.src > 10) return no("names a register that does not exist");
        const uint8_t cls = ins.code & 0x07, op = ins.code & 0xF0, mode = ins.code & 0xE0;
        // r10 is the frame pointer: DPDK's JIT restores the host stack pointer from it, so no
        // instruction may write it (found by an outside review: only DPDK refused it).
        if (ins.dst == 10 && (cls == 0x00 || cls == 0x01 || cls == 0x04 || cls == 0x07)) {
            return no("writes r10 (the frame pointer is read-only)");
        }
        // (an END's 0x08 bit says to big-endian, not a source register: found by an outside review)
        const bool reg_src = (ins.code & 0x08) && (ins.code & 0xF7) != 0xD4;
        static constexpr int kSizes[4] = {4, 2, 1, 8};  // BPF_W, BPF_H, BPF_B, BPF_DW
        const int size = kSizes[(ins.code >> 3) & 3];
        // Checks an access of size bytes at base + off; for the stack, *first is the byte
        // (from r10 - 512) where it begins when the offset is known exactly, else -1.
        auto access = [&](const Val &base, int *first) -> std::string {
            if (!base.pointer()) return base.kind & kAnyPtr ? "may or may not be a pointer" : "is not a pointer";
            const __int128 lo = static_cast<__int128>(base.off_lo()) + ins.off;
            const __int128 hi = static_cast<__int128>(base.off_hi()) + ins.off;
            const bool record = base.kind == kRecordPtr;
            if (lo < (record ? 0 : -kStackBytes) || hi + size > (record ? record_size : 0)) {
                return record ? "reaches outside the record (" + std::to_string(record_size) + " bytes)"
                              : "reaches outside the stack (512 bytes below r10)";
            }
            *first = base.kind == kStackPtr && lo == hi ? static_cast<int>(lo + kStackBytes) : -1;
            return "";
        };
        // The stack bytes (from r10 - 512) an access through base may touch.
        auto stack_bytes = [&](const Val &base, int first, int *lo, int *hi) {
            *lo = first >= 0 ? first : static_cast<int>(base.off_lo() + ins.off + kStackBytes);
            *hi = (first >= 0 ? first : static_cast<int>(base.off_hi() + ins.off + kStackBytes)) + size - 1;
        };
        auto written = [&t](int byte) { return t.written[byte / 8] >> (byte % 8) & 1; };
        std::vector<std::pair<size_t, State>> next;  // successors and what they see
        switch (cls) {
        case 0x00:  // LD: only the 64-bit immediate
            if (ins.code != 0x18) return no("is a packet load (not for records)");
            t.reg[ins.dst] = number(static_cast<uint32_t>(ins.imm) | insns[i + 1] >> 32 << 32,
                                    static_cast<uint32_t>(ins.imm) | insns[i + 1] >> 32 << 32);
            next.emplace_back(i + 2, t);
            break;
        case 0x01: {  // LDX: dst = *(size *)(src + off)
            if (mode != 0x60) return no("is not a plain load");
            int first = -1;
            const std::string bad = access(t.reg[ins.src], &first);
            if (!bad.empty()) return no("reads through r" + std::to_string(ins.src) + ", which " + bad);
            Val v = number(0, mask_bits(8 * size));
            if (t.reg[ins.src].kind == kStackPtr) {
                // every byte it may read written before, and no kept pointer read in part
                int lo, hi;
                stack_bytes(t.reg[ins.src], first, &lo, &hi);
                for (int byte = lo; byte <= hi; byte++) {
                    if (!written(byte)) return no("reads stack bytes the program did not write");
                    if ((t.slot[byte / 8].kind & kAnyPtr) && (first < 0 || size != 8 || first % 8)) {
                        return no("reads part of a pointer kept on the stack");
                    }
                }
                if (first >= 0 && size == 8 && first % 8 == 0 && t.slot[first / 8].set()) v = t.slot[first / 8];
            }
            t.reg[ins.dst] = v;
            next.emplace_back(i + 1, t);
            break;
        }
        case 0x02:    // ST: *(size *)(dst + off) = imm
        case 0x03: {  // STX: *(size *)(dst + off) = src, or an atomic add
            const bool add = cls == 0x03 && mode == 0xC0;
            if (mode != 0x60 && !add) return no("is not a plain store");
            int first = -1;
            const std::string bad = access(t.reg[ins.dst], &first);
            if (!bad.empty()) return no("writes through r" + std::to_string(ins.dst) + ", which " + bad);
            const Val v = cls == 0x02 ? exactly(sext(ins.imm)) : t.reg[ins.src];
            if (!v.set()) return no("stores r" + std::to_string(ins.src) + ", which may hold nothing yet");
            if (v.kind & kAnyPtr) {
                if (t.reg[ins.dst].kind == kRecordPtr) return no("stores a pointer into the record");
                if (!v.pointer() || add || first < 0 || size != 8 || first % 8) {
                    return no("keeps a pointer other than whole in an 8-byte aligned stack slot");
                }
            }
            if (t.reg[ins.dst].kind == kStackPtr) {
                int lo, hi;
                stack_bytes(t.reg[ins.dst], first, &lo, &hi);
                const bool whole_slot = first >= 0 && size == 8 && first % 8 == 0 && !add;
                for (int byte = lo; byte <= hi; byte++) {
                    if (add && !written(byte)) return no("adds to stack bytes the program did not write");
                    // A kept pointer is replaced whole or not at all: an add to it, or a store
                    // over part of it, would make its bytes readable as a number (found by an
                    // outside review: the host's addresses reached the output).
                    if ((t.slot[byte / 8].kind & kAnyPtr) && !whole_slot) {
                        return no("changes part of a pointer kept on the stack");
                    }
                    t.slot[byte / 8] = any_number();
                    if (first >= 0) t.written[byte / 8] |= static_cast<uint8_t>(1u << (byte % 8));
                }
                if (whole_slot) t.slot[first / 8] = v;
            }
            next.emplace_back(i + 1, t);
            break;
        }
        case 0x04:  // ALU (32-bit)
        case 0x07: {  // ALU64
            const bool wide = cls == 0x07;
            Val &d = t.reg[ins.dst];
            Val s = wide ? exactly(sext(ins.imm)) : exactly(static_cast<uint32_t>(ins.imm));
            if (reg_src) {
                s = t.reg[ins.src];
                if (!s.set()) return no("reads r" + std::to_string(ins.src) + ", which may hold nothing yet");
            }
            if (op == 0xE0 || op == 0xF0 || (op == 0xD0 && wide)) return no("is not an operation");
            if (op == 0xB0) {  // MOV
                if (wide) {
                    d = s;
                } else {
                    if (s.kind & kAnyPtr) return no("takes 32 bits of a pointer");
                    d = low32(s);
                }
                next.emplace_back(i + 1, t);
                break;
            }
            if (!d.set()) return no("reads r" + std::to_string(ins.dst) + ", which may hold nothing yet");
            if (reg_src && (s.kind & kAnyPtr)) return no("uses a pointer as an operand");
            if (d.kind & kAnyPtr) {
                if (!wide || (op != 0x00 && op != 0x10) || !d.pointer()) {
                    return no(wide ? "does arithmetic on a pointer other than adding or subtracting a number"
                                   : "does 32-bit arithmetic on a pointer");
                }
                // the offset moves by s, taken as signed (all of its range on one side of 2^63;
                // else it may be anything, and so may the pointer)
                const bool one_side = s.hi <= INT64_MAX || s.lo > INT64_MAX;
                const __int128 slo = one_side ? __int128{static_cast<int64_t>(s.lo)} : -(__int128{1} << 64);
                const __int128 shi = one_side ? __int128{static_cast<int64_t>(s.hi)} : (__int128{1} << 64);
                d = op == 0x00 ? pointer(d.kind, d.off_lo() + slo, d.off_hi() + shi)
                               : pointer(d.kind, d.off_lo() - shi, d.off_hi() - slo);
            } else if (op == 0xD0) {  // END: byte swap of 16, 32 or 64 bits
                d = any_number();
            } else if (wide) {
                d = arith(op, d, s, 64);
            } else {
                d = arith(op, low32(d), low32(s), 32);
            }
            next.emplace_back(i + 1, t);
            break;
        }
        default: {  // JMP, JMP32
            if (ins.code == 0x85) {  // call a helper: csd_param(r1), csd_index()
                if (ins.imm == 0 && !t.reg[1].set()) return no("calls csd_param with r1 holding nothing yet");
                t.reg[0] = any_number();
                for (int r = 1; r <= 5; r++) t.reg[r] = Val{};
                next.emplace_back(i + 1, t);
                break;
            }
            if (ins.code == 0x95) {  // exit
                if (!t.reg[0].number()) return no("returns r0, which is not certainly a number");
                break;
            }
            const size_t target = static_cast<size_t>(static_cast<int64_t>(i) + 1 + ins.off);
            if (target <= i) return no("jumps backward (loops are not allowed)");
            if (ins.code == 0x05) {  // ja
                next.emplace_back(target, t);
                break;
            }
            Val &d = t.reg[ins.dst];
            const Val s = reg_src ? t.reg[ins.src] : exactly(sext(ins.imm));
            if (!d.number() || !s.number()) return no("compares something that is not certainly a number");
            const bool wide = cls == 0x05;
            const Val k = wide ? s : reg_src ? low32(s) : exactly(static_cast<uint32_t>(ins.imm));
            for (const bool taken : {false, true}) {
                State u = t;
                if (!narrow(op, wide, &u.reg[ins.dst], k, taken)) continue;  // cannot happen
                next.emplace_back(taken ? target : i + 1, u);
            }
            break;
        }
        }
        for (auto &[j, s] : next) {  // (inside the program and not a second half: checked before)
            if (in[j]) {
                in[j]->join(s);
            } else {
                if (++pending > kMaxPending) return no("leaves too many paths open at once");
                in[j] = std::make_unique<State>(s);
            }
        }
    }
    return true;
}

}  // namespace csd::core
