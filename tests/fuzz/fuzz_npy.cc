// SPDX-License-Identifier: MIT
// libFuzzer target: numpy dtype text and .npy files (csd/npy.hpp), what csdctl put reads
// and the object store records. Any bytes must give csd::Error, or a dtype whose canonical
// text is a fixed point with the same item size, or an array whose bytes its dtype and
// shape describe exactly and that format() writes back to the same array; any crash,
// sanitizer report, other exception or disagreement is a finding.
#include <cstdlib>
#include <string>
#include <vector>

#include "csd/error.hpp"
#include "csd/npy.hpp"

namespace npy = csd::npy;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    const uint8_t mode = data[0] % 2;
    data++;
    size--;
    if (mode == 0) {  // dtype text, as ObjectStore::put takes it
        const std::string text(reinterpret_cast<const char *>(data), size);
        std::string c;
        try {
            c = npy::canonical_dtype(text);
        } catch (const csd::Error &) {
            return 0;
        }
        if (npy::canonical_dtype(c) != c || npy::itemsize(c) != npy::itemsize(text)) std::abort();
        return 0;
    }
    npy::Array a;  // a .npy file, as csdctl put reads it
    try {
        a = npy::parse(std::vector<uint8_t>(data, data + size));
    } catch (const csd::Error &) {
        return 0;
    }
    if (a.data.size() != npy::array_bytes(npy::parse_dtype(a.dtype), a.shape)) std::abort();
    const npy::Array b = npy::parse(npy::format(a.dtype, a.shape, a.data));
    if (b.dtype != a.dtype || b.shape != a.shape || b.data != a.data) std::abort();
    return 0;
}
