// SPDX-License-Identifier: MIT
// store.cc - the object store on the namespace (docs/store.md).
//
// Layout, in store blocks of max(4 KiB, LBA size):
//   block 0, 1   superblock slots A and B (odd generations in A, even in B; the newer
//                valid one wins): header, then a journal of changes since the base catalog
//   block 2 ...  object data, base catalogs and reservations, allocated copy-on-write
// Every update is a commit of the next generation into the other slot, made with the
// drive's Compare and Write against the bytes this writer read there: if another writer
// (another process or host) committed first, the write does not happen, and the update is
// recomputed from the newer state. Data is only ever written into space a committed
// reservation owns, so no writer can overwrite another's data or catalog. A put reserves
// (commit 1), writes and flushes its data, then commits the object (commit 2). When the
// journal fills, a writer reserves space, writes the full catalog there and commits a
// superblock that points to it with an empty journal. A cut at any point leaves the
// current superblock, its catalog and every object it names untouched.
// A drive without Compare and Write (a plain NVMe drive, a standard-only one: Linux's
// passthrough cannot send the standard fused Compare + Write) is arbitrated on one host:
// each commit holds an exclusive flock() on the device node from reading the newest state
// to writing the next, and writes a lease (host, expiry) into the last 64 bytes of its
// superblock block; a commit from another host while the lease is live is refused
// (EBUSY) instead of racing the first host's commits.
#include "csd/store.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <thread>

#include "csd/npy.hpp"
#include "store_internal.hpp"
#include "csd_crc32c.h"
#include "fork_hold.hpp"
#include "store_catalog.hpp"
#include "csd/store_io.hpp"

