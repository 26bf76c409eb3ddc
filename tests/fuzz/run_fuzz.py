#!/usr/bin/env python3
"""Runs a libFuzzer harness for a bounded time, seeded with the replay test's frames.

usage: run_fuzz.py FUZZER SECONDS
"""
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
from pcapio import read_pcap  # noqa: E402


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    fuzzer, seconds = sys.argv[1], int(sys.argv[2])
    tmp = tempfile.mkdtemp(prefix="uiw-fuzz-")
    try:
        inp, exp = os.path.join(tmp, "in.pcap"), os.path.join(tmp, "exp.pcap")
        subprocess.run([sys.executable, os.path.join(HERE, "..", "data", "mk_replay_pcap.py"), inp, exp],
                       check=True)
        corpus = os.path.join(tmp, "corpus")
        os.mkdir(corpus)
        for i, frame in enumerate(read_pcap(inp) + read_pcap(exp)):
            with open(os.path.join(corpus, f"seed{i:03d}"), "wb") as f:
                f.write(b"\0\0" + frame)                    # one segment
            with open(os.path.join(corpus, f"seed{i:03d}s"), "wb") as f:
                f.write(bytes([1, min(len(frame), 40)]) + frame)  # split at byte 40
        r = subprocess.run([fuzzer, f"-max_total_time={seconds}", "-max_len=2048",
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
