# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The libpreempt authors
# The Python package, as a Python trainer uses it: examples/python_trainer.py
# run under preempt-exec by Debian's /usr/bin/python3, synchronous and on an
# asyncio loop (the handler driven through its descriptor), alone and as a
# 2-worker job on a real etcd. SIGTERM (to one worker, or to all) saves,
# exits 42, and the restart ends with the uninterrupted run's digest. Then
# the API details with pytest (tests/python/).
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/etcd-lib.sh"
. "$top_srcdir/tests/job-lib.sh"
trap 'job_kill; etcd_stop; rm -rf "$TMP"' EXIT
. "$top_srcdir/tests/python-lib.sh"
PT="$top_srcdir/examples/python_trainer.py"
STEPS=400

REF=$("$EXEC" -- $PY "$PT" --ckpt-dir "$TMP/ref" --steps $STEPS | sed -n 's/.*"digest": "\([0-9a-f]*\)".*/\1/p')
expect "an uninterrupted Python run prints a digest" test -n "$REF"

# local: SIGTERM once training began, then the restart
for mode in sync async; do
    flag=
    [ "$mode" = async ] && flag=--async
    PREEMPT_TERMINATION_LOG="$TMP/l-$mode.term" "$EXEC" -- $PY "$PT" --ckpt-dir "$TMP/l-$mode" --steps $STEPS \
        --step-ms 5 $flag >"$TMP/l-$mode.out" 2>"$TMP/l-$mode.err" &
    pid=$!
    wait_for "$TMP/l-$mode.out" '"event": "start"' 20
    kill -TERM "$pid"
    reap 60 "$pid"
    eq "local $mode: SIGTERM saves and exits 42" "$?" 42
    saved=$(sed -n 's/.*"saved_step": \([0-9]*\).*/\1/p' "$TMP/l-$mode.out")
    expect "local $mode: a saved step ($saved)" test -n "$saved"
    # the package honours PREEMPT_TERMINATION_LOG (the library reads it)
    expect "local $mode: the termination record names the saved step" $PY -c '
import json, sys
r = json.load(open(sys.argv[1]))
assert r["reason"] == "saved" and r["committed_step"] == int(sys.argv[2]) and r["notice_source"] == "signal", r
' "$TMP/l-$mode.term" "$saved"
    "$EXEC" -- $PY "$PT" --ckpt-dir "$TMP/l-$mode" --steps $STEPS $flag >"$TMP/l-$mode.2" 2>&1
    eq "local $mode: the restart completes" "$?" 0
    eq "local $mode: resumed at the saved step" "$(sed -n 's/.*"restored_step": \([0-9]*\).*/\1/p' "$TMP/l-$mode.2")" "$saved"
    eq "local $mode: the uninterrupted digest" "$(sed -n 's/.*"digest": "\([0-9a-f]*\)".*/\1/p' "$TMP/l-$mode.2")" "$REF"
    [ "$failures" -eq 0 ] || sed 's/^/    /' "$TMP/l-$mode.err" | tail -n 8
done

# two workers on etcd: SIGTERM to worker 0 (sync) or to both (async)
etcd_start python || finish
for mode in sync async; do
    flag=
    [ "$mode" = async ] && flag=--async
    PIDS=
    for i in 0 1; do
        "$EXEC" -- $PY "$PT" --ckpt-dir "$TMP/j-$mode" --steps $STEPS --step-ms 5 $flag --etcd "$ETCD_URL" \
            --job "py-$mode" --worker $i --workers 2 >"$TMP/j-$mode.$i.out" 2>"$TMP/j-$mode.$i.err" &
        PIDS="$PIDS $!"
    done
    for i in 0 1; do wait_for "$TMP/j-$mode.$i.out" '"event": "start"' 30; done
    # shellcheck disable=SC2086 # the pids, split
    if [ "$mode" = sync ]; then set -- $PIDS; kill -TERM "$1"; else kill -TERM $PIDS; fi
    job_wait 60
    eq "job $mode: every worker saved" "$RCS" "42 42"
    s0=$(sed -n 's/.*"saved_step": \([0-9]*\).*/\1/p' "$TMP/j-$mode.0.out")
    s1=$(sed -n 's/.*"saved_step": \([0-9]*\).*/\1/p' "$TMP/j-$mode.1.out")
    expect "job $mode: one saved step ($s0, $s1)" test -n "$s0" -a "$s0" = "$s1"
    PIDS=
    for i in 0 1; do
        "$EXEC" -- $PY "$PT" --ckpt-dir "$TMP/j-$mode" --steps $STEPS $flag --etcd "$ETCD_URL" --job "py-$mode" \
            --worker $i --workers 2 >"$TMP/j-$mode.$i.2" 2>"$TMP/j-$mode.$i.err2" &
        PIDS="$PIDS $!"
    done
    job_wait 60
    eq "job $mode: the restart completes" "$RCS" "0 0"
    for i in 0 1; do
        eq "job $mode: worker $i resumed at the saved step" \
            "$(sed -n 's/.*"restored_step": \([0-9]*\).*/\1/p' "$TMP/j-$mode.$i.2")" "$s0"
        eq "job $mode: worker $i has the uninterrupted digest" \
            "$(sed -n 's/.*"digest": "\([0-9a-f]*\)".*/\1/p' "$TMP/j-$mode.$i.2")" "$REF"
    done
    [ "$failures" -eq 0 ] || for i in 0 1; do sed 's/^/    /' "$TMP/j-$mode.$i.err" | tail -n 6; done
