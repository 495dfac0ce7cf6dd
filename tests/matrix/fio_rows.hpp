// SPDX-License-Identifier: MIT
// The feature matrix's rows through fio's csd engine (host/fio-engine, docs/fio.md): jobs of
// fio run as the way's user over the way's device, their effect on the namespace checked
// against the stamps (matrix_driver.hpp).
#pragma once

#include <string>

#include "matrix_driver.hpp"

namespace csd_matrix {

// Runs one row as a fio job of the engine at engine over device: the reference result, a
// refusal (the errno fio reports, by name) or a failure.
Outcome fio_row(const std::string &row, Ctx &c, const std::string &engine, const std::string &device);

}  // namespace csd_matrix
