// SPDX-License-Identifier: MIT
/* The C API of libcsd, from C: open, SLM, Execute, errors in words, the store.
 * Device: argv[1] or a fresh in-process device. Prints 'c-api: N passed, N failed'. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>

#include "csd.h"
#include "csd_crc32c.h"
#include "nvme_cs.h"

static int passed, failed;

#define CHECK(cond, what)                                                                  \
    do {                                                                                   \
        if (cond) {                                                                        \
            passed++;                                                                      \
        } else {                                                                           \
            failed++;                                                                      \
            printf("FAIL %s (line %d; last error: %s)\n", what, __LINE__, csd_last_error()); \
        }                                                                                  \
    } while (0)

/* A source of n pseudo-random bytes given in reads of uneven size (a pipe's), failing with
 * -EPIPE once `fail_at` bytes are given (UINT64_MAX: never). */
struct gen {
    uint64_t n, pos, fail_at;
};

/* The byte at i of the generated object. */
static uint8_t gen_byte(uint64_t i) { return (uint8_t)(i * 2654435761u >> 13); }

/* csd_read_fn over a struct gen. */
static int64_t gen_read(void *ctx, void *buf, uint64_t want)
{
    struct gen *g = ctx;
    if (g->pos >= g->fail_at) return -EPIPE;
    uint64_t k = want < 100003 ? want : 100003;
    if (k > g->n - g->pos) k = g->n - g->pos;
    for (uint64_t i = 0; i < k; i++) ((uint8_t *)buf)[i] = gen_byte(g->pos + i);
    g->pos += k;
    return (int64_t)k;
}

/* What csd_store_get_stream wrote: the bytes checked against gen_byte, in order. */
struct sink {
    uint64_t next, bad;
};

/* csd_write_fn checking each byte (pos 0 again starts over). */
static int sink_write(void *ctx, uint64_t pos, const void *buf, uint64_t n)
{
    struct sink *s = ctx;
    if (pos == 0) s->next = s->bad = 0;
    if (pos != s->next) return -EINVAL;
    for (uint64_t i = 0; i < n; i++) s->bad += ((const uint8_t *)buf)[i] != gen_byte(pos + i);
    s->next += n;
    return 0;
}

/* csd_stream_opts' progress: counts the pieces. */
static int count_piece(void *arg, uint64_t done, uint64_t total)
{
    (void)done, (void)total;
    ++*(int *)arg;
    return 0;
}

/* csd_stream_opts' progress: cancels at the first piece. */
static int stop_piece(void *arg, uint64_t done, uint64_t total)
{
    (void)arg, (void)done, (void)total;
    return 1;
}

/* One csd_dev shared by threads (from its first store call: the store is opened once, and
 * SLM allocations are shared state) and, on the in-process device, by a child forked while
 * they run: what each thread puts it gets back, its errors are its own. */
struct sharer {
    csd_dev *dev;
    pthread_barrier_t *start;
    int id, bad;
};

static void *share_work(void *arg)
{
    struct sharer *w = arg;
    char name[32], buf[4096], got[4096];
    uint64_t len = 0, at = 0;
    if (w->start) pthread_barrier_wait(w->start);
    for (int i = 0; i < 20; i++) {
        snprintf(name, sizeof name, "share%d_%d", w->id, i);
        memset(buf, w->id + i, sizeof buf);
        w->bad += csd_store_put(w->dev, name, buf, sizeof buf) != 0;
        w->bad += csd_store_get(w->dev, name, got, sizeof got, &len) != 0 || len != sizeof buf ||
                  memcmp(got, buf, sizeof buf) != 0;
        w->bad += csd_store_get(w->dev, "share-missing", got, sizeof got, &len) != -ENOENT ||
                  strstr(csd_last_error(), "share-missing") == NULL;
        w->bad += csd_slm_alloc(w->dev, 8192, 4096, &at) != 0 || csd_slm_free(w->dev, at) != 0;
    }
    return NULL;
}

