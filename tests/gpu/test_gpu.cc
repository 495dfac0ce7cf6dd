// SPDX-License-Identifier: MIT
// GPU landing tests: byte equality of SLM, LBA and object transfers into GPU memory over
// every path. Skips (not fails) where there is no CUDA device, as in CI.
#include <gtest/gtest.h>
#include <unistd.h>

#include <random>

#include "gpu.hpp"

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
        dev = Device::open("emu:" + path_ + "?size=256M&slm=128M");
        ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
    }
    void TearDown() override
    {
        if (!path_.empty()) unlink(path_.c_str());
        if (stream) cudaStreamDestroy(stream);
    }
    std::vector<uint8_t> random(size_t n, uint32_t seed)
    {
        std::mt19937_64 g(seed);
        std::vector<uint8_t> v(n);
        for (auto &b : v) b = static_cast<uint8_t>(g());
        return v;
    }
    std::vector<uint8_t> from_gpu(const void *d, size_t n)
    {
        std::vector<uint8_t> v(n);
        EXPECT_EQ(cudaMemcpy(v.data(), d, n, cudaMemcpyDeviceToHost), cudaSuccess);
        return v;
    }
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
    ObjectStore::format(*dev);
    ObjectStore store(*dev);
    const size_t n = (20 << 20) + 777;
    auto data = random(n, 2);
    store.put("t", data.data(), n);
    void *d = nullptr;
    ASSERT_EQ(cudaMalloc(&d, n), cudaSuccess);
    gpu::Landing land(*dev, 4 << 20, 2, 2);
    gpu::CopyReport r = land.object_to_gpu(store, "t", d, stream, false).get();
    EXPECT_EQ(r.path, "pinned-pipeline");
    EXPECT_EQ(from_gpu(d, n), data);
    std::printf("cuFile: %s\n", land.cufile_status().c_str());
    // cuFile where it works, else the automatic fall-back, named in the report
    ASSERT_EQ(cudaMemset(d, 0, n), cudaSuccess);
    r = land.object_to_gpu(store, "t", d, stream, true).get();
    std::printf("object_to_gpu with cuFile asked: path %s\n", r.path.c_str());
    EXPECT_EQ(r.path.rfind(land.cufile_status() == "available" ? "cufile" : "pinned-pipeline (cuFile: ", 0), 0u);
    EXPECT_EQ(from_gpu(d, n), data);
    const uint64_t first = store.first_lba(store.stat("t"));
    ASSERT_EQ(cudaMemset(d, 0, n), cudaSuccess);
    r = land.lbas_to_gpu(first, (4 << 20) / dev->ns().lba_size, d, stream).get();
    EXPECT_EQ(from_gpu(d, 4 << 20), std::vector<uint8_t>(data.begin(), data.begin() + (4 << 20)));
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

}  // namespace
