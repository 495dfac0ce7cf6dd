// SPDX-License-Identifier: MIT
// error.hpp - libcsd's exception: an NVMe status (named in words) or an OS error.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace csd {

// English name of an NVMe status value ("Invalid Program", "LBA Out of Range").
std::string status_name(uint16_t status);

// Thrown by every libcsd call that fails; what() names the status in words.
class Error : public std::runtime_error {
public:
    // A command completed with a non-zero NVMe status.
    Error(const std::string &what, uint16_t status, uint32_t dw0 = 0, uint32_t dw1 = 0);
    // An operating-system or usage failure (errno value, or EINVAL for bad arguments).
    Error(const std::string &what, int errnum);
    // The same failure with context in front ("filter on drive 1 (/dev/ng1n1): ..."),
    // keeping its status, errno and completion Dwords.
    Error(const std::string &context, const Error &cause);
    uint16_t status() const { return status_; }    // NVMe status field, 0 if none
    uint16_t code() const { return status_ & 0x7FF; }  // SCT/SC without DNR
    int errnum() const { return errnum_; }          // errno value, 0 if none
    uint32_t dw0() const { return dw0_; }
    uint32_t dw1() const { return dw1_; }

private:
    uint16_t status_ = 0;
    int errnum_ = 0;
    uint32_t dw0_ = 0, dw1_ = 0;
};

}  // namespace csd
