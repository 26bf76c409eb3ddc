#!/usr/bin/env bash
# uiwarp on emulated PCI NICs (tests/nic/nicvm.sh): in a QEMU guest, DPDK's PCI PMDs drive
# a virtio-net-pci NIC through vfio-pci behind a virtual IOMMU and an e1000e through
# uio_pci_generic, with hugepages; programs on uiwarp's drop-in libraries there talk to
# uiwarp on the host (af_packet on the bridge's veth, in a namespace made here).
#
# Per guest boot, the steps in order (the guest's side first, then the host's):
#   virtio-vfio   port bring-up errors a user meets (vfio without vfio_iommu_type1);
#                 siw_verbs -s --victim / -c --provoke (Send, Send with SE, with
#                 Invalidate, with SE and Invalidate both ways, then a Write to an
#                 invalidated STag: the guest Terminates), CRC on;
#                 rping -s (Debian's, 100 verified) / uiwarp-rping -c, CRC on;
#                 ib_write_bw -R 64 KiB / the same, CRC on; ib_read_bw -R, CRC off, the
#                 guest's Read Responses in TSO frames (tso=1), none with a bad checksum;
#                 rping -s / uiwarp-rping -c with the NIC's link taken down and up from
#                 QEMU's monitor in the middle: the connection lives through it, and the
#                 guest's counters show one link_down and one link_up
#   virtio-siw    Linux siw in the siw guest (tests/interop/siwvm.sh) serving, the NIC
#                 guest opening from its virtio NIC, both at MTU 9000: siw_verbs (siw
#                 Terminates), rping -c with 32 KiB buffers; jumbo frames each way
#   e1000e-uio    errors (kernel driver bound, no driver, uio without hugepages, hugepages
#                 not mounted, no such device); siw_verbs, CRC off; rping -c in the guest
#                 / uiwarp-rping -s on the host (the guest opens), CRC on; ib_send_bw -R;
#                 uiwarp-scale with two engines serving 16 QPs (the PMD exposes no RSS:
#                 segments are handed between engines); rping -c -S 32768 with both ends
#                 at MTU 9000 (the host's af_packet port too), jumbo frames each way
#   virtio-rss    the virtio NIC with two queue pairs and RSS, the guest's uiwarp with two
#                 engines: uiwarp-scale serving 64 QPs, then opening 64 (every byte of each
#                 QP's check compared), both engines holding connections and no segment
#                 handed between them; ib_write_bw -R -q 4 on the drop-in, CRC on
# Each boot's capture must pass tests/tools/iwarp_check.py (and ../shared/tools/
# iwarp-pcap-check when it is there, on its first 2000 frames) and hold exactly one
# Terminate, from the guest: DDP, tagged buffer, invalid STag (virtio-rss: none).
#
# usage: nic_test.sh DROPIN_DIR UIWARP_RPING UIWARP_HOST UIWARP_STAT SIW_VERBS CONNECT_DELAY_SO
#                    IWARP_CHECK_PY UIWARP_SCALE [BOOT...]
#   Env: KEEP=1 keeps logs and captures. Root. Never skips: a guest that cannot be built
#   or booted fails the test.
set -u
dropin=$(cd "$1" 2>/dev/null && pwd || dirname "$(readlink -f "$1")")
rping_tool=$(readlink -f "$2")
host_tool=$(readlink -f "$3")
stat_tool=$(readlink -f "$4")
siw_verbs=$(readlink -f "$5")
connect_delay=$(readlink -f "$6")
checker=$(readlink -f "$7")
scale_tool=$(readlink -f "$8")
shift 8
here=$(cd "$(dirname "$0")" && pwd)
[ "$(id -u)" = 0 ] || { echo "FAIL: needs root (QEMU, namespaces)"; exit 1; }
. "$here/nicvm.sh"
shared_check=$here/../../../shared/tools/iwarp-pcap-check
[ -x "$shared_check" ] || shared_check=""

