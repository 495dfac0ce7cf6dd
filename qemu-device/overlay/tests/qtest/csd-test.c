/*
 * QTest for the nvme CSD command set: drives the controller with no guest (a minimal
 * in-test NVMe driver over PCI BAR0), one test per opcode plus error paths, log pages,
 * csd=off, and a controller reset with Executes queued behind the compute units.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "libqtest.h"
#include "libqos/libqos-pc.h"
#include "libqos/pci.h"
#include "hw/nvme/csd_spec.h"
#include "hw/nvme/nvme_cs.h"

#define NVME_REG_CAP  0x00
#define NVME_REG_CC   0x14
#define NVME_REG_CSTS 0x1c
#define NVME_REG_AQA  0x24
#define NVME_REG_ASQ  0x28
#define NVME_REG_ACQ  0x30
#define QDEPTH        64
#define LBA           512
#define NS_BYTES      (4 * 1024 * 1024)
#define SLM_BYTES     (1 * 1024 * 1024)

typedef struct Sqe {
    uint8_t opc, flags;
    uint16_t cid;
    uint32_t nsid, cdw2, cdw3;
    uint64_t mptr, prp1, prp2;
    uint32_t cdw10, cdw11, cdw12, cdw13, cdw14, cdw15;
} Sqe;

typedef struct Cqe {
    uint32_t dw0, dw1;
    uint16_t sqhd, sqid, cid, status;
} Cqe;

typedef struct Queue {
    uint64_t sq, cq;
    uint16_t tail, head, phase;
} Queue;

typedef struct Nvme {
    QOSState *qs;
    QPCIDevice *dev;
    QPCIBar bar;
    Queue q[2];     /* admin, I/O queue 1 */
    uint16_t cid;
    uint64_t buf;   /* 64 KiB of guest memory, 4 KiB aligned, for data */
    char *disk;
    uint32_t css;   /* CC.CSS at the next enable: 0 NVM only, 6 all I/O command sets */
} Nvme;

static uint64_t galloc(Nvme *n, size_t bytes)
{
    uint64_t a = guest_alloc(&n->qs->alloc, bytes + 4096);
    return (a + 4095) & ~4095ULL;
}

/* Submits a command on queue qid without waiting. */
static uint16_t submit(Nvme *n, int qid, Sqe *cmd)
{
    Queue *q = &n->q[qid];

    cmd->cid = ++n->cid;
    qtest_memwrite(n->qs->qts, q->sq + q->tail * 64, cmd, sizeof(*cmd));
    q->tail = (q->tail + 1) % QDEPTH;
    qpci_io_writel(n->dev, n->bar, 0x1000 + 8 * qid, q->tail);
    return cmd->cid;
}

/*
 * Waits (10 s at most) for the completion at entry head of the CQ at guest address cq to
 * carry phase tag phase, moving the virtual clock on by step_ns a try when step_ns > 0.
 */
static Cqe wait_cqe(Nvme *n, uint64_t cq, uint16_t head, uint16_t phase, int64_t step_ns)
{
    gint64 deadline = g_get_monotonic_time() + 10 * G_USEC_PER_SEC;
    Cqe cqe;

    for (;;) {
        qtest_memread(n->qs->qts, cq + head * 16, &cqe, sizeof(cqe));
        if ((cqe.status & 1) == phase) {
            return cqe;
        }
        g_assert_cmpint(g_get_monotonic_time(), <, deadline);
        if (step_ns > 0) {
            qtest_clock_step(n->qs->qts, step_ns);
        }
        g_usleep(100);
    }
}

/* Waits for the next completion on queue qid (10 s at most). */
static Cqe reap(Nvme *n, int qid)
{
    Queue *q = &n->q[qid];
    Cqe cqe = wait_cqe(n, q->cq, q->head, q->phase, 0);

    q->head = (q->head + 1) % QDEPTH;
    if (q->head == 0) {
        q->phase ^= 1;
    }
    qpci_io_writel(n->dev, n->bar, 0x1000 + 8 * qid + 4, q->head);
    return cqe;
}

/* Runs one command and returns its completion; status is SCT/SC/DNR (phase removed). */
static Cqe run(Nvme *n, int qid, Sqe cmd)
{
    uint16_t cid = submit(n, qid, &cmd);
    Cqe c = reap(n, qid);

    g_assert_cmpint(c.cid, ==, cid);
    c.status >>= 1;
    return c;
}

static void enable(Nvme *n)
{
    QTestState *qts = n->qs->qts;
    gint64 deadline = g_get_monotonic_time() + 5 * G_USEC_PER_SEC;

    n->q[0].tail = n->q[0].head = 0;
    n->q[0].phase = 1;
    qtest_memset(qts, n->q[0].cq, 0, QDEPTH * 16);
    qpci_io_writel(n->dev, n->bar, NVME_REG_AQA, (QDEPTH - 1) << 16 | (QDEPTH - 1));
    qpci_io_writeq(n->dev, n->bar, NVME_REG_ASQ, n->q[0].sq);
    qpci_io_writeq(n->dev, n->bar, NVME_REG_ACQ, n->q[0].cq);
    qpci_io_writel(n->dev, n->bar, NVME_REG_CC, 1 | n->css << 4 | 6 << 16 | 4 << 20);
    while (!(qpci_io_readl(n->dev, n->bar, NVME_REG_CSTS) & 1)) {
        g_assert_cmpint(g_get_monotonic_time(), <, deadline);
        g_usleep(100);
    }
    /* I/O queue pair 1, physically contiguous, polled */
    n->q[1].tail = n->q[1].head = 0;
    n->q[1].phase = 1;
    qtest_memset(qts, n->q[1].cq, 0, QDEPTH * 16);
    g_assert_cmphex(run(n, 0, (Sqe){ .opc = 0x05, .prp1 = n->q[1].cq,
                                     .cdw10 = (QDEPTH - 1) << 16 | 1, .cdw11 = 1 }).status, ==, 0);
    g_assert_cmphex(run(n, 0, (Sqe){ .opc = 0x01, .prp1 = n->q[1].sq,
                                     .cdw10 = (QDEPTH - 1) << 16 | 1, .cdw11 = 1 << 16 | 1 }).status, ==, 0);
}

static void disable(Nvme *n)
{
    gint64 deadline = g_get_monotonic_time() + 10 * G_USEC_PER_SEC;

    qpci_io_writel(n->dev, n->bar, NVME_REG_CC, 0);
    while (qpci_io_readl(n->dev, n->bar, NVME_REG_CSTS) & 1) {
        g_assert_cmpint(g_get_monotonic_time(), <, deadline);
        g_usleep(100);
    }
}

/* Starts QEMU; drive_fmt is the -drive option with one %s for the backing file. */
static Nvme *start_with(const char *drive_fmt, const char *csd_opts)
{
    Nvme *n = g_new0(Nvme, 1);
    int fd = g_file_open_tmp("csd-test-XXXXXX", &n->disk, NULL);
    g_autofree uint8_t *pattern = g_malloc(NS_BYTES);

    for (int i = 0; i < NS_BYTES; i++) {
        pattern[i] = (uint8_t)(i * 7 + i / 4096);
    }
    g_assert_cmpint(write(fd, pattern, NS_BYTES), ==, NS_BYTES);
    close(fd);
    g_autofree char *drive = g_strdup_printf(drive_fmt, n->disk);
    n->qs = qtest_pc_boot("%s -device nvme,addr=04.0,drive=d0,serial=csdqtest%s", drive, csd_opts);
    n->dev = qpci_device_find(n->qs->pcibus, QPCI_DEVFN(4, 0));
    g_assert(n->dev);
    qpci_device_enable(n->dev);
    n->bar = qpci_iomap(n->dev, 0, NULL);
    for (int i = 0; i < 2; i++) {
        n->q[i].sq = galloc(n, QDEPTH * 64);
        n->q[i].cq = galloc(n, QDEPTH * 16);
    }
    n->buf = galloc(n, 65536);
    enable(n);
    return n;
}

static Nvme *start(const char *csd_opts)
{
    return start_with("-drive id=d0,if=none,file=%s,format=raw", csd_opts);
}

static void stop(Nvme *n)
{
    g_free(n->dev);
    qtest_shutdown(n->qs);
    unlink(n->disk);
    g_free(n->disk);
    g_free(n);
}

static Sqe slm_xfer(uint8_t opc, uint64_t prp, uint64_t off, uint32_t len)
{
    return (Sqe){ .opc = opc, .nsid = 1, .prp1 = prp, .cdw10 = (uint32_t)off,
                  .cdw11 = (uint32_t)(off >> 32), .cdw12 = len };
}

static Sqe slm_lba(uint8_t opc, uint64_t slba, uint32_t nlb, uint64_t off)
{
    return (Sqe){ .opc = opc, .nsid = 1, .cdw10 = (uint32_t)slba,
                  .cdw11 = (uint32_t)(slba >> 32), .cdw12 = nlb - 1,
                  .cdw13 = (uint32_t)off, .cdw14 = (uint32_t)(off >> 32) };
}

/* An execute descriptor of program prog in d (room for 16 + 16 * nr + plen bytes); its length. */
static uint32_t descriptor(uint8_t *d, uint16_t prog, int nr, const uint64_t *ranges,
                        const void *params, uint32_t plen)
{
    struct csd_desc_header h = { .version = 1, .program_id = prog, .nr_ranges = nr,
                                 .param_len = plen };

    memcpy(h.magic, "CSDX", 4);
    memcpy(d, &h, 16);
    memcpy(d + 16, ranges, 16 * nr);
    memcpy(d + 16 + 16 * nr, params, plen);
    return 16 + 16 * nr + plen;
}

/* Writes a descriptor to guest memory at n->buf and returns the Execute command. */
static Sqe execute(Nvme *n, uint16_t prog, int nr, const uint64_t *ranges,
                   const void *params, uint32_t plen)
{
    uint8_t d[CSD_MAX_DESC_LEN];
    uint32_t len = descriptor(d, prog, nr, ranges, params, plen);

    qtest_memwrite(n->qs->qts, n->buf, d, len);
    return (Sqe){ .opc = CSD_OPC_EXECUTE, .nsid = 1, .prp1 = n->buf, .cdw10 = len };
}

static uint16_t code(Cqe c)
{
    return c.status & 0x7ff;
}

static void test_identify_and_logs(void)
{
    Nvme *n = start(",csd=on,csd.slm-size=1M,csd.compute-units=3");
    uint8_t page[4096];
    uint32_t iocs[256];

    g_assert_cmphex(run(n, 0, (Sqe){ .opc = 0x06, .prp1 = n->buf, .cdw10 = 1 }).status, ==, 0);
    qtest_memread(n->qs->qts, n->buf, page, 4096);
    g_assert_cmpmem(page + CSD_ID_VS_OFFSET, 4, "CSD1", 4);

    /* Commands Supported and Effects, NVM command set (CSI 0) */
    g_assert_cmphex(run(n, 0, (Sqe){ .opc = 0x02, .nsid = 0xffffffff, .prp1 = n->buf,
                                     .cdw10 = 0x05 | 1023 << 16 }).status, ==, 0);
    qtest_memread(n->qs->qts, n->buf + 1024, iocs, sizeof(iocs));
    for (int opc = 0x80; opc <= 0x8f; opc++) {
        bool ours = csd_is_io_opcode(opc);

        g_assert_true(ours == ((opc <= 0x85 && opc != 0x83) || opc == 0x89 || opc == 0x8c ||
                               opc == 0x8d));
        g_assert_cmpint(iocs[opc] & 1, ==, ours);
        g_assert_cmpint(!!(iocs[opc] & 2), ==,
                        opc == CSD_OPC_SLM_STORE || opc == CSD_OPC_COMPARE_WRITE);
    }

    g_assert_cmphex(run(n, 0, (Sqe){ .opc = 0x02, .nsid = 0xffffffff, .prp1 = n->buf,
                                     .cdw10 = CSD_LOG_CAPABILITIES | 1023 << 16 }).status, ==, 0);
    qtest_memread(n->qs->qts, n->buf, page, 4096);
    struct csd_caps_log caps;
    memcpy(&caps, page, sizeof(caps));
    g_assert_cmpmem(caps.magic, 4, "CSD1", 4);
    g_assert_cmphex(caps.version, ==, CSD_LOG_VERSION);
    g_assert_cmpuint(caps.slm_size, ==, SLM_BYTES);
    g_assert_cmpuint(caps.compute_units, ==, 3);
    g_assert_cmpuint(caps.nr_programs, ==, CSD_NR_DEVICE_PROGRAMS);
    g_assert_cmpstr((char *)page + 64 + 32 * 9 + 8, ==, "decompress");
    g_assert_cmpstr((char *)page + 64 + 32 * 11 + 8, ==, "embedding_bag");

    /* NSID 1 is not allowed for the controller's log pages */
    g_assert_cmphex(code(run(n, 0, (Sqe){ .opc = 0x02, .nsid = 1, .prp1 = n->buf,
                                          .cdw10 = CSD_LOG_STATISTICS | 1023 << 16 })),
                    ==, CSD_STATUS_INVALID_FIELD);
    stop(n);
}

static void test_slm_write_read(void)
{
    Nvme *n = start(",csd=on,csd.slm-size=1M");
    uint8_t out[4096], in[4096];
    Cqe c;

    for (int i = 0; i < 4096; i++) {
        out[i] = i ^ 0x5a;
    }
    qtest_memwrite(n->qs->qts, n->buf, out, 4096);
    g_assert_cmphex(run(n, 1, slm_xfer(CSD_OPC_SLM_WRITE, n->buf, 8192, 4096)).status, ==, 0);
    qtest_memset(n->qs->qts, n->buf, 0, 4096);
    g_assert_cmphex(run(n, 1, slm_xfer(CSD_OPC_SLM_READ, n->buf, 8192, 4096)).status, ==, 0);
    qtest_memread(n->qs->qts, n->buf, in, 4096);
    g_assert_cmpmem(in, 4096, out, 4096);

    c = run(n, 1, slm_xfer(CSD_OPC_SLM_WRITE, n->buf, SLM_BYTES - 8, 16));
    g_assert_cmphex(c.status, ==, CSD_STATUS_SLM_OUT_OF_BOUNDS | CSD_STATUS_DNR);
    c = run(n, 1, slm_xfer(CSD_OPC_SLM_READ, n->buf, UINT64_MAX - 3, 8));
    g_assert_cmphex(c.status, ==, CSD_STATUS_SLM_OUT_OF_BOUNDS | CSD_STATUS_DNR);
    c = run(n, 1, slm_xfer(CSD_OPC_SLM_WRITE, n->buf, 2, 4));
    g_assert_cmphex(c.status, ==, CSD_STATUS_INVALID_FIELD | CSD_STATUS_DNR);
    c = run(n, 1, slm_xfer(CSD_OPC_SLM_READ, n->buf, 0, 0));
    g_assert_cmphex(c.status, ==, CSD_STATUS_INVALID_FIELD | CSD_STATUS_DNR);
    c = run(n, 1, slm_xfer(CSD_OPC_SLM_READ, n->buf, 0, 2 * 1024 * 1024)); /* > MDTS */
    g_assert_cmphex(c.status, ==, CSD_STATUS_INVALID_FIELD | CSD_STATUS_DNR);
    /* data at the controller's own registers: hw/nvme refuses the DMA (no DNR) */
    c = run(n, 1, slm_xfer(CSD_OPC_SLM_WRITE, n->bar.addr, 0, 4096));
    g_assert_cmphex(c.status, ==, CSD_STATUS_DATA_TRANSFER_ERROR);
    c = run(n, 1, slm_xfer(CSD_OPC_SLM_READ, n->bar.addr, 0, 4096));
    g_assert_cmphex(c.status, ==, CSD_STATUS_DATA_TRANSFER_ERROR);
    stop(n);
}

static void test_slm_load_store(void)
{
    Nvme *n = start(",csd=on,csd.slm-size=1M");
    uint8_t got[8 * LBA], want[8 * LBA];
    g_autofree gchar *file = NULL;
    gsize flen;

    for (int i = 0; i < 8 * LBA; i++) {
        int b = 3 * LBA + i;
        want[i] = (uint8_t)(b * 7 + b / 4096);
    }
    g_assert_cmphex(run(n, 1, slm_lba(CSD_OPC_SLM_LOAD, 3, 8, 4096)).status, ==, 0);
    g_assert_cmphex(run(n, 1, slm_xfer(CSD_OPC_SLM_READ, n->buf, 4096, 8 * LBA)).status, ==, 0);
    qtest_memread(n->qs->qts, n->buf, got, sizeof(got));
    g_assert_cmpmem(got, sizeof(got), want, sizeof(want));

    g_assert_cmphex(run(n, 1, slm_lba(CSD_OPC_SLM_STORE, 1000, 8, 4096)).status, ==, 0);
    g_assert_cmphex(run(n, 1, (Sqe){ .opc = 0x00, .nsid = 1 }).status, ==, 0); /* Flush */
    g_assert(g_file_get_contents(n->disk, &file, &flen, NULL));
    g_assert_cmpuint(flen, ==, NS_BYTES);
    g_assert_cmpmem(file + 1000 * LBA, 8 * LBA, want, sizeof(want));
    /* the LBAs around it are untouched */
    g_assert_cmpint((uint8_t)file[1000 * LBA - 1], ==, (uint8_t)((1000 * LBA - 1) * 7 + (1000 * LBA - 1) / 4096));
    g_assert_cmpint((uint8_t)file[1008 * LBA], ==, (uint8_t)(1008 * LBA * 7 + 1008 * LBA / 4096));

    g_assert_cmphex(run(n, 1, slm_lba(CSD_OPC_SLM_LOAD, NS_BYTES / LBA - 1, 2, 0)).status,
                    ==, 0x0080 | CSD_STATUS_DNR);
    g_assert_cmphex(run(n, 1, slm_lba(CSD_OPC_SLM_STORE, UINT64_MAX, 1, 0)).status,
                    ==, 0x0080 | CSD_STATUS_DNR);
    g_assert_cmphex(run(n, 1, slm_lba(CSD_OPC_SLM_LOAD, 0, 8, SLM_BYTES - LBA)).status,
                    ==, CSD_STATUS_SLM_OUT_OF_BOUNDS | CSD_STATUS_DNR);
    stop(n);
}

