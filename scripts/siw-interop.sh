#!/usr/bin/env bash
# uiwarp against Linux siw in a QEMU guest: every interop case (tests/interop/siw_interop.sh),
# or the cases and groups named (mpa, rping, perftest, ops, cycles, quick; a case such as
# ib_read_bw-server). Installs what it needs, builds, then runs; root. About 15 minutes for
# everything (36 cases), 5 to 6 for quick; the first guest build adds about 1.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
[ -f build/build.ninja ] || meson setup build >/dev/null
ninja -C build >/dev/null
exec bash tests/interop/siw_interop.sh build/lib/verbs/dropin build/apps/uiwarp-rping \
	build/apps/uiwarp-mpa build/tests/siw_verbs build/tests/libuiw_connect_delay.so \
	tests/tools/iwarp_check.py "$@"
