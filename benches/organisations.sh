#!/usr/bin/env bash
# `make bench`, the organisations' part (docs/organisations.md, docs/BENCHMARKS.md): what the
# managed layer costs a dispatch with no managed file, what OpenTelemetry export costs a
# one-handler dispatch (`run`, and `serve`), with a local receiver and with a collector that is
# not there, and what an http handler costs against a curl process doing the same POST, each
# against its goal, measured side by side in this one run.
#
# Uses the static release binary (`make static`), hyperfine, strace and valgrind when present,
# and the OTLP receiver of the tests (tests/otlp/receiver.py, with `make otlp-python`).
# Results: target/bench/organisations.md (and .json). Exits non-zero only when it could not run;
# a missed goal is reported, not failed.
#
# Knobs: BENCH_BIN (the binary), BENCH_RUNS (default 300), BENCH_QUICK=1 (20 runs).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
target=${CARGO_TARGET_DIR:-target}
# The collector benchmarked beside the receivers (benches/rotel_receiver.py), from PyPI.
ROTEL_VERSION=0.0.1a15
out=$target/bench
mkdir -p "$out"
say() { printf '%s\n' "$*" >&2; }
die() { say "bench: $*"; exit 1; }

host=$(rustc -vV | sed -n 's/^host: //p')
bin=${BENCH_BIN:-$target/$host/release/levelcode-hooks}
[ -x "$bin" ] || bin=$target/release/levelcode-hooks
[ -x "$bin" ] || die "no release binary: run make static"
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
hyperfine=$(command -v hyperfine || echo "${CARGO_HOME:-$HOME/.cargo}/bin/hyperfine")
[ -x "$hyperfine" ] || die "hyperfine is needed (benches/run.sh installs it)"
runs=${BENCH_RUNS:-300}
[ -z "${BENCH_QUICK:-}" ] || runs=20
python_path=$target/otlp-python
have_receiver=""
[ -d "$python_path/opentelemetry/proto" ] && have_receiver=1

