// SPDX-License-Identifier: MIT
// csd::QueueProcessor on the in-process device: this test plays the submitting agent (the
// part a GPU kernel plays for csd::gpu::GpuQueues), writing NVMe entries into queue memory,
// ringing the SQ tail doorbell and reading completions by their phase tag.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "csd/in_process.hpp"
#include "csd/store.hpp"
#include "queue_processor.hpp"
#include "csd_crc32c.h"
#include "csd_spec.h"
#include "forwarding_in_process.hpp"

using namespace csd;

namespace {

std::string g_path;

// Queue memory in this process and the submitter's view of it.
class Queues {
public:
    Queues(uint32_t queues, uint32_t depth, uint64_t arena_bytes, uint32_t lba_size)
        : sq_(size_t(queues) * depth), cq_(size_t(queues) * depth), db_(queues), arena_(arena_bytes),
          state_(queues)
    {
        set.sq = sq_.data(), set.cq = cq_.data(), set.db = db_.data();
        set.arena = arena_.data(), set.arena_bytes = arena_bytes;
        set.queues = queues, set.depth = depth, set.lba_size = lba_size;
        std::memset(cq_.data(), 0, cq_.size() * sizeof(NvmeCqe));
        for (auto &d : db_) d.sq_tail = 0, d.cq_head = 0;
    }
    // Places an entry at queue q's tail (cid = its slot) without ringing.
    uint16_t put(uint32_t q, NvmeSqe e)
    {
        auto &s = state_[q];
        e.cid = static_cast<uint16_t>(s.tail);
        sq_[size_t(q) * set.depth + s.tail] = e;
        s.tail = (s.tail + 1) % set.depth;
        return e.cid;
    }
    void ring(uint32_t q)
    {
        std::atomic_thread_fence(std::memory_order_release);
        db_[q].sq_tail = state_[q].tail;
    }
    // The next completion of queue q (waits up to 5 s); consumes it but rings the CQ head
    // doorbell only when ring_head is true.
    NvmeCqe next(uint32_t q, bool ring_head = true)
    {
        auto &s = state_[q];
        const volatile NvmeCqe *c = &cq_[size_t(q) * set.depth + s.head];
        const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(5);
        while ((c->status_phase & 1) != s.phase) {
            if (std::chrono::steady_clock::now() > end) throw std::runtime_error("no completion within 5 s");
            std::this_thread::yield();
        }
        std::atomic_thread_fence(std::memory_order_acquire);
        NvmeCqe out;
        std::memcpy(&out, const_cast<const NvmeCqe *>(c), sizeof out);
        if (++s.head == set.depth) s.head = 0, s.phase ^= 1;
        if (ring_head) db_[q].cq_head = s.head;
        return out;
    }
    void ring_head(uint32_t q) { db_[q].cq_head = state_[q].head; }
    const NvmeCqe &cq_entry(uint32_t q, uint32_t i) const { return cq_[size_t(q) * set.depth + i]; }
    uint8_t *arena() { return arena_.data(); }
    NvmeQueueSet set;

private:
    struct State {
        uint32_t tail = 0, head = 0;
        uint16_t phase = 1;
    };
    std::vector<NvmeSqe> sq_;
    std::vector<NvmeCqe> cq_;
    std::vector<NvmeDoorbells> db_;
    std::vector<uint8_t> arena_;
    std::vector<State> state_;
};

NvmeSqe read_sqe(uint64_t slba, uint32_t nlb, uint64_t prp1)
{
    NvmeSqe e{};
    e.opcode = 0x02;
    e.nsid = 1;
    e.prp1 = prp1;
    e.cdw10 = static_cast<uint32_t>(slba), e.cdw11 = static_cast<uint32_t>(slba >> 32);
    e.cdw12 = nlb - 1;
    return e;
}

uint16_t status(const NvmeCqe &c) { return c.status_phase >> 1; }

class QueueProcessorTest : public ::testing::Test {
protected:
    void SetUp() override
    {
        dev = Device::open(g_path);
        lba = dev->ns().lba_size;
    }
    std::unique_ptr<Device> dev;
    uint32_t lba = 512;
};

}  // namespace

