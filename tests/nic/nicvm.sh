#!/usr/bin/env bash
# uiwarp on emulated PCI NICs in a QEMU guest, driven by DPDK's ordinary PCI PMDs, as a user
# with a real NIC runs it.
#
# The guest shares the siw guest's kernel (tests/interop/siwvm.sh: Debian 12's own kernel,
# downloaded and unpacked, never installed). It is a q35 machine with a virtual Intel IOMMU
# and two NICs on the namespace's bridge:
#   0000:00:04.0  virtio-net-pci (modern only, behind the IOMMU; tap with vnet_hdr, so it
#                 offers checksum and TSO offloads), DPDK's net_virtio
#   0000:00:05.0  e1000e (82574L), DPDK's net_e1000_em
# With NICVM_QUEUES=N (N > 1) the virtio NIC has N queue pairs and RSS (QEMU's software
# RSS, with a multi-queue tap).
# 256 2 MiB hugepages are reserved at boot and mounted on /dev/hugepages. The guest has
# vfio-pci (with the IOMMU: IOVA as VA) and uio_pci_generic (IOMMU in passthrough: IOVA as
# PA), and the NICs' kernel drivers (virtio_net, e1000e), which nothing loads unless a
# command asks.
#
# Its user space: busybox; uiwarp's drop-in libraries (/uiw/dropin) with the DPDK libraries
# they link and the PMD plugins a PCI NIC needs; the programs given in NICVM_FILES (in
# /uiw/bin); Debian's rping and perftest.
#
# As a command:
#   nicvm.sh run DROPIN_DIR 'GUEST COMMAND'   one guest, its console on stdout
# As a library (source it): nicvm_build DROPIN_DIR, nicvm_boot NAME TIMEOUT CMD, and the
#   siwvm_* network, capture and wait helpers (siwvm_net_up, siwvm_wait, ...).
#
# Inside the guest, commands may use:
#   nic_bind ADDR DRIVER   hand the PCI function ADDR to DRIVER (vfio-pci, uio_pci_generic,
#                          e1000e, virtio-pci), unbinding it from any other first
#   nic_cfg ADDR [KEYS]    a UIWARP_CONFIG for the NIC at ADDR with the guest's address
#   dropin CMD...          CMD on uiwarp's drop-in libraries
#   dropin_serve SECS CMD  CMD as a server on them (prints "UIWVM listening N")
#   tool_serve SECS CMD    the same for a uiwarp tool (NICVM_FILES), which says it listens
#   expect_fail NAME PAT CMD  CMD must fail, printing PAT: "check NAME ok" or "... FAIL"
#   uiw_serve, uiw_await_go, $GUEST_IP, $PEER_IP as in siwvm.sh
unset LD_LIBRARY_PATH LD_PRELOAD

NICVM_SELF=$(readlink -f "${BASH_SOURCE[0]}")
. "$(dirname "$NICVM_SELF")/../interop/siwvm.sh"

: "${NICVM_MEM:=1536}"
: "${NICVM_HUGEPAGES:=256}"
NICVM_VIRTIO=0000:00:04.0
NICVM_E1000E=0000:00:05.0

# The PMD plugins the EAL loads from its plugin directory (all of its files): the PCI bus,
# the mempool handler and the two NICs' drivers.
NICVM_PLUGINS=(bus_pci bus_vdev mempool_ring net_virtio net_e1000)

nicvm_init_script() {
	cat <<'EOF'
#!/bin/sh
export PATH=/usr/sbin:/usr/bin HOME=/tmp
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t tmpfs tmpfs /tmp
mkdir -p /dev/hugepages /run /var
ln -s /run /var/run
mount -t hugetlbfs -o pagesize=2M nodev /dev/hugepages
. /uiw/env
say() { echo "UIWVM $* (uptime $(cut -d' ' -f1 /proc/uptime) s)"; }
die() { say "failed: $*"; echo "UIWVM rc=255"; poweroff -f; }
modprobe vfio-pci && modprobe vfio_iommu_type1 || die "vfio-pci"
modprobe uio_pci_generic || die "uio_pci_generic"
ip link set lo up
echo "UIWVM hugepages: $(grep -E 'HugePages_(Total|Free)' /proc/meminfo | tr -s ' ' | tr '\n' ' ')"
echo "UIWVM iommu groups: $(ls /sys/kernel/iommu_groups 2>/dev/null | wc -l)"
for d in /sys/bus/pci/devices/*; do
	c=$(cat $d/class)
	case $c in 0x02*) echo "UIWVM nic ${d##*/} vendor $(cat $d/vendor) device $(cat $d/device) driver $(basename $(readlink $d/driver 2>/dev/null) 2>/dev/null)";; esac
done
say ready
cd /tmp
( sleep "$GUEST_TIMEOUT"
  say "timeout after $GUEST_TIMEOUT s"
  ps; dmesg | tail -20
  echo "UIWVM rc=124"; poweroff -f ) &
