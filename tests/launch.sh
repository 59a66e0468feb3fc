# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The libpreempt authors
# preempt-launch as schedulers use it: every notice signal (TERM, USR1,
# USR2) to the launcher reaches every worker and ends the launch with the
# restart code; a worker killed by a notice signal before it could handle it
# (as when a scheduler signals the whole process group early) or that exits
# 75 is restarted; --kill-delay-ms bounds the workers' time after a signal.
# The workers are small shell scripts: this is about the launcher.
. "$top_srcdir/tests/lib.sh"
LAUNCH="$top_builddir/tools/preempt-launch"
LPID=
trap 'kill_ours KILL $LPID; rm -rf "$TMP"' EXIT

# The worker: W MODE --worker I --workers N. Modes:
#   trap      says which notice signal it got (in $TMP/got.I) and exits 42
#   once      runs until a signal the first time; exits 0 the next time
#   code75    exits 75 the first time, 0 the next
#   deaf      ignores SIGTERM
#   fail      exits 3 at SIGTERM (an application error)
#   segv      worker 1 crashes (SIGSEGV) once both are ready
#   peerdies  the first time, worker 0 kills worker 1 (SIGKILL) and exits 4 at
#             once, as a collective fails when a peer dies; 0 the next time
#   closed    the first time, closes its output (the launcher's pipe) at once
#             and exits 42 when its FIFO gets a line; 0 the next time
# A worker waits by reading from a FIFO of its own (fifo.I, opened for
# reading and writing, so that neither the open nor the read ends unless
# written to): a signal it traps ends the read, and its peer can wake it
# by writing a line (segv, peerdies).
cat >"$TMP/w.sh" <<'EOF'
#!/bin/sh
mode=$1 i=$3 d=$(dirname "$0")
exec 3<>"$d/fifo.$i"
case $mode in
trap)
    for s in TERM USR1 USR2; do trap "echo $s >>$d/got.$i; exit 42" $s; done ;;
once | code75)
    if [ -e "$d/again.$i" ]; then exit 0; fi
    : >"$d/again.$i"
    [ "$mode" = code75 ] && exit 75 ;;
deaf) trap '' TERM ;;
fail) trap 'exit 3' TERM ;;
closed)
    if [ -e "$d/again.$i" ]; then exit 0; fi
    : >"$d/again.$i"
    exec >&- ;;
esac
: >"$d/ready.$i"
if [ "$mode" = closed ]; then
    read -r _ <&3
    exit 42
fi
if [ "$mode" = peerdies ]; then
    if [ -e "$d/again.$i" ]; then exit 0; fi
    : >"$d/again.$i"
    if [ "$i" = 0 ]; then
        read -r peer <&3 # worker 1's pid
        kill -KILL "$peer"
        exit 4
    fi
    echo $$ >"$d/fifo.0"
fi
if [ "$mode" = segv ]; then
    [ "$i" = 0 ] && echo ready >"$d/fifo.1"
    [ "$i" = 1 ] && read -r _ <&3 && kill -SEGV $$
fi
while :; do read -r _ <&3; done
EOF
chmod +x "$TMP/w.sh"

# run MODE ARGS...: starts the launcher with 2 workers of MODE, output in
# $TMP/out, pid in LPID; waits until both workers are ready.
run() {
    _mode=$1
    shift
    rm -f "$TMP"/ready.* "$TMP"/got.* "$TMP"/again.* "$TMP"/fifo.*
    mkfifo "$TMP/fifo.0" "$TMP/fifo.1"
    "$LAUNCH" --workers 2 "$@" -- "$TMP/w.sh" "$_mode" >"$TMP/out" 2>&1 &
    LPID=$!
    for _i in 0 1; do poll 10 test -e "$TMP/ready.$_i"; done
}
# ends: waits for the launcher (10 s at most); its status in RC.
ends() {
    reap 10 "$LPID"
    RC=$?
}
launches() { grep -c '"event":"launch"' "$TMP/out"; }
pid_of() { sed -n "s/.*\"event\":\"launch\",\"worker\":$1,.*\"pid\":\([0-9]*\).*/\1/p" "$TMP/out" | tail -n 1; }

# ---- every notice signal reaches every worker and ends the launch -------------
for s in TERM USR1 USR2; do
    run trap
    kill -s $s "$LPID"
    ends
    eq "SIG$s: the launcher exits with the restart code" "$RC" 42
    eq "SIG$s: both workers got it" "$(cat "$TMP/got.0" "$TMP/got.1" 2>/dev/null | tr '\n' ' ')" "$s $s "
    eq "SIG$s: nobody restarted (the launch is ending)" "$(launches)" 2
    expect "SIG$s: the launcher says so" grep -q "\"event\":\"signal\",\"signal\":\"$s\",\"workers\":2" "$TMP/out"
