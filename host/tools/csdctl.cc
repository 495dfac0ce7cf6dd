// SPDX-License-Identifier: MIT
// csdctl - the nvme-csd command line: device facts, the object store, programs, bench.
// Arguments are parsed by CLI11 and JSON is written by nlohmann::json (Debian packages);
// parameter names (filter ops, field types, reduce ops, checksum algos) come from the
// command set's own name tables (spec/csd_spec.h).
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <cstring>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "csd/btree.hpp"
#include "csd/device.hpp"
#include "csd/drive_set.hpp"
#include "csd/npy.hpp"
#include "csd/program.hpp"
#include "csd/programs.hpp"
#include "csd/store.hpp"
#include "csd/store_io.hpp"
#include "csd.h"
#include "csd_spec.h"

using namespace csd;
using json = nlohmann::ordered_json;  // keys in the order written

namespace {

const char *kDevices = R"(device (--device, else $CSD_DEVICE, else /dev/ng0n1):
  /dev/ngXnY, /dev/nvmeXnY   a CSD (emulated or real), ioctl passthrough (--uring: io_uring)
  /dev/csdN[?slm=16M]        through csd.ko (no root needed)
  emu:FILE[?slm=64M&lba=512&cu=2&size=256M&nvme-cs=1]   the in-process device over FILE (FILE?help: its options)
                             (nvme-cs=1: with the standard front end too)
front end: --front-end vendor|nvme-cs|auto, else $CSD_FRONT_END, else auto (vendor where the
  drive speaks it, else the standard NVMe computational storage command sets))";

// Exit codes (docs/csdctl.md and csdctl(1) list them).
enum Exit : int {
    kExitOk = 0,
    kExitStatus = 1,  // the drive completed a command with an error status
    kExitUsage = 2,   // the command line (or an object it names) does not fit the command
    kExitSystem = 3,  // any other failure: an OS error (errno), a file or device that cannot be used
};

// Global options.
struct Opts {
    std::string device = "/dev/ng0n1";
    bool uring = false;
    bool read_only = false;  // --read-only
    bool json = false;
    bool bus_stats = false;  // print the data moved across the bus to stderr at exit
    int progress = -1;       // progress bars: -1 where stderr is a terminal, 0 never, 1 always
    uint64_t slm_budget = 0;  // --slm-budget: SLM a program over objects may use (0: all that is free)
};

// A command line that does not fit the command (exit code 2).
struct Usage : std::runtime_error {
    using std::runtime_error::runtime_error;
};

[[noreturn]] void die(const std::string &msg) { throw Usage(msg); }

// ---------------------------------------------------------------- Ctrl-C
// SIGINT or SIGTERM while a command can stop cleanly (a put or a get, between two chunks
// of its transfer) is noted here and stops the command at its next chunk: a put then
// releases the space it reserved and stores nothing. csdctl then says so and ends by that
// signal, as it would have without cleaning up. At any other time, and at a second signal,
// csdctl ends at once (the signal's default action).
volatile std::sig_atomic_t g_signal = 0;
std::atomic<bool> g_cancellable{false};

extern "C" void on_stop_signal(int sig)
{
    if (!g_cancellable.load()) {
        std::signal(sig, SIG_DFL);
        std::raise(sig);
        return;
    }
    g_signal = sig;  // SA_RESETHAND: the next one is the default action
}

// Catches SIGINT and SIGTERM (no SA_RESTART: a blocked read of stdin returns).
void catch_stop_signals()
{
    struct sigaction sa {};
    sa.sa_handler = on_stop_signal;
    sa.sa_flags = SA_RESETHAND;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, nullptr);
    sigaction(SIGTERM, &sa, nullptr);
}

// A command stopped by SIGINT or SIGTERM, with what it left behind in words.
struct Interrupted : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// While it lives, a stop signal stops the command at its next check() instead of ending csdctl.
class Cancellable {
public:
    explicit Cancellable(std::string what) : what_(std::move(what)) { g_cancellable = true; }
    ~Cancellable() { g_cancellable = false; }
    Cancellable(const Cancellable &) = delete;
    Cancellable &operator=(const Cancellable &) = delete;
    // Throws Interrupted if a stop signal came; `left` says what that leaves.
    void check(const std::string &left) const
    {
        if (g_signal) throw Interrupted(what_ + " interrupted by SIG" + std::string(sigabbrev_np(g_signal)) + ": " + left);
    }
    // progress, also stopping the transfer at a stop signal (a put releases its space).
    Progress wrap(Progress progress, const std::string &left) const
    {
        return [this, progress, left](uint64_t done, uint64_t total) {
            check(left);
            if (progress) progress(done, total);
        };
    }

private:
    std::string what_;
};

// A command-set name table (spec/csd_spec.h) as a map for CLI11's IsMember check.
std::map<std::string, uint32_t> names(const csd_name *table)
{
    std::map<std::string, uint32_t> m;
    for (; table->name; table++) m[table->name] = table->value;
    return m;
}

// One JSON value on a line of stdout (stderr where stdout carries an object's bytes).
void print(const json &j, FILE *to = stdout)
{
    std::fputs((j.dump() + "\n").c_str(), to);
}

// A progress bar on stderr for transfers of 8 MiB and more (total: kUnknownSize for a
// source of unknown size, which the store then reports as total 0): redrawn in place (\r)
// on a terminal; where stderr is not one (a log, a pipe) only with --progress, and then as
// whole lines at each quarter (each 256 MiB where the total is unknown), so no \r reaches a log.
Progress bar(const Opts &o, const std::string &what, uint64_t total)
{
    const bool tty = isatty(STDERR_FILENO);
    if (total < (8u << 20) || o.progress == 0 || (o.progress < 0 && !tty)) return {};
    auto start = std::make_shared<std::chrono::steady_clock::time_point>(std::chrono::steady_clock::now());
    auto quarter = std::make_shared<uint64_t>(0);  // lines printed so far (not a terminal)
    return [what, start, tty, quarter](uint64_t done, uint64_t all) {
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - *start).count();
        const double rate = s > 0 ? done / s / 1048576.0 : 0.0;
        if (all == 0) {  // the size is not known before the end
            if (tty) {
                std::fprintf(stderr, "\r%s %.1f MiB %.1f MiB/s", what.c_str(), done / 1048576.0, rate);
            } else if (done >= (*quarter + 1) << 28) {
                *quarter = done >> 28;
                std::fprintf(stderr, "%s: %.1f MiB (%.1f MiB/s)\n", what.c_str(), done / 1048576.0, rate);
            }
            return;
        }
        const int pct = static_cast<int>(100 * done / all);
        if (!tty) {
            if (pct < 25 * static_cast<int>(*quarter + 1) && done != all) return;
            *quarter = pct / 25;
            std::fprintf(stderr, "%s: %3d%% (%.1f of %.1f MiB, %.1f MiB/s)\n", what.c_str(), pct, done / 1048576.0,
                         all / 1048576.0, rate);
            return;
        }
        const int width = 30, fill = static_cast<int>(width * done / all);
        std::fprintf(stderr, "\r%s [%.*s%*s] %3d%% %.1f MiB/s", what.c_str(), fill, "##############################",
                     width - fill, "", pct, rate);
        if (done == all) std::fputc('\n', stderr);
    };
}

// The whole of a file, or of stdin for "-".
std::vector<uint8_t> slurp(const std::string &path, const Cancellable *c = nullptr)
{
    if (path == "-") {
        std::vector<uint8_t> v;
        uint8_t buf[1 << 16];
        for (size_t n; (n = std::fread(buf, 1, sizeof buf, stdin)) > 0;) {
            v.insert(v.end(), buf, buf + n);
            if (c) c->check("nothing stored");
        }
        if (c) c->check("nothing stored");  // a stop signal ends a blocked read (EINTR)
        if (std::ferror(stdin)) throw Error("cannot read stdin", errno);
        return v;
    }
    std::ifstream f(path, std::ios::binary);
    if (!f) throw Error("cannot read " + path, errno);
    return std::vector<uint8_t>((std::istreambuf_iterator<char>(f)), {});
}

// A 64-bit integer argument: decimal, 0x.. hex or 0.. octal, unsigned up to 2^64-1 or
// negative down to -2^63 (kept as its two's complement); anything else is a usage error.
uint64_t parse_u64(const std::string &what, const std::string &text)
{
    const bool negative = !text.empty() && text[0] == '-';
    errno = 0;
    char *end = nullptr;
    const uint64_t v = negative ? static_cast<uint64_t>(std::strtoll(text.c_str(), &end, 0))
                                : std::strtoull(text.c_str(), &end, 0);
    if (text.empty() || *end || errno == ERANGE || (!negative && text.find('-') != std::string::npos)) {
        die(what + ": '" + text + "' is not a 64-bit integer");
    }
    return v;
}

// A floating-point argument (decimal or hex).
double parse_double(const std::string &what, const std::string &text)
{
    char *end = nullptr;
    const double v = std::strtod(text.c_str(), &end);
    if (text.empty() || *end) die(what + ": '" + text + "' is not a number");
    return v;
}

