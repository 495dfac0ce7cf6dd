// SPDX-License-Identifier: MIT
// plugins.cc - loading operator plug-ins with dlopen and checking what they declare.
#include "plugins.h"

#include <dirent.h>
#include <dlfcn.h>

#include <algorithm>
#include <cstring>

#include "program.h"

namespace csd::core {

Plugins::~Plugins() { unload_all(); }

void Plugins::unload_all()
{
    for (auto &l : loaded_) dlclose(l.handle);
    loaded_.clear();
}

bool Plugins::load_dir(const std::string &dir, std::string *error)
{
    DIR *d = opendir(dir.c_str());
    if (!d) {
        *error = "plug-in directory " + dir + ": " + std::strerror(errno);
        return false;
    }
    std::vector<std::string> files;
    while (dirent *e = readdir(d)) {
        const std::string n = e->d_name;
        if (n.size() > 3 && n.compare(n.size() - 3, 3, ".so") == 0) files.push_back(dir + "/" + n);
    }
    closedir(d);
    std::sort(files.begin(), files.end());
    for (const auto &f : files) {
        void *h = dlopen(f.c_str(), RTLD_NOW | RTLD_LOCAL);
        if (!h) {
            *error = "plug-in " + f + " does not load: " + dlerror();
            unload_all();
            return false;
        }
        auto entry = reinterpret_cast<csd_plugin_entry_fn>(dlsym(h, CSD_PLUGIN_ENTRY));
        const csd_plugin *p = entry ? entry() : nullptr;
        std::string why;
        if (!entry) why = "has no " CSD_PLUGIN_ENTRY " function";
        else if (!p) why = "returned no description";
        else if (p->abi_version != CSD_PLUGIN_ABI_VERSION) {
            why = "is for plug-in interface version " + std::to_string(p->abi_version) + ", this device has " +
                  std::to_string(CSD_PLUGIN_ABI_VERSION);
        } else if (p->id < CSD_PLUGIN_FIRST || p->id > CSD_PLUGIN_LAST) {
            why = "declares id " + std::to_string(p->id) + ", outside 0040h..00FFh";
        } else if (find_program(p->id) || find(p->id)) {
            why = "declares id " + std::to_string(p->id) + ", which another program has";
        } else if (!p->name || !*p->name || std::strlen(p->name) > 23) {
            why = "has no name or one longer than 23 bytes";
        } else if (!p->run) {
            why = "has no run function";
        }
        if (!why.empty()) {
            *error = "plug-in " + f + " " + why;
            dlclose(h);
            unload_all();
            return false;
        }
        loaded_.push_back({h, p, f});
    }
    std::sort(loaded_.begin(), loaded_.end(), [](const Loaded &a, const Loaded &b) { return a.plugin->id < b.plugin->id; });
    return true;
}

const csd_plugin *Plugins::find(uint16_t id) const
{
    for (const auto &l : loaded_) {
        if (l.plugin->id == id) return l.plugin;
    }
    return nullptr;
}

std::vector<const csd_plugin *> Plugins::list() const
{
    std::vector<const csd_plugin *> v;
    for (const auto &l : loaded_) v.push_back(l.plugin);
    return v;
}

}  // namespace csd::core
