#!/usr/bin/env bash
# Installs what uiwarp needs to build, run and test on Debian 12. Idempotent: packages
# already present are not touched, and apt is not called at all when nothing is missing.
set -euo pipefail

packages=(
	# build
	gcc clang meson ninja-build pkg-config python3
	# DPDK 22.11, rdma-core headers, Check
	libdpdk-dev dpdk libibverbs-dev librdmacm-dev check libpcap-dev
	# fuzzing runtime for clang (libFuzzer) and sanitizers
	libclang-rt-14-dev
	# what the tests use (rdma-core's and perftest's programs run on the drop-in libraries)
	tshark iproute2 iputils-ping ethtool ibverbs-utils rdmacm-utils perftest
	# more RDMA programs the realapps test runs on the drop-in
	fio qperf libfabric-bin libfabric-dev
	# Open MPI over libfabric on the drop-in (tests/integration/mpi.sh)
	openmpi-bin libopenmpi-dev
	# a plain socket program on rsockets (tests/integration/rsockets.sh)
	netcat-openbsd
	# the Linux siw guest of the interop tests (tests/interop/siwvm.sh): QEMU, busybox, and
	# what builds siw.ko against Debian's kernel headers (the kernel packages themselves
	# are downloaded by that script, never installed)
	qemu-system-x86 busybox-static kmod cpio xz-utils binutils make libc6-dev libelf-dev
	rdma-core ibverbs-providers
	# the kernel's figures beside ours in the benchmarks (tests/bench, side-by-side.sh)
	iperf3 sockperf
)

missing=()
for p in "${packages[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
echo "installing: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -q
$sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
