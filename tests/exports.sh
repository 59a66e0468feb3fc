# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The libpreempt authors
# libpreempt.so exports exactly the functions the public header marks
# PREEMPT_EXPORT: all preempt_*, none of nanopb's pb_* or the internal
# preempt_*_ helpers, each under the version node LIBPREEMPT_0.
. "$top_srcdir/tests/lib.sh"
NM=${NM:-nm}
so="$top_builddir/lib/.libs/libpreempt.so"
[ -f "$so" ] || { fail "$so not built"; finish; }
$NM -D --defined-only "$so" >"$TMP/nm" || fail "$NM -D $so" # $NM may carry options
awk '$2 ~ /^[TDBR]$/ { print $3 }' "$TMP/nm" | sort >"$TMP/versioned"
# every one under the version node of lib/libpreempt.map
expect "every exported symbol has the version LIBPREEMPT_0" test -z "$(grep -v '@@LIBPREEMPT_0$' "$TMP/versioned")"
sed 's/@.*//' "$TMP/versioned" >"$TMP/exported"
sed -n 's/^PREEMPT_EXPORT [^(]*[ *]\(preempt_[a-z_]*\)(.*/\1/p' "$top_srcdir/include/libpreempt/preempt.h" | sort >"$TMP/declared"
echo "exported: $(tr '\n' ' ' <"$TMP/exported")"
if [ ! -s "$TMP/declared" ]; then
    fail "no PREEMPT_EXPORT declaration found in preempt.h"
elif diff -u "$TMP/declared" "$TMP/exported"; then
    ok
else
    fail "exported symbols differ from the header's PREEMPT_EXPORT functions"
fi
# Every field of the public structures is described by preempt_abi_layout().
for st in preempt_config preempt_status preempt_callbacks preempt_notice_info; do
    fields=$(struct_fields "$st")
    expect "struct $st has fields" test -n "$fields"
    for f in $fields; do
        expect "lib/abi.c describes $st.$f" grep -q "X($f)" "$top_srcdir/lib/abi.c"
    done
done
finish
