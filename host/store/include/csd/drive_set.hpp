// SPDX-License-Identifier: MIT
// drive_set.hpp - several drives used as one: an object store spread over them by a
// documented placement rule, and programs fanned out to the drives that hold the data,
// their results combined on the host. docs/drive-set.md.
//
// Placement: a whole object lives on its home drive, fnv1a64(name) % N. A striped tensor
// is split by rows into N contiguous row blocks, block i stored on drive i as the object
// "name@i/N"; a replicated object is stored whole on every drive. Fan-out runs one program
// per drive on its block, in parallel; any drive's failure is an error naming the drive
// (csd::Error with its status), never a partial answer.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "csd/device.hpp"
#include "csd/programs.hpp"
#include "csd/store.hpp"

namespace csd {

class DriveSet {
public:
    // Opens every path (as Device::open) and the object store on each.
    static std::unique_ptr<DriveSet> open(const std::vector<std::string> &paths, const OpenOptions &opts = {});
    // Wraps open devices (names say which is which in errors); stores opened on first use.
    DriveSet(std::vector<std::unique_ptr<Device>> drives, std::vector<std::string> names);
    ~DriveSet();

    size_t size() const { return drives_.size(); }
    Device &drive(size_t i) { return *drives_.at(i); }
    const std::string &name(size_t i) const { return names_.at(i); }
    // The object store on drive i.
    ObjectStore &store(size_t i);

    // The drive a whole object named `name` lives on: fnv1a64(name) % size().
    size_t home(const std::string &name) const;
    // The object name of drive i's row block of a striped object.
    std::string part_name(const std::string &name, size_t i) const;

    // Writes an empty store on every drive; unless force, refuses (as ObjectStore::format)
    // drives that hold a partition table, a filesystem or a store, before writing any.
    void format(bool force = false);
    // Stores a whole object on its home drive. Every put replaces the object in whatever
    // placement it had (the old form is removed first).
    void put(const std::string &name, const void *data, uint64_t bytes, const std::string &dtype = "",
             const std::vector<uint64_t> &shape = {});
    // Stores a tensor split by rows over every drive (row block i on drive i).
    void put_striped(const std::string &name, const void *data, uint64_t bytes, const std::string &dtype,
                     const std::vector<uint64_t> &shape);
    // Stores a whole object on every drive (e.g. the B of a fanned-out gemm).
    void put_replicated(const std::string &name, const void *data, uint64_t bytes, const std::string &dtype = "",
                        const std::vector<uint64_t> &shape = {});
    // The object's bytes: whole from its home, or a striped one's blocks in drive order.
    std::vector<uint8_t> get(const std::string &name);
    // What the set holds under that name: whole (home), replicated or striped (rows summed,
    // crc32c 0: each block is checked against its own).
    ObjectInfo stat(const std::string &name);
    // Whether an object is striped over the drives.
    bool striped(const std::string &name);
    // Every object once (a striped one as one entry, a replicated one once), by name.
    std::vector<ObjectInfo> list();
    // Removes an object wherever it lives (every block or copy).
    void remove(const std::string &name);

    // filter over a striped table into the striped object dst (each drive filters its rows;
    // dst's blocks in drive order are the concatenation). Records only (spec.indices: EINVAL).
    FilterResult filter(const std::string &src, const FilterSpec &spec, const std::string &dst);
    // A whole-tensor reduction of a striped f32/f64 tensor: each drive reduces its block,
    // the host combines the partials (sum: add; min/max; mean: weighted by block sizes;
    // argmax/argmin: the block's extreme value decides, its index offset by the block's
    // first element). Returns the value (argmax/argmin: the flat index, as a double).
    double reduce(const std::string &name, ReduceOp op);
    // C = A x B for a striped 2-D f32 A (m x k) and a replicated f32 B (k x n): each drive
    // multiplies its row block of A, C is stored striped (m x n) as name c.
    void gemm(const std::string &a, const std::string &b, const std::string &c);

private:
    template <class F>
    void on_each(const char *what, const F &f);
    // Removes the forms of an object a new put replaces (its blocks, its home copy, its
    // copies on the other drives), except those kept.
    void drop_other_forms(const std::string &name, bool keep_striped, bool keep_home, bool keep_copies);

    std::vector<std::unique_ptr<Device>> drives_;
    std::vector<std::string> names_;
    std::vector<std::unique_ptr<ObjectStore>> stores_;
};

}  // namespace csd
