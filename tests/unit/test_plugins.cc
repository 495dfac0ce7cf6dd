// SPDX-License-Identifier: MIT
// Operator plug-ins (spec §9) in the device core: the example plug-in end to end against
// a search done here, and every reason a plug-in directory is refused.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>

#include "core_fixture.h"
#include "nvme_cs.h"

namespace {

// A fresh directory holding copies of the given shared objects.
std::string plugin_dir(const std::vector<std::string> &files)
{
    char tmpl[] = "/tmp/csd-plugins-XXXXXX";
    std::string dir = mkdtemp(tmpl);
    for (const auto &f : files) {
        std::ifstream in(f, std::ios::binary);
        EXPECT_TRUE(in.good()) << f;
        std::ofstream out(dir + "/" + f.substr(f.rfind('/') + 1), std::ios::binary);
        out << in.rdbuf();
    }
    return dir;
}

const std::string kExample = std::string(CSD_PLUGIN_EXAMPLES) + "/substring_search.so";

// The example plug-in's parameters (examples/plugins/substring_search.c).
struct SearchParams {
    uint32_t record_size, count, pattern_len, reserved;
    char pattern[64];
};

// Lines as 32-byte, zero-padded records.
std::vector<uint8_t> records(const std::vector<std::string> &lines)
{
    std::vector<uint8_t> recs(32 * lines.size(), 0);
    for (size_t i = 0; i < lines.size(); i++) std::memcpy(&recs[32 * i], lines[i].data(), lines[i].size());
    return recs;
}
std::string bad(const char *name) { return std::string(CSD_PLUGIN_TESTS) + "/plugin_" + name + ".so"; }

class Plugin : public CoreTest {
protected:
    // Loads dir into the core; the error message, or "" on success.
    std::string load(const std::string &dir)
    {
        char err[512] = "";
        const int rc = csd_core_load_plugins(core, dir.c_str(), err, sizeof err);
        EXPECT_EQ(rc == 0, err[0] == 0) << err;
        return err;
    }
};

TEST_F(Plugin, SubstringSearchEndToEnd)
{
    ASSERT_EQ(load(plugin_dir({kExample})), "");
    std::vector<uint8_t> page(CSD_LOG_MAX_SIZE);
    uint32_t avail;
    ASSERT_EQ(csd_core_get_log(core, CSD_LOG_CAPABILITIES, 0, 0, page.data(), &avail), 0);
    uint32_t n;
    std::memcpy(&n, page.data() + 28, 4);
    ASSERT_EQ(n, CSD_NR_DEVICE_PROGRAMS + 1u);
    const uint8_t *e = page.data() + 64 + 32 * CSD_NR_DEVICE_PROGRAMS;
    EXPECT_EQ(e[0], 0x40);
    EXPECT_EQ(e[2], CSD_PROGRAM_PLUGIN);
    EXPECT_STREQ(reinterpret_cast<const char *>(e + 8), "substring_search");

    const std::vector<std::string> lines = {"the drive computes", "nothing here", "storage compute",
                                            "compu", "xcomputex", ""};
    const std::vector<uint8_t> recs = records(lines);
    put(0, recs);
    const SearchParams p{32, static_cast<uint32_t>(lines.size()), 7, 0, "compute"};
    auto r = exec(0x40, {{0, recs.size()}, {4096, 64}}, p);
    ASSERT_OK(r);
    std::vector<uint32_t> want;
    for (uint32_t i = 0; i < lines.size(); i++) {
        if (lines[i].find("compute") != std::string::npos) want.push_back(i);
    }
    EXPECT_EQ(r.dw1, want.size());
    EXPECT_EQ(get<uint32_t>(4096, want.size()), want);
    r = exec(0x40, {{0, recs.size()}, {4096, 4}}, p);  // room for one index
    EXPECT_STATUS(r, CSD_STATUS_OUTPUT_OVERFLOW);
    EXPECT_EQ(r.dw0, 4 * want.size());
    uint32_t short_params[4] = {32, 1, 1, 0};  // not the declared 80 bytes
    EXPECT_STATUS(exec(0x40, {{0, 32}, {4096, 64}}, short_params), CSD_STATUS_INVALID_PARAMETERS);
}

// The standard front end runs the same plug-in: listed active in log 82h, and Execute
// Program with inline ranges (memory namespace 2) gives the vendor Execute's answer.
TEST_F(Plugin, RunsThroughTheStandardExecuteProgram)
{
    ASSERT_EQ(load(plugin_dir({kExample})), "");
    std::vector<uint8_t> log(NVME_CS_LOG_MAX_SIZE);
    uint32_t avail = 0;
    ASSERT_EQ(csd_core_cs_get_log(core, NVME_CS_LOG_PROGRAM_LIST, 0, log.data(), static_cast<uint32_t>(log.size()),
                                  &avail), 0);
    nvme_cs_program_entry e{};
    std::memcpy(&e, log.data() + 8 + sizeof e * CSD_NR_DEVICE_PROGRAMS, sizeof e);
    EXPECT_EQ(e.index, 0x40);
    EXPECT_EQ(e.kind, NVME_CS_PROGRAM_PLUGIN);
    EXPECT_EQ(e.flags & NVME_CS_PROGRAM_ACTIVE, NVME_CS_PROGRAM_ACTIVE);

    const std::vector<std::string> lines = {"compute here", "nothing", "in-storage compute"};
    const std::vector<uint8_t> recs = records(lines);
    put(0, recs);
    const SearchParams p{32, static_cast<uint32_t>(lines.size()), 7, 0, "compute"};
    nvme_cs_mem_range r[2] = {};
    r[0] = {2, static_cast<uint32_t>(recs.size()), 0, {}};
    r[1] = {2, 64, 4096, {}};
    std::vector<uint8_t> data(sizeof r + sizeof p);
    std::memcpy(data.data(), r, sizeof r);
    std::memcpy(data.data() + sizeof r, &p, sizeof p);
    const csd_cs_exec_cmd cmd{0x40, 2, static_cast<uint32_t>(data.size()), 0};
    csd_exec *job = nullptr;
    ASSERT_EQ(csd_core_cs_exec_prepare(core, 2, &cmd, data.data(), static_cast<uint32_t>(data.size()), &job), 0);
    uint32_t dw0 = 0, dw1 = 0;
    ASSERT_EQ(csd_core_exec_run(core, job, nullptr, &dw0, &dw1), 0);
    EXPECT_EQ(dw1, 2u);
    EXPECT_EQ(get<uint32_t>(4096, 2), (std::vector<uint32_t>{0, 2}));
}

TEST_F(Plugin, RefusedDirectoriesNameTheFile)
{
    EXPECT_NE(load("/nonexistent/plugins").find("/nonexistent/plugins"), std::string::npos);
    std::string err = load(plugin_dir({bad("bad_abi")}));
    EXPECT_NE(err.find("plugin_bad_abi.so is for plug-in interface version 2"), std::string::npos) << err;
    err = load(plugin_dir({bad("taken_id")}));
    EXPECT_NE(err.find("plugin_taken_id.so declares id 5, outside 0040h..00FFh"), std::string::npos) << err;
    err = load(plugin_dir({bad("no_entry")}));
    EXPECT_NE(err.find("plugin_no_entry.so has no csd_plugin_entry"), std::string::npos) << err;
    // The same plug-in twice: the second copy's id is taken.
    const std::string dir = plugin_dir({kExample});
    std::ifstream in(kExample, std::ios::binary);
    std::ofstream(dir + "/zz_again.so", std::ios::binary) << in.rdbuf();
    err = load(dir);
    EXPECT_NE(err.find("zz_again.so declares id 64, which another program has"), std::string::npos) << err;
    // A file that is not a shared object.
    const std::string junk = plugin_dir({});
    std::ofstream(junk + "/junk.so") << "not ELF";
    err = load(junk);
    EXPECT_NE(err.find("junk.so does not load"), std::string::npos) << err;
    // Nothing stayed loaded from the refused directories.
    EXPECT_STATUS(exec0(0x40, {{0, 32}, {4096, 64}}), CSD_STATUS_INVALID_PROGRAM);
}

}  // namespace
