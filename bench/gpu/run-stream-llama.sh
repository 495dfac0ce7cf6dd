#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The layer loader on a machine with an NVIDIA GPU: builds libcsd, its GPU part and the Python
# package there (host-only: no QEMU, libnvme or liburing needed), runs the loader's GPU tests
# (also under compute-sanitizer) and the Python loader and landing tests, then
# bench/gpu/stream_llama.py with the arguments given (streaming inference of a transformers
# Llama against what users do today; docs/perf.md). Logs, results and the plot go to $OUT
# (default build/gpu-out). GPU_TESTS: the gtest filter (default Loader.*: the loader's; under
# compute-sanitizer without the timed *WhileLanding* tests).
source "$(dirname "$0")/gpu-machine-env.sh"
{
    nvidia-smi -L
    python3 -c "import torch, transformers, accelerate, safetensors; print('torch', torch.__version__, 'transformers', transformers.__version__, 'accelerate', accelerate.__version__, 'safetensors', safetensors.__version__)"
    [ -f $b/build.ninja ] || meson setup $b -Dpassthru=disabled -Dbuildtype=release 2>&1 | grep -E "ERROR|cudart|nvcc"
    meson compile -C $b csd:shared_library csd-emu:shared_library gpu_crc32c csd-gpu-tests 2>&1 | grep -E "error|FAILED" | head -30
    echo "== GPU tests ($b/tests/gpu/csd-gpu-tests --gtest_filter=${GPU_TESTS:-Loader.*})"
    $b/tests/gpu/csd-gpu-tests --gtest_brief=1 --gtest_filter="${GPU_TESTS:-Loader.*}" 2>&1 | tail -25
    echo "== the same under compute-sanitizer (memcheck)"
    timeout 300 /usr/local/cuda/bin/compute-sanitizer --tool memcheck --leak-check full $b/tests/gpu/csd-gpu-tests \
        --gtest_brief=1 --gtest_filter="${GPU_TESTS:-Loader.*}:-*WhileLanding*" 2>&1 | grep -vE "^=========  +(Host Frame|Saved host)" | tail -12
    echo "== Python: the loader and landing tests"
    CSD_LIBDIR="$top/$b/host" python3 -m pip install -q --no-build-isolation ./python 2>&1 | tail -5
    (cd /tmp && python3 -m pytest -q -p no:cacheprovider "$top/python/tests/test_layers.py" "$top/python/tests/test_gpu.py" 2>&1 | tail -15)
} 2>&1 | tee "$out/loader-tests.log"
echo "== streaming inference: python3 bench/gpu/stream_llama.py $*"
PYTHONUNBUFFERED=1 python3 bench/gpu/stream_llama.py --out "$out" "$@" 2>&1 | tee "$out/stream-llama.log"
