// SPDX-License-Identifier: MIT
// timing_model.cc - the resource model of the drive being designed (timing_model.h) and
// its presets (csd_core.h: csd_model_*); its named parameters are rows of the option table
// (config.cc).
#include "timing_model.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "core_state.h"

namespace csd::core {

void TimingModel::configure(const csd_model_params &p, uint32_t compute_units)
{
    std::lock_guard<SpinLock> g(mu_);
    p_ = p;
    on_ = csd_model_enabled(&p);
    to_device_ = to_host_ = media_ = slm_ = Pipe{};
    units_free_at_.assign(std::max<uint32_t>(1, p.compute_units ? p.compute_units : compute_units), 0);
    compute_busy_ns_ = 0;
}

void TimingModel::idle()
{
    std::lock_guard<SpinLock> g(mu_);
    for (Pipe *p : {&to_device_, &to_host_, &media_, &slm_}) p->busy.clear(), p->floor = 0;
    std::fill(units_free_at_.begin(), units_free_at_.end(), 0);
}

// A modelled duration in whole ns, at most kMaxStageNs (about 11.6 days): a guest's absurd
// parameters (a gemm of 10^27 flops) or a rate of 10^-300 GB/s give a long time, never an
// overflow.
uint64_t TimingModel::duration_ns(double ns)
{
    constexpr double kMaxStageNs = 1e15;
    return ns > 0 ? static_cast<uint64_t>(std::ceil(std::min(ns, kMaxStageNs))) : 0;
}

uint64_t TimingModel::add_ns(uint64_t a, uint64_t b)
{
    return b >= CSD_MODEL_MAX_NS || a >= CSD_MODEL_MAX_NS - b ? CSD_MODEL_MAX_NS : a + b;
}

uint64_t TimingModel::transfer_ns(double bytes, double gbps)
{
    return gbps > 0 && bytes > 0 ? duration_ns(bytes / gbps) : 0;  // 1 GB/s = 1 byte/ns
}

uint64_t TimingModel::stage(Pipe &p, uint64_t t, uint64_t latency_ns, double bytes, double gbps)
{
    const uint64_t d = transfer_ns(bytes, gbps);
    const uint64_t ready = add_ns(t, latency_ns);
    if (!d) return ready;
    // the first gap from ready that holds d
    uint64_t start = std::max(ready, p.floor);
    auto next = p.busy.upper_bound(start);
    if (next != p.busy.begin() && std::prev(next)->second > start) start = std::prev(next)->second;
    for (; next != p.busy.end() && next->first < add_ns(start, d); ++next) start = std::max(start, next->second);
    const uint64_t end = add_ns(start, d);
    // occupy [start, end), merged with the intervals it touches
    auto at = next;  // the first interval after the gap
    uint64_t from = start;
    if (at != p.busy.begin() && std::prev(at)->second == start) {
        from = std::prev(at)->first;
        p.busy.erase(std::prev(at));
    }
    uint64_t to = end;
    if (at != p.busy.end() && at->first == end) {
        to = at->second;
        at = p.busy.erase(at);
    }
    p.busy.emplace_hint(at, from, to);
    while (p.busy.size() > kRemembered) {
        p.floor = std::max(p.floor, p.busy.begin()->second);
        p.busy.erase(p.busy.begin());
    }
    p.busy_ns += d;
    return end;
}

uint64_t TimingModel::schedule(const csd_model_work &w, uint64_t now_ns)
{
    std::lock_guard<SpinLock> g(mu_);
    if (!on_) {
        return 0;
    }
    uint64_t t = now_ns;
    // In the order a command's bytes flow: in over the link, out of the media, through
    // SLM or a compute unit, into the media, back over the link.
    if (w.to_device) t = stage(to_device_, t, 0, static_cast<double>(w.to_device), p_.link_gbps);
    if (w.media_read_op) t = stage(media_, t, p_.media_read_latency_ns, static_cast<double>(w.media_read), p_.media_read_gbps);
    if (w.compute) {
        auto unit = std::min_element(units_free_at_.begin(), units_free_at_.end());
        const uint64_t start = std::max(t, *unit);
        const double by_flops = p_.unit_gflops > 0 ? w.flops / p_.unit_gflops : 0;
        const double by_bytes = p_.unit_gbps > 0 ? static_cast<double>(w.stream_bytes) / p_.unit_gbps : 0;
        const double by_records = static_cast<double>(w.records) * static_cast<double>(p_.bpf_record_ns);
        const uint64_t run = duration_ns(std::max({by_flops, by_bytes, by_records}));
        const uint64_t slm_end = stage(slm_, start, 0, static_cast<double>(w.slm), p_.slm_gbps);  // alongside
        const uint64_t end = std::max(add_ns(start, run), slm_end);
        compute_busy_ns_ += end - start;
        *unit = end;
        t = end;
    } else if (w.slm) {
        t = stage(slm_, t, 0, static_cast<double>(w.slm), p_.slm_gbps);
    }
    if (w.media_write_op) t = stage(media_, t, p_.media_write_latency_ns, static_cast<double>(w.media_write), p_.media_write_gbps);
    if (w.to_host) t = stage(to_host_, t, 0, static_cast<double>(w.to_host), p_.link_gbps);
    return add_ns(add_ns(t, p_.link_latency_ns), p_.host_latency_ns);
}

uint64_t TimingModel::dependent_reads(uint64_t t, uint32_t n, uint64_t bytes)
{
    std::lock_guard<SpinLock> g(mu_);
    if (!on_) return t;
    for (uint32_t i = 0; i < n; i++) {
        t = stage(media_, t, p_.media_read_latency_ns, static_cast<double>(bytes), p_.media_read_gbps);
        t = add_ns(t, p_.bpf_record_ns);
    }
    return t;
}

void TimingModel::busy(uint64_t out[5]) const
{
    std::lock_guard<SpinLock> g(mu_);
    out[0] = to_device_.busy_ns;
    out[1] = to_host_.busy_ns;
    out[2] = media_.busy_ns;
    out[3] = slm_.busy_ns;
    out[4] = compute_busy_ns_;
}

}  // namespace csd::core

