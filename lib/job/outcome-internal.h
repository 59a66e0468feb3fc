/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/job/outcome-internal.h: what a launch's end says, a declared machine of
 * preempt-launch (tools/preempt-launch.c; decl-internal.h).
 *
 * Each worker's exit, and each regroup of the workers, is an input; the
 * state is what the launch exits with when it ends: 0 (every worker done),
 * the restart code (the committed checkpoints stand, and the next launch
 * resumes from them) or 1 (failed). An application's exit code while the
 * group runs is judged at the group's end: a peer's crash fails the
 * others' collectives with an application's code, and its exit may be read
 * after theirs, so a regroup that the crash causes takes the failure back
 * (and keeps what was restartable). This table replaced three flags of the
 * launcher (failed, app_failed, restartable). */
#ifndef PREEMPT_OUTCOME_INTERNAL_H
#define PREEMPT_OUTCOME_INTERNAL_H

#include "decl-internal.h"

/* X(P, ID, "name", "what is true") */
#define PREEMPT_OUT_STATES(X, P)                                                                                     \
    X(P, CLEAN, "clean", "nothing said against a clean end: the launch exits 0")                                     \
    X(P, RESTARTABLE, "restartable", "the launch ends with the restart code: the next launch resumes")               \
    X(P, APP_FAILED, "app-failed", "an application's code while the group ran: 1, unless a regroup takes it back")   \
    X(P, APP_FAILED_RESTARTABLE, "app-failed-restartable",                                                          \
      "the same, and restartable once a regroup takes the failure back")                                             \
    X(P, FAILED, "failed", "the launch failed: it exits 1")

/* X(P, ID, "name", "what happened") */
#define PREEMPT_OUT_INPUTS(X, P)                                                                                     \
    X(P, RESUMABLE, "resumable", "while stopping, a worker asked for a restart or was killed at the kill delay")    \
    X(P, APP_CODE, "app-code", "while the group ran, a worker exited with another code (or past --max-restarts)")   \
    X(P, REGROUP, "regroup", "a worker crashed or hung: the group ends and starts again")                           \
    X(P, FAIL, "fail", "a worker cannot start, the restarts are used up, or an exit while stopping asks nothing")

/* X(P, ID, "name", "what the launcher does") */
#define PREEMPT_OUT_ACTIONS(X, P) X(P, NONE, "none", "nothing")

/* X(P, FROM, INPUT, TO, ACTION): the transitions. */
#define PREEMPT_OUT_TABLE(X, P)                                                                                      \
    X(P, CLEAN, RESUMABLE, RESTARTABLE, NONE)                                                                        \
    X(P, APP_FAILED, RESUMABLE, APP_FAILED_RESTARTABLE, NONE)                                                        \
    X(P, CLEAN, APP_CODE, APP_FAILED, NONE)                                                                          \
    X(P, RESTARTABLE, APP_CODE, APP_FAILED_RESTARTABLE, NONE)                                                        \
    X(P, APP_FAILED, REGROUP, CLEAN, NONE)                                                                           \
    X(P, APP_FAILED_RESTARTABLE, REGROUP, RESTARTABLE, NONE)                                                         \
    X(P, CLEAN, FAIL, FAILED, NONE)                                                                                  \
    X(P, RESTARTABLE, FAIL, FAILED, NONE)                                                                            \
    X(P, APP_FAILED, FAIL, FAILED, NONE)                                                                             \
    X(P, APP_FAILED_RESTARTABLE, FAIL, FAILED, NONE)

/* X(P, INPUT, "why", STATE...): the pairs ignored on purpose, each for its reason. */
#define PREEMPT_OUT_IGNORED(X, P)                                                                                    \
    X(P, RESUMABLE, "restartable already", RESTARTABLE, APP_FAILED_RESTARTABLE)                                      \
    X(P, APP_CODE, "an application's failure is known already: the launch fails once",                               \
      APP_FAILED, APP_FAILED_RESTARTABLE)                                                                            \
    X(P, REGROUP, "no application's failure to take back", CLEAN, RESTARTABLE)

PREEMPT_DECL_ENUMS(out, PREEMPT_OUT_, PREEMPT_OUT_STATES, PREEMPT_OUT_INPUTS, PREEMPT_OUT_ACTIONS);

extern const struct preempt_decl preempt_out_decl_; /* fsmdump --machine launch-outcome */

/* The exit code of a launch that ends in state s. Pure. */
static inline int preempt_out_code_(enum preempt_out_state s, unsigned restart_code)
{
    return s == PREEMPT_OUT_CLEAN ? 0 : s == PREEMPT_OUT_RESTARTABLE ? (int)restart_code : 1;
}

#endif
