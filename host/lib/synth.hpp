// SPDX-License-Identifier: MIT
// synth.hpp - what the in-process and csd.ko transports share: sizes in their open
// strings ("64M") and the Identify pages they answer themselves.
#pragma once

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>

#include "csd/error.hpp"
#include "csd/transport.hpp"
#include "csd_spec.h"

namespace csd {

// "4096", "64K", "64M", "1G" -> bytes; throws csd::Error (EINVAL) naming what was given.
inline uint64_t parse_size(const std::string &v)
{
    size_t pos = 0;
    uint64_t n;
    try {
        n = std::stoull(v, &pos);
    } catch (const std::logic_error &) {
        throw Error("bad size '" + v + "' (a number with K, M or G)", EINVAL);
    }
    const std::string unit = v.substr(pos);
    if (unit == "K" || unit == "k") n <<= 10;
    else if (unit == "M" || unit == "m") n <<= 20;
    else if (unit == "G" || unit == "g") n <<= 30;
    else if (!unit.empty()) throw Error("bad size '" + v + "' (a number with K, M or G)", EINVAL);
    return n;
}

// Identify Controller (4096 bytes): model, MDTS and the CSD signature.
inline void fill_identify_controller(uint8_t *p, const char *model, uint8_t mdts)
{
    std::memset(p, 0, 4096);
    std::memset(p + 24, ' ', 40);
    std::memcpy(p + 24, model, std::min<size_t>(std::strlen(model), 40));
    p[77] = mdts;
    std::memcpy(p + CSD_ID_VS_OFFSET, CSD_ID_SIGNATURE, 4);
}

// Identify Namespace (4096 bytes): size, capacity, use and LBA format 0.
inline void fill_identify_namespace(uint8_t *p, const NamespaceInfo &ns)
{
    std::memset(p, 0, 4096);
    std::memcpy(p, &ns.lba_count, 8);
    std::memcpy(p + 8, &ns.lba_count, 8);
    std::memcpy(p + 16, &ns.lba_count, 8);
    p[128 + 2] = static_cast<uint8_t>(__builtin_ctz(ns.lba_size));
}

}  // namespace csd
