/* SPDX-License-Identifier: MIT */
/*
 * csd_spec.h - the CSD command set's wire format, version 1.3 (docs/command-set.md):
 * opcodes, layouts, status values and their names, and the execute descriptor codec.
 * The one home of this knowledge: the device core, the QEMU glue, libcsd, csd.ko (this
 * header compiles in the kernel too), and through the bindings Python take it from here.
 * All multi-byte fields are little-endian; the codec assumes a little-endian CPU.
 */
#ifndef CSD_SPEC_H
#define CSD_SPEC_H

#ifdef __KERNEL__
#include <linux/string.h>
#include <linux/types.h>
#else
#include <stdint.h>
#include <string.h>
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Identify Controller vendor-specific bytes 3072..3075 hold this signature. */
#define CSD_ID_VS_OFFSET 3072
#define CSD_ID_SIGNATURE "CSD1"

/* I/O command opcodes (vendor-specific, NVM command set). */
enum csd_opcode {
    CSD_OPC_SLM_LOAD = 0x80,  /* namespace -> SLM, no data */
    CSD_OPC_SLM_WRITE = 0x81, /* host -> SLM */
    CSD_OPC_SLM_READ = 0x82,  /* SLM -> host */
    CSD_OPC_SLM_STORE = 0x84, /* SLM -> namespace, no data */
    CSD_OPC_EXECUTE = 0x85,   /* host -> controller: execute descriptor */
    CSD_OPC_PROGRAM_LOAD = 0x89,   /* host -> controller: a chunk of a program image (1.1) */
    CSD_OPC_PROGRAM_UNLOAD = 0x8C, /* no data (1.1) */
    CSD_OPC_COMPARE_WRITE = 0x8D,  /* host -> controller: expected then new LBA data
                                      (project extension, docs/command-set.md section 10) */
    CSD_OPC_NOOP = 0x90,           /* no data: Success, DW0 the log version (project extension) */
};

/* Whether an I/O opcode belongs to the CSD command set. */
static inline int csd_is_io_opcode(uint8_t opc)
{
    return opc == CSD_OPC_SLM_LOAD || opc == CSD_OPC_SLM_WRITE || opc == CSD_OPC_SLM_READ ||
           opc == CSD_OPC_SLM_STORE || opc == CSD_OPC_EXECUTE || opc == CSD_OPC_PROGRAM_LOAD ||
           opc == CSD_OPC_PROGRAM_UNLOAD || opc == CSD_OPC_COMPARE_WRITE || opc == CSD_OPC_NOOP;
}

/*
 * Compare and Write (8Dh): CDW10-11 SLBA, CDW12 bits 15:0 NLB (0's based); the data is
 * 2 x (NLB + 1) LBAs: the expected contents, then the new ones. The compared range is at
 * most CSD_CAW_MAX_BYTES; the command is atomic with respect to every other Compare and
 * Write of the controller (one that overlaps another in progress waits for it, in arrival
 * order, and then compares what it left; Command Interrupted, which earlier versions
 * answered instead and hosts retry, stays defined).
 */
#define CSD_CAW_MAX_BYTES (64u << 10)
#define CSD_FEATURE_COMPARE_WRITE 0x1u /* C0h features bit 0 */

/*
 * Execute's LBA window (1.3, project extension, section 10): CDW11 bit 0 set confines every
 * namespace read of the Execute's program (gather entries, embedding_bag's table, a chase's
 * start and every hop) to CDW14-15 LBAs from LBA CDW12-13; the program's LBAs are relative to
 * the window (its LBA 0 is the window's first), past its end is LBA Out of Range. csd.ko puts
 * each tenant's partition there, so bytes a tenant rewrites in SLM cannot reach past it.
 */
#define CSD_EXEC_LBA_WINDOW 0x1u        /* Execute CDW11 bit 0 */
#define CSD_FEATURE_LBA_WINDOW 0x2u     /* C0h features bit 1: the drive honours the window */

/* Downloadable programs (section 8). */
#define CSD_SLOT_FIRST 0x0100       /* slot ids 0100h..01FFh */
#define CSD_NR_SLOTS 256
#define CSD_PLUGIN_FIRST 0x0040     /* operator plug-in ids 0040h..00FFh (section 9) */
#define CSD_PLUGIN_LAST 0x00FF
#define CSD_MAX_PROGRAM_ID 0x01FF
#define CSD_PROGRAM_TYPE_EBPF 0x01
#define CSD_MAX_PROGRAM_BYTES (4u << 20) /* capability max_program_bytes */
/* Image bytes the device holds for uploads not yet complete, all slots together (the size
 * each first chunk declared): a first chunk past it gets Program Load Bytes Exceeded. */
