// SPDX-License-Identifier: MIT
// transport_inproc.cc - the in-process device: the same device core that QEMU embeds,
// answering the same NVMe commands (Identify, Get Log Page, Read, Write, Flush and the
// CSD command set) over a backing file, with the programs on `cu` worker threads. No VM, no
// root. Spec: <file>?NAME=VALUE&... with the options of the core's option table
// (csd_config.h; docs/command-set.md lists them, <file>?help prints them): the names of
// QEMU's csd.<name> properties (slm-size, compute-units, plugin-dir, vendor, nvme-cs,
// model, model.NAME) and the older slm, cu, plugins; lba, size (when creating the file)
// and vendor-io are this device's own. nvme-cs=on gives memory namespace 2 and compute
// namespace 3 (docs/nvme-cs.md); under a timing model every command completes no earlier
// than the modelled drive would complete it (host clock).
// The core decodes, counts and queues the CSD commands; this file moves their bytes and
// runs the jobs the core hands it, as QEMU's glue does. It is the only file of libcsd that includes the core.
// A process forked after open gets its own copy of the device (SLM, program slots, compute
// units, statistics, the model's clock), sharing only the backing file: fork() waits until
// no command of the device is in flight, and the child starts its own compute units.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <new>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "csd/error.hpp"
#include "csd_config.h"
#include "csd_core.h"
#include "fork_hold.hpp"
#include "ns_map.hpp"
#include "nvme_cs.h"
#include "synth.hpp"
#include "transports.hpp"

namespace csd {

namespace {

constexpr uint16_t kInvalidOpcode = CSD_STATUS_INVALID_OPCODE | CSD_STATUS_DNR;
constexpr uint16_t kInvalidField = CSD_STATUS_INVALID_FIELD | CSD_STATUS_DNR;
constexpr uint16_t kLbaRange = CSD_STATUS_LBA_OUT_OF_RANGE | CSD_STATUS_DNR;
constexpr uint16_t kInvalidNs = 0x000B | CSD_STATUS_DNR;
constexpr uint16_t kInternal = CSD_STATUS_INTERNAL_ERROR;
constexpr uint32_t kMaxTransfer = 8 << 20;  // per command; no kernel limits this device

std::future<Completion> ready(Completion c)
{
    std::promise<Completion> p;
    p.set_value(c);
    return p.get_future();
}

// The emu: options, one line each (the core's option table, as QEMU's -device nvme,help).
std::string options_help()
{
    char *text = csd_options_help(CSD_OPTION_EMU, "");
    std::string s = text ? text : "";
    std::free(text);
    return s;
}

class TransportInproc : public Transport {
public:
    explicit TransportInproc(const std::string &spec)
    {
        const size_t q = spec.find('?');
        path_ = spec.substr(0, q);
        std::map<std::string, std::string> kv;
        if (q != std::string::npos) {
            std::string rest = spec.substr(q + 1);
            size_t start = 0;
            while (start <= rest.size()) {
                const size_t amp = rest.find('&', start);
                const std::string item = rest.substr(start, amp == std::string::npos ? std::string::npos : amp - start);
                const size_t eq = item.find('=');
                if (!item.empty()) {
                    if (item == "help") throw Error("emu: the in-process device's options:\n" + options_help(), EINVAL);
                    if (eq == std::string::npos) throw Error("emu: option '" + item + "' needs a value", EINVAL);
                    kv[item.substr(0, eq)] = item.substr(eq + 1);
                }
                if (amp == std::string::npos) break;
                start = amp + 1;
            }
        }
        // The core's option table reads and checks every option (csd_config.h): the names,
        // values and messages of QEMU's csd.<name> properties, with "emu: " before them.
        struct Config : csd_config {
            Config() { csd_config_init(this, "", CSD_OPTION_EMU); }
            ~Config() { csd_config_clear(this); }
        } cfg;
        char why[512];
        for (auto &[k, v] : kv) {
            if (csd_config_set(&cfg, k.c_str(), v.c_str(), why, sizeof why) != 0) throw Error(std::string("emu: ") + why, EINVAL);
        }
        if (csd_config_finish(&cfg, why, sizeof why) != 0) throw Error(std::string("emu: ") + why, EINVAL);
        if (path_.empty()) throw Error("emu: no backing file given (emu:<file>)", EINVAL);
        lba_ = static_cast<uint32_t>(cfg.lba_size);
        vendor_ = cfg.vendor;
        vendor_io_ = cfg.vendor_io;
        mem_nsid_ = cfg.nvme_cs ? ns_.nsid + 1 : 0;
        const uint64_t size = cfg.backing_size;
        fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
        if (fd_ < 0) throw Error("emu: open " + path_, errno);
        struct stat st;
        fstat(fd_, &st);
        if (st.st_size == 0 && ftruncate(fd_, static_cast<off_t>(size)) != 0) {
            const int e = errno;
            ::close(fd_);
            throw Error("emu: size " + path_, e);
        }
        fstat(fd_, &st);
        ns_.nsid = 1;
        ns_.lba_size = lba_;
        ns_.lba_count = static_cast<uint64_t>(st.st_size) / lba_;
        core_ = csd_core_new_config(&cfg, why, sizeof why);
        if (!core_) {
            ::close(fd_);
            throw Error(std::string("emu: ") + why, EINVAL);
        }
        csd_core_cs_attach(core_, mem_nsid_);
        port_ = csd_port{from_host, to_host, ns_info, port_now, this, kMaxTransfer, ns_.nsid,
                         ns_read, ns_write, port_complete, exclusive, run, nullptr};
        map_ = std::make_unique<NamespaceMap>(fd_, ns_.lba_count * lba_);
        cu_ = cfg.compute_units;
        start_workers();
        fork_hold_add(this, ForkLevel::device, [this] { hold_for_fork(); }, [this](bool child) { resume_after_fork(child); });
    }

