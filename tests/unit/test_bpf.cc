// SPDX-License-Identifier: MIT
// Downloadable eBPF programs (spec §8) in the device core: Program Load / Unload, the
// three Execute modes against results computed here, every rejection path, the program
// table and the statistics. Images are the examples/bpf programs and tests/unit/bpf ones,
// compiled by clang for the BPF target at build time.
#include <elf.h>

#include <algorithm>
#include <fstream>
#include <functional>
#include <thread>

#include "bpf/bpf.h"
#include "bpf/specialise.h"
#include "core_fixture.h"
#include "elf_writer.h"

#ifdef CSD_HAVE_BPF
#include <rte_bpf.h>
#include <rte_version.h>
#endif

#include "nvme_cs.h"

namespace {

std::vector<uint8_t> image(const std::string &path)
{
    std::vector<uint8_t> v = read_file(path);
    EXPECT_FALSE(v.empty()) << path;
    return v;
}
std::vector<uint8_t> example(const char *name) { return image(std::string(CSD_BPF_EXAMPLES) + "/" + name + ".o"); }
std::vector<uint8_t> test_image(const char *name) { return image(std::string(CSD_BPF_TEST_IMAGES) + "/" + name + ".o"); }

struct Loaded {
    uint16_t status;
    uint32_t dw0;
    uint16_t code() const { return CSD_STATUS_CODE(status); }
};

// Skipped, with the reason, where the core has no eBPF runtime or the build no objects.
class Bpf : public CoreTest {
protected:
    void SetUp() override
    {
        CoreTest::SetUp();
        const std::string skip = ebpf_tests_skipped(core, std::string(CSD_BPF_TEST_IMAGES) + "/loop.o");
        if (!skip.empty()) GTEST_SKIP() << skip;
    }

    // One Program Load command (decode, the chunk, complete), as an embedding runs it.
    Loaded load_chunk(uint16_t slot, uint32_t size, uint32_t off, const uint8_t *chunk, uint32_t len,
                      uint32_t record_size, uint8_t type = CSD_PROGRAM_TYPE_EBPF)
    {
        csd_op op;
        Loaded r{decode(CSD_OPC_PROGRAM_LOAD, csd_program_load_cdw10(slot, type), size, off, len, record_size, &op), 0};
        if (r.status) return r;
        EXPECT_EQ(op.bytes, len);
        char why[256];
        r.status = csd_core_program_load(core, &op, chunk, &r.dw0, why, sizeof why);
        csd_core_complete(core, &op, r.status);
        return r;
    }

    // A whole image in chunks of at most `chunk` bytes.
    Loaded load(const std::vector<uint8_t> &img, uint32_t record_size, uint16_t slot = 0, uint32_t chunk = 1 << 20)
    {
        Loaded r{};
        for (uint32_t off = 0; off < img.size(); off += chunk) {
            const uint32_t n = std::min<uint32_t>(chunk, static_cast<uint32_t>(img.size()) - off);
            r = load_chunk(slot, static_cast<uint32_t>(img.size()), off, img.data() + off, n, record_size);
            if (r.status) return r;
            slot = static_cast<uint16_t>(r.dw0);
        }
        return r;
    }

    // Execute params of a downloaded program: header and u64 params.
    static std::vector<uint8_t> params(uint32_t count, uint32_t mode, std::vector<uint64_t> p)
    {
        std::vector<uint8_t> v(16 + 8 * p.size());
        const uint32_t h[4] = {count, mode, static_cast<uint32_t>(p.size()), 0};
        std::memcpy(v.data(), h, 16);
        std::memcpy(v.data() + 16, p.data(), 8 * p.size());
        return v;
    }

    ExecOut run(uint16_t slot, uint64_t in, uint64_t in_len, uint64_t out, uint64_t out_len, const std::vector<uint8_t> &p)
    {
        return exec_raw(make_descriptor(slot, {{in, in_len}, {out, out_len}}, p.data(), static_cast<uint32_t>(p.size())));
    }

    std::vector<uint8_t> caps()
    {
        std::vector<uint8_t> page(CSD_LOG_MAX_SIZE);
        uint32_t avail;
        EXPECT_EQ(csd_core_get_log(core, CSD_LOG_CAPABILITIES, 0, 0, page.data(), &avail), 0);
        return page;
    }

    // (id, type, name) of every C0h entry.
    std::vector<std::tuple<uint16_t, uint8_t, std::string>> entries()
    {
        auto page = caps();
        uint32_t n;
        std::memcpy(&n, page.data() + 28, 4);
        std::vector<std::tuple<uint16_t, uint8_t, std::string>> v;
        for (uint32_t i = 0; i < n; i++) {
            const uint8_t *e = page.data() + 64 + 32 * i;
            uint16_t id;
            std::memcpy(&id, e, 2);
            v.emplace_back(id, e[2], std::string(reinterpret_cast<const char *>(e + 8)));
        }
        return v;
    }

    uint64_t stat(int i)
    {
        std::vector<uint8_t> page(CSD_LOG_MAX_SIZE);
        uint32_t avail;
        EXPECT_EQ(csd_core_get_log(core, CSD_LOG_STATISTICS, 0, 0, page.data(), &avail), 0);
        EXPECT_EQ(avail, 4352u);
        uint64_t v;
        std::memcpy(&v, page.data() + 8 + 8 * i, 8);
        return v;
    }

    uint64_t exec_count(uint16_t id)
    {
        std::vector<uint8_t> page(CSD_LOG_MAX_SIZE);
        uint32_t avail;
        EXPECT_EQ(csd_core_get_log(core, CSD_LOG_STATISTICS, 0, 0, page.data(), &avail), 0);
        uint64_t v;
        std::memcpy(&v, page.data() + 256 + 8 * id, 8);
        return v;
    }

