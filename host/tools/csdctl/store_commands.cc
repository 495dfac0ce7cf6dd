// SPDX-License-Identifier: MIT
// store_commands.cc - csdctl format, ls, stat, rm, reclaim, put, get: the object store,
// on one drive or on several (--drives).
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <ctime>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>

#include "csd/store_io.hpp"
#include "csdctl.hpp"

namespace csdctl {
namespace {

int cmd_format(Device &d, const Opts &o, bool force)
{
    ObjectStore::format(d, force);
    const uint64_t free_bytes = ObjectStore(d).free_bytes();
    if (o.json) print({{"formatted", true}, {"free_bytes", free_bytes}});
    else std::printf("formatted: %llu bytes for objects\n", static_cast<unsigned long long>(free_bytes));
    return 0;
}

// A reservation's writer ("host:pid"), and whether it still runs: on this host, its process
// is alive; on another, unknown.
struct Writer {
    std::string host;
    long pid = 0;
    const char *state = "unknown";  // "running", "gone" or "unknown" (another host)
};

// The writer a reservation names ("host:pid") and whether it still runs.
Writer writer_of(const Reservation &r)
{
    Writer w;
    const size_t colon = r.owner.rfind(':');
    w.host = r.owner.substr(0, colon);
    if (colon != std::string::npos) w.pid = std::strtol(r.owner.c_str() + colon + 1, nullptr, 10);
    char me[256] = "";
    gethostname(me, sizeof me - 1);
    if (w.host == me && w.pid > 0) w.state = kill(static_cast<pid_t>(w.pid), 0) == 0 || errno == EPERM ? "running" : "gone";
    return w;
}

// A reservation as stat --json gives it: id, bytes, block, owner, host, pid, time, running.
json reservation_json(const ObjectStore &st, const Reservation &r)
{
    const Writer w = writer_of(r);
    json j = {{"id", r.id},     {"bytes", r.blocks * st.block_size()}, {"block", r.block}, {"owner", r.owner},
              {"host", w.host}, {"pid", w.pid}, {"time", r.time}};
    j["running"] = w.state == std::string("unknown") ? json(nullptr) : json(w.state == std::string("running"));
    return j;
}

// One line per reservation: its bytes, its writer and whether it runs, its age.
void print_reservations(const ObjectStore &st, const std::vector<Reservation> &rs)
{
    const uint64_t now = static_cast<uint64_t>(time(nullptr));
    for (const Reservation &r : rs) {
        const Writer w = writer_of(r);
        const std::string why = w.state == std::string("running")  ? "running: a put in progress"
                                : w.state == std::string("gone") ? "gone: its put was killed; 'csdctl reclaim' frees it"
                                                                  : "another host's writer";
        std::printf("  %llu bytes reserved by %s (%s), %llu s ago\n",
                    static_cast<unsigned long long>(r.blocks * st.block_size()), r.owner.c_str(), why.c_str(),
                    static_cast<unsigned long long>(now >= r.time ? now - r.time : 0));
    }
}

int cmd_ls(Device &d, const Opts &o)
{
    ObjectStore st(d);
    const auto v = st.list();
    if (o.json) {
        json list = json::array();
        for (const auto &i : v) list.push_back(object_json(i));
        print(list);
    } else {
        for (const auto &i : v) print_object(i);
        const auto rs = st.reservations();
        uint64_t reserved = 0;
        for (const Reservation &r : rs) reserved += r.blocks * st.block_size();
        std::printf("%zu objects, %llu bytes free", v.size(), static_cast<unsigned long long>(st.free_bytes()));
        if (!rs.empty()) {
            std::printf(", %llu bytes reserved by %zu writer%s:", static_cast<unsigned long long>(reserved), rs.size(),
                        rs.size() == 1 ? "" : "s");
        }
        std::printf("\n");
        print_reservations(st, rs);
    }
    return 0;
}

// Lists reservations older than max_age seconds (puts whose writer died) and frees them.
int cmd_reclaim(Device &d, const Opts &o, uint64_t max_age)
{
    ObjectStore st(d);
    json out = json::array();
    const uint64_t now = static_cast<uint64_t>(time(nullptr));
    for (const Reservation &r : st.reservations()) {
        if (now >= r.time && now - r.time >= max_age) {
            if (!o.json) {
                std::printf("reservation %016llx: %llu bytes at block %llu, by %s, %llu s ago\n",
                            static_cast<unsigned long long>(r.id),
                            static_cast<unsigned long long>(r.blocks * std::max<uint32_t>(4096, d.ns().lba_size)),
                            static_cast<unsigned long long>(r.block), r.owner.c_str(),
                            static_cast<unsigned long long>(now - r.time));
            }
            out.push_back({{"id", r.id}, {"block", r.block}, {"blocks", r.blocks}, {"owner", r.owner}, {"time", r.time}});
        }
    }
    const size_t n = st.reclaim(max_age);
    if (o.json) print(json{{"reclaimed", n}, {"reservations", out}});
    else std::printf("reclaimed %zu reservation(s)\n", n);
    return 0;
}

// The store as a whole (stat without a name): its objects, free space, and the space
// reserved by writers (puts in progress, or killed), each named.
int cmd_store_stat(Device &d, const Opts &o)
{
    ObjectStore st(d);
    const auto v = st.list();
    const auto rs = st.reservations();
    uint64_t object_bytes = 0, reserved = 0;
    for (const ObjectInfo &i : v) object_bytes += i.bytes;
    json list = json::array();
    for (const Reservation &r : rs) {
        reserved += r.blocks * st.block_size();
        list.push_back(reservation_json(st, r));
    }
    const uint64_t free_bytes = st.free_bytes();
    if (o.json) {
        print({{"objects", v.size()}, {"object_bytes", object_bytes}, {"free_bytes", free_bytes},
               {"reserved_bytes", reserved}, {"reservations", list}, {"generation", st.generation()},
               {"block_size", st.block_size()}});
        return 0;
    }
    std::printf("objects        %zu (%llu bytes)\nfree           %llu bytes\nreserved       %llu bytes by %zu writer%s\n"
                "generation     %llu\n",
                v.size(), static_cast<unsigned long long>(object_bytes), static_cast<unsigned long long>(free_bytes),
                static_cast<unsigned long long>(reserved), rs.size(), rs.size() == 1 ? "" : "s",
                static_cast<unsigned long long>(st.generation()));
    print_reservations(st, rs);
    return 0;
}

int cmd_stat(Device &d, const Opts &o, const std::string &name)
{
    if (name.empty()) return cmd_store_stat(d, o);
    const ObjectInfo i = ObjectStore(d).stat(name);
    if (o.json) print(object_json(i));
    else print_object(i);
    return 0;
}

// How put and get treat FILE: .npy (a typed tensor) by its name, or as --npy says
// (the only way for "-", stdin or stdout).
bool is_npy(const std::string &file, bool npy_flag) { return npy_flag || ends_with(file, ".npy"); }

// A file (or stdin, "-") as an object's contents: a .npy file as a typed tensor (its
// dtype, structured ones included, as csd/npy.hpp records it), anything else as a blob.
npy::Array read_object_file(const std::string &file, bool npy_flag, const Cancellable *c = nullptr)
{
    auto bytes = slurp(file, c);
    if (!is_npy(file, npy_flag)) return npy::Array{"", {}, std::move(bytes)};
    try {
        return npy::parse(bytes);
    } catch (const Error &e) {
        die((file == "-" ? "stdin" : file) + ": " + e.what());
    }
}

// Writes an object's bytes to a file, or to stdout for "-" (.npy for a tensor, with its
// recorded dtype).
void write_object_file(const std::string &file, const ObjectInfo &info, std::vector<uint8_t> data, bool npy_flag)
{
    if (is_npy(file, npy_flag)) {
        if (!info.is_tensor()) die("object '" + info.name + "' is a blob, not a tensor: write it to a raw file");
        try {
            data = npy::format(info.dtype, info.shape, data);
        } catch (const Error &e) {
            die("object '" + info.name + "' cannot be a .npy file (" + e.what() +
                "): write its bytes to a file not ending in .npy");
        }
    }
    if (file == "-") {
        if (std::fwrite(data.data(), 1, data.size(), stdout) != data.size() || std::fflush(stdout) != 0) {
            throw Error("cannot write stdout", errno);
        }
        return;
    }
    std::ofstream f(file, std::ios::binary);
    f.write(reinterpret_cast<const char *>(data.data()), static_cast<std::streamsize>(data.size()));
    f.close();
    if (!f) throw Error("cannot write " + file, errno ? errno : EIO);
}

// What put and get report with --json: the object's catalog entry and the file it came
// from or went to (on stderr when a get's stdout carries the object's bytes).
void print_transfer(const Opts &o, const ObjectInfo &info, const std::string &file, bool got)
{
    if (!o.json) return;
    json j = object_json(info);
    j["file"] = file;
    print(j, got && file == "-" ? stderr : stdout);
}

// Reads up to n bytes from src into buf, fewer only at its end.
size_t read_full(ObjectSource &src, uint8_t *buf, size_t n)
{
    size_t got = 0;
    for (size_t k; got < n && (k = src.read(buf + got, n - got)) > 0;) got += k;
    return got;
}

// What a .npy file's header said, and the data bytes read with it.
struct NpyStart {
    npy::Header header;
    std::vector<uint8_t> data;  // the first bytes of the data, read with the header
};

// Reads a .npy header from in (a usage error naming `label` if it is not one); a regular
// file's length must match what the header describes.
NpyStart read_npy_header(int fd, FdSource &in, const std::string &label)
{
    try {
        std::vector<uint8_t> head(12);
        head.resize(read_full(in, head.data(), head.size()));
        const size_t had = head.size();
        head.resize(std::max(npy::header_size(head.data(), head.size()), had));
        head.resize(had + read_full(in, head.data() + had, head.size() - had));
        NpyStart s{npy::parse_header(head.data(), head.size()), {}};
        s.data.assign(head.begin() + static_cast<long>(s.header.size), head.end());
        const uint64_t rest = FdSource(fd, label).size();
        if (rest != ObjectSource::kUnknownSize && rest + s.data.size() != s.header.data_bytes) {
            throw Error(".npy data is " + std::to_string(rest + s.data.size()) +
                            " bytes; its header's dtype and shape describe " + std::to_string(s.header.data_bytes),
                        EINVAL);
        }
        return s;
    } catch (const Error &e) {
        die(label + ": " + e.what());
    }
}

// A .npy file's data: the bytes read with its header, then the rest of the file, promising
// the size the header describes.
class NpyDataSource : public ObjectSource {
public:
    // start.data, then rest's bytes.
    NpyDataSource(NpyStart start, ObjectSource &rest) : s_(std::move(start)), rest_(rest) {}
    // What the header describes.
    uint64_t size() const override { return s_.header.data_bytes; }
    // The header.
    const npy::Header &header() const { return s_.header; }
    // From the bytes read with the header, then from the rest.
    uint64_t read(uint8_t *buf, uint64_t n) override
    {
        if (pos_ == s_.data.size()) return rest_.read(buf, n);
        n = std::min<uint64_t>(n, s_.data.size() - pos_);
        std::memcpy(buf, s_.data.data() + pos_, n);
        pos_ += n;
        return n;
    }

private:
    NpyStart s_;
    ObjectSource &rest_;
    size_t pos_ = 0;
};

// Streams a file (or stdin, "-") into the store a chunk at a time: a .npy file's header
// read first (its dtype and shape), then its data, which must be as long as the header says.
int cmd_put(Device &d, const Opts &o, const std::string &name, const std::string &file, bool npy_flag)
{
    const Cancellable c("put of '" + name + "'");
    const std::string label = file == "-" ? "stdin" : file;
    const int fd = file == "-" ? STDIN_FILENO : open(file.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw Error("cannot read " + file, errno);
    struct Closer {
        int fd;
        ~Closer()
        {
            if (fd != STDIN_FILENO) close(fd);
        }
    } closer{fd};
    FdSource in(fd, label);
    in.interrupted = [&c] { c.check("nothing stored"); };  // a stop signal ends a blocked read (EINTR)
    std::optional<NpyDataSource> npy;
    ObjectSource *src = &in;
    if (is_npy(file, npy_flag)) src = &npy.emplace(read_npy_header(fd, in, label), in);
    const std::string dtype = npy ? npy->header().dtype : "";
    const std::vector<uint64_t> shape = npy ? npy->header().shape : std::vector<uint64_t>{};
    ObjectStore st(d);
    c.check("nothing stored");
    st.put(name, *src, dtype, shape,
           c.wrap(bar(o, "put " + name, src->size()), "nothing stored, its reserved space released"));
    if (o.json) print_transfer(o, st.stat(name), file, false);
    return 0;
}

// Where a get writes: stdout for "-"; a new or regular file through a temporary file
// beside it (beside a symbolic link's target), renamed over it only once the object
// checked out (a failed get leaves an existing file as it was; a replaced one keeps its
// mode); anything else (a FIFO, /dev/null) opened as it is.
class OutputFile {
public:
    // Opens the destination for file.
    explicit OutputFile(const std::string &file) : file_(file)
    {
        if (file == "-") {
            fd_ = STDOUT_FILENO;
            return;
        }
        struct stat st {};
        if (stat(file.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
            fd_ = open(file.c_str(), O_WRONLY | O_CLOEXEC);
            if (fd_ < 0) throw Error("cannot write " + file, errno);
            return;
        }
        if (char *real = realpath(file.c_str(), nullptr)) {  // an existing file, or a link's target
            file_ = real;
            std::free(real);
        }
        tmp_ = file_ + ".csdctl-XXXXXX";
        fd_ = mkostemp(&tmp_[0], O_CLOEXEC);
        if (fd_ < 0) throw Error("cannot write " + file + " (a temporary file beside it)", errno);
        mode_t mode = 0;
        if (stat(file_.c_str(), &st) == 0) {
            mode = st.st_mode & 07777;
        } else {
            mode = umask(0);
            umask(mode);
            mode = 0666 & ~mode;
        }
        fchmod(fd_, mode);
    }
    ~OutputFile()
    {
        if (fd_ != STDOUT_FILENO) close(fd_);
        if (!tmp_.empty()) unlink(tmp_.c_str());  // still there: the get failed
    }
    OutputFile(const OutputFile &) = delete;
    OutputFile &operator=(const OutputFile &) = delete;
    // The descriptor to write.
    int fd() const { return fd_; }
    // Puts the written file in place (a temporary one renamed over file).
    void commit()
    {
        if (tmp_.empty()) return;
        if (rename(tmp_.c_str(), file_.c_str()) != 0) throw Error("cannot write " + file_, errno);
        tmp_.clear();
    }

private:
    std::string file_, tmp_;
    int fd_ = -1;
};

// Streams an object to a file (or stdout, "-") a chunk at a time, a .npy header first for
// a tensor written as .npy.
int cmd_get(Device &d, const Opts &o, const std::string &name, const std::string &file, bool npy_flag)
{
    const Cancellable c("get of '" + name + "'");
    ObjectStore st(d);
    const ObjectInfo info = st.stat(name);
    const bool npy = is_npy(file, npy_flag);
    auto npy_header = [&](const ObjectInfo &i) {
        if (!i.is_tensor()) die("object '" + i.name + "' is a blob, not a tensor: write it to a raw file");
        try {
            if (npy::array_bytes(npy::parse_dtype(i.dtype), i.shape) != i.bytes) {
                throw Error("its dtype and shape do not describe its " + std::to_string(i.bytes) + " bytes", EINVAL);
            }
            return npy::header(i.dtype, i.shape);
        } catch (const Error &e) {
            die("object '" + i.name + "' cannot be a .npy file (" + e.what() +
                "): write its bytes to a file not ending in .npy");
        }
    };
    if (npy) npy_header(info);  // refused before anything is written
    OutputFile out(file);
    FdSink sink(out.fd(), file == "-" ? "stdout" : file);
    sink.interrupted = [&c] { c.check("nothing written"); };
    if (npy) sink.header = npy_header;
    const ObjectInfo got =
        st.get_into(name, sink, c.wrap(bar(o, "get " + name, info.bytes), "nothing written"));
    out.commit();
    print_transfer(o, got, file, true);
    return 0;
}

int set_format(DriveSet &s, const Opts &o, bool force)
{
    s.format(force);
    if (o.json) print({{"formatted", true}, {"drives", s.size()}});
    else std::printf("formatted %zu drives\n", s.size());
    return 0;
}

int set_ls(DriveSet &s, const Opts &o)
{
    const auto v = s.list();
    if (o.json) {
        json list = json::array();
        for (const auto &i : v) {
            json j = object_json(i);
            j["striped"] = s.striped(i.name);
            list.push_back(j);
        }
        print(list);
    } else {
        for (const auto &i : v) print_object(i);
        std::printf("%zu objects on %zu drives\n", v.size(), s.size());
    }
    return 0;
}

int set_put(DriveSet &s, const Opts &o, const std::string &name, const std::string &file, bool npy_flag,
            const std::string &placement)
{
    const npy::Array a = read_object_file(file, npy_flag);
    if (placement == "striped") s.put_striped(name, a.data.data(), a.data.size(), a.dtype, a.shape);
    else if (placement == "replicated") s.put_replicated(name, a.data.data(), a.data.size(), a.dtype, a.shape);
    else s.put(name, a.data.data(), a.data.size(), a.dtype, a.shape);
    if (o.json) print_transfer(o, s.stat(name), file, false);
    return 0;
}

}  // namespace

// ---------------------------------------------------------------- the object store
json object_json(const ObjectInfo &i)
{
    return {{"name", i.name}, {"bytes", i.bytes}, {"dtype", i.dtype}, {"shape", i.shape},
            {"crc32c", hex(i.crc32c, 8)}, {"generation", i.generation}};
}

void print_object(const ObjectInfo &i)
{
    std::printf("%-24s %12llu  %-6s %-16s crc32c %08x\n", i.name.c_str(), static_cast<unsigned long long>(i.bytes),
                i.is_tensor() ? i.dtype.c_str() : "blob", i.is_tensor() ? shape_str(i.shape).c_str() : "", i.crc32c);
}

// What the store's commands take.
struct StoreArgs {
    std::string name, file, placement = "home";
    bool force = false, npy_flag = false;
    uint64_t max_age = 3600;
};

void add_store_commands(Cli &c)
{
    CLI::App &app = c.app;
    const Opts &o = c.o;
    StoreArgs &a = c.keep<StoreArgs>();
    auto *format = app.add_subcommand("format", "create an empty object store on the namespace (refused where it "
                                                "holds a partition table, a filesystem or a store, unless --force)");
    format->add_flag("--force", a.force, "format over whatever the namespace holds (its data is lost)");
    c.writers.push_back({format});
    format->callback([&] {
        c.action = [&](Device &d) { return cmd_format(d, o, a.force); };
        c.set_action = [&](DriveSet &s) { return set_format(s, o, a.force); };
    });
    app.add_subcommand("ls", "list objects")->callback([&] {
        c.action = [&](Device &d) { return cmd_ls(d, o); };
        c.set_action = [&](DriveSet &s) { return set_ls(s, o); };
    });

    auto *stat = app.add_subcommand("stat", "one object's catalog entry; without NAME, the store's space and "
                                            "its reservations (puts in progress or killed, and their writers)");
    stat->add_option("name", a.name, "object");
    stat->callback([&] {
        c.action = [&](Device &d) { return cmd_stat(d, o, a.name); };
        c.set_action = [&](DriveSet &s) {
            if (o.json) print(object_json(s.stat(a.name)));
            else print_object(s.stat(a.name));
            return 0;
        };
    });
    auto *rm = app.add_subcommand("rm", "remove an object");
    c.writers.push_back({rm});
    rm->add_option("name", a.name, "object")->required();
    rm->callback([&] {
        auto removed = [&] {
            if (o.json) print({{"removed", a.name}});
            return 0;
        };
        c.action = [&, removed](Device &d) { ObjectStore(d).remove(a.name); return removed(); };
        c.set_action = [&, removed](DriveSet &s) { s.remove(a.name); return removed(); };
    });
    auto *reclaim = app.add_subcommand("reclaim", "free space reserved by puts whose writer died");
    c.writers.push_back({reclaim});
    reclaim->add_option("--older-than", a.max_age, "only reservations at least this many seconds old (default 3600)");
    reclaim->callback([&] { c.action = [&](Device &d) { return cmd_reclaim(d, o, a.max_age); }; });
    auto *put = app.add_subcommand("put", "store FILE (.npy: as a typed tensor; -: stdin) as object NAME");
    c.writers.push_back({put});
    put->add_option("name", a.name, "object")->required();
    put->add_option("file", a.file, "file to store, - for stdin")->required();
    put->add_flag("--npy", a.npy_flag, "FILE is a .npy file whatever its name (for -)");
    put->add_option("--placement", a.placement, "with --drives: home (the whole object on one drive), striped "
                                                "(rows over every drive) or replicated")
        ->check(CLI::IsMember({"home", "striped", "replicated"}));
    c.choices["csdctl put --placement"] = {"home", "striped", "replicated"};
    put->callback([&] {
        c.action = [&](Device &d) { return cmd_put(d, o, a.name, a.file, a.npy_flag); };
        c.set_action = [&](DriveSet &s) { return set_put(s, o, a.name, a.file, a.npy_flag, a.placement); };
    });
    auto *get = app.add_subcommand("get", "write object NAME to FILE (.npy for tensors; -: stdout)");
    get->add_option("name", a.name, "object")->required();
    get->add_option("file", a.file, "file to write, - for stdout")->required();
    get->add_flag("--npy", a.npy_flag, "write a .npy file whatever FILE's name (for -)");
    get->callback([&] {
        c.action = [&](Device &d) { return cmd_get(d, o, a.name, a.file, a.npy_flag); };
        c.set_action = [&](DriveSet &s) {
            const ObjectInfo info = s.stat(a.name);
            write_object_file(a.file, info, s.get(a.name), a.npy_flag);
            print_transfer(o, info, a.file, true);
            return 0;
        };
    });
}

}  // namespace csdctl
