// SPDX-License-Identifier: MIT
// elf_writer.h - writes ELF64 little-endian images section by section, for the tests and
// the ELF fuzzer: a clang-like eBPF object (section csd, its relocation table, symbols,
// strings) that tests can then bend in any one way (a second csd section, a symbol in
// another section, a relocation somewhere else, a name outside its table...).
#pragma once

#include <elf.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

namespace csd::test {

// One section as the writer lays it out. The -1 fields are computed: where the writer put
// the name in the names table, where it put the data and its length.
struct ElfSection {
    std::string name;
    uint32_t type = SHT_PROGBITS;
    uint64_t flags = 0;
    uint32_t link = 0, info = 0;
    uint64_t entsize = 0, align = 8;
    std::vector<uint8_t> data;
    int64_t name_offset = -1, offset = -1, size = -1;
};

// An ELF relocatable object. Section i of `sections` is section i + 1 of the image (the
// writer adds the null section 0). names: the index (in the image) of the section names
// table; 0 makes the writer append one called .shstrtab. The header fields can be bent.
struct ElfImage {
    uint16_t type = ET_REL, machine = EM_BPF;
    uint8_t osabi = ELFOSABI_NONE;
    std::vector<ElfSection> sections;
    uint32_t names = 0;
    int64_t shstrndx = -1, shnum = -1;  // -1: computed

    // Index in the image of the first section called name, or 0.
    uint32_t index(const std::string &name) const
    {
        for (size_t i = 0; i < sections.size(); i++) {
            if (sections[i].name == name) return static_cast<uint32_t>(i + 1);
        }
        return 0;
    }

    // The image's bytes: header, section data (8-byte aligned), section headers.
    std::vector<uint8_t> bytes() const
    {
        std::vector<ElfSection> secs = sections;
        uint32_t names_at = names;
        if (names_at == 0) {
            ElfSection n;
            n.name = ".shstrtab";
            n.type = SHT_STRTAB;
            n.align = 1;
            secs.push_back(n);
            names_at = static_cast<uint32_t>(secs.size());
        }
        // The names table: what the chosen section already holds, then every name.
        std::vector<uint32_t> name_off(secs.size());
        if (names_at >= 1 && names_at <= secs.size()) {
            auto &tab = secs[names_at - 1].data;
            if (tab.empty()) tab.push_back(0);
            for (size_t i = 0; i < secs.size(); i++) {
                name_off[i] = static_cast<uint32_t>(tab.size());
                tab.insert(tab.end(), secs[i].name.begin(), secs[i].name.end());
                tab.push_back(0);
            }
        }
        std::vector<uint8_t> out(sizeof(Elf64_Ehdr));
        std::vector<uint64_t> at(secs.size());
        for (size_t i = 0; i < secs.size(); i++) {
            while (out.size() % 8) out.push_back(0);
            at[i] = out.size();
            out.insert(out.end(), secs[i].data.begin(), secs[i].data.end());
        }
        while (out.size() % 8) out.push_back(0);
        Elf64_Ehdr eh{};
        std::memcpy(eh.e_ident, ELFMAG, SELFMAG);
        eh.e_ident[EI_CLASS] = ELFCLASS64;
        eh.e_ident[EI_DATA] = ELFDATA2LSB;
        eh.e_ident[EI_VERSION] = EV_CURRENT;
        eh.e_ident[EI_OSABI] = osabi;
        eh.e_type = type;
        eh.e_machine = machine;
        eh.e_version = EV_CURRENT;
        eh.e_shoff = out.size();
        eh.e_ehsize = sizeof(Elf64_Ehdr);
        eh.e_shentsize = sizeof(Elf64_Shdr);
        eh.e_shnum = static_cast<uint16_t>(shnum >= 0 ? shnum : static_cast<int64_t>(secs.size() + 1));
        eh.e_shstrndx = static_cast<uint16_t>(shstrndx >= 0 ? shstrndx : names_at);
        std::memcpy(out.data(), &eh, sizeof eh);
        Elf64_Shdr null{};
        append(&out, &null, sizeof null);
        for (size_t i = 0; i < secs.size(); i++) {
            const ElfSection &s = secs[i];
            Elf64_Shdr sh{};
            sh.sh_name = static_cast<uint32_t>(s.name_offset >= 0 ? s.name_offset : name_off[i]);
            sh.sh_type = s.type;
            sh.sh_flags = s.flags;
            sh.sh_offset = s.offset >= 0 ? static_cast<uint64_t>(s.offset) : at[i];
            sh.sh_size = s.size >= 0 ? static_cast<uint64_t>(s.size) : s.data.size();
            sh.sh_link = s.link;
            sh.sh_info = s.info;
            sh.sh_addralign = s.align;
            sh.sh_entsize = s.entsize;
            append(&out, &sh, sizeof sh);
        }
        return out;
    }

