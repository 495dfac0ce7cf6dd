#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Host side of kmod-agent.sh: the CPU agent (tests/agent/agent_check.cc, built as
# build/meson/tests/agent/csd-agent-check) drives the guest's agent queue pair through the
# ivshmem peer's memory file and checks the controller's answers against the namespace's
# host file. Usage: agent-run.sh SLM_OFFSET LAYOUT STEP...
set -euo pipefail
top=$(cd "$(dirname "$0")/../../.." && pwd)
bin="$top/build/meson/tests/agent/csd-agent-check"
[ -x "$bin" ] || { echo "agent-run: $bin missing (make build)"; exit 1; }
exec "$bin" "$CSD_WORKDIR/peer.mem" "$CSD_DISK" "$@"
