#!/usr/bin/env python3
"""tokenserver.py - a Docker registry token service (the Bearer flow of the distribution spec) for the tests.

    tokenserver.py PORT CERT KEY TOKEN_CERT TOKEN_KEY USER PASS ISSUER

HTTPS on 127.0.0.1:PORT (CERT/KEY), GET /token?service=S&scope=repository:NAME:pull[,push]. With Basic
credentials USER:PASS the token grants the scope's actions; without credentials it grants nothing (the registry
then refuses); wrong credentials get 401. Tokens are RS256 JWTs signed with TOKEN_KEY, carrying TOKEN_CERT in
their x5c header (the registry's rootcertbundle holds that certificate). Standard library and the openssl CLI
only. Prints "ready" once listening."""
import base64
import json
import os
import ssl
import subprocess
import sys
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PORT, CERT, KEY, TCERT, TKEY, USER, PASS, ISSUER = sys.argv[1:9]


def b64u(b):
    return base64.urlsafe_b64encode(b).rstrip(b"=").decode()


def der_of(pem_path):
    return subprocess.run(["openssl", "x509", "-in", pem_path, "-outform", "DER"], check=True,
                          capture_output=True).stdout


X5C = base64.b64encode(der_of(TCERT)).decode()


def sign(claims):
    header = {"typ": "JWT", "alg": "RS256", "x5c": [X5C]}
    signing = (b64u(json.dumps(header).encode()) + "." + b64u(json.dumps(claims).encode())).encode()
    sig = subprocess.run(["openssl", "dgst", "-sha256", "-sign", TKEY], input=signing, check=True,
                         capture_output=True).stdout
    return signing.decode() + "." + b64u(sig)


class Handler(BaseHTTPRequestHandler):
    def log_message(self, fmt, *args):
        sys.stderr.write("tokenserver: " + (fmt % args) + "\n")

    def do_GET(self):
        url = urllib.parse.urlparse(self.path)
        if url.path != "/token":
            self.send_error(404)
            return
        q = urllib.parse.parse_qs(url.query)
        auth = self.headers.get("Authorization", "")
        granted = False
        if auth.startswith("Basic "):
            try:
                user, _, pw = base64.b64decode(auth[6:]).decode().partition(":")
            except Exception:
                user, pw = "", ""
            if (user, pw) != (USER, PASS):
                body = b'{"details":"invalid credentials"}'
                self.send_response(401)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                return
            granted = True
        access = []
        for scope in q.get("scope", []):
            parts = scope.split(":")
            if len(parts) >= 3 and parts[0] == "repository" and granted:
                access.append({"type": "repository", "name": ":".join(parts[1:-1]),
                               "actions": parts[-1].split(",")})
        now = int(time.time())
        claims = {"iss": ISSUER, "sub": USER if granted else "", "aud": q.get("service", [""])[0],
                  "exp": now + 300, "nbf": now - 10, "iat": now, "jti": b64u(os.urandom(12)), "access": access}
        body = json.dumps({"token": sign(claims), "expires_in": 300, "issued_at": time.strftime(
            "%Y-%m-%dT%H:%M:%SZ", time.gmtime(now))}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


srv = ThreadingHTTPServer(("127.0.0.1", int(PORT)), Handler)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(CERT, KEY)
srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
print("ready", flush=True)
srv.serve_forever()
