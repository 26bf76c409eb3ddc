#!/usr/bin/env python3
"""Judges iWARP captures with tshark's dissectors (iwarp_mpa, iwarp_ddp_rdmap).

A capture fails when tshark finds a bad MPA CRC, a malformed frame or an error-level expert
finding (bad ULPDU length, private data over 512 octets), or when it recognises no MPA
Request, or no FPDU in a connection that was not rejected. Prints one line per capture.

With --one-fpdu-per-segment, every TCP segment that carries an FPDU must carry exactly one,
whole (what uiwarp sends; RFC 5044 §4.1 asks senders to align FPDUs with segments).

usage: iwarp_check.py [--one-fpdu-per-segment] CAPTURE...
exit 0 clean, 1 a problem, 2 tshark missing
"""
import collections
import re
import shutil
import subprocess
import sys

# Send payloads look like other protocols to tshark's heuristics; those are not ours.
OPTS = ["-o", "tcp.try_heuristic_first:TRUE",
        "--disable-protocol", "rpcordma", "--disable-protocol", "smb_direct"]


def misaligned(path):
    """Frames whose TCP payload is not exactly one FPDU (length, pad, CRC and Markers)."""
    rows = subprocess.run(["tshark", "-r", path, *OPTS, "-Y", "iwarp_mpa.ulpdulength",
                           "-T", "fields", "-e", "frame.number", "-e", "tcp.len",
                           "-e", "iwarp_mpa.ulpdulength", "-e", "iwarp_mpa.marker_fpduptr"],
                          capture_output=True, text=True).stdout.splitlines()
    bad = []
    for row in rows:
        num, tcp_len, ulens, fpduptrs = (row.split("\t") + ["", "", "", ""])[:4]
        lens = [int(x) for x in ulens.split(",") if x]
        markers = len([x for x in fpduptrs.split(",") if x])
        want = sum(2 + n + (4 - (n + 2) % 4) % 4 + 4 for n in lens) + 4 * markers
        if len(lens) != 1 or int(tcp_len) != want:
            bad.append(num)
    return bad


def judge(path, aligned=False):
    detail = subprocess.run(["tshark", "-r", path, *OPTS, "-V"], capture_output=True, text=True)
    if detail.returncode != 0:
        return False, "tshark cannot read it"
    text = detail.stdout
    count = {
        "requests": len(re.findall(r"^\s+Request frame header", text, re.M)),
        "replies": len(re.findall(r"^\s+Reply frame header", text, re.M)),
        "rejects": len(re.findall(r"Connection rejected flag: True", text)),
        "fpdus": len(re.findall(r"ULPDU length: \d+", text)),
        "markers": len(re.findall(r"FPDU back pointer: \d+", text)),
        "good_crc": len(re.findall(r"Good CRC32", text)),
    }
    bad_crc = len(re.findall(r"Bad CRC32", text))
    malformed = len(re.findall(r"Malformed Packet", text))
    errors = re.findall(r"Expert Info \(Error/[^)]*\): (.*)", text)
    fields = subprocess.run(["tshark", "-r", path, *OPTS, "-Y", "iwarp_rdma", "-T", "fields",
                             "-e", "iwarp_rdma.opcode"], capture_output=True, text=True).stdout
    ops = collections.Counter(o for line in fields.split() for o in line.split(",") if o)
    summary = " ".join(f"{k}={v}" for k, v in count.items())
    summary += " opcodes=[" + " ".join(f"{o}x{n}" for o, n in sorted(ops.items())) + "]"
    problems = []
    if bad_crc:
        problems.append(f"{bad_crc} bad CRC")
    if malformed:
        problems.append(f"{malformed} malformed")
    if errors:
        problems.append("errors: " + "; ".join(sorted(set(errors))[:3]))
    if aligned:
        bad = misaligned(path)
        if bad:
            problems.append(f"{len(bad)} segments not exactly one FPDU (frames {','.join(bad[:5])})")
    if count["requests"] == 0:
        problems.append("no MPA Request recognised")
    elif count["fpdus"] == 0 and count["rejects"] == 0:
        problems.append("no FPDU and no reject")
    return not problems, summary + (" -> " + ", ".join(problems) if problems else " -> ok")


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    if shutil.which("tshark") is None:
        print("tshark not found")
        return 2
    args = sys.argv[1:]
    aligned = "--one-fpdu-per-segment" in args
    ok_all = True
    for path in [a for a in args if a != "--one-fpdu-per-segment"]:
        ok, line = judge(path, aligned)
        print(f"{path}: {line}")
        ok_all &= ok
    return 0 if ok_all else 1


if __name__ == "__main__":
    sys.exit(main())