    ~TransportInproc() override
    {
        fork_hold_remove(this);
        {
            std::lock_guard<std::mutex> g(mu_);
            stop_ = true;
        }
        cv_.notify_all();
        for (auto &t : workers_) t.join();
        csd_core_free(core_);
        if (lock_fd_ >= 0) ::close(lock_fd_);
        ::close(fd_);
    }

    const char *name() const override { return "inproc"; }
    uint32_t max_transfer() const override { return kMaxTransfer; }
    NamespaceInfo ns() const override { return ns_; }
    std::string backing_file() const override { return path_; }
    uint8_t *slm_host_pointer() override
    {
        return csd_core_slm_base(core_);
    }
    Completion submit(const Command &cmd) override
    {
        // The hot path of small random reads (GPU-initiated, or host threads): an NVM Read of
        // the namespace, copied from its mapping with no future made (dispatch() runs the
        // same rw()); everything else, and every Read under a timing model, goes through
        // dispatch().
        if (!cmd.admin && cmd.opcode == 0x02 && cmd.nsid == ns_.nsid && map_->data() && !csd_core_model_on(core_)) {
            const InFlight counted(*this);
            return rw(cmd, false);
        }
        return submit_async(cmd).get();
    }
    // Under a timing model, an NVM Read of the namespace runs now and its modelled finish is
    // returned rather than waited for (own_io's Read, less the wait: the delay or overrun is
    // counted as it is there); anything else as submit().
    Completion submit_deferred(const Command &cmd, uint64_t *finish_ns) override
    {
        *finish_ns = 0;
        if (cmd.admin || cmd.opcode != 0x02 || cmd.nsid != ns_.nsid || !csd_core_model_on(core_)) return submit(cmd);
        const InFlight counted(*this);
        const uint64_t arrived = now_ns();
        csd_model_work w;
        csd_model_work_nvm(cmd.opcode, ((cmd.cdw12 & 0xFFFF) + 1) * uint64_t{lba_}, &w);
        const Completion r = rw(cmd, false);
        if (r.status) return r;  // refused: no media time (as own_io)
        *finish_ns = csd_core_model_schedule(core_, &w, arrived);
        csd_core_model_done(core_, *finish_ns, now_ns());
        return r;
    }
    // The simulated peer-to-peer drive: the namespace's mapping (none under a timing model,
    // whose Reads must be commands).
    const uint8_t *namespace_host_pointer() override { return csd_core_model_on(core_) ? nullptr : map_->data(); }

    std::future<Completion> submit_async(const Command &cmd) override
    {
        const InFlight counted(*this);  // until it returns; one the core ends later counts until then
        return dispatch(cmd);
    }

