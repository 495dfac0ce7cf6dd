// SPDX-License-Identifier: MIT
// bpf/specialise.h - a downloaded eBPF program rewritten for one Execute, so that its
// JIT-compiled code does per record what a hand-written loop does: csd_param(K) folded
// into the Execute's value, "return a OP b" computed without a branch, and (where the
// result has no branch left) the record loop unrolled inside the program, one call for a
// batch of records (map: the answers stored in a scratch buffer after the batch's records),
// the unrolled code cleaned of what a compiler would remove. The rewrite is an optimisation
// only: its result goes through the same checks as an image's instructions
// (bpf_check_instructions over the bytes a call may touch, then DPDK's verifier) before it
// runs, so the device relies on its checks, not on the rewrite.
// Needs no eBPF runtime.
#pragma once

#include <cstdint>
#include <vector>

namespace csd::core {

// A program as rewritten for one Execute. batch records (of the program's record size, one
// after the other) go to each call, at r1; its answer is, in filter mode, bit k set when
// record k is kept, in reduce mode the sum of the records' answers, and (batch 1) the one
// record's answer in every mode. In map mode with batch > 1, r1 points to a scratch copy
// of the batch's records followed by batch u64 slots: the call stores record k's answer in
// slot k (and answers 0). csd_index() answers the index of the call's first record.
struct BpfSpecialised {
    std::vector<uint64_t> insns;
    uint32_t batch = 1;
    uint32_t arg_size = 0;  // the bytes at r1 a call may touch (what the checks are given)
};

// Records in a batch at most (a filter's answer has one bit a record).
inline constexpr uint32_t kBpfMaxBatch = 32;
// A map batch's scratch (records and answers) at most: on the stack of the device's loop.
inline constexpr uint32_t kBpfMaxScratch = 4096;

// Rewrites insns (a program bpf_check_instructions accepted) for an Execute in mode
// (CSD_BPF_FILTER, _MAP or _REDUCE) with params[0..nr_params), over records of record_size
// bytes: false when nothing would change. The result still has to be checked
// (bpf_check_instructions with arg_size) before it is loaded.
bool bpf_specialise(const std::vector<uint64_t> &insns, const uint64_t *params, uint32_t nr_params, uint32_t mode,
                    uint32_t record_size, BpfSpecialised *out);

}  // namespace csd::core
