#!/usr/bin/env bash
# RDMA benchmark through the verbs API (uiwarp-perf, CRC on): RDMA Write, RDMA Read and Send
# bandwidth at 64 KiB and 8-octet RDMA Write ping-pong latency between two uiwarp processes
# over vhost-user/virtio-user (without and with TSO) and over memif (one core each), beside the kernel's
# single-stream TCP (iperf3) and a 64-byte TCP ping-pong (sockperf) over a veth pair between
# two namespaces, in the same run. Prints figures; asserts nothing. Run on an idle machine.
#
# usage: rdma_bench.sh UIWARP_PERF [ITERATIONS]
set -u
perf=${1:?usage: rdma_bench.sh UIWARP_PERF [ITERATIONS]}
iters=${2:-20000}
tmp=$(mktemp -d /tmp/uiw-rbench.XXXXXX)
ns_a="uiw-rb-a-$$" ns_b="uiw-rb-b-$$"
cleanup() {
	ip netns del "$ns_a" 2>/dev/null
	ip netns del "$ns_b" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
common="hugepages=off; memory=1024; mbufs=65535"

n=0
# run NAME KIND PERF_ARGS...: KIND vhost, vhost-tso (the vhost side offers TSO, both stacks
# use it) or memif, a fresh socket each time; server on CPU 1, client on CPU 0.
run() {
	local name=$1 kind=$2 spid sport cport row extra=""
	shift 2
	n=$((n + 1))
	if [ "$kind" = vhost-tso ]; then
		sport="net_vhost0,iface=$tmp/v$n.sock,queues=1,tso=1"
		cport="net_virtio_user0,path=$tmp/v$n.sock,queues=1"
		extra="; tso=1"
	elif [ "$kind" = vhost ]; then
		sport="net_vhost0,iface=$tmp/v$n.sock,queues=1"
		cport="net_virtio_user0,path=$tmp/v$n.sock,queues=1"
	else
		sport="net_memif0,role=server,socket=$tmp/m$n.sock,socket-abstract=no"
		cport="net_memif0,role=client,socket=$tmp/m$n.sock,socket-abstract=no"
	fi
	"$perf" --set "port=$sport; ip=10.69.0.1/24; lcores=1; $common$extra" --listen 18515 \
		>"$tmp/server.log" 2>&1 &
	spid=$!
	# The server makes the socket once its EAL is up.
	for _ in $(seq 100); do [ -S "$tmp/${kind:0:1}$n.sock" ] && break; sleep 0.1; done
	sleep 0.2
	timeout 120 "$perf" --set "port=$cport; ip=10.69.0.2/24; lcores=0; $common$extra" \
		--connect 10.69.0.1:18515 --csv "$@" >"$tmp/client.log" 2>&1
	kill -TERM "$spid" 2>/dev/null
	wait "$spid" 2>/dev/null
	row=$(grep -E '^(Send|RDMA)' "$tmp/client.log" | tail -1)
	if [ -z "$row" ]; then
		printf '%-44s failed: %s\n' "$name" "$(tail -1 "$tmp/client.log")"
	elif grep -q ',lat,' <<<"$row"; then
		printf '%-44s one-way avg %s us, p50 %s us, p99 %s us\n' "$name" \
			"$(cut -d, -f7 <<<"$row")" "$(cut -d, -f8 <<<"$row")" "$(cut -d, -f9 <<<"$row")"
	else
		printf '%-44s %s Gb/s\n' "$name" "$(cut -d, -f5 <<<"$row")"
	fi
}

echo "uiwarp-perf, $iters iterations each"
for kind in vhost vhost-tso memif; do
	case $kind in
	vhost) label=vhost-user ;;
	vhost-tso) label="vhost-user, TSO" ;;
	*) label=memif ;;
	esac
	run "$label, RDMA Write 64 KiB" "$kind" --op write --size 65536 --iters "$iters"
	run "$label, RDMA Read 64 KiB" "$kind" --op read --size 65536 --iters "$iters"
	run "$label, Send 64 KiB" "$kind" --op send --size 65536 --iters "$iters"
	[ "$kind" = vhost-tso ] ||
		run "$label, RDMA Write 8 B ping-pong" "$kind" --op write --lat --size 8 --iters "$iters"
done

# The kernel over a veth pair between two namespaces, pinned like the above.
if ! ip netns add "$ns_a" 2>/dev/null; then
	echo "kernel baseline skipped: cannot create network namespaces"
	exit 0
fi
ip netns add "$ns_b"
ip -n "$ns_a" link add va type veth peer name vb netns "$ns_b"
ip -n "$ns_a" addr add 10.69.1.1/24 dev va
ip -n "$ns_b" addr add 10.69.1.2/24 dev vb
for n in "$ns_a" "$ns_b"; do ip -n "$n" link set lo up; done
ip -n "$ns_a" link set va up
ip -n "$ns_b" link set vb up
if command -v iperf3 >/dev/null; then
	ip netns exec "$ns_b" taskset -c 1 iperf3 -s -1 >/dev/null 2>&1 &
	sleep 0.5
	bw=$(ip netns exec "$ns_a" taskset -c 0 iperf3 -c 10.69.1.2 -t 5 -O 1 -f g 2>/dev/null |
		awk '/receiver/ {print $(NF-2)}')
	printf '%-44s %s Gb/s\n' "Linux TCP over veth, iperf3 stream" "${bw:-?}"
	wait
fi
if command -v sockperf >/dev/null; then
	ip netns exec "$ns_b" taskset -c 1 sockperf sr --tcp -i 10.69.1.2 >/dev/null 2>&1 &
	spid=$!
	sleep 0.5
	out=$(ip netns exec "$ns_a" taskset -c 0 sockperf pp --tcp -i 10.69.1.2 -m 64 -t 5 2>/dev/null)
	kill "$spid" 2>/dev/null
	wait "$spid" 2>/dev/null
	printf '%-44s %s\n' "Linux TCP over veth, sockperf 64 B ping-pong" \
		"$(grep -oE 'avg-latency=[0-9.]+' <<<"$out" | head -1) usec (half round trip), $(grep -oE '<MAX> observation|percentile 50.000 = *[0-9.]+' <<<"$out" | tail -1)"
fi
