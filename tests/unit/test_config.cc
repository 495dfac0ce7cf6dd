// SPDX-License-Identifier: MIT
// The device's option table (csd_config.h): what QEMU's csd.<name> properties and the
// in-process device's emu: options read, check and list, and the docs' copy of it.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "csd_config.h"

namespace {

struct Config : csd_config {
    explicit Config(unsigned embedding, const char *prefix = "") { csd_config_init(this, prefix, embedding); }
    ~Config() { csd_config_clear(this); }
    // csd_config_set's message, "" when it took the value.
    std::string set(const char *name, const char *value)
    {
        char err[512] = "";
        return csd_config_set(this, name, value, err, sizeof err) == 0 ? "" : err;
    }
    std::string finish()
    {
        char err[512] = "";
        return csd_config_finish(this, err, sizeof err) == 0 ? "" : err;
    }
};

std::string take(char *s)
{
    std::string r = s ? s : "";
    std::free(s);
    return r;
}

}  // namespace

TEST(Config, DefaultsAreTheTables)
{
    Config c(CSD_OPTION_QEMU);
    EXPECT_EQ(c.slm_size, 64u << 20);
    EXPECT_EQ(c.compute_units, 0u);
    EXPECT_EQ(c.vendor, 1);
    EXPECT_EQ(c.nvme_cs, 0);
    EXPECT_EQ(c.lba_size, 512u);
    EXPECT_EQ(c.plugin_dir, nullptr);
    EXPECT_FALSE(csd_config_any_given(&c));
    EXPECT_EQ(c.finish(), "");
    EXPECT_EQ(c.compute_units, 2u) << "no model: 2 units";
    EXPECT_FALSE(csd_model_enabled(&c.model));
}

TEST(Config, ValuesAndAliases)
{
    Config c(CSD_OPTION_EMU);
    EXPECT_EQ(c.set("slm", "16M"), "") << "the older emu: spelling";
    EXPECT_EQ(c.slm_size, 16u << 20);
    EXPECT_EQ(c.set("slm-size", "1G"), "");
    EXPECT_EQ(c.slm_size, 1u << 30);
    EXPECT_EQ(c.set("cu", "3"), "");
    EXPECT_EQ(c.set("nvme-cs", "1"), "");
    EXPECT_EQ(c.set("vendor", "off"), "");
    EXPECT_EQ(c.set("lba", "4K"), "");
    EXPECT_EQ(c.set("plugins", "/x"), "");
    EXPECT_TRUE(csd_config_any_given(&c));
    EXPECT_EQ(c.finish(), "");
    EXPECT_EQ(c.compute_units, 3u);
    EXPECT_EQ(c.nvme_cs, 1);
    EXPECT_EQ(c.vendor, 0);
    EXPECT_EQ(c.lba_size, 4096u);
    EXPECT_STREQ(c.plugin_dir, "/x");
}

// The in-process device's emu:FILE?a=b&c=d list, read by the table in the order given.
TEST(Config, AListOfOptions)
{
    Config e(CSD_OPTION_EMU);
    char err[512] = "";
    EXPECT_EQ(csd_config_set_list(&e, "slm=16M&&cu=3&slm-size=32M", err, sizeof err), 0) << err;
    EXPECT_EQ(e.slm_size, 32u << 20) << "the last one given";
    EXPECT_EQ(e.compute_units, 3u);
    EXPECT_EQ(csd_config_set_list(&e, "", err, sizeof err), 0);
    EXPECT_EQ(csd_config_set_list(&e, "cu=2&help", err, sizeof err), 1);
    EXPECT_EQ(e.compute_units, 3u) << "nothing read with help";
    EXPECT_EQ(csd_config_set_list(&e, "cu=2&vendor", err, sizeof err), -1);
    EXPECT_STREQ(err, "option 'vendor' needs a value");
    EXPECT_EQ(csd_config_set_list(&e, "cu=300", err, sizeof err), -1);
    EXPECT_STREQ(err, "compute-units: 0 .. 256, not '300'");
}

// An embedding's list read and finished in one call: filled and settled on success, cleared
// with help or an error (a value's, or the options' together).
TEST(Config, AListReadAndFinished)
{
    csd_config c;
    char err[512] = "";
    ASSERT_EQ(csd_config_read_list(&c, CSD_OPTION_EMU, "slm=16M&model=gen3x4-4core", err, sizeof err), 0) << err;
    EXPECT_EQ(c.slm_size, 16u << 20);
    EXPECT_EQ(c.compute_units, 4u) << "finished: the model's compute units settled";
    EXPECT_TRUE(csd_model_enabled(&c.model));
    csd_config_clear(&c);
    EXPECT_EQ(csd_config_read_list(&c, CSD_OPTION_EMU, "cu=2&help", err, sizeof err), 1);
    EXPECT_EQ(c.model_preset, nullptr) << "cleared";
    EXPECT_EQ(csd_config_read_list(&c, CSD_OPTION_EMU, "model=gen3x4-4core&cu=2", err, sizeof err), -1);
    EXPECT_NE(std::string(err).find("compute-units=2 but the timing model has 4"), std::string::npos) << err;
    EXPECT_EQ(c.model_preset, nullptr) << "cleared";
    EXPECT_EQ(csd_config_read_list(&c, CSD_OPTION_EMU, "nvme-cs.mem-nsid=5", err, sizeof err), -1);
    EXPECT_STREQ(err, "nvme-cs.mem-nsid: not an option of this device (only of QEMU's)");
}