    // NVMe Abort of a command submit_async sent that has not completed: the core ends it
    // (Command Abort Requested) if it waits for a compute unit or a Compare and Write's
    // LBAs, or stops its running program. False if it is not in flight.
    bool abort(const Command &cmd) override
    {
        std::lock_guard<std::recursive_mutex> g(reqs_mu_);
        for (Req *r : reqs_) {
            if (r->cmd == &cmd) {
                csd_core_cancel(core_, r);
                return true;
            }
        }
        return false;
    }

private:
    // Before fork(): waits until no command is in flight (none then holds a lock of this
    // device or of its core, or is half done) and holds new ones back until after it.
    void hold_for_fork()
    {
        std::unique_lock<std::mutex> g(gate_mu_);
        forking_.store(true);  // new commands wait, so that those in flight run out
        gate_cv_.wait(g, [this] { return in_flight() == 0; });
        g.release();  // held across fork(); released by resume_after_fork
        mu_.lock();  // a worker between jobs may hold it for a moment
    }

    // After fork(), in the parent and (child = true) in the child: commands go on. The
    // child has none of the parent's threads: it forgets their handles (joining or
    // detaching a thread of another process is undefined) and starts its own compute
    // units with its first Execute; a condition variable that had the parent's workers
    // waiting on it is made anew; the lock descriptor, the parent's, is closed (the child
    // opens its own with its first Compare and Write).
    void resume_after_fork(bool child)
    {
        if (child) {
            if (lock_fd_ >= 0) ::close(lock_fd_);
            lock_fd_ = -1;
            for (auto &t : workers_) new (&t) std::thread();  // the thread is not ours: no destructor
            workers_.clear();
            new (&cv_) std::condition_variable();
            new (&gate_cv_) std::condition_variable();
        }
        forking_.store(false);
        mu_.unlock();
        gate_mu_.unlock();
        gate_cv_.notify_all();
    }

    // A command in flight, for fork(): counted while it lives.
    class InFlight {
    public:
        explicit InFlight(TransportInproc &t) : t_(t) { t_.enter(); }
        ~InFlight() { t_.leave(); }
        InFlight(const InFlight &) = delete;
        InFlight &operator=(const InFlight &) = delete;

    private:
        TransportInproc &t_;
    };

    // Commands in flight are counted on per-thread shards (a cache line each), so that
    // threads submitting at millions of commands a second share no line; a fork() sets
    // forking_ and waits for the shards' sum to reach 0. Sequentially consistent: a command
    // either sees forking_ (and steps back) or is seen by the sum.
    struct alignas(64) Shard {
        std::atomic<int64_t> n{0};
    };
    static constexpr unsigned kShards = 64;
    Shard &my_shard()
    {
        static std::atomic<unsigned> next{0};
        static thread_local const unsigned mine = next++ % kShards;
        return shards_[mine];
    }
    int64_t in_flight() const
    {
        int64_t n = 0;
        for (const Shard &s : shards_) n += s.n.load();
        return n;
    }

    // One more command in flight (waits while a fork() is under way).
    void enter()
    {
        Shard &s = my_shard();
        for (;;) {
            s.n.fetch_add(1);
            if (!forking_.load()) return;
            leave();  // a fork() is under way: step back until it is done
            std::unique_lock<std::mutex> g(gate_mu_);
            gate_cv_.wait(g, [this] { return !forking_.load(); });
        }
    }

    // One more in flight, for a command already counted (so it must not wait for fork()).
    void enter_also() { my_shard().n.fetch_add(1); }

    // One command fewer in flight (on any thread: a shard may go below 0, the sum cannot).
    void leave()
    {
        my_shard().n.fetch_sub(1);
        if (forking_.load()) {
            std::lock_guard<std::mutex> g(gate_mu_);
            gate_cv_.notify_all();
        }
    }

    // A command in the core (its port's req; CSD_CORE_LATER: until it ends): its data and its completion.
    struct Req {
        TransportInproc *t;
        const Command *cmd;
        std::promise<Completion> done;
    };

    // Runs one command: the core answers it through the port (SLM Load / Store, the copies
    // and Compare and Write over the port's namespace I/O), or prepares an Execute's job
    // for a compute unit; what it leaves (Identify of the controller and namespace 1, NVM
    // Read / Write / Flush) is this device's own.
    std::future<Completion> dispatch(const Command &cmd)
    {
        if (!cmd.admin && !vendor_io_ && csd_is_io_opcode(cmd.opcode) && cmd.opcode != CSD_OPC_COMPARE_WRITE &&
            !csd_core_cs_csi(core_, cmd.nsid)) {
            return ready({kInvalidOpcode, 0});
        }
        const csd_sqe sqe{core_cmd(cmd), cmd.cdw2, cmd.cdw3, 0, cmd.admin};
        csd_cpl cpl;
        csd_op op;
        auto *req = new Req{this, &cmd, {}};
        auto fut = req->done.get_future();
        enter_also();  // until the core posts it (port_complete), for CSD_CORE_LATER
        {
            std::lock_guard<std::recursive_mutex> g(reqs_mu_);
            reqs_.insert(req);
        }
        const uint16_t st = csd_core_submit(core_, &sqe, &port_, req, &cpl, &op);
        if (st == CSD_CORE_LATER) return fut;
        forget(req);
        leave();
        if (st == CSD_CORE_NOT_MINE) return cmd.admin ? ready(admin(cmd)) : own_io(cmd);
        if (cpl.finish_ns) wait_until(cpl.finish_ns);
        return ready({st, static_cast<uint64_t>(cpl.dw1) << 32 | cpl.dw0});
    }