out=$(mktemp -d /tmp/uiw-nic.XXXXXX)
trap 'nicvm_cleanup; [ "${KEEP:-0}" = 1 ] && echo "logs and captures kept in $out" || rm -rf "$out"' EXIT
t0=$SECONDS
NICVM_FILES="$siw_verbs $host_tool $stat_tool $scale_tool"
nicvm_build "$dropin" >"$out/build.log" 2>&1 || { echo "FAIL: the guest could not be built"; tail -5 "$out/build.log"; exit 1; }
echo "guest build: $((SECONDS - t0)) s"
siwvm_net_up "uiwnic$$" || { echo "FAIL: namespace"; exit 1; }
G=$SIWVM_GUEST_IP
US=$SIWVM_PEER_IP
hostcfg="port=net_af_packet0,iface=uiw0,qdisc_bypass=1; ip=$US/24; hugepages=off; memory=512; mbufs=16383"
# The bridge's port toward the host's uiwarp forwards frames up to 9000 octets of IP (the
# host's steps at MTU 9000); others announce a smaller MSS and never send such frames.
ip -n "$SIWVM_NS" link set uiw0br mtu 9000
fail=0
passed=0

host() { ip netns exec "$SIWVM_NS" env LD_LIBRARY_PATH="$dropin" UIWARP_CONFIG="$hostcfg; mpa_crc=$CRC" "$@"; }

# --- host sides of the steps --------------------------------------------------------------
ops_client() { host timeout 150 "$siw_verbs" -c "$G" --provoke; }
rping_client() { host timeout 150 "$rping_tool" --set "$hostcfg; mpa_crc=$CRC" -c -a "$G" -C 100 -S 64; }
rping_client_big() { host timeout 150 "$rping_tool" --set "$hostcfg; mpa_crc=$CRC" -c -a "$G" -C 100 -S 8192; }
rping_server() { host timeout 150 "$rping_tool" --set "$hostcfg; mpa_crc=$CRC" -s -S 64; }
# At MTU 9000: uiwarp's af_packet port sizes its ring for jumbo frames and sets uiw0's MTU.
rping_server_jumbo() { host timeout 150 "$rping_tool" --set "$hostcfg; mpa_crc=$CRC; mtu=9000" -s -S 32768; }
# perftest -R's server listens for its test QP only after setting up: the client waits
# for it (tests/interop/connect_delay.c).
perf_client() { host env LD_PRELOAD="$connect_delay" timeout 150 stdbuf -oL "$1" -R -s 65536 -n 100 "$G"; }
write_bw() { perf_client ib_write_bw; }
# The guest sends the Read Responses, in TSO frames: each must reach the host's TCP with
# a good checksum (virtio's host cuts them; the PMD must prepare their checksum field).
read_bw() {
	UIWARP_STATS=1 perf_client ib_read_bw >"$out/read_bw.log" 2>&1
	local rc=$?
	cat "$out/read_bw.log"
	! grep -E '^ *tcp\.drop_cksum' "$out/read_bw.log" || { echo "segments with bad checksums"; return 1; }
	return $rc
}
# perftest times usleep() against the TSC before its report; under software emulation on a
# busy host the fit can fall below its r^2 of 0.9 ("Can't produce a report", exit 1) after a
# transfer that went well. The guest then says perf-calib and serves once more, and this
# step runs the client again (run_boot's served count follows).
send_bw() {
	local rc
	perf_client ib_send_bw
	rc=$?
	siwvm_wait_line '^(perf-rc=|perf-calib)' 1 200 || return 1
	if siwvm_console | grep -q '^perf-calib'; then
		served=$((served + 1))
		siwvm_wait_listen "$served" 240 || return 1
		perf_client ib_send_bw
		rc=$?
	fi
	return $rc
}
write_bw_q4() { host env LD_PRELOAD="$connect_delay" timeout 150 stdbuf -oL ib_write_bw -R -q 4 -s 65536 -n 20 "$G"; }
# 64 QPs each way between the host's uiwarp and the guest's two engines (every byte of a
# Write, a Send each way and a Read compared on each QP, then Writes and Sends over all).
scale_client() { host timeout 200 "$scale_tool" --set "$hostcfg; mpa_crc=$CRC" --connect "$G:18516" --qps 64 --bw-iters 40 --rate-iters 500; }
# 16 QPs opened toward the guest's two engines on the e1000e (a shorter run: its capture
# is judged in full).
scale_client_16() { host timeout 200 "$scale_tool" --set "$hostcfg; mpa_crc=$CRC" --connect "$G:18516" --qps 16 --bw-iters 10 --rate-iters 100; }
scale_server() { host timeout 200 "$scale_tool" --set "$hostcfg; mpa_crc=$CRC" --listen 18516 --qps 64 --once; }
# The link of the guest's virtio NIC goes down for 3 s while 1000 rping iterations run.
flap_client() {
	host timeout 300 "$rping_tool" --set "$hostcfg; mpa_crc=$CRC" -c -a "$G" -C 1000 -S 1024 &
	local p=$!
	sleep 4
	nicvm_monitor "set_link n0 off"
	echo "link down"
	sleep 3
	nicvm_monitor "set_link n0 on"
	echo "link up"
	wait $p
}

