/* SPDX-License-Identifier: MIT */
/*
 * csd_core_steps.h - the device core's single steps, for its tests, fuzzers and
 * benchmarks: decode, complete, prepare and run an Execute, load a program, the timing
 * model's scheduling, the standard front end's decoders. An embedding needs none of them:
 * it hands every command to csd_core_submit (csd_core.h), which takes these steps itself.
 */
#ifndef CSD_CORE_STEPS_H
#define CSD_CORE_STEPS_H

#include "csd_core.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Decodes and validates one CSD I/O command (csd_is_io_opcode) and counts it (SLM Load,
 * SLM Store and Compare and Write on a zoned namespace: Invalid Command Opcode). On success
 * *op says what to move; the embedding then calls csd_core_complete exactly once. On
 * failure the status is final and already counted (no csd_core_complete).
 */
uint16_t csd_core_decode(csd_core *core, const struct csd_cmd *cmd, const struct csd_ctx *ctx,
                         struct csd_op *op);

/*
 * Ends a decoded command with its final status: counts the bytes a successful command
 * moved, or an Execute that failed anywhere (decode excepted, which counts itself).
 */
void csd_core_complete(csd_core *core, const struct csd_op *op, uint16_t status);

/*
 * Validates the execute descriptor an Execute transferred (op->bytes of it: magic,
 * version, program, ranges in SLM, parameters) and, on success, returns a job in *exec
 * that csd_core_exec_run runs. The job copies what it needs from desc.
 */
uint16_t csd_core_exec_prepare(csd_core *core, const void *desc, uint32_t len, csd_exec **exec);

/*
 * Runs a prepared job (on any thread) and frees it; returns the status and the
 * completion's Dwords 0 and 1. Counts the program's run and busy time. If cancel is not
 * NULL, long programs poll *cancel (atomically) and stop with Command Abort Requested
 * once another thread sets it non-zero, so that a controller reset never waits long.
 */
uint16_t csd_core_exec_run(csd_core *core, csd_exec *exec, const int *cancel, uint32_t *dw0,
                           uint32_t *dw1);

/* Frees a prepared job that will not run (e.g. the command was aborted). */
void csd_core_exec_discard(csd_exec *exec);

/*
 * Program Load (89h) after decode, with the op->bytes of the chunk the embedding
 * transferred: stores it; verifies and compiles the image when its last byte arrived.
 * *dw0 = the slot id, or for Invalid Program Image the offending instruction index
 * (FFFFFFFFh: malformed ELF). A verifier's reason, if why is not NULL, goes to *why
 * (NUL-terminated, at most why_len bytes) for the embedding's trace.
 */
uint16_t csd_core_program_load(csd_core *core, const struct csd_op *op, const void *chunk,
                               uint32_t *dw0, char *why, size_t why_len);

/* Program Unload (8Ch) after decode. */
uint16_t csd_core_program_unload(csd_core *core, const struct csd_op *op);

/*
 * Compare and Write (8Dh): compares the op->bytes / 2 bytes read at op->slba (current)
 * with the first half of the data the host sent; Success (then the second half is
 * written) or Compare Failure. csd_core_submit runs the whole sequence itself.
 */
uint16_t csd_core_compare(const struct csd_op *op, const void *current, const void *data);

/* Runs downloaded programs in DPDK's interpreter instead of JIT code (benchmarks, tests). */
void csd_core_set_bpf_interpreted(csd_core *core, int on);

/*
 * NVM Read (02h), Write (01h) or Flush (00h) of namespace ctx, for an embedding that moves
 * their bytes itself: the LBA range (LBA Out of Range) and the transfer limit (Invalid
 * Field); on Success the byte offset and length to move (Flush: 0). Invalid Opcode for
 * another opcode.
 */
uint16_t csd_core_nvm_decode(const struct csd_cmd *cmd, const struct csd_ctx *ctx, uint64_t *off, uint64_t *len);