#define CSD_MAX_LOADING_BYTES (16u << 20)
#define CSD_MAX_RECORD_SIZE 4096u
#define CSD_BPF_SECTION "csd"         /* the ELF section holding the entry function */
#define CSD_BPF_MAX_INSNS 65536u      /* the verifier's bound on a program's length */
#define CSD_BPF_MAX_PARAMS 8
#define CSD_BPF_ENTRY_NAME_LEN 23     /* a loaded program's name in C0h, at most */
#define CSD_IMAGE_FAULT_NONE 0xFFFFFFFFu /* DW0 of Invalid Program Image: malformed ELF */

/* Program Load CDW10: slot id (0: the device picks) and program type. */
static inline uint32_t csd_program_load_cdw10(uint16_t slot, uint8_t type)
{
    return slot | (uint32_t)type << 16;
}

/* Execute parameters of a downloadable program: header, then nr_params u64 params. */
struct csd_bpf_params {
    uint32_t record_count;
    uint32_t mode;
    uint32_t nr_params;
    uint32_t index_base; /* 1.3: csd_index() of the first record (filter, map, reduce; chase: 0) */
};
enum csd_bpf_mode { CSD_BPF_FILTER = 0, CSD_BPF_MAP = 1, CSD_BPF_REDUCE = 2, CSD_BPF_CHASE = 3 };
/* chase (mode 3, 1.2): params[0] the start LBA, record_count the hop limit (1 to
 * CSD_BPF_MAX_HOPS); the program's u64 answer with CSD_BPF_CHASE_DONE set ends the walk
 * (value = the low 63 bits), without it names the next LBA. The one range (out) gets: */
#define CSD_BPF_MAX_HOPS 64u
#define CSD_BPF_CHASE_DONE (1ull << 63)
struct csd_bpf_chase_result {
    uint64_t value;
    uint32_t hops;     /* blocks read (program calls) */
    uint32_t reserved; /* 0 */
};

/* Program kinds, as C0h entries give them. */
enum csd_program_type {
    CSD_PROGRAM_DEVICE = 0, CSD_PROGRAM_DOWNLOADED = 1, CSD_PROGRAM_PLUGIN = 2,
};

/* Whether an opcode may change the namespace's data (LBCC in the Effects log). */
static inline int csd_opcode_changes_lbas(uint8_t opc)
{
    return opc == CSD_OPC_SLM_STORE || opc == CSD_OPC_COMPARE_WRITE;
}

/* Log page identifiers. */
#define CSD_LOG_CAPABILITIES 0xC0
#define CSD_LOG_STATISTICS 0xC1
#define CSD_LOG_PAGE_SIZE 4096u /* C0h; and C1h up to version 1.0 */

/*
 * NVMe status values as a 16-bit field of the completion: bits 7:0 status code,
 * bits 10:8 status code type, bit 14 Do Not Retry (QEMU's encoding).
 */
#define CSD_STATUS_SUCCESS 0x0000
#define CSD_STATUS_DNR 0x4000
#define CSD_STATUS_INVALID_OPCODE 0x0001
#define CSD_STATUS_INVALID_FIELD 0x0002
#define CSD_STATUS_DATA_TRANSFER_ERROR 0x0004
#define CSD_STATUS_INTERNAL_ERROR 0x0006
#define CSD_STATUS_ABORT_REQUESTED 0x0007
#define CSD_STATUS_SQ_DELETED 0x0008
#define CSD_STATUS_INVALID_NAMESPACE 0x000B
#define CSD_STATUS_LBA_OUT_OF_RANGE 0x0080
#define CSD_STATUS_HOST_ABORTED 0x0371
#define CSD_STATUS_COMMAND_INTERRUPTED 0x0021 /* retry (a host retries it; not answered now) */
#define CSD_STATUS_COMPARE_FAILURE 0x0285     /* SCT 2h: the expected data differed */
/* Media and Data Integrity Errors (SCT 2h, NVMe base specification) a drive's Read or Write may
 * end with; not answered by this command set, named so that a real drive's failure reads in words. */
