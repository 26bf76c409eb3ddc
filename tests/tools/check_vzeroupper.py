#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""No function of ours leaves the upper halves of the vector registers dirty.

The x86-64 ABI wants the upper state clean (VZEROUPPER) wherever code that used 256- or
512-bit registers calls out or returns: with it dirty, every SSE instruction that runs
after it, in any function, pays for a state transition or a merge. GCC inserts the
VZEROUPPER itself, but with LTO it once made the CRC's tail call a jump without one
(core/uiw_crc32c.c, fold_finish_wide()), and 64 KiB Writes lost 40% of their rate.

For each binary given: objdump's disassembly, each function's control flow followed from
its entry (clean), an instruction naming a %ymm or %zmm register making the state dirty and
VZEROUPPER or VZEROALL making it clean. A return or a tail jump (a jump to another symbol)
reached dirty is reported, with its function and address; so is a call made dirty (none
of our functions takes vector arguments). An indirect jump (a switch's table) is not
followed. Every function in the binaries is checked (the C library and DPDK are shared
libraries, not in them), or those whose names match --only (a regular expression).
"""
import re
import subprocess
import sys

FUNC = re.compile(r"^([0-9a-f]+) <(.+)>:$")
INSN = re.compile(r"^\s*([0-9a-f]+):\t(.*)$")
TARGET = re.compile(r"^([0-9a-f]+) <([^>+]+)(\+0x[0-9a-f]+)?>$")


def functions(path):
    out = subprocess.run(["objdump", "-d", "--no-show-raw-insn", "-w", path],
                         capture_output=True, text=True, check=True).stdout
    name, body = None, []
    for line in out.splitlines():
        m = FUNC.match(line)
        if m:
            if name is not None:
                yield name, body
            name, body = m.group(2), []
            continue
        m = INSN.match(line)
        if m and name is not None:
            body.append((int(m.group(1), 16), m.group(2).split("#")[0].strip()))
    if name is not None:
        yield name, body


def check(name, body):
    """@return the exits reached dirty, as (address, instruction)."""
    at = {a: i for i, (a, _) in enumerate(body)}
    dirty_in = [False] * len(body)
    seen = [False] * len(body)
    work = [(0, False)]
    bad = []
    while work:
        i, dirty = work.pop()
        if i >= len(body) or (seen[i] and (dirty_in[i] or not dirty)):
            continue
        seen[i], dirty_in[i] = True, dirty_in[i] or dirty
        addr, ins = body[i]
        op = ins.split()[0] if ins else ""
        if op in ("vzeroupper", "vzeroall"):
            dirty = False
        elif "%ymm" in ins or "%zmm" in ins:
            dirty = True
        if op.startswith("ret"):
            if dirty:
                bad.append((addr, ins))
            continue
        if op.startswith("call"):
            if dirty:
                bad.append((addr, ins))
            work.append((i + 1, dirty))
            continue
        if op.startswith("j"):
            arg = ins[len(op):].strip()
            t = TARGET.match(arg)
            if t is None:             # an indirect jump: a table's targets are not followed
                continue
            if t.group(2) != name:    # a tail jump out of the function
                if dirty:
                    bad.append((addr, ins))
            elif int(t.group(1), 16) in at:
                work.append((at[int(t.group(1), 16)], dirty))
            if op != "jmp":
                work.append((i + 1, dirty))
            continue
        if op in ("ud2", "hlt"):
            continue
        work.append((i + 1, dirty))
    return bad


def main(argv):
    only = re.compile(r".")
    paths = []
    it = iter(argv[1:])
    for a in it:
        if a == "--only":
            only = re.compile(next(it))
        else:
            paths.append(a)
    failed = 0
    for path in paths:
        n = 0
        for name, body in functions(path):
            if not only.search(name) or name.endswith("@plt"):
                continue
            n += 1
            for addr, ins in check(name, body):
                print(f"{path}: {name} leaves at {addr:x} ({ins}) with the upper "
                      "vector state dirty (no VZEROUPPER)")
                failed += 1
        if n == 0:
            print(f"{path}: no function matched {only.pattern}")
            failed += 1
        else:
            print(f"{path}: {n} functions checked")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
