#!/usr/bin/env bash
# The main job: builds uiwarp if needed and runs the demo, two stack instances joined by a
# DPDK ring pair in one process (no NIC, no hugepages).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
[ -f build/build.ninja ] || meson setup build >/dev/null
ninja -C build apps/uiwarp-demo >/dev/null
exec build/apps/uiwarp-demo "$@"
