// SPDX-License-Identifier: MIT
// cs.cc - libcsd-snia: the SNIA Computational Storage API (cs.h) over libcsd's C++ API.
// docs/snia-cs-api.md has the mapping and the table of what each call does here.
//
// Handles are numbers (kind << 48 | serial), never pointers: every call looks its handles up
// in one registry, so a stale or made-up handle is refused and never dereferenced. A
// request takes its CSx and AFDM (a Hold) while the registry lock is held, and gives them
// back when it completes: csFreeMem and csCloseCSx refuse memory and devices in use.
#include "cs.h"

#include <pthread.h>

#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <climits>
#include <condition_variable>
#include <cstdarg>
#include <cstddef>
#include <cstring>
#include <deque>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <new>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "csd/device.hpp"
#include "csd/error.hpp"
#include "csd_spec.h"
#include "csd_version.h"
#include "nvme_cs.h"

namespace {

using Clock = std::chrono::steady_clock;

constexpr int kMaxBatch = 1024;        // CSEProperties.MaxRequestsPerBatch
constexpr int kMaxArgs = 256;          // CSEProperties.MaxFunctionParametersAllowed
constexpr unsigned kMaxPoolThreads = 64;  // asynchronous requests running at once
constexpr unsigned kParallelBatchThreads = 16;

thread_local std::string t_error;

// Records why a call failed (csd_snia_last_error) and returns its status.
CS_STATUS fail(CS_STATUS s, const std::string &why)
{
    t_error = why;
    return s;
}

// ---------------------------------------------------------------- objects behind handles

// A function's run times as this process saw them (submission to completion).
struct FnTimes {
    uint64_t runs = 0, total_us = 0, shortest_us = 0, longest_us = 0;
};

// One drive of a CSx.
struct Drive {
    std::unique_ptr<csd::Device> dev;
    std::string path;
    uint32_t units = 0;      // compute units (fixed at open)
    uint32_t first_cse = 0;  // the CSx-wide number of its first compute unit
    std::mutex mu;           // times, counters below
    std::map<uint16_t, FnTimes> times;
    uint64_t allocs = 0, frees = 0, alloc_bytes = 0;
    // Device::caps() is rewritten in place by a refresh (and by Program Load): this library
    // reads and refreshes it under caps_mu only, and loads and unloads programs under it.
    std::mutex caps_mu;
    // A copy of the capabilities.
    csd::Capabilities caps()
    {
        std::lock_guard<std::mutex> g(caps_mu);
        return dev->caps();
    }
    // Reads them from the drive again (a program loaded meanwhile by someone else).
    void refresh()
    {
        std::lock_guard<std::mutex> g(caps_mu);
        dev->refresh_capabilities();
    }
};

struct Csx {
    std::string name;
    unsigned serial = 0;  // names its CSEs: csx<serial>.cse<N>
    int opens = 0;        // csOpenCSx handles of it
    std::vector<std::shared_ptr<Drive>> drives;
    std::atomic<int> inflight{0};
    uint32_t cse_count() const
    {
        uint32_t n = 0;
        for (const auto &d : drives) n += d->units;
        return n;
    }
    // The drive of CSE number n.
    size_t drive_of_cse(uint32_t n) const
    {
        for (size_t i = 0; i < drives.size(); i++) {
            if (n < drives[i]->first_cse + drives[i]->units) return i;
        }
        return drives.size();
    }
    std::string cse_name(uint32_t n) const { return "csx" + std::to_string(serial) + ".cse" + std::to_string(n); }
};

struct Cse {
    std::shared_ptr<Csx> csx;
    uint32_t number = 0;
    size_t drive = 0;
    void *context = nullptr;
};

struct Mem {
    std::shared_ptr<Csx> csx;
    size_t drive = 0;
    csd::SlmBuffer buf;  // freed before its Drive: Mem holds the Csx that holds the Drive
    uint64_t size = 0;   // bytes asked for
    std::atomic<int> inflight{0};
    ~Mem()
    {
        buf.reset();
    }
};

struct Done {
    void *context = nullptr;
    CS_STATUS status = CS_SUCCESS;
    std::string error;
};

struct Event {
    std::mutex mu;
    std::deque<Done> done;
    int pending = 0;  // queued with it, not yet completed
};

// A batch entry: a copy of the request, its compute arguments kept whole.
struct Entry {
    CS_BATCH_INDEX index = 0;
    CS_BATCH_REQ_TYPE type = CS_COPY_AFDM;
    CsCopyMemRequest copy{};
    CsStorageRequest storage{};
    CsComputeRequest compute_head{};
    std::vector<CsComputeArg> args;
};

struct Batch {
    CS_BATCH_MODE mode = CS_BATCH_SERIAL;
    int capacity = 0;
    CS_BATCH_INDEX next_index = 1;
    std::list<Entry> entries;  // in running order
    std::atomic<int> running{0};
};

enum Kind : uint64_t { kDev = 1, kCse = 2, kMem = 3, kEvt = 4, kBatch = 5 };

struct Registry {
    std::mutex mu;
    uint64_t serial = 0;
    unsigned csx_serial = 0;
    std::map<uint64_t, std::shared_ptr<Csx>> devs;  // handle -> its CSx (several handles may share one)
    std::map<std::string, std::weak_ptr<Csx>> by_name;
    std::map<uint64_t, std::shared_ptr<Cse>> cses;
    std::map<uint64_t, std::shared_ptr<Mem>> mems;
    std::map<uint64_t, std::shared_ptr<Event>> evts;
    std::map<uint64_t, std::shared_ptr<Batch>> batches;
    uint64_t make(Kind k) { return k << 48 | ++serial; }
};

// Never destroyed: threads of the pool may still run at exit.
Registry &reg()
{
    static Registry *r = new Registry;
    return *r;
}

void *to_handle(uint64_t h) { return reinterpret_cast<void *>(static_cast<uintptr_t>(h)); }
uint64_t of_handle(const void *h) { return static_cast<uint64_t>(reinterpret_cast<uintptr_t>(h)); }

// Lookups; the registry lock must be held.
template <class T>
std::shared_ptr<T> find(std::map<uint64_t, std::shared_ptr<T>> &m, const void *h)
{
    auto it = m.find(of_handle(h));
    return it == m.end() ? nullptr : it->second;
}

// ---------------------------------------------------------------- statuses

const char *kStatusNames[] = {
    "CS_SUCCESS", "CS_COULD_NOT_MAP_MEMORY", "CS_DEVICE_ERROR", "CS_DEVICE_NOT_AVAILABLE", "CS_DEVICE_NOT_READY",
    "CS_DEVICE_NOT_PRESENT", "CS_ENODEV", "CS_ENOENT", "CS_ENTITY_NOT_ON_DEVICE", "CS_ENXIO", "CS_ERROR_IN_EXECUTION",
    "CS_FATAL_ERROR", "CS_HANDLE_IN_USE", "CS_INVALID_HANDLE", "CS_INVALID_ARG", "CS_INVALID_EVENT", "CS_INVALID_ID",
    "CS_INVALID_LENGTH", "CS_INVALID_OPTION", "CS_INVALID_FUNCTION", "CS_INVALID_FUNCTION_NAME", "CS_IO_TIMEOUT",
    "CS_LOAD_ERROR", "CS_MEMORY_IN_USE", "CS_NO_PERMISSIONS", "CS_NOT_DONE", "CS_NOT_ENOUGH_MEMORY",
    "CS_NO_SUCH_ENTITY_EXISTS", "CS_OUT_OF_RESOURCES", "CS_QUEUED", "CS_UNKNOWN_MEMORY",
    "CS_UNKNOWN_COMPUTE_FUNCTION", "CS_UNSUPPORTED",
};

// The status a libcsd failure is, in the draft's terms; compute: the failure of a compute
// request's Execute (a namespace the drive refuses is then the function's: a media program
// where the drive has no NVM namespace; for any other command the drive's error).
CS_STATUS status_of(const csd::Error &e, bool compute = false)
{
    if (e.status() != 0) {
        switch (e.code()) {
        case CSD_STATUS_INVALID_PROGRAM:
        case NVME_CS_INVALID_PROGRAM_INDEX:
        case NVME_CS_NO_PROGRAM:
        case NVME_CS_PROGRAM_NOT_ACTIVATED: return CS_UNKNOWN_COMPUTE_FUNCTION;
        case CSD_STATUS_INVALID_DESCRIPTOR:
        case CSD_STATUS_INVALID_PARAMETERS:
        case CSD_STATUS_SLM_OUT_OF_BOUNDS:
        case CSD_STATUS_LBA_OUT_OF_RANGE:
        case CSD_STATUS_INVALID_FIELD:
        case CSD_STATUS_HOP_LIMIT_EXCEEDED: return CS_INVALID_ARG;
        case CSD_STATUS_INVALID_NAMESPACE: return compute ? CS_INVALID_FUNCTION : CS_DEVICE_ERROR;
        case CSD_STATUS_OUTPUT_OVERFLOW: return CS_INVALID_LENGTH;
        case CSD_STATUS_PROGRAM_FAULT:
        case CSD_STATUS_ABORT_REQUESTED:
        case CSD_STATUS_SQ_DELETED:
        case CSD_STATUS_HOST_ABORTED: return CS_ERROR_IN_EXECUTION;
        case CSD_STATUS_INVALID_PROGRAM_IMAGE:
        case NVME_CS_INVALID_PROGRAM_DATA:
        case NVME_CS_INVALID_PROGRAM_TYPE: return CS_LOAD_ERROR;
        case CSD_STATUS_PROGRAM_SLOT_IN_USE:
        case CSD_STATUS_PROGRAM_LOAD_BYTES_EXCEEDED:
        case NVME_CS_MAX_PROGRAMS_ACTIVATED:
        case NVME_CS_MAX_PROGRAM_BYTES_EXCEEDED:
        case NVME_CS_PROGRAM_IN_USE: return CS_OUT_OF_RESOURCES;
        case CSD_STATUS_INVALID_OPCODE: return CS_UNSUPPORTED;
        default: return CS_DEVICE_ERROR;
        }
    }
    switch (e.errnum()) {
    case ENOMEM: return CS_NOT_ENOUGH_MEMORY;
    case EINVAL:
    case ERANGE: return CS_INVALID_ARG;
    case ENOENT: return CS_ENOENT;
    case ENODEV: return CS_ENODEV;
    case ENXIO: return CS_ENXIO;
    case EACCES:
    case EPERM: return CS_NO_PERMISSIONS;
    case ETIMEDOUT: return CS_IO_TIMEOUT;
    case EBUSY: return CS_DEVICE_NOT_AVAILABLE;
    case ENOSPC: return CS_NOT_ENOUGH_MEMORY;
    case EDQUOT: return CS_OUT_OF_RESOURCES;  // csd.ko's program quota: as the drive's own limits
    default: return CS_DEVICE_ERROR;
    }
}

// Runs f, turning a libcsd exception into its status and words.
template <class F>
CS_STATUS guarded(const F &f)
{
    try {
        return f();
    } catch (const csd::Error &e) {
        return fail(status_of(e), e.what());
    } catch (const std::bad_alloc &) {
        return fail(CS_NOT_ENOUGH_MEMORY, "out of host memory");
    } catch (const std::exception &e) {
        return fail(CS_FATAL_ERROR, e.what());
    }
}

// Copies text (and its NUL) into a caller's buffer of *len bytes, or says how many it needs.
template <class L>
CS_STATUS put_text(const std::string &text, L *len, char *buf)
{
    if (!len) return fail(CS_INVALID_ARG, "Length is NULL");
    const uint64_t need = text.size() + 1;
    if (!buf) {
        *len = static_cast<L>(need);
        return CS_SUCCESS;
    }
    if (static_cast<int64_t>(*len) < static_cast<int64_t>(need)) {
        const L given = *len;
        *len = static_cast<L>(need);
        return fail(CS_INVALID_LENGTH, "the buffer holds " + std::to_string(given) + " bytes, " +
                                            std::to_string(need) + " are needed");
    }
    std::memcpy(buf, text.c_str(), need);
    *len = static_cast<L>(need);
    return CS_SUCCESS;
}

// The same for a table of bytes.
CS_STATUS put_bytes(const void *data, size_t n, int *len, void *buf)
{
    if (!len) return fail(CS_INVALID_ARG, "Length is NULL");
    if (!buf) {
        *len = static_cast<int>(n);
        return CS_SUCCESS;
    }
    if (*len < 0 || static_cast<size_t>(*len) < n) {
        const int given = *len;
        *len = static_cast<int>(n);
        return fail(CS_INVALID_LENGTH,
                    "the buffer holds " + std::to_string(given) + " bytes, " + std::to_string(n) + " are needed");
    }
    std::memcpy(buf, data, n);
    *len = static_cast<int>(n);
    return CS_SUCCESS;
}

void copy_name(char *dst, size_t cap, const std::string &s)
{
    std::memset(dst, 0, cap);
    std::memcpy(dst, s.data(), std::min(s.size(), cap - 1));
}

// ---------------------------------------------------------------- naming and opening

std::vector<std::string> split(const std::string &s, char sep)
{
    std::vector<std::string> out;
    size_t at = 0;
    while (true) {
        const size_t next = s.find(sep, at);
        out.push_back(s.substr(at, next - at));
        if (next == std::string::npos) break;
        at = next + 1;
    }
    return out;
}

const std::string kSetPrefix = "set:";

// The drive node a file or directory lives on (/dev/<disk> of its st_dev), or "".
std::string node_of_file(const struct stat &st)
{
    char link[PATH_MAX];
    const std::string sys = "/sys/dev/block/" + std::to_string(major(st.st_dev)) + ":" + std::to_string(minor(st.st_dev));
    const ssize_t n = readlink(sys.c_str(), link, sizeof link - 1);
    if (n <= 0) return "";
    link[n] = 0;
    std::string l = link;  // ../../devices/.../nvme0n1/nvme0n1p1
    struct stat part;
    if (stat((sys + "/partition").c_str(), &part) == 0) l = l.substr(0, l.rfind('/'));
    return "/dev/" + l.substr(l.rfind('/') + 1);
}

// What csOpenCSx is given for one drive path: the node or emu: name itself, or the node of
// a file on a mounted drive. EINVAL-style failures say why in t_error.
CS_STATUS resolve_one(const std::string &path, std::string *out)
{
    if (path.empty()) return fail(CS_INVALID_ARG, "an empty path");
    if (path.rfind("emu:", 0) == 0 || path.rfind("/dev/csd", 0) == 0) {
        *out = path;
        return CS_SUCCESS;
    }
    struct stat st;
    if (stat(path.c_str(), &st) != 0) return fail(CS_ENOENT, path + ": " + std::strerror(errno));
    if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) {
        *out = path;
        return CS_SUCCESS;
    }
    const std::string node = node_of_file(st);
    if (node.empty()) return fail(CS_ENTITY_NOT_ON_DEVICE, path + " is on no block device");
    *out = node;
    return CS_SUCCESS;
}

