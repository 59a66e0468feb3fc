#!/bin/sh
# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The libpreempt authors
# tests/docs-site.sh: make docs builds the HTML site (the README as its home
# page, the guide, the design documents, the CHANGELOG, the API's man pages)
# with mkdocs --strict, so a warning or a link to a page that is not there
# fails it; here on the tree as it is, then on a copy with one broken link.
. "$top_srcdir/tests/lib.sh"
SITE="$top_srcdir/scripts/docs-site.sh"
MAN="$top_builddir/man/api"

expect_rc 0 sh "$SITE" "$top_srcdir" "$MAN" "$TMP/built"
for p in index.html guide/c-api/index.html guide/two-phase/index.html guide/python/index.html \
    guide/jobs/index.html guide/operating/index.html guide/limits/index.html api/index.html \
    api/preempt_step_end.3/index.html api/libpreempt.7/index.html protocol/index.html CHANGELOG/index.html; do
    expect "the site has $p" test -s "$TMP/built/site/$p"
done
expect "the API reference lists preempt_step_end(3)" grep -q 'preempt_step_end.3' "$TMP/built/site/api/index.html"
expect "preempt_step_end(3) has its example" grep -q 'preempt_save_snapshot' "$TMP/built/site/api/preempt_step_end.3/index.html"
expect "the home page links the guide" grep -q 'guide/c-api/' "$TMP/built/site/index.html"

# a guide page that links a page which is not there: the build fails
mkdir -p "$TMP/src" && cp -R "$top_srcdir/README.md" "$top_srcdir/CHANGELOG.md" "$top_srcdir/LICENSE" \
    "$top_srcdir/mkdocs.yml" "$top_srcdir/docs" "$TMP/src/"
chmod -R u+w "$TMP/src"
echo "See [the missing page](missing.md)." >>"$TMP/src/docs/guide/tools.md"
expect_rc 1 sh "$SITE" "$TMP/src" "$MAN" "$TMP/broken"
expect_output "missing.md"
finish
