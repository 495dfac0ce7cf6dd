// SPDX-License-Identifier: MIT
// store_stream.cc - the store's programs over objects of any size (docs/store.md, "Objects
// larger than SLM"). An object larger than the SLM a call may use streams through SLM in
// pieces: each piece's LBAs are SLM-Loaded into one of two buffers while the program runs on
// the other (the load on a thread of its own, the Execute on a compute unit), and the pieces'
// answers are combined exactly as one Execute over the whole object gives them:
//   filter, eBPF filter and map   outputs appended in order (SLM Store of whole store blocks,
//                                 the partial block's bytes moved to the front in SLM by copy)
//   convert                       likewise, element by element
//   checksum                      CRC-32C: the pieces' CRCs combined (no data needed)
//   reduce                        whole rows per piece where a row fits; a wider row in pieces:
//                                 sums carried on in element order (csd_reduce_carry_params),
//                                 extremes combined keeping the first
//   eBPF reduce                   wrapping u64 sums added
//   gemm                          rows of A and C per piece (a multiple of the drive's own
//                                 block of rows: the same OpenBLAS calls), B resident
//   decompress                    whole frames per piece (found from their headers)
// Pieces are cut on record, row or element boundaries; a piece's LBAs may begin and end
// inside records, which the program never sees (it is given the piece's exact bytes).
// Output objects are written into space reserved for their largest possible size and
// committed (with the CRC-32C combined from the drive's checksums of each stored piece) only
// when every piece is done: a failure, a cancel from progress, or a detach mid-stream stores
// nothing and releases the space; SLM buffers free themselves.
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <future>
#include <limits>
#include <map>
#include <mutex>

#include "csd/error.hpp"
#include "csd/npy.hpp"
#include "csd/program.hpp"
#include "csd/store.hpp"
#include "csd_crc32c.h"
#include "store_catalog.hpp"
#include "store_internal.hpp"

namespace csd {

namespace {

constexpr uint64_t kAlign = 4096;  // SLM buffers' alignment and rounding

uint64_t round_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }
uint64_t round_down(uint64_t v, uint64_t a) { return v / a * a; }

std::string bytes_text(uint64_t b) { return std::to_string(b) + " bytes"; }

thread_local StreamTurn *t_turn = nullptr;  // the streamed call this thread is in

// Throws a refusal whose cause is the SLM the call may use (too small for a piece, a frame, a
// block of gemm), marking it so that streamed() may wait for SLM and plan again: for at least
// `need` bytes in one range where that is known (0: not).
[[noreturn]] void short_of_slm(const std::string &what, int errnum, uint64_t need = 0)
{
    if (t_turn) t_turn->refused = true, t_turn->need = need;
    throw Error(what, errnum);
}

// Runs one streamed call: fn plans its pieces from the SLM free, takes it and runs. Refused SLM
// before any piece ran (too little free for one piece, or an allocation lost to another
// thread) while SLM it would have used was held by other streamed runs of this process, it
// waits for that run to free some and plans again, so concurrent calls with no budget take
// turns instead of failing; a call nested in another's (a progress callback's) does not wait.
// Refused again and again while calls started later take what is freed (a call whose
// smallest piece is large, beside calls of small pieces in loops), a refused call queues: calls
// started after it wait until it has run its first piece or given up.
template <class R, class Fn>
R streamed(SlmAllocator &slm, Fn &&fn)
{
    if (t_turn) return fn();
    // While an attempt runs: this thread's turn, counted in at the allocator.
    struct InTurn {
        SlmAllocator &slm;
        InTurn(SlmAllocator &s, StreamTurn &turn) : slm(s) { t_turn = &turn; }
        ~InTurn()
        {
            t_turn = nullptr;
            slm.stream_end();
        }
    };
    StreamQueue queue;
    for (;;) {
        StreamTurn turn;
        turn.queue = &queue;
        const uint64_t releases = slm.stream_begin(queue.at != nullptr);
        try {
            const InTurn in(slm, turn);
            return fn();
        } catch (const Error &e) {  // counted out already (InTurn), as wait_for_release needs
            // refused what it planned with because others held SLM, or lost an allocation to them
            const bool for_others = turn.refused ? turn.cut_by_others : e.errnum() == ENOMEM;
            if (!for_others || turn.started) throw;
            if (!queue.at) slm.join_stream_queue(), queue.at = &slm;
            if (!slm.wait_for_release(releases, turn.refused ? turn.need : 0)) throw;
        }
    }
}

}  // namespace

bool in_streamed_call() { return t_turn != nullptr; }

NestedStreamScope::NestedStreamScope(bool nested)
{
    if (!nested || t_turn) return;
    turn_.started = true;  // nothing here plans again
    t_turn = &turn_;
    set_ = true;
}

NestedStreamScope::~NestedStreamScope()
{
    if (set_) t_turn = nullptr;
}

namespace {

// An SLM budget too small for even one record (row, element) and the buffers around it.
[[noreturn]] void too_small(const std::string &what, uint64_t budget, uint64_t need)
{
    short_of_slm(what + ": the SLM it may use (" + bytes_text(budget) + ") cannot hold one piece and its buffers (" +
                     bytes_text(need) + " needed)",
                 ENOMEM, need);
}

// One piece of an object: bytes [pos, pos + len), and the records (rows, elements) it holds.
struct Piece {
    uint64_t pos = 0, len = 0;
    uint64_t first = 0, count = 0;
};

// Pieces of `units` units of `unit` bytes, at most per_piece units each.
std::vector<Piece> cut(uint64_t units, uint64_t unit, uint64_t per_piece, uint64_t base = 0)
{
    std::vector<Piece> v;
    for (uint64_t u = 0; u < units; u += per_piece) {
        const uint64_t n = std::min(per_piece, units - u);
        v.push_back({base + u * unit, n * unit, u, n});
    }
    return v;
}

// Streams pieces of one object's bytes through two SLM buffers: the SLM Load of piece k+1
// runs on a thread of its own while the caller's program runs on piece k.
class PieceLoader {
public:
    // obj_lba: the object's first LBA; max_len: the largest piece in bytes.
    PieceLoader(Device &d, uint64_t obj_lba, uint32_t lba, uint64_t max_len, int buffers)
        : d_(d), obj_lba_(obj_lba), lba_(lba)
    {
        for (int i = 0; i < buffers; i++) buf_[i] = d.slm().alloc(buffer_bytes(max_len, lba), kAlign);
        n_ = buffers;
    }
    // SLM a piece of max_len bytes takes in one buffer (its LBAs, which may begin and end
    // inside it).
    static uint64_t buffer_bytes(uint64_t max_len, uint32_t lba) { return round_up(max_len + 2ull * lba, kAlign); }

