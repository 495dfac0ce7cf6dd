// SPDX-License-Identifier: MIT
// store.hpp - named objects (typed tensors and raw blobs) kept on the namespace itself,
// with a catalog that survives reboots and stays consistent if power is cut at any
// point of an update: data is written copy-on-write into space reserved first, then a
// checksummed, generation-numbered superblock (with a small journal of changes since the
// last full catalog) goes to the older of two slots by the drive's Compare and Write, so
// that writers in several processes (or hosts) never lose each other's updates; an
// acknowledged put or rm is durable (flushed) before it returns. docs/store.md.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "csd/device.hpp"
#include "csd/programs.hpp"

namespace csd {

// What the catalog knows about one object.
struct ObjectInfo {
    std::string name;
    std::string dtype;            // numpy-style ("<f4", "<i8", "|u1"); empty for a blob
    std::vector<uint64_t> shape;  // empty for a blob
    uint64_t bytes = 0;
    uint64_t block = 0;           // first store block of its data
    uint32_t crc32c = 0;          // of its bytes
    uint64_t generation = 0;      // catalog generation that wrote it
    bool is_tensor() const { return !dtype.empty(); }
};

// Space a writer reserved for data it is writing (or left behind when it died mid-put).
struct Reservation {
    uint64_t id = 0;
    uint64_t block = 0, blocks = 0;
    uint64_t time = 0;  // seconds since the epoch, when reserved
    std::string owner;  // "host:pid" of the writer
};

// Called during long transfers with bytes done so far and the total.
using Progress = std::function<void(uint64_t done, uint64_t total)>;

class Program;

// How a program over stored objects uses SLM (docs/store.md, "Objects larger than SLM").
// Every program call of the store takes an object of any size: one larger than the SLM it may
// use streams through SLM in pieces cut on record (row, element, frame) boundaries, the SLM
// Load of the next piece running while the program runs on this one, and the pieces' answers
// are combined exactly as one Execute over the whole object would give them.
struct StreamOptions {
    // SLM bytes the call may hold at once; 0: the largest free range of this process's SLM
    // when the call starts (SlmAllocator::largest_free). A call short of SLM that other
    // streamed calls of the process hold waits for them to free some (docs/store.md).
    uint64_t slm_budget = 0;
    // Called after each piece with the input bytes done and the total; an exception it throws
    // (a cancel) stops the run: nothing is stored, the SLM and the space reserved are freed,
    // and the exception propagates.
    Progress progress;
    // Where given: how the run went (pieces, their largest size in bytes).
    struct Stats {
        uint64_t pieces = 0, piece_bytes = 0;
    } *stats = nullptr;
};

// Where a checked whole-object read (ObjectStore::get_into) puts the bytes: host memory,
// GPU memory through pinned buffers (csd::gpu::Landing), ... The store owns the object's
// layout on the namespace, the CRC-32C check and the retry; a destination only moves bytes.
class ObjectSink {
public:
    // Reads bytes [pos, pos + n) of the object being landed into host memory at `host`;
    // safe to call from several threads at once.
    using Fill = std::function<void(uint64_t pos, uint64_t n, uint8_t *host)>;
    virtual ~ObjectSink() = default;
    // One attempt at landing the object `o` describes: call fill over pieces that cover
    // [0, o.bytes) once each, in any order and from any threads, and move each piece where
    // it belongs; return (or throw, to give up: an object larger than the destination,
    // say) only when no call of fill is still running. Called again, with the entry read
    // then, when another writer replaced the object meanwhile.
    virtual void land(const ObjectInfo &o, const Fill &fill) = 0;

    // Checks bytes [pos, pos + n) of the object being landed where they lie (CRC-32C over the
    // mapped namespace); safe to call from several threads at once.
    using Check = std::function<void(uint64_t pos, uint64_t n)>;
    // Whether this destination can copy straight from the namespace where the device maps it
    // into this process (Device::namespace_host_pointer, InProcess: the simulated peer-to-peer drive).
    virtual bool takes_mapped() const { return false; }
    // One attempt at landing o from its bytes in place, `bytes` (o.bytes of them, read-only):
    // copy them where they belong and call check over pieces that cover [0, o.bytes) once
    // each, from any threads, while the copy runs; return (or throw) only when the copy is
    // done and no call of check is running. The store then confirms that the object was not
    // replaced meanwhile (its space cannot have been reused while it stayed in the catalog),
    // so the bytes checked are the bytes copied. Called only where takes_mapped() is true,
    // after the drive ran the object's Reads (Device::read_lbas_mapped: checked, counted).
    virtual void land_mapped(const ObjectInfo &o, const uint8_t *bytes, const Check &check);

