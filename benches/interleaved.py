"""What OpenTelemetry export costs a one-handler dispatch, with a local receiver: dispatches with
export off, with http/protobuf and with http/json, measured side by side in one run.

Usage: interleaved.py RUNS PAYLOAD BINARY HOME PYTHONPATH [RECEIVER]

It starts the receiver (RECEIVER, by default the tests' tests/otlp/receiver.py; either decodes
with the OpenTelemetry project's own definitions, which PYTHONPATH holds) and runs RUNS rounds; each round runs every
case once, in an order shuffled per round, so that a slow spell of the machine and the place in
the round fall on every case alike. After each export the receiver's line for it is awaited, and
after every run (of every case) the same pause follows, so that the receiver's work for one
dispatch never overlaps the next dispatch, and every dispatch starts from the same idle machine.

Prints one JSON object: per case its median and interquartile range in ms, the rounds, and how
many requests the receiver decoded (it must be RUNS per export case, warm-up included).

With BEFORE set to another binary (the one before a change, say), its three cases run in the
same rounds too, as "off before", "protobuf before" and "json before".
"""

import json
import os
import random
import statistics
import subprocess
import sys
import time

WARMUP = 20
# After every run, whatever its case; the receiver's line (for an export) is awaited before.
PAUSE = 0.002


def main():
    runs, payload, binary, home, python_path = sys.argv[1:6]
    runs = int(runs)
    script = (
        sys.argv[6]
        if len(sys.argv) > 6
        else os.path.join(os.path.dirname(__file__), "..", "tests", "otlp", "receiver.py")
    )
    receiver = subprocess.Popen(
        [sys.executable, script, "--lifetime", "3600"],
        env=dict(os.environ, PYTHONPATH=python_path),
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        port = json.loads(receiver.stdout.readline())["port"]
        endpoint = f"http://127.0.0.1:{port}"
        base = {"PATH": os.environ["PATH"], "HOME": home}
        cases = {
            "off": base,
            "protobuf": dict(base, OTEL_EXPORTER_OTLP_ENDPOINT=endpoint),
            "json": dict(
                base,
                OTEL_EXPORTER_OTLP_ENDPOINT=endpoint,
                OTEL_EXPORTER_OTLP_PROTOCOL="http/json",
            ),
        }
        before = os.environ.get("BEFORE")
        programs = {name: binary for name in cases}
        if before:
            for name in list(cases):
                cases[name + " before"] = cases[name]
                programs[name + " before"] = before
        times = {name: [] for name in cases}
        received = 0
        failed = 0
        devnull = os.open(os.devnull, os.O_WRONLY)
        rng = random.Random(22)
        for i in range(runs + WARMUP):
            order = list(cases)
            rng.shuffle(order)
            for name in order:
                stdin = os.open(payload, os.O_RDONLY)
                start = time.perf_counter()
                pid = os.posix_spawn(
                    programs[name],
                    [programs[name]],
                    cases[name],
                    file_actions=[
                        (os.POSIX_SPAWN_DUP2, stdin, 0),
                        (os.POSIX_SPAWN_DUP2, devnull, 1),
                        (os.POSIX_SPAWN_DUP2, devnull, 2),
                    ],
                )
                os.waitpid(pid, 0)
                elapsed = time.perf_counter() - start
                os.close(stdin)
                if not name.startswith("off"):
                    record = json.loads(receiver.stdout.readline())
                    received += 1
                    failed += "error" in record
                time.sleep(PAUSE)
                if i >= WARMUP:
                    times[name].append(elapsed * 1000)
        result = {
            name: {
                "median": statistics.median(t),
                "iqr": statistics.quantiles(t, n=4)[2] - statistics.quantiles(t, n=4)[0],
            }
            for name, t in times.items()
        }
        result["rounds"] = runs
        result["received"] = received
        result["undecodable"] = failed
        print(json.dumps(result))
    finally:
        receiver.kill()
        receiver.wait()


if __name__ == "__main__":
    main()
