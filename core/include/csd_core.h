/* SPDX-License-Identifier: MIT */
/*
 * csd_core.h - the embedding interface of the nvme-csd device core. The core owns the
 * command set: it decodes and validates every CSD command, keeps the statistics, owns SLM,
 * parses execute descriptors, runs the programs and fills the log pages, answering in NVMe
 * status values (spec/csd_spec.h). It knows nothing of QEMU or of the host library; the
 * embeddings (QEMU's hw/nvme glue, libcsd's in-process device and host mode) only move
 * bytes, through one seam:
 *
 *   csd_core_new_config (csd_config.h) / csd_core_free     the core as configured
 *   struct csd_port                                        what the embedding provides
 *   csd_core_submit(sqe, port, req) -> status              every command; CSD_CORE_LATER:
 *                                                          port->complete posts it later
 *   csd_core_nvm_submit, csd_core_cancel                   NVM I/O, NVMe Abort
 *   csd_core_model_arrival / _hold / _timer / _release     the timing model's held completions
 *
 * The single steps csd_core_submit takes (decode, complete, Execute prepare and run, ...)
 * are in csd_core_steps.h, for the core's tests, fuzzers and benchmarks.
 *
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

/* The fields of a submission queue entry that the command set reads. */
struct csd_cmd {
    uint8_t opcode;
    uint32_t nsid;
    uint32_t cdw10, cdw11, cdw12, cdw13, cdw14, cdw15;
};

/* What the embedding knows of the namespace and transfer limits at submission time. */
struct csd_ctx {
    uint64_t lba_count;    /* LBAs in the namespace the command addresses */
    uint32_t lba_size;     /* bytes per LBA (a power of two) */
    uint64_t max_transfer; /* largest data transfer of one command (MDTS), 0: no limit; the
                              core's copy of port->max_transfer (ns_info leaves it) */
    uint32_t zoned;        /* non-zero: a zoned namespace (ZNS), whose writes follow zone
                              rules (write pointer, zone states) the core does not keep */
    uint32_t metadata;     /* metadata bytes per LBA (protection information included), 0:
                              none; the core moves no namespace bytes of such a namespace
                              (it neither makes nor checks PI tuples): Invalid Namespace or
                              Format */
};

/* A decoded command: what the embedding must do for it. */
struct csd_op {
    uint8_t opcode;      /* CSD_OPC_* */
    struct csd_cmd cmd;  /* the command as decoded */
    uint64_t slba;       /* SLM Load / Store, Compare and Write: first LBA */
    uint32_t nlb;        /* SLM Load / Store, Compare and Write: LBAs (not 0's based) */
    uint64_t slm_offset; /* SLM Load / Store / Write / Read */
    uint8_t *slm;        /* SLM Load / Store / Write / Read: the checked SLM bytes */
    uint64_t bytes;      /* bytes to move: SLM<->namespace, SLM<->host, the descriptor
                            (Execute), the image chunk (Program Load) or expected + new
                            data (Compare and Write) from the host */
    csd_exec *job;       /* Execute from csd_core_submit: the prepared job to run */
    uint64_t window_lba;  /* Execute: the first LBA of its namespace reads' window (CDW11 bit 0) */
    uint64_t window_lbas; /* Execute: the window's LBAs (the namespace's without a window) */
};

/* Creates a device core with zero-filled SLM; NULL (errno set) if memory is short. */
csd_core *csd_core_new(uint64_t slm_size, uint32_t compute_units);

/*
 * Loads the operator plug-ins (csd_plugin.h) in every *.so of dir; -1 with a message
 * naming the file and the problem in err (NUL-terminated, at most err_len bytes), and
 * none loaded, when one cannot be used. Call before the first command.
 */
int csd_core_load_plugins(csd_core *core, const char *dir, char *err, size_t err_len);

/* Releases the core and its SLM; no Execute may be running. */
void csd_core_free(csd_core *core);

/* Size of SLM in bytes. */
uint64_t csd_core_slm_size(const csd_core *core);

/*
 * Checks that [offset, offset + length) lies inside SLM (no overflow) and returns a
 * pointer to its first byte in *ptr; SLM Range Out of Bounds otherwise.
 */
