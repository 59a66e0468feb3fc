#!/bin/sh
# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The libpreempt authors
# tests/abi.sh: the public ABI cannot drift silently. The built library's
# ABI (libabigail's abidw over the public header) is compared with the
# baseline in the tree, abi/libpreempt.abi, by abidiff: a change to any
# existing public function, struct, enum value or the SONAME fails; new
# functions are fine, and so is a value appended to an enum (only its
# __COUNT sentinel moves: abi/suppressions.ini). An intended change is made by changing the SONAME
# when it is incompatible (lib_libpreempt_la_LDFLAGS' -version-info) and
# the baseline together (make abi-baseline; docs/guide/install.md, "ABI and versions").
# Then the check itself: a copy of the current ABI with one enum value, one
# struct member and the SONAME changed each fails it. And a program built
# against the previous minor version's header (tests/abi/0.1/, frozen)
# runs unchanged against this library.
. "${top_srcdir:-.}/tests/lib.sh"
command -v abidw >/dev/null && command -v abidiff >/dev/null ||
    { fail "abidw/abidiff are missing (Debian: apt-get install abigail-tools; scripts/setup.sh does)"; finish; }
base="$top_srcdir/abi/libpreempt.abi"
so="$top_builddir/lib/.libs/libpreempt.so"
# the flags of make abi-baseline (Makefile.am), which make check passes
[ -n "${ABIDW_FLAGS:-}" ] || { fail "ABIDW_FLAGS is not set: run this test through make check"; finish; }

# compatible OLD NEW: OLD's interface is all in NEW, unchanged, under one SONAME.
compatible() {
    _s1=$(sed -n "1s/.* soname='\\([^']*\\)'.*/\\1/p" "$1")
    _s2=$(sed -n "1s/.* soname='\\([^']*\\)'.*/\\1/p" "$2")
    if [ "$_s1" != "$_s2" ]; then
        echo "the SONAME is $_s2, the baseline's $_s1: regenerate the baseline with it (make abi-baseline)"
        return 1
    fi
    abidiff --no-added-syms --suppressions "$top_srcdir/abi/suppressions.ini" "$1" "$2" >"$TMP/abidiff" 2>&1 &&
        return 0
    cat "$TMP/abidiff"
    return 1
}

# shellcheck disable=SC2086 # the flags are split on purpose
abidw $ABIDW_FLAGS --out-file "$TMP/current.abi" "$so" || { fail "abidw $so"; finish; }
if compatible "$base" "$TMP/current.abi" >"$TMP/why"; then
    ok
else
    fail "the library's ABI differs from abi/libpreempt.abi (an incompatible change needs a new SONAME and baseline; see docs/guide/install.md, \"ABI and versions\"):"
    sed 's/^/    /' "$TMP/why"
fi

# the check fails where it should: an enum value, a struct member's place,
# the SONAME, each changed in a copy of the current ABI
breaks() { # WHAT SED-SCRIPT
    sed "$2" "$TMP/current.abi" >"$TMP/changed.abi"
    if cmp -s "$TMP/current.abi" "$TMP/changed.abi"; then
        fail "$1: the edit changed nothing (the test cannot see)"
    elif compatible "$TMP/current.abi" "$TMP/changed.abi" >/dev/null; then
        fail "$1 passes the check"
    else
        ok
    fi
}
breaks "PREEMPT_ACTION_WAIT 3 -> 7" \
    "s/enumerator name='PREEMPT_ACTION_WAIT' value='3'/enumerator name='PREEMPT_ACTION_WAIT' value='7'/"
breaks "PREEMPT_STATE_EXIT 7 -> 9 (the suppression of appended values hides no other change)" \
    "s/enumerator name='PREEMPT_STATE_EXIT' value='7'/enumerator name='PREEMPT_STATE_EXIT' value='9'/"
breaks "preempt_status.run moved" \
    "/class-decl name='preempt_status'/,/<\\/class-decl>/s/layout-offset-in-bits='64'/layout-offset-in-bits='96'/"
breaks "another SONAME" "1s/soname='libpreempt.so.0'/soname='libpreempt.so.1'/"

# A program of the previous minor version, built and linked as it was:
# against its header (tests/abi/0.1/, frozen) and a library with 0.1's
# symbols, each of version LIBPREEMPT_0 (a stub made from that header: the
# link records each symbol's version, as linking against 0.1 did), then run
# against this library. Its calls bind to the 0.1 forms (lib/api/compat.c),
# never to 1.0's symbols of the same names.
mkdir -p "$TMP/stub"
sed -n 's/^PREEMPT_EXPORT [^(]*[ *]\(preempt_[a-z_]*\)(.*/void \1(void) {}/p' \
    "$top_srcdir/tests/abi/0.1/libpreempt/preempt.h" >"$TMP/stub/stub.c"
