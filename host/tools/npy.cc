// npy.cc - reading and writing .npy files (the header is a Python dict literal).
#include "npy.hpp"

#include <cstring>
#include <sstream>
#include <stdexcept>

namespace csd::npy {

namespace {

// The text after 'key': in the header dict.
std::string field(const std::string &header, const std::string &key)
{
    const size_t k = header.find("'" + key + "'");
    if (k == std::string::npos) throw std::runtime_error(".npy header has no '" + key + "'");
    const size_t colon = header.find(':', k);
    if (colon == std::string::npos) throw std::runtime_error(".npy header: no value for '" + key + "'");
    return header.substr(colon + 1);
}

}  // namespace

Array parse(const std::vector<uint8_t> &f)
{
    if (f.size() < 10 || std::memcmp(f.data(), "\x93NUMPY", 6) != 0) throw std::runtime_error("not a .npy file");
    const int major = f[6];
    size_t hlen, hstart;
    if (major == 1) {
        hlen = f[8] | f[9] << 8;
        hstart = 10;
    } else {
        if (f.size() < 12) throw std::runtime_error("truncated .npy header");
        hlen = f[8] | f[9] << 8 | f[10] << 16 | static_cast<size_t>(f[11]) << 24;
        hstart = 12;
    }
    if (hstart + hlen > f.size()) throw std::runtime_error("truncated .npy header");
    const std::string h(reinterpret_cast<const char *>(f.data()) + hstart, hlen);
    Array out;
    std::string d = field(h, "descr");
    d = d.substr(d.find('\'') + 1);
    out.dtype = d.substr(0, d.find('\''));
    const std::string fortran = field(h, "fortran_order");
    if (fortran.find("True") < fortran.find(',')) throw std::runtime_error(".npy in Fortran order is not supported");
    std::string s = field(h, "shape");
    const size_t open = s.find('('), close = s.find(')');
    if (open == std::string::npos || close == std::string::npos || close < open) {
        throw std::runtime_error(".npy header: shape is not a tuple");
    }
    s = s.substr(open + 1, close - open - 1);
    std::stringstream ss(s);
    std::string item;
    while (std::getline(ss, item, ',')) {
        if (item.find_first_not_of(" ") == std::string::npos) continue;
        try {
            out.shape.push_back(std::stoull(item));
        } catch (const std::logic_error &) {
            throw std::runtime_error(".npy header: shape entry '" + item + "' is not a number");
        }
    }
    out.data.assign(f.begin() + static_cast<long>(hstart + hlen), f.end());
    return out;
}

std::vector<uint8_t> format(const std::string &dtype, const std::vector<uint64_t> &shape,
                            const std::vector<uint8_t> &data)
{
    std::string s = "(";
    for (size_t i = 0; i < shape.size(); i++) {
        s += std::to_string(shape[i]) + (shape.size() == 1 ? "," : i + 1 < shape.size() ? ", " : "");
    }
    s += ")";
    std::string h = "{'descr': '" + dtype + "', 'fortran_order': False, 'shape': " + s + ", }";
    while ((10 + h.size() + 1) % 64) h += ' ';
    h += '\n';
    std::vector<uint8_t> f = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, static_cast<uint8_t>(h.size()),
                              static_cast<uint8_t>(h.size() >> 8)};
    f.insert(f.end(), h.begin(), h.end());
    f.insert(f.end(), data.begin(), data.end());
    return f;
}

}  // namespace csd::npy
