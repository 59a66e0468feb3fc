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
finish
