#!/usr/bin/env python3
"""The STYLE.md rules a machine can check, over the source tree and the built layers.

- The folders stand in stack order (STACK below): no file includes a header of a folder
  above its own, and every wire header lives in wire/.
- *_wire.h: no bitfields, no function prototypes, a sizeof static_assert after every struct.
- Byte-order conversions (ntoh*, hton*, rte_be_to_cpu_*, rte_cpu_to_be_*) only in wire/
  (never in the protocol layers tcp/ mpa/ ddp/ rdma/).
- Functions in the protocol layers at most 100 lines.
- Tests use ck_assert_*, never the deprecated fail_unless/fail_if, and include no .c file.
- Protocol layer libraries have no writable static data (objdump: nothing in .data or .bss).
- No thread is registered with the EAL (rte_thread_register, rte_thread_unregister): the
  stack reads a copy of the EAL's lcore id that only rte_eal_init() sets (core/uiw_lcore_id.h).
- Every global symbol the stack's static libraries define carries the project prefix uiw_,
  but for the rdma-core API the verbs library provides (the names in the drop-in libraries'
  version scripts).

usage: check_style.py SOURCE_ROOT [PROTOCOL_LAYER_LIBRARY.a ...]
                      [--prefix LIBRARY.a ...] [--api VERSION_SCRIPT.map ...]
"""
import os
import re
import subprocess
import sys

LAYERS = ("tcp", "mpa", "ddp", "rdma")
# Bottom to top. A folder may include headers of its own rank or below; tests/ sees all.
STACK = ("wire", "core", "tcp", "mpa", "ddp", "rdma", "lib/stack", "lib/verbs",
         "lib/verbs/dropin", "apps")
MAX_FUNC_LINES = 100
problems = []


def files_under(root, dirs, exts):
    for d in dirs:
        for base, _, names in os.walk(os.path.join(root, d)):
            for n in sorted(names):
                if n.endswith(exts):
                    yield os.path.join(base, n)


def check_wire_header(path):
    text = open(path).read()
    lines = text.splitlines()
    for i, line in enumerate(lines, 1):
        if re.search(r"^\s+[\w ]+\s+\w+\s*:\s*\d+\s*;", line):
            problems.append(f"{path}:{i}: bitfield in a wire header")
        if re.match(r"^[A-Za-z_][\w \*]*\([^;]*\)\s*;\s*$", line) and "static_assert" not in line:
            problems.append(f"{path}:{i}: function prototype in a wire header")
    for m in re.finditer(r"^struct (\w+) \{", text, re.M):
        name = m.group(1)
        rest = text[m.end():]
        nxt = re.search(r"^struct \w+ \{", rest, re.M)
        scope = rest[:nxt.start()] if nxt else rest
        if f"static_assert(sizeof(struct {name})" not in scope:
            problems.append(f"{path}: struct {name} has no sizeof static_assert after it")


def check_byte_order(path):
    for i, line in enumerate(open(path), 1):
        if re.search(r"\b(ntohl|ntohs|htonl|htons|rte_be_to_cpu_\d+|rte_cpu_to_be_\d+)\s*\(", line):
            problems.append(f"{path}:{i}: byte-order conversion outside a *_wire.h")


def check_function_lengths(path):
    lines = open(path).read().splitlines()
    start = None
    for i, line in enumerate(lines):
        if line == "{" and i > 0 and "(" in "".join(lines[max(0, i - 4):i]):
            start = i
        elif line == "}" and start is not None:
            if i - start - 1 > MAX_FUNC_LINES:
                problems.append(f"{path}:{start}: function of {i - start - 1} lines (max {MAX_FUNC_LINES})")
            start = None


def header_folders(root):
    """Basename of every header in the stack's folders -> its folder."""
    where = {}
    for folder in STACK:
        d = os.path.join(root, folder)
        if os.path.isdir(d):
            for n in os.listdir(d):
                if n.endswith(".h"):
                    where[n] = folder
    return where