bool ends_with(const std::string &s, const std::string &suffix)
{
    return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string shape_str(const std::vector<uint64_t> &s)
{
    std::string r = "[";
    for (size_t i = 0; i < s.size(); i++) r += (i ? "," : "") + std::to_string(s[i]);
    return r + "]";
}

std::string hex(uint64_t v, int width)
{
    char buf[24];
    std::snprintf(buf, sizeof buf, "%0*llx", width, static_cast<unsigned long long>(v));
    return buf;
}

// ---------------------------------------------------------------- device facts
// The command sets the drive speaks, as "vendor, nvme-cs (memory namespace 2, compute namespace 3)".
std::string spoken_front_ends(const Device &d)
{
    std::string s = d.speaks_vendor() ? "vendor" : "";
    if (d.speaks_nvme_cs()) {
        s += std::string(s.empty() ? "" : ", ") + "nvme-cs (memory namespace " + std::to_string(d.memory_nsid()) +
             ", compute namespace " + std::to_string(d.compute_nsid()) + ")";
    }
    return s;
}

// "device-defined", "downloaded" or "operator plug-in".
const char *program_kind(uint8_t type)
{
    return type == CSD_PROGRAM_DOWNLOADED ? "downloaded" : type == CSD_PROGRAM_PLUGIN ? "operator plug-in" : "device-defined";
}

// Where programs run, in words.
std::string where_words(const Device &d)
{
    return d.where() == Where::Host ? "host (host mode: the drive does not compute; the device core runs in csdctl "
                                      "over the bytes read from the drive)"
                                    : "device (offload)";
}

int cmd_info(Device &d, const Opts &o)
{
    const auto &c = d.caps();
    if (o.json) {
        json speaks = json::array();
        if (d.speaks_vendor()) speaks.push_back("vendor");
        if (d.speaks_nvme_cs()) speaks.push_back("nvme-cs");
        json sources = json::object();
        for (const auto &[field, from] : c.sources) sources[field] = cap_source_name(from);
        json progs = json::array();
        for (const auto &p : c.programs) {
            progs.push_back({{"id", p.id}, {"name", p.name}, {"kind", program_kind(p.type)}, {"runs_on", where_name(d.where())}});
        }
        print({{"transport", d.transport().name()}, {"front_end", front_end_name(d.front_end())}, {"speaks", speaks},
               {"computational_storage", d.speaks()}, {"programs_run_on", where_name(d.where())},
               {"memory_nsid", d.memory_nsid()}, {"compute_nsid", d.compute_nsid()}, {"slm_size", c.slm_size},
               {"compute_units", c.compute_units}, {"max_desc_len", c.max_desc_len}, {"max_ranges", c.max_ranges},
               {"programs", c.programs.size()}, {"program_list", progs}, {"sources", sources},
               {"statistics", d.speaks_vendor() || d.where() == Where::Host ? "available" : "unavailable (no C1h)"},
               {"lba_size", d.ns().lba_size}, {"lba_count", d.ns().lba_count}});
    } else {
        const std::string spoken = spoken_front_ends(d);
        std::printf("transport      %s\ndrive speaks   %s%s\nfront end      %s\nprograms run   on the %s\n"
                    "SLM            %llu bytes (%.0f MiB, %s)\ncompute units  %u (%s)\n"
                    "max_desc_len   %u\nmax_ranges     %u\nstatistics     %s\nnamespace      %llu LBAs of %u bytes\n",
                    d.transport().name(), d.speaks(), spoken.empty() ? " (a plain NVMe drive)" : (" (" + spoken + ")").c_str(),
                    front_end_name(d.front_end()), where_words(d).c_str(), static_cast<unsigned long long>(c.slm_size),
                    c.slm_size / 1048576.0, cap_source_name(c.source("slm_size")), c.compute_units,
                    cap_source_name(c.source("compute_units")), c.max_desc_len, c.max_ranges,
                    d.where() == Where::Host ? "available (C1h of csdctl's own device core: what ran on the host)"
                    : d.speaks_vendor()      ? "available (C1h)"
                                             : "unavailable (the drive has no statistics log C1h)",
                    static_cast<unsigned long long>(d.ns().lba_count), d.ns().lba_size);
        std::printf("programs       %zu (list: %s)\n", c.programs.size(), cap_source_name(c.source("programs")));
        for (const auto &p : c.programs) {
            std::printf("  %04xh  %-16s %-16s runs on the %s\n", p.id, p.name.c_str(), program_kind(p.type),
                        where_name(d.where()));
        }
    }
    return 0;
}

// After a command that ran programs: where they ran (stderr, so stdout stays the result;
// stdout flushed first, so that the two read in order also where stdout is a pipe).
void say_where(const Device &d, const Opts &o)
{
    if (o.json) return;
    std::fflush(stdout);
    std::fprintf(stderr, "ran on the %s\n", where_words(d).c_str());
}

int cmd_programs(Device &d, const Opts &o)
{
    json list = json::array();
    for (const auto &p : d.caps().programs) {
        if (o.json) list.push_back({{"id", p.id}, {"name", p.name}, {"type", p.type}});
        else std::printf("%04xh  %-16s %s\n", p.id, p.name.c_str(),
                         p.type == CSD_PROGRAM_DOWNLOADED ? "downloaded"
                         : p.type == CSD_PROGRAM_PLUGIN   ? "operator plug-in"
                                                          : "device-defined");
    }
    if (o.json) print(list);
    return 0;
}

int cmd_stats(Device &d, const Opts &o)
{
    const Statistics s = d.stats();
    if (!s.available) {  // unknown, not zero
        if (o.json) print({{"available", false}});
        else std::printf("statistics unavailable: the drive speaks only the standard, which has no statistics log (C1h)\n");
        return 0;
    }
    const auto &values = s.counters;  // every counter, in csd_stat_names order
    json j = json::object();
    for (int i = 0; i < CSD_STAT_COUNT; i++) {
        if (o.json) j[csd_stat_names[i]] = values[i];
        else std::printf("%-24s %llu\n", csd_stat_names[i], static_cast<unsigned long long>(values[i]));
    }
    for (const auto &p : d.caps().programs) {
        const uint64_t n = s.per_program[p.id & 0xFF];
        if (o.json) j["exec_" + p.name] = n;
        else if (n) std::printf("exec %-19s %llu\n", p.name.c_str(), static_cast<unsigned long long>(n));
    }
    if (o.json) print(j);
    return 0;
}

// ---------------------------------------------------------------- the object store
json object_json(const ObjectInfo &i)
{
    return {{"name", i.name}, {"bytes", i.bytes}, {"dtype", i.dtype}, {"shape", i.shape},
            {"crc32c", hex(i.crc32c, 8)}, {"generation", i.generation}};
}

void print_object(const ObjectInfo &i)
{
    std::printf("%-24s %12llu  %-6s %-16s crc32c %08x\n", i.name.c_str(), static_cast<unsigned long long>(i.bytes),
                i.is_tensor() ? i.dtype.c_str() : "blob", i.is_tensor() ? shape_str(i.shape).c_str() : "", i.crc32c);
}

int cmd_format(Device &d, const Opts &o, bool force)
{
    ObjectStore::format(d, force);
    const uint64_t free_bytes = ObjectStore(d).free_bytes();
    if (o.json) print({{"formatted", true}, {"free_bytes", free_bytes}});
    else std::printf("formatted: %llu bytes for objects\n", static_cast<unsigned long long>(free_bytes));
    return 0;
}

// A reservation's writer ("host:pid"), and whether it still runs: on this host, its process
// is alive; on another, unknown.
struct Writer {
    std::string host;
    long pid = 0;
    const char *state = "unknown";  // "running", "gone" or "unknown" (another host)
};

// The writer a reservation names ("host:pid") and whether it still runs.
Writer writer_of(const Reservation &r)
{
    Writer w;
    const size_t colon = r.owner.rfind(':');
    w.host = r.owner.substr(0, colon);
    if (colon != std::string::npos) w.pid = std::strtol(r.owner.c_str() + colon + 1, nullptr, 10);
    char me[256] = "";
    gethostname(me, sizeof me - 1);
    if (w.host == me && w.pid > 0) w.state = kill(static_cast<pid_t>(w.pid), 0) == 0 || errno == EPERM ? "running" : "gone";
    return w;
}

// A reservation as stat --json gives it: id, bytes, block, owner, host, pid, time, running.
json reservation_json(const ObjectStore &st, const Reservation &r)
{
    const Writer w = writer_of(r);
    json j = {{"id", r.id},     {"bytes", r.blocks * st.block_size()}, {"block", r.block}, {"owner", r.owner},
              {"host", w.host}, {"pid", w.pid}, {"time", r.time}};
    j["running"] = w.state == std::string("unknown") ? json(nullptr) : json(w.state == std::string("running"));
    return j;
}

// One line per reservation: its bytes, its writer and whether it runs, its age.
void print_reservations(const ObjectStore &st, const std::vector<Reservation> &rs)
{
    const uint64_t now = static_cast<uint64_t>(time(nullptr));
    for (const Reservation &r : rs) {
        const Writer w = writer_of(r);
        const std::string why = w.state == std::string("running")  ? "running: a put in progress"
                                : w.state == std::string("gone") ? "gone: its put was killed; 'csdctl reclaim' frees it"
                                                                  : "another host's writer";
        std::printf("  %llu bytes reserved by %s (%s), %llu s ago\n",
                    static_cast<unsigned long long>(r.blocks * st.block_size()), r.owner.c_str(), why.c_str(),
                    static_cast<unsigned long long>(now >= r.time ? now - r.time : 0));
    }
}

int cmd_ls(Device &d, const Opts &o)
{
    ObjectStore st(d);
    const auto v = st.list();
    if (o.json) {
        json list = json::array();
        for (const auto &i : v) list.push_back(object_json(i));
        print(list);
    } else {
        for (const auto &i : v) print_object(i);
        const auto rs = st.reservations();
        uint64_t reserved = 0;
        for (const Reservation &r : rs) reserved += r.blocks * st.block_size();
        std::printf("%zu objects, %llu bytes free", v.size(), static_cast<unsigned long long>(st.free_bytes()));
        if (!rs.empty()) {
            std::printf(", %llu bytes reserved by %zu writer%s:", static_cast<unsigned long long>(reserved), rs.size(),
                        rs.size() == 1 ? "" : "s");
        }
        std::printf("\n");
        print_reservations(st, rs);
    }
    return 0;
}

// Lists reservations older than max_age seconds (puts whose writer died) and frees them.
int cmd_reclaim(Device &d, const Opts &o, uint64_t max_age)
{
    ObjectStore st(d);
    json out = json::array();
    const uint64_t now = static_cast<uint64_t>(time(nullptr));
    for (const Reservation &r : st.reservations()) {
        if (now >= r.time && now - r.time >= max_age) {
            if (!o.json) {
                std::printf("reservation %016llx: %llu bytes at block %llu, by %s, %llu s ago\n",
                            static_cast<unsigned long long>(r.id),
                            static_cast<unsigned long long>(r.blocks * std::max<uint32_t>(4096, d.ns().lba_size)),
                            static_cast<unsigned long long>(r.block), r.owner.c_str(),
                            static_cast<unsigned long long>(now - r.time));
            }
            out.push_back({{"id", r.id}, {"block", r.block}, {"blocks", r.blocks}, {"owner", r.owner}, {"time", r.time}});
        }
    }
    const size_t n = st.reclaim(max_age);
    if (o.json) print(json{{"reclaimed", n}, {"reservations", out}});
    else std::printf("reclaimed %zu reservation(s)\n", n);
    return 0;
}

// The store as a whole (stat without a name): its objects, free space, and the space
// reserved by writers (puts in progress, or killed), each named.
int cmd_store_stat(Device &d, const Opts &o)
{
    ObjectStore st(d);
    const auto v = st.list();
    const auto rs = st.reservations();
    uint64_t object_bytes = 0, reserved = 0;
    for (const ObjectInfo &i : v) object_bytes += i.bytes;
    json list = json::array();
    for (const Reservation &r : rs) {
        reserved += r.blocks * st.block_size();
        list.push_back(reservation_json(st, r));
    }
    const uint64_t free_bytes = st.free_bytes();
    if (o.json) {
        print({{"objects", v.size()}, {"object_bytes", object_bytes}, {"free_bytes", free_bytes},
               {"reserved_bytes", reserved}, {"reservations", list}, {"generation", st.generation()},
               {"block_size", st.block_size()}});
        return 0;
    }
    std::printf("objects        %zu (%llu bytes)\nfree           %llu bytes\nreserved       %llu bytes by %zu writer%s\n"
                "generation     %llu\n",
                v.size(), static_cast<unsigned long long>(object_bytes), static_cast<unsigned long long>(free_bytes),
                static_cast<unsigned long long>(reserved), rs.size(), rs.size() == 1 ? "" : "s",
                static_cast<unsigned long long>(st.generation()));
    print_reservations(st, rs);
    return 0;
}

int cmd_stat(Device &d, const Opts &o, const std::string &name)
{
    if (name.empty()) return cmd_store_stat(d, o);
    const ObjectInfo i = ObjectStore(d).stat(name);
    if (o.json) print(object_json(i));
    else print_object(i);
    return 0;
}

// How put and get treat FILE: .npy (a typed tensor) by its name, or as --npy says
// (the only way for "-", stdin or stdout).
bool is_npy(const std::string &file, bool npy_flag) { return npy_flag || ends_with(file, ".npy"); }

// A file (or stdin, "-") as an object's contents: a .npy file as a typed tensor (its
// dtype, structured ones included, as csd/npy.hpp records it), anything else as a blob.
npy::Array read_object_file(const std::string &file, bool npy_flag, const Cancellable *c = nullptr)
{
    auto bytes = slurp(file, c);
    if (!is_npy(file, npy_flag)) return npy::Array{"", {}, std::move(bytes)};
    try {
        return npy::parse(bytes);
    } catch (const Error &e) {
        die((file == "-" ? "stdin" : file) + ": " + e.what());
    }
}

// Writes an object's bytes to a file, or to stdout for "-" (.npy for a tensor, with its
// recorded dtype).
void write_object_file(const std::string &file, const ObjectInfo &info, std::vector<uint8_t> data, bool npy_flag)
{
    if (is_npy(file, npy_flag)) {
        if (!info.is_tensor()) die("object '" + info.name + "' is a blob, not a tensor: write it to a raw file");
        try {
            data = npy::format(info.dtype, info.shape, data);
        } catch (const Error &e) {
            die("object '" + info.name + "' cannot be a .npy file (" + e.what() +
                "): write its bytes to a file not ending in .npy");
        }
    }
    if (file == "-") {
        if (std::fwrite(data.data(), 1, data.size(), stdout) != data.size() || std::fflush(stdout) != 0) {
            throw Error("cannot write stdout", errno);
        }
        return;
    }
    std::ofstream f(file, std::ios::binary);
    f.write(reinterpret_cast<const char *>(data.data()), static_cast<std::streamsize>(data.size()));
    f.close();
    if (!f) throw Error("cannot write " + file, errno ? errno : EIO);
}

// What put and get report with --json: the object's catalog entry and the file it came
// from or went to (on stderr when a get's stdout carries the object's bytes).
void print_transfer(const Opts &o, const ObjectInfo &info, const std::string &file, bool got)
{
    if (!o.json) return;
    json j = object_json(info);
    j["file"] = file;
    print(j, got && file == "-" ? stderr : stdout);
}

// Reads up to n bytes from src into buf, fewer only at its end.
size_t read_full(ObjectSource &src, uint8_t *buf, size_t n)
{
    size_t got = 0;
    for (size_t k; got < n && (k = src.read(buf + got, n - got)) > 0;) got += k;
    return got;
}

// What a .npy file's header said, and the data bytes read with it.
struct NpyStart {
    npy::Header header;
    std::vector<uint8_t> data;  // the first bytes of the data, read with the header
};

// Reads a .npy header from in (a usage error naming `label` if it is not one); a regular
// file's length must match what the header describes.
NpyStart read_npy_header(int fd, FdSource &in, const std::string &label)
{
    try {
        std::vector<uint8_t> head(12);
        head.resize(read_full(in, head.data(), head.size()));
        const size_t had = head.size();
        head.resize(std::max(npy::header_size(head.data(), head.size()), had));
        head.resize(had + read_full(in, head.data() + had, head.size() - had));
        NpyStart s{npy::parse_header(head.data(), head.size()), {}};
        s.data.assign(head.begin() + static_cast<long>(s.header.size), head.end());
        const uint64_t rest = FdSource(fd, label).size();
        if (rest != ObjectSource::kUnknownSize && rest + s.data.size() != s.header.data_bytes) {
            throw Error(".npy data is " + std::to_string(rest + s.data.size()) +
                            " bytes; its header's dtype and shape describe " + std::to_string(s.header.data_bytes),
                        EINVAL);
        }
        return s;
    } catch (const Error &e) {
        die(label + ": " + e.what());
    }
}

// A .npy file's data: the bytes read with its header, then the rest of the file, promising
// the size the header describes.
class NpyDataSource : public ObjectSource {
public:
    // start.data, then rest's bytes.
    NpyDataSource(NpyStart start, ObjectSource &rest) : s_(std::move(start)), rest_(rest) {}
    // What the header describes.
    uint64_t size() const override { return s_.header.data_bytes; }
    // The header.
    const npy::Header &header() const { return s_.header; }
    // From the bytes read with the header, then from the rest.
    uint64_t read(uint8_t *buf, uint64_t n) override
    {
        if (pos_ == s_.data.size()) return rest_.read(buf, n);
        n = std::min<uint64_t>(n, s_.data.size() - pos_);
        std::memcpy(buf, s_.data.data() + pos_, n);
        pos_ += n;
        return n;
    }

private:
    NpyStart s_;
    ObjectSource &rest_;
    size_t pos_ = 0;
};

// Streams a file (or stdin, "-") into the store a chunk at a time: a .npy file's header
// read first (its dtype and shape), then its data, which must be as long as the header says.
int cmd_put(Device &d, const Opts &o, const std::string &name, const std::string &file, bool npy_flag)
{
    const Cancellable c("put of '" + name + "'");
    const std::string label = file == "-" ? "stdin" : file;
    const int fd = file == "-" ? STDIN_FILENO : open(file.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw Error("cannot read " + file, errno);
    struct Closer {
        int fd;
        ~Closer()
        {
            if (fd != STDIN_FILENO) close(fd);
        }
    } closer{fd};
    FdSource in(fd, label);
    in.interrupted = [&c] { c.check("nothing stored"); };  // a stop signal ends a blocked read (EINTR)
    std::optional<NpyDataSource> npy;
    ObjectSource *src = &in;
    if (is_npy(file, npy_flag)) src = &npy.emplace(read_npy_header(fd, in, label), in);
    const std::string dtype = npy ? npy->header().dtype : "";
    const std::vector<uint64_t> shape = npy ? npy->header().shape : std::vector<uint64_t>{};
    ObjectStore st(d);
    c.check("nothing stored");
    st.put(name, *src, dtype, shape,
           c.wrap(bar(o, "put " + name, src->size()), "nothing stored, its reserved space released"));
    if (o.json) print_transfer(o, st.stat(name), file, false);
    return 0;
}

// Where a get writes: stdout for "-"; a new or regular file through a temporary file
// beside it (beside a symbolic link's target), renamed over it only once the object
// checked out (a failed get leaves an existing file as it was; a replaced one keeps its
// mode); anything else (a FIFO, /dev/null) opened as it is.
class OutputFile {
public:
    // Opens the destination for file.
    explicit OutputFile(const std::string &file) : file_(file)
    {
        if (file == "-") {
            fd_ = STDOUT_FILENO;
            return;
        }
        struct stat st {};
        if (stat(file.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
            fd_ = open(file.c_str(), O_WRONLY | O_CLOEXEC);
            if (fd_ < 0) throw Error("cannot write " + file, errno);
            return;
        }
        if (char *real = realpath(file.c_str(), nullptr)) {  // an existing file, or a link's target
            file_ = real;
            std::free(real);
        }
        tmp_ = file_ + ".csdctl-XXXXXX";
        fd_ = mkostemp(&tmp_[0], O_CLOEXEC);
        if (fd_ < 0) throw Error("cannot write " + file + " (a temporary file beside it)", errno);
        mode_t mode = 0;
        if (stat(file_.c_str(), &st) == 0) {
            mode = st.st_mode & 07777;
        } else {
            mode = umask(0);
            umask(mode);
            mode = 0666 & ~mode;
        }
        fchmod(fd_, mode);
    }
    ~OutputFile()
    {
        if (fd_ != STDOUT_FILENO) close(fd_);
        if (!tmp_.empty()) unlink(tmp_.c_str());  // still there: the get failed
    }
    OutputFile(const OutputFile &) = delete;
    OutputFile &operator=(const OutputFile &) = delete;
    // The descriptor to write.
    int fd() const { return fd_; }
    // Puts the written file in place (a temporary one renamed over file).
    void commit()
    {
        if (tmp_.empty()) return;
        if (rename(tmp_.c_str(), file_.c_str()) != 0) throw Error("cannot write " + file_, errno);
        tmp_.clear();
    }

private:
    std::string file_, tmp_;
    int fd_ = -1;
};

// Streams an object to a file (or stdout, "-") a chunk at a time, a .npy header first for
// a tensor written as .npy.
int cmd_get(Device &d, const Opts &o, const std::string &name, const std::string &file, bool npy_flag)
{
    const Cancellable c("get of '" + name + "'");
    ObjectStore st(d);
    const ObjectInfo info = st.stat(name);
    const bool npy = is_npy(file, npy_flag);
    auto npy_header = [&](const ObjectInfo &i) {
        if (!i.is_tensor()) die("object '" + i.name + "' is a blob, not a tensor: write it to a raw file");
        try {
            if (npy::array_bytes(npy::parse_dtype(i.dtype), i.shape) != i.bytes) {
                throw Error("its dtype and shape do not describe its " + std::to_string(i.bytes) + " bytes", EINVAL);
            }
            return npy::header(i.dtype, i.shape);
        } catch (const Error &e) {
            die("object '" + i.name + "' cannot be a .npy file (" + e.what() +
                "): write its bytes to a file not ending in .npy");
        }
    };
    if (npy) npy_header(info);  // refused before anything is written
    OutputFile out(file);
    FdSink sink(out.fd(), file == "-" ? "stdout" : file);
    sink.interrupted = [&c] { c.check("nothing written"); };
    if (npy) sink.header = npy_header;
    const ObjectInfo got =
        st.get_into(name, sink, c.wrap(bar(o, "get " + name, info.bytes), "nothing written"));
    out.commit();
    print_transfer(o, got, file, true);
    return 0;
}

// ---------------------------------------------------------------- programs on objects
// What `run embedding-bag` takes.
struct BagArgs {
    EmbeddingBagSpec spec;
    std::string dtype = "f32", mode = "sum";
    std::vector<int64_t> indices, offsets;
};

// IEEE binary16 -> the bits of the binary32 of the same value.
uint32_t f16_bits_to_f32_bits(uint16_t h)
{
    const uint32_t sign = uint32_t{h & 0x8000u} << 16, exp = (h >> 10) & 0x1F;
    uint32_t man = h & 0x3FF;
    if (exp == 0x1F) return sign | 0x7F800000 | man << 13;
    if (exp == 0) {
        if (!man) return sign;
        int e = -1;
        do {
            e++;
            man <<= 1;
        } while (!(man & 0x400));
        return sign | static_cast<uint32_t>(127 - 15 - e) << 23 | (man & 0x3FF) << 13;
    }
    return sign | (exp + 127 - 15) << 23 | man << 13;
}

int cmd_gather(Device &d, const std::vector<std::string> &pieces, const std::string &file)
{
    std::vector<csd_gather_entry> es;
    for (const std::string &p : pieces) {
        unsigned long long lba = 0;
        unsigned offset = 0, length = 0;
        char tail = 0;
        if (std::sscanf(p.c_str(), "%llu:%u:%u%c", &lba, &offset, &length, &tail) != 3) {
            throw Error("gather: '" + p + "' is not LBA:OFFSET:LENGTH", EINVAL);
        }
        es.push_back({lba, offset, length});
    }
    const std::vector<uint8_t> bytes = programs::gather(d, es);
    if (file.empty()) {
        std::fwrite(bytes.data(), 1, bytes.size(), stdout);
    } else {
        std::ofstream f(file, std::ios::binary);
        f.write(reinterpret_cast<const char *>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
        if (!f) throw Error("gather: cannot write " + file, EIO);
    }
    return 0;
}

int cmd_embedding_bag(Device &d, const Opts &o, BagArgs &a)
{
    EmbeddingBagSpec s = a.spec;
    s.dtype = static_cast<EmbDType>(names(csd_emb_dtype_names).at(a.dtype));
    s.mode = static_cast<EmbMode>(names(csd_emb_mode_names).at(a.mode));
    s.num_bags = static_cast<uint32_t>(a.offsets.size() - (s.include_last_offset ? 1 : 0));
    const std::vector<uint8_t> out = programs::embedding_bag(d, s, a.indices, a.offsets);
    // one line per bag (JSON: a list of lists), the elements as f32
    std::vector<std::vector<float>> rows(s.num_bags, std::vector<float>(s.row_dim));
    const size_t esz = s.dtype == EmbDType::f32 ? 4 : 2;
    for (uint32_t b = 0; b < s.num_bags; b++) {
        for (uint32_t i = 0; i < s.row_dim; i++) {
            const uint8_t *p = out.data() + (uint64_t{b} * s.row_dim + i) * esz;
            uint32_t bits = 0;
            if (esz == 4) {
                std::memcpy(&bits, p, 4);
            } else {
                uint16_t h;
                std::memcpy(&h, p, 2);
                bits = s.dtype == EmbDType::bf16 ? uint32_t{h} << 16 : f16_bits_to_f32_bits(h);
            }
            std::memcpy(&rows[b][i], &bits, 4);
        }
    }
    if (o.json) {
        std::cout << nlohmann::json(rows).dump() << "\n";
        return 0;
    }
    for (const auto &r : rows) {
        for (size_t i = 0; i < r.size(); i++) std::printf("%s%g", i ? " " : "", static_cast<double>(r[i]));
        std::printf("\n");
    }
    return 0;
}

// How a program over an object streams (docs/store.md): a bar for objects of 8 MiB and more,
// and a stop signal stops it between two pieces (nothing stored, SLM and reserved space freed).
StreamOptions stream_options(const Opts &o, const Cancellable &c, const std::string &what, uint64_t bytes)
{
    StreamOptions s;
    s.slm_budget = o.slm_budget;
    s.progress = c.wrap(bar(o, what, bytes), "nothing stored, its SLM and reserved space freed");
    return s;
}

int cmd_checksum(Device &d, const Opts &o, const std::string &name, const std::string &algo)
{
    ObjectStore st(d);
    const ObjectInfo info = st.stat(name);
    Cancellable c("checksum of " + name);
    const uint64_t sum = st.checksum(name, static_cast<ChecksumAlgo>(names(csd_checksum_algo_names).at(algo)),
                                     stream_options(o, c, "checksum " + name, info.bytes));
    if (o.json) print({{"object", info.name}, {"algo", algo}, {"checksum", hex(sum, 16)}, {"where", where_name(d.where())}});
    else std::printf("%s %s %s\n", algo.c_str(), info.name.c_str(), hex(sum, algo == "xxh64" ? 16 : 8).c_str());
    say_where(d, o);
    return 0;
}

// What `run filter` takes beyond its objects.
struct FilterArgs {
    uint32_t record_size = 0, field_offset = 0;
    std::string type, op, lo, hi = "0";
    bool indices = false;
};

FilterSpec filter_spec(const FilterArgs &a)
{
    FilterSpec s;
    s.record_size = a.record_size;
    s.field_offset = a.field_offset;
    s.field_type = static_cast<FieldType>(names(csd_field_type_names).at(a.type));
    s.op = static_cast<CmpOp>(names(csd_filter_op_names).at(a.op));
    s.indices = a.indices;
    if (s.field_type == FieldType::f32 || s.field_type == FieldType::f64) {
        s.lo = parse_double("--lo", a.lo);
        s.hi = parse_double("--hi", a.hi);
    } else {  // u64 values up to 2^64-1, as two's complement
        s.lo_int = static_cast<int64_t>(parse_u64("--lo", a.lo));
        s.hi_int = static_cast<int64_t>(parse_u64("--hi", a.hi));
        s.lo = static_cast<double>(s.lo_int);
        s.hi = static_cast<double>(s.hi_int);
    }
    return s;
}

int print_filter(const Opts &o, const FilterResult &r, const std::string &dst, const char *where = nullptr)
{
    if (o.json && where) print({{"matches", r.matches}, {"bytes", r.bytes}, {"where", where}});
    else if (o.json) print({{"matches", r.matches}, {"bytes", r.bytes}});
    else std::printf("%llu matching records (%llu bytes) -> object %s\n", static_cast<unsigned long long>(r.matches),
                     static_cast<unsigned long long>(r.bytes), dst.c_str());
    return 0;
}

int cmd_filter(Device &d, const Opts &o, const std::string &src, const std::string &dst, const FilterArgs &a)
{
    ObjectStore st(d);
    Cancellable c("filter of " + src);
    const FilterResult r = st.filter(src, filter_spec(a), dst, stream_options(o, c, "filter " + src, st.stat(src).bytes));
    const int rc = print_filter(o, r, dst, where_name(d.where()));
    say_where(d, o);
    return rc;
}

int cmd_reduce(Device &d, const Opts &o, const std::string &name, const std::string &op_name)
{
    const auto op = static_cast<ReduceOp>(names(csd_reduce_op_names).at(op_name));
    ObjectStore st(d);
    const ObjectInfo info = st.stat(name);
    static const std::set<std::string> dts = {"<f4", "<f8", "<i4", "<i8"};
    if (!dts.count(info.dtype)) die("reduce needs a tensor of <f4, <f8, <i4 or <i8 (object '" + info.name + "' is " + (info.dtype.empty() ? "a blob" : info.dtype) + ")");
    Cancellable c("reduce of " + name);
    const std::vector<uint64_t> bits = st.reduce(name, op, stream_options(o, c, "reduce " + name, info.bytes));
    const uint64_t rows = bits.size();
    std::vector<uint8_t> res(rows * 8);
    if (rows) std::memcpy(res.data(), bits.data(), rows * 8);
    const bool as_int = op == ReduceOp::argmax || op == ReduceOp::argmin;
    const bool int_in = info.dtype[1] == 'i' && op != ReduceOp::mean;
    json values = json::array();
    for (uint64_t r = 0; r < rows; r++) {
        if (as_int) {
            uint64_t v;
            std::memcpy(&v, &res[r * 8], 8);
            if (o.json) values.push_back(v);
            else std::printf("%llu\n", static_cast<unsigned long long>(v));
        } else if (int_in) {
            int64_t v;
            std::memcpy(&v, &res[r * 8], 8);
            if (o.json) values.push_back(v);
            else std::printf("%lld\n", static_cast<long long>(v));
        } else {
            double v;
            std::memcpy(&v, &res[r * 8], 8);
            if (o.json) values.push_back(v);
            else std::printf("%.17g\n", v);
        }
    }
    if (o.json) {
        print({{"object", info.name}, {"op", op_name}, {"rows", rows}, {"values", values}, {"where", where_name(d.where())}});
    }
    say_where(d, o);
    return 0;
}

// What `run gemm` reports: C's name and shape (and, on one drive, where it ran).
void print_gemm(const Opts &o, const std::string &an, const std::string &bn, const std::string &cn, uint64_t m,
                uint64_t n, const char *where = nullptr)
{
    json j = {{"object", cn}, {"a", an}, {"b", bn}, {"shape", {m, n}}};
    if (where) j["where"] = where;
    if (o.json) print(j);
    else std::printf("%s = %s x %s (%llux%llu)\n", cn.c_str(), an.c_str(), bn.c_str(),
                     static_cast<unsigned long long>(m), static_cast<unsigned long long>(n));
}

int cmd_gemm(Device &d, const Opts &o, const std::string &an, const std::string &bn, const std::string &cn)
{
    ObjectStore st(d);
    const ObjectInfo a = st.stat(an), b = st.stat(bn);
    if (a.dtype != "<f4" || b.dtype != "<f4" || a.shape.size() != 2 || b.shape.size() != 2 || a.shape[1] != b.shape[0]) {
        die("gemm needs 2-D <f4 tensors A (m x k) and B (k x n)");
    }
    const uint64_t m = a.shape[0], n = b.shape[1];
    Cancellable c("gemm " + cn);
    st.gemm(an, bn, cn, stream_options(o, c, "gemm " + cn, a.bytes));
    print_gemm(o, an, bn, cn, m, n, where_name(d.where()));
    say_where(d, o);
    return 0;
}

// ---------------------------------------------------------------- downloaded programs
int cmd_program_load(Device &d, const Opts &o, const std::string &file, uint32_t record_size, uint16_t slot)
{
    Program p(d, file, record_size, slot);
    p.keep();  // loaded until 'csdctl program unload'
    if (o.json) print({{"slot", p.id()}, {"name", p.name()}, {"record_size", record_size}});
    else std::printf("loaded %s into slot %04xh (records of %u bytes)\n", p.name().c_str(), p.id(), record_size);
    return 0;
}

int cmd_program_list(Device &d, const Opts &o)
{
    json list = json::array();
    for (const auto &p : d.caps().programs) {
        if (p.type != CSD_PROGRAM_DOWNLOADED) continue;
        if (o.json) list.push_back({{"slot", p.id}, {"name", p.name}});
        else std::printf("%04xh  %s\n", p.id, p.name.c_str());
    }
    if (o.json) print(list);
    return 0;
}

// What `program run` takes beyond the slot and the object.
struct ProgramRunArgs {
    std::string mode = "filter", out;
    uint32_t record_size = 0;
    std::vector<std::string> params;
};

// The program `program run` names: a slot holding a downloaded program (kept loaded), or
// an eBPF object file loaded for this run and unloaded after it.
Program program_for_run(Device &d, const std::string &target, uint32_t record_size)
{
    const bool number = !target.empty() && std::isdigit(static_cast<unsigned char>(target[0])) &&
                        target.find_first_not_of("0123456789abcdefABCDEFxX") == std::string::npos;
    if (!number) {
        if (access(target.c_str(), R_OK) != 0) die("program run: " + target + " is neither a slot nor a readable eBPF object file");
        return Program(d, target, record_size);  // unloaded when it goes
    }
    const uint64_t slot = parse_u64("slot", target);
    if (slot > 0xFFFF) die("program run: slot " + target + " is out of range (0x100..0x1FF)");
    Program prog = Program::attach(d, static_cast<uint16_t>(slot), record_size);
    prog.keep();  // stays loaded
    return prog;
}

// An error of a run on slot `target` that found no program there, said with why: on the
// in-process device (emu:) a program lives only as long as the process that loaded it.
[[noreturn]] void no_program(Device &d, const std::string &target, const Error &e)
{
    const bool emu = d.transport().name() == std::string("inproc");
    throw Error("program run: slot " + target + " holds no program" +
                    (emu ? " (on emu: the in-process device lives in the process that opened it, so a program loaded "
                           "by an earlier csdctl went with it: name the FILE.o instead of the slot to load, run and "
                           "unload it in one csdctl)"
                         : " (csdctl program list shows the loaded ones)"),
                e);
}

int run_loaded(Device &d, const Opts &o, Program &prog, ObjectStore &st, const ObjectInfo &info, const ProgramRunArgs &a,
               const std::vector<uint64_t> &params);

int cmd_program_run(Device &d, const Opts &o, const std::string &target, const std::string &name, const ProgramRunArgs &a)
{
    std::vector<uint64_t> params;
    for (const auto &p : a.params) params.push_back(parse_u64("--param", p));
    ObjectStore st(d);
    const ObjectInfo info = st.stat(name);
    if (info.bytes % a.record_size) {
        die("object '" + name + "' holds " + std::to_string(info.bytes) + " bytes, not a whole number of " +
            std::to_string(a.record_size) + "-byte records");
    }
    Program prog = program_for_run(d, target, a.record_size);
    try {
        return run_loaded(d, o, prog, st, info, a, params);
    } catch (const Error &e) {
        if (e.code() == CSD_STATUS_INVALID_PROGRAM || status_name(e.code()) == "Invalid Program Index") {
            no_program(d, target, e);
        }
        throw;
    }
}

// cmd_program_run's run of prog over object info with params, its result stored or printed.
int run_loaded(Device &d, const Opts &o, Program &prog, ObjectStore &st, const ObjectInfo &info, const ProgramRunArgs &a,
               const std::vector<uint64_t> &params)
{
    const std::string &name = info.name;
    const uint64_t count = info.bytes / a.record_size;
    const std::string out = a.out.empty() ? name + "." + a.mode : a.out;
    Cancellable c("program run over " + name);
    const StreamOptions so = stream_options(o, c, "program " + name, info.bytes);
    const unsigned long long n = count;
    if (a.mode == "reduce") {
        const uint64_t sum = st.run_program(prog, CSD_BPF_REDUCE, name, "", params, so).bytes;
        if (o.json) print({{"records", n}, {"sum", sum}});
        else std::printf("%llu\n", static_cast<unsigned long long>(sum));
    } else if (a.mode == "map") {
        st.run_program(prog, CSD_BPF_MAP, name, out, params, so);
        if (o.json) print({{"records", n}, {"object", out}});
        else std::printf("%llu values -> object %s\n", n, out.c_str());
    } else {
        const FilterResult r = st.run_program(prog, CSD_BPF_FILTER, name, out, params, so);
        if (o.json) print({{"records", n}, {"matches", r.matches}, {"bytes", r.bytes}, {"object", out}});
        else std::printf("%llu of %llu records matched (%llu bytes) -> object %s\n", static_cast<unsigned long long>(r.matches), n,
                         static_cast<unsigned long long>(r.bytes), out.c_str());
    }
    say_where(d, o);
    return 0;
}

// What `program chase` takes beyond the slot.
struct ChaseArgs {
    uint32_t record_size = 0, max_hops = CSD_BPF_MAX_HOPS;
    std::string start;
    std::vector<std::string> params;
};

int cmd_program_chase(Device &d, const Opts &o, uint16_t slot, const ChaseArgs &a)
{
    std::vector<uint64_t> params;
    for (const auto &p : a.params) params.push_back(parse_u64("--param", p));
    Program prog = Program::attach(d, slot, a.record_size);
    prog.keep();
    const ChaseResult r = prog.run_chase(parse_u64("--start", a.start), params, a.max_hops);
    if (o.json) print({{"value", r.value}, {"hops", r.hops}});
    else std::printf("value %llu (%#llx) after %u hops\n", static_cast<unsigned long long>(r.value),
                     static_cast<unsigned long long>(r.value), r.hops);
    say_where(d, o);
    return 0;
}

// What `btree build` takes.
struct BtreeArgs {
    std::string lba, pairs;
    uint64_t count = 0;
    uint32_t fanout = 31;
};

// A B+-tree (examples/bpf/btree.h) on the namespace: pairs "KEY VALUE" a line from a file
// (- for stdin), or keys 1..count with value 10 x key.
int cmd_btree_build(Device &d, const Opts &o, const BtreeArgs &a)
{
    if (a.pairs.empty() == (a.count == 0)) die("btree build: give --pairs FILE or --count N");
    std::map<uint64_t, uint64_t> pairs;
    if (!a.pairs.empty()) {
        std::ifstream f;
        if (a.pairs != "-") {
            f.open(a.pairs);
            if (!f) die("cannot read " + a.pairs);
        }
        std::istream &in = a.pairs == "-" ? std::cin : f;
        std::string k, v;
        while (in >> k >> v) pairs[parse_u64("key", k)] = parse_u64("value", v);
    } else {
        for (uint64_t k = 1; k <= a.count; k++) pairs[k] = 10 * k;
    }
    std::vector<uint64_t> keys, values;
    for (const auto &[k, v] : pairs) keys.push_back(k), values.push_back(v);
    const BtreeLayout t = btree_write(d, keys, values, parse_u64("lba", a.lba), a.fanout);
    if (o.json) print({{"root_lba", t.root_lba}, {"blocks", t.blocks}, {"depth", t.depth}, {"keys", keys.size()}});
    else std::printf("%zu keys: root at LBA %llu, %llu blocks, depth %u\n", keys.size(),
                     static_cast<unsigned long long>(t.root_lba), static_cast<unsigned long long>(t.blocks), t.depth);
    return 0;
}

int cmd_btree_lookup(Device &d, const Opts &o, uint16_t slot, const std::string &file, const std::string &lba,
                     const std::vector<std::string> &keys)
{
    if (!slot && file.empty()) die("btree lookup: give --slot SLOT or --program FILE");
    Program prog = file.empty() ? Program::attach(d, slot, kBtreeRecordSize) : Program(d, file, kBtreeRecordSize);
    if (file.empty()) prog.keep();  // a slot of the user's stays loaded; one loaded here goes
    const BtreeLayout t{parse_u64("lba", lba), 0, d.caps().max_chase_hops ? d.caps().max_chase_hops : CSD_BPF_MAX_HOPS};
    json list = json::array();
    for (const std::string &k : keys) {
        uint32_t hops = 0;
        const auto v = btree_lookup(prog, t, parse_u64("key", k), &hops);
        if (o.json) list.push_back({{"key", parse_u64("key", k)}, {"found", v.has_value()}, {"value", v.value_or(0)}, {"hops", hops}});
        else if (v) std::printf("%s %llu (%u hops)\n", k.c_str(), static_cast<unsigned long long>(*v), hops);
        else std::printf("%s absent (%u hops)\n", k.c_str(), hops);
    }
    if (o.json) print(list);
    return 0;
}

// ---------------------------------------------------------------- bench
int cmd_bench(Device &d, const Opts &o, double secs)
{
    SlmBuffer src = d.slm().alloc(4096), dst = d.slm().alloc(32 * 4096);
    using clk = std::chrono::steady_clock;
    auto throughput = [&](unsigned qd) {
        uint64_t done = 0;
        const auto end = clk::now() + std::chrono::duration<double>(secs);
        std::vector<std::future<ExecResult>> inflight;
        const auto t0 = clk::now();
        unsigned slot = 0;
        while (clk::now() < end) {
            while (inflight.size() < qd) {
                inflight.push_back(d.execute_async(CSD_PROG_COPY, {range(src), Range{dst.offset() + 4096 * (slot++ % 32), 4096}}));
            }
            inflight.front().get();
            inflight.erase(inflight.begin());
            done++;
        }
        for (auto &f : inflight) { f.get(); done++; }
        return done / std::chrono::duration<double>(clk::now() - t0).count();
    };
    auto latency = [&](auto &&op) {
        std::vector<double> us;
        const auto end = clk::now() + std::chrono::duration<double>(secs / 2);
        while (clk::now() < end) {
            const auto t0 = clk::now();
            op();
            us.push_back(std::chrono::duration<double, std::micro>(clk::now() - t0).count());
        }
        std::sort(us.begin(), us.end());
        return us[us.size() / 2];
    };
    json j = {{"transport", d.transport().name()}};
    const double sync = 1.0 / (latency([&] { d.execute(CSD_PROG_COPY, {range(src), range(dst, 4096)}); }) / 1e6);
    j["copy_4k_sync_commands_per_s"] = sync;
    if (!o.json) {
        std::printf("transport %s\n", d.transport().name());
        std::printf("Execute copy 4 KiB, synchronous:  %9.0f commands/s\n", sync);
    }
    json by_qd = json::array();
    for (unsigned qd : {1u, 8u, 32u}) {
        const double rate = throughput(qd);
        by_qd.push_back({{"queue_depth", qd}, {"commands_per_s", rate}});
        if (!o.json) std::printf("Execute copy 4 KiB, queue depth %2u: %9.0f commands/s\n", qd, rate);
    }
    j["copy_4k_by_queue_depth"] = by_qd;
    {  // 16 MiB SLM Read (or what SLM holds, if less)
        const uint64_t n = std::min<uint64_t>(16 << 20, d.caps().slm_size);
        SlmBuffer big = d.slm().alloc(n);
        std::vector<uint8_t> host(n);
        const double us = latency([&] { d.slm_read(big.offset(), host.data(), n); });
        j["slm_read"] = {{"bytes", n}, {"ms", us / 1000}, {"gb_per_s", n / us / 1000}};
        if (!o.json) {
            std::printf("SLM Read of %llu MiB: %.2f ms (%.2f GB/s)\n", static_cast<unsigned long long>(n >> 20),
                        us / 1000, n / us / 1000);
        }
    }
    std::vector<uint8_t> buf(4096);
    const uint32_t per = 4096 / d.ns().lba_size;
    const double exec_us = latency([&] { d.execute(CSD_PROG_COPY, {range(src), range(dst, 4096)}); });
    const double read_us = latency([&] { d.read_lbas(0, std::max<uint32_t>(per, 1), buf.data()); });
    j["median_latency_us"] = {{"copy_4k_execute", exec_us}, {"read_4k", read_us}};
    if (o.json) print(j);
    else std::printf("median latency: 4 KiB copy Execute %.1f us, 4 KiB Read %.1f us\n", exec_us, read_us);
    return 0;
}

// ---------------------------------------------------------------- several drives (--drives)
int set_format(DriveSet &s, const Opts &o, bool force)
{
    s.format(force);
    if (o.json) print({{"formatted", true}, {"drives", s.size()}});
    else std::printf("formatted %zu drives\n", s.size());
    return 0;
}

int set_ls(DriveSet &s, const Opts &o)
{
    const auto v = s.list();
    if (o.json) {
        json list = json::array();
        for (const auto &i : v) {
            json j = object_json(i);
            j["striped"] = s.striped(i.name);
            list.push_back(j);
        }
        print(list);
    } else {
        for (const auto &i : v) print_object(i);
        std::printf("%zu objects on %zu drives\n", v.size(), s.size());
    }
    return 0;
}

int set_put(DriveSet &s, const Opts &o, const std::string &name, const std::string &file, bool npy_flag,
            const std::string &placement)
{
    const npy::Array a = read_object_file(file, npy_flag);
    if (placement == "striped") s.put_striped(name, a.data.data(), a.data.size(), a.dtype, a.shape);
    else if (placement == "replicated") s.put_replicated(name, a.data.data(), a.data.size(), a.dtype, a.shape);
    else s.put(name, a.data.data(), a.data.size(), a.dtype, a.shape);
    if (o.json) print_transfer(o, s.stat(name), file, false);
    return 0;
}

int set_reduce(DriveSet &s, const Opts &o, const std::string &name, const std::string &op_name)
{
    const double v = s.reduce(name, static_cast<ReduceOp>(names(csd_reduce_op_names).at(op_name)));
    if (o.json) print({{"object", name}, {"op", op_name}, {"value", v}});
    else std::printf("%s %s %.17g\n", op_name.c_str(), name.c_str(), v);
    return 0;
}

// ---------------------------------------------------------------- errors, completion
// Reports a failure on stderr (with --json: as one JSON object on stdout, as nvme-cli's
// -o json does: the message, the NVMe status in words and its code, or the errno) and
// returns the exit code it gets.
int report(const Opts &o, const std::string &msg, int exit_code, const Error *e = nullptr)
{
    if (!o.json) {
        std::fprintf(stderr, "csdctl: %s\n", msg.c_str());
        return exit_code;
    }
    json j = {{"error", msg}};
    if (e && e->status()) {
        j["status"] = status_name(e->status());
        j["code"] = e->code();  // SCT << 8 | SC
        j["dnr"] = (e->status() & 0x4000) != 0;
    } else if (e && e->errnum()) {
        const char *n = strerrorname_np(e->errnum());
        j["errno"] = n ? n : std::to_string(e->errnum());
    }
    j["exit"] = exit_code;
    std::fflush(stdout);
    print(j);
    return exit_code;
}

// The exit code for a libcsd failure: an NVMe status (1), an argument it refused (EINVAL: 2),
// anything else (3).
int exit_code_of(const Error &e)
{
    if (e.status()) return kExitStatus;
    return e.errnum() == EINVAL ? kExitUsage : kExitSystem;
}

// The bash completion script for this command tree: every command's subcommands and
// options, the values of options that take names (choices, keyed "csdctl run reduce --op"
// or, for global options, "--front-end"), files elsewhere.
std::string bash_completion(const CLI::App &app, const std::map<std::string, std::vector<std::string>> &choices)
{
    std::string subs, opts, valued;
    std::function<void(const CLI::App &, const std::string &)> walk = [&](const CLI::App &a, const std::string &path) {
        std::string names, flags;
        for (const CLI::App *sub : a.get_subcommands([](const CLI::App *x) { return !x->get_name().empty(); })) {
            names += (names.empty() ? "" : " ") + sub->get_name();
        }
        for (const CLI::Option *opt : a.get_options([](const CLI::Option *x) { return !x->get_positional(); })) {
            std::vector<std::string> all;
            for (const auto &l : opt->get_lnames()) all.push_back("--" + l);
            for (const auto &sn : opt->get_snames()) all.push_back("-" + sn);
            for (const auto &n : all) {
                flags += (flags.empty() ? "" : " ") + n;
                if (opt->get_type_size_max() > 0) valued += " " + n;
            }
        }
        subs += "    [\"" + path + "\"]=\"" + names + "\"\n";
        opts += "    [\"" + path + "\"]=\"" + flags + "\"\n";
        for (const CLI::App *sub : a.get_subcommands([](const CLI::App *x) { return !x->get_name().empty(); })) {
            walk(*sub, path + " " + sub->get_name());
        }
    };
    walk(app, "csdctl");
    std::string ch;
    for (const auto &c : choices) {
        std::string v;
        for (const auto &x : c.second) v += (v.empty() ? "" : " ") + x;
        ch += "    [\"" + c.first + "\"]=\"" + v + "\"\n";
    }
    return "# bash completion for csdctl (written by `csdctl completion bash`)\n"
           "declare -gA _csdctl_subs=(\n" + subs + ")\n"
           "declare -gA _csdctl_opts=(\n" + opts + ")\n"
           "declare -gA _csdctl_choices=(\n" + ch + ")\n"
           "_csdctl_valued=\"" + valued + " \"\n"
           R"(_csdctl() {
    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]} path=csdctl w i
    for ((i = 1; i < COMP_CWORD; i++)); do
        w=${COMP_WORDS[i]}
        if [[ $_csdctl_valued == *" $w "* ]]; then ((i++)); continue; fi
        [[ -n ${_csdctl_subs["$path $w"]+x} ]] && path="$path $w"
    done
    if [[ $_csdctl_valued == *" $prev "* ]]; then
        if [[ -n ${_csdctl_choices["$path $prev"]+x} ]]; then
            COMPREPLY=($(compgen -W "${_csdctl_choices["$path $prev"]}" -- "$cur"))
        elif [[ -n ${_csdctl_choices[$prev]+x} ]]; then
            COMPREPLY=($(compgen -W "${_csdctl_choices[$prev]}" -- "$cur"))
        else
            COMPREPLY=($(compgen -f -- "$cur"))
        fi
        return
    fi
    if [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W "${_csdctl_opts[$path]} ${_csdctl_opts[csdctl]}" -- "$cur"))
    elif [[ -n ${_csdctl_subs[$path]} ]]; then
        COMPREPLY=($(compgen -W "${_csdctl_subs[$path]}" -- "$cur"))
    else
        COMPREPLY=($(compgen -f -- "$cur"))
    fi
}
complete -F _csdctl csdctl
)";
}

