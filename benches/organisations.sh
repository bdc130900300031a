#!/usr/bin/env bash
# `make bench`, the organisations' part (docs/organisations.md, docs/BENCHMARKS.md): what the
# managed layer costs a dispatch with no managed file, and what OpenTelemetry export costs a
# one-handler dispatch, with a local receiver and with a collector that is not there.
#
# Uses the static release binary (`make static`), hyperfine, strace and valgrind when present,
# and the OTLP receiver of the tests (tests/otlp/receiver.py, with `make otlp-python`).
# Results: target/bench/organisations.md. Exits non-zero only when it could not run.
#
# Knobs: BENCH_BIN (the binary), BENCH_RUNS (default 200), BENCH_QUICK=1 (20 runs).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
target=${CARGO_TARGET_DIR:-target}
out=$target/bench
mkdir -p "$out"
say() { printf '%s\n' "$*" >&2; }
die() { say "bench: $*"; exit 1; }

host=$(rustc -vV | sed -n 's/^host: //p')
bin=${BENCH_BIN:-$target/$host/release/levelcode-hooks}
[ -x "$bin" ] || bin=$target/release/levelcode-hooks
[ -x "$bin" ] || die "no release binary: run make static"
hyperfine=$(command -v hyperfine || echo "${CARGO_HOME:-$HOME/.cargo}/bin/hyperfine")
[ -x "$hyperfine" ] || die "hyperfine is needed (benches/run.sh installs it)"
runs=${BENCH_RUNS:-200}
[ -z "${BENCH_QUICK:-}" ] || runs=20

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

# Everything the dispatcher reads from the environment, cleared, so this machine's cannot count.
base_env=(env -i PATH="$PATH" HOME="$home")
report=$out/organisations.md
{
    echo "# Organisations: managed layer and OpenTelemetry export"
    echo
    echo "binary: \`$bin\` ($(stat -c %s "$bin") bytes); $(nproc) CPUs; $(date -u +%Y-%m-%d)"
    echo
} > "$report"

mean_ms() { python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["results"]; print(" ".join("%.3f" % (x["median"]*1000) for x in r))' "$1"; }

# --- the managed layer, file absent -------------------------------------------------------
if command -v strace >/dev/null; then
    "${base_env[@]}" strace -f -o "$work/strace.txt" "$bin" < "$work/nomatch.json" > /dev/null
    managed_calls=$(grep -c 'managed-settings' "$work/strace.txt" || true)
    all_calls=$(grep -vc 'exited with\|+++' "$work/strace.txt" || true)
    {
        echo "## The managed layer with no managed file"
        echo
        echo "no-match dispatch: $all_calls system calls in all, $managed_calls of them about the managed file:"
        echo
        grep 'managed-settings' "$work/strace.txt" | sed 's/^[0-9]* */    /'
        echo
    } >> "$report"
fi
if command -v valgrind >/dev/null; then
    for case in absent present; do
        extra=()
        [ "$case" = absent ] || extra=(LEVELCODE_MANAGED_SETTINGS="$work/managed.json")
        "${base_env[@]}" "${extra[@]}" valgrind --tool=callgrind --callgrind-out-file="$work/cg.$case" \
            "$bin" < "$work/nomatch.json" > /dev/null 2> "$work/cg.$case.log" || true
        ir=$(sed -n 's/.*Collected : *\([0-9]*\).*/\1/p' "$work/cg.$case.log")
        echo "no-match dispatch, managed file $case: $ir instructions (callgrind)" >> "$report"
    done
    echo >> "$report"
fi
"$hyperfine" -N --warmup 20 --runs "$runs" --input "$work/nomatch.json" \
    --export-json "$work/managed.json.out" \
    -n "no managed file" "${base_env[*]} $bin" \
    -n "managed file, no match" "${base_env[*]} LEVELCODE_MANAGED_SETTINGS=$work/managed.json $bin" >/dev/null
read -r absent present <<< "$(mean_ms "$work/managed.json.out")"
printf 'no-match dispatch: %s ms with no managed file, %s ms with one (hyperfine, %s runs)\n\n' \
    "$absent" "$present" "$runs" >> "$report"

# --- export, local receiver ---------------------------------------------------------------
python_path=$target/otlp-python
if [ -d "$python_path/opentelemetry/proto" ]; then
    PYTHONPATH=$python_path python3 tests/otlp/receiver.py --lifetime 600 > "$work/receiver.out" &
    receiver_pid=$!
    for _ in $(seq 100); do [ -s "$work/receiver.out" ] && break; sleep 0.1; done
    port=$(head -n1 "$work/receiver.out" | python3 -c 'import json,sys; print(json.load(sys.stdin)["port"])')
    read -r off on_pb on_json <<< "$(python3 benches/interleaved.py "$runs" "$work/one.json" "$bin" "$home" "http://127.0.0.1:$port")"
    received=$(($(wc -l < "$work/receiver.out") - 1))
    python3 - "$off" "$on_pb" "$on_json" "$received" "$runs" >> "$report" <<'EOF'
import sys
off, pb, js = map(float, sys.argv[1:4])
print("## Export on, local receiver: a one-handler dispatch")
print()
print("| | median | vs export off |")
print("|---|---|---|")
print(f"| export off | {off:.3f} ms | |")
print(f"| http/protobuf | {pb:.3f} ms | {100 * (pb / off - 1):+.1f}% |")
print(f"| http/json | {js:.3f} ms | {100 * (js / off - 1):+.1f}% |")
print()
print(f"goal: at most +5%; medians of {sys.argv[5]} runs per case, taken in turns (benches/interleaved.py); the receiver decoded {sys.argv[4]} requests.")
print()
EOF
    kill "$receiver_pid" 2>/dev/null || true
    receiver_pid=""
else
    echo "export with a local receiver: skipped (make otlp-python installs the receiver's decoder)" >> "$report"
fi

# --- export on, collector unreachable -----------------------------------------------------
# One port where nothing listens (refused at once), one that accepts and never answers.
closed=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
python3 -c '
import socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(1024)
print(s.getsockname()[1], flush=True)
time.sleep(600)' > "$work/blackhole.port" &
blackhole_pid=$!
for _ in $(seq 100); do [ -s "$work/blackhole.port" ] && break; sleep 0.1; done
silent=$(cat "$work/blackhole.port")
slow_runs=$((runs / 4 > 10 ? runs / 4 : 10))
"$hyperfine" -N --warmup 3 --runs "$slow_runs" --input "$work/one.json" \
    --export-json "$work/unreachable.json" \
    -n "export off" "${base_env[*]} $bin" \
    -n "nothing listening" "${base_env[*]} OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:$closed $bin" \
    -n "collector never answers" "${base_env[*]} OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:$silent $bin" \
    >/dev/null
read -r off refused silent_ms <<< "$(mean_ms "$work/unreachable.json")"
python3 - "$off" "$refused" "$silent_ms" >> "$report" <<'EOF'
import sys
off, refused, silent = map(float, sys.argv[1:4])
print("## Export on, collector unreachable: a one-handler dispatch")
print()
print("| | median | added |")
print("|---|---|---|")
print(f"| export off | {off:.3f} ms | |")
print(f"| nothing listening (refused) | {refused:.3f} ms | {refused - off:+.3f} ms |")
print(f"| accepts, never answers | {silent:.3f} ms | {silent - off:+.3f} ms |")
print()
print("bound: 250 ms added at most (docs/organisations.md)")
EOF
cat "$report"