    // Runs fn(k, piece, range in SLM) for each piece in order, the next piece's load running
    // meanwhile when there are two buffers (with one, each piece loads after the one before
    // has run); progress(done bytes, total) after each.
    template <class Fn>
    void run(const std::vector<Piece> &pieces, uint64_t total, const Progress &progress, Fn &&fn)
    {
        std::future<void> next;
        uint64_t done = 0;
        auto load = [&](size_t k, bool async) {
            const Piece &p = pieces[k];
            const uint64_t slba = obj_lba_ + p.pos / lba_, skip = p.pos % lba_;
            const uint64_t nlb = (skip + p.len + lba_ - 1) / lba_;
            const uint64_t at = buf_[k % n_].offset();
            if (!async) {
                d_.slm_load(slba, nlb, at);
                return std::future<void>();
            }
            return std::async(std::launch::async, [this, slba, nlb, at] { d_.slm_load(slba, nlb, at); });
        };
        const bool overlap = pieces.size() > 1 && n_ > 1;
        if (t_turn) {
            t_turn->started = true;
            if (t_turn->queue) t_turn->queue->leave();  // served
        }
        if (!pieces.empty() && overlap) next = load(0, true);
        for (size_t k = 0; k < pieces.size(); k++) {
            try {
                if (next.valid()) next.get();
                if (!overlap) {
                    load(k, false);  // one buffer: each piece in turn, once the one before is done with it
                } else if (k + 1 < pieces.size()) {
                    next = load(k + 1, true);
                }
                const Piece &p = pieces[k];
                fn(k, p, Range{buf_[k % n_].offset() + p.pos % lba_, p.len});
            } catch (const Error &e) {
                if (next.valid()) next.wait();  // the next piece's load ends before its buffer goes
                throw stopped(e, k, pieces.size(), done, total);
            }
            done += pieces[k].len;
            if (progress) progress(done, total);  // its cancel is reported as it is
        }
    }

    // The error that stopped a run at piece k (of n, done of total bytes behind it): where,
    // and that nothing was stored; a piece refused for its namespace after others were taken
    // alike is most likely the namespace detached or formatted meanwhile (a drive answers
    // Invalid Field in Command for an inactive NSID: QEMU's hw/nvme does).
    static Error stopped(const Error &e, size_t k, size_t n, uint64_t done, uint64_t total)
    {
        std::string where = "stopped at piece " + std::to_string(k + 1) + " of " + std::to_string(n) + " (" +
                            std::to_string(done) + " of " + std::to_string(total) + " bytes done), nothing stored";
        const uint16_t code = e.code();
        if (k > 0 && (code == CSD_STATUS_INVALID_NAMESPACE || code == CSD_STATUS_INVALID_FIELD)) {
            where += "; the drive refused a piece like those it had taken: was the namespace detached or formatted "
                     "meanwhile?";
        }
        return Error(where, e);
    }

private:
    Device &d_;
    uint64_t obj_lba_;
    uint32_t lba_;
    SlmBuffer buf_[2];
    int n_ = 1;
};

// How many pieces' buffers a run needs: one when the whole input fits in one piece.
int buffers_for(size_t pieces) { return pieces > 1 ? 2 : 1; }

// The reduce program's dtype for a catalog dtype.
DType reduce_dtype(const ObjectInfo &o)
{
    static const std::map<std::string, DType> dts = {
        {"<f4", DType::f32}, {"<f8", DType::f64}, {"<i4", DType::i32}, {"<i8", DType::i64}};
    auto it = dts.find(o.dtype);
    if (it == dts.end()) {
        throw Error("reduce needs a tensor of <f4, <f8, <i4 or <i8 (object '" + o.name + "' is " +
                        (o.dtype.empty() ? std::string("a blob") : o.dtype) + ")",
                    EINVAL);
    }
    return it->second;
}

void record_stats(const StreamOptions &opt, const std::vector<Piece> &pieces)
{
    if (!opt.stats) return;
    opt.stats->pieces = pieces.size();
    opt.stats->piece_bytes = 0;
    for (const Piece &p : pieces) opt.stats->piece_bytes = std::max(opt.stats->piece_bytes, p.len);
}

}  // namespace

// An object written from SLM a piece at a time into space reserved for its largest size: each
// piece's output lands after the bytes of a partial store block left by the last one; whole
// blocks go to the namespace by SLM Store, their CRC-32C computed in the drive; the partial
// block's bytes move to the buffer's front by the copy program. finish() commits the object;
// destroyed unfinished, it releases the space.
class StreamedOutput {
public:
    StreamedOutput(ObjectStore &st, const std::string &name, uint64_t max_bytes, uint64_t max_piece)
        : st_(st), d_(st.dev_), name_(name)
    {
        const uint64_t blk = st.block_;
        buf_ = d_.slm().alloc(round_up(max_piece, blk) + blk, kAlign);
        std::lock_guard<std::mutex> g(st.mu_);
        r_ = st.reserve(st.blocks_for(max_bytes));
        reserved_ = true;
    }
    ~StreamedOutput()
    {
        if (!reserved_) return;
        try {  // the error that stopped the run is the one to report
            st_.release_quietly({r_.id});
        } catch (...) {
        }
    }
    StreamedOutput(const StreamedOutput &) = delete;
    StreamedOutput &operator=(const StreamedOutput &) = delete;

