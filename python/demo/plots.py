# SPDX-License-Identifier: MIT
"""PNG plots beside the tables of the demo and the benches (matplotlib, optional: without
it nothing is drawn and each function says the plot was skipped).

    design_space(rows, path)   the design-space verdicts: offload speed-up per question and preset
    offload(rows, path)        the demo: time and bytes across the bus, in-drive against classic
    landing(table, path)       bytes into GPU memory: GB/s per size of each path, against the ceiling

Each takes the rows its script printed; the command line takes them from a Markdown table
(a script's output or docs/perf.md, which records measured runs):

    python3 python/demo/plots.py design-space docs/perf.md docs/img/design-space.png
    python3 python/demo/plots.py offload      docs/perf.md docs/img/offload.png
    python3 python/demo/plots.py landing      docs/perf.md docs/img/gpu-landing.png
"""
import re
import sys
import textwrap


def _pyplot():
    """matplotlib.pyplot with a file-only backend, or None when matplotlib is missing."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        return plt
    except ImportError:
        return None


def _save(plt, fig, path):
    """Writes the figure as a PNG at path."""
    import os
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)
    print(f"plot: wrote {path}", flush=True)
    return True


def _skipped(path):
    """Says that the plot at path was not drawn, and why."""
    print(f"plot: skipped {path} (matplotlib is not installed: apt install python3-matplotlib, "
          "or pip install matplotlib)", flush=True)
    return False


def design_space(rows, path):
    """rows: (preset, question, in-drive s, classic s, overruns) -> bars of classic/in-drive
    time per question, one group per preset, log scale; above 1 offload wins."""
    plt = _pyplot()
    if plt is None:
        return _skipped(path)
    presets = list(dict.fromkeys(r[0] for r in rows))
    questions = list(dict.fromkeys(r[1] for r in rows))
    fig, ax = plt.subplots(figsize=(8, 4))
    width = 0.8 / len(questions)
    for k, q in enumerate(questions):
        xs, ys, hatch = [], [], []
        for i, p in enumerate(presets):
            for r in rows:
                if r[0] == p and r[1] == q:
                    xs.append(i + (k - (len(questions) - 1) / 2) * width)
                    ys.append(r[3] / r[2])
                    hatch.append(bool(r[4]))
        bars = ax.bar(xs, ys, width * 0.95, label=q)
        for b, y, h in zip(bars, ys, hatch):
            ax.annotate(f"{y:.1f}×" if y >= 1 else f"1/{1 / y:.0f}", (b.get_x() + b.get_width() / 2, y),
                        ha="center", va="bottom" if y >= 1 else "top", fontsize=8)
            if h:
                b.set_hatch("//")
    ax.axhline(1, color="black", linewidth=0.8)
    ax.set_yscale("log")
    ax.set_xticks(range(len(presets)), presets)
    ax.set_ylabel("classic time / in-drive time\n(> 1: offload wins)")
    ax.set_title("Is offload worth it? (hatched: host-bound, the drive would be faster still)", fontsize=10)
    ax.legend(fontsize=8, ncol=len(questions), loc="upper center", bbox_to_anchor=(0.5, -0.1))
    return _save(plt, fig, path)


def offload(rows, path):
    """rows: (question, way, seconds, bus bytes) -> two panels, time and bytes across the
    bus, in-drive against classic for each question."""
    plt = _pyplot()
    if plt is None:
        return _skipped(path)
    questions = list(dict.fromkeys(r[0] for r in rows))
    ways = list(dict.fromkeys(r[1] for r in rows))
    fig, axes = plt.subplots(1, 2, figsize=(10, 4.2))
    for ax, col, label in ((axes[0], 2, "time (s)"), (axes[1], 3, "across the bus (MiB)")):
        for k, way in enumerate(ways):
            ys = [next((r[col] for r in rows if r[0] == q and r[1] == way), 0) for q in questions]
            if col == 3:
                ys = [y / 1048576 for y in ys]
            xs = [i + (k - (len(ways) - 1) / 2) * 0.4 for i in range(len(questions))]
            ax.bar(xs, ys, 0.38, label=way)
        ax.set_xticks(range(len(questions)), [textwrap.fill(q, 16) for q in questions], fontsize=7)
        ax.set_ylabel(label)
        if col == 3:
            ax.set_yscale("log")
        ax.legend(fontsize=8)
    fig.suptitle("The demo: the same questions in the drive and the classic way", fontsize=10)
    return _save(plt, fig, path)


def landing(table, path):
    """table: (column names, rows of [size label, GB/s ...]) as landing_vs_torch.py prints
    it -> GB/s against size for each path, the pinned ceiling dashed."""
    plt = _pyplot()
    if plt is None:
        return _skipped(path)
    cols, rows = table
    sizes = [_bytes(r[0]) for r in rows]
    fig, ax = plt.subplots(figsize=(8, 4.2))
    for j, col in enumerate(cols[1:], start=1):
        if col.startswith("best") or "×" in rows[0][j] or "%" in rows[0][j]:
            continue
        ys = [float(r[j]) for r in rows]
        style = dict(linestyle="--", color="black", linewidth=2) if "ceiling" in col else dict(marker="o")
        ax.plot(sizes, ys, label=col, **style)
    ax.set_xscale("log", base=2)
    ax.set_xticks(sizes, [r[0] for r in rows])
    ax.set_xlabel("bytes landed")
    ax.set_ylabel("GB/s (median)")
    ax.set_title("Bytes into GPU memory: each path against the pinned-copy ceiling", fontsize=10)
    ax.legend(fontsize=7, loc="upper left")
    return _save(plt, fig, path)


def _bytes(label):
    """'64 KiB' in bytes."""
    n, unit = label.split()
    return int(float(n) * {"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}[unit])


def markdown_tables(text):
    """Every Markdown table in text: a list of (header cells, rows of cells)."""
    tables, cur = [], None
    for line in text.splitlines():
        if line.startswith("|") and line.rstrip().endswith("|"):
            cells = [c.strip().replace("**", "") for c in line.strip()[1:-1].split("|")]
            if cur is None:
                cur = (cells, [])
            elif not all(re.fullmatch(r":?-+:?", c) for c in cells):
                cur[1].append(cells)
        elif cur is not None:
            tables.append(cur)
            cur = None
    if cur is not None:
        tables.append(cur)
    return tables


def _seconds(cell):
    """'44.8 ms' or '0.50 s' in seconds."""
    value, unit = cell.split()
    return float(value) / (1000 if unit == "ms" else 1)


def _mib(cell):
    """'1.31 MiB' in bytes."""
    return float(cell.split()[0]) * 1048576


def _table(text, first):
    """The first Markdown table in text whose columns begin with `first`."""
    for cols, rows in markdown_tables(text):
        if cols and cols[0] == first[0] and cols[1:len(first)] == first[1:]:
            return cols, rows
    raise SystemExit(f"plots: no table with columns {first} found")


def main(argv):
    """plots.py design-space|offload|landing TABLE-FILE PNG."""
    if len(argv) != 3 or argv[0] not in ("design-space", "offload", "landing"):
        raise SystemExit(__doc__)
    kind, src, out = argv
    with open(src) as f:
        text = f.read()
    if kind == "design-space":
        _, rows = _table(text, ["preset", "question", "in-drive", "classic"])
        design_space([(r[0], r[1], _seconds(r[2]), _seconds(r[3]), "host-bound" in r[6]) for r in rows], out)
    elif kind == "offload":
        _, rows = _table(text, ["question", "way", "time", "across the bus"])
        offload([(r[0], r[1], _seconds(r[2]), _mib(r[3])) for r in rows], out)
    else:
        landing(_table(text, ["size", "in memory .cuda()"]), out)
    return 0  # a skipped plot is no failure: the table is the result


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
