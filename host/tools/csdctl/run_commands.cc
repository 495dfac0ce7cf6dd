// SPDX-License-Identifier: MIT
// run_commands.cc - csdctl run checksum|filter|reduce|gemm|gather|embedding-bag: the
// device's programs on stored objects and on the namespace.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <set>

#include "csd/programs.hpp"

#include "csdctl.hpp"

namespace csdctl {
namespace {

// What `run embedding-bag` takes.
struct BagArgs {
    EmbeddingBagSpec spec;
    std::string dtype = "f32", mode = "sum";
    std::vector<int64_t> indices, offsets;
};

// IEEE binary16 -> the bits of the binary32 of the same value.
uint32_t f16_bits_to_f32_bits(uint16_t h)
{
    const uint32_t sign = uint32_t{h & 0x8000u} << 16, exp = (h >> 10) & 0x1F;
    uint32_t man = h & 0x3FF;
    if (exp == 0x1F) return sign | 0x7F800000 | man << 13;
    if (exp == 0) {
        if (!man) return sign;
        int e = -1;
        do {
            e++;
            man <<= 1;
        } while (!(man & 0x400));
        return sign | static_cast<uint32_t>(127 - 15 - e) << 23 | (man & 0x3FF) << 13;
    }
    return sign | (exp + 127 - 15) << 23 | man << 13;
}

int cmd_gather(Device &d, const Opts &o, const std::vector<std::string> &pieces, const std::string &file)
{
    std::vector<csd_gather_entry> es;
    for (const std::string &p : pieces) {
        unsigned long long lba = 0;
        unsigned offset = 0, length = 0;
        char tail = 0;
        if (std::sscanf(p.c_str(), "%llu:%u:%u%c", &lba, &offset, &length, &tail) != 3) {
            throw Error("gather: '" + p + "' is not LBA:OFFSET:LENGTH", EINVAL);
        }
        es.push_back({lba, offset, length});
    }
    const std::vector<uint8_t> bytes = programs::gather(d, es);
    if (file.empty()) {
        std::fwrite(bytes.data(), 1, bytes.size(), stdout);
    } else {
        std::ofstream f(file, std::ios::binary);
        f.write(reinterpret_cast<const char *>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
        if (!f) throw Error("gather: cannot write " + file, EIO);
    }
    // --json: one object, on stderr where stdout carries the bytes (as get - does)
    if (o.json) {
        print({{"bytes", bytes.size()}, {"file", file.empty() ? "-" : file}, {"where", where_name(d.where())}},
              file.empty() ? stderr : stdout);
    }
    say_where(d, o);
    return 0;
}

int cmd_embedding_bag(Device &d, const Opts &o, BagArgs &a)
{
    EmbeddingBagSpec s = a.spec;
    s.dtype = static_cast<EmbDType>(names(csd_emb_dtype_names).at(a.dtype));
    s.mode = static_cast<EmbMode>(names(csd_emb_mode_names).at(a.mode));
    s.num_bags = static_cast<uint32_t>(a.offsets.size() - (s.include_last_offset ? 1 : 0));
    const std::vector<uint8_t> out = programs::embedding_bag(d, s, a.indices, a.offsets);
    // one line per bag (JSON: a list of lists), the elements as f32
    std::vector<std::vector<float>> rows(s.num_bags, std::vector<float>(s.row_dim));
    const size_t esz = s.dtype == EmbDType::f32 ? 4 : 2;
    for (uint32_t b = 0; b < s.num_bags; b++) {
        for (uint32_t i = 0; i < s.row_dim; i++) {
            const uint8_t *p = out.data() + (uint64_t{b} * s.row_dim + i) * esz;
            uint32_t bits = 0;
            if (esz == 4) {
                std::memcpy(&bits, p, 4);
            } else {
                uint16_t h;
                std::memcpy(&h, p, 2);
                bits = s.dtype == EmbDType::bf16 ? uint32_t{h} << 16 : f16_bits_to_f32_bits(h);
            }
            std::memcpy(&rows[b][i], &bits, 4);
        }
    }
    if (o.json) {
        print({{"bags", s.num_bags}, {"dim", s.row_dim}, {"values", rows}, {"where", where_name(d.where())}});
        return 0;
    }
    for (const auto &r : rows) {
        for (size_t i = 0; i < r.size(); i++) std::printf("%s%g", i ? " " : "", static_cast<double>(r[i]));
        std::printf("\n");
    }
    say_where(d, o);
    return 0;
}

int cmd_checksum(Device &d, const Opts &o, const std::string &name, const std::string &algo)
{
    ObjectStore st(d);
    const ObjectInfo info = st.stat(name);
    Cancellable c("checksum of " + name);
    const uint64_t sum = st.checksum(name, static_cast<ChecksumAlgo>(names(csd_checksum_algo_names).at(algo)),
                                     stream_options(o, c, "checksum " + name, info.bytes));
    if (o.json) print({{"object", info.name}, {"algo", algo}, {"checksum", hex(sum, 16)}, {"where", where_name(d.where())}});
    else std::printf("%s %s %s\n", algo.c_str(), info.name.c_str(), hex(sum, algo == "xxh64" ? 16 : 8).c_str());
    say_where(d, o);
    return 0;
}

// What `run filter` takes beyond its objects.
struct FilterArgs {
    uint32_t record_size = 0, field_offset = 0;
    std::string type, op, lo, hi = "0";
    bool indices = false;
};

FilterSpec filter_spec(const FilterArgs &a)
{
    FilterSpec s;
    s.record_size = a.record_size;
    s.field_offset = a.field_offset;
    s.field_type = static_cast<FieldType>(names(csd_field_type_names).at(a.type));
    s.op = static_cast<CmpOp>(names(csd_filter_op_names).at(a.op));
    s.indices = a.indices;
    if (s.field_type == FieldType::f32 || s.field_type == FieldType::f64) {
        s.lo = parse_double("--lo", a.lo);
        s.hi = parse_double("--hi", a.hi);
    } else {  // u64 values up to 2^64-1, as two's complement
        s.lo_int = static_cast<int64_t>(parse_u64("--lo", a.lo));
        s.hi_int = static_cast<int64_t>(parse_u64("--hi", a.hi));
        s.lo = static_cast<double>(s.lo_int);
        s.hi = static_cast<double>(s.hi_int);
    }
    return s;
}

int print_filter(const Opts &o, const FilterResult &r, const std::string &dst, const char *where = nullptr)
{
    if (o.json && where) print({{"matches", r.matches}, {"bytes", r.bytes}, {"where", where}});
    else if (o.json) print({{"matches", r.matches}, {"bytes", r.bytes}});
    else std::printf("%llu matching records (%llu bytes) -> object %s\n", static_cast<unsigned long long>(r.matches),
                     static_cast<unsigned long long>(r.bytes), dst.c_str());
    return 0;
}

int cmd_filter(Device &d, const Opts &o, const std::string &src, const std::string &dst, const FilterArgs &a)
{
    ObjectStore st(d);
    Cancellable c("filter of " + src);
    const FilterResult r = st.filter(src, filter_spec(a), dst, stream_options(o, c, "filter " + src, st.stat(src).bytes));
    const int rc = print_filter(o, r, dst, where_name(d.where()));
    say_where(d, o);
    return rc;
}

int cmd_reduce(Device &d, const Opts &o, const std::string &name, const std::string &op_name)
{
    const auto op = static_cast<ReduceOp>(names(csd_reduce_op_names).at(op_name));
    ObjectStore st(d);
    const ObjectInfo info = st.stat(name);
    static const std::set<std::string> dts = {"<f4", "<f8", "<i4", "<i8"};
    if (!dts.count(info.dtype)) die("reduce needs a tensor of <f4, <f8, <i4 or <i8 (object '" + info.name + "' is " + (info.dtype.empty() ? "a blob" : info.dtype) + ")");
    Cancellable c("reduce of " + name);
    const std::vector<uint64_t> bits = st.reduce(name, op, stream_options(o, c, "reduce " + name, info.bytes));
    const uint64_t rows = bits.size();
    std::vector<uint8_t> res(rows * 8);
    if (rows) std::memcpy(res.data(), bits.data(), rows * 8);
    const bool as_int = op == ReduceOp::argmax || op == ReduceOp::argmin;
    const bool int_in = info.dtype[1] == 'i' && op != ReduceOp::mean;
    json values = json::array();
    for (uint64_t r = 0; r < rows; r++) {
        if (as_int) {
            uint64_t v;
            std::memcpy(&v, &res[r * 8], 8);
            if (o.json) values.push_back(v);
            else std::printf("%llu\n", static_cast<unsigned long long>(v));
        } else if (int_in) {
            int64_t v;
            std::memcpy(&v, &res[r * 8], 8);
            if (o.json) values.push_back(v);
            else std::printf("%lld\n", static_cast<long long>(v));
        } else {
            double v;
            std::memcpy(&v, &res[r * 8], 8);
            if (o.json) values.push_back(v);
            else std::printf("%.17g\n", v);
        }
    }
    if (o.json) {
        print({{"object", info.name}, {"op", op_name}, {"rows", rows}, {"values", values}, {"where", where_name(d.where())}});
    }
    say_where(d, o);
    return 0;
}

// What `run gemm` reports: C's name and shape (and, on one drive, where it ran).
void print_gemm(const Opts &o, const std::string &an, const std::string &bn, const std::string &cn, uint64_t m,
                uint64_t n, const char *where = nullptr)
{
    json j = {{"object", cn}, {"a", an}, {"b", bn}, {"shape", {m, n}}};
    if (where) j["where"] = where;
    if (o.json) print(j);
    else std::printf("%s = %s x %s (%llux%llu)\n", cn.c_str(), an.c_str(), bn.c_str(),
                     static_cast<unsigned long long>(m), static_cast<unsigned long long>(n));
}

int cmd_gemm(Device &d, const Opts &o, const std::string &an, const std::string &bn, const std::string &cn)
{
    ObjectStore st(d);
    const ObjectInfo a = st.stat(an), b = st.stat(bn);
    if (a.dtype != "<f4" || b.dtype != "<f4" || a.shape.size() != 2 || b.shape.size() != 2 || a.shape[1] != b.shape[0]) {
        die("gemm needs 2-D <f4 tensors A (m x k) and B (k x n)");
    }
    const uint64_t m = a.shape[0], n = b.shape[1];
    Cancellable c("gemm " + cn);
    st.gemm(an, bn, cn, stream_options(o, c, "gemm " + cn, a.bytes));
    print_gemm(o, an, bn, cn, m, n, where_name(d.where()));
    say_where(d, o);
    return 0;
}

int set_reduce(DriveSet &s, const Opts &o, const std::string &name, const std::string &op_name)
{
    const double v = s.reduce(name, static_cast<ReduceOp>(names(csd_reduce_op_names).at(op_name)));
    if (o.json) print({{"object", name}, {"op", op_name}, {"value", v}});
    else std::printf("%s %s %.17g\n", op_name.c_str(), name.c_str(), v);
    return 0;
}

}  // namespace

// What the run commands take beyond their own structs.
struct RunArgs {
    std::string name, other, third, file, algo = "crc32c", op, cvt_op, codec = "zstd";
    float cvt_scale = 1.0f;
    int32_t cvt_zero = 0;
    FilterArgs filter;
    BagArgs bag;
    std::vector<std::string> pieces;
};

void add_run_commands(Cli &c)
{
    const Opts &o = c.o;
    RunArgs &a = c.keep<RunArgs>();
    auto *run = c.group("run", "run a program on stored objects");
    auto *checksum = run->add_subcommand("checksum", "checksum of an object, computed in the drive");
    checksum->add_option("name", a.name, "object")->required();
    checksum->add_option("--algo", a.algo, "crc32c or xxh64")->check(CLI::IsMember(names(csd_checksum_algo_names)));
    c.choices["csdctl run checksum --algo"] = choice_list(names(csd_checksum_algo_names));
    checksum->callback([&] { c.action = [&](Device &d) { return cmd_checksum(d, o, a.name, a.algo); }; });
    FilterArgs &fa = a.filter;
    auto *filter = run->add_subcommand("filter", "records of SRC whose field compares true, into object DST");
    c.writers.push_back({filter});
    filter->add_option("src", a.name, "object of records")->required();
    filter->add_option("dst", a.other, "object to create")->required();
    filter->add_option("--record-size", fa.record_size, "bytes per record")->required();
    filter->add_option("--field-offset", fa.field_offset, "byte offset of the field")->required();
    filter->add_option("--type", fa.type, "field type")->required()->check(CLI::IsMember(names(csd_field_type_names)));
    filter->add_option("--op", fa.op, "comparison")->required()->check(CLI::IsMember(names(csd_filter_op_names)));
    c.choices["csdctl run filter --type"] = choice_list(names(csd_field_type_names));
    c.choices["csdctl run filter --op"] = choice_list(names(csd_filter_op_names));
    filter->add_option("--lo", fa.lo, "value compared with (lower bound for between; integers up to 2^64-1)")->required();
    filter->add_option("--hi", fa.hi, "upper bound for between");
    filter->add_flag("--indices", fa.indices, "write u32 record indices instead of records");
    filter->callback([&] {
        c.action = [&](Device &d) { return cmd_filter(d, o, a.name, a.other, fa); };
        c.set_action = [&](DriveSet &s) { return print_filter(o, s.filter(a.name, filter_spec(fa), a.other), a.other); };
    });
    auto *reduce = run->add_subcommand("reduce", "one result per row of a tensor");
    reduce->add_option("name", a.name, "tensor object (rows x cols)")->required();
    reduce->add_option("--op", a.op, "reduction")->required()->check(CLI::IsMember(names(csd_reduce_op_names)));
    c.choices["csdctl run reduce --op"] = choice_list(names(csd_reduce_op_names));
    reduce->callback([&] {
        c.action = [&](Device &d) { return cmd_reduce(d, o, a.name, a.op); };
        c.set_action = [&](DriveSet &s) { return set_reduce(s, o, a.name, a.op); };  // of the whole striped tensor
    });
    auto *gemm = run->add_subcommand("gemm", "C = A x B for 2-D float32 tensors, stored as object C");
    c.writers.push_back({gemm});
    gemm->add_option("a", a.name, "A (m x k)")->required();
    gemm->add_option("b", a.other, "B (k x n)")->required();
    gemm->add_option("c", a.third, "object to create")->required();
    gemm->callback([&] {
        c.action = [&](Device &d) { return cmd_gemm(d, o, a.name, a.other, a.third); };
        c.set_action = [&](DriveSet &s) {  // A striped, B replicated
            s.gemm(a.name, a.other, a.third);
            const ObjectInfo ci = s.stat(a.third);
            print_gemm(o, a.name, a.other, a.third, ci.shape.at(0), ci.shape.at(1));
            return 0;
        };
    });

    auto *convert = run->add_subcommand("convert", "an object's elements converted (f32 to f16, ...) into object DST");
    c.writers.push_back({convert});
    convert->add_option("src", a.name, "tensor (or blob) object")->required();
    convert->add_option("dst", a.other, "object to create")->required();
    convert->add_option("--op", a.cvt_op, "conversion")->required()->check(CLI::IsMember(names(csd_convert_op_names)));
    c.choices["csdctl run convert --op"] = choice_list(names(csd_convert_op_names));
    convert->add_option("--scale", a.cvt_scale, "scale of f32_i8 and i8_f32 (default 1)");
    convert->add_option("--zero-point", a.cvt_zero, "zero point of f32_i8 and i8_f32 (default 0)");
    convert->callback([&] {
        c.action = [&](Device &d) {
            ObjectStore st(d);
            Cancellable cancel("convert of " + a.name);
            const uint64_t bytes = st.convert(a.name, static_cast<ConvertOp>(names(csd_convert_op_names).at(a.cvt_op)), a.other,
                                              a.cvt_scale, a.cvt_zero, stream_options(o, cancel, "convert " + a.name, st.stat(a.name).bytes));
            if (o.json) print({{"object", a.other}, {"bytes", bytes}, {"where", where_name(d.where())}});
            else std::printf("%llu bytes -> object %s\n", static_cast<unsigned long long>(bytes), a.other.c_str());
            say_where(d, o);
            return 0;
        };
    });
    auto *decomp = run->add_subcommand("decompress", "an object of zstd or LZ4 frames decompressed into object DST");
    c.writers.push_back({decomp});
    decomp->add_option("src", a.name, "object of compressed frames")->required();
    decomp->add_option("dst", a.other, "object to create")->required();
    decomp->add_option("--codec", a.codec, "zstd or lz4")->check(CLI::IsMember(names(csd_decompress_algo_names)));
    c.choices["csdctl run decompress --codec"] = choice_list(names(csd_decompress_algo_names));
    decomp->callback([&] {
        c.action = [&](Device &d) {
            ObjectStore st(d);
            Cancellable cancel("decompress of " + a.name);
            const uint64_t bytes = st.decompress(a.name, static_cast<Codec>(names(csd_decompress_algo_names).at(a.codec)), a.other,
                                                 stream_options(o, cancel, "decompress " + a.name, st.stat(a.name).bytes));
            if (o.json) print({{"object", a.other}, {"bytes", bytes}, {"where", where_name(d.where())}});
            else std::printf("%llu bytes -> object %s\n", static_cast<unsigned long long>(bytes), a.other.c_str());
            say_where(d, o);
            return 0;
        };
    });

    auto *gather = run->add_subcommand("gather", "bytes of the namespace gathered by the drive (LBA:OFFSET:LENGTH ...)");
    gather->add_option("pieces", a.pieces, "LBA:OFFSET:LENGTH, in output order")->required();
    gather->add_option("--out", a.file, "file for the gathered bytes (default: standard output)");
    gather->callback([&] { c.action = [&](Device &d) { return cmd_gather(d, o, a.pieces, a.file); }; });
    BagArgs &ba = a.bag;
    auto *bag = run->add_subcommand("embedding-bag", "pooled rows of a table on the namespace, computed in the drive");
    bag->add_option("--table-lba", ba.spec.table_lba, "first LBA of the table")->required();
    bag->add_option("--rows", ba.spec.num_rows, "rows in the table")->required();
    bag->add_option("--dim", ba.spec.row_dim, "elements per row")->required();
    bag->add_option("--dtype", ba.dtype, "f32, f16 or bf16")->check(CLI::IsMember(names(csd_emb_dtype_names)));
    bag->add_option("--mode", ba.mode, "sum, mean or max")->check(CLI::IsMember(names(csd_emb_mode_names)));
    bag->add_option("--indices", ba.indices, "row indices, comma-separated")->required()->delimiter(',');
    bag->add_option("--offsets", ba.offsets, "where each bag starts in the indices, comma-separated")->required()
        ->delimiter(',');
    bag->add_flag("--include-last-offset", ba.spec.include_last_offset, "the last offset ends the last bag");
    bag->callback([&] { c.action = [&](Device &d) { return cmd_embedding_bag(d, o, ba); }; });
}

}  // namespace csdctl