sh /uiw/cmd.sh
echo "UIWVM rc=$?"
poweroff -f
EOF
}

nicvm_guest_lib() {
	cat <<'EOF'
nic_bind() {
	local d=/sys/bus/pci/devices/$1
	[ -e "$d" ] || { echo "nic_bind: no PCI function $1"; return 1; }
	modprobe "$(echo "$2" | tr - _)" 2>/dev/null
	if [ -e "$d/driver" ]; then echo "$1" > "$d/driver/unbind" || return 1; fi
	echo "$2" > "$d/driver_override"
	echo "$1" > /sys/bus/pci/drivers_probe
	echo "" > "$d/driver_override"
	[ "$(basename "$(readlink "$d/driver")")" = "$2" ] || { echo "nic_bind: $1 did not bind to $2"; dmesg | tail -5; return 1; }
	echo "nic_bind: $1 on $2"
}
nic_cfg() { echo "port=$1; ip=$GUEST_IP/24; hugepages=on${2:+; $2}"; }
dropin() { LD_LIBRARY_PATH=/uiw/dropin "$@"; }
# dropin_serve SECS CMD...: CMD on the drop-in libraries as a server, killed after SECS;
# prints "UIWVM listening N" once uiwarp-stat shows it listening (N counts servers), then
# waits for it and returns its status.
dropin_serve() {
	local secs=$1 n=0 pid killer rc
	shift
	env LD_LIBRARY_PATH=/uiw/dropin "$@" &
	pid=$!
	( sleep "$secs"; kill $pid 2>/dev/null && echo "dropin_serve: $1 killed after $secs s" ) &
	killer=$!
	while kill -0 $pid 2>/dev/null && [ $n -lt 300 ]; do
		uiwarp-stat $pid 2>/dev/null | grep -q '^listen ' && break
		usleep 100000; n=$((n + 1))
	done
	UIW_SERVED=$((UIW_SERVED + 1))
	echo "UIWVM listening $UIW_SERVED" >&2   # to the console, whatever stdout is
	wait $pid
	rc=$?
	kill $killer 2>/dev/null
	return $rc
}
# tool_serve SECS CMD...: a uiwarp tool (not the drop-in) as a server, killed after SECS;
# prints "UIWVM listening N" once the tool says it listens (N counts servers, with
# dropin_serve's), then waits for it, prints its output and returns its status.
tool_serve() {
	local secs=$1 n=0 pid killer rc
	shift
	"$@" > /tmp/tool_serve.out 2>&1 &
	pid=$!
	( sleep "$secs"; kill $pid 2>/dev/null && echo "tool_serve: $1 killed after $secs s" ) &
	killer=$!
	while kill -0 $pid 2>/dev/null && [ $n -lt 300 ] && ! grep -q 'listening on port' /tmp/tool_serve.out; do
		usleep 100000; n=$((n + 1))
	done
	UIW_SERVED=$((UIW_SERVED + 1))
	echo "UIWVM listening $UIW_SERVED" >&2
	wait $pid
	rc=$?
	kill $killer 2>/dev/null
	cat /tmp/tool_serve.out
	return $rc
}
# uiw_await_go: as siwvm.sh's, but the serial port is open before "UIWVM awaiting go N" is
# printed (N counts them), and the host sends "go" only after that line (nicvm_go): a line
# that comes while nothing has the port open is lost.
UIW_AWAITS=0
uiw_await_go() {
	local line
	exec 3</dev/ttyS1
	stty -F /dev/ttyS1 raw -echo 2>/dev/null
	UIW_AWAITS=$((UIW_AWAITS + 1))
	echo "UIWVM awaiting go $UIW_AWAITS" >&2
	while read -r line <&3; do case "$line" in go*) exec 3<&-; return 0;; esac; done
	exec 3<&-
	return 1
}
# expect_fail NAME 'PATTERN' CMD...: CMD must fail at once, saying PATTERN.
expect_fail() {
	local name=$1 pat=$2 rc
	shift 2
	timeout 60 "$@" > /tmp/out.$name 2>&1
	rc=$?
	if [ $rc != 0 ] && [ $rc != 124 ] && grep -q "$pat" /tmp/out.$name; then
		echo "check $name ok: $(grep "$pat" /tmp/out.$name | head -1)"
	else
		echo "check $name FAIL (rc $rc):"; cat /tmp/out.$name
	fi
}
EOF
}