    // SLM bytes the buffer's size needs for pieces of max_piece bytes of output (block: the store's).
    static uint64_t buffer_bytes(uint64_t max_piece, uint64_t blk) { return round_up(max_piece, blk) + blk; }
    // Where the next piece's output goes.
    Range space() const { return {buf_.offset() + tail_, buf_.size() - tail_}; }
    // The same, no longer than at_most (a piece's largest output): an Execute names no more
    // SLM than it may write, so the timing model, which charges a program for the bytes of
    // its ranges, charges a piece as one Execute over the same bytes would be.
    Range space(uint64_t at_most) const { return {buf_.offset() + tail_, std::min(buf_.size() - tail_, at_most)}; }
    // The next n bytes of the object are at space().
    void commit(uint64_t n)
    {
        const uint64_t blk = st_.block_, total = tail_ + n, full = round_down(total, blk);
        if (full) {
            store(full);
            const uint64_t rem = total - full;
            if (rem) programs::copy(d_, Range{buf_.offset() + full, rem}, Range{buf_.offset(), rem});
            tail_ = rem;
        } else {
            tail_ = total;
        }
    }
    // Stores the last partial block, flushes and commits the object; returns its size.
    uint64_t finish(const std::string &dtype, const std::vector<uint64_t> &shape)
    {
        if (tail_) store(tail_);
        d_.flush();
        ObjectInfo o;
        o.name = name_;
        o.dtype = dtype;
        o.shape = shape;
        o.bytes = written_;
        o.block = r_.block;
        o.crc32c = crc_;
        std::lock_guard<std::mutex> g(st_.mu_);
        st_.commit_put(o, r_.id);
        reserved_ = false;
        return written_;
    }

private:
    // Writes the buffer's first n bytes (whole blocks, or the object's last bytes) at the end
    // of what is written, and folds their CRC-32C (computed in the drive) into the object's.
    void store(uint64_t n)
    {
        const uint64_t blk = st_.block_, lpb = st_.lbas_per_block_, blocks = (n + blk - 1) / blk;
        const uint32_t crc = static_cast<uint32_t>(programs::checksum(d_, ChecksumAlgo::crc32c, Range{buf_.offset(), n}));
        d_.slm_store((r_.block + written_ / blk) * lpb, blocks * lpb, buf_.offset());
        crc_ = written_ ? csd_crc32c_combine(crc_, crc, n) : crc;
        written_ += n;
    }

    ObjectStore &st_;
    Device &d_;
    std::string name_;
    Reservation r_;
    bool reserved_ = false;
    SlmBuffer buf_;
    uint64_t tail_ = 0, written_ = 0;
    uint32_t crc_ = csd_crc32c(nullptr, 0);
};

uint64_t ObjectStore::stream_budget(const StreamOptions &opt) const
{
    const uint64_t free = dev_.slm().largest_free(), alone = dev_.slm().size();
    const uint64_t wanted = opt.slm_budget ? std::min(opt.slm_budget, alone) : alone;
    if (t_turn && free < wanted) t_turn->cut_by_others = true;
    return std::min(wanted, free);
}

namespace {

// Units per piece for a run whose SLM need is fixed + per_unit * units (per piece, with
// `inputs` input buffers counted in per_unit and fixed); at least 1, or too_small.
uint64_t units_per_piece(const std::string &what, uint64_t budget, uint64_t fixed, uint64_t per_unit, uint64_t cap)
{
    if (budget <= fixed || (budget - fixed) / per_unit == 0) too_small(what, budget, fixed + per_unit);
    return std::min<uint64_t>(cap, (budget - fixed) / per_unit);
}

}  // namespace

FilterResult ObjectStore::filter(const std::string &src, const FilterSpec &spec, const std::string &dst,
                                 const StreamOptions &opt)
{
    return streamed<FilterResult>(dev_.slm(), [&]() -> FilterResult {
        refuse_read_only(dev_, "filter into object '" + dst + "'");
        const ObjectInfo in = stat(src);
        const uint64_t rs = spec.record_size;
        if (rs == 0 || in.bytes % rs != 0) {
            throw Error("filter on object '" + src + "': its " + std::to_string(in.bytes) +
                            " bytes are not whole records of " + std::to_string(rs),
                        EINVAL);
        }
        uint64_t records = in.bytes / rs;
        if (spec.count) {
            if (spec.count > records) {
                throw Error("filter on object '" + src + "': " + std::to_string(spec.count) + " records asked, it holds " +
                                std::to_string(records),
                            EINVAL);
            }
            records = spec.count;
        }
        if (spec.indices && records > uint64_t{UINT32_MAX} + 1) {
            throw Error("filter on object '" + src + "': indices are u32, and it holds more than 2^32 records", EINVAL);
        }
        const std::string dtype = spec.indices ? "<u4" : in.dtype;
        catalog::check_entry(dst, dtype, in.shape);
        const uint64_t out_unit = spec.indices ? 4 : rs, lba = dev_.ns().lba_size;
        // a piece's need: its input (one or two buffers), its output (worst case: every record)
        const uint64_t budget = stream_budget(opt), slack = 4 * kAlign + 4 * lba + block_;
        const uint64_t cap = std::min<uint64_t>(UINT32_MAX, UINT32_MAX / out_unit);  // count and DW0 are u32
        uint64_t per = units_per_piece("filter on object '" + src + "'", budget, slack, rs + out_unit, cap);
        if (per < records) per = units_per_piece("filter on object '" + src + "'", budget, 2 * slack, 2 * rs + out_unit, cap);
        const std::vector<Piece> pieces = cut(records, rs, per);
        record_stats(opt, pieces);

        StreamedOutput out(*this, dst, records * out_unit, per * out_unit);
        PieceLoader loader(dev_, first_lba(in), static_cast<uint32_t>(lba), per * rs, buffers_for(pieces.size()));
        FilterResult total;
        loader.run(pieces, records * rs, opt.progress, [&](size_t, const Piece &p, Range r) {
            FilterSpec s = spec;
            s.count = static_cast<uint32_t>(p.count);
            s.index_base = static_cast<uint32_t>(p.first);
            const FilterResult fr = programs::filter(dev_, r, out.space(p.count * out_unit), s);
            out.commit(fr.bytes);
            total.bytes += fr.bytes;
            total.matches += fr.matches;
        });
        std::vector<uint64_t> shape;
        if (spec.indices) shape = {total.matches};
        else if (!in.shape.empty()) {
            shape = in.shape;
            shape[0] = total.matches;
        }
        out.finish(dtype, shape);
        return total;
    });
}