// The CSx name of a path: one drive, or "set:P1;P2;..".
CS_STATUS resolve(const std::string &path, std::string *name)
{
    if (path.rfind(kSetPrefix, 0) == 0) {
        const auto parts = split(path.substr(kSetPrefix.size()), ';');
        std::string joined;
        for (const auto &p : parts) {
            std::string one;
            if (const CS_STATUS s = resolve_one(p, &one); s != CS_SUCCESS) return s;
            joined += (joined.empty() ? "" : ";") + one;
        }
        *name = kSetPrefix + joined;
        return CS_SUCCESS;
    }
    return resolve_one(path, name);
}

// Opens the drives a CSx name names.
CS_STATUS open_drives(const std::string &name, std::vector<std::shared_ptr<Drive>> *drives)
{
    std::vector<std::string> paths;
    if (name.rfind(kSetPrefix, 0) == 0) {
        paths = split(name.substr(kSetPrefix.size()), ';');
    } else {
        paths.push_back(name);
    }
    return guarded([&] {
        uint32_t cse = 0;
        for (const auto &p : paths) {
            auto d = std::make_shared<Drive>();
            try {
                d->dev = csd::Device::open(p);
            } catch (const csd::Error &e) {
                // a node libcsd refuses outright is no computational storage drive (an emu:
                // or csd.ko path it refuses has a bad option: CS_INVALID_ARG, below)
                const bool named = p.rfind("emu:", 0) == 0 || p.rfind("/dev/csd", 0) == 0;
                if (e.status() == 0 && e.errnum() == EINVAL && !named) return fail(CS_ENTITY_NOT_ON_DEVICE, e.what());
                throw;
            }
            d->path = p;
            d->units = d->dev->caps().compute_units;
            d->first_cse = cse;
            cse += d->units;
            drives->push_back(std::move(d));
        }
        return CS_SUCCESS;
    });
}

// ---------------------------------------------------------------- asynchronous work

// A growing pool of detached threads (never destroyed: its threads may outlive main). A
// child of fork() has none of its parent's threads: it starts threads of its own for what it
// queues, and runs none of the requests its parent had queued (they are the parent's, and
// run there); a request the parent was running when it forked never completes in the child.
class Pool {
public:
    void submit(std::function<void()> f)
    {
        std::lock_guard<std::mutex> g(mu_);
        q_.push_back(std::move(f));
        if (idle_ == 0 && threads_ < kMaxPoolThreads) {
            threads_++;
            std::thread([this] { loop(); }).detach();
        } else {
            cv_.notify_one();
        }
    }

    // Before fork(): no thread takes a request or changes the counts until after it.
    void before_fork() { mu_.lock(); }

    // After fork(): in the child, no thread of the pool (the parent's stay there), no queue.
    void after_fork(bool child)
    {
        if (child) {
            new (&cv_) std::condition_variable;  // its waiters were the parent's threads
            threads_ = idle_ = 0;
            std::deque<std::function<void()>> parents;
            parents.swap(q_);
            mu_.unlock();
            return;  // the parent's requests dropped here, their AFDM and CSx no longer held
        }
        mu_.unlock();
    }

private:
    void loop()
    {
        std::unique_lock<std::mutex> l(mu_);
        while (true) {
            idle_++;
            cv_.wait(l, [this] { return !q_.empty(); });
            idle_--;
            auto f = std::move(q_.front());
            q_.pop_front();
            l.unlock();
            f();
            l.lock();
        }
    }
    std::mutex mu_;
    std::condition_variable cv_;
    std::deque<std::function<void()>> q_;
    unsigned idle_ = 0, threads_ = 0;
};

// The process's pool, with its fork() handlers.
Pool &pool()
{
    static Pool *p = [] {
        static Pool *made = new Pool;
        pthread_atfork([] { made->before_fork(); }, [] { made->after_fork(false); }, [] { made->after_fork(true); });
        return made;
    }();
    return *p;
}

// What a request holds while it runs: its CSx and AFDM (csCloseCSx, csFreeMem refuse them).
class Hold {
public:
    Hold() = default;
    Hold(const Hold &) = delete;
    Hold &operator=(const Hold &) = delete;
    ~Hold()
    {
        for (auto &m : mems_) m->inflight--;
        for (auto &c : csxs_) c->inflight--;
    }
    // Takes a CSx (the registry lock held).
    void take(const std::shared_ptr<Csx> &c)
    {
        c->inflight++;
        csxs_.push_back(c);
    }
    void take(const std::shared_ptr<Mem> &m)
    {
        m->inflight++;
        mems_.push_back(m);
    }

private:
    std::vector<std::shared_ptr<Csx>> csxs_;
    std::vector<std::shared_ptr<Mem>> mems_;
};

// A checked request, ready to run: its work and what it holds.
struct Job {
    std::function<CS_STATUS(uint64_t *comp)> run;
    std::shared_ptr<Hold> hold = std::make_shared<Hold>();
};

// ---------------------------------------------------------------- preparing requests

// The AFDM of a request (registry lock held): CS_UNKNOWN_MEMORY if it is no live allocation.
CS_STATUS afdm(Registry &r, const CsDevAFDM &m, const char *what, std::shared_ptr<Mem> *out)
{
    *out = find(r.mems, m.MemHandle);
    if (!*out) return fail(CS_UNKNOWN_MEMORY, std::string(what) + ": MemHandle is no live AFDM allocation");
    if (m.ByteOffset > (*out)->size)
        return fail(CS_INVALID_ARG, std::string(what) + ": ByteOffset " + std::to_string(m.ByteOffset) +
                                        " is past the allocation's " + std::to_string((*out)->size) + " bytes");
    return CS_SUCCESS;
}

