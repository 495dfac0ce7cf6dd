// SPDX-License-Identifier: MIT
// device_commands.cc - csdctl info, programs, stats: what the drive is and has done.
#include <cstdio>

#include "csdctl.hpp"

namespace csdctl {
namespace {

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

}  // namespace

// After a command that ran programs: where they ran (stderr, so stdout stays the result;
// stdout flushed first, so that the two read in order also where stdout is a pipe).
void say_where(const Device &d, const Opts &o)
{
    if (o.json) return;
    std::fflush(stdout);
    std::fprintf(stderr, "ran on the %s\n", where_words(d).c_str());
}

void add_device_commands(Cli &c)
{
    c.app.add_subcommand("info", "capabilities (SLM size, compute units, limits)")
        ->callback([&] { c.action = [&](Device &d) { return cmd_info(d, c.o); }; });
    c.app.add_subcommand("programs", "the device's programs")
        ->callback([&] { c.action = [&](Device &d) { return cmd_programs(d, c.o); }; });
    c.app.add_subcommand("stats", "the statistics log")
        ->callback([&] { c.action = [&](Device &d) { return cmd_stats(d, c.o); }; });
}

}  // namespace csdctl
