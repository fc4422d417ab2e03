"""Console benchmarks (standard library only; run by tests/bench/console_bench.sh).

throughput: 20 MB of terminal output (text lines, some SGR colours, like dmesg / ls --color) served by a TCP
  server behind websockify (a real WebSocket peer) into `kvcon console ws://...` running in tmux (so ncurses
  really writes to a terminal). The time runs from the server's first send to the moment kvcon has processed the
  last byte (its --log file, written just before each chunk goes into libvterm, reaches 20 MB and the end marker
  is on the screen). In the same run, tmux alone absorbs the same bytes: a client in another tmux window copies
  the TCP stream to its tty.
latency: kvcon console on a unix-socket echo server inside a pty this script owns; one key at a time, 60 ms
  apart, time from writing the key to the pty until kvcon has drawn the echoed character (read back from the pty),
  against the same echo path without kvcon (a relay copying the pty to the socket and back).
"""
import os
import pty
import re
import select
import socket
import statistics
import subprocess
import sys
import threading
import time

KVCON = os.environ.get("KVCON_BIN", "./kvcon")
TOTAL = int(os.environ.get("BENCH_CONSOLE_BYTES", str(20 * 1000 * 1000)))


def payload():
    lines = []
    i = 0
    size = 0
    while size < TOTAL - 64:
        if i % 7 == 3:
            l = "\033[1;32m[%8d.%06d]\033[0m eth0: link up, 1000 Mbps, \033[33mfull duplex\033[0m, flow %d\r\n" % (i, i * 7 % 999999, i)
        elif i % 11 == 5:
            l = "\033[38;5;%dm%s\033[0m  \033[38;2;%d;%d;%dmfile-%07d.txt\033[0m\r\n" % (
                i % 256, "drwxr-xr-x 2 root root 4096", i % 256, (i * 3) % 256, (i * 7) % 256, i)
        else:
            l = "[%8d.%06d] audit: type=1400 apparmor=\"STATUS\" operation=\"profile_load\" name=\"p%d\" pid=%d\r\n" % (
                i, i * 13 % 999999, i, 1000 + i % 30000)
        lines.append(l)
        size += len(l)
        i += 1
    body = "".join(lines).encode()
    end = b"\r\nBENCH-END-MARKER\r\n"
    pad = TOTAL - len(body) - len(end)
    return body + b"." * max(pad, 0) + end


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def serve_once(data, t0_box, go=None):
    """A TCP server sending data to each client; records the first send time. With go (a threading.Event), each
    connection waits for it before sending (so the reader's CPU counter can be read first) and clears it."""
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", 0))
    srv.listen(4)

    def run():
        while True:
            try:
                c, _ = srv.accept()
            except OSError:
                return
            if go is not None:
                t0_box.append(None)  # connected: the reader's CPU counter may be read now
                go.wait(30)
                go.clear()
                t0_box[-1] = time.monotonic()
            else:
                t0_box.append(time.monotonic())
            try:
                c.sendall(data)
                # keep the connection until the client is done (closing would end the stream early)
                c.settimeout(120)
                c.recv(1)
            except OSError:
                pass
            c.close()

    threading.Thread(target=run, daemon=True).start()
    return srv


def wait(cond, timeout, step=0.002):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(step)
    return False


def proc_cpu(pid):
    """CPU seconds of a process: all its threads' run time from schedstat (nanoseconds; /proc/PID/stat's ticks
    are 10 ms samples, too coarse for runs of a few hundred ms)."""
    total = 0
    try:
        for tid in os.listdir("/proc/%d/task" % pid):
            with open("/proc/%d/task/%s/schedstat" % (pid, tid)) as f:
                total += int(f.read().split()[0])
        return total / 1e9
    except OSError:
        with open("/proc/%d/stat" % pid) as f:
            parts = f.read().rsplit(")", 1)[1].split()
        return (int(parts[11]) + int(parts[12])) / os.sysconf("SC_CLK_TCK")


