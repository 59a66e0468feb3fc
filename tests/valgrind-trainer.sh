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
vg 42 --ckpt-dir "$TMP/c" --steps 60 --raise-at 30 --async --grace-ms 600 --step-ms 5
vg 0 --ckpt-dir "$TMP/c" --steps 60 --async
vg 42 --ckpt-dir "$TMP/d" --steps 60 --raise-at 2 --custom-save
vg 3 --ckpt-dir "$TMP/e" --steps 60 --fail-at 7

# Multi-worker against a private etcd: worker 0 under valgrind, worker 1
# plain. A preemption with a grace period (raised by worker 1), then an
# error on worker 0 propagated to worker 1.
. "$top_srcdir/tests/etcd-lib.sh"
trap 'etcd_stop; rm -rf "$TMP"' EXIT
etcd_start vg || finish
peer() { # ARGS...: worker 1 in the background
    "$TRAINER" --etcd "$ETCD_URL" --worker 1 --workers 2 "$@" >"$TMP/peer.out" 2>&1 &
    peer_pid=$!
}
peer --job vg1 --ckpt-dir "$TMP/m" --steps 4000 --step-ms 10 --grace-ms 1000 --raise-at 100
vg 42 --etcd "$ETCD_URL" --worker 0 --workers 2 --job vg1 --ckpt-dir "$TMP/m" --steps 4000 --step-ms 10 --grace-ms 1000
wait "$peer_pid"
eq "the plain peer exits 42 too" "$?" 42
peer --job vg2 --ckpt-dir "$TMP/n" --steps 4000 --step-ms 5
vg 3 --etcd "$ETCD_URL" --worker 0 --workers 2 --job vg2 --ckpt-dir "$TMP/n" --steps 4000 --fail-at 50
wait "$peer_pid"
eq "the plain peer exits with the propagated code" "$?" 3
finish
