// SPDX-License-Identifier: MIT
// store_catalog.hpp - the object store's catalog and journal encodings (docs/store.md):
// what a store holds (objects, reservations), written as a full catalog or as journal
// entries in the superblock; decoding checks every length, so any bytes give false,
// never a crash.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "csd/store.hpp"

namespace csd::catalog {

constexpr size_t kMaxName = 255, kMaxDtype = 255, kMaxDims = 32, kMaxOwner = 64;
constexpr uint32_t kFormat1 = 1;  // objects only (store version 1)
constexpr uint32_t kFormat2 = 2;  // objects, then reservations

// What the catalog holds.
struct Contents {
    std::map<std::string, ObjectInfo> objects;
    std::map<uint64_t, Reservation> reservations;
};

// Throws csd::Error (EINVAL) for an entry the catalog could not read back.
void check_entry(const std::string &name, const std::string &dtype, const std::vector<uint64_t> &shape);

// A full catalog in format 2.
std::vector<uint8_t> encode(const Contents &c);
// Decodes a full catalog of the given format; false if the bytes are not one.
bool decode(const uint8_t *p, size_t n, uint32_t format, Contents *out);

// Journal entries (appended to a superblock's journal).
std::vector<uint8_t> put_entry(const ObjectInfo &o, uint64_t reservation);
std::vector<uint8_t> remove_entry(const std::string &name);
std::vector<uint8_t> reserve_entry(const Reservation &r);
std::vector<uint8_t> release_entry(uint64_t id);
// Largest encoded reservation entry (space kept in the journal for compaction).
constexpr size_t kMaxReserveEntry = 1 + 4 * 8 + 2 + kMaxOwner;
// Applies journal entries to c in order; false if the bytes are not well-formed entries.
bool apply(const uint8_t *p, size_t n, Contents *c);

}  // namespace csd::catalog