    // n 16-byte records {i32 key; u32 field; u64 index} with keys from -1000..999.
    std::vector<uint8_t> records(uint32_t n, uint32_t seed)
    {
        std::mt19937 g(seed);
        std::vector<uint8_t> v(16 * n);
        for (uint32_t i = 0; i < n; i++) {
            const int32_t key = static_cast<int32_t>(g() % 2000) - 1000;
            const uint32_t field = g();
            const uint64_t idx = i;
            std::memcpy(&v[16 * i], &key, 4);
            std::memcpy(&v[16 * i + 4], &field, 4);
            std::memcpy(&v[16 * i + 8], &idx, 8);
        }
        return v;
    }
};

TEST_F(Bpf, ThresholdFilterMatchesReference)
{
    const Loaded l = load(example("threshold"), 16);
    ASSERT_EQ(l.status, 0) << status_text(l.status);
    EXPECT_EQ(l.dw0, CSD_SLOT_FIRST);  // the device picked the first free slot
    const uint32_t n = 10000;
    const auto recs = records(n, 7);
    put(0, recs);
    std::vector<uint8_t> want;
    for (uint32_t i = 0; i < n; i++) {
        int32_t key;
        std::memcpy(&key, &recs[16 * i], 4);
        if (key > 250) want.insert(want.end(), recs.begin() + 16 * i, recs.begin() + 16 * (i + 1));
    }
    const auto r = run(l.dw0, 0, 16 * n, 1 << 20, 16 * n, params(n, CSD_BPF_FILTER, {250}));
    ASSERT_OK(r);
    EXPECT_EQ(r.dw0, want.size());
    EXPECT_EQ(r.dw1, want.size() / 16);
    EXPECT_EQ(get<uint8_t>(1 << 20, want.size()), want);
    EXPECT_GT(want.size(), 0u);
    EXPECT_EQ(exec_count(l.dw0), 1u);
}

TEST_F(Bpf, ChunkedLoadIntoNamedSlotAndMap)
{
    const auto img = example("project");
    const Loaded l = load(img, 16, 0x105, 100);  // chunks of 100 bytes
    ASSERT_EQ(l.status, 0) << status_text(l.status);
    EXPECT_EQ(l.dw0, 0x105u);
    const uint32_t n = 3000;
    const auto recs = records(n, 9);
    put(0, recs);
    auto r = run(0x105, 0, 16 * n, 1 << 20, 8 * n, params(n, CSD_BPF_MAP, {3}));
    ASSERT_OK(r);
    EXPECT_EQ(r.dw0, 8 * n);
    const auto out = get<uint64_t>(1 << 20, n);
    for (uint32_t i = 0; i < n; i++) {
        uint32_t field;
        std::memcpy(&field, &recs[16 * i + 4], 4);
        ASSERT_EQ(out[i], uint64_t{field} * 3 + i) << i;
    }
    // Output shorter than record_count * 8: Output Overflow with the bytes needed.
    r = run(0x105, 0, 16 * n, 1 << 20, 8 * n - 8, params(n, CSD_BPF_MAP, {3}));
    EXPECT_STATUS(r, CSD_STATUS_OUTPUT_OVERFLOW);
    EXPECT_EQ(r.dw0, 8 * n);
}

TEST_F(Bpf, HistogramReduceAndWrappingSum)
{
    const Loaded l = load(example("histogram"), 16);
    ASSERT_EQ(l.status, 0);
    const uint32_t n = 5000;
    const auto recs = records(n, 11);
    put(0, recs);
    uint64_t in_bucket = 0, sum = 0;
    for (uint32_t i = 0; i < n; i++) {
        int32_t key;
        std::memcpy(&key, &recs[16 * i], 4);
        in_bucket += key >= -100 && key < 300;
        sum += static_cast<uint64_t>(static_cast<int64_t>(key));
    }
    auto r = run(l.dw0, 0, 16 * n, 0, 0, params(n, CSD_BPF_REDUCE, {static_cast<uint64_t>(-100), 300}));
    ASSERT_OK(r);
    EXPECT_EQ(r.dw0 | uint64_t{r.dw1} << 32, in_bucket);
    r = run(l.dw0, 0, 16 * n, 0, 0, params(n, CSD_BPF_REDUCE, {0, 0, 1}));
    ASSERT_OK(r);
    EXPECT_EQ(r.dw0 | uint64_t{r.dw1} << 32, sum);  // two's complement, wrapping
}

TEST_F(Bpf, PrefixMatchOverText)
{
    const Loaded l = load(example("prefix"), 16);
    ASSERT_EQ(l.status, 0);
    const std::vector<std::string> words = {"apple", "apricot", "banana", "ap", "a", "grape", "apex", ""};
    std::vector<uint8_t> recs(16 * words.size(), 0);
    for (size_t i = 0; i < words.size(); i++) std::memcpy(&recs[16 * i], words[i].data(), words[i].size());
    put(0, recs);
    const uint64_t ap = 'a' | 'p' << 8;
    const auto r = run(l.dw0, 0, recs.size(), 4096, recs.size(), params(static_cast<uint32_t>(words.size()), CSD_BPF_FILTER, {ap, 2}));
    ASSERT_OK(r);
    EXPECT_EQ(r.dw1, 4u);  // apple, apricot, ap, apex
    const auto out = get<uint8_t>(4096, 16 * 4);
    EXPECT_STREQ(reinterpret_cast<const char *>(&out[0]), "apple");
    EXPECT_STREQ(reinterpret_cast<const char *>(&out[48]), "apex");
}

TEST_F(Bpf, InterpreterAgreesWithJit)
{
    const Loaded l = load(example("project"), 16);
    ASSERT_EQ(l.status, 0);
    const uint32_t n = 2000;
    put(0, records(n, 13));
    ASSERT_OK(run(l.dw0, 0, 16 * n, 1 << 20, 8 * n, params(n, CSD_BPF_MAP, {7})));
    const auto jit = get<uint64_t>(1 << 20, n);
    csd_core_set_bpf_interpreted(core, 1);
    ASSERT_OK(run(l.dw0, 0, 16 * n, 2 << 20, 8 * n, params(n, CSD_BPF_MAP, {7})));
    EXPECT_EQ(get<uint64_t>(2 << 20, n), jit);
}

TEST_F(Bpf, FilterOutputOverflowReportsMatches)
{
    const Loaded l = load(example("threshold"), 16);
    const uint32_t n = 1000;
    put(0, records(n, 3));
    const auto all = run(l.dw0, 0, 16 * n, 1 << 20, 16 * n, params(n, CSD_BPF_FILTER, {static_cast<uint64_t>(-2000)}));
    ASSERT_OK(all);
    EXPECT_EQ(all.dw1, n);
    const auto r = run(l.dw0, 0, 16 * n, 1 << 20, 16 * 10, params(n, CSD_BPF_FILTER, {static_cast<uint64_t>(-2000)}));
    EXPECT_STATUS(r, CSD_STATUS_OUTPUT_OVERFLOW);
    EXPECT_EQ(r.dw1, n);
}

TEST_F(Bpf, BadExecuteParameters)
{
    const Loaded l = load(example("threshold"), 16);
    put(0, records(100, 1));
    EXPECT_STATUS(run(l.dw0, 0, 1600, 4096, 1600, params(100, 3, {})), CSD_STATUS_INVALID_PARAMETERS);  // mode
    EXPECT_STATUS(run(l.dw0, 0, 1600, 4096, 1600, params(100, 0, std::vector<uint64_t>(9))),
                  CSD_STATUS_INVALID_PARAMETERS);  // 9 params
    EXPECT_STATUS(run(l.dw0, 0, 1600, 4096, 1600, params(101, 0, {})), CSD_STATUS_INVALID_PARAMETERS);  // input short
    auto p = params(100, 0, {1});
    p.pop_back();
    EXPECT_STATUS(run(l.dw0, 0, 1600, 4096, 1600, p), CSD_STATUS_INVALID_PARAMETERS);  // length disagrees
    p = params(100, 0, {});
    p[12] = 1;  // index_base (1.3): what csd_index() answers for the first record, taken
    EXPECT_STATUS(run(l.dw0, 0, 1600, 4096, 1600, p), CSD_STATUS_SUCCESS);
    EXPECT_STATUS(exec_raw(make_descriptor(l.dw0, {{0, 0}, {4096, 16}}, p.data(), 16)), CSD_STATUS_INVALID_PARAMETERS);
}

TEST_F(Bpf, RejectedImagesLeaveTheSlotEmpty)
{
    std::vector<uint8_t> junk(512);
    for (size_t i = 0; i < junk.size(); i++) junk[i] = static_cast<uint8_t>(i * 7);
    auto wrong_machine = example("threshold");
    wrong_machine[18] = 62;  // EM_X86_64
    const std::pair<const char *, std::vector<uint8_t>> malformed[] = {
        {"not ELF", junk}, {"wrong machine", wrong_machine}, {"no csd section", test_image("no_section")},
        {"unknown helper", test_image("unknown_helper")}};
    for (const auto &[what, img] : malformed) {
        const Loaded r = load(img, 16, 0x120);
        EXPECT_EQ(r.code(), CSD_STATUS_INVALID_PROGRAM_IMAGE) << what;
        EXPECT_EQ(r.dw0, CSD_IMAGE_FAULT_NONE) << what;
    }
    Loaded r = load(test_image("loop"), 16, 0x120);
    EXPECT_EQ(r.code(), CSD_STATUS_INVALID_PROGRAM_IMAGE);
    EXPECT_NE(r.dw0, CSD_IMAGE_FAULT_NONE);  // the instruction the loop jumps from
    EXPECT_LT(r.dw0, test_image("loop").size() / 8);
    r = load(test_image("past_record"), 16, 0x120);
    EXPECT_EQ(r.code(), CSD_STATUS_INVALID_PROGRAM_IMAGE);
    EXPECT_NE(r.dw0, CSD_IMAGE_FAULT_NONE);
    EXPECT_EQ(load(test_image("past_record"), 128, 0x120).status, 0);  // reading byte 100 of a 128-byte record is fine
    EXPECT_EQ(stat(CSD_STAT_PROGRAM_LOAD_REJECTS), 6u);
    EXPECT_EQ(stat(CSD_STAT_PROGRAM_LOAD_CMDS), 7u);
    EXPECT_EQ(entries().size(), CSD_NR_DEVICE_PROGRAMS + 1u);
}

// Found by fuzz_program: DPDK's verifier let a shift by 0x800020 through and its JIT then
// wrote code that jumped into the void. The device refuses such shifts itself.
TEST_F(Bpf, ShiftByTheRegisterWidthOrMoreIsRefused)
{
    auto img = example("histogram");
    // The section's first 64-bit shift by an immediate (opcode 67h, LSH K).
    size_t at = 0;
    for (size_t i = 64; i + 8 <= img.size(); i += 8) {
        if (img[i] == 0x67) {
            at = i;
            break;
        }
    }
    ASSERT_NE(at, 0u) << "histogram.o has no LSH64 K";
    const uint32_t huge = 0x800020;
    std::memcpy(&img[at + 4], &huge, 4);
    const Loaded r = load(img, 16);
    EXPECT_EQ(r.code(), CSD_STATUS_INVALID_PROGRAM_IMAGE);
    EXPECT_NE(r.dw0, CSD_IMAGE_FAULT_NONE);
    const uint32_t width = 64;
    std::memcpy(&img[at + 4], &width, 4);
    EXPECT_EQ(load(img, 16).code(), CSD_STATUS_INVALID_PROGRAM_IMAGE);
}

// Found by fuzz_program: DPDK's JIT compiles a JSET ("if r7 & 2 goto +0") into code that
// crashes, though the verifier and the interpreter take it. Such programs are interpreted.
// Found by fuzz_program: DPDK's loader and verifier take a program that runs off the end
// of its section (and then crash or corrupt the heap), and do not check where relocations
// point. The device refuses both before DPDK sees them.
TEST_F(Bpf, ImagesDpdkWouldMisreadAreRefused)
{
    const auto img = example("histogram");
    Elf64_Ehdr eh;
    std::memcpy(&eh, img.data(), sizeof eh);
    for (unsigned i = 0; i < eh.e_shnum; i++) {
        Elf64_Shdr sh;
        const size_t at = eh.e_shoff + i * sizeof sh;
        std::memcpy(&sh, &img[at], sizeof sh);
        if (sh.sh_type == SHT_PROGBITS && sh.sh_size > 8 && sh.sh_flags & SHF_EXECINSTR) {
            auto cut = img;  // the section without its final exit
            sh.sh_size -= 8;
            std::memcpy(&cut[at], &sh, sizeof sh);
            const Loaded r = load(cut, 16);
            EXPECT_EQ(r.code(), CSD_STATUS_INVALID_PROGRAM_IMAGE);
            EXPECT_EQ(r.dw0, CSD_IMAGE_FAULT_NONE);
        }
        if (sh.sh_type == SHT_REL) {
            auto moved = img;  // its first relocation far past the code
            const uint64_t off = 0x10000;
            std::memcpy(&moved[sh.sh_offset], &off, 8);
            EXPECT_EQ(load(moved, 16).code(), CSD_STATUS_INVALID_PROGRAM_IMAGE);
        }
    }
    EXPECT_EQ(load(img, 16).status, 0);  // the untouched image still loads
}

// Found by fuzz_program: a jump to one past the last instruction crashed DPDK's verifier.
TEST_F(Bpf, JumpsOutsideTheProgramAreRefused)
{
    auto img = example("threshold");
    Elf64_Ehdr eh;
    std::memcpy(&eh, img.data(), sizeof eh);
    size_t code = 0, insns = 0;
    for (unsigned i = 0; i < eh.e_shnum; i++) {
        Elf64_Shdr sh;
        std::memcpy(&sh, &img[eh.e_shoff + i * sizeof sh], sizeof sh);
        if (sh.sh_type == SHT_PROGBITS && sh.sh_flags & SHF_EXECINSTR && sh.sh_size) {
            code = sh.sh_offset;
            insns = sh.sh_size / 8;
        }
    }
    ASSERT_GT(insns, 2u);
    // The first instruction becomes "if r0 & 0 goto <one past the end>" (or before the start).
    for (int16_t off : {static_cast<int16_t>(insns - 1), static_cast<int16_t>(-2)}) {
        auto bad = img;
        const uint8_t jump[4] = {0x45, 0x00, static_cast<uint8_t>(off & 0xFF), static_cast<uint8_t>(off >> 8)};
        std::memcpy(&bad[code], jump, 4);
        const Loaded r = load(bad, 16);
        EXPECT_EQ(r.code(), CSD_STATUS_INVALID_PROGRAM_IMAGE) << off;
        EXPECT_EQ(r.dw0, 0u) << off;  // the jump is instruction 0
    }
}

TEST_F(Bpf, JsetProgramsRunInTheInterpreter)
{
    auto img = example("histogram");
    const uint8_t mov_r1_2[8] = {0xb7, 0x01, 0, 0, 2, 0, 0, 0};  // r1 = 2, before csd_param(2)
    auto at = std::search(img.begin(), img.end(), mov_r1_2, mov_r1_2 + 8);
    ASSERT_NE(at, img.end());
    const uint8_t jset[8] = {0x45, 0x07, 0, 0, 2, 0, 0, 0};  // if r7 & 2 goto +0
    std::copy(jset, jset + 8, at);
    const Loaded l = load(img, 16);
    ASSERT_EQ(l.status, 0) << status_text(l.status);
    const uint32_t n = 1000;
    put(0, records(n, 4));
    const auto r = run(l.dw0, 0, 16 * n, 0, 0, params(n, CSD_BPF_REDUCE, {0, 100}));
    ASSERT_OK(r);
    csd_core_set_bpf_interpreted(core, 1);
    const auto interpreted = run(l.dw0, 0, 16 * n, 0, 0, params(n, CSD_BPF_REDUCE, {0, 100}));
    EXPECT_EQ(r.dw0, interpreted.dw0);
    EXPECT_EQ(r.dw1, interpreted.dw1);
}

// An image with two sections named csd: the device checked the last one while DPDK's loader
// loaded and compiled the first (a guest crashed QEMU this way: issue 27). Here the first
// returns 7 for every record, the last 0; the device must refuse the image, not run a
// section it did not check.
std::vector<uint8_t> two_csd_sections(const std::vector<uint8_t> &first, const std::vector<uint8_t> &last)
{
    using namespace csd::test;
    ElfImage img = elf_program(last, "checked");  // 1 .strtab, 2 csd, 3 .symtab
    ElfSection hostile = img.sections[1];         // csd, flags alloc + exec
    hostile.data = first;
    img.sections.insert(img.sections.begin() + 1, hostile);  // now 2: first csd, 3: last csd, 4: .symtab
    // the entry symbol (entry 1 of .symtab) in the last csd
    Elf64_Sym sym;
    std::memcpy(&sym, &img.sections[3].data[sizeof sym], sizeof sym);
    sym.st_shndx = 3;
    std::memcpy(&img.sections[3].data[sizeof sym], &sym, sizeof sym);
    return img.bytes();
}

TEST_F(Bpf, TwoCsdSectionsAreRefused)
{
    using csd::test::bpf_code;
    const auto seven = bpf_code({{0xb7, 0x00, 0, 7}, {0x95, 0, 0, 0}});  // r0 = 7; exit
    const auto zero = bpf_code({{0xb7, 0x00, 0, 0}, {0x95, 0, 0, 0}});   // r0 = 0; exit
    const auto img = two_csd_sections(seven, zero);
    const Loaded l = load(img, 16);
    EXPECT_EQ(l.code(), CSD_STATUS_INVALID_PROGRAM_IMAGE) << status_text(l.status);
    EXPECT_EQ(l.dw0, CSD_IMAGE_FAULT_NONE);
    if (l.status == 0) {  // accepted: which section runs?
        const uint32_t n = 100;
        put(0, records(n, 5));
        const auto r = run(l.dw0, 0, 16 * n, 0, 0, params(n, CSD_BPF_REDUCE, {}));
        ADD_FAILURE() << "accepted; a reduce over " << n << " records returned " << r.dw0
                      << " (the checked section returns 0, the other 7)";
    }
}

// The same with code DPDK's JIT miscompiles in the first section (a shift by 0x800020, which
// the device refuses in a section it checks): accepted, its first Execute died of SIGSEGV.
TEST_F(Bpf, TwoCsdSectionsHostileFirstIsRefused)
{
    using csd::test::bpf_code;
    const auto shift = bpf_code({{0xb7, 0x00, 0, 1}, {0x67, 0x00, 0, 0x800020}, {0x95, 0, 0, 0}});
    const auto zero = bpf_code({{0xb7, 0x00, 0, 0}, {0x95, 0, 0, 0}});
    const Loaded l = load(two_csd_sections(shift, zero), 16);
    EXPECT_EQ(l.code(), CSD_STATUS_INVALID_PROGRAM_IMAGE) << status_text(l.status);
    EXPECT_EQ(l.dw0, CSD_IMAGE_FAULT_NONE);
}

// A small program as clang would write it: r0 = csd_param(0) for every record.
csd::test::ElfImage param_program()
{
    using namespace csd::test;
    const auto code = bpf_code({{0xb7, 0x01, 0, 0}, {0x85, 0x10, 0, -1}, {0x95, 0, 0, 0}});
    return elf_program(code, "param0", {{8, "csd_param"}});
}

// What the device's reading of an image accepts: the writer's clang-like object runs, and
// so does clang's own with debug information (relocation tables for other sections).
TEST_F(Bpf, StrictReadingAcceptsWhatClangWrites)
{
    const Loaded l = load(param_program().bytes(), 16);
    ASSERT_EQ(l.status, 0) << status_text(l.status);
    const uint32_t n = 50;
    put(0, records(n, 1));
    const auto r = run(l.dw0, 0, 16 * n, 0, 0, params(n, CSD_BPF_REDUCE, {5}));
    ASSERT_OK(r);
    EXPECT_EQ(r.dw0, 5 * n);
    EXPECT_EQ(std::get<2>(entries().back()), "param0");
    const Loaded g = load(test_image("histogram_debug"), 16);
    EXPECT_EQ(g.status, 0) << status_text(g.status);
}

// Images that could be read more than one way, or that DPDK 22.11's loader would have read
// differently from the device's checks (issue 27), each refused as a malformed image.
TEST_F(Bpf, AmbiguousImagesAreRefused)
{
    using namespace csd::test;
    struct Case {
        const char *what;
        std::function<void(ElfImage &)> bend;
        uint32_t fault = CSD_IMAGE_FAULT_NONE;
    };
    // sections of param_program(): 1 .strtab, 2 csd, 3 .relcsd, 4 .symtab
    auto sym = [](ElfImage &img, size_t k) -> Elf64_Sym * {
        return reinterpret_cast<Elf64_Sym *>(&img.sections[3].data[k * sizeof(Elf64_Sym)]);
    };
    auto rel = [](ElfImage &img) -> Elf64_Rel * { return reinterpret_cast<Elf64_Rel *>(img.sections[2].data.data()); };
    auto add_section = [](ElfImage &img, const char *name, uint32_t type, std::vector<uint8_t> data) {
        ElfSection x;
        x.name = name;
        x.type = type;
        x.data = std::move(data);
        img.sections.push_back(x);
        return static_cast<uint16_t>(img.sections.size());
    };
    const std::vector<Case> cases = {
        {"csd not executable", [](ElfImage &i) { i.sections[1].flags = SHF_ALLOC; }},
        {"csd writable too", [](ElfImage &i) { i.sections[1].flags |= SHF_WRITE; }},
        {"csd of type NOBITS", [](ElfImage &i) { i.sections[1].type = SHT_NOBITS; }},
        {"a second function in csd",
         [](ElfImage &i) {
             auto &names = i.sections[0].data;  // .strtab
             const auto s = elf_symbol(static_cast<uint32_t>(names.size()), STB_GLOBAL, STT_FUNC, 2, 16, 8);
             const char second[] = "second";
             names.insert(names.end(), second, second + sizeof second);
             i.sections[3].data.insert(i.sections[3].data.end(), s.begin(), s.end());
         }},
        {"the entry not at the first instruction", [&](ElfImage &i) { sym(i, 1)->st_value = 8; }},
        {"the entry in another section",
         [&](ElfImage &i) { sym(i, 1)->st_shndx = add_section(i, ".text", SHT_PROGBITS, std::vector<uint8_t>(24)); }},
        {"a call to a function the object defines", [&](ElfImage &i) { sym(i, 2)->st_shndx = 2; }},
        {"a call to a local symbol", [&](ElfImage &i) { sym(i, 2)->st_info = ELF64_ST_INFO(STB_LOCAL, STT_NOTYPE); }},
        {"a call to a data symbol", [&](ElfImage &i) { sym(i, 2)->st_info = ELF64_ST_INFO(STB_GLOBAL, STT_OBJECT); }},
        {"a call relocated by R_BPF_64_64", [&](ElfImage &i) { rel(i)->r_info = ELF64_R_INFO(2, 1); }},
        {"a relocation of a non-call", [&](ElfImage &i) { rel(i)->r_offset = 0; }},
        {"a relocation inside an instruction", [&](ElfImage &i) { rel(i)->r_offset = 12; }},
        {"a relocation past the code", [&](ElfImage &i) { rel(i)->r_offset = 24; }},
        {"a relocation against symbol 0", [&](ElfImage &i) { rel(i)->r_info = ELF64_R_INFO(0, 10); }},
        {"a relocation against a symbol past the table", [&](ElfImage &i) { rel(i)->r_info = ELF64_R_INFO(9, 10); }},
        {"two relocations of one call",
         [&](ElfImage &i) {
             const auto r = elf_rel(8, 2, kRBpf64_32);
             i.sections[2].data.insert(i.sections[2].data.end(), r.begin(), r.end());
         }},
        {"RELA relocations of csd",
         [](ElfImage &i) {
             i.sections[2].type = SHT_RELA;
             i.sections[2].entsize = sizeof(Elf64_Rela);
             i.sections[2].data.resize(sizeof(Elf64_Rela));
         }},
        {"two relocation tables for csd", [](ElfImage &i) { i.sections.push_back(i.sections[2]); }},
        {"a relocation table for a section that does not exist", [&](ElfImage &i) {
             const uint16_t at = add_section(i, ".rel.x", SHT_REL, elf_rel(0, 1, 1));
             i.sections[at - 1].entsize = sizeof(Elf64_Rel);
             i.sections[at - 1].info = 99;
             i.sections[at - 1].link = 4;
         }},
        {"relocations against the string table", [](ElfImage &i) { i.sections[2].link = 1; }},
        {"two symbol tables", [](ElfImage &i) { i.sections.push_back(i.sections[3]); }},
        {"a symbol table of 23-byte entries", [](ElfImage &i) { i.sections[3].entsize = 23; }},
        {"a helper named outside its string table", [&](ElfImage &i) { sym(i, 2)->st_name = 100000; }},
        {"a section named outside the names table", [](ElfImage &i) { i.sections[2].name_offset = 1 << 20; }},
        {"section names in a section that is not a string table", [](ElfImage &i) { i.shstrndx = 2; }},
        {"OS ABI Linux", [](ElfImage &i) { i.osabi = ELFOSABI_LINUX; }},
        {"a call by number (no relocation)", [](ElfImage &i) { i.sections[2].data.clear(); }, 1},
        {"a call to a pseudo register 2",
         [](ElfImage &i) { i.sections[1].data[9] = 0x20; }, 1},
    };
    for (const auto &c : cases) {
        ElfImage img = param_program();
        c.bend(img);
        const Loaded r = load(img.bytes(), 16, 0x150);
        EXPECT_EQ(r.code(), CSD_STATUS_INVALID_PROGRAM_IMAGE) << c.what << ": " << status_text(r.status);
        EXPECT_EQ(r.dw0, c.fault) << c.what;
        if (r.status == 0) {
            EXPECT_EQ(vendor_unload(0x150), 0);
        }
    }
}

// Instructions DPDK's verifier would follow past the program or into data. A 64-bit load
// in the second-to-last slot whose second half reads as an exit passed the device's old
// checks (the last slot looked like an exit) and DPDK's verifier went on to instruction
// nb_ins (its add_edge allows it): "malloc(): corrupted top size" on load. Found reading
// DPDK's lib/bpf/bpf_validate.c. Also: a jump into the middle of a 64-bit load, a 64-bit
// load without its second half or of a map, a conditional jump as the last instruction.
TEST_F(Bpf, HiddenInstructionsAreRefused)
{
    using namespace csd::test;
    const std::pair<const char *, std::vector<BpfInsn>> cases[] = {
        {"64-bit load, second half an exit", {{0xb7, 0x00, 0, 0}, {0x18, 0x00, 0, 1}, {0x95, 0, 0, 0}}},
        {"jump into a 64-bit load", {{0x05, 0, 1, 0}, {0x18, 0x00, 0, 1}, {0x95, 0, 0, 0}, {0x95, 0, 0, 0}}},
        {"64-bit load at the end", {{0xb7, 0x00, 0, 0}, {0x95, 0, 0, 0}, {0x18, 0x00, 0, 1}}},
        {"64-bit load of a map", {{0x18, 0x10, 0, 1}, {0, 0, 0, 0}, {0x95, 0, 0, 0}}},
        {"conditional jump last", {{0xb7, 0x00, 0, 0}, {0x15, 0x00, -2, 0}}},
    };
    for (const auto &[what, insns] : cases) {
        const Loaded r = load(elf_program(bpf_code(insns), "hidden").bytes(), 16, 0x150);
        EXPECT_EQ(r.code(), CSD_STATUS_INVALID_PROGRAM_IMAGE) << what << ": " << status_text(r.status);
        if (r.status == 0) {
            EXPECT_EQ(vendor_unload(0x150), 0);
        }
    }
    // The same load with its second half zero, followed by an exit, is fine: r0 = 1 << 32 | 1.
    const auto ok = bpf_code({{0x18, 0x00, 0, 1}, {0, 0, 0, 1}, {0x95, 0, 0, 0}});
    const Loaded l = load(elf_program(ok, "wide").bytes(), 16);
    ASSERT_EQ(l.status, 0) << status_text(l.status);
    put(0, records(1, 1));
    const auto r = run(l.dw0, 0, 16, 0, 0, params(1, CSD_BPF_REDUCE, {}));
    ASSERT_OK(r);
    EXPECT_EQ(r.dw0, 1u);
    EXPECT_EQ(r.dw1, 1u);
}

// The instructions the runtime loaded are the ones the device checked: section csd of the
// image, read here on its own, with each relocated call's imm = the helper's index and
// src_reg 0, and nothing else changed. Seen in the device's array and in DPDK's own copy.
#ifdef CSD_HAVE_BPF
#if RTE_VERSION >= RTE_VERSION_NUM(22, 11, 0, 0) && RTE_VERSION < RTE_VERSION_NUM(23, 0, 0, 0)
#define DPDK_22_11 1
#endif
#endif
TEST_F(Bpf, TheLoadedInstructionsAreTheCheckedOnes)
{
#ifdef DPDK_22_11
    for (const char *name : {"threshold", "project", "histogram", "prefix"}) {
        const auto img = example(name);
        Elf64_Ehdr eh;
        std::memcpy(&eh, img.data(), sizeof eh);
        std::vector<Elf64_Shdr> sh(eh.e_shnum);
        std::memcpy(sh.data(), &img[eh.e_shoff], sh.size() * sizeof(Elf64_Shdr));
        std::vector<uint64_t> want;
        for (const auto &s : sh) {
            if (s.sh_type == SHT_PROGBITS && s.sh_flags & SHF_EXECINSTR && s.sh_size) {
                want.resize(s.sh_size / 8);
                std::memcpy(want.data(), &img[s.sh_offset], s.sh_size);
            }
        }
        ASSERT_FALSE(want.empty()) << name;
        size_t calls = 0;
        for (const auto &s : sh) {
            if (s.sh_type != SHT_REL) continue;
            const Elf64_Shdr &symtab = sh[s.sh_link], &strtab = sh[symtab.sh_link];
            for (uint64_t k = 0; k < s.sh_size / sizeof(Elf64_Rel); k++) {
                Elf64_Rel r;
                Elf64_Sym sym;
                std::memcpy(&r, &img[s.sh_offset + k * sizeof r], sizeof r);
                std::memcpy(&sym, &img[symtab.sh_offset + ELF64_R_SYM(r.r_info) * sizeof sym], sizeof sym);
                const std::string helper(reinterpret_cast<const char *>(&img[strtab.sh_offset + sym.st_name]));
                const uint64_t index = helper == "csd_param" ? 0 : helper == "csd_index" ? 1 : 99;
                ASSERT_NE(index, 99u) << helper;
                uint64_t &insn = want[r.r_offset / 8];
                insn = (insn & 0xFFFFFFFF'FFFF0FFFull & 0x00000000'FFFFFFFFull) | index << 32;  // src_reg 0, imm
                calls++;
            }
        }
        EXPECT_GT(calls, 0u) << name;
        std::unique_ptr<csd::core::BpfProgram> p;
        uint32_t fault;
        std::string why;
        ASSERT_EQ(csd::core::BpfProgram::load(img.data(), img.size(), 16, &p, &fault, &why), 0) << name << ": " << why;
        EXPECT_EQ(p->instructions(), want) << name;
        // DPDK 22.11's struct rte_bpf (lib/bpf/bpf_impl.h) begins with the rte_bpf_prm it
        // runs from, ins pointing at its own copy of the instructions.
        const auto *loaded = reinterpret_cast<const rte_bpf_prm *>(p->runtime());
        ASSERT_EQ(loaded->nb_ins, want.size()) << name;
        EXPECT_NE(static_cast<const void *>(loaded->ins), static_cast<const void *>(p->instructions().data()));
        EXPECT_EQ(std::memcmp(loaded->ins, want.data(), 8 * want.size()), 0) << name;
    }
#else
    GTEST_SKIP() << "needs DPDK 22.11's librte_bpf (this build has another or none)";
#endif
}

// Found by fuzz_elf: DPDK's JIT compiles a shift of a register by itself ("r0 <<= r0")
// wrongly (it swaps the count into rcx, then shifts what rcx held): the JIT-compiled map
// returned each record's byte unshifted; and a division or remainder of r0 or r3 by itself
// (it divides by a scratch register it never filled). Such programs run in the interpreter.
// (A 64-bit division or remainder by a register is refused at Program Load: test_bpf_engines.cc.)
TEST_F(Bpf, ShiftOrDivisionByItselfRunsInTheInterpreter)
{
    using namespace csd::test;
    // LSH, LSH32, RSH, RSH32, DIV, DIV32, MOD, MOD32 by a register; in r0 and in r3
    for (const uint8_t reg : {0, 3})
    for (const uint8_t shift : {0x6f, 0x6c, 0x7f, 0x7c, 0x3f, 0x3c, 0x9f, 0x9c}) {
        // rN = *(u8 *)(r1 + 0); rN = rN OP rN; r0 = rN; exit
        const auto code = bpf_code({{0x71, static_cast<uint8_t>(0x10 | reg), 0, 0},
                                    {shift, static_cast<uint8_t>(reg << 4 | reg), 0, 0},
                                    {0xbf, static_cast<uint8_t>(reg << 4), 0, 0},
                                    {0x95, 0, 0, 0}});
        const Loaded l = load(elf_program(code, "self_shift").bytes(), 1, 0x150);
        if (shift == 0x3f || shift == 0x9f) {
            EXPECT_EQ(l.code(), CSD_STATUS_INVALID_PROGRAM_IMAGE) << status_text(l.status);
            continue;
        }
        ASSERT_EQ(l.status, 0) << status_text(l.status);
        const uint32_t n = 16;
        std::vector<uint8_t> recs(n);
        for (uint32_t i = 0; i < n; i++) recs[i] = static_cast<uint8_t>(i + 1);
        put(0, recs);
        const auto r = run(l.dw0, 0, n, 4096, 8 * n, params(n, CSD_BPF_MAP, {}));
        ASSERT_OK(r);
        const auto out = get<uint64_t>(4096, n);
        for (uint32_t i = 0; i < n; i++) {
            const uint64_t v = recs[i];
            const uint64_t want = shift == 0x6f   ? v << v
                                  : shift == 0x6c ? uint32_t(v << v)
                                  : shift == 0x7f || shift == 0x7c ? v >> v
                                  : shift == 0x3f || shift == 0x3c ? 1
                                                                   : 0;
            EXPECT_EQ(out[i], want) << std::hex << "opcode " << int(shift) << " on r" << int(reg) << ", record " << v;
        }
        EXPECT_EQ(vendor_unload(0x150), 0);
    }
}

// Found by fuzz_elf: DPDK's verifier keeps a pointer "the record pointer" through any
// arithmetic (it tracks an offset from the base), so "r1 &= 0" then a read at r1 + 100
// passed it and read address 100 (SIGSEGV in rte_bpf_exec); "r1 ^= 8", "r1 >>= 1" or
// "r1 *= 2" reach other memory the same way, for reading and writing. Its stack tracking
// types a slot by the first one an access touches, so an unaligned spill or fill turns
// chosen bytes into "the record pointer". The device refuses every such use of a pointer,
// and pointers leaving the program (stored into the record, returned, compared).
// DPDK 22.11's verifier walks every path of a program separately: k if-statements whose
// paths it cannot merge cost it 2^k walks, inside the Program Load command (found by an
// outside review: 40 of them, 122 instructions, did not load in 60 s). The device counts
// the walk first and refuses such a program at once; a dozen still load.
TEST_F(Bpf, ProgramsWithTooManyPathsForTheVerifierAreRefusedAtOnce)
{
    using namespace csd::test;
    auto diamonds = [](int k) {
        std::vector<BpfInsn> v = {{0xb7, 0x02, 0, 0}, {0x71, 0x13, 0, 0}};  // r2 = 0; r3 = record[0]
        for (int j = 0; j < k; j++) {
            v.push_back({0x67, 0x02, 0, 1});    // r2 <<= 1
            v.push_back({0x25, 0x03, 1, 100});  // if r3 > 100 goto +1
            v.push_back({0x07, 0x02, 0, 1});    // r2 += 1
        }
        v.push_back({0xb7, 0x00, 0, 0});
        v.push_back({0x95, 0, 0, 0});
        return v;
    };
    const Loaded many = load(elf_program(bpf_code(diamonds(40)), "paths").bytes(), 16, 0x150);  // hung before
    EXPECT_EQ(many.code(), CSD_STATUS_INVALID_PROGRAM_IMAGE) << status_text(many.status);
    if (many.status == 0) EXPECT_EQ(vendor_unload(0x150), 0);
    const Loaded few = load(elf_program(bpf_code(diamonds(12)), "paths").bytes(), 16, 0x150);
    EXPECT_EQ(few.status, 0) << status_text(few.status);
    if (few.status == 0) EXPECT_EQ(vendor_unload(0x150), 0);
}

TEST_F(Bpf, PointerMisuseIsRefused)
{
    using namespace csd::test;
    const BpfInsn read100 = {0x71, 0x10, 100, 0}, exit_ = {0x95, 0, 0, 0};  // r0 = *(u8 *)(r1 + 100)
    const std::pair<const char *, std::vector<BpfInsn>> cases[] = {
        {"r1 &= 0", {{0x57, 0x01, 0, 0}, read100, exit_}},
        {"r1 ^= 8", {{0xa7, 0x01, 0, 8}, read100, exit_}},
        {"r1 |= 1", {{0x47, 0x01, 0, 1}, read100, exit_}},
        {"r1 >>= 1", {{0x77, 0x01, 0, 1}, read100, exit_}},
        {"r1 <<= 1", {{0x67, 0x01, 0, 1}, read100, exit_}},
        {"r1 *= 2", {{0x27, 0x01, 0, 2}, read100, exit_}},
        {"r1 /= 2", {{0x37, 0x01, 0, 2}, read100, exit_}},
        {"r1 = -r1", {{0x87, 0x01, 0, 0}, read100, exit_}},
        {"w1 += 0", {{0x04, 0x01, 0, 0}, read100, exit_}},
        {"r10 &= r10 via r2", {{0xbf, 0xa2, 0, 0}, {0x57, 0x02, 0, 0}, {0x72, 0x02, -8, 0}, {0xb7, 0, 0, 0}, exit_}},
        {"r2 += r1", {{0xb7, 0x02, 0, 0}, {0x0f, 0x12, 0, 0}, {0x71, 0x20, 0, 0}, exit_}},
        {"store r1 into the record", {{0x7b, 0x11, 0, 0}, {0xb7, 0, 0, 0}, exit_}},
        {"return r1", {{0xbf, 0x10, 0, 0}, exit_}},
        {"compare r1", {{0xb7, 0x00, 0, 0}, {0x25, 0x01, 1, 0x1000}, {0xb7, 0x00, 0, 1}, exit_}},
        {"w2 = w1", {{0xbc, 0x12, 0, 0}, {0xbf, 0x20, 0, 0}, exit_}},
        // r1 kept in slot -8, then a DW store at r10 - 12 over its low half: DPDK still typed
        // slot -8 "the record pointer" when it was read back
        {"partial overwrite of a kept pointer",
         {{0x7b, 0x1a, -8, 0}, {0x7a, 0x0a, -12, 0x1000}, {0x79, 0xa1, -8, 0}, read100, exit_}},
        {"unaligned fill of a kept pointer", {{0x7b, 0x1a, -16, 0}, {0x79, 0xa1, -12, 0}, read100, exit_}},
        {"unaligned spill", {{0x7b, 0x1a, -12, 0}, {0x79, 0xa1, -16, 0}, read100, exit_}},
        {"read through a number", {{0xb7, 0x02, 0, 64}, {0x71, 0x20, 0, 0}, exit_}},
        // found by an outside review: an atomic add of 0 to a kept pointer, or a byte stored
        // over part of one, gave the host's stack or record address back as a number
        {"xadd to a kept stack pointer",
         {{0xb7, 0x02, 0, 0}, {0x7b, 0xaa, -8, 0}, {0xdb, 0x2a, -8, 0}, {0x79, 0xa0, -8, 0}, exit_}},
        {"xadd to a kept record pointer",
         {{0xb7, 0x02, 0, 0}, {0x7b, 0x1a, -8, 0}, {0xdb, 0x2a, -8, 0}, {0x79, 0xa0, -8, 0}, exit_}},
        {"a byte over a kept pointer, another byte read",
         {{0x7b, 0x1a, -8, 0}, {0x72, 0x0a, -8, 0}, {0x71, 0xa0, -7, 0}, exit_}},
        {"r10 += 8", {{0x07, 0x0a, 0, 8}, {0xb7, 0x00, 0, 0}, exit_}},
        {"r10 = 0", {{0xb7, 0x0a, 0, 0}, {0xb7, 0x00, 0, 0}, exit_}},
        {"r10 = *(u64 *)(r1 + 0)", {{0x79, 0x1a, 0, 0}, {0xb7, 0x00, 0, 0}, exit_}},
    };
    for (const auto &[what, insns] : cases) {
        const Loaded r = load(elf_program(bpf_code(insns), "pointer").bytes(), 128, 0x150);
        EXPECT_EQ(r.code(), CSD_STATUS_INVALID_PROGRAM_IMAGE) << what << ": " << status_text(r.status);
        if (r.status == 0) {
            EXPECT_EQ(vendor_unload(0x150), 0);
        }
    }
    // What compiled programs do is fine: copy it, add to it, keep it on the stack and take it back.
    const auto ok = bpf_code({{0xbf, 0x16, 0, 0},     // r6 = r1
                              {0x07, 0x06, 0, 4},     // r6 += 4
                              {0x7b, 0x6a, -8, 0},    // *(u64 *)(r10 - 8) = r6
                              {0xb7, 0x06, 0, 0},     // r6 = 0
                              {0x79, 0xa6, -8, 0},    // r6 = *(u64 *)(r10 - 8)
                              {0x71, 0x60, 96, 0},    // r0 = *(u8 *)(r6 + 96): byte 100
                              {0x95, 0, 0, 0}});
    const Loaded l = load(elf_program(ok, "spill").bytes(), 128);
    ASSERT_EQ(l.status, 0) << status_text(l.status);
    std::vector<uint8_t> rec(128);
    rec[100] = 42;
    put(0, rec);
    const auto r = run(l.dw0, 0, 128, 0, 0, params(1, CSD_BPF_REDUCE, {}));
    ASSERT_OK(r);
    EXPECT_EQ(r.dw0, 42u);
}

// Found reading DPDK's lib/bpf/bpf_validate.c: its bounds for a multiplication overflow
// unchecked, so a record byte times 7F7F7F7F7F7F7F80h was taken to be at most 128 and the
// record pointer plus it "inside a 256-byte record": the read at record + 2^63 died of
// SIGSEGV. The device bounds every access itself, over every path: what a compare proves
// is used, what might wrap is not. Also refused: reading stack bytes never written (they
// hold the host's data) and registers that hold nothing yet.
TEST_F(Bpf, AccessesAreBoundedByTheDevice)
{
    using namespace csd::test;
    const uint64_t k = 0x7f7f7f7f7f7f7f80ull;
    const BpfInsn byte0 = {0x71, 0x12, 0, 0}, exit_ = {0x95, 0, 0, 0};  // r2 = *(u8 *)(r1 + 0)
    const BpfInsn add = {0x0f, 0x21, 0, 0}, read = {0x71, 0x10, 0, 0};  // r1 += r2; r0 = *(u8 *)(r1 + 0)
    const std::pair<const char *, std::vector<BpfInsn>> refused[] = {
        {"a byte times 7F7F7F7F7F7F7F80h",
         {byte0, {0x18, 0x03, 0, static_cast<int32_t>(k)}, {0, 0, 0, static_cast<int32_t>(k >> 32)}, {0x2f, 0x32, 0, 0}, add,
          read, exit_}},
        {"a byte not checked", {byte0, {0x07, 0x01, 0, 200}, add, read, exit_}},
        {"a byte checked against 200", {byte0, {0x25, 0x02, 2, 200}, add, read, exit_, {0xb7, 0x00, 0, 0}, exit_}},
        {"a byte minus 1 (it may be 0)", {byte0, {0x17, 0x02, 0, 1}, add, read, exit_}},
        {"a byte shifted left by a byte", {byte0, {0x71, 0x13, 1, 0}, {0x6f, 0x32, 0, 0}, add, read, exit_}},
        {"stack bytes never written", {{0x79, 0xa0, -8, 0}, exit_}},
        {"part of the stack written", {{0x62, 0x0a, -8, 7}, {0x79, 0xa0, -8, 0}, exit_}},
        {"a register never set", {{0xbf, 0x20, 0, 0}, exit_}},
        {"r1 after a call", {{0xb7, 0x01, 0, 0}, {0x85, 0x10, 0, -1}, read, exit_}},
        {"a backward jump", {{0xb7, 0x00, 0, 0}, {0x07, 0x00, 0, 1}, {0x05, 0, -2, 0}, exit_}},
    };
    for (const auto &[what, insns] : refused) {
        std::vector<std::pair<uint64_t, std::string>> calls;
        for (size_t i = 0; i < insns.size(); i++) {
            if (insns[i].code == 0x85) calls.emplace_back(8 * i, "csd_param");
        }
        const Loaded r = load(elf_program(bpf_code(insns), "bounds", calls).bytes(), 256, 0x150);
        EXPECT_EQ(r.code(), CSD_STATUS_INVALID_PROGRAM_IMAGE) << what << ": " << status_text(r.status);
        EXPECT_NE(r.dw0, CSD_IMAGE_FAULT_NONE) << what;
        if (r.status == 0) {
            EXPECT_EQ(vendor_unload(0x150), 0);
        }
    }
    // What compares prove is used (DPDK's verifier wants both the unsigned and the signed
    // one): a byte at most 100, kept on the stack and taken back, indexes a 256-byte record
    // from byte 155; in a 255-byte record it could reach past the end.
    const auto ok = bpf_code({byte0,
                              {0xb7, 0x00, 0, 0},      // r0 = 0
                              {0x25, 0x02, 6, 100},    // if r2 > 100 goto exit
                              {0x65, 0x02, 5, 100},    // if r2 s> 100 goto exit
                              {0x7b, 0x2a, -8, 0},     // *(u64 *)(r10 - 8) = r2
                              {0x79, 0xa3, -8, 0},     // r3 = *(u64 *)(r10 - 8)
                              {0x0f, 0x31, 0, 0},      // r1 += r3
                              {0x71, 0x10, 155, 0},    // r0 = *(u8 *)(r1 + 155)
                              {0x07, 0x00, 0, 1},      // r0 += 1
                              exit_});
    const Loaded l = load(elf_program(ok, "indexed").bytes(), 256);
    ASSERT_EQ(l.status, 0) << status_text(l.status);
    std::vector<uint8_t> rec(256);
    rec[0] = 100;
    rec[255] = 41;
    put(0, rec);
    const auto r = run(l.dw0, 0, 256, 0, 0, params(1, CSD_BPF_REDUCE, {}));
    ASSERT_OK(r);
    EXPECT_EQ(r.dw0, 42u);
    EXPECT_EQ(load(elf_program(ok, "indexed").bytes(), 255, 0x151).code(), CSD_STATUS_INVALID_PROGRAM_IMAGE);
}

TEST_F(Bpf, LoadFieldChecks)
{
    const auto img = example("threshold");
    const uint32_t n = static_cast<uint32_t>(img.size());
    EXPECT_EQ(load_chunk(0, CSD_MAX_PROGRAM_BYTES + 1, 0, img.data(), n, 16).code(), CSD_STATUS_INVALID_FIELD);  // too large
    EXPECT_EQ(load_chunk(0, n, 0, img.data(), n, 16, 2).code(), CSD_STATUS_INVALID_FIELD);        // type 2
    EXPECT_EQ(load_chunk(0, n, 0, img.data(), n, 0).code(), CSD_STATUS_INVALID_FIELD);            // record size 0
    EXPECT_EQ(load_chunk(0, n, 0, img.data(), n, 4097).code(), CSD_STATUS_INVALID_FIELD);         // record size 4097
    EXPECT_EQ(load_chunk(0x99, n, 0, img.data(), n, 16).code(), CSD_STATUS_INVALID_FIELD);        // not a slot
    EXPECT_EQ(load_chunk(0, n, 8, img.data(), n, 16).code(), CSD_STATUS_INVALID_FIELD);           // past the size
    EXPECT_EQ(load_chunk(0, n, 0, img.data(), 0, 16).code(), CSD_STATUS_INVALID_FIELD);           // empty chunk
    EXPECT_EQ(load_chunk(0, n, 100, img.data(), 10, 16).code(), CSD_STATUS_INVALID_FIELD);        // later chunk, no slot
}

TEST_F(Bpf, ChunksInOrderOnly)
{
    const auto img = example("threshold");
    const uint32_t n = static_cast<uint32_t>(img.size());
    ASSERT_EQ(load_chunk(0x130, n, 0, img.data(), 100, 16).status, 0);
    EXPECT_EQ(load_chunk(0x130, n, 200, img.data() + 200, 100, 16).code(), CSD_STATUS_INVALID_FIELD);  // gap
    EXPECT_EQ(load_chunk(0x130, n, 50, img.data() + 50, 100, 16).code(), CSD_STATUS_INVALID_FIELD);    // overlap
    EXPECT_EQ(load_chunk(0x130, n, 100, img.data() + 100, 100, 32).code(), CSD_STATUS_INVALID_FIELD);  // record size changed
    EXPECT_EQ(load_chunk(0x130, n, 0, img.data(), n, 16).code(), CSD_STATUS_PROGRAM_SLOT_IN_USE);      // being loaded
    const Loaded done = load_chunk(0x130, n, 100, img.data() + 100, n - 100, 16);
    ASSERT_EQ(done.status, 0);
    EXPECT_EQ(done.dw0, 0x130u);
    EXPECT_EQ(load(img, 16, 0x130).code(), CSD_STATUS_PROGRAM_SLOT_IN_USE);  // holds a program
    EXPECT_EQ(std::get<2>(entries().back()), "threshold");
    EXPECT_EQ(std::get<1>(entries().back()), CSD_PROGRAM_DOWNLOADED);
}

TEST_F(Bpf, UnloadRules)
{
    EXPECT_EQ(CSD_STATUS_CODE(vendor_unload(0x140)), CSD_STATUS_INVALID_PROGRAM);  // empty
    EXPECT_EQ(CSD_STATUS_CODE(vendor_unload(0x05)), CSD_STATUS_INVALID_PROGRAM);   // device-defined
    const Loaded l = load(example("threshold"), 16, 0x140);
    ASSERT_EQ(l.status, 0);
    // An Execute prepared (queued) or running holds the slot.
    put(0, records(10, 2));
    const auto p = params(10, CSD_BPF_FILTER, {0});
    const auto desc = make_descriptor(0x140, {{0, 160}, {4096, 160}}, p.data(), static_cast<uint32_t>(p.size()));
    csd_exec *job = nullptr;
    ASSERT_EQ(csd_core_exec_prepare(core, desc.data(), static_cast<uint32_t>(desc.size()), &job), 0);
    EXPECT_EQ(CSD_STATUS_CODE(vendor_unload(0x140)), CSD_STATUS_PROGRAM_SLOT_IN_USE);
    uint32_t dw0, dw1;
    EXPECT_EQ(csd_core_exec_run(core, job, nullptr, &dw0, &dw1), 0);
    EXPECT_EQ(vendor_unload(0x140), 0);
    EXPECT_STATUS(exec_raw(desc), CSD_STATUS_INVALID_PROGRAM);
    EXPECT_EQ(entries().size(), CSD_NR_DEVICE_PROGRAMS + 0u);
    EXPECT_EQ(stat(CSD_STAT_PROGRAM_UNLOAD_CMDS), 4u);
    // A discarded job releases the slot too.
    ASSERT_EQ(load(example("threshold"), 16, 0x140).status, 0);
    ASSERT_EQ(csd_core_exec_prepare(core, desc.data(), static_cast<uint32_t>(desc.size()), &job), 0);
    csd_core_exec_discard(job);
    EXPECT_EQ(vendor_unload(0x140), 0);
}

TEST_F(Bpf, CancelledBetweenBatches)
{
    const Loaded l = load(example("threshold"), 16);
    const uint32_t n = 1 << 20;
    const auto p = params(n, CSD_BPF_REDUCE, {0});
    const auto desc = make_descriptor(l.dw0, {{0, 16ull * n}, {0, 0}}, p.data(), static_cast<uint32_t>(p.size()));
    csd_exec *job = nullptr;
    ASSERT_EQ(csd_core_exec_prepare(core, desc.data(), static_cast<uint32_t>(desc.size()), &job), 0);
    const int cancel = 1;
    uint32_t dw0, dw1;
    EXPECT_EQ(CSD_STATUS_CODE(csd_core_exec_run(core, job, &cancel, &dw0, &dw1)), CSD_STATUS_ABORT_REQUESTED);
}

// A reset must not wait long for a running program, however long each record's work: a
// program of 48,000 instructions a record, interpreted, is asked to stop once its first
// record is done. It stops after a few records, not after a whole batch of 4096 (which
// took 0.8 s, the checks being every 4096 records whatever the program's length).
TEST_F(Bpf, LongProgramsStopWithinAFewRecords)
{
    const Loaded l = load(test_image("long_program"), 1);
    ASSERT_EQ(l.status, 0) << status_text(l.status);
    const uint32_t n = 8192;
    const uint64_t out = 1 << 20, unwritten = 0xA5A5A5A5A5A5A5A5ull;
    put(0, std::vector<uint8_t>(n, 7));
    put(out, std::vector<uint64_t>(n, unwritten));
    const auto p = params(n, CSD_BPF_MAP, {});
    const auto desc = make_descriptor(l.dw0, {{0, n}, {out, 8ull * n}}, p.data(), static_cast<uint32_t>(p.size()));
    csd_exec *job = nullptr;
    ASSERT_EQ(csd_core_exec_prepare(core, desc.data(), static_cast<uint32_t>(desc.size()), &job), 0);
    csd_core_set_bpf_interpreted(core, 1);  // the slowest engine: the longest time between checks
    int cancel = 0;
    const uint64_t *first = reinterpret_cast<const uint64_t *>(slm(out));
    std::thread reset([&] {
        while (__atomic_load_n(first, __ATOMIC_RELAXED) == unwritten) std::this_thread::yield();
        __atomic_store_n(&cancel, 1, __ATOMIC_RELAXED);
    });
    uint32_t dw0, dw1;
    const uint16_t st = csd_core_exec_run(core, job, &cancel, &dw0, &dw1);
    reset.join();
    EXPECT_EQ(CSD_STATUS_CODE(st), CSD_STATUS_ABORT_REQUESTED);
    const auto results = get<uint64_t>(out, n);
    const auto ran = std::count_if(results.begin(), results.end(), [&](uint64_t r) { return r != unwritten; });
    EXPECT_GE(ran, 1);
    EXPECT_LT(ran, 4096) << "records run after the cancel flag was set";
}

TEST_F(Bpf, CapabilitiesVersion11)
{
    const auto page = caps();
    uint32_t version, max_bytes;
    uint16_t slots, types;
    std::memcpy(&version, page.data() + 4, 4);
    std::memcpy(&max_bytes, page.data() + 32, 4);
    std::memcpy(&slots, page.data() + 36, 2);
    std::memcpy(&types, page.data() + 38, 2);
    EXPECT_EQ(version, 0x00010001u);
    EXPECT_GE(max_bytes, 1u << 20);
    EXPECT_EQ(slots, 256);
    EXPECT_EQ(types, 1u << 1);
}

TEST_F(Bpf, AllSlotsTaken)
{
    const auto img = example("threshold");
    for (int i = 0; i < CSD_NR_SLOTS; i++) {
        ASSERT_EQ(load_chunk(0, static_cast<uint32_t>(img.size()), 0, img.data(), 64, 16).status, 0) << i;
    }
    EXPECT_EQ(load_chunk(0, static_cast<uint32_t>(img.size()), 0, img.data(), 64, 16).code(),
              CSD_STATUS_PROGRAM_SLOT_IN_USE);
    EXPECT_EQ(vendor_unload(0x1FF), 0);  // an abandoned upload can be unloaded
    EXPECT_EQ(load_chunk(0, static_cast<uint32_t>(img.size()), 0, img.data(), 64, 16).dw0, 0x1FFu);
}

// Half-loaded images hold the device's (QEMU's) memory at the size their first chunk
// declared: at most CSD_MAX_LOADING_BYTES of them at once, whoever sends them; without the
// cap 256 first chunks of 4 MiB images held 1 GiB.
TEST_F(Bpf, HalfLoadedImageBytesAreCapped)
{
    const std::vector<uint8_t> chunk(4096, 0);
    const uint32_t fit = CSD_MAX_LOADING_BYTES / CSD_MAX_PROGRAM_BYTES;
    ASSERT_GE(fit, 1u);
    for (uint32_t i = 0; i < fit; i++) {
        ASSERT_EQ(load_chunk(0, CSD_MAX_PROGRAM_BYTES, 0, chunk.data(), 4096, 16).status, 0) << i;
    }
    const Loaded over = load_chunk(0, CSD_MAX_PROGRAM_BYTES, 0, chunk.data(), 4096, 16);
    EXPECT_EQ(over.status, CSD_STATUS_PROGRAM_LOAD_BYTES_EXCEEDED | CSD_STATUS_DNR);
    EXPECT_STREQ(csd_status_name(over.status), "Program Load Bytes Exceeded");
    const auto img = example("threshold");
    EXPECT_EQ(load(img, 16).code(), CSD_STATUS_PROGRAM_LOAD_BYTES_EXCEEDED);  // even a small one
    // Later chunks of the uploads already accepted still arrive.
    EXPECT_EQ(load_chunk(CSD_SLOT_FIRST, CSD_MAX_PROGRAM_BYTES, 4096, chunk.data(), 4096, 16).status, 0);
    // Abandoning an upload gives its bytes back; a complete program is not counted.
    EXPECT_EQ(vendor_unload(CSD_SLOT_FIRST), 0);
    const Loaded small = load(img, 16);
    ASSERT_EQ(small.status, 0);
    EXPECT_EQ(load_chunk(0, CSD_MAX_PROGRAM_BYTES - 65536, 0, chunk.data(), 4096, 16).status, 0);
    EXPECT_EQ(load_chunk(0, 65537, 0, chunk.data(), 4096, 16).code(), CSD_STATUS_PROGRAM_LOAD_BYTES_EXCEEDED);
    EXPECT_EQ(load_chunk(0, 65536, 0, chunk.data(), 4096, 16).status, 0);
}

// A core without the eBPF runtime (the GPU machine's host-only build) says so: C0h lists no
// program types and Program Load of an eBPF image is Invalid Field in Command (the type
// field names a type the device does not support); on the standard front end 83h lists
// no type and Load Program answers Invalid Program Type. Nothing is loaded, nothing crashes.
TEST_F(CoreTest, ProgramLoadWithoutTheEbpfRuntime)
{
    if (core_runs_ebpf(core)) GTEST_SKIP() << "this core has the eBPF runtime";
    csd_op op;
    EXPECT_EQ(decode(CSD_OPC_PROGRAM_LOAD, csd_program_load_cdw10(0, CSD_PROGRAM_TYPE_EBPF), 256, 0, 256, 16, &op),
              CSD_STATUS_INVALID_FIELD | CSD_STATUS_DNR);
    std::vector<uint8_t> page(NVME_CS_LOG_MAX_SIZE);
    uint32_t avail = 0, types = 1;
    ASSERT_EQ(csd_core_cs_get_log(core, NVME_CS_LOG_DL_PROGRAM_TYPES, 0, page.data(), 4096, &avail), 0);
    std::memcpy(&types, page.data(), 4);
    EXPECT_EQ(types, 0u);
    EXPECT_EQ(avail, 8u);
    const csd_ctx ctx{1 << 20, 512, 0};
    const csd_cmd c{NVME_CS_ADM_LOAD_PROGRAM, 0, CSD_SLOT_FIRST | NVME_CS_PROGRAM_TYPE_EBPF << 16, 256, 16, 0, 256, 0};
    EXPECT_EQ(csd_core_cs_decode_load_program(core, &c, &ctx, &op), NVME_CS_INVALID_PROGRAM_TYPE | CSD_STATUS_DNR);
}

}  // namespace

