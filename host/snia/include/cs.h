/* SPDX-License-Identifier: MIT */
/*
 * cs.h - the SNIA Computational Storage API over libcsd (libcsd-snia, docs/snia-cs-api.md).
 *
 * Names, types, status codes and calling conventions follow the SNIA Computational Storage
 * API, Version 0.5 rev 0 (public review draft, 2021-06-09): the newest text of it this
 * project could read. Where this header differs from that draft (a 64-bit CompValue, one
 * renamed enum type, csQueryCSFList taken from a later draft, two project additions named
 * csd_snia_*) docs/snia-cs-api.md says so, call by call.
 *
 * The mapping: a CSx is a drive libcsd opens (any path csd::Device::open takes: /dev/ngXnY,
 * /dev/nvmeXnY, /dev/csdN?slm=.., emu:FILE?...) or several of them as one ("set:PATH;PATH;..",
 * a Computational Storage Array whose StorageIndex picks the drive); its CSEs are the
 * drives' compute units; AFDM is SLM allocated by this process; the CSFs are the drive's
 * programs (device-defined, operator plug-ins, and eBPF programs loaded with csDownload);
 * storage requests are SLM Load / SLM Store, copy requests SLM Write / SLM Read and
 * compute requests Execute. Calls that the draft leaves open, or that these drives cannot
 * do, return CS_UNSUPPORTED. Every handle is checked: a stale, foreign or made-up handle
 * returns CS_INVALID_HANDLE (CS_UNKNOWN_MEMORY for a compute argument's AFDM).
 */
#ifndef CSD_SNIA_CS_H
#define CSD_SNIA_CS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The draft's scalar types. */
typedef uint8_t u8;
typedef uint16_t u16;
typedef uint32_t u32;
typedef uint64_t u64;
typedef int32_t s32;

/* Opaque handles: never pointers into the library (a made-up value is refused, not read). */
typedef void *CS_DEV_HANDLE;
typedef void *CS_CSE_HANDLE;
typedef void *CS_MEM_HANDLE;
typedef void *CS_EVT_HANDLE;
typedef void *CS_BATCH_HANDLE;
typedef void *CS_STREAM_HANDLE;
typedef void *CS_MEM_PTR;
typedef u32 CS_FUNCTION_ID; /* the drive's program id (0001h-01FFh) */
typedef u32 CS_BATCH_INDEX; /* a batch entry, as csAddBatchEntry returns it (never 0) */

/* Status of every call, in the draft's order. */
typedef enum {
    CS_SUCCESS = 0,              /* done */
    CS_COULD_NOT_MAP_MEMORY,     /* AFDM cannot be mapped into host memory (csAllocMem) */
    CS_DEVICE_ERROR,             /* the drive failed the command (csd_snia_last_error says how) */
    CS_DEVICE_NOT_AVAILABLE,     /* the CSx is unavailable */
    CS_DEVICE_NOT_READY,         /* the drive is not ready */
    CS_DEVICE_NOT_PRESENT,       /* no such device */
    CS_ENODEV,                   /* the device name does not exist */
    CS_ENOENT,                   /* no such device, file or directory */
    CS_ENTITY_NOT_ON_DEVICE,     /* the entity is not on that device (not a CSD; another drive's AFDM) */
    CS_ENXIO,                    /* no storage or CSE available */
    CS_ERROR_IN_EXECUTION,       /* the program failed (Program Fault, aborted) */
    CS_FATAL_ERROR,              /* a fatal error */
    CS_HANDLE_IN_USE,            /* the handle has requests in flight */
    CS_INVALID_HANDLE,           /* not a live handle of the kind asked for */
    CS_INVALID_ARG,              /* an argument is out of range, or NULL where one is needed */
    CS_INVALID_EVENT,            /* not a live event handle */
    CS_INVALID_ID,               /* an id that does not exist */
    CS_INVALID_LENGTH,           /* a buffer too small (*Length then says how much is needed) */
    CS_INVALID_OPTION,           /* an option (flags, mode, type) out of range */
    CS_INVALID_FUNCTION,         /* the function cannot be used so */
    CS_INVALID_FUNCTION_NAME,    /* no function of that name */
    CS_IO_TIMEOUT,               /* an I/O timed out */
    CS_LOAD_ERROR,               /* a download was refused (the verifier's reason in csd_snia_last_error) */
    CS_MEMORY_IN_USE,            /* the AFDM has requests in flight */
    CS_NO_PERMISSIONS,           /* not allowed */
    CS_NOT_DONE,                 /* csPollEvent: nothing has completed */
    CS_NOT_ENOUGH_MEMORY,        /* not enough AFDM (or host memory) */
    CS_NO_SUCH_ENTITY_EXISTS,    /* no such entity */
    CS_OUT_OF_RESOURCES,         /* a batch is full; a download past a limit (slot, bytes, quota) */
    CS_QUEUED,                   /* an asynchronous request was queued */
    CS_UNKNOWN_MEMORY,           /* a compute argument names no live AFDM */
    CS_UNKNOWN_COMPUTE_FUNCTION, /* no program with that id on the drive */
    CS_UNSUPPORTED               /* left open by the draft, or not something these drives do */
} CS_STATUS;

