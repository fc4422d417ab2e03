"""KubeVirt console/VNC WebSocket endpoints: a server-side RFC 6455
implementation (handshake, client masking enforced, fragmentation, ping/pong,
close handshake, size limit) bridging binary frames to a backend byte stream:
a unix socket or TCP address registered through POST /fake/backend (e.g. QEMU's
`-serial unix:PATH,server,nowait` or `-vnc unix:PATH`); when none is registered,
a built-in echo for the console and a built-in RFB server (rfb.py) for VNC.
"""

import base64
import hashlib
import select
import socket
import ssl
import struct
import time

from store import ApiError

GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
PROTOCOLS = ("plain.kubevirt.io", "base64.binary.k8s.io")
MAX_FRAME = 16 << 20
WOULD_BLOCK = (BlockingIOError, ssl.SSLWantReadError, ssl.SSLWantWriteError)


def accept_key(key):
    return base64.b64encode(hashlib.sha1(key.encode() + GUID).digest()).decode()


def frame(opcode, payload):
    """A server frame: FIN set, never masked."""
    n = len(payload)
    if n < 126:
        head = struct.pack("!BB", 0x80 | opcode, n)
    elif n < 65536:
        head = struct.pack("!BBH", 0x80 | opcode, 126, n)
    else:
        head = struct.pack("!BBQ", 0x80 | opcode, 127, n)
    return head + payload


class ProtocolError(Exception):
    def __init__(self, code, why):
        super().__init__(why)
        self.code = code


