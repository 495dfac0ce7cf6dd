// SPDX-License-Identifier: MIT
// store_internal.hpp - what the store's source files (store.cc, store_stream.cc) share.
#pragma once

#include <string>

#include "csd/device.hpp"

namespace csd {

// Throws EROFS for what (a write of the store) where the device was opened read-only.
void refuse_read_only(const Device &dev, const std::string &what);

}  // namespace csd
