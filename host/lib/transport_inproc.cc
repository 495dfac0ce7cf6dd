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
// The core is the controller: it decodes, counts and queues the CSD commands, answers NVM
// Read / Write / Flush (csd_core_nvm_submit over the port's nvm_io) and says how long the
// timing model holds each completion; this file moves bytes (memcpy, pread / pwrite), runs
// the jobs the core hands it on its threads (emu_threads.hpp) and waits out a held
// completion on the thread that posts it, as QEMU's glue does with its timer. The core
// answers Identify too, with this device's serial, model and limits. It is the only file
// of libcsd that includes the core.
// A process forked after open gets its own copy of the device (SLM, program slots, compute
// units, statistics, the model's clock), sharing only the backing file: fork() waits until
// no command of the device is in flight, and the child starts its own compute units.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "csd/error.hpp"
#include "csd_config.h"
#include "csd_core.h"
#include "emu_threads.hpp"
#include "fork_hold.hpp"
#include "ns_map.hpp"
#include "transports.hpp"

namespace csd {

namespace {

constexpr uint16_t kInvalidField = CSD_STATUS_INVALID_FIELD | CSD_STATUS_DNR;
constexpr uint16_t kInternal = CSD_STATUS_INTERNAL_ERROR;
constexpr uint32_t kMaxTransfer = 8 << 20;  // per command; no kernel limits this device
constexpr uint32_t kMaxNsid = 256;          // NN: NSIDs 1..256, as QEMU's (the standard front end's too)

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
        // The core's option table reads and checks every option (csd_config.h): the names,
        // values and messages of QEMU's csd.<name> properties, with "emu: " before them.
        struct Config : csd_config {
            Config() { csd_config_init(this, "", CSD_OPTION_EMU); }
            ~Config() { csd_config_clear(this); }
        } cfg;
        char why[512];
        const int read = csd_config_set_list(&cfg, q == std::string::npos ? "" : spec.c_str() + q + 1, why, sizeof why);
        if (read > 0) throw Error("emu: the in-process device's options:\n" + options_help(), EINVAL);
        if (read < 0 || csd_config_finish(&cfg, why, sizeof why) != 0) throw Error(std::string("emu: ") + why, EINVAL);
        if (path_.empty()) throw Error("emu: no backing file given (emu:<file>)", EINVAL);
        lba_ = static_cast<uint32_t>(cfg.lba_size);
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
        const auto taken = [](void *t, uint32_t nsid) { return nsid == static_cast<TransportInproc *>(t)->ns_.nsid ? 1 : 0; };
        if (!core_ || csd_core_cs_attach_config(core_, &cfg, kMaxNsid, taken, this, why, sizeof why) != 0) {
            if (core_) csd_core_free(core_);
            ::close(fd_);
            throw Error(std::string("emu: ") + why, EINVAL);
        }
        port_ = csd_port{from_host, to_host, ns_info, port_now, this, kMaxTransfer, kMaxNsid,
                         ns_read, ns_write, port_complete, exclusive, run, nullptr,
                         nullptr, nullptr, nvm_io, "csd-inproc", "nvme-csd in-process device"};
        // no timer: a held completion's thread waits (wait_until); nvm_io: the core answers
        // NVM Read / Write / Flush and Identify too
        map_ = std::make_unique<NamespaceMap>(fd_, ns_.lba_count * lba_);
        pool_ = std::make_unique<WorkerPool>(cfg.compute_units);
        fork_hold_add(this, ForkLevel::device, [this] { hold_for_fork(); }, [this](bool child) { resume_after_fork(child); });
    }

