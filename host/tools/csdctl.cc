// csdctl - the nvme-csd command line: device facts, the object store, programs, bench.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "csd/device.hpp"
#include "csd/programs.hpp"
#include "csd/store.hpp"

using namespace csd;

namespace {

const char *kUsage = R"(csdctl - drive the nvme-csd computational-storage device

usage: csdctl [--device PATH] [--uring] [--json] [--bus-stats] COMMAND [ARGS]

device (default: $CSD_DEVICE, else /dev/ng0n1):
  /dev/ngXnY, /dev/nvmeXnY   a CSD (emulated or real), ioctl passthrough (--uring: io_uring)
  emu:FILE[?slm=64M&lba=512&cu=2&size=256M]   the in-process device over FILE

--bus-stats prints the commands and data bytes this run moved across the bus (stderr).

commands:
  info                          capabilities (SLM size, compute units, limits)
  programs                      the device's programs
  stats                         the statistics log
  format                        create an empty object store on the namespace
  put NAME FILE                 store FILE (.npy: as a typed tensor) as object NAME
  get NAME FILE                 write object NAME to FILE (.npy for tensors)
  ls                            list objects
  stat NAME                     one object's catalog entry
  rm NAME                       remove an object
  run checksum NAME [--algo crc32c|xxh64]
  run filter SRC DST --record-size N --field-offset N --type i32|i64|u32|u64|f32|f64
             --op eq|ne|lt|le|gt|ge|between --lo X [--hi X] [--indices]
  run reduce NAME --op sum|min|max|mean|argmax|argmin   (tensor rows x cols)
  run gemm A B C                C = A x B for 2-D float32 tensors, stored as object C
  bench [--seconds S]           Execute throughput by queue depth; 4 KiB copy vs Read latency
)";

struct Opts {
    std::string device;
    bool uring = false;
    bool json = false;
    bool bus_stats = false;  // print the data moved across the bus to stderr at exit
    std::vector<std::string> args;
    std::map<std::string, std::string> flags;  // --name value (or "1" for switches)
};

[[noreturn]] void die(const std::string &msg)
{
    std::fprintf(stderr, "csdctl: %s\n", msg.c_str());
    std::exit(1);
}

std::string flag(const Opts &o, const std::string &name, const std::string &def = "")
{
    auto it = o.flags.find(name);
    if (it == o.flags.end()) {
        if (def.empty()) die("missing --" + name + " (see csdctl --help)");
        return def;
    }
    return it->second;
}

// A progress bar on stderr for transfers of 8 MiB and more.
Progress bar(const std::string &what, uint64_t total)
{
    if (total < (8u << 20)) return {};
    auto start = std::make_shared<std::chrono::steady_clock::time_point>(std::chrono::steady_clock::now());
    return [what, start](uint64_t done, uint64_t all) {
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - *start).count();
        const int width = 30, fill = static_cast<int>(width * done / std::max<uint64_t>(all, 1));
        std::fprintf(stderr, "\r%s [%.*s%*s] %3d%% %.1f MiB/s", what.c_str(), fill, "##############################",
                     width - fill, "", static_cast<int>(100 * done / std::max<uint64_t>(all, 1)),
                     s > 0 ? done / s / 1048576.0 : 0.0);
        if (done == all) std::fputc('\n', stderr);
    };
}

// ---------------------------------------------------------------- .npy files
struct Npy {
    std::string dtype;
    std::vector<uint64_t> shape;
    std::vector<uint8_t> data;
};

bool read_npy(const std::vector<uint8_t> &f, Npy *out)
{
    if (f.size() < 10 || std::memcmp(f.data(), "\x93NUMPY", 6) != 0) return false;
    const int major = f[6];
    size_t hlen, hstart;
    if (major == 1) {
        hlen = f[8] | f[9] << 8;
        hstart = 10;
    } else {
        if (f.size() < 12) return false;
        hlen = f[8] | f[9] << 8 | f[10] << 16 | static_cast<size_t>(f[11]) << 24;
        hstart = 12;
    }
    if (hstart + hlen > f.size()) return false;
    const std::string h(reinterpret_cast<const char *>(f.data()) + hstart, hlen);
    auto field = [&](const std::string &key) {
        const size_t k = h.find("'" + key + "'");
        if (k == std::string::npos) die(".npy header has no '" + key + "'");
        return h.substr(h.find(':', k) + 1);
    };
    std::string d = field("descr");
    d = d.substr(d.find('\'') + 1);
    out->dtype = d.substr(0, d.find('\''));
    if (field("fortran_order").find("True") < field("fortran_order").find(',')) die(".npy in Fortran order is not supported");
    std::string s = field("shape");
    s = s.substr(s.find('(') + 1, s.find(')') - s.find('(') - 1);
    std::stringstream ss(s);
    std::string item;
    while (std::getline(ss, item, ',')) {
        if (item.find_first_not_of(" ") != std::string::npos) out->shape.push_back(std::stoull(item));
    }
    out->data.assign(f.begin() + static_cast<long>(hstart + hlen), f.end());
    return true;
}

