// SPDX-License-Identifier: MIT
// error.cc - csd::Error and status names.
#include "csd/error.hpp"

#include <cstring>

#include "csd_spec.h"
#include "nvme_cs.h"

namespace csd {

// Media and Data Integrity Errors (SCT 2h) a drive's Read or Write may end with (NVMe base
// specification), named where the command sets' tables do not.
static const char *media_status_name(uint16_t status)
{
    switch (CSD_STATUS_CODE(status)) {
    case 0x280: return "Write Fault";
    case 0x281: return "Unrecovered Read Error";
    case 0x282: return "End-to-end Guard Check Error";
    case 0x283: return "End-to-end Application Tag Check Error";
    case 0x284: return "End-to-end Reference Tag Check Error";
    case 0x286: return "Access Denied";
    case 0x287: return "Deallocated or Unwritten Logical Block";
    default: return nullptr;
    }
}

std::string status_name(uint16_t status)
{
    if (const char *n = csd_status_name(status)) {
        return n;
    }
    if (const char *n = nvme_cs_status_name(status)) {  // the standard front end's (SCT 1h, 85h-9Bh)
        return n;
    }
    if (const char *n = media_status_name(status)) {
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