    ~TransportInproc() override
    {
        fork_hold_remove(this);
        pool_.reset();  // its jobs drained
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
        // The hot path of small random reads (GPU-initiated, or host threads): an NVM Read
        // of the namespace answered by the core at once, with no future made; everything
        // else (a Memory Read of the memory namespace too), and every Read under a timing
        // model, goes through dispatch().
        if (!cmd.admin && cmd.opcode == 0x02 && cmd.nsid == ns_.nsid && !csd_core_model_on(core_)) {
            const InFlightGate::Scope counted(gate_);
            uint64_t finish;
            return nvm(cmd, &finish);
        }
        return submit_async(cmd).get();
    }
    // Under a timing model, an NVM Read runs now and its modelled finish is returned rather
    // than waited for (the delay or overrun is counted as for dispatch()'s); anything else as
    // submit().
    Completion submit_deferred(const Command &cmd, uint64_t *finish_ns) override
    {
        *finish_ns = 0;
        if (cmd.admin || cmd.opcode != 0x02 || cmd.nsid != ns_.nsid || !csd_core_model_on(core_)) return submit(cmd);
        const InFlightGate::Scope counted(gate_);
        const Completion r = nvm(cmd, finish_ns);
        csd_core_model_hold(core_, &port_, nullptr, *finish_ns);  // counts; the caller waits
        return r;
    }
    // The simulated peer-to-peer drive: the namespace's mapping (none under a timing model,
    // whose Reads must be commands).
    const uint8_t *namespace_host_pointer() override { return csd_core_model_on(core_) ? nullptr : map_->data(); }

    std::future<Completion> submit_async(const Command &cmd) override
    {
        const InFlightGate::Scope counted(gate_);  // until it returns; one the core ends later counts until then
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
                csd_core_cancel(core_, static_cast<Cmd *>(r));
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
        gate_.hold();
        pool_->hold();
    }

    // After fork(), in the parent and (child = true) in the child: commands go on. The
    // child starts its own compute units with its first Execute, and closes the lock
    // descriptor, the parent's (it opens its own with its first Compare and Write).
    void resume_after_fork(bool child)
    {
        if (child && lock_fd_ >= 0) ::close(lock_fd_);
        if (child) lock_fd_ = -1;
        pool_->resume(child);
        gate_.resume(child);
    }

    // A command in the core (its port's req; CSD_CORE_LATER: until it ends): its data and its completion.
    struct Cmd {
        TransportInproc *t;
        const Command *cmd;
    };
    struct Req : Cmd {
        std::promise<Completion> done;
    };

    // Runs one command: the core answers every one through the port (NVM Read / Write /
    // Flush over its nvm_io; SLM Load / Store, the copies and Compare and Write over its
    // namespace I/O), or prepares an Execute's job for a compute unit.
    std::future<Completion> dispatch(const Command &cmd)
    {
        const csd_sqe sqe{core_cmd(cmd), cmd.cdw2, cmd.cdw3, 0, cmd.admin};
        csd_cpl cpl;
        csd_op op;
        auto *req = new Req{{this, &cmd}, {}};
        auto fut = req->done.get_future();
        gate_.enter_also();  // until the core posts it (port_complete), for CSD_CORE_LATER
        {
            std::lock_guard<std::recursive_mutex> g(reqs_mu_);
            reqs_.insert(req);
        }
        const uint16_t st = csd_core_submit(core_, &sqe, &port_, static_cast<Cmd *>(req), &cpl, &op);
        if (st == CSD_CORE_LATER) return fut;
        unlist(req);
        delete req;
        gate_.leave();
        wait_until(csd_core_model_hold(core_, &port_, nullptr, cpl.finish_ns));
        return ready({st, static_cast<uint64_t>(cpl.dw1) << 32 | cpl.dw0});
    }

    // A request whose work is done: abort() finds it no more.
    void unlist(Req *req)
    {
        std::lock_guard<std::recursive_mutex> g(reqs_mu_);
        reqs_.erase(req);
    }

    // An NVM Read, Write or Flush answered by the core at once (csd_core_nvm_submit).
    Completion nvm(const Command &cmd, uint64_t *finish)
    {
        Cmd c{this, &cmd};
        const csd_cmd dw = core_cmd(cmd);
        return {csd_core_nvm_submit(core_, &dw, &port_, &c, finish), 0};
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
        const Command *c = static_cast<Cmd *>(req)->cmd;
        if (len > c->data_len) return kInvalidField;
        if (len) std::memcpy(buf, c->data, len);
        return 0;
    }
    static uint16_t to_host(void *req, const void *buf, uint64_t len)
    {
        const Command *c = static_cast<Cmd *>(req)->cmd;
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
        done(arg, static_cast<Cmd *>(req)->t->file_io(false, off, static_cast<uint8_t *>(buf), len));
    }
    static void ns_write(void *req, uint32_t, uint64_t off, const void *buf, uint64_t len, csd_io_done done,
                         void *arg)
    {
        done(arg, static_cast<Cmd *>(req)->t->file_io(true, off, static_cast<uint8_t *>(const_cast<void *>(buf)), len));
    }

