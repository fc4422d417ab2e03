#!/usr/bin/env python3
"""console_keycost.py [KVCON]: what one echoed key costs kvcon, in measures the other processes on a shared machine
do not distort: user-space instructions (valgrind --tool=callgrind) and system calls (strace -f). `kvcon console
unix:ECHO` runs in a pty on console_bench.py's echo server, once with 1 key and once with 1 + N keys (60 ms apart,
each waited for until its echo is drawn); the difference divided by N is the cost of a key: reading it, sending it,
reading the echo, drawing the frame. Start-up and exit cancel out. Prints the system calls of one echo too, from the
socket read to the next poll. KEYCOST_KEYS=N (default 100)."""
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import console_bench as cb  # noqa: E402

KVCON = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.environ.get("KVCON_BIN", "./kvcon"))
N = int(os.environ.get("KEYCOST_KEYS", "100"))


def run(prefix, nkeys, tmp):
    path = os.path.join(tmp, "echo.sock")
    srv = cb.echo_server(path)
    keys = [bytes([c]) for c in (b"abcdefghijklmnopqrstuvwxyz" * (nkeys // 26 + 1))[:nkeys]]
    rtts = cb.measure_rtt(prefix + [KVCON, "console", "unix:" + path], keys, b"ECHO-READY")
    srv.close()
    os.unlink(path)
    if len(rtts) != nkeys:
        sys.exit("%d of %d echoes seen" % (len(rtts), nkeys))


def instructions(tmp, nkeys):
    out = os.path.join(tmp, "cg.%d" % nkeys)
    run(["valgrind", "--tool=callgrind", "--callgrind-out-file=" + out, "--log-file=" + out + ".log"], nkeys, tmp)
    for line in open(out):
        if line.startswith("totals:") or line.startswith("summary:"):
            return int(line.split()[1])
    sys.exit("no totals in " + out)


def syscalls(tmp, nkeys):
    out = os.path.join(tmp, "st.%d" % nkeys)
    run(["strace", "-f", "-qq", "-o", out], nkeys, tmp)
    with open(out) as f:
        return f.read().splitlines()


def main():
    for tool in ("valgrind", "strace"):
        if subprocess.run(["sh", "-c", "command -v " + tool], capture_output=True).returncode:
            print("skip: %s not installed" % tool)
            return
    with tempfile.TemporaryDirectory(prefix="kvkc.") as tmp:
        i1, iN = instructions(tmp, 1), instructions(tmp, 1 + N)
        s1, sN = syscalls(tmp, 1), syscalls(tmp, 1 + N)
        print("per echoed key (%d keys, %s):" % (N, KVCON))
        print("  user-space instructions (callgrind): %.0f" % ((iN - i1) / N))
        print("  system calls (strace -f): %.2f" % ((len(sN) - len(s1)) / N))
        # one echo, the last but one key's: from the read of the socket to the loop's next poll (of several fds)
        calls = [re.sub(r"^\d+\s+", "", l) for l in sN]
        reads = [k for k, c in enumerate(calls) if re.match(r'read\(\d+, "[a-z]", 65536\)', c)]
        if len(reads) >= 2:
            seq = []
            for c in calls[reads[-2]:]:
                seq.append(c.split("(")[0] + ("(stdin)" if c.startswith("poll([{fd=0,") and "}]," in c[:40] else ""))
                m = re.match(r"poll\(\[.*\], (\d+),", c)
                if m and int(m.group(1)) > 1:
                    break
            print("  an echo, from the socket read: " + " ".join(seq))


if __name__ == "__main__":
    main()
