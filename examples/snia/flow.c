// SPDX-License-Identifier: MIT
/*
 * flow.c - the SNIA Computational Storage API's usage flow, written to cs.h alone:
 * discover a CSx, open it and a CSE, find a function, allocate AFDM, load data from
 * storage into it, compute, copy the result back, free, close. Then the same compute
 * asynchronously (an event, a callback) and as a serial batch (load, compute, copy).
 *
 * The function is the drive's "elementwise" program with op axpb: out[i] = a * x[i] + b
 * over count f32 values (its parameters, in order: op, count, a, b; docs/command-set.md).
 *
 * Build: cc flow.c $(pkg-config --cflags --libs csd-snia) -o flow
 * Run:   ./flow [DEVICE]   (default: a new in-process device, emu:/tmp/csd-snia-flow-XXXXXX)
 * Prints each step and 'snia-flow: N passed, N failed'; exits 1 if a step failed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cs.h"

#define COUNT 4096                /* f32 values: 16 KiB, 32 LBAs of 512 bytes */
#define BYTES (COUNT * 4)
#define START_LBA 64
#define OP_AXPB 20                /* elementwise's op a * x + b */

static int passed, failed;
static CS_STATUS s; /* the status of the call a check looks at */

static void check(int ok, const char *what)
{
    if (ok) {
        passed++;
        printf("ok   %s\n", what);
    } else {
        failed++;
        printf("FAIL %s: %s (%s)\n", what, csd_snia_status_name(s), csd_snia_last_error());
    }
}

static u32 f32_bits(float f)
{
    u32 u;
    memcpy(&u, &f, 4);
    return u;
}

/* The compute request: elementwise axpb over COUNT values, in -> out. */
static CsComputeRequest *axpb_request(CS_CSE_HANDLE cse, CS_FUNCTION_ID fid, CS_MEM_HANDLE in, CS_MEM_HANDLE out)
{
    CsComputeRequest *req = calloc(1, sizeof(CsComputeRequest) + 5 * sizeof(CsComputeArg));
    req->CSEHandle = cse;
    req->FunctionId = fid;
    req->NumArgs = 6;
    CsComputeArg *arg = req->Args;
    csHelperSetComputeArg(&arg[0], CS_AFDM_TYPE, in, 0);
    csHelperSetComputeArg(&arg[1], CS_AFDM_TYPE, out, 0);
    csHelperSetComputeArg(&arg[2], CS_32BIT_VALUE_TYPE, OP_AXPB);
    csHelperSetComputeArg(&arg[3], CS_32BIT_VALUE_TYPE, COUNT);
    csHelperSetComputeArg(&arg[4], CS_32BIT_VALUE_TYPE, f32_bits(2.0f)); /* a */
    csHelperSetComputeArg(&arg[5], CS_32BIT_VALUE_TYPE, f32_bits(1.0f)); /* b */
    return req;
}

/* Whether out holds 2 * x + 1 for the input of main. */
static int result_ok(const float *out)
{
    for (int i = 0; i < COUNT; i++) {
        if (out[i] != 2.0f * (float)(i % 1000 - 500) + 1.0f) return 0;
    }
    return 1;
}

static volatile int callback_status = -1;
static void *callback_context;

static void on_done(void *context, CS_STATUS status)
{
    callback_context = context;
    callback_status = status;
}

