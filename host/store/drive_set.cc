// SPDX-License-Identifier: MIT
// drive_set.cc - csd::DriveSet: placement over several drives, fan-out, combination.
#include "csd/drive_set.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <exception>
#include <future>
#include <limits>
#include <map>

#include "csd/npy.hpp"
#include "store_catalog.hpp"
#include "store_internal.hpp"

namespace csd {

namespace {

// FNV-1a, 64 bits: the placement hash (docs/drive-set.md).
uint64_t fnv1a64(const std::string &s)
{
    uint64_t h = 14695981039346656037ull;
    for (unsigned char c : s) {
        h ^= c;
        h *= 1099511628211ull;
    }
    return h;
}

// Rows [first, end) of block i when rows are split into n contiguous blocks.
std::pair<uint64_t, uint64_t> row_block(uint64_t rows, size_t i, size_t n)
{
    return {rows * i / n, rows * (i + 1) / n};
}

}  // namespace

std::unique_ptr<DriveSet> DriveSet::open(const std::vector<std::string> &paths, const OpenOptions &opts)
{
    if (paths.empty()) throw Error("a drive set needs at least one drive", EINVAL);
    std::vector<std::unique_ptr<Device>> drives;
    for (size_t i = 0; i < paths.size(); i++) {
        try {
            drives.push_back(Device::open(paths[i], opts));
        } catch (const Error &e) {
            throw Error("drive " + std::to_string(i) + " (" + paths[i] + ")", e);
        }
    }
    return std::make_unique<DriveSet>(std::move(drives), paths);
}

DriveSet::DriveSet(std::vector<std::unique_ptr<Device>> drives, std::vector<std::string> names)
    : drives_(std::move(drives)), names_(std::move(names)), stores_(drives_.size())
{
    if (drives_.empty() || names_.size() != drives_.size()) {
        throw Error("a drive set needs at least one drive, and one name per drive", EINVAL);
    }
}

DriveSet::~DriveSet() = default;

ObjectStore &DriveSet::store(size_t i)
{
    if (!stores_.at(i)) {
        try {
            stores_[i] = std::make_unique<ObjectStore>(*drives_[i]);
        } catch (const Error &e) {
            throw Error("drive " + std::to_string(i) + " (" + names_[i] + ")", e);
        }
    }
    return *stores_[i];
}

size_t DriveSet::home(const std::string &name) const { return fnv1a64(name) % drives_.size(); }

std::string DriveSet::part_name(const std::string &name, size_t i) const
{
    return name + "@" + std::to_string(i) + "/" + std::to_string(drives_.size());
}

// Runs f(i) for every drive in parallel; the first failure (in drive order) becomes an
// error naming its drive, after every drive's work has ended.
template <class F>
void DriveSet::on_each(const char *what, const F &f)
{
    std::vector<std::future<void>> work;
    // called from a streamed run's progress callback, the drives' calls are nested in it as
    // they would be on this thread: none waits for SLM that run holds until the callback returns
    const bool nested = in_streamed_call();
    for (size_t i = 0; i < drives_.size(); i++) {
        work.push_back(std::async(std::launch::async, [&f, i, nested] {
            const NestedStreamScope scope(nested);
            f(i);
        }));
    }
    std::exception_ptr first;
    size_t first_drive = 0, failed = 0;
    for (size_t i = 0; i < work.size(); i++) {
        try {
            work[i].get();
        } catch (...) {
            if (!first) {
                first = std::current_exception();
                first_drive = i;
            }
            failed++;
        }
    }
    if (!first) return;
    const std::string context = std::string(what) + " on drive " + std::to_string(first_drive) + " (" +
                                names_[first_drive] + ")" +
                                (failed > 1 ? " and " + std::to_string(failed - 1) + " more" : "");
    try {
        std::rethrow_exception(first);
    } catch (const Error &e) {
        throw Error(context, e);
    } catch (const std::exception &e) {
        throw Error(context + ": " + e.what(), EIO);
    }
}

void DriveSet::format(bool force)
{
    // every drive looked at before any is written: one that holds something spares them all
    if (!force) on_each("format", [this](size_t i) { ObjectStore::check_blank(*drives_[i]); });
    for (auto &s : stores_) s.reset();
    on_each("format", [this](size_t i) { ObjectStore::format(*drives_[i], true); });
}

void DriveSet::drop_other_forms(const std::string &name, bool keep_striped, bool keep_home, bool keep_copies)
{
    on_each("replace", [&](size_t i) {
        const std::string part = part_name(name, i);
        if (!keep_striped && store(i).exists(part)) store(i).remove(part);
        const bool keep = i == home(name) ? keep_home : keep_copies;
        if (!keep && store(i).exists(name)) store(i).remove(name);
    });
}

// A put replaces an object only once the new form is stored: the other forms are dropped
// after it, so a put that fails (a name too long, no space, an I/O error) leaves the
// acknowledged object as it was.
void DriveSet::put(const std::string &name, const void *data, uint64_t bytes, const std::string &dtype,
                   const std::vector<uint64_t> &shape)
{
    const size_t h = home(name);
    try {
        store(h).put(name, data, bytes, dtype, shape);
    } catch (const Error &e) {
        throw Error("put '" + name + "' on drive " + std::to_string(h) + " (" + names_[h] + ")", e);
    }
    drop_other_forms(name, false, true, false);
}

void DriveSet::put_striped(const std::string &name, const void *data, uint64_t bytes, const std::string &dtype,
                           const std::vector<uint64_t> &shape)
{
    const std::string what = "put_striped '" + name + "'";
    npy::Dtype dt;
    try {
        dt = npy::parse_dtype(dtype);
    } catch (const Error &e) {
        throw Error(what + ": a tensor's dtype", e);
    }
    if (shape.empty() || npy::array_bytes(dt, shape) != bytes) {
        throw Error(what + ": a tensor whose shape and dtype account for its " + std::to_string(bytes) + " bytes",
                    EINVAL);
    }
    const uint64_t row_bytes = bytes / std::max<uint64_t>(shape[0], 1);
    for (size_t i = 0; i < size(); i++) {  // every part's entry is valid before anything changes
        try {
            catalog::check_entry(part_name(name, i), dtype, shape);
        } catch (const Error &e) {
            throw Error(what + ": part " + std::to_string(i), e);
        }
    }
    const bool was_striped = striped(name);
    try {
        on_each("put_striped", [&](size_t i) {
            const auto [first, end] = row_block(shape[0], i, size());
            std::vector<uint64_t> part_shape = shape;
            part_shape[0] = end - first;
            store(i).put(part_name(name, i), static_cast<const uint8_t *>(data) + first * row_bytes,
                         (end - first) * row_bytes, dtype, part_shape);
        });
    } catch (...) {
        // Parts of a tensor that was not striped before are taken back, so the whole object
        // stays what readers see; a striped one's parts are replaced each in place.
        if (!was_striped) {
            for (size_t i = 0; i < size(); i++) {
                try {
                    if (store(i).exists(part_name(name, i))) store(i).remove(part_name(name, i));
                } catch (...) {
                }
            }
        }
        throw;
    }
    drop_other_forms(name, true, false, false);
}

void DriveSet::put_replicated(const std::string &name, const void *data, uint64_t bytes, const std::string &dtype,
                              const std::vector<uint64_t> &shape)
{
    on_each("put_replicated", [&](size_t i) { store(i).put(name, data, bytes, dtype, shape); });
    drop_other_forms(name, false, true, true);
}

bool DriveSet::striped(const std::string &name) { return store(0).exists(part_name(name, 0)); }

ObjectInfo DriveSet::stat(const std::string &name)
{
    if (!striped(name)) return store(home(name)).stat(name);
    ObjectInfo all;
    for (size_t i = 0; i < size(); i++) {
        ObjectInfo p;
        try {
            p = store(i).stat(part_name(name, i));
        } catch (const Error &e) {
            throw Error("stat '" + name + "' on drive " + std::to_string(i) + " (" + names_[i] + ")", e);
        }
        if (i == 0) {
            all = p;
            all.name = name;
            all.bytes = 0;
            all.shape[0] = 0;
            all.crc32c = 0;  // each block has its own
        }
        all.bytes += p.bytes;
        all.shape[0] += p.shape.empty() ? 0 : p.shape[0];
    }
    return all;
}

std::vector<uint8_t> DriveSet::get(const std::string &name)
{
    if (!striped(name)) return store(home(name)).get(name);
    std::vector<std::vector<uint8_t>> parts(size());
    on_each("get", [&](size_t i) { parts[i] = store(i).get(part_name(name, i)); });
    std::vector<uint8_t> out;
    for (auto &p : parts) out.insert(out.end(), p.begin(), p.end());
    return out;
}

std::vector<ObjectInfo> DriveSet::list()
{
    std::map<std::string, ObjectInfo> all;
    for (size_t i = 0; i < size(); i++) {
        const std::string suffix = part_name("", i);  // "@i/N"
        for (const ObjectInfo &o : store(i).list()) {
            const bool part = o.name.size() > suffix.size() &&
                              o.name.compare(o.name.size() - suffix.size(), std::string::npos, suffix) == 0;
            if (!part) {
                all.emplace(o.name, o);  // whole or replicated: once
            } else if (i == 0) {
                const std::string name = o.name.substr(0, o.name.size() - suffix.size());
                all[name] = stat(name);
            }
        }
    }
    std::vector<ObjectInfo> v;
    for (auto &kv : all) v.push_back(kv.second);
    return v;
}

void DriveSet::remove(const std::string &name)
{
    if (!striped(name) && !store(home(name)).exists(name)) {
        throw Error("remove object '" + name + "'", ENOENT);
    }
    on_each("remove", [&](size_t i) {
        if (store(i).exists(part_name(name, i))) store(i).remove(part_name(name, i));
        if (store(i).exists(name)) store(i).remove(name);
    });
}

FilterResult DriveSet::filter(const std::string &src, const FilterSpec &spec, const std::string &dst)
{
    if (spec.indices) {
        throw Error("filter over a drive set: records only (indices would be each block's own)", EINVAL);
    }
    if (!striped(src)) throw Error("filter over a drive set: '" + src + "' is not striped (put_striped)", EINVAL);
    std::vector<FilterResult> parts(size());
    on_each("filter", [&](size_t i) {
        FilterSpec s = spec;
        s.count = 0;  // each block's own record count
        if (store(i).exists(part_name(dst, i))) store(i).remove(part_name(dst, i));
        parts[i] = store(i).filter(part_name(src, i), s, part_name(dst, i));
    });
    FilterResult total;
    for (const FilterResult &r : parts) {
        total.bytes += r.bytes;
        total.matches += r.matches;
    }
    return total;
}

double DriveSet::reduce(const std::string &name, ReduceOp op)
{
    const ObjectInfo info = stat(name);
    if (!striped(name) || (info.dtype != "<f4" && info.dtype != "<f8")) {
        throw Error("reduce over a drive set: '" + name + "' must be a striped f32 or f64 tensor", EINVAL);
    }
    const uint64_t esize = npy::itemsize(info.dtype);
    const bool arg = op == ReduceOp::argmax || op == ReduceOp::argmin;
    // Each block: its element count, its result, and (argmax/argmin) its extreme value.
    struct Partial {
        uint64_t n = 0;
        double value = 0, extreme = 0;
    };
    std::vector<Partial> parts(size());
    on_each("reduce", [&](size_t i) {
        const std::string part = part_name(name, i);
        const uint64_t n = store(i).stat(part).bytes / esize;
        parts[i].n = n;
        if (n == 0) return;
        // each block streams through its drive's SLM (ObjectStore::reduce: any size)
        auto run = [&](ReduceOp o) {
            const uint64_t bits = store(i).reduce(part, o, {}, true).at(0);
            if (o == ReduceOp::argmax || o == ReduceOp::argmin) return static_cast<double>(bits);
            double v;
            std::memcpy(&v, &bits, 8);
            return v;
        };
        parts[i].value = run(op);
        if (arg) parts[i].extreme = run(op == ReduceOp::argmax ? ReduceOp::max : ReduceOp::min);
    });
    double acc = 0, best = 0;
    uint64_t total = 0, offset = 0;
    bool have = false;
    for (const Partial &p : parts) {
        if (p.n) {
            switch (op) {
            case ReduceOp::sum: acc += p.value; break;
            case ReduceOp::mean: acc += p.value * static_cast<double>(p.n); break;
            case ReduceOp::min: acc = have ? std::min(acc, p.value) : p.value; break;
            case ReduceOp::max: acc = have ? std::max(acc, p.value) : p.value; break;
            case ReduceOp::argmax:
            case ReduceOp::argmin: {
                const bool better = !have || (op == ReduceOp::argmax ? p.extreme > best : p.extreme < best);
                if (better) {  // ties keep the earlier block, as numpy keeps the first
                    best = p.extreme;
                    acc = static_cast<double>(offset) + p.value;
                }
                break;
            }
            }
            have = true;
        }
        offset += p.n;
        total += p.n;
    }
    if (!have) throw Error("reduce of the empty tensor '" + name + "'", EINVAL);
    return op == ReduceOp::mean ? acc / static_cast<double>(total) : acc;
}

void DriveSet::gemm(const std::string &a, const std::string &b, const std::string &c)
{
    const ObjectInfo ai = stat(a);
    if (!striped(a) || ai.dtype != "<f4" || ai.shape.size() != 2) {
        throw Error("gemm over a drive set: A ('" + a + "') must be a striped 2-D f32 tensor", EINVAL);
    }
    on_each("gemm", [&](size_t i) {
        const ObjectInfo bi = store(i).stat(b);  // replicated: every drive has it
        if (bi.dtype != "<f4" || bi.shape.size() != 2 || bi.shape[0] != ai.shape[1]) {
            throw Error("gemm: B ('" + b + "') must be a replicated f32 tensor of " + std::to_string(ai.shape[1]) +
                            " rows",
                        EINVAL);
        }
        const ObjectInfo pa = store(i).stat(part_name(a, i));
        const uint64_t m = pa.shape[0], n = bi.shape[1];
        const std::string pc = part_name(c, i);
        if (store(i).exists(pc)) store(i).remove(pc);
        if (m == 0) {
            store(i).put(pc, nullptr, 0, "<f4", {0, n});
            return;
        }
        store(i).gemm(part_name(a, i), b, pc);  // tiled through the drive's SLM where it must be
    });
}

}  // namespace csd
