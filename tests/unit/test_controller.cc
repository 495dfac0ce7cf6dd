// SPDX-License-Identifier: MIT
// The controller (csd_core_submit) through a port made of a host buffer: what it answers
// itself, what it leaves to the embedding (CSD_CORE_NOT_MINE), Execute's queueing on the
// compute units, the standard front end's namespace rule, and that each command is
// counted once.
#include "core_fixture.h"
#include "csd_config.h"
#include "nvme_cs.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <tuple>

namespace {

// The host memory of one command and the one NVM namespace (NSID 1) of kCtx.
struct HostBuffer {
    std::vector<uint8_t> data;
};

uint16_t from_host(void *req, void *buf, uint64_t len)
{
    auto *h = static_cast<HostBuffer *>(req);
    if (len > h->data.size()) return CSD_STATUS_INVALID_FIELD | CSD_STATUS_DNR;
    std::memcpy(buf, h->data.data(), len);
    return 0;
}

uint16_t to_host(void *req, const void *buf, uint64_t len)
{
    auto *h = static_cast<HostBuffer *>(req);
    if (len > h->data.size()) return CSD_STATUS_INVALID_FIELD | CSD_STATUS_DNR;
    std::memcpy(h->data.data(), buf, len);
    return 0;
}

int ns_info(void *, uint32_t nsid, csd_ctx *ctx)
{
    if (nsid != 1) return -1;
    *ctx = csd_ctx{1u << 20, 512, 8u << 20, 0};
    return 0;
}

uint64_t now_ns(void *) { return 0; }

class Controller : public CoreTest {
protected:
    csd_port port{from_host, to_host, ns_info, now_ns, nullptr, 8u << 20, 1};
    csd_cpl cpl{};
    csd_op op{};

