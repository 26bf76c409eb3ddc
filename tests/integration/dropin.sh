#!/usr/bin/env bash
# Unmodified Debian rdma-core programs on the drop-in libraries (LD_LIBRARY_PATH=DROPIN_DIR):
# a program without configuration exits naming the variable; ibv_devices and ibv_devinfo
# show the device; then between two processes, over memif and over a veth pair between two
# namespaces (af_packet): rping -C 100 -V both ways checks its data, ucmatose completes,
# and perftest's ib_send_bw, ib_write_bw, ib_read_bw, ib_send_lat, ib_write_lat and
# ib_read_lat (-R, rdma_cm) complete with their own checks from 2 B to 1 MiB. Between
# vhost-user and virtio-user: rping, with 60,000 octets too, and the three bandwidth tests
# at 64 KiB, each side's frames built over its FPDUs.
#
# perftest -R's client connects its test QP as soon as the parameter exchange ends, while
# its server still has to set up and listen again; a client that wins that race is refused
# (as over any RNIC), and perftest 4.5's retry then reuses the ids it has just freed and
# crashes. With two cores and four spinning threads the server loses a scheduler tick
# often enough to matter, so perftest clients run with CONNECT_DELAY_SO preloaded
# (tests/interop/connect_delay.c: every rdma_connect after the first waits 300 ms).
# Each client starts once uiwarp-stat (UIWARP_STAT) lists its server's listener: a fixed
# second was not always enough for a server on a loaded machine to reach rdma_listen, and
# its client, refused, gave up.
# ibv_get_cq_event() runs the stack in the caller's thread before it sleeps (cq_spin_us):
# CQ_WAIT (tests/integration/cq_wait.c) shows a signal due during that spin ending the call
# with EINTR and a non-blocking channel answering EAGAIN; rping's counters show its waits
# served so, and none with cq_spin_us=0.
# usage: dropin.sh DROPIN_DIR (or a library in it) [CONNECT_DELAY_SO [UIWARP_STAT [CQ_WAIT]]]
set -u
lib=${1:?usage: dropin.sh DROPIN_DIR [CONNECT_DELAY_SO [UIWARP_STAT [CQ_WAIT]]]}
delay_so=${2:-}
[ -z "$delay_so" ] || delay_so=$(realpath "$delay_so")
stat_tool=${3:-}
[ -z "$stat_tool" ] || stat_tool=$(realpath "$stat_tool")
cq_wait=${4:-}
[ -z "$cq_wait" ] || cq_wait=$(realpath "$cq_wait")
[ -d "$lib" ] || lib=$(dirname "$lib")
lib=$(cd "$lib" && pwd)
for t in ibv_devices ibv_devinfo rping ucmatose ib_send_bw ib_write_bw ib_read_bw \
	ib_send_lat ib_write_lat ib_read_lat; do
	command -v "$t" >/dev/null || { echo "SKIP: $t not installed (ibverbs-utils, rdmacm-utils, perftest)"; exit 77; }
