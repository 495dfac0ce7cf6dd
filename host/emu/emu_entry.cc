// SPDX-License-Identifier: MIT
// emu_entry.cc - libcsd-emu's entry point: the one symbol libcsd looks up (dlsym) after it
// loads this library for an emu: path (host/lib/transports/transport.cc).
#include "transports.hpp"

// Makes the in-process device for the part of an emu: path after "emu:"; throws csd::Error
// as make_inproc_transport does. The caller owns the result.
extern "C" csd::Transport *csd_emu_make_transport(const std::string *spec)
{
    return csd::make_inproc_transport(*spec).release();
}

// The same, read-only where flags has CSD_EMU_READ_ONLY.
extern "C" csd::Transport *csd_emu_make_transport_flags(const std::string *spec, unsigned flags)
{
    return csd::make_inproc_transport(*spec, flags & CSD_EMU_READ_ONLY).release();
}
