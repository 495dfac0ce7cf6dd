/* SPDX-License-Identifier: MIT */
/*
 * csd_config.h - the device's configuration options, one table for every embedding:
 * QEMU's csd.<name> properties and the in-process device's emu: options are both read
 * from it (name, type, default, range, help) and parsed and checked by it, so that a
 * name, a default or an error message cannot differ between them. Adding an option or a
 * timing-model resource is one row of the table (core/src/config.cc) and its
 * field below; the embeddings list the table and change nothing. The docs' option table
 * is generated from it (csd_options_markdown; `csd-options markdown`).
 */
#ifndef CSD_CONFIG_H
#define CSD_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "csd_core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* How an option's value is written. */
enum csd_option_type {
    CSD_OPTION_BOOL,   /* on/off, 1/0, true/false, yes/no */
    CSD_OPTION_SIZE,   /* bytes, with an optional K, M, G or T suffix (powers of 1024) */
    CSD_OPTION_COUNT,  /* a whole number */
    CSD_OPTION_TEXT,   /* a string (a path) */
    CSD_OPTION_PRESET, /* the name of a timing-model preset */
    CSD_OPTION_RATE,   /* a decimal number >= 0 (GB/s or GFLOP/s) */
    CSD_OPTION_NS,     /* whole nanoseconds >= 0 */
};

/* The embeddings that offer an option. */
#define CSD_OPTION_QEMU 1u /* QEMU's nvme device, as csd.<name> */
#define CSD_OPTION_EMU 2u  /* the in-process device, as emu:FILE?<name>=VALUE */

/* One option as the embeddings list it. */
struct csd_option {
    const char *name;    /* "slm-size", "model.link-gbps" (QEMU adds "csd.") */
    const char *alias;   /* an older emu: spelling still read ("slm"), or NULL */
    enum csd_option_type type;
    const char *def;     /* the default as it would be written; "" when unset means none */
    const char *range;   /* the values accepted, in words */
    const char *help;    /* what it does, one sentence */
    unsigned embeddings; /* CSD_OPTION_QEMU | CSD_OPTION_EMU */
};

/* The most rows the option table has (csd_config's given masks: one bit a row). */
#define CSD_OPTIONS_MAX 64

/* The i-th option, NULL past the last (i < CSD_OPTIONS_MAX). */
const struct csd_option *csd_option_at(unsigned i);
/* The type's name as help output writes it ("size", "bool"). */
const char *csd_option_type_name(enum csd_option_type type);

/* A configuration being read: the table's defaults, then each option given. */
struct csd_config {
    const char *prefix;       /* put before option names in messages ("csd." for QEMU) */
    unsigned embedding;       /* the one reading it: CSD_OPTION_QEMU or CSD_OPTION_EMU */
    uint64_t slm_size;
    uint32_t compute_units;   /* 0 until csd_config_finish: the model's, else 2 */
    char *plugin_dir;         /* NULL: none */
    int vendor;
    int nvme_cs;
    uint32_t nvme_cs_mem_nsid; /* 0: the embedding picks */
    int vendor_io;             /* emu: the vendor data and program commands answer */
    uint32_t lba_size;         /* emu: the namespace's block size */
    uint64_t backing_size;     /* emu: a new backing file's size */
    char *model_preset;        /* NULL: none */
    int exact;                 /* completions exactly at the model's time, whatever the host (docs/timing-model.md) */
    struct csd_model_params model; /* after csd_config_finish: the preset, then each name */
    uint64_t model_given;      /* the model options given (bit: their order in the table) */
    uint64_t given;            /* the options given (bit: their order in the table) */
};

/* Fills *c with the table's defaults; prefix and embedding as in struct csd_config. */
void csd_config_init(struct csd_config *c, const char *prefix, unsigned embedding);
/*
 * Reads one option (its name or alias, without "csd."): 0, or -1 with a message naming
 * it in err for an unknown name, one the embedding does not offer, or a bad value.
 */
