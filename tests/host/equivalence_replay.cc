// SPDX-License-Identifier: MIT
// csd-equivalence-replay TRACE: replays the command sequence that the qtest
// /csd/equivalence-trace ran through QEMU's controller (qemu-device/overlay/tests/qtest/
// csd-test.c, $CSD_EQUIV_TRACE) on the in-process device, configured the same way
// (64 MiB of SLM, 2 compute units, the standard front end, the same disk contents), and
// compares every completion (status, Dwords 0 and 1) and every byte read back, log pages
// C0h, C1h, 82h and 84h included, byte for byte. A "batch N A" of commands that were in
// QEMU's controller at once is submitted at once, its "abort I" lines (NVMe Abort of its
// I-th command) follow, then its completions are awaited. Masked: C1h's exec_busy_ns, the
// wall-clock time programs ran, and the bits of Identify Controller listed in kIdCtrlMasks
// with the reason each differs. Exit 0: identical; 1: the differences are printed; 2: a
// trace that cannot be read.
#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <future>
#include <sstream>
#include <string>
#include <vector>

#include "csd/error.hpp"
#include "csd/transport.hpp"
#include "csd_spec.h"

namespace {

std::vector<uint8_t> unhex(const std::string &s)
{
    std::vector<uint8_t> out;
    if (s == "-") return out;
    for (size_t i = 0; i + 1 < s.size(); i += 2) out.push_back(static_cast<uint8_t>(std::stoul(s.substr(i, 2), nullptr, 16)));
    return out;
}

// One traced command: what was sent, and what QEMU answered.
struct Step {
    std::string line;
    csd::Command cmd;
    std::vector<uint8_t> buf;  // the command's data: sent, then read back
    uint32_t in_len = 0;
    unsigned st = 0, dw0 = 0, dw1 = 0;
    std::vector<uint8_t> want;  // QEMU's bytes read back
};

// Reads a "cmd" line and its "cqe" line into *s; false at the end of the trace.
bool read_step(std::istream &in, Step *s)
{
    std::string cqe_line;
    do {
        if (!std::getline(in, s->line)) return false;
        if (s->line.rfind("# csd equivalence trace ", 0) == 0 && s->line.rfind("# csd equivalence trace 2:", 0) != 0) {
            throw csd::Error("equivalence: a trace of another version (this replay reads version 2): " + s->line, EINVAL);
        }
    } while (s->line.empty() || s->line[0] == '#');
    if (!std::getline(in, cqe_line)) throw csd::Error("equivalence: a command without its completion", EINVAL);
    std::istringstream c(s->line), e(cqe_line);
    std::string tag, opc, out_hex, etag, in_hex;
    int q;
    uint32_t d[9], out_len;
    c >> tag >> q >> opc;
    for (auto &v : d) c >> v;
    c >> out_len >> s->in_len >> out_hex;
    e >> etag >> std::hex >> s->st >> s->dw0 >> s->dw1 >> in_hex;
    if (!c || !e || tag != "cmd" || etag != "cqe") throw csd::Error("equivalence: bad trace line: " + s->line, EINVAL);
    csd::Command &cmd = s->cmd;
    cmd.admin = q == 0;
    cmd.opcode = static_cast<uint8_t>(std::stoul(opc, nullptr, 16));
    cmd.nsid = d[0];
    cmd.cdw2 = d[1];
    cmd.cdw3 = d[2];
    cmd.cdw10 = d[3], cmd.cdw11 = d[4], cmd.cdw12 = d[5], cmd.cdw13 = d[6], cmd.cdw14 = d[7], cmd.cdw15 = d[8];
    s->buf = unhex(out_hex);
    s->buf.resize(std::max(out_len, s->in_len));
    cmd.data = s->buf.empty() ? nullptr : s->buf.data();
    cmd.data_len = static_cast<uint32_t>(s->buf.size());
    s->want = unhex(in_hex);
    return true;
}

// Zeroes C1h's wall-clock counter (exec_busy_ns) in a statistics page read back.
void mask_busy_time(std::vector<uint8_t> &page)
{
    const size_t at = CSD_STATS_COUNTERS_OFFSET + 8 * CSD_STAT_EXEC_BUSY_NS;
    if (page.size() >= at + 8) std::memset(page.data() + at, 0, 8);
}

// The bits of Identify Controller in which QEMU's controller and the in-process device
// legitimately differ (the core's identify_ctrl, controller.cc): their bytes [at, at + len)
// are compared with the bits of ignore cleared. Every other byte must be equal.
struct IdMask {
    size_t at, len;
    uint8_t ignore;
    const char *why;
};
const IdMask kIdCtrlMasks[] = {
    // what names each device
    {4, 20, 0xFF, "SN: each device's serial"},
    {24, 40, 0xFF, "MN: each device names itself"},
    {64, 8, 0xFF, "FR: QEMU's version; the command set's"},
    {768 + 21, 256 - 21, 0xFF, "SUBNQN after nqn.2019-08.org.qemu: : the serial"},
    // limits of each embedding
    {77, 1, 0xFF, "MDTS: QEMU's mdts=7 (512 KiB); the in-process device's 8 MiB"},
    {536, 4, 0xFF, "SGLS: QEMU's SGLs (in-process: host memory is a buffer)"},
    // QEMU's optional features, which the in-process device does not claim
    {92, 4, 0xFF, "OAES: QEMU's namespace attribute notices (asynchronous events: none in-process)"},
    {96, 4, 0xFF, "CTRATT: QEMU's extended LBA formats (in-process: one LBA format)"},
    {256, 2, 0xFF, "OACS: QEMU's Namespace Management, Format NVM, Directives, Doorbell Buffer Config"},
    {259, 1, 0xFF, "AERL: QEMU's Asynchronous Event Requests (none in-process)"},
    // bits of fields both define: the rest of each is compared
    {261, 1, 0x03, "LPA: QEMU's SMART per namespace and Commands Supported and Effects logs"},
    {520, 1, 0xFF, "ONCS: QEMU's Compare, DSM, Write Zeroes, Save / Select, Timestamp"},
    {521, 1, 0xFE, "ONCS: QEMU's Copy's Single Atomicity and All Fast (both: Copy)"},
    {534, 1, 0x0F, "OCFS: QEMU's Copy formats 0h-3h (both: 4h, the memory namespace's)"},
};

// Clears the bits of kIdCtrlMasks in an Identify Controller structure read back.
void mask_id_ctrl(std::vector<uint8_t> &id)
{
    for (const IdMask &m : kIdCtrlMasks) {
        for (size_t i = m.at; i < m.at + m.len && i < id.size(); i++) id[i] &= static_cast<uint8_t>(~m.ignore);
    }
}

}  // namespace

