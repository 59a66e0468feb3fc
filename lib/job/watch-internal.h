/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/job/watch-internal.h: the job's watch and what stands in for it while it
 * is down, and the driver's roll call: two declared machines of the
 * coordinator (lib/job/coord.c; decl-internal.h).
 *
 * The watch brings every record of the job. While it is down (etcd
 * answering requests but keeping no stream, or between re-opens) a worker
 * would see no peer's notice, round or error; so each keep-alive tick then
 * reads the job's records once and applies them as the watch's own
 * re-read does: a broken stream slows what the worker learns to the tick's
 * period, it never hides it. One read at a time; a read whose answer comes
 * after the watch is back is not applied (the watch re-read the records
 * itself). This table replaced the coordinator's flag watch_up.
 *
 * Start-up's barriers await one record each the same way (lib/job/startup.c:
 * the join's barrier record, the restore barrier's): the same table,
 * named await, once per phase; it replaced the flag ready_up.
 *
 * The roll call is the driver's read of the memberships (lost-internal.h
 * says what one read means): once a keep-alive period while it drives an
 * episode, one at a time. It replaced the flag polling. */
#ifndef PREEMPT_WATCH_INTERNAL_H
#define PREEMPT_WATCH_INTERNAL_H

#include "decl-internal.h"

/* X(ID, "name", "what is true") */
#define PREEMPT_WATCH_STATES(X, P)                                                                                   \
    X(P, BLIND, "blind", "the watch is down (or not up yet); no read of the records is on its way")                  \
    X(P, WATCHING, "watching", "the job's watch is up: it brings every record")                                      \
    X(P, READING, "reading", "the watch is down; a read of the job's records stands in for it")

/* X(ID, "name", "what happened") */
#define PREEMPT_WATCH_INPUTS(X, P)                                                                                   \
    X(P, DOWN, "down", "the watch went down (etcd unreachable, the stream broken or silent)")                        \
    X(P, UP, "up", "the watch is up again (it re-read the records itself)")                                          \
    X(P, TICK, "tick", "the keep-alive timer's tick")                                                                \
    X(P, READ, "read", "the read's answer came: the job's records")                                                  \
    X(P, READ_FAILED, "read-failed", "the read failed or could not be sent")

/* X(ID, "name", "what the coordinator does") */
#define PREEMPT_WATCH_ACTIONS(X, P)                                                                                  \
    X(P, NONE, "none", "nothing")                                                                                    \
    X(P, READ, "read", "read the job's records (the watched range) once")                                            \
    X(P, APPLY, "apply", "apply the records read, as the watch's own re-read does")

/* X(FROM, INPUT, TO, ACTION): the transitions. */
#define PREEMPT_WATCH_TABLE(X, P)                                                                                    \
    X(P, WATCHING, DOWN, BLIND, NONE)                                                                                \
    X(P, BLIND, UP, WATCHING, NONE)                                                                                  \
    X(P, BLIND, TICK, READING, READ)                                                                                 \
    X(P, READING, UP, WATCHING, NONE)                                                                                \
    X(P, READING, READ, BLIND, APPLY)                                                                                \
    X(P, READING, READ_FAILED, BLIND, NONE)

/* X(P, INPUT, "why", STATE...): the pairs ignored on purpose, each for its reason. */
#define PREEMPT_WATCH_IGNORED(X, P)                                                                                  \
    X(P, DOWN, "the watch is down already", BLIND, READING)                                                          \
    X(P, UP, "the watch is up already", WATCHING)                                                                    \
    X(P, TICK, "the watch brings every record: no read is needed", WATCHING)                                         \
    X(P, TICK, "a read is on its way already (one at a time)", READING)                                              \
    X(P, READ, "no read is on its way (the watch came up meanwhile, and brought the records itself)",                \
      BLIND, WATCHING)                                                                                               \
    X(P, READ_FAILED, "no read is on its way: the next tick reads again, or the watch brings the records",           \
      BLIND, WATCHING)

PREEMPT_DECL_ENUMS(watch, PREEMPT_WATCH_, PREEMPT_WATCH_STATES, PREEMPT_WATCH_INPUTS, PREEMPT_WATCH_ACTIONS);

