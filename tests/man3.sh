#!/bin/sh
# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The libpreempt authors
# tests/man3.sh: the API reference cannot drift from the header. Its pages
# are made from include/libpreempt/preempt.h by scripts/man3.py (make,
# installed by make install and libpreempt-dev). Checked here: every
# function the library exports has a page; every page renders without a
# warning; every example compiles and links against the library with
# -Wall -Wextra -Werror; and the generator refuses a header where a
# function lost its comment (so its page), a comment that names a
# parameter its function lacks, and a page without an example.
. "$top_srcdir/tests/lib.sh"
GEN="$top_srcdir/scripts/man3.py"
HDR="$top_srcdir/include/libpreempt/preempt.h"
EX="$top_srcdir/tests/man-examples.c"

expect_rc 0 python3 "$GEN" "$HDR" "$EX" "$TMP/api"
# every exported function, by the dynamic symbol table (0.1's retired
# names included: their pages say what replaces them)
syms=$(${NM:-nm} -D --defined-only "$top_builddir/lib/.libs/libpreempt.so" | awk '$2 == "T" { sub(/@.*/, "", $3); print $3 }' | sort -u)
n=0
for s in $syms; do
    n=$((n + 1))
    expect "exported $s has a page" test -s "$TMP/api/$s.3"
done
expect "the library exports functions ($n)" test "$n" -ge 50
expect "the overview" test -s "$TMP/api/libpreempt.7"
for s in preempt_config preempt_callbacks preempt_status preempt_state preempt_action preempt_exit preempt_notice_info \
    preempt_watcher_callbacks; do
    expect "type $s has a page" test -s "$TMP/api/$s.3"
done
# every page renders without a warning; a .so page names an existing page
bad=
for f in "$TMP"/api/*.3 "$TMP"/api/libpreempt.7; do
    if head -n 1 "$f" | grep -q '^\.so '; then
        t=$(sed -n 's|^\.so man3/||p' "$f")
        [ -s "$TMP/api/$t" ] || bad="$bad ${f##*/}(.so $t)"
        continue
    fi
    w=$(groff -man -ww -z -Tutf8 "$f" 2>&1)
    [ -z "$w" ] || bad="$bad ${f##*/}($w)"
done
eq "every page renders without a warning" "${bad:-none}" none
expect "a page has its sections" sh -c "grep -q '^\.SH RETURN VALUE' '$TMP/api/preempt_step_end.3' &&
    grep -q '^\.SH EXAMPLE' '$TMP/api/preempt_step_end.3' && grep -q 'preempt_save_snapshot' '$TMP/api/preempt_step_end.3'"
expect "a retired name's page names its replacement" grep -q 'preempt_handler_get_status(h, &status)' \
    "$TMP/api/preempt_get_status.3"
# the examples compile, and link against the library: nothing undefined
# shellcheck disable=SC2086 # flags, split
expect "the examples compile and link (-Wall -Wextra -Werror)" ${CC:-cc} -std=gnu11 -Wall -Wextra -Werror \
    -I"$top_srcdir/include" -shared -fPIC -Wl,--no-undefined -o "$TMP/examples.so" "$EX" \
    -L"$top_builddir/lib/.libs" -lpreempt -levent

# The generator refuses drift. A function that lost its comment:
sed '/^\/\*\* Counts one completed step/,/^PREEMPT_EXPORT int preempt_step_end/{/^PREEMPT_EXPORT/!d}' "$HDR" >"$TMP/lost.h"
expect "the doctored header lost the comment" sh -c "! grep -q 'Counts one completed step' '$TMP/lost.h'"
expect_rc 1 python3 "$GEN" "$TMP/lost.h" "$EX" "$TMP/lost"
expect_output "preempt_step_end: exported, but no documented declaration"
# a comment that names a parameter its function lacks:
sed 's/^\/\*\* Frees a watcher\. NULL-safe\./\/** Frees a watcher and @p what. NULL-safe./' "$HDR" >"$TMP/param.h"
expect_rc 1 python3 "$GEN" "$TMP/param.h" "$EX" "$TMP/param"
expect_output "preempt_watcher_free: the comment names @p what, which is not a parameter (w)"
# a page without an example:
sed 's|^/\* man: preempt_save_blob_open \*/|/* (no page) */|' "$EX" >"$TMP/ex.c"
expect_rc 1 python3 "$GEN" "$HDR" "$TMP/ex.c" "$TMP/noex"
expect_output "preempt_save_blob_open: no example"
finish