#define CSD_STATUS_WRITE_FAULT 0x0280
#define CSD_STATUS_UNRECOVERED_READ_ERROR 0x0281
#define CSD_STATUS_E2E_GUARD_CHECK_ERROR 0x0282
#define CSD_STATUS_E2E_APP_TAG_CHECK_ERROR 0x0283
#define CSD_STATUS_E2E_REF_TAG_CHECK_ERROR 0x0284
#define CSD_STATUS_ACCESS_DENIED 0x0286
#define CSD_STATUS_DEALLOCATED_OR_UNWRITTEN 0x0287
/* Command specific (SCT 1h), vendor specific codes. */
#define CSD_STATUS_INVALID_PROGRAM 0x01C0
#define CSD_STATUS_INVALID_DESCRIPTOR 0x01C1
#define CSD_STATUS_SLM_OUT_OF_BOUNDS 0x01C2
#define CSD_STATUS_INVALID_PARAMETERS 0x01C3
#define CSD_STATUS_OUTPUT_OVERFLOW 0x01C4
#define CSD_STATUS_PROGRAM_FAULT 0x01C5
#define CSD_STATUS_INVALID_PROGRAM_IMAGE 0x01C6
#define CSD_STATUS_PROGRAM_SLOT_IN_USE 0x01C7
#define CSD_STATUS_PROGRAM_LOAD_BYTES_EXCEEDED 0x01C8 /* CSD_MAX_LOADING_BYTES in uploads */
#define CSD_STATUS_HOP_LIMIT_EXCEEDED 0x01C9 /* 1.2: a chase still going at its hop limit */

/* Status code type and code of a status value, DNR and More bits removed. */
#define CSD_STATUS_CODE(s) ((uint16_t)((s) & 0x07FF))

/* English name of a status value ("Invalid Program"), or NULL for one not named here. */
static inline const char *csd_status_name(uint16_t status)
{
    switch (CSD_STATUS_CODE(status)) {
    case CSD_STATUS_SUCCESS: return "Success";
    case CSD_STATUS_INVALID_OPCODE: return "Invalid Command Opcode";
    case CSD_STATUS_INVALID_FIELD: return "Invalid Field in Command";
    case CSD_STATUS_DATA_TRANSFER_ERROR: return "Data Transfer Error";
    case CSD_STATUS_INTERNAL_ERROR: return "Internal Error";
    case CSD_STATUS_ABORT_REQUESTED: return "Command Abort Requested";
    case CSD_STATUS_SQ_DELETED: return "Command Aborted due to SQ Deletion";
    case CSD_STATUS_INVALID_NAMESPACE: return "Invalid Namespace or Format";
    case CSD_STATUS_LBA_OUT_OF_RANGE: return "LBA Out of Range";
    case CSD_STATUS_HOST_ABORTED: return "Host Aborted Command";
    case CSD_STATUS_COMMAND_INTERRUPTED: return "Command Interrupted";
    case CSD_STATUS_COMPARE_FAILURE: return "Compare Failure";
    case CSD_STATUS_WRITE_FAULT: return "Write Fault";
    case CSD_STATUS_UNRECOVERED_READ_ERROR: return "Unrecovered Read Error";
    case CSD_STATUS_E2E_GUARD_CHECK_ERROR: return "End-to-end Guard Check Error";
    case CSD_STATUS_E2E_APP_TAG_CHECK_ERROR: return "End-to-end Application Tag Check Error";
    case CSD_STATUS_E2E_REF_TAG_CHECK_ERROR: return "End-to-end Reference Tag Check Error";
    case CSD_STATUS_ACCESS_DENIED: return "Access Denied";
    case CSD_STATUS_DEALLOCATED_OR_UNWRITTEN: return "Deallocated or Unwritten Logical Block";
    case CSD_STATUS_INVALID_PROGRAM: return "Invalid Program";
    case CSD_STATUS_INVALID_DESCRIPTOR: return "Invalid Descriptor";
    case CSD_STATUS_SLM_OUT_OF_BOUNDS: return "SLM Range Out of Bounds";
    case CSD_STATUS_INVALID_PARAMETERS: return "Invalid Parameters";
    case CSD_STATUS_OUTPUT_OVERFLOW: return "Output Overflow";
    case CSD_STATUS_PROGRAM_FAULT: return "Program Fault";
    case CSD_STATUS_INVALID_PROGRAM_IMAGE: return "Invalid Program Image";
    case CSD_STATUS_PROGRAM_SLOT_IN_USE: return "Program Slot In Use";
    case CSD_STATUS_PROGRAM_LOAD_BYTES_EXCEEDED: return "Program Load Bytes Exceeded";
    case CSD_STATUS_HOP_LIMIT_EXCEEDED: return "Hop Limit Exceeded";
    default: return NULL;
    }
}

