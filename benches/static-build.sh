#!/usr/bin/env bash
# `make static`: the release build with the flags of benches/static-rustflags.sh, for the host
# triple given as $1, and a check that benches/hot-symbols.txt still names the functions of this
# build. The linker says each name of the list that the binary does not have; those lines are
# counted here, not shown, and one line says how many there were. A list of which more than a
# quarter is gone has decayed too far to lay anything out (a new Rust release renames std's
# symbols, a refactor renames ours): the build fails, saying to regenerate it with
# benches/hot-symbols.sh. A fresh build that links nothing says nothing.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
host=$1
var="CARGO_TARGET_$(printf '%s' "$host" | tr 'a-z-' 'A-Z_')_RUSTFLAGS"
flags="$(bash benches/static-rustflags.sh)"
listed=$(grep -cv '^#' benches/hot-symbols.txt 2>/dev/null || true)

log=$(mktemp "${TMPDIR:-/tmp}/levelcode-hooks-static.XXXXXX")
trap 'rm -f "$log"' EXIT
status=0
env "$var=$flags" "${CARGO:-cargo}" build --release --target "$host" 2>"$log" || status=$?
# Everything but the linker's lines about the list, and the warning that carried them.
missing=$(grep -c 'symbol ordering file: no such symbol' "$log" || true)
python3 - "$log" <<'PY' >&2
import re, sys
text = open(sys.argv[1], encoding="utf-8", errors="replace").read()
# A linker-messages warning is one block: its first line, its indented lines, its note.
blocks = re.split(r"\n(?=\S)", text)
kept = [b for b in blocks if "symbol ordering file" not in b]
# The count of warnings the linker's lines made, which are summed up below instead.
out = re.sub(r"(?m)^warning: `levelcode-hooks` \(bin \"levelcode-hooks\"\) generated \d+ warnings?\n", "",
             "\n".join(kept)).rstrip("\n")
if out:
    print(out)
PY
[ "$status" -eq 0 ] || exit "$status"
if [ "$missing" -gt 0 ]; then
    echo "static: $missing of the $listed functions in benches/hot-symbols.txt are not in this build; regenerate it with bash benches/hot-symbols.sh" >&2
    if [ "$listed" -gt 0 ] && [ $((missing * 4)) -gt "$listed" ]; then
        echo "static: more than a quarter of the list is gone, so the layout it gives is lost; failing" >&2
        exit 1
    fi
fi
