#!/usr/bin/env bash
# Kernel peer: Linux pings uiwarp (and uiwarp pings Linux) across a veth pair whose ends
# live in two network namespaces this test creates; uiwarp drives its end through
# net_af_packet. Checks: 20 of 20 kernel pings answered, the kernel's neighbour table holds
# uiwarp's MAC, uiwarp's own 5 pings answered. Exit 77 (skip) when namespaces cannot be made.
#
# usage: kernel_ping.sh UIWARP_HOST_BINARY
set -u
host=${1:?usage: kernel_ping.sh UIWARP_HOST_BINARY}
skip() { echo "SKIP: $*"; exit 77; }

[ "$(id -u)" -eq 0 ] || skip "needs root to create network namespaces"
for tool in ip ping; do command -v "$tool" >/dev/null || skip "$tool not installed (iproute2, iputils-ping)"; done

ns_k="uiw-k-$$" ns_s="uiw-s-$$"
tmp=$(mktemp -d /tmp/uiw-kping.XXXXXX)
pid=""
cleanup() {
	if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then kill -TERM "$pid"; sleep 0.5; kill -KILL "$pid" 2>/dev/null; fi
	ip netns del "$ns_k" 2>/dev/null
	ip netns del "$ns_s" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT

ip netns add "$ns_k" 2>"$tmp/err" || skip "cannot create a network namespace: $(cat "$tmp/err")"
ip netns add "$ns_s" || skip "cannot create a second network namespace"
# Both veth ends are created inside our namespaces, never in the caller's.
ip netns exec "$ns_k" ip link add vk type veth peer name vs netns "$ns_s" || skip "cannot create a veth pair"
ip -n "$ns_k" addr add 10.77.9.1/24 dev vk
ip -n "$ns_k" link set lo up
ip -n "$ns_k" link set vk up
ip -n "$ns_s" link set vs up

ip netns exec "$ns_s" "$host" \
	--set "port=net_af_packet0,iface=vs,qdisc_bypass=1; ip=10.77.9.2/24; hugepages=off; memory=128; mbufs=4095" \
	--ready-file "$tmp/ready" --ping 10.77.9.1 --count 5 --interval 100 --duration 120 \
	>"$tmp/host.log" 2>&1 &
pid=$!
for _ in $(seq 1 300); do
	[ -e "$tmp/ready" ] && break
	kill -0 "$pid" 2>/dev/null || { cat "$tmp/host.log"; echo "FAIL: uiwarp-host exited early"; exit 1; }
	sleep 0.1
done
[ -e "$tmp/ready" ] || { cat "$tmp/host.log"; echo "FAIL: uiwarp-host not up after 30 s"; exit 1; }

rc=0
ip netns exec "$ns_k" ping -c 20 -i 0.05 -W 2 10.77.9.2 >"$tmp/ping.log" 2>&1
cat "$tmp/ping.log"
grep -q "20 packets transmitted, 20 received" "$tmp/ping.log" || { echo "FAIL: kernel ping lost replies"; rc=1; }

mac=$(sed -n 's/.*MAC \([0-9A-Fa-f:]\{17\}\).*/\1/p' "$tmp/host.log" | head -1 | tr 'A-F' 'a-f')
neigh=$(ip -n "$ns_k" neigh show 10.77.9.2 dev vk)
echo "kernel neighbour entry: $neigh (uiwarp MAC $mac)"
case "$neigh" in
	*"lladdr $mac "*) ;;
	*) echo "FAIL: kernel neighbour table does not hold uiwarp's MAC"; rc=1 ;;
esac

sleep 0.3
kill -TERM "$pid"
wait "$pid"
host_rc=$?
pid=""
cat "$tmp/host.log"
grep -q "ping: 5 sent, 5 replies" "$tmp/host.log" || { echo "FAIL: uiwarp's pings to Linux not all answered"; rc=1; }
[ "$host_rc" -eq 0 ] || { echo "FAIL: uiwarp-host exited $host_rc"; rc=1; }
[ "$rc" -eq 0 ] && echo "PASS"
exit "$rc"