/* The status values this command set names (section 7 and the generic ones it uses). */
static const uint16_t csd_named_statuses[] = {
    CSD_STATUS_INVALID_OPCODE, CSD_STATUS_INVALID_FIELD, CSD_STATUS_DATA_TRANSFER_ERROR,
    CSD_STATUS_INTERNAL_ERROR, CSD_STATUS_ABORT_REQUESTED, CSD_STATUS_SQ_DELETED,
    CSD_STATUS_INVALID_NAMESPACE, CSD_STATUS_LBA_OUT_OF_RANGE, CSD_STATUS_HOST_ABORTED,
    CSD_STATUS_INVALID_PROGRAM, CSD_STATUS_INVALID_DESCRIPTOR, CSD_STATUS_SLM_OUT_OF_BOUNDS,
    CSD_STATUS_INVALID_PARAMETERS, CSD_STATUS_OUTPUT_OVERFLOW, CSD_STATUS_PROGRAM_FAULT,
    CSD_STATUS_INVALID_PROGRAM_IMAGE, CSD_STATUS_PROGRAM_SLOT_IN_USE,
    CSD_STATUS_PROGRAM_LOAD_BYTES_EXCEEDED, CSD_STATUS_HOP_LIMIT_EXCEEDED,
    CSD_STATUS_COMMAND_INTERRUPTED, CSD_STATUS_COMPARE_FAILURE,
};

/* Execute descriptor. */
#define CSD_DESC_MAGIC "CSDX"
#define CSD_DESC_VERSION 1
#define CSD_DESC_HEADER_SIZE 16u
#define CSD_DESC_RANGE_SIZE 16u
#define CSD_MAX_DESC_LEN 4096u
#define CSD_MAX_RANGES 16u

struct csd_desc_header {
    char magic[4];
    uint16_t version;
    uint16_t program_id;
    uint16_t nr_ranges;
    uint16_t flags;
    uint32_t param_len;
};

struct csd_desc_range {
    uint64_t offset;
    uint64_t length;
};

/* Bytes of a descriptor with nr_ranges ranges and param_len parameter bytes. */
static inline uint64_t csd_desc_size(uint32_t nr_ranges, uint32_t param_len)
{
    return CSD_DESC_HEADER_SIZE + (uint64_t)CSD_DESC_RANGE_SIZE * nr_ranges + param_len;
}

/*
 * Checks a descriptor of len bytes (magic, version, flags, 1 <= nr_ranges <= max_ranges,
 * a size that agrees with len) and copies its header to *h. Returns CSD_STATUS_SUCCESS or
 * Invalid Descriptor (DNR). Ranges and program are the reader's to check.
 */
static inline uint16_t csd_desc_parse(const void *desc, uint32_t len, uint32_t max_ranges,
                                      struct csd_desc_header *h)
{
    if (len < sizeof(*h) || len > CSD_MAX_DESC_LEN)
        return CSD_STATUS_INVALID_DESCRIPTOR | CSD_STATUS_DNR;
    memcpy(h, desc, sizeof(*h));
    if (memcmp(h->magic, CSD_DESC_MAGIC, 4) != 0 || h->version != CSD_DESC_VERSION ||
        h->flags != 0 || h->nr_ranges == 0 || h->nr_ranges > max_ranges ||
        csd_desc_size(h->nr_ranges, h->param_len) != len)
        return CSD_STATUS_INVALID_DESCRIPTOR | CSD_STATUS_DNR;
    return CSD_STATUS_SUCCESS;
}

/* Range i of a descriptor (i < nr_ranges, checked by the caller). */
static inline struct csd_desc_range csd_desc_range_get(const void *desc, uint32_t i)
{
    struct csd_desc_range r;

    memcpy(&r, (const uint8_t *)desc + CSD_DESC_HEADER_SIZE + CSD_DESC_RANGE_SIZE * i, sizeof(r));
    return r;
}

/* Sets range i of a descriptor. */
static inline void csd_desc_range_set(void *desc, uint32_t i, struct csd_desc_range r)
{
    memcpy((uint8_t *)desc + CSD_DESC_HEADER_SIZE + CSD_DESC_RANGE_SIZE * i, &r, sizeof(r));
}

/* The parameter bytes of a descriptor with nr_ranges ranges. */
static inline const uint8_t *csd_desc_params(const void *desc, uint32_t nr_ranges)
{
    return (const uint8_t *)desc + CSD_DESC_HEADER_SIZE + CSD_DESC_RANGE_SIZE * nr_ranges;
}

/*
 * Writes a descriptor into buf (csd_desc_size(nr_ranges, param_len) bytes): header,
 * ranges (offset/length pairs, nr_ranges of them) and param_len bytes of params.
 */
