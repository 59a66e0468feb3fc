# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The libpreempt authors
# scripts/jsonl.sh: reading preempt-trainer's JSON lines from sh (sourced by
# scripts/demo.sh and tests/lib.sh). Flat objects only, one per line.

# field FILE EVENT KEY: KEY's value in the last JSON line of FILE for EVENT.
field() {
    grep -F "\"event\":\"$2\"" "$1" | tail -n 1 | sed -n "s/.*\"$3\":\"\{0,1\}\([^\",}]*\).*/\1/p"
}

# first_field FILE EVENT KEY: KEY's value in the first JSON line of FILE for EVENT.
first_field() {
    grep -m1 -F "\"event\":\"$2\"" "$1" | sed -n "s/.*\"$3\":\"\{0,1\}\([^\",}]*\).*/\1/p"
}

# count_events FILE EVENT: how many JSON lines of FILE are of EVENT.
count_events() {
    grep -cF "\"event\":\"$2\"" "$1"
}
