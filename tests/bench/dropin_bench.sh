#!/usr/bin/env bash
# The drop-in path against the project's own tool, same link (memif between two processes,
# one core each), same sizes and depths, in one run: perftest's ib_write_bw / ib_read_bw /
# ib_send_bw -R at 64 KiB and ib_send_lat -R at 8 B on the drop-in libraries, beside
# uiwarp-perf's Write, Read, Send bandwidth and Send ping-pong. Reads run with 128 in flight
# (perftest's default -o, uiwarp-perf --ord 128) and with 16. Rates on this kind of machine
# drift from minute to minute, so each pair runs ROUNDS times, alternating, and the median
# of each side is printed with every figure, and the median of the rounds' own ratios.
# Prints figures; asserts nothing.
# perftest's clients run with CONNECT_DELAY_SO preloaded when given (tests/interop/
# connect_delay.c; see tests/integration/dropin.sh): it delays set-up, not the measurement.
# usage: dropin_bench.sh UIWARP_PERF DROPIN_LIB [CONNECT_DELAY_SO [ITERATIONS [ROUNDS]]]
set -u
perf=${1:?usage: dropin_bench.sh UIWARP_PERF DROPIN_LIB [CONNECT_DELAY_SO [ITERATIONS [ROUNDS]]]}
lib=${2:?}
[ -d "$lib" ] || lib=$(dirname "$lib")
delay=()
[ -n "${3:-}" ] && delay=(LD_PRELOAD="$(realpath "$3")" UIW_CONNECT_DELAY_MS=300)
iters=${4:-20000}
rounds=${5:-5}
command -v ib_write_bw >/dev/null || { echo "perftest not installed"; exit 0; }
tmp=$(mktemp -d /tmp/uiw-dbench.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
common="hugepages=off; memory=1024; mbufs=65535"
n=0

# ports N: the memif server and client port keys of run N.
sport() { echo "net_memif0,role=server,socket=$tmp/m$1.sock,socket-abstract=no"; }
cport() { echo "net_memif0,role=client,socket=$tmp/m$1.sock,socket-abstract=no"; }
wait_sock() { for _ in $(seq 100); do [ -S "$tmp/m$1.sock" ] && break; sleep 0.1; done; }

# perftest N PROGRAM ARGS...: run N (its own memif socket), server and client on the
# drop-in libraries; prints the figure (Gb/s, or "typical avg p99" in µs for a latency test)
# or "failed".
perftest() {
	local n=$1 spid row
	shift
	LD_LIBRARY_PATH="$lib" UIWARP_CONFIG="port=$(sport $n); ip=10.72.0.1/24; lcores=1; $common" \
		timeout 120 "$@" >"$tmp/server.log" 2>&1 &
	spid=$!
	wait_sock $n
	sleep 1
	env LD_LIBRARY_PATH="$lib" UIWARP_CONFIG="port=$(cport $n); ip=10.72.0.2/24; lcores=0; $common" \
		"${delay[@]}" timeout 120 "$@" 10.72.0.1 >"$tmp/client.log" 2>&1
	wait "$spid"
	row=$(grep -E '^ *[0-9]+ +[0-9]+ ' "$tmp/client.log" | tail -1)
	if [ -z "$row" ]; then
		echo failed
	elif [[ "$1" == *lat ]]; then
		# #bytes #iter t_min t_max t_typical t_avg t_stdev 99% 99.9%: send_lat reports one
		# way already.
		awk '{print $5, $6, $8}' <<<"$row"
	else
		awk '{print $4}' <<<"$row"
	fi
}

# own N ARGS...: uiwarp-perf over the same kind of link; the same figures.
own() {
	local n=$1 spid row
	shift
	"$perf" --set "port=$(sport $n); ip=10.72.0.1/24; lcores=1; $common" --listen 18515 \
		>"$tmp/server.log" 2>&1 &
	spid=$!
	wait_sock $n
	sleep 0.2
	timeout 120 "$perf" --set "port=$(cport $n); ip=10.72.0.2/24; lcores=0; $common" \
		--connect 10.72.0.1:18515 --csv "$@" >"$tmp/client.log" 2>&1
	kill -TERM "$spid" 2>/dev/null
	wait "$spid" 2>/dev/null
	row=$(grep -E '^(Send|RDMA)' "$tmp/client.log" | tail -1)
	if [ -z "$row" ]; then
		echo failed
	elif grep -q ',lat,' <<<"$row"; then
		echo "$(cut -d, -f8 <<<"$row") $(cut -d, -f7 <<<"$row") $(cut -d, -f9 <<<"$row")"   # p50, avg, p99
	else
		cut -d, -f5 <<<"$row"
	fi
}

# median of the first field of the lines on stdin ("failed" lines left out)
median() { grep -v failed | sort -g | awk '{ v[NR] = $0 } END { if (NR) print v[int((NR + 1) / 2)]; else print "failed" }'; }
median_of() { awk -v f="$1" '{ print $f }' | median; }

# compare NAME UNIT "PERFTEST ARGS" "UIWARP-PERF ARGS"
compare() {
	local name=$1 unit=$2 pa=$3 oa=$4 p=() o=() i
	for ((i = 0; i < rounds; i++)); do
		n=$((n + 2))
		# shellcheck disable=SC2086
		p+=("$(perftest $n $pa)")
		# shellcheck disable=SC2086
		o+=("$(own $((n + 1)) $oa)")
	done
	if [ "$unit" = us ]; then
		printf '%-34s perftest typical %s, avg %s, p99 %s us | uiwarp-perf p50 %s, avg %s, p99 %s us   [%s | %s]\n' \
			"$name" "$(printf '%s\n' "${p[@]}" | median_of 1)" "$(printf '%s\n' "${p[@]}" | median_of 2)" \
			"$(printf '%s\n' "${p[@]}" | median_of 3)" \
			"$(printf '%s\n' "${o[@]}" | median_of 1)" "$(printf '%s\n' "${o[@]}" | median_of 2)" \
			"$(printf '%s\n' "${o[@]}" | median_of 3)" \
			"$(printf '%s; ' "${p[@]}")" "$(printf '%s; ' "${o[@]}")"
	else
		local pm om paired
		pm=$(printf '%s\n' "${p[@]}" | median)
		om=$(printf '%s\n' "${o[@]}" | median)
		# Each round's two runs follow each other, so they share the host's state of the
		# moment: the median of the rounds' own ratios, beside the ratio of the medians,
		# which a state change between rounds moves (docs/BENCHMARKS.md).
		paired=$(for ((i = 0; i < rounds; i++)); do
			awk -v p="${p[i]}" -v o="${o[i]}" 'BEGIN { if (p + 0 > 0 && o + 0 > 0)
				printf "%.4f\n", (p / o - 1) * 100; else print "failed" }'
		done | median)
		printf '%-34s perftest %s | uiwarp-perf %s Gb/s | drop-in cost %s, round by round %s   [%s| %s]\n' \
			"$name" "$pm" "$om" "$(awk -v p="$pm" -v o="$om" 'BEGIN { if (p + 0 > 0 && o + 0 > 0)
				printf "%+.1f%%", (p / o - 1) * 100; else print "n/a" }')" \
			"$(awk -v c="$paired" 'BEGIN { if (c == "failed") print "n/a"; else printf "%+.1f%%", c }')" \
			"$(printf '%s ' "${p[@]}")" "$(printf '%s ' "${o[@]}")"
	fi
}

echo "memif, one core per process, $iters iterations, median of $rounds alternating runs [each run]"
compare "RDMA Write 64 KiB" gbps "ib_write_bw -R --report_gbits -s 65536 -n $iters" \
	"--op write --size 65536 --iters $iters"
compare "RDMA Read 64 KiB, 128 in flight" gbps "ib_read_bw -R --report_gbits -s 65536 -n $iters -o 128" \
	"--op read --size 65536 --iters $iters --ord 128"
compare "RDMA Read 64 KiB, 16 in flight" gbps "ib_read_bw -R --report_gbits -s 65536 -n $iters -o 16" \
	"--op read --size 65536 --iters $iters --ord 16"
compare "Send 64 KiB" gbps "ib_send_bw -R --report_gbits -s 65536 -n $iters" \
	"--op send --size 65536 --iters $iters"
compare "Send 8 B ping-pong, one-way" us "ib_send_lat -R -s 8 -n $iters" \
	"--op send --lat --size 8 --iters $iters"
