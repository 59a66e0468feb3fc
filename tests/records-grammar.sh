# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The libpreempt authors
# Every value of the job's records is read by its grammar (lib/records/):
# the parts that read a job (the job core, lib/job/; the handler and the
# public API, lib/handler/ and lib/api/; the port's replies,
# lib/port/port.c; preemptctl; the simulator's etcd) call no number parser
# of their own: no strto*, sscanf or ato*, and neither the base's decimal
# reader (preempt_parse_u64_) nor a trace line's (preempt_trace_u64_). A
# field's text read again by hand is how a value the grammar refuses (007,
# a sign, a blank) got acted on before. The replay of the coordinator's
# trace lines (lib/job/coord-replay.c) reads trace lines, not records, and
# command-line options are tools/tool.c's and the simulator's main's.
#
# And every value written is written by it: the port's writes and compares
# take a struct preempt_value, which only lib/records/ fills (its private
# field text_; the compiler refuses a string where a value goes), so no
# file names text_ outside lib/records/ but the unit tests' raw values
# (tests/unit/, e.g. check-main.h's TV: an operator's or a drifted
# writer's garbage, for the write check to refuse) and the bench's etcd floor
# (bench/agree.c: keys outside any job). Seen failing: the restore
# barrier's "ok" in lib/job/startup.c, written as a literal until the
# value was typed; a value filled in lib/job/coord-effects.c by hand.
. "$top_srcdir/tests/lib.sh"
NM=${NM:-nm}
b=$(cd "$top_builddir" && pwd)
parsers='^(strto[a-z]*|sscanf|vsscanf|atoi|atol|atoll|atof|preempt_parse_u64_|preempt_trace_u64_)$'

mkdir "$TMP/job" "$TMP/port"
(cd "$TMP/job" && ar x "$b/lib/job/.libs/libpreempt-job.a") || fail "ar x libpreempt-job.a"
(cd "$TMP/port" && ar x "$b/lib/port/.libs/libpreempt-port.a") || fail "ar x libpreempt-port.a"
objs=$(find "$TMP/job" -name '*.o')
objs="$objs $(find "$TMP/port" -name '*port.o')"
for lo in ${LIBPREEMPT_OBJECTS:-}; do
    case $lo in lib/handler/* | lib/api/*) objs="$objs $b/${lo%/*}/.libs/$(basename "$lo" .lo).o" ;; esac
done
objs="$objs $(find "$b/tools" -name '*preemptctl.o') $(find "$b/tests/sim" -name '*sim-etcd.o')"
# shellcheck disable=SC2086 # the objects, on one line
objs=$(echo $objs)
n=0
for o in $objs; do
    [ -f "$o" ] || { fail "$o is not built"; continue; }
    n=$((n + 1))
done
expect "the test reads the readers' objects ($n)" test "$n" -gt 30
for want in startup view status coord-effects handler-start watcher preemptctl sim-etcd port; do
    case " $objs " in *"$want.o "*) ok ;; *) fail "no $want object among the readers (the test cannot see)" ;; esac
done
: >"$TMP/bad"
for o in $objs; do
    [ -f "$o" ] || continue
    $NM -u "$o" | awk '{ print $2 }' | grep -E "$parsers" | sed "s|^|$(basename "$o"): |" >>"$TMP/bad"
done
# the check can see: the base's decimal reader is called (by lib/base/platform.c)
$NM -u "$b/lib/base/.libs/libpreempt-base.a" 2>/dev/null | grep -qx ' *U preempt_parse_u64_' && ok ||
    fail "nm sees no call of preempt_parse_u64_ in lib/base/ (the test cannot see)"
if [ -s "$TMP/bad" ]; then
    fail "a reader of the job's records parses numbers by hand:
$(sed 's/^/    /' "$TMP/bad")"
else
    ok
fi

# The writers: every file of the tree but lib/records/ (and the two above)
# names no value's text_ (sources and headers; the .def and generated
# files hold none).
# (the source folders only: a distcheck's copy of the tree may sit beside them)
(cd "$top_srcdir" && find lib tools fsm include bench tests -type f \( -name '*.c' -o -name '*.h' \)) |
    grep -vE '^(lib/records/|tests/unit/|bench/agree\.c$)' >"$TMP/srcs"
expect "the writers' sources are listed ($(wc -l <"$TMP/srcs"))" test "$(wc -l <"$TMP/srcs")" -gt 100
(cd "$top_srcdir" && xargs grep -nw 'text_' <"$TMP/srcs" /dev/null) >"$TMP/raw" || true
if [ -s "$TMP/raw" ]; then
    fail "a value written outside the records' writer:
$(sed 's/^/    /' "$TMP/raw")"
else
    ok
fi
(cd "$top_srcdir" && grep -qw 'text_' lib/records/records-internal.h) && ok ||
    fail "lib/records/records-internal.h names no text_ (the test cannot see)"
# And a record is written by its kind's typed writer and read by its
# kind's typed reader (preempt_rv_<kind>_write_ and _read_, or
# preempt_rv_read_ of any kind: written from the grammar at build time, so
# a field the grammar lacks does not compile), never by naming fields at
# run time: no file outside lib/records/ and the unit tests of the engine
# (tests/unit/) calls the engine's setters, formatter, parser or
# by-name accessors, or holds its untyped struct preempt_record. Seen
# failing: the 62 calls of the setters and formatter in 8 files before
# the typed writers, and the 63 calls of the parser and by-name accessors
# in 8 files before the typed readers.
(cd "$top_srcdir" && xargs grep -nE 'preempt_record_(set_[a-z]+|format|u64|has|text|list|pace|parse|read|valid|field)_\(|struct preempt_record\b' <"$TMP/srcs" /dev/null) >"$TMP/setters" || true
if [ -s "$TMP/setters" ]; then
    fail "a value written or read field by field outside lib/records/:
$(sed 's/^/    /' "$TMP/setters")"
else
    ok
fi
(cd "$top_srcdir" && grep -q 'preempt_rv_notice_write_(' lib/job/coord-effects.c lib/job/coord-state.h) ||
    (cd "$top_srcdir" && grep -q 'COORD_VALUE(c, val, notice' lib/job/coord-effects.c) && ok ||
    fail "the coordinator writes no notice by its typed writer (the test cannot see)"
finish
