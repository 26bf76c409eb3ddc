#!/usr/bin/env bash
# Open MPI (Debian 12's openmpi-bin 4.1), unmodified, on the drop-in libraries: two ranks,
# each its own uiwarp instance over memif, running tests/integration/mpi_check.c (ping-pong
# from 1 B to 4 MiB, broadcast, allreduce, one-sided put and get, every octet checked).
#
# The path: pml cm with the ofi MTL on libfabric's "verbs;ofi_rxm" provider (Sends, and RDMA
# Reads for large messages: RXM's rendezvous), one-sided through osc pt2pt; no other
# transport is allowed (btl self only), so nothing can go around uiwarp. (Debian's openib
# BTL is built with its UD connection manager only, no rdmacm CPC: it cannot run on any
# iWARP device; docs/DROPIN.md.)
#
# libfabric's verbs provider finds each rank's address on a kernel interface
# (FI_VERBS_IFACE, docs/DROPIN.md): mpirun and both ranks run in one network namespace
# made here, whose veth pair carries the two instances' addresses (and whose loopback
# carries mpirun's own traffic). Each rank's counters (UIWARP_STATS=1) must show its Sends
# and the RDMA Reads of the rendezvous. Then four ranks, all to all (below).
# usage: mpi.sh DROPIN_DIR (or a library in it) MPI_CHECK
set -u
lib=${1:?usage: mpi.sh DROPIN_DIR MPI_CHECK}
prog=$(readlink -f "${2:?usage: mpi.sh DROPIN_DIR MPI_CHECK}")
[ -d "$lib" ] || lib=$(dirname "$lib")
lib=$(cd "$lib" && pwd)
command -v mpirun >/dev/null || { echo "FAIL: mpirun not installed (openmpi-bin: scripts/install-deps.sh)"; exit 1; }
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root (a network namespace)"; exit 77; }
tmp=$(mktemp -d /tmp/uiw-mpi.XXXXXX)
ns="uiw-mpi-$$"
cleanup() {
	ip netns del "$ns" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
ip netns add "$ns" && ip -n "$ns" link set lo up &&
	ip -n "$ns" link add mpa type veth peer name mpb &&
	ip -n "$ns" addr add 10.76.0.1/24 dev mpa && ip -n "$ns" addr add 10.76.0.2/24 dev mpb &&
	ip -n "$ns" link set mpa up && ip -n "$ns" link set mpb up ||
	{ echo "FAIL: cannot make the network namespace"; exit 1; }

# Each rank: its instance (memif server for rank 0, client for rank 1), its address, and
# the interface libfabric takes that address from.
cat >"$tmp/rank.sh" <<EOF
#!/bin/sh
if [ "\$OMPI_COMM_WORLD_RANK" = 0 ]; then
	role=server ip=10.76.0.1 lcore=1 iface=mpa
else
	role=client ip=10.76.0.2 lcore=0 iface=mpb
fi
export FI_VERBS_IFACE=\$iface LD_LIBRARY_PATH="$lib" UIWARP_STATS=1
export UIWARP_CONFIG="port=net_memif0,role=\$role,socket=$tmp/memif.sock,socket-abstract=no; ip=\$ip/24; lcores=\$lcore; hugepages=off; memory=512"
exec "\$@" 2>"$tmp/rank\$OMPI_COMM_WORLD_RANK.err"
EOF
chmod +x "$tmp/rank.sh"
run() {
	ip netns exec "$ns" timeout -k 5 120 mpirun --allow-run-as-root --oversubscribe -np 2 "$@"
}
fail=0
bad() { echo "FAIL: $*"; fail=1; }

run --mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include "verbs;ofi_rxm" --mca btl self \
	--mca osc pt2pt "$tmp/rank.sh" "$prog" >"$tmp/ofi.out" 2>&1
rc=$?
if [ $rc -eq 0 ] && [ "$(grep -c '^mpi_check: ok rank' "$tmp/ofi.out")" = 2 ]; then
	echo "ok: Open MPI over libfabric's verbs;ofi_rxm on uiwarp, every transfer checked:"
	grep '^mpi_check: ok' "$tmp/ofi.out" | sed 's/^/    /'
else
	bad "Open MPI over verbs;ofi_rxm: rc $rc"
	grep -v '^uiwarp info' "$tmp/ofi.out" | tail -20
	tail -5 "$tmp"/rank*.err 2>/dev/null
fi
# Both ranks went through uiwarp: each sent and received Sends, and the rendezvous of the
# large messages read by RDMA Read (one side's Read Requests, the other's Responses).
n() { local v; v=$(sed -n "s/^ *rdmap\.$2 *\([0-9]*\) .*/\1/p" "$1" 2>/dev/null | head -1); echo "${v:-0}"; }
for r in 0 1; do
	f="$tmp/rank$r.err"
	if [ "$(n "$f" tx_send)" -gt 0 ] && [ "$(n "$f" rx_send)" -gt 0 ] &&
		[ $(($(n "$f" tx_read_req) + $(n "$f" rx_read_req))) -gt 0 ]; then
		echo "ok: rank $r's instance: $(n "$f" tx_send) Sends sent, $(n "$f" rx_send) received," \
			"Read Requests $(n "$f" tx_read_req) sent and $(n "$f" rx_read_req) taken"
	else
		bad "rank $r's counters do not show its traffic on uiwarp"
		grep -E 'rdmap\.' "$f" 2>/dev/null | head -8
	fi
done

# Four ranks over af_packet, each on a veth whose other end is on a bridge: mpi_check's
# all-to-all, so that every pair of ranks connects, most of them at once. The addresses
# libfabric looks for sit on two more veth pairs, which carry no traffic (the kernel is
# told to answer ARP only on an interface that has the address asked for, so that uiwarp's
# answers are the only ones on the bridge). The af_packet ports' interfaces get indexes far
# apart: DPDK names an af_packet socket's fanout group by the process id XOR the interface
# index, and four processes started together on consecutive indexes may collide, which
# fails the port's start ("could not set PACKET_FANOUT").
ns4="uiw-mpi4-$$"
trap 'ip netns del "$ns4" 2>/dev/null; cleanup' EXIT
ip netns add "$ns4" && ip netns exec "$ns4" sysctl -qw net.ipv4.conf.all.arp_ignore=1 &&
	ip -n "$ns4" link set lo up && ip -n "$ns4" link add mbr type bridge && ip -n "$ns4" link set mbr up &&
	ip -n "$ns4" link add ma0 type veth peer name ma1 && ip -n "$ns4" link add ma2 type veth peer name ma3 ||
	{ echo "FAIL: cannot make the four ranks' network namespace"; exit 1; }
for r in 0 1 2 3; do
	ip -n "$ns4" link add mu$r index $(((r + 1) << 13)) type veth peer name mb$r &&
		ip -n "$ns4" link set mb$r master mbr && ip -n "$ns4" link set mb$r up &&
		ip -n "$ns4" link set mu$r up && ip -n "$ns4" addr add 10.76.1.$((r + 1))/32 dev ma$r &&
		ip -n "$ns4" link set ma$r up || { echo "FAIL: cannot make rank $r's interfaces"; exit 1; }
done
cat >"$tmp/rank4.sh" <<EOF
#!/bin/sh
r=\$OMPI_COMM_WORLD_RANK
export FI_VERBS_IFACE=ma\$r LD_LIBRARY_PATH="$lib"
export UIWARP_CONFIG="port=net_af_packet0,iface=mu\$r,qdisc_bypass=1; ip=10.76.1.\$((r + 1))/24; hugepages=off; memory=512; mbufs=16383"
exec "\$@" 2>"$tmp/rank4-\$r.err"
EOF
chmod +x "$tmp/rank4.sh"
ip netns exec "$ns4" timeout -k 5 120 mpirun --allow-run-as-root --oversubscribe -np 4 \
	--mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include "verbs;ofi_rxm" --mca btl self \
	"$tmp/rank4.sh" "$prog" >"$tmp/four.out" 2>&1
rc=$?
if [ $rc -eq 0 ] && [ "$(grep -c '^mpi_check: ok rank . of 4' "$tmp/four.out")" = 4 ]; then
	echo "ok: four ranks over af_packet on a bridge: all-to-all and allreduce checked by each"
else
	bad "four ranks: rc $rc"
	grep -v '^uiwarp info' "$tmp/four.out" | tail -12
	tail -3 "$tmp"/rank4-*.err 2>/dev/null
fi

[ $fail -eq 0 ] && echo "PASS: mpi" || echo "FAIL: mpi"
exit $fail