    static void append(std::vector<uint8_t> *v, const void *p, size_t n)
    {
        const auto *b = static_cast<const uint8_t *>(p);
        v->insert(v->end(), b, b + n);
    }
};

// A string table's bytes, built up one string at a time.
struct ElfStrings {
    std::vector<uint8_t> data{0};
    // Appends s and returns its offset.
    uint32_t add(const std::string &s)
    {
        const uint32_t off = static_cast<uint32_t>(data.size());
        data.insert(data.end(), s.begin(), s.end());
        data.push_back(0);
        return off;
    }
};

// One symbol table entry's bytes.
inline std::vector<uint8_t> elf_symbol(uint32_t name, uint8_t bind, uint8_t type, uint16_t shndx, uint64_t value,
                                       uint64_t size)
{
    Elf64_Sym s{};
    s.st_name = name;
    s.st_info = static_cast<uint8_t>(ELF64_ST_INFO(bind, type));
    s.st_shndx = shndx;
    s.st_value = value;
    s.st_size = size;
    std::vector<uint8_t> v(sizeof s);
    std::memcpy(v.data(), &s, sizeof s);
    return v;
}

// One SHT_REL entry's bytes.
inline std::vector<uint8_t> elf_rel(uint64_t offset, uint32_t symbol, uint32_t type)
{
    Elf64_Rel r{offset, ELF64_R_INFO(symbol, type)};
    std::vector<uint8_t> v(sizeof r);
    std::memcpy(v.data(), &r, sizeof r);
    return v;
}

constexpr uint32_t kRBpf64_32 = 10;  // R_BPF_64_32: what clang writes for a call to an extern function

// An eBPF program object as clang writes one: sections 1 .strtab (section and symbol
// names, shared), 2 csd (the code), 3 .relcsd (one R_BPF_64_32 per call, against undefined
// symbols named by calls; none without calls), 4 (or 3) .symtab (null, the entry function
// in csd, the helpers). calls: (byte offset of a call instruction in code, helper name).
inline ElfImage elf_program(const std::vector<uint8_t> &code, const std::string &entry,
                            const std::vector<std::pair<uint64_t, std::string>> &calls = {})
{
    ElfImage img;
    ElfSection strtab, csd, rel, symtab;
    strtab.name = ".strtab";
    strtab.type = SHT_STRTAB;
    strtab.align = 1;
    csd.name = "csd";
    csd.flags = SHF_ALLOC | SHF_EXECINSTR;
    csd.data = code;
    rel.name = ".relcsd";
    rel.type = SHT_REL;
    rel.flags = SHF_INFO_LINK;
    rel.entsize = sizeof(Elf64_Rel);
    rel.link = 4;  // .symtab
    rel.info = 2;  // csd
    symtab.name = ".symtab";
    symtab.type = SHT_SYMTAB;
    symtab.entsize = sizeof(Elf64_Sym);
    symtab.link = 1;  // .strtab
    symtab.info = 1;  // the first global symbol
    ElfStrings names;
    auto add = [&symtab](const std::vector<uint8_t> &s) { symtab.data.insert(symtab.data.end(), s.begin(), s.end()); };
    add(elf_symbol(0, STB_LOCAL, STT_NOTYPE, SHN_UNDEF, 0, 0));
    add(elf_symbol(names.add(entry), STB_GLOBAL, STT_FUNC, 2, 0, code.size()));
    std::vector<std::string> helpers;
    for (const auto &[off, helper] : calls) {
        uint32_t sym = 0;
        for (size_t i = 0; i < helpers.size(); i++) {
            if (helpers[i] == helper) sym = static_cast<uint32_t>(i + 2);
        }
        if (sym == 0) {
            helpers.push_back(helper);
            sym = static_cast<uint32_t>(helpers.size() + 1);
            add(elf_symbol(names.add(helper), STB_GLOBAL, STT_NOTYPE, SHN_UNDEF, 0, 0));
        }
        const auto r = elf_rel(off, sym, kRBpf64_32);
        rel.data.insert(rel.data.end(), r.begin(), r.end());
    }
    strtab.data = names.data;
    if (calls.empty()) {  // clang writes no empty relocation table
        img.sections = {strtab, csd, symtab};
        img.sections[2].link = 1;
    } else {
        img.sections = {strtab, csd, rel, symtab};
    }
    img.names = 1;  // section names go into .strtab too, as clang does
    return img;
}

// Little-endian bytes of eBPF instructions given as (opcode, dst | src << 4, off, imm).
struct BpfInsn {
    uint8_t code, regs;
    int16_t off;
    int32_t imm;
};
inline std::vector<uint8_t> bpf_code(const std::vector<BpfInsn> &insns)
{
    std::vector<uint8_t> v(8 * insns.size());
    for (size_t i = 0; i < insns.size(); i++) {
        v[8 * i] = insns[i].code;
        v[8 * i + 1] = insns[i].regs;
        std::memcpy(&v[8 * i + 2], &insns[i].off, 2);
        std::memcpy(&v[8 * i + 4], &insns[i].imm, 4);
    }
    return v;
}

}  // namespace csd::test