uint64_t ObjectStore::checksum(const std::string &name, ChecksumAlgo algo, const StreamOptions &opt)
{
    return streamed<uint64_t>(dev_.slm(), [&]() -> uint64_t {
        const ObjectInfo in = stat(name);
        if (in.bytes == 0) {  // nothing to load: the checksum of no bytes
            if (algo == ChecksumAlgo::crc32c) return csd_crc32c(nullptr, 0);
            return 0xEF46DB3751D8E999ull;  // XXH64 of no bytes, seed 0
        }
        const uint64_t lba = dev_.ns().lba_size, budget = stream_budget(opt), slack = 2 * kAlign + 2 * lba;
        const std::string what = "checksum of object '" + name + "'";
        uint64_t per = units_per_piece(what, budget, slack, 1, UINT64_MAX);
        if (per < in.bytes) {
            if (algo == ChecksumAlgo::xxh64) {  // another algorithm: the drive's answer for it (Invalid Parameters)
                short_of_slm(what + " (" + bytes_text(in.bytes) + ") by xxh64 needs it in SLM whole, and " +
                                bytes_text(per) +
                                " fit: an XXH64 digest cannot be combined from its pieces' digests, and the checksum "
                                "program returns no state to carry on from; crc32c streams an object of any size",
                            EINVAL, slack + in.bytes);
            }
            per = std::max<uint64_t>(lba, round_down(units_per_piece(what, budget, 2 * slack, 2, UINT64_MAX), lba));
        }
        const std::vector<Piece> pieces = cut(in.bytes, 1, per);
        record_stats(opt, pieces);
        PieceLoader loader(dev_, first_lba(in), static_cast<uint32_t>(lba), per, buffers_for(pieces.size()));
        uint64_t sum = 0;
        loader.run(pieces, in.bytes, opt.progress, [&](size_t k, const Piece &p, Range r) {
            const uint64_t s = programs::checksum(dev_, algo, r);
            sum = k ? csd_crc32c_combine(static_cast<uint32_t>(sum), static_cast<uint32_t>(s), p.len) : s;
        });
        return sum;
    });
}

namespace {

// The value the reduce program wrote, as bits, read as what it is.
double as_f64(uint64_t bits)
{
    double v;
    std::memcpy(&v, &bits, 8);
    return v;
}
uint64_t f64_bits(double v)
{
    uint64_t b;
    std::memcpy(&b, &v, 8);
    return b;
}

}  // namespace

std::vector<uint64_t> ObjectStore::reduce(const std::string &name, ReduceOp op, const StreamOptions &opt, bool whole)
{
    return streamed<std::vector<uint64_t>>(dev_.slm(), [&]() -> std::vector<uint64_t> {
        const ObjectInfo in = stat(name);
        const DType dt = reduce_dtype(in);
        const uint64_t e = npy::itemsize(in.dtype);
        const uint64_t rows = in.shape.size() > 1 && !whole ? in.shape[0] : 1;
        const uint64_t cols = rows ? in.bytes / e / rows : 0;
        const std::string what = "reduce of object '" + name + "'";
        if (rows == 0 || cols == 0) throw Error(what + ": it holds no elements", EINVAL);
        const uint64_t row_bytes = cols * e, lba = dev_.ns().lba_size, budget = stream_budget(opt);
        const uint64_t slack = 4 * kAlign + 4 * lba;
        std::vector<uint64_t> result(rows);
        const bool is_float = dt == DType::f32 || dt == DType::f64;

        // Whole rows per piece where a row (and its buffers) fits.
        const uint64_t one_piece = budget > slack ? (budget - slack) / (row_bytes + 8) : 0;
        const uint64_t two_piece = budget > 2 * slack ? (budget - 2 * slack) / (2 * row_bytes + 8) : 0;
        if (cols <= UINT32_MAX && (one_piece >= rows || two_piece >= 1)) {
            const uint64_t per = std::min<uint64_t>(one_piece >= rows ? rows : two_piece, UINT32_MAX / 8);
            const std::vector<Piece> pieces = cut(rows, row_bytes, per);
            record_stats(opt, pieces);
            PieceLoader loader(dev_, first_lba(in), static_cast<uint32_t>(lba), per * row_bytes, buffers_for(pieces.size()));
            SlmBuffer out = dev_.slm().alloc(round_up(per * 8, kAlign), kAlign);
            loader.run(pieces, in.bytes, opt.progress, [&](size_t, const Piece &p, Range r) {
                programs::reduce(dev_, op, dt, r, Range{out.offset(), p.count * 8}, static_cast<uint32_t>(p.count),
                                 static_cast<uint32_t>(cols));
                dev_.slm_read(out.offset(), &result[p.first], p.count * 8);
            });
            return result;
        }

        // Rows wider than a piece: each row in pieces of elements, combined.
        if (dt == DType::i64 && op == ReduceOp::mean) {
            short_of_slm(what + ": a row of " + bytes_text(row_bytes) +
                            " does not fit in the SLM it may use, and the mean of <i8 is its exact 128-bit sum divided "
                            "once: the drive returns no such partial sum for the pieces of a row, so it cannot be streamed "
                            "exactly (reduce sum, or <f8, can)",
                        EINVAL);
        }
        const uint64_t per = units_per_piece(what, budget, 2 * slack + kAlign, 2 * e, UINT32_MAX);
        std::vector<Piece> pieces;
        for (uint64_t r = 0; r < rows; r++) {
            for (Piece p : cut(cols, e, per, r * row_bytes)) pieces.push_back(p);
        }
        record_stats(opt, pieces);
        PieceLoader loader(dev_, first_lba(in), static_cast<uint32_t>(lba), per * e, 2);
        SlmBuffer out = dev_.slm().alloc(kAlign, kAlign);
        // the running answer of the row being reduced
        double sum = 0;                // float sum and mean: the carried sum
        uint64_t isum = 0;             // integer sum: wrapping
        __int128 exact = 0;            // <i4 mean: exact
        bool found = false;            // extremes: whether a piece had a candidate
        uint64_t best_bits = 0, first_bits = 0;  // min/max: the best so far, the row's first piece's
        double best_f = 0;             // its value (floats; argmin/argmax too)
        int64_t best_i = 0;            // integers
        uint64_t best_at = 0;          // argmin/argmax
        const bool want_max = op == ReduceOp::max || op == ReduceOp::argmax;
        loader.run(pieces, in.bytes, opt.progress, [&](size_t, const Piece &p, Range r) {
            const uint64_t row = p.pos / row_bytes, n = p.count;
            if (p.first == 0) {
                sum = 0, isum = 0, exact = 0, found = false, best_at = 0;
            }
            const Range o{out.offset(), 8};
            uint64_t bits = 0;
            if ((op == ReduceOp::sum || op == ReduceOp::mean) && is_float) {
                programs::reduce_sum_from(dev_, dt, r, o, 1, static_cast<uint32_t>(n), sum);
                dev_.slm_read(out.offset(), &bits, 8);
                sum = as_f64(bits);
            } else if (op == ReduceOp::sum || op == ReduceOp::mean) {
                programs::reduce(dev_, ReduceOp::sum, dt, r, o, 1, static_cast<uint32_t>(n));
                dev_.slm_read(out.offset(), &bits, 8);
                isum += bits;
                exact += static_cast<int64_t>(bits);  // an <i4 piece's sum never wraps (< 2^32 elements)
            } else if (op == ReduceOp::min || op == ReduceOp::max) {
                programs::reduce(dev_, op, dt, r, o, 1, static_cast<uint32_t>(n));
                dev_.slm_read(out.offset(), &bits, 8);
                if (p.first == 0) first_bits = bits;
                if (is_float) {
                    const double v = as_f64(bits);
                    if (!std::isnan(v) && (!found || (want_max ? v > best_f : v < best_f))) best_f = v, best_bits = bits, found = true;
                } else {
                    const int64_t v = static_cast<int64_t>(bits);
                    if (!found || (want_max ? v > best_i : v < best_i)) best_i = v, best_bits = bits, found = true;
                }
            } else {  // argmin, argmax: the piece's first extreme, and its value read back
                programs::reduce(dev_, op, dt, r, o, 1, static_cast<uint32_t>(n));
                dev_.slm_read(out.offset(), &bits, 8);
                uint8_t raw[8] = {};
                dev_.slm_read(r.offset + bits * e, raw, e);
                double v;
                int64_t iv = 0;
                if (dt == DType::f32) {
                    float f;
                    std::memcpy(&f, raw, 4);
                    v = f;
                } else if (dt == DType::f64) {
                    std::memcpy(&v, raw, 8);
                } else if (dt == DType::i32) {
                    int32_t i;
                    std::memcpy(&i, raw, 4);
                    iv = i;
                    v = 0;
                } else {
                    std::memcpy(&iv, raw, 8);
                    v = 0;
                }
                if (is_float) {
                    if (!std::isnan(v) && (!found || (want_max ? v > best_f : v < best_f))) {
                        best_f = v, best_at = p.first + bits, found = true;
                    }
                } else if (!found || (want_max ? iv > best_i : iv < best_i)) {
                    best_i = iv, best_at = p.first + bits, found = true;
                }
            }
            if (p.first + n < cols) return;  // the row goes on
            switch (op) {
            case ReduceOp::sum: result[row] = is_float ? f64_bits(sum) : isum; break;
            case ReduceOp::mean:
                result[row] = f64_bits(is_float ? sum / static_cast<double>(cols)
                                                : static_cast<double>(exact) / static_cast<double>(cols));
                break;
            case ReduceOp::min:
            case ReduceOp::max: result[row] = found ? best_bits : first_bits; break;
            default: result[row] = found ? best_at : 0; break;
            }
        });
        return result;
    });
}

