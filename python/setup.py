# SPDX-License-Identifier: MIT
"""Builds nvme_csd._core: the pybind11 bindings compiled together with libcsd and the
device core from this repository (no prebuilt library needed). The ioctl and io_uring
transports are included where libnvme and liburing are found; elsewhere (the GPU machine)
the in-process device alone."""
import os
import shlex
import subprocess
from pathlib import Path

from pybind11.setup_helpers import ParallelCompile, Pybind11Extension, build_ext
from setuptools import setup

here = Path(__file__).resolve().parent
top = here.parent
core = top / "qemu-device" / "core"
host = top / "host"


def pkg(*args):
    try:
        return shlex.split(subprocess.run(["pkg-config", *args], check=True, capture_output=True,
                                          text=True).stdout)
    except (OSError, subprocess.CalledProcessError):
        return None


def rel(p):
    return os.path.relpath(p, here)


spec = top / "spec"
sources = ["src/bindings.cc", rel(spec / "crc32c.cc")]
sources += [rel(p) for p in sorted((core / "src").glob("*.cc"))]
sources += [rel(p) for p in sorted((core / "src" / "programs").glob("*.cc"))]
host_libs = ["c_api.cc", "device.cc", "drive_set.cc", "error.cc", "fork_hold.cc", "npy.cc", "nvme_cs_commands.cc", "program.cc", "programs.cc", "slm_allocator.cc", "store.cc", "store_catalog.cc",
             "transport.cc", "transport_inproc.cc", "transport_kmod.cc"]
macros, cflags, ldflags, libs = [], [], [], ["zstd", "lz4"]

blas = pkg("--cflags", "--libs", "openblas")
if blas is not None:
    cflags += [f for f in blas if not f.startswith("-l")]
    ldflags += [f for f in blas if f.startswith("-L")]
for inc in ("/usr/include/x86_64-linux-gnu/openblas-pthread", "/usr/include/openblas"):
    if Path(inc, "cblas.h").exists():
        cflags.append("-I" + inc)
libs.append("openblas")
if pkg("--exists", "libxxhash") is not None:
    macros.append(("CSD_HAVE_XXHASH", "1"))
    libs.append("xxhash")
if pkg("--exists", "libisal") is not None:
    macros.append(("CSD_HAVE_ISAL", "1"))
    libs.append("isal")
if pkg("--exists", "libdpdk") is not None:  # downloadable eBPF programs (DPDK librte_bpf)
    dpdk_inc = pkg("--variable=includedir", "libdpdk")[0]
    macros.append(("CSD_HAVE_BPF", "1"))
    cflags += ["-I" + dpdk_inc, "-I" + dpdk_inc + "/../x86_64-linux-gnu/dpdk"]
    libs += ["rte_bpf", "rte_eal"]
if os.environ.get("NVME_CSD_NO_PASSTHRU") is None and pkg("--exists", "libnvme") is not None \
        and pkg("--exists", "liburing") is not None:
    macros.append(("CSD_HAVE_PASSTHRU", "1"))
    host_libs += ["nvme_dev.cc", "transport_ioctl.cc", "transport_uring.cc"]
    libs += ["nvme", "uring"]
sources += [rel(host / "lib" / f) for f in host_libs]

# The GPU part (land data in GPU memory) where the CUDA runtime is found; never required.
cuda = Path(os.environ.get("CUDA_HOME", "/usr/local/cuda"))
include_dirs = [str(spec), str(core / "include"), str(host / "include"), str(host / "lib"),
                str(top / "kmod" / "uapi")]
if os.environ.get("NVME_CSD_NO_CUDA") is None and (cuda / "include" / "cuda_runtime_api.h").exists():
    sources.append(rel(host / "cuda" / "gpu.cc"))
    macros.append(("CSD_HAVE_GPU", "1"))
    include_dirs += [str(cuda / "include"), str(host / "cuda")]
    ldflags += ["-L" + str(cuda / "lib64"), "-Wl,-rpath," + str(cuda / "lib64")]
    libs.append("cudart")

ext = Pybind11Extension(
    "nvme_csd._core",
    sources,
    include_dirs=include_dirs,
    define_macros=macros,
    extra_compile_args=cflags + ["-O2"],
    extra_link_args=ldflags,
    libraries=libs,
    cxx_std=17,
)

# Compile the sources on every core (NVME_CSD_JOBS=N to choose).
ParallelCompile("NVME_CSD_JOBS", default=0).install()

setup(ext_modules=[ext], cmdclass={"build_ext": build_ext})
