// SPDX-License-Identifier: MIT
// npy.hpp - numpy dtypes as the object store records them, and .npy files (versions 1-3,
// C order). One implementation for csdctl, csd::ObjectStore, csd::DriveSet and Python.
//
// A dtype is kept as text: a numpy type string ("<f4", ">i8", "|V16", "<M8[ns]") for a
// plain dtype, or, for a structured one, the list a .npy header's 'descr' holds, as numpy
// writes it ("[('id', '<u4'), ('b', [('x', '>f8')]), ('', '|V4'), ('c', '<f4', (2,))]":
// nested structures, subarray fields, ('title', 'name') pairs, and padding as fields named
// ''). Whatever numpy can save to a .npy file without pickling can be described; object
// dtypes and anything else that is not plain bytes cannot, and are refused.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace csd::npy {

struct Field;

// A parsed dtype: a plain type, or a structure of fields laid out one after another.
struct Dtype {
    std::string type;           // canonical type string ("<f4", "|u1", "|S3"); empty for a structure
    std::vector<Field> fields;  // a structure's fields in order, padding included
    uint64_t itemsize = 0;      // bytes per element
    bool structured() const { return type.empty(); }
};

// One field of a structure.
struct Field {
    std::string name;              // '' for padding (a void field numpy leaves unnamed)
    std::string title;             // numpy's optional field title; empty if none
    Dtype dtype;
    std::vector<uint64_t> shape;   // a subarray field's shape; empty for a single element
    uint64_t offset = 0;           // bytes from the start of the element
};

// Parses a dtype given as a type string or a .npy 'descr' literal (quoted or not); throws
// csd::Error (EINVAL) saying what is wrong, e.g. for an object dtype ('|O').
Dtype parse_dtype(const std::string &text);
// The canonical text of a dtype (what the store records and stat() returns).
std::string to_text(const Dtype &dt);
// parse_dtype then to_text: the canonical text of a dtype given in any accepted form.
std::string canonical_dtype(const std::string &text);
// Bytes per element of a dtype given as text.
uint64_t itemsize(const std::string &text);
// Bytes an array of this dtype and shape holds; throws csd::Error (EINVAL) on overflow.
uint64_t array_bytes(const Dtype &dt, const std::vector<uint64_t> &shape);

// A tensor as a .npy file holds it: canonical dtype text, shape and the raw bytes.
struct Array {
    std::string dtype;
    std::vector<uint64_t> shape;
    std::vector<uint8_t> data;
};

// A .npy file's header: the array's dtype (canonical text), shape and bytes, and the
// header's own length (where the data starts).
struct Header {
    std::string dtype;
    std::vector<uint64_t> shape;
    uint64_t data_bytes = 0;
    size_t size = 0;
};
// The length of a .npy file's header from its first n bytes (12 suffice; 10 for version
// 1.0); throws csd::Error (EINVAL) if they do not begin a .npy file numpy writes.
size_t header_size(const uint8_t *file, size_t n);
// Parses the header at the start of file[0, n) (n at least header_size()); throws
// csd::Error (EINVAL) saying what is wrong with it. Streaming readers read the data after it.
Header parse_header(const uint8_t *file, size_t n);
// The .npy header (as format() writes it) of an array of this dtype and shape; the data follows it.
std::vector<uint8_t> header(const std::string &dtype, const std::vector<uint64_t> &shape);

// Parses a .npy file; throws csd::Error (EINVAL) saying what is wrong with it.
Array parse(const std::vector<uint8_t> &file);

// A .npy file (version 1.0; 3.0 for a header that is not ASCII) holding data with this
// dtype and shape; throws csd::Error (EINVAL) if the dtype is not one or does not
// account for exactly data.size() bytes with this shape.
std::vector<uint8_t> format(const std::string &dtype, const std::vector<uint64_t> &shape,
                            const std::vector<uint8_t> &data);

}  // namespace csd::npy