namespace {

// convert's element sizes in and out, and the dtype its output is stored as.
struct ConvertShape {
    uint64_t in, out;
    const char *dtype;
};
ConvertShape convert_shape(ConvertOp op)
{
    switch (op) {
    case ConvertOp::f32_f16: return {4, 2, "<f2"};
    case ConvertOp::f32_bf16: return {4, 2, "<u2"};
    case ConvertOp::f16_f32: return {2, 4, "<f4"};
    case ConvertOp::bf16_f32: return {2, 4, "<f4"};
    case ConvertOp::i8_f32: return {1, 4, "<f4"};
    case ConvertOp::f32_i8: return {4, 1, "|i1"};
    case ConvertOp::u8_f32: return {1, 4, "<f4"};
    }
    throw Error("convert: unknown operation " + std::to_string(static_cast<uint32_t>(op)), EINVAL);
}

}  // namespace

uint64_t ObjectStore::convert(const std::string &src, ConvertOp op, const std::string &dst, float scale,
                              int32_t zero_point, const StreamOptions &opt)
{
    return streamed<uint64_t>(dev_.slm(), [&]() -> uint64_t {
        refuse_read_only(dev_, "convert into object '" + dst + "'");
        const ObjectInfo in = stat(src);
        const ConvertShape cs = convert_shape(op);
        const std::string what = "convert of object '" + src + "'";
        if (in.bytes % cs.in) throw Error(what + ": its " + bytes_text(in.bytes) + " are not whole elements", EINVAL);
        const uint64_t count = in.bytes / cs.in;
        const std::vector<uint64_t> shape = in.shape.empty() ? std::vector<uint64_t>{count} : in.shape;
        catalog::check_entry(dst, cs.dtype, shape);
        const uint64_t lba = dev_.ns().lba_size, budget = stream_budget(opt), slack = 4 * kAlign + 4 * lba + block_;
        const uint64_t cap = UINT32_MAX / std::max(cs.in, cs.out);
        uint64_t per = units_per_piece(what, budget, slack, cs.in + cs.out, cap);
        if (per < count) per = units_per_piece(what, budget, 2 * slack, 2 * cs.in + cs.out, cap);
        const std::vector<Piece> pieces = cut(count, cs.in, per);
        record_stats(opt, pieces);
        StreamedOutput out(*this, dst, count * cs.out, per * cs.out);
        PieceLoader loader(dev_, first_lba(in), static_cast<uint32_t>(lba), per * cs.in, buffers_for(pieces.size()));
        loader.run(pieces, in.bytes, opt.progress, [&](size_t, const Piece &p, Range r) {
            out.commit(programs::convert(dev_, op, r, out.space(p.count * cs.out), static_cast<uint32_t>(p.count), scale, zero_point));
        });
        return out.finish(cs.dtype, shape);
    });
}

