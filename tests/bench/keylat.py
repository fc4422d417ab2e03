#!/usr/bin/env python3
"""keylat.py [--rows R --cols C] [--after MS] [--limit S] [--log FILE --lists N] FIRST KEY ANSWER CMD...

Runs CMD in a pseudo-terminal of its own (nothing between it and the reader), waits until the regex FIRST matches
what CMD wrote, reads on for MS milliseconds, then writes KEY (Python escapes: '?', '\\x1b') and prints one line:
  first_ms=N key_ms=K busy=B
first_ms: from fork until FIRST matched; key_ms: from writing KEY until the regex ANSWER matches what CMD wrote
after it (-1 if not within --limit seconds); busy: 1 if kvcon's log FILE (KVCON_LOG) said "listed" fewer than N
times when the key was written, i.e. the key came while the lists were still loading (-1 without --log).
With an empty KEY, no key: prints first_ms=N listed_ms=L, L from fork until the log says "listed" N times."""
import argparse, fcntl, os, pty, re, select, signal, struct, termios, time

ap = argparse.ArgumentParser()
ap.add_argument('--rows', type=int, default=40)
ap.add_argument('--cols', type=int, default=120)
ap.add_argument('--after', type=float, default=0)
ap.add_argument('--limit', type=float, default=30)
ap.add_argument('--log', default=None)
ap.add_argument('--lists', type=int, default=4)
ap.add_argument('first')
ap.add_argument('key')
ap.add_argument('answer')
ap.add_argument('cmd', nargs=argparse.REMAINDER)
a = ap.parse_args()
first_rx, answer_rx = re.compile(a.first.encode()), re.compile(a.answer.encode())
key = a.key.encode().decode('unicode_escape').encode('latin-1')

t0 = time.monotonic()
pid, fd = pty.fork()
if pid == 0:
    os.environ.setdefault('TERM', 'xterm-256color')
    os.execvp(a.cmd[0], a.cmd)
fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack('HHHH', a.rows, a.cols, 0, 0))


def read_until(rx, deadline, keep):
    """Reads until rx matches the bytes read (keep: bytes already read to search too); returns (matched, bytes)."""
    buf = keep
    while time.monotonic() < deadline:
        if rx is not None and rx.search(buf):
            return True, buf
        r, _, _ = select.select([fd], [], [], 0.005)
        if r:
            try:
                d = os.read(fd, 1 << 16)
            except OSError:
                return False, buf
            if not d:
                return False, buf
            buf = (buf + d)[-(4 << 20):]
    return rx is not None and rx.search(buf) is not None, buf


def listed():
    try:
        with open(a.log, errors='replace') as f:
            return sum(': listed ' in line for line in f)
    except OSError:
        return 0


first_ms, key_ms, busy = -1, -1, -1
ok, seen = read_until(first_rx, t0 + a.limit, b'')
if ok and not key and a.log:
    first_ms, listed_ms = round((time.monotonic() - t0) * 1000), -1
    while time.monotonic() < t0 + a.limit:
        if listed() >= a.lists:
            listed_ms = round((time.monotonic() - t0) * 1000)
            break
        read_until(None, time.monotonic() + 0.05, b'')
    print(f'first_ms={first_ms} listed_ms={listed_ms}', flush=True)
    os.kill(pid, signal.SIGTERM)
    raise SystemExit(0)
if ok:
    first_ms = round((time.monotonic() - t0) * 1000)
    _, seen = read_until(None, time.monotonic() + a.after / 1000.0, seen)
    if a.log:
        busy = 1 if listed() < a.lists else 0
    k0 = time.monotonic()
    os.write(fd, key)
    ok, _ = read_until(answer_rx, k0 + a.limit, b'')
    if ok:
        key_ms = round((time.monotonic() - k0) * 1000)
print(f'first_ms={first_ms} key_ms={key_ms} busy={busy}', flush=True)
os.kill(pid, signal.SIGTERM)
try:
    read_until(None, time.monotonic() + 0.5, b'')
    os.waitpid(pid, 0)
except OSError:
    pass
