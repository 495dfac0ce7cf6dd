/* SPDX-License-Identifier: MIT */
/*
 * nvme_cs.h - the standard NVMe computational storage command sets as the project reads
 * them (spec/nvme-cs.md; field by field with its source in docs/nvme-cs.md):
 * Subsystem Local Memory (CSI 03h) and Computational Programs (CSI 04h), NVMe 2.1.
 * The second front end's one home for layouts, opcodes and status values; the device core
 * decodes with it and so do the host library and the tests. Marks as in the contract:
 * [C] confirmed by public sources, [A] two implementations agree, [P] the project's choice.
 * Little-endian, like csd_spec.h; compiles in the kernel too.
 */
#ifndef NVME_CS_H
#define NVME_CS_H

#ifdef __KERNEL__
#include <linux/types.h>
#else
#include <stdint.h>
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Command Set Identifiers and their bits in the I/O Command Set vector (CNS 1Ch) [C]. */
#define NVME_CS_CSI_SLM 0x03u     /* memory namespace */
#define NVME_CS_CSI_CP 0x04u      /* compute namespace */
#define NVME_CS_IOCS_VEC_SLM (1u << 3)
#define NVME_CS_IOCS_VEC_CP (1u << 4)

/* Admin opcodes [C]. */
enum nvme_cs_admin_opcode {
    NVME_CS_ADM_LOAD_PROGRAM = 0x85,
    NVME_CS_ADM_PROGRAM_ACTIVATION = 0x88,
    NVME_CS_ADM_MEMORY_RANGE_SET = 0x89,
};

/* I/O opcodes of the memory namespace [A; Fill P]. */
enum nvme_cs_mem_opcode {
    NVME_CS_MEM_COPY = 0x01,  /* LBAs of an NVM namespace -> memory */
    NVME_CS_MEM_READ = 0x02,  /* memory -> host */
    NVME_CS_MEM_FILL = 0x04,  /* a 32-bit pattern over a byte range */
    NVME_CS_MEM_WRITE = 0x05, /* host -> memory */
};

/* I/O opcode of the compute namespace [A]. */
#define NVME_CS_EXECUTE_PROGRAM 0x01

/* Commands Supported and Effects (log 05h) of an I/O command [C]: supported (CSUPP), and it
 * may change the contents of the namespace or of memory it names (LBCC, for which Linux asks
 * a passthrough caller for a writable file). */
#define NVME_CS_EFFECTS_CSUPP (1u << 0)
#define NVME_CS_EFFECTS_LBCC (1u << 1)

/* NVM Copy (19h) with source descriptor format 4h: byte ranges of a memory namespace [C/P]. */
#define NVME_CS_NVM_COPY 0x19
#define NVME_CS_COPY_FORMAT_MEMORY 0x4u

/* Log page identifiers [C]. */
enum nvme_cs_log {
    NVME_CS_LOG_REACHABILITY_GROUPS = 0x1A,
    NVME_CS_LOG_REACHABILITY_ASSOC = 0x1B,
    NVME_CS_LOG_PROGRAM_LIST = 0x82,
    NVME_CS_LOG_DL_PROGRAM_TYPES = 0x83,
    NVME_CS_LOG_MEMORY_RANGE_SETS = 0x84,
};

/*
 * Memory range descriptor, 32 bytes [A]: a byte range of a memory namespace. Memory Range
 * Set Management's data, Execute Program's inline ranges and NVM Copy's format 4h source
 * descriptors all use it [P for the last].
 */
struct nvme_cs_mem_range {
    uint32_t nsid;     /* the memory namespace */
    uint32_t len;      /* bytes */
    uint64_t sb;       /* starting byte */
    uint8_t rsvd16[16];
};

/*
 * Source range of Memory Copy (formats 2h, 32 bytes, and 3h, 40 bytes) [C: NVM Copy's
 * formats 2h/3h]: the namespace in bytes 0-3, SLBA at 8, NLB (0's based) at 16.
 */
