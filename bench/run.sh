#!/bin/sh
# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The libpreempt authors
# bench/run.sh: make bench. Starts a private etcd on free loopback ports
# (tests/etcd-lib.sh), runs preempt-bench against it with valgrind and
# strace when they are installed, and stops etcd by its PID. Arguments go to
# preempt-bench (--json FILE, --quick, --only, --trials, --ckpt-mib,
# --backends).
set -u
: "${top_srcdir:=.}" "${top_builddir:=.}"
TMP=$(mktemp -d "${TMPDIR:-/tmp}/preempt-bench.XXXXXX")
fail() {
    echo "bench: $*" >&2
}
. "$top_srcdir/tests/etcd-lib.sh"
trap 'etcd_stop; rm -rf "$TMP"' EXIT
trap 'exit 130' INT TERM

command -v etcd >/dev/null 2>&1 || { fail "etcd is not installed (scripts/setup.sh installs it)"; exit 1; }
etcd_start bench || exit 1
set -- --etcd "$ETCD_URL" --dir "$TMP" "$@"
[ -n "${VALGRIND:-}" ] && set -- --valgrind "$VALGRIND" "$@"
[ -n "${STRACE:-}" ] && set -- --strace "$STRACE" "$@"
"$top_builddir/bench/preempt-bench" "$@"
