// SPDX-License-Identifier: MIT
// csd::DriveSet on in-process devices (or $CSD_TEST_DRIVES, comma-separated, e.g. the
// guest's /dev/ng0n1,/dev/ng1n1,/dev/ng2n1): placement, striped objects, and every fan-out
// checked against the same work on one drive or a host reference computation.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <sstream>

#include "csd/drive_set.hpp"
#include "csd_crc32c.h"

using namespace csd;

namespace {

std::vector<std::string> g_paths;  // the drives under test
std::vector<std::string> g_files;  // in-process backing files to remove

class Drives : public ::testing::Test {
protected:
    void SetUp() override
    {
        set = DriveSet::open(g_paths);
        set->format(true);  // over the last test's stores
    }
    std::unique_ptr<DriveSet> set;
};

std::vector<float> random_floats(size_t n, uint32_t seed)
{
    std::mt19937 g(seed);
    std::uniform_real_distribution<float> d(-100, 100);
    std::vector<float> v(n);
    for (auto &x : v) x = d(g);
    return v;
}

}  // namespace

TEST_F(Drives, WholeObjectsLiveOnTheirHomeDrive)
{
    for (int i = 0; i < 12; i++) {
        const std::string name = "obj" + std::to_string(i);
        const std::string data = "bytes of " + name;
        set->put(name, data.data(), data.size());
        for (size_t d = 0; d < set->size(); d++) EXPECT_EQ(set->store(d).exists(name), d == set->home(name)) << name;
        const auto back = set->get(name);
        EXPECT_EQ(std::string(back.begin(), back.end()), data);
    }
    EXPECT_EQ(set->list().size(), 12u);
    set->remove("obj3");
    EXPECT_EQ(set->list().size(), 11u);
    EXPECT_THROW(set->get("obj3"), Error);
}

TEST_F(Drives, StripedTensorsSplitByRows)
{
    const uint64_t rows = 1001, cols = 7;
    const auto t = random_floats(rows * cols, 1);
    set->put_striped("t", t.data(), t.size() * 4, "<f4", {rows, cols});
    EXPECT_TRUE(set->striped("t"));
    uint64_t seen = 0;
    for (size_t d = 0; d < set->size(); d++) {
        const ObjectInfo p = set->store(d).stat(set->part_name("t", d));
        EXPECT_EQ(p.shape[0], rows * (d + 1) / set->size() - rows * d / set->size());
        seen += p.shape[0];
    }
    EXPECT_EQ(seen, rows);
    const ObjectInfo all = set->stat("t");
    EXPECT_EQ(all.shape, (std::vector<uint64_t>{rows, cols}));
    EXPECT_EQ(all.bytes, rows * cols * 4);
    const auto back = set->get("t");
    ASSERT_EQ(back.size(), t.size() * 4);
    EXPECT_EQ(std::memcmp(back.data(), t.data(), back.size()), 0);
    const auto listed = set->list();
    ASSERT_EQ(listed.size(), 1u);
    EXPECT_EQ(listed[0].name, "t");
    set->remove("t");
    EXPECT_TRUE(set->list().empty());
    EXPECT_THROW(set->put_striped("bad", t.data(), 12, "<f4", {rows, cols}), Error);
}

TEST_F(Drives, APutReplacesTheObjectInAnyPlacement)
{
    const auto t = random_floats(300, 2);
    set->put_striped("x", t.data(), t.size() * 4, "<f4", {t.size()});
    const std::string whole = "now whole";
    set->put("x", whole.data(), whole.size());
    EXPECT_FALSE(set->striped("x"));
    auto back = set->get("x");
    EXPECT_EQ(std::string(back.begin(), back.end()), whole);
    set->put_replicated("x", t.data(), t.size() * 4, "<f4", {t.size()});
    set->put_striped("x", t.data(), t.size() * 4, "<f4", {t.size()});
    for (size_t d = 0; d < set->size(); d++) EXPECT_FALSE(set->store(d).exists("x")) << d;  // no stale copies
    EXPECT_EQ(set->get("x").size(), t.size() * 4);
    set->put("x", whole.data(), whole.size());
    for (size_t d = 0; d < set->size(); d++) {
        EXPECT_EQ(set->store(d).exists("x"), d == set->home("x")) << d;
        EXPECT_FALSE(set->store(d).exists(set->part_name("x", d))) << d;
    }
    ASSERT_EQ(set->list().size(), 1u);
}