typedef enum {
    CS_AFDM_TYPE = 1,        /* DevMem: an SLM range, from ByteOffset to the end of the allocation */
    CS_32BIT_VALUE_TYPE = 2, /* Value32: 4 bytes of the program's parameters */
    CS_64BIT_VALUE_TYPE = 3, /* Value64: 8 bytes of the program's parameters */
    CS_STREAM_TYPE = 4,      /* unsupported */
    CS_DESCRIPTOR_TYPE = 5   /* unsupported */
} CS_COMPUTE_ARG_TYPE;

typedef enum { CS_STORAGE_BLOCK_IO = 1, CS_STORAGE_FILE_IO = 2 } CS_STORAGE_REQ_MODE;
typedef enum { CS_STORAGE_LOAD_TYPE = 1, CS_STORAGE_STORE_TYPE = 2 } CS_STORAGE_IO_TYPE;
typedef enum { CS_COPY_TO_DEVICE = 1, CS_COPY_FROM_DEVICE = 2 } CS_MEM_COPY_TYPE;
typedef enum { CS_BATCH_SERIAL = 1, CS_BATCH_PARALLEL = 2, CS_BATCH_HYBRID = 3 } CS_BATCH_MODE;
typedef enum { CS_COPY_AFDM = 1, CS_STORAGE_IO = 2, CS_QUEUE_COMPUTE = 3 } CS_BATCH_REQ_TYPE;
typedef enum {
    CS_STAT_CSE_USAGE = 1,     /* CSEDetails; Identifier: the CSE's name (char *) */
    CS_STAT_CSx_MEM_USAGE = 2, /* MemoryDetails; Identifier: unused */
    CS_STAT_FUNCTION = 3       /* FunctionDetails; Identifier: a CS_FUNCTION_ID * */
} CS_STAT_TYPE;
typedef enum { CS_CAPABILITY_CSx_TEMP = 1, CS_CAPABILITY_CSx_MAX_IOS = 2 } CS_CAP_TYPE;
typedef enum {
    CS_FPGA_BITSTREAM = 1,
    CS_BPF_PROGRAM = 2, /* an eBPF ELF object (clang -O2 -target bpf -c), section "csd" */
    CS_CONTAINER_IMAGE = 3,
    CS_OPERATING_SYSTEM_IMAGE = 4,
    CS_LARGE_DATA_SET = 5
} CS_DOWNLOAD_TYPE;
typedef enum { CS_CSF_TYPE = 1, CS_VENDOR_SPECIFIC = 2 } CS_CONFIG_TYPE;
/* The draft names this type CS_STREAM_TYPE, which its compute argument enumerator of the
 * same name makes impossible in C. */
typedef enum { CS_STREAM_COMPUTE_TYPE = 1 } CS_STREAM_ALLOC_TYPE;
typedef enum { CS_FILE_SYSTEMS_SUPPORTED = 1, CS_RESERVED = 2 } CS_LIBRARY_SUPPORT;
typedef enum {
    CS_PLUGIN_COMPUTE = 1,
    CS_PLUGIN_NVME = 2,
    CS_PLUGIN_FILE_SYSTEM = 4,
    CS_PLUGIN_CUSTOM = 8
} CS_PLUGIN_TYPE;

/* Called once an asynchronous request completes, from a thread of the library. */
typedef void (*csQueueCallbackFn)(void *QueueContext, CS_STATUS Status);
/* Plug-in queries (unsupported). */
typedef void (*csQueryPluginCallbackFn)(CS_PLUGIN_TYPE Type, char *Buffer);
/* Device notifications (unsupported). */
typedef void (*csDevNotificationFn)(u32 Notification, void *Context, CS_STATUS Status, int Length, void *Buffer);