int main(int argc, char **argv)
{
    char path[512];
    char tmpl[] = "/tmp/csd-snia-flow-XXXXXX";
    int made = 0;
    if (argc > 1) {
        snprintf(path, sizeof path, "%s", argv[1]);
    } else {
        close(mkstemp(tmpl));
        snprintf(path, sizeof path, "emu:%s?size=16M&slm=8M", tmpl);
        made = 1;
    }
    float *x = malloc(BYTES), *out = malloc(BYTES);
    for (int i = 0; i < COUNT; i++) x[i] = (float)(i % 1000 - 500);

    /* discover: the CSx of a path, its name as csOpenCSx takes it */
    char name[512];
    unsigned int len = sizeof name;
    check((s = csGetCSxFromPath(path, &len, name)) == CS_SUCCESS, "csGetCSxFromPath");
    CS_DEV_HANDLE dev = NULL;
    check((s = csOpenCSx(name, NULL, &dev)) == CS_SUCCESS, "csOpenCSx");
    if (!dev) return 1;
    int plen = 0;
    csQueryDeviceProperties(dev, &plen, NULL);
    CSxProperties *props = malloc(plen);
    check((s = csQueryDeviceProperties(dev, &plen, props)) == CS_SUCCESS && props->NumCSEs >= 1,
          "csQueryDeviceProperties");
    printf("     %s: %u MiB of FDM, %u CSE(s), first %s\n", props->FriendlyName, props->FDMinMB, props->NumCSEs,
           props->CSE[0].UniqueName);

    /* a CSE and its function */
    char cses[1024];
    len = sizeof cses;
    check((s = csGetCSEFromCSx(dev, &len, cses)) == CS_SUCCESS, "csGetCSEFromCSx");
    cses[strcspn(cses, ",")] = 0; /* the first */
    CS_CSE_HANDLE cse = NULL;
    check((s = csOpenCSE(cses, NULL, &cse)) == CS_SUCCESS, "csOpenCSE");
    CS_FUNCTION_ID fid = 0;
    check((s = csGetFunction(cse, "elementwise", NULL, &fid)) == CS_SUCCESS, "csGetFunction elementwise");

    /* AFDM for the input and the output */
    CS_MEM_HANDLE in_mem = NULL, out_mem = NULL;
    check((s = csAllocMem(dev, BYTES, 0, &in_mem, NULL)) == CS_SUCCESS, "csAllocMem input");
    check((s = csAllocMem(dev, BYTES, 0, &out_mem, NULL)) == CS_SUCCESS, "csAllocMem output");

    /* put the input on storage first: host -> AFDM -> LBAs (copy, then a store request) */
    CsCopyMemRequest copy = {CS_COPY_TO_DEVICE, x, {in_mem, 0}, BYTES};
    u64 comp = 0;
    check((s = csQueueCopyMemRequest(&copy, NULL, NULL, NULL, &comp)) == CS_SUCCESS && comp == BYTES,
          "csQueueCopyMemRequest to the device");
    CsStorageRequest store = {0};
    store.Mode = CS_STORAGE_BLOCK_IO;
    store.DevHandle = dev;
    store.u.BlockIo.Type = CS_STORAGE_STORE_TYPE;
    store.u.BlockIo.StartLba = START_LBA;
    store.u.BlockIo.NumBlocks = BYTES / 512;
    store.u.BlockIo.DevMem.MemHandle = in_mem;
    check((s = csQueueStorageRequest(&store, NULL, NULL, NULL, &comp)) == CS_SUCCESS, "csQueueStorageRequest store");

    /* the flow: load from storage, compute, copy back */
    CsStorageRequest load = store;
    load.u.BlockIo.Type = CS_STORAGE_LOAD_TYPE;
    check((s = csQueueStorageRequest(&load, NULL, NULL, NULL, &comp)) == CS_SUCCESS && comp == BYTES,
          "csQueueStorageRequest load");
    CsComputeRequest *req = axpb_request(cse, fid, in_mem, out_mem);
    check((s = csQueueComputeRequest(req, NULL, NULL, NULL, &comp)) == CS_SUCCESS && comp == BYTES,
          "csQueueComputeRequest (synchronous)");
    CsCopyMemRequest back = {CS_COPY_FROM_DEVICE, out, {out_mem, 0}, BYTES};
    memset(out, 0, BYTES);
    check((s = csQueueCopyMemRequest(&back, NULL, NULL, NULL, NULL)) == CS_SUCCESS && result_ok(out),
          "csQueueCopyMemRequest back: out = 2x + 1");

    /* asynchronously: an event polled until the request completes */
    CS_EVT_HANDLE evt = NULL;
    check((s = csCreateEvent(&evt)) == CS_SUCCESS, "csCreateEvent");
    int tag = 7;
    comp = 0;
    check((s = csQueueComputeRequest(req, &tag, NULL, evt, &comp)) == CS_QUEUED, "csQueueComputeRequest with an event");
    void *ctx = NULL;
    while ((s = csPollEvent(evt, &ctx)) == CS_NOT_DONE) usleep(1000);
    check(s == CS_SUCCESS && ctx == &tag && comp == BYTES, "csPollEvent: done, with the request's context");
    check((s = csPollEvent(evt, &ctx)) == CS_NOT_DONE, "csPollEvent again: nothing more");
    check((s = csDeleteEvent(evt)) == CS_SUCCESS, "csDeleteEvent");

    /* and with a callback */
    check((s = csQueueComputeRequest(req, &tag, on_done, NULL, NULL)) == CS_QUEUED, "csQueueComputeRequest with a callback");
    for (int i = 0; i < 10000 && callback_status < 0; i++) usleep(1000);
    s = (CS_STATUS)callback_status;
    check(s == CS_SUCCESS && callback_context == &tag, "the callback ran with CS_SUCCESS");

    /* a serial batch: load, compute, copy back */
    CS_BATCH_HANDLE batch = NULL;
    check((s = csAllocBatchRequest(CS_BATCH_SERIAL, 3, &batch)) == CS_SUCCESS, "csAllocBatchRequest serial");
    CsBatchRequest *entry = calloc(1, sizeof(CsBatchRequest) + 5 * sizeof(CsComputeArg));
    CS_BATCH_INDEX e1 = 0, e2 = 0, e3 = 0;
    entry->ReqType = CS_STORAGE_IO;
    entry->reqLength = sizeof(CsStorageRequest);
    entry->u.StorageIo = load;
    check((s = csAddBatchEntry(batch, entry, 0, 0, &e1)) == CS_SUCCESS, "csAddBatchEntry load");
    entry->ReqType = CS_QUEUE_COMPUTE;
    entry->reqLength = sizeof(CsComputeRequest) + 5 * sizeof(CsComputeArg);
    memcpy(&entry->u.Compute, req, entry->reqLength);
    check((s = csAddBatchEntry(batch, entry, 0, e1, &e2)) == CS_SUCCESS, "csAddBatchEntry compute");
    entry->ReqType = CS_COPY_AFDM;
    entry->reqLength = sizeof(CsCopyMemRequest);
    entry->u.CopyMem = back;
    check((s = csAddBatchEntry(batch, entry, 0, e2, &e3)) == CS_SUCCESS, "csAddBatchEntry copy back");
    memset(out, 0, BYTES);
    check((s = csQueueBatchRequest(batch, NULL, NULL, NULL, NULL)) == CS_SUCCESS && result_ok(out),
          "csQueueBatchRequest: the same result");
    check((s = csFreeBatchRequest(batch)) == CS_SUCCESS, "csFreeBatchRequest");

    /* statistics of the function */
    CsStatsInfo st;
    check((s = csQueryDeviceStatistics(dev, CS_STAT_FUNCTION, &fid, &st)) == CS_SUCCESS &&
              st.FunctionDetails.LongestTimeUsecs >= st.FunctionDetails.ShortestTimeUsecs,
          "csQueryDeviceStatistics of the function");
    if (st.FunctionDetails.TotalExecutions == CS_STAT_UNKNOWN64)
        printf("     elementwise: executions unknown (no statistics log), average %llu us here\n",
               (unsigned long long)st.FunctionDetails.AverageTimeUsecs);
    else
        printf("     elementwise: %llu executions counted by the CSx, average %llu us here\n",
               (unsigned long long)st.FunctionDetails.TotalExecutions, (unsigned long long)st.FunctionDetails.AverageTimeUsecs);

    /* free, close */
    check((s = csFreeMem(in_mem)) == CS_SUCCESS, "csFreeMem input");
    check((s = csFreeMem(out_mem)) == CS_SUCCESS, "csFreeMem output");
    check((s = csCloseCSE(cse)) == CS_SUCCESS, "csCloseCSE");
    check((s = csCloseCSx(dev)) == CS_SUCCESS, "csCloseCSx");
    free(entry);
    free(req);
    free(props);
    free(x);
    free(out);
    if (made) unlink(tmpl);
    printf("snia-flow: %d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
