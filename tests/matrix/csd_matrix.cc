// SPDX-License-Identifier: MIT
// csd-matrix: the feature matrix's driver (issue 40 item 6, docs/feature-matrix.md). It runs
// the matrix's rows (tests/matrix/matrix.py names them) through one way in (a device path
// and open options) on one namespace format, checks each result against a computation of
// its own on the host, and prints one JSON line per cell:
//   {"row": R, "way": W, "format": F, "outcome": "ok" | "refused" | "fail", "status": NAME,
//    "detail": TEXT}
// "ok": the reference result; "refused": an NVMe status (its name) or an errno (its name)
// and nothing else happened; "fail": wrong bytes, another tenant's or drive's bytes, a write
// that landed elsewhere, or an error that names nothing. A crash or a hang is the runner's
// to see (no line for the cell).
//
// The reference is the namespace's stamps: before the driver runs, every block of the first
// 64 MiB of the namespace holds f32 words that say its absolute LBA and drive
// (csd-matrix --stamp). A way whose LBA 0 is block BASE of the namespace (a csd.ko partition)
// must read stamp(BASE + lba); a read of any other block gives other words. Writes are read
// back through the way and, where --check names the namespace's bytes (its block device or
// backing file, opened before the driver drops to --as-user), at their absolute place.
//
// Usage:
//   csd-matrix --stamp DEVICE SALT            stamp the first 64 MiB (root; a fresh zoned
//                                             namespace is written from its first zone on)
//   csd-matrix --way W --format F --rows R1,R2 --device PATH [--device PATH ...]
//              [--uring] [--front-end vendor|nvme-cs|host] [--base LBA] [--check FILE ...]
//              [--salt N ...] [--as-user NAME] [--bpf-dir DIR] [--zones FIRST,LBAS]
//              [--go FILE]
//   Several --device (a DriveSet): each row runs on every drive of the set, with that
//   drive's --salt and --check. --zones: a zoned namespace whose zones of LBAS blocks are
//   empty from block FIRST on: store, NVM I/O and the chase's tree write to the first three
//   of them (at their write pointers). --go FILE: after opening and placing its data, each row
//   creates FILE.ready and waits until FILE exists before its command (the runner detaches
//   the namespace meanwhile), then removes both.
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "csd/btree.hpp"
#include "csd/device.hpp"
#include "csd/drive_set.hpp"
#include "csd/program.hpp"
#include "csd/programs.hpp"

using namespace csd;

namespace {

constexpr uint64_t kStampBytes = 64ull << 20;  // the stamped part of every namespace
// Where the rows work, in bytes from the way's LBA 0 (all inside the stamped part).
constexpr uint64_t kReadAt = 1ull << 20;    // reads only: load, gather, embedding_bag, nvm
constexpr uint64_t kStoreAt = 8ull << 20;   // store
constexpr uint64_t kCawAt = 9ull << 20;     // Compare and Write (restored after)
constexpr uint64_t kNvmAt = 10ull << 20;    // NVM Write
constexpr uint64_t kTreeAt = 12ull << 20;   // the chase's B+-tree

// The f32 value of word k of absolute block lba of drive salt: a multiple of 1/4 below
// 2048, so that sums of a few thousand are exact in f32 whatever their order.
float stamp_word(uint64_t lba, uint64_t k, uint32_t salt)
{
    return static_cast<float>((lba * 977 + k * 13 + salt * 4099) % 8191) * 0.25f;
}

// Bytes [off, off + len) of the stamped namespace (absolute byte offsets).
std::vector<uint8_t> stamp_bytes(uint64_t off, uint64_t len, uint32_t lba_size, uint32_t salt)
{
    std::vector<uint8_t> out(len);
    for (uint64_t i = 0; i < len;) {
        const uint64_t b = off + i, lba = b / lba_size, word = (b % lba_size) / 4;
        const float f = stamp_word(lba, word, salt);
        uint8_t w[4];
        std::memcpy(w, &f, 4);
        for (uint64_t j = b % 4; j < 4 && i < len; j++) out[i++] = w[j];
    }
    return out;
}

// CRC-32C (Castagnoli, reflected), bit by bit: the exec row's reference, kept apart from
// the wire format's implementation on purpose.
uint32_t crc32c(const uint8_t *p, size_t n)
{
    uint32_t c = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int b = 0; b < 8; b++) c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1)));
    }
    return ~c;
}

