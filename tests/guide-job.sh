# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The libpreempt authors
# tests/guide-job.sh: the guide's first job (docs/guide/getting-started.md,
# sample "job-local"), run as a user types it: etcd, two reference
# trainers under preempt-launch, an operator's notice, the history. The
# block is taken from the guide, not copied here; what changes is only what
# must be the test's own: etcd's ports (free ones, its peer port named too)
# and the directories (under $TMP), and --steps 3000 becomes 600 (a run of
# 6 s, not 30). Between the commands the test waits for what the user
# waits for: etcd up, both workers training, the job restarted.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/etcd-lib.sh" # free_port, reserve_port, etcd_healthy, pid_stop
export PATH="$top_builddir/tools:$PATH"
EPID= LPID=
trap 'kill_ours KILL $LPID; [ -z "$EPID" ] || pid_stop "$EPID"; rm -rf "$TMP"' EXIT

CP=$(free_port 20000 6000) && PP=$((CP + ETCD_PEER_OFFSET)) && reserve_port "$PP" || { fail "no free port"; finish; }
# the block, its continuation lines joined: one command a line
doc_sample job-local >"$TMP/block" || { fail "the guide has no sample job-local"; finish; }
sed -e :a -e '/\\$/N; s/\\\n//; ta' "$TMP/block" | sed -e 's/  */ /g' \
    -e "s#http://127.0.0.1:2379#http://127.0.0.1:$CP#g" -e "s#/tmp/etcd-demo#$TMP/etcd-demo --listen-peer-urls \
http://127.0.0.1:$PP --initial-advertise-peer-urls http://127.0.0.1:$PP --initial-cluster default=http://127.0.0.1:$PP#" \
    -e "s#/tmp/demo#$TMP/demo#g" -e 's/--steps 3000 /--steps 600 /' >"$TMP/cmds"
eq "the sample is four commands: etcd, the launch, the notice, the history" "$(wc -l <"$TMP/cmds")" 4
cmd() { sed -n "$1p" "$TMP/cmds"; }
expect "the first starts etcd in the background" sh -c "cmd=\$(sed -n 1p '$TMP/cmds'); test \"\${cmd#etcd }\" != \"\$cmd\" && test \"\${cmd%&}\" != \"\$cmd\""
expect "the second launches two workers in the background" sh -c "sed -n 2p '$TMP/cmds' | grep -q '^preempt-launch --workers 2 -- preempt-trainer .*&\$'"

# 1: etcd
c=$(cmd 1)
eval "${c%&} >\"\$TMP/etcd.log\" 2>&1 &"
EPID=$!
URL=http://127.0.0.1:$CP
expect "etcd, as the guide starts it, is healthy" poll 20 etcd_healthy "$URL"
[ "$failures" -eq 0 ] || { tail -n 20 "$TMP/etcd.log"; finish; }

# 2: the job; the workers' lines come through the launcher
c=$(cmd 2)
eval "${c%&} >\"\$TMP/launch.out\" 2>\"\$TMP/launch.err\" &"
LPID=$!
wait_lines "$TMP/launch.out" '"event":"start"' 2 60 && ok
[ "$failures" -eq 0 ] || { tail -n 20 "$TMP/launch.err"; finish; }

# 3: the operator's notice: "both save one step, exit 42, are restarted"
expect_rc 0 sh -c "$(cmd 3)"
wait_lines "$TMP/launch.out" '"reason":"preempted"' 2 60 && ok
wait_lines "$TMP/launch.out" '"event":"start"' 4 60 && ok
reap 120 "$LPID"
eq "the launch ends when the restarted job has trained its steps" "$?" 0
LPID=
saved=$(grep -F '"event":"exit"' "$TMP/launch.out" | grep -F '"reason":"preempted"' |
    sed 's/.*"saved_step":\([0-9]*\).*/\1/' | sort -u | tr '\n' ' ')
expect "both saved one step ($saved)" sh -c "test \$(echo $saved | wc -w) -eq 1 && test ${saved:-0} -gt 0"
restored=$(grep -F '"event":"start"' "$TMP/launch.out" | tail -n 2 | sed 's/.*"restored_step":\([0-9]*\).*/\1/' | tr '\n' ' ')
eq "the restarted workers resumed at it" "$restored" "$saved$saved"
eq "both ended at the last step" "$(grep -c '"event":"done","worker":[01],"step":600,' "$TMP/launch.out")" 2

# 4: the history: "how each run ended, and the restart's time"
expect_rc 0 sh -c "$(cmd 4)"
expect_output "job demo: 2 incarnation(s) in the history"
expect "the history: the first run ended by the operator's notice" grep -qE '^incarnation 1 .*notice: operator' "$TMP/out"
expect "the history: the restart's time" grep -qE '^incarnation 2 .* restart [0-9.]+ s' "$TMP/out"
[ "$failures" -eq 0 ] || { sed 's/^/    /' "$TMP/cmds" "$TMP/out"; tail -n 20 "$TMP/launch.err"; }
finish