struct nvme_cs_copy_src {
    uint32_t snsid;
    uint8_t rsvd4[4];
    uint64_t slba;
    uint16_t nlb;      /* 0's based */
    uint8_t rsvd18[14];
};
#define NVME_CS_COPY_FORMAT_2 0x2u /* 32-byte descriptors */
#define NVME_CS_COPY_FORMAT_3 0x3u /* 40-byte descriptors (the 8 more bytes are ignored) */
#define NVME_CS_MAX_COPY_RANGES 256u /* CDW12 bits 7:0, 0's based [C] */

/* Bytes of one source descriptor of a copy format (2h, 3h: Memory Copy; 4h: NVM Copy
 * from memory, a struct nvme_cs_mem_range), 0 for a format the front end does not take. */
static inline uint32_t nvme_cs_copy_desc_size(uint32_t format)
{
    return format == NVME_CS_COPY_FORMAT_3 ? 40u
         : (format == NVME_CS_COPY_FORMAT_2 || format == NVME_CS_COPY_FORMAT_MEMORY) ? 32u : 0u;
}

/* Memory Read / Write / Fill: CDW10-11 starting byte, CDW12 length (a multiple of 4 [P]);
 * Fill: CDW13 the 32-bit pattern [P]. */
#define NVME_CS_MEM_ALIGN 4u

/* Memory Copy: CDW10-11 destination starting byte; CDW12 bits 7:0 ranges (0's based), bits 11:8 format. */
static inline uint32_t nvme_cs_copy_nr(uint32_t cdw12) { return (cdw12 & 0xffu) + 1; }
static inline uint32_t nvme_cs_copy_format(uint32_t cdw12) { return (cdw12 >> 8) & 0xfu; }

/* Memory Range Set Management: CDW10 bits 3:0 select, bits 31:16 RSID (delete); CDW11 ranges (0's based) [A/P]. */
enum nvme_cs_mrsm_select { NVME_CS_MRSM_CREATE = 0, NVME_CS_MRSM_DELETE = 1 };
#define NVME_CS_MAX_RANGES_PER_SET 16u   /* [P]: an Execute's ranges (CSD_MAX_RANGES) */
#define NVME_CS_MAX_RANGE_SETS 64u       /* [P] */

/*
 * Execute Program: CDW2 bits 15:0 program index, bits 31:16 range set id (0: the ranges
 * are in the data, first); CDW3 number of ranges; CDW4 data length; CDW10-11 CPARAM1,
 * CDW12-13 CPARAM2 (unused by the device-defined programs [P]); data = [inline ranges]
 * then the program's parameters. DW0-DW1 of the completion: the program's 64-bit result.
 */
static inline uint16_t nvme_cs_exec_program(uint32_t cdw2) { return cdw2 & 0xffffu; }
/*
 * The data length of Execute Program: CDW4, or, when CDW4 is 0, CDW15 [P]. Linux's
 * passthrough (NVME_IOCTL_IO_CMD, io_uring) cannot set CDW4-5 (they are the metadata
 * pointer, which it fills itself), so a host there gives the length in CDW15.
 */
static inline uint32_t nvme_cs_exec_data_len(uint32_t cdw4, uint32_t cdw15) { return cdw4 ? cdw4 : cdw15; }
static inline uint16_t nvme_cs_exec_rsid(uint32_t cdw2) { return cdw2 >> 16; }

/*
 * Load Program: CDW10 bits 15:0 program index, bits 23:16 program type, bit 24 select
 * (0 load, 1 unload); CDW11 program size; CDW12-13 program identifier (bits 15:0 of CDW12:
 * the record size of an eBPF program [P]); CDW14 chunk length; CDW15 chunk offset.
 */
