// SPDX-License-Identifier: MIT
// bpf_program.cc - eBPF programs on DPDK's librte_bpf: its ELF loader resolves the two
// helpers by name, its verifier bounds every memory access by the record size and
// refuses loops, and its x86-64 JIT compiles the result. No EAL is needed.
#include "bpf_program.h"

#include <elf.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

#ifdef CSD_HAVE_BPF
#include <rte_bpf.h>
#include <rte_errno.h>
#include <rte_log.h>
#endif

namespace csd::core {

namespace {

// What the helpers see while a record is processed (one Execute per thread at a time).
thread_local uint64_t tl_params[CSD_BPF_MAX_PARAMS];
thread_local uint32_t tl_nr_params = 0;
thread_local uint64_t tl_index = 0;

// The helpers, with the five-argument signature DPDK calls external functions with.
[[maybe_unused]] uint64_t helper_param(uint64_t i, uint64_t, uint64_t, uint64_t, uint64_t)
{
    return static_cast<uint32_t>(i) < tl_nr_params ? tl_params[static_cast<uint32_t>(i)] : 0;
}
[[maybe_unused]] uint64_t helper_index(uint64_t, uint64_t, uint64_t, uint64_t, uint64_t) { return tl_index; }

constexpr uint64_t kBatch = 4096;  // records between cancellation checks (fewer for long programs)

// Bounds-checked view of a section header.
[[maybe_unused]] bool section(const uint8_t *img, size_t size, const Elf64_Ehdr &eh, unsigned i, Elf64_Shdr *out)
{
    const uint64_t off = eh.e_shoff + uint64_t{i} * eh.e_shentsize;
    if (i >= eh.e_shnum || off > size || size - off < sizeof(Elf64_Shdr)) return false;
    std::memcpy(out, img + off, sizeof(*out));
    return out->sh_type == SHT_NOBITS || (out->sh_offset <= size && out->sh_size <= size - out->sh_offset);
}

// A NUL-terminated string at off in a string table section, or nullptr.
[[maybe_unused]] const char *string_at(const uint8_t *img, const Elf64_Shdr &strtab, uint64_t off)
{
    if (strtab.sh_type != SHT_STRTAB || off >= strtab.sh_size) return nullptr;
    const char *s = reinterpret_cast<const char *>(img + strtab.sh_offset + off);
    return std::memchr(s, 0, strtab.sh_size - off) ? s : nullptr;
}

// Instructions DPDK's verifier accepts but then mishandles (found by fuzz_program): a
// shift by an immediate of the register's width or more (its JIT writes broken code), a
// jump just past the last instruction (its verifier reads past the program). The Linux
// verifier refuses both too. Returns the index of the first one, or -1.
[[maybe_unused]] long unsafe_instruction(const uint8_t *code, uint64_t n, std::string *why)
{
    for (uint64_t i = 0; i < n; i++) {
        const uint8_t op = code[8 * i];
        int32_t imm;
        std::memcpy(&imm, code + 8 * i + 4, 4);
        const uint8_t cls = op & 0x07, alu = op & 0xF0, src = op & 0x08;
        if ((cls == 0x05 || cls == 0x06) && alu != 0x80 && alu != 0x90) {  // jumps (not call, exit)
            int16_t off;
            std::memcpy(&off, code + 8 * i + 2, 2);
            const int64_t target = static_cast<int64_t>(i) + 1 + off;
            if (target < 0 || target >= static_cast<int64_t>(n)) {
                *why = "a jump to instruction " + std::to_string(target) + ", outside the program";
                return static_cast<long>(i);
            }
        }
        const bool shift = alu == 0x60 || alu == 0x70 || alu == 0xC0;  // LSH, RSH, ARSH
        if ((cls == 0x07 || cls == 0x04) && shift && src == 0) {
            const int64_t width = cls == 0x07 ? 64 : 32;
            if (imm < 0 || imm >= width) {
                *why = "shift by " + std::to_string(imm) + " of a " + std::to_string(width) + "-bit register";
                return static_cast<long>(i);
            }
        }
    }
    return -1;
}

// Instructions DPDK's x86-64 JIT compiles wrongly although they verify and interpret
// fine (found by fuzz_program): JSET ("if dst & src goto") can make the JIT's code jump
// into the void. Programs holding one run in the interpreter instead.
[[maybe_unused]] bool jit_unsafe(const uint8_t *code, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++) {
        const uint8_t op = code[8 * i];
        if ((op & 0x07) == 0x05 && (op & 0xF0) == 0x40) return true;  // BPF_JMP | BPF_JSET
    }
    return false;
}

// Checks what the spec asks of the image before DPDK sees it: an ELF64 little-endian
// relocatable object for EM_BPF, a section "csd" of at most CSD_BPF_MAX_INSNS
// instructions, and one function symbol in it (its name names the program). *code and
// *insns give the instructions.
[[maybe_unused]] bool check_elf(const uint8_t *img, size_t size, std::string *name, std::string *why,
                                const uint8_t **code_out, uint64_t *insns)
{
    Elf64_Ehdr eh;
    if (size < sizeof(eh)) return *why = "image shorter than an ELF header", false;
    std::memcpy(&eh, img, sizeof(eh));
    if (std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0) return *why = "not an ELF file", false;
    if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB) {
        return *why = "not a 64-bit little-endian ELF", false;
    }
    if (eh.e_machine != EM_BPF) return *why = "ELF machine " + std::to_string(eh.e_machine) + ", not BPF (247)", false;
    if (eh.e_type != ET_REL) return *why = "not a relocatable object (clang -c)", false;
    if (eh.e_shentsize != sizeof(Elf64_Shdr)) return *why = "bad section header size", false;
    Elf64_Shdr names;
    if (!section(img, size, eh, eh.e_shstrndx, &names)) return *why = "bad section name table", false;
    int code = -1;
    for (unsigned i = 0; i < eh.e_shnum; i++) {
        Elf64_Shdr sh;
        if (!section(img, size, eh, i, &sh)) return *why = "section header out of the image", false;
        const char *n = string_at(img, names, sh.sh_name);
        if (n && std::strcmp(n, CSD_BPF_SECTION) == 0) {
            code = static_cast<int>(i);
            if (sh.sh_type != SHT_PROGBITS || sh.sh_size == 0 || sh.sh_size % 8 || sh.sh_size / 8 > CSD_BPF_MAX_INSNS) {
                return *why = "section csd holds " + std::to_string(sh.sh_size / 8) + " instructions (1.." +
                              std::to_string(CSD_BPF_MAX_INSNS) + ")", false;
            }
            *code_out = img + sh.sh_offset;
            *insns = sh.sh_size / 8;
        }
    }
    if (code < 0) return *why = "no section named csd (put the entry function there)", false;
    // What DPDK's loader and verifier do not check and then read or write past (found by
    // fuzz_program): a program that can run off its end, and relocations outside it.
    const uint64_t code_bytes = *insns * 8;
    const uint8_t last = (*code_out)[code_bytes - 8];
    if (last != 0x95 && last != 0x05) return *why = "the last instruction is neither exit nor a jump", false;
    for (unsigned i = 0; i < eh.e_shnum; i++) {
        Elf64_Shdr rel;
        if (!section(img, size, eh, i, &rel) || (rel.sh_type != SHT_REL && rel.sh_type != SHT_RELA) ||
            rel.sh_info != static_cast<unsigned>(code)) {
            continue;
        }
        const uint64_t entsize = rel.sh_type == SHT_REL ? sizeof(Elf64_Rel) : sizeof(Elf64_Rela);
        if (rel.sh_entsize != entsize) return *why = "bad relocation table", false;
        for (uint64_t k = 0; k < rel.sh_size / entsize; k++) {
            Elf64_Rel r;
            std::memcpy(&r, img + rel.sh_offset + k * entsize, sizeof(r));
            if (r.r_offset % 8 || r.r_offset >= code_bytes) return *why = "a relocation outside section csd", false;
        }
    }
    for (unsigned i = 0; i < eh.e_shnum; i++) {
        Elf64_Shdr sh, strtab;
        if (!section(img, size, eh, i, &sh) || sh.sh_type != SHT_SYMTAB) continue;
        if (sh.sh_entsize != sizeof(Elf64_Sym) || !section(img, size, eh, sh.sh_link, &strtab)) {
            return *why = "bad symbol table", false;
        }
        for (uint64_t k = 0; k < sh.sh_size / sizeof(Elf64_Sym); k++) {
            Elf64_Sym sym;
            std::memcpy(&sym, img + sh.sh_offset + k * sizeof(sym), sizeof(sym));
            if (sym.st_shndx != code || ELF64_ST_TYPE(sym.st_info) != STT_FUNC) continue;
            const char *n = string_at(img, strtab, sym.st_name);
            if (!n) return *why = "bad symbol name", false;
            *name = std::string(n).substr(0, CSD_BPF_ENTRY_NAME_LEN);
            return true;
        }
    }
    return *why = "no function symbol in section csd", false;
}

