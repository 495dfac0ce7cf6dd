// SPDX-License-Identifier: MIT
// The feature matrix's rows through fio's csd engine (fio_rows.hpp): SLM -> namespace as a job
// of media writes (SLM Store of the job's own SLM, which a new drive or csd.ko file holds as
// zeros) and a compute program as a job of checksums the engine checks against the host's
// (csd_verify). fio's media reads leave the blocks in the job's SLM, where nothing can
// check them, so the matrix has no load row for fio (tests/matrix/matrix.py).
#include "fio_rows.hpp"

#include <sys/wait.h>

#include <array>
#include <sstream>

namespace csd_matrix {

namespace {

// What one fio run gave: its exit status, the error of its job (terse v3's fifth field), and
// its output (for the detail).
struct FioRun {
    int rc = -1;
    int job_error = -1;  // -1: no job line
    std::string out;
};

// A shell word.
std::string quoted(const std::string &s)
{
    std::string o = "'";
    for (char ch : s) o += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
    return o + "'";
}

// Runs fio with one job of the engine over device (the options after the common ones).
FioRun fio(const std::string &engine, const std::string &device, const std::string &options)
{
    const std::string cmd = "fio --output-format=terse --terse-version=3 --name=matrix --ioengine=external:" +
                            quoted(engine) + " --filename=csd --csd_device=" + quoted(device) + " --thread " + options +
                            " 2>&1";
    FioRun r;
    FILE *p = ::popen(cmd.c_str(), "r");
    if (!p) return r;
    std::array<char, 4096> buf;
    for (size_t n; (n = std::fread(buf.data(), 1, buf.size(), p)) > 0;) r.out.append(buf.data(), n);
    const int st = ::pclose(p);
    r.rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    std::istringstream lines(r.out);
    for (std::string line; std::getline(lines, line);) {
        if (line.rfind("3;", 0) != 0) continue;
        std::istringstream fields(line);
        std::string f;
        for (int i = 0; i < 5 && std::getline(fields, f, ';'); i++) {
        }
        r.job_error = std::atoi(f.c_str());
    }
    return r;
}

// The lines of fio's output that say what went wrong (the engine's 'csd: JOB: ...', fio's own).
std::string complaints(const std::string &out)
{
    std::string said;
    std::istringstream lines(out);
    for (std::string line; std::getline(lines, line);) {
        if (line.rfind("csd: ", 0) == 0 || line.rfind("fio: ", 0) == 0) said += (said.empty() ? "" : " | ") + line;
    }
    return said.empty() ? out.substr(out.size() > 600 ? out.size() - 600 : 0) : said;
}

// A run's outcome when it did not do its job: the errno its job reports, or the one the
// engine's words end with when the job could not start (fio reports no job error then), by
// name; a failure when neither names one.
Outcome not_done(const FioRun &r)
{
    const std::string said = complaints(r.out);
    if (r.job_error > 0) return {"refused", errno_name(r.job_error), said};
    for (int e = 1; e < 134; e++) {
        const std::string name = errno_name(e), text = std::string(": ") + std::strerror(e);
        if (name.rfind("errno ", 0) != 0 && said.find("csd: ") != std::string::npos &&
            said.find(text) != std::string::npos) {
            return {"refused", name, said};
        }
    }
    return fail("fio ended with " + std::to_string(r.rc) + " and no job error: " + said);
}

// SLM -> namespace: 64 KiB of media writes at the store area; the blocks hold the job's SLM
// (zeros), and the block after them, and where the way's LBA 0 is not the namespace's the
// blocks at the same LBAs of the namespace, hold what they held before (nothing landed there;
// other ways of the run may have written them, so not their stamps).
Outcome row_store(Ctx &c, const std::string &engine, const std::string &device)
{
    const uint64_t lba = c.zoned ? c.fresh_lba : c.lba(kStoreAt), nlb = c.lba(64 << 10);
    Ctx at0 = c;
    at0.base = 0;
    std::vector<uint8_t> next, own, got;
    if (!c.absolute(lba + nlb, 1, &next)) return fail("the fio way needs --check (the namespace's bytes)");
    if (c.base != 0) at0.absolute(lba, nlb, &own);
    c.before_command();
    const FioRun r = fio(engine, device, "--csd_mode=media --rw=write --bs=16k --iodepth=4 --offset=" +
                                             std::to_string(lba * c.L()) + " --size=" + std::to_string(nlb * c.L()));
    if (r.rc != 0 || r.job_error != 0) return not_done(r);
    c.absolute(lba, nlb, &got);
    expect(got == std::vector<uint8_t>(nlb * c.L(), 0), "the stored blocks do not hold the job's SLM (zeros)");
    if (!c.zoned) expect(c.absolute(lba + nlb, 1, &got) && got == next, "the block after the stored ones changed");
    if (c.base != 0) {
        expect(at0.absolute(lba, nlb, &got) && got == own,
               "the namespace's own LBAs of the store area changed (the write ignored the way's LBA 0)");
    }
    return ok();
}

// A compute program: CRC-32C checksums of 64 KiB pieces of a 1 MiB window at iodepth 4, each
// checked by the engine against the host's (a mismatch fails the job with EILSEQ).
Outcome row_exec(Ctx &c, const std::string &engine, const std::string &device)
{
    c.before_command();
    const FioRun r = fio(engine, device,
                         "--csd_mode=exec --csd_program=checksum --csd_algo=crc32c --csd_verify=1 --rw=randread "
                         "--bs=64k --size=1M --iodepth=4");
    if (r.rc != 0 || r.job_error != 0) return not_done(r);
    return ok();
}

}  // namespace

Outcome fio_row(const std::string &row, Ctx &c, const std::string &engine, const std::string &device)
{
    try {
        if (row == "store") return row_store(c, engine, device);
        if (row == "exec") return row_exec(c, engine, device);
        return fail("fio's engine has no job for row " + row);
    } catch (const Mismatch &m) {
        return fail(m.what());
    } catch (const std::exception &e) {
        return fail(std::string("unexpected exception: ") + e.what());
    }
}

}  // namespace csd_matrix