#define NVME_CS_LOAD_UNLOAD (1u << 24)
static inline uint16_t nvme_cs_load_index(uint32_t cdw10) { return cdw10 & 0xffffu; }
static inline uint8_t nvme_cs_load_type(uint32_t cdw10) { return (cdw10 >> 16) & 0xffu; }
/* The eBPF program type of the standard front end: the project's value, not a standard one [P]. */
#define NVME_CS_PROGRAM_TYPE_EBPF 0x01u
/* Limits of downloaded programs [P]: the image bytes held at once (loaded or loading:
 * Maximum Program Bytes Exceeded past it) and the programs active at once (Maximum Programs
 * Activated past it; device-defined programs and plug-ins do not count). */
#define NVME_CS_MAX_PROGRAM_BYTES_HELD (16u << 20)
#define NVME_CS_MAX_ACTIVE_DOWNLOADED 16u

/* Program Activation Management: CDW10 bits 15:0 program index, bit 16 select (0 activate, 1 deactivate). */
#define NVME_CS_PAM_DEACTIVATE (1u << 16)

/*
 * Log page layouts [P: the project's until the text is at hand; little-endian]:
 * Program List (82h): u32 entries, u32 reserved, then per program (index order) a
 *   struct nvme_cs_program_entry.
 * Downloadable Program Types List (83h): u32 types, u32 reserved, then one byte per type
 *   (01h eBPF).
 * Memory Range Set List (84h): u32 sets, u32 reserved, then per set (RSID order) a
 *   struct nvme_cs_range_set_entry followed by its ranges (struct nvme_cs_mem_range).
 */
enum nvme_cs_program_kind { NVME_CS_PROGRAM_DEVICE = 0, NVME_CS_PROGRAM_PLUGIN = 1, NVME_CS_PROGRAM_DOWNLOADED = 2 };
#define NVME_CS_PROGRAM_ACTIVE 0x01u
struct nvme_cs_program_entry {
    uint16_t index;
    uint8_t kind;      /* enum nvme_cs_program_kind */
    uint8_t flags;     /* NVME_CS_PROGRAM_ACTIVE */
    uint8_t type;      /* downloaded: its program type; else 0 */
    uint8_t rsvd5[11];
};
struct nvme_cs_range_set_entry {
    uint16_t rsid;
    uint16_t nr_ranges;
    uint8_t rsvd4[4];
};
/*
 * Reachability Groups (1Ah) and Reachability Associations (1Bh) [C: identifiers; P:
 * layouts]: a header (u16 entries, 6 reserved, u64 change count) then per group a struct
 * nvme_cs_reach_group followed by its NSIDs (u32 each), per association a struct
 * nvme_cs_reach_assoc followed by its RGIDs (u32 each). The device has one group (RGID
 * 1: every NVM namespace, the memory and the compute namespace) and one association
 * (RAID 1: group 1); both change counts stay 0 (namespaces are fixed at power-on).
 */
struct nvme_cs_reach_header {
    uint16_t entries;
    uint8_t rsvd2[6];
    uint64_t chngc;
};
struct nvme_cs_reach_group {
    uint32_t rgid;
    uint32_t nnid;     /* NSIDs that follow */
    uint64_t chngc;
    uint8_t rsvd16[16];
};
struct nvme_cs_reach_assoc {
    uint32_t raid;
    uint32_t nrid;     /* RGIDs that follow */
    uint64_t chngc;
    uint8_t rasp;      /* bit 0: the groups of the association reach each other [P] */
    uint8_t rsvd17[15];
};
#define NVME_CS_REACH_GROUP 1u
#define NVME_CS_REACH_ASSOC 1u

#define NVME_CS_LOG_MAX_SIZE (8u + NVME_CS_MAX_RANGE_SETS * (8u + NVME_CS_MAX_RANGES_PER_SET * 32u))

