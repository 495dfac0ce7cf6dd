// SPDX-License-Identifier: MIT
// bpf/load_elf.cc - reads an eBPF program image the way spec §8 defines it, refusing every
// image that could be read another way, and resolves its calls as DPDK 22.11's ELF loader
// (lib/bpf/bpf_load_elf.c) would: a call relocated against a helper's name gets imm = the
// helper's index in the runtime's table and src_reg = 0. Nothing else is relocated there
// (a relocated 64-bit load would need a variable in that table, and the device offers
// none), so nothing else is accepted here.
#include "load_elf.h"

#include <elf.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "csd_spec.h"

namespace csd::core {

namespace {

constexpr uint32_t kRBpf64_32 = 10;  // R_BPF_64_32: clang's relocation of a call to an extern function
// Instructions DPDK's verifier may evaluate over all paths of one program (about 0.1 s).
constexpr uint64_t kMaxVerifierSteps = uint64_t{1} << 22;
constexpr uint8_t kLddw = 0x18;      // BPF_LD | BPF_IMM | BPF_DW: two slots, a 64-bit immediate
constexpr uint8_t kCall = 0x85;      // BPF_JMP | BPF_CALL
constexpr uint8_t kExit = 0x95;      // BPF_JMP | BPF_EXIT
constexpr uint8_t kJa = 0x05;        // BPF_JMP | BPF_JA
constexpr uint8_t kEndLe = 0xD4;     // BPF_ALU | BPF_END | BPF_TO_LE
constexpr uint8_t kAnd64K = 0x57;    // BPF_ALU64 | BPF_AND | BPF_K
constexpr uint8_t kMov32X = 0xBC;    // BPF_ALU | BPF_MOV | BPF_X (zero-extends)
constexpr uint8_t kMov64X = 0xBF;    // BPF_ALU64 | BPF_MOV | BPF_X
constexpr uint8_t kPseudoCall = 1;   // the src_reg clang writes in a call it relocates

using Insn = BpfInsn;
Insn decode(uint64_t v) { return bpf_decode(v); }

bool refuse(uint32_t *fault, std::string *why, uint32_t at, std::string reason)
{
    *fault = at;
    *why = std::move(reason);
    return false;
}

// The image's section headers, each checked to lie inside it, and its strings.
class Sections {
public:
    Sections(const uint8_t *img, size_t size) : img_(img), size_(size) {}

    // Reads the header and every section header; false with *why if any is malformed.
    bool read(std::string *why)
    {
        Elf64_Ehdr eh;
        if (size_ < sizeof eh) return *why = "image shorter than an ELF header", false;
        std::memcpy(&eh, img_, sizeof eh);
        if (std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0) return *why = "not an ELF file", false;
        if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB) {
            return *why = "not a 64-bit little-endian ELF", false;
        }
        if (eh.e_ident[EI_VERSION] != EV_CURRENT) {
            return *why = "ELF version " + std::to_string(eh.e_ident[EI_VERSION]) + ", not 1", false;
        }
        if (eh.e_ident[EI_OSABI] != ELFOSABI_NONE) {
            return *why = "ELF OS ABI " + std::to_string(eh.e_ident[EI_OSABI]) + ", not none (0)", false;
        }
        if (eh.e_machine != EM_BPF) {
            return *why = "ELF machine " + std::to_string(eh.e_machine) + ", not BPF (247)", false;
        }
        if (eh.e_type != ET_REL) return *why = "not a relocatable object (clang -c)", false;
        if (eh.e_shentsize != sizeof(Elf64_Shdr)) return *why = "bad section header size", false;
        if (eh.e_shnum == 0 || eh.e_shnum >= SHN_LORESERVE) {
            return *why = "no section headers, or extended section numbering (not supported)", false;
        }
        if (eh.e_shoff > size_ || (size_ - eh.e_shoff) / sizeof(Elf64_Shdr) < eh.e_shnum) {
            return *why = "section headers outside the image", false;
        }
        sh_.resize(eh.e_shnum);
        std::memcpy(sh_.data(), img_ + eh.e_shoff, sh_.size() * sizeof(Elf64_Shdr));
        const Elf64_Shdr null{};
        if (std::memcmp(&sh_[0], &null, sizeof null) != 0) return *why = "section 0 is not the null section", false;
        for (size_t i = 1; i < sh_.size(); i++) {
            const Elf64_Shdr &s = sh_[i];
            if (s.sh_type != SHT_NOBITS && (s.sh_offset > size_ || s.sh_size > size_ - s.sh_offset)) {
                return *why = "section " + std::to_string(i) + " lies outside the image", false;
            }
        }
        if (eh.e_shstrndx == SHN_UNDEF || eh.e_shstrndx >= sh_.size() || sh_[eh.e_shstrndx].sh_type != SHT_STRTAB) {
            return *why = "no section names table", false;
        }
        names_ = eh.e_shstrndx;
        for (size_t i = 1; i < sh_.size(); i++) {
            if (!string_at(names_, sh_[i].sh_name)) {
                return *why = "the name of section " + std::to_string(i) + " lies outside the names table", false;
            }
        }
        return true;
    }

