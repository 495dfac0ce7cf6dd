// store.hpp - named objects (typed tensors and raw blobs) kept on the namespace itself,
// with a catalog that survives reboots and stays consistent if power is cut at any
// point of an update: data and catalog are written copy-on-write, then a checksummed,
// generation-numbered superblock goes to the older of two slots; an acknowledged put or
// rm is durable (flushed) before it returns.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "csd/device.hpp"
#include "csd/programs.hpp"

namespace csd {

// What the catalog knows about one object.
struct ObjectInfo {
    std::string name;
    std::string dtype;            // numpy-style ("<f4", "<i8", "|u1"); empty for a blob
    std::vector<uint64_t> shape;  // empty for a blob
    uint64_t bytes = 0;
    uint64_t block = 0;           // first store block of its data
    uint32_t crc32c = 0;          // of its bytes
    uint64_t generation = 0;      // catalog generation that wrote it
    bool is_tensor() const { return !dtype.empty(); }
};

// Called during long transfers with bytes done so far and the total.
using Progress = std::function<void(uint64_t done, uint64_t total)>;

class ObjectStore {
public:
    // Writes an empty store over the whole namespace (existing objects are forgotten).
    static void format(Device &dev);
    // Opens the store on the device's namespace; throws csd::Error (ENOENT) if there is
    // none ("run csdctl format") or if both superblocks are damaged.
    explicit ObjectStore(Device &dev);

    // Stores (or replaces) an object; durable when it returns.
    void put(const std::string &name, const void *data, uint64_t bytes, const std::string &dtype = "",
             const std::vector<uint64_t> &shape = {}, const Progress &progress = {});
    // The whole object, checked against its CRC-32C.
    std::vector<uint8_t> get(const std::string &name, const Progress &progress = {});
    // len bytes from offset of an object into buf (ranged read; not CRC-checked).
    void read(const std::string &name, uint64_t offset, uint64_t len, void *buf, const Progress &progress = {});
    ObjectInfo stat(const std::string &name) const;
    bool exists(const std::string &name) const;
    std::vector<ObjectInfo> list() const;
    // Removes an object; durable when it returns.
    void remove(const std::string &name);
    uint64_t generation() const { return generation_; }
    // The namespace LBA where an object's data starts (its bytes are contiguous).
    uint64_t first_lba(const ObjectInfo &o) const { return o.block * lbas_per_block_; }
    uint64_t free_bytes() const;

    // Loads an object into SLM (SLM Load, no bus crossing); the buffer is block-rounded.
    SlmBuffer load(const std::string &name);
    // Creates an object from bytes already in SLM (SLM Store), durable when it returns.
    void put_from_slm(const std::string &name, const SlmBuffer &src, uint64_t bytes, const std::string &dtype = "",
                      const std::vector<uint64_t> &shape = {});
    // filter on object src into object dst, inside the drive.
    FilterResult filter(const std::string &src, const FilterSpec &spec, const std::string &dst);

private:
    struct Extent {
        uint64_t block, blocks;
    };
    uint64_t blocks_for(uint64_t bytes) const { return bytes == 0 ? 1 : (bytes + block_ - 1) / block_; }
    uint64_t allocate(uint64_t blocks, const std::vector<Extent> &also_used) const;
    void commit(std::map<std::string, ObjectInfo> next);
    void commit_object(const ObjectInfo &o);
    void write_blocks(uint64_t block, const void *data, uint64_t bytes, const Progress &progress = {});
    struct Slot {
        uint64_t generation = 0, total_blocks = 0;
        Extent catalog{0, 0};
        std::map<std::string, ObjectInfo> objects;
    };
    bool read_slot(int slot, Slot *out);

    Device &dev_;
    mutable std::mutex mu_;
    uint32_t block_ = 4096;
    uint64_t lbas_per_block_ = 8;
    uint64_t total_blocks_ = 0;
    uint64_t generation_ = 0;
    Extent catalog_{0, 0};
    std::map<std::string, ObjectInfo> objects_;
};

}  // namespace csd