/* Command set specific status codes (SCT 1h: the status field's bits 10:8 = 1) [A]. */
#define NVME_CS_SCT_CMD_SPECIFIC 0x100u
enum nvme_cs_status {
    NVME_CS_INCOMPATIBLE_NS_OR_FORMAT = 0x185,
    NVME_CS_NS_NOT_REACHABLE = 0x188,
    NVME_CS_INVALID_MEMORY_NS = 0x18B,
    NVME_CS_INVALID_MEMORY_RANGE_SET = 0x18C,
    NVME_CS_INVALID_MEMORY_RANGE_SET_ID = 0x18D,
    NVME_CS_INVALID_PROGRAM_DATA = 0x18E,
    NVME_CS_INVALID_PROGRAM_INDEX = 0x18F,
    NVME_CS_INVALID_PROGRAM_TYPE = 0x190,
    NVME_CS_MAX_MEMORY_RANGES_EXCEEDED = 0x191,
    NVME_CS_MAX_MEMORY_RANGE_SETS_EXCEEDED = 0x192,
    NVME_CS_MAX_PROGRAMS_ACTIVATED = 0x193,
    NVME_CS_MAX_PROGRAM_BYTES_EXCEEDED = 0x194,
    NVME_CS_MEMORY_RANGE_SET_IN_USE = 0x195,
    NVME_CS_NO_PROGRAM = 0x196,
    NVME_CS_OVERLAPPING_MEMORY_RANGES = 0x197,
    NVME_CS_PROGRAM_NOT_ACTIVATED = 0x198,
    NVME_CS_PROGRAM_IN_USE = 0x199,
    NVME_CS_PROGRAM_INDEX_NOT_DOWNLOADABLE = 0x19A,
    NVME_CS_PROGRAM_TOO_BIG = 0x19B,
};

/* The name of a command set specific status (above), or NULL. */
static inline const char *nvme_cs_status_name(uint16_t sc)
{
    switch (sc & 0x7ffu) {
    case NVME_CS_INCOMPATIBLE_NS_OR_FORMAT: return "Incompatible Namespace or Format";
    case NVME_CS_NS_NOT_REACHABLE: return "Namespace Not Reachable";
    case NVME_CS_INVALID_MEMORY_NS: return "Invalid Memory Namespace";
    case NVME_CS_INVALID_MEMORY_RANGE_SET: return "Invalid Memory Range Set";
    case NVME_CS_INVALID_MEMORY_RANGE_SET_ID: return "Invalid Memory Range Set Identifier";
    case NVME_CS_INVALID_PROGRAM_DATA: return "Invalid Program Data";
    case NVME_CS_INVALID_PROGRAM_INDEX: return "Invalid Program Index";
    case NVME_CS_INVALID_PROGRAM_TYPE: return "Invalid Program Type";
    case NVME_CS_MAX_MEMORY_RANGES_EXCEEDED: return "Maximum Memory Ranges Exceeded";
    case NVME_CS_MAX_MEMORY_RANGE_SETS_EXCEEDED: return "Maximum Memory Range Sets Exceeded";
    case NVME_CS_MAX_PROGRAMS_ACTIVATED: return "Maximum Programs Activated";
    case NVME_CS_MAX_PROGRAM_BYTES_EXCEEDED: return "Maximum Program Bytes Exceeded";
    case NVME_CS_MEMORY_RANGE_SET_IN_USE: return "Memory Range Set In Use";
    case NVME_CS_NO_PROGRAM: return "No Program";
    case NVME_CS_OVERLAPPING_MEMORY_RANGES: return "Overlapping Memory Ranges";
    case NVME_CS_PROGRAM_NOT_ACTIVATED: return "Program Not Activated";
    case NVME_CS_PROGRAM_IN_USE: return "Program In Use";
    case NVME_CS_PROGRAM_INDEX_NOT_DOWNLOADABLE: return "Program Index Not Downloadable";
    case NVME_CS_PROGRAM_TOO_BIG: return "Program Too Big";
    default: return (const char *)0;
    }
}

#ifdef __cplusplus
}
#endif

#endif /* NVME_CS_H */
