# tests/etcd-lib.sh: a private etcd for integration tests (sourced after
# tests/lib.sh). It listens on loopback only, on free ports (a port taken
# by someone else makes etcd fail to bind; another pair is then tried), keeps
# its data in a private directory under $TMP, and is stopped by its PID.
#
#   etcd_start NAME     starts etcd; sets ETCD_URL, ETCD_PID, ETCD_DIR
#   etcd_stop           SIGTERM to ETCD_PID, bounded wait, then SIGKILL
#   etcd_restart        starts the stopped etcd again: same ports, same data
ETCD_PID=

etcd_start() {
    ETCD_DIR=$TMP/etcd-$1
    mkdir -p "$ETCD_DIR" && chmod 700 "$ETCD_DIR"
    ETCD_NAME=$1
    for _try in 1 2 3 4 5; do
        ETCD_CPORT=$((20000 + $(od -An -N2 -tu2 /dev/urandom | tr -d ' ') % 20000))
        ETCD_URL=http://127.0.0.1:$ETCD_CPORT
        rm -rf "$ETCD_DIR/data"
        etcd_launch && return 0
        etcd_stop
    done
    fail "etcd did not start; see $ETCD_DIR/etcd.log"
    return 1
}

# etcd_launch: starts etcd on ETCD_CPORT (peer port + 20000) with the data
# in ETCD_DIR/data and waits until it is healthy (10 s at most).
etcd_launch() {
    _p=$((ETCD_CPORT + 20000))
    etcd --name "$ETCD_NAME" --data-dir "$ETCD_DIR/data" \
        --listen-client-urls "$ETCD_URL" --advertise-client-urls "$ETCD_URL" \
        --listen-peer-urls "http://127.0.0.1:$_p" --initial-advertise-peer-urls "http://127.0.0.1:$_p" \
        --initial-cluster "$ETCD_NAME=http://127.0.0.1:$_p" --initial-cluster-state new \
        ${ETCD_EXTRA:-} --logger zap --log-outputs stderr >>"$ETCD_DIR/etcd.log" 2>&1 &
    ETCD_PID=$!
    _n=0
    while [ "$_n" -lt 100 ]; do # 10 s at most: start-up takes 0.2-2 s
        if ! kill -0 "$ETCD_PID" 2>/dev/null; then
            break # it exited: most likely a port in use
        fi
        if etcdctl --endpoints="$ETCD_URL" --dial-timeout=1s endpoint health >/dev/null 2>&1; then
            return 0
        fi
        _n=$((_n + 1))
        sleep 0.1
    done
    return 1
}

etcd_restart() {
    etcd_launch || fail "etcd did not restart; see $ETCD_DIR/etcd.log"
}

etcd_stop() {
    [ -n "$ETCD_PID" ] || return 0
    kill -TERM "$ETCD_PID" 2>/dev/null
    _n=0
    while kill -0 "$ETCD_PID" 2>/dev/null && [ "$_n" -lt 50 ]; do
        _n=$((_n + 1))
        sleep 0.1
    done
    kill -KILL "$ETCD_PID" 2>/dev/null
    wait "$ETCD_PID" 2>/dev/null
    ETCD_PID=
}