static void test_execute(void)
{
    Nvme *n = start(",csd=on,csd.slm-size=1M");
    uint64_t r1[2] = { 65536, 9 };
    uint32_t crc = CSD_CKSUM_CRC32C;
    Cqe c;

    qtest_memwrite(n->qs->qts, n->buf + 8192, "123456789\0\0\0", 12);
    g_assert_cmphex(run(n, 1, slm_xfer(CSD_OPC_SLM_WRITE, n->buf + 8192, 65536, 12)).status, ==, 0);
    c = run(n, 1, execute(n, CSD_PROG_CHECKSUM, 1, r1, &crc, 4));
    g_assert_cmphex(c.status, ==, 0);
    g_assert_cmphex(c.dw0, ==, 0xE3069283);
    g_assert_cmphex(c.dw1, ==, 0);

    uint64_t cp[4] = { 65536, 12, 131072, 8 };
    c = run(n, 1, execute(n, CSD_PROG_COPY, 2, cp, NULL, 0));
    g_assert_cmphex(c.status, ==, CSD_STATUS_OUTPUT_OVERFLOW | CSD_STATUS_DNR);
    c = run(n, 1, execute(n, 0x55, 2, cp, NULL, 0));
    g_assert_cmphex(c.status, ==, CSD_STATUS_INVALID_PROGRAM | CSD_STATUS_DNR);
    uint64_t oob[4] = { SLM_BYTES - 4, 8, 0, 8 };
    c = run(n, 1, execute(n, CSD_PROG_COPY, 2, oob, NULL, 0));
    g_assert_cmphex(c.status, ==, CSD_STATUS_SLM_OUT_OF_BOUNDS | CSD_STATUS_DNR);
    c = run(n, 1, execute(n, CSD_PROG_CHECKSUM, 1, r1, &crc, 2));
    g_assert_cmphex(c.status, ==, CSD_STATUS_INVALID_PARAMETERS | CSD_STATUS_DNR);
    uint32_t zstd = CSD_DECOMP_ZSTD;
    uint64_t dz[4] = { 65536, 12, 131072, 4096 };
    c = run(n, 1, execute(n, CSD_PROG_DECOMPRESS, 2, dz, &zstd, 4));
    g_assert_cmphex(c.status, ==, CSD_STATUS_PROGRAM_FAULT | CSD_STATUS_DNR);

    Sqe bad = execute(n, CSD_PROG_COPY, 2, cp, NULL, 0);
    bad.cdw10 += 4;                 /* disagrees with the descriptor */
    g_assert_cmphex(run(n, 1, bad).status, ==, CSD_STATUS_INVALID_DESCRIPTOR | CSD_STATUS_DNR);
    bad.cdw10 = 0;
    g_assert_cmphex(run(n, 1, bad).status, ==, CSD_STATUS_INVALID_FIELD | CSD_STATUS_DNR);
    bad.cdw10 = CSD_MAX_DESC_LEN + 4;
    g_assert_cmphex(run(n, 1, bad).status, ==, CSD_STATUS_INVALID_FIELD | CSD_STATUS_DNR);
    qtest_memwrite(n->qs->qts, n->buf, "XSDC", 4);
    bad.cdw10 = 48;
    g_assert_cmphex(run(n, 1, bad).status, ==, CSD_STATUS_INVALID_DESCRIPTOR | CSD_STATUS_DNR);
    stop(n);
}

/* Program Load of an image at guest address buf: chunks of `chunk` bytes into slot. */
static Cqe program_load(Nvme *n, const uint8_t *img, uint32_t size, uint16_t slot,
                        uint32_t chunk, uint32_t record_size)
{
    Cqe c = { 0 };

    for (uint32_t off = 0; off < size; off += chunk) {
        uint32_t len = MIN(chunk, size - off);

        qtest_memwrite(n->qs->qts, n->buf, img + off, len);
        c = run(n, 1, (Sqe){ .opc = CSD_OPC_PROGRAM_LOAD, .nsid = 1, .prp1 = n->buf,
                             .cdw10 = csd_program_load_cdw10(slot, CSD_PROGRAM_TYPE_EBPF),
                             .cdw11 = size, .cdw12 = off, .cdw13 = len,
                             .cdw14 = record_size });
        if (c.status) {
            break;
        }
        slot = c.dw0;
    }
    return c;
}

static Sqe program_unload(uint16_t slot)
{
    return (Sqe){ .opc = CSD_OPC_PROGRAM_UNLOAD, .nsid = 1, .cdw10 = slot };
}

/* Reads the statistics log page (C1h, two pages of n->buf) into stats. */
static void read_stats(Nvme *n, uint8_t stats[CSD_LOG_STATS_SIZE])
{
    g_assert_cmphex(run(n, 0, (Sqe){ .opc = 0x02, .nsid = 0xffffffff, .prp1 = n->buf,
                                     .prp2 = n->buf + 4096,
                                     .cdw10 = CSD_LOG_STATISTICS |
                                              (CSD_LOG_STATS_SIZE / 4 - 1) << 16 }).status,
                    ==, 0);
    qtest_memread(n->qs->qts, n->buf, stats, CSD_LOG_STATS_SIZE);
}

/* How many times a program ran since power-on (C1h counts a cancelled run too). */
static uint64_t program_runs(Nvme *n, uint16_t program)
{
    uint8_t stats[CSD_LOG_STATS_SIZE];
    uint64_t runs;

    read_stats(n, stats);
    memcpy(&runs, stats + CSD_STATS_PER_PROGRAM_OFFSET + 8 * program, 8);
    return runs;
}

/* Downloadable programs (spec 8): load in chunks, list, run, unload, refuse. */
static void test_program_load(void)
{
    const char *dir = g_getenv("CSD_BPF_DIR");
    g_autofree char *path = g_strdup_printf("%s/threshold.o", dir ? dir : ".");
    g_autofree gchar *img = NULL;
    gsize size;
    Nvme *n;
    Cqe c;

    if (!g_file_get_contents(path, &img, &size, NULL)) {
        g_test_skip("no eBPF example objects (CSD_BPF_DIR)");
        return;
    }
    n = start(",csd=on,csd.slm-size=1M");
    c = program_load(n, (uint8_t *)img, size, 0, 256, 16);
    g_assert_cmphex(c.status, ==, 0);
    g_assert_cmphex(c.dw0, ==, CSD_SLOT_FIRST);

    uint8_t page[4096];
    g_assert_cmphex(run(n, 0, (Sqe){ .opc = 0x02, .nsid = 0xffffffff, .prp1 = n->buf,
                                     .cdw10 = CSD_LOG_CAPABILITIES | 1023 << 16 }).status, ==, 0);
    qtest_memread(n->qs->qts, n->buf, page, 4096);
    struct csd_caps_log caps;
    memcpy(&caps, page, sizeof(caps));
    g_assert_cmpuint(caps.nr_programs, ==, CSD_NR_DEVICE_PROGRAMS + 1);
    g_assert_cmpuint(caps.program_types, ==, 1u << CSD_PROGRAM_TYPE_EBPF);
    g_assert_cmphex(caps.features, ==, CSD_FEATURE_COMPARE_WRITE | CSD_FEATURE_LBA_WINDOW);
    g_assert_cmpuint(page[64 + 32 * CSD_NR_DEVICE_PROGRAMS + 2], ==, CSD_PROGRAM_DOWNLOADED);
    g_assert_cmpstr((char *)page + 64 + 32 * CSD_NR_DEVICE_PROGRAMS + 8, ==, "threshold");

    /* programs survive a controller reset */
    disable(n);
    enable(n);

    /* 64 records {i32 key = i - 32; ...}: keep key > 20 */
    int32_t recs[64 * 4] = { 0 };
    for (int i = 0; i < 64; i++) {
        recs[4 * i] = i - 32;
    }
    qtest_memwrite(n->qs->qts, n->buf + 8192, recs, sizeof(recs));
    g_assert_cmphex(run(n, 1, slm_xfer(CSD_OPC_SLM_WRITE, n->buf + 8192, 0,
                                       sizeof(recs))).status, ==, 0);
    uint64_t r[4] = { 0, sizeof(recs), 65536, sizeof(recs) };
    uint32_t p[4 + 2] = { 64, CSD_BPF_FILTER, 1, 0, 20, 0 };
    c = run(n, 1, execute(n, CSD_SLOT_FIRST, 2, r, p, sizeof(p)));
    g_assert_cmphex(c.status, ==, 0);
    g_assert_cmpuint(c.dw1, ==, 11);          /* keys 21..31 */
    g_assert_cmpuint(c.dw0, ==, 11 * 16);

    g_assert_cmphex(run(n, 1, program_unload(CSD_SLOT_FIRST)).status, ==, 0);
    g_assert_cmphex(run(n, 1, program_unload(CSD_SLOT_FIRST)).status, ==,
                    CSD_STATUS_INVALID_PROGRAM | CSD_STATUS_DNR);
    c = run(n, 1, execute(n, CSD_SLOT_FIRST, 2, r, p, sizeof(p)));
    g_assert_cmphex(c.status, ==, CSD_STATUS_INVALID_PROGRAM | CSD_STATUS_DNR);

    /* A rejected image: Invalid Program Image, DW0 = FFFFFFFFh for a malformed ELF */
    memset(img, 0x5a, 64);
    c = program_load(n, (uint8_t *)img, size, 0x1ff, 4096, 16);
    g_assert_cmphex(c.status, ==, CSD_STATUS_INVALID_PROGRAM_IMAGE | CSD_STATUS_DNR);
    g_assert_cmphex(c.dw0, ==, CSD_IMAGE_FAULT_NONE);
    g_assert_cmphex(run(n, 1, program_unload(0x1ff)).status, ==,
                    CSD_STATUS_INVALID_PROGRAM | CSD_STATUS_DNR);
    /* Field checks: record size 0, image past max_program_bytes */
    c = run(n, 1, (Sqe){ .opc = CSD_OPC_PROGRAM_LOAD, .nsid = 1, .prp1 = n->buf,
                         .cdw10 = csd_program_load_cdw10(0, CSD_PROGRAM_TYPE_EBPF),
                         .cdw11 = 64, .cdw13 = 64, .cdw14 = 0 });
    g_assert_cmphex(c.status, ==, CSD_STATUS_INVALID_FIELD | CSD_STATUS_DNR);
    c = run(n, 1, (Sqe){ .opc = CSD_OPC_PROGRAM_LOAD, .nsid = 1, .prp1 = n->buf,
                         .cdw10 = csd_program_load_cdw10(0, CSD_PROGRAM_TYPE_EBPF),
                         .cdw11 = CSD_MAX_PROGRAM_BYTES + 1, .cdw13 = 64, .cdw14 = 16 });
    g_assert_cmphex(c.status, ==, CSD_STATUS_INVALID_FIELD | CSD_STATUS_DNR);

    /* C1h grew to 4352 bytes: the load, unload and reject counters and slot 0100h */
    uint8_t stats[CSD_LOG_STATS_SIZE];
    read_stats(n, stats);
    uint64_t v[CSD_STAT_COUNT];
    memcpy(v, stats + 8, sizeof(v));
    g_assert_cmpuint(v[CSD_STAT_PROGRAM_LOAD_CMDS], ==, (size + 255) / 256 + 1 + 2);
    g_assert_cmpuint(v[CSD_STAT_PROGRAM_UNLOAD_CMDS], ==, 3);
    g_assert_cmpuint(v[CSD_STAT_PROGRAM_LOAD_REJECTS], ==, 1);
    for (int i = CSD_STAT_MODEL_LINK_IN_BUSY_NS; i <= CSD_STAT_MODEL_OVERRUNS; i++) {
        g_assert_cmpuint(v[i], ==, 0);   /* no timing model unless asked */
    }
    uint64_t runs;
    memcpy(&runs, stats + 256 + 8 * CSD_SLOT_FIRST, 8);
    g_assert_cmpuint(runs, ==, 1);
    stop(n);
}

/*
 * A 2048^3 gemm over the first 48 MiB of a 64 MiB SLM (its descriptor at n->buf): seconds
 * on a compute unit, so that it is still running when a test deletes a queue or resets.
 */
static Sqe long_gemm(Nvme *n)
{
    struct csd_gemm_params g = { 2048, 2048, 2048, 0, 1.0f, 0.0f };
    uint64_t r[6] = { 0, 16 << 20, 16 << 20, 16 << 20, 32 << 20, 16 << 20 };

    return execute(n, CSD_PROG_GEMM, 3, r, &g, sizeof(g));
}

/*
 * Deleting a submission queue with a long gemm running and six queued behind the only
 * compute unit: the running program stops at its next cancellation check, the queued ones
 * never start, and all seven completions arrive on the completion queue as aborts.
 */
static void test_delete_sq_with_executes(void)
{
    Nvme *n = start(",csd=on,csd.slm-size=64M,csd.compute-units=1");
    uint32_t crc = CSD_CKSUM_CRC32C;
    Sqe cmd = long_gemm(n);
    gint64 t0, took;
    int aborted = 0, done = 0;

    for (int i = 0; i < 7; i++) {
        submit(n, 1, &cmd);
    }
    g_usleep(50 * 1000);    /* the first is running, six are queued */
    t0 = g_get_monotonic_time();
    g_assert_cmphex(run(n, 0, (Sqe){ .opc = 0x00, .cdw10 = 1 }).status, ==, 0);  /* Delete SQ 1 */
    took = g_get_monotonic_time() - t0;
    for (int i = 0; i < 7; i++) {
        Cqe c = reap(n, 1);
        uint16_t sc = (c.status >> 1) & 0x7ff;

        aborted += sc == 0x007 || sc == 0x008;  /* Abort Requested / Aborted due to SQ Deletion */
        done += sc == 0;                         /* finished before the deletion */
    }
    g_test_message("Delete I/O SQ with a 2048^3 gemm running and 6 queued: %" PRId64 " us",
                   (int64_t)took);
    fprintf(stderr, "# delete-sq-with-executes: %" PRId64 " us\n", (int64_t)took);
    g_assert_cmpint(aborted + done, ==, 7);
    g_assert_cmpint(aborted, >=, 5);
    g_assert_cmpint(took, <, 1000 * 1000);
    /*
     * Only the gemms that finished and the one running at the deletion ever ran (C1h counts
     * every program run, a cancelled one too): the queued ones never started.
     */
    g_assert_cmpuint(program_runs(n, CSD_PROG_GEMM), ==, done + 1);
    /* the queue again, and the device still works */
    g_assert_cmphex(run(n, 0, (Sqe){ .opc = 0x01, .prp1 = n->q[1].sq,
                                     .cdw10 = (QDEPTH - 1) << 16 | 1, .cdw11 = 1 << 16 | 1 }).status, ==, 0);
    n->q[1].tail = 0;
    uint64_t r1[2] = { 0, 4096 };
    g_assert_cmphex(run(n, 1, execute(n, CSD_PROG_CHECKSUM, 1, r1, &crc, 4)).status, ==, 0);
    stop(n);
}

/* Many Executes behind one compute unit, then the controller is disabled and enabled. */
static void test_reset_with_queued_executes(void)
{
    Nvme *n = start(",csd=on,csd.slm-size=64M,csd.compute-units=1");
    struct csd_gemm_params g = { 1024, 1024, 1024, 0, 1.0f, 0.0f };
    uint32_t crc = CSD_CKSUM_CRC32C;

    for (int round = 0; round < 2; round++) {
        for (int i = 0; i < 8; i++) {
            uint64_t r[6] = { 0, 4 << 20, 4 << 20, 4 << 20, (uint64_t)(8 + 4 * i) << 20, 4 << 20 };
            Sqe cmd = execute(n, CSD_PROG_GEMM, 3, r, &g, sizeof(g));

            uint8_t d[256];

            /* each command keeps its own descriptor page */
            qtest_memread(n->qs->qts, n->buf, d, cmd.cdw10);
            qtest_memwrite(n->qs->qts, n->buf + 4096 * (i + 1), d, cmd.cdw10);
            cmd.prp1 = n->buf + 4096 * (i + 1);
            submit(n, 1, &cmd);
        }
        disable(n);     /* reset: cancels the queued ones, waits for the running one */
        enable(n);
    }
    uint64_t r1[2] = { 0, 4096 };
    g_assert_cmphex(run(n, 1, execute(n, CSD_PROG_CHECKSUM, 1, r1, &crc, 4)).status, ==, 0);
    stop(n);
}

/*
 * A reset fetches no more commands (patch 0011). SQ 1 has two entries: a long gemm runs, a
 * second one waits for the compute unit, and an NVM Write waits in the queue for a free
 * request. The reset cancels the gemms; their requests come back while it waits, and
 * stock hw/nvme then fetched the Write and carried it out during the reset (with a shadow
 * doorbell a guest keeps ahead, command after command without end: found by generic-fuzz).
 */
static void test_reset_fetches_no_more_commands(void)
{
    Nvme *n = start(",csd=on,csd.slm-size=64M,csd.compute-units=1");
    QTestState *qts = n->qs->qts;
    uint8_t data[LBA];
    Sqe cmd[3];
    g_autofree gchar *file = NULL;
    gsize flen;

    g_assert_cmphex(run(n, 0, (Sqe){ .opc = 0x00, .cdw10 = 1 }).status, ==, 0);
    g_assert_cmphex(run(n, 0, (Sqe){ .opc = 0x01, .prp1 = n->q[1].sq,
                                     .cdw10 = 1 << 16 | 1, .cdw11 = 1 << 16 | 1 }).status, ==, 0);
    memset(data, 0xEE, sizeof(data));
    qtest_memwrite(qts, n->buf + 8192, data, sizeof(data));
    cmd[0] = long_gemm(n);
    cmd[1] = cmd[0];
    cmd[2] = (Sqe){ .opc = 0x01, .nsid = 1, .prp1 = n->buf + 8192, .cdw10 = 100 };
    for (int i = 0; i < 3; i++) {
        cmd[i].cid = ++n->cid;
        qtest_memwrite(qts, n->q[1].sq + (i % 2) * 64, &cmd[i], sizeof(cmd[i]));
        qpci_io_writel(n->dev, n->bar, 0x1000 + 8, (i + 1) % 2);
        g_usleep(20 * 1000);    /* fetched (the first two) before its slot is reused */
    }
    disable(n);
    g_assert(g_file_get_contents(n->disk, &file, &flen, NULL));
    for (int i = 0; i < LBA; i++) {
        int b = 100 * LBA + i;

        g_assert_cmpint((uint8_t)file[b], ==, (uint8_t)(b * 7 + b / 4096));  /* not 0xEE */
    }
    enable(n);
    uint32_t crc = CSD_CKSUM_CRC32C;
    uint64_t r1[2] = { 0, 4096 };
    g_assert_cmphex(run(n, 1, execute(n, CSD_PROG_CHECKSUM, 1, r1, &crc, 4)).status, ==, 0);
    stop(n);
}