# check_capture NAME FILE WHO: the capture passes iwarp_check.py (its summary in $chk) and
# iwarp-pcap-check, and holds exactly one Terminate, from $G (WHO names it): DDP, tagged
# buffer, invalid STag; with NO_TERMINATE=1, none. Failures are added to $why.
check_capture() {
	local t1
	chk=$(python3 "$checker" "$2" 2>&1) || why="${why:+$why; }capture: ${chk##*: }"
	if [ -n "$shared_check" ]; then
		bash "$here/../tools/shared_judge.sh" "$shared_check" "$2" >"$out/$1.pcapcheck" 2>&1 ||
			why="${why:+$why; }iwarp-pcap-check failed"
	fi
	t1=$(tshark -r "$2" -Y iwarp_rdma.terminate -T fields -e ip.src -e iwarp_rdma.term_layer \
		-e iwarp_rdma.term_etype_ddp -e iwarp_rdma.term_errcode_ddp_tagged 2>/dev/null | tr '\t' ' ')
	if [ "${NO_TERMINATE:-0}" = 1 ]; then
		[ -z "$t1" ] || why="${why:+$why; }Terminates in the capture: '$(tr '\n' ';' <<<"$t1")', expected none"
		return
	fi
	[ "$t1" = "$G 0x01 0x01 0x00" ] ||
		why="${why:+$why; }Terminates in the capture: '$(tr '\n' ';' <<<"$t1")', expected one from $3: DDP, tagged, invalid STag"
}

