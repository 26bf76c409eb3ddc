#!/usr/bin/env bash
# MPA on the wire: two instances (uiwarp-mpa --pair) negotiate and exchange DDP Sends under
# each policy below; every capture must pass tests/tools/iwarp_check.py (tshark's iWARP
# dissectors), and the shared iwarp-pcap-check as well where a checkout has it beside it.
# usage: mpa_wire.sh UIWARP_MPA IWARP_CHECK_PY
set -u
tool=$1
checker=$2
command -v tshark >/dev/null || { echo "SKIP: tshark not installed"; exit 77; }
dir=$(mktemp -d /tmp/uiw-mpa-wire.XXXXXX)
trap 'rm -rf "$dir"' EXIT
shared_check="$(dirname "$0")/../../../shared/tools/iwarp-pcap-check"
fail=0
n=0
for policy in \
    "mpa_rev=2;mpa_crc=1" \
    "mpa_rev=2;mpa_crc=0" \
    "mpa_rev=1;mpa_crc=1" \
    "mpa_rev=1;mpa_crc=0" \
    "mpa_rev=2;mpa_crc=1;mpa_markers=1" \
    "mpa_rev=1;mpa_crc=0;mpa_markers=1" \
    "mpa_rev=2;mpa_crc=1;mpa_p2p=1;mpa_rtr=2" \
    "mpa_rev=2;mpa_crc=1;mpa_p2p=1;mpa_rtr=4" \
    "mpa_rev=2;mpa_crc=0;mpa_p2p=1;mpa_rtr=1;mpa_markers=1"; do
  n=$((n + 1))
  cap="$dir/mpa-$n.pcap"
  for size in 1 1400; do
    if ! timeout 60 "$tool" --pair --rounds 2 --sends 6 --size "$size" --pcap "$cap" \
         --set "$policy" >"$dir/log" 2>&1; then
      echo "FAIL: $policy size $size: the tool failed"; tail -20 "$dir/log"; fail=1; continue
    fi
    if ! out=$(python3 "$checker" --one-fpdu-per-segment "$cap"); then
      echo "FAIL: $policy size $size: $out"; fail=1; continue
    fi
    if [ -x "$shared_check" ] && ! out2=$(bash "$(dirname "$0")/../tools/shared_judge.sh" "$shared_check" "$cap"); then
      echo "FAIL: $policy size $size: $out2"; fail=1; continue
    fi
    echo "ok: $policy size $size: ${out#*: }"
  done
done
[ $fail -eq 0 ] && echo "all captures clean" || exit 1
