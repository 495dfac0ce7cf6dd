// SPDX-License-Identifier: MIT
// bpf/run.cc - eBPF programs on DPDK's librte_bpf. The device reads the image itself
// (bpf/load_elf.cc: the one section csd, its calls resolved to the two helpers) and checks it
// (bpf/check.cc: no loop, every memory access inside the record or the stack), then gives
// DPDK that array of instructions and nothing else: DPDK's verifier checks it again (the
// device does not rely on it) and its x86-64 JIT compiles it. No EAL is needed.
#include "bpf.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>
#include <type_traits>

#include "load_elf.h"
#include "specialise.h"

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
thread_local uint64_t tl_index_base = 0;  // the Execute's first record's index (csd_bpf_params.index_base)

// The helpers, with the five-argument signature DPDK calls external functions with.
[[maybe_unused]] uint64_t helper_param(uint64_t i, uint64_t, uint64_t, uint64_t, uint64_t)
{
    return static_cast<uint32_t>(i) < tl_nr_params ? tl_params[static_cast<uint32_t>(i)] : 0;
}
[[maybe_unused]] uint64_t helper_index(uint64_t, uint64_t, uint64_t, uint64_t, uint64_t)
{
    return tl_index_base + tl_index;
}

constexpr uint64_t kBatch = 4096;  // records between cancellation checks (fewer for long programs)
constexpr size_t kSpecialisedKept = 4;  // rewrites kept per program (by mode and params)
// A rewrite is compiled only for programs DPDK's verifier walks quickly (about 0.1 ms at
// most: the rewrite is verified again, for each new set of params of a long Execute).
constexpr double kMaxSpecialiseSteps = 1 << 13;
// Rewrites take at most one part in kRewriteShare of the time long Executes of the program
// spent on their records (the first one is free): a guest that changes params every
// Execute pays a rewrite (a check and DPDK's verification and compilation, 0.1-1 ms, under
// the one lock DPDK's log needs) only now and then, and runs the program as loaded between
// (found by an outside review: 5 or more sets of params in turn made every Execute rewrite,
// 3-5 times as slow).
constexpr uint64_t kRewriteShare = 8;

uint64_t now_ns()
{
    return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                     std::chrono::steady_clock::now().time_since_epoch())
                                     .count());
}

// The first "pc: N" (or "pc:N") DPDK's verifier wrote, or CSD_IMAGE_FAULT_NONE.
[[maybe_unused]] uint32_t fault_pc(const std::string &log)
{
    const size_t at = log.find("pc:");
    if (at == std::string::npos) return CSD_IMAGE_FAULT_NONE;
    return static_cast<uint32_t>(std::strtoul(log.c_str() + at + 3, nullptr, 10));
}

// The verifier's reason: its log's lines, joined.
[[maybe_unused]] std::string reason(const std::string &log)
{
    std::string r;
    size_t start = 0;
    while (start < log.size()) {
        size_t end = log.find('\n', start);
        if (end == std::string::npos) end = log.size();
        const std::string line = log.substr(start, end - start);
        if (!line.empty()) r += (r.empty() ? "" : "; ") + line;
        start = end + 1;
    }
    return r.empty() ? "rejected by the verifier" : r;
}

[[maybe_unused]] std::mutex load_mu;  // DPDK's log stream is one global

}  // namespace

// A rewrite for one mode and set of params (bpf/specialise.h), compiled; fn null where the
// program as loaded runs instead.
struct BpfProgram::Specialised {
    uint32_t mode = 0;
    std::vector<uint64_t> params;  // what it was rewritten for
    rte_bpf *bpf = nullptr;
    uint64_t (*fn)(void *) = nullptr;
    uint32_t batch = 1;  // records a call of fn takes (map, batch > 1: over a scratch copy)
    ~Specialised();
};

bool BpfProgram::supported()
{
#ifdef CSD_HAVE_BPF
    return true;
#else
    return false;
#endif
}

#ifdef CSD_HAVE_BPF
static_assert(sizeof(ebpf_insn) == sizeof(uint64_t), "an eBPF instruction is 8 bytes");

