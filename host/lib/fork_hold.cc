// SPDX-License-Identifier: MIT
// fork_hold.cc - the fork() handlers of libcsd (fork_hold.hpp).
#include "fork_hold.hpp"

#include <pthread.h>

#include <map>
#include <mutex>
#include <utility>

namespace csd {

namespace {

struct Held {
    std::function<void()> hold;
    std::function<void(bool)> resume;
};

// Never destroyed: a fork() may come while static objects are being destroyed.
std::mutex &registry_mu()
{
    static auto *m = new std::mutex;
    return *m;
}

std::map<std::pair<int, const void *>, Held> &registry()
{
    static auto *r = new std::map<std::pair<int, const void *>, Held>;
    return *r;
}

void prepare()
{
    registry_mu().lock();  // held across fork(): nothing registers or leaves meanwhile
    for (auto &[k, h] : registry()) h.hold();
}

void resume(bool child)
{
    for (auto it = registry().rbegin(); it != registry().rend(); ++it) it->second.resume(child);
    registry_mu().unlock();
}

}  // namespace

void fork_hold_add(const void *key, ForkLevel level, std::function<void()> hold, std::function<void(bool)> resume_fn)
{
    static std::once_flag once;
    std::call_once(once, [] { pthread_atfork(prepare, [] { resume(false); }, [] { resume(true); }); });
    std::lock_guard<std::mutex> g(registry_mu());
    registry()[{static_cast<int>(level), key}] = Held{std::move(hold), std::move(resume_fn)};
}

void fork_hold_remove(const void *key)
{
    std::lock_guard<std::mutex> g(registry_mu());
    for (auto it = registry().begin(); it != registry().end(); ++it) {
        if (it->first.second == key) {
            registry().erase(it);
            return;
        }
    }
}

}  // namespace csd
