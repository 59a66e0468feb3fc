# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The libpreempt authors
# fsm/ is pure: its library references no I/O, clock, allocation, libevent,
# libcurl or nanopb symbol, and a program linked with it alone (check_fsm)
# depends on none of those libraries. The step function's object file
# references nothing outside fsm/ but memset and memcpy. The records'
# schema (lib/records/records.c) and the coordinator's declared machines (lib/job/decl.c,
# lib/job/pub.c, lib/job/claim.c, lib/job/membership.c, lib/job/episode.c, lib/job/outcome.c,
# lib/job/phase.c, lib/job/joining.c, lib/job/restore.c) are checked the same way, and the job view
# (lib/job/view.c) with allocation allowed; the coordinator itself (below)
# with allocation allowed, on the typed port alone.
. "$top_srcdir/tests/lib.sh"
NM=${NM:-nm}
lib="$(cd "$top_builddir" && pwd)/fsm/.libs/libpreempt-fsm.a"
[ -f "$lib" ] || { fail "$lib not built"; finish; }

# $NM may carry options ("nm -B"): it is split on purpose.
$NM -u "$lib" >"$TMP/nm-u" || fail "$NM -u $lib"
$NM --defined-only "$lib" >"$TMP/nm-d" || fail "$NM --defined-only $lib"
awk 'NF == 2 && $1 == "U" { print $2 }' "$TMP/nm-u" | sort -u >"$TMP/undef"
awk 'NF == 3 { print $3 }' "$TMP/nm-d" | sort -u >"$TMP/defined"
grep -qx preempt_fsm_step_ "$TMP/defined" && ok || fail "nm found no preempt_fsm_step_ in $lib"
grep -qx strcmp "$TMP/undef" && ok || fail "nm found no reference to strcmp in $lib (the test cannot see)"
# A sanitized build's instrumentation (configure --enable-asan/--enable-ubsan)
# is the compiler's, not the core's: its runtime's symbols are set aside.
instr='^(__asan_|__ubsan_|__sanitizer_|_GLOBAL_OFFSET_TABLE_$)'
[ -n "${SANITIZE:-}" ] || instr='^$'
echo "fsm/ library: undefined symbols outside fsm/:"
comm -23 "$TMP/undef" "$TMP/defined" | grep -vE "$instr" | tee "$TMP/external" | sed 's/^/    /'
allowed='^(memcpy|memset|memchr|memcmp|strcmp|strlen|strtoull|strtoll|snprintf|vsnprintf|__errno_location|__stack_chk_fail|__assert_fail)$'
if grep -vE "$allowed" "$TMP/external" >"$TMP/bad"; then
    fail "fsm/ references impure symbols: $(tr '\n' ' ' <"$TMP/bad")"
else
    ok
fi

# The step function and the table: nothing outside fsm/ but memset/memcpy.
obj=$(ar t "$lib" | grep 'preempt_fsm\.o$')
(cd "$TMP" && ar x "$lib" "$obj") || fail "ar x $lib $obj"
$NM -u "$TMP/$obj" >"$TMP/nm-step" || fail "$NM -u $obj"
awk '{ print $2 }' "$TMP/nm-step" | sort -u | comm -23 - "$TMP/defined" | grep -vE "$instr" >"$TMP/step_external"
[ -s "$TMP/nm-step" ] && ok || fail "nm found no undefined symbol in $obj (the test cannot see)"
echo "$obj: undefined symbols outside fsm/: $(tr '\n' ' ' <"$TMP/step_external")"
if grep -vE '^(memcpy|memset|__stack_chk_fail)$' "$TMP/step_external" >"$TMP/bad"; then
    fail "the step function references $(tr '\n' ' ' <"$TMP/bad")"
else
    ok
fi

# lib/'s pure modules, a folder each (docs/development.md, "Layout"): the
# records (lib/records/: the keys and the values' grammar) and the job core
# (lib/job/: the declared machines, the view, the coordinator's step and
# its shell on the typed port, start-up, the worker's machine, the job's
# status, the coordinator's trace lines and their replay, which the
# replay library holds). Every object of
# both folders references no I/O, clock, libevent, libcurl, jansson or
# nanopb symbol: only allocation, string and formatting calls, and symbols
# defined by these folders and fsm/; the port (lib/port/: the requests,
# answers and records the core speaks, and a reply's accessors) is one of
# them. Requests go out and answers come in through a table
# of function pointers (struct preempt_coord_io: the libevent and libcurl
# adapter is lib/handler/coord-io.c, the simulator's is its own), the clock
# is the port's, and who the worker is (its pid and host) is the shell's
# configuration. Seen failing: startup.o's getpid and gethostname, before
# they moved to the shell; a call of the etcd client's, before port.c.
# arch M: module M's archive
arch() { echo "$(cd "$top_builddir" && pwd)/lib/$1/.libs/libpreempt-$1.a"; }
mkdir "$TMP/pure"
: >"$TMP/pure-objs"
for m in records port job; do
    a=$(arch "$m")
    [ -f "$a" ] || { fail "$a not built"; continue; }
    for o in $(ar t "$a"); do
        (cd "$TMP/pure" && ar x "$a" "$o") && echo "$m/$o" >>"$TMP/pure-objs" || fail "ar x $a $o"
    done
