#!/bin/sh
# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The libpreempt authors
# Replaces the Mermaid block of a document (docs/design.md) with fsmdump's current output.
# Usage: update-diagram.sh FSMDUMP FILE
set -eu
fsmdump=$1
readme=$2
tmp=$(mktemp)
trap 'rm -f "$tmp" "$tmp.mmd"' EXIT
"$fsmdump" --format mermaid >"$tmp.mmd"
awk -v mmd="$tmp.mmd" '
    /<!-- fsmdump:mermaid:begin -->/ {
        print; print "```mermaid"
        while ((getline line < mmd) > 0) print line
        print "```"; skip = 1; next
    }
    /<!-- fsmdump:mermaid:end -->/ { skip = 0 }
    !skip { print }
' "$readme" >"$tmp"
cat "$tmp" >"$readme"
