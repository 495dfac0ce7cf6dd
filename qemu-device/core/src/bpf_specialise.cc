// SPDX-License-Identifier: MIT
// bpf_specialise.cc - rewrites a checked eBPF program for one Execute (bpf_specialise.h).
// Why: DPDK's JIT compiles each instruction as it stands, so a filter such as
// examples/bpf/threshold.c ("return key > csd_param(0)") costs per record a call into the
// program, a call of the helper, and the program's own branch on the key (clang writes
// "r0 = 1; if r6 s> r1 goto +1; r0 = 0; exit"), mispredicted on random keys. Here:
//  - "r1 = K; call csd_param" becomes "r1 = K; r0 = params[K]" (the helper's answer for
//    this Execute);
//  - "r0 = A; if x OP y goto +1; r0 = B; exit" computes OP with arithmetic (Hacker's Delight
//    2-12: the sign of a few subtractions and logic operations) and selects A or B;
//  - a program then without jumps (filter and reduce modes) is unrolled: one call runs it
//    over `batch` consecutive records, r1 set to each in turn from a register the program
//    does not use, the answers gathered as a bit mask (filter) or a sum (reduce).
#include "bpf_specialise.h"

#include "bpf_elf.h"
#include "csd_spec.h"

namespace csd::core {

namespace {

// The codes used below (BPF_ALU64 unless named 32).
constexpr uint8_t kLddw = 0x18, kCall = 0x85, kExit = 0x95;
constexpr uint8_t kMovK = 0xB7, kMovX = 0xBF, kMov32K = 0xB4, kMov32X = 0xBC, kAddK = 0x07, kAddX = 0x0F,
                  kSubX = 0x1F, kXorK = 0xA7, kXorX = 0xAF, kAndK = 0x57, kAndX = 0x5F, kOrX = 0x4F, kLshK = 0x67,
                  kRshK = 0x77, kArshK = 0xC7, kNeg = 0x87;
constexpr uint32_t kMaxBatchInsns = 4096;  // the unrolled program's length at most

uint64_t insn(uint8_t code, uint8_t dst, uint8_t src = 0, int32_t imm = 0) { return bpf_encode({code, dst, src, 0, imm}); }

bool is_jump(const BpfInsn &i) { return ((i.code & 0x07) == 0x05 || (i.code & 0x07) == 0x06) && i.code != kCall && i.code != kExit; }

// "r0 = imm" (64-bit or 32-bit move): its value in *v.
bool moves_to_r0(const BpfInsn &i, uint64_t *v)
{
    if ((i.code != kMovK && i.code != kMov32K) || i.dst != 0 || i.src != 0) return false;
    *v = i.code == kMovK ? static_cast<uint64_t>(int64_t{i.imm}) : static_cast<uint32_t>(i.imm);
    return true;
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
        if (static_cast<uint64_t>(int64_t{static_cast<int32_t>(v)}) == v) {
            put(insn(kMovK, reg, 0, static_cast<int32_t>(v)));
        } else {
            put(insn(kLddw, reg, 0, static_cast<int32_t>(static_cast<uint32_t>(v))));
            put(v >> 32 << 32);
        }
    }
    // r0 = (jump `j`'s condition holds) ? a : b, with no branch; every register but r0 and
    // r10 may be overwritten (only "exit" follows).
    bool select(const BpfInsn &j, uint64_t a, uint64_t b);
};

bool Emitter::select(const BpfInsn &j, uint64_t a, uint64_t b)
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
    // the operands as 64-bit numbers that compare as the jump compares them
    uint8_t x = j.dst, y = j.src;
    if (!wide) {
        x = tmp[2];
        put(insn(kMov32X, x, j.dst));
        if (is_signed) put(insn(kLshK, x, 0, 32)), put(insn(kArshK, x, 0, 32));
    }
    if (!by_reg) {
        y = tmp[3];
        load(y, wide || is_signed ? static_cast<uint64_t>(int64_t{j.imm}) : static_cast<uint32_t>(j.imm));
    } else if (!wide) {
        y = tmp[3];
        put(insn(kMov32X, y, j.src));
        if (is_signed) put(insn(kLshK, y, 0, 32)), put(insn(kArshK, y, 0, 32));
    }
    auto less_signed = [&](uint8_t p, uint8_t q) {  // r0 = p < q (signed): (d ^ ((p ^ q) & (d ^ p))) >> 63, d = p - q
        put(insn(kMovX, 0, p)), put(insn(kSubX, 0, q));
        put(insn(kMovX, t, p)), put(insn(kXorX, t, q));
        put(insn(kMovX, u, 0)), put(insn(kXorX, u, p));
        put(insn(kAndX, t, u)), put(insn(kXorX, 0, t)), put(insn(kRshK, 0, 0, 63));
    };
    auto less_unsigned = [&](uint8_t p, uint8_t q) {  // r0 = p < q: ((~p & q) | (~(p ^ q) & (p - q))) >> 63
        put(insn(kMovX, t, p)), put(insn(kXorK, t, 0, -1)), put(insn(kAndX, t, q));
        put(insn(kMovX, u, p)), put(insn(kXorX, u, q)), put(insn(kXorK, u, 0, -1));
        put(insn(kMovX, 0, p)), put(insn(kSubX, 0, q)), put(insn(kAndX, 0, u)), put(insn(kOrX, 0, t));
        put(insn(kRshK, 0, 0, 63));
    };
    auto invert = [&] { put(insn(kXorK, 0, 0, 1)); };
    switch (op) {
    case 0x10:  // JEQ, JNE: r0 = (x ^ y) != 0 = ((d | -d) >> 63)
    case 0x50:
        put(insn(kMovX, 0, x)), put(insn(kXorX, 0, y)), put(insn(kMovX, t, 0)), put(insn(kNeg, t));
        put(insn(kOrX, 0, t)), put(insn(kRshK, 0, 0, 63));
        if (op == 0x10) invert();
        break;
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
    if (static_cast<uint64_t>(int64_t{static_cast<int32_t>(a ^ b)}) == (a ^ b)) {
        put(insn(kAndK, 0, 0, static_cast<int32_t>(a ^ b)));
    } else {
        load(t, a ^ b), put(insn(kAndX, 0, t));
    }
    load(t, b), put(insn(kXorX, 0, t));
    return true;
}

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
    for (size_t i = 0; i < n;) {
        pos[i] = static_cast<int64_t>(e.out.size());
        const BpfInsn a = bpf_decode(insns[i]);
        uint64_t va, vb;
        if (a.code == kLddw) {
            e.put(insns[i]), e.put(insns[i + 1]);
            i += 2;
            continue;
        }
        // "r0 = A; if x OP y goto +1; r0 = B; exit", nothing jumping into its middle
        if (i + 3 < n && moves_to_r0(a, &va) && !targeted[i + 1] && !targeted[i + 2] &&
            moves_to_r0(bpf_decode(insns[i + 2]), &vb) && bpf_decode(insns[i + 3]).code == kExit) {
            const BpfInsn j = bpf_decode(insns[i + 1]);
            const size_t mark = e.out.size();
            if (is_jump(j) && j.off == 1 && e.select(j, va, vb)) {
                changed = true;
                boolean = i + 4 == n && va <= 1 && vb <= 1;
                i += 3;  // the exit follows
                continue;
            }
            e.out.resize(mark), e.target.resize(mark);
        }
        // "r1 = K; call csd_param" (the call not a jump's target): r0 = this Execute's params[K]
        if (a.code == kCall && a.imm == 0 && i > 0 && !targeted[i] && !second[i - 1]) {
            const BpfInsn m = bpf_decode(insns[i - 1]);
            if ((m.code == kMovK || m.code == kMov32K) && m.dst == 1 && m.src == 0) {
                const uint32_t k = static_cast<uint32_t>(m.imm);  // helper_param reads the low 32 bits
                e.load(0, k < nr_params ? params[k] : 0);
                changed = true;
                i++;
                continue;
            }
        }
        e.put(insns[i], is_jump(a) ? static_cast<int64_t>(i) + 1 + a.off : -1);
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

    // The unrolled form: a program with no jump and its one exit last, in filter or reduce
    // mode, two registers it never names to keep the batch's start and the answer in (r6-r9,
    // which a helper call keeps, if it calls one).
    out->batch = 1;
    out->insns = std::move(e.out);
    const std::vector<uint64_t> &p = out->insns;
    const size_t len = p.size();
    bool straight = (mode == CSD_BPF_FILTER || mode == CSD_BPF_REDUCE) && bpf_decode(p[len - 1]).code == kExit;
    bool calls = false;
    uint32_t named = 1u << 0 | 1u << 1 | 1u << 10;
    size_t index_calls = 0;  // each gets "r0 += k" in the unrolled body
    for (size_t i = 0; i + 1 < len && straight; i++) {
        const BpfInsn a = bpf_decode(p[i]);
        if (is_jump(a) || a.code == kExit) straight = false;
        // A division or remainder by a register stops the program (answer 0) where the
        // divisor is zero: unrolled, one record's zero would stop its whole batch (found by
        // an outside review: 31 other records answered 0).
        const uint8_t cls = a.code & 0x07, op = a.code & 0xF0;
        if ((cls == 0x04 || cls == 0x07) && (op == 0x30 || op == 0x90) && (a.code & 0x08)) straight = false;
        calls |= a.code == kCall;
        index_calls += a.code == kCall && a.imm == 1;
        named |= 1u << a.dst | 1u << a.src;
        if (a.code == kLddw) i++;
    }
    uint8_t regs[2], found = 0;
    for (uint8_t r = calls ? 6 : 2; r <= 9 && found < 2; r++) {
        if (!(named >> r & 1)) regs[found++] = r;
    }
    uint32_t batch = kBpfMaxBatch;
    // per record: the body (len - 1), "r0 += k" after each csd_index(), r1's two and the
    // answer's (at most 6); plus 4 around them
    while (batch > 1 && uint64_t{batch} * (len + 8 + index_calls) + 4 > kMaxBatchInsns) batch /= 2;
    if (!straight || found < 2 || batch < 2 || uint64_t{batch} * record_size > INT32_MAX) return changed;
    const uint8_t start = regs[0], acc = regs[1];
    Emitter b;
    b.put(insn(kMovX, start, 1)), b.put(insn(kMovK, acc, 0));
    for (uint32_t k = 0; k < batch; k++) {
        if (k) b.put(insn(kMovX, 1, start)), b.put(insn(kAddK, 1, 0, static_cast<int32_t>(k * record_size)));
        for (size_t i = 0; i + 1 < len; i++) {
            b.put(p[i]);
            const BpfInsn a = bpf_decode(p[i]);
            if (a.code == kCall && a.imm == 1 && k) b.put(insn(kAddK, 0, 0, static_cast<int32_t>(k)));  // csd_index()
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
    b.put(insn(kMovX, 0, acc)), b.put(insn(kExit, 0));
    out->insns = std::move(b.out);
    out->batch = batch;
    return true;
}

}  // namespace csd::core
