#!/usr/bin/env python3
"""holdconns.py PORT N READY [MAX_S [DRIP]]: a local user's idle connections to 127.0.0.1:PORT.

Opens N TCP connections (paced), sends nothing (no TLS handshake), and writes "held N" to the file READY once
every connect has completed (or 5 s passed). DRIP more (default 0), opened last, finish the TLS handshake and send a request head
without the token one byte a second, never ending it. Then waits until the server has closed every one (end of
file or reset) and prints "closed N after S s" (N counts both kinds; S from READY), exit 0; or "K of N still
open after MAX_S s", exit 1. The caller raises `ulimit -n` above N."""
import os
import select
import socket
import ssl
import sys
import time


def drip_conn(port):
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    s = ctx.wrap_socket(socket.create_connection(("127.0.0.1", port), timeout=10))
    s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Drip: ")
    s.setblocking(False)
    return s


def main():
    port, n, ready = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    max_s = float(sys.argv[4]) if len(sys.argv) > 4 else 30.0
    ndrip = int(sys.argv[5]) if len(sys.argv) > 5 else 0
    ep = select.epoll()
    socks = {}
    for i in range(n):
        if i % 32 == 31:  # paced: a burst past the accept queue would leave connections the server never saw
            time.sleep(0.005)
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setblocking(False)
        err = s.connect_ex(("127.0.0.1", port))
        if err not in (0, 115):  # EINPROGRESS
            sys.exit("connect: %s" % os.strerror(err))
        socks[s.fileno()] = s
    # the connects complete (the kernel's accept queue takes them, or the server did); those that do not within
    # 5 s (a server that stopped accepting) are held as they are
    pending = set(socks)
    for fd in pending:
        ep.register(fd, select.EPOLLOUT)
    deadline = time.monotonic() + min(5.0, max_s)
    while pending and time.monotonic() < deadline:
        for fd, _ in ep.poll(0.5):
            if fd in pending:
                pending.discard(fd)
                ep.modify(fd, select.EPOLLIN | select.EPOLLRDHUP)
    for fd in pending:
        ep.modify(fd, select.EPOLLIN | select.EPOLLRDHUP)
    drips, drip_err = set(), None
    for _ in range(ndrip):
        try:
            s = drip_conn(port)
        except OSError as e:  # the server is not accepting: said at the end, the caller's checks go on
            drip_err = "a dripping connection did not get in: %s" % e
            break
        socks[s.fileno()] = s
        drips.add(s.fileno())
        ep.register(s.fileno(), select.EPOLLIN | select.EPOLLRDHUP)
    with open(ready + ".tmp", "w") as f:
        f.write("held %d\n" % n)
    os.rename(ready + ".tmp", ready)
    t0 = time.monotonic()
    open_fds = set(socks)
    deadline, next_drip = t0 + max_s, t0 + 1
    while open_fds and time.monotonic() < deadline:
        closed = set()
        for fd, _ in ep.poll(0.5):
            if fd not in open_fds:
                continue
            try:
                data = socks[fd].recv(4096)
            except (BlockingIOError, ssl.SSLWantReadError):
                continue
            except OSError:
                data = b""
            if not data:
                closed.add(fd)
        if time.monotonic() >= next_drip:
            next_drip += 1
            for fd in drips & open_fds - closed:
                try:
                    socks[fd].send(b"a")
                except (BlockingIOError, ssl.SSLWantWriteError):
                    pass
                except OSError:
                    closed.add(fd)
        for fd in closed:
            ep.unregister(fd)
            open_fds.discard(fd)
    total = n + len(drips)
    if drip_err:
        print(drip_err)
        sys.exit(1)
    if open_fds:
        print("%d of %d still open after %.0f s" % (len(open_fds), total, max_s))
        sys.exit(1)
    print("closed %d after %.1f s" % (total, time.monotonic() - t0))


if __name__ == "__main__":
    main()
