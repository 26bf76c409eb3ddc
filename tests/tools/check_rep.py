#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""No rep movs or rep stos on the data path.

A string instruction with a rep prefix takes tens of cycles to start on the CPUs this
stack runs on, more than the copy or clear of a few dozen octets it is used for. GCC
emits one for a copy or clear whose size it does not know (meson.build sends those to the
C library instead), for an initializer that clears a structure before its fields are set
(whatever the flags say), and, with LTO, for every bounded copy when the link did not run
under the machine flags the code was compiled with: the tail of each CRC-and-copy and the
leading pieces of each FPDU went back to rep movsq so, and 64 KiB Sends lost some 7% of
the sender's time.

For each binary given: every rep movs / rep stos in objdump's disassembly, traced by
addr2line to the function whose source line it was generated from (the innermost of the
inlined ones). It is reported when that source is on the data path: the TCP, MPA, DDP and
RDMAP layers, the wire formats, the verbs library, the CRC and the checksum, the mbuf
helpers; except in the functions of SETUP, which run once a listener, connection or stack.
Other set-up code (configuration, the port's opening, the apps' main) is not looked at.
A binary without line information (built without -g) is not checked.
"""
import re
import subprocess
import sys

from check_vzeroupper import functions

REP = re.compile(r"\brep[a-z]*\s+(movs|stos)")
DATA_PATH = re.compile(r"/(tcp|mpa|ddp|rdma|wire|lib/verbs)/[^/]+$|"
                       r"/core/uiw_(crc32c|csum|mbuf)\.[ch]$")

# Once a listener, a connection or a stack, never a segment or a message.
SETUP = {"uiw_mpa_listen", "uiw_net_set_engines", "uiw_mpa_deframer_init",
         "uiw_ddp_stream_init", "uiw_tcp_sndq_clear", "uiw_mpa_params_from_config"}


def reps(path):
    """@return [(address, symbol, instruction)] of each rep movs / rep stos."""
    return [(addr, name, ins) for name, body in functions(path)
            for addr, ins in body if REP.search(ins)]


def has_lines(path):
    """Whether @p path carries DWARF line information (a build with -g)."""
    out = subprocess.run(["objdump", "-h", path], capture_output=True, text=True,
                         check=True).stdout
    return ".debug_line" in out


def sources(path, addrs):
    """@return {address: (function, file:line)} of the innermost inlined frame."""
    if not addrs:
        return {}
    out = subprocess.run(["addr2line", "-a", "-i", "-f", "-e", path] +
                         [hex(a) for a in addrs],
                         capture_output=True, text=True, check=True).stdout.splitlines()
    where, cur, i = {}, None, 0
    while i < len(out):
        if out[i].startswith("0x"):
            cur = int(out[i], 16)
            i += 1
            continue
        if cur is not None and cur not in where and i + 1 < len(out):
            where[cur] = (out[i], out[i + 1].split(" ")[0])
        i += 2
    return where


def main(argv):
    failed = checked = 0
    for path in argv[1:]:
        if not has_lines(path):
            print(f"{path}: no line information (a build without -g): not checked")
            continue
        checked += 1
        found = reps(path)
        where = sources(path, [a for a, _, _ in found])
        bad = 0
        for addr, sym, ins in found:
            fn, src = where.get(addr, ("??", "??"))
            if src.startswith("??"):
                print(f"{path}: {ins} at {addr:x} in {sym}: no line information for it")
                bad += 1
            elif DATA_PATH.search(src.rsplit(":", 1)[0]) and fn not in SETUP:
                print(f"{path}: {ins} at {addr:x} in {sym}, from {fn} ({src})")
                bad += 1
        print(f"{path}: {len(found)} rep movs/stos, {bad} on the data path")
        failed += bad
    if checked == 0:
        return 77   # meson: skipped
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