CS_STATUS prepare_storage(Registry &r, const CsStorageRequest *req, Job *job)
{
    if (!req) return fail(CS_INVALID_ARG, "storage request: Req is NULL");
    if (req->Mode == CS_STORAGE_FILE_IO) return fail(CS_UNSUPPORTED, "storage request: file I/O (the drives hold no file system)");
    if (req->Mode != CS_STORAGE_BLOCK_IO)
        return fail(CS_INVALID_OPTION, "storage request: Mode " + std::to_string(req->Mode) + " is neither block nor file I/O");
    auto csx = find(r.devs, req->DevHandle);
    if (!csx) return fail(CS_INVALID_HANDLE, "storage request: DevHandle is no open CSx");
    const CsBlockIo &b = req->u.BlockIo;
    if (b.Type != CS_STORAGE_LOAD_TYPE && b.Type != CS_STORAGE_STORE_TYPE)
        return fail(CS_INVALID_OPTION, "storage request: Type " + std::to_string(b.Type) + " is neither load nor store");
    if (b.StorageIndex >= csx->drives.size())
        return fail(CS_INVALID_ARG, "storage request: StorageIndex " + std::to_string(b.StorageIndex) + " of a CSx of " +
                                        std::to_string(csx->drives.size()) + " drive(s)");
    auto drive = csx->drives[b.StorageIndex];
    const csd::NamespaceInfo ns = drive->dev->ns();
    if (b.NamespaceId != 0 && b.NamespaceId != ns.nsid)
        return fail(CS_INVALID_ARG, "storage request: NamespaceId " + std::to_string(b.NamespaceId) + " (the drive's is " +
                                        std::to_string(ns.nsid) + ", or 0)");
    if (b.NumBlocks == 0) return fail(CS_INVALID_ARG, "storage request: NumBlocks is 0");
    if (b.StartLba > ns.lba_count || b.NumBlocks > ns.lba_count - b.StartLba)
        return fail(CS_INVALID_ARG, "storage request: LBAs " + std::to_string(b.StartLba) + "+" + std::to_string(b.NumBlocks) +
                                        " past the namespace's " + std::to_string(ns.lba_count));
    std::shared_ptr<Mem> mem;
    if (const CS_STATUS s = afdm(r, b.DevMem, "storage request", &mem); s != CS_SUCCESS) return s;
    if (mem->csx != csx) return fail(CS_ENTITY_NOT_ON_DEVICE, "storage request: the AFDM belongs to another CSx");
    const uint64_t bytes = uint64_t{b.NumBlocks} * ns.lba_size;
    if (bytes > mem->size - b.DevMem.ByteOffset)
        return fail(CS_INVALID_LENGTH, "storage request: " + std::to_string(bytes) + " bytes do not fit the AFDM's " +
                                           std::to_string(mem->size - b.DevMem.ByteOffset) + " from ByteOffset");
    job->hold->take(csx);
    job->hold->take(mem);
    const bool load = b.Type == CS_STORAGE_LOAD_TYPE;
    const uint64_t slba = b.StartLba, nlb = b.NumBlocks;
    const uint64_t slm = mem->buf.offset() + b.DevMem.ByteOffset;
    auto mdrive = csx->drives[mem->drive];
    job->run = [drive, mdrive, load, slba, nlb, slm, bytes](uint64_t *comp) {
        return guarded([&] {
            if (drive == mdrive) {
                if (load)
                    drive->dev->slm_load(slba, nlb, slm);
                else
                    drive->dev->slm_store(slba, nlb, slm);
            } else {  // a set: the LBAs of one drive, the AFDM of another (through host memory)
                std::vector<uint8_t> tmp(bytes);
                if (load) {
                    drive->dev->read_lbas(slba, nlb, tmp.data());
                    mdrive->dev->slm_write(slm, tmp.data(), bytes);
                } else {
                    mdrive->dev->slm_read(slm, tmp.data(), bytes);
                    drive->dev->write_lbas(slba, nlb, tmp.data());
                }
            }
            *comp = bytes;
            return CS_SUCCESS;
        });
    };
    return CS_SUCCESS;
}

CS_STATUS prepare_copy(Registry &r, const CsCopyMemRequest *req, Job *job)
{
    if (!req) return fail(CS_INVALID_ARG, "copy request: CopyReq is NULL");
    if (req->Type != CS_COPY_TO_DEVICE && req->Type != CS_COPY_FROM_DEVICE)
        return fail(CS_INVALID_OPTION, "copy request: Type " + std::to_string(req->Type) + " is neither to nor from the device");
    if (!req->HostVAddress) return fail(CS_INVALID_ARG, "copy request: HostVAddress is NULL");
    if (req->Bytes == 0) return fail(CS_INVALID_ARG, "copy request: Bytes is 0");
    std::shared_ptr<Mem> mem;
    if (const CS_STATUS s = afdm(r, req->DevMem, "copy request", &mem); s != CS_SUCCESS) return s;
    if (req->Bytes > mem->size - req->DevMem.ByteOffset)
        return fail(CS_INVALID_LENGTH, "copy request: " + std::to_string(req->Bytes) + " bytes do not fit the AFDM's " +
                                           std::to_string(mem->size - req->DevMem.ByteOffset) + " from ByteOffset");
    job->hold->take(mem->csx);
    job->hold->take(mem);
    auto drive = mem->csx->drives[mem->drive];
    const bool to = req->Type == CS_COPY_TO_DEVICE;
    void *host = req->HostVAddress;
    const uint64_t n = req->Bytes, slm = mem->buf.offset() + req->DevMem.ByteOffset;
    job->run = [drive, to, host, n, slm](uint64_t *comp) {
        return guarded([&] {
            if (to)
                drive->dev->slm_write(slm, host, n);
            else
                drive->dev->slm_read(slm, host, n);
            *comp = n;
            return CS_SUCCESS;
        });
    };
    return CS_SUCCESS;
}

// Whether a drive has a program of that id (its capabilities read again once if not).
bool program_of(Drive &d, CS_FUNCTION_ID id)
{
    if (id == 0 || id > CSD_MAX_PROGRAM_ID) return false;
    if (d.caps().program(static_cast<uint16_t>(id))) return true;
    d.refresh();  // loaded meanwhile by someone else (csdctl, another CSx)
    return d.caps().program(static_cast<uint16_t>(id)) != nullptr;
}

CS_STATUS prepare_compute(Registry &r, const CsComputeRequest *req, const CsComputeArg *args, Job *job)
{
    if (!req) return fail(CS_INVALID_ARG, "compute request: Req is NULL");
    if (req->NumArgs < 0 || req->NumArgs > kMaxArgs)
        return fail(CS_INVALID_ARG, "compute request: NumArgs " + std::to_string(req->NumArgs) + " (0 to " +
                                        std::to_string(kMaxArgs) + ")");
    std::shared_ptr<Csx> csx;
    size_t drive = 0;
    if (req->CSEHandle) {
        auto cse = find(r.cses, req->CSEHandle);
        if (!cse) return fail(CS_INVALID_HANDLE, "compute request: CSEHandle is no open CSE");
        csx = cse->csx;
        drive = cse->drive;
    }
    std::vector<csd::Range> ranges;
    std::vector<uint8_t> params;
    for (int i = 0; i < req->NumArgs; i++) {
        const CsComputeArg &a = args[i];
        const std::string what = "compute request: argument " + std::to_string(i);
        switch (a.Type) {
        case CS_AFDM_TYPE: {
            std::shared_ptr<Mem> mem;
            if (const CS_STATUS s = afdm(r, a.u.DevMem, what.c_str(), &mem); s != CS_SUCCESS) return s;
            if (!csx) {
                csx = mem->csx;
                drive = mem->drive;
            }
            if (mem->csx != csx || mem->drive != drive)
                return fail(CS_ENTITY_NOT_ON_DEVICE, what + ": AFDM of another drive than the request's");
            ranges.push_back({mem->buf.offset() + a.u.DevMem.ByteOffset, mem->size - a.u.DevMem.ByteOffset});
            job->hold->take(mem);
            break;
        }
        case CS_32BIT_VALUE_TYPE: {
            uint8_t b[4];
            std::memcpy(b, &a.u.Value32, 4);
            params.insert(params.end(), b, b + 4);
            break;
        }
        case CS_64BIT_VALUE_TYPE: {
            uint8_t b[8];
            std::memcpy(b, &a.u.Value64, 8);
            params.insert(params.end(), b, b + 8);
            break;
        }
        case CS_STREAM_TYPE:
        case CS_DESCRIPTOR_TYPE: return fail(CS_UNSUPPORTED, what + ": stream and descriptor arguments are unsupported");
        default: return fail(CS_INVALID_OPTION, what + ": Type " + std::to_string(a.Type) + " is no argument type");
        }
    }
    if (!csx) return fail(CS_INVALID_HANDLE, "compute request: no CSEHandle and no AFDM argument name a drive");
    auto d = csx->drives[drive];
    const uint32_t max_ranges = d->caps().max_ranges;
    if (ranges.size() > max_ranges)
        return fail(CS_INVALID_ARG, "compute request: " + std::to_string(ranges.size()) + " AFDM arguments (the drive takes " +
                                        std::to_string(max_ranges) + ")");
    if (!program_of(*d, req->FunctionId))
        return fail(CS_UNKNOWN_COMPUTE_FUNCTION, "compute request: no function " + std::to_string(req->FunctionId) +
                                                     " on " + d->path);
    job->hold->take(csx);
    const uint16_t id = static_cast<uint16_t>(req->FunctionId);
    job->run = [d, id, ranges, params](uint64_t *comp) {
        const auto t0 = Clock::now();
        CS_STATUS s;
        try {
            const csd::ExecResult er = d->dev->execute(id, ranges, params.empty() ? nullptr : params.data(),
                                                       static_cast<uint32_t>(params.size()));
            *comp = er.dw0 | uint64_t{er.dw1} << 32;
            s = CS_SUCCESS;
        } catch (const csd::Error &e) {
            *comp = e.dw0() | uint64_t{e.dw1()} << 32;  // Output Overflow: what it needed
            s = fail(status_of(e, true), e.what());
        }
        const uint64_t us = static_cast<uint64_t>(
            std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - t0).count());
        std::lock_guard<std::mutex> g(d->mu);
        FnTimes &t = d->times[id];
        t.shortest_us = t.runs == 0 ? us : std::min(t.shortest_us, us);
        t.longest_us = std::max(t.longest_us, us);
        t.total_us += us;
        t.runs++;
        return s;
    };
    return CS_SUCCESS;
}