int csd_config_set(struct csd_config *c, const char *name, const char *value, char *err,
                   size_t err_len);
/*
 * Reads a list of options "name=value&name=value..." (the in-process device's emu:FILE?
 * spec, after the '?'), each as csd_config_set, in the order given: 0; 1 when an item is
 * "help" (nothing read); -1 with csd_config_set's message, or "option 'x' needs a value".
 */
int csd_config_set_list(struct csd_config *c, const char *list, char *err, size_t err_len);
/*
 * An embedding's options read from a list (csd_config_set_list) into *c, which
 * csd_config_init fills first with no prefix, and finished (csd_config_finish): 0 (the
 * caller clears *c); 1 for "help", -1 with a message in err, *c cleared either way.
 */
int csd_config_read_list(struct csd_config *c, unsigned embedding, const char *list, char *err, size_t err_len);
/*
 * Checks the options together and settles the timing model and the compute units:
 * 0, or -1 with a message in err.
 */
int csd_config_finish(struct csd_config *c, char *err, size_t err_len);
/* Whether any option was given (csd_config_set succeeded). */
int csd_config_any_given(const struct csd_config *c);
/* Frees what *c holds. */
void csd_config_clear(struct csd_config *c);
/*
 * Fills *c (csd_config_init with prefix and embedding) from the options value(opaque, name)
 * gives (NULL: not given; name without prefix) and finishes it (csd_config_finish). With
 * needs non-NULL the device is off: any option given is refused, "<prefix><name> needs
 * <needs>" (QEMU: "csd=on"), and nothing is finished. 0, or -1 with a message in err and *c
 * cleared.
 */
int csd_config_read(struct csd_config *c, const char *prefix, unsigned embedding,
                    const char *(*value)(void *opaque, const char *name), void *opaque, const char *needs,
                    char *err, size_t err_len);
/*
 * A core as a finished configuration describes it: its SLM and compute units, its
 * operator plug-ins, timing model and vendor switch. NULL with a message in err.
 */
csd_core *csd_core_new_config(const struct csd_config *c, char *err, size_t err_len);
/*
 * Turns the standard front end on as c configures it (nvme-cs; off: nothing to do, 0): its
 * memory namespace at nvme-cs.mem-nsid or, when 0, at the first NSID after the last one
 * that taken(opaque, nsid) says is in use among 1..max_nsid; its compute namespace at the
 * next. Both must be free and at most max_nsid: -1 with a message in err otherwise (the
 * front end left off).
 */
int csd_core_cs_attach_config(csd_core *core, const struct csd_config *c, uint32_t max_nsid,
                              int (*taken)(void *opaque, uint32_t nsid), void *opaque, char *err,
                              size_t err_len);
/*
 * The core an embedding runs: csd_core_new_config, then its standard front end attached
 * (csd_core_cs_attach_config with max_nsid, taken and opaque). NULL with a message in err.
 */
csd_core *csd_core_open(const struct csd_config *c, uint32_t max_nsid, int (*taken)(void *opaque, uint32_t nsid),
                        void *opaque, char *err, size_t err_len);
/*
 * Commands Supported and Effects (log 05h) that the command sets add to a controller c
 * configures, ORed in (NVME_CS_EFFECTS_*): the vendor I/O opcodes in the NVM command set's
 * nvm[] (vendor on), the standard front end's admin commands in acs[] (nvme-cs on).
 */
void csd_config_effects(const struct csd_config *c, uint32_t acs[256], uint32_t nvm[256]);
/*
 * Help for the embedding's options, one line each ("  slm-size=<size> - ...");
 * a malloc'd string the caller frees.
 */
char *csd_options_help(unsigned embedding, const char *prefix);
/* The table as the docs' Markdown table; a malloc'd string the caller frees. */
char *csd_options_markdown(void);

#ifdef __cplusplus
}
#endif

#endif /* CSD_CONFIG_H */