int main(int argc, char **argv)
{
    if (argc != 2) {
        std::fprintf(stderr, "usage: csd-equivalence-replay TRACE\n");
        return 2;
    }
    std::ifstream in(argv[1]);
    if (!in) {
        std::fprintf(stderr, "equivalence: cannot read %s\n", argv[1]);
        return 2;
    }
    // The qtest's disk: 4 MiB of (i * 7 + i / 4096), 512-byte LBAs.
    char disk[] = "/tmp/csd-equiv-XXXXXX";
    const int fd = mkstemp(disk);
    if (fd < 0) return 2;
    const uint32_t disk_bytes = 4 << 20;
    std::vector<uint8_t> pattern(disk_bytes);
    for (uint32_t i = 0; i < disk_bytes; i++) pattern[i] = static_cast<uint8_t>(i * 7 + i / 4096);
    const bool written = write(fd, pattern.data(), disk_bytes) == static_cast<ssize_t>(disk_bytes);
    close(fd);
    if (!written) return 2;

    int steps = 0, bad = 0;
    // Compares one step's completion and bytes read back with QEMU's.
    auto check = [&](Step &s, const csd::Completion &got) {
        std::vector<uint8_t> back(s.buf.begin(), s.buf.begin() + s.in_len);
        if (s.cmd.admin && s.cmd.opcode == 0x02 && (s.cmd.cdw10 & 0xFF) == CSD_LOG_STATISTICS) {
            mask_busy_time(s.want);
            mask_busy_time(back);
        }
        if (s.cmd.admin && s.cmd.opcode == 0x06 && (s.cmd.cdw10 & 0xFF) == 0x01) {
            mask_id_ctrl(s.want);
            mask_id_ctrl(back);
        }
        steps++;
        if (got.status == s.st && got.dw0() == s.dw0 && got.dw1() == s.dw1 && s.want == back) return;
        bad++;
        std::printf("step %d: %s\n  QEMU       status %04x dw0 %08x dw1 %08x\n  in-process status %04x dw0 %08x dw1 %08x\n",
                    steps, s.line.substr(0, 80).c_str(), s.st, s.dw0, s.dw1, got.status, got.dw0(), got.dw1());
        for (size_t i = 0; i < s.want.size(); i++) {
            if (s.want[i] != back[i]) {
                std::printf("  data differs from byte %zu: QEMU %02x, in-process %02x\n", i, s.want[i], back[i]);
                if (s.cmd.opcode != 0x06) break;  // Identify: every field that differs
            }
        }
    };
    try {
        auto t = csd::open_transport(std::string("emu:") + disk + "?slm=64M&cu=2&lba=512&nvme-cs=1");
        for (;;) {
            const std::streampos at = in.tellg();
            std::string head;
            if (!(in >> head)) break;
            if (head != "batch") {
                in.seekg(at);
                Step s;
                if (!read_step(in, &s)) break;
                check(s, t->submit(s.cmd));
                continue;
            }
            int nr = 0, nabort = 0;
            in >> nr >> nabort;
            std::vector<int> aborts(static_cast<size_t>(std::max(nabort, 0)));
            for (int &a : aborts) {
                std::string tag;
                in >> tag >> a;
                if (tag != "abort" || a < 0 || a >= nr) throw csd::Error("equivalence: bad abort line", EINVAL);
            }
            in.ignore(1 << 20, '\n');
            std::vector<Step> batch(static_cast<size_t>(std::max(nr, 0)));
            for (Step &s : batch) {
                if (!read_step(in, &s)) throw csd::Error("equivalence: a batch cut short", EINVAL);
            }
            std::vector<std::future<csd::Completion>> done;
            for (Step &s : batch) done.push_back(t->submit_async(s.cmd));
            for (int a : aborts) {
                if (!t->abort(batch[static_cast<size_t>(a)].cmd)) {
                    std::printf("step %d: the in-process device found no command %d of the batch to abort\n", steps + 1, a);
                    bad++;
                }
            }
            for (size_t i = 0; i < batch.size(); i++) check(batch[i], done[i].get());
        }
    } catch (const std::exception &ex) {
        std::fprintf(stderr, "%s\n", ex.what());
        unlink(disk);
        return 2;
    }
    unlink(disk);
    std::printf("equivalence: %d commands, %d differ\n", steps, bad);
    return bad || steps == 0 ? 1 : 0;
}
