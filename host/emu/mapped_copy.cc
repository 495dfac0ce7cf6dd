// SPDX-License-Identifier: MIT
// mapped_copy.cc - copy_from_mapping (mapped_copy.hpp): the copy runs with this thread's jump
// buffer set; the process's SIGBUS handler (installed with the first copy, the earlier
// action kept) jumps back to it, and any other SIGBUS gets the earlier action.
#include "mapped_copy.hpp"

#include <csetjmp>
#include <csignal>
#include <cstring>
#include <mutex>

namespace csd {

namespace {

// this thread's copy in progress; volatile: memcpy is a builtin the compiler knows reads no
// variable, so it would drop the store before it as dead
thread_local sigjmp_buf *volatile t_copying = nullptr;
struct sigaction g_before;                     // SIGBUS's action before this handler

void on_sigbus(int sig, siginfo_t *info, void *)
{
    if (sigjmp_buf *jb = t_copying) {
        t_copying = nullptr;
        siglongjmp(*jb, 1);
    }
    // not a copy of ours: the earlier action, for the same fault again once this returns
    sigaction(SIGBUS, &g_before, nullptr);
    if (info->si_code <= 0) raise(sig);  // sent, not a fault: nothing repeats it
}

void install()
{
    struct sigaction sa = {};
    sa.sa_sigaction = on_sigbus;
    sa.sa_flags = SA_SIGINFO | SA_NODEFER | SA_ONSTACK;  // NODEFER: the jump leaves SIGBUS unblocked
    sigemptyset(&sa.sa_mask);
    sigaction(SIGBUS, &sa, &g_before);
}

}  // namespace

bool copy_from_mapping(void *dst, const void *src, size_t len)
{
    static std::once_flag once;
    std::call_once(once, install);
    sigjmp_buf jb;
    if (sigsetjmp(jb, 0)) return false;  // the signal mask is not saved: no system call per copy
    t_copying = &jb;
    std::memcpy(dst, src, len);
    t_copying = nullptr;
    return true;
}

}  // namespace csd