/*
 * A reset waits for the piece of a transfer in flight, not for the transfer: a Write whose
 * data is not RAM (unassigned memory at 1 TiB, where a guest's PRPs may point) is bounced
 * through QEMU's 4 KiB bounce buffer, one block request a piece. A cancelled transfer went
 * on to its last piece, so over a drive that takes 5 ms a request a reset during a 512 KiB
 * Write waited for about 128 pieces (0.6 s). It stops after the piece in flight now.
 */
static void test_reset_stops_a_bounced_transfer(void)
{
    Nvme *n = start_with("-drive id=d0,if=none,format=raw,file=null-co://,file.size=4M,"
                         "file.latency-ns=5000000", ",csd=on");
    const uint64_t far = 1ULL << 40;
    uint64_t list = galloc(n, 4096), prp[127];
    gint64 t0, waited;

    for (int i = 0; i < 127; i++) {
        prp[i] = far + 4096 * (i + 1);
    }
    qtest_memwrite(n->qs->qts, list, prp, sizeof(prp));
    submit(n, 1, &(Sqe){ .opc = 0x01, .nsid = 1, .prp1 = far, .prp2 = list, .cdw12 = 1023 });
    g_usleep(30 * 1000);    /* a few pieces in */
    t0 = g_get_monotonic_time();
    disable(n);
    waited = g_get_monotonic_time() - t0;
    g_test_message("reset during a bounced 512 KiB Write: %" PRId64 " us", waited);
    g_assert_cmpint(waited, <, 200 * 1000);
    enable(n);
    g_assert_cmphex(run(n, 1, (Sqe){ .opc = 0x02, .nsid = 1, .prp1 = n->buf, .cdw12 = 7 }).status, ==, 0);
    stop(n);
}

/*
 * A reset starts no Execute that waits for a compute unit: a gemm runs from SQ 1 and
 * another waits from SQ 2. Cancelling SQ 1's gemm frees the unit while the reset has yet
 * to reach SQ 2, and the second gemm was started then, only to be cancelled in turn (C1h
 * counted two gemm runs). A queue being reset or deleted starts nothing now.
 */
static void test_reset_starts_no_queued_execute(void)
{
    Nvme *n = start(",csd=on,csd.slm-size=64M,csd.compute-units=1");
    uint64_t sq2 = galloc(n, QDEPTH * 64);
    Sqe a = long_gemm(n), b = a;

    g_assert_cmphex(run(n, 0, (Sqe){ .opc = 0x01, .prp1 = sq2, .cdw10 = (QDEPTH - 1) << 16 | 2,
                                     .cdw11 = 1 << 16 | 1 }).status, ==, 0);
    submit(n, 1, &a);
    g_usleep(50 * 1000);    /* running */
    b.cid = ++n->cid;
    qtest_memwrite(n->qs->qts, sq2, &b, sizeof(b));
    qpci_io_writel(n->dev, n->bar, 0x1000 + 8 * 2, 1);
    g_usleep(20 * 1000);    /* fetched, waiting for the compute unit */
    disable(n);
    enable(n);
    g_assert_cmpuint(program_runs(n, CSD_PROG_GEMM), ==, 1);
    stop(n);
}

/* The backing store fails (blkdebug injects EIO): Internal Error, nothing else breaks. */
/* Compare and Write (8Dh): a match writes, a mismatch does not, one at a time. */
static Sqe compare_write(Nvme *n, uint64_t slba, uint32_t nlb)
{
    return (Sqe){ .opc = CSD_OPC_COMPARE_WRITE, .nsid = 1, .prp1 = n->buf,
                  .prp2 = n->buf + 4096, .cdw10 = (uint32_t)slba,
                  .cdw11 = (uint32_t)(slba >> 32), .cdw12 = nlb - 1 };
}

static void test_compare_write(void)
{
    Nvme *n = start(",csd=on,csd.slm-size=1M");
    uint8_t data[16 * LBA], newer[8 * LBA];
    g_autofree gchar *file = NULL;
    gsize flen;
    Sqe two[2];
    uint16_t st[2];

    for (int i = 0; i < 8 * LBA; i++) {
        int b = 2000 * LBA + i;
        data[i] = (uint8_t)(b * 7 + b / 4096);   /* what the namespace holds */
        data[8 * LBA + i] = 0xA5;                /* what replaces it */
        newer[i] = 0x5A;
    }
    qtest_memwrite(n->qs->qts, n->buf, data, sizeof(data));
    g_assert_cmphex(run(n, 1, compare_write(n, 2000, 8)).status, ==, 0);
    /* again with the same (now stale) expected bytes: Compare Failure, nothing written */
    memcpy(data + 8 * LBA, newer, sizeof(newer));
    qtest_memwrite(n->qs->qts, n->buf, data, sizeof(data));
    g_assert_cmphex(run(n, 1, compare_write(n, 2000, 8)).status, ==,
                    CSD_STATUS_COMPARE_FAILURE | CSD_STATUS_DNR);
    g_assert_cmphex(run(n, 1, (Sqe){ .opc = 0x00, .nsid = 1 }).status, ==, 0);
    g_assert(g_file_get_contents(n->disk, &file, &flen, NULL));
    for (int i = 0; i < 8 * LBA; i++) {
        g_assert_cmpint((uint8_t)file[2000 * LBA + i], ==, 0xA5);
    }

    /* two in one doorbell: the second waits for the first, then compares what it wrote */
    memset(data, 0xA5, 8 * LBA);
    qtest_memwrite(n->qs->qts, n->buf, data, sizeof(data));
    for (int i = 0; i < 2; i++) {
        Queue *q = &n->q[1];

        two[i] = compare_write(n, 2000, 8);
        two[i].cid = ++n->cid;
        qtest_memwrite(n->qs->qts, q->sq + q->tail * 64, &two[i], sizeof(two[i]));
        q->tail = (q->tail + 1) % QDEPTH;
    }
    qpci_io_writel(n->dev, n->bar, 0x1000 + 8, n->q[1].tail);
    for (int i = 0; i < 2; i++) {
        Cqe c = reap(n, 1);

        st[c.cid == two[0].cid ? 0 : 1] = c.status >> 1;
    }
    g_assert_cmphex(st[0], ==, 0);
    g_assert_cmphex(st[1], ==, CSD_STATUS_COMPARE_FAILURE | CSD_STATUS_DNR);

    /* bad ranges: past the namespace, over 64 KiB compared */
    g_assert_cmphex(run(n, 1, compare_write(n, NS_BYTES / LBA - 4, 8)).status, ==,
                    CSD_STATUS_LBA_OUT_OF_RANGE | CSD_STATUS_DNR);
    g_assert_cmphex(run(n, 1, compare_write(n, 0, CSD_CAW_MAX_BYTES / LBA + 1)).status, ==,
                    CSD_STATUS_INVALID_FIELD | CSD_STATUS_DNR);
    stop(n);
}

/* A blkdebug configuration file holding rules (the caller unlinks and frees its path). */
static char *blkdebug_conf(const char *rules)
{
    char *conf = NULL;
    int fd = g_file_open_tmp("csd-blkdebug-XXXXXX", &conf, NULL);

    g_assert_cmpint(write(fd, rules, strlen(rules)), ==, (ssize_t)strlen(rules));
    close(fd);
    return conf;
}

static void test_backing_store_failure(void)
{
    g_autofree char *conf = blkdebug_conf(
        "[inject-error]\nevent = \"read_aio\"\nerrno = \"5\"\nsector = \"64\"\n"
        "[inject-error]\nevent = \"write_aio\"\nerrno = \"5\"\nsector = \"128\"\n");
    g_autofree char *drive = g_strdup_printf("-drive id=d0,if=none,driver=raw,file.driver=blkdebug,"
                                             "file.config=%s,file.image.filename=%%s", conf);
    Nvme *n = start_with(drive, ",csd=on,csd.slm-size=1M");

    g_assert_cmphex(run(n, 1, slm_lba(CSD_OPC_SLM_LOAD, 64, 8, 0)).status & 0x7ff, ==, CSD_STATUS_INTERNAL_ERROR);
    g_assert_cmphex(run(n, 1, slm_lba(CSD_OPC_SLM_STORE, 128, 8, 0)).status & 0x7ff, ==, CSD_STATUS_INTERNAL_ERROR);
    g_assert_cmphex(run(n, 1, slm_lba(CSD_OPC_SLM_LOAD, 0, 8, 0)).status, ==, 0);   /* elsewhere: fine */
    stop(n);
    unlink(conf);
}

/*
 * An SLM Load or Store of several 4 MiB pieces (csd-ns-io.c.inc) whose backing store fails
 * in one piece only (blkdebug, in the second of four and in the last): the command ends once,
 * with Internal Error, after every piece has ended; the same range's pieces that do not fail,
 * and the whole drive after a reset with every piece of a Load in flight, work.
 */
static void test_slm_pieces_failure_and_reset(void)
{
    g_autofree char *conf = blkdebug_conf(
        "[inject-error]\nevent = \"read_aio\"\nerrno = \"5\"\nsector = \"8200\"\n"
        "[inject-error]\nevent = \"write_aio\"\nerrno = \"28\"\nsector = \"32760\"\n");
    g_autofree char *drive = g_strdup_printf("-drive id=d0,if=none,driver=raw,file.driver=blkdebug,"
                                             "file.config=%s,file.image.driver=null-co,"
                                             "file.image.size=16M,file.image.read-zeroes=on", conf);
    Nvme *n = start_with(drive, ",csd=on,csd.slm-size=16M");
    const uint32_t all = 16 * 1024 * 1024 / LBA;

    for (int i = 0; i < 3; i++) {
        g_assert_cmphex(run(n, 1, slm_lba(CSD_OPC_SLM_LOAD, 0, all, 0)).status & 0x7ff, ==,
                        CSD_STATUS_INTERNAL_ERROR);
        g_assert_cmphex(run(n, 1, slm_lba(CSD_OPC_SLM_STORE, 0, all, 0)).status & 0x7ff, ==,
                        CSD_STATUS_INTERNAL_ERROR);
    }
    g_assert_cmphex(run(n, 1, slm_lba(CSD_OPC_SLM_LOAD, 16384, 16384, 0)).status, ==, 0);
    g_assert_cmphex(run(n, 1, slm_lba(CSD_OPC_SLM_STORE, 0, 16384, 0)).status, ==, 0);
    stop(n);
    unlink(conf);

    /* every piece in flight (each takes 200 ms) when the controller is reset, twice */
    n = start_with("-drive id=d0,if=none,format=raw,file=null-co://,file.size=64M,"
                   "file.latency-ns=200000000", ",csd=on,csd.slm-size=64M");
    for (int round = 0; round < 2; round++) {
        submit(n, 1, &(Sqe){ .opc = CSD_OPC_SLM_LOAD, .nsid = 1, .cdw12 = 4 * all - 1 });
        submit(n, 1, &(Sqe){ .opc = CSD_OPC_SLM_STORE, .nsid = 1, .cdw12 = 2 * all - 1,
                             .cdw13 = 32 << 20 });
        g_usleep(50 * 1000);
        disable(n);
        enable(n);
    }
    g_assert_cmphex(run(n, 1, slm_lba(CSD_OPC_SLM_LOAD, 0, all, 0)).status, ==, 0);
    stop(n);
}

/* ---------------------------------------------------------- timing model */

/* The virtual clock, moved on by 1 ns (qtest's clock_step must move it). */
static int64_t vclock(QTestState *qts)
{
    return qtest_clock_step(qts, 1);
}

/* Whether queue qid has a completion waiting (without consuming it). */
static bool cqe_ready(Nvme *n, int qid)
{
    Queue *q = &n->q[qid];
    Cqe cqe;

    qtest_memread(n->qs->qts, q->cq + q->head * 16, &cqe, sizeof(cqe));
    return (cqe.status & 1) == q->phase;
}

/*
 * The command cid, which arrived at virtual time t0, completes exactly at t0 + dt: its
 * real work is long done (the virtual clock only moves with clock_step under qtest), its
 * completion is not there 1 ns before, and it is there at t0 + dt.
 */
static void expect_done_at(Nvme *n, uint16_t cid, int64_t t0, int64_t dt)
{
    QTestState *qts = n->qs->qts;
    int64_t now;
    Cqe c;

    g_usleep(200 * 1000);
    now = vclock(qts);
    g_assert_cmpint(now, <, t0 + dt - 1);
    qtest_clock_step(qts, t0 + dt - 1 - now);
    g_usleep(50 * 1000);
    g_assert_false(cqe_ready(n, 1));
    qtest_clock_step(qts, 1);
    c = reap(n, 1);
    g_assert_cmpint(c.cid, ==, cid);
    g_assert_cmphex(c.status >> 1, ==, 0);
}

/* The model of test_timing_model and test_timing_model_abort_held. */
#define MODEL_OPTS \
    ",csd=on,csd.slm-size=1M,csd.compute-units=1,csd.model.link-gbps=0.5," \
    "csd.model.link-latency-ns=10000,csd.model.media-read-gbps=0.25," \
    "csd.model.media-read-latency-ns=100000,csd.model.media-write-gbps=0.25," \
    "csd.model.media-write-latency-ns=20000,csd.model.slm-gbps=1," \
    "csd.model.unit-gflops=0.5,csd.model.unit-gbps=0.25"

/*
 * csd.model.*: every command completes at the time worked out by hand from the model's
 * parameters (chosen so that each stage is a whole number of ns): link 0.5 GB/s (2 ns a
 * byte) and 10 us per command, media 0.25 GB/s (4 ns a byte) after 100 us (read) or 20 us
 * (write), SLM 1 GB/s, one compute unit streaming 0.25 GB/s. Executes queue on the unit.
 */
static void test_timing_model(void)
{
    Nvme *n = start(MODEL_OPTS);
    QTestState *qts = n->qs->qts;
    uint64_t r[2] = { 0, 65536 };
    uint32_t crc = CSD_CKSUM_CRC32C;
    int64_t t0, delay = 0;
    Sqe cmd, exec;
    uint16_t cid[3];

    /* SLM Read 8 KiB: SLM 8192 + link out 16384 + 10000 */
    cmd = slm_xfer(CSD_OPC_SLM_READ, n->buf, 0, 8192);
    cmd.prp2 = n->buf + 4096;
    t0 = vclock(qts);
    cid[0] = submit(n, 1, &cmd);
    expect_done_at(n, cid[0], t0, 34576);
    delay += 34576;
    /* SLM Load 16 LBAs: media 100000 + 32768, SLM 8192, + 10000 */
    cmd = slm_lba(CSD_OPC_SLM_LOAD, 0, 16, 0);
    t0 = vclock(qts);
    cid[0] = submit(n, 1, &cmd);
    expect_done_at(n, cid[0], t0, 150960);
    delay += 150960;
    /* NVM Read 8 LBAs (the classic path is modelled too): media 116384, link 8192, + 10000 */
    cmd = (Sqe){ .opc = 0x02, .nsid = 1, .prp1 = n->buf, .cdw12 = 7 };
    t0 = vclock(qts);
    cid[0] = submit(n, 1, &cmd);
    expect_done_at(n, cid[0], t0, 134576);
    delay += 134576;
    /* Flush: one media write latency + 10000 */
    cmd = (Sqe){ .opc = 0x00, .nsid = 1 };
    t0 = vclock(qts);
    cid[0] = submit(n, 1, &cmd);
    expect_done_at(n, cid[0], t0, 30000);
    delay += 30000;
    /*
     * Three checksums of 64 KiB at once on one unit: descriptors (36 bytes: 72 ns each)
     * queue on the link, then 262144 ns each on the unit, one after the other.
     */
    exec = execute(n, CSD_PROG_CHECKSUM, 1, r, &crc, 4);
    t0 = vclock(qts);
    for (int i = 0; i < 3; i++) {
        cid[i] = submit(n, 1, &exec);
    }
    expect_done_at(n, cid[0], t0, 72 + 262144 + 10000);
    expect_done_at(n, cid[1], t0, 72 + 2 * 262144 + 10000);
    expect_done_at(n, cid[2], t0, 72 + 3 * 262144 + 10000);
    delay += 3 * (72 + 10000) + 6 * 262144;

    /* C1h: modelled busy time per resource and the delay added, no overrun */
    uint8_t stats[CSD_LOG_STATS_SIZE];
    uint64_t v[CSD_STAT_COUNT];
    read_stats(n, stats);
    memcpy(v, stats + CSD_STATS_COUNTERS_OFFSET, sizeof(v));
    g_assert_cmpuint(v[CSD_STAT_MODEL_LINK_IN_BUSY_NS], ==, 3 * 72);
    g_assert_cmpuint(v[CSD_STAT_MODEL_LINK_OUT_BUSY_NS], ==, 16384 + 8192);
    g_assert_cmpuint(v[CSD_STAT_MODEL_MEDIA_BUSY_NS], ==, 32768 + 16384);
    g_assert_cmpuint(v[CSD_STAT_MODEL_SLM_BUSY_NS], ==, 8192 + 8192 + 3 * 65536);
    g_assert_cmpuint(v[CSD_STAT_MODEL_COMPUTE_BUSY_NS], ==, 3 * 262144);
    g_assert_cmpuint(v[CSD_STAT_MODEL_DELAY_NS], ==, delay);
    g_assert_cmpuint(v[CSD_STAT_MODEL_OVERRUNS], ==, 0);

    /* A queue deleted with a completion held: it is posted at once, as it is done */
    exec = execute(n, CSD_PROG_CHECKSUM, 1, r, &crc, 4);    /* the log overwrote it */
    cid[0] = submit(n, 1, &exec);
    g_usleep(200 * 1000);
    g_assert_false(cqe_ready(n, 1));
    g_assert_cmphex(run(n, 0, (Sqe){ .opc = 0x00, .cdw10 = 1 }).status, ==, 0);
    g_assert_cmpint(reap(n, 1).cid, ==, cid[0]);
    g_assert_cmphex(run(n, 0, (Sqe){ .opc = 0x01, .prp1 = n->q[1].sq,
                                     .cdw10 = (QDEPTH - 1) << 16 | 1, .cdw11 = 1 << 16 | 1 }).status, ==, 0);
    n->q[1].tail = 0;
    /* and a reset with completions held: the modelled drive is idle after it */
    for (int i = 0; i < 3; i++) {
        submit(n, 1, &exec);
    }
    g_usleep(200 * 1000);
    disable(n);
    enable(n);
    t0 = vclock(qts);
    cid[0] = submit(n, 1, &exec);
    expect_done_at(n, cid[0], t0, 72 + 262144 + 10000);
    stop(n);
}

