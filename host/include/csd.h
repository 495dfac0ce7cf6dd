/* SPDX-License-Identifier: MIT */
/*
 * csd.h - the C API of libcsd. Every call returns 0 on success or a negative errno
 * (-EIO when the drive answered with an NVMe status); csd_last_error() then names the
 * failure in words and csd_last_status() gives the NVMe status (0 for OS errors).
 * Errors are kept per thread. Threads may share one csd_dev; on the in-process device
 * (emu:) a child forked after csd_open may go on using it (docs/library.md).
 */
#ifndef CSD_H
#define CSD_H

#include <stddef.h>
#include <stdint.h>

#include "csd_spec.h"
#include "csd_version.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct csd_dev csd_dev;

/* An SLM byte range of an Execute. */
typedef struct csd_range {
    uint64_t offset;
    uint64_t length;
} csd_range;

/* Opens /dev/ngXnY, /dev/nvmeXnY or emu:<file>?slm=..; checks that it is a CSD. */
int csd_open(const char *path, csd_dev **dev);
/* Opens an NVMe node with io_uring passthrough (queue_depth commands in flight). */
int csd_open_uring(const char *path, unsigned queue_depth, csd_dev **dev);
/* csd_open_flags' flag: open the node or backing file read-only; reads, SLM and programs
 * that only read the namespace work, and what would change its data (csd_store_put,
 * csd_store_remove, csd_store_format, csd_slm_store, a Write) fails with -EROFS. */
#define CSD_OPEN_READ_ONLY 1u
/* csd_open with flags (CSD_OPEN_READ_ONLY); csd_open(path, dev) is flags 0. */
int csd_open_flags(const char *path, unsigned flags, csd_dev **dev);
/* Closes the device; frees every SLM allocation made through it. */
void csd_close(csd_dev *dev);
/* Words describing the last failure on this thread ("Execute gemm: Invalid Parameters"). */
const char *csd_last_error(void);
/* NVMe status of the last failure on this thread, 0 if it was no NVMe status. */
uint16_t csd_last_status(void);
/* The version of the libcsd running ("0.1.0"); CSD_VERSION_STRING is the headers'. */
const char *csd_version(void);
/* The same as MAJOR * 10000 + MINOR * 100 + PATCH, to compare with CSD_VERSION_NUMBER. */
unsigned csd_version_number(void);

/* The command set the device is spoken to with: "vendor", "nvme-cs" (the standard NVMe
 * computational storage command sets) or "host" (host mode: none, the programs run in this
 * process over the bytes read from the drive); $CSD_FRONT_END picks, else vendor where the
 * drive has it, else nvme-cs, else host. */
const char *csd_front_end(csd_dev *dev);

/* The timing model's clock in ns: the in-process device's virtual clock with exact=on (the
 * model's time, whatever the host), its host clock without; 0 for a drive elsewhere or NULL. */
uint64_t csd_model_clock_ns(csd_dev *dev);

/* SLM size, compute units and number of programs from the capabilities log. */
int csd_info(csd_dev *dev, uint64_t *slm_size, uint32_t *compute_units, uint32_t *nr_programs);
/* The namespace commands go to: its LBA size in bytes and its number of LBAs (either may be NULL). */
int csd_ns_info(csd_dev *dev, uint32_t *lba_size, uint64_t *lba_count);
/* Allocates SLM (align: a power of two) and returns its offset. */
int csd_slm_alloc(csd_dev *dev, uint64_t size, uint64_t align, uint64_t *offset);
/* Frees an allocation made by csd_slm_alloc. */
int csd_slm_free(csd_dev *dev, uint64_t offset);
/* Host memory -> SLM, any offset and length. */
int csd_slm_write(csd_dev *dev, uint64_t offset, const void *data, uint64_t len);
/* SLM -> host memory, any offset and length. */
int csd_slm_read(csd_dev *dev, uint64_t offset, void *data, uint64_t len);
/* Namespace LBAs -> SLM. */
int csd_slm_load(csd_dev *dev, uint64_t slba, uint64_t nlb, uint64_t slm_offset);
/* SLM -> namespace LBAs. */
int csd_slm_store(csd_dev *dev, uint64_t slba, uint64_t nlb, uint64_t slm_offset);
/* Runs a program; dw0/dw1 (may be NULL) receive the completion Dwords. On Output
 * Overflow they are filled too (filter: bytes needed, matching records). */