// A JSON string literal.
std::string js(const std::string &s)
{
    std::string o = "\"";
    for (char ch : s) {
        if (ch == '"' || ch == '\\') o += '\\';
        if (static_cast<unsigned char>(ch) < 0x20) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\u%04x", ch);
            o += buf;
        } else {
            o += ch;
        }
    }
    return o + "\"";
}

// What a row found: the reference result, a named refusal, or a failure.
struct Outcome {
    std::string outcome, status, detail;
};
// The reference result (detail: something worth saying about it).
Outcome ok(const std::string &detail = "") { return {"ok", "", detail}; }
// A failure, in words.
Outcome fail(const std::string &detail) { return {"fail", "", detail}; }

// A row's check failed: its words say what differed.
struct Mismatch : std::runtime_error {
    using std::runtime_error::runtime_error;
};
// Throws Mismatch(what) unless cond.
void expect(bool cond, const std::string &what)
{
    if (!cond) throw Mismatch(what);
}

// The name of an errno value (ENODEV), for a refusal that carries no NVMe status.
std::string errno_name(int e)
{
    static const std::map<int, const char *> names{
        {EPERM, "EPERM"}, {ENOENT, "ENOENT"}, {EIO, "EIO"}, {ENXIO, "ENXIO"}, {EBADF, "EBADF"},
        {EAGAIN, "EAGAIN"}, {ENOMEM, "ENOMEM"}, {EACCES, "EACCES"}, {EBUSY, "EBUSY"}, {ENODEV, "ENODEV"},
        {EINVAL, "EINVAL"}, {ENOSPC, "ENOSPC"}, {ENOTTY, "ENOTTY"}, {EOPNOTSUPP, "EOPNOTSUPP"},
        {ETIMEDOUT, "ETIMEDOUT"}, {ECANCELED, "ECANCELED"}, {ENOLINK, "ENOLINK"}, {ESHUTDOWN, "ESHUTDOWN"},
        {EREMOTEIO, "EREMOTEIO"}, {ENOTCONN, "ENOTCONN"}, {ERANGE, "ERANGE"}, {EFAULT, "EFAULT"}};
    auto it = names.find(e);
    return it != names.end() ? it->second : "errno " + std::to_string(e);
}

// One drive of the way: the device, its stamp salt and where its namespace's bytes lie.
struct Drive {
    Device *dev = nullptr;
    uint32_t salt = 0;
    int check_fd = -1;  // the namespace's bytes (absolute), or -1
};

