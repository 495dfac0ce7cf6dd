// SPDX-License-Identifier: MIT
// The timing model (csd_core.h: csd_model_*, timing_model.cc) against completion times
// worked out by hand from its definition in docs/timing-model.md: stages in the order the
// bytes flow, latency overlapping other commands' transfers, transfers and compute units
// queueing first come first served.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "core_fixture.h"
#include "csd_core_steps.h"

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

// Which NVM Reads an embedding may answer on the asking thread: with the model off, every NVM
// Read of an NVM namespace; under the model on the host's clock, the same with its finish
// deferred; on exact mode's virtual clock none; never an admin command, another opcode or a
// Read of the standard front end's namespaces.
TEST(ReadPath, TheCoreSaysWhichReadsNeedNoRequest)
{
    csd_core *core = csd_core_new(1 << 20, 1);
    csd_core_cs_attach(core, 2);
    const csd_cmd read{0x02, 1, 0, 0, 7}, write{0x01, 1}, cs_read{0x02, 2};
    EXPECT_EQ(csd_core_read_path(core, &read, 0), CSD_READ_NOW);
    EXPECT_EQ(csd_core_read_path(core, &read, 1), CSD_READ_SUBMIT) << "Get Log Page is 02h too";
    EXPECT_EQ(csd_core_read_path(core, &write, 0), CSD_READ_SUBMIT);
    EXPECT_EQ(csd_core_read_path(core, &cs_read, 0), CSD_READ_SUBMIT) << "the memory namespace's";
    csd_model_params p{};
    ASSERT_EQ(csd_model_preset("gen4x4-8core", &p), 0);
    csd_core_set_model(core, &p);
    EXPECT_EQ(csd_core_read_path(core, &read, 0), CSD_READ_DEFERRED);
    csd_core_set_exact(core, 1);
    EXPECT_EQ(csd_core_read_path(core, &read, 0), CSD_READ_SUBMIT) << "a virtual clock's finish";
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
        csd_ctx ctx{1 << 20, 512, 0, 0};
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

// A pipe serves work in the order it reaches it on the model's clock, not the order the
// embedding asked: an SLM Load's SLM stage is reserved ahead (after its 50 us media read), and
// a short Execute arriving meanwhile moves its ranges through SLM in the gap before it (its
// unit busy for its own bytes only), whichever was scheduled first; a transfer too long for
// the gap goes after. (A copy Execute once waited behind a Load's reservation: a streamed
// convert's compute time then depended on which thread asked first, StreamModel in
// tests/host/test_stream.cc.)
TEST_F(Model, AnEarlierArrivalUsesThePipeBeforeALaterReservation)
{
    csd_model_work load{};
    load.media_read = load.slm = 64 << 10;  // 50 us + 32768 ns out of the media, 8192 ns in SLM
    load.media_read_op = 1;
    csd_model_work copy{};
    copy.compute = 1;
    copy.slm = copy.stream_bytes = 8192;  // two 4 KiB ranges: 4096 ns on a unit, 1024 in SLM
    const uint64_t load_done = 50000 + 32768 + 8192 + 1000, copy_done = 100 + 4096 + 1000;
    for (bool load_first : {true, false}) {
        SCOPED_TRACE(load_first ? "the Load scheduled first" : "the Execute scheduled first");
        const csd_model_params p = simple();
        csd_core_set_model(core, &p);  // an idle drive
        const uint64_t busy0 = counter(CSD_STAT_MODEL_COMPUTE_BUSY_NS);
        uint64_t l = 0, c = 0;
        if (load_first) l = csd_core_model_schedule(core, &load, 0);
        c = csd_core_model_schedule(core, &copy, 100);
        if (!load_first) l = csd_core_model_schedule(core, &load, 0);
        EXPECT_EQ(l, load_done);
        EXPECT_EQ(c, copy_done);
        EXPECT_EQ(counter(CSD_STAT_MODEL_COMPUTE_BUSY_NS) - busy0, 4096u);
    }
    // SLM is busy [100, 1124) with the copy and [82768, 90960) with the Load: an 80 KiB SLM
    // Write (20480 ns on the link, then 10240 in SLM) takes the gap, [20480, 30720); a 64 KiB
    // SLM Read arriving at 80000 (8192 ns in SLM) does not fit before the Load's and goes
    // after it, then 16384 ns over the link.
    csd_model_work w{};
    w.to_device = w.slm = 80 << 10;
    EXPECT_EQ(csd_core_model_schedule(core, &w, 0), 20480u + 10240 + 1000);
    csd_model_work r{};
    r.slm = r.to_host = 64 << 10;
    EXPECT_EQ(csd_core_model_schedule(core, &r, 80000), 90960u + 8192 + 16384 + 1000);
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
// 5e27 ns to an integer (undefined). A gemm whose matrices do not fit its ranges, or a
// conv2d of absurd dimensions, is refused by its program at once and costs nothing on the
// drive (ModelValidatedWork below); any absurd work is capped at 1e15 ns per stage.
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
    EXPECT_EQ(w.flops, 0.0);  // does not fit: refused, no work at all
    EXPECT_EQ(w.compute, 0);
    EXPECT_EQ(csd_core_model_schedule(core, &w, 0), 1000u);
    csd_conv2d_params c{};
    c.c = c.r = c.s = 4000000000u;
    w = model_of(CSD_PROG_CONV2D, {{0, 4096}, {4096, 4096}, {8192, 4096}, {12288, 4096}}, &c, sizeof c);
    EXPECT_EQ(w.flops, 0.0);
    EXPECT_EQ(w.compute, 0);
    csd_model_work huge{};
    huge.compute = 1;
    huge.flops = 1.3e32;
    EXPECT_EQ(csd_core_model_schedule(core, &huge, 0), 1000000000000000u + 1000);  // capped
}

TEST_F(Model, DelayAndOverrunsAreCounted)
{
    csd_core_model_done(core, 5000, 3000);  // done early: 2000 ns of modelled delay
    csd_core_model_done(core, 5000, 9000);  // the host was slower than the model
    csd_core_model_done(core, 0, 9000);     // not modelled: nothing
    EXPECT_EQ(counter(CSD_STAT_MODEL_DELAY_NS), 2000u);
    EXPECT_EQ(counter(CSD_STAT_MODEL_OVERRUNS), 1u);
}

// Issue 31: the host's side of a command (its submission and completion path, or a
// fabric's round trip) as one more per-command latency, and a drive behind NVMe/TCP.
TEST_F(Model, HostLatencyAddsToEveryCommand)
{
    csd_model_params p = simple();
    char err[256];
    ASSERT_EQ(csd_model_set(&p, "host-latency-ns", "25000", err, sizeof err), 0) << err;
    EXPECT_EQ(p.host_latency_ns, 25000u);
    ASSERT_EQ(csd_model_check(&p), nullptr);
    csd_core_set_model(core, &p);
    EXPECT_EQ(nvm(0x02, 4096, 0), 50000u + 2048 + 1024 + 1000 + 25000);  // a Read, then the host's 25 us
    EXPECT_EQ(nvm(0x00, 0, 1000000), 1000000u + 10000 + 1000 + 25000);   // a Flush too
    EXPECT_EQ(counter(CSD_STAT_MODEL_LINK_OUT_BUSY_NS), 1024u) << "a latency, not a busy resource";
    csd_model_params alone{};
    alone.host_latency_ns = 1;
    EXPECT_TRUE(csd_model_enabled(&alone));
    alone.host_latency_ns = 2000000000;
    EXPECT_NE(csd_model_check(&alone), nullptr) << "at most 1 s";
    csd_model_params tcp{};
    ASSERT_EQ(csd_model_preset("nvme-tcp-gen4", &tcp), 0);
    EXPECT_GT(tcp.host_latency_ns, 0u);
    EXPECT_LT(tcp.link_gbps, 7.0) << "the network, not PCIe, limits the bandwidth";
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

// Issue 27: the model costs only work the program accepts. An Execute whose run refuses it
// (its parameters or sizes, before any work) costs nothing beyond its decode (the
// descriptor over the link), whatever order the embedding asks in; a downloaded program's
// records are capped by what its input range holds, as a gemm's flops are by its matrices.
namespace {

class ModelValidatedWork : public CoreTest {
protected:
    void SetUp() override
    {
        CoreTest::SetUp();
        csd_model_params p{};
        ASSERT_EQ(csd_model_preset("gen4x4-8core", &p), 0);
        csd_core_set_model(core, &p);
    }
    // Program Load of a whole example image (records of 16 bytes); its slot, 0 if refused.
    uint16_t load_example(const char *name)
    {
        std::ifstream f(std::string(CSD_BPF_EXAMPLES) + "/" + name + ".o", std::ios::binary);
        std::vector<uint8_t> img((std::istreambuf_iterator<char>(f)), {});
        EXPECT_FALSE(img.empty());
        csd_op op;
        const uint32_t size = static_cast<uint32_t>(img.size());
        if (decode(CSD_OPC_PROGRAM_LOAD, csd_program_load_cdw10(0, CSD_PROGRAM_TYPE_EBPF), size, 0, size, 16, &op)) {
            return 0;
        }
        uint32_t dw0 = 0;
        char why[256];
        const uint16_t st = csd_core_program_load(core, &op, img.data(), &dw0, why, sizeof why);
        csd_core_complete(core, &op, st);
        return st ? 0 : static_cast<uint16_t>(dw0);
    }
    // The modelled work of an Execute of desc (decode, prepare, the program's work), then
    // its run's status in *run_status.
    csd_model_work work_of(const std::vector<uint8_t> &desc, uint16_t *run_status)
    {
        csd_op op;
        csd_model_work w{};
        EXPECT_EQ(decode(CSD_OPC_EXECUTE, static_cast<uint32_t>(desc.size()), 0, 0, 0, 0, &op), 0);
        csd_model_work_op(&op, &w);
        csd_exec *job = nullptr;
        EXPECT_EQ(csd_core_exec_prepare(core, desc.data(), static_cast<uint32_t>(desc.size()), &job), 0);
        if (!job) return w;
        csd_exec_model_work(job, &w);
        uint32_t dw0, dw1;
        *run_status = csd_core_exec_run(core, job, nullptr, &dw0, &dw1);
        csd_core_complete(core, &op, *run_status);
        return w;
    }
    static std::vector<uint8_t> bpf_params(uint32_t count, uint32_t mode, std::vector<uint64_t> p)
    {
        std::vector<uint8_t> v(16 + 8 * p.size());
        const uint32_t h[4] = {count, mode, static_cast<uint32_t>(p.size()), 0};
        std::memcpy(v.data(), h, 16);
        if (!p.empty()) std::memcpy(v.data() + 16, p.data(), 8 * p.size());
        return v;
    }
};

}  // namespace

TEST_F(ModelValidatedWork, AHostileDownloadedExecuteCostsOnlyItsDescriptor)
{
    const std::string skip = ebpf_tests_skipped(core, std::string(CSD_BPF_EXAMPLES) + "/threshold.o");
    if (!skip.empty()) GTEST_SKIP() << skip;
    const uint16_t slot = load_example("threshold");
    ASSERT_NE(slot, 0);
    // record_count FFFFFFFFh over a 16-byte range: 4.3e9 records of 8 ns would be 34.4 s
    // of a compute unit; the run refuses it (Invalid Parameters) before any record.
    const auto p = bpf_params(0xFFFFFFFFu, CSD_BPF_FILTER, {400});
    const auto desc = make_descriptor(slot, {{0, 16}, {4096, 16}}, p.data(), static_cast<uint32_t>(p.size()));
    uint16_t run = 0;
    const csd_model_work w = work_of(desc, &run);
    EXPECT_EQ(CSD_STATUS_CODE(run), CSD_STATUS_INVALID_PARAMETERS);
    EXPECT_EQ(w.records, 0u);
    EXPECT_EQ(w.compute, 0);
    EXPECT_EQ(w.slm, 0u);
    // On the gen4x4-8core drive: the descriptor over the link (7 bytes/ns) and the latency.
    const uint64_t desc_ns = (desc.size() + 6) / 7;
    EXPECT_EQ(csd_core_model_schedule(core, &w, 0), desc_ns + 900);
    EXPECT_EQ(counter(CSD_STAT_MODEL_COMPUTE_BUSY_NS), 0u);
    EXPECT_EQ(counter(CSD_STAT_MODEL_SLM_BUSY_NS), 0u);
}

TEST_F(ModelValidatedWork, ADownloadedProgramsRecordsAreTheOnesItsRangeHolds)
{
    const std::string skip = ebpf_tests_skipped(core, std::string(CSD_BPF_EXAMPLES) + "/threshold.o");
    if (!skip.empty()) GTEST_SKIP() << skip;
    const uint16_t slot = load_example("threshold");
    ASSERT_NE(slot, 0);
    std::vector<uint8_t> recs(16 * 1000, 0);
    put(0, recs);
    uint16_t run = 1;
    const auto p = bpf_params(1000, CSD_BPF_FILTER, {400});
    csd_model_work w =
        work_of(make_descriptor(slot, {{0, 16 * 1000}, {1 << 20, 16 * 1000}}, p.data(), static_cast<uint32_t>(p.size())), &run);
    EXPECT_EQ(run, 0);
    EXPECT_EQ(w.compute, 1);
    EXPECT_EQ(w.records, 1000u);  // 1000 records of 16 bytes: the input holds them all
    // map mode needs 8 bytes of output a record: too small an output is refused at once
    const auto m = bpf_params(1000, CSD_BPF_MAP, {400});
    w = work_of(make_descriptor(slot, {{0, 16 * 1000}, {1 << 20, 8 * 999}}, m.data(), static_cast<uint32_t>(m.size())), &run);
    EXPECT_EQ(CSD_STATUS_CODE(run), CSD_STATUS_OUTPUT_OVERFLOW);
    EXPECT_EQ(w.compute, 0);
    EXPECT_EQ(w.records, 0u);
}

// Every device program: refused before any work costs nothing beyond the descriptor,
// accepted costs a compute unit (and the run agrees with the model on which is which).
TEST_F(ModelValidatedWork, RefusedBuiltInProgramsCostNothingBeyondTheirDecode)
{
    struct Case {
        const char *what;
        uint16_t program;
        std::vector<std::pair<uint64_t, uint64_t>> ranges;
        std::vector<uint8_t> params;
        bool refused;
    };
    auto bytes = [](const auto &p) {
        std::vector<uint8_t> v(sizeof p);
        std::memcpy(v.data(), &p, sizeof p);
        return v;
    };
    const std::pair<uint64_t, uint64_t> a{0, 4096}, b{4096, 4096}, c{8192, 4096}, d{12288, 4096}, tiny{16384, 16};
    csd_gemm_params gemm_ok{16, 16, 16, 0, 1.0f, 0.0f}, gemm_big{4000000000u, 4000000000u, 4000000000u, 0, 1.0f, 0.0f};
    csd_conv2d_params conv_bad{};
    conv_bad.c = conv_bad.r = conv_bad.s = 4000000000u;
    csd_conv2d_params conv_ok{1, 1, 8, 8, 1, 3, 3, 1, 1, 0, 0, 1, 1, 0};
    csd_elementwise_params ew_bad{99, 16, 0, 0}, ew_ok{CSD_EW_ADD, 16, 0, 0}, ew_over{CSD_EW_ADD, 1024, 0, 0};
    csd_softmax_params sm_bad{0, 4}, sm_ok{4, 4};
    csd_reduce_params red_bad{99, CSD_DT_F32, 1, 4}, red_ok{CSD_RED_SUM, CSD_DT_F32, 4, 4};
    csd_filter_params flt_bad{};
    csd_filter_params flt_ok{};
    flt_ok.record_size = 16;
    flt_ok.count = 16;
    csd_filter_params flt_many = flt_ok;
    flt_many.count = 0xFFFFFFFFu;
    csd_convert_params cvt_bad{CSD_CVT_F32_I8, 16, 0.0f, 0}, cvt_ok{CSD_CVT_F32_F16, 16, 1.0f, 0};
    const uint32_t ck_bad = 7, ck_ok = CSD_CKSUM_CRC32C, dc_bad = 9;
    const std::vector<Case> cases = {
        {"copy", CSD_PROG_COPY, {a, b}, {}, false},
        {"copy into a smaller range", CSD_PROG_COPY, {a, tiny}, {}, true},
        {"copy with parameters", CSD_PROG_COPY, {a, b}, {1, 2, 3, 4}, true},
        {"gemm", CSD_PROG_GEMM, {a, b, c}, bytes(gemm_ok), false},
        {"gemm larger than its ranges", CSD_PROG_GEMM, {a, b, c}, bytes(gemm_big), true},
        {"gemm with two ranges", CSD_PROG_GEMM, {a, b}, bytes(gemm_ok), true},
        {"conv2d", CSD_PROG_CONV2D, {a, b, c, d}, bytes(conv_ok), false},
        {"conv2d of absurd dimensions", CSD_PROG_CONV2D, {a, b, c, d}, bytes(conv_bad), true},
        {"elementwise", CSD_PROG_ELEMENTWISE, {a, b, c}, bytes(ew_ok), false},
        {"elementwise of an unknown op", CSD_PROG_ELEMENTWISE, {a, b, c}, bytes(ew_bad), true},
        {"elementwise past its ranges", CSD_PROG_ELEMENTWISE, {a, b, tiny}, bytes(ew_over), true},
        {"softmax", CSD_PROG_SOFTMAX, {a, b}, bytes(sm_ok), false},
        {"softmax of no rows", CSD_PROG_SOFTMAX, {a, b}, bytes(sm_bad), true},
        {"reduce", CSD_PROG_REDUCE, {a, b}, bytes(red_ok), false},
        {"reduce of an unknown op", CSD_PROG_REDUCE, {a, b}, bytes(red_bad), true},
        {"filter", CSD_PROG_FILTER, {a, b}, bytes(flt_ok), false},
        {"filter of 0-byte records", CSD_PROG_FILTER, {a, b}, bytes(flt_bad), true},
        {"filter of more records than its range holds", CSD_PROG_FILTER, {a, b}, bytes(flt_many), true},
        {"convert", CSD_PROG_CONVERT, {a, b}, bytes(cvt_ok), false},
        {"convert with scale 0", CSD_PROG_CONVERT, {a, b}, bytes(cvt_bad), true},
        {"checksum", CSD_PROG_CHECKSUM, {a}, bytes(ck_ok), false},
        {"checksum of an unknown algorithm", CSD_PROG_CHECKSUM, {a}, bytes(ck_bad), true},
        {"decompress of an unknown algorithm", CSD_PROG_DECOMPRESS, {a, b}, bytes(dc_bad), true},
    };
    for (const Case &k : cases) {
        const auto desc =
            make_descriptor(k.program, k.ranges, k.params.data(), static_cast<uint32_t>(k.params.size()));
        uint16_t run = 0;
        const csd_model_work w = work_of(desc, &run);
        const uint16_t code = CSD_STATUS_CODE(run);
        if (k.refused) {
            EXPECT_TRUE(code == CSD_STATUS_INVALID_PARAMETERS || code == CSD_STATUS_OUTPUT_OVERFLOW)
                << k.what << ": " << status_text(run);
            EXPECT_EQ(w.compute, 0) << k.what;
            EXPECT_EQ(w.slm, 0u) << k.what;
            EXPECT_EQ(w.stream_bytes, 0u) << k.what;
            EXPECT_EQ(w.flops, 0.0) << k.what;
            EXPECT_EQ(w.to_device, desc.size()) << k.what;
        } else {
            EXPECT_EQ(run, 0) << k.what << ": " << status_text(run);
            EXPECT_EQ(w.compute, 1) << k.what;
        }
    }
}

// Issue 29: the core holds completions until their modelled finish and owns the port's
// timer; the embedding only arms it and posts what the core hands back.
namespace {

struct TimerPort {
    uint64_t now = 0;
    std::vector<uint64_t> armed;   // every arm_timer call, in order
    std::vector<int> posted;       // the requests posted, in order
    std::vector<int> stopped;      // requests whose queue is being deleted (startable: 0)
    csd_port port{};
    TimerPort()
    {
        port.opaque = this;
        port.now_ns = [](void *o) { return static_cast<TimerPort *>(o)->now; };
        port.arm_timer = [](void *o, uint64_t at) { static_cast<TimerPort *>(o)->armed.push_back(at); };
        port.post = [](void *req) { posted_to->posted.push_back(*static_cast<int *>(req)); };
        port.startable = [](void *req) {
            const auto &s = posted_to->stopped;
            return std::find(s.begin(), s.end(), *static_cast<int *>(req)) == s.end() ? 1 : 0;
        };
        posted_to = this;
    }
    static TimerPort *posted_to;
};
TimerPort *TimerPort::posted_to = nullptr;

}  // namespace

TEST_F(Model, TheCoreHoldsCompletionsUntilTheirFinishAndArmsThePortsTimer)
{
    TimerPort t;
    int a = 1, b = 2, c = 3, d = 4, late = 5;
    t.now = 1000;
    EXPECT_EQ(csd_core_model_hold(core, &t.port, &a, 5000), 5000u);   // held: the first, arms 5000
    EXPECT_EQ(csd_core_model_hold(core, &t.port, &b, 9000), 9000u);   // held behind it: no arm
    EXPECT_EQ(csd_core_model_hold(core, &t.port, &c, 3000), 3000u);   // the new first: arms 3000
    EXPECT_EQ(csd_core_model_hold(core, &t.port, &d, 5000), 5000u);   // after a (same finish)
    EXPECT_EQ(csd_core_model_hold(core, &t.port, &late, 800), 0u);    // overrun: post it now
    EXPECT_EQ(csd_core_model_hold(core, &t.port, &late, 0), 0u);      // not modelled
    EXPECT_EQ(t.armed, (std::vector<uint64_t>{5000, 3000}));
    EXPECT_TRUE(t.posted.empty());
    EXPECT_EQ(counter(CSD_STAT_MODEL_OVERRUNS), 1u);
    EXPECT_EQ(counter(CSD_STAT_MODEL_DELAY_NS), 4000u + 8000 + 2000 + 4000);

    t.now = 3000;  // the timer: c is due, then the next is armed
    csd_core_model_timer(core, &t.port);
    EXPECT_EQ(t.posted, (std::vector<int>{3}));
    EXPECT_EQ(t.armed.back(), 5000u);
    t.now = 6000;  // a and d (same finish, in arrival order)
    csd_core_model_timer(core, &t.port);
    EXPECT_EQ(t.posted, (std::vector<int>{3, 1, 4}));
    EXPECT_EQ(t.armed.back(), 9000u);
    t.now = 6500;  // early (a timer that fired before its time): nothing, armed again
    csd_core_model_timer(core, &t.port);
    EXPECT_EQ(t.posted.size(), 3u);
    t.now = 9000;
    csd_core_model_timer(core, &t.port);
    EXPECT_EQ(t.posted, (std::vector<int>{3, 1, 4, 2}));
    const size_t arms = t.armed.size();
    csd_core_model_timer(core, &t.port);  // nothing held: not armed again
    EXPECT_EQ(t.armed.size(), arms);
}

TEST_F(Model, AQueueBeingDeletedGetsItsHeldCompletionsAtOnceAndHoldsNoMore)
{
    TimerPort t;
    int a = 1, b = 2, c = 3;
    EXPECT_EQ(csd_core_model_hold(core, &t.port, &a, 5000), 5000u);
    EXPECT_EQ(csd_core_model_hold(core, &t.port, &b, 7000), 7000u);
    t.stopped = {1};                     // a's queue is being deleted
    csd_core_model_release(core, &t.port);
    EXPECT_EQ(t.posted, (std::vector<int>{1}));
    t.stopped = {1, 3};
    EXPECT_EQ(csd_core_model_hold(core, &t.port, &c, 6000), 0u) << "its queue is going: posted now";
    EXPECT_EQ(counter(CSD_STAT_MODEL_DELAY_NS), 5000u + 7000 + 6000) << "the delay is counted all the same";
    t.now = 7000;
    csd_core_model_timer(core, &t.port);
    EXPECT_EQ(t.posted, (std::vector<int>{1, 2}));
}

TEST_F(Model, WithoutATimerTheEmbeddingWaitsForTheTimeTheCoreGives)
{
    TimerPort t;
    t.port.arm_timer = nullptr;
    t.port.post = nullptr;
    int a = 1;
    t.now = 100;
    EXPECT_EQ(csd_core_model_hold(core, &t.port, &a, 5000), 5000u);
    EXPECT_EQ(csd_core_model_hold(core, &t.port, &a, 50), 0u);
    EXPECT_EQ(counter(CSD_STAT_MODEL_DELAY_NS), 4900u);
    EXPECT_EQ(counter(CSD_STAT_MODEL_OVERRUNS), 1u);
    csd_core_model_timer(core, &t.port);  // nothing kept
    EXPECT_TRUE(t.posted.empty());
}

// Issue 42, exact mode: a command still working when its modelled finish comes holds the
// port's clock (hold_clock on) until its work is done (off); it then completes at once,
// counted as held (model_holds), not as an overrun; without exact mode it overruns.
namespace {

struct ExactPort : TimerPort {
    std::vector<int> holds;  // every hold_clock call: 1 on, 0 off
    ExactPort()
    {
        port.hold_clock = [](void *o, int on) { static_cast<ExactPort *>(o)->holds.push_back(on); };
    }
};

}  // namespace

TEST_F(Model, ExactModeHoldsTheClockWhileAWorkingCommandIsPastItsFinish)
{
    ExactPort t;
    csd_core_set_exact(core, 1);
    int a = 1, b = 2, c = 3;
    t.now = 1000;
    csd_core_model_begin(core, &t.port, &a, 5000);  // a works on, its finish at 5000: armed
    csd_core_model_begin(core, &t.port, &b, 9000);  // b behind it: the timer stays at a's
    EXPECT_EQ(t.armed.back(), 5000u);
    t.now = 4000;  // early timer: nothing due, nothing held
    csd_core_model_timer(core, &t.port);
    EXPECT_TRUE(t.holds.empty());
    t.now = 5000;  // a's finish, a still working: the clock is held; the next armed is b's
    csd_core_model_timer(core, &t.port);
    EXPECT_EQ(t.holds, (std::vector<int>{1}));
    EXPECT_EQ(t.armed.back(), 9000u);
    csd_core_model_timer(core, &t.port);  // held already: not again
    EXPECT_EQ(t.holds, (std::vector<int>{1}));
    t.now = 5001;  // the clock's grain past the finish (QEMU's timer, an instruction): a done
    EXPECT_EQ(csd_core_model_hold(core, &t.port, &a, 5000), 0u) << "held: posted now";
    EXPECT_EQ(t.holds, (std::vector<int>{1, 0})) << "no other command due: the clock goes on";
    EXPECT_EQ(counter(CSD_STAT_MODEL_HOLDS), 1u);
    EXPECT_EQ(counter(CSD_STAT_MODEL_OVERRUNS), 0u) << "held, not overrun";
    // b is done before its finish: held on the list as without exact mode, no clock hold
    t.now = 6000;
    EXPECT_EQ(csd_core_model_hold(core, &t.port, &b, 9000), 9000u);
    EXPECT_EQ(t.holds.size(), 2u);
    // c is done without being modelled after all (refused on its unit): forgotten, no hold
    csd_core_model_begin(core, &t.port, &c, 7000);
    EXPECT_EQ(csd_core_model_hold(core, &t.port, &c, 0), 0u);
    t.now = 9000;
    csd_core_model_timer(core, &t.port);
    EXPECT_EQ(t.posted, (std::vector<int>{2}));
    EXPECT_EQ(t.holds.size(), 2u) << "c forgotten: nothing past its finish";
}

TEST_F(Model, ExactModeHoldsUntilTheLastDueCommandIsDoneAndAQueueGoingReleasesIt)
{
    ExactPort t;
    csd_core_set_exact(core, 1);
    int a = 1, b = 2;
    csd_core_model_begin(core, &t.port, &a, 5000);
    csd_core_model_begin(core, &t.port, &b, 5000);
    t.now = 5000;
    csd_core_model_timer(core, &t.port);
    EXPECT_EQ(t.holds, (std::vector<int>{1}));
    EXPECT_EQ(csd_core_model_hold(core, &t.port, &a, 5000), 0u);
    EXPECT_EQ(t.holds, (std::vector<int>{1})) << "b is due and working: held still";
    t.stopped = {2};  // b's queue is being deleted: its work is being cancelled
    csd_core_model_release(core, &t.port);
    EXPECT_EQ(t.holds, (std::vector<int>{1, 0}));
    EXPECT_EQ(counter(CSD_STAT_MODEL_HOLDS), 1u);
}

TEST_F(Model, WithoutExactModeAWorkingCommandOverrunsAndNothingIsHeld)
{
    ExactPort t;  // the port could hold its clock, but exact mode is off
    int a = 1;
    csd_core_model_begin(core, &t.port, &a, 5000);
    EXPECT_TRUE(t.armed.empty());
    t.now = 5000;
    csd_core_model_timer(core, &t.port);
    t.now = 8000;
    EXPECT_EQ(csd_core_model_hold(core, &t.port, &a, 5000), 0u);
    EXPECT_TRUE(t.holds.empty());
    EXPECT_EQ(counter(CSD_STAT_MODEL_OVERRUNS), 1u);
    EXPECT_EQ(counter(CSD_STAT_MODEL_HOLDS), 0u);
}

// Review of issue 42: the port has ONE timer (QEMU's timer_mod moves it), so the deadline
// the core arms last is the only one that fires. A held completion whose finish is later
// than a working command's must not move the timer past that working command's finish.
TEST_F(Model, ReviewExactModeAHeldCompletionDoesNotPushBackAWorkingCommandsDeadline)
{
    ExactPort t;
    csd_core_set_exact(core, 1);
    int a = 1, b = 2;
    t.now = 1000;
    csd_core_model_begin(core, &t.port, &a, 5000);  // a works on (a long gemm), finish 5000
    ASSERT_EQ(t.armed, (std::vector<uint64_t>{5000}));
    t.now = 2000;  // b (a short read) is done early, held until 9000
    EXPECT_EQ(csd_core_model_hold(core, &t.port, &b, 9000), 9000u);
    ASSERT_FALSE(t.armed.empty());
    EXPECT_LE(t.armed.back(), 5000u) << "the one timer now fires at " << t.armed.back()
                                      << ": a's finish (5000) is never seen, the guest is not held";
    // what the port's single timer does: it fires at the last deadline armed
    t.now = t.armed.back();
    if (t.now > 5000) {  // a's work ended at 8000, unheld
        t.now = 8000;
        csd_core_model_hold(core, &t.port, &a, 5000);
        t.now = 9000;
        csd_core_model_timer(core, &t.port);
    }
    EXPECT_EQ(counter(CSD_STAT_MODEL_OVERRUNS), 0u) << "exact mode let a overrun";
}

// A command that arrives while the clock is already held for an earlier one (QEMU: the VM
// stop is a request; the SQ bottom half may still start commands rung before it lands)
// is never armed: model_begin arms only when it is the first working, but the first is
// the one already past due.
TEST_F(Model, ReviewExactModeACommandArrivingDuringAHoldGetsItsDeadline)
{
    ExactPort t;
    csd_core_set_exact(core, 1);
    int a = 1, b = 2;
    t.now = 1000;
    csd_core_model_begin(core, &t.port, &a, 5000);
    t.now = 5000;
    csd_core_model_timer(core, &t.port);  // a due and working: held
    ASSERT_EQ(t.holds, (std::vector<int>{1}));
    const size_t armed_before = t.armed.size();
    csd_core_model_begin(core, &t.port, &b, 7000);  // b arrives at the held clock
    t.now = 5001;
    EXPECT_EQ(csd_core_model_hold(core, &t.port, &a, 5000), 0u);  // a done: the clock goes on
    ASSERT_EQ(t.holds, (std::vector<int>{1, 0}));
    bool armed_7000 = false;
    for (size_t i = armed_before; i < t.armed.size(); ++i) armed_7000 |= t.armed[i] == 7000;
    EXPECT_TRUE(armed_7000) << "nothing armed for b's finish at 7000: no timer fires there, b overruns unheld";
}

TEST_F(Model, NvmReadsWritesAndFlushesAreModelledByTheCore)
{
    csd_cmd rd{};
    rd.opcode = 0x02;
    rd.nsid = 1;
    rd.cdw12 = 7;  // 8 LBAs of 512 bytes: 4 KiB
    EXPECT_EQ(csd_core_model_nvm(core, &rd, 512, 0), 50000u + 2048 + 1024 + 1000);
    csd_core_model_idle(core);
    csd_cmd fl{};
    fl.nsid = 1;
    EXPECT_EQ(csd_core_model_nvm(core, &fl, 512, 0), 10000u + 1000) << "a Flush: one media write latency";
    csd_cmd other = rd;
    other.opcode = 0x05;  // Compare: not modelled
    EXPECT_EQ(csd_core_model_nvm(core, &other, 512, 0), 0u);
    csd_core_cs_attach(core, 2);
    csd_cmd mem = rd;
    mem.nsid = 2;  // Memory Read of the memory namespace: the core's own, scheduled at decode
    EXPECT_EQ(csd_core_model_nvm(core, &mem, 512, 0), 0u);
    csd_core *off = csd_core_new(1 << 20, 1);
    EXPECT_EQ(csd_core_model_nvm(off, &rd, 512, 0), 0u) << "model off";
    csd_core_free(off);
}

// Found by an outside review: QEMU's glue handed the core's uint64 finish to timer_mod, an
// int64; past 2^63 ns it wrapped to a deadline in the past, and the timer fired at once, for
// ever. A drive queued behind years of absurd work (each command capped at 1e15 ns, ~9,300
// of them) now finishes at CSD_MODEL_MAX_NS at the latest, and so is every timer armed.
TEST_F(Model, AFinishNeverPassesTheEndOfASignedClock)
{
    csd_model_params p = simple();
    p.media_read_gbps = 1e-300;  // every Read is capped at 1e15 ns
    csd_core_set_model(core, &p);
    uint64_t last = 0;
    for (int i = 0; i < 20000; i++) {  // past 2^63 ns after ~9,223, past 2^64 after ~18,447
        const uint64_t f = nvm(0x02, 512, 0);
        ASSERT_LE(f, CSD_MODEL_MAX_NS) << "read " << i;
        ASSERT_GE(f, last) << "read " << i << " wrapped";
        last = f;
    }
    EXPECT_EQ(last, CSD_MODEL_MAX_NS);
    TimerPort t;
    int a = 1;
    EXPECT_EQ(csd_core_model_hold(core, &t.port, &a, ~0ull), CSD_MODEL_MAX_NS);
    EXPECT_EQ(t.armed, (std::vector<uint64_t>{CSD_MODEL_MAX_NS}));
}

// Issue 41: an NVM command the embedding answers itself (QEMU's Read, Write and Flush) is
// modelled at its arrival by the core, which also decides which commands count: one the
// core gave a finish keeps it, one refused at once costs nothing, one still working begins
// for exact mode (the glue only hands over what it took).
TEST_F(Model, TheCoreModelsTheArrivalOfTheEmbeddingsOwnNvmCommands)
{
    ExactPort t;
    csd_core_set_exact(core, 1);
    csd_cmd rd{};
    rd.opcode = 0x02;
    rd.nsid = 1;
    rd.cdw12 = 7;  // 4 KiB
    int a = 1, b = 2, c = 3;
    t.now = 1000;
    EXPECT_EQ(csd_core_model_arrival(core, &t.port, &a, &rd, 512, 777, 1, 0), 777u) << "the core's own finish";
    EXPECT_EQ(csd_core_model_arrival(core, &t.port, &b, &rd, 512, 0, 0, 0), 0u) << "refused at once: no media time";
    const uint64_t f = csd_core_model_arrival(core, &t.port, &c, &rd, 512, 0, 1, 1);
    EXPECT_EQ(f, 1000u + 50000 + 2048 + 1024 + 1000);
    EXPECT_EQ(t.armed, (std::vector<uint64_t>{f})) << "still working: exact mode's deadline armed";
    t.now = f;
    csd_core_model_timer(core, &t.port);
    EXPECT_EQ(t.holds, (std::vector<int>{1})) << "its finish came while it works: the clock held";
    EXPECT_EQ(csd_core_model_hold(core, &t.port, &c, f), 0u);
    EXPECT_EQ(t.holds, (std::vector<int>{1, 0}));
}

// Issue 41: exact mode on a port that cannot hold its clock (the in-process device) runs on
// the core's own virtual clock: a completion moves it to its finish (never back) and is
// posted at once; the port's own clock is not read for the model.
TEST_F(Model, ExactModeWithoutAClockHoldRunsOnTheCoresVirtualClock)
{
    TimerPort t;
    t.port.arm_timer = nullptr;
    t.port.post = nullptr;
    t.now = 123456789;  // the host's clock: not the model's
    csd_core_set_exact(core, 1);
    int a = 1;
    EXPECT_EQ(csd_core_model_clock(core, &t.port), 0u);
    EXPECT_EQ(csd_core_model_hold(core, &t.port, &a, 5000), 0u) << "posted now";
    EXPECT_EQ(csd_core_model_clock(core, &t.port), 5000u);
    EXPECT_EQ(csd_core_model_hold(core, &t.port, &a, 3000), 0u);
    EXPECT_EQ(csd_core_model_clock(core, &t.port), 5000u) << "never back";
    csd_cmd rd{};
    rd.opcode = 0x02;
    rd.nsid = 1;
    EXPECT_EQ(csd_core_model_arrival(core, &t.port, &a, &rd, 512, 0, 1, 0), 5000u + 50000 + 256 + 128 + 1000)
        << "it arrives at the virtual clock";
    csd_core_set_exact(core, 0);
    EXPECT_EQ(csd_core_model_clock(core, &t.port), 123456789u) << "exact mode off: the port's clock";
}