    // A request the core no longer holds (abort() finds it no more).
    void forget(Req *req)
    {
        {
            std::lock_guard<std::recursive_mutex> g(reqs_mu_);
            reqs_.erase(req);
        }
        delete req;
    }


    // The I/O commands the core leaves to the device: NVM Read, Write, Flush.
    std::future<Completion> own_io(const Command &cmd)
    {
        const uint64_t arrived = csd_core_model_on(core_) ? now_ns() : 0;
        if (cmd.nsid != ns_.nsid) return ready({kInvalidNs, 0});
        if (cmd.opcode > 0x02) return ready({kInvalidOpcode, 0});
        // Flush, Write, Read
        csd_model_work w;  // filled only under the model: with it off a command pays one test
        if (arrived) csd_model_work_nvm(cmd.opcode, cmd.opcode ? ((cmd.cdw12 & 0xFFFF) + 1) * uint64_t{lba_} : 0, &w);
        const Completion r = cmd.opcode == 0x00 ? Completion{static_cast<uint16_t>(fdatasync(fd_) == 0 ? 0 : kInternal), 0}
                                                : rw(cmd, cmd.opcode == 0x01);
        if (r.status || !arrived) return ready(r);  // refused: no media time (as QEMU's glue)
        return modelled(csd_core_model_schedule(core_, &w, arrived), r);
    }

    static uint64_t now_ns()
    {
        return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                         std::chrono::steady_clock::now().time_since_epoch())
                                         .count());
    }

    // The dwords of a command as the core reads them.
    static csd_cmd core_cmd(const Command &c)
    {
        return csd_cmd{c.opcode, c.nsid, c.cdw10, c.cdw11, c.cdw12, c.cdw13, c.cdw14, c.cdw15};
    }

    // What the core knows of the namespace and this device's transfer limit.
    csd_ctx ns_ctx() const { return csd_ctx{ns_.lba_count, ns_.lba_size, kMaxTransfer, 0}; }

    // The port: host memory is the command's buffer.
    static uint16_t from_host(void *req, void *buf, uint64_t len)
    {
        const Command *c = static_cast<Req *>(req)->cmd;
        if (len > c->data_len) return kInvalidField;
        if (len) std::memcpy(buf, c->data, len);
        return 0;
    }
    static uint16_t to_host(void *req, const void *buf, uint64_t len)
    {
        const Command *c = static_cast<Req *>(req)->cmd;
        if (len > c->data_len) return kInvalidField;
        if (len) std::memcpy(c->data, buf, len);
        return 0;
    }
    static int ns_info(void *self, uint32_t nsid, csd_ctx *ctx)
    {
        const auto *t = static_cast<const TransportInproc *>(self);
        if (nsid != t->ns_.nsid) return -1;
        *ctx = t->ns_ctx();
        return 0;
    }
    static uint64_t port_now(void *) { return now_ns(); }

    // Namespace I/O of the port (the core checked the range): done at once.
    static void ns_read(void *req, uint32_t, uint64_t off, void *buf, uint64_t len, csd_io_done done, void *arg)
    {
        done(arg, static_cast<Req *>(req)->t->file_io(false, off, static_cast<uint8_t *>(buf), len));
    }
    static void ns_write(void *req, uint32_t, uint64_t off, const void *buf, uint64_t len, csd_io_done done,
                         void *arg)
    {
        done(arg, static_cast<Req *>(req)->t->file_io(true, off, static_cast<uint8_t *>(const_cast<void *>(buf)), len));
    }