uint16_t csd_core_slm_range(csd_core *core, uint64_t offset, uint64_t length, uint8_t **ptr);

/* All of SLM as host memory (for an in-process embedding that shares it with its host). */
uint8_t *csd_core_slm_base(csd_core *core);

/*
 * The timing model (docs/timing-model.md): the drive being designed, in time. All zero
 * means off. Rates in GB/s (10^9 bytes/s) or GFLOP/s; latencies in ns.
 */
struct csd_model_params {
    double link_gbps;                /* PCIe, each direction */
    uint64_t link_latency_ns;        /* per command: submission to completion overhead */
    double media_read_gbps;          /* NAND, all channels together */
    double media_write_gbps;
    uint64_t media_read_latency_ns;  /* per command reading the media (overlaps others') */
    uint64_t media_write_latency_ns; /* per command writing it; a Flush costs one */
    double slm_gbps;                 /* device memory */
    double unit_gflops;              /* per compute unit: gemm, conv2d */
    double unit_gbps;                /* per compute unit: streaming programs (all ranges) */
    uint64_t bpf_record_ns;          /* per record of a downloaded program */
    uint32_t compute_units;          /* units the model schedules; 0: the device's */
    uint64_t host_latency_ns;        /* per command, the host's side: its submission and
                                        completion path, or a fabric's round trip */
};

/* What one command moves and computes, for the model. */
struct csd_model_work {
    uint64_t to_device, to_host;      /* bytes over the link */
    uint64_t media_read, media_write; /* bytes */
    int media_read_op, media_write_op; /* whether it reads / writes the media at all */
    uint64_t slm;                     /* bytes of device memory traffic */
    int compute;                      /* occupies a compute unit */
    double flops;
    uint64_t stream_bytes;
    uint64_t records;
};

/* Whether any parameter is set (the model is on). */
int csd_model_enabled(const struct csd_model_params *p);
/* Fills *out with a named preset; -1 if there is none of that name. */
int csd_model_preset(const char *name, struct csd_model_params *out);
/* The i-th preset's name, NULL past the last. */
const char *csd_model_preset_name(unsigned i);
/*
 * Sets one parameter by name ("preset" loads a preset first); -1 with a message in err
 * for an unknown name or a bad value: the option table's model.<name> rows (csd_config.h).
 */
int csd_model_set(struct csd_model_params *p, const char *name, const char *value, char *err,
                  size_t err_len);
/*
 * The compute units a device runs with, given the units asked for (0: not asked) and the
 * model's: the one given, else the model's, else 2; 0 when both are given and differ.
 */
uint32_t csd_model_compute_units(const struct csd_model_params *p, uint32_t requested);
/* NULL if the parameters make a model, else why not. */
const char *csd_model_check(const struct csd_model_params *p);
/* Configures the core's model (checked parameters); forgets queued work. */
void csd_core_set_model(csd_core *core, const struct csd_model_params *p);
/* Makes the modelled drive idle (after a controller reset); keeps its busy counters. */
void csd_core_model_idle(csd_core *core);
/* Whether the core's model is on. */
int csd_core_model_on(const csd_core *core);
/* The latest modelled finish, ns: a signed 64-bit clock's end (QEMU's timers; 292 years). */
#define CSD_MODEL_MAX_NS 0x7FFFFFFFFFFFFFFFull
/*
 * The modelled finish of an NVM Read (02h), Write (01h) or Flush (00h) of namespace
 * cmd->nsid, whose LBAs are lba_size bytes, arriving at now_ns: its work from NLB (a Flush:
 * one media write latency). 0 when the model is off, for any other command, and for the
 * standard front end's namespaces (their commands are the core's, scheduled as decoded).
 * Call it for a command that started (one refused at once costs no media time).
 */
uint64_t csd_core_model_nvm(csd_core *core, const struct csd_cmd *cmd, uint32_t lba_size, uint64_t now_ns);
/* What the embedding knows of NVM namespace nsid (ctx as for its commands); non-zero when
 * no NVM namespace of that NSID is attached. */
typedef int (*csd_cs_ns_info)(void *opaque, uint32_t nsid, struct csd_ctx *ctx);