/* A place in AFDM. */
typedef struct {
    CS_MEM_HANDLE MemHandle;
    unsigned long ByteOffset; /* bytes from the allocation's start */
} CsDevAFDM;

typedef struct {
    CS_COMPUTE_ARG_TYPE Type;
    union {
        CsDevAFDM DevMem;
        u64 Value64;
        u32 Value32;
        CS_STREAM_HANDLE StreamHandle;
    } u;
} CsComputeArg;

/* A compute request: allocate sizeof(CsComputeRequest) + (NumArgs - 1) * sizeof(CsComputeArg). */
typedef struct {
    CS_CSE_HANDLE CSEHandle; /* the CSE (a drive's unit), or NULL: the drive of the AFDM arguments */
    CS_FUNCTION_ID FunctionId;
    int NumArgs;
    CsComputeArg Args[1];
} CsComputeRequest;

typedef struct {
    CS_STORAGE_IO_TYPE Type; /* load: namespace -> AFDM; store: AFDM -> namespace */
    u32 StorageIndex;        /* the drive of a set ("set:..."), 0 otherwise */
    u32 NamespaceId;         /* 0 or the drive's namespace */
    u64 StartLba;
    u32 NumBlocks;
    CsDevAFDM DevMem;
} CsBlockIo;

typedef struct {
    CS_STORAGE_IO_TYPE Type;
    void *FileHandle;
    u64 Offset;
    u32 Bytes;
    CsDevAFDM DevMem;
} CsFileIo;

typedef struct {
    CS_STORAGE_REQ_MODE Mode;
    CS_DEV_HANDLE DevHandle;
    union {
        CsBlockIo BlockIo;
        CsFileIo FileIo; /* unsupported: the drives hold no file system */
    } u;
} CsStorageRequest;

typedef struct {
    CS_MEM_COPY_TYPE Type;
    void *HostVAddress;
    CsDevAFDM DevMem;
    unsigned int Bytes;
} CsCopyMemRequest;

/* One entry of a batch; reqLength: the bytes of the request in u (a compute request with
 * more than one argument extends past u and says so here). */
typedef struct {
    CS_BATCH_REQ_TYPE ReqType;
    u32 reqLength;
    union {
        CsCopyMemRequest CopyMem;
        CsStorageRequest StorageIo;
        CsComputeRequest Compute;
    } u;
} CsBatchRequest;

typedef struct {
    CS_FUNCTION_ID FunctionId;
    u8 NumUnits; /* compute units that may run it */
    char Name[32];
} CsFunctionInfo;

typedef struct {
    u16 HwVersion;
    u16 SwVersion;
    char UniqueName[32];                /* the CSE's name, as csGetCSEFromCSx lists it */
    u16 NumBuiltinFunctions;
    u32 MaxRequestsPerBatch;
    u32 MaxFunctionParametersAllowed;
    u32 MaxConcurrentFunctionInstances;
} CSEProperties;

/* Device properties: NumCSEs entries in CSE (csQueryDeviceProperties says the length). */
typedef struct {
    u16 HwVersion;
    u16 SwVersion;
    u16 VendorId;
    u16 DeviceId;
    char FriendlyName[32];
    u32 CFMinMB;
    u32 FDMinMB;
    struct {
        u64 FDMIsDeviceManaged : 1;
        u64 FDMIsHostVisible : 1;
        u64 BatchRequestsSupported : 1;
        u64 StreamsSupported : 1;
        u64 Reserved : 60;
    } Flags;
    u16 NumCSEs;
    CSEProperties CSE[1];
} CSxProperties;

typedef struct {
    struct {
        u64 Compression : 1;
        u64 Decompression : 1;
        u64 Encryption : 1;
        u64 Decryption : 1;
        u64 RAID : 1;
        u64 EC : 1;
        u64 Dedup : 1;
        u64 Hash : 1;
        u64 Checksum : 1;
        u64 RegEx : 1;
        u64 DbFilter : 1;
        u64 ImageEncode : 1;
        u64 VideoEncode : 1;
        u64 CustomType : 48;
    } Functions;
} CsCapabilities;

/* A statistic this drive cannot give is all ones (CS_STAT_UNKNOWN32 / CS_STAT_UNKNOWN64). */
#define CS_STAT_UNKNOWN32 0xFFFFFFFFu
#define CS_STAT_UNKNOWN64 0xFFFFFFFFFFFFFFFFull

