#!/usr/bin/env python3
"""uiwarp's TCP against Linux's, across a veth pair between two network namespaces this
test creates (uiwarp on its end through net_af_packet). Every transfer is checked with
SHA-256 at both ends.

Scenarios: uiwarp client to a Linux server and a Linux client to a uiwarp server; again
with the namespace's tcp_sack, tcp_timestamps and tcp_window_scaling at 0; again with
uiwarp's fault wrapper dropping 1% and 5%, reordering and duplicating; 1,000 concurrent
connections opened, used and closed with nothing left held; then both ways at MTU 9000
(uiwarp sizes af_packet's ring slots and sets its interface's MTU itself), where the
frames each side sends must average over 4,000 octets.

usage: tcp_linux.py UIWARP_TCPPERF [--quick]
Sizes: $UIW_TCP_MIB MiB per transfer (default 256; 16 with --quick).
Exit 77 (skip) when namespaces cannot be made.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PEER = os.path.join(HERE, "linux_peer.py")
NS_K, NS_S = f"uiw-tk-{os.getpid()}", f"uiw-ts-{os.getpid()}"
K_IP, S_IP, PORT = "10.77.8.1", "10.77.8.2", 5201
AF_PACKET = "net_af_packet0,iface=vs,qdisc_bypass=1,framecnt=8192,blocksz=65536,framesz=2048"
AF_PACKET_JUMBO = "net_af_packet0,iface=vs,qdisc_bypass=1,framecnt=2048"


def sh(*cmd, check=True):
    return subprocess.run(list(cmd), check=check, capture_output=True, text=True)


def setup():
    if os.geteuid() != 0:
        print("SKIP: needs root to create network namespaces")
        sys.exit(77)
    for tool in ("ip", "ethtool"):
        if shutil.which(tool) is None:
            print(f"SKIP: {tool} not installed")
            sys.exit(77)
    if sh("ip", "netns", "add", NS_K, check=False).returncode != 0:
        print("SKIP: cannot create a network namespace")
        sys.exit(77)
    sh("ip", "netns", "add", NS_S)
    sh("ip", "netns", "exec", NS_K, "ip", "link", "add", "vk", "type", "veth", "peer", "name", "vs",
       "netns", NS_S)
    sh("ip", "-n", NS_K, "addr", "add", f"{K_IP}/24", "dev", "vk")
    for ns, dev in ((NS_K, "lo"), (NS_K, "vk"), (NS_S, "vs")):
        sh("ip", "-n", ns, "link", "set", dev, "up")
    # The kernel leaves TCP checksums to the NIC on a veth; af_packet then hands uiwarp
    # frames whose checksum is not filled in. Turn that off on the kernel's side.
    sh("ip", "netns", "exec", NS_K, "ethtool", "-K", "vk", "tx", "off")
    sh("ip", "netns", "exec", NS_S, "ethtool", "-K", "vs", "tx", "off")
    # Each transfer on its own: no RTT or ssthresh carried over from the last one to the
    # same address (tcp_metrics). The congestion control is the host's default: a
    # namespace may not choose one outside tcp_allowed_congestion_control (EPERM).
    sh("ip", "netns", "exec", NS_K, "sysctl", "-q", "net.ipv4.tcp_no_metrics_save=1")
    cc = sh("ip", "netns", "exec", NS_K, "sysctl", "-n", "net.ipv4.tcp_congestion_control",
            check=False).stdout.strip()
    print(f"Linux congestion control: {cc or 'unknown'}")


def cleanup():
    for ns in (NS_K, NS_S):
        sh("ip", "netns", "del", ns, check=False)


def sysctl(values):
    for key in ("tcp_sack", "tcp_timestamps", "tcp_window_scaling"):
        sh("ip", "netns", "exec", NS_K, "sysctl", "-q", f"net.ipv4.{key}={values}")


def uiwarp(perf, args, extra_cfg="", port=AF_PACKET):
    cfg = (f"port={port}; ip={S_IP}/24; hugepages=off; memory=512; mbufs=32767; "
           f"tcp_time_wait_ms=200; {extra_cfg}")
    return ["ip", "netns", "exec", NS_S, perf, "--set", cfg] + args


def hashes(text, word):
    return sorted(re.findall(rf"{word} (\d+) (?:bytes )?sha256 ([0-9a-f]{{64}})", text))


def counter(text, name):
    m = re.search(rf"^\s*{re.escape(name)}\s+(\d+)", text, re.M)
    return int(m.group(1)) if m else 0


def run_pair(name, server_cmd, client_cmd, sent_by, timeout, check=None):
    """Starts the server, then the client; compares what one side sent with what the
    other received. Server output goes to a file: a pipe nobody reads would fill up and
    stop it."""
    t0 = time.time()
    with tempfile.TemporaryFile(mode="w+") as slog:
        srv = subprocess.Popen(server_cmd, stdout=slog, stderr=subprocess.STDOUT, text=True)
        time.sleep(1.0)
        try:
            cli = subprocess.run(client_cmd, capture_output=True, text=True, timeout=timeout)
            srv.wait(timeout=30)
        except subprocess.TimeoutExpired:
            # For whoever reads this at 3 a.m.: Linux's view of the connection, and
            # uiwarp's counters (it prints them on SIGTERM).
            ss = sh("ip", "netns", "exec", NS_K, "ss", "-tni", check=False).stdout
            srv.terminate()
            try:
                srv.wait(timeout=10)
            except subprocess.TimeoutExpired:
                srv.kill()
                srv.wait()
            slog.seek(0)
            return False, (f"{name}: timed out after {timeout} s\n--- Linux: ss -tni ---\n{ss}"
                           f"\n--- server ---\n{slog.read()[-3000:]}")
        slog.seek(0)
        sout = slog.read()
    out_c = cli.stdout + cli.stderr
    sent = hashes(out_c if sent_by == "client" else sout, "sent")
    got = hashes(sout if sent_by == "client" else out_c, "received")
    ok = cli.returncode == 0 and srv.returncode == 0 and sent and sent == got
    secs = time.time() - t0
    detail = f"{name}: {len(sent)} stream(s), {sum(int(b) for b, _ in sent)} bytes, {secs:.1f} s"
    held = re.search(r"held after linger: .*", out_c)
    if held:
        detail += f"; {held.group(0)}"
        ok = ok and held.group(0).startswith("held after linger: 0 connections, 0 mbufs")
    if ok and check is not None:
        good, what = check(out_c, sout)
        ok = good
        detail += f"; {what}"
    if not ok:
        detail += (f"\n--- client (rc {cli.returncode}) ---\n{out_c[-3000:]}"
                   f"\n--- server (rc {srv.returncode}) ---\n{sout[-3000:]}")
    return ok, detail


def to_linux(perf, name, nbytes, extra="", timeout=300, port=AF_PACKET, check=None):
    server = ["ip", "netns", "exec", NS_K, sys.executable, PEER, "server", str(PORT), "sink", "0", "1"]
    client = uiwarp(perf, ["--connect", f"{K_IP}:{PORT}", "--send", str(nbytes)], extra, port)
    return run_pair(name, server, client, "client", timeout, check)


def from_linux(perf, name, nbytes, extra="", timeout=300, port=AF_PACKET, check=None):
    server = uiwarp(perf, ["--listen", str(PORT), "--recv", "--exit-after", "1"], extra, port)
    client = ["ip", "netns", "exec", NS_K, sys.executable, PEER, "client", S_IP, str(PORT), "source",
              str(nbytes)]
    return run_pair(name, server, client, "client", timeout, check)


def jumbo(perf, nbytes):
    """MTU 9000 on both ends: Linux's set here, uiwarp's by uiwarp. The MSS each end
    announces and the frames uiwarp's port counted show jumbo frames crossed."""
    sh("ip", "-n", NS_K, "link", "set", "vk", "mtu", "9000")

    def big(out, way):
        n, b = counter(out, f"port.{way}_packets"), counter(out, f"port.{way}_bytes")
        mss = "conn 0: mss 8948" in out
        return mss and n > 0 and b / n > 4000, (f"MSS 8948 {'announced' if mss else 'MISSING'}, "
                                                f"uiwarp's port {way} {b} octets in {n} frames")

    def sent_big(out, _srv):
        return big(out, "tx")

    def got_big(_cli, out):
        return big(out, "rx")

    try:
        return [to_linux(perf, "uiwarp -> Linux, MTU 9000", nbytes, "mtu=9000", port=AF_PACKET_JUMBO,
                         check=sent_big),
                from_linux(perf, "Linux -> uiwarp, MTU 9000", nbytes, "mtu=9000", port=AF_PACKET_JUMBO,
                           check=got_big)]
    finally:
        sh("ip", "-n", NS_K, "link", "set", "vk", "mtu", "1500")