/*
 * An Abort naming a command whose completion the model holds: its work is done (its data
 * has moved), so it is not aborted (Abort's dw0 bit 0 set) and completes successfully at
 * its modelled time. Before the fix, Abort cancelled the held command's released AIOCB (a
 * use after free, found by the generic fuzzer) and the Read completed as Command Abort
 * Requested with its data moved.
 */
static void test_timing_model_abort_held(void)
{
    Nvme *n = start(MODEL_OPTS);
    QTestState *qts = n->qs->qts;
    Sqe rd = { .opc = 0x02, .nsid = 1, .prp1 = n->buf, .cdw12 = 7 };
    int64_t t0 = vclock(qts);
    uint16_t cid = submit(n, 1, &rd);
    Cqe c;

    g_usleep(200 * 1000);
    g_assert_false(cqe_ready(n, 1));
    c = run(n, 0, (Sqe){ .opc = 0x08, .cdw10 = (uint32_t)cid << 16 | 1 });
    g_assert_cmphex(c.status, ==, 0);
    g_assert_cmphex(c.dw0 & 1, ==, 1);
    expect_done_at(n, cid, t0, 134576);    /* NVM Read 8 LBAs, as in test_timing_model */
    stop(n);
}

/* ---------------------------------------------------------- the standard front end */

static Sqe identify(Nvme *n, uint8_t cns, uint32_t nsid, uint8_t csi)
{
    return (Sqe){ .opc = 0x06, .nsid = nsid, .prp1 = n->buf, .cdw10 = cns,
                  .cdw11 = (uint32_t)csi << 24 };
}

/*
 * csd.nvme-cs=on: the memory (NSID 2) and compute (NSID 3) namespaces in Identify, Memory
 * Write/Read/Fill on the SLM the vendor commands see, range sets, Execute Program through
 * a set and with inline ranges, activation, log 84h, and the error statuses.
 */
static void test_nvme_cs(void)
{
    Nvme *n = start(",csd=on,csd.slm-size=1M,csd.nvme-cs=on");
    QTestState *qts = n->qs->qts;
    uint8_t page[4096], data[64], back[64];
    uint32_t list[4];
    struct nvme_cs_mem_range r[2] = {
        { .nsid = 2, .len = 64, .sb = 4096 }, { .nsid = 2, .len = 64, .sb = 65536 },
    };
    Cqe c;

    /* discovery */
    g_assert_cmphex(run(n, 0, identify(n, 0x1C, 0, 0)).status, ==, 0);
    qtest_memread(qts, n->buf, page, 8);
    g_assert_cmphex(page[0] & 0x19, ==, 0x19);     /* NVM, SLM (bit 3), CP (bit 4) */
    g_assert_cmphex(run(n, 0, identify(n, 0x02, 0, 0)).status, ==, 0);
    qtest_memread(qts, n->buf, list, sizeof(list));
    g_assert_cmpuint(list[0], ==, 1);
    g_assert_cmpuint(list[1], ==, 2);
    g_assert_cmpuint(list[2], ==, 3);
    g_assert_cmpuint(list[3], ==, 0);
    for (uint32_t nsid = 2; nsid <= 3; nsid++) {
        g_assert_cmphex(run(n, 0, identify(n, 0x03, nsid, 0)).status, ==, 0);
        qtest_memread(qts, n->buf, page, 8);
        g_assert_cmphex(page[0], ==, 0x04);      /* NIDT: CSI */
        g_assert_cmphex(page[1], ==, 1);
        g_assert_cmphex(page[4], ==, nsid == 2 ? NVME_CS_CSI_SLM : NVME_CS_CSI_CP);
        g_assert_cmphex(run(n, 0, identify(n, 0x08, nsid, 0)).status, ==, 0);
        qtest_memread(qts, n->buf, page, 16);
        g_assert_cmphex(page[14], ==, 1);        /* NSTAT: ready */
    }
    g_assert_cmphex(run(n, 0, identify(n, 0x07, 0, NVME_CS_CSI_CP)).status, ==, 0);
    qtest_memread(qts, n->buf, list, 8);
    g_assert_cmpuint(list[0], ==, 3);
    g_assert_cmpuint(list[1], ==, 0);
    g_assert_cmphex(run(n, 0, identify(n, 0x05, 2, NVME_CS_CSI_SLM)).status, ==, 0);
    g_assert_cmphex(run(n, 0, identify(n, 0x05, 2, 0)).status, ==, CSD_STATUS_INVALID_FIELD | CSD_STATUS_DNR);

    /* one memory: Memory Write, then Memory Read and the vendor SLM Read see the bytes */
    for (int i = 0; i < 64; i++) {
        data[i] = (uint8_t)(i * 13 + 5);
    }
    qtest_memwrite(qts, n->buf, data, 64);
    g_assert_cmphex(run(n, 1, (Sqe){ .opc = NVME_CS_MEM_WRITE, .nsid = 2, .prp1 = n->buf,
                                     .cdw10 = 4096, .cdw12 = 64 }).status, ==, 0);
    qtest_memset(qts, n->buf, 0, 64);
    g_assert_cmphex(run(n, 1, (Sqe){ .opc = NVME_CS_MEM_READ, .nsid = 2, .prp1 = n->buf,
                                     .cdw10 = 4096, .cdw12 = 64 }).status, ==, 0);
    qtest_memread(qts, n->buf, back, 64);
    g_assert_cmpmem(back, 64, data, 64);
    qtest_memset(qts, n->buf, 0, 64);
    g_assert_cmphex(run(n, 1, slm_xfer(CSD_OPC_SLM_READ, n->buf, 4096, 64)).status, ==, 0);
    qtest_memread(qts, n->buf, back, 64);
    g_assert_cmpmem(back, 64, data, 64);
    /* Memory Fill */
    g_assert_cmphex(run(n, 1, (Sqe){ .opc = NVME_CS_MEM_FILL, .nsid = 2, .cdw10 = 8192,
                                     .cdw12 = 16, .cdw13 = 0x04030201 }).status, ==, 0);
    g_assert_cmphex(run(n, 1, slm_xfer(CSD_OPC_SLM_READ, n->buf, 8192, 20)).status, ==, 0);
    qtest_memread(qts, n->buf, back, 20);
    for (int i = 0; i < 16; i++) {
        g_assert_cmpint(back[i], ==, i % 4 + 1);
    }
    g_assert_cmpint(back[16], ==, 0);

    /* a range set, and copy (index 01h) through it */
    qtest_memwrite(qts, n->buf, r, sizeof(r));
    c = run(n, 0, (Sqe){ .opc = NVME_CS_ADM_MEMORY_RANGE_SET, .prp1 = n->buf, .cdw10 = 0, .cdw11 = 1 });
    g_assert_cmphex(c.status, ==, 0);
    uint16_t rsid = c.dw0;
    g_assert_cmpuint(rsid, !=, 0);
    c = run(n, 1, (Sqe){ .opc = NVME_CS_EXECUTE_PROGRAM, .nsid = 3,
                         .cdw2 = CSD_PROG_COPY | (uint32_t)rsid << 16, .cdw3 = 2 });
    g_assert_cmphex(c.status, ==, 0);
    g_assert_cmpuint(c.dw0, ==, 64);
    g_assert_cmphex(run(n, 1, (Sqe){ .opc = NVME_CS_MEM_READ, .nsid = 2, .prp1 = n->buf,
                                     .cdw10 = 65536, .cdw12 = 64 }).status, ==, 0);
    qtest_memread(qts, n->buf, back, 64);
    g_assert_cmpmem(back, 64, data, 64);
    /* deactivated, it does not run; activated again, with inline ranges, it does */
    g_assert_cmphex(run(n, 0, (Sqe){ .opc = NVME_CS_ADM_PROGRAM_ACTIVATION,
                                     .cdw10 = CSD_PROG_COPY | NVME_CS_PAM_DEACTIVATE }).status, ==, 0);
    g_assert_cmphex(run(n, 1, (Sqe){ .opc = NVME_CS_EXECUTE_PROGRAM, .nsid = 3,
                                     .cdw2 = CSD_PROG_COPY | (uint32_t)rsid << 16, .cdw3 = 2 }).status,
                    ==, NVME_CS_PROGRAM_NOT_ACTIVATED | CSD_STATUS_DNR);
    g_assert_cmphex(run(n, 0, (Sqe){ .opc = NVME_CS_ADM_PROGRAM_ACTIVATION,
                                     .cdw10 = CSD_PROG_COPY }).status, ==, 0);
    r[1].sb = 131072;
    qtest_memwrite(qts, n->buf, r, sizeof(r));
    c = run(n, 1, (Sqe){ .opc = NVME_CS_EXECUTE_PROGRAM, .nsid = 3, .prp1 = n->buf,
                         .cdw2 = CSD_PROG_COPY, .cdw3 = 2, .mptr = sizeof(r) });
    g_assert_cmphex(c.status, ==, 0);
    g_assert_cmphex(run(n, 1, slm_xfer(CSD_OPC_SLM_READ, n->buf, 131072, 64)).status, ==, 0);
    qtest_memread(qts, n->buf, back, 64);
    g_assert_cmpmem(back, 64, data, 64);

    /* log 84h: the set */
    g_assert_cmphex(run(n, 0, (Sqe){ .opc = 0x02, .nsid = 0xffffffff, .prp1 = n->buf,
                                     .cdw10 = NVME_CS_LOG_MEMORY_RANGE_SETS | 31 << 16 }).status, ==, 0);
    qtest_memread(qts, n->buf, page, 128);
    g_assert_cmpuint(page[0], ==, 1);
    g_assert_cmpuint(page[8] | page[9] << 8, ==, rsid);
    g_assert_cmpuint(page[10], ==, 2);

    /* errors */
    g_assert_cmphex(run(n, 0, (Sqe){ .opc = NVME_CS_ADM_MEMORY_RANGE_SET,
                                     .cdw10 = NVME_CS_MRSM_DELETE | (uint32_t)rsid << 16 }).status, ==, 0);
    g_assert_cmphex(run(n, 0, (Sqe){ .opc = NVME_CS_ADM_MEMORY_RANGE_SET,
                                     .cdw10 = NVME_CS_MRSM_DELETE | (uint32_t)rsid << 16 }).status,
                    ==, NVME_CS_INVALID_MEMORY_RANGE_SET_ID | CSD_STATUS_DNR);
    g_assert_cmphex(run(n, 1, (Sqe){ .opc = NVME_CS_EXECUTE_PROGRAM, .nsid = 3,
                                     .cdw2 = 0x3F, .cdw3 = 0 }).status,
                    ==, NVME_CS_INVALID_PROGRAM_INDEX | CSD_STATUS_DNR);
    g_assert_cmphex(run(n, 1, (Sqe){ .opc = NVME_CS_MEM_READ, .nsid = 2, .prp1 = n->buf,
                                     .cdw10 = SLM_BYTES - 32, .cdw12 = 64 }).status,
                    ==, CSD_STATUS_SLM_OUT_OF_BOUNDS | CSD_STATUS_DNR);
    g_assert_cmphex(run(n, 1, (Sqe){ .opc = 0x03, .nsid = 2 }).status,
                    ==, CSD_STATUS_INVALID_OPCODE | CSD_STATUS_DNR);
    g_assert_cmphex(run(n, 1, (Sqe){ .opc = NVME_CS_MEM_READ, .nsid = 3 }).status,
                    ==, CSD_STATUS_INVALID_OPCODE | CSD_STATUS_DNR);
    /* an empty download slot: No Program; a junk image: Invalid Program Data, slot left empty */
    g_assert_cmphex(run(n, 0, (Sqe){ .opc = NVME_CS_ADM_PROGRAM_ACTIVATION,
                                     .cdw10 = CSD_SLOT_FIRST }).status,
                    ==, NVME_CS_NO_PROGRAM | CSD_STATUS_DNR);
    qtest_memset(qts, n->buf, 0x5a, 64);
    g_assert_cmphex(run(n, 0, (Sqe){ .opc = NVME_CS_ADM_LOAD_PROGRAM, .nsid = 3, .prp1 = n->buf,
                                     .cdw10 = CSD_SLOT_FIRST | NVME_CS_PROGRAM_TYPE_EBPF << 16,
                                     .cdw11 = 64, .cdw12 = 16, .cdw14 = 64 }).status,
                    ==, NVME_CS_INVALID_PROGRAM_DATA | CSD_STATUS_DNR);
    g_assert_cmphex(run(n, 0, (Sqe){ .opc = NVME_CS_ADM_LOAD_PROGRAM, .nsid = 3,
                                     .cdw10 = CSD_SLOT_FIRST | NVME_CS_LOAD_UNLOAD }).status,
                    ==, NVME_CS_NO_PROGRAM | CSD_STATUS_DNR);
    stop(n);

    /* csd=on without nvme-cs: no SLM/CP bits, no such namespaces, no such admin commands */
    n = start(",csd=on,csd.slm-size=1M");
    g_assert_cmphex(run(n, 0, identify(n, 0x1C, 0, 0)).status, ==, 0);
    qtest_memread(n->qs->qts, n->buf, page, 8);
    g_assert_cmphex(page[0] & 0x18, ==, 0);
    g_assert_cmphex(run(n, 1, (Sqe){ .opc = NVME_CS_MEM_READ, .nsid = 2, .prp1 = n->buf,
                                     .cdw12 = 64 }).status, ==, CSD_STATUS_INVALID_FIELD | CSD_STATUS_DNR);  /* stock: an inactive NSID */
    g_assert_cmphex(run(n, 0, (Sqe){ .opc = NVME_CS_ADM_PROGRAM_ACTIVATION, .cdw10 = 1 }).status,
                    ==, CSD_STATUS_INVALID_OPCODE | CSD_STATUS_DNR);
    stop(n);
}

/* The standard Load Program of a whole image into index (256-byte chunks); the last completion. */
static Cqe cs_load_program(Nvme *n, const uint8_t *img, uint32_t size, uint16_t index)
{
    Cqe c = { 0 };

    for (uint32_t off = 0; off < size; off += 256) {
        uint32_t len = MIN(256, size - off);

        qtest_memwrite(n->qs->qts, n->buf, img + off, len);
        c = run(n, 0, (Sqe){ .opc = NVME_CS_ADM_LOAD_PROGRAM, .nsid = 3, .prp1 = n->buf,
                             .cdw10 = index | NVME_CS_PROGRAM_TYPE_EBPF << 16, .cdw11 = size,
                             .cdw12 = 16, .cdw14 = len, .cdw15 = off });
        if (c.status) {
            break;
        }
    }
    return c;
}

/* Memory Range Set Management, create, of nr ranges already in n->buf; the status. */
static uint16_t cs_create_set(Nvme *n, uint32_t nr)
{
    return run(n, 0, (Sqe){ .opc = NVME_CS_ADM_MEMORY_RANGE_SET, .prp1 = n->buf,
                            .cdw11 = nr - 1 }).status;
}

/*
 * csd.nvme-cs=on: the command set specific statuses of range sets and programs through the
 * controller (the core's rules for each: tests/unit/test_nvme_cs.cc).
 */
static void test_nvme_cs_statuses(void)
{
    Nvme *n = start(",csd=on,csd.slm-size=1M,csd.nvme-cs=on");
    QTestState *qts = n->qs->qts;
    struct nvme_cs_mem_range r[17];
    const char *dir = g_getenv("CSD_BPF_DIR");
    g_autofree char *path = g_strdup_printf("%s/threshold.o", dir ? dir : ".");
    g_autofree gchar *img = NULL;
    gsize size;

    /* range sets: outside memory, overlapping, 17 ranges, a 65th set */
    memset(r, 0, sizeof(r));
    for (int i = 0; i < 17; i++) {
        r[i] = (struct nvme_cs_mem_range){ .nsid = 2, .len = 64, .sb = 4096 * i };
    }
    r[1].sb = SLM_BYTES - 32;
    qtest_memwrite(qts, n->buf, r, sizeof(r));
    g_assert_cmphex(cs_create_set(n, 2), ==, NVME_CS_INVALID_MEMORY_RANGE_SET | CSD_STATUS_DNR);
    r[1].sb = 32;
    qtest_memwrite(qts, n->buf, r, sizeof(r));
    g_assert_cmphex(cs_create_set(n, 2), ==, NVME_CS_OVERLAPPING_MEMORY_RANGES | CSD_STATUS_DNR);
    r[1].sb = 4096;
    qtest_memwrite(qts, n->buf, r, sizeof(r));
    g_assert_cmphex(cs_create_set(n, 17), ==, NVME_CS_MAX_MEMORY_RANGES_EXCEEDED | CSD_STATUS_DNR);
    for (uint32_t i = 0; i < NVME_CS_MAX_RANGE_SETS; i++) {
        g_assert_cmphex(cs_create_set(n, 1), ==, 0);
    }
    g_assert_cmphex(cs_create_set(n, 1), ==, NVME_CS_MAX_MEMORY_RANGE_SETS_EXCEEDED | CSD_STATUS_DNR);

    /* Load Program: another type, a device-defined index, too big */
    g_assert_cmphex(run(n, 0, (Sqe){ .opc = NVME_CS_ADM_LOAD_PROGRAM, .nsid = 3, .prp1 = n->buf,
                                     .cdw10 = CSD_SLOT_FIRST | 7 << 16, .cdw11 = 64,
                                     .cdw12 = 16, .cdw14 = 64 }).status,
                    ==, NVME_CS_INVALID_PROGRAM_TYPE | CSD_STATUS_DNR);
    g_assert_cmphex(run(n, 0, (Sqe){ .opc = NVME_CS_ADM_LOAD_PROGRAM, .nsid = 3, .prp1 = n->buf,
                                     .cdw10 = CSD_PROG_COPY | NVME_CS_PROGRAM_TYPE_EBPF << 16,
                                     .cdw11 = 64, .cdw12 = 16, .cdw14 = 64 }).status,
                    ==, NVME_CS_PROGRAM_INDEX_NOT_DOWNLOADABLE | CSD_STATUS_DNR);
    g_assert_cmphex(run(n, 0, (Sqe){ .opc = NVME_CS_ADM_LOAD_PROGRAM, .nsid = 3, .prp1 = n->buf,
                                     .cdw10 = CSD_SLOT_FIRST | NVME_CS_PROGRAM_TYPE_EBPF << 16,
                                     .cdw11 = CSD_MAX_PROGRAM_BYTES + 1, .cdw12 = 16,
                                     .cdw14 = 64 }).status,
                    ==, NVME_CS_PROGRAM_TOO_BIG | CSD_STATUS_DNR);

    /* with an eBPF image: in use while it holds the index or is active; 16 active at most */
    if (g_file_get_contents(path, &img, &size, NULL)) {
        for (uint16_t i = 0; i <= NVME_CS_MAX_ACTIVE_DOWNLOADED; i++) {
            g_assert_cmphex(cs_load_program(n, (uint8_t *)img, size, CSD_SLOT_FIRST + i).status, ==, 0);
        }
        g_assert_cmphex(cs_load_program(n, (uint8_t *)img, size, CSD_SLOT_FIRST).status,
                        ==, NVME_CS_PROGRAM_IN_USE | CSD_STATUS_DNR);
        for (uint16_t i = 0; i < NVME_CS_MAX_ACTIVE_DOWNLOADED; i++) {
            g_assert_cmphex(run(n, 0, (Sqe){ .opc = NVME_CS_ADM_PROGRAM_ACTIVATION,
                                             .cdw10 = CSD_SLOT_FIRST + i }).status, ==, 0);
        }
        g_assert_cmphex(run(n, 0, (Sqe){ .opc = NVME_CS_ADM_PROGRAM_ACTIVATION,
                                         .cdw10 = CSD_SLOT_FIRST + NVME_CS_MAX_ACTIVE_DOWNLOADED }).status,
                        ==, NVME_CS_MAX_PROGRAMS_ACTIVATED | CSD_STATUS_DNR);
        g_assert_cmphex(run(n, 0, (Sqe){ .opc = NVME_CS_ADM_LOAD_PROGRAM, .nsid = 3,
                                         .cdw10 = CSD_SLOT_FIRST | NVME_CS_LOAD_UNLOAD }).status,
                        ==, NVME_CS_PROGRAM_IN_USE | CSD_STATUS_DNR);
    } else {
        g_test_message("no eBPF example objects (CSD_BPF_DIR): the program statuses untested here");
    }
    stop(n);
}

