/* SPDX-License-Identifier: (GPL-2.0-or-later WITH Linux-syscall-note) OR MIT */
/*
 * csd_ioctl.h - the interface of csd.ko (/dev/csd<N>), shared by the module and libcsd.
 *
 * SLM is handed out in allocations that belong to the open file: every SLM address a
 * caller gives is (handle, offset) inside one of its own allocations, checked by the
 * module; allocations are freed when the file is closed (also when the process dies).
 * Calls return 0 with the command's NVMe status in the argument's `status` field, or a
 * negative errno for bad arguments or failures to reach the device.
 */
#ifndef _UAPI_CSD_IOCTL_H
#define _UAPI_CSD_IOCTL_H

#include <linux/ioctl.h>
#include <linux/types.h>

#define CSD_IOC_MAGIC 0xCD
#define CSD_IOC_LOG_SIZE 4352 /* the largest log page (C1h of command set 1.1) */

/*
 * Version of this interface, in csd_ioc_info.api_version. 2: CSD_IOC_EXEC takes the
 * execute descriptor itself (version 1 took a list of ranges and built it). 3: program
 * load and unload; CSD_IOC_LOG fills 4352 bytes. 5: CSD_IOC_AGENT_QUEUE.
 */
#define CSD_IOC_API_VERSION 5

/* Device facts; free_bytes is SLM not allocated by anyone. */
struct csd_ioc_info {
	__u64 slm_size;
	__u64 free_bytes;
	__u64 lba_count;
	__u32 lba_size;
	__u32 compute_units;
	__u32 nr_programs;
	__u32 max_transfer; /* bytes per CSD_IOC_WRITE/READ chunk the module moves */
	__u32 api_version; /* CSD_IOC_API_VERSION */
	__u32 reserved;
};

/* A log page of the controller: C0h (capabilities) or C1h (statistics). */
struct csd_ioc_log {
	__u32 lid;
	__u32 status;
	__u64 buf; /* user pointer to CSD_IOC_LOG_SIZE bytes */
};

struct csd_ioc_alloc {
	__u64 size;  /* in: bytes (rounded up to 4 KiB) */
	__u64 align; /* in: power of two, at least 4096; 0 means 4096 */
	__u32 handle; /* out */
	__u32 reserved;
};

/* Host buffer <-> SLM allocation: [offset, offset + len) of allocation `handle`. */
struct csd_ioc_xfer {
	__u32 handle;
	__u32 status;
	__u64 offset;
	__u64 len; /* multiple of 4 */
	__u64 buf; /* user pointer */
};

/* Namespace LBAs <-> SLM allocation (SLM Load / SLM Store). */
struct csd_ioc_lba {
	__u32 handle;
	__u32 status;
	__u64 offset;
	__u64 slba;
	__u32 nlb; /* LBAs, 1 .. 65536 */
	__u32 reserved;
};

/*
 * Plain namespace I/O for the object store: read / write LBAs, flush (nlb 0, buf 0), or
 * Compare and Write (the drive's 8Dh: buf holds the nlb LBAs expected, then the nlb LBAs
 * to write; at most 64 KiB compared; status Compare Failure on a mismatch).
 */
#define CSD_NS_IO_READ 0
#define CSD_NS_IO_WRITE 1
#define CSD_NS_IO_COMPARE_WRITE 2
struct csd_ioc_ns_io {
	__u32 write; /* CSD_NS_IO_* */
	__u32 status;
	__u64 slba;
	__u64 nlb;
	__u64 buf; /* user pointer; 0 with nlb 0 means Flush */
};

/*
 * Execute: desc points to an execute descriptor exactly as the drive takes it (the
 * command set's section 4), whose range offsets are offsets inside allocation `handle`
 * (a range of length 0 is empty and its offset ignored). The module checks every range
 * against that allocation and rewrites its offset to the drive's before sending it. A
 * descriptor that cannot be parsed completes as the drive would complete it (status
 * Invalid Field for desc_len 0 or over 4096, Invalid Descriptor for a bad header).
 */
struct csd_ioc_exec {
	__u32 handle;
	__u32 desc_len;
	__u64 desc; /* user pointer to desc_len bytes */
	__u32 status;
	__u32 dw0;
	__u32 dw1;
	__u32 reserved;
};

/*
 * Peer-to-peer SLM Read: SLM [offset, offset + len) of allocation `handle` goes straight
 * into BAR `bar` of the PCI device the module was loaded with (p2p_peer=DDDD:BB:DD.F),
 * at bar_offset, by the drive's own DMA; no host memory buffer is involved. bar_offset
 * and len are multiples of 4 KiB. Only the BAR the administrator configured (p2p_bar),
 * and only the opener's own sub-window of the configured window (p2p_windows; the whole
 * window, p2p_offset and p2p_size, for CAP_SYS_ADMIN) may receive it: anything else is
 * EPERM, as is any transfer by a user with no sub-window; a malformed p2p_windows, EINVAL.
 */
struct csd_ioc_p2p {
	__u32 handle;
	__u32 status;
	__u64 offset;
	__u64 len;
	__u32 bar;
	__u32 reserved;
	__u64 bar_offset;
};

/* 0x0b was CSD_IOC_P2P_GPU_READ (NVIDIA peer-to-peer), removed in version 3: never compiled. */