FilterResult ObjectStore::run_program(Program &prog, uint32_t mode, const std::string &src, const std::string &dst,
                                      const std::vector<uint64_t> &params, const StreamOptions &opt)
{
    return streamed<FilterResult>(dev_.slm(), [&]() -> FilterResult {
        if (mode != CSD_BPF_REDUCE) refuse_read_only(dev_, "program run into object '" + dst + "'");
        if (mode > CSD_BPF_REDUCE) throw Error("program run over an object: mode filter, map or reduce", EINVAL);
        const ObjectInfo in = stat(src);
        const uint64_t rs = prog.record_size();
        const std::string what = "program " + std::to_string(prog.id()) + " over object '" + src + "'";
        if (rs == 0 || in.bytes % rs) {
            throw Error(what + ": it holds " + bytes_text(in.bytes) + ", not a whole number of " + std::to_string(rs) +
                            "-byte records",
                        EINVAL);
        }
        const uint64_t records = in.bytes / rs;
        const uint64_t out_unit = mode == CSD_BPF_FILTER ? rs : mode == CSD_BPF_MAP ? 8 : 0;
        const uint64_t lba = dev_.ns().lba_size, budget = stream_budget(opt), slack = 4 * kAlign + 4 * lba + block_;
        const uint64_t cap = out_unit ? std::min<uint64_t>(UINT32_MAX, UINT32_MAX / out_unit) : UINT32_MAX;
        uint64_t per = units_per_piece(what, budget, slack, rs + out_unit, cap);
        if (per < records) per = units_per_piece(what, budget, 2 * slack, 2 * rs + out_unit, cap);
        const std::vector<Piece> pieces = cut(records, rs, per);
        record_stats(opt, pieces);
        std::unique_ptr<StreamedOutput> out;
        if (out_unit) {
            const char *dtype = mode == CSD_BPF_MAP ? "<u8" : "";
            catalog::check_entry(dst, dtype, mode == CSD_BPF_MAP ? std::vector<uint64_t>{records} : std::vector<uint64_t>{});
            out = std::make_unique<StreamedOutput>(*this, dst, records * out_unit, per * out_unit);
        }
        if (pieces.size() > 1 && pieces.back().first > UINT32_MAX) {  // csd_index()'s base is a u32
            throw Error(what + ": it holds more than 2^32 records, past what a piece's csd_index() can start from", EINVAL);
        }
        PieceLoader loader(dev_, first_lba(in), static_cast<uint32_t>(lba), per * rs, buffers_for(pieces.size()));
        FilterResult total;
        loader.run(pieces, in.bytes, opt.progress, [&](size_t, const Piece &p, Range r) {
            const uint32_t n = static_cast<uint32_t>(p.count), base = static_cast<uint32_t>(p.first);
            if (mode == CSD_BPF_FILTER) {
                const FilterResult fr = prog.run_filter(r, out->space(p.count * out_unit), n, params, base);
                out->commit(fr.bytes);
                total.bytes += fr.bytes;
                total.matches += fr.matches;
            } else if (mode == CSD_BPF_MAP) {
                const Range s = out->space();
                prog.run_map(r, Range{s.offset, p.count * 8}, n, params, base);
                out->commit(p.count * 8);
                total.bytes += p.count * 8;
            } else {
                total.bytes += prog.run_reduce(r, n, params, base);  // wrapping, as the program's own sum
            }
        });
        if (mode == CSD_BPF_MAP) {
            total.matches = records;
            out->finish("<u8", {records});
        } else if (mode == CSD_BPF_FILTER) {
            out->finish("", {});
        } else {
            total.matches = records;
        }
        return total;
    });
}