static void threads_share_a_device(const char *path, int may_fork)
{
    enum { THREADS = 4, ROUNDS = 6 };
    int bad = 0, child_ok = 1;
    for (int round = 0; round < ROUNDS; round++) {
        csd_dev *dev = NULL;
        if (csd_open(path, &dev) != 0) {
            bad++;
            break;
        }
        pthread_barrier_t start;
        pthread_barrier_init(&start, NULL, THREADS + 1);
        pthread_t t[THREADS];
        struct sharer w[THREADS];
        for (int i = 0; i < THREADS; i++) {
            w[i] = (struct sharer){dev, &start, i + 1, 0};
            pthread_create(&t[i], NULL, share_work, &w[i]);
        }
        pthread_barrier_wait(&start);
        pid_t child = may_fork ? fork() : -1;
        if (child == 0) {  /* the child goes on with the parent's device, alone */
            struct sharer c = {dev, NULL, 100 + round, 0};
            share_work(&c);
            _exit(c.bad ? 1 : 0);
        }
        for (int i = 0; i < THREADS; i++) {
            pthread_join(t[i], NULL);
            bad += w[i].bad;
        }
        if (child > 0) {  /* a child that hangs (a lock held across fork) is killed after 60 s */
            int status = 0, waited = 0;
            while (waitpid(child, &status, WNOHANG) == 0 && waited++ < 600) usleep(100000);
            if (waited > 600) {
                kill(child, SIGKILL);
                waitpid(child, &status, 0);
            }
            child_ok &= waited <= 600 && WIFEXITED(status) && WEXITSTATUS(status) == 0;
        }
        pthread_barrier_destroy(&start);
        csd_close(dev);
    }
    CHECK(bad == 0, "threads sharing one csd_dev from its first store call: every put read back, errors per thread");
    if (may_fork) CHECK(child_ok, "a child forked while they ran goes on with the device (no lock held across fork)");
}

