// SPDX-License-Identifier: MIT
// csd-options - prints the device core's option table (csd_config.h):
//   csd-options markdown   the docs' table (docs/command-set.md, between its markers)
//   csd-options qemu|emu   the names one embedding offers, one a line (QEMU's with "csd.")
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "csd_config.h"

// Prints what the argument asks for; 2 for a usage error.
int main(int argc, char **argv)
{
    const char *what = argc == 2 ? argv[1] : "";
    if (std::strcmp(what, "markdown") == 0) {
        char *md = csd_options_markdown();
        std::fputs(md, stdout);
        std::free(md);
        return 0;
    }
    const bool qemu = std::strcmp(what, "qemu") == 0;
    if (!qemu && std::strcmp(what, "emu") != 0) {
        std::fprintf(stderr, "usage: csd-options markdown|qemu|emu\n");
        return 2;
    }
    for (unsigned i = 0; const csd_option *o = csd_option_at(i); i++) {
        if (o->embeddings & (qemu ? CSD_OPTION_QEMU : CSD_OPTION_EMU)) std::printf("%s%s\n", qemu ? "csd." : "", o->name);
    }
    return 0;
}
