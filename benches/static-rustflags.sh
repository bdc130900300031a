#!/usr/bin/env bash
# The rustflags of the static build (`make static`, and what `make bench` and
# benches/profile.sh measure), for this host, on one line:
#
#   -C target-feature=+crt-static -C relocation-model=static   statically linked, not
#       position-independent: no dynamic loader and no relocations at start;
#   -C link-arg=-Wl,--symbol-ordering-file=benches/hot-symbols.txt   the functions a dispatch
#       runs laid out side by side, so a start touches fewer pages of code (docs/BENCHMARKS.md,
#       "Page faults"); only where the linker takes the option (rustc's own LLD, which it uses
#       on x86_64 Linux from Rust 1.90, or mold), which one trial link finds out;
#   -W linker-messages   the linker's word shown, so that a name of the list that the binary
#       no longer has is said (benches/static-build.sh counts those and fails on a stale list).
#
# Paths are relative to the repository, where cargo runs rustc and so the linker.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

flags="-C target-feature=+crt-static -C relocation-model=static"
order="-C link-arg=-Wl,--symbol-ordering-file=benches/hot-symbols.txt -W linker-messages"
trial=$(mktemp -d "${TMPDIR:-/tmp}/levelcode-hooks-link.XXXXXX")
trap 'rm -rf "$trial"' EXIT
echo 'fn main() {}' >"$trial/main.rs"
# shellcheck disable=SC2086 # the flags are words
if [ -f benches/hot-symbols.txt ] \
    && rustc $order -o "$trial/main" "$trial/main.rs" >/dev/null 2>&1; then
    flags="$flags $order"
fi
echo "$flags"
