# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The libpreempt authors
# The user's documents stand on their own and stay true to the code: the
# README, the installed header, docs/, the CHANGELOG and the man pages refer
# to nothing outside the repository, their relative links resolve, and the
# README names every configuration field and every tool, and every tool has
# a man page (made from its --help by help2man).
. "$top_srcdir/tests/lib.sh"
S=$top_srcdir
docs="$S/README.md $S/CHANGELOG.md $S/include/libpreempt/preempt.h $S/docs/*.md $S/docs/guide/*.md $S/contrib/*/README.md $top_builddir/man/*.1"

# Nothing outside the repository: the design material it grew from is not
# the user's. (Patterns built from pieces, so this file does not match.)
shared="../sha""red"
for f in $docs; do
    n=$(grep -nE "$shared|sha""red folder|DESIGN(\.md| §)" "$f")
    eq "no reference outside the repository in ${f##*/}" "$n" ""
done

# Relative Markdown links resolve.
for f in "$S"/README.md "$S"/CHANGELOG.md "$S"/docs/*.md "$S"/docs/guide/*.md "$S"/contrib/*/README.md; do
    dir=$(dirname "$f")
    for link in $(grep -oE '\]\([^)#:]+(#[^)]*)?\)' "$f" | sed 's/^](//; s/)$//; s/#.*//'); do
        expect "${f#"$S"/}: link $link resolves" test -e "$dir/$link"
    done
done

# A newcomer reads the README in minutes; the guide has the rest.
expect "the README is at most 300 lines ($(wc -l <"$S/README.md"))" test "$(wc -l <"$S/README.md")" -le 300
for g in c-api two-phase python jobs operating tools troubleshooting limits install; do
    expect "the README links the guide's $g.md" grep -qF "(docs/guide/$g.md)" "$S/README.md"
done

# Every field of struct preempt_config is in the guide (the C API's
# configuration table; a job's fields: several workers).
fields=$(struct_fields preempt_config)
expect "the header's config has fields" test -n "$fields"
for field in $fields; do
    expect "the guide documents config field $field" sh -c "cat '$S'/docs/guide/*.md | grep -qF '\`$field\`'"
done

# Every installed tool is in the README and has a man page.
for t in fsmdump preempt-replay preempt-trainer preempt-launch preemptctl preempt-ckpt preempt-exec; do
    expect "the README names $t" grep -qF "$t" "$S/README.md"
    expect "$t has a man page" grep -q "^\.TH \"\{0,1\}$(echo "$t" | tr a-z A-Z)" "$top_builddir/man/$t.1"
done

# docs/protocol.md's key tables are the code's one definition of the layout
# (lib/keys-internal.h), as preemptctl keys prints it.
_doc=$(sed -n '/^<!-- generated: preemptctl keys -->$/,/^<!-- end of preemptctl keys -->$/p' "$S/docs/protocol.md" | sed '1d;$d')
expect "docs/protocol.md has the generated key tables" test -n "$_doc"
eq "docs/protocol.md's key tables are 'preemptctl keys' (regenerate them)" "$_doc" "$("$top_builddir/tools/preemptctl" keys)"
finish
