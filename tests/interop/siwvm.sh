#!/usr/bin/env bash
# The Linux kernel's soft-iWARP (siw) in a QEMU guest, for interop tests against uiwarp.
#
# The guest runs Debian 12's own kernel (6.1, from the package registry) under software
# emulation. Debian builds that kernel without siw, so siw.ko is built here from the
# matching linux-source package against the matching headers, out of tree. The guest's
# user space is busybox plus Debian's rdma-core tools (rping, perftest, ...) and their
# libraries, copied from this machine into an initramfs.
#
# Everything on the network side lives in a namespace made here: a bridge with the
# guest's tap and a veth whose other end (uiw0) is where uiwarp attaches (af_packet).
#
# As a command:
#   siwvm.sh build                     install packages, fetch, build (cached; ~1 min cold)
#   siwvm.sh run 'GUEST COMMAND'       one guest, the command's output on stdout
# As a library (source it): siwvm_build, siwvm_net_up, siwvm_boot, siwvm_wait_listen,
#   siwvm_go, siwvm_wait, siwvm_capture_start/stop, siwvm_cleanup (see each below).
#
# Inside the guest, commands may use:
#   uiw_serve CMD...   run a server; print "UIWVM listening N" once it has an RDMA CM
#                      listener (N counts servers), then wait for it
#   uiw_await_go       wait until the host says go (siwvm_go)
#   $GUEST_IP $PEER_IP the guest's and uiwarp's addresses
#
# Environment: UIWARP_SIW_CACHE (/var/tmp/uiwarp-siw), UIWARP_SIW_KABI (pin a kernel ABI,
# e.g. 6.1.0-57-amd64), SIWVM_GUEST_IP (10.77.0.11), SIWVM_PEER_IP (10.77.0.5),
# SIWVM_BRIDGE_IP (10.77.0.1).

# The guest's programs and their libraries are copied from this machine as ldd finds
# them, and dumpcap's libpcap links libibverbs: none of it may see uiwarp's drop-in
# libraries (meson test puts them on LD_LIBRARY_PATH). Host programs that should use
# them are given the path explicitly.
unset LD_LIBRARY_PATH LD_PRELOAD

: "${UIWARP_SIW_CACHE:=/var/tmp/uiwarp-siw}"
: "${SIWVM_GUEST_IP:=10.77.0.11}"
: "${SIWVM_PEER_IP:=10.77.0.5}"
: "${SIWVM_BRIDGE_IP:=10.77.0.1}"
SIWVM_SELF=$(readlink -f "${BASH_SOURCE[0]}")
SIWVM_NS=""
SIWVM_RUNDIR=""
SIWVM_QEMU_PID=""
SIWVM_CAP_PID=""
SIWVM_COUNT=0

siwvm_log() { printf '[siwvm %(%H:%M:%S)T] %s\n' -1 "$*" >&2; }

# Debian packages the build and the guest need (host side; nothing is installed from
# elsewhere, the kernel packages are only downloaded and unpacked).
SIWVM_PACKAGES=(qemu-system-x86 busybox-static kmod cpio xz-utils binutils make gcc libc6-dev
	libelf-dev rdma-core ibverbs-providers ibverbs-utils rdmacm-utils perftest iproute2
	tshark ethtool)

siwvm_install() {
	local p missing=()
	for p in "${SIWVM_PACKAGES[@]}"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	siwvm_log "apt-get install ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get -o DPkg::Lock::Timeout=600 update -q >/dev/null || true
	apt-get -o DPkg::Lock::Timeout=600 install -y -q --no-install-recommends "${missing[@]}" >/dev/null
}

