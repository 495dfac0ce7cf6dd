// SPDX-License-Identifier: MIT
// store_catalog.cc - encoding and bounds-checked decoding of the store's catalog and
// journal (store_catalog.hpp).
#include "store_catalog.hpp"

#include <cstring>

#include "csd/error.hpp"

namespace csd::catalog {

namespace {

enum : uint8_t { kPut = 1, kRemove = 2, kReserve = 3, kRelease = 4 };

template <class T>
void put(std::vector<uint8_t> &v, T x)
{
    const auto *b = reinterpret_cast<const uint8_t *>(&x);
    v.insert(v.end(), b, b + sizeof x);
}

void put_str(std::vector<uint8_t> &v, const std::string &s)
{
    put(v, static_cast<uint16_t>(s.size()));
    v.insert(v.end(), s.begin(), s.end());
}

// Reads fields with bounds checks; good is false after any overrun.
struct Reader {
    const uint8_t *p, *end;
    bool good = true;
    template <class T>
    T get()
    {
        T x{};
        if (static_cast<size_t>(end - p) < sizeof x) {
            good = false;
            return x;
        }
        std::memcpy(&x, p, sizeof x);
        p += sizeof x;
        return x;
    }
    std::string str(size_t max)
    {
        const uint16_t n = get<uint16_t>();
        if (!good || n > max || static_cast<size_t>(end - p) < n) {
            good = false;
            return {};
        }
        std::string s(reinterpret_cast<const char *>(p), n);
        p += n;
        return s;
    }
};

void put_object(std::vector<uint8_t> &v, const ObjectInfo &o)
{
    put_str(v, o.name);
    put_str(v, o.dtype);
    put(v, static_cast<uint32_t>(o.shape.size()));
    for (uint64_t s : o.shape) put(v, s);
    put(v, o.bytes);
    put(v, o.block);
    put(v, o.crc32c);
    put(v, o.generation);
}

bool get_object(Reader &r, ObjectInfo *o)
{
    o->name = r.str(kMaxName);
    o->dtype = r.str(kMaxDtype);
    const uint32_t nd = r.get<uint32_t>();
    if (!r.good || o->name.empty() || nd > kMaxDims) return false;
    o->shape.clear();
    for (uint32_t k = 0; k < nd; k++) o->shape.push_back(r.get<uint64_t>());
    o->bytes = r.get<uint64_t>();
    o->block = r.get<uint64_t>();
    o->crc32c = r.get<uint32_t>();
    o->generation = r.get<uint64_t>();
    return r.good;
}

void put_reservation(std::vector<uint8_t> &v, const Reservation &x)
{
    put(v, x.id);
    put(v, x.block);
    put(v, x.blocks);
    put(v, x.time);
    put_str(v, x.owner.substr(0, kMaxOwner));
}

bool get_reservation(Reader &r, Reservation *x)
{
    x->id = r.get<uint64_t>();
    x->block = r.get<uint64_t>();
    x->blocks = r.get<uint64_t>();
    x->time = r.get<uint64_t>();
    x->owner = r.str(kMaxOwner);
    return r.good;
}

// A journal entry of this type, its fields to follow.
std::vector<uint8_t> entry(uint8_t type)
{
    std::vector<uint8_t> v;
    v.reserve(64);
    v.push_back(type);
    return v;
}

}  // namespace

void check_entry(const std::string &name, const std::string &dtype, const std::vector<uint64_t> &shape)
{
    if (name.empty() || name.size() > kMaxName || name.find('\0') != std::string::npos) {
        throw Error("object name '" + name + "': 1 to 255 bytes, no NUL", EINVAL);
    }
    if (dtype.size() > kMaxDtype) {
        throw Error("object '" + name + "': dtype '" + dtype + "' is longer than " + std::to_string(kMaxDtype) +
                        " bytes",
                    EINVAL);
    }
    if (shape.size() > kMaxDims) {
        throw Error("object '" + name + "': " + std::to_string(shape.size()) + " dimensions (at most " +
                        std::to_string(kMaxDims) + ")",
                    EINVAL);
    }
}

std::vector<uint8_t> encode(const Contents &c)
{
    std::vector<uint8_t> v;
    put(v, static_cast<uint32_t>(c.objects.size()));
    for (const auto &[name, o] : c.objects) put_object(v, o);
    put(v, static_cast<uint32_t>(c.reservations.size()));
    for (const auto &[id, x] : c.reservations) put_reservation(v, x);
    return v;
}

bool decode(const uint8_t *p, size_t n, uint32_t format, Contents *out)
{
    if (format != kFormat1 && format != kFormat2) return false;
    Reader r{p, p + n};
    *out = Contents{};
    const uint32_t objects = r.get<uint32_t>();
    for (uint32_t i = 0; i < objects && r.good; i++) {
        ObjectInfo o;
        if (!get_object(r, &o) || out->objects.count(o.name)) return false;
        out->objects[o.name] = std::move(o);
    }
    if (format == kFormat2) {
        const uint32_t reservations = r.get<uint32_t>();
        for (uint32_t i = 0; i < reservations && r.good; i++) {
            Reservation x;
            if (!get_reservation(r, &x) || out->reservations.count(x.id)) return false;
            out->reservations[x.id] = std::move(x);
        }
    }
    return r.good && r.p == r.end;
}

std::vector<uint8_t> put_entry(const ObjectInfo &o, uint64_t reservation)
{
    std::vector<uint8_t> v = entry(kPut);
    put_object(v, o);
    put(v, reservation);
    return v;
}

std::vector<uint8_t> remove_entry(const std::string &name)
{
    std::vector<uint8_t> v = entry(kRemove);
    put_str(v, name);
    return v;
}

std::vector<uint8_t> reserve_entry(const Reservation &x)
{
    std::vector<uint8_t> v = entry(kReserve);
    put_reservation(v, x);
    return v;
}

std::vector<uint8_t> release_entry(uint64_t id)
{
    std::vector<uint8_t> v = entry(kRelease);
    put(v, id);
    return v;
}

bool apply(const uint8_t *p, size_t n, Contents *c)
{
    Reader r{p, p + n};
    while (r.good && r.p < r.end) {
        switch (r.get<uint8_t>()) {
        case kPut: {
            ObjectInfo o;
            if (!get_object(r, &o)) return false;
            const uint64_t reservation = r.get<uint64_t>();
            c->reservations.erase(reservation);  // its space is the object's now
            c->objects[o.name] = std::move(o);
            break;
        }
        case kRemove: c->objects.erase(r.str(kMaxName)); break;
        case kReserve: {
            Reservation x;
            if (!get_reservation(r, &x)) return false;
            c->reservations[x.id] = std::move(x);
            break;
        }
        case kRelease: c->reservations.erase(r.get<uint64_t>()); break;
        default: return false;
        }
    }
    return r.good;
}

}  // namespace csd::catalog
