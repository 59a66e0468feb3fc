# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The libpreempt authors
# Cloud notice sources end to end: the reference trainer against a fake
# metadata service on loopback (tests/fake/fake-metadata) that serves each
# cloud's real formats and rules (headers, ETags and long polls, IMDSv2
# tokens that expire, 404 for "no notice", scheduled events that get
# cancelled), plus slow, hung, dead and malformed endpoints. Waits are
# bounded and only guard against hangs; no assertion is about speed.
. "$top_srcdir/tests/lib.sh"
FAKE="$top_builddir/tests/fake/fake-metadata"
unset PREEMPT_PLATFORM

# serve NAME: starts a fake service on $TMP/NAME (files under it); sets URL and FAKE_PID.
serve() {
    mkdir -p "$TMP/$1"
    "$FAKE" "$TMP/$1" >"$TMP/$1.log" 2>&1 &
    FAKE_PID=$!
    FAKE_LOG=$TMP/$1.log
    wait_for "$TMP/$1.log" "port " 5 || return 1
    URL="http://127.0.0.1:$(awk '/^port/ { print $2 }' "$TMP/$1.log")"
}
stop_fake() { kill_ours TERM "$FAKE_PID"; reap 10 "$FAKE_PID"; }
put() { # FILE CONTENT: atomically, so the service never reads half a file
    mkdir -p "$(dirname "$1")"
    printf '%s' "$2" >"$1.tmp" && mv "$1.tmp" "$1"
}
train() { # NAME ARGS...: in the background; pid in $pid
    _n=$1
    shift
    "$TRAINER" --ckpt-dir "$TMP/$_n.ck" --verbose "$@" >"$TMP/$_n.out" 2>"$TMP/$_n.err" &
    pid=$!
}
finish_bg() { reap 120 "$pid"; rc=$?; }
# polled TEXT [N]: waits until the service has logged N (default 1) more
# requests for TEXT (a path) than it had when called: the trainer has read
# what the path says now. mark TEXT, then long_polled TEXT: a GCE long
# poll (a WAIT line: the trainer read the value and waits for a change
# with its ETag) came since the mark; the WAIT holds until the value
# changes, so it is counted from before the trainer started
polled() {
    wait_lines "$FAKE_LOG" "$1" $(($(grep -cF -- "$1" "$FAKE_LOG") + ${2:-1})) 20
}
mark() { MARK=$(grep -cF -- "$1" "$FAKE_LOG"); }
long_polled() { wait_lines "$FAKE_LOG" "$1" $((MARK + 1)) 20; }
between() { # WHAT VALUE LO HI
    if [ -n "$2" ] && [ "$2" -ge "$3" ] && [ "$2" -le "$4" ]; then ok; else fail "$1: $2 not in [$3, $4]"; fi
}
REF=$("$TRAINER" --platform none --ckpt-dir "$TMP/ref.ck" --steps 300 | sed -n 's/.*"state_digest":"\([0-9a-f]*\)".*/\1/p')
expect "an uninterrupted run prints a digest" test -n "$REF"

# ---- GCE: preempted TRUE, seen through a long poll --------------------------
serve gce
G=$TMP/gce/computeMetadata/v1/instance
put "$G/maintenance-event" NONE
put "$G/preempted" FALSE
train gce1 --platform gce --metadata-url "$URL" --steps 100000 --step-ms 5
wait_for "$TMP/gce1.out" '"event":"start"' 10
eq "platform" "$(field "$TMP/gce1.out" start platform)" gce
eq "GCE exit code default" "$(field "$TMP/gce1.out" start exit_code)" 143
eq "GCE grace default without a GPU" "$(field "$TMP/gce1.out" start grace_ms)" 0
wait_for "$TMP/gce.log" "GET /computeMetadata/v1/instance/preempted 200" 10
put "$G/preempted" TRUE
finish_bg
eq "GCE preemption exits with 143" "$rc" 143
eq "notice source" "$(field "$TMP/gce1.out" notice source)" gce
between "preempted TRUE: 30 s lead" "$(field "$TMP/gce1.out" notice deadline_in_ms)" 25000 30000
eq "saved" "$(field "$TMP/gce1.out" exit reason)" preempted
expect "a long poll with the ETag was made" grep -q "WAIT /computeMetadata/v1/instance/preempted " "$TMP/gce.log"
_n=$(grep -c "instance/preempted" "$TMP/gce.log")
between "long polls, not a busy poll: requests for preempted" "$_n" 2 6