    // Reports the CRC-32C of bytes [pos, pos + n) of the object as they landed; safe to call
    // from several threads at once.
    using Landed = std::function<void(uint64_t pos, uint64_t n, uint32_t crc)>;
    // Whether this destination computes the CRC-32C of the bytes where they landed (on the
    // GPU): the store then calls land_checked instead of land or land_mapped.
    virtual bool checks_landed() const { return false; }
    // One attempt at landing o, checked where it landed: copy its bytes from `mapped` (o.bytes
    // of them in the mapped namespace, read-only) where that is not null and the destination
    // can — after the drive ran those LBAs' Reads (Device::read_lbas_mapped), so that they are
    // checked and counted as any Read — else through fill (which then reads without
    // checking), and report through landed
    // the CRC-32C, computed over the landed copy, of pieces that cover [0, o.bytes) once each;
    // return (or throw) only when no call of fill is running. The check covers the bytes the
    // user gets, so the store needs no confirmation that the object stayed put. Called only
    // where checks_landed() is true.
    virtual void land_checked(const ObjectInfo &o, const Fill &fill, const uint8_t *mapped, const Landed &landed);
};

// Host memory of a fixed size as a destination; a larger object fails with ENOSPC.
class MemorySink : public ObjectSink {
public:
    // Lands into buf[0, capacity).
    MemorySink(void *buf, uint64_t capacity) : buf_(static_cast<uint8_t *>(buf)), capacity_(capacity) {}
    // Fills the buffer in steps of a few MiB.
    void land(const ObjectInfo &o, const Fill &fill) override;

private:
    uint8_t *buf_;
    uint64_t capacity_;
};

class ObjectStore {
public:
    // Writes an empty store over the whole namespace (existing objects are forgotten). Unless
    // force, refuses (EEXIST, naming what it found) a namespace whose first 256 KiB or last
    // 128 KiB hold a partition table (MBR, GPT), a filesystem or volume signature (ext2/3/4, XFS,
    // btrfs, swap, LUKS, FAT, NTFS, exFAT, ISO 9660, LVM2, md) or an object store: a real
    // drive is not overwritten by mistake. A zeroed namespace needs no force.
    static void format(Device &dev, bool force = false);
    // Throws the error format() without force gives (EEXIST, naming what it found) where the
    // namespace holds something format would overwrite; returns where it holds nothing known.
    static void check_blank(Device &dev);
    // What the namespace holds that format would overwrite, in words ("an ext2/3/4 filesystem
    // (magic EF53h at byte 1080)"); "" where it holds nothing format knows.
    static std::string holds(Device &dev);
    // Throws EEXIST, naming what is there, where LBAs [slba, slba + nlb) hold part of an
    // object store on the namespace (its superblocks, catalog, an object or reserved space):
    // a raw write there (a media program's table) would destroy it. Returns where
    // the namespace holds no store or the blocks are free in it (a later put may take them).
    static void check_raw_write(Device &dev, uint64_t slba, uint64_t nlb, const std::string &what);
    // Throws EEXIST, writing nothing, where the namespace holds what holds() names: what (a
    // writer of raw LBAs: a B+-tree, an embedding table) at LBAs lba..lba+blocks-1 would
    // write into it; force_how says how to write anyway. Returns where it holds nothing known.
    static void refuse_raw_write(Device &dev, const std::string &what, uint64_t lba, uint64_t blocks,
                                 const std::string &force_how);
    // Opens the store on the device's namespace; throws csd::Error (ENOENT) if there is
    // none ("run csdctl format") or if both superblocks are damaged.
    explicit ObjectStore(Device &dev);
    ~ObjectStore();