done
# the job core's replay of its trace lines, built into the replay library
a="$(cd "$top_builddir" && pwd)/lib/.libs/libpreempt-replay.a"
o=$(ar t "$a" | grep -E -- '-coord-replay\.o$')
[ -n "$o" ] && (cd "$TMP/pure" && ar x "$a" "$o") && echo "job/$o" >>"$TMP/pure-objs" || fail "no coord-replay object in $a"
# the pure objects of the modules below: a trace line's escaping
for mo in base/escape; do
    a=$(arch "${mo%/*}")
    o=$(ar t "$a" | grep -E "^([^/]*-)?${mo#*/}\.o\$")
    [ -n "$o" ] && (cd "$TMP/pure" && ar x "$a" "$o") && echo "${mo%/*}/$o" >>"$TMP/pure-objs" || fail "no ${mo#*/} object in $a"
done
for want in records/records port/port job/.*-decl job/.*-view job/.*-coord job/.*-startup job/.*-coord-trace job/.*-coord-replay job/.*-status; do
    grep -qx "$want\.o" "$TMP/pure-objs" && ok || fail "no object $want.o in the pure folders (the test cannot see)"
done
while read -r mo; do
    $NM --defined-only "$TMP/pure/${mo#*/}" | awk 'NF == 3 { print $3 }'
done <"$TMP/pure-objs" >"$TMP/core-defined"
cat "$TMP/defined" >>"$TMP/core-defined"
sort -u -o "$TMP/core-defined" "$TMP/core-defined"
# only_calls OBJ LABEL ALLOWED: OBJ (extracted into $TMP/pure) defines
# symbols of ours, and what it calls outside the pure folders and fsm/
# matches the extended regular expression ALLOWED, each symbol whole.
only_calls() {
    $NM --defined-only "$TMP/pure/$1" | grep -qE " (preempt|coord)_" && ok || fail "nm found no definition in $1 (the test cannot see)"
    $NM -u "$TMP/pure/$1" | awk '{ print $2 }' | grep -vE "$instr" | sort -u | comm -23 - "$TMP/core-defined" >"$TMP/ext"
    echo "$1: undefined symbols$2: $(tr '\n' ' ' <"$TMP/ext")"
    if grep -vE "^($3)\$" "$TMP/ext" >"$TMP/bad"; then
        fail "$1 references $(tr '\n' ' ' <"$TMP/bad")"
    else
        ok
    fi
}
while read -r mo; do
    only_calls "${mo#*/}" " outside the pure folders" 'calloc|malloc|realloc|free|memcpy|memmove|memset|memchr|memcmp|strcmp|strncmp|strlen|strdup|strndup|strchr|strrchr|strpbrk|strspn|strcspn|strstr|strtoul|strtoull|strtoll|snprintf|vsnprintf|qsort|__errno_location|__stack_chk_fail|__assert_fail|_GLOBAL_OFFSET_TABLE_'
done <"$TMP/pure-objs"
grep -qx preempt_coord_fx_ "$TMP/core-defined" && ok || fail "nm found no preempt_coord_fx_ in the core (the test cannot see)"
# The core's headers: no source of lib/records/, lib/port/ or lib/job/
# includes a libevent or jansson header, by any path (the build's own
# dependency files list every header each object read). Seen failing:
# lib/job/coord-internal.h included the etcd client's door, which includes
# both.
deps=$(for m in records port job; do
    for o in $(ar t "$(arch "$m")"); do echo "$top_builddir/lib/$m/.deps/${o%.o}.Plo"; done
done)
n=$(echo "$deps" | grep -c .)
there=$(for f in $deps; do [ -f "$f" ] && echo "$f"; done | grep -c .)
expect "the build's dependency files of the core's $n objects are there ($there)" test "$n" -gt 20 -a "$there" -eq "$n"
# shellcheck disable=SC2086 # the files, split
if bad=$(grep -lE '(event2/|jansson\.h|curl/curl\.h)' $deps /dev/null); then
    fail "the core includes libevent, jansson or libcurl: $(echo $bad)"