    size_t count() const { return sh_.size(); }
    const Elf64_Shdr &operator[](size_t i) const { return sh_[i]; }
    const uint8_t *data(size_t i) const { return img_ + sh_[i].sh_offset; }
    const char *name(size_t i) const { return string_at(names_, sh_[i].sh_name); }

    // The NUL-terminated string at off in string table section tab, or nullptr.
    const char *string_at(size_t tab, uint64_t off) const
    {
        if (tab == 0 || tab >= sh_.size()) return nullptr;
        const Elf64_Shdr &t = sh_[tab];
        if (t.sh_type != SHT_STRTAB || off >= t.sh_size) return nullptr;
        const char *s = reinterpret_cast<const char *>(img_ + t.sh_offset + off);
        return std::memchr(s, 0, t.sh_size - off) ? s : nullptr;
    }

private:
    const uint8_t *img_;
    size_t size_;
    std::vector<Elf64_Shdr> sh_;
    size_t names_ = 0;
};

// Symbol k of symbol table section tab (checked to exist by the caller).
Elf64_Sym symbol(const Sections &s, size_t tab, uint64_t k)
{
    Elf64_Sym sym;
    std::memcpy(&sym, s.data(tab) + k * sizeof sym, sizeof sym);
    return sym;
}

}  // namespace

