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
};

namespace csd::core {

void exec_hold_range_set(csd_exec *job, uint16_t rsid) { job->cs_rsid = rsid; }

}  // namespace csd::core

extern "C" {

uint16_t csd_core_exec_prepare(csd_core *core, const void *desc, uint32_t len, csd_exec **exec)
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
        job->bpf = core->slots.acquire(h.program_id);
        if (!job->bpf) {
            delete job;
            return CSD_STATUS_INVALID_PROGRAM | CSD_STATUS_DNR;
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
    *exec = job;
    return CSD_STATUS_SUCCESS;
}

uint16_t csd_core_exec_run(csd_core *core, csd_exec *exec, const int *cancel, uint32_t *dw0, uint32_t *dw1)
{
    static const int never = 0;  // programs may always read *cancel
    core::ProgramCall call{};
    call.cancel = cancel ? cancel : &never;
    call.ranges = exec->ranges;
    call.nr_ranges = exec->nr_ranges;
    call.params = exec->params;
    call.param_len = exec->param_len;
    const auto start = std::chrono::steady_clock::now();
    core::ExecResult r{};
    try {
        r = exec->program  ? exec->program->run(call)
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

}  // extern "C"

extern "C" void csd_exec_model_work(const csd_exec *job, csd_model_work *w)
{
    w->compute = 1;
    uint64_t bytes = 0;
    for (uint32_t i = 0; i < job->nr_ranges; i++) bytes += job->ranges[i].len;
    w->stream_bytes = bytes;
    w->slm = bytes;
    if (job->id == CSD_PROG_GEMM && job->param_len >= sizeof(csd_gemm_params)) {
        csd_gemm_params g;
        std::memcpy(&g, job->params, sizeof g);
        // The flops of a gemm whose matrices fit its ranges; one that does not fails at once
        // (Invalid Parameters) and costs only its bytes, like the program itself.
        const double a = double(g.m) * g.k * 4, b = double(g.k) * g.n * 4, c = double(g.m) * g.n * 4;
        if (job->nr_ranges >= 3 && a <= double(job->ranges[0].len) && b <= double(job->ranges[1].len) &&
            c <= double(job->ranges[2].len)) {
            w->flops = 2.0 * g.m * g.n * g.k;
            w->stream_bytes = 0;  // compute-bound: its bytes go through SLM alongside
        }
    } else if (job->id == CSD_PROG_CONV2D && job->param_len >= sizeof(csd_conv2d_params) && job->nr_ranges >= 4) {
        csd_conv2d_params c;
        std::memcpy(&c, job->params, sizeof c);
        const double out_elems = static_cast<double>(job->ranges[3].len) / 4;  // float32 output
        w->flops = 2.0 * out_elems * c.c * c.r * c.s;
        w->stream_bytes = 0;
    } else if (job->bpf && job->param_len >= sizeof(csd_bpf_params)) {
        csd_bpf_params b;
        std::memcpy(&b, job->params, sizeof b);
        w->records = b.record_count;
    }
}
