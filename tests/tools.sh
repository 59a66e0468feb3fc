# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The libpreempt authors
# Every tool as a user meets it: --version, a usage error in one line that
# names the tool as typed (never libtool's .libs/lt- path) and points to
# --help, and errors that carry their reason.
. "$top_srcdir/tests/lib.sh"
B=$top_builddir/tools
version=$(sed -n 's/^AC_INIT(\[libpreempt\], \[\([^]]*\)\].*/\1/p' "$top_srcdir/configure.ac")

for t in fsmdump preempt-replay preempt-trainer preempt-launch preemptctl preempt-ckpt preempt-exec; do
    expect_rc 0 "$B/$t" --version
    eq "$t --version" "$(cat "$TMP/out")" "$t (libpreempt) $version"
    expect_rc 0 "$B/$t" --help && expect_output "--version"
    for bad in --bogus -Z; do
        expect_rc 2 "$B/$t" $bad
        eq "$t $bad: lines" "$(wc -l <"$TMP/out")" 2
        eq "$t $bad: first line" "$(head -n 1 "$TMP/out")" "$t: unknown option '$bad'"
        eq "$t $bad: second line" "$(tail -n 1 "$TMP/out")" "Try '$t --help' for more information."
    done
done

# A missing value, a bad number, a missing required option.
expect_rc 2 "$B/preempt-trainer" --steps
eq "a missing value" "$(head -n 1 "$TMP/out")" "preempt-trainer: option '--steps' needs a value"
expect_rc 2 "$B/preempt-trainer" --steps ten --ckpt-dir "$TMP/c"
eq "a bad number" "$(head -n 1 "$TMP/out")" "preempt-trainer: --steps: 'ten' is not a number from 0 to 4294967295"
expect_rc 2 "$B/preempt-trainer" --steps 3
eq "a required option" "$(head -n 1 "$TMP/out")" "preempt-trainer: --ckpt-dir is required"
expect_rc 2 "$B/preempt-launch" --workers 0 -- true && expect_output "--workers: '0' is not a number from 1 to 256"
expect_rc 2 "$B/preemptctl" --etcd http://127.0.0.1:1 --timeout-ms 0 status j &&
    expect_output "--timeout-ms: '0' is not a number from 1 to 86400000"
expect_rc 2 "$B/preemptctl" --etcd http://127.0.0.1:1 frob j && expect_output "unknown command 'frob'"
expect_rc 2 "$B/fsmdump" extra && expect_output "fsmdump: unexpected argument 'extra'"

# A --ckpt-dir whose parent does not exist is an error, and nothing is created.
for mode in "" "--etcd http://127.0.0.1:1"; do
    # shellcheck disable=SC2086 # $mode is split on purpose
    expect_rc 2 "$TRAINER" --steps 3 --ckpt-dir "$TMP/missing/ckpt" $mode
    expect_output "$TMP/missing/ckpt: No such file or directory"
    expect "no directory was created ($mode)" test ! -e "$TMP/missing"
done
expect_rc 2 "$TRAINER" --steps 3 --ckpt-dir "$TMP/missing/ckpt"
expect_output "its parent directory does not exist"

# "cannot ..." carries the reason.
expect_rc 2 "$B/preemptctl" --etcd ftp://x status j
expect_output "etcd endpoint 'ftp://x' is not an http:// or https:// URL"
expect_output "cannot use --etcd ftp://x: Invalid argument"
expect_rc 2 "$REPLAY" --record "$TMP/missing/rec.bin" "$top_srcdir/tests/traces/001-local-grace0.trace"
expect_output "cannot write $TMP/missing/rec.bin: No such file or directory"
finish
