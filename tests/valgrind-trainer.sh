# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The libpreempt authors
# The reference trainer under valgrind's memcheck through a preemption, a
# grace period, a restart and both API forms: no error, no leak. Run by
# `make check-valgrind` (with VALGRIND and LIBTOOL set).
. "$top_srcdir/tests/lib.sh"
VG="$LIBTOOL --mode=execute $VALGRIND -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite,indirect"

vg() { # WANT ARGS...: the trainer's status under valgrind
    want=$1
    shift
    $VG "$TRAINER" "$@" >"$TMP/out" 2>&1
    rc=$?
    eq "valgrind preempt-trainer $*" "$rc" "$want"
    [ "$rc" = "$want" ] || sed 's/^/    /' "$TMP/out"
}

vg 42 --ckpt-dir "$TMP/c" --steps 60 --raise-at 20 --trace "$TMP/t" --verbose
# the grace period: a save at the notice, training on, and the final round.
# Its bound must hold a save under memcheck on a loaded machine: with 600 ms
# (a 504 ms deadline) the machine once planned no save at all and exited
# 75 (make check beside it, CI); with 3 s the first save always fits, so
# the exit is 42 whether the final round commits or not, and 100000 steps
# of 5 ms cannot end before the deadline
vg 42 --ckpt-dir "$TMP/c" --steps 100000 --raise-at 30 --async --grace-ms 3000 --step-ms 5
# the restart restores that save and trains 30 steps past it
S=$(sed -n 's/.*"event":"exit".*"saved_step":\([0-9]*\).*/\1/p' "$TMP/out")
expect "the grace run saved a step past the notice's ($S)" test "${S:-0}" -gt 30
vg 0 --ckpt-dir "$TMP/c" --steps $((${S:-0} + 30)) --async
expect "the restart resumed at it" grep -q "\"restored_step\":${S:-x}," "$TMP/out"
vg 42 --ckpt-dir "$TMP/d" --steps 60 --raise-at 2 --custom-save
vg 3 --ckpt-dir "$TMP/e" --steps 60 --fail-at 7

# The cloud sources under memcheck: a GCE notice through a long poll, AWS
# with expiring tokens and an advisory notice, a dead Azure endpoint.
FAKE="$top_builddir/tests/fake/fake-metadata"
mkdir -p "$TMP/md/computeMetadata/v1/instance" "$TMP/md/latest/meta-data/events/recommendations"
echo NONE >"$TMP/md/computeMetadata/v1/instance/maintenance-event"
echo TRUE >"$TMP/md/computeMetadata/v1/instance/preempted"
echo 200 >"$TMP/md/token_life_ms"
echo '{"noticeTime": "2026-11-21T08:22:00Z"}' >"$TMP/md/latest/meta-data/events/recommendations/rebalance"
"$FAKE" "$TMP/md" >"$TMP/md.log" 2>&1 &
fake_pid=$!
wait_for "$TMP/md.log" "port " 5
MURL="http://127.0.0.1:$(awk '/^port/ { print $2 }' "$TMP/md.log")"
vg 143 --ckpt-dir "$TMP/g" --steps 100000 --step-ms 5 --platform gce --metadata-url "$MURL"
vg 0 --ckpt-dir "$TMP/a" --steps 200 --step-ms 5 --platform aws --metadata-url "$MURL" --metadata-poll-ms 50
vg 0 --ckpt-dir "$TMP/z" --steps 50 --step-ms 5 --platform azure --metadata-url http://127.0.0.1:1 --metadata-poll-ms 20
kill "$fake_pid"

# Multi-worker against a private etcd: worker 0 under valgrind, worker 1
# plain. A preemption with a grace period (raised by worker 1), then an
# error on worker 0 propagated to worker 1. The grace period, 10 s, leaves
# room for the first save and the final round of a worker under memcheck
# on a loaded machine: 1 s did not beside make check (worker 0 had not
# saved by the deadline: 75 on both).
. "$top_srcdir/tests/etcd-lib.sh"
trap 'etcd_stop; rm -rf "$TMP"' EXIT
etcd_start vg || finish
peer() { # ARGS...: worker 1 in the background
    "$TRAINER" --etcd "$ETCD_URL" --worker 1 --workers 2 "$@" >"$TMP/peer.out" 2>&1 &
    peer_pid=$!
}
peer --job vg1 --ckpt-dir "$TMP/m" --steps 4000 --step-ms 10 --grace-ms 10000 --raise-at 100
vg 42 --etcd "$ETCD_URL" --worker 0 --workers 2 --job vg1 --ckpt-dir "$TMP/m" --steps 4000 --step-ms 10 --grace-ms 10000
reap 300 "$peer_pid"
eq "the plain peer exits 42 too" "$?" 42
peer --job vg2 --ckpt-dir "$TMP/n" --steps 4000 --step-ms 5
vg 3 --etcd "$ETCD_URL" --worker 0 --workers 2 --job vg2 --ckpt-dir "$TMP/n" --steps 4000 --fail-at 50
reap 300 "$peer_pid"
eq "the plain peer exits with the propagated code" "$?" 3
finish