static inline void csd_desc_encode(void *buf, uint16_t program, uint16_t nr_ranges,
                                   const struct csd_desc_range *ranges, const void *params,
                                   uint32_t param_len)
{
    struct csd_desc_header h;
    uint32_t i;

    memcpy(h.magic, CSD_DESC_MAGIC, 4);
    h.version = CSD_DESC_VERSION;
    h.program_id = program;
    h.nr_ranges = nr_ranges;
    h.flags = 0;
    h.param_len = param_len;
    memcpy(buf, &h, sizeof(h));
    for (i = 0; i < nr_ranges; i++)
        csd_desc_range_set(buf, i, ranges[i]);
    if (param_len)
        memcpy((uint8_t *)buf + CSD_DESC_HEADER_SIZE + CSD_DESC_RANGE_SIZE * nr_ranges, params,
               param_len);
}

/* Device-defined program ids. */
enum csd_program_id {
    CSD_PROG_COPY = 0x01,
    CSD_PROG_GEMM = 0x02,
    CSD_PROG_ELEMENTWISE = 0x03,
    CSD_PROG_SOFTMAX = 0x04,
    CSD_PROG_REDUCE = 0x05,
    CSD_PROG_FILTER = 0x06,
    CSD_PROG_CONVERT = 0x07,
    CSD_PROG_CHECKSUM = 0x08,
    CSD_PROG_CONV2D = 0x09,
    CSD_PROG_DECOMPRESS = 0x0A,
    CSD_PROG_GATHER = 0x0B,        /* 1.2: reads the NVM namespace the Execute names */
    CSD_PROG_EMBEDDING_BAG = 0x0C, /* 1.2: reads the NVM namespace the Execute names */
};
#define CSD_NR_DEVICE_PROGRAMS 12

/* Name of a device-defined program ("gemm", as C0h lists it), or NULL for another id. */
static inline const char *csd_program_name(uint16_t id)
{
    static const char *const names[CSD_NR_DEVICE_PROGRAMS + 1] = {
        NULL, "copy", "gemm", "elementwise", "softmax", "reduce", "filter", "convert",
        "checksum", "conv2d", "decompress", "gather", "embedding_bag",
    };
    return id <= CSD_NR_DEVICE_PROGRAMS ? names[id] : NULL;
}

/* Program parameters (section 6). */
#define CSD_GEMM_TRANS_A 0x1u
#define CSD_GEMM_TRANS_B 0x2u
struct csd_gemm_params {
    uint32_t m, n, k, flags;
    float alpha, beta;
};
/* The depth (rows of op(B), columns of op(A)) the gemm program takes at a time: all of k when
 * B holds at most 2^20 elements, else blocks of max(64, 2^20 / n rounded down to 64) — at most
 * 4 MiB of B while n <= 16384 — a function of n and k alone. Each block after the first adds
 * into C (beta 1). A host that splits k at multiples of it (csd_gemm_tile_params) makes the
 * same OpenBLAS calls, and so gets the same bits, as one Execute over the whole. */
static inline uint64_t csd_gemm_block_k(uint64_t n, uint64_t k)
{
    if (k * n <= (1ull << 20)) return k;
    uint64_t kb = ((1ull << 20) / n) & ~63ull;
    if (kb < 64) kb = 64;
    return kb < k ? kb : k;
}
/* The rows of C the gemm program computes at a time (each block of them one OpenBLAS call per
 * block of depth, a cancellation check between): at most 256 rows, 2^30 flops a call and 2^20
 * elements of A's and of C's rows, at least 1 — a function of n and k alone. A host that tiles a
 * gemm by rows in multiples of it gets the bits of one Execute over the whole. */
static inline uint64_t csd_gemm_block_rows(uint64_t n, uint64_t k)
{
    const uint64_t kb = csd_gemm_block_k(n, k);
    uint64_t rows = (1ull << 30) / (2 * n * kb);
    if ((1ull << 20) / k < rows) rows = (1ull << 20) / k;
    if ((1ull << 20) / n < rows) rows = (1ull << 20) / n;
    return rows == 0 ? 1 : rows < 256 ? rows : 256;
}
/* gemm's parameters for a piece of the depth (32 bytes, project extension; neither TRANS flag):
 * base.k columns of A from column k_first of rows k_total wide, times B's rows k_first ..
 * k_first + base.k (the B range holds only those), into C. The blocks are those of the whole,
 * csd_gemm_block_rows/_k(n, k_total): k_first must be a multiple of csd_gemm_block_k(n,
 * k_total), and base.k one too unless the piece ends at k_total. Pass beta 1 for a piece after
 * the first, so that it adds into C as one Execute's later blocks do. */
