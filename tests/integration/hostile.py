#!/usr/bin/env python3
"""Hostile peers against Debian's unmodified rping server on the drop-in libraries.

  hostile.py DROPIN_DIR [--server=dropin|--server=PATH_TO_UIWARP_RPING] [ATTACK...]
                                          (default: the drop-in's rping, every attack)

Four namespaces on a bridge: the server (Debian's rping -s -P on the drop-in libraries, or
uiwarp's own uiwarp-rping -s -P, on af_packet), an
attacker (Linux's own TCP through sockets, and raw frames), and a second client (rping -c
on the drop-in). Each attack is set up and held while the second client completes a full
rping exchange with its data checked (-V); then the attack is released, and the server's
status file (UIWARP_STATUS, or uiwarp-rping's --status) must show its pools and tables back at their idle levels:
mbufs in use, TCP and MPA connections, half-open connections, the mbufs TCP holds, and ARP
entries (the attacker's own address may stay).

The attacks (issue: each stopped service to every other client once):
  fpdu_trickle  two connections, each an FPDU header claiming 65535 octets, then its
                octets one per TCP segment (24,000 segments in all)
  read_flood    a connection that never reads (its window closes) sending 20,000
                zero-length RDMA Read Requests
  syn_flood     256 SYNs from spoofed, silent neighbours, and 256 more every 0.5 s while held

The server runs with tcp_syn_retries=2 (a half-open connection is given up 7 s after its
SYN, where the default 6 takes 127 s) so that the tables are idle again soon after a flood.

The attacker side runs as `hostile.py attack KIND SERVER_IP SERVER_MAC` inside its
namespace: it prints "holding ..." once the attack is in place and releases it when its
standard input closes.
"""
import fcntl
import json
import os
import random
import select
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

SERVER_IP, ATTACKER_IP, CLIENT_IP = "10.77.0.1", "10.77.0.2", "10.77.0.3"
PORT = 7174                      # rping's default
SIOCOUTQNSD = 0x894B             # bytes not yet sent (linux/sockios.h)

# ---------------------------------------------------------------- attacker side


