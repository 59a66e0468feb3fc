# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The libpreempt authors
"""bench/restart_rows.py: the rows of make bench's sections 11 and 11b
(bench/restart.sh), read from a launch's lines (preempt-launch's and the
workers', each with "t_ms").

  restart_rows.py whole N KB RC DIR JSON DD   section 11: every worker signalled
  restart_rows.py one MODE N KB RC DIR JSON   section 11b: worker 1 alone

Each appends its row to JSON (a list) and prints it."""
import json
import os
import sys


def events(d):
    """The launch's lines, as objects (a line that is none is skipped)."""
    for line in open(os.path.join(d, "launch.out")):
        try:
            yield json.loads(line)
        except ValueError:
            continue


def append(out, row):
    rows = json.load(open(out)) if os.path.exists(out) else []
    rows.append(row)
    json.dump(rows, open(out, "w"))


def size_of(kb):
    return "%d MiB" % (kb // 1024) if kb >= 1024 else "%d KiB" % kb


def whole(n, kb, rc, d, out, dd):
    decided, ended, starts, firsts, launched = {}, {}, {}, {}, set()
    for e in events(d):
        w, ev = e.get("worker"), e.get("event")
        if ev == "exit" and e.get("code") == 42 and w not in launched:
            decided[w] = e["t_ms"]          # the handler's exit: training stopped
        elif ev == "exited" and e.get("code") == 42:
            ended[w] = e["t_ms"]            # the process ended (the launcher saw it)
        elif ev == "launch" and e.get("attempt", 1) >= 2:
            launched.add(w)
        elif ev == "start" and w in launched:
            starts[w] = e
        elif ev == "step" and w in starts and w not in firsts:
            firsts[w] = e["t_ms"]
    row = {"section": "11", "workers": n, "state_kib": kb, "launch_rc": rc, "restarted": len(firsts)}
    hist = [json.loads(l) for l in open(os.path.join(d, "history.json")) if l.strip()]
    restarts = [h["restart_ms"] for h in hist if "restart_ms" in h]
    if len(decided) == n and len(ended) == n and len(firsts) == n:
        last = max(decided, key=decided.get)  # the last worker to stop training: the critical path
        s = starts[last]
        began = max(x["t_ms"] - x["handler_ms"] for x in starts.values())
        row.update({"total_ms": max(firsts.values()) - decided[last],
                    "started_ms": max(x["t_ms"] for x in starts.values()) - decided[last],
                    "exiting_ms": ended[last] - decided[last],
                    "start_ms": s["t_ms"] - s["handler_ms"] - ended[last],
                    "join_ms": s["handler_ms"] - s["restore_ms"], "restore_ms": s["restore_ms"],
                    "first_step_ms": firsts[last] - s["t_ms"],
                    "history_restart_ms": restarts[-1] if restarts else -1,
                    # the worker whose handler creation began last waits for no
                    # one to arrive: its joining and barriers are the protocol's own
                    "last_join_ms": min(x["handler_ms"] - x["restore_ms"] for x in starts.values()
                                        if x["t_ms"] - x["handler_ms"] == began),
                    "restored_steps": sorted({x["restored_step"] for x in starts.values()})})
    if dd >= 0:
        row["dd_read_ms"] = dd
    append(out, row)
    if "total_ms" in row:
        print("  %3d %9s %7d %8d %8d %7.0f %7.1f %8.1f %6d %8d %9.1f%s" % (
            n, size_of(kb), row["total_ms"], row["started_ms"], row["history_restart_ms"], row["exiting_ms"],
            row["start_ms"], row["join_ms"], row["restore_ms"], row["first_step_ms"], row["last_join_ms"],
            ("   dd %d ms" % dd) if dd >= 0 else ""))
    else:
        print("  %3d %9s  the restart did not complete (launch exit %d, %d of %d workers trained again)" % (
            n, size_of(kb), rc, len(firsts), n))


def one(mode, n, kb, rc, d, out):
    notice, again, relaunched, rebuilt, stopped = None, {}, set(), set(), {}
    for e in events(d):
        w, ev = e.get("worker"), e.get("event")
        if ev == "notice" and w == 1 and notice is None:
            notice = e["t_ms"]
        elif ev == "state" and e.get("to") in ("exit", "rejoining") and w not in stopped:
            stopped[w] = e["t_ms"]                     # training stopped here
        elif ev == "launch" and e.get("attempt", 1) >= 2:
            relaunched.add(w)
        elif ev == "rebuild":
            rebuilt.add(w)
        elif ev == "step" and (w in relaunched or w in rebuilt) and w not in again:
            again[w] = e["t_ms"]                       # training again
    row = {"section": "11b", "mode": mode, "workers": n, "state_kib": kb, "launch_rc": rc, "again": len(again),
           "relaunched": len(relaunched), "in_place": len(rebuilt)}
    if notice is not None and len(again) == n:
        row["notice_to_training_ms"] = max(again.values()) - notice
        row["stopped_to_training_ms"] = max(again.values()) - max(stopped.values())
    append(out, row)
    if "notice_to_training_ms" in row:
        print("  %3d %9s %8s %9d %9d %10d %8d" % (n, size_of(kb), mode, row["notice_to_training_ms"],
                                               row["stopped_to_training_ms"], len(relaunched), len(rebuilt)))
    else:
        print("  %3d %9s %8s  did not train again (launch exit %d, %d of %d workers)" % (
            n, size_of(kb), mode, rc, len(again), n))


if __name__ == "__main__":
    a = sys.argv[1:]
    if a[0] == "whole":
        whole(int(a[1]), int(a[2]), int(a[3]), a[4], a[5], int(a[6]))
    else:
        one(a[1], int(a[2]), int(a[3]), int(a[4]), a[5], a[6])