else
    ok
fi
# shellcheck disable=SC2086 # the files, split
grep -qE 'records-internal\.h' $deps && ok || fail "no header listed in the dependency files (the test cannot see)"
# member PART: PART's object in the pure folders ($obj), extracted above
member() { obj=$(sed -n "s|^[a-z]*/\(\([^/]*-\)\{0,1\}$1\.o\)\$|\1|p" "$TMP/pure-objs" | head -n 1); }

# The records' grammar and the coordinator's declared machines (decl.c:
# the step; pub.c, claim.c, membership.c, lease.c (with the reading of a
# keep-alive's answer), watch.c; lost.c: who is lost, the driver's
# decision; episode.c, outcome.c, phase.c, joining.c, restore.c,
# decision.c: their tables; links.c: how they drive each other) call still
# less, whatever they call of ours: memchr, memcmp, memcpy, memset, strlen
# and snprintf (and the key table's grammar and placeholder accessors, the
# claim's typed reader, and
# the machines' tables; _GLOBAL_OFFSET_TABLE_ is the linker's, for the
# list of tables that decl.c reads).
for part in records decl pub claim lost membership lease watch episode outcome phase joining restore decision links; do
    member "$part"
    [ -n "$obj" ] || { fail "no $part object"; continue; }
    $NM -u "$TMP/pure/$obj" | awk '{ print $2 }' | grep -vE "$instr" | sort -u >"$TMP/ext"
    echo "$obj: undefined symbols: $(tr '\n' ' ' <"$TMP/ext")"
    if grep -vE '^(memchr|memcmp|memcpy|memset|strlen|snprintf|preempt_rv_claim_read_|preempt_record_grammar_|preempt_key_has_|preempt_[a-z]*_decl_|preempt_decl_input_|preempt_event_to_string_|__stack_chk_fail|_GLOBAL_OFFSET_TABLE_)$' "$TMP/ext" >"$TMP/bad"; then
        fail "$obj references $(tr '\n' ' ' <"$TMP/bad")"
    else
        ok
    fi
done

# The running protocol's step (lib/job/coord.c, coord-rounds.c,
# coord-effects.c: typed inputs in, typed outputs out) allocates nothing
# and reads no clock: the input carries the time, the shell (coord-shell.c,
# which alone sees the port and the owner's callbacks) runs the outputs,
# and the memory is coord-mem.c's (setup, teardown, and the records of
# later episodes). Seen failing: coord.o's calloc and free, while the setup
# and teardown were in it.
for part in coord coord-rounds coord-effects; do
    member "$part"
    [ -n "$obj" ] || { fail "no $part object"; continue; }
    only_calls "$obj" " outside the core (the step)" 'memcpy|memmove|memset|memchr|memcmp|strcmp|strncmp|strlen|strchr|strrchr|strpbrk|strspn|strcspn|strstr|strtoul|strtoull|snprintf|vsnprintf|__errno_location|__stack_chk_fail|_GLOBAL_OFFSET_TABLE_'
done
# Start-up's step (lib/job/startup.c: joining, the barriers, the phase's
# end; typed inputs in, typed outputs out, startup-inputs.def and
# startup-outputs.def) is the running step's kind: it reads no clock and
# calls no port; the input carries the time and its shell
# (startup-shell.c) alone runs the requests, the watch and the timer. It
# allocates only the members' offers it plans from (calloc, free). The
# port is a table of function pointers, which nm cannot see called: the
# step's sources name none of it. Seen failing: startup.c before the
# step, which called the port (io->request, io->watch, io->timer,
# io->mono_ms) from 20 reply callbacks.
member startup
if [ -n "$obj" ]; then
    only_calls "$obj" " outside the core (start-up's step)" 'calloc|free|memcpy|memmove|memset|memchr|memcmp|strcmp|strncmp|strlen|strchr|strrchr|strpbrk|strspn|strcspn|strstr|strtoul|strtoull|snprintf|vsnprintf|__errno_location|__stack_chk_fail|_GLOBAL_OFFSET_TABLE_'
else
    fail "no startup object"
fi
for f in preempt_startup_input_ preempt_startup_init_; do
    $NM --defined-only "$TMP/pure/$obj" | grep -q " T $f\$" && ok || fail "$f is not startup.o's (start-up's step)"