    // Stores (or replaces) an object; durable when it returns. progress is called after each
    // 4 MiB written; an exception it throws (a cancel) stops the put, which then releases the
    // space it reserved, stores nothing (an older version stays) and rethrows it. Space of a
    // put killed without that chance stays reserved until reclaim().
    void put(const std::string &name, const void *data, uint64_t bytes, const std::string &dtype = "",
             const std::vector<uint64_t> &shape = {}, const Progress &progress = {});
    // Stores (or replaces) an object read from src a chunk at a time (csd/store_io.hpp),
    // host memory bounded by two chunks whatever its size; its CRC-32C computed as it
    // streams; durable when it returns. A source of unknown size (a pipe) is given space that
    // grows as it is read (in place where the blocks after it are free, else moved to a
    // larger free range). progress(done, total) after each chunk, total 0 where the size is
    // unknown; an exception from it or from src cancels as put() above does; a source that
    // gives other than the bytes its size() promised fails (EIO) and stores nothing.
    void put(const std::string &name, class ObjectSource &src, const std::string &dtype = "",
             const std::vector<uint64_t> &shape = {}, const Progress &progress = {});
    // The whole object, checked against its CRC-32C.
    std::vector<uint8_t> get(const std::string &name, const Progress &progress = {});
    // The whole object into a destination, checked against its CRC-32C (the CRCs of the
    // pieces the destination read, combined) and landed again when another writer replaced
    // it meanwhile; throws EIO, as get() does, when it does not check out. Returns the
    // catalog entry of the version that landed.
    ObjectInfo get_into(const std::string &name, ObjectSink &sink, const Progress &progress = {});
    // len bytes from offset of an object into buf (ranged read; not CRC-checked).
    void read(const std::string &name, uint64_t offset, uint64_t len, void *buf, const Progress &progress = {});
    ObjectInfo stat(const std::string &name) const;
    bool exists(const std::string &name) const;
    std::vector<ObjectInfo> list() const;
    // Removes an object; durable when it returns.
    void remove(const std::string &name);
    uint64_t generation() const;
    // Reservations in the catalog: writers' puts in progress, or leftovers of killed ones.
    std::vector<Reservation> reservations() const;
    // Frees reservations older than max_age_s seconds (space of puts whose writer died);
    // returns how many. Only safe when no writer has been writing that long.
    size_t reclaim(uint64_t max_age_s);
    // Whether several writers may update at once: arbitrated by the drive (Compare and
    // Write), or, without it, on one host by a lock on the device node (docs/store.md;
    // another host is then refused by the superblock's lease). False: one writer only.
    bool multi_writer() const { return cas_ || !node_.empty(); }
    // The namespace LBA where an object's data starts (its bytes are contiguous).
    uint64_t first_lba(const ObjectInfo &o) const { return o.block * lbas_per_block_; }
    // Free space as of the newest catalog.
    uint64_t free_bytes() const;
    // Bytes of a store block (max(4096, LBA size)): a reservation holds blocks of it.
    uint32_t block_size() const { return block_; }

    // Loads an object into SLM (SLM Load, no bus crossing); the buffer is block-rounded.
    SlmBuffer load(const std::string &name);
    // Creates an object from bytes already in SLM (SLM Store), durable when it returns.
    void put_from_slm(const std::string &name, const SlmBuffer &src, uint64_t bytes, const std::string &dtype = "",
                      const std::vector<uint64_t> &shape = {});
    // --- programs over objects of any size (store_stream.cc; StreamOptions above) ---
    // filter on object src into object dst, inside the drive (spec.count 0: every record);
    // pieces are cut on record boundaries and their outputs appended in order.
    FilterResult filter(const std::string &src, const FilterSpec &spec, const std::string &dst,
                        const StreamOptions &opt = {});
    // checksum of an object, computed in the drive: CRC-32C of any size (the pieces' CRCs
    // combined); XXH64 only of an object that fits in one piece (EINVAL naming why: its
    // digest cannot be combined from pieces' digests).
    uint64_t checksum(const std::string &name, ChecksumAlgo algo, const StreamOptions &opt = {});
    // reduce of a tensor of <f4, <f8, <i4 or <i8: one result per row (rows: shape[0] of a
    // tensor of two or more dimensions, else one row), as the reduce program writes it (f64
    // bits for float results and means, i64 for integer sum/min/max, u64 for argmin/argmax).
    // Rows wider than a piece are split: sums carry on in element order (csd_reduce_carry_params),
    // extremes combine keeping the first; an <i8 mean of such a row is EINVAL (its exact
    // 128-bit sum cannot come back from the drive).
    // whole: one row of every element, whatever the shape.
    std::vector<uint64_t> reduce(const std::string &name, ReduceOp op, const StreamOptions &opt = {}, bool whole = false);
    // convert (07h) of a tensor into object dst (same shape; f16 as <f2, bf16 as <u2, i8 as |i1,
    // u8 and i8 in as f32 out); returns bytes written.
    uint64_t convert(const std::string &src, ConvertOp op, const std::string &dst, float scale = 1.0f,
                     int32_t zero_point = 0, const StreamOptions &opt = {});
    // decompress (0Ah) of an object holding concatenated zstd frames or LZ4 frames into object
    // dst (a blob); pieces are whole frames (a frame larger than the budget, compressed or
    // not, is EINVAL naming why: a frame's blocks refer back into its own window). Returns bytes.
    uint64_t decompress(const std::string &src, Codec codec, const std::string &dst, const StreamOptions &opt = {});
    // gemm: object c = a (m x k) * b (k x n), 2-D <f4 tensors, in the drive; A, B and C of any
    // size: A and C tiled by rows in multiples of the drive's block of rows (csd_gemm_block_rows)
    // and, when B does not fit beside them, B by rows of depth in multiples of the drive's block
    // of depth (csd_gemm_block_k; B is then loaded once per piece of A), so that each block is the
    // OpenBLAS call one Execute makes and the bits agree. EINVAL naming why when one block of
    // each does not fit in the SLM it may use.
    void gemm(const std::string &a, const std::string &b, const std::string &c, const StreamOptions &opt = {});
    // A downloaded program over the records of object src: filter (into dst), map (one u64 per
    // record into dst, <u8), reduce (the wrapping u64 sum; dst unused). Pieces are cut on
    // record boundaries (the program's record size). The result of filter; map gives
    // {bytes, records}; reduce gives {sum, records}.
    FilterResult run_program(Program &prog, uint32_t mode, const std::string &src, const std::string &dst,
                             const std::vector<uint64_t> &params = {}, const StreamOptions &opt = {});

private:
    struct Extent {
        uint64_t block, blocks;
    };
    struct State;  // the newest committed state (store.cc)
    // Journal entries, encoded.
    using Changes = std::vector<uint8_t>;

