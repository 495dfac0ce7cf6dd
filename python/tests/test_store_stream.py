# SPDX-License-Identifier: MIT
"""Streaming put and get (issue 43 item 2): Store.put_file from a path, a file object (one
that can seek, a pipe, one without a descriptor) and a memory map, Store.get_file to a path
and to file objects, .npy handled on the way, cancellation releasing the space, and host
memory bounded whatever the object's size."""
import errno
import io
import mmap
import os
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

import nvme_csd


@pytest.fixture
def data():
    """9 MiB and a bit of random bytes: past two 4 MiB chunks."""
    return np.random.default_rng(5).integers(0, 256, (9 << 20) + 1234, dtype=np.uint8).tobytes()


def test_put_file_from_a_path_file_objects_a_pipe_and_a_memory_map(dev, tmp_path, data):
    path = tmp_path / "src.bin"
    path.write_bytes(data)
    dev.store.put_file("path", path)
    assert dev.store["path"] == data
    with open(path, "rb") as f:        # from its position on; positioned at its end after
        f.read(100)
        dev.store.put_file("rest", f)
        assert f.tell() == len(data)
    assert dev.store["rest"] == data[100:]
    dev.store.put_file("bytesio", io.BytesIO(data))    # no descriptor: through read()
    assert dev.store["bytesio"] == data
    r, w = os.pipe()                   # a pipe: its length unknown until its end

    def feed():
        with os.fdopen(w, "wb") as out:
            for i in range(0, len(data), 1 << 20):
                out.write(data[i:i + (1 << 20)])
    t = threading.Thread(target=feed)
    t.start()
    with os.fdopen(r, "rb") as f:
        dev.store.put_file("pipe", f)
    t.join()
    assert dev.store["pipe"] == data
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
        dev.store.put_file("mmap", m)
    assert dev.store["mmap"] == data
    a = np.arange(3 << 18, dtype="<f4").reshape(768, 1024)
    np.save(tmp_path / "a.npy", a)
    mm = np.load(tmp_path / "a.npy", mmap_mode="r")
    dev.store.put_file("memmap", mm)
    assert np.array_equal(dev.store["memmap"], a) and dev.store["memmap"].dtype == a.dtype
    assert len({dev.store.stat(n)["crc32c"] for n in ("path", "bytesio", "pipe", "mmap")}) == 1
    assert dev.store.reservations() == []



class _Reader:
    """A file-like object with only read(n), giving its bytes as `kind` in pieces of 1 MiB at most."""

    def __init__(self, data, kind):
        self.data, self.at, self.kind = data, 0, kind

    def read(self, n):
        n = min(n, 1 << 20, len(self.data) - self.at)
        piece = self.data[self.at:self.at + n]
        self.at += n
        if self.kind == "str":
            return piece.hex()
        return {"bytearray": bytearray, "memoryview": memoryview, "numpy": lambda b: np.frombuffer(b, dtype=np.uint8)}[self.kind](piece)


def test_put_file_from_readers_giving_any_bytes_like(dev, data):
    """read(n) may give bytes, bytearray, a memoryview or a numpy array (a buffer), as file
    objects and their wrappers do; anything else is a clear error that stores nothing."""
    for kind in ("bytearray", "memoryview", "numpy"):
        dev.store.put_file(kind, _Reader(data, kind))
        assert dev.store[kind] == data, kind
    with pytest.raises(nvme_csd.errors.InvalidArgument, match="read.n. returned str, not bytes"):
        dev.store.put_file("text", _Reader(data, "str"))
    assert "text" not in dev.store and dev.store.reservations() == []

