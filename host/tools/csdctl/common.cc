// SPDX-License-Identifier: MIT
// common.cc - csdctl's helpers: stop signals, JSON lines, progress bars, files and numbers
// as arguments.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include "csdctl.hpp"

namespace csdctl {

void die(const std::string &msg) { throw Usage(msg); }

volatile std::sig_atomic_t g_signal = 0;
std::atomic<bool> g_cancellable{false};

// The handler of SIGINT and SIGTERM.
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

// A command-set name table (spec/csd_spec.h) as a map for CLI11's IsMember check.
std::map<std::string, uint32_t> names(const csd_name *table)
{
    std::map<std::string, uint32_t> m;
    for (; table->name; table++) m[table->name] = table->value;
    return m;
}

// The names a name table offers, for completion.
std::vector<std::string> choice_list(const std::map<std::string, uint32_t> &m)
{
    std::vector<std::string> v;
    for (const auto &kv : m) v.push_back(kv.first);
    return v;
}

// One JSON value on a line of stdout (stderr where stdout carries an object's bytes).
void print(const json &j, FILE *to)
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
std::vector<uint8_t> slurp(const std::string &path, const Cancellable *c)
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

// Whether s ends with suffix.
bool ends_with(const std::string &s, const std::string &suffix)
{
    return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// A shape as "[2,3]".
std::string shape_str(const std::vector<uint64_t> &s)
{
    std::string r = "[";
    for (size_t i = 0; i < s.size(); i++) r += (i ? "," : "") + std::to_string(s[i]);
    return r + "]";
}

// v in hex, zero-padded to width digits.
std::string hex(uint64_t v, int width)
{
    char buf[24];
    std::snprintf(buf, sizeof buf, "%0*llx", width, static_cast<unsigned long long>(v));
    return buf;
}


// How a program over an object streams: a bar, and a stop signal between two pieces.
StreamOptions stream_options(const Opts &o, const Cancellable &c, const std::string &what, uint64_t bytes)
{
    StreamOptions s;
    s.slm_budget = o.slm_budget;
    s.progress = c.wrap(bar(o, what, bytes), "nothing stored, its SLM and reserved space freed");
    return s;
}

}  // namespace csdctl
