// SPDX-License-Identifier: MIT
// execute.cc - Execute: a transferred descriptor becomes a job (spec §4), a job runs.
#include <chrono>
#include <cstring>
#include <new>

#include "core_state.h"
#include "program.h"

namespace core = csd::core;

struct csd_exec {
    csd_core *core = nullptr;
    uint16_t id = 0;
    const core::ProgramInfo *program = nullptr;         // device-defined
    const csd_plugin *plugin = nullptr;                 // operator plug-in
    std::shared_ptr<const core::BpfProgram> bpf;        // downloaded (slot held until the job ends)
    core::Span ranges[CSD_MAX_RANGES];
    uint32_t nr_ranges = 0;
    uint8_t params[CSD_MAX_DESC_LEN];
    uint32_t param_len = 0;
    uint16_t cs_rsid = 0;  // the standard front end's range set it holds, 0 if none
    core::MediaPlan media;  // a media program's reads (program->plan); a chase's namespace and status
    // A downloaded program's chase (mode 3): one block read per hop, the program on each.
    struct Chase {
        bool on = false;          // the Execute asks for mode 3
        uint32_t limit = 0;       // the hop limit (record_count, checked)
        uint64_t next = 0;        // the LBA to read next (or the one refused)
        uint32_t hops = 0;        // blocks read and given to the program
        bool done = false;        // the program answered "done"
        uint64_t value = 0;       // ... with this value
        std::vector<uint8_t> block;  // the block being read
        csd_extent ext{};
    } chase;
};

namespace csd::core {

void exec_hold_range_set(csd_exec *job, uint16_t rsid) { job->cs_rsid = rsid; }

namespace {
// Whether the job's program reads the namespace itself (a media program, or a chase).
bool reads_media(const csd_exec *job) { return job->chase.on || (job->program && job->program->plan); }
}  // namespace

bool exec_needs_plan(const csd_exec *job) { return reads_media(job) && !job->media.have_ns; }

uint64_t exec_held_bytes(const csd_exec *job) { return sizeof *job + job->media.held_bytes(); }

namespace {

// The program's view of a job: its ranges and parameters (cancel as given).
ProgramCall program_call(const csd_exec *job, const int *cancel)
{
    ProgramCall call{};
    call.cancel = cancel;
    call.ranges = job->ranges;
    call.nr_ranges = job->nr_ranges;
    call.params = job->params;
    call.param_len = job->param_len;
    return call;
}

// A media program's run: its plan's error, or the program over the staged blocks.
ExecResult media_run(csd_exec *job, const ProgramCall &call)
{
    const MediaPlan &m = job->media;
    if (!m.have_ns) return fail(CSD_STATUS_INVALID_NAMESPACE);  // no NVM namespace named
    if (m.status != CSD_STATUS_SUCCESS) return {m.status, 0, 0};
    if (!m.extents.empty() && !m.issued) return fail(CSD_STATUS_INTERNAL_ERROR);  // not read
    return job->program->media_run(call, m);
}

// A chase's run once csd_exec_media walked it: its error (Hop Limit Exceeded and LBA Out of
// Range with DW0/DW1 = the LBA the program named), or the result into out.
ExecResult chase_run(csd_exec *job, const ProgramCall &call)
{
    if (const ExecResult r = job->bpf->check(call, nullptr); r.status) return r;
    const MediaPlan &m = job->media;
    const auto &c = job->chase;
    if (!m.have_ns) return fail(CSD_STATUS_INVALID_NAMESPACE);  // no NVM namespace named
    if (m.status != CSD_STATUS_SUCCESS) {
        const uint16_t code = CSD_STATUS_CODE(m.status);
        const bool lba = code == CSD_STATUS_HOP_LIMIT_EXCEEDED || code == CSD_STATUS_LBA_OUT_OF_RANGE;
        return {m.status, lba ? static_cast<uint32_t>(c.next) : 0, lba ? static_cast<uint32_t>(c.next >> 32) : 0};
    }
    if (!c.done) return fail(CSD_STATUS_INTERNAL_ERROR);  // not walked
    const csd_bpf_chase_result res{c.value, c.hops, 0};
    std::memcpy(call.ranges[0].data, &res, sizeof(res));
    return ok(static_cast<uint32_t>(c.value), static_cast<uint32_t>(c.value >> 32));
}

// The chase's next round: the program on the block just read (if any), then the next block.
uint32_t chase_media(csd_exec *job, const csd_extent **ext)
{
    MediaPlan &m = job->media;
    auto &c = job->chase;
    if (m.issued) {  // the block at c.next is in c.block
        m.issued = false;
        const uint64_t r = job->bpf->hop(program_call(job, nullptr), c.block.data(), c.hops,
                                         job->core->bpf_interpreted.load() != 0);
        c.hops++;
        if (r & CSD_BPF_CHASE_DONE) {
            c.done = true;
            c.value = r & ~CSD_BPF_CHASE_DONE;
            return 0;
        }
        c.next = r;
        if (c.hops >= c.limit) {
            m.status = CSD_STATUS_HOP_LIMIT_EXCEEDED | CSD_STATUS_DNR;
            return 0;
        }
        if (r >= m.ns.lba_count) {
            m.status = CSD_STATUS_LBA_OUT_OF_RANGE | CSD_STATUS_DNR;  // nothing read outside
            return 0;
        }
    }
    c.block.resize(m.ns.lba_size);
    c.ext = csd_extent{c.next, 1, c.block.data()};
    m.issued = true;
    *ext = &c.ext;
    return 1;
}

// A chase given its namespace: its checks, the record against the block, the start LBA.
void chase_set_namespace(csd_exec *job)
{
    MediaPlan &m = job->media;
    auto &c = job->chase;
    const ProgramCall call = program_call(job, nullptr);
    if (const ExecResult r = job->bpf->check(call, nullptr); r.status) {
        m.status = r.status;
        return;
    }
    csd_bpf_params h;
    std::memcpy(&h, job->params, sizeof(h));
    std::memcpy(&c.next, job->params + sizeof(h), 8);  // params[0]: the start LBA
    c.limit = h.record_count;
    if (job->bpf->record_size() > m.ns.lba_size) m.status = CSD_STATUS_INVALID_PARAMETERS | CSD_STATUS_DNR;
    else if (c.next >= m.ns.lba_count) m.status = CSD_STATUS_LBA_OUT_OF_RANGE | CSD_STATUS_DNR;
}

}  // namespace

}  // namespace csd::core