// A put that fails leaves the acknowledged object as it was (found by an outside review:
// the old form was dropped first, and a striped put refused for its parts' names lost it).
TEST_F(Drives, AFailedPutLeavesTheObjectAsItWas)
{
    const std::string name(252, 'n');  // fits whole; its parts' names "NAME@i/N" do not
    const std::string whole = "acknowledged";
    set->put(name, whole.data(), whole.size());
    const auto t = random_floats(30, 3);
    EXPECT_THROW(set->put_striped(name, t.data(), t.size() * 4, "<f4", {t.size()}), Error);
    auto back = set->get(name);
    EXPECT_EQ(std::string(back.begin(), back.end()), whole);
    EXPECT_FALSE(set->striped(name));
    // A striped tensor survives a failed whole put too.
    set->put_striped("s", t.data(), t.size() * 4, "<f4", {t.size()});
    EXPECT_THROW(set->put("s", t.data(), t.size() * 4, std::string(300, 'd'), {t.size()}), Error);
    EXPECT_TRUE(set->striped("s"));
    EXPECT_EQ(set->get("s").size(), t.size() * 4);
}

// A records array keeps its whole numpy dtype whichever way it is placed, striped ones
// split by rows of any element size; what numpy could not load back is refused.
TEST_F(Drives, StructuredRecordsKeepTheirDtype)
{
    const std::string sales = "[('id', '<u4'), ('value', '<f4'), ('region', '<u4'), ('amount', '<f4')]";
    std::vector<uint8_t> recs(1001 * 16);
    std::mt19937 g(9);
    for (auto &b : recs) b = static_cast<uint8_t>(g());
    for (const std::string placement : {"home", "striped", "replicated"}) {
        const std::string name = "sales-" + placement;
        if (placement == "striped") set->put_striped(name, recs.data(), recs.size(), sales, {1001});
        else if (placement == "replicated") set->put_replicated(name, recs.data(), recs.size(), sales, {1001});
        else set->put(name, recs.data(), recs.size(), sales, {1001});
        const ObjectInfo i = set->stat(name);
        EXPECT_EQ(i.dtype, sales) << placement;
        EXPECT_EQ(i.shape, std::vector<uint64_t>{1001}) << placement;
        EXPECT_EQ(set->get(name), recs) << placement;
    }
    // padded (align=True), big-endian and nested, 22 bytes an element, rows of 3 elements
    const std::string nested = "[('a', '|u1'), ('', '|V7'), ('b', [('x', '>f8'), ('y', '>i2', (3,))])]";
    std::vector<uint8_t> t(recs.begin(), recs.begin() + 50 * 3 * 22);
    set->put_striped("nested", t.data(), t.size(), nested, {50, 3});
    EXPECT_EQ(set->stat("nested").dtype, nested);
    EXPECT_EQ(set->stat("nested").shape, (std::vector<uint64_t>{50, 3}));
    EXPECT_EQ(set->get("nested"), t);
    for (const std::string bad : {"[('a', '<i4'), ('o', '|O')]", "|O8", "[('a', '<i4')"}) {
        try {
            set->put_striped("bad", recs.data(), 16, bad, {2});
            ADD_FAILURE() << bad << " accepted";
        } catch (const Error &e) {
            EXPECT_EQ(e.errnum(), EINVAL) << e.what();
        }
        try {
            set->put("bad", recs.data(), 16, bad, {2});
            ADD_FAILURE() << bad << " accepted";
        } catch (const Error &e) {
            EXPECT_EQ(e.errnum(), EINVAL) << e.what();
        }
    }
    EXPECT_THROW(set->put_striped("short", recs.data(), 16 * 3, sales, {4}), Error);  // 4 records need 64 bytes
    EXPECT_EQ(set->list().size(), 4u);
}

