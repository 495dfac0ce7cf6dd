// SPDX-License-Identifier: MIT
// GPU landing tests: byte equality of SLM, LBA and object transfers into GPU memory over
// every path. Skips (not fails) where there is no CUDA device, as in CI.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <random>
#include <thread>

#include "csd_crc32c.h"
#include "csd_spec.h"
#include "forwarding_in_process.hpp"
#include "gpu.hpp"
#include "gpu_crc32c.hpp"

using namespace csd;

namespace {

class Gpu : public ::testing::Test {
protected:
    void SetUp() override
    {
        if (!gpu::available()) GTEST_SKIP() << "no CUDA device here";
        char name[] = "/tmp/csd-gpu-XXXXXX";
        close(mkstemp(name));
        unlink(name);
        path_ = name;
        dev = Device::open(spec());
        ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
    }
    void TearDown() override
    {
        if (!path_.empty()) unlink(path_.c_str());
        if (stream) cudaStreamDestroy(stream);
    }
    // The in-process device's spec: a second Device opened with it shares the namespace.
    std::string spec() const { return "emu:" + path_ + "?size=256M&slm=128M"; }
    std::vector<uint8_t> random(size_t n, uint32_t seed)
    {
        std::mt19937_64 g(seed);
        std::vector<uint8_t> v(n);
        for (auto &b : v) b = static_cast<uint8_t>(g());
        return v;
    }
    // Flips one bit in the middle of the stored object `name`, behind the store (again: repaired).
    void flip_bit_mid_object(ObjectStore &store, const std::string &name)
    {
        const ObjectInfo o = store.stat(name);
        const uint32_t lba = dev->ns().lba_size;
        const uint64_t at = store.first_lba(o) + (o.bytes / 2) / lba;
        std::vector<uint8_t> sector(lba);
        dev->read_lbas(at, 1, sector.data());
        sector[7] ^= 0x40;
        dev->write_lbas(at, 1, sector.data());
    }
    // get()'s error for the object `name` ("" if it has none), with its errno in *errnum.
    static std::string get_error(ObjectStore &store, const std::string &name, int *errnum)
    {
        try {
            store.get(name);
        } catch (const Error &e) {
            *errnum = e.errnum();
            return e.what();
        }
        return "";
    }
    std::vector<uint8_t> from_gpu(const void *d, size_t n)
    {
        std::vector<uint8_t> v(n);
        EXPECT_EQ(cudaMemcpy(v.data(), d, n, cudaMemcpyDeviceToHost), cudaSuccess);
        return v;
    }
public:
    // ReplacedWhileLanding*: the pipeline (direct false) or the simulated peer-to-peer path.
    void run_replaced_while_landing(bool direct);
    std::string path_;
    std::unique_ptr<Device> dev;
    cudaStream_t stream = nullptr;
};

TEST_F(Gpu, SlmToGpuBothPaths)
{
    const size_t n = (40 << 20) + 12345;  // several chunks and a ragged end
    auto data = random(n, 1);
    dev->slm_write(4096, data.data(), n);
    void *d = nullptr;
    ASSERT_EQ(cudaMalloc(&d, n), cudaSuccess);
    gpu::Landing land(*dev, 8 << 20, 3, 4);
    for (bool direct : {false, true}) {
        ASSERT_EQ(cudaMemset(d, 0, n), cudaSuccess);
        const gpu::CopyReport r = land.slm_to_gpu(4096, n, d, stream, direct).get();
        EXPECT_EQ(r.path, direct ? "slm-registered" : "pinned-pipeline");
        EXPECT_EQ(r.bytes, n);
        EXPECT_EQ(from_gpu(d, n), data) << r.path;
    }
    cudaFree(d);
}

TEST_F(Gpu, ObjectsAndLbasToGpu)
{
    ObjectStore::format(*dev, true);  // over the last test's store
    ObjectStore store(*dev);
    const size_t n = (20 << 20) + 777;
    auto data = random(n, 2);
    store.put("t", data.data(), n);
    void *d = nullptr;
    ASSERT_EQ(cudaMalloc(&d, n), cudaSuccess);
    gpu::Landing land(*dev, 4 << 20, 2, 2);
    store.put("empty", nullptr, 0);
    const uint64_t first = store.first_lba(store.stat("t"));
    for (bool direct : {false, true}) {
        // direct: the in-process device as a simulated peer-to-peer drive (its namespace
        // registered with CUDA, one DMA), the CRC-32C computed over the same bytes meanwhile
        const char *want = direct ? gpu::kPeerToPeer : "pinned-pipeline";
        ASSERT_EQ(cudaMemset(d, 0, n), cudaSuccess);
        gpu::CopyReport r = land.object_to_gpu(store, "t", d, n, stream, {}, direct).get();
        EXPECT_EQ(r.path, want) << land.peer_to_peer_error();
        EXPECT_EQ(r.bytes, n);
        EXPECT_EQ(r.object.generation, store.stat("t").generation);
        EXPECT_EQ(from_gpu(d, n), data) << r.path;
        // a destination one byte short is refused before anything lands
        try {
            land.object_to_gpu(store, "t", d, n - 1, stream, {}, direct).get();
            ADD_FAILURE() << "an object landed in a destination smaller than it";
        } catch (const Error &e) {
            EXPECT_EQ(e.errnum(), ENOSPC) << e.what();
        }
        EXPECT_EQ(land.object_to_gpu(store, "empty", d, 0, stream, {}, direct).get().bytes, 0u);
        ASSERT_EQ(cudaMemset(d, 0, n), cudaSuccess);
        r = land.lbas_to_gpu(first, (4 << 20) / dev->ns().lba_size, d, stream, direct).get();
        EXPECT_EQ(r.path, want);
        EXPECT_EQ(from_gpu(d, 4 << 20), std::vector<uint8_t>(data.begin(), data.begin() + (4 << 20))) << r.path;
    }
    EXPECT_THROW(land.lbas_to_gpu(dev->ns().lba_count - 1, 2, d, stream, true).get(), Error);
    cudaFree(d);
}

// An object whose bytes on the namespace were changed after its put (a stray write, a bad
// sector) fails the landing with the error get() gives; it must not land silently.
TEST_F(Gpu, CorruptedObjectFailsTheLandingLikeGet)
{
    ObjectStore::format(*dev, true);  // over the last test's store
    ObjectStore store(*dev);
    const size_t n = (20 << 20) + 777;
    auto data = random(n, 3);
    store.put("t", data.data(), n);
    flip_bit_mid_object(store, "t");
    int errnum = 0;
    const std::string want = get_error(store, "t", &errnum);
    ASSERT_FALSE(want.empty()) << "get() did not see the corruption";
    EXPECT_EQ(errnum, EIO);
    void *d = nullptr;
    ASSERT_EQ(cudaMalloc(&d, n), cudaSuccess);
    gpu::Landing land(*dev, 4 << 20, 2, 2);
    for (bool direct : {false, true}) {  // the pipeline, and the simulated peer-to-peer drive
        try {
            land.object_to_gpu(store, "t", d, n, stream, {}, direct).get();
            ADD_FAILURE() << "a corrupted object landed without an error (direct " << direct << ")";
        } catch (const Error &e) {
            EXPECT_EQ(e.errnum(), EIO);
            EXPECT_EQ(std::string(e.what()), want);
        }
    }
    // repaired, it lands by the simulated peer-to-peer path: the failure was the check's
    flip_bit_mid_object(store, "t");
    EXPECT_EQ(land.object_to_gpu(store, "t", d, n, stream, {}, true).get().path, gpu::kPeerToPeer);
    EXPECT_EQ(from_gpu(d, n), data);
    cudaFree(d);
}

// Another writer (its own Device on the same namespace) replaces the object again and again
// while it lands, and writes a filler object into the space each old version leaves: every
// landing must give one whole version of the object, or fail as get() does; never a
// mix of versions (it retries; a version replaced during each of four reads is EAGAIN).
// The landing reads through a Device whose timing model makes a read of the object take
// ~20-40 ms, so that the writer's rounds (~50 ms) often overlap one.
TEST_F(Gpu, ReplacedWhileLandingGivesOneVersionOrFailsLikeGet)
{
    run_replaced_while_landing(false);
}

// The same through the simulated peer-to-peer path (no timing model: a mapped Read has
// none), whose landings are short, so fewer of them overlap a replacement.
TEST_F(Gpu, ReplacedWhileLandingDirectGivesOneVersionOrFailsLikeGet)
{
    run_replaced_while_landing(true);
}

void Gpu::run_replaced_while_landing(bool direct)
{
    ObjectStore::format(*dev, true);  // over the last test's store
    const size_t n = 16 << 20;
    {
        ObjectStore s(*dev);
        const std::vector<uint8_t> v1(n, 1);
        s.put("t", v1.data(), n);
    }
    std::atomic<bool> stop{false};
    std::atomic<int> puts{0};
    std::thread writer([&] {
        auto wdev = Device::open(spec());
        ObjectStore s(*wdev);
        const std::vector<uint8_t> filler(n, 0);
        for (int v = 2; !stop; v++) {
            const std::vector<uint8_t> next(n, static_cast<uint8_t>(1 + v % 200));  // versions 1..200
            s.put("t", next.data(), n);  // into new space; the old version's space is free now
            s.put("filler", filler.data(), n);
            s.remove("filler");
            puts++;
            std::this_thread::sleep_for(std::chrono::milliseconds(30));
        }
    });
    void *d = nullptr;
    ASSERT_EQ(cudaMalloc(&d, n), cudaSuccess);
    auto slow = Device::open("emu:" + path_ + (direct ? "" : "?model.link-gbps=1&model.media-read-gbps=1"));
    ObjectStore store(*slow);
    gpu::Landing land(*slow, 1 << 20, 2, 1);
    int whole = 0, failed = 0, mixed = 0;
    const auto t0 = std::chrono::steady_clock::now();
    while (std::chrono::steady_clock::now() - t0 < std::chrono::seconds(3)) {
        ASSERT_EQ(cudaMemset(d, 0xFF, n), cudaSuccess);
        try {
            EXPECT_EQ(land.object_to_gpu(store, "t", d, n, stream, {}, direct).get().path,
                      direct ? gpu::kPeerToPeer : "pinned-pipeline");
        } catch (const Error &e) {
            EXPECT_EQ(e.errnum(), EAGAIN) << e.what();
            failed++;
            continue;
        }
        const std::vector<uint8_t> back = from_gpu(d, n);
        const uint8_t v = back[0];
        const bool one = v != 0 && v != 0xFF && std::all_of(back.begin(), back.end(), [v](uint8_t b) { return b == v; });
        (one ? whole : mixed)++;
    }
    stop = true;
    writer.join();
    std::printf("%d landings of one whole version, %d gave up as get() does, %d mixed versions; %d replacements\n",
                whole, failed, mixed, puts.load());
    EXPECT_EQ(mixed, 0) << "landings mixed bytes of different versions";
    EXPECT_GT(whole, 0);
    EXPECT_GT(puts.load(), 0);
    cudaFree(d);
}

// Replaced mid-landing (from the landing's own progress callback, so at a known point),
// with a filler written over the old version's space: the landing lands the new version.
TEST_F(Gpu, ReplacedMidLandingLandsTheNewVersion)
{
    auto other_dev = Device::open(spec());
    const size_t n = 24 << 20;
    const auto a = random(n, 4), b = random(n - 4096, 5), filler = random(n, 6);
    void *d = nullptr;
    ASSERT_EQ(cudaMalloc(&d, n), cudaSuccess);
    gpu::Landing land(*dev, 4 << 20, 2, 4);
    for (bool direct : {false, true}) {
        ObjectStore::format(*dev, true);  // the same layout each time: the filler takes the old version's space
        ObjectStore store(*dev);
        ObjectStore other(*other_dev);
        store.put("t", a.data(), n);
        const ObjectInfo old = store.stat("t");
        std::atomic<int> calls{0};
        const gpu::CopyReport r = land.object_to_gpu(store, "t", d, n, stream, [&](uint64_t, uint64_t) {
                                          if (calls++ != 0) return;
                                          other.put("t", b.data(), b.size());
                                          other.put("filler", filler.data(), filler.size());
                                          EXPECT_EQ(other.stat("filler").block, old.block);
                                          other.remove("filler");
                                      }, direct).get();
        EXPECT_EQ(r.bytes, b.size());
        EXPECT_EQ(r.object.generation, store.stat("t").generation);
        EXPECT_NE(r.object.generation, old.generation);
        EXPECT_EQ(from_gpu(d, b.size()), b) << r.path;
    }
    cudaFree(d);
}

// The GPU's CRC-32C is the spec's: its check value, and lengths and alignments around the
// kernel's 8-byte words, 1 KiB per thread and 256 KiB per block, against csd_crc32c.
TEST_F(Gpu, Crc32cOnTheGpuIsTheSpecs)
{
    const char *check = "123456789";
    void *d = nullptr;
    const size_t max = (3 << 20) + 4099;
    ASSERT_EQ(cudaMalloc(&d, max + 8), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(d, check, 9, cudaMemcpyHostToDevice), cudaSuccess);
    EXPECT_EQ(gpu::crc32c_on_gpu(d, 9), 0xE3069283u);
    EXPECT_EQ(gpu::crc32c_on_gpu(d, 0), csd_crc32c(nullptr, 0));
    const auto data = random(max + 8, 7);
    ASSERT_EQ(cudaMemcpy(d, data.data(), data.size(), cudaMemcpyHostToDevice), cudaSuccess);
    for (size_t n : {size_t(1), size_t(7), size_t(8), size_t(1023), size_t(1024), size_t(1025), size_t(262143),
                     size_t(262144), size_t(262145), size_t(1 << 20), max}) {
        for (size_t off : {0, 1, 5, 8}) {
            EXPECT_EQ(gpu::crc32c_on_gpu(static_cast<uint8_t *>(d) + off, n), csd_crc32c(data.data() + off, n))
                << n << " bytes at offset " << off;
        }
    }
    cudaFree(d);
}

TEST_F(Gpu, BadRangeIsAnError)
{
    gpu::Landing land(*dev);
    void *d = nullptr;
    ASSERT_EQ(cudaMalloc(&d, 4096), cudaSuccess);
    EXPECT_THROW(land.slm_to_gpu(dev->caps().slm_size - 100, 4096, d, stream, true).get(), Error);
    EXPECT_THROW(land.slm_to_gpu(dev->caps().slm_size - 100, 4096, d, stream, false).get(), Error);
    cudaFree(d);
}

// A read that fails in the middle of a pipeline of several chunks (its readers already on the
// next chunks) fails the transfer with the read's error; the Landing lands the next transfer
// byte for byte.
TEST_F(Gpu, AFailedReadMidPipelineFailsTheTransferAndTheNextLands)
{
    const uint64_t slm = dev->caps().slm_size, n = 12 << 20;
    ASSERT_GE(slm, n);
    auto data = random(n, 7);
    dev->slm_write(slm - n, data.data(), n);
    void *d = nullptr;
    ASSERT_EQ(cudaMalloc(&d, 2 * n), cudaSuccess);
    gpu::Landing land(*dev, 1 << 20, 2, 3);
    // the last 4 MiB of the 16 lie past SLM's end: the chunks before them read and copy first
    EXPECT_THROW(land.slm_to_gpu(slm - n, n + (4 << 20), d, stream, false).get(), Error);
    ASSERT_EQ(cudaMemset(d, 0, n), cudaSuccess);
    EXPECT_EQ(land.slm_to_gpu(slm - n, n, d, stream, false).get().bytes, n);
    EXPECT_EQ(from_gpu(d, n), data);
    cudaFree(d);
}

// Several objects in one objects_to_gpu: on the pinned pipeline one stream of 1 MiB chunks
// across them (sizes that end mid-chunk, an empty object, objects of one short chunk), on the
// simulated peer-to-peer drive one after another; each lands byte for byte where its target
// says, and the reports come in the targets' order.
TEST_F(Gpu, ObjectsToGpuLandEveryObjectWhereItsTargetSays)
{
    ObjectStore::format(*dev, true);
    ObjectStore store(*dev);
    const std::vector<size_t> sizes = {(3 << 20) + 5, 0, 4097, 1 << 20, (5 << 20) + 777, 100};
    std::vector<std::vector<uint8_t>> data;
    std::vector<size_t> at;
    size_t total = 0;
    for (size_t i = 0; i < sizes.size(); i++) {
        data.push_back(random(sizes[i], 40 + static_cast<uint32_t>(i)));
        store.put("o" + std::to_string(i), data[i].data(), sizes[i]);
        at.push_back(total);
        total += (sizes[i] + 255) / 256 * 256 + 256;
    }
    uint8_t *d = nullptr;
    ASSERT_EQ(cudaMalloc(reinterpret_cast<void **>(&d), total), cudaSuccess);
    std::vector<gpu::Landing::ObjectTarget> targets;
    for (size_t i = 0; i < sizes.size(); i++) targets.push_back({"o" + std::to_string(i), d + at[i], sizes[i]});
    gpu::Landing land(*dev, 1 << 20, 2, 3);
    for (bool direct : {false, true}) {
        for (int round = 0; round < 2; round++) {  // a Landing lands again after a batch
            ASSERT_EQ(cudaMemset(d, 0xa5, total), cudaSuccess);
            const std::vector<gpu::CopyReport> r = land.objects_to_gpu(store, targets, stream, direct).get();
            ASSERT_EQ(r.size(), sizes.size());
            for (size_t i = 0; i < sizes.size(); i++) {
                EXPECT_EQ(r[i].object.name, "o" + std::to_string(i));
                EXPECT_EQ(r[i].bytes, sizes[i]);
                if (sizes[i]) {
                    EXPECT_EQ(r[i].path, direct ? gpu::kPeerToPeer : "pinned-pipeline") << i;
                }
                EXPECT_EQ(from_gpu(d + at[i], sizes[i]), data[i]) << "object " << i << " direct " << direct;
            }
        }
    }
    EXPECT_TRUE(land.objects_to_gpu(store, {}, stream, false).get().empty());
    // destinations that overlap are refused before anything lands
    try {
        land.objects_to_gpu(store, {{"o0", d, sizes[0]}, {"o2", d + sizes[0] - 1, sizes[2]}}, stream, false).get();
        ADD_FAILURE() << "overlapping destinations were taken";
    } catch (const Error &e) {
        EXPECT_EQ(e.errnum(), EINVAL) << e.what();
    }
    cudaFree(d);
}

// A damaged object among several fails the call with get()'s error (EIO); the objects beside
// it land byte for byte, on both paths; repaired, all land.
TEST_F(Gpu, ObjectsToGpuADamagedObjectFailsAsGetAndTheOthersLand)
{
    ObjectStore::format(*dev, true);
    ObjectStore store(*dev);
    const std::vector<size_t> sizes = {(3 << 20) + 1, (2 << 20) + 9, 4 << 20};
    std::vector<std::vector<uint8_t>> data;
    for (size_t i = 0; i < sizes.size(); i++) {
        data.push_back(random(sizes[i], 60 + static_cast<uint32_t>(i)));
        store.put("o" + std::to_string(i), data[i].data(), sizes[i]);
    }
    flip_bit_mid_object(store, "o1");
    int errnum = 0;
    const std::string want = get_error(store, "o1", &errnum);
    ASSERT_FALSE(want.empty()) << "get() did not see the damage";
    std::vector<uint8_t *> d(sizes.size());
    for (size_t i = 0; i < sizes.size(); i++) ASSERT_EQ(cudaMalloc(reinterpret_cast<void **>(&d[i]), sizes[i]), cudaSuccess);
    std::vector<gpu::Landing::ObjectTarget> targets;
    for (size_t i = 0; i < sizes.size(); i++) targets.push_back({"o" + std::to_string(i), d[i], sizes[i]});
    gpu::Landing land(*dev, 1 << 20, 2, 3);
    for (bool direct : {false, true}) {
        for (size_t i = 0; i < sizes.size(); i++) ASSERT_EQ(cudaMemset(d[i], 0, sizes[i]), cudaSuccess);
        try {
            land.objects_to_gpu(store, targets, stream, direct).get();
            ADD_FAILURE() << "a damaged object landed without an error (direct " << direct << ")";
        } catch (const Error &e) {
            EXPECT_EQ(e.errnum(), EIO);
            EXPECT_EQ(std::string(e.what()), want);
        }
        EXPECT_EQ(from_gpu(d[0], sizes[0]), data[0]) << "direct " << direct;
        EXPECT_EQ(from_gpu(d[2], sizes[2]), data[2]) << "direct " << direct;
    }
    flip_bit_mid_object(store, "o1");
    EXPECT_EQ(land.objects_to_gpu(store, targets, stream, false).get().size(), sizes.size());
    for (size_t i = 0; i < sizes.size(); i++) EXPECT_EQ(from_gpu(d[i], sizes[i]), data[i]) << i;
    for (uint8_t *p : d) cudaFree(p);
}

// The in-process drive behind a transport whose Reads of chosen LBAs fail (Unrecovered Read
// Error) while armed: the Reads that move bytes and those of the mapped namespace
// (submit_mapped_read: the simulated peer-to-peer path's).
class FailingReads : public test::ForwardingInProcess {
public:
    FailingReads(Transport &t, uint64_t lo, uint64_t hi) : ForwardingInProcess(t), lo_(lo), hi_(hi) {}
    uint16_t answer(const Command &cmd) const override
    {
        const uint64_t slba = cmd.cdw10 | uint64_t(cmd.cdw11) << 32, nlb = (cmd.cdw12 & 0xFFFF) + 1ull;
        const bool fails = armed && !cmd.admin && cmd.opcode == 0x02 && slba < hi_ && slba + nlb > lo_;
        return fails ? CSD_STATUS_UNRECOVERED_READ_ERROR | CSD_STATUS_DNR : 0;
    }
    std::atomic<bool> armed{true};

private:
    uint64_t lo_, hi_;
};

// A Read that fails in the middle of a stream of several objects' chunks (on the pipeline the
// fill threads already on later chunks and objects; on the simulated peer-to-peer path the
// drive's Reads before a DMA) fails the call with the Read's error once no fill runs and no
// copy writes; the Landing then lands every object byte for byte.
TEST_F(Gpu, ObjectsToGpuAFailedReadStopsTheStreamAndTheNextLands)
{
    ObjectStore::format(*dev, true);
    const std::vector<size_t> sizes = {(6 << 20) + 3, 6 << 20, (6 << 20) + 4000, 3 << 20};
    std::vector<std::vector<uint8_t>> data;
    uint64_t lo;
    {
        ObjectStore store(*dev);
        for (size_t i = 0; i < sizes.size(); i++) {
            data.push_back(random(sizes[i], 80 + static_cast<uint32_t>(i)));
            store.put("o" + std::to_string(i), data[i].data(), sizes[i]);
        }
        lo = store.first_lba(store.stat("o1")) + (4 << 20) / dev->ns().lba_size;  // o1's fifth MiB
    }
    auto t = std::make_unique<FailingReads>(dev->transport(), lo, lo + 8);
    FailingReads *fail = t.get();
    Device fd(std::move(t));
    ASSERT_NE(fd.namespace_host_pointer(), nullptr) << "the wrapper maps the namespace as the device does";
    ObjectStore store(fd);
    std::vector<uint8_t *> d(sizes.size());
    for (size_t i = 0; i < sizes.size(); i++) ASSERT_EQ(cudaMalloc(reinterpret_cast<void **>(&d[i]), sizes[i]), cudaSuccess);
    std::vector<gpu::Landing::ObjectTarget> targets;
    for (size_t i = 0; i < sizes.size(); i++) targets.push_back({"o" + std::to_string(i), d[i], sizes[i]});
    gpu::Landing land(fd, 1 << 20, 2, 3);
    for (bool direct : {false, true}) {
        SCOPED_TRACE(direct ? "simulated peer-to-peer" : "pinned pipeline");
        fail->armed = true;
        try {
            land.objects_to_gpu(store, targets, stream, direct).get();
            ADD_FAILURE() << "a failed Read went unnoticed";
        } catch (const Error &e) {
            EXPECT_NE(std::string(e.what()).find("Unrecovered Read Error"), std::string::npos) << e.what();
        }
        fail->armed = false;
        for (int round = 0; round < 2; round++) {
            for (size_t i = 0; i < sizes.size(); i++) ASSERT_EQ(cudaMemset(d[i], 0, sizes[i]), cudaSuccess);
            const auto r = land.objects_to_gpu(store, targets, stream, direct).get();
            ASSERT_EQ(r.size(), sizes.size());
            for (size_t i = 0; i < sizes.size(); i++) {
                EXPECT_EQ(r[i].path, direct ? gpu::kPeerToPeer : "pinned-pipeline");
                EXPECT_EQ(from_gpu(d[i], sizes[i]), data[i]) << i;
            }
        }
    }
    for (uint8_t *p : d) cudaFree(p);
}

}  // namespace