/*
 * Issue 27: one activation state for both front ends. A program the standard front end
 * loaded and activated, then the vendor Program Unload (which knows no activation) and the
 * vendor Program Load of another program into the same slot: the new program is not
 * active, so Execute Program refuses it until it is activated. Before the fix the slot
 * stayed "active" and the new program ran without activation.
 */
static void test_nvme_cs_activation_both_front_ends(void)
{
    const char *dir = g_getenv("CSD_BPF_DIR");
    g_autofree char *path = g_strdup_printf("%s/threshold.o", dir ? dir : ".");
    g_autofree gchar *img = NULL;
    gsize size;
    Nvme *n;
    uint8_t page[4096];
    uint32_t count;
    /* a filter of 4 zero records of 16 bytes, ranges inline: in at 0, out at 4096 */
    struct {
        struct nvme_cs_mem_range r[2];
        uint32_t h[4];
        uint64_t threshold;
    } QEMU_PACKED data = {
        .r = { { .nsid = 2, .len = 64, .sb = 0 }, { .nsid = 2, .len = 64, .sb = 4096 } },
        .h = { 4, CSD_BPF_FILTER, 1, 0 }, .threshold = 400,
    };
    Sqe exec = { .opc = NVME_CS_EXECUTE_PROGRAM, .nsid = 3, .cdw2 = CSD_SLOT_FIRST, .cdw3 = 2,
                 .mptr = sizeof(data) };

    if (!g_file_get_contents(path, &img, &size, NULL)) {
        g_test_skip("no eBPF example objects (CSD_BPF_DIR)");
        return;
    }
    n = start(",csd=on,csd.slm-size=1M,csd.nvme-cs=on");
    exec.prp1 = n->buf;
    g_assert_cmphex(cs_load_program(n, (uint8_t *)img, size, CSD_SLOT_FIRST).status, ==, 0);
    g_assert_cmphex(run(n, 0, (Sqe){ .opc = NVME_CS_ADM_PROGRAM_ACTIVATION,
                                     .cdw10 = CSD_SLOT_FIRST }).status, ==, 0);
    qtest_memwrite(n->qs->qts, n->buf, &data, sizeof(data));
    g_assert_cmphex(run(n, 1, exec).status, ==, 0);

    /* the vendor front end unloads it and loads another program into the slot */
    g_assert_cmphex(run(n, 1, program_unload(CSD_SLOT_FIRST)).status, ==, 0);
    g_assert_cmphex(run(n, 0, (Sqe){ .opc = NVME_CS_ADM_PROGRAM_ACTIVATION,
                                     .cdw10 = CSD_SLOT_FIRST }).status,
                    ==, NVME_CS_NO_PROGRAM | CSD_STATUS_DNR);
    g_assert_cmphex(program_load(n, (uint8_t *)img, size, CSD_SLOT_FIRST, 256, 16).status, ==, 0);

    /* not active: Program List says so, and Execute Program refuses it */
    g_assert_cmphex(run(n, 0, (Sqe){ .opc = 0x02, .nsid = 0xffffffff, .prp1 = n->buf,
                                     .cdw10 = NVME_CS_LOG_PROGRAM_LIST | 1023 << 16 }).status, ==, 0);
    qtest_memread(n->qs->qts, n->buf, page, sizeof(page));
    memcpy(&count, page, 4);
    g_assert_cmpuint(count, ==, 13);            /* twelve device-defined programs and the slot */
    struct nvme_cs_program_entry e;
    memcpy(&e, page + 8 + 12 * sizeof(e), sizeof(e));
    g_assert_cmphex(e.index, ==, CSD_SLOT_FIRST);
    g_assert_cmphex(e.flags & NVME_CS_PROGRAM_ACTIVE, ==, 0);
    qtest_memwrite(n->qs->qts, n->buf, &data, sizeof(data));
    g_assert_cmphex(run(n, 1, exec).status, ==, NVME_CS_PROGRAM_NOT_ACTIVATED | CSD_STATUS_DNR);
    g_assert_cmphex(run(n, 0, (Sqe){ .opc = NVME_CS_ADM_PROGRAM_ACTIVATION,
                                     .cdw10 = CSD_SLOT_FIRST }).status, ==, 0);
    g_assert_cmphex(run(n, 1, exec).status, ==, 0);
    stop(n);
}

/* Get Log Page Commands Supported and Effects (05h) for CSI csi: its I/O commands' part. */
static void read_io_effects(Nvme *n, uint8_t csi, uint32_t iocs[256], uint32_t acs[256])
{
    uint8_t log[4096];

    g_assert_cmphex(run(n, 0, (Sqe){ .opc = 0x02, .prp1 = n->buf, .cdw10 = 0x05 | 1023 << 16,
                                     .cdw14 = (uint32_t)csi << 24 }).status, ==, 0);
    qtest_memread(n->qs->qts, n->buf, log, sizeof(log));
    memcpy(acs, log, 1024);
    memcpy(iocs, log + 1024, 1024);
}

/*
 * Issue 27: Commands Supported and Effects (05h) with the CSI field set to 03h (memory)
 * and 04h (compute) lists their I/O commands as supported (CSUPP, bit 0), those that change
 * the memory's contents with LBCC (bit 1), and nothing else; CSI 00h is still the NVM
 * command set's. Linux reads this log per command set and lets unprivileged passthrough
 * send only commands it lists. Before the fix both lists were empty.
 */
static void test_nvme_cs_command_effects(void)
{
    Nvme *n = start(",csd=on,csd.slm-size=1M,csd.nvme-cs=on");
    uint32_t iocs[256], acs[256];
    const uint32_t supported = 1, changes = 2;

    disable(n);
    n->css = 6;     /* all I/O command sets: the log then answers per CSI */
    enable(n);
    read_io_effects(n, NVME_CS_CSI_SLM, iocs, acs);
    for (int opc = 0; opc < 256; opc++) {
        uint32_t want = opc == NVME_CS_MEM_READ ? supported
                      : opc == NVME_CS_MEM_WRITE || opc == NVME_CS_MEM_FILL ||
                        opc == NVME_CS_MEM_COPY ? supported | changes : 0;

        g_assert_cmphex(iocs[opc], ==, want);
    }
    g_assert_cmphex(acs[NVME_CS_ADM_LOAD_PROGRAM] & supported, ==, supported);
    read_io_effects(n, NVME_CS_CSI_CP, iocs, acs);
    for (int opc = 0; opc < 256; opc++) {
        g_assert_cmphex(iocs[opc], ==, opc == NVME_CS_EXECUTE_PROGRAM ? supported | changes : 0);
    }
    read_io_effects(n, 0, iocs, acs);     /* the NVM command set: QEMU's, and the vendor's */
    g_assert_cmphex(iocs[0x02] & supported, ==, supported);
    g_assert_cmphex(iocs[NVME_CS_NVM_COPY], ==, supported | changes);
    g_assert_cmphex(iocs[CSD_OPC_SLM_READ] & supported, ==, supported);
    stop(n);

    /* without the standard front end there are no such command sets: empty lists */
    n = start(",csd=on,csd.slm-size=1M");
    disable(n);
    n->css = 6;
    enable(n);
    read_io_effects(n, NVME_CS_CSI_SLM, iocs, acs);
    for (int opc = 0; opc < 256; opc++) {
        g_assert_cmphex(iocs[opc], ==, 0);
    }
    stop(n);
}

/*
 * Issue 27: Copy with the memory source format 4h into a zoned namespace writes through SLM
 * Store, which keeps no write pointer, zone state or Copy limit: it is refused with
 * Incompatible Namespace or Format, and nothing is written, wherever it aims (at the write
 * pointer or not); Memory Copy from a zoned namespace likewise (its reads cross zones
 * unchecked). The NVM namespace beside it still copies. Before the fix the Copy into zone 0
 * at LBA 8, past its write pointer 0, succeeded and wrote the bytes.
 */
static void test_nvme_cs_zoned_copy(void)
{
    g_autofree char *zfile = NULL;
    g_autofree char *opts = NULL;
    g_autofree gchar *file = NULL;
    int fd = g_file_open_tmp("csd-zoned-XXXXXX", &zfile, NULL);
    struct nvme_cs_mem_range mem = { .nsid = 3, .len = 4 * LBA, .sb = 0 };
    struct nvme_cs_copy_src src = { .snsid = 2, .slba = 0, .nlb = 3 };
    uint8_t pattern[4 * LBA];
    gsize flen;
    Nvme *n;

    g_assert_cmpint(ftruncate(fd, 1024 * 1024), ==, 0);
    close(fd);
    /* NSID 1: the NVM namespace; NSID 2: zoned, 64 KiB zones; memory 3, compute 4 */
    opts = g_strdup_printf(",csd=on,csd.slm-size=1M,csd.nvme-cs=on,csd.nvme-cs.mem-nsid=3"
                           " -drive id=z0,if=none,file=%s,format=raw"
                           " -device nvme-ns,drive=z0,nsid=2,zoned=on,zoned.zone_size=64K", zfile);
    n = start(opts);
    disable(n);
    n->css = 6;     /* a zoned namespace is attached only with all I/O command sets */
    enable(n);
    for (int i = 0; i < (int)sizeof(pattern); i++) {
        pattern[i] = (uint8_t)(i * 5 + 1);
    }
    qtest_memwrite(n->qs->qts, n->buf, pattern, sizeof(pattern));
    g_assert_cmphex(run(n, 1, (Sqe){ .opc = NVME_CS_MEM_WRITE, .nsid = 3, .prp1 = n->buf,
                                     .cdw10 = 0, .cdw12 = sizeof(pattern) }).status, ==, 0);

    qtest_memwrite(n->qs->qts, n->buf, &mem, sizeof(mem));
    for (int i = 0; i < 2; i++) {
        uint32_t sdlba = i ? 0 : 8;     /* past zone 0's write pointer (0), then at it */

        g_assert_cmphex(run(n, 1, (Sqe){ .opc = NVME_CS_NVM_COPY, .nsid = 2, .prp1 = n->buf,
                                         .cdw10 = sdlba,
                                         .cdw12 = NVME_CS_COPY_FORMAT_MEMORY << 8 }).status,
                        ==, NVME_CS_INCOMPATIBLE_NS_OR_FORMAT | CSD_STATUS_DNR);
    }
    g_assert_cmphex(run(n, 1, (Sqe){ .opc = 0x00, .nsid = 2 }).status, ==, 0);
    g_assert(g_file_get_contents(zfile, &file, &flen, NULL));
    for (gsize i = 0; i < 16 * LBA; i++) {
        g_assert_cmpint(file[i], ==, 0);      /* nothing written to the zoned namespace */
    }
    qtest_memwrite(n->qs->qts, n->buf, &src, sizeof(src));
    g_assert_cmphex(run(n, 1, (Sqe){ .opc = NVME_CS_MEM_COPY, .nsid = 3, .prp1 = n->buf,
                                     .cdw10 = 65536,
                                     .cdw12 = NVME_CS_COPY_FORMAT_2 << 8 }).status,
                    ==, NVME_CS_INCOMPATIBLE_NS_OR_FORMAT | CSD_STATUS_DNR);

    /* the NVM namespace still takes a Copy from memory */
    qtest_memwrite(n->qs->qts, n->buf, &mem, sizeof(mem));
    g_assert_cmphex(run(n, 1, (Sqe){ .opc = NVME_CS_NVM_COPY, .nsid = 1, .prp1 = n->buf,
                                     .cdw10 = 100,
                                     .cdw12 = NVME_CS_COPY_FORMAT_MEMORY << 8 }).status, ==, 0);
    stop(n);
    unlink(zfile);
}

/* The namespace file's pattern byte at byte offset b (as start() writes it). */
static uint8_t disk_byte(uint64_t b)
{
    return (uint8_t)(b * 7 + b / 4096);
}

/*
 * csd.nvme-cs=on: Memory Copy (formats 2h and 3h) reads LBAs into memory, Copy with the
 * memory source format 4h writes memory to LBAs, Identify's OCFS says so, logs 1Ah/1Bh
 * put the three namespaces in one reachability group, and their error statuses.
 */
static void test_nvme_cs_copy(void)
{
    Nvme *n = start(",csd=on,csd.slm-size=1M,csd.nvme-cs=on");
    QTestState *qts = n->qs->qts;
    struct nvme_cs_copy_src src[2] = {
        { .snsid = 1, .slba = 16, .nlb = 3 }, { .snsid = 1, .slba = 40, .nlb = 1 },
    };
    struct nvme_cs_mem_range mem = { .nsid = 2, .len = 6 * LBA, .sb = 8192 };
    uint8_t got[6 * LBA], want[6 * LBA], fmt3[80], page[64];
    g_autofree gchar *file = NULL;
    gsize flen;
    uint32_t u32;

    /* Identify Controller: OCFS bit 4 (Copy from memory) besides QEMU's formats 0h-3h */
    g_assert_cmphex(run(n, 0, (Sqe){ .opc = 0x06, .prp1 = n->buf, .cdw10 = 1 }).status, ==, 0);
    qtest_memread(qts, n->buf + 534, page, 2);
    g_assert_cmphex(page[0], ==, 0x1f);

    /* Memory Copy, format 2h: LBAs 16-19 then 40-41 into consecutive memory at 8192 */
    for (int i = 0; i < 4 * LBA; i++) {
        want[i] = disk_byte(16 * LBA + i);
    }
    for (int i = 0; i < 2 * LBA; i++) {
        want[4 * LBA + i] = disk_byte(40 * LBA + i);
    }
    qtest_memwrite(qts, n->buf, src, sizeof(src));
    g_assert_cmphex(run(n, 1, (Sqe){ .opc = NVME_CS_MEM_COPY, .nsid = 2, .prp1 = n->buf,
                                     .cdw10 = 8192, .cdw12 = 1 | NVME_CS_COPY_FORMAT_2 << 8 }).status,
                    ==, 0);
    g_assert_cmphex(run(n, 1, (Sqe){ .opc = NVME_CS_MEM_READ, .nsid = 2, .prp1 = n->buf,
                                     .cdw10 = 8192, .cdw12 = sizeof(got) }).status, ==, 0);
    qtest_memread(qts, n->buf, got, sizeof(got));
    g_assert_cmpmem(got, sizeof(got), want, sizeof(want));

    /* format 3h: 40-byte descriptors */
    memset(fmt3, 0xee, sizeof(fmt3));
    memcpy(fmt3, &src[1], 32);
    qtest_memwrite(qts, n->buf, fmt3, 40);
    g_assert_cmphex(run(n, 1, (Sqe){ .opc = NVME_CS_MEM_COPY, .nsid = 2, .prp1 = n->buf,
                                     .cdw10 = 65536, .cdw12 = NVME_CS_COPY_FORMAT_3 << 8 }).status,
                    ==, 0);
    g_assert_cmphex(run(n, 1, slm_xfer(CSD_OPC_SLM_READ, n->buf, 65536, 2 * LBA)).status, ==, 0);
    qtest_memread(qts, n->buf, got, 2 * LBA);
    g_assert_cmpmem(got, 2 * LBA, want + 4 * LBA, 2 * LBA);

    /* NVM Copy format 4h: the 6 LBAs of memory at 8192 to LBA 2000 */
    qtest_memwrite(qts, n->buf, &mem, sizeof(mem));
    g_assert_cmphex(run(n, 1, (Sqe){ .opc = NVME_CS_NVM_COPY, .nsid = 1, .prp1 = n->buf,
                                     .cdw10 = 2000, .cdw12 = NVME_CS_COPY_FORMAT_MEMORY << 8 }).status,
                    ==, 0);
    g_assert_cmphex(run(n, 1, (Sqe){ .opc = 0x00, .nsid = 1 }).status, ==, 0);
    g_assert(g_file_get_contents(n->disk, &file, &flen, NULL));
    g_assert_cmpmem(file + 2000 * LBA, sizeof(want), want, sizeof(want));
    g_assert_cmpint((uint8_t)file[2006 * LBA], ==, disk_byte(2006 * LBA));

    /* errors */
    g_assert_cmphex(run(n, 1, (Sqe){ .opc = NVME_CS_MEM_COPY, .nsid = 2, .prp1 = n->buf,
                                     .cdw12 = 0 }).status,
                    ==, NVME_CS_INCOMPATIBLE_NS_OR_FORMAT | CSD_STATUS_DNR);
    src[0].snsid = 9;
    qtest_memwrite(qts, n->buf, src, sizeof(src));
    g_assert_cmphex(run(n, 1, (Sqe){ .opc = NVME_CS_MEM_COPY, .nsid = 2, .prp1 = n->buf,
                                     .cdw12 = NVME_CS_COPY_FORMAT_2 << 8 }).status,
                    ==, NVME_CS_NS_NOT_REACHABLE | CSD_STATUS_DNR);
    src[0].snsid = 1;
    src[0].slba = NS_BYTES / LBA - 2;
    qtest_memwrite(qts, n->buf, src, sizeof(src));
    g_assert_cmphex(run(n, 1, (Sqe){ .opc = NVME_CS_MEM_COPY, .nsid = 2, .prp1 = n->buf,
                                     .cdw12 = NVME_CS_COPY_FORMAT_2 << 8 }).status,
                    ==, CSD_STATUS_LBA_OUT_OF_RANGE | CSD_STATUS_DNR);
    mem.nsid = 3;
    qtest_memwrite(qts, n->buf, &mem, sizeof(mem));
    g_assert_cmphex(run(n, 1, (Sqe){ .opc = NVME_CS_NVM_COPY, .nsid = 1, .prp1 = n->buf,
                                     .cdw12 = NVME_CS_COPY_FORMAT_MEMORY << 8 }).status,
                    ==, NVME_CS_INVALID_MEMORY_NS | CSD_STATUS_DNR);
    mem.nsid = 2;
    mem.len = 100;
    qtest_memwrite(qts, n->buf, &mem, sizeof(mem));
    g_assert_cmphex(run(n, 1, (Sqe){ .opc = NVME_CS_NVM_COPY, .nsid = 1, .prp1 = n->buf,
                                     .cdw12 = NVME_CS_COPY_FORMAT_MEMORY << 8 }).status,
                    ==, CSD_STATUS_INVALID_FIELD | CSD_STATUS_DNR);

    /* logs 1Ah and 1Bh: one group holding NSIDs 1, 2, 3; one association of it */
    g_assert_cmphex(run(n, 0, (Sqe){ .opc = 0x02, .nsid = 0xffffffff, .prp1 = n->buf,
                                     .cdw10 = NVME_CS_LOG_REACHABILITY_GROUPS | 15 << 16 }).status, ==, 0);
    qtest_memread(qts, n->buf, page, 64);
    g_assert_cmpuint(page[0], ==, 1);                  /* groups */
    memcpy(&u32, page + 16, 4);
    g_assert_cmpuint(u32, ==, 1);                      /* RGID */
    memcpy(&u32, page + 20, 4);
    g_assert_cmpuint(u32, ==, 3);                      /* NSIDs */
    for (uint32_t i = 0; i < 3; i++) {
        memcpy(&u32, page + 48 + 4 * i, 4);
        g_assert_cmpuint(u32, ==, i + 1);
    }
    g_assert_cmphex(run(n, 0, (Sqe){ .opc = 0x02, .nsid = 0xffffffff, .prp1 = n->buf,
                                     .cdw10 = NVME_CS_LOG_REACHABILITY_ASSOC | 15 << 16 }).status, ==, 0);
    qtest_memread(qts, n->buf, page, 64);
    memcpy(&u32, page + 16, 4);
    g_assert_cmpuint(u32, ==, 1);                      /* RAID */
    memcpy(&u32, page + 48, 4);
    g_assert_cmpuint(u32, ==, 1);                      /* its group */
    stop(n);

    /* without nvme-cs, Copy format 4h is QEMU's: an unsupported format */
    n = start(",csd=on,csd.slm-size=1M");
    g_assert_cmphex(run(n, 1, (Sqe){ .opc = NVME_CS_NVM_COPY, .nsid = 1, .prp1 = n->buf,
                                     .cdw12 = NVME_CS_COPY_FORMAT_MEMORY << 8 }).status & 0x7ff,
                    ==, CSD_STATUS_INVALID_FIELD);
    stop(n);
}

