#!/usr/bin/env bash
# The per-event cost of `levelcode-hooks serve`, for `make bench`: one server kept running and
# sent 10,000 events one at a time, in the no match, one handler and five handlers scenarios of
# benches/bench.py (same layers, same payloads), each beside its floor: the same handlers
# spawned directly, which no dispatcher can avoid; then bursts of 200 events written at once.
#
# Results go to target/bench/ (or $CARGO_TARGET_DIR/bench/): serve.md and serve.json.
# Exits non-zero only when the benchmark could not run; a missed goal is reported, not failed.
#
# Knobs (environment):
#   BENCH_BIN=path         measure this binary instead of building one
#   BENCH_QUICK=1          few events, for checking that the script works
#   SERVE_EVENTS           events per scenario (default 10000)
#   SERVE_FLOOR_EVENTS     floor measurements per scenario (default 2000)
#   SERVE_ROUNDS           rounds that interleave the two (default 10)
#   SERVE_BURST            requests written at once in each burst (default 200; 0: no bursts)
#   SERVE_BURSTS           bursts timed per scenario (default 20)
#   SERVE_PIN=0            let the scheduler place the processes instead of pinning them to
#                          one CPU (round trips then cost more whenever they land apart)
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
target=${CARGO_TARGET_DIR:-target}
out=$target/bench

say() { printf '%s\n' "$*" >&2; }
die() { say "serve bench: $*"; exit 1; }

command -v python3 >/dev/null || die "python3 is needed"
command -v rustc >/dev/null || die "rustc is needed"

if [ -n "${BENCH_BIN:-}" ]; then
    bin=$BENCH_BIN
    [ -x "$bin" ] || die "BENCH_BIN=$bin is not an executable"
else
    say "serve bench: cargo build --release"
    cargo build --release >&2 || die "the release build failed"
    bin=$target/release/levelcode-hooks
fi

# The client starts the server from inside each scenario's project.
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")

mkdir -p "$out"
client=$out/serve-client
rustc --edition 2021 -C opt-level=3 -C strip=symbols benches/serve/client.rs -o "$client" >&2 \
    || die "could not build the client (benches/serve/client.rs)"

work=$(mktemp -d "${TMPDIR:-/tmp}/levelcode-hooks-serve-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# The scenarios' HOMEs, projects and payloads, exactly as the one-shot benchmark writes them.
python3 benches/bench.py --setup-only --bin "$bin" --work "$work" --out "$out" >&2 \
    || die "benches/bench.py --setup-only failed"

# Settings written less than two seconds ago are compared by content on every request
# (docs/serve.md); the benchmark measures the usual case, settings older than that.
sleep 2.1

args=(--client "$client" --bin "$bin" --scenarios "$work/scenarios.json" --out "$out")
if [ -n "${BENCH_QUICK:-}" ]; then
    args+=(--events 500 --floor-events 100 --rounds 2 --warmup 50 --bursts 3)
fi
[ -z "${SERVE_EVENTS:-}" ] || args+=(--events "$SERVE_EVENTS")
[ -z "${SERVE_FLOOR_EVENTS:-}" ] || args+=(--floor-events "$SERVE_FLOOR_EVENTS")
[ -z "${SERVE_ROUNDS:-}" ] || args+=(--rounds "$SERVE_ROUNDS")
[ -z "${SERVE_BURST:-}" ] || args+=(--burst "$SERVE_BURST")
[ -z "${SERVE_BURSTS:-}" ] || args+=(--bursts "$SERVE_BURSTS")
[ "${SERVE_PIN:-1}" != 0 ] || args+=(--no-pin)

say "serve bench: $(nproc) CPUs; results in $out/serve.md"
python3 benches/serve/report.py "${args[@]}"
