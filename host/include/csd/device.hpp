// SPDX-License-Identifier: MIT
// device.hpp - a computational-storage NVMe device: detection, capabilities,
// statistics, SLM data movement, namespace I/O and Execute, over any Transport.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "csd/error.hpp"
#include "csd/slm.hpp"
#include "csd/transport.hpp"
#include "csd_spec.h"

namespace csd {

class InProcess;

// One program of the capabilities log.
struct ProgramInfo {
    uint16_t id = 0;
    uint8_t type = 0;  // 0 device-defined, 1 downloaded, 2 operator plug-in
    std::string name;
};

// Where a capability's value came from: the vendor log page C0h, a standard structure
// (Identify, logs 82h/83h), the standard's silence filled with a conservative default, a
// probe (commands whose outcome tells it), or the host (host mode: this process's core).
enum class CapSource { Vendor, Standard, Default, Probe, Host };
// "vendor log C0h", "standard", "default", "probe" or "host".
const char *cap_source_name(CapSource s);

// The drive's capabilities: the vendor log page C0h, or what the standard structures and
// probes tell (Device::caps().sources says which, field by field).
struct Capabilities {
    uint32_t version = 0;
    uint64_t slm_size = 0;
    uint32_t compute_units = 0;
    uint32_t max_desc_len = 0;
    uint32_t max_ranges = 0;
    uint32_t max_program_bytes = 0;  // 1.1: largest downloadable image
    uint16_t downloadable_slots = 0;  // 1.1
    uint16_t program_types = 0;       // 1.1: bit n = program type n (bit 1 eBPF)
    uint32_t features = 0;            // CSD_FEATURE_* (bit 0: Compare and Write)
    uint32_t max_chase_hops = 0;      // 1.2: a downloaded program's chase's largest hop limit (0: none)
    std::vector<ProgramInfo> programs;
    // Field name ("slm_size", "programs", ...) and where its value came from.
    std::vector<std::pair<std::string, CapSource>> sources;
    // Where a field's value came from (Default for a name not listed).
    CapSource source(const std::string &field) const
    {
        for (const auto &[f, s] : sources) {
            if (f == field) return s;
        }
        return CapSource::Default;
    }
    // The listed program with this id, or nullptr.
    const ProgramInfo *program(uint16_t id) const
    {
        for (const auto &p : programs) {
            if (p.id == id) return &p;
        }
        return nullptr;
    }
};

// The statistics log page (C1h).
struct Statistics {
    // False on a drive without the vendor statistics log (standard-only): every counter
    // below is then unknown, not zero (docs/real-drives.md).
    bool available = true;
    uint64_t slm_load_cmds = 0, slm_store_cmds = 0, slm_write_cmds = 0, slm_read_cmds = 0;
    uint64_t exec_cmds = 0, exec_errors = 0;
    uint64_t bytes_namespace_to_slm = 0, bytes_slm_to_namespace = 0;
    uint64_t bytes_host_to_slm = 0, bytes_slm_to_host = 0, exec_busy_ns = 0;
    uint64_t program_load_cmds = 0, program_unload_cmds = 0, program_load_rejects = 0;  // 1.1
    // The timing model (docs/timing-model.md): modelled busy time per resource, the delay
    // added to completions, and completions the host could not make in modelled time.
    uint64_t model_link_in_busy_ns = 0, model_link_out_busy_ns = 0, model_media_busy_ns = 0;
    uint64_t model_slm_busy_ns = 0, model_compute_busy_ns = 0, model_delay_ns = 0, model_overruns = 0;
    uint64_t model_holds = 0, model_hold_ns = 0;  // 1.3, exact mode: commands held to, host ns held
    std::array<uint64_t, CSD_STAT_COUNT> counters{};  // all of the above, as csd_stat_names orders them
    std::array<uint64_t, 512> per_program{};  // Executes by program id (0..01FFh)
};

// An SLM byte range of an Execute descriptor.
struct Range {
    uint64_t offset = 0;
    uint64_t length = 0;
};

// Data this process moved across the bus (PCIe in a real system), by direction.
struct BusCounters {
    uint64_t commands = 0;
    uint64_t bytes_to_device = 0;    // host -> controller data (writes, SLM Write, descriptors)
    uint64_t bytes_from_device = 0;  // controller -> host data (reads, SLM Read, log pages)
};

// Where a program ran: on the drive (an offload), or in this process on the device core
// over the bytes read from the drive (host mode: a drive without computational storage).
enum class Where { Device, Host };
// "device" or "host".
const char *where_name(Where w);

// Completion Dwords 0 and 1 of a successful Execute, and where it ran.
struct ExecResult {
    uint32_t dw0 = 0;
    uint32_t dw1 = 0;
    Where where = Where::Device;
};


class Device {
public:
    // Opens path (see open_transport) and checks that it is a CSD; throws csd::Error
    // naming the problem for a plain NVMe device or a missing one.
    static std::unique_ptr<Device> open(const std::string &path, const OpenOptions &opts = {});
    // Wraps an open transport, checks that its device is a CSD and picks the front end
    // (FrontEnd::Auto: vendor where the drive has it, else the standard; CSD_FRONT_END).
    explicit Device(std::unique_ptr<Transport> transport, FrontEnd front_end = FrontEnd::Auto);
    // The same with every open option (front end, ignore_vendor, host_slm); path is what
    // was opened (the device node or backing file the store locks), "" if unknown.
    Device(std::unique_ptr<Transport> transport, const OpenOptions &opts, const std::string &path = "");
    ~Device();