bool bpf_read_image(const uint8_t *image, size_t size, uint32_t record_size, BpfCode *out, uint32_t *fault,
                    std::string *why)
{
    *fault = CSD_IMAGE_FAULT_NONE;
    auto no = [&](std::string reason) { return refuse(fault, why, CSD_IMAGE_FAULT_NONE, std::move(reason)); };
    auto no_at = [&](uint32_t at, std::string reason) { return refuse(fault, why, at, std::move(reason)); };
    Sections s(image, size);
    if (!s.read(why)) return false;

    // Exactly one section named csd, holding code.
    size_t code = 0, named = 0, symtab = 0, symtabs = 0;
    for (size_t i = 1; i < s.count(); i++) {
        if (std::strcmp(s.name(i), CSD_BPF_SECTION) == 0) {
            code = i;
            named++;
        }
        switch (s[i].sh_type) {
        case SHT_SYMTAB:
            symtab = i;
            symtabs++;
            break;
        case SHT_DYNSYM:
        case SHT_SYMTAB_SHNDX:
            return no("section " + std::to_string(i) +
                      " holds dynamic symbols or extended section indices (not in a relocatable eBPF object)");
        default:
            break;
        }
    }
    if (named == 0) return no("no section named csd (put the entry function there)");
    if (named > 1) {
        return no(std::to_string(named) + " sections named csd: exactly one may hold the program");
    }
    const Elf64_Shdr &csd = s[code];
    if (csd.sh_type != SHT_PROGBITS || csd.sh_flags != (SHF_ALLOC | SHF_EXECINSTR)) {
        return no("section csd is not code (type PROGBITS, flags alloc and exec, as clang writes it)");
    }
    if (csd.sh_size == 0 || csd.sh_size % 8 || csd.sh_size / 8 > CSD_BPF_MAX_INSNS) {
        return no("section csd holds " + std::to_string(csd.sh_size / 8) + " instructions (1.." +
                  std::to_string(CSD_BPF_MAX_INSNS) + ")");
    }

    // One symbol table; one function in csd, starting at its first instruction.
    if (symtabs != 1) return no(std::to_string(symtabs) + " symbol tables (one is needed)");
    const Elf64_Shdr &st = s[symtab];
    if (st.sh_entsize != sizeof(Elf64_Sym) || st.sh_size % sizeof(Elf64_Sym) || st.sh_link >= s.count() ||
        s[st.sh_link].sh_type != SHT_STRTAB) {
        return no("bad symbol table");
    }
    const uint64_t nsyms = st.sh_size / sizeof(Elf64_Sym);
    const char *entry = nullptr;
    size_t functions = 0;
    for (uint64_t k = 1; k < nsyms; k++) {
        const Elf64_Sym sym = symbol(s, symtab, k);
        if (ELF64_ST_TYPE(sym.st_info) != STT_FUNC || sym.st_shndx != code) continue;
        functions++;
        entry = s.string_at(st.sh_link, sym.st_name);
        if (!entry || !*entry) return no("the function in section csd has no name");
        if (sym.st_value != 0) {
            return no(std::string("function ") + entry + " starts at byte " + std::to_string(sym.st_value) +
                      " of section csd, not at its first instruction");
        }
    }
    if (functions == 0) return no("no function symbol in section csd");
    if (functions > 1) {
        return no(std::to_string(functions) +
                  " functions in section csd: a program is one function (make the others static inline)");
    }

    // The code, then its relocations: calls to the helpers, nothing else.
    std::vector<uint64_t> insns(csd.sh_size / 8);
    std::memcpy(insns.data(), s.data(code), csd.sh_size);
    std::vector<bool> relocated(insns.size());
    size_t tables = 0;
    for (size_t i = 1; i < s.count(); i++) {
        const Elf64_Shdr &rel = s[i];
        if (rel.sh_type != SHT_REL && rel.sh_type != SHT_RELA) continue;
        if (rel.sh_info == 0 || rel.sh_info >= s.count()) {
            return no("relocation table " + std::to_string(i) + " is for section " + std::to_string(rel.sh_info) +
                      ", which does not exist");
        }
        if (rel.sh_info != code) continue;  // relocates something that is not loaded (debug info, BTF)
        if (rel.sh_type == SHT_RELA) return no("RELA relocations of section csd (clang writes REL)");
        if (++tables > 1) return no("two relocation tables for section csd");
        if (rel.sh_entsize != sizeof(Elf64_Rel) || rel.sh_size % sizeof(Elf64_Rel)) {
            return no("bad relocation table");
        }
        if (rel.sh_link != symtab) {
            return no("the relocation table of section csd names section " + std::to_string(rel.sh_link) +
                      " as its symbol table, not the symbol table");
        }
        for (uint64_t k = 0; k < rel.sh_size / sizeof(Elf64_Rel); k++) {
            Elf64_Rel r;
            std::memcpy(&r, s.data(i) + k * sizeof r, sizeof r);
            if (r.r_offset % 8 || r.r_offset >= csd.sh_size) {
                return no("a relocation at byte " + std::to_string(r.r_offset) + ", not an instruction of section csd");
            }
            const uint64_t at = r.r_offset / 8, k_sym = ELF64_R_SYM(r.r_info);
            if (k_sym == 0 || k_sym >= nsyms) {
                return no("a relocation of instruction " + std::to_string(at) + " against symbol " +
                          std::to_string(k_sym) + ", which does not exist");
            }
            if (relocated[at]) return no("two relocations of instruction " + std::to_string(at));
            relocated[at] = true;
            const Elf64_Sym sym = symbol(s, symtab, k_sym);
            const char *name = s.string_at(st.sh_link, sym.st_name);
            if (!name) return no("a relocation against a symbol whose name lies outside its table");
            Insn ins = decode(insns[at]);
            if (ins.code == kLddw) {
                return no("instruction " + std::to_string(at) + " loads the address of " + name +
                          " (a global variable, constant or map): a program reads its record and csd_param() only");
            }
            if (ins.code != kCall) {
                return no("a relocation of instruction " + std::to_string(at) + ", which is not a call");
            }
            if (ELF64_R_TYPE(r.r_info) != kRBpf64_32) {
                return no("the call at instruction " + std::to_string(at) + " is relocated by type " +
                          std::to_string(ELF64_R_TYPE(r.r_info)) + ", not R_BPF_64_32 (10)");
            }
            if (sym.st_shndx != SHN_UNDEF) {
                return no(std::string("a call to ") + (*name ? name : "a function") +
                          ", which the object defines itself: calls to functions of the program are not supported "
                          "(make them static inline)");
            }
            const uint8_t bind = ELF64_ST_BIND(sym.st_info), type = ELF64_ST_TYPE(sym.st_info);
            if ((bind != STB_GLOBAL && bind != STB_WEAK) || (type != STT_NOTYPE && type != STT_FUNC)) {
                return no(std::string("a call to ") + name + ", which is not an external function");
            }
            uint32_t helper = 0;
            while (helper < kNrBpfHelpers && std::strcmp(name, kBpfHelpers[helper]) != 0) helper++;
            if (helper == kNrBpfHelpers) {
                return no(std::string("a call to unknown helper ") + name + " (csd_param and csd_index exist)");
            }
            if (ins.src != 0 && ins.src != kPseudoCall) {
                return no_at(at, "the call at instruction " + std::to_string(at) + " has source register " +
                                     std::to_string(ins.src));
            }
            ins.src = 0;
            ins.imm = static_cast<int32_t>(helper);
            insns[at] = bpf_encode(ins);
        }
    }

    bpf_normalise(&insns);
    if (!bpf_check_instructions(insns, record_size, fault, why)) return false;
    // Every call names a helper: a call left as it was in the image could mean anything.
    // (Second halves of 64-bit loads are zero by now: every slot coded as a call is one.)
    for (size_t i = 0; i < insns.size(); i++) {
        if (static_cast<uint8_t>(insns[i]) == kCall && !relocated[i]) {
            return no_at(static_cast<uint32_t>(i), "instruction " + std::to_string(i) +
                                                       " calls by number, not a helper by name (declare helpers "
                                                       "extern, as csd_bpf.h does)");
        }
    }
    out->insns = std::move(insns);
    out->name = std::string(entry).substr(0, CSD_BPF_ENTRY_NAME_LEN);
    return true;
}