namespace {

// DPDK's verifier and JIT over insns (and nothing else: DPDK copies them), for a program
// whose argument is arg_size bytes; its log in *log. Null if the verifier refused.
rte_bpf *runtime_load(const std::vector<uint64_t> &insns, uint32_t arg_size, std::string *log)
{
    // The runtime's table of external functions, in the order of kBpfHelpers (a relocated
    // call's imm is its index there).
    static_assert(kNrBpfHelpers == 2, "one entry below per helper");
    rte_bpf_xsym xsym[kNrBpfHelpers] = {};
    xsym[0].name = kBpfHelpers[0];  // csd_param(u32 i)
    xsym[0].type = RTE_BPF_XTYPE_FUNC;
    xsym[0].func.val = helper_param;
    xsym[0].func.nb_args = 1;
    xsym[0].func.args[0] = {RTE_BPF_ARG_RAW, sizeof(uint32_t), 0};
    xsym[0].func.ret = {RTE_BPF_ARG_RAW, sizeof(uint64_t), 0};
    xsym[1].name = kBpfHelpers[1];  // csd_index()
    xsym[1].type = RTE_BPF_XTYPE_FUNC;
    xsym[1].func.val = helper_index;
    xsym[1].func.nb_args = 0;
    xsym[1].func.ret = {RTE_BPF_ARG_RAW, sizeof(uint64_t), 0};
    rte_bpf_prm prm = {};
    prm.ins = reinterpret_cast<const ebpf_insn *>(insns.data());  // what was checked, and nothing else
    prm.nb_ins = static_cast<uint32_t>(insns.size());
    prm.xsym = xsym;
    prm.nb_xsym = kNrBpfHelpers;
    prm.prog_arg.type = RTE_BPF_ARG_PTR;
    prm.prog_arg.size = arg_size;

    std::lock_guard<std::mutex> g(load_mu);
    char *buf = nullptr;
    size_t len = 0;
    FILE *mem = open_memstream(&buf, &len);
    if (mem) rte_openlog_stream(mem);
    rte_bpf *bpf = rte_bpf_load(&prm);  // copies the instructions, verifies and compiles that copy
    if (mem) {
        rte_openlog_stream(nullptr);
        std::fclose(mem);
        log->assign(buf ? buf : "", len);
        std::free(buf);
    }
    return bpf;
}

}  // namespace

uint16_t BpfProgram::load(const uint8_t *image, size_t size, uint32_t record_size, std::unique_ptr<BpfProgram> *out,
                          uint32_t *fault, std::string *why)
{
    *fault = CSD_IMAGE_FAULT_NONE;
    std::unique_ptr<BpfProgram> p(new BpfProgram);
    p->record_size_ = record_size;
    BpfCode code;
    if (!bpf_read_image(image, size, record_size, &code, fault, why)) return CSD_STATUS_INVALID_PROGRAM_IMAGE | CSD_STATUS_DNR;
    p->name_ = std::move(code.name);
    p->insns_ = std::move(code.insns);
    const uint64_t insns = p->insns_.size();
    p->records_per_check_ = static_cast<uint32_t>(std::clamp<uint64_t>(kCancelInstructions / insns, 1, kBatch));

    p->verifier_steps_ = bpf_verifier_steps(p->insns_);
    std::string log;
    p->bpf_ = runtime_load(p->insns_, record_size, &log);
    if (!p->bpf_) {
        *fault = fault_pc(log);
        *why = reason(log);
        return CSD_STATUS_INVALID_PROGRAM_IMAGE | CSD_STATUS_DNR;
    }
    rte_bpf_jit jit = {};
    if (!bpf_jit_unsafe(p->insns_) && rte_bpf_get_jit(p->bpf_, &jit) == 0 && jit.func) {
        p->jit_ = jit.func;
    }
    *out = std::move(p);
    return CSD_STATUS_SUCCESS;
}

BpfProgram::~BpfProgram()
{
    if (bpf_) rte_bpf_destroy(bpf_);
}