    FrontEnd front_end() const { return front_end_; }      // the one this Device speaks
    bool speaks_vendor() const { return speaks_vendor_; }   // Identify has the CSD1 signature (not ignored)
    bool speaks_nvme_cs() const { return memory_nsid_ != 0; }  // Identify CNS 1Ch: SLM and CP
    uint32_t memory_nsid() const { return memory_nsid_; }     // standard memory namespace, or 0
    uint32_t compute_nsid() const { return compute_nsid_; }   // standard compute namespace, or 0
    // "vendor", "standard" or "none": the computational storage the drive speaks.
    const char *speaks() const;
    // Where programs run: Host in host mode (FrontEnd::Host), else Device.
    Where where() const { return front_end_ == FrontEnd::Host ? Where::Host : Where::Device; }
    // The device node or backing file opened, "" if unknown (a Device made from a transport).
    const std::string &path() const { return path_; }
    // Opened read-only (OpenOptions::read_only): commands that change the namespace's data,
    // and the store's writes, are refused with EROFS.
    bool read_only() const { return read_only_; }
    // SLM as host memory where it is (the in-process device, host mode), else nullptr.
    uint8_t *slm_host_pointer();
    // The timing model's clock in ns (InProcess::model_clock_ns): the in-process device's
    // virtual clock with exact=on, where a command's time is the model's whatever the host;
    // 0 for a drive elsewhere (its clock is not this process's).
    uint64_t model_clock_ns() const;
    // The namespace mapped into this process (InProcess::namespace_host_pointer: the
    // simulated peer-to-peer drive), else nullptr.
    const uint8_t *namespace_host_pointer();

    const Capabilities &caps() const { return caps_; }  // read at open and after program loads
    void refresh_capabilities();                         // reads C0h (or 82h/83h) again
    Statistics stats();                                 // read now (available false: no C1h)
    NamespaceInfo ns() const { return transport_->ns(); }
    Transport &transport() { return *transport_; }
    SlmAllocator &slm() { return allocator_; }          // this process's SLM allocator
    BusCounters bus() const;                            // data moved so far by this Device

    // Host memory -> SLM at any offset and length (chunked, unaligned ends patched; threads of
    // this Device writing disjoint bytes of one word keep each other's bytes).
    void slm_write(uint64_t offset, const void *data, uint64_t len);
    // SLM -> host memory at any offset and length.
    void slm_read(uint64_t offset, void *data, uint64_t len);
    // Namespace LBAs -> SLM (SLM Load), any number of LBAs.
    void slm_load(uint64_t slba, uint64_t nlb, uint64_t slm_offset);
    // SLM -> namespace LBAs (SLM Store), as durable as a Write.
    void slm_store(uint64_t slba, uint64_t nlb, uint64_t slm_offset);
    // Plain NVMe Read / Write / Flush of the namespace.
    void read_lbas(uint64_t slba, uint64_t nlb, void *data);
    // Reads of LBAs [slba, slba + nlb) that move no bytes, for a caller about to copy them
    // from namespace_host_pointer() (InProcess::submit_mapped_read, in pieces of the largest
    // transfer): the drive checks and counts them as any Read; throws csd::Error with the
    // first one's status (the namespace detached, LBAs out of range), ENOTSUP where the
    // namespace is not mapped into this process.
    void read_lbas_mapped(uint64_t slba, uint64_t nlb);
    void write_lbas(uint64_t slba, uint64_t nlb, const void *data);
    void flush();
    // Compare and Write (8Dh): writes `desired` over nlb LBAs from slba only if they hold
    // `expected`, atomically against every other Compare and Write; false on a mismatch.
    bool compare_and_write(uint64_t slba, uint64_t nlb, const void *expected, const void *desired);

