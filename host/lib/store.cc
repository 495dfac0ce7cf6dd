// store.cc - the object store on the namespace.
//
// Layout, in store blocks of max(4 KiB, LBA size):
//   block 0, 1   superblock slots A and B (the newer valid one wins)
//   block 2 ...  object data and catalogs, allocated copy-on-write
// An update writes new data, flushes, writes a new catalog elsewhere, flushes, then
// writes a superblock (generation + 1, CRC-32C) into the slot the current one is not in,
// and flushes. A cut at any point leaves the current superblock, its catalog and every
// object it names untouched, so the store opens in the old or the new state.
#include "csd/store.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "csd_crc32c.h"

namespace csd {

namespace {

constexpr char kMagic[8] = {'C', 'S', 'D', 'S', 'T', 'O', 'R', '1'};
constexpr uint32_t kVersion = 1;
constexpr uint64_t kFirstDataBlock = 2;

#pragma pack(push, 1)
struct Superblock {
    char magic[8];
    uint32_t version;
    uint32_t block_size;
    uint64_t generation;
    uint64_t total_blocks;
    uint64_t catalog_block;
    uint64_t catalog_blocks;
    uint64_t catalog_bytes;
    uint32_t catalog_crc;
    uint32_t crc;  // of the bytes before it
};
#pragma pack(pop)

void put_u16(std::vector<uint8_t> &v, uint16_t x) { v.insert(v.end(), reinterpret_cast<uint8_t *>(&x), reinterpret_cast<uint8_t *>(&x) + 2); }
void put_u32(std::vector<uint8_t> &v, uint32_t x) { v.insert(v.end(), reinterpret_cast<uint8_t *>(&x), reinterpret_cast<uint8_t *>(&x) + 4); }
void put_u64(std::vector<uint8_t> &v, uint64_t x) { v.insert(v.end(), reinterpret_cast<uint8_t *>(&x), reinterpret_cast<uint8_t *>(&x) + 8); }
void put_str(std::vector<uint8_t> &v, const std::string &s)
{
    put_u16(v, static_cast<uint16_t>(s.size()));
    v.insert(v.end(), s.begin(), s.end());
}

constexpr size_t kMaxDims = 32, kMaxDtype = 255;  // what deserialize() accepts back

// Reads fields from a catalog with bounds checks; ok() is false after any overrun.
struct Reader {
    const uint8_t *p, *end;
    bool good = true;
    template <class T>
    T get()
    {
        T x{};
        if (end - p < static_cast<ptrdiff_t>(sizeof x)) {
            good = false;
            return x;
        }
        std::memcpy(&x, p, sizeof x);
        p += sizeof x;
        return x;
    }
    std::string str()
    {
        const uint16_t n = get<uint16_t>();
        if (!good || end - p < n) {
            good = false;
            return {};
        }
        std::string s(reinterpret_cast<const char *>(p), n);
        p += n;
        return s;
    }
};

std::vector<uint8_t> serialize(const std::map<std::string, ObjectInfo> &objects)
{
    std::vector<uint8_t> v;
    put_u32(v, static_cast<uint32_t>(objects.size()));
    for (const auto &[name, o] : objects) {
        put_str(v, o.name);
        put_str(v, o.dtype);
        put_u32(v, static_cast<uint32_t>(o.shape.size()));
        for (uint64_t s : o.shape) put_u64(v, s);
        put_u64(v, o.bytes);
        put_u64(v, o.block);
        put_u32(v, o.crc32c);
        put_u64(v, o.generation);
    }
    return v;
}

bool deserialize(const std::vector<uint8_t> &v, std::map<std::string, ObjectInfo> *out)
{
    Reader r{v.data(), v.data() + v.size()};
    const uint32_t n = r.get<uint32_t>();
    for (uint32_t i = 0; i < n && r.good; i++) {
        ObjectInfo o;
        o.name = r.str();
        o.dtype = r.str();
        if (o.dtype.size() > kMaxDtype) return false;
        const uint32_t nd = r.get<uint32_t>();
        if (nd > kMaxDims) return false;
        for (uint32_t k = 0; k < nd; k++) o.shape.push_back(r.get<uint64_t>());
        o.bytes = r.get<uint64_t>();
        o.block = r.get<uint64_t>();
        o.crc32c = r.get<uint32_t>();
        o.generation = r.get<uint64_t>();
        (*out)[o.name] = o;
    }
    return r.good;
}

void check_name(const std::string &name)
{
    if (name.empty() || name.size() > 255 || name.find('\0') != std::string::npos) {
        throw Error("object name '" + name + "': 1 to 255 bytes, no NUL", EINVAL);
    }
}

// A catalog entry must read back as it was written: refuse what the catalog cannot hold
// before anything is written, so an acknowledged put can never make the store unopenable.
void check_entry(const std::string &name, const std::string &dtype, const std::vector<uint64_t> &shape)
{
    check_name(name);
    if (dtype.size() > kMaxDtype) {
        throw Error("object '" + name + "': dtype '" + dtype + "' is longer than " + std::to_string(kMaxDtype) +
                        " bytes",
                    EINVAL);
    }
    if (shape.size() > kMaxDims) {
        throw Error("object '" + name + "': " + std::to_string(shape.size()) + " dimensions (at most " +
                        std::to_string(kMaxDims) + ")",
                    EINVAL);
    }
}

}  // namespace

static uint32_t block_size_for(Device &dev)
{
    return std::max<uint32_t>(4096, dev.ns().lba_size);
}

void ObjectStore::format(Device &dev)
{
    const uint32_t bs = block_size_for(dev);
    const uint64_t total = dev.ns().lba_count * dev.ns().lba_size / bs;
    if (total < kFirstDataBlock + 2) {
        throw Error("format: the namespace is too small for an object store", ENOSPC);
    }
    const uint64_t lpb = bs / dev.ns().lba_size;
    std::vector<uint8_t> blk(bs, 0);
    dev.write_lbas(lpb, lpb, blk.data());  // slot B: nothing valid
    Superblock sb{};
    std::memcpy(sb.magic, kMagic, 8);
    sb.version = kVersion;
    sb.block_size = bs;
    sb.generation = 1;
    sb.total_blocks = total;
    const std::vector<uint8_t> empty = serialize({});
    sb.catalog_block = kFirstDataBlock;
    sb.catalog_blocks = 1;
    sb.catalog_bytes = empty.size();
    sb.catalog_crc = csd_crc32c(empty.data(), empty.size());
    std::memcpy(blk.data(), empty.data(), empty.size());
    dev.write_lbas(kFirstDataBlock * lpb, lpb, blk.data());
    dev.flush();
    std::fill(blk.begin(), blk.end(), 0);
    sb.crc = csd_crc32c(&sb, offsetof(Superblock, crc));
    std::memcpy(blk.data(), &sb, sizeof sb);
    dev.write_lbas(0, lpb, blk.data());
    dev.flush();
}

// Reads superblock slot `slot` and its catalog; false if either is damaged.
bool ObjectStore::read_slot(int slot, Slot *out)
{
    const uint32_t lba = dev_.ns().lba_size;
    std::vector<uint8_t> blk(block_size_for(dev_));
    const uint64_t lpb = blk.size() / lba;
    dev_.read_lbas(slot * lpb, lpb, blk.data());
    Superblock sb;
    std::memcpy(&sb, blk.data(), sizeof sb);
    if (std::memcmp(sb.magic, kMagic, 8) != 0 || sb.version != kVersion ||
        sb.crc != csd_crc32c(&sb, offsetof(Superblock, crc)) || sb.block_size != blk.size() ||
        sb.total_blocks > dev_.ns().lba_count / lpb || sb.catalog_block < kFirstDataBlock ||
        sb.catalog_blocks > sb.total_blocks || sb.catalog_block > sb.total_blocks - sb.catalog_blocks ||
        sb.catalog_bytes > sb.catalog_blocks * sb.block_size) {
        return false;
    }
    std::vector<uint8_t> cat(sb.catalog_blocks * sb.block_size);
    dev_.read_lbas(sb.catalog_block * lpb, sb.catalog_blocks * lpb, cat.data());
    cat.resize(sb.catalog_bytes);
    if (csd_crc32c(cat.data(), cat.size()) != sb.catalog_crc || !deserialize(cat, &out->objects)) {
        return false;
    }
    out->generation = sb.generation;
    out->total_blocks = sb.total_blocks;
    out->catalog = {sb.catalog_block, sb.catalog_blocks};
    return true;
}

ObjectStore::ObjectStore(Device &dev) : dev_(dev)
{
    block_ = block_size_for(dev);
    lbas_per_block_ = block_ / dev.ns().lba_size;
    Slot a, b;
    const bool ok_a = read_slot(0, &a), ok_b = read_slot(1, &b);
    if (!ok_a && !ok_b) {
        throw Error("no object store on this namespace (run 'csdctl format')", ENOENT);
    }
    Slot &use = (ok_a && (!ok_b || a.generation > b.generation)) ? a : b;  // the newer valid one
    generation_ = use.generation;
    total_blocks_ = use.total_blocks;
    catalog_ = use.catalog;
    objects_ = std::move(use.objects);
}

uint64_t ObjectStore::allocate(uint64_t blocks, const std::vector<Extent> &also_used) const
{
    std::vector<Extent> used = also_used;
    used.push_back(catalog_);
    for (const auto &[n, o] : objects_) used.push_back({o.block, blocks_for(o.bytes)});
    std::sort(used.begin(), used.end(), [](const Extent &x, const Extent &y) { return x.block < y.block; });
    uint64_t at = kFirstDataBlock;
    for (const Extent &e : used) {
        if (e.block >= at + blocks) break;
        at = std::max(at, e.block + e.blocks);
    }
    if (at > total_blocks_ || total_blocks_ - at < blocks) {
        throw Error("object store: no room for " + std::to_string(blocks * block_) + " bytes (" +
                        std::to_string(free_bytes()) + " free)",
                    ENOSPC);
    }
    return at;
}

uint64_t ObjectStore::free_bytes() const
{
    uint64_t used = catalog_.blocks;
    for (const auto &[n, o] : objects_) used += blocks_for(o.bytes);
    return (total_blocks_ - kFirstDataBlock - std::min(used, total_blocks_ - kFirstDataBlock)) * block_;
}

constexpr uint64_t kProgressChunk = 4 << 20;  // bytes between progress reports

void ObjectStore::write_blocks(uint64_t block, const void *data, uint64_t bytes, const Progress &progress)
{
    const uint64_t whole = bytes / block_ * block_;
    const uint32_t lba = dev_.ns().lba_size;
    for (uint64_t done = 0; done < whole;) {
        const uint64_t n = std::min(whole - done, kProgressChunk);
        dev_.write_lbas(block * lbas_per_block_ + done / lba, n / lba, static_cast<const uint8_t *>(data) + done);
        done += n;
        if (progress) progress(done, bytes);
    }
    if (bytes > whole || bytes == 0) {  // the last, partial block padded with zeros
        std::vector<uint8_t> tail(block_, 0);
        std::memcpy(tail.data(), static_cast<const uint8_t *>(data) + whole, bytes - whole);
        dev_.write_lbas((block + whole / block_) * lbas_per_block_, lbas_per_block_, tail.data());
    }
}

// Writes the catalog for `next` and switches the superblock to it; caller holds mu_ and
// has written and flushed any new object data.
void ObjectStore::commit(std::map<std::string, ObjectInfo> next)
{
    const std::vector<uint8_t> cat = serialize(next);
    const uint64_t cat_blocks = blocks_for(cat.size());
    // The new catalog must avoid the current catalog and every object of both states.
    std::vector<Extent> avoid;
    for (const auto &[n, o] : next) avoid.push_back({o.block, blocks_for(o.bytes)});
    const uint64_t cat_block = allocate(cat_blocks, avoid);
    write_blocks(cat_block, cat.data(), cat.size());
    dev_.flush();

    Superblock sb{};
    std::memcpy(sb.magic, kMagic, 8);
    sb.version = kVersion;
    sb.block_size = block_;
    sb.generation = generation_ + 1;
    sb.total_blocks = total_blocks_;
    sb.catalog_block = cat_block;
    sb.catalog_blocks = cat_blocks;
    sb.catalog_bytes = cat.size();
    sb.catalog_crc = csd_crc32c(cat.data(), cat.size());
    sb.crc = csd_crc32c(&sb, offsetof(Superblock, crc));
    std::vector<uint8_t> blk(block_, 0);
    std::memcpy(blk.data(), &sb, sizeof sb);
    dev_.write_lbas((sb.generation % 2 == 1 ? 0 : 1) * lbas_per_block_, lbas_per_block_, blk.data());
    dev_.flush();
    generation_ = sb.generation;
    catalog_ = {cat_block, cat_blocks};
    objects_ = std::move(next);
}

// A catalog entry for a new object (its data block still to be allocated).
static ObjectInfo new_entry(const std::string &name, uint64_t bytes, const std::string &dtype,
                            const std::vector<uint64_t> &shape, uint64_t generation)
{
    ObjectInfo o;
    o.name = name;
    o.dtype = dtype;
    o.shape = shape;
    o.bytes = bytes;
    o.generation = generation;
    return o;
}

// Adds or replaces an object whose data is written and flushed; caller holds mu_.
void ObjectStore::commit_object(const ObjectInfo &o)
{
    auto next = objects_;
    next[o.name] = o;
    commit(std::move(next));
}

void ObjectStore::put(const std::string &name, const void *data, uint64_t bytes, const std::string &dtype,
                      const std::vector<uint64_t> &shape, const Progress &progress)
{
    check_entry(name, dtype, shape);
    std::lock_guard<std::mutex> g(mu_);
    ObjectInfo o = new_entry(name, bytes, dtype, shape, generation_ + 1);
    o.crc32c = csd_crc32c(data, bytes);
    o.block = allocate(blocks_for(bytes), {});
    write_blocks(o.block, data, bytes, progress);
    dev_.flush();
    commit_object(o);
}

ObjectInfo ObjectStore::stat(const std::string &name) const
{
    std::lock_guard<std::mutex> g(mu_);
    auto it = objects_.find(name);
    if (it == objects_.end()) {
        throw Error("object '" + name + "'", ENOENT);
    }
    return it->second;
}

bool ObjectStore::exists(const std::string &name) const
{
    std::lock_guard<std::mutex> g(mu_);
    return objects_.count(name) != 0;
}

std::vector<ObjectInfo> ObjectStore::list() const
{
    std::lock_guard<std::mutex> g(mu_);
    std::vector<ObjectInfo> v;
    for (const auto &[n, o] : objects_) v.push_back(o);
    return v;
}

void ObjectStore::read(const std::string &name, uint64_t offset, uint64_t len, void *buf, const Progress &progress)
{
    const ObjectInfo o = stat(name);
    if (offset > o.bytes || len > o.bytes - offset) {
        throw Error("read of object '" + name + "' [" + std::to_string(offset) + ", +" + std::to_string(len) +
                        ") beyond its " + std::to_string(o.bytes) + " bytes",
                    EINVAL);
    }
    if (len == 0) return;
    const uint32_t lba = dev_.ns().lba_size;
    auto *out = static_cast<uint8_t *>(buf);
    std::vector<uint8_t> tmp;
    for (uint64_t done = 0; done < len;) {  // chunks of whole LBAs, unaligned ends copied
        const uint64_t pos = offset + done;
        const uint64_t first = o.block * lbas_per_block_ + pos / lba;
        const uint64_t n = std::min(len - done, kProgressChunk - pos % lba);
        const uint64_t nlb = (pos % lba + n + lba - 1) / lba;
        tmp.resize(nlb * lba);
        dev_.read_lbas(first, nlb, tmp.data());
        std::memcpy(out + done, tmp.data() + pos % lba, n);
        done += n;
        if (progress) progress(done, len);
    }
}

std::vector<uint8_t> ObjectStore::get(const std::string &name, const Progress &progress)
{
    const ObjectInfo o = stat(name);
    std::vector<uint8_t> v(o.bytes);
    read(name, 0, o.bytes, v.data(), progress);
    if (csd_crc32c(v.data(), v.size()) != o.crc32c) {
        throw Error("object '" + name + "' does not match its CRC-32C: the namespace was changed behind the store", EIO);
    }
    return v;
}

void ObjectStore::remove(const std::string &name)
{
    std::lock_guard<std::mutex> g(mu_);
    if (!objects_.count(name)) {
        throw Error("remove object '" + name + "'", ENOENT);
    }
    auto next = objects_;
    next.erase(name);
    commit(std::move(next));
}

SlmBuffer ObjectStore::load(const std::string &name)
{
    const ObjectInfo o = stat(name);
    const uint64_t blocks = blocks_for(o.bytes);
    SlmBuffer buf = dev_.slm().alloc(blocks * block_, block_);
    dev_.slm_load(o.block * lbas_per_block_, blocks * lbas_per_block_, buf.offset());
    return buf;
}

void ObjectStore::put_from_slm(const std::string &name, const SlmBuffer &src, uint64_t bytes, const std::string &dtype,
                               const std::vector<uint64_t> &shape)
{
    check_entry(name, dtype, shape);
    const uint64_t blocks = blocks_for(bytes);
    if (src.size() < blocks * block_) {
        throw Error("put_from_slm: the SLM buffer must cover whole store blocks (" + std::to_string(blocks * block_) +
                        " bytes)",
                    EINVAL);
    }
    std::lock_guard<std::mutex> g(mu_);
    ObjectInfo o = new_entry(name, bytes, dtype, shape, generation_ + 1);
    // The CRC is computed inside the drive too: only 8 bytes cross the bus.
    o.crc32c = bytes ? static_cast<uint32_t>(programs::checksum(dev_, ChecksumAlgo::crc32c, Range{src.offset(), bytes}))
                     : csd_crc32c(nullptr, 0);
    o.block = allocate(blocks, {});
    dev_.slm_store(o.block * lbas_per_block_, blocks * lbas_per_block_, src.offset());
    dev_.flush();
    commit_object(o);
}

FilterResult ObjectStore::filter(const std::string &src, const FilterSpec &spec, const std::string &dst)
{
    const ObjectInfo in = stat(src);
    FilterSpec s = spec;
    if (s.record_size == 0 || in.bytes % s.record_size != 0) {
        throw Error("filter on object '" + src + "': its " + std::to_string(in.bytes) +
                        " bytes are not whole records of " + std::to_string(s.record_size),
                    EINVAL);
    }
    if (s.count == 0) s.count = static_cast<uint32_t>(in.bytes / s.record_size);
    SlmBuffer records = load(src);
    const uint64_t guess = std::max<uint64_t>(block_, (in.bytes / 8 + block_ - 1) / block_ * block_);
    SlmBuffer out = dev_.slm().alloc(guess, block_);
    FilterResult r = programs::filter(dev_, Range{records.offset(), in.bytes}, out, s);
    records.reset();
    if (out.size() % block_ != 0) {  // regrown by filter: round to whole blocks for SLM Store
        SlmBuffer bigger = dev_.slm().alloc((out.size() + block_ - 1) / block_ * block_, block_);
        programs::copy(dev_, Range{out.offset(), r.bytes ? r.bytes : 4}, Range{bigger.offset(), bigger.size()});
        out = std::move(bigger);
    }
    const std::string dtype = s.indices ? "<u4" : in.dtype;
    std::vector<uint64_t> shape;
    if (s.indices) shape = {r.matches};
    else if (!in.shape.empty()) {
        shape = in.shape;
        shape[0] = r.matches;
    }
    put_from_slm(dst, out, r.bytes, dtype, shape);
    return r;
}

}  // namespace csd