/*
 * Commands Supported and Effects (log 05h) of the I/O commands of the memory (CSI 03h) or
 * compute (CSI 04h) command set: fills effects[opcode] (NVME_CS_EFFECTS_*, 0 for an opcode
 * the set does not have) and returns 0; -1 for another CSI, effects untouched.
 */
int csd_core_cs_io_effects(uint8_t csi, uint32_t effects[256]);
/* The same table of this core's memory or compute command set while its standard front end
 * is on, NULL otherwise (another CSI, or the front end off). */
const uint32_t *csd_core_cs_effects(const csd_core *core, uint8_t csi);

/*
 * The controller: csd_core_submit answers one command of the command set through the
 * embedding's port (after SPDK's NVMe-oF target: one controller over transport
 * operations). The core dispatches, validates, moves the bytes between host memory and
 * SLM, counts, schedules the timing model, queues Executes on its compute units and runs
 * Compare and Write, SLM Load / Store, the copies and a media program's reads over the
 * port's asynchronous namespace I/O; the embedding moves bytes, does block I/O and runs
 * the jobs it is handed on its threads.
 */
struct csd_cpl;

/* The end of an asynchronous namespace I/O of the port: Success or the I/O's error. */
typedef void (*csd_io_done)(void *arg, uint16_t status);

struct csd_port {
    /* Moves len bytes (never 0) of the command's data from host memory into buf (PRP / SGL
     * resolved by the embedding); an NVMe status (Success, or the transfer's error). */
    uint16_t (*from_host)(void *req, void *buf, uint64_t len);
    /* Moves len bytes of buf into the command's host memory; an NVMe status. */
    uint16_t (*to_host)(void *req, const void *buf, uint64_t len);
    /* What the embedding knows of NVM namespace nsid (ctx); non-zero when none is attached. */
    csd_cs_ns_info ns_info;
    /* The current time in ns (any clock, the same for every call): the timing model's. */
    uint64_t (*now_ns)(void *opaque);
    void *opaque;           /* ns_info's and now_ns's argument */
    uint64_t max_transfer;  /* largest data transfer of one command (MDTS), 0: no limit */
    uint32_t max_nsid;      /* ns_info is asked about NSIDs 1..max_nsid (log pages 1Ah, 1Bh) */
    /* Reads (write 0) len bytes at byte offset off of NVM namespace nsid (checked by the
     * core) into buf, or writes (write 1) them from buf, for command req, asynchronously:
     * calls done(arg, status) exactly once when it
     * ends, at once or later, on any thread (QEMU: its main loop). Status: Success, Internal
     * Error, Command Abort Requested when the command was cancelled, or Invalid Namespace or
     * Format when the namespace is no longer attached. A command may have
     * several under way at once (a media program's extents, a window of them); the
     * embedding cancels them all with the command. The dones of one command's I/O run one
     * at a time, never beside the call that issued another (QEMU: all in its main loop). */
    void (*ns_io)(void *req, uint32_t nsid, int write, uint64_t off, void *buf, uint64_t len, csd_io_done done,
                  void *arg);
    /* Posts the completion of a command csd_core_submit answered CSD_CORE_LATER (any thread,
     * once): its final status, Dwords and modelled finish in *cpl, and in cpl->why the
     * reason of an error the embedding traces ("" for success and a Compare and Write's
     * miscompare). */
    void (*complete)(void *req, uint16_t status, const struct csd_cpl *cpl);
    /* Optional (NULL: nothing to do): takes (on) or gives back (off) the bytes [off, off +
     * len) of namespace nsid against writers outside this core that share its backing store
     * (other processes); non-zero when it cannot be taken. The core orders its own. */
    int (*exclusive)(void *req, uint32_t nsid, uint64_t off, uint64_t len, int on);
    /* Runs work(arg) on a worker thread of the embedding (a compute unit's program: QEMU's
     * thread pool, the in-process device's threads), then done(arg, its return) where the embedding's
     * namespace I/O completes (QEMU: its main loop; in-process: that worker). The core
     * hands it at most as many jobs at a time as it has compute units (csd_core_new). */
    void (*run)(void *req, int (*work)(void *arg), void (*done)(void *arg, int ret), void *arg);
    /* Optional (NULL: always): whether command req, an Execute waiting for a compute unit,
     * may take one now; 0 while it is about to be cancelled (QEMU: its queue is being
     * deleted or the controller reset), so that none starts on the unit another gives back. */
    int (*startable)(void *req);
    /* Optional, with post (NULL: the thread that posts a completion waits for its modelled
     * finish itself, csd_core_model_hold telling it until when): asks the embedding to call
     * csd_core_model_timer once its clock (now_ns) reaches at_ns; one timer, a later call
     * replaces the earlier. Called with the core's hold list locked: it calls nothing back. */
    void (*arm_timer)(void *opaque, uint64_t at_ns);
    /* Posts the completion of command req that the timing model held until its finish. */
    void (*post)(void *req);
    /* Optional (NULL: the embedding's own controller answers NVM Read, Write and Flush, as
     * QEMU's does): moves len bytes between byte off of NVM namespace nsid (checked by the
     * core) and the command's host memory, write: into the namespace; a Flush is a write
     * of 0 bytes that makes what was written durable. An NVMe status. With it csd_core_submit
     * answers every I/O command of the NVM namespaces (csd_core_nvm_submit). */
    uint16_t (*nvm_io)(void *req, uint32_t nsid, int write, uint64_t off, uint64_t len);
    /* With nvm_io the core is the whole controller: it also answers Identify of the
     * controller (CNS 01h: QEMU's answer for what both say, these, MDTS from max_transfer,
     * NN max_nsid, what it lacks of QEMU's optional features left out), of an NVM namespace
     * (00h; zeros for an NSID in range with none), the NVM namespace list (07h) and the
     * command set vector (1Ch), and refuses the admin commands it lacks. Identify
     * Controller's serial and model number. */
    const char *serial, *model;
    /* Optional (NULL: the embedding cannot hold its clock; exact mode off): with on, stops
     * the port's clock (now_ns) and whatever else runs on it (QEMU: the guest's vCPUs) as
     * soon as it can, because a command's modelled finish has come while its real work still
     * runs; with off, lets them go on. Called with the core's hold list locked: it calls
     * nothing back (QEMU: it requests a VM stop, and resumes in a bottom half). */
    void (*hold_clock)(void *opaque, int on);
};