// Runs a job now, or queues it (a callback or an event given): the draft's two ways.
CS_STATUS submit(Job job, void *context, csQueueCallbackFn cb, CS_EVT_HANDLE evt_handle, u64 *comp)
{
    std::shared_ptr<Event> evt;
    if (evt_handle) {
        std::lock_guard<std::mutex> g(reg().mu);
        evt = find(reg().evts, evt_handle);
        if (!evt) return fail(CS_INVALID_EVENT, "EventHandle is no live event");
        std::lock_guard<std::mutex> ge(evt->mu);
        evt->pending++;
    }
    if (!cb && !evt) {
        uint64_t c = 0;
        const CS_STATUS s = job.run(&c);
        if (comp) *comp = c;
        return s;
    }
    auto shared = std::make_shared<Job>(std::move(job));
    pool().submit([shared, context, cb, evt, comp] {
        uint64_t c = 0;
        t_error.clear();
        const CS_STATUS s = shared->run(&c);
        const std::string err = s == CS_SUCCESS ? "" : t_error;
        shared->hold.reset();  // memory and devices free before anyone hears of the completion
        if (comp) *comp = c;
        if (cb) cb(context, s);
        if (evt) {
            std::lock_guard<std::mutex> g(evt->mu);
            evt->done.push_back({context, s, err});
            evt->pending--;
        }
    });
    return CS_QUEUED;
}

// The size of a compute request with n arguments.
size_t compute_size(int n) { return sizeof(CsComputeRequest) + (n > 1 ? size_t(n - 1) * sizeof(CsComputeArg) : 0); }

}  // namespace

// ================================================================ the API

extern "C" {

const char *csd_snia_last_error(void) { return t_error.c_str(); }

const char *csd_snia_status_name(CS_STATUS s)
{
    const size_t n = sizeof kStatusNames / sizeof kStatusNames[0];
    return static_cast<size_t>(s) < n ? kStatusNames[s] : "CS_STATUS(unknown)";
}

// ---------------------------------------------------------------- discovery

CS_STATUS csGetCSxFromPath(char *Path, unsigned int *Length, char *DevName)
{
    if (!Path || !Length) return fail(CS_INVALID_ARG, "csGetCSxFromPath: Path or Length is NULL");
    std::string name;
    if (const CS_STATUS s = resolve(Path, &name); s != CS_SUCCESS) return s;
    {
        std::lock_guard<std::mutex> g(reg().mu);
        auto it = reg().by_name.find(name);
        if (it != reg().by_name.end() && !it->second.expired()) return put_text(name, Length, DevName);
    }
    std::vector<std::shared_ptr<Drive>> probe;  // a CSx opens: it is one
    if (const CS_STATUS s = open_drives(name, &probe); s != CS_SUCCESS) return s;
    return put_text(name, Length, DevName);
}

CS_STATUS csOpenCSx(char *DevName, void *DevContext, CS_DEV_HANDLE *DevHandle)
{
    (void)DevContext;  // kept by the caller: no notifications to pass it to
    if (!DevName || !DevHandle) return fail(CS_INVALID_ARG, "csOpenCSx: DevName or DevHandle is NULL");
    std::string name;
    if (const CS_STATUS s = resolve(DevName, &name); s != CS_SUCCESS) return s;
    Registry &r = reg();
    {
        std::lock_guard<std::mutex> g(r.mu);
        auto it = r.by_name.find(name);
        if (it != r.by_name.end()) {
            if (auto csx = it->second.lock()) {
                const uint64_t h = r.make(kDev);
                r.devs[h] = csx;
                csx->opens++;
                *DevHandle = to_handle(h);
                return CS_SUCCESS;
            }
        }
    }
    auto csx = std::make_shared<Csx>();
    csx->name = name;
    if (const CS_STATUS s = open_drives(name, &csx->drives); s != CS_SUCCESS) return s;
    std::lock_guard<std::mutex> g(r.mu);
    auto it = r.by_name.find(name);
    if (it != r.by_name.end()) {  // opened by another thread meanwhile: share that one
        if (auto other = it->second.lock()) csx = other;
    }
    if (csx->serial == 0) {
        csx->serial = ++r.csx_serial;
        r.by_name[name] = csx;
    }
    const uint64_t h = r.make(kDev);
    r.devs[h] = csx;
    csx->opens++;
    *DevHandle = to_handle(h);
    return CS_SUCCESS;
}

CS_STATUS csCloseCSx(CS_DEV_HANDLE DevHandle)
{
    Registry &r = reg();
    std::shared_ptr<Csx> last;  // destroyed outside the lock
    std::vector<std::shared_ptr<Mem>> mems;
    {
        std::lock_guard<std::mutex> g(r.mu);
        auto csx = find(r.devs, DevHandle);
        if (!csx) return fail(CS_INVALID_HANDLE, "csCloseCSx: DevHandle is no open CSx");
        if (csx->opens == 1 && csx->inflight > 0)
            return fail(CS_HANDLE_IN_USE, "csCloseCSx: " + std::to_string(csx->inflight.load()) + " request(s) still running on it");
        r.devs.erase(of_handle(DevHandle));
        if (--csx->opens > 0) return CS_SUCCESS;
        // the last handle: its CSEs and AFDM go with it
        for (auto it = r.cses.begin(); it != r.cses.end();) it = it->second->csx == csx ? r.cses.erase(it) : std::next(it);
        for (auto it = r.mems.begin(); it != r.mems.end();) {
            if (it->second->csx == csx) {
                mems.push_back(it->second);
                it = r.mems.erase(it);
            } else {
                ++it;
            }
        }
        r.by_name.erase(csx->name);
        last = csx;
    }
    mems.clear();
    return CS_SUCCESS;
}

CS_STATUS csGetCSEFromCSx(CS_DEV_HANDLE DevHandle, unsigned int *Length, char *CSEName)
{
    std::shared_ptr<Csx> csx;
    {
        std::lock_guard<std::mutex> g(reg().mu);
        csx = find(reg().devs, DevHandle);
    }
    if (!csx) return fail(CS_INVALID_HANDLE, "csGetCSEFromCSx: DevHandle is no open CSx");
    if (!Length) return fail(CS_INVALID_ARG, "csGetCSEFromCSx: Length is NULL");
    std::string list;
    for (uint32_t n = 0; n < csx->cse_count(); n++) list += (n ? "," : "") + csx->cse_name(n);
    return put_text(list, Length, CSEName);
}

CS_STATUS csOpenCSE(char *CSEName, void *CSEContext, CS_CSE_HANDLE *CSEHandle)
{
    if (!CSEName || !CSEHandle) return fail(CS_INVALID_ARG, "csOpenCSE: CSEName or CSEHandle is NULL");
    Registry &r = reg();
    std::lock_guard<std::mutex> g(r.mu);
    for (auto &[name, weak] : r.by_name) {
        auto csx = weak.lock();
        if (!csx) continue;
        for (uint32_t n = 0; n < csx->cse_count(); n++) {
            if (csx->cse_name(n) != CSEName) continue;
            auto cse = std::make_shared<Cse>();
            cse->csx = csx;
            cse->number = n;
            cse->drive = csx->drive_of_cse(n);
            cse->context = CSEContext;
            const uint64_t h = r.make(kCse);
            r.cses[h] = cse;
            *CSEHandle = to_handle(h);
            return CS_SUCCESS;
        }
    }
    return fail(CS_ENTITY_NOT_ON_DEVICE, std::string("csOpenCSE: no open CSx has a CSE named ") + CSEName);
}

CS_STATUS csCloseCSE(CS_CSE_HANDLE CSEHandle)
{
    std::lock_guard<std::mutex> g(reg().mu);
    if (reg().cses.erase(of_handle(CSEHandle)) == 0) return fail(CS_INVALID_HANDLE, "csCloseCSE: CSEHandle is no open CSE");
    return CS_SUCCESS;
}

CS_STATUS csQueryCSEList(char *FunctionName, int *Length, char *Buffer)
{
    if (!Length) return fail(CS_INVALID_ARG, "csQueryCSEList: Length is NULL");
    std::vector<std::shared_ptr<Csx>> open;
    {
        std::lock_guard<std::mutex> g(reg().mu);
        for (auto &[name, weak] : reg().by_name) {
            if (auto c = weak.lock()) open.push_back(c);
        }
    }
    return guarded([&] {
        std::string list;
        for (const auto &csx : open) {
            for (uint32_t n = 0; n < csx->cse_count(); n++) {
                Drive &d = *csx->drives[csx->drive_of_cse(n)];
                bool has = !FunctionName;
                for (const auto &p : d.caps().programs) has = has || p.name == FunctionName;
                if (has) list += (list.empty() ? "" : ",") + csx->cse_name(n);
            }
        }
        if (list.empty())
            return fail(CS_ENTITY_NOT_ON_DEVICE, FunctionName ? std::string("csQueryCSEList: no CSE of an open CSx runs ") + FunctionName
                                                              : "csQueryCSEList: no CSx is open");
        return put_text(list, Length, Buffer);
    });
}

}  // extern "C"

