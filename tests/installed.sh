# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The libpreempt authors
# make installcheck: the README's examples build against an installed
# prefix with nothing but pkg-config's flags (SAN_CFLAGS: a sanitized
# library needs its runtime linked first), and the sync one runs: SIGTERM
# -> exit 42 -> the restart finishes with exit 0.
set -u
: "${PKG_CONFIG:=pkg-config}" "${CC:=cc}"
. "$top_srcdir/tests/lib.sh" # $TMP, wait_handler
fail() { echo "installcheck: FAIL: $*"; exit 1; }

cflags=$($PKG_CONFIG --cflags libpreempt) || fail "pkg-config does not know libpreempt"
libs=$($PKG_CONFIG --libs libpreempt)
evlibs=$($PKG_CONFIG --cflags --libs libpreempt libevent) || fail "pkg-config: libevent"
# shellcheck disable=SC2086 # flags are split on purpose
$CC -std=gnu11 -Wall -Wextra -Werror ${SAN_CFLAGS:-} $cflags -o "$TMP/sync" "$top_srcdir/examples/sync.c" $libs ||
    fail "examples/sync.c does not build with: $cflags $libs"
# shellcheck disable=SC2086
$CC -std=gnu11 -Wall -Wextra -Werror ${SAN_CFLAGS:-} -o "$TMP/async" "$top_srcdir/examples/async.c" $evlibs ||
    fail "examples/async.c does not build with: $evlibs"
cd "$TMP" || exit 1
LD_LIBRARY_PATH=$LIBDIR ./sync >/dev/null 2>&1 &
pid=$!
wait_handler "$pid" 30
kill -TERM "$pid"
reap 60 "$pid"
rc=$?
[ "$rc" -eq 42 ] || fail "the installed sync example exited $rc on SIGTERM, not 42"
LD_LIBRARY_PATH=$LIBDIR ./sync >out 2>&1 || fail "the restarted sync example failed: $(cat out)"
grep -q "resuming after step" out || fail "the restart did not resume: $(cat out)"
# the API reference: a page per public function, and the overview
if [ -n "${MANDIR:-}" ]; then
    for p in man3/preempt_step_end.3 man3/preempt_handler_new.3 man3/preempt_save_snapshot.3 man7/libpreempt.7; do
        [ -f "$MANDIR/$p" ] || fail "$MANDIR/$p was not installed"
    done
    if command -v man >/dev/null 2>&1; then
        MANPATH=$MANDIR man -w 3 preempt_step_end >/dev/null 2>&1 || fail "man -w 3 preempt_step_end: not found in $MANDIR"
    fi
fi
echo "installcheck: the examples build with pkg-config ($cflags $libs) and run; the man pages are installed"
