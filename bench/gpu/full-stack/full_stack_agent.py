# SPDX-License-Identifier: MIT
"""GPU kernels drive the emulated NVMe controller in QEMU: the project's QEMU (TCG) boots the
guest with a CSD drive (agent-poll-us: the controller polls agent queues' shadow doorbells)
and an ivshmem-plain peer whose BAR 2 is a host file; in the guest csd.ko creates agent queue
pairs in that BAR (agent_guest.c) and prints their layouts. This process then runs the
agents on the same file: the CUDA agent (agent_gpu.cu: Reads, SLM Write/Read, Execute and bad
SQEs from kernels, checked on the GPU; a rate run over several pairs), once under
compute-sanitizer on pairs of its own, and the CPU agent (csd-agent-check) on another pair,
then lets the guest go. The namespace's first 16 MiB are random bytes written here before
the boot (the agents compare their Reads with this file).
Usage: full_stack_agent.py STACK_DIR [READS_PER_PAIR] [PAIRS]   (STACK_DIR: build/gpu-stack)"""
import os
import shutil
import subprocess
import sys
import tempfile
import time

from stack import qemu_argv, qemu_env, stack_lines


def main():
    """Boots the stack, runs the agents on the pairs the guest made, lets the guest go; 0 if all passed."""
    stack = os.path.abspath(sys.argv[1])
    reads = int(sys.argv[2]) if len(sys.argv) > 2 else 20000
    rate_pairs = int(sys.argv[3]) if len(sys.argv) > 3 else 8
    pairs = rate_pairs + 2  # [0]: compute-sanitizer, [1..rate_pairs]: the rate run, last: the CPU agent
    bar = 1 << ((pairs << 20) - 1).bit_length()  # a power of two, as a BAR is
    work = tempfile.mkdtemp(dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
    peer, ns = os.path.join(work, "peer.mem"), os.path.join(work, "ns.img")
    with open(peer, "wb") as f:
        f.truncate(bar)
    with open(ns, "wb") as f:
        f.write(os.urandom(16 << 20))
        f.truncate(64 << 20)
    argv = qemu_argv(stack, f"STACK_AGENT={pairs}", ns, "csd.slm-size=67108864,agent-poll-us=10", peer, bar)
    env = qemu_env(stack)
    t0 = time.perf_counter()
    q = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env,
                         text=True)
    layouts, failed = [], False
    for w in stack_lines(q.stdout):
        if w[1] == "FAIL":
            failed = True
        elif w[1] == "AGENT":
            layouts.append(w[2])
        elif w[1] == "READY":
            break
        elif w[1] == "END":
            break
    print(f"guest booted, {len(layouts)} agent queue pairs, {time.perf_counter() - t0:.1f} s", flush=True)

    def agent(title, cmd, lib_env=None):
        """Runs one agent, printing its output; whether it passed."""
        print(f"\n== {title}\n$ {' '.join(os.path.basename(c) if c.startswith(stack) else c for c in cmd)}", flush=True)
        t = time.perf_counter()
        try:
            r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=400,
                               env=lib_env)
        except (OSError, subprocess.TimeoutExpired) as e:
            print(f"failed to run: {e}", flush=True)
            return False
        print(r.stdout, end="")
        print(f"({time.perf_counter() - t:.1f} s, exit {r.returncode})", flush=True)
        return r.returncode == 0

    slm = str(32 << 20)
    if len(layouts) == pairs:
        gpu = f"{stack}/agent_gpu"
        san = shutil.which("compute-sanitizer") or "/usr/local/cuda/bin/compute-sanitizer"
        if not os.path.exists(san):
            san = None
        ok = san is None or agent("CUDA agent under compute-sanitizer (check, then 500 4 KiB Reads on its pair)",
                   [san, "--tool", "memcheck", "--error-exitcode", "9", gpu, peer, ns, slm, "500", "4096",
                    layouts[0]])
        ok &= agent(f"CUDA agent: check, then {reads} random 4 KiB and 512 B Reads on each of {rate_pairs} pairs",
                    [gpu, peer, ns, slm, str(reads), "4096,512", *layouts[1:1 + rate_pairs]])
        ok &= agent("CPU agent (csd-agent-check) on the last pair",
                    [f"{stack}/csd-agent-check", peer, ns, slm, layouts[-1], "reads", "slm", "execute", "bad",
                     "rate", str(reads)], lib_env=env)
        failed |= not ok
    else:
        failed = True
    try:
        q.stdin.write("done\n")
        q.stdin.flush()
        for w in stack_lines(q.stdout):
            failed |= w[1] == "FAIL"
        q.wait(timeout=60)
    finally:
        if q.poll() is None:
            q.kill()
            q.wait()
    shutil.rmtree(work)
    print("full-stack agent: FAILED" if failed else "full-stack agent: ok")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