def tree_cpu(pid):
    """CPU seconds of a process and its children (websockify serves each connection in a forked child)."""
    kids = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout.split()
    total = 0.0
    for p in [pid] + [int(k) for k in kids]:
        try:
            total += proc_cpu(p)
        except OSError:
            pass
    return total


CONSOLE_SUMMARY = re.compile(r"\bconsole: (\d+ frames drawn\b.*)$")


def console_summary(klog):
    """The text after "console: " of kvcon console's last exit line in its log, or None."""
    found = None
    try:
        with open(klog, errors="replace") as f:
            for line in f:
                m = CONSOLE_SUMMARY.search(line.rstrip("\n"))
                if m:
                    found = m.group(1).strip()
    except OSError:
        return None
    return found


def log_tail(path, n=8):
    try:
        with open(path, errors="replace") as f:
            lines = f.readlines()[-n:]
    except OSError as e:
        return "  (cannot read it: %s)\n" % e
    return "".join("  | " + l if l.endswith("\n") else "  | " + l + "\n" for l in lines) or "  (empty)\n"


def kvcon_stderr(tmp):
    """kvcon's stderr of the last run (its `error: ...` lines), for failure messages."""
    path = os.path.join(tmp, "err")
    if not os.path.exists(path) or os.path.getsize(path) == 0:
        return ""
    return "kvcon's stderr:\n" + log_tail(path)


def tmux(*args):
    return subprocess.run(["tmux", "-L", SOCK, "-f", "/dev/null"] + list(args), capture_output=True, text=True).stdout


def run_kvcon(tmp, target, data, t0k, go, peer_pid=None):
    """kvcon console on target in a tmux session; returns (seconds, kvcon CPU seconds, ms until on screen,
    the peer's (websockify's) CPU seconds or None)."""
    log = os.path.join(tmp, "guest-%d.log" % len(os.listdir(tmp)))
    tmux("new-session", "-d", "-s", "b", "-x", "200", "-y", "60", "bash --norc --noprofile")
    klog = log + ".kvcon"
    tmux("send-keys", "-t", "b", "KVCON_LOG=%s %s console %s --log %s 2>%s/err; exit" % (klog, KVCON, target, log, tmp),
         "Enter")
    if not wait(lambda: t0k, 20):
        sys.exit("kvcon did not connect to %s\n%s" % (target, kvcon_stderr(tmp)))
    out = subprocess.run(["pgrep", "-n", "-f", "console %s" % target], capture_output=True, text=True).stdout.split()
    if not out:
        sys.exit("kvcon console %s is not running after connecting\n%s" % (target, kvcon_stderr(tmp)))
    pid = int(out[0])
    cpu0 = proc_cpu(pid)
    peer0 = tree_cpu(peer_pid) if peer_pid else 0
    go.set()
    if not wait(lambda: t0k[-1] is not None, 30):
        sys.exit("the server did not start sending")
    ok = wait(lambda: os.path.exists(log) and os.path.getsize(log) >= len(data), 120, 0.001)
    t1 = time.monotonic()
    cpu1 = proc_cpu(pid)
    peer1 = tree_cpu(peer_pid) if peer_pid else 0
    if not ok:
        sys.exit("kvcon processed only %d of %d bytes\n%s"
                 % (os.path.getsize(log) if os.path.exists(log) else 0, len(data), kvcon_stderr(tmp)))
    shown = wait(lambda: "BENCH-END-MARKER" in tmux("capture-pane", "-p", "-t", "b"), 10, 0.01)
    shown_ms = (time.monotonic() - t1) * 1000 if shown else -1
    tmux("send-keys", "-t", "b", "C-]")
    # kvcon console logs "console: N frames drawn in S s, B guest bytes" when it exits; the screen it runs on
    # (ui/screen.c, shared with the dashboard) logs its own "ui: N frames drawn" just before, so take the
    # console's line only
    wait(lambda: console_summary(klog) is not None, 10, 0.02)
    frames = console_summary(klog)
    if frames is None:
        sys.exit("kvcon's log %s has no 'console: N frames drawn ...' line at exit; its last lines:\n%s%s"
                 % (klog, log_tail(klog), kvcon_stderr(tmp)))
    tmux("kill-session", "-t", "b")
    return t1 - t0k[-1], cpu1 - cpu0, shown_ms, (peer1 - peer0) if peer_pid else None, frames