TEST_F(QueueProcessorTest, ReadsLandInTheArenaAcrossQueueWraps)
{
    // 64 records of 8 LBAs with known bytes, gathered in a scattered order through 3 queues
    // of depth 8 (at most 7 outstanding), so every queue wraps and flips its phase several times.
    const uint32_t nlb = 8, rec = nlb * lba, n = 64;
    std::vector<uint8_t> data(size_t(n) * rec);
    for (size_t i = 0; i < data.size(); i++) data[i] = static_cast<uint8_t>(i * 131 + i / 4093);
    dev->write_lbas(1000, uint64_t(n) * nlb, data.data());
    Queues qs(3, 8, uint64_t(n) * rec, lba);
    const uint64_t agent_base = 0x7f0000000000ull;  // the submitter's own address of the arena
    QueueProcessor proc(*dev, qs.set, agent_base, 2);
    std::vector<uint32_t> order(n);
    for (uint32_t i = 0; i < n; i++) order[i] = (i * 37) % n;  // a permutation
    for (uint32_t done = 0; done < n;) {
        const uint32_t batch = std::min<uint32_t>(7 * 3, n - done);
        std::vector<std::vector<uint16_t>> cids(3);
        for (uint32_t k = 0; k < batch; k++) {
            const uint32_t i = done + k, r = order[i], q = k % 3;
            cids[q].push_back(qs.put(q, read_sqe(1000 + uint64_t(r) * nlb, nlb, agent_base + uint64_t(i) * rec)));
        }
        for (uint32_t q = 0; q < 3; q++) qs.ring(q);
        for (uint32_t q = 0; q < 3; q++) {
            for (uint16_t cid : cids[q]) {
                const NvmeCqe c = qs.next(q);
                EXPECT_EQ(status(c), 0);
                EXPECT_EQ(c.cid, cid);
                EXPECT_EQ(c.sq_id, q);
                EXPECT_EQ(c.sq_head, (cid + 1) % 8);
            }
        }
        done += batch;
    }
    for (uint32_t i = 0; i < n; i++) {
        ASSERT_EQ(std::memcmp(qs.arena() + size_t(i) * rec, data.data() + size_t(order[i]) * rec, rec), 0)
            << "record " << i;
    }
    EXPECT_EQ(proc.commands(), n);
    EXPECT_EQ(proc.errors(), 0u);
}

TEST_F(QueueProcessorTest, SlmWriteThenReadThroughTheQueues)
{
    Queues qs(1, 4, 8192, lba);
    QueueProcessor proc(*dev, qs.set, 0x1000, 1);
    for (int i = 0; i < 4096; i++) qs.arena()[i] = static_cast<uint8_t>(i ^ 0x5a);
    NvmeSqe w{};
    w.opcode = 0x81, w.nsid = 1, w.prp1 = 0x1000, w.cdw10 = 65536, w.cdw12 = 4096;
    NvmeSqe r = w;
    r.opcode = 0x82, r.prp1 = 0x1000 + 4096;
    qs.put(0, w);
    qs.ring(0);
    EXPECT_EQ(status(qs.next(0)), 0);
    qs.put(0, r);
    qs.ring(0);
    EXPECT_EQ(status(qs.next(0)), 0);
    EXPECT_EQ(std::memcmp(qs.arena(), qs.arena() + 4096, 4096), 0);
    std::vector<uint8_t> back(4096);
    dev->slm_read(65536, back.data(), back.size());  // and the SLM itself holds them
    EXPECT_EQ(std::memcmp(back.data(), qs.arena(), 4096), 0);
}

TEST_F(QueueProcessorTest, BadEntriesCompleteWithAnErrorAndTheQueueGoesOn)
{
    const uint64_t base = 0x10000;
    Queues qs(1, 16, 4 * 4096, lba);
    QueueProcessor proc(*dev, qs.set, base, 1);
    NvmeSqe bad_op{};
    bad_op.opcode = 0x7E, bad_op.nsid = 1;
    const uint32_t nlb = 4096 / lba;
    qs.put(0, bad_op);
    qs.put(0, read_sqe(0, nlb, base - 512));                    // PRP below the arena
    qs.put(0, read_sqe(0, nlb, base + 4 * 4096 - 512));         // runs past its end
    qs.put(0, read_sqe(0, nlb, ~0ull - 100));                   // PRP + length overflows
    qs.put(0, read_sqe(0, 65536, base));                        // more than the transfer limit
    qs.put(0, read_sqe(dev->ns().lba_count, 1, base));          // LBAs past the namespace
    qs.put(0, read_sqe(0, nlb, base));                          // and a good one after them all
    qs.ring(0);
    EXPECT_EQ(status(qs.next(0)), 0x4001);  // Invalid Opcode, DNR
    EXPECT_EQ(status(qs.next(0)), 0x4004);  // Data Transfer Error, DNR
    EXPECT_EQ(status(qs.next(0)), 0x4004);
    EXPECT_EQ(status(qs.next(0)), 0x4004);
    EXPECT_EQ(status(qs.next(0)), 0x4002);  // Invalid Field, DNR
    EXPECT_EQ(status(qs.next(0)) & 0x7FF, 0x80);  // LBA Out of Range, from the device
    EXPECT_EQ(status(qs.next(0)), 0);
    EXPECT_EQ(proc.errors(), 6u);
}

TEST_F(QueueProcessorTest, AFullCompletionQueueWaitsForItsConsumer)
{
    // depth 4: three completions fill the CQ until its head doorbell moves; a fourth
    // command must not overwrite the first, unconsumed entry.
    Queues qs(1, 4, 4096, lba);
    QueueProcessor proc(*dev, qs.set, 0, 1);
    const uint32_t nlb = 1;
    for (int i = 0; i < 3; i++) qs.put(0, read_sqe(i, nlb, 0));
    qs.ring(0);
    for (int i = 0; i < 3; i++) EXPECT_EQ(status(qs.next(0, /*ring_head=*/false)), 0);
    const NvmeCqe first = qs.cq_entry(0, 0);
    qs.put(0, read_sqe(3, nlb, 0));
    qs.ring(0);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    EXPECT_EQ(std::memcmp(&qs.cq_entry(0, 0), &first, sizeof first), 0) << "an unconsumed completion was overwritten";
    EXPECT_EQ(proc.commands(), 3u);
    qs.ring_head(0);
    const NvmeCqe c = qs.next(0);
    EXPECT_EQ(status(c), 0);
    EXPECT_EQ(c.cid, 3);
    EXPECT_EQ(proc.commands(), 4u);
}

