#!/usr/bin/env bash
# Zero-copy transmit against copying: uiwarp-perf between two processes over memif (one
# core each), tx_zero_copy=0 then 1 in each round, a fresh pair every run. Prints every
# figure and the medians; asserts nothing. Run on an idle machine.
#
# usage: zero_copy_ab.sh UIWARP_PERF [OP=write] [SIZE=65536] [ROUNDS=5] [ITERS=30000]
set -u
perf=${1:?usage: zero_copy_ab.sh UIWARP_PERF [OP] [SIZE] [ROUNDS] [ITERS]}
op=${2:-write} size=${3:-65536} rounds=${4:-5} iters=${5:-30000}
tmp=$(mktemp -d /tmp/uiw-zc.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
n=0
run() {
	local zc=$1 spid sock common
	n=$((n + 1))
	sock="$tmp/m$n.sock"
	common="hugepages=off; memory=1024; mbufs=65535; tx_zero_copy=$zc"
	"$perf" --set "port=net_memif0,role=server,socket=$sock,socket-abstract=no; ip=10.72.0.1/24; lcores=1; $common" \
		--listen 18517 >"$tmp/server.log" 2>&1 &
	spid=$!
	for _ in $(seq 100); do [ -S "$sock" ] && break; sleep 0.1; done
	sleep 0.2
	timeout 120 "$perf" --set "port=net_memif0,role=client,socket=$sock,socket-abstract=no; ip=10.72.0.2/24; lcores=0; $common" \
		--connect 10.72.0.1:18517 --csv --op "$op" --size "$size" --iters "$iters" >"$tmp/client.log" 2>&1
	kill -TERM "$spid" 2>/dev/null
	wait "$spid" 2>/dev/null
	grep -E '^(Send|RDMA)' "$tmp/client.log" | tail -1 | cut -d, -f5 >>"$tmp/zc$zc"
}
for _ in $(seq "$rounds"); do
	run 0
	run 1
done
for zc in 0 1; do
	printf 'tx_zero_copy=%s  %s %s B: median %s Gb/s, all: %s\n' "$zc" "$op" "$size" \
		"$(sort -n "$tmp/zc$zc" | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}')" \
		"$(paste -sd' ' "$tmp/zc$zc")"
done
