// SPDX-License-Identifier: MIT
// decompress (0Ah): zstd frames (libzstd) or the LZ4 frame format (liblz4) from the exact
// compressed bytes of the input range. DW0 = decompressed bytes. Corrupt or truncated
// input: Program Fault; output too small: Output Overflow.
#include <lz4frame.h>
#define ZSTD_STATIC_LINKING_ONLY  // the block-at-a-time decoder (ZSTD_decompressContinue)
#include <zstd.h>
#include <zstd_errors.h>

#include <memory>

#include <algorithm>

#include "../program.h"

namespace csd::core {

namespace {

// Whether a decoder that filled `out` still has bytes to give: asks for one more byte.
template <class MoreFn>
ExecResult full_output(MoreFn more)
{
    return more() ? fail(CSD_STATUS_OUTPUT_OVERFLOW) : fail(CSD_STATUS_PROGRAM_FAULT);
}

// Frames from in[in_pos, in.len) decoded by libzstd's streaming decoder into out from
// out_pos (dctx reset here): the way for legacy (pre-1.0) frames, garbage and an output that
// overlaps the input. It decodes into its own window buffer and copies out (0.87-0.91 of a
// one-shot decode of the same frames, by CPU time).
ExecResult zstd_streaming(const ProgramCall &call, ZSTD_DCtx *dctx, const Span &in, const Span &out, uint64_t in_pos,
                          uint64_t out_pos)
{
    ZSTD_DCtx_reset(dctx, ZSTD_reset_session_only);
    ZSTD_inBuffer src{in.data, in.len, in_pos};
    ZSTD_outBuffer dst{out.data, 0, out_pos};
    size_t ret = 1;
    while (src.pos < src.size || ret != 0) {
        if (cancelled(call)) {
            return fail(CSD_STATUS_ABORT_REQUESTED);
        }
        dst.size = std::min<uint64_t>(out.len, dst.pos + kCancelBytes);  // bounded work per step
        const size_t before_in = src.pos, before_out = dst.pos;
        ret = ZSTD_decompressStream(dctx, &dst, &src);
        if (ZSTD_isError(ret)) {
            return fail(CSD_STATUS_PROGRAM_FAULT);
        }
        if (src.pos == before_in && dst.pos == before_out) {
            if (dst.pos == out.len) {
                return full_output([&] {
                    uint8_t probe;
                    ZSTD_outBuffer one{&probe, 1, 0};
                    const size_t r = ZSTD_decompressStream(dctx, &one, &src);
                    return !ZSTD_isError(r) && one.pos == 1;
                });
            }
            return fail(CSD_STATUS_PROGRAM_FAULT);  // input ends inside a frame
        }
    }
    if (dst.pos > UINT32_MAX) {
        return fail(CSD_STATUS_INVALID_PARAMETERS);
    }
    return ok(static_cast<uint32_t>(dst.pos));
}

// Whether a standard zstd frame or a skippable frame starts at p (n bytes left).
bool standard_frame_at(const uint8_t *p, uint64_t n)
{
    if (n < 4) return false;
    const uint32_t magic = uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
    return magic == ZSTD_MAGICNUMBER || (magic & ZSTD_MAGIC_SKIPPABLE_MASK) == ZSTD_MAGIC_SKIPPABLE_START;
}

// zstd frames, concatenated, from the exact bytes of in into out. Standard and skippable
// frames are decoded a block at a time (ZSTD_decompressContinue) straight into out, where
// later blocks' matches read the earlier ones: a one-shot decode's speed with a
// cancellation check every kCancelBytes (a block writes at most 128 KiB). From the first
// frame of another kind (legacy or garbage), or if out overlaps in, the streaming decoder
// takes over. A block that would write past the end of out: Output Overflow.
ExecResult zstd_frames(const ProgramCall &call, const Span &in, const Span &out)
{
    std::unique_ptr<ZSTD_DCtx, size_t (*)(ZSTD_DCtx *)> dctx(ZSTD_createDCtx(), ZSTD_freeDCtx);
    if (!dctx) {
        return fail(CSD_STATUS_INTERNAL_ERROR);
    }
    const bool overlap = in.data < out.data + out.len && out.data < in.data + in.len;
    uint64_t in_pos = 0, out_pos = 0, since_check = kCancelBytes;  // checked before the first block too
    bool in_frame = false;  // a frame begun and not ended
    while (in_pos < in.len || in_frame) {
        if (!in_frame) {
            if (overlap || !standard_frame_at(in.data + in_pos, in.len - in_pos)) {
                return zstd_streaming(call, dctx.get(), in, out, in_pos, out_pos);
            }
            ZSTD_decompressBegin(dctx.get());
            in_frame = true;
        }
        const size_t need = ZSTD_nextSrcSizeToDecompress(dctx.get());
        if (need == 0) {  // the frame ended
            in_frame = false;
            continue;
        }
        if (need > in.len - in_pos) {
            return fail(CSD_STATUS_PROGRAM_FAULT);  // input ends inside a frame
        }
        if (since_check >= kCancelBytes) {
            if (cancelled(call)) {
                return fail(CSD_STATUS_ABORT_REQUESTED);
            }
            since_check = 0;
        }
        const size_t got =
            ZSTD_decompressContinue(dctx.get(), out.data + out_pos, out.len - out_pos, in.data + in_pos, need);
        if (ZSTD_isError(got)) {
            return fail(ZSTD_getErrorCode(got) == ZSTD_error_dstSize_tooSmall ? CSD_STATUS_OUTPUT_OVERFLOW
                                                                               : CSD_STATUS_PROGRAM_FAULT);
        }
        in_pos += need;
        out_pos += got;
        since_check += need + got;
    }
    if (in.len == 0) {
        return fail(CSD_STATUS_PROGRAM_FAULT);  // no frame at all
    }
    if (out_pos > UINT32_MAX) {
        return fail(CSD_STATUS_INVALID_PARAMETERS);
    }
    return ok(static_cast<uint32_t>(out_pos));
}

ExecResult lz4_frames(const ProgramCall &call, const Span &in, const Span &out)
{
    LZ4F_dctx *raw = nullptr;
    if (LZ4F_isError(LZ4F_createDecompressionContext(&raw, LZ4F_VERSION))) {
        return fail(CSD_STATUS_INTERNAL_ERROR);
    }
    std::unique_ptr<LZ4F_dctx, LZ4F_errorCode_t (*)(LZ4F_dctx *)> dctx(raw, LZ4F_freeDecompressionContext);
    uint64_t in_pos = 0, out_pos = 0;
    size_t hint = 1;
    while (in_pos < in.len || hint != 0) {
        if (cancelled(call)) {
            return fail(CSD_STATUS_ABORT_REQUESTED);
        }
        size_t src_size = in.len - in_pos, dst_size = std::min<uint64_t>(out.len - out_pos, kCancelBytes);
        hint = LZ4F_decompress(dctx.get(), out.data + out_pos, &dst_size, in.data + in_pos, &src_size, nullptr);
        if (LZ4F_isError(hint)) {
            return fail(CSD_STATUS_PROGRAM_FAULT);
        }
        in_pos += src_size;
        out_pos += dst_size;
        if (src_size == 0 && dst_size == 0) {
            if (out_pos == out.len && hint != 0) {
                return full_output([&] {
                    uint8_t probe;
                    size_t one = 1, rest = in.len - in_pos;
                    const size_t r = LZ4F_decompress(dctx.get(), &probe, &one, in.data + in_pos, &rest, nullptr);
                    return !LZ4F_isError(r) && one == 1;
                });
            }
            return fail(CSD_STATUS_PROGRAM_FAULT);  // input ends inside a frame
        }
    }
    if (out_pos > UINT32_MAX) {
        return fail(CSD_STATUS_INVALID_PARAMETERS);
    }
    return ok(static_cast<uint32_t>(out_pos));
}

}  // namespace

ExecResult check_decompress(const ProgramCall &call, ProgramWork *)
{
    uint32_t algo;
    if (call.nr_ranges != 2 || !read_params(call, &algo) || algo > CSD_DECOMP_LZ4) {
        return fail(CSD_STATUS_INVALID_PARAMETERS);
    }
    return ok();  // corrupt input or a full output show only while it decompresses
}

ExecResult program_decompress(const ProgramCall &call)
{
    if (const ExecResult r = check_decompress(call, nullptr); r.status) {
        return r;
    }
    uint32_t algo = 0;
    read_params(call, &algo);
    return algo == CSD_DECOMP_ZSTD ? zstd_frames(call, call.ranges[0], call.ranges[1])
                                   : lz4_frames(call, call.ranges[0], call.ranges[1]);
}

}  // namespace csd::core
