// The timing model (csd_core.h: csd_model_*, timing_model.cc) against completion times
// worked out by hand from its definition in docs/timing-model.md: stages in the order the
// bytes flow, latency overlapping other commands' transfers, transfers and compute units
// queueing first come first served.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "core_fixture.h"
#include "csd_core.h"

namespace {

// A model with round numbers: 1 GB/s is 1 byte per ns.
csd_model_params simple()
{
    csd_model_params p{};
    p.link_gbps = 4;               // 4 bytes/ns each way
    p.link_latency_ns = 1000;
    p.media_read_gbps = 2;
    p.media_write_gbps = 1;
    p.media_read_latency_ns = 50000;
    p.media_write_latency_ns = 10000;
    p.slm_gbps = 8;
    p.unit_gflops = 10;            // 10 flops/ns
    p.unit_gbps = 2;
    p.bpf_record_ns = 5;
    return p;
}

struct Model : CoreTest {
    void SetUp() override
    {
        CoreTest::SetUp();
        const csd_model_params p = simple();
        ASSERT_EQ(csd_model_check(&p), nullptr);
        csd_core_set_model(core, &p);
    }
    uint64_t nvm(uint8_t opcode, uint64_t bytes, uint64_t now)
    {
        csd_model_work w;
        csd_model_work_nvm(opcode, bytes, &w);
        return csd_core_model_schedule(core, &w, now);
    }
};

}  // namespace

TEST(ModelOff, ByDefaultNothingIsModelled)
{
    csd_core *core = csd_core_new(1 << 20, 1);
    csd_model_work w;
    csd_model_work_nvm(0x02, 1 << 20, &w);
    EXPECT_FALSE(csd_core_model_on(core));
    EXPECT_EQ(csd_core_model_schedule(core, &w, 12345), 0u);
    csd_model_params zero{};
    EXPECT_FALSE(csd_model_enabled(&zero));
    csd_core_free(core);
}

TEST_F(Model, ReadIsMediaThenLinkThenLatency)
{
    // 1 MiB: 50 us media latency, 1048576 / 2 ns out of the media, / 4 ns over the link, 1 us.
    EXPECT_EQ(nvm(0x02, 1 << 20, 0), 50000u + 524288 + 262144 + 1000);
    EXPECT_EQ(counter(CSD_STAT_MODEL_MEDIA_BUSY_NS), 524288u);
    EXPECT_EQ(counter(CSD_STAT_MODEL_LINK_OUT_BUSY_NS), 262144u);
    EXPECT_EQ(counter(CSD_STAT_MODEL_LINK_IN_BUSY_NS), 0u);
}

TEST_F(Model, WriteAndFlush)
{
    EXPECT_EQ(nvm(0x01, 4096, 0), 1024u + 10000 + 4096 + 1000);  // link in, media latency + write, latency
    EXPECT_EQ(nvm(0x00, 0, 100000), 100000u + 10000 + 1000);     // a Flush: one media write latency
}

TEST_F(Model, IdleAfterAResetKeepsTheBusyCounters)
{
    // Two 1 MiB reads queue on the media; after idle() (a controller reset) a third starts
    // at once, and the busy time counted before the reset stays.
    EXPECT_EQ(nvm(0x02, 1 << 20, 0), 50000u + 524288 + 262144 + 1000);
    EXPECT_EQ(nvm(0x02, 1 << 20, 0), 50000u + 2 * 524288 + 262144 + 1000);
    csd_core_model_idle(core);
    EXPECT_EQ(nvm(0x02, 1 << 20, 10), 10u + 50000 + 524288 + 262144 + 1000);
    EXPECT_EQ(counter(CSD_STAT_MODEL_MEDIA_BUSY_NS), 3 * 524288u);
}

TEST_F(Model, SmallReadsAtQueueDepthOneCostTheLatency)
{
    uint64_t t = 0;
    for (int i = 0; i < 10; i++) t = nvm(0x02, 4096, t);  // each issued when the last completed
    EXPECT_EQ(t, 10 * (50000u + 2048 + 1024 + 1000));
}

TEST_F(Model, ConcurrentReadsShareTheMediaBandwidthButOverlapLatency)
{
    // Two 1 MiB reads arriving together: both wait out the latency at once, then the
    // second transfer queues behind the first on the media and on the link.
    const uint64_t a = nvm(0x02, 1 << 20, 0), b = nvm(0x02, 1 << 20, 0);
    EXPECT_EQ(a, 50000u + 524288 + 262144 + 1000);
    EXPECT_EQ(b, 50000u + 2 * 524288 + 262144 + 1000);
}

