#!/usr/bin/env bash
# More unmodified Debian programs on the drop-in libraries, two processes over memif:
# - rdma_server/rdma_client and rdma_xserver/rdma_xclient (rdmacm-utils): synchronous ids,
#   rdma_create_ep, rdma_get_request and the rdma_verbs.h helpers, each side exiting 0;
# - cmtime: 100 connections bound to a source address (rdma_getaddrinfo's hints);
# - fio's rdma engine, RDMA Write, RDMA Read and Send, err= 0 on both sides (Send: its
#   sender runs ahead of the receives, which wait for them: recv_wait_ms);
# - fi_pingpong over libfabric's verbs provider (FI_EP_MSG) and over its RXM utility
#   provider (FI_EP_RDM), every message checked;
# - fi_rma (tests/integration/fi_rma.c): fi_write and fi_read of 1 MiB over the verbs
#   provider's FI_EP_MSG, every octet checked on the side that receives it, then 2,000 of
#   each with 16 in flight, timed;
# - rdma_server captures its traffic (key pcap), which tshark's iWARP dissectors must find
#   clean;
# - qperf -cm1 rc_bw, rc_lat, rc_rdma_read_bw, rc_rdma_read_lat, rc_rdma_write_bw and
#   rc_rdma_write_lat (RDMA Write with immediate data, RFC 7306): qperf talks over kernel
#   TCP first, so each side runs in a network namespace (made here) whose veth carries the
#   address its uiwarp instance has on memif; its server makes the instance in the child
#   it forks per test (a port 0 bind, read back with rdma_get_src_port);
# and the programs that cannot run on iWARP, which must fail at once saying why:
# - qperf rc_rdma_write_bw toward a peer that does not announce RFC 7306 (the client with
#   rfc7306=0, as siw is): the post is refused;
# - ibv_rc_pingpong (QPs connected by hand): ibv_modify_qp to RTR is refused;
# - udaddy (UD, RDMA_PS_UDP): rdma_create_id is refused.
# - uiwarp-stat while an rping pair runs: both programs answer, each listing its QP in RTS
#   over an ESTABLISHED connection with the peer's address; a reader that hangs up at once
#   does not hurt the program; the sockets are gone after the programs end.
# usage: realapps.sh DROPIN_DIR (or a library in it) UIWARP_STAT FI_RMA
set -u
lib=${1:?usage: realapps.sh DROPIN_DIR UIWARP_STAT FI_RMA}
stat_tool=${2:?usage: realapps.sh DROPIN_DIR UIWARP_STAT FI_RMA}
fi_rma=$(readlink -f "${3:?usage: realapps.sh DROPIN_DIR UIWARP_STAT FI_RMA}")
[ -d "$lib" ] || lib=$(dirname "$lib")
lib=$(cd "$lib" && pwd)
for t in rdma_server rdma_client rdma_xserver rdma_xclient cmtime udaddy ibv_rc_pingpong fio qperf fi_pingpong; do
	command -v "$t" >/dev/null ||
		{ echo "FAIL: $t not installed (rdmacm-utils, ibverbs-utils, fio, qperf, libfabric-bin: scripts/install-deps.sh)"; exit 1; }