work=$(mktemp -d)
receiver_pid=""
blackhole_pid=""
cleanup() {
    [ -z "$receiver_pid" ] || kill "$receiver_pid" 2>/dev/null || true
    [ -z "$blackhole_pid" ] || kill "$blackhole_pid" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT
mkdir -p "$work/home/.config/levelcode" "$work/project"
home=$work/home
printf '{"hooks":{"PreToolUse":[{"matcher":"write_file","hooks":[{"command":"true"}]}]}}' \
    > "$home/.config/levelcode/settings.json"
printf '{"event":"PreToolUse","tool_name":"read_files","cwd":"%s"}' "$work/project" > "$work/nomatch.json"
printf '{"event":"PreToolUse","tool_name":"write_file","cwd":"%s"}' "$work/project" > "$work/one.json"
printf '{"hooks":{"Stop":[{"hooks":[{"command":"true"}]}]}}' > "$work/managed.json"
chmod 644 "$work/managed.json"
python3 -c '
import json, sys
with open(sys.argv[1], "w") as f:
    for i in range(200):
        f.write(json.dumps({"id": i, "event": "PreToolUse", "tool_name": "read_files", "cwd": sys.argv[2]}) + "\n")
' "$work/serve.jsonl" "$work/project"

# Everything the dispatcher reads from the environment, cleared, so this machine's cannot count.
base_env=(env -i PATH="$PATH" HOME="$home")
report=$out/organisations.md
figures=$out/organisations.json
echo '{}' > "$figures"
# figure KEY VALUE: one figure into organisations.json, for the goals table at the end.
figure() { python3 -c 'import json,sys; p=sys.argv[1]; d=json.load(open(p)); d[sys.argv[2]]=json.loads(sys.argv[3]); json.dump(d, open(p, "w"), indent=1)' "$figures" "$1" "$2"; }
{
    echo "# Organisations: managed layer and OpenTelemetry export"
    echo
    echo "binary: \`$(basename "$bin")\` ($(stat -c %s "$bin") bytes); $(nproc) CPUs; $(date -u +%Y-%m-%d); load average at the start: $(cut -d' ' -f1-3 /proc/loadavg)"
    echo
} > "$report"

median_ms() { python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["results"]; print(" ".join("%.3f" % (x["median"]*1000) for x in r))' "$1"; }
instructions() { sed -n 's/.*Collected : *\([0-9]*\).*/\1/p' "$1"; }

# --- the managed layer, file absent -------------------------------------------------------
echo "## The managed layer with no managed file" >> "$report"
echo >> "$report"
if command -v strace >/dev/null; then
    "${base_env[@]}" strace -f -o "$work/strace.txt" "$bin" < "$work/nomatch.json" > /dev/null
    managed_calls=$(grep -c 'managed-settings' "$work/strace.txt" || true)
    all_calls=$(grep -vc 'exited with\|+++' "$work/strace.txt" || true)
    "${base_env[@]}" strace -f -o "$work/strace.serve.txt" "$bin" serve < "$work/serve.jsonl" > /dev/null
    serve_calls=$(grep -c 'managed-settings' "$work/strace.serve.txt" || true)
    figure managed_calls "$managed_calls"
    figure managed_serve_calls "$(python3 -c "print(round($serve_calls / 200, 2))")"
    {
        echo "no-match \`run\`: $all_calls system calls in all, $managed_calls of them about the managed file:"
        echo
        grep 'managed-settings' "$work/strace.txt" | sed 's/^[0-9]* */    /'
        echo
        echo "\`serve\`, 200 no-match requests: $serve_calls system calls about the managed file, $(python3 -c "print(round($serve_calls / 200, 2))") per request"
        echo
    } >> "$report"
fi
if command -v valgrind >/dev/null; then
    for case in absent present; do
        extra=()
        [ "$case" = absent ] || extra=(LEVELCODE_MANAGED_SETTINGS="$work/managed.json")
        "${base_env[@]}" "${extra[@]}" valgrind --tool=callgrind --callgrind-out-file=/dev/null \
            "$bin" < "$work/nomatch.json" > /dev/null 2> "$work/cg.$case.log" || true
        echo "no-match dispatch, managed file $case: $(instructions "$work/cg.$case.log") instructions (callgrind)" >> "$report"
    done
    echo >> "$report"
fi
"$hyperfine" -N --warmup 20 --runs "$runs" --input "$work/nomatch.json" \
    --export-json "$work/managed.json.out" \
    -n "no managed file" "${base_env[*]} $bin" \
    -n "managed file, no match" "${base_env[*]} LEVELCODE_MANAGED_SETTINGS=$work/managed.json $bin" >/dev/null 2>>"$work/hyperfine.log"
read -r absent present <<< "$(median_ms "$work/managed.json.out")"
printf 'no-match dispatch: %s ms with no managed file, %s ms with one (hyperfine, %s runs)\n\n' \
    "$absent" "$present" "$runs" >> "$report"

# --- export, local receiver ---------------------------------------------------------------
if [ -n "$have_receiver" ]; then
    receivers="tests lean"
    # A real OpenTelemetry collector too: Rotel, written in Rust, from PyPI.
    rotel=$target/otlp-rotel
    [ -f "$rotel/rotel/rotel-agent" ] || python3 -m pip install --quiet --disable-pip-version-check \
        --root-user-action=ignore --no-deps --target "$rotel" "rotel==$ROTEL_VERSION" >/dev/null 2>&1 || true
    chmod +x "$rotel/rotel/rotel-agent" 2>/dev/null || true
    if [ -x "$rotel/rotel/rotel-agent" ]; then
        export ROTEL_AGENT=$rotel/rotel/rotel-agent
        receivers="$receivers rotel"
    fi
    for receiver in $receivers; do
        case $receiver in
            tests) script=tests/otlp/receiver.py ;;
            lean) script=benches/lean_receiver.py ;;
            rotel) script=benches/rotel_receiver.py ;;
        esac
        python3 benches/interleaved.py "$runs" "$work/one.json" "$bin" "$home" "$python_path" "$script" \
            > "$work/interleaved.$receiver.json"
        figure "local_$receiver" "$(cat "$work/interleaved.$receiver.json")"
        python3 - "$work/interleaved.$receiver.json" "$receiver" >> "$report" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
