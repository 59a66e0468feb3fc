# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The libpreempt authors
# docs/design.md shows the machine as a Mermaid diagram produced by fsmdump;
# this fails when its copy is stale (fix: make golden).
. "$top_srcdir/tests/lib.sh"
readme="$top_srcdir/docs/design.md"
sed -n '/<!-- fsmdump:mermaid:begin -->/,/<!-- fsmdump:mermaid:end -->/p' "$readme" |
    sed '1,2d;$d' | sed '$d' >"$TMP/readme.mmd"
"$FSMDUMP" --format mermaid >"$TMP/fsm.mmd" || fail "fsmdump"
if [ ! -s "$TMP/readme.mmd" ]; then
    fail "docs/design.md has no fsmdump Mermaid block"
elif diff -u "$TMP/readme.mmd" "$TMP/fsm.mmd"; then
    ok
else
    fail "docs/design.md's state diagram is stale: run 'make golden'"
fi
# The README's table of states says what fsm/preempt_states.def says.
"$FSMDUMP" --format table | sed -n '/^# states/,/^$/p' | sed '1d;/^$/d' >"$TMP/states"
while read -r name truth; do
    if grep -qF -- "| \`$name\` | $truth |" "$readme"; then
        ok
    else
        fail "docs/design.md's table of states lacks: | \`$name\` | $truth |"
    fi
done <"$TMP/states"
[ -s "$TMP/states" ] && ok || fail "fsmdump printed no states"
finish
