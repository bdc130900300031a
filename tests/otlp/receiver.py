"""An OTLP/HTTP trace receiver for the tests: it decodes each request with the OpenTelemetry
project's own protobuf definitions (the opentelemetry-proto package), never with code of ours,
and prints one JSON line per request on stdout.

Usage: receiver.py [--delay SECONDS] [--status CODE] [--read-timeout SECONDS] [--trickle]
                   [--tls CERT KEY] [--lifetime SECONDS]

A body comes with its Content-Length or chunked (HTTP/1.1's two framings), gzipped when it says
`Content-Encoding: gzip`. Each is answered --status (200 by default), --delay seconds after it
was decoded. With --read-timeout, a connection that sends nothing for that long is closed, as
servers close idle connections. With --trickle, a body is read a little at a time (at most 1 KiB
every 0.1 s) through a receive buffer kept small, and never decoded; {"trickled": BYTES} is
printed when the client gives up. With --tls it speaks HTTPS with CERT (a PEM chain) and KEY.

It listens on 127.0.0.1 only, on a port of the system's choosing, which it prints first as
`port N`. Each request line is {"path", "content_type", "headers", "request"}, where "request"
is the ExportTraceServiceRequest as the protobuf library renders it, ids in lowercase hex. A
body that does not decode is {"error": "..."} and a 400 answer. It exits after --lifetime
seconds (default 60) whatever happens, so a failing test never leaves it behind.
"""

import argparse
import base64
import json
import gzip
import socket
import ssl
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

ID_FIELDS = ("traceId", "spanId", "parentSpanId")


def hex_ids_to_base64(value):
    """OTLP/JSON writes ids in hex where protobuf's JSON mapping expects base64."""
    if isinstance(value, dict):
        return {
            k: (
                base64.b64encode(bytes.fromhex(v)).decode()
                if k in ID_FIELDS and isinstance(v, str)
                else hex_ids_to_base64(v)
            )
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [hex_ids_to_base64(v) for v in value]
    return value


def base64_ids_to_hex(value):
    if isinstance(value, dict):
        return {
            k: (
                base64.b64decode(v).hex()
                if k in ID_FIELDS and isinstance(v, str)
                else base64_ids_to_hex(v)
            )
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [base64_ids_to_hex(v) for v in value]
    return value


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--delay", type=float, default=0.0)
    parser.add_argument("--status", type=int, default=200)
    parser.add_argument("--read-timeout", type=float, default=None)
    parser.add_argument("--trickle", action="store_true")
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
        timeout = args.read_timeout

        def log_message(self, *_):
            pass

        def read_body(self):
            if self.headers.get("Transfer-Encoding", "").lower() != "chunked":
                return self.rfile.read(int(self.headers.get("Content-Length", "0")))
            body = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                if size == 0:
                    # Trailers, up to the empty line.
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return body
                body += self.rfile.read(size)
                self.rfile.readline()

        def do_POST(self):
            if args.trickle:
                total = 0
                while chunk := self.rfile.read1(1024):
                    total += len(chunk)
                    time.sleep(0.1)
                emit({"trickled": total})
                return
            body = self.read_body()
            encoding = self.headers.get("Content-Encoding", "")
            sent = len(body)
            if encoding == "gzip":
                body = gzip.decompress(body)
            content_type = self.headers.get("Content-Type", "")
            record = {
                "path": self.path,
                "length": sent,
                "content_encoding": encoding,
                "content_type": content_type,
                "headers": {k.lower(): v for k, v in self.headers.items()},
            }
            request = ExportTraceServiceRequest()
            try:
                if content_type == "application/x-protobuf":
                    request.ParseFromString(body)
                elif content_type == "application/json":
                    json_format.Parse(
                        json.dumps(hex_ids_to_base64(json.loads(body))), request
                    )
                else:
                    raise ValueError("unexpected content type " + content_type)
            except Exception as error:  # noqa: BLE001 - every failure is reported
                record["error"] = repr(error)
            if args.delay:
                time.sleep(args.delay)
            # Answered as soon as decoded, as a collector does; rendered for the test after,
            # even when the client is gone by then.
            status = 400 if "error" in record else args.status
            answer = ExportTraceServiceResponse().SerializeToString()
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)
                self.wfile.flush()
            except ConnectionError as error:
                record["answer_failed"] = repr(error)
            finally:
                if "error" not in record:
                    record["request"] = base64_ids_to_hex(
                        json_format.MessageToDict(request)
                    )
                    # Proof that it is the protobuf encoding: it survives a round trip.
                    if content_type == "application/x-protobuf":
                        record["reencoded_equal"] = request.SerializeToString() == body
                emit(record)

    class Server(ThreadingHTTPServer):
        def server_bind(self):
            if args.trickle:
                # Inherited by each connection accepted: a small window while the body waits.
                self.socket.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            super().server_bind()

        def handle_error(self, request, client_address):
            # A client that went away before the answer (a server that exited) is no error of
            # the request's: it was decoded and printed already.
            if not isinstance(sys.exc_info()[1], (ConnectionError, ssl.SSLError)):
                super().handle_error(request, client_address)

    server = Server(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    if args.tls:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(args.tls[0], args.tls[1])
        server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Timer(args.lifetime, server.shutdown).start()
    emit({"port": server.server_address[1]})
    server.serve_forever()


if __name__ == "__main__":
    main()