int csd_execute(csd_dev *dev, uint16_t program, const csd_range *ranges, uint16_t nr_ranges, const void *params,
                uint32_t param_len, uint32_t *dw0, uint32_t *dw1);
/* checksum program (CSD_CKSUM_CRC32C or CSD_CKSUM_XXH64) over an SLM range. */
int csd_checksum(csd_dev *dev, uint32_t algo, csd_range data, uint64_t *sum);
/* gemm program: C = alpha op(A) op(B) + beta C (flags: CSD_GEMM_TRANS_A / _B). */
int csd_gemm(csd_dev *dev, csd_range a, csd_range b, csd_range c, uint32_t m, uint32_t n, uint32_t k, uint32_t flags,
             float alpha, float beta);

/* Loads an eBPF object (image of size bytes) for records of record_size bytes into *slot
 * (0 in *slot: the device picks). A refused image: -EIO, csd_last_status() Invalid
 * Program Image and *fault (may be NULL) = the refused instruction (FFFFFFFFh: bad ELF). */
int csd_program_load(csd_dev *dev, const void *image, uint32_t size, uint32_t record_size, uint16_t *slot,
                     uint32_t *fault);
/* Unloads the program in slot. */
int csd_program_unload(csd_dev *dev, uint16_t slot);
/* Runs a loaded program over count records (mode CSD_BPF_FILTER, _MAP or _REDUCE) with
 * up to 8 u64 params; out is ignored for reduce. CSD_BPF_CHASE (1.2): records is ignored,
 * count is the hop limit, params[0] the start LBA, out the 16-byte struct
 * csd_bpf_chase_result. dw0/dw1 (may be NULL) as csd_execute. */
int csd_program_run(csd_dev *dev, uint16_t slot, uint32_t mode, csd_range records, csd_range out, uint32_t count,
                    const uint64_t *params, uint32_t nr_params, uint32_t *dw0, uint32_t *dw1);

/* Object store on the namespace: put replaces; get copies at most cap bytes and sets
 * *len to the object's size (-ENOSPC if cap is too small: buf then holds no object, but
 * may hold part of an older version read before a larger one replaced it). */
/* Writes an empty store over the namespace; -EEXIST (csd_last_error() names what it found)
 * if the namespace holds a partition table, a filesystem or volume signature or a store. */
int csd_store_format(csd_dev *dev);
/* csd_store_format_flags' flag: format over whatever the namespace holds. */
#define CSD_FORMAT_FORCE 1u
/* csd_store_format with flags (CSD_FORMAT_FORCE); csd_store_format(dev) is flags 0. */
int csd_store_format_flags(csd_dev *dev, unsigned flags);
int csd_store_put(csd_dev *dev, const char *name, const void *data, uint64_t len);
int csd_store_get(csd_dev *dev, const char *name, void *buf, uint64_t cap, uint64_t *len);
int csd_store_remove(csd_dev *dev, const char *name);

/* Streaming put and get: an object of any size through a few MiB of host memory, its
 * CRC-32C computed as it streams (docs/store.md). */
/* csd_store_put_stream's len for a source whose length is not known before its end (a pipe). */
#define CSD_SIZE_UNKNOWN UINT64_MAX
/* Gives up to n bytes of the object into buf: returns how many (0 only at its end), or a
 * negative errno to cancel the put. */
typedef int64_t (*csd_read_fn)(void *ctx, void *buf, uint64_t n);
/* Takes bytes [pos, pos + n) of the object, in order; pos 0 again means another writer
 * replaced it meanwhile and it starts over. Returns 0, or a negative errno to stop. */
typedef int (*csd_write_fn)(void *ctx, uint64_t pos, const void *buf, uint64_t n);
/* Stores (or replaces) an object of len bytes (CSD_SIZE_UNKNOWN: until read gives 0) read
 * through read(ctx, ...) a chunk at a time. A read error or another length than len
 * (-EIO) stores nothing and releases the space reserved. */