struct csd_gemm_tile_params {
    struct csd_gemm_params base;
    uint32_t k_total, k_first;
};

enum csd_elementwise_op {
    CSD_EW_ADD = 0, CSD_EW_SUB = 1, CSD_EW_MUL = 2, CSD_EW_DIV = 3, CSD_EW_MAX = 4,
    CSD_EW_MIN = 5,
    CSD_EW_RELU = 16, CSD_EW_SIGMOID = 17, CSD_EW_TANH = 18, CSD_EW_GELU = 19,
    CSD_EW_AXPB = 20, CSD_EW_EXP = 21, CSD_EW_ABS = 22,
};
struct csd_elementwise_params {
    uint32_t op, count;
    float a, b;
};

struct csd_softmax_params {
    uint32_t rows, cols;
};

enum csd_reduce_op {
    CSD_RED_SUM = 0, CSD_RED_MIN = 1, CSD_RED_MAX = 2, CSD_RED_MEAN = 3,
    CSD_RED_ARGMAX = 4, CSD_RED_ARGMIN = 5,
};
enum csd_dtype { CSD_DT_F32 = 0, CSD_DT_F64 = 1, CSD_DT_I32 = 2, CSD_DT_I64 = 3 };
struct csd_reduce_params {
    uint32_t op, dtype, rows, cols;
};
/* reduce's parameters with a carry (24 bytes, project extension): op sum of f32 or f64 only,
 * row 0's sum starts from sum0 instead of 0 (the sum so far of a row streamed in pieces, so
 * that the pieces add in element order exactly as one Execute over the whole row would). */
struct csd_reduce_carry_params {
    struct csd_reduce_params base;
    double sum0;
};

enum csd_field_type {
    CSD_FT_I32 = 0, CSD_FT_I64 = 1, CSD_FT_U32 = 2, CSD_FT_U64 = 3, CSD_FT_F32 = 4,
    CSD_FT_F64 = 5,
};
enum csd_filter_op {
    CSD_CMP_EQ = 0, CSD_CMP_NE = 1, CSD_CMP_LT = 2, CSD_CMP_LE = 3, CSD_CMP_GT = 4,
    CSD_CMP_GE = 5, CSD_CMP_BETWEEN = 6,
};
enum csd_filter_output { CSD_FILTER_RECORDS = 0, CSD_FILTER_INDICES = 1 };
struct csd_filter_params {
    uint32_t record_size, count, field_offset;
    uint16_t field_type, op;
    /* reserved: 0, or in indices mode the index of the range's first record (project
     * extension: a piece of a larger table streamed through SLM), added to every index */
    uint32_t output_mode, reserved;
    uint8_t lo[8], hi[8]; /* i64, u64 or f64 by field type */
};

enum csd_convert_op {
    CSD_CVT_F32_F16 = 0, CSD_CVT_F32_BF16 = 1, CSD_CVT_F16_F32 = 2, CSD_CVT_BF16_F32 = 3,
    CSD_CVT_I8_F32 = 4, CSD_CVT_F32_I8 = 5, CSD_CVT_U8_F32 = 6,
};
struct csd_convert_params {
    uint32_t op, count;
    float scale;
    int32_t zero_point;
};

enum csd_checksum_algo { CSD_CKSUM_CRC32C = 0, CSD_CKSUM_XXH64 = 1 };

#define CSD_CONV2D_HAS_BIAS 0x1u
struct csd_conv2d_params {
    uint32_t n, c, h, w, k, r, s, stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w,
        flags;
};

enum csd_decompress_algo { CSD_DECOMP_ZSTD = 0, CSD_DECOMP_LZ4 = 1 };

/* gather (0Bh, 1.2): ranges entries, out; entries are count csd_gather_entry. */
struct csd_gather_params {
    uint32_t count, reserved;
};
struct csd_gather_entry {
    uint64_t lba;    /* first LBA of the piece */
    uint32_t offset; /* bytes from that LBA's start */
    uint32_t length; /* bytes */
};

/* embedding_bag (0Ch, 1.2): ranges indices, offsets, per_sample_weights (length 0: none), out. */
enum csd_emb_dtype { CSD_EMB_F32 = 0, CSD_EMB_F16 = 1, CSD_EMB_BF16 = 2 };
enum csd_emb_mode { CSD_EMB_SUM = 0, CSD_EMB_MEAN = 1, CSD_EMB_MAX = 2 };
enum csd_emb_index { CSD_EMB_I64 = 0, CSD_EMB_I32 = 1 };
#define CSD_EMB_INCLUDE_LAST_OFFSET 0x1u
struct csd_embedding_bag_params {
    uint64_t table_lba; /* the table's first row starts at this LBA */
    uint64_t num_rows;
    uint32_t row_dim, dtype, mode, index_type, num_bags, flags;
};

