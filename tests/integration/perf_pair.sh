#!/usr/bin/env bash
# uiwarp-perf between two instances over a ring pair: Send, Write and Read, bandwidth and
# latency, 2 octets to 1 MiB; each run must complete every size (the tool checks every
# completion's status and exits non-zero on a failed one or a connection that closes).
# Then the pair over vhost-user (pair_link=vhost), and two processes over memif and over
# vhost-user/virtio-user (below). Figures are printed, not judged.
# usage: perf_pair.sh UIWARP_PERF
set -u
fail=0
for op in send write read; do
  for mode in "" "--lat"; do
    out=$(timeout 120 "$1" --pair --op "$op" $mode --sizes 2:1048576 --iters 50 --csv 2>&1)
    rc=$?
    rows=$(grep -c "^[A-Za-z ]*,\(bw\|lat\),[0-9]" <<<"$out")
    if [ $rc -ne 0 ] || [ "$rows" -ne 20 ]; then
      echo "FAIL: $op ${mode:-bw}: rc $rc, $rows of 20 sizes"; tail -5 <<<"$out"; fail=1
    else
      echo "ok: $op ${mode:-bw}: $(grep ',1048576,' <<<"$out")"
    fi
  done
done
# The same pair joined by vhost-user and virtio-user in one process (pair_link=vhost), with
# TSO: A (the client, vhost-user) sends its guest frames of many segments whole, B
# (virtio-user) cuts its own by the PMD; every size must complete with the CRC checked at
# each end, and the data's sender must have sent such frames and its receiver taken them.
for op in write read send; do
  out=$(UIWARP_STATS=1 timeout 120 "$1" --set 'pair_link=vhost; tso=1' --pair --op "$op" \
    --sizes 2:1048576 --iters 50 --csv 2>&1)
  rc=$?
  rows=$(grep -c "^[A-Za-z ]*,bw,[0-9]" <<<"$out")
  # The counters of A, then of B: the data's sender is A but for Reads.
  a_tso=$(sed -n '/^counters of A/,/^counters of B/p' <<<"$out" | grep -oP 'tcp.tx_tso_frames +\K[0-9]+')
  b_tso=$(sed -n '/^counters of B/,$p' <<<"$out" | grep -oP 'tcp.tx_tso_frames +\K[0-9]+')
  a_large=$(sed -n '/^counters of A/,/^counters of B/p' <<<"$out" | grep -oP 'tcp.rx_large +\K[0-9]+')
  b_large=$(sed -n '/^counters of B/,$p' <<<"$out" | grep -oP 'tcp.rx_large +\K[0-9]+')
  if [ "$op" = read ]; then sent=${b_tso:-0} took=${a_large:-0}; else sent=${a_tso:-0} took=${b_large:-0}; fi
  if [ $rc -ne 0 ] || [ "$rows" -ne 20 ] || [ "$sent" -eq 0 ] || [ "$took" -eq 0 ]; then
    echo "FAIL: pair over vhost-user, TSO, $op: rc $rc, $rows of 20 sizes, $sent TSO frames sent, $took large segments taken"
    tail -5 <<<"$out"; fail=1
  else
    echo "ok: pair over vhost-user, TSO, $op: $sent TSO frames: $(grep ',1048576,' <<<"$out")"
  fi
done
# Zero-copy transmit through a PMD that copies lent memory out of the frames (memif, two
# processes): with the CRC on, a frame whose octets changed between the CRC and the PMD's
# copy fails at the peer, and the failed completion fails the run.
tmp=$(mktemp -d /tmp/uiw-pp.XXXXXX)
common="hugepages=off; memory=512; tx_zero_copy=1"
# run_pair OP SOCK SERVER_PORT CLIENT_PORT [CONFIG]: a server on SERVER_PORT (which makes
# SOCK) and a client on CLIENT_PORT running OP ("write", or "write --lat" and so on) from
# 256 B to 1 MiB, CONFIG added to both; sets out (the client's output with its counters),
# rc, rows (sizes completed), lent and srv_lent (octets lent by each side).
run_pair() {
  local spid
  UIWARP_STATS=1 "$perf" --set "port=$3; ip=10.71.0.1/24; lcores=1; $common; ${5:-}" \
    --listen 18516 >"$tmp/srv.log" 2>&1 &
  spid=$!
  for _ in $(seq 100); do [ -S "$2" ] && break; sleep 0.1; done
  out=$(UIWARP_STATS=1 timeout 60 "$perf" --set "port=$4; ip=10.71.0.2/24; lcores=0; $common; ${5:-}" \
    --connect 10.71.0.1:18516 --op $1 --sizes 256:1048576 --iters 50 --csv 2>&1)
  rc=$?
  kill -TERM "$spid" 2>/dev/null; wait "$spid" 2>/dev/null
  rows=$(grep -c "^[A-Za-z ]*,\(bw\|lat\),[0-9]" <<<"$out")
  lent=$(grep -oP 'tx_lent_octets\D*\K[0-9]+' <<<"$out" | head -1)
  srv_lent=$(grep -oP 'tx_lent_octets\D*\K[0-9]+' "$tmp/srv.log" | head -1)
}
# memif_run OP CLIENT_DEVARGS: run_pair over memif, CLIENT_DEVARGS after the client's socket.
memif_run() {
  local sock="$tmp/$1${2:+-zc}.sock"
  run_pair "$1" "$sock" "net_memif0,role=server,socket=$sock,socket-abstract=no" \
    "net_memif0,role=client,socket=$sock,socket-abstract=no$2"
}
perf=$1
for op in send write; do
  memif_run "$op" ""
  if [ $rc -ne 0 ] || [ "$rows" -ne 13 ] || [ "${lent:-0}" -eq 0 ]; then
    echo "FAIL: memif zero-copy $op: rc $rc, $rows of 13 sizes, ${lent:-0} octets lent"
    tail -5 <<<"$out"; fail=1
  else
    echo "ok: memif zero-copy $op: $lent octets lent: $(grep ',1048576,' <<<"$out")"
  fi