BpfProgram::Specialised::~Specialised()
{
    if (bpf) rte_bpf_destroy(bpf);
}

std::shared_ptr<const BpfProgram::Specialised> BpfProgram::specialised(uint32_t mode, const uint64_t *params,
                                                                       uint32_t nr_params) const
{
    std::vector<uint64_t> key(params, params + nr_params);
    {
        std::lock_guard<std::mutex> g(spec_mu_);
        for (size_t i = 0; i < spec_.size(); i++) {
            if (spec_[i]->mode != mode || spec_[i]->params != key) continue;
            std::shared_ptr<const Specialised> s = spec_[i];
            spec_.erase(spec_.begin() + static_cast<std::ptrdiff_t>(i));
            spec_.insert(spec_.begin(), s);
            return s;
        }
    }
    // Over its share of the time: the program as loaded, nothing kept (a later Execute with
    // these params may rewrite it once the share allows).
    const uint64_t spent = rewrite_ns_.load(std::memory_order_relaxed);
    if (rewrite_budget_ && spent > 0 && spent > long_run_ns_.load(std::memory_order_relaxed) / kRewriteShare) {
        return nullptr;
    }
    const uint64_t t0 = now_ns();
    // The rewrite is checked as an image's instructions are (over the batch's bytes), and
    // exactly those instructions go to DPDK: the device relies on its checks, not on the
    // rewrite. Anything refused leaves the program as loaded (kept: not tried again).
    auto s = std::make_shared<Specialised>();
    s->mode = mode;
    s->params = std::move(key);
    BpfSpecialised r;
    uint32_t fault;
    std::string why, log;
    const bool rewritten = verifier_steps_ <= kMaxSpecialiseSteps &&
                           bpf_specialise(insns_, params, nr_params, mode, record_size_, &r);
    if (rewritten) bpf_normalise(&r.insns);  // as an image's instructions are, before the check
    if (rewritten && bpf_check_instructions(r.insns, r.arg_size, &fault, &why) && !bpf_jit_unsafe(r.insns)) {
        s->bpf = runtime_load(r.insns, r.arg_size, &log);
        rte_bpf_jit jit = {};
        if (s->bpf && rte_bpf_get_jit(s->bpf, &jit) == 0 && jit.func) {
            s->fn = jit.func;
            s->batch = r.batch;
        }
    }
    rewrites_.fetch_add(1, std::memory_order_relaxed);
    rewrite_ns_.fetch_add(std::max<uint64_t>(now_ns() - t0, 1), std::memory_order_relaxed);
    std::lock_guard<std::mutex> g(spec_mu_);
    spec_.insert(spec_.begin(), s);
    if (spec_.size() > kSpecialisedKept) spec_.pop_back();
    return s;
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
BpfProgram::Specialised::~Specialised() = default;

std::shared_ptr<const BpfProgram::Specialised> BpfProgram::specialised(uint32_t, const uint64_t *, uint32_t) const
{
    return nullptr;  // never reached: nothing loads
}

static uint64_t rte_bpf_exec(const rte_bpf *, void *) { return 0; }  // never reached: nothing loads
#endif

ExecResult BpfProgram::check(const ProgramCall &call, ProgramWork *work) const
{
    csd_bpf_params h;
    uint64_t params[CSD_BPF_MAX_PARAMS];
    return read_call(call, &h, params, work);
}

ExecResult BpfProgram::read_call(const ProgramCall &call, csd_bpf_params *hp, uint64_t *params, ProgramWork *work) const
{
    csd_bpf_params &h = *hp;
    if (call.param_len < sizeof(h)) return fail(CSD_STATUS_INVALID_PARAMETERS);
    std::memcpy(&h, call.params, sizeof(h));
    if (h.mode != CSD_BPF_CHASE && call.nr_ranges != 2) return fail(CSD_STATUS_INVALID_PARAMETERS);
    if (h.mode > CSD_BPF_CHASE || (h.mode == CSD_BPF_CHASE && h.index_base != 0) || h.nr_params > CSD_BPF_MAX_PARAMS ||
        call.param_len != sizeof(h) + 8 * h.nr_params) {
        return fail(CSD_STATUS_INVALID_PARAMETERS);
    }
    std::memcpy(params, call.params + sizeof(h), 8 * h.nr_params);
    if (h.mode == CSD_BPF_CHASE) {
        // one range (out), the start LBA in params[0], a hop limit the device allows
        if (call.nr_ranges != 1 || h.nr_params < 1 || h.record_count < 1 || h.record_count > CSD_BPF_MAX_HOPS) {
            return fail(CSD_STATUS_INVALID_PARAMETERS);
        }
        if (call.ranges[0].len < sizeof(csd_bpf_chase_result)) {
            return fail(CSD_STATUS_OUTPUT_OVERFLOW, 0, sizeof(csd_bpf_chase_result));
        }
        if (work) work->records = 1;  // the first hop's; the others as they happen (csd_exec_model_finish)
        return ok();
    }
    if (call.ranges[0].len < bytes_of(h.record_count, record_size_)) return fail(CSD_STATUS_INVALID_PARAMETERS);
    const uint64_t map_bytes = uint64_t{h.record_count} * 8;
    if (h.mode == CSD_BPF_MAP && call.ranges[1].len < map_bytes) {
        return fail(CSD_STATUS_OUTPUT_OVERFLOW, map_bytes > UINT32_MAX ? UINT32_MAX : static_cast<uint32_t>(map_bytes));
    }
    if (work) work->records = h.record_count;
    return ok();
}

uint64_t BpfProgram::hop(const ProgramCall &call, const uint8_t *record, uint32_t hop, bool interpret) const
{
    csd_bpf_params h;
    std::memcpy(&h, call.params, sizeof(h));
    std::memcpy(tl_params, call.params + sizeof(h), 8 * h.nr_params);
    tl_nr_params = h.nr_params;
    tl_index_base = 0;
    tl_index = hop;
    void *rec = const_cast<uint8_t *>(record);  // a program may write its record: the block is the job's copy
    return (jit_ && !interpret) ? jit_(rec) : rte_bpf_exec(bpf_, rec);
}

std::shared_ptr<const BpfProgram::Specialised> BpfProgram::plan(const ProgramCall &call, const csd_bpf_params &h,
                                                                const uint64_t *params, bool interpret) const
{
    if (!jit_ || interpret || h.mode > CSD_BPF_REDUCE || h.record_count < specialise_min_records_) return nullptr;
    std::shared_ptr<const Specialised> s = specialised(h.mode, params, h.nr_params);
    if (!s || !s->fn) return nullptr;
    const Span &in = call.ranges[0], &out = call.ranges[1];
    // A filter whose output lands ahead of the records it has read (inside the input, after
    // its first byte) must run each record after the outputs before it; a map whose answers
    // share bytes with its records the same (a batch reads its records before it answers):
    // one call a record, as loaded.
    if (s->batch > 1 && h.mode == CSD_BPF_FILTER && !output_trails_input(in, out)) return nullptr;
    if (s->batch > 1 && h.mode == CSD_BPF_MAP && out.data < in.data + in.len && in.data < out.data + out.len) return nullptr;
    return s;
}

uint32_t BpfProgram::specialised_batch(const ProgramCall &call) const
{
    csd_bpf_params h;
    uint64_t params[CSD_BPF_MAX_PARAMS];
    if (read_call(call, &h, params, nullptr).status || h.mode == CSD_BPF_CHASE) return 0;
    const auto s = plan(call, h, params, false);
    return s ? s->batch : 0;
}

ExecResult BpfProgram::run(const ProgramCall &call, bool interpret) const
{
    csd_bpf_params h;
    uint64_t params[CSD_BPF_MAX_PARAMS];
    if (const ExecResult r = read_call(call, &h, params, nullptr); r.status) return r;
    if (h.mode == CSD_BPF_CHASE) return fail(CSD_STATUS_INTERNAL_ERROR);  // the core walks a chase (execute.cc)
    const Span &in = call.ranges[0], &out = call.ranges[1];
    const uint64_t map_bytes = uint64_t{h.record_count} * 8;
    const uint32_t map_dw0 = map_bytes > UINT32_MAX ? UINT32_MAX : static_cast<uint32_t>(map_bytes);
    std::memcpy(tl_params, params, 8 * h.nr_params);
    tl_nr_params = h.nr_params;
    tl_index_base = h.index_base;
    // A long Execute runs the program rewritten for its params and mode (once per set of
    // them; see bpf/specialise.h), its records in batches where the rewrite allows.
    const bool long_run = jit_ && !interpret && h.record_count >= specialise_min_records_;
    std::shared_ptr<const Specialised> spec = plan(call, h, params, interpret);
    const uint64_t t0 = long_run ? now_ns() : 0;
    uint64_t written = 0, sum = 0;
    uint32_t hits = 0;
    // One loop per mode, engine and (for filter) record size, so the per-record path has no
    // branches of its own and a kept record of 8, 16 or 32 bytes is copied inline (memmove
    // of a constant size: loads, then stores) rather than through a library call. Records
    // [begin, end), in order: a batched engine keeps its answer between records.
    const bool blocks_ok = output_trails_input(in, out);
    auto records = [&](auto call_program, auto record_bytes, uint32_t begin, uint32_t end) -> bool {
        constexpr uint32_t kFixed = decltype(record_bytes)::value;
        const uint32_t rs = kFixed ? kFixed : record_size_;
        const uint32_t batch = records_per_check_;
        for (uint32_t first = begin; first < end; first += batch) {
            if (cancelled(call)) return false;
            const uint32_t last = end - first < batch ? end : first + batch;
            uint8_t *rec = in.data + uint64_t{first} * rs;
            switch (h.mode) {
            case CSD_BPF_FILTER: {
                uint32_t from = first;  // what the blocks leave goes one by one
                if constexpr (kFixed != 0) {
                    // Small records, output behind the input: gathered a block at a time on
                    // the stack (no branch on the program's answer), where the block fits.
                    constexpr uint32_t kBlock = 4096 / kFixed;
                    alignas(64) uint8_t buf[kBlock * kFixed];
                    uint32_t i = first;
                    for (; blocks_ok && i < last; i += kBlock) {
                        const uint32_t stop = last - i < kBlock ? last : i + kBlock;
                        if (written + uint64_t{stop - i} * kFixed > out.len) break;
                        const uint32_t n = gather_matches<kFixed, false>(rec, kFixed, i, stop, false, buf,
                                                                         [&](uint32_t k, const uint8_t *r) {
                                                                             tl_index = k;
                                                                             return call_program(const_cast<uint8_t *>(r)) != 0;
                                                                         });
                        std::memcpy(out.data + written, buf, uint64_t{n} * kFixed);
                        written += uint64_t{n} * kFixed;
                        hits += n;
                        rec += uint64_t{stop - i} * kFixed;
                    }
                    from = i;
                }
                for (uint32_t i = from; i < last; i++, rec += rs) {
                    tl_index = i;
                    if (!call_program(rec)) continue;
                    hits++;
                    if (written + rs <= out.len) std::memmove(out.data + written, rec, rs);
                    written += rs;
                }
                break;
            }
            case CSD_BPF_MAP:
                for (uint32_t i = first; i < last; i++, rec += rs) {
                    tl_index = i;
                    const uint64_t r = call_program(rec);
                    std::memcpy(out.data + uint64_t{i} * 8, &r, 8);
                }
                break;
            default:
                for (uint32_t i = first; i < last; i++, rec += rs) {
                    tl_index = i;
                    sum += call_program(rec);  // wraps, as the spec says
                }
                break;
            }
        }
        return true;
    };
    auto by_size = [&](auto call_program, uint32_t begin, uint32_t end) {
        if (h.mode == CSD_BPF_FILTER) {
            switch (record_size_) {
            case 8: return records(call_program, std::integral_constant<uint32_t, 8>(), begin, end);
            case 16: return records(call_program, std::integral_constant<uint32_t, 16>(), begin, end);
            case 32: return records(call_program, std::integral_constant<uint32_t, 32>(), begin, end);
            default: break;
            }
        }
        return records(call_program, std::integral_constant<uint32_t, 0>(), begin, end);
    };
    auto per_record = [](uint64_t (*f)(void *)) { return [f](uint8_t *rec) { return f(rec); }; };
    bool done;
    if (spec && spec->batch > 1 && h.mode != CSD_BPF_FILTER) {
        // Map and reduce: one call per batch, straight from this loop (csd_index() the
        // batch's first record). Map runs it over a copy of its records (the scratch:
        // records, then the answers the call stores) and copies the answers out; reduce adds
        // up the calls' sums. The records a whole batch does not cover run one call each,
        // as loaded.
        const uint32_t nb = spec->batch, rs = record_size_;
        const uint32_t whole = h.record_count / nb * nb;
        const uint64_t step = uint64_t{std::max<uint32_t>(records_per_check_ / nb, 1)} * nb;
        const bool map = h.mode == CSD_BPF_MAP;
        auto *const f = spec->fn;
        alignas(64) uint8_t scratch[kBpfMaxScratch];
        done = true;
        for (uint64_t first = 0; first < whole; first += step) {
            if (cancelled(call)) {
                done = false;
                break;
            }
            const uint64_t last = std::min<uint64_t>(whole, first + step);
            if (map) {
                // the copies of a full batch of 8-, 16- or 32-byte records inline (of a
                // constant size), others through memcpy
                auto copies = [&](auto batch_bytes) {
                    constexpr size_t kBytes = decltype(batch_bytes)::value;
                    const size_t bytes = kBytes ? kBytes : size_t{nb} * rs, answers = kBytes ? kBpfMaxBatch * 8 : size_t{nb} * 8;
                    for (uint64_t i = first; i < last; i += nb) {
                        std::memcpy(scratch, in.data + i * rs, bytes);
                        tl_index = i;
                        f(scratch);
                        std::memcpy(out.data + i * 8, scratch + bytes, answers);
                    }
                };
                if (nb == kBpfMaxBatch && rs == 8) copies(std::integral_constant<size_t, kBpfMaxBatch * 8>());
                else if (nb == kBpfMaxBatch && rs == 16) copies(std::integral_constant<size_t, kBpfMaxBatch * 16>());
                else if (nb == kBpfMaxBatch && rs == 32) copies(std::integral_constant<size_t, kBpfMaxBatch * 32>());
                else copies(std::integral_constant<size_t, 0>());
            } else {
                for (uint64_t i = first; i < last; i += nb) {
                    tl_index = i;
                    sum += f(in.data + i * rs);  // wraps, as the spec says
                }
            }
        }
        done = done && by_size(per_record(jit_), whole, h.record_count);
    } else if (spec && spec->batch > 1) {
        // Filter: one call per batch of records (at the batch's first, in order), its answer
        // handed out a bit a record to the filter's loop (which gathers the kept records).
        // The records a whole batch does not cover run one call each, as loaded.
        const uint32_t whole = h.record_count / spec->batch * spec->batch;
        auto batched = [f = spec->fn, n = spec->batch, left = uint32_t{0}, answer = uint64_t{0}](uint8_t *rec) mutable {
            if (left == 0) answer = f(rec), left = n;
            left--;
            const uint64_t r = answer & 1;
            answer >>= 1;
            return r;
        };
        done = by_size(std::ref(batched), 0, whole) && by_size(per_record(jit_), whole, h.record_count);
    } else if (jit_ && !interpret) {
        done = by_size(per_record(spec ? spec->fn : jit_), 0, h.record_count);
    } else {
        done = by_size([b = bpf_](uint8_t *rec) { return rte_bpf_exec(b, rec); }, 0, h.record_count);
    }
    if (long_run) long_run_ns_.fetch_add(now_ns() - t0, std::memory_order_relaxed);
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