    uint16_t submit(HostBuffer &h, uint8_t opcode, uint32_t nsid, uint32_t cdw10, uint32_t cdw11, uint32_t cdw12,
                    bool admin = false, uint32_t cdw13 = 0)
    {
        csd_sqe sqe{};
        sqe.cmd = csd_cmd{opcode, nsid, cdw10, cdw11, cdw12, cdw13, 0, 0};
        sqe.admin = admin;
        return csd_core_submit(core, &sqe, &port, &h, &cpl, &op);
    }
};

// MDTS is the port's alone: an NVM namespace's context carries port->max_transfer whatever
// ns_info leaves in it (QEMU's changes with CC.MPS; ns_info here says 8 MiB).
TEST_F(Controller, TheTransferLimitIsThePorts)
{
    HostBuffer in{std::vector<uint8_t>(8192, 0x5A)};
    port.max_transfer = 4096;
    EXPECT_EQ(submit(in, CSD_OPC_SLM_WRITE, 1, 0, 0, 8192), CSD_STATUS_INVALID_FIELD | CSD_STATUS_DNR);
    EXPECT_EQ(submit(in, CSD_OPC_SLM_WRITE, 1, 0, 0, 4096), 0);
    port.max_transfer = 0;  // no limit
    EXPECT_EQ(submit(in, CSD_OPC_SLM_WRITE, 1, 0, 0, 8192), 0);
}

TEST_F(Controller, SlmWriteAndReadAnsweredAndCountedOnce)
{
    HostBuffer in{std::vector<uint8_t>(4096, 0x5A)}, out{std::vector<uint8_t>(4096)};
    EXPECT_EQ(submit(in, CSD_OPC_SLM_WRITE, 1, 8192, 0, 4096), 0);
    EXPECT_EQ(submit(out, CSD_OPC_SLM_READ, 1, 8192, 0, 4096), 0);
    EXPECT_EQ(out.data, in.data);
    EXPECT_EQ(counter(CSD_STAT_SLM_WRITE_CMDS), 1u);
    EXPECT_EQ(counter(CSD_STAT_BYTES_HOST_TO_SLM), 4096u);
    EXPECT_EQ(counter(CSD_STAT_BYTES_SLM_TO_HOST), 4096u);
    // a host buffer shorter than the command: the transfer's error, no bytes counted
    HostBuffer small{std::vector<uint8_t>(16)};
    EXPECT_EQ(CSD_STATUS_CODE(submit(small, CSD_OPC_SLM_READ, 1, 0, 0, 4096)), CSD_STATUS_INVALID_FIELD);
    EXPECT_EQ(counter(CSD_STAT_BYTES_SLM_TO_HOST), 4096u);
    EXPECT_EQ(counter(CSD_STAT_SLM_READ_CMDS), 2u);
}

TEST_F(Controller, StandardNamespacesAreTheMemoryOneAndTheNext)
{
    EXPECT_EQ(csd_core_cs_csi(core, 2), 0);  // off
    csd_core_cs_attach(core, 5);
    EXPECT_EQ(csd_core_cs_csi(core, 4), 0);
    EXPECT_EQ(csd_core_cs_csi(core, 5), NVME_CS_CSI_SLM);
    EXPECT_EQ(csd_core_cs_csi(core, 6), NVME_CS_CSI_CP);
    EXPECT_EQ(csd_core_cs_csi(core, 7), 0);
    // Identify's descriptor list of the compute namespace: its CSI
    HostBuffer page{std::vector<uint8_t>(4096)};
    EXPECT_EQ(submit(page, 0x06, 6, 0x03, 0, 0, true), 0);
    EXPECT_EQ(page.data[4], NVME_CS_CSI_CP);
    EXPECT_EQ(submit(page, 0x06, 1, 0x03, 0, 0, true), CSD_CORE_NOT_MINE);  // an NVM namespace's
    // Memory Fill of the memory namespace, then an opcode it does not have
    EXPECT_EQ(submit(page, NVME_CS_MEM_FILL, 5, 0, 0, 64), 0);
    EXPECT_EQ(CSD_STATUS_CODE(submit(page, 0x09, 5, 0, 0, 0)), CSD_STATUS_INVALID_OPCODE);
    EXPECT_EQ(CSD_STATUS_CODE(submit(page, NVME_CS_MEM_COPY, 5, 0, 0, 0)), NVME_CS_INCOMPATIBLE_NS_OR_FORMAT);  // format 0h
}

TEST_F(Controller, VendorNoOpAnswersTheVersionAndTouchesNothing)
{
    HostBuffer none;
    ASSERT_EQ(submit(none, CSD_OPC_NOOP, 1, 0xFFFFFFFF, 0, 0), 0);
    EXPECT_EQ(cpl.dw0, CSD_LOG_VERSION);
    EXPECT_TRUE(csd_is_io_opcode(CSD_OPC_NOOP));
    EXPECT_FALSE(csd_opcode_changes_lbas(CSD_OPC_NOOP));
    for (int i = 0; i < CSD_STAT_COUNT; i++) EXPECT_EQ(counter(i), 0u) << csd_stat_names[i];
    EXPECT_EQ(submit(none, CSD_OPC_NOOP, 9, 0, 0, 0), CSD_STATUS_INVALID_NAMESPACE | CSD_STATUS_DNR);
}

// Issue 29: vendor-io=off (an option of the core's table) is the core's: the vendor data
// and program commands answer Invalid Opcode, Compare and Write and the logs stay.
TEST_F(Controller, VendorIoOffRefusesTheVendorDataAndProgramCommands)
{
    csd_config cfg;
    csd_config_init(&cfg, "", CSD_OPTION_EMU);
    char why[256];
    ASSERT_EQ(csd_config_set(&cfg, "vendor-io", "off", why, sizeof why), 0) << why;
    ASSERT_EQ(csd_config_finish(&cfg, why, sizeof why), 0) << why;
    csd_core *dflt = core;
    core = csd_core_new_config(&cfg, why, sizeof why);
    ASSERT_NE(core, nullptr) << why;
    HostBuffer h{std::vector<uint8_t>(4096)};
    EXPECT_EQ(submit(h, CSD_OPC_NOOP, 1, 0, 0, 0), CSD_STATUS_INVALID_OPCODE | CSD_STATUS_DNR);
    EXPECT_EQ(submit(h, CSD_OPC_SLM_WRITE, 1, 0, 0, 4096), CSD_STATUS_INVALID_OPCODE | CSD_STATUS_DNR);
    EXPECT_EQ(submit(h, CSD_OPC_EXECUTE, 1, 16, 0, 0), CSD_STATUS_INVALID_OPCODE | CSD_STATUS_DNR);
    EXPECT_EQ(submit(h, CSD_OPC_COMPARE_WRITE, 1, 0xFFFFFFFF, 0xFFFFFFFF, 0), CSD_STATUS_LBA_OUT_OF_RANGE | CSD_STATUS_DNR)
        << "Compare and Write stays";
    EXPECT_EQ(submit(h, 0x02, 0, CSD_LOG_STATISTICS | (1023u << 16), 0, 0, true), CSD_STATUS_SUCCESS);
    for (int i = 0; i < CSD_STAT_COUNT; i++) EXPECT_EQ(counter(i), 0u) << csd_stat_names[i];
    csd_core_free(core);
    csd_config_clear(&cfg);
    core = dflt;
    EXPECT_EQ(submit(h, CSD_OPC_SLM_WRITE, 1, 0, 0, 4096), CSD_STATUS_SUCCESS) << "on by default";
}

// Issue 29: where the standard front end's namespaces go is the core's rule, for both
// embeddings: the NSID asked for, else the first after every one in use; both free and
// within the controller's NSIDs.
TEST_F(Controller, TheStandardNamespacesGoAfterTheTakenOnes)
{
    struct Taken {
        std::vector<uint32_t> nsids;
        static int is(void *o, uint32_t nsid)
        {
            const auto &v = static_cast<Taken *>(o)->nsids;
            return std::find(v.begin(), v.end(), nsid) != v.end();
        }
    };
    auto attach = [&](const char *mem_nsid, Taken taken, uint32_t max, std::string *why) {
        csd_config cfg;
        csd_config_init(&cfg, "csd.", CSD_OPTION_QEMU);
        char err[256] = "";
        EXPECT_EQ(csd_config_set(&cfg, "nvme-cs", "on", err, sizeof err), 0) << err;
        if (mem_nsid) EXPECT_EQ(csd_config_set(&cfg, "nvme-cs.mem-nsid", mem_nsid, err, sizeof err), 0) << err;
        csd_core_cs_attach(core, 0);
        const int rc = csd_core_cs_attach_config(core, &cfg, max, Taken::is, &taken, err, sizeof err);
        *why = err;
        csd_config_clear(&cfg);
        return rc == 0 ? csd_core_cs_mem_nsid(core) : 0u;
    };
    std::string why;
    EXPECT_EQ(attach(nullptr, Taken{{1}}, 256, &why), 2u);
    EXPECT_EQ(attach(nullptr, Taken{{1, 4}}, 256, &why), 5u) << "after the last one in use, not in a gap";
    EXPECT_EQ(csd_core_cs_csi(core, 6), NVME_CS_CSI_CP);
    EXPECT_EQ(attach("7", Taken{{1}}, 256, &why), 7u);
    EXPECT_EQ(attach("1", Taken{{1}}, 256, &why), 0u);
    EXPECT_EQ(why, "csd.nvme-cs.mem-nsid: NSIDs 1 and 2 must be free and at most 256");
    EXPECT_EQ(attach(nullptr, Taken{{254}}, 256, &why), 255u) << why;
    EXPECT_EQ(attach(nullptr, Taken{{255}}, 256, &why), 0u) << "no room for both after NSID 255";
    EXPECT_EQ(why, "csd.nvme-cs.mem-nsid: NSIDs 256 and 257 must be free and at most 256");
    EXPECT_EQ(csd_core_cs_mem_nsid(core), 0u) << "left off";
    csd_config off;
    csd_config_init(&off, "", CSD_OPTION_EMU);
    char err[64];
    EXPECT_EQ(csd_core_cs_attach_config(core, &off, 256, Taken::is, nullptr, err, sizeof err), 0) << "nvme-cs off";
    EXPECT_EQ(csd_core_cs_mem_nsid(core), 0u);
    csd_config_clear(&off);
}

// Issue 41: the core reads a submission queue entry as it lies in the queue (QEMU's glue
// hands it the 64 bytes), and refuses fused commands of the standard namespaces itself.
TEST_F(Controller, TheCoreReadsTheSubmissionEntryAndRefusesFusedStandardCommands)
{
    uint8_t e[64] = {};
    const auto put = [&e](unsigned dw, uint32_t v) { for (int i = 0; i < 4; i++) e[4 * dw + i] = uint8_t(v >> 8 * i); };
    e[0] = NVME_CS_MEM_FILL;
    e[1] = 0x01;  // FUSE: first of a fused pair
    put(1, 5);
    for (unsigned dw = 2; dw <= 4; dw++) put(dw, 0x1000u * dw + 1);
    for (unsigned dw = 10; dw <= 15; dw++) put(dw, 0x01020300u + dw);
    csd_sqe sqe;
    csd_core_read_sqe(e, 1, &sqe);
    EXPECT_EQ(sqe.cmd.opcode, NVME_CS_MEM_FILL);
    EXPECT_EQ(sqe.cmd.nsid, 5u);
    EXPECT_EQ(sqe.cdw2, 0x2001u);
    EXPECT_EQ(sqe.cdw3, 0x3001u);
    EXPECT_EQ(sqe.cdw4, 0x4001u);
    EXPECT_EQ(sqe.cmd.cdw10, 0x0102030Au);
    EXPECT_EQ(sqe.cmd.cdw15, 0x0102030Fu);
    EXPECT_EQ(sqe.admin, 1);
    EXPECT_EQ(sqe.fuse, 1);
    csd_core_read_sqe(e, 0, &sqe);
    csd_core_cs_attach(core, 5);
    HostBuffer none;
    EXPECT_EQ(csd_core_submit(core, &sqe, &port, &none, &cpl, &op), CSD_STATUS_INVALID_FIELD) << "fused";
    sqe.cmd = csd_cmd{NVME_CS_MEM_FILL, 5, 0, 0, 64, 0, 0, 0};  // as MemoryAndComputeNamespaces' fill
    sqe.cdw2 = sqe.cdw3 = sqe.cdw4 = 0;
    EXPECT_EQ(csd_core_submit(core, &sqe, &port, &none, &cpl, &op), CSD_STATUS_INVALID_FIELD) << "still fused";
    sqe.fuse = 0;
    EXPECT_EQ(csd_core_submit(core, &sqe, &port, &none, &cpl, &op), CSD_STATUS_SUCCESS);
}

// Issue 41: the effects of the memory and compute command sets' I/O commands (log 05h) are
// the core's tables while its standard front end is on, none otherwise.
TEST_F(Controller, TheStandardCommandSetsEffectsAreTheCoresWhileTheFrontEndIsOn)
{
    EXPECT_EQ(csd_core_cs_effects(core, NVME_CS_CSI_SLM), nullptr) << "front end off";
    csd_core_cs_attach(core, 2);
    uint32_t mem[256], cp[256];
    csd_core_cs_io_effects(NVME_CS_CSI_SLM, mem);
    csd_core_cs_io_effects(NVME_CS_CSI_CP, cp);
    ASSERT_NE(csd_core_cs_effects(core, NVME_CS_CSI_SLM), nullptr);
    EXPECT_EQ(std::memcmp(csd_core_cs_effects(core, NVME_CS_CSI_SLM), mem, sizeof mem), 0);
    EXPECT_EQ(std::memcmp(csd_core_cs_effects(core, NVME_CS_CSI_CP), cp, sizeof cp), 0);
    EXPECT_EQ(csd_core_cs_effects(core, 0x00), nullptr) << "the NVM command set: the embedding's";
}

// Issue 29: the Commands Supported and Effects entries the command sets add (log 05h).
TEST(Effects, TheVendorOpcodesAndTheStandardAdminCommands)
{
    csd_config cfg;
    csd_config_init(&cfg, "csd.", CSD_OPTION_QEMU);
    std::vector<uint32_t> acs(256, 0), nvm(256, 0);
    csd_config_effects(&cfg, acs.data(), nvm.data());
    EXPECT_EQ(nvm[CSD_OPC_SLM_STORE], NVME_CS_EFFECTS_CSUPP | NVME_CS_EFFECTS_LBCC);
    EXPECT_EQ(nvm[CSD_OPC_COMPARE_WRITE], NVME_CS_EFFECTS_CSUPP | NVME_CS_EFFECTS_LBCC);
    EXPECT_EQ(nvm[CSD_OPC_SLM_LOAD], NVME_CS_EFFECTS_CSUPP);
    EXPECT_EQ(nvm[CSD_OPC_NOOP], NVME_CS_EFFECTS_CSUPP);
    EXPECT_EQ(nvm[0x02], 0u) << "NVM Read is not the command set's";
    EXPECT_EQ(acs[NVME_CS_ADM_LOAD_PROGRAM], 0u) << "the standard front end off";
    char err[64];
    ASSERT_EQ(csd_config_set(&cfg, "nvme-cs", "on", err, sizeof err), 0);
    ASSERT_EQ(csd_config_set(&cfg, "vendor", "off", err, sizeof err), 0);
    std::fill(nvm.begin(), nvm.end(), 0u);
    csd_config_effects(&cfg, acs.data(), nvm.data());
    EXPECT_EQ(std::count(nvm.begin(), nvm.end(), 0u), 256) << "no vendor opcodes";
    EXPECT_EQ(acs[NVME_CS_ADM_LOAD_PROGRAM], NVME_CS_EFFECTS_CSUPP);
    EXPECT_EQ(acs[NVME_CS_ADM_PROGRAM_ACTIVATION], NVME_CS_EFFECTS_CSUPP);
    EXPECT_EQ(acs[NVME_CS_ADM_MEMORY_RANGE_SET], NVME_CS_EFFECTS_CSUPP);
    csd_config_clear(&cfg);
}

// Issue 29: the fields of Identify that the command sets own, for both embeddings.
TEST_F(Controller, IdentifyFieldsOfTheCommandSets)
{
    std::vector<uint8_t> id(4096, 0);
    csd_core_identify_ctrl(core, id.data());
    EXPECT_EQ(std::memcmp(id.data() + CSD_ID_VS_OFFSET, CSD_ID_SIGNATURE, 4), 0);
    uint8_t vec[8] = {1};
    csd_core_cs_iocs_vector(core, vec);
    EXPECT_EQ(vec[0], 1) << "the standard front end off: NVM only";
    csd_core_cs_attach(core, 2);
    csd_core_cs_iocs_vector(core, vec);
    EXPECT_EQ(vec[0], 1 | NVME_CS_IOCS_VEC_SLM | NVME_CS_IOCS_VEC_CP);
    csd_core_set_vendor(core, 0);
    csd_core_identify_ctrl(core, id.data());
    EXPECT_EQ(std::memcmp(id.data() + CSD_ID_VS_OFFSET, "\0\0\0\0", 4), 0) << "no CSD1 signature without the vendor set";
}

// A namespace whose I/O ends only when the test says so (as QEMU's block layer ends it
// later, from its main loop): Compare and Write's ordering, seen one I/O at a time.
struct SlowNamespace {
    std::vector<uint8_t> bytes = std::vector<uint8_t>(64 * 512);
    struct Io {
        bool write;
        uint64_t off;
        void *buf;
        uint64_t len;
        csd_io_done done;
        void *arg;
    };
    std::vector<Io> pending;
    std::vector<std::pair<void *, uint16_t>> completed;  // (request, status), in order

