#!/usr/bin/env python3
"""A socket program for librspreload.so: the client sends N octets in pieces of uneven sizes
(37 first, as iperf3's cookie), shuts its sending side, and reads the server's answer: the
SHA-256 of what the server read, then M octets of the server's own, which the client hashes
against what the server says it sent. Plain socket calls (which librspreload.so turns into
rsockets), but accept(): Python calls accept4(), which librspreload.so does not intercept, so
the server calls the C library's accept() (librspreload.so's, as it is preloaded).

usage: rs_hash.py server ADDR PORT M | client ADDR PORT N M
Prints one line: "rs_hash: ok ..." or "rs_hash: FAIL ...", exit 0 or 1.
With $RS_HASH_WAIT_FOR set, the client waits after connecting until that file exists (10 s
at most): a watcher that must see the connection open gets it for as long as it needs.
"""
import ctypes
import hashlib
import os
import random
import socket
import struct
import sys
import time


def stream(seed, n):
    """n deterministic octets, in pieces of uneven sizes."""
    rnd = random.Random(seed)
    sent = 0
    first = True
    while sent < n:
        k = 37 if first else rnd.choice((1, 100, 1448, 4096, 65536, 131072, 300001))
        first = False
        k = min(k, n - sent)
        yield rnd.randbytes(k)
        sent += k


def server(addr, port, m):
    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind((addr, port))
    ls.listen(1)
    libc = ctypes.CDLL(None, use_errno=True)
    fd = libc.accept(ls.fileno(), None, None)
    if fd < 0:
        print(f"rs_hash: FAIL accept: errno {ctypes.get_errno()}")
        return 1
    s = socket.socket(fileno=fd)
    h = hashlib.sha256()
    n = 0
    while True:
        b = s.recv(1 << 20)
        if not b:
            break
        h.update(b)
        n += len(b)
    s.sendall(struct.pack("!Q", n) + h.digest())
    back = hashlib.sha256()
    total = 0
    for piece in stream(2, m):
        s.sendall(piece)
        back.update(piece)
        total += len(piece)
    s.shutdown(socket.SHUT_WR)
    s.recv(1)   # the client's close
    s.close()
    ls.close()
    print(f"rs_hash: ok server read {n} octets, sent {total} (sha256 {back.hexdigest()[:16]})")
    return 0


def client(addr, port, n, m):
    s = socket.create_connection((addr, port))
    wait_for = os.environ.get("RS_HASH_WAIT_FOR")
    deadline = time.monotonic() + 10
    while wait_for and not os.path.exists(wait_for) and time.monotonic() < deadline:
        time.sleep(0.05)
    h = hashlib.sha256()
    for piece in stream(1, n):
        s.sendall(piece)
        h.update(piece)
    s.shutdown(socket.SHUT_WR)
    head = b""
    while len(head) < 40:
        b = s.recv(40 - len(head))
        if not b:
            break
        head += b
    if len(head) < 40:
        print("rs_hash: FAIL the server's answer is short")
        return 1
    got, digest = struct.unpack("!Q", head[:8])[0], head[8:]
    back = hashlib.sha256()
    total = 0
    while True:
        b = s.recv(1 << 20)
        if not b:
            break
        back.update(b)
        total += len(b)
    s.close()
    want = hashlib.sha256()
    for piece in stream(2, m):
        want.update(piece)
    ok = got == n and digest == h.digest() and total == m and back.digest() == want.digest()
    print(f"rs_hash: {'ok' if ok else 'FAIL'} client sent {n} octets, the server read {got} "
          f"({'same' if digest == h.digest() else 'different'} sha256); read back {total} of {m} "
          f"({'same' if back.digest() == want.digest() else 'different'} sha256)")
    return 0 if ok else 1


if __name__ == "__main__":
    if sys.argv[1] == "server":
        sys.exit(server(sys.argv[2], int(sys.argv[3]), int(sys.argv[4])))
    sys.exit(client(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])))