std::vector<uint8_t> write_npy(const ObjectInfo &o, const std::vector<uint8_t> &data)
{
    std::string shape = "(";
    for (size_t i = 0; i < o.shape.size(); i++) shape += std::to_string(o.shape[i]) + (o.shape.size() == 1 ? "," : i + 1 < o.shape.size() ? ", " : "");
    shape += ")";
    std::string h = "{'descr': '" + o.dtype + "', 'fortran_order': False, 'shape': " + shape + ", }";
    while ((10 + h.size() + 1) % 64) h += ' ';
    h += '\n';
    std::vector<uint8_t> f = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, static_cast<uint8_t>(h.size()), static_cast<uint8_t>(h.size() >> 8)};
    f.insert(f.end(), h.begin(), h.end());
    f.insert(f.end(), data.begin(), data.end());
    return f;
}

bool ends_with(const std::string &s, const std::string &suffix)
{
    return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::vector<uint8_t> slurp(const std::string &path)
{
    std::ifstream f(path, std::ios::binary);
    if (!f) die("cannot read " + path + ": " + std::strerror(errno));
    return std::vector<uint8_t>((std::istreambuf_iterator<char>(f)), {});
}

uint64_t elem_size(const std::string &dtype)
{
    if (dtype.size() < 3) die("dtype '" + dtype + "' not understood");
    return std::stoull(dtype.substr(2));
}

std::string shape_str(const std::vector<uint64_t> &s)
{
    std::string r = "[";
    for (size_t i = 0; i < s.size(); i++) r += (i ? "," : "") + std::to_string(s[i]);
    return r + "]";
}

// ---------------------------------------------------------------- commands
int cmd_info(Device &d, const Opts &o)
{
    const auto &c = d.caps();
    if (o.json) {
        std::printf("{\"transport\": \"%s\", \"slm_size\": %llu, \"compute_units\": %u, \"max_desc_len\": %u, "
                    "\"max_ranges\": %u, \"programs\": %zu, \"lba_size\": %u, \"lba_count\": %llu}\n",
                    d.transport().name(), static_cast<unsigned long long>(c.slm_size), c.compute_units, c.max_desc_len,
                    c.max_ranges, c.programs.size(), d.ns().lba_size, static_cast<unsigned long long>(d.ns().lba_count));
    } else {
        std::printf("transport      %s\nSLM            %llu bytes (%.0f MiB)\ncompute units  %u\n"
                    "max_desc_len   %u\nmax_ranges     %u\nprograms       %zu\nnamespace      %llu LBAs of %u bytes\n",
                    d.transport().name(), static_cast<unsigned long long>(c.slm_size), c.slm_size / 1048576.0,
                    c.compute_units, c.max_desc_len, c.max_ranges, c.programs.size(),
                    static_cast<unsigned long long>(d.ns().lba_count), d.ns().lba_size);
    }
    return 0;
}

int cmd_programs(Device &d, const Opts &o)
{
    if (o.json) std::printf("[");
    for (size_t i = 0; i < d.caps().programs.size(); i++) {
        const auto &p = d.caps().programs[i];
        if (o.json) std::printf("%s{\"id\": %u, \"name\": \"%s\", \"type\": %u}", i ? ", " : "", p.id, p.name.c_str(), p.type);
        else std::printf("%04xh  %-12s %s\n", p.id, p.name.c_str(), p.type ? "downloadable" : "device-defined");
    }
    if (o.json) std::printf("]\n");
    return 0;
}

int cmd_stats(Device &d, const Opts &o)
{
    const Statistics s = d.stats();
    const std::pair<const char *, uint64_t> rows[] = {
        {"slm_load_cmds", s.slm_load_cmds}, {"slm_store_cmds", s.slm_store_cmds}, {"slm_write_cmds", s.slm_write_cmds},
        {"slm_read_cmds", s.slm_read_cmds}, {"exec_cmds", s.exec_cmds}, {"exec_errors", s.exec_errors},
        {"bytes_namespace_to_slm", s.bytes_namespace_to_slm}, {"bytes_slm_to_namespace", s.bytes_slm_to_namespace},
        {"bytes_host_to_slm", s.bytes_host_to_slm}, {"bytes_slm_to_host", s.bytes_slm_to_host},
        {"exec_busy_ns", s.exec_busy_ns}};
    if (o.json) std::printf("{");
    bool first = true;
    for (auto &[k, v] : rows) {
        if (o.json) std::printf("%s\"%s\": %llu", first ? "" : ", ", k, static_cast<unsigned long long>(v));
        else std::printf("%-24s %llu\n", k, static_cast<unsigned long long>(v));
        first = false;
    }
    for (const auto &p : d.caps().programs) {
        const uint64_t n = s.per_program[p.id & 0xFF];
        if (o.json) std::printf(", \"exec_%s\": %llu", p.name.c_str(), static_cast<unsigned long long>(n));
        else if (n) std::printf("exec %-19s %llu\n", p.name.c_str(), static_cast<unsigned long long>(n));
    }
    if (o.json) std::printf("}\n");
    return 0;
}

void print_object(const ObjectInfo &i, bool json)
{
    if (json) {
        std::printf("{\"name\": \"%s\", \"bytes\": %llu, \"dtype\": \"%s\", \"shape\": %s, \"crc32c\": \"%08x\", \"generation\": %llu}",
                    i.name.c_str(), static_cast<unsigned long long>(i.bytes), i.dtype.c_str(), shape_str(i.shape).c_str(),
                    i.crc32c, static_cast<unsigned long long>(i.generation));
    } else {
        std::printf("%-24s %12llu  %-6s %-16s crc32c %08x\n", i.name.c_str(), static_cast<unsigned long long>(i.bytes),
                    i.is_tensor() ? i.dtype.c_str() : "blob", i.is_tensor() ? shape_str(i.shape).c_str() : "", i.crc32c);
    }
}

int cmd_store(Device &d, const Opts &o)
{
    const std::string &cmd = o.args[0];
    if (cmd == "format") {
        ObjectStore::format(d);
        std::printf("formatted: %llu bytes for objects\n", static_cast<unsigned long long>(ObjectStore(d).free_bytes()));
        return 0;
    }
    ObjectStore st(d);
    auto need = [&](size_t n) {
        if (o.args.size() != n + 1) die(cmd + " takes " + std::to_string(n) + " argument(s); see csdctl --help");
    };
    if (cmd == "ls") {
        auto v = st.list();
        if (o.json) std::printf("[");
        for (size_t i = 0; i < v.size(); i++) {
            if (o.json && i) std::printf(", ");
            print_object(v[i], o.json);
        }
        if (o.json) std::printf("]\n");
        else std::printf("%zu objects, %llu bytes free\n", v.size(), static_cast<unsigned long long>(st.free_bytes()));
    } else if (cmd == "stat") {
        need(1);
        print_object(st.stat(o.args[1]), o.json);
        if (o.json) std::printf("\n");
    } else if (cmd == "rm") {
        need(1);
        st.remove(o.args[1]);
    } else if (cmd == "put") {
        need(2);
        auto bytes = slurp(o.args[2]);
        Npy npy;
        if (ends_with(o.args[2], ".npy")) {
            if (!read_npy(bytes, &npy)) die(o.args[2] + " is not a .npy file");
            st.put(o.args[1], npy.data.data(), npy.data.size(), npy.dtype, npy.shape, bar("put " + o.args[1], npy.data.size()));
        } else {
            st.put(o.args[1], bytes.data(), bytes.size(), "", {}, bar("put " + o.args[1], bytes.size()));
        }
    } else if (cmd == "get") {
        need(2);
        const ObjectInfo info = st.stat(o.args[1]);
        auto data = st.get(o.args[1], bar("get " + o.args[1], info.bytes));
        if (ends_with(o.args[2], ".npy")) {
            if (!info.is_tensor()) die("object '" + o.args[1] + "' is a blob, not a tensor: write it to a raw file");
            data = write_npy(info, data);
        }
        std::ofstream f(o.args[2], std::ios::binary);
        f.write(reinterpret_cast<const char *>(data.data()), static_cast<std::streamsize>(data.size()));
        if (!f) die("cannot write " + o.args[2]);
    } else {
        die("unknown command '" + cmd + "'");
    }
    return 0;
}

int cmd_run(Device &d, const Opts &o)
{
    if (o.args.size() < 2) die("run needs a program: checksum, filter, reduce, gemm");
    const std::string prog = o.args[1];
    ObjectStore st(d);
    if (prog == "checksum") {
        if (o.args.size() != 3) die("run checksum NAME [--algo crc32c|xxh64]");
        const std::string algo = flag(o, "algo", "crc32c");
        if (algo != "crc32c" && algo != "xxh64") die("--algo must be crc32c or xxh64");
        const ObjectInfo info = st.stat(o.args[2]);
        SlmBuffer b = st.load(o.args[2]);
        const uint64_t sum = programs::checksum(d, algo == "xxh64" ? ChecksumAlgo::xxh64 : ChecksumAlgo::crc32c,
                                                Range{b.offset(), info.bytes});
        if (o.json) std::printf("{\"object\": \"%s\", \"algo\": \"%s\", \"checksum\": \"%016llx\"}\n", info.name.c_str(), algo.c_str(), static_cast<unsigned long long>(sum));
        else std::printf("%s %s %0*llx\n", algo.c_str(), info.name.c_str(), algo == "xxh64" ? 16 : 8, static_cast<unsigned long long>(sum));
    } else if (prog == "filter") {
        if (o.args.size() != 4) die("run filter SRC DST --record-size N --field-offset N --type T --op OP --lo X");
        static const std::map<std::string, FieldType> types = {{"i32", FieldType::i32}, {"i64", FieldType::i64}, {"u32", FieldType::u32},
                                                               {"u64", FieldType::u64}, {"f32", FieldType::f32}, {"f64", FieldType::f64}};
        static const std::map<std::string, CmpOp> ops = {{"eq", CmpOp::eq}, {"ne", CmpOp::ne}, {"lt", CmpOp::lt}, {"le", CmpOp::le},
                                                         {"gt", CmpOp::gt}, {"ge", CmpOp::ge}, {"between", CmpOp::between}};
        FilterSpec s;
        s.record_size = static_cast<uint32_t>(std::stoul(flag(o, "record-size")));
        s.field_offset = static_cast<uint32_t>(std::stoul(flag(o, "field-offset")));
        auto t = types.find(flag(o, "type"));
        if (t == types.end()) die("--type must be one of i32 i64 u32 u64 f32 f64");
        auto op = ops.find(flag(o, "op"));
        if (op == ops.end()) die("--op must be one of eq ne lt le gt ge between");
        s.field_type = t->second;
        s.op = op->second;
        s.indices = o.flags.count("indices");
        s.lo = std::stod(flag(o, "lo"));
        s.hi = std::stod(flag(o, "hi", "0"));
        s.lo_int = static_cast<int64_t>(std::stoll(flag(o, "lo")));
        s.hi_int = static_cast<int64_t>(std::stoll(flag(o, "hi", "0")));
        const FilterResult r = st.filter(o.args[2], s, o.args[3]);
        if (o.json) std::printf("{\"matches\": %u, \"bytes\": %u}\n", r.matches, r.bytes);
        else std::printf("%u matching records (%u bytes) -> object %s\n", r.matches, r.bytes, o.args[3].c_str());
    } else if (prog == "reduce") {
        if (o.args.size() != 3) die("run reduce NAME --op OP");
        static const std::map<std::string, ReduceOp> ops = {{"sum", ReduceOp::sum}, {"min", ReduceOp::min}, {"max", ReduceOp::max},
                                                            {"mean", ReduceOp::mean}, {"argmax", ReduceOp::argmax}, {"argmin", ReduceOp::argmin}};
        static const std::map<std::string, DType> dts = {{"<f4", DType::f32}, {"<f8", DType::f64}, {"<i4", DType::i32}, {"<i8", DType::i64}};
        auto op = ops.find(flag(o, "op"));
        if (op == ops.end()) die("--op must be one of sum min max mean argmax argmin");
        const ObjectInfo info = st.stat(o.args[2]);
        auto dt = dts.find(info.dtype);
        if (dt == dts.end()) die("reduce needs a tensor of <f4, <f8, <i4 or <i8 (object '" + info.name + "' is " + (info.dtype.empty() ? "a blob" : info.dtype) + ")");
        const uint64_t rows = info.shape.size() > 1 ? info.shape[0] : 1;
        const uint64_t cols = info.bytes / elem_size(info.dtype) / rows;
        SlmBuffer in = st.load(o.args[2]);
        SlmBuffer out = d.slm().alloc(rows * 8);
        programs::reduce(d, op->second, dt->second, Range{in.offset(), info.bytes}, range(out), static_cast<uint32_t>(rows), static_cast<uint32_t>(cols));
        std::vector<uint8_t> res(rows * 8);
        d.slm_read(out.offset(), res.data(), res.size());
        const bool as_int = op->second == ReduceOp::argmax || op->second == ReduceOp::argmin;
        const bool int_in = info.dtype[1] == 'i' && op->second != ReduceOp::mean;
        for (uint64_t r = 0; r < rows; r++) {
            if (as_int) { uint64_t v; std::memcpy(&v, &res[r * 8], 8); std::printf("%llu\n", static_cast<unsigned long long>(v)); }
            else if (int_in) { int64_t v; std::memcpy(&v, &res[r * 8], 8); std::printf("%lld\n", static_cast<long long>(v)); }
            else { double v; std::memcpy(&v, &res[r * 8], 8); std::printf("%.17g\n", v); }
        }
    } else if (prog == "gemm") {
        if (o.args.size() != 5) die("run gemm A B C");
        const ObjectInfo a = st.stat(o.args[2]), b = st.stat(o.args[3]);
        if (a.dtype != "<f4" || b.dtype != "<f4" || a.shape.size() != 2 || b.shape.size() != 2 || a.shape[1] != b.shape[0]) {
            die("gemm needs 2-D <f4 tensors A (m x k) and B (k x n)");
        }
        const uint64_t m = a.shape[0], k = a.shape[1], n = b.shape[1];
        SlmBuffer sa = st.load(o.args[2]), sb = st.load(o.args[3]);
        SlmBuffer sc = d.slm().alloc((m * n * 4 + 4095) / 4096 * 4096);
        programs::gemm(d, Range{sa.offset(), a.bytes}, Range{sb.offset(), b.bytes}, Range{sc.offset(), m * n * 4},
                       static_cast<uint32_t>(m), static_cast<uint32_t>(n), static_cast<uint32_t>(k));
        st.put_from_slm(o.args[4], sc, m * n * 4, "<f4", {m, n});
        std::printf("%s = %s x %s (%llux%llu)\n", o.args[4].c_str(), o.args[2].c_str(), o.args[3].c_str(),
                    static_cast<unsigned long long>(m), static_cast<unsigned long long>(n));
    } else {
        die("unknown program '" + prog + "' for run (checksum, filter, reduce, gemm)");
    }
    return 0;
}

int cmd_bench(Device &d, const Opts &o)
{
    const double secs = std::stod(flag(o, "seconds", "2"));
    SlmBuffer src = d.slm().alloc(4096), dst = d.slm().alloc(32 * 4096);
    using clk = std::chrono::steady_clock;
    auto throughput = [&](unsigned qd) {
        uint64_t done = 0;
        const auto end = clk::now() + std::chrono::duration<double>(secs);
        std::vector<std::future<ExecResult>> inflight;
        const auto t0 = clk::now();
        unsigned slot = 0;
        while (clk::now() < end) {
            while (inflight.size() < qd) {
                inflight.push_back(d.execute_async(CSD_PROG_COPY, {range(src), Range{dst.offset() + 4096 * (slot++ % 32), 4096}}));
            }
            inflight.front().get();
            inflight.erase(inflight.begin());
            done++;
        }
        for (auto &f : inflight) { f.get(); done++; }
        return done / std::chrono::duration<double>(clk::now() - t0).count();
    };
    auto latency = [&](auto &&op) {
        std::vector<double> us;
        const auto end = clk::now() + std::chrono::duration<double>(secs / 2);
        while (clk::now() < end) {
            const auto t0 = clk::now();
            op();
            us.push_back(std::chrono::duration<double, std::micro>(clk::now() - t0).count());
        }
        std::sort(us.begin(), us.end());
        return us[us.size() / 2];
    };
    const double sync = 1.0 / (latency([&] { d.execute(CSD_PROG_COPY, {range(src), range(dst, 4096)}); }) / 1e6);
    std::printf("transport %s\n", d.transport().name());
    std::printf("Execute copy 4 KiB, synchronous:  %9.0f commands/s\n", sync);
    for (unsigned qd : {1u, 8u, 32u}) {
        std::printf("Execute copy 4 KiB, queue depth %2u: %9.0f commands/s\n", qd, throughput(qd));
    }
    {  // 16 MiB SLM Read (or what SLM holds, if less)
        const uint64_t n = std::min<uint64_t>(16 << 20, d.caps().slm_size);
        SlmBuffer big = d.slm().alloc(n);
        std::vector<uint8_t> host(n);
        const double us = latency([&] { d.slm_read(big.offset(), host.data(), n); });
        std::printf("SLM Read of %llu MiB: %.2f ms (%.2f GB/s)\n", static_cast<unsigned long long>(n >> 20), us / 1000,
                    n / us / 1000);
    }
    std::vector<uint8_t> buf(4096);
    const uint32_t per = 4096 / d.ns().lba_size;
    std::printf("median latency: 4 KiB copy Execute %.1f us, 4 KiB Read %.1f us\n",
                latency([&] { d.execute(CSD_PROG_COPY, {range(src), range(dst, 4096)}); }),
                latency([&] { d.read_lbas(0, std::max<uint32_t>(per, 1), buf.data()); }));
    return 0;
}

}  // namespace