// A filter over 16-byte records (the size gathered a block at a time), JIT-compiled and
// interpreted, its output apart, exactly in place, starting inside the input after it (one
// record at a time) and too small (full in the middle of a block): SLM, DW0 and DW1 as a
// loop that keeps records one at a time has them.
TEST_F(Bpf, FilterBlocksAgreeWithOneAtATime)
{
    const Loaded l = load(example("threshold"), 16);
    ASSERT_EQ(l.status, 0) << status_text(l.status);
    const uint32_t n = 20000;
    const auto recs = records(n, 11);
    struct Place {
        uint64_t out, len;
    };
    for (const Place pl : {Place{1 << 20, 16 * n}, Place{0, 16 * n}, Place{16 * 3 + 4, 16 * n}, Place{1 << 20, 16 * 777 + 5}}) {
        for (int interpret : {0, 1}) {
            std::vector<uint8_t> want(2 << 20);
            std::memcpy(want.data(), recs.data(), recs.size());
            uint64_t written = 0;
            uint32_t hits = 0;
            for (uint32_t i = 0; i < n; i++) {
                int32_t key;
                std::memcpy(&key, &want[16 * i], 4);
                if (key <= 100) continue;
                hits++;
                if (written + 16 <= pl.len) std::memmove(&want[pl.out + written], &want[16 * i], 16);
                written += 16;
            }
            std::vector<uint8_t> before(2 << 20);
            std::memcpy(before.data(), recs.data(), recs.size());
            put(0, before);
            csd_core_set_bpf_interpreted(core, interpret);
            const auto r = run(l.dw0, 0, 16 * n, pl.out, pl.len, params(n, CSD_BPF_FILTER, {100}));
            csd_core_set_bpf_interpreted(core, 0);
            if (written > pl.len) {
                EXPECT_STATUS(r, CSD_STATUS_OUTPUT_OVERFLOW) << pl.out;
            } else {
                EXPECT_OK(r) << pl.out;
            }
            EXPECT_EQ(r.dw0, written) << pl.out;
            EXPECT_EQ(r.dw1, hits) << pl.out;
            ASSERT_EQ(get<uint8_t>(0, want.size()), want) << pl.out << " interpreted " << interpret;
        }
    }
}

