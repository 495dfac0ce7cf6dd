// SPDX-License-Identifier: MIT
// programs.hpp - typed calls for the twelve device-defined programs on SLM ranges, blocking
// and asynchronous, plus helpers that chain host data -> SLM -> Execute -> host.
#pragma once

#include <cstdint>
#include <future>
#include <vector>

#include "csd/device.hpp"
#include "csd_spec.h"

namespace csd {

// The SLM range of a whole buffer.
inline Range range(const SlmBuffer &b) { return {b.offset(), b.size()}; }
// The first `len` bytes of a buffer.
inline Range range(const SlmBuffer &b, uint64_t len) { return {b.offset(), len}; }

enum class EwOp : uint32_t {
    add = 0, sub = 1, mul = 2, div = 3, max = 4, min = 5,
    relu = 16, sigmoid = 17, tanh = 18, gelu = 19, axpb = 20, exp = 21, abs = 22,
};
enum class ReduceOp : uint32_t { sum = 0, min = 1, max = 2, mean = 3, argmax = 4, argmin = 5 };
enum class DType : uint32_t { f32 = 0, f64 = 1, i32 = 2, i64 = 3 };
enum class FieldType : uint16_t { i32 = 0, i64 = 1, u32 = 2, u64 = 3, f32 = 4, f64 = 5 };
enum class CmpOp : uint16_t { eq = 0, ne = 1, lt = 2, le = 3, gt = 4, ge = 5, between = 6 };
enum class ConvertOp : uint32_t { f32_f16 = 0, f32_bf16 = 1, f16_f32 = 2, bf16_f32 = 3, i8_f32 = 4, f32_i8 = 5, u8_f32 = 6 };
enum class ChecksumAlgo : uint32_t { crc32c = 0, xxh64 = 1 };
enum class Codec : uint32_t { zstd = 0, lz4 = 1 };
enum class EmbDType : uint32_t { f32 = 0, f16 = 1, bf16 = 2 };
enum class EmbMode : uint32_t { sum = 0, mean = 1, max = 2 };

// A table of num_rows rows of row_dim elements stored on the namespace from table_lba, and
// how embedding_bag pools it (torch.nn.functional.embedding_bag's arguments).
struct EmbeddingBagSpec {
    uint64_t table_lba = 0;
    uint64_t num_rows = 0;
    uint32_t row_dim = 0;
    EmbDType dtype = EmbDType::f32;
    EmbMode mode = EmbMode::sum;
    bool index_i32 = false;            // indices and offsets are i32 (else i64)
    uint32_t num_bags = 0;
    bool include_last_offset = false;  // offsets has num_bags + 1 entries
};

// What filter selects: records of record_size bytes whose field (at field_offset, of
// field_type) compares true with lo (and hi for between); lo/hi as double or integer.
struct FilterSpec {
    uint32_t record_size = 0;
    uint32_t count = 0;
    uint32_t field_offset = 0;
    FieldType field_type = FieldType::f32;
    CmpOp op = CmpOp::gt;
    bool indices = false;  // write u32 record indices instead of the records
    uint32_t index_base = 0;  // indices mode: the index of the range's first record (a piece of a table)
    double lo = 0, hi = 0;  // for float fields
    int64_t lo_int = 0, hi_int = 0;  // for integer fields (u64 as two's complement)
};

struct FilterResult {
    uint64_t bytes = 0;    // written to the output
    uint64_t matches = 0;  // matching records
};

namespace programs {

// copy (01h): dst = src; returns bytes copied.
uint32_t copy(Device &d, Range src, Range dst);
// gemm (02h): C = alpha op(A) op(B) + beta C, f32 row-major, m x n result.
void gemm(Device &d, Range a, Range b, Range c, uint32_t m, uint32_t n, uint32_t k, bool trans_a = false,
          bool trans_b = false, float alpha = 1.0f, float beta = 0.0f);
std::future<ExecResult> gemm_async(Device &d, Range a, Range b, Range c, uint32_t m, uint32_t n, uint32_t k,
                                   bool trans_a = false, bool trans_b = false, float alpha = 1.0f, float beta = 0.0f);
// elementwise (03h), binary: out = x op y over count f32.
void elementwise(Device &d, EwOp op, Range x, Range y, Range out, uint32_t count);
// elementwise (03h), unary: out = op(x) (axpb: a*x+b), in place allowed.
void elementwise(Device &d, EwOp op, Range x, Range out, uint32_t count, float a = 0, float b = 0);
// softmax (04h) of each row, in place allowed.
void softmax(Device &d, Range x, Range out, uint32_t rows, uint32_t cols);
// reduce (05h): one 8-byte result per row into out.
void reduce(Device &d, ReduceOp op, DType dtype, Range x, Range out, uint32_t rows, uint32_t cols);
// gemm (02h) over a piece of the depth (csd_gemm_tile_params): C (m x n) = alpha A[:, k_first ..
// k_first + k] B_piece + beta C, where a holds m rows of k_total and b B's rows k_first .. k_first
// + k; the drive's blocks are those of the whole (a B streamed in pieces adds up as one Execute).
void gemm_depth_piece(Device &d, Range a, Range b, Range c, uint32_t m, uint32_t n, uint32_t k, uint32_t k_total,
                      uint32_t k_first, float alpha = 1.0f, float beta = 0.0f);
// reduce (05h) sum of f32/f64 whose first row's sum starts from sum0 (csd_reduce_carry_params:
// a row streamed through SLM in pieces adds up in element order, as one Execute would).
void reduce_sum_from(Device &d, DType dtype, Range x, Range out, uint32_t rows, uint32_t cols, double sum0);
// filter (06h) into out; on Output Overflow it grows `out` (reallocating it in SLM) and
// runs again, so the call succeeds whenever SLM can hold the result.
FilterResult filter(Device &d, Range records, SlmBuffer &out, const FilterSpec &spec);
// filter (06h) into a fixed output range; throws csd::Error (Output Overflow) if small.
FilterResult filter(Device &d, Range records, Range out, const FilterSpec &spec);
// convert (07h): count elements; returns bytes written.
uint32_t convert(Device &d, ConvertOp op, Range in, Range out, uint32_t count, float scale = 1.0f,
                 int32_t zero_point = 0);
// checksum (08h) of a range.
uint64_t checksum(Device &d, ChecksumAlgo algo, Range data);
// conv2d (09h): NCHW f32; bias may be {} (none).
void conv2d(Device &d, Range input, Range weight, Range bias, Range output, const csd_conv2d_params &p);
// decompress (0Ah): returns decompressed bytes.
uint32_t decompress(Device &d, Codec codec, Range in, Range out);
// gather (0Bh): the bytes of count entries (csd_gather_entry: LBA, byte offset, length) of
// the device's namespace, concatenated into out; returns bytes written (Output Overflow:
// csd::Error, the bytes needed in its DW1).
uint64_t gather(Device &d, Range entries, uint32_t count, Range out);
// embedding_bag (0Ch): the pooled rows of spec.num_bags bags into out (weights may be {}).
void embedding_bag(Device &d, const EmbeddingBagSpec &spec, Range indices, Range offsets, Range weights, Range out);

// Host-side helpers: move inputs into SLM, run, bring the result back.
// C (m x n) = A (m x k) * B (k x n).
std::vector<float> gemm(Device &d, const std::vector<float> &a, const std::vector<float> &b, uint32_t m,
                        uint32_t n, uint32_t k);
uint64_t checksum(Device &d, ChecksumAlgo algo, const void *data, uint64_t len);
// gather (0Bh) of host-side entries: the gathered bytes.
std::vector<uint8_t> gather(Device &d, const std::vector<csd_gather_entry> &entries);
// embedding_bag (0Ch) with i64 indices and offsets and (sum only) per-sample weights in the
// table's dtype (bytes; empty: none): the pooled rows, num_bags * row_dim elements.
std::vector<uint8_t> embedding_bag(Device &d, const EmbeddingBagSpec &spec, const std::vector<int64_t> &indices,
                                   const std::vector<int64_t> &offsets, const std::vector<uint8_t> &weights = {});

}  // namespace programs

}  // namespace csd