printf 'LIBPREEMPT_0 { global: *; };\n' >"$TMP/stub/stub.map"
# shellcheck disable=SC2086 # flags are split on purpose
if ${CC:-cc} -shared -fPIC -o "$TMP/stub/libpreempt.so" -Wl,-soname,libpreempt.so.0 \
    -Wl,--version-script="$TMP/stub/stub.map" "$TMP/stub/stub.c" 2>"$TMP/cc" &&
    ${CC:-cc} -std=gnu11 -Wall -Wextra -Werror ${SAN_CFLAGS:-} -I"$top_srcdir/tests/abi/0.1" \
        -o "$TMP/old-client" "$top_srcdir/tests/abi/old-client.c" -L"$TMP/stub" -lpreempt 2>>"$TMP/cc"; then
    ok
    readelf --dyn-syms -W "$TMP/old-client" | awk '$7 == "UND" && $8 ~ /^preempt_/ { print $8 }' >"$TMP/old-syms"
    expect "the 0.1 program's calls are bound to version LIBPREEMPT_0" \
        test -s "$TMP/old-syms" -a -z "$(grep -v '@LIBPREEMPT_0' "$TMP/old-syms")"
    expect "the 0.1 program calls preempt_step_end@LIBPREEMPT_0 (a symbol 1.0 changed)" \
        grep -q '^preempt_step_end@LIBPREEMPT_0' "$TMP/old-syms"
    LD_LIBRARY_PATH="$top_builddir/lib/.libs" "$TMP/old-client" "$TMP/ckpt" >"$TMP/out" 2>&1
    eq "the 0.1 program runs against this library" "$?" 0
    eq "the 0.1 program: a notice, one save, exit 42; the restart restores it" "$(cat "$TMP/out")" \
        "action=4 state=exit run=6 saves=1 code=42
action=0 state=idle run=16 saves=0 code=-1
restored=6
fd=yes base=yes pending=0 error=none
run=1 exit_code=42 saved_by_run=1
countdown=5 aws=4 mars=-22 watcher=0 exited=-11"
else
    fail "the 0.1 program does not build against its header: $(cat "$TMP/cc")"
fi
# The same program's source against this header (source compatibility for
# 1.x): it compiles with warnings as errors except the deprecations, one at
# each of its 16 calls of a 0.1 name, each naming the 1.x call; it runs
# as the 0.1 build does, now bound to this version's symbols. With
# PREEMPT_NO_DEPRECATED the 0.1 names are gone.
rm -rf "$TMP/ckpt"
# shellcheck disable=SC2086 # flags are split on purpose
if LC_ALL=C ${CC:-cc} -std=gnu11 -Wall -Wextra -Werror -Wno-error=deprecated-declarations ${SAN_CFLAGS:-} \
    -I"$top_srcdir/include" -o "$TMP/src-client" "$top_srcdir/tests/abi/old-client.c" \
    -L"$top_builddir/lib/.libs" -lpreempt 2>"$TMP/cc-src"; then
    ok
    eq "the 0.1 source: a deprecation warning at each 0.1 call" \
        "$(grep -c "warning: .* is deprecated: 0.1's form; use preempt_[a-z_]*(" "$TMP/cc-src")" 16
    eq "the 0.1 source: no other warning" "$(grep 'warning:' "$TMP/cc-src" | grep -vc 'is deprecated')" 0
    expect "the 0.1 source: the warning names the 1.x call" \
        grep -q "'preempt_step_end_0_' is deprecated: 0.1's form; use preempt_step_end(h, &action)" "$TMP/cc-src"
    LD_LIBRARY_PATH="$top_builddir/lib/.libs" "$TMP/src-client" "$TMP/ckpt" >"$TMP/out-src" 2>&1
    eq "the 0.1 source runs against this library" "$?" 0
    eq "the 0.1 source: as the 0.1 build" "$(cat "$TMP/out-src")" "$(cat "$TMP/out")"
else
    fail "the 0.1 program's source does not build against this header: $(cat "$TMP/cc-src")"
fi
# shellcheck disable=SC2086 # flags are split on purpose
expect "PREEMPT_NO_DEPRECATED hides the 0.1 names" sh -c "! ${CC:-cc} -std=gnu11 -DPREEMPT_NO_DEPRECATED \
    -I'$top_srcdir/include' -fsyntax-only '$top_srcdir/tests/abi/old-client.c' 2>/dev/null"
finish
