#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The feature matrix's cells of the host suite (tests/matrix/matrix.py: the ways whose place
is 'host', the in-process device): for each format they provide, a fresh backing file, stamped,
then every row through build/meson/tests/matrix/csd-matrix; the results go to
build/results/matrix-host.jsonl and are judged against the description and the committed
results. Prints a line per cell and 'matrix-host: N passed, N failed'."""
import json
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import matrix  # noqa: E402

TOP = HERE.parents[1]
BIN = TOP / "build" / "meson" / "tests" / "matrix" / "csd-matrix"
BPF = TOP / "build" / "meson" / "examples" / "bpf"
OUT = TOP / "build" / "results" / "matrix-host.jsonl"
FIO_ENGINE = TOP / "build" / "fio" / "csd-fio.so"  # make fio-engine (test-unit builds it)
# the in-process device's formats: its options beyond size= and nvme-cs=
OPTIONS = {"512": "lba=512", "4k": "lba=4096", "exact": "lba=512&model=gen4x4-8core&exact=on"}


def api_args(way: str) -> list[str]:
    """The driver's options for a way through another API than libcsd's (SNIA, fio)."""
    if way in matrix.SNIA_OF:
        return ["--api", "snia"]
    if way in matrix.FIO_OF:
        return ["--api", "fio", "--fio-engine", str(FIO_ENGINE)]
    return []


def main() -> int:
    """Runs the host's cells and judges them; the exit status."""
    if not BIN.exists():
        print(f"matrix-host: {BIN} missing (make build)\nmatrix-host: 0 passed, 1 failed")
        return 1
    results = []
    with tempfile.TemporaryDirectory(prefix="csd-matrix-") as tmp:
        for way in (w for w in matrix.WAY_IDS if matrix.place_of(w) == "host"):
            for fmt in matrix.FORMAT_IDS:
                rows = [r for r in matrix.ROW_IDS if matrix.expect(r, way, fmt).kind != "na"]
                if not rows:
                    continue
                img = Path(tmp) / f"{way}-{fmt}.img"
                dev = f"emu:{img}?size=128M&{OPTIONS[fmt]}&nvme-cs=1"
                subprocess.run([str(BIN), "--stamp", dev, "0"], check=True)
                argv = [str(BIN), "--way", way, "--format", fmt, "--rows", ",".join(rows), "--device", dev,
                        "--check", str(img), "--bpf-dir", str(BPF)] + api_args(way)
                try:
                    r = subprocess.run(argv, capture_output=True, text=True, timeout=300)
                    why = f"the driver ended with {r.returncode}: {r.stderr.strip()[-300:]}"
                    out = r.stdout
                except subprocess.TimeoutExpired as e:
                    why, out = "hang: no answer in 300 s", (e.stdout or b"").decode()
                got = {d["row"]: d for d in (json.loads(l) for l in out.splitlines() if l.startswith("{"))}
                results += [got.get(row) or {"row": row, "way": way, "format": fmt, "outcome": "fail",
                                             "status": "", "detail": why} for row in rows]
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text("".join(json.dumps(r) + "\n" for r in results))
    return matrix.judge("host", [str(OUT)], "matrix-host")


if __name__ == "__main__":
    sys.exit(main())