/*
 * Doorbell Buffer Config (7Ch) with zeroed shadow doorbells and event indexes; returns the
 * shadow doorbells' guest address (SQ y's tail at 8y, CQ y's head at 8y + 4).
 */
static uint64_t doorbell_buffer_config(Nvme *n)
{
    uint64_t dbs = galloc(n, 4096), eis = galloc(n, 4096);

    qtest_memset(n->qs->qts, dbs, 0, 4096);
    qtest_memset(n->qs->qts, eis, 0, 4096);
    g_assert_cmphex(run(n, 0, (Sqe){ .opc = 0x7c, .prp1 = dbs, .prp2 = eis }).status, ==, 0);
    return dbs;
}

/*
 * Shadow doorbells (Doorbell Buffer Config, 7Ch) holding a value beyond their queue,
 * stock nvme behaviour that patch 0007 changes: the value is ignored as such an MMIO
 * doorbell write is, and Invalid Doorbell Write Value is reported to an outstanding AER.
 * Before, a submission queue tail beyond the queue made the controller process the ring
 * round and round (here: the 63 zeroed entries after the Flush, until the completion
 * queue was full; the generic fuzzer's inputs kept it going for seconds), and a
 * completion queue head beyond it went unnoticed.
 */
static void test_dbbuf_invalid_value(void)
{
    Nvme *n = start("");
    QTestState *qts = n->qs->qts;
    const uint32_t invalid_db_value = 0 | 1 << 8 | 1 << 16; /* Error, 01h, Error log */
    Sqe aer = { .opc = 0x0c };
    uint64_t dbs;
    Cqe c;

    qtest_memset(qts, n->q[1].sq, 0, QDEPTH * 64);
    dbs = doorbell_buffer_config(n);
    submit(n, 0, &aer);

    /* SQ 1's shadow tail beyond the queue; one Flush rung through MMIO runs, alone */
    qtest_writel(qts, dbs + 8, 0x1000);
    g_assert_cmphex(run(n, 1, (Sqe){ .opc = 0x00, .nsid = 1 }).status, ==, 0);
    c = reap(n, 0);
    g_assert_cmpint(c.cid, ==, aer.cid);
    g_assert_cmphex(c.dw0, ==, invalid_db_value);
    g_usleep(50 * 1000);
    g_assert_false(cqe_ready(n, 1));

    /* the Error log read unmasks the event type; CQ 1's shadow head beyond the queue */
    g_assert_cmphex(run(n, 0, (Sqe){ .opc = 0x02, .nsid = 0xffffffff, .prp1 = n->buf,
                                     .cdw10 = 0x01 | 15 << 16 }).status, ==, 0);
    submit(n, 0, &aer);
    qtest_writel(qts, dbs + 8, n->q[1].tail + 1);
    qtest_writel(qts, dbs + 12, 0x1000);
    g_assert_cmphex(run(n, 1, (Sqe){ .opc = 0x00, .nsid = 1 }).status, ==, 0);
    c = reap(n, 0);
    g_assert_cmpint(c.cid, ==, aer.cid);
    g_assert_cmphex(c.dw0, ==, invalid_db_value);
    stop(n);
}

/* An I/O queue pair whose SQ and CQ ids may differ (the agent tests). */
typedef struct PairQueue {
    uint64_t sq, cq;            /* guest addresses of the rings */
    uint16_t sqid, cqid, size;  /* ids, entries in each ring */
    uint16_t tail, head, phase;
} PairQueue;

/* Creates CQ q->cqid (polled: interrupts off) and SQ q->sqid on it. */
static void create_pair(Nvme *n, PairQueue *q)
{
    qtest_memset(n->qs->qts, q->cq, 0, q->size * 16);
    g_assert_cmphex(run(n, 0, (Sqe){ .opc = 0x05, .prp1 = q->cq,
                                     .cdw10 = (q->size - 1) << 16 | q->cqid, .cdw11 = 1 }).status, ==, 0);
    g_assert_cmphex(run(n, 0, (Sqe){ .opc = 0x01, .prp1 = q->sq,
                                     .cdw10 = (q->size - 1) << 16 | q->sqid,
                                     .cdw11 = (uint32_t)q->cqid << 16 | 1 }).status, ==, 0);
    q->tail = q->head = 0;
    q->phase = 1;
}

/*
 * Writes cmd into q's ring and makes it the new tail: in the shadow doorbell at tail_at and,
 * when mmio is set, in the MMIO doorbell too (an agent never writes MMIO).
 */
static void pair_submit(Nvme *n, PairQueue *q, Sqe *cmd, uint64_t tail_at, bool mmio)
{
    cmd->cid = ++n->cid;
    qtest_memwrite(n->qs->qts, q->sq + q->tail * 64, cmd, sizeof(*cmd));
    q->tail = (q->tail + 1) % q->size;
    qtest_writel(n->qs->qts, tail_at, q->tail);
    if (mmio) {
        qpci_io_writel(n->dev, n->bar, 0x1000 + 8 * q->sqid, q->tail);
    }
}

/*
 * Waits for q's next completion (10 s at most), moving the virtual clock on by step_ns a
 * try (the agent poll runs on it), then writes the new head to head_at and, when mmio is
 * set, to the MMIO doorbell.
 */
static Cqe pair_reap(Nvme *n, PairQueue *q, int64_t step_ns, uint64_t head_at, bool mmio)
{
    Cqe cqe = wait_cqe(n, q->cq, q->head, q->phase, step_ns);

    q->head = (q->head + 1) % q->size;
    if (q->head == 0) {
        q->phase ^= 1;
    }
    qtest_writel(n->qs->qts, head_at, q->head);
    if (mmio) {
        qpci_io_writel(n->dev, n->bar, 0x1000 + 8 * q->cqid + 4, q->head);
    }
    return cqe;
}

/*
 * Doorbell Buffer Config after an agent queue pair (C8h, patch 0016) whose SQ and CQ ids
 * differ: agent SQ 2 on CQ 3, beside a normal SQ 3 on CQ 2. The config must skip the
 * agent's queues themselves, not the queues of their ids. Before (skipped by index), the
 * normal CQ 2 kept no shadow addresses — its head read from and its event index written to
 * guest address 0 — and the agent's CQ 3 got the shadow page's head, which nobody moves:
 * its pair stalled once the CQ filled. Here both pairs run three times round their rings,
 * and guest address 0 keeps what it held.
 */
static void test_agent_dbbuf_per_queue(void)
{
    Nvme *n = start(",agent-poll-us=10");
    QTestState *qts = n->qs->qts;
    uint64_t window = galloc(n, 3 * 4096), dbs = galloc(n, 4096), eis = galloc(n, 4096);
    uint64_t agent_db = window + 2 * 4096;   /* SQ tail, CQ head, SQ and CQ event index */
    PairQueue agent = { .sq = window, .cq = window + 4096, .sqid = 2, .cqid = 3, .size = 8 };
    PairQueue normal = { .sq = galloc(n, 8 * 64), .cq = galloc(n, 8 * 16),
                         .sqid = 3, .cqid = 2, .size = 8 };
    uint8_t canary[16], now[16];

    memset(canary, 0xa5, sizeof(canary));
    qtest_memwrite(qts, 0, canary, sizeof(canary));
    qtest_memset(qts, agent_db, 0, 16);
    create_pair(n, &normal);
    create_pair(n, &agent);
    /* reserved bits set: Invalid Field; no such queue: Invalid Queue Identifier */
    g_assert_cmphex(run(n, 0, (Sqe){ .opc = 0xc8, .prp1 = agent_db, .cdw10 = agent.sqid, .cdw11 = 1,
                                     .cdw12 = (uint32_t)window, .cdw13 = window >> 32,
                                     .cdw14 = 3 * 4096 }).status, ==, 0x2 | 0x4000);
    g_assert_cmphex(run(n, 0, (Sqe){ .opc = 0xc8, .prp1 = agent_db, .cdw10 = 9,
                                     .cdw12 = (uint32_t)window, .cdw13 = window >> 32,
                                     .cdw14 = 3 * 4096 }).status, ==, 0x101 | 0x4000);
    g_assert_cmphex(run(n, 0, (Sqe){ .opc = 0xc8, .prp1 = agent_db, .cdw10 = agent.sqid,
                                     .cdw12 = (uint32_t)window, .cdw13 = window >> 32,
                                     .cdw14 = 3 * 4096 }).status, ==, 0);
    qtest_memset(qts, dbs, 0, 4096);
    qtest_memset(qts, eis, 0, 4096);
    g_assert_cmphex(run(n, 0, (Sqe){ .opc = 0x7c, .prp1 = dbs, .prp2 = eis }).status, ==, 0);

    for (int i = 0; i < 3 * agent.size; i++) {
        Sqe flush = { .opc = 0x00, .nsid = 1 };
        Cqe c;

        pair_submit(n, &normal, &flush, dbs + 8 * normal.sqid, true);
        c = pair_reap(n, &normal, 1000, dbs + 8 * normal.cqid + 4, true);
        g_assert_cmpint(c.cid, ==, flush.cid);
        g_assert_cmphex(c.status >> 1, ==, 0);

        pair_submit(n, &agent, &flush, agent_db, false);
        c = pair_reap(n, &agent, 10 * 1000, agent_db + 4, false);
        g_assert_cmpint(c.cid, ==, flush.cid);
        g_assert_cmphex(c.status >> 1, ==, 0);
    }
    qtest_memread(qts, 0, now, sizeof(now));
    g_assert_cmpmem(now, sizeof(now), canary, sizeof(canary));
    stop(n);
}

/*
 * A controller reset with an Async Event Request outstanding and two Executes running,
 * while CQ 1's shadow head (Doorbell Buffer Config) lies beyond the queue. The reset drops
 * the AER (it has no AIOCB), then cancels the Executes one by one; waiting for the second
 * runs CQ 1's completion bottom half, which finds the invalid head and posts an event.
 * Stock hw/nvme still counted the dropped AER as outstanding and completed it: QEMU died
 * removing it from a list it was no longer on (found by the generic fuzzer; UBSan: member
 * access within null pointer). Patch 0009: the reset forgets the AERs it drops. After the
 * reset no stale event may complete a new AER, and the device still works.
 */
static void test_reset_event_after_aers_dropped(void)
{
    Nvme *n = start(",csd=on,csd.slm-size=64M,csd.compute-units=2");
    QTestState *qts = n->qs->qts;
    uint64_t dbs = doorbell_buffer_config(n);
    uint64_t r1[2] = { 0, 4096 };
    uint32_t crc = CSD_CKSUM_CRC32C;
    Sqe aer = { .opc = 0x0c };
    Sqe cmd = long_gemm(n);

    submit(n, 0, &aer);
    for (int i = 0; i < 2; i++) {
        qtest_writel(qts, dbs + 8, n->q[1].tail + 1);   /* SQ 1's shadow tail */
        submit(n, 1, &cmd);
    }
    g_usleep(50 * 1000);                /* both gemms are running, one per compute unit */
    qtest_writel(qts, dbs + 12, 0x1000); /* CQ 1's shadow head beyond the queue */
    disable(n);
    enable(n);

    submit(n, 0, &aer);
    g_assert_cmphex(run(n, 1, execute(n, CSD_PROG_CHECKSUM, 1, r1, &crc, 4)).status, ==, 0);
    g_usleep(50 * 1000);
    g_assert_false(cqe_ready(n, 0));    /* no event from before the reset */
    stop(n);
}

/* An SGL descriptor (16 bytes) at guest address at. */
static void sgl_desc(Nvme *n, uint64_t at, uint8_t type, uint64_t addr, uint32_t len)
{
    uint8_t d[16] = { 0 };

    memcpy(d, &addr, 8);
    memcpy(d + 8, &len, 4);
    d[15] = type;
    qtest_memwrite(n->qs->qts, at, d, 16);
}

/*
 * SGLs with more descriptors than the transfer has bytes, stock nvme behaviour that patch
 * 0010 changes. A 4 MiB segment of empty Data Blocks (zeroed memory), then a 1-byte Data
 * Block and a Segment descriptor pointing back to the start: an SLM Write of 64 bytes made
 * the controller read 4 MiB of descriptors 65 times over (a segment of 2^28 of them is 4
 * GiB; the generic fuzzer's inputs took 25-52 s each). Now a segment longer than the
 * transfer could need is refused before it is read: Invalid Number of SGL Descriptors.
 * An ordinary SGL (two Data Blocks in a Last Segment) still moves its bytes.
 */
static void test_sgl_descriptor_budget(void)
{
    Nvme *n = start(",csd=on,csd.slm-size=1M");
    QTestState *qts = n->qs->qts;
    const uint32_t seg = 4 << 20;
    uint64_t s = galloc(n, seg), data = n->buf + 8192;
    Sqe w = slm_xfer(CSD_OPC_SLM_WRITE, 0, 0, 64), r = slm_xfer(CSD_OPC_SLM_READ, n->buf, 0, 64);
    uint8_t out[64], in[64];
    gint64 t0;
    Cqe c;

    /* the ordinary SGL: 40 + 24 bytes from two places */
    for (int i = 0; i < 64; i++) {
        out[i] = 0xa0 + i;
    }
    qtest_memwrite(qts, data, out, 40);
    qtest_memwrite(qts, data + 1024, out + 40, 24);
    sgl_desc(n, n->buf + 4096, 0x00, data, 40);
    sgl_desc(n, n->buf + 4096 + 16, 0x00, data + 1024, 24);
    w.flags = 0x40;             /* PSDT 01b: SGL */
    w.prp1 = n->buf + 4096;     /* SGL1: a Last Segment of two descriptors */
    w.prp2 = 32 | (uint64_t)0x30 << 56;
    g_assert_cmphex(run(n, 1, w).status, ==, 0);
    g_assert_cmphex(run(n, 1, r).status, ==, 0);
    qtest_memread(qts, n->buf, in, 64);
    g_assert_cmpmem(in, 64, out, 64);

    /* 4 MiB of empty Data Blocks, one byte, and the segment again */
    qtest_memset(qts, s, 0, seg);
    sgl_desc(n, s + seg - 32, 0x00, data, 1);
    sgl_desc(n, s + seg - 16, 0x20, s, seg);
    w.prp1 = s;
    w.prp2 = (uint64_t)seg | (uint64_t)0x20 << 56;
    t0 = g_get_monotonic_time();
    c = run(n, 1, w);
    fprintf(stderr, "# sgl-descriptor-budget: %" PRId64 " us, status 0x%x\n",
            (int64_t)(g_get_monotonic_time() - t0), c.status);
    g_assert_cmphex(c.status, ==, 0x0e | CSD_STATUS_DNR);    /* Invalid Number of SGL Descriptors */
    stop(n);
}

/*
 * Set Features FDP Events (1Eh) for the broadcast NSID, stock nvme behaviour that patch
 * 0008 changes: refused with Invalid Namespace or Format, as Get Features answers. Before,
 * one such admin command from any guest aborted QEMU (assert(ns) in
 * nvme_set_feature_fdp_events; found by the generic fuzzer).
 */