uint16_t core::exec_prepare(csd_core *core, const void *desc, uint32_t len, csd_exec **exec, bool need_active)
{
    *exec = nullptr;
    csd_desc_header h;
    uint16_t st = csd_desc_parse(desc, len, CSD_MAX_RANGES, &h);
    if (st != CSD_STATUS_SUCCESS) {
        return st;
    }
    auto *job = new (std::nothrow) csd_exec;
    if (!job) {
        return CSD_STATUS_INTERNAL_ERROR;
    }
    job->core = core;
    job->id = h.program_id;
    job->program = core::find_program(h.program_id);
    job->plugin = job->program ? nullptr : core->plugins.find(h.program_id);
    int zero_length_range = job->program ? job->program->zero_length_range
                            : job->plugin ? job->plugin->zero_length_range
                                          : 1;  // a downloaded reduce's out
    if (job->plugin && job->plugin->param_len != CSD_PLUGIN_ANY_PARAMS && job->plugin->param_len != h.param_len) {
        delete job;
        return CSD_STATUS_INVALID_PARAMETERS | CSD_STATUS_DNR;
    }
    if (!job->program && !job->plugin) {
        bool inactive = false;
        job->bpf = core->slots.acquire(h.program_id, need_active, &inactive);
        if (!job->bpf) {
            delete job;
            return inactive ? NVME_CS_PROGRAM_NOT_ACTIVATED | CSD_STATUS_DNR : CSD_STATUS_INVALID_PROGRAM | CSD_STATUS_DNR;
        }
    }
    job->nr_ranges = h.nr_ranges;
    for (uint32_t i = 0; i < h.nr_ranges; i++) {
        const csd_desc_range r = csd_desc_range_get(desc, i);
        if (r.length == 0) {
            if (static_cast<int>(i) != zero_length_range) {
                csd_core_exec_discard(job);
                return CSD_STATUS_INVALID_PARAMETERS | CSD_STATUS_DNR;
            }
            job->ranges[i] = core::Span{};  // its offset is ignored
            continue;
        }
        uint8_t *p;
        st = csd_core_slm_range(core, r.offset, r.length, &p);
        if (st != CSD_STATUS_SUCCESS) {
            csd_core_exec_discard(job);
            return st;
        }
        job->ranges[i] = core::Span{p, r.length};
    }
    job->param_len = h.param_len;
    std::memcpy(job->params, csd_desc_params(desc, h.nr_ranges), h.param_len);
    if (job->bpf && h.param_len >= sizeof(csd_bpf_params)) {
        csd_bpf_params bp;
        std::memcpy(&bp, job->params, sizeof(bp));
        job->chase.on = bp.mode == CSD_BPF_CHASE;
    }
    *exec = job;
    return CSD_STATUS_SUCCESS;
}

extern "C" {

uint16_t csd_core_exec_prepare(csd_core *core, const void *desc, uint32_t len, csd_exec **exec)
{
    return core::exec_prepare(core, desc, len, exec, false);
}

uint16_t csd_core_exec_run(csd_core *core, csd_exec *exec, const int *cancel, uint32_t *dw0, uint32_t *dw1)
{
    static const int never = 0;  // programs may always read *cancel
    const core::ProgramCall call = core::program_call(exec, cancel ? cancel : &never);
    const auto start = std::chrono::steady_clock::now();
    core::ExecResult r{};
    try {
        r = exec->program && exec->program->media_run ? core::media_run(exec, call)
            : exec->program                           ? exec->program->run(call)
            : exec->chase.on                          ? core::chase_run(exec, call)
            : exec->plugin ? exec->plugin->run(&call)
                           : exec->bpf->run(call, core->bpf_interpreted.load() != 0);
    } catch (const std::bad_alloc &) {
        r = core::fail(CSD_STATUS_INTERNAL_ERROR);
    }
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start);
    core::count(core, CSD_STAT_EXEC_BUSY_NS, static_cast<uint64_t>(ns.count()));
    core->per_program[exec->id % CSD_STATS_PER_PROGRAM_COUNT].fetch_add(1, std::memory_order_relaxed);
    *dw0 = r.dw0;
    *dw1 = r.dw1;
    csd_core_exec_discard(exec);
    return r.status;
}

