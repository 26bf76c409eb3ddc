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
# and the RDMA Reads of the rendezvous.
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

[ $fail -eq 0 ] && echo "PASS: mpi" || echo "FAIL: mpi"
exit $fail