# The kernel ABI linux-image-amd64 depends on now (for example 6.1.0-57-amd64).
siwvm_kabi() {
	local k=${UIWARP_SIW_KABI:-}
	[ -n "$k" ] && { echo "$k"; return; }
	k=$(apt-cache depends linux-image-amd64 2>/dev/null | sed -n 's/.*Depends: linux-image-\([0-9].*\)/\1/p' | head -1)
	if [ -z "$k" ]; then
		apt-get -o DPkg::Lock::Timeout=600 update -q >/dev/null 2>&1
		k=$(apt-cache depends linux-image-amd64 2>/dev/null | sed -n 's/.*Depends: linux-image-\([0-9].*\)/\1/p' | head -1)
	fi
	echo "$k"
}

# Downloads (not installs) the kernel image, its headers and the kernel source.
siwvm_fetch() {
	local k=$1 ver series common debs=$UIWARP_SIW_CACHE/debs p
	series=${k%%-*}
	series=${series%.*}
	ver=$(apt-cache policy "linux-image-$k" | sed -n 's/ *Candidate: //p')
	common=$(apt-cache depends "linux-headers-$k" | sed -n 's/.*Depends: \(linux-headers-.*-common\)$/\1/p' | head -1)
	[ -n "$ver" ] && [ -n "$common" ] || { siwvm_log "cannot resolve the packages of $k"; return 1; }
	mkdir -p "$debs"
	chmod 755 "$debs"
	local want=("linux-image-$k=$ver" "linux-headers-$k=$ver" "$common=$ver" "linux-kbuild-$series")
	if apt-cache madison "linux-source-$series" | grep -q " $ver "; then
		want+=("linux-source-$series=$ver")
	else
		want+=("linux-source-$series")
	fi
	for p in "${want[@]}"; do
		ls "$debs/${p%%=*}_"*.deb >/dev/null 2>&1 && continue
		siwvm_log "apt-get download ${p}"
		(cd "$debs" && apt-get -o DPkg::Lock::Timeout=600 download "$p" >/dev/null 2>&1) ||
			{ siwvm_log "download of $p failed"; return 1; }
	done
}

# siw.ko from linux-source, built against the unpacked headers; 6.1 keeps siw's protocol
# switches as compile-time constants, which become module parameters here (same defaults)
# so that a test can ask for CRC, MPA revision 1 or peer-to-peer.
siwvm_build_siw() {
	local k=$1 series kd root src hdr
	series=${k%%-*}
	series=${series%.*}
	kd=$UIWARP_SIW_CACHE/kernel-$k
	root=$kd/root
	[ -f "$kd/siw.done" ] && return 0
	rm -rf "$kd"
	mkdir -p "$kd"
	dpkg-deb -x "$UIWARP_SIW_CACHE"/debs/linux-image-"$k"_*.deb "$root"
	for p in "$UIWARP_SIW_CACHE"/debs/linux-headers-*_*.deb "$UIWARP_SIW_CACHE"/debs/linux-kbuild-"$series"_*.deb; do
		dpkg-deb -x "$p" "$kd/hdr"
	done
	hdr=$kd/hdr/usr/src/linux-headers-$k
	# The flavour's Makefile includes the common tree by its installed absolute path.
	sed -i "s|^include /usr/src/|include $kd/hdr/usr/src/|" "$hdr/Makefile"
	dpkg-deb --fsys-tarfile "$UIWARP_SIW_CACHE"/debs/linux-source-"$series"_*.deb |
		tar -xO "./usr/src/linux-source-$series.tar.xz" |
		tar -xJ -C "$kd" "linux-source-$series/drivers/infiniband/sw/siw" || return 1
	src=$kd/siw
	mv "$kd/linux-source-$series/drivers/infiniband/sw/siw" "$src"
	rm -rf "$kd/linux-source-$series"
	local knob n
	for knob in mpa_crc_required mpa_crc_strict peer_to_peer zcopy_tx try_gso siw_tcp_nagle loopback_enabled; do
		sed -i "s/^extern const bool $knob;/extern bool $knob;/" "$src/siw.h"
		sed -i -E "s/^const bool $knob( = (true|false))?;/bool $knob\\1;\\nmodule_param($knob, bool, 0644);/" "$src/siw_main.c"
	done
	sed -i -E 's/^(u_char mpa_version = MPA_REVISION_2;)/\1\nmodule_param(mpa_version, byte, 0644);/' "$src/siw_main.c"
	n=$(grep -c '^module_param(' "$src/siw_main.c")
	[ "$n" = 8 ] || { siwvm_log "siw's switches: $n of 8 made parameters"; return 1; }
	make -s -C "$hdr" M="$src" CONFIG_RDMA_SIW=m modules -j"$(nproc)" >"$kd/make.log" 2>&1 ||
		{ tail -20 "$kd/make.log" >&2; return 1; }
	strip --strip-debug "$src/siw.ko"
	mkdir -p "$root/lib/modules/$k/updates"
	cp "$src/siw.ko" "$root/lib/modules/$k/updates/"
	depmod -b "$root" "$k"
	touch "$kd/siw.done"
}

