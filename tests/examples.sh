# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The libpreempt authors
# The README's C programs are examples/*.c, word for word, and they do what
# the README says: SIGTERM -> a checkpoint and exit 42; the restart resumes
# from it, says so, and finishes with exit 0; a corrupt checkpoint is
# reported through the log callback and the one before it is used.
. "$top_srcdir/tests/lib.sh"
builddir=$(cd "$top_builddir" && pwd)
srcdir=$(cd "$top_srcdir" && pwd)

for ex in sync async; do
    sed -n "/<!-- example:$ex -->/,/^\`\`\`\$/p" "$srcdir/README.md" | sed '1,2d;$d' >"$TMP/readme-$ex.c"
    expect "the README shows examples/$ex.c word for word" cmp -s "$TMP/readme-$ex.c" "$srcdir/examples/$ex.c"
done

for ex in sync async; do
    bin=$builddir/examples/$ex
    mkdir -p "$TMP/$ex" && cd "$TMP/$ex" || exit 1
    "$bin" >out1 2>err1 &
    pid=$!
    wait_handler "$pid" 30
    kill -TERM "$pid"
    reap 60 "$pid"
    eq "$ex: preempted" "$?" 42
    eq "$ex: one checkpoint" "$(ls ckpt | grep -c '^ckpt-')" 1
    step=$(ls ckpt | sed -n 's/^ckpt-0*\([0-9]\)/\1/p')
    expect_rc 0 "$bin"
    expect_output "resuming after step $step"
    expect_output "done: weights[1] = 1.000"
    eq "$ex: nothing more saved after the restart" "$(ls ckpt | grep -c '^ckpt-')" 1

    # Two checkpoints, the newer corrupted: the log callback says so and the
    # older one is restored.
    rm -rf ckpt
    "$bin" >/dev/null 2>&1 &
    pid=$!
    wait_handler "$pid" 30
    kill -TERM "$pid"
    reap 60 "$pid"
    "$bin" >/dev/null 2>&1 &
    pid=$!
    wait_handler "$pid" 30
    kill -TERM "$pid"
    reap 60 "$pid"
    eq "$ex: two checkpoints" "$(ls ckpt | grep -c '^ckpt-')" 2
    first=$(ls ckpt | grep '^ckpt-' | head -n 1 | sed 's/^ckpt-0*//')
    newest=$(ls -d ckpt/ckpt-* | tail -n 1)
    # one byte changed (flipped, never written over with itself)
    byte=$(od -An -tu1 -j100 -N1 "$newest/weights" | tr -d ' ')
    # shellcheck disable=SC2059 # the format is the byte, as an octal escape
    printf "\\$(printf %03o $((${byte:-0} ^ 255)))" | dd of="$newest/weights" bs=1 seek=100 conv=notrunc 2>/dev/null
    expect_rc 0 "$bin"
    expect_output "libpreempt: "
    expect_output "resuming after step $first"
    cd "$TMP" || exit 1
done
finish
