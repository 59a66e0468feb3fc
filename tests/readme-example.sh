# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The libpreempt authors
# The README's example trainer compiles against the built library with
# warnings as errors, and does what the README says: SIGTERM -> exit 42 with
# a checkpoint; the restart restores it and finishes with exit 0.
. "$top_srcdir/tests/lib.sh"
CC=${CC:-cc}
mkdir -p "$TMP/inc/libpreempt"
for f in include/preempt.h fsm/preempt_states.def fsm/preempt_exits.def; do
    ln -s "$(cd "$top_srcdir" && pwd)/$f" "$TMP/inc/libpreempt/"
done
sed -n '/<!-- example:sync -->/,/^```$/p' "$top_srcdir/README.md" | sed '1,2d;$d' >"$TMP/example.c"
expect "the README has the example" test "$(wc -l <"$TMP/example.c")" -gt 40
# SAN_CFLAGS: a sanitized build's flags (the program must link the same runtime).
# shellcheck disable=SC2086 # the flags are split on purpose
expect_rc 0 $LIBTOOL --mode=link $CC -std=gnu11 -Wall -Wextra -Werror ${SAN_CFLAGS:-} -I"$TMP/inc" -o "$TMP/example" \
    "$TMP/example.c" "$top_builddir/lib/libpreempt.la"
cd "$TMP" || exit 1
./example &
pid=$!
sleep 0.5
kill -TERM "$pid"
wait "$pid"
eq "example: preempted" "$?" 42
n=$(ls ckpt | grep -c '^ckpt-')
eq "example: one checkpoint" "$n" 1
expect_rc 0 ./example
eq "example: nothing more saved after the restart" "$(ls ckpt | grep -c '^ckpt-')" 1
finish