    // Runs a program on SLM ranges and waits; throws csd::Error with the status.
    ExecResult execute(uint16_t program, const std::vector<Range> &ranges, const void *params = nullptr,
                       uint32_t param_len = 0);
    // The same, asynchronously: the future throws csd::Error on failure.
    std::future<ExecResult> execute_async(uint16_t program, const std::vector<Range> &ranges,
                                          const void *params = nullptr, uint32_t param_len = 0);

    // Asks the drive to stop every Execute of this Device that execute() waits for (NVMe
    // Abort where the transport can send one; the in-process device stops a running program
    // at its next check, a chase between two hops): each then ends with Command Abort
    // Requested. Returns how many the transport took (0 where it cannot abort).
    size_t abort_executes();

    // Program Load of a whole image in chunks the transport accepts, into slot (0: the
    // device picks; on the standard front end libcsd picks a free one, then activates the
    // program); returns the slot. Invalid Program Image: csd::Error with dw0() = the
    // offending instruction. Use csd::Program (csd/program.hpp) for a handle that unloads.
    uint16_t program_load(const void *image, uint32_t size, uint32_t record_size, uint16_t slot = 0,
                          uint8_t type = CSD_PROGRAM_TYPE_EBPF);
    // Program Unload of a slot.
    void program_unload(uint16_t slot);

private:
    Completion send(const Command &cmd, InProcess *mapped = nullptr);
    std::vector<uint8_t> get_log(uint8_t lid, uint32_t size, const char *what);
    void read_standard_capabilities();
    uint64_t probe_slm_size();
    Completion run(Command cmd, const char *what, InProcess *mapped = nullptr);
    void forget_execute(const Command &c);
    void count(const Command &cmd);
    void rw_lbas(uint8_t opcode, uint64_t slba, uint64_t nlb, uint8_t *p, const char *what,
                 InProcess *mapped = nullptr);
    void slm_lbas(uint8_t opcode, uint64_t slba, uint64_t nlb, uint64_t slm_offset, const char *what);
    void slm_cmd(uint8_t opcode, uint64_t offset, void *data, uint64_t n);
    void read_capabilities();
    Command execute_command(uint16_t program, const std::vector<Range> &ranges, const void *params,
                            uint32_t param_len, std::vector<uint8_t> &data) const;
    uint16_t program_load_standard(const uint8_t *image, uint32_t size, uint32_t record_size, uint16_t slot);
    [[noreturn]] void program_load_failed(const Completion &r, uint32_t size, uint32_t record_size) const;
    bool standard() const { return front_end_ == FrontEnd::NvmeCs; }

    std::unique_ptr<Transport> transport_;
    bool counts_sends_ = true;  // false in host mode, whose transport counts what reaches the drive
    std::string path_;
    bool read_only_ = false;  // opened read-only (its transport was; host mode's wraps it)
    FrontEnd front_end_ = FrontEnd::Vendor;
    bool speaks_vendor_ = false;
    bool reachable_ = true;  // standard-only: log 1Ah puts the namespace and memory in one group
    uint32_t memory_nsid_ = 0, compute_nsid_ = 0;
    Capabilities caps_;
    SlmAllocator allocator_;
    std::atomic<uint64_t> commands_{0}, to_device_{0}, from_device_{0};
    std::mutex executing_mu_;                 // executing_
    std::mutex slm_edge_mu_;  // slm_write's read-modify-write of an unaligned edge's word (between its threads)
    std::vector<const Command *> executing_;  // the Executes execute() waits for (abort_executes)
};

// Builds an execute descriptor (command set section 4).
std::vector<uint8_t> make_descriptor(uint16_t program, const std::vector<Range> &ranges, const void *params,
                                     uint32_t param_len);

}  // namespace csd
