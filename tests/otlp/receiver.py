"""An OTLP/HTTP trace receiver for the tests: it decodes each request with the OpenTelemetry
project's own protobuf definitions (the opentelemetry-proto package), never with code of ours,
and prints one JSON line per request on stdout.

Usage: receiver.py [--delay SECONDS] [--status CODE] [--reject CODE] [--read-timeout SECONDS]
                   [--hold-until PATH] [--trickle] [--drop-if-closed] [--late-continue]
                   [--lifetime SECONDS]

A body comes with its Content-Length or chunked (HTTP/1.1's two framings). A request that says
`Expect: 100-continue` is answered `100 Continue` once its head is read, as a collector does,
or, with --reject, with that final status instead, as a collector that checks the head first (an
authentication extension, say) does; that is printed as {"rejected": CODE, "path", "headers"}. With --read-timeout, a connection
that sends nothing for that long is closed, as servers close idle connections. With
--hold-until, a body is not read until PATH exists, through a receive buffer kept small, so that
a client's send of a large body waits for it. With --trickle, a body is read a little at a time
(at most 1 KiB every 0.1 s) and never decoded; {"trickled": BYTES} is printed when the client
gives up. With --drop-if-closed, a request whose client has closed its side of the connection
by the time of the answer is dropped, as hyper's HTTP/1 server drops one (it then reads the end
of the connection in the middle of a request); that is printed as {"dropped": true}. With --late-continue, `100 Continue` is said only once the
body has begun to arrive, as hyper says it once the request's body is first read.

It listens on 127.0.0.1 only, on a port of the system's choosing, which it prints first as
`port N`. Each request line is {"path", "content_type", "headers", "request"}, where "request"
is the ExportTraceServiceRequest as the protobuf library renders it, ids in lowercase hex. A
body that does not decode is {"error": "..."} and a 400 answer. It exits after --lifetime
seconds (default 60) whatever happens, so a failing test never leaves it behind.
"""

import argparse
import base64
import json
import os
import select
import socket
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
    parser.add_argument("--reject", type=int, default=0)
    parser.add_argument("--read-timeout", type=float, default=None)
    parser.add_argument("--hold-until", default=None)
    parser.add_argument("--trickle", action="store_true")
    parser.add_argument("--drop-if-closed", action="store_true")
    parser.add_argument("--late-continue", action="store_true")
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

        def handle_expect_100(self):
            if args.late_continue:
                select.select([self.connection], [], [], 30)
            if not args.reject:
                return super().handle_expect_100()
            self.send_response(args.reject)
            self.send_header("Content-Length", "0")
            self.end_headers()
            emit(
                {
                    "rejected": args.reject,
                    "path": self.path,
                    "headers": {k.lower(): v for k, v in self.headers.items()},
                }
            )
            return False

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
            while args.hold_until and not os.path.exists(args.hold_until):
                time.sleep(0.01)
            if args.trickle:
                total = 0
                while chunk := self.rfile.read1(1024):
                    total += len(chunk)
                    time.sleep(0.1)
                emit({"trickled": total})
                return
            body = self.read_body()
            content_type = self.headers.get("Content-Type", "")
            record = {
                "path": self.path,
                "length": len(body),
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
            if args.drop_if_closed:
                readable, _, _ = select.select([self.connection], [], [], 0)
                if readable and self.connection.recv(1, socket.MSG_PEEK) == b"":
                    emit({"dropped": True})
                    return
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
            if args.hold_until or args.trickle:
                # Inherited by each connection accepted: a small window while the body waits.
                self.socket.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            super().server_bind()

        def handle_error(self, request, client_address):
            # A client that went away before the answer (a server that exited) is no error of
            # the request's: it was decoded and printed already.
            if not isinstance(sys.exc_info()[1], ConnectionError):
                super().handle_error(request, client_address)

    server = Server(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Timer(args.lifetime, server.shutdown).start()
    emit({"port": server.server_address[1]})
    server.serve_forever()


if __name__ == "__main__":
    main()