void ObjectStore::gemm(const std::string &a, const std::string &b, const std::string &c, const StreamOptions &opt)
{
    return streamed<void>(dev_.slm(), [&]() -> void {
        refuse_read_only(dev_, "gemm into object '" + c + "'");
        const ObjectInfo ai = stat(a), bi = stat(b);
        if (ai.dtype != "<f4" || bi.dtype != "<f4" || ai.shape.size() != 2 || bi.shape.size() != 2 ||
            ai.shape[1] != bi.shape[0]) {
            throw Error("gemm needs 2-D <f4 tensors A (m x k) and B (k x n) ('" + a + "', '" + b + "')", EINVAL);
        }
        const uint64_t m = ai.shape[0], k = ai.shape[1], n = bi.shape[1];
        const std::string what = "gemm of '" + a + "' and '" + b + "'";
        if (m == 0 || n == 0 || k == 0 || m > INT32_MAX || n > INT32_MAX || k > INT32_MAX) {
            throw Error(what + ": every dimension must be 1 to 2^31-1", EINVAL);
        }
        catalog::check_entry(c, "<f4", {m, n});
        const uint64_t lba = dev_.ns().lba_size, budget = stream_budget(opt), slack = 6 * kAlign + 6 * lba + block_;
        const uint64_t a_row = k * 4, c_row = n * 4, b_row = n * 4, b_bytes = k * n * 4;
        const uint64_t b_buf = PieceLoader::buffer_bytes(b_bytes, static_cast<uint32_t>(lba));
        // The drive runs gemm in blocks of this many rows of C by this much depth (gemm.cc): pieces
        // of multiples of them make the same calls of the same sizes as one Execute over the whole.
        const uint64_t drive_rows = csd_gemm_block_rows(n, k), drive_depth = csd_gemm_block_k(n, k);
        const uint64_t cap = UINT32_MAX / c_row;  // DW0: a piece's C bytes
        auto align_rows = [&](uint64_t per) { return per < m && per >= drive_rows ? round_down(per, drive_rows) : per; };
        auto abuf = [&](uint64_t rows) { return PieceLoader::buffer_bytes(rows * a_row, static_cast<uint32_t>(lba)); };
        auto bbuf = [&](uint64_t depth) { return PieceLoader::buffer_bytes(depth * b_row, static_cast<uint32_t>(lba)); };
        auto cbuf = [&](uint64_t rows) { return StreamedOutput::buffer_bytes(rows * c_row, block_); };
        // B resident, A and C by rows: pieces of a multiple of the drive's block of rows
        const uint64_t one = std::min(cap, budget > b_buf + slack ? (budget - b_buf - slack) / (a_row + c_row) : 0);
        uint64_t per = one >= m ? m
                                : align_rows(std::min(cap, budget > b_buf + 2 * slack ? (budget - b_buf - 2 * slack) / (2 * a_row + c_row) : 0));
        uint64_t depth = k;  // B's rows a piece of B holds (k: B resident)
        int b_bufs = 1;
        if (per < m && per < drive_rows) {
            // B by rows of depth too, loaded once per piece of A (one buffer of A, two of B when
            // they fit, so that the next piece of B loads while this one runs)
            const uint64_t rows0 = std::min(m, drive_rows), fixed = 4 * slack + abuf(rows0) + cbuf(rows0);
            if (budget < fixed + bbuf(std::min(k, drive_depth))) {
                short_of_slm(what + ": one block of the drive's gemm (" + std::to_string(rows0) + " rows of A, " +
                                std::to_string(std::min(k, drive_depth)) + " rows of B and " + std::to_string(rows0) +
                                " rows of C: " + bytes_text(fixed + bbuf(std::min(k, drive_depth))) +
                                " with their buffers) does not fit in the SLM it may use (" + bytes_text(budget) +
                                "): the drive computes C csd_gemm_block_rows(n, k) rows by csd_gemm_block_k(n, k) "
                                "of depth at a time, and OpenBLAS's bits depend on the shape of each call, so smaller "
                                "pieces would not give one Execute's result; give it more SLM",
                            EINVAL, fixed + bbuf(std::min(k, drive_depth)));
            }
            depth = std::min(k, drive_depth);
            b_bufs = budget >= fixed + 2 * bbuf(depth) ? 2 : 1;
            // the most rows of A and C beside that
            const uint64_t left = budget - 4 * slack - b_bufs * bbuf(depth);
            per = std::max(rows0, align_rows(std::min(cap, left / (a_row + c_row))));
            if (per >= m) {  // all of A fits: grow B's pieces with what is left
                per = m;
                const uint64_t room = budget - 4 * slack - abuf(m) - cbuf(m);
                depth = std::min(k, std::max(depth, round_down(room / b_bufs / b_row, drive_depth)));
            }
        }
        const std::vector<Piece> pieces = cut(m, a_row, per);
        record_stats(opt, pieces);
        StreamedOutput out(*this, c, m * c_row, per * c_row);
        if (depth == k) {
            SlmBuffer bb = dev_.slm().alloc(b_buf, kAlign);
            dev_.slm_load(first_lba(bi), (b_bytes + lba - 1) / lba, bb.offset());
            PieceLoader loader(dev_, first_lba(ai), static_cast<uint32_t>(lba), per * a_row, buffers_for(pieces.size()));
            loader.run(pieces, ai.bytes, opt.progress, [&](size_t, const Piece &p, Range r) {
                programs::gemm(dev_, r, Range{bb.offset(), b_bytes}, Range{out.space().offset, p.count * c_row},
                               static_cast<uint32_t>(p.count), static_cast<uint32_t>(n), static_cast<uint32_t>(k));
                out.commit(p.count * c_row);
            });
        } else {
            const std::vector<Piece> b_pieces = cut(k, b_row, depth);
            if (opt.stats) opt.stats->pieces += pieces.size() * (b_pieces.size() - 1);  // each A piece by each B piece
            PieceLoader a_loader(dev_, first_lba(ai), static_cast<uint32_t>(lba), per * a_row, 1);
            PieceLoader b_loader(dev_, first_lba(bi), static_cast<uint32_t>(lba), depth * b_row, b_bufs);
            a_loader.run(pieces, ai.bytes, opt.progress, [&](size_t, const Piece &p, Range r) {
                const Range cr{out.space().offset, p.count * c_row};
                b_loader.run(b_pieces, b_bytes, nullptr, [&](size_t, const Piece &bp, Range br) {
                    const uint64_t k_first = bp.pos / b_row;
                    programs::gemm_depth_piece(dev_, r, br, cr, static_cast<uint32_t>(p.count), static_cast<uint32_t>(n),
                                               static_cast<uint32_t>(bp.count), static_cast<uint32_t>(k),
                                               static_cast<uint32_t>(k_first), 1.0f, k_first == 0 ? 0.0f : 1.0f);
                });
                out.commit(p.count * c_row);
            });
        }
        out.finish("<f4", {m, n});
    });
}

namespace {

// A frame of a compressed object: its bytes, and the most it can decompress to.
struct Frame {
    uint64_t pos, len, max_out;
};

// A frame size for `split -b` that fits a piece of `fits` bytes in and out: the largest power
// of two of at most half of it (a compressed frame may be a little larger than its data), as
// split writes it ("512K", "1M").
std::string split_size(uint64_t fits)
{
    uint64_t s = 1;
    while (s * 2 <= fits / 2) s *= 2;
    if (s >= (1u << 20)) return std::to_string(s >> 20) + "M";
    if (s >= 1024) return std::to_string(s >> 10) + "K";
    return std::to_string(s);
}

}  // namespace