int csd_store_put_stream(csd_dev *dev, const char *name, uint64_t len, csd_read_fn read, void *ctx);
/* Gets an object a chunk at a time through write(ctx, ...), checked against its CRC-32C
 * at the end (-EIO after write saw bytes that do not match it); *len: its size. */
int csd_store_get_stream(csd_dev *dev, const char *name, csd_write_fn write, void *ctx, uint64_t *len);
/* csd_store_put_stream from a file descriptor (a file from its position, a pipe, stdin). */
int csd_store_put_fd(csd_dev *dev, const char *name, int fd);
/* csd_store_get_stream to a file descriptor (a file from its position, a pipe, stdout);
 * a pipe cannot start over: a replacement meanwhile gives -EAGAIN. */
int csd_store_get_fd(csd_dev *dev, const char *name, int fd, uint64_t *len);

/* Programs over stored objects of any size (docs/store.md, "Objects larger than SLM"): an
 * object larger than the SLM a call may use streams through SLM in pieces, the SLM Load of
 * the next overlapping the Execute of this one, with the results one Execute over the whole
 * would give. opts may be NULL (all free SLM, no progress). Calls of one process at once
 * take turns for SLM: one short of SLM that other streamed calls hold waits for them. */
typedef struct csd_stream_opts {
    uint64_t slm_budget; /* SLM bytes the call may use; 0: the largest free range */
    /* called after each piece with the input bytes done and the total (may be NULL); a
     * non-zero return cancels: the call returns -ECANCELED, stores nothing, frees its SLM */
    int (*progress)(void *arg, uint64_t done, uint64_t total);
    void *arg;
} csd_stream_opts;
/* filter program over object src into object dst (p as the program takes it: count 0 for
 * every record; output_mode CSD_FILTER_INDICES for u32 indices). matches/bytes may be NULL. */
int csd_store_filter(csd_dev *dev, const char *src, const char *dst, const struct csd_filter_params *p,
                     const csd_stream_opts *opts, uint64_t *matches, uint64_t *bytes);
/* checksum (CSD_CKSUM_CRC32C of any size; CSD_CKSUM_XXH64 of an object that fits in SLM
 * whole, else -EINVAL saying why) of an object. */
int csd_store_checksum(csd_dev *dev, const char *name, uint32_t algo, const csd_stream_opts *opts, uint64_t *sum);
/* reduce (CSD_RED_*) of a tensor of <f4, <f8, <i4 or <i8: one 8-byte result per row (rows:
 * shape[0] of a tensor of two or more dimensions, else 1) into out, as the reduce program
 * writes them; *rows = the rows (-ENOSPC, nothing run, if more than cap). */
int csd_store_reduce(csd_dev *dev, const char *name, uint32_t op, const csd_stream_opts *opts, uint64_t *out,
                     uint64_t cap, uint64_t *rows);
/* convert (CSD_CVT_*) of object src into object dst; *bytes (may be NULL) = its size. */
int csd_store_convert(csd_dev *dev, const char *src, uint32_t op, const char *dst, float scale, int32_t zero_point,
                      const csd_stream_opts *opts, uint64_t *bytes);
/* decompress (CSD_DECOMP_ZSTD or _LZ4 frames) of object src into object dst. */
int csd_store_decompress(csd_dev *dev, const char *src, uint32_t codec, const char *dst, const csd_stream_opts *opts,
                         uint64_t *bytes);
/* gemm: object c = a (m x k) x b (k x n), 2-D <f4 tensors. */
int csd_store_gemm(csd_dev *dev, const char *a, const char *b, const char *c, const csd_stream_opts *opts);
/* A loaded eBPF program (slot, records of record_size bytes) over the records of object src,
 * mode CSD_BPF_FILTER or _MAP into object dst, or _REDUCE: res[0] = matches (filter) or
 * records, res[1] = bytes written or (reduce) the wrapping u64 sum. */
int csd_store_program_run(csd_dev *dev, uint16_t slot, uint32_t record_size, uint32_t mode, const char *src,
                          const char *dst, const uint64_t *params, uint32_t nr_params, const csd_stream_opts *opts,
                          uint64_t res[2]);

#ifdef __cplusplus
}
#endif

#endif /* CSD_H */