# run_boot NAME 'GUEST COMMAND' STEP...: boots the guest with the command and a capture,
# then runs the host's steps in order. STEP is c:FN (the guest serves: FN runs once the
# guest's next dropin_serve listens) or s:FN (the host serves: FN starts, and the guest is
# released from uiw_await_go once uiwarp answers pings), with CRC=0/1 before it for the
# host's mpa_crc. CHECKS: guest log patterns that must appear, one per line.
run_boot() {
	local name=$1 gcmd=$2 t=$SECONDS why="" served=0 awaits=0 step fn crc
	shift 2
	local cap=$out/$name.pcapng log=$out/$name.host.log
	: >"$log"
	siwvm_capture_start "$cap"
	nicvm_boot "$name" 540 "$gcmd"
	siwvm_wait_line '^UIWVM ready' 1 300 || why="the guest did not come up"
	for step in "$@"; do
		[ -z "$why" ] || break
		crc=${step%%:*}
		step=${step#*:}
		fn=${step#*:}
		echo "== $fn (crc $crc)" >>"$log"
		if [ "${step%%:*}" = c ]; then
			served=$((served + 1))
			siwvm_wait_listen "$served" 240 || { why="the guest's server $served never listened"; break; }
			CRC=$crc "$fn" >>"$log" 2>&1 || why="host step $fn failed"
		else
			CRC=$crc "$fn" >>"$log" 2>&1 &
			local hp=$!
			awaits=$((awaits + 1))
			siwvm_wait_peer 60 || why="uiwarp never answered a ping"
			sleep 1
			nicvm_go "$awaits" || why="${why:+$why; }the guest took no go"
			wait "$hp" || why="${why:+$why; }host step $fn failed"
		fi
	done
	siwvm_wait
	local rc=$?
	siwvm_capture_stop
	siwvm_console >"$out/$name.guest.log"
	[ $rc = 0 ] || why="${why:+$why; }guest command rc $rc"
	local pat
	while IFS= read -r pat; do
		[ -n "$pat" ] || continue
		grep -q -- "$pat" "$out/$name.guest.log" || why="${why:+$why; }guest log lacks '$pat'"
	done <<<"${CHECKS:-}"
	while IFS= read -r pat; do
		[ -n "$pat" ] || continue
		! grep -q -- "$pat" "$out/$name.guest.log" || why="${why:+$why; }guest log has '$(grep -m1 -- "$pat" "$out/$name.guest.log")'"
	done <<<"${NOCHECKS:-}"
	local perfs
	perfs=$(grep -c '^perf-rc=0' "$out/$name.guest.log")
	[ "$perfs" = "${PERFS:-0}" ] || why="${why:+$why; }perftest passed $perfs of ${PERFS:-0} times in the guest"
	if grep -q '^check .* FAIL' "$out/$name.guest.log"; then
		why="${why:+$why; }$(grep '^check .* FAIL' "$out/$name.guest.log" | tr '\n' ' ')"
	fi
	local chk jg jh
	check_capture "$name" "$cap" "the guest"
	if [ -n "${JUMBO_FROM:-}" ]; then
		jg=$(tshark -r "$cap" -Y "ip.src == $G && frame.len > 1514" 2>/dev/null | wc -l)
		jh=$(tshark -r "$cap" -Y "ip.src == $US && frame.len > 1514" 2>/dev/null | wc -l)
		[ "$jg" -gt 0 ] && [ "$jh" -gt 0 ] || why="${why:+$why; }no jumbo frames (from the guest $jg, from the host $jh)"
		chk="$jg jumbo frames from the guest, $jh from the host; ${chk##*: }"
	fi
	if [ -n "$why" ]; then
		echo "FAIL $name ($((SECONDS - t)) s): $why"
		tail -15 "$log" | sed 's/^/    host: /'
		grep -v '^\[' "$out/$name.guest.log" | tail -25 | sed 's/^/    guest: /'
		fail=1
	else
		echo "ok   $name ($((SECONDS - t)) s): ${chk##*: }"
		grep -E '^UIWVM nic|offloads:|^check |link (down|up)|^ *port.link|RSS over|^engines of' "$out/$name.guest.log" |
			sed 's/^/    /'
		passed=$((passed + 1))
	fi
}

# --- the boots ----------------------------------------------------------------------------
b_virtio-vfio() {
	local g
	g=$(cat <<'EOF'
nic_bind $VIRTIO vfio-pci || exit 1
rmmod vfio_iommu_type1
expect_fail notype1 "modprobe vfio_iommu_type1" env UIWARP_CONFIG="$(nic_cfg $VIRTIO)" uiwarp-host -d 1
modprobe vfio_iommu_type1
export UIWARP_CONFIG="$(nic_cfg $VIRTIO mpa_crc=1)"
dropin_serve 150 siw_verbs -s $GUEST_IP --victim; echo ops-rc=$?
dropin_serve 150 rping -s -a $GUEST_IP -C 100 -S 64 -v -V > /tmp/rping.log; echo rping-rc=$? pings=$(grep -c 'ping data: rdma-ping-' /tmp/rping.log)
dropin_serve 150 ib_write_bw -R -s 65536 -n 100; echo perf-rc=$?
export UIWARP_CONFIG="$(nic_cfg $VIRTIO "mpa_crc=1; tx_zero_copy=1")"
UIWARP_STATS=1 dropin_serve 150 rping -s -a $GUEST_IP -C 100 -S 8192 -v -V > /tmp/rping.log; echo zc-rping-rc=$? pings=$(grep -c 'ping data: rdma-ping-' /tmp/rping.log)
export UIWARP_CONFIG="$(nic_cfg $VIRTIO "mpa_crc=0; tso=1")"
UIWARP_STATS=1 dropin_serve 150 ib_read_bw -R -s 65536 -n 100; echo perf-rc=$?
export UIWARP_CONFIG="$(nic_cfg $VIRTIO "mpa_crc=0; tso=1; tx_zero_copy=1")"
UIWARP_STATS=1 dropin_serve 300 rping -s -a $GUEST_IP -C 1000 -S 1024 -V; echo flap-rc=$?
EOF
)
	# The zero-copy steps: the guest's rping server Writes from its registered buffers,
	# which the NIC reads through the IOMMU (tx_zero_copy=1: the pages mapped at
	# ibv_reg_mr); the host's rping checks every octet, the second time through a link
	# that goes down for 3 s (the frames sent again are read from the buffers again).
	PERFS=2 CHECKS=$'ops-rc=0\nrping-rc=0 pings=100\nzc-rping-rc=0 pings=100\nflap-rc=0\ntcp.tx_tso_frames\nport.link_down  *1 \nport.link_up  *1 \n: link down: frames sent now are lost\n0000:00:04.0: up\nmpa.tx_lent_octets  *[1-9]' \
		run_boot virtio-vfio "$g" 1:c:ops_client 1:c:rping_client 1:c:write_bw 1:c:rping_client_big 0:c:read_bw 0:c:flap_client
}

b_e1000e-uio() {
	local g
	g=$(cat <<'EOF'
nic_bind $E1000E e1000e
expect_fail kernel "kernel driver 'e1000e' (interface eth" env UIWARP_CONFIG="$(nic_cfg $E1000E)" uiwarp-host -d 1
echo $E1000E > /sys/bus/pci/drivers/e1000e/unbind
expect_fail nodriver "has no driver: bind it to vfio-pci" env UIWARP_CONFIG="$(nic_cfg $E1000E)" uiwarp-host -d 1
nic_bind $E1000E uio_pci_generic || exit 1
expect_fail uio-nohuge "DMAs to physical addresses: that needs hugepages" env UIWARP_CONFIG="$(nic_cfg $E1000E hugepages=off)" uiwarp-host -d 1
umount /dev/hugepages
expect_fail nohuge "hugepages=on, but no 2 MiB hugepage is free or hugetlbfs is not mounted" env UIWARP_CONFIG="$(nic_cfg $E1000E)" uiwarp-host -d 1
mount -t hugetlbfs -o pagesize=2M nodev /dev/hugepages
expect_fail nodev "no PCI device 0000:00:09.0" env UIWARP_CONFIG="$(nic_cfg 0000:00:09.0)" uiwarp-host -d 1
export UIWARP_CONFIG="$(nic_cfg $E1000E mpa_crc=0)"
dropin_serve 150 siw_verbs -s $GUEST_IP --victim; echo ops-rc=$?
export UIWARP_CONFIG="$(nic_cfg $E1000E mpa_crc=1)"
uiw_await_go; timeout 150 env LD_LIBRARY_PATH=/uiw/dropin rping -c -a $PEER_IP -C 100 -S 64 -v -V > /tmp/rping.log; echo rping-rc=$? pings=$(grep -c 'ping data: rdma-ping-' /tmp/rping.log)
for try in 1 2; do
	dropin_serve 150 sh -c 'exec ib_send_bw -R -s 65536 -n 100 2>/tmp/perf.err'
	rc=$?
	cat /tmp/perf.err
	if [ $rc != 0 ] && [ $try = 1 ] && grep -q 'Correlation coefficient r^2' /tmp/perf.err; then
		echo "perf-calib: perftest could not calibrate its clock under emulation; once more"
		continue
	fi
	echo perf-rc=$rc
	break
done
UIWARP_STATS=1 tool_serve 200 uiwarp-scale --set "$(nic_cfg $E1000E "engines=2; mpa_crc=1")" --listen 18516 --qps 16 --once; echo scale-server-rc=$?
export UIWARP_CONFIG="$(nic_cfg $E1000E "mpa_crc=1; mtu=9000")"
uiw_await_go; timeout 150 env LD_LIBRARY_PATH=/uiw/dropin rping -c -a $PEER_IP -C 100 -S 32768 -v -V > /tmp/rping.log; echo jumbo-rping-rc=$? pings=$(grep -c 'ping data: rdma-ping-' /tmp/rping.log)
EOF
)
	# Two engines on the e1000e: DPDK's net_e1000_em gives two queue pairs but neither its
	# RSS key nor its table, so uiwarp hands segments that arrive on the other engine's
	# queue to it (net.hand_out); 16 QPs, every byte of each QP's check compared.
	# The e1000e's tap, and the bridge's port toward the host, carry jumbo frames; the
	# last step runs both ends at MTU 9000 and the capture must hold frames past 1514
	# octets from each.
	JUMBO_FROM=1 NICVM_E1000E_MTU=9000 PERFS=1 \
	CHECKS=$'ops-rc=0\nrping-rc=0 pings=100\njumbo-rping-rc=0 pings=100\ncheck kernel ok\ncheck nodriver ok\ncheck uio-nohuge ok\ncheck nohuge ok\ncheck nodev ok\n0000:00:05.0: up\n0000:00:05.0: up, .*MTU 9000\nscale-server-rc=0\nnet_e1000_em picks a frame.s queue itself and does not tell how\nengines of the server: connections [1-9][0-9]* [1-9]\nhand_out  *[1-9]' \
		run_boot e1000e-uio "$g" 0:c:ops_client 1:s:rping_server 1:c:send_bw 1:c:scale_client_16 1:s:rping_server_jumbo
}

# The virtio NIC with two queue pairs and RSS, uiwarp in the guest with two engines (one
# queue pair each): connections the host opens are spread by the NIC's hash, connections
# the guest opens take source ports that the NIC's hash brings back to their own engine.
# Either way no segment may come in on the other engine's queue (no net.hand_out). Then
# perftest with 4 QPs on the drop-in, whose second engine has a thread of its own.
b_virtio-rss() {
	local g
	g=$(cat <<'EOF'
nic_bind $VIRTIO vfio-pci || exit 1
cfg="$(nic_cfg $VIRTIO "engines=2; mpa_crc=1")"
UIWARP_STATS=1 tool_serve 200 uiwarp-scale --set "$cfg" --listen 18516 --qps 64 --once; echo scale-server-rc=$?
uiw_await_go; UIWARP_STATS=1 timeout 200 uiwarp-scale --set "$cfg" --connect $PEER_IP:18516 --qps 64 --bw-iters 40 --rate-iters 500; echo scale-client-rc=$?
UIWARP_CONFIG="$cfg" UIWARP_STATS=1 dropin_serve 150 ib_write_bw -R -q 4 -s 65536 -n 20; echo perf-rc=$?
EOF
)
	NICVM_QUEUES=2 NO_TERMINATE=1 PERFS=1 \
	CHECKS=$'scale-server-rc=0\nscale-client-rc=0\nRSS over 2 queue pairs\nengines of the server: connections [1-9][0-9]* [1-9]\nengines of A: connections [1-9][0-9]* [1-9]\n64 of 64 QPs passed' \
	NOCHECKS=$'hand_out  *[1-9]\nhand_drop[a-z_]*  *[1-9]' \
		run_boot virtio-rss "$g" 1:c:scale_client 1:s:scale_server 1:c:write_bw_q4
}

# Linux siw in the siw guest (tests/interop/siwvm.sh, at $G) serves; the NIC guest (at
# 10.77.0.12) opens from its virtio NIC: siw_verbs (siw is the victim and Terminates),
# then Debian's rping on the drop-in, 100 iterations verified, CRC on. Two guests at once.
b_virtio-siw() {
	local t=$SECONDS why="" siw_pid nic_pid i nrc src
	local cap=$out/virtio-siw.pcapng
	siwvm_capture_start "$cap"
	# Jumbo frames: both guests' virtio NICs, their taps and Linux's eth0 at MTU 9000.
	SIWVM_MTU=9000 SIWVM_FILES=$siw_verbs siwvm_boot siw "" 500 'uiw_serve timeout 240 siw_verbs -s $GUEST_IP --victim; echo ops-rc=$?
uiw_serve timeout 240 rping -s -a $GUEST_IP -C 100 -S 32768 -v -V; echo rping-rc=$?'
	siw_pid=$SIWVM_QEMU_PID
	NICVM_PIDS="${NICVM_PIDS:-} $siw_pid"
	NICVM_MTU=9000 NICVM_GUEST_IP=10.77.0.12 NICVM_PEER_IP=$G nicvm_boot nic 500 'nic_bind $VIRTIO vfio-pci || exit 1
export UIWARP_CONFIG="$(nic_cfg $VIRTIO "mpa_crc=1; mpa_initiator_delay_us=20000; mtu=9000")"
uiw_await_go; timeout 240 env LD_LIBRARY_PATH=/uiw/dropin siw_verbs -c $PEER_IP --provoke; echo ops-rc=$?
uiw_await_go; timeout 240 env LD_LIBRARY_PATH=/uiw/dropin rping -c -a $PEER_IP -C 100 -S 32768 -v -V; echo rping-rc=$?'
	nic_pid=$SIWVM_QEMU_PID
	vm() { SIWVM_GUEST=$1; if [ "$1" = siw ]; then SIWVM_QEMU_PID=$siw_pid; else SIWVM_QEMU_PID=$nic_pid; fi; }
	vm nic
	siwvm_wait_line '^UIWVM ready' 1 300 || why="the NIC guest did not come up"
	for i in 1 2; do
		[ -z "$why" ] || break
		vm siw
		siwvm_wait_listen "$i" 300 || { why="siw's server $i never listened"; break; }
		vm nic
		nicvm_go "$i" || { why="the NIC guest took no go"; break; }
		siwvm_wait_line '^(ops|rping)-rc=' "$i" 300 || why="the NIC guest's step $i never ended"
	done
	vm nic
	siwvm_wait
	nrc=$?
	siwvm_console >"$out/virtio-siw.nic.log"
	vm siw
	siwvm_wait
	src=$?
	siwvm_console >"$out/virtio-siw.siw.log"
	siwvm_capture_stop
	[ $nrc = 0 ] || why="${why:+$why; }NIC guest rc $nrc"
	[ $src = 0 ] || why="${why:+$why; }siw guest rc $src"
	local f p
	for f in nic siw; do
		for p in 'ops-rc=0' 'rping-rc=0' 'siw_verbs: .*: PASS'; do
			grep -q "$p" "$out/virtio-siw.$f.log" || why="${why:+$why; }the $f guest's log lacks '$p'"
		done
		[ "$(grep -c 'ping data: rdma-ping-' "$out/virtio-siw.$f.log")" -ge 100 ] ||
			why="${why:+$why; }rping in the $f guest printed fewer than 100 pings"
	done
	local chk jn js
	check_capture virtio-siw "$cap" siw
	# Frames past 1514 octets from each side: the NICs carried jumbo frames both ways.
	jn=$(tshark -r "$cap" -Y "ip.src == 10.77.0.12 && frame.len > 1514" 2>/dev/null | wc -l)
	js=$(tshark -r "$cap" -Y "ip.src == $G && frame.len > 1514" 2>/dev/null | wc -l)
	[ "$jn" -gt 0 ] && [ "$js" -gt 0 ] ||
		why="${why:+$why; }no jumbo frames (from uiwarp $jn, from siw $js)"
	if [ -n "$why" ]; then
		echo "FAIL virtio-siw ($((SECONDS - t)) s): $why"
		grep -v '^\[' "$out/virtio-siw.nic.log" | tail -15 | sed 's/^/    nic guest: /'
		grep -v '^\[' "$out/virtio-siw.siw.log" | tail -15 | sed 's/^/    siw guest: /'
		fail=1
	else
		echo "ok   virtio-siw ($((SECONDS - t)) s): MTU 9000, $jn jumbo frames from uiwarp, $js from siw; ${chk##*: }"
		passed=$((passed + 1))
	fi
}

boots=("$@")
[ ${#boots[@]} -gt 0 ] || boots=(virtio-vfio e1000e-uio virtio-siw virtio-rss)
for b in "${boots[@]}"; do
	"b_$b"
done
echo "nic: $passed passed, $((${#boots[@]} - passed)) failed in $((SECONDS - t0)) s"
[ $fail = 0 ] && [ $passed = ${#boots[@]} ]
