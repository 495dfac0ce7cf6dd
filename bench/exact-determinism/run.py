# SPDX-License-Identifier: MIT
"""Exact mode's determinism, boot to boot, on any machine (the GPU machine included, which has
no guest root image): boots the stack packed by `bench/gpu/full-stack/make-carry.sh exact`
BOOTS times with the device of tests/vm/guest/timing-exact.sh (its '# vm:' line: the model,
a backing file throttled to 8 MB/s, csd.exact=on) under -icount shift=0, runs
exact_guest.c's command sequence in each boot, and prints per command the model, every
boot's median and the spread of all measured times across boots.

Usage: python3 bench/exact-determinism/run.py STACK_DIR [BOOTS] [REPEAT] [--json FILE]
"""
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TOP = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(TOP / "tests" / "vm" / "guest"))
import exact_models  # noqa: E402

KiB, MiB, LBA = exact_models.KiB, exact_models.MiB, exact_models.LBA


def header_props() -> dict:
    """The '# vm:' settings of timing-exact.sh: the device it is measured on, written once."""
    kv = exact_models.timing_exact_settings()
    return {"slm": kv["slm"], "throttle": kv["throttle"], "disk": kv["disk"], "device": kv["device"],
            "model": kv["model"]}


def size(s: str) -> int:
    """A size as csdvm's '# vm:' lines write it (4096, 64M, 1G) in bytes."""
    return int(s[:-1]) << {"K": 10, "M": 20, "G": 30}[s[-1]] if s[-1] in "KMG" else int(s)


def models(m: dict) -> dict:
    """The modelled time of each command exact_guest.c times (ns): tests/vm/guest/exact_models.py's."""
    model = exact_models.Model(m)
    return {"slm_load_4MiB": model.slm_load(4 * MiB), "slm_store_1MiB": model.slm_store(MiB),
            "gemm_1024": model.gemm(1024, 1024, 1024)}


def device_latencies(trace: str) -> list:
    """Each modelled command's arrival-to-completion time on the virtual clock, in order, from
    QEMU's trace: its held completion's post, or the end of its work when that came later."""
    arrived, took = {}, []
    for line in trace.splitlines():
        m = re.search(r"pci_nvme_csd_model_arrival cid (\d+) arrived at (\d+)", line)
        if m:
            arrived[m.group(1)] = int(m.group(2))
            continue
        m = (re.search(r"pci_nvme_csd_model_post cid (\d+) held completion posted at (\d+)", line)
             or re.search(r"pci_nvme_csd_model_overrun cid (\d+) modelled finish \d+ ns, work done later at (\d+)", line))
        if m and m.group(1) in arrived:
            took.append(int(m.group(2)) - arrived.pop(m.group(1)))
    return took


def boot(stack: Path, props: dict, repeat: int) -> dict:
    """One boot: returns {command: [ns, ...], 'counters': {...}, 'wall_s': s}."""
    with tempfile.TemporaryDirectory() as tmp:
        disk = Path(tmp) / "namespace.img"
        with open(disk, "wb") as f:
            f.truncate(size(props["disk"]))
        dev = (f"nvme,id=nvme0,serial=csd0001,drive=nvm0,logical_block_size={LBA},physical_block_size={LBA},"
               f"csd=on,csd.slm-size={size(props['slm'])},{props['device']},csd.exact=on")
        argv = [str(stack / "qemu-system-x86_64"), "-L", str(stack / "share"), "-machine", "q35,accel=tcg",
                "-cpu", "max", "-m", "512M", "-smp", "1", "-nodefaults", "-no-user-config", "-vga", "none",
                "-display", "none", "-bios", str(stack / "share" / "qboot.rom"),
                "-kernel", str(stack / "vmlinuz"), "-initrd", str(stack / "initramfs.cpio.gz"),
                "-append", "console=ttyS0 quiet loglevel=3 panic=-1 8250.nr_uarts=1 tsc=reliable no_timer_check "
                           f"mitigations=off tsc_early_khz=1000000 EXACT_REPEAT={repeat}",
                "-no-reboot", "-serial", "stdio", "-monitor", "none",
                "-drive", f"if=none,id=nvm0,file={disk},format=raw,cache=writeback,"
                          f"throttling.bps-total={size(props['throttle'])}",
                "-device", dev, "-icount", "shift=0,sleep=off",
                # the drive's own side: each command's arrival and completion on the virtual clock
                "-trace", "pci_nvme_csd_model_arrival", "-trace", "pci_nvme_csd_model_post",
                "-trace", "pci_nvme_csd_model_overrun"] + os.environ.get("EXACT_QEMU_ARGS", "").split()
        env = dict(os.environ, LD_LIBRARY_PATH=str(stack / "lib"))
        t0 = time.monotonic()
        p = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=900)
        out = p.stdout
        if os.environ.get("EXACT_QEMU_ARGS"):
            sys.stderr.write(p.stderr)
        wall = time.monotonic() - t0
    res: dict = {"wall_s": wall, "device_ns": device_latencies(p.stderr)}
    for line in out.splitlines():
        m = re.match(r"@@EXACT (\S+) (\d+)$", line)
        if m:
            res.setdefault(m.group(1), []).append(int(m.group(2)))
        elif line.startswith("@@EXACT counters"):
            res["counters"] = dict((k, int(v)) for k, v in (w.split("=") for w in line.split()[2:]))
        elif line.startswith("@@EXACT FAIL"):
            raise SystemExit(f"exact-determinism: {line}")
    if "counters" not in res:
        raise SystemExit("exact-determinism: the guest did not finish; its output:\n" + out[-3000:])
    return res


