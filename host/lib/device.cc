// SPDX-License-Identifier: MIT
// device.cc - csd::Device: detection (and the front end), log pages, chunked data
// movement, Execute, over the vendor commands or the standard ones (nvme_cs_commands).
#include "csd/device.hpp"
#include "csd/in_process.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "csd_spec.h"
#include "fork_hold.hpp"
#include "nvme_cs.h"
#include "nvme_cs_commands.hpp"
#include "synth.hpp"
#include "transports.hpp"

namespace csd {

namespace {

constexpr uint8_t kAdminGetLogPage = 0x02;
constexpr uint8_t kAdminIdentify = 0x06;
constexpr uint8_t kNvmFlush = 0x00, kNvmWrite = 0x01, kNvmRead = 0x02;
constexpr uint64_t kMaxNlb = 65536;  // NLB is a 16-bit, 0's based field

Command io(uint8_t opcode, uint32_t nsid)
{
    Command c;
    c.opcode = opcode;
    c.nsid = nsid;
    return c;
}

void set_lo_hi(uint32_t &lo, uint32_t &hi, uint64_t v)
{
    lo = static_cast<uint32_t>(v);
    hi = static_cast<uint32_t>(v >> 32);
}

// CDW12's protection information field (PRINFO, bits 29:26) for an NVM Read or Write of a
// namespace whose LBA format carries metadata: where it is the 8-byte protection
// information alone (a separate buffer), PRACT, so that the controller makes it on a Write
// and checks (guard, and the reference tag but for type 3) and strips it on a Read, as for
// the kernel's own I/O without an integrity buffer; 0 without metadata. Any other metadata
// would need a buffer libcsd does not move: EOPNOTSUPP, naming it.
uint32_t protection_info(const NamespaceInfo &ns, const char *what)
{
    constexpr uint32_t kPract = 1u << 29, kGuard = 1u << 28, kRefTag = 1u << 26;
    if (ns.metadata == 0) return 0;
    if (ns.pi_type == 0 || ns.metadata != 8 || ns.extended_lba) {
        throw Error(std::string(what) + ": namespace " + std::to_string(ns.nsid) + " carries " +
                        std::to_string(ns.metadata) + " bytes of metadata per LBA" +
                        (ns.extended_lba ? " within the LBA" : "") +
                        (ns.pi_type ? "" : " without protection information") +
                        ", which libcsd does not move (only protection information alone, made by the controller)",
                    EOPNOTSUPP);
    }
    return kPract | kGuard | (ns.pi_type == 3 ? 0 : kRefTag);
}

}  // namespace

std::vector<uint8_t> make_descriptor(uint16_t program, const std::vector<Range> &ranges, const void *params,
                                     uint32_t param_len)
{
    std::vector<csd_desc_range> rr;
    for (const Range &r : ranges) rr.push_back({r.offset, r.length});
    std::vector<uint8_t> d(csd_desc_size(static_cast<uint32_t>(ranges.size()), param_len));
    csd_desc_encode(d.data(), program, static_cast<uint16_t>(ranges.size()), rr.data(), params, param_len);
    return d;
}

const char *cap_source_name(CapSource s)
{
    switch (s) {
    case CapSource::Vendor: return "vendor log C0h";
    case CapSource::Standard: return "standard";
    case CapSource::Probe: return "probe";
    case CapSource::Host: return "host";
    default: return "default";
    }
}

const char *where_name(Where w) { return w == Where::Host ? "host" : "device"; }

// The file behind an open path: the node itself, or an emu: device's backing file.
static std::string node_of(const std::string &path)
{
    std::string p = path.rfind("emu:", 0) == 0 ? path.substr(4) : path;
    return p.substr(0, p.find('?'));
}

std::unique_ptr<Device> Device::open(const std::string &path, const OpenOptions &opts)
{
    return std::make_unique<Device>(open_transport(path, opts), opts, node_of(path));
}

Device::Device(std::unique_ptr<Transport> transport, FrontEnd front_end)
    : Device(std::move(transport), [front_end] { OpenOptions o; o.front_end = front_end; return o; }())
{
}

Device::~Device()
{
    fork_hold_remove(&slm_edge_mu_);
    fork_hold_remove(&executing_mu_);
}

Device::Device(std::unique_ptr<Transport> transport, const OpenOptions &opts, const std::string &path)
    : transport_(std::move(transport)), path_(path), read_only_(transport_->read_only())
{
    // Identify Controller: vendor-specific bytes 3072..3075 carry the signature.
    std::vector<uint8_t> id(4096);
    Command c;
    c.admin = true;
    c.opcode = kAdminIdentify;
    c.cdw10 = 1;
    c.data = id.data();
    c.data_len = 4096;
    const Completion r = transport_->submit(c);
    if (r.status != 0) {
        throw Error("Identify Controller", r.status);
    }
    const char *ignore = std::getenv("CSD_IGNORE_VENDOR");
    const bool ignore_vendor = opts.ignore_vendor || (ignore && std::string(ignore) == "1");
    speaks_vendor_ = !ignore_vendor && std::memcmp(id.data() + CSD_ID_VS_OFFSET, CSD_ID_SIGNATURE, 4) == 0;
    const nvme_cs::Namespaces cs = nvme_cs::discover(*transport_);
    memory_nsid_ = cs.memory;
    compute_nsid_ = cs.compute;
    FrontEnd front_end = opts.front_end;
    if (front_end == FrontEnd::Auto) {
        const char *env = std::getenv("CSD_FRONT_END");
        front_end = parse_front_end(env ? env : "");
    }
    if (front_end == FrontEnd::Auto) {
        front_end = speaks_vendor_ ? FrontEnd::Vendor : speaks_nvme_cs() ? FrontEnd::NvmeCs : FrontEnd::Host;
    }
    front_end_ = front_end;
    char model[41] = {};
    std::memcpy(model, id.data() + 24, 40);
    for (size_t n = std::strlen(model); n && model[n - 1] == ' '; n--) model[n - 1] = 0;  // Identify pads with spaces
    if (front_end_ == FrontEnd::NvmeCs && !speaks_nvme_cs()) {
        const bool emu_device = in_process(*transport_) != nullptr;  // an emu: device (or a wrapper of one)
        throw Error(std::string("the drive does not speak the standard computational storage command sets "
                                "(Identify CNS 1Ch reports no SLM and CP, or it has no memory and compute "
                                "namespaces; model '") +
                        model + "'): " +
                        (emu_device ? "open the in-process device with nvme-cs=on (emu:FILE?nvme-cs=on)"
                                    : "is the QEMU device started with csd.nvme-cs=on?"),
                    ENODEV);
    }
    if (front_end_ == FrontEnd::Vendor && !speaks_vendor_) {
        throw Error(std::string("the drive does not speak the vendor command set (Identify has no CSD1 signature") +
                        (ignore_vendor ? ", or CSD_IGNORE_VENDOR=1 hides it" : "") + "; model '" + model +
                        "'): open it with front end auto or host to run the programs on the host",
                    ENODEV);
    }
    if (front_end_ == FrontEnd::Host) {  // the core in this process over the plain drive
        const char *env = std::getenv("CSD_HOST_SLM");
        uint64_t slm = opts.host_slm ? opts.host_slm : 64ull << 20;
        if (!opts.host_slm && env) {
            try {
                slm = parse_size(env);
            } catch (const Error &e) {
                throw Error("CSD_HOST_SLM (host mode's SLM)", e);
            }
        }
        const unsigned hw = std::thread::hardware_concurrency();
        const uint32_t units = std::max(1u, std::min(hw ? hw : 1u, 8u));
        counts_sends_ = false;  // only what host mode sends to the drive crosses the bus
        transport_ = open_host_mode(std::move(transport_), slm, units, [this](const Command &cmd) { count(cmd); });
    }
    read_capabilities();
    allocator_.reset(caps_.slm_size);
    // abort_executes() and execute() hold the list of Executes briefly: never across fork(),
    // or a child would inherit it locked (its transports are held before, ForkLevel::device)
    fork_hold_add(&executing_mu_, ForkLevel::allocator, [this] { executing_mu_.lock(); },
                  [this](bool) { executing_mu_.unlock(); });
    // slm_write's edge runs SLM commands under its lock: held before the transports (as a
    // store's update), so that a fork() waits for it and a child never inherits it locked
    fork_hold_add(&slm_edge_mu_, ForkLevel::store, [this] { slm_edge_mu_.lock(); },
                  [this](bool) { slm_edge_mu_.unlock(); });
}

const char *Device::speaks() const
{
    return speaks_vendor_ ? "vendor" : speaks_nvme_cs() ? "standard" : "none";
}

uint8_t *Device::slm_host_pointer()
{
    InProcess *in = in_process(*transport_);
    return in ? in->slm_host_pointer() : nullptr;
}

uint64_t Device::model_clock_ns() const
{
    const InProcess *in = in_process(*transport_);
    return in ? in->model_clock_ns() : 0;
}

const uint8_t *Device::namespace_host_pointer()
{
    InProcess *in = in_process(*transport_);
    return in ? in->namespace_host_pointer() : nullptr;
}

// One command to the drive, counted on the bus (host mode counts what it sends the drive);
// `mapped`: a Read the drive runs moving no bytes (InProcess::submit_mapped_read).
Completion Device::send(const Command &cmd, InProcess *mapped)
{
    if (read_only_) refuse_if_writes(cmd, ns().nsid);  // host mode's SLM Store too
    if (counts_sends_) count(cmd);
    return mapped ? mapped->submit_mapped_read(cmd) : transport_->submit(cmd);
}

void Device::count(const Command &cmd)
{
    commands_++;
    if ((cmd.opcode & 3) == 1) to_device_ += cmd.data_len;       // bits 1:0 = 01b
    else if ((cmd.opcode & 3) == 2) from_device_ += cmd.data_len;  // bits 1:0 = 10b
}

BusCounters Device::bus() const
{
    return {commands_.load(), to_device_.load(), from_device_.load()};
}

Completion Device::run(Command cmd, const char *what, InProcess *mapped)
{
    const Completion r = send(cmd, mapped);
    if (r.status != 0) {
        throw Error(what, r.status, r.dw0(), r.dw1());
    }
    return r;
}

// Get Log Page of size bytes (log pages are not counted on the bus).
std::vector<uint8_t> Device::get_log(uint8_t lid, uint32_t size, const char *what)
{
    std::vector<uint8_t> page(size);
    Command c;
    c.admin = true;
    c.opcode = kAdminGetLogPage;
    c.nsid = 0xFFFFFFFF;
    c.cdw10 = lid | ((size / 4 - 1) << 16);
    c.data = page.data();
    c.data_len = size;
    const Completion r = transport_->submit(c);
    if (r.status != 0) {
        throw Error(what, r.status);
    }
    return page;
}

void Device::refresh_capabilities() { read_capabilities(); }

void Device::read_capabilities()
{
    caps_ = Capabilities{};
    if (!speaks_vendor_ && front_end_ == FrontEnd::NvmeCs) {
        read_standard_capabilities();
        return;
    }
    const auto page = get_log(CSD_LOG_CAPABILITIES, csd_log_page_size(CSD_LOG_CAPABILITIES),
                              front_end_ == FrontEnd::Host ? "Get Log Page C0h (capabilities, host mode)" : "Get Log Page C0h (capabilities)");
    csd_caps_log h;
    std::memcpy(&h, page.data(), sizeof h);
    if (std::memcmp(h.magic, CSD_CAPS_MAGIC, 4) != 0) {
        throw Error("capabilities log page has no CSD1 magic", EPROTO);
    }
    caps_.version = h.version;
    caps_.slm_size = h.slm_size;
    caps_.compute_units = h.compute_units;
    caps_.max_desc_len = h.max_desc_len;
    caps_.max_ranges = h.max_ranges;
    caps_.max_program_bytes = h.max_program_bytes;
    caps_.downloadable_slots = h.downloadable_slots;
    caps_.program_types = h.program_types;
    caps_.features = h.features;
    caps_.max_chase_hops = h.max_chase_hops;
    const uint32_t n = std::min<uint32_t>(h.nr_programs, (CSD_LOG_PAGE_SIZE - CSD_CAPS_ENTRIES_OFFSET) / sizeof(csd_caps_entry));
    for (uint32_t i = 0; i < n; i++) {
        csd_caps_entry e;
        std::memcpy(&e, page.data() + CSD_CAPS_ENTRIES_OFFSET + sizeof e * i, sizeof e);
        caps_.programs.push_back({e.id, e.type, std::string(e.name, strnlen(e.name, sizeof e.name))});
    }
    const CapSource from = front_end_ == FrontEnd::Host ? CapSource::Host : CapSource::Vendor;
    for (const char *f : {"version", "slm_size", "compute_units", "max_desc_len", "max_ranges", "max_program_bytes",
                          "downloadable_slots", "program_types", "features", "max_chase_hops", "programs"}) {
        caps_.sources.emplace_back(f, from);
    }
}

// A drive with only the standard front end: programs from Program List (82h), program
// types from Downloadable Program Types (83h), the SLM size by a probe, the rest defaults
// the standard implies or that are conservative (no Compare and Write: a vendor opcode).
void Device::read_standard_capabilities()
{
    auto list = get_log(NVME_CS_LOG_PROGRAM_LIST, 4096, "Get Log Page 82h (Program List)");
    uint32_t n = 0;
    std::memcpy(&n, list.data(), 4);
    const uint32_t want = 8 + n * static_cast<uint32_t>(sizeof(nvme_cs_program_entry));
    if (want > list.size()) list = get_log(NVME_CS_LOG_PROGRAM_LIST, (want + 3) & ~3u, "Get Log Page 82h (Program List)");
    for (uint32_t i = 0; i < n; i++) {
        nvme_cs_program_entry e;
        std::memcpy(&e, list.data() + 8 + sizeof e * i, sizeof e);
        const uint8_t type = e.kind == NVME_CS_PROGRAM_DOWNLOADED ? CSD_PROGRAM_DOWNLOADED
                             : e.kind == NVME_CS_PROGRAM_PLUGIN   ? CSD_PROGRAM_PLUGIN
                                                                  : CSD_PROGRAM_DEVICE;
        const char *known = type == CSD_PROGRAM_DEVICE ? csd_program_name(e.index) : nullptr;
        char fallback[32];
        std::snprintf(fallback, sizeof fallback, "%s-%04x", type == CSD_PROGRAM_DOWNLOADED ? "ebpf" : "program", e.index);
        caps_.programs.push_back({e.index, type, known ? known : fallback});
    }
    const auto types = get_log(NVME_CS_LOG_DL_PROGRAM_TYPES, 4096, "Get Log Page 83h (Downloadable Program Types)");
    uint32_t nt = 0;
    std::memcpy(&nt, types.data(), 4);
    for (uint32_t i = 0; i < std::min<uint32_t>(nt, 4096 - 8); i++) {
        if (types[8 + i] == NVME_CS_PROGRAM_TYPE_EBPF) caps_.program_types |= 1u << CSD_PROGRAM_TYPE_EBPF;
    }
    caps_.slm_size = probe_slm_size();
    // Reachability Groups (1Ah): whether Memory Copy / Copy 4h can reach the NVM namespace
    // from the memory namespace (a group holding both); a drive without the log: assumed.
    reachable_ = true;
    std::vector<uint8_t> groups;
    try {
        groups = get_log(NVME_CS_LOG_REACHABILITY_GROUPS, 4096, "Get Log Page 1Ah (Reachability Groups)");
    } catch (const Error &) {
    }
    if (!groups.empty()) {
        nvme_cs_reach_header h;
        std::memcpy(&h, groups.data(), sizeof h);
        size_t at = sizeof h;
        bool mem = false, nvm = false;
        for (uint32_t g = 0; g < h.entries && !(mem && nvm) && at + sizeof(nvme_cs_reach_group) <= groups.size(); g++) {
            nvme_cs_reach_group grp;
            std::memcpy(&grp, groups.data() + at, sizeof grp);
            at += sizeof grp;
            mem = nvm = false;
            for (uint32_t i = 0; i < grp.nnid && at + 4 <= groups.size(); i++, at += 4) {
                uint32_t nsid;
                std::memcpy(&nsid, groups.data() + at, 4);
                mem |= nsid == memory_nsid_;
                nvm |= nsid == ns().nsid;
            }
        }
        reachable_ = mem && nvm;
        caps_.sources.emplace_back("reachability", CapSource::Standard);
    }
    caps_.compute_units = 1;
    caps_.max_desc_len = CSD_MAX_DESC_LEN;
    caps_.max_ranges = NVME_CS_MAX_RANGES_PER_SET;
    caps_.max_program_bytes = CSD_MAX_PROGRAM_BYTES;
    caps_.downloadable_slots = CSD_NR_SLOTS;  // the download indexes 0100h-01FFh [P]
    caps_.features = 0;
    caps_.sources.insert(caps_.sources.end(), {{"programs", CapSource::Standard},      {"program_types", CapSource::Standard},
                     {"slm_size", CapSource::Probe},         {"version", CapSource::Default},
                     {"compute_units", CapSource::Default},  {"max_desc_len", CapSource::Default},
                     {"max_ranges", CapSource::Default},     {"max_program_bytes", CapSource::Default},
                     {"downloadable_slots", CapSource::Default}, {"features", CapSource::Default}});
}

// The memory namespace's size, which no standard structure the project reads reports: the
// first 4 KiB page whose Memory Read is refused, by doubling then bisection (about 2 log2
// of the size in 4 KiB pages of 4-byte reads).
uint64_t Device::probe_slm_size()
{
    const nvme_cs::Namespaces cs{memory_nsid_, compute_nsid_};
    auto readable = [&](uint64_t page) {
        uint32_t word;
        const Command c = nvme_cs::memory_xfer(cs, false, page * 4096, &word, 4);
        return transport_->submit(c).status == 0;
    };
    if (!readable(0)) return 0;
    uint64_t lo = 1, hi = 2;  // page lo - 1 readable; page hi unknown
    while (readable(hi - 1)) {
        lo = hi;
        if (hi >= (1ull << 40)) return hi * 4096;  // 4 PiB: stop looking
        hi *= 2;
    }
    while (lo < hi) {  // pages below lo readable, page hi - 1 not
        const uint64_t mid = lo + (hi - lo) / 2;
        if (readable(mid)) lo = mid + 1;
        else hi = mid;
    }
    return lo * 4096;
}

Statistics Device::stats()
{
    Statistics s;
    if (!speaks_vendor_ && front_end_ != FrontEnd::Host) {  // standard-only: no statistics log; unknown, not zero
        s.available = false;
        return s;
    }
    const auto page = get_log(CSD_LOG_STATISTICS, csd_log_page_size(CSD_LOG_STATISTICS), "Get Log Page C1h (statistics)");
    uint64_t v[CSD_STAT_COUNT];
    std::memcpy(v, page.data() + CSD_STATS_COUNTERS_OFFSET, sizeof v);
    s.slm_load_cmds = v[CSD_STAT_SLM_LOAD_CMDS];
    s.slm_store_cmds = v[CSD_STAT_SLM_STORE_CMDS];
    s.slm_write_cmds = v[CSD_STAT_SLM_WRITE_CMDS];
    s.slm_read_cmds = v[CSD_STAT_SLM_READ_CMDS];
    s.exec_cmds = v[CSD_STAT_EXEC_CMDS];
    s.exec_errors = v[CSD_STAT_EXEC_ERRORS];
    s.bytes_namespace_to_slm = v[CSD_STAT_BYTES_NS_TO_SLM];
    s.bytes_slm_to_namespace = v[CSD_STAT_BYTES_SLM_TO_NS];
    s.bytes_host_to_slm = v[CSD_STAT_BYTES_HOST_TO_SLM];
    s.bytes_slm_to_host = v[CSD_STAT_BYTES_SLM_TO_HOST];
    s.exec_busy_ns = v[CSD_STAT_EXEC_BUSY_NS];
    s.program_load_cmds = v[CSD_STAT_PROGRAM_LOAD_CMDS];
    s.program_unload_cmds = v[CSD_STAT_PROGRAM_UNLOAD_CMDS];
    s.program_load_rejects = v[CSD_STAT_PROGRAM_LOAD_REJECTS];
    s.model_link_in_busy_ns = v[CSD_STAT_MODEL_LINK_IN_BUSY_NS];
    s.model_link_out_busy_ns = v[CSD_STAT_MODEL_LINK_OUT_BUSY_NS];
    s.model_media_busy_ns = v[CSD_STAT_MODEL_MEDIA_BUSY_NS];
    s.model_slm_busy_ns = v[CSD_STAT_MODEL_SLM_BUSY_NS];
    s.model_compute_busy_ns = v[CSD_STAT_MODEL_COMPUTE_BUSY_NS];
    s.model_delay_ns = v[CSD_STAT_MODEL_DELAY_NS];
    s.model_overruns = v[CSD_STAT_MODEL_OVERRUNS];
    s.model_holds = v[CSD_STAT_MODEL_HOLDS];
    s.model_hold_ns = v[CSD_STAT_MODEL_HOLD_NS];
    std::copy(std::begin(v), std::end(v), s.counters.begin());
    static_assert(sizeof(s.per_program) == 8 * CSD_STATS_PER_PROGRAM_COUNT, "one counter per program id");
    std::memcpy(s.per_program.data(), page.data() + CSD_STATS_PER_PROGRAM_OFFSET, sizeof(s.per_program));
    return s;
}

// One SLM Write or SLM Read of n bytes at a 4-byte aligned offset.
void Device::slm_cmd(uint8_t opcode, uint64_t offset, void *data, uint64_t n)
{
    const bool write = opcode == CSD_OPC_SLM_WRITE;
    if (standard()) {
        run(nvme_cs::memory_xfer({memory_nsid_, compute_nsid_}, write, offset, data, static_cast<uint32_t>(n)),
            write ? "Memory Write" : "Memory Read");
        return;
    }
    Command c = io(opcode, ns().nsid);
    set_lo_hi(c.cdw10, c.cdw11, offset);
    c.cdw12 = static_cast<uint32_t>(n);
    c.data = data;
    c.data_len = static_cast<uint32_t>(n);
    run(c, write ? "SLM Write" : "SLM Read");
}

// SLM Write/Read move 4-byte aligned multiples of 4; an unaligned head or a short tail
// goes through its 4-byte word (read-modify-write for SLM Write).
void Device::slm_write(uint64_t offset, const void *data, uint64_t len)
{
    auto *p = static_cast<const uint8_t *>(data);
    const uint64_t chunk_max = transport_->max_transfer() & ~3u;
    while (len > 0) {
        const uint64_t base = offset & ~3ull;
        if (base != offset || len < 4) {
            uint8_t word[4];
            const uint64_t n = std::min<uint64_t>(len, 4 - (offset - base));
            {
                // another thread's edge in the same word must not write back its stale bytes over ours
                const std::lock_guard<std::mutex> g(slm_edge_mu_);
                slm_cmd(CSD_OPC_SLM_READ, base, word, 4);
                std::memcpy(word + (offset - base), p, n);
                slm_cmd(CSD_OPC_SLM_WRITE, base, word, 4);
            }
            offset += n;
            p += n;
            len -= n;
            continue;
        }
        const uint64_t n = std::min<uint64_t>(len & ~3ull, chunk_max);
        slm_cmd(CSD_OPC_SLM_WRITE, offset, const_cast<uint8_t *>(p), n);
        offset += n;
        p += n;
        len -= n;
    }
}

void Device::slm_read(uint64_t offset, void *data, uint64_t len)
{
    auto *p = static_cast<uint8_t *>(data);
    const uint64_t chunk_max = transport_->max_transfer() & ~3u;
    while (len > 0) {
        const uint64_t base = offset & ~3ull;
        if (base != offset || len < 4) {
            uint8_t word[4];
            slm_cmd(CSD_OPC_SLM_READ, base, word, 4);
            const uint64_t n = std::min<uint64_t>(len, 4 - (offset - base));
            std::memcpy(p, word + (offset - base), n);
            offset += n;
            p += n;
            len -= n;
            continue;
        }
        const uint64_t n = std::min<uint64_t>(len & ~3ull, chunk_max);
        slm_cmd(CSD_OPC_SLM_READ, offset, p, n);
        offset += n;
        p += n;
        len -= n;
    }
}

// SLM Load and SLM Store: NLB is 16 bits, so large ranges take several commands.
void Device::slm_lbas(uint8_t opcode, uint64_t slba, uint64_t nlb, uint64_t slm_offset, const char *what)
{
    if (standard() && !reachable_) {
        throw Error(std::string(what) + ": namespace " + std::to_string(ns().nsid) +
                        " is not reachable from memory namespace " + std::to_string(memory_nsid_) +
                        " (no Reachability Group of log 1Ah holds both)",
                    static_cast<uint16_t>(NVME_CS_NS_NOT_REACHABLE | CSD_STATUS_DNR));
    }
    while (nlb > 0) {
        const uint64_t n = std::min(nlb, kMaxNlb);
        if (standard()) {  // Memory Copy from the namespace / NVM Copy from memory
            std::vector<uint8_t> desc;
            const nvme_cs::Namespaces cs{memory_nsid_, compute_nsid_};
            run(opcode == CSD_OPC_SLM_LOAD
                    ? nvme_cs::memory_copy(cs, ns().nsid, slba, static_cast<uint32_t>(n), slm_offset, desc)
                    : nvme_cs::nvm_copy_from_memory(cs, ns().nsid, slba, slm_offset,
                                                    static_cast<uint32_t>(n * ns().lba_size), desc),
                opcode == CSD_OPC_SLM_LOAD ? "Memory Copy" : "Copy (from memory)");
        } else {
            Command c = io(opcode, ns().nsid);
            set_lo_hi(c.cdw10, c.cdw11, slba);
            c.cdw12 = static_cast<uint32_t>(n - 1);
            set_lo_hi(c.cdw13, c.cdw14, slm_offset);
            run(c, what);
        }
        slba += n;
        nlb -= n;
        slm_offset += n * ns().lba_size;
    }
}

void Device::slm_load(uint64_t slba, uint64_t nlb, uint64_t slm_offset)
{
    slm_lbas(CSD_OPC_SLM_LOAD, slba, nlb, slm_offset, "SLM Load");
}

void Device::slm_store(uint64_t slba, uint64_t nlb, uint64_t slm_offset)
{
    slm_lbas(CSD_OPC_SLM_STORE, slba, nlb, slm_offset, "SLM Store");
}

// Read or Write of LBAs in commands of at most the largest transfer; `mapped` (p null): Reads
// that move no bytes, their caller copying them from the mapped namespace.
void Device::rw_lbas(uint8_t opcode, uint64_t slba, uint64_t nlb, uint8_t *p, const char *what, InProcess *mapped)
{
    const NamespaceInfo info = ns();
    const uint32_t lba = info.lba_size;
    const uint32_t prinfo = protection_info(info, what);
    const uint64_t per = std::max<uint64_t>(1, std::min<uint64_t>(transport_->max_transfer() / lba, kMaxNlb));
    while (nlb > 0) {
        const uint64_t n = std::min(nlb, per);
        Command c = io(opcode, info.nsid);
        set_lo_hi(c.cdw10, c.cdw11, slba);
        c.cdw12 = static_cast<uint32_t>(n - 1) | prinfo;
        if (prinfo && info.pi_type != 3) c.cdw14 = static_cast<uint32_t>(slba);  // ILBRT: type 1/2 reference tag
        c.data = p;
        c.data_len = static_cast<uint32_t>(n * lba);
        run(c, what, mapped);
        slba += n;
        nlb -= n;
        if (p) p += n * lba;
    }
}

void Device::read_lbas(uint64_t slba, uint64_t nlb, void *data)
{
    rw_lbas(kNvmRead, slba, nlb, static_cast<uint8_t *>(data), "Read");
}

void Device::read_lbas_mapped(uint64_t slba, uint64_t nlb)
{
    InProcess *in = in_process(*transport_);
    if (!in || !in->namespace_host_pointer()) {
        throw Error("mapped Read: the namespace is not mapped into this process", ENOTSUP);
    }
    rw_lbas(kNvmRead, slba, nlb, nullptr, "Read", in);
}

void Device::write_lbas(uint64_t slba, uint64_t nlb, const void *data)
{
    rw_lbas(kNvmWrite, slba, nlb, static_cast<uint8_t *>(const_cast<void *>(data)), "Write");
}

void Device::flush() { run(io(kNvmFlush, ns().nsid), "Flush"); }

bool Device::compare_and_write(uint64_t slba, uint64_t nlb, const void *expected, const void *desired)
{
    const uint64_t half = nlb * ns().lba_size;
    if (nlb == 0 || half > CSD_CAW_MAX_BYTES || 2 * half > transport_->max_transfer()) {
        throw Error("Compare and Write of " + std::to_string(nlb) + " LBAs: 1 to " +
                        std::to_string(std::min<uint64_t>(CSD_CAW_MAX_BYTES, transport_->max_transfer() / 2)) +
                        " bytes",
                    EINVAL);
    }
    std::vector<uint8_t> data(2 * half);
    std::memcpy(data.data(), expected, half);
    std::memcpy(data.data() + half, desired, half);
    Command c = io(CSD_OPC_COMPARE_WRITE, ns().nsid);
    set_lo_hi(c.cdw10, c.cdw11, slba);
    c.cdw12 = static_cast<uint32_t>(nlb - 1);
    c.data = data.data();
    c.data_len = static_cast<uint32_t>(data.size());
    // Command Interrupted (a drive that refuses one overlapping another writer's, as this
    // project's emulator did before it ordered them): retry, backing off up to ~10 s.
    for (unsigned attempt = 0;; attempt++) {
        const Completion r = send(c);
        if (r.status == 0) return true;
        if (CSD_STATUS_CODE(r.status) == CSD_STATUS_COMPARE_FAILURE) return false;
        if (CSD_STATUS_CODE(r.status) != CSD_STATUS_COMMAND_INTERRUPTED || attempt >= 200) {
            throw Error("Compare and Write", r.status, r.dw0(), r.dw1());
        }
        std::this_thread::sleep_for(std::chrono::microseconds(50u << std::min(attempt, 10u)));
    }
}

// Throws the error of a refused Program Load / Load Program chunk, naming the image's fault.
void Device::program_load_failed(const Completion &r, uint32_t size, uint32_t record_size) const
{
    std::string what = std::string(standard() ? "Load Program" : "Program Load") + " (" + std::to_string(size) +
                       "-byte image, records of " + std::to_string(record_size) + " bytes)";
    if (CSD_STATUS_CODE(r.status) == CSD_STATUS_INVALID_PROGRAM_IMAGE ||
        CSD_STATUS_CODE(r.status) == NVME_CS_INVALID_PROGRAM_DATA) {
        what += r.dw0() == CSD_IMAGE_FAULT_NONE ? ", not a BPF ELF object the device accepts"
                                               : ", refused by the verifier at instruction " + std::to_string(r.dw0());
    }
    const uint16_t code = CSD_STATUS_CODE(r.status);
    if ((code == CSD_STATUS_INVALID_FIELD || code == NVME_CS_INVALID_PROGRAM_TYPE) &&
        !(caps_.program_types & (1u << CSD_PROGRAM_TYPE_EBPF))) {
        what += ", the device runs no eBPF programs (its capabilities list none: an emulator built without DPDK's librte_bpf)";
    }
    throw Error(what, r.status, r.dw0(), r.dw1());
}

// Load Program into a download slot (the one asked for, else the first free one; another
// process taking it first moves on to the next), then Program Activation Management.
uint16_t Device::program_load_standard(const uint8_t *image, uint32_t size, uint32_t record_size, uint16_t slot)
{
    const nvme_cs::Namespaces cs{memory_nsid_, compute_nsid_};
    const uint32_t chunk_max = transport_->max_transfer();
    const uint32_t end = slot ? slot + 1u : CSD_SLOT_FIRST + std::min<uint32_t>(caps_.downloadable_slots, CSD_NR_SLOTS);
    for (uint32_t candidate = slot ? slot : CSD_SLOT_FIRST; candidate < end; candidate++) {
        if (!slot && caps_.program(static_cast<uint16_t>(candidate))) continue;
        Completion r;
        for (uint32_t off = 0; off < size && r.status == 0;) {
            const uint32_t n = std::min(size - off, chunk_max);
            const Command c = nvme_cs::load_program(cs, static_cast<uint16_t>(candidate), size, record_size, off, image + off, n);
            count(c);
            r = transport_->submit(c);
            off += n;
        }
        if (r.status == 0) {
            const Command activate = nvme_cs::program_activation(cs, static_cast<uint16_t>(candidate), true);
            count(activate);
            const Completion a = transport_->submit(activate);
            if (a.status != 0) {  // e.g. Maximum Programs Activated: leave no inactive program behind
                const Command unload = nvme_cs::unload_program(cs, static_cast<uint16_t>(candidate));
                count(unload);
                transport_->submit(unload);
                throw Error("Program Activation Management of the loaded program (unloaded again)", a.status);
            }
            return static_cast<uint16_t>(candidate);
        }
        if (slot || CSD_STATUS_CODE(r.status) != NVME_CS_PROGRAM_IN_USE) program_load_failed(r, size, record_size);
        refresh_capabilities();  // taken meanwhile: look again
    }
    throw Error("Load Program: every download slot is taken", static_cast<uint16_t>(NVME_CS_PROGRAM_IN_USE | CSD_STATUS_DNR));
}

uint16_t Device::program_load(const void *image, uint32_t size, uint32_t record_size, uint16_t slot, uint8_t type)
{
    if (size == 0) throw Error("Program Load: empty image", EINVAL);
    const auto *p = static_cast<const uint8_t *>(image);
    if (standard()) {
        if (type != CSD_PROGRAM_TYPE_EBPF) throw Error("Load Program: the standard front end loads eBPF programs", EINVAL);
        slot = program_load_standard(p, size, record_size, slot);
        read_capabilities();
        return slot;
    }
    const uint32_t chunk_max = transport_->max_transfer();
    for (uint32_t off = 0; off < size;) {
        const uint32_t n = std::min(size - off, chunk_max);
        Command c = io(CSD_OPC_PROGRAM_LOAD, ns().nsid);
        c.cdw10 = csd_program_load_cdw10(slot, type);
        c.cdw11 = size;
        c.cdw12 = off;
        c.cdw13 = n;
        c.cdw14 = record_size;
        c.data = const_cast<uint8_t *>(p + off);
        c.data_len = n;
        const Completion r = send(c);
        if (r.status != 0) program_load_failed(r, size, record_size);
        slot = static_cast<uint16_t>(r.dw0());
        off += n;
    }
    read_capabilities();
    return slot;
}

void Device::program_unload(uint16_t slot)
{
    if (standard()) {  // an active program is in use: deactivate, then unload
        const nvme_cs::Namespaces cs{memory_nsid_, compute_nsid_};
        run(nvme_cs::program_activation(cs, slot, false), "Program Activation Management (deactivate)");
        run(nvme_cs::unload_program(cs, slot), "Load Program (unload)");
    } else {
        Command c = io(CSD_OPC_PROGRAM_UNLOAD, ns().nsid);
        c.cdw10 = slot;
        run(c, "Program Unload");
    }
    read_capabilities();
}

// What an Execute error names: the program as the capabilities log lists it, else the spec's name.
static std::string exec_what(const Capabilities &caps, uint16_t program)
{
    char buf[64];
    const ProgramInfo *listed = caps.program(program);
    const char *name = listed ? listed->name.c_str() : csd_program_name(program);
    if (name) std::snprintf(buf, sizeof buf, "Execute %s (program %04xh)", name, program);
    else std::snprintf(buf, sizeof buf, "Execute of program %04xh (none listed there)", program);
    return buf;
}

// Execute (a vendor descriptor) or Execute Program (inline ranges, then the parameters);
// data receives what the command transfers.
Command Device::execute_command(uint16_t program, const std::vector<Range> &ranges, const void *params,
                                uint32_t param_len, std::vector<uint8_t> &data) const
{
    if (standard()) {
        return nvme_cs::execute_program({memory_nsid_, compute_nsid_}, program, ranges, params, param_len, data);
    }
    data = make_descriptor(program, ranges, params, param_len);
    Command c = io(CSD_OPC_EXECUTE, ns().nsid);
    c.cdw10 = static_cast<uint32_t>(data.size());
    c.data = data.data();
    c.data_len = static_cast<uint32_t>(data.size());
    return c;
}

ExecResult Device::execute(uint16_t program, const std::vector<Range> &ranges, const void *params,
                           uint32_t param_len)
{
    std::vector<uint8_t> d;
    const Command c = execute_command(program, ranges, params, param_len, d);
    {
        std::lock_guard<std::mutex> g(executing_mu_);
        executing_.push_back(&c);
    }
    Completion r;
    try {
        r = send(c);
    } catch (...) {
        forget_execute(c);
        throw;
    }
    forget_execute(c);
    if (r.status != 0) {
        throw Error(exec_what(caps_, program), r.status, r.dw0(), r.dw1());
    }
    return {r.dw0(), r.dw1(), where()};
}

// execute()'s command is answered: abort_executes() no longer finds it.
void Device::forget_execute(const Command &c)
{
    std::lock_guard<std::mutex> g(executing_mu_);
    executing_.erase(std::find(executing_.begin(), executing_.end(), &c));
}

size_t Device::abort_executes()
{
    std::lock_guard<std::mutex> g(executing_mu_);  // each command lives until execute() forgets it
    size_t n = 0;
    for (const Command *c : executing_) n += transport_->abort(*c) ? 1 : 0;
    return n;
}

std::future<ExecResult> Device::execute_async(uint16_t program, const std::vector<Range> &ranges,
                                               const void *params, uint32_t param_len)
{
    auto d = std::make_shared<std::vector<uint8_t>>();
    const Command c = execute_command(program, ranges, params, param_len, *d);
    if (counts_sends_) count(c);
    const auto fut = std::make_shared<std::future<Completion>>(transport_->submit_async(c));
    // The descriptor must live until the command completes: the deferred future owns it.
    return std::async(std::launch::deferred, [d, fut, what = exec_what(caps_, program), at = where()]() {
        const Completion r = fut->get();
        if (r.status != 0) {
            throw Error(what, r.status, r.dw0(), r.dw1());
        }
        return ExecResult{r.dw0(), r.dw1(), at};
    });
}

}  // namespace csd
