// SPDX-License-Identifier: MIT
// LayerLoader tests: layers streamed from the object store through a ring of GPU buffers,
// byte for byte on both landing paths, the ring's reuse behind the consumer's GPU work, a
// damaged tensor, acquires out of order and bad arguments. Skip where there is no CUDA device.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <memory>
#include <random>

#include "gpu.hpp"
#include "layer_loader.hpp"

using namespace csd;

namespace {

class Loader : public ::testing::Test {
protected:
    void SetUp() override
    {
        if (!gpu::available()) GTEST_SKIP() << "no CUDA device here";
        char name[] = "/tmp/csd-loader-XXXXXX";
        close(mkstemp(name));
        unlink(name);
        path_ = name;
        dev = Device::open("emu:" + path_ + "?size=512M&slm=16M");
        ObjectStore::format(*dev);
        store = std::make_unique<ObjectStore>(*dev);
        ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
    }
    void TearDown() override
    {
        for (void *b : buffers) cudaFree(b);
        store.reset();
        dev.reset();
        if (!path_.empty()) unlink(path_.c_str());
        if (stream) cudaStreamDestroy(stream);
    }
    // Layer l's tensor t: sizes that are no multiple of the alignment, some of a few bytes.
    static size_t tensor_bytes(int l, int t) { return t == 0 ? 4096 * 3 + 17 * l + 5 : t == 1 ? (1 << 20) + 333 * t : 8 + l; }
    std::vector<uint8_t> random(size_t n, uint64_t seed)
    {
        std::mt19937_64 g(seed);
        std::vector<uint8_t> v(n);
        for (auto &b : v) b = static_cast<uint8_t>(g());
        return v;
    }
    // Stores `n` layers of three tensors each ("layers.L.tT"), and plans them.
    std::vector<gpu::LayerPlan> put_layers(int n, size_t big = 0)
    {
        std::vector<gpu::LayerPlan> plans;
        for (int l = 0; l < n; l++) {
            std::vector<std::string> names;
            for (int t = 0; t < 3; t++) {
                const std::string name = "layers." + std::to_string(l) + ".t" + std::to_string(t);
                const size_t bytes = big && t == 1 ? big : tensor_bytes(l, t);
                data[name] = random(bytes, static_cast<uint64_t>(l * 16 + t + 1));
                store->put(name, data[name].data(), bytes);
                names.push_back(name);
            }
            plans.push_back(gpu::plan_layer(*store, names));
        }
        return plans;
    }
    // count buffers of `bytes` each in GPU memory.
    std::vector<void *> alloc(int count, uint64_t bytes)
    {
        std::vector<void *> v;
        for (int i = 0; i < count; i++) {
            void *d = nullptr;
            EXPECT_EQ(cudaMalloc(&d, bytes), cudaSuccess);
            EXPECT_EQ(cudaMemset(d, 0xee, bytes), cudaSuccess);
            buffers.push_back(d);
            v.push_back(d);
        }
        return v;
    }
    static uint64_t largest(const std::vector<gpu::LayerPlan> &p)
    {
        uint64_t m = 0;
        for (const auto &l : p) m = std::max(m, l.bytes);
        return m;
    }
    // Whether buffer `d` holds layer `plan`'s tensors byte for byte (copied out on stream).
    void expect_layer(const void *d, const gpu::LayerPlan &plan, const std::string &what)
    {
        std::vector<uint8_t> got(plan.bytes);
        ASSERT_EQ(cudaMemcpyAsync(got.data(), d, plan.bytes, cudaMemcpyDeviceToHost, stream), cudaSuccess);
        ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
        for (const auto &t : plan.tensors) {
            ASSERT_EQ(t.offset % 256, 0u) << t.name;
            EXPECT_TRUE(std::equal(data[t.name].begin(), data[t.name].end(), got.begin() + t.offset))
                << what << ": " << t.name;
        }
    }
    std::string path_;
    std::unique_ptr<Device> dev;
    std::unique_ptr<ObjectStore> store;
    cudaStream_t stream = nullptr;
    std::map<std::string, std::vector<uint8_t>> data;
    std::vector<void *> buffers;
};

TEST_F(Loader, PlanLaysTensorsOutAligned)
{
    const auto plans = put_layers(2);
    ASSERT_EQ(plans[1].tensors.size(), 3u);
    EXPECT_EQ(plans[1].tensors[0].offset, 0u);
    EXPECT_EQ(plans[1].tensors[1].offset, (tensor_bytes(1, 0) + 255) / 256 * 256);
    EXPECT_EQ(plans[1].bytes, plans[1].tensors[2].offset + tensor_bytes(1, 2));
    EXPECT_EQ(plans[1].tensors[2].bytes, tensor_bytes(1, 2));
    try {
        gpu::plan_layer(*store, {"layers.0.t0", "nothing"});
        ADD_FAILURE() << "a layer was planned with a tensor the store does not hold";
    } catch (const Error &e) {
        EXPECT_EQ(e.errnum(), ENOENT) << e.what();
    }
    EXPECT_THROW(gpu::plan_layer(*store, {}), Error);
    EXPECT_THROW(gpu::plan_layer(*store, {"layers.0.t0"}, 100), Error);
}

// Three passes over 6 layers, one resident, a ring of 2, on both landing paths and on three
// lanes: every layer acquired holds its tensors byte for byte; the timings name each landing.
TEST_F(Loader, StreamsEveryLayerByteForByteOnBothPaths)
{
    const auto plans = put_layers(6);
    gpu::Landing land(*dev, 1 << 20, 2, 3), land2(*dev, 1 << 20, 2, 3), land3(*dev);
    // the pipeline, the simulated peer-to-peer path, and three lanes (the first direct)
    for (const auto &[direct, lanes] : {std::pair{false, 1}, {true, 1}, {true, 3}}) {
        auto bufs = alloc(3, largest(plans));
        std::vector<gpu::Landing *> use{&land, &land2, &land3};
        use.resize(static_cast<size_t>(lanes));
        gpu::LayerLoader loader(use, *store, plans, {4}, bufs, {plans[4].bytes, largest(plans), largest(plans)},
                                direct);
        EXPECT_EQ(loader.lanes(), lanes);
        EXPECT_EQ(loader.ring(), 2);
        EXPECT_EQ(loader.streamed(), (std::vector<int>{0, 1, 2, 3, 5}));
        EXPECT_TRUE(loader.is_resident(4));
        for (int pass = 0; pass < 3; pass++) {
            for (int l = 0; l < 6; l++) {
                void *d = loader.acquire(l, stream);
                if (l == 4) {
                    EXPECT_EQ(d, bufs[0]);
                }
                expect_layer(d, plans[l], "pass " + std::to_string(pass) + " layer " + std::to_string(l));
                loader.release(l, stream);
            }
        }
        const auto t = loader.timings();
        ASSERT_GE(t.size(), 1u + 5 * 3);
        EXPECT_TRUE(t[0].resident);
        EXPECT_EQ(t[0].layer, 4);
        const std::string want = lanes > 1 ? std::string(gpu::kPeerToPeer) + " + pinned-pipeline"
                                 : direct  ? gpu::kPeerToPeer
                                           : "pinned-pipeline";
        for (size_t i = 0; i < t.size(); i++) {
            if (lanes == 1) {
                EXPECT_EQ(t[i].path, want) << i;
            } else {  // which lane lands first varies
                EXPECT_NE(t[i].path.find(gpu::kPeerToPeer), std::string::npos) << t[i].path;
                EXPECT_NE(t[i].path.find("pinned-pipeline"), std::string::npos) << t[i].path;
            }
            EXPECT_GT(t[i].land, 0) << i;
            if (i >= 1 && i <= 15) {
                EXPECT_EQ(t[i].layer, loader.streamed()[(i - 1) % 5]) << i;
                EXPECT_EQ(t[i].pass, (i - 1) / 5) << i;
                EXPECT_GE(t[i].stall, 0) << i;  // acquired
                EXPECT_EQ(t[i].bytes, plans[t[i].layer].bytes);
            }
        }
        EXPECT_EQ(loader.restarts(), 0u);
    }
}

// A ring of one buffer, layers of 24 MiB: the consumer copies each layer out on its stream
// several times after acquire() and releases it at once, before the copies ran. The loader must
// wait for them before landing the next layer into the same buffer; had it not, the copies
// would read parts of the next layer.
TEST_F(Loader, TheRingWaitsForTheConsumersWorkBeforeReuse)
{
    const auto plans = put_layers(4, 24 << 20);
    gpu::Landing land(*dev);
    auto bufs = alloc(1, largest(plans));
    gpu::LayerLoader loader(land, *store, plans, {}, bufs, {largest(plans)}, true);
    uint8_t *host = nullptr;
    ASSERT_EQ(cudaMallocHost(reinterpret_cast<void **>(&host), largest(plans)), cudaSuccess);
    std::vector<uint8_t> copy(largest(plans));
    for (int pass = 0; pass < 2; pass++) {
        for (int l = 0; l < 4; l++) {
            void *d = loader.acquire(l, stream);
            for (int r = 0; r < 8; r++) {  // ~8 x 24 MiB over PCIe: a few ms queued behind the release
                ASSERT_EQ(cudaMemcpyAsync(host, d, plans[l].bytes, cudaMemcpyDeviceToHost, stream), cudaSuccess);
            }
            loader.release(l, stream);
            ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
            for (const auto &t : plans[l].tensors) {
                EXPECT_TRUE(std::equal(data[t.name].begin(), data[t.name].end(), host + t.offset))
                    << "pass " << pass << " " << t.name << ": overwritten before the consumer's copies ran";
            }
        }
    }
    for (const auto &t : loader.timings()) EXPECT_EQ(t.buffer, 0);
    cudaFreeHost(host);
}

// All layers resident (no ring): each lands once, whatever the passes.
TEST_F(Loader, AllResidentLandOnce)
{
    const auto plans = put_layers(3);
    gpu::Landing land(*dev);
    auto bufs = alloc(3, largest(plans));
    gpu::LayerLoader loader(land, *store, plans, {2, 0, 1}, bufs, std::vector<uint64_t>(3, largest(plans)));
    for (int pass = 0; pass < 2; pass++) {
        for (int l = 0; l < 3; l++) {
            void *d = loader.acquire(l, stream);
            EXPECT_EQ(d, bufs[(l + 1) % 3]);
            expect_layer(d, plans[l], "layer " + std::to_string(l));
            loader.release(l, stream);
        }
    }
    EXPECT_EQ(loader.timings().size(), 3u);
}

// A pass that stops half way and starts again at layer 0: the stream restarts there.
TEST_F(Loader, AnAcquireOutOfOrderRestartsTheStream)
{
    const auto plans = put_layers(5);
    gpu::Landing land(*dev);
    auto bufs = alloc(3, largest(plans));
    gpu::LayerLoader loader(land, *store, plans, {}, bufs, std::vector<uint64_t>(3, largest(plans)));
    for (int l : {0, 1, 2, 0, 1, 2, 3, 4, 3, 0}) {
        void *d = loader.acquire(l, stream);
        expect_layer(d, plans[l], "layer " + std::to_string(l));
        loader.release(l, stream);
    }
    EXPECT_EQ(loader.restarts(), 3u);  // at the second 0, at the second 3 and at the last 0
    // while layers are held, an acquire out of order is an error, not a restart
    loader.acquire(1, stream);
    try {
        loader.acquire(3, stream);
        ADD_FAILURE() << "an acquire out of order while a layer is held was taken";
    } catch (const Error &e) {
        EXPECT_EQ(e.errnum(), EINVAL) << e.what();
    }
    loader.release(1, stream);
}

// A tensor whose bytes on the namespace were damaged fails the acquire with EIO (the
// landing's CRC-32C check), on both paths; repaired, the next acquire lands it.
TEST_F(Loader, ADamagedTensorFailsItsLayerThenLandsOnceRepaired)
{
    const auto plans = put_layers(3);
    const uint32_t lba = dev->ns().lba_size;
    const uint64_t at = store->first_lba(store->stat("layers.1.t1")) + 10;
    std::vector<uint8_t> sector(lba);
    dev->read_lbas(at, 1, sector.data());
    sector[3] ^= 0x10;
    dev->write_lbas(at, 1, sector.data());
    gpu::Landing land(*dev);
    for (bool direct : {false, true}) {
        auto bufs = alloc(2, largest(plans));
        gpu::LayerLoader loader(land, *store, plans, {}, bufs, std::vector<uint64_t>(2, largest(plans)), direct);
        loader.acquire(0, stream);
        loader.release(0, stream);
        for (int tries = 0; tries < 2; tries++) {
            try {
                loader.acquire(1, stream);
                ADD_FAILURE() << "a damaged layer was acquired (direct " << direct << ")";
            } catch (const Error &e) {
                EXPECT_EQ(e.errnum(), EIO) << e.what();
            }
        }
        if (direct) {
            sector[3] ^= 0x10;
            dev->write_lbas(at, 1, sector.data());
            expect_layer(loader.acquire(1, stream), plans[1], "repaired");
            loader.release(1, stream);
            expect_layer(loader.acquire(2, stream), plans[2], "after");
            loader.release(2, stream);
        }
    }
}

// A tensor replaced by one of another size since the plan fails its layer (ENOSPC larger,
// EAGAIN smaller): the buffer's layout no longer fits it.
TEST_F(Loader, ATensorReplacedWithAnotherSizeFailsItsLayer)
{
    const auto plans = put_layers(2);
    gpu::Landing land(*dev);
    for (int grow : {1, -1}) {
        const auto &name = plans[1].tensors[0].name;
        std::vector<uint8_t> other(static_cast<size_t>(static_cast<int64_t>(plans[1].tensors[0].bytes) + grow));
        store->put(name, other.data(), other.size());
        auto bufs = alloc(1, largest(plans) + 4096);
        gpu::LayerLoader loader(land, *store, plans, {}, bufs, {largest(plans) + 4096});
        loader.acquire(0, stream);
        loader.release(0, stream);
        try {
            loader.acquire(1, stream);
            ADD_FAILURE() << "a layer landed with a tensor of another size";
        } catch (const Error &e) {
            EXPECT_EQ(e.errnum(), grow > 0 ? ENOSPC : EAGAIN) << e.what();
        }
        store->put(name, data[name].data(), data[name].size());
    }
}

TEST_F(Loader, BadArgumentsAreRefused)
{
    const auto plans = put_layers(3);
    gpu::Landing land(*dev);
    const uint64_t big = largest(plans);
    auto bufs = alloc(3, big);
    auto refused = [&](std::vector<int> resident, std::vector<void *> b, std::vector<uint64_t> bytes, const char *what) {
        try {
            gpu::LayerLoader l(land, *store, plans, resident, b, bytes);
            ADD_FAILURE() << what << ": accepted";
        } catch (const Error &e) {
            EXPECT_EQ(e.errnum(), EINVAL) << what << ": " << e.what();
        }
    };
    refused({}, {}, {}, "no ring for streamed layers");
    refused({0, 1, 2}, {bufs[0], bufs[1]}, {big, big}, "fewer buffers than resident layers");
    refused({3}, {bufs[0], bufs[1]}, {big, big}, "resident layer out of range");
    refused({1, 1}, bufs, {big, big, big}, "resident layer twice");
    refused({}, {bufs[0]}, {big - 1}, "ring buffer too small");
    refused({}, {bufs[0], bufs[1]}, {big}, "sizes and buffers differ");
    refused({}, {nullptr}, {big}, "null buffer");
    try {
        gpu::LayerLoader l(std::vector<gpu::Landing *>{&land, nullptr}, *store, plans, {}, {bufs[0]}, {big});
        ADD_FAILURE() << "a null lane: accepted";
    } catch (const Error &e) {
        EXPECT_EQ(e.errnum(), EINVAL);
    }
    try {
        gpu::LayerLoader l(land, *store, {}, {}, {bufs[0]}, {big});
        ADD_FAILURE() << "no layers: accepted";
    } catch (const Error &e) {
        EXPECT_EQ(e.errnum(), EINVAL);
    }
    gpu::LayerLoader loader(land, *store, plans, {}, {bufs[0], bufs[1]}, {big, big});
    EXPECT_THROW(loader.acquire(3, stream), Error);
    EXPECT_THROW(loader.acquire(-1, stream), Error);
    loader.acquire(0, stream);
    loader.acquire(1, stream);
    try {
        loader.acquire(2, stream);  // a third held with a ring of two
        ADD_FAILURE() << "more layers held than the ring has buffers";
    } catch (const Error &e) {
        EXPECT_EQ(e.errnum(), EBUSY) << e.what();
    }
    try {
        loader.release(1, stream);  // 0 is older
        ADD_FAILURE() << "a release out of order was taken";
    } catch (const Error &e) {
        EXPECT_EQ(e.errnum(), EINVAL) << e.what();
    }
    loader.release(0, stream);
    loader.release(1, stream);
    EXPECT_THROW(loader.release(2, stream), Error);  // not held
    expect_layer(loader.acquire(2, stream), plans[2], "after the refusals");
    loader.release(2, stream);
}

}  // namespace