typedef struct {
    u32 PowerOnMins;
    u32 IdleTimeMins;
    u64 TotalFunctionExecutions;
} CSEUsage;

typedef struct {
    u64 TotalAllocatedFDM;
    u64 LargestBlockAvailableFDM;
    u64 AverageAllocatedSizeFDM;
    u64 TotalFreeCSFM;
    u64 TotalAllocationsFDM;
    u64 TotalDeAllocationsFDM;
    u64 TotalFDMtoHostinMB;
    u64 TotalHosttoFDMinMB;
    u64 TotalFDMtoStorageinMB;
    u64 TotalStoragetoFDMinMB;
} CSxMemoryUsage;

typedef struct {
    u64 TotalUptimeSeconds;
    u64 TotalExecutions;
    u64 ShortestTimeUsecs;
    u64 LongestTimeUsecs;
    u64 AverageTimeUsecs;
} CSFUsage;

typedef union {
    CSEUsage CSEDetails;
    CSxMemoryUsage MemoryDetails;
    CSFUsage FunctionDetails;
} CsStatsInfo;

typedef union {
    struct {
        s32 TemperatureLevel;
    } CSxTemperature;
    struct {
        u32 TotalOutstandingIOs;
    } MaxIOs;
} CsCapabilityInfo;

typedef struct {
    CS_DOWNLOAD_TYPE Type;
    int SubType;      /* CS_BPF_PROGRAM: the record size in bytes (1-4096) */
    int Index;        /* the program slot (0100h-01FFh), 0: the drive picks and Index is set */
    int Unload;       /* nonzero: unload the program in slot Index */
    int Length;       /* bytes in DataBuffer */
    void *DataBuffer; /* the image */
} CsDownloadInfo;

typedef struct {
    CS_CONFIG_TYPE Type;
    int SubType;
    int Index;
    int Length;
    void *DataBuffer;
} CsConfigInfo;

typedef struct {
    CS_PLUGIN_TYPE Type;
    u32 InterfaceLength;
    u16 Id;
} CsQueryPluginRequest;

typedef struct {
    CS_PLUGIN_TYPE Type;
    u32 InterfaceLength;
    u16 Id;
} CsPluginRequest;

/* One CSF of csQueryCSFList (a later draft's structure). */
typedef struct {
    char UniqueName[32];
    u64 GlobalId; /* the program id */
} CSFUniqueId;

/* ---- device discovery. Lists are comma-separated names; a NULL Buffer, or *Length too
 * small (then CS_INVALID_LENGTH), sets *Length to the bytes needed, the NUL included. */

/* The CSEs of the open CSxs that can run FunctionName (NULL: every CSE). */
CS_STATUS csQueryCSEList(char *FunctionName, int *Length, char *Buffer);
/* The names of the CSFs of the CSx at Path (a device path, a CSx or a CSE name). */
CS_STATUS csQueryFunctionList(char *Path, int *Length, char *Buffer);
/* The CSFs of the CSx at Path as CSFUniqueId entries; *Length in bytes, *Count entries. */
CS_STATUS csQueryCSFList(const char *Path, int *Length, int *Count, CSFUniqueId *Buffer);
/* The name of the CSx holding Path (a device path, emu:/set: name, or a file on a mounted drive). */
CS_STATUS csGetCSxFromPath(char *Path, unsigned int *Length, char *DevName);
/* The names of an open CSx's CSEs ("<csx>#cse<N>", comma-separated). */
CS_STATUS csGetCSEFromCSx(CS_DEV_HANDLE DevHandle, unsigned int *Length, char *CSEName);

/* ---- device access */

/* Opens the CSx DevName (as csGetCSxFromPath names it); DevContext is kept for the caller. */
CS_STATUS csOpenCSx(char *DevName, void *DevContext, CS_DEV_HANDLE *DevHandle);
/* Closes a CSx: its CSE handles and AFDM become invalid (refused while requests run on it). */
CS_STATUS csCloseCSx(CS_DEV_HANDLE DevHandle);
/* Opens a CSE of an open CSx by its name. */
CS_STATUS csOpenCSE(char *CSEName, void *CSEContext, CS_CSE_HANDLE *CSEHandle);
/* Closes a CSE handle. */
CS_STATUS csCloseCSE(CS_CSE_HANDLE CSEHandle);
/* Device notifications: CS_UNSUPPORTED (the drives post none this library could pass on). */
CS_STATUS csRegisterNotify(char *DevName, u32 NotifyOptions, csDevNotificationFn NotifyFn);
/* CS_UNSUPPORTED, as csRegisterNotify. */
CS_STATUS csDeregisterNotify(char *DevName, csDevNotificationFn NotifyFn);

