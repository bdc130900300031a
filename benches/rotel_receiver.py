"""A real OpenTelemetry collector as the benchmark's receiver: Rotel (an OTLP collector written
in Rust, from PyPI's `rotel` package), receiving OTLP/HTTP on 127.0.0.1 and dropping what it
receives (its `blackhole` exporter), with its debug log saying how many spans each request held.

Usage: rotel_receiver.py [--lifetime SECONDS]   (ROTEL_AGENT names the `rotel-agent` binary)

Prints {"port": N}, then one JSON line per request Rotel received: {"spans": N}; the same lines
as benches/lean_receiver.py, for benches/interleaved.py.
"""

import argparse
import json
import os
import re
import socket
import subprocess
import sys
import threading
import time


def die_with_parent():
    """In the agent, before it runs: SIGKILL when this script ends (Linux's PR_SET_PDEATHSIG)."""
    if sys.platform.startswith("linux"):
        import ctypes
        import signal
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--lifetime", type=float, default=600.0)
    args = parser.parse_args()
    http, grpc = free_port(), free_port()
    agent = subprocess.Popen(
        [
            os.environ["ROTEL_AGENT"],
            "start",
            "--otlp-http-endpoint", f"127.0.0.1:{http}",
            "--otlp-grpc-endpoint", f"127.0.0.1:{grpc}",
            "--exporter", "blackhole",
            "--debug-log", "traces",
            # One log line per request: no batching of requests together.
            "--batch-max-size", "1",
            "--batch-timeout", "1ms",
            "--log-format", "json",
            "--pid-file", os.devnull,
            "--log-file", os.devnull,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        # Killed with this script: benches/interleaved.py ends it by SIGKILL, and an agent left
        # behind idles on the CPUs the next measurements share.
        preexec_fn=die_with_parent,
    )
    threading.Timer(args.lifetime, agent.kill).start()
    deadline = time.monotonic() + 30
    while True:
        try:
            socket.create_connection(("127.0.0.1", http), timeout=1).close()
            break
        except OSError:
            if time.monotonic() > deadline or agent.poll() is not None:
                sys.exit("rotel-agent did not start listening")
            time.sleep(0.05)
    print(json.dumps({"port": http}), flush=True)
    spans = re.compile(r'"spans"\s*:\s*"?(\d+)')
    for line in agent.stdout:
        if "Received traces" in line:
            found = spans.search(line)
            print(json.dumps({"spans": int(found.group(1)) if found else 0}), flush=True)


if __name__ == "__main__":
    main()
