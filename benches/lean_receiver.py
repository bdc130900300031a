"""A lean OTLP/HTTP trace receiver for the benchmark: one thread, one poll loop, no thread per
connection and no email-style header parser, decoding each request with the OpenTelemetry
project's own definitions (opentelemetry-proto) before it answers, as a collector does. It
stands in for a collector that answers as fast as the OpenTelemetry Collector does, where the
tests' receiver (tests/otlp/receiver.py, Python's http.server) spends most of a millisecond
per request on its own machinery. Not for the tests: it checks little beyond the decoding.

Usage: lean_receiver.py [--lifetime SECONDS]

Prints {"port": N}, then one JSON line per request: {"spans": N} or {"error": "..."}.
"""

import argparse
import json
import selectors
import socket
import sys
import time

from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest


def decode(content_type, body):
    request = ExportTraceServiceRequest()
    if content_type == "application/json":
        # OTLP/JSON writes ids in hex; they are not looked at here.
        json_format.Parse(body, request, ignore_unknown_fields=True)
    else:
        request.ParseFromString(body)
    return sum(len(s.spans) for r in request.resource_spans for s in r.scope_spans)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--lifetime", type=float, default=600.0)
    args = parser.parse_args()
    until = time.monotonic() + args.lifetime
    selector = selectors.DefaultSelector()
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1024)
    listener.setblocking(False)
    selector.register(listener, selectors.EVENT_READ)
    print(json.dumps({"port": listener.getsockname()[1]}), flush=True)
    state = {}
    while time.monotonic() < until:
        for key, _ in selector.select(timeout=1.0):
            sock = key.fileobj
            if sock is listener:
                conn, _ = listener.accept()
                conn.setblocking(False)
                selector.register(conn, selectors.EVENT_READ)
                state[conn] = {"buffer": b"", "head": None, "continued": False}
                continue
            s = state[sock]
            try:
                data = sock.recv(65536)
            except (BlockingIOError, ConnectionError):
                data = b""
            if not data:
                selector.unregister(sock)
                sock.close()
                del state[sock]
                continue
            s["buffer"] += data
            if s["head"] is None and b"\r\n\r\n" in s["buffer"]:
                head, s["buffer"] = s["buffer"].split(b"\r\n\r\n", 1)
                lines = head.decode("latin-1").split("\r\n")
                s["head"] = {
                    k.strip().lower(): v.strip()
                    for k, _, v in (line.partition(":") for line in lines[1:])
                }
            head = s["head"]
            if head is None:
                continue
            if head.get("expect", "").lower() == "100-continue" and not s["continued"]:
                s["continued"] = True
                sock.send(b"HTTP/1.1 100 Continue\r\n\r\n")
            body = None
            if head.get("transfer-encoding", "").lower() == "chunked":
                if s["buffer"].endswith(b"\r\n0\r\n\r\n"):
                    size, _, rest = s["buffer"].partition(b"\r\n")
                    body = rest[: int(size, 16)]
            elif len(s["buffer"]) >= int(head.get("content-length", "0")):
                body = s["buffer"][: int(head.get("content-length", "0"))]
            if body is None:
                continue
            try:
                record = {"spans": decode(head.get("content-type", ""), body)}
                status = b"200 OK"
            except Exception as error:  # noqa: BLE001 - reported, not raised
                record = {"error": repr(error)}
                status = b"400 Bad Request"
            try:
                sock.send(b"HTTP/1.1 " + status + b"\r\nContent-Length: 0\r\n\r\n")
            except OSError:
                pass
            s["head"], s["buffer"], s["continued"] = None, b"", False
            sys.stdout.write(json.dumps(record) + "\n")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