/*
 * The timing model's hold of completions (docs/timing-model.md), once for both embeddings.
 * The completion of command req is ready (its real work done) and its modelled finish is
 * finish_ns (a csd_cpl's, csd_core_model_nvm's; 0: not modelled): counts the delay the model
 * adds, or an overrun. Returns 0 when it is to be posted now: not modelled, due already, or
 * its command can no longer wait (port->startable says 0: its queue is being deleted or
 * the controller reset). Otherwise the model holds it until the returned finish (at most
 * CSD_MODEL_MAX_NS, as is every time given to port->arm_timer): with
 * port->arm_timer the core keeps it, ordered by finish, and posts it through port->post
 * (csd_core_model_timer); without, the embedding waits until then itself and posts it.
 */
uint64_t csd_core_model_hold(csd_core *core, const struct csd_port *port, void *req, uint64_t finish_ns);
/*
 * Exact mode (csd_core_set_exact, a port with hold_clock and arm_timer): command req, whose
 * modelled finish is finish_ns, goes on working after its arrival (the embedding answered
 * it later). The core arms the port's timer for the earliest such finish; if it comes
 * before the command's csd_core_model_hold (its work done), the core holds the port's
 * clock (port->hold_clock) until that work is done, so that no completion is seen later
 * than the model says. Does nothing with exact mode off or finish_ns 0.
 */
void csd_core_model_begin(csd_core *core, const struct csd_port *port, void *req, uint64_t finish_ns);
/*
 * The arrival of command req, once csd_core_submit or the embedding's own controller has
 * taken it (QEMU's NVM Read, Write and Flush): finish_ns is the modelled finish the core
 * gave it (a csd_cpl's, 0: none); a command that started (not refused at once) and has none
 * is modelled as an NVM command of namespace cmd->nsid with lba_size-byte LBAs
 * (csd_core_model_nvm); one still working (answered later) begins for exact mode
 * (csd_core_model_begin). Returns its modelled finish (0: none), for csd_core_model_hold.
 */
uint64_t csd_core_model_arrival(csd_core *core, const struct csd_port *port, void *req, const struct csd_cmd *cmd,
                                uint32_t lba_size, uint64_t finish_ns, int started, int working);