/* Program id of a prepared job. */
uint16_t csd_exec_program_id(const csd_exec *exec);

/* A read of the NVM namespace that a media program asks for: nlb LBAs from slba into buf. */
struct csd_extent {
    uint64_t slba;
    uint32_t nlb;
    uint8_t *buf;
};

/*
 * Media programs (gather, embedding_bag; spec 1.2) read the NVM namespace the Execute
 * names. Right after csd_core_exec_prepare (before csd_exec_model_work) the job is given
 * that namespace (ns as for csd_core_decode; csd_core_submit does it for a vendor Execute);
 * it checks what it will read against it and plans its reads. Without it a media program's run answers Invalid
 * Namespace or Format (e.g. Execute Program of the compute namespace). Other jobs ignore it.
 */
void csd_exec_set_namespace(csd_exec *exec, const struct csd_ctx *ns);

/*
 * The reads a prepared job needs before csd_core_exec_run: returns how many extents are in
 * *ext (0: none are left, run the job). The embedding reads every extent (in parallel, any
 * order; the buffers are the job's), then calls again with the reads' status (Success, or
 * the first error) until it returns 0. With *cancel set (cancel may be NULL) or after an
 * error nothing more is planned, and the run answers that status without running the
 * program. Cheap (no program work): call it where block I/O is issued (QEMU: main loop).
 */
uint32_t csd_exec_media(csd_exec *exec, uint16_t status, const int *cancel, const struct csd_extent **ext);

/*
 * A downloaded program's chase (mode 3, spec 1.2) is walked by csd_exec_media: one round
 * per hop, one block each, the program called on it in that call (no loops: at most
 * CSD_BPF_MAX_INSNS instructions; a B+-tree node search is about 1,400). Its modelled finish is known only once walked: with the timing model on, the
 * embedding passes the finish csd_core_model_schedule gave it at arrival (which counts
 * the first hop) after csd_exec_media returned 0 and before csd_core_exec_run, and
 * completes no earlier than what this returns: each hop past the first one more dependent
 * media read and one program record. Other jobs, or finish_ns 0: finish_ns.
 */
uint64_t csd_exec_model_finish(const csd_exec *exec, uint64_t finish_ns);

/*
 * Get Log Page for the command set's pages (C0h, C1h): checks NSID and offset, fills
 * page with the whole page (csd_log_page_size(lid) bytes: 4096 for C0h, 4352 for C1h)
 * and returns in *avail the bytes from offset on. Invalid Field for an NSID other than
 * 0 or FFFFFFFFh or an offset past the page.
 */
uint16_t csd_core_get_log(csd_core *core, uint8_t lid, uint32_t nsid, uint64_t offset,
                          uint8_t page[CSD_LOG_MAX_SIZE], uint32_t *avail);

/*
 * When the modelled drive completes work w that arrived at now_ns (any clock, the same
 * for every call), at most CSD_MODEL_MAX_NS; 0 when the model is off. Counts busy time per
 * resource (C1h).
 */
uint64_t csd_core_model_schedule(csd_core *core, const struct csd_model_work *w, uint64_t now_ns);
/*
 * The command whose modelled finish was finish_ns had its real work done at done_ns:
 * counts the delay the embedding adds, or an overrun (the host was slower than the model).
 */
void csd_core_model_done(csd_core *core, uint64_t finish_ns, uint64_t done_ns);
/* The work of an NVM Read (02h), Write (01h) or Flush (00h) moving bytes. */
void csd_model_work_nvm(uint8_t opcode, uint64_t bytes, struct csd_model_work *w);
/* The transfer and media work of a decoded CSD command (an Execute's program excepted). */
void csd_model_work_op(const struct csd_op *op, struct csd_model_work *w);
/* Adds a prepared Execute's program work (compute unit, flops, bytes, records). */
void csd_exec_model_work(const csd_exec *exec, struct csd_model_work *w);

