#!/usr/bin/env bash
# Port bring-up on the PMDs that link processes on this machine, each with ARP and ping
# across it: two uiwarp processes over memif, two over vhost-user/virtio-user, and Linux
# pinging uiwarp over a tap device (inside a network namespace this test creates).
# Then a SHA-256-checked TCP stream between two processes over vhost-user, where the
# virtio side hands TCP checksums to the PMD and the vhost side receives them unfilled,
# the same with TSO (frames of many segments, received whole),
# and jumbo frames (MTU 9000, MSS 8948) over memif and both ways between vhost-user and
# virtio-user (which receives them in chained buffers). The tap port is asked for MTU 9000 too, which
# the tap PMD refuses: it must fall back to the PMD's MTU and still answer.
# The tap part is skipped without root; the rest needs nothing but this machine.
#
# usage: pmd_pairs.sh UIWARP_HOST_BINARY UIWARP_TCPPERF_BINARY
set -u
host=${1:?usage: pmd_pairs.sh UIWARP_HOST_BINARY UIWARP_TCPPERF_BINARY}
tcpperf=${2:?usage: pmd_pairs.sh UIWARP_HOST_BINARY UIWARP_TCPPERF_BINARY}
tmp=$(mktemp -d /tmp/uiw-pmd.XXXXXX)
ns="uiw-tap-$$"
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null; done
	sleep 0.3
	for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
	ip netns del "$ns" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
common="hugepages=off; memory=128; mbufs=2047"
passed=0 failed=0

# pair NAME SERVER_PORT CLIENT_PORT: the server answers, the client pings it 10 times.
pair() {
	local name=$1 sport=$2 cport=$3 spid rc
	"$host" --set "port=$sport; ip=10.66.0.1/24; lcores=0; $common" --duration 60 \
		>"$tmp/$name-server.log" 2>&1 &
	spid=$!
	pids+=("$spid")
	sleep 0.5
	"$host" --set "port=$cport; ip=10.66.0.2/24; lcores=1; $common" \
		--ping 10.66.0.1 --count 10 --interval 50 --idle-exit 500 --duration 30 \
		>"$tmp/$name-client.log" 2>&1
	rc=$?
	# The server polls on while its peer leaves (memif: the peer's disconnect unmaps the
	# rings under a burst unless the port's control gate holds it off), then stops.
	sleep 0.5
	kill -TERM "$spid" 2>/dev/null
	wait "$spid"
	src=$?
	if [ "$rc" -eq 0 ] && [ "$src" -eq 0 ] && grep -q "ping: 10 sent, 10 replies" "$tmp/$name-client.log" &&
		grep -q "icmp_echo_answered *10 " "$tmp/$name-server.log"; then
		echo "ok: $name: 10 of 10 echoes answered, the server outlived its peer"
		passed=$((passed + 1))
	else
		echo "FAIL: $name"
		cat "$tmp/$name-server.log" "$tmp/$name-client.log"
		failed=$((failed + 1))
	fi
}

pair memif "net_memif0,role=server,socket=$tmp/memif.sock,socket-abstract=no" \
	"net_memif0,role=client,socket=$tmp/memif.sock,socket-abstract=no"
# memif peers coming and going: one server, 20 clients in turn (each pings 3 times and
# exits while the server polls). Each exit unmaps the server's rings from its interrupt
# thread; the server must answer every client and exit cleanly at the end.
"$host" --set "port=net_memif0,role=server,socket=$tmp/churn.sock,socket-abstract=no; ip=10.66.0.1/24; lcores=0; $common" \
	--duration 120 >"$tmp/churn-server.log" 2>&1 &
cpid=$!
pids+=("$cpid")
sleep 0.5
churn_ok=0
for i in $(seq 20); do
	kill -0 "$cpid" 2>/dev/null || break
	"$host" --set "port=net_memif0,role=client,socket=$tmp/churn.sock,socket-abstract=no; ip=10.66.0.2/24; lcores=1; $common" \
		--ping 10.66.0.1 --count 3 --interval 10 --idle-exit 100 --duration 10 \
		>"$tmp/churn-client.log" 2>&1 && grep -q "ping: 3 sent, 3 replies" "$tmp/churn-client.log" &&
		churn_ok=$((churn_ok + 1))
