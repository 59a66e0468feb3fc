# tests/etcd-lib.sh: a private etcd for integration tests (sourced after
# tests/lib.sh). It listens on loopback only, on free ports (a port taken
# by someone else makes etcd fail to bind; another pair is then tried), keeps
# its data in a private directory under $TMP, and is stopped by its PID.
#
#   etcd_start NAME     starts etcd; sets ETCD_URL, ETCD_PID, ETCD_DIR
#   etcd_stop           SIGTERM to ETCD_PID, bounded wait, then SIGKILL
ETCD_PID=

etcd_start() {
    ETCD_DIR=$TMP/etcd-$1
    mkdir -p "$ETCD_DIR" && chmod 700 "$ETCD_DIR"
    for _try in 1 2 3 4 5; do
        _c=$((20000 + $(od -An -N2 -tu2 /dev/urandom | tr -d ' ') % 20000))
        _p=$((_c + 20000))
        ETCD_URL=http://127.0.0.1:$_c
        rm -rf "$ETCD_DIR/data"
        etcd --name "$1" --data-dir "$ETCD_DIR/data" \
            --listen-client-urls "$ETCD_URL" --advertise-client-urls "$ETCD_URL" \
            --listen-peer-urls "http://127.0.0.1:$_p" --initial-advertise-peer-urls "http://127.0.0.1:$_p" \
            --initial-cluster "$1=http://127.0.0.1:$_p" --initial-cluster-state new \
            --logger zap --log-outputs stderr >>"$ETCD_DIR/etcd.log" 2>&1 &
        ETCD_PID=$!
        _n=0
        while [ "$_n" -lt 100 ]; do # 10 s at most: start-up takes 0.2-2 s
            if ! kill -0 "$ETCD_PID" 2>/dev/null; then
                break # it exited: most likely a port in use; try others
            fi
            if etcdctl --endpoints="$ETCD_URL" --dial-timeout=1s endpoint health >/dev/null 2>&1; then
                return 0
            fi
            _n=$((_n + 1))
            sleep 0.1
        done
        etcd_stop
    done
    fail "etcd did not start; see $ETCD_DIR/etcd.log"
    return 1
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
