#!/usr/bin/env bash
# `make bench`: builds the dispatcher, then measures every scenario beside its floor (the
# process spawns no dispatcher can avoid) and prints the table that docs/BENCHMARKS.md records.
#
# Results go to target/bench/ (or $CARGO_TARGET_DIR/bench/): summary.md, summary.json and
# hyperfine's raw JSON per scenario and round.
# Exits non-zero only when the benchmark could not run; a missed goal is reported, not failed.
#
# Knobs (environment):
#   BENCH_BIN=path     measure this binary instead of building one (no dynamic comparison)
#   BENCH_STATIC_RUSTFLAGS   flags of the static build (default: those of make static, from benches/static-rustflags.sh)
#   BENCH_QUICK=1      few runs, for checking that the script works
#   BENCH_ROUNDS, BENCH_RUNS, BENCH_HEAVY_RUNS, BENCH_EVENTS   override the defaults (10, 100, 8, 1000)
#   BENCH_ONLY="no_match no_match_regex"   measure only these scenarios
#   BENCH_VERBOSE=1    show hyperfine's own output
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
target=${CARGO_TARGET_DIR:-target}
out=$target/bench
hyperfine_version=1.20.0

say() { printf '%s\n' "$*" >&2; }
die() { say "bench: $*"; exit 1; }

as_root() {
    if [ "$(id -u)" = 0 ]; then "$@"
    elif command -v sudo >/dev/null; then sudo "$@"
    else return 1
    fi
}

apt_install() {
    command -v apt-get >/dev/null || return 1
    say "bench: installing $* with apt-get"
    as_root apt-get install -y "$@" >/dev/null 2>&1 \
        || { as_root apt-get update >/dev/null 2>&1 && as_root apt-get install -y "$@" >/dev/null 2>&1; }
}

# True when version $1 is at least $2 (both dotted numbers).
version_at_least() {
    [ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -n1)" = "$2" ]
}

# --- tools --------------------------------------------------------------------------------

command -v python3 >/dev/null || apt_install python3 || die "python3 is needed"
command -v cargo >/dev/null || die "cargo is needed"

cargo_bin="${CARGO_INSTALL_ROOT:-${CARGO_HOME:-$HOME/.cargo}}/bin"
hyperfine=""
for candidate in "$(command -v hyperfine || true)" "$cargo_bin/hyperfine"; do
    [ -x "$candidate" ] || continue
    found=$("$candidate" --version | awk '{print $2}')
    # --input (a payload on stdin) arrived in 1.16.
    if version_at_least "$found" 1.16.0; then hyperfine=$candidate; break; fi
done
if [ -z "$hyperfine" ]; then
    say "bench: hyperfine >= 1.16 not found; cargo install hyperfine $hyperfine_version (a few minutes)"
    cargo install hyperfine --version "$hyperfine_version" --locked >&2 || die "could not install hyperfine"
    hyperfine="$cargo_bin/hyperfine"
    [ -x "$hyperfine" ] || die "hyperfine was installed but not found at $hyperfine"
fi

gnu_time=/usr/bin/time
if ! "$gnu_time" -v true >/dev/null 2>&1; then
    apt_install time || true
    "$gnu_time" -v true >/dev/null 2>&1 || { say "bench: GNU time not available; peak memory is skipped"; gnu_time=""; }
fi

valgrind=$(command -v valgrind || true)
[ -n "$valgrind" ] || say "bench: valgrind not found; instruction counts are skipped"

# --- binaries -----------------------------------------------------------------------------

# Describes how a binary is linked: "static" or "dynamic".
linkage() {
    if command -v file >/dev/null; then
        case "$(file -L "$1")" in
            *"statically linked"* | *"static-pie linked"*) echo static; return ;;
        esac
        echo dynamic
    else
        case "$(ldd "$1" 2>&1)" in
            *"statically linked"* | *"not a dynamic executable"*) echo static ;;
            *) echo dynamic ;;
        esac
    fi
}

dynamic_bin=""
if [ -n "${BENCH_BIN:-}" ]; then
    bin=$BENCH_BIN
    [ -x "$bin" ] || die "BENCH_BIN=$bin is not an executable"
    label="$(linkage "$bin") build given by BENCH_BIN"
