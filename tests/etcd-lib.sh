# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The libpreempt authors
# tests/etcd-lib.sh: a private etcd for integration tests (sourced after
# tests/lib.sh). It listens on loopback only, on free ports (a port taken
# by someone else makes etcd fail to bind; another pair is then tried), keeps
# its data in a private directory under $TMP, and is stopped by its PID.
#
#   etcd_start NAME     starts etcd; sets ETCD_URL, ETCD_PID, ETCD_DIR (ETCD_SCHEME=https
#                       and ETCD_EXTRA with the TLS flags make a TLS etcd)
#   etcd_stop           SIGTERM to ETCD_PID, bounded wait, then SIGKILL
#   etcd_restart        starts the stopped etcd again: same ports, same data
#   free_port LO SPAN   a random TCP port that nothing uses now
. "${top_srcdir:-.}/tests/wait-lib.sh" # poll
ETCD_PID=

# free_port LO SPAN: a random port in [LO, LO + SPAN) that no TCP socket of
# this machine uses now (listening, connected or closing: /proc/net/tcp*).
# Tests run side by side and each picks its ports at random: a port taken
# by another made a test fail ("Address already in use"). The range must
# lie below the kernel's ephemeral ports (ip_local_port_range, 32768 and up
# by default): any outgoing connection of a test running beside may take
# one of those between the pick and the bind (torch's rendezvous failed to
# bind its master port so). A range reaching into them is refused. A pick
# is reserved for an hour (reserve_port): a test that binds its port only
# later (a Slurm job's all-reduce, once the job runs) had it taken by a
# test beside it that picked the same port meanwhile ("cannot connect the
# workers through port 22303: Address already in use", CI, once).
# Ports 20000-31999 are etcd's (below); the other servers' are 10000-19999.
free_port() {
    read -r _eph _ </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || _eph=32768
    if [ $(($1 + $2)) -gt "$_eph" ]; then
        echo "free_port $1 $2: reaches the ephemeral ports ($_eph and up)" >&2
        return 1
    fi
    while :; do
        _fp=$(($1 + $(od -An -N2 -tu2 /dev/urandom | tr -d ' ') % $2))
        grep -q "$(printf ':%04X ' "$_fp")" /proc/net/tcp /proc/net/tcp6 2>/dev/null && continue
        reserve_port "$_fp" && break
    done
    echo "$_fp"
}

# reserve_port PORT: true when no test of this machine reserved PORT in the
# last hour (one directory per port: mkdir is atomic), and now this one has.
PORTS_DIR=${TMPDIR:-/tmp}/preempt-test-ports.$(id -u)
reserve_port() {
    mkdir -p "$PORTS_DIR" 2>/dev/null
    find "$PORTS_DIR" -mindepth 1 -maxdepth 1 -mmin +60 -exec rmdir {} + 2>/dev/null
    mkdir "$PORTS_DIR/$1" 2>/dev/null
}

# etcd's peer port is its client port + ETCD_PEER_OFFSET: client ports
# 20000-25999, peer ports 26000-31999, both below the ephemeral ports.
ETCD_PEER_OFFSET=6000

etcd_start() {
    ETCD_DIR=$TMP/etcd-$1
    mkdir -p "$ETCD_DIR" && chmod 700 "$ETCD_DIR"
    ETCD_NAME=$1
    for _try in 1 2 3 4 5; do
        ETCD_CPORT=$(free_port 20000 6000)
        reserve_port $((ETCD_CPORT + ETCD_PEER_OFFSET)) || continue
        ETCD_URL=${ETCD_SCHEME:-http}://127.0.0.1:$ETCD_CPORT
        rm -rf "$ETCD_DIR/data"
        etcd_launch && return 0
        etcd_stop
    done
    fail "etcd did not start; see $ETCD_DIR/etcd.log"
    return 1
}

# etcd_launch: starts etcd on ETCD_CPORT (peer port + ETCD_PEER_OFFSET) with the data
# in ETCD_DIR/data and waits until it is healthy (10 s at most).
etcd_launch() {
    _p=$((ETCD_CPORT + ETCD_PEER_OFFSET))
    etcd --name "$ETCD_NAME" --data-dir "$ETCD_DIR/data" \
        --listen-client-urls "$ETCD_URL" --advertise-client-urls "$ETCD_URL" \
        --listen-peer-urls "http://127.0.0.1:$_p" --initial-advertise-peer-urls "http://127.0.0.1:$_p" \
        --initial-cluster "$ETCD_NAME=http://127.0.0.1:$_p" --initial-cluster-state new \
        ${ETCD_EXTRA:-} --logger zap --log-outputs stderr >>"$ETCD_DIR/etcd.log" 2>&1 &
    ETCD_PID=$!
    # 10 s at most: start-up takes 0.2-2 s; one that exited most likely
    # found a port in use
    poll 10 etcd_settled && kill -0 "$ETCD_PID" 2>/dev/null
}
etcd_healthy() { etcdctl --endpoints="$1" --dial-timeout=1s endpoint health >/dev/null 2>&1; }
etcd_settled() { ! kill -0 "$ETCD_PID" 2>/dev/null || etcd_healthy "$ETCD_URL"; }

