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

# Anchors resolve too: a link to FILE#frag (or #frag) names a heading of
# FILE by its GitHub slug (the guide's pages were the README's sections,
# and an in-page link to a section that moved is broken).
expect "every link's anchor names a heading" python3 - "$S" <<'PY'
import os, re, sys
root = sys.argv[1]
def slugs(path):
    out, code = set(), False
    for line in open(path):
        if line.startswith("```"):
            code = not code
        m = None if code else re.match(r"^#+ (.*)", line)
        if m:
            t = re.sub(r"[^\w\- ]", "", m.group(1).strip().lower()).replace(" ", "-")
            out.add(t)
    return out
bad = []
files = [os.path.join(root, "README.md"), os.path.join(root, "CHANGELOG.md")]
for d in ("docs", "docs/guide"):
    files += [os.path.join(root, d, f) for f in sorted(os.listdir(os.path.join(root, d))) if f.endswith(".md")]
for f in files:
    for target, frag in re.findall(r"\]\(([^)#:\s]*)#([^)\s]+)\)", open(f).read()):
        t = os.path.normpath(os.path.join(os.path.dirname(f), target)) if target else f
        if t.endswith(".md") and os.path.exists(t) and frag not in slugs(t):
            bad.append("%s: #%s not in %s" % (os.path.relpath(f, root), frag, os.path.relpath(t, root)))
print("\n".join(bad))
sys.exit(1 if bad else 0)
PY

# A newcomer reads the README in minutes; the guide has the rest.
expect "the README is at most 300 lines ($(wc -l <"$S/README.md"))" test "$(wc -l <"$S/README.md")" -le 300
for g in getting-started c-api two-phase python jobs operating tools troubleshooting limits install; do
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
# (lib/records/keys-internal.h), as preemptctl keys prints it.
_doc=$(sed -n '/^<!-- generated: preemptctl keys -->$/,/^<!-- end of preemptctl keys -->$/p' "$S/docs/protocol.md" | sed '1d;$d')
expect "docs/protocol.md has the generated key tables" test -n "$_doc"
eq "docs/protocol.md's key tables are 'preemptctl keys' (regenerate them)" "$_doc" "$("$top_builddir/tools/preemptctl" keys)"
finish
