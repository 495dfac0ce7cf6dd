// SPDX-License-Identifier: MIT
/*
 * libcsd-snia, call by call: bad handles, lengths, ids and options answer the draft's
 * statuses (never a crash), the calls this drive cannot do answer CS_UNSUPPORTED, and the
 * work gives the same results as libcsd's own C API (csd.h) on the same drive.
 * With no argument it runs on three in-process drives in turn: the vendor front end, a
 * standard-only drive (emu:...&nvme-cs=1&vendor=off) and host mode (a plain drive, the
 * programs in this process: CSD_FRONT_END=host); plus a set of two drives.
 * Prints 'snia: N passed, N failed'.
 */
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <string.h>
#include <unistd.h>

#include "cs.h"
#include "csd.h"

static int passed, failed;
static const char *kind = "";
static CS_STATUS s; /* the status of the call a check looks at */

#define CHECK(cond, what)                                                                          \
    do {                                                                                           \
        if (cond) {                                                                                \
            passed++;                                                                              \
        } else {                                                                                   \
            failed++;                                                                              \
            printf("FAIL [%s] %s (line %d): %s: %s\n", kind, what, __LINE__, csd_snia_status_name(s), \
                   csd_snia_last_error());                                                         \
        }                                                                                          \
    } while (0)
/* The call answers exactly this status. */
#define EXPECT(call, status, what) \
    do {                           \
        s = (call);                \
        CHECK(s == (status), what); \
    } while (0)

static CS_MEM_HANDLE alloc(CS_DEV_HANDLE dev, int bytes)
{
    CS_MEM_HANDLE m = NULL;
    s = csAllocMem(dev, bytes, 0, &m, NULL);
    return s == CS_SUCCESS ? m : NULL;
}

static CS_STATUS copy(CS_MEM_HANDLE m, unsigned long off, void *host, unsigned bytes, CS_MEM_COPY_TYPE t)
{
    CsCopyMemRequest r = {t, host, {m, off}, bytes};
    return csQueueCopyMemRequest(&r, NULL, NULL, NULL, NULL);
}

/* A compute request with room for n arguments. */
static CsComputeRequest *request(CS_CSE_HANDLE cse, CS_FUNCTION_ID fid, int n)
{
    CsComputeRequest *r = calloc(1, sizeof(CsComputeRequest) + (size_t)n * sizeof(CsComputeArg));
    r->CSEHandle = cse;
    r->FunctionId = fid;
    r->NumArgs = n;
    return r;
}

static uint32_t f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static void *read_file(const char *path, long *size)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    *size = ftell(f);
    fseek(f, 0, SEEK_SET);
    void *p = malloc((size_t)*size);
    if (fread(p, 1, (size_t)*size, f) != (size_t)*size) *size = 0;
    fclose(f);
    return p;
}

static volatile int gate_open;
static volatile int gate_calls;
static void gate(void *ctx, CS_STATUS st)
{
    (void)ctx;
    (void)st;
    gate_calls++;
    while (!gate_open) usleep(1000);
}

/* Checksums from a second thread while the main thread downloads and unloads programs. */
struct churn {
    CsComputeRequest *req;
    volatile int stop, runs;
    int wrong;
};
static void *checksums(void *arg)
{
    struct churn *c = arg;
    while (!c->stop) {
        u64 v = 0;
        CS_STATUS st = csQueueComputeRequest(c->req, NULL, NULL, NULL, &v);
        c->runs++;
        c->wrong += st != CS_SUCCESS || v != 0xE3069283u;
    }
    return NULL;
}

static void unsupported_calls(void)
{
    EXPECT(csRegisterNotify(NULL, 0, NULL), CS_UNSUPPORTED, "csRegisterNotify");
    EXPECT(csDeregisterNotify(NULL, NULL), CS_UNSUPPORTED, "csDeregisterNotify");
    EXPECT(csStopFunction(8), CS_UNSUPPORTED, "csStopFunction");
    EXPECT(csSetDeviceCapability(NULL, CS_CAPABILITY_CSx_TEMP, NULL), CS_UNSUPPORTED, "csSetDeviceCapability");
    EXPECT(csConfig(NULL, NULL), CS_UNSUPPORTED, "csConfig");
    EXPECT(csResetCSE(NULL), CS_UNSUPPORTED, "csResetCSE");
    CS_STREAM_HANDLE st = NULL;
    EXPECT(csAllocStream(NULL, CS_STREAM_COMPUTE_TYPE, &st), CS_UNSUPPORTED, "csAllocStream");
    EXPECT(csFreeStream(st), CS_UNSUPPORTED, "csFreeStream");
    EXPECT(csQueryPlugin(NULL, NULL), CS_UNSUPPORTED, "csQueryPlugin");
    EXPECT(csRegisterPlugin(NULL), CS_UNSUPPORTED, "csRegisterPlugin");
    EXPECT(csDeregisterPlugin(NULL), CS_UNSUPPORTED, "csDeregisterPlugin");
    int len = 0;
    EXPECT(csQueryLibrarySupport(CS_RESERVED, &len, NULL), CS_UNSUPPORTED, "csQueryLibrarySupport CS_RESERVED");
    EXPECT(csQueryLibrarySupport((CS_LIBRARY_SUPPORT)9, &len, NULL), CS_INVALID_OPTION, "csQueryLibrarySupport type 9");
    char fs[4] = "x";
    len = sizeof fs;
    s = csQueryLibrarySupport(CS_FILE_SYSTEMS_SUPPORTED, &len, fs);
    CHECK(s == CS_SUCCESS && len == 1 && fs[0] == 0, "csQueryLibrarySupport file systems: none");
    CHECK(strcmp(csd_snia_status_name(CS_UNSUPPORTED), "CS_UNSUPPORTED") == 0 &&
              strcmp(csd_snia_status_name((CS_STATUS)999), "CS_STATUS(unknown)") == 0,
          "csd_snia_status_name");
}

