// SPDX-License-Identifier: MIT
// libFuzzer target: the ELF container of downloadable program images (spec §8), fuzzed by
// structure. An input describes an object section by section (name, type, flags, link,
// info, entsize, data, and optional bent name offset, file offset and size) plus header
// fields, a record size and record bytes; elf_writer.h lays it out. The custom mutator
// changes that description: sections added, dropped, cloned, swapped; names (csd twice, a
// name outside its table); types, flags, links, infos; symbols (their section index, kind,
// name, value); relocations (their offset, symbol, type); string tables; instructions
// (with an opcode list, calls and 64-bit loads); the header. Every image goes through
// BpfProgram::load; an accepted one runs over records placed against guard pages (a read
// or write outside them faults), JIT-compiled and interpreted, and both must agree, also
// when rewritten for an Execute (bpf/specialise.h) in filter, map and reduce modes.
// Findings: a crash, a sanitizer report, a hang, an accepted image without exactly one
// section named csd, or the two engines disagreeing. FUZZ_ELF_DUMP=FILE writes the image
// an input describes; FUZZ_ELF_STATS=1 counts accepted images.
#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "bpf/bpf.h"
#include "bpf/specialise.h"
#include "elf_writer.h"

extern "C" size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max_size);

namespace {

using csd::test::ElfImage;
using csd::test::ElfSection;

// The structured input and its byte encoding (little-endian, tolerant of truncation).
struct Desc {
    uint16_t record_size = 16;
    ElfImage img;
    std::vector<uint8_t> records;
};

class Reader {
public:
    Reader(const uint8_t *p, size_t n) : p_(p), n_(n) {}
    template <typename T> T get(T dflt = T{})
    {
        if (n_ < sizeof(T)) {
            n_ = 0;
            return dflt;
        }
        T v;
        std::memcpy(&v, p_, sizeof v);
        p_ += sizeof v;
        n_ -= sizeof v;
        return v;
    }
    std::vector<uint8_t> bytes(size_t len)
    {
        len = len < n_ ? len : n_;
        std::vector<uint8_t> v(p_, p_ + len);
        p_ += len;
        n_ -= len;
        return v;
    }
    size_t left() const { return n_; }

private:
    const uint8_t *p_;
    size_t n_;
};

constexpr size_t kMaxSections = 48;

Desc decode(const uint8_t *data, size_t size)
{
    Reader r(data, size);
    Desc d;
    d.record_size = static_cast<uint16_t>(1 + r.get<uint16_t>(15) % CSD_MAX_RECORD_SIZE);
    d.img.osabi = r.get<uint8_t>();
    d.img.type = r.get<uint16_t>(ET_REL);
    d.img.machine = r.get<uint16_t>(EM_BPF);
    d.img.shstrndx = r.get<int32_t>(-1);
    d.img.shnum = r.get<int32_t>(-1);
    d.img.names = r.get<uint16_t>();
    const size_t n = r.get<uint8_t>() % (kMaxSections + 1);
    for (size_t i = 0; i < n && r.left(); i++) {
        ElfSection s;
        const auto name = r.bytes(r.get<uint8_t>());
        s.name.assign(name.begin(), name.end());
        s.type = r.get<uint32_t>();
        s.flags = r.get<uint64_t>();
        s.link = r.get<uint32_t>();
        s.info = r.get<uint32_t>();
        s.entsize = r.get<uint64_t>();
        s.name_offset = r.get<int64_t>(-1);
        s.offset = r.get<int64_t>(-1);
        s.size = r.get<int64_t>(-1);
        s.data = r.bytes(r.get<uint16_t>());
        d.img.sections.push_back(std::move(s));
    }
    d.records = r.bytes(r.left());
    return d;
}

template <typename T> void put(std::vector<uint8_t> *v, T x)
{
    const auto *b = reinterpret_cast<const uint8_t *>(&x);
    v->insert(v->end(), b, b + sizeof x);
}

std::vector<uint8_t> encode(const Desc &d)
{
    std::vector<uint8_t> v;
    put<uint16_t>(&v, static_cast<uint16_t>(d.record_size - 1));
    put<uint8_t>(&v, d.img.osabi);
    put<uint16_t>(&v, d.img.type);
    put<uint16_t>(&v, d.img.machine);
    put<int32_t>(&v, static_cast<int32_t>(d.img.shstrndx));
    put<int32_t>(&v, static_cast<int32_t>(d.img.shnum));
    put<uint16_t>(&v, static_cast<uint16_t>(d.img.names));
    put<uint8_t>(&v, static_cast<uint8_t>(d.img.sections.size()));
    for (const auto &s : d.img.sections) {
        const size_t name_len = s.name.size() < 255 ? s.name.size() : 255;
        put<uint8_t>(&v, static_cast<uint8_t>(name_len));
        v.insert(v.end(), s.name.begin(), s.name.begin() + name_len);
        put<uint32_t>(&v, s.type);
        put<uint64_t>(&v, s.flags);
        put<uint32_t>(&v, s.link);
        put<uint32_t>(&v, s.info);
        put<uint64_t>(&v, s.entsize);
        put<int64_t>(&v, s.name_offset);
        put<int64_t>(&v, s.offset);
        put<int64_t>(&v, s.size);
        const size_t len = s.data.size() < 65535 ? s.data.size() : 65535;
        put<uint16_t>(&v, static_cast<uint16_t>(len));
        v.insert(v.end(), s.data.begin(), s.data.begin() + len);
    }
    v.insert(v.end(), d.records.begin(), d.records.end());
    return v;
}

// --- the mutator -------------------------------------------------------------------

const char *const kNames[] = {"csd", ".text", ".strtab", ".symtab", ".relcsd", ".rel.text", ".shstrtab", ".BTF",
                              ".rel.BTF.ext", ".rodata", ".data", "", "CSD", "csd ", "csdx", "cs", ".llvm_addrsig"};
const char *const kStrings[] = {"csd_param", "csd_index", "csd", "csd_time", "main", "threshold", "", "csd_param\x01"};
const uint32_t kTypes[] = {SHT_NULL, SHT_PROGBITS, SHT_SYMTAB, SHT_STRTAB, SHT_RELA, SHT_HASH, SHT_DYNAMIC, SHT_NOTE,
                           SHT_NOBITS, SHT_REL, SHT_DYNSYM, SHT_SYMTAB_SHNDX, SHT_GROUP, 0x6fff4c03, 0xFFFFFFFF};
const uint64_t kFlags[] = {0, SHF_ALLOC, SHF_ALLOC | SHF_EXECINSTR, SHF_EXECINSTR, SHF_WRITE | SHF_ALLOC | SHF_EXECINSTR,
                           SHF_INFO_LINK, SHF_MERGE | SHF_STRINGS, ~0ull};
const uint64_t kEntsizes[] = {0, 1, 8, 16, 23, 24, 25, 32};
// Opcodes DPDK's verifier knows (and a few it does not).
const uint8_t kOpcodes[] = {0x07, 0x0f, 0x17, 0x1f, 0x27, 0x2f, 0x37, 0x3f, 0x47, 0x4f, 0x57, 0x5f, 0x67, 0x6f, 0x77,
                            0x7f, 0x87, 0x97, 0x9f, 0xa7, 0xaf, 0xb7, 0xbf, 0xc7, 0xcf, 0xd4, 0xdc, 0x04, 0x0c, 0x14,
                            0x1c, 0x24, 0x2c, 0x34, 0x3c, 0x44, 0x4c, 0x54, 0x5c, 0x64, 0x6c, 0x74, 0x7c, 0x84, 0x94,
                            0x9c, 0xa4, 0xac, 0xb4, 0xbc, 0xc4, 0xcc, 0x18, 0x61, 0x69, 0x71, 0x79, 0x62, 0x6a, 0x72,
                            0x7a, 0x63, 0x6b, 0x73, 0x7b, 0xc3, 0xdb, 0x05, 0x15, 0x1d, 0x25, 0x2d, 0x35, 0x3d, 0x45,
                            0x4d, 0x55, 0x5d, 0x65, 0x6d, 0x75, 0x7d, 0xa5, 0xad, 0xb5, 0xbd, 0xc5, 0xcd, 0xd5, 0xdd,
                            0x85, 0x95, 0x20, 0x28, 0x30, 0x40, 0x48, 0x50, 0x00, 0x06, 0x16, 0x8d, 0xe5, 0xff};
const int64_t kOverrides[] = {-1, -1, -1, 0, 1, 8, 64, 4095, 4096, 65536, 1ll << 32, 1ll << 62, -2, INT64_MAX};
const uint16_t kShndx[] = {SHN_UNDEF, 1, 2, 3, 4, 5, 6, SHN_LORESERVE, SHN_ABS, SHN_COMMON, SHN_XINDEX, 0xFFFE};

template <typename T, size_t N> T pick(std::mt19937_64 &g, const T (&a)[N]) { return a[g() % N]; }

// A field of an entry of entsize bytes in v (k-th entry), read and written by offset.
template <typename T> bool edit(std::vector<uint8_t> &v, size_t entsize, size_t k, size_t off, T value)
{
    if (entsize == 0 || (k + 1) * entsize > v.size() || off + sizeof(T) > entsize) return false;
    std::memcpy(&v[k * entsize + off], &value, sizeof value);
    return true;
}

// Offsets of the strings in a string table section (for symbol names that land on one).
std::vector<uint32_t> string_starts(const std::vector<uint8_t> &tab)
{
    std::vector<uint32_t> v;
    for (size_t i = 0; i < tab.size(); i++) {
        if (i == 0 || tab[i - 1] == 0) v.push_back(static_cast<uint32_t>(i));
    }
    return v;
}

// The section a symbol table's names live in (by its link), if it is one of ours.
std::vector<uint8_t> *linked(Desc &d, const ElfSection &s)
{
    return s.link >= 1 && s.link <= d.img.sections.size() ? &d.img.sections[s.link - 1].data : nullptr;
}

void mutate_symbol(Desc &d, ElfSection &s, std::mt19937_64 &g)
{
    const size_t n = s.data.size() / sizeof(Elf64_Sym);
    if (n == 0 || g() % 8 == 0) {  // add one: a helper, a function in some section, anything
        std::vector<uint8_t> *names = linked(d, s);
        uint32_t name = 0;
        if (names && g() % 2) {
            name = static_cast<uint32_t>(names->size());
            const std::string str = pick(g, kStrings);
            names->insert(names->end(), str.begin(), str.end());
            names->push_back(0);
        }
        const uint8_t bind = g() % 3 ? STB_GLOBAL : STB_LOCAL, type = g() % 3 == 0 ? STT_FUNC : STT_NOTYPE;
        const auto e = csd::test::elf_symbol(name, bind, type, pick(g, kShndx), g() % 3 ? 0 : 8 * (g() % 4), 8);
        s.data.insert(s.data.end(), e.begin(), e.end());
        return;
    }
    const size_t k = g() % n, at = k * sizeof(Elf64_Sym);
    switch (g() % 6) {
    case 0: edit<uint16_t>(s.data, sizeof(Elf64_Sym), k, offsetof(Elf64_Sym, st_shndx), pick(g, kShndx)); break;
    case 1:
        edit<uint8_t>(s.data, sizeof(Elf64_Sym), k, offsetof(Elf64_Sym, st_info),
                      static_cast<uint8_t>(ELF64_ST_INFO(g() % 3, g() % 7)));
        break;
    case 2: {
        std::vector<uint8_t> *names = linked(d, s);
        const auto starts = names ? string_starts(*names) : std::vector<uint32_t>{};
        const uint32_t name = !starts.empty() && g() % 4 ? starts[g() % starts.size()] : static_cast<uint32_t>(g());
        edit<uint32_t>(s.data, sizeof(Elf64_Sym), k, offsetof(Elf64_Sym, st_name), name);
        break;
    }
    case 3: edit<uint64_t>(s.data, sizeof(Elf64_Sym), k, offsetof(Elf64_Sym, st_value), g() % 2 ? 0 : 8 * (g() % 8)); break;
    case 4: s.data.erase(s.data.begin() + at, s.data.begin() + at + sizeof(Elf64_Sym)); break;
    default: s.data.insert(s.data.end(), s.data.begin() + at, s.data.begin() + at + sizeof(Elf64_Sym)); break;
    }
}

void mutate_relocation(Desc &d, ElfSection &s, std::mt19937_64 &g)
{
    const size_t n = s.data.size() / sizeof(Elf64_Rel);
    // the code the table relocates, for offsets that land on its instructions
    const size_t code = s.info >= 1 && s.info <= d.img.sections.size() ? d.img.sections[s.info - 1].data.size() / 8 : 0;
    auto offset = [&] { return code && g() % 4 ? 8 * (g() % code) : g() % 4 ? g() % 64 : g(); };
    if (n == 0 || g() % 6 == 0) {
        const auto e = csd::test::elf_rel(offset(), static_cast<uint32_t>(g() % 6), g() % 4 ? 10 : g() % 12);
        s.data.insert(s.data.end(), e.begin(), e.end());
        return;
    }
    const size_t k = g() % n, at = k * sizeof(Elf64_Rel);
    Elf64_Rel r;
    std::memcpy(&r, &s.data[at], sizeof r);
    switch (g() % 5) {
    case 0: r.r_offset = offset(); break;
    case 1: r.r_info = ELF64_R_INFO(g() % 2 ? g() % 8 : static_cast<uint32_t>(g()), ELF64_R_TYPE(r.r_info)); break;
    case 2: r.r_info = ELF64_R_INFO(ELF64_R_SYM(r.r_info), g() % 2 ? 10 : g() % 16); break;
    case 3: s.data.erase(s.data.begin() + at, s.data.begin() + at + sizeof r); return;
    default: s.data.insert(s.data.end(), s.data.begin() + at, s.data.begin() + at + sizeof r); return;
    }
    std::memcpy(&s.data[at], &r, sizeof r);
}

void mutate_strings(ElfSection &s, std::mt19937_64 &g)
{
    switch (g() % 4) {
    case 0: {
        const std::string str = pick(g, kStrings);
        s.data.insert(s.data.end(), str.begin(), str.end());
        s.data.push_back(0);
        break;
    }
    case 1:
        if (!s.data.empty()) s.data.pop_back();  // perhaps the final NUL
        break;
    case 2:
        if (!s.data.empty()) s.data[g() % s.data.size()] = g() % 2 ? 0 : static_cast<uint8_t>('a' + g() % 26);
        break;
    default:
        s.data.resize(s.data.empty() ? 1 : g() % s.data.size());
        break;
    }
}

void mutate_code(ElfSection &s, std::mt19937_64 &g)
{
    size_t n = s.data.size() / 8;
    s.data.resize(8 * n);
    auto insn = [&](uint8_t code, uint8_t regs, int16_t off, int32_t imm) {
        std::vector<uint8_t> v(8);
        v[0] = code;
        v[1] = regs;
        std::memcpy(&v[2], &off, 2);
        std::memcpy(&v[4], &imm, 4);
        return v;
    };
    const size_t at = n ? g() % n : 0;
    switch (g() % 10) {
    case 9: {  // a 64-bit or 32-bit DIV or MOD of a constant the verifier knows (INT64_MIN, -1,
               // 0; in a register, or a csd_param the rewrite folds) by -1, 0 or such a register
        const uint8_t d = static_cast<uint8_t>(g() % 10), r = static_cast<uint8_t>(g() % 10);
        std::vector<uint8_t> v;
        auto add = [&v](const std::vector<uint8_t> &i) { v.insert(v.end(), i.begin(), i.end()); };
        auto constant = [&](uint8_t reg) {
            switch (g() % 4) {
            case 0: add(insn(0x18, reg, 0, 0)), add(insn(0, 0, 0, INT32_MIN)); break;  // INT64_MIN
            case 1: add(insn(0xb7, reg, 0, -1)); break;
            case 2: add(insn(0xb7, reg, 0, 0)); break;
            default: add(insn(0xb7, 1, 0, static_cast<int32_t>(g() % 4))), add(insn(0x85, 0x10, 0, -1)),
                     add(insn(0xbf, static_cast<uint8_t>(0 << 4 | reg), 0, 0));  // reg = csd_param(0..3)
            }
        };
        constant(d);
        const bool wide = g() % 4 != 0, by_reg = g() % 2;
        if (by_reg) constant(r);
        static const int32_t kDivisors[] = {-1, -1, 0, 1, INT32_MIN};
        add(insn(static_cast<uint8_t>((g() % 2 ? 0x30 : 0x90) | (wide ? 0x07 : 0x04) | (by_reg ? 0x08 : 0)),
                 static_cast<uint8_t>(r << 4 | d), 0, by_reg ? 0 : pick(g, kDivisors)));
        s.data.insert(s.data.begin() + 8 * at, v.begin(), v.end());
        break;
    }
    case 0:
        if (n) s.data[8 * at] = pick(g, kOpcodes);
        break;
    case 1:
        if (n) s.data[8 * at + 1] = static_cast<uint8_t>(g() % 11 | (g() % 11) << 4);
        break;
    case 2:
        if (n) {
            const int16_t off = static_cast<int16_t>(g() % 2 ? static_cast<int>(g() % 8) - 2 : static_cast<int>(g()));
            std::memcpy(&s.data[8 * at + 2], &off, 2);
        }
        break;
    case 3:
        if (n) {
            const int32_t imm = g() % 2 ? static_cast<int32_t>(g() % 70) - 3 : static_cast<int32_t>(g());
            std::memcpy(&s.data[8 * at + 4], &imm, 4);
        }
        break;
    case 4: {  // a call as clang writes it
        const auto v = insn(0x85, 0x10, 0, -1);
        s.data.insert(s.data.begin() + 8 * at, v.begin(), v.end());
        break;
    }
    case 5: {  // a 64-bit load, its second half zero or not
        auto v = insn(0x18, static_cast<uint8_t>(g() % 10), 0, static_cast<int32_t>(g()));
        const auto hi = insn(g() % 3 ? 0 : pick(g, kOpcodes), 0, 0, static_cast<int32_t>(g()));
        v.insert(v.end(), hi.begin(), hi.end());
        s.data.insert(s.data.begin() + 8 * at, v.begin(), v.end());
        break;
    }
    case 6:
        if (n) s.data.erase(s.data.begin() + 8 * at, s.data.begin() + 8 * at + 8);
        break;
    case 7: {
        const auto v = insn(g() % 2 ? 0x95 : pick(g, kOpcodes), static_cast<uint8_t>(g() % 10), 0, 0);
        s.data.insert(s.data.begin() + 8 * at, v.begin(), v.end());
        break;
    }
    default:  // r0 = something, then exit, at the end
        if (n) {
            const auto v = insn(0x95, 0, 0, 0);
            std::copy(v.begin(), v.end(), s.data.end() - 8);
        }
        break;
    }
}

void mutate_section_fields(Desc &d, ElfSection &s, std::mt19937_64 &g)
{
    const uint32_t nsec = static_cast<uint32_t>(d.img.sections.size() + 2);
    switch (g() % 9) {
    case 0: s.name = pick(g, kNames); break;
    case 1: s.type = pick(g, kTypes); break;
    case 2: s.flags = pick(g, kFlags); break;
    case 3: s.link = g() % 4 ? static_cast<uint32_t>(g() % nsec) : static_cast<uint32_t>(g()); break;
    case 4: s.info = g() % 4 ? static_cast<uint32_t>(g() % nsec) : static_cast<uint32_t>(g()); break;
    case 5: s.entsize = pick(g, kEntsizes); break;
    case 6: s.name_offset = g() % 2 ? pick(g, kOverrides) : static_cast<int64_t>(g() % 64); break;
    case 7: s.offset = pick(g, kOverrides); break;
    default: s.size = g() % 2 ? pick(g, kOverrides) : static_cast<int64_t>(8 * (g() % 16)); break;
    }
}

void mutate(Desc &d, std::mt19937_64 &g)
{
    auto &secs = d.img.sections;
    const unsigned what = g() % 20;
    if (secs.empty() || what == 0) {  // add a section: a clone, or an empty one of some kind
        if (secs.size() >= kMaxSections) return;
        ElfSection s;
        if (!secs.empty() && g() % 2) {
            s = secs[g() % secs.size()];
        } else {
            s.name = pick(g, kNames);
            s.type = pick(g, kTypes);
            s.flags = pick(g, kFlags);
            s.entsize = pick(g, kEntsizes);
        }
        if (g() % 2) s.name = "csd";
        secs.insert(secs.begin() + (secs.empty() ? 0 : g() % (secs.size() + 1)), s);
        return;
    }
    ElfSection &s = secs[g() % secs.size()];
    switch (what) {
    case 1: secs.erase(secs.begin() + g() % secs.size()); return;
    case 2: std::swap(secs[g() % secs.size()], secs[g() % secs.size()]); return;
    case 3:
    case 4:
    case 5: mutate_section_fields(d, s, g); return;
    case 6: {  // the header
        switch (g() % 6) {
        case 0: d.img.osabi = g() % 4 ? 0 : static_cast<uint8_t>(g()); break;
        case 1: d.img.type = g() % 2 ? ET_REL : static_cast<uint16_t>(g() % 5); break;
        case 2: d.img.machine = g() % 2 ? EM_BPF : static_cast<uint16_t>(g()); break;
        case 3: d.img.shstrndx = g() % 2 ? -1 : static_cast<int64_t>(g() % (secs.size() + 2)); break;
        case 4: d.img.shnum = g() % 2 ? -1 : static_cast<int64_t>(g() % (secs.size() + 3)); break;
        default: d.img.names = static_cast<uint32_t>(g() % (secs.size() + 1)); break;
        }
        return;
    }
    case 7: d.record_size = static_cast<uint16_t>(g() % 2 ? 1 + g() % 64 : 1 + g() % CSD_MAX_RECORD_SIZE); return;
    case 8: {
        d.records.resize(g() % 2 ? 64 : g() % 512);
        if (!d.records.empty()) d.records.resize(LLVMFuzzerMutate(d.records.data(), d.records.size(), d.records.size()));
        return;
    }
    case 9: {  // raw bytes of a section
        if (s.data.empty()) s.data.resize(8);
        const size_t max = s.data.size() + 64;
        s.data.resize(max);
        s.data.resize(LLVMFuzzerMutate(s.data.data(), max - 64, max));
        return;
    }
    default:
        break;
    }
    // by the kind of section: symbols, relocations, strings or code
    if (s.type == SHT_SYMTAB || s.type == SHT_DYNSYM) {
        mutate_symbol(d, s, g);
    } else if (s.type == SHT_REL || s.type == SHT_RELA) {
        mutate_relocation(d, s, g);
    } else if (s.type == SHT_STRTAB) {
        mutate_strings(s, g);
    } else if (s.flags & SHF_EXECINSTR || s.name == "csd") {
        mutate_code(s, g);
    } else {
        mutate_section_fields(d, s, g);
    }
}

// --- running ----------------------------------------------------------------------------

// With FUZZ_ELF_STATS set: how many images were accepted, printed at exit.
uint64_t g_inputs, g_accepted, g_jit, g_rewritten, g_batched;
void print_stats()
{
    fprintf(stderr, "fuzz_elf: %lu inputs, %lu accepted, %lu JIT-compiled, %lu Executes rewritten (%lu batched)\n",
            g_inputs, g_accepted, g_jit, g_rewritten, g_batched);
}

// Records against guard pages: kRegion bytes between two inaccessible pages. kRecords
// records as loaded; kRewritten (a batch and one more) through the rewrite for an Execute.
// The Execute's params: csd_param(0..3), folded into constants by the rewrite (a dividend
// INT64_MIN, divisors -1 and 0 among them).
constexpr uint64_t kParams[4] = {7, ~0ull, 1ull << 63, 0};
constexpr size_t kPage = 4096, kRecords = 2, kRewritten = csd::core::kBpfMaxBatch + 1;
constexpr size_t kRegion = (kRewritten * CSD_MAX_RECORD_SIZE + kPage - 1) / kPage * kPage;
uint8_t *g_region;

// How many sections of the image are named csd, read here on its own (from section 1:
// section 0 is the null section, whatever its name offset finds).
int sections_named_csd(const std::vector<uint8_t> &img)
{
    Elf64_Ehdr eh;
    std::memcpy(&eh, img.data(), sizeof eh);
    auto shdr = [&](size_t i, Elf64_Shdr *sh) {
        const uint64_t at = eh.e_shoff + i * sizeof(Elf64_Shdr);
        if (at > img.size() || img.size() - at < sizeof(Elf64_Shdr)) return false;
        std::memcpy(sh, &img[at], sizeof *sh);
        return true;
    };
    Elf64_Shdr names;
    if (!shdr(eh.e_shstrndx, &names)) abort();
    int n = 0;
    for (size_t i = 1; i < eh.e_shnum; i++) {
        Elf64_Shdr sh;
        if (!shdr(i, &sh)) abort();
        if (sh.sh_name < names.sh_size && names.sh_size - sh.sh_name >= 4 &&
            std::memcmp(&img[names.sh_offset + sh.sh_name], "csd", 4) == 0) {
            n++;
        }
    }
    return n;
}

// One Execute in mode over count records at rec (init: their bytes): status, DW0, DW1,
// the output and the records as the program left them.
std::vector<uint8_t> run_mode(const csd::core::BpfProgram &p, uint8_t *rec, const std::vector<uint8_t> &init,
                              uint32_t count, uint32_t mode, bool interpret)
{
    const uint32_t rs = p.record_size();
    std::memcpy(rec, init.data(), uint64_t{rs} * count);
    std::vector<uint8_t> out(mode == CSD_BPF_MAP ? 8 * count : mode == CSD_BPF_FILTER ? rs * count : 0, 0xA5);
    const csd_span ranges[2] = {{rec, uint64_t{rs} * count}, {out.data(), out.size()}};
    const uint32_t hdr[4] = {count, mode, 4, 0};
    uint8_t params[16 + sizeof kParams];
    std::memcpy(params, hdr, 16);
    std::memcpy(params + 16, kParams, sizeof kParams);
    const int cancel = 0;
    const csd_program_call call{ranges, 2, params, sizeof params, &cancel};
    const csd_program_result r = p.run(call, interpret);
    if (mode == CSD_BPF_MAP && r.status != 0) {
        fprintf(stderr, "fuzz_elf: map run failed with status %#x\n", r.status);
        abort();
    }
    const uint32_t head[3] = {r.status, r.dw0, r.dw1};
    out.insert(out.end(), reinterpret_cast<const uint8_t *>(head), reinterpret_cast<const uint8_t *>(head + 3));
    out.insert(out.end(), rec, rec + uint64_t{rs} * count);
    return out;
}

}  // namespace

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed)
{
    std::mt19937_64 g(seed);
    Desc d = decode(data, size);
    const unsigned rounds = 1 + g() % 3;
    for (unsigned i = 0; i < rounds; i++) mutate(d, g);
    std::vector<uint8_t> v = encode(d);
    if (v.size() > max_size) v.resize(max_size);
    std::memcpy(data, v.data(), v.size());
    return v.size();
}

