#!/usr/bin/env python3
"""Upstream test host for the network lab: HTTP on 80 and 8080, HTTPS on 443 (self-signed),
an SSH banner on 22, a UDP listener on 53. Every request or datagram it receives is appended to LOG, so a test can
prove what did and did not arrive. Serves files from ROOT (for a dumb-protocol git clone).
Stops by itself after LIFETIME seconds.

  lab_server.py LOG ROOT CERT KEY LIFETIME
"""
import http.server
import os
import socket
import ssl
import sys
import threading
import time

LOG, ROOT, CERT, KEY, LIFETIME = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], float(sys.argv[5])
lock = threading.Lock()


def log(line):
    with lock, open(LOG, "a") as f:
        f.write(line + "\n")


class Handler(http.server.SimpleHTTPRequestHandler):
    def __init__(self, *a, **kw):
        super().__init__(*a, directory=ROOT, **kw)

    def log_message(self, fmt, *args):
        pass

    def do_GET(self):
        log(f"{self.server.server_port} {self.command} {self.path} host={self.headers.get('Host')}")
        if self.path.startswith("/big"):
            n = int(self.path.split("/")[-1] or "0")
            self.send_response(200)
            self.send_header("Content-Length", str(n))
            self.end_headers()
            chunk = b"x" * 65536
            while n > 0:
                self.wfile.write(chunk[: min(n, len(chunk))])
                n -= min(n, len(chunk))
            return
        if self.path.startswith("/hello") or self.path.startswith("/p"):
            body = f"hello from {self.server.server_port}\n".encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        super().do_GET()

    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        data = self.rfile.read(n)
        log(f"{self.server.server_port} POST {self.path} bytes={len(data)}")
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")


def serve(port, tls):
    srv = http.server.ThreadingHTTPServer(("0.0.0.0", port), Handler)
    if tls:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(CERT, KEY)
        srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    srv.serve_forever()


def ssh_banner():
    # Port 22: an SSH server's first words, then what the client said first is logged.
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("0.0.0.0", 22))
    s.listen(8)
    while True:
        c, _ = s.accept()
        try:
            c.settimeout(5)
            c.sendall(b"SSH-2.0-LabServer\r\n")
            first = c.recv(256).split(b"\r\n")[0].decode(errors="replace")
            log(f"22 ssh {first}")
        except Exception:
            pass
        c.close()


def udp():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("0.0.0.0", 53))
    while True:
        data, peer = s.recvfrom(2048)
        log(f"udp {len(data)} bytes from {peer[0]}")


for target, args in ((serve, (80, False)), (serve, (8080, False)), (serve, (443, True)), (udp, ()), (ssh_banner, ())):
    threading.Thread(target=target, args=args, daemon=True).start()
open(LOG + ".ready", "w").close()
time.sleep(LIFETIME)