    // A command the core ended later: no earlier than its modelled finish.
    static void port_complete(void *req, uint16_t status, const csd_cpl *cpl)
    {
        auto *r = static_cast<Req *>(req);
        TransportInproc *t = r->t;
        if (cpl->finish_ns) t->wait_until(cpl->finish_ns);
        r->done.set_value({status, static_cast<uint64_t>(cpl->dw1) << 32 | cpl->dw0});
        t->forget(r);
        t->leave();
    }

    // The port's compute unit: a worker thread runs work, then done.
    static void run(void *req, void (*work)(void *), void (*done)(void *), void *arg)
    {
        TransportInproc *t = static_cast<Req *>(req)->t;
        {
            std::lock_guard<std::mutex> g(t->mu_);
            if (t->workers_.empty()) t->start_workers();  // a child forked after open: its first Execute
            t->queue_.push_back([work, done, arg] {
                work(arg);
                done(arg);
            });
        }
        t->cv_.notify_one();
    }

    // Compare and Write's range against every other device on the backing file (of this
    // process, of another, or of a child forked after open): an open-file-description lock
    // on the lock descriptor, which is this device's own in this process (the core orders
    // this device's own commands).
    static int exclusive(void *req, uint32_t, uint64_t off, uint64_t len, int on)
    {
        TransportInproc *t = static_cast<Req *>(req)->t;
        int fd;
        {
            std::lock_guard<std::mutex> g(t->lock_mu_);
            if (t->lock_fd_ < 0) t->lock_fd_ = t->open_lock_fd();
            fd = t->lock_fd_;
        }
        if (fd < 0) return -1;
        struct flock range{};
        range.l_type = on ? F_WRLCK : F_UNLCK;
        range.l_whence = SEEK_SET;
        range.l_start = static_cast<off_t>(off);
        range.l_len = static_cast<off_t>(len);
        int rc;
        while ((rc = fcntl(fd, on ? F_OFD_SETLKW : F_OFD_SETLK, &range)) != 0 && errno == EINTR) {
        }
        return rc;
    }

    // A completion no earlier than a modelled finish (0: no model).
    std::future<Completion> modelled(uint64_t finish, Completion r)
    {
        if (finish) wait_until(finish);
        return ready(r);
    }

    // Completes no earlier than the modelled finish (counts the delay or an overrun).
    void wait_until(uint64_t finish)
    {
        const uint64_t done = now_ns();
        csd_core_model_done(core_, finish, done);
        if (finish <= done) return;
        // a few microseconds (a low-latency drive's read) are spun: a sleep overshoots them many times
        if (finish - done > kSpinNs) std::this_thread::sleep_for(std::chrono::nanoseconds(finish - done));
        while (now_ns() < finish) {
#if defined(__x86_64__)
            __builtin_ia32_pause();
#endif
        }
    }

    // Identify of the controller and of namespace 1, the command set vector (1Ch) and the
    // NVM command set's namespace list (07h): what the core leaves to the device.
    Completion admin(const Command &c)
    {
        if (c.opcode == 0x02) return {kInvalidField, 0};  // a log page neither the core's nor ours
        if (c.opcode != 0x06) return {kInvalidOpcode, 0};
        if (c.data_len < 4096) return {kInvalidField, 0};
        auto *p = static_cast<uint8_t *>(c.data);
        const uint8_t cns = c.cdw10 & 0xFF, csi = static_cast<uint8_t>(c.cdw11 >> 24);
        std::memset(p, 0, 4096);
        switch (cns) {
        case 0x01:
            fill_identify_controller(p, "nvme-csd in-process device", 11);  // MDTS 8 MiB
            std::memcpy(p + 4, "csd-inproc", 10);                           // serial
            if (!vendor_) std::memset(p + CSD_ID_VS_OFFSET, 0, 4);         // no CSD1 signature
            return {0, 0};
        case 0x00:
            if (c.nsid != ns_.nsid) return {kInvalidNs, 0};
            fill_identify_namespace(p, ns_);
            return {0, 0};
        case 0x1C: p[0] = 1 | (mem_nsid_ ? NVME_CS_IOCS_VEC_SLM | NVME_CS_IOCS_VEC_CP : 0); return {0, 0};
        case 0x07:
            if (csi == 0 && ns_.nsid > c.nsid) std::memcpy(p, &ns_.nsid, 4);
            return {0, 0};
        default: return {kInvalidField, 0};
        }
    }


    bool lba_range_ok(uint64_t slba, uint64_t nlb) const
    {
        return slba <= ns_.lba_count && nlb <= ns_.lba_count - slba;
    }