/* Discovery and opening, with the path of one drive. */
static void discovery(const char *path)
{
    char name[512];
    unsigned len = sizeof name;
    EXPECT(csGetCSxFromPath(NULL, &len, name), CS_INVALID_ARG, "csGetCSxFromPath NULL Path");
    EXPECT(csGetCSxFromPath((char *)path, NULL, name), CS_INVALID_ARG, "csGetCSxFromPath NULL Length");
    EXPECT(csGetCSxFromPath("/nonexistent/file", &len, name), CS_ENOENT, "csGetCSxFromPath of no file: CS_ENOENT");
    EXPECT(csGetCSxFromPath("/dev/null", &len, name), CS_ENTITY_NOT_ON_DEVICE, "csGetCSxFromPath /dev/null: not a CSx");
    len = 0;
    EXPECT(csGetCSxFromPath((char *)path, &len, NULL), CS_SUCCESS, "csGetCSxFromPath NULL DevName: the length");
    CHECK(len == strlen(path) + 1, "csGetCSxFromPath: the length needed");
    len = 3;
    EXPECT(csGetCSxFromPath((char *)path, &len, name), CS_INVALID_LENGTH, "csGetCSxFromPath short buffer");
    CHECK(len == strlen(path) + 1, "csGetCSxFromPath short buffer: the length needed");
    len = sizeof name;
    EXPECT(csGetCSxFromPath((char *)path, &len, name), CS_SUCCESS, "csGetCSxFromPath");
    CHECK(strcmp(name, path) == 0, "csGetCSxFromPath names the drive as given");

    CS_DEV_HANDLE dev = NULL;
    EXPECT(csOpenCSx(NULL, NULL, &dev), CS_INVALID_ARG, "csOpenCSx NULL DevName");
    EXPECT(csOpenCSx(name, NULL, NULL), CS_INVALID_ARG, "csOpenCSx NULL DevHandle");
    EXPECT(csOpenCSx("/dev/null", NULL, &dev), CS_ENTITY_NOT_ON_DEVICE, "csOpenCSx /dev/null");
    EXPECT(csOpenCSx("emu:/tmp/csd-snia-never?no-such-option=1", NULL, &dev), CS_INVALID_ARG, "csOpenCSx emu: with a bad option");
    CHECK(strstr(csd_snia_last_error(), "no-such-option") != NULL, "the error names the option");
    EXPECT(csOpenCSx(name, NULL, &dev), CS_SUCCESS, "csOpenCSx");
    CS_DEV_HANDLE dev2 = NULL;
    EXPECT(csOpenCSx(name, NULL, &dev2), CS_SUCCESS, "csOpenCSx twice: the same CSx");
    char cses[256], cses2[256];
    len = sizeof cses;
    EXPECT(csGetCSEFromCSx(dev, &len, cses), CS_SUCCESS, "csGetCSEFromCSx");
    len = sizeof cses2;
    s = csGetCSEFromCSx(dev2, &len, cses2);
    CHECK(s == CS_SUCCESS && strcmp(cses, cses2) == 0, "both handles name the same CSEs");
    len = 2;
    EXPECT(csGetCSEFromCSx(dev, &len, cses2), CS_INVALID_LENGTH, "csGetCSEFromCSx short buffer");
    CHECK(len == strlen(cses) + 1, "csGetCSEFromCSx short buffer: the length needed");
    EXPECT(csGetCSEFromCSx((CS_DEV_HANDLE)0x1234, &len, cses2), CS_INVALID_HANDLE, "csGetCSEFromCSx made-up handle");
    EXPECT(csGetCSEFromCSx(dev, NULL, cses2), CS_INVALID_ARG, "csGetCSEFromCSx NULL Length");

    CS_CSE_HANDLE cse = NULL;
    EXPECT(csOpenCSE("csx999.cse0", NULL, &cse), CS_ENTITY_NOT_ON_DEVICE, "csOpenCSE of no CSE");
    EXPECT(csOpenCSE(NULL, NULL, &cse), CS_INVALID_ARG, "csOpenCSE NULL name");
    cses[strcspn(cses, ",")] = 0;
    EXPECT(csOpenCSE(cses, NULL, &cse), CS_SUCCESS, "csOpenCSE");
    EXPECT(csCloseCSE(cse), CS_SUCCESS, "csCloseCSE");
    EXPECT(csCloseCSE(cse), CS_INVALID_HANDLE, "csCloseCSE twice");
    EXPECT(csCloseCSE(dev), CS_INVALID_HANDLE, "csCloseCSE of a CSx handle");

    int ilen = 0;
    EXPECT(csQueryCSEList(NULL, NULL, NULL), CS_INVALID_ARG, "csQueryCSEList NULL Length");
    EXPECT(csQueryCSEList("checksum", &ilen, NULL), CS_SUCCESS, "csQueryCSEList checksum: the length");
    char *list = malloc((size_t)ilen);
    s = csQueryCSEList("checksum", &ilen, list);
    CHECK(s == CS_SUCCESS && strstr(list, cses) != NULL, "csQueryCSEList checksum lists the CSE");
    free(list);
    EXPECT(csQueryCSEList("no-such-function", &ilen, NULL), CS_ENTITY_NOT_ON_DEVICE, "csQueryCSEList of no function");
    char fns[1024];
    ilen = sizeof fns;
    s = csQueryFunctionList(name, &ilen, fns);
    CHECK(s == CS_SUCCESS && strstr(fns, "checksum") && strstr(fns, "gemm") && strstr(fns, "filter"),
          "csQueryFunctionList lists the programs");
    ilen = sizeof fns;
    s = csQueryFunctionList(cses, &ilen, fns);
    CHECK(s == CS_SUCCESS && strstr(fns, "checksum"), "csQueryFunctionList of a CSE name");
    EXPECT(csQueryFunctionList("/nonexistent", &ilen, fns), CS_ENOENT, "csQueryFunctionList of no path");
    int count = 0;
    ilen = 0;
    EXPECT(csQueryCSFList(name, &ilen, &count, NULL), CS_SUCCESS, "csQueryCSFList: the length");
    CHECK(count >= 12 && ilen == count * (int)sizeof(CSFUniqueId), "csQueryCSFList: count and length");
    CSFUniqueId *ids = malloc((size_t)ilen);
    s = csQueryCSFList(name, &ilen, &count, ids);
    int found = 0;
    for (int i = 0; s == CS_SUCCESS && i < count; i++) found |= strcmp(ids[i].UniqueName, "checksum") == 0 && ids[i].GlobalId == 8;
    CHECK(found, "csQueryCSFList: checksum is 8");
    free(ids);
    ilen = 4;
    EXPECT(csQueryCSFList(name, &ilen, &count, (CSFUniqueId *)fns), CS_INVALID_LENGTH, "csQueryCSFList short buffer");

    EXPECT(csCloseCSx(dev2), CS_SUCCESS, "csCloseCSx of one handle");
    EXPECT(csCloseCSx(dev2), CS_INVALID_HANDLE, "csCloseCSx twice");
    EXPECT(csCloseCSx(NULL), CS_INVALID_HANDLE, "csCloseCSx NULL");
    EXPECT(csCloseCSx((CS_DEV_HANDLE)0xdeadbeef), CS_INVALID_HANDLE, "csCloseCSx made-up handle");
    EXPECT(csCloseCSx(dev), CS_SUCCESS, "csCloseCSx of the last handle");
    EXPECT(csOpenCSE(cses, NULL, &cse), CS_ENTITY_NOT_ON_DEVICE, "csOpenCSE after its CSx closed");
}