/*
 * The standard front end (spec/nvme_cs.h, docs/nvme-cs.md): memory range sets, program
 * activation and Execute Program, over the same SLM and program table as the vendor
 * commands. Statuses are NVMe status values (with DNR), the command set specific ones
 * from nvme_cs.h.
 */
/* Memory Read (02h) / Write (05h) of the memory namespace: decoded as SLM Read / Write (the
 * same fields), so the embedding moves op->bytes at op->slm the same way. */
uint16_t csd_core_cs_decode_mem(csd_core *core, const struct csd_cmd *cmd, const struct csd_ctx *ctx,
                                 struct csd_op *op);
/* Memory Fill (04h): CDW13's 32-bit pattern over CDW12 bytes from byte CDW10-11 (4-aligned). */
uint16_t csd_core_cs_memory_fill(csd_core *core, const struct csd_cmd *cmd);
/*
 * Load Program (admin 85h): the vendor Program Load (or, with the unload bit, Program
 * Unload) of the same program, decoded with its checks; the embedding moves op->bytes of
 * chunk and calls csd_core_cs_program_load (csd_core_cs_program_unload). The index must
 * be a download slot (0100h-01FFh); the record size of an eBPF program is CDW12 bits 15:0.
 * A program's activation begins and ends with it in its slot: one loaded (first chunk) or
 * unloaded, by either front end (the vendor Program Load / Unload too), is not active.
 */
uint16_t csd_core_cs_decode_load_program(csd_core *core, const struct csd_cmd *cmd, const struct csd_ctx *ctx,
                                         struct csd_op *op);
/*
 * Load Program's chunk after csd_core_cs_decode_load_program: csd_core_program_load with
 * the standard front end's limit (images held: Maximum Program Bytes Exceeded) and
 * statuses (Invalid Program Data for an image the verifier refuses, DW0 its instruction;
 * Program In Use for an index that holds one).
 */
uint16_t csd_core_cs_program_load(csd_core *core, const struct csd_op *op, const void *chunk, uint32_t *dw0,
                                  char *why, size_t why_len);
/* Load Program with the unload bit after decode: Program In Use while activated or
 * running, No Program for an empty index, else csd_core_program_unload. */
uint16_t csd_core_cs_program_unload(csd_core *core, const struct csd_op *op);
/*
 * The standard front end's log pages 82h (Program List), 83h (Downloadable Program Types)
 * and 84h (Memory Range Set List), layouts in nvme_cs.h: copies the page from byte offset
 * (a multiple of 4, at most its size) into page, at most page_size bytes; the bytes from
 * offset to the page's end in *avail. Invalid Field for another log or a bad offset.
 */
uint16_t csd_core_cs_get_log(csd_core *core, uint8_t lid, uint64_t offset, uint8_t *page, uint32_t page_size,
                             uint32_t *avail);
/* Memory Range Set Management, create: CDW11 ranges (0's based) of len bytes of data, each
 * in the memory namespace mem_nsid and inside SLM, none overlapping; the new RSID in *rsid. */
uint16_t csd_core_cs_range_set_create(csd_core *core, uint32_t mem_nsid, uint32_t cdw11, const void *data,
                                      uint32_t len, uint16_t *rsid);
/* Memory Range Set Management, delete: Memory Range Set In Use while a prepared Execute
 * Program holds it (until it runs or is discarded). */
uint16_t csd_core_cs_range_set_delete(csd_core *core, uint16_t rsid);
/* Program Activation Management (CDW10: index, bit 16 deactivate): No Program for an empty
 * download slot, Maximum Programs Activated past NVME_CS_MAX_ACTIVE_DOWNLOADED downloaded ones. */