    // Ends the oldest pending I/O (moves its bytes).
    void step()
    {
        ASSERT_FALSE(pending.empty());
        Io io = pending.front();
        pending.erase(pending.begin());
        if (io.write) std::memcpy(bytes.data() + io.off, io.buf, io.len);
        else std::memcpy(io.buf, bytes.data() + io.off, io.len);
        io.done(io.arg, 0);
    }
};

SlowNamespace *g_ns;

void slow_io(void *, uint32_t, int write, uint64_t off, void *buf, uint64_t len, csd_io_done done, void *arg)
{
    g_ns->pending.push_back({write != 0, off, buf, len, done, arg});
}

void slow_complete(void *req, uint16_t status, const csd_cpl *) { g_ns->completed.push_back({req, status}); }

class CompareWrite : public Controller {
protected:
    SlowNamespace ns;

    void SetUp() override
    {
        Controller::SetUp();
        g_ns = &ns;
        port.ns_io = slow_io;
        port.complete = slow_complete;
    }

    // Host data of a Compare and Write of nlb LBAs: expected bytes, then new bytes.
    static HostBuffer caw_data(uint32_t nlb, uint8_t expect, uint8_t now)
    {
        HostBuffer h{std::vector<uint8_t>(2 * nlb * 512, expect)};
        std::memset(h.data.data() + nlb * 512, now, nlb * 512);
        return h;
    }
};

TEST_F(CompareWrite, AnOverlappingOneWaitsAndComparesWhatTheFirstWrote)
{
    HostBuffer a = caw_data(4, 0x00, 0xA5), b = caw_data(4, 0x00, 0x5A), c = caw_data(2, 0x00, 0x77);
    ASSERT_EQ(submit(a, CSD_OPC_COMPARE_WRITE, 1, 0, 0, 3), CSD_CORE_LATER);   // LBAs 0-3
    ASSERT_EQ(submit(b, CSD_OPC_COMPARE_WRITE, 1, 2, 0, 3), CSD_CORE_LATER);   // 2-5: waits
    ASSERT_EQ(submit(c, CSD_OPC_COMPARE_WRITE, 1, 10, 0, 1), CSD_CORE_LATER);  // 10-11: runs
    ASSERT_EQ(ns.pending.size(), 2u);  // the reads of a and c, none of b
    ns.step();                         // a's read: a match, its write starts
    ASSERT_EQ(ns.pending.size(), 2u);
    EXPECT_TRUE(ns.pending[1].write);
    ns.step();  // c's read
    ns.step();  // a's write: a completes, b reads now
    ASSERT_EQ(ns.completed.size(), 1u);
    EXPECT_EQ(ns.completed[0], std::make_pair(static_cast<void *>(&a), uint16_t{0}));
    while (!ns.pending.empty()) ns.step();
    ASSERT_EQ(ns.completed.size(), 3u);
    // b expected zeroes where a wrote A5h: Compare Failure, nothing written
    EXPECT_EQ(ns.completed[2], std::make_pair(static_cast<void *>(&b), uint16_t{CSD_STATUS_COMPARE_FAILURE | CSD_STATUS_DNR}));
    EXPECT_EQ(ns.bytes[4 * 512], 0);
    EXPECT_EQ(ns.bytes[2 * 512], 0xA5);
    EXPECT_EQ(ns.bytes[10 * 512], 0x77);
}

TEST_F(CompareWrite, AWaiterCancelledEndsAtOnceAndLetsTheNextRun)
{
    HostBuffer a = caw_data(4, 0x00, 0xA5), b = caw_data(4, 0xA5, 0x11), c = caw_data(1, 0x00, 0x22);
    ASSERT_EQ(submit(a, CSD_OPC_COMPARE_WRITE, 1, 0, 0, 3), CSD_CORE_LATER);
    ASSERT_EQ(submit(b, CSD_OPC_COMPARE_WRITE, 1, 0, 0, 3), CSD_CORE_LATER);  // behind a
    ASSERT_EQ(submit(c, CSD_OPC_COMPARE_WRITE, 1, 5, 0, 0), CSD_CORE_LATER);  // LBA 5: free, runs
    EXPECT_EQ(ns.pending.size(), 2u);
    EXPECT_EQ(csd_core_cancel(core, &a), 0);  // its read is under way: the embedding cancels it
    EXPECT_EQ(csd_core_cancel(core, &b), 1);
    ASSERT_EQ(ns.completed.size(), 1u);
    EXPECT_EQ(ns.completed[0].second, CSD_STATUS_ABORT_REQUESTED);
    while (!ns.pending.empty()) ns.step();
    EXPECT_EQ(ns.completed.size(), 3u);
    EXPECT_EQ(ns.bytes[0], 0xA5);  // b never wrote
    // a short host buffer: the transfer's error at once, nothing read
    HostBuffer short_buf{std::vector<uint8_t>(512)};
    EXPECT_EQ(CSD_STATUS_CODE(submit(short_buf, CSD_OPC_COMPARE_WRITE, 1, 0, 0, 3)), CSD_STATUS_INVALID_FIELD);
    EXPECT_TRUE(ns.pending.empty());
}

TEST_F(CompareWrite, SlmLoadAndStoreMoveThroughThePortsNamespaceIo)
{
    HostBuffer none;
    std::memset(ns.bytes.data() + 2 * 512, 0x6B, 4 * 512);
    ASSERT_EQ(submit(none, CSD_OPC_SLM_LOAD, 1, 2, 0, 3, false, 8192), CSD_CORE_LATER);  // LBAs 2-5 -> SLM 8192
    ASSERT_EQ(ns.pending.size(), 1u);
    EXPECT_FALSE(ns.pending[0].write);
    EXPECT_EQ(ns.pending[0].off, 2u * 512);
    EXPECT_EQ(counter(CSD_STAT_BYTES_NS_TO_SLM), 0u);  // counted as it ends
    ns.step();
    ASSERT_EQ(ns.completed.size(), 1u);
    EXPECT_EQ(ns.completed[0].second, 0);
    EXPECT_EQ(csd_core_slm_base(core)[8192], 0x6B);
    EXPECT_EQ(counter(CSD_STAT_BYTES_NS_TO_SLM), 4u * 512);
    // a Store whose write fails: the error, no bytes counted
    ASSERT_EQ(submit(none, CSD_OPC_SLM_STORE, 1, 20, 0, 0, false, 8192), CSD_CORE_LATER);
    SlowNamespace::Io io = ns.pending.at(0);
    ns.pending.clear();
    io.done(io.arg, CSD_STATUS_INTERNAL_ERROR);
    EXPECT_EQ(ns.completed.at(1).second, CSD_STATUS_INTERNAL_ERROR);
    EXPECT_EQ(counter(CSD_STAT_BYTES_SLM_TO_NS), 0u);
    EXPECT_EQ(counter(CSD_STAT_SLM_STORE_CMDS), 1u);
}


// A port whose compute units and namespace reads run only when the test says so (as QEMU's
// thread pool and block layer end them later, from its main loop): Execute's queueing.
struct ManualUnits {
    struct Job {
        void *req;
        int (*work)(void *);
        void (*done)(void *, int);
        void *arg;
    };
    std::vector<Job> jobs;        // handed to the embedding's workers, in order
    std::vector<void *> stopped;  // requests whose queue is being deleted (startable: 0)

