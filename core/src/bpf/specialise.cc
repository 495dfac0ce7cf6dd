// SPDX-License-Identifier: MIT
// bpf/specialise.cc - rewrites a checked eBPF program for one Execute (bpf/specialise.h).
// Why: DPDK's JIT compiles each instruction as it stands, so a filter such as
// examples/bpf/threshold.c ("return key > csd_param(0)") costs per record a call into the
// program, a call of the helper, and the program's own branch on the key (clang writes
// "r0 = 1; if r6 s> r1 goto +1; r0 = 0; exit"), mispredicted on random keys. Here:
//  - "r1 = K; call csd_param" becomes "r1 = K; r0 = params[K]" (the helper's answer for
//    this Execute);
//  - "r0 = A; if x OP y goto +1; r0 = B; exit" computes OP with arithmetic and selects A or
//    B: where the operands' ranges (followed through the code before it) show that x - y
//    cannot wrap, OP is the sign of x - y (three instructions), else Hacker's Delight 2-12
//    (the sign of a few subtractions and logic operations);
//  - a program then without jumps is unrolled: one call runs it over `batch` consecutive
//    records, the answers gathered as a bit mask (filter), a sum (reduce) or stored after
//    the records (map, whose records the device copies to a scratch buffer first);
//    csd_index() is called once a call, each record's index the first's plus k;
//  - the unrolled code is then cleaned as a compiler would: constants and copies carried
//    forward (an access through "r1 = start + 16k" becomes one at start's offset + 16k, an
//    operation with a constant register becomes one with an immediate, a multiplication by
//    a constant with two bits or fewer becomes shifts and adds), and instructions whose
//    result nothing reads dropped.
#include "specialise.h"

#include <algorithm>

#include "load_elf.h"
#include "csd_spec.h"

