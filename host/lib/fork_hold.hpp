// SPDX-License-Identifier: MIT
// fork_hold.hpp - what libcsd holds still across fork() (internal). A child forked after
// a Device was opened may go on using it, and the parent's other threads may be in the
// middle of a command or a store update at that moment: a registered object is held
// before fork() (it returns with nothing of the object in use, and lets nothing start)
// and resumed after it, in the parent and in the child.
#pragma once

#include <functional>

namespace csd {

// The order of holding: a store's update runs device commands, so stores are held first
// (while their devices still run the commands of updates in progress); a device that
// sends commands to another (host mode's core over the plain drive) before that one; an
// SLM allocator, whose holders take no other lock, last; resumed in reverse.
enum class ForkLevel { store = 0, outer_device = 1, device = 2, allocator = 3 };

// Registers `key` (until fork_hold_remove): hold() before every fork() of the process,
// resume(child) after it in the parent (false) and in the child (true).
void fork_hold_add(const void *key, ForkLevel level, std::function<void()> hold, std::function<void(bool child)> resume);

// Unregisters `key`; waits for a fork() under way.
void fork_hold_remove(const void *key);

}  // namespace csd