namespace csd {

namespace {

constexpr char kMagic[8] = {'C', 'S', 'D', 'S', 'T', 'O', 'R', '1'};
constexpr uint32_t kVersion1 = 1;  // full catalog only; still read, replaced on first update
constexpr uint32_t kVersion = 2;   // base catalog + journal
constexpr uint64_t kFirstDataBlock = 2;
constexpr uint64_t kSignatureBytes = 256 << 10;  // format looks for signatures in the first 256 KiB
constexpr uint64_t kTailBytes = 128 << 10;       // and in the last 128 KiB (a backup GPT, md 0.90 and 1.0)

#pragma pack(push, 1)
struct SuperblockV1 {
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
struct Superblock {
    char magic[8];
    uint32_t version;
    uint32_t block_size;
    uint64_t generation;
    uint64_t total_blocks;
    uint64_t catalog_block;  // the base catalog
    uint64_t catalog_blocks;
    uint64_t catalog_bytes;
    uint32_t catalog_crc;
    uint32_t catalog_format;
    uint32_t journal_bytes;  // journal entries follow the header
    uint32_t crc;            // of the header before it and the journal
};
#pragma pack(pop)

// The lease at the end of a superblock block (outside the header's CRC; older libraries
// neither read nor keep it): which host may commit without Compare and Write, until when.
struct Lease {
    char magic[8];
    char host[40];
    uint64_t expires_s;
    uint32_t reserved;
    uint32_t crc;  // of the bytes before it
};
constexpr char kLeaseMagic[8] = {'C', 'S', 'D', 'L', 'E', 'A', 'S', 'E'};
static_assert(sizeof(Lease) == 64, "the lease is the block's last 64 bytes");

uint64_t now_s()
{
    return static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count());
}

std::string writer_name()
{
    char host[64] = "?";
    gethostname(host, sizeof host - 1);
    return std::string(host) + ":" + std::to_string(getpid());
}

// This host, as leases name it: $CSD_HOST_ID (a test aid), else hostname/machine-id.
std::string host_id()
{
    if (const char *id = std::getenv("CSD_HOST_ID")) return id;
    char host[64] = "?";
    gethostname(host, sizeof host - 1);
    std::string id = host;
    if (FILE *f = std::fopen("/etc/machine-id", "r")) {
        char mid[33] = {};
        if (std::fscanf(f, "%32s", mid) == 1) id += std::string("/") + mid;
        std::fclose(f);
    }
    return id.substr(0, sizeof(Lease::host) - 1);
}

// Seconds a lease lasts past a host's last commit ($CSD_STORE_LEASE_S, default 30).
uint64_t lease_seconds()
{
    const char *v = std::getenv("CSD_STORE_LEASE_S");
    return v ? std::strtoull(v, nullptr, 10) : 30;
}

// The live lease of another host in a superblock block's raw bytes, or "".
std::string foreign_lease(const std::vector<uint8_t> &raw, uint64_t *until)
{
    if (raw.size() < sizeof(Lease)) return "";
    Lease l;
    std::memcpy(&l, raw.data() + raw.size() - sizeof l, sizeof l);
    if (std::memcmp(l.magic, kLeaseMagic, 8) != 0 || l.crc != csd_crc32c(&l, offsetof(Lease, crc))) return "";
    const std::string holder(l.host, strnlen(l.host, sizeof l.host));
    if (holder == host_id() || l.expires_s <= now_s()) return "";
    *until = l.expires_s;
    return holder;
}

// Throws EBUSY when another host's lease in the newest superblock block is live.
void refuse_foreign_lease(const std::vector<uint8_t> &newest)
{
    uint64_t until = 0;
    const std::string holder = foreign_lease(newest, &until);
    if (!holder.empty()) {
        throw Error("object store: host '" + holder + "' holds the store's lease for " + std::to_string(until - now_s()) +
                        " s more; the drive has no Compare and Write to arbitrate two hosts, so this host may not "
                        "write (docs/store.md)",
                    EBUSY);
    }
}

// An exclusive flock() on the device node for one commit (a descriptor of its own, so that
// threads and forked children exclude each other too).
class NodeLock {
public:
    explicit NodeLock(const std::string &node)
    {
        if (node.empty()) return;
        fd_ = ::open(node.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd_ < 0) throw Error("object store: open " + node + " to lock it", errno);
        while (flock(fd_, LOCK_EX) != 0) {
            if (errno != EINTR) {
                const int e = errno;
                ::close(fd_);
                throw Error("object store: flock " + node, e);
            }
        }
    }
    ~NodeLock()
    {
        if (fd_ >= 0) ::close(fd_);  // releases the lock
    }
    NodeLock(const NodeLock &) = delete;
    NodeLock &operator=(const NodeLock &) = delete;

private:
    int fd_ = -1;
};

// A fresh random number from the OS (a generator's state would be shared by forked
// processes, which would then reserve under the same id).
uint64_t random_id()
{
    std::random_device rd;
    uint64_t id;
    do id = static_cast<uint64_t>(rd()) << 32 ^ rd();
    while (id == 0);
    return id;
}

// A short random pause before retrying after losing a commit to another writer.
void backoff(unsigned attempt)
{
    std::this_thread::sleep_for(std::chrono::microseconds(random_id() % (100u << std::min(attempt, 8u))));
}

}  // namespace

struct ObjectStore::State {
    uint64_t generation = 0, total_blocks = 0;
    Extent base{0, 0};  // the full catalog the journal applies to
    uint64_t base_bytes = 0;
    uint32_t base_crc = 0, base_format = 0;
    std::vector<uint8_t> journal;     // changes since the base, encoded
    std::vector<uint8_t> base_bytes_read;
    catalog::Contents contents;       // base + journal
    std::vector<uint8_t> other_slot;  // raw bytes of the slot the next commit replaces
    std::vector<uint8_t> this_slot;   // raw bytes of the newest slot (its lease)
};

static uint32_t block_size_for(Device &dev)
{
    return std::max<uint32_t>(4096, dev.ns().lba_size);
}

namespace {

// What a namespace's first bytes (head, from byte 0) and last bytes (tail, ending at its last
// byte) show it holds: a partition table, a filesystem or volume signature, an object store;
// "" if none of those this knows (blkid's places for them). Two LBA sizes are tried for the
// GPT, since a drive formatted to another LBA size keeps the table where it was written.
std::string signature_found(const std::vector<uint8_t> &head, const std::vector<uint8_t> &tail, uint64_t total,
                            uint32_t store_block)
{
    auto at = [&](uint64_t pos, const std::string &magic) {
        return pos + magic.size() <= head.size() && std::memcmp(head.data() + pos, magic.data(), magic.size()) == 0;
    };
    // magic at byte pos of the namespace (total bytes), where the tail holds it
    auto at_end = [&](uint64_t pos, const std::string &magic) {
        const uint64_t from = total - tail.size();
        return pos >= from && pos + magic.size() <= total &&
               std::memcmp(tail.data() + (pos - from), magic.data(), magic.size()) == 0;
    };
    auto quoted = [](const std::string &magic, uint64_t pos) {
        return "'" + magic + "' at byte " + std::to_string(pos);
    };
    for (const uint64_t pos : {uint64_t{0}, uint64_t{store_block}}) {
        if (at(pos, std::string(kMagic, 8))) return "an object store (superblock " + quoted("CSDSTOR1", pos) + ")";
    }
    for (const uint32_t lba : {512u, 4096u}) {
        if (at(lba, "EFI PART")) {
            return "a GPT partition table (LBA 1 'EFI PART', " + std::to_string(lba) + "-byte LBAs)";
        }
        if (tail.size() >= lba && std::memcmp(tail.data() + tail.size() - lba, "EFI PART", 8) == 0) {
            return "a GPT partition table (its backup header 'EFI PART' in the last LBA, " + std::to_string(lba) +
                   "-byte LBAs)";
        }
    }
    if (at(0, std::string("LUKS\xba\xbe", 6))) return "a LUKS encrypted volume ('LUKS\\xba\\xbe' at byte 0)";
    if (at(0, "XFSB")) return "an XFS filesystem (" + quoted("XFSB", 0) + ")";
    if (at(1080, "\x53\xEF")) return "an ext2/3/4 filesystem (magic EF53h at byte 1080)";
    if (at(65600, "_BHRfS_M")) return "a btrfs filesystem (" + quoted("_BHRfS_M", 65600) + ")";
    if (at(32769, "CD001")) return "an ISO 9660 filesystem (" + quoted("CD001", 32769) + ")";
    for (const uint64_t page : {4096u, 8192u, 16384u, 65536u}) {
        for (const char *magic : {"SWAPSPACE2", "SWAP-SPACE"}) {
            if (at(page - 10, magic)) return "a swap area (" + quoted(magic, page - 10) + ")";
        }
    }
    for (const uint64_t sector : {0u, 512u, 1024u, 1536u}) {
        if (at(sector, "LABELONE") && at(sector + 24, "LVM2 001")) {
            return "an LVM2 physical volume (" + quoted("LABELONE", sector) + ")";
        }
    }
    for (const uint64_t pos : {uint64_t{0}, uint64_t{4096}}) {
        if (at(pos, "\xfc\x4e\x2b\xa9")) return "a Linux RAID (md) member (magic A92B4EFCh at byte " + std::to_string(pos) + ")";
    }
    // md metadata 1.0 and 0.90 at the end: 8 to 12 KiB before it on a 4 KiB boundary, and the
    // last whole 64 KiB
    const uint64_t sectors = total / 512;
    for (const uint64_t pos : {sectors >= 16 ? ((sectors - 16) & ~uint64_t{7}) * 512 : total,
                               sectors >= 128 ? ((sectors & ~uint64_t{127}) - 128) * 512 : total}) {
        if (at_end(pos, "\xfc\x4e\x2b\xa9")) {
            return "a Linux RAID (md) member (magic A92B4EFCh at byte " + std::to_string(pos) + ", near its end)";
        }
    }
    if (at(1024, "\x10\x20\xF5\xF2")) return "an F2FS filesystem (magic F2F52010h at byte 1024)";
    if (at(0, "hsqs")) return "a squashfs filesystem (" + quoted("hsqs", 0) + ")";
    if (at(0, "bluestore block device")) return "a Ceph BlueStore device (" + quoted("bluestore block device", 0) + ")";
    if (at(4096 + 24, "\xc6\x85\x73\xf6\x4e\x1a\x45\xca\x82\x65\xf5\x7f\x48\xba\x6d\x81")) {
        return "a bcache device (its magic at byte 4120)";
    }
    for (uint64_t pos = 128 << 10; pos + 4 <= std::min<uint64_t>(head.size(), 256 << 10); pos += 1024) {
        if (at(pos, std::string("\x0c\xb1\xba\x00", 4)) || at(pos, std::string("\x00\xba\xb1\x0c", 4))) {
            return "a ZFS pool member (an uberblock, magic 00BAB10Ch, at byte " + std::to_string(pos) + ")";
        }
    }
    if (at(3, "NTFS    ")) return "an NTFS filesystem (" + quoted("NTFS", 3) + ")";
    if (at(3, "EXFAT   ")) return "an exFAT filesystem (" + quoted("EXFAT", 3) + ")";
    const bool boot_signature = at(510, "\x55\xAA");
    if (boot_signature) {
        for (const auto &[pos, fat] : {std::pair<uint64_t, const char *>{54, "FAT12"}, {54, "FAT16"}, {54, "FAT  "}, {82, "FAT32"}}) {
            if (at(pos, fat)) return "a FAT filesystem (" + quoted(fat, pos) + " and 55AAh at byte 510)";
        }
        for (int i = 0; i < 4; i++) {
            const uint8_t *e = head.data() + 446 + 16 * i;
            if (std::any_of(e, e + 16, [](uint8_t b) { return b != 0; })) {
                char type[8];
                std::snprintf(type, sizeof type, "%02Xh", e[4]);
                return std::string("an MBR partition table (55AAh at byte 510, partition ") + std::to_string(i + 1) +
                       " of type " + type + (e[4] == 0xEE ? ": the protective entry of a GPT disk" : "") + ")";
            }
        }
    }
    return "";
}

}  // namespace

// Throws EROFS for what (a write of the store) where the device was opened read-only.
void refuse_read_only(const Device &dev, const std::string &what)
{
    if (dev.read_only()) {
        throw Error(what + " refused, nothing written: the device was opened read-only (csdctl --read-only, "
                           "read_only=True, CSD_OPEN_READ_ONLY, OpenOptions::read_only)",
                    EROFS);
    }
}

std::string ObjectStore::holds(Device &dev)
{
    const uint32_t lba = dev.ns().lba_size;
    const uint64_t head_lbas = std::min<uint64_t>(dev.ns().lba_count, (kSignatureBytes + lba - 1) / lba);
    const uint64_t tail_lbas = std::min<uint64_t>(dev.ns().lba_count, (kTailBytes + lba - 1) / lba);
    std::vector<uint8_t> head(head_lbas * lba), tail(tail_lbas * lba);
    dev.read_lbas(0, head_lbas, head.data());
    dev.read_lbas(dev.ns().lba_count - tail_lbas, tail_lbas, tail.data());
    return signature_found(head, tail, dev.ns().lba_count * lba, block_size_for(dev));
}

void ObjectStore::refuse_raw_write(Device &dev, const std::string &what, uint64_t lba, uint64_t blocks,
                                   const std::string &force_how)
{
    const std::string found = holds(dev);
    if (found.empty()) return;
    throw Error(what + ": the namespace holds " + found + "; writing LBAs " + std::to_string(lba) + "-" +
                    std::to_string(lba + blocks - 1) + " would write into it: " + force_how + " if that is what you want",
                EEXIST);
}

void ObjectStore::check_blank(Device &dev)
{
    const std::string found = holds(dev);
    if (!found.empty()) {
        throw Error("format: the namespace holds " + found +
                        "; formatting would overwrite it: format with force (csdctl format --force, "
                        "ObjectStore::format(dev, true), csd_store_format_flags(dev, CSD_FORMAT_FORCE), "
                        "store.format(force=True)) if that is what you want",
                    EEXIST);
    }
}

void ObjectStore::check_raw_write(Device &dev, uint64_t slba, uint64_t nlb, const std::string &what)
{
    if (!nlb) return;
    std::unique_ptr<ObjectStore> st;
    try {
        st = std::make_unique<ObjectStore>(dev);
    } catch (const Error &e) {
        if (e.errnum() == ENOENT) return;  // no store here
        throw;
    }
    const State s = st->locked([&] { return st->refresh(); });
    const uint64_t lpb = st->lbas_per_block_, first = slba / lpb, last = (slba + nlb - 1) / lpb;
    std::vector<std::pair<Extent, std::string>> used{{{0, kFirstDataBlock}, "its superblocks"},
                                                     {s.base, "its catalog"}};
    for (const auto &[n, o] : s.contents.objects) used.push_back({{o.block, st->blocks_for(o.bytes)}, "object '" + n + "'"});
    for (const auto &[id, r] : s.contents.reservations) {
        used.push_back({{r.block, r.blocks}, "space reserved by " + (r.owner.empty() ? std::string("a put") : r.owner)});
    }
    uint64_t end = 0;
    for (const auto &u : used) end = std::max(end, u.first.block + u.first.blocks);
    for (const auto &[e, name] : used) {
        if (!e.blocks || e.block > last || e.block + e.blocks <= first) continue;
        throw Error(what + ": LBAs " + std::to_string(slba) + ".." + std::to_string(slba + nlb - 1) + " hold " + name +
                        " of the object store on this namespace (LBAs " + std::to_string(e.block * lpb) + ".." +
                        std::to_string((e.block + e.blocks) * lpb - 1) + "); writing there would destroy it: "
                        "write from LBA " + std::to_string(end * lpb) + " (past what the store uses now; a later "
                        "put may still take those blocks) or onto a namespace of its own",
                    EEXIST);
    }
}

void ObjectStore::format(Device &dev, bool force)
{
    refuse_read_only(dev, "format");
    const uint32_t bs = block_size_for(dev);
    const uint64_t total = dev.ns().lba_count * dev.ns().lba_size / bs;
    if (total < kFirstDataBlock + 2) {
        throw Error("format: the namespace is too small for an object store", ENOSPC);
    }
    if (!force) check_blank(dev);  // a real drive treated with care: look before writing over it
    const uint64_t lpb = bs / dev.ns().lba_size;
    std::vector<uint8_t> blk(bs, 0);
    dev.write_lbas(lpb, lpb, blk.data());  // slot B: nothing valid
    const std::vector<uint8_t> empty = catalog::encode({});
    std::memcpy(blk.data(), empty.data(), empty.size());
    dev.write_lbas(kFirstDataBlock * lpb, lpb, blk.data());
    dev.flush();
    Superblock sb{};
    std::memcpy(sb.magic, kMagic, 8);
    sb.version = kVersion;
    sb.block_size = bs;
    sb.generation = 1;
    sb.total_blocks = total;
    sb.catalog_block = kFirstDataBlock;
    sb.catalog_blocks = 1;
    sb.catalog_bytes = empty.size();
    sb.catalog_crc = csd_crc32c(empty.data(), empty.size());
    sb.catalog_format = catalog::kFormat2;
    sb.crc = csd_crc32c(&sb, offsetof(Superblock, crc));
    std::fill(blk.begin(), blk.end(), 0);
    std::memcpy(blk.data(), &sb, sizeof sb);
    dev.write_lbas(0, lpb, blk.data());
    dev.flush();
}

// Reads superblock slot `slot` (its raw bytes to *raw); false if it is not a valid one.
bool ObjectStore::read_slot(int slot, State *out, std::vector<uint8_t> *raw) const
{
    raw->assign(block_, 0);
    dev_.read_lbas(slot * lbas_per_block_, lbas_per_block_, raw->data());
    Superblock sb{};
    std::memcpy(&sb, raw->data(), sizeof sb);
    if (std::memcmp(sb.magic, kMagic, 8) != 0 || sb.block_size != block_) return false;
    if (sb.version == kVersion1) {
        SuperblockV1 v1;
        std::memcpy(&v1, raw->data(), sizeof v1);
        if (v1.crc != csd_crc32c(&v1, offsetof(SuperblockV1, crc))) return false;
        sb.catalog_format = catalog::kFormat1;
        sb.journal_bytes = 0;
    } else if (sb.version != kVersion || sb.journal_bytes > block_ - sizeof sb ||
               sb.crc != csd_crc32c_extend(csd_crc32c(&sb, offsetof(Superblock, crc)), raw->data() + sizeof sb,
                                           sb.journal_bytes)) {
        return false;
    }
    if ((sb.generation % 2 == 1) != (slot == 0) || sb.total_blocks > dev_.ns().lba_count / lbas_per_block_ ||
        sb.catalog_block < kFirstDataBlock || sb.catalog_blocks > sb.total_blocks ||
        sb.catalog_block > sb.total_blocks - sb.catalog_blocks || sb.catalog_bytes > sb.catalog_blocks * block_) {
        return false;
    }
    out->generation = sb.generation;
    out->total_blocks = sb.total_blocks;
    out->base = {sb.catalog_block, sb.catalog_blocks};
    out->base_bytes = sb.catalog_bytes;
    out->base_crc = sb.catalog_crc;
    out->base_format = sb.catalog_format;
    out->journal.assign(raw->data() + (sb.version == kVersion1 ? sizeof(SuperblockV1) : sizeof sb),
                        raw->data() + (sb.version == kVersion1 ? sizeof(SuperblockV1) : sizeof sb) + sb.journal_bytes);
    return true;
}

// Reads a state's base catalog (or reuses the one last read) and applies its journal.
bool ObjectStore::load_base(State *s) const
{
    if (cache_ && cache_->base.block == s->base.block && cache_->base_bytes == s->base_bytes &&
        cache_->base_crc == s->base_crc && cache_->base_format == s->base_format) {
        s->base_bytes_read = cache_->base_bytes_read;
    } else {
        s->base_bytes_read.resize(s->base.blocks * block_);
        dev_.read_lbas(s->base.block * lbas_per_block_, s->base.blocks * lbas_per_block_, s->base_bytes_read.data());
        s->base_bytes_read.resize(s->base_bytes);
        if (csd_crc32c(s->base_bytes_read.data(), s->base_bytes_read.size()) != s->base_crc) return false;
    }
    return catalog::decode(s->base_bytes_read.data(), s->base_bytes_read.size(), s->base_format, &s->contents) &&
           catalog::apply(s->journal.data(), s->journal.size(), &s->contents);
}

// The newest valid state. A newer superblock whose catalog does not check out is read
// again (another writer may have just replaced the catalog it read) before the older
// slot is trusted instead.
ObjectStore::State ObjectStore::refresh() const
{
    for (unsigned attempt = 0;; attempt++) {
        State st[2];
        std::vector<uint8_t> raw[2];
        bool ok[2] = {read_slot(0, &st[0], &raw[0]), read_slot(1, &st[1], &raw[1])};
        const int newer = ok[0] && (!ok[1] || st[0].generation > st[1].generation) ? 0 : 1;
        for (int pick : {newer, 1 - newer}) {
            if (!ok[pick] || !load_base(&st[pick])) {
                if (attempt < 5) break;  // read both slots again
                continue;
            }
            if (pick != newer && attempt < 5) break;
            st[pick].other_slot = raw[1 - pick];
            st[pick].this_slot = raw[pick];
            cache_ = std::make_unique<State>(st[pick]);
            return st[pick];
        }
        if (attempt >= 5) {
            throw Error("no object store on this namespace (run 'csdctl format'), or both of its superblocks are damaged",
                        ENOENT);
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(attempt + 1));
    }
}

// The newest state without a copy: cache_, kept while neither superblock slot changed since it
// was read (the state follows from their bytes and the base catalog they name, which
// load_base() reuses on the same terms), else read again by refresh(). Call with mu_ held; the
// reference is good until the next refresh. Two reads of a block instead of decoding the whole
// catalog: a stat of one object among hundreds no longer costs hundreds of microseconds
// (the layer loader stats each tensor twice a landing).
const ObjectStore::State &ObjectStore::current() const
{
    if (cache_) {
        std::vector<uint8_t> a(block_), b(block_);
        dev_.read_lbas(0, lbas_per_block_, a.data());
        dev_.read_lbas(lbas_per_block_, lbas_per_block_, b.data());
        const State &c = *cache_;
        if ((a == c.this_slot && b == c.other_slot) || (a == c.other_slot && b == c.this_slot)) return c;
    }
    refresh();
    return *cache_;
}

ObjectStore::ObjectStore(Device &dev) : dev_(dev)
{
    block_ = block_size_for(dev);
    lbas_per_block_ = block_ / dev.ns().lba_size;
    cas_ = (dev.caps().features & CSD_FEATURE_COMPARE_WRITE) && block_ <= CSD_CAW_MAX_BYTES;
    if (!cas_) node_ = dev.path();
    refresh();
    // A child forked after this is made may go on using it: fork() waits for an update of
    // another thread to end, so that the child gets the store between updates.
    fork_hold_add(this, ForkLevel::store, [this] { mu_.lock(); }, [this](bool) { mu_.unlock(); });
}

ObjectStore::~ObjectStore() { fork_hold_remove(this); }

uint64_t ObjectStore::allocate(const State &s, uint64_t blocks) const
{
    std::vector<Extent> used{s.base};
    for (const auto &[n, o] : s.contents.objects) used.push_back({o.block, blocks_for(o.bytes)});
    for (const auto &[id, r] : s.contents.reservations) used.push_back({r.block, r.blocks});
    std::sort(used.begin(), used.end(), [](const Extent &x, const Extent &y) { return x.block < y.block; });
    uint64_t at = kFirstDataBlock;
    for (const Extent &e : used) {
        if (e.block >= at + blocks) break;
        at = std::max(at, e.block + e.blocks);
    }
    if (at > s.total_blocks || s.total_blocks - at < blocks) {
        // what is free in all, and the largest range (an object takes one range of blocks)
        uint64_t free = 0, largest = 0, end = kFirstDataBlock;
        for (const Extent &e : used) {
            if (e.block > end) free += e.block - end, largest = std::max(largest, e.block - end);
            end = std::max(end, e.block + e.blocks);
        }
        if (s.total_blocks > end) free += s.total_blocks - end, largest = std::max(largest, s.total_blocks - end);
        throw Error("object store: no room for " + std::to_string(blocks * block_) + " bytes in one range (" +
                        std::to_string(free * block_) + " free, the largest free range " +
                        std::to_string(largest * block_) + " bytes)",
                    ENOSPC);
    }
    return at;
}

uint64_t ObjectStore::free_bytes() const
{
    std::lock_guard<std::mutex> g(mu_);
    const State s = refresh();
    uint64_t used = s.base.blocks;
    for (const auto &[n, o] : s.contents.objects) used += blocks_for(o.bytes);
    for (const auto &[id, r] : s.contents.reservations) used += r.blocks;
    return (s.total_blocks - kFirstDataBlock - std::min(used, s.total_blocks - kFirstDataBlock)) * block_;
}

uint64_t ObjectStore::generation() const
{
    std::lock_guard<std::mutex> g(mu_);
    return refresh().generation;
}

// Commits the next generation into the slot `from` does not occupy: by Compare and Write
// against the bytes read there when the drive offers it (false: another writer was first).
bool ObjectStore::write_superblock(const State &from, const Extent &base, uint64_t base_bytes, uint32_t base_crc,
                                   uint32_t base_format, const std::vector<uint8_t> &journal)
{
    Superblock sb{};
    std::memcpy(sb.magic, kMagic, 8);
    sb.version = kVersion;
    sb.block_size = block_;
    sb.generation = from.generation + 1;
    sb.total_blocks = from.total_blocks;
    sb.catalog_block = base.block;
    sb.catalog_blocks = base.blocks;
    sb.catalog_bytes = base_bytes;
    sb.catalog_crc = base_crc;
    sb.catalog_format = base_format;
    sb.journal_bytes = static_cast<uint32_t>(journal.size());
    sb.crc = csd_crc32c_extend(csd_crc32c(&sb, offsetof(Superblock, crc)), journal.data(), journal.size());
    std::vector<uint8_t> blk(block_, 0);
    std::memcpy(blk.data(), &sb, sizeof sb);
    std::copy(journal.begin(), journal.end(), blk.begin() + sizeof sb);
    if (!cas_) {  // the lease: this host commits without Compare and Write until it expires
        Lease l{};
        std::memcpy(l.magic, kLeaseMagic, 8);
        const std::string me = host_id();
        std::memcpy(l.host, me.data(), std::min(me.size(), sizeof l.host - 1));
        l.expires_s = now_s() + lease_seconds();
        l.crc = csd_crc32c(&l, offsetof(Lease, crc));
        std::memcpy(blk.data() + blk.size() - sizeof l, &l, sizeof l);
    }
    const uint64_t slba = (sb.generation % 2 == 1 ? 0 : 1) * lbas_per_block_;
    if (cas_) {
        if (!dev_.compare_and_write(slba, lbas_per_block_, from.other_slot.data(), blk.data())) return false;
    } else {
        dev_.write_lbas(slba, lbas_per_block_, blk.data());
    }
    dev_.flush();
    return true;
}

void ObjectStore::update(const std::function<Changes(const State &)> &make, bool compacting)
{
    const size_t room = block_ - sizeof(Superblock) - sizeof(Lease);
    for (unsigned attempt = 0;; attempt++) {
        // Without Compare and Write, this host's writers take turns from reading the state to the commit.
        auto lock = std::make_unique<NodeLock>(cas_ ? std::string() : node_);
        State s = refresh();
        if (!cas_) refuse_foreign_lease(s.this_slot);
        const Changes ch = make(s);
        if (ch.empty()) return;
        // Ordinary changes leave room for a few reservations, which a compaction needs.
        const size_t keep = compacting ? 0 : 4 * catalog::kMaxReserveEntry;
        if (s.journal.size() + ch.size() + keep > room) {
            lock.reset();  // a compaction commits too
            if (compacting) {
                backoff(attempt);  // another writer is compacting: its commit empties the journal
            } else {
                compact();
            }
            continue;
        }
        std::vector<uint8_t> journal = s.journal;
        journal.insert(journal.end(), ch.begin(), ch.end());
        if (write_superblock(s, s.base, s.base_bytes, s.base_crc, s.base_format, journal)) {
            return;
        }
        lock.reset();
        if (attempt >= 10000) throw Error("object store: could not commit against other writers", EBUSY);
        backoff(attempt);
    }
}

Reservation ObjectStore::reserve(uint64_t blocks, bool compacting)
{
    Reservation r;
    r.id = random_id();
    r.blocks = blocks;
    r.owner = writer_name();
    update(
        [&](const State &s) {
            r.block = allocate(s, blocks);
            r.time = now_s();
            return catalog::reserve_entry(r);
        },
        compacting);
    return r;
}

void ObjectStore::release(uint64_t id)
{
    update([&](const State &s) { return s.contents.reservations.count(id) ? catalog::release_entry(id) : Changes{}; },
           true);
}

// Writes the full catalog into reserved space and commits a superblock that points to it
// with an empty journal; the old base catalog's space is free from then on.
void ObjectStore::compact()
{
    for (;;) {
        const State now = refresh();
        const uint64_t need = blocks_for(catalog::encode(now.contents).size() + block_);
        const Reservation r = reserve(need, true);
        for (;;) {
            auto lock = std::make_unique<NodeLock>(cas_ ? std::string() : node_);  // as update()'s
            const State s = refresh();
            if (!cas_) refuse_foreign_lease(s.this_slot);
            if (!s.contents.reservations.count(r.id)) {
                throw Error("object store: the space reserved for its catalog was reclaimed by another writer", EAGAIN);
            }
            catalog::Contents c = s.contents;
            c.reservations.erase(r.id);
            const std::vector<uint8_t> bytes = catalog::encode(c);
            if (blocks_for(bytes.size()) > r.blocks) {
                lock.reset();
                release(r.id);  // the catalog grew meanwhile: reserve more
                break;
            }
            write_blocks(r.block, bytes.data(), bytes.size());
            dev_.flush();
            if (write_superblock(s, {r.block, blocks_for(bytes.size())}, bytes.size(),
                                 csd_crc32c(bytes.data(), bytes.size()), catalog::kFormat2, {})) {
                return;
            }
        }
    }
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
        if (bytes > whole) {  // an empty object may come with no buffer at all (nullptr)
            std::memcpy(tail.data(), static_cast<const uint8_t *>(data) + whole, bytes - whole);
        }
        dev_.write_lbas((block + whole / block_) * lbas_per_block_, lbas_per_block_, tail.data());
        if (progress && bytes > whole) progress(bytes, bytes);  // the whole object written
    }
}