namespace {

// The CSx a query names: an open CSx's name or one of its CSEs' (kept open), else a path
// opened for the query alone.
CS_STATUS csx_for_query(const char *path, std::shared_ptr<Csx> *out)
{
    if (!path) return fail(CS_INVALID_ARG, "Path is NULL");
    {
        std::lock_guard<std::mutex> g(reg().mu);
        for (auto &[name, weak] : reg().by_name) {
            auto c = weak.lock();
            if (!c) continue;
            bool match = name == path;
            for (uint32_t n = 0; !match && n < c->cse_count(); n++) match = c->cse_name(n) == path;
            if (match) {
                *out = c;
                return CS_SUCCESS;
            }
        }
    }
    std::string name;
    if (const CS_STATUS s = resolve(path, &name); s != CS_SUCCESS) return s;
    auto c = std::make_shared<Csx>();
    c->name = name;
    if (const CS_STATUS s = open_drives(name, &c->drives); s != CS_SUCCESS) return s;
    *out = c;
    return CS_SUCCESS;
}

// The programs every drive of a CSx has (same id and name), in id order.
std::vector<csd::ProgramInfo> common_programs(const Csx &c)
{
    std::vector<csd::ProgramInfo> out;
    std::vector<csd::Capabilities> caps;
    for (const auto &d : c.drives) caps.push_back(d->caps());
    for (const auto &p : caps[0].programs) {
        bool everywhere = true;
        for (const auto &cap : caps) {
            const auto *q = cap.program(p.id);
            everywhere = everywhere && q && q->name == p.name;
        }
        if (everywhere) out.push_back(p);
    }
    std::sort(out.begin(), out.end(), [](const auto &a, const auto &b) { return a.id < b.id; });
    return out;
}

std::shared_ptr<Csx> dev_of(CS_DEV_HANDLE h)
{
    std::lock_guard<std::mutex> g(reg().mu);
    return find(reg().devs, h);
}

// Prepares a request's job under the registry's lock (prepare: CS_SUCCESS or the request's
// status), then submits it as csQueue*Request's arguments say.
template <typename Prepare>
CS_STATUS prepare_and_submit(Prepare prepare, void *Context, csQueueCallbackFn CallbackFn, CS_EVT_HANDLE EventHandle,
                             u64 *CompValue)
{
    Job job;
    {
        std::lock_guard<std::mutex> g(reg().mu);
        if (const CS_STATUS s = prepare(&job); s != CS_SUCCESS) return s;
    }
    return submit(std::move(job), Context, CallbackFn, EventHandle, CompValue);
}

}  // namespace

extern "C" {

CS_STATUS csQueryFunctionList(char *Path, int *Length, char *Buffer)
{
    if (!Length) return fail(CS_INVALID_ARG, "csQueryFunctionList: Length is NULL");
    std::shared_ptr<Csx> c;
    if (const CS_STATUS s = csx_for_query(Path, &c); s != CS_SUCCESS) return s;
    std::string list;
    for (const auto &p : common_programs(*c)) list += (list.empty() ? "" : ",") + p.name;
    return put_text(list, Length, Buffer);
}

CS_STATUS csQueryCSFList(const char *Path, int *Length, int *Count, CSFUniqueId *Buffer)
{
    if (!Length || !Count) return fail(CS_INVALID_ARG, "csQueryCSFList: Length or Count is NULL");
    std::shared_ptr<Csx> c;
    if (const CS_STATUS s = csx_for_query(Path, &c); s != CS_SUCCESS) return s;
    std::vector<CSFUniqueId> ids;
    for (const auto &p : common_programs(*c)) {
        CSFUniqueId u{};
        copy_name(u.UniqueName, sizeof u.UniqueName, p.name);
        u.GlobalId = p.id;
        ids.push_back(u);
    }
    *Count = static_cast<int>(ids.size());
    return put_bytes(ids.data(), ids.size() * sizeof(CSFUniqueId), Length, Buffer);
}

CS_STATUS csRegisterNotify(char *, u32, csDevNotificationFn)
{
    return fail(CS_UNSUPPORTED, "csRegisterNotify: the drives post no notifications this library passes on");
}

CS_STATUS csDeregisterNotify(char *, csDevNotificationFn)
{
    return fail(CS_UNSUPPORTED, "csDeregisterNotify: the drives post no notifications this library passes on");
}

// ---------------------------------------------------------------- AFDM

CS_STATUS csAllocMem(CS_DEV_HANDLE DevHandle, int Bytes, unsigned int MemFlags, CS_MEM_HANDLE *MemHandle,
                     CS_MEM_PTR *VAddressPtr)
{
    Registry &r = reg();
    std::shared_ptr<Csx> csx;
    long cse_drive = -1;
    {
        std::lock_guard<std::mutex> g(r.mu);
        csx = find(r.devs, DevHandle);
        if (!csx) {
            if (auto cse = find(r.cses, DevHandle)) {  // a CSE: its drive's SLM
                csx = cse->csx;
                cse_drive = static_cast<long>(cse->drive);
            }
        }
    }
    if (!csx) return fail(CS_INVALID_HANDLE, "csAllocMem: DevHandle is no open CSx (or CSE)");
    if (Bytes <= 0) return fail(CS_INVALID_ARG, "csAllocMem: Bytes " + std::to_string(Bytes) + " (at least 1)");
    if (MemFlags != 0) return fail(CS_INVALID_OPTION, "csAllocMem: MemFlags is reserved and must be 0");
    if (!MemHandle) return fail(CS_INVALID_ARG, "csAllocMem: MemHandle is NULL");
    // the drive: the CSE's, else the one with the largest free range
    size_t drive = 0;
    if (cse_drive >= 0) {
        drive = static_cast<size_t>(cse_drive);
    } else {
        for (size_t i = 1; i < csx->drives.size(); i++) {
            if (csx->drives[i]->dev->slm().largest_free() > csx->drives[drive]->dev->slm().largest_free()) drive = i;
        }
    }
    auto d = csx->drives[drive];
    uint8_t *base = d->dev->slm_host_pointer();
    if (VAddressPtr && !base)
        return fail(CS_COULD_NOT_MAP_MEMORY, "csAllocMem: " + d->path + "'s SLM is not host memory (pass VAddressPtr NULL)");
    auto mem = std::make_shared<Mem>();
    const CS_STATUS s = guarded([&] {
        mem->buf = d->dev->slm().alloc(static_cast<uint64_t>(Bytes));
        return CS_SUCCESS;
    });
    if (s != CS_SUCCESS) return s == CS_NOT_ENOUGH_MEMORY ? fail(s, "csAllocMem: " + t_error) : s;
    mem->csx = csx;
    mem->drive = drive;
    mem->size = static_cast<uint64_t>(Bytes);
    {
        std::lock_guard<std::mutex> g(d->mu);
        d->allocs++;
        d->alloc_bytes += mem->size;
    }
    std::lock_guard<std::mutex> g(r.mu);
    if (!find(r.devs, DevHandle) && !find(r.cses, DevHandle)) {  // closed meanwhile
        return fail(CS_INVALID_HANDLE, "csAllocMem: the CSx was closed meanwhile");
    }
    const uint64_t h = r.make(kMem);
    r.mems[h] = mem;
    *MemHandle = to_handle(h);
    if (VAddressPtr) *VAddressPtr = base + mem->buf.offset();
    return CS_SUCCESS;
}

CS_STATUS csFreeMem(CS_MEM_HANDLE MemHandle)
{
    std::shared_ptr<Mem> mem;
    {
        std::lock_guard<std::mutex> g(reg().mu);
        mem = find(reg().mems, MemHandle);
        if (!mem) return fail(CS_INVALID_HANDLE, "csFreeMem: MemHandle is no live AFDM allocation");
        if (mem->inflight > 0)
            return fail(CS_MEMORY_IN_USE, "csFreeMem: " + std::to_string(mem->inflight.load()) + " request(s) still use it");
        reg().mems.erase(of_handle(MemHandle));
    }
    Drive &d = *mem->csx->drives[mem->drive];
    std::lock_guard<std::mutex> g(d.mu);
    d.frees++;
    return CS_SUCCESS;
}

// ---------------------------------------------------------------- requests

CS_STATUS csQueueStorageRequest(CsStorageRequest *Req, void *Context, csQueueCallbackFn CallbackFn,
                                CS_EVT_HANDLE EventHandle, u64 *CompValue)
{
    return prepare_and_submit([&](Job *job) { return prepare_storage(reg(), Req, job); }, Context, CallbackFn,
                              EventHandle, CompValue);
}

CS_STATUS csQueueCopyMemRequest(CsCopyMemRequest *CopyReq, void *Context, csQueueCallbackFn CallbackFn,
                                CS_EVT_HANDLE EventHandle, u64 *CompValue)
{
    return prepare_and_submit([&](Job *job) { return prepare_copy(reg(), CopyReq, job); }, Context, CallbackFn,
                              EventHandle, CompValue);
}

CS_STATUS csQueueComputeRequest(CsComputeRequest *Req, void *Context, csQueueCallbackFn CallbackFn,
                                CS_EVT_HANDLE EventHandle, u64 *CompValue)
{
    return prepare_and_submit([&](Job *job) { return prepare_compute(reg(), Req, Req ? Req->Args : nullptr, job); },
                              Context, CallbackFn, EventHandle, CompValue);
}

void csHelperSetComputeArg(CsComputeArg *ArgPtr, CS_COMPUTE_ARG_TYPE Type, ...)
{
    if (!ArgPtr) return;
    std::memset(ArgPtr, 0, sizeof *ArgPtr);
    ArgPtr->Type = Type;
    va_list ap;
    va_start(ap, Type);
    switch (Type) {
    case CS_AFDM_TYPE:
        ArgPtr->u.DevMem.MemHandle = va_arg(ap, CS_MEM_HANDLE);
        ArgPtr->u.DevMem.ByteOffset = va_arg(ap, unsigned int);  // the draft's example passes a literal 0
        break;
    case CS_32BIT_VALUE_TYPE: ArgPtr->u.Value32 = va_arg(ap, unsigned int); break;
    case CS_64BIT_VALUE_TYPE: ArgPtr->u.Value64 = va_arg(ap, u64); break;
    case CS_STREAM_TYPE: ArgPtr->u.StreamHandle = va_arg(ap, CS_STREAM_HANDLE); break;
    default: break;
    }
    va_end(ap);
}

CS_STATUS csGetFunction(CS_CSE_HANDLE CSEHandle, char *FunctionName, void *Context, CS_FUNCTION_ID *FunctionId)
{
    (void)Context;
    std::shared_ptr<Csx> csx;
    size_t drive = 0;
    bool whole = false;
    {
        std::lock_guard<std::mutex> g(reg().mu);
        if (auto cse = find(reg().cses, CSEHandle)) {
            csx = cse->csx;
            drive = cse->drive;
        } else if ((csx = find(reg().devs, CSEHandle))) {
            whole = true;  // a CSx handle: a function of all its drives
        }
    }
    if (!csx) return fail(CS_INVALID_HANDLE, "csGetFunction: CSEHandle is no open CSE (or CSx)");
    if (!FunctionName || !FunctionId) return fail(CS_INVALID_ARG, "csGetFunction: FunctionName or FunctionId is NULL");
    return guarded([&] {
        for (int pass = 0; pass < 2; pass++) {
            if (whole) {
                for (const auto &p : common_programs(*csx)) {
                    if (p.name == FunctionName) {
                        *FunctionId = p.id;
                        return CS_SUCCESS;
                    }
                }
            } else {
                for (const auto &p : csx->drives[drive]->caps().programs) {
                    if (p.name == FunctionName) {
                        *FunctionId = p.id;
                        return CS_SUCCESS;
                    }
                }
            }
            for (auto &d : csx->drives) d->refresh();  // loaded meanwhile?
        }
        return fail(CS_INVALID_FUNCTION_NAME, std::string("csGetFunction: no function named ") + FunctionName);
    });
}

CS_STATUS csStopFunction(CS_FUNCTION_ID)
{
    return fail(CS_UNSUPPORTED, "csStopFunction: a function id names no drive (csAbortCSE stops a CSE's Executes)");
}

// ---------------------------------------------------------------- batches

CS_STATUS csAllocBatchRequest(CS_BATCH_MODE Mode, int MaxReqs, CS_BATCH_HANDLE *BatchHandle)
{
    if (Mode == CS_BATCH_HYBRID) return fail(CS_UNSUPPORTED, "csAllocBatchRequest: the draft does not say how a hybrid batch's flow is given");
    if (Mode != CS_BATCH_SERIAL && Mode != CS_BATCH_PARALLEL)
        return fail(CS_INVALID_OPTION, "csAllocBatchRequest: Mode " + std::to_string(Mode));
    if (MaxReqs < 1 || MaxReqs > kMaxBatch)
        return fail(CS_INVALID_ARG, "csAllocBatchRequest: MaxReqs " + std::to_string(MaxReqs) + " (1 to " + std::to_string(kMaxBatch) + ")");
    if (!BatchHandle) return fail(CS_INVALID_ARG, "csAllocBatchRequest: BatchHandle is NULL");
    auto b = std::make_shared<Batch>();
    b->mode = Mode;
    b->capacity = MaxReqs;
    std::lock_guard<std::mutex> g(reg().mu);
    const uint64_t h = reg().make(kBatch);
    reg().batches[h] = b;
    *BatchHandle = to_handle(h);
    return CS_SUCCESS;
}

CS_STATUS csFreeBatchRequest(CS_BATCH_HANDLE BatchHandle)
{
    std::lock_guard<std::mutex> g(reg().mu);
    auto b = find(reg().batches, BatchHandle);
    if (!b) return fail(CS_INVALID_HANDLE, "csFreeBatchRequest: BatchHandle is no live batch");
    if (b->running > 0) return fail(CS_HANDLE_IN_USE, "csFreeBatchRequest: the batch is running");
    reg().batches.erase(of_handle(BatchHandle));
    return CS_SUCCESS;
}

}  // extern "C"

