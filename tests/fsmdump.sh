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

# declared NAME ROWS IGNORED ACTIONS TABLE_LINE MERMAID_LINE: one of the
# small declared machines (lib/job/decl-internal.h), from the table that runs:
# checked (every pair a row, declared ignored or a terminal state's),
# tabulated one line per row with the ignored pairs and their reasons after,
# drawn in Mermaid and, with dot, SVG
declared() {
    expect_rc 0 "$FSMDUMP" --machine "$1" --check
    expect_output "fsmdump: check: $1: $2 rows, $3 ignored pairs (each declared, or a terminal state's), no problems"
    expect_rc 0 "$FSMDUMP" --machine "$1" --format table
    expect_output "$5"
    expect_output "$2 rows, $3 ignored pairs: every (state, input) pair is decided"
    eq "$1: one line per row" "$(grep -cE "^[a-z-]+ +[a-z-]+ +[a-z-]+ +($4)\$" "$TMP/out")" "$2"
    expect_rc 0 "$FSMDUMP" --machine "$1" --format mermaid
    expect_output "$6"
    if [ -n "${DOT:-}" ]; then
        expect "dot renders the $1 machine" sh -c "'$FSMDUMP' -m '$1' | '$DOT' -Tsvg >'$TMP/$1.svg'"
    fi
}
# the job coordinator's: where a worker's notice record stands
# (lib/job/pub-internal.h), its driver claim (claim-internal.h), its
# membership (membership-internal.h: "left" ends it), the current episode
# (episode-internal.h); how a start-up phase ends (phase-internal.h: "done"
# ends it); how a joining worker's offer is made and who writes the
# incarnation's shape (joining-internal.h: "made" ends the offer's, and
# answers there); preempt-launch's outcome (outcome-internal.h: "failed"
# ends it)
declared notice-record 22 48 'none|put|carry' "carried-stale  claim-won     putting        put" \
    "deferred --> carried : claim-sent / carry"
expect_rc 0 "$FSMDUMP" --machine notice-record --format table
expect_output "in-claim       the value stands only in this worker's claim (no notice/<me> written)"
expect_rc 0 "$FSMDUMP" --machine notice-record --format mermaid
expect_output 'state "putting-stale" as putting_stale'
declared claim 27 17 'none|send|regrant' "sent           stale-lease   await-lease    regrant" \
    "await_lease --> sent : granted / send"
declared membership 5 7 'none|put-alive|revoke' "departed       next-episode  member         put-alive" \
    "member --> member : granted / put-alive"
# its membership lease (lease-internal.h): kept alive, or a new one granted
declared lease 5 5 'none|grant' "kept           expired       granting       grant" \
    "granting --> kept : granted"
# the job's watch, or the reads standing in for it while it is down, and
# the driver's roll call (watch-internal.h)
declared watch 6 9 'none|read|apply' "reading        read          blind          apply" \
    "blind --> reading : tick / read"
declared roll-call 8 8 'none|read' "on-idle        due           on-reading     read" \
    "on_reading --> reading : next-episode"
# start-up's barriers await their record with the watch's table
declared await 6 9 'none|read|apply' "blind          tick          reading        read" \
    "reading --> blind : read / apply"
declared episode 9 15 'none|tell-withdrawn' "active         all-withdrawn withdrawn      tell-withdrawn" \
    "idle --> active : own"
declared phase-end 7 18 'none|run-end|revoke|release' "ending         end-revoke    revoking       revoke" \
    "ending --> done : end-keep / release"
declared offer 5 4 'none|offer-open|open|resolve|offer-join|join' "resolving      resolved      made           offer-join" \
    "none --> resolving : counter / resolve"
# what a join attempt's answer says, and whether this worker takes an
# earlier process's place ("joined" and "took-over" end it)
declared attempt 14 14 'none|count|recount|read-inc|wait-holder|rejoin|open-next' \
    "trying         still-starting taking-over    rejoin" "taking_over --> took_over : applied / count"
