#!/bin/sh
# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The libpreempt authors
# Prints include/libpreempt/preempt.h with its generated enums (the
# machine's states and exit reasons) made again from their one definition,
# fsm/preempt_states.def and fsm/preempt_exits.def: each value explicit, in
# the tables' order, with its name and meaning, and none of the tables'
# internal columns. tests/exports.sh fails when the header differs from
# this; make public-enums writes it after a reviewed change of the tables
# (a released value never changes: tests/abi.sh).
# Usage: public-enums.sh SRCDIR
set -eu
src=$1
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
# enum_body PREFIX SED DEF: the enumerators of one table, each with its
# name and meaning, their values explicit, then PREFIX__COUNT. SED turns a
# row into "ID "name" meaning".
enum_body() {
    sed -n "$2" "$3" |
        awk -v prefix="$1" '{ id = $1; name = $2; $1 = ""; $2 = ""; sub(/^  /, "");
               printf "    /** %s: %s */\n    %s_%s = %d,\n", name, $0, prefix, id, n++ }
             END { printf "    %s__COUNT = %d\n", prefix, n }'
}
{
    echo '/* Generated from fsm/preempt_states.def and fsm/preempt_exits.def by'
    echo ' * scripts/public-enums.sh (make public-enums): do not edit. */'
    echo
    echo '/** The machine'"'"'s states (docs/design.md). Their names are the ones used'
    echo ' * in traces and diagrams; preempt_state_to_string() returns them. */'
    echo 'enum preempt_state {'
    enum_body PREEMPT_STATE 's/^PREEMPT_STATE(\([A-Z_]*\), *\("[^"]*"\), *[A-Z_]*, *"\(.*\)")$/\1 \2 \3/p' \
        "$src/fsm/preempt_states.def"
    echo '};'
    echo
    echo '/** Why a handler decided to exit. */'
    echo 'enum preempt_exit {'
    enum_body PREEMPT_EXIT 's/^PREEMPT_EXIT(\([A-Z_]*\), *\("[^"]*"\), *"\(.*\)")$/\1 \2 \3/p' "$src/fsm/preempt_exits.def"
    echo '};'
} >"$tmp"
awk -v gen="$tmp" '
    /^\/\* ---- generated enums: begin ---- \*\/$/ {
        print; while ((getline line < gen) > 0) print line; skip = 1; next
    }
    /^\/\* ---- generated enums: end ---- \*\/$/ { skip = 0 }
    !skip { print }
' "$src/include/libpreempt/preempt.h"