# Copies FILE (and, with libs, its shared libraries) into the staging tree.
siwvm_stage() {
	local f dst lib
	for f in "$@"; do
		dst=$SIWVM_STAGE$(readlink -f "$(dirname "$f")")/$(basename "$f")
		[ -e "$dst" ] && continue
		mkdir -p "$(dirname "$dst")"
		cp -L "$f" "$dst"
		for lib in $(ldd "$f" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }'); do
			siwvm_stage "$lib"
		done
	done
}

# siwvm_stage_begin DIR KABI MODULE...: a new staging tree in DIR (SIWVM_STAGE): the
# usr-merged directories, the modules named and those they depend on from the unpacked
# kernel of KABI, and busybox.
siwvm_stage_begin() {
	local k=$2 root=$UIWARP_SIW_CACHE/kernel-$2/root m f
	SIWVM_STAGE=$1
	shift 2
	rm -rf "$SIWVM_STAGE"
	mkdir -p "$SIWVM_STAGE"/usr/{bin,sbin,lib,lib64} "$SIWVM_STAGE"/{proc,sys,dev,tmp,etc,uiw}
	ln -s usr/bin "$SIWVM_STAGE/bin"
	ln -s usr/sbin "$SIWVM_STAGE/sbin"
	ln -s usr/lib "$SIWVM_STAGE/lib"
	ln -s usr/lib64 "$SIWVM_STAGE/lib64"
	local md=$SIWVM_STAGE/usr/lib/modules/$k
	mkdir -p "$md"
	cp "$root/lib/modules/$k"/modules.{order,builtin,builtin.modinfo} "$md/"
	for m in "$@"; do
		for f in $(modprobe -d "$root" -S "$k" --show-depends "$m" | awk '$1 == "insmod" { print $2 }'); do
			mkdir -p "$md/$(dirname "${f#"$root/lib/modules/$k/"}")"
			cp "$f" "$md/${f#"$root/lib/modules/$k/"}"
		done
	done
	depmod -b "$SIWVM_STAGE" "$k"
	cp /bin/busybox "$SIWVM_STAGE/usr/bin/"
}

# siwvm_stage_end: the staging tree's commands (kmod's and busybox's names), users, hosts
# and the dynamic loader's cache.
siwvm_stage_end() {
	local b
	for b in modprobe insmod lsmod depmod; do ln -s kmod "$SIWVM_STAGE/usr/bin/$b"; done
	for b in $("$SIWVM_STAGE/usr/bin/busybox" --list); do
		[ -e "$SIWVM_STAGE/usr/bin/$b" ] || ln -s busybox "$SIWVM_STAGE/usr/bin/$b"
	done
	echo 'root:x:0:0:root:/tmp:/bin/sh' >"$SIWVM_STAGE/etc/passwd"
	echo '127.0.0.1 localhost' >"$SIWVM_STAGE/etc/hosts"
	echo 'hosts: files' >"$SIWVM_STAGE/etc/nsswitch.conf"
	echo /usr/lib/x86_64-linux-gnu >"$SIWVM_STAGE/etc/ld.so.conf"
	ldconfig -r "$SIWVM_STAGE" 2>/dev/null
}

siwvm_init_script() {
	cat <<'EOF'
#!/bin/sh
export PATH=/usr/sbin:/usr/bin HOME=/tmp
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t tmpfs tmpfs /tmp
. /uiw/env
say() { echo "UIWVM $* (uptime $(cut -d' ' -f1 /proc/uptime) s)"; }
die() { say "failed: $*"; echo "UIWVM rc=255"; poweroff -f; }
modprobe virtio_pci && modprobe virtio_net || die "virtio_net"
modprobe crc32c_generic
modprobe siw $SIW_PARAMS || die "modprobe siw $SIW_PARAMS"
modprobe rdma_ucm && modprobe ib_uverbs || die "rdma_ucm"
n=0
while [ ! -e /sys/class/net/eth0 ] && [ $n -lt 100 ]; do usleep 50000; n=$((n + 1)); done
ip link set lo up
[ -z "$MTU" ] || ip link set eth0 mtu "$MTU" || die "eth0 mtu $MTU"
ip link set eth0 up && ip addr add "$GUEST_IP/24" dev eth0 || die "eth0"
rdma link add siw0 type siw netdev eth0 || die "rdma link add"
echo "UIWVM siw: $(cd /sys/module/siw/parameters && for p in *; do printf '%s=%s ' $p $(cat $p); done)"
say ready
cd /tmp
( sleep "$GUEST_TIMEOUT"
  say "timeout after $GUEST_TIMEOUT s; connections and QPs:"
  ss -tanie; rdma resource show qp; rdma resource show cm_id; dmesg | tail -20
  echo "UIWVM rc=124"; poweroff -f ) &
sh /uiw/cmd.sh
echo "UIWVM rc=$?"
poweroff -f
EOF
}

# Helpers for guest commands, sourced before the command.
siwvm_guest_lib() {
	cat <<'EOF'
export PATH=/uiw/bin:/usr/sbin:/usr/bin
. /uiw/env
UIW_SERVED=0
uiw_listeners() { rdma resource show cm_id 2>/dev/null | grep -c LISTEN; }
uiw_serve() {
	local before=$(uiw_listeners) n=0
	"$@" &
	local pid=$!
	while kill -0 $pid 2>/dev/null && [ $n -lt 600 ]; do
		[ "$(uiw_listeners)" -gt "$before" ] && break
		usleep 50000; n=$((n + 1))
	done
	UIW_SERVED=$((UIW_SERVED + 1))
	echo "UIWVM listening $UIW_SERVED"
	wait $pid
}
uiw_await_go() {
	local line
	stty -F /dev/ttyS1 raw -echo 2>/dev/null
	while read -r line < /dev/ttyS1; do case "$line" in go*) return 0;; esac; done
	return 1
}
# uiw_watch SECS CMD...: runs CMD; if it still runs after SECS seconds, prints once (lines
# "UIWVM stall: ...") what each of its processes and threads waits in (wait channel, system
# call, kernel stack), the TCP sockets with their queues, siw's QPs, whether eth0 still
# sends (its counters around a ping), its interrupts, TCP's counters and the kernel's last
# messages: where a peer that stopped sending is stuck, in its program, siw, TCP or the NIC.
uiw_watch() {
	local secs=$1 n=0
	shift
	"$@" &
	local pid=$!
	while kill -0 $pid 2>/dev/null; do
		[ $n -eq $((secs * 4)) ] && uiw_dump $pid
		usleep 250000; n=$((n + 1))
	done
	wait $pid
}
uiw_dump() {
	local p t pids=$1
	for p in /proc/[0-9]*; do
		[ "$(cut -d' ' -f4 $p/stat 2>/dev/null)" = "$1" ] && pids="$pids ${p#/proc/}"
	done
	{
		echo "still running after its time: $pids"
		for p in $pids; do
			for t in /proc/$p/task/*; do
				echo "thread ${t##*/} ($(cat $t/comm 2>/dev/null)): state $(cut -d' ' -f3 $t/stat 2>/dev/null)" \
					"wchan $(cat $t/wchan 2>/dev/null) syscall $(cut -d' ' -f1-3 $t/syscall 2>/dev/null)"
				sed 's/^/  /' $t/stack 2>/dev/null
			done
		done
		ss -tanie
		rdma resource show qp
		# Whether eth0 still sends at all: its counters around a ping of the peer.
		local c=/sys/class/net/eth0/statistics
		echo "eth0 tx $(cat $c/tx_packets) packets, $(cat $c/tx_dropped) dropped, $(cat $c/tx_errors) errors;" \
			"rx $(cat $c/rx_packets); queue 0 timeouts $(cat /sys/class/net/eth0/queues/tx-0/tx_timeout)"
		ping -c 2 -W 1 "$PEER_IP" | grep -E 'transmitted|bytes from'
		echo "eth0 tx $(cat $c/tx_packets) packets, rx $(cat $c/rx_packets) after the ping"
		grep -i virtio /proc/interrupts
		# TCP's own account: segments in, out and sent again, RTOs, and retransmissions
		# refused because the first copy is still queued in the host (the NIC).
		awk '$1 == "Tcp:" || $1 == "TcpExt:" { if (!($1 in h)) { for (i = 2; i <= NF; i++) h[$1, i] = $i; h[$1] = 1 }
			else for (i = 2; i <= NF; i++) if (h[$1, i] ~ /^(InSegs|OutSegs|RetransSegs|TCPTimeouts|TCPSpuriousRtxHostQueues|TCPLossProbes)$/)
				printf "%s %s ", h[$1, i], $i }
			END { print "" }' /proc/net/snmp /proc/net/netstat
		dmesg | tail -10
	} 2>&1 | sed 's/^/UIWVM stall: /'
}
EOF
}