// An Execute runs on a compute unit while its poller goes on serving: a Read submitted after
// a long Execute on the same queue completes first, and the Execute then completes with its
// result (completions in any order, matched by command ID, as NVMe allows).
// Under a timing model a poller posts each Read at its modelled finish and serves on
// meanwhile: 32 Reads of a drive whose reads take 20 ms (all in parallel on its media)
// complete ~20 ms after the doorbell, not 32 x 20 ms (one waited out after the other). The
// bounds leave a loaded machine room (make test runs this beside two TCG guests on two
// cores: the 2 ms version missed "< 20 ms, no overrun" there every time): at most half the
// one-after-another time, and fewer than half the Reads posted late (one after another,
// all but the first would be). A round the machine was too busy for is run again, up to
// three rounds: waiting one after another misses the bounds in every round.
TEST_F(QueueProcessorTest, ModelledReadsCompleteAtTheirFinishNotOneAfterAnother)
{
    auto slow = Device::open(g_path + "&model=ll-nand-gen5&model.media-read-latency-ns=20000000");
    const uint32_t n = 32;
    double ms = 0;
    uint64_t overruns = 0;
    for (int round = 0; round < 3; round++) {
        Queues qs(1, 64, n * 4096, lba);
        QueueProcessor proc(*slow, qs.set, 0, 1);
        const Statistics before = slow->stats();
        for (uint32_t i = 0; i < n; i++) qs.put(0, read_sqe(i * 7, 1, i * 4096));
        const auto t0 = std::chrono::steady_clock::now();
        qs.ring(0);
        for (uint32_t i = 0; i < n; i++) EXPECT_EQ(status(qs.next(0)), 0);
        ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        overruns = slow->stats().model_overruns - before.model_overruns;
        EXPECT_GE(ms, 20.0) << "completed before the modelled finish";
        EXPECT_EQ(proc.timed().completions, n);
        std::vector<uint8_t> want(lba);
        slow->read_lbas(3 * 7, 1, want.data());
        EXPECT_EQ(std::memcmp(qs.arena() + 3 * 4096, want.data(), lba), 0);
        if (ms < n * 20.0 / 2 && overruns < n / 2) break;
        std::printf("round %d: %.1f ms, %llu of %u Reads posted late: the machine was busy; again\n", round, ms,
                    static_cast<unsigned long long>(overruns), n);
    }
    EXPECT_LT(ms, n * 20.0 / 2) << "the Reads' modelled latencies were waited out one after another";
    EXPECT_LT(overruns, n / 2);
}

// A poller takes at most a burst of 8 entries from a queue before it turns to its next queue
// (NVMe's arbitration burst), so that one full queue does not hold up the others (nor the
// completions falling due meanwhile): with both queues rung before the poller starts, queue
// 1's Read runs after queue 0's first 8 entries and before its 11th, a Write of the same LBA.
TEST_F(QueueProcessorTest, APollerTakesABurstPerQueueNotTheWholeQueue)
{
    const uint64_t x = 4000;
    std::vector<uint8_t> before(lba, 0x11), after(lba, 0xAB);
    dev->write_lbas(x, 1, before.data());
    Queues qs(2, 32, 2 * 4096, lba);
    std::memcpy(qs.arena(), after.data(), lba);
    for (uint32_t i = 0; i < 20; i++) {
        NvmeSqe e = read_sqe(100 + i, 1, 4096);
        if (i == 10) {
            e = read_sqe(x, 1, 0);
            e.opcode = 0x01;  // Write: LBA x from the arena's first 4 KiB
        }
        qs.put(0, e);
    }
    qs.put(1, read_sqe(x, 1, 4096 + 2048));
    qs.ring(0);
    qs.ring(1);
    QueueProcessor proc(*dev, qs.set, 0, 1);
    for (uint32_t i = 0; i < 20; i++) EXPECT_EQ(status(qs.next(0)), 0);
    EXPECT_EQ(status(qs.next(1)), 0);
    EXPECT_EQ(qs.arena()[4096 + 2048], 0x11) << "queue 1 waited until queue 0 was empty";
    std::vector<uint8_t> now(lba);
    dev->read_lbas(x, 1, now.data());
    EXPECT_EQ(now, after);
}

