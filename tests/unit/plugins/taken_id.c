// SPDX-License-Identifier: MIT
/* A plug-in declaring id 05h (reduce's, outside the plug-in range): realize must refuse it. */
#include "csd_plugin.h"

static struct csd_program_result run(const struct csd_program_call *call)
{
    struct csd_program_result r = {0, call->nr_ranges, 0};
    return r;
}

static const struct csd_plugin plugin = {CSD_PLUGIN_ABI_VERSION, 0x05, "taken_id", 0, -1, run};

const struct csd_plugin *csd_plugin_entry(void) { return &plugin; }
