# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The libpreempt authors
# make installcheck: the README's examples build against an installed
# prefix with nothing but pkg-config's flags, and the guide's first sample
# runs as typed: SIGTERM -> exit 42 -> the restart finishes with exit 0.
set -u
: "${PKG_CONFIG:=pkg-config}" "${CC:=cc}"
top_srcdir=$(cd "$top_srcdir" && pwd) # the samples run in $TMP
. "$top_srcdir/tests/lib.sh" # $TMP, wait_handler, doc_sample
fail() { echo "installcheck: FAIL: $*"; exit 1; }

cflags=$($PKG_CONFIG --cflags libpreempt) || fail "pkg-config does not know libpreempt"
libs=$($PKG_CONFIG --libs libpreempt)
evlibs=$($PKG_CONFIG --cflags --libs libpreempt libevent) || fail "pkg-config: libevent"
# shellcheck disable=SC2086
$CC -std=gnu11 -Wall -Wextra -Werror ${SAN_CFLAGS:-} -o "$TMP/async" "$top_srcdir/examples/async.c" $evlibs ||
    fail "examples/async.c does not build with: $evlibs"
[ -z "${LIBDIR:-}" ] || export LD_LIBRARY_PATH="$LIBDIR"

# The guide's samples as a user types them (doc_sample): the first one
# (getting-started.md, "sync-local": build examples/sync.c with
# pkg-config, run it, SIGTERM, run it again) and the build line of
# install.md ("pkg-config", a trainer.c of one's own: examples/sync.c).
# What is the test's own: the compiler and its flags ($CC with -Werror,
# SAN_CFLAGS: a sanitized library needs its runtime linked first), the
# example's path, and a wait for the handler before the kill (a user types
# it while the run trains).
cmds() { sed 's/ *#.*//' "$TMP/$1.block" >"$TMP/$1.cmds"; }
cc_line() { # LINE: the sample's compiler line, with the test's compiler
    echo "$1" | sed -e 's#^cc #$CC -std=gnu11 -Wall -Wextra -Werror ${SAN_CFLAGS:-} #' \
        -e 's#pkg-config #$PKG_CONFIG #' -e 's#examples/sync.c#"$top_srcdir/examples/sync.c"#'
}
doc_sample sync-local >"$TMP/sync-local.block" || fail "no sample sync-local in the guide"
cmds sync-local
l1=$(sed -n 1p "$TMP/sync-local.cmds") l2=$(sed -n 2p "$TMP/sync-local.cmds")
l3=$(sed -n 3p "$TMP/sync-local.cmds") l4=$(sed -n 4p "$TMP/sync-local.cmds")
# shellcheck disable=SC2016 # $! as the sample has it
[ "$l2" = "./sync &" ] && [ "$l3" = 'kill -TERM $!' ] && [ "$l4" = "./sync" ] ||
    fail "the sample sync-local is no longer build, run, kill, run again: $(cat "$TMP/sync-local.cmds")"
cd "$TMP" || exit 1
eval "$(cc_line "$l1")" || fail "the sample's build line failed: $l1 ($cflags $libs)"
eval "${l2%&} >/dev/null 2>&1 &"
pid=$!
wait_handler "$pid" 30
eval "$l3"
reap 60 "$pid"
rc=$?
[ "$rc" -eq 42 ] || fail "the installed sync example exited $rc on SIGTERM, not 42"
eval "$l4" >out 2>&1 || fail "the restarted sync example failed: $(cat out)"
grep -q "resuming after step" out || fail "the restart did not resume: $(cat out)"
grep -q "done: weights\[1\] = 1.000" out || fail "the restart did not end as the sample says: $(cat out)"
doc_sample pkg-config >"$TMP/pkg-config.block" || fail "no sample pkg-config in the guide"
cmds pkg-config
cp "$top_srcdir/examples/sync.c" trainer.c
eval "$(cc_line "$(cat "$TMP/pkg-config.cmds")")" && [ -x trainer ] || fail "install.md's build line failed"
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