namespace {

// Presets: a drive of each PCIe generation. The numbers and their sources are in
// docs/timing-model.md.
struct Preset {
    const char *name;
    csd_model_params p;
};
const Preset kPresets[] = {
    // PCIe Gen3 x4 (8 GT/s, 128b/130b: 3.94 GB/s raw, ~3.5 usable), TLC NAND, 4 low-power
    // Arm cores, LPDDR4.
    {"gen3x4-4core", {3.5, 1000, 3.2, 2.0, 70000, 20000, 12.8, 4.0, 1.5, 20, 4}},
    // PCIe Gen4 x4 (16 GT/s: 7.88 GB/s raw, ~7 usable), 8 application-class Arm cores, DDR4.
    {"gen4x4-8core", {7.0, 900, 6.8, 5.0, 60000, 16000, 25.6, 16.0, 4.0, 8, 8}},
    // PCIe Gen5 x4 (32 GT/s: 15.75 GB/s raw, ~14 usable), an accelerator-class engine
    // (one unit of a few TFLOP/s), DDR5.
    {"gen5x4-accel", {14.0, 800, 13.0, 10.0, 50000, 12000, 51.2, 2000.0, 40.0, 2, 1}},
    // PCIe Gen5 x4 with low-latency NAND (SLC-class XL-FLASH / Z-NAND: 3-5 us reads, the
    // "AI SSD" class aiming at 10 M random 512 B reads/s), the same engine as gen5x4-accel.
    {"ll-nand-gen5", {14.0, 500, 13.0, 10.0, 4000, 16000, 51.2, 2000.0, 40.0, 2, 1}},
    // gen4x4-8core's drive seen across NVMe/TCP on 25 GbE: the network (3.125 GB/s raw, ~2.9
    // after Ethernet, IP, TCP and NVMe/TCP PDU headers) limits the bandwidth, and each command
    // pays a round trip through both hosts' TCP stacks and the target (25 us).
    {"nvme-tcp-gen4", {2.9, 900, 6.8, 5.0, 60000, 16000, 25.6, 16.0, 4.0, 8, 8, 25000}},
};

}  // namespace