/*
 * Media programs (gather, embedding_bag) stage what they read from the namespace in device
 * memory of their own: at most this many bytes of distinct blocks per Execute (1.2).
 */
#define CSD_MEDIA_MAX_STAGE (64u << 20)

/* The names users spell parameter values with (csdctl, Python); each list ends with NULL. */
struct csd_name {
    const char *name;
    uint32_t value;
};
static const struct csd_name csd_elementwise_op_names[] = {
    {"add", CSD_EW_ADD}, {"sub", CSD_EW_SUB}, {"mul", CSD_EW_MUL}, {"div", CSD_EW_DIV},
    {"max", CSD_EW_MAX}, {"min", CSD_EW_MIN}, {"relu", CSD_EW_RELU},
    {"sigmoid", CSD_EW_SIGMOID}, {"tanh", CSD_EW_TANH}, {"gelu", CSD_EW_GELU},
    {"axpb", CSD_EW_AXPB}, {"exp", CSD_EW_EXP}, {"abs", CSD_EW_ABS}, {NULL, 0},
};
static const struct csd_name csd_reduce_op_names[] = {
    {"sum", CSD_RED_SUM}, {"min", CSD_RED_MIN}, {"max", CSD_RED_MAX}, {"mean", CSD_RED_MEAN},
    {"argmax", CSD_RED_ARGMAX}, {"argmin", CSD_RED_ARGMIN}, {NULL, 0},
};
static const struct csd_name csd_dtype_names[] = {
    {"f32", CSD_DT_F32}, {"f64", CSD_DT_F64}, {"i32", CSD_DT_I32}, {"i64", CSD_DT_I64}, {NULL, 0},
};
static const struct csd_name csd_field_type_names[] = {
    {"i32", CSD_FT_I32}, {"i64", CSD_FT_I64}, {"u32", CSD_FT_U32}, {"u64", CSD_FT_U64},
    {"f32", CSD_FT_F32}, {"f64", CSD_FT_F64}, {NULL, 0},
};
static const struct csd_name csd_filter_op_names[] = {
    {"eq", CSD_CMP_EQ}, {"ne", CSD_CMP_NE}, {"lt", CSD_CMP_LT}, {"le", CSD_CMP_LE},
    {"gt", CSD_CMP_GT}, {"ge", CSD_CMP_GE}, {"between", CSD_CMP_BETWEEN}, {NULL, 0},
};
static const struct csd_name csd_convert_op_names[] = {
    {"f32_f16", CSD_CVT_F32_F16}, {"f32_bf16", CSD_CVT_F32_BF16}, {"f16_f32", CSD_CVT_F16_F32},
    {"bf16_f32", CSD_CVT_BF16_F32}, {"i8_f32", CSD_CVT_I8_F32}, {"f32_i8", CSD_CVT_F32_I8},
    {"u8_f32", CSD_CVT_U8_F32}, {NULL, 0},
};
static const struct csd_name csd_checksum_algo_names[] = {
    {"crc32c", CSD_CKSUM_CRC32C}, {"xxh64", CSD_CKSUM_XXH64}, {NULL, 0},
};
static const struct csd_name csd_bpf_mode_names[] = {
    {"filter", CSD_BPF_FILTER}, {"map", CSD_BPF_MAP}, {"reduce", CSD_BPF_REDUCE}, {"chase", CSD_BPF_CHASE},
    {NULL, 0},
};
static const struct csd_name csd_emb_dtype_names[] = {
    {"f32", CSD_EMB_F32}, {"f16", CSD_EMB_F16}, {"bf16", CSD_EMB_BF16}, {NULL, 0},
};
static const struct csd_name csd_emb_mode_names[] = {
    {"sum", CSD_EMB_SUM}, {"mean", CSD_EMB_MEAN}, {"max", CSD_EMB_MAX}, {NULL, 0},
};
static const struct csd_name csd_decompress_algo_names[] = {
    {"zstd", CSD_DECOMP_ZSTD}, {"lz4", CSD_DECOMP_LZ4}, {NULL, 0},
};

