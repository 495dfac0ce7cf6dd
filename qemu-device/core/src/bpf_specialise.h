// SPDX-License-Identifier: MIT
// bpf_specialise.h - a downloaded eBPF program rewritten for one Execute, so that its
// JIT-compiled code does per record what a hand-written loop does: csd_param(K) folded
// into the Execute's value, "return a OP b" computed without a branch, and (where the
// result has no branch left) the record loop unrolled inside the program, one call for a
// batch of records. The rewrite is an optimisation only: its result goes through the same
// checks as an image's instructions (bpf_check_instructions over the batch's bytes, then
// DPDK's verifier) before it runs, so the device relies on its checks, not on the rewrite.
// Needs no eBPF runtime.
#pragma once

#include <cstdint>
#include <vector>

namespace csd::core {

// A program as rewritten for one Execute. batch records (of the program's record size, one
// after the other) go to each call, at r1; its answer is, in filter mode, bit k set when
// record k is kept, in reduce mode the sum of the records' answers, and (batch 1) the one
// record's answer in every mode. csd_index() answers the index of the call's first record.
struct BpfSpecialised {
    std::vector<uint64_t> insns;
    uint32_t batch = 1;
};

// Records in a batch at most (a filter's answer has one bit a record).
inline constexpr uint32_t kBpfMaxBatch = 32;

// Rewrites insns (a program bpf_check_instructions accepted) for an Execute in mode
// (CSD_BPF_FILTER, _MAP or _REDUCE) with params[0..nr_params), over records of record_size
// bytes: false when nothing would change. The result still has to be checked
// (bpf_check_instructions with record_size * batch) before it is loaded.
bool bpf_specialise(const std::vector<uint64_t> &insns, const uint64_t *params, uint32_t nr_params, uint32_t mode,
                    uint32_t record_size, BpfSpecialised *out);

}  // namespace csd::core