// A catalog entry for a new object (its data block still to be allocated).
static ObjectInfo new_entry(const std::string &name, uint64_t bytes, const std::string &dtype,
                            const std::vector<uint64_t> &shape)
{
    ObjectInfo o;
    o.name = name;
    o.dtype = dtype;
    o.shape = shape;
    o.bytes = bytes;
    return o;
}

// Commits an object whose data is written and flushed into reserved space.
void ObjectStore::commit_put(const ObjectInfo &obj, uint64_t reservation, const std::vector<uint64_t> &also)
{
    ObjectInfo o = obj;
    update([&](const State &s) {
        bool held = s.contents.reservations.count(reservation) != 0;
        for (const uint64_t id : also) held = held && s.contents.reservations.count(id) != 0;
        if (!held) {
            throw Error("put of object '" + o.name +
                            "': its reserved space was reclaimed by another writer ('csdctl reclaim'); not stored",
                        EIO);
        }
        o.generation = s.generation + 1;
        Changes ch = catalog::put_entry(o, reservation);
        for (const uint64_t id : also) {
            const Changes e = catalog::release_entry(id);
            ch.insert(ch.end(), e.begin(), e.end());
        }
        return ch;
    });
}

bool ObjectStore::reserve_at(uint64_t block, uint64_t blocks, Reservation *out)
{
    Reservation r;
    r.id = random_id();
    r.block = block;
    r.blocks = blocks;
    r.owner = writer_name();
    bool free = false;
    update([&](const State &s) {
        std::vector<Extent> used{s.base};
        for (const auto &[n, o] : s.contents.objects) used.push_back({o.block, blocks_for(o.bytes)});
        for (const auto &[id, x] : s.contents.reservations) used.push_back({x.block, x.blocks});
        free = block >= kFirstDataBlock && block <= s.total_blocks && s.total_blocks - block >= blocks;
        for (const Extent &e : used) free = free && (e.block + e.blocks <= block || e.block >= block + blocks);
        r.time = now_s();
        return free ? catalog::reserve_entry(r) : Changes{};
    });
    if (free) *out = r;
    return free;
}