done
# memif's zero-copy client (zero-copy=yes): the server reads the client's frames in the
# client's DPDK memory, after tx_burst returned. Lent transmit asked for must stay off there
# (registered memory lies outside the memory the server maps, which memif names frames by),
# and every size must still complete, both ways (Read).
for op in write read; do
  memif_run "$op" ",zero-copy=yes"
  if [ $rc -ne 0 ] || [ "$rows" -ne 13 ] || [ "${lent:-0}" -ne 0 ] ||
     ! grep -q "memif zero-copy client" <<<"$out"; then
    echo "FAIL: memif zero-copy client, $op: rc $rc, $rows of 13 sizes, ${lent:-0} octets lent"
    tail -5 <<<"$out"; fail=1
  else
    echo "ok: memif zero-copy client, $op (nothing lent): $(grep ',1048576,' <<<"$out")"
  fi
done
# --breakdown on both sides of an 8 B Write ping-pong over memif: the client splits the
# measured round trips in three, the server (stopped after it) its part in three; nearly
# every round trip is counted (a retransmitted frame would move a mark) and no part's
# median is longer than two of the one-way p99.
sock="$tmp/bd.sock"
UIWARP_STATS=0 "$perf" --set "port=net_memif0,role=server,socket=$sock,socket-abstract=no; ip=10.71.0.1/24; lcores=1; hugepages=off; memory=512" \
  --listen 18516 --breakdown >"$tmp/srv.log" 2>&1 &
spid=$!
for _ in $(seq 100); do [ -S "$sock" ] && break; sleep 0.1; done
out=$(timeout 60 "$perf" --set "port=net_memif0,role=client,socket=$sock,socket-abstract=no; ip=10.71.0.2/24; lcores=0; hugepages=off; memory=512" \
  --connect 10.71.0.1:18516 --op write --lat --size 8 --iters 2000 --warmup 500 --csv --breakdown 2>&1)
rc=$?
kill -TERM "$spid" 2>/dev/null; wait "$spid" 2>/dev/null
p99=$(grep -oP '^RDMA Write,lat,8,2000,[^,]*,[^,]*,[^,]*,[^,]*,\K[0-9.]+' <<<"$out")
clines=$(grep -cE '^breakdown: client: .*\((19[0-9][0-9]|2000)\)$' <<<"$out")
slines=$(grep -c '^breakdown: server: .*([0-9]*)$' "$tmp/srv.log")
longest=$(grep -h '^breakdown:' - "$tmp/srv.log" <<<"$out" | grep -oP 'p50 +\K[0-9.]+' | sort -g | tail -1)
if [ $rc -ne 0 ] || [ "$clines" -ne 3 ] || [ "$slines" -ne 3 ] || [ -z "$p99" ] ||
   awk -v a="${longest:-0}" -v b="$p99" 'BEGIN { exit !(a <= 0 || a > 2 * b) }'; then
  echo "FAIL: --breakdown: rc $rc, $clines client and $slines server lines, longest part ${longest:-none} us, one-way p99 ${p99:-none} us"
  grep breakdown <<<"$out"; grep breakdown "$tmp/srv.log"; fail=1
else
  echo "ok: --breakdown: $(grep -h '^breakdown:' - "$tmp/srv.log" <<<"$out" | sed 's/^breakdown: //; s/ *p50 */ /; s/ us,.*/ us/' | paste -sd';')"