int main(int argc, char **argv)
{
    Opts o;
    const char *env = std::getenv("CSD_DEVICE");
    o.device = env ? env : "/dev/ng0n1";
    for (int i = 1; i < argc; i++) {
        std::string a = argv[i];
        if (a == "-h" || a == "--help" || a == "help") {
            std::fputs(kUsage, stdout);
            return 0;
        } else if (a == "--device" || a == "-d") {
            if (++i >= argc) die("--device needs a path");
            o.device = argv[i];
        } else if (a == "--uring") {
            o.uring = true;
        } else if (a == "--json") {
            o.json = true;
        } else if (a == "--bus-stats") {
            o.bus_stats = true;
        } else if (a == "--indices") {
            o.flags["indices"] = "1";
        } else if (a.rfind("--", 0) == 0) {
            if (++i >= argc) die(a + " needs a value");
            o.flags[a.substr(2)] = argv[i];
        } else {
            o.args.push_back(a);
        }
    }
    if (o.args.empty()) {
        std::fputs(kUsage, stderr);
        return 2;
    }
    try {
        OpenOptions oo;
        oo.use_uring = o.uring;
        auto dev = Device::open(o.device, oo);
        const std::string &c = o.args[0];
        int rc;
        if (c == "info") rc = cmd_info(*dev, o);
        else if (c == "programs") rc = cmd_programs(*dev, o);
        else if (c == "stats") rc = cmd_stats(*dev, o);
        else if (c == "run") rc = cmd_run(*dev, o);
        else if (c == "bench") rc = cmd_bench(*dev, o);
        else if (c == "format" || c == "put" || c == "get" || c == "ls" || c == "stat" || c == "rm") rc = cmd_store(*dev, o);
        else die("unknown command '" + c + "' (see csdctl --help)");
        if (o.bus_stats) {
            const BusCounters b = dev->bus();
            std::fprintf(stderr, "{\"bus_commands\": %llu, \"bus_bytes_to_device\": %llu, \"bus_bytes_from_device\": %llu}\n",
                         static_cast<unsigned long long>(b.commands), static_cast<unsigned long long>(b.bytes_to_device),
                         static_cast<unsigned long long>(b.bytes_from_device));
        }
        return rc;
    } catch (const Error &e) {
        die(e.what());
    } catch (const std::invalid_argument &) {
        die("a numeric argument is not a number");
    } catch (const std::exception &e) {
        die(e.what());
    }
}