TEST_F(QueueProcessorTest, AnExecuteDoesNotHoldUpTheQueue)
{
    // a compute unit that streams 1 MB/s: a checksum of 64 KiB takes ~65 ms
    auto slow = Device::open(g_path + "&model.unit-gbps=0.001&model.unit-gflops=1");
    std::vector<uint8_t> data(64 << 10);
    for (size_t i = 0; i < data.size(); i++) data[i] = static_cast<uint8_t>(i * 7 + 1);
    slow->slm_write(0, data.data(), data.size());
    const uint32_t algo = 0;  // CRC-32C
    const std::vector<uint8_t> desc = make_descriptor(CSD_PROG_CHECKSUM, {Range{0, data.size()}}, &algo, 4);
    Queues qs(1, 8, 8192, lba);
    std::memcpy(qs.arena(), desc.data(), desc.size());
    QueueProcessor proc(*slow, qs.set, 0, 1);
    NvmeSqe x{};
    x.opcode = CSD_OPC_EXECUTE;
    x.nsid = slow->ns().nsid;
    x.prp1 = 0;
    x.cdw10 = static_cast<uint32_t>(desc.size());
    NvmeSqe r{};
    r.opcode = 0x02;
    r.nsid = slow->ns().nsid;
    r.prp1 = 4096;
    r.cdw12 = 0;  // one LBA
    const uint16_t exec_cid = qs.put(0, x), read_cid = qs.put(0, r);
    qs.ring(0);
    const NvmeCqe first = qs.next(0), second = qs.next(0);
    EXPECT_EQ(first.cid, read_cid) << "the Read waited for the Execute before it";
    EXPECT_EQ(status(first), 0);
    ASSERT_EQ(second.cid, exec_cid);
    EXPECT_EQ(status(second), 0);
    EXPECT_EQ(second.dw0, csd_crc32c(data.data(), data.size()));
    EXPECT_EQ(proc.commands(), 2u);
}

namespace {

// A Mover over memory the submitter addresses at `base` (here host memory the test reads,
// standing in for GPU memory): a lane stages into slabs of its own and copies a batch into
// the window only once the test has released it, so that the test sees when completions post.
// The memory a test's mover moves into: host memory the test reads, which the submitter
// addresses at `base`.
class WindowMover : public Mover {
public:
    WindowMover(uint64_t base, uint64_t bytes) : base_(base), mem_(bytes) {}
    bool covers(uint64_t addr, uint64_t len) const override
    {
        return addr >= base_ && addr - base_ <= mem_.size() && len <= mem_.size() - (addr - base_);
    }
    uint32_t max_transfer() const override { return 1 << 20; }
    uint8_t *window() { return mem_.data(); }
    // Where the submitter's address dst lies in the window.
    uint8_t *at(uint64_t dst) { return mem_.data() + (dst - base_); }

private:
    uint64_t base_;
    std::vector<uint8_t> mem_;
};

class HeldMover : public WindowMover {
public:
    HeldMover(uint64_t base, uint64_t bytes, uint32_t slab_blocks) : WindowMover(base, bytes), slab_blocks_(slab_blocks) {}
    std::unique_ptr<MoverLane> lane() override { return std::make_unique<Lane>(*this); }
    void release_all() { released = ~0ull >> 1; }
    std::atomic<uint64_t> released{0};  // batches the test lets finish
    std::atomic<bool> fail{false};      // batches finish failed
    std::atomic<uint64_t> flushed{0};   // batches started

private:
    class Lane : public MoverLane {
    public:
        explicit Lane(HeldMover &m) : m_(m), slabs_(2) {}
        uint8_t *stage(uint32_t len) override
        {
            Slab &s = slabs_[cur_];
            if ((s.batch && state(s.batch) == State::running) || s.staged >= m_.slab_blocks_) return nullptr;
            s.staged++;
            s.mem.push_back(std::vector<uint8_t>(len));
            return s.mem.back().data();
        }
        uint64_t copy(uint64_t dst, const uint8_t *staged, uint32_t len) override
        {
            slabs_[cur_].blocks.push_back({dst, staged, len});
            return next_;
        }
        void flush() override
        {
            Slab &s = slabs_[cur_];
            if (s.batch) return;  // still in flight: nothing new staged in it
            if (s.blocks.empty()) {
                s.staged = 0, s.mem.clear();
                return;
            }
            s.batch = next_++;
            m_.flushed++;
            cur_ = (cur_ + 1) % slabs_.size();
        }
        State state(uint64_t b) override
        {
            if (b > m_.released.load()) return State::running;
            if (m_.fail) return State::failed;
            Slab &s = slabs_[(b - 1) % slabs_.size()];
            if (s.batch == b) {  // moved now, on the poller's thread
                for (const Block &k : s.blocks) std::memcpy(m_.at(k.dst), k.src, k.len);
                s.blocks.clear(), s.mem.clear(), s.staged = 0, s.batch = 0;
            }
            return State::done;
        }

    private:
        struct Block {
            uint64_t dst;
            const uint8_t *src;
            uint32_t len;
        };
        struct Slab {
            std::vector<Block> blocks;
            std::vector<std::vector<uint8_t>> mem;
            uint32_t staged = 0;
            uint64_t batch = 0;
        };
        HeldMover &m_;
        std::vector<Slab> slabs_;
        size_t cur_ = 0;
        uint64_t next_ = 1;
    };
    uint32_t slab_blocks_;
};

bool completion_posted(const Queues &qs, uint32_t q, uint32_t i) { return qs.cq_entry(q, i).status_phase & 1; }

// n records of 4 KiB, byte i = i * mul + i / div, written to dev from LBA slba; returns them.
std::vector<uint8_t> write_records(Device &dev, uint64_t slba, uint32_t n, unsigned mul, unsigned div)
{
    std::vector<uint8_t> data(uint64_t(n) * 4096);
    for (size_t i = 0; i < data.size(); i++) data[i] = static_cast<uint8_t>(i * mul + i / div);
    dev.write_lbas(slba, data.size() / dev.ns().lba_size, data.data());
    return data;
}

}  // namespace