uint16_t csd_core_cs_program_activation(csd_core *core, uint32_t cdw10);
/* Whether a program index is active (built-ins and plug-ins start active, loaded slots not). */
int csd_core_cs_program_active(csd_core *core, uint16_t id);
/* The dwords of Execute Program the core reads: index and RSID, ranges, data length (CDW4,
 * or CDW15 when CDW4 is 0: nvme_cs_exec_data_len). */
struct csd_cs_exec_cmd {
    uint32_t cdw2, cdw3, cdw4, cdw15;
};
/*
 * Execute Program: the ranges (the range set CDW2 names, or inline at the start of data),
 * the parameters (the rest of data) and the program index become the vendor execute
 * descriptor of the same call, prepared by csd_core_exec_prepare; run the job with
 * csd_core_exec_run. Counted as an Execute; on failure end it with csd_core_complete of an
 * Execute op, as a vendor Execute that failed after decode. Statuses: Invalid Program Index, Program Not Activated, Invalid Memory
 * Namespace, Invalid Memory Range Set (Identifier), or the vendor Execute's.
 */
uint16_t csd_core_cs_exec_prepare(csd_core *core, uint32_t mem_nsid, const struct csd_cs_exec_cmd *cmd,
                                  const void *data, uint32_t len, csd_exec **exec);

/*
 * One piece of a standard copy: a vendor SLM Load (Memory Copy) or SLM Store (NVM Copy
 * format 4h) of one source range, decoded and counted as that command, on NVM namespace
 * nsid. The embedding moves each part's op.bytes as for the vendor command and ends every
 * part with csd_core_complete.
 */
struct csd_cs_copy_part {
    uint32_t nsid;
    struct csd_op op;
};
/*
 * Memory Copy (01h): the len bytes of source descriptors (format CDW12 bits 11:8: 2h or
 * 3h; CDW12 bits 7:0 ranges, 0's based) become one SLM Load each, into consecutive memory
 * from byte CDW10-11, in parts[] (NVME_CS_MAX_COPY_RANGES entries), *nparts of them. On
 * failure nothing is left to complete. Statuses: Incompatible Namespace or Format (another
 * format, or a zoned source namespace), Namespace Not Reachable (a source NSID that is not
 * an attached NVM namespace), or the vendor SLM Load's.
 */
uint16_t csd_core_cs_decode_memory_copy(csd_core *core, const struct csd_cmd *cmd, const void *descs, uint32_t len,
                                        csd_cs_ns_info info, void *opaque, struct csd_cs_copy_part *parts,
                                        uint32_t *nparts);
/*
 * NVM Copy (19h) with source format 4h on NVM namespace cmd->nsid (ctx): each memory range
 * of the descriptors (in memory namespace mem_nsid, a whole number of LBAs, at most 65536)
 * becomes an SLM Store into consecutive LBAs from SDLBA (CDW10-11), in parts[] as above.
 * Statuses: Incompatible Namespace or Format (another format, or a zoned namespace: zone
 * rules are not kept), Invalid Memory Namespace, Invalid Field (a length that is not whole
 * LBAs), or the vendor SLM Store's.
 */
uint16_t csd_core_cs_decode_nvm_copy(csd_core *core, uint32_t mem_nsid, const struct csd_cmd *cmd,
                                     const struct csd_ctx *ctx, const void *descs, uint32_t len,
                                     struct csd_cs_copy_part *parts, uint32_t *nparts);
/*
 * Reachability Groups (1Ah) or Reachability Associations (1Bh), layouts in nvme_cs.h, for a
 * controller whose namespaces (NVM, memory, compute) are nsids[0..n): copied from byte
 * offset (a multiple of 4, at most the page's size) into page, at most page_size bytes;
 * the bytes from offset on in *avail.
 */
uint16_t csd_core_cs_reachability_log(uint8_t lid, const uint32_t *nsids, uint32_t n, uint64_t offset,
                                      uint8_t *page, uint32_t page_size, uint32_t *avail);

#ifdef __cplusplus
}
#endif

#endif /* CSD_CORE_STEPS_H */