def check_layer_order(root, path, where):
    folder = os.path.relpath(os.path.dirname(path), root)
    rank = STACK.index(folder)
    for i, line in enumerate(open(path), 1):
        m = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
        if not m:
            continue
        target = where.get(os.path.basename(m.group(1)))
        if target is not None and STACK.index(target) > rank:
            problems.append(f"{path}:{i}: includes {m.group(1)} from {target}/, above {folder}/")
    if path.endswith("_wire.h") and folder != "wire":
        problems.append(f"{path}: wire headers live in wire/")


def check_test(path):
    for i, line in enumerate(open(path), 1):
        if re.search(r"\bfail_(unless|if)\s*\(", line):
            problems.append(f"{path}:{i}: deprecated Check macro")
        if re.match(r'\s*#\s*include\s+".*\.c"', line):
            problems.append(f"{path}:{i}: a test includes a .c file")


def check_library(lib):
    out = subprocess.run(["objdump", "-t", lib], capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        # "ADDR flags O SECTION SIZE NAME": objects in .data or .bss are writable
        # (.data.rel.ro is read-only once relocated).
        m = re.match(r"^[0-9a-f]+ (.{7}) (\.data|\.bss)(\.\S+)?\s+[0-9a-f]+\s+(\S+)$", line)
        if m and "O" in m.group(1) and not (m.group(3) or "").startswith(".rel.ro"):
            problems.append(f"{lib}: writable data {m.group(4)} in {m.group(2)}{m.group(3) or ''}")


def api_names(maps):
    names = set()
    for path in maps:
        for line in open(path):
            m = re.match(r"^\s+([A-Za-z_]\w*);", line)
            if m:
                names.add(m.group(1))
    return names


def check_prefix(lib, api):
    out = subprocess.run(["nm", "-g", "--defined-only", lib], capture_output=True, text=True,
                         check=True).stdout
    for line in out.splitlines():
        f = line.split()
        if len(f) == 3 and not f[2].startswith(("uiw_", "UIW_")) and f[2] not in api:
            problems.append(f"{lib}: global symbol {f[2]} has no uiw_ prefix")


def check_lcore_registration(path):
    for i, line in enumerate(open(path), 1):
        if re.search(r"\brte_thread_(un)?register\s*\(", line):
            problems.append(f"{path}:{i}: a thread registered with the EAL: the stack's copy "
                            "of the lcore id would no longer match (core/uiw_lcore_id.h)")


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    root = sys.argv[1]
    layers, prefix_only, maps, into = [], [], [], None
    for a in sys.argv[2:]:
        if a in ("--prefix", "--api"):
            into = prefix_only if a == "--prefix" else maps
        else:
            (into if into is not None else layers).append(a)
    nfiles = 0
    for path in files_under(root, ("wire",), ("_wire.h",)):
        check_wire_header(path)
    where = header_folders(root)
    for folder in STACK:
        d = os.path.join(root, folder)
        for n in sorted(os.listdir(d)) if os.path.isdir(d) else ():
            if n.endswith((".c", ".h")):
                check_layer_order(root, os.path.join(d, n), where)
                nfiles += 1
    for path in files_under(root, LAYERS, (".c", ".h")):
        if not path.endswith("_wire.h"):
            check_byte_order(path)
        if path.endswith(".c"):
            check_function_lengths(path)
        nfiles += 1
    for path in files_under(root, ("tests",), (".c", ".h")):
        check_test(path)
        nfiles += 1
    for path in files_under(root, STACK + ("tests",), (".c", ".h")):
        check_lcore_registration(path)
    api = api_names(maps)
    for lib in layers:
        check_library(lib)
    for lib in layers + prefix_only:
        check_prefix(lib, api)
    for p in problems:
        print(p)
    print(f"checked {nfiles} files and {len(layers) + len(prefix_only)} libraries: "
          f"{len(problems)} problems")
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
