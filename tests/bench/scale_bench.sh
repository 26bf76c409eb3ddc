#!/usr/bin/env bash
# Many-QP benchmark: uiwarp-scale at N = 1, 8, 64, 512, 4096 QPs, first as two instances
# in one thread (ring pair), then as two processes over memif (one core each). Prints
# set-up and teardown rates, memory per QP and aggregate rates; asserts nothing.
# Run on an idle machine: poll-mode figures collapse under other load.
#
# usage: scale_bench.sh UIWARP_SCALE [N...]
set -u
scale=${1:?usage: scale_bench.sh UIWARP_SCALE [N...]}
shift
counts=("$@")
[ ${#counts[@]} -gt 0 ] || counts=(1 8 64 512 4096)
tmp=$(mktemp -d /tmp/uiw-scale.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
common="hugepages=off; memory=1024; mbufs=65535"
work=(--bw-iters 8000 --rate-iters 100000)

for n in "${counts[@]}"; do
	echo "== ring pair, one thread, $n QPs"
	"$scale" --set "$common" --pair --qps "$n" "${work[@]}" 2>&1 | grep -v '^uiwarp info'
done
for n in "${counts[@]}"; do
	echo "== two processes over memif, $n QPs"
	sock=$tmp/memif-$n.sock
	taskset -c 1 "$scale" --set "port=net_memif0,role=server,socket=$sock,socket-abstract=no; ip=10.79.0.1/24; lcores=1; $common" \
		--listen 18516 --qps "$n" >"$tmp/server-$n.log" 2>&1 &
	spid=$!
	for _ in $(seq 100); do [ -S "$sock" ] && break; sleep 0.1; done
	timeout 300 taskset -c 0 "$scale" --set "port=net_memif0,role=client,socket=$sock,socket-abstract=no; ip=10.79.0.2/24; lcores=0; $common" \
		--connect 10.79.0.1:18516 --qps "$n" "${work[@]}" 2>&1 | grep -v '^uiwarp info\|mp action'
	kill -TERM "$spid" 2>/dev/null
	wait "$spid" 2>/dev/null
done
