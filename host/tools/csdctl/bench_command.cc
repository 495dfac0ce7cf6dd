// SPDX-License-Identifier: MIT
// bench_command.cc - csdctl bench: Execute throughput by queue depth, SLM Read, 4 KiB
// copy vs Read latency.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <future>

#include "csdctl.hpp"

namespace csdctl {
namespace {

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

}  // namespace

void add_bench_command(Cli &c)
{
    double &seconds = c.keep<double>();
    seconds = 2;
    auto *bench = c.app.add_subcommand("bench", "Execute throughput by queue depth; 4 KiB copy vs Read latency");
    bench->add_option("--seconds", seconds, "seconds per measurement")->check(CLI::PositiveNumber);
    bench->callback([&] { c.action = [&](Device &d) { return cmd_bench(d, c.o, seconds); }; });
}

}  // namespace csdctl