done

# ---- a worker killed by a notice signal it could not handle yet is restarted ----
run once
kill -TERM "$(pid_of 0)" "$(pid_of 1)"
ends
eq "killed by SIGTERM: the launch ends well" "$RC" 0
expect "killed by SIGTERM: reported as 143" grep -q '"event":"exited","worker":0,"code":143' "$TMP/out"
expect "killed by SIGTERM: restarted" grep -q '"event":"launch","worker":0,"attempt":2' "$TMP/out"

# ---- a crash (SIGKILL: the OOM killer) takes the group down and up again -----------
# worker 0 would wait for worker 1 in a collective: the launcher ends it
# (SIGTERM) and starts both again.
run once
kill -KILL "$(pid_of 1)"
ends
eq "crash: the group starts again, the launch ends well" "$RC" 0
expect "crash: the launcher says who crashed" grep -q '"event":"crashed","worker":1,"signal":"KILL"' "$TMP/out"
expect "crash: the survivor was ended" grep -q '"event":"exited","worker":0,"code":143' "$TMP/out"
eq "crash: both started twice" "$(launches)" 4
# the peer's crash may be read after the others' failures it caused
# (their collectives fail at once: an application code): still the group
# starts again (the launch failed with 1 when worker 0's exit 4 was read
# first)
run peerdies
ends
eq "crash read after the failure it caused: the group starts again" "$RC" 0
expect "crash read after the failure it caused: said so" grep -q '"event":"regroup"' "$TMP/out"
# the outcome's table took the failure back, and the lines show how (when
# worker 0's exit 4 was read first; read after the crash, during the
# regroup, it changes nothing)
if grep -q '"event":"outcome","from":"clean","input":"app-code","to":"app-failed"' "$TMP/out"; then
    expect "crash read after the failure it caused: the application's code is judged at the group's end" \
        grep -q '"event":"outcome","from":"app-failed","input":"regroup","to":"clean"' "$TMP/out"
fi
# a worker that crashes every time: the group restarts --max-restarts
# times, then the launch fails
run segv --max-restarts 2
ends
eq "crashes every time: the launch fails" "$RC" 1
eq "crashes every time: 2 regroups" "$(grep -c '"event":"regroup"' "$TMP/out")" 2
eq "crashes every time: 3 launches of each" "$(launches)" 6
expect "crashes every time: the outcome says failed" \
    grep -q '"event":"outcome","from":"clean","input":"fail","to":"failed"' "$TMP/out"

# ---- a worker's end wakes the launcher, whatever became of its pipe ---------------
# Both workers close their output long before they end: the launcher reads
# the end of their pipes first, and learns of their exits only from the
# exits themselves (it waits for events, not for a period: nothing else
# would wake it, and the launch would hang here).
run closed
echo go >"$TMP/fifo.0"
echo go >"$TMP/fifo.1"
ends
eq "output closed before the end: restarted, the launch ends well" "$RC" 0
eq "output closed before the end: each worker started twice" "$(launches)" 4
expect "output closed before the end: the exit seen" grep -q '"event":"exited","worker":1,"code":42' "$TMP/out"

# ---- exit 75 (preempted, nothing new saved) is a restart --------------------------
run code75
ends
eq "exit 75: restarted, the launch ends well" "$RC" 0
eq "exit 75: each worker started twice" "$(launches)" 4

# ---- --kill-delay-ms: workers that outlive it get SIGKILL --------------------------
run deaf --kill-delay-ms 300
kill -TERM "$LPID"
ends
eq "kill delay: the launch ends with the restart code" "$RC" 42
eq "kill delay: both SIGKILLed" "$(grep -c '"event":"exited".*"code":137' "$TMP/out")" 2
sig_t=$(sed -n 's/.*"event":"signal".*"t_ms":\([0-9]*\).*/\1/p' "$TMP/out")
end_t=$(sed -n 's/.*"event":"exited".*"t_ms":\([0-9]*\).*/\1/p' "$TMP/out" | tail -n 1)
expect "kill delay: not before 300 ms ($sig_t -> $end_t)" test $((end_t - sig_t)) -ge 300
run deaf
kill -TERM "$LPID"
# the launcher has passed the signal on to both (and would end them now,
# had it a kill delay)
wait_for "$TMP/out" '"event":"signal","signal":"TERM","workers":2' 10
expect "no kill delay: the workers are left to end by themselves" kill -0 "$(pid_of 0)"
kill -KILL "$(pid_of 0)" "$(pid_of 1)"
ends

# ---- an application error during the stop is a failure -----------------------------
run fail
kill -TERM "$LPID"
ends
eq "an application error at the stop: exit 1" "$RC" 1
finish
