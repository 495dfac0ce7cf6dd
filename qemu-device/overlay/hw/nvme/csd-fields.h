/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * QEMU NVM Express computational storage (CSD): the fields hw/nvme's structures carry for
 * it (and the one function of the glue hw/nvme/ns.c calls), included by nvme.h (patch 0001 puts each macro in its structure), so that a new
 * field is an edit of this file, not of a patch. The csd.<name> properties' names are not
 * here: they come from the device core's option table (csd_config.h, csd-props.c.inc).
 */
#ifndef HW_NVME_CSD_FIELDS_H
#define HW_NVME_CSD_FIELDS_H

typedef struct NvmeCsd NvmeCsd;     /* csd.c.inc */

/* NvmeRequest: its completion's modelled finish, until the core holds it (csd.c.inc). */
#define NVME_CSD_REQUEST_FIELDS                                                         \
    int64_t csd_finish_ns;              /* timing model: modelled finish, 0 if none */

/* NvmeParams: the csd property (on: the computational storage controller). */
#define NVME_CSD_PARAMS_FIELDS                                                          \
    bool csd;

/* NvmeCtrl: the computational storage state (csd=on), csd.c.inc; the text of each csd.<name>
 * property given, by its row in the core's option table (csd-props.c.inc). */
#define NVME_CSD_OPTIONS_MAX 64     /* csd_config.h's CSD_OPTIONS_MAX */
#define NVME_CSD_CTRL_FIELDS                                                            \
    NvmeCsd *csd;                                                                       \
    char *csd_opts[NVME_CSD_OPTIONS_MAX];

/* Whether a controller of subsys answers nsid as a csd.nvme-cs namespace (csd-cs.c.inc):
 * hw/nvme/ns.c gives no nvme-ns that NSID. */
struct NvmeSubsystem;
bool nvme_csd_subsys_nsid_reserved(struct NvmeSubsystem *subsys, uint32_t nsid);

#endif /* HW_NVME_CSD_FIELDS_H */
