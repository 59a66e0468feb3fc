# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The libpreempt authors
# The etcd fixture the coordination tests build on: a real etcd on free
# loopback ports with a private data directory, answering through the v3
# JSON gateway, stopped by its PID and gone afterwards.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/etcd-lib.sh"
trap 'etcd_stop; rm -rf "$TMP"' EXIT

if etcd_start fixture; then
    ok
    case $ETCD_URL in http://127.0.0.1:*) ok ;; *) fail "not on loopback: $ETCD_URL" ;; esac
    eq "data directory mode" "$(stat -c %a "$ETCD_DIR")" 700
    expect_rc 0 etcdctl --endpoints="$ETCD_URL" put /lp-test/k v1
    expect_rc 0 etcdctl --endpoints="$ETCD_URL" get --print-value-only /lp-test/k
    expect_output v1
    # the JSON gateway: keys and values are base64 ("/lp-test/k" and "v1")
    expect_rc 0 curl -sf --max-time 10 -X POST "$ETCD_URL/v3/kv/range" -d '{"key":"L2xwLXRlc3Qvaw=="}'
    expect_output '"value":"djE="'
    pid=$ETCD_PID
    etcd_stop
    expect "etcd stopped by its PID" sh -c "! kill -0 $pid 2>/dev/null"
    expect_rc 1 etcdctl --endpoints="$ETCD_URL" --dial-timeout=1s --command-timeout=2s get /lp-test/k
fi
finish
