# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The libpreempt authors
# Every scenario in tests/traces/ replays through the pure core (exit 0),
# also after a round trip through the binary form and through the printed
# text form; a deliberately altered copy of each is rejected (exit 1) with
# the record number, the expected and the actual outcome.
. "$top_srcdir/tests/lib.sh"
n=0
for f in "$top_srcdir"/tests/traces/*.trace; do
    name=$(basename "$f")
    n=$((n + 1))
    expect_rc 0 "$REPLAY" -q "$f" || continue
    # binary: what the machine did, recorded, replays
    expect_rc 0 "$REPLAY" -q --record "$TMP/$name.bin" "$f" &&
        expect_rc 0 "$REPLAY" -q "$TMP/$name.bin"
    # text: the printed log of a run is itself a scenario
    "$REPLAY" -q --print "$TMP/$name.bin" >"$TMP/$name.txt" 2>&1 &&
        expect_rc 0 "$REPLAY" -q "$TMP/$name.txt"
    # altered: the last record claims another state before it
    awk '
        /=>/ && !/^[ \t]*#/ { last = NR }
        { line[NR] = $0 }
        END {
            for (i = 1; i <= NR; i++) {
                if (i == last) {
                    split(line[i], parts, "=> ")
                    split(parts[2], w, " ")
                    alt = (w[1] == "countdown") ? "idle" : "countdown"
                    sub("=> " w[1], "=> " alt, line[i])
                }
                print line[i]
            }
        }' "$f" >"$TMP/$name.altered"
    if expect_rc 1 "$REPLAY" "$TMP/$name.altered"; then
        expect_output "diverges"
        expect_output "expected: "
        expect_output "actual:   "
    fi
done
echo "$n scenario files"
[ "$n" -ge 12 ] && ok || fail "only $n scenario files (at least 12 wanted)"
finish