done
sleep 0.3
kill -TERM "$cpid" 2>/dev/null
wait "$cpid"
src=$?
if [ "$churn_ok" -eq 20 ] && [ "$src" -eq 0 ]; then
	echo "ok: memif: 20 clients in turn answered, the server outlived them all"
	passed=$((passed + 1))
else
	echo "FAIL: memif churn: $churn_ok of 20 clients answered, server rc $src"
	tail -n 20 "$tmp/churn-server.log"
	failed=$((failed + 1))
fi
pair vhost-virtio "net_vhost0,iface=$tmp/vhost.sock,queues=1" \
	"net_virtio_user0,path=$tmp/vhost.sock,queues=1"

# vstream NAME SOCK NET VHOST_ARGS CONFIG: 50 MB from virtio-user to vhost-user (the vhost
# devargs and the configuration of both given), counters printed; sets $sent and $got to
# the "bytes sha256" each end reported.
vstream() {
	local name=$1 sock=$2 net=$3 vargs=$4 conf=$5
	UIWARP_STATS=1 "$tcpperf" --set "port=net_vhost0,iface=$sock,queues=1$vargs; ip=$net.1/24; lcores=1; $common$conf" \
		--listen 5001 --recv --exit-after 1 --duration 60 >"$tmp/$name-server.log" 2>&1 &
	tspid=$!
	pids+=("$tspid")
	sleep 0.5
	UIWARP_STATS=1 "$tcpperf" --set "port=net_virtio_user0,path=$sock,queues=1; ip=$net.2/24; lcores=0; $common$conf" \
		--connect "$net.1:5001" --send 50000000 --duration 60 >"$tmp/$name-client.log" 2>&1
	wait "$tspid"
	sent=$(sed -n 's/^conn 0: sent \([0-9]*\) bytes sha256 \([0-9a-f]*\)$/\1 \2/p' "$tmp/$name-client.log")
	got=$(sed -n 's/^conn 0: received \([0-9]*\) bytes sha256 \([0-9a-f]*\)$/\1 \2/p' "$tmp/$name-server.log")
}

vstream tcp "$tmp/tcp.sock" 10.66.1 "" ""
if [ -n "$sent" ] && [ "$sent" = "$got" ]; then
	echo "ok: TCP over vhost-user: 50 MB, SHA-256 equal at both ends"
	passed=$((passed + 1))
else
	echo "FAIL: TCP over vhost-user"
	cat "$tmp/tcp-client.log" "$tmp/tcp-server.log"
	failed=$((failed + 1))
fi

# TSO: the virtio side hands TCP frames of many segments to its PMD (the vhost side, given
# tso=1, offers it), the vhost side receives them whole (large receive). 50 MB, SHA-256
# equal, and the counters say both happened.
vstream tso "$tmp/tso.sock" 10.66.3 ",tso=1" "; tso=1"
tso_frames=$(sed -n 's/^ *tcp.tx_tso_frames *\([0-9]*\) .*/\1/p' "$tmp/tso-client.log")
large=$(sed -n 's/^ *tcp.rx_large *\([0-9]*\) .*/\1/p' "$tmp/tso-server.log")
if [ -n "$sent" ] && [ "$sent" = "$got" ] && [ "${tso_frames:-0}" -gt 0 ] && [ "${large:-0}" -gt 0 ]; then
	echo "ok: TSO over virtio-user to vhost-user: 50 MB, SHA-256 equal, $tso_frames TSO frames sent, $large received whole"
	passed=$((passed + 1))
else
	echo "FAIL: TSO over virtio-user to vhost-user (TSO frames ${tso_frames:-none}, large ${large:-none})"
	cat "$tmp/tso-client.log" "$tmp/tso-server.log"
	failed=$((failed + 1))
fi

