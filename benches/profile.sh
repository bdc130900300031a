#!/usr/bin/env bash
# Where a dispatch spends its time, on the bench's own scenarios: system calls (strace),
# instructions per function (callgrind: repeatable even on a noisy machine), and page faults
# and context switches (perf stat, when the kernel allows it).
#
#   bash benches/profile.sh            # builds a static binary with symbols, profiles it
#   bash benches/profile.sh BINARY     # profiles BINARY as it is (symbols only if it has them)
#
# Reports go to target/bench/profile/ (or $CARGO_TARGET_DIR/bench/profile/); a short digest is
# printed. Scenarios: no_match, one_command, one_argv, big_config (override with SCENARIOS=...;
# the others are five_command, five_argv, big_payload). PROFILE_RUSTFLAGS: flags of the build.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
target=${CARGO_TARGET_DIR:-target}
out=$target/bench/profile
scenarios=${SCENARIOS:-no_match one_command one_argv big_config}
mkdir -p "$out"
# Absolute: the scenarios run from inside their projects.
out=$(cd "$out" && pwd)

say() { printf '%s\n' "$*" >&2; }

if [ $# -ge 1 ]; then
    bin=$1
else
    # The release profile strips symbols; this build keeps them and line tables, in its own
    # directory, and is otherwise the binary `make bench` measures: the same profile, so the
    # same symbol names and the same layout of the hot functions (benches/hot-symbols.txt),
    # the symbols and line tables kept by rustflags, which do not name symbols.
    host=$(rustc -vV | sed -n 's/^host: //p')
    var="CARGO_TARGET_$(printf '%s' "$host" | tr 'a-z-' 'A-Z_')_RUSTFLAGS"
    # The flags of `make static` (non-PIE, statically linked, hot functions side by side),
    # unless PROFILE_RUSTFLAGS says otherwise.
    flags=""
    case "$host" in *-linux-gnu*) flags=$(bash benches/static-rustflags.sh) ;; esac
    flags=${PROFILE_RUSTFLAGS:-$flags}
    say "profile: building with symbols into $target/profile-build"
    env "$var=$flags -C strip=none -C debuginfo=line-tables-only" \
        cargo build --release --target "$host" --target-dir "$target/profile-build" >&2
    bin=$target/profile-build/$host/release/levelcode-hooks
fi
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
say "profile: $bin: $(file -b "$bin" | cut -d, -f1-2,5-)"

work=$(mktemp -d "${TMPDIR:-/tmp}/levelcode-hooks-profile.XXXXXX")
trap 'rm -rf "$work"' EXIT
python3 benches/bench.py --setup-only --bin "$bin" --work "$work" --out "$out"

field() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]][sys.argv[3]])' "$work/scenarios.json" "$1" "$2"; }

for s in $scenarios; do
    home=$(field "$s" home) project=$(field "$s" project) payload=$(field "$s" payload)
    run() { (cd "$project" && env -u LEVELCODE_DIR -u LEVELCODE_HOOKS -u LEVELCODE_HOOKS_NO_PROJECT \
        -u LEVELCODE_HOOKS_DEPTH -u LEVELCODE_TEAM -u NEXT_PUBLIC_CB_ENVIRONMENT HOME="$home" "$@" <"$payload"); }
    say ""
    say "== $s"

    if command -v strace >/dev/null; then
        run strace -f -c -o "$out/$s.strace-count.txt" "$bin" run >/dev/null
        run strace -f -tt -T -o "$out/$s.strace-trace.txt" "$bin" run >/dev/null
        own=$(grep -c . "$out/$s.strace-trace.txt")
        say "strace: $own lines of trace; system calls by count (all processes):"
        sed -n '3,$p' "$out/$s.strace-count.txt" | sort -k4 -n -r | head -n 12 | sed 's/^/  /' >&2
    fi

    if command -v valgrind >/dev/null; then
        run valgrind --tool=callgrind --callgrind-out-file="$out/$s.callgrind.out" "$bin" run \
            >/dev/null 2>"$out/$s.callgrind.log"
        say "callgrind: $(grep -o 'Collected : [0-9]*' "$out/$s.callgrind.log") instructions; top functions (inclusive):"
        callgrind_annotate --inclusive=yes "$out/$s.callgrind.out" >"$out/$s.callgrind.txt" 2>/dev/null || true
        grep -E '^ *[0-9,]+ \(' "$out/$s.callgrind.txt" | head -n 25 | cut -c1-150 | sed 's/^/  /' >&2 || true
    fi

    if command -v perf >/dev/null && perf stat -e task-clock true >/dev/null 2>&1; then
        run perf stat -e task-clock,page-faults,context-switches,cpu-migrations -o "$out/$s.perf-stat.txt" \
            "$bin" run >/dev/null || true
        say "perf stat:"
        grep -E 'task-clock|page-faults|context-switches' "$out/$s.perf-stat.txt" | sed 's/^/  /' >&2 || true
    fi
done
say ""
say "profile: full reports in $out/"
