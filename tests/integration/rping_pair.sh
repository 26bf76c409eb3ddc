#!/usr/bin/env bash
# uiwarp-rping, rping's ping-pong over the verbs API: two instances in one process, then a
# server and a client process over vhost-user/virtio-user. Each iteration is an RDMA Read
# of the client's buffer and an RDMA Write back, checked byte for byte by the client.
# usage: rping_pair.sh UIWARP_RPING
set -u
rping=$1
tmp=$(mktemp -d /tmp/uiw-rping.XXXXXX)
spid=
cleanup() {
	[ -n "$spid" ] && kill -TERM "$spid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
common="hugepages=off; memory=128; mbufs=4095"
fail=0
out=$("$rping" --pair -C 100 -S 1000 2>&1)
if grep -q "client: 100 of 100 iterations verified" <<<"$out"; then
	echo "ok: pair: 100 of 100 iterations verified"
else
	echo "FAIL: pair"; tail -5 <<<"$out"; fail=1
fi
"$rping" --set "port=net_vhost0,iface=$tmp/v.sock,queues=1; ip=10.67.0.1/24; lcores=0; $common" \
	-s -p 7174 -S 4096 >"$tmp/server.log" 2>&1 &
spid=$!
sleep 0.5
if timeout 60 "$rping" --set "port=net_virtio_user0,path=$tmp/v.sock,queues=1; ip=10.67.0.2/24; lcores=1; $common" \
	-c -a 10.67.0.1 -p 7174 -C 100 -S 4096 >"$tmp/client.log" 2>&1 &&
	grep -q "client: 100 of 100 iterations verified" "$tmp/client.log"; then
	echo "ok: two processes over vhost-user: 100 of 100 iterations verified"
else
	echo "FAIL: two processes over vhost-user"; cat "$tmp/client.log" "$tmp/server.log"; fail=1
fi
wait "$spid" 2>/dev/null
spid=
[ $fail -eq 0 ] && echo PASS || exit 1