TEST_F(Drives, FilterFansOutAndConcatenatesInOrder)
{
    struct Rec {
        uint32_t id;
        float v;
    };
    std::vector<Rec> recs(20000);
    std::mt19937 g(3);
    for (uint32_t i = 0; i < recs.size(); i++) recs[i] = {i, std::uniform_real_distribution<float>(0, 1)(g)};
    set->put_striped("recs", recs.data(), recs.size() * 8, "|V8", {recs.size()});
    FilterSpec spec;
    spec.record_size = 8;
    spec.field_offset = 4;
    spec.field_type = FieldType::f32;
    spec.op = CmpOp::gt;
    spec.lo = 0.9;
    const FilterResult r = set->filter("recs", spec, "hot");
    std::vector<Rec> want;
    for (const Rec &x : recs) {
        if (x.v > 0.9f) want.push_back(x);
    }
    EXPECT_EQ(r.matches, want.size());
    const auto got = set->get("hot");
    ASSERT_EQ(got.size(), want.size() * 8);
    EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size()), 0);
    // the same filter on one drive gives the same bytes
    ObjectStore &one = set->store(0);
    one.put("all", recs.data(), recs.size() * 8, "|V8", {recs.size()});
    one.filter("all", spec, "hot1");
    EXPECT_EQ(one.get("hot1"), got);
    spec.indices = true;
    EXPECT_THROW(set->filter("recs", spec, "idx"), Error);
}

TEST_F(Drives, ReductionsCombinePartials)
{
    const uint64_t n = 30001;
    auto x = random_floats(n, 5);
    x[17777] = 1000;   // the maximum, in a later block
    x[123] = -1000;    // the minimum, in the first
    set->put_striped("x", x.data(), n * 4, "<f4", {n});
    double sum = 0, mn = x[0], mx = x[0];
    for (float v : x) {
        sum += v;
        mn = std::min<double>(mn, v);
        mx = std::max<double>(mx, v);
    }
    EXPECT_NEAR(set->reduce("x", ReduceOp::sum), sum, 1e-3 * n);
    EXPECT_NEAR(set->reduce("x", ReduceOp::mean), sum / n, 1e-3);
    EXPECT_EQ(set->reduce("x", ReduceOp::min), mn);
    EXPECT_EQ(set->reduce("x", ReduceOp::max), mx);
    EXPECT_EQ(set->reduce("x", ReduceOp::argmax), 17777.0);
    EXPECT_EQ(set->reduce("x", ReduceOp::argmin), 123.0);
    EXPECT_THROW(set->reduce("nothing", ReduceOp::sum), Error);
}

TEST_F(Drives, GemmByRowBlocksMatchesTheHost)
{
    const uint32_t m = 67, k = 33, n = 29;
    const auto a = random_floats(m * k, 7), b = random_floats(k * n, 8);
    set->put_striped("a", a.data(), a.size() * 4, "<f4", {m, k});
    set->put_replicated("b", b.data(), b.size() * 4, "<f4", {k, n});
    set->gemm("a", "b", "c");
    const ObjectInfo ci = set->stat("c");
    EXPECT_EQ(ci.shape, (std::vector<uint64_t>{m, n}));
    const auto cb = set->get("c");
    ASSERT_EQ(cb.size(), size_t{m} * n * 4);
    std::vector<float> c(m * n);
    std::memcpy(c.data(), cb.data(), cb.size());
    for (uint32_t i = 0; i < m; i++) {
        for (uint32_t j = 0; j < n; j++) {
            double ref = 0;
            for (uint32_t p = 0; p < k; p++) ref += double{a[i * k + p]} * b[p * n + j];
            EXPECT_NEAR(c[i * n + j], ref, 1e-5 * (std::abs(ref) + 1000)) << i << "," << j;  // f32 sums
        }
    }
    EXPECT_EQ(set->list().size(), 3u);  // a, b (once), c
}