// How long a release after a failure keeps trying while the kernel answers EAGAIN (the
// controller resetting, say: the failure that stopped the run may be that very reset).
constexpr auto kReleaseRetryFor = std::chrono::seconds(5);

void ObjectStore::release_quietly(const std::vector<uint64_t> &ids)
{
    for (const uint64_t id : ids) {
        const auto until = std::chrono::steady_clock::now() + kReleaseRetryFor;
        for (auto wait = std::chrono::milliseconds(20);; wait = std::min(wait * 2, std::chrono::milliseconds(500))) {
            try {
                locked([&] { release(id); });
                break;
            } catch (const Error &e) {  // the first error is the one to report; a transient one is tried again
                if (e.status() || e.errnum() != EAGAIN || std::chrono::steady_clock::now() + wait > until) break;
                std::this_thread::sleep_for(wait);
            } catch (...) {
                break;
            }
        }
    }
}

// The dtype as the catalog records it: numpy's canonical text (csd/npy.hpp), empty for a
// blob; throws csd::Error (EINVAL) for one numpy could not load back.
static std::string catalog_dtype(const std::string &name, const std::string &dtype)
{
    if (dtype.empty()) return dtype;
    try {
        return npy::canonical_dtype(dtype);
    } catch (const Error &e) {
        throw Error("object '" + name + "'", e);
    }
}

