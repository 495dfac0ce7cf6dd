// SPDX-License-Identifier: MIT
/* A plug-in for another interface version: realize must refuse it. */
#include "csd_plugin.h"

static struct csd_program_result run(const struct csd_program_call *call)
{
    struct csd_program_result r = {0, call->nr_ranges, 0};
    return r;
}

static const struct csd_plugin plugin = {CSD_PLUGIN_ABI_VERSION + 1, 0x41, "bad_abi", 0, -1, run};

const struct csd_plugin *csd_plugin_entry(void) { return &plugin; }
