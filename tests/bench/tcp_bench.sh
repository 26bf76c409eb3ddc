#!/usr/bin/env bash
# TCP benchmark: single-stream throughput and 64-byte request/response round trips between
# two uiwarp processes over vhost-user/virtio-user and over memif (one core each), and
# between uiwarp and Linux over a veth pair (af_packet). Prints figures; asserts nothing.
# Run on an idle machine: poll-mode figures collapse under other load.
#
# usage: tcp_bench.sh UIWARP_TCPPERF [BYTES] [ROUND_TRIPS]
set -u
perf=${1:?usage: tcp_bench.sh UIWARP_TCPPERF [BYTES] [ROUND_TRIPS]}
bytes=${2:-4000000000}
rts=${3:-200000}
tmp=$(mktemp -d /tmp/uiw-bench.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
common="hugepages=off; memory=1024; mbufs=65535; tcp_delack_us=200"

# run NAME SERVER_PORT CLIENT_PORT WORK...: server on CPU 1, client on CPU 0.
run() {
	local name=$1 sport=$2 cport=$3 spid
	shift 3
	local swork=(--recv)
	[ "$1" = "--rr" ] && swork=(--echo)
	"$perf" --set "port=$sport; ip=10.66.0.1/24; lcores=1; $common" --listen 5001 "${swork[@]}" \
		--exit-after 1 --no-hash >"$tmp/server.log" 2>&1 &
	spid=$!
	sleep 1
	"$perf" --set "port=$cport; ip=10.66.0.2/24; lcores=0; $common" --connect 10.66.0.1:5001 \
		--no-hash "$@" >"$tmp/client.log" 2>&1
	wait "$spid"
	printf '%-28s %s\n' "$name" "$(grep -hE 'Gb/s|^rr:' "$tmp/client.log" | tr '\n' ' ')"
}

rm -f "$tmp"/*.sock
run "vhost-user, stream" "net_vhost0,iface=$tmp/v1.sock,queues=1" \
	"net_virtio_user0,path=$tmp/v1.sock,queues=1" --send "$bytes"
run "vhost-user, 64 B RR" "net_vhost0,iface=$tmp/v2.sock,queues=1" \
	"net_virtio_user0,path=$tmp/v2.sock,queues=1" --rr "$rts" --size 64
run "memif, stream" "net_memif0,role=server,socket=$tmp/m1.sock,socket-abstract=no" \
	"net_memif0,role=client,socket=$tmp/m1.sock,socket-abstract=no" --send "$bytes"
run "memif, 64 B RR" "net_memif0,role=server,socket=$tmp/m2.sock,socket-abstract=no" \
	"net_memif0,role=client,socket=$tmp/m2.sock,socket-abstract=no" --rr "$rts" --size 64