// Reads whose PRP1 names the mover's memory (a GPU's, for GpuQueues) run into the lane's
// staging; their completions are posted only once the mover has moved the bytes, and then
// the bytes are there. Before the mover existed these got Data Transfer Error at once.
TEST_F(QueueProcessorTest, ReadsIntoTheMoversMemoryCompleteOnlyOnceMoved)
{
    const uint32_t nlb = 4096 / lba, rec = 4096;
    const std::vector<uint8_t> data = write_records(*dev, 2000, 8, 7, 1000);
    dev->slm_write(4096, data.data(), 1000);
    const uint64_t window = 0x900000000000ull;
    HeldMover m(window, 16 * rec, 64);
    Queues qs(2, 16, 4096, lba);
    QueueProcessor proc(*dev, qs.set, 0x1000, 2, &m);
    for (uint32_t i = 0; i < 8; i++) qs.put(i % 2, read_sqe(2000 + uint64_t(7 - i) * nlb, nlb, window + uint64_t(i) * rec));
    NvmeSqe slm{};
    slm.opcode = CSD_OPC_SLM_READ, slm.nsid = 1, slm.prp1 = window + 9 * rec + 16, slm.cdw10 = 4096, slm.cdw12 = 1000;
    qs.put(0, slm);
    qs.ring(0), qs.ring(1);
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (m.flushed < 1 && std::chrono::steady_clock::now() < end) std::this_thread::yield();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    for (uint32_t q = 0; q < 2; q++) EXPECT_FALSE(completion_posted(qs, q, 0)) << "posted before its data was moved";
    EXPECT_EQ(proc.commands(), 0u);
    m.release_all();
    for (uint32_t q = 0; q < 2; q++) {
        for (uint32_t k = 0; k < 4 + (q == 0); k++) EXPECT_EQ(status(qs.next(q)), 0);
    }
    for (uint32_t i = 0; i < 8; i++) {
        EXPECT_EQ(std::memcmp(m.window() + size_t(i) * rec, data.data() + size_t(7 - i) * rec, rec), 0) << "read " << i;
    }
    EXPECT_EQ(std::memcmp(m.window() + 9 * rec + 16, data.data(), 1000), 0) << "the SLM Read";
    EXPECT_EQ(proc.commands(), 9u);
    EXPECT_EQ(proc.errors(), 0u);
}

// What the mover's memory is not for gets an error completion, and nothing is moved: a PRP
// outside both the arena and the window, one running past the window's end, a Write or an
// SLM Write from it (the drive reads no GPU memory), a Read that fails on the drive; a batch
// the mover fails completes with Internal Error.
TEST_F(QueueProcessorTest, BadMoverDestinationsGetAnErrorCompletion)
{
    const uint64_t window = 0x900000000000ull, bytes = 8 * 4096;
    HeldMover m(window, bytes, 64);
    m.release_all();
    Queues qs(1, 16, 4096, lba);
    QueueProcessor proc(*dev, qs.set, 0x1000, 1, &m);
    const uint32_t nlb = 4096 / lba;
    NvmeSqe w = read_sqe(0, nlb, window);
    w.opcode = 0x01;
    NvmeSqe slm_w{};
    slm_w.opcode = CSD_OPC_SLM_WRITE, slm_w.nsid = 1, slm_w.prp1 = window, slm_w.cdw12 = 512;
    qs.put(0, read_sqe(0, nlb, window - 4096));                 // below the window
    qs.put(0, read_sqe(0, nlb, window + bytes - 512));          // runs past its end
    qs.put(0, read_sqe(0, nlb, window + bytes + (1ull << 40)));  // far outside
    qs.put(0, w);                                               // a Write from GPU memory
    qs.put(0, slm_w);                                           // an SLM Write from it
    qs.put(0, read_sqe(dev->ns().lba_count, 1, window));        // LBAs past the namespace
    qs.put(0, read_sqe(0, nlb, window));                        // and a good one
    qs.ring(0);
    for (int i = 0; i < 5; i++) EXPECT_EQ(status(qs.next(0)), 0x4004) << "entry " << i;  // Data Transfer Error, DNR
    EXPECT_EQ(status(qs.next(0)) & 0x7FF, 0x80);  // LBA Out of Range, from the device
    EXPECT_EQ(status(qs.next(0)), 0);
    m.fail = true;
    qs.put(0, read_sqe(0, nlb, window));
    qs.ring(0);
    EXPECT_EQ(status(qs.next(0)), CSD_STATUS_INTERNAL_ERROR);
    EXPECT_EQ(proc.errors(), 7u);
    NvmeSqe e = read_sqe(0, nlb, window);
    EXPECT_EQ(proc.run(e).status, 0x4004) << "run() has no lane to move with";
}