done
tmp=$(mktemp -d /tmp/uiw-dropin.XXXXXX)
ns_a="uiw-di-a-$$" ns_b="uiw-di-b-$$"
spid=""
cleanup() {
	[ -n "$spid" ] && kill "$spid" 2>/dev/null
	ip netns del "$ns_a" 2>/dev/null
	ip netns del "$ns_b" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
common="hugepages=off; memory=512; mbufs=16383"
fail=0 n=0
client_env=() server_env=()
bad() { echo "FAIL: $*"; fail=1; }

# 1. No configuration: a clear error naming the variables, no crash.
out=$(env -u UIWARP_CONF -u UIWARP_CONFIG LD_LIBRARY_PATH="$lib" ibv_devices 2>&1)
rc=$?
if [ $rc -ne 0 ] && [ $rc -lt 128 ] && grep -q "UIWARP_CONF" <<<"$out"; then
	echo "ok: no configuration: rc $rc, '$(head -1 <<<"$out")'"
else
	bad "no configuration: rc $rc: $out"
fi
out=$(env -u UIWARP_CONF -u UIWARP_CONFIG LD_LIBRARY_PATH="$lib" timeout 20 rping -s -a 10.0.0.1 -C 1 2>&1)
rc=$?
[ $rc -ne 0 ] && [ $rc -lt 124 ] && grep -q "UIWARP_CONF" <<<"$out" || bad "rping without configuration: rc $rc: $out"

# 2. The device as ibv_devices and ibv_devinfo show it (one process on a ring port).
ring="port=net_ring0; ip=10.71.0.1/24; $common"
out=$(LD_LIBRARY_PATH="$lib" UIWARP_CONFIG="$ring" ibv_devices 2>&1)
grep -q "^[[:space:]]*uiw0[[:space:]]*[0-9a-f]\{16\}" <<<"$out" && echo "ok: ibv_devices lists uiw0" || bad "ibv_devices: $out"
out=$(LD_LIBRARY_PATH="$lib" UIWARP_CONFIG="$ring" ibv_devinfo -v 2>&1)
if grep -q "transport:.*iWARP" <<<"$out" && grep -q "state:.*PORT_ACTIVE" <<<"$out" &&
	grep -q "link_layer:.*Ethernet" <<<"$out"; then
	echo "ok: ibv_devinfo -v: iWARP, port active, Ethernet"
else
	bad "ibv_devinfo: $out"
fi

# 2b. ibv_get_cq_event() on a channel nothing reaches (one process on a ring port). A
# SIGALRM whose handler has no SA_RESTART, due 100 ms in, while the call spins (1 s here),
# must end it with EINTR once the spin is over: a wait that handled the signal in its spin
# would sleep on for ever (the timeout). On an O_NONBLOCK channel: EAGAIN, and no spin.
if [ -n "$cq_wait" ]; then
	out=$(LD_LIBRARY_PATH="$lib" UIWARP_CONFIG="$ring; cq_spin_us=1000000" timeout 20 "$cq_wait" signal 2>&1)
	rc=$?
	if [ $rc -eq 0 ]; then
		echo "ok: $(grep '^signal:' <<<"$out")"
	else
		bad "cq_wait signal: rc $rc: $(tail -3 <<<"$out")"
	fi
	out=$(LD_LIBRARY_PATH="$lib" UIWARP_CONFIG="$ring" UIWARP_STATS=1 timeout 20 "$cq_wait" nonblock 2>&1)
	rc=$?
	spun=$(awk '$1 == "progress.cq_spin_hits" || $1 == "progress.cq_spin_misses" { n += $2 } END { print n + 0 }' <<<"$out")
	if [ $rc -eq 0 ] && [ "$spun" -eq 0 ] && grep -q "progress.cq_spin_misses" <<<"$out"; then
		echo "ok: $(grep '^nonblock:' <<<"$out"), no spin"
	else
		bad "cq_wait nonblock: rc $rc: $(grep -E '^nonblock:|cq_spin' <<<"$out")"
	fi
fi

# 3. An idle server (rping -s blocked in rdma_get_cm_event, no client on the memif link)
# must not spin: the progress thread naps after a quiet spell. Spinning is a whole core
# (about 100 of 100 CPU ticks a second); a quarter of that is the bound here.
LD_LIBRARY_PATH="$lib" UIWARP_CONFIG="port=net_memif0,role=server,socket=$tmp/idle.sock,socket-abstract=no; ip=10.72.0.1/24; lcores=1; $common" \
	rping -s -a 10.72.0.1 -C 1 >"$tmp/idle.out" 2>&1 &
spid=$!
sleep 2
cpu_ticks() { awk '{print $14 + $15}' "/proc/$spid/stat" 2>/dev/null || echo 0; }
t0=$(cpu_ticks)
sleep 3
t1=$(cpu_ticks)
hz=$(getconf CLK_TCK)
if ! kill -0 "$spid" 2>/dev/null; then
	bad "idle rping -s exited: $(cat "$tmp/idle.out")"
elif [ $((t1 - t0)) -lt $((3 * hz / 4)) ]; then
	echo "ok: idle rping -s used $((t1 - t0)) of $((3 * hz)) CPU ticks in 3 s"
else
	bad "idle rping -s spins: $((t1 - t0)) of $((3 * hz)) CPU ticks in 3 s"
fi
kill "$spid" 2>/dev/null
wait "$spid" 2>/dev/null
spid=""

# pair LINK NAME CHECK SERVER_CMD -- CLIENT_CMD: runs a server and a client program on
# the drop-in libraries, one core each, and checks both exit 0 and that CHECK (a grep
# pattern) is in the client's output; the client's environment also gets client_env, the
# server's server_env.
# LINK: memif (two processes here), vhost (the server on vhost-user, the client on
# virtio-user) or veth (one per namespace, af_packet on a veth pair).
extra_cfg=""   # appended to both sides' configuration
pair() {
	local link=$1 name=$2 check=$3 scfg ccfg sock srv=() cli=() sns=() cns=()
	shift 3
	while [ "$1" != "--" ]; do srv+=("$1"); shift; done
	shift
	cli=("$@")
	n=$((n + 1))
	if [ "$link" = memif ]; then
		sock="$tmp/m$n.sock"
		scfg="port=net_memif0,role=server,socket=$sock,socket-abstract=no; ip=10.70.0.1/24; lcores=1; $common$extra_cfg"
		ccfg="port=net_memif0,role=client,socket=$sock,socket-abstract=no; ip=10.70.0.2/24; lcores=0; $common$extra_cfg"
	elif [ "$link" = vhost ]; then
		sock="$tmp/v$n.sock"
		scfg="port=net_vhost0,iface=$sock,queues=1; ip=10.70.0.1/24; lcores=1; $common"
		ccfg="port=net_virtio_user0,path=$sock,queues=1; ip=10.70.0.2/24; lcores=0; $common"
	else
		scfg="port=net_af_packet0,iface=uiwdi0; ip=10.70.0.1/24; lcores=1; $common"
		ccfg="port=net_af_packet0,iface=uiwdi1; ip=10.70.0.2/24; lcores=0; $common"
		sns=(ip netns exec "$ns_a")
		cns=(ip netns exec "$ns_b")
	fi
	rm -rf "$tmp/stat"
	"${sns[@]}" env LD_LIBRARY_PATH="$lib" UIWARP_CONFIG="$scfg" UIWARP_STAT_DIR="$tmp/stat" "${server_env[@]}" \
		timeout 60 stdbuf -oL "${srv[@]}" >"$tmp/server.log" 2>&1 &
	spid=$!
	if [ "$link" = memif ] || [ "$link" = vhost ]; then
		for _ in $(seq 100); do [ -S "$sock" ] && break; sleep 0.1; done
	fi
	wait_listener
	local t0=$SECONDS crc src
	"${cns[@]}" env LD_LIBRARY_PATH="$lib" UIWARP_CONFIG="$ccfg" "${client_env[@]}" timeout 60 \
		stdbuf -oL "${cli[@]}" >"$tmp/client.log" 2>&1
	crc=$?
	wait "$spid"
	src=$?
	spid=""
	if [ $crc -ne 0 ] || [ $src -ne 0 ] || ! grep -q -- "$check" "$tmp/client.log"; then
		bad "$link $name: client rc $crc, server rc $src"
		tail -15 "$tmp/client.log" | sed 's/^/  client: /'
		tail -15 "$tmp/server.log" | sed 's/^/  server: /'
		return
	fi
	echo "ok: $link $name ($((SECONDS - t0)) s)"
}

# Until the server (the one program in $tmp/stat) lists a listener, up to 10 s; without
# uiwarp-stat, a second.
wait_listener() {
	local p
	if [ -z "$stat_tool" ]; then
		sleep 1
		return
	fi
	for _ in $(seq 100); do
		for p in $(UIWARP_STAT_DIR="$tmp/stat" "$stat_tool" 2>/dev/null); do
			UIWARP_STAT_DIR="$tmp/stat" "$stat_tool" "$p" 2>/dev/null | grep -q "^listen " && return 0
		done
		sleep 0.1
	done
	echo "note: the server lists no listener after 10 s"
}

# rping: 100 pings with data validation; both sides print each one.
rping_pair() {
	local link=$1
	pair "$link" "rping -C 100 -V" "ping data: rdma-ping-99:" \
		rping -s -a 10.70.0.1 -C 100 -V -v -- rping -c -a 10.70.0.1 -C 100 -V -v
	if [ "$(grep -c "ping data: rdma-ping-" "$tmp/server.log")" -ne 100 ]; then
		bad "$link rping: the server saw $(grep -c "ping data" "$tmp/server.log") of 100 pings"
	fi
}

# perftest -R between the two: PROGRAM SIZE [options].
perf() {
	local link=$1 prog=$2 size=$3
	shift 3
	[ -z "$delay_so" ] || client_env=(LD_PRELOAD="$delay_so" UIW_CONNECT_DELAY_MS=300)
	pair "$link" "$prog -s $size" "^ *$size " "$prog" -R -s "$size" "$@" -- \
		"$prog" -R -s "$size" "$@" 10.70.0.1
	client_env=()
}

perftest_set() {
	local link=$1 sizes=$2
	for size in $sizes; do
		for prog in ib_send_bw ib_write_bw ib_read_bw; do
			perf "$link" "$prog" "$size" -n 200
		done
		# ib_write_lat waits on memory, so the stack runs on its progress thread (below).
		for prog in ib_send_lat ib_read_lat; do
			perf "$link" "$prog" "$size" -n 200
		done
		perf "$link" ib_write_lat "$size" -n 50
	done
}

rping_pair memif
# rping's completion thread takes every completion through ibv_get_cq_event(): served by
# its own passes (progress.cq_spin_hits), not by sleeping, except with cq_spin_us=0. Both
# programs wait on channels, so once both are cold (their first wait, the connection's,
# runs out) each round trip has two wake-ups in it: 20-100 us on the 2-core VM, where the
# default 20 us spin then served 0 or 1 of rping's 200 waits. The spin here is 1 ms, so
# that what is checked is that the spin serves the waits, not how fast a wake-up is.
client_env=(UIWARP_STATS=1)
extra_cfg="; cq_spin_us=1000"
rping_pair memif
extra_cfg=""
hits=$(awk '$1 == "progress.cq_spin_hits" { print $2 }' "$tmp/client.log")
if [ "${hits:-0}" -lt 50 ]; then
	bad "rping: ${hits:-no} completion waits served by the caller's spin"
else
	echo "ok: rping: $hits completion waits served by the caller's spin"
fi
extra_cfg="; cq_spin_us=0"
rping_pair memif
extra_cfg=""
hits=$(awk '$1 == "progress.cq_spin_hits" { print $2 }' "$tmp/client.log")
kicks=$(awk '$1 == "progress.kicks_wait" { print $2 }' "$tmp/client.log")
if [ "${hits:-1}" -ne 0 ] || [ "${kicks:-0}" -lt 50 ]; then
	bad "rping, cq_spin_us=0: ${hits:-no} waits served by a spin, ${kicks:-no} slept"
else
	echo "ok: rping, cq_spin_us=0: no spin, $kicks waits slept"
fi
client_env=()
pair memif ucmatose "test complete" ucmatose -b 10.70.0.1 -- ucmatose -s 10.70.0.1
# A thousand connections at once: the listen backlog, the ARP wait in rdma_resolve_addr
# and the CM's event delivery at scale.
pair memif ucmatose_1000 "test complete" ucmatose -b 10.70.0.1 -c 1000 -- ucmatose -s 10.70.0.1 -c 1000
perftest_set memif "2 4096 1048576"

# ib_write_lat waits on memory: one call a round trip (a post and a poll), then a spin on
# the buffer the peer's Write fills. The progress thread must see by the program thread's
# CPU clock that it runs without calling, serve it (progress.waiter_passes) and raise its
# own priority for it (progress.boosts); with progress_nice=0 it serves it without; with
# no CAP_SYS_NICE (a bounding set without it) the raise is refused, said once, and the run
# completes all the same.
# waiter_check NAME LEAST_BOOSTS MOST_BOOSTS: the client's counters of the last pair.
waiter_check() {
	local passes boosts
	passes=$(awk '$1 == "progress.waiter_passes" { print $2 }' "$tmp/client.log")
	boosts=$(awk '$1 == "progress.boosts" { print $2 }' "$tmp/client.log")
	if [ "${passes:-0}" -lt 1 ] || [ "${boosts:-0}" -lt "$2" ] || [ "${boosts:-0}" -gt "$3" ]; then
		bad "$1: ${passes:-no} passes for a program waiting on memory, ${boosts:-no} boosts"
	else
		echo "ok: $1: $passes passes for a program waiting on memory, $boosts boosts"
	fi
}
# The clients preload CONNECT_DELAY_SO as perf() has them (the race at the top).
client_env=(UIWARP_STATS=1)
[ -z "$delay_so" ] || client_env+=(LD_PRELOAD="$delay_so" UIW_CONNECT_DELAY_MS=300)
lat=(ib_write_lat -R -s 8 -n 500)
pair memif "ib_write_lat -n 500, served waiting on memory" "^ *8 " "${lat[@]}" -- "${lat[@]}" 10.70.0.1
waiter_check "ib_write_lat" 1 1000000
extra_cfg="; progress_nice=0"
pair memif "ib_write_lat -n 500, progress_nice=0" "^ *8 " "${lat[@]}" -- "${lat[@]}" 10.70.0.1
waiter_check "ib_write_lat, progress_nice=0" 0 0
extra_cfg=""
pair memif "ib_write_lat -n 500, no CAP_SYS_NICE" "^ *8 " "${lat[@]}" -- \
	setpriv --bounding-set -sys_nice --inh-caps -sys_nice "${lat[@]}" 10.70.0.1
waiter_check "ib_write_lat, no CAP_SYS_NICE" 0 0
said=$(grep -c "progress thread: nice -20 not permitted" "$tmp/client.log")
if [ "$said" -ne 1 ]; then
	bad "ib_write_lat, no CAP_SYS_NICE: the refused raise said $said times, not once"
else
	echo "ok: ib_write_lat, no CAP_SYS_NICE: the refused raise said once"
fi
client_env=()

# Two engines on each side (key 'engines', a memif queue pair each): the connections the
# client opens go to both in turn, and each lands on the same engine at the server.
extra_cfg="; engines=2"
client_env=(UIWARP_STATS=1)
pair memif "ucmatose -c 200, two engines" "test complete" ucmatose -b 10.70.0.1 -c 200 -- \
	ucmatose -s 10.70.0.1 -c 200
for e in 0 1; do
	opened=$(awk -v k="engine$e.conn_active" '$1 == k { print $2 }' "$tmp/client.log")
	if [ "${opened:-0}" -lt 50 ]; then
		bad "two engines: engine $e opened ${opened:-no} of 200 connections"
	else
		echo "ok: two engines: engine $e opened $opened of 200 connections"
	fi
done
# ucmatose waits for its CM events in blocking rdma_get_cm_event(): each such wait leaves
# the stack to the progress thread, counted (progress.kicks_wait).
kicks=$(awk '$1 == "progress.kicks_wait" { print $2 }' "$tmp/client.log")
if [ "${kicks:-0}" -lt 1 ]; then
	bad "ucmatose: its blocking waits are not counted (progress.kicks_wait ${kicks:-missing})"
else
	echo "ok: ucmatose: $kicks blocking waits left the stack to the progress thread"
fi
client_env=()
rping_pair memif
# Two QPs each: one on each engine; engine 1 runs on a thread of its own and must carry
# its QP's share of the 200 messages of 64 KiB (about 9,000 frames). Not ib_send_bw -q 2:
# perftest pairs its QPs by the order the server accepted them, and connect requests that
# arrive on two engines may be accepted in either order (docs/ENGINES.md); its Send credits
# then go to the wrong QP and both sides wait.
for prog in ib_write_bw ib_read_bw; do
	client_env=(UIWARP_STATS=1)
	pair memif "$prog -q 2, two engines" "^ *65536 " "$prog" -R -s 65536 -n 200 -q 2 -- \
		"$prog" -R -s 65536 -n 200 -q 2 10.70.0.1
	client_env=()
	frames=$(awk '$1 == "engine1.tx_packets" || $1 == "engine1.rx_packets" { n += $2 } END { print n + 0 }' "$tmp/client.log")
	passes=$(awk '$1 == "engine1.thread_passes" { print $2 }' "$tmp/client.log")
	if [ "$frames" -lt 2000 ] || [ "${passes:-0}" -eq 0 ]; then
		bad "$prog -q 2: engine 1 moved $frames frames in ${passes:-no} passes of its thread"
	else
		echo "ok: $prog -q 2: engine 1 moved $frames frames in $passes passes of its thread"
	fi
done
# Sends on engine 1 (perftest's QP connection is its second), in bulk and as a ping-pong:
# with more spinning threads than cores here, the program's polls make the passes its
# thread waits to make.
perf memif ib_send_bw 65536 -n 200
perf memif ib_send_lat 8 -n 2000
extra_cfg=""

# vhost-user (the server) and virtio-user (the client): both PMDs let TCP build a frame
# over the buffer of the FPDU it carries, so the counters of both sides must show frames
# sent that way (tcp.tx_over). rping -S 60000 -V moves 60,000 octets each way per ping
# (the server's RDMA Read of the client's buffer, its RDMA Write back) and checks them.
# sent_over NAME SIDE LEAST: SIDE's (client or server) UIWARP_STATS report in the last
# pair must count at least LEAST frames built over their FPDUs (tcp.tx_over).
sent_over() {
	local over
	over=$(awk '$1 == "tcp.tx_over" { n = $2 } END { print n + 0 }' "$tmp/$2.log")
	if [ "$over" -lt "$3" ]; then
		bad "vhost $1: the $2 sent $over frames over their FPDUs"
	else
		echo "ok: vhost $1: the $2 sent $over frames over their FPDUs"
	fi
}
rping_pair vhost
client_env=(UIWARP_STATS=1) server_env=(UIWARP_STATS=1)
pair vhost "rping -S 60000 -C 50 -V" "ping data: rdma-ping-49:" \
	rping -s -a 10.70.0.1 -S 60000 -C 50 -V -v -- rping -c -a 10.70.0.1 -S 60000 -C 50 -V -v
sent_over "rping -S 60000" client 1000
sent_over "rping -S 60000" server 1000
server_env=()
# perftest's 64 KiB bandwidth tests: the client sends the Writes and the Sends, the server
# the Read Responses.
for prog in ib_write_bw ib_send_bw ib_read_bw; do
	client_env=(UIWARP_STATS=1)
	[ -z "$delay_so" ] || client_env+=(LD_PRELOAD="$delay_so" UIW_CONNECT_DELAY_MS=300)
	server_env=(UIWARP_STATS=1)
	pair vhost "$prog -s 65536" "^ *65536 " "$prog" -R -s 65536 -n 500 -- \
		"$prog" -R -s 65536 -n 500 10.70.0.1
	side=client
	[ "$prog" != ib_read_bw ] || side=server
	sent_over "$prog" "$side" 10000
done
client_env=() server_env=()

# The same over a veth pair between two namespaces (af_packet), when we may make them.
if [ "$(id -u)" -eq 0 ] && ip netns add "$ns_a" 2>/dev/null && ip netns add "$ns_b"; then
	ip link add uiwdi0 netns "$ns_a" type veth peer name uiwdi1 netns "$ns_b"
	ip -n "$ns_a" link set uiwdi0 up
	ip -n "$ns_b" link set uiwdi1 up
	# glibc's resolver (AI_ADDRCONFIG) answers nothing in a namespace with no address up;
	# rping resolves its -a argument that way.
	ip -n "$ns_a" link set lo up
	ip -n "$ns_b" link set lo up
	rping_pair veth
	pair veth ucmatose "test complete" ucmatose -b 10.70.0.1 -- ucmatose -s 10.70.0.1
	perftest_set veth "65536"
else
	echo "note: veth cases skipped (needs root and network namespaces)"
fi
[ $fail -eq 0 ] && echo "all $n program pairs passed" || exit 1
