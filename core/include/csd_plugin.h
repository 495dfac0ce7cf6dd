/* SPDX-License-Identifier: MIT */
/*
 * csd_plugin.h - the interface of nvme-csd operator plug-ins (command set §9), version 1.
 *
 * A plug-in is a shared object that whoever starts the device loads at start-up
 * (QEMU: csd.plugin-dir=DIR; in-process device: emu:FILE?plugins=DIR). It adds one
 * program with an id in 0040h..00FFh, runnable with Execute like the built-in ones, and
 * listed in the capabilities log with type 2. It is the interface the built-in programs
 * are written against: the device checks that every range lies inside SLM and that the
 * parameters have the declared size, then calls run() on a compute unit with the ranges
 * as host memory. run() validates the rest (counts, sizes against ranges), must not touch
 * memory outside the ranges, and polls *cancel in long loops (stopping with
 * CSD_STATUS_ABORT_REQUESTED once it is non-zero). Plug-ins are trusted like the device
 * itself: the guest cannot load them.
 *
 * A plug-in exports one function, csd_plugin_entry, returning its description.
 */
#ifndef CSD_PLUGIN_H
#define CSD_PLUGIN_H

#include <stdint.h>

#include "csd_spec.h"

#ifdef __cplusplus
extern "C" {
#endif

#define CSD_PLUGIN_ABI_VERSION 1
#define CSD_PLUGIN_ENTRY "csd_plugin_entry"
#define CSD_PLUGIN_ANY_PARAMS 0xFFFFFFFFu /* param_len: the plug-in checks the size itself */

/* A byte range of SLM, already checked to lie inside it (data may be NULL if len is 0). */
struct csd_span {
    uint8_t *data;
    uint64_t len;
};

/* The arguments of one Execute: its ranges in descriptor order and its parameter bytes. */
struct csd_program_call {
    const struct csd_span *ranges;
    uint32_t nr_ranges;
    const uint8_t *params;
    uint32_t param_len;
    const int *cancel; /* never NULL; non-zero (read it atomically) once the program should stop */
};

/* What a program returns: an NVMe status value (DNR set for errors) and Dwords 0 and 1. */
struct csd_program_result {
    uint16_t status;
    uint32_t dw0;
    uint32_t dw1;
};

/* A plug-in's description. */
struct csd_plugin {
    uint32_t abi_version;     /* CSD_PLUGIN_ABI_VERSION */
    uint16_t id;              /* 0040h..00FFh */
    const char *name;         /* at most 23 bytes, as the capabilities log lists it */
    uint32_t param_len;       /* exact bytes of parameters, or CSD_PLUGIN_ANY_PARAMS */
    int32_t zero_length_range; /* index of a range that may be empty, or -1 */
    struct csd_program_result (*run)(const struct csd_program_call *call);
};

/* The one symbol a plug-in exports. */
typedef const struct csd_plugin *(*csd_plugin_entry_fn)(void);

#ifdef __cplusplus
}
#endif

#endif /* CSD_PLUGIN_H */