uint64_t ObjectStore::decompress(const std::string &src, Codec codec, const std::string &dst, const StreamOptions &opt)
{
    if (codec != Codec::zstd && codec != Codec::lz4) {  // its frames could not be found: say so, not "no LZ4 frame"
        throw Error("decompress of object '" + src + "': unknown codec " + std::to_string(static_cast<uint32_t>(codec)) +
                        " (zstd " + std::to_string(static_cast<uint32_t>(Codec::zstd)) + ", lz4 " +
                        std::to_string(static_cast<uint32_t>(Codec::lz4)) + ")",
                    EINVAL);
    }
    return streamed<uint64_t>(dev_.slm(), [&]() -> uint64_t {
        refuse_read_only(dev_, "decompress into object '" + dst + "'");
        const ObjectInfo in = stat(src);
        const std::string what = "decompress of object '" + src + "'";
        catalog::check_entry(dst, "", {});
        // Frames, found from their headers: small reads of the object, a block's header at a time.
        uint64_t win_at = UINT64_MAX;
        std::vector<uint8_t> win(4096);
        auto bytes_at = [&](uint64_t pos, uint64_t n) -> uint64_t {  // n <= 8 bytes at pos, little-endian
            if (pos + n > in.bytes) throw Error(what + ": a frame runs past the object's end at byte " + std::to_string(pos), EINVAL);
            uint64_t v = 0;
            for (uint64_t i = 0; i < n; i++) {
                const uint64_t at = pos + i;
                if (at < win_at || at >= win_at + win.size()) {
                    win_at = round_down(at, win.size());
                    read_bytes(in, win_at, std::min<uint64_t>(win.size(), in.bytes - win_at), win.data());
                }
                v |= uint64_t{win[at - win_at]} << (8 * i);
            }
            return v;
        };
        std::vector<Frame> frames;
        for (uint64_t pos = 0; pos < in.bytes;) {
            const uint64_t magic = bytes_at(pos, 4);
            if ((magic & 0xFFFFFFF0u) == 0x184D2A50u) {  // skippable frame (both formats)
                const uint64_t len = 8 + bytes_at(pos + 4, 4);
                frames.push_back({pos, len, 0});
                pos += len;
                continue;
            }
            Frame f{pos, 0, 0};
            uint64_t at = pos + 4;
            if (codec == Codec::zstd) {
                if (magic != 0xFD2FB528u) throw Error(what + ": no zstd frame at byte " + std::to_string(pos), EINVAL);
                const uint64_t fhd = bytes_at(at++, 1);
                const uint64_t fcs_flag = fhd >> 6, single = (fhd >> 5) & 1, checksum = (fhd >> 2) & 1, did = fhd & 3;
                if (!single) at++;  // window descriptor
                at += did == 0 ? 0 : did == 1 ? 1 : did == 2 ? 2 : 4;
                const uint64_t fcs_len = fcs_flag == 0 ? (single ? 1 : 0) : fcs_flag == 1 ? 2 : fcs_flag == 2 ? 4 : 8;
                uint64_t content = UINT64_MAX;
                if (fcs_len) content = bytes_at(at, fcs_len) + (fcs_len == 2 ? 256 : 0);
                at += fcs_len;
                uint64_t out_max = 0;
                for (;;) {
                    const uint64_t bh = bytes_at(at, 3);
                    const uint64_t last = bh & 1, type = (bh >> 1) & 3, size = bh >> 3;
                    at += 3 + (type == 1 ? 1 : size);  // RLE: one byte
                    out_max += type == 0 || type == 1 ? size : 128 * 1024;
                    if (last) break;
                }
                at += checksum ? 4 : 0;
                f.max_out = std::min(content, out_max);
            } else {
                if (magic != 0x184D2204u) throw Error(what + ": no LZ4 frame at byte " + std::to_string(pos), EINVAL);
                const uint64_t flg = bytes_at(at, 1), bd = bytes_at(at + 1, 1);
                const bool block_sum = (flg >> 4) & 1, has_size = (flg >> 3) & 1, content_sum = (flg >> 2) & 1, did = flg & 1;
                const uint64_t block_max = 1ull << (8 + 2 * ((bd >> 4) & 7));
                uint64_t content = UINT64_MAX;
                at += 2;
                if (has_size) content = bytes_at(at, 8), at += 8;
                at += did ? 4 : 0;
                at += 1;  // header checksum
                uint64_t out_max = 0;
                for (;;) {
                    const uint64_t bs = bytes_at(at, 4);
                    at += 4;
                    if (bs == 0) break;
                    at += (bs & 0x7FFFFFFFu) + (block_sum ? 4 : 0);
                    out_max += block_max;
                }
                at += content_sum ? 4 : 0;
                f.max_out = std::min(content, out_max);
            }
            f.len = at - pos;
            if (at > in.bytes) throw Error(what + ": the frame at byte " + std::to_string(pos) + " runs past its end", EINVAL);
            frames.push_back(f);
            pos = at;
        }
        // Pieces of whole frames: the input at most a quarter of the budget, the output at most half.
        const uint64_t lba = dev_.ns().lba_size, budget = stream_budget(opt), slack = 4 * kAlign + 4 * lba + block_;
        uint64_t total_out = 0;
        for (const Frame &f : frames) total_out += f.max_out;
        uint64_t in_max = 0, out_max = 0;
        const bool whole = in.bytes + total_out + slack <= budget;
        if (whole) {
            in_max = in.bytes, out_max = total_out;
        } else if (budget > 2 * slack) {
            in_max = (budget - 2 * slack) / 4, out_max = std::min<uint64_t>(UINT32_MAX, (budget - 2 * slack) / 2);
        } else {
            short_of_slm(what + ": the SLM it may use (" + bytes_text(budget) + ") leaves no room for a piece: two pieces' "
                            "alignment and blocks take " + bytes_text(2 * slack) + " before any frame; give it more SLM",
                        EINVAL);
        }
        std::vector<Piece> pieces;
        std::vector<uint64_t> piece_out;
        for (const Frame &f : frames) {
            if (f.len > in_max || f.max_out > out_max) {
                short_of_slm(what + ": its frame at byte " + std::to_string(f.pos) + " (" + bytes_text(f.len) +
                                ", up to " + bytes_text(f.max_out) + " decompressed) does not fit in a piece of the SLM it may use (" +
                                bytes_text(in_max) + " in, " + bytes_text(out_max) +
                                " out): a frame's blocks refer back into its own window, so a frame cannot be split; "
                                "compress it in frames of at most " + split_size(std::min(in_max, out_max)) +
                                " each (split -b " + split_size(std::min(in_max, out_max)) + " --filter='" +
                                (codec == Codec::zstd ? "zstd" : "lz4") + " -c' FILE > FILE." +
                                (codec == Codec::zstd ? "zst" : "lz4") +
                                ": the tools read concatenated frames back as one stream; zstd's --block-size and lz4's "
                                "-B size the blocks inside one frame) or give it more SLM",
                            EINVAL);
            }
            if (!pieces.empty() && pieces.back().len + f.len <= in_max && piece_out.back() + f.max_out <= out_max) {
                pieces.back().len += f.len;
                pieces.back().count++;
                piece_out.back() += f.max_out;
            } else {
                pieces.push_back({f.pos, f.len, 0, 1});
                piece_out.push_back(f.max_out);
            }
        }
        record_stats(opt, pieces);
        uint64_t biggest_in = 0, biggest_out = 0;
        for (size_t i = 0; i < pieces.size(); i++) {
            biggest_in = std::max(biggest_in, pieces[i].len);
            biggest_out = std::max(biggest_out, piece_out[i]);
        }
        StreamedOutput out(*this, dst, total_out, biggest_out);
        PieceLoader loader(dev_, first_lba(in), static_cast<uint32_t>(lba), biggest_in, buffers_for(pieces.size()));
        loader.run(pieces, in.bytes, opt.progress, [&](size_t, const Piece &, Range r) {
            out.commit(programs::decompress(dev_, codec, r, out.space()));
        });
        return out.finish("", {});
    });
}

}  // namespace csd
