# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The libpreempt authors
# The guide's C programs are examples/*.c, word for word, the README's is
# a part of examples/sync.c, and they do what the guide says: SIGTERM -> a checkpoint and exit 42; the restart resumes
# from it, says so, and finishes with exit 0; a corrupt checkpoint is
# reported through the log callback and the one before it is used.
. "$top_srcdir/tests/lib.sh"
builddir=$(cd "$top_builddir" && pwd)
srcdir=$(cd "$top_srcdir" && pwd)

guide=$srcdir/docs/guide/c-api.md
for ex in sync async; do
    sed -n "/<!-- example:$ex -->/,/^\`\`\`\$/p" "$guide" | sed '1,2d;$d' >"$TMP/guide-$ex.c"
    expect "docs/guide/c-api.md shows examples/$ex.c word for word" cmp -s "$TMP/guide-$ex.c" "$srcdir/examples/$ex.c"
done
# the README's C trainer is examples/sync.c's save callback and main(), as they are there
sed -n "/<!-- excerpt:sync -->/,/^\`\`\`\$/p" "$srcdir/README.md" | sed '1,2d;$d' >"$TMP/readme-sync.c"
expect "the README shows a part of examples/sync.c" test "$(wc -l <"$TMP/readme-sync.c")" -ge 20
while IFS= read -r line; do
    [ -n "$line" ] || continue
    grep -qxF -- "$line" "$srcdir/examples/sync.c" || { fail "the README's C trainer has a line examples/sync.c lacks: $line"; break; }
done <"$TMP/readme-sync.c"
expect "the README's C trainer is examples/sync.c's save callback and main(), in order" python3 -c '
import sys
part, whole = open(sys.argv[1]).read(), open(sys.argv[2]).read()
save, main = part.split("\n\n", 1)
sys.exit(0 if save + "\n" in whole and main in whole and whole.index(save) < whole.index(main) else 1)' \
    "$TMP/readme-sync.c" "$srcdir/examples/sync.c"

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