fi
# virtio-user to vhost-user, where the NIC's part (the TCP checksum, and with tso=1 the
# cutting into segments) is left to the PMD and MPA takes the CRC from the source pieces,
# not from the mbuf it copies them into: every size must complete, CRC on, the peer
# checking each FPDU's CRC (a bad one ends the connection with a Terminate). Reads and
# the Writes back of a latency run make the vhost side send: its PMD copies each frame as
# it takes it, so there FPDUs are copied into the segment, the CRC taken in that copy's
# pass, and (tx_zero_copy=1) lent memory given to the PMD by reference. With tso=1 the
# vhost side hands its guest frames of many segments whole (tso-to-guest) while the guest
# asked for large receive (lro=1, the default): a Read's responses must then go so
# (tcp.tx_tso_frames at the vhost side) and come in so (tcp.rx_large at the virtio-user
# side); with lro=0 the guest takes none, and none may be sent to it. Receive buffers
# (rx_buf_size left to the port): with tso=1 each side receives into 8 KiB buffers of a
# pool of its own, the virtio-user side only with lro=1 as well, and neither with tso=0;
# the last round (tso=1; rx_buf_size=0) receives into the ports' own buffers, as before.
# Each time, the vhost-user side must have touched the pages of its guest's memory that the
# guest had used, as the guest came up (its log line, in KiB).
rx_pool() {   # LOG: 1 if that side logged its own pool of 8 KiB receive buffers, else 0
  grep -q 'receives into 8191 buffers of 8192 octets of their own (key rx_buf_size, auto)' \
    <<<"$1" && echo 1 || echo 0
}
for tso in 0 1 lro0 rx0; do
  for op in write send read "write --lat"; do
    sock="$tmp/v-${op// /}-$tso.sock"
    conf="tso=$tso"
    [ $tso = lro0 ] && conf="tso=1; lro=0"
    [ $tso = rx0 ] && conf="tso=1; rx_buf_size=0"
    [ "$op" = "write --lat" ] || conf="$conf; tx_zero_copy=0"
    run_pair "$op" "$sock" "net_vhost0,iface=$sock,queues=1,tso=1" \
      "net_virtio_user0,path=$sock,queues=1" "$conf"
    frames=$(grep -oP 'tx_tso_frames\D*\K[0-9]+' <<<"$out" | head -1)
    srv_frames=$(grep -oP 'tx_tso_frames\D*\K[0-9]+' "$tmp/srv.log" | head -1)
    large=$(grep -oP 'tcp.rx_large\D*\K[0-9]+' <<<"$out" | head -1)
    # The vhost-user side touched the pages its guest has used as the guest came up
    # (KiB, the most of its link-ups), before the first frames.
    touched=$(grep -oP "the guest's memory touched ahead of its first frames: \K[0-9]+" \
              "$tmp/srv.log" | sort -n | tail -1)
    # FPDUs for TSO frames go in slabs handed out last in, first out (from a ring, in
    # turn, 64 went round past the L2): with tso=1 both sides name the stack mempool.
    slab_logs=$(grep -c "64 slabs of 64 KiB for TSO frames, from DPDK's 'stack' mempool" \
                <<<"$out$(printf '\n')$(cat "$tmp/srv.log")")
    want_srv_pool=0; want_cli_pool=0
    { [ $tso = 1 ] || [ $tso = lro0 ]; } && want_srv_pool=1
    [ $tso = 1 ] && want_cli_pool=1
    if [ $rc -ne 0 ] || [ "$rows" -ne 13 ] ||
       { [ $tso != 0 ] && [ "$op" != read ] && [ "${frames:-0}" -eq 0 ]; } ||
       { { [ $tso = 1 ] || [ $tso = rx0 ]; } && [ "$op" = read ] &&
         { [ "${srv_frames:-0}" -eq 0 ] || [ "${large:-0}" -eq 0 ]; }; } ||
       { [ $tso != 1 ] && [ $tso != rx0 ] && [ "${srv_frames:-0}" -ne 0 ]; } ||
       [ "$(rx_pool "$(cat "$tmp/srv.log")")" -ne "$want_srv_pool" ] ||
       [ "$(rx_pool "$out")" -ne "$want_cli_pool" ] ||
       [ "$slab_logs" -ne "$( [ $tso = 0 ] && echo 0 || echo 2)" ] ||
       { [ "$op" = "write --lat" ] && [ "${srv_lent:-0}" -eq 0 ]; } || [ "${touched:-0}" -eq 0 ]; then
      echo "FAIL: virtio-user $op, tso=$tso: rc $rc, $rows of 13 sizes, ${frames:-0} TSO frames, vhost side ${srv_frames:-0} TSO frames and lent ${srv_lent:-0} octets, ${large:-0} large received, pools of 8 KiB receive buffers (vhost side, virtio-user side) $(rx_pool "$(cat "$tmp/srv.log")") $(rx_pool "$out") where $want_srv_pool $want_cli_pool, $slab_logs sides with slabs from the stack mempool, ${touched:-0} KiB of the guest's memory touched"
      tail -5 <<<"$out"; fail=1
    else
      echo "ok: virtio-user $op, tso=$tso (${frames:-0} TSO frames, vhost side ${srv_frames:-0} TSO frames and lent ${srv_lent:-0} octets, ${large:-0} large received, ${touched:-0} KiB of the guest's memory touched): $(grep ',1048576,' <<<"$out")"
    fi
  done
done
rm -rf "$tmp"
[ $fail -eq 0 ] && echo "PASS" || exit 1
