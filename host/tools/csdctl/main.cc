// SPDX-License-Identifier: MIT
// csdctl - the nvme-csd command line: device facts, the object store, programs, bench.
// Arguments are parsed by CLI11 and JSON is written by nlohmann::json (Debian packages);
// parameter names (filter ops, field types, reduce ops, checksum algos) come from the
// command set's own name tables (spec/csd_spec.h). This file: the global options, parsing,
// opening the drive(s) and reporting failures; each area's commands in a file of its own
// (csdctl.hpp names them).
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <sstream>

#include "csd.h"
#include "csdctl.hpp"

using namespace csdctl;

namespace {

const char *kDevices = R"(device (--device, else $CSD_DEVICE, else /dev/ng0n1):
  /dev/ngXnY, /dev/nvmeXnY   a CSD (emulated or real), ioctl passthrough (--uring: io_uring)
  /dev/csdN[?slm=16M]        through csd.ko (no root needed)
  emu:FILE[?slm=64M&lba=512&cu=2&size=256M&nvme-cs=1]   the in-process device over FILE (FILE?help: its options)
                             (nvme-cs=1: with the standard front end too)
front end: --front-end vendor|nvme-cs|host|auto, else $CSD_FRONT_END, else auto (vendor where the
  drive speaks it, else the standard NVMe computational storage command sets, else host mode: the
  programs run in csdctl over the drive's bytes; host works on every drive))";

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

}  // namespace

int main(int argc, char **argv)
{
    CLI::App app{"csdctl - drive the nvme-csd computational-storage device"};
    app.footer(kDevices);
    app.require_subcommand(1);
    app.fallthrough();  // global options may also follow the command
    app.set_version_flag("--version", std::string("csdctl ") + CSD_VERSION_STRING + " (libcsd " + csd_version() + ")");
    Opts o;
    Cli c{app, o};
    c.choices["--front-end"] = {"auto", "vendor", "nvme-cs", "host"};
    if (const char *env = std::getenv("CSD_DEVICE")) o.device = env;
    auto *device_opt = app.add_option("-d,--device", o.device, "the device (see below)");
    app.add_flag("--uring", o.uring, "io_uring passthrough instead of ioctl on /dev/ngXnY");
    app.add_flag("--read-only", o.read_only, "open the device read-only: ls, stat, get, info, stats and programs "
                                             "that only read work; what would write is refused");
    std::string front_end = "auto";
    app.add_option("--front-end", front_end,
                   "command set to speak: vendor, nvme-cs (the standard one), host (host mode: programs run in "
                   "csdctl, on every drive) or auto (vendor where the drive has it, else nvme-cs, else host; also "
                   "CSD_FRONT_END)");
    app.add_flag("--json", o.json, "machine-readable output");
    app.add_flag("--bus-stats", o.bus_stats, "print the commands and bytes this run moved across the bus (stderr)");
    app.add_flag_callback("--progress", [&] { o.progress = 1; },
                          "progress for transfers of 8 MiB and more even where stderr is no terminal (lines, no \\r)");
    app.add_flag_callback("--no-progress", [&] { o.progress = 0; },
                          "no progress bars (default: a bar where stderr is a terminal)");
    app.add_option("--slm-budget", o.slm_budget,
                   "bytes of SLM a program over objects may use (default: all that is free); a larger object "
                   "streams through it in pieces (docs/store.md)");

    std::string drives;
    app.add_option("--drives", drives, "several drives as one, comma-separated (docs/drive-set.md): "
                                       "format, ls, stat, rm, put, get, run filter|reduce|gemm");
    add_device_commands(c);
    add_store_commands(c);
    add_run_commands(c);
    add_program_commands(c);
    add_btree_commands(c);
    add_bench_command(c);

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
        std::fputs(bash_completion(app, c.choices).c_str(), stdout);
        return kExitOk;
    }
    catch_stop_signals();
    try {
        OpenOptions oo;
        oo.use_uring = o.uring;
        oo.read_only = o.read_only;
        oo.front_end = parse_front_end(front_end);
        if (!drives.empty()) {
            if (!c.set_action) die("this command works on one drive: leave out --drives");
            std::vector<std::string> paths;
            std::stringstream ss(drives);
            for (std::string p; std::getline(ss, p, ',');) paths.push_back(p);
            return c.set_action(*DriveSet::open(paths, oo));
        }
        auto dev = Device::open(o.device, oo);
        // A plain drive (host mode) is any NVMe SSD, the machine's boot drive too: csdctl writes
        // to one only where the user named it, never to the default it picked.
        if (dev->where() == Where::Host && !device_opt->count() && !std::getenv("CSD_DEVICE")) {
            for (const WritingCommand &w : c.writers) {
                if (!w.cmd->parsed() || !w.writes()) continue;
                die("'" + command_path(*w.cmd) + "' writes to the drive, and " + o.device +
                    " (csdctl's default device) is a plain NVMe drive, opened in host mode: csdctl writes to "
                    "such a drive only when it is named: -d " + o.device + " (or CSD_DEVICE) if it is the one");
            }
        }
        const int rc = c.action(*dev);
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
