"""A policy service for the http handler tests (contract §19): it answers each POST as its path
says and prints one JSON line per request on stdout.

Usage: server.py [--tls CERT KEY] [--lifetime SECONDS]

Paths:
  /reply/CODE   answers CODE with the request's X-Reply header as the body (none: empty)
  /big          answers 200 with a body of 200 KiB, in 8 KiB writes; prints how much of it was
                written before the client stopped reading ({"big_written": BYTES})
  /hang         reads the request and never answers (until --lifetime)
  /redirect     answers 302 with Location /reply/200
  anything else answers 404

Each request line is {"path", "headers" (names in lowercase), "body" (the JSON body, parsed)}.
With --tls it speaks HTTPS with CERT (a PEM chain) and KEY. It listens on 127.0.0.1 only, on a
port of the system's choosing, which it prints first as {"port": N}, and exits after --lifetime
seconds (default 60) whatever happens, so a failing test never leaves it behind.
"""

import argparse
import json
import ssl
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--tls", nargs=2, metavar=("CERT", "KEY"))
    parser.add_argument("--lifetime", type=float, default=60.0)
    args = parser.parse_args()
    lock = threading.Lock()

    def emit(record):
        with lock:
            sys.stdout.write(json.dumps(record) + "\n")
            sys.stdout.flush()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *_):
            pass

        def answer(self, code, body=b"", headers=()):
            self.send_response(code)
            for key, value in headers:
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            self.wfile.flush()

        def do_POST(self):
            length = int(self.headers.get("Content-Length", "0"))
            raw = self.rfile.read(length)
            try:
                body = json.loads(raw)
            except ValueError:
                body = raw.decode("utf-8", "replace")
            emit(
                {
                    "path": self.path,
                    "method": self.command,
                    "headers": {k.lower(): v for k, v in self.headers.items()},
                    "body": body,
                }
            )
            if self.path.startswith("/reply/"):
                reply = self.headers.get("X-Reply", "").encode()
                self.answer(int(self.path.split("/")[2]), reply)
            elif self.path == "/big":
                self.send_response(200)
                self.send_header("Content-Length", str(200 * 1024))
                self.end_headers()
                written = 0
                try:
                    for _ in range(25):
                        self.wfile.write(b"{" + b" " * (8 * 1024 - 1))
                        self.wfile.flush()
                        written += 8 * 1024
                except OSError:
                    pass
                emit({"big_written": written})
            elif self.path == "/hang":
                time.sleep(args.lifetime)
            elif self.path == "/redirect":
                self.answer(302, b"", [("Location", "/reply/200")])
            else:
                self.answer(404, b"no such path")

    class Server(ThreadingHTTPServer):
        daemon_threads = True

        def server_bind(self):
            # A small send buffer: /big's writes wait for the client to read.
            import socket

            self.socket.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
            super().server_bind()

        def handle_error(self, request, client_address):
            # A client that went away (a timeout, a body not read to its end) is no error.
            error = sys.exc_info()[1]
            if not isinstance(error, (ConnectionError, ssl.SSLError, TimeoutError)):
                super().handle_error(request, client_address)

    server = Server(("127.0.0.1", 0), Handler)
    if args.tls:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(args.tls[0], args.tls[1])
        server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Timer(args.lifetime, server.shutdown).start()
    emit({"port": server.server_address[1]})
    server.serve_forever()


if __name__ == "__main__":
    main()