extern "C" {

int csd_model_preset(const char *name, csd_model_params *out)
{
    for (const Preset &p : kPresets) {
        if (std::strcmp(p.name, name) == 0) {
            *out = p.p;
            return 0;
        }
    }
    return -1;
}

const char *csd_model_preset_name(unsigned i)
{
    return i < sizeof(kPresets) / sizeof(kPresets[0]) ? kPresets[i].name : nullptr;
}

uint32_t csd_model_compute_units(const csd_model_params *p, uint32_t requested)
{
    if (requested && p->compute_units && requested != p->compute_units) return 0;
    return requested ? requested : p->compute_units ? p->compute_units : 2;
}

const char *csd_model_check(const csd_model_params *p)
{
    const double rates[] = {p->link_gbps, p->media_read_gbps, p->media_write_gbps, p->slm_gbps, p->unit_gflops,
                            p->unit_gbps};
    for (double r : rates) {
        if (!std::isfinite(r) || r < 0) return "model rates must be finite and >= 0";
    }
    if (p->link_latency_ns > 1000000000ull || p->media_read_latency_ns > 1000000000ull ||
        p->media_write_latency_ns > 1000000000ull || p->bpf_record_ns > 1000000000ull ||
        p->host_latency_ns > 1000000000ull) {
        return "model latencies must be at most 1 s";
    }
    if ((p->unit_gflops > 0) != (p->unit_gbps > 0)) {
        return "unit-gflops and unit-gbps go together: a compute unit needs both speeds";
    }
    return nullptr;
}

void csd_core_set_model(csd_core *core, const csd_model_params *p)
{
    core->model.configure(*p, core->compute_units);
}

uint64_t csd_core_model_schedule(csd_core *core, const csd_model_work *w, uint64_t now_ns)
{
    return core->model.schedule(*w, now_ns);
}

void csd_core_model_idle(csd_core *core) { core->model.idle(); }

int csd_core_model_on(const csd_core *core) { return core->model.on() ? 1 : 0; }

void csd_core_model_done(csd_core *core, uint64_t finish_ns, uint64_t done_ns)
{
    if (finish_ns == 0) return;
    if (done_ns > finish_ns) {
        csd::core::count(core, CSD_STAT_MODEL_OVERRUNS);
    } else {
        csd::core::count(core, CSD_STAT_MODEL_DELAY_NS, finish_ns - done_ns);
    }
}

uint64_t csd_core_model_nvm(csd_core *core, const csd_cmd *cmd, uint32_t lba_size, uint64_t now_ns)
{
    if (!core->model.on() || cmd->opcode > 0x02 || csd_core_cs_csi(core, cmd->nsid)) return 0;
    csd_model_work w;
    csd_model_work_nvm(cmd->opcode, cmd->opcode ? (uint64_t{cmd->cdw12 & 0xFFFF} + 1) * lba_size : 0, &w);
    return core->model.schedule(w, now_ns);
}

void csd_model_work_nvm(uint8_t opcode, uint64_t bytes, csd_model_work *w)
{
    *w = csd_model_work{};
    switch (opcode) {
    case 0x00: w->media_write_op = 1; break;  // Flush: the write cache reaches the media
    case 0x01: w->to_device = w->media_write = bytes; w->media_write_op = 1; break;
    case 0x02: w->media_read = w->to_host = bytes; w->media_read_op = 1; break;
    default: break;
    }
}

void csd_model_work_op(const csd_op *op, csd_model_work *w)
{
    *w = csd_model_work{};
    switch (op->opcode) {
    case CSD_OPC_SLM_LOAD: w->media_read = w->slm = op->bytes; w->media_read_op = 1; break;
    case CSD_OPC_SLM_STORE: w->slm = w->media_write = op->bytes; w->media_write_op = 1; break;
    case CSD_OPC_SLM_WRITE: w->to_device = w->slm = op->bytes; break;
    case CSD_OPC_SLM_READ: w->slm = w->to_host = op->bytes; break;
    case CSD_OPC_EXECUTE:
    case CSD_OPC_PROGRAM_LOAD: w->to_device = op->bytes; break;
    case CSD_OPC_COMPARE_WRITE:
        w->to_device = op->bytes;
        w->media_read = w->media_write = op->bytes / 2;
        w->media_read_op = w->media_write_op = 1;
        break;
    default: break;
    }
}

}  // extern "C"