void bpf_normalise(std::vector<uint64_t> *insns)
{
    std::vector<uint64_t> &v = *insns;
    const size_t n = v.size();
    std::vector<size_t> exits;  // the exits, in order (a 64-bit load's second half is never one)
    for (size_t i = 0; i < n; i++) {
        const Insn ins = decode(v[i]);
        if (ins.code == kLddw) {
            i++;
        } else if (ins.code == kExit) {
            exits.push_back(i);
        } else if (ins.code == kEndLe) {
            // le16: r &= 0xffff; le32: w = w (zero-extends); le64 (and any other width, which
            // the runtime's verifier refuses anyway): r = r
            const int32_t width = ins.imm;
            Insn same{};
            same.dst = ins.dst;
            if (width == 16) {
                same.code = kAnd64K;
                same.imm = 0xFFFF;
            } else {
                same.code = width == 32 ? kMov32X : kMov64X;
                same.src = ins.dst;
            }
            v[i] = bpf_encode(same);
        }
    }
    // Each exit jumps to the farthest later exit a 16-bit offset reaches (the last one if it
    // can), so every exit's path ends at the last exit, the only one compiled as an epilogue.
    for (size_t k = 0, j = 0; k + 1 < exits.size(); k++) {
        j = std::max(j, k + 1);
        while (j + 1 < exits.size() && exits[j + 1] - exits[k] - 1 <= INT16_MAX) j++;
        if (exits[j] - exits[k] - 1 > INT16_MAX) continue;  // none in reach: left (the JIT is then not used)
        Insn ja{};
        ja.code = kJa;
        ja.off = static_cast<int16_t>(exits[j] - exits[k] - 1);
        v[exits[k]] = bpf_encode(ja);
    }
}