TEST_F(Drives, AFanOutFromAProgressCallbackDoesNotWaitForTheRunItIsIn)
{
    // A drive's streamed run whose progress callback runs a fan-out over the set: the fan-out's
    // calls run on threads of their own, and the run holds its SLM until the callback returns,
    // so the call on that drive must not wait for the run to free it (it would wait for ever,
    // the callback waiting for it): it fails at once, as a call made in the callback's own
    // thread does (docs/store.md).
    if (g_paths[0].rfind("emu:", 0) != 0) GTEST_SKIP() << "fork after open is for the in-process device";
    const uint64_t n = 30001;
    const auto x = random_floats(n, 12);
    set->put_striped("x", x.data(), n * 4, "<f4", {n});
    std::vector<uint8_t> big(8 << 20);
    for (size_t i = 0; i < big.size(); i++) big[i] = static_cast<uint8_t>(i * 131 + (i >> 13));
    set->store(0).put("big", big.data(), big.size());
    SlmAllocator &slm = set->drive(0).slm();
    SlmBuffer held = slm.alloc(slm.size() - (4 << 20));  // the run below takes the rest
    // the run in a child, where a minute stands for for ever (SIGALRM ends the hang)
    const pid_t pid = fork();
    if (pid == 0) {
        alarm(60);
        std::string r = "no progress";
        StreamOptions o;  // no budget: the run takes all SLM free
        o.progress = [&](uint64_t, uint64_t) {
            if (r != "no progress") return;
            try {
                set->reduce("x", ReduceOp::max);
                r = "ran";
            } catch (const Error &e) {
                r = e.errnum() == ENOMEM ? "refused" : e.what();
            }
        };
        try {
            if (set->store(0).checksum("big", ChecksumAlgo::crc32c, o) != csd_crc32c(big.data(), big.size())) r = "wrong";
        } catch (const std::exception &e) {
            r = e.what();
        }
        if (r != "refused" && r != "ran") fprintf(stderr, "child: %s\n", r.c_str());
        _exit(r == "refused" || r == "ran" ? 0 : 1);
    }
    ASSERT_GT(pid, 0);
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    EXPECT_FALSE(WIFSIGNALED(status)) << "the child was killed by signal " << WTERMSIG(status)
                                      << " (SIGALRM: the fan-out's call on drive 0 waited for the run whose callback "
                                         "waited for it)";
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
    held.reset();
    for (size_t d = 0; d < set->size(); d++) {
        EXPECT_EQ(set->drive(d).slm().largest_free(), set->drive(d).slm().size()) << d;
        EXPECT_TRUE(set->store(d).reservations().empty()) << d;
    }
}

TEST_F(Drives, AFailingDriveIsNamedNotAPartialAnswer)
{
    if (set->size() < 2) GTEST_SKIP() << "needs two drives";
    const auto x = random_floats(4000, 9);
    set->put_striped("x", x.data(), x.size() * 4, "<f4", {x.size()});
    set->store(1).remove(set->part_name("x", 1));  // drive 1 lost its block
    try {
        set->get("x");
        ADD_FAILURE() << "a partial answer";
    } catch (const Error &e) {
        EXPECT_NE(std::string(e.what()).find("on drive 1 (" + set->name(1) + ")"), std::string::npos) << e.what();
        EXPECT_EQ(e.errnum(), ENOENT);
    }
    EXPECT_THROW(set->reduce("x", ReduceOp::sum), Error);
}

TEST(DriveSetOpen, RefusesAnEmptySetAndNamesAMissingDrive)
{
    EXPECT_THROW(DriveSet::open({}), Error);
    try {
        DriveSet::open({g_paths[0], "/nonexistent/drive"});
        ADD_FAILURE() << "opened";
    } catch (const Error &e) {
        EXPECT_NE(std::string(e.what()).find("drive 1 (/nonexistent/drive)"), std::string::npos) << e.what();
    }
}

int main(int argc, char **argv)
{
    ::testing::InitGoogleTest(&argc, argv);
    if (const char *p = std::getenv("CSD_TEST_DRIVES")) {
        std::stringstream ss(p);
        for (std::string item; std::getline(ss, item, ',');) g_paths.push_back(item);
    } else {
        for (int i = 0; i < 3; i++) {
            char name[] = "/tmp/csd-drives-XXXXXX";
            const int fd = mkstemp(name);
            close(fd);
            unlink(name);
            g_files.push_back(name);
            g_paths.push_back(std::string("emu:") + name + "?size=64M&slm=32M&nvme-cs=1");
        }
    }
    const int rc = RUN_ALL_TESTS();
    for (const auto &f : g_files) unlink(f.c_str());
    return rc;
}
