# SPDX-License-Identifier: MIT
# Sourced by the scripts run on the GPU machine (run-stream-llama.sh, run-vram.sh): strict mode,
# the repository's top as the working folder, $out for logs and results ($OUT, default
# build/gpu-out) and $b, the host-only build (build/gpu-host).
set -uo pipefail
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
out=${OUT:-$top/build/gpu-out}
mkdir -p "$out"
cd "$top"
b=build/gpu-host
