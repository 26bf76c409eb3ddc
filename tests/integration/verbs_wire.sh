#!/usr/bin/env bash
# The verbs pair tests on the wire: test_verbs_ops runs every operation at every size under
# each MPA policy (and through 5% loss), the ORD/IRD limit, the Terminates; each case leaves
# a capture, and every capture must pass tests/tools/iwarp_check.py (tshark's iWARP
# dissectors, good CRCs, one FPDU per segment), and the shared iwarp-pcap-check as well
# where a checkout has it beside it (on each capture's first 2000 frames: shared_judge.sh).
# usage: verbs_wire.sh TEST_VERBS_OPS IWARP_CHECK_PY
set -u
tests=$1
checker=$2
command -v tshark >/dev/null || { echo "SKIP: tshark not installed"; exit 77; }
dir=$(mktemp -d /tmp/uiw-verbs-wire.XXXXXX)
trap 'rm -rf "$dir"' EXIT
shared_check="$(dirname "$0")/../../../shared/tools/iwarp-pcap-check"
if ! UIW_PAIR_PCAP_DIR="$dir" CK_FORK=yes "$tests" >"$dir/log" 2>&1; then
  echo "FAIL: the pair tests failed"; tail -30 "$dir/log"; exit 1
fi
fail=0
n=0
for cap in "$dir"/*.pcap; do
  n=$((n + 1))
  name=$(basename "$cap")
  if ! out=$(python3 "$checker" --one-fpdu-per-segment "$cap"); then
    echo "FAIL: $name: $out"; fail=1; continue
  fi
  if [ -x "$shared_check" ] && ! out2=$(bash "$(dirname "$0")/../tools/shared_judge.sh" "$shared_check" "$cap"); then
    echo "FAIL: $name: $out2"; fail=1; continue
  fi
  echo "ok: $name: ${out#*: }"
done
[ "$n" -ge 10 ] || { echo "FAIL: only $n captures"; exit 1; }
[ $fail -eq 0 ] && echo "all $n captures clean" || exit 1
