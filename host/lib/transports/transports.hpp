// SPDX-License-Identifier: MIT
// transports.hpp - constructors of the backends (internal to libcsd).
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "csd/transport.hpp"

namespace csd {

// The in-process device, in libcsd-emu (transport_inproc.cc); libcsd opens it with open_emu.
// read_only: the backing file opened O_RDONLY (it must exist).
std::unique_ptr<Transport> make_inproc_transport(const std::string &spec, bool read_only = false);
std::unique_ptr<Transport> make_kmod_transport(const std::string &spec);
// Host mode over a plain drive, in libcsd-emu (transport_host.cc): the device core in this
// process with slm_size bytes of SLM and `units` compute units; on_bus sees every command
// sent to the drive. libcsd opens it with open_host_mode.
std::unique_ptr<Transport> make_host_transport(std::unique_ptr<Transport> drive, uint64_t slm_size, uint32_t units,
                                               std::function<void(const Command &)> on_bus);
// The same through libcsd-emu, loaded on first use; throws csd::Error naming it if missing.
std::unique_ptr<Transport> open_host_mode(std::unique_ptr<Transport> drive, uint64_t slm_size, uint32_t units,
                                          std::function<void(const Command &)> on_bus);
#ifdef CSD_HAVE_PASSTHRU
// read_only: the namespace's node opened O_RDONLY.
std::unique_ptr<Transport> make_ioctl_transport(const std::string &path, bool read_only = false);
std::unique_ptr<Transport> make_uring_transport(const std::string &path, unsigned queue_depth, bool read_only = false);
#endif

}  // namespace csd

// libcsd-emu's entry point (emu_entry.cc), which libcsd finds with dlsym: the in-process
// device for the part of an emu: path after "emu:"; the caller owns the result.
extern "C" csd::Transport *csd_emu_make_transport(const std::string *spec);
// libcsd-emu's host-mode entry point (transport_host.cc): host mode over drive, which it
// owns from the call on; the caller owns the result.
extern "C" csd::Transport *csd_emu_make_host_transport(csd::Transport *drive, uint64_t slm_size, uint32_t units,
                                                       const std::function<void(const csd::Command &)> *on_bus);
// The same with flags: CSD_EMU_READ_ONLY opens the backing file read-only.
constexpr unsigned CSD_EMU_READ_ONLY = 1;
extern "C" csd::Transport *csd_emu_make_transport_flags(const std::string *spec, unsigned flags);