off = r["off"]["median"]
if sys.argv[2] == "tests":
    print("## Export on, local receiver: a one-handler dispatch")
    print()
    print("The tests' receiver (tests/otlp/receiver.py: Python's http.server, a thread per connection):")
elif sys.argv[2] == "lean":
    print("A lean receiver (benches/lean_receiver.py: one thread, one poll loop, the same decoding):")
else:
    print("A real collector, Rotel (benches/rotel_receiver.py: an OpenTelemetry collector written in Rust, from PyPI, dropping what it receives):")
print()
print("| | median | interquartile range | vs export off |")
print("|---|---:|---:|---:|")
print(f"| export off | {off:.3f} ms | {r['off']['iqr']:.3f} ms | |")
for name, label in (("protobuf", "`http/protobuf` (the default)"), ("json", "`http/json`")):
    m = r[name]["median"]
    print(f"| {label} | {m:.3f} ms | {r[name]['iqr']:.3f} ms | {100 * (m / off - 1):+.1f}% ({m - off:+.3f} ms) |")
print()
print(f"{r['rounds']} rounds, each running the three cases once in a shuffled order, with the receiver's line awaited and the same pause after every run (benches/interleaved.py); the receiver took {r['received']} requests, {r['undecodable']} of them not valid OTLP.")
print()
EOF
    done
    # The dispatcher's own added work, by callgrind, against the same receiver.
    if command -v valgrind >/dev/null; then
        PYTHONPATH=$python_path python3 tests/otlp/receiver.py --lifetime 600 > "$work/receiver.out" &
        receiver_pid=$!
        for _ in $(seq 100); do [ -s "$work/receiver.out" ] && break; sleep 0.1; done
        port=$(head -n1 "$work/receiver.out" | python3 -c 'import json,sys; print(json.load(sys.stdin)["port"])')
        "${base_env[@]}" valgrind --tool=callgrind --callgrind-out-file=/dev/null "$bin" \
            < "$work/one.json" > /dev/null 2> "$work/cg.off.log" || true
        "${base_env[@]}" OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:$port" valgrind --tool=callgrind \
            --callgrind-out-file=/dev/null "$bin" < "$work/one.json" > /dev/null 2> "$work/cg.on.log" || true
        off_ir=$(instructions "$work/cg.off.log") on_ir=$(instructions "$work/cg.on.log")
        echo "one-handler dispatch: $off_ir instructions with export off, $on_ir exported (+$((on_ir - off_ir)); callgrind, the dispatcher's process alone)" >> "$report"
        echo >> "$report"
        kill "$receiver_pid" 2>/dev/null || true
        receiver_pid=""
    fi
else
    echo "export with a local receiver: skipped (make otlp-python installs the receiver's decoder)" >> "$report"
    echo >> "$report"
fi

# --- export in serve: 200 one-handler requests -------------------------------------------
if [ -n "$have_receiver" ]; then
    python3 -c '
import json, sys
with open(sys.argv[1], "w") as f:
    for i in range(200):
        f.write(json.dumps({"id": i, "event": "PreToolUse", "tool_name": "write_file", "cwd": sys.argv[2]}) + "\n")