    // Runs the index-th job handed out and ends it (work, then done).
    void finish(size_t index = 0)
    {
        ASSERT_LT(index, jobs.size());
        Job j = jobs[index];
        jobs.erase(jobs.begin() + static_cast<long>(index));
        j.done(j.arg, j.work(j.arg));
    }
};

ManualUnits *g_units;

void manual_run(void *req, int (*work)(void *), void (*done)(void *, int), void *arg)
{
    g_units->jobs.push_back({req, work, done, arg});
}

int manual_startable(void *req)
{
    return std::find(g_units->stopped.begin(), g_units->stopped.end(), req) == g_units->stopped.end();
}

class ExecQueue : public CompareWrite {
protected:
    ManualUnits units;

    void SetUp() override
    {
        CompareWrite::SetUp();  // a core of 2 compute units
        g_units = &units;
        port.run = manual_run;
        port.startable = manual_startable;
    }

    // A copy of 64 bytes from SLM offset 0 to off (a program of its own id, counted in C1h).
    static HostBuffer copy_to(uint64_t off)
    {
        return HostBuffer{make_descriptor(CSD_PROG_COPY, {{0, 64}, {off, 64}}, nullptr, 0)};
    }
    uint16_t exec(HostBuffer &h) { return submit(h, CSD_OPC_EXECUTE, 1, static_cast<uint32_t>(h.data.size()), 0, 0); }
    uint64_t runs(uint16_t program)
    {
        std::vector<uint8_t> page(CSD_LOG_MAX_SIZE);
        uint32_t avail = 0;
        EXPECT_EQ(csd_core_get_log(core, CSD_LOG_STATISTICS, 0, 0, page.data(), &avail), 0);
        uint64_t v;
        std::memcpy(&v, page.data() + CSD_STATS_PER_PROGRAM_OFFSET + 8 * program, 8);
        return v;
    }
};

TEST_F(ExecQueue, ExecutesTakeTheComputeUnitsFirstComeFirstServed)
{
    HostBuffer a = copy_to(4096), b = copy_to(8192), c = copy_to(12288), d = copy_to(16384);
    ASSERT_EQ(exec(a), CSD_CORE_LATER);
    ASSERT_EQ(exec(b), CSD_CORE_LATER);
    ASSERT_EQ(exec(c), CSD_CORE_LATER);  // both units busy: it waits
    ASSERT_EQ(exec(d), CSD_CORE_LATER);
    ASSERT_EQ(units.jobs.size(), 2u);
    EXPECT_EQ(units.jobs[0].req, &a);
    EXPECT_EQ(units.jobs[1].req, &b);
    units.finish(1);  // b ends: its unit goes to c, the first that waits
    ASSERT_EQ(ns.completed.size(), 1u);
    EXPECT_EQ(ns.completed[0], std::make_pair(static_cast<void *>(&b), uint16_t{0}));
    ASSERT_EQ(units.jobs.size(), 2u);
    EXPECT_EQ(units.jobs[1].req, &c);
    while (!units.jobs.empty()) units.finish();
    EXPECT_EQ(ns.completed.size(), 4u);
    EXPECT_EQ(counter(CSD_STAT_EXEC_CMDS), 4u);
    EXPECT_EQ(counter(CSD_STAT_EXEC_ERRORS), 0u);
    EXPECT_EQ(runs(CSD_PROG_COPY), 4u);
}

TEST_F(ExecQueue, ACancelledWaiterNeverRunsAndARunningOneStops)
{
    HostBuffer a = copy_to(4096), b = copy_to(8192), c = copy_to(12288);
    ASSERT_EQ(exec(a), CSD_CORE_LATER);
    ASSERT_EQ(exec(b), CSD_CORE_LATER);
    ASSERT_EQ(exec(c), CSD_CORE_LATER);
    EXPECT_EQ(csd_core_cancel(core, &c), 1);  // waiting: ends at once
    ASSERT_EQ(ns.completed.size(), 1u);
    EXPECT_EQ(ns.completed[0], std::make_pair(static_cast<void *>(&c), uint16_t{CSD_STATUS_ABORT_REQUESTED}));
    EXPECT_EQ(csd_core_cancel(core, &a), 0);  // running: asked to stop, ends with its run
    units.finish(0);
    ASSERT_EQ(ns.completed.size(), 2u);
    EXPECT_EQ(ns.completed[1].second, CSD_STATUS_ABORT_REQUESTED);  // as the waiter's: no DNR
    units.finish(0);
    EXPECT_EQ(ns.completed[2], std::make_pair(static_cast<void *>(&b), uint16_t{0}));
    EXPECT_EQ(counter(CSD_STAT_EXEC_ERRORS), 2u);
    EXPECT_EQ(runs(CSD_PROG_COPY), 2u);  // c never ran
    EXPECT_EQ(csd_core_cancel(core, &b), 0);  // done: nothing to cancel
}

TEST_F(ExecQueue, AWaiterOfAStoppedQueueTakesNoUnit)
{
    HostBuffer a = copy_to(4096), b = copy_to(8192), c = copy_to(12288), d = copy_to(16384);
    for (HostBuffer *h : {&a, &b, &c, &d}) ASSERT_EQ(exec(*h), CSD_CORE_LATER);
    units.stopped.push_back(&c);
    units.finish(0);  // a ends: c may not start, d does
    ASSERT_EQ(units.jobs.size(), 2u);
    EXPECT_EQ(units.jobs[1].req, &d);
    EXPECT_EQ(csd_core_cancel(core, &c), 1);
    while (!units.jobs.empty()) units.finish();
    EXPECT_EQ(runs(CSD_PROG_COPY), 3u);
}

TEST_F(ExecQueue, AMediaProgramReadsThroughThePortOnItsUnit)
{
    // gather of two pieces of LBAs 3 and 40 into SLM 8192
    csd_gather_entry es[2] = {{3, 10, 100}, {40, 0, 512}};
    std::memcpy(csd_core_slm_base(core), es, sizeof es);
    for (size_t i = 0; i < ns.bytes.size(); i++) ns.bytes[i] = static_cast<uint8_t>(i * 7);
    const csd_gather_params gp{2, 0};
    HostBuffer g{make_descriptor(CSD_PROG_GATHER, {{0, sizeof es}, {8192, 612}}, &gp, sizeof gp)};
    HostBuffer a = copy_to(4096), b = copy_to(12288);
    ASSERT_EQ(exec(a), CSD_CORE_LATER);
    ASSERT_EQ(exec(b), CSD_CORE_LATER);
    ASSERT_EQ(exec(g), CSD_CORE_LATER);
    EXPECT_TRUE(ns.pending.empty()) << "no unit yet: nothing read";
    units.finish(0);
    // issue 40: its plan (entries copied, checked, sorted) is made on its unit, a worker
    EXPECT_TRUE(ns.pending.empty()) << "not planned yet";
    ASSERT_EQ(units.jobs.size(), 2u);
    EXPECT_EQ(units.jobs[1].req, &g);
    units.finish(1);
    ASSERT_EQ(ns.pending.size(), 2u);  // its two blocks, read through the port
    EXPECT_FALSE(ns.pending[0].write);
    EXPECT_EQ(ns.pending[0].off, 3u * 512);
    EXPECT_EQ(ns.pending[1].off, 40u * 512);
    ASSERT_EQ(units.jobs.size(), 1u);  // b
    ns.step();
    ns.step();
    ASSERT_EQ(units.jobs.size(), 2u);  // the gather's program, once read
    units.finish(1);
    ASSERT_EQ(ns.completed.back(), std::make_pair(static_cast<void *>(&g), uint16_t{0}));
    const uint8_t *out = csd_core_slm_base(core) + 8192;
    EXPECT_EQ(0, std::memcmp(out, ns.bytes.data() + 3 * 512 + 10, 100));
    EXPECT_EQ(0, std::memcmp(out + 100, ns.bytes.data() + 40 * 512, 512));
    units.finish(0);
}

TEST_F(ExecQueue, AMediaReadErrorEndsTheProgramUnrun)
{
    csd_gather_entry e{3, 0, 512};
    std::memcpy(csd_core_slm_base(core), &e, sizeof e);
    const csd_gather_params gp{1, 0};
    HostBuffer g{make_descriptor(CSD_PROG_GATHER, {{0, sizeof e}, {8192, 512}}, &gp, sizeof gp)};
    ASSERT_EQ(exec(g), CSD_CORE_LATER);
    units.finish(0);  // its plan
    ASSERT_EQ(ns.pending.size(), 1u);
    auto io = ns.pending[0];
    ns.pending.clear();
    io.done(io.arg, CSD_STATUS_INTERNAL_ERROR);
    ASSERT_EQ(units.jobs.size(), 1u);
    units.finish(0);
    ASSERT_EQ(ns.completed.size(), 1u);
    EXPECT_EQ(CSD_STATUS_CODE(ns.completed[0].second), CSD_STATUS_CODE(CSD_STATUS_INTERNAL_ERROR));
    EXPECT_EQ(counter(CSD_STAT_EXEC_ERRORS), 1u);
}

// Issue 40: what NSID 1 is now, as the embedding answers ns_info (detached, formatted).
struct NsNow {
    bool attached = true;
    uint32_t lba_size = 512;
    uint32_t metadata = 0;
} g_ns_now;

int ns_info_now(void *, uint32_t nsid, csd_ctx *ctx)
{
    if (nsid != 1 || !g_ns_now.attached) return -1;
    *ctx = csd_ctx{(64u * 512) / g_ns_now.lba_size, g_ns_now.lba_size, 8u << 20, 0, g_ns_now.metadata};
    return 0;
}

// Issue 40: a command that waited re-checks its namespace before any I/O; the LBA window.
class NamespaceChanges : public ExecQueue {
protected:
    void SetUp() override
    {
        ExecQueue::SetUp();
        g_ns_now = NsNow{};
        port.ns_info = ns_info_now;
    }
    // A gather of the entries (placed at SLM 0) into SLM 8192.
    HostBuffer gather(const std::vector<csd_gather_entry> &es, uint64_t out_len)
    {
        std::memcpy(csd_core_slm_base(core), es.data(), es.size() * sizeof es[0]);
        const csd_gather_params gp{static_cast<uint32_t>(es.size()), 0};
        return HostBuffer{make_descriptor(CSD_PROG_GATHER, {{0, es.size() * sizeof es[0]}, {8192, out_len}}, &gp,
                                          sizeof gp)};
    }
    // An Execute with an LBA window (CDW11 bit 0, CDW12-13 first LBA, CDW14-15 LBAs).
    uint16_t exec_window(HostBuffer &h, uint64_t first, uint64_t n)
    {
        csd_sqe sqe{};
        sqe.cmd = csd_cmd{CSD_OPC_EXECUTE, 1, static_cast<uint32_t>(h.data.size()), CSD_EXEC_LBA_WINDOW,
                          static_cast<uint32_t>(first), static_cast<uint32_t>(first >> 32), static_cast<uint32_t>(n),
                          static_cast<uint32_t>(n >> 32)};
        return csd_core_submit(core, &sqe, &port, &h, &cpl, &op);
    }
    // The status request req completed with (FFFFh: none yet).
    uint16_t status_of(const void *req) const
    {
        for (const auto &c : ns.completed) {
            if (c.first == req) return c.second;
        }
        return 0xFFFF;
    }
    // Runs every read and unit job handed out until none is left.
    void drain()
    {
        while (!ns.pending.empty() || !units.jobs.empty()) {
            if (!ns.pending.empty()) ns.step();
            else units.finish(0);
        }
    }
};

TEST_F(NamespaceChanges, AGatherWaitingForAUnitWhileItsNamespaceIsDetachedReadsNothing)
{
    HostBuffer a = copy_to(4096), b = copy_to(12288), g = gather({{3, 0, 512}}, 512);
    ASSERT_EQ(exec(a), CSD_CORE_LATER);
    ASSERT_EQ(exec(b), CSD_CORE_LATER);
    ASSERT_EQ(exec(g), CSD_CORE_LATER);  // waits for a unit
    g_ns_now.attached = false;           // nvme detach-ns
    units.finish(0);                     // a ends: g takes the unit
    EXPECT_TRUE(ns.pending.empty()) << "a detached namespace is not read";
    drain();
    ASSERT_EQ(ns.completed.size(), 3u);
    EXPECT_EQ(status_of(&g), CSD_STATUS_INVALID_NAMESPACE | CSD_STATUS_DNR);
}

TEST_F(NamespaceChanges, AGatherWaitingWhileItsNamespaceIsFormattedReadsNothing)
{
    HostBuffer a = copy_to(4096), b = copy_to(12288), g = gather({{3, 0, 512}}, 512);
    for (HostBuffer *h : {&a, &b, &g}) ASSERT_EQ(exec(*h), CSD_CORE_LATER);
    g_ns_now.lba_size = 4096;  // nvme format --lbaf to 4 KiB blocks
    units.finish(0);
    EXPECT_TRUE(ns.pending.empty()) << "LBA 3 of 512 B is not LBA 3 of 4 KiB";
    drain();
    EXPECT_EQ(status_of(&g), CSD_STATUS_INVALID_NAMESPACE | CSD_STATUS_DNR);
}

// Found by the outside review: a format that keeps the LBA size but adds metadata (512 + 8,
// PI type 1) under a waiting command.
TEST_F(NamespaceChanges, CommandsWaitingWhileTheirNamespaceGainsMetadataMoveNothing)
{
    HostBuffer a = copy_to(4096), b = copy_to(12288), g = gather({{3, 0, 512}}, 512);
    for (HostBuffer *h : {&a, &b, &g}) ASSERT_EQ(exec(*h), CSD_CORE_LATER);
    HostBuffer c1 = caw_data(4, 0x00, 0xA5), c2 = caw_data(4, 0xA5, 0x11);
    ASSERT_EQ(submit(c1, CSD_OPC_COMPARE_WRITE, 1, 0, 0, 3), CSD_CORE_LATER);
    ASSERT_EQ(submit(c2, CSD_OPC_COMPARE_WRITE, 1, 0, 0, 3), CSD_CORE_LATER);  // behind c1
    ns.step();                 // c1's read
    g_ns_now.metadata = 8;     // nvme format --lbaf=1 --pi=1: still 512-byte LBAs
    units.finish(0);           // g takes a unit: its plan
    drain();
    EXPECT_EQ(status_of(&g), CSD_STATUS_INVALID_NAMESPACE | CSD_STATUS_DNR);
    EXPECT_EQ(status_of(&c2), CSD_STATUS_INVALID_NAMESPACE | CSD_STATUS_DNR);
    EXPECT_EQ(ns.bytes[0], 0xA5) << "c1's write was under way; c2 wrote nothing";
}

TEST_F(NamespaceChanges, ACompareAndWriteWaitingWhileItsNamespaceIsDetachedWritesNothing)
{
    HostBuffer a = caw_data(4, 0x00, 0xA5), b = caw_data(4, 0xA5, 0x11);
    ASSERT_EQ(submit(a, CSD_OPC_COMPARE_WRITE, 1, 0, 0, 3), CSD_CORE_LATER);
    ASSERT_EQ(submit(b, CSD_OPC_COMPARE_WRITE, 1, 0, 0, 3), CSD_CORE_LATER);  // behind a
    ns.step();  // a's read
    g_ns_now.attached = false;
    ns.step();  // a's write (under way before the detach) ends: b would run now
    EXPECT_TRUE(ns.pending.empty()) << "b neither reads nor writes a detached namespace";
    ASSERT_EQ(ns.completed.size(), 2u);
    EXPECT_EQ(ns.completed[1], std::make_pair(static_cast<void *>(&b), uint16_t{CSD_STATUS_INVALID_NAMESPACE | CSD_STATUS_DNR}));
    EXPECT_EQ(ns.bytes[0], 0xA5);
}

TEST_F(NamespaceChanges, AnLbaWindowMakesTheProgramsLbasRelativeAndBoundsThem)
{
    for (size_t i = 0; i < ns.bytes.size(); i++) ns.bytes[i] = static_cast<uint8_t>(i / 512);  // each block its LBA
    HostBuffer g = gather({{3, 0, 512}}, 512);
    ASSERT_EQ(exec_window(g, 16, 16), CSD_CORE_LATER);  // LBAs 16..31
    units.finish(0);  // its plan
    ASSERT_EQ(ns.pending.size(), 1u);
    EXPECT_EQ(ns.pending[0].off, 19u * 512) << "the window's LBA 3";
    drain();
    EXPECT_EQ(ns.completed.back(), std::make_pair(static_cast<void *>(&g), uint16_t{0}));
    EXPECT_EQ(csd_core_slm_base(core)[8192], 19);
    // past the window's end, though inside the namespace: LBA Out of Range, nothing read
    HostBuffer past = gather({{3, 0, 8}, {16, 0, 8}}, 16);
    ASSERT_EQ(exec_window(past, 16, 16), CSD_CORE_LATER);
    units.finish(0);  // its plan
    EXPECT_TRUE(ns.pending.empty());
    drain();
    EXPECT_EQ(ns.completed.back(), std::make_pair(static_cast<void *>(&past), uint16_t{CSD_STATUS_LBA_OUT_OF_RANGE | CSD_STATUS_DNR}));
    // a byte past the window through an offset
    HostBuffer off = gather({{15, 512, 1}}, 1);
    ASSERT_EQ(exec_window(off, 16, 16), CSD_CORE_LATER);
    drain();
    EXPECT_EQ(ns.completed.back().second, CSD_STATUS_LBA_OUT_OF_RANGE | CSD_STATUS_DNR);
    // the window itself: inside the namespace (64 LBAs), not empty
    HostBuffer w1 = gather({{0, 0, 8}}, 8), w2 = w1;
    EXPECT_EQ(exec_window(w1, 60, 5), CSD_STATUS_LBA_OUT_OF_RANGE | CSD_STATUS_DNR);
    EXPECT_EQ(exec_window(w2, 0, 0), CSD_STATUS_INVALID_FIELD | CSD_STATUS_DNR);
    HostBuffer wrap = w1;
    EXPECT_EQ(exec_window(wrap, ~0ull, 2), CSD_STATUS_LBA_OUT_OF_RANGE | CSD_STATUS_DNR);
    // a program that reads no namespace ignores it
    HostBuffer c = copy_to(4096);
    ASSERT_EQ(exec_window(c, 16, 16), CSD_CORE_LATER);
    drain();
    EXPECT_EQ(ns.completed.back(), std::make_pair(static_cast<void *>(&c), uint16_t{0}));
}

TEST_F(NamespaceChanges, EmbeddingBagsTableIsRelativeToTheWindow)
{
    const float row[4] = {1, 2, 3, 4};
    std::memcpy(ns.bytes.data() + 20 * 512, row, sizeof row);  // the window's LBA 4
    const int64_t idx = 0, offs = 0;
    std::memcpy(csd_core_slm_base(core), &idx, 8);
    std::memcpy(csd_core_slm_base(core) + 64, &offs, 8);
    csd_embedding_bag_params p{};
    p.table_lba = 4;
    p.num_rows = 1;
    p.row_dim = 4;
    p.num_bags = 1;
    HostBuffer e{make_descriptor(CSD_PROG_EMBEDDING_BAG, {{0, 8}, {64, 8}, {0, 0}, {8192, 16}}, &p, sizeof p)};
    ASSERT_EQ(exec_window(e, 16, 16), CSD_CORE_LATER);
    drain();
    ASSERT_EQ(ns.completed.back(), std::make_pair(static_cast<void *>(&e), uint16_t{0}));
    EXPECT_EQ(0, std::memcmp(csd_core_slm_base(core) + 8192, row, sizeof row));
    p.table_lba = 16;  // the window's end
    HostBuffer past{make_descriptor(CSD_PROG_EMBEDDING_BAG, {{0, 8}, {64, 8}, {0, 0}, {8192, 16}}, &p, sizeof p)};
    ASSERT_EQ(exec_window(past, 16, 16), CSD_CORE_LATER);
    drain();
    EXPECT_EQ(ns.completed.back().second, CSD_STATUS_LBA_OUT_OF_RANGE | CSD_STATUS_DNR);
}

// Issue 40: what waits for a compute unit is bounded: past kExecWaitingMax Executes (or
// 256 MiB of their jobs and plans) one completes at once with Command Interrupted, no DNR
// (the host retries); the ones that waited still run.
TEST_F(ExecQueue, TooManyWaitingExecutesAreInterruptedForARetry)
{
    std::vector<HostBuffer> hs(4096 + 3, copy_to(4096));
    for (size_t i = 0; i < 4096 + 2; i++) ASSERT_EQ(exec(hs[i]), CSD_CORE_LATER) << i;  // 2 run, 4096 wait
    EXPECT_EQ(exec(hs[4096 + 2]), CSD_STATUS_COMMAND_INTERRUPTED);
    EXPECT_EQ(counter(CSD_STAT_EXEC_ERRORS), 1u);
    units.finish(0);  // one ends: room for one more
    HostBuffer again = copy_to(4096);
    EXPECT_EQ(exec(again), CSD_CORE_LATER);
    while (!units.jobs.empty()) units.finish(0);
    EXPECT_EQ(ns.completed.size(), 4096u + 3);
    EXPECT_EQ(runs(CSD_PROG_COPY), 4096u + 3);
}

// Issue 40: a media program's plan is not made on the submitting thread (without a timing
// model): a gather of 2 Mi entries submits in O(descriptor).
TEST_F(ExecQueue, AMediaProgramIsPlannedOnItsUnitNotAtSubmission)
{
    const uint32_t n = 2u << 20;
    std::vector<csd_gather_entry> es(n, csd_gather_entry{5, 0, 1});
    ASSERT_LE(es.size() * sizeof es[0], csd_core_slm_size(core) - (1u << 20));
    std::memcpy(csd_core_slm_base(core), es.data(), es.size() * sizeof es[0]);
    const csd_gather_params gp{n, 0};
    const uint64_t out = es.size() * sizeof es[0];
    HostBuffer g{make_descriptor(CSD_PROG_GATHER, {{0, out}, {out, n}}, &gp, sizeof gp)};
    const auto t0 = std::chrono::steady_clock::now();
    ASSERT_EQ(exec(g), CSD_CORE_LATER);
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_TRUE(ns.pending.empty());
    ASSERT_EQ(units.jobs.size(), 1u) << "the plan, handed to the unit's worker";
    std::printf("submission of a gather of 2 Mi entries: %.3f ms\n", ms);
    units.finish(0);  // the plan: one block (LBA 5), read through the port
    ASSERT_EQ(ns.pending.size(), 1u);
    while (!ns.pending.empty() || !units.jobs.empty()) {
        if (!ns.pending.empty()) ns.step();
        else units.finish(0);
    }
    EXPECT_EQ(ns.completed.back(), std::make_pair(static_cast<void *>(&g), uint16_t{0}));
}

TEST_F(NamespaceChanges, ANamespaceWithMetadataIsNeitherReadNorWritten)
{
    g_ns_now.metadata = 8;  // e.g. 512 + 8 with protection information type 1
    HostBuffer none, cw = caw_data(1, 0, 1), g = gather({{3, 0, 512}}, 512);
    EXPECT_EQ(submit(none, CSD_OPC_SLM_LOAD, 1, 0, 0, 0), CSD_STATUS_INVALID_NAMESPACE | CSD_STATUS_DNR);
    EXPECT_EQ(submit(none, CSD_OPC_SLM_STORE, 1, 0, 0, 0), CSD_STATUS_INVALID_NAMESPACE | CSD_STATUS_DNR);
    EXPECT_EQ(submit(cw, CSD_OPC_COMPARE_WRITE, 1, 0, 0, 0), CSD_STATUS_INVALID_NAMESPACE | CSD_STATUS_DNR);
    ASSERT_EQ(exec(g), CSD_CORE_LATER);
    drain();
    EXPECT_EQ(ns.completed.back(), std::make_pair(static_cast<void *>(&g), uint16_t{CSD_STATUS_INVALID_NAMESPACE | CSD_STATUS_DNR}));
    EXPECT_TRUE(std::all_of(ns.bytes.begin(), ns.bytes.end(), [](uint8_t b) { return b == 0; }));
    EXPECT_EQ(counter(CSD_STAT_BYTES_NS_TO_SLM) + counter(CSD_STAT_BYTES_SLM_TO_NS), 0u);
}

}  // namespace