namespace {

// Runs p over n records at rec in mode with u64 params (directly, as a compute unit
// does): the status, DW0, DW1, then the output bytes and the records as the program left them.
std::vector<uint64_t> run_direct(const csd::core::BpfProgram &p, std::vector<uint8_t> rec, uint32_t n, uint32_t mode,
                                 const std::vector<uint64_t> &prm, bool interpret)
{
    std::vector<uint8_t> out(mode == CSD_BPF_MAP ? 8 * n : rec.size(), 0xA5);
    const csd_span ranges[2] = {{rec.data(), rec.size()}, {out.data(), out.size()}};
    std::vector<uint8_t> params(16 + 8 * prm.size());
    const uint32_t hdr[4] = {n, mode, static_cast<uint32_t>(prm.size()), 0};
    std::memcpy(params.data(), hdr, 16);
    std::memcpy(params.data() + 16, prm.data(), 8 * prm.size());
    const int cancel = 0;
    const csd_program_call call{ranges, 2, params.data(), static_cast<uint32_t>(params.size()), &cancel};
    const csd_program_result r = p.run(call, interpret);
    std::vector<uint64_t> v{r.status, r.dw0, r.dw1};
    for (const auto *bytes : {&out, &rec}) {
        for (size_t i = 0; i + 8 <= bytes->size(); i += 8) {
            uint64_t w;
            std::memcpy(&w, bytes->data() + i, 8);
            v.push_back(w);
        }
    }
    return v;
}

// The records one call takes in such an Execute (specialised_batch over a whole call,
// ranges as run_direct's).
uint32_t batch_direct(const csd::core::BpfProgram &p, std::vector<uint8_t> rec, uint32_t n, uint32_t mode,
                      const std::vector<uint64_t> &prm)
{
    std::vector<uint8_t> out(mode == CSD_BPF_MAP ? 8 * n : rec.size());
    const csd_span ranges[2] = {{rec.data(), rec.size()}, {out.data(), out.size()}};
    std::vector<uint8_t> params(16 + 8 * prm.size());
    const uint32_t hdr[4] = {n, mode, static_cast<uint32_t>(prm.size()), 0};
    std::memcpy(params.data(), hdr, 16);
    if (!prm.empty()) std::memcpy(params.data() + 16, prm.data(), 8 * prm.size());
    const csd_program_call call{ranges, 2, params.data(), static_cast<uint32_t>(params.size()), nullptr};
    return p.specialised_batch(call);
}

}  // namespace