TEST_F(Model, ExecutesQueueOnTheComputeUnits)
{
    // gemm 100x100x100: 2e6 flops at 10 flops/ns = 200 us on a unit; its 120000 bytes of
    // ranges go through SLM alongside (15 us). Five at once on two units: 200, 200, 400,
    // 400, 600 us, each plus the descriptor over the link and the latency.
    std::vector<uint64_t> done;
    csd_gemm_params g{100, 100, 100, 0, 1.0f, 0.0f};
    const auto desc = make_descriptor(CSD_PROG_GEMM, {{0, 40000}, {40000, 40000}, {80000, 40000}}, &g, sizeof g);
    for (int i = 0; i < 5; i++) {
        csd_exec *job = nullptr;
        ASSERT_EQ(csd_core_exec_prepare(core, desc.data(), static_cast<uint32_t>(desc.size()), &job), 0);
        csd_cmd c{CSD_OPC_EXECUTE, 1, static_cast<uint32_t>(desc.size()), 0, 0, 0, 0, 0};
        csd_ctx ctx{1 << 20, 512, 0};
        csd_op op;
        ASSERT_EQ(csd_core_decode(core, &c, &ctx, &op), 0);
        csd_model_work w;
        csd_model_work_op(&op, &w);
        csd_exec_model_work(job, &w);
        done.push_back(csd_core_model_schedule(core, &w, 0));
        csd_core_exec_discard(job);
    }
    // Descriptors (88 bytes, 22 ns each) queue on the link: the k-th arrives at 22(k+1).
    // Unit A takes executes 0, 2, 4 back to back from 22 ns, unit B 1 and 3 from 44 ns.
    const uint64_t desc_ns = (desc.size() + 3) / 4;
    ASSERT_EQ(desc_ns, 22u);
    const uint64_t want[5] = {22 + 200000, 44 + 200000, 22 + 400000, 44 + 400000, 22 + 600000};
    for (int i = 0; i < 5; i++) EXPECT_EQ(done[i], want[i] + 1000) << "execute " << i;
    EXPECT_EQ(counter(CSD_STAT_MODEL_COMPUTE_BUSY_NS), 5 * 200000u);
}

TEST_F(Model, StreamingProgramsAndDownloadedOnesCostTheirBytesOrRecords)
{
    csd_model_work w{};
    w.compute = 1;
    w.stream_bytes = w.slm = 1 << 20;  // 2 bytes/ns on a unit, 8 in SLM: the unit bounds it
    EXPECT_EQ(csd_core_model_schedule(core, &w, 0), 524288u + 1000);
    csd_model_work r{};
    r.compute = 1;
    r.records = 1000;  // 5 ns each
    EXPECT_EQ(csd_core_model_schedule(core, &r, 0), 5000u + 1000);  // the other unit was free
}

// Found by QEMU's generic fuzzer: a guest's gemm of 2 * 4e9^3 flops made the model convert
// 5e27 ns to an integer (undefined). A gemm whose matrices do not fit its ranges fails at
// once and costs only its bytes; any other absurd work is capped at 1e15 ns per stage.
TEST_F(Model, AbsurdParametersGiveALongTimeNeverAnOverflow)
{
    auto model_of = [&](uint16_t program, const std::vector<std::pair<uint64_t, uint64_t>> &ranges,
                        const void *params, uint32_t len) {
        const auto desc = make_descriptor(program, ranges, params, len);
        csd_exec *job = nullptr;
        EXPECT_EQ(csd_core_exec_prepare(core, desc.data(), static_cast<uint32_t>(desc.size()), &job), 0);
        csd_model_work w{};
        if (job) {
            csd_exec_model_work(job, &w);
            csd_core_exec_discard(job);
        }
        return w;
    };
    csd_gemm_params g{4000000000u, 4000000000u, 4000000000u, 0, 1.0f, 0.0f};
    csd_model_work w = model_of(CSD_PROG_GEMM, {{0, 4096}, {4096, 4096}, {8192, 4096}}, &g, sizeof g);
    EXPECT_EQ(w.flops, 0.0);                     // does not fit: no flops, its 12 KiB streamed
    EXPECT_EQ(w.stream_bytes, 3 * 4096u);
    EXPECT_EQ(csd_core_model_schedule(core, &w, 0), 3 * 4096u / 2 + 1000);
    csd_conv2d_params c{};
    c.c = c.r = c.s = 4000000000u;
    w = model_of(CSD_PROG_CONV2D, {{0, 4096}, {4096, 4096}, {8192, 4096}, {12288, 4096}}, &c, sizeof c);
    EXPECT_GT(w.flops, 1e27);
    EXPECT_EQ(csd_core_model_schedule(core, &w, 0), 1000000000000000u + 1000);  // capped
}

