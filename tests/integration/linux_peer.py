#!/usr/bin/env python3
"""A Linux TCP peer for the interop tests: the kernel's own TCP through ordinary sockets.

  linux_peer.py server PORT (sink|source) BYTES CONNS   serve CONNS connections, then exit
  linux_peer.py client HOST PORT (sink|source) BYTES    one connection

A source sends BYTES pseudo-random bytes and closes its side; a sink reads until the peer
closes. Each connection prints "sent N sha256 H" or "received N sha256 H".
"""
import hashlib
import os
import selectors
import socket
import sys

BLOCK = os.urandom(1 << 20)


class Conn:
    def __init__(self, sock, mode, nbytes):
        self.sock, self.mode, self.left = sock, mode, nbytes
        self.count, self.hash, self.view, self.done = 0, hashlib.sha256(), b"", False
        sock.setblocking(False)

    def step(self):
        """Moves data; returns True when the connection is finished."""
        if self.mode == "sink":
            try:
                data = self.sock.recv(1 << 20)
            except BlockingIOError:
                return False
            if not data:
                print(f"received {self.count} sha256 {self.hash.hexdigest()}", flush=True)
                return True
            self.count += len(data)
            self.hash.update(data)
            return False
        while self.left > 0:
            if not self.view:
                n = min(self.left, len(BLOCK))
                self.view = memoryview(BLOCK)[:n]
            try:
                sent = self.sock.send(self.view)
            except BlockingIOError:
                return False
            self.hash.update(self.view[:sent])
            self.view = self.view[sent:]
            self.left -= sent
            self.count += sent
        if not self.done:
            self.sock.shutdown(socket.SHUT_WR)
            self.done = True
        # Wait for the peer's FIN before reporting.
        try:
            while self.sock.recv(65536):
                pass
        except BlockingIOError:
            return False
        print(f"sent {self.count} sha256 {self.hash.hexdigest()}", flush=True)
        return True


def serve(port, mode, nbytes, conns):
    sel = selectors.DefaultSelector()
    lsock = socket.socket()
    lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    lsock.bind(("0.0.0.0", port))
    lsock.listen(4096)
    lsock.setblocking(False)
    sel.register(lsock, selectors.EVENT_READ, None)
    print("listening", flush=True)
    finished = 0
    while finished < conns:
        for key, _ in sel.select(timeout=1):
            if key.data is None:
                try:
                    s, _ = lsock.accept()
                except BlockingIOError:
                    continue
                c = Conn(s, mode, nbytes)
                events = selectors.EVENT_READ | (selectors.EVENT_WRITE if mode == "source" else 0)
                sel.register(s, events, c)
                continue
            c = key.data
            if c.step():
                sel.unregister(c.sock)
                c.sock.close()
                finished += 1


def client(host, port, mode, nbytes):
    s = socket.create_connection((host, port), timeout=30)
    c = Conn(s, mode, nbytes)
    sel = selectors.DefaultSelector()
    sel.register(s, selectors.EVENT_READ | (selectors.EVENT_WRITE if mode == "source" else 0), c)
    while True:
        sel.select(timeout=1)
        if c.step():
            break
    s.close()


def main():
    a = sys.argv[1:]
    if len(a) == 5 and a[0] == "server":
        serve(int(a[1]), a[2], int(a[3]), int(a[4]))
    elif len(a) == 5 and a[0] == "client":
        client(a[1], int(a[2]), a[3], int(a[4]))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