    // A command the core ended later: no earlier than its modelled finish, and not abortable
    // while it waits for it (its work is done, as in QEMU, whose Abort finds nothing then).
    static void port_complete(void *req, uint16_t status, const csd_cpl *cpl)
    {
        auto *r = static_cast<Req *>(static_cast<Cmd *>(req));
        TransportInproc *t = r->t;
        t->unlist(r);
        t->wait_until(csd_core_model_hold(t->core_, &t->port_, req, cpl->finish_ns));
        r->done.set_value({status, static_cast<uint64_t>(cpl->dw1) << 32 | cpl->dw0});
        delete r;
        t->gate_.leave();
    }

    // The port's compute unit: a worker thread runs work, then done.
    static void run(void *req, void (*work)(void *), void (*done)(void *), void *arg)
    {
        static_cast<Cmd *>(req)->t->pool_->run([work, done, arg] {
            work(arg);
            done(arg);
        });
    }

    // Compare and Write's range against every other device on the backing file (of this
    // process, of another, or of a child forked after open): an open-file-description lock
    // on the lock descriptor, which is this device's own in this process (the core orders
    // this device's own commands).
    static int exclusive(void *req, uint32_t, uint64_t off, uint64_t len, int on)
    {
        TransportInproc *t = static_cast<Cmd *>(req)->t;
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

    // This device's timer: the thread that posts a completion the core holds (csd_core_model_hold
    // without port->arm_timer) waits for its finish (0: none) itself.
    static void wait_until(uint64_t finish)
    {
        const uint64_t now = now_ns();
        if (finish <= now) return;
        // a few microseconds (a low-latency drive's read) are spun: a sleep overshoots them many times
        if (finish - now > kSpinNs) std::this_thread::sleep_for(std::chrono::nanoseconds(finish - now));
        while (now_ns() < finish) {
#if defined(__x86_64__)
            __builtin_ia32_pause();
#endif
        }
    }

    // The port's NVM I/O (the core checked the command): the command's buffer from or into
    // the backing file; a small Read copies from the mapped namespace, with no system call
    // (a large one stays pread(), which costs the same copy and maps no pages into this
    // process). A Flush is fdatasync().
    static uint16_t nvm_io(void *req, uint32_t, int write, uint64_t off, uint64_t len)
    {
        const Cmd *r = static_cast<Cmd *>(req);
        TransportInproc *t = r->t;
        if (write && !len) return fdatasync(t->fd_) == 0 ? 0 : kInternal;
        if (r->cmd->data_len < len) return kInvalidField;
        if (!write && len <= kMappedReadMax && t->map_->data()) {
            std::memcpy(r->cmd->data, t->map_->data() + off, len);
            return 0;
        }
        const ssize_t n = write ? pwrite(t->fd_, r->cmd->data, len, static_cast<off_t>(off))
                                : pread(t->fd_, r->cmd->data, len, static_cast<off_t>(off));
        return n == static_cast<ssize_t>(len) ? 0 : kInternal;
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

    static constexpr uint64_t kSpinNs = 50000;  // waits up to this long spin
    static constexpr uint64_t kMappedReadMax = 64 << 10;  // Reads up to this size copy from the mapping
    std::string path_;
    int fd_ = -1;
    std::unique_ptr<NamespaceMap> map_;  // the namespace, mapped (NamespaceMap: may be empty)
    uint32_t lba_ = 512;
    NamespaceInfo ns_;
    csd_core *core_ = nullptr;
    csd_port port_{};  // the core's view of this device (from_host, to_host, ns_info, now_ns)
    std::unique_ptr<WorkerPool> pool_;  // the compute units
    std::recursive_mutex reqs_mu_;  // the requests the core holds (abort: its cancel may complete one)
    std::set<Req *> reqs_;
    std::mutex lock_mu_;  // lock_fd_'s opening
    int lock_fd_ = -1;    // Compare and Write's lock descriptor (open_lock_fd), opened when first needed
    InFlightGate gate_;  // commands in flight, for fork()
};

}  // namespace

std::unique_ptr<Transport> make_inproc_transport(const std::string &spec)
{
    return std::make_unique<TransportInproc>(spec);
}

}  // namespace csd