extern "C" size_t LLVMFuzzerCustomCrossOver(const uint8_t *a, size_t a_size, const uint8_t *b, size_t b_size,
                                            uint8_t *out, size_t max_out, unsigned int seed)
{
    std::mt19937_64 g(seed);
    Desc x = decode(a, a_size), y = decode(b, b_size);
    if (!y.img.sections.empty() && x.img.sections.size() < kMaxSections) {  // a section of b into a
        const ElfSection &s = y.img.sections[g() % y.img.sections.size()];
        x.img.sections.insert(x.img.sections.begin() + g() % (x.img.sections.size() + 1), s);
    }
    std::vector<uint8_t> v = encode(x);
    if (v.size() > max_out) v.resize(max_out);
    std::memcpy(out, v.data(), v.size());
    return v.size();
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!g_region) {
        auto *m = static_cast<uint8_t *>(mmap(nullptr, kRegion + 2 * kPage, PROT_READ | PROT_WRITE,
                                              MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
        if (m == MAP_FAILED) abort();
        mprotect(m, kPage, PROT_NONE);
        mprotect(m + kPage + kRegion, kPage, PROT_NONE);
        g_region = m + kPage;
        if (getenv("FUZZ_ELF_STATS")) atexit(print_stats);
    }
    g_inputs++;
    const Desc d = decode(data, size);
    const std::vector<uint8_t> img = d.img.bytes();
    if (const char *dump = getenv("FUZZ_ELF_DUMP")) {  // the image an input describes, for a look at a finding
        if (FILE *f = fopen(dump, "wb")) {
            fwrite(img.data(), 1, img.size(), f);
            fclose(f);
        }
    }
    std::unique_ptr<csd::core::BpfProgram> p;
    uint32_t fault;
    std::string why;
    if (csd::core::BpfProgram::load(img.data(), img.size(), d.record_size, &p, &fault, &why) != 0) return 0;
    g_accepted++;
    g_jit += p->jit_compiled();
    if (sections_named_csd(img) != 1) {
        fprintf(stderr, "fuzz_elf: accepted an image with %d sections named csd\n", sections_named_csd(img));
        abort();
    }
    // The records: the input's record bytes, repeated; flush against the low guard page,
    // then against the high one. JIT (where it compiled) and interpreter must agree, in map
    // mode over kRecords records; then the program rewritten for the Execute (bpf_specialise:
    // folded, branch-free, batched), in every mode over kRewritten records.
    const size_t bytes = size_t{d.record_size} * kRewritten;
    std::vector<uint8_t> init(bytes);
    for (size_t i = 0; i < bytes; i++) init[i] = d.records.empty() ? static_cast<uint8_t>(i) : d.records[i % d.records.size()];
    for (const bool rewritten : {false, true}) {
        const uint32_t count = rewritten ? kRewritten : kRecords;
        p->set_specialise_min_records(rewritten ? 1 : UINT32_MAX);
        p->set_rewrite_budget(false);  // every rewrite, however short the Executes
        for (uint32_t mode = rewritten ? CSD_BPF_FILTER : CSD_BPF_MAP; mode <= (rewritten ? CSD_BPF_REDUCE : CSD_BPF_MAP); mode++) {
            if (rewritten) {
                const uint32_t hdr[4] = {count, mode, 4, 0};  // as run_mode's
                uint8_t params[16 + sizeof kParams];
                std::memcpy(params, hdr, 16);
                std::memcpy(params + 16, kParams, sizeof kParams);
                // a whole call, its ranges as run_mode's, so that check's reading of it runs first
                std::vector<uint8_t> out(mode == CSD_BPF_MAP ? 8 * count : mode == CSD_BPF_FILTER ? d.record_size * count : 0);
                const csd_span ranges[2] = {{g_region, uint64_t{d.record_size} * count}, {out.data(), out.size()}};
                const csd_program_call call{ranges, 2, params, sizeof params, nullptr};
                const uint32_t batch = p->specialised_batch(call);
                g_rewritten += batch >= 1;
                g_batched += batch > 1;
            }
            for (uint8_t *rec : {g_region, g_region + kRegion - size_t{d.record_size} * count}) {
                const auto interpreted = run_mode(*p, rec, init, count, mode, true);
                if (p->jit_compiled() && run_mode(*p, rec, init, count, mode, false) != interpreted) {
                    fprintf(stderr, "fuzz_elf: the JIT%s and the interpreter disagree in mode %u\n",
                            rewritten ? " (rewritten)" : "", mode);
                    abort();
                }
            }
        }
    }
    return 0;
}