else
    say "bench: cargo build --release"
    cargo build --release >&2 || die "the release build failed"
    dynamic_bin=$target/release/levelcode-hooks
    bin=$dynamic_bin
    label="dynamically linked (cargo build --release)"

    # A statically linked binary skips the dynamic loader's work at every start. With glibc,
    # crt-static must be scoped to the target (an explicit --target) so that proc-macro crates,
    # built for the host, stay dynamic.
    host=$(rustc -vV | sed -n 's/^host: //p')
    case "$host" in
        *-linux-gnu*)
            var="CARGO_TARGET_$(printf '%s' "$host" | tr 'a-z-' 'A-Z_')_RUSTFLAGS"
            static_flags=${BENCH_STATIC_RUSTFLAGS:-$(bash benches/static-rustflags.sh)}
            say "bench: $var='$static_flags' cargo build --release --target $host"
            if env "$var=$static_flags" cargo build --release --target "$host" >&2; then
                static_bin=$target/$host/release/levelcode-hooks
                if [ "$(linkage "$static_bin")" = static ]; then
                    bin=$static_bin
                    label="statically linked ($static_flags, --target $host)"
                else
                    say "bench: the crt-static build is not static; measuring the dynamic build"
                fi
            else
                say "bench: the crt-static build failed; measuring the dynamic build"
            fi
            ;;
    esac
    [ "$bin" != "$dynamic_bin" ] || dynamic_bin=""
fi
# The least any Rust binary doing the dispatcher's unavoidable I/O costs here, for reference.
mkdir -p "$out"
minimal_flags=(--edition 2021 -C opt-level=3 -C panic=abort -C strip=symbols)
minimal_static="" minimal_dynamic=""
if rustc "${minimal_flags[@]}" benches/minimal.rs -o "$out/minimal-dynamic" >&2; then
    minimal_dynamic=$out/minimal-dynamic
fi
if rustc "${minimal_flags[@]}" -C target-feature=+crt-static benches/minimal.rs -o "$out/minimal-static" >&2 \
    && [ "$(linkage "$out/minimal-static")" = static ]; then
    minimal_static=$out/minimal-static
fi

for b in "$bin" $dynamic_bin; do
    say "bench: $b: $(linkage "$b") ($(file -b "$b" 2>/dev/null | grep -o '[a-z-]* linked' | head -n1 || true))"
    ldd "$b" 2>&1 | sed 's/^/bench:   /' >&2 || true
done

# --- measure --------------------------------------------------------------------------------

work=$(mktemp -d "${TMPDIR:-/tmp}/levelcode-hooks-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

args=(--bin "$bin" --bin-label "$label" --hyperfine "$hyperfine" --work "$work" --out "$out")
[ -z "$dynamic_bin" ] || args+=(--dynamic-bin "$dynamic_bin")
[ -z "$minimal_static" ] || args+=(--minimal-static "$minimal_static")
[ -z "$minimal_dynamic" ] || args+=(--minimal-dynamic "$minimal_dynamic")
[ -z "$gnu_time" ] || args+=(--gnu-time "$gnu_time")
[ -z "$valgrind" ] || args+=(--valgrind "$valgrind")
if [ -n "${BENCH_QUICK:-}" ]; then
    args+=(--rounds 2 --runs 20 --warmup 3 --heavy-runs 3 --events 40)
fi
[ -z "${BENCH_ROUNDS:-}" ] || args+=(--rounds "$BENCH_ROUNDS")
[ -z "${BENCH_RUNS:-}" ] || args+=(--runs "$BENCH_RUNS")
[ -z "${BENCH_HEAVY_RUNS:-}" ] || args+=(--heavy-runs "$BENCH_HEAVY_RUNS")
[ -z "${BENCH_EVENTS:-}" ] || args+=(--events "$BENCH_EVENTS")
# shellcheck disable=SC2206 # a list of scenario names
[ -z "${BENCH_ONLY:-}" ] || args+=(--only $BENCH_ONLY)
[ -z "${BENCH_VERBOSE:-}" ] || args+=(--verbose)

say "bench: hyperfine $("$hyperfine" --version | awk '{print $2}'), $(nproc) CPUs; results in $out/"
python3 benches/bench.py "${args[@]}"
