// SPDX-License-Identifier: MIT
// c_api.cc - the C API over the C++ library: exceptions become negative errno values
// plus a per-thread message and NVMe status.
#include "csd.h"

#include <cerrno>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "csd/device.hpp"
#include "csd/program.hpp"
#include "csd/programs.hpp"
#include "csd/store.hpp"
#include "csd/store_io.hpp"
#include "fork_hold.hpp"

// One open device, shared by the caller's threads: mu guards the allocations and the store
// pointer, held only to change them (no other lock is taken under it: stores and buffers are
// made and dropped outside it), and held still across fork() (a child may go on using the
// device). A call holds its own reference to the store, so a format on another thread does
// not free the store under it.
struct csd_dev {
    csd_dev()
    {
        csd::fork_hold_add(this, csd::ForkLevel::allocator, [this] { mu.lock(); }, [this](bool) { mu.unlock(); });
    }
    ~csd_dev() { csd::fork_hold_remove(this); }
    std::unique_ptr<csd::Device> dev;
    std::mutex mu;
    std::map<uint64_t, csd::SlmBuffer> allocations;
    std::shared_ptr<csd::ObjectStore> store;
};

namespace {

thread_local std::string g_error;
thread_local uint16_t g_status;

template <class F>
int guard(F &&f)
{
    try {
        f();
        return 0;
    } catch (const csd::Error &e) {
        g_error = e.what();
        g_status = e.status();
        return e.status() ? -EIO : -(e.errnum() ? e.errnum() : EIO);
    } catch (const std::bad_alloc &) {
        g_error = "out of host memory";
        g_status = 0;
        return -ENOMEM;
    } catch (const std::exception &e) {
        g_error = e.what();
        g_status = 0;
        return -EIO;
    }
}

int bad_arg(const char *what)
{
    g_error = what;
    g_status = 0;
    return -EINVAL;
}

// The device's store, opened on first use (one kept, whatever the threads), held for the call.
std::shared_ptr<csd::ObjectStore> store_of(csd_dev *d)
{
    {
        std::lock_guard<std::mutex> g(d->mu);
        if (d->store) return d->store;
    }
    auto made = std::make_shared<csd::ObjectStore>(*d->dev);  // reads the superblock: not under mu
    std::lock_guard<std::mutex> g(d->mu);
    if (!d->store) d->store = std::move(made);
    return d->store;  // another thread's, if it was first: made goes when this returns
}

// The C++ StreamOptions of a csd_stream_opts (NULL: the defaults); a progress that returns
// non-zero cancels with ECANCELED.
csd::StreamOptions stream_of(const csd_stream_opts *o)
{
    csd::StreamOptions s;
    if (!o) return s;
    s.slm_budget = o->slm_budget;
    if (o->progress) {
        auto fn = o->progress;
        void *arg = o->arg;
        s.progress = [fn, arg](uint64_t done, uint64_t total) {
            if (fn(arg, done, total)) throw csd::Error("cancelled by the progress callback", ECANCELED);
        };
    }
    return s;
}

}  // namespace