    uint64_t blocks_for(uint64_t bytes) const { return bytes == 0 ? 1 : (bytes + block_ - 1) / block_; }
    uint64_t allocate(const State &s, uint64_t blocks) const;
    State refresh() const;
    const State &current() const;
    bool read_slot(int slot, State *out, std::vector<uint8_t> *raw) const;
    bool load_base(State *s) const;
    // Appends the changes make() returns for the newest state and commits them; retries
    // with a fresh state when another writer committed first (no changes: no commit).
    void update(const std::function<Changes(const State &)> &make, bool compacting = false);
    bool write_superblock(const State &from, const Extent &base, uint64_t base_bytes, uint32_t base_crc,
                          uint32_t base_format, const std::vector<uint8_t> &journal);
    void compact();
    Reservation reserve(uint64_t blocks, bool compacting = false);
    void release(uint64_t id);
    void write_blocks(uint64_t block, const void *data, uint64_t bytes, const Progress &progress = {});
    // Bytes [pos, pos + n) of object o from the namespace (whole LBAs straight into out).
    void read_bytes(const ObjectInfo &o, uint64_t pos, uint64_t n, uint8_t *out);
    // One landing of o into sink; returns the CRC-32C of the bytes the sink was given.
    // *mapped: whether it landed from the mapped namespace (ObjectSink::land_mapped).
    uint32_t land_once(const ObjectInfo &o, ObjectSink &sink, const Progress &progress, bool *mapped);
    // Commits o into reservation's space; also releases `also` (reservations a streaming put
    // grew into) in the same commit.
    void commit_put(const ObjectInfo &o, uint64_t reservation, const std::vector<uint64_t> &also = {});
    // Reserves blocks [block, block + blocks) if they are free in the newest state; false if not.
    bool reserve_at(uint64_t block, uint64_t blocks, Reservation *out);
    struct StreamSpace;  // a streaming put's reservations (store.cc)
    // Makes sp hold at least need blocks, keeping the `written` bytes already in it.
    void grow(StreamSpace &sp, uint64_t need, uint64_t written, std::vector<uint8_t> &scratch);
    // Releases reservations, reporting none of their errors (a put or a streamed run giving up);
    // tries again for a few seconds while the kernel answers EAGAIN (a controller reset). Takes
    // mu_ for each try (the caller holds it not), never while it waits.
    void release_quietly(const std::vector<uint64_t> &ids);
    // fn() with mu_ held (a catalog update of a put, whose data moves without it).
    template <class Fn>
    auto locked(Fn &&fn) -> decltype(fn())
    {
        std::lock_guard<std::mutex> g(mu_);
        return fn();
    }
    friend class StreamedOutput;  // store_stream.cc: an object written from SLM a piece at a time
    uint64_t stream_budget(const StreamOptions &opt) const;

    Device &dev_;
    mutable std::mutex mu_;  // one update at a time within this process
    uint32_t block_ = 4096;
    uint64_t lbas_per_block_ = 8;
    bool cas_ = false;
    std::string node_;  // without Compare and Write: the device node (or file) each commit locks
    mutable std::unique_ptr<State> cache_;  // the last state read (its base catalog is reused)
};

}  // namespace csd