def many(perf, n):
    server = ["ip", "netns", "exec", NS_K, sys.executable, PEER, "server", str(PORT), "sink", "0", str(n)]
    client = uiwarp(perf, ["--connect", f"{K_IP}:{PORT}", "--send", "4096", "--conns", str(n),
                           "--linger", "1000"])
    return run_pair(f"{n} concurrent connections", server, client, "client", 120)


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    perf = sys.argv[1]
    quick = "--quick" in sys.argv
    mib = int(os.environ.get("UIW_TCP_MIB", "16" if quick else "256"))
    big = mib << 20
    # Under injected loss a shorter minimum RTO than the default 200 ms keeps the run short,
    # but it must stay above the peer's delayed-ACK time (Linux: 40 ms), or delayed ACKs
    # cause spurious timeouts (20 ms made uiwarp's sending five times slower).
    fault_min_rto = "tcp_min_rto_ms=50"
    setup()
    results = []
    try:
        results.append(to_linux(perf, "uiwarp -> Linux", big))
        results.append(from_linux(perf, "Linux -> uiwarp", big))
        sysctl(0)
        results.append(to_linux(perf, "uiwarp -> Linux, no SACK/TS/WS", big))
        results.append(from_linux(perf, "Linux -> uiwarp, no SACK/TS/WS", big))
        sysctl(1)
        for spec, size in (("drop=1", big), ("drop=5,reorder=2,dup=1", big)):
            extra = f"{fault_min_rto}; fault_rx={spec}; fault_tx={spec}; fault_seed=3"
            results.append(to_linux(perf, f"uiwarp -> Linux, faults {spec}", size, extra, 600))
            results.append(from_linux(perf, f"Linux -> uiwarp, faults {spec}", size, extra, 600))
        results.append(many(perf, 1000))
        results += jumbo(perf, big // 4)
    finally:
        cleanup()
    passed = sum(1 for ok, _ in results if ok)
    for ok, detail in results:
        print(("ok: " if ok else "FAIL: ") + detail)
    print(f"{passed} passed, {len(results) - passed} failed")
    sys.exit(0 if passed == len(results) else 1)


if __name__ == "__main__":
    main()