extern "C" {

const char *csd_last_error(void) { return g_error.c_str(); }
uint16_t csd_last_status(void) { return g_status; }

const char *csd_version(void) { return CSD_VERSION_STRING; }

unsigned csd_version_number(void) { return CSD_VERSION_NUMBER; }

static int open_with(const char *path, const csd::OpenOptions &o, csd_dev **dev)
{
    if (!path || !dev) return bad_arg("csd_open: path and dev must not be NULL");
    *dev = nullptr;
    return guard([&] {
        auto d = std::make_unique<csd_dev>();
        d->dev = csd::Device::open(path, o);
        *dev = d.release();
    });
}

int csd_open(const char *path, csd_dev **dev) { return open_with(path, {}, dev); }

int csd_open_flags(const char *path, unsigned flags, csd_dev **dev)
{
    if (flags & ~CSD_OPEN_READ_ONLY) {
        if (dev) *dev = nullptr;
        return bad_arg("csd_open_flags: unknown flags");
    }
    csd::OpenOptions o;
    o.read_only = flags & CSD_OPEN_READ_ONLY;
    return open_with(path, o, dev);
}

int csd_open_uring(const char *path, unsigned queue_depth, csd_dev **dev)
{
    csd::OpenOptions o;
    o.use_uring = true;
    o.queue_depth = queue_depth;
    return open_with(path, o, dev);
}

void csd_close(csd_dev *dev)
{
    if (dev) {
        dev->allocations.clear();  // before the device (and its allocator) goes
        dev->store.reset();
        delete dev;
    }
}

const char *csd_front_end(csd_dev *dev)
{
    return dev ? csd::front_end_name(dev->dev->front_end()) : "";
}

uint64_t csd_model_clock_ns(csd_dev *dev)
{
    return dev ? dev->dev->model_clock_ns() : 0;
}

int csd_info(csd_dev *dev, uint64_t *slm_size, uint32_t *cu, uint32_t *nprog)
{
    if (!dev) return bad_arg("csd_info: dev is NULL");
    const auto &c = dev->dev->caps();
    if (slm_size) *slm_size = c.slm_size;
    if (cu) *cu = c.compute_units;
    if (nprog) *nprog = static_cast<uint32_t>(c.programs.size());
    return 0;
}

int csd_ns_info(csd_dev *dev, uint32_t *lba_size, uint64_t *lba_count)
{
    if (!dev) return bad_arg("csd_ns_info: dev is NULL");
    const csd::NamespaceInfo ns = dev->dev->ns();
    if (lba_size) *lba_size = ns.lba_size;
    if (lba_count) *lba_count = ns.lba_count;
    return 0;
}

int csd_slm_alloc(csd_dev *dev, uint64_t size, uint64_t align, uint64_t *offset)
{
    if (!dev || !offset) return bad_arg("csd_slm_alloc: dev and offset must not be NULL");
    return guard([&] {
        csd::SlmBuffer b = dev->dev->slm().alloc(size, align ? align : 4096);
        *offset = b.offset();
        std::lock_guard<std::mutex> g(dev->mu);
        dev->allocations.emplace(b.offset(), std::move(b));  // moves the buffer: nothing freed
    });
}

int csd_slm_free(csd_dev *dev, uint64_t offset)
{
    if (!dev) return bad_arg("csd_slm_free: dev is NULL");
    csd::SlmBuffer gone;  // freed when this returns, after mu (the allocator has its own lock)
    {
        std::lock_guard<std::mutex> g(dev->mu);
        auto it = dev->allocations.find(offset);
        if (it == dev->allocations.end()) return bad_arg("csd_slm_free: no allocation starts at that offset");
        gone = std::move(it->second);
        dev->allocations.erase(it);
    }
    return 0;
}

int csd_slm_write(csd_dev *dev, uint64_t off, const void *data, uint64_t len)
{
    if (!dev || (!data && len)) return bad_arg("csd_slm_write: dev and data must not be NULL");
    return guard([&] { dev->dev->slm_write(off, data, len); });
}

int csd_slm_read(csd_dev *dev, uint64_t off, void *data, uint64_t len)
{
    if (!dev || (!data && len)) return bad_arg("csd_slm_read: dev and data must not be NULL");
    return guard([&] { dev->dev->slm_read(off, data, len); });
}

int csd_slm_load(csd_dev *dev, uint64_t slba, uint64_t nlb, uint64_t off)
{
    if (!dev) return bad_arg("csd_slm_load: dev is NULL");
    return guard([&] { dev->dev->slm_load(slba, nlb, off); });
}

int csd_slm_store(csd_dev *dev, uint64_t slba, uint64_t nlb, uint64_t off)
{
    if (!dev) return bad_arg("csd_slm_store: dev is NULL");
    return guard([&] { dev->dev->slm_store(slba, nlb, off); });
}

int csd_execute(csd_dev *dev, uint16_t program, const csd_range *ranges, uint16_t n, const void *params,
                uint32_t plen, uint32_t *dw0, uint32_t *dw1)
{
    if (!dev || (!ranges && n) || (!params && plen)) return bad_arg("csd_execute: NULL dev, ranges or params");
    std::vector<csd::Range> r;
    for (uint16_t i = 0; i < n; i++) r.push_back({ranges[i].offset, ranges[i].length});
    return guard([&] {
        try {
            const csd::ExecResult x = dev->dev->execute(program, r, params, plen);
            if (dw0) *dw0 = x.dw0;
            if (dw1) *dw1 = x.dw1;
        } catch (const csd::Error &e) {
            if (dw0) *dw0 = e.dw0();
            if (dw1) *dw1 = e.dw1();
            throw;
        }
    });
}

int csd_checksum(csd_dev *dev, uint32_t algo, csd_range data, uint64_t *sum)
{
    if (!dev || !sum) return bad_arg("csd_checksum: dev and sum must not be NULL");
    return guard([&] {
        *sum = csd::programs::checksum(*dev->dev, static_cast<csd::ChecksumAlgo>(algo), {data.offset, data.length});
    });
}

int csd_gemm(csd_dev *dev, csd_range a, csd_range b, csd_range c, uint32_t m, uint32_t n, uint32_t k, uint32_t flags,
             float alpha, float beta)
{
    if (!dev) return bad_arg("csd_gemm: dev is NULL");
    return guard([&] {
        csd::programs::gemm(*dev->dev, {a.offset, a.length}, {b.offset, b.length}, {c.offset, c.length}, m, n, k,
                            flags & CSD_GEMM_TRANS_A, flags & CSD_GEMM_TRANS_B, alpha, beta);
    });
}

int csd_program_load(csd_dev *dev, const void *image, uint32_t size, uint32_t record_size, uint16_t *slot,
                     uint32_t *fault)
{
    if (!dev || !image || !slot) return bad_arg("csd_program_load: NULL dev, image or slot");
    return guard([&] {
        try {
            *slot = dev->dev->program_load(image, size, record_size, *slot);
        } catch (const csd::Error &e) {
            if (fault) *fault = e.dw0();
            throw;
        }
    });
}

int csd_program_unload(csd_dev *dev, uint16_t slot)
{
    if (!dev) return bad_arg("csd_program_unload: dev is NULL");
    return guard([&] { dev->dev->program_unload(slot); });
}

int csd_program_run(csd_dev *dev, uint16_t slot, uint32_t mode, csd_range records, csd_range out, uint32_t count,
                    const uint64_t *params, uint32_t nr_params, uint32_t *dw0, uint32_t *dw1)
{
    if (!dev || (!params && nr_params)) return bad_arg("csd_program_run: NULL dev or params");
    const std::vector<uint64_t> p(params, params + nr_params);
    return guard([&] {
        const auto bytes = csd::downloaded_program_params(count, mode, p);
        const csd_range ranges[2] = {records, mode == CSD_BPF_REDUCE ? csd_range{0, 0} : out};
        const bool chase = mode == CSD_BPF_CHASE;  // one range: out
        if (const int rc = csd_execute(dev, slot, chase ? &out : ranges, chase ? 1 : 2, bytes.data(),
                                       static_cast<uint32_t>(bytes.size()), dw0, dw1)) {
            throw csd::Error(g_error, g_status);
        }
    });
}

int csd_store_format(csd_dev *dev) { return csd_store_format_flags(dev, 0); }

int csd_store_format_flags(csd_dev *dev, unsigned flags)
{
    if (!dev) return bad_arg("csd_store_format: dev is NULL");
    if (flags & ~CSD_FORMAT_FORCE) return bad_arg("csd_store_format_flags: unknown flags");
    return guard([&] {
        std::shared_ptr<csd::ObjectStore> old;  // dropped after mu (a store leaves the fork registry)
        {
            std::lock_guard<std::mutex> g(dev->mu);
            old.swap(dev->store);  // the next call opens the new store; calls under way keep theirs
        }
        csd::ObjectStore::format(*dev->dev, flags & CSD_FORMAT_FORCE);
    });
}

int csd_store_put(csd_dev *dev, const char *name, const void *data, uint64_t len)
{
    if (!dev || !name || (!data && len)) return bad_arg("csd_store_put: NULL dev, name or data");
    return guard([&] { store_of(dev)->put(name, data, len); });
}

int csd_store_get(csd_dev *dev, const char *name, void *buf, uint64_t cap, uint64_t *len)
{
    if (!dev || !name || !len) return bad_arg("csd_store_get: NULL dev, name or len");
    int rc = guard([&] {
        const auto s = store_of(dev);
        *len = s->stat(name).bytes;
        if (*len > cap) throw csd::Error("csd_store_get: buffer of " + std::to_string(cap) + " bytes for object '" +
                                             std::string(name) + "' of " + std::to_string(*len),
                                         ENOSPC);
        // Straight into buf, checked; a larger version put meanwhile is refused by the sink
        // (not copied past cap), and *len then says its size.
        csd::MemorySink sink(buf, cap);
        try {
            *len = s->get_into(name, sink).bytes;
        } catch (const csd::Error &e) {
            if (e.errnum() == ENOSPC) *len = s->stat(name).bytes;
            throw;
        }
    });
    return rc;
}

namespace {

// A C read callback as a source.
class CallbackSource : public csd::ObjectSource {
public:
    // Reads through fn(ctx, ...); len may be CSD_SIZE_UNKNOWN.
    CallbackSource(uint64_t len, csd_read_fn fn, void *ctx) : len_(len), fn_(fn), ctx_(ctx) {}
    // The length the caller gave.
    uint64_t size() const override { return len_ == CSD_SIZE_UNKNOWN ? kUnknownSize : len_; }
    // What the callback gives; its negative errno as a csd::Error.
    uint64_t read(uint8_t *buf, uint64_t n) override
    {
        const int64_t got = fn_(ctx_, buf, n);
        if (got < 0) throw csd::Error("csd_store_put_stream: the read callback", static_cast<int>(-got));
        if (static_cast<uint64_t>(got) > n) {
            throw csd::Error("csd_store_put_stream: the read callback gave more bytes than asked", EINVAL);
        }
        return static_cast<uint64_t>(got);
    }

private:
    uint64_t len_;
    csd_read_fn fn_;
    void *ctx_;
};

}  // namespace

int csd_store_put_stream(csd_dev *dev, const char *name, uint64_t len, csd_read_fn read, void *ctx)
{
    if (!dev || !name || !read) return bad_arg("csd_store_put_stream: NULL dev, name or read");
    return guard([&] {
        CallbackSource src(len, read, ctx);
        store_of(dev)->put(name, src);
    });
}

int csd_store_get_stream(csd_dev *dev, const char *name, csd_write_fn write, void *ctx, uint64_t *len)
{
    if (!dev || !name || !write || !len) return bad_arg("csd_store_get_stream: NULL dev, name, write or len");
    return guard([&] {
        csd::StreamSink sink([&](uint64_t pos, const uint8_t *data, uint64_t n) {
            const int rc = write(ctx, pos, data, n);
            if (rc < 0) throw csd::Error("csd_store_get_stream: the write callback", -rc);
        });
        *len = store_of(dev)->get_into(name, sink).bytes;
    });
}

int csd_store_put_fd(csd_dev *dev, const char *name, int fd)
{
    if (!dev || !name || fd < 0) return bad_arg("csd_store_put_fd: NULL dev or name, or no fd");
    return guard([&] {
        csd::FdSource src(fd, "fd " + std::to_string(fd));
        store_of(dev)->put(name, src);
    });
}

int csd_store_get_fd(csd_dev *dev, const char *name, int fd, uint64_t *len)
{
    if (!dev || !name || fd < 0 || !len) return bad_arg("csd_store_get_fd: NULL dev, name or len, or no fd");
    return guard([&] {
        csd::FdSink sink(fd, "fd " + std::to_string(fd));
        *len = store_of(dev)->get_into(name, sink).bytes;
    });
}

int csd_store_remove(csd_dev *dev, const char *name)
{
    if (!dev || !name) return bad_arg("csd_store_remove: NULL dev or name");
    return guard([&] { store_of(dev)->remove(name); });
}

int csd_store_filter(csd_dev *dev, const char *src, const char *dst, const struct csd_filter_params *p,
                     const csd_stream_opts *opts, uint64_t *matches, uint64_t *bytes)
{
    if (!dev || !src || !dst || !p) return bad_arg("csd_store_filter: NULL dev, src, dst or params");
    if (p->output_mode != CSD_FILTER_RECORDS && p->output_mode != CSD_FILTER_INDICES) {
        return bad_arg(("csd_store_filter: output_mode " + std::to_string(p->output_mode) +
                        " is neither CSD_FILTER_RECORDS nor CSD_FILTER_INDICES").c_str());
    }
    return guard([&] {
        csd::FilterSpec s;
        s.record_size = p->record_size;
        s.count = p->count;
        s.field_offset = p->field_offset;
        s.field_type = static_cast<csd::FieldType>(p->field_type);
        s.op = static_cast<csd::CmpOp>(p->op);
        s.indices = p->output_mode == CSD_FILTER_INDICES;
        std::memcpy(&s.lo_int, p->lo, 8);
        std::memcpy(&s.hi_int, p->hi, 8);
        if (p->field_type == CSD_FT_F32 || p->field_type == CSD_FT_F64) {
            std::memcpy(&s.lo, p->lo, 8);
            std::memcpy(&s.hi, p->hi, 8);
        }
        const csd::FilterResult r = store_of(dev)->filter(src, s, dst, stream_of(opts));
        if (matches) *matches = r.matches;
        if (bytes) *bytes = r.bytes;
    });
}

int csd_store_checksum(csd_dev *dev, const char *name, uint32_t algo, const csd_stream_opts *opts, uint64_t *sum)
{
    if (!dev || !name || !sum) return bad_arg("csd_store_checksum: NULL dev, name or sum");
    return guard([&] { *sum = store_of(dev)->checksum(name, static_cast<csd::ChecksumAlgo>(algo), stream_of(opts)); });
}

int csd_store_reduce(csd_dev *dev, const char *name, uint32_t op, const csd_stream_opts *opts, uint64_t *out,
                     uint64_t cap, uint64_t *rows)
{
    if (!dev || !name || !rows || (!out && cap)) return bad_arg("csd_store_reduce: NULL dev, name, rows or out");
    return guard([&] {
        const auto s = store_of(dev);
        const csd::ObjectInfo o = s->stat(name);
        *rows = o.shape.size() > 1 ? o.shape[0] : 1;
        if (*rows > cap) {
            throw csd::Error("csd_store_reduce: room for " + std::to_string(cap) + " results, object '" +
                                 std::string(name) + "' has " + std::to_string(*rows) + " rows",
                             ENOSPC);
        }
        const std::vector<uint64_t> r = s->reduce(name, static_cast<csd::ReduceOp>(op), stream_of(opts));
        *rows = r.size();
        if (!r.empty()) std::memcpy(out, r.data(), r.size() * 8);
    });
}

int csd_store_convert(csd_dev *dev, const char *src, uint32_t op, const char *dst, float scale, int32_t zero_point,
                      const csd_stream_opts *opts, uint64_t *bytes)
{
    if (!dev || !src || !dst) return bad_arg("csd_store_convert: NULL dev, src or dst");
    return guard([&] {
        const uint64_t n = store_of(dev)->convert(src, static_cast<csd::ConvertOp>(op), dst, scale, zero_point, stream_of(opts));
        if (bytes) *bytes = n;
    });
}

int csd_store_decompress(csd_dev *dev, const char *src, uint32_t codec, const char *dst, const csd_stream_opts *opts,
                         uint64_t *bytes)
{
    if (!dev || !src || !dst) return bad_arg("csd_store_decompress: NULL dev, src or dst");
    return guard([&] {
        const uint64_t n = store_of(dev)->decompress(src, static_cast<csd::Codec>(codec), dst, stream_of(opts));
        if (bytes) *bytes = n;
    });
}

int csd_store_gemm(csd_dev *dev, const char *a, const char *b, const char *c, const csd_stream_opts *opts)
{
    if (!dev || !a || !b || !c) return bad_arg("csd_store_gemm: NULL dev, a, b or c");
    return guard([&] { store_of(dev)->gemm(a, b, c, stream_of(opts)); });
}

int csd_store_program_run(csd_dev *dev, uint16_t slot, uint32_t record_size, uint32_t mode, const char *src,
                          const char *dst, const uint64_t *params, uint32_t nr_params, const csd_stream_opts *opts,
                          uint64_t res[2])
{
    if (!dev || !src || !res || (!params && nr_params)) return bad_arg("csd_store_program_run: NULL dev, src, res or params");
    return guard([&] {
        csd::Program prog = csd::Program::attach(*dev->dev, slot, record_size);
        prog.keep();  // loaded until csd_program_unload
        const csd::FilterResult r = store_of(dev)->run_program(prog, mode, src, dst ? dst : "",
                                                              std::vector<uint64_t>(params, params + nr_params),
                                                              stream_of(opts));
        res[0] = r.matches;
        res[1] = r.bytes;
    });
}

}  // extern "C"