# Builds (once; cached by kernel ABI and this file's contents) the guest kernel and
# initramfs. Sets SIWVM_KERNEL and SIWVM_INITRD.
siwvm_build() {
	local k stamp out t0=$SECONDS
	mkdir -p "$UIWARP_SIW_CACHE"
	stamp=$(sha256sum "$SIWVM_SELF" | cut -c1-16)
	k=$(cat "$UIWARP_SIW_CACHE/kabi" 2>/dev/null)
	if [ -z "${UIWARP_SIW_KABI:-}" ] && [ -n "$k" ] && [ "$(cat "$UIWARP_SIW_CACHE/initrd-$k.stamp" 2>/dev/null)" = "$stamp" ] &&
		command -v qemu-system-x86_64 >/dev/null; then
		SIWVM_KERNEL=$UIWARP_SIW_CACHE/kernel-$k/vmlinux
		[ -f "$SIWVM_KERNEL" ] || SIWVM_KERNEL=$UIWARP_SIW_CACHE/kernel-$k/root/boot/vmlinuz-$k
		SIWVM_INITRD=$UIWARP_SIW_CACHE/initrd-$k.cpio
		return 0
	fi
	siwvm_install || return 1
	k=$(siwvm_kabi)
	[ -n "$k" ] || { siwvm_log "cannot tell which kernel linux-image-amd64 is"; return 1; }
	siwvm_fetch "$k" || return 1
	siwvm_build_siw "$k" || return 1
	local kd=$UIWARP_SIW_CACHE/kernel-$k root=$UIWARP_SIW_CACHE/kernel-$k/root
	# The bzImage is xz-compressed; unpacking it under emulation costs seconds per boot. Its
	# ELF payload has a PVH entry note, which QEMU boots directly.
	local off
	off=$(LC_ALL=C grep -obUaP '\xfd7zXZ\x00' "$root/boot/vmlinuz-$k" | head -1 | cut -d: -f1)
	rm -f "$kd/vmlinux"
	if [ -n "$off" ]; then
		tail -c +$((off + 1)) "$root/boot/vmlinuz-$k" | xz -dc --single-stream >"$kd/vmlinux" 2>/dev/null
		readelf -n "$kd/vmlinux" 2>/dev/null | grep -q 'Unknown note type: (0x00000012)\|PHYS32' || rm -f "$kd/vmlinux"
	fi
	siwvm_stage_begin "$kd/stage" "$k" virtio_pci virtio_net crc32c_generic siw ib_uverbs rdma_ucm
	local b bins=()
	for b in rping rstream ucmatose ibv_devices ibv_devinfo ib_send_bw ib_write_bw ib_read_bw ib_send_lat \
		ib_write_lat ib_read_lat rdma ip ss kmod; do
		bins+=("$(command -v "$b")") || { siwvm_log "$b not found"; return 1; }
	done
	siwvm_stage "${bins[@]}" /usr/lib/x86_64-linux-gnu/libibverbs/libsiw-rdmav*.so \
		/usr/lib/x86_64-linux-gnu/rsocket/librspreload.so
	# glibc loads libgcc_s at run time for thread exit; ldd does not list it.
	siwvm_stage "$(ldconfig -p | awk '/libgcc_s\.so\.1 .*x86-64/ { print $NF; exit }')"
	mkdir -p "$SIWVM_STAGE/etc/libibverbs.d"
	cp /etc/libibverbs.d/siw.driver "$SIWVM_STAGE/etc/libibverbs.d/"
	siwvm_stage_end
	siwvm_init_script >"$SIWVM_STAGE/init"
	chmod 755 "$SIWVM_STAGE/init"
	siwvm_guest_lib >"$SIWVM_STAGE/uiw/lib.sh"
	out=$UIWARP_SIW_CACHE/initrd-$k.cpio
	(cd "$SIWVM_STAGE" && find . -print0 | LC_ALL=C sort -z | cpio --null -o -H newc --quiet -R 0:0) >"$out"
	echo "$stamp" >"$UIWARP_SIW_CACHE/initrd-$k.stamp"
	echo "$k" >"$UIWARP_SIW_CACHE/kabi"
	rm -rf "$SIWVM_STAGE"
	siwvm_log "built the guest for $k in $((SECONDS - t0)) s ($(du -h "$out" | cut -f1) initramfs)"
	SIWVM_KERNEL=$kd/vmlinux
	[ -f "$SIWVM_KERNEL" ] || SIWVM_KERNEL=$root/boot/vmlinuz-$k
	SIWVM_INITRD=$out
}

