#!/usr/bin/env bash
# Two engines a side between two processes (key 'engines', docs/ENGINES.md). uiwarp-scale
# opens 400 QPs, checks every one with a Write, a Send each way and a Read (every byte
# compared), drives them, and disconnects them. Each side must hold connections on both
# engines (a hash of the 4-tuple names a connection's engine, at both ends alike). Engine 1
# runs on a thread of its own in each process, as in the drop-in (engine1.thread_passes).
# - vhost-user/virtio-user and memif, two queue pairs each, carry queue q to the peer's
#   queue q: every segment comes in on its engine's queue, none is handed over.
# - af_packet on a veth pair (in a network namespace this test creates) spreads frames
#   over its two sockets by the kernel's own flow hash: segments that come in on the
#   other engine's queue must be handed to their engine, at both ends.
# usage: scale_engines.sh UIWARP_SCALE
set -u
scale=${1:?usage: scale_engines.sh UIWARP_SCALE}
tmp=$(mktemp -d /tmp/uiw-se.XXXXXX)
ns="uiw-se-$$"
spid=
cleanup() {
	[ -n "$spid" ] && kill -TERM "$spid" 2>/dev/null
	ip netns del "$ns" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
common="hugepages=off; memory=512; mbufs=32767; engines=2"
failed=0

# run NAME SERVER_PORT CLIENT_PORT HANDED(yes|no) [COMMAND PREFIX...]
run() {
	local name=$1 sport=$2 cport=$3 handed=$4 rc
	shift 4
	# The server does not wait for its link: it sets up its stack and its 400 QPs' memory,
	# then makes passes. The client starts once it says it listens. A client started as
	# soon as the server's port was up asked for the server's MAC as soon as its own set-up
	# ended; the server, its set-up not yet over, made no pass, and when it ran 2 s longer
	# than the client's (about 8 s each under meson's MALLOC_PERTURB_) the ARP requests
	# went unanswered for the 2 s the address resolution waits (RDMA_CM_EVENT_ADDR_ERROR,
	# -ETIMEDOUT).
	"$@" "$scale" --set "port=$sport; ip=10.72.0.1/24; lcores=1; $common" --listen 18517 --qps 400 \
		--link-wait 0 >"$tmp/$name-server.log" 2>&1 &
	spid=$!
	for _ in $(seq 600); do
		grep -q "^uiwarp-scale: listening on port" "$tmp/$name-server.log" && break
		kill -0 "$spid" 2>/dev/null || break
		sleep 0.1
	done
	UIWARP_STATS=1 timeout 120 "$@" "$scale" --set "port=$cport; ip=10.72.0.2/24; lcores=0; $common" \
		--connect 10.72.0.1:18517 --qps 400 --bw-iters 2000 --rate-iters 20000 \
		>"$tmp/$name-client.log" 2>&1
	rc=$?
	sleep 0.2
	kill -TERM "$spid" 2>/dev/null
	wait "$spid" 2>/dev/null
	spid=
	local c s out in hand_ok=1
	c=$(grep "^engines of A: connections" "$tmp/$name-client.log")
	s=$(grep "^engines of the server: connections" "$tmp/$name-server.log")
	out=$(awk '$1 == "net.hand_out" { print $2 }' "$tmp/$name-client.log")
	in=$(awk '$1 == "net.hand_in" { print $2 }' "$tmp/$name-client.log")
	if [ "$handed" = yes ]; then
		[ "${out:-0}" -gt 0 ] && [ "${in:-0}" -gt 0 ] || hand_ok=0
	else
		[ -z "$out" ] && [ -z "$in" ] || hand_ok=0
	fi
	if [ "$rc" -eq 0 ] && [ "$hand_ok" -eq 1 ] && grep -q "^PASS" "$tmp/$name-client.log" &&
		grep -q "^check: 400 of 400 QPs passed" "$tmp/$name-client.log" &&
		grep -q "^uiwarp-scale: engines 1..1 on threads of their own" "$tmp/$name-client.log" &&
		grep -q "^uiwarp-scale: engines 1..1 on threads of their own" "$tmp/$name-server.log" &&
		[ "$(awk '$1 == "engine1.thread_passes" { print $2 }' "$tmp/$name-client.log")" -gt 0 ] &&
		[[ "$c" =~ connections\ ([1-9][0-9]*)\ ([1-9][0-9]*)$ ]] &&
		[[ "$s" =~ connections\ ([1-9][0-9]*)\ ([1-9][0-9]*)$ ]]; then
		echo "ok: $name: 400 QPs checked; client ${c#engines of A: }; server ${s#engines of the server: }; client segments handed ${out:-0}; client engine 1: $(awk '$1 == "engine1.thread_passes" { t = $2 } $1 == "engine1.borrowed_passes" { b = $2 } END { print t " passes on its thread, " b " borrowed" }' "$tmp/$name-client.log")"
	else
		echo "FAIL: $name (client rc $rc; client segments handed out ${out:-0}, in ${in:-0}; expected: $handed)"
		tail -n 20 "$tmp/$name-server.log" "$tmp/$name-client.log"
		failed=$((failed + 1))
	fi
}

run vhost "net_vhost0,iface=$tmp/vp.sock,queues=2" "net_virtio_user0,path=$tmp/vp.sock,queues=2" no
run memif "net_memif0,role=server,socket=$tmp/m.sock,socket-abstract=no" \
	"net_memif0,role=client,socket=$tmp/m.sock,socket-abstract=no" no
if ip netns add "$ns" && ip -n "$ns" link add va type veth peer name vb &&
	ip -n "$ns" link set va up && ip -n "$ns" link set vb up; then
	run af_packet "net_af_packet0,iface=va,qpairs=2" "net_af_packet1,iface=vb,qpairs=2" yes \
		ip netns exec "$ns"
else
	echo "FAIL: af_packet: cannot make the network namespace $ns and its veth pair"
	failed=$((failed + 1))
fi
exit $((failed > 0))