// A bad value: one message, naming the option with the embedding's prefix, its range and
// the value; the same text for QEMU ("csd.") and the in-process device (no prefix).
TEST(Config, BadValuesNameTheOption)
{
    Config q(CSD_OPTION_QEMU, "csd."), e(CSD_OPTION_EMU);
    EXPECT_EQ(q.set("slm-size", "5000"), "csd.slm-size: a multiple of 4 KiB, 4K .. 256G, not '5000'");
    EXPECT_EQ(e.set("slm-size", "5000"), "slm-size: a multiple of 4 KiB, 4K .. 256G, not '5000'");
    EXPECT_EQ(e.set("slm", "512G"), "slm-size: a multiple of 4 KiB, 4K .. 256G, not '512G'");
    EXPECT_EQ(e.set("slm", "64Q"), "slm-size: a multiple of 4 KiB, 4K .. 256G, not '64Q'");
    EXPECT_EQ(e.set("cu", "300"), "compute-units: 0 .. 256, not '300'");
    EXPECT_EQ(e.set("cu", "-1"), "compute-units: 0 .. 256, not '-1'");
    EXPECT_EQ(e.set("vendor", "maybe"), "vendor: on, off, not 'maybe'");
    EXPECT_EQ(e.set("lba", "1000"), "lba: a power of two, 512 .. 64K, not '1000'");
    EXPECT_EQ(q.set("model.link-gbps", "fast"), "csd.model.link-gbps: a number >= 0, not 'fast'");
    EXPECT_EQ(q.set("model.media-read-latency-ns", "2000000000"),
              "csd.model.media-read-latency-ns: whole ns, 0 .. 1000000000 (1 s), not '2000000000'");
    EXPECT_NE(q.set("model", "gen9").find("csd.model: unknown preset 'gen9' (gen3x4-4core"), std::string::npos);
    EXPECT_NE(e.set("warp", "1").find("unknown option 'warp' (slm-size, compute-units"), std::string::npos);
    EXPECT_EQ(q.set("lba", "4096"), "csd.lba: not an option of this device (only of the in-process device)");
    EXPECT_EQ(e.set("nvme-cs.mem-nsid", "5"), "nvme-cs.mem-nsid: not an option of this device (only of QEMU's)");
    EXPECT_FALSE(csd_config_any_given(&q)) << "refused values are not given";
}

TEST(Config, TogetherChecks)
{
    struct Case {
        unsigned embedding;
        std::vector<std::pair<const char *, const char *>> given;
        const char *message;
    };
    const Case cases[] = {
        {CSD_OPTION_QEMU, {{"vendor", "off"}},
         "csd.vendor=off needs csd.nvme-cs=on: the drive would speak no computational storage command set"},
        {CSD_OPTION_QEMU, {{"nvme-cs.mem-nsid", "5"}}, "csd.nvme-cs.mem-nsid needs csd.nvme-cs=on"},
        {CSD_OPTION_EMU, {{"model", "gen3x4-4core"}, {"cu", "2"}},
         "compute-units=2 but the timing model has 4 compute units: leave one of them out or make them equal"},
        {CSD_OPTION_QEMU, {{"model.unit-gflops", "4"}},
         "csd.model: unit-gflops and unit-gbps go together: a compute unit needs both speeds"},
    };
    for (const Case &k : cases) {
        Config c(k.embedding, k.embedding == CSD_OPTION_QEMU ? "csd." : "");
        for (const auto &[name, value] : k.given) EXPECT_EQ(c.set(name, value), "");
        EXPECT_EQ(c.finish(), k.message);
    }
}

// The preset first, then each name, whatever order they were given in.
TEST(Config, ModelPresetThenNames)
{
    Config c(CSD_OPTION_EMU);
    EXPECT_EQ(c.set("model.compute-units", "4"), "");
    EXPECT_EQ(c.set("model.unit-gflops", "12"), "");
    EXPECT_EQ(c.set("model", "gen4x4-8core"), "");
    EXPECT_EQ(c.finish(), "");
    csd_model_params p{};
    ASSERT_EQ(csd_model_preset("gen4x4-8core", &p), 0);
    EXPECT_DOUBLE_EQ(c.model.link_gbps, p.link_gbps);
    EXPECT_DOUBLE_EQ(c.model.unit_gflops, 12.0);
    EXPECT_EQ(c.model.compute_units, 4u);
    EXPECT_EQ(c.compute_units, 4u) << "the device follows the model's units";
    EXPECT_TRUE(csd_model_enabled(&c.model));
}

