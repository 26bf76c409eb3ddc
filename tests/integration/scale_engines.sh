#!/usr/bin/env bash
# Two engines a side between two processes (key 'engines', docs/ENGINES.md), on each PMD
# that carries queue q to the peer's queue q: vhost-user/virtio-user with two queue pairs,
# and memif with two. uiwarp-scale opens 400 QPs, checks every one with a Write, a Send
# each way and a Read (every byte compared), drives them, and disconnects them. Each side
# must hold connections on both engines: the client's opened from each engine's share of
# ports, the server's arriving on each queue.
# usage: scale_engines.sh UIWARP_SCALE
set -u
scale=${1:?usage: scale_engines.sh UIWARP_SCALE}
tmp=$(mktemp -d /tmp/uiw-se.XXXXXX)
spid=
cleanup() {
	[ -n "$spid" ] && kill -TERM "$spid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
common="hugepages=off; memory=512; mbufs=32767; engines=2"
failed=0

# run NAME SERVER_PORT CLIENT_PORT SOCKET
run() {
	local name=$1 sport=$2 cport=$3 sock=$4 rc
	"$scale" --set "port=$sport; ip=10.72.0.1/24; lcores=1; $common" --listen 18517 --qps 400 \
		>"$tmp/$name-server.log" 2>&1 &
	spid=$!
	for _ in $(seq 100); do [ -S "$sock" ] && break; sleep 0.1; done
	sleep 0.2
	timeout 120 "$scale" --set "port=$cport; ip=10.72.0.2/24; lcores=0; $common" \
		--connect 10.72.0.1:18517 --qps 400 --bw-iters 2000 --rate-iters 20000 \
		>"$tmp/$name-client.log" 2>&1
	rc=$?
	sleep 0.2
	kill -TERM "$spid" 2>/dev/null
	wait "$spid" 2>/dev/null
	spid=
	local c s
	c=$(grep "^engines of A: connections" "$tmp/$name-client.log")
	s=$(grep "^engines of the server: connections" "$tmp/$name-server.log")
	if [ "$rc" -eq 0 ] && grep -q "^PASS" "$tmp/$name-client.log" &&
		grep -q "^check: 400 of 400 QPs passed" "$tmp/$name-client.log" &&
		[[ "$c" =~ connections\ ([1-9][0-9]*)\ ([1-9][0-9]*)$ ]] &&
		[[ "$s" =~ connections\ ([1-9][0-9]*)\ ([1-9][0-9]*)$ ]]; then
		echo "ok: $name: 400 QPs checked; client ${c#engines of A: }; server ${s#engines of the server: }"
	else
		echo "FAIL: $name (client rc $rc)"
		tail -20 "$tmp/$name-server.log" "$tmp/$name-client.log"
		failed=$((failed + 1))
	fi
}

run vhost "net_vhost0,iface=$tmp/vp.sock,queues=2" "net_virtio_user0,path=$tmp/vp.sock,queues=2" \
	"$tmp/vp.sock"
run memif "net_memif0,role=server,socket=$tmp/m.sock,socket-abstract=no" \
	"net_memif0,role=client,socket=$tmp/m.sock,socket-abstract=no" "$tmp/m.sock"
exit $((failed > 0))