void ObjectStore::put(const std::string &name, const void *data, uint64_t bytes, const std::string &type,
                      const std::vector<uint64_t> &shape, const Progress &progress)
{
    refuse_read_only(dev_, "put of object '" + name + "'");
    const std::string dtype = catalog_dtype(name, type);
    catalog::check_entry(name, dtype, shape);
    ObjectInfo o = new_entry(name, bytes, dtype, shape);
    o.crc32c = csd_crc32c(data, bytes);
    // The store's lock only around its catalog updates: the reservation keeps the space this
    // put's own, and progress may use the store (or wait on a thread that does).
    const Reservation r = locked([&] { return reserve(blocks_for(bytes)); });
    try {
        o.block = r.block;
        write_blocks(o.block, data, bytes, progress);
        dev_.flush();
        locked([&] { commit_put(o, r.id); });
    } catch (...) {
        release_quietly({r.id});
        throw;
    }
}

// A streaming put's space: reservations covering [start, start + blocks) store blocks,
// grown as the bytes come (a source of unknown size).
struct ObjectStore::StreamSpace {
    std::vector<uint64_t> ids;  // ids[0] is the one the object's entry replaces
    uint64_t start = 0, blocks = 0;
};

// Space for at least `need` blocks of a put that has written `written` bytes into `sp`:
// the blocks right after it where they are free (twice its size, else just enough), else a
// free range twice as large (else just large enough), to which the bytes written so far are
// copied (through `scratch`, a chunk of host memory).
void ObjectStore::grow(StreamSpace &sp, uint64_t need, uint64_t written, std::vector<uint8_t> &scratch)
{
    const uint64_t want = std::max(need, 2 * sp.blocks);
    Reservation r;
    for (const uint64_t total : {want, need}) {
        if (locked([&] { return reserve_at(sp.start + sp.blocks, total - sp.blocks, &r); })) {
            sp.ids.push_back(r.id);
            sp.blocks = total;
            return;
        }
    }
    uint64_t blocks = want;
    try {
        r = locked([&] { return reserve(want); });
    } catch (const Error &e) {
        if (e.errnum() != ENOSPC || want == need) throw;
        r = locked([&] { return reserve(need); });  // no room for twice: just enough, this time
        blocks = need;
    }
    const uint32_t lba = dev_.ns().lba_size;
    try {
        for (uint64_t at = 0; at < written; at += scratch.size()) {  // written is whole blocks
            const uint64_t n = std::min<uint64_t>(scratch.size(), written - at);
            dev_.read_lbas(sp.start * lbas_per_block_ + at / lba, n / lba, scratch.data());
            dev_.write_lbas(r.block * lbas_per_block_ + at / lba, n / lba, scratch.data());
        }
    } catch (...) {
        release_quietly({r.id});
        throw;
    }
    release_quietly(sp.ids);
    sp = {{r.id}, r.block, blocks};
}