// The first "pc: N" (or "pc:N") DPDK's verifier wrote, or CSD_IMAGE_FAULT_NONE.
[[maybe_unused]] uint32_t fault_pc(const std::string &log)
{
    const size_t at = log.find("pc:");
    if (at == std::string::npos) return CSD_IMAGE_FAULT_NONE;
    return static_cast<uint32_t>(std::strtoul(log.c_str() + at + 3, nullptr, 10));
}

// The verifier's reason: its log without the loader's own closing line.
[[maybe_unused]] std::string reason(const std::string &log)
{
    std::string r;
    size_t start = 0;
    while (start < log.size()) {
        size_t end = log.find('\n', start);
        if (end == std::string::npos) end = log.size();
        const std::string line = log.substr(start, end - start);
        if (!line.empty() && line.find("rte_bpf_elf_load(") == std::string::npos) r += (r.empty() ? "" : "; ") + line;
        start = end + 1;
    }
    return r.empty() ? "rejected by the verifier" : r;
}

[[maybe_unused]] std::mutex load_mu;  // DPDK's log stream is one global

}  // namespace

bool BpfProgram::supported()
{
#ifdef CSD_HAVE_BPF
    return true;
#else
    return false;
#endif
}

#ifdef CSD_HAVE_BPF
uint16_t BpfProgram::load(const uint8_t *image, size_t size, uint32_t record_size, std::unique_ptr<BpfProgram> *out,
                          uint32_t *fault, std::string *why)
{
    *fault = CSD_IMAGE_FAULT_NONE;
    std::unique_ptr<BpfProgram> p(new BpfProgram);
    p->record_size_ = record_size;
    const uint8_t *code = nullptr;
    uint64_t insns = 0;
    if (!check_elf(image, size, &p->name_, why, &code, &insns)) {
        return CSD_STATUS_INVALID_PROGRAM_IMAGE | CSD_STATUS_DNR;
    }
    const long bad = unsafe_instruction(code, insns, why);
    if (bad >= 0) {
        *fault = static_cast<uint32_t>(bad);
        return CSD_STATUS_INVALID_PROGRAM_IMAGE | CSD_STATUS_DNR;
    }
    p->records_per_check_ = static_cast<uint32_t>(std::clamp<uint64_t>(kCancelInstructions / insns, 1, kBatch));
    // DPDK's loader reads a file: the image goes through an anonymous memory file.
    const int fd = memfd_create("csd-program", MFD_CLOEXEC);
    if (fd < 0) return CSD_STATUS_INTERNAL_ERROR;
    size_t done = 0;
    while (done < size) {
        const ssize_t n = write(fd, image + done, size - done);
        if (n <= 0) {
            close(fd);
            return CSD_STATUS_INTERNAL_ERROR;
        }
        done += static_cast<size_t>(n);
    }
    char path[64];
    std::snprintf(path, sizeof path, "/proc/self/fd/%d", fd);

    rte_bpf_xsym xsym[2] = {};
    xsym[0].name = "csd_param";
    xsym[0].type = RTE_BPF_XTYPE_FUNC;
    xsym[0].func.val = helper_param;
    xsym[0].func.nb_args = 1;
    xsym[0].func.args[0] = {RTE_BPF_ARG_RAW, sizeof(uint32_t), 0};
    xsym[0].func.ret = {RTE_BPF_ARG_RAW, sizeof(uint64_t), 0};
    xsym[1].name = "csd_index";
    xsym[1].type = RTE_BPF_XTYPE_FUNC;
    xsym[1].func.val = helper_index;
    xsym[1].func.nb_args = 0;
    xsym[1].func.ret = {RTE_BPF_ARG_RAW, sizeof(uint64_t), 0};
    rte_bpf_prm prm = {};
    prm.xsym = xsym;
    prm.nb_xsym = 2;
    prm.prog_arg.type = RTE_BPF_ARG_PTR;
    prm.prog_arg.size = record_size;

    std::string log;
    {
        std::lock_guard<std::mutex> g(load_mu);
        char *buf = nullptr;
        size_t len = 0;
        FILE *mem = open_memstream(&buf, &len);
        if (mem) rte_openlog_stream(mem);
        p->bpf_ = rte_bpf_elf_load(&prm, path, CSD_BPF_SECTION);
        if (mem) {
            rte_openlog_stream(nullptr);
            std::fclose(mem);
            log.assign(buf ? buf : "", len);
            std::free(buf);
        }
    }
    close(fd);
    if (!p->bpf_) {
        *fault = fault_pc(log);
        *why = reason(log);
        return CSD_STATUS_INVALID_PROGRAM_IMAGE | CSD_STATUS_DNR;
    }
    rte_bpf_jit jit = {};
    if (!jit_unsafe(code, insns) && rte_bpf_get_jit(p->bpf_, &jit) == 0 && jit.func) {
        p->jit_ = jit.func;
    }
    *out = std::move(p);
    return CSD_STATUS_SUCCESS;
}

