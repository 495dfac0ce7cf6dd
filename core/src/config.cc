// SPDX-License-Identifier: MIT
// config.cc - the device's option table (csd_config.h): QEMU's csd.<name> properties and
// the in-process device's emu: options, with their parsing, checks and help, and the
// timing model's named parameters (csd_core.h: csd_model_set) as rows of the same table.
#include "csd_config.h"

#include <cerrno>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "nvme_cs.h"

namespace {

constexpr unsigned kBoth = CSD_OPTION_QEMU | CSD_OPTION_EMU;

// One option: what the embeddings list, where its value lands and what it accepts.
struct Row {
    csd_option o;
    size_t offset;   // into csd_config; a model parameter's into csd_model_params
    bool model;      // a timing-model parameter (name "model.<parameter>")
    uint64_t min, max, multiple;  // SIZE and COUNT; multiple 0: any, 1: a power of two
};

#define CFG(f) offsetof(csd_config, f), false
#define MODEL(f) offsetof(csd_model_params, f), true
#define MODEL_RATE(name, f, help) \
    {{"model." name, nullptr, CSD_OPTION_RATE, "", "a number >= 0", help, kBoth}, MODEL(f), 0, 0, 0}
#define MODEL_NS(name, f, help) \
    {{"model." name, nullptr, CSD_OPTION_NS, "", "whole ns, 0 .. 1000000000 (1 s)", help, kBoth}, MODEL(f), 0, kMaxLatencyNs, 0}
constexpr uint64_t K = 1024, M = K * K, G = M * K;
constexpr uint64_t kNoLimit = ~0ull;
constexpr uint64_t kMaxLatencyNs = 1000000000ull;  // 1 s (csd_model_check)

// The table. A new option or timing-model resource is one row here (and its field in
// csd_config or csd_model_params); QEMU's properties, the emu: options, their help and
// the docs' table (docs/command-set.md, checked by the unit tests) follow from it.
const Row kRows[] = {
    {{"slm-size", "slm", CSD_OPTION_SIZE, "64M", "a multiple of 4 KiB, 4K .. 256G",
      "bytes of Subsystem Local Memory (SLM), anonymous memory: untouched pages cost no RAM", kBoth},
     CFG(slm_size), 4 * K, 256 * G, 4 * K},
    {{"compute-units", "cu", CSD_OPTION_COUNT, "0", "0 .. 256",
      "Execute commands that run at once, more wait in a queue; 0: the timing model's "
      "compute units, else 2; with a model it must equal the model's", kBoth},
     CFG(compute_units), 0, 256, 0},
    {{"plugin-dir", "plugins", CSD_OPTION_TEXT, "", "a directory",
      "operator plug-ins: every *.so in it is loaded as device-defined programs", kBoth},
     CFG(plugin_dir), 0, 0, 0},
    {{"vendor", nullptr, CSD_OPTION_BOOL, "on", "on, off",
      "the vendor command set (opcodes 80h..8Dh and 90h, logs C0h/C1h, the CSD1 signature); "
      "off needs nvme-cs=on", kBoth},
     CFG(vendor), 0, 0, 0},
    {{"nvme-cs", nullptr, CSD_OPTION_BOOL, "off", "on, off",
      "the standard NVMe computational storage command sets too: a memory and a compute "
      "namespace (docs/nvme-cs.md)", kBoth},
     CFG(nvme_cs), 0, 0, 0},
    {{"nvme-cs.mem-nsid", nullptr, CSD_OPTION_COUNT, "0", "0 .. 255",
      "the memory namespace's NSID, the compute namespace's is the next; 0: the first free "
      "NSID after the NVM namespaces; needs nvme-cs=on", CSD_OPTION_QEMU},
     CFG(nvme_cs_mem_nsid), 0, 255, 0},
    {{"vendor-io", nullptr, CSD_OPTION_BOOL, "on", "on, off",
      "off: the vendor SLM, Execute and program commands answer Invalid Opcode (Compare and "
      "Write and the logs stay)", CSD_OPTION_EMU},
     CFG(vendor_io), 0, 0, 0},
    {{"lba", nullptr, CSD_OPTION_SIZE, "512", "a power of two, 512 .. 64K",
      "the namespace's logical block size", CSD_OPTION_EMU},
     CFG(lba_size), 512, 64 * K, 1},
    {{"size", nullptr, CSD_OPTION_SIZE, "256M", "4K or more",
      "the backing file's size when this creates it", CSD_OPTION_EMU},
     CFG(backing_size), 4 * K, kNoLimit, 0},
    {{"model", "model.preset", CSD_OPTION_PRESET, "", "a preset name",
      "the timing model: a preset drive; commands complete when it would complete them "
      "(docs/timing-model.md)", kBoth},
     CFG(model_preset), 0, 0, 0},
    {{"exact", nullptr, CSD_OPTION_BOOL, "off", "on, off",
      "every completion exactly at the timing model's time, whatever the host's speed or load: "
      "QEMU holds the guest (its vCPUs and virtual clock) while a command's real work overruns "
      "its model (TCG only), the in-process device keeps a virtual clock; needs a model", kBoth},
     CFG(exact), 0, 0, 0},
    // The timing model's resources (docs/timing-model.md), over the preset if one is named.
    {{"model.compute-units", nullptr, CSD_OPTION_COUNT, "", "0 .. 256",
      "compute units the model schedules (0: the device's compute-units)", kBoth},
     MODEL(compute_units), 0, 256, 0},
    MODEL_RATE("link-gbps", link_gbps, "PCIe bandwidth in GB/s, each direction"),
    MODEL_NS("link-latency-ns", link_latency_ns, "per command: submission, completion, interrupt"),
    MODEL_RATE("media-read-gbps", media_read_gbps, "NAND read bandwidth in GB/s, all channels together"),
    MODEL_RATE("media-write-gbps", media_write_gbps, "NAND write bandwidth in GB/s, all channels together"),
    MODEL_NS("media-read-latency-ns", media_read_latency_ns, "per command reading the media"),
    MODEL_NS("media-write-latency-ns", media_write_latency_ns, "per command writing the media; a Flush costs one"),
    MODEL_RATE("slm-gbps", slm_gbps, "device memory bandwidth in GB/s"),
    MODEL_RATE("unit-gflops", unit_gflops, "one compute unit on gemm and conv2d, GFLOP/s; needs unit-gbps"),
    MODEL_RATE("unit-gbps", unit_gbps, "one compute unit on streaming programs, GB/s; needs unit-gflops"),
    MODEL_NS("bpf-record-ns", bpf_record_ns, "one record of a downloaded (eBPF) program"),
    MODEL_NS("host-latency-ns", host_latency_ns,
             "per command, the host's side of it (its submission and completion path, or a "
             "fabric's round trip)"),
};
#undef CFG
#undef MODEL
#undef MODEL_RATE
#undef MODEL_NS
constexpr unsigned kRowCount = sizeof(kRows) / sizeof(kRows[0]);
static_assert(kRowCount <= CSD_OPTIONS_MAX, "csd_config's given and model_given masks hold 64 options");

const char kModelPrefix[] = "model.";

template <typename T>
T &field(void *base, size_t offset)
{
    return *reinterpret_cast<T *>(static_cast<char *>(base) + offset);
}

template <typename T>
const T &field(const void *base, size_t offset)
{
    return *reinterpret_cast<const T *>(static_cast<const char *>(base) + offset);
}

int fail(char *err, size_t err_len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
int fail(char *err, size_t err_len, const char *fmt, ...)
{
    if (err && err_len) {
        va_list ap;
        va_start(ap, fmt);
        std::vsnprintf(err, err_len, fmt, ap);
        va_end(ap);
    }
    return -1;
}

const Row *find(const char *name)
{
    for (const Row &r : kRows) {
        if (std::strcmp(r.o.name, name) == 0 || (r.o.alias && std::strcmp(r.o.alias, name) == 0)) return &r;
    }
    return nullptr;
}

std::string preset_names()
{
    std::string known;
    for (unsigned i = 0; const char *p = csd_model_preset_name(i); i++) known += std::string(i ? ", " : "") + p;
    return known;
}

// "1", "64K", "64M", "1G", "1T" -> bytes; false for anything else or an overflow.
bool parse_size(const char *v, uint64_t *out)
{
    if (*v < '0' || *v > '9') return false;
    errno = 0;
    char *end = nullptr;
    uint64_t n = std::strtoull(v, &end, 10);
    if (errno) return false;
    unsigned shift = 0;
    if (*end) {
        const char *units = "KMGT";
        const char *u = std::strchr(units, *end & ~0x20);
        if (!u || !*u || end[1]) return false;
        shift = 10 * static_cast<unsigned>(u - units + 1);
    }
    if (shift && n > (~0ull >> shift)) return false;
    *out = n << shift;
    return true;
}

bool parse_bool(const char *v, int *out)
{
    for (const char *t : {"on", "1", "true", "yes"}) {
        if (std::strcmp(v, t) == 0) return *out = 1, true;
    }
    for (const char *f : {"off", "0", "false", "no"}) {
        if (std::strcmp(v, f) == 0) return *out = 0, true;
    }
    return false;
}

// Parses value into the row's field of base (a csd_config, or a csd_model_params for a
// model parameter); -1 with "<prefix><name>: <range>, not '<value>'".
int parse(const Row &r, void *base, const char *prefix, const char *value, char *err, size_t err_len)
{
    auto bad = [&] { return fail(err, err_len, "%s%s: %s, not '%s'", prefix, r.o.name, r.o.range, value); };
    switch (r.o.type) {
    case CSD_OPTION_BOOL:
        return parse_bool(value, &field<int>(base, r.offset)) ? 0 : bad();
    case CSD_OPTION_SIZE: {
        uint64_t n;
        if (!parse_size(value, &n) || n < r.min || n > r.max) return bad();
        if (r.multiple == 1 ? (n & (n - 1)) != 0 : r.multiple && n % r.multiple) return bad();
        field<uint64_t>(base, r.offset) = n;
        return 0;
    }
    case CSD_OPTION_COUNT:
    case CSD_OPTION_NS: {
        uint64_t n;
        char *end = nullptr;
        errno = 0;
        if (*value < '0' || *value > '9') return bad();
        n = std::strtoull(value, &end, 10);
        if (errno || *end || n < r.min || n > r.max) return bad();
        if (r.o.type == CSD_OPTION_COUNT) field<uint32_t>(base, r.offset) = static_cast<uint32_t>(n);
        else field<uint64_t>(base, r.offset) = n;
        return 0;
    }
    case CSD_OPTION_RATE: {
        char *end = nullptr;
        const double d = std::strtod(value, &end);
        if (!*value || *end || !std::isfinite(d) || d < 0) return bad();
        field<double>(base, r.offset) = d;
        return 0;
    }
    case CSD_OPTION_PRESET: {
        csd_model_params p;
        if (csd_model_preset(value, &p) != 0) {
            return fail(err, err_len, "%s%s: unknown preset '%s' (%s)", prefix, r.o.name, value, preset_names().c_str());
        }
        [[fallthrough]];
    }
    case CSD_OPTION_TEXT: {
        char *&s = field<char *>(base, r.offset);
        std::free(s);
        s = *value ? strdup(value) : nullptr;
        return 0;
    }
    }
    return bad();
}

std::string known_names(unsigned embedding)
{
    std::string known;
    for (const Row &r : kRows) {
        if (r.o.embeddings & embedding) known += std::string(known.empty() ? "" : ", ") + r.o.name;
    }
    return known;
}

}  // namespace

extern "C" {

const struct csd_option *csd_option_at(unsigned i)
{
    return i < kRowCount ? &kRows[i].o : nullptr;
}

const char *csd_option_type_name(enum csd_option_type type)
{
    switch (type) {
    case CSD_OPTION_BOOL: return "bool";
    case CSD_OPTION_SIZE: return "size";
    case CSD_OPTION_COUNT: return "count";
    case CSD_OPTION_TEXT: return "text";
    case CSD_OPTION_PRESET: return "preset";
    case CSD_OPTION_RATE: return "rate";
    case CSD_OPTION_NS: return "ns";
    }
    return "?";
}

void csd_config_init(struct csd_config *c, const char *prefix, unsigned embedding)
{
    *c = csd_config{};
    c->prefix = prefix ? prefix : "";
    c->embedding = embedding;
    for (const Row &r : kRows) {
        if (!r.model && *r.o.def) parse(r, c, "", r.o.def, nullptr, 0);
    }
}

int csd_config_set(struct csd_config *c, const char *name, const char *value, char *err, size_t err_len)
{
    const Row *r = find(name);
    if (!r) {
        return fail(err, err_len, "%sunknown option '%s' (%s)", c->prefix, name, known_names(c->embedding).c_str());
    }
    if (!(r->o.embeddings & c->embedding)) {
        return fail(err, err_len, "%s%s: not an option of this device (only of %s)", c->prefix, r->o.name,
                    r->o.embeddings & CSD_OPTION_QEMU ? "QEMU's" : "the in-process device");
    }
    if (parse(*r, r->model ? static_cast<void *>(&c->model) : c, c->prefix, value, err, err_len) != 0) return -1;
    const uint64_t bit = 1ull << (r - kRows);
    c->given |= bit;
    if (r->model) c->model_given |= bit;
    return 0;
}

int csd_config_set_list(struct csd_config *c, const char *list, char *err, size_t err_len)
{
    std::vector<std::pair<std::string, std::string>> items;
    for (const char *at = list ? list : ""; *at;) {
        const char *end = std::strchr(at, '&');
        const std::string item(at, end ? static_cast<size_t>(end - at) : std::strlen(at));
        at = end ? end + 1 : at + item.size();
        if (item.empty()) continue;
        if (item == "help") return 1;
        const size_t eq = item.find('=');
        if (eq == std::string::npos) return fail(err, err_len, "%soption '%s' needs a value", c->prefix, item.c_str());
        items.emplace_back(item.substr(0, eq), item.substr(eq + 1));
    }
    for (const auto &[name, value] : items) {
        if (csd_config_set(c, name.c_str(), value.c_str(), err, err_len) != 0) return -1;
    }
    return 0;
}

int csd_config_read_list(struct csd_config *c, unsigned embedding, const char *list, char *err, size_t err_len)
{
    csd_config_init(c, "", embedding);
    int read = csd_config_set_list(c, list, err, err_len);
    if (read == 0 && csd_config_finish(c, err, err_len) != 0) read = -1;
    if (read != 0) csd_config_clear(c);
    return read;
}

int csd_config_finish(struct csd_config *c, char *err, size_t err_len)
{
    const char *p = c->prefix;
    csd_model_params m{};
    if (c->model_preset) csd_model_preset(c->model_preset, &m);
    for (unsigned i = 0; i < kRowCount; i++) {  // the names given, over the preset
        const Row &r = kRows[i];
        if (!(c->model_given & (1ull << i))) continue;
        const size_t size = r.o.type == CSD_OPTION_RATE ? sizeof(double)
                            : r.o.type == CSD_OPTION_NS ? sizeof(uint64_t)
                                                        : sizeof(uint32_t);
        std::memcpy(reinterpret_cast<char *>(&m) + r.offset, reinterpret_cast<const char *>(&c->model) + r.offset, size);
    }
    c->model = m;
    c->model_given = 0;
    if (const char *bad = csd_model_check(&c->model)) return fail(err, err_len, "%smodel: %s", p, bad);
    const uint32_t units = csd_model_compute_units(&c->model, c->compute_units);
    if (!units) {
        return fail(err, err_len,
                    "%scompute-units=%u but the timing model has %u compute units: leave one of them out or "
                    "make them equal",
                    p, c->compute_units, c->model.compute_units);
    }
    c->compute_units = units;
    if (!c->vendor && !c->nvme_cs) {
        return fail(err, err_len,
                    "%svendor=off needs %snvme-cs=on: the drive would speak no computational storage command set", p,
                    p);
    }
    if (c->nvme_cs_mem_nsid && !c->nvme_cs) {
        return fail(err, err_len, "%snvme-cs.mem-nsid needs %snvme-cs=on", p, p);
    }
    if (c->exact && !csd_model_enabled(&c->model)) {
        return fail(err, err_len, "%sexact=on needs a timing model (%smodel=<preset>): without one there is no modelled time to hold to", p, p);
    }
    return 0;
}

int csd_config_any_given(const struct csd_config *c)
{
    return c->given != 0;
}

void csd_config_clear(struct csd_config *c)
{
    std::free(c->plugin_dir);
    std::free(c->model_preset);
    c->plugin_dir = c->model_preset = nullptr;
}

csd_core *csd_core_new_config(const struct csd_config *c, char *err, size_t err_len)
{
    csd_core *core = csd_core_new(c->slm_size, c->compute_units);
    if (!core) {
        fail(err, err_len, "%sslm-size: cannot allocate %llu bytes of SLM: %s", c->prefix,
             static_cast<unsigned long long>(c->slm_size), std::strerror(errno));
        return nullptr;
    }
    char why[512];
    if (c->plugin_dir && csd_core_load_plugins(core, c->plugin_dir, why, sizeof why) != 0) {
        fail(err, err_len, "%splugin-dir: %s", c->prefix, why);
        csd_core_free(core);
        return nullptr;
    }
    csd_core_set_model(core, &c->model);
    csd_core_set_exact(core, c->exact);
    csd_core_set_vendor(core, c->vendor);
    csd_core_set_vendor_io(core, c->vendor_io);
    return core;
}

int csd_core_cs_attach_config(csd_core *core, const csd_config *c, uint32_t max_nsid,
                              int (*taken)(void *opaque, uint32_t nsid), void *opaque, char *err, size_t err_len)
{
    if (!c->nvme_cs) return 0;
    uint32_t mem = c->nvme_cs_mem_nsid;
    if (!mem) {  // after the namespaces in use so far
        mem = 1;
        for (uint32_t i = 1; i <= max_nsid; i++) {
            if (taken(opaque, i)) mem = i + 1;
        }
    }
    if (mem < 1 || mem >= max_nsid || taken(opaque, mem) || taken(opaque, mem + 1)) {
        return fail(err, err_len, "%snvme-cs.mem-nsid: NSIDs %u and %u must be free and at most %u", c->prefix, mem,
                    mem + 1, max_nsid);
    }
    csd_core_cs_attach(core, mem);
    return 0;
}

csd_core *csd_core_open(const csd_config *c, uint32_t max_nsid, int (*taken)(void *opaque, uint32_t nsid),
                        void *opaque, char *err, size_t err_len)
{
    csd_core *core = csd_core_new_config(c, err, err_len);
    if (core && csd_core_cs_attach_config(core, c, max_nsid, taken, opaque, err, err_len) != 0) {
        csd_core_free(core);
        return nullptr;
    }
    return core;
}

int csd_config_read(csd_config *c, const char *prefix, unsigned embedding,
                    const char *(*value)(void *opaque, const char *name), void *opaque, const char *needs, char *err,
                    size_t err_len)
{
    csd_config_init(c, prefix, embedding);
    for (const Row &r : kRows) {
        const char *v = r.o.embeddings & embedding ? value(opaque, r.o.name) : nullptr;
        if (!v) continue;
        if (needs) {
            fail(err, err_len, "%s%s needs %s", prefix, r.o.name, needs);
            csd_config_clear(c);
            return -1;
        }
        if (csd_config_set(c, r.o.name, v, err, err_len) != 0) {
            csd_config_clear(c);
            return -1;
        }
    }
    if (!needs && csd_config_finish(c, err, err_len) != 0) {
        csd_config_clear(c);
        return -1;
    }
    return 0;
}

void csd_config_effects(const csd_config *c, uint32_t acs[256], uint32_t nvm[256])
{
    for (int opc = 0; opc < 256 && c->vendor; opc++) {
        if (csd_is_io_opcode(static_cast<uint8_t>(opc))) {
            nvm[opc] |= NVME_CS_EFFECTS_CSUPP | (csd_opcode_changes_lbas(static_cast<uint8_t>(opc)) ? NVME_CS_EFFECTS_LBCC : 0);
        }
    }
    if (c->nvme_cs) {
        for (uint8_t opc : {NVME_CS_ADM_LOAD_PROGRAM, NVME_CS_ADM_PROGRAM_ACTIVATION, NVME_CS_ADM_MEMORY_RANGE_SET}) {
            acs[opc] |= NVME_CS_EFFECTS_CSUPP;
        }
    }
}

char *csd_options_help(unsigned embedding, const char *prefix)
{
    std::string s;
    for (const Row &r : kRows) {
        if (!(r.o.embeddings & embedding)) continue;
        s += std::string("  ") + prefix + r.o.name + "=<" + csd_option_type_name(r.o.type) + "> - " + r.o.help + " (" +
             r.o.range + (*r.o.def ? std::string("; default ") + r.o.def : std::string()) +
             (r.o.alias && embedding == CSD_OPTION_EMU ? std::string("; also ") + r.o.alias : std::string()) + ")\n";
    }
    return strdup(s.c_str());
}

char *csd_options_markdown(void)
{
    std::string s =
        "| QEMU property | `emu:` option | type | default | values | meaning |\n"
        "|---|---|---|---|---|---|\n";
    for (const Row &r : kRows) {
        const std::string q = r.o.embeddings & CSD_OPTION_QEMU ? std::string("`csd.") + r.o.name + "`" : "-";
        const std::string e = r.o.embeddings & CSD_OPTION_EMU
                                  ? std::string("`") + r.o.name + "`" + (r.o.alias ? std::string(" (`") + r.o.alias + "`)" : "")
                                  : "-";
        std::string range = r.o.range;
        if (r.o.type == CSD_OPTION_PRESET) range += ": " + preset_names();
        s += "| " + q + " | " + e + " | " + csd_option_type_name(r.o.type) + " | " + (*r.o.def ? r.o.def : "none") +
             " | " + range + " | " + r.o.help + " |\n";
    }
    return strdup(s.c_str());
}

// The timing model's parameters by their names without "model." (csd_core.h).
int csd_model_enabled(const csd_model_params *p)
{
    for (const Row &r : kRows) {
        if (!r.model) continue;
        if (r.o.type == CSD_OPTION_RATE ? field<double>(p, r.offset) != 0
            : r.o.type == CSD_OPTION_NS ? field<uint64_t>(p, r.offset) != 0
                                        : false) {  // a unit count alone models nothing
            return 1;
        }
    }
    return 0;
}

int csd_model_set(csd_model_params *p, const char *name, const char *value, char *err, size_t err_len)
{
    if (std::strcmp(name, "preset") == 0) {
        if (csd_model_preset(value, p) != 0) {
            return fail(err, err_len, "unknown preset '%s' (%s)", value, preset_names().c_str());
        }
        return 0;
    }
    const Row *r = find((kModelPrefix + std::string(name)).c_str());
    if (!r || !r->model) {
        std::string known = "preset";
        for (const Row &k : kRows) {
            if (k.model) known += std::string(", ") + (k.o.name + sizeof kModelPrefix - 1);
        }
        return fail(err, err_len, "unknown model parameter '%s' (%s)", name, known.c_str());
    }
    return parse(*r, p, "", value, err, err_len);
}

}  // extern "C"
