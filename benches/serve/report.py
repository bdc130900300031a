#!/usr/bin/env python3
"""Runs the `serve` benchmark client on each scenario and reports the per-event cost.

Invoked by `benches/serve.sh`, which builds the dispatcher and the client and writes the
scenarios; this file runs the client once per scenario, checks the goals, and writes
`serve.md` and `serve.json`. It exits non-zero only when a scenario could not be measured.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

# Scenario of benches/bench.py, its title here, and the handler its floor spawns.
SCENARIOS = (
    ("no_match", "no match (3 layers, 15 groups)", None),
    ("one_command", "one handler (`command`: sh -c true)", "/bin/sh -c true"),
    ("five_command", "five handlers (`command`: sh -c true ...)", "/bin/sh -c true"),
)

# Goals of the serve mode, per event.
NO_MATCH_LIMIT_US = 30.0
OVER_FLOOR_LIMIT = 0.05
# levelcode's in-process TypeScript engine, as measured on the reference machine.
IN_PROCESS_US = {"no_match": "1–30", "one_command": "700", "five_command": "3800"}


def measure(args: argparse.Namespace, name: str, scenario: dict, handler: str | None) -> dict:
    command = [
        str(args.client), "--bin", str(args.bin),
        "--home", scenario["home"], "--project", scenario["project"],
        "--payload", scenario["payload"],
        "--handlers", str(scenario["expected_handlers"]),
        "--events", str(args.events), "--floor-events", str(args.floor_events),
        "--rounds", str(args.rounds), "--warmup", str(args.warmup),
        "--burst", str(args.burst), "--bursts", str(args.bursts),
    ]
    if handler:
        command += ["--handler", handler]
    print(f"serve bench: {name}: {args.events} events", file=sys.stderr)
    pin = None if args.cpu is None else (lambda: os.sched_setaffinity(0, {args.cpu}))
    proc = subprocess.run(command, capture_output=True, text=True, preexec_fn=pin)
    if proc.returncode != 0:
        raise RuntimeError(f"{name}: the client failed: {proc.stderr.strip()}")
    return json.loads(proc.stdout)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--client", type=Path, required=True)
    parser.add_argument("--bin", type=Path, required=True)
    parser.add_argument("--scenarios", type=Path, required=True, help="written by bench.py --setup-only")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--events", type=int, default=10_000)
    parser.add_argument("--floor-events", type=int, default=2_000)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=500)
    parser.add_argument("--burst", type=int, default=200, help="requests written at once")
    parser.add_argument("--bursts", type=int, default=20, help="bursts timed per scenario")
    parser.add_argument("--no-pin", action="store_true",
                        help="let the scheduler place the client, the server and the handlers")
    args = parser.parse_args()
    # One CPU for the client, the server and the handlers: whether two processes that hand a
    # request back and forth share a CPU or not changes each round trip's cost several times over,
    # and the scheduler decides it anew on every run.
    args.cpu = None
    if not args.no_pin and hasattr(os, "sched_setaffinity"):
        args.cpu = max(os.sched_getaffinity(0))

    scenarios = json.loads(args.scenarios.read_text())
    results: dict[str, dict] = {}
    failed = []
    for name, _, handler in SCENARIOS:
        if name not in scenarios:
            failed.append(f"{name}: not among the scenarios of benches/bench.py")
            continue
        try:
            results[name] = measure(args, name, scenarios[name], handler)
        except (RuntimeError, json.JSONDecodeError) as e:
            failed.append(str(e))

    goals = []
    rows = []
    burst_rows = []
    for name, title, _ in SCENARIOS:
        result = results.get(name)
        if not result:
            continue
        serve, floor = result["serve"], result["floor"]
        over = serve["median_us"] / floor["median_us"] - 1
        lean = ""
        if result["handlers"]:
            goal = f"median ≤ floor + {OVER_FLOOR_LIMIT:.0%}"
            met = over <= OVER_FLOOR_LIMIT
            versus = f"{over:+.1%}"
            # The floor without glibc's per-child signal resets, which the dispatcher's own
            # spawn does not make: the strictest floor this client can give.
            resets = result["signal_resets"]["median_us"] * result["handlers"]
            lean_floor = floor["median_us"] - resets
            lean = f"{lean_floor:.1f} | {serve['median_us'] / lean_floor - 1:+.1%}"
        else:
            goal = f"median ≤ {NO_MATCH_LIMIT_US:.0f} µs"
            met = serve["median_us"] <= NO_MATCH_LIMIT_US
            versus = f"+{serve['median_us'] - floor['median_us']:.1f} µs"
            lean = "| "
        goals.append({"scenario": name, "goal": goal, "met": met})
        rows.append(
            f"| {title} | {serve['median_us']:.1f} | {serve['p95_us']:.1f} | "
            f"{floor['median_us']:.1f} | {floor['p95_us']:.1f} | {versus} | {lean} | "
            f"{IN_PROCESS_US[name]} | {goal}: {'met' if met else 'MISSED'} |"
        )
        burst = result.get("burst")
        if burst and burst["count"]:
            size = result["burst_size"]
            one_by_one = serve["median_us"] * size
            burst_rows.append(
                f"| {title} | {burst['median_us'] / 1000:.2f} | {burst['p95_us'] / 1000:.2f} | "
                f"{burst['median_us'] / size:.1f} | {one_by_one / 1000:.2f} | "
                f"{burst['median_us'] / one_by_one:.2f} |"
            )

    lines = [
        "# `levelcode-hooks serve`: cost per event",
        "",
        f"One server, {args.events} events per scenario sent one at a time; each timed from the "
        "request's first byte written to the answer's newline read. Floor: the same handlers "
        "spawned directly by the client with `std::process::Command` (a process group of their "
        "own, the payload on a piped stdin, both outputs piped and read to their end); where no "
        "handler runs, "
        "the same line's round trip through `cat` "
        f"({args.floor_events} times), in {args.rounds} rounds interleaved with the events. "
        + (f"Client, server and handlers pinned to CPU {args.cpu}." if args.cpu is not None
           else "Processes placed by the scheduler."),
        "",
        "| scenario | serve median µs | serve p95 µs | floor median µs | floor p95 µs "
        "| serve / floor | lean floor µs | serve / lean floor | in-process engine µs | goal |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|",
        *rows,
        "",
        "The floor spawns each handler with `std::process::Command`, whose `posix_spawn` resets "
        "every signal's disposition in the child (about 120 system calls); the dispatcher's own "
        "spawn resets only the few it catches. *Lean floor* is the floor less that loop, timed "
        "in the client: the strictest comparison this benchmark gives.",
    ]
    if burst_rows:
        lines += [
            "",
            f"Bursts: {args.burst} copies of the request written at once (one write, by a thread "
            "of the client, while it reads the answers), timed from the first byte written to the "
            f"last answer read; {args.bursts} bursts per scenario. *One by one*: the same number "
            "of requests at the serve median above, each sent after the previous answer.",
            "",
            "| scenario | burst median ms | burst p95 ms | per request µs | one by one ms "
            "| burst / one by one |",
            "|---|---:|---:|---:|---:|---:|",
            *burst_rows,
        ]
    if failed:
        lines += ["", "Not measured:", *(f"- {f}" for f in failed)]
    report = "\n".join(lines) + "\n"
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "serve.md").write_text(report)
    (args.out / "serve.json").write_text(json.dumps(
        {"events": args.events, "floor_events": args.floor_events, "rounds": args.rounds,
         "pinned_cpu": args.cpu,
         "results": results, "goals": goals, "failed": failed}, indent=2) + "\n")
    print(report)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