# ---- GCE GPU: TERMINATE_ON_HOST_MAINTENANCE, default grace 3600 s ------------
put "$G/preempted" FALSE
train gpu --platform gce-gpu --metadata-url "$URL" --steps 400 --step-ms 10
wait_for "$TMP/gpu.out" '"event":"start"' 10
eq "GCE GPU grace default" "$(field "$TMP/gpu.out" start grace_ms)" 3600000
put "$G/maintenance-event" TERMINATE_ON_HOST_MAINTENANCE
finish_bg
eq "with an hour of grace, training finishes" "$rc" 0
between "a GPU VM's maintenance notice: 60 min" "$(field "$TMP/gpu.out" notice deadline_in_ms)" 3590000 3600000
expect "the first checkpoint, then training through the countdown" grep -q '"to":"countdown"' "$TMP/gpu.out"
eq "the run finishes with the uninterrupted digest" "$(field "$TMP/gpu.out" done state_digest)" \
    "$("$TRAINER" --platform none --ckpt-dir "$TMP/ref400.ck" --steps 400 | sed -n 's/.*"state_digest":"\([0-9a-f]*\)".*/\1/p')"

# an explicit grace of 0 on a GPU machine is kept (TF: grace if grace or grace == 0)
put "$G/maintenance-event" NONE
train gpu0 --platform gce-gpu --grace-ms 0 --metadata-url "$URL" --steps 100000 --step-ms 5
wait_for "$TMP/gpu0.out" '"event":"start"' 10
eq "explicit grace 0 is honoured" "$(field "$TMP/gpu0.out" start grace_ms)" 0
wait_for "$TMP/gce.log" "GET /computeMetadata/v1/instance/maintenance-event 200" 10
put "$G/maintenance-event" TERMINATE_ON_HOST_MAINTENANCE
finish_bg
eq "grace 0: exit after the first save" "$rc" 143
eq "one save" "$(count_events "$TMP/gpu0.out" saved)" 1

# MIGRATE_ON_HOST_MAINTENANCE is advisory: a checkpoint, then training goes on
put "$G/maintenance-event" NONE
mark "WAIT /computeMetadata/v1/instance/maintenance-event"
train mig --platform gce --metadata-url "$URL" --steps 300 --step-ms 10
wait_for "$TMP/mig.out" '"event":"start"' 10
long_polled "WAIT /computeMetadata/v1/instance/maintenance-event"
put "$G/maintenance-event" MIGRATE_ON_HOST_MAINTENANCE
finish_bg
eq "advisory: training finishes" "$rc" 0
eq "advisory: one opportunistic checkpoint" "$(count_events "$TMP/mig.out" saved)" 1
expect "advisory: back to idle" grep -q '"to":"idle"' "$TMP/mig.out"
eq "advisory: the digest of an uninterrupted run" "$(field "$TMP/mig.out" done state_digest)" "$REF"
train mig2 --platform gce --no-advisory --metadata-url "$URL" --steps 100 --step-ms 5
finish_bg
eq "--no-advisory: no checkpoint" "$rc/$(count_events "$TMP/mig2.out" saved)" 0/0

# an unknown value and a missing header are not notices
put "$G/maintenance-event" SOMETHING_NEW
train odd --platform gce --metadata-url "$URL" --steps 100 --step-ms 5
finish_bg
eq "unknown value: no notice" "$rc/$(count_events "$TMP/odd.out" notice)" 0/0
expect "unknown value: logged" grep -q 'unknown value "SOMETHING_NEW"' "$TMP/odd.err"
expect_rc 0 curl -s --max-time 10 -o /dev/null "$URL/computeMetadata/v1/instance/preempted"
expect "the fake refuses requests without Metadata-Flavor" grep -q "instance/preempted 403" "$TMP/gce.log"

# TERMINATE_ON_HOST_MAINTENANCE on an ordinary VM comes 60 s ahead (it was
# taken as a notice without a deadline: the 30 s bound)
put "$G/maintenance-event" NONE
mark "WAIT /computeMetadata/v1/instance/maintenance-event"
train term60 --platform gce --metadata-url "$URL" --steps 100000 --step-ms 5
wait_for "$TMP/term60.out" '"event":"start"' 10
long_polled "WAIT /computeMetadata/v1/instance/maintenance-event"
put "$G/maintenance-event" TERMINATE_ON_HOST_MAINTENANCE
finish_bg
eq "TERMINATE: exit 143" "$rc" 143
between "TERMINATE on an ordinary VM: 60 s" "$(field "$TMP/term60.out" notice deadline_in_ms)" 55000 60000