// A long Execute runs the program rewritten for its params and mode (bpf/specialise.h):
// csd_param(K) folded, "return a OP b" without a branch, the records batched into one call
// where no jump is left. The rewrite must answer as the program as loaded does (run by the
// interpreter here) for every comparison, width, operand kind and pair of answers, over
// records with the values where arithmetic comparisons go wrong (signs, overflow, equal),
// in filter, map and reduce modes, with record counts that leave a partial batch.
TEST_F(Bpf, SpecialisedProgramsAnswerAsLoaded)
{
    using namespace csd::test;
    const uint64_t edges[] = {0, 1, 2, 7, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 0x100000000, 0x7FFFFFFFFFFFFFFF,
                              0x8000000000000000, 0xFFFFFFFFFFFFFFFF, 0xFFFFFFFF80000000, 0x12345678ABCDEF01};
    std::mt19937_64 g(5);
    const uint32_t n = 16 * 11 + 5;  // records of 16 bytes: u64 a, u64 b
    std::vector<uint8_t> recs(16 * n);
    for (uint32_t i = 0; i < 2 * n; i++) {
        const uint64_t v = i % 3 == 2 ? g() : edges[g() % std::size(edges)];
        std::memcpy(&recs[8 * i], &v, 8);
    }
    for (uint32_t i = 0; i < n; i += 4) std::memcpy(&recs[16 * i + 8], &recs[16 * i], 8);  // a == b
    struct Answers {
        int32_t a, b;
    };
    int loaded = 0, checked = 0, batched = 0;
    for (const uint8_t cls : {0x05, 0x06})  // JMP, JMP32
    for (const uint8_t op : {0x10, 0x20, 0x30, 0x50, 0x60, 0x70, 0xA0, 0xB0, 0xC0, 0xD0})
    for (const bool by_reg : {true, false})
    for (const Answers ans : {Answers{1, 0}, Answers{0, 1}, Answers{5, -7}, Answers{-1, INT32_MIN}}) {
        // r2 = a; r3 = b (or r6 = r1; r1 = 0; call csd_param; r3 = r0; r2 = a);
        // r0 = A; if r2 OP r3/imm goto +1; r0 = B; exit
        const bool from_param = !by_reg && ans.a == 1;  // b compared through csd_param(0) instead
        std::vector<BpfInsn> code = {{0x79, 0x12, 0, 0}, {0x79, 0x13, 8, 0}};
        std::vector<std::pair<uint64_t, std::string>> calls;
        if (from_param) {
            code = {{0xbf, 0x16, 0, 0}, {0xb7, 0x01, 0, 0}};
            calls.emplace_back(8 * code.size(), "csd_param");
            code.push_back({0x85, 0x10, 0, -1});
            code.push_back({0xbf, 0x03, 0, 0});
            code.push_back({0x79, 0x62, 0, 0});
        }
        const int32_t imm = static_cast<int32_t>(edges[(op + cls) % std::size(edges)]);
        code.push_back({0xb7, 0x00, 0, ans.a});
        const bool x = by_reg || from_param;
        code.push_back({static_cast<uint8_t>(cls | op | (x ? 0x08 : 0)), static_cast<uint8_t>(x ? 0x32 : 0x02), 1, x ? 0 : imm});
        code.push_back({0xb7, 0x00, 0, ans.b});
        code.push_back({0x95, 0, 0, 0});
        const auto img = elf_program(bpf_code(code), "cmp", calls).bytes();
        std::unique_ptr<csd::core::BpfProgram> p;
        uint32_t fault;
        std::string why;
        const uint16_t st = csd::core::BpfProgram::load(img.data(), img.size(), 16, &p, &fault, &why);
        if (cls == 0x06 && st != 0) continue;  // DPDK 22.11's verifier knows no JMP32 (newer ones do)
        ASSERT_EQ(st, 0) << why;
        ASSERT_TRUE(p->jit_compiled());
        loaded++;
        p->set_specialise_min_records(1);
        p->set_rewrite_budget(false);  // every rewrite, however short the Executes
        for (const uint32_t mode : {CSD_BPF_FILTER, CSD_BPF_MAP, CSD_BPF_REDUCE}) {
            const std::vector<uint64_t> prm = {edges[(op >> 4) % std::size(edges)]};
            const auto want = run_direct(*p, recs, n, mode, prm, true);
            ASSERT_EQ(run_direct(*p, recs, n, mode, prm, false), want)
                << std::hex << "class " << int(cls) << " op " << int(op) << (by_reg ? " by register" : " by imm")
                << " answers " << ans.a << "/" << ans.b << " mode " << mode;
            const uint32_t batch = batch_direct(*p, recs, n, mode, prm);
            EXPECT_GT(batch, 1u);  // every one of these is rewritten and batched
            batched += batch > 1;
            checked++;
        }
    }
    EXPECT_GE(loaded, 10 * 2 * 4);  // JMP: all of them
    EXPECT_EQ(checked, 3 * loaded);
    EXPECT_EQ(batched, 3 * loaded);
}

