// SPDX-License-Identifier: MIT
// copy (01h): dst[0..len) = src; DW0 = src length.
#include <algorithm>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "../program.h"

namespace csd::core {

namespace {

// Copies larger than this (glibc's default for its own switch: 3/4 of a 32 MiB L3) bypass
// the cache, as one memcpy of the whole range would: memcpy of each 8 MiB piece between
// cancellation checks would write through the cache and read every line before it.
constexpr uint64_t kStreamingBytes = 24ull << 20;

// dst[0..n) = src[0..n), the ranges apart, with non-temporal stores where there are any.
void copy_streaming(uint8_t *dst, const uint8_t *src, uint64_t n)
{
#if defined(__SSE2__)
    const uint64_t head = std::min<uint64_t>(n, (16 - reinterpret_cast<uintptr_t>(dst) % 16) % 16);
    std::memcpy(dst, src, head);
    dst += head, src += head, n -= head;
    for (; n >= 64; n -= 64, dst += 64, src += 64) {
        const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i *>(src));
        const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i *>(src + 16));
        const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i *>(src + 32));
        const __m128i d = _mm_loadu_si128(reinterpret_cast<const __m128i *>(src + 48));
        _mm_stream_si128(reinterpret_cast<__m128i *>(dst), a);
        _mm_stream_si128(reinterpret_cast<__m128i *>(dst + 16), b);
        _mm_stream_si128(reinterpret_cast<__m128i *>(dst + 32), c);
        _mm_stream_si128(reinterpret_cast<__m128i *>(dst + 48), d);
    }
    _mm_sfence();
#endif
    std::memcpy(dst, src, n);
}

}  // namespace

ExecResult check_copy(const ProgramCall &call, ProgramWork *)
{
    if (call.nr_ranges != 2 || call.param_len != 0) {
        return fail(CSD_STATUS_INVALID_PARAMETERS);
    }
    const Span &src = call.ranges[0];
    const Span &dst = call.ranges[1];
    if (dst.len < src.len) {
        return fail(CSD_STATUS_OUTPUT_OVERFLOW, 0, static_cast<uint32_t>(src.len));
    }
    if (src.len > UINT32_MAX) {
        return fail(CSD_STATUS_INVALID_PARAMETERS);  // DW0 could not report it
    }
    return ok();
}

ExecResult program_copy(const ProgramCall &call)
{
    if (const ExecResult r = check_copy(call, nullptr); r.status) {
        return r;
    }
    const Span &src = call.ranges[0];
    const Span &dst = call.ranges[1];
    // In chunks, front to back or back to front as memmove would for an overlap.
    const uint64_t len = src.len;
    const bool backwards = dst.data > src.data && dst.data < src.data + len;
    const bool streaming = len > kStreamingBytes && (dst.data + len <= src.data || dst.data >= src.data + len);
    for (uint64_t done = 0; done < len; done += kCancelBytes) {
        if (cancelled(call)) {
            return fail(CSD_STATUS_ABORT_REQUESTED);
        }
        const uint64_t n = std::min(kCancelBytes, len - done);
        const uint64_t at = backwards ? len - done - n : done;
        if (streaming) {
            copy_streaming(dst.data + at, src.data + at, n);
        } else {
            std::memmove(dst.data + at, src.data + at, n);
        }
    }
    return ok(static_cast<uint32_t>(len));
}

}  // namespace csd::core
