# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The libpreempt authors
# fsm/ is pure: its library references no I/O, clock, allocation, libevent,
# libcurl or nanopb symbol, and a program linked with it alone (check_fsm)
# depends on none of those libraries. The step function's object file
# references nothing outside fsm/ but memset and memcpy. The records'
# schema (lib/records.c) and the coordinator's declared machines (lib/decl.c,
# lib/pub.c, lib/claim.c, lib/membership.c, lib/episode.c, lib/outcome.c,
# lib/phase.c, lib/joining.c, lib/restore.c) are checked the same way, and the job view
# (lib/view.c) with allocation allowed; the coordinator itself (below)
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

# The records' schema (lib/records.c) and the coordinator's declared
# machines (lib/decl.c: the step; lib/pub.c, lib/claim.c, lib/membership.c,
# lib/lease.c (with the reading of a keep-alive's answer), lib/watch.c;
# lib/lost.c: who is lost, the driver's decision;
# lib/episode.c, lib/outcome.c, lib/phase.c, lib/joining.c, lib/restore.c,
# lib/decision.c: their tables; lib/links.c: how they drive each other)
# are pure as well: they call nothing but memchr, memcmp, memset and
# strlen (and the key table's grammar and placeholder accessors, and the
# machines' tables; _GLOBAL_OFFSET_TABLE_ is the linker's, for the list of
# tables that lib/decl.c reads).
# only_calls OBJ LABEL ALLOWED: OBJ (extracted into $TMP) defines symbols
# of ours, and what it calls ($TMP/ext, its undefined symbols LABEL)
# matches the extended regular expression ALLOWED, each symbol whole.
only_calls() {
    $NM --defined-only "$TMP/$1" | grep -qE " (preempt|coord)_" && ok || fail "nm found no definition in $1 (the test cannot see)"
    echo "$1: undefined symbols$2: $(tr '\n' ' ' <"$TMP/ext")"
    if grep -vE "^($3)\$" "$TMP/ext" >"$TMP/bad"; then
        fail "$1 references $(tr '\n' ' ' <"$TMP/bad")"
    else
        ok
    fi
}

shell="$(cd "$top_builddir" && pwd)/lib/.libs/libpreempt-shell.a"
for part in records decl pub claim lost membership lease watch episode outcome phase joining restore decision links; do
    obj=$(ar t "$shell" | grep "$part\.o$")
    if [ -z "$obj" ] || ! (cd "$TMP" && ar x "$shell" "$obj"); then
        fail "no $part object in $shell"
        continue
    fi
    $NM -u "$TMP/$obj" | awk '{ print $2 }' | grep -vE "$instr" | sort -u >"$TMP/ext"
    only_calls "$obj" "" 'memchr|memcmp|memcpy|memset|strlen|snprintf|preempt_claim_parse_|preempt_record_grammar_|preempt_key_has_|preempt_pub_decl_|preempt_claim_decl_|preempt_mship_decl_|preempt_lease_decl_|preempt_watch_decl_|preempt_roll_decl_|preempt_await_decl_|preempt_ep_decl_|preempt_out_decl_|preempt_pend_decl_|preempt_offer_decl_|preempt_shape_decl_|preempt_rst_decl_|preempt_dec_decl_|preempt_decl_input_|preempt_event_to_string_|__stack_chk_fail|_GLOBAL_OFFSET_TABLE_'
done

# The job view (lib/view.c: the job's records reduced to their meaning, the
# one reader of the coordinator, the watcher and preemptctl) keeps per-worker
# tables, so it may allocate; it calls no I/O, clock, libevent, libcurl or
# jansson: only memory, string and formatting calls and the key and record
# schema.
obj=$(ar t "$shell" | grep -- '-view\.o$')
if [ -n "$obj" ] && (cd "$TMP" && ar x "$shell" "$obj"); then
    $NM -u "$TMP/$obj" | awk '{ print $2 }' | grep -vE "$instr" | sort -u >"$TMP/ext"
    grep -qx preempt_record_read_ "$TMP/ext" && ok || fail "nm found no schema call in $obj (the test cannot see)"
    echo "$obj: undefined symbols: $(tr '\n' ' ' <"$TMP/ext")"
    if grep -vE '^(calloc|malloc|realloc|free|memcpy|memset|memchr|memcmp|snprintf|strcmp|strncmp|strcspn|strspn|strlen|preempt_(key|record|view)_[a-z0-9_]*_|preempt_parse_u64_|__stack_chk_fail)$' "$TMP/ext" >"$TMP/bad"; then
        fail "$obj references $(tr '\n' ' ' <"$TMP/bad")"
    else
        ok
    fi