' "$work/serve.one.jsonl" "$work/project"
    script=benches/lean_receiver.py
    [ -z "${ROTEL_AGENT:-}" ] || script=benches/rotel_receiver.py
    PYTHONPATH=$python_path python3 "$script" --lifetime 900 > "$work/serve.receiver.out" &
    receiver_pid=$!
    for _ in $(seq 300); do [ -s "$work/serve.receiver.out" ] && break; sleep 0.1; done
    port=$(head -n1 "$work/serve.receiver.out" | python3 -c 'import json,sys; print(json.load(sys.stdin)["port"])')
    serve_runs=$((runs / 10 > 10 ? runs / 10 : 10))
    "$hyperfine" -N --warmup 2 --runs "$serve_runs" --input "$work/serve.one.jsonl" \
        --export-json "$work/serve.export.json" \
        -n "serve, export off" "${base_env[*]} $bin serve" \
        -n "serve, exported" "${base_env[*]} OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:$port $bin serve" \
        >/dev/null 2>>"$work/hyperfine.log"
    read -r serve_off serve_on <<< "$(median_ms "$work/serve.export.json")"
    figure serve_export "{\"off\": $serve_off, \"on\": $serve_on, \"runs\": $serve_runs, \"receiver\": \"$(basename "$script")\"}"
    printf '## Export in serve\n\n200 one-handler requests (a `true` handler) through one `serve`: %s ms with export off, %s ms exported (%s, batches of the background thread, the last flushed at the end of the input); hyperfine, %s runs\n\n' \
        "$serve_off" "$serve_on" "$(basename "$script")" "$serve_runs" >> "$report"
    kill "$receiver_pid" 2>/dev/null || true
    receiver_pid=""
fi

# --- an http handler against curl doing the same POST --------------------------------------
if command -v curl >/dev/null; then
    python3 tests/http/server.py --lifetime 900 > "$work/policy.out" &
    receiver_pid=$!
    for _ in $(seq 100); do [ -s "$work/policy.out" ] && break; sleep 0.1; done
    port=$(head -n1 "$work/policy.out" | python3 -c 'import json,sys; print(json.load(sys.stdin)["port"])')
    url="http://127.0.0.1:$port/reply/200"
    mkdir -p "$work/http/.config/levelcode" "$work/curl/.config/levelcode"
    printf '{"hooks":{"PreToolUse":[{"hooks":[{"type":"http","url":"%s"}]}]}}' "$url" \
        > "$work/http/.config/levelcode/settings.json"
    printf '{"hooks":{"PreToolUse":[{"hooks":[{"argv":["curl","-s","-o","/dev/null","-X","POST","-H","Content-Type: application/json","--data-binary","@-","%s"]}]}]}}' "$url" \
        > "$work/curl/.config/levelcode/settings.json"
    "$hyperfine" -N --warmup 10 --runs "$runs" --input "$work/one.json" \
        --export-json "$work/http.json" \
        -n "http handler" "env -i PATH=$PATH HOME=$work/http $bin" \
        -n "curl handler" "env -i PATH=$PATH HOME=$work/curl $bin" \
        >/dev/null 2>>"$work/hyperfine.log"
    read -r http_ms curl_ms <<< "$(median_ms "$work/http.json")"
    figure http_handler "{\"http\": $http_ms, \"curl\": $curl_ms, \"runs\": $runs}"
    printf '## An http handler on loopback against curl\n\nA PreToolUse dispatch posting the payload to the tests'"'"' policy service (tests/http/server.py): %s ms as an http handler, %s ms as a command handler running curl with the same POST; hyperfine, %s runs\n\n' \
        "$http_ms" "$curl_ms" "$runs" >> "$report"
    kill "$receiver_pid" 2>/dev/null || true
    receiver_pid=""
fi