void ObjectStore::put(const std::string &name, ObjectSource &src, const std::string &type,
                      const std::vector<uint64_t> &shape, const Progress &progress)
{
    refuse_read_only(dev_, "put of object '" + name + "'");
    const std::string dtype = catalog_dtype(name, type);
    catalog::check_entry(name, dtype, shape);
    const uint64_t size = src.size();
    const bool known = size != ObjectSource::kUnknownSize;
    ObjectInfo o = new_entry(name, 0, dtype, shape);
    o.crc32c = csd_crc32c(nullptr, 0);
    StreamSpace sp;
    // The store's lock only around catalog updates (reserve, grow, commit, release), never
    // while the source or progress runs: either may wait on another user of this store.
    const Reservation r = locked([&] { return reserve(blocks_for(known ? size : kStreamChunk)); });
    sp = {{r.id}, r.block, r.blocks};
    try {
        std::vector<uint8_t> buf(kStreamChunk), scratch;
        for (bool end = false; !end;) {
            uint64_t got = 0;  // a whole chunk (whole blocks) unless the source ended
            while (got < buf.size()) {
                const uint64_t n = src.read(buf.data() + got, buf.size() - got);
                if (n == 0) {
                    end = true;
                    break;
                }
                got += n;
            }
            if (known && got > size - o.bytes) {
                throw Error("put of object '" + name + "': its source gave more than the " + std::to_string(size) +
                                " bytes it promised (a file written to while it is read does this); nothing stored",
                            EIO);
            }
            if (got == 0) break;
            if (blocks_for(o.bytes + got) > sp.blocks) {
                if (scratch.empty()) scratch.resize(kStreamChunk);
                grow(sp, blocks_for(o.bytes + got), o.bytes, scratch);
            }
            write_blocks(sp.start + o.bytes / block_, buf.data(), got);
            o.crc32c = csd_crc32c_extend(o.crc32c, buf.data(), got);
            o.bytes += got;
            if (progress) progress(o.bytes, known ? size : 0);
        }
        if (known && o.bytes != size) {
            throw Error("put of object '" + name + "': its source ended after " + std::to_string(o.bytes) + " of the " +
                            std::to_string(size) + " bytes it promised; nothing stored",
                        EIO);
        }
        if (o.bytes == 0) write_blocks(sp.start, nullptr, 0);  // an empty object's one zeroed block
        dev_.flush();
        o.block = sp.start;
        locked([&] { commit_put(o, sp.ids[0], std::vector<uint64_t>(sp.ids.begin() + 1, sp.ids.end())); });
    } catch (...) {
        release_quietly(sp.ids);
        throw;
    }
}

