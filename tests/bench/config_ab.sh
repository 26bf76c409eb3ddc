#!/usr/bin/env bash
# One configuration key at two values, A/B: uiwarp-perf between two processes over memif
# (one core each), KEY=A then KEY=B in each round, a fresh pair every run, each operation
# of OPS in turn. Prints every figure and the medians; asserts nothing. Run on an idle
# machine.
#
# usage: config_ab.sh UIWARP_PERF KEY A B [OPS=write,read,send] [SIZE=65536] [ROUNDS=5]
#                     [ITERS=30000] [MTU=1500]
set -u
perf=${1:?usage: config_ab.sh UIWARP_PERF KEY A B [OPS] [SIZE] [ROUNDS] [ITERS] [MTU]}
key=${2:?key} a=${3:?value A} b=${4:?value B}
ops=${5:-write,read,send} size=${6:-65536} rounds=${7:-5} iters=${8:-30000} mtu=${9:-1500}
tmp=$(mktemp -d /tmp/uiw-ab.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
n=0
run() {
	local op=$1 val=$2 spid sock common
	n=$((n + 1))
	sock="$tmp/m$n.sock"
	common="hugepages=off; memory=1024; mbufs=65535; mtu=$mtu; $key=$val"
	taskset -c 1 "$perf" --set "port=net_memif0,role=server,socket=$sock,socket-abstract=no; ip=10.74.0.1/24; lcores=1; $common" \
		--listen 18519 >"$tmp/server.log" 2>&1 &
	spid=$!
	for _ in $(seq 100); do [ -S "$sock" ] && break; sleep 0.1; done
	sleep 0.2
	timeout 120 taskset -c 0 "$perf" --set "port=net_memif0,role=client,socket=$sock,socket-abstract=no; ip=10.74.0.2/24; lcores=0; $common" \
		--connect 10.74.0.1:18519 --csv --op "$op" --size "$size" --iters "$iters" >"$tmp/client.log" 2>&1
	kill -TERM "$spid" 2>/dev/null
	wait "$spid" 2>/dev/null
	local bw
	bw=$(grep -E '^(Send|RDMA)' "$tmp/client.log" | tail -1 | cut -d, -f5)
	echo "${bw:-nan}" >>"$tmp/$op.$val"
}
for _ in $(seq "$rounds"); do
	for op in ${ops//,/ }; do
		run "$op" "$a"
		run "$op" "$b"
	done
done
for op in ${ops//,/ }; do
	for val in "$a" "$b"; do
		printf '%s=%s  %s %s B, MTU %s: median %s Gb/s, all: %s\n' "$key" "$val" "$op" "$size" "$mtu" \
			"$(sort -g "$tmp/$op.$val" | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}')" \
			"$(paste -sd' ' "$tmp/$op.$val")"
	done
done
