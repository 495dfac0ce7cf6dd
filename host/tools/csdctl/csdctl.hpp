// SPDX-License-Identifier: MIT
// csdctl.hpp - what csdctl's files share: the global options, the command line being built
// (Cli: each area's file adds its commands to it), output and argument helpers, and a stop
// signal's handling. main.cc parses and runs; one file per area of commands.
#pragma once

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "csd/device.hpp"
#include "csd/drive_set.hpp"
#include "csd/npy.hpp"
#include "csd/store.hpp"
#include "csd_spec.h"

namespace csdctl {

using namespace csd;
using json = nlohmann::ordered_json;  // keys in the order written

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

// A command that writes to the drive, and whether it does so as given (program run --mode
// reduce writes nothing).
struct WritingCommand {
    const CLI::App *cmd;
    std::function<bool()> writes = [] { return true; };
};

// The command line as the areas' files build it: the command parsed, to run on one drive
// (action) or on several (set_action, --drives), and what main needs to know of them.
struct Cli {
    Cli(CLI::App &a, Opts &opts) : app(a), o(opts) {}
    CLI::App &app;
    Opts &o;
    std::function<int(Device &)> action;
    std::function<int(DriveSet &)> set_action;
    std::vector<WritingCommand> writers;  // the commands that write to the drive
    std::map<std::string, std::vector<std::string>> choices;  // for completion: option -> its names
    // A command whose own subcommands are the commands (run, program, btree): one is required.
    CLI::App *group(const std::string &name, const std::string &description)
    {
        CLI::App *g = app.add_subcommand(name, description);
        g->require_subcommand(1);
        return g;
    }
    // A command's arguments, living as long as the command line (CLI11 writes into them).
    template <class T> T &keep()
    {
        auto p = std::make_shared<T>();
        kept_.push_back(p);
        return *p;
    }

private:
    std::vector<std::shared_ptr<void>> kept_;
};

// Each area's commands, added in the order csdctl --help lists them.
void add_device_commands(Cli &c);   // info, programs, stats (device_commands.cc)
void add_store_commands(Cli &c);    // format, ls, stat, rm, reclaim, put, get (store_commands.cc)
void add_run_commands(Cli &c);      // run checksum|filter|reduce|gemm|gather|embedding-bag (run_commands.cc)
void add_program_commands(Cli &c);  // program load|unload|list|run|chase (program_commands.cc)
void add_btree_commands(Cli &c);    // btree build|lookup (btree_commands.cc)
void add_bench_command(Cli &c);     // bench (bench_command.cc)

// A command line that does not fit the command (exit code 2).
struct Usage : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// Throws Usage(msg).
[[noreturn]] void die(const std::string &msg);

// ---------------------------------------------------------------- stop signals (common.cc)
// SIGINT or SIGTERM while a command can stop cleanly (a put or a get, between two chunks
// of its transfer) is noted here and stops the command at its next chunk: a put then
// releases the space it reserved and stores nothing. csdctl then says so and ends by that
// signal, as it would have without cleaning up. At any other time, and at a second signal,
// csdctl ends at once (the signal's default action).
extern volatile std::sig_atomic_t g_signal;
extern std::atomic<bool> g_cancellable;

// Catches SIGINT and SIGTERM (no SA_RESTART: a blocked read of stdin returns).
void catch_stop_signals();

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

// ---------------------------------------------------------------- helpers (common.cc)
// A command-set name table (spec/csd_spec.h) as a map for CLI11's IsMember check.
std::map<std::string, uint32_t> names(const csd_name *table);
// The names a name table offers, for completion.
std::vector<std::string> choice_list(const std::map<std::string, uint32_t> &m);
// One JSON value on a line of stdout (stderr where stdout carries an object's bytes).
void print(const json &j, FILE *to = stdout);
// A progress bar on stderr for transfers of 8 MiB and more (none where it is not wanted).
Progress bar(const Opts &o, const std::string &what, uint64_t total);
// The whole of a file, or of stdin for "-".
std::vector<uint8_t> slurp(const std::string &path, const Cancellable *c = nullptr);
// A 64-bit integer argument: decimal, 0x.. hex or 0.. octal, unsigned up to 2^64-1 or
// negative down to -2^63 (kept as its two's complement); anything else is a usage error.
uint64_t parse_u64(const std::string &what, const std::string &text);
// A floating-point argument (decimal or hex).
double parse_double(const std::string &what, const std::string &text);
// Whether s ends with suffix.
bool ends_with(const std::string &s, const std::string &suffix);
// A shape as "[2,3]".
std::string shape_str(const std::vector<uint64_t> &s);
// v in hex, zero-padded to width digits.
std::string hex(uint64_t v, int width);

// ---------------------------------------------------------------- shared by areas
// How a program over an object streams (docs/store.md): a bar for objects of 8 MiB and more,
// and a stop signal stops it between two pieces (nothing stored, SLM and reserved space freed)
// (common.cc).
StreamOptions stream_options(const Opts &o, const Cancellable &c, const std::string &what, uint64_t bytes);
// After a command that ran programs: where they ran, on stderr (device_commands.cc).
void say_where(const Device &d, const Opts &o);
// Runs run(); an Invalid Program it throws is rethrown as what (a command) finding no
// program in slot, said with why: on emu: a program goes with the csdctl that loaded it
// (program_commands.cc).
int on_slot(Device &d, const std::string &what, const std::string &slot, const std::function<int()> &run);
// An object's catalog entry as JSON, and as one line (store_commands.cc).
json object_json(const ObjectInfo &i);
void print_object(const ObjectInfo &i);
// The bash completion script for this command tree (completion.cc).
std::string bash_completion(const CLI::App &app, const std::map<std::string, std::vector<std::string>> &choices);
// A command as typed: "csdctl run filter" (completion.cc).
std::string command_path(const CLI::App &a);

}  // namespace csdctl
