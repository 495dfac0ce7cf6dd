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
#include "matrix_driver.hpp"
#include "fio_rows.hpp"
#include "snia_rows.hpp"

using namespace csd;
using namespace csd_matrix;

namespace {

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
    std::vector<csd_gather_entry> es;
    const std::vector<uint8_t> want = gather_case(c, &es);
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
    const EmbeddingBagCase e = embedding_bag_case(c);
    const auto &spec = e.spec;
    const auto &idx = e.indices, &offsets = e.offsets;
    const auto &want = e.want;
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
    chase_keys(&keys, &vals);
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
                 "                  [--as-user NAME] [--bpf-dir DIR] [--zones FIRST,LBAS] [--go FILE]\n"
                 "                  [--api libcsd|snia|fio] [--fio-engine SO]\n");
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
    std::string way, format, rows, user, bpf_dir = ".", go, api = "libcsd", fio_engine;
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
        else if (a == "--api") api = val();
        else if (a == "--fio-engine") fio_engine = val();
        else usage();
    }
    if (way.empty() || format.empty() || rows.empty() || devices.empty() || (api != "libcsd" && api != "snia" && api != "fio")) usage();
    if (api != "libcsd" && (devices.size() != 1 || o.use_uring)) {
        std::fprintf(stderr, "csd-matrix: the SNIA API's and fio's ways take one --device and no --uring\n");
        return 2;
    }
    if (api == "fio" && fio_engine.empty()) {
        std::fprintf(stderr, "csd-matrix: --api fio needs --fio-engine\n");
        return 2;
    }
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
    auto ctx = [&](const Drive &d, uint32_t lba_size, const std::string &row, size_t i) {
        Ctx c;
        c.drive = d;
        c.lba_size = lba_size;
        c.base = base;
        c.fresh_lba = fresh;
        c.zone_lbas = zone;
        c.zoned = zone != 0;
        c.bpf_dir = bpf_dir;
        c.go = go;
        c.rng.seed(std::hash<std::string>{}(way + format + row) + i);
        return c;
    };
    if (api != "libcsd") {  // the SNIA API's requests (snia_rows.cc) or fio's jobs (fio_rows.cc) over the path
        if (o.front_end != FrontEnd::Auto) setenv("CSD_FRONT_END", front_end_name(o.front_end), 1);
        uint32_t lba_size = 0;
        Outcome refused;
        if (api != "snia" || snia_open(devices[0], &refused)) {  // a CSx the API refuses: the API's status
            try {  // the LBA size, from a device opened only for that
                lba_size = Device::open(devices[0], o)->ns().lba_size;
            } catch (const Error &e) {
                refused = e.status() ? Outcome{"refused", status_name(e.code()), e.what()}
                                     : e.errnum() ? Outcome{"refused", errno_name(e.errnum()), e.what()}
                                                  : fail(std::string("open: ") + e.what());
            }
        }
        for (const auto &row : wanted) {
            if (!lba_size) {  // the way cannot be opened at all: every row says so
                line(row, refused);
                continue;
            }
            Ctx c = ctx({nullptr, salts.empty() ? 0 : salts[0], fds.empty() ? -1 : fds[0]}, lba_size, row, 0);
            line(row, api == "snia" ? snia_row(row, c) : fio_row(row, c, fio_engine, devices[0]));
        }
        if (api == "snia") snia_close();
        return 0;
    }
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
            Ctx c = ctx(drives[i], drives[i].dev->ns().lba_size, row, i);
            Outcome one_r = run_row(row, c);
            if (drives.size() > 1 && !one_r.detail.empty()) one_r.detail = "drive " + std::to_string(i) + ": " + one_r.detail;
            if (one_r.outcome != "ok" || i == 0) r = one_r;
            if (one_r.outcome != "ok") break;
        }
        line(row, r);
    }
    return 0;
}