# stream NAME SERVER_PORT CLIENT_PORT WORK: 20 MB at MTU 9000 from the side that sends
# (WORK says which), SHA-256 equal at both ends, both ends at the jumbo MSS.
stream() {
	local name=$1 sport=$2 cport=$3 work=$4 swork cwork sent got
	[ "$work" = server-sends ] && swork="--send 20000000" cwork="--recv" || swork="--recv" cwork="--send 20000000"
	# shellcheck disable=SC2086
	"$tcpperf" --set "port=$sport; ip=10.66.2.1/24; lcores=1; $common; mtu=9000; mbufs=8191; memory=256" \
		--listen 5001 $swork --exit-after 1 --duration 60 >"$tmp/$name-server.log" 2>&1 &
	tspid=$!
	pids+=("$tspid")
	sleep 0.5
	# shellcheck disable=SC2086
	"$tcpperf" --set "port=$cport; ip=10.66.2.2/24; lcores=0; $common; mtu=9000; mbufs=8191; memory=256" \
		--connect 10.66.2.1:5001 $cwork --linger 300 --duration 60 >"$tmp/$name-client.log" 2>&1
	wait "$tspid"
	sent=$(cat "$tmp/$name-server.log" "$tmp/$name-client.log" | sed -n 's/^conn 0: sent \([0-9]*\) bytes sha256 \([0-9a-f]*\)$/\1 \2/p')
	got=$(cat "$tmp/$name-server.log" "$tmp/$name-client.log" | sed -n 's/^conn 0: received \([0-9]*\) bytes sha256 \([0-9a-f]*\)$/\1 \2/p')
	if [ -n "$sent" ] && [ "$sent" = "$got" ] && [ "$(grep -c '^conn 0: mss 8948$' "$tmp/$name-server.log" "$tmp/$name-client.log" | grep -c ':1$')" -eq 2 ] &&
		! grep -q 'MTU vs Rx scatter' "$tmp/$name-server.log" "$tmp/$name-client.log"; then
		echo "ok: $name: 20 MB at MTU 9000 (MSS 8948 both ends), SHA-256 equal"
		passed=$((passed + 1))
	else
		echo "FAIL: $name"
		cat "$tmp/$name-server.log" "$tmp/$name-client.log"
		failed=$((failed + 1))
	fi
}
stream "jumbo memif" "net_memif0,role=server,socket=$tmp/jm.sock,socket-abstract=no" \
	"net_memif0,role=client,socket=$tmp/jm.sock,socket-abstract=no" client-sends
stream "jumbo vhost-user to virtio-user" "net_vhost0,iface=$tmp/jv.sock,queues=1" \
	"net_virtio_user0,path=$tmp/jv.sock,queues=1" server-sends
stream "jumbo virtio-user to vhost-user" "net_vhost0,iface=$tmp/jw.sock,queues=1" \
	"net_virtio_user0,path=$tmp/jw.sock,queues=1" client-sends

if [ "$(id -u)" -eq 0 ] && ip netns add "$ns" 2>/dev/null; then
	ip netns exec "$ns" "$host" --set "port=net_tap0,iface=uiwtap0; ip=10.67.0.2/24; $common; mtu=9000" \
		--ready-file "$tmp/tap.ready" --duration 60 >"$tmp/tap.log" 2>&1 &
	tpid=$!
	pids+=("$tpid")
	for _ in $(seq 1 300); do [ -e "$tmp/tap.ready" ] && break; sleep 0.1; done
	ip -n "$ns" addr add 10.67.0.1/24 dev uiwtap0 && ip -n "$ns" link set uiwtap0 up &&
		ip netns exec "$ns" ping -c 10 -i 0.05 -W 2 10.67.0.2 >"$tmp/tap-ping.log" 2>&1
	kill -TERM "$tpid"
	wait "$tpid"
	if grep -q "10 packets transmitted, 10 received" "$tmp/tap-ping.log" &&
		grep -q "the PMD refused MTU 9000 .*: using its MTU, 1500" "$tmp/tap.log"; then
		echo "ok: tap: MTU 9000 refused, the PMD's 1500 used; Linux's 10 pings answered"
		passed=$((passed + 1))
	else
		echo "FAIL: tap"
		cat "$tmp/tap.log" "$tmp/tap-ping.log"
		failed=$((failed + 1))
	fi
else
	echo "skipped: tap (needs root and network namespaces)"
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
