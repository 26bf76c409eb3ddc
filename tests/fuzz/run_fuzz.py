#!/usr/bin/env python3
"""Runs a libFuzzer harness for a bounded time, seeded with the replay test's frames.

usage: run_fuzz.py FUZZER SECONDS [tcp|mpa|rdmap|qp]
With "tcp" the seeds are conversations for fuzz_tcp (handshake, data, close); with "mpa"
they are the byte streams of siw's MPA connections in tests/data/mpa_seeds; with "rdmap"
they are DDP segments of each RDMAP message for fuzz_rdmap; with "qp" they are records for
fuzz_qp (the peer's FPDUs, local work requests, deregistration, time).
"""
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
from pcapio import read_pcap  # noqa: E402


def rec(flags, seq, ack, opts=b"", payload=b"", win=0xFFFF, advance=0):
    return bytes([flags, seq >> 8, seq & 0xFF, ack >> 8, ack & 0xFF, win >> 8, win & 0xFF,
                  len(opts), len(payload), advance]) + opts + payload


def write_tcp_seeds(corpus):
    syn_opts = bytes([2, 4, 5, 0xB4, 4, 2, 8, 10, 0, 0, 0, 1, 0, 0, 0, 0, 1, 3, 3, 7])
    seeds = {
        "passive": b"\0" + rec(0x02, 0, 0, syn_opts) + rec(0x10, 0, 1) +
                   rec(0x18, 0, 1, payload=b"x" * 100) + rec(0x11, 100, 1, advance=5),
        "ooo": b"\0" + rec(0x02, 0, 0, bytes([4, 2, 1, 1])) + rec(0x10, 0, 1) +
               rec(0x10, 200, 1, payload=b"y" * 50) + rec(0x10, 0, 1, payload=b"z" * 200),
        "active": b"\1" + rec(0x12, 0xFFFF, 1, syn_opts) + rec(0x10, 0, 1, payload=b"q" * 10) +
                  rec(0x04, 0, 1, advance=100),
        "rst": b"\0" + rec(0x02, 0, 0) + rec(0x10, 0, 1) + rec(0x04, 50, 0) + rec(0x02, 5, 0),
    }
    for name, data in seeds.items():
        with open(os.path.join(corpus, name), "wb") as f:
            f.write(data)


def write_mpa_seeds(corpus):
    seeds = os.path.join(HERE, "..", "data", "mpa_seeds")
    for name in sorted(os.listdir(seeds)):
        data = open(os.path.join(seeds, name), "rb").read()
        flags = (2 if "-crc" in name and "reject" not in name else 0) | (4 if name.endswith("rep.bin") else 0)
        for seed in (0, 7):
            with open(os.path.join(corpus, f"{name}.{seed}"), "wb") as f:
                f.write(bytes([flags, seed]) + data)


def write_rdmap_seeds(corpus):
    def rec(ulpdu, c1=5, c2=9):
        return len(ulpdu).to_bytes(2, "big") + bytes([c1, c2]) + ulpdu

    def untagged(op, qn, msn, mo=0, rsvd=0, last=True):
        return bytes([0x41 if last else 0x01, 0x40 | op]) + b"".join(
            v.to_bytes(4, "big") for v in (rsvd, qn, msn, mo))

    def tagged(op, stag, to, last=True):
        return bytes([0xC1 if last else 0x81, 0x40 | op]) + stag.to_bytes(4, "big") + to.to_bytes(8, "big")

    read_req = (0x1234).to_bytes(4, "big") + (0).to_bytes(8, "big") + (16).to_bytes(4, "big")
    seeds = {
        "sends": b"\1" + rec(untagged(3, 0, 1) + b"x" * 40) + rec(untagged(5, 0, 2) + b"y" * 3),
        "send2seg": b"\1" + rec(untagged(3, 0, 1, last=False) + b"a" * 64) + rec(untagged(3, 0, 1, 64) + b"b" * 8),
        "write": b"\0" + rec(tagged(0, 0x10000, 0x1000) + b"w" * 32),
        "readreq": b"\0" + rec(untagged(1, 1, 1) + read_req + (0x10000).to_bytes(4, "big") + (0x1000).to_bytes(8, "big")),
        "readresp": b"\2" + rec(tagged(2, 0x10000, 0x1080) + b"r" * 128),
        "terminate": b"\0" + rec(untagged(7, 2, 1) + bytes([0x12, 0x01, 0xC0, 0])),
        "sendinv": b"\1" + rec(untagged(4, 0, 1, rsvd=0x10202) + b"i" * 4),
    }
    for name, data in seeds.items():
        with open(os.path.join(corpus, name), "wb") as f:
            f.write(data)


