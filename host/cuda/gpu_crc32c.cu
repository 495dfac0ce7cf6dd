// SPDX-License-Identifier: MIT
// gpu_crc32c.cu - CRC-32C on the GPU (gpu_crc32c.hpp). The raw CRC (register starting at 0,
// no final xor) is linear over GF(2): raw(A || B) = raw(A) * x^(8|B|) mod P xor raw(B), and
// leading zero bytes leave it unchanged. So a piece of n bytes is read as if zero-padded in
// front to whole blocks of 256 x 1 KiB: thread t of block b takes the CRC of its 1 KiB
// (slicing-by-8), the block folds its 256 in 8 levels of pairs (shift by 2^l KiB), and one
// block folds the blocks'; the standard CRC is then raw xor CRC-32C(n zero bytes).
#include "gpu_crc32c.hpp"

#include <stdexcept>
#include <string>
#include <vector>

#include "csd/error.hpp"
#include "host_registration.hpp"

namespace csd::gpu {

namespace {

constexpr uint32_t kPoly = 0x82F63B78u;  // CRC-32C, reflected
constexpr int kThreads = 256;            // threads per block
constexpr uint64_t kSegment = 1024;      // bytes per thread
constexpr uint64_t kBlockBytes = kThreads * kSegment;

void check(cudaError_t e, const char *what)
{
    if (e != cudaSuccess) throw Error(std::string(what) + ": " + cudaGetErrorString(e), EIO);
}

// a * b mod P, polynomials in the reflected order (bit 31 = x^0).
__host__ __device__ uint32_t mulmod(uint32_t a, uint32_t b)
{
    uint32_t p = 0;
    for (int i = 31; i >= 0; i--) {
        p ^= b & (0u - ((a >> i) & 1u));
        b = (b >> 1) ^ (kPoly & (0u - (b & 1u)));
    }
    return p;
}

// x^(8n) mod P: shifting a raw CRC past n zero bytes is multiplying by it.
__host__ __device__ uint32_t xpow8(uint64_t n)
{
    uint32_t r = 1u << 31, sq = 1u << 23;  // x^0, x^8
    for (; n; n >>= 1) {
        if (n & 1) r = mulmod(r, sq);
        sq = mulmod(sq, sq);
    }
    return r;
}

// XOR of v over the block (result valid in thread 0); red holds kThreads / 32 words.
__device__ uint32_t block_xor(uint32_t v, uint32_t *red)
{
    for (int o = 16; o; o >>= 1) v ^= __shfl_xor_sync(0xFFFFFFFFu, v, o);
    if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = v;
    __syncthreads();
    v = 0;
    if (threadIdx.x == 0) {
        for (int w = 0; w < kThreads / 32; w++) v ^= red[w];
    }
    return v;
}

// blocks[b] = raw CRC of block b's 256 KiB of the piece [p, p + n) zero-padded in front by pad.
__global__ void __launch_bounds__(kThreads) crc_blocks(const uint8_t *p, uint64_t n, uint64_t pad,
                                                       const uint32_t *tables, uint32_t *blocks)
{
    __shared__ uint32_t t[8][256];
    __shared__ uint32_t fold[kThreads];
    __shared__ uint32_t shift[8];
    for (int i = threadIdx.x; i < 8 * 256; i += kThreads) t[i / 256][i % 256] = tables[i];
    if (threadIdx.x == 0) {  // x^(8 * 1 KiB * 2^l) for the 8 levels of the fold
        uint32_t s = xpow8(kSegment);
        for (int l = 0; l < 8; l++, s = mulmod(s, s)) shift[l] = s;
    }
    __syncthreads();
    const int64_t start = static_cast<int64_t>((blockIdx.x * uint64_t(kThreads) + threadIdx.x) * kSegment) -
                          static_cast<int64_t>(pad);
    const uint8_t *q = p + (start < 0 ? 0 : start);
    const uint8_t *e = p + (start + int64_t(kSegment) < 0 ? 0 : start + int64_t(kSegment));
    uint32_t c = 0;
    while (q < e && (reinterpret_cast<uintptr_t>(q) & 7)) c = t[0][(c ^ *q++) & 0xFF] ^ (c >> 8);
    for (; q + 8 <= e; q += 8) {
        const uint64_t v = *reinterpret_cast<const uint64_t *>(q);
        const uint32_t lo = static_cast<uint32_t>(v) ^ c, hi = static_cast<uint32_t>(v >> 32);
        c = t[7][lo & 0xFF] ^ t[6][(lo >> 8) & 0xFF] ^ t[5][(lo >> 16) & 0xFF] ^ t[4][lo >> 24] ^
            t[3][hi & 0xFF] ^ t[2][(hi >> 8) & 0xFF] ^ t[1][(hi >> 16) & 0xFF] ^ t[0][hi >> 24];
    }
    while (q < e) c = t[0][(c ^ *q++) & 0xFF] ^ (c >> 8);
    // fold pairs: segment i followed by segment i + 2^l
    fold[threadIdx.x] = c;
    for (int l = 0; l < 8; l++) {
        __syncthreads();
        const int span = 1 << l;
        if ((threadIdx.x & (2 * span - 1)) == 0) {
            fold[threadIdx.x] = mulmod(fold[threadIdx.x], shift[l]) ^ fold[threadIdx.x + span];
        }
    }
    if (threadIdx.x == 0) blocks[blockIdx.x] = fold[0];
}

// *out = CRC-32C of the n-byte piece from its nb blocks' raw CRCs.
__global__ void __launch_bounds__(kThreads) crc_finish(const uint32_t *blocks, uint64_t nb, uint64_t n, uint32_t *out)
{
    __shared__ uint32_t red[kThreads / 32];
    uint32_t acc = 0;
    for (uint64_t b = threadIdx.x; b < nb; b += kThreads) acc ^= mulmod(blocks[b], xpow8((nb - 1 - b) * kBlockBytes));
    acc = block_xor(acc, red);
    if (threadIdx.x == 0) *out = acc ^ mulmod(xpow8(n), 0xFFFFFFFFu) ^ 0xFFFFFFFFu;
}

std::vector<uint32_t> slicing_tables()
{
    std::vector<uint32_t> t(8 * 256);
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = (c >> 1) ^ (kPoly & (0u - (c & 1u)));
        t[i] = c;
    }
    for (int k = 1; k < 8; k++) {
        for (int i = 0; i < 256; i++) t[k * 256 + i] = (t[(k - 1) * 256 + i] >> 8) ^ t[t[(k - 1) * 256 + i] & 0xFF];
    }
    return t;
}

}  // namespace