/* Everything else on one open drive; lib is the same drive through libcsd's C API. */
static void on_drive(const char *path, csd_dev *lib)
{
    CS_DEV_HANDLE dev = NULL;
    EXPECT(csOpenCSx((char *)path, NULL, &dev), CS_SUCCESS, "csOpenCSx");
    if (!dev) return;
    uint64_t slm_size = 0;
    uint32_t units = 0, nprog = 0;
    csd_info(lib, &slm_size, &units, &nprog);

    /* ---- properties */
    int len = 0;
    EXPECT(csQueryDeviceProperties((CS_DEV_HANDLE)0x77, &len, NULL), CS_INVALID_HANDLE, "csQueryDeviceProperties made-up handle");
    EXPECT(csQueryDeviceProperties(dev, NULL, NULL), CS_INVALID_ARG, "csQueryDeviceProperties NULL Length");
    EXPECT(csQueryDeviceProperties(dev, &len, NULL), CS_SUCCESS, "csQueryDeviceProperties: the length");
    size_t need = offsetof(CSxProperties, CSE) + units * sizeof(CSEProperties);
    CHECK(len == (int)(need > sizeof(CSxProperties) ? need : sizeof(CSxProperties)), "csQueryDeviceProperties: one CSE per unit");
    CSxProperties *props = calloc(1, (size_t)len);
    int small = (int)sizeof(CSxProperties) - 1;
    EXPECT(csQueryDeviceProperties(dev, &small, props), CS_INVALID_LENGTH, "csQueryDeviceProperties short buffer");
    CHECK(small == len, "csQueryDeviceProperties short buffer: the length needed");
    EXPECT(csQueryDeviceProperties(dev, &len, props), CS_SUCCESS, "csQueryDeviceProperties");
    CHECK(props->NumCSEs == units && props->FDMinMB == slm_size >> 20 && props->Flags.FDMIsHostVisible == 1 &&
              props->Flags.BatchRequestsSupported == 0 && props->CSE[units - 1].MaxRequestsPerBatch == 1024,
          "csQueryDeviceProperties: units, SLM, host-visible in-process SLM");
    CS_CSE_HANDLE cse = NULL;
    EXPECT(csOpenCSE(props->CSE[0].UniqueName, NULL, &cse), CS_SUCCESS, "csOpenCSE by its UniqueName");
    CsCapabilities caps;
    EXPECT(csQueryDeviceCapabilities(NULL, &caps), CS_INVALID_HANDLE, "csQueryDeviceCapabilities NULL handle");
    EXPECT(csQueryDeviceCapabilities(dev, NULL), CS_INVALID_ARG, "csQueryDeviceCapabilities NULL Caps");
    s = csQueryDeviceCapabilities(dev, &caps);
    CHECK(s == CS_SUCCESS && caps.Functions.Checksum && caps.Functions.Decompression && caps.Functions.DbFilter &&
              !caps.Functions.Encryption,
          "csQueryDeviceCapabilities: checksum, decompression, filter");
    len = 0;
    EXPECT(csQueryDeviceForComputeList(dev, &len, NULL), CS_SUCCESS, "csQueryDeviceForComputeList: the size");
    CsFunctionInfo *fi = malloc((size_t)len);
    s = csQueryDeviceForComputeList(dev, &len, fi);
    CHECK(s == CS_SUCCESS && len / (int)sizeof(CsFunctionInfo) == (int)nprog && fi[0].FunctionId == 1 &&
              strcmp(fi[0].Name, "copy") == 0 && fi[0].NumUnits == units,
          "csQueryDeviceForComputeList: every program, as csd_info counts them");
    free(fi);
    EXPECT(csQueryDeviceForComputeList(dev, NULL, NULL), CS_INVALID_ARG, "csQueryDeviceForComputeList NULL Size");

    /* ---- functions */
    CS_FUNCTION_ID fid = 0;
    EXPECT(csGetFunction(NULL, "checksum", NULL, &fid), CS_INVALID_HANDLE, "csGetFunction NULL handle");
    EXPECT(csGetFunction(cse, NULL, NULL, &fid), CS_INVALID_ARG, "csGetFunction NULL name");
    EXPECT(csGetFunction(cse, "checksum", NULL, NULL), CS_INVALID_ARG, "csGetFunction NULL FunctionId");
    EXPECT(csGetFunction(cse, "no-such-function", NULL, &fid), CS_INVALID_FUNCTION_NAME, "csGetFunction of no name");
    s = csGetFunction(cse, "checksum", NULL, &fid);
    CHECK(s == CS_SUCCESS && fid == 8, "csGetFunction checksum is 8");
    s = csGetFunction(dev, "gemm", NULL, &fid);
    CHECK(s == CS_SUCCESS && fid == 2, "csGetFunction with a CSx handle");

    /* ---- AFDM */
    CS_MEM_HANDLE m = NULL;
    EXPECT(csAllocMem(NULL, 16, 0, &m, NULL), CS_INVALID_HANDLE, "csAllocMem NULL handle");
    EXPECT(csAllocMem((CS_DEV_HANDLE)0x1, 16, 0, &m, NULL), CS_INVALID_HANDLE, "csAllocMem made-up handle");
    EXPECT(csAllocMem(dev, 0, 0, &m, NULL), CS_INVALID_ARG, "csAllocMem of 0 bytes");
    EXPECT(csAllocMem(dev, -5, 0, &m, NULL), CS_INVALID_ARG, "csAllocMem of -5 bytes");
    EXPECT(csAllocMem(dev, 16, 1, &m, NULL), CS_INVALID_OPTION, "csAllocMem with MemFlags");
    EXPECT(csAllocMem(dev, 16, 0, NULL, NULL), CS_INVALID_ARG, "csAllocMem NULL MemHandle");
    EXPECT(csAllocMem(dev, (int)slm_size + 1, 0, &m, NULL), CS_NOT_ENOUGH_MEMORY, "csAllocMem past SLM");
    CS_MEM_PTR va = NULL;
    EXPECT(csAllocMem(dev, 64, 0, &m, &va), CS_SUCCESS, "csAllocMem mapped (in-process SLM is host memory)");
    if (va) memcpy(va, "mapped!", 8);
    char back[16] = {0};
    s = copy(m, 0, back, 8, CS_COPY_FROM_DEVICE);
    CHECK(s == CS_SUCCESS && strcmp(back, "mapped!") == 0, "bytes written through the mapping are the AFDM's");
    EXPECT(csFreeMem(m), CS_SUCCESS, "csFreeMem");
    EXPECT(csFreeMem(m), CS_INVALID_HANDLE, "csFreeMem twice");
    EXPECT(csFreeMem(dev), CS_INVALID_HANDLE, "csFreeMem of a CSx handle");
    EXPECT(copy(m, 0, back, 8, CS_COPY_FROM_DEVICE), CS_UNKNOWN_MEMORY, "a copy of freed AFDM");

    /* ---- copy requests */
    CS_MEM_HANDLE a = alloc(dev, 4096), b = alloc(dev, 4096);
    CHECK(a && b, "two allocations");
    EXPECT(csQueueCopyMemRequest(NULL, NULL, NULL, NULL, NULL), CS_INVALID_ARG, "copy NULL request");
    EXPECT(copy(a, 0, back, 8, (CS_MEM_COPY_TYPE)7), CS_INVALID_OPTION, "copy of type 7");
    EXPECT(copy(a, 0, NULL, 8, CS_COPY_TO_DEVICE), CS_INVALID_ARG, "copy NULL host address");
    EXPECT(copy(a, 0, back, 0, CS_COPY_TO_DEVICE), CS_INVALID_ARG, "copy of 0 bytes");
    char big[4097];
    EXPECT(copy(a, 0, big, 4097, CS_COPY_TO_DEVICE), CS_INVALID_LENGTH, "copy past the allocation");
    EXPECT(copy(a, 4090, big, 7, CS_COPY_TO_DEVICE), CS_INVALID_LENGTH, "copy past the allocation from an offset");
    EXPECT(copy(a, 5000, big, 1, CS_COPY_TO_DEVICE), CS_INVALID_ARG, "copy from an offset past the allocation");
    EXPECT(copy((CS_MEM_HANDLE)0x42, 0, big, 1, CS_COPY_TO_DEVICE), CS_UNKNOWN_MEMORY, "copy of made-up AFDM");
    EXPECT(copy(a, 3, "123456789", 9, CS_COPY_TO_DEVICE), CS_SUCCESS, "copy 9 bytes to an odd offset");
    char nine[10] = {0};
    uint64_t off_a = 0;
    /* libcsd sees the same SLM only through its own allocations: compare work, not offsets */
    s = copy(a, 3, nine, 9, CS_COPY_FROM_DEVICE);
    CHECK(s == CS_SUCCESS && memcmp(nine, "123456789", 9) == 0, "copy back");

    /* ---- compute: checksum against libcsd's */
    CS_MEM_HANDLE data = alloc(dev, 9);
    copy(data, 0, "123456789", 9, CS_COPY_TO_DEVICE);
    CsComputeRequest *req = request(cse, 8, 2);
    csHelperSetComputeArg(&req->Args[0], CS_AFDM_TYPE, data, 0);
    csHelperSetComputeArg(&req->Args[1], CS_32BIT_VALUE_TYPE, CSD_CKSUM_CRC32C);
    u64 comp = 0;
    s = csQueueComputeRequest(req, NULL, NULL, NULL, &comp);
    CHECK(s == CS_SUCCESS && comp == 0xE3069283u, "checksum CRC-32C of 123456789 over 9 bytes of AFDM");
    csd_slm_alloc(lib, 4096, 4096, &off_a);
    csd_slm_write(lib, off_a, "123456789", 9);
    uint64_t lib_sum = 0;
    csd_range r9 = {off_a, 9};
    csd_checksum(lib, CSD_CKSUM_XXH64, r9, &lib_sum);
    csHelperSetComputeArg(&req->Args[1], CS_32BIT_VALUE_TYPE, CSD_CKSUM_XXH64);
    s = csQueueComputeRequest(req, NULL, NULL, NULL, &comp);
    CHECK(s == CS_SUCCESS && comp == lib_sum && (comp >> 32) != 0, "XXH64: CompValue has all 64 bits, as csd_checksum");
    csHelperSetComputeArg(&req->Args[1], CS_32BIT_VALUE_TYPE, 9);
    EXPECT(csQueueComputeRequest(req, NULL, NULL, NULL, &comp), CS_INVALID_ARG, "checksum algorithm 9: Invalid Parameters");
    CHECK(strstr(csd_snia_last_error(), "Invalid Parameters") != NULL, "the drive's status in words");
    csHelperSetComputeArg(&req->Args[1], CS_32BIT_VALUE_TYPE, CSD_CKSUM_CRC32C);
    EXPECT(csQueueComputeRequest(NULL, NULL, NULL, NULL, &comp), CS_INVALID_ARG, "compute NULL request");
    req->NumArgs = -1;
    EXPECT(csQueueComputeRequest(req, NULL, NULL, NULL, &comp), CS_INVALID_ARG, "compute NumArgs -1");
    req->NumArgs = 100000;
    EXPECT(csQueueComputeRequest(req, NULL, NULL, NULL, &comp), CS_INVALID_ARG, "compute NumArgs 100000");
    req->NumArgs = 2;
    req->CSEHandle = dev;
    EXPECT(csQueueComputeRequest(req, NULL, NULL, NULL, &comp), CS_INVALID_HANDLE, "compute with a CSx as CSEHandle");
    req->CSEHandle = NULL;
    s = csQueueComputeRequest(req, NULL, NULL, NULL, &comp);
    CHECK(s == CS_SUCCESS && comp == 0xE3069283u, "compute without a CSE: the AFDM's drive");
    req->FunctionId = 0x77;
    EXPECT(csQueueComputeRequest(req, NULL, NULL, NULL, &comp), CS_UNKNOWN_COMPUTE_FUNCTION, "compute of function 77h");
    req->FunctionId = 0x100000;
    EXPECT(csQueueComputeRequest(req, NULL, NULL, NULL, &comp), CS_UNKNOWN_COMPUTE_FUNCTION, "compute of function 100000h");
    req->FunctionId = 8;
    req->Args[1].Type = (CS_COMPUTE_ARG_TYPE)42;
    EXPECT(csQueueComputeRequest(req, NULL, NULL, NULL, &comp), CS_INVALID_OPTION, "compute argument of type 42");
    req->Args[1].Type = CS_STREAM_TYPE;
    EXPECT(csQueueComputeRequest(req, NULL, NULL, NULL, &comp), CS_UNSUPPORTED, "compute stream argument");
    req->Args[1].Type = CS_DESCRIPTOR_TYPE;
    EXPECT(csQueueComputeRequest(req, NULL, NULL, NULL, &comp), CS_UNSUPPORTED, "compute descriptor argument");
    csHelperSetComputeArg(&req->Args[1], CS_32BIT_VALUE_TYPE, CSD_CKSUM_CRC32C);
    req->Args[0].u.DevMem.ByteOffset = 10;
    EXPECT(csQueueComputeRequest(req, NULL, NULL, NULL, &comp), CS_INVALID_ARG, "compute AFDM offset past its allocation");
    req->Args[0].u.DevMem.ByteOffset = 0;
    req->Args[0].u.DevMem.MemHandle = (CS_MEM_HANDLE)0x99;
    EXPECT(csQueueComputeRequest(req, NULL, NULL, NULL, &comp), CS_UNKNOWN_MEMORY, "compute of made-up AFDM");
    req->Args[0].u.DevMem.MemHandle = m; /* freed above */
    EXPECT(csQueueComputeRequest(req, NULL, NULL, NULL, &comp), CS_UNKNOWN_MEMORY, "compute of freed AFDM");
    req->Args[0].Type = CS_32BIT_VALUE_TYPE;
    EXPECT(csQueueComputeRequest(req, NULL, NULL, NULL, &comp), CS_INVALID_HANDLE, "compute with no CSE and no AFDM");
    req->CSEHandle = cse;
    csHelperSetComputeArg(&req->Args[0], CS_AFDM_TYPE, data, 0);

    /* Output Overflow: copy 9 bytes into 4: CS_INVALID_LENGTH, CompValue the bytes needed */
    CS_MEM_HANDLE four = alloc(dev, 4);
    CsComputeRequest *cp = request(cse, 1, 2);
    csHelperSetComputeArg(&cp->Args[0], CS_AFDM_TYPE, data, 0);
    csHelperSetComputeArg(&cp->Args[1], CS_AFDM_TYPE, four, 0);
    comp = 0;
    s = csQueueComputeRequest(cp, NULL, NULL, NULL, &comp);
    CHECK(s == CS_INVALID_LENGTH && (comp >> 32) == 9, "copy into a smaller AFDM: CS_INVALID_LENGTH, 9 bytes needed");

    /* gemm: the same C as csd_gemm */
    enum { M = 24, N = 20, K = 28 };
    float A[M * K], B[K * N], C1[M * N], C2[M * N];
    for (int i = 0; i < M * K; i++) A[i] = (float)((i * 7) % 13) - 6.0f;
    for (int i = 0; i < K * N; i++) B[i] = (float)((i * 5) % 11) * 0.25f;
    CS_MEM_HANDLE ma = alloc(dev, sizeof A), mb = alloc(dev, sizeof B), mc = alloc(dev, sizeof C1);
    copy(ma, 0, A, sizeof A, CS_COPY_TO_DEVICE);
    copy(mb, 0, B, sizeof B, CS_COPY_TO_DEVICE);
    CsComputeRequest *g = request(cse, 2, 9);
    csHelperSetComputeArg(&g->Args[0], CS_AFDM_TYPE, ma, 0);
    csHelperSetComputeArg(&g->Args[1], CS_AFDM_TYPE, mb, 0);
    csHelperSetComputeArg(&g->Args[2], CS_AFDM_TYPE, mc, 0);
    csHelperSetComputeArg(&g->Args[3], CS_32BIT_VALUE_TYPE, M);
    csHelperSetComputeArg(&g->Args[4], CS_32BIT_VALUE_TYPE, N);
    csHelperSetComputeArg(&g->Args[5], CS_32BIT_VALUE_TYPE, K);
    csHelperSetComputeArg(&g->Args[6], CS_32BIT_VALUE_TYPE, 0);
    csHelperSetComputeArg(&g->Args[7], CS_32BIT_VALUE_TYPE, f32_bits(1.0f));
    csHelperSetComputeArg(&g->Args[8], CS_32BIT_VALUE_TYPE, f32_bits(0.0f));
    s = csQueueComputeRequest(g, NULL, NULL, NULL, &comp);
    CHECK(s == CS_SUCCESS && comp == M * N * 4, "gemm through the SNIA API");
    copy(mc, 0, C1, sizeof C1, CS_COPY_FROM_DEVICE);
    uint64_t la, lb, lc;
    csd_slm_alloc(lib, sizeof A, 64, &la);
    csd_slm_alloc(lib, sizeof B, 64, &lb);
    csd_slm_alloc(lib, sizeof C2, 64, &lc);
    csd_slm_write(lib, la, A, sizeof A);
    csd_slm_write(lib, lb, B, sizeof B);
    csd_range ra = {la, sizeof A}, rb = {lb, sizeof B}, rc = {lc, sizeof C2};
    int rc_lib = csd_gemm(lib, ra, rb, rc, M, N, K, 0, 1.0f, 0.0f);
    csd_slm_read(lib, lc, C2, sizeof C2);
    CHECK(rc_lib == 0 && memcmp(C1, C2, sizeof C1) == 0, "gemm: the same C as csd_gemm");

    /* ---- storage requests: the bytes libcsd's SLM Load reads */
    CsStorageRequest st = {0};
    st.Mode = CS_STORAGE_BLOCK_IO;
    st.DevHandle = dev;
    st.u.BlockIo.Type = CS_STORAGE_STORE_TYPE;
    st.u.BlockIo.StartLba = 100;
    st.u.BlockIo.NumBlocks = 8;
    st.u.BlockIo.DevMem.MemHandle = a;
    char pattern[4096];
    for (int i = 0; i < 4096; i++) pattern[i] = (char)(i * 31 + 7);
    copy(a, 0, pattern, 4096, CS_COPY_TO_DEVICE);
    s = csQueueStorageRequest(&st, NULL, NULL, NULL, &comp);
    CHECK(s == CS_SUCCESS && comp == 4096, "storage store of 8 LBAs");
    char seen[4096] = {0};
    csd_slm_load(lib, 100, 8, off_a);
    csd_slm_read(lib, off_a, seen, 4096);
    CHECK(memcmp(seen, pattern, 4096) == 0, "libcsd's SLM Load reads what the store wrote");
    st.u.BlockIo.Type = CS_STORAGE_LOAD_TYPE;
    st.u.BlockIo.DevMem.MemHandle = b;
    s = csQueueStorageRequest(&st, NULL, NULL, NULL, &comp);
    memset(seen, 0, sizeof seen);
    copy(b, 0, seen, 4096, CS_COPY_FROM_DEVICE);
    CHECK(s == CS_SUCCESS && memcmp(seen, pattern, 4096) == 0, "storage load of the same LBAs");
    CsStorageRequest bad = st;
    EXPECT(csQueueStorageRequest(NULL, NULL, NULL, NULL, NULL), CS_INVALID_ARG, "storage NULL request");
    bad.Mode = CS_STORAGE_FILE_IO;
    EXPECT(csQueueStorageRequest(&bad, NULL, NULL, NULL, NULL), CS_UNSUPPORTED, "storage file I/O");
    bad.Mode = (CS_STORAGE_REQ_MODE)5;
    EXPECT(csQueueStorageRequest(&bad, NULL, NULL, NULL, NULL), CS_INVALID_OPTION, "storage mode 5");
    bad = st;
    bad.DevHandle = cse;
    EXPECT(csQueueStorageRequest(&bad, NULL, NULL, NULL, NULL), CS_INVALID_HANDLE, "storage with a CSE as DevHandle");
    bad = st;
    bad.u.BlockIo.Type = (CS_STORAGE_IO_TYPE)3;
    EXPECT(csQueueStorageRequest(&bad, NULL, NULL, NULL, NULL), CS_INVALID_OPTION, "storage type 3");
    bad = st;
    bad.u.BlockIo.StorageIndex = 1;
    EXPECT(csQueueStorageRequest(&bad, NULL, NULL, NULL, NULL), CS_INVALID_ARG, "storage index 1 of one drive");
    bad = st;
    bad.u.BlockIo.NamespaceId = 99;
    EXPECT(csQueueStorageRequest(&bad, NULL, NULL, NULL, NULL), CS_INVALID_ARG, "storage of namespace 99");
    bad = st;
    bad.u.BlockIo.NumBlocks = 0;
    EXPECT(csQueueStorageRequest(&bad, NULL, NULL, NULL, NULL), CS_INVALID_ARG, "storage of 0 blocks");
    bad = st;
    bad.u.BlockIo.StartLba = ~0ull - 2;
    EXPECT(csQueueStorageRequest(&bad, NULL, NULL, NULL, NULL), CS_INVALID_ARG, "storage past the namespace");
    bad = st;
    bad.u.BlockIo.NumBlocks = 9;
    EXPECT(csQueueStorageRequest(&bad, NULL, NULL, NULL, NULL), CS_INVALID_LENGTH, "storage of more than the AFDM holds");
    bad = st;
    bad.u.BlockIo.DevMem.MemHandle = NULL;
    EXPECT(csQueueStorageRequest(&bad, NULL, NULL, NULL, NULL), CS_UNKNOWN_MEMORY, "storage of NULL AFDM");

    /* ---- csDownload: threshold.o, run as libcsd runs it */
    char file[512];
    const char *dir = getenv("CSD_BPF_DIR") ? getenv("CSD_BPF_DIR") : CSD_BPF_EXAMPLES;
    snprintf(file, sizeof file, "%s/threshold.o", dir);
    long size = 0;
    void *image = read_file(file, &size);
    CsDownloadInfo dl = {CS_BPF_PROGRAM, 16, 0, 0, (int)size, image};
    EXPECT(csDownload(NULL, &dl), CS_INVALID_HANDLE, "csDownload NULL handle");
    EXPECT(csDownload(dev, NULL), CS_INVALID_ARG, "csDownload NULL info");
    dl.Type = CS_FPGA_BITSTREAM;
    EXPECT(csDownload(dev, &dl), CS_UNSUPPORTED, "csDownload of an FPGA bitstream");
    dl.Type = (CS_DOWNLOAD_TYPE)77;
    EXPECT(csDownload(dev, &dl), CS_INVALID_OPTION, "csDownload of type 77");
    dl.Type = CS_BPF_PROGRAM;
    dl.SubType = 0;
    EXPECT(csDownload(dev, &dl), CS_INVALID_ARG, "csDownload record size 0");
    dl.SubType = 16;
    dl.Index = 5;
    EXPECT(csDownload(dev, &dl), CS_INVALID_ARG, "csDownload into slot 5");
    dl.Index = 0;
    dl.Length = 0;
    EXPECT(csDownload(dev, &dl), CS_INVALID_ARG, "csDownload of no bytes");
    dl.Length = 64 << 20;
    EXPECT(csDownload(dev, &dl), CS_INVALID_LENGTH, "csDownload of 64 MiB");
    char junk[64] = "not an ELF object";
    CsDownloadInfo dj = {CS_BPF_PROGRAM, 16, 0, 0, sizeof junk, junk};
    EXPECT(csDownload(dev, &dj), CS_LOAD_ERROR, "csDownload of a bad image: CS_LOAD_ERROR");
    dl.Length = (int)size;
    if (!image || size == 0) {
        printf("SKIP [%s] csDownload: %s missing (no clang)\n", kind, file);
    } else {
        s = csDownload(dev, &dl);
        CHECK(s == CS_SUCCESS && dl.Index >= 0x100, "csDownload threshold.o: its slot in Index");
        /* its name: the ELF's entry symbol; the standard's Program List has none (ebpf-SLOT) */
        char tname[32] = "threshold";
        if (strstr(path, "vendor=off")) snprintf(tname, sizeof tname, "ebpf-%04x", dl.Index);
        CS_FUNCTION_ID tid = 0;
        s = csGetFunction(cse, tname, NULL, &tid);
        CHECK(s == CS_SUCCESS && tid == (CS_FUNCTION_ID)dl.Index, "csGetFunction finds it by name");
        struct { int32_t key; uint32_t pad; uint64_t v; } recs[8];
        for (int i = 0; i < 8; i++) recs[i] = (typeof(recs[0])){i * 10, 0, (uint64_t)i};
        CS_MEM_HANDLE in = alloc(dev, sizeof recs), out = alloc(dev, sizeof recs);
        copy(in, 0, recs, sizeof recs, CS_COPY_TO_DEVICE);
        CsComputeRequest *t = request(cse, tid, 7);
        csHelperSetComputeArg(&t->Args[0], CS_AFDM_TYPE, in, 0);
        csHelperSetComputeArg(&t->Args[1], CS_AFDM_TYPE, out, 0);
        csHelperSetComputeArg(&t->Args[2], CS_32BIT_VALUE_TYPE, 8); /* records */
        csHelperSetComputeArg(&t->Args[3], CS_32BIT_VALUE_TYPE, CSD_BPF_FILTER);
        csHelperSetComputeArg(&t->Args[4], CS_32BIT_VALUE_TYPE, 1); /* params */
        csHelperSetComputeArg(&t->Args[5], CS_32BIT_VALUE_TYPE, 0);
        csHelperSetComputeArg(&t->Args[6], CS_64BIT_VALUE_TYPE, (u64)35);
        s = csQueueComputeRequest(t, NULL, NULL, NULL, &comp);
        CHECK(s == CS_SUCCESS && comp == (64 | 4ull << 32), "the downloaded filter: 4 records, 64 bytes");
        char kept[128];
        copy(out, 0, kept, 64, CS_COPY_FROM_DEVICE);
        uint16_t slot = 0;
        uint32_t dw0 = 0, dw1 = 0;
        uint64_t lin, lout, p35 = 35;
        csd_slm_alloc(lib, sizeof recs, 64, &lin);
        csd_slm_alloc(lib, sizeof recs, 64, &lout);
        csd_slm_write(lib, lin, recs, sizeof recs);
        csd_range rr = {lin, sizeof recs}, ro = {lout, sizeof recs};
        int ok = csd_program_load(lib, image, (uint32_t)size, 16, &slot, NULL) == 0 &&
                 csd_program_run(lib, slot, CSD_BPF_FILTER, rr, ro, 8, &p35, 1, &dw0, &dw1) == 0;
        char kept2[128];
        csd_slm_read(lib, lout, kept2, 64);
        CHECK(ok && dw0 == 64 && dw1 == 4 && memcmp(kept, kept2, 64) == 0, "the same records as csd_program_run");
        csd_program_unload(lib, slot);
        dl.Unload = 1;
        EXPECT(csDownload(dev, &dl), CS_SUCCESS, "csDownload Unload");
        EXPECT(csQueueComputeRequest(t, NULL, NULL, NULL, &comp), CS_UNKNOWN_COMPUTE_FUNCTION, "compute of the unloaded program");
        EXPECT(csDownload(dev, &dl), CS_UNKNOWN_COMPUTE_FUNCTION, "csDownload Unload twice");
        dl.Index = 3;
        EXPECT(csDownload(dev, &dl), CS_INVALID_ARG, "csDownload Unload of slot 3");
        /* programs loaded and unloaded while another thread computes: nothing breaks */
        struct churn ch = {req, 0, 0, 0};
        pthread_t th;
        pthread_create(&th, NULL, checksums, &ch);
        int cycles = 0;
        for (int i = 0; i < 10; i++) {
            for (int w = 0, r0 = ch.runs; w < 5000 && ch.runs < r0 + 3; w++) usleep(200); /* it runs meanwhile */
            CsDownloadInfo d2 = {CS_BPF_PROGRAM, 16, 0, 0, (int)size, image};
            CS_FUNCTION_ID f2 = 0;
            char n2[32];
            cycles += csDownload(dev, &d2) == CS_SUCCESS;
            snprintf(n2, sizeof n2, strstr(path, "vendor=off") ? "ebpf-%04x" : "threshold", d2.Index);
            cycles += csGetFunction(cse, n2, NULL, &f2) == CS_SUCCESS && f2 == (CS_FUNCTION_ID)d2.Index;
            d2.Unload = 1;
            cycles += csDownload(dev, &d2) == CS_SUCCESS;
        }
        ch.stop = 1;
        pthread_join(th, NULL);
        s = CS_SUCCESS;
        CHECK(cycles == 30 && ch.runs >= 30 && ch.wrong == 0, "10 downloads and unloads beside a thread's checksums");
        free(t);
        csFreeMem(in);
        csFreeMem(out);
    }
    free(image);

    /* ---- events and asynchronous requests */
    CS_EVT_HANDLE evt = NULL;
    EXPECT(csCreateEvent(NULL), CS_INVALID_ARG, "csCreateEvent NULL");
    EXPECT(csCreateEvent(&evt), CS_SUCCESS, "csCreateEvent");
    void *ctx = NULL;
    EXPECT(csPollEvent(evt, &ctx), CS_NOT_DONE, "csPollEvent of a new event");
    EXPECT(csPollEvent(NULL, &ctx), CS_INVALID_EVENT, "csPollEvent NULL");
    EXPECT(csPollEvent(dev, &ctx), CS_INVALID_EVENT, "csPollEvent of a CSx handle");
    EXPECT(csDeleteEvent((CS_EVT_HANDLE)0x5), CS_INVALID_EVENT, "csDeleteEvent made-up");
    EXPECT(csQueueComputeRequest(req, NULL, NULL, (CS_EVT_HANDLE)0x5, &comp), CS_INVALID_EVENT, "compute with a made-up event");
    /* 64 requests in flight on one event, each with its context */
    enum { DEPTH = 64 };
    u64 comps[DEPTH];
    int tags[DEPTH], queued = 0;
    for (int i = 0; i < DEPTH; i++) {
        comps[i] = 0;
        queued += csQueueComputeRequest(req, &tags[i], NULL, evt, &comps[i]) == CS_QUEUED;
    }
    CHECK(queued == DEPTH, "64 compute requests queued");
    int seen_tags[DEPTH] = {0}, done = 0, good = 1;
    for (int spins = 0; done < DEPTH && spins < 60000; spins++) {
        s = csPollEvent(evt, &ctx);
        if (s == CS_NOT_DONE) {
            usleep(500);
            continue;
        }
        good = good && s == CS_SUCCESS && ctx >= (void *)tags && ctx < (void *)(tags + DEPTH);
        if (good) seen_tags[(int *)ctx - tags]++;
        done++;
    }
    int once = 1;
    for (int i = 0; i < DEPTH; i++) once = once && seen_tags[i] == 1 && comps[i] == 0xE3069283u;
    CHECK(done == DEPTH && good && once, "64 completions, each context once, each CompValue right");
    /* a request completes: its callback runs before its event is signalled (the event is busy meanwhile) */
    gate_open = 0;
    gate_calls = 0;
    EXPECT(csQueueComputeRequest(req, NULL, gate, evt, &comp), CS_QUEUED, "compute with a callback and an event");
    for (int i = 0; i < 10000 && !gate_calls; i++) usleep(500);
    EXPECT(csDeleteEvent(evt), CS_HANDLE_IN_USE, "csDeleteEvent with a request not completed");
    EXPECT(csFreeMem(data), CS_SUCCESS, "csFreeMem of AFDM whose request finished (its callback still running)");
    gate_open = 1;
    while ((s = csPollEvent(evt, &ctx)) == CS_NOT_DONE) usleep(500);
    CHECK(s == CS_SUCCESS, "then the event has it");
    /* a failure arrives through the event, in words */
    data = alloc(dev, 9);
    csHelperSetComputeArg(&req->Args[0], CS_AFDM_TYPE, data, 0);
    csHelperSetComputeArg(&req->Args[1], CS_32BIT_VALUE_TYPE, 9);
    EXPECT(csQueueComputeRequest(req, NULL, NULL, evt, &comp), CS_QUEUED, "a bad checksum queued");
    while ((s = csPollEvent(evt, &ctx)) == CS_NOT_DONE) usleep(500);
    CHECK(s == CS_INVALID_ARG && strstr(csd_snia_last_error(), "Invalid Parameters"), "its failure polled, in words");
    csHelperSetComputeArg(&req->Args[1], CS_32BIT_VALUE_TYPE, CSD_CKSUM_CRC32C);
    /* a long gemm: its AFDM and CSx are in use until it ends; csAbortCSE ends it */
    enum { G = 1280 }; /* 4.2 GFLOP: gemm stops at its checks, every GFLOP */
    CS_MEM_HANDLE ga = alloc(dev, G * G * 4), gb = alloc(dev, G * G * 4), gc = alloc(dev, G * G * 4);
    CsComputeRequest *lg = request(cse, 2, 9);
    memcpy(lg, g, sizeof(CsComputeRequest) + 8 * sizeof(CsComputeArg));
    csHelperSetComputeArg(&lg->Args[0], CS_AFDM_TYPE, ga, 0);
    csHelperSetComputeArg(&lg->Args[1], CS_AFDM_TYPE, gb, 0);
    csHelperSetComputeArg(&lg->Args[2], CS_AFDM_TYPE, gc, 0);
    for (int i = 3; i < 6; i++) csHelperSetComputeArg(&lg->Args[i], CS_32BIT_VALUE_TYPE, G);
    if (ga && gb && gc) {
        int aborted_runs = 0, tries = 0;
        for (; tries < 5 && !aborted_runs; tries++) {
            EXPECT(csQueueComputeRequest(lg, NULL, NULL, evt, NULL), CS_QUEUED, "a long gemm queued");
            EXPECT(csFreeMem(ga), CS_MEMORY_IN_USE, "csFreeMem of AFDM a queued request uses");
            CS_DEV_HANDLE last = dev;
            (void)last;
            do {
                csAbortCSE(cse);
                usleep(200);
            } while ((s = csPollEvent(evt, &ctx)) == CS_NOT_DONE);
            aborted_runs += s == CS_ERROR_IN_EXECUTION;
        }
        CHECK(aborted_runs == 1, "csAbortCSE ends a running gemm: CS_ERROR_IN_EXECUTION");
        EXPECT(csAbortCSE(NULL), CS_INVALID_HANDLE, "csAbortCSE NULL");
    } else {
        printf("SKIP [%s] the long gemm: no room in SLM\n", kind);
    }
    csFreeMem(ga);
    csFreeMem(gb);
    csFreeMem(gc);
    free(lg);
    EXPECT(csDeleteEvent(evt), CS_SUCCESS, "csDeleteEvent");
    EXPECT(csDeleteEvent(evt), CS_INVALID_EVENT, "csDeleteEvent twice");

    /* ---- batches */
    CS_BATCH_HANDLE bh = NULL;
    EXPECT(csAllocBatchRequest(CS_BATCH_HYBRID, 4, &bh), CS_UNSUPPORTED, "a hybrid batch");
    EXPECT(csAllocBatchRequest((CS_BATCH_MODE)9, 4, &bh), CS_INVALID_OPTION, "a batch of mode 9");
    EXPECT(csAllocBatchRequest(CS_BATCH_SERIAL, 0, &bh), CS_INVALID_ARG, "a batch of 0 entries");
    EXPECT(csAllocBatchRequest(CS_BATCH_SERIAL, 5000, &bh), CS_INVALID_ARG, "a batch of 5000 entries");
    EXPECT(csAllocBatchRequest(CS_BATCH_SERIAL, 2, NULL), CS_INVALID_ARG, "csAllocBatchRequest NULL handle");
    EXPECT(csAllocBatchRequest(CS_BATCH_SERIAL, 2, &bh), CS_SUCCESS, "csAllocBatchRequest");
    EXPECT(csQueueBatchRequest(bh, NULL, NULL, NULL, NULL), CS_INVALID_ARG, "an empty batch");
    CsBatchRequest *e = calloc(1, sizeof(CsBatchRequest) + 8 * sizeof(CsComputeArg));
    CS_BATCH_INDEX i1 = 0, i2 = 0, i3 = 0;
    /* two copies to the same place: the later in the batch's order wins */
    e->ReqType = CS_COPY_AFDM;
    e->reqLength = sizeof(CsCopyMemRequest);
    e->u.CopyMem = (CsCopyMemRequest){CS_COPY_TO_DEVICE, "second!", {a, 0}, 8};
    EXPECT(csAddBatchEntry(bh, e, 0, 0, &i1), CS_SUCCESS, "csAddBatchEntry");
    e->u.CopyMem.HostVAddress = "first!!";
    EXPECT(csAddBatchEntry(bh, e, i1, 0, &i2), CS_SUCCESS, "csAddBatchEntry before it");
    EXPECT(csAddBatchEntry(bh, e, 0, 0, &i3), CS_OUT_OF_RESOURCES, "csAddBatchEntry past MaxReqs");
    EXPECT(csHelperResizeBatchRequest(bh, 1), CS_INVALID_ARG, "csHelperResizeBatchRequest below its entries");
    EXPECT(csHelperResizeBatchRequest(bh, 4), CS_SUCCESS, "csHelperResizeBatchRequest");
    CS_BATCH_INDEX i0 = 0;
    e->u.CopyMem.HostVAddress = "zeroth!";
    EXPECT(csAddBatchEntry(bh, e, 0, 0, &i0), CS_SUCCESS, "csAddBatchEntry with Before and After 0: the first");
    EXPECT(csHelperResizeBatchRequest(NULL, 4), CS_INVALID_HANDLE, "csHelperResizeBatchRequest NULL");
    EXPECT(csAddBatchEntry(bh, e, 99, 0, &i3), CS_INVALID_ARG, "csAddBatchEntry before entry 99");
    EXPECT(csAddBatchEntry(bh, e, i2, i1, &i3), CS_INVALID_ARG, "csAddBatchEntry between entries not side by side");
    EXPECT(csAddBatchEntry(bh, e, 0, 0, NULL), CS_INVALID_ARG, "csAddBatchEntry NULL Curr");
    EXPECT(csAddBatchEntry(bh, NULL, 0, 0, &i3), CS_INVALID_ARG, "csAddBatchEntry NULL Req");
    EXPECT(csAddBatchEntry(NULL, e, 0, 0, &i3), CS_INVALID_HANDLE, "csAddBatchEntry NULL batch");
    e->ReqType = (CS_BATCH_REQ_TYPE)8;
    EXPECT(csAddBatchEntry(bh, e, 0, i1, &i3), CS_INVALID_OPTION, "csAddBatchEntry of type 8");
    e->ReqType = CS_QUEUE_COMPUTE;
    memcpy(&e->u.Compute, g, sizeof(CsComputeRequest) + 8 * sizeof(CsComputeArg));
    e->reqLength = sizeof(CsComputeRequest);
    EXPECT(csAddBatchEntry(bh, e, 0, i1, &i3), CS_INVALID_LENGTH, "a compute entry of 9 arguments, reqLength of one");
    EXPECT(csQueueBatchRequest(bh, NULL, NULL, NULL, &comp), CS_SUCCESS, "csQueueBatchRequest serial");
    memset(back, 0, sizeof back);
    copy(a, 0, back, 8, CS_COPY_FROM_DEVICE);
    CHECK(strcmp(back, "second!") == 0, "entries ran in the batch's order (Before; 0, 0 first)");
    e->ReqType = CS_COPY_AFDM;
    e->reqLength = sizeof(CsCopyMemRequest);
    e->u.CopyMem = (CsCopyMemRequest){CS_COPY_TO_DEVICE, "third!!", {a, 0}, 8};
    EXPECT(csHelperReconfigureBatchEntry(bh, i1, e), CS_SUCCESS, "csHelperReconfigureBatchEntry");
    EXPECT(csHelperReconfigureBatchEntry(bh, 99, e), CS_INVALID_ARG, "csHelperReconfigureBatchEntry of entry 99");
    csQueueBatchRequest(bh, NULL, NULL, NULL, &comp);
    copy(a, 0, back, 8, CS_COPY_FROM_DEVICE);
    CHECK(strcmp(back, "third!!") == 0, "the reconfigured entry ran");
    /* a failing entry stops a serial batch: the copy after it does not run */
    e->ReqType = CS_QUEUE_COMPUTE;
    e->reqLength = sizeof(CsComputeRequest) + sizeof(CsComputeArg);
    memcpy(&e->u.Compute, req, e->reqLength);
    e->u.Compute.Args[1].u.Value32 = 9; /* checksum algorithm 9 */
    EXPECT(csHelperReconfigureBatchEntry(bh, i2, e), CS_SUCCESS, "entry 1: a checksum that fails");
    char untouched[8] = "same";
    e->ReqType = CS_COPY_AFDM;
    e->u.CopyMem = (CsCopyMemRequest){CS_COPY_FROM_DEVICE, untouched, {a, 0}, 8};
    EXPECT(csHelperReconfigureBatchEntry(bh, i1, e), CS_SUCCESS, "entry 2: a copy back");
    EXPECT(csQueueBatchRequest(bh, NULL, NULL, NULL, &comp), CS_INVALID_ARG, "the serial batch fails at entry 1");
    CHECK(strcmp(untouched, "same") == 0, "and entry 2 did not run");
    /* an entry whose AFDM is gone: nothing runs */
    CS_MEM_HANDLE gone = alloc(dev, 16);
    e->u.CopyMem = (CsCopyMemRequest){CS_COPY_TO_DEVICE, "x", {gone, 0}, 1};
    csHelperReconfigureBatchEntry(bh, i1, e);
    csFreeMem(gone);
    EXPECT(csQueueBatchRequest(bh, NULL, NULL, NULL, &comp), CS_UNKNOWN_MEMORY, "a batch with freed AFDM");
    /* an entry with a compute argument of no type: a type out of range, nothing runs */
    e->ReqType = CS_QUEUE_COMPUTE;
    e->reqLength = sizeof(CsComputeRequest) + sizeof(CsComputeArg);
    memcpy(&e->u.Compute, req, e->reqLength);
    e->u.Compute.Args[1].Type = (CS_COMPUTE_ARG_TYPE)42;
    s = csHelperReconfigureBatchEntry(bh, i1, e);
    if (s == CS_SUCCESS) s = csQueueBatchRequest(bh, NULL, NULL, NULL, &comp);
    CHECK(s == CS_INVALID_OPTION, "a batch entry's compute argument of type 42");
    EXPECT(csFreeBatchRequest(bh), CS_SUCCESS, "csFreeBatchRequest");
    EXPECT(csFreeBatchRequest(bh), CS_INVALID_HANDLE, "csFreeBatchRequest twice");
    /* parallel: 8 checksums of 8 buffers at once, asynchronously */
    EXPECT(csAllocBatchRequest(CS_BATCH_PARALLEL, 8, &bh), CS_SUCCESS, "a parallel batch");
    CS_MEM_HANDLE bufs[8];
    CS_BATCH_INDEX last = 0;
    for (int i = 0; i < 8; i++) {
        bufs[i] = alloc(dev, 9);
        copy(bufs[i], 0, "123456789", 9, CS_COPY_TO_DEVICE);
        e->ReqType = CS_QUEUE_COMPUTE;
        e->reqLength = sizeof(CsComputeRequest) + sizeof(CsComputeArg);
        memcpy(&e->u.Compute, req, e->reqLength);
        csHelperSetComputeArg(&e->u.Compute.Args[0], CS_AFDM_TYPE, bufs[i], 0);
        csAddBatchEntry(bh, e, 0, last, &last);
    }
    CS_EVT_HANDLE bev = NULL;
    csCreateEvent(&bev);
    comp = 0;
    EXPECT(csQueueBatchRequest(bh, bh, NULL, bev, &comp), CS_QUEUED, "the parallel batch queued");
    /* refused while it runs; eight 9-byte checksums may all be done already (a loaded host
     * runs this thread late): then it is freed at once */
    const CS_STATUS freed = csFreeBatchRequest(bh);
    CHECK(freed == CS_HANDLE_IN_USE || freed == CS_SUCCESS, "csFreeBatchRequest of a running batch: in use, or done");
    while ((s = csPollEvent(bev, &ctx)) == CS_NOT_DONE) usleep(500);
    CHECK(s == CS_SUCCESS && ctx == bh && comp == 0xE3069283u, "the parallel batch completed");
    if (freed == CS_HANDLE_IN_USE) EXPECT(csFreeBatchRequest(bh), CS_SUCCESS, "and can be freed once done");
    csDeleteEvent(bev);
    for (int i = 0; i < 8; i++) csFreeMem(bufs[i]);
    free(e);

    /* ---- statistics */
    CsStatsInfo si;
    EXPECT(csQueryDeviceStatistics(NULL, CS_STAT_CSx_MEM_USAGE, NULL, &si), CS_INVALID_HANDLE, "statistics NULL handle");
    EXPECT(csQueryDeviceStatistics(dev, CS_STAT_CSx_MEM_USAGE, NULL, NULL), CS_INVALID_ARG, "statistics NULL Stats");
    EXPECT(csQueryDeviceStatistics(dev, (CS_STAT_TYPE)9, NULL, &si), CS_INVALID_OPTION, "statistics of type 9");
    EXPECT(csQueryDeviceStatistics(dev, CS_STAT_CSE_USAGE, "csx999.cse9", &si), CS_INVALID_ARG, "statistics of no CSE");
    EXPECT(csQueryDeviceStatistics(dev, CS_STAT_FUNCTION, NULL, &si), CS_INVALID_ARG, "function statistics without an id");
    CS_FUNCTION_ID none = 0x1FE;
    EXPECT(csQueryDeviceStatistics(dev, CS_STAT_FUNCTION, &none, &si), CS_UNKNOWN_COMPUTE_FUNCTION, "statistics of no function");
    s = csQueryDeviceStatistics(dev, CS_STAT_CSx_MEM_USAGE, NULL, &si);
    CHECK(s == CS_SUCCESS && si.MemoryDetails.TotalAllocationsFDM >= 20 && si.MemoryDetails.TotalDeAllocationsFDM >= 10 &&
              si.MemoryDetails.TotalFreeCSFM + si.MemoryDetails.TotalAllocatedFDM == slm_size,
          "memory statistics: allocations counted, free + allocated = SLM");
    const int standard_only = strstr(path, "vendor=off") != NULL;
    CHECK(standard_only ? si.MemoryDetails.TotalHosttoFDMinMB == CS_STAT_UNKNOWN64 : si.MemoryDetails.TotalHosttoFDMinMB < 1000,
          "memory statistics: the drive's bytes, unknown without its statistics log");
    CS_FUNCTION_ID ck = 8;
    CsStatsInfo before, after;
    csQueryDeviceStatistics(dev, CS_STAT_FUNCTION, &ck, &before);
    for (int i = 0; i < 3; i++) csQueueComputeRequest(req, NULL, NULL, NULL, NULL);
    s = csQueryDeviceStatistics(dev, CS_STAT_FUNCTION, &ck, &after);
    CHECK(s == CS_SUCCESS && (standard_only ? after.FunctionDetails.TotalExecutions == CS_STAT_UNKNOWN64
                                            : after.FunctionDetails.TotalExecutions == before.FunctionDetails.TotalExecutions + 3),
          "function statistics: three more checksums (unknown without the statistics log)");
    CHECK(after.FunctionDetails.ShortestTimeUsecs <= after.FunctionDetails.AverageTimeUsecs &&
              after.FunctionDetails.AverageTimeUsecs <= after.FunctionDetails.LongestTimeUsecs,
          "function statistics: shortest <= average <= longest");
    s = csQueryDeviceStatistics(dev, CS_STAT_CSE_USAGE, props->CSE[0].UniqueName, &si);
    CHECK(s == CS_SUCCESS && si.CSEDetails.PowerOnMins == CS_STAT_UNKNOWN32 &&
              (standard_only ? si.CSEDetails.TotalFunctionExecutions == CS_STAT_UNKNOWN64 : si.CSEDetails.TotalFunctionExecutions > 0),
          "CSE statistics");

    /* ---- closing */
    EXPECT(csCloseCSx(dev), CS_SUCCESS, "csCloseCSx");
    EXPECT(copy(a, 0, back, 8, CS_COPY_FROM_DEVICE), CS_UNKNOWN_MEMORY, "AFDM of a closed CSx is gone");
    EXPECT(csQueueComputeRequest(req, NULL, NULL, NULL, NULL), CS_INVALID_HANDLE, "its CSE too");
    free(req);
    free(cp);
    free(g);
    free(props);
}