// Issue 29: NVM Read / Write / Flush are checked by the core for an embedding that answers
// them itself (the in-process device): the LBA range and the transfer limit.
TEST(NvmDecode, RangeAndTransferLimitAreTheCores)
{
    const csd_ctx ns{1000, 512, 64 << 10, 0};  // 1000 LBAs, MDTS 64 KiB
    csd_cmd c{};
    c.nsid = 1;
    uint64_t off = 1, len = 1;
    c.opcode = 0x02;
    c.cdw10 = 10;
    c.cdw12 = 7;  // 8 LBAs
    EXPECT_EQ(csd_core_nvm_decode(&c, &ns, &off, &len), CSD_STATUS_SUCCESS);
    EXPECT_EQ(off, 5120u);
    EXPECT_EQ(len, 4096u);
    c.opcode = 0x01;
    c.cdw10 = 992;  // the last 8 LBAs
    EXPECT_EQ(csd_core_nvm_decode(&c, &ns, &off, &len), CSD_STATUS_SUCCESS);
    c.cdw10 = 993;  // one past the end
    EXPECT_EQ(csd_core_nvm_decode(&c, &ns, &off, &len), CSD_STATUS_LBA_OUT_OF_RANGE | CSD_STATUS_DNR);
    c.cdw10 = 0;
    c.cdw11 = 0xFFFFFFFF;  // an SLBA whose end wraps
    EXPECT_EQ(csd_core_nvm_decode(&c, &ns, &off, &len), CSD_STATUS_LBA_OUT_OF_RANGE | CSD_STATUS_DNR);
    c.cdw11 = 0;
    c.cdw12 = 128;  // 129 LBAs: over 64 KiB
    EXPECT_EQ(csd_core_nvm_decode(&c, &ns, &off, &len), CSD_STATUS_INVALID_FIELD | CSD_STATUS_DNR);
    c.cdw12 = 127;  // exactly 64 KiB
    EXPECT_EQ(csd_core_nvm_decode(&c, &ns, &off, &len), CSD_STATUS_SUCCESS);
    EXPECT_EQ(len, 65536u);
    c.cdw10 = 999;  // past the end and over MDTS: the transfer size is checked first, as in QEMU
    c.cdw12 = 0xFFFF;
    EXPECT_EQ(csd_core_nvm_decode(&c, &ns, &off, &len), CSD_STATUS_INVALID_FIELD | CSD_STATUS_DNR);
    c.opcode = 0x00;  // Flush: nothing to move
    EXPECT_EQ(csd_core_nvm_decode(&c, &ns, &off, &len), CSD_STATUS_SUCCESS);
    EXPECT_EQ(len, 0u);
    c.opcode = 0x05;  // Compare: not one the core checks
    EXPECT_EQ(csd_core_nvm_decode(&c, &ns, &off, &len), CSD_STATUS_INVALID_OPCODE | CSD_STATUS_DNR);
}

