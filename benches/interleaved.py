"""Medians of dispatches run in turns: one run of each case after the other, so that a change in
the machine's load falls on every case alike (hyperfine runs each case's runs together).

Usage: interleaved.py RUNS PAYLOAD BINARY HOME ENDPOINT
Cases: export off; export on (http/protobuf); export on (http/json). Prints three medians in ms.
"""

import os
import statistics
import sys
import time

WARMUP = 20


def main():
    runs, payload, binary, home, endpoint = sys.argv[1:6]
    base = {"PATH": os.environ["PATH"], "HOME": home}
    cases = [
        base,
        dict(base, OTEL_EXPORTER_OTLP_ENDPOINT=endpoint),
        dict(base, OTEL_EXPORTER_OTLP_ENDPOINT=endpoint, OTEL_EXPORTER_OTLP_PROTOCOL="http/json"),
    ]
    times = [[] for _ in cases]
    devnull = os.open(os.devnull, os.O_WRONLY)
    for i in range(int(runs) + WARMUP):
        for n, env in enumerate(cases):
            stdin = os.open(payload, os.O_RDONLY)
            start = time.perf_counter()
            pid = os.posix_spawn(
                binary,
                [binary],
                env,
                file_actions=[
                    (os.POSIX_SPAWN_DUP2, stdin, 0),
                    (os.POSIX_SPAWN_DUP2, devnull, 1),
                    (os.POSIX_SPAWN_DUP2, devnull, 2),
                ],
            )
            os.waitpid(pid, 0)
            elapsed = time.perf_counter() - start
            os.close(stdin)
            if i >= WARMUP:
                times[n].append(elapsed * 1000)
    print(" ".join("%.3f" % statistics.median(t) for t in times))


if __name__ == "__main__":
    main()