namespace {

// A copy of a batch request (its type and fields checked when the batch is queued).
CS_STATUS copy_entry(const CsBatchRequest *req, Entry *e)
{
    if (!req) return fail(CS_INVALID_ARG, "batch entry: Req is NULL");
    e->type = req->ReqType;
    switch (req->ReqType) {
    case CS_COPY_AFDM: e->copy = req->u.CopyMem; break;
    case CS_STORAGE_IO: e->storage = req->u.StorageIo; break;
    case CS_QUEUE_COMPUTE: {
        const CsComputeRequest &c = req->u.Compute;
        if (c.NumArgs < 0 || c.NumArgs > kMaxArgs)
            return fail(CS_INVALID_ARG, "batch entry: NumArgs " + std::to_string(c.NumArgs));
        const size_t need = offsetof(CsBatchRequest, u) + compute_size(c.NumArgs);
        if (c.NumArgs > 1 && req->reqLength < compute_size(c.NumArgs) && req->reqLength < need)
            return fail(CS_INVALID_LENGTH, "batch entry: reqLength " + std::to_string(req->reqLength) + " is too short for " +
                                               std::to_string(c.NumArgs) + " arguments (" + std::to_string(compute_size(c.NumArgs)) + ")");
        e->compute_head = c;
        e->args.assign(c.Args, c.Args + c.NumArgs);
        break;
    }
    default: return fail(CS_INVALID_OPTION, "batch entry: ReqType " + std::to_string(req->ReqType));
    }
    return CS_SUCCESS;
}

std::list<Entry>::iterator entry_at(Batch &b, CS_BATCH_INDEX i)
{
    return std::find_if(b.entries.begin(), b.entries.end(), [i](const Entry &e) { return e.index == i; });
}

}  // namespace