# nicvm_build DROPIN_DIR: the guest's initramfs for this run (the kernel and its modules
# come from siwvm_build's cache). Sets NICVM_KERNEL and NICVM_INITRD.
nicvm_build() {
	local dropin=$1 t0=$SECONDS
	siwvm_build || return 1
	local k
	k=$(cat "$UIWARP_SIW_CACHE/kabi")
	NICVM_KERNEL=$SIWVM_KERNEL
	NICVM_DIR=$(mktemp -d /tmp/uiw-nicvm.XXXXXX)
	siwvm_stage_begin "$NICVM_DIR/stage" "$k" vfio-pci vfio_iommu_type1 uio_pci_generic e1000e \
		virtio_pci virtio_net
	mkdir -p "$SIWVM_STAGE"/uiw/{bin,dropin}
	local b m f bins=()
	for b in rping ib_write_bw ib_read_bw ib_send_bw ib_write_lat ip kmod; do
		bins+=("$(command -v "$b")") || { siwvm_log "$b not found"; return 1; }
	done
	siwvm_stage "${bins[@]}" "$dropin"/libibverbs.so.1 "$dropin"/librdmacm.so.1 ${NICVM_FILES:-}
	siwvm_stage "$(ldconfig -p | awk '/libgcc_s\.so\.1 .*x86-64/ { print $NF; exit }')"
	# The drop-in libraries under their sonames, apart from the system's.
	for f in "$dropin"/lib*.so.[0-9]; do cp -L "$f" "$SIWVM_STAGE/uiw/dropin/"; done
	for f in ${NICVM_FILES:-}; do cp -L "$f" "$SIWVM_STAGE/uiw/bin/"; done
	local plugdir
	plugdir=$(ls -d /usr/lib/x86_64-linux-gnu/dpdk/pmds-* | tail -1)
	mkdir -p "$SIWVM_STAGE$plugdir"
	# Each plugin a link to the library the programs link, as in Debian's packages: the
	# dynamic loader must see one file, or the EAL registers the bus twice and panics.
	for m in "${NICVM_PLUGINS[@]}"; do
		siwvm_stage "/usr/lib/x86_64-linux-gnu/librte_$m.so.23"
		ln -s "../../librte_$m.so.23" "$SIWVM_STAGE$plugdir/librte_$m.so"
	done
	siwvm_stage_end
	nicvm_init_script >"$SIWVM_STAGE/init"
	chmod 755 "$SIWVM_STAGE/init"
	{
		siwvm_guest_lib
		nicvm_guest_lib
	} >"$SIWVM_STAGE/uiw/lib.sh"
	NICVM_INITRD=$NICVM_DIR/initrd.cpio
	(cd "$SIWVM_STAGE" && find . -print0 | LC_ALL=C sort -z | cpio --null -o -H newc --quiet -R 0:0) >"$NICVM_INITRD"
	rm -rf "$SIWVM_STAGE"
	siwvm_log "built the NIC guest for $k in $((SECONDS - t0)) s ($(du -h "$NICVM_INITRD" | cut -f1) initramfs)"
}