# Makes the namespace NS: bridge (SIWVM_BRIDGE_IP) and a veth, uiw0, for uiwarp.
siwvm_net_up() {
	SIWVM_NS=$1
	ip netns add "$SIWVM_NS" || return 1
	local n=(ip -n "$SIWVM_NS")
	ip netns exec "$SIWVM_NS" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
	"${n[@]}" link set lo up
	"${n[@]}" link add br0 type bridge stp_state 0 forward_delay 0
	"${n[@]}" link set br0 up
	"${n[@]}" addr add "$SIWVM_BRIDGE_IP/24" dev br0
	"${n[@]}" link add uiw0 type veth peer name uiw0br
	"${n[@]}" link set uiw0br master br0 up
	"${n[@]}" link set uiw0 up
	# Frames the kernel makes on a veth leave the TCP checksum to the "NIC": fill it in.
	ip netns exec "$SIWVM_NS" ethtool -K uiw0 tx off >/dev/null
	ip netns exec "$SIWVM_NS" ethtool -K uiw0br tx off >/dev/null
	SIWVM_RUNDIR=$(mktemp -d /tmp/uiw-siwvm.XXXXXX)
}

# siwvm_boot NAME 'SIW PARAMS' TIMEOUT_S 'COMMAND': starts a guest in the background
# (SIWVM_MTU: its NIC, tap and eth0 at that MTU)
# running COMMAND (sh, with the helpers above); its console goes to
# $SIWVM_RUNDIR/NAME/console. Files named in SIWVM_FILES are put in /uiw/bin (on PATH);
# they may use the libraries of the programs the guest has (libibverbs, librdmacm).
siwvm_boot() {
	local name=$1 params=$2 timeout=$3 cmd=$4 d=$SIWVM_RUNDIR/$1
	SIWVM_COUNT=$((SIWVM_COUNT + 1))
	local tap=uiwtap$SIWVM_COUNT
	rm -rf "$d"
	mkdir -p "$d/ovl/uiw"
	ip -n "$SIWVM_NS" tuntap add dev "$tap" mode tap || return 1
	[ -z "${SIWVM_MTU:-}" ] || ip -n "$SIWVM_NS" link set "$tap" mtu "$SIWVM_MTU"
	ip -n "$SIWVM_NS" link set "$tap" master br0 up
	{
		echo "MTU=${SIWVM_MTU:-}"
		echo "SIW_PARAMS='$params'"
		echo "GUEST_TIMEOUT=$timeout"
		echo "GUEST_IP=$SIWVM_GUEST_IP"
		echo "PEER_IP=$SIWVM_PEER_IP"
		echo "export GUEST_IP PEER_IP"
	} >"$d/ovl/uiw/env"
	{
		echo ". /uiw/lib.sh"
		printf '%s\n' "$cmd"
	} >"$d/ovl/uiw/cmd.sh"
	local f
	for f in ${SIWVM_FILES:-}; do
		mkdir -p "$d/ovl/uiw/bin"
		cp "$f" "$d/ovl/uiw/bin/"
	done
	(cd "$d/ovl" && find . | cpio -o -H newc --quiet -R 0:0) >"$d/ovl.cpio"
	cat "$SIWVM_INITRD" "$d/ovl.cpio" >"$d/initrd"
	mkfifo "$d/ctl.in" "$d/ctl.out"
	: >"$d/console"
	ip netns exec "$SIWVM_NS" timeout -k 5 $((timeout + 60)) qemu-system-x86_64 -accel tcg -M pc -cpu max \
		-smp 1 -m 1024 -nodefaults -no-user-config -display none -no-reboot \
		-kernel "$SIWVM_KERNEL" -initrd "$d/initrd" \
		-append "console=ttyS0,115200 quiet loglevel=4 panic=1 mitigations=off nokaslr ipv6.disable=1" \
		-netdev "tap,id=n0,ifname=$tap,script=no,downscript=no,vnet_hdr=off" \
		-device "virtio-net-pci,netdev=n0,mac=52:54:00:77:00:$(printf %02x "${SIWVM_GUEST_IP##*.}")${SIWVM_MTU:+,host_mtu=$SIWVM_MTU},romfile=" \
		-serial "file:$d/console" -serial "pipe:$d/ctl" -monitor none </dev/null >"$d/qemu.out" 2>&1 &
	SIWVM_QEMU_PID=$!
	SIWVM_GUEST=$name
}

siwvm_console() { tr -d '\r' <"$SIWVM_RUNDIR/$SIWVM_GUEST/console" 2>/dev/null; }

# siwvm_wait_line REGEX [COUNT] [TIMEOUT_S]: until the console has COUNT lines matching.
siwvm_wait_line() {
	local re=$1 count=${2:-1} limit=$((SECONDS + ${3:-120}))
	while [ $SECONDS -lt $limit ]; do
		[ "$(siwvm_console | grep -caE "$re")" -ge "$count" ] && return 0
		kill -0 "$SIWVM_QEMU_PID" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}

# siwvm_wait_listen N: until the guest's Nth uiw_serve server listens.
siwvm_wait_listen() { siwvm_wait_line "^UIWVM listening $1\$" 1 "${2:-180}"; }

# siwvm_go: releases uiw_await_go in the guest. QEMU holds the pipe open for reading.
siwvm_go() { timeout 10 sh -c "echo go > '$SIWVM_RUNDIR/$SIWVM_GUEST/ctl.in'"; }

# siwvm_wait_peer: until uiwarp (at SIWVM_PEER_IP) answers a ping from the namespace.
siwvm_wait_peer() {
	local limit=$((SECONDS + ${1:-30}))
	while [ $SECONDS -lt $limit ]; do
		ip netns exec "$SIWVM_NS" ping -c1 -W1 -q "$SIWVM_PEER_IP" >/dev/null 2>&1 && return 0
	done
	return 1
}

# siwvm_wait: waits for the guest to end; returns the guest command's status (124: timed
# out, 125: no status printed).
siwvm_wait() {
	wait "$SIWVM_QEMU_PID" 2>/dev/null
	SIWVM_QEMU_PID=""
	local rc
	rc=$(siwvm_console | sed -n 's/^UIWVM rc=\([0-9]*\)$/\1/p' | tail -1)
	return "${rc:-125}"
}

siwvm_stop() {
	[ -n "$SIWVM_QEMU_PID" ] && kill "$SIWVM_QEMU_PID" 2>/dev/null
	[ -n "$SIWVM_QEMU_PID" ] && wait "$SIWVM_QEMU_PID" 2>/dev/null
	SIWVM_QEMU_PID=""
}

# siwvm_capture_start FILE / siwvm_capture_stop: dumpcap on the bridge (TCP and ARP).
siwvm_capture_start() {
	SIWVM_CAP_FILE=$1
	SIWVM_CAP_TMP=$SIWVM_RUNDIR/cap.$SIWVM_COUNT.pcapng
	ip netns exec "$SIWVM_NS" dumpcap -q -i br0 -f "tcp or arp" -w "$SIWVM_CAP_TMP" >/dev/null 2>&1 &
	SIWVM_CAP_PID=$!
	local i
	for i in $(seq 50); do [ -s "$SIWVM_CAP_TMP" ] && break; sleep 0.1; done
}
siwvm_capture_stop() {
	[ -n "$SIWVM_CAP_PID" ] || return 0
	sleep 0.3
	kill -INT "$SIWVM_CAP_PID" 2>/dev/null
	wait "$SIWVM_CAP_PID" 2>/dev/null
	SIWVM_CAP_PID=""
	mv "$SIWVM_CAP_TMP" "$SIWVM_CAP_FILE"
}

siwvm_cleanup() {
	siwvm_stop
	siwvm_capture_stop
	[ -n "$SIWVM_NS" ] && ip netns del "$SIWVM_NS" 2>/dev/null
	[ -n "$SIWVM_RUNDIR" ] && [ "${KEEP:-0}" != 1 ] && rm -rf "$SIWVM_RUNDIR"
	SIWVM_NS=""
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
	set -u
	[ "$(id -u)" = 0 ] || { echo "siwvm.sh: needs root" >&2; exit 1; }
	case ${1:-} in
	build)
		siwvm_build
		;;
	run)
		siwvm_build || exit 1
		trap siwvm_cleanup EXIT
		siwvm_net_up "uiwvm$$" || exit 1
		siwvm_boot run "${SIW_PARAMS:-}" "${GUEST_TIMEOUT:-300}" "${2:-rdma link show; ibv_devinfo}"
		siwvm_wait
		rc=$?
		siwvm_console
		exit $rc
		;;
	*)
		sed -n '2,27p' "$SIWVM_SELF" | sed 's/^# \{0,1\}//'
		exit 2
		;;
	esac
fi
