# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The libpreempt authors
# libpreempt.so exports exactly the functions the public header marks
# PREEMPT_EXPORT (all preempt_*, none of nanopb's pb_* or the internal
# preempt_*_ helpers) as their default versions, under LIBPREEMPT_0 (0.1's)
# LIBPREEMPT_1.0 or LIBPREEMPT_1.1 (lib/api/libpreempt.map), plus 0.1's interface for programs
# built against it: every function of 0.1's header (tests/abi/0.1/) is
# there as version LIBPREEMPT_0, and nothing else is. The header's
# generated enums are the ones their tables make (scripts/public-enums.sh).
. "$top_srcdir/tests/lib.sh"
NM=${NM:-nm}
so="$top_builddir/lib/.libs/libpreempt.so"
[ -f "$so" ] || { fail "$so not built"; finish; }
$NM -D --defined-only "$so" >"$TMP/nm" || fail "$NM -D $so" # $NM may carry options
awk '$2 ~ /^[TDBR]$/ { print $3 }' "$TMP/nm" | sort >"$TMP/versioned"
# the default versions: the header's functions, under a node of lib/api/libpreempt.map
grep '@@' "$TMP/versioned" >"$TMP/default"
expect "every default symbol is of LIBPREEMPT_0, LIBPREEMPT_1.0 or LIBPREEMPT_1.1" \
    test -z "$(grep -v -e '@@LIBPREEMPT_0$' -e '@@LIBPREEMPT_1\.[01]$' "$TMP/default")"
sed 's/@.*//' "$TMP/default" >"$TMP/exported"
decl() { sed -n 's/^PREEMPT_EXPORT [^(]*[ *]\(preempt_[a-z_]*\)(.*/\1/p' "$1" | sort; }
decl "$top_srcdir/include/libpreempt/preempt.h" >"$TMP/declared"
echo "exported: $(tr '\n' ' ' <"$TMP/exported")"
# every function of the header is a default symbol, and every symbol 1.0
# added or changed is in the header
sed -n 's/@@LIBPREEMPT_1\.[01]$//p' "$TMP/default" | sort >"$TMP/new"
if [ ! -s "$TMP/declared" ]; then
    fail "no PREEMPT_EXPORT declaration found in preempt.h"
elif [ -z "$(comm -23 "$TMP/declared" "$TMP/exported")" ] && [ -z "$(comm -13 "$TMP/declared" "$TMP/new")" ]; then
    ok
else
    fail "the header's PREEMPT_EXPORT functions and the library's symbols differ: declared, not exported:" \
        $(comm -23 "$TMP/declared" "$TMP/exported") "; of LIBPREEMPT_1.0 or 1.1, not declared:" $(comm -13 "$TMP/declared" "$TMP/new")
fi
# 0.1's interface: each of its functions as version LIBPREEMPT_0 (the
# default when 1.0 kept it, else an older version beside 1.0's)
decl "$top_srcdir/tests/abi/0.1/libpreempt/preempt.h" >"$TMP/declared-0.1"
sed -n 's/@@\{0,1\}LIBPREEMPT_0$//p' "$TMP/versioned" | sort >"$TMP/exported-0.1"
expect "0.1's header has functions" test -s "$TMP/declared-0.1"
if diff -u "$TMP/declared-0.1" "$TMP/exported-0.1"; then
    ok
else
    fail "the symbols of version LIBPREEMPT_0 differ from 0.1's header's functions"
fi
# and nothing else: every exported symbol is 1.0's or 0.1's
sed 's/@.*//' "$TMP/versioned" | sort -u >"$TMP/all"
sort -u "$TMP/declared" "$TMP/declared-0.1" >"$TMP/both"
expect "no symbol is exported that neither header declares" cmp -s "$TMP/all" "$TMP/both"
# the generated enums: explicit values, made from the tables
if "$top_srcdir/scripts/public-enums.sh" "$top_srcdir" | diff -u "$top_srcdir/include/libpreempt/preempt.h" - >"$TMP/enums"; then
    ok
else
    fail "preempt.h's generated enums differ from fsm/*.def's (make public-enums after a reviewed change):"
    cat "$TMP/enums"
fi
expect "the installed header includes no internal table" test -z "$(grep '#include "' "$top_srcdir/include/libpreempt/preempt.h")"
# Every field of the public structures is described by preempt_abi_layout().
for st in preempt_config preempt_status preempt_callbacks preempt_notice_info preempt_watcher_callbacks; do
    fields=$(struct_fields "$st")
    expect "struct $st has fields" test -n "$fields"
    for f in $fields; do
        expect "lib/api/abi.c describes $st.$f" grep -q "X($f)" "$top_srcdir/lib/api/abi.c"
    done
done
finish
