/* SPDX-License-Identifier: MIT */
// plugins.h - operator plug-ins (spec §9): shared objects loaded at start-up, each adding
// one program (0040h..00FFh) through the public interface of csd_plugin.h.
#pragma once

#include <string>
#include <vector>

#include "csd_plugin.h"

namespace csd::core {

class Plugins {
public:
    Plugins() = default;
    Plugins(const Plugins &) = delete;
    Plugins &operator=(const Plugins &) = delete;
    ~Plugins();

    // Loads every *.so in dir (in name order); false with *error naming the file and the
    // problem (no entry point, another ABI version, an id outside 0040h..00FFh or taken,
    // a bad name). Nothing stays loaded after a failure.
    bool load_dir(const std::string &dir, std::string *error);
    // The plug-in with this id, or nullptr.
    const csd_plugin *find(uint16_t id) const;
    // All loaded plug-ins, in id order.
    std::vector<const csd_plugin *> list() const;

private:
    struct Loaded {
        void *handle;
        const csd_plugin *plugin;
        std::string file;
    };
    void unload_all();
    std::vector<Loaded> loaded_;
};

}  // namespace csd::core
