// SPDX-License-Identifier: MIT
// transports.hpp - constructors of the backends (internal to libcsd).
#pragma once

#include <memory>
#include <string>

#include "csd/transport.hpp"

namespace csd {

std::unique_ptr<Transport> make_inproc_transport(const std::string &spec);
std::unique_ptr<Transport> make_kmod_transport(const std::string &spec);
#ifdef CSD_HAVE_PASSTHRU
std::unique_ptr<Transport> make_ioctl_transport(const std::string &path);
std::unique_ptr<Transport> make_uring_transport(const std::string &path, unsigned queue_depth);
#endif

}  // namespace csd