extern const struct preempt_decl preempt_watch_decl_; /* fsmdump --machine watch */
extern const struct preempt_decl preempt_await_decl_; /* the same table, start-up's: --machine await */

/* What the answer of a read of the records tells the watch's machine:
 * read (status 0) or read-failed (a negative errno). Pure. */
enum preempt_watch_input preempt_watch_of_read_(int status);

/* The roll call. Besides whether a read is on its way, its state says
 * what the first round's shard reports mean to it (lost-internal.h): while
 * that round is open, a worker whose report is in waits at its step for
 * the decision, so its report counts it present. Once a commit of it
 * after which its workers train on is read (a grace period's countdown;
 * not a preemption's last save, whose reports end their workers'
 * memberships), they are members again and a report no longer speaks for
 * them; the grace then also covers a lease that lapsed in a save. This
 * replaced a 0-sentinel (the time such a commit was read) that decided it.
 * X(ID, "name", "what is true") */
#define PREEMPT_ROLL_STATES(X, P)                                                                                    \
    X(P, IDLE, "idle", "no read of the memberships is on its way; the first round's reports count their workers")    \
    X(P, READING, "reading", "the driver's read of the memberships is on its way; the first round's reports count "   \
                             "their workers")                                                                        \
    X(P, ON_IDLE, "on-idle", "the first round committed and its workers train on: its reports no longer count "     \
                             "them, the grace covers a lease lapsed in a save; no read is on its way")               \
    X(P, ON_READING, "on-reading", "the first round committed and its workers train on; a read is on its way")

/* X(ID, "name", "what happened") */
#define PREEMPT_ROLL_INPUTS(X, P)                                                                                    \
    X(P, DUE, "due", "the keep-alive timer's tick while this worker drives an episode")                              \
    X(P, ANSWERED, "answered", "the read's answer came, failed, or could not be sent")                               \
    X(P, TRAINS_ON, "trains-on", "the first round's commit was read, one after which its workers train on")          \
    X(P, NEXT_EPISODE, "next-episode", "the episode ended: the next one's first round is open")

/* X(ID, "name", "what the coordinator does") */
#define PREEMPT_ROLL_ACTIONS(X, P)                                                                                   \
    X(P, NONE, "none", "nothing")                                                                                    \
    X(P, READ, "read", "read the memberships, the workers done and both rounds' reports (one transaction)")

#define PREEMPT_ROLL_TABLE(X, P)                                                                                     \
    X(P, IDLE, DUE, READING, READ)                                                                                   \
    X(P, READING, ANSWERED, IDLE, NONE)                                                                              \
    X(P, IDLE, TRAINS_ON, ON_IDLE, NONE)                                                                             \
    X(P, READING, TRAINS_ON, ON_READING, NONE)                                                                       \
    X(P, ON_IDLE, DUE, ON_READING, READ)                                                                             \
    X(P, ON_READING, ANSWERED, ON_IDLE, NONE)                                                                        \
    X(P, ON_IDLE, NEXT_EPISODE, IDLE, NONE)                                                                          \
    X(P, ON_READING, NEXT_EPISODE, READING, NONE)

/* X(P, INPUT, "why", STATE...): the pairs ignored on purpose, each for its reason. */
#define PREEMPT_ROLL_IGNORED(X, P)                                                                                   \
    X(P, DUE, "a read is on its way already (one at a time)", READING, ON_READING)                                   \
    X(P, ANSWERED, "no read is on its way: the answer changes nothing", IDLE, ON_IDLE)                               \
    X(P, TRAINS_ON, "the first round's commit is known already", ON_IDLE, ON_READING)                                \
    X(P, NEXT_EPISODE, "the first round is open already", IDLE, READING)

PREEMPT_DECL_ENUMS(roll, PREEMPT_ROLL_, PREEMPT_ROLL_STATES, PREEMPT_ROLL_INPUTS, PREEMPT_ROLL_ACTIONS);

extern const struct preempt_decl preempt_roll_decl_; /* fsmdump --machine roll-call */

/* Whether the roll call's state is one after the first round's commit
 * that its workers train on (the on- states). Pure. */
bool preempt_roll_trained_on_(enum preempt_roll_state s);

#endif