/* ---- AFDM */

/* Allocates Bytes of SLM (MemFlags 0); VAddressPtr (may be NULL) gets a host mapping where SLM is host memory. */
CS_STATUS csAllocMem(CS_DEV_HANDLE DevHandle, int Bytes, unsigned int MemFlags, CS_MEM_HANDLE *MemHandle,
                     CS_MEM_PTR *VAddressPtr);
/* Frees an allocation (CS_MEMORY_IN_USE while a request uses it). */
CS_STATUS csFreeMem(CS_MEM_HANDLE MemHandle);

/* ---- requests. With neither CallbackFn nor EventHandle a request runs now and returns its
 * status; with either it is queued (CS_QUEUED) and completes on a thread of the library:
 * *CompValue (may be NULL; keep it valid until then) is written first, then CallbackFn is
 * called and EventHandle signalled. Bad arguments are refused at once, never queued. */

/* SLM Load (namespace LBAs -> AFDM) or SLM Store (AFDM -> LBAs); CompValue: bytes moved. */
CS_STATUS csQueueStorageRequest(CsStorageRequest *Req, void *Context, csQueueCallbackFn CallbackFn,
                                CS_EVT_HANDLE EventHandle, u64 *CompValue);
/* SLM Write (host -> AFDM) or SLM Read (AFDM -> host); CompValue: bytes moved. */
CS_STATUS csQueueCopyMemRequest(CsCopyMemRequest *CopyReq, void *Context, csQueueCallbackFn CallbackFn,
                                CS_EVT_HANDLE EventHandle, u64 *CompValue);

/* ---- CSFs and compute */

/* The id of the CSF named FunctionName on the CSE's drive (CS_INVALID_FUNCTION_NAME if none). */
CS_STATUS csGetFunction(CS_CSE_HANDLE CSEHandle, char *FunctionName, void *Context, CS_FUNCTION_ID *FunctionId);
/* CS_UNSUPPORTED: a function id alone names no drive (csAbortCSE stops a CSE's programs). */
CS_STATUS csStopFunction(CS_FUNCTION_ID FunctionId);
/* Execute: AFDM arguments are the ranges, value arguments the parameters, in order;
 * CompValue: completion Dwords 0 and 1 (DW0 | DW1 << 32). */
CS_STATUS csQueueComputeRequest(CsComputeRequest *Req, void *Context, csQueueCallbackFn CallbackFn,
                                CS_EVT_HANDLE EventHandle, u64 *CompValue);
/* Sets one argument: CS_AFDM_TYPE (CS_MEM_HANDLE, unsigned long offset), CS_32BIT_VALUE_TYPE
 * (u32), CS_64BIT_VALUE_TYPE (u64), CS_STREAM_TYPE (CS_STREAM_HANDLE); others set Type only. */
void csHelperSetComputeArg(CsComputeArg *ArgPtr, CS_COMPUTE_ARG_TYPE Type, ...);

/* ---- batches (run by this library: serial in entry order, stopping at the first failure;
 * parallel all at once; hybrid CS_UNSUPPORTED) */

/* A batch of at most MaxReqs entries (1 to 1024). */
CS_STATUS csAllocBatchRequest(CS_BATCH_MODE Mode, int MaxReqs, CS_BATCH_HANDLE *BatchHandle);
/* Frees a batch (CS_HANDLE_IN_USE while it runs). */
CS_STATUS csFreeBatchRequest(CS_BATCH_HANDLE BatchHandle);
/* Adds a copy of Req before entry Before, or after entry After (both 0: first); *Curr its index. */
CS_STATUS csAddBatchEntry(CS_BATCH_HANDLE BatchHandle, CsBatchRequest *Req, CS_BATCH_INDEX Before,
                          CS_BATCH_INDEX After, CS_BATCH_INDEX *Curr);
/* Replaces entry Entry's request with a copy of Req. */
CS_STATUS csHelperReconfigureBatchEntry(CS_BATCH_HANDLE BatchHandle, CS_BATCH_INDEX Entry, CsBatchRequest *Req);
/* Changes a batch's capacity (not below its entries, at most 1024). */
CS_STATUS csHelperResizeBatchRequest(CS_BATCH_HANDLE BatchHandle, int MaxReqs);
/* Runs a batch; CompValue: the last entry's (serial) or the first entry's (parallel). */
CS_STATUS csQueueBatchRequest(CS_BATCH_HANDLE BatchHandle, void *Context, csQueueCallbackFn CallbackFn,
                              CS_EVT_HANDLE EventHandle, u64 *CompValue);