def write_qp_seeds(corpus):
    """Records for fuzz_qp: [kind][a][b][length][octets] after a flags byte."""
    def rec(kind, data=b"", a=0, b=0):
        return bytes([kind, a, b]) + len(data).to_bytes(2, "big") + data

    def untagged(op, qn, msn, mo=0, rsvd=0, last=True):
        return bytes([0x41 if last else 0x01, 0x40 | op]) + b"".join(
            v.to_bytes(4, "big") for v in (rsvd, qn, msn, mo))

    def tagged(op, stag, to, last=True):
        return bytes([0xC1 if last else 0x81, 0x40 | op]) + stag.to_bytes(4, "big") + to.to_bytes(8, "big")

    def read_req(msn, size, src_stag=0x10202, src_to=0x3000):
        return untagged(1, 1, msn) + (0x777).to_bytes(4, "big") + (0).to_bytes(8, "big") + \
            size.to_bytes(4, "big") + src_stag.to_bytes(4, "big") + src_to.to_bytes(8, "big")

    # a local Read (kind 4, a % 6 == 5, signaled): region 0, offset 0, 64 octets, from STag 0x20000
    local_read = rec(4, bytes([0, 0, 64, 0, 0, 2, 0, 0, 0, 0, 0x80, 0]), a=0x83, b=0)
    seeds = {
        "sends": b"\3" + rec(0, untagged(3, 0, 1) + b"x" * 40, 5, 9) + rec(0, untagged(5, 0, 2) + b"y" * 3),
        "write": b"\0" + rec(0, tagged(0, 0x10202, 0x3000) + b"w" * 200, 100, 50),
        "readreq": b"\1" + rec(0, read_req(1, 256)) + rec(7, a=2),
        "readreq_dereg": b"\1" + rec(0, read_req(1, 256)) + rec(5) + rec(7, a=5),
        "readresp": b"\5" + rec(0, tagged(2, 0x10000, 0x1080) + b"r" * 128),
        "local_read": b"\1" + local_read + rec(0, tagged(2, 0x10000, 0x1000) + b"q" * 64) + rec(7, a=3),
        "terminate": b"\0" + rec(0, untagged(7, 2, 1) + bytes([0x12, 0x01, 0xC0, 0])),
        "sendinv": b"\3" + rec(0, untagged(4, 0, 1, rsvd=0x10202) + b"i" * 4) + rec(0, tagged(0, 0x10202, 0x3000) + b"z"),
        "local_sends": b"\3" + rec(4, bytes([0, 0, 100]), a=0x80) + rec(4, bytes([10, 0, 20, 0x82]), a=0x84) + rec(7, a=20, b=1) + rec(7, a=100),
        "rst": b"\0" + rec(3, b"", a=0x14) + rec(0, untagged(3, 0, 1)),
    }
    for name, data in seeds.items():
        with open(os.path.join(corpus, name), "wb") as f:
            f.write(data)


def main():
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    fuzzer, seconds = sys.argv[1], int(sys.argv[2])
    mode = sys.argv[3] if len(sys.argv) > 3 else ""
    tcp = mode == "tcp"
    tmp = tempfile.mkdtemp(prefix="uiw-fuzz-")
    try:
        inp, exp = os.path.join(tmp, "in.pcap"), os.path.join(tmp, "exp.pcap")
        subprocess.run([sys.executable, os.path.join(HERE, "..", "data", "mk_replay_pcap.py"), inp, exp],
                       check=True)
        corpus = os.path.join(tmp, "corpus")
        os.mkdir(corpus)
        if tcp:
            write_tcp_seeds(corpus)
        if mode == "mpa":
            write_mpa_seeds(corpus)
        if mode == "rdmap":
            write_rdmap_seeds(corpus)
        if mode == "qp":
            write_qp_seeds(corpus)
        for i, frame in enumerate([] if mode else read_pcap(inp) + read_pcap(exp)):
            with open(os.path.join(corpus, f"seed{i:03d}"), "wb") as f:
                f.write(b"\0\0" + frame)                    # one segment
            with open(os.path.join(corpus, f"seed{i:03d}s"), "wb") as f:
                f.write(bytes([1, min(len(frame), 40)]) + frame)  # split at byte 40
        r = subprocess.run([fuzzer, f"-max_total_time={seconds}", "-max_len=" + ("8192" if mode in ("mpa", "qp") else "2048"),
                            f"-artifact_prefix={tmp}/", "-print_final_stats=1", corpus])
        if r.returncode != 0:
            for name in os.listdir(tmp):
                if name.startswith(("crash-", "leak-", "timeout-", "oom-")):
                    data = open(os.path.join(tmp, name), "rb").read()
                    print(f"{name}: {data.hex()}")
            print("FAIL: the fuzzer found a problem")
            sys.exit(1)
        print("PASS: no crash, leak or check failure")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
