#!/usr/bin/env bash
# Socket programs on rsockets over uiwarp (memif between two processes, the drop-in
# libraries, librspreload.so for iperf3) beside the same programs on the kernel's TCP over
# a veth pair between two namespaces, in one run:
# - iperf3, one stream, 3 s (uiwarp: each side in a namespace of its own with no interface
#   up, so nothing reaches the kernel's TCP);
# - rstream's ping-pong of 64 B transfers, blocking (-T b), on rsockets and with its own
#   kernel-socket mode (-T s), µs a transfer.
# Each pair runs ROUNDS times, alternating, and the median of each side is printed with
# every figure. Prints figures; asserts nothing.
# usage: rsockets_bench.sh DROPIN_DIR [ROUNDS]
set -u
lib=${1:?usage: rsockets_bench.sh DROPIN_DIR [ROUNDS]}
[ -d "$lib" ] || lib=$(dirname "$lib")
lib=$(cd "$lib" && pwd)
rounds=${2:-5}
preload=/usr/lib/x86_64-linux-gnu/rsocket/librspreload.so
for t in iperf3 rstream; do command -v $t >/dev/null || { echo "$t not installed"; exit 0; }; done
[ -e "$preload" ] || { echo "librspreload.so not installed"; exit 0; }
tmp=$(mktemp -d /tmp/uiw-rsbench.XXXXXX)
ns_s="uiw-rsb-s-$$" ns_c="uiw-rsb-c-$$" nk_s="uiw-rsb-ks-$$" nk_c="uiw-rsb-kc-$$"
cleanup() {
	for n in "$ns_s" "$ns_c" "$nk_s" "$nk_c"; do ip netns del "$n" 2>/dev/null; done
	rm -rf "$tmp"
}
trap cleanup EXIT
for n in "$ns_s" "$ns_c" "$nk_s" "$nk_c"; do ip netns add "$n" || exit 1; done
# The kernel's pair: a veth between two namespaces, MTU 1500 as memif's.
ip -n "$nk_s" link add vs type veth peer name vc netns "$nk_c"
ip -n "$nk_s" addr add 10.74.0.1/24 dev vs
ip -n "$nk_c" addr add 10.74.0.2/24 dev vc
ip -n "$nk_s" link set vs up
ip -n "$nk_c" link set vc up
ip -n "$nk_s" link set lo up
ip -n "$nk_c" link set lo up
common="hugepages=off; memory=512"
n=0

# uiw SERVER... -- CLIENT...: both on the drop-in over a new memif socket; the client's
# output in $tmp/out.
uiw() {
	local s=() sock spid
	while [ "$1" != "--" ]; do s+=("$1"); shift; done
	shift
	n=$((n + 1))
	sock="$tmp/m$n.sock"
	ip netns exec "$ns_s" env LD_LIBRARY_PATH="$lib" UIWARP_CONFIG="port=net_memif0,role=server,socket=$sock,socket-abstract=no; ip=10.73.0.1/24; lcores=1; $common" \
		timeout 60 "${s[@]}" >"$tmp/server.out" 2>&1 &
	spid=$!
	for _ in $(seq 100); do [ -S "$sock" ] && break; sleep 0.1; done
	ip netns exec "$ns_c" env LD_LIBRARY_PATH="$lib" UIWARP_CONFIG="port=net_memif0,role=client,socket=$sock,socket-abstract=no; ip=10.73.0.2/24; lcores=0; $common" \
		timeout 60 "$@" >"$tmp/out" 2>&1
	wait "$spid"
}
# kern SERVER... -- CLIENT...: both on the kernel's TCP over the veth pair.
kern() {
	local s=() spid
	while [ "$1" != "--" ]; do s+=("$1"); shift; done
	shift
	ip netns exec "$nk_s" timeout 60 "${s[@]}" >"$tmp/server.out" 2>&1 &
	spid=$!
	sleep 0.5
	ip netns exec "$nk_c" timeout 60 "$@" >"$tmp/out" 2>&1
	wait "$spid"
}
gbps() { awk '/ receiver$/ { v = $7; if ($8 == "Mbits/sec") v /= 1000; print v }' "$tmp/out" | tail -1; }
usec() { awk '/^custom/ { print $NF }' "$tmp/out" | tail -1; }
median() { sort -g | awk '{ a[NR] = $1 } END { if (NR == 0) print "failed"; else print a[int((NR + 1) / 2)] }'; }

: >"$tmp/iu"; : >"$tmp/ik"; : >"$tmp/lu"; : >"$tmp/lk"
for r in $(seq "$rounds"); do
	uiw env LD_PRELOAD="$preload" iperf3 -s -1 -B 10.73.0.1 -- env LD_PRELOAD="$preload" iperf3 -c 10.73.0.1 -t 3
	a=$(gbps); echo "${a:-failed}" >>"$tmp/iu"
	kern iperf3 -s -1 -B 10.74.0.1 -- iperf3 -c 10.74.0.1 -t 3
	b=$(gbps); echo "${b:-failed}" >>"$tmp/ik"
	uiw rstream -b 10.73.0.1 -T b -S 64 -C 1 -I 20000 -- rstream -s 10.73.0.1 -T b -S 64 -C 1 -I 20000
	c=$(usec); echo "${c:-failed}" >>"$tmp/lu"
	kern rstream -b 10.74.0.1 -T s -T b -S 64 -C 1 -I 20000 -- rstream -s 10.74.0.1 -T s -T b -S 64 -C 1 -I 20000
	d=$(usec); echo "${d:-failed}" >>"$tmp/lk"
	echo "round $r: iperf3 rsockets/uiwarp ${a:-failed} Gb/s, kernel TCP ${b:-failed} Gb/s;" \
		"rstream 64 B rsockets/uiwarp ${c:-failed} us, kernel TCP ${d:-failed} us"
done
iu=$(grep -v failed "$tmp/iu" | median) ik=$(grep -v failed "$tmp/ik" | median)
lu=$(grep -v failed "$tmp/lu" | median) lk=$(grep -v failed "$tmp/lk" | median)
echo "median of $rounds: iperf3 one stream: rsockets on uiwarp $iu Gb/s, kernel TCP over veth $ik Gb/s" \
	"(ratio $(awk -v a="$iu" -v b="$ik" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }'))"
echo "median of $rounds: rstream 64 B blocking, a transfer: rsockets on uiwarp $lu us, kernel TCP over veth $lk us" \
	"(ratio $(awk -v a="$lu" -v b="$lk" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }'))"
