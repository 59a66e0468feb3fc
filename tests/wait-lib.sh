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
#   none_alive PID...       none of the PIDs runs as this shell's child
#   has_signalfd PID        PID has a signalfd open
# And a kill that cannot hit another process:
#   ours PID                PID runs (not a zombie) as a child of this shell
#                           (or of the test's main shell, from a subshell)
#   kill_ours SIG PID...    signals those of the PIDs that are ours
#   show_stacks PID...      prints, on stderr, every thread's C stack of
#                           those of the PIDs that are ours (gdb, where it
#                           is installed; bounded): a hung process shows
#                           where it waits before a test ends it
# And a bounded wait for a process's end (a bare wait has no bound:
# tests/no-sleep.sh refuses one):
#   reap SECONDS PID        waits until PID (ours) ends and returns its
#                           status; after SECONDS it says so on stderr,
#                           kills it (SIGKILL) and returns 124
# A PID a test started may have ended, been reaped and been given to
# another process by now: pid_max is 32768 here and the suite's processes
# wrap it within minutes. A late kill of such a PID (an EXIT trap's) once
# killed make and the whole CI run; a wait on one waited for a stranger.
# now_ms: the wall clock in ms (bash's own clock: no process per look)
now_ms() {
    if [ -n "${EPOCHREALTIME:-}" ]; then
        _nm=${EPOCHREALTIME%[.,]*}${EPOCHREALTIME#*[.,]}
        echo $((${_nm%???} + 0))
    else
        date +%s%3N
    fi
}
poll() {
    _poll_end=$(($(now_ms) + $(echo "$1" | awk '{ printf "%d", $1 * 1000 }')))
    shift
    until "$@"; do
        [ "$(now_ms)" -lt "$_poll_end" ] || return 1
        sleep 0.05 # the poll's period: the one pause of the suite
    done
    return 0
}
spin() {
    _spin_end=$(($(now_ms) + $1 * 1000))
    shift
    until "$@"; do
        [ "$(now_ms)" -lt "$_spin_end" ] || return 1
    done
    return 0
}
has_text() { grep -qF -- "$2" "$1" 2>/dev/null; }
has_lines() { _hl=$(grep -cF -- "$2" "$1" 2>/dev/null); [ "${_hl:-0}" -ge "$3" ]; }
ours() {
    _st=$(cat /proc/"$1"/stat 2>/dev/null) || return 1
    _st=${_st##*) } # "state ppid ...", after the command's name
    # shellcheck disable=SC2086 # the fields, split
    set -- $_st
    [ "$1" != Z ] && { [ "$2" = "${BASHPID:-$$}" ] || [ "$2" = "$$" ]; }
}
kill_ours() {
    _ko_sig=$1
    shift
    for _ko in "$@"; do
        ! ours "$_ko" || kill -"$_ko_sig" "$_ko" 2>/dev/null
    done
    return 0
}
show_stacks() {
    command -v gdb >/dev/null 2>&1 || return 0
    for _ss in "$@"; do
        ours "$_ss" || continue
        echo "== the C stacks of process $_ss ($(tr '\0' ' ' </proc/"$_ss"/cmdline 2>/dev/null | cut -c1-120))" >&2
        timeout 60 gdb -p "$_ss" -batch -nx -ex 'thread apply all bt' </dev/null 2>&1 | grep -E '^(#|Thread)' >&2
    done
    return 0
}
none_alive() {
    for _na in "$@"; do ours "$_na" && return 1; done
    return 0
}
reap() {
    if poll "$1" none_alive "$2"; then
        wait "$2" 2>/dev/null # bounded: the poll saw it end
        return
    fi
    echo "reap: process $2 still running after $1 s: killed" >&2
    kill_ours KILL "$2"
    wait "$2" 2>/dev/null # bounded: SIGKILL ends it
    return 124
}
has_signalfd() { grep -qs '^sigmask:' /proc/"$1"/fdinfo/*; }
