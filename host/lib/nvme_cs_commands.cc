// SPDX-License-Identifier: MIT
// nvme_cs_commands.cc - builders of the standard computational storage commands.
#include "nvme_cs_commands.hpp"

#include <cstring>

#include "nvme_cs.h"

namespace csd::nvme_cs {

namespace {

constexpr uint8_t kAdminIdentify = 0x06;
constexpr uint8_t kCnsCsiActiveList = 0x07, kCnsIoCommandSets = 0x1C;

void set_lo_hi(uint32_t &lo, uint32_t &hi, uint64_t v)
{
    lo = static_cast<uint32_t>(v);
    hi = static_cast<uint32_t>(v >> 32);
}

// Identify with a CNS and CSI into a 4096-byte buffer; false on any error status.
bool identify(Transport &t, uint8_t cns, uint8_t csi, std::vector<uint8_t> &buf)
{
    buf.assign(4096, 0);
    Command c;
    c.admin = true;
    c.opcode = kAdminIdentify;
    c.cdw10 = cns;
    c.cdw11 = static_cast<uint32_t>(csi) << 24;
    c.data = buf.data();
    c.data_len = 4096;
    return t.submit(c).status == 0;
}

}  // namespace

Namespaces discover(Transport &t)
{
    std::vector<uint8_t> buf;
    Namespaces ns;
    if (!identify(t, kCnsIoCommandSets, 0, buf)) return ns;  // no command set vectors: NVM only
    const uint64_t vector = [&] { uint64_t v; std::memcpy(&v, buf.data(), 8); return v; }();
    if (!(vector & NVME_CS_IOCS_VEC_SLM) || !(vector & NVME_CS_IOCS_VEC_CP)) return ns;
    uint32_t first = 0;
    if (identify(t, kCnsCsiActiveList, NVME_CS_CSI_SLM, buf)) std::memcpy(&first, buf.data(), 4);
    ns.memory = first;
    first = 0;
    if (identify(t, kCnsCsiActiveList, NVME_CS_CSI_CP, buf)) std::memcpy(&first, buf.data(), 4);
    ns.compute = first;
    if (!ns.memory || !ns.compute) ns = Namespaces{};
    return ns;
}

Command memory_xfer(const Namespaces &ns, bool write, uint64_t offset, void *data, uint32_t n)
{
    Command c;
    c.opcode = write ? NVME_CS_MEM_WRITE : NVME_CS_MEM_READ;
    c.nsid = ns.memory;
    set_lo_hi(c.cdw10, c.cdw11, offset);
    c.cdw12 = n;
    c.data = data;
    c.data_len = n;
    return c;
}

Command memory_copy(const Namespaces &ns, uint32_t nsid, uint64_t slba, uint32_t nlb, uint64_t dest,
                    std::vector<uint8_t> &desc)
{
    nvme_cs_copy_src src{};
    src.snsid = nsid;
    src.slba = slba;
    src.nlb = static_cast<uint16_t>(nlb - 1);
    desc.assign(sizeof src, 0);
    std::memcpy(desc.data(), &src, sizeof src);
    Command c;
    c.opcode = NVME_CS_MEM_COPY;
    c.nsid = ns.memory;
    set_lo_hi(c.cdw10, c.cdw11, dest);
    c.cdw12 = NVME_CS_COPY_FORMAT_2 << 8;  // one range (0's based)
    c.data = desc.data();
    c.data_len = static_cast<uint32_t>(desc.size());
    return c;
}

Command nvm_copy_from_memory(const Namespaces &ns, uint32_t nsid, uint64_t slba, uint64_t offset,
                             uint32_t bytes, std::vector<uint8_t> &desc)
{
    nvme_cs_mem_range r{};
    r.nsid = ns.memory;
    r.len = bytes;
    r.sb = offset;
    desc.assign(sizeof r, 0);
    std::memcpy(desc.data(), &r, sizeof r);
    Command c;
    c.opcode = NVME_CS_NVM_COPY;
    c.nsid = nsid;
    set_lo_hi(c.cdw10, c.cdw11, slba);
    c.cdw12 = NVME_CS_COPY_FORMAT_MEMORY << 8;  // one range (0's based)
    c.data = desc.data();
    c.data_len = static_cast<uint32_t>(desc.size());
    return c;
}

Command execute_program(const Namespaces &ns, uint16_t program, const std::vector<Range> &ranges,
                        const void *params, uint32_t param_len, std::vector<uint8_t> &data)
{
    data.assign(ranges.size() * sizeof(nvme_cs_mem_range) + param_len, 0);
    for (size_t i = 0; i < ranges.size(); i++) {
        nvme_cs_mem_range r{};
        r.nsid = ns.memory;
        r.len = static_cast<uint32_t>(ranges[i].length);
        r.sb = ranges[i].offset;
        std::memcpy(data.data() + i * sizeof r, &r, sizeof r);
    }
    if (param_len) std::memcpy(data.data() + ranges.size() * sizeof(nvme_cs_mem_range), params, param_len);
    Command c;
    c.opcode = NVME_CS_EXECUTE_PROGRAM;
    c.nsid = ns.compute;
    c.cdw2 = program;  // RSID 0: the ranges are inline
    c.cdw3 = static_cast<uint32_t>(ranges.size());
    c.cdw15 = static_cast<uint32_t>(data.size());  // CDW4 is not settable through Linux passthrough
    c.data = data.empty() ? nullptr : data.data();
    c.data_len = static_cast<uint32_t>(data.size());
    return c;
}

Command load_program(const Namespaces &ns, uint16_t index, uint32_t size, uint32_t record_size,
                     uint32_t offset, const void *chunk, uint32_t n)
{
    Command c;
    c.admin = true;
    c.opcode = NVME_CS_ADM_LOAD_PROGRAM;
    c.nsid = ns.compute;
    c.cdw10 = index | NVME_CS_PROGRAM_TYPE_EBPF << 16;
    c.cdw11 = size;
    c.cdw12 = record_size & 0xffffu;  // the program identifier's low half [P]
    c.cdw14 = n;
    c.cdw15 = offset;
    c.data = const_cast<void *>(chunk);
    c.data_len = n;
    return c;
}

Command unload_program(const Namespaces &ns, uint16_t index)
{
    Command c;
    c.admin = true;
    c.opcode = NVME_CS_ADM_LOAD_PROGRAM;
    c.nsid = ns.compute;
    c.cdw10 = index | NVME_CS_LOAD_UNLOAD;
    return c;
}

Command program_activation(const Namespaces &ns, uint16_t index, bool activate)
{
    Command c;
    c.admin = true;
    c.opcode = NVME_CS_ADM_PROGRAM_ACTIVATION;
    c.nsid = ns.compute;
    c.cdw10 = index | (activate ? 0 : NVME_CS_PAM_DEACTIVATE);
    return c;
}

}  // namespace csd::nvme_cs
