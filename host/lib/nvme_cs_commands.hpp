// SPDX-License-Identifier: MIT
// nvme_cs_commands.hpp - the standard computational storage commands (spec/nvme_cs.h) as
// libcsd sends them: builders of csd::Command, so that csd::Device speaks either front
// end with the same data movement (internal to libcsd).
#pragma once

#include <cstdint>
#include <vector>

#include "csd/device.hpp"
#include "csd/transport.hpp"

namespace csd::nvme_cs {

// The controller's memory (CSI 03h) and compute (CSI 04h) namespaces; 0 when absent.
struct Namespaces {
    uint32_t memory = 0;
    uint32_t compute = 0;
};

// Whether the controller reports the SLM and CP command sets (Identify CNS 1Ch), and if so
// the NSIDs of its memory and compute namespaces (Identify CNS 07h per CSI).
Namespaces discover(Transport &t);

// Memory Read (02h) or Memory Write (05h) of n bytes at byte offset of the memory namespace.
Command memory_xfer(const Namespaces &ns, bool write, uint64_t offset, void *data, uint32_t n);
// Memory Copy (01h, format 2h) of nlb LBAs from slba of NVM namespace nsid to byte dest;
// desc receives the 32-byte source descriptor the command's data points at.
Command memory_copy(const Namespaces &ns, uint32_t nsid, uint64_t slba, uint32_t nlb, uint64_t dest,
                    std::vector<uint8_t> &desc);
// NVM Copy (19h, format 4h) of bytes from byte offset of the memory namespace to slba of NVM
// namespace nsid; desc receives the memory range descriptor.
Command nvm_copy_from_memory(const Namespaces &ns, uint32_t nsid, uint64_t slba, uint64_t offset,
                             uint32_t bytes, std::vector<uint8_t> &desc);
// Execute Program (01h) of program with inline ranges; data receives ranges then params.
Command execute_program(const Namespaces &ns, uint16_t program, const std::vector<Range> &ranges,
                        const void *params, uint32_t param_len, std::vector<uint8_t> &data);
// Load Program (admin 85h): one chunk of an eBPF image into download slot index.
Command load_program(const Namespaces &ns, uint16_t index, uint32_t size, uint32_t record_size,
                     uint32_t offset, const void *chunk, uint32_t n);
// Load Program with the unload select bit: removes the program in slot index.
Command unload_program(const Namespaces &ns, uint16_t index);
// Program Activation Management (admin 88h): activates (or deactivates) a program.
Command program_activation(const Namespaces &ns, uint16_t index, bool activate);

}  // namespace csd::nvme_cs
