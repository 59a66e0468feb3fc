# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The libpreempt authors
# fsmdump prints the one machine in three formats: each matches its golden
# file (a change to the table forces a reviewed `make golden`), the DOT
# renders with Graphviz and shows the six required states, --check passes,
# and a trace overlay marks the edges taken and the final state.
. "$top_srcdir/tests/lib.sh"
golden="$top_srcdir/tests/golden"
for fmt in dot mermaid table; do
    case $fmt in dot) ext=dot ;; mermaid) ext=mmd ;; table) ext=table ;; esac
    "$FSMDUMP" --format "$fmt" >"$TMP/fsm.$ext" || fail "fsmdump --format $fmt"
    if diff -u "$golden/preempt_fsm.$ext" "$TMP/fsm.$ext"; then
        ok
    else
        fail "fsmdump --format $fmt differs from tests/golden/preempt_fsm.$ext (run 'make golden' after reviewing)"
    fi
    for s in idle own-signal following step-agreed saving countdown final-save exit; do
        grep -q -- "$s" "$TMP/fsm.$ext" && ok || fail "$fmt lacks state $s"
    done
done
"$FSMDUMP" >"$TMP/default.dot" && cmp -s "$TMP/default.dot" "$TMP/fsm.dot" && ok || fail "dot is not the default format"

expect_rc 0 "$FSMDUMP" --check && expect_output "no problems"

if [ -n "${DOT:-}" ]; then
    if "$DOT" -Tsvg "$TMP/fsm.dot" >"$TMP/fsm.svg" 2>"$TMP/dot.err"; then
        ok
        for s in idle own-signal step-agreed countdown final-save exit; do
            title=$(echo "$s" | sed 's/-/\&#45;/g') # Graphviz escapes '-' in SVG titles
            grep -q "<title>$title</title>" "$TMP/fsm.svg" && ok || fail "the SVG has no node $s"
        done
    else
        fail "dot -Tsvg failed: $(cat "$TMP/dot.err")"
    fi
else
    fail "Graphviz dot not found (scripts/setup.sh installs graphviz)"
fi

# Overlay: the grace-period scenario takes saving -> countdown once and ends
# in exit. Each taken (from, event, to) is an edge of its own with its count;
# the edges not taken carry no label; the states show what they ignored and
# why; a legend explains the marks.
trace="$top_srcdir/tests/traces/002-local-grace-two-saves.trace"
expect_rc 0 "$FSMDUMP" --trace "$trace"
expect_output '"saving" -> "countdown" [label="ckpt-committed ×1", color="#d62728"'
expect_output '"own-signal" -> "step-agreed" [label="step-agreed ×2", color="#d62728"'
expect_output '"countdown" -> "exit" [color="#c8c8c8", arrowsize=0.6];'
grep '"exit" \[' "$TMP/out" | grep -q 'fillcolor' && ok || fail "the final state is not marked"
expect_output 'ignored step-reached ×2: training through the grace period'
expect_output 'trace: 13 records, final state exit'
expect_output '2 events changed nothing in the state that received them'
eq "taken edges (one per taken transition)" "$(grep -c 'penwidth=2.5' "$TMP/out")" 10
eq "a label on an edge not taken" "$(grep 'c8c8c8' "$TMP/out" | grep -c label)" 0
if [ -n "${DOT:-}" ]; then
    expect "dot renders the overlay" sh -c "'$FSMDUMP' --trace '$trace' | '$DOT' -Tsvg >'$TMP/trace.svg'"
fi
expect_rc 0 "$FSMDUMP" --format mermaid --trace "$trace" && expect_output "class exit final"
expect_rc 0 "$FSMDUMP" --format table --trace "$trace"
expect_output "countdown     step-reached      final-due      own-signal    request-final, arm-timer  | 1"

# the job coordinator's notice-record machine (lib/pub-internal.h), from the
# table the coordinator runs
expect_rc 0 "$FSMDUMP" --machine notice-record --check
expect_output "fsmdump: check: notice-record: 22 rows, 48 ignored pairs, no problems"
expect_rc 0 "$FSMDUMP" --machine notice-record --format table
expect_output "carried-stale  claim-won     putting        put"
expect_output "in-claim       the value stands only in this worker's claim (no notice/<me> written)"
eq "notice-record: one line per row" "$(grep -cE '^[a-z-]+ +[a-z-]+ +[a-z-]+ +(none|put|carry)$' "$TMP/out")" 22
expect_rc 0 "$FSMDUMP" --machine notice-record --format mermaid
expect_output 'state "putting-stale" as putting_stale'
expect_output "deferred --> carried : claim-sent / carry"
if [ -n "${DOT:-}" ]; then
    expect "dot renders the notice-record machine" sh -c "'$FSMDUMP' -m notice-record | '$DOT' -Tsvg >'$TMP/pub.svg'"
fi
# the coordinator's claim machine (lib/claim-internal.h)
expect_rc 0 "$FSMDUMP" --machine claim --check
expect_output "fsmdump: check: claim: 27 rows, 17 ignored pairs, no problems"
expect_rc 0 "$FSMDUMP" --machine claim --format table
expect_output "sent           stale-lease   await-lease    regrant"
eq "claim: one line per row" "$(grep -cE '^[a-z-]+ +[a-z-]+ +[a-z-]+ +(none|send|regrant)$' "$TMP/out")" 27
expect_rc 0 "$FSMDUMP" --machine claim --format mermaid
expect_output "await_lease --> sent : granted / send"
if [ -n "${DOT:-}" ]; then
    expect "dot renders the claim machine" sh -c "'$FSMDUMP' -m claim | '$DOT' -Tsvg >'$TMP/claim.svg'"
fi
# the coordinator's membership machine (lib/membership-internal.h): "left" ends it
expect_rc 0 "$FSMDUMP" --machine membership --check
expect_output "fsmdump: check: membership: 5 rows, 7 ignored pairs, no problems"
expect_rc 0 "$FSMDUMP" --machine membership --format table
expect_output "departed       next-episode  member         put-alive"
# the coordinator's episode machine (lib/episode-internal.h)
expect_rc 0 "$FSMDUMP" --machine episode --check
expect_output "fsmdump: check: episode: 9 rows, 15 ignored pairs, no problems"
expect_rc 0 "$FSMDUMP" --machine episode --format table
expect_output "active         all-withdrawn withdrawn      tell-withdrawn"
# preempt-launch's outcome (lib/outcome-internal.h): "failed" ends it
expect_rc 0 "$FSMDUMP" --machine launch-outcome --check
expect_output "fsmdump: check: launch-outcome: 10 rows, 10 ignored pairs, no problems"
expect_rc 0 "$FSMDUMP" --machine launch-outcome --format table
expect_output "app-failed-restartable  regroup       restartable             none"
# how a start-up phase ends (lib/phase-internal.h): "done" ends it
expect_rc 0 "$FSMDUMP" --machine phase-end --check
expect_output "fsmdump: check: phase-end: 7 rows, 18 ignored pairs, no problems"
expect_rc 2 "$FSMDUMP" --machine nonesuch
expect_output "unknown machine 'nonesuch' (handler, notice-record, claim, membership, episode, phase-end or launch-outcome)"
expect_rc 2 "$FSMDUMP" --machine notice-record --trace "$trace"
finish
