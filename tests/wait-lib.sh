# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The libpreempt authors
# tests/wait-lib.sh: bounded waits for events (sourced by tests/lib.sh and
# tests/etcd-lib.sh, so by scripts/demo.sh and bench/run.sh too).
# A test never sleeps to let something happen: it waits, bounded, for the
# event that says it happened (a line in a file, a key, a process state).
# poll() is the suite's one pause (tests/no-sleep.sh checks it).
#
#   poll SECONDS CMD...     runs CMD until it succeeds; 1 if SECONDS (wall
#                           clock; a fraction too) pass first
#   spin SECONDS CMD...     poll without a pause, for a window shorter than
#                           the poll's period (a persist of milliseconds); it
#                           costs a CPU meanwhile
# Conditions to poll for:
#   has_text FILE TEXT      FILE contains TEXT (fixed string)
#   has_lines FILE TEXT N   FILE has N lines containing TEXT
#   none_alive PID...       none of the PIDs runs
#   has_signalfd PID        PID has a signalfd open
poll() {
    _poll_end=$(($(date +%s%3N) + $(echo "$1" | awk '{ printf "%d", $1 * 1000 }')))
    shift
    until "$@"; do
        [ "$(date +%s%3N)" -lt "$_poll_end" ] || return 1
        sleep 0.05 # the poll's period: the one pause of the suite
    done
    return 0
}
spin() {
    _spin_end=$(($(date +%s%3N) + $1 * 1000))
    shift
    until "$@"; do
        [ "$(date +%s%3N)" -lt "$_spin_end" ] || return 1
    done
    return 0
}
has_text() { grep -qF -- "$2" "$1" 2>/dev/null; }
has_lines() { [ "$(grep -cF -- "$2" "$1" 2>/dev/null)" -ge "$3" ]; }
none_alive() {
    for _na in "$@"; do kill -0 "$_na" 2>/dev/null && return 1; done
    return 0
}
has_signalfd() { grep -qs '^sigmask:' /proc/"$1"/fdinfo/*; }
