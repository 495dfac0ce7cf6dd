// SPDX-License-Identifier: MIT
// The feature matrix's rows through the SNIA Computational Storage API (cs.h, libcsd-snia):
// the same cases and references as libcsd's rows (matrix_driver.hpp), sent as storage, copy
// and compute requests of one CSx.
#pragma once

#include <cstdint>
#include <string>

#include "matrix_driver.hpp"

namespace csd_matrix {

// Opens path as a CSx and its first CSE; false with *refused saying why not.
bool snia_open(const std::string &path, Outcome *refused);
// Runs one row through the open CSx: the reference result, a refusal (the SNIA status's name,
// the drive's status in words in the detail) or a failure.
Outcome snia_row(const std::string &row, Ctx &c);
// Closes what snia_open opened.
void snia_close();

}  // namespace csd_matrix
