#!/usr/bin/env bash
# rsockets on the drop-in libraries, two processes over memif, each program unmodified:
# - rstream (rdmacm-utils), data verified (-T v): poll-driven over its whole series of
#   latency and bandwidth tests (64 B to 1 MiB), then blocking and non-blocking custom runs;
# - iperf3 on librspreload.so (librdmacm1), both directions: the kernel's socket calls
#   become rsockets. Each side runs in a network namespace of its own with no interface up,
#   so a socket that fell back to the kernel's TCP could reach nothing;
# - a Python socket program on librspreload.so, its data hashed at both ends both ways;
# - netcat-openbsd's nc as a client on librspreload.so, 3 MB from a file hashed by the
#   server; then nc -l as the server, which accepts with accept4(): rdma-core 44's
#   librspreload.so does not intercept it, libuiw_rsaccept4.so preloaded beside it does
#   (without it nc -l fails with ENOTSOCK);
# - a peer that is no rsocket (rping's connection request has no rsocket connection data)
#   is rejected with a log line, and the same listener then serves an rstream client;
# - a datagram rsocket is refused at once (ENOTSUP), saying why;
# - uiwarp-stat lists each rsocket of a running program: the listener, and the connected
#   ones with their credits and buffer room.
# usage: rsockets.sh DROPIN_DIR (or a library in it) UIWARP_STAT
set -u
lib=${1:?usage: rsockets.sh DROPIN_DIR UIWARP_STAT}
stat_bin=$(readlink -f "${2:?usage: rsockets.sh DROPIN_DIR UIWARP_STAT}")
[ -d "$lib" ] || lib=$(dirname "$lib")
lib=$(cd "$lib" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
preload=$(ls /usr/lib/x86_64-linux-gnu/rsocket/librspreload.so 2>/dev/null)
for t in rstream iperf3 rping nc.openbsd; do
	command -v "$t" >/dev/null || { echo "FAIL: $t not installed (scripts/install-deps.sh)"; exit 1; }
done
[ -n "$preload" ] || { echo "FAIL: librspreload.so not installed (librdmacm1)"; exit 1; }
tmp=$(mktemp -d /tmp/uiw-rs.XXXXXX)
ns_s="uiw-rs-s-$$" ns_c="uiw-rs-c-$$"
spid="" wpid=""
cleanup() {
	[ -n "$spid" ] && kill "$spid" 2>/dev/null
	[ -n "$wpid" ] && kill "$wpid" 2>/dev/null
	ip netns del "$ns_s" 2>/dev/null
	ip netns del "$ns_c" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
ip netns add "$ns_s" && ip netns add "$ns_c" || { echo "FAIL: cannot make network namespaces"; exit 1; }
common="hugepages=off; memory=512"
fail=0
bad() { echo "FAIL: $*"; fail=1; }
srv() {
	local sock=$1
	shift
	ip netns exec "$ns_s" env LD_LIBRARY_PATH="$lib" UIWARP_STAT_DIR="$tmp/stat" \
		UIWARP_CONFIG="port=net_memif0,role=server,socket=$sock,socket-abstract=no; ip=10.73.0.1/24; lcores=1; $common" "$@"
}
cli() {
	local sock=$1
	shift
	ip netns exec "$ns_c" env LD_LIBRARY_PATH="$lib" UIWARP_STAT_DIR="$tmp/stat" \
		UIWARP_CONFIG="port=net_memif0,role=client,socket=$sock,socket-abstract=no; ip=10.73.0.2/24; lcores=0; $common" "$@"
}
# pair NAME SERVER... -- CLIENT...: both over memif; exit statuses in $src and $rc, output
# in $tmp/NAME.s and $tmp/NAME.c.
pair() {
	local name=$1 sock="$tmp/$1.sock" s=()
	shift
	while [ "$1" != "--" ]; do s+=("$1"); shift; done
	shift
	srv "$sock" timeout -k 5 90 "${s[@]}" >"$tmp/$name.s" 2>&1 &
	spid=$!
	for _ in $(seq 100); do [ -S "$sock" ] && break; sleep 0.1; done
	cli "$sock" timeout -k 5 90 "$@" >"$tmp/$name.c" 2>&1
	rc=$?
	wait "$spid"
	src=$?
	spid=""
}
# rows FILE: the result rows rstream printed.
rows() { grep -cE '^[0-9a-z_]+ +[0-9.]+[kmg]? +[0-9]' "$1"; }

pair async rstream -b 10.73.0.1 -T a -T v -- rstream -s 10.73.0.1 -T a -T v
if [ $rc -eq 0 ] && [ $src -eq 0 ] && [ "$(rows "$tmp/async.c")" = 8 ] && [ "$(rows "$tmp/async.s")" = 8 ] &&
	! grep -q "verification failed" "$tmp/async.c" "$tmp/async.s"; then
	echo "ok: rstream -T a -T v (poll): every test at both ends, data verified:"
	grep -E '^(64|64k|1m)_(lat|bw)' "$tmp/async.s" | sed 's/^/    /'
else
	bad "rstream -T a -T v: rc $rc/$src"; tail -n 12 "$tmp/async.s" "$tmp/async.c"
fi

for mode in b n; do
	size=65536 count=100
	[ $mode = n ] && size=100 count=1000
	pair "mode$mode" rstream -b 10.73.0.1 -T $mode -T v -S $size -C $count -I 10 -- \
		rstream -s 10.73.0.1 -T $mode -T v -S $size -C $count -I 10
	if [ $rc -eq 0 ] && [ $src -eq 0 ] && [ "$(rows "$tmp/mode$mode.c")" = 1 ] &&
		[ "$(rows "$tmp/mode$mode.s")" = 1 ]; then
		echo "ok: rstream -T $mode -T v, $size B x $count x 10 each way: $(grep '^custom' "$tmp/mode$mode.c")"
	else
		bad "rstream -T $mode: rc $rc/$src"; tail -n 6 "$tmp/mode$mode.s" "$tmp/mode$mode.c"
	fi
done

# iperf3 on librspreload.so: the socket calls are rsockets, or they find no network.
for dir in "" "-R"; do
	pair "iperf$dir" env LD_PRELOAD="$preload" iperf3 -s -1 -B 10.73.0.1 -p 5201 -- \
		env LD_PRELOAD="$preload" iperf3 -c 10.73.0.1 -p 5201 -t 2 $dir
	line=$(grep -E ' receiver$' "$tmp/iperf$dir.c" | tail -1)
	if [ $rc -eq 0 ] && [ $src -eq 0 ] && [ -n "$line" ] && grep -q "iperf Done" "$tmp/iperf$dir.c"; then
		echo "ok: iperf3 ${dir:+$dir }on librspreload.so: $(echo "$line" | awk '{print $5, $6, $7, $8}')"
	else
		bad "iperf3 $dir on librspreload.so: rc $rc/$src"; tail -n 8 "$tmp/iperf$dir.s" "$tmp/iperf$dir.c"
	fi
done

# A socket program on librspreload.so with its data checked: 30 MB in pieces of uneven sizes
# one way, 20 MB back, each hashed by both ends (tests/integration/rs_hash.py; Python makes
# its sockets with SOCK_CLOEXEC, which rsocket() takes).
# Meanwhile uiwarp-stat asks both programs, every 0.1 s, until an answer lists the server's
# listener and a connected rsocket; the client sends only once it has (the transfer alone
# can be over between two asks).
connected='^rsocket [0-9]+ open rd wr sqe [0-9]+ sbuf [0-9]+ credits [0-9]+ target [0-9]+ ctrl [0-9]+ unread [0-9]+/[0-9]+ rbuf -?[0-9]+ rseq [0-9]+/[0-9]+$'
(
	for _ in $(seq 300); do
		sleep 0.1
		for p in $(UIWARP_STAT_DIR="$tmp/stat" "$stat_bin" 2>/dev/null); do
			UIWARP_STAT_DIR="$tmp/stat" "$stat_bin" "$p" 2>/dev/null | grep '^rsocket' >"$tmp/hash.stat.$p"
			grep -q '^rsocket [0-9]* listen$' "$tmp/hash.stat.$p" && grep -Eq "$connected" "$tmp/hash.stat.$p" &&
				{ cp "$tmp/hash.stat.$p" "$tmp/hash.stat"; exit 0; }
		done
	done
) &
wpid=$!
pair hash env LD_PRELOAD="$preload" python3 "$here/rs_hash.py" server 10.73.0.1 5301 20000000 -- \
	env LD_PRELOAD="$preload" RS_HASH_WAIT_FOR="$tmp/hash.stat" python3 "$here/rs_hash.py" client 10.73.0.1 5301 30000000 20000000
kill "$wpid" 2>/dev/null
wait "$wpid" 2>/dev/null
wpid=""
if [ -s "$tmp/hash.stat" ]; then
	echo "ok: uiwarp-stat lists the server's rsockets while they run:"
	sed 's/^/    /' "$tmp/hash.stat"
else
	bad "uiwarp-stat never listed a listening and a connected rsocket; last answers:"
	cat "$tmp"/hash.stat.* 2>/dev/null | head -6
fi
if [ $rc -eq 0 ] && [ $src -eq 0 ] && grep -q "^rs_hash: ok client" "$tmp/hash.c" && grep -q "^rs_hash: ok server" "$tmp/hash.s"; then
	echo "ok: a Python socket program on librspreload.so: $(grep '^rs_hash: ok client' "$tmp/hash.c" | cut -d' ' -f4-)"
else
	bad "rs_hash on librspreload.so: rc $rc/$src"; tail -n 5 "$tmp/hash.s" "$tmp/hash.c"
fi

# netcat-openbsd's nc, unmodified, as a client on librspreload.so: a file of 3 MB sent with
# -N (shut down after it), the server's count and SHA-256 of what it read written back.
head -c 3000000 /dev/urandom >"$tmp/nc.in"
pair nc env LD_PRELOAD="$preload" python3 "$here/rs_hash.py" server 10.73.0.1 5302 0 -- \
	sh -c "exec env LD_PRELOAD='$preload' nc.openbsd -N 10.73.0.1 5302 <'$tmp/nc.in' >'$tmp/nc.out'"
if [ $rc -eq 0 ] && [ $src -eq 0 ] && out=$(python3 -c '
import hashlib, struct, sys
want = open(sys.argv[1], "rb").read()
got = open(sys.argv[2], "rb").read()
n = struct.unpack("!Q", got[:8])[0] if len(got) >= 40 else -1
ok = n == len(want) and got[8:40] == hashlib.sha256(want).digest()
verdict = "equal to the file" if ok else "DIFFERENT"
print(f"{n} octets read by the server, sha256 {got[8:16].hex()}... {verdict}")
sys.exit(0 if ok else 1)' "$tmp/nc.in" "$tmp/nc.out"); then
	echo "ok: nc (netcat-openbsd) as a client on librspreload.so: $out"
else
	bad "nc on librspreload.so: rc $rc/$src ${out:-}"; tail -n 5 "$tmp/nc.s" "$tmp/nc.c"
fi

# nc -l as the server too: librspreload.so with libuiw_rsaccept4.so beside it for accept4().
pair ncl sh -c "exec env LD_PRELOAD='$preload $lib/libuiw_rsaccept4.so' nc.openbsd -l 10.73.0.1 5303 \
	</dev/null >'$tmp/ncl.out'" -- sh -c "exec env LD_PRELOAD='$preload' nc.openbsd -N 10.73.0.1 5303 <'$tmp/nc.in'"
if [ $rc -eq 0 ] && [ $src -eq 0 ] && cmp -s "$tmp/nc.in" "$tmp/ncl.out"; then
	echo "ok: nc -l and nc -N on librspreload.so (accept4 by libuiw_rsaccept4.so): 3 MB, every octet"
else
	bad "nc -l on librspreload.so: rc $rc/$src"; tail -c 300 "$tmp/ncl.s"; tail -n 5 "$tmp/ncl.c"
fi

# A connection request that is no rsocket's: rejected, and the listener keeps serving.
sock="$tmp/mixed.sock"
srv "$sock" timeout -k 5 60 rstream -b 10.73.0.1 -S 1000 -C 10 -I 2 -T v >"$tmp/mixed.s" 2>&1 &
spid=$!
for _ in $(seq 100); do [ -S "$sock" ] && break; sleep 0.1; done
cli "$sock" timeout -k 5 20 rping -c -a 10.73.0.1 -p 7471 -C 1 >"$tmp/mixed.r" 2>&1
rrc=$?
cli "$sock" timeout -k 5 60 rstream -s 10.73.0.1 -S 1000 -C 10 -I 2 -T v >"$tmp/mixed.c" 2>&1
rc=$?
wait "$spid"; src=$?; spid=""
if [ $rrc -ne 0 ] && grep -q "without rsocket connection data.*rejected" "$tmp/mixed.s" &&
	[ $rc -eq 0 ] && [ $src -eq 0 ] && [ "$(rows "$tmp/mixed.c")" = 1 ]; then
	echo "ok: rping toward an rstream server is rejected (exit $rrc), and rstream connects next"
else
	bad "a foreign connection request: rping rc $rrc, rstream rc $rc/$src"
	tail -n 5 "$tmp/mixed.s" "$tmp/mixed.r" "$tmp/mixed.c"
fi

# Datagram rsockets: refused at once, with the reason.
out=$(cli "$tmp/none.sock" python3 -c '
import ctypes, socket
l = ctypes.CDLL("librdmacm.so.1", use_errno=True)
r = l.rsocket(socket.AF_INET, socket.SOCK_DGRAM, 0)
print("rsocket", r, ctypes.get_errno())' 2>&1)
if echo "$out" | grep -q "^rsocket -1 95$" && echo "$out" | grep -q "datagram rsockets need UD QPs"; then
	echo "ok: a datagram rsocket is refused (ENOTSUP) with the reason"
else
	bad "datagram rsocket: $out"
fi

[ $fail -eq 0 ] && echo "PASS: rsockets" || echo "FAIL: rsockets"
exit $fail
