// core.cc - the device core object: SLM, statistics, log pages, execute descriptors.
#include <sys/mman.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <new>

#include "csd_core.h"
#include "program.h"
#include "programs/checksum_impl.h"

namespace csd {

const ProgramInfo *program_table(size_t *count)
{
    static const ProgramInfo table[] = {
        {CSD_PROG_COPY, "copy", program_copy, -1},
        {CSD_PROG_GEMM, "gemm", program_gemm, -1},
        {CSD_PROG_ELEMENTWISE, "elementwise", program_elementwise, -1},
        {CSD_PROG_SOFTMAX, "softmax", program_softmax, -1},
        {CSD_PROG_REDUCE, "reduce", program_reduce, -1},
        {CSD_PROG_FILTER, "filter", program_filter, -1},
        {CSD_PROG_CONVERT, "convert", program_convert, -1},
        {CSD_PROG_CHECKSUM, "checksum", program_checksum, -1},
        {CSD_PROG_CONV2D, "conv2d", program_conv2d, 2},
        {CSD_PROG_DECOMPRESS, "decompress", program_decompress, -1},
    };
    *count = sizeof(table) / sizeof(table[0]);
    return table;
}

const ProgramInfo *find_program(uint16_t id)
{
    size_t n;
    const ProgramInfo *t = program_table(&n);
    for (size_t i = 0; i < n; i++) {
        if (t[i].id == id) {
            return &t[i];
        }
    }
    return nullptr;
}

}  // namespace csd

using csd::ExecResult;

struct csd_core {
    uint8_t *slm = nullptr;
    uint64_t slm_size = 0;
    uint32_t compute_units = 0;
    std::atomic<uint64_t> stats[CSD_STAT_COUNT] = {};
    std::atomic<uint64_t> per_program[256] = {};
};

struct csd_exec {
    const csd::ProgramInfo *program = nullptr;
    csd::Span ranges[CSD_MAX_RANGES];
    uint32_t nr_ranges = 0;
    uint8_t params[CSD_MAX_DESC_LEN];
    uint32_t param_len = 0;
};