done

# Ctrl-C while worker 0 waits for a worker that never comes: the blocking
# start-up ends at once with KeyboardInterrupt (before: the whole 60 s
# bound, then the interrupt was lost in a callback).
# (A shell starts background commands with SIGINT ignored, and Python then
# installs no handler: env gives it the terminal's default back.)
"$EXEC" -- env --default-signal=INT $PY "$PT" --ckpt-dir "$TMP/int" --steps 10 --etcd "$ETCD_URL" --job py-int --worker 0 --workers 2 \
    >"$TMP/int.out" 2>"$TMP/int.err" &
pid=$!
# worker 0 has joined (its member record is in etcd) and waits for worker 1
joined0() { etcdctl --endpoints="$ETCD_URL" get --prefix --keys-only /preempt/py-int/ | grep -q '/w/alive/0$'; }
wait_until 30 "Ctrl-C: worker 0 joined" joined0
_s=$(date +%s)
kill -INT "$pid"
reap 10 "$pid"
rc=$?
expect "Ctrl-C during start-up: KeyboardInterrupt within 5 s (took $(($(date +%s) - _s)) s, status $rc)" \
    sh -c "test $(($(date +%s) - _s)) -lt 5 && grep -q KeyboardInterrupt '$TMP/int.err'"
[ "$failures" -eq 0 ] || sed 's/^/    /' "$TMP/int.err" | tail -n 6

# the README's Python example (its first Python block), as printed there
sed -n '/^```python$/,/^```$/{p;/^```$/q}' "$top_srcdir/README.md" | sed '1d;$d' >"$TMP/readme.py"
(cd "$TMP" && "$EXEC" -- $PY readme.py) >"$TMP/readme.out" 2>&1
eq "the README's Python example runs" "$?/$(cat "$TMP/readme.out")" "0/done: weights[0] = 500.500"

# pip installs the package from the repository without the network
cp -R "$top_srcdir/python" "$TMP/pysrc"
chmod -R u+w "$TMP/pysrc"
$PY -m pip install -q --no-build-isolation --no-index --no-deps --target "$TMP/site" "$TMP/pysrc" >"$TMP/pip" 2>&1
eq "pip install ./python, offline" "$?" 0
eq "the installed package loads the library" \
    "$(PYTHONPATH="$TMP/site" $PY -c 'import libpreempt; print(libpreempt.__file__.startswith("'"$TMP/site"'"), libpreempt.version())')" \
    "True $(sed -n 's/^AC_INIT(\[libpreempt\], \[\([^]]*\)\].*/\1/p' "$top_srcdir/configure.ac")"

# the API's details (the PyTorch helper's are tests/pytorch-helper.sh's)
"$EXEC" -- $PY -m pytest -q -p no:cacheprovider "$top_srcdir/tests/python/test_libpreempt.py" >"$TMP/pytest" 2>&1
rc=$?
sed 's/^/    /' "$TMP/pytest" | tail -n 15
eq "pytest tests/python/test_libpreempt.py" "$rc" 0
passed=$(grep -o '[0-9]* passed' "$TMP/pytest" | tail -n 1 | cut -d' ' -f1)
expect "pytest ran its tests ($passed passed)" test "${passed:-0}" -ge 5
# on_peer_lost: two asyncio workers, worker 1 hangs (SIGSTOP); worker 0's
# callback runs on its loop within the lease bound (2 s here), where a DDP
# trainer would destroy its process group. Then worker 1 is killed and
# worker 0, signalled, cannot commit without it: 75.
PIDS=
for i in 0 1; do
    "$EXEC" -- $PY "$PT" --ckpt-dir "$TMP/pl" --steps 100000 --step-ms 5 --async --etcd "$ETCD_URL" --job py-pl \
        --worker $i --workers 2 --lease-ttl 2 --watch-peers >"$TMP/pl.$i.out" 2>"$TMP/pl.$i.err" &
    PIDS="$PIDS $!"
done
for i in 0 1; do wait_for "$TMP/pl.$i.out" '"event": "start"' 30; done
set -- $PIDS
kill -STOP "$2"
wait_for "$TMP/pl.0.out" '"event": "peer-lost"' 15
expect "on_peer_lost: worker 0 was told of worker 1" grep -q '"event": "peer-lost", "worker": 0, "peer": 1' "$TMP/pl.0.out"
kill -KILL "$2"
kill -TERM "$1"
PIDS=$1
job_wait 60
eq "on_peer_lost: worker 0, signalled, cannot commit without worker 1" "$RCS" 75
[ "$failures" -eq 0 ] || sed 's/^/    /' "$TMP/pl.0.out" "$TMP/pl.0.err" | tail -n 20
finish