def throughput(tmp):
    data = payload()
    t0k = []
    go = threading.Event()
    srv = serve_once(data, t0k, go)
    wport = free_port()
    wsfy = subprocess.Popen(["websockify", "127.0.0.1:%d" % wport, "127.0.0.1:%d" % srv.getsockname()[1]],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        def listening():
            try:
                socket.create_connection(("127.0.0.1", wport), 0.2).close()
                return True
            except OSError:
                return False
        wait(listening, 10, 0.05)
        # that probe connection made websockify connect to the server once (it is told to go at once): forget it
        time.sleep(0.3)
        go.set()
        time.sleep(0.2)
        go.clear()
        t0k.clear()
        runs = []
        for label, target, peer in (("WebSocket via websockify", "ws://127.0.0.1:%d/" % wport, wsfy.pid),
                                    ("raw TCP, no WebSocket", "tcp:127.0.0.1:%d" % srv.getsockname()[1], None)):
            runs.append((label,) + run_kvcon(tmp, target, data, t0k, go, peer))
            t0k.clear()
        # tmux alone absorbing the same bytes from the same kind of server
        t0t = []
        srv2 = serve_once(data, t0t)
        done = os.path.join(tmp, "tmux.done")
        client = ("import socket,sys,time; s=socket.create_connection(('127.0.0.1',%d)); n=0; o=sys.stdout.buffer\n"
                  "while n < %d:\n d=s.recv(65536)\n if not d: break\n o.write(d); o.flush(); n+=len(d)\n"
                  "open('%s','w').write(str(time.monotonic()))") % (srv2.getsockname()[1], len(data), done)
        with open(os.path.join(tmp, "client.py"), "w") as f:
            f.write(client)
        tmux("new-session", "-d", "-s", "t", "-x", "200", "-y", "60", "python3 %s/client.py; sleep 30" % tmp)
        if not wait(lambda: os.path.exists(done) and os.path.getsize(done) > 0, 120, 0.005):
            sys.exit("the tmux client did not finish")
        tm_s = float(open(done).read()) - t0t[0]
        tmux("kill-session", "-t", "t")
        srv2.close()
        mb = len(data) / 1e6
        print("throughput: %.1f MB guest output, pane 200x59 in tmux" % mb)
        for label, kv_s, cpu, shown_ms, peer_cpu, frames in runs:
            print("  kvcon (%s + libvterm + ncurses): %.3f s = %.1f MB/s; kvcon CPU %.3f s = %.1f MB per CPU second;"
                  " end marker on screen %s" % (label, kv_s, mb / kv_s, cpu, mb / max(cpu, 1e-6),
                                                 "%.0f ms later" % shown_ms if shown_ms >= 0 else "NOT SEEN"))
            print("    kvcon's log at exit (whole session, from start to Ctrl+]): %s" % frames)
            if peer_cpu is not None:
                print("    websockify (the peer, Python) used %.3f s CPU in those %.3f s (%.0f%% of one core)"
                      % (peer_cpu, kv_s, 100 * peer_cpu / kv_s))
        print("  tmux alone absorbing the same bytes (raw TCP client writing to its tty): %.3f s = %.1f MB/s"
              % (tm_s, mb / tm_s))
    finally:
        wsfy.terminate()
        srv.close()


def echo_server(path):
    srv = socket.socket(socket.AF_UNIX)
    srv.bind(path)
    srv.listen(4)

    def run():
        while True:
            try:
                c, _ = srv.accept()
            except OSError:
                return

            def echo(c=c):
                c.sendall(b"ECHO-READY\r\n")
                while True:
                    d = c.recv(4096)
                    if not d:
                        return
                    c.sendall(d)
            threading.Thread(target=echo, daemon=True).start()

    threading.Thread(target=run, daemon=True).start()
    return srv


def measure_rtt(argv, keys, ready_marker):
    """Runs argv in a pty; returns round-trip times (s) of each key until it is seen in the output."""
    pid, fd = pty.fork()
    if pid == 0:
        os.environ["TERM"] = "xterm-256color"
        os.execvp(argv[0], argv)
    import fcntl
    import struct
    import termios
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    buf = b""
    end = time.monotonic() + 15
    while ready_marker not in buf and time.monotonic() < end:
        r, _, _ = select.select([fd], [], [], 0.1)
        if r:
            buf += os.read(fd, 65536)
    if ready_marker not in buf:
        os.kill(pid, 9)
        sys.exit("not ready: %r" % buf[-300:])
    time.sleep(0.3)
    while select.select([fd], [], [], 0.05)[0]:
        os.read(fd, 65536)
    rtts = []
    for k in keys:
        time.sleep(0.06)
        t0 = time.monotonic()
        os.write(fd, k)
        seen = b""
        while k not in seen:
            r, _, _ = select.select([fd], [], [], 2)
            if not r:
                break
            seen += os.read(fd, 65536)
        if k in seen:
            rtts.append(time.monotonic() - t0)
    os.write(fd, b"\x1d")
    time.sleep(0.2)
    try:
        os.kill(pid, 9)
    except OSError:
        pass
    os.waitpid(pid, 0)
    os.close(fd)
    return rtts


def latency(tmp):
    path = os.path.join(tmp, "echo.sock")
    srv = echo_server(path)
    keys = [bytes([c]) for c in b"abcdefghijklmnopqrstuvwxyz" * 8]
    kv = measure_rtt([KVCON, "console", "unix:" + path], keys, b"ECHO-READY")
    relay = os.path.join(tmp, "relay.py")
    with open(relay, "w") as f:
        f.write("import os,select,socket,sys,tty\n"
                "s=socket.socket(socket.AF_UNIX); s.connect(%r); tty.setraw(0)\n"
                "while True:\n r,_,_=select.select([0,s],[],[])\n"
                " if 0 in r:\n  d=os.read(0,4096)\n  if b'\\x1d' in d: break\n  s.sendall(d)\n"
                " if s in r:\n  d=s.recv(4096)\n  if not d: break\n  os.write(1,d)\n" % path)
    base = measure_rtt([sys.executable, relay], keys, b"ECHO-READY")
    srv.close()
    med_k, med_b = statistics.median(kv) * 1000, statistics.median(base) * 1000
    p90 = sorted(kv)[int(len(kv) * 0.9)] * 1000
    print("keystroke round trip (%d keys, 60 ms apart, echo server on a unix socket):" % len(kv))
    print("  kvcon console: median %.3f ms, p90 %.3f ms, max %.3f ms" % (med_k, p90, max(kv) * 1000))
    print("  plain relay (no terminal emulation): median %.3f ms" % med_b)
    print("  added by kvcon (median difference): %.3f ms" % (med_k - med_b))


if __name__ == "__main__":
    SOCK = "kvbench%d" % os.getpid()
    tmp = sys.argv[1]
    try:
        if os.environ.get("BENCH_CONSOLE_PART", "all") in ("all", "throughput"):
            throughput(tmp)
        if os.environ.get("BENCH_CONSOLE_PART", "all") in ("all", "latency"):
            latency(tmp)
    finally:
        subprocess.run(["tmux", "-L", SOCK, "kill-server"], capture_output=True)