def main() -> int:
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    out_json = sys.argv[sys.argv.index("--json") + 1] if "--json" in sys.argv else None
    if out_json in args:
        args.remove(out_json)
    stack = Path(args[0])
    boots = int(args[1]) if len(args) > 1 else 3
    repeat = int(args[2]) if len(args) > 2 else 5
    props = header_props()
    model = models(props["model"])
    runs = []
    for b in range(boots):
        r = boot(stack, props, repeat)
        runs.append(r)
        print(f"boot {b + 1}/{boots}: {r['wall_s']:.1f} s wall, {r['counters']}", flush=True)
    ok = True
    print(f"{'command':16} {'model ms':>10} " + " ".join(f"{'boot ' + str(i + 1):>11}" for i in range(boots))
          + f" {'medians':>9} {'samples':>9} {'vs model':>9}")
    for cmd, m in model.items():
        meds = [statistics.median(r[cmd]) for r in runs]
        every = [t for r in runs for t in r[cmd]]
        spread_med = (max(meds) - min(meds)) / min(meds)
        spread_all = (max(every) - min(every)) / min(every)
        dev = statistics.median(every) / m - 1
        ok &= spread_med < 0.001 and abs(dev) < 0.005
        print(f"{cmd:16} {m / 1e6:10.3f} " + " ".join(f"{x / 1e6:11.3f}" for x in meds)
              + f" {spread_med * 100:8.4f}% {spread_all * 100:8.4f}% {dev * 100:+8.3f}%")
    print("(guest-observed, ms: each boot's median; spread of the medians across boots and of every sample)")
    # The drive's side: the same sequence of arrival-to-completion times in every boot.
    dev = [r["device_ns"] for r in runs]
    same = all(len(d) == len(dev[0]) and max(abs(a - b) for a, b in zip(d, dev[0])) <= 1 for d in dev)
    ok &= same and len(dev[0]) >= 3 * repeat
    print(f"drive side (QEMU trace, arrival to completion on the virtual clock): {len(dev[0])} commands a boot, "
          + ("the same to 1 ns in every boot" if same else "DIFFERENT across boots: "
             + "; ".join(",".join(str(x) for x in d[:8]) for d in dev)))
    overruns = sum(r["counters"]["model_overruns"] for r in runs)
    holds = sum(r["counters"]["model_holds"] for r in runs)
    ok &= overruns == 0
    print(f"C1h over {boots} boots: model_holds {holds}, model_overruns {overruns}; "
          f"{'PASS' if ok else 'FAIL'} (the guest's medians within 0.1 % boot to boot and within 0.5 % of "
          f"the model; the drive's times the same to 1 ns)")
    if out_json:
        Path(out_json).write_text(json.dumps({"model": model, "runs": runs, "ok": ok}, indent=1))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