# nicvm_boot NAME TIMEOUT_S 'COMMAND': starts the guest in the background (after
# siwvm_net_up); the console goes to $SIWVM_RUNDIR/NAME/console, QEMU's monitor listens
# on $SIWVM_RUNDIR/NAME/monitor (a unix socket: nicvm_monitor). The guest's uiwarp has
# NICVM_GUEST_IP (default SIWVM_GUEST_IP) and its peer is NICVM_PEER_IP (SIWVM_PEER_IP,
# uiwarp on the host). With a siw guest on the bridge as well, siwvm_boot's globals
# (SIWVM_GUEST, SIWVM_QEMU_PID) name whichever was booted last: save and switch them.
nicvm_boot() {
	local name=$1 timeout=$2 cmd=$3 d=$SIWVM_RUNDIR/$1 i tap
	SIWVM_COUNT=$((SIWVM_COUNT + 1))
	rm -rf "$d"
	mkdir -p "$d/ovl/uiw"
	for i in 0 1; do
		tap=uiwnic$SIWVM_COUNT$i
		# The virtio NIC's tap has a queue per queue pair the guest may use (NICVM_QUEUES).
		ip -n "$SIWVM_NS" tuntap add dev "$tap" mode tap vnet_hdr \
			$([ "$i" = 0 ] && [ "${NICVM_QUEUES:-1}" -gt 1 ] && echo multi_queue) || return 1
		# NICVM_MTU: the virtio NIC's tap (and the device's host_mtu); NICVM_E1000E_MTU: the
		# e1000e's tap (the e1000e has no such property: the guest sets its own).
		[ "$i" = 1 ] || [ -z "${NICVM_MTU:-}" ] || ip -n "$SIWVM_NS" link set "$tap" mtu "$NICVM_MTU"
		[ "$i" = 0 ] || [ -z "${NICVM_E1000E_MTU:-}" ] || ip -n "$SIWVM_NS" link set "$tap" mtu "$NICVM_E1000E_MTU"
		ip -n "$SIWVM_NS" link set "$tap" master br0 up
	done
	{
		echo "GUEST_TIMEOUT=$timeout"
		echo "GUEST_IP=${NICVM_GUEST_IP:-$SIWVM_GUEST_IP}"
		echo "PEER_IP=${NICVM_PEER_IP:-$SIWVM_PEER_IP}"
		echo "VIRTIO=$NICVM_VIRTIO"
		echo "E1000E=$NICVM_E1000E"
		echo "export GUEST_IP PEER_IP VIRTIO E1000E"
	} >"$d/ovl/uiw/env"
	{
		echo ". /uiw/lib.sh"
		printf '%s\n' "$cmd"
	} >"$d/ovl/uiw/cmd.sh"
	(cd "$d/ovl" && find . | cpio -o -H newc --quiet -R 0:0) >"$d/ovl.cpio"
	cat "$NICVM_INITRD" "$d/ovl.cpio" >"$d/initrd"
	mkfifo "$d/ctl.in" "$d/ctl.out"
	: >"$d/console"
	local mac=52:54:00:77:01 mq_netdev="" mq_device=""
	# NICVM_QUEUES > 1: the virtio NIC has that many queue pairs and offers RSS (QEMU's
	# software RSS: the device hashes each frame and picks its queue by the guest's key and
	# table, as a NIC does).
	if [ "${NICVM_QUEUES:-1}" -gt 1 ]; then
		mq_netdev=",queues=$NICVM_QUEUES"
		mq_device=",mq=on,rss=on,vectors=$((2 * NICVM_QUEUES + 2))"
	fi
	ip netns exec "$SIWVM_NS" timeout -k 5 $((timeout + 90)) qemu-system-x86_64 -accel tcg -M q35 -cpu max \
		-smp 2 -m "$NICVM_MEM" -nodefaults -no-user-config -display none -no-reboot \
		-device intel-iommu,aw-bits=48 \
		-kernel "$NICVM_KERNEL" -initrd "$d/initrd" \
		-append "console=ttyS0,115200 quiet loglevel=4 panic=1 mitigations=off nokaslr ipv6.disable=1 intel_iommu=on iommu=pt hugepagesz=2M hugepages=$NICVM_HUGEPAGES" \
		-netdev "tap,id=n0,ifname=uiwnic${SIWVM_COUNT}0,script=no,downscript=no,vnet_hdr=on$mq_netdev" \
		-device "virtio-net-pci,netdev=n0,mac=$mac:04,addr=04.0,disable-legacy=on,iommu_platform=on,ats=on${NICVM_MTU:+,host_mtu=$NICVM_MTU}$mq_device,romfile=" \
		-netdev "tap,id=n1,ifname=uiwnic${SIWVM_COUNT}1,script=no,downscript=no,vnet_hdr=off" \
		-device "e1000e,netdev=n1,mac=$mac:05,addr=05.0,romfile=" \
		-serial "file:$d/console" -serial "pipe:$d/ctl" \
		-monitor "unix:$d/monitor,server=on,wait=off" </dev/null >"$d/qemu.out" 2>&1 &
	SIWVM_QEMU_PID=$!
	SIWVM_GUEST=$name
	NICVM_PIDS="${NICVM_PIDS:-} $SIWVM_QEMU_PID"
}

# nicvm_go N: once the guest's Nth uiw_await_go waits, releases it.
nicvm_go() { siwvm_wait_line "^UIWVM awaiting go $1\$" 1 "${2:-300}" && siwvm_go; }

# nicvm_monitor 'COMMAND': a QEMU monitor command to the running guest.
nicvm_monitor() {
	printf '%s\n' "$1" | ip netns exec "$SIWVM_NS" timeout 5 python3 -c '
import socket, sys, time
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); time.sleep(0.2)
s.sendall(sys.stdin.buffer.read()); time.sleep(0.3); s.close()' "$SIWVM_RUNDIR/$SIWVM_GUEST/monitor"
}

nicvm_cleanup() {
	local p
	for p in ${NICVM_PIDS:-}; do kill "$p" 2>/dev/null && wait "$p" 2>/dev/null; done
	siwvm_cleanup
	[ -n "${NICVM_DIR:-}" ] && rm -rf "$NICVM_DIR"
	NICVM_DIR=""
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
	set -u
	[ "$(id -u)" = 0 ] || { echo "nicvm.sh: needs root" >&2; exit 1; }
	case ${1:-} in
	run)
		nicvm_build "$2" || exit 1
		trap nicvm_cleanup EXIT
		siwvm_net_up "uiwnic$$" || exit 1
		nicvm_boot run "${GUEST_TIMEOUT:-300}" "${3:-lspci}"
		siwvm_wait
		rc=$?
		siwvm_console
		exit $rc
		;;
	*)
		sed -n '2,30p' "$NICVM_SELF" | sed 's/^# \{0,1\}//'
		exit 2
		;;
	esac
fi