/* Log page C0h: capabilities. */
struct csd_caps_entry {
    uint16_t id;
    uint8_t type; /* enum csd_program_type */
    uint8_t flags;
    uint32_t reserved;
    char name[24];
};
struct csd_caps_log {
    char magic[4]; /* "CSD1" */
    uint32_t version; /* 0x00010000 */
    uint64_t slm_size;
    uint32_t compute_units;
    uint32_t max_desc_len;
    uint32_t max_ranges;
    uint32_t nr_programs;
    uint32_t max_program_bytes; /* 1.1 */
    uint16_t downloadable_slots; /* 1.1 */
    uint16_t program_types; /* 1.1: bit n = program type n supported */
    uint32_t features; /* CSD_FEATURE_* (project extension, section 10) */
    uint32_t max_chase_hops; /* 1.2: CSD_BPF_MAX_HOPS (0 before) */
    uint8_t reserved[16];
    struct csd_caps_entry programs[]; /* nr_programs entries */
};

/* Log page C1h: statistics (u64 counters from offset 8, per-program counts from 256). */
enum csd_stat {
    CSD_STAT_SLM_LOAD_CMDS, CSD_STAT_SLM_STORE_CMDS, CSD_STAT_SLM_WRITE_CMDS,
    CSD_STAT_SLM_READ_CMDS, CSD_STAT_EXEC_CMDS, CSD_STAT_EXEC_ERRORS,
    CSD_STAT_BYTES_NS_TO_SLM, CSD_STAT_BYTES_SLM_TO_NS, CSD_STAT_BYTES_HOST_TO_SLM,
    CSD_STAT_BYTES_SLM_TO_HOST, CSD_STAT_EXEC_BUSY_NS,
    CSD_STAT_PROGRAM_LOAD_CMDS, CSD_STAT_PROGRAM_UNLOAD_CMDS, CSD_STAT_PROGRAM_LOAD_REJECTS,
    /* the timing model (project extension, docs/timing-model.md): modelled busy time */
    CSD_STAT_MODEL_LINK_IN_BUSY_NS, CSD_STAT_MODEL_LINK_OUT_BUSY_NS, CSD_STAT_MODEL_MEDIA_BUSY_NS,
    CSD_STAT_MODEL_SLM_BUSY_NS, CSD_STAT_MODEL_COMPUTE_BUSY_NS, CSD_STAT_MODEL_DELAY_NS,
    CSD_STAT_MODEL_OVERRUNS,
    /* exact mode (1.3, docs/timing-model.md): how often and how long (host ns) the guest was held */
    CSD_STAT_MODEL_HOLDS, CSD_STAT_MODEL_HOLD_NS,
    CSD_STAT_COUNT
};
#define CSD_STATS_COUNTERS_OFFSET 8u
#define CSD_STATS_PER_PROGRAM_OFFSET 256u
#define CSD_STATS_PER_PROGRAM_COUNT 512u /* ids 0..01FFh */
#define CSD_LOG_STATS_SIZE (CSD_STATS_PER_PROGRAM_OFFSET + 8u * CSD_STATS_PER_PROGRAM_COUNT)
#define CSD_LOG_MAX_SIZE CSD_LOG_STATS_SIZE

/* Bytes of a log page of the command set (C1h grew to 4352 bytes in version 1.1). */
static inline uint32_t csd_log_page_size(uint8_t lid)
{
    return lid == CSD_LOG_STATISTICS ? CSD_LOG_STATS_SIZE : CSD_LOG_PAGE_SIZE;
}
#define CSD_STATS_MAGIC "CSDS"
#define CSD_CAPS_MAGIC "CSD1"
#define CSD_CAPS_ENTRIES_OFFSET 64u
#define CSD_LOG_VERSION 0x00010001u /* 1.1: version 1.2 left it unchanged */

/* Statistics counter names, in log page order (as csdctl and Python show them). */
static const char *const csd_stat_names[CSD_STAT_COUNT] = {
    "slm_load_cmds", "slm_store_cmds", "slm_write_cmds", "slm_read_cmds", "exec_cmds",
    "exec_errors", "bytes_namespace_to_slm", "bytes_slm_to_namespace", "bytes_host_to_slm",
    "bytes_slm_to_host", "exec_busy_ns", "program_load_cmds", "program_unload_cmds",
    "program_load_rejects", "model_link_in_busy_ns", "model_link_out_busy_ns",
    "model_media_busy_ns", "model_slm_busy_ns", "model_compute_busy_ns", "model_delay_ns",
    "model_overruns", "model_holds", "model_hold_ns",
};

#ifdef __cplusplus
}
#endif

#endif /* CSD_SPEC_H */
