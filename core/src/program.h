/* SPDX-License-Identifier: MIT */
// program.h - what a device-defined program sees: SLM spans, its parameters, and helpers
// for overflow-safe sizes and element views over byte ranges of any alignment.
#pragma once

#include <cstdint>
#include <cstring>
#include <limits>
#include <utility>
#include <vector>

#include "csd_core_steps.h"

#include "csd_plugin.h"
#include "csd_spec.h"

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the core assumes a little-endian host");

namespace csd::core {

// The built-in programs are written against the public plug-in interface (csd_plugin.h):
// a byte range of SLM already checked to lie inside it; the arguments of one Execute (its
// ranges in descriptor order, its parameter bytes, the cancel flag); what a program returns
// (an NVMe status value and completion Dwords 0 and 1).
using Span = csd_span;
using ProgramCall = csd_program_call;
using ExecResult = csd_program_result;

// Whether the host asked the running program to stop (polled in long loops).
inline bool cancelled(const int *cancel) { return cancel && __atomic_load_n(cancel, __ATOMIC_RELAXED) != 0; }
inline bool cancelled(const ProgramCall &call) { return cancelled(call.cancel); }

// Work between two cancellation checks: 8 MiB of streaming (a few ms at worst on a slow
// core) or 1 GFLOP of gemm (a few milliseconds here), so that a reset never waits long for a running program.
constexpr uint64_t kCancelBytes = 8ull << 20;
constexpr uint64_t kCancelFlops = 1ull << 30;
// ... or 2^20 eBPF instructions (about 1.5 ms interpreted here; a record costs at most
// the program's length, as the verifier refuses loops).
constexpr uint64_t kCancelInstructions = 1ull << 20;

// Cuts a program's work into pieces between cancellation checks, whatever its shape (a
// row may be as long as SLM): each next(n) checks the flag once `every` units have been
// handed out since the last check (and before the first piece), and returns how many of
// the n units still to do may run now (at least 1), or 0 once the host asked to stop.
class CancelPoints {
public:
    CancelPoints(const ProgramCall &call, uint64_t every) : cancel_(call.cancel), every_(every) {}
    uint64_t next(uint64_t n)
    {
        if (left_ == 0) {
            if (cancelled(cancel_)) return 0;
            left_ = every_;
        }
        const uint64_t piece = n < left_ ? n : left_;
        left_ -= piece;
        return piece;
    }

private:
    const int *cancel_;
    uint64_t every_;
    uint64_t left_ = 0;
};

using ProgramFn = ExecResult (*)(const ProgramCall &);

// The work a program's checks accepted, for the timing model: floating-point operations
// (gemm, conv2d; 0 for a streaming program) and records (a downloaded program).
struct ProgramWork {
    double flops = 0;
    uint64_t records = 0;
};

// A program's checks, the ones its run makes before any work (parameters, sizes against
// ranges): the status the run would refuse it with at once, or Success with *work (when
// not null) filled from the checked parameters. The run calls the same checks first.
using CheckFn = ExecResult (*)(const ProgramCall &, ProgramWork *work);

// What a media program (gather, embedding_bag) reads from the NVM namespace its Execute
// names before it runs (programs/media.cc): the distinct block runs its plan asked for,
// staged one after another in device memory of the job's own, and what the plan copied
// out of SLM (the entries, the indices) so that the run uses exactly what was checked.
struct MediaPlan {
    csd_ctx ns{};                      // the namespace (csd_exec_set_namespace)
    bool have_ns = false;
    uint16_t status = CSD_STATUS_SUCCESS;  // the plan's or a read's error (with DNR)
    std::vector<csd_extent> extents;   // the runs, in LBA order, each into stage
    std::vector<uint64_t> stage_off;   // where each run starts in stage
    std::vector<uint8_t> stage;        // allocate()d when the reads are issued
    bool issued = false;               // csd_exec_media handed the extents out
    std::vector<csd_gather_entry> entries;  // gather
    std::vector<uint64_t> indices;          // embedding_bag (checked < num_rows)