ObjectInfo ObjectStore::stat(const std::string &name) const
{
    std::lock_guard<std::mutex> g(mu_);
    const State &s = current();
    auto it = s.contents.objects.find(name);
    if (it == s.contents.objects.end()) {
        throw Error("object '" + name + "'", ENOENT);
    }
    return it->second;
}

bool ObjectStore::exists(const std::string &name) const
{
    std::lock_guard<std::mutex> g(mu_);
    return current().contents.objects.count(name) != 0;
}

std::vector<ObjectInfo> ObjectStore::list() const
{
    std::lock_guard<std::mutex> g(mu_);
    std::vector<ObjectInfo> v;
    for (const auto &[n, o] : current().contents.objects) v.push_back(o);
    return v;
}

std::vector<Reservation> ObjectStore::reservations() const
{
    std::lock_guard<std::mutex> g(mu_);
    std::vector<Reservation> v;
    for (const auto &[id, r] : refresh().contents.reservations) v.push_back(r);
    return v;
}

size_t ObjectStore::reclaim(uint64_t max_age_s)
{
    refuse_read_only(dev_, "reclaim");
    std::lock_guard<std::mutex> g(mu_);
    size_t n = 0;
    update([&](const State &s) {
        Changes ch;
        n = 0;
        const uint64_t now = now_s();
        for (const auto &[id, r] : s.contents.reservations) {
            if (now >= r.time && now - r.time >= max_age_s) {
                const Changes e = catalog::release_entry(id);
                ch.insert(ch.end(), e.begin(), e.end());
                n++;
            }
        }
        return ch;
    });
    return n;
}

// The one place that knows where an object's bytes lie: whole LBAs are read straight into
// out, a partial LBA at either end through one LBA of scratch.
void ObjectStore::read_bytes(const ObjectInfo &o, uint64_t pos, uint64_t n, uint8_t *out)
{
    const uint32_t lba = dev_.ns().lba_size;
    const uint64_t first = o.block * lbas_per_block_;
    std::vector<uint8_t> scratch;
    auto partial = [&](uint64_t at, uint64_t len, uint8_t *to) {
        scratch.resize(lba);
        dev_.read_lbas(first + at / lba, 1, scratch.data());
        std::memcpy(to, scratch.data() + at % lba, len);
    };
    uint64_t done = 0;
    if (n > 0 && pos % lba != 0) {
        done = std::min<uint64_t>(n, lba - pos % lba);
        partial(pos, done, out);
    }
    const uint64_t whole = (n - done) / lba;
    if (whole > 0) {
        dev_.read_lbas(first + (pos + done) / lba, whole, out + done);
        done += whole * lba;
    }
    if (done < n) partial(pos + done, n - done, out + done);
}

void ObjectStore::read(const std::string &name, uint64_t offset, uint64_t len, void *buf, const Progress &progress)
{
    const ObjectInfo o = stat(name);
    if (offset > o.bytes || len > o.bytes - offset) {
        throw Error("read of object '" + name + "' [" + std::to_string(offset) + ", +" + std::to_string(len) +
                        ") beyond its " + std::to_string(o.bytes) + " bytes",
                    EINVAL);
    }
    auto *out = static_cast<uint8_t *>(buf);
    for (uint64_t done = 0; done < len;) {
        const uint64_t n = std::min(len - done, kProgressChunk);
        read_bytes(o, offset + done, n, out + done);
        done += n;
        if (progress) progress(done, len);
    }
}

namespace {

// Bytes a landing reads and then checks at a time: few enough to be checked while they are
// still in the cache of the core that read them.
constexpr uint64_t kCheckStep = 512 << 10;  // 64 and 128 KiB were slower on the GPU machine (perf.md)

// A vector, sized for each attempt, as a destination (get()).
class VectorSink : public ObjectSink {
public:
    explicit VectorSink(std::vector<uint8_t> *v) : v_(v) {}
    void land(const ObjectInfo &o, const Fill &fill) override
    {
        v_->resize(o.bytes);
        for (uint64_t pos = 0; pos < o.bytes; pos += kProgressChunk) {
            fill(pos, std::min(kProgressChunk, o.bytes - pos), v_->data() + pos);
        }
    }

private:
    std::vector<uint8_t> *v_;
};

}  // namespace

void MemorySink::land(const ObjectInfo &o, const Fill &fill)
{
    if (o.bytes > capacity_) {
        throw Error("object '" + o.name + "' has " + std::to_string(o.bytes) + " bytes; the destination holds " +
                        std::to_string(capacity_),
                    ENOSPC);
    }
    for (uint64_t pos = 0; pos < o.bytes; pos += kProgressChunk) {
        fill(pos, std::min(kProgressChunk, o.bytes - pos), buf_ + pos);
    }
}

// Each piece the sink asks for is read and its CRC-32C computed by the thread that asked,
// step by step while the bytes are in its cache; the pieces' CRCs are then combined in
// order, which also proves that the pieces covered the object once.
void ObjectSink::land_mapped(const ObjectInfo &o, const uint8_t *, const Check &)
{
    throw Error("landing object '" + o.name + "': this destination cannot copy from the mapped namespace", ENOTSUP);
}

void ObjectSink::land_checked(const ObjectInfo &o, const Fill &, const uint8_t *, const Landed &)
{
    throw Error("landing object '" + o.name + "': this destination does not check what landed", ENOTSUP);
}

