#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""No shared library of ours calls its own functions through its PLT.

The drop-in libibverbs.so exports the stack's functions (for librdmacm.so), and GCC treats
a function a shared library exports as one another library may interpose: every call to
it, even from the same library, then goes through the PLT and is never inlined. Built so
(without -fno-semantic-interposition), libibverbs.so made 899 such calls between the
stack's own files, the data path's among them, where the tools, linked whole, inline them.

For each shared library given: the functions it defines (its dynamic symbols) against the
targets of its calls and jumps through the PLT (objdump's disassembly); any function in
both is reported.
"""
import re
import subprocess
import sys

PLT_CALL = re.compile(r"\b(?:call|jmp)\s+[0-9a-f]+ <([^>@]+)@plt>")


def dynamic_symbols(path, which="--defined-only"):
    """(name, version node) of each dynamic symbol nm lists with @p which; node '' if none."""
    out = subprocess.run(["nm", "-D", which, path],
                         capture_output=True, text=True, check=True).stdout
    found = []
    for line in out.splitlines():
        if line.strip():
            name, _, node = line.split()[-1].partition("@")
            found.append((name, node.lstrip("@")))
    return found


def defined(path):
    return {name for name, _ in dynamic_symbols(path)}


def plt_targets(path):
    out = subprocess.run(["objdump", "-d", "--no-show-raw-insn", "-w", path],
                         capture_output=True, text=True, check=True).stdout
    found = {}
    for m in PLT_CALL.finditer(out):
        found[m.group(1)] = found.get(m.group(1), 0) + 1
    return found


def main(argv):
    failed = 0
    for path in argv[1:]:
        own = defined(path)
        calls = plt_targets(path)
        bad = sorted(n for n in calls if n in own)
        for n in bad:
            print(f"{path}: {calls[n]} calls of its own {n} through the PLT")
        print(f"{path}: {len(own)} functions defined, {len(calls)} PLT targets, "
              f"{len(bad)} of them its own")
        failed += len(bad)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