done
tmp=$(mktemp -d /tmp/uiw-apps.XXXXXX)
export UIWARP_STAT_DIR="$tmp/stat"   # uiwarp-stat's sockets: this test's own
ns_s="uiw-ra-s-$$" ns_c="uiw-ra-c-$$"
spid=""
cleanup() {
	[ -n "$spid" ] && kill "$spid" 2>/dev/null
	ip netns del "$ns_s" 2>/dev/null
	ip netns del "$ns_c" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
common="hugepages=off; memory=512"
fail=0
bad() { echo "FAIL: $*"; fail=1; }
# srv SOCKET COMMAND...: COMMAND on the drop-in as the memif server at SOCKET (10.73.0.1);
# cli SOCKET COMMAND...: as its client (10.73.0.2). Each runs in the network namespace
# $srv_ns or $cli_ns when set.
srv_ns="" cli_ns=""
srv() {
	local sock=$1
	shift
	${srv_ns:+ip netns exec $srv_ns} env LD_LIBRARY_PATH="$lib" \
		UIWARP_CONFIG="port=net_memif0,role=server,socket=$sock,socket-abstract=no; ip=10.73.0.1/24; lcores=1; $common${srv_extra:+; $srv_extra}" "$@"
}
cli() {
	local sock=$1
	shift
	${cli_ns:+ip netns exec $cli_ns} env LD_LIBRARY_PATH="$lib" \
		UIWARP_CONFIG="port=net_memif0,role=client,socket=$sock,socket-abstract=no; ip=10.73.0.2/24; lcores=0; $common" "$@"
}

# wait_listener PORT: until a uiwarp process of this test listens on PORT (uiwarp-stat's
# "listen PORT" line), 10 s at most. The client's connect is tried once: one made after
# the server's port is up but before its rdma_listen() was refused (a TCP RST, and rping's
# client gave up at once while its server waited out its timeout under CI's load).
wait_listener() {
	local p
	for _ in $(seq 100); do
		for p in $("$stat_tool" 2>/dev/null); do
			"$stat_tool" "$p" 2>/dev/null | grep -q "^listen $1 " && return 0
		done
		sleep 0.1
	done
	echo "note: nothing listens on $1 after 10 s"
}

# pair NAME SERVER_RC(0|any) SERVER... -- CLIENT...: the server (in the background) and the
# client over memif; the client's exit status and output are left in $rc and $tmp/NAME.c,
# the server's in $src and $tmp/NAME.s (SERVER_RC any: it is stopped after the client).
pair() {
	local name=$1 want=$2 sock="$tmp/$1.sock" srv=()
	shift 2
	while [ "$1" != "--" ]; do srv+=("$1"); shift; done
	shift
	srv "$sock" timeout -k 5 60 "${srv[@]}" >"$tmp/$name.s" 2>&1 &
	spid=$!
	for _ in $(seq 100); do [ -S "$sock" ] && break; sleep 0.1; done
	# A server whose side channel is kernel TCP ($wait_port): its client connects once,
	# so it starts once the server listens, which comes after the port is up.
	if [ -n "${wait_port:-}" ]; then
		for _ in $(seq 100); do
			${srv_ns:+ip netns exec $srv_ns} ss -Hltn "sport = :$wait_port" | grep -q . && break
			sleep 0.1
		done
	fi
	[ -n "${wait_listen:-}" ] && wait_listener "$wait_listen"
	# Still running after 50 s: what each uiwarp process holds, for the failure report.
	( sleep 50; for p in $("$stat_tool" 2>/dev/null); do "$stat_tool" "$p"; done >"$tmp/$name.stat" 2>&1 ) &
	local diag=$!
	cli "$sock" timeout -k 5 60 "$@" >"$tmp/$name.c" 2>&1
	rc=$?
	kill "$diag" 2>/dev/null
	wait "$diag" 2>/dev/null
	[ "$want" = any ] && kill "$spid" 2>/dev/null
	wait "$spid"
	src=$?
	spid=""
	if [ -s "$tmp/$name.stat" ]; then
		echo "$name: still running after 50 s; uiwarp-stat of each process then:"
		awk '/^pid /{print; q=0} /^qps /{q=1} q' "$tmp/$name.stat" | head -60 | sed 's/^/    /'
	fi
}

# The server captures its traffic (key pcap), which tshark's dissectors must find clean.
srv_extra="pcap=$tmp/rs.pcap" wait_listen=7471 pair rdma_server 0 rdma_server -p 7471 -- rdma_client -s 10.73.0.1 -p 7471
if [ $rc -eq 0 ] && [ $src -eq 0 ] && grep -q "rdma_client: end 0" "$tmp/rdma_server.c" &&
	grep -q "rdma_server: end 0" "$tmp/rdma_server.s"; then
	echo "ok: rdma_server and rdma_client: end 0 at both ends"
else
	bad "rdma_server/rdma_client: rc $rc/$src"; tail -n 5 "$tmp/rdma_server.s" "$tmp/rdma_server.c"
fi
if out=$(python3 "$(dirname "$0")/../tools/iwarp_check.py" --one-fpdu-per-segment "$tmp/rs.pcap" 2>&1) &&
   echo "$out" | grep -q "requests=1 replies=1"; then
	echo "ok: the server's capture (pcap=FILE): ${out#*: }"
else
	bad "the server's capture: $out"
fi

wait_listen=7472 pair rdma_xserver 0 rdma_xserver -p 7472 -- rdma_xclient -s 10.73.0.1 -p 7472
if [ $rc -eq 0 ] && [ $src -eq 0 ] && grep -q "rdma_xclient: end 0" "$tmp/rdma_xserver.c"; then
	echo "ok: rdma_xserver and rdma_xclient: end 0 at both ends"
else
	bad "rdma_xserver/rdma_xclient: rc $rc/$src"; tail -n 5 "$tmp/rdma_xserver.s" "$tmp/rdma_xserver.c"
fi

# uiwarp-stat on a running pair (rping -C 20000: two or three seconds on an idle machine;
# 5000 took under one since ibv_get_cq_event() spins, and the listing missed them).
# Listing connects to each socket and hangs up at once: the program must not notice (no
# SIGPIPE). Both are asked once both answer and rping's QPs are up.
sock="$tmp/stat.sock"
srv "$sock" timeout -k 5 150 rping -s -a 10.73.0.1 -C 20000 >"$tmp/stat.s" 2>&1 &
spid=$!
for _ in $(seq 100); do [ -S "$sock" ] && break; sleep 0.1; done
wait_listener 7174   # rping's port
cli "$sock" timeout -k 5 150 rping -c -a 10.73.0.1 -C 20000 -V >"$tmp/stat.c" 2>&1 &
cpid=$!
for _ in $(seq 100); do
	pids=$("$stat_tool" 2>/dev/null)
	up=0
	for p in $pids; do
		"$stat_tool" "$p" >"$tmp/stat.$p" 2>&1 && grep -q '^qp .* RTS ' "$tmp/stat.$p" && up=$((up + 1))
	done
	[ "$up" = 2 ] && break
	sleep 0.1
done
wait "$cpid"; rc=$?
wait "$spid"; src=$?
spid=""
good=0
for p in $pids; do
	grep -q "^qp [0-9]* uiw0 engine 0 RTS 10\.73\.0\.[12]:[0-9]* [-<>]* 10\.73\.0\.[12]:[0-9]* tcp ESTABLISHED mpa rev 2 crc" "$tmp/stat.$p" &&
		grep -q "^  queues sq [0-9]*/[0-9]* rq" "$tmp/stat.$p" && grep -q "^tcp.conns 1" "$tmp/stat.$p" &&
		grep -q "^  cqs send [0-9]*/[1-9][0-9]*\( armed\)* (channel: [0-9]* events) (receives too)" "$tmp/stat.$p" &&
		grep -q "^  tcp srtt [0-9]* us rttvar [0-9]* us timeout [1-9][0-9]* us cwnd [1-9][0-9]* wnd [1-9][0-9]* flight [0-9]* sq [0-9]* share 256" "$tmp/stat.$p" &&
		good=$((good + 1))
done
if [ $rc -eq 0 ] && [ $src -eq 0 ] && [ "$good" -eq 2 ] && [ -z "$(ls -A "$UIWARP_STAT_DIR")" ] &&
   "$stat_tool" "$cpid" 2>&1 | grep -q "has no uiwarp instance"; then
	echo "ok: uiwarp-stat: both rping processes answered ($(echo $pids)): $(grep '^qp ' "$tmp/stat.$(echo $pids | cut -d' ' -f1)")"
else
	bad "uiwarp-stat: rc $rc/$src, $good of 2 listings good, left: $(ls -A "$UIWARP_STAT_DIR")"
	for p in $pids; do head -20 "$tmp/stat.$p"; done
	tail -n 3 "$tmp/stat.s" "$tmp/stat.c"
fi

# cmtime's server serves until stopped.
pair cmtime any cmtime -b 10.73.0.1 -c 100 -- cmtime -s 10.73.0.1 -b 10.73.0.2 -c 100
if [ $rc -eq 0 ] && grep -q "^connect *:" "$tmp/cmtime.c" && ! grep -q "fail" "$tmp/cmtime.c"; then
	echo "ok: cmtime -c 100: $(grep '^connect *:' "$tmp/cmtime.c" | tr -s ' ')"
else
	bad "cmtime: rc $rc"; tail -n 8 "$tmp/cmtime.c"
fi

for verb in write read send; do
	pair "fio_$verb" 0 fio --thread --name=srv --ioengine=rdma --port=18610 --rw=read --bs=4k --size=16m -- \
		fio --thread --name=cli --ioengine=rdma --hostname=10.73.0.1 --port=18610 --rw=write --bs=4k \
		--size=16m --verb="$verb"
	if [ $rc -eq 0 ] && [ $src -eq 0 ] && grep -q "err= 0" "$tmp/fio_$verb.c" &&
		grep -q "err= 0" "$tmp/fio_$verb.s"; then
		echo "ok: fio rdma --verb=$verb: $(grep -o 'IOPS=[^,]*, BW=[^ ]*' "$tmp/fio_$verb.c")"
	else
		bad "fio --verb=$verb: rc $rc/$src"; tail -n 6 "$tmp/fio_$verb.s" "$tmp/fio_$verb.c"
	fi
done

# udaddy: UD is not iWARP's. The server fails at its first call, saying so.
out=$(srv "$tmp/ud.sock" timeout 20 udaddy 2>&1)
rc=$?
if [ $rc -ne 0 ] && [ $rc -ne 124 ] && grep -q "RDMA_PS_UDP: iWARP connections are reliable and connected only" <<<"$out"; then
	echo "ok: udaddy fails at once: $(grep -o 'rdma_create_id: port space RDMA_PS_UDP[^;]*' <<<"$out")"
else
	bad "udaddy: rc $rc: $out"
fi

# Two namespaces, each with a veth end carrying its instance's address, for the programs
# that talk over kernel TCP first.
ip netns add "$ns_s" && ip netns add "$ns_c" &&
	ip -n "$ns_s" link add vs type veth peer name vc netns "$ns_c" &&
	ip -n "$ns_s" addr add 10.73.0.1/24 dev vs && ip -n "$ns_c" addr add 10.73.0.2/24 dev vc &&
	ip -n "$ns_s" link set vs up && ip -n "$ns_c" link set vc up &&
	ip -n "$ns_s" link set lo up && ip -n "$ns_c" link set lo up ||
	{ bad "cannot make the namespaces $ns_s and $ns_c"; exit 1; }
srv_ns=$ns_s cli_ns=$ns_c

# ibv_rc_pingpong exchanges QP numbers over TCP and moves its QPs to RTR by hand.
wait_port=18515 pair pp 0 ibv_rc_pingpong -g 0 -- ibv_rc_pingpong -g 0 10.73.0.1
if [ $rc -ne 0 ] && [ $rc -ne 124 ] && [ $src -ne 0 ] && [ $src -ne 124 ] &&
	cat "$tmp/pp.s" "$tmp/pp.c" | grep -q "an iWARP QP is connected by rdma_cm"; then
	echo "ok: ibv_rc_pingpong fails at once: $(cat "$tmp/pp.s" "$tmp/pp.c" | grep -o 'ibv_modify_qp: qp [0-9]* to RTR' | head -1) refused"
else
	bad "ibv_rc_pingpong: rc $rc/$src"; tail -n 5 "$tmp/pp.s" "$tmp/pp.c"
fi

# fi_pingpong over libfabric's verbs provider, FI_EP_MSG, every message checked (-c); its
# control channel is kernel TCP, and its provider binds 127.0.0.1 as it probes.
pair fi 0 fi_pingpong -p verbs -e msg -I 50 -c -- fi_pingpong -p verbs -e msg -I 50 -c 10.73.0.1
if [ $rc -eq 0 ] && [ $src -eq 0 ] && grep -q "^1m  *50  *=50 " "$tmp/fi.c"; then
	echo "ok: fi_pingpong -p verbs -e msg -c, 64 B to 1 MiB checked: $(grep '^1m ' "$tmp/fi.c" | tr -s ' ')"
else
	bad "fi_pingpong: rc $rc/$src"; tail -n 5 "$tmp/fi.s" "$tmp/fi.c"
fi

# libfabric's RMA calls (fi_write, fi_read) over the verbs provider's FI_EP_MSG: 1 MiB
# each way checked octet by octet, then 2,000 of each with 16 in flight. The provider
# offers FI_EP_MSG on the addresses of the interfaces FI_VERBS_IFACE names (below), and
# the server binds its instance's address.
pair firma 0 env FI_VERBS_IFACE=vs "$fi_rma" -b 10.73.0.1 -s 1048576 -n 2000 -w 16 -- \
	env FI_VERBS_IFACE=vc "$fi_rma" -s 1048576 -n 2000 -w 16 10.73.0.1
if [ $rc -eq 0 ] && [ $src -eq 0 ] && grep -q "Read of 1048576 octets: checked, every octet" "$tmp/firma.c" &&
	grep -q "Write of 1048576 octets checked, every octet by the server" "$tmp/firma.c" &&
	grep -q "the client's Write of 1048576 octets: every octet as sent" "$tmp/firma.s"; then
	echo "ok: fi_rma over verbs FI_EP_MSG, 1 MiB Write and Read checked; $(grep -h 'Gb/s' "$tmp/firma.c" | sed 's/^fi_rma: //' | tr '\n' ';')"
else
	bad "fi_rma: rc $rc/$src"; tail -n 5 "$tmp/firma.s" "$tmp/firma.c"
fi

# The same over libfabric's RXM utility provider (FI_EP_RDM on verbs MSG endpoints). The
# verbs provider takes the addresses of the interfaces named by FI_VERBS_IFACE (default
# "ib"): here the veth ends that carry the instances' addresses.
pair rxm 0 env FI_VERBS_IFACE=vs fi_pingpong -p "verbs;ofi_rxm" -e rdm -I 50 -c -- \
	env FI_VERBS_IFACE=vc fi_pingpong -p "verbs;ofi_rxm" -e rdm -I 50 -c 10.73.0.1
if [ $rc -eq 0 ] && [ $src -eq 0 ] && grep -q "^1m  *50  *=50 " "$tmp/rxm.c"; then
	echo "ok: fi_pingpong -p 'verbs;ofi_rxm' -e rdm -c, 64 B to 1 MiB checked: $(grep '^1m ' "$tmp/rxm.c" | tail -1 | tr -s ' ')"
else
	bad "fi_pingpong RXM: rc $rc/$src"; tail -n 5 "$tmp/rxm.s" "$tmp/rxm.c"
fi

# qperf: one server; one client run per test (a client's instance stays with the server
# child it first met, and the server forks a child per test). The next client starts
# once the last child has gone, its memif socket with it.
sock="$tmp/qperf.sock"
srv "$sock" timeout 200 qperf >"$tmp/qperf.s" 2>&1 &
spid=$!
sleep 0.5
for t in rc_bw rc_lat rc_rdma_read_bw rc_rdma_read_lat rc_rdma_write_bw rc_rdma_write_lat no7306; do
	for _ in $(seq 100); do [ -e "$sock" ] || break; sleep 0.1; done
	if [ "$t" = no7306 ]; then
		common="$common; rfc7306=0" cli "$sock" env UIWARP_STATS=1 timeout 30 \
			qperf 10.73.0.1 -cm1 -t 1 rc_rdma_write_bw >"$tmp/qperf.$t" 2>&1
	else
		cli "$sock" env UIWARP_STATS=1 timeout 30 qperf 10.73.0.1 -cm1 -t 1 "$t" >"$tmp/qperf.$t" 2>&1
	fi
	rc=$?
	res=$(grep -E '^ +(bw|latency) += ' "$tmp/qperf.$t" | tr -s ' ')
	if [ "$t" = no7306 ]; then
		if [ $rc -ne 0 ] && [ $rc -ne 124 ] &&
		   grep -q "immediate data and atomics (RFC 7306) refused (EOPNOTSUPP)" "$tmp/qperf.$t"; then
			echo "ok: qperf rc_rdma_write_bw toward a peer without RFC 7306 fails at once, saying why"
		else
			bad "qperf $t: rc $rc"; grep -v "^  [a-z]*\.[a-z_]* *0 " "$tmp/qperf.$t" | tail -40
		fi
	elif [ $rc -eq 0 ] && [ -n "$res" ]; then
		echo "ok: qperf $t:$res"
	else
		bad "qperf $t: rc $rc"; grep -v "^  [a-z]*\.[a-z_]* *0 " "$tmp/qperf.$t" | tail -40
	fi
done
kill "$spid" 2>/dev/null
wait "$spid"
spid=""
exit $fail