    // Adds the LBAs [first, last] to the blocks to read (runs() merges them).
    void want(uint64_t first, uint64_t last) { wanted_.push_back({first, last}); }
    // Merges the wanted blocks into sorted distinct runs and sizes stage; Invalid
    // Parameters past CSD_MEDIA_MAX_STAGE bytes.
    uint16_t runs();
    // The staged byte at namespace byte pos (inside a run the plan asked for).
    const uint8_t *at(uint64_t pos) const;
    // Gives the runs their buffers (when the reads are issued, not while the job waits).
    void allocate();
    // Bytes of media the runs read (the timing model's).
    uint64_t bytes() const { return staged_bytes_; }
    // Host memory the plan holds (its copies of entries and indices, its runs).
    uint64_t held_bytes() const
    {
        auto bytes = [](const auto &v) { return uint64_t{v.capacity()} * sizeof v[0]; };
        return bytes(extents) + bytes(stage_off) + bytes(stage) + bytes(entries) + bytes(indices) + bytes(wanted_);
    }

private:
    std::vector<std::pair<uint64_t, uint64_t>> wanted_;
    uint64_t staged_bytes_ = 0;
};

// A media program's plan: checks its parameters and what it reads against the namespace
// (LBA Out of Range for a byte past it) and says which blocks to read (plan->want).
using MediaPlanFn = uint16_t (*)(const ProgramCall &call, MediaPlan *plan);
// A media program's run once its blocks are staged.
using MediaRunFn = ExecResult (*)(const ProgramCall &call, const MediaPlan &plan);

// One device-defined program (its name is csd_program_name(id), from the wire format).
// zero_length_range is the index of the range that may be empty (conv2d's bias), or -1.
// A media program has plan and media_run (and no run).
struct ProgramInfo {
    uint16_t id;
    ProgramFn run;
    CheckFn check;
    int zero_length_range;
    MediaPlanFn plan = nullptr;
    MediaRunFn media_run = nullptr;
};

// The device-defined program with this id, or nullptr.
const ProgramInfo *find_program(uint16_t id);

// All device-defined programs, in id order.
const ProgramInfo *program_table(size_t *count);

// Success with the given completion Dwords.
inline ExecResult ok(uint32_t dw0 = 0, uint32_t dw1 = 0) { return {CSD_STATUS_SUCCESS, dw0, dw1}; }

// An error status (Do Not Retry set), with optional completion Dwords.
inline ExecResult fail(uint16_t status, uint32_t dw0 = 0, uint32_t dw1 = 0)
{
    return {static_cast<uint16_t>(status | CSD_STATUS_DNR), dw0, dw1};
}

// Copies the parameters into P when param_len is exactly sizeof(P).
template <class P>
bool read_params(const ProgramCall &call, P *out)
{
    if (call.param_len != sizeof(P)) {
        return false;
    }
    std::memcpy(out, call.params, sizeof(P));
    return true;
}

// a * b (* c) in 64 bits; false on overflow.
inline bool mul_ok(uint64_t a, uint64_t b, uint64_t *out) { return !__builtin_mul_overflow(a, b, out); }
inline bool mul_ok(uint64_t a, uint64_t b, uint64_t c, uint64_t *out)
{
    uint64_t t;
    return mul_ok(a, b, &t) && mul_ok(t, c, out);
}

// Bytes that `count` elements of `elem` bytes take, or UINT64_MAX on overflow (which no
// SLM range can hold, so size checks fail naturally).
inline uint64_t bytes_of(uint64_t count, uint64_t elem)
{
    uint64_t n;
    return mul_ok(count, elem, &n) ? n : std::numeric_limits<uint64_t>::max();
}

// Read-only typed view of the first n elements of a span; copies into aligned memory
// when the span is not aligned for T.
template <class T>
class InView {
public:
    InView(const Span &s, size_t n)
    {
        if (reinterpret_cast<uintptr_t>(s.data) % alignof(T) == 0) {
            ptr_ = reinterpret_cast<const T *>(s.data);
        } else {
            copy_.resize(n);
            std::memcpy(copy_.data(), s.data, n * sizeof(T));
            ptr_ = copy_.data();
        }
    }
    const T *get() const { return ptr_; }
    const T &operator[](size_t i) const { return ptr_[i]; }

private:
    const T *ptr_;
    std::vector<T> copy_;
};

// Writable typed view of the first n elements of a span; when the span is not aligned
// for T it works on an aligned copy (initialised from the span, so T may also be read)
// that commit() writes back.
template <class T>
class OutView {
public:
    OutView(const Span &s, size_t n) : dst_(s.data), n_(n)
    {
        if (reinterpret_cast<uintptr_t>(s.data) % alignof(T) == 0) {
            ptr_ = reinterpret_cast<T *>(s.data);
        } else {
            copy_.resize(n);
            std::memcpy(copy_.data(), s.data, n * sizeof(T));
            ptr_ = copy_.data();
        }
    }
    T *get() { return ptr_; }
    T &operator[](size_t i) { return ptr_[i]; }
    void commit()
    {
        if (!copy_.empty()) {
            std::memcpy(dst_, copy_.data(), n_ * sizeof(T));
        }
    }

private:
    uint8_t *dst_;
    size_t n_;
    T *ptr_;
    std::vector<T> copy_;
};

// Half-precision conversions (programs/convert.cc): round to nearest even, NaN kept.
uint16_t f32_to_f16(float f);
float f16_to_f32(uint16_t h);
uint16_t f32_to_bf16(float f);
float bf16_to_f32(uint16_t b);

// Gathers, of the records [i0, i1) (rs bytes apart from rec, the first one record i0),
// those for which match(i, record) is true into buf, in order: each one's u32 index
// (Indices) or its RS bytes; returns how many. Dense: every record lands in the next slot,
// which advances on a match (no branch to mispredict); sparse: a branch, cheaper when
// matches are rare or nearly all (and it writes only the matches, one at a time: buf may
// be the output itself). buf holds i1 - i0 entries.
template <uint32_t RS, bool Indices, class Match>
uint32_t gather_matches(const uint8_t *rec, uint32_t rs, uint32_t i0, uint32_t i1, bool sparse, uint8_t *buf,
                        const Match &match)
{
    constexpr uint32_t kUnit = Indices ? 4 : RS;
    uint32_t n = 0;
    auto keep = [&](uint32_t i, const uint8_t *r) {
        if constexpr (Indices) {
            std::memcpy(buf + 4 * n, &i, 4);
        } else {
            std::memmove(buf + kUnit * n, r, RS);  // buf may be the output, over records already read
        }
    };
    if (sparse) {
        for (uint32_t i = i0; i < i1; i++, rec += rs) {
            if (match(i, rec)) keep(i, rec), n++;
        }
    } else {
        for (uint32_t i = i0; i < i1; i++, rec += rs) {
            const bool m = match(i, rec);  // first: a downloaded program may write its record
            keep(i, rec);
            n += m ? 1 : 0;
        }
    }
    return n;
}

// Whether a filter's output (records or indices, each no larger than a record, written in
// order) may be gathered a block at a time: unless it starts inside the input after the
// input's first byte, its writes land only on records already read, as writes made one
// record at a time would.
inline bool output_trails_input(const Span &in, const Span &out)
{
    return !(out.data > in.data && out.data < in.data + in.len);
}

// Each program's entry point and its checks (programs/<name>.cc).
ExecResult program_copy(const ProgramCall &call);
ExecResult check_copy(const ProgramCall &call, ProgramWork *work);
ExecResult program_gemm(const ProgramCall &call);
ExecResult check_gemm(const ProgramCall &call, ProgramWork *work);
ExecResult program_elementwise(const ProgramCall &call);
ExecResult check_elementwise(const ProgramCall &call, ProgramWork *work);
ExecResult program_softmax(const ProgramCall &call);
ExecResult check_softmax(const ProgramCall &call, ProgramWork *work);
ExecResult program_reduce(const ProgramCall &call);
ExecResult check_reduce(const ProgramCall &call, ProgramWork *work);
ExecResult program_filter(const ProgramCall &call);
ExecResult check_filter(const ProgramCall &call, ProgramWork *work);
ExecResult program_convert(const ProgramCall &call);
ExecResult check_convert(const ProgramCall &call, ProgramWork *work);
ExecResult program_checksum(const ProgramCall &call);
ExecResult check_checksum(const ProgramCall &call, ProgramWork *work);
ExecResult program_conv2d(const ProgramCall &call);
ExecResult check_conv2d(const ProgramCall &call, ProgramWork *work);
ExecResult program_decompress(const ProgramCall &call);
ExecResult check_decompress(const ProgramCall &call, ProgramWork *work);
ExecResult check_gather(const ProgramCall &call, ProgramWork *work);
uint16_t plan_gather(const ProgramCall &call, MediaPlan *plan);
ExecResult run_gather(const ProgramCall &call, const MediaPlan &plan);
ExecResult check_embedding_bag(const ProgramCall &call, ProgramWork *work);
uint16_t plan_embedding_bag(const ProgramCall &call, MediaPlan *plan);
ExecResult run_embedding_bag(const ProgramCall &call, const MediaPlan &plan);

}  // namespace csd::core