def test_npy_files_stream_in_and_out_with_their_dtype_and_shape(dev, tmp_path):
    rec = np.dtype([("id", "<u4"), ("v", "<f8", (2,))])
    for a in (np.arange(6 << 18, dtype="<i2").reshape(3, -1), np.zeros(70000, dtype=rec)):
        np.save(tmp_path / "a.npy", a)
        dev.store.put_file("t", tmp_path / "a.npy")
        back = dev.store["t"]
        assert back.dtype == a.dtype and back.shape == a.shape and back.tobytes() == a.tobytes()
        info = dev.store.get_file("t", tmp_path / "b.npy")
        assert info["shape"] == list(a.shape)
        b = np.load(tmp_path / "b.npy")
        assert b.dtype == a.dtype and np.array_equal(b, a)
        out = io.BytesIO()                 # a file object without a descriptor
        dev.store.get_file("t", out, npy=True)
        assert out.getvalue() == (tmp_path / "b.npy").read_bytes()
        with open(tmp_path / "a.npy", "rb") as f:   # a .npy file object, npy=True
            dev.store.put_file("t2", f, npy=True)
        assert dev.store.stat("t2")["shape"] == list(a.shape)
    short = (tmp_path / "a.npy").read_bytes()[:-3]
    with pytest.raises(nvme_csd.CsdError, match="nothing stored"):
        dev.store.put_file("short", io.BytesIO(short), npy=True)
    assert "short" not in dev.store and dev.store.reservations() == []
    with pytest.raises(nvme_csd.InvalidArgumentType, match="blob"):
        dev.store["blob"] = b"abc"
        dev.store.get_file("blob", tmp_path / "blob.npy")
    assert not (tmp_path / "blob.npy").exists()


def test_get_file_to_a_path_and_to_file_objects(dev, tmp_path, data):
    dev.store["x"] = data
    dev.store.get_file("x", tmp_path / "x.bin")
    assert (tmp_path / "x.bin").read_bytes() == data
    with open(tmp_path / "y.bin", "wb") as f:
        f.write(b"head")
        dev.store.get_file("x", f)
        assert f.tell() == 4 + len(data)
    assert (tmp_path / "y.bin").read_bytes() == b"head" + data
    out = io.BytesIO()
    assert dev.store.get_file("x", out)["bytes"] == len(data)
    assert out.getvalue() == data
    assert sorted(p.name for p in tmp_path.iterdir() if "nvme_csd-" in p.name) == []


def test_cancelling_a_streaming_put_releases_its_space(dev, tmp_path, data):
    dev.store["x"] = b"the old version"
    (tmp_path / "src.bin").write_bytes(data)

    def stop(done, total):
        raise KeyboardInterrupt
    with pytest.raises(KeyboardInterrupt):
        dev.store.put_file("x", tmp_path / "src.bin", progress=stop)

    class Broken(io.RawIOBase):
        """A reader that fails after 5 MiB."""
        given = 0

        def readable(self):
            return True

        def read(self, n=-1):
            if self.given > 5 << 20:
                raise OSError("the network went away")
            self.given += n
            return data[self.given - n:self.given]
    with pytest.raises(OSError, match="the network went away"):
        dev.store.put_file("x", Broken())
    assert dev.store["x"] == b"the old version"
    assert dev.store.reservations() == []


def test_a_failed_get_file_leaves_the_file_as_it_was(tmp_path):
    marker = b"damage me here, " * 65536
    with nvme_csd.open(f"emu:{tmp_path}/ns.img?size=64M") as dev:
        dev.store.format()
        dev.store["d"] = marker
    raw = bytearray((tmp_path / "ns.img").read_bytes())
    raw[raw.find(marker) + 5000] ^= 1
    (tmp_path / "ns.img").write_bytes(bytes(raw))
    (tmp_path / "keep.bin").write_bytes(b"precious")
    with nvme_csd.open(f"emu:{tmp_path}/ns.img?size=64M") as dev:
        with pytest.raises(nvme_csd.CsdError, match="CRC-32C"):
            dev.store.get_file("d", tmp_path / "keep.bin")
    assert (tmp_path / "keep.bin").read_bytes() == b"precious"
    assert [p.name for p in tmp_path.iterdir() if "nvme_csd-" in p.name] == []


