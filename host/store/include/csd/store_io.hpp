// SPDX-License-Identifier: MIT
// store_io.hpp - sources and destinations for streaming an object into and out of the
// store (ObjectStore::put from an ObjectSource, ObjectStore::get_into an ObjectSink) with
// host memory bounded by a few chunks whatever the object's size: a file descriptor (a
// file, stdin, a pipe, stdout), a callback, memory (a memory map given back as it is
// read). docs/store.md, "Streaming put and get".
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "csd/store.hpp"

namespace csd {

// Bytes a streaming put reads and writes at a time, and a file destination writes at a
// time (the most host memory either holds for the object's bytes).
constexpr uint64_t kStreamChunk = 4 << 20;

// Where a streaming put (ObjectStore::put(name, ObjectSource &, ...)) reads an object's bytes.
class ObjectSource {
public:
    // size() of a source whose length is not known before its end (a pipe, stdin).
    static constexpr uint64_t kUnknownSize = UINT64_MAX;
    virtual ~ObjectSource() = default;
    // The bytes it will give, or kUnknownSize; a source that then gives another number of
    // bytes fails the put (EIO), which stores nothing.
    virtual uint64_t size() const { return kUnknownSize; }
    // Reads up to n bytes into buf; returns how many, 0 only at its end. An exception it
    // throws stops the put, which releases its space, stores nothing and rethrows it.
    virtual uint64_t read(uint8_t *buf, uint64_t n) = 0;
};

// A file descriptor read from its current position: a regular file's (or block device's)
// size is known from there, a pipe's or terminal's is not. Does not close fd.
class FdSource : public ObjectSource {
public:
    // Reads fd; `what` names it in errors ("stdin", a path). size: the bytes it promises (a
    // .npy header's count, checked by the put), else (kUnknownSize) a regular file's rest.
    FdSource(int fd, std::string what, uint64_t size = kUnknownSize);
    // The bytes from the position at construction to the end, or kUnknownSize.
    uint64_t size() const override { return size_; }
    // read(2), again after EINTR unless interrupted() says stop; throws csd::Error on an error.
    uint64_t read(uint8_t *buf, uint64_t n) override;
    // Called when read(2) returns EINTR or short (a signal may have come after some bytes):
    // throw to stop, return to read on.
    std::function<void()> interrupted;

private:
    int fd_;
    std::string what_;
    uint64_t size_ = kUnknownSize;
};

// Memory as a source. With release set, the pages it has given are handed back to the
// kernel as it goes (madvise MADV_PAGEOUT: a memory-mapped file's pages leave the
// process's resident set, none of their data lost), so a put from a memory map of any
// size stays within a few chunks of resident memory; use it only for mapped files.
class MemorySource : public ObjectSource {
public:
    // Gives data[0, bytes).
    MemorySource(const void *data, uint64_t bytes, bool release = false)
        : p_(static_cast<const uint8_t *>(data)), bytes_(bytes), release_(release) {}
    // All of it.
    uint64_t size() const override { return bytes_; }
    // Copies the next bytes (and with release, pages out those given before).
    uint64_t read(uint8_t *buf, uint64_t n) override;

private:
    const uint8_t *p_;
    uint64_t bytes_, pos_ = 0, released_ = 0;
    bool release_;
};

// Writes a landing's bytes where pos says: called with pos 0 again when the object is
// landed again (another writer replaced it meanwhile). Throws to give up.
using WriteAt = std::function<void(uint64_t pos, const uint8_t *data, uint64_t n)>;

// A destination for ObjectStore::get_into that hands the object's bytes, in order and a
// chunk at a time, to a writer: host memory stays one chunk whatever the object's size.
// The bytes are written before the whole object's CRC-32C is known: on a mismatch
// get_into throws (EIO) after the writer has seen them, so a caller that keeps them must
// act on the error. A second landing starts again at pos 0.
class StreamSink : public ObjectSink {
public:
    // Lands through write.
    explicit StreamSink(WriteAt write) : write_(std::move(write)) {}
    // Reads the object a chunk at a time and writes each before reading the next.
    void land(const ObjectInfo &o, const Fill &fill) override;

private:
    WriteAt write_;
};

// A file descriptor as a destination (a file, stdout, a pipe), written from its position
// at construction. Landing again (the object replaced meanwhile) rewrites a seekable one
// from that position and truncates a regular file after the object's end; a pipe cannot
// be rewritten, so that fails with EAGAIN saying that the bytes written are not one
// version. Does not close fd.
class FdSink : public ObjectSink {
public:
    // Writes fd; `what` names it in errors ("stdout", a path).
    FdSink(int fd, std::string what);
    // Writes the object a chunk at a time, each before the next is read.
    void land(const ObjectInfo &o, const Fill &fill) override;
    // Called when write(2) returns EINTR or short (a signal may have come after some bytes):
    // throw to stop, return to write on.
    std::function<void()> interrupted;
    // Bytes written before each landing's object (a .npy header for the version landing:
    // npy::header); throw to refuse a version (a blob where a tensor is wanted).
    std::function<std::vector<uint8_t>(const ObjectInfo &)> header;

private:
    // Writes all of data[0, n) at the descriptor's position.
    void write_all(const uint8_t *data, uint64_t n);
    int fd_;
    std::string what_;
    int64_t start_ = -1;  // the position at construction; -1 where fd cannot seek
    bool landed_ = false;
};

}  // namespace csd
