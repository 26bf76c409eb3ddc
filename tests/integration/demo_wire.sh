#!/usr/bin/env bash
# The demo's traffic on the wire: its capture (every frame both instances send, the seven
# iWARP operations included) must pass tshark's iWARP dissectors, one FPDU per segment,
# and show every RDMAP opcode 0 to 7.
# usage: demo_wire.sh UIWARP_DEMO IWARP_CHECK_PY
set -u
command -v tshark >/dev/null || { echo "SKIP: tshark not installed"; exit 77; }
cap=$(mktemp /tmp/uiw-demo.XXXXXX.pcap)
trap 'rm -f "$cap"' EXIT
"$1" -w "$cap" >/dev/null || { echo "FAIL: the demo failed"; exit 1; }
out=$(python3 "$2" --one-fpdu-per-segment "$cap") || { echo "FAIL: $out"; exit 1; }
echo "$out"
for op in 0x00 0x01 0x02 0x03 0x04 0x05 0x06 0x07; do
  grep -q "$op" <<<"${out#*opcodes=}" || { echo "FAIL: no RDMAP opcode $op on the wire"; exit 1; }
done
echo "PASS: all seven operations on the wire, each FPDU well formed"