namespace csd::core {

namespace {

// The codes used below (BPF_ALU64 unless named 32).
constexpr uint8_t kLddw = 0x18, kCall = 0x85, kExit = 0x95, kStxDw = 0x7B;
constexpr uint8_t kMovK = 0xB7, kMovX = 0xBF, kMov32K = 0xB4, kMov32X = 0xBC, kAddK = 0x07, kAddX = 0x0F,
                  kSubK = 0x17, kSubX = 0x1F, kXorK = 0xA7, kXorX = 0xAF, kAndK = 0x57, kAndX = 0x5F, kOrX = 0x4F,
                  kLshK = 0x67, kRshK = 0x77, kArshK = 0xC7, kNeg = 0x87, kMulK = 0x27;
constexpr uint8_t kClsLdx = 0x01, kClsSt = 0x02, kClsStx = 0x03, kClsAlu = 0x04, kClsAlu64 = 0x07;
constexpr uint8_t kOpMov = 0xB0, kOpNeg = 0x80, kOpEnd = 0xD0, kOpDiv = 0x30, kOpMod = 0x90;
constexpr uint32_t kMaxBatchInsns = 4096;  // the unrolled program's length at most
constexpr uint32_t kHelperParam = 0, kHelperIndex = 1;  // kBpfHelpers' order

uint64_t insn(uint8_t code, uint8_t dst, uint8_t src = 0, int32_t imm = 0, int16_t off = 0)
{
    return bpf_encode({code, dst, src, off, imm});
}

// Whether instruction i of insns ends the program: an exit, or a jump straight to one.
bool exits(const std::vector<uint64_t> &insns, size_t i)
{
    const BpfInsn a = bpf_decode(insns[i]);
    if (a.code == kExit) return true;
    const int64_t to = static_cast<int64_t>(i) + 1 + a.off;
    return a.code == 0x05 && to >= 0 && static_cast<size_t>(to) < insns.size() && bpf_decode(insns[static_cast<size_t>(to)]).code == kExit;
}
bool is_jump(const BpfInsn &i) { return ((i.code & 0x07) == 0x05 || (i.code & 0x07) == 0x06) && i.code != kCall && i.code != kExit; }
bool is_alu(const BpfInsn &i) { return (i.code & 0x07) == kClsAlu || (i.code & 0x07) == kClsAlu64; }
// A 64-bit "d OP= s" whose operands may change places (ADD, MUL, OR, AND, XOR).
bool wide_commutes(const BpfInsn &i)
{
    const uint8_t op = i.code & 0xF0;
    return (i.code & 0x0F) == (kClsAlu64 | 0x08) && (op == 0x00 || op == 0x20 || op == 0x40 || op == 0x50 || op == 0xA0);
}
bool fits_imm(uint64_t v) { return static_cast<uint64_t>(int64_t{static_cast<int32_t>(v)}) == v; }
bool fits_off(int64_t v) { return v >= INT16_MIN && v <= INT16_MAX; }
uint64_t sext(int32_t imm) { return static_cast<uint64_t>(int64_t{imm}); }

// "r0 = imm" (64-bit or 32-bit move): its value in *v.
bool moves_to_r0(const BpfInsn &i, uint64_t *v)
{
    if ((i.code != kMovK && i.code != kMov32K) || i.dst != 0 || i.src != 0) return false;
    *v = i.code == kMovK ? sext(i.imm) : static_cast<uint32_t>(i.imm);
    return true;
}

// a OP b for an ALU instruction's code (its width included), where the operation cannot
// fault and the engines agree on it: false for division, remainder, byte swaps and shifts
// by the width or more.
bool fold(uint8_t code, uint64_t a, uint64_t b, uint64_t *r)
{
    const bool wide = (code & 0x07) == kClsAlu64;
    const uint8_t op = code & 0xF0;
    const uint64_t bits = wide ? 64 : 32;
    if (!wide) a = static_cast<uint32_t>(a), b = static_cast<uint32_t>(b);
    uint64_t v;
    switch (op) {
    case 0x00: v = a + b; break;
    case 0x10: v = a - b; break;
    case 0x20: v = a * b; break;
    case 0x40: v = a | b; break;
    case 0x50: v = a & b; break;
    case 0xA0: v = a ^ b; break;
    case kOpNeg: v = 0 - a; break;
    case kOpMov: v = b; break;
    case 0x60:
    case 0x70:
    case 0xC0:
        if (b >= bits) return false;
        if (op == 0x60) v = a << b;
        else if (op == 0x70) v = a >> b;
        else v = wide ? static_cast<uint64_t>(static_cast<int64_t>(a) >> b)
                      : static_cast<uint32_t>(static_cast<int32_t>(static_cast<uint32_t>(a)) >> b);
        break;
    default: return false;
    }
    *r = wide ? v : static_cast<uint32_t>(v);
    return true;
}

// What a register may hold, as a signed range (the whole of int64 when nothing is known).
struct Range {
    int64_t lo = INT64_MIN, hi = INT64_MAX;
    bool exact() const { return lo == hi; }
};
Range exactly(uint64_t v) { return Range{static_cast<int64_t>(v), static_cast<int64_t>(v)}; }
Range between(__int128 lo, __int128 hi)
{
    if (lo < INT64_MIN || hi > INT64_MAX) return Range{};
    return Range{static_cast<int64_t>(lo), static_cast<int64_t>(hi)};
}
constexpr int64_t kU32Max = UINT32_MAX;

// The ranges after instruction a (the first slot of a 64-bit load carries its value in
// wide_imm), for the registers it writes.
void track(const BpfInsn &a, uint64_t wide_imm, Range reg[11])
{
    const uint8_t cls = a.code & 0x07, op = a.code & 0xF0;
    if (a.code == kLddw) {
        reg[a.dst] = exactly(wide_imm);
    } else if (cls == kClsLdx) {
        static const int64_t top[4] = {kU32Max, 0xFFFF, 0xFF, 0};  // W, H, B, DW (zero-extended)
        const int64_t t = (a.code & 0xE0) == 0x60 ? top[(a.code >> 3) & 3] : 0;
        reg[a.dst] = t ? Range{0, t} : Range{};
    } else if (cls == kClsStx) {
        if ((a.code & 0xE0) == 0xC0) reg[a.src] = Range{};  // an atomic may fetch into src
    } else if (a.code == kCall) {
        for (int r = 0; r <= 5; r++) reg[r] = Range{};
    } else if (is_alu(a)) {
        const bool wide = cls == kClsAlu64, by_reg = a.code & 0x08;
        const Range d = reg[a.dst];
        const Range s = by_reg ? reg[a.src] : exactly(wide ? sext(a.imm) : static_cast<uint32_t>(a.imm));
        Range r;
        uint64_t v;
        if (op != kOpEnd && (op == kOpMov || d.exact()) && s.exact() && fold(a.code, static_cast<uint64_t>(d.lo), static_cast<uint64_t>(s.lo), &v)) {
            r = exactly(v);
        } else if (op == kOpEnd) {  // a byte swap of the low 16, 32 or 64 bits (zero-extended)
            r = a.imm == 16 ? Range{0, 0xFFFF} : a.imm == 32 ? Range{0, kU32Max} : Range{};
        } else if (!wide) {
            r = op == kOpMov && s.lo >= 0 && s.hi <= kU32Max ? s : Range{0, kU32Max};
        } else {
            switch (op) {
            case kOpMov: r = s; break;
            case 0x00: r = between(__int128{d.lo} + s.lo, __int128{d.hi} + s.hi); break;
            case 0x10: r = between(__int128{d.lo} - s.hi, __int128{d.hi} - s.lo); break;
            case 0x20: {
                const __int128 c[4] = {__int128{d.lo} * s.lo, __int128{d.lo} * s.hi, __int128{d.hi} * s.lo, __int128{d.hi} * s.hi};
                const bool small = d.lo > -(int64_t{1} << 62) && d.hi < (int64_t{1} << 62) && s.lo > -(int64_t{1} << 62) &&
                                   s.hi < (int64_t{1} << 62);  // no product overflows 128 bits
                if (small) r = between(*std::min_element(c, c + 4), *std::max_element(c, c + 4));
                break;
            }
            case 0x50:  // AND with a non-negative operand: at most it
                if (s.lo >= 0) r = Range{0, s.hi};
                else if (d.lo >= 0) r = Range{0, d.hi};
                break;
            case 0x60:
                if (s.exact() && s.lo >= 0 && s.lo < 64 && d.lo >= 0 && d.hi <= (INT64_MAX >> s.lo)) r = Range{d.lo << s.lo, d.hi << s.lo};
                break;
            case 0x70:
                if (s.exact() && s.lo > 0 && s.lo < 64) {
                    r = d.lo >= 0 ? Range{d.lo >> s.lo, d.hi >> s.lo} : Range{0, static_cast<int64_t>(UINT64_MAX >> s.lo)};
                } else if (s.exact() && s.lo == 0) {
                    r = d;
                }
                break;
            case 0xC0:  // monotone
                if (s.exact() && s.lo >= 0 && s.lo < 64) r = Range{d.lo >> s.lo, d.hi >> s.lo};
                break;
            case kOpNeg:
                if (d.lo > INT64_MIN) r = Range{-d.hi, -d.lo};
                break;
            default: break;
            }
        }
        reg[a.dst] = r;
    } else if (cls != kClsSt && !is_jump(a) && a.code != kExit) {
        std::fill(reg, reg + 11, Range{});  // anything else: nothing known
    }
}

// The output program, with each jump's target kept as an index of the input until the end.
struct Emitter {
    std::vector<uint64_t> out;
    std::vector<int64_t> target;  // per slot: the input instruction a jump goes to, or -1