# --- export on, collector unreachable -----------------------------------------------------
# One port where nothing listens (refused at once), and a black hole: a socket that listens
# (the system completes each connection) and never accepts or reads.
closed=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
python3 -c '
import socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(4096)
print(s.getsockname()[1], flush=True)
time.sleep(600)' > "$work/blackhole.port" &
blackhole_pid=$!
for _ in $(seq 100); do [ -s "$work/blackhole.port" ] && break; sleep 0.1; done
silent=$(cat "$work/blackhole.port")
slow_runs=$((runs / 6 > 10 ? runs / 6 : 10))
"$hyperfine" -N --warmup 3 --runs "$slow_runs" --input "$work/one.json" \
    --export-json "$work/unreachable.json" \
    -n "export off" "${base_env[*]} $bin" \
    -n "nothing listening" "${base_env[*]} OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:$closed $bin" \
    -n "black hole" "${base_env[*]} OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:$silent $bin" \
    >/dev/null 2>>"$work/hyperfine.log"
read -r off refused silent_ms <<< "$(median_ms "$work/unreachable.json")"
max_silent=$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["results"]; print("%.3f" % (max(r[2]["times"])*1000))' "$work/unreachable.json")
figure unreachable "{\"off\": $off, \"refused\": $refused, \"silent\": $silent_ms, \"silent_max\": $max_silent, \"runs\": $slow_runs}"
python3 - "$figures" >> "$report" <<'EOF'
import json, sys
u = json.load(open(sys.argv[1]))["unreachable"]
off = u["off"]
print("## Export on, collector unreachable: a one-handler dispatch")
print()
print("| | median | added |")
print("|---|---:|---:|")
print(f"| export off | {off:.3f} ms | |")
print(f"| nothing listening (refused) | {u['refused']:.3f} ms | {u['refused'] - off:+.3f} ms |")
print(f"| black hole (listens, never accepts or reads) | {u['silent']:.3f} ms | {u['silent'] - off:+.3f} ms (slowest run {u['silent_max'] - off:+.3f} ms) |")
print()
print(f"hyperfine, {u['runs']} runs each; each export that failed gave one warning (tests/otel.rs)")
print()
EOF

# --- the goals ----------------------------------------------------------------------------
python3 - "$figures" >> "$report" <<'EOF'
import json, sys
f = json.load(open(sys.argv[1]))
rows = []
if "managed_calls" in f:
    n = f["managed_calls"]
    rows.append(("managed layer, file absent: a no-match `run` makes at most one system call about it", f"{n} (`serve`: {f['managed_serve_calls']} per request)", n <= 1 and f["managed_serve_calls"] <= 1))
for receiver, which in (("tests", "the tests' receiver"), ("lean", "a lean receiver"), ("rotel", "Rotel, a collector")):
    if f"local_{receiver}" not in f:
        continue
    l = f[f"local_{receiver}"]
    for name, label in (("protobuf", "http/protobuf"), ("json", "http/json")):
        added = 100 * (l[name]["median"] / l["off"]["median"] - 1)
        rows.append((f"export on ({label}), local receiver ({which}): a one-handler `run` at most 10% slower", f"{added:+.1f}%", added <= 10.0))
if "serve_export" in f:
    s = f["serve_export"]
    added = 100 * (s["on"] / s["off"] - 1)
    rows.append((f"export in `serve` ({s['receiver']}): 200 one-handler requests at most 2% slower", f"{added:+.1f}%", added <= 2.0))
if "http_handler" in f:
    h = f["http_handler"]
    rows.append(("an http handler on loopback costs at most a curl process doing the same POST", f"{h['http']:.3f} ms against {h['curl']:.3f} ms", h["http"] <= h["curl"]))
u = f["unreachable"]
for key, label in (("refused", "nothing listening"), ("silent", "black hole")):
    added = u[key] - u["off"]
    rows.append((f"export on, collector unreachable ({label}): at most 250 ms added", f"{added:+.1f} ms", added <= 250.0))
print("## Goals")
print()
print("| goal | measured | met |")
print("|---|---:|---|")
for goal, measured, met in rows:
    print(f"| {goal} | {measured} | {'yes' if met else '**no**'} |")
print()
EOF
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)" >> "$report"
cat "$report"