# gce-gpu: a SIGTERM during the hour's countdown is the VM shutting down
# (ACPI soft-off, hard off 30 s later): it cuts the deadline short (it did
# not: the trainer planned for the hour)
put "$G/maintenance-event" NONE
mark "WAIT /computeMetadata/v1/instance/maintenance-event"
train gsig --platform gce-gpu --metadata-url "$URL" --steps 1000000 --step-ms 5 --trace "$TMP/gsig.trace"
wait_for "$TMP/gsig.out" '"event":"start"' 10
long_polled "WAIT /computeMetadata/v1/instance/maintenance-event"
put "$G/maintenance-event" TERMINATE_ON_HOST_MAINTENANCE
wait_for "$TMP/gsig.out" '"to":"countdown"' 10
kill -TERM "$pid"
wait_for "$TMP/gsig.trace" "ev=notice source=signal" 10
kill -KILL "$pid"
finish_bg
sig_lead=$(sed -n 's/.* t=\([0-9]*\) .*ev=notice source=signal deadline=\([0-9]*\) .*/\2 \1/p' "$TMP/gsig.trace" | awk '{ print $1 - $2 }')
between "gce-gpu: the SIGTERM's deadline is 30 s" "$sig_lead" 29000 30000
expect "gce-gpu: the countdown is re-armed for it" grep -qE "ev=notice source=signal .*=> countdown -> countdown .*arm-timer" "$TMP/gsig.trace"

# an ETag with characters a query must escape ('+' reads as a space): the
# long poll carries it intact and is held (it was sent raw and answered at once)
put "$TMP/gce/etag_opaque" 1
put "$G/maintenance-event" NONE
put "$G/preempted" FALSE
train etag --platform gce --metadata-url "$URL" --steps 1000000 --step-ms 5
wait_for "$TMP/gce.log" "WAIT /computeMetadata/v1/instance/maintenance-event v1+" 10
expect "opaque ETag: sent intact" grep -q "WAIT /computeMetadata/v1/instance/maintenance-event v1+[0-9a-f]*/==$" "$TMP/gce.log"
put "$G/maintenance-event" TERMINATE_ON_HOST_MAINTENANCE
finish_bg
eq "opaque ETag: the change arrives through the long poll" "$rc/$(field "$TMP/etag.out" notice source)" 143/gce
rm -f "$TMP/gce/etag_opaque"

