#!/usr/bin/env bash
# The drop-in path against the project's own tool, same link (memif between two processes,
# one core each), same sizes, in one run: perftest's ib_write_bw / ib_read_bw / ib_send_bw -R
# at 64 KiB and ib_send_lat -R at 8 B on the drop-in libraries, beside uiwarp-perf's Write,
# Read, Send bandwidth and Send ping-pong. Prints figures; asserts nothing.
# usage: dropin_bench.sh UIWARP_PERF DROPIN_LIB [ITERATIONS]
set -u
perf=${1:?usage: dropin_bench.sh UIWARP_PERF DROPIN_LIB [ITERATIONS]}
lib=${2:?}
[ -d "$lib" ] || lib=$(dirname "$lib")
iters=${3:-20000}
command -v ib_write_bw >/dev/null || { echo "perftest not installed"; exit 0; }
tmp=$(mktemp -d /tmp/uiw-dbench.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
common="hugepages=off; memory=1024; mbufs=65535"
n=0

# ports N: the memif server and client port keys of run N.
sport() { echo "net_memif0,role=server,socket=$tmp/m$1.sock,socket-abstract=no"; }
cport() { echo "net_memif0,role=client,socket=$tmp/m$1.sock,socket-abstract=no"; }

# perftest NAME PROGRAM ARGS...: server and client on the drop-in libraries.
perftest() {
	local name=$1 spid row
	shift
	n=$((n + 1))
	LD_LIBRARY_PATH="$lib" UIWARP_CONFIG="port=$(sport $n); ip=10.72.0.1/24; lcores=1; $common" \
		timeout 120 "$@" >"$tmp/server.log" 2>&1 &
	spid=$!
	for _ in $(seq 100); do [ -S "$tmp/m$n.sock" ] && break; sleep 0.1; done
	sleep 1
	LD_LIBRARY_PATH="$lib" UIWARP_CONFIG="port=$(cport $n); ip=10.72.0.2/24; lcores=0; $common" \
		timeout 120 "$@" 10.72.0.1 >"$tmp/client.log" 2>&1
	wait "$spid"
	row=$(grep -E '^ *[0-9]+ +[0-9]+ ' "$tmp/client.log" | tail -1)
	if [ -z "$row" ]; then
		printf '%-46s failed: %s\n' "$name" "$(tail -1 "$tmp/client.log")"
	elif [[ "$name" == *lat* ]]; then
		# #bytes #iter t_min t_max t_typical t_avg ...: half of the round trip, as perftest's
		# send_lat reports one way already.
		printf '%-46s typical %s us, avg %s us (one-way)\n' "$name" \
			"$(awk '{print $5}' <<<"$row")" "$(awk '{print $6}' <<<"$row")"
	else
		printf '%-46s %s Gb/s\n' "$name" "$(awk '{print $4}' <<<"$row")"
	fi
}

# own NAME ARGS...: uiwarp-perf over the same kind of link.
own() {
	local name=$1 spid row
	shift
	n=$((n + 1))
	"$perf" --set "port=$(sport $n); ip=10.72.0.1/24; lcores=1; $common" --listen 18515 \
		>"$tmp/server.log" 2>&1 &
	spid=$!
	for _ in $(seq 100); do [ -S "$tmp/m$n.sock" ] && break; sleep 0.1; done
	sleep 0.2
	timeout 120 "$perf" --set "port=$(cport $n); ip=10.72.0.2/24; lcores=0; $common" \
		--connect 10.72.0.1:18515 --csv "$@" >"$tmp/client.log" 2>&1
	kill -TERM "$spid" 2>/dev/null
	wait "$spid" 2>/dev/null
	row=$(grep -E '^(Send|RDMA)' "$tmp/client.log" | tail -1)
	if [ -z "$row" ]; then
		printf '%-46s failed: %s\n' "$name" "$(tail -1 "$tmp/client.log")"
	elif grep -q ',lat,' <<<"$row"; then
		printf '%-46s p50 %s us, avg %s us (one-way)\n' "$name" "$(cut -d, -f8 <<<"$row")" \
			"$(cut -d, -f7 <<<"$row")"
	else
		printf '%-46s %s Gb/s\n' "$name" "$(cut -d, -f5 <<<"$row")"
	fi
}

echo "memif, one core per process, $iters iterations"
perftest "perftest ib_write_bw -R 64 KiB (drop-in)" ib_write_bw -R --report_gbits -s 65536 -n "$iters"
own "uiwarp-perf RDMA Write 64 KiB" --op write --size 65536 --iters "$iters"
perftest "perftest ib_read_bw -R 64 KiB (drop-in)" ib_read_bw -R --report_gbits -s 65536 -n "$iters"
own "uiwarp-perf RDMA Read 64 KiB" --op read --size 65536 --iters "$iters"
perftest "perftest ib_send_bw -R 64 KiB (drop-in)" ib_send_bw -R --report_gbits -s 65536 -n "$iters"
own "uiwarp-perf Send 64 KiB" --op send --size 65536 --iters "$iters"
perftest "perftest ib_send_lat -R 8 B (drop-in)" ib_send_lat -R -s 8 -n "$iters"
own "uiwarp-perf Send 8 B ping-pong" --op send --lat --size 8 --iters "$iters"