void load_crc32c_kernels()
{
    cudaFuncAttributes fa{};
    check(cudaFuncGetAttributes(&fa, crc_blocks), "loading the CRC-32C kernel");
    check(cudaFuncGetAttributes(&fa, crc_finish), "loading the CRC-32C kernel");
}

GpuCrc32c::GpuCrc32c(uint64_t max_piece, int slots) : max_piece_(max_piece), slots_(slots < 1 ? 1 : slots)
{
    load_crc32c_kernels();
    blocks_per_slot_ = (max_piece_ + kBlockBytes - 1) / kBlockBytes;
    if (blocks_per_slot_ == 0) blocks_per_slot_ = 1;
    const std::vector<uint32_t> t = slicing_tables();
    try {
        check(cudaMalloc(&tables_, t.size() * 4), "cudaMalloc(CRC tables)");
        check(cudaMemcpy(tables_, t.data(), t.size() * 4, cudaMemcpyHostToDevice), "cudaMemcpy(CRC tables)");
        check(cudaMalloc(&blocks_, blocks_per_slot_ * slots_ * 4), "cudaMalloc(CRC scratch)");
        check(cudaHostAlloc(reinterpret_cast<void **>(&host_out_), slots_ * 4, cudaHostAllocMapped), "cudaHostAlloc(CRC results)");
    } catch (...) {
        release();
        throw;
    }
}

void GpuCrc32c::release()
{
    // a resident kernel may run (GpuQueues): cudaFree and cudaFreeHost would wait for it
    after_resident_kernels([tables = tables_, blocks = blocks_, out = host_out_] {
        cudaFree(tables);
        cudaFree(blocks);
        if (out) cudaFreeHost(out);
    });
}

GpuCrc32c::~GpuCrc32c()
{
    release();
}

void GpuCrc32c::launch(const uint8_t *data, uint64_t n, int slot, cudaStream_t stream)
{
    if (n > max_piece_ || slot < 0 || slot >= slots_) throw Error("GpuCrc32c::launch: piece or slot out of range", EINVAL);
    const uint64_t nb = n ? (n + kBlockBytes - 1) / kBlockBytes : 0;
    uint32_t *blocks = blocks_ + slot * blocks_per_slot_;
    if (nb) crc_blocks<<<static_cast<unsigned>(nb), kThreads, 0, stream>>>(data, n, nb * kBlockBytes - n, tables_, blocks);
    uint32_t *out = nullptr;
    check(cudaHostGetDevicePointer(reinterpret_cast<void **>(&out), host_out_ + slot, 0), "cudaHostGetDevicePointer");
    crc_finish<<<1, kThreads, 0, stream>>>(blocks, nb, n, out);
    check(cudaGetLastError(), "CRC-32C kernel launch");
}

uint32_t crc32c_on_gpu(const void *data, uint64_t n)
{
    GpuCrc32c crc(n ? n : 1, 1);
    cudaStream_t s = nullptr;  // of its own, not blocking: a resident kernel may run meanwhile
    check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
    try {
        crc.launch(static_cast<const uint8_t *>(data), n, 0, s);
        check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
    } catch (...) {
        cudaStreamDestroy(s);
        throw;
    }
    cudaStreamDestroy(s);
    return crc.result(0);
}

}  // namespace csd::gpu