BpfProgram::~BpfProgram()
{
    if (bpf_) rte_bpf_destroy(bpf_);
}
#else
// Built without DPDK: decode refuses the eBPF program type (supported() is false).
uint16_t BpfProgram::load(const uint8_t *, size_t, uint32_t, std::unique_ptr<BpfProgram> *, uint32_t *fault,
                          std::string *why)
{
    *fault = CSD_IMAGE_FAULT_NONE;
    *why = "this build has no eBPF runtime (DPDK librte_bpf)";
    return CSD_STATUS_INVALID_FIELD | CSD_STATUS_DNR;
}

BpfProgram::~BpfProgram() = default;

static uint64_t rte_bpf_exec(const rte_bpf *, void *) { return 0; }  // never reached: nothing loads
#endif

ExecResult BpfProgram::check(const ProgramCall &call, ProgramWork *work) const
{
    csd_bpf_params h;
    if (call.nr_ranges != 2 || call.param_len < sizeof(h)) return fail(CSD_STATUS_INVALID_PARAMETERS);
    std::memcpy(&h, call.params, sizeof(h));
    if (h.mode > CSD_BPF_REDUCE || h.reserved != 0 || h.nr_params > CSD_BPF_MAX_PARAMS ||
        call.param_len != sizeof(h) + 8 * h.nr_params) {
        return fail(CSD_STATUS_INVALID_PARAMETERS);
    }
    if (call.ranges[0].len < bytes_of(h.record_count, record_size_)) return fail(CSD_STATUS_INVALID_PARAMETERS);
    const uint64_t map_bytes = uint64_t{h.record_count} * 8;
    if (h.mode == CSD_BPF_MAP && call.ranges[1].len < map_bytes) {
        return fail(CSD_STATUS_OUTPUT_OVERFLOW, map_bytes > UINT32_MAX ? UINT32_MAX : static_cast<uint32_t>(map_bytes));
    }
    if (work) work->records = h.record_count;
    return ok();
}

