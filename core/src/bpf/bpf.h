/* SPDX-License-Identifier: MIT */
// bpf/bpf.h - the one header through which the rest of the core uses downloadable eBPF
// programs (spec §8). One file per phase behind it: load_elf.cc reads the ELF image,
// check.cc proves every memory access stays in the record or the stack, run.cc hands the
// checked instructions to DPDK's verifier and JIT and calls them per record,
// specialise.cc rewrites a program for a long Execute's parameters and mode, slots.cc
// keeps the download slots. The device reads the ELF itself (DPDK's rte_bpf_elf_load
// would too) so that the bytes it checks are exactly the bytes the runtime is given: one
// section named csd, its calls resolved to the two helpers, nothing else of the image.
//
// BpfProgram: an ELF image read and checked by the device (load_elf.h), the instructions
// it checked then verified by DPDK's verifier (no loops, no access outside the record,
// known helpers only), JIT-compiled, and called once per record by a loop the device
// drives; for a long Execute, rewritten for its parameters and mode first (specialise.h),
// checked and compiled again, and called once per batch of records.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "../program.h"  // the Program interface of every kind of program

struct rte_bpf;

namespace csd::core {

class BpfProgram {
public:
    // Whether this build has the eBPF runtime (DPDK's librte_bpf).
    static bool supported();
    // Verifies and compiles an image for records of record_size bytes. On failure returns
    // Invalid Program Image with *fault = the offending instruction (or
    // CSD_IMAGE_FAULT_NONE when the ELF itself is malformed) and *why = the reason.
    static uint16_t load(const uint8_t *image, size_t size, uint32_t record_size,
                         std::unique_ptr<BpfProgram> *out, uint32_t *fault, std::string *why);
    ~BpfProgram();
    BpfProgram(const BpfProgram &) = delete;
    BpfProgram &operator=(const BpfProgram &) = delete;

    // Runs an Execute (ranges records, out; params csd_bpf_params + u64 params) in
    // batches, honouring cancellation between them. interpret: skip the JIT.
    ExecResult run(const ProgramCall &call, bool interpret) const;
    // The checks run makes before the first record (ranges, parameters, a record count
    // the input holds, a map's output): its refusal, or Success with work->records (when
    // work is not null) the records it will run, at most what the input range holds.
    ExecResult check(const ProgramCall &call, ProgramWork *work) const;
    // One hop of a chase (mode 3, checked by check): the program called once on record
    // (record_size() bytes, the block just read) with the Execute's params and csd_index()
    // = hop; its answer. Bounded work (no loops): cheap enough for a main loop.
    uint64_t hop(const ProgramCall &call, const uint8_t *record, uint32_t hop, bool interpret) const;

    const std::string &name() const { return name_; }      // the ELF's entry symbol
    // The instructions the device checked and gave the runtime (section csd, its calls
    // resolved), 8 bytes each.
    const std::vector<uint64_t> &instructions() const { return insns_; }
    // The runtime's own program (DPDK's), for tests that look at what it loaded.
    const rte_bpf *runtime() const { return bpf_; }
    uint32_t record_size() const { return record_size_; }
    bool jit_compiled() const { return jit_ != nullptr; }
    // Records run between two cancellation checks: 4096, fewer for a long program, so
    // that no more than about kCancelInstructions run between them.
    uint32_t records_per_check() const { return records_per_check_; }
    // The records one call of the compiled code takes in an Execute of call (a whole call,
    // read and checked as run reads it): 0 when it runs the program as loaded, one call a
    // record (or check refuses it, or it is a chase); else the batch of the program
    // rewritten for its parameters (1: rewritten, one call a record).
    uint32_t specialised_batch(const ProgramCall &call) const;
    // Executes of fewer records than this run the program as loaded (the rewrite costs a
    // check and a compilation, tens of microseconds); tests lower it.
    void set_specialise_min_records(uint32_t n) { specialise_min_records_ = n; }
    // Whether rewrites are held to their share of the long Executes' time (on: a guest
    // whose params change every Execute runs the program as loaded, but for one rewrite in
    // kRewriteShare of that time); tests that compare every rewrite turn it off.
    void set_rewrite_budget(bool on) { rewrite_budget_ = on; }
    // Rewrites compiled (or refused by the checks) so far.
    uint64_t rewrites() const { return rewrites_.load(std::memory_order_relaxed); }

private:
    struct Specialised;  // a rewrite for one mode and set of params, compiled (or refused)
    BpfProgram() = default;
    std::shared_ptr<const Specialised> specialised(uint32_t mode, const uint64_t *params, uint32_t nr_params) const;
    // The one reader of an Execute's params (check, run and specialised_batch use it): the
    // header in *h, the u64 params in params[0..h->nr_params), and check's answer.
    ExecResult read_call(const ProgramCall &call, csd_bpf_params *h, uint64_t *params, ProgramWork *work) const;
    // The rewrite run uses for a checked call (long, JIT, its batching allowed by where its
    // ranges lie), or null: the program as loaded.
    std::shared_ptr<const Specialised> plan(const ProgramCall &call, const csd_bpf_params &h, const uint64_t *params,
                                            bool interpret) const;
    rte_bpf *bpf_ = nullptr;
    uint64_t (*jit_)(void *) = nullptr;
    uint32_t record_size_ = 0;
    uint32_t records_per_check_ = 1;
    std::string name_;
    std::vector<uint64_t> insns_;
    uint32_t specialise_min_records_ = 16384;
    // What DPDK's verifier walks for insns_: a rewrite is tried only where this is small. (A
    // rewrite may walk more: unrolled, a straight body of L instructions is walked batch x L
    // times, kMaxBatchInsns at most.)
    double verifier_steps_ = 0;
    bool rewrite_budget_ = true;
    mutable std::atomic<uint64_t> rewrites_{0};
    mutable std::atomic<uint64_t> rewrite_ns_{0};  // the time rewrites took, all of them
    mutable std::atomic<uint64_t> long_run_ns_{0};  // the time long Executes ran their records
    mutable std::mutex spec_mu_;
    mutable std::vector<std::shared_ptr<const Specialised>> spec_;  // the latest first
};

}  // namespace csd::core