uint32_t ObjectStore::land_once(const ObjectInfo &o, ObjectSink &sink, const Progress &progress, bool *mapped)
{
    struct Piece {
        uint64_t pos, n;
        uint32_t crc;
    };
    std::mutex mu;
    std::vector<Piece> pieces;
    uint64_t done = 0;
    auto in_object = [&](uint64_t pos, uint64_t n) {
        if (pos > o.bytes || n > o.bytes - pos) {
            throw Error("landing object '" + o.name + "': a read of [" + std::to_string(pos) + ", +" +
                            std::to_string(n) + ") beyond its " + std::to_string(o.bytes) + " bytes",
                        EINVAL);
        }
    };
    auto piece_done = [&](uint64_t pos, uint64_t n, uint32_t crc) {
        std::lock_guard<std::mutex> g(mu);
        pieces.push_back({pos, n, crc});
        done += n;
        if (progress) progress(std::min(done, o.bytes), o.bytes);
    };
    // The simulated peer-to-peer drive: the destination copies from the mapped namespace and
    // the store checks the same bytes there, in parallel with the copy.
    *mapped = false;
    if (sink.checks_landed()) {  // the destination checks the landed copy (on the GPU)
        const uint8_t *ns = dev_.namespace_host_pointer();
        sink.land_checked(
            o,
            [&](uint64_t pos, uint64_t n, uint8_t *host) {
                in_object(pos, n);
                read_bytes(o, pos, n, host);
            },
            ns ? ns + first_lba(o) * dev_.ns().lba_size : nullptr,
            [&](uint64_t pos, uint64_t n, uint32_t crc) {
                in_object(pos, n);
                piece_done(pos, n, crc);
            });
    } else if (const uint8_t *ns = sink.takes_mapped() ? dev_.namespace_host_pointer() : nullptr) {
        *mapped = true;
        const uint32_t lba = dev_.ns().lba_size;
        dev_.read_lbas_mapped(first_lba(o), std::max<uint64_t>(1, (o.bytes + lba - 1) / lba));  // the drive's Reads
        const uint8_t *bytes = ns + first_lba(o) * lba;
        sink.land_mapped(o, bytes, [&](uint64_t pos, uint64_t n) {
            in_object(pos, n);
            piece_done(pos, n, csd_crc32c(bytes + pos, n));
        });
    } else {
        sink.land(o, [&](uint64_t pos, uint64_t n, uint8_t *host) {
            in_object(pos, n);
            uint32_t crc = csd_crc32c(nullptr, 0);
            for (uint64_t at = pos; at < pos + n;) {
                const uint64_t m = std::min(pos + n, (at / kCheckStep + 1) * kCheckStep) - at;
                read_bytes(o, at, m, host + (at - pos));
                crc = csd_crc32c_extend(crc, host + (at - pos), m);
                at += m;
            }
            piece_done(pos, n, crc);
        });
    }
    std::sort(pieces.begin(), pieces.end(), [](const Piece &a, const Piece &b) { return a.pos < b.pos; });
    uint32_t crc = csd_crc32c(nullptr, 0);
    uint64_t covered = 0;
    for (const Piece &p : pieces) {
        if (p.n == 0) continue;
        if (p.pos != covered) {
            throw Error("landing object '" + o.name + "': the destination read [" + std::to_string(p.pos) + ", +" +
                            std::to_string(p.n) + ") after [0, " + std::to_string(covered) +
                            "): a gap or an overlap",
                        EINVAL);
        }
        crc = csd_crc32c_combine(crc, p.crc, p.n);
        covered += p.n;
    }
    if (covered != o.bytes) {
        throw Error("landing object '" + o.name + "': the destination read " + std::to_string(covered) + " of its " +
                        std::to_string(o.bytes) + " bytes",
                    EINVAL);
    }
    return crc;
}

ObjectInfo ObjectStore::get_into(const std::string &name, ObjectSink &sink, const Progress &progress)
{
    // An object replaced by another writer while it was read fails its CRC (its old space
    // may hold other data by then): read the new version. The same entry failing again is
    // damage behind the store's back.
    constexpr int kAttempts = 4;
    for (int attempt = 1;; attempt++) {
        const ObjectInfo o = stat(name);
        bool mapped = false;
        const bool crc_ok = land_once(o, sink, progress, &mapped) == o.crc32c;
        const ObjectInfo again = crc_ok && !mapped ? o : stat(name);
        const bool same = again.block == o.block && again.crc32c == o.crc32c && again.generation == o.generation;
        // from the mapping, the bytes checked are those copied only if the object stayed put
        if (crc_ok && (!mapped || same)) return o;
        if (!crc_ok && same) {
            throw Error("object '" + name + "' does not match its CRC-32C: the namespace was changed behind the store",
                        EIO);
        }
        if (attempt == kAttempts) {
            throw Error("object '" + name + "' was replaced by another writer during each of " +
                            std::to_string(kAttempts) + " reads; try again",
                        EAGAIN);
        }
    }
}

std::vector<uint8_t> ObjectStore::get(const std::string &name, const Progress &progress)
{
    std::vector<uint8_t> v;
    VectorSink sink(&v);
    get_into(name, sink, progress);
    return v;
}

void ObjectStore::remove(const std::string &name)
{
    refuse_read_only(dev_, "remove object '" + name + "'");
    std::lock_guard<std::mutex> g(mu_);
    update([&](const State &s) {
        if (!s.contents.objects.count(name)) throw Error("remove object '" + name + "'", ENOENT);
        return catalog::remove_entry(name);
    });
}

SlmBuffer ObjectStore::load(const std::string &name)
{
    const ObjectInfo o = stat(name);
    const uint64_t blocks = blocks_for(o.bytes);
    SlmBuffer buf = dev_.slm().alloc(blocks * block_, block_);
    dev_.slm_load(o.block * lbas_per_block_, blocks * lbas_per_block_, buf.offset());
    return buf;
}

void ObjectStore::put_from_slm(const std::string &name, const SlmBuffer &src, uint64_t bytes, const std::string &type,
                               const std::vector<uint64_t> &shape)
{
    refuse_read_only(dev_, "put of object '" + name + "' from SLM");
    const std::string dtype = catalog_dtype(name, type);
    catalog::check_entry(name, dtype, shape);
    const uint64_t blocks = blocks_for(bytes);
    if (src.size() < blocks * block_) {
        throw Error("put_from_slm: the SLM buffer must cover whole store blocks (" + std::to_string(blocks * block_) +
                        " bytes)",
                    EINVAL);
    }
    std::lock_guard<std::mutex> g(mu_);
    ObjectInfo o = new_entry(name, bytes, dtype, shape);
    // The CRC is computed inside the drive too: only 8 bytes cross the bus.
    o.crc32c = bytes ? static_cast<uint32_t>(programs::checksum(dev_, ChecksumAlgo::crc32c, Range{src.offset(), bytes}))
                     : csd_crc32c(nullptr, 0);
    const Reservation r = reserve(blocks);
    try {
        o.block = r.block;
        dev_.slm_store(o.block * lbas_per_block_, blocks * lbas_per_block_, src.offset());
        dev_.flush();
        commit_put(o, r.id);
    } catch (...) {
        try {
            release(r.id);
        } catch (...) {
        }
        throw;
    }
}

}  // namespace csd