void csd_core_exec_discard(csd_exec *exec)
{
    if (exec->cs_rsid) core::release_range_set(exec->core, exec->cs_rsid);
    if (exec->bpf) {
        exec->bpf.reset();
        exec->core->slots.release(exec->id);
    }
    delete exec;
}

uint16_t csd_exec_program_id(const csd_exec *exec) { return exec->id; }

void csd_exec_set_namespace(csd_exec *exec, const csd_ctx *ns)
{
    core::MediaPlan &m = exec->media;
    if (!core::reads_media(exec) || m.have_ns) return;
    m.have_ns = true;
    m.ns = *ns;
    if (ns->lba_size == 0 || ns->metadata) {  // no namespace, or metadata / PI it would ignore
        m.status = CSD_STATUS_INVALID_NAMESPACE | CSD_STATUS_DNR;
        return;
    }
    if (exec->chase.on) {
        core::chase_set_namespace(exec);
        return;
    }
    static const int never = 0;
    try {
        m.status = exec->program->plan(core::program_call(exec, &never), &m);
        if (m.status == CSD_STATUS_SUCCESS) m.status = m.runs();
    } catch (const std::bad_alloc &) {
        m.status = CSD_STATUS_INTERNAL_ERROR | CSD_STATUS_DNR;
    }
}

uint32_t csd_exec_media(csd_exec *exec, uint16_t status, const int *cancel, const csd_extent **ext)
{
    core::MediaPlan &m = exec->media;
    *ext = nullptr;
    if (!core::reads_media(exec) || !m.have_ns) return 0;
    if (status != CSD_STATUS_SUCCESS && m.status == CSD_STATUS_SUCCESS) m.status = status;
    if (core::cancelled(cancel) && m.status == CSD_STATUS_SUCCESS) m.status = CSD_STATUS_ABORT_REQUESTED;
    if (m.status != CSD_STATUS_SUCCESS) return 0;
    if (exec->chase.on) {
        if (exec->chase.done) return 0;
        try {
            return core::chase_media(exec, ext);
        } catch (const std::bad_alloc &) {
            m.status = CSD_STATUS_INTERNAL_ERROR | CSD_STATUS_DNR;
            return 0;
        }
    }
    if (m.issued || m.extents.empty()) return 0;
    try {
        m.allocate();
    } catch (const std::bad_alloc &) {
        m.status = CSD_STATUS_INTERNAL_ERROR | CSD_STATUS_DNR;
        return 0;
    }
    m.issued = true;
    *ext = m.extents.data();
    return static_cast<uint32_t>(m.extents.size());
}

}  // extern "C"

extern "C" void csd_exec_model_work(const csd_exec *job, csd_model_work *w)
{
    // Only the work the program's own checks accept, the ones its run makes first: a job
    // the run will refuse costs nothing here (its decode, the descriptor, is the caller's),
    // whether the embedding asks before the run, as it must to schedule on arrival, or
    // not at all. A plug-in's checks are inside its run: it costs its ranges' bytes.
    static const int never = 0;
    const core::ProgramCall call = core::program_call(job, &never);
    core::ProgramWork work;
    const core::ExecResult checked = job->program ? job->program->check(call, &work)
                                     : job->bpf   ? job->bpf->check(call, &work)
                                                  : core::ok();
    if (checked.status != CSD_STATUS_SUCCESS) return;
    uint64_t bytes = 0;
    for (uint32_t i = 0; i < job->nr_ranges; i++) bytes += job->ranges[i].len;
    w->compute = 1;
    w->slm = bytes;
    w->flops = work.flops;
    w->stream_bytes = work.flops > 0 ? 0 : bytes;  // compute-bound: its bytes go through SLM alongside
    w->records = work.records;  // at most what the input range holds (checked)
    if (job->program && job->program->plan && job->media.have_ns && job->media.status == CSD_STATUS_SUCCESS &&
        job->media.bytes()) {
        // its distinct block runs, read in parallel: their latencies overlap, their bytes queue
        w->media_read_op = 1;
        w->media_read += job->media.bytes();
    }
    if (job->chase.on && job->media.have_ns && job->media.status == CSD_STATUS_SUCCESS) {
        w->media_read_op = 1;  // the first hop's block (the others: csd_exec_model_finish)
        w->media_read += job->media.ns.lba_size;
    }
}

extern "C" uint64_t csd_exec_model_finish(const csd_exec *job, uint64_t finish_ns)
{
    const auto &c = job->chase;
    if (!finish_ns || !c.on || c.hops < 2) return finish_ns;
    return job->core->model.dependent_reads(finish_ns, c.hops - 1, job->media.ns.lba_size);
}