extern "C" {

CS_STATUS csAddBatchEntry(CS_BATCH_HANDLE BatchHandle, CsBatchRequest *Req, CS_BATCH_INDEX Before,
                          CS_BATCH_INDEX After, CS_BATCH_INDEX *Curr)
{
    std::lock_guard<std::mutex> g(reg().mu);
    auto b = find(reg().batches, BatchHandle);
    if (!b) return fail(CS_INVALID_HANDLE, "csAddBatchEntry: BatchHandle is no live batch");
    if (!Curr) return fail(CS_INVALID_ARG, "csAddBatchEntry: Curr is NULL");
    if (b->running > 0) return fail(CS_HANDLE_IN_USE, "csAddBatchEntry: the batch is running");
    if (static_cast<int>(b->entries.size()) >= b->capacity)
        return fail(CS_OUT_OF_RESOURCES, "csAddBatchEntry: the batch holds its " + std::to_string(b->capacity) +
                                             " entries (csHelperResizeBatchRequest)");
    Entry e;
    if (const CS_STATUS s = copy_entry(Req, &e); s != CS_SUCCESS) return s;
    auto before = Before ? entry_at(*b, Before) : b->entries.end();
    auto after = After ? entry_at(*b, After) : b->entries.end();
    if ((Before && before == b->entries.end()) || (After && after == b->entries.end()))
        return fail(CS_INVALID_ARG, "csAddBatchEntry: no entry " + std::to_string(Before ? Before : After) + " in the batch");
    std::list<Entry>::iterator at;
    if (Before && After) {
        if (std::next(after) != before)
            return fail(CS_INVALID_ARG, "csAddBatchEntry: entry " + std::to_string(After) + " is not just before entry " +
                                            std::to_string(Before));
        at = before;
    } else if (Before) {
        at = before;
    } else if (After) {
        at = std::next(after);
    } else {
        at = b->entries.begin();  // both 0: the first request
    }
    e.index = b->next_index++;
    b->entries.insert(at, std::move(e));
    *Curr = b->next_index - 1;
    return CS_SUCCESS;
}

CS_STATUS csHelperReconfigureBatchEntry(CS_BATCH_HANDLE BatchHandle, CS_BATCH_INDEX Entry_, CsBatchRequest *Req)
{
    std::lock_guard<std::mutex> g(reg().mu);
    auto b = find(reg().batches, BatchHandle);
    if (!b) return fail(CS_INVALID_HANDLE, "csHelperReconfigureBatchEntry: BatchHandle is no live batch");
    if (b->running > 0) return fail(CS_HANDLE_IN_USE, "csHelperReconfigureBatchEntry: the batch is running");
    auto it = entry_at(*b, Entry_);
    if (it == b->entries.end()) return fail(CS_INVALID_ARG, "csHelperReconfigureBatchEntry: no entry " + std::to_string(Entry_));
    Entry e;
    if (const CS_STATUS s = copy_entry(Req, &e); s != CS_SUCCESS) return s;
    e.index = it->index;
    *it = std::move(e);
    return CS_SUCCESS;
}

CS_STATUS csHelperResizeBatchRequest(CS_BATCH_HANDLE BatchHandle, int MaxReqs)
{
    std::lock_guard<std::mutex> g(reg().mu);
    auto b = find(reg().batches, BatchHandle);
    if (!b) return fail(CS_INVALID_HANDLE, "csHelperResizeBatchRequest: BatchHandle is no live batch");
    if (MaxReqs < 1 || MaxReqs > kMaxBatch || MaxReqs < static_cast<int>(b->entries.size()))
        return fail(CS_INVALID_ARG, "csHelperResizeBatchRequest: MaxReqs " + std::to_string(MaxReqs) + " (the batch holds " +
                                        std::to_string(b->entries.size()) + "; at most " + std::to_string(kMaxBatch) + ")");
    b->capacity = MaxReqs;
    return CS_SUCCESS;
}

CS_STATUS csQueueBatchRequest(CS_BATCH_HANDLE BatchHandle, void *Context, csQueueCallbackFn CallbackFn,
                              CS_EVT_HANDLE EventHandle, u64 *CompValue)
{
    std::shared_ptr<Batch> b;
    std::vector<std::shared_ptr<Job>> jobs;
    {
        std::lock_guard<std::mutex> g(reg().mu);
        b = find(reg().batches, BatchHandle);
        if (!b) return fail(CS_INVALID_HANDLE, "csQueueBatchRequest: BatchHandle is no live batch");
        if (b->entries.empty()) return fail(CS_INVALID_ARG, "csQueueBatchRequest: the batch has no entries");
        int n = 0;
        for (const Entry &e : b->entries) {
            auto job = std::make_shared<Job>();
            CS_STATUS s = CS_SUCCESS;
            switch (e.type) {
            case CS_COPY_AFDM: s = prepare_copy(reg(), &e.copy, job.get()); break;
            case CS_STORAGE_IO: s = prepare_storage(reg(), &e.storage, job.get()); break;
            case CS_QUEUE_COMPUTE: s = prepare_compute(reg(), &e.compute_head, e.args.data(), job.get()); break;
            }
            if (s != CS_SUCCESS) return fail(s, "batch entry " + std::to_string(n) + " (index " + std::to_string(e.index) + "): " + t_error);
            jobs.push_back(job);
            n++;
        }
        b->running++;
    }
    // The batch counts as running until its entries ran, or until it is dropped unrun (a bad event).
    struct Running {
        std::shared_ptr<Batch> b;
        std::atomic<bool> done{false};
        void end()
        {
            if (!done.exchange(true)) b->running--;
        }
        ~Running() { end(); }
    };
    auto running = std::make_shared<Running>();
    running->b = b;
    const CS_BATCH_MODE mode = b->mode;
    Job all;
    all.run = [jobs, mode, running](uint64_t *comp) {
        CS_STATUS status = CS_SUCCESS;
        if (mode == CS_BATCH_SERIAL) {
            for (const auto &j : jobs) {
                status = j->run(comp);
                if (status != CS_SUCCESS) break;
            }
        } else {
            std::vector<CS_STATUS> st(jobs.size(), CS_SUCCESS);
            std::vector<uint64_t> cv(jobs.size(), 0);
            std::vector<std::string> errs(jobs.size());
            std::atomic<size_t> next{0};
            auto worker = [&] {
                for (size_t i; (i = next++) < jobs.size();) {
                    t_error.clear();
                    st[i] = jobs[i]->run(&cv[i]);
                    errs[i] = t_error;
                }
            };
            std::vector<std::thread> ts;
            for (size_t t = 0; t < std::min<size_t>(jobs.size(), kParallelBatchThreads); t++) ts.emplace_back(worker);
            for (auto &t : ts) t.join();
            *comp = cv[0];
            for (size_t i = 0; i < st.size(); i++) {
                if (st[i] != CS_SUCCESS) {
                    status = fail(st[i], "batch entry " + std::to_string(i) + ": " + errs[i]);
                    break;
                }
            }
        }
        for (const auto &j : jobs) j->hold.reset();  // AFDM and devices free before the completion is heard of
        running->end();
        return status;
    };
    return submit(std::move(all), Context, CallbackFn, EventHandle, CompValue);
}

// ---------------------------------------------------------------- events

CS_STATUS csCreateEvent(CS_EVT_HANDLE *EventHandle)
{
    if (!EventHandle) return fail(CS_INVALID_ARG, "csCreateEvent: EventHandle is NULL");
    std::lock_guard<std::mutex> g(reg().mu);
    const uint64_t h = reg().make(kEvt);
    reg().evts[h] = std::make_shared<Event>();
    *EventHandle = to_handle(h);
    return CS_SUCCESS;
}

CS_STATUS csDeleteEvent(CS_EVT_HANDLE EventHandle)
{
    std::lock_guard<std::mutex> g(reg().mu);
    auto e = find(reg().evts, EventHandle);
    if (!e) return fail(CS_INVALID_EVENT, "csDeleteEvent: EventHandle is no live event");
    {
        std::lock_guard<std::mutex> ge(e->mu);
        if (e->pending > 0)
            return fail(CS_HANDLE_IN_USE, "csDeleteEvent: " + std::to_string(e->pending) + " request(s) queued with it have not completed");
    }
    reg().evts.erase(of_handle(EventHandle));
    return CS_SUCCESS;
}

CS_STATUS csPollEvent(CS_EVT_HANDLE EventHandle, void *Context)
{
    std::shared_ptr<Event> e;
    {
        std::lock_guard<std::mutex> g(reg().mu);
        e = find(reg().evts, EventHandle);
    }
    if (!e) return fail(CS_INVALID_EVENT, "csPollEvent: EventHandle is no live event");
    std::lock_guard<std::mutex> g(e->mu);
    if (e->done.empty()) return CS_NOT_DONE;
    Done d = std::move(e->done.front());
    e->done.pop_front();
    if (Context) *static_cast<void **>(Context) = d.context;
    if (d.status != CS_SUCCESS) t_error = d.error;
    return d.status;
}

// ---------------------------------------------------------------- device management

CS_STATUS csQueryDeviceForComputeList(CS_DEV_HANDLE DevHandle, int *Size, CsFunctionInfo *FunctionInfo)
{
    auto csx = dev_of(DevHandle);
    if (!csx) return fail(CS_INVALID_HANDLE, "csQueryDeviceForComputeList: DevHandle is no open CSx");
    if (!Size) return fail(CS_INVALID_ARG, "csQueryDeviceForComputeList: Size is NULL");
    std::vector<CsFunctionInfo> list;
    const uint32_t units = csx->cse_count();
    for (const auto &p : common_programs(*csx)) {
        CsFunctionInfo f{};
        f.FunctionId = p.id;
        f.NumUnits = static_cast<u8>(std::min<uint32_t>(units, 255));
        copy_name(f.Name, sizeof f.Name, p.name);
        list.push_back(f);
    }
    return put_bytes(list.data(), list.size() * sizeof(CsFunctionInfo), Size, FunctionInfo);
}

CS_STATUS csQueryDeviceProperties(CS_DEV_HANDLE DevHandle, int *Length, CSxProperties *Buffer)
{
    auto csx = dev_of(DevHandle);
    if (!csx) return fail(CS_INVALID_HANDLE, "csQueryDeviceProperties: DevHandle is no open CSx");
    if (!Length) return fail(CS_INVALID_ARG, "csQueryDeviceProperties: Length is NULL");
    const uint32_t n = csx->cse_count();
    const size_t need = std::max(sizeof(CSxProperties), offsetof(CSxProperties, CSE) + n * sizeof(CSEProperties));
    std::vector<uint8_t> out(need, 0);
    auto *p = reinterpret_cast<CSxProperties *>(out.data());
    csd::Device &d0 = *csx->drives[0]->dev;
    const uint32_t ver = csx->drives[0]->caps().version;  // 00010001h: 1.1
    p->HwVersion = static_cast<u16>((ver >> 16) << 8 | (ver & 0xFF));
    p->SwVersion = static_cast<u16>(CSD_VERSION_MAJOR << 8 | CSD_VERSION_MINOR);
    // PCI vendor and subsystem vendor from Identify Controller, where the transport answers it
    try {
        std::vector<uint8_t> id(4096);
        csd::Command c;
        c.opcode = 0x06;
        c.admin = true;
        c.cdw10 = 1;
        c.data = id.data();
        c.data_len = 4096;
        if (d0.transport().submit(c).status == 0) {
            std::memcpy(&p->VendorId, id.data(), 2);
            std::memcpy(&p->DeviceId, id.data() + 2, 2);
        }
    } catch (const csd::Error &) {
        // 0: unknown (csd.ko answers no admin command)
    }
    copy_name(p->FriendlyName, sizeof p->FriendlyName, csx->name);
    uint64_t slm = 0;
    bool visible = true;
    for (const auto &d : csx->drives) {
        slm += d->caps().slm_size;
        visible = visible && d->dev->slm_host_pointer() != nullptr;
    }
    p->CFMinMB = 0;
    p->FDMinMB = static_cast<u32>(slm >> 20);
    p->Flags.FDMIsDeviceManaged = 0;  // this process's allocator hands AFDM out
    p->Flags.FDMIsHostVisible = visible ? 1 : 0;
    p->Flags.BatchRequestsSupported = 0;  // batches run in this library
    p->Flags.StreamsSupported = 0;
    p->NumCSEs = static_cast<u16>(n);
    for (uint32_t i = 0; i < n; i++) {
        CSEProperties e{};
        Drive &d = *csx->drives[csx->drive_of_cse(i)];
        e.HwVersion = p->HwVersion;
        e.SwVersion = p->SwVersion;
        copy_name(e.UniqueName, sizeof e.UniqueName, csx->cse_name(i));
        uint16_t builtin = 0;
        for (const auto &pr : d.caps().programs) builtin += pr.type != CSD_PROGRAM_DOWNLOADED;
        e.NumBuiltinFunctions = builtin;
        e.MaxRequestsPerBatch = kMaxBatch;
        e.MaxFunctionParametersAllowed = kMaxArgs;
        e.MaxConcurrentFunctionInstances = 1;  // a compute unit runs one program at a time
        std::memcpy(out.data() + offsetof(CSxProperties, CSE) + i * sizeof(CSEProperties), &e, sizeof e);
    }
    return put_bytes(out.data(), need, Length, Buffer);
}

CS_STATUS csQueryDeviceCapabilities(CS_DEV_HANDLE DevHandle, CsCapabilities *Caps)
{
    auto csx = dev_of(DevHandle);
    if (!csx) return fail(CS_INVALID_HANDLE, "csQueryDeviceCapabilities: DevHandle is no open CSx");
    if (!Caps) return fail(CS_INVALID_ARG, "csQueryDeviceCapabilities: Caps is NULL");
    std::memset(Caps, 0, sizeof *Caps);
    for (const auto &p : common_programs(*csx)) {
        if (p.name == "decompress") Caps->Functions.Decompression = 1;
        if (p.name == "checksum") Caps->Functions.Checksum = Caps->Functions.Hash = 1;  // CRC-32C, XXH64
        if (p.name == "filter") Caps->Functions.DbFilter = 1;
    }
    return CS_SUCCESS;
}

CS_STATUS csQueryDeviceStatistics(CS_DEV_HANDLE DevHandle, CS_STAT_TYPE Type, void *Identifier, CsStatsInfo *Stats)
{
    auto csx = dev_of(DevHandle);
    if (!csx) return fail(CS_INVALID_HANDLE, "csQueryDeviceStatistics: DevHandle is no open CSx");
    if (!Stats) return fail(CS_INVALID_ARG, "csQueryDeviceStatistics: Stats is NULL");
    std::memset(Stats, 0, sizeof *Stats);
    return guarded([&] {
        switch (Type) {
        case CS_STAT_CSE_USAGE: {
            std::vector<size_t> drives;
            if (Identifier) {
                const char *name = static_cast<const char *>(Identifier);
                for (uint32_t n = 0; n < csx->cse_count(); n++) {
                    if (csx->cse_name(n) == name) drives.push_back(csx->drive_of_cse(n));
                }
                if (drives.empty()) return fail(CS_INVALID_ARG, std::string("csQueryDeviceStatistics: the CSx has no CSE named ") + name);
            } else {
                for (size_t i = 0; i < csx->drives.size(); i++) drives.push_back(i);
            }
            Stats->CSEDetails.PowerOnMins = CS_STAT_UNKNOWN32;
            Stats->CSEDetails.IdleTimeMins = CS_STAT_UNKNOWN32;
            uint64_t execs = 0;
            for (size_t i : drives) {
                const csd::Statistics s = csx->drives[i]->dev->stats();
                if (!s.available) {
                    execs = CS_STAT_UNKNOWN64;
                    break;
                }
                execs += s.exec_cmds;  // the drive's: its units share one counter
            }
            Stats->CSEDetails.TotalFunctionExecutions = execs;
            return CS_SUCCESS;
        }
        case CS_STAT_CSx_MEM_USAGE: {
            CSxMemoryUsage &m = Stats->MemoryDetails;
            uint64_t allocs = 0, frees = 0, bytes = 0;
            bool known = true;
            uint64_t to_host = 0, from_host = 0, to_ns = 0, from_ns = 0;
            for (const auto &d : csx->drives) {
                csd::SlmAllocator &a = d->dev->slm();
                m.TotalAllocatedFDM += a.size() - a.free_bytes();
                m.LargestBlockAvailableFDM = std::max<uint64_t>(m.LargestBlockAvailableFDM, a.largest_free());
                m.TotalFreeCSFM += a.free_bytes();
                {
                    std::lock_guard<std::mutex> g(d->mu);
                    allocs += d->allocs;
                    frees += d->frees;
                    bytes += d->alloc_bytes;
                }
                const csd::Statistics s = d->dev->stats();
                known = known && s.available;
                to_host += s.bytes_slm_to_host;
                from_host += s.bytes_host_to_slm;
                to_ns += s.bytes_slm_to_namespace;
                from_ns += s.bytes_namespace_to_slm;
            }
            m.AverageAllocatedSizeFDM = allocs ? bytes / allocs : 0;
            m.TotalAllocationsFDM = allocs;
            m.TotalDeAllocationsFDM = frees;
            m.TotalFDMtoHostinMB = known ? to_host >> 20 : CS_STAT_UNKNOWN64;
            m.TotalHosttoFDMinMB = known ? from_host >> 20 : CS_STAT_UNKNOWN64;
            m.TotalFDMtoStorageinMB = known ? to_ns >> 20 : CS_STAT_UNKNOWN64;
            m.TotalStoragetoFDMinMB = known ? from_ns >> 20 : CS_STAT_UNKNOWN64;
            return CS_SUCCESS;
        }
        case CS_STAT_FUNCTION: {
            if (!Identifier) return fail(CS_INVALID_ARG, "csQueryDeviceStatistics: CS_STAT_FUNCTION needs a CS_FUNCTION_ID * as Identifier");
            const CS_FUNCTION_ID id = *static_cast<const CS_FUNCTION_ID *>(Identifier);
            CSFUsage &f = Stats->FunctionDetails;
            FnTimes t;
            uint64_t execs = 0;
            for (const auto &d : csx->drives) {
                if (!program_of(*d, id)) return fail(CS_UNKNOWN_COMPUTE_FUNCTION, "csQueryDeviceStatistics: no function " + std::to_string(id) + " on " + d->path);
                const csd::Statistics s = d->dev->stats();
                execs = (!s.available || execs == CS_STAT_UNKNOWN64) ? CS_STAT_UNKNOWN64 : execs + s.per_program[id];
                std::lock_guard<std::mutex> g(d->mu);
                auto it = d->times.find(static_cast<uint16_t>(id));
                if (it == d->times.end()) continue;
                const FnTimes &x = it->second;
                t.shortest_us = t.runs == 0 ? x.shortest_us : std::min(t.shortest_us, x.shortest_us);
                t.longest_us = std::max(t.longest_us, x.longest_us);
                t.total_us += x.total_us;
                t.runs += x.runs;
            }
            f.TotalExecutions = execs;
            f.TotalUptimeSeconds = t.total_us / 1000000;
            f.ShortestTimeUsecs = t.shortest_us;
            f.LongestTimeUsecs = t.longest_us;
            f.AverageTimeUsecs = t.runs ? t.total_us / t.runs : 0;
            return CS_SUCCESS;
        }
        }
        return fail(CS_INVALID_OPTION, "csQueryDeviceStatistics: Type " + std::to_string(Type));
    });
}

CS_STATUS csSetDeviceCapability(CS_DEV_HANDLE, CS_CAP_TYPE, CsCapabilityInfo *)
{
    return fail(CS_UNSUPPORTED, "csSetDeviceCapability: the drives have no temperature or outstanding-I/O setting");
}

CS_STATUS csDownload(CS_DEV_HANDLE DevHandle, CsDownloadInfo *ProgramInfo)
{
    auto csx = dev_of(DevHandle);
    if (!csx) return fail(CS_INVALID_HANDLE, "csDownload: DevHandle is no open CSx");
    if (!ProgramInfo) return fail(CS_INVALID_ARG, "csDownload: ProgramInfo is NULL");
    CsDownloadInfo &in = *ProgramInfo;
    if (in.Type < CS_FPGA_BITSTREAM || in.Type > CS_LARGE_DATA_SET) return fail(CS_INVALID_OPTION, "csDownload: Type " + std::to_string(in.Type));
    if (in.Type != CS_BPF_PROGRAM) return fail(CS_UNSUPPORTED, "csDownload: the drives take eBPF programs (CS_BPF_PROGRAM) only");
    const bool slot_ok = in.Index >= CSD_SLOT_FIRST && in.Index < CSD_SLOT_FIRST + CSD_NR_SLOTS;
    return guarded([&] {
        if (in.Unload) {
            if (!slot_ok) return fail(CS_INVALID_ARG, "csDownload: unload of Index " + std::to_string(in.Index) + " (a slot is 256 to 511)");
            for (auto &d : csx->drives) {
                std::lock_guard<std::mutex> g(d->caps_mu);
                d->dev->program_unload(static_cast<uint16_t>(in.Index));
            }
            return CS_SUCCESS;
        }
        if (in.Index != 0 && !slot_ok) return fail(CS_INVALID_ARG, "csDownload: Index " + std::to_string(in.Index) + " (0, or a slot 256 to 511)");
        if (!in.DataBuffer || in.Length <= 0) return fail(CS_INVALID_ARG, "csDownload: no image (DataBuffer NULL or Length <= 0)");
        if (in.SubType < 1 || in.SubType > static_cast<int>(CSD_MAX_RECORD_SIZE))
            return fail(CS_INVALID_ARG, "csDownload: SubType (the record size) " + std::to_string(in.SubType) + " (1 to 4096)");
        const uint32_t max_bytes = csx->drives[0]->caps().max_program_bytes;
        if (static_cast<uint32_t>(in.Length) > max_bytes)
            return fail(CS_INVALID_LENGTH, "csDownload: an image of " + std::to_string(in.Length) + " bytes (the drive takes " +
                                               std::to_string(max_bytes) + ")");
        uint16_t slot = static_cast<uint16_t>(in.Index);
        std::vector<uint16_t> loaded;
        try {
            for (auto &d : csx->drives) {  // the first drive picks; the others take the same slot
                std::lock_guard<std::mutex> g(d->caps_mu);
                slot = d->dev->program_load(in.DataBuffer, static_cast<uint32_t>(in.Length), static_cast<uint32_t>(in.SubType), slot);
                loaded.push_back(slot);
            }
        } catch (...) {
            for (size_t i = 0; i < loaded.size(); i++) {
                try {
                    std::lock_guard<std::mutex> g(csx->drives[i]->caps_mu);
                    csx->drives[i]->dev->program_unload(loaded[i]);
                } catch (const csd::Error &) {
                }
            }
            throw;
        }
        in.Index = slot;
        return CS_SUCCESS;
    });
}

CS_STATUS csConfig(CS_CSE_HANDLE, CsConfigInfo *)
{
    return fail(CS_UNSUPPORTED, "csConfig: the drives take no configuration");
}

CS_STATUS csAbortCSE(CS_CSE_HANDLE CSEHandle)
{
    std::shared_ptr<Cse> cse;
    {
        std::lock_guard<std::mutex> g(reg().mu);
        cse = find(reg().cses, CSEHandle);
    }
    if (!cse) return fail(CS_INVALID_HANDLE, "csAbortCSE: CSEHandle is no open CSE");
    return guarded([&] {
        cse->csx->drives[cse->drive]->dev->abort_executes();
        return CS_SUCCESS;
    });
}

CS_STATUS csResetCSE(CS_CSE_HANDLE)
{
    return fail(CS_UNSUPPORTED, "csResetCSE: libcsd cannot reset a controller");
}

CS_STATUS csAllocStream(CS_DEV_HANDLE, CS_STREAM_ALLOC_TYPE, CS_STREAM_HANDLE *)
{
    return fail(CS_UNSUPPORTED, "csAllocStream: no streams");
}

CS_STATUS csFreeStream(CS_STREAM_HANDLE)
{
    return fail(CS_UNSUPPORTED, "csFreeStream: no streams");
}

CS_STATUS csQueryLibrarySupport(CS_LIBRARY_SUPPORT Type, int *Length, char *Buffer)
{
    if (Type == CS_FILE_SYSTEMS_SUPPORTED) return put_text("", Length, Buffer);  // none: the drives hold no file system
    if (Type == CS_RESERVED) return fail(CS_UNSUPPORTED, "csQueryLibrarySupport: CS_RESERVED");
    return fail(CS_INVALID_OPTION, "csQueryLibrarySupport: Type " + std::to_string(Type));
}

CS_STATUS csQueryPlugin(CsQueryPluginRequest *, csQueryPluginCallbackFn)
{
    return fail(CS_UNSUPPORTED, "csQueryPlugin: no plug-ins");
}

CS_STATUS csRegisterPlugin(CsPluginRequest *)
{
    return fail(CS_UNSUPPORTED, "csRegisterPlugin: no plug-ins");
}

CS_STATUS csDeregisterPlugin(CsPluginRequest *)
{
    return fail(CS_UNSUPPORTED, "csDeregisterPlugin: no plug-ins");
}

}  // extern "C"