static void test_set_fdp_events_broadcast(void)
{
    Nvme *n = start("");
    const uint16_t invalid_nsid = 0x0b | CSD_STATUS_DNR;

    g_assert_cmphex(run(n, 0, (Sqe){ .opc = 0x09, .nsid = 0xffffffff, .cdw10 = 0x1e }).status,
                    ==, invalid_nsid);
    g_assert_cmphex(run(n, 0, (Sqe){ .opc = 0x0a, .nsid = 0xffffffff, .cdw10 = 0x1e }).status,
                    ==, invalid_nsid);
    stop(n);
}

/*
 * The equivalence trace: one command sequence of both front ends (Identify Controller, the
 * NSID statuses, a Flush of every namespace, SLM Write, Read, Load, Store, Compare and Write
 * with a match and a miscompare and two at once, NVM Read, Execute and Execute Program, program activation, a range set, Memory Write / Read / Fill, a media program
 * (gather), three Executes at once on two compute units with the waiting one and a running
 * one aborted, error paths, the log pages C0h, C1h, 82h and 84h), each command and its
 * completion written to $CSD_EQUIV_TRACE when set. tests/host/csd-equivalence-replay runs
 * the same commands on the in-process device and compares every completion and every byte
 * read back.
 */
typedef struct EqTrace {
    Nvme *n;
    FILE *f;
} EqTrace;

static void eq_hex(FILE *f, const uint8_t *p, uint32_t len)
{
    if (!len) {
        fputs(" -", f);
        return;
    }
    fputc(' ', f);
    for (uint32_t i = 0; i < len; i++) {
        fprintf(f, "%02x", p[i]);
    }
}

/*
 * Runs s on queue q (0 admin, 1 I/O) with out_len bytes of out moved to the controller
 * and in_len bytes read back (both at most 8 KiB, n->buf), checks its status, traces both.
 */
static void eq_step(EqTrace *t, int q, Sqe s, const void *out, uint32_t out_len,
                    uint32_t in_len, uint16_t expect)
{
    g_autofree uint8_t *in = g_malloc0(in_len ? in_len : 1);
    Cqe c;

    g_assert_cmpuint(MAX(out_len, in_len), <=, 8192);
    if (out_len) {
        qtest_memwrite(t->n->qs->qts, t->n->buf, out, out_len);
    } else if (in_len) {
        qtest_memset(t->n->qs->qts, t->n->buf, 0, in_len);  /* what a failed command leaves */
    }
    if (out_len || in_len) {
        s.prp1 = t->n->buf;
        s.prp2 = t->n->buf + 4096;
    }
    c = run(t->n, q, s);
    if (in_len) {
        qtest_memread(t->n->qs->qts, t->n->buf, in, in_len);
    }
    if (t->f) {
        fprintf(t->f, "cmd %d %02x %u %u %u %u %u %u %u %u %u %u %u", q, s.opc, s.nsid,
                s.cdw2, s.cdw3, s.cdw10, s.cdw11, s.cdw12, s.cdw13, s.cdw14, s.cdw15,
                out_len, in_len);
        eq_hex(t->f, out, out_len);
        fprintf(t->f, "\ncqe %04x %08x %08x", c.status, c.dw0, c.dw1);
        eq_hex(t->f, in, in_len);
        fputc('\n', t->f);
        fflush(t->f);
    }
    g_assert_cmphex(c.status, ==, expect);
}

/*
 * Two commands of out_len bytes of out each in one doorbell on queue 1 (both in the
 * controller at once), traced in submission order as eq_step traces one: the result of
 * running them one after the other, which the in-process device's replay does.
 */
static void eq_pair(EqTrace *t, Sqe s, const void *out, uint32_t out_len, uint16_t expect0,
                    uint16_t expect1)
{
    Queue *q = &t->n->q[1];
    Sqe two[2];
    Cqe c[2];

    qtest_memwrite(t->n->qs->qts, t->n->buf, out, out_len);
    s.prp1 = t->n->buf;
    s.prp2 = t->n->buf + 4096;
    for (int i = 0; i < 2; i++) {
        two[i] = s;
        two[i].cid = ++t->n->cid;
        qtest_memwrite(t->n->qs->qts, q->sq + q->tail * 64, &two[i], sizeof(two[i]));
        q->tail = (q->tail + 1) % QDEPTH;
    }
    qpci_io_writel(t->n->dev, t->n->bar, 0x1000 + 8, q->tail);
    for (int i = 0; i < 2; i++) {
        Cqe e = reap(t->n, 1);

        e.status >>= 1;
        c[e.cid == two[0].cid ? 0 : 1] = e;
    }
    for (int i = 0; i < 2 && t->f; i++) {
        fprintf(t->f, "cmd 1 %02x %u %u %u %u %u %u %u %u %u %u 0", s.opc, s.nsid, s.cdw2,
                s.cdw3, s.cdw10, s.cdw11, s.cdw12, s.cdw13, s.cdw14, s.cdw15, out_len);
        eq_hex(t->f, out, out_len);
        fprintf(t->f, "\ncqe %04x %08x %08x -\n", c[i].status, c[i].dw0, c[i].dw1);
        fflush(t->f);
    }
    g_assert_cmphex(c[0].status, ==, expect0);
    g_assert_cmphex(c[1].status, ==, expect1);
}

/*
 * Commands s[0..nr) with their own out bytes, in one doorbell on queue 1 (all in the
 * controller at once), then an NVMe Abort of s[abort[i]] for each of nabort, then their
 * completions. Traced as "batch NR NABORT", the "abort I" lines, then each command and its
 * completion in submission order: the replay submits them all, aborts, then waits.
 */
static void eq_batch(EqTrace *t, int nr, Sqe *s, const uint8_t *const *out,
                     const uint32_t *out_len, int nabort, const int *abort,
                     const uint16_t *expect)
{
    Queue *q = &t->n->q[1];
    Cqe c[8];

    g_assert_cmpint(nr, <=, 8);
    for (int i = 0; i < nr; i++) {
        g_assert_cmpuint(out_len[i], <=, 4096);
        qtest_memwrite(t->n->qs->qts, t->n->buf + 4096 * i, out[i], out_len[i]);
        s[i].prp1 = t->n->buf + 4096 * i;
        s[i].cid = ++t->n->cid;
        qtest_memwrite(t->n->qs->qts, q->sq + q->tail * 64, &s[i], sizeof(s[i]));
        q->tail = (q->tail + 1) % QDEPTH;
    }
    qpci_io_writel(t->n->dev, t->n->bar, 0x1000 + 8, q->tail);
    for (int i = 0; i < nabort; i++) {
        Cqe a = run(t->n, 0, (Sqe){ .opc = 0x08, .cdw10 = 1 | (uint32_t)s[abort[i]].cid << 16 });

        g_assert_cmphex(a.status, ==, 0);
    }
    for (int i = 0; i < nr; i++) {
        Cqe e = reap(t->n, 1);
        int k = 0;

        while (k < nr && s[k].cid != e.cid) {
            k++;
        }
        g_assert_cmpint(k, <, nr);
        e.status >>= 1;
        c[k] = e;
    }
    if (t->f) {
        fprintf(t->f, "batch %d %d\n", nr, nabort);
        for (int i = 0; i < nabort; i++) {
            fprintf(t->f, "abort %d\n", abort[i]);
        }
    }
    for (int i = 0; i < nr && t->f; i++) {
        fprintf(t->f, "cmd 1 %02x %u %u %u %u %u %u %u %u %u %u 0", s[i].opc, s[i].nsid,
                s[i].cdw2, s[i].cdw3, s[i].cdw10, s[i].cdw11, s[i].cdw12, s[i].cdw13,
                s[i].cdw14, s[i].cdw15, out_len[i]);
        eq_hex(t->f, out[i], out_len[i]);
        fprintf(t->f, "\ncqe %04x %08x %08x -\n", c[i].status, c[i].dw0, c[i].dw1);
        fflush(t->f);
    }
    for (int i = 0; i < nr; i++) {
        g_assert_cmphex(c[i].status, ==, expect[i]);
    }
}

#define EQ_SLM (64 * 1024 * 1024)

static void test_equivalence_trace(void)
{
    const char *path = g_getenv("CSD_EQUIV_TRACE");
    EqTrace t = { .n = start(",csd=on,csd.slm-size=64M,csd.compute-units=2,csd.nvme-cs=on"),
                  .f = path ? fopen(path, "w") : NULL };
    uint8_t data[8192], d[256];
    struct csd_desc_header h = { .version = 1, .program_id = CSD_PROG_COPY, .nr_ranges = 2 };
    uint64_t ranges[4] = { 0, 4096, 16384, 4096 };
    struct {
        struct nvme_cs_mem_range r[2];
    } QEMU_PACKED inl = {
        .r = { { .nsid = 2, .len = 4096, .sb = 0 }, { .nsid = 2, .len = 4096, .sb = 32768 } },
    };
    const uint16_t dnr = CSD_STATUS_DNR;

    g_assert(!path || t.f);
    if (t.f) {
        fprintf(t.f, "# csd equivalence trace 2: slm=64M cu=2 nvme-cs, %d-byte LBAs, "
                "disk %d bytes of (i * 7 + i / 4096)\n", LBA, NS_BYTES);
    }
    for (int i = 0; i < 8192; i++) {
        data[i] = (uint8_t)(i * 13 + 5);
    }
    /*
     * The controller as a host first reads it (Identify Controller: the replay compares it
     * but for the fields the embeddings legitimately differ in), then the NSID rules of
     * QEMU's nvme_io_cmd and nvme_identify_ns: NSID 5 is in range with nothing attached
     * (Invalid Field; Identify: zeros), 0 and 300 are out of range (Invalid Namespace), a
     * Flush of FFFFFFFFh flushes every namespace.
     */
    eq_step(&t, 0, (Sqe){ .opc = 0x06, .cdw10 = 1 }, NULL, 0, 4096, 0);
    eq_step(&t, 0, (Sqe){ .opc = 0x06, .nsid = 5 }, NULL, 0, 4096, 0);
    eq_step(&t, 0, (Sqe){ .opc = 0x06, .nsid = 0 }, NULL, 0, 4096,
            CSD_STATUS_INVALID_NAMESPACE | dnr);
    eq_step(&t, 1, (Sqe){ .opc = 0x00, .nsid = 0xffffffff }, NULL, 0, 0, 0);
    eq_step(&t, 1, (Sqe){ .opc = 0x00, .nsid = 5 }, NULL, 0, 0, CSD_STATUS_INVALID_FIELD | dnr);
    eq_step(&t, 1, (Sqe){ .opc = 0x02, .nsid = 5, .cdw12 = 7 }, NULL, 0, 4096,
            CSD_STATUS_INVALID_FIELD | dnr);
    eq_step(&t, 1, (Sqe){ .opc = 0x02, .nsid = 0, .cdw12 = 7 }, NULL, 0, 4096,
            CSD_STATUS_INVALID_NAMESPACE | dnr);
    eq_step(&t, 1, (Sqe){ .opc = 0x02, .nsid = 300, .cdw12 = 7 }, NULL, 0, 4096,
            CSD_STATUS_INVALID_NAMESPACE | dnr);
    eq_step(&t, 1, (Sqe){ .opc = 0x02, .nsid = 0xffffffff, .cdw12 = 7 }, NULL, 0, 4096,
            CSD_STATUS_INVALID_NAMESPACE | dnr);
    eq_step(&t, 1, (Sqe){ .opc = CSD_OPC_SLM_WRITE, .nsid = 5, .cdw12 = 4096 }, data, 4096, 0,
            CSD_STATUS_INVALID_FIELD | dnr);
    /* vendor SLM Write, Read, Load, Store; out of bounds */
    eq_step(&t, 1, slm_xfer(CSD_OPC_SLM_WRITE, 0, 0, 4096), data, 4096, 0, 0);
    eq_step(&t, 1, slm_xfer(CSD_OPC_SLM_READ, 0, 0, 4096), NULL, 0, 4096, 0);
    eq_step(&t, 1, slm_lba(CSD_OPC_SLM_LOAD, 10, 8, 8192), NULL, 0, 0, 0);
    eq_step(&t, 1, slm_xfer(CSD_OPC_SLM_READ, 0, 8192, 4096), NULL, 0, 4096, 0);
    eq_step(&t, 1, slm_lba(CSD_OPC_SLM_STORE, 100, 8, 0), NULL, 0, 0, 0);
    eq_step(&t, 1, slm_xfer(CSD_OPC_SLM_READ, 0, EQ_SLM - 8, 16), NULL, 0, 16,
            CSD_STATUS_SLM_OUT_OF_BOUNDS | dnr);
    /* Compare and Write: a match writes, the same expected bytes then miscompare */
    for (int i = 0; i < 4 * LBA; i++) {
        int b = 2000 * LBA + i;

        data[i] = (uint8_t)(b * 7 + b / 4096);
        data[4 * LBA + i] = 0xA5;
    }
    eq_step(&t, 1, compare_write(t.n, 2000, 4), data, 8 * LBA, 0, 0);
    eq_step(&t, 1, compare_write(t.n, 2000, 4), data, 8 * LBA, 0,
            CSD_STATUS_COMPARE_FAILURE | dnr);
    eq_step(&t, 1, compare_write(t.n, NS_BYTES / LBA - 2, 4), data, 8 * LBA, 0,
            CSD_STATUS_LBA_OUT_OF_RANGE | dnr);
    /* two at once on the same LBAs: the second waits, then miscompares what the first wrote */
    memset(data, 0xA5, 4 * LBA);
    memset(data + 4 * LBA, 0x3C, 4 * LBA);
    eq_pair(&t, compare_write(t.n, 2000, 4), data, 8 * LBA, 0, CSD_STATUS_COMPARE_FAILURE | dnr);
    eq_step(&t, 1, (Sqe){ .opc = 0x02, .nsid = 1, .cdw10 = 2000, .cdw12 = 7 }, NULL, 0,
            8 * LBA, 0);
    eq_step(&t, 1, (Sqe){ .opc = 0x02, .nsid = 1, .cdw10 = 100, .cdw12 = 7 }, NULL, 0,
            8 * LBA, 0);
    /* the vendor No-Op: no glue of its own in either embedding */
    eq_step(&t, 1, (Sqe){ .opc = CSD_OPC_NOOP, .nsid = 1 }, NULL, 0, 0, 0);
    /* vendor Execute: copy, an unknown program */
    memcpy(h.magic, "CSDX", 4);
    memcpy(d, &h, 16);
    memcpy(d + 16, ranges, sizeof(ranges));
    eq_step(&t, 1, (Sqe){ .opc = CSD_OPC_EXECUTE, .nsid = 1, .cdw10 = 48 }, d, 48, 0, 0);
    eq_step(&t, 1, slm_xfer(CSD_OPC_SLM_READ, 0, 16384, 4096), NULL, 0, 4096, 0);
    d[6] = 0x30;    /* no program has this id */
    eq_step(&t, 1, (Sqe){ .opc = CSD_OPC_EXECUTE, .nsid = 1, .cdw10 = 48 }, d, 48, 0,
            CSD_STATUS_INVALID_PROGRAM | dnr);
    /* the standard front end: activation, Execute Program inline and through a range set */
    eq_step(&t, 0, (Sqe){ .opc = NVME_CS_ADM_PROGRAM_ACTIVATION,
                          .cdw10 = CSD_PROG_COPY | 1 << 16 }, NULL, 0, 0, 0);
    eq_step(&t, 1, (Sqe){ .opc = NVME_CS_EXECUTE_PROGRAM, .nsid = 3, .cdw2 = CSD_PROG_COPY,
                          .cdw3 = 2, .cdw15 = sizeof(inl) }, &inl, sizeof(inl), 0,
            NVME_CS_PROGRAM_NOT_ACTIVATED | dnr);
    eq_step(&t, 1, (Sqe){ .opc = CSD_OPC_EXECUTE, .nsid = 1, .cdw10 = 48 }, d, 48, 0,
            CSD_STATUS_INVALID_PROGRAM | dnr);
    d[6] = CSD_PROG_COPY;
    eq_step(&t, 1, (Sqe){ .opc = CSD_OPC_EXECUTE, .nsid = 1, .cdw10 = 48 }, d, 48, 0, 0);
    eq_step(&t, 0, (Sqe){ .opc = NVME_CS_ADM_PROGRAM_ACTIVATION, .cdw10 = CSD_PROG_COPY },
            NULL, 0, 0, 0);
    eq_step(&t, 1, (Sqe){ .opc = NVME_CS_EXECUTE_PROGRAM, .nsid = 3, .cdw2 = CSD_PROG_COPY,
                          .cdw3 = 2, .cdw15 = sizeof(inl) }, &inl, sizeof(inl), 0, 0);
    eq_step(&t, 0, (Sqe){ .opc = NVME_CS_ADM_MEMORY_RANGE_SET, .cdw11 = 1 }, &inl,
            sizeof(inl), 0, 0);
    eq_step(&t, 1, (Sqe){ .opc = NVME_CS_EXECUTE_PROGRAM, .nsid = 3,
                          .cdw2 = CSD_PROG_COPY | 1 << 16, .cdw3 = 2 }, NULL, 0, 0, 0);
    eq_step(&t, 0, (Sqe){ .opc = NVME_CS_ADM_MEMORY_RANGE_SET, .cdw10 = 5 << 16 | 1 },
            NULL, 0, 0, NVME_CS_INVALID_MEMORY_RANGE_SET_ID | dnr);
    /* Memory Write, Fill, Read of the memory namespace */
    eq_step(&t, 1, (Sqe){ .opc = NVME_CS_MEM_WRITE, .nsid = 2, .cdw10 = 40960, .cdw12 = 512 },
            data + 100, 512, 0, 0);
    eq_step(&t, 1, (Sqe){ .opc = NVME_CS_MEM_FILL, .nsid = 2, .cdw10 = 41216, .cdw12 = 64,
                          .cdw13 = 0xdeadbeef }, NULL, 0, 0, 0);
    eq_step(&t, 1, (Sqe){ .opc = NVME_CS_MEM_READ, .nsid = 2, .cdw10 = 40960, .cdw12 = 512 },
            NULL, 0, 512, 0);
    eq_step(&t, 1, (Sqe){ .opc = NVME_CS_MEM_READ, .nsid = 2, .cdw10 = 32768, .cdw12 = 4096 },
            NULL, 0, 4096, 0);
    /* a media program: gather reads two pieces of the namespace (the core's reads, through
     * the port), then one past the namespace's end is refused before any read */
    {
        struct csd_gather_entry es[2] = { { 3, 10, 100 }, { 40, 0, 512 } };
        struct csd_gather_params gp = { 2, 0 };
        uint64_t gr[4] = { 65536, sizeof(es), 69632, 612 };
        uint32_t len;

        eq_step(&t, 1, slm_xfer(CSD_OPC_SLM_WRITE, 0, 65536, sizeof(es)), es, sizeof(es), 0, 0);
        len = descriptor(d, CSD_PROG_GATHER, 2, gr, &gp, sizeof(gp));
        eq_step(&t, 1, (Sqe){ .opc = CSD_OPC_EXECUTE, .nsid = 1, .cdw10 = len }, d, len, 0, 0);
        eq_step(&t, 1, slm_xfer(CSD_OPC_SLM_READ, 0, 69632, 612), NULL, 0, 612, 0);
        es[1].lba = NS_BYTES / LBA;
        eq_step(&t, 1, slm_xfer(CSD_OPC_SLM_WRITE, 0, 65536, sizeof(es)), es, sizeof(es), 0, 0);
        eq_step(&t, 1, (Sqe){ .opc = CSD_OPC_EXECUTE, .nsid = 1, .cdw10 = len }, d, len, 0,
                CSD_STATUS_LBA_OUT_OF_RANGE | dnr);
    }
    /*
     * Three Executes at once on two compute units: two long gemms take them, a checksum
     * waits. An Abort of the waiting one ends it at once (its program never runs: C1h
     * below), an Abort of the second gemm stops it at its next check; the first ends.
     */
    {
        struct csd_gemm_params g = { 2048, 2048, 2048, 0, 1.0f, 0.0f };
        uint64_t l1[6] = { 0, 16 << 20, 16 << 20, 16 << 20, 32 << 20, 16 << 20 };
        uint64_t l2[6] = { 0, 16 << 20, 16 << 20, 16 << 20, 48 << 20, 16 << 20 };
        uint64_t r1[2] = { 0, 4096 };
        uint32_t crc = CSD_CKSUM_CRC32C;
        uint8_t da[3][CSD_MAX_DESC_LEN];
        const uint8_t *outs[3] = { da[0], da[1], da[2] };
        uint32_t lens[3];
        Sqe s[3];
        const int aborts[2] = { 2, 1 };
        const uint16_t want[3] = { 0, CSD_STATUS_ABORT_REQUESTED, CSD_STATUS_ABORT_REQUESTED };

        lens[0] = descriptor(da[0], CSD_PROG_GEMM, 3, l1, &g, sizeof(g));
        lens[1] = descriptor(da[1], CSD_PROG_GEMM, 3, l2, &g, sizeof(g));
        lens[2] = descriptor(da[2], CSD_PROG_CHECKSUM, 1, r1, &crc, sizeof(crc));
        for (int i = 0; i < 3; i++) {
            s[i] = (Sqe){ .opc = CSD_OPC_EXECUTE, .nsid = 1, .cdw10 = lens[i] };
        }
        eq_batch(&t, 3, s, outs, lens, 2, aborts, want);
    }
    /* the log pages: capabilities, statistics, Program List, Memory Range Set List */
    eq_step(&t, 0, (Sqe){ .opc = 0x02, .nsid = 0xffffffff,
                          .cdw10 = CSD_LOG_CAPABILITIES | 1023 << 16 }, NULL, 0, 4096, 0);
    eq_step(&t, 0, (Sqe){ .opc = 0x02, .nsid = 0xffffffff,
                          .cdw10 = NVME_CS_LOG_PROGRAM_LIST | 1023 << 16 }, NULL, 0, 4096, 0);
    eq_step(&t, 0, (Sqe){ .opc = 0x02, .nsid = 0xffffffff,
                          .cdw10 = NVME_CS_LOG_MEMORY_RANGE_SETS | 1023 << 16 }, NULL, 0,
            4096, 0);
    eq_step(&t, 0, (Sqe){ .opc = 0x02, .nsid = 0xffffffff,
                          .cdw10 = CSD_LOG_STATISTICS | (CSD_LOG_STATS_SIZE / 4 - 1) << 16 },
            NULL, 0, CSD_LOG_STATS_SIZE, 0);
    if (t.f) {
        fclose(t.f);
    }
    stop(t.n);
}

