// SPDX-License-Identifier: MIT
// mapped_copy.hpp - a copy out of a file mapping that a page the kernel cannot give (the file
// truncated under the mapping, or a disk error reading the page in: SIGBUS) fails instead of
// ending the process.
#pragma once

#include <cstddef>

namespace csd {

// Copies len bytes from src (inside a file mapping) to dst; false where a page of src could
// not be read (dst then holds part of the bytes). Another SIGBUS goes to the action there was.
bool copy_from_mapping(void *dst, const void *src, size_t len);

}  // namespace csd
