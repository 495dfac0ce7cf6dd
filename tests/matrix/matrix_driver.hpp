// SPDX-License-Identifier: MIT
// What the feature matrix's driver (csd_matrix.cc) shares with the rows of each API it drives
// (libcsd's C++ API there, the SNIA Computational Storage API in snia_rows.cc): the stamps the
// namespace holds, the host's reference computations, a row's outcome and the context a row
// is given.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <map>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "csd/device.hpp"
#include "csd/programs.hpp"

namespace csd_matrix {

using csd::Device;

constexpr uint64_t kStampBytes = 64ull << 20;  // the stamped part of every namespace
// Where the rows work, in bytes from the way's LBA 0 (all inside the stamped part).
constexpr uint64_t kReadAt = 1ull << 20;    // reads only: load, gather, embedding_bag, nvm
constexpr uint64_t kStoreAt = 8ull << 20;   // store
constexpr uint64_t kCawAt = 9ull << 20;     // Compare and Write (restored after)
constexpr uint64_t kNvmAt = 10ull << 20;    // NVM Write
constexpr uint64_t kTreeAt = 12ull << 20;   // the chase's B+-tree

// The f32 value of word k of absolute block lba of drive salt: a multiple of 1/4 below
// 2048, so that sums of a few thousand are exact in f32 whatever their order.
inline float stamp_word(uint64_t lba, uint64_t k, uint32_t salt)
{
    return static_cast<float>((lba * 977 + k * 13 + salt * 4099) % 8191) * 0.25f;
}

// Bytes [off, off + len) of the stamped namespace (absolute byte offsets).
inline std::vector<uint8_t> stamp_bytes(uint64_t off, uint64_t len, uint32_t lba_size, uint32_t salt)
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
inline uint32_t crc32c(const uint8_t *p, size_t n)
{
    uint32_t c = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int b = 0; b < 8; b++) c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1)));
    }
    return ~c;
}

// A JSON string literal.
inline std::string js(const std::string &s)
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
inline Outcome ok(const std::string &detail = "") { return {"ok", "", detail}; }
// A failure, in words.
inline Outcome fail(const std::string &detail) { return {"fail", "", detail}; }

// A row's check failed: its words say what differed.
struct Mismatch : std::runtime_error {
    using std::runtime_error::runtime_error;
};
// Throws Mismatch(what) unless cond.
inline void expect(bool cond, const std::string &what)
{
    if (!cond) throw Mismatch(what);
}

// The name of an errno value (ENODEV), for a refusal that carries no NVMe status.
inline std::string errno_name(int e)
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
    uint32_t lba_size = 0;   // the namespace's LBA size, as the way reports it
    Device &d() { return *drive.dev; }                        // the drive (libcsd's ways)
    uint32_t L() { return lba_size; }                         // its LBA size
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

// The gather row's entries (pieces of blocks at odd offsets, some across block boundaries)
// into *es; the bytes they gather from the stamped namespace.
inline std::vector<uint8_t> gather_case(Ctx &c, std::vector<csd_gather_entry> *es)
{
    const uint64_t first = c.lba(kReadAt), span = c.lba(256 << 10);
    std::vector<uint8_t> want;
    for (uint32_t i = 0; i < 40; i++) {
        const uint64_t lba = first + (i * 37) % span;
        const uint32_t off = (i * 101) % c.L(), len = 1 + (i * 53) % (2 * c.L());
        es->push_back({lba, off, len});
        const auto s = stamp_bytes((c.base + lba) * c.L() + off, len, c.L(), c.drive.salt);
        want.insert(want.end(), s.begin(), s.end());
    }
    return want;
}

// The embedding_bag row's case: a table of stamped rows (8 f32) at the read area, three bags
// of indices, and the sums the host computes from the stamps.
struct EmbeddingBagCase {
    csd::EmbeddingBagSpec spec;
    std::vector<int64_t> indices, offsets;
    std::vector<float> want;
};
// The embedding_bag row's case for this way.
inline EmbeddingBagCase embedding_bag_case(Ctx &c)
{
    EmbeddingBagCase e;
    auto &spec = e.spec;
    spec.table_lba = c.lba(kReadAt);
    spec.row_dim = 8;
    spec.num_rows = (256 << 10) / 32;
    spec.num_bags = 3;
    e.indices = std::vector<int64_t>{5, 2047, 5, 0, 17, 100, 101, 8000, 3};
    e.offsets = std::vector<int64_t>{0, 3, 3};
    e.want.assign(spec.num_bags * spec.row_dim, 0.0f);
    for (size_t bag = 0; bag < e.offsets.size(); bag++) {
        const size_t end = bag + 1 < e.offsets.size() ? static_cast<size_t>(e.offsets[bag + 1]) : e.indices.size();
        for (size_t i = static_cast<size_t>(e.offsets[bag]); i < end; i++) {
            const auto row = stamp_bytes((c.base + spec.table_lba) * c.L() + static_cast<uint64_t>(e.indices[i]) * 32, 32,
                                         c.L(), c.drive.salt);
            for (uint32_t k = 0; k < spec.row_dim; k++) {
                float f;
                std::memcpy(&f, row.data() + 4 * k, 4);
                e.want[bag * spec.row_dim + k] += f;
            }
        }
    }
    return e;
}

// The chase row's B+-tree: 2000 keys from 10 in steps of 3, each key's value 7 key + 1.
inline void chase_keys(std::vector<uint64_t> *keys, std::vector<uint64_t> *vals)
{
    for (uint64_t k = 10; keys->size() < 2000; k += 3) {
        keys->push_back(k);
        vals->push_back(k * 7 + 1);
    }
}

}  // namespace csd_matrix