bool bpf_check_instructions(const std::vector<uint64_t> &insns, uint32_t record_size, uint32_t *fault,
                            std::string *why)
{
    auto no = [&](std::string reason) { return refuse(fault, why, CSD_IMAGE_FAULT_NONE, std::move(reason)); };
    auto no_at = [&](uint32_t at, std::string reason) { return refuse(fault, why, at, std::move(reason)); };
    const uint64_t n = insns.size();
    if (n == 0) return no("no instructions");
    // Which slots are second halves of a 64-bit load (not instructions of their own).
    std::vector<bool> second(n);
    for (uint64_t i = 0; i < n; i++) {
        if (static_cast<uint8_t>(insns[i]) != kLddw) continue;
        if (i + 1 == n) return no_at(static_cast<uint32_t>(i), "a 64-bit load without its second half");
        second[++i] = true;
    }
    for (uint64_t i = 0; i < n; i++) {
        if (second[i]) continue;
        const Insn ins = decode(insns[i]);
        const auto at = static_cast<uint32_t>(i);
        const std::string where = "instruction " + std::to_string(i);
        const uint8_t cls = ins.code & 0x07, op = ins.code & 0xF0;
        uint64_t next = i + 1;  // where it goes on to when it does not jump; n: nowhere
        if (ins.code == kLddw) {
            const Insn hi = decode(insns[i + 1]);
            if (hi.code != 0 || hi.dst != 0 || hi.src != 0 || hi.off != 0) {
                return no_at(at, "the second half of the 64-bit load at " + where + " is not zero but for its imm");
            }
            if (ins.src != 0) return no_at(at, where + " loads a pseudo value (a map or BTF reference: not supported)");
            next = i + 2;
        } else if (ins.code == kExit) {
            next = n + 1;  // ends the program
        } else if (ins.code == kEndLe) {
            return no_at(at, where + " is a little-endian byte swap, which DPDK's interpreter and JIT answer "
                                     "differently (an image's are replaced by and / mov before this check)");
        } else if (ins.code == kCall) {
            if (ins.src != 0 || ins.dst != 0 || ins.off != 0 || static_cast<uint32_t>(ins.imm) >= kNrBpfHelpers) {
                return no_at(at, where + " is a call that names no helper");
            }
        } else if (cls == 0x05 || cls == 0x06) {  // jumps (BPF_JMP, BPF_JMP32)
            const int64_t target = static_cast<int64_t>(i) + 1 + ins.off;
            if (target < 0 || target >= static_cast<int64_t>(n)) {
                return no_at(at, "a jump to instruction " + std::to_string(target) + ", outside the program");
            }
            if (second[static_cast<uint64_t>(target)]) {
                return no_at(at,
                             "a jump into the middle of the 64-bit load at instruction " + std::to_string(target - 1));
            }
            if (ins.code == kJa) next = n + 1;  // always jumps
        } else if (cls == 0x07 && (op == 0x30 || op == 0x90) && ((ins.code & 0x08) || ins.imm == -1)) {
            // DPDK 22.11's verifier (eval_divmod) divides the signed ranges of a DIV or MOD of
            // two constants with the host's signed division: INT64_MIN / -1 raises SIGFPE and
            // kills the emulator. A 64-bit divisor that is a register (a constant to DPDK
            // where the program, or its rewrite for an Execute's params, makes it one) or the
            // immediate -1 is refused outright, whatever the device's own ranges say (DPDK's
            // own tracking is not sound: see bpf/check.cc). 32-bit operands are sign-extended
            // from 32 bits first, and cannot trap.
            return no_at(at, where + " is a 64-bit division or remainder by " +
                                 ((ins.code & 0x08) ? "a register" : "-1") +
                                 ": DPDK 22.11's verifier traps on INT64_MIN / -1 (use 32-bit operands or a "
                                 "constant divisor)");
        } else if ((cls == 0x07 || cls == 0x04) && (op == 0x60 || op == 0x70 || op == 0xC0) && !(ins.code & 0x08)) {
            const int64_t width = cls == 0x07 ? 64 : 32;  // LSH, RSH, ARSH by an immediate
            if (ins.imm < 0 || ins.imm >= width) {
                return no_at(at, "shift by " + std::to_string(ins.imm) + " of a " + std::to_string(width) +
                                     "-bit register");
            }
        }
        if (next == n) {  // DPDK's verifier would follow it past the program (and its JIT run there)
            return no("the program can run past its last instruction (after " + where + ")");
        }
    }
    if (!bpf_check_memory(insns, second, record_size, fault, why)) return false;
    // DPDK 22.11's verifier evaluates every path through the program separately (no state
    // merging): k independent if-statements cost it 2^k walks, and it runs inside the
    // Program Load command (found by an outside review: 40 "diamonds", 122 instructions,
    // never finished): a program that would take more is refused before DPDK sees it.
    const double steps = bpf_verifier_steps(insns);
    if (steps > kMaxVerifierSteps) {
        char text[32];
        std::snprintf(text, sizeof text, "%.3g", steps);
        return no("has too many paths for the verifier: it would evaluate " + std::string(text) +
                  " instructions over them (at most " + std::to_string(kMaxVerifierSteps) +
                  "; join the branches, e.g. compute with arithmetic instead of if-statements)");
    }
    return true;
}

