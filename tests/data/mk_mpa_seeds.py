#!/usr/bin/env python3
"""Builds the MPA fuzz seeds from captures of Linux siw (../shared/captures): for each TCP
connection and direction, the first 4 KiB of its byte stream, starting with the MPA
Request or Reply. Writes DIR/<capture>-<stream>-<dir>.bin.

usage: mk_mpa_seeds.py OUTDIR CAPTURE...    (needs tshark)
"""
import collections
import os
import subprocess
import sys

LIMIT = 4096


def main():
    out = sys.argv[1]
    for cap in sys.argv[2:]:
        rows = subprocess.run(["tshark", "-r", cap, "-Y", "tcp.len > 0", "-T", "fields",
                               "-e", "tcp.stream", "-e", "tcp.srcport", "-e", "tcp.payload"],
                              capture_output=True, text=True, check=True).stdout.splitlines()
        streams = collections.OrderedDict()
        for row in rows:
            stream, sport, payload = row.split("\t")
            key = (int(stream), int(sport))
            data = streams.setdefault(key, bytearray())
            if len(data) < LIMIT:
                data += bytes.fromhex(payload.replace(":", ""))
        base = os.path.splitext(os.path.basename(cap))[0]
        for n, ((stream, sport), data) in enumerate(streams.items()):
            if not data.startswith(b"MPA ID Re"):
                continue
            name = f"{base}-{stream}-{'req' if data[7:10] == b'Req' else 'rep'}.bin"
            with open(os.path.join(out, name), "wb") as f:
                f.write(bytes(data[:LIMIT]))


if __name__ == "__main__":
    main()
