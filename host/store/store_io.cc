// SPDX-License-Identifier: MIT
// store_io.cc - the store's streaming sources and destinations (csd/store_io.hpp):
// file descriptors, memory (a memory map paged out as it is read), a writer callback.
#include "csd/store_io.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <vector>

#include "csd/error.hpp"

namespace csd {

FdSource::FdSource(int fd, std::string what, uint64_t size) : fd_(fd), what_(std::move(what)), size_(size)
{
    if (size != kUnknownSize) return;
    struct stat st {};
    if (fstat(fd, &st) != 0) throw Error("cannot read " + what_, errno);
    // A regular file's size is what it holds, except where no block backs it: procfs and sysfs
    // files say 0 or 4096 whatever they hold (and a file of holes is read as well either way).
    if (S_ISREG(st.st_mode) && st.st_blocks > 0) {
        const off_t at = lseek(fd, 0, SEEK_CUR);
        if (at >= 0 && at <= st.st_size) size_ = static_cast<uint64_t>(st.st_size - at);
    }
}

uint64_t FdSource::read(uint8_t *buf, uint64_t n)
{
    for (;;) {
        const ssize_t got = ::read(fd_, buf, n);
        if (got >= 0) {
            // a signal that came once some bytes had moved ends read(2) short, not with EINTR:
            // look now, before the next read blocks again (as Python's own I/O does)
            if (got > 0 && static_cast<uint64_t>(got) < n && interrupted) interrupted();
            return static_cast<uint64_t>(got);
        }
        if (errno != EINTR) throw Error("cannot read " + what_, errno);
        if (interrupted) interrupted();
    }
}

uint64_t MemorySource::read(uint8_t *buf, uint64_t n)
{
    n = std::min(n, bytes_ - pos_);
    std::copy(p_ + pos_, p_ + pos_ + n, buf);
    pos_ += n;
    if (release_) {
        // whole pages wholly given, from the first page not yet released
        const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
        const uintptr_t base = reinterpret_cast<uintptr_t>(p_);
        const uintptr_t from = (base + released_ + page - 1) / page * page, to = (base + pos_) / page * page;
        if (to > from) {
#ifdef MADV_PAGEOUT
            madvise(reinterpret_cast<void *>(from), to - from, MADV_PAGEOUT);  // advice: a kernel without it ignores it
#endif
            released_ = to - base;
        }
    }
    return n;
}

void StreamSink::land(const ObjectInfo &o, const Fill &fill)
{
    std::vector<uint8_t> buf(std::min<uint64_t>(o.bytes, kStreamChunk));
    for (uint64_t pos = 0; pos < o.bytes; pos += buf.size()) {
        const uint64_t n = std::min<uint64_t>(buf.size(), o.bytes - pos);
        fill(pos, n, buf.data());
        write_(pos, buf.data(), n);
    }
}

FdSink::FdSink(int fd, std::string what) : fd_(fd), what_(std::move(what))
{
    // Where the object starts, to write it again if it is replaced meanwhile: nowhere for a
    // pipe, nor for a file opened to append (its writes go to its end whatever the offset).
    const off_t at = lseek(fd, 0, SEEK_CUR);
    const int flags = fcntl(fd, F_GETFL);
    start_ = at >= 0 && flags >= 0 && !(flags & O_APPEND) ? at : -1;
}

void FdSink::land(const ObjectInfo &o, const Fill &fill)
{
    const bool again = landed_;
    if (again) {  // the object was replaced while it was written: write the new version over it
        if (start_ < 0) {
            throw Error("object '" + o.name + "' was replaced by another writer while it was written to " + what_ +
                            ", which cannot be rewritten: what was written is not one version of it; get it again",
                        EAGAIN);
        }
        if (lseek(fd_, start_, SEEK_SET) < 0) throw Error("cannot seek " + what_, errno);
    }
    landed_ = true;
    uint64_t end = o.bytes;
    if (header) {
        const std::vector<uint8_t> h = header(o);
        write_all(h.data(), h.size());
        end += h.size();
    }
    StreamSink([this](uint64_t, const uint8_t *data, uint64_t n) { write_all(data, n); }).land(o, fill);
    struct stat st {};  // a shorter new version: cut the old one's end
    if (again && start_ >= 0 && fstat(fd_, &st) == 0 && S_ISREG(st.st_mode) &&
        ftruncate(fd_, start_ + static_cast<off_t>(end)) != 0) {
        throw Error("cannot truncate " + what_, errno);
    }
}

void FdSink::write_all(const uint8_t *data, uint64_t n)
{
    while (n > 0) {
        const ssize_t w = ::write(fd_, data, n);
        if (w < 0) {
            if (errno != EINTR) throw Error("cannot write " + what_, errno);
            if (interrupted) interrupted();
            continue;
        }
        data += w;
        n -= static_cast<uint64_t>(w);
        if (n > 0 && interrupted) interrupted();  // short: maybe a signal, as for read above
    }
}

}  // namespace csd