extern "C" {

csd_core *csd_core_new(uint64_t slm_size, uint32_t compute_units)
{
    if (slm_size == 0 || compute_units == 0) {
        errno = EINVAL;
        return nullptr;
    }
    auto *core = new (std::nothrow) csd_core;
    if (!core) {
        errno = ENOMEM;
        return nullptr;
    }
    // Anonymous memory: zero-filled, and only pages that are touched cost RAM.
    void *mem = mmap(nullptr, slm_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (mem == MAP_FAILED) {
        delete core;
        errno = ENOMEM;
        return nullptr;
    }
    core->slm = static_cast<uint8_t *>(mem);
    core->slm_size = slm_size;
    core->compute_units = compute_units;
    return core;
}

void csd_core_free(csd_core *core)
{
    if (core) {
        munmap(core->slm, core->slm_size);
        delete core;
    }
}

uint64_t csd_core_slm_size(const csd_core *core) { return core->slm_size; }

uint16_t csd_core_slm_range(csd_core *core, uint64_t offset, uint64_t length, uint8_t **ptr)
{
    if (offset > core->slm_size || length > core->slm_size - offset) {
        return CSD_STATUS_SLM_OUT_OF_BOUNDS | CSD_STATUS_DNR;
    }
    *ptr = core->slm + offset;
    return CSD_STATUS_SUCCESS;
}

uint16_t csd_core_check_slm_xfer(uint64_t offset, uint32_t length)
{
    if (length == 0 || (length % 4) != 0 || (offset % 4) != 0) {
        return CSD_STATUS_INVALID_FIELD | CSD_STATUS_DNR;
    }
    return CSD_STATUS_SUCCESS;
}

void csd_core_stat_add(csd_core *core, enum csd_stat which, uint64_t n)
{
    if (which < CSD_STAT_COUNT) {
        core->stats[which].fetch_add(n, std::memory_order_relaxed);
    }
}

uint32_t csd_core_max_desc_len(void) { return CSD_MAX_DESC_LEN; }

void csd_core_log_capabilities(const csd_core *core, uint8_t page[CSD_LOG_PAGE_SIZE])
{
    std::memset(page, 0, CSD_LOG_PAGE_SIZE);
    size_t n;
    const csd::ProgramInfo *t = csd::program_table(&n);
    csd_caps_log hdr{};
    std::memcpy(hdr.magic, "CSD1", 4);
    hdr.version = CSD_LOG_VERSION;
    hdr.slm_size = core->slm_size;
    hdr.compute_units = core->compute_units;
    hdr.max_desc_len = CSD_MAX_DESC_LEN;
    hdr.max_ranges = CSD_MAX_RANGES;
    hdr.nr_programs = static_cast<uint32_t>(n);
    std::memcpy(page, &hdr, sizeof(hdr));
    for (size_t i = 0; i < n; i++) {
        csd_caps_entry e{};
        e.id = t[i].id;
        e.type = 0;
        std::strncpy(e.name, t[i].name, sizeof(e.name) - 1);
        std::memcpy(page + sizeof(hdr) + i * sizeof(e), &e, sizeof(e));
    }
}

void csd_core_log_statistics(const csd_core *core, uint8_t page[CSD_LOG_PAGE_SIZE])
{
    std::memset(page, 0, CSD_LOG_PAGE_SIZE);
    std::memcpy(page, "CSDS", 4);
    const uint32_t version = CSD_LOG_VERSION;
    std::memcpy(page + 4, &version, 4);
    for (int i = 0; i < CSD_STAT_COUNT; i++) {
        const uint64_t v = core->stats[i].load(std::memory_order_relaxed);
        std::memcpy(page + CSD_STATS_COUNTERS_OFFSET + 8 * i, &v, 8);
    }
    for (int i = 0; i < 256; i++) {
        const uint64_t v = core->per_program[i].load(std::memory_order_relaxed);
        std::memcpy(page + CSD_STATS_PER_PROGRAM_OFFSET + 8 * i, &v, 8);
    }
}

static uint16_t exec_prepare(csd_core *core, const uint8_t *d, uint32_t len, csd_exec **out)
{
    csd_desc_header h;
    if (len < sizeof(h) || len > CSD_MAX_DESC_LEN) {
        return CSD_STATUS_INVALID_DESCRIPTOR | CSD_STATUS_DNR;
    }
    std::memcpy(&h, d, sizeof(h));
    if (std::memcmp(h.magic, CSD_DESC_MAGIC, 4) != 0 || h.version != CSD_DESC_VERSION || h.flags != 0 ||
        h.nr_ranges == 0 || h.nr_ranges > CSD_MAX_RANGES ||
        uint64_t{CSD_DESC_HEADER_SIZE} + uint64_t{CSD_DESC_RANGE_SIZE} * h.nr_ranges + h.param_len != len) {
        return CSD_STATUS_INVALID_DESCRIPTOR | CSD_STATUS_DNR;
    }
    const csd::ProgramInfo *prog = csd::find_program(h.program_id);
    if (!prog) {
        return CSD_STATUS_INVALID_PROGRAM | CSD_STATUS_DNR;
    }
    auto *job = new (std::nothrow) csd_exec;
    if (!job) {
        return CSD_STATUS_INTERNAL_ERROR;
    }
    job->program = prog;
    job->nr_ranges = h.nr_ranges;
    for (uint32_t i = 0; i < h.nr_ranges; i++) {
        csd_desc_range r;
        std::memcpy(&r, d + CSD_DESC_HEADER_SIZE + CSD_DESC_RANGE_SIZE * i, sizeof(r));
        if (r.length == 0) {
            if (static_cast<int>(i) != prog->zero_length_range) {
                delete job;
                return CSD_STATUS_INVALID_PARAMETERS | CSD_STATUS_DNR;
            }
            job->ranges[i] = csd::Span{};  // its offset is ignored
            continue;
        }
        uint8_t *p;
        const uint16_t st = csd_core_slm_range(core, r.offset, r.length, &p);
        if (st != CSD_STATUS_SUCCESS) {
            delete job;
            return st;
        }
        job->ranges[i] = csd::Span{p, r.length};
    }
    job->param_len = h.param_len;
    std::memcpy(job->params, d + CSD_DESC_HEADER_SIZE + CSD_DESC_RANGE_SIZE * h.nr_ranges, h.param_len);
    *out = job;
    return CSD_STATUS_SUCCESS;
}

uint16_t csd_core_exec_prepare(csd_core *core, const void *desc, uint32_t len, csd_exec **exec)
{
    *exec = nullptr;
    const uint16_t st = exec_prepare(core, static_cast<const uint8_t *>(desc), len, exec);
    if (st != CSD_STATUS_SUCCESS) {
        csd_core_stat_add(core, CSD_STAT_EXEC_ERRORS, 1);
    }
    return st;
}

uint16_t csd_core_exec_run(csd_core *core, csd_exec *exec, const int *cancel, uint32_t *dw0, uint32_t *dw1)
{
    csd::ProgramCall call;
    call.cancel = cancel;
    call.ranges = exec->ranges;
    call.nr_ranges = exec->nr_ranges;
    call.params = exec->params;
    call.param_len = exec->param_len;
    const auto start = std::chrono::steady_clock::now();
    ExecResult r;
    try {
        r = exec->program->run(call);
    } catch (const std::bad_alloc &) {
        r = csd::fail(CSD_STATUS_INTERNAL_ERROR);
    }
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start);
    csd_core_stat_add(core, CSD_STAT_EXEC_BUSY_NS, static_cast<uint64_t>(ns.count()));
    core->per_program[exec->program->id & 0xFF].fetch_add(1, std::memory_order_relaxed);
    if (r.status != CSD_STATUS_SUCCESS) {
        csd_core_stat_add(core, CSD_STAT_EXEC_ERRORS, 1);
    }
    *dw0 = r.dw0;
    *dw1 = r.dw1;
    delete exec;
    return r.status;
}

void csd_core_exec_discard(csd_core *core, csd_exec *exec)
{
    if (exec) {
        csd_core_stat_add(core, CSD_STAT_EXEC_ERRORS, 1);
        delete exec;
    }
}

uint16_t csd_exec_program_id(const csd_exec *exec) { return exec->program->id; }

const char *csd_program_name(uint16_t id)
{
    const csd::ProgramInfo *p = csd::find_program(id);
    return p ? p->name : nullptr;
}

uint32_t csd_crc32c(const void *data, uint64_t len)
{
    return csd::crc32c(static_cast<const uint8_t *>(data), len);
}

const char *csd_status_name(uint16_t status)
{
    switch (CSD_STATUS_CODE(status)) {
    case CSD_STATUS_SUCCESS: return "Success";
    case CSD_STATUS_INVALID_OPCODE: return "Invalid Command Opcode";
    case CSD_STATUS_INVALID_FIELD: return "Invalid Field in Command";
    case CSD_STATUS_DATA_TRANSFER_ERROR: return "Data Transfer Error";
    case CSD_STATUS_INTERNAL_ERROR: return "Internal Error";
    case CSD_STATUS_ABORT_REQUESTED: return "Command Abort Requested";
    case CSD_STATUS_LBA_OUT_OF_RANGE: return "LBA Out of Range";
    case CSD_STATUS_INVALID_PROGRAM: return "Invalid Program";
    case CSD_STATUS_INVALID_DESCRIPTOR: return "Invalid Descriptor";
    case CSD_STATUS_SLM_OUT_OF_BOUNDS: return "SLM Range Out of Bounds";
    case CSD_STATUS_INVALID_PARAMETERS: return "Invalid Parameters";
    case CSD_STATUS_OUTPUT_OVERFLOW: return "Output Overflow";
    case CSD_STATUS_PROGRAM_FAULT: return "Program Fault";
    default: return "Unknown Status";
    }
}

}  // extern "C"