// Issue 29: for an embedding without an NVM controller of its own (port->nvm_io: the
// in-process device) the core answers NVM Read, Write and Flush too: the namespace, the
// checks, the modelled finish; the embedding only moves the bytes.
namespace {
struct NvmIoLog {
    std::vector<std::tuple<uint32_t, int, uint64_t, uint64_t>> calls;  // nsid, write, off, len
    uint16_t status = 0;
};
uint16_t log_nvm_io(void *req, uint32_t nsid, int write, uint64_t off, uint64_t len)
{
    auto *l = static_cast<NvmIoLog *>(req);
    l->calls.emplace_back(nsid, write, off, len);
    return l->status;
}
}  // namespace

TEST_F(Controller, NvmReadWriteAndFlushThroughThePortsNvmIo)
{
    NvmIoLog io;
    csd_sqe sqe{};
    sqe.cmd = csd_cmd{0x02, 1, 8, 0, 3, 0, 0, 0};  // Read 4 LBAs from LBA 8
    HostBuffer none;
    EXPECT_EQ(csd_core_submit(core, &sqe, &port, &none, &cpl, &op), CSD_CORE_NOT_MINE) << "QEMU answers its own";
    port.nvm_io = log_nvm_io;
    EXPECT_EQ(csd_core_submit(core, &sqe, &port, &io, &cpl, &op), CSD_STATUS_SUCCESS);
    sqe.cmd.opcode = 0x01;  // Write
    EXPECT_EQ(csd_core_submit(core, &sqe, &port, &io, &cpl, &op), CSD_STATUS_SUCCESS);
    sqe.cmd.opcode = 0x00;  // Flush
    EXPECT_EQ(csd_core_submit(core, &sqe, &port, &io, &cpl, &op), CSD_STATUS_SUCCESS);
    using Call = std::tuple<uint32_t, int, uint64_t, uint64_t>;
    EXPECT_EQ(io.calls, (std::vector<Call>{{1, 0, 4096, 2048}, {1, 1, 4096, 2048}, {1, 1, 0, 0}}));
    EXPECT_EQ(cpl.finish_ns, 0u) << "model off";
    sqe.cmd.opcode = 0x02;
    sqe.cmd.nsid = 7;
    EXPECT_EQ(csd_core_submit(core, &sqe, &port, &io, &cpl, &op), CSD_STATUS_INVALID_NAMESPACE | CSD_STATUS_DNR);
    sqe.cmd.nsid = 1;
    sqe.cmd.cdw10 = (1u << 20) - 1;  // the last LBA and three past it
    EXPECT_EQ(csd_core_submit(core, &sqe, &port, &io, &cpl, &op), CSD_STATUS_LBA_OUT_OF_RANGE | CSD_STATUS_DNR);
    sqe.cmd.opcode = 0x05;  // Compare: not answered
    EXPECT_EQ(csd_core_submit(core, &sqe, &port, &io, &cpl, &op), CSD_STATUS_INVALID_OPCODE | CSD_STATUS_DNR);
    EXPECT_EQ(io.calls.size(), 3u) << "nothing moved for a refused command";
    io.status = CSD_STATUS_INTERNAL_ERROR;
    sqe.cmd = csd_cmd{0x02, 1, 0, 0, 0, 0, 0, 0};
    EXPECT_EQ(csd_core_submit(core, &sqe, &port, &io, &cpl, &op), CSD_STATUS_INTERNAL_ERROR) << "the move's error";

    csd_model_params p{};
    ASSERT_EQ(csd_model_preset("gen4x4-8core", &p), 0);
    csd_core_set_model(core, &p);
    io.status = 0;
    EXPECT_EQ(csd_core_submit(core, &sqe, &port, &io, &cpl, &op), CSD_STATUS_SUCCESS);
    EXPECT_GT(cpl.finish_ns, 0u) << "modelled as it arrived";
    uint64_t finish = 0;
    EXPECT_EQ(csd_core_nvm_submit(core, &sqe.cmd, &port, &io, &finish), CSD_STATUS_SUCCESS);
    EXPECT_GT(finish, 0u);
    io.status = CSD_STATUS_INTERNAL_ERROR;
    EXPECT_EQ(csd_core_nvm_submit(core, &sqe.cmd, &port, &io, &finish), CSD_STATUS_INTERNAL_ERROR);
    EXPECT_EQ(finish, 0u) << "a failed command costs no media time";
}