/* A set of two drives: CSEs of both, AFDM on either, StorageIndex picks the drive. */
/* Asynchronous requests in a child of fork(): the child has none of the library's threads,
 * yet its queued request completes (it polled CS_NOT_DONE for ever before, and its CSx stayed
 * in use), and the parent's requests go on completing. */
static void forked(const char *path)
{
    CS_DEV_HANDLE dev = NULL;
    CS_CSE_HANDLE cse = NULL;
    CS_FUNCTION_ID fid = 0;
    char cses[256];
    unsigned len = sizeof cses;
    EXPECT(csOpenCSx((char *)path, NULL, &dev), CS_SUCCESS, "fork: csOpenCSx");
    if (!dev) return;
    EXPECT(csGetCSEFromCSx(dev, &len, cses), CS_SUCCESS, "fork: csGetCSEFromCSx");
    cses[strcspn(cses, ",")] = 0;
    EXPECT(csOpenCSE(cses, NULL, &cse), CS_SUCCESS, "fork: csOpenCSE");
    EXPECT(csGetFunction(cse, "checksum", NULL, &fid), CS_SUCCESS, "fork: csGetFunction checksum");
    CS_MEM_HANDLE m = alloc(dev, 9);
    EXPECT(copy(m, 0, "123456789", 9, CS_COPY_TO_DEVICE), CS_SUCCESS, "fork: copy to the device");
    CsComputeRequest *req = request(cse, fid, 2);
    csHelperSetComputeArg(&req->Args[0], CS_AFDM_TYPE, m, 0);
    csHelperSetComputeArg(&req->Args[1], CS_32BIT_VALUE_TYPE, CSD_CKSUM_CRC32C);
    /* one queued request in each process: the first makes the parent's pool (a thread waits there) */
    for (int who = 0; who < 3; who++) {
        pid_t child = who == 1 ? fork() : -1;
        if (who == 1 && child < 0) {
            CHECK(0, "fork: fork()");
            break;
        }
        CS_EVT_HANDLE evt = NULL;
        u64 comp = 0;
        void *ctx = NULL;
        csCreateEvent(&evt);
        if (child == 0) alarm(60); /* a child that hangs is killed, and fails below */
        s = csQueueComputeRequest(req, NULL, NULL, evt, &comp);
        if (s == CS_QUEUED) /* polled for up to 20 s */
            for (int i = 0; (s = csPollEvent(evt, &ctx)) == CS_NOT_DONE && i < 20000; i++) usleep(1000);
        const int done = s == CS_SUCCESS && comp == 0xe3069283u;
        if (child == 0) { /* the child: its request done, its event and CSx free again */
            const int freed = csDeleteEvent(evt) == CS_SUCCESS && csFreeMem(m) == CS_SUCCESS &&
                              csCloseCSE(cse) == CS_SUCCESS && csCloseCSx(dev) == CS_SUCCESS;
            if (!done) printf("FAIL [%s] fork: the child's request: %s (%s)\n", kind, csd_snia_status_name(s), csd_snia_last_error());
            fflush(stdout);
            _exit(done && freed ? 0 : !done ? 2 : 3);
        }
        CHECK(done, who == 0 ? "fork: a queued request before the fork" : "fork: the parent's queued request after the fork");
        EXPECT(csDeleteEvent(evt), CS_SUCCESS, "fork: csDeleteEvent");
        if (child > 0) {
            int st = 0;
            waitpid(child, &st, 0);
            s = CS_SUCCESS;
            CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0,
                  !WIFEXITED(st) ? "fork: the child's queued request never completed (killed)"
                  : WEXITSTATUS(st) == 2 ? "fork: the child's queued request failed"
                                         : "fork: the child could not free its event, AFDM and CSx");
        }
    }
    free(req);
    EXPECT(csFreeMem(m), CS_SUCCESS, "fork: csFreeMem");
    EXPECT(csCloseCSE(cse), CS_SUCCESS, "fork: csCloseCSE");
    EXPECT(csCloseCSx(dev), CS_SUCCESS, "fork: csCloseCSx");
}