ExecResult BpfProgram::run(const ProgramCall &call, bool interpret) const
{
    if (const ExecResult r = check(call, nullptr); r.status) return r;
    csd_bpf_params h;
    std::memcpy(&h, call.params, sizeof(h));
    const Span &in = call.ranges[0], &out = call.ranges[1];
    const uint64_t map_bytes = uint64_t{h.record_count} * 8;
    const uint32_t map_dw0 = map_bytes > UINT32_MAX ? UINT32_MAX : static_cast<uint32_t>(map_bytes);
    std::memcpy(tl_params, call.params + sizeof(h), 8 * h.nr_params);
    tl_nr_params = h.nr_params;
    uint64_t written = 0, sum = 0;
    uint32_t hits = 0;
    // One loop per mode and engine, so the per-record path has no branches of its own.
    auto records = [&](auto call_program) -> bool {
        const uint32_t batch = records_per_check_;
        for (uint32_t first = 0; first < h.record_count; first += batch) {
            if (cancelled(call)) return false;
            const uint32_t last = h.record_count - first < batch ? h.record_count : first + batch;
            uint8_t *rec = in.data + uint64_t{first} * record_size_;
            switch (h.mode) {
            case CSD_BPF_FILTER:
                for (uint32_t i = first; i < last; i++, rec += record_size_) {
                    tl_index = i;
                    if (!call_program(rec)) continue;
                    hits++;
                    if (written + record_size_ <= out.len) std::memmove(out.data + written, rec, record_size_);
                    written += record_size_;
                }
                break;
            case CSD_BPF_MAP:
                for (uint32_t i = first; i < last; i++, rec += record_size_) {
                    tl_index = i;
                    const uint64_t r = call_program(rec);
                    std::memcpy(out.data + uint64_t{i} * 8, &r, 8);
                }
                break;
            default:
                for (uint32_t i = first; i < last; i++, rec += record_size_) {
                    tl_index = i;
                    sum += call_program(rec);  // wraps, as the spec says
                }
                break;
            }
        }
        return true;
    };
    const bool done = (jit_ && !interpret) ? records([f = jit_](uint8_t *rec) { return f(rec); })
                                           : records([b = bpf_](uint8_t *rec) { return rte_bpf_exec(b, rec); });
    if (!done) return fail(CSD_STATUS_ABORT_REQUESTED);
    switch (h.mode) {
    case CSD_BPF_FILTER:
        if (written > out.len || written > UINT32_MAX) {
            return fail(CSD_STATUS_OUTPUT_OVERFLOW, written > UINT32_MAX ? UINT32_MAX : static_cast<uint32_t>(written), hits);
        }
        return ok(static_cast<uint32_t>(written), hits);
    case CSD_BPF_MAP:
        return ok(map_dw0);
    default:
        return ok(static_cast<uint32_t>(sum), static_cast<uint32_t>(sum >> 32));
    }
}

}  // namespace csd::core