double bpf_verifier_steps(const std::vector<uint64_t> &insns)
{
    // The program is a DAG (no backward jumps): the instructions evaluated over all paths
    // are counted exactly, from the end.
    const uint64_t n = insns.size();
    std::vector<bool> second(n);
    for (uint64_t i = 0; i + 1 < n; i++) {
        if (static_cast<uint8_t>(insns[i]) == kLddw) second[++i] = true;
    }
    std::vector<double> paths(n + 1, 0.0), visits(n + 1, 0.0);
    for (uint64_t j = n; j-- > 0;) {
        if (second[j]) continue;
        const Insn ins = decode(insns[j]);
        const uint8_t cls = ins.code & 0x07;
        double p = 0, v = 0;
        auto follow = [&](uint64_t k) {
            if (k < n) p += paths[k], v += visits[k];
        };
        if (ins.code == kExit) {
            p = 1;
        } else if (ins.code == kLddw) {
            follow(j + 2);
        } else if ((cls == 0x05 || cls == 0x06) && ins.code != kCall) {
            follow(static_cast<uint64_t>(static_cast<int64_t>(j) + 1 + ins.off));
            if (ins.code != kJa) follow(j + 1);
        } else {
            follow(j + 1);
        }
        paths[j] = p;
        visits[j] = std::min(v + p, 1e30);  // this instruction once on each path through it
    }
    return visits[0];
}

bool bpf_jit_unsafe(const std::vector<uint64_t> &insns)
{
    for (size_t i = 0; i < insns.size(); i++) {
        const Insn ins = decode(insns[i]);
        const uint8_t cls = ins.code & 0x07, op = ins.code & 0xF0;
        if (cls == 0x05 && op == 0x40) return true;  // BPF_JMP | BPF_JSET
        // A shift of a register by itself (its JIT swaps the count into rcx first, and then
        // shifts what rcx held: "r0 <<= r0" left r0 as it was; found by fuzz_elf).
        // A division or remainder of r0 or r3 by itself (its JIT then divides by a scratch
        // register it did not fill: "r0 /= r0" gave nonsense; found by fuzz_elf).
        const bool shift = op == 0x60 || op == 0x70 || op == 0xC0, divide = op == 0x30 || op == 0x90;
        if ((cls == 0x04 || cls == 0x07) && (shift || divide) && (ins.code & 0x08) && ins.src == ins.dst) return true;
        // A 32-bit division or remainder by a register (its JIT checks the divisor for zero
        // with a 32-bit cmov into rax, which clears r0's upper half even when it does not
        // move: "r0 = 2^63; w9 %= w4" answered 0; found by fuzz_elf). (64-bit ones by a
        // register are refused: bpf_check_instructions.)
        if (cls == 0x04 && divide && (ins.code & 0x08)) return true;
        // An exit before the last instruction jumps back to the first one's epilogue, and
        // any backward jump of 127 or 128 bytes is encoded as a forward one.
        if (ins.code == kExit && i + 1 != insns.size()) return true;
        if ((cls == 0x05 || cls == 0x06) && ins.code != kExit && ins.code != kCall && ins.off < 0) return true;
    }
    return false;
}

}  // namespace csd::core
