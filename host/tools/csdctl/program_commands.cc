// SPDX-License-Identifier: MIT
// program_commands.cc - csdctl program load|unload|list|run|chase: your own eBPF programs
// in the drive.
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>

#include "csd/program.hpp"

#include "csdctl.hpp"

namespace csdctl {
namespace {

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

// Whether a program command's target names a slot (a number), not an eBPF object file.
bool names_slot(const std::string &target)
{
    return !target.empty() && std::isdigit(static_cast<unsigned char>(target[0])) &&
           target.find_first_not_of("0123456789abcdefABCDEFxX") == std::string::npos;
}

// The program `program run` or `program chase` (cmd) names: a slot holding a downloaded
// program (kept loaded), or an eBPF object file loaded for this run and unloaded after it.
Program program_for_run(Device &d, const std::string &cmd, const std::string &target, uint32_t record_size)
{
    if (!names_slot(target)) {
        if (access(target.c_str(), R_OK) != 0) die(cmd + ": " + target + " is neither a slot nor a readable eBPF object file");
        return Program(d, target, record_size);  // unloaded when it goes
    }
    const uint64_t slot = parse_u64("slot", target);
    if (slot > 0xFFFF) die(cmd + ": slot " + target + " is out of range (0x100..0x1FF)");
    Program prog = Program::attach(d, static_cast<uint16_t>(slot), record_size);
    prog.keep();  // stays loaded
    return prog;
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
    Program prog = program_for_run(d, "program run", target, a.record_size);
    return on_slot(d, "program run", target, [&] { return run_loaded(d, o, prog, st, info, a, params); });
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
        if (o.json) print({{"records", n}, {"sum", sum}, {"where", where_name(d.where())}});
        else std::printf("%llu\n", static_cast<unsigned long long>(sum));
    } else if (a.mode == "map") {
        st.run_program(prog, CSD_BPF_MAP, name, out, params, so);
        if (o.json) print({{"records", n}, {"object", out}, {"where", where_name(d.where())}});
        else std::printf("%llu values -> object %s\n", n, out.c_str());
    } else {
        const FilterResult r = st.run_program(prog, CSD_BPF_FILTER, name, out, params, so);
        if (o.json) print({{"records", n}, {"matches", r.matches}, {"bytes", r.bytes}, {"object", out}, {"where", where_name(d.where())}});
        else std::printf("%llu of %llu records matched (%llu bytes) -> object %s\n", static_cast<unsigned long long>(r.matches), n,
                         static_cast<unsigned long long>(r.bytes), out.c_str());
    }
    say_where(d, o);
    return 0;
}

// What `program chase` takes: the slot or eBPF object file, and the chase.
struct ChaseArgs {
    uint32_t record_size = 0, max_hops = CSD_BPF_MAX_HOPS;
    std::string target, start;
    std::vector<std::string> params;
};

int cmd_program_chase(Device &d, const Opts &o, const ChaseArgs &a)
{
    std::vector<uint64_t> params;
    for (const auto &p : a.params) params.push_back(parse_u64("--param", p));
    const uint64_t start = parse_u64("--start", a.start);
    Program prog = program_for_run(d, "program chase", a.target, a.record_size);  // a FILE.o: the only way on emu:
    ChaseResult r;
    on_slot(d, "program chase", names_slot(a.target) ? hex(parse_u64("slot", a.target), 4) + "h" : a.target, [&] {
        r = prog.run_chase(start, params, a.max_hops);
        return 0;
    });
    if (o.json) print({{"value", r.value}, {"hops", r.hops}, {"where", where_name(d.where())}});
    else std::printf("value %llu (%#llx) after %u hops\n", static_cast<unsigned long long>(r.value),
                     static_cast<unsigned long long>(r.value), r.hops);
    say_where(d, o);
    return 0;
}

}  // namespace

int on_slot(Device &d, const std::string &what, const std::string &slot, const std::function<int()> &run)
{
    try {
        return run();
    } catch (const Error &e) {
        if (e.code() != CSD_STATUS_INVALID_PROGRAM && status_name(e.code()) != "Invalid Program Index") throw;
        const bool emu = d.transport().name() == std::string("inproc");
        throw Error(what + ": slot " + slot + " holds no program" +
                        (emu ? " (on emu: the in-process device lives in the process that opened it, so a program "
                               "loaded by an earlier csdctl went with it: name the FILE.o instead of the slot to load, "
                               "run and unload it in one csdctl)"
                             : " (csdctl program list shows the loaded ones)"),
                    e);
    }
}