// Every row lists, parses its own default and shows in both helps as its embeddings say.
TEST(Config, TableAndHelp)
{
    const std::string qemu = take(csd_options_help(CSD_OPTION_QEMU, "csd.")),
                      emu = take(csd_options_help(CSD_OPTION_EMU, ""));
    std::set<std::string> names;
    unsigned model_rows = 0;
    for (unsigned i = 0; const csd_option *o = csd_option_at(i); i++) {
        EXPECT_TRUE(names.insert(o->name).second) << o->name << " twice";
        EXPECT_NE(o->embeddings & (CSD_OPTION_QEMU | CSD_OPTION_EMU), 0u) << o->name;
        EXPECT_GT(std::strlen(o->help), 10u) << o->name;
        EXPECT_EQ(qemu.find(std::string("  csd.") + o->name + "=<") != std::string::npos,
                  (o->embeddings & CSD_OPTION_QEMU) != 0) << o->name;
        EXPECT_EQ(emu.find(std::string("  ") + o->name + "=<") != std::string::npos,
                  (o->embeddings & CSD_OPTION_EMU) != 0) << o->name;
        if (*o->def) {
            Config c(o->embeddings & CSD_OPTION_QEMU ? CSD_OPTION_QEMU : CSD_OPTION_EMU);
            EXPECT_EQ(c.set(o->name, o->def), "") << "its default";
        }
        if (std::strncmp(o->name, "model.", 6) == 0) {  // a resource lands in csd_model_params
            csd_model_params p{}, zero{};
            char err[256];
            EXPECT_EQ(csd_model_set(&p, o->name + 6, "1", err, sizeof err), 0) << err;
            EXPECT_NE(std::memcmp(&p, &zero, sizeof p), 0) << o->name;
            model_rows++;
        }
    }
    EXPECT_GE(model_rows, 12u) << "the timing model's resources";
    // csd_model_set reads the same rows (names without "model.")
    csd_model_params p{};
    char err[256];
    EXPECT_EQ(csd_model_set(&p, "host-latency-ns", "7", err, sizeof err), 0) << err;
    EXPECT_EQ(p.host_latency_ns, 7u);
}

// docs/command-set.md carries the table between its markers exactly as the core renders
// it (csd-options markdown writes it).
TEST(Config, DocsCarryTheTable)
{
    std::ifstream f(CSD_SOURCE_ROOT "/docs/command-set.md");
    ASSERT_TRUE(f.good());
    std::stringstream ss;
    ss << f.rdbuf();
    const std::string doc = ss.str(), begin = "<!-- options: begin (csd-options markdown) -->\n",
                      end = "<!-- options: end -->";
    const size_t a = doc.find(begin), b = doc.find(end);
    ASSERT_NE(a, std::string::npos);
    ASSERT_NE(b, std::string::npos);
    EXPECT_EQ(doc.substr(a + begin.size(), b - a - begin.size()), take(csd_options_markdown()))
        << "docs/command-set.md's option table differs from the core's: regenerate it with "
           "build/meson/core/csd-options markdown";
}

// Issue 41: an embedding hands the core the options given (QEMU: its csd.<name>
// properties) and the core reads, refuses and finishes them: an option given while the
// device is off names the switch it needs, and the table's defaults hold for the rest.
TEST(Config, ReadTakesTheGivenOptionsAndRefusesThemWhileTheDeviceIsOff)
{
    struct Given {
        std::vector<std::pair<std::string, std::string>> v;
        static const char *value(void *o, const char *name)
        {
            for (const auto &[n, val] : static_cast<Given *>(o)->v) {
                if (n == name) return val.c_str();
            }
            return nullptr;
        }
    } given{{{"slm-size", "8M"}, {"model", "gen4x4-8core"}}};
    csd_config c;
    char err[512] = "";
    ASSERT_EQ(csd_config_read(&c, "csd.", CSD_OPTION_QEMU, Given::value, &given, nullptr, err, sizeof err), 0) << err;
    EXPECT_EQ(c.slm_size, 8u << 20);
    EXPECT_EQ(c.compute_units, 8u) << "finished: the model's units";
    EXPECT_EQ(c.vendor, 1) << "a default";
    csd_config_clear(&c);
    ASSERT_EQ(csd_config_read(&c, "csd.", CSD_OPTION_QEMU, Given::value, &given, "csd=on", err, sizeof err), -1);
    EXPECT_STREQ(err, "csd.slm-size needs csd=on");
    Given none;
    EXPECT_EQ(csd_config_read(&c, "csd.", CSD_OPTION_QEMU, Given::value, &none, "csd=on", err, sizeof err), 0);
    csd_config_clear(&c);
    Given bad{{{"vendor", "off"}}};
    EXPECT_EQ(csd_config_read(&c, "csd.", CSD_OPTION_QEMU, Given::value, &bad, nullptr, err, sizeof err), -1);
    EXPECT_NE(std::string(err).find("csd.vendor=off needs csd.nvme-cs=on"), std::string::npos) << err;
}

