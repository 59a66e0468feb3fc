# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The libpreempt authors
# tests/pytorch.sh's bitwise check can fail: without the example's
# per-parameter gradient hook, DDP's own bucketed all-reduce sums a
# restored run's gradients in another order, and the run drifts from the
# uninterrupted one (4 ranks over gloo on a real etcd, SIGTERM to one).
# Not a test of the library: of that check's power. In make check-long.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/etcd-lib.sh"
. "$top_srcdir/tests/job-lib.sh"
trap 'job_kill; etcd_stop; rm -rf "$TMP"' EXIT
. "$top_srcdir/tests/ddp-lib.sh" # W=4 ranks, STEPS=200

etcd_start pytorch-nohook || finish
reference nohook-ref --no-hook
preempt nohook one --no-hook
restart nohook --no-hook
d=$(same nohook $W done digest)
expect "without the hook: the restored run drifts ($d, uninterrupted $REF)" \
    sh -c "test -n '$d' && test '${d#differs}' = '$d' && test '$d' != '$REF'"
finish
