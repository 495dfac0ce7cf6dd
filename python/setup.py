# SPDX-License-Identifier: MIT
"""Builds nvme_csd._core: the pybind11 bindings, linked against libcsd.so as meson built it
(build/meson/host, or $CSD_LIBDIR). libcsd.so and libcsd-emu.so (the in-process device,
which libcsd loads only for emu: paths) are copied into the package beside _core, which
finds them there ($ORIGIN): the module itself links no BLAS, compression or eBPF runtime."""
import os
import re
import shutil
from pathlib import Path

from pybind11.setup_helpers import Pybind11Extension, build_ext
import setuptools
from setuptools import setup

here = Path(__file__).resolve().parent
top = here.parent
host = top / "host"
spec = top / "spec"


def libcsd_dir():
    """The folder holding meson's libcsd.so and libcsd-emu.so."""
    # a relative CSD_LIBDIR is the user's (their shell's $PWD): pip runs this file in python/
    tried = [Path(os.environ.get("PWD", ".")) / os.environ["CSD_LIBDIR"]] if os.environ.get("CSD_LIBDIR") else \
        [top / "build" / "meson" / "host", top / "build" / "gpu-host" / "host"]
    for d in tried:
        if (d / "libcsd.so").exists() and (d / "libcsd-emu.so").exists():
            return d.resolve()
    raise SystemExit(f"nvme_csd: libcsd.so and libcsd-emu.so not found in {', '.join(map(str, tried))}: "
                     "build them first (meson setup build/meson && meson compile -C build/meson "
                     "csd:shared_library csd-emu:shared_library) or name their folder in CSD_LIBDIR")


libdir = libcsd_dir()
sources = sorted(str(p.relative_to(here)) for p in (here / "src").glob("*.cc"))  # the module and its areas
macros, ldflags = [], ["-Wl,-rpath,$ORIGIN"]
include_dirs = [str(spec), str(host / "include"), str(host / "store" / "include")]

# The GPU part (land data in GPU memory) where the CUDA runtime is found; never required.
cuda = Path(os.environ.get("CUDA_HOME", "/usr/local/cuda"))
libs = ["csd"]
objects = []
# gpu.cc calls the CRC-32C kernel (gpu_crc32c.cu), which meson builds with nvcc beside libcsd.
crc_kernel = libdir / "gpu_crc32c.o"
if os.environ.get("NVME_CSD_NO_CUDA") is None and (cuda / "include" / "cuda_runtime_api.h").exists() \
        and crc_kernel.exists():
    sources += [os.path.relpath(host / "cuda" / f, here) for f in ("gpu.cc", "host_registration.cc", "layer_loader.cc")]
    objects.append(str(crc_kernel))
    macros.append(("CSD_HAVE_GPU", "1"))
    include_dirs += [str(cuda / "include"), str(host / "cuda")]
    ldflags += ["-L" + str(cuda / "lib64"), "-Wl,-rpath," + str(cuda / "lib64")]
    libs.append("cudart")


class BuildWithLibcsd(build_ext):
    """build_ext that also puts libcsd's shared libraries beside the module it builds."""

    def run(self):
        super().run()
        dest = Path(self.get_ext_fullpath("nvme_csd._core")).parent
        for lib in sorted(libdir.iterdir()):
            # what the module and libcsd-emu load: libcsd by its soname (libcsd.so.0), libcsd-emu.so
            if re.fullmatch(r"libcsd\.so\.[0-9]+|libcsd-emu\.so", lib.name):
                shutil.copyfile(lib, dest / lib.name)  # the file a symlink names, under the link's name


ext = Pybind11Extension(
    "nvme_csd._core",
    sources,
    include_dirs=include_dirs,
    define_macros=macros,
    extra_compile_args=["-O2"],
    extra_link_args=ldflags,
    library_dirs=[str(libdir)],
    libraries=libs,
    extra_objects=objects,
    # setuptools rebuilds only when a source or one of these is newer than the module: the
    # headers the bindings include (a changed class or virtual table in libcsd's headers
    # with a stale module called the wrong function: Device.namespace read garbage) and
    # libcsd itself; a new kernel object links the module again
    depends=objects + [str(h) for h in sorted((host / "include").rglob("*.h*")) + sorted(spec.glob("*.h"))
                       + sorted((host / "cuda").glob("*.hpp"))]
    + [str(libdir / "libcsd.so"), str(libdir / "libcsd-emu.so")],
    cxx_std=17,
)

# The licence: PEP 639's SPDX expression where setuptools takes one (77 and later; its
# older table form is deprecated there), else the plain text older ones (Debian 12's 66,
# which builds the guest's extension, images/stage-guest.sh) take.
LICENSE = ({"license_expression": "MIT"} if int(setuptools.__version__.split(".")[0]) >= 77
           else {"license": "MIT"})
setup(ext_modules=[ext], cmdclass={"build_ext": BuildWithLibcsd}, **LICENSE)
