// SPDX-License-Identifier: MIT
// program.cc - csd::Program: Program Load / Unload and Executes of a downloaded program.
#include "csd/program.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>

namespace csd {

namespace {

std::vector<uint8_t> read_file(const std::string &path)
{
    std::ifstream f(path, std::ios::binary);
    if (!f) throw Error("program image " + path, errno ? errno : ENOENT);
    return std::vector<uint8_t>((std::istreambuf_iterator<char>(f)), {});
}

}  // namespace

std::vector<uint8_t> downloaded_program_params(uint32_t count, uint32_t mode, const std::vector<uint64_t> &params,
                                               uint32_t index_base)
{
    if (params.size() > CSD_BPF_MAX_PARAMS) {
        throw Error("a downloaded program takes at most " + std::to_string(CSD_BPF_MAX_PARAMS) + " parameters, not " +
                        std::to_string(params.size()),
                    EINVAL);
    }
    const csd_bpf_params h{count, mode, static_cast<uint32_t>(params.size()), index_base};
    std::vector<uint8_t> v(sizeof h + 8 * params.size());
    std::memcpy(v.data(), &h, sizeof h);
    if (!params.empty()) std::memcpy(v.data() + sizeof h, params.data(), 8 * params.size());
    return v;
}

Program::Program(Device &dev, const std::vector<uint8_t> &image, uint32_t record_size, uint16_t slot)
    : dev_(&dev), record_size_(record_size)
{
    if (image.size() > UINT32_MAX) throw Error("program image larger than 4 GiB", EINVAL);
    id_ = dev.program_load(image.data(), static_cast<uint32_t>(image.size()), record_size, slot);
}

Program::Program(Device &dev, const std::string &path, uint32_t record_size, uint16_t slot)
    : Program(dev, read_file(path), record_size, slot)
{
}

Program Program::attach(Device &dev, uint16_t slot, uint32_t record_size) { return Program(dev, slot, record_size); }

Program::Program(Program &&o) noexcept : dev_(o.dev_), id_(o.id_), record_size_(o.record_size_), kept_(o.kept_)
{
    o.dev_ = nullptr;
}

Program &Program::operator=(Program &&o) noexcept
{
    if (this != &o) {
        try {
            if (dev_ && !kept_) unload();
        } catch (const Error &) {
        }
        dev_ = o.dev_;
        id_ = o.id_;
        record_size_ = o.record_size_;
        kept_ = o.kept_;
        o.dev_ = nullptr;
    }
    return *this;
}

Program::~Program()
{
    if (!dev_ || kept_) return;
    try {
        unload();
    } catch (const Error &) {
        // the device went away or the slot is busy: nothing a destructor can do
    }
}

void Program::unload()
{
    if (!dev_) return;
    Device *d = dev_;
    dev_ = nullptr;
    d->program_unload(id_);
}

std::string Program::name() const
{
    const ProgramInfo *p = dev_ ? dev_->caps().program(id_) : nullptr;
    return p ? p->name : std::string();
}

ExecResult Program::run(uint32_t mode, Range records, Range out, uint32_t count, const std::vector<uint64_t> &params,
                        uint32_t index_base)
{
    if (!dev_) throw Error("program " + std::to_string(id_) + " was unloaded", EBADF);
    const auto p = downloaded_program_params(count, mode, params, index_base);
    if (mode == CSD_BPF_CHASE) return dev_->execute(id_, {records}, p.data(), static_cast<uint32_t>(p.size()));  // out only
    return dev_->execute(id_, {records, out}, p.data(), static_cast<uint32_t>(p.size()));
}

FilterResult Program::run_filter(Range records, Range out, uint32_t count, const std::vector<uint64_t> &params,
                                 uint32_t index_base)
{
    const ExecResult r = run(CSD_BPF_FILTER, records, out, count, params, index_base);
    return {r.dw0, r.dw1};
}

void Program::run_map(Range records, Range out, uint32_t count, const std::vector<uint64_t> &params,
                      uint32_t index_base)
{
    run(CSD_BPF_MAP, records, out, count, params, index_base);
}

uint64_t Program::run_reduce(Range records, uint32_t count, const std::vector<uint64_t> &params, uint32_t index_base)
{
    const ExecResult r = run(CSD_BPF_REDUCE, records, Range{}, count, params, index_base);
    return r.dw0 | static_cast<uint64_t>(r.dw1) << 32;
}

// Runs the chase into out (a buffer of its own when out is empty); keeps that buffer in own.
static ExecResult chase(Program &prog, Device &dev, uint64_t start_lba, const std::vector<uint64_t> &params,
                        uint32_t max_hops, Range &out, SlmBuffer &own)
{
    std::vector<uint64_t> p{start_lba};
    p.insert(p.end(), params.begin(), params.end());
    if (out.length == 0) {
        own = dev.slm().alloc(sizeof(csd_bpf_chase_result));
        out = range(own);
    }
    return prog.run(CSD_BPF_CHASE, out, Range{}, max_hops, p);
}

ChaseResult Program::run_chase(uint64_t start_lba, const std::vector<uint64_t> &params, uint32_t max_hops, Range out)
{
    if (!dev_) throw Error("program " + std::to_string(id_) + " was unloaded", EBADF);
    SlmBuffer own;
    const ExecResult r = chase(*this, *dev_, start_lba, params, max_hops, out, own);
    csd_bpf_chase_result res{};
    dev_->slm_read(out.offset, &res, sizeof res);
    if (res.value != (r.dw0 | static_cast<uint64_t>(r.dw1) << 32)) throw Error("chase result and completion differ", EIO);
    return {res.value, res.hops};
}

uint64_t Program::chase_value(uint64_t start_lba, const std::vector<uint64_t> &params, uint32_t max_hops)
{
    if (!dev_) throw Error("program " + std::to_string(id_) + " was unloaded", EBADF);
    SlmBuffer own;
    Range out{};
    const ExecResult r = chase(*this, *dev_, start_lba, params, max_hops, out, own);
    return r.dw0 | static_cast<uint64_t>(r.dw1) << 32;
}

}  // namespace csd