    Completion rw(const Command &c, bool write)
    {
        const uint64_t slba = c.cdw10 | static_cast<uint64_t>(c.cdw11) << 32;
        const uint64_t nlb = (c.cdw12 & 0xFFFF) + 1;
        const uint64_t bytes = nlb * lba_;
        if (!lba_range_ok(slba, nlb)) return {kLbaRange, 0};
        if (bytes > kMaxTransfer || c.data_len < bytes) return {kInvalidField, 0};
        // a small Read from the mapped namespace: no system call (a large one stays pread(),
        // which costs the same copy and maps no pages into this process)
        if (!write && bytes <= kMappedReadMax && map_->data()) {
            std::memcpy(c.data, map_->data() + slba * lba_, bytes);
            return {0, 0};
        }
        const ssize_t n = write ? pwrite(fd_, c.data, bytes, static_cast<off_t>(slba * lba_))
                                : pread(fd_, c.data, bytes, static_cast<off_t>(slba * lba_));
        return {static_cast<uint16_t>(n == static_cast<ssize_t>(bytes) ? 0 : kInternal), 0};
    }

    // len bytes at byte pos of the backing file from (write) or into buf; Internal Error if short.
    uint16_t file_io(bool write, uint64_t pos, uint8_t *buf, uint64_t len)
    {
        uint64_t done = 0;
        while (done < len) {
            const ssize_t n = write ? pwrite(fd_, buf + done, len - done, static_cast<off_t>(pos + done))
                                    : pread(fd_, buf + done, len - done, static_cast<off_t>(pos + done));
            if (n <= 0) return kInternal;
            done += static_cast<uint64_t>(n);
        }
        return 0;
    }

    // A descriptor of the backing file with an open file description of its own (fd_'s
    // is shared with every child forked after open, and so would be any lock taken on
    // it); -1 if it cannot be opened.
    int open_lock_fd() const
    {
        const int fd = ::open(("/proc/self/fd/" + std::to_string(fd_)).c_str(), O_RDWR | O_CLOEXEC);
        return fd >= 0 ? fd : ::open(path_.c_str(), O_RDWR | O_CLOEXEC);  // no /proc: by name
    }

    // The compute units: cu_ worker threads.
    void start_workers()
    {
        for (uint32_t i = 0; i < cu_; i++) workers_.emplace_back([this] { work(); });
    }

    void work()
    {
        for (;;) {
            std::function<void()> job;
            {
                std::unique_lock<std::mutex> g(mu_);
                cv_.wait(g, [this] { return stop_ || !queue_.empty(); });
                if (queue_.empty()) return;  // stop_ and drained
                job = std::move(queue_.front());
                queue_.pop_front();
            }
            job();
        }
    }

    static constexpr uint64_t kSpinNs = 50000;  // waits up to this long spin
    static constexpr uint64_t kMappedReadMax = 64 << 10;  // Reads up to this size copy from the mapping
    std::string path_;
    int fd_ = -1;
    std::unique_ptr<NamespaceMap> map_;  // the namespace, mapped (NamespaceMap: may be empty)
    uint32_t lba_ = 512;
    uint32_t mem_nsid_ = 0;  // nvme-cs=1: the memory namespace (the compute one is next)
    bool vendor_io_ = true;  // vendor-io=0: only the standard front end moves data and runs programs
    bool vendor_ = true;     // vendor=off: no vendor command set at all (opcodes, C0h/C1h, signature)
    NamespaceInfo ns_;
    csd_core *core_ = nullptr;
    csd_port port_{};  // the core's view of this device (from_host, to_host, ns_info, now_ns)
    uint32_t cu_ = 0;
    std::mutex mu_;  // the workers' queue
    std::condition_variable cv_;
    std::deque<std::function<void()>> queue_;
    bool stop_ = false;
    std::vector<std::thread> workers_;
    std::recursive_mutex reqs_mu_;  // the requests the core holds (abort: its cancel may complete one)
    std::set<Req *> reqs_;
    std::mutex lock_mu_;  // lock_fd_'s opening
    int lock_fd_ = -1;    // Compare and Write's lock descriptor (open_lock_fd), opened when first needed
    std::mutex gate_mu_;  // commands in flight, for fork(): waits
    std::condition_variable gate_cv_;
    Shard shards_[kShards];
    std::atomic<bool> forking_{false};
};

}  // namespace

std::unique_ptr<Transport> make_inproc_transport(const std::string &spec)
{
    return std::make_unique<TransportInproc>(spec);
}

}  // namespace csd
