# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The libpreempt authors
# Bad input to preempt-replay and fsmdump --trace: a clear message naming
# the problem, exit status 2, never a crash.
. "$top_srcdir/tests/lib.sh"
bad="$top_srcdir/tests/bad"

check_bad() { # FILE MESSAGE
    for tool in "$REPLAY" "$FSMDUMP --trace"; do
        expect_rc 2 $tool "$1" && expect_output "$2"
    done
}

check_bad "$bad/unknown-event.trace" "line 2: unknown event 'sigterm'"
check_bad "$bad/unknown-state.trace" "line 1: unknown state 'own-signel'"
check_bad "$bad/malformed-field.trace" "line 1: deadline needs a non-negative integer, not 'soon'"
check_bad "$bad/truncated-line.trace" "line 2: missing '-> STATE', '(ignored)' or '(illegal)' after the state"
check_bad "$bad/empty.trace" "empty trace: no record"
check_bad "$bad/no-records.trace" "empty trace: no record"
check_bad "$bad/bad-config.trace" "line 1: unknown plan 'guess' (measured or tf)"
check_bad "$TMP/does-not-exist" "No such file or directory"

# Binary: a recorded trace cut short at every byte is rejected or, on an
# entry boundary, read as a shorter trace; never a crash.
"$REPLAY" -q --record "$TMP/rec.bin" "$top_srcdir/tests/traces/002-local-grace-two-saves.trace" || fail "record"
size=$(wc -c <"$TMP/rec.bin")
cut=9
truncated=0
while [ "$cut" -lt "$size" ]; do
    head -c "$cut" "$TMP/rec.bin" >"$TMP/cut.bin"
    "$REPLAY" -q "$TMP/cut.bin" >"$TMP/out" 2>&1
    rc=$?
    if [ "$rc" -ne 0 ] && [ "$rc" -ne 2 ]; then
        fail "cut at $cut bytes: exit $rc"
    elif [ "$rc" -eq 2 ]; then
        truncated=$((truncated + 1))
        grep -q "truncated or malformed\|empty trace" "$TMP/out" || fail "cut at $cut: $(cat "$TMP/out")"
    fi
    cut=$((cut + 1))
done
echo "binary trace of $size bytes: $truncated cuts reported as truncated"
[ "$truncated" -gt 0 ] && ok || fail "no cut was reported"

# Binary garbage given as a text trace (a NUL byte; an executable's bytes;
# UTF-8 or control bytes): described by its position and value, never
# echoed, so the terminal gets only printable text.
printf 't=0 ev=timer gen=0 \000=> idle (ignored)\n' >"$TMP/nul.trace"
printf 'garbage\033[2J\001\377 => idle\n' >"$TMP/ctl.trace"
head -c 4096 "$REPLAY" | tr -d '\000' >"$TMP/exe.trace"
for f in nul ctl exe; do
    check_bad "$TMP/$f.trace" "binary data, not a text trace"
    expect "the message about $f.trace is printable text" sh -c "! LC_ALL=C grep -q '[^[:print:]]' '$TMP/out'"
done
expect_rc 2 "$REPLAY" "$TMP/ctl.trace" && expect_output "ctl.trace: line 1: byte 8 is 0x1b"

# Bad usage.
expect_rc 2 "$REPLAY" && expect_output "expected one trace file"
expect_rc 2 "$REPLAY" --bogus "$bad/empty.trace"
expect_rc 2 "$FSMDUMP" --format svg && expect_output "unknown format 'svg'"
finish