def parse_frames(buf):
    """Yield (fin, opcode, payload) for every complete frame at the start of buf;
    returns the number of bytes consumed through the generator's .consumed."""
    out = []
    pos = 0
    while True:
        if len(buf) - pos < 2:
            break
        b0, b1 = buf[pos], buf[pos + 1]
        fin, rsv, op = b0 & 0x80, b0 & 0x70, b0 & 0x0F
        masked, ln = b1 & 0x80, b1 & 0x7F
        if rsv:
            raise ProtocolError(1002, "reserved bits set")
        if op not in (0, 1, 2, 8, 9, 10):
            raise ProtocolError(1002, "bad opcode %d" % op)
        if not masked:
            raise ProtocolError(1002, "client frame not masked")
        hp = pos + 2
        if ln == 126:
            if len(buf) - hp < 2:
                break
            ln = struct.unpack_from("!H", buf, hp)[0]
            hp += 2
        elif ln == 127:
            if len(buf) - hp < 8:
                break
            ln = struct.unpack_from("!Q", buf, hp)[0]
            hp += 8
        if op >= 8 and (ln > 125 or not fin):
            raise ProtocolError(1002, "bad control frame")
        if ln > MAX_FRAME:
            raise ProtocolError(1009, "frame too large")
        if len(buf) - hp < 4 + ln:
            break
        mask = buf[hp:hp + 4]
        data = bytearray(buf[hp + 4:hp + 4 + ln])
        if ln:
            # unmask 4 bytes at a time through int arithmetic on the whole payload
            m = int.from_bytes((mask * (ln // 4 + 1))[:ln], "big")
            data = (int.from_bytes(data, "big") ^ m).to_bytes(ln, "big")
        out.append((bool(fin), op, bytes(data)))
        pos = hp + 4 + ln
    return out, pos


def send_all(sock, data):
    view = memoryview(data)
    while view:
        try:
            n = sock.send(view)
            view = view[n:]
        except WOULD_BLOCK:
            select.select([], [sock], [], 5)


def serve(h, route):
    """Handle GET .../virtualmachineinstances/NAME/{console,vnc} on handler h."""
    app = h.app
    vmi = app.store.get("virtualmachineinstances", route.ns, route.name)
    if vmi is None:
        raise ApiError(404, "NotFound", 'virtualmachineinstances.kubevirt.io "%s" not found' % route.name,
                       {"name": route.name, "group": "kubevirt.io", "kind": "virtualmachineinstances"})
    phase = vmi.get("status", {}).get("phase", "")
    if phase != "Running":
        raise ApiError(400, "BadRequest", "Unable to connect to VirtualMachineInstance because phase is %s instead of Running"
                       % (phase or "Pending"))
    key, proto = handshake(h)
    backend = app.backends.get((route.ns, route.name, route.sub))
    bsock = None
    if backend:
        try:
            if "unix" in backend:
                bsock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                bsock.connect(backend["unix"])
            else:
                host, _, port = backend["tcp"].rpartition(":")
                bsock = socket.create_connection((host or "127.0.0.1", int(port)), timeout=5)
        except OSError as e:
            raise ApiError(500, "InternalError", "Internal error occurred: dial %s: %s" % (backend, e))
    elif route.sub == "vnc":
        # the built-in RFB server, over a socketpair
        import rfb
        with app.mu:
            display = app.displays.setdefault((route.ns, route.name), rfb.Display())
        bsock, peer = socket.socketpair()
        rfb.serve(peer, display, "fakekube %s/%s" % (route.ns, route.name))
    switch(h, key, proto)
    with app.mu:
        app.websockets += 1
    try:
        Bridge(h, bsock, proto == "base64.binary.k8s.io").run()
    finally:
        with app.mu:
            app.websockets -= 1
        if bsock:
            bsock.close()


def handshake(h):
    """The client's Upgrade request checked as gorilla/websocket does: (key, subprotocol chosen or None)."""
    hd = h.headers
    if "websocket" not in hd.get("Upgrade", "").lower() or "upgrade" not in hd.get("Connection", "").lower():
        raise ApiError(400, "BadRequest", "websocket: the client is not using the websocket protocol: "
                       "'upgrade' token not found in 'Connection' header")
    key = hd.get("Sec-WebSocket-Key")
    if not key or hd.get("Sec-WebSocket-Version") != "13":
        raise ApiError(400, "BadRequest", "websocket: not a websocket handshake: 'Sec-WebSocket-Key' header is missing or blank")
    offered = [p.strip() for p in hd.get("Sec-WebSocket-Protocol", "").split(",") if p.strip()]
    return key, next((p for p in PROTOCOLS if p in offered), None)


def switch(h, key, proto):
    h.send_response(101, "Switching Protocols")
    h.send_header("Upgrade", "websocket")
    h.send_header("Connection", "Upgrade")
    h.send_header("Sec-WebSocket-Accept", accept_key(key))
    if proto:
        h.send_header("Sec-WebSocket-Protocol", proto)
    h.end_headers()
    h.wfile.flush()
    h.close_connection = True


def serve_portforward(h, route):
    """GET .../{virtualmachines,virtualmachineinstances}/NAME/portforward/PORT[/PROTOCOL], as virt-api serves it:
    the VMI (a VM's own for virtualmachines) must be Running; after the upgrade the guest's PORT is dialled (as
    virt-handler dials inside the launcher) and the stream bridges raw bytes both ways; a port where nothing
    listens closes that WebSocket with the dial error (1011), nothing else. PROTOCOL udp dials a connected UDP
    socket instead: each data message the client sends is one datagram, each datagram back is one binary message,
    and nothing the guest does (an ICMP error, an empty datagram) ends the stream. The guest is 127.0.0.1 unless
    POST /fake/backend {"namespace","name","kind":"portforward","tcp":"HOST"} says where, and its "ports"
    {"GUEST":"HOST:PORT"} maps single ports elsewhere (an sshd on a free port standing in for port 22)."""
    app = h.app
    parts = route.sub.split("/")
    proto = parts[2] if len(parts) == 3 else "tcp"
    if len(parts) not in (2, 3) or not parts[1].isdigit() or not 0 < int(parts[1]) < 65536 or proto not in ("tcp", "udp"):
        raise ApiError(400, "BadRequest", "invalid port or protocol: %s" % "/".join(parts[1:]))
    port = int(parts[1])
    if route.plural == "virtualmachines" and app.store.get("virtualmachines", route.ns, route.name) is None:
        raise ApiError(404, "NotFound", 'virtualmachines.kubevirt.io "%s" not found' % route.name,
                       {"name": route.name, "group": "kubevirt.io", "kind": "virtualmachines"})
    vmi = app.store.get("virtualmachineinstances", route.ns, route.name)
    if vmi is None:
        raise ApiError(404, "NotFound", 'virtualmachineinstances.kubevirt.io "%s" not found' % route.name,
                       {"name": route.name, "group": "kubevirt.io", "kind": "virtualmachineinstances"})
    phase = vmi.get("status", {}).get("phase", "")
    if phase != "Running":
        raise ApiError(400, "BadRequest", "Unable to connect to VirtualMachineInstance because phase is %s instead of Running"
                       % (phase or "Pending"))
    key, sub = handshake(h)
    be = app.backends.get((route.ns, route.name, "portforward")) or {}
    dest = (be.get("ports") or {}).get(str(port))
    host, dport = (dest.rpartition(":")[0], int(dest.rpartition(":")[2])) if dest else (be.get("tcp") or "127.0.0.1", port)
    switch(h, key, sub)
    with app.mu:
        app.websockets += 1
        app.portforwards = getattr(app, "portforwards", 0) + 1
    bsock = None
    try:
        try:
            if proto == "udp":
                bsock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_DGRAM)
                bsock.connect((host, dport))
            else:
                bsock = socket.create_connection((host, dport), timeout=5)
        except OSError as e:
            b = Bridge(h, None, False)
            b.close(1011, "dial %s %s:%d: %s" % (proto, host, port, e.strerror or e))
            return
        Bridge(h, bsock, sub == "base64.binary.k8s.io", proto == "udp").run()
    finally:
        with app.mu:
            app.websockets -= 1
        if bsock:
            bsock.close()


class Bridge:
    def __init__(self, h, bsock, b64, dgram=False):
        self.h = h
        self.dgram = dgram  # UDP: a whole message is one datagram, either way
        self.sock = h.request
        self.bsock = bsock
        self.b64 = b64
        self.buf = bytearray()
        self.frag = bytearray()
        self.in_msg = False  # inside a fragmented data message
        self.closing = False

    def send(self, opcode, payload):
        send_all(self.sock, frame(opcode, payload))

    def send_data(self, data):
        if self.b64:
            self.send(1, base64.b64encode(data))
        else:
            self.send(2, data)

    def close(self, code, why="", answered=False):
        if not self.closing:
            self.closing = True
            try:
                self.send(8, struct.pack("!H", code) + why.encode()[:120])
            except OSError:
                return
            if not answered:
                self.linger()

    def linger(self, seconds=2.0):
        """After our close frame, what the client still sends is read until its own close frame or EOF (RFC 6455
        7.1.1: the server waits for the client's close), as a Go server's close handshake does: a socket closed
        with unread bytes resets the connection, and the reset can discard our close frame, with the reason the
        client shows, before the client reads it."""
        deadline = time.monotonic() + seconds
        while True:
            data = self.client_bytes()
            if data is None:
                return
            if data:
                self.buf += data
                try:
                    frames, used = parse_frames(self.buf)
                except ProtocolError:
                    return
                del self.buf[:used]
                if any(op == 8 for _, op, _ in frames):
                    return
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.sock], [], [], left)[0]:
                return

    def to_backend(self, data):
        if self.bsock is None:
            self.send_data(data)  # echo
        elif self.dgram:
            try:
                self.bsock.send(data)
            except OSError:
                pass  # a refused or full UDP socket drops the datagram, as UDP does
        else:
            self.bsock.sendall(data)

    def client_bytes(self):
        """Read what the client sent (buffered bytes first); None means EOF."""
        self.sock.settimeout(0.0)
        got = bytearray()
        try:
            while True:
                pk = self.h.rfile.peek(1) if not got else b""
                if not pk:
                    break
                got += self.h.rfile.read(len(pk))
        except WOULD_BLOCK + (socket.timeout,):
            pass
        except (ValueError, OSError):
            return None if not got else bytes(got)
        if not got:
            try:
                chunk = self.sock.recv(65536)
                if not chunk:
                    return None
                got += chunk
            except WOULD_BLOCK:
                pass
            except OSError:
                return None
        while isinstance(self.sock, ssl.SSLSocket) and self.sock.pending():
            try:
                got += self.sock.recv(self.sock.pending())
            except WOULD_BLOCK:
                break
        return bytes(got)

    def handle(self, data):
        self.buf += data
        try:
            frames, used = parse_frames(self.buf)
        except ProtocolError as e:
            self.close(e.code, str(e))
            return False
        del self.buf[:used]
        for fin, op, payload in frames:
            if op == 8:
                code = struct.unpack("!H", payload[:2])[0] if len(payload) >= 2 else 1000
                self.close(code if code in (1000, 1001) else 1000, answered=True)
                return False
            if op == 9:
                self.send(10, payload)
                continue
            if op == 10:
                continue
            if op in (1, 2) and (self.frag or self.in_msg):
                self.close(1002, "new data frame inside a fragmented message")
                return False
            if op == 0 and not self.frag and not self.in_msg:
                self.close(1002, "continuation without a message")
                return False
            self.in_msg = not fin
            if (self.b64 and op in (0, 1)) or (self.dgram and op in (0, 2)):
                self.frag += payload
                if fin:
                    try:
                        self.to_backend(base64.b64decode(bytes(self.frag)) if self.b64 else bytes(self.frag))
                    except ValueError:
                        self.close(1007, "bad base64")
                        return False
                    self.frag = bytearray()
                continue
            if payload:
                self.to_backend(payload)
        return True

    def dropped(self):
        """POST /fake/drop-websockets ends every open bridge: abruptly, or with close 1001."""
        app = self.h.app
        if app.ws_gen == self.gen:
            return False
        if app.ws_drop_close:
            self.close(1001, "going away")
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        return True

    def run(self):
        self.gen = self.h.app.ws_gen
        self.sock.settimeout(0.0)
        first = self.client_bytes()
        if first is None:
            return
        if first and not self.handle(first):
            return
        while not self.closing:
            rl = [self.sock] + ([self.bsock] if self.bsock else [])
            r, _, _ = select.select(rl, [], [], 0.25)
            if self.dropped():
                return
            if self.sock in r:
                data = self.client_bytes()
                if data is None:
                    return
                if data and not self.handle(data):
                    return
            if self.bsock is not None and self.bsock in r:
                try:
                    data = self.bsock.recv(65536)
                except OSError:
                    if self.dgram:
                        continue  # an ICMP error on the connected socket ends nothing
                    data = b""
                if self.dgram:
                    self.send_data(data)
                    continue
                if not data:
                    self.close(1000, "backend closed")
                    return
                self.send_data(data)