else
    fail "no view object in $shell"
fi

# The coordinator (lib/coord.c, coord-rounds.c, coord-effects.c: the
# running protocol; lib/startup.c, offers.c: start-up; lib/worker.c: the
# machine's shell side of a worker) runs on the typed port alone: every
# request goes out and every answer comes in through a table of function
# pointers (struct preempt_coord_io: the libevent and libcurl adapter is
# lib/coord-io.c, the simulator's is its own), the clock is the port's, and
# who the worker is (its pid and host) is the shell's configuration. Its
# objects, and the pure helpers they call (lib/port.c: a reply's accessors
# and the log formatter; lib/keys.c; lib/machine.c), reference no I/O,
# clock, libevent, libcurl, jansson or nanopb symbol: only allocation,
# string and formatting calls, and symbols defined by themselves, fsm/, the
# declared machines, the schema and the view (checked above). Seen
# failing: startup.o's getpid and gethostname, before they moved to the
# shell; and a call of the etcd client's, before port.c.
net="$(cd "$top_builddir" && pwd)/lib/.libs/libpreempt-net.a"
core="coord coord-rounds coord-effects coord-mem coord-shell startup offers worker port"
pure="keys machine records decl pub claim lost membership lease watch episode outcome phase joining restore decision links view"
# member PART: PART's object in its archive ($obj, $a: the coordinator's are libpreempt-net's)
member() {
    case " $core " in *" $1 "*) a=$net ;; *) a=$shell ;; esac
    obj=$(ar t "$a" | grep -- "-$1\.o\$")
}
: >"$TMP/core-defined"
for part in $core $pure; do
    member "$part"
    if [ -z "$obj" ] || ! (cd "$TMP" && ar x "$a" "$obj"); then
        fail "no $part object in $a"
        continue
    fi
    $NM --defined-only "$TMP/$obj" | awk 'NF == 3 { print $3 }' >>"$TMP/core-defined"
done
cat "$TMP/defined" >>"$TMP/core-defined"
sort -u -o "$TMP/core-defined" "$TMP/core-defined"
for part in $core keys machine; do
    member "$part" # extracted above
    [ -n "$obj" ] || continue
    $NM -u "$TMP/$obj" | awk '{ print $2 }' | grep -vE "$instr" | sort -u | comm -23 - "$TMP/core-defined" >"$TMP/ext"
    only_calls "$obj" " outside the core" 'calloc|malloc|realloc|free|memcpy|memmove|memset|memchr|memcmp|strcmp|strncmp|strlen|strdup|strchr|strrchr|strpbrk|strspn|strcspn|strstr|strtoul|strtoull|snprintf|vsnprintf|qsort|__errno_location|__stack_chk_fail|_GLOBAL_OFFSET_TABLE_'
done
grep -qx preempt_coord_fx_ "$TMP/core-defined" && ok || fail "nm found no preempt_coord_fx_ in the core (the test cannot see)"

# The running protocol's step (lib/coord.c, coord-rounds.c, coord-effects.c:
# typed inputs in, typed outputs out) allocates nothing and reads no
# clock: the input carries the time, the shell (coord-shell.c, which alone
# sees the port and the owner's callbacks) runs the outputs, and the
# memory is coord-mem.c's (setup, teardown, and the records of later
# episodes). Seen failing: coord.o's calloc and free, while the setup and
# teardown were in it.
for part in coord coord-rounds coord-effects; do
    member "$part" # extracted above
    [ -n "$obj" ] || continue
    $NM -u "$TMP/$obj" | awk '{ print $2 }' | grep -vE "$instr" | sort -u | comm -23 - "$TMP/core-defined" >"$TMP/ext"
    only_calls "$obj" " outside the core (the step)" 'memcpy|memmove|memset|memchr|memcmp|strcmp|strncmp|strlen|strchr|strrchr|strpbrk|strspn|strcspn|strstr|strtoul|strtoull|snprintf|vsnprintf|__errno_location|__stack_chk_fail|_GLOBAL_OFFSET_TABLE_'
done
member coord-mem
for f in coord_init coord_fini coord_hold coord_held_replay; do
    $NM --defined-only "$TMP/$obj" | grep -q " T $f\$" && ok || fail "$f is not coord-mem's (where the step's memory is)"
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
