#!/usr/bin/env python3
"""A minimal RFB 3.8 server for kvcon's input tests (standard library only): security None, a 640x480 32-bit
framebuffer sent once as one Raw rectangle, and every KeyEvent / PointerEvent / ClientCutText the client sends
appended to a log file, one line each ("key 1 0xffe1" = down, "key 0 ..." = up; "ptr MASK X Y"; "cut LENGTH").
Serves clients one after another.
Typing F12 makes the server resize the desktop to 800x600 (DesktopSize pseudo-rectangle, then a full frame).
usage: vnc_rfbserver.py PORTFILE LOGFILE"""
import socket
import struct
import sys

W, H = 640, 480


def recv_exact(c, n):
    data = b""
    while len(data) < n:
        chunk = c.recv(n - len(data))
        if not chunk:
            raise EOFError
        data += chunk
    return data


def frame(w, h, shade):
    row = bytes(v for x in range(w) for v in ((x * 255 // w), shade, 64, 0))
    return struct.pack(">HHHHi", 0, 0, w, h, 0) + row * h


def serve(c, log):
    c.sendall(b"RFB 003.008\n")
    recv_exact(c, 12)
    c.sendall(b"\x01\x01")              # one security type: None
    recv_exact(c, 1)
    c.sendall(struct.pack(">I", 0))     # SecurityResult OK
    recv_exact(c, 1)                    # ClientInit
    pf = struct.pack(">BBBBHHHBBB3x", 32, 24, 0, 1, 255, 255, 255, 16, 8, 0)
    c.sendall(struct.pack(">HH", W, H) + pf + struct.pack(">I", 4) + b"fake")
    sent = False
    while True:
        t = recv_exact(c, 1)[0]
        if t == 0:                      # SetPixelFormat
            recv_exact(c, 19)
        elif t == 2:                    # SetEncodings
            _, n = struct.unpack(">BH", recv_exact(c, 3))
            recv_exact(c, 4 * n)
        elif t == 3:                    # FramebufferUpdateRequest: one full frame, once
            recv_exact(c, 9)
            if not sent:
                c.sendall(struct.pack(">BxH", 0, 1) + frame(W, H, 128))
                sent = True
        elif t == 4:                    # KeyEvent
            down, _, key = struct.unpack(">BHI", recv_exact(c, 7))
            log.write("key %d 0x%x\n" % (down, key))
            log.flush()
            if down and key == 0xffc9:  # F12: resize
                c.sendall(struct.pack(">BxH", 0, 2) + struct.pack(">HHHHi", 0, 0, 800, 600, -223) +
                          frame(800, 600, 200))
        elif t == 5:                    # PointerEvent
            mask, x, y = struct.unpack(">BHH", recv_exact(c, 5))
            log.write("ptr %d %d %d\n" % (mask, x, y))
            log.flush()
        elif t == 6:                    # ClientCutText
            _, n = struct.unpack(">3sI", recv_exact(c, 7))
            recv_exact(c, n)
            log.write("cut %d\n" % n)
            log.flush()
        else:
            log.write("unknown message %d\n" % t)
            log.flush()
            return


def main():
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", 0))
    s.listen(4)
    with open(sys.argv[1] + ".tmp", "w") as f:
        f.write(str(s.getsockname()[1]))
    import os
    os.rename(sys.argv[1] + ".tmp", sys.argv[1])
    with open(sys.argv[2], "a") as log:
        while True:
            c, _ = s.accept()
            try:
                serve(c, log)
            except (EOFError, OSError):
                pass
            finally:
                c.close()
                log.write("closed\n")
                log.flush()


if __name__ == "__main__":
    main()