def crc32c(data, table=[]):
    if not table:
        for i in range(256):
            c = i
            for _ in range(8):
                c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
            table.append(c)
    c = 0xFFFFFFFF
    for b in data:
        c = table[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def mpa_connect(ip, rcvbuf=0):
    """TCP connect and an MPA v1 exchange (RFC 5044 §7.1) asking for CRC; returns the
    socket and whether FPDUs carry a CRC."""
    s = socket.socket()
    if rcvbuf:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    s.settimeout(10)
    s.connect((ip, PORT))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    s.sendall(b"MPA ID Req Frame" + bytes([0x40, 1]) + struct.pack(">H", 0))
    rep = b""
    while len(rep) < 20:
        chunk = s.recv(20 - len(rep))
        if not chunk:
            raise RuntimeError("the server closed during the MPA exchange")
        rep += chunk
    if rep[:16] != b"MPA ID Rep Frame" or rep[16] & 0xA0:
        raise RuntimeError(f"unexpected MPA Reply {rep.hex()}")
    pd_len = struct.unpack(">H", rep[18:20])[0]
    while pd_len > 0:
        pd_len -= len(s.recv(pd_len))
    return s, bool(rep[16] & 0x40)


def fpdu(ulpdu, crc):
    """One FPDU (RFC 5044 §4): length, ULPDU, pad to 4, CRC32c (its octets least
    significant first, as the CRC falls out of the reflected algorithm: WIRE.md, siw)."""
    b = struct.pack(">H", len(ulpdu)) + ulpdu
    b += b"\0" * (-len(b) % 4)
    return b + struct.pack("<I", crc32c(b) if crc else 0)


def read_request(msn):
    """A zero-length RDMA Read Request (RFC 5040 §4.4, RFC 5041 §4.3 untagged, QN 1)."""
    hdr = bytes([0x41, 0x41]) + struct.pack(">IIII", 0, 1, msn, 0)
    return hdr + struct.pack(">IQIIQ", 0x1000, 0, 0, 0x2000, 0)


def wait_sent(s, limit):
    """Until the kernel has put every queued octet on the wire (or @limit seconds)."""
    end = time.monotonic() + limit
    buf = bytearray(4)
    while time.monotonic() < end:
        fcntl.ioctl(s.fileno(), SIOCOUTQNSD, buf)
        if struct.unpack("i", buf)[0] == 0:
            return True
    return False


def attack_fpdu_trickle(ip, release):
    conns = [mpa_connect(ip) for _ in range(2)]
    for s, _ in conns:
        s.setblocking(False)
        s.send(struct.pack(">H", 0xFFFF) + bytes([0x41, 0x43]))   # a Send's first octets
    print("holding fpdu_trickle: 2 FPDUs of 65535 octets begun", flush=True)
    sent = 0
    while sent < 24000 and not release.is_set():
        s = conns[sent % 2][0]
        try:
            s.send(b"\xa5")
        except BlockingIOError:
            time.sleep(0.001)
            continue
        except OSError as e:
            print(f"attacker: connection ended after {sent} one-octet segments: {e}", flush=True)
            break
        sent += 1
        wait_sent(s, 0.002)
    print(f"attacker: {sent} one-octet segments sent", flush=True)
    release.wait()
    for s, _ in conns:
        s.close()


def attack_read_flood(ip, release):
    s, crc = mpa_connect(ip, rcvbuf=4096)
    s.setblocking(False)
    data = b"".join(fpdu(read_request(m), crc) for m in range(1, 20001))
    view, end = memoryview(data), time.monotonic() + 8
    while view and time.monotonic() < end and not release.is_set():
        try:
            view = view[s.send(view):]
        except BlockingIOError:
            time.sleep(0.005)
        except OSError as e:
            print(f"attacker: connection ended: {e}", flush=True)
            break
    print(f"holding read_flood: {20000 - len(view) // len(fpdu(read_request(1), crc))} of "
          f"20000 zero-length Read Requests sent, never reading", flush=True)
    release.wait()
    s.close()


def csum(b):
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack(f"!{len(b) // 2}H", b))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def syn_frame(dst_mac, src_ip, dst_ip, sport, rng):
    """An Ethernet/IPv4/TCP SYN from a made-up neighbour (locally administered MAC)."""
    src_mac = bytes([0x02, 0x77]) + rng.randbytes(4)
    opts = struct.pack(">BBH", 2, 4, 1460) + bytes([1, 1, 4, 2, 1, 3, 3, 7])   # MSS, SACK, WS 7
    th = struct.pack(">HHIIBBHHH", sport, PORT, rng.getrandbits(32), 0, (5 + 3) << 4, 0x02,
                     64240, 0, 0) + opts
    ph = socket.inet_aton(src_ip) + socket.inet_aton(dst_ip) + struct.pack(">BBH", 0, 6, len(th))
    th = th[:16] + struct.pack(">H", csum(ph + th)) + th[18:]
    ih = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + len(th), rng.getrandbits(16), 0x4000, 64, 6,
                     0, socket.inet_aton(src_ip), socket.inet_aton(dst_ip))
    ih = ih[:10] + struct.pack(">H", csum(ih)) + ih[12:]
    return dst_mac + src_mac + b"\x08\x00" + ih + th


def attack_syn_flood(ip, mac, release):
    rng = random.Random(7)
    raw = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    raw.bind(("ua", 0))
    dst_mac = bytes.fromhex(mac.replace(":", ""))

    def burst(first_port):
        for i in range(256):
            raw.send(syn_frame(dst_mac, f"10.77.0.{100 + i % 128}", ip, first_port + i, rng))

    burst(10000)
    print("holding syn_flood: 256 spoofed SYNs sent, 256 more every 0.5 s", flush=True)
    bursts = 1
    while not release.wait(0.5):
        burst(10000 + 256 * (bursts % 200))
        bursts += 1
    print(f"attacker: {256 * bursts} spoofed SYNs sent", flush=True)
    raw.close()


def attacker(kind, ip, mac):
    release = threading.Event()

    def watch_stdin():
        sys.stdin.read()
        release.set()

    threading.Thread(target=watch_stdin, daemon=True).start()
    try:
        if kind == "fpdu_trickle":
            attack_fpdu_trickle(ip, release)
        elif kind == "read_flood":
            attack_read_flood(ip, release)
        else:
            attack_syn_flood(ip, mac, release)
    except Exception as e:   # the suite reports it: an attack that could not be set up
        print(f"attacker failed: {e!r}", flush=True)
        sys.exit(1)
    print("released", flush=True)

# ---------------------------------------------------------------- orchestration


def sh(*cmd, check=True):
    return subprocess.run(cmd, check=check, capture_output=True, text=True)