done
for src in lib/job/startup.c lib/job/startup-state.h; do
    [ -f "$top_srcdir/$src" ] || { fail "no $src"; continue; }
    if grep -nE 'preempt_coord_io|preempt_etcd_(reply|watch)_cb|mono_ms|wall_ms|->(request|watch|timer|free)\(' \
        "$top_srcdir/$src" >"$TMP/port-use"; then
        fail "$src reaches the port or the clock: $(head -n 3 "$TMP/port-use" | tr '\n' ' ')"
    else
        ok
    fi
done
grep -q 'io->request' "$top_srcdir/lib/job/startup-shell.c" && ok || fail "startup-shell.c runs no request (the test cannot see)"
# And it speaks the protocol, not etcd: it asks for records (struct
# preempt_su_ask) and reads typed answers (struct preempt_su_answer); the
# wire (startup-wire.c) alone builds a transaction or reads a reply by
# position. Seen failing: startup.c before the wire, with its 14 requests
# built inline and its replies read by index.
if grep -nE 'preempt_etcd_(req|reply|op|cmp)\b|PREEMPT_RQ_|PREEMPT_ETCD_(OP|RQ)_|preempt_etcd_reply_(kv|count)_' \
    "$top_srcdir/lib/job/startup.c" >"$TMP/etcd-use"; then
    fail "lib/job/startup.c builds etcd requests or reads replies: $(head -n 3 "$TMP/etcd-use" | tr '\n' ' ')"
else
    ok
fi
grep -q 'PREEMPT_ETCD_RQ_TXN' "$top_srcdir/lib/job/startup-wire.c" && ok || fail "startup-wire.c builds no txn (the test cannot see)"
# The running step speaks the protocol too: it asks (struct preempt_co_ask:
# write this record, create it where its slot is free, read this range,
# keep this lease) and reads typed answers (struct preempt_co_answer); the
# wire (coord-wire.c) alone builds its transactions and reads its replies
# by position, run by the shell and the replay. Seen failing: coord.c,
# coord-rounds.c and coord-effects.c before their wire (20 requests built
# inline, 8 replies read by index; their objects called
# preempt_etcd_reply_kv_ and preempt_etcd_reply_count_).
for part in coord coord-rounds coord-effects; do
    src="$top_srcdir/lib/job/$part.c"
    if grep -nE 'preempt_etcd_(req|reply|res|op|cmp)\b|PREEMPT_RQ_|PREEMPT_ETCD_(OP|RQ)_|preempt_etcd_reply_(kv|count)_|->reply\b' \
        "$src" >"$TMP/etcd-use"; then
        fail "lib/job/$part.c builds etcd requests or reads replies: $(head -n 3 "$TMP/etcd-use" | tr '\n' ' ')"
    else
        ok
    fi
    member "$part"
    if [ -n "$obj" ] && $NM -u "$TMP/pure/$obj" | grep -E ' preempt_(etcd_reply_(kv|count)_|co_(request|answer)_)$' >"$TMP/wire-use"; then
        fail "$obj reads replies or runs the wire itself: $(tr '\n' ' ' <"$TMP/wire-use")"
    else
        ok
    fi
done
member coord-wire
[ -n "$obj" ] && $NM --defined-only "$TMP/pure/$obj" | grep -q ' T preempt_co_request_$' && ok || fail "no coord-wire object defining preempt_co_request_ (the test cannot see)"
grep -q 'PREEMPT_ETCD_RQ_TXN' "$top_srcdir/lib/job/coord-wire.c" && ok || fail "coord-wire.c builds no txn (the test cannot see)"
for f in coord-shell coord-replay; do
    grep -q 'preempt_co_answer_(' "$top_srcdir/lib/job/$f.c" && ok || fail "$f.c does not read answers through the wire"
done

member coord-mem
for f in coord_init coord_fini coord_hold coord_held_replay; do
    $NM --defined-only "$TMP/pure/$obj" | grep -q " T $f\$" && ok || fail "$f is not coord-mem's (where the step's memory is)"
done

# A program linked with fsm/ only needs none of libevent, libcurl, jansson, nanopb.
prog="$top_builddir/tests/unit/check_fsm"
[ -f "$top_builddir/tests/unit/.libs/check_fsm" ] && prog="$top_builddir/tests/unit/.libs/check_fsm"
ldd "$prog" >"$TMP/ldd" 2>&1 || fail "ldd $prog"
grep -q 'libc\.so' "$TMP/ldd" && ok || fail "ldd shows no libc (the test cannot see)"
echo "check_fsm (linked with fsm/ only) loads:"
sed 's/^/    /' "$TMP/ldd"
if grep -Ei 'libevent|libcurl|jansson|nanopb|libpreempt' "$TMP/ldd"; then
    fail "check_fsm depends on a shell library"
else
    ok
fi
finish
