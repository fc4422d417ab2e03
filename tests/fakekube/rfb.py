"""A tiny built-in VNC (RFB 3.8) server: the VNC backend of a VMI when none is
registered. No authentication, Raw encoding only, any true-colour pixel format
the client sets. The framebuffer (320x200) shows eight colour bars; every key
press draws a white 8x8 block along the bottom row and every pointer click a
red 2x2 dot, so a client's updates can be checked. Input is recorded for
GET /fake/vnc-input.
"""

import struct
import threading

W, H = 320, 200
# palette index -> (r, g, b)
PALETTE = [(255, 255, 255), (255, 255, 0), (0, 255, 255), (0, 255, 0),
           (255, 0, 255), (255, 0, 0), (0, 0, 255), (0, 0, 0)]
RED, WHITE = 5, 0
SERVER_PF = struct.pack("!BBBBHHHBBB3x", 32, 24, 0, 1, 255, 255, 255, 16, 8, 0)


class Display:
    """One VMI's framebuffer and input log, shared by its connections."""

    def __init__(self):
        self.lock = threading.Condition()
        self.rows = [[(x * 8) // W for x in range(W)] for _ in range(H)]
        self.keys = []
        self.pointer = []
        self.keycount = 0
        self.version = 0
        self.dirty = []  # (version, x, y, w, h)

    def damage(self, x, y, w, h, colour):
        for yy in range(max(0, y), min(H, y + h)):
            row = self.rows[yy]
            for xx in range(max(0, x), min(W, x + w)):
                row[xx] = colour
        self.version += 1
        self.dirty.append((self.version, x, y, w, h))
        del self.dirty[:-64]
        self.lock.notify_all()

    def key(self, down, sym):
        with self.lock:
            self.keys.append({"down": bool(down), "key": sym})
            if down:
                n = self.keycount
                self.keycount += 1
                self.damage((n % 40) * 8, H - 8, 8, 8, WHITE)

    def point(self, mask, x, y):
        with self.lock:
            self.pointer.append({"mask": mask, "x": x, "y": y})
            if mask:
                self.damage(x, y, 2, 2, RED)

    def info(self):
        with self.lock:
            return {"width": W, "height": H, "keys": list(self.keys), "pointer": list(self.pointer),
                    "version": self.version}


def recv_exact(sock, n):
    buf = b""
    while len(buf) < n:
        b = sock.recv(n - len(buf))
        if not b:
            raise EOFError
        buf += b
    return buf


class Conn:
    def __init__(self, sock, display, name):
        self.sock = sock
        self.d = display
        self.name = name.encode()[:200]
        self.pf = None
        self.pending = None  # (incremental, x, y, w, h)
        self.sent_version = -1
        self.cond = display.lock

    def set_pf(self, raw):
        bpp, depth, big, true, rmax, gmax, bmax, rs, gs, bs = struct.unpack("!BBBBHHHBBB3x", raw)
        if not true or bpp not in (8, 16, 32):
            raise ValueError("only true-colour 8/16/32 bpp")
        fmt = {8: "B", 16: "H", 32: "I"}[bpp]
        end = ">" if big else "<"
        self.pf = [struct.pack(end + fmt, ((r * rmax // 255) << rs) | ((g * gmax // 255) << gs) |
                               ((b * bmax // 255) << bs)) for r, g, b in PALETTE]

    def rect(self, x, y, w, h):
        x, y = max(0, min(W, x)), max(0, min(H, y))
        w, h = max(0, min(W - x, w)), max(0, min(H - y, h))
        pf = self.pf
        with self.cond:
            data = b"".join(b"".join(pf[c] for c in self.d.rows[yy][x:x + w]) for yy in range(y, y + h))
        return struct.pack("!HHHHi", x, y, w, h, 0) + data

    def reader(self):
        """Client messages, on their own thread; requests are answered by the writer."""
        try:
            while True:
                t = recv_exact(self.sock, 1)[0]
                if t == 0:
                    pf = recv_exact(self.sock, 19)[3:]
                    with self.cond:
                        self.set_pf(pf)
                elif t == 2:
                    n = struct.unpack("!xH", recv_exact(self.sock, 3))[0]
                    recv_exact(self.sock, 4 * n)
                elif t == 3:
                    inc, x, y, w, h = struct.unpack("!BHHHH", recv_exact(self.sock, 9))
                    with self.cond:
                        self.pending = (inc, x, y, w, h)
                        self.cond.notify_all()
                elif t == 4:
                    down, sym = struct.unpack("!B2xI", recv_exact(self.sock, 7))
                    self.d.key(down, sym)
                elif t == 5:
                    mask, x, y = struct.unpack("!BHH", recv_exact(self.sock, 5))
                    self.d.point(mask, x, y)
                elif t == 6:
                    n = struct.unpack("!3xI", recv_exact(self.sock, 7))[0]
                    recv_exact(self.sock, n)
                else:
                    break
        except (EOFError, OSError, ValueError):
            pass
        with self.cond:
            self.closed = True
            self.cond.notify_all()

    def run(self):
        try:
            self.sock.sendall(b"RFB 003.008\n")
            recv_exact(self.sock, 12)
            self.sock.sendall(b"\x01\x01")  # one security type: None
            recv_exact(self.sock, 1)
            self.sock.sendall(b"\x00\x00\x00\x00")
            recv_exact(self.sock, 1)  # ClientInit
            self.sock.sendall(struct.pack("!HH", W, H) + SERVER_PF + struct.pack("!I", len(self.name)) + self.name)
            self.set_pf(SERVER_PF)
        except (EOFError, OSError):
            self.sock.close()
            return
        self.closed = False
        threading.Thread(target=self.reader, daemon=True).start()
        try:
            while True:
                with self.cond:
                    while not self.closed:
                        req = self.pending
                        if req and (not req[0] or self.d.version != self.sent_version):
                            break
                        self.cond.wait(1.0)
                    if self.closed:
                        return
                    inc, x, y, w, h = req
                    self.pending = None
                    if inc:
                        rects = [r[1:] for r in self.d.dirty if r[0] > self.sent_version] or [(x, y, w, h)]
                        if self.sent_version < self.d.version - len(self.d.dirty):
                            rects = [(x, y, w, h)]
                    else:
                        rects = [(x, y, w, h)]
                    self.sent_version = self.d.version
                body = b"".join(self.rect(*r) for r in rects)
                self.sock.sendall(struct.pack("!BxH", 0, len(rects)) + body)
        except OSError:
            pass
        finally:
            self.sock.close()


def serve(sock, display, name):
    """Run one RFB connection on sock (a socketpair end) in a thread."""
    threading.Thread(target=Conn(sock, display, name).run, daemon=True).start()
