/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/job/phase-internal.h: how a start-up phase ends (joining, or the restore
 * barrier: lib/job/startup.c), a declared machine (decl-internal.h).
 *
 * A phase finishes once its outcome is known (an answer, a watch event, its
 * bound). Its end then runs from the loop, never inside the etcd client's
 * callback: when the phase failed, or ends the membership, the lease is
 * given back first (best effort, at most 1 s), and nothing but that
 * answer is awaited meanwhile; then the phase is released and its done
 * callback called, the last use of it. An answer that comes after the
 * finish asks nothing more. This table replaced three flags of the phase
 * (finished, done_due, revoking). */
#ifndef PREEMPT_PHASE_INTERNAL_H
#define PREEMPT_PHASE_INTERNAL_H

#include "decl-internal.h"

/* X(P, ID, "name", "what is true") */
#define PREEMPT_PEND_STATES(X, P)                                                                                    \
    X(P, RUNNING, "running", "the phase runs: its requests, watches and timers")                                     \
    X(P, ENDING, "ending", "its outcome is known: its end runs next, from the loop")                                 \
    X(P, REVOKING, "revoking", "the lease's revoke is on its way: only its answer (or its 1 s bound) is awaited")     \
    X(P, REVOKED, "revoked", "the revoke was answered: the end runs next, from the loop")                            \
    X(P, DONE, "done", "released, and its done callback called")

/* X(P, ID, "name", "what happened") */
#define PREEMPT_PEND_INPUTS(X, P)                                                                                    \
    X(P, FINISH, "finish", "the phase's outcome is known (an answer, a record, its bound)")                          \
    X(P, END_KEEP, "end-keep", "the end runs; the lease stays (the membership goes on, or there is none)")          \
    X(P, END_REVOKE, "end-revoke", "the end runs; the phase failed or ends the membership: the lease goes back")    \
    X(P, REVOKED, "revoked", "the revoke's answer, or its bound")                                                    \
    X(P, UNSENT, "unsent", "the revoke could not be sent")

/* X(P, ID, "name", "what the phase does") */
#define PREEMPT_PEND_ACTIONS(X, P)                                                                                   \
    X(P, NONE, "none", "nothing")                                                                                    \
    X(P, RUN_END, "run-end", "arm the loop's timer at once: the end runs outside the client's callback")             \
    X(P, REVOKE, "revoke", "ask etcd to revoke the lease, bounded by 1 s")                                           \
    X(P, RELEASE, "release", "free the phase and call done(status)")

/* X(P, FROM, INPUT, TO, ACTION): the transitions. */
#define PREEMPT_PEND_TABLE(X, P)                                                                                     \
    X(P, RUNNING, FINISH, ENDING, RUN_END)                                                                           \
    X(P, ENDING, END_KEEP, DONE, RELEASE)                                                                            \
    X(P, ENDING, END_REVOKE, REVOKING, REVOKE)                                                                       \
    X(P, REVOKING, REVOKED, REVOKED, RUN_END)                                                                        \
    X(P, REVOKING, UNSENT, DONE, RELEASE)                                                                            \
    X(P, REVOKED, END_KEEP, DONE, RELEASE)                                                                           \
    X(P, REVOKED, END_REVOKE, DONE, RELEASE)

/* X(P, INPUT, "why", STATE...): the pairs ignored on purpose, each for its reason. */
#define PREEMPT_PEND_IGNORED(X, P)                                                                                   \
    X(P, FINISH, "the outcome is known already: the first finish decides", ENDING, REVOKING, REVOKED)                \
    X(P, END_KEEP, "no end is due: the outcome is not known yet, or the revoke's answer is awaited",                 \
      RUNNING, REVOKING)                                                                                             \
    X(P, END_REVOKE, "no end is due: the outcome is not known yet, or the revoke's answer is awaited",               \
      RUNNING, REVOKING)                                                                                             \
    X(P, REVOKED, "no revoke is on its way: a late answer asks nothing more", RUNNING, ENDING, REVOKED)              \
    X(P, UNSENT, "no revoke is being sent", RUNNING, ENDING, REVOKED)

PREEMPT_DECL_ENUMS(pend, PREEMPT_PEND_, PREEMPT_PEND_STATES, PREEMPT_PEND_INPUTS, PREEMPT_PEND_ACTIONS);

extern const struct preempt_decl preempt_pend_decl_; /* fsmdump --machine phase-end */

#endif