    void put(uint64_t v, int64_t t = -1)
    {
        out.push_back(v);
        target.push_back(t);
    }
    // reg = v, in one slot where v is a sign-extended 32-bit immediate, else a 64-bit load.
    void load(uint8_t reg, uint64_t v)
    {
        if (fits_imm(v)) {
            put(insn(kMovK, reg, 0, static_cast<int32_t>(v)));
        } else {
            put(insn(kLddw, reg, 0, static_cast<int32_t>(static_cast<uint32_t>(v))));
            put(v >> 32 << 32);
        }
    }
    // r0 = (jump `j`'s condition holds) ? a : b, with no branch, the registers' ranges before
    // the jump in reg; every register but r0 and r10 may be overwritten (only "exit" follows).
    bool select(const BpfInsn &j, uint64_t a, uint64_t b, const Range reg[11]);
};

bool Emitter::select(const BpfInsn &j, uint64_t a, uint64_t b, const Range reg[11])
{
    const uint8_t op = j.code & 0xF0;
    const bool wide = (j.code & 0x07) == 0x05, by_reg = j.code & 0x08;
    const bool is_signed = op == 0x60 || op == 0x70 || op == 0xC0 || op == 0xD0;
    if (op == 0x00 || op == 0x40 || op > 0xD0 || op == 0x80 || op == 0x90) return false;  // JA, JSET, CALL, EXIT
    if (j.dst == 0 || (by_reg && j.src == 0)) return false;  // r0 is the answer's register
    // four scratch registers besides the operands
    uint8_t tmp[4], n = 0;
    for (uint8_t r = 1; r <= 9 && n < 4; r++) {
        if (r != j.dst && !(by_reg && r == j.src)) tmp[n++] = r;
    }
    const uint8_t t = tmp[0], u = tmp[1];
    // An operand as a 64-bit number that compares as the jump compares it: a register (its
    // range) or a constant.
    struct Operand {
        uint8_t reg = 0, spare = 0;  // spare: where a constant is loaded
        bool constant = false;
        uint64_t value = 0;
        Range range;
    };
    // How a 32-bit compare sees a value of range r: itself where the range says its low
    // 32 bits, extended, give it back.
    auto same_in_32 = [&](const Range &r) {
        return is_signed ? r.lo >= INT32_MIN && r.hi <= INT32_MAX : r.lo >= 0 && r.hi <= kU32Max;
    };
    auto operand = [&](uint8_t src_reg, uint8_t spare) {
        Operand o;
        o.spare = spare;
        const Range r = reg[src_reg];
        if (r.exact()) {
            uint64_t v = static_cast<uint64_t>(r.lo);
            if (!wide) v = is_signed ? sext(static_cast<int32_t>(v)) : static_cast<uint32_t>(v);
            o.constant = true, o.value = v, o.range = exactly(v);
        } else if (wide || same_in_32(r)) {
            o.reg = src_reg, o.range = r;
        } else {
            o.reg = spare;
            put(insn(kMov32X, spare, src_reg));
            if (is_signed) put(insn(kLshK, spare, 0, 32)), put(insn(kArshK, spare, 0, 32));
            o.range = is_signed ? Range{INT32_MIN, INT32_MAX} : Range{0, kU32Max};
        }
        return o;
    };
    Operand x = operand(j.dst, tmp[2]), y;
    if (by_reg) {
        y = operand(j.src, tmp[3]);
    } else {
        const uint64_t v = wide || is_signed ? sext(j.imm) : static_cast<uint32_t>(j.imm);
        y.constant = true, y.value = v, y.range = exactly(v), y.spare = tmp[3];
    }
    // an operand in a register: a constant loaded into its spare
    auto in_reg = [&](const Operand &o) {
        if (!o.constant) return o.reg;
        load(o.spare, o.value);
        return o.spare;
    };
    // r0 = p < q: where p - q cannot wrap (in the compare's sense: both operands below 2^63
    // for an unsigned compare), the sign of the difference
    auto less_direct = [&](const Operand &p, const Operand &q) {
        const bool direct = is_signed ? __int128{p.range.lo} - q.range.hi >= INT64_MIN && __int128{p.range.hi} - q.range.lo <= INT64_MAX
                                      : p.range.lo >= 0 && q.range.lo >= 0;
        if (!direct) return false;
        if (p.constant) load(0, p.value);
        else put(insn(kMovX, 0, p.reg));
        if (q.constant && fits_imm(q.value)) put(insn(kSubK, 0, 0, static_cast<int32_t>(q.value)));
        else put(insn(kSubX, 0, in_reg(q)));
        put(insn(kRshK, 0, 0, 63));
        return true;
    };
    auto less_signed = [&](const Operand &po, const Operand &qo) {  // r0 = p < q (signed): (d ^ ((p ^ q) & (d ^ p))) >> 63, d = p - q
        if (less_direct(po, qo)) return;
        const uint8_t p = in_reg(po), q = in_reg(qo);
        put(insn(kMovX, 0, p)), put(insn(kSubX, 0, q));
        put(insn(kMovX, t, p)), put(insn(kXorX, t, q));
        put(insn(kMovX, u, 0)), put(insn(kXorX, u, p));
        put(insn(kAndX, t, u)), put(insn(kXorX, 0, t)), put(insn(kRshK, 0, 0, 63));
    };
    auto less_unsigned = [&](const Operand &po, const Operand &qo) {  // r0 = p < q: ((~p & q) | (~(p ^ q) & (p - q))) >> 63
        if (less_direct(po, qo)) return;
        const uint8_t p = in_reg(po), q = in_reg(qo);
        put(insn(kMovX, t, p)), put(insn(kXorK, t, 0, -1)), put(insn(kAndX, t, q));
        put(insn(kMovX, u, p)), put(insn(kXorX, u, q)), put(insn(kXorK, u, 0, -1));
        put(insn(kMovX, 0, p)), put(insn(kSubX, 0, q)), put(insn(kAndX, 0, u)), put(insn(kOrX, 0, t));
        put(insn(kRshK, 0, 0, 63));
    };
    auto invert = [&] { put(insn(kXorK, 0, 0, 1)); };
    switch (op) {
    case 0x10:  // JEQ, JNE: r0 = (x ^ y) != 0 = ((d | -d) >> 63)
    case 0x50: {
        const uint8_t p = in_reg(x), q = in_reg(y);
        put(insn(kMovX, 0, p)), put(insn(kXorX, 0, q)), put(insn(kMovX, t, 0)), put(insn(kNeg, t));
        put(insn(kOrX, 0, t)), put(insn(kRshK, 0, 0, 63));
        if (op == 0x10) invert();
        break;
    }
    case 0x20: less_unsigned(y, x); break;            // JGT: y < x
    case 0x30: less_unsigned(x, y), invert(); break;  // JGE: !(x < y)
    case 0xA0: less_unsigned(x, y); break;            // JLT
    case 0xB0: less_unsigned(y, x), invert(); break;  // JLE: !(y < x)
    case 0x60: less_signed(y, x); break;              // JSGT
    case 0x70: less_signed(x, y), invert(); break;    // JSGE
    case 0xC0: less_signed(x, y); break;              // JSLT
    default: less_signed(y, x), invert(); break;      // JSLE
    }
    // r0 is 1 where the jump is taken (the answer a), 0 where it is not (b)
    if (a == 1 && b == 0) return true;
    if (a == 0 && b == 1) return invert(), true;
    put(insn(kNeg, 0));  // all ones or zero
    if (fits_imm(a ^ b)) {
        put(insn(kAndK, 0, 0, static_cast<int32_t>(a ^ b)));
    } else {
        load(t, a ^ b), put(insn(kAndX, 0, t));
    }
    load(t, b), put(insn(kXorX, 0, t));
    return true;
}

// The registers an instruction of a straight program reads (bit r: register r) and writes.
uint32_t reads_of(const BpfInsn &a)
{
    const uint8_t cls = a.code & 0x07, op = a.code & 0xF0;
    if (a.code == kExit) return 1u << 0;
    if (a.code == kCall) return a.imm == static_cast<int32_t>(kHelperIndex) ? 0 : a.imm == static_cast<int32_t>(kHelperParam) ? 1u << 1 : 0x3Eu;
    if (a.code == kLddw) return 0;
    if (cls == kClsLdx) return 1u << a.src;
    if (cls == kClsSt) return 1u << a.dst;
    if (cls == kClsStx) return 1u << a.dst | 1u << a.src;
    if (is_alu(a)) return (op == kOpMov ? 0 : 1u << a.dst) | ((a.code & 0x08) && op != kOpNeg && op != kOpEnd ? 1u << a.src : 0);
    return 0x7FF;  // anything else: all
}
uint32_t writes_of(const BpfInsn &a)
{
    const uint8_t cls = a.code & 0x07;
    if (a.code == kCall) return 0x3F;
    if (a.code == kLddw || cls == kClsLdx || is_alu(a)) return 1u << a.dst;
    if (cls == kClsStx && (a.code & 0xE0) == 0xC0) return 1u << a.src;  // an atomic may fetch into src
    if (cls == 0x00) return 0x3FF;  // another load class (none is checked): anything but r10
    return 0;
}

// Cleans a straight program (no jump, its one exit last; lddw takes two slots) as a
// compiler would: constants and register copies (with an added offset) carried forward into
// the instructions that read them, then instructions whose result nothing reads dropped.
std::vector<uint64_t> tidy_once(const std::vector<uint64_t> &in)
{
    // What a register holds: unknown, a constant, or another register plus an offset.
    struct Known {
        enum { kNone, kConst, kCopy } kind = kNone;
        uint64_t value = 0;  // the constant, or the offset
        uint8_t of = 0;
    };
    Known k[11];
    Emitter e;
    auto wrote = [&](uint8_t r, Known now) {  // r changed: copies of it are forgotten
        for (Known &c : k) {
            if (c.kind == Known::kCopy && c.of == r) c = Known{};
        }
        k[r] = now;
    };
    // Puts v and follows what it does to the registers.
    auto emit = [&](uint64_t v, uint64_t hi_slot = 0) {
        const BpfInsn a = bpf_decode(v);
        e.put(v);
        if (a.code == kLddw) {
            e.put(hi_slot);
            wrote(a.dst, Known{Known::kConst, static_cast<uint32_t>(a.imm) | (hi_slot >> 32 << 32), 0});
            return;
        }
        Known now;
        if (is_alu(a)) {
            const bool by_reg = a.code & 0x08;
            const uint8_t op = a.code & 0xF0;
            uint64_t r;
            const Known s = by_reg ? k[a.src] : Known{Known::kConst, (a.code & 0x07) == kClsAlu64 ? sext(a.imm) : static_cast<uint32_t>(a.imm), 0};
            if (op != kOpEnd && (op == kOpMov || k[a.dst].kind == Known::kConst) && s.kind == Known::kConst &&
                fold(a.code, k[a.dst].value, s.value, &r)) {
                now = Known{Known::kConst, r, 0};
            } else if (a.code == kMovX && a.src != a.dst) {
                now = s.kind == Known::kCopy ? (s.of == a.dst ? Known{} : s) : Known{Known::kCopy, 0, a.src};
            } else if ((a.code == kAddK || a.code == kSubK) && k[a.dst].kind == Known::kCopy) {
                const int64_t off = static_cast<int64_t>(k[a.dst].value) + (a.code == kAddK ? a.imm : -int64_t{a.imm});
                if (off >= INT32_MIN && off <= INT32_MAX) now = Known{Known::kCopy, static_cast<uint64_t>(off), k[a.dst].of};
            }
        }
        const uint32_t w = writes_of(a);
        for (uint8_t r = 0; r < 11; r++) {
            if (w >> r & 1) wrote(r, r == a.dst && is_alu(a) ? now : Known{});
        }
    };
    for (size_t i = 0; i < in.size(); i++) {
        BpfInsn a = bpf_decode(in[i]);
        const uint8_t cls = a.code & 0x07, op = a.code & 0xF0;
        if (a.code == kLddw) {
            emit(in[i], in[i + 1]);
            i++;
            continue;
        }
        // a memory access through a copy of another register plus an offset: through that one
        const uint8_t mode = a.code & 0xE0;
        const bool ldx = cls == kClsLdx && mode == 0x60, store = (cls == kClsSt || cls == kClsStx) && (mode == 0x60 || mode == 0xC0);
        uint8_t &base = ldx ? a.src : a.dst;
        if ((ldx || store) && k[base].kind == Known::kCopy &&
            fits_off(int64_t{a.off} + static_cast<int64_t>(k[base].value))) {
            a.off = static_cast<int16_t>(a.off + static_cast<int64_t>(k[base].value));
            base = k[base].of;
        }
        if (cls == kClsStx && k[a.src].kind == Known::kCopy && k[a.src].value == 0) a.src = k[a.src].of;
        if (is_alu(a) && (a.code & 0x08) && op != kOpNeg && op != kOpEnd) {
            const bool wide = cls == kClsAlu64, shift = op == 0x60 || op == 0x70 || op == 0xC0;
            const Known s = k[a.src];
            if (s.kind == Known::kConst && a.code == kMovX) {  // r = constant
                e.load(a.dst, s.value);
                wrote(a.dst, s);
                continue;
            }
            if (s.kind == Known::kConst && (!wide || fits_imm(s.value)) && !(shift && s.value >= (wide ? 64u : 32u)) &&
                !((op == kOpDiv || op == kOpMod) && static_cast<uint32_t>(s.value) == 0)) {
                a.code &= ~0x08, a.imm = static_cast<int32_t>(s.value), a.src = 0;  // the immediate form
            } else if (s.kind == Known::kCopy && s.value == 0) {
                a.src = s.of;
            } else if (s.kind == Known::kCopy && wide && (op == 0x00 || op == 0x10) && s.of != a.dst &&
                       fits_imm(s.value)) {
                // "d += s", s another register plus an offset: "d += that register; d += offset"
                emit(insn(a.code, a.dst, s.of));
                a.code &= ~0x08, a.imm = static_cast<int32_t>(s.value), a.src = 0;
            }
        }
        // "d OP= constant", d a constant: "d = the result"
        const Known d = k[a.dst];
        uint64_t folded;
        if (is_alu(a) && !(a.code & 0x08) && op != kOpEnd && (op == kOpMov || d.kind == Known::kConst) &&
            fold(a.code, d.value, cls == kClsAlu64 ? sext(a.imm) : static_cast<uint32_t>(a.imm), &folded)) {
            e.load(a.dst, folded);
            wrote(a.dst, Known{Known::kConst, folded, 0});
            continue;
        }
        // an operation that leaves its register as it is: none
        if (is_alu(a) && cls == kClsAlu64 && !(a.code & 0x08) &&
            ((a.imm == 0 && (op == 0x00 || op == 0x10 || op == 0x40 || op == 0xA0 || op == 0x60 || op == 0x70 || op == 0xC0)) ||
             (a.imm == 1 && (op == 0x20 || op == kOpDiv)) || (a.imm == -1 && op == 0x50))) {
            continue;
        }
        // "d OP= s", d a constant and OP commutative: "d = s; d OP= constant"
        if (wide_commutes(a) && d.kind == Known::kConst && fits_imm(d.value) && a.src != a.dst) {
            emit(insn(kMovX, a.dst, a.src));
            a.code &= ~0x08, a.imm = static_cast<int32_t>(d.value), a.src = 0;
            if ((a.imm == 0 && op != 0x20 && op != 0x50) || (a.imm == 1 && op == 0x20) || (a.imm == -1 && op == 0x50)) continue;
        }
        // a multiplication by a constant of one or two bits, after "d = s": shifts and adds
        if (a.code == kMulK && a.imm > 0 && !e.out.empty()) {
            const BpfInsn prev = bpf_decode(e.out.back());
            const uint64_t c = static_cast<uint64_t>(a.imm);
            const int hi = 63 - __builtin_clzll(c), lo = __builtin_ctzll(c);
            if (prev.code == kMovX && prev.dst == a.dst && prev.src != a.dst && __builtin_popcountll(c) <= 2) {
                const uint8_t s = prev.src;
                if (hi != lo) emit(insn(kLshK, a.dst, 0, hi - lo)), emit(insn(kAddX, a.dst, s));
                if (lo) emit(insn(kLshK, a.dst, 0, lo));
                continue;
            }
        }
        emit(bpf_encode(a));
    }
    // Dropped, from the end: an ALU operation or load whose register nothing reads after it.
    const std::vector<uint64_t> &p = e.out;
    std::vector<bool> keep(p.size(), true), upper(p.size());  // upper: a 64-bit load's second slot
    for (size_t i = 0; i + 1 < p.size(); i++) {
        if (bpf_decode(p[i]).code == kLddw) upper[++i] = true;
    }
    uint32_t live = 1u << 10;
    for (size_t i = p.size(); i-- > 0;) {
        if (upper[i]) continue;  // decided with its first slot
        const BpfInsn a = bpf_decode(p[i]);
        const uint8_t cls = a.code & 0x07;
        const uint32_t w = writes_of(a);
        if ((cls == kClsLdx || is_alu(a) || a.code == kLddw) && !(live & w)) {
            keep[i] = false;
            if (a.code == kLddw) keep[i + 1] = false;
            continue;
        }
        live = (live & ~w) | reads_of(a) | 1u << 10;
    }
    std::vector<uint64_t> out;
    for (size_t i = 0; i < p.size(); i++) {
        if (keep[i]) out.push_back(p[i]);
    }
    return out;
}

// A 64-bit multiplication by a constant into r0 where r0 is free there ("r0 = d; r0 *=
// K; d = r0"): DPDK's JIT multiplies in rax and rdx, saving and restoring both around a
// multiplication into any other register (9 instructions), only rdx around one into r0 (5).
std::vector<uint64_t> mul_in_r0(const std::vector<uint64_t> &in)
{
    std::vector<uint32_t> live_after(in.size());
    std::vector<bool> upper(in.size());  // a 64-bit load's second slot
    for (size_t i = 0; i + 1 < in.size(); i++) {
        if (bpf_decode(in[i]).code == kLddw) upper[++i] = true;
    }
    uint32_t live = 1u << 10;
    for (size_t i = in.size(); i-- > 0;) {
        if (upper[i]) continue;
        live_after[i] = live;
        const BpfInsn a = bpf_decode(in[i]);
        live = (live & ~writes_of(a)) | reads_of(a) | 1u << 10;
    }
    std::vector<uint64_t> out;
    for (size_t i = 0; i < in.size(); i++) {
        const BpfInsn a = bpf_decode(in[i]);
        if (a.code == kLddw) {
            out.push_back(in[i]), out.push_back(in[i + 1]);
            i++;
            continue;
        }
        if (a.code == kMulK && a.dst != 0 && !(live_after[i] & 1u)) {
            out.push_back(insn(kMovX, 0, a.dst)), out.push_back(insn(kMulK, 0, 0, a.imm)), out.push_back(insn(kMovX, a.dst, 0));
            continue;
        }
        out.push_back(in[i]);
    }
    return out;
}

// tidy_once, the multiplications moved into r0, and tidy_once again (the copies those make).
std::vector<uint64_t> tidy(const std::vector<uint64_t> &in) { return tidy_once(mul_in_r0(tidy_once(in))); }

}  // namespace

bool bpf_specialise(const std::vector<uint64_t> &insns, const uint64_t *params, uint32_t nr_params, uint32_t mode,
                    uint32_t record_size, BpfSpecialised *out)
{
    const size_t n = insns.size();
    std::vector<bool> second(n), targeted(n);
    for (size_t i = 0; i < n; i++) {
        const BpfInsn a = bpf_decode(insns[i]);
        if (a.code == kLddw && i + 1 < n) {
            second[++i] = true;
        } else if (is_jump(a)) {
            const int64_t t = static_cast<int64_t>(i) + 1 + a.off;
            if (t < 0 || t >= static_cast<int64_t>(n)) return false;  // checked programs have none
            targeted[static_cast<size_t>(t)] = true;
        }
    }
    Emitter e;
    std::vector<int64_t> pos(n, -1);  // where each input instruction begins in the output
    bool changed = false, boolean = false;  // boolean: r0 is 0 or 1 at the (last) exit
    // What each register may hold before instruction i, on every path to it: followed from
    // the start, forgotten at each jump's target (r1 the record pointer: nothing known).
    Range reg[11];
    for (size_t i = 0; i < n;) {
        pos[i] = static_cast<int64_t>(e.out.size());
        if (targeted[i]) std::fill(reg, reg + 11, Range{});
        const BpfInsn a = bpf_decode(insns[i]);
        uint64_t va, vb;
        if (a.code == kLddw) {
            e.put(insns[i]), e.put(insns[i + 1]);
            track(a, static_cast<uint32_t>(a.imm) | (insns[i + 1] >> 32 << 32), reg);
            i += 2;
            continue;
        }
        // "r0 = A; if x OP y goto +1; r0 = B; exit", nothing jumping into its middle (the exit
        // may be a jump to one: bpf_normalise made every exit but the last one)
        if (i + 3 < n && moves_to_r0(a, &va) && !targeted[i + 1] && !targeted[i + 2] &&
            moves_to_r0(bpf_decode(insns[i + 2]), &vb) && exits(insns, i + 3)) {
            const BpfInsn j = bpf_decode(insns[i + 1]);
            const size_t mark = e.out.size();
            if (is_jump(j) && j.off == 1 && e.select(j, va, vb, reg)) {
                changed = true;
                boolean = i + 4 == n && va <= 1 && vb <= 1;
                i += 3;  // the exit follows
                continue;
            }
            e.out.resize(mark), e.target.resize(mark);
        }
        // "r1 = K; call csd_param" (the call not a jump's target): r0 = this Execute's params[K]
        if (a.code == kCall && a.imm == static_cast<int32_t>(kHelperParam) && i > 0 && !targeted[i] && !second[i - 1]) {
            const BpfInsn m = bpf_decode(insns[i - 1]);
            if ((m.code == kMovK || m.code == kMov32K) && m.dst == 1 && m.src == 0) {
                const uint32_t k = static_cast<uint32_t>(m.imm);  // helper_param reads the low 32 bits
                const uint64_t v = k < nr_params ? params[k] : 0;
                e.load(0, v);
                reg[0] = exactly(v);
                changed = true;
                i++;
                continue;
            }
        }
        e.put(insns[i], is_jump(a) ? static_cast<int64_t>(i) + 1 + a.off : -1);
        track(a, 0, reg);
        i++;
    }
    for (size_t j = 0; j < e.out.size(); j++) {  // the jumps, to where their targets went
        if (e.target[j] < 0) continue;
        const int64_t off = pos[static_cast<size_t>(e.target[j])] - static_cast<int64_t>(j) - 1;
        if (pos[static_cast<size_t>(e.target[j])] < 0 || off < INT16_MIN || off > INT16_MAX) return false;
        BpfInsn v = bpf_decode(e.out[j]);
        v.off = static_cast<int16_t>(off);
        e.out[j] = bpf_encode(v);
    }

    // The unrolled form: a program with no jump and its one exit last; registers it never
    // names to keep the batch's start, the answer (filter, reduce) and the first record's
    // index (where it asks for it) in (r6-r9, which a helper call keeps, if it calls one).
    out->batch = 1;
    out->arg_size = record_size;
    out->insns = std::move(e.out);
    const std::vector<uint64_t> &p = out->insns;
    const size_t len = p.size();
    bool straight = mode <= CSD_BPF_REDUCE && bpf_decode(p[len - 1]).code == kExit;
    bool calls = false;  // calls left in each record's body
    uint32_t named = 1u << 0 | 1u << 1 | 1u << 10;
    size_t index_calls = 0;
    for (size_t i = 0; i + 1 < len && straight; i++) {
        const BpfInsn a = bpf_decode(p[i]);
        if (is_jump(a) || a.code == kExit) straight = false;
        // A division or remainder by a register stops the program (answer 0) where the
        // divisor is zero: unrolled, one record's zero would stop its whole batch (found by
        // an outside review: 31 other records answered 0).
        const uint8_t cls = a.code & 0x07, op = a.code & 0xF0;
        if ((cls == kClsAlu || cls == kClsAlu64) && (op == kOpDiv || op == kOpMod) && (a.code & 0x08)) straight = false;
        // Map runs a batch over a copy of its records: a program that writes outside its
        // stack would write the copy, not the input, so it runs a record a call.
        if (mode == CSD_BPF_MAP && (cls == kClsSt || cls == kClsStx) && a.dst != 10) straight = false;
        calls |= a.code == kCall && a.imm != static_cast<int32_t>(kHelperIndex);
        index_calls += a.code == kCall && a.imm == static_cast<int32_t>(kHelperIndex);
        named |= 1u << a.dst | 1u << a.src;
        if (a.code == kLddw) i++;
    }
    if (!straight) return changed;
    // start, the answer (not in map mode) and the index: r6-r9 where a call is made (the
    // index's, once, at the top), else r2-r9
    const uint32_t wanted = (mode == CSD_BPF_MAP ? 1 : 2) + (index_calls ? 1 : 0);
    auto pick = [&](uint8_t from, uint32_t count, uint8_t *regs) {
        uint32_t found = 0;
        for (uint8_t r = from; r <= 9 && found < count; r++) {
            if (!(named >> r & 1)) regs[found++] = r;
        }
        return found == count;
    };
    uint8_t regs[3];
    bool index_once = index_calls > 0;
    if (!pick(calls || index_once ? 6 : 2, wanted, regs)) {
        // no register for the index: csd_index() called per record, as loaded (the device
        // sets the index of the batch's first record before each call)
        if (!index_once || !pick(6, wanted - 1, regs)) return changed;
        index_once = false;
        calls = true;
    }
    const uint8_t start = regs[0], acc = mode == CSD_BPF_MAP ? 0 : regs[1];
    const uint8_t index = index_once ? regs[mode == CSD_BPF_MAP ? 1 : 2] : 0;
    uint32_t batch = kBpfMaxBatch;
    // per record: the body (len - 1), "r0 = index + k" for each csd_index(), r1's two and the
    // answer's (at most 6); plus 6 around them
    while (batch > 1 && uint64_t{batch} * (len + 8 + 2 * index_calls) + 6 > kMaxBatchInsns) batch /= 2;
    if (mode == CSD_BPF_MAP) {
        while (batch > 1 && uint64_t{batch} * (record_size + 8) > kBpfMaxScratch) batch /= 2;
    }
    if (batch < 2 || uint64_t{batch} * record_size > INT32_MAX) return changed;
    // Tidying may lengthen a few instructions (a constant multiplication into shifts and
    // adds): a longer result than kMaxBatchInsns halves the batch.
    for (; batch >= 2; batch /= 2) {
        const uint32_t answers = batch * record_size;  // map: where the answers go in the scratch
        Emitter b;
        b.put(insn(kMovX, start, 1));
        if (index_once) b.put(insn(kCall, 0, 0, static_cast<int32_t>(kHelperIndex))), b.put(insn(kMovX, index, 0));
        if (mode != CSD_BPF_MAP) b.put(insn(kMovK, acc, 0));
        for (uint32_t k = 0; k < batch; k++) {
            if (k || index_once) b.put(insn(kMovX, 1, start));  // (dropped where the body never reads r1 itself)
            if (k) b.put(insn(kAddK, 1, 0, static_cast<int32_t>(k * record_size)));
            for (size_t i = 0; i + 1 < len; i++) {
                const BpfInsn a = bpf_decode(p[i]);
                if (a.code == kCall && a.imm == static_cast<int32_t>(kHelperIndex)) {
                    if (index_once) b.put(insn(kMovX, 0, index));
                    else b.put(p[i]);
                    if (k) b.put(insn(kAddK, 0, 0, static_cast<int32_t>(k)));  // csd_index()
                    continue;
                }
                b.put(p[i]);
            }
            if (mode == CSD_BPF_MAP) {
                b.put(insn(kStxDw, start, 0, 0, static_cast<int16_t>(answers + 8 * k)));
                continue;
            }
            if (mode == CSD_BPF_REDUCE) {
                b.put(insn(kAddX, acc, 0));
                continue;
            }
            if (!boolean) {  // r0 = r0 != 0, through r1 (the next record's pointer comes from `start`)
                b.put(insn(kMovX, 1, 0)), b.put(insn(kNeg, 1)), b.put(insn(kOrX, 0, 1)), b.put(insn(kRshK, 0, 0, 63));
            }
            if (k) b.put(insn(kLshK, 0, 0, static_cast<int32_t>(k)));
            b.put(insn(kOrX, acc, 0));
        }
        if (mode == CSD_BPF_MAP) b.put(insn(kMovK, 0, 0));
        else b.put(insn(kMovX, 0, acc));
        b.put(insn(kExit, 0));
        std::vector<uint64_t> tidied = tidy(b.out);
        if (tidied.size() > kMaxBatchInsns) continue;
        out->insns = std::move(tidied);
        out->batch = batch;
        out->arg_size = mode == CSD_BPF_MAP ? batch * (record_size + 8) : batch * record_size;
        return true;
    }
    return changed;
}

}  // namespace csd::core