class Suite:
    def __init__(self, lib, kinds, own_server=None):
        self.lib, self.kinds, self.own_server = lib, kinds, own_server
        tag = os.getpid()
        self.ns = {k: f"uiw-ho-{k}-{tag}" for k in ("br", "srv", "atk", "cli")}
        self.tmp = tempfile.mkdtemp(prefix="uiw-hostile.")
        self.status = os.path.join(self.tmp, "status")
        self.server = None
        self.failures = 0

    def setup(self):
        ns = self.ns
        for n in ns.values():
            sh("ip", "netns", "add", n)
        sh("ip", "-n", ns["br"], "link", "add", "br0", "type", "bridge")
        sh("ip", "-n", ns["br"], "link", "set", "br0", "up")
        for role, dev in (("srv", "us"), ("atk", "ua"), ("cli", "uc")):
            port = "b" + dev[1]
            sh("ip", "-n", ns["br"], "link", "add", port, "type", "veth", "peer", "name", dev,
               "netns", ns[role])
            sh("ip", "-n", ns["br"], "link", "set", port, "master", "br0", "up")
            sh("ip", "-n", ns[role], "link", "set", dev, "up")
            # The kernel's checksum (and so segmentation) offloads off: uiwarp reads
            # frames from af_packet as they are, one MTU each.
            sh("ip", "netns", "exec", ns[role], "ethtool", "-K", dev, "tx", "off")
        sh("ip", "-n", ns["atk"], "addr", "add", f"{ATTACKER_IP}/24", "dev", "ua")

    def cleanup(self):
        if self.server is not None and self.server.poll() is None:
            self.server.kill()
            self.server.wait()
        for n in self.ns.values():
            sh("ip", "netns", "del", n, check=False)
        subprocess.run(["rm", "-rf", self.tmp])

    def dropin_env(self, cfg):
        env = dict(os.environ, LD_LIBRARY_PATH=self.lib, UIWARP_CONFIG=cfg)
        env.pop("UIWARP_CONF", None)
        return env

    def start_server(self):
        cfg = ("port=net_af_packet0,iface=us; ip=10.77.0.1/24; lcores=1; hugepages=off; "
               "memory=512; mbufs=16383; tcp_syn_retries=2")
        env = self.dropin_env(cfg)
        env["UIWARP_STATUS"] = self.status
        self.server_log = open(os.path.join(self.tmp, "server.log"), "w")
        if self.own_server:
            cmd = [self.own_server, "--set", cfg, "-s", "-P", "-C", "20", "--status", self.status]
        else:
            cmd = ["rping", "-s", "-P", "-a", SERVER_IP, "-C", "20", "-V"]
        self.server = subprocess.Popen(["ip", "netns", "exec", self.ns["srv"]] + cmd, env=env,
                                       stdout=self.server_log, stderr=subprocess.STDOUT)
        for _ in range(100):
            if os.path.exists(self.status):
                return
            time.sleep(0.1)
        raise RuntimeError("the server wrote no status file")

    def read_status(self):
        vals = {}
        with open(self.status) as f:
            for line in f:
                parts = line.split()
                if len(parts) >= 2 and parts[1].lstrip("-").isdigit():
                    vals[parts[0]] = int(parts[1])
        return vals

    def client(self, name):
        """rping -c -C 20 -V from the client namespace: @return True if every ping came back."""
        cfg = "port=net_af_packet0,iface=uc; ip=10.77.0.3/24; lcores=0; hugepages=off; memory=512; mbufs=16383"
        t0 = time.monotonic()
        r = subprocess.run(["ip", "netns", "exec", self.ns["cli"], "timeout", "40", "rping", "-c",
                            "-a", SERVER_IP, "-C", "20", "-V", "-v"], env=self.dropin_env(cfg),
                           capture_output=True, text=True)
        pings = r.stdout.count("ping data: rdma-ping-")
        if r.returncode == 0 and pings == 20:
            print(f"ok: {name}: rping -c -C 20 -V completed ({time.monotonic() - t0:.1f} s)")
            return True
        print(f"FAIL: {name}: rping client rc {r.returncode}, {pings} of 20 pings")
        for line in (r.stdout + r.stderr).splitlines()[-10:]:
            print(f"  client: {line}")
        self.failures += 1
        return False

    def idle(self, baseline, attacker_known, limit):
        """Waits until the status is back at @baseline; @return the last status read."""
        keys = ("tcp.conns", "tcp.half_open", "tcp.rx_mbufs", "tcp.sq_mbufs", "tcp.sq_stalled", "tcp.senders", "mpa.conns")
        end = time.monotonic() + limit
        while True:
            st = self.read_status()
            over = {k: st.get(k, 0) for k in keys if st.get(k, 0) > baseline.get(k, 0)}
            if st.get("mbufs.in_use", 0) > baseline.get("mbufs.in_use", 0) + 64:
                over["mbufs.in_use"] = st["mbufs.in_use"]
            if st.get("arp.entries", 0) > baseline.get("arp.entries", 0) + attacker_known:
                over["arp.entries"] = st["arp.entries"]
            if not over or time.monotonic() > end:
                return st, over
            time.sleep(0.25)

    def attack(self, kind, mac, baseline):
        t0 = time.monotonic()
        before = self.read_status()
        atk = subprocess.Popen(["ip", "netns", "exec", self.ns["atk"], sys.executable,
                                os.path.abspath(__file__), "attack", kind, SERVER_IP, mac],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        line = atk.stdout.readline().strip()
        if not line.startswith("holding"):
            print(f"FAIL: {kind}: the attack could not be set up: {line}")
            atk.kill()
            self.failures += 1
            return
        print(f"  {kind}: {line}")
        time.sleep(0.5)
        held = self.read_status()
        print(f"  {kind}: while held: " + ", ".join(
            f"{k} {held.get(k, 0)}" for k in ("mbufs.in_use", "tcp.conns", "tcp.half_open",
                                             "tcp.rx_mbufs", "tcp.sq_mbufs", "tcp.sq_stalled", "tcp.senders", "mpa.conns")))
        self.client(f"{kind}: second client during the attack")
        atk.stdin.close()
        for out in atk.stdout:
            if out.strip() != "released":
                print(f"  {kind}: {out.strip()}")
        atk.wait()
        if self.server.poll() is not None:
            print(f"FAIL: {kind}: the server exited ({self.server.returncode})")
            self.failures += 1
            return
        st, over = self.idle(baseline, 1, 30)
        delta = {k: st[k] - before.get(k, 0) for k in st
                 if "." in k and st[k] != before.get(k, 0) and not k.startswith(("mbufs", "arp.entries"))
                 and k not in ("tcp.conns", "tcp.half_open", "tcp.rx_mbufs", "tcp.sq_mbufs", "tcp.sq_stalled", "tcp.senders", "mpa.conns")}
        shown = {k: v for k, v in delta.items() if not k.startswith(("port.", "net.rx", "net.tx"))}
        print(f"  {kind}: counters moved: " + ", ".join(f"{k} +{v}" for k, v in sorted(shown.items())))
        if over:
            print(f"FAIL: {kind}: not back to idle 30 s after the release: {over} "
                  f"(idle: { {k: baseline.get(k, 0) for k in over} })")
            self.failures += 1
        else:
            print(f"ok: {kind}: back to idle after the release "
                  f"(mbufs in use {st.get('mbufs.in_use')}, conns {st.get('tcp.conns')}; "
                  f"{time.monotonic() - t0:.1f} s in all)")
        self.client(f"{kind}: a client after the release")

    def run(self):
        t0 = time.monotonic()
        self.setup()
        self.start_server()
        mac = json.loads(sh("ip", "-n", self.ns["srv"], "-j", "link", "show", "us").stdout)[0]["address"]
        time.sleep(1)
        # The idle levels: after one client has come and gone (pools warmed, the client's
        # address learned).
        if not self.client("before any attack"):
            return 1
        st, _ = self.idle({}, 99, 5)
        time.sleep(0.5)
        baseline = self.read_status()
        print("  idle: " + ", ".join(f"{k} {baseline.get(k, 0)}" for k in (
            "mbufs.in_use", "tcp.conns", "mpa.conns", "arp.entries")))
        for kind in self.kinds:
            self.attack(kind, mac, baseline)
        print(f"{'FAIL' if self.failures else 'PASS'}: server {self.own_server or 'rping (drop-in)'}: "
              f"{self.failures} failure(s), "
              f"{time.monotonic() - t0:.0f} s")
        return 1 if self.failures else 0


def main():
    a = sys.argv[1:]
    if len(a) == 4 and a[0] == "attack":
        attacker(a[1], a[2], a[3])
        return 0
    kinds = ("fpdu_trickle", "read_flood", "syn_flood")
    own = None
    if len(a) >= 2 and a[1].startswith("--server="):
        own = a[1].split("=", 1)[1]
        own = None if own == "dropin" else os.path.abspath(own.split("=", 1)[-1])
        a = a[:1] + a[2:]
    if len(a) < 1 or any(k not in kinds for k in a[1:]):
        sys.exit(__doc__)
    lib = a[0] if os.path.isdir(a[0]) else os.path.dirname(a[0])
    lib = os.path.abspath(lib)
    for tool in ("rping", "ethtool", "ip"):
        if subprocess.run(["sh", "-c", f"command -v {tool}"], capture_output=True).returncode:
            print(f"SKIP: {tool} not installed")
            return 77
    suite = Suite(lib, a[1:] or kinds, own)
    try:
        return suite.run()
    finally:
        suite.cleanup()


if __name__ == "__main__":
    sys.exit(main())
