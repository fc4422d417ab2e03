#!/usr/bin/env python3
"""holdconns.py PORT N READY [MAX_S]: a local user's idle connections to 127.0.0.1:PORT.

Opens N TCP connections, sends nothing (no TLS handshake), and writes "held N" to the file READY once every
connect has completed. Then waits until the server has closed every one (end of file or reset) and prints
"closed N after S s" (S counted from READY), exit 0; or "K of N still open after MAX_S s", exit 1.
The caller raises `ulimit -n` above N."""
import os
import select
import socket
import sys
import time


def main():
    port, n, ready = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    max_s = float(sys.argv[4]) if len(sys.argv) > 4 else 30.0
    ep = select.epoll()
    socks = {}
    for _ in range(n):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setblocking(False)
        err = s.connect_ex(("127.0.0.1", port))
        if err not in (0, 115):  # EINPROGRESS
            sys.exit("connect: %s" % os.strerror(err))
        socks[s.fileno()] = s
    # every connect completes (the kernel's accept queue takes them, or the server did)
    pending = set(socks)
    for fd in pending:
        ep.register(fd, select.EPOLLOUT)
    deadline = time.monotonic() + max_s
    while pending and time.monotonic() < deadline:
        for fd, _ in ep.poll(1.0):
            if fd in pending:
                pending.discard(fd)
                ep.modify(fd, select.EPOLLIN | select.EPOLLRDHUP)
    if pending:
        sys.exit("%d of %d connects did not complete" % (len(pending), n))
    with open(ready + ".tmp", "w") as f:
        f.write("held %d\n" % n)
    os.rename(ready + ".tmp", ready)
    t0 = time.monotonic()
    open_fds = set(socks)
    deadline = t0 + max_s
    while open_fds and time.monotonic() < deadline:
        for fd, _ in ep.poll(0.5):
            if fd not in open_fds:
                continue
            try:
                data = socks[fd].recv(4096)
            except (ConnectionResetError, BlockingIOError) as e:
                if isinstance(e, BlockingIOError):
                    continue
                data = b""
            if not data:
                ep.unregister(fd)
                open_fds.discard(fd)
    if open_fds:
        print("%d of %d still open after %.0f s" % (len(open_fds), n, max_s))
        sys.exit(1)
    print("closed %d after %.1f s" % (n, time.monotonic() - t0))


if __name__ == "__main__":
    main()
