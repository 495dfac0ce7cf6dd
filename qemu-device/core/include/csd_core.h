/*
 * csd_core.h - C ABI of the nvme-csd device core: SLM, execute descriptors, the
 * device-defined programs, capabilities and statistics. It knows nothing of QEMU or of
 * the host library; hosts (QEMU's hw/nvme glue, libcsd's in-process device) move bytes
 * and complete commands, the core answers in NVMe status values (csd_spec.h).
 * All functions are thread-safe unless noted.
 */
#ifndef CSD_CORE_H
#define CSD_CORE_H

#include <stddef.h>
#include <stdint.h>

#include "csd_spec.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct csd_core csd_core;
typedef struct csd_exec csd_exec;

/* Creates a device core with zero-filled SLM; NULL (errno set) if memory is short. */
csd_core *csd_core_new(uint64_t slm_size, uint32_t compute_units);

/* Releases the core and its SLM; no Execute may be running. */
void csd_core_free(csd_core *core);

/* Size of SLM in bytes. */
uint64_t csd_core_slm_size(const csd_core *core);

/*
 * Checks that [offset, offset + length) lies inside SLM (no overflow) and returns a
 * pointer to its first byte in *ptr; CSD_STATUS_SLM_OUT_OF_BOUNDS otherwise.
 */
uint16_t csd_core_slm_range(csd_core *core, uint64_t offset, uint64_t length, uint8_t **ptr);

/* Checks the SLM Write / SLM Read rule: offset and length multiples of 4, length > 0. */
uint16_t csd_core_check_slm_xfer(uint64_t offset, uint32_t length);

/* Adds one to a *_CMDS counter (or n to a byte counter) of the statistics. */
void csd_core_stat_add(csd_core *core, enum csd_stat which, uint64_t n);

/* Fills the 4096-byte Capabilities (C0h) or Statistics (C1h) log page. */
void csd_core_log_capabilities(const csd_core *core, uint8_t page[CSD_LOG_PAGE_SIZE]);
void csd_core_log_statistics(const csd_core *core, uint8_t page[CSD_LOG_PAGE_SIZE]);

/* Maximum descriptor length and number of ranges (the capabilities' values). */
uint32_t csd_core_max_desc_len(void);

/*
 * Validates an execute descriptor of len bytes (magic, version, program, ranges in SLM,
 * parameter size) and, on success, returns a job in *exec that csd_core_exec_run runs.
 * Counts an Execute error on failure; the host counts the command itself (EXEC_CMDS)
 * when it arrives, so that commands failing before this call count too.
 */
uint16_t csd_core_exec_prepare(csd_core *core, const void *desc, uint32_t len,
                               csd_exec **exec);

/*
 * Runs a prepared job (on any thread) and frees it; returns the status and the
 * completion's Dwords 0 and 1. Updates the statistics. If cancel is not NULL, long
 * programs poll *cancel (atomically) and stop with Command Abort Requested once another
 * thread sets it non-zero, so that a controller reset never waits long for them.
 */
uint16_t csd_core_exec_run(csd_core *core, csd_exec *exec, const int *cancel, uint32_t *dw0, uint32_t *dw1);

/* Frees a prepared job that will not run (e.g. the command was aborted). */
void csd_core_exec_discard(csd_core *core, csd_exec *exec);

/* Program id of a prepared job. */
uint16_t csd_exec_program_id(const csd_exec *exec);

/* Name of a device-defined program ("gemm"), or NULL for an unknown id. */
const char *csd_program_name(uint16_t id);

/* CRC-32C (Castagnoli) of len bytes, as the checksum program computes it. */
uint32_t csd_crc32c(const void *data, uint64_t len);

/* English name of an NVMe status value ("Invalid Program"), for messages and traces. */
const char *csd_status_name(uint16_t status);

#ifdef __cplusplus
}
#endif

#endif /* CSD_CORE_H */
