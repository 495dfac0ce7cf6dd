// SPDX-License-Identifier: MIT
// transports.hpp - constructors of the backends (internal to libcsd).
#pragma once

#include <memory>
#include <string>

#include "csd/transport.hpp"

namespace csd {

// The in-process device, in libcsd-emu (transport_inproc.cc); libcsd opens it with open_emu.
std::unique_ptr<Transport> make_inproc_transport(const std::string &spec);
std::unique_ptr<Transport> make_kmod_transport(const std::string &spec);
#ifdef CSD_HAVE_PASSTHRU
std::unique_ptr<Transport> make_ioctl_transport(const std::string &path);
std::unique_ptr<Transport> make_uring_transport(const std::string &path, unsigned queue_depth);
#endif

}  // namespace csd

// libcsd-emu's entry point (emu_entry.cc), which libcsd finds with dlsym: the in-process
// device for the part of an emu: path after "emu:"; the caller owns the result.
extern "C" csd::Transport *csd_emu_make_transport(const std::string *spec);