# GCE_METADATA_HOST (Google's clients and emulators set it) chooses the
# service; localhost is read as 127.0.0.1; a name that is not an address is
# not resolved (a resolver thread): warned about, GCE_METADATA_IP is used
put "$G/maintenance-event" NONE
put "$G/preempted" TRUE
GCE_METADATA_IP=127.0.0.1:1 GCE_METADATA_HOST=localhost:${URL##*:} "$TRAINER" --platform gce --ckpt-dir "$TMP/host.ck" --steps 100000 \
    --step-ms 5 >"$TMP/host.out" 2>&1
eq "GCE_METADATA_HOST" "$?/$(field "$TMP/host.out" notice source)" 143/gce
GCE_METADATA_HOST=metadata.example GCE_METADATA_IP=${URL#http://} "$TRAINER" --platform gce --ckpt-dir "$TMP/host2.ck" \
    --steps 100000 --step-ms 5 >"$TMP/host2.out" 2>&1
eq "GCE_METADATA_HOST a name: GCE_METADATA_IP instead" "$?/$(field "$TMP/host2.out" notice source)" 143/gce
expect "GCE_METADATA_HOST a name: warned" grep -q "GCE_METADATA_HOST=metadata.example is a host name" "$TMP/host2.out"

# instance/upcoming-maintenance (404 while none): a window announced is an
# advisory checkpoint, once per window; training goes on
put "$G/maintenance-event" NONE
put "$G/preempted" FALSE
train upc --platform gce --metadata-url "$URL" --metadata-poll-ms 50 --steps 600 --step-ms 5
wait_for "$TMP/upc.out" '"event":"start"' 10
polled instance/upcoming-maintenance
put "$G/upcoming-maintenance" "{\"type\": \"SCHEDULED\", \"maintenanceStatus\": \"PENDING\", \"canReschedule\": true,
 \"windowStartTime\": \"$(date -u -d '+2 days' +%Y-%m-%dT%H:%M:%SZ)\", \"windowEndTime\": \"$(date -u -d '+3 days' +%Y-%m-%dT%H:%M:%SZ)\"}"
finish_bg
eq "upcoming maintenance: one checkpoint, training finishes" "$rc/$(count_events "$TMP/upc.out" saved)" 0/1
expect "upcoming maintenance: named" grep -q "upcoming-maintenance SCHEDULED PENDING" "$TMP/upc.err"
rm -f "$G/upcoming-maintenance"

# GCE_METADATA_IP chooses the service when no URL is configured
put "$G/maintenance-event" NONE
put "$G/preempted" TRUE
GCE_METADATA_IP=${URL#http://} "$TRAINER" --platform gce --ckpt-dir "$TMP/ip.ck" --steps 100000 --step-ms 5 \
    >"$TMP/ip.out" 2>&1
eq "GCE_METADATA_IP" "$?/$(field "$TMP/ip.out" notice source)" 143/gce
stop_fake

# ---- AWS: IMDSv2 tokens that expire, 404 until the instance action ----------
serve aws
A=$TMP/aws/latest/meta-data
put "$TMP/aws/token_life_ms" 300
train aws1 --platform aws --metadata-url "$URL" --metadata-poll-ms 100 --steps 100000 --step-ms 5
wait_for "$TMP/aws1.out" '"event":"start"' 10
eq "AWS exit code default" "$(field "$TMP/aws1.out" start exit_code)" 42
wait_for "$TMP/aws.log" "GET /latest/meta-data/spot/instance-action 401" 10 # a token expired
wait_for "$TMP/aws.log" "GET /latest/meta-data/spot/instance-action 404" 10
put "$A/spot/instance-action" "{\"action\": \"terminate\", \"time\": \"$(date -u -d '+90 seconds' +%Y-%m-%dT%H:%M:%SZ)\"}"
finish_bg
eq "AWS spot notice: saved, 42" "$rc" 42
eq "notice source" "$(field "$TMP/aws1.out" notice source)" aws
between "the action's time is the deadline" "$(field "$TMP/aws1.out" notice deadline_in_ms)" 80000 90000
_n=$(grep -c "PUT /latest/api/token 200" "$TMP/aws.log")
between "expired tokens were renewed" "$_n" 2 100000
expect "every read after a refused token used a new one" grep -q "refused (expired?)" "$TMP/aws1.err"

# a body that cannot be read is still a notice (120 s, the documented lead)
put "$A/spot/instance-action" '{"action": "terminate", "time": "soon"'
train aws2 --platform aws --metadata-url "$URL" --metadata-poll-ms 100 --steps 100000 --step-ms 5
finish_bg
eq "malformed instance action: still a notice" "$rc" 42
between "malformed: 120 s lead" "$(field "$TMP/aws2.out" notice deadline_in_ms)" 110000 120000
expect "malformed: logged" grep -q "cannot read" "$TMP/aws2.err"

# the rebalance recommendation is advisory
rm -f "$A/spot/instance-action"
train aws3 --platform aws --metadata-url "$URL" --metadata-poll-ms 100 --steps 300 --step-ms 10
wait_for "$TMP/aws3.out" '"event":"start"' 10
polled events/recommendations/rebalance
put "$A/events/recommendations/rebalance" '{"noticeTime": "2026-11-21T08:22:00Z"}'
# AWS's emulator moves noticeTime between requests: still one recommendation
# (before: a checkpoint for every change)
for _s in 01 02 03 04; do
    polled events/recommendations/rebalance
    put "$A/events/recommendations/rebalance" "{\"noticeTime\": \"2026-11-21T08:22:$_s""Z\"}"
done
finish_bg
eq "rebalance: training finishes" "$rc" 0
eq "rebalance: one checkpoint" "$(count_events "$TMP/aws3.out" saved)" 1
eq "rebalance: the digest of an uninterrupted run" "$(field "$TMP/aws3.out" done state_digest)" "$REF"
rm -f "$A/events/recommendations/rebalance"

# An instance action whose time moves later between requests re-notifies
# nothing (only an earlier deadline does): with second = exit the trainer
# left after its first save and dropped its grace period.
act() { put "$A/spot/instance-action" "{\"action\": \"terminate\", \"time\": \"$(date -u -d "+$1 seconds" +%Y-%m-%dT%H:%M:%SZ)\"}"; }
act 90
train aws4 --platform aws --metadata-url "$URL" --metadata-poll-ms 50 --grace-ms 3000 --second exit --steps 3000 \
    --step-ms 5
wait_for "$TMP/aws4.out" '"event":"notice"' 10
act 95
polled spot/instance-action
act 100
finish_bg
eq "a moving instance-action time: one notice, both saves, exit 42" \
    "$(count_events "$TMP/aws4.out" notice)/$(count_events "$TMP/aws4.out" saved)/$rc" 1/2/42
rm -f "$A/spot/instance-action"

# Scheduled events (events/maintenance/scheduled, dates as AWS writes them,
# without a weekday): one days ahead is an advisory checkpoint once; the
# same event 5 min ahead is a notice with its NotBefore; completed and
# canceled ones count for nothing (they were not read at all)
sched() { # CODE STATE SECONDS-AHEAD
    put "$A/events/maintenance/scheduled" "[{\"NotBefore\": \"$(LC_ALL=C date -u -d "+$3 seconds" '+%d %b %Y %H:%M:%S GMT')\",
 \"Code\": \"$1\", \"Description\": \"scheduled\", \"EventId\": \"instance-event-0d59937288b749b32\",
 \"NotAfter\": \"$(LC_ALL=C date -u -d "+$(($3 + 7200)) seconds" '+%d %b %Y %H:%M:%S GMT')\", \"State\": \"$2\"},
 {\"NotBefore\": \"yesterday\", \"Code\": \"instance-stop\", \"EventId\": \"instance-event-bad\", \"State\": \"active\"}]"
}
sched instance-stop active 259200
train sched1 --platform aws --metadata-url "$URL" --metadata-poll-ms 50 --steps 100000 --step-ms 5
wait_for "$TMP/sched1.out" '"event":"saved"' 10
polled events/maintenance/scheduled 3 # read again, three times, and nothing more came of it
eq "scheduled 3 days ahead: one advisory checkpoint, training goes on" \
    "$(count_events "$TMP/sched1.out" saved)/$(count_events "$TMP/sched1.out" exit)" 1/0
expect "an unreadable event is skipped, said once" test "$(grep -c 'cannot be read and are skipped' "$TMP/sched1.err")" -eq 1
sched instance-stop active 240
finish_bg
eq "scheduled 4 min ahead: a notice, saved, exit 42" "$rc/$(field "$TMP/sched1.out" notice source)" 42/aws
between "scheduled: its NotBefore is the deadline" "$(field "$TMP/sched1.out" notice deadline_in_ms)" 230000 240000
sched system-reboot completed 60
train sched2 --platform aws --metadata-url "$URL" --metadata-poll-ms 50 --steps 300 --step-ms 5
finish_bg
eq "a completed event: nothing" "$rc/$(count_events "$TMP/sched2.out" saved)" 0/0
rm -f "$A/events/maintenance/scheduled"

# The Auto Scaling group takes the instance out (target-lifecycle-state)
put "$A/autoscaling/target-lifecycle-state" InService
train asg1 --platform aws --metadata-url "$URL" --metadata-poll-ms 50 --steps 100000 --step-ms 5
wait_for "$TMP/asg1.out" '"event":"start"' 10
polled autoscaling/target-lifecycle-state
put "$A/autoscaling/target-lifecycle-state" Warmed:Stopped
finish_bg
eq "lifecycle Warmed:Stopped: a notice, saved, exit 42" "$rc/$(count_events "$TMP/asg1.out" saved)" 42/1
expect "lifecycle: named" grep -q "target-lifecycle-state Warmed:Stopped" "$TMP/asg1.err"
rm -f "$A/autoscaling/target-lifecycle-state"
stop_fake

# IMDSv1 when the token never comes (a container behind hop limit 1): the
# instance action is read all the same (before: never read at all)
serve aws1
A=$TMP/aws1/latest/meta-data
put "$TMP/aws1/imdsv1" 1
put "$TMP/aws1/latest/api/token.delay_ms" 60000
act 90
train aws5 --platform aws --metadata-url "$URL" --metadata-poll-ms 100 --steps 3000 --step-ms 5
finish_bg
eq "hop limit 1: the instance action through IMDSv1, saved, 42" "$(count_events "$TMP/aws5.out" saved)/$rc" 1/42
expect "hop limit 1: the token failure is said" grep -q "IMDSv2 token" "$TMP/aws5.err"
stop_fake

# ---- Azure: Scheduled Events, other VMs, cancellation ------------------------
serve az
Z=$TMP/az/metadata
put "$Z/instance/compute/name" vm-7
events() { # JSON array body
    put "$Z/scheduledevents" "{\"DocumentIncarnation\": $1, \"Events\": [$2]}"
}
ev() { # ID TYPE VM NOTBEFORE
    printf '{"EventId": "%s", "EventStatus": "Scheduled", "EventType": "%s", "ResourceType": "VirtualMachine", "Resources": ["%s"], "NotBefore": "%s", "Description": "", "EventSource": "Platform", "DurationInSeconds": -1}' "$1" "$2" "$3" "$4"
}
nb() { LC_ALL=C date -u -d "+$1 seconds" '+%a, %d %b %Y %H:%M:%S GMT'; }
events 1 ""
train az1 --platform azure --metadata-url "$URL" --metadata-poll-ms 100 --grace-ms 20000 --steps 600 --step-ms 10
wait_for "$TMP/az1.out" '"event":"start"' 10
events 2 "$(ev A1 Preempt vm-3 "$(nb 40)"), $(ev A2 Freeze vm-7 "$(nb 40)")"
polled /metadata/scheduledevents 2 # one read wholly after the put: other VMs' events and a Freeze, no notice
events 3 "$(ev A1 Preempt vm-3 "$(nb 40)"), $(ev A3 Preempt vm-7 "$(nb 40)")"
wait_for "$TMP/az1.out" '"to":"countdown"' 20
events 4 "$(ev A1 Preempt vm-3 "$(nb 40)")" # A3 cancelled
finish_bg
eq "cancelled: training finishes" "$rc" 0
eq "notice source" "$(field "$TMP/az1.out" notice source)" azure
between "NotBefore is the deadline (capped by the grace)" "$(field "$TMP/az1.out" notice deadline_in_ms)" 15000 20000
expect "cancelled: back to idle from the countdown" grep -q '"from":"countdown","to":"idle"' "$TMP/az1.out"
expect "other VMs' events and Freeze are not notices" test "$(count_events "$TMP/az1.out" notice)" -eq 1
expect "the VM's name was read" grep -q "this VM is vm-7" "$TMP/az1.err"
eq "cancelled: the digest of an uninterrupted run" "$(field "$TMP/az1.out" done state_digest)" \
    "$("$TRAINER" --platform none --ckpt-dir "$TMP/ref600.ck" --steps 600 | sed -n 's/.*"state_digest":"\([0-9a-f]*\)".*/\1/p')"

# Once the preemption's checkpoint is committed, the events this trainer
# gave notice of are approved (StartRequests), so that Azure goes ahead
# before NotBefore; other VMs' events are not; --no-azure-approve sends none
events 5 "$(ev A4 Preempt vm-7 "$(nb 40)"), $(ev A5 Preempt vm-3 "$(nb 40)")"
train az9 --platform azure --metadata-url "$URL" --metadata-poll-ms 50 --steps 100000 --step-ms 5
finish_bg
eq "approval: saved, exit 42" "$rc/$(count_events "$TMP/az9.out" saved)" 42/1
expect "approval: this VM's event approved after the commit" grep -qF 'APPROVE {"StartRequests":[{"EventId":"A4"}]}' "$TMP/az.log"
expect "approval: accepted" grep -q "POST /metadata/scheduledevents 200" "$TMP/az.log"
expect "approval: logged" grep -q "scheduled events approved" "$TMP/az9.err"
_a=$(grep -c "^APPROVE" "$TMP/az.log")
train az10 --platform azure --no-azure-approve --metadata-url "$URL" --metadata-poll-ms 50 --steps 100000 --step-ms 5
finish_bg
eq "--no-azure-approve: saved, exit 42, no approval" "$rc/$(grep -c "^APPROVE" "$TMP/az.log")" "42/$_a"

put "$Z/scheduledevents" '{"DocumentIncarnation": "x", "Events": 7}'
train az2 --platform azure --metadata-url "$URL" --metadata-poll-ms 50 --steps 100 --step-ms 5
finish_bg
eq "malformed document: no notice" "$rc/$(count_events "$TMP/az2.out" notice)" 0/0
expect "malformed document: logged" grep -q "not a scheduled events document" "$TMP/az2.err"
events 9 "$(ev B1 Terminate vm-7 "")"
train az3 --platform azure --metadata-url "$URL" --steps 100000 --step-ms 5
finish_bg
eq "a started Terminate event: due now" "$rc" 75

# A Reboot or Redeploy is listed as Started for minutes after the VM came
# back: a trainer (re)started then must not take it for a notice (before:
# every restart exited 75 before training, a restart loop).
started() { # ID TYPE
    printf '{"EventId": "%s", "EventStatus": "Started", "EventType": "%s", "ResourceType": "VirtualMachine", "Resources": ["vm-7"], "NotBefore": "", "Description": "", "EventSource": "Platform", "DurationInSeconds": -1}' "$1" "$2"
}
events 10 "$(started R1 Reboot), $(started R2 Redeploy)"
train az4 --platform azure --metadata-url "$URL" --metadata-poll-ms 50 --steps 100 --step-ms 5
finish_bg
eq "a Reboot that started before the trainer: trains to the end" "$rc/$(count_events "$TMP/az4.out" notice)" 0/0
expect "a Reboot that started before the trainer: said so" grep -q "already happened to this VM" "$TMP/az4.err"

# A Completed (or Canceled) event is history: the service keeps listing it
# (before: taken as a Scheduled one past its NotBefore, a notice and exit)
done_ev() { # ID TYPE STATUS
    printf '{"EventId": "%s", "EventStatus": "%s", "EventType": "%s", "ResourceType": "VirtualMachine", "Resources": ["vm-7"], "NotBefore": "%s", "Description": "", "EventSource": "Platform", "DurationInSeconds": -1}' "$1" "$3" "$2" "$(nb -600)"
}
events 12 "$(done_ev C1 Preempt Completed), $(done_ev C2 Redeploy Canceled)"
train az11 --platform azure --metadata-url "$URL" --metadata-poll-ms 50 --steps 100 --step-ms 5
finish_bg
eq "Completed and Canceled events: no notice, trains to the end" "$rc/$(count_events "$TMP/az11.out" notice)" 0/0

# The service as it misbehaves: a connection dropped without a reply, then
# 503s, then the document: the notice still arrives; each streak of failures
# is said once, and the recovery too
events 13 "$(ev D1 Preempt vm-7 "$(nb 40)")"
put "$Z/scheduledevents.reset" 1
train az12 --platform azure --metadata-url "$URL" --metadata-poll-ms 50 --steps 100000 --step-ms 5
wait_for "$TMP/az.log" "RESET /metadata/scheduledevents" 10
# the 503 is in place before the drops end (a drop wins over a status), so
# no poll finds neither between the two changes (seen under load: a poll
# in that window was answered 200 and the 503s never came)
put "$Z/scheduledevents.status" 503
rm -f "$Z/scheduledevents.reset"
wait_for "$TMP/az.log" "GET /metadata/scheduledevents 503" 10 # not a fixed sleep: under load a poll may come late
rm -f "$Z/scheduledevents.status"
finish_bg
eq "dropped, then 503: the notice arrives, saved, exit 42" "$rc/$(count_events "$TMP/az12.out" saved)" 42/1
expect "the fake dropped and refused requests" sh -c "grep -q 'RESET /metadata/scheduledevents' '$TMP/az.log' && grep -q 'GET /metadata/scheduledevents 503' '$TMP/az.log'"
eq "the failures: said once, the recovery once" \
    "$(grep -c 'metadata scheduledevents: .*retrying every' "$TMP/az12.err")/$(grep -c 'metadata scheduledevents: answering again' "$TMP/az12.err")" 1/1

# One event whose date cannot be read hides none of the others, and the
# vendor's mock server writes ISO 8601 dates (before: the whole document was
# dropped on every poll, and the notice came only when the event started).
iso() { date -u -d "+$1 seconds" '+%Y-%m-%dT%H:%M:%SZ'; }
events 11 "$(ev X1 Preempt vm-7 "soon"), $(ev X2 Preempt vm-7 "$(iso 13)")"
train az5 --platform azure --metadata-url "$URL" --metadata-poll-ms 50 --grace-ms 20000 --steps 4000 --step-ms 10
finish_bg
eq "an ISO date beside an unreadable one: saved twice and exit 42" "$rc/$(count_events "$TMP/az5.out" saved)" 42/2
between "the ISO NotBefore (13 s ahead in whole seconds, past the 10 s floor) is the deadline" \
    "$(field "$TMP/az5.out" notice deadline_in_ms)" 11000 13000
expect "the unreadable event: said once" test "$(grep -c 'cannot be read and are skipped' "$TMP/az5.err")" -eq 1

# A Scheduled event already past its NotBefore has not started: the VM is
# still there, and a save is tried (before: exit 75 at once, nothing saved).
events 12 "$(ev P1 Preempt vm-7 "$(nb -5)")"
train az6 --platform azure --metadata-url "$URL" --metadata-poll-ms 50 --steps 3000 --step-ms 5
finish_bg
eq "a Scheduled event past NotBefore: a save, exit 42" "$rc/$(count_events "$TMP/az6.out" saved)" 42/1

# The VM's name is asked again until it answers: one failed lookup made
# every other VM's event this VM's for good (a Redeploy of another VM made
# it exit 75).
rm -f "$Z/instance/compute/name"
events 13 ""
train az7 --platform azure --metadata-url "$URL" --metadata-poll-ms 50 --steps 400 --step-ms 10
wait_for "$TMP/az7.err" "cannot read this VM's name" 10
put "$Z/instance/compute/name" vm-7
wait_for "$TMP/az7.err" "this VM is vm-7" 10
events 14 "$(ev O1 Redeploy vm-3 "$(nb 60)")"
finish_bg
eq "the name read late: another VM's Redeploy is not a notice" "$rc/$(count_events "$TMP/az7.out" notice)" 0/0

# A trainer under a German locale (setlocale(LC_ALL, "") with LC_ALL=de_DE):
# strptime's day and month names followed it, and every document was
# rejected ("not a scheduled events document"); the notice never came.
mkdir -p "$TMP/locale"
if localedef -i de_DE -f UTF-8 "$TMP/locale/de_DE.UTF-8" >"$TMP/localedef.log" 2>&1; then
    events 15 "$(ev L1 Preempt vm-7 "$(nb 40)")"
    # glibc keeps the LOCPATH list setlocale builds (argz, never freed): not ours.
    echo "leak:__argz_add_sep" >"$TMP/lsan.supp"
    LSAN_OPTIONS=${LSAN_OPTIONS:+$LSAN_OPTIONS:}suppressions=$TMP/lsan.supp \
        LOCPATH=$TMP/locale LC_ALL=de_DE.UTF-8 train az8 --platform azure --metadata-url "$URL" \
        --metadata-poll-ms 50 --steps 3000 --step-ms 5
    finish_bg
    eq "de_DE: the Azure notice arrives, saved, exit 42" "$rc/$(count_events "$TMP/az8.out" saved)" 42/1
    expect "de_DE: no document rejected" test "$(grep -c 'not a scheduled events' "$TMP/az8.err")" -eq 0
else
    fail "localedef cannot build de_DE.UTF-8 (scripts/setup.sh installs Debian's locales): $(cat "$TMP/localedef.log")"
fi
stop_fake

# ---- slow, hung and dead endpoints cost the trainer nothing -------------------
serve slow
S=$TMP/slow/computeMetadata/v1/instance
put "$S/maintenance-event" NONE
put "$S/maintenance-event.delay_ms" 60000
put "$S/preempted" FALSE
put "$S/preempted.delay_ms" 60000
# Every request hangs for 60 s; 200 steps of 5 ms finish long before, under a
# 30 s bound: no step and not the handler's creation waited for the service.
expect_rc 0 timeout 30 "$TRAINER" --platform gce --metadata-url "$URL" --metadata-poll-ms 50 \
    --ckpt-dir "$TMP/slow.ck" --steps 200 --step-ms 5 --verbose
expect_output '"event":"done"'
expect "no request was answered while the trainer ran" test "$(grep -c ' 200$' "$TMP/slow.log")" -eq 0
stop_fake
# nothing listens on the port at all
expect_rc 0 timeout 30 "$TRAINER" --platform aws --metadata-url http://127.0.0.1:1 --metadata-poll-ms 20 \
    --ckpt-dir "$TMP/dead.ck" --steps 200 --step-ms 5 --verbose
expect_output "metadata IMDSv2 token"
expect "a dead endpoint is logged once, not every poll" test "$(grep -c 'retrying every' "$TMP/out")" -eq 1

# ---- platform selection ---------------------------------------------------------
expect_rc 2 env PREEMPT_PLATFORM=mars "$TRAINER" --ckpt-dir "$TMP/bad.ck" --steps 1 --verbose
expect_output "PREEMPT_PLATFORM=mars is not one of"
mkdir -p "$TMP/dmi"
put "$TMP/dmi/product_name" "Google Compute Engine"
expect_rc 0 env PREEMPT_DMI_DIR="$TMP/dmi" GCE_METADATA_IP=127.0.0.1:1 "$TRAINER" --ckpt-dir "$TMP/dmi.ck" --steps 1
eq "detected from DMI" "$(field "$TMP/out" start platform)" gce
expect_rc 0 env KUBERNETES_SERVICE_HOST=10.0.0.1 "$TRAINER" --platform none --ckpt-dir "$TMP/k8s.ck" --steps 1 \
    --grace-ms 60000 --verbose
eq "Kubernetes: a 30 s kill delay" "$(field "$TMP/out" start kill_delay_ms)" 30000
expect_output "longer than the 30000 ms kill delay"
expect_rc 42 "$TRAINER" --platform none --ckpt-dir "$TMP/slowsave.ck" --steps 5 --raise-at 2 --save-ms 600
expect_rc 0 env TORCHELASTIC_RUN_ID=x "$TRAINER" --platform none --ckpt-dir "$TMP/slowsave.ck" --steps 5 --verbose
eq "torchrun: a 30 s kill delay" "$(field "$TMP/out" start kill_delay_ms)" 30000
expect_rc 0 "$TRAINER" --platform none --ckpt-dir "$TMP/slowsave.ck" --steps 5 --kill-delay-ms 1000 --verbose
expect_output "but the process is killed 1000 ms after SIGTERM"
finish