static void on_set(const char *p0, const char *p1)
{
    char name[1024];
    snprintf(name, sizeof name, "set:%s;%s", p0, p1);
    CS_DEV_HANDLE dev = NULL;
    EXPECT(csOpenCSx(name, NULL, &dev), CS_SUCCESS, "csOpenCSx of a set");
    if (!dev) return;
    int len = 0;
    csQueryDeviceProperties(dev, &len, NULL);
    CSxProperties *props = calloc(1, (size_t)len);
    s = csQueryDeviceProperties(dev, &len, props);
    CHECK(s == CS_SUCCESS && props->NumCSEs == 4, "a set of two drives of 2 units: 4 CSEs");
    CS_CSE_HANDLE c0 = NULL, c3 = NULL;
    csOpenCSE(props->CSE[0].UniqueName, NULL, &c0);
    csOpenCSE(props->CSE[3].UniqueName, NULL, &c3);
    CS_MEM_HANDLE m0 = NULL, m1 = NULL;
    EXPECT(csAllocMem(c0, 4096, 0, &m0, NULL), CS_SUCCESS, "AFDM on drive 0 (through its CSE)");
    EXPECT(csAllocMem(c3, 4096, 0, &m1, NULL), CS_SUCCESS, "AFDM on drive 1 (through its CSE)");
    char pattern[4096], seen[4096];
    for (int i = 0; i < 4096; i++) pattern[i] = (char)(i ^ 0x5a);
    copy(m0, 0, pattern, 4096, CS_COPY_TO_DEVICE);
    CsStorageRequest st = {0};
    st.Mode = CS_STORAGE_BLOCK_IO;
    st.DevHandle = dev;
    st.u.BlockIo.Type = CS_STORAGE_STORE_TYPE;
    st.u.BlockIo.StorageIndex = 1; /* drive 1's LBAs from drive 0's AFDM */
    st.u.BlockIo.StartLba = 16;
    st.u.BlockIo.NumBlocks = 8;
    st.u.BlockIo.DevMem.MemHandle = m0;
    EXPECT(csQueueStorageRequest(&st, NULL, NULL, NULL, NULL), CS_SUCCESS, "store drive 0's AFDM to drive 1");
    st.u.BlockIo.Type = CS_STORAGE_LOAD_TYPE;
    st.u.BlockIo.DevMem.MemHandle = m1;
    s = csQueueStorageRequest(&st, NULL, NULL, NULL, NULL);
    copy(m1, 0, seen, 4096, CS_COPY_FROM_DEVICE);
    CHECK(s == CS_SUCCESS && memcmp(seen, pattern, 4096) == 0, "and load it into drive 1's AFDM");
    st.u.BlockIo.StorageIndex = 0;
    st.u.BlockIo.DevMem.MemHandle = m0;
    memset(seen, 0, sizeof seen);
    s = csQueueStorageRequest(&st, NULL, NULL, NULL, NULL);
    copy(m0, 0, seen, 4096, CS_COPY_FROM_DEVICE);
    CHECK(s == CS_SUCCESS && memcmp(seen, pattern, 4096) != 0, "drive 0's LBAs are another drive's");
    st.u.BlockIo.StorageIndex = 2;
    EXPECT(csQueueStorageRequest(&st, NULL, NULL, NULL, NULL), CS_INVALID_ARG, "StorageIndex 2 of a set of two");
    CsComputeRequest *req = request(c3, 1, 2); /* copy m0 -> m1 on drive 1: m0 is drive 0's */
    csHelperSetComputeArg(&req->Args[0], CS_AFDM_TYPE, m0, 0);
    csHelperSetComputeArg(&req->Args[1], CS_AFDM_TYPE, m1, 0);
    EXPECT(csQueueComputeRequest(req, NULL, NULL, NULL, NULL), CS_ENTITY_NOT_ON_DEVICE, "compute over AFDM of two drives");
    CS_MEM_HANDLE m1b = NULL;
    csAllocMem(c3, 4096, 0, &m1b, NULL);
    csHelperSetComputeArg(&req->Args[0], CS_AFDM_TYPE, m1, 0);
    csHelperSetComputeArg(&req->Args[1], CS_AFDM_TYPE, m1b, 0);
    u64 comp = 0;
    s = csQueueComputeRequest(req, NULL, NULL, NULL, &comp);
    memset(seen, 0, sizeof seen);
    copy(m1b, 0, seen, 4096, CS_COPY_FROM_DEVICE);
    CHECK(s == CS_SUCCESS && comp == 4096 && memcmp(seen, pattern, 4096) == 0, "copy on drive 1");
    free(req);
    free(props);
    EXPECT(csCloseCSx(dev), CS_SUCCESS, "csCloseCSx of the set");
}

