# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The libpreempt authors
# The README's first command, end to end: scripts/demo.sh on the built tree
# (bounded), its exit status, and each claim it prints checked against the
# files it wrote, not against its own words.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/etcd-lib.sh" # pid_stop
builddir=$(cd "$top_builddir" && pwd)
out=$TMP/out

top_builddir=$builddir DEMO_OUT=$out timeout -k 5 180 sh "$top_srcdir/scripts/demo.sh" >"$TMP/demo.out" 2>"$TMP/demo.err"
rc=$?
eq "the demo's exit status" "$rc" 0
[ "$rc" -eq 0 ] || { sed 's/^/    /' "$TMP/demo.out" "$TMP/demo.err"; finish; }
eq "the demo writes nothing to stderr" "$(cat "$TMP/demo.err")" ""
d=$out/demo

# 1-3: the preempted run exited 42 and the restart ended in the reference state.
want=$(field "$d/reference.jsonl" done state_digest)
expect "the reference run has a digest" test -n "$want"
eq "the preempted run's exit code" "$(field "$d/preempted.jsonl" exit code)" 42
saved=$(field "$d/preempted.jsonl" saved step)
eq "the restart restored the saved step" "$(field "$d/restarted.jsonl" start restored_step)" "$saved"
eq "the restarted run's digest" "$(field "$d/restarted.jsonl" done state_digest)" "$want"
expect "the demo says the digests match" grep -qF "= the uninterrupted run's digest" "$TMP/demo.out"

# 4: the grace run saved twice, the second later than the first, then exited 42.
eq "the grace run's saves" "$(count_events "$d/grace.jsonl" saved)" 2
first=$(grep -F '"event":"saved"' "$d/grace.jsonl" | head -n 1 | sed 's/.*"step":\([0-9]*\).*/\1/')
last=$(field "$d/grace.jsonl" saved step)
expect "the grace run trained on between its saves ($first, $last)" test "$last" -gt "$first"
eq "the grace run's exit code" "$(field "$d/grace.jsonl" exit code)" 42

# 5: the diagrams exist.
for t in preempted grace; do
    expect "out/demo-$t.svg is an SVG" grep -q '<svg' "$out/demo-$t.svg"
done

# 6: four workers, one saved step, all four restored it and ended in the
# reference state; the timeline shows every worker.
m=$d/multi.jsonl
eq "workers that exited 42" "$(grep -F '"event":"exit"' "$m" | grep -cF '"code":42')" 4
eq "distinct saved steps" "$(grep -F '"event":"exit"' "$m" | sed 's/.*"saved_step":\([0-9]*\).*/\1/' | sort -u | wc -l)" 1
msaved=$(field "$m" exit saved_step)
eq "workers that restored the saved step" "$(grep -F '"event":"start"' "$m" | grep -cF "\"restored_step\":$msaved")" 4
eq "workers that ended in the reference state" "$(grep -F '"event":"done"' "$m" | grep -cF "\"state_digest\":\"$want\"")" 4
for w in 0 1 2 3; do
    expect "the timeline shows worker $w restore step $msaved" grep -qE "worker $w +restored step $msaved\$" "$TMP/demo.out"
done

# The demo's etcd is gone: no process keeps its data directory.
expect "the demo's etcd was stopped" sh -c "! pgrep -f -- '[-]-data-dir $d/etcd-demo' >/dev/null"
finish
