// SPDX-License-Identifier: MIT
// error.cc - csd::Error and status names.
#include "csd/error.hpp"

#include <cstring>

#include "csd_spec.h"
#include "nvme_cs.h"

namespace csd {

std::string status_name(uint16_t status)
{
    if (const char *n = csd_status_name(status)) {
        return n;
    }
    if (const char *n = nvme_cs_status_name(status)) {  // the standard front end's (SCT 1h, 85h-9Bh)
        return n;
    }
    char buf[48];
    std::snprintf(buf, sizeof buf, "Status 0x%03x", CSD_STATUS_CODE(status));
    return buf;
}

static std::string with_status(const std::string &what, uint16_t status)
{
    char hex[16];
    std::snprintf(hex, sizeof hex, "0x%04x", status);
    return what + ": " + status_name(status) + " (NVMe status " + hex + ")";
}

Error::Error(const std::string &what, uint16_t status, uint32_t dw0, uint32_t dw1)
    : std::runtime_error(with_status(what, status)), status_(status), dw0_(dw0), dw1_(dw1)
{
}

Error::Error(const std::string &what, int errnum)
    : std::runtime_error(what + ": " + std::strerror(errnum)), errnum_(errnum)
{
}

Error::Error(const std::string &context, const Error &cause)
    : std::runtime_error(context + ": " + cause.what()), status_(cause.status_), errnum_(cause.errnum_),
      dw0_(cause.dw0_), dw1_(cause.dw1_)
{
}

}  // namespace csd