// A command as typed: "run filter", "put".
std::string command_path(const CLI::App &a)
{
    std::string p = a.get_name();
    for (const CLI::App *up = a.get_parent(); up && up->get_parent(); up = up->get_parent()) p = up->get_name() + " " + p;
    return "csdctl " + p;
}

// The names a name table offers, for completion.
std::vector<std::string> choice_list(const std::map<std::string, uint32_t> &m)
{
    std::vector<std::string> v;
    for (const auto &kv : m) v.push_back(kv.first);
    return v;
}

}  // namespace

int main(int argc, char **argv)
{
    CLI::App app{"csdctl - drive the nvme-csd computational-storage device"};
    app.footer(kDevices);
    app.require_subcommand(1);
    app.fallthrough();  // global options may also follow the command
    app.set_version_flag("--version", std::string("csdctl ") + CSD_VERSION_STRING + " (libcsd " + csd_version() + ")");
    Opts o;
    std::map<std::string, std::vector<std::string>> choices;  // for completion: option -> its names
    choices["--front-end"] = {"auto", "vendor", "nvme-cs"};
    if (const char *env = std::getenv("CSD_DEVICE")) o.device = env;
    auto *device_opt = app.add_option("-d,--device", o.device, "the device (see below)");
    app.add_flag("--uring", o.uring, "io_uring passthrough instead of ioctl on /dev/ngXnY");
    app.add_flag("--read-only", o.read_only, "open the device read-only: ls, stat, get, info, stats and programs "
                                             "that only read work; what would write is refused");
    std::string front_end = "auto";
    app.add_option("--front-end", front_end,
                   "command set to speak: vendor, nvme-cs (the standard one) or auto (vendor where the drive has it; "
                   "also CSD_FRONT_END)");
    app.add_flag("--json", o.json, "machine-readable output");
    app.add_flag("--bus-stats", o.bus_stats, "print the commands and bytes this run moved across the bus (stderr)");
    app.add_flag_callback("--progress", [&] { o.progress = 1; },
                          "progress for transfers of 8 MiB and more even where stderr is no terminal (lines, no \\r)");
    app.add_flag_callback("--no-progress", [&] { o.progress = 0; },
                          "no progress bars (default: a bar where stderr is a terminal)");
    app.add_option("--slm-budget", o.slm_budget,
                   "bytes of SLM a program over objects may use (default: all that is free); a larger object "
                   "streams through it in pieces (docs/store.md)");

    std::function<int(Device &)> action;
    std::vector<const CLI::App *> writers;  // the commands that write to the drive
    std::function<int(DriveSet &)> set_action;  // the same command on several drives (--drives)
    std::string drives, placement = "home";
    app.add_option("--drives", drives, "several drives as one, comma-separated (docs/drive-set.md): "
                                       "format, ls, stat, rm, put, get, run filter|reduce|gemm");
    app.add_subcommand("info", "capabilities (SLM size, compute units, limits)")
        ->callback([&] { action = [&](Device &d) { return cmd_info(d, o); }; });
    app.add_subcommand("programs", "the device's programs")
        ->callback([&] { action = [&](Device &d) { return cmd_programs(d, o); }; });
    app.add_subcommand("stats", "the statistics log")
        ->callback([&] { action = [&](Device &d) { return cmd_stats(d, o); }; });
    bool force = false;
    auto *format = app.add_subcommand("format", "create an empty object store on the namespace (refused where it "
                                                "holds a partition table, a filesystem or a store, unless --force)");
    format->add_flag("--force", force, "format over whatever the namespace holds (its data is lost)");
    writers.push_back(format);
    format->callback([&] {
        action = [&](Device &d) { return cmd_format(d, o, force); };
        set_action = [&](DriveSet &s) { return set_format(s, o, force); };
    });
    app.add_subcommand("ls", "list objects")->callback([&] {
        action = [&](Device &d) { return cmd_ls(d, o); };
        set_action = [&](DriveSet &s) { return set_ls(s, o); };
    });

    std::string name, file, other, third;
    auto *stat = app.add_subcommand("stat", "one object's catalog entry; without NAME, the store's space and "
                                            "its reservations (puts in progress or killed, and their writers)");
    stat->add_option("name", name, "object");
    stat->callback([&] {
        action = [&](Device &d) { return cmd_stat(d, o, name); };
        set_action = [&](DriveSet &s) {
            if (o.json) print(object_json(s.stat(name)));
            else print_object(s.stat(name));
            return 0;
        };
    });
    auto *rm = app.add_subcommand("rm", "remove an object");
    writers.push_back(rm);
    rm->add_option("name", name, "object")->required();
    auto removed = [&] {
        if (o.json) print({{"removed", name}});
        return 0;
    };
    rm->callback([&] {
        action = [&](Device &d) { ObjectStore(d).remove(name); return removed(); };
        set_action = [&](DriveSet &s) { s.remove(name); return removed(); };
    });
    uint64_t max_age = 3600;
    auto *reclaim = app.add_subcommand("reclaim", "free space reserved by puts whose writer died");
    writers.push_back(reclaim);
    reclaim->add_option("--older-than", max_age, "only reservations at least this many seconds old (default 3600)");
    reclaim->callback([&] { action = [&](Device &d) { return cmd_reclaim(d, o, max_age); }; });
    bool npy_flag = false;
    auto *put = app.add_subcommand("put", "store FILE (.npy: as a typed tensor; -: stdin) as object NAME");
    writers.push_back(put);
    put->add_option("name", name, "object")->required();
    put->add_option("file", file, "file to store, - for stdin")->required();
    put->add_flag("--npy", npy_flag, "FILE is a .npy file whatever its name (for -)");
    put->add_option("--placement", placement, "with --drives: home (the whole object on one drive), striped "
                                              "(rows over every drive) or replicated")
        ->check(CLI::IsMember({"home", "striped", "replicated"}));
    choices["csdctl put --placement"] = {"home", "striped", "replicated"};
    put->callback([&] {
        action = [&](Device &d) { return cmd_put(d, o, name, file, npy_flag); };
        set_action = [&](DriveSet &s) { return set_put(s, o, name, file, npy_flag, placement); };
    });
    auto *get = app.add_subcommand("get", "write object NAME to FILE (.npy for tensors; -: stdout)");
    get->add_option("name", name, "object")->required();
    get->add_option("file", file, "file to write, - for stdout")->required();
    get->add_flag("--npy", npy_flag, "write a .npy file whatever FILE's name (for -)");
    get->callback([&] {
        action = [&](Device &d) { return cmd_get(d, o, name, file, npy_flag); };
        set_action = [&](DriveSet &s) {
            const ObjectInfo info = s.stat(name);
            write_object_file(file, info, s.get(name), npy_flag);
            print_transfer(o, info, file, true);
            return 0;
        };
    });

    auto *run = app.add_subcommand("run", "run a program on stored objects");
    run->require_subcommand(1);
    std::string algo = "crc32c";
    auto *checksum = run->add_subcommand("checksum", "checksum of an object, computed in the drive");
    checksum->add_option("name", name, "object")->required();
    checksum->add_option("--algo", algo, "crc32c or xxh64")->check(CLI::IsMember(names(csd_checksum_algo_names)));
    choices["csdctl run checksum --algo"] = choice_list(names(csd_checksum_algo_names));
    checksum->callback([&] { action = [&](Device &d) { return cmd_checksum(d, o, name, algo); }; });
    FilterArgs fa;
    auto *filter = run->add_subcommand("filter", "records of SRC whose field compares true, into object DST");
    writers.push_back(filter);
    filter->add_option("src", name, "object of records")->required();
    filter->add_option("dst", other, "object to create")->required();
    filter->add_option("--record-size", fa.record_size, "bytes per record")->required();
    filter->add_option("--field-offset", fa.field_offset, "byte offset of the field")->required();
    filter->add_option("--type", fa.type, "field type")->required()->check(CLI::IsMember(names(csd_field_type_names)));
    filter->add_option("--op", fa.op, "comparison")->required()->check(CLI::IsMember(names(csd_filter_op_names)));
    choices["csdctl run filter --type"] = choice_list(names(csd_field_type_names));
    choices["csdctl run filter --op"] = choice_list(names(csd_filter_op_names));
    filter->add_option("--lo", fa.lo, "value compared with (lower bound for between; integers up to 2^64-1)")->required();
    filter->add_option("--hi", fa.hi, "upper bound for between");
    filter->add_flag("--indices", fa.indices, "write u32 record indices instead of records");
    filter->callback([&] {
        action = [&](Device &d) { return cmd_filter(d, o, name, other, fa); };
        set_action = [&](DriveSet &s) { return print_filter(o, s.filter(name, filter_spec(fa), other), other); };
    });
    std::string op;
    auto *reduce = run->add_subcommand("reduce", "one result per row of a tensor");
    reduce->add_option("name", name, "tensor object (rows x cols)")->required();
    reduce->add_option("--op", op, "reduction")->required()->check(CLI::IsMember(names(csd_reduce_op_names)));
    choices["csdctl run reduce --op"] = choice_list(names(csd_reduce_op_names));
    reduce->callback([&] {
        action = [&](Device &d) { return cmd_reduce(d, o, name, op); };
        set_action = [&](DriveSet &s) { return set_reduce(s, o, name, op); };  // of the whole striped tensor
    });
    auto *gemm = run->add_subcommand("gemm", "C = A x B for 2-D float32 tensors, stored as object C");
    writers.push_back(gemm);
    gemm->add_option("a", name, "A (m x k)")->required();
    gemm->add_option("b", other, "B (k x n)")->required();
    gemm->add_option("c", third, "object to create")->required();
    gemm->callback([&] {
        action = [&](Device &d) { return cmd_gemm(d, o, name, other, third); };
        set_action = [&](DriveSet &s) {  // A striped, B replicated
            s.gemm(name, other, third);
            const ObjectInfo c = s.stat(third);
            print_gemm(o, name, other, third, c.shape.at(0), c.shape.at(1));
            return 0;
        };
    });

    std::string cvt_op;
    float cvt_scale = 1.0f;
    int32_t cvt_zero = 0;
    auto *convert = run->add_subcommand("convert", "an object's elements converted (f32 to f16, ...) into object DST");
    writers.push_back(convert);
    convert->add_option("src", name, "tensor (or blob) object")->required();
    convert->add_option("dst", other, "object to create")->required();
    convert->add_option("--op", cvt_op, "conversion")->required()->check(CLI::IsMember(names(csd_convert_op_names)));
    choices["csdctl run convert --op"] = choice_list(names(csd_convert_op_names));
    convert->add_option("--scale", cvt_scale, "scale of f32_i8 and i8_f32 (default 1)");
    convert->add_option("--zero-point", cvt_zero, "zero point of f32_i8 and i8_f32 (default 0)");
    convert->callback([&] {
        action = [&](Device &d) {
            ObjectStore st(d);
            Cancellable c("convert of " + name);
            const uint64_t bytes = st.convert(name, static_cast<ConvertOp>(names(csd_convert_op_names).at(cvt_op)), other,
                                              cvt_scale, cvt_zero, stream_options(o, c, "convert " + name, st.stat(name).bytes));
            if (o.json) print({{"object", other}, {"bytes", bytes}, {"where", where_name(d.where())}});
            else std::printf("%llu bytes -> object %s\n", static_cast<unsigned long long>(bytes), other.c_str());
            say_where(d, o);
            return 0;
        };
    });
    std::string codec = "zstd";
    auto *decomp = run->add_subcommand("decompress", "an object of zstd or LZ4 frames decompressed into object DST");
    writers.push_back(decomp);
    decomp->add_option("src", name, "object of compressed frames")->required();
    decomp->add_option("dst", other, "object to create")->required();
    decomp->add_option("--codec", codec, "zstd or lz4")->check(CLI::IsMember(names(csd_decompress_algo_names)));
    choices["csdctl run decompress --codec"] = choice_list(names(csd_decompress_algo_names));
    decomp->callback([&] {
        action = [&](Device &d) {
            ObjectStore st(d);
            Cancellable c("decompress of " + name);
            const uint64_t bytes = st.decompress(name, static_cast<Codec>(names(csd_decompress_algo_names).at(codec)), other,
                                                 stream_options(o, c, "decompress " + name, st.stat(name).bytes));
            if (o.json) print({{"object", other}, {"bytes", bytes}, {"where", where_name(d.where())}});
            else std::printf("%llu bytes -> object %s\n", static_cast<unsigned long long>(bytes), other.c_str());
            say_where(d, o);
            return 0;
        };
    });

    std::vector<std::string> pieces;
    auto *gather = run->add_subcommand("gather", "bytes of the namespace gathered by the drive (LBA:OFFSET:LENGTH ...)");
    gather->add_option("pieces", pieces, "LBA:OFFSET:LENGTH, in output order")->required();
    gather->add_option("--out", file, "file for the gathered bytes (default: standard output)");
    gather->callback([&] { action = [&](Device &d) { return cmd_gather(d, pieces, file); }; });
    BagArgs ba;
    auto *bag = run->add_subcommand("embedding-bag", "pooled rows of a table on the namespace, computed in the drive");
    bag->add_option("--table-lba", ba.spec.table_lba, "first LBA of the table")->required();
    bag->add_option("--rows", ba.spec.num_rows, "rows in the table")->required();
    bag->add_option("--dim", ba.spec.row_dim, "elements per row")->required();
    bag->add_option("--dtype", ba.dtype, "f32, f16 or bf16")->check(CLI::IsMember(names(csd_emb_dtype_names)));
    bag->add_option("--mode", ba.mode, "sum, mean or max")->check(CLI::IsMember(names(csd_emb_mode_names)));
    bag->add_option("--indices", ba.indices, "row indices, comma-separated")->required()->delimiter(',');
    bag->add_option("--offsets", ba.offsets, "where each bag starts in the indices, comma-separated")->required()
        ->delimiter(',');
    bag->add_flag("--include-last-offset", ba.spec.include_last_offset, "the last offset ends the last bag");
    bag->callback([&] { action = [&](Device &d) { return cmd_embedding_bag(d, o, ba); }; });

    auto *program = app.add_subcommand("program", "your own programs in the drive (eBPF objects from clang)");
    program->require_subcommand(1);
    uint32_t record_size = 0;
    uint16_t slot = 0;
    auto *pload = program->add_subcommand("load", "load FILE (clang -O2 -target bpf -c) into a slot");
    pload->add_option("file", file, "eBPF object")->required()->check(CLI::ExistingFile);
    pload->add_option("--record-size", record_size, "bytes per record the program reads")->required()
        ->check(CLI::Range(1u, CSD_MAX_RECORD_SIZE));
    pload->add_option("--slot", slot, "slot 0x100..0x1FF (default: the device picks)");
    pload->callback([&] { action = [&](Device &d) { return cmd_program_load(d, o, file, record_size, slot); }; });
    auto *punload = program->add_subcommand("unload", "unload the program in SLOT");
    punload->add_option("slot", slot, "slot (e.g. 0x100)")->required();
    punload->callback([&] {
        action = [&](Device &d) {
            d.program_unload(slot);
            if (o.json) print({{"unloaded", slot}});
            return 0;
        };
    });
    program->add_subcommand("list", "the loaded programs")
        ->callback([&] { action = [&](Device &d) { return cmd_program_list(d, o); }; });
    ProgramRunArgs pr;
    std::string run_target;
    auto *prun = program->add_subcommand("run", "run the program in SLOT, or FILE loaded for this run alone, over the records of object NAME");
    writers.push_back(prun);  // --mode map and filter store their result
    prun->add_option("slot", run_target, "slot (e.g. 0x100), or an eBPF object FILE: loaded, run and unloaded")->required();
    prun->add_option("name", name, "object of records")->required();
    prun->add_option("--record-size", pr.record_size, "bytes per record (as loaded)")->required()
        ->check(CLI::Range(1u, CSD_MAX_RECORD_SIZE));
    const std::vector<std::string> record_modes{"filter", "map", "reduce"};  // chase: program chase
    prun->add_option("--mode", pr.mode, "filter (records kept), map (one u64 each) or reduce (their sum)")
        ->check(CLI::IsMember(record_modes));
    choices["csdctl program run --mode"] = record_modes;
    prun->add_option("--param", pr.params, "a u64 parameter, up to 2^64-1 (repeat, at most 8; 0x.. for hex)")->expected(0, CSD_BPF_MAX_PARAMS);
    prun->add_option("--out", pr.out, "object for the result (default NAME.MODE)");
    prun->callback([&] { action = [&](Device &d) { return cmd_program_run(d, o, run_target, name, pr); }; });
    ChaseArgs ca;
    auto *pchase = program->add_subcommand("chase", "chase blocks of the namespace with the program in SLOT (1.2)");
    pchase->add_option("slot", slot, "slot (e.g. 0x100)")->required();
    pchase->add_option("--record-size", ca.record_size, "bytes of each block the program reads (as loaded)")->required()
        ->check(CLI::Range(1u, CSD_MAX_RECORD_SIZE));
    pchase->add_option("--start", ca.start, "the first block's LBA (the program's params[0])")->required();
    pchase->add_option("--param", ca.params, "a u64 parameter, params[1..] (repeat, at most 7)")->expected(0, CSD_BPF_MAX_PARAMS - 1);
    pchase->add_option("--max-hops", ca.max_hops, "blocks it may read")->check(CLI::Range(1u, CSD_BPF_MAX_HOPS));
    pchase->callback([&] { action = [&](Device &d) { return cmd_program_chase(d, o, slot, ca); }; });

    auto *btree = app.add_subcommand("btree", "a B+-tree on the namespace, looked up in the drive (examples/bpf/btree_lookup.c)");
    btree->require_subcommand(1);
    BtreeArgs bt;
    auto *bbuild = btree->add_subcommand("build", "write a B+-tree whose root is at LBA");
    writers.push_back(bbuild);
    bbuild->add_option("lba", bt.lba, "the root's LBA (the levels below follow it)")->required();
    bbuild->add_option("--pairs", bt.pairs, "file of KEY VALUE lines (- for stdin)");
    bbuild->add_option("--count", bt.count, "or keys 1..N with value 10 x key");
    bbuild->add_option("--fanout", bt.fanout, "entries per node")->check(CLI::Range(2u, kBtreeMaxFanout));
    bbuild->callback([&] { action = [&](Device &d) { return cmd_btree_build(d, o, bt); }; });
    std::vector<std::string> bkeys;
    auto *blookup = btree->add_subcommand("lookup", "look KEYs up in the tree at LBA, one chase each");
    blookup->add_option("lba", bt.lba, "the root's LBA")->required();
    blookup->add_option("keys", bkeys, "keys")->required();
    auto *bslot = blookup->add_option("--slot", slot, "slot holding btree_lookup.o (loaded with --record-size 512)");
    blookup->add_option("--program", file, "or btree_lookup.o, loaded for the lookups")->excludes(bslot)
        ->check(CLI::ExistingFile);
    blookup->callback([&] { action = [&](Device &d) { return cmd_btree_lookup(d, o, slot, file, bt.lba, bkeys); }; });

    double seconds = 2;
    auto *bench = app.add_subcommand("bench", "Execute throughput by queue depth; 4 KiB copy vs Read latency");
    bench->add_option("--seconds", seconds, "seconds per measurement")->check(CLI::PositiveNumber);
    bench->callback([&] { action = [&](Device &d) { return cmd_bench(d, o, seconds); }; });

    auto *completion = app.add_subcommand("completion", "print the bash completion script (csdctl completion bash)");
    std::string shell;
    completion->add_option("shell", shell, "bash")->required()->check(CLI::IsMember({"bash"}));
    bool completion_wanted = false;
    completion->callback([&] { completion_wanted = true; });

    // --json decides how even a command line CLI11 refuses is reported
    for (int i = 1; i < argc && std::strcmp(argv[i], "--") != 0; i++) o.json = o.json || !std::strcmp(argv[i], "--json");
    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp &e) {
        return app.exit(e);
    } catch (const CLI::CallForAllHelp &e) {
        return app.exit(e);
    } catch (const CLI::CallForVersion &e) {
        return app.exit(e);
    } catch (const CLI::ParseError &e) {
        std::string msg = e.what();
        // A word where a command belongs: name it (CLI11 says only that one is required).
        // The deepest command given is the one whose subcommands it should have been.
        const CLI::App *at = &app;
        for (const CLI::App *sub = &app; sub;) {
            at = sub;
            auto parsed = sub->get_subcommands();
            sub = parsed.empty() ? nullptr : parsed.front();
        }
        auto rest = at->remaining();
        if (rest.empty()) rest = app.remaining();  // global options fall through to the top
        if (!rest.empty() && !at->get_subcommands([](const CLI::App *x) { return !x->get_name().empty(); }).empty() &&
            at->get_subcommands().empty() && rest.front()[0] != '-') {
            std::string cmd = at == &app ? "" : at->get_name() + " ";
            msg = "unknown command '" + cmd + rest.front() + "' (csdctl " + cmd + "--help lists them)";
        } else if (dynamic_cast<const CLI::RequiredError *>(&e) && at->get_subcommands().empty() &&
                   !at->get_subcommands([](const CLI::App *x) { return !x->get_name().empty(); }).empty()) {
            msg = std::string("a command is required (csdctl ") + (at == &app ? "" : at->get_name() + " ") +
                  "--help lists them)";
        }
        return report(o, msg, kExitUsage);
    }
    if (completion_wanted) {
        std::fputs(bash_completion(app, choices).c_str(), stdout);
        return kExitOk;
    }
    catch_stop_signals();
    try {
        OpenOptions oo;
        oo.use_uring = o.uring;
        oo.read_only = o.read_only;
        oo.front_end = parse_front_end(front_end);
        if (!drives.empty()) {
            if (!set_action) die("this command works on one drive: leave out --drives");
            std::vector<std::string> paths;
            std::stringstream ss(drives);
            for (std::string p; std::getline(ss, p, ',');) paths.push_back(p);
            return set_action(*DriveSet::open(paths, oo));
        }
        auto dev = Device::open(o.device, oo);
        // A plain drive (host mode) is any NVMe SSD, the machine's boot drive too: csdctl writes
        // to one only where the user named it, never to the default it picked.
        if (dev->where() == Where::Host && !device_opt->count() && !std::getenv("CSD_DEVICE")) {
            for (const CLI::App *w : writers) {
                if (!w->parsed() || (w == prun && pr.mode == "reduce")) continue;
                die("'" + command_path(*w) + "' writes to the drive, and " + o.device +
                    " (csdctl's default device) is a plain NVMe drive, opened in host mode: csdctl writes to "
                    "such a drive only when it is named: -d " + o.device + " (or CSD_DEVICE) if it is the one");
            }
        }
        const int rc = action(*dev);
        if (g_signal) {  // it came after the command's last chance to stop: the command completed
            std::fprintf(stderr, "csdctl: SIG%s came as the command finished; it completed\n", sigabbrev_np(g_signal));
        }
        if (o.bus_stats) {
            const BusCounters b = dev->bus();
            std::cerr << json{{"bus_commands", b.commands}, {"bus_bytes_to_device", b.bytes_to_device},
                              {"bus_bytes_from_device", b.bytes_from_device}, {"where", where_name(dev->where())}}.dump()
                      << "\n";
        }
        return rc;
    } catch (const Interrupted &e) {
        const int sig = g_signal;
        report(o, e.what(), 128 + sig);
        std::fflush(stdout);
        std::signal(sig, SIG_DFL);  // end by the signal, as csdctl would have without cleaning up
        std::raise(sig);
        return 128 + sig;
    } catch (const Usage &e) {
        return report(o, e.what(), kExitUsage);
    } catch (const Error &e) {
        return report(o, e.what(), exit_code_of(e), &e);
    } catch (const std::exception &e) {
        return report(o, e.what(), kExitSystem);
    }
}