// Issue 29: with nvm_io the core is the whole controller: Identify of the controller, of
// an NVM namespace, the NVM namespace list and the command set vector, the port's identity
// and limits in them; admin commands it does not have are refused.
TEST_F(Controller, WithNvmIoTheCoreAnswersIdentifyAndRefusesTheRest)
{
    port.nvm_io = log_nvm_io;
    port.model = "nvme-csd test device";
    port.serial = "csd-test";
    HostBuffer id{std::vector<uint8_t>(4096, 0xEE)};
    ASSERT_EQ(submit(id, 0x06, 0, 0x01, 0, 0, true), CSD_STATUS_SUCCESS);
    EXPECT_EQ(std::string(reinterpret_cast<char *>(id.data.data()) + 4, 20), "csd-test            ");
    EXPECT_EQ(std::string(reinterpret_cast<char *>(id.data.data()) + 24, 40), std::string("nvme-csd test device") + std::string(20, ' '));
    EXPECT_EQ(id.data[77], 11) << "MDTS: 8 MiB in 4 KiB pages, 2^11";
    EXPECT_EQ(std::memcmp(id.data.data() + CSD_ID_VS_OFFSET, CSD_ID_SIGNATURE, 4), 0);
    EXPECT_EQ(id.data[100], 0) << "the rest zeroed";
    ASSERT_EQ(submit(id, 0x06, 1, 0x00, 0, 0, true), CSD_STATUS_SUCCESS);  // namespace 1
    uint64_t nsze;
    std::memcpy(&nsze, id.data.data(), 8);
    EXPECT_EQ(nsze, 1u << 20);
    EXPECT_EQ(id.data[130], 9) << "LBA format 0: 512-byte LBAs";
    EXPECT_EQ(submit(id, 0x06, 5, 0x00, 0, 0, true), CSD_STATUS_INVALID_NAMESPACE | CSD_STATUS_DNR)
        << "above max_nsid (1 here)";
    ASSERT_EQ(submit(id, 0x06, 0, 0x07, 0, 0, true), CSD_STATUS_SUCCESS);  // active NVM namespaces after 0
    uint32_t first;
    std::memcpy(&first, id.data.data(), 4);
    EXPECT_EQ(first, 1u);
    ASSERT_EQ(submit(id, 0x06, 1, 0x07, 0, 0, true), CSD_STATUS_SUCCESS);  // after 1: none
    std::memcpy(&first, id.data.data(), 4);
    EXPECT_EQ(first, 0u);
    EXPECT_EQ(submit(id, 0x06, 0xFFFFFFFF, 0x07, 0, 0, true), CSD_STATUS_INVALID_NAMESPACE | CSD_STATUS_DNR)
        << "a start at FFFFFFFFh does not wrap to list every namespace";
    EXPECT_EQ(submit(id, 0x06, 0xFFFFFFFE, 0x07, 0, 0, true), CSD_STATUS_INVALID_NAMESPACE | CSD_STATUS_DNR);
    EXPECT_EQ(submit(id, 0x06, 0, 0x07, 5u << 24, 0, true), CSD_STATUS_INVALID_FIELD | CSD_STATUS_DNR)
        << "a command set it lacks";
    ASSERT_EQ(submit(id, 0x06, 0, 0x1C, 0, 0, true), CSD_STATUS_SUCCESS);
    EXPECT_EQ(id.data[0], 1) << "NVM only (the standard front end is off)";
    EXPECT_EQ(submit(id, 0x06, 0, 0x55, 0, 0, true), CSD_STATUS_INVALID_FIELD | CSD_STATUS_DNR) << "a CNS it lacks";
    EXPECT_EQ(submit(id, 0x02, 0xFFFFFFFF, 0x30 | (0u << 16), 0, 0, true), CSD_STATUS_INVALID_FIELD | CSD_STATUS_DNR)
        << "a log page nobody has";
    EXPECT_EQ(submit(id, 0x09, 0, 0, 0, 0, true), CSD_STATUS_INVALID_OPCODE | CSD_STATUS_DNR) << "Set Features";
    HostBuffer small{std::vector<uint8_t>(512)};
    EXPECT_EQ(submit(small, 0x06, 0, 0x01, 0, 0, true), CSD_STATUS_INVALID_FIELD | CSD_STATUS_DNR) << "no room";
    port.nvm_io = nullptr;
    EXPECT_EQ(submit(id, 0x06, 0, 0x01, 0, 0, true), CSD_CORE_NOT_MINE) << "QEMU answers its own";
}

