#!/usr/bin/env bash
# Writes benches/hot-symbols.txt: every function a dispatch of the bench's scenarios runs,
# which the static build's linker lays out side by side (benches/static-rustflags.sh), so that
# a start touches a few pages of code instead of pages all over a binary of several MB.
#
#   bash benches/hot-symbols.sh            # builds the static binary with symbols, lists them
#   bash benches/hot-symbols.sh BINARY     # lists what BINARY runs (it must have symbols)
#
# Needs valgrind (callgrind). Run it again after a change that adds functions to the dispatch
# or a new Rust release (std's symbols carry its version): a name the binary no longer has is
# passed over by the linker, and `make static` (benches/static-build.sh) counts those: it says how
# many, and fails once more than a quarter of the list is gone.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
target=${CARGO_TARGET_DIR:-target}
scenarios=${SCENARIOS:-no_match no_match_regex one_command one_argv five_command big_config}
command -v valgrind >/dev/null || { echo "hot-symbols: valgrind is needed" >&2; exit 1; }

if [ $# -ge 1 ]; then
    bin=$1
else
    host=$(rustc -vV | sed -n 's/^host: //p')
    var="CARGO_TARGET_$(printf '%s' "$host" | tr 'a-z-' 'A-Z_')_RUSTFLAGS"
    # The release profile as `make static` has it, so that every symbol has the name it has
    # there (the profile is part of what names them); its symbols are kept by a rustflag
    # instead, which is not.
    env "$var=$(bash benches/static-rustflags.sh) -C strip=none" \
        cargo build --release --target "$host" --target-dir "$target/profile-build" >&2
    bin=$target/profile-build/$host/release/levelcode-hooks
fi
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")

work=$(mktemp -d "${TMPDIR:-/tmp}/levelcode-hooks-symbols.XXXXXX")
trap 'rm -rf "$work"' EXIT
python3 benches/bench.py --setup-only --bin "$bin" --work "$work" --out "$work/out" >/dev/null

field() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]][sys.argv[3]])' "$work/scenarios.json" "$1" "$2"; }
for s in $scenarios; do
    home=$(field "$s" home) project=$(field "$s" project) payload=$(field "$s" payload)
    (cd "$project" && env -u LEVELCODE_DIR -u LEVELCODE_HOOKS -u LEVELCODE_HOOKS_NO_PROJECT \
        -u LEVELCODE_HOOKS_DEPTH -u LEVELCODE_TEAM -u NEXT_PUBLIC_CB_ENVIRONMENT HOME="$home" \
        valgrind --tool=callgrind --demangle=no --dump-instr=no \
        --callgrind-out-file="$work/$s.callgrind.out" "$bin" run <"$payload" >/dev/null 2>&1)
done
# The one-handler scenario once more, exported to a local receiver (benches/lean_receiver.py,
# with the OTLP decoder `make otlp-python` installs) in both protocols: what export runs goes
# after the rest, so that a dispatch that does not export touches the same pages as before.
python_path=$target/otlp-python
mkdir -p "$work/export"
if [ -d "$python_path/opentelemetry/proto" ]; then
    PYTHONPATH=$python_path python3 benches/lean_receiver.py --lifetime 300 >"$work/receiver.out" &
    receiver=$!
    trap 'kill "$receiver" 2>/dev/null || true; rm -rf "$work"' EXIT
    for _ in $(seq 100); do [ -s "$work/receiver.out" ] && break; sleep 0.1; done
    port=$(python3 -c 'import json,sys; print(json.loads(open(sys.argv[1]).readline())["port"])' "$work/receiver.out")
    home=$(field one_command home) project=$(field one_command project) payload=$(field one_command payload)
    for protocol in http/protobuf http/json; do
        (cd "$project" && env -u LEVELCODE_DIR -u LEVELCODE_HOOKS -u LEVELCODE_HOOKS_NO_PROJECT \
            -u LEVELCODE_HOOKS_DEPTH -u LEVELCODE_TEAM -u NEXT_PUBLIC_CB_ENVIRONMENT HOME="$home" \
            OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:$port" OTEL_EXPORTER_OTLP_PROTOCOL=$protocol \
            valgrind --tool=callgrind --demangle=no --dump-instr=no \
            --callgrind-out-file="$work/export/${protocol#http/}.callgrind.out" "$bin" run <"$payload" >/dev/null 2>&1)
    done
else
    echo "hot-symbols: no OTLP decoder (make otlp-python): the export's functions are not listed" >&2
fi
# The functions named in the profiles (callgrind gives each name once, with a number reused
# after), less those it knows only by address or by a name of its own (`(below main)`), and
# less the `'2` it marks a recursive call with; sorted, so that a new list shows as a diff.
names() {
    sed -n 's/^c\{0,1\}fn=([0-9]*) \(.*\)$/\1/p' "$@" \
        | sed "s/'[0-9]*$//" | grep -v -e '^0x' -e '^(' | LC_ALL=C sort -u
}
names "$work"/*.callgrind.out >"$work/run.txt"
: >"$work/export.txt"
if compgen -G "$work/export/*.callgrind.out" >/dev/null; then
    names "$work"/export/*.callgrind.out | LC_ALL=C comm -23 - "$work/run.txt" >"$work/export.txt"
fi
# The C library picks one version of memcpy, strlen and the like for the processor it starts on,
# and valgrind's is not the real one: beside each version it ran, the ones a processor with
# AVX-512 takes (`__memmove_avx_unaligned_erms` beside `__memmove_avx512_unaligned_erms` and
# `__memmove_evex_unaligned_erms`).
families=$(sed -n 's/^\(__[a-z0-9]*\)_\(sse2\|sse42\|ssse3\|avx\|avx2\|evex\|avx512\)\(_.*\)\{0,1\}$/\1_/p' "$work/run.txt" | sort -u)
for family in $families; do
    nm "$bin" | awk '{print $3}' | grep "^${family}\(evex\|avx512\)" | grep -v '_rtm$' || true
done >"$work/variants.txt"
{
    echo "# The functions a dispatch runs, for the static build's linker to lay out side by side"
    echo "# (benches/static-rustflags.sh). Written by benches/hot-symbols.sh; do not edit."
    LC_ALL=C sort -u "$work/run.txt" "$work/variants.txt"
    echo "# What export to a collector runs besides."
    cat "$work/export.txt"
} >benches/hot-symbols.txt
echo "hot-symbols: $(grep -vc '^#' benches/hot-symbols.txt) functions in benches/hot-symbols.txt" >&2