/* The timing model's clock for the port (ns): exact mode's virtual clock where the port
 * cannot hold its own (no hold_clock: a command's completion moves it to its modelled
 * finish, and csd_core_model_hold then answers 0), else port->now_ns. */
uint64_t csd_core_model_clock(csd_core *core, const struct csd_port *port);
/* Exact mode on or off (csd_core_new_config: the exact option); off by default. */
void csd_core_set_exact(csd_core *core, int on);
/* Whether exact mode is on. */
int csd_core_exact(const csd_core *core);
/* The port's timer fired (port->arm_timer): posts every held completion that is due, in
 * order of finish (equal ones as they came), and arms the timer for the next. */
void csd_core_model_timer(csd_core *core, const struct csd_port *port);
/* Posts at once every held completion whose command can no longer wait (port->startable
 * says 0: its queue is being deleted or the controller reset): their work is done. */
void csd_core_model_release(csd_core *core, const struct csd_port *port);

/* A submission queue entry as csd_core_submit reads it. */
struct csd_sqe {
    struct csd_cmd cmd;
    uint32_t cdw2, cdw3, cdw4; /* Execute Program: index and RSID, ranges, data length */
    uint8_t admin;             /* non-zero: from the admin queue */
    uint8_t fuse;              /* FUSE (CDW0 bits 9:8): neither command set has fused operations */
};

/* Reads a 64-byte NVMe submission queue entry as it lies in the queue (little-endian). */
void csd_core_read_sqe(const void *entry, int admin, struct csd_sqe *sqe);

/* The completion of a command csd_core_submit answered or decoded. */
struct csd_cpl {
    uint32_t dw0, dw1;
    uint64_t finish_ns;     /* timing model: complete no earlier (port clock); 0: model off */
    char why[128];          /* an error's reason for the embedding's trace: never "" for an
                               error status (csd_core_submit's, port->complete's), else "" */
    uint16_t program;       /* an Execute's program id (the embedding's trace), else 0 */
};

/* csd_core_submit: not one of the command set's commands (the embedding answers it). */
#define CSD_CORE_NOT_MINE 0xFFFFu
/* csd_core_submit: under way in the core, which posts its completion through port->complete
 * (Compare and Write: ordered against the other writers of its LBAs, then read, compare,
 * write through port->ns_io; SLM Load / Store and the copies: port->ns_io /
 * ns_write; Execute: queued for a compute unit, a media program's reads through
 * port->ns_io, the program through port->run). */
#define CSD_CORE_LATER 0xFFFDu

/*
 * Cancels a command csd_core_submit answered CSD_CORE_LATER (NVMe Abort, a queue's deletion,
 * a reset): one that waits in the core (a Compare and Write for the LBAs another one holds,
 * an Execute for a compute unit; its program never runs) completes at once with Command
 * Abort Requested through port->complete, and 1 is returned. A running Execute is asked to
 * stop (its media reads plan no more, its program stops at its next check) and ends with
 * Command Abort Requested; for it and for one whose namespace I/O is under way (which the
 * embedding cancels, and which then ends), 0.
 */
int csd_core_cancel(csd_core *core, void *req);

/*
 * Answers one command: the vendor I/O commands on an
 * NVM namespace (ns_info), with port->nvm_io the NVM namespaces' other I/O commands
 * (csd_core_nvm_submit) and every admin command, and with the standard front end on (csd_core_cs_attach) its
 * admin commands, Identify of its namespaces and command sets, its I/O commands and log
 * pages 82h-84h, 1Ah, 1Bh; Get Log Page C0h and C1h. Returns the final status (completion
 * Dwords in *cpl), CSD_CORE_LATER (port->complete ends it) or CSD_CORE_NOT_MINE (never
 * with port->nvm_io). op is
 * the decoded command (for the embedding's trace). Get Log Page's
 * length and offset are the embedding's to check first (MDTS, its own log pages).
 */
uint16_t csd_core_submit(csd_core *core, const struct csd_sqe *sqe, const struct csd_port *port, void *req,
                         struct csd_cpl *cpl, struct csd_op *op);

