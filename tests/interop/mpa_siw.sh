#!/usr/bin/env bash
# MPA against the Linux kernel's soft-iWARP (siw) in a QEMU guest (../shared/tools/siw-vm):
# uiwarp-mpa on a veth whose other end sits on the guest's bridge, inside a namespace made
# here. Our initiator against `rping -s` in the guest, and `rping -c` in the guest against
# our responder, with CRC on and off, revision 1 and 2, and peer-to-peer RTRs. Each run
# must reach full operation with the negotiated values expected and an FPDU each way where
# rping sends one; each capture must pass tests/tools/iwarp_check.py. With UIWARP_RPING,
# also the whole stack: uiwarp-rping against rping in both roles (RDMA Read, RDMA Write and
# Sends, ten iterations checked by both sides).
#
# usage: mpa_siw.sh UIWARP_MPA IWARP_CHECK_PY [UIWARP_RPING] [CASE...]   (root; 77 = skipped)
set -u
tool=$(readlink -f "$1")
checker=$(readlink -f "$2")
shift 2
rping=
if [ $# -gt 0 ] && [ -x "$1" ]; then
  rping=$(readlink -f "$1")
  shift
fi
here=$(cd "$(dirname "$0")" && pwd)
siwvm=${SIWVM_SH:-$here/../../../shared/tools/siw-vm/siw-vm.sh}
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root"; exit 77; }
[ -x "$siwvm" ] || { echo "SKIP: no siw-vm harness at $siwvm"; exit 77; }
command -v tshark >/dev/null || { echo "SKIP: tshark not installed"; exit 77; }

export SIWVM_NETNS=uiwmpa$$ SIWVM_RUN=/tmp/uiw-siwvm-$$ SIWVM_TIMEOUT=120
out=$(mktemp -d /tmp/uiw-mpa-siw.XXXXXX)
OUR_IP=10.77.0.5
base="port=net_af_packet0,iface=uiw0,qdisc_bypass=1; ip=$OUR_IP/24; hugepages=off; memory=256; mbufs=8191"
# siw under TCG leaves an FPDU unread if it comes within a few ms of its Reply (see
# mpa_initiator_delay_us in docs/CONFIG.md); the default covers it, this adds a margin.
base="$base; mpa_initiator_delay_us=20000"

cleanup() {
  ip netns del "$SIWVM_NETNS" 2>/dev/null
  rm -rf "$SIWVM_RUN"
  [ "${KEEP:-0}" = 1 ] && echo "logs and captures kept in $out" || rm -rf "$out"
}
trap cleanup EXIT

t0=$(date +%s)
"$siwvm" build >"$out/build.log" 2>&1 || { echo "SKIP: siw-vm build failed"; tail -5 "$out/build.log"; exit 77; }
echo "siw-vm build (cached after the first): $(( $(date +%s) - t0 )) s"
"$siwvm" net-up >/dev/null 2>&1 || { echo "FAIL: net-up"; exit 1; }
ns() { ip netns exec "$SIWVM_NETNS" "$@"; }
ns ip link add uiw0 type veth peer name uiw0br
ns ip link set uiw0br master siwbr0
ns ip link set uiw0br up
ns ip link set uiw0 up
# Kernel-made frames on a veth leave the TCP checksum to the "NIC"; have it filled in.
ns ethtool -K uiw0 tx off >/dev/null
ns ethtool -K uiw0br tx off >/dev/null

fail=0
# case NAME ROLE "our mpa keys" "siw params" EXPECT "patterns the log must have"
run_case() {
  local name=$1 role=$2 keys=$3 params=$4 expect=$5 want=$6 t rc=0 log="$out/$1.log" cap="$out/$1.pcapng"
  local cfg="$base; $keys"
  t=$(date +%s)
  if [ "$role" = initiator ]; then
    "$siwvm" run --name "$name" --server --server-grace 12 --guest-timeout 40 \
      ${params:+--siw-params "$params"} --capture "$cap" \
      --cmd 'timeout 10 rping -s -a $SIWVM_MY_IP -v -C 1; true' \
      --peer-cmd "$tool --set '$cfg' --connect 10.77.0.11:7174 --expect $expect --timeout 8000 > $log 2>&1" \
      >"$out/$name.vm.log" 2>&1 || rc=$?
  else
    "$siwvm" run --name "$name" --peer-delay 3 --guest-timeout 40 \
      ${params:+--siw-params "$params"} --capture "$cap" \
      --cmd "timeout 8 rping -c -a $OUR_IP -v -C 1; true" \
      --peer-cmd "$tool --set '$cfg' --listen 7174 --wait-first --expect $expect --timeout 15000 > $log 2>&1" \
      >"$out/$name.vm.log" 2>&1 || rc=$?
  fi
  local why=""
  [ $rc = 0 ] || why="harness or tool failed (rc $rc)"
  grep -q 'RESULT: PASS' "$log" 2>/dev/null || why="${why:+$why; }tool did not pass"
  local IFS='|' p
  for p in $want; do grep -q -- "$p" "$log" 2>/dev/null || why="${why:+$why; }log lacks '$p'"; done
  local chk
  chk=$(python3 "$checker" "$cap" 2>&1) || why="${why:+$why; }capture: ${chk#*: }"
  if [ -n "$why" ]; then
    echo "FAIL $name ($(( $(date +%s) - t )) s): $why"
    sed 's/^/    /' "$log" 2>/dev/null | head -20
    tail -5 "$out/$name.vm.log" | sed 's/^/    vm: /'
    fail=1
  else
    echo "ok   $name ($(( $(date +%s) - t )) s): $(grep -m1 'established' "$log" | sed 's/^mpa: //'); ${chk#*: }"
  fi
}

want_case() { [ $# -eq 0 ] && return 0; local c; for c in "${cases[@]}"; do [ "$c" = "$1" ] && return 0; done; return 1; }
cases=("$@")
pick() { [ ${#cases[@]} -eq 0 ] || want_case "$1"; }

# Our initiator against siw's responder (rping -s answers our Send with a Read Request).
pick i-rev2-crc   && run_case i-rev2-crc initiator "mpa_crc=1" "" 1 "rev 2, CRC on|Read Request"
pick i-rev2-nocrc && run_case i-rev2-nocrc initiator "mpa_crc=0" "" 1 "rev 2, CRC off|Read Request"
# Revision 1 carries no IRD/ORD, so rping's server cannot post its Read (WIRE.md §1.5).
pick i-rev1-crc   && run_case i-rev1-crc initiator "mpa_rev=1;mpa_crc=1" "" 0 "rev 1, CRC on"
pick i-rev1-nocrc && run_case i-rev1-nocrc initiator "mpa_rev=1;mpa_crc=0" "" 0 "rev 1, CRC off"
pick i-p2p-write  && run_case i-p2p-write initiator "mpa_crc=1;mpa_p2p=1;mpa_rtr=6" "" 1 "RTR Write|Read Request"
pick i-p2p-read   && run_case i-p2p-read initiator "mpa_crc=1;mpa_p2p=1;mpa_rtr=4" "" 1 "RTR Read|Read Request"
# siw's initiator (rping -c sends its buffer advertisement first) against our responder.
pick r-rev2-crc   && run_case r-rev2-crc responder "mpa_crc=1" "" 1 "rev 2, CRC on|untagged Send qn 0 msn 1"
pick r-rev2-nocrc && run_case r-rev2-nocrc responder "mpa_crc=0" "" 1 "rev 2, CRC off|untagged Send qn 0 msn 1"
pick r-siw-crc    && run_case r-siw-crc responder "mpa_crc=0" "mpa_crc_required=1" 1 "CRC on|untagged Send"
pick r-rev1-crc   && run_case r-rev1-crc responder "mpa_crc=1" "mpa_version=1" 1 "rev 1, CRC on|untagged Send"
pick r-rev1-nocrc && run_case r-rev1-nocrc responder "mpa_crc=0" "mpa_version=1" 1 "rev 1, CRC off|untagged Send"
pick r-p2p        && run_case r-p2p responder "mpa_crc=1" "peer_to_peer=1" 1 "RTR Write|untagged Send qn 0 msn 1"

# The whole stack against rping: uiwarp-rping as client of `rping -s`, then as server of
# `rping -c`; both sides verify every iteration (-v), rping must exit 0.
run_rping() {
  local name=$1 role=$2 t rc=0 log="$out/$1.log" cap="$out/$1.pcapng" why=""
  t=$(date +%s)
  if [ "$role" = client ]; then
    "$siwvm" run --name "$name" --server --server-grace 12 --guest-timeout 40 --capture "$cap" \
      --cmd 'timeout 30 rping -s -a $SIWVM_MY_IP -v -C 10 -S 64; echo rping-rc=$?' \
      --peer-cmd "$rping --set '$base' -c -a 10.77.0.11 -C 10 -S 64 > $log 2>&1" \
      >"$out/$name.vm.log" 2>&1 || rc=$?
    grep -q "client: 10 of 10 iterations verified" "$log" || why="uiwarp-rping did not verify 10 of 10"
  else
    "$siwvm" run --name "$name" --peer-delay 3 --guest-timeout 40 --capture "$cap" \
      --cmd "timeout 30 rping -c -a $OUR_IP -v -C 10 -S 64; echo rping-rc=\$?" \
      --peer-cmd "$rping --set '$base' -s -S 64 > $log 2>&1" >"$out/$name.vm.log" 2>&1 || rc=$?
    grep -q "server: 20 reads and writes served" "$log" || why="uiwarp-rping served less than 20"
  fi
  [ $rc = 0 ] || why="${why:+$why; }harness rc $rc"
  grep -q "rping-rc=0" "$out/$name.vm.log" || why="${why:+$why; }rping in the guest failed"
  [ "$(grep -c 'ping data: rdma-ping-' "$out/$name.vm.log")" -ge 10 ] || why="${why:+$why; }rping printed fewer than 10 iterations"
  local chk
  chk=$(python3 "$checker" "$cap" 2>&1) || why="${why:+$why; }capture: ${chk#*: }"
  if [ -n "$why" ]; then
    echo "FAIL $name ($(( $(date +%s) - t )) s): $why"
    tail -5 "$log" 2>/dev/null | sed 's/^/    /'
    fail=1
  else
    echo "ok   $name ($(( $(date +%s) - t )) s): ${chk#*: }"
  fi
}
if [ -n "$rping" ]; then
  pick rping-client && run_rping rping-client client
  pick rping-server && run_rping rping-server server
fi

echo "total $(( $(date +%s) - t0 )) s"
[ $fail = 0 ] && echo "PASS: every case interoperates with siw" || { echo "FAIL"; exit 1; }
