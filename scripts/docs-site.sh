#!/bin/sh
# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The libpreempt authors
# scripts/docs-site.sh SRCDIR MANDIR OUTDIR: make docs. Builds the HTML
# site in OUTDIR/site from the README (the home page), the guide
# (docs/guide/), the design documents (docs/*.md), the CHANGELOG and the
# API's man pages (MANDIR: the build's man/api, made by make from the
# header; mandoc turns each into HTML). mkdocs runs with --strict: a warning, such as a link to a page
# that is not there, fails the build. Debian: apt-get install mkdocs mandoc.
set -eu
src=$1 man=$2 build=$3
for t in mkdocs mandoc; do
    command -v "$t" >/dev/null || { echo "docs-site: $t is not installed (Debian: apt-get install mkdocs mandoc; scripts/setup.sh does)" >&2; exit 1; }
done
[ -f "$man/libpreempt.7" ] || { echo "docs-site: $man has no man pages: run make first" >&2; exit 1; }
work=$build/site-src
rm -rf "$work" "$build/site"
mkdir -p "$work/api"
cp -R "$src/docs/." "$work/"
# the README is the home page: its links into docs/ are the site's own pages
sed -e 's#](docs/#](#g' -e 's#](CHANGELOG.md)#](CHANGELOG.md)#' "$src/README.md" >"$work/index.md"
sed -e 's#](docs/#](#g' "$src/CHANGELOG.md" >"$work/CHANGELOG.md"
cp "$src/LICENSE" "$work/LICENSE"
# a page's link to the README is the home page
for f in "$work"/*.md "$work"/guide/*.md; do
    sed -i -e 's#](\.\./README\.md)#](index.md)#g' -e 's#](\.\./\.\./README\.md)#](../index.md)#g' "$f"
done
# the man pages: one page each (a .so page is its target's), and an index
{
    echo "# API reference"
    echo
    echo "A page per public function and type, made from the header (\`man 3 NAME\` after installing"
    echo "libpreempt-dev), and the overview, [libpreempt(7)](libpreempt.7.md)."
    echo
} >"$work/api/index.md"
for f in "$man"/*.3 "$man/libpreempt.7"; do
    name=${f##*/}
    head -n 1 "$f" | grep -q '^\.so ' && continue
    {
        printf '# %s\n\n' "${name%.*}($(echo "$name" | sed 's/.*\.//'))"
        mandoc -Thtml -Ofragment,man=%N.%S.md "$f"
    } >"$work/api/$name.md"
    [ "$name" = libpreempt.7 ] || echo "- [${name%.3}(3)]($name.md)" >>"$work/api/index.md"
done
sed "s#^docs_dir: .*#docs_dir: $work#; s#^site_dir: .*#site_dir: $build/site#" "$src/mkdocs.yml" >"$build/site-mkdocs.yml"
if ! mkdocs build --strict -f "$build/site-mkdocs.yml" >"$build/mkdocs.log" 2>&1; then
    grep -v '^INFO' "$build/mkdocs.log" >&2
    exit 1
fi
echo "docs-site: $build/site/index.html ($(find "$build/site" -name '*.html' | wc -l) pages)"