TEST_F(Model, DelayAndOverrunsAreCounted)
{
    csd_core_model_done(core, 5000, 3000);  // done early: 2000 ns of modelled delay
    csd_core_model_done(core, 5000, 9000);  // the host was slower than the model
    csd_core_model_done(core, 0, 9000);     // not modelled: nothing
    EXPECT_EQ(counter(CSD_STAT_MODEL_DELAY_NS), 2000u);
    EXPECT_EQ(counter(CSD_STAT_MODEL_OVERRUNS), 1u);
}

TEST(ModelParams, PresetsNamesAndChecks)
{
    for (unsigned i = 0; csd_model_preset_name(i); i++) {
        csd_model_params p{};
        ASSERT_EQ(csd_model_preset(csd_model_preset_name(i), &p), 0);
        EXPECT_TRUE(csd_model_enabled(&p)) << csd_model_preset_name(i);
        EXPECT_EQ(csd_model_check(&p), nullptr) << csd_model_preset_name(i);
        EXPECT_GT(p.compute_units, 0u);
    }
    csd_model_params p{};
    char err[256];
    EXPECT_EQ(csd_model_set(&p, "preset", "gen4x4-8core", err, sizeof err), 0);
    EXPECT_DOUBLE_EQ(p.link_gbps, 7.0);
    EXPECT_EQ(p.compute_units, 8u);
    EXPECT_EQ(csd_model_set(&p, "link-gbps", "3.5", err, sizeof err), 0);  // a preset, then one change
    EXPECT_DOUBLE_EQ(p.link_gbps, 3.5);
    EXPECT_EQ(csd_model_set(&p, "media-read-latency-ns", "80000", err, sizeof err), 0);
    EXPECT_EQ(p.media_read_latency_ns, 80000u);
    EXPECT_EQ(csd_model_set(&p, "compute-units", "4", err, sizeof err), 0);
    EXPECT_EQ(p.compute_units, 4u);
    EXPECT_EQ(csd_model_set(&p, "link-gbps", "-1", err, sizeof err), -1);
    EXPECT_NE(std::string(err).find("link-gbps"), std::string::npos);
    EXPECT_EQ(csd_model_set(&p, "link-gbps", "fast", err, sizeof err), -1);
    EXPECT_EQ(csd_model_set(&p, "media-read-latency-ns", "1.5", err, sizeof err), -1);
    EXPECT_EQ(csd_model_set(&p, "compute-units", "300", err, sizeof err), -1);
    // the units a device runs with: asked for, else the model's, else 2; a mismatch is 0
    csd_model_params none{};
    EXPECT_EQ(csd_model_compute_units(&none, 0), 2u);
    EXPECT_EQ(csd_model_compute_units(&none, 3), 3u);
    EXPECT_EQ(csd_model_compute_units(&p, 0), 4u);
    EXPECT_EQ(csd_model_compute_units(&p, 4), 4u);
    EXPECT_EQ(csd_model_compute_units(&p, 3), 0u);
    EXPECT_EQ(csd_model_set(&p, "warp-drive", "1", err, sizeof err), -1);
    EXPECT_NE(std::string(err).find("link-gbps"), std::string::npos) << "the message lists the known names";
    EXPECT_EQ(csd_model_set(&p, "preset", "gen9", err, sizeof err), -1);
    EXPECT_NE(std::string(err).find("gen4x4-8core"), std::string::npos) << "the message lists the presets";
    csd_model_params half{};
    half.unit_gflops = 5;
    EXPECT_NE(csd_model_check(&half), nullptr) << "a compute unit needs both speeds";
    half.unit_gbps = std::nan("");
    EXPECT_NE(csd_model_check(&half), nullptr);
}
