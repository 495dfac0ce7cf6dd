// SPDX-License-Identifier: MIT
// program.hpp - a program of the user's own in the drive (command set §8): an eBPF image
// loaded into a slot, run over fixed-size records in SLM as filter, map or reduce, or
// over blocks of the namespace it chases from one to the next (chase, 1.2).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "csd/device.hpp"
#include "csd/programs.hpp"

namespace csd {

// What a chase ended with: the program's value (bit 63 cleared) and the blocks it read.
struct ChaseResult {
    uint64_t value = 0;
    uint32_t hops = 0;
};

// A loaded program. It is unloaded when this object goes, unless keep() was called.
class Program {
public:
    // Loads an eBPF object (what clang -O2 -target bpf -c writes) for records of
    // record_size bytes into slot (0: the device picks). Invalid Program Image:
    // csd::Error whose dw0() is the instruction the verifier refused.
    Program(Device &dev, const std::vector<uint8_t> &image, uint32_t record_size, uint16_t slot = 0);
    // The same from a file.
    Program(Device &dev, const std::string &path, uint32_t record_size, uint16_t slot = 0);
    // Takes over a slot that holds a program already (e.g. one loaded by csdctl).
    static Program attach(Device &dev, uint16_t slot, uint32_t record_size);
    Program(Program &&other) noexcept;
    Program &operator=(Program &&other) noexcept;
    Program(const Program &) = delete;
    Program &operator=(const Program &) = delete;
    ~Program();

    uint16_t id() const { return id_; }
    uint32_t record_size() const { return record_size_; }
    std::string name() const;  // the ELF's entry symbol, as the capabilities log lists it
    // Leaves the program loaded after this object goes (unload it with Device::program_unload).
    void keep() { kept_ = true; }
    // Unloads it now.
    void unload();

    // index_base (command set 1.3): what csd_index() answers for the first of the records.
    // filter: records for which the program returns non-zero, copied to out in order.
    // Output too small: csd::Error Output Overflow whose dw1() is the number of matches.
    FilterResult run_filter(Range records, Range out, uint32_t count, const std::vector<uint64_t> &params = {},
                            uint32_t index_base = 0);
    // map: out[i] = the program's u64 for record i (out holds count * 8 bytes).
    void run_map(Range records, Range out, uint32_t count, const std::vector<uint64_t> &params = {},
                 uint32_t index_base = 0);
    // reduce: the wrapping u64 sum of the program's results over the records.
    uint64_t run_reduce(Range records, uint32_t count, const std::vector<uint64_t> &params = {},
                        uint32_t index_base = 0);
    // Any mode, returning the completion Dwords.
    ExecResult run(uint32_t mode, Range records, Range out, uint32_t count, const std::vector<uint64_t> &params,
                   uint32_t index_base = 0);
    // chase (mode 3, 1.2; XRP-style pointer chasing): the device reads the block at
    // start_lba of the namespace, calls the program on its first record_size() bytes, and
    // reads the block at the LBA it answers, until it answers "done" (bit 63) or max_hops
    // blocks were read (1..CSD_BPF_MAX_HOPS; more: Hop Limit Exceeded, csd::Error whose
    // dw0()/dw1() are the LBA it would read next). The program sees params[0] = start_lba
    // and params[1..] = params. out: 16 bytes of SLM for the result (none: a buffer of its own).
    ChaseResult run_chase(uint64_t start_lba, const std::vector<uint64_t> &params = {},
                          uint32_t max_hops = CSD_BPF_MAX_HOPS, Range out = {});
    // The same chase as one command: its value from the completion (DW0/DW1), the hop
    // count not read back (run_chase reads the 16-byte result: a second command).
    uint64_t chase_value(uint64_t start_lba, const std::vector<uint64_t> &params = {},
                         uint32_t max_hops = CSD_BPF_MAX_HOPS);

private:
    Program(Device &dev, uint16_t id, uint32_t record_size) : dev_(&dev), id_(id), record_size_(record_size) {}
    Device *dev_ = nullptr;
    uint16_t id_ = 0;
    uint32_t record_size_ = 0;
    bool kept_ = false;
};

// The Execute parameters of a downloaded program (command set §8).
std::vector<uint8_t> downloaded_program_params(uint32_t count, uint32_t mode, const std::vector<uint64_t> &params,
                                               uint32_t index_base = 0);

}  // namespace csd