/* CRC-16 T10-DIF (polynomial 8BB7h, MSB first): the guard of a protection information tuple. */
static uint16_t crc_t10dif(const uint8_t *p, size_t n)
{
    uint16_t crc = 0;

    for (size_t i = 0; i < n; i++) {
        crc ^= (uint16_t)(p[i] << 8);
        for (int b = 0; b < 8; b++) {
            crc = crc & 0x8000 ? (uint16_t)(crc << 1) ^ 0x8BB7 : (uint16_t)(crc << 1);
        }
    }
    return crc;
}

#define PRINFO_PRACT   (1u << 29)
#define PRINFO_GUARD   (1u << 28)
#define PRINFO_REFTAG  (1u << 26)

/* An NVM Read (02h) or Write (01h) of one LBA of namespace nsid with PRINFO bits, its
 * reference tag (ILBRT) the LBA's low 32 bits; mptr: a separate metadata buffer or 0. */
static Sqe nvm_rw(Nvme *n, uint8_t opc, uint32_t nsid, uint64_t slba, uint32_t prinfo, uint64_t mptr)
{
    return (Sqe){ .opc = opc, .nsid = nsid, .prp1 = n->buf, .mptr = mptr, .cdw10 = (uint32_t)slba,
                  .cdw11 = (uint32_t)(slba >> 32), .cdw12 = prinfo, .cdw14 = (uint32_t)slba };
}

/*
 * Issue 40 item 4: on a namespace formatted with protection information (type 1, 8 bytes of
 * separate metadata) and on one with extended metadata (8 bytes after each LBA's data), the
 * command set moves no blocks it would write without their metadata or read past it: SLM
 * Load and Store, Compare and Write, Copy format 4h, Memory Copy from it and a gather
 * answer Invalid Namespace or Format and leave the namespace as it was; NVM Read and Write
 * stay QEMU's own (PRACT makes a PI tuple whose guard is the data's CRC-16 and whose
 * reference tag is the LBA; a Read naming another reference tag is Invalid Protection
 * Information, one of a block whose tuple is wrong End-to-end Guard Check Error).
 */
static void test_metadata_formats(void)
{
    g_autofree char *pfile = NULL, *xfile = NULL, *opts = NULL;
    int pfd = g_file_open_tmp("csd-pi-XXXXXX", &pfile, NULL);
    int xfd = g_file_open_tmp("csd-xmeta-XXXXXX", &xfile, NULL);
    const char *files[2];
    uint8_t data[LBA + 8], got[LBA + 8], pi[8];
    struct csd_gather_entry ent = { .lba = 2, .offset = 0, .length = 16 };
    struct csd_gather_params gp = { 1, 0 };
    uint64_t gr[4] = { 0, sizeof(ent), 4096, 16 };
    struct nvme_cs_mem_range mem = { .nsid = 4, .len = LBA, .sb = 0 };
    struct nvme_cs_copy_src src = { .slba = 2, .nlb = 0 };
    QTestState *qts;
    Nvme *n;

    g_assert_cmpint(ftruncate(pfd, 1024 * 1024), ==, 0);
    g_assert_cmpint(ftruncate(xfd, 1024 * 1024), ==, 0);
    close(pfd);
    close(xfd);
    files[0] = pfile;
    files[1] = xfile;
    /* NSID 1: the plain namespace; 2: PI type 1; 3: extended metadata; memory 4, compute 5 */
    opts = g_strdup_printf(",csd=on,csd.slm-size=1M,csd.nvme-cs=on,csd.nvme-cs.mem-nsid=4"
                           " -drive id=p0,if=none,file=%s,format=raw"
                           " -device nvme-ns,drive=p0,nsid=2,ms=8,pi=1"
                           " -drive id=x0,if=none,file=%s,format=raw"
                           " -device nvme-ns,drive=x0,nsid=3,ms=8,mset=1", pfile, xfile);
    n = start(opts);
    qts = n->qs->qts;
    for (int i = 0; i < (int)sizeof(data); i++) {
        data[i] = (uint8_t)(i * 11 + 3);
    }
    qtest_memwrite(qts, n->buf, &ent, sizeof(ent));
    g_assert_cmphex(run(n, 1, slm_xfer(CSD_OPC_SLM_WRITE, n->buf, 0, sizeof(ent))).status, ==, 0);
    for (uint32_t nsid = 2; nsid <= 3; nsid++) {
        Sqe s;

        /* SLM Load and Store */
        s = slm_lba(CSD_OPC_SLM_LOAD, 2, 1, 8192);
        s.nsid = nsid;
        g_assert_cmphex(run(n, 1, s).status, ==, CSD_STATUS_INVALID_NAMESPACE | CSD_STATUS_DNR);
        s = slm_lba(CSD_OPC_SLM_STORE, 2, 1, 8192);
        s.nsid = nsid;
        g_assert_cmphex(run(n, 1, s).status, ==, CSD_STATUS_INVALID_NAMESPACE | CSD_STATUS_DNR);
        /* Compare and Write of zeros (what the namespace holds) with new bytes */
        qtest_memset(qts, n->buf, 0, 2 * LBA);
        qtest_memset(qts, n->buf + LBA, 0x5a, LBA);
        s = compare_write(n, 2, 1);
        s.nsid = nsid;
        g_assert_cmphex(run(n, 1, s).status, ==, CSD_STATUS_INVALID_NAMESPACE | CSD_STATUS_DNR);
        /* the standard front end: Copy format 4h into it, Memory Copy from it */
        qtest_memwrite(qts, n->buf, &mem, sizeof(mem));
        g_assert_cmphex(run(n, 1, (Sqe){ .opc = NVME_CS_NVM_COPY, .nsid = nsid, .prp1 = n->buf,
                                         .cdw10 = 2,
                                         .cdw12 = NVME_CS_COPY_FORMAT_MEMORY << 8 }).status,
                        ==, CSD_STATUS_INVALID_NAMESPACE | CSD_STATUS_DNR);
        src.snsid = nsid;
        qtest_memwrite(qts, n->buf, &src, sizeof(src));
        g_assert_cmphex(run(n, 1, (Sqe){ .opc = NVME_CS_MEM_COPY, .nsid = 4, .prp1 = n->buf,
                                         .cdw10 = 8192,
                                         .cdw12 = NVME_CS_COPY_FORMAT_2 << 8 }).status,
                        ==, CSD_STATUS_INVALID_NAMESPACE | CSD_STATUS_DNR);
        /* a gather of its LBA 2 */
        s = execute(n, CSD_PROG_GATHER, 2, gr, &gp, sizeof(gp));
        s.nsid = nsid;
        g_assert_cmphex(run(n, 1, s).status, ==, CSD_STATUS_INVALID_NAMESPACE | CSD_STATUS_DNR);
    }
    /* nothing was written: both files still all zeros */
    g_assert_cmphex(run(n, 1, (Sqe){ .opc = 0x00, .nsid = 0xffffffff }).status, ==, 0);
    for (int f = 0; f < 2; f++) {
        g_autofree gchar *file = NULL;
        gsize flen;

        g_assert(g_file_get_contents(files[f], &file, &flen, NULL));
        for (gsize i = 0; i < flen; i++) {
            g_assert_cmpint(file[i], ==, 0);
        }
    }

    /* NVM Write and Read stay QEMU's: PRACT makes the tuple, a Read checks it */
    qtest_memwrite(qts, n->buf, data, LBA);
    g_assert_cmphex(run(n, 1, nvm_rw(n, 0x01, 2, 5, PRINFO_PRACT | PRINFO_GUARD | PRINFO_REFTAG, 0)).status,
                    ==, 0);
    qtest_memset(qts, n->buf, 0, LBA);
    g_assert_cmphex(run(n, 1, nvm_rw(n, 0x02, 2, 5, PRINFO_PRACT | PRINFO_GUARD | PRINFO_REFTAG, 0)).status,
                    ==, 0);
    qtest_memread(qts, n->buf, got, LBA);
    g_assert_cmpmem(got, LBA, data, LBA);
    g_assert_cmphex(run(n, 1, nvm_rw(n, 0x02, 2, 5, 0, n->buf + 8192)).status, ==, 0);
    qtest_memread(qts, n->buf + 8192, pi, sizeof(pi));
    g_assert_cmphex(pi[0] << 8 | pi[1], ==, crc_t10dif(data, LBA));
    g_assert_cmphex((uint32_t)pi[4] << 24 | pi[5] << 16 | pi[6] << 8 | pi[7], ==, 5);
    {
        Sqe wrong = nvm_rw(n, 0x02, 2, 5, PRINFO_GUARD | PRINFO_REFTAG, n->buf + 8192);
        const uint8_t bad[8] = { 0x12, 0x34, 0, 0, 0, 0, 0, 6 };  /* a guard that is no CRC */

        wrong.cdw14 = 6;    /* a reference tag that is not the LBA: Invalid Protection Information */
        g_assert_cmphex(run(n, 1, wrong).status, ==, 0x0181 | CSD_STATUS_DNR);
        /* a block written with a bad tuple (no PRACT, no checks) fails the guard check */
        qtest_memwrite(qts, n->buf, data, LBA);
        qtest_memwrite(qts, n->buf + 8192, bad, sizeof(bad));
        g_assert_cmphex(run(n, 1, nvm_rw(n, 0x01, 2, 6, 0, n->buf + 8192)).status, ==, 0);
        g_assert_cmphex(code(run(n, 1, nvm_rw(n, 0x02, 2, 6, PRINFO_PRACT | PRINFO_GUARD | PRINFO_REFTAG, 0))),
                        ==, 0x0282);
    }
    /* extended LBAs: the 8 bytes of metadata travel after the data */
    qtest_memwrite(qts, n->buf, data, sizeof(data));
    g_assert_cmphex(run(n, 1, nvm_rw(n, 0x01, 3, 7, 0, 0)).status, ==, 0);
    qtest_memset(qts, n->buf, 0, sizeof(data));
    g_assert_cmphex(run(n, 1, nvm_rw(n, 0x02, 3, 7, 0, 0)).status, ==, 0);
    qtest_memread(qts, n->buf, got, sizeof(got));
    g_assert_cmpmem(got, sizeof(got), data, sizeof(data));
    stop(n);
    unlink(pfile);
    unlink(xfile);
}

static void test_csd_off(void)
{
    Nvme *n = start("");
    uint8_t page[4096];

    g_assert_cmphex(run(n, 1, slm_xfer(CSD_OPC_SLM_WRITE, n->buf, 0, 4)).status,
                    ==, CSD_STATUS_INVALID_OPCODE | CSD_STATUS_DNR);
    g_assert_cmphex(run(n, 1, slm_lba(CSD_OPC_SLM_LOAD, 0, 1, 0)).status,
                    ==, CSD_STATUS_INVALID_OPCODE | CSD_STATUS_DNR);
    g_assert_cmphex(run(n, 1, (Sqe){ .opc = CSD_OPC_EXECUTE, .nsid = 1, .prp1 = n->buf,
                                     .cdw10 = 32 }).status,
                    ==, CSD_STATUS_INVALID_OPCODE | CSD_STATUS_DNR);
    g_assert_cmphex(code(run(n, 0, (Sqe){ .opc = 0x02, .nsid = 0xffffffff, .prp1 = n->buf,
                                          .cdw10 = CSD_LOG_CAPABILITIES | 1023 << 16 })),
                    ==, CSD_STATUS_INVALID_FIELD);
    g_assert_cmphex(run(n, 0, (Sqe){ .opc = 0x06, .prp1 = n->buf, .cdw10 = 1 }).status, ==, 0);
    qtest_memread(n->qs->qts, n->buf, page, 4096);
    g_assert_cmpmem(page + CSD_ID_VS_OFFSET, 4, "\0\0\0\0", 4);
    stop(n);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    qtest_add_func("/csd/identify-and-logs", test_identify_and_logs);
    qtest_add_func("/csd/slm-write-read", test_slm_write_read);
    qtest_add_func("/csd/slm-load-store", test_slm_load_store);
    qtest_add_func("/csd/execute", test_execute);
    qtest_add_func("/csd/program-load", test_program_load);
    qtest_add_func("/csd/reset-with-queued-executes", test_reset_with_queued_executes);
    qtest_add_func("/csd/delete-sq-with-executes", test_delete_sq_with_executes);
    qtest_add_func("/csd/reset-fetches-no-more-commands", test_reset_fetches_no_more_commands);
    qtest_add_func("/csd/reset-starts-no-queued-execute", test_reset_starts_no_queued_execute);
    qtest_add_func("/csd/reset-stops-a-bounced-transfer", test_reset_stops_a_bounced_transfer);
    qtest_add_func("/csd/compare-write", test_compare_write);
    qtest_add_func("/csd/backing-store-failure", test_backing_store_failure);
    qtest_add_func("/csd/slm-pieces-failure-and-reset", test_slm_pieces_failure_and_reset);
    qtest_add_func("/csd/timing-model", test_timing_model);
    qtest_add_func("/csd/timing-model-abort-held", test_timing_model_abort_held);
    qtest_add_func("/csd/nvme-cs", test_nvme_cs);
    qtest_add_func("/csd/nvme-cs-copy", test_nvme_cs_copy);
    qtest_add_func("/csd/nvme-cs-statuses", test_nvme_cs_statuses);
    qtest_add_func("/csd/nvme-cs-activation-both-front-ends", test_nvme_cs_activation_both_front_ends);
    qtest_add_func("/csd/nvme-cs-command-effects", test_nvme_cs_command_effects);
    qtest_add_func("/csd/nvme-cs-zoned-copy", test_nvme_cs_zoned_copy);
    qtest_add_func("/csd/dbbuf-invalid-value", test_dbbuf_invalid_value);
    qtest_add_func("/csd/reset-event-after-aers-dropped", test_reset_event_after_aers_dropped);
    qtest_add_func("/csd/agent-dbbuf-per-queue", test_agent_dbbuf_per_queue);
    qtest_add_func("/csd/sgl-descriptor-budget", test_sgl_descriptor_budget);
    qtest_add_func("/csd/set-fdp-events-broadcast", test_set_fdp_events_broadcast);
    qtest_add_func("/csd/equivalence-trace", test_equivalence_trace);
    qtest_add_func("/csd/csd-off", test_csd_off);
    qtest_add_func("/csd/metadata-formats", test_metadata_formats);
    return g_test_run();
}