# etcd_watchers: the watches the test etcd has (its own metrics); wait_watchers
# N SECONDS: until it has N at least (a watcher started has read the job and
# is watching it)
etcd_watchers() {
    curl -s --max-time 10 "$ETCD_URL/metrics" | sed -n 's/^etcd_debugging_mvcc_watcher_total \([0-9]*\)$/\1/p'
}
has_watchers() { [ "$(etcd_watchers)" -ge "$1" ] 2>/dev/null; }
wait_watchers() { poll "$2" has_watchers "$1" || fail "etcd has not $1 watches after $2 s"; }

etcd_restart() {
    etcd_launch || fail "etcd did not restart; see $ETCD_DIR/etcd.log"
}

etcd_stop() {
    [ -n "$ETCD_PID" ] || return 0
    pid_stop "$ETCD_PID"
    ETCD_PID=
}

# pid_stop PID: SIGTERM, a bounded wait (5 s), then SIGKILL. Returns 0:
# a process that had already exited is stopped too (callers run it from
# EXIT traps under set -e, where a failure would become the script's status).
pid_stop() {
    kill_ours TERM "$1"
    poll 5 none_alive "$1" || true
    kill_ours KILL "$1"
    wait "$1" 2>/dev/null || true # bounded: SIGKILL
}

# ---- a cluster -----------------------------------------------------------------
#   etcd_cluster_start NAME N  N members on loopback, each with its own data
#                              dir; sets CLUSTER_URLS (comma-separated, member
#                              order) and CLUSTER_PIDS; waits until all are healthy
#   etcd_cluster_member I      (re)starts member I on its ports and data
#   etcd_cluster_url I         member I's client URL
#   etcd_cluster_pid I         member I's PID
#   etcd_cluster_leader        the leader's index (empty: none)
#   etcd_cluster_stop          stops every member still running
CLUSTER_PIDS=

etcd_cluster_start() {
    CLUSTER_NAME=$1 CLUSTER_N=$2
    for _try in 1 2 3; do
        CLUSTER_BASE=$((20000 + $(od -An -N2 -tu2 /dev/urandom | tr -d ' ') % 12000)) # below the ephemeral ports
        _ok=1 _k=0
        while [ "$_k" -lt $((2 * $2)) ]; do # each member's client and peer port, reserved (free_port)
            reserve_port $((CLUSTER_BASE + _k)) || _ok=
            _k=$((_k + 1))
        done
        [ -n "$_ok" ] || continue
        CLUSTER_URLS= CLUSTER_INIT= CLUSTER_PIDS=
        _i=0
        while [ "$_i" -lt "$2" ]; do
            CLUSTER_URLS="$CLUSTER_URLS${CLUSTER_URLS:+,}http://127.0.0.1:$((CLUSTER_BASE + 2 * _i))"
            CLUSTER_INIT="$CLUSTER_INIT${CLUSTER_INIT:+,}$1$_i=http://127.0.0.1:$((CLUSTER_BASE + 2 * _i + 1))"
            rm -rf "$TMP/etcd-$1-$_i" && mkdir -p "$TMP/etcd-$1-$_i" && chmod 700 "$TMP/etcd-$1-$_i"
            CLUSTER_PIDS="$CLUSTER_PIDS -"
            _i=$((_i + 1))
        done
        _i=0
        while [ "$_i" -lt "$2" ]; do
            etcd_cluster_member "$_i"
            _i=$((_i + 1))
        done
        etcd_cluster_healthy && return 0
        etcd_cluster_stop # most likely a port in use: another set of ports
    done
    fail "the etcd cluster did not start; see $TMP/etcd-$1-*/etcd.log"
    return 1
}

etcd_cluster_member() {
    _c=http://127.0.0.1:$((CLUSTER_BASE + 2 * $1)) _p=http://127.0.0.1:$((CLUSTER_BASE + 2 * $1 + 1))
    _d=$TMP/etcd-$CLUSTER_NAME-$1
    etcd --name "$CLUSTER_NAME$1" --data-dir "$_d/data" --listen-client-urls "$_c" --advertise-client-urls "$_c" \
        --listen-peer-urls "$_p" --initial-advertise-peer-urls "$_p" --initial-cluster "$CLUSTER_INIT" \
        --initial-cluster-state new --initial-cluster-token "$CLUSTER_NAME-$CLUSTER_BASE" \
        --logger zap --log-outputs stderr >>"$_d/etcd.log" 2>&1 &
    CLUSTER_PIDS=$(echo $CLUSTER_PIDS | awk -v i="$1" -v p="$!" '{ $(i + 1) = p; print }')
}

# etcd_cluster_healthy: every member answers (15 s at most: an election takes 1-3 s)
etcd_cluster_healthy() { poll 15 etcd_healthy "$CLUSTER_URLS"; }

etcd_cluster_pid() {
    echo $CLUSTER_PIDS | cut -d' ' -f$(($1 + 1))
}

etcd_cluster_url() {
    echo "$CLUSTER_URLS" | cut -d, -f$(($1 + 1))
}

etcd_cluster_leader() {
    _i=0
    for _u in $(echo "$CLUSTER_URLS" | tr , ' '); do
        if etcdctl --endpoints="$_u" --dial-timeout=1s endpoint status -w simple 2>/dev/null |
            awk -F', ' '$5 == "true" { found = 1 } END { exit !found }'; then
            echo "$_i"
            return 0
        fi
        _i=$((_i + 1))
    done
}

etcd_cluster_stop() {
    for _p in $CLUSTER_PIDS; do [ "$_p" = - ] || pid_stop "$_p"; done
    CLUSTER_PIDS=
}