declared shape 5 1 'none|write|check|trust' "written        absent        written        trust" \
    "written --> unwritten : rejoined"
declared launch-outcome 10 10 'none' "app-failed-restartable  regroup       restartable             none" \
    "app_failed --> app_failed_restartable : resumable"
# what a worker proposed of a round's one decision (decision-internal.h)
declared decision 3 3 'none|propose-commit|propose-abort' "commit-proposed  next-episode  open             none" \
    "open --> commit_proposed : all-reported / propose-commit"
# a worker's start-up in a job (restore-internal.h: "training" and "failed"
# end it)
declared restore 11 44 'none|restore|start-fresh|report-ok|report-unusable|report-failed|train|set-aside|fail' \
    "barrier        job-unusable   joining        set-aside" "barrier --> joining : job-unusable / set-aside"
# the job coordinator's machines together (--machine job), by the part of
# a worker's life each belongs to: every one checked, each a cluster of its
# part in DOT, a composite state in Mermaid, a headed table; and the links
# by which they drive each other (lib/job/links-internal.h), each a node with
# an edge from its source and one to each state that takes what it posts
expect_rc 0 "$FSMDUMP" --machine job --check
expect_output "fsmdump: check: job: 14 machines in 2 parts, 133 rows, 41 links posting 113 inputs, no problems"
expect_rc 0 "$FSMDUMP" --machine job
expect_output 'subgraph "cluster_start_up" {'
expect_output '"restore/barrier" -> "restore/joining" [label="job-unusable / set-aside"];'
eq "job: a cluster per machine and per part" "$(grep -c 'subgraph "cluster_' "$TMP/out")" 16
eq "job: a node per link" "$(grep -c '^  "link/[a-z-]*" \[shape=ellipse' "$TMP/out")" 41
# a notice followed to a claim, a round's decision and the handler: the
# records' notice claims the episode, etcd's answer tells the handler
expect_output '"from/the records" -> "link/notice-read"'
expect_output '"link/notice-read" -> "claim/none" [label="notice"];'
expect_output '"link/claim-answer" -> "claim/sent" [label="won"];'
expect_output '"link/claim-answer" -> "from/handler" [label="claim-won"];'
expect_output '"link/decision-read" -> "from/handler" [label="ckpt-committed"];'
expect_output '"claim/await-lease" -> "link/regrant" [label="regrant", style=dashed];'
expect_output '"link/regrant" -> "lease/kept" [label="wanted"];'
expect_rc 0 "$FSMDUMP" --machine job --format mermaid
expect_output '    state "running" as running {'
expect_output '            claim__none --> claim__sent : notice / send'
expect_rc 0 "$FSMDUMP" --machine job --format table
expect_output "== start-up / restore: a worker's start-up in a job: join, restore, the restore barrier =="
expect_output "lease-granted (from etcd): etcd granted a new lease (the old one is no longer kept alive)"
expect_output "regrant (from a machine's action: claim's regrant): the claim's machine needs a new lease (regrant)"
eq "job: the rows of its machines" "$(grep -E '^[a-z-]+ +[a-z-]+ +[a-z-]+ +[a-z-]+$' "$TMP/out" | grep -vc '^from ')" 133
eq "job: a header per machine" "$(grep -c '^from  *input  *to  *action$' "$TMP/out")" 14
if [ -n "${DOT:-}" ]; then
    expect "dot renders the job's machines" sh -c "'$FSMDUMP' -m job | '$DOT' -Tsvg >'$TMP/job.svg'"
fi
expect_rc 2 "$FSMDUMP" --machine job --trace "$trace"
expect_rc 2 "$FSMDUMP" --machine nonesuch
expect_output "unknown machine 'nonesuch' (handler, job, notice-record, claim, membership, lease, watch, roll-call, await, episode, phase-end, offer, attempt, shape, launch-outcome, restore or decision)"
expect_rc 2 "$FSMDUMP" --machine notice-record --trace "$trace"
finish