int main(int argc, char **argv)
{
    char path[256] = "emu:/tmp/csd-capi-XXXXXX";
    char tmpl[] = "/tmp/csd-capi-XXXXXX";
    int tmpfd = -1;
    if (argc > 1) {
        snprintf(path, sizeof path, "%s", argv[1]);
    } else {
        tmpfd = mkstemp(tmpl);
        close(tmpfd);
        unlink(tmpl);
        /* both front ends; speaking the standard ($CSD_FRONT_END=nvme-cs), no vendor data commands */
        const char *fe = getenv("CSD_FRONT_END");
        snprintf(path, sizeof path, "emu:%s?size=16M&slm=8M&nvme-cs=1%s", tmpl,
                 fe && strcmp(fe, "nvme-cs") == 0 ? "&vendor-io=0" : "");
    }
    char version[32];
    snprintf(version, sizeof version, "%d.%d.%d", CSD_VERSION_MAJOR, CSD_VERSION_MINOR, CSD_VERSION_PATCH);
    CHECK(strcmp(csd_version(), CSD_VERSION_STRING) == 0 && strcmp(csd_version(), version) == 0,
          "csd_version is the headers' version");
    CHECK(csd_version_number() == CSD_VERSION_NUMBER, "csd_version_number");
    csd_dev *dev = NULL;
    CHECK(csd_open("/nonexistent/device", &dev) == -EINVAL && dev == NULL, "bad path is -EINVAL");
    CHECK(strstr(csd_last_error(), "expected /dev/ngXnY") != NULL, "the error says what a path looks like");
    CHECK(csd_open(path, &dev) == 0 && dev != NULL, "csd_open");
    if (!dev) {
        printf("c-api: %d passed, %d failed\n", passed, failed);
        return 1;
    }
    uint64_t slm = 0;
    uint32_t cu = 0, np = 0;
    CHECK(csd_info(dev, &slm, &cu, &np) == 0 && slm >= (1u << 20) && cu >= 1 && np == CSD_NR_DEVICE_PROGRAMS, "csd_info");
    uint32_t lba_size = 0;
    uint64_t lbas = 0;
    CHECK(csd_ns_info(dev, &lba_size, &lbas) == 0 && lba_size >= 512 && lbas * lba_size == (argc > 1 ? lbas * lba_size : 16u << 20),
          "csd_ns_info: the namespace's LBA size and count (16 MiB here)");
    CHECK(csd_ns_info(NULL, &lba_size, &lbas) == -EINVAL, "csd_ns_info of no device is -EINVAL");

    uint64_t off = 0;
    CHECK(csd_slm_alloc(dev, 4096, 4096, &off) == 0 && off % 4096 == 0, "csd_slm_alloc");
    CHECK(csd_slm_write(dev, off, "123456789", 9) == 0, "csd_slm_write of 9 bytes");
    char back[10] = {0};
    CHECK(csd_slm_read(dev, off, back, 9) == 0 && memcmp(back, "123456789", 9) == 0, "csd_slm_read");
    uint64_t sum = 0;
    csd_range r = {off, 9};
    CHECK(csd_checksum(dev, CSD_CKSUM_CRC32C, r, &sum) == 0 && sum == 0xE3069283u, "csd_checksum CRC-32C");
    uint32_t dw0 = 1, dw1 = 1;
    uint32_t algo = CSD_CKSUM_CRC32C;
    CHECK(csd_execute(dev, CSD_PROG_CHECKSUM, &r, 1, &algo, 4, &dw0, &dw1) == 0 && dw0 == 0xE3069283u && dw1 == 0,
          "csd_execute checksum");

    /* the standard front end names these in its own statuses (spec/nvme_cs.h) */
    const int standard = strcmp(csd_front_end(dev), "nvme-cs") == 0;
    const char *fe = getenv("CSD_FRONT_END");
    CHECK(strcmp(csd_front_end(dev), fe && *fe ? fe : "vendor") == 0, "csd_front_end is the one asked for");
    CHECK(csd_execute(dev, 0x77, &r, 1, NULL, 0, NULL, NULL) == -EIO, "unknown program is -EIO");
    CHECK((csd_last_status() & 0x7FF) == (standard ? NVME_CS_INVALID_PROGRAM_INDEX : CSD_STATUS_INVALID_PROGRAM),
          "csd_last_status is Invalid Program (Index)");
    CHECK(strstr(csd_last_error(), standard ? "Invalid Program Index" : "Invalid Program") != NULL,
          "csd_last_error names the status");
    csd_range oob = {slm - 4, 8};
    CHECK(csd_execute(dev, CSD_PROG_CHECKSUM, &oob, 1, &algo, 4, NULL, NULL) == -EIO &&
              (csd_last_status() & 0x7FF) ==
                  (standard ? NVME_CS_INVALID_MEMORY_RANGE_SET : CSD_STATUS_SLM_OUT_OF_BOUNDS),
          "range outside SLM is SLM Range Out of Bounds (Invalid Memory Range Set)");
    CHECK(csd_slm_free(dev, off) == 0, "csd_slm_free");
    CHECK(csd_slm_free(dev, off) == -EINVAL, "double free is -EINVAL");
    CHECK(csd_execute(NULL, 1, NULL, 0, NULL, 0, NULL, NULL) == -EINVAL, "NULL device is -EINVAL");

    /* A downloaded eBPF program: threshold.o keeps records whose i32 key > params[0]. A
     * build without clang has no threshold.o, a device without the eBPF runtime says it runs
     * none: either is reported, and the rest not tried. */
    const char *dir = getenv("CSD_BPF_DIR") ? getenv("CSD_BPF_DIR") : CSD_BPF_EXAMPLES;
    char file[512];
    static uint8_t image[65536];
    snprintf(file, sizeof file, "%s/threshold.o", dir);
    FILE *f = fopen(file, "rb");
    size_t size = f ? fread(image, 1, sizeof image, f) : 0;
    if (f) fclose(f);
    uint16_t slot = 0;
    uint32_t fault = 0;
    const int loaded = size ? csd_program_load(dev, image, (uint32_t)size, 16, &slot, &fault) : -ENOENT;
    if (size == 0) {
        printf("c-api: downloaded programs not tried: no %s (clang for the BPF target was not found)\n", file);
    } else if (loaded == -EIO && strstr(csd_last_error(), "runs no eBPF programs")) {
        printf("c-api: downloaded programs not tried: %s\n", csd_last_error());
    } else {
        int32_t recs[8 * 4] = {0};
        for (int i = 0; i < 8; i++) recs[4 * i] = 10 * i;
        uint64_t in = 0, out = 0;
        CHECK(csd_slm_alloc(dev, 4096, 4096, &in) == 0 && csd_slm_alloc(dev, 4096, 4096, &out) == 0, "SLM for records");
        CHECK(csd_slm_write(dev, in, recs, sizeof recs) == 0, "records into SLM");
        CHECK(loaded == 0 && slot >= CSD_SLOT_FIRST, "csd_program_load");
        uint64_t threshold = 35;
        csd_range rr = {in, sizeof recs}, ro = {out, sizeof recs};
        CHECK(csd_program_run(dev, slot, CSD_BPF_FILTER, rr, ro, 8, &threshold, 1, &dw0, &dw1) == 0 && dw1 == 4 &&
                  dw0 == 64,
              "csd_program_run filter keeps keys 40, 50, 60, 70");
        CHECK(csd_program_run(dev, slot, CSD_BPF_REDUCE, rr, ro, 8, &threshold, 1, &dw0, &dw1) == 0 && dw0 == 4,
              "csd_program_run reduce counts them");
        /* chase: threshold answers 0 or 1, always a next LBA, so a limit of 3 hops is reached */
        uint64_t from = 0;
        int chased = csd_program_run(dev, slot, CSD_BPF_CHASE, rr, ro, 3, &from, 1, &dw0, &dw1);
        const int vendor = strcmp(csd_front_end(dev), "vendor") == 0;
        CHECK(chased == -EIO && (csd_last_status() & 0x7FF) == (vendor ? CSD_STATUS_HOP_LIMIT_EXCEEDED
                                                                         : CSD_STATUS_INVALID_NAMESPACE),
              "csd_program_run chase that never answers done: Hop Limit Exceeded (standard, host mode: "
              "Invalid Namespace or Format, no namespace)");
        CHECK(csd_program_unload(dev, slot) == 0, "csd_program_unload");
        int rc = csd_program_unload(dev, slot);
        /* the drive: Invalid Program (No Program); through csd.ko a slot this file does not own: -EPERM */
        CHECK((rc == -EIO && (csd_last_status() & 0x7FF) == (standard ? NVME_CS_NO_PROGRAM : CSD_STATUS_INVALID_PROGRAM)) ||
                  (rc == -EPERM && strncmp(path, "/dev/csd", 8) == 0),
              "unloading it again is Invalid Program (or not this file's, through csd.ko)");
        memset(image, 0x11, 256);
        fault = 0;
        CHECK(csd_program_load(dev, image, 256, 16, &slot, &fault) == -EIO &&
                  (csd_last_status() & 0x7FF) ==
                      (standard ? NVME_CS_INVALID_PROGRAM_DATA : CSD_STATUS_INVALID_PROGRAM_IMAGE) &&
                  fault == CSD_IMAGE_FAULT_NONE,
              "a junk image is Invalid Program Image (Invalid Program Data)");
        csd_slm_free(dev, in);
        csd_slm_free(dev, out);
    }

    /* formatted over what the drive holds (in the guest: the earlier tests' store) */
    CHECK(csd_store_format_flags(dev, CSD_FORMAT_FORCE) == 0, "csd_store_format_flags(CSD_FORMAT_FORCE)");
    CHECK(csd_store_format(dev) == -EEXIST && strstr(csd_last_error(), "object store") != NULL &&
              strstr(csd_last_error(), "CSD_FORMAT_FORCE") != NULL,
          "csd_store_format over a store is -EEXIST, naming it and the flag");
    CHECK(csd_store_format_flags(dev, 2) == -EINVAL, "an unknown format flag is -EINVAL");
    const char msg[] = "hello from C";
    CHECK(csd_store_put(dev, "greeting", msg, sizeof msg) == 0, "csd_store_put");
    char got[64];
    uint64_t len = 0;
    CHECK(csd_store_get(dev, "greeting", got, 4, &len) == -ENOSPC && len == sizeof msg, "small buffer is -ENOSPC");
    CHECK(csd_store_get(dev, "greeting", got, sizeof got, &len) == 0 && len == sizeof msg && strcmp(got, msg) == 0,
          "csd_store_get");
    /* streaming: 5 MiB + 7 (past one 4 MiB chunk) through callbacks (length unknown, then
     * promised), and file descriptors; the device holds 16 MiB */
    const uint64_t big = (5u << 20) + 7;
    struct gen g = {big, 0, UINT64_MAX};
    CHECK(csd_store_put_stream(dev, "streamed", CSD_SIZE_UNKNOWN, gen_read, &g) == 0, "csd_store_put_stream of unknown length");
    struct sink k = {0, 0};
    CHECK(csd_store_get_stream(dev, "streamed", sink_write, &k, &len) == 0 && len == big && k.next == big && k.bad == 0,
          "csd_store_get_stream gives every byte in order");
    struct gen short_src = {big - 1, 0, UINT64_MAX};
    CHECK(csd_store_put_stream(dev, "streamed", big, gen_read, &short_src) == -EIO &&
              strstr(csd_last_error(), "nothing stored") != NULL,
          "a source shorter than it promised is -EIO, nothing stored");
    struct gen broken = {big, 0, (9u << 20) / 2};
    CHECK(csd_store_put_stream(dev, "streamed", CSD_SIZE_UNKNOWN, gen_read, &broken) == -EPIPE,
          "the read callback's error stops the put");
    k.next = k.bad = 0;
    CHECK(csd_store_get_stream(dev, "streamed", sink_write, &k, &len) == 0 && len == big && k.bad == 0,
          "the older version stays after failed puts");
    FILE *tmp = tmpfile();
    CHECK(tmp && csd_store_get_fd(dev, "streamed", fileno(tmp), &len) == 0 && len == big, "csd_store_get_fd into a file");
    if (tmp) {
        rewind(tmp);
        lseek(fileno(tmp), 0, SEEK_SET);
        CHECK(csd_store_remove(dev, "streamed") == 0, "room for the next");
        CHECK(csd_store_put_fd(dev, "from-fd", fileno(tmp)) == 0, "csd_store_put_fd from a file");
        k.next = k.bad = 0;
        CHECK(csd_store_get_stream(dev, "from-fd", sink_write, &k, &len) == 0 && len == big && k.bad == 0,
              "what went through the file came back");
        fclose(tmp);
    }
    CHECK(csd_store_put_stream(dev, "x", 1, NULL, NULL) == -EINVAL, "no read callback is -EINVAL");
    CHECK(csd_store_remove(dev, "greeting") == 0, "csd_store_remove");
    {
        /* programs over an object larger than the SLM they may use: streamed, as one Execute */
        enum { N = 1 << 16 };
        static float recs[N * 4];
        for (int i = 0; i < N * 4; i++) recs[i] = (float)((i * 7919) % 1000) / 1000.0f;
        CHECK(csd_store_put(dev, "recs", recs, sizeof recs) == 0, "csd_store_put of 1 MiB of records");
        int pieces = 0;
        csd_stream_opts so = {256u << 10, count_piece, &pieces};
        uint64_t sum = 0, matches = 0, bytes = 0, want = 0;
        for (int i = 0; i < N; i++) want += recs[i * 4 + 1] > 0.9f;
        CHECK(csd_store_checksum(dev, "recs", CSD_CKSUM_CRC32C, &so, &sum) == 0 && sum == csd_crc32c(recs, sizeof recs) &&
                  pieces > 1,
              "csd_store_checksum streamed in pieces, with progress");
        CHECK(csd_store_checksum(dev, "recs", CSD_CKSUM_XXH64, &so, &sum) == -EINVAL &&
                  strstr(csd_last_error(), "cannot be combined") != NULL,
              "csd_store_checksum xxh64 of an object larger than the budget is -EINVAL, saying why");
        struct csd_filter_params fp;
        memset(&fp, 0, sizeof fp);
        fp.record_size = 16, fp.field_offset = 4, fp.field_type = CSD_FT_F32, fp.op = CSD_CMP_GT;
        const double lo = 0.9;
        memcpy(fp.lo, &lo, 8);
        CHECK(csd_store_filter(dev, "recs", "hot", &fp, &so, &matches, &bytes) == 0 && matches == want && bytes == want * 16,
              "csd_store_filter streamed");
        fp.output_mode = 7;
        CHECK(csd_store_filter(dev, "recs", "hot7", &fp, &so, &matches, &bytes) == -EINVAL &&
                  strstr(csd_last_error(), "output_mode 7") != NULL && csd_store_get(dev, "hot7", NULL, 0, &len) == -ENOENT,
              "csd_store_filter with an output_mode that is neither records nor indices is -EINVAL, nothing stored");
        fp.output_mode = CSD_FILTER_RECORDS;
        CHECK(csd_store_checksum(dev, "recs", 7, &so, &sum) == -EIO && (csd_last_status() & 0x7FF) == CSD_STATUS_INVALID_PARAMETERS &&
                  strstr(csd_last_error(), "xxh64") == NULL,
              "csd_store_checksum of an unknown algorithm streamed: the drive's Invalid Parameters, not the xxh64 refusal");
        CHECK(csd_store_decompress(dev, "recs", 9, "out9", &so, &bytes) == -EINVAL &&
                  strstr(csd_last_error(), "unknown codec 9") != NULL,
              "csd_store_decompress of an unknown codec is -EINVAL naming it");
        uint64_t rows = 0, res[1];
        CHECK(csd_store_reduce(dev, "recs", CSD_RED_MAX, &so, res, 1, &rows) == -EINVAL, "csd_store_reduce of a blob is -EINVAL");
        csd_stream_opts stop = {256u << 10, stop_piece, NULL};
        CHECK(csd_store_filter(dev, "recs", "hot2", &fp, &stop, NULL, NULL) == -ECANCELED &&
                  csd_store_get(dev, "hot2", NULL, 0, &len) == -ENOENT,
              "a progress that returns non-zero cancels: -ECANCELED, nothing stored");
        (void)rows;
    }
    CHECK(csd_store_get(dev, "greeting", got, sizeof got, &len) == -ENOENT, "removed object is -ENOENT");
    CHECK(csd_store_put(dev, "kept", msg, sizeof msg) == 0, "csd_store_put");

    /* the same drive opened read-only, beside the read-write open: reads serve, writes -EROFS */
    csd_dev *ro = NULL;
    CHECK(csd_open_flags(path, 2, &ro) == -EINVAL && ro == NULL, "an unknown open flag is -EINVAL");
    CHECK(csd_open_flags(path, CSD_OPEN_READ_ONLY, &ro) == 0 && ro != NULL, "csd_open_flags(CSD_OPEN_READ_ONLY)");
    if (ro) {
        CHECK(csd_store_get(ro, "kept", got, sizeof got, &len) == 0 && len == sizeof msg && strcmp(got, msg) == 0,
              "csd_store_get on a read-only open");
        CHECK(csd_store_put(ro, "new", msg, sizeof msg) == -EROFS && strstr(csd_last_error(), "read-only") != NULL,
              "csd_store_put on a read-only open is -EROFS, naming read-only");
        CHECK(csd_store_remove(ro, "kept") == -EROFS, "csd_store_remove on a read-only open is -EROFS");
        CHECK(csd_store_format_flags(ro, CSD_FORMAT_FORCE) == -EROFS, "csd_store_format on a read-only open is -EROFS");
        uint64_t at = 0;
        CHECK(csd_slm_alloc(ro, 65536, 4096, &at) == 0 && csd_slm_load(ro, 0, 1, at) == 0,  /* one LBA of any size */
              "SLM Load on a read-only open");
        CHECK(csd_slm_store(ro, 64, 1, at) == -EROFS, "SLM Store on a read-only open is -EROFS");
        csd_close(ro);
    }
    CHECK(csd_store_get(dev, "kept", got, sizeof got, &len) == 0 && len == sizeof msg, "the object stayed");
    csd_close(dev);
    threads_share_a_device(path, argc <= 1);  /* fork: the in-process device's promise (docs/library.md) */
    if (tmpfd >= 0) unlink(tmpl);
    printf("c-api: %d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