// The examples, rewritten, against the program as loaded: threshold (a filter folded,
// branch-free and batched), project (csd_param and csd_index in map mode), histogram
// (branches left: rewritten, one record a call) and prefix (loads and branches, the same).
TEST_F(Bpf, SpecialisedExamplesAnswerAsLoaded)
{
    const uint32_t n = 4096 + 7;
    auto recs = records(n, 17);
    for (uint32_t i = 0; i < n; i += 5) std::memcpy(&recs[16 * i], "apple", 5);
    struct Case {
        const char *name;
        uint32_t mode;
        std::vector<uint64_t> params;
        uint32_t batch;  // what specialised_batch must say
    };
    const Case cases[] = {
        {"threshold", CSD_BPF_FILTER, {250}, csd::core::kBpfMaxBatch},
        {"threshold", CSD_BPF_REDUCE, {static_cast<uint64_t>(-3)}, csd::core::kBpfMaxBatch},
        {"threshold", CSD_BPF_MAP, {7}, csd::core::kBpfMaxBatch},
        {"project", CSD_BPF_MAP, {3}, csd::core::kBpfMaxBatch},
        {"histogram", CSD_BPF_REDUCE, {static_cast<uint64_t>(-100), 300}, 1},
        {"histogram", CSD_BPF_REDUCE, {0, 0, 1}, 1},
        {"prefix", CSD_BPF_FILTER, {'a' | 'p' << 8, 2}, 1},
    };
    for (const Case &c : cases) {
        const auto img = example(c.name);
        std::unique_ptr<csd::core::BpfProgram> p;
        uint32_t fault;
        std::string why;
        ASSERT_EQ(csd::core::BpfProgram::load(img.data(), img.size(), 16, &p, &fault, &why), 0) << why;
        const auto want = run_direct(*p, recs, n, c.mode, c.params, true);
        EXPECT_EQ(run_direct(*p, recs, n, c.mode, c.params, false), want) << c.name << " as loaded";
        p->set_specialise_min_records(1);
        p->set_rewrite_budget(false);  // every rewrite, however short the Executes
        EXPECT_EQ(run_direct(*p, recs, n, c.mode, c.params, false), want) << c.name << " rewritten";
        EXPECT_EQ(batch_direct(*p, recs, n, c.mode, c.params), c.batch) << c.name << " mode " << c.mode;
        p->set_specialise_min_records(n + 1);  // shorter Executes run it as loaded
        EXPECT_EQ(batch_direct(*p, recs, n, c.mode, c.params), 0u) << c.name;
    }
}
