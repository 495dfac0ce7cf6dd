#!/usr/bin/env bash
# make demo: boots the guest with a 1 GiB CSD namespace and 512 MiB of SLM and runs
# host/demo/demo.py in it (the dataset is made in the guest; nothing else is needed).
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
truncate -s 1G "$tmp/namespace.img"
exec python3 "$top/tests/vm/csdvm.py" cmd --disk "$tmp/namespace.img" --slm 512M --memory 3G \
    --timeout 900 "python3 /csd/demo/demo.py"