// A lane whose staging is all in flight leaves the entry in the SQ and takes it once a batch
// is done: 12 Reads through a lane of two slabs of 2 blocks each, released one batch at a time.
TEST_F(QueueProcessorTest, ALaneWithoutStagingTakesTheEntryLater)
{
    const uint32_t nlb = 1, n = 12;
    std::vector<uint8_t> data(n * lba);
    for (size_t i = 0; i < data.size(); i++) data[i] = static_cast<uint8_t>(i * 13 + 5);
    dev->write_lbas(300, n, data.data());
    const uint64_t window = 0x900000000000ull;
    HeldMover m(window, n * lba, 2);
    Queues qs(1, 16, 4096, lba);
    QueueProcessor proc(*dev, qs.set, 0x1000, 1, &m);
    for (uint32_t i = 0; i < n; i++) qs.put(0, read_sqe(300 + i, nlb, window + uint64_t(i) * lba));
    qs.ring(0);
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (m.flushed < 2 && std::chrono::steady_clock::now() < end) std::this_thread::yield();
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    EXPECT_EQ(m.flushed.load(), 2u) << "a third batch while both slabs were in flight";
    for (uint64_t b = 1; m.released < ~0ull >> 1 && std::chrono::steady_clock::now() < end; b++) {
        m.released = b;
        if (b > 40) m.release_all();
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    for (uint32_t i = 0; i < n; i++) EXPECT_EQ(status(qs.next(0)), 0);
    EXPECT_EQ(std::memcmp(m.window(), data.data(), data.size()), 0);
    EXPECT_EQ(proc.commands(), n);
}

namespace {

// A lane that moves each copy as copy() records it (into the test's memory) and says so
// (moves_at_once), logging the poller's calls: c = copy, p = publish with copies since the
// last one, f = flush; and, where the mover reaches host memory [src, src + src_bytes) (a
// namespace's mapping), d = copy_from, straight from there.
class EagerMover : public WindowMover {
public:
    EagerMover(uint64_t base, uint64_t bytes, const uint8_t *src = nullptr, uint64_t src_bytes = 0)
        : WindowMover(base, bytes), src_(src), src_bytes_(src_bytes)
    {
    }
    std::unique_ptr<MoverLane> lane() override { return std::make_unique<Lane>(*this); }
    bool reaches(const uint8_t *p, uint64_t len) const override
    {
        return src_ && p >= src_ && uint64_t(p - src_) <= src_bytes_ && len <= src_bytes_ - uint64_t(p - src_);
    }
    const uint8_t *last_source = nullptr;  // copy_from's last src
    std::string log() const
    {
        std::lock_guard<std::mutex> g(mu_);
        return log_;
    }

private:
    class Lane : public MoverLane {
    public:
        explicit Lane(EagerMover &m) : m_(m) {}
        uint8_t *stage(uint32_t len) override
        {
            staged_.push_back(std::vector<uint8_t>(len));
            return staged_.back().data();
        }
        uint64_t copy(uint64_t dst, const uint8_t *src, uint32_t len) override
        {
            std::memcpy(m_.at(dst), src, len);
            add('c');
            unpublished_ = true;
            return ++n_;
        }
        uint64_t copy_from(uint64_t dst, const uint8_t *src, uint32_t len) override
        {
            std::memcpy(m_.at(dst), src, len);
            m_.last_source = src;
            add('d');
            unpublished_ = true;
            return ++n_;
        }
        void flush() override { add('f'); }
        void publish() override
        {
            if (unpublished_) add('p');
            unpublished_ = false;
        }
        State state(uint64_t) override { return State::done; }
        bool moves_at_once() const override { return true; }

    private:
        void add(char c)
        {
            std::lock_guard<std::mutex> g(m_.mu_);
            m_.log_ += c;
        }
        EagerMover &m_;
        std::deque<std::vector<uint8_t>> staged_;
        uint64_t n_ = 0;
        bool unpublished_ = false;
    };
    const uint8_t *src_;
    uint64_t src_bytes_;
    mutable std::mutex mu_;
    std::string log_;
};

}  // namespace

// A lane that moves copy by copy (the resident GPU mover) is handed each queue visit's copies
// as the visit ends (publish), not once the poller has been round all its queues (flush): its
// kernel starts on them while the poller serves the next queue. Before publish() existed the
// log read "ccccf" (the copies of both queues, then the round's flush).
TEST_F(QueueProcessorTest, ALaneThatMovesAtOnceGetsEachVisitsCopies)
{
    const uint32_t nlb = 4096 / lba, rec = 4096;
    const std::vector<uint8_t> data = write_records(*dev, 600, 4, 11, 700);
    const uint64_t window = 0x900000000000ull;
    EagerMover m(window, 4 * rec);
    Queues qs(2, 16, 4096, lba);
    for (uint32_t i = 0; i < 4; i++) qs.put(i / 2, read_sqe(600 + uint64_t(i) * nlb, nlb, window + uint64_t(i) * rec));
    qs.ring(0), qs.ring(1);
    QueueProcessor proc(*dev, qs.set, 0x1000, 1, &m);
    for (uint32_t q = 0; q < 2; q++) {
        for (int k = 0; k < 2; k++) EXPECT_EQ(status(qs.next(q)), 0);
    }
    EXPECT_EQ(std::memcmp(m.window(), data.data(), data.size()), 0);
    std::string log = m.log();
    log.erase(std::remove(log.begin(), log.end(), 'f'), log.end());
    EXPECT_EQ(log, "ccpccp") << "the calls, flushes left out";
}

// A plain Read of the in-process device's namespace (mapped into this process: the simulated
// peer-to-peer drive) into the mover's memory is copied by the mover straight from the
// namespace's pages (copy_from, no staging); a Read with flags (FUA) goes through the drive
// and its staging, and one past the namespace's end gets the drive's LBA Out of Range. Before
// copy_from existed every Read was staged: the log read "cc".
TEST_F(QueueProcessorTest, PlainReadsOfAMappedNamespaceAreCopiedStraightFromIt)
{
    const uint32_t nlb = 4096 / lba, rec = 4096;
    const std::vector<uint8_t> data = write_records(*dev, 800, 2, 13, 900);
    const uint8_t *ns = dev->namespace_host_pointer();
    ASSERT_NE(ns, nullptr) << "the in-process device without a timing model maps its namespace";
    const uint64_t window = 0xa00000000000ull;
    EagerMover m(window, 3 * rec, ns, dev->ns().lba_count * lba);
    Queues qs(1, 16, 4096, lba);
    qs.put(0, read_sqe(800, nlb, window));
    NvmeSqe fua = read_sqe(800 + nlb, nlb, window + rec);
    fua.cdw12 |= 1u << 30;  // Force Unit Access: the drive's to answer
    qs.put(0, fua);
    qs.put(0, read_sqe(dev->ns().lba_count - 1, nlb, window + 2 * rec));  // past the end
    qs.ring(0);
    QueueProcessor proc(*dev, qs.set, 0x1000, 1, &m);
    uint16_t st[3] = {1, 1, 1};  // by command ID (moved Reads complete after the refused one)
    for (int i = 0; i < 3; i++) {
        const NvmeCqe c = qs.next(0);
        ASSERT_LT(c.cid, 3);
        st[c.cid] = status(c);
    }
    EXPECT_EQ(st[0], 0);
    EXPECT_EQ(st[1], 0);
    EXPECT_EQ(st[2] & 0x7FF, 0x80);  // LBA Out of Range, from the device
    EXPECT_EQ(std::memcmp(m.window(), data.data(), data.size()), 0);
    std::string log = m.log();
    log.erase(std::remove_if(log.begin(), log.end(), [](char c) { return c == 'f' || c == 'p'; }), log.end());
    EXPECT_EQ(log, "dc") << "the copies, flushes and publishes left out";
    EXPECT_EQ(m.last_source, ns + 800ull * lba);
}

namespace {

// Reads of 4 KiB from slba into the mover's memory at window through queue processor proc's
// queues qs, one after another; their statuses.
std::vector<uint16_t> read_through(Queues &qs, uint64_t slba, uint32_t n, uint32_t lba, uint64_t window)
{
    std::vector<uint16_t> st;
    for (uint32_t i = 0; i < n; i++) {
        qs.put(0, read_sqe(slba + uint64_t(i) * (4096 / lba), 4096 / lba, window + uint64_t(i) * 4096));
        qs.ring(0);
        st.push_back(status(qs.next(0)));
    }
    return st;
}

// The in-process device behind a namespace that goes away on demand (as the stream tests'):
// every command then answers Invalid Namespace or Format, as a drive's does once the
// namespace is detached; its mapping stays (a drive's pages outlive a detach).
class Detachable : public test::ForwardingInProcess {
public:
    explicit Detachable(Transport &t) : ForwardingInProcess(t) {}
    uint16_t answer(const Command &) const override { return detached ? CSD_STATUS_INVALID_NAMESPACE | CSD_STATUS_DNR : 0; }
    std::atomic<bool> detached{false};
};

}  // namespace

// Plain Reads copied straight from the namespace (copy_from) still reach the drive, moving no
// bytes there: in host mode over the in-process drive, the bus counts the same commands and
// bytes as for Reads staged through the drive. Before the Reads went to the drive (they were
// only copied), the direct ones were not counted: 0 commands.
TEST_F(QueueProcessorTest, DirectReadsAreCountedAsTheDrivesReads)
{
    const uint32_t rec = 4096, n = 6;
    const std::vector<uint8_t> data = write_records(*dev, 1200, n, 17, 300);
    OpenOptions o;
    o.front_end = FrontEnd::Host;
    auto host = Device::open(g_path, o);
    const uint8_t *ns = host->namespace_host_pointer();
    ASSERT_NE(ns, nullptr) << "host mode over the in-process drive maps its namespace";
    const uint64_t window = 0xb00000000000ull;
    BusCounters moved[2];
    for (bool direct : {false, true}) {
        EagerMover m(window, n * rec, direct ? ns : nullptr, direct ? host->ns().lba_count * lba : 0);
        Queues qs(1, 16, 4096, lba);
        QueueProcessor proc(*host, qs.set, 0x1000, 1, &m);
        const BusCounters b0 = host->bus();
        EXPECT_EQ(read_through(qs, 1200, n, lba, window), std::vector<uint16_t>(n, 0));
        const BusCounters b1 = host->bus();
        moved[direct] = {b1.commands - b0.commands, b1.bytes_to_device - b0.bytes_to_device,
                         b1.bytes_from_device - b0.bytes_from_device};
        EXPECT_EQ(std::memcmp(m.window(), data.data(), data.size()), 0);
        const std::string log = m.log();
        EXPECT_EQ(std::count(log.begin(), log.end(), 'd'), direct ? long(n) : 0L) << log;
        EXPECT_EQ(proc.direct_reads(), direct ? n : 0u);
    }
    EXPECT_EQ(moved[0].commands, n);
    EXPECT_EQ(moved[0].bytes_from_device, uint64_t(n) * rec);
    EXPECT_EQ(moved[1].commands, moved[0].commands) << "direct Reads on the bus";
    EXPECT_EQ(moved[1].bytes_from_device, moved[0].bytes_from_device);
    EXPECT_EQ(moved[1].bytes_to_device, moved[0].bytes_to_device);
}

// A plain Read of a mapped namespace that the drive no longer has (detached: it answers
// Invalid Namespace or Format) gets the drive's answer, and nothing is copied from the pages
// still mapped; attached again, Reads are copied straight from them as before. Before the
// Reads went to the drive, the one after the detach was copied from the old pages: Success.
TEST_F(QueueProcessorTest, ADirectReadAfterADetachGetsTheDrivesAnswer)
{
    const uint32_t rec = 4096, n = 2;
    const std::vector<uint8_t> data = write_records(*dev, 1400, n, 19, 500);
    auto t = std::make_unique<Detachable>(dev->transport());
    Detachable *ns = t.get();
    Device d(std::move(t));
    const uint8_t *pages = d.namespace_host_pointer();
    ASSERT_NE(pages, nullptr);
    const uint64_t window = 0xc00000000000ull;
    EagerMover m(window, n * rec, pages, d.ns().lba_count * lba);
    Queues qs(1, 16, 4096, lba);
    QueueProcessor proc(d, qs.set, 0x1000, 1, &m);
    ns->detached = true;
    const std::vector<uint16_t> st = read_through(qs, 1400, n, lba, window);
    for (uint16_t s : st) EXPECT_EQ(s & 0x7FF, CSD_STATUS_INVALID_NAMESPACE) << "status " << std::hex << s;
    EXPECT_EQ(m.log().find('d'), std::string::npos) << "copied from a detached namespace: " << m.log();
    EXPECT_EQ(std::count(m.window(), m.window() + n * rec, 0), long(n * rec)) << "bytes landed";
    ns->detached = false;
    EXPECT_EQ(read_through(qs, 1400, n, lba, window), std::vector<uint16_t>(n, 0));
    EXPECT_EQ(std::memcmp(m.window(), data.data(), data.size()), 0);
    EXPECT_EQ(proc.direct_reads(), n);
}

// A destination of the store that copies straight from the mapped namespace (takes_mapped).
class MappedSink : public ObjectSink {
public:
    bool takes_mapped() const override { return true; }
    void land(const ObjectInfo &, const Fill &) override { ADD_FAILURE() << "landed through commands"; }
    void land_mapped(const ObjectInfo &o, const uint8_t *bytes, const Check &check) override
    {
        landed.assign(bytes, bytes + o.bytes);
        check(0, o.bytes);
    }
    std::vector<uint8_t> landed;
};

// The store's landing from the mapped namespace runs the drive's Reads of the object first:
// counted as Reads (commands and bytes from the device) and, on a namespace the drive no
// longer has, its answer (Invalid Namespace or Format) with nothing copied. Before, the
// bytes were copied from the old pages with no command: Success after a detach, nothing
// counted.
TEST_F(QueueProcessorTest, AStoreLandingFromTheMappingRunsTheDrivesReads)
{
    auto t = std::make_unique<Detachable>(dev->transport());
    Detachable *ns = t.get();
    Device d(std::move(t));
    ASSERT_NE(d.namespace_host_pointer(), nullptr);
    ObjectStore::format(d, true);
    ObjectStore st(d);
    std::vector<uint8_t> v(3 * d.transport().max_transfer() + 1000);
    for (size_t i = 0; i < v.size(); i++) v[i] = static_cast<uint8_t>(i * 7 + 3);
    st.put("x", v.data(), v.size());
    const BusCounters b0 = d.bus();
    MappedSink sink;
    st.get_into("x", sink);
    EXPECT_EQ(sink.landed, v);
    const BusCounters b1 = d.bus();
    const uint64_t lbas = (v.size() + lba - 1) / lba;
    EXPECT_GE(b1.commands - b0.commands, 4u) << "the object's Reads, at most the largest transfer each";
    EXPECT_GE(b1.bytes_from_device - b0.bytes_from_device, lbas * lba);
    ns->detached = true;
    MappedSink after;
    try {
        st.get_into("x", after);
        ADD_FAILURE() << "landed from a detached namespace";
    } catch (const Error &e) {
        EXPECT_EQ(e.code(), CSD_STATUS_INVALID_NAMESPACE) << e.what();
    }
    EXPECT_TRUE(after.landed.empty());
    ns->detached = false;
}

TEST_F(QueueProcessorTest, RefusesBadLayouts)
{
    Queues qs(1, 4, 4096, lba);
    NvmeQueueSet s = qs.set;
    s.depth = 1;
    EXPECT_THROW(QueueProcessor(*dev, s, 0, 1), Error);
    s = qs.set;
    s.lba_size = 1000;
    EXPECT_THROW(QueueProcessor(*dev, s, 0, 1), Error);
    EXPECT_THROW(QueueProcessor(*dev, qs.set, 0, 0), Error);
}

int main(int argc, char **argv)
{
    ::testing::InitGoogleTest(&argc, argv);
    char name[] = "/tmp/csd-queues-XXXXXX";
    const int fd = mkstemp(name);
    close(fd);
    unlink(name);
    g_path = std::string("emu:") + name + "?size=64M&slm=16M";
    const int rc = RUN_ALL_TESTS();
    unlink(name);
    return rc;
}
