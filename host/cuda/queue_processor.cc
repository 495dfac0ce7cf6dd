// SPDX-License-Identifier: MIT
// queue_processor.cc - NVMe queue pairs in shared memory, served onto a Device by polling
// host threads (the controller side of csd::gpu::GpuQueues); with a Mover, Reads into memory
// the host cannot store into (a GPU's) are staged and moved before their completions post.
#include "queue_processor.hpp"

#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <cstddef>
#include <cstring>

#include "csd/error.hpp"
#include "csd/in_process.hpp"
#include "csd_spec.h"

namespace csd {

namespace {

constexpr uint16_t kInvalidOpcode = CSD_STATUS_INVALID_OPCODE | CSD_STATUS_DNR;
constexpr uint16_t kInvalidField = CSD_STATUS_INVALID_FIELD | CSD_STATUS_DNR;
constexpr uint16_t kDataTransferError = CSD_STATUS_DATA_TRANSFER_ERROR | CSD_STATUS_DNR;
constexpr uint16_t kInternalError = CSD_STATUS_INTERNAL_ERROR;

}  // namespace

QueueProcessor::QueueProcessor(Device &dev, const NvmeQueueSet &host, uint64_t agent_arena, int pollers, Mover *mover)
    : dev_(dev), in_(in_process(dev.transport())), set_(host), agent_arena_(agent_arena), mover_(mover)
{
    if (!set_.sq || !set_.cq || !set_.db || set_.queues == 0) throw Error("queue processor: no queues", EINVAL);
    if (set_.depth < 2 || set_.depth > 65536) throw Error("queue processor: depth must be 2..65536", EINVAL);
    if (set_.lba_size < 512 || (set_.lba_size & (set_.lba_size - 1))) {
        throw Error("queue processor: the LBA size must be a power of two of at least 512", EINVAL);
    }
    if (pollers < 1) throw Error("queue processor: at least one poller", EINVAL);
    if (static_cast<uint32_t>(pollers) > set_.queues) pollers = static_cast<int>(set_.queues);
    pollers_ = pollers;
    for (int i = 0; mover_ && i < pollers; i++) lanes_.push_back(mover_->lane());
    for (auto &l : lanes_) l->start();  // all made (and their memory allocated) before any starts
    counts_ = std::make_unique<Counts[]>(static_cast<size_t>(pollers));
    for (int i = 0; i < pollers; i++) threads_.emplace_back([this, i, pollers] { poll(i, pollers); });
}

QueueProcessor::~QueueProcessor()
{
    stop_ = true;
    for (auto &t : threads_) t.join();
    for (auto &l : lanes_) l->stop();  // all stopped before any goes (freeing can wait for them all)
    lanes_.clear();  // each waits for its copies before its staging goes
}

uint64_t QueueProcessor::commands() const
{
    uint64_t n = 0;
    for (int i = 0; i < pollers_; i++) n += counts_[i].commands.load(std::memory_order_relaxed);
    return n;
}

uint64_t QueueProcessor::direct_reads() const
{
    uint64_t n = 0;
    for (int i = 0; i < pollers_; i++) n += counts_[i].direct.load(std::memory_order_relaxed);
    return n;
}

QueueProcessor::Timed QueueProcessor::timed() const
{
    Timed t;
    uint64_t late = 0;
    for (int i = 0; i < pollers_; i++) {
        t.completions += counts_[i].timed.load(std::memory_order_relaxed);
        late += counts_[i].late_ns.load(std::memory_order_relaxed);
        t.max_late_ns = std::max(t.max_late_ns, counts_[i].max_late_ns.load(std::memory_order_relaxed));
    }
    t.mean_late_ns = t.completions ? double(late) / t.completions : 0;
    return t;
}

uint64_t QueueProcessor::errors() const
{
    uint64_t n = 0;
    for (int i = 0; i < pollers_; i++) n += counts_[i].errors.load(std::memory_order_relaxed);
    return n;
}

Completion QueueProcessor::run(const NvmeSqe &e)
{
    Command c;
    Completion refused;
    bool to_mover = false;
    if (!decode(e, &c, &refused, &to_mover)) return refused;
    if (to_mover) return Completion{kDataTransferError, 0};  // moving needs a poller's lane
    try {
        return dev_.transport().submit(c);
    } catch (const Error &) {
        return Completion{kInternalError, 0};
    }
}

const uint8_t *QueueProcessor::direct_source(const NvmeSqe &e, uint32_t len) const
{
    // only a plain Read (no FUA, limited retry, protection or directive fields) of this
    // namespace, all of it inside; the drive answers anything else (and its errors)
    if (e.opcode != 0x02 || e.nsid != set_.nsid || (e.cdw12 >> 16) || e.cdw13 || e.cdw14 || e.cdw15) return nullptr;
    const uint8_t *ns = in_ ? in_->namespace_host_pointer() : nullptr;  // none under a timing model
    if (!ns) return nullptr;
    const uint64_t slba = uint64_t(e.cdw11) << 32 | e.cdw10, nlb = (e.cdw12 & 0xFFFFu) + 1;
    const uint64_t count = dev_.ns().lba_count;
    if (slba >= count || nlb > count - slba) return nullptr;
    const uint8_t *src = ns + slba * set_.lba_size;
    return mover_->reaches(src, len) ? src : nullptr;
}

bool QueueProcessor::decode(const NvmeSqe &e, Command *out, Completion *refused, bool *to_mover)
{
    *to_mover = false;
    Command &c = *out;
    const uint64_t nlb = (e.cdw12 & 0xFFFFu) + 1;
    uint64_t len = 0;
    switch (e.opcode) {
    case 0x00:  // NVM Flush
    case CSD_OPC_SLM_LOAD:
    case CSD_OPC_SLM_STORE:
    case CSD_OPC_PROGRAM_UNLOAD:
        break;
    case 0x01:  // NVM Write
    case 0x02:  // NVM Read
        len = nlb * set_.lba_size;
        break;
    case CSD_OPC_SLM_WRITE:
    case CSD_OPC_SLM_READ:
        len = e.cdw12;
        break;
    case CSD_OPC_EXECUTE:  // CDW10 is the descriptor's length
        len = e.cdw10;
        break;
    case CSD_OPC_PROGRAM_LOAD:  // CDW13 is the chunk's length
        len = e.cdw13;
        break;
    case CSD_OPC_COMPARE_WRITE:  // expected LBAs, then new LBAs
        len = 2 * nlb * set_.lba_size;
        break;
    default:
        *refused = Completion{kInvalidOpcode, 0};
        return false;
    }
    if (len > dev_.transport().max_transfer()) {
        *refused = Completion{kInvalidField, 0};
        return false;
    }
    c.opcode = e.opcode;
    c.nsid = e.nsid;
    c.cdw2 = e.cdw2, c.cdw3 = e.cdw3;
    c.cdw10 = e.cdw10, c.cdw11 = e.cdw11, c.cdw12 = e.cdw12, c.cdw13 = e.cdw13, c.cdw14 = e.cdw14, c.cdw15 = e.cdw15;
    if (len) {
        // the whole buffer inside the arena, checked without overflow; or, for data the drive
        // returns (Read, SLM Read), inside the mover's memory
        const bool in_arena = e.prp1 >= agent_arena_ && e.prp1 - agent_arena_ <= set_.arena_bytes &&
                              len <= set_.arena_bytes - (e.prp1 - agent_arena_);
        const bool returns_data = e.opcode == 0x02 || e.opcode == CSD_OPC_SLM_READ;
        if (!in_arena && !(mover_ && returns_data && len <= mover_->max_transfer() && mover_->covers(e.prp1, len))) {
            *refused = Completion{kDataTransferError, 0};
            return false;
        }
        c.data = in_arena ? set_.arena + (e.prp1 - agent_arena_) : nullptr;
        c.data_len = static_cast<uint32_t>(len);
        *to_mover = !in_arena;
    }
    return true;
}

void QueueProcessor::post(uint32_t q, QueueState &s, uint16_t cid, const Completion &c, Counts &counts)
{
    NvmeCqe *out = &set_.cq[uint64_t(q) * set_.depth + s.cq_tail];
    out->dw0 = c.dw0();
    out->dw1 = c.dw1();
    out->sq_head = static_cast<uint16_t>(s.sq_head);
    out->sq_id = static_cast<uint16_t>(q);
    // the word holding the command ID and the phase tag last, in one store, so that a
    // reader that sees the new phase sees the whole entry
    const uint32_t last = uint32_t(cid) | uint32_t(uint16_t(c.status << 1 | s.phase)) << 16;
    __atomic_store_n(reinterpret_cast<uint32_t *>(reinterpret_cast<uint8_t *>(out) + offsetof(NvmeCqe, cid)), last,
                     __ATOMIC_RELEASE);
    if (++s.cq_tail == set_.depth) s.cq_tail = 0, s.phase ^= 1;
    counts.commands.store(counts.commands.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    if (c.status) counts.errors.store(counts.errors.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
}

bool QueueProcessor::cq_full(uint32_t q, QueueState &s) const
{
    // the consumer's head doorbell, a line it writes, is read only when the CQ looks full
    const uint32_t next = (s.cq_tail + 1) % set_.depth;
    return next == s.cq_head && next == (s.cq_head = set_.db[q].cq_head);
}

namespace {

uint64_t steady_ns()
{
    return static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count());
}

}  // namespace

bool QueueProcessor::post_due(Poller &p, Counts &counts)
{
    std::vector<Due> &due = p.due;
    if (due.empty()) return false;
    const uint64_t now = steady_ns();
    bool posted = false;
    while (!due.empty() && due.front().finish <= now) {
        const Due &d = due.front();
        QueueState &s = p.state[d.q];
        if (cq_full(d.q, s)) break;  // its consumer is behind: again next round
        Completion c = d.c;
        if (d.batch) {  // its data is posted only once it has been moved
            const MoverLane::State m = p.lane->state(d.batch);
            if (m == MoverLane::State::running) break;
            if (m == MoverLane::State::failed) c = Completion{kInternalError, 0};
        }
        post(d.q, s, d.cid, c, counts);
        s.due--;
        const uint64_t late = now - d.finish;
        counts.timed.store(counts.timed.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
        counts.late_ns.store(counts.late_ns.load(std::memory_order_relaxed) + late, std::memory_order_relaxed);
        if (late > counts.max_late_ns.load(std::memory_order_relaxed)) counts.max_late_ns.store(late, std::memory_order_relaxed);
        std::pop_heap(due.begin(), due.end(), std::greater<Due>());
        due.pop_back();
        posted = true;
    }
    return posted;
}

bool QueueProcessor::post_moved(Poller &p, Counts &counts)
{
    bool posted = false;
    while (!p.moving.empty()) {
        const Moving &m = p.moving.front();
        const MoverLane::State st = p.lane->state(m.batch);
        if (st == MoverLane::State::running) break;
        QueueState &s = p.state[m.q];
        if (cq_full(m.q, s)) break;  // its consumer is behind: again next round
        post(m.q, s, m.cid, st == MoverLane::State::done ? m.c : Completion{kInternalError, 0}, counts);
        s.moving--;
        p.moving.pop_front();
        posted = true;
    }
    return posted;
}

bool QueueProcessor::serve(uint32_t q, Poller &p, Counts &counts)
{
    QueueState &s = p.state[q];
    std::vector<Due> &due = p.due;
    bool worked = false;
    // Executes handed to compute units earlier: completed when done, in any order (the
    // submitter matches completions by command ID)
    for (size_t i = 0; i < s.pending.size() && !cq_full(q, s);) {
        if (s.pending[i].second.wait_for(std::chrono::seconds(0)) != std::future_status::ready) {
            i++;
            continue;
        }
        Completion c;
        try {
            c = s.pending[i].second.get();
        } catch (const Error &) {
            c = Completion{kInternalError, 0};
        }
        post(q, s, s.pending[i].first, c, counts);
        s.pending[i] = std::move(s.pending.back());
        s.pending.pop_back();
        worked = true;
    }
    const uint32_t tail = set_.db[q].sq_tail;
    std::atomic_thread_fence(std::memory_order_acquire);
    if (tail >= set_.depth) return worked;  // an invalid doorbell value: ignored, as a controller would
    // At most a burst of entries per visit (NVMe's arbitration burst): the poller's other
    // queues and the completions falling due wait for no more than that.
    for (uint32_t taken = 0; s.sq_head != tail && taken < kBurst && !stop_.load(std::memory_order_relaxed); taken++) {
        // an entry is taken only with room for its completion (counting those in flight)
        if (s.pending.size() + s.due + s.moving + 1 >= set_.depth || cq_full(q, s)) break;
        NvmeSqe e;
        std::memcpy(&e, const_cast<const NvmeSqe *>(&set_.sq[uint64_t(q) * set_.depth + s.sq_head]), sizeof e);
        Command cmd;
        Completion c;
        bool to_mover = false;
        const bool ok = decode(e, &cmd, &c, &to_mover);
        if (const uint8_t *src = ok && to_mover ? direct_source(e, cmd.data_len) : nullptr) {
            // the simulated peer-to-peer drive: the drive runs the Read (its checks, its
            // counting) moving no bytes, and the mover copies them from the namespace's pages
            worked = true;
            if (!s.head_read) {
                Completion r;
                try {
                    r = in_ ? in_->submit_mapped_read(cmd) : Completion{kInternalError, 0};
                } catch (const Error &) {
                    r = Completion{kInternalError, 0};
                }
                if (r.status != 0) {  // the drive's answer; nothing is copied
                    s.sq_head = (s.sq_head + 1) % set_.depth;
                    post(q, s, e.cid, r, counts);
                    continue;
                }
                s.head_read = true;
            }
            const uint64_t batch = p.lane->copy_from(e.prp1, src, cmd.data_len);
            if (!batch) break;  // its ring full: this entry again at the next visit (read once)
            s.head_read = false;
            counts.direct.fetch_add(1, std::memory_order_relaxed);
            s.sq_head = (s.sq_head + 1) % set_.depth;
            p.moving.push_back({batch, q, e.cid, Completion{0, 0}});
            s.moving++;
            continue;
        }
        if (ok && to_mover) {  // the drive reads into the lane's staging; the lane moves it
            cmd.data = p.lane->stage(cmd.data_len);
            if (!cmd.data) {
                p.lane->flush();
                cmd.data = p.lane->stage(cmd.data_len);
            }
            if (!cmd.data) {  // staging all in flight: this entry again at the next visit
                worked = true;
                break;
            }
        }
        s.sq_head = (s.sq_head + 1) % set_.depth;
        worked = true;
        if (ok) {
            try {
                if (e.opcode == CSD_OPC_EXECUTE) {
                    // a program runs on a compute unit: this poller goes on serving meanwhile
                    std::future<Completion> f = dev_.transport().submit_async(cmd);
                    if (f.wait_for(std::chrono::seconds(0)) != std::future_status::ready) {
                        s.pending.emplace_back(e.cid, std::move(f));
                        continue;
                    }
                    c = f.get();
                } else {
                    // under a timing model: posted at its modelled finish (post_due), not waited for here
                    uint64_t finish = 0;
                    c = in_ ? in_->submit_deferred(cmd, &finish) : dev_.transport().submit(cmd);
                    const uint64_t batch = to_mover && c.status == 0 ? p.lane->copy(e.prp1, static_cast<const uint8_t *>(cmd.data), cmd.data_len) : 0;
                    if (finish) {
                        due.push_back({finish, q, e.cid, c, batch});
                        std::push_heap(due.begin(), due.end(), std::greater<Due>());
                        s.due++;
                        continue;
                    }
                    if (batch) {  // posted once its data has been moved (post_moved)
                        p.moving.push_back({batch, q, e.cid, c});
                        s.moving++;
                        continue;
                    }
                }
            } catch (const Error &) {
                c = Completion{kInternalError, 0};
            }
        }
        post(q, s, e.cid, c, counts);
    }
    return worked;
}

void QueueProcessor::poll(int index, int pollers)
{
    Poller p;
    p.state.resize(set_.queues);
    p.lane = lanes_.empty() ? nullptr : lanes_[static_cast<size_t>(index)].get();
    const bool eager = p.lane && p.lane->moves_at_once();
    unsigned idle = 0;
    while (!stop_.load(std::memory_order_relaxed)) {
        bool worked = false;
        for (uint32_t q = index; q < set_.queues; q += pollers) {
            // the completions due (and, from a lane that moves copy by copy, those moved) are
            // posted between queue visits, not once per round over the queues
            worked |= post_due(p, counts_[index]);
            if (eager) worked |= post_moved(p, counts_[index]);
            worked |= serve(q, p, counts_[index]) || !p.state[q].pending.empty();  // Executes in flight: keep spinning
            if (eager) p.lane->publish();  // this visit's copies to the mover at once
        }
        if (p.lane) {
            p.lane->flush();  // a round's copies go as one batch
            worked |= post_moved(p, counts_[index]) || !p.moving.empty();  // copies in flight: keep spinning
        }
        worked |= post_due(p, counts_[index]) || !p.due.empty();  // completions due soon: keep spinning
        if (worked) {
            idle = 0;
        } else if (++idle < 4096) {
            _mm_pause();
        } else {
            std::this_thread::sleep_for(std::chrono::microseconds(20));  // nothing for a while: stop spinning
        }
    }
}

}  // namespace csd
