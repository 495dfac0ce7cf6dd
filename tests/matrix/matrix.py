#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The feature matrix (issue 40 item 6): every command that names LBAs, SLM or a program ×
every way in × every namespace format. This file is its one description: the rows, the
columns, the formats, which cells a layout cannot provide (n/a, and why) and what each cell
must give (the reference result, or a refusal named by an NVMe status). The drivers run the
cells (tests/matrix/csd_matrix.cc through run-host.py on the in-process device, guest_run.py
in the guest's matrix-*.sh tests) and write JSON lines; the committed results
(tests/matrix/results/*.jsonl) are what docs/feature-matrix.md is rendered from, and the repo
suite checks that the two agree (tests/repo/check_feature_matrix.py).

  matrix.py render                      print docs/feature-matrix.md from the committed results
  matrix.py write-doc                   write it
  matrix.py judge PLACE FILE...         judge fresh results of PLACE (host, or a guest format)
                                        against this description and the committed results;
                                        prints a line per cell and 'NAME: N passed, N failed'
  matrix.py update FILE...              put fresh results (build/results/matrix-*.jsonl, the
                                        host's build/results/matrix-host.jsonl) into the
                                        committed ones (only cells the judge passes but for
                                        differing from the committed), then write-doc
"""
from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
TOP = HERE.parents[1] if (HERE.parent.name == "tests") else HERE
RESULTS = HERE / "results"
DOC = TOP / "docs" / "feature-matrix.md"

# (id, title, what each front end sends)
ROWS = [
    ("load", "namespace → SLM", "SLM Load 80h (vendor); Memory Copy format 2h (standard)"),
    ("store", "SLM → namespace", "SLM Store 84h (vendor); Copy format 4h (standard)"),
    ("gather", "gather", "Execute of gather 0Bh: pieces of blocks, some across block boundaries"),
    ("embedding_bag", "embedding_bag", "Execute of embedding_bag 0Ch: three bags summed from a table on the namespace"),
    ("chase", "chase", "a downloaded eBPF program's chase (examples/bpf/btree_lookup.o over a B+-tree the way wrote)"),
    ("caw", "Compare and Write", "Compare and Write 8Dh: a match writes, stale bytes are Compare Failure"),
    ("nvm", "NVM I/O", "NVM Write, Flush and Read of the namespace"),
    ("exec", "Execute (compute)", "Execute of a compute program over SLM (CRC-32C of 1 MiB)"),
]
# (id, title, place: where its driver runs, how it opens the drive)
WAYS = [
    ("ioctl", "vendor, ioctl", "guest", "/dev/ngXnY, Linux's passthrough ioctl"),
    ("uring", "vendor, io_uring", "guest", "/dev/ngXnY, io_uring passthrough"),
    ("nvme-cs", "standard front end", "guest", "the NVMe computational storage command sets (csd.nvme-cs=on), ioctl"),
    ("kmod", "csd.ko tenant", "guest", "/dev/csd0 as a user without a partition (the whole namespace)"),
    ("kmod-part", "csd.ko tenant, partition", "guest", "/dev/csd0 as a user whose partition starts at 32 MiB"),
    ("tcp", "NVMe/TCP", "guest", "the controller served by nvmet passthrough on 127.0.0.1, connected back"),
    ("driveset", "DriveSet", "guest", "a DriveSet of two drives: each row on each drive, its own bytes"),
    ("host", "host mode", "guest", "libcsd's host mode: the core in the process over the drive's NVM Reads and Writes"),
    ("inproc", "in-process device", "host", "emu: the core in the process over a file (host suite)"),
    ("snia", "SNIA CS API", "host", "the SNIA Computational Storage API (libcsd-snia, cs.h) over emu: storage, copy "
                                    "and compute requests of one CSx (host suite)"),
    ("snia-kmod-part", "SNIA CS API, csd.ko partition", "guest",
     "the SNIA API over /dev/csd0 as a user whose partition starts at 32 MiB"),
    ("fio", "fio engine", "host", "jobs of fio's csd engine (host/fio-engine) over emu: (host suite)"),
    ("fio-kmod-part", "fio engine, csd.ko partition", "guest",
     "jobs of fio's csd engine over /dev/csd0 as a user whose partition starts at 32 MiB"),
]
# The ways through the SNIA API (csd-matrix --api snia): each is its libcsd way's cell seen
# through the API (the same drive and transport), its statuses the API's.
SNIA_OF = {"snia": "inproc", "snia-kmod-part": "kmod-part"}
# What the SNIA API answers for a status libcsd names (host/snia/cs.cc's status_of): a namespace
# the drive refuses is the function's for a compute request, the drive's error for a storage one.
SNIA_STATUS = {"Invalid Command Opcode": "CS_UNSUPPORTED", "EIO": "CS_DEVICE_ERROR", "ENODEV": "CS_ENODEV"}
SNIA_STORAGE_ROWS = {"load", "store"}
SNIA_ROWS_NA = {"caw", "nvm"}
# The ways through fio's csd engine (csd-matrix --api fio): each its libcsd way's cell as fio's
# jobs see it, their errors fio's errnos.
FIO_OF = {"fio": "inproc", "fio-kmod-part": "kmod-part"}
FIO_ROWS = {"store", "exec"}
FIO_STATUS = {"Invalid Namespace or Format": "EIO", "Invalid Command Opcode": "EIO"}
# (id, title, the guest layout: csdvm '# vm:' settings)
FORMATS = [
    ("512", "512-byte LBAs", "csd=on drives=2 device=csd.nvme-cs=on"),
    ("4k", "4 KiB LBAs", "csd=on lbads=12 drives=2 device=csd.nvme-cs=on"),
    ("pi", "protection information type 1 (512 + 8)",
     "csd=on ns=ms=8,pi=1 device=csd.nvme-cs=on,csd.nvme-cs.mem-nsid=2"),
    ("zoned", "zoned (ZNS, 4 MiB zones)",
     "csd=on ns=zoned=on,zoned.zone_size=4M device=csd.nvme-cs=on,csd.nvme-cs.mem-nsid=2"),
    ("detached", "detached meanwhile",
     "csd=on cu=1 subsys device=csd.nvme-cs=on,csd.nvme-cs.mem-nsid=2"),
    ("reset", "controller reset meanwhile",
     "csd=on cu=1 device=csd.nvme-cs=on"),
    ("exact", "exact timing (a timing model, csd.exact=on, -icount: completions at the model's time)",
     "csd=on drives=2 exact icount=0 device=csd.nvme-cs=on,csd.model=gen4x4-8core"),
]
ROW_IDS = [r[0] for r in ROWS]
WAY_IDS = [w[0] for w in WAYS]
FORMAT_IDS = [f[0] for f in FORMATS]
MEDIA = {"gather", "embedding_bag", "chase"}
INVALID_NS = "Invalid Namespace or Format"
ABORTED_SQ = "Command Aborted due to SQ Deletion"


@dataclass(frozen=True)
class Expect:
    """What a cell must give: 'result' (the reference), 'refusal' (a named status, one of
    names when given), 'any' (either) or 'na' (the layout cannot provide it); why says why
    for everything but a plain result."""
    kind: str
    why: str = ""
    names: tuple[str, ...] = ()


def expect(row: str, way: str, fmt: str) -> Expect:
    """The description of one cell."""
    if way in SNIA_OF:
        if row in SNIA_ROWS_NA:
            return Expect("na", "the SNIA API has no NVM I/O to host memory nor Compare and Write: its storage "
                                "requests move LBAs to and from AFDM")
        e = expect(row, SNIA_OF[way], fmt)
        # a chase's tree goes in by a store request, which a drive refusing the namespace refuses first
        ns = ("CS_DEVICE_ERROR",) if row in SNIA_STORAGE_ROWS else \
            ("CS_INVALID_FUNCTION", "CS_DEVICE_ERROR") if row == "chase" else ("CS_INVALID_FUNCTION",)
        return Expect(e.kind, e.why, tuple(x for n in e.names for x in (ns if n == INVALID_NS else (SNIA_STATUS.get(n, n),))))
    if way in FIO_OF:
        if row not in FIO_ROWS:
            return Expect("na", "fio's csd engine moves LBAs to and from the job's SLM and runs programs there: its "
                                "media reads leave the blocks where nothing can check them, and it sends no NVM I/O, "
                                "Compare and Write or media program")
        e = expect(row, FIO_OF[way], fmt)
        return Expect(e.kind, e.why, tuple(FIO_STATUS.get(n, n) for n in e.names))
    if way == "inproc" and fmt in ("pi", "zoned", "detached", "reset"):
        return Expect("na", "the in-process device's namespace is a file: no metadata, zones, attachment or "
                            "controller reset")
    if way == "driveset" and fmt in ("pi", "zoned", "detached"):
        return Expect("na", "these formats need an nvme-subsys layout (nvme-ns devices), which csdvm builds with one controller")
    if way == "driveset" and fmt == "reset":
        return Expect("na", "a cell resets one controller while one command waits; a DriveSet's row sends it to "
                            "each drive in turn")
    if way == "nvme-cs" and row in MEDIA:
        if fmt == "reset":  # the drive refuses it when a compute unit takes it: a reset may come first
            return Expect("refusal", "the standard Execute Program names no NVM namespace for a media program; "
                                     "waiting for a compute unit, it is cancelled by the reset first",
                          (INVALID_NS, ABORTED_SQ, "Command Abort Requested"))
        return Expect("refusal", "the standard Execute Program addresses the compute namespace: it names no NVM "
                                 "namespace for a media program to read", (INVALID_NS,))
    if way == "host" and row == "caw":
        return Expect("refusal", "host mode has no Compare and Write (C0h features bit 0 clear): cores in several "
                                 "hosts could not order it", ("Invalid Command Opcode",))
    if fmt == "pi":
        if way == "tcp":
            return Expect("refusal", "Linux's nvmet passthrough clears the LBA formats with metadata "
                                     "(nvmet_passthru_override_id_ns): the fabric namespace reports no LBA size, "
                                     "which libcsd refuses to open", ("ENODEV",))
        if row == "exec":
            return Expect("result")
        if row == "nvm":
            return Expect("result", "the controller makes and checks the protection information (PRACT)")
        return Expect("refusal", "the command set neither makes nor checks protection information", (INVALID_NS,))
    if fmt == "zoned":
        if way == "host":
            return Expect("result", "host mode's namespace I/O is the drive's own NVM Reads and Writes, which keep "
                                    "the zone rules (writes here go to an empty zone's write pointer)")
        if way in ("kmod", "kmod-part"):
            return Expect("refusal", "csd.ko zeroes a file's SLM with the vendor SLM Write, which QEMU refuses on a "
                                     "zoned namespace (Invalid Command Opcode): opening /dev/csd0 fails, EIO", ("EIO",))
        if row == "nvm":
            return Expect("result", "NVM Writes at an empty zone's write pointer")
        if row == "exec" and way == "nvme-cs":
            return Expect("result", "the standard front end's commands address the memory and compute namespaces")
        return Expect("refusal", "QEMU answers only the zoned command set's opcodes on a zoned namespace: the vendor "
                                 "commands, which address it, are Invalid Command Opcode; the standard copies refuse "
                                 "it (Incompatible Namespace or Format): the core keeps no write pointer or zone state")
    if fmt == "reset":
        if row in MEDIA and way != "host":
            return Expect("any", "an Execute waiting behind busy compute units when the controller resets is "
                                 "aborted (the drive's Command Abort Requested, or the kernel's own status for a "
                                 "command it cancels) or runs after it")
        return Expect("result", "the controller reset just before the command: the namespace, SLM and loaded "
                                "programs survive it")
    if fmt == "detached":
        if row == "exec":
            return Expect("any", "SLM commands name the NVM namespace too (vendor front end)")
        if way in ("kmod", "kmod-part"):
            return Expect("refusal", "the namespace is gone: waiting Executes are refused by the drive; csd.ko "
                                     "answers a later command, or opening /dev/csd0 anew, ENODEV",
                          ("ENODEV", INVALID_NS))
        return Expect("refusal", "the namespace is gone: waiting Executes are refused by the drive, later "
                                 "commands by the drive or the kernel")
    return Expect("result")


def cells():
    """Every (row, way, format) of the matrix."""
    return [(r, w, f) for f in FORMAT_IDS for w in WAY_IDS for r in ROW_IDS]


def place_of(way: str) -> str:
    """Where a way's driver runs: 'host' (the unit suite) or 'guest'."""
    return next(w[2] for w in WAYS if w[0] == way)


def load(files) -> dict[tuple[str, str, str], dict]:
    """Results (JSON lines) by (row, way, format); later files win."""
    out: dict[tuple[str, str, str], dict] = {}
    for f in files:
        for line in Path(f).read_text().splitlines():
            if line.strip():
                d = json.loads(line)
                out[(d["row"], d["way"], d["format"])] = d
    return out


def committed() -> dict[tuple[str, str, str], dict]:
    """The committed results."""
    return load(sorted(RESULTS.glob("*.jsonl")))


def verdict(cell, res: dict | None, known: dict | None) -> str:
    """'' when a fresh result res of cell is what the description and the committed result
    known allow, else why not."""
    e = expect(*cell)
    if e.kind == "na":
        return "" if res is None else "ran, but the description says n/a"
    if res is None:
        return "no result (the driver crashed, hung or skipped it)"
    o, st = res["outcome"], res.get("status", "")
    if o == "fail":
        return f"failed: {res.get('detail', '')}"
    if o == "refused" and not st:
        return "a refusal that names no status"
    if e.kind == "result" and o != "ok":
        return f"refused ({st}) where the reference result is due"
    if e.kind == "refusal" and o != "refused":
        return "succeeded where a refusal is due (silent success)"
    if e.kind == "refusal" and e.names and st not in e.names:
        return f"refused with {st}, not {' or '.join(e.names)}"
    if e.kind == "any":  # either outcome, as the timing of the cell falls: none to hold it to
        return ""
    if known is None:
        return "not in the committed results (tests/matrix/matrix.py update)"
    if (known["outcome"], known.get("status", "")) != (o, st):
        return (f"{o} {st}".strip() + f" differs from the committed {known['outcome']} {known.get('status', '')}".rstrip()
                + " (tests/matrix/matrix.py update, if intended)")
    return ""


def judge(place: str, files: list[str], name: str, ways: list[str] | None = None) -> int:
    """Judges fresh results of one place (host, or a guest format id): every cell of it, or
    of the given ways only."""
    fresh, known = load(files), committed()
    mine = [c for c in cells() if ((place == "host" and place_of(c[1]) == "host")
            or (place != "host" and place_of(c[1]) == "guest" and c[2] == place)) and (not ways or c[1] in ways)]
    passed = failed = 0
    for c in mine:
        if expect(*c).kind == "na":
            continue
        why = verdict(c, fresh.get(c), known.get(c))
        res = fresh.get(c) or {}
        what = f"{c[1]} × {c[0]} × {c[2]}: {res.get('outcome', '-')} {res.get('status', '')}".rstrip()
        print(("ok   " if not why else "FAIL ") + what + (f" — {why}" if why else ""), flush=True)
        passed, failed = passed + (not why), failed + bool(why)
    print(f"{name}: {passed} passed, {failed} failed", flush=True)
    return 1 if failed else 0


def cell_text(cell, res: dict | None) -> str:
    """A cell of the rendered table."""
    e = expect(*cell)
    if e.kind == "na":
        return "n/a"
    if res is None:
        return "**not run**"
    either = e.kind == "any"  # the committed run's outcome; another run may give the other
    if res["outcome"] == "ok":
        return "✓ *(or refused)*" if either else "✓"
    if res["outcome"] == "refused":
        st = res["status"]
        return f"refused: {st}" + (" (errno)" if st.isupper() and st.startswith("E") else "") + (" *(or ✓)*" if either else "")
    return "**FAIL**"


def render(results=None) -> str:
    """docs/feature-matrix.md from results (default: the committed ones)."""
    res = committed() if results is None else results
    titles = {w[0]: w[1] for w in WAYS}
    out = [
        "# Feature matrix: what works where",
        "",
        "<!-- Generated by tests/matrix/matrix.py from tests/matrix/results/*.jsonl: do not edit; "
        "`python3 tests/matrix/matrix.py update build/results/matrix-*.jsonl` after a run. -->",
        "",
        "Every command that names LBAs, SLM or a program, through every way in, on every namespace",
        "format. Each cell is what the latest run of the matrix gave: ✓ is the reference result",
        "(checked against a computation on the host: the namespace's blocks are stamped with",
        "words that name their absolute LBA and drive, so another tenant's or drive's bytes, or a",
        "write that landed elsewhere, fail the cell), *refused* names the NVMe status the drive",
        "answered or, marked (errno), the error the kernel, libcsd or fio gave (the SNIA API's ways: the",
        "API's CS_ status; the drive's is in the run's words), and n/a is a cell the",
        "test layouts or the way's API cannot provide; below each table, why (n/a, refused) and notes. A crash, a",
        "hang, a wrong byte, an unnamed error or a success where a refusal is due fails `make",
        "test`; so does a cell that differs from this page (`tests/repo/check_feature_matrix.py`), but",
        "for one marked *(or refused)* or *(or ✓)*: as the timing of the run falls it may give either",
        "(its note says why; the latest run's outcome is shown).",
        "",
        "The rows:",
        "",
    ]
    out += [f"- **{t}** ({r}): {how}." for r, t, how in ROWS]
    out += ["", "The ways in:", ""]
    out += [f"- **{t}** (`{w}`, {'guest test' if p == 'guest' else 'host suite'}): {how}." for w, t, p, how in WAYS]
    out += ["", "Run by `tests/matrix/run-host.py` (in `tests/unit/run-unit.sh`) and the guest tests "
            "`tests/vm/guest/matrix-*.sh` (one per format, its layout in its `# vm:` line)."]
    for fid, ftitle, layout in FORMATS:
        out += ["", f"## {ftitle}", "", f"Guest layout: `# vm: {layout}`.", ""]
        out.append("| | " + " | ".join(titles[w] for w in WAY_IDS) + " |")
        out.append("|---" * (len(WAY_IDS) + 1) + "|")
        for rid, rtitle, _ in ROWS:
            out.append(f"| {rtitle} | " + " | ".join(cell_text((rid, w, fid), res.get((rid, w, fid)))
                                                     for w in WAY_IDS) + " |")
        notes: dict[str, list[str]] = {}
        for w in WAY_IDS:
            for rid in ROW_IDS:
                e = expect(rid, w, fid)
                if e.why:
                    label = {"na": "n/a", "refusal": "refused", "result": "note", "any": "note"}[e.kind] + f": {e.why}"
                    notes.setdefault(label, []).append(f"{titles[w]} × {dict((r[0], r[1]) for r in ROWS)[rid]}")
        if notes:
            out.append("")
            for label, where in notes.items():
                out.append(f"- {label} ({'; '.join(compress(where))})")
    return "\n".join(out) + "\n"


def compress(where: list[str]) -> list[str]:
    """'way × row' items grouped by way: 'way × row1, row2'."""
    by: dict[str, list[str]] = {}
    for w in where:
        a, b = w.split(" × ", 1)
        by.setdefault(a, []).append(b)
    return [f"{a} × {', '.join(b)}" if len(b) < len(ROWS) else f"{a} × every row" for a, b in by.items()]


def update(files: list[str]) -> int:
    """Puts fresh results into the committed files (one per place: host.jsonl, FORMAT.jsonl),
    refusing any cell that fails for another reason than differing from the committed."""
    fresh, known = load(files), committed()
    bad = []
    for c, res in fresh.items():
        why = verdict(c, res, res)  # against itself: only the description's rules
        if why:
            bad.append(f"{c}: {why}")
    if bad:
        print("matrix: not updated; cells that fail the description:\n  " + "\n  ".join(bad), file=sys.stderr)
        return 1
    known.update(fresh)
    RESULTS.mkdir(exist_ok=True)
    by_file: dict[str, list[dict]] = {}
    for c in cells():
        if c in known:
            by_file.setdefault("host" if place_of(c[1]) == "host" else c[2], []).append(known[c])
    for name, rs in by_file.items():
        keep = [{k: r[k] for k in ("row", "way", "format", "outcome", "status")} for r in rs]
        (RESULTS / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in keep))
    DOC.write_text(render())
    print(f"matrix: {len(fresh)} results put in {RESULTS}, {DOC} written")
    return 0


def main(argv: list[str]) -> int:
    """The command line (see the module's text)."""
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0 if argv else 2
    cmd, args = argv[0], argv[1:]
    if cmd == "render":
        sys.stdout.write(render())
        return 0
    if cmd == "write-doc":
        DOC.write_text(render())
        return 0
    if cmd == "judge" and len(args) >= 2:
        return judge(args[0], args[1:], f"matrix-{args[0]}")
    if cmd == "update" and args:
        return update(args)
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