// What every row is given.
struct Ctx {
    Drive drive;
    uint64_t base = 0;       // the way's LBA 0 is this block of the namespace
    uint64_t fresh_lba = 0;  // zoned: the first of three empty zones (the way's), else 0
    uint64_t zone_lbas = 0;  // zoned: LBAs a zone, else 0
    bool zoned = false;
    std::string bpf_dir, go;
    std::mt19937_64 rng{1};
    Device &d() { return *drive.dev; }                        // the drive
    uint32_t L() { return drive.dev->ns().lba_size; }         // its LBA size
    uint64_t lba(uint64_t byte_off) { return byte_off / L(); }  // a byte offset as an LBA
    // The stamped bytes of the way's LBAs [lba, lba + nlb).
    std::vector<uint8_t> stamps(uint64_t lba, uint64_t nlb)
    {
        return stamp_bytes((base + lba) * L(), nlb * L(), L(), drive.salt);
    }
    // The runner's turn (--go): the data is in place, the command is next.
    void before_command()
    {
        if (go.empty()) return;
        const std::string ready = go + ".ready";
        int fd = ::open(ready.c_str(), O_CREAT | O_WRONLY, 0666);
        if (fd >= 0) ::close(fd);
        struct stat st;
        for (int i = 0; i < 6000 && ::stat(go.c_str(), &st) != 0; i++) {
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
        ::unlink(go.c_str());
        ::unlink(ready.c_str());
    }
    // The namespace's bytes at the way's LBAs (absolute: base added), when --check gave them.
    bool absolute(uint64_t lba, uint64_t nlb, std::vector<uint8_t> *out)
    {
        if (drive.check_fd < 0) return false;
        const uint64_t len = nlb * L(), off = (base + lba) * L();
        void *buf = nullptr;
        if (posix_memalign(&buf, 4096, len + 4096)) return false;
        const ssize_t n = ::pread(drive.check_fd, buf, len, static_cast<off_t>(off));
        if (n != static_cast<ssize_t>(len)) {
            std::free(buf);
            throw Mismatch("the check read of the namespace's bytes failed: " + std::string(std::strerror(errno)));
        }
        out->assign(static_cast<uint8_t *>(buf), static_cast<uint8_t *>(buf) + len);
        std::free(buf);
        return true;
    }
    // Writes of the way landed at its LBAs (checked at their absolute place where possible).
    void landed(uint64_t lba, const std::vector<uint8_t> &want, const char *what)
    {
        std::vector<uint8_t> got;
        if (absolute(lba, want.size() / L(), &got)) {
            expect(got == want, std::string(what) + ": the namespace does not hold the written bytes at block " +
                                    std::to_string(base + lba) + " (written elsewhere)");
        }
    }
    // n bytes of this row's own random stream.
    std::vector<uint8_t> random_bytes(size_t n)
    {
        std::vector<uint8_t> v(n);
        for (auto &b : v) b = static_cast<uint8_t>(rng());
        return v;
    }
};

// ---------------------------------------------------------------- the rows
// namespace -> SLM: SLM Load (vendor) / Memory Copy format 2h (the standard front end).
Outcome row_load(Ctx &c)
{
    const uint64_t lba = c.lba(kReadAt), nlb = c.lba(64 << 10);
    SlmBuffer b = c.d().slm().alloc(nlb * c.L());
    c.before_command();
    c.d().slm_load(lba, nlb, b.offset());
    std::vector<uint8_t> got(nlb * c.L());
    c.d().slm_read(b.offset(), got.data(), got.size());
    expect(got == c.stamps(lba, nlb), "SLM does not hold the namespace's blocks (another block's words)");
    return ok();
}

// SLM -> namespace: SLM Store (vendor) / Copy format 4h (standard).
Outcome row_store(Ctx &c)
{
    const uint64_t lba = c.zoned ? c.fresh_lba : c.lba(kStoreAt), nlb = c.lba(64 << 10);
    const auto data = c.random_bytes(nlb * c.L());
    SlmBuffer b = c.d().slm().alloc(data.size());
    c.d().slm_write(b.offset(), data.data(), data.size());
    c.before_command();
    c.d().slm_store(lba, nlb, b.offset());
    c.d().flush();
    std::vector<uint8_t> back(data.size());
    c.d().read_lbas(lba, nlb, back.data());
    expect(back == data, "a Read of the stored LBAs does not give the SLM's bytes");
    c.landed(lba, data, "store");
    if (!c.zoned) {
        std::vector<uint8_t> edge(c.L());
        c.d().read_lbas(lba + nlb, 1, edge.data());
        expect(edge == c.stamps(lba + nlb, 1), "the block after the stored ones changed");
    }
    return ok();
}

// gather (0Bh): pieces of blocks at odd offsets, some across block boundaries.
Outcome row_gather(Ctx &c)
{
    const uint64_t first = c.lba(kReadAt), span = c.lba(256 << 10);
    std::vector<csd_gather_entry> es;
    std::vector<uint8_t> want;
    for (uint32_t i = 0; i < 40; i++) {
        const uint64_t lba = first + (i * 37) % span;
        const uint32_t off = (i * 101) % c.L(), len = 1 + (i * 53) % (2 * c.L());
        es.push_back({lba, off, len});
        const auto s = stamp_bytes((c.base + lba) * c.L() + off, len, c.L(), c.drive.salt);
        want.insert(want.end(), s.begin(), s.end());
    }
    // the entries in SLM first: after the runner's turn (--go) the Execute alone
    SlmBuffer ent = c.d().slm().alloc(es.size() * sizeof es[0]), out = c.d().slm().alloc(want.size());
    c.d().slm_write(ent.offset(), es.data(), es.size() * sizeof es[0]);
    c.before_command();
    const uint64_t n = programs::gather(c.d(), range(ent), static_cast<uint32_t>(es.size()), range(out));
    expect(n == want.size(), "gathered " + std::to_string(n) + " bytes, not " + std::to_string(want.size()));
    std::vector<uint8_t> got(want.size());
    c.d().slm_read(out.offset(), got.data(), got.size());
    expect(got == want, "gathered bytes differ from the namespace's (another block's words)");
    return ok();
}

// embedding_bag (0Ch): sum of stamped rows (8 f32 each) of a table at the read area.
Outcome row_embedding_bag(Ctx &c)
{
    EmbeddingBagSpec spec;
    spec.table_lba = c.lba(kReadAt);
    spec.row_dim = 8;
    spec.num_rows = (256 << 10) / 32;
    spec.num_bags = 3;
    const std::vector<int64_t> idx{5, 2047, 5, 0, 17, 100, 101, 8000, 3};
    const std::vector<int64_t> offsets{0, 3, 3};
    std::vector<float> want(spec.num_bags * spec.row_dim, 0.0f);
    for (size_t bag = 0; bag < offsets.size(); bag++) {
        const size_t end = bag + 1 < offsets.size() ? static_cast<size_t>(offsets[bag + 1]) : idx.size();
        for (size_t i = static_cast<size_t>(offsets[bag]); i < end; i++) {
            const auto row = stamp_bytes((c.base + spec.table_lba) * c.L() + static_cast<uint64_t>(idx[i]) * 32, 32,
                                         c.L(), c.drive.salt);
            for (uint32_t k = 0; k < spec.row_dim; k++) {
                float f;
                std::memcpy(&f, row.data() + 4 * k, 4);
                want[bag * spec.row_dim + k] += f;
            }
        }
    }
    // indices and offsets (i64) in SLM first: after the runner's turn the Execute alone
    SlmBuffer ib = c.d().slm().alloc(idx.size() * 8), ob = c.d().slm().alloc(offsets.size() * 8),
              out = c.d().slm().alloc(want.size() * 4);
    c.d().slm_write(ib.offset(), idx.data(), idx.size() * 8);
    c.d().slm_write(ob.offset(), offsets.data(), offsets.size() * 8);
    c.before_command();
    programs::embedding_bag(c.d(), spec, range(ib), range(ob), Range{out.offset(), 0}, range(out));
    std::vector<float> got(want.size());
    c.d().slm_read(out.offset(), got.data(), got.size() * 4);
    expect(std::memcmp(got.data(), want.data(), got.size() * 4) == 0, "pooled rows differ from the namespace's");
    return ok();
}

// A downloaded program's chase (eBPF btree_lookup.o over a B+-tree written by the way).
Outcome row_chase(Ctx &c)
{
    if (!c.d().caps().max_chase_hops) {
        return {"refused", "no chase", "the drive's capabilities log says no chase (max_chase_hops 0)"};
    }
    std::vector<uint64_t> keys, vals;
    for (uint64_t k = 10; keys.size() < 2000; k += 3) {
        keys.push_back(k);
        vals.push_back(k * 7 + 1);
    }
    const uint64_t at = c.zoned ? c.fresh_lba + 2 * c.zone_lbas : c.lba(kTreeAt);
    BtreeLayout tree;
    const auto blocks = btree_blocks(keys, vals, at, c.L(), 31, &tree);
    Program lookup(c.d(), c.bpf_dir + "/btree_lookup.o", kBtreeRecordSize);
    c.d().write_lbas(at, blocks.size() / c.L(), blocks.data());
    c.d().flush();
    c.landed(at, blocks, "the tree's blocks");
    c.before_command();
    for (size_t i = 0; i < keys.size(); i += 181) {
        const auto v = btree_lookup(lookup, tree, keys[i]);
        expect(v && *v == vals[i], "the chase for key " + std::to_string(keys[i]) + " found " +
                                       (v ? std::to_string(*v) : std::string("nothing")));
    }
    expect(!btree_lookup(lookup, tree, 11), "a chase found key 11, which the tree does not hold");
    return ok("depth " + std::to_string(tree.depth));
}

// Compare and Write (8Dh): a match writes, a stale expectation is Compare Failure.
Outcome row_caw(Ctx &c)
{
    const uint64_t lba = c.lba(kCawAt), nlb = std::max<uint64_t>(1, c.lba(4096));
    const auto stamp = c.stamps(lba, nlb), data = c.random_bytes(nlb * c.L());
    c.before_command();
    expect(c.d().compare_and_write(lba, nlb, stamp.data(), data.data()),
           "Compare Failure against the namespace's own blocks (it compared other blocks)");
    c.landed(lba, data, "Compare and Write");
    expect(!c.d().compare_and_write(lba, nlb, stamp.data(), stamp.data()),
           "a Compare and Write with stale bytes succeeded");
    expect(c.d().compare_and_write(lba, nlb, data.data(), stamp.data()), "restoring the blocks: Compare Failure");
    return ok();
}

// NVM Write and Read of the namespace.
Outcome row_nvm(Ctx &c)
{
    const uint64_t lba = c.zoned ? c.fresh_lba + c.zone_lbas : c.lba(kNvmAt), nlb = c.lba(64 << 10);
    const auto data = c.random_bytes(nlb * c.L());
    c.before_command();
    c.d().write_lbas(lba, nlb, data.data());
    c.d().flush();
    std::vector<uint8_t> back(data.size());
    c.d().read_lbas(lba, nlb, back.data());
    expect(back == data, "a Read does not give what the Write wrote");
    c.landed(lba, data, "NVM Write");
    const uint64_t r = c.lba(kReadAt);
    std::vector<uint8_t> got(c.L());
    c.d().read_lbas(r, 1, got.data());
    expect(got == c.stamps(r, 1), "a Read of the read area gives another block's words");
    return ok();
}

// Execute of a compute program on SLM: CRC-32C of 1 MiB.
Outcome row_exec(Ctx &c)
{
    const auto data = c.random_bytes(1 << 20);
    c.before_command();
    const uint64_t got = programs::checksum(c.d(), ChecksumAlgo::crc32c, data.data(), data.size());
    expect(got == crc32c(data.data(), data.size()), "the CRC-32C differs from the host's");
    return ok();
}

const std::map<std::string, Outcome (*)(Ctx &)> kRows{
    {"load", row_load}, {"store", row_store}, {"gather", row_gather}, {"embedding_bag", row_embedding_bag},
    {"chase", row_chase}, {"caw", row_caw}, {"nvm", row_nvm}, {"exec", row_exec}};

// Runs one row, turning what it threw into an outcome.
Outcome run_row(const std::string &row, Ctx &c)
{
    try {
        return kRows.at(row)(c);
    } catch (const Mismatch &m) {
        return fail(m.what());
    } catch (const Error &e) {
        if (e.status()) return {"refused", status_name(e.code()), e.what()};
        if (e.errnum()) return {"refused", errno_name(e.errnum()), e.what()};
        return fail(std::string("an error naming no status: ") + e.what());
    } catch (const std::exception &e) {
        return fail(std::string("unexpected exception: ") + e.what());
    }
}

// Stamps the first 64 MiB of a device (root): Writes of 256 KiB in order, so that a zoned
// namespace takes them at its write pointers.
int stamp(const std::string &path, uint32_t salt)
{
    auto dev = Device::open(path);
    const uint32_t L = dev->ns().lba_size;
    const uint64_t chunk = 256 << 10;
    for (uint64_t off = 0; off < kStampBytes; off += chunk) {
        const auto b = stamp_bytes(off, chunk, L, salt);
        dev->write_lbas(off / L, chunk / L, b.data());
    }
    dev->flush();
    return 0;
}

// Says how to call it and exits 2.
[[noreturn]] void usage()
{
    std::fprintf(stderr,
                 "usage: csd-matrix --stamp DEVICE SALT\n"
                 "       csd-matrix --way W --format F --rows R1,R2 --device PATH [--device PATH ...] [--uring]\n"
                 "                  [--front-end vendor|nvme-cs|host] [--base LBA] [--check FILE ...] [--salt N ...]\n"
                 "                  [--as-user NAME] [--bpf-dir DIR] [--zones FIRST,LBAS] [--go FILE]\n");
    std::exit(2);
}

}  // namespace