@pytest.mark.skipif(bool(os.environ.get("CSD_TEST_DEVICE")), reason="host only: 1 GiB of files (the guest's /tmp is its RAM)")
def test_host_memory_stays_bounded_whatever_the_size(tmp_path):
    """put_file from a path and from a memory map, get_file to a path, of a 320 MiB object,
    in a fresh interpreter: its peak resident memory grows by far less than the object."""
    size = 320 << 20
    with open(tmp_path / "src.bin", "wb") as f:
        for _ in range(size >> 20):
            f.write(os.urandom(1 << 20))
    script = textwrap.dedent(f"""
        import mmap, resource, sys, nvme_csd
        base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        with nvme_csd.open("emu:{tmp_path}/ns.img?size=1G") as dev:
            dev.store.format(force=True)
            if sys.argv[1] == "path":
                dev.store.put_file("x", "{tmp_path}/src.bin")
            elif sys.argv[1] == "mmap":
                with open("{tmp_path}/src.bin", "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
                    dev.store.put_file("x", m)
            dev.store.get_file("x", "{tmp_path}/out.bin")
        print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base) * 1024)
    """)
    for how in ("path", "mmap"):
        out = subprocess.run([sys.executable, "-c", script, how], capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, out.stderr
        assert int(out.stdout) < 64 << 20, f"{how}: peak resident memory grew by {int(out.stdout) >> 20} MiB"
        assert (tmp_path / "out.bin").stat().st_size == size


def test_get_file_through_a_link_writes_its_target_keeping_its_mode(dev, tmp_path):
    dev.store["x"] = b"new bytes"
    (tmp_path / "target.bin").write_bytes(b"old")
    (tmp_path / "target.bin").chmod(0o600)
    (tmp_path / "link.bin").symlink_to("target.bin")
    dev.store.get_file("x", tmp_path / "link.bin")
    assert (tmp_path / "link.bin").is_symlink()
    assert (tmp_path / "target.bin").read_bytes() == b"new bytes"
    assert (tmp_path / "target.bin").stat().st_mode & 0o777 == 0o600


def test_a_read_only_open_streams_out_and_refuses_to_stream_in(tmp_path):
    with nvme_csd.open(f"emu:{tmp_path}/ns.img?size=64M") as dev:
        dev.store.format()
        dev.store["x"] = b"kept"
    (tmp_path / "src.bin").write_bytes(b"new")
    with nvme_csd.open(f"emu:{tmp_path}/ns.img?size=64M", read_only=True) as dev:
        with pytest.raises(nvme_csd.CsdError, match="read-only") as e:
            dev.store.put_file("x", tmp_path / "src.bin")
        assert e.value.errno == errno.EROFS
        dev.store.get_file("x", tmp_path / "out.bin")
    assert (tmp_path / "out.bin").read_bytes() == b"kept"


def test_put_file_from_proc_and_sys_reads_what_they_hold(dev):
    """procfs and sysfs files say a size (0, 4096) other than what they hold: read to the end."""
    for path in ("/proc/self/status", "/proc/cpuinfo", "/sys/kernel/mm/transparent_hugepage/enabled"):
        if not os.path.exists(path):
            continue
        want = open(path, "rb").read()
        dev.store.put_file("p", path)
        got = bytes(dev.store["p"])
        if path == "/proc/self/status":  # this process's own: its figures move
            assert got.startswith(b"Name:")
        else:
            assert got == want, path


def test_get_file_into_an_append_file_refuses_a_replaced_object(dev, tmp_path, data):
    """A file opened to append cannot be rewritten from the object's start: an object
    replaced while it is read is an error there (EAGAIN, as for a pipe), never a silent mix."""
    dev.store["x"] = data
    log = tmp_path / "app.log"
    log.write_bytes(b"PRIOR\n")
    fired = []

    def progress(done, total):
        if not fired and 0 < done < total:
            fired.append(1)
            dev.store["x"] = data[: len(data) // 2]  # another writer replaces x ...
            dev.store["filler"] = os.urandom(len(data))  # ... and its old space is reused

    with open(log, "ab") as f:
        with pytest.raises(nvme_csd.errors.CsdError) as e:
            dev.store.get_file("x", f, progress=progress)
    assert fired and e.value.errno == errno.EAGAIN
    assert log.read_bytes().startswith(b"PRIOR\n")


def run_fresh(script: str, seconds: int, hang: str) -> None:
    """Runs script in a fresh interpreter, which must print ok; a hang fails (hang, seconds)."""
    try:
        out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=seconds)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{hang} for {seconds} s")
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


def test_a_streaming_put_lets_its_store_serve_meanwhile(tmp_path):
    """A put_file from a pipe fed by another thread that gets another object of the same
    device (a transform between two objects), and a progress callback that lists the store's
    reservations: both use the store while the put runs. The put held the store's lock from
    its first chunk to its commit, and both waited for ever (run in a fresh interpreter, so
    that a hang fails this test instead of stopping the suite)."""
    script = textwrap.dedent(f"""
        import os, threading, nvme_csd
        with nvme_csd.open("emu:{tmp_path}/ns.img?size=256M") as dev:
            dev.store.format(force=True)
            src = os.urandom((9 << 20) + 7)
            dev.store["src"] = src
            r, w = os.pipe()
            def feed():
                with os.fdopen(w, "wb") as f:
                    for _ in range(2):
                        f.write(dev.store["src"])   # a get while the put reads the pipe
            t = threading.Thread(target=feed)
            t.start()
            seen = []
            with os.fdopen(r, "rb") as f:
                dev.store.put_file("dst", f, progress=lambda done, total: seen.append(len(dev.store.reservations())))
            t.join()
            assert dev.store["dst"] == src + src
            assert seen and max(seen) >= 1, seen
            assert dev.store.reservations() == []
        print("ok")
    """)
    run_fresh(script, 120, "the put and the other users of its store waited on each other")


def test_a_signal_stops_a_get_file_blocked_on_a_fifo(tmp_path):
    """Ctrl-C (SIGINT) while get_file writes to a FIFO whose reader has stopped reading
    (or a put_file reads a pipe whose writer has gone quiet): KeyboardInterrupt, nothing
    stored, no space reserved. get_file to a FIFO path writes the descriptor from libcsd,
    which went on after EINTR without looking at Python's signals and waited for ever (a
    fresh interpreter, so that a hang fails this test)."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    script = textwrap.dedent(f"""
        import os, signal, subprocess, sys, nvme_csd
        signal.signal(signal.SIGINT, signal.default_int_handler)  # a background job ignores it
        def interrupt_soon():  # from another process, as Ctrl-C (a thread of this one takes its own kill)
            subprocess.Popen(["sh", "-c", f"sleep 1; kill -INT {{os.getpid()}}"])
        with nvme_csd.open("emu:{tmp_path}/ns.img?size=256M") as dev:
            dev.store.format(force=True)
            r, w = os.pipe()
            os.write(w, os.urandom(32 << 10))    # then nothing more, and w stays open
            interrupt_soon()
            try:
                with os.fdopen(r, "rb") as f:
                    dev.store.put_file("x", f)
                sys.exit("put_file ended without its source's end")
            except KeyboardInterrupt:
                pass
            assert "x" not in dev.store and dev.store.reservations() == []
            dev.store["y"] = os.urandom(9 << 20)  # more than a FIFO holds
            reader = os.open("{fifo}", os.O_RDONLY | os.O_NONBLOCK)  # open, never read
            interrupt_soon()
            try:
                dev.store.get_file("y", "{fifo}")
                sys.exit("get_file ended though nobody read the FIFO")
            except KeyboardInterrupt:
                pass
            os.close(reader)
        print("ok")
    """)
    run_fresh(script, 60, "SIGINT did not stop put_file / get_file blocked on a pipe or a FIFO")
