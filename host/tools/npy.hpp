// npy.hpp - NumPy's .npy file format (versions 1-3, C order) for csdctl put/get.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace csd::npy {

// A tensor as a .npy file holds it: dtype string ("<f4"), shape and the raw bytes.
struct Array {
    std::string dtype;
    std::vector<uint64_t> shape;
    std::vector<uint8_t> data;
};

// Parses a .npy file; throws std::runtime_error saying what is wrong with it.
Array parse(const std::vector<uint8_t> &file);

// A version 1.0 .npy file holding data with this dtype and shape.
std::vector<uint8_t> format(const std::string &dtype, const std::vector<uint64_t> &shape,
                            const std::vector<uint8_t> &data);

}  // namespace csd::npy