int main(int argc, char **argv)
{
    std::vector<std::string> args(argv + 1, argv + argc);
    if (args.size() == 3 && args[0] == "--stamp") {
        try {
            return stamp(args[1], static_cast<uint32_t>(std::stoul(args[2])));
        } catch (const std::exception &e) {
            std::fprintf(stderr, "csd-matrix: stamping %s: %s\n", args[1].c_str(), e.what());
            return 1;
        }
    }
    std::string way, format, rows, user, bpf_dir = ".", go;
    std::vector<std::string> devices, checks;
    std::vector<uint32_t> salts;
    OpenOptions o;
    uint64_t base = 0, fresh = 0, zone = 0;
    for (size_t i = 0; i < args.size(); i++) {
        const std::string &a = args[i];
        auto val = [&]() -> const std::string & {
            if (i + 1 >= args.size()) usage();
            return args[++i];
        };
        if (a == "--way") way = val();
        else if (a == "--format") format = val();
        else if (a == "--rows") rows = val();
        else if (a == "--device") devices.push_back(val());
        else if (a == "--check") checks.push_back(val());
        else if (a == "--salt") salts.push_back(static_cast<uint32_t>(std::stoul(val())));
        else if (a == "--uring") o.use_uring = true;
        else if (a == "--front-end") o.front_end = parse_front_end(val());
        else if (a == "--base") base = std::stoull(val());
        else if (a == "--zones") {
            const std::string &z = val();
            const size_t comma = z.find(',');
            if (comma == std::string::npos) usage();
            fresh = std::stoull(z.substr(0, comma));
            zone = std::stoull(z.substr(comma + 1));
        }
        else if (a == "--as-user") user = val();
        else if (a == "--bpf-dir") bpf_dir = val();
        else if (a == "--go") go = val();
        else usage();
    }
    if (way.empty() || format.empty() || rows.empty() || devices.empty()) usage();
    std::vector<int> fds;
    for (const auto &f : checks) {  // opened before dropping to the tenant
        const bool blockdev = f.rfind("/dev/", 0) == 0;
        const int fd = ::open(f.c_str(), O_RDONLY | (blockdev ? O_DIRECT : 0));
        if (fd < 0) {
            std::fprintf(stderr, "csd-matrix: cannot open the check file %s: %s\n", f.c_str(), std::strerror(errno));
            return 1;
        }
        fds.push_back(fd);
    }
    if (!user.empty()) {
        const passwd *pw = getpwnam(user.c_str());
        if (!pw || initgroups(pw->pw_name, pw->pw_gid) || setgid(pw->pw_gid) || setuid(pw->pw_uid)) {
            std::fprintf(stderr, "csd-matrix: cannot become %s: %s\n", user.c_str(), std::strerror(errno));
            return 1;
        }
    }
    std::vector<std::string> wanted;
    std::stringstream ss(rows);
    for (std::string r; std::getline(ss, r, ',');) {
        if (!kRows.count(r)) {
            std::fprintf(stderr, "csd-matrix: unknown row '%s'\n", r.c_str());
            return 2;
        }
        wanted.push_back(r);
    }
    auto line = [&](const std::string &row, const Outcome &r) {
        std::printf("{\"row\": %s, \"way\": %s, \"format\": %s, \"outcome\": %s, \"status\": %s, \"detail\": %s}\n",
                    js(row).c_str(), js(way).c_str(), js(format).c_str(), js(r.outcome).c_str(), js(r.status).c_str(),
                    js(r.detail).c_str());
        std::fflush(stdout);
    };
    // Open the way: one device, or a DriveSet of several.
    std::unique_ptr<Device> one;
    std::unique_ptr<DriveSet> set;
    std::vector<Drive> drives;
    try {
        if (devices.size() == 1) {
            one = Device::open(devices[0], o);
            drives.push_back({one.get(), salts.empty() ? 0 : salts[0], fds.empty() ? -1 : fds[0]});
        } else {
            set = DriveSet::open(devices, o);
            for (size_t i = 0; i < set->size(); i++) {
                drives.push_back({&set->drive(i), i < salts.size() ? salts[i] : static_cast<uint32_t>(i),
                                  i < fds.size() ? fds[i] : -1});
            }
        }
    } catch (const Error &e) {
        // the way cannot be opened at all: every row says so
        Outcome r = e.status() ? Outcome{"refused", status_name(e.code()), e.what()}
                               : e.errnum() ? Outcome{"refused", errno_name(e.errnum()), e.what()}
                                            : fail(std::string("open: ") + e.what());
        for (const auto &row : wanted) line(row, r);
        return 0;
    }
    for (const auto &row : wanted) {
        Outcome r = ok();
        for (size_t i = 0; i < drives.size(); i++) {
            Ctx c;
            c.drive = drives[i];
            c.base = base;
            c.fresh_lba = fresh;
            c.zone_lbas = zone;
            c.zoned = zone != 0;
            c.bpf_dir = bpf_dir;
            c.go = go;
            c.rng.seed(std::hash<std::string>{}(way + format + row) + i);
            Outcome one_r = run_row(row, c);
            if (drives.size() > 1 && !one_r.detail.empty()) one_r.detail = "drive " + std::to_string(i) + ": " + one_r.detail;
            if (one_r.outcome != "ok" || i == 0) r = one_r;
            if (one_r.outcome != "ok") break;
        }
        line(row, r);
    }
    return 0;
}