int main(int argc, char **argv)
{
    unsupported_calls();
    struct {
        const char *name, *options, *front_end;
    } kinds[] = {
        {"vendor", "", NULL},
        {"standard-only", "&nvme-cs=1&vendor=off", NULL},
        {"host", "", "host"},
    };
    const int nk = argc > 1 ? 1 : 3;
    for (int k = 0; k < nk; k++) {
        char tmpl[] = "/tmp/csd-snia-test-XXXXXX";
        char path[512];
        close(mkstemp(tmpl));
        if (argc > 1) {
            snprintf(path, sizeof path, "%s", argv[1]);
            kind = argv[1];
        } else {
            snprintf(path, sizeof path, "emu:%s?size=16M&slm=32M%s", tmpl, kinds[k].options);
            kind = kinds[k].name;
        }
        if (kinds[k].front_end && argc <= 1)
            setenv("CSD_FRONT_END", kinds[k].front_end, 1);
        else if (argc <= 1)
            unsetenv("CSD_FRONT_END");
        csd_dev *lib = NULL;
        if (csd_open(path, &lib) != 0) {
            printf("FAIL [%s] csd_open %s: %s\n", kind, path, csd_last_error());
            failed++;
            continue;
        }
        discovery(path);
        on_drive(path, lib);
        forked(path);
        csd_close(lib);
        unlink(tmpl);
    }
    if (argc <= 1) {
        unsetenv("CSD_FRONT_END");
        kind = "set";
        char t0[] = "/tmp/csd-snia-set-XXXXXX", t1[] = "/tmp/csd-snia-set-XXXXXX";
        close(mkstemp(t0));
        close(mkstemp(t1));
        char p0[256], p1[256];
        snprintf(p0, sizeof p0, "emu:%s?size=16M&slm=8M", t0);
        snprintf(p1, sizeof p1, "emu:%s?size=16M&slm=8M", t1);
        on_set(p0, p1);
        unlink(t0);
        unlink(t1);
    }
    printf("snia: %d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
