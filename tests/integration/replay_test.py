#!/usr/bin/env python3
"""Replay: a known input pcap through net_pcap (rx_pcap=), the tx_pcap= output compared
frame by frame with the replies a correct host sends, decoded by tshark without errors,
and the host's drop counters checked for every frame it had to ignore.

usage: replay_test.py UIWARP_HOST_BINARY
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
from pcapio import cksum, read_pcap  # noqa: E402

EXPECTED_DROPS = {
    "ip_drop_cksum": 1, "icmp_drop_cksum": 1, "ip_drop_len": 1, "ip_drop_not_ours": 1,
    "icmp_drop_bcast": 1, "ip_drop_frag": 1, "eth_drop_not_ours": 1, "eth_drop_ethertype": 1,
    "eth_drop_short": 1, "arp_not_for_us": 1,
}


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def masked(frame):
    """The frame with the IPv4 identification and header checksum zeroed (IPv4 only)."""
    b = bytearray(frame)
    if len(b) >= 34 and b[12:14] == b"\x08\x00":
        b[18:20] = b"\0\0"
        b[24:26] = b"\0\0"
    return bytes(b)


def check_frames(expected, got):
    if len(got) != len(expected):
        fail(f"{len(got)} frames sent, {len(expected)} expected")
    for i, (e, g) in enumerate(zip(expected, got)):
        if masked(g) != e:
            fail(f"frame {i + 1} differs:\n  expected {e.hex()}\n  got      {g.hex()}")
        if g[12:14] == b"\x08\x00":
            ihl = (g[14] & 0xF) * 4
            if cksum(g[14:14 + ihl]) != 0:
                fail(f"frame {i + 1}: bad IPv4 header checksum")
    print(f"ok: {len(got)} frames, byte for byte as expected")


def check_tshark(path, nframes):
    if shutil.which("tshark") is None:
        fail("tshark not installed (apt-get install -y tshark)")
    out = subprocess.run(["tshark", "-r", path, "-o", "ip.check_checksum:TRUE", "-V"],
                         capture_output=True, text=True, check=True).stdout
    for bad in ("Malformed Packet", "Expert Info (Error", "[Checksum Status: Bad]"):
        if bad in out:
            fail(f"tshark reports '{bad}' in {path}")
    replies = out.count("Type: 0 (Echo (ping) reply)")
    if replies != nframes - 2:
        fail(f"tshark decoded {replies} echo replies, expected {nframes - 2}")
    if out.count("Opcode: reply (2)") != 1:
        fail("tshark did not decode exactly one ARP reply")
    print(f"ok: tshark decodes {replies} echo replies and the ARP reply, no errors")


def check_counters(log):
    counters = dict((m.group(1), int(m.group(2)))
                    for m in re.finditer(r"net\.(\w+)\s+(\d+)", log))
    for name, want in EXPECTED_DROPS.items():
        if counters.get(name, 0) != want:
            fail(f"counter {name} = {counters.get(name, 0)}, expected {want}")
    print("ok: each ignored frame counted under its reason")


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    host = sys.argv[1]
    tmp = tempfile.mkdtemp(prefix="uiw-replay-")
    try:
        inp, exp, out = (os.path.join(tmp, n) for n in ("in.pcap", "expected.pcap", "out.pcap"))
        subprocess.run([sys.executable, os.path.join(HERE, "..", "data", "mk_replay_pcap.py"), inp, exp],
                       check=True)
        env = dict(os.environ)
        env["UIWARP_CONFIG"] = (f"port=net_pcap0,rx_pcap={inp},tx_pcap={out}; ip=10.0.2.2/24; "
                                "mac=02:00:00:00:02:02; hugepages=off; memory=128; mbufs=1023")
        env.pop("UIWARP_CONF", None)
        r = subprocess.run([host, "--idle-exit", "300", "--duration", "20"], env=env,
                           capture_output=True, text=True, timeout=60)
        print(r.stdout)
        if r.returncode != 0:
            fail(f"uiwarp-host exited {r.returncode}: {r.stderr}")
        expected, got = read_pcap(exp), read_pcap(out)
        check_frames(expected, got)
        check_tshark(out, len(expected))
        check_counters(r.stdout)
        if os.environ.get("UIW_KEEP_CAPTURES"):
            shutil.copy(out, os.environ["UIW_KEEP_CAPTURES"])
        print("PASS")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