/* ---- events */

/* A new event: a queue of the completions of the requests queued with it. */
CS_STATUS csCreateEvent(CS_EVT_HANDLE *EventHandle);
/* Deletes an event (CS_HANDLE_IN_USE while requests queued with it have not completed). */
CS_STATUS csDeleteEvent(CS_EVT_HANDLE EventHandle);
/* Takes one completion: its status (CS_NOT_DONE if none); Context (a void **) gets its context. */
CS_STATUS csPollEvent(CS_EVT_HANDLE EventHandle, void *Context);

/* ---- device management */

/* The CSFs of the CSx: *Size in bytes (NULL FunctionInfo or too small: the size needed). */
CS_STATUS csQueryDeviceForComputeList(CS_DEV_HANDLE DevHandle, int *Size, CsFunctionInfo *FunctionInfo);
/* The CSx's properties and one CSEProperties per CSE; *Length as csQueryDeviceForComputeList. */
CS_STATUS csQueryDeviceProperties(CS_DEV_HANDLE DevHandle, int *Length, CSxProperties *Buffer);
/* Which of the draft's fixed functions the CSx's programs provide. */
CS_STATUS csQueryDeviceCapabilities(CS_DEV_HANDLE DevHandle, CsCapabilities *Caps);
/* Statistics of a CSE, the CSx's memory or a function (unknown values all ones). */
CS_STATUS csQueryDeviceStatistics(CS_DEV_HANDLE DevHandle, CS_STAT_TYPE Type, void *Identifier, CsStatsInfo *Stats);
/* CS_UNSUPPORTED: the drives have no temperature or outstanding-I/O setting. */
CS_STATUS csSetDeviceCapability(CS_DEV_HANDLE DevHandle, CS_CAP_TYPE Type, CsCapabilityInfo *Details);
/* Loads (or, Unload set, unloads) an eBPF program on every drive of the CSx; other types CS_UNSUPPORTED. */
CS_STATUS csDownload(CS_DEV_HANDLE DevHandle, CsDownloadInfo *ProgramInfo);
/* CS_UNSUPPORTED: the drives take no configuration. */
CS_STATUS csConfig(CS_CSE_HANDLE CSEHandle, CsConfigInfo *Info);
/* Aborts the Executes in flight on the CSE's drive (they complete with CS_ERROR_IN_EXECUTION). */
CS_STATUS csAbortCSE(CS_CSE_HANDLE CSEHandle);
/* CS_UNSUPPORTED: libcsd cannot reset a controller. */
CS_STATUS csResetCSE(CS_CSE_HANDLE CSEHandle);

/* ---- streams and the library */

/* CS_UNSUPPORTED: no streams. */
CS_STATUS csAllocStream(CS_DEV_HANDLE DevHandle, CS_STREAM_ALLOC_TYPE Type, CS_STREAM_HANDLE *StreamHandle);
/* CS_UNSUPPORTED: no streams. */
CS_STATUS csFreeStream(CS_STREAM_HANDLE StreamHandle);
/* CS_FILE_SYSTEMS_SUPPORTED: the empty list (no file system); other types CS_UNSUPPORTED. */
CS_STATUS csQueryLibrarySupport(CS_LIBRARY_SUPPORT Type, int *Length, char *Buffer);
/* CS_UNSUPPORTED: no plug-ins. */
CS_STATUS csQueryPlugin(CsQueryPluginRequest *Req, csQueryPluginCallbackFn CallbackFn);
/* CS_UNSUPPORTED: no plug-ins. */
CS_STATUS csRegisterPlugin(CsPluginRequest *Req);
/* CS_UNSUPPORTED: no plug-ins. */
CS_STATUS csDeregisterPlugin(CsPluginRequest *Req);

/* ---- project additions (not in the draft) */

/* Words describing the last failure of a call on this thread (csPollEvent: of the request polled). */
const char *csd_snia_last_error(void);
/* The name of a status ("CS_INVALID_ARG"). */
const char *csd_snia_status_name(CS_STATUS Status);

#ifdef __cplusplus
}
#endif

#endif /* CSD_SNIA_CS_H */
