#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""The drop-in libibverbs.so exports at UIWARP_PRIVATE_1 exactly what librdmacm.so takes.

Every symbol a shared library exports is one the link-time optimiser must keep whole and
may not make local: a function exported without need keeps its own out-of-line body, and
GCC weighs inlining it as if its body had to stay anyway. libibverbs.so once exported
every uiw_ symbol (383 of them) where librdmacm.so, the only user of that version node,
takes 48. A symbol librdmacm.so needs and libibverbs.so lacks fails librdmacm's link; this
test fails the other way: one exported that nothing takes.

Usage: check_private_exports.py LIBIBVERBS LIBRDMACM
"""
import sys

from check_self_plt import dynamic_symbols

NODE = "UIWARP_PRIVATE_1"


def symbols(path, which):
    return {name for name, node in dynamic_symbols(path, which) if node == NODE}


def main(argv):
    if len(argv) != 3:
        print(__doc__.strip().splitlines()[-1])
        return 2
    exported = symbols(argv[1], "--defined-only")
    taken = symbols(argv[2], "--undefined-only")
    spare = sorted(exported - taken)
    missing = sorted(taken - exported)
    for n in spare:
        print(f"{argv[1]}: exports {n}@{NODE}, which {argv[2]} does not take")
    for n in missing:
        print(f"{argv[2]}: takes {n}@{NODE}, which {argv[1]} does not export")
    print(f"{NODE}: {len(exported)} exported, {len(taken)} taken, "
          f"{len(spare)} spare, {len(missing)} missing")
    if not taken:
        print(f"{argv[2]} takes nothing at {NODE}: wrong libraries given?")
        return 1
    return 1 if spare or missing else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