// Found by an outside review: the core's Identify Controller (the in-process device's) held
// only serial, model, MDTS and the signature; a host reads VER, NN, SQES / CQES, VWC, the
// vendor IDs and more. They are now what QEMU 10.0's nvme_init_ctrl answers (the
// equivalence replay compares the whole structure with QEMU's), and the optional features
// say what this controller has.
TEST_F(Controller, IdentifyControllerHoldsWhatQemusDoes)
{
    port.nvm_io = log_nvm_io;
    port.serial = "csd-test";
    port.max_nsid = 256;
    HostBuffer id{std::vector<uint8_t>(4096, 0xEE)};
    ASSERT_EQ(submit(id, 0x06, 0, 0x01, 0, 0, true), CSD_STATUS_SUCCESS);
    const uint8_t *d = id.data.data();
    auto u16 = [&](size_t at) { uint16_t v; std::memcpy(&v, d + at, 2); return v; };
    auto u32 = [&](size_t at) { uint32_t v; std::memcpy(&v, d + at, 4); return v; };
    EXPECT_EQ(u16(0), 0x1B36) << "VID";
    EXPECT_EQ(u16(2), 0x1AF4) << "SSVID";
    EXPECT_EQ(d[72], 6) << "RAB";
    EXPECT_EQ(d[73] << 16 | d[74] << 8 | d[75], 0x005452) << "IEEE OUI";
    EXPECT_EQ(u32(80), 0x00010400u) << "VER 1.4";
    EXPECT_EQ(d[111], 1) << "CNTRLTYPE: I/O controller";
    EXPECT_EQ(u16(256), 0) << "OACS: none of QEMU's optional admin commands";
    EXPECT_EQ(d[258], 3) << "ACL";
    EXPECT_EQ(d[260], 0x03) << "FRMW: one read-only slot";
    EXPECT_EQ(d[261], 0x04) << "LPA: extended Get Log Page data only";
    EXPECT_EQ(u16(266), 0x157) << "WCTEMP";
    EXPECT_EQ(u16(268), 0x175) << "CCTEMP";
    EXPECT_EQ(d[512], 0x66) << "SQES";
    EXPECT_EQ(d[513], 0x44) << "CQES";
    EXPECT_EQ(u32(516), 256u) << "NN";
    EXPECT_EQ(u16(520), 0) << "ONCS: Read, Write, Flush only";
    EXPECT_EQ(d[525], 0x07) << "VWC: present, Flush of every namespace";
    EXPECT_EQ(u32(536), 0u) << "SGLS";
    EXPECT_EQ(std::string(reinterpret_cast<const char *>(d) + 768), "nqn.2019-08.org.qemu:csd-test");
    EXPECT_EQ(u16(2048), 0x9C4) << "PSD0 MP";
    // the standard front end: NVM Copy with source format 4h, in both embeddings
    csd_core_cs_attach(core, 2);
    ASSERT_EQ(submit(id, 0x06, 0, 0x01, 0, 0, true), CSD_STATUS_SUCCESS);
    EXPECT_EQ(u16(520), 1u << 8) << "ONCS: Copy";
    EXPECT_EQ(u16(534), 1u << NVME_CS_COPY_FORMAT_MEMORY) << "OCFS: format 4h";
    std::vector<uint8_t> qemus(4096, 0);
    qemus[534] = 0x0F;  // QEMU's formats 0h-3h
    csd_core_identify_ctrl(core, qemus.data());
    EXPECT_EQ(qemus[534], 0x1F) << "ORed into QEMU's";
}

// Found by an outside review: the core answered Invalid Namespace for every NSID without a
// namespace; QEMU's nvme_io_cmd says Invalid Field for one in range (1..NN) with nothing
// attached, Invalid Namespace for 0, FFFFFFFFh and above NN, flushes every namespace for a
// Flush of FFFFFFFFh, and nvme_identify_ns answers zeros for an NSID in range without one.
TEST_F(Controller, NsidStatusesAreQemus)
{
    NvmIoLog io;
    port.nvm_io = log_nvm_io;
    port.max_nsid = 256;
    constexpr uint16_t kField = CSD_STATUS_INVALID_FIELD | CSD_STATUS_DNR;
    constexpr uint16_t kNs = CSD_STATUS_INVALID_NAMESPACE | CSD_STATUS_DNR;
    auto io_cmd = [&](uint8_t opcode, uint32_t nsid) {
        csd_sqe sqe{};
        sqe.cmd = csd_cmd{opcode, nsid, 0, 0, 0, 0, 0, 0};
        return csd_core_submit(core, &sqe, &port, &io, &cpl, &op);
    };
    EXPECT_EQ(io_cmd(0x02, 5), kField) << "Read: in range, none attached";
    EXPECT_EQ(io_cmd(0x01, 256), kField) << "Write";
    EXPECT_EQ(io_cmd(0x05, 5), kField) << "an opcode it lacks: the NSID first, as QEMU";
    EXPECT_EQ(io_cmd(0x02, 0), kNs);
    EXPECT_EQ(io_cmd(0x02, 257), kNs);
    EXPECT_EQ(io_cmd(0x02, 0xFFFFFFFF), kNs);
    EXPECT_EQ(io_cmd(0x00, 5), kField) << "Flush";
    EXPECT_EQ(io_cmd(0x00, 0), kNs);
    EXPECT_EQ(io_cmd(CSD_OPC_SLM_READ, 5), kField) << "a vendor command";
    EXPECT_EQ(io_cmd(CSD_OPC_SLM_READ, 0), kNs);
    EXPECT_EQ(counter(CSD_STAT_SLM_READ_CMDS), 0u) << "refused before it is decoded";
    EXPECT_TRUE(io.calls.empty());
    EXPECT_EQ(io_cmd(0x00, 0xFFFFFFFF), CSD_STATUS_SUCCESS) << "Flush of every namespace";
    using Call = std::tuple<uint32_t, int, uint64_t, uint64_t>;
    EXPECT_EQ(io.calls, (std::vector<Call>{{1, 1, 0, 0}}));
    HostBuffer id{std::vector<uint8_t>(4096, 0xEE)};
    EXPECT_EQ(submit(id, 0x06, 5, 0x00, 0, 0, true), CSD_STATUS_SUCCESS) << "Identify Namespace, none attached";
    EXPECT_EQ(id.data, std::vector<uint8_t>(4096, 0)) << "zeros";
    EXPECT_EQ(submit(id, 0x06, 0, 0x00, 0, 0, true), kNs);
    EXPECT_EQ(submit(id, 0x06, 0xFFFFFFFF, 0x00, 0, 0, true), kNs);
    EXPECT_EQ(submit(id, 0x06, 257, 0x00, 0, 0, true), kNs);
}