/*
 * An I/O command of an NVM namespace that is not the command set's, for an embedding with
 * port->nvm_io (csd_core_submit calls it). Its NSID as QEMU's nvme_io_cmd checks it: Invalid
 * Namespace or Format for 0, FFFFFFFFh or one above port->max_nsid, Invalid Field for one in
 * range that ns_info does not know; a Flush of FFFFFFFFh flushes every namespace ns_info
 * knows. NVM Read, Write and Flush checked (csd_core_nvm_decode; any other opcode: Invalid
 * Opcode) and moved by port->nvm_io. The final status; *finish_ns its modelled finish
 * (csd_core_model_nvm; 0: model off, or the command failed), for csd_core_model_hold.
 */
uint16_t csd_core_nvm_submit(csd_core *core, const struct csd_cmd *cmd, const struct csd_port *port, void *req,
                             uint64_t *finish_ns);

/*
 * How an embedding with port->nvm_io may answer command cmd on the thread that asks, with
 * no request of its own (nothing for an Abort to find, nothing the model holds):
 * CSD_READ_NOW: an NVM Read (02h) of an NVM namespace with the model off, which
 * csd_core_nvm_submit answers as csd_core_submit would; CSD_READ_DEFERRED: such a Read under
 * the model on the host's clock (exact mode off), whose modelled finish from
 * csd_core_nvm_submit the caller may wait out itself (csd_core_model_hold counts it);
 * CSD_READ_SUBMIT: any other command, and every Read on exact mode's virtual clock: through
 * csd_core_submit.
 */
#define CSD_READ_SUBMIT 0
#define CSD_READ_NOW 1
#define CSD_READ_DEFERRED 2
int csd_core_read_path(const csd_core *core, const struct csd_cmd *cmd, int admin);

/* Turns the standard front end on with its memory namespace at mem_nsid and its compute
 * namespace at mem_nsid + 1 (0: off). Call before the first command. */
void csd_core_cs_attach(csd_core *core, uint32_t mem_nsid);
/* The command set (NVME_CS_CSI_SLM or _CP) of a namespace of the standard front end, or 0
 * when nsid is not one of its two. */
uint8_t csd_core_cs_csi(const csd_core *core, uint32_t nsid);
/* The standard front end's memory namespace, 0 when it is off. */
uint32_t csd_core_cs_mem_nsid(const csd_core *core);

/*
 * Turns the vendor command set off (on non-zero, the default: on): its I/O opcodes answer
 * Invalid Opcode and its log pages (C0h, C1h) are not the core's (CSD_CORE_NOT_MINE, the
 * embedding answers them as any page it lacks); the embedding leaves the CSD1 signature
 * out of Identify. With the standard front end on, a drive that speaks only the standard.
 * Call before the first command.
 */
void csd_core_set_vendor(csd_core *core, int on);
/* Whether the vendor command set is on (csd_core_set_vendor). */
int csd_core_vendor(const csd_core *core);
/*
 * With off (vendor-io=off, csd_core_new_config), the vendor SLM, Execute and program commands
 * and No-Op answer Invalid Opcode; Compare and Write and the log pages stay (on: default).
 */
void csd_core_set_vendor_io(csd_core *core, int on);
/*
 * With off, Compare and Write answers Invalid Opcode and C0h's features leave its bit out:
 * host mode, whose plain drive cannot make it atomic against other hosts (on: default).
 */
void csd_core_set_compare_write(csd_core *core, int on);
/* Identify Controller's (4096 bytes at id) fields of the command sets: the CSD1 signature at
 * CSD_ID_VS_OFFSET with the vendor command set on, zeros there without it; with the standard
 * front end on, NVM Copy (ONCS bit 8) with source format 4h (OCFS bit 4) ORed in. */
void csd_core_identify_ctrl(const csd_core *core, uint8_t *id);
/* Identify I/O Command Set data structure (CNS 1Ch): adds the memory (SLM) and compute (CP)
 * command sets to the controller's first vector with the standard front end on. */
void csd_core_cs_iocs_vector(const csd_core *core, uint8_t *vector);

/* Whether a log page identifier is one of the command set's (C0h, C1h). */
int csd_core_is_log_page(uint8_t lid);

#ifdef __cplusplus
}
#endif

#endif /* CSD_CORE_H */