// What the program commands take.
struct ProgramArgs {
    std::string file, name;
    uint32_t record_size = 0;
    uint16_t slot = 0;
    std::string run_target;  // program run: a slot, or an eBPF object file
    ProgramRunArgs run;
    ChaseArgs chase;
};

void add_program_commands(Cli &c)
{
    const Opts &o = c.o;
    ProgramArgs &a = c.keep<ProgramArgs>();
    auto *program = c.group("program", "your own programs in the drive (eBPF objects from clang)");
    auto *pload = program->add_subcommand("load", "load FILE (clang -O2 -target bpf -c) into a slot");
    pload->add_option("file", a.file, "eBPF object")->required()->check(CLI::ExistingFile);
    pload->add_option("--record-size", a.record_size, "bytes per record the program reads")->required()
        ->check(CLI::Range(1u, CSD_MAX_RECORD_SIZE));
    pload->add_option("--slot", a.slot, "slot 0x100..0x1FF (default: the device picks)");
    pload->callback([&] { c.action = [&](Device &d) { return cmd_program_load(d, o, a.file, a.record_size, a.slot); }; });
    auto *punload = program->add_subcommand("unload", "unload the program in SLOT");
    punload->add_option("slot", a.slot, "slot (e.g. 0x100)")->required();
    punload->callback([&] {
        c.action = [&](Device &d) {
            d.program_unload(a.slot);
            if (o.json) print({{"unloaded", a.slot}});
            return 0;
        };
    });
    program->add_subcommand("list", "the loaded programs")
        ->callback([&] { c.action = [&](Device &d) { return cmd_program_list(d, o); }; });
    ProgramRunArgs &pr = a.run;
    auto *prun = program->add_subcommand("run", "run the program in SLOT, or FILE loaded for this run alone, over the records of object NAME");
    c.writers.push_back({prun, [&pr] { return pr.mode != "reduce"; }});  // --mode map and filter store their result
    prun->add_option("slot", a.run_target, "slot (e.g. 0x100), or an eBPF object FILE: loaded, run and unloaded")->required();
    prun->add_option("name", a.name, "object of records")->required();
    prun->add_option("--record-size", pr.record_size, "bytes per record (as loaded)")->required()
        ->check(CLI::Range(1u, CSD_MAX_RECORD_SIZE));
    const std::vector<std::string> record_modes{"filter", "map", "reduce"};  // chase: program chase
    prun->add_option("--mode", pr.mode, "filter (records kept), map (one u64 each) or reduce (their sum)")
        ->check(CLI::IsMember(record_modes));
    c.choices["csdctl program run --mode"] = record_modes;
    prun->add_option("--param", pr.params, "a u64 parameter, up to 2^64-1 (repeat, at most 8; 0x.. for hex)")->expected(0, CSD_BPF_MAX_PARAMS);
    prun->add_option("--out", pr.out, "object for the result (default NAME.MODE)");
    prun->callback([&] { c.action = [&](Device &d) { return cmd_program_run(d, o, a.run_target, a.name, pr); }; });
    ChaseArgs &ca = a.chase;
    auto *pchase = program->add_subcommand("chase", "chase blocks of the namespace with the program in SLOT (1.2)");
    pchase->add_option("slot", ca.target, "slot (e.g. 0x100), or an eBPF object FILE: loaded, run and unloaded")->required();
    pchase->add_option("--record-size", ca.record_size, "bytes of each block the program reads (as loaded)")->required()
        ->check(CLI::Range(1u, CSD_MAX_RECORD_SIZE));
    pchase->add_option("--start", ca.start, "the first block's LBA (the program's params[0])")->required();
    pchase->add_option("--param", ca.params, "a u64 parameter, params[1..] (repeat, at most 7)")->expected(0, CSD_BPF_MAX_PARAMS - 1);
    pchase->add_option("--max-hops", ca.max_hops, "blocks it may read")->check(CLI::Range(1u, CSD_BPF_MAX_HOPS));
    pchase->callback([&] { c.action = [&](Device &d) { return cmd_program_chase(d, o, ca); }; });
}

}  // namespace csdctl
