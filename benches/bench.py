#!/usr/bin/env python3
"""Measures what one dispatch of levelcode-hooks costs, beside the floor it cannot avoid.

The floor of a scenario is the process spawns no dispatcher can avoid: its own start (one
`/bin/true`) and the handlers it runs, each started alone. Every scenario is timed with
hyperfine in one run together with its floor commands, in several rounds interleaved across
scenarios so that a slow moment of the machine lands on all of them alike. The dispatcher's
own cost is its median minus the floor's in the same round, reported (median over rounds) as
a fraction of one `/bin/true` spawn.

Invoked by `benches/run.sh`, which builds the binaries and finds the tools; this file only
measures and reports. It exits non-zero only when a scenario could not be measured.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

MIB = 1024 * 1024

# Environment variables that change what the dispatcher does; the bench controls all of them.
DISPATCHER_ENV = (
    "LEVELCODE_DIR",
    "LEVELCODE_TRUST_PROJECT_HOOKS",
    "LEVELCODE_HOOKS",
    "LEVELCODE_HOOKS_NO_PROJECT",
    "LEVELCODE_HOOKS_DEPTH",
    "LEVELCODE_TEAM",
    "NEXT_PUBLIC_CB_ENVIRONMENT",
)

SH_TRUE = "/bin/sh -c true"
BIG_PAYLOAD_READERS = ("cat >/dev/null", "cat - >/dev/null", "cat >/dev/null -")


# ---------------------------------------------------------------------------------------------
# Settings and payloads


def group(matcher: str | None, *handlers: dict) -> dict:
    entry: dict = {} if matcher is None else {"matcher": matcher}
    entry["hooks"] = list(handlers)
    return entry


def command(text: str, **extra) -> dict:
    return {"type": "command", "command": text, **extra}


def argv(*words: str) -> dict:
    return {"argv": list(words)}


def user_layer() -> dict:
    """Five groups, the kind a user keeps in `~/.config/levelcode/settings.json`."""
    return {
        "theme": "dark",
        "hooks": {
            "PreToolUse": [
                group("run_terminal_command", command("bun ~/.levelcode/hooks/guard-shell.ts", timeout=5)),
                group("^mcp__[a-z_]+__(delete|drop)_[a-z_]+$", command("~/.levelcode/hooks/confirm.sh")),
            ],
            "PostToolUse": [group("run_terminal_command", command("~/.levelcode/hooks/log-shell.sh"))],
            "SessionStart": [group(None, command("true", name="session-start"))],
            "Stop": [group(None, command("notify-send levelcode done"))],
        },
    }


def data_layer() -> dict:
    """Five groups in `~/.levelcode/settings.json`."""
    return {
        "hooks": {
            "PreToolUse": [
                group("spawn_agents | spawn_agent_inline", argv("levelcode-audit", "spawn")),
                group("^browser_(navigate|click|type)$", command("~/.levelcode/hooks/browser.sh")),
            ],
            "PostToolUse": [
                group("^code_(search|index)$", command("~/.levelcode/hooks/index.sh")),
                group("read_files | read_docs", command("~/.levelcode/hooks/reads.sh")),
            ],
            "Stop": [group(None, command("~/.levelcode/hooks/summary.sh", timeout=30))],
        },
    }


def project_layer(*extra_pre_tool_use: dict) -> dict:
    """Five groups in `<project>/.levelcode/settings.json`, none matching `write_file`,
    plus the given PreToolUse groups."""
    return {
        "hooks": {
            "PreToolUse": [
                group("think_deeply|add_message", command("bun .levelcode/hooks/trace.ts")),
                group("^git_[a-z]+$", command("bun .levelcode/hooks/git.ts")),
                *extra_pre_tool_use,
            ],
            "PostToolUse": [
                group("code_search", command("bun .levelcode/hooks/search.ts")),
                group("^lsp_.*", command("bun .levelcode/hooks/lsp.ts")),
            ],
            "Notification": [group(None, command("bun .levelcode/hooks/notify.ts"))],
        },
    }


# The no-match setup again, with the kind of regexes that anchors cannot rule out, so each is
# compiled: seven `PreToolUse` patterns across the three layers, fifteen groups in all.
REGEX_MATCHERS = (
    "mcp__.*__(delete|drop)_",
    "(?i)(bash|shell)",
    "browser_(navigate|click|type)",
    "\\bdeploy\\b|release_\\w+",
    "git_(push|commit|rebase)",
    "(spawn|run)_agents?$",
    "[Ww]eb_?(fetch|search)",
)


def regex_layers() -> tuple[dict, dict, dict]:
    """User, data and project layers of five groups each, none matching `write_file`, whose
    seven `PreToolUse` regexes are unanchored (REGEX_MATCHERS)."""
    r = REGEX_MATCHERS
    user = {"hooks": {
        "PreToolUse": [
            group("run_terminal_command", command("bun ~/.levelcode/hooks/guard-shell.ts", timeout=5)),
            group(r[0], command("~/.levelcode/hooks/confirm.sh")),
            group(r[1], command("~/.levelcode/hooks/shell.sh")),
        ],
        "PostToolUse": [group("run_terminal_command", command("~/.levelcode/hooks/log-shell.sh"))],
        "Stop": [group(None, command("notify-send levelcode done"))],
    }}
    data = {"hooks": {
        "PreToolUse": [
            group(r[2], command("~/.levelcode/hooks/browser.sh")),
            group(r[3], command("~/.levelcode/hooks/deploy.sh")),
        ],
        "PostToolUse": [
            group("^code_(search|index)$", command("~/.levelcode/hooks/index.sh")),
            group("read_files | read_docs", command("~/.levelcode/hooks/reads.sh")),
        ],
        "Stop": [group(None, command("~/.levelcode/hooks/summary.sh", timeout=30))],
    }}
    project = {"hooks": {
        "PreToolUse": [
            group(r[4], command("bun .levelcode/hooks/git.ts")),
            group(r[5], command("bun .levelcode/hooks/agents.ts")),
            group(r[6], command("bun .levelcode/hooks/web.ts")),
        ],
        "PostToolUse": [group("code_search", command("bun .levelcode/hooks/search.ts"))],
        "Notification": [group(None, command("bun .levelcode/hooks/notify.ts"))],
    }}
    return user, data, project


def big_project_layer(groups: int) -> dict:
    """`groups` groups, half under PreToolUse and half under PostToolUse; in each event half
    are exact-name lists and half regexes (anchored MCP-style and unanchored, alternately);
    one PreToolUse group matches `write_file`."""
    hooks: dict[str, list] = {"PreToolUse": [], "PostToolUse": []}
    for i in range(groups):
        event = "PreToolUse" if i % 2 == 0 else "PostToolUse"
        handler = command(f"bun .levelcode/hooks/h{i}.ts")
        if i == groups // 2:
            entry = group("write_file|str_replace", command("true"))
        elif i % 4 < 2:
            entry = group(f"tool_{i}|tool_{i}_v2", handler)
        elif i % 8 < 4:
            entry = group(f"^mcp__server{i}__(read|write)_[a-z]+$", handler)
        else:
            entry = group(f"(delete|drop)_table_{i}$", handler)
        hooks[event].append(entry)
    return {"hooks": hooks}


def source_text(json_bytes: int) -> str:
    """Source-like text that takes `json_bytes` bytes, give or take a line, as a JSON string
    body: lines of code with quotes (escaped in JSON, like the newlines) and now and then a
    non-ASCII letter, so that reading it does the escaping and UTF-8 work a real file asks for."""
    lines = []
    total = 0
    i = 0
    while True:
        line = f'    let value_{i} = compute(&input[{i}..], "key_{i % 97}");'
        line += " // na\u00efve step\n" if i % 16 == 0 else "\n"
        cost = len(json.dumps(line, ensure_ascii=False).encode()) - 2
        if total + cost > json_bytes:
            return "".join(lines)
        lines.append(line)
        total += cost
        i += 1


def write_file_payload(cwd: Path, tool_input_bytes: int) -> dict:
    """A PreToolUse payload for `write_file` whose `tool_input`, as JSON, is about
    `tool_input_bytes` bytes."""
    tool_input = {
        "path": "src/generated/table.rs",
        "instructions": "Regenerate the lookup table.",
        "content": "",
    }
    empty = len(json.dumps(tool_input, ensure_ascii=False, separators=(",", ":")).encode())
    tool_input["content"] = source_text(max(0, tool_input_bytes - empty))
    return {
        "event": "PreToolUse",
        "session_id": "bench-session",
        "cwd": str(cwd),
        "tool_name": "write_file",
        "tool_call_id": "call_bench_0001",
        "tool_input": tool_input,
    }


def dump(path: Path, value: dict) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value, ensure_ascii=False, indent=None, separators=(",", ":")))
    return path


# ---------------------------------------------------------------------------------------------
# Scenarios


@dataclass
class Scenario:
    """One dispatch timed beside its floor.

    `commands` maps a key to a command line for hyperfine (run without a shell); `floor` lists
    the keys whose medians add up to the floor; `dispatchers` are the keys of dispatcher runs
    (the binary under test first, then any comparison build).
    """

    name: str
    title: str
    home: Path
    project: Path
    payload: Path
    expected_handlers: int
    commands: dict[str, str] = field(default_factory=dict)
    floor: list[str] = field(default_factory=list)
    dispatchers: list[str] = field(default_factory=list)
    heavy: bool = False
    # Variables set for every run of the scenario, beside HOME.
    extra_env: dict[str, str] = field(default_factory=dict)


class Bench:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.out: Path = args.out
        self.root: Path = args.work
        self.bin: str = args.bin
        self.dynamic_bin: str | None = args.dynamic_bin
        self.hyperfine: str = args.hyperfine
        # The median of each command in each round: (scenario, command key) -> {round: seconds}.
        self.medians: dict[tuple[str, str], dict[int, float]] = {}
        self.failures: list[str] = []
        self.checks: dict[str, str] = {}
        self.scenarios: list[Scenario] = []
        # The trust states' scenarios and environments, by name, once counted.
        self.trust_runs: dict[str, tuple[Scenario, dict[str, str]]] = {}

    # -- environment -------------------------------------------------------------------------

    def env(self, home: Path) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k not in DISPATCHER_ENV}
        env["HOME"] = str(home)
        return env

    def scenario_env(self, scenario: Scenario) -> dict[str, str]:
        return {**self.env(scenario.home), **scenario.extra_env}

    def dispatch_commands(self, compare: bool, minimal: str | None) -> dict[str, str]:
        """The binary under test, then the dynamic build when `compare`, then the minimal
        program when `minimal` is given: its arguments, `""` where nothing runs, `"spawn"` where
        one `sh -c true` handler runs."""
        commands = {"dispatcher": f"{shlex.quote(self.bin)} run"}
        if compare and self.dynamic_bin:
            commands["dispatcher (dynamic)"] = f"{shlex.quote(self.dynamic_bin)} run"
        for name, path in (("static", self.args.minimal_static),
                           ("dynamic", self.args.minimal_dynamic)):
            if minimal is not None and path:
                commands[f"minimal Rust program ({name})"] = f"{shlex.quote(path)} {minimal}".strip()
        return commands

    # -- building the scenarios ----------------------------------------------------------------

    def make_home(self, name: str, layers: tuple[dict, dict] | None = None) -> Path:
        home = self.root / name / "home"
        user, data = layers or (user_layer(), data_layer())
        dump(home / ".config" / "levelcode" / "settings.json", user)
        dump(home / ".levelcode" / "settings.json", data)
        return home

    def scenario(self, name: str, title: str, project_settings: dict, payload: dict | None,
                 expected: int, floor_commands: dict[str, str], floor: list[str],
                 compare: bool = False, minimal: str | None = None, heavy: bool = False,
                 home_layers: tuple[dict, dict] | None = None,
                 opt_in: bool = False, own_tmpdir: bool = False) -> Scenario | None:
        if self.args.only and name not in self.args.only:
            return None
        home = self.make_home(name, home_layers)
        project = self.root / name / "project"
        dump(project / ".levelcode" / "settings.json", project_settings)
        # The project's hooks are trusted as a person would trust them: files written some time
        # before (a seal is taken only of files settled for two seconds), so every dispatch
        # checks the trust store and the seal, and hashes nothing while it holds (docs/trust.md).
        # With `opt_in`, by LEVELCODE_TRUST_PROJECT_HOOKS=1 instead, as CI and `levelcode -p`
        # trust them (contract §13).
        extra_env = {"LEVELCODE_TRUST_PROJECT_HOOKS": "1"} if opt_in else {}
        if own_tmpdir:
            # The bench's HOMEs are under the system's temporary folder, which a sandbox cannot
            # grant then (it would reach the HOME): the sandboxed scenarios get one of their own.
            tmp = self.root / name / "tmp"
            tmp.mkdir(parents=True, exist_ok=True)
            extra_env["TMPDIR"] = str(tmp)
        if not opt_in:
            time.sleep(2.2)
            subprocess.run([self.bin, "trust", "--yes", "--project-dir", str(project)],
                           env=self.env(home), check=True, stdout=subprocess.DEVNULL)
        payload = payload or write_file_payload(project, 2000)
        payload["cwd"] = str(project)
        payload_path = dump(self.root / name / "payload.json", payload)
        dispatchers = self.dispatch_commands(compare, minimal)
        commands = {"/bin/true": "/bin/true", **floor_commands, **dispatchers}
        scenario = Scenario(name, title, home, project, payload_path, expected, commands,
                            floor, list(dispatchers), heavy, extra_env)
        self.scenarios.append(scenario)
        return scenario

    def build(self) -> None:
        # Five distinct handlers (an identical one would be reported as a duplicate, not run);
        # each is timed alone too, since `true 2` is not quite `true` (coreutils sets up its
        # locale when given arguments).
        five_scripts = ["true"] + [f"true {i}" for i in range(2, 6)]
        five_argvs = [["true"]] + [["true", str(i)] for i in range(2, 6)]
        script_floors = {f"sh -c '{c}'": f"/bin/sh -c {shlex.quote(c)}" for c in five_scripts}
        argv_floors = {" ".join(a): " ".join(a) for a in five_argvs}
        self.scenario(
            "no_match", "no match (3 layers, 15 groups)", project_layer(), None, 0,
            {}, ["/bin/true"], compare=True, minimal="")
        user, data, project = regex_layers()
        self.scenario(
            "no_match_regex", "no match, 7 unanchored regexes (3 layers, 15 groups)", project, None, 0,
            {}, ["/bin/true"], home_layers=(user, data))
        self.scenario(
            "one_command", "one handler, `command`",
            project_layer(group("write_file|str_replace", command("true"))), None, 1,
            {"sh -c true": SH_TRUE}, ["/bin/true", "sh -c true"], compare=True, minimal="spawn")
        # A background handler (`"async": true`, contract §21): the dispatch starts its
        # supervisor and answers; the handler runs after. Its floor is the dispatcher's own
        # start, and its goal is set against the dispatch that runs nothing.
        self.scenario(
            "one_background", "one background handler, `command` with `async`",
            project_layer(group("write_file|str_replace", command("true", **{"async": True}))), None, 1,
            {}, ["/bin/true"])
        sandboxed = self.scenario(
            "one_command_sandboxed", "one handler, `command`, `\"sandbox\": true`",
            project_layer(group("write_file|str_replace", command("true", sandbox=True))), None, 1,
            {"sh -c true": SH_TRUE}, ["/bin/true", "sh -c true"], own_tmpdir=True)
        if sandboxed:
            # The same handler unsandboxed, in a project of its own trusted the same way, timed in
            # the same hyperfine run: the ratio of the two is the sandbox's cost, paired by round.
            plain = self.root / "one_command_sandboxed" / "plain-project"
            dump(plain / ".levelcode" / "settings.json",
                 project_layer(group("write_file|str_replace", command("true"))))
            time.sleep(2.2)
            subprocess.run([self.bin, "trust", "--yes", "--project-dir", str(plain)],
                           env=self.env(sandboxed.home), check=True, stdout=subprocess.DEVNULL)
            key = "dispatcher, no sandbox"
            sandboxed.commands[key] = f"{shlex.quote(self.bin)} run --project-dir {shlex.quote(str(plain))}"
            sandboxed.dispatchers.append(key)
        self.scenario(
            "one_argv", "one handler, `argv`",
            project_layer(group("write_file|str_replace", argv("true"))), None, 1,
            {"true": "true"}, ["/bin/true", "true"], compare=True)
        self.scenario(
            "five_command", "five handlers, `command`",
            project_layer(group("write_file", *(command(c) for c in five_scripts))), None, 5,
            script_floors, ["/bin/true", *script_floors])
        self.scenario(
            "five_argv", "five handlers, `argv`",
            project_layer(group("write_file", *(argv(*a) for a in five_argvs))), None, 5,
            argv_floors, ["/bin/true", *argv_floors])
        self.scenario(
            "big_config", "big config (1,000 groups in the project layer, LEVELCODE_TRUST_PROJECT_HOOKS=1)",
            big_project_layer(self.args.big_config_groups), None, 1,
            {"sh -c true": SH_TRUE}, ["/bin/true", "sh -c true"], opt_in=True)
        project = self.root / "big_payload" / "project"
        readers = {f"sh -c '{c}'": f"/bin/sh -c {shlex.quote(c)}" for c in BIG_PAYLOAD_READERS}
        self.scenario(
            "big_payload", "big payload (8 MiB `tool_input`, 3 handlers read it)",
            project_layer(group("write_file", *(command(c) for c in BIG_PAYLOAD_READERS))),
            write_file_payload(project, self.args.big_payload_mib * MIB), 3,
            readers, list(readers), heavy=True)

    # -- checking that each scenario does what it says ------------------------------------------

    def check(self, scenario: Scenario, binary: str) -> str:
        """Runs one dispatch and returns "ok" or what differs from the scenario's intent."""
        with open(scenario.payload, "rb") as stdin:
            proc = subprocess.run([binary, "run"], stdin=stdin, capture_output=True,
                                  env=self.scenario_env(scenario), cwd=scenario.project, timeout=120)
        if proc.returncode != 0:
            return f"exit {proc.returncode}: {proc.stdout.decode(errors='replace')[:300]}"
        try:
            result = json.loads(proc.stdout)
        except ValueError:
            return f"stdout is not one JSON object: {proc.stdout[:200]!r}"
        handlers = result.get("handlers", [])
        # A background handler's entry says `started`: it runs after the answer.
        ran = [h for h in handlers if h.get("outcome") in ("proceed", "started")]
        problems = []
        if len(ran) != scenario.expected_handlers or len(handlers) != len(ran):
            outcomes = [h.get("outcome") for h in handlers]
            problems.append(f"expected {scenario.expected_handlers} handlers to proceed, got {outcomes}")
        if result.get("warnings"):
            problems.append(f"warnings: {result['warnings'][:3]}")
        return "; ".join(problems) or "ok"

    # -- hyperfine ---------------------------------------------------------------------------

    def run_hyperfine(self, scenario: Scenario, round_no: int) -> None:
        runs, warmup = (self.args.heavy_runs, 3) if scenario.heavy else (self.args.runs, self.args.warmup)
        export = self.out / "raw" / f"{scenario.name}.round{round_no}.json"
        export.parent.mkdir(parents=True, exist_ok=True)
        argv_ = [self.hyperfine, "--shell=none", "--style", "basic", "--warmup", str(warmup),
                 "--runs", str(runs), "--input", str(scenario.payload), "--export-json", str(export)]
        keys = list(scenario.commands)
        for key in keys:
            argv_ += ["--command-name", key]
        argv_ += [scenario.commands[k] for k in keys]
        print(f"\n== {scenario.title}, round {round_no}", flush=True)
        # Without --verbose hyperfine's own report (and its advice about outliers, which a busy
        # two-core machine always earns) is left out: the medians are printed below.
        quiet = None if self.args.verbose else subprocess.DEVNULL
        proc = subprocess.run(argv_, env=self.scenario_env(scenario), cwd=scenario.project,
                              stdout=quiet, stderr=quiet)
        if proc.returncode != 0:
            self.failures.append(f"{scenario.name}: hyperfine exited {proc.returncode}")
            return
        results = json.loads(export.read_text())["results"]
        for key, result in zip(keys, results):
            self.medians.setdefault((scenario.name, key), {})[round_no] = result["median"]
        print("   " + ", ".join(f"{k}: {ms(r['median'])}" for k, r in zip(keys, results)), flush=True)

    def by_round(self, scenario: str, *keys: str) -> dict[int, list[float]]:
        """For each round in which all of `keys` were measured, their medians in that round."""
        tables = [self.medians.get((scenario, k), {}) for k in keys]
        rounds = set.intersection(*(set(t) for t in tables)) if tables else set()
        return {r: [t[r] for t in tables] for r in sorted(rounds)}

    # -- peak memory -------------------------------------------------------------------------

    def peak_rss(self, scenario: Scenario, repeats: int) -> list[int]:
        """Maximum resident set sizes in bytes, from GNU time, of `repeats` dispatches."""
        if not self.args.gnu_time:
            return []
        sizes = []
        report = self.out / "time-v.txt"
        for _ in range(repeats):
            with open(scenario.payload, "rb") as stdin:
                proc = subprocess.run([self.args.gnu_time, "-v", "-o", str(report), self.bin, "run"],
                                      stdin=stdin, stdout=subprocess.DEVNULL,
                                      env=self.scenario_env(scenario), cwd=scenario.project)
            found = re.search(r"Maximum resident set size \(kbytes\): (\d+)", report.read_text())
            if proc.returncode != 0 or not found:
                self.failures.append(f"{scenario.name}: peak memory not measured")
                return []
            sizes.append(int(found.group(1)) * 1024)
        return sizes

    # -- many events -------------------------------------------------------------------------

    def many_events(self, count: int) -> dict:
        """`count` dispatches back to back, cycling through four events of the one-handler
        setup; each is followed by its floor (the same spawns without the dispatcher), started
        the same way, so the two totals compare like for like."""
        base = next(s for s in self.scenarios if s.name == "one_command")
        cycle = []
        for name, payload, handlers in (
            ("PreToolUse write_file", json.loads(base.payload.read_text()), 1),
            ("PreToolUse read_files", {"event": "PreToolUse", "tool_name": "read_files",
                                       "tool_input": {"paths": ["src/main.rs", "Cargo.toml"]}}, 0),
            ("PostToolUse str_replace", {"event": "PostToolUse", "tool_name": "str_replace",
                                         "tool_input": {"path": "src/main.rs", "replacements": []},
                                         "tool_result": [{"type": "json", "value": {"file": "src/main.rs"}}]}, 0),
            ("SessionStart", {"event": "SessionStart", "session_id": "bench-session"}, 1),
        ):
            payload["cwd"] = str(base.project)
            path = dump(self.root / "many_events" / f"{len(cycle)}.json", payload)
            floor = [["/bin/true"]] + [["/bin/sh", "-c", "true"]] * handlers
            cycle.append((name, path, handlers, floor))

        env = self.env(base.home)
        os.chdir(base.project)

        def spawn_wait(args: list[str], payload: Path) -> float:
            actions = [(os.POSIX_SPAWN_OPEN, 0, str(payload), os.O_RDONLY, 0),
                       (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0)]
            start = time.perf_counter()
            pid = os.posix_spawnp(args[0], args, env, file_actions=actions)
            _, status = os.waitpid(pid, 0)
            elapsed = time.perf_counter() - start
            if os.waitstatus_to_exitcode(status) != 0:
                raise RuntimeError(f"{args} exited {os.waitstatus_to_exitcode(status)}")
            return elapsed

        for i in range(50):
            _, path, _, floor = cycle[i % len(cycle)]
            spawn_wait([self.bin, "run"], path)
            for f in floor:
                spawn_wait(f, path)

        dispatch, floors, true_alone = [], [], []
        for i in range(count):
            _, path, handlers, floor = cycle[i % len(cycle)]
            dispatch.append(spawn_wait([self.bin, "run"], path))
            floors.append(sum(spawn_wait(f, path) for f in floor))
            if handlers == 0:
                true_alone.append(floors[-1])
        return {
            "count": count,
            "events": [c[0] for c in cycle],
            "total": sum(dispatch),
            "floor_total": sum(floors),
            "median": statistics.median(dispatch),
            "p90": quantile(dispatch, 0.90),
            "p99": quantile(dispatch, 0.99),
            "max": max(dispatch),
            "min": min(dispatch),
            "stdev": statistics.stdev(dispatch),
            "true_median": statistics.median(true_alone),
        }

    # -- callgrind ---------------------------------------------------------------------------

    def instructions(self, scenario: Scenario, args: list[str], env: dict[str, str] | None = None) -> int | None:
        """Instructions executed by `args` (not its children), counted by callgrind."""
        with open(scenario.payload, "rb") as stdin:
            proc = subprocess.run([self.args.valgrind, "--tool=callgrind", "--callgrind-out-file=/dev/null",
                                   *args], stdin=stdin, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                  env=env or self.scenario_env(scenario), cwd=scenario.project)
        found = re.search(rb"Collected : (\d+)", proc.stderr)
        return int(found.group(1)) if found else None

    # -- trust states ------------------------------------------------------------------------

    TRUST_STATES = ("sealed", "opt-in =1", "untrusted", "trusted just after an edit")

    def trust_state_counts(self) -> dict[str, int | None]:
        """Callgrind counts of the big-config dispatch (S5) in each trust state of the project
        layer, and of the one-handler dispatch (S2, sealed) beside them: each project written
        anew; the count is of a dispatch after one that may remember or seal what it computed,
        which is the cost every later dispatch pays (docs/BENCHMARKS.md, "Trust states")."""
        counts: dict[str, int | None] = {}
        layers = (("big_config", big_project_layer(self.args.big_config_groups)),
                  ("one_command", project_layer(group("write_file|str_replace", command("true")))))
        for name, settings in layers:
            states = self.TRUST_STATES if name == "big_config" else ("sealed",)
            for state in states:
                slug = f"trust_{name}_{state.split()[0].replace('=', '')}"
                home = self.make_home(slug)
                project = self.root / slug / "project"
                dump(project / ".levelcode" / "settings.json", settings)
                env = self.env(home)
                trust = [self.bin, "trust", "--yes", "--project-dir", str(project)]
                if state == "sealed":
                    time.sleep(2.2)
                    subprocess.run(trust, env=env, check=True, stdout=subprocess.DEVNULL)
                elif state == "untrusted":
                    time.sleep(2.2)
                elif state.startswith("trusted just"):
                    subprocess.run(trust, env=env, check=True, stdout=subprocess.DEVNULL)
                    time.sleep(2.2)
                elif state.startswith("opt-in"):
                    env["LEVELCODE_TRUST_PROJECT_HOOKS"] = "1"
                payload = write_file_payload(project, 2000)
                payload["cwd"] = str(project)
                payload_path = dump(self.root / slug / "payload.json", payload)
                scenario = Scenario(slug, state, home, project, payload_path, 1)
                self.trust_runs[f"{name}, {state}"] = (scenario, env)
                first = self.instructions(scenario, [self.bin, "run"], env)
                counts[f"{name}, {state}: first dispatch"] = first
                counts[f"{name}, {state}"] = self.instructions(scenario, [self.bin, "run"], env)
        return counts

    def trust_state_times(self, a: str, b: str, rounds: int, runs: int) -> dict | None:
        """The median time of the trust-state dispatch `a` over `b`'s, by round (each round
        times both, one after the other, so a slow spell falls on both)."""
        ratios = {}
        for round_no in range(1, rounds + 1):
            medians = []
            for name in (a, b):
                scenario, env = self.trust_runs[name]
                export = self.out / "raw" / f"{scenario.name}.round{round_no}.json"
                export.parent.mkdir(parents=True, exist_ok=True)
                proc = subprocess.run(
                    [self.hyperfine, "--shell=none", "--style", "basic", "--warmup", "5", "--runs", str(runs),
                     "--input", str(scenario.payload), "--export-json", str(export), f"{self.bin} run"],
                    env=env, cwd=scenario.project, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                if proc.returncode != 0:
                    return None
                medians.append(json.loads(export.read_text())["results"][0]["median"])
            ratios[round_no] = medians[0] / medians[1]
        return spread(ratios)

    # -- the whole run -------------------------------------------------------------------------

    def setup_only(self) -> int:
        """Writes the scenarios' HOMEs, projects and payloads, and their index, for profiling."""
        self.build()
        index = {s.name: {"home": str(s.home), "project": str(s.project), "payload": str(s.payload),
                          "expected_handlers": s.expected_handlers} for s in self.scenarios}
        (self.root / "scenarios.json").write_text(json.dumps(index, indent=2))
        return 0

    def run(self) -> int:
        self.build()
        load_start = os.getloadavg()[0]
        if load_start > 0.5 * (os.cpu_count() or 1):
            print(f"warning: load average {load_start:.1f} on {os.cpu_count()} CPUs: "
                  "other work is running, and the figures will show it", flush=True)
        for s in self.scenarios:
            self.checks[s.name] = self.check(s, self.bin)
            if self.dynamic_bin and "dispatcher (dynamic)" in s.dispatchers:
                dyn = self.check(s, self.dynamic_bin)
                if dyn != "ok":
                    self.checks[s.name] += f" (dynamic build: {dyn})"
            print(f"check {s.name}: {self.checks[s.name]}", flush=True)
        for round_no in range(1, self.args.rounds + 1):
            for s in self.scenarios:
                self.run_hyperfine(s, round_no)
        big = next((s for s in self.scenarios if s.name == "big_payload"), None)
        rss = self.peak_rss(big, 5) if big else []
        many = None
        if self.args.events and any(s.name == "one_command" for s in self.scenarios):
            print(f"\n== many events: {self.args.events} dispatches", flush=True)
            try:
                many = self.many_events(self.args.events)
            except (RuntimeError, OSError) as err:
                self.failures.append(f"many events: {err}")
        counts = {}
        if self.args.valgrind:
            print("\n== instruction counts (callgrind)", flush=True)
            for s in (s for s in self.scenarios
                      if s.name in ("no_match", "no_match_regex", "one_command", "one_background", "one_command_sandboxed", "big_config")):
                counts[f"{s.name}: /bin/true"] = self.instructions(s, ["/bin/true"])
                counts[f"{s.name}: dispatcher"] = self.instructions(s, [self.bin, "run"])
                if self.dynamic_bin:
                    counts[f"{s.name}: dispatcher (dynamic)"] = self.instructions(s, [self.dynamic_bin, "run"])
            if self.args.minimal_static and self.scenarios:
                counts[f"{self.scenarios[0].name}: minimal Rust program (static)"] = self.instructions(
                    self.scenarios[0], [self.args.minimal_static])
            if not self.args.only or "trust_states" in self.args.only:
                print("\n== trust states (callgrind)", flush=True)
                counts.update(self.trust_state_counts())
        summary = self.summarize(big, rss, many, counts)
        summary["load_average"] = {"start": load_start, "end": os.getloadavg()[0]}
        (self.out / "summary.json").write_text(json.dumps(summary, indent=2))
        table = render(summary)
        (self.out / "summary.md").write_text(table)
        print("\n" + table)
        for failure in self.failures:
            print(f"could not measure: {failure}", file=sys.stderr)
        return 1 if self.failures else 0

    def summarize(self, big: Scenario | None, rss: list[int], many: dict | None, counts: dict) -> dict:
        """Figures are paired by round: a round's dispatcher median is set against the floor
        measured in the same round, and the table shows the median over rounds of each such
        figure, so a slow spell of the machine does not land on one side only."""
        rows = []
        for s in self.scenarios:
            for key in s.dispatchers:
                rounds = self.by_round(s.name, key, "/bin/true", *s.floor)
                if not rounds:
                    continue
                d = {r: v[0] for r, v in rounds.items()}
                t = {r: v[1] for r, v in rounds.items()}
                f = {r: sum(v[2:]) for r, v in rounds.items()}
                cost = {r: d[r] - f[r] for r in rounds}
                rows.append({
                    "scenario": s.name, "title": s.title, "binary": key, "rounds": len(rounds),
                    "median": median(d), "floor": median(f), "true": median(t),
                    "cost": median(cost), "cost_by_round": cost, "dispatcher_by_round": d,
                    "cost_vs_true": spread({r: cost[r] / t[r] for r in rounds}),
                    "ratio_vs_floor": spread({r: d[r] / f[r] for r in rounds}),
                    "check": self.checks[s.name] if key.startswith("dispatcher") else "",
                })
        row = {(r["scenario"], r["binary"]): r for r in rows}
        goals = []

        def goal(name: str, value: dict | None, limit: float) -> None:
            goals.append({"goal": name, "value": value, "limit": limit,
                          "met": None if value is None else value["median"] <= limit})

        # S1: a no-match dispatch side by side with /bin/true, its floor.
        r = row.get(("no_match", "dispatcher"))
        goal("S1 no_match / `/bin/true` (medians)", r and r["ratio_vs_floor"], 1.2)
        for name in ("no_match", "no_match_regex", "one_command", "one_argv"):
            r = row.get((name, "dispatcher"))
            goal(f"{name}: own cost / one `/bin/true`", r and r["cost_vs_true"], 0.2)
        for five, one in (("five_command", "one_command"), ("five_argv", "one_argv")):
            r5, r1 = row.get((five, "dispatcher")), row.get((one, "dispatcher"))
            value = None
            if r5 and r1:
                # The four handlers added to the one-handler scenario, each timed alone.
                scenario = next(s for s in self.scenarios if s.name == five)
                extra = self.by_round(five, *scenario.floor[2:])
                per_round = {r: (r5["cost_by_round"][r] - r1["cost_by_round"][r]) / 4 / statistics.mean(extra[r])
                             for r in extra if r in r5["cost_by_round"] and r in r1["cost_by_round"]}
                value = spread(per_round) if per_round else None
            goal(f"{five}: each extra handler's overhead / that handler's own time", value, 0.05)
        rb, r1 = row.get(("big_config", "dispatcher")), row.get(("one_command", "dispatcher"))
        value = None
        if rb and r1:
            both = set(rb["dispatcher_by_round"]) & set(r1["dispatcher_by_round"])
            value = spread({r: rb["dispatcher_by_round"][r] / r1["dispatcher_by_round"][r] for r in both})
        goal("S5 big_config (opt-in =1) / S2 one_command (medians)", value, 1.2)
        rb, r0 = row.get(("one_background", "dispatcher")), row.get(("no_match", "dispatcher"))
        value = None
        if rb and r0:
            both = set(rb["dispatcher_by_round"]) & set(r0["dispatcher_by_round"])
            value = spread({r: rb["dispatcher_by_round"][r] / r0["dispatcher_by_round"][r] for r in both})
        goal("one_background / S1 no_match (medians)", value, 1.2)
        rs = row.get(("one_command_sandboxed", "dispatcher"))
        rn = row.get(("one_command_sandboxed", "dispatcher, no sandbox"))
        value = None
        if rs and rn:
            both = set(rs["dispatcher_by_round"]) & set(rn["dispatcher_by_round"])
            value = spread({r: rs["dispatcher_by_round"][r] / rn["dispatcher_by_round"][r] for r in both})
        goal("one_command_sandboxed: sandboxed / the same handler unsandboxed (medians)", value, 1.1)
        rp = row.get(("big_payload", "dispatcher"))
        goal("big_payload / its floor", rp and rp["ratio_vs_floor"], 1.3)
        size = big.payload.stat().st_size if big else 0
        peak = max(rss) if rss else None
        limit = 2 * size + 8 * MIB
        goal("big_payload: peak RSS / (2 x payload + 8 MiB)",
             peak and {"median": peak / limit, "low": min(rss) / limit, "high": peak / limit}, 1.0)
        return {
            "rows": rows, "goals": goals, "many_events": many, "instructions": counts,
            "big_payload": {"payload_bytes": size, "peak_rss": rss},
            "machine": machine(), "binary": self.args.bin_label, "dynamic_binary": bool(self.dynamic_bin),
            "rounds": self.args.rounds, "runs": self.args.runs, "heavy_runs": self.args.heavy_runs,
            "checks": self.checks, "failures": self.failures,
        }


# ---------------------------------------------------------------------------------------------
# Reporting


def median(by_round: dict[int, float]) -> float:
    return statistics.median(by_round.values())


def spread(by_round: dict[int, float]) -> dict:
    """The median over rounds and the interquartile range (the lowest and highest values when
    there are fewer than four rounds)."""
    values = sorted(by_round.values())
    if len(values) >= 4:
        low, _, high = statistics.quantiles(values, n=4)
    else:
        low, high = values[0], values[-1]
    return {"median": statistics.median(values), "low": low, "high": high}


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def ms(seconds: float | None) -> str:
    return "n/a" if seconds is None else f"{seconds * 1e3:.3f} ms"


def machine() -> dict:
    model = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {"nproc": os.cpu_count(), "cpu": model, "kernel": platform.release(),
            "system": platform.system()}


def with_range(value: dict | None) -> str:
    if value is None:
        return "n/a"
    return f"{value['median']:.2f} ({value['low']:.2f}–{value['high']:.2f})"


def render(summary: dict) -> str:
    m = summary["machine"]
    out = [f"Machine: {m['nproc']} CPUs, {m['cpu']}, {m['system']} {m['kernel']}. "
           f"Binary: {summary['binary']}. {summary['rounds']} rounds of {summary['runs']} runs per command "
           f"({summary['heavy_runs']} for the big payload); each figure is the median over rounds of "
           f"that round's medians, own cost paired with the floor of the same round. "
           f"Load average {summary['load_average']['start']:.2f} at the start, "
           f"{summary['load_average']['end']:.2f} at the end.", ""]
    out += ["| scenario | binary | dispatcher | floor | `/bin/true` | own cost | own cost / `/bin/true` (IQR) | check |",
            "|---|---|---:|---:|---:|---:|---:|---|"]
    for r in summary["rows"]:
        out.append(f"| {r['title']} | {r['binary']} | {ms(r['median'])} | {ms(r['floor'])} | {ms(r['true'])} "
                   f"| {ms(r['cost'])} | {with_range(r['cost_vs_true'])} | {r['check']} |")
    out += ["", "| goal | measured (IQR over rounds) | limit | met |", "|---|---:|---:|---|"]
    for g in summary["goals"]:
        met = {True: "yes", False: "**no**", None: "n/a"}[g["met"]]
        out.append(f"| {g['goal']} | {with_range(g['value'])} | {g['limit']} | {met} |")
    big = summary["big_payload"]
    if big["peak_rss"]:
        out += ["", f"Big payload: {big['payload_bytes'] / MIB:.2f} MiB on stdin, peak RSS of the dispatcher "
                    f"{max(big['peak_rss']) / MIB:.1f} MiB (max of {len(big['peak_rss'])}; "
                    f"median {statistics.median(big['peak_rss']) / MIB:.1f} MiB)."]
    many = summary["many_events"]
    if many:
        out += ["", f"Many events: {many['count']} dispatches cycling {', '.join(many['events'])}.",
                "", "| | total | median | p90 | p99 | max | stdev |", "|---|---:|---:|---:|---:|---:|---:|",
                f"| dispatcher | {many['total']:.3f} s | {ms(many['median'])} | {ms(many['p90'])} | "
                f"{ms(many['p99'])} | {ms(many['max'])} | {ms(many['stdev'])} |",
                f"| floor | {many['floor_total']:.3f} s | | | | | |",
                "", f"Own cost per dispatch: {ms((many['total'] - many['floor_total']) / many['count'])} "
                    f"= {(many['total'] - many['floor_total']) / many['count'] / many['true_median']:.2f} "
                    f"x one `/bin/true` ({ms(many['true_median'])} in this loop)."]
    if summary["instructions"]:
        out += ["", "| instructions (callgrind, the process itself) | count |", "|---|---:|"]
        for name, count in summary["instructions"].items():
            out.append(f"| {name} | {'n/a' if count is None else f'{count:,}'} |")
    return "\n".join(out) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bin", required=True, help="the dispatcher binary under test")
    parser.add_argument("--bin-label", default="as given", help="how to describe it in the report")
    parser.add_argument("--dynamic-bin", help="a dynamically linked build to compare with")
    parser.add_argument("--hyperfine", default="hyperfine")
    parser.add_argument("--minimal-static", help="benches/minimal.rs built statically, for reference")
    parser.add_argument("--minimal-dynamic", help="benches/minimal.rs built dynamically, for reference")
    parser.add_argument("--gnu-time", help="GNU time, for peak memory")
    parser.add_argument("--valgrind", help="valgrind, for instruction counts")
    parser.add_argument("--work", type=Path, required=True, help="an empty directory for HOMEs and projects")
    parser.add_argument("--out", type=Path, required=True, help="where results are written")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--heavy-runs", type=int, default=8)
    parser.add_argument("--events", type=int, default=1000)
    parser.add_argument("--big-config-groups", type=int, default=1000)
    parser.add_argument("--big-payload-mib", type=int, default=8)
    parser.add_argument("--only", nargs="*", default=[],
                        help="measure only these scenarios (by name)")
    parser.add_argument("--setup-only", action="store_true",
                        help="only write the scenarios (and WORK/scenarios.json), for profiling")
    parser.add_argument("--verbose", action="store_true", help="show hyperfine's own output")
    parser.add_argument("--trust-states-only", action="store_true",
                        help="only count the instructions of big config in each trust state (needs --valgrind)")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    args.bin = os.path.abspath(args.bin)
    for name in ("dynamic_bin", "minimal_static", "minimal_dynamic"):
        value = getattr(args, name)
        setattr(args, name, value and os.path.abspath(value))
    args.work = args.work.resolve()
    args.out = args.out.resolve()
    bench = Bench(args)
    if args.trust_states_only:
        counts = bench.trust_state_counts()
        sealed = counts.get("big_config, sealed")
        lines = ["| dispatch | instructions | / S5 sealed |", "|---|---:|---:|"]
        for name, count in counts.items():
            ratio = f"{count / sealed:.3f}" if count and sealed else "n/a"
            lines.append(f"| {name} | {'n/a' if count is None else f'{count:,}'} | {ratio} |")
        if shutil.which(args.hyperfine):
            a, b = "big_config, opt-in =1", "one_command, sealed"
            ratio = bench.trust_state_times(a, b, args.rounds, args.runs)
            lines += ["", f"Time, {a} / {b} (medians by round, {args.rounds} rounds of {args.runs}): "
                          f"{with_range(ratio)}"]
        table = "\n".join(lines) + "\n"
        (args.out / "trust-states.md").write_text(table)
        print(table)
        return 0 if all(counts.values()) else 1
    return bench.setup_only() if args.setup_only else bench.run()


if __name__ == "__main__":
    sys.exit(main())