/*
 * Program Load of a whole image (the module sends it in chunks): slot 0 lets the module
 * pick a free one, returned in slot. The program belongs to this open file: only it can
 * run and unload it, and it is unloaded when the file is closed; the slot stays this
 * file's across every command on it, so no other file's command can reach it meanwhile.
 * status is the drive's (Program Slot In Use also for a slot another file holds); dw0 its
 * completion Dword 0 (for Invalid Program Image, the refused instruction). EDQUOT: the
 * opener's user would hold more slots (program_slots_per_user) or be uploading more image
 * bytes at once (program_loading_bytes_per_user) than the administrator allows.
 */
struct csd_ioc_program_load {
	__u64 image; /* user pointer */
	__u32 size;
	__u32 record_size;
	__u16 slot; /* in: 0 or 0100h..01FFh; out: the slot */
	__u8 type;  /* 1: eBPF */
	__u8 reserved;
	__u32 status;
	__u32 dw0;
	__u32 reserved2;
};

/*
 * Agent queue pair (CAP_SYS_ADMIN only; docs/kmod.md): an I/O submission and completion
 * queue pair of the drive, for an agent outside this guest (a host process or GPU kernel
 * that maps the peer's BAR) to drive itself, with no interrupt and no MMIO doorbell: the
 * drive polls the queue pair's shadow doorbells (QEMU's agent-poll-us). Everything lies
 * in the region [bar_offset, bar_offset + len) of the configured peer BAR (p2p_peer,
 * p2p_bar; inside the administrator's window p2p_offset/p2p_size), 4 KiB aligned: the SQ
 * (depth 64-byte entries) at sq_offset, the CQ (depth 16-byte entries) at cq_offset, the
 * doorbell block at db_offset (u32 SQ tail and u32 CQ head, written by the agent; u32 SQ
 * and CQ event indexes, written by the drive), and data buffers from data_offset to the
 * region's end. The agent addresses them for the drive as bus_addr + offset (PRPs and
 * PRP lists); a command whose data lies outside the region completes with Data Transfer
 * Error. The agent's commands reach the whole namespace nsid (no partition, no SLM
 * allocation applies: hence the capability). The pair belongs to this open file and is
 * deleted when it is closed; a controller reset ends it (the agent sees no completions).
 */
struct csd_ioc_agent_queue {
	__u64 bar_offset; /* in */
	__u64 len;        /* in */
	__u32 depth;      /* in: entries per queue, 2 to 1024 */
	__u16 qid;        /* out: the queue pair's SQ and CQ identifier */
	__u16 reserved;
	__u64 bus_addr;   /* out: the region's first byte as the drive addresses it */
	__u64 sq_offset;  /* out: offsets in the region */
	__u64 cq_offset;
	__u64 db_offset;
	__u64 data_offset;
	__u32 nsid;       /* out: the namespace of the device's commands (SLM, Execute, I/O) */
	__u32 lba_size;   /* out */
	__u32 status;     /* out: the drive's status when it refused a queue command */
	__u32 reserved2;
};

/* Program Unload of a slot this file loaded (EPERM otherwise); it waits for this file's
 * commands on the slot in flight (an upload, Executes).
 */
struct csd_ioc_program_unload {
	__u32 slot;
	__u32 status;
};

#define CSD_IOC_INFO _IOR(CSD_IOC_MAGIC, 0x00, struct csd_ioc_info)
#define CSD_IOC_LOG _IOWR(CSD_IOC_MAGIC, 0x01, struct csd_ioc_log)
#define CSD_IOC_ALLOC _IOWR(CSD_IOC_MAGIC, 0x02, struct csd_ioc_alloc)
#define CSD_IOC_FREE _IOW(CSD_IOC_MAGIC, 0x03, __u32)
#define CSD_IOC_WRITE _IOWR(CSD_IOC_MAGIC, 0x04, struct csd_ioc_xfer)
#define CSD_IOC_READ _IOWR(CSD_IOC_MAGIC, 0x05, struct csd_ioc_xfer)
#define CSD_IOC_LOAD _IOWR(CSD_IOC_MAGIC, 0x06, struct csd_ioc_lba)
#define CSD_IOC_STORE _IOWR(CSD_IOC_MAGIC, 0x07, struct csd_ioc_lba)
#define CSD_IOC_EXEC _IOWR(CSD_IOC_MAGIC, 0x08, struct csd_ioc_exec)
#define CSD_IOC_NS_IO _IOWR(CSD_IOC_MAGIC, 0x09, struct csd_ioc_ns_io)
#define CSD_IOC_P2P_READ _IOWR(CSD_IOC_MAGIC, 0x0a, struct csd_ioc_p2p)
#define CSD_IOC_PROGRAM_LOAD _IOWR(CSD_IOC_MAGIC, 0x0c, struct csd_ioc_program_load)
#define CSD_IOC_PROGRAM_UNLOAD _IOWR(CSD_IOC_MAGIC, 0x0d, struct csd_ioc_program_unload)
#define CSD_IOC_AGENT_QUEUE _IOWR(CSD_IOC_MAGIC, 0x0e, struct csd_ioc_agent_queue)

#endif /* _UAPI_CSD_IOCTL_H */
