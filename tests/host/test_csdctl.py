#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""csdctl as a shell user and a script meet it, on the in-process device (emu:): --version,
--json on every command and on errors (one object: the NVMe status in words and its
code, or the errno), '-' for stdin and stdout, u64 values up to 2^64-1, an unknown
command named, the documented exit codes, a progress bar that writes no carriage return
where stderr is not a terminal, the bash completion script and the man page.

Standard library only. csdctl from $CSDCTL, else this tree's build/meson/host/csdctl.
Prints 'csdctl: N passed, N failed' last (tests/unit/run-unit.sh reads it)."""

import json
import mmap
import os
import pty
import fcntl
import re
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
import unittest
from pathlib import Path

TOP = Path(__file__).resolve().parents[2]
CSDCTL = os.environ.get("CSDCTL") or str(TOP / "build" / "meson" / "host" / "csdctl")
MAN = TOP / "host" / "tools" / "csdctl.1"
DOC = TOP / "docs" / "library.md"
EXIT_OK, EXIT_STATUS, EXIT_USAGE, EXIT_SYSTEM = 0, 1, 2, 3  # as csdctl(1) documents them


def npy(dtype, shape, data):
    """A .npy file (format 1.0) as np.save writes it."""
    header = "{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (dtype, repr(tuple(shape)))
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode() + data


class Csdctl(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = Path(self.tmp.name)
        self.env = dict(os.environ, CSD_DEVICE=f"emu:{self.dir}/drive.img?size=64M&slm=32M")
        self.env.pop("CSD_FRONT_END", None)
        self.undo = []  # run before the directory goes (unwritable: the immutable flag)
        self.run_ok("format")

    def tearDown(self):
        for undo in self.undo:
            undo()
        self.tmp.cleanup()

    def run_csdctl(self, *args, stdin=None, stderr=subprocess.PIPE):
        return subprocess.run([CSDCTL, *args], input=stdin, stdout=subprocess.PIPE, stderr=stderr,
                              env=self.env, cwd=self.dir, timeout=120)

    def run_ok(self, *args, stdin=None):
        p = self.run_csdctl(*args, stdin=stdin)
        self.assertEqual(p.returncode, 0, f"csdctl {' '.join(args)}: {p.stderr.decode()}")
        return p

    def json_ok(self, *args, stdin=None):
        """Runs csdctl --json ARGS and returns the one JSON value its stdout holds."""
        return json.loads(self.run_ok("--json", *args, stdin=stdin).stdout)

    def json_error(self, exit_code, *args):
        """Runs csdctl --json ARGS, expects exit_code and returns its one JSON error object."""
        p = self.run_csdctl("--json", *args)
        self.assertEqual(p.returncode, exit_code, p.stdout + p.stderr)
        err = json.loads(p.stdout)
        self.assertIsInstance(err["error"], str)
        self.assertEqual(err["exit"], exit_code)
        return err

    def put_tensor(self, name, dtype, shape, data):
        (self.dir / f"{name}.npy").write_bytes(npy(dtype, shape, data))
        self.run_ok("put", name, f"{name}.npy")

    # ------------------------------------------------------------ --version
    def test_version_names_csdctl_and_libcsd(self):
        version = re.search(r"version: '([^']+)'", (TOP / "meson.build").read_text()).group(1)
        p = self.run_ok("--version")
        self.assertEqual(p.stdout.decode().strip(), f"csdctl {version} (libcsd {version})")

    # ------------------------------------------------------------ --json everywhere
    def test_json_on_every_command(self):
        self.assertEqual(self.json_ok("format", "--force")["formatted"], True)  # over setUp's store
        self.put_tensor("m", "<f4", (2, 3), struct.pack("<6f", 1, 2, 3, 4, 5, 6))
        self.put_tensor("i", "<f4", (3, 2), struct.pack("<6f", 1, 0, 0, 1, 1, 1))
        put = self.json_ok("put", "blob", "-", stdin=b"x" * 100)
        self.assertEqual((put["name"], put["bytes"], put["file"]), ("blob", 100, "-"))
        self.json_ok("put", "blob2", "m.npy")
        got = self.json_ok("get", "m", "back.npy")
        self.assertEqual((got["name"], got["dtype"], got["shape"]), ("m", "<f4", [2, 3]))
        self.assertEqual([o["name"] for o in self.json_ok("ls")], ["blob", "blob2", "i", "m"])
        self.assertEqual(self.json_ok("stat", "m")["bytes"], 24)
        self.assertEqual(self.json_ok("rm", "blob2"), {"removed": "blob2"})
        self.assertEqual(self.json_ok("run", "reduce", "m", "--op", "sum"),
                         {"object": "m", "op": "sum", "rows": 2, "values": [6.0, 15.0], "where": "device"})
        self.assertEqual(self.json_ok("run", "reduce", "m", "--op", "argmax")["values"], [2, 2])
        self.assertEqual(self.json_ok("run", "gemm", "m", "i", "c"),
                         {"object": "c", "a": "m", "b": "i", "shape": [2, 2], "where": "device"})
        self.assertEqual(self.json_ok("stat", "c")["shape"], [2, 2])
        self.assertIn("checksum", self.json_ok("run", "checksum", "m"))
        self.assertIn("matches", self.json_ok("run", "filter", "m", "hot", "--record-size", "4",
                                              "--field-offset", "0", "--type", "f32", "--op", "gt", "--lo", "3"))
        bench = self.json_ok("bench", "--seconds", "0.05")
        self.assertEqual(bench["transport"], "inproc")
        self.assertEqual([q["queue_depth"] for q in bench["copy_4k_by_queue_depth"]], [1, 8, 32])
        self.assertGreater(bench["median_latency_us"]["read_4k"], 0)
        self.assertEqual(self.json_ok("reclaim")["reclaimed"], 0)
        self.assertEqual(self.json_ok("program", "list"), [])
        self.assertIsInstance(self.json_ok("programs"), list)
        self.assertIsInstance(self.json_ok("stats"), dict)
        self.assertIsInstance(self.json_ok("info"), dict)

    def test_text_output_of_reduce_and_gemm_unchanged(self):
        self.put_tensor("m", "<f4", (2, 3), struct.pack("<6f", 1, 2, 3, 4, 5, 6))
        self.put_tensor("i", "<f4", (3, 2), struct.pack("<6f", 1, 0, 0, 1, 1, 1))
        self.assertEqual(self.run_ok("run", "reduce", "m", "--op", "sum").stdout, b"6\n15\n")
        self.assertEqual(self.run_ok("run", "gemm", "m", "i", "c").stdout, b"c = m x i (2x2)\n")

    # ------------------------------------------------------------ read-only opens
    def unwritable(self, path):
        """Makes path unwritable to this process (mode 0444; for root, also the immutable
        flag where the filesystem has it); True if opening it to write now fails."""
        path.chmod(0o444)
        if os.geteuid() != 0:
            return True
        FS_IOC_GETFLAGS, FS_IOC_SETFLAGS, FS_IMMUTABLE_FL = 0x80086601, 0x40086602, 0x10
        with open(path, "rb") as f:
            try:
                flags = struct.unpack("l", fcntl.ioctl(f, FS_IOC_GETFLAGS, struct.pack("l", 0)))[0]
                fcntl.ioctl(f, FS_IOC_SETFLAGS, struct.pack("l", flags | FS_IMMUTABLE_FL))
            except OSError:
                return False

        def undo():
            with open(path, "rb") as g:
                fcntl.ioctl(g, FS_IOC_SETFLAGS, struct.pack("l", flags))
        self.undo.append(undo)
        return True

    def test_read_only_serves_reads_and_refuses_writes(self):
        """--read-only on an image csdctl may not write: ls, stat, get, info, stats and
        run checksum serve; put, rm, format, reclaim and run filter are refused (exit 3,
        EROFS, naming read-only) and the image stays as it was. Without --read-only the
        open fails, naming --read-only."""
        img = self.dir / "drive.img"
        self.put_tensor("m", "<f4", (2, 3), struct.pack("<6f", 1, 2, 3, 4, 5, 6))
        self.put_tensor("i", "<f4", (3, 2), struct.pack("<6f", 1, 0, 0, 1, 1, 1))
        before = img.read_bytes()
        if self.unwritable(img):
            p = self.run_csdctl("ls")
            self.assertEqual(p.returncode, EXIT_SYSTEM, p.stderr)
            self.assertIn("csdctl --read-only", p.stderr.decode())
        ro = ("--read-only",)
        self.assertEqual([o["name"] for o in self.json_ok(*ro, "ls")], ["i", "m"])
        self.assertEqual(self.json_ok(*ro, "stat", "m")["shape"], [2, 3])
        self.assertEqual(self.json_ok(*ro, "stat")["objects"], 2)
        self.run_ok(*ro, "get", "m", "back.npy")
        self.assertEqual((self.dir / "back.npy").read_bytes(), npy("<f4", (2, 3), struct.pack("<6f", 1, 2, 3, 4, 5, 6)))
        self.assertIsInstance(self.json_ok(*ro, "info"), dict)
        self.assertIsInstance(self.json_ok(*ro, "stats"), dict)
        self.assertEqual(self.json_ok(*ro, "run", "reduce", "m", "--op", "sum")["values"], [6.0, 15.0])
        self.assertIn("checksum", self.json_ok(*ro, "run", "checksum", "m"))
        for cmd in (("put", "x", "-"), ("rm", "m"), ("format", "--force"), ("reclaim",),
                    ("run", "filter", "m", "hot", "--record-size", "4", "--field-offset", "0", "--type", "f32",
                     "--op", "gt", "--lo", "3"), ("run", "gemm", "m", "i", "c")):
            p = self.run_csdctl("--json", *ro, *cmd)
            err = json.loads(p.stdout) if p.stdout else {}
            self.assertEqual((p.returncode, err.get("errno")), (EXIT_SYSTEM, "EROFS"), f"{cmd}: {p.stdout + p.stderr}")
            self.assertIn("opened read-only", err["error"])
        self.assertEqual(img.read_bytes(), before, "a read-only open changed the image")

    # ------------------------------------------------------------ cancellation
    def slow_put(self, dev, name):
        """Starts csdctl put of a 64 MiB file on a drive whose media writes at 20 MB/s and
        returns it once it has written a quarter (its --progress line): its space reserved."""
        if not (self.dir / "big").exists():
            (self.dir / "big").write_bytes(os.urandom(64 << 20))
        p = subprocess.Popen([CSDCTL, "-d", dev, "--progress", "put", name, "big"], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, env=self.env, cwd=self.dir)
        line = p.stderr.readline()
        if b"25%" not in line:
            self.fail(line + p.stderr.read())
        return p

    def test_interrupted_put_releases_its_reservation(self):
        """SIGINT or SIGTERM in the middle of a put: csdctl stops writing, releases the space
        it reserved, stores nothing, says so, and ends by that signal; while it wrote, stat
        showed its reservation and its writer."""
        dev = f"emu:{self.dir}/slow.img?size=128M&model=gen3x4-4core&model.media-write-gbps=0.02"
        self.run_ok("-d", dev, "format")
        self.run_ok("-d", dev, "put", "big", "-", stdin=b"the old version")
        for sig in (signal.SIGINT, signal.SIGTERM):
            p = self.slow_put(dev, "big")
            st = self.json_ok("-d", dev, "stat")
            self.assertEqual([(r["pid"], r["host"], r["running"]) for r in st["reservations"]],
                             [(p.pid, socket.gethostname(), True)], st)
            self.assertEqual(st["reserved_bytes"], 64 << 20)
            self.assertIn(f"reserved by {socket.gethostname()}:{p.pid} (running", self.run_ok("-d", dev, "ls").stdout.decode())
            p.send_signal(sig)
            out, err = p.communicate(timeout=60)
            self.assertEqual(p.returncode, -sig, err)
            self.assertIn(f"interrupted by {signal.Signals(sig).name}".encode(), err)
            self.assertIn(b"nothing stored, its reserved space released", err)
            st = self.json_ok("-d", dev, "stat")
            self.assertEqual((st["reservations"], st["reserved_bytes"]), ([], 0), "the put left its reservation")
            self.assertEqual(self.run_ok("-d", dev, "get", "big", "-").stdout, b"the old version")

    def test_interrupted_put_from_a_waiting_pipe_releases_its_reservation(self):
        """SIGINT while a put from a pipe waits for more bytes (after its first chunks): the
        blocked read ends, the put releases every reservation it grew into and stores nothing."""
        p = subprocess.Popen([CSDCTL, "--progress", "put", "piped", "-"], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=self.env, cwd=self.dir)
        p.stdin.write(os.urandom(9 << 20))   # past two chunks: grown once at least
        p.stdin.flush()
        for _ in range(200):                 # until its space has grown past the first chunk
            st = self.json_ok("stat")
            if st["reserved_bytes"] > 4 << 20:
                break
            time.sleep(0.05)
        self.assertGreater(st["reserved_bytes"], 4 << 20, st)
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=60)
        self.assertEqual(p.returncode, -signal.SIGINT, err)
        self.assertIn(b"nothing stored", err)
        st = self.json_ok("stat")
        self.assertEqual((st["reservations"], st["reserved_bytes"], st["objects"]), ([], 0, 0), st)

    def test_ls_and_stat_show_a_killed_writers_reservation(self):
        """A put killed (SIGKILL: no chance to clean up) leaves its reservation: ls and stat
        show its bytes and its writer, gone; reclaim frees it."""
        dev = f"emu:{self.dir}/slow.img?size=128M&model=gen3x4-4core&model.media-write-gbps=0.02"
        self.run_ok("-d", dev, "format")
        p = self.slow_put(dev, "big")
        p.kill()
        p.communicate(timeout=60)
        st = self.json_ok("-d", dev, "stat")
        self.assertEqual([(r["pid"], r["running"], r["bytes"]) for r in st["reservations"]], [(p.pid, False, 64 << 20)])
        self.assertEqual((st["objects"], st["reserved_bytes"]), (0, 64 << 20))
        ls = self.run_ok("-d", dev, "ls").stdout.decode()
        self.assertIn(f"67108864 bytes reserved by {socket.gethostname()}:{p.pid} (gone", ls)
        self.assertIn("csdctl reclaim", ls)
        text = self.run_ok("-d", dev, "stat").stdout.decode()
        self.assertIn("reserved", text)
        self.assertEqual(self.json_ok("-d", dev, "reclaim", "--older-than", "0")["reclaimed"], 1)
        self.assertEqual(self.json_ok("-d", dev, "stat")["reservations"], [])

    # ------------------------------------------------------------ real drives treated with care
    def test_format_refuses_what_the_namespace_holds(self):
        """A partition table, a filesystem or a store on the namespace: format refuses,
        naming it and --force, and writes nothing; --force formats."""
        for what, at, magic in (("GPT partition table", 512, b"EFI PART"),
                                ("ext2/3/4 filesystem", 1080, b"\x53\xef")):
            img = self.dir / "plain.img"
            with open(img, "wb") as f:
                f.truncate(64 << 20)
                f.seek(at)
                f.write(magic)
            dev = f"emu:{img}"
            p = self.run_csdctl("-d", dev, "format")
            self.assertEqual(p.returncode, EXIT_SYSTEM, p.stderr)
            self.assertIn(what, p.stderr.decode())
            self.assertIn("csdctl format --force", p.stderr.decode())
            self.assertEqual(self.json_error(EXIT_SYSTEM, "-d", dev, "format")["errno"], "EEXIST")
            self.assertEqual(img.read_bytes()[:at + 8], bytes(at) + magic + bytes(8 - len(magic)), "format wrote")
            self.assertEqual(self.json_ok("-d", dev, "format", "--force")["formatted"], True)
            self.assertIn("0 objects", self.run_ok("-d", dev, "ls").stdout.decode())
        p = self.run_csdctl("format")  # setUp's store
        self.assertEqual(p.returncode, EXIT_SYSTEM)
        self.assertIn("holds an object store", p.stderr.decode())

    def test_btree_build_refuses_what_the_namespace_holds(self):
        """btree build writes raw LBAs: over a filesystem, a store, or blocks that hold data
        no tree wrote, it refuses as format does (exit 3, EEXIST, naming what it found and
        --force) and writes nothing; --force writes; a tree is rebuilt in place without it.
        On the vendor front end and in host mode."""
        for front_end in ("vendor", "host"):
            img = self.dir / f"{front_end}.img"
            with open(img, "wb") as f:
                f.truncate(64 << 20)
                f.seek(1080)
                f.write(b"\x53\xef")
            dev = ["--front-end", front_end, "-d", f"emu:{img}"]
            before = img.read_bytes()
            p = self.run_csdctl(*dev, "btree", "build", "1000", "--count", "100")
            self.assertEqual(p.returncode, EXIT_SYSTEM, p.stdout + p.stderr)
            self.assertIn("holds an ext2/3/4 filesystem", p.stderr.decode())
            self.assertIn("csdctl btree build --force", p.stderr.decode())
            self.assertEqual(self.json_error(EXIT_SYSTEM, *dev, "btree", "build", "1000", "--count", "100")["errno"],
                             "EEXIST")
            self.assertEqual(img.read_bytes(), before, "the refused btree build wrote")
            self.assertEqual(self.json_ok(*dev, "btree", "build", "1000", "--count", "100", "--force")["blocks"], 5)
            img.write_bytes(bytes(64 << 20))
            self.run_ok(*dev, "btree", "build", "1000", "--count", "100")
            self.run_ok(*dev, "btree", "build", "1000", "--count", "300")  # over its own nodes
            with open(img, "r+b") as f:
                f.seek(1020 * 512)
                f.write(b"data")
            before = img.read_bytes()
            p = self.run_csdctl(*dev, "btree", "build", "1000", "--count", "1000")
            self.assertEqual(p.returncode, EXIT_SYSTEM, p.stdout + p.stderr)
            self.assertIn("LBA 1020 holds data that is no B+-tree node", p.stderr.decode())
            self.assertEqual(img.read_bytes(), before, "the refused btree build wrote")
        p = self.run_csdctl("btree", "build", "100000", "--count", "10")  # setUp's store
        self.assertEqual(p.returncode, EXIT_SYSTEM, p.stdout + p.stderr)
        self.assertIn("holds an object store", p.stderr.decode())
        self.assertIn("0 objects", self.run_ok("ls").stdout.decode())

    def test_host_slm_size_from_the_environment(self):
        """CSD_HOST_SLM sets host mode's SLM (docs/real-drives.md: CSD_HOST_SLM=256M); a bad
        value is a usage error that names the variable."""
        self.env["CSD_HOST_SLM"] = "256M"
        self.assertEqual(self.json_ok("--front-end", "host", "info")["slm_size"], 256 << 20)
        self.env["CSD_HOST_SLM"] = "lots"
        p = self.run_csdctl("--front-end", "host", "info")
        self.assertEqual(p.returncode, EXIT_USAGE, p.stdout + p.stderr)
        self.assertIn("CSD_HOST_SLM", p.stderr.decode())

    def test_every_program_run_says_where_it_ran(self):
        """docs/real-drives.md: csdctl says where each call ran, 'ran on the ...' on stderr
        and "where" in --json output: the media programs (gather, embedding-bag, a chase's
        btree lookup) and program run included, on the drive and in host mode."""
        bpf = TOP / "build" / "meson" / "examples" / "bpf"
        if not (bpf / "threshold.o").exists():
            self.skipTest(f"no example programs in {bpf}")
        self.run_ok("put", "recs", "-", stdin=struct.pack("<if8x", 300, 0.5) * 64)
        self.run_ok("btree", "build", "100000", "--count", "50", "--force")  # beside the store, past its objects
        with open(self.dir / "drive.img", "r+b") as f:  # a one-row f32 table at LBA 120000
            f.seek(120000 * 512)
            f.write(struct.pack("<4f", 1, 2, 3, 4))
        commands = [
            ["run", "gather", "120000:0:8", "--out", "g.bin"],
            ["run", "embedding-bag", "--table-lba", "120000", "--rows", "1", "--dim", "4", "--indices", "0",
             "--offsets", "0"],
            ["program", "run", str(bpf / "threshold.o"), "recs", "--record-size", "16", "--param", "250",
             "--out", "hot"],
            ["program", "run", str(bpf / "threshold.o"), "recs", "--record-size", "16", "--mode", "reduce"],
            ["btree", "lookup", "100000", "7", "--program", str(bpf / "btree_lookup.o")],
        ]
        for front_end, where in (("vendor", "device"), ("host", "host")):
            for cmd in commands:
                args = ["--front-end", front_end, *cmd]
                p = self.run_ok(*args)
                self.assertIn(f"ran on the {where}", p.stderr.decode(), args)
                got = self.json_ok(*args)
                for entry in got if isinstance(got, list) else [got]:
                    self.assertEqual(entry.get("where"), where, (args, got))
        self.assertEqual(self.json_ok("run", "embedding-bag", "--table-lba", "120000", "--rows", "1", "--dim", "4",
                                      "--indices", "0", "--offsets", "0")["values"], [[1, 2, 3, 4]])
        p = self.run_csdctl("--json", "run", "gather", "120000:0:8")  # the bytes on stdout, the JSON on stderr
        self.assertEqual((p.returncode, p.stdout), (0, struct.pack("<2f", 1, 2)), p.stderr)
        self.assertEqual(json.loads(p.stderr)["bytes"], 8)

    def test_json_errors_name_the_status_and_code(self):
        err = self.json_error(EXIT_STATUS, "program", "unload", "0x100")  # no program there
        self.assertIn(err["status"], ("Invalid Program", "Invalid Program Index"))
        self.assertIn(err["code"], (0x1C0, 0x185))
        self.assertIn(err["status"], err["error"])
        self.assertEqual(self.json_error(EXIT_SYSTEM, "stat", "nope")["errno"], "ENOENT")
        self.assertIn("frob", self.json_error(EXIT_USAGE, "frob")["error"])
        self.assertIn("--param", self.json_error(EXIT_USAGE, "program", "run", "0x100", "x", "--record-size", "8",
                                                 "--param", "18446744073709551616")["error"])

    def test_errors_without_json_are_one_line_on_stderr(self):
        p = self.run_csdctl("stat", "nope")
        self.assertEqual((p.returncode, p.stdout), (EXIT_SYSTEM, b""))
        self.assertEqual(p.stderr.decode(), "csdctl: object 'nope': No such file or directory\n")

    # ------------------------------------------------------------ - for stdin and stdout
    def test_dash_is_stdin_and_stdout(self):
        data = bytes(range(256)) * 40
        self.run_ok("put", "a", "-", stdin=data)
        self.assertEqual(self.run_ok("get", "a", "-").stdout, data)
        self.assertFalse((self.dir / "-").exists(), "a file named '-' was written")
        self.assertEqual(self.json_ok("stat", "a")["bytes"], len(data))
        # a .npy from stdin (--npy) keeps its dtype and shape; back out as .npy
        t = npy("<i4", (2, 2), struct.pack("<4i", 1, 2, 3, 4))
        self.run_ok("put", "t", "-", "--npy", stdin=t)
        self.assertEqual(self.json_ok("stat", "t")["shape"], [2, 2])
        self.assertEqual(self.run_ok("get", "t", "-", "--npy").stdout, t)
        # with --json the summary goes to stderr, stdout keeps only the bytes
        p = self.run_ok("--json", "get", "a", "-")
        self.assertEqual(p.stdout, data)
        self.assertEqual(json.loads(p.stderr)["bytes"], len(data))

    # ------------------------------------------------------------ streaming put and get
    def run_measured(self, args, stdin_file=None, feed=None, drain=False):
        """Runs csdctl ARGS with stdin from stdin_file (a regular file), or from a pipe that
        feed (a file) is written into a chunk at a time; drain: its stdout read a chunk at a
        time and hashed. Returns (its peak resident memory in bytes beyond what csdctl
        --version peaks at, stderr, stdout's sha256)."""
        import hashlib
        import threading
        stdin = open(stdin_file, "rb") if stdin_file else subprocess.PIPE if feed else subprocess.DEVNULL
        p = subprocess.Popen([CSDCTL, *args], stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             env=self.env, cwd=self.dir)
        errs, digest = [], hashlib.sha256()

        def feeder():
            with open(feed, "rb") as f:
                while chunk := f.read(1 << 20):
                    p.stdin.write(chunk)
            p.stdin.close()
        threads = [threading.Thread(target=lambda: errs.append(p.stderr.read()))]
        if feed:
            threads.append(threading.Thread(target=feeder))
        for t in threads:
            t.start()
        while chunk := p.stdout.read(1 << 20):
            if drain:
                digest.update(chunk)
        for t in threads:
            t.join()
        _, status, usage = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        if stdin_file:
            stdin.close()
        self.assertEqual(p.returncode, 0, f"csdctl {' '.join(args)}: {errs[0].decode()}")
        # A child's peak counts this process's resident memory it started as (fork, vfork
        # and posix_spawn all begin in this address space): less what `csdctl --version`,
        # started the same way now, peaks at.
        q = subprocess.Popen([CSDCTL, "--version"], stdout=subprocess.DEVNULL, env=self.env)
        _, _, base = os.wait4(q.pid, 0)
        q.returncode = 0
        return (usage.ru_maxrss - base.ru_maxrss) * 1024, errs[0], digest.hexdigest()

    def test_put_and_get_stream_in_bounded_memory(self):
        """put from a file and from a pipe, get to a file and to a pipe, of an object larger
        than the memory any of them may use: each stays within 48 MiB resident, progress
        comes from the first chunks on, and every byte arrives."""
        import hashlib
        size, limit = (320 << 20) + 12345, 48 << 20
        self.env["CSD_DEVICE"] = f"emu:{self.dir}/big.img?size=1G&slm=32M"
        self.run_ok("format")
        src, digest = self.dir / "src.bin", hashlib.sha256()
        with open(src, "wb") as f:
            for i in range(0, size, 1 << 20):
                chunk = os.urandom(min(1 << 20, size - i))
                digest.update(chunk)
                f.write(chunk)
        rss, err, _ = self.run_measured(["--progress", "put", "file", "src.bin"])
        self.assertLess(rss, limit, "put from a file")
        self.assertRegex(err.decode(), r"^put file:  2\d% \(", "no progress line in the first quarter")
        rss, err, _ = self.run_measured(["--progress", "put", "piped", "-"], feed=src)
        self.assertLess(rss, limit, "put from a pipe")
        self.assertIn(b"put piped: 256.0 MiB", err, "no progress line for a pipe")
        rss, _, _ = self.run_measured(["put", "redirected", "-"], stdin_file=src)
        self.assertLess(rss, limit, "put from stdin redirected from a file")
        crcs = {self.json_ok("stat", n)["crc32c"] for n in ("file", "piped", "redirected")}
        self.assertEqual(len(crcs), 1, crcs)
        self.assertEqual(self.json_ok("stat", "piped")["bytes"], size)
        rss, _, _ = self.run_measured(["get", "piped", "out.bin"])
        self.assertLess(rss, limit, "get to a file")
        with open(self.dir / "out.bin", "rb") as f:
            back = hashlib.sha256()
            while chunk := f.read(1 << 20):
                back.update(chunk)
        self.assertEqual(back.hexdigest(), digest.hexdigest())
        rss, _, got = self.run_measured(["get", "file", "-"], drain=True)
        self.assertLess(rss, limit, "get to a pipe")
        self.assertEqual(got, digest.hexdigest())
        self.assertEqual(sorted(os.listdir(self.dir)), ["big.img", "drive.img", "out.bin", "src.bin"],
                         "a temporary file was left behind")

    def test_streamed_npy_and_failed_get(self):
        """A .npy streamed from a pipe keeps its dtype and shape; one whose data is shorter
        than its header says stores nothing and leaves no reservation. A get that fails its
        CRC-32C leaves an existing file as it was, and no temporary file."""
        data = bytes(range(256)) * 4096 * 3  # 3 MiB of <u2, (1536, 1024)
        t = npy("<u2", (1536, 1024), data)
        self.run_ok("put", "t", "-", "--npy", stdin=t)
        self.assertEqual((self.json_ok("stat", "t")["dtype"], self.json_ok("stat", "t")["shape"]), ("<u2", [1536, 1024]))
        self.run_ok("get", "t", "t.npy")
        self.assertEqual((self.dir / "t.npy").read_bytes(), t)
        p = self.run_csdctl("put", "short", "-", "--npy", stdin=t[:-2])
        self.assertEqual(p.returncode, EXIT_SYSTEM, p.stderr)
        self.assertIn(b"nothing stored", p.stderr)
        self.assertFalse(self.run_csdctl("stat", "short").returncode == 0)
        self.assertEqual(self.json_ok("stat")["reservations"], [])
        (self.dir / "short.npy").write_bytes(t[:-2])
        p = self.run_csdctl("put", "short", "short.npy")
        self.assertEqual(p.returncode, EXIT_USAGE, p.stderr)
        self.assertIn(b"short.npy: .npy data is", p.stderr)
        # damage the object behind the store: its bytes are in the image once
        marker = b"damage me here, " * 4096
        self.run_ok("put", "d", "-", stdin=marker)
        with open(self.dir / "drive.img", "r+b") as f, mmap.mmap(f.fileno(), 0) as m:
            at = m.find(marker)
            self.assertGreater(at, 0)
            m[at + 1000] ^= 1
        (self.dir / "keep.bin").write_bytes(b"precious")
        p = self.run_csdctl("get", "d", "keep.bin")
        self.assertEqual(p.returncode, EXIT_SYSTEM, p.stderr)
        self.assertIn(b"CRC-32C", p.stderr)
        self.assertEqual((self.dir / "keep.bin").read_bytes(), b"precious", "a failed get overwrote the file")
        self.assertEqual([n for n in os.listdir(self.dir) if "csdctl-" in n], [], "a temporary file was left")
        # a get through a symbolic link writes its target, keeping the target's mode
        (self.dir / "keep.bin").chmod(0o600)
        (self.dir / "link.bin").symlink_to("keep.bin")
        self.run_ok("get", "t", "link.bin")
        self.assertTrue((self.dir / "link.bin").is_symlink(), "the link was replaced by a file")
        self.assertEqual((self.dir / "keep.bin").read_bytes(), data)
        self.assertEqual((self.dir / "keep.bin").stat().st_mode & 0o777, 0o600)

    # ------------------------------------------------------------ program run FILE.o
    def test_program_run_loads_runs_and_unloads_a_file(self):
        """program run FILE.o loads the program, runs it and unloads it in one csdctl (on
        emu: the only way: a program loaded by one csdctl process is gone for the next, and
        the error on its slot says so)."""
        obj = TOP / "build" / "meson" / "examples" / "bpf" / "threshold.o"
        if not obj.exists():
            self.skipTest(f"{obj} not built (no clang)")
        recs = bytearray()
        for i in range(5000):
            recs += struct.pack("<iIQ", i % 1000 - 500, 0, 0)
        (self.dir / "recs.bin").write_bytes(bytes(recs))
        self.run_ok("put", "recs", "recs.bin")
        out = self.json_ok("program", "run", str(obj), "recs", "--record-size", "16", "--param", "250", "--out", "hot")
        self.assertEqual((out["records"], out["matches"]), (5000, 1245))
        self.assertEqual(self.json_ok("program", "list"), [])
        self.run_ok("program", "load", str(obj), "--record-size", "16")
        err = self.json_error(EXIT_STATUS, "program", "run", "0x100", "recs", "--record-size", "16")
        self.assertIn("slot 0x100 holds no program (on emu:", err["error"])
        self.assertIn(err["status"], ("Invalid Program", "Invalid Program Index"))
        self.assertIn("name the FILE.o", err["error"])
        # the other commands on a slot say the same (a chase, a lookup), never "Execute ?"
        for cmd in (["program", "chase", "0x100", "--record-size", "512", "--start", "0"],
                    ["btree", "lookup", "0", "1", "--slot", "0x100"]):
            err = self.json_error(EXIT_STATUS, *cmd)
            self.assertIn(f"{cmd[0]} {cmd[1]}: slot 0100h holds no program (on emu:", err["error"])
            self.assertIn("name the FILE.o", err["error"])
            self.assertIn("Execute of program 0100h (none listed there)", err["error"])

    def test_program_chase_takes_a_file_and_says_why_a_slot_is_empty(self):
        """program chase, as program run, takes FILE.o (loaded, run and unloaded in this
        csdctl: on emu: the only way, and it took a slot alone, so a chase could never run
        there); a run on a slot that holds no program (chase, btree lookup --slot) says why,
        as program run's does, and names the program by its slot ("Execute of program
        0100h", not "Execute ?")."""
        obj = TOP / "build" / "meson" / "examples" / "bpf" / "btree_lookup.o"
        if not obj.exists():
            self.skipTest(f"{obj} not built (no clang)")
        self.run_ok("btree", "build", "20000", "--count", "1000", "--force")  # keys 0, 1, ... values 10 x key
        out = self.json_ok("program", "chase", str(obj), "--record-size", "512", "--start", "20000", "--param", "5")
        self.assertEqual((out["value"] & 0xFFFFFFFF, out["hops"]), (50, 3), out)
        for args, instead in ((["program", "chase", "0x100", "--record-size", "512", "--start", "20000"],
                               "name the FILE.o instead of the slot"),
                              (["btree", "lookup", "20000", "5", "--slot", "0x100"],
                               "name the FILE.o instead of the slot")):
            err = self.json_error(EXIT_STATUS, *args)
            self.assertIn("holds no program (on emu:", err["error"])
            self.assertIn(instead, err["error"])
            self.assertIn("Execute of program 0100h (none listed there): Invalid Program", err["error"])
            self.assertEqual(err["status"], "Invalid Program")

    def test_every_front_end_csdctl_takes_is_offered(self):
        """--front-end's help, the man page and the completion offer what csdctl accepts: auto,
        vendor, nvme-cs and host (host mode, docs/library.md; they left host out)."""
        taken = set(re.search(r"expected ([a-z, -]+?) or ([a-z-]+)",
                              self.json_error(EXIT_USAGE, "--front-end", "bogus", "ls")["error"]).group(1, 2))
        taken = {w.strip() for part in taken for w in part.split(",")}
        self.assertEqual(taken, {"auto", "vendor", "nvme-cs", "host"})
        helps = " ".join(self.run_ok("--help").stdout.decode().split())
        self.assertIn("--front-end vendor|nvme-cs|host|auto", helps)
        option = re.search(r"--front-end TEXT (.*?) --json", helps).group(1)
        man = MAN.read_text()
        for name in taken:
            self.assertIn(name, option, f"--front-end's help leaves out {name}")
            self.assertIn(name.replace("-", r"\-"), re.search(r"\.BR \\-\\-front\\-end \"([^\"]*)\"", man).group(1))
        self.assertEqual(set(self.complete("--front-end", "")), taken)
        self.assertEqual(self.json_ok("--front-end", "host", "info")["front_end"], "host")

    # ------------------------------------------------------------ u64 values
    def test_u64_values_at_and_above_2_63(self):
        values = [1, 2**63 - 1, 2**63, 2**64 - 1]
        (self.dir / "r.bin").write_bytes(struct.pack("<4Q", *values))
        self.run_ok("put", "r", "r.bin")
        for lo, want in ((str(2**63), 2), (str(2**64 - 1), 1), (str(2**63 - 1), 3), ("0x8000000000000000", 2)):
            out = self.json_ok("run", "filter", "r", "hot", "--record-size", "8", "--field-offset", "0",
                               "--type", "u64", "--op", "ge", "--lo", lo)
            self.assertEqual(out["matches"], want, f"u64 >= {lo}")
        # a program's parameter of 2^64-1 reaches the drive (which says no program is loaded)
        err = self.json_error(EXIT_STATUS, "program", "run", "0x100", "r", "--record-size", "8",
                              "--param", str(2**64 - 1))
        self.assertIn("code", err)
        self.assertIn("not a 64-bit integer", self.json_error(EXIT_USAGE, "run", "filter", "r", "x",
                                                               "--record-size", "8", "--field-offset", "0",
                                                               "--type", "u64", "--op", "ge", "--lo", "2^63")["error"])

    # ------------------------------------------------------------ unknown commands, exit codes
    def test_unknown_command_is_named(self):
        for args, named in ((["frob"], "'frob'"), (["run", "frob"], "'run frob'"),
                            (["program", "frob"], "'program frob'")):
            p = self.run_csdctl(*args)
            self.assertEqual(p.returncode, EXIT_USAGE, args)
            self.assertIn(f"unknown command {named}", p.stderr.decode())
        p = self.run_csdctl()
        self.assertEqual(p.returncode, EXIT_USAGE)
        self.assertIn("a command is required", p.stderr.decode())

    def test_run_streams_an_object_larger_than_slm(self):
        # issue 43: 4 MiB of 16-byte records on a drive of 1 MiB of SLM
        self.env["CSD_DEVICE"] = f"emu:{self.dir}/small.img?size=64M&slm=1M"
        self.run_ok("format")
        recs = bytearray()
        for i in range(1 << 18):
            recs += struct.pack("<Iff4x", i, (i * 7919 % 1000) / 1000.0, 0.0)
        (self.dir / "recs.bin").write_bytes(bytes(recs))
        self.run_ok("put", "recs", "recs.bin")
        out = json.loads(self.run_ok("--json", "run", "filter", "recs", "hot", "--record-size", "16",
                                     "--field-offset", "4", "--type", "f32", "--op", "gt", "--lo", "0.99").stdout)
        want = [recs[i:i + 16] for i in range(0, len(recs), 16) if struct.unpack_from("<f", recs, i + 4)[0] > 0.99]
        self.assertEqual(out["matches"], len(want))
        self.run_ok("get", "hot", "hot.bin")
        self.assertEqual((self.dir / "hot.bin").read_bytes(), b"".join(want))
        stat = json.loads(self.run_ok("--json", "stat", "recs").stdout)
        out = json.loads(self.run_ok("--json", "run", "checksum", "recs").stdout)
        self.assertEqual(int(out["checksum"], 16), int(stat["crc32c"], 16))
        p = self.run_csdctl("run", "checksum", "recs", "--algo", "xxh64")
        self.assertEqual(p.returncode, EXIT_USAGE)  # an argument libcsd refused (EINVAL), saying why
        self.assertIn(b"cannot be combined", p.stderr)
        # the same budget asked for on a larger drive
        self.env["CSD_DEVICE"] = f"emu:{self.dir}/small.img?size=64M&slm=32M"
        out = json.loads(self.run_ok("--json", "--slm-budget", str(256 << 10), "run", "checksum", "recs").stdout)
        self.assertEqual(int(out["checksum"], 16), int(stat["crc32c"], 16))

    def test_exit_codes_are_documented(self):
        man, doc = MAN.read_text(), DOC.read_text()
        for code in (EXIT_OK, EXIT_STATUS, EXIT_USAGE, EXIT_SYSTEM):
            self.assertRegex(man, rf"(?m)^\.IP {code}$", f"exit code {code} in csdctl.1")
            self.assertRegex(doc, rf"(?m)^\| {code} \|", f"exit code {code} in docs/library.md")
        self.assertEqual(self.run_csdctl("--bogus-option", "ls").returncode, EXIT_USAGE)

    def test_man_page_has_every_command(self):
        man = MAN.read_text()
        helps = self.run_ok("--help").stdout.decode()
        commands = re.findall(r"(?m)^  ([a-z]+)\s{2,}", helps.split("Subcommands:")[1])
        self.assertIn("completion", commands)
        for c in commands:
            self.assertRegex(man, rf"(?m)^\.B {c}\b", f"csdctl {c} in csdctl.1")

    # ------------------------------------------------------------ progress bar
    def test_progress_bar_only_on_a_terminal(self):
        big = self.dir / "big.bin"
        big.write_bytes(os.urandom(9 << 20))
        p = self.run_ok("put", "big", "big.bin")
        self.assertEqual(p.stderr, b"", "no bar where stderr is not a terminal")
        p = self.run_ok("--progress", "get", "big", "back.bin")
        err = p.stderr.decode()
        self.assertNotIn("\r", err)
        self.assertTrue(err.endswith("100% (9.0 of 9.0 MiB, " + err.rsplit(", ", 1)[1]), err)
        self.assertEqual(self.run_ok("--no-progress", "put", "big", "big.bin").stderr, b"")
        # on a terminal: redrawn in place, ending at 100%
        primary, secondary = pty.openpty()
        try:
            q = subprocess.run([CSDCTL, "put", "big", "big.bin"], stdout=subprocess.DEVNULL, stderr=secondary,
                               env=self.env, cwd=self.dir, timeout=120)
            os.close(secondary)
            shown = b""
            while True:
                try:
                    chunk = os.read(primary, 65536)
                except OSError:
                    break
                if not chunk:
                    break
                shown += chunk
        finally:
            os.close(primary)
        self.assertEqual(q.returncode, 0)
        self.assertIn(b"\rput big [", shown)
        self.assertIn(b"] 100% ", shown)

    # ------------------------------------------------------------ bash completion
    def complete(self, *words):
        """What the completion script offers for the last of WORDS (the word being typed)."""
        script = self.run_ok("completion", "bash").stdout.decode()
        quoted = " ".join("'" + w + "'" for w in ("csdctl",) + words)
        prog = (f"{script}\nCOMP_WORDS=({quoted}); COMP_CWORD={len(words)}; _csdctl; "
                'printf "%s\\n" "${COMPREPLY[@]}"')
        p = subprocess.run(["bash", "-c", prog], stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=self.dir,
                           timeout=60)
        self.assertEqual(p.stderr, b"")
        return p.stdout.decode().split()

    def test_bash_completion(self):
        self.assertEqual(self.complete("ru"), ["run"])
        # every subcommand of 'run' that its help lists, and nothing else
        helptext = self.run_ok("run", "--help").stdout.decode()
        listed = set(re.findall(r"^\s+([a-z][a-z0-9-]*)\s", helptext.split("Subcommands:")[-1].split("\n\n")[0], re.M))
        self.assertTrue({"checksum", "filter", "reduce", "gemm"} <= listed, helptext)
        self.assertEqual(set(self.complete("run", "")), listed)
        self.assertIn("--json", self.complete("--js"))
        self.assertIn("--version", self.complete("--v"))
        self.assertIn("sum", self.complete("-d", "emu:x", "run", "reduce", "m", "--op", ""))
        self.assertIn("between", self.complete("run", "filter", "--op", ""))
        self.assertIn("u64", self.complete("run", "filter", "--type", ""))
        self.assertEqual(self.complete("--front-end", "nv"), ["nvme-cs"])
        self.assertEqual(self.complete("--front-end", "h"), ["host"])  # docs/real-drives.md: host on every drive
        self.assertRegex(self.run_ok("--help").stdout.decode(), r"--front-end[^\n]*host")
        self.assertIn("--npy", self.complete("put", "a", "--n"))
        (self.dir / "data.npy").write_bytes(b"")
        self.assertEqual(self.complete("put", "a", "dat"), ["data.npy"])
        installed = TOP / "build" / "meson" / "host" / "tools" / "csdctl"
        if installed.exists():  # the script meson installs is the one csdctl writes
            self.assertEqual(installed.read_text(), self.run_ok("completion", "bash").stdout.decode())


if __name__ == "__main__":
    if not os.access(CSDCTL, os.X_OK):
        print(f"csdctl: {CSDCTL} missing (make build)\ncsdctl: 0 passed, 1 failed")
        sys.exit(1)
    result = unittest.main(exit=False, verbosity=1).result
    failed = len(result.failures) + len(result.errors)
    print(f"csdctl: {result.testsRun - failed} passed, {failed} failed")
    sys.exit(1 if failed else 0)
